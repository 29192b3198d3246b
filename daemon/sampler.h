// Sampler: the daemon's heartbeat. One thread samples every collector on
// absolute monotonic deadlines and hands each frame to its sinks (the store,
// the live hub); between frames it samples the rail power collectors at the
// energy rate so energy counters integrate finely.
//
// Schedule invariants:
//   1. Deadlines are absolute: frame k is due at start + k * period, so N
//      frames take N periods without drift, whatever the work costs.
//   2. A deadline that has already passed when the loop gets to it is
//      skipped and counted as a miss; ticks are never bunched to catch up.
//   3. Only the monotonic clock schedules; a wall-clock jump changes nothing.
//      Frames' realtime_ns never goes backwards: after a backwards jump it
//      advances with boottime until the wall clock catches up.
//   4. Sampling never waits on a client or a sink: sinks must not block.
//
// Thread safety: Run() on one thread; Stop(), Boost() and the stats
// accessors from any thread; TickOnce() only when Run() is not running.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "collection.h"
#include "edgemon/clock.h"

namespace edgemon {

class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // Called on the sampler thread after every frame. Must not block.
  // `generation` changes whenever the inventory changed.
  virtual void OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) = 0;
};

struct SamplerOptions {
  int64_t frame_period_ns = 1'000'000'000;
  int64_t energy_period_ns = 0;  // 0: rails are sampled with frames only
  int64_t topology_check_ns = 10'000'000'000;
  uint64_t first_seq = 0;
};

class Sampler {
 public:
  Sampler(Collection& collection, Clock& clock, SamplerOptions options);

  void AddSink(FrameSink* sink) { sinks_.push_back(sink); }
  // Called after each frame on the sampler thread (systemd watchdog).
  void set_on_frame(std::function<void(const Frame&)> f) { on_frame_ = std::move(f); }

  // Takes one frame now and publishes it.
  const Frame& TickOnce();
  // Runs until Stop().
  void Run();
  void Stop();

  // Raises the energy rate to `period_ns` until the monotonic clock reaches
  // `until_ns` (a lease that ends by itself). The faster of the configured
  // and boosted rates applies.
  void Boost(int64_t period_ns, int64_t until_ns);
  // Changes the frame and energy periods (SIGHUP reload); thread-safe.
  void Reconfigure(int64_t frame_period_ns, int64_t energy_period_ns);

  uint64_t frames() const { return frames_.load(); }
  uint64_t fast_samples() const { return fast_.load(); }
  uint64_t deadline_misses() const { return misses_.load(); }
  int64_t frame_period_ns() const { return frame_period_.load(); }
  int64_t energy_period_ns() const;  // the effective one, boost included

 private:
  int64_t EffectiveEnergyPeriod(int64_t now) const;

  Collection& collection_;
  Clock& clock_;
  SamplerOptions options_;
  std::vector<FrameSink*> sinks_;
  std::function<void(const Frame&)> on_frame_;
  Frame frame_;
  uint64_t seq_;
  int64_t last_realtime_ = 0;
  int64_t last_boottime_ = 0;
  int64_t last_topology_check_ = 0;
  int64_t last_tick_mono_ = 0;

  std::atomic<int64_t> frame_period_;
  std::atomic<int64_t> energy_period_;
  std::atomic<int64_t> boost_period_{0};
  std::atomic<int64_t> boost_until_{0};
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> fast_{0};
  std::atomic<uint64_t> misses_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
};

}  // namespace edgemon
