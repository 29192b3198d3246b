#include "daemon/sampler.h"

#include <sys/random.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "edgemon/checked.h"

namespace edgemon {
namespace {

// The effective rail sampling rate: the fastest of frames, fast (energy)
// samples and live frames, every one of which reads the rails.
double RailRateHz(int64_t frame_period, int64_t fast_period, int64_t live_period) {
  int64_t p = frame_period;
  if (fast_period > 0) p = std::min(p, fast_period);
  if (live_period > 0) p = std::min(p, live_period);
  return p > 0 ? 1e9 / static_cast<double>(p) : 0;
}

}  // namespace

Sampler::Sampler(Collection& collection, Clock& clock, SamplerOptions options)
    : collection_(collection),
      clock_(clock),
      options_(options),
      seq_(options.first_seq),
      frame_period_(options.frame_period_ns),
      energy_period_(options.energy_period_ns) {
  PlanAndLog(clock.MonotonicNs());
}

const Frame& Sampler::TickOnce() {
  return Take(false, 0);
}

const Frame& Sampler::Take(bool live, int64_t due_mono_ns) {
  // Live frames are not stored: they keep the newest stored frame's seq.
  if (!live) {
    frame_.seq = seq_++;
  } else if (frames_.load() > 0) {
    frame_.seq = seq_ - 1;
  }
  const int64_t mono = clock_.MonotonicNs();
  if (!live) last_tick_mono_ = mono;
  frame_.boottime_ns = clock_.BoottimeNs();
  // The boottime the frame was due at: its monotonic deadline plus the time
  // suspended (boottime - monotonic), kept as long as it moves by less than
  // the two reads' own jitter, so that frames due a period apart are
  // scheduled exactly a period apart.
  const int64_t offset = frame_.boottime_ns - mono;
  if (std::abs(offset - boot_offset_) > kBootOffsetJitterNs) boot_offset_ = offset;
  const int64_t scheduled =
      due_mono_ns > 0 && mono >= due_mono_ns ? due_mono_ns + boot_offset_ : frame_.boottime_ns;
  int64_t rt = clock_.RealtimeNs();
  const int64_t wall_offset = rt - frame_.boottime_ns;
  if (last_wall_offset_ && std::abs(wall_offset - *last_wall_offset_) > kClockStepNs &&
      options_.on_clock_step) {
    options_.on_clock_step(frame_.boottime_ns, wall_offset - *last_wall_offset_);
  }
  last_wall_offset_ = wall_offset;
  {
    std::lock_guard lock(time_mu_);
    // The wall clock went backwards: keep stored time monotonic (at least
    // 1 ns past the last frame).
    if (have_last_ && rt <= last_realtime_)
      rt = std::max(KeptLocked(rt, frame_.boottime_ns), last_realtime_ + 1);
    frame_.realtime_ns = rt;
    if (have_last_) {
      const int64_t before = SubSaturating(last_realtime_, last_boottime_);
      const int64_t now = SubSaturating(rt, frame_.boottime_ns);
      const int64_t moved = SubSaturating(now, before);
      if (moved > kTimelineStepNs || moved < -kTimelineStepNs) {
        if (timeline_steps_.size() == kMaxTimelineSteps)
          timeline_steps_.erase(timeline_steps_.begin());
        timeline_steps_.push_back({frame_.boottime_ns, before});
      }
    }
    last_realtime_ = rt;
    last_boottime_ = frame_.boottime_ns;
    have_last_ = true;
  }
  collection_.Sample(frame_.boottime_ns, frame_);
  if (!live) {
    if (capturing_) CaptureRails(frame_.realtime_ns, frame_.values);
    FlushRails();
    rail_through_.store(frame_.realtime_ns);
  }
  std::shared_ptr<const Frame> snapshot;
  for (FrameSink* s : sinks_) {
    if (!live || s->WantsLive()) {
      if (!snapshot) snapshot = Snapshot();
      s->OnSharedFrame(collection_.inventory(), collection_.generation(), snapshot, scheduled);
    }
  }
  if (live) {
    live_.fetch_add(1);
  } else {
    frames_.fetch_add(1);
    if (on_frame_) on_frame_(frame_);
  }
  return frame_;
}

// ThreadSanitizer does not model a standalone fence (GCC refuses to build
// one under -fsanitize=thread), so sanitized builds always take a fresh
// snapshot instead of reusing one.
#if defined(__SANITIZE_THREAD__)
#define EDGEMON_REUSE_SNAPSHOTS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EDGEMON_REUSE_SNAPSHOTS 0
#endif
#endif
#ifndef EDGEMON_REUSE_SNAPSHOTS
#define EDGEMON_REUSE_SNAPSHOTS 1
#endif

std::shared_ptr<const Frame> Sampler::Snapshot() {
  std::shared_ptr<Frame> s;
#if EDGEMON_REUSE_SNAPSHOTS
  if (!snapshots_.empty() && snapshots_.front().use_count() == 1) {
    // Every sink let go of it; their last reads of it happen before this
    // (the acquire pairs with the release of their reference count).
    std::atomic_thread_fence(std::memory_order_acquire);
    s = std::move(snapshots_.front());
    snapshots_.pop_front();
    *s = frame_;  // into the room it has
  }
#endif
  if (!s) s = std::make_shared<Frame>(frame_);
  snapshots_.push_back(s);
  if (snapshots_.size() > kMaxSnapshots) snapshots_.pop_front();
  return s;
}

Sampler::Plan Sampler::PlanAt(int64_t now) const {
  Plan plan;
  std::lock_guard lock(leases_mu_);
  for (auto it = leases_.begin(); it != leases_.end();) {
    const LeaseEntry& l = it->second;
    if (l.until_ns <= now) {
      it = leases_.erase(it);
      continue;
    }
    int64_t& p = l.kind == LeaseKind::kEnergy ? plan.energy_period : plan.live_period;
    p = p == 0 ? l.period_ns : std::min(p, l.period_ns);
    plan.next_expiry = std::min(plan.next_expiry, l.until_ns);
    ++it;
  }
  if (plan.live_period > 0) {
    plan.live_period = std::max(plan.live_period, kMinLivePeriodNs);
    // A live rate no faster than frames needs no live frames.
    if (plan.live_period >= frame_period_.load()) plan.live_period = 0;
  }
  return plan;
}

int64_t Sampler::EffectiveEnergyPeriod(const Plan& plan) const {
  // Nothing to integrate (no rail reports bare power): no fast wake-ups.
  if (collection_.energy().rails() == 0) return 0;
  int64_t base = energy_period_.load();
  int64_t boost = plan.energy_period;
  if (base <= 0) return boost;
  if (boost <= 0) return base;
  return std::min(base, boost);
}

int64_t Sampler::energy_period_ns() const {
  return EffectiveEnergyPeriod(PlanAt(clock_.MonotonicNs()));
}

int64_t Sampler::live_period_ns() const {
  return PlanAt(clock_.MonotonicNs()).live_period;
}

int64_t Sampler::KeptLocked(int64_t rt, int64_t boot) const {
  if (!have_last_ || rt > last_realtime_) return rt;
  return last_realtime_ + std::max<int64_t>(0, boot - last_boottime_);
}

int64_t Sampler::TimelineNs() const {
  const int64_t rt = clock_.RealtimeNs();
  const int64_t boot = clock_.BoottimeNs();
  std::lock_guard lock(time_mu_);
  return KeptLocked(rt, boot);
}

Sampler::BoottimeOnTimeline Sampler::TimelineAtBoottime(int64_t boottime_ns) const {
  const int64_t rt = clock_.RealtimeNs();
  const int64_t boot = clock_.BoottimeNs();
  BoottimeOnTimeline out;
  out.age_ns = SubSaturating(boot, boottime_ns);
  std::lock_guard lock(time_mu_);
  // The first step after the instant: the instant's stretch ran at the
  // offset that step left behind.
  auto after =
      std::upper_bound(timeline_steps_.begin(), timeline_steps_.end(), boottime_ns,
                       [](int64_t b, const TimelineStep& step) { return b < step.boottime_ns; });
  if (after != timeline_steps_.end()) {
    out.timeline_ns = AddSaturating(boottime_ns, after->offset_before_ns);
  } else if (have_last_ && boottime_ns <= last_boottime_) {
    // Up to the newest frame: where that frame's stretch lies, even if the
    // wall clock has stepped since (the next frame records the step).
    out.timeline_ns = AddSaturating(boottime_ns, SubSaturating(last_realtime_, last_boottime_));
  } else {
    out.timeline_ns = SubSaturating(KeptLocked(rt, boot), out.age_ns);
  }
  return out;
}

void Sampler::SeedTimeline(int64_t realtime_ns, int64_t boottime_ns) {
  const int64_t boot = clock_.BoottimeNs();
  std::lock_guard lock(time_mu_);
  if (have_last_ && realtime_ns <= last_realtime_) return;
  last_realtime_ = realtime_ns;
  // A later boot (boottime restarted below the seed's): stored time goes on
  // from the seed at boottime's pace from now (+0 for the first frame).
  last_boottime_ = boottime_ns <= boot ? boottime_ns : boot;
  have_last_ = true;
}

uint64_t Sampler::NewLeaseIdLocked() {
  for (;;) {
    uint64_t v = 0;
    if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
      // No entropy source (never on Linux >= 3.17): still unique, not secret.
      v = std::hash<int64_t>{}(clock_.MonotonicNs()) ^ (lease_order_ << 20);
    }
    // 53 bits: exact in a double, for JSON and JavaScript clients.
    v &= (uint64_t{1} << 53) - 1;
    if (v != 0 && !leases_.contains(v)) return v;
  }
}

Result<uint64_t> Sampler::Lease(uint64_t id, LeaseKind kind, int64_t period_ns, int64_t until_ns,
                                const runtime::Principal& who) {
  const int64_t now = clock_.MonotonicNs();
  {
    std::lock_guard lock(leases_mu_);
    auto it = id != 0 ? leases_.find(id) : leases_.end();
    if (it != leases_.end() && it->second.until_ns <= now) {
      leases_.erase(it);  // expired: a renewal takes a new lease
      it = leases_.end();
    }
    if (it != leases_.end()) {
      LeaseEntry& l = it->second;
      if (l.kind != kind) {
        return Status::NotFound("no " +
                                std::string(kind == LeaseKind::kEnergy ? "energy" : "live") +
                                " lease " + std::to_string(id));
      }
      if (!runtime::Principal::MayActOn(who, l.owner)) {
        return Status::PermissionDenied("lease " + std::to_string(id) +
                                        " belongs to another client");
      }
      l.period_ns = period_ns;
      l.until_ns = until_ns;
    } else {
      std::erase_if(leases_, [now](const auto& kv) { return kv.second.until_ns <= now; });
      std::map<std::string, size_t> held;
      for (const auto& [lid, l] : leases_) ++held[l.owner];
      const runtime::Room room = runtime::RoomFor(who, held, kMaxLeases, kMaxLeasesPerPrincipal);
      if (room.verdict == runtime::Room::Verdict::kOverQuota) {
        return Status::ResourceExhausted(
            "this client holds " + std::to_string(room.held) + " rate leases (at most " +
            std::to_string(kMaxLeasesPerPrincipal) + "); release some or let them expire");
      }
      if (room.verdict == runtime::Room::Verdict::kFull) {
        return Status::ResourceExhausted("too many rate leases; retry when some have expired");
      }
      if (room.verdict == runtime::Room::Verdict::kTakeFrom) {
        auto oldest = leases_.end();
        for (auto l = leases_.begin(); l != leases_.end(); ++l) {
          if (l->second.owner == room.victim &&
              (oldest == leases_.end() || l->second.order < oldest->second.order)) {
            oldest = l;
          }
        }
        leases_.erase(oldest);
      }
      id = NewLeaseIdLocked();
      leases_.emplace(id, LeaseEntry{kind, period_ns, until_ns, who.key, lease_order_++});
    }
  }
  Replan();
  return id;
}

bool Sampler::Release(uint64_t id, const runtime::Principal& who) {
  {
    std::lock_guard lock(leases_mu_);
    auto it = leases_.find(id);
    if (it == leases_.end() || !runtime::Principal::MayActOn(who, it->second.owner)) return false;
    leases_.erase(it);
  }
  Replan();
  return true;
}

size_t Sampler::LeasesOf(const runtime::Principal& who) const {
  const int64_t now = clock_.MonotonicNs();
  std::lock_guard lock(leases_mu_);
  return static_cast<size_t>(std::count_if(leases_.begin(), leases_.end(), [&](const auto& kv) {
    return kv.second.owner == who.key && kv.second.until_ns > now;
  }));
}

void Sampler::Replan() {
  plan_version_.fetch_add(1);
  // The rate log changes when the lease does, not when the loop next wakes.
  PlanAndLog(clock_.MonotonicNs());
  Wake();  // re-plan the next wake-up
}

void Sampler::Wake() {
  {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
  wake_word_.fetch_add(1);
  clock_.WakeWord(wake_word_);
}

Sampler::Plan Sampler::PlanAndLog(int64_t now) {
  // One lock around both, so the log never records a plan older than one
  // already logged.
  std::lock_guard lock(rates_mu_);
  Plan plan = PlanAt(now);
  LogRateLocked(RailRateHz(frame_period_.load(), EffectiveEnergyPeriod(plan), plan.live_period));
  return plan;
}

void Sampler::LogRateLocked(double hz) {
  if (!rates_.empty() && rates_.back().second == hz) return;
  // Kept in time order whatever the wall clock does.
  const int64_t now = std::max(TimelineNs(), rates_.empty() ? 0 : rates_.back().first);
  if (rates_.size() >= kMaxRateLog) {
    rates_.erase(rates_.begin(), rates_.begin() + static_cast<long>(kMaxRateLog / 2));
  }
  rates_.emplace_back(now, hz);
}

std::optional<RateRange> Sampler::RatesBetween(int64_t from_ns, int64_t to_ns) const {
  std::lock_guard lock(rates_mu_);
  if (rates_.empty() || to_ns <= rates_.front().first || from_ns >= to_ns) return std::nullopt;
  // The rate in force at from_ns: the last change at or before it.
  auto it = std::upper_bound(rates_.begin(), rates_.end(), from_ns,
                             [](int64_t t, const auto& e) { return t < e.first; });
  if (it != rates_.begin()) --it;
  RateRange r{it->second, it->second};
  for (; it != rates_.end() && it->first < to_ns; ++it) {
    r.min_hz = std::min(r.min_hz, it->second);
    r.max_hz = std::max(r.max_hz, it->second);
  }
  return r;
}

void Sampler::Reconfigure(int64_t frame_period_ns, int64_t energy_period_ns) {
  frame_period_.store(frame_period_ns);
  energy_period_.store(energy_period_ns);
  plan_version_.fetch_add(1);
  Wake();
}

void Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  Wake();
}

void Sampler::Run() {
  // A frame taken just before (the daemon's first, stored before READY=1)
  // sets the grid; otherwise start now.
  int64_t next_frame =
      frames_.load() > 0 ? last_tick_mono_ + frame_period_.load() : clock_.MonotonicNs();
  int64_t anchor = next_frame - frame_period_.load();  // the newest frame's deadline
  int64_t next_fast = 0;                               // 0: not scheduled
  int64_t next_live = 0;                               // 0: not scheduled
  int64_t planned_live = 0;                            // the live period next_live was planned with
  last_topology_check_ = next_frame;
  // The plan holds until a lease or the configuration changes (plan_version_),
  // a lease ends (next_expiry) or a discovery changes the rails.
  Plan plan;
  int64_t fast_period = 0;
  uint64_t planned_version = 0;
  uint64_t planned_generation = 0;
  bool planned = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    int64_t now = clock_.MonotonicNs();
    const int64_t period = frame_period_.load();
    const uint64_t version = plan_version_.load();
    if (!planned || version != planned_version || collection_.generation() != planned_generation ||
        now >= plan.next_expiry) {
      planned = true;
      planned_version = version;
      planned_generation = collection_.generation();
      plan = PlanAndLog(now);
      fast_period = EffectiveEnergyPeriod(plan);
      capturing_ = plan.energy_period > 0 && fast_period > 0 && rail_sink_ != nullptr;
    }
    const int64_t live_period = plan.live_period;
    // Live ticks keep to the grid of the newest frame's deadline.
    auto plan_live = [&] {
      return live_period <= 0
                 ? 0
                 : anchor + (std::max<int64_t>(0, now - anchor) / live_period + 1) * live_period;
    };
    if (live_period <= 0 || next_live == 0 || live_period != planned_live) next_live = plan_live();
    planned_live = live_period;
    // A live tick or fast sample that would land right on the frame is the frame's.
    const bool live_before_frame =
        live_period > 0 && next_live != 0 && next_live < next_frame - live_period / 4;
    if (now >= next_frame) {
      anchor = next_frame;
      Take(false, next_frame);
      now = clock_.MonotonicNs();
      next_frame += period;
      if (next_frame <= now) {  // late: skip the deadlines we missed, count them
        int64_t missed = (now - next_frame) / period + 1;
        misses_.fetch_add(static_cast<uint64_t>(missed));
        next_frame += missed * period;
      }
      next_fast = fast_period > 0 ? now + fast_period : 0;
      next_live = plan_live();
      if (now - last_topology_check_ >= options_.topology_check_ns) {
        last_topology_check_ = now;
        collection_.CheckTopology();
      }
    } else if (live_before_frame && now >= next_live) {
      Take(true, next_live);
      now = clock_.MonotonicNs();
      next_live += live_period;
      if (next_live <= now) next_live += ((now - next_live) / live_period + 1) * live_period;
    } else if (fast_period > 0 && next_fast == 0) {
      next_fast = now + fast_period;  // a boost just started
    } else if (fast_period > 0 && now >= next_fast) {
      const int64_t boot = clock_.BoottimeNs();
      collection_.SampleFast(boot);
      fast_.fetch_add(1);
      if (capturing_) {
        CaptureRails(AddSaturating(boot, collection_.realtime_offset_ns()),
                     collection_.fast_values());
      }
      next_fast += fast_period;
      if (next_fast <= now) next_fast += ((now - next_fast) / fast_period + 1) * fast_period;
    } else if (fast_period <= 0) {
      next_fast = 0;
    }
    int64_t wake = next_frame;
    if (fast_period > 0 && next_fast != 0 && next_fast < next_frame - fast_period / 4) {
      wake = std::min(wake, next_fast);
    }
    if (live_period > 0 && next_live != 0 && next_live < next_frame - live_period / 4) {
      wake = std::min(wake, next_live);
    }
    wake = std::min(wake, plan.next_expiry);  // a lease ending changes the rate
    // Read before the checks: a Wake() after them changes it, and the sleep
    // on it returns at once.
    const uint32_t seen = wake_word_.load();
    lock.lock();
    if (stop_) break;
    // A lease taken since the plan was made re-plans now, not at `wake`.
    if (plan_version_.load() != planned_version) continue;
    lock.unlock();
    const bool slept = clock_.SleepOnWord(wake_word_, seen, wake);
    lock.lock();
    if (!slept && !stop_ && plan_version_.load() == planned_version &&
        clock_.MonotonicNs() < wake) {
      clock_.WaitUntil(wake, lock, cv_);
    }
  }
}

}  // namespace edgemon
