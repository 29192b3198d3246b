#include "sampler.h"

#include <algorithm>

namespace edgemon {

Sampler::Sampler(Collection& collection, Clock& clock, SamplerOptions options)
    : collection_(collection),
      clock_(clock),
      options_(options),
      seq_(options.first_seq),
      frame_period_(options.frame_period_ns),
      energy_period_(options.energy_period_ns) {}

const Frame& Sampler::TickOnce() {
  frame_.seq = seq_++;
  last_tick_mono_ = clock_.MonotonicNs();
  frame_.boottime_ns = clock_.BoottimeNs();
  int64_t rt = clock_.RealtimeNs();
  if (frames_.load() > 0 && rt <= last_realtime_) {
    // The wall clock went backwards: keep stored time monotonic.
    rt = last_realtime_ + std::max<int64_t>(1, frame_.boottime_ns - last_boottime_);
  }
  frame_.realtime_ns = rt;
  last_realtime_ = rt;
  last_boottime_ = frame_.boottime_ns;
  collection_.Sample(frame_.boottime_ns, frame_);
  for (FrameSink* s : sinks_) s->OnFrame(collection_.inventory(), collection_.generation(), frame_);
  frames_.fetch_add(1);
  if (on_frame_) on_frame_(frame_);
  return frame_;
}

int64_t Sampler::EffectiveEnergyPeriod(int64_t now) const {
  // Nothing to integrate (no rail reports bare power): no fast wake-ups.
  if (collection_.energy().rails() == 0) return 0;
  int64_t base = energy_period_.load();
  int64_t boost = now < boost_until_.load() ? boost_period_.load() : 0;
  if (base <= 0) return boost;
  if (boost <= 0) return base;
  return std::min(base, boost);
}

int64_t Sampler::energy_period_ns() const {
  return EffectiveEnergyPeriod(clock_.MonotonicNs());
}

void Sampler::Boost(int64_t period_ns, int64_t until_ns) {
  boost_period_.store(period_ns);
  boost_until_.store(until_ns);
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();  // re-plan the next wake-up
}

void Sampler::Reconfigure(int64_t frame_period_ns, int64_t energy_period_ns) {
  frame_period_.store(frame_period_ns);
  energy_period_.store(energy_period_ns);
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

void Sampler::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

void Sampler::Run() {
  // A frame taken just before (the daemon's first, stored before READY=1)
  // sets the grid; otherwise start now.
  int64_t next_frame =
      frames_.load() > 0 ? last_tick_mono_ + frame_period_.load() : clock_.MonotonicNs();
  int64_t next_fast = 0;  // 0: not scheduled
  last_topology_check_ = next_frame;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    int64_t now = clock_.MonotonicNs();
    const int64_t period = frame_period_.load();
    const int64_t fast_period = EffectiveEnergyPeriod(now);
    if (now >= next_frame) {
      TickOnce();
      now = clock_.MonotonicNs();
      next_frame += period;
      if (next_frame <= now) {  // late: skip the deadlines we missed, count them
        int64_t missed = (now - next_frame) / period + 1;
        misses_.fetch_add(static_cast<uint64_t>(missed));
        next_frame += missed * period;
      }
      next_fast = fast_period > 0 ? now + fast_period : 0;
      if (now - last_topology_check_ >= options_.topology_check_ns) {
        last_topology_check_ = now;
        collection_.CheckTopology();
      }
    } else if (fast_period > 0 && next_fast == 0) {
      next_fast = now + fast_period;  // a boost just started
    } else if (fast_period > 0 && now >= next_fast) {
      collection_.SampleFast(clock_.BoottimeNs());
      fast_.fetch_add(1);
      next_fast += fast_period;
      if (next_fast <= now) next_fast += ((now - next_fast) / fast_period + 1) * fast_period;
    } else if (fast_period <= 0) {
      next_fast = 0;
    }
    int64_t wake = next_frame;
    // A fast sample that would land right on the frame is the frame's.
    if (fast_period > 0 && next_fast != 0 && next_fast < next_frame - fast_period / 4) {
      wake = next_fast;
    }
    lock.lock();
    if (stop_) break;
    if (clock_.MonotonicNs() < wake) clock_.WaitUntil(wake, lock, cv_);
  }
}

}  // namespace edgemon
