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
// Rate leases: every caller that wants a faster rate holds its own lease
// (Lease), with its own period and expiry. An energy lease (Boost) raises
// the rail sampling rate; a live lease (a Watch faster than frames) adds
// live frames between stored ones, for the sinks that ask for them
// (FrameSink::WantsLive), never for the store. The sampler runs at the
// fastest rate any unexpired lease asks for, wakes when the earliest lease
// ends and falls to the fastest remaining one; live frames are at most
// 100 Hz whatever the number of leases. Live ticks keep to a grid anchored
// at the last frame's deadline, so they never bunch against frames.
//
// Leases belong to the principal that took them (principal.h): ids are
// random (never 1, 2, 3...), a renewal or a release naming another
// principal's lease, or a lease of the other kind, is refused and leaves it
// as it was; each principal holds at most kMaxLeasesPerPrincipal leases, and
// when the whole table is full the principal that holds the most loses its
// oldest lease to a newcomer (never the newcomer to the hog).
//
// The timeline: frames carry wall-clock time kept monotonic (invariant 3).
// TimelineNs() is that same time for "now" between frames, so windows,
// leases and range requests are stamped on the clock the frames are, however
// the wall clock steps. SeedTimeline continues the store's timeline after a
// restart (ring_store.h, I11).
//
// Every change of the effective rail sampling rate (configured, boosted,
// live or frame rate, whichever is fastest) goes into an in-memory log, so
// a summary states the rate that actually held over its range (RatesBetween).
//
// Rail capture: while an energy lease (Boost) is held, every rail power
// reading the loop takes (fast samples and the frames' own) is appended to
// a buffer preallocated for a chunk (rail_capture.cc); at each stored frame,
// or when the buffer is full, the chunk goes to the capture sink (the
// store's writer queue, which never blocks), so the samples at the boosted
// rate are kept beside the frames (store/rail_samples.h).
//
// Thread safety: Run() on one thread; Stop(), Lease(), Release(),
// RatesBetween() and the stats accessors from any thread; TickOnce() only
// when Run() is not running.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/runtime/pi_mutex.h"
#include "daemon/runtime/principal.h"
#include "daemon/store/rail_samples.h"
#include "edgemon/clock.h"
#include "edgemon/status.h"

namespace edgemon {

class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // Called on the sampler thread after every frame. Must not block.
  // `generation` changes whenever the inventory changed.
  virtual void OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) = 0;
  // What the sampler calls: OnFrame with the CLOCK_BOOTTIME the frame was
  // scheduled for (its boottime_ns less the wake-up lateness, so free of
  // jitter). The default forgets it.
  virtual void OnScheduledFrame(const Inventory& inventory, uint64_t generation, const Frame& frame,
                                int64_t /*scheduled_ns*/) {
    OnFrame(inventory, generation, frame);
  }
  // What the sampler calls: the frame as one immutable snapshot, the same
  // for every sink of that frame, so a sink that keeps the frame keeps the
  // pointer instead of a copy. The sampler reuses a snapshot's memory once
  // it holds the only reference again: a sink keeps no weak_ptr to it.
  // The default hands *frame to OnScheduledFrame.
  virtual void OnSharedFrame(const Inventory& inventory, uint64_t generation,
                             const std::shared_ptr<const Frame>& frame, int64_t scheduled_ns) {
    OnScheduledFrame(inventory, generation, *frame, scheduled_ns);
  }
  // True for sinks that also take live frames (sampled for a live lease,
  // not stored; they carry the seq of the newest stored frame).
  virtual bool WantsLive() const { return false; }
};

enum class LeaseKind {
  kEnergy,  // rail sampling (energy integration) rate
  kLive,    // live frames between stored frames
};

// The lowest and highest effective rail sampling rates over a time range.
struct RateRange {
  double min_hz = 0;
  double max_hz = 0;
};

struct SamplerOptions {
  int64_t frame_period_ns = 1'000'000'000;
  int64_t energy_period_ns = 0;  // 0: rails are sampled with frames only
  int64_t topology_check_ns = 10'000'000'000;
  uint64_t first_seq = 0;
  // Called on the sampler thread once per wall-clock step (CLOCK_REALTIME -
  // CLOCK_BOOTTIME changed by more than 1 s between two frames), either way;
  // stored time stays monotonic whatever it does (ring_store.h, I11).
  std::function<void(int64_t boottime_ns, int64_t step_ns)> on_clock_step;
};

class Sampler {
 public:
  Sampler(Collection& collection, Clock& clock, SamplerOptions options);

  void AddSink(FrameSink* sink) { sinks_.push_back(sink); }
  // Where captured rail chunks go (sampler thread; must not block).
  void set_rail_sink(std::function<void(store::RailChunk)> sink) { rail_sink_ = std::move(sink); }
  // Realtime (the frames' timeline) up to which every captured rail sample
  // has been handed to the sink: the newest stored frame's.
  int64_t rail_captured_through_ns() const { return rail_through_.load(); }
  uint64_t rail_samples() const { return rail_samples_.load(); }
  // Called after each frame on the sampler thread (systemd watchdog).
  void set_on_frame(std::function<void(const Frame&)> f) { on_frame_ = std::move(f); }

  // Takes one frame now and publishes it.
  const Frame& TickOnce();
  // Runs until Stop().
  void Run();
  void Stop();

  static constexpr int64_t kNoExpiry = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kMinLivePeriodNs = 10'000'000;  // live frames: at most 100 Hz
  static constexpr size_t kMaxLeases = 4096;
  static constexpr size_t kMaxLeasesPerPrincipal = 64;

  // Adds a lease (id 0) asking for `period_ns` until the monotonic clock
  // reaches `until_ns` (kNoExpiry: until released), or renews lease `id`
  // (period and expiry replaced; other leases untouched). Renewing an id that
  // has expired adds a new lease. Returns the lease's id, else:
  //   NOT_FOUND          `id` is a live lease of the other kind (untouched);
  //   PERMISSION_DENIED  `id` is a live lease of another principal (untouched;
  //                      a privileged principal may renew it);
  //   RESOURCE_EXHAUSTED `who` already holds kMaxLeasesPerPrincipal leases
  //                      (privileged: no quota), or the table is full and
  //                      `who` is the principal holding the most.
  Result<uint64_t> Lease(uint64_t id, LeaseKind kind, int64_t period_ns, int64_t until_ns,
                         const runtime::Principal& who);
  // Ends lease `id` if `who` may (its holder or privileged); false otherwise.
  bool Release(uint64_t id, const runtime::Principal& who);
  // Leases `who` holds now.
  size_t LeasesOf(const runtime::Principal& who) const;

  // Wall-clock time on the frames' timeline, now (see the class comment).
  int64_t TimelineNs() const;
  // A CLOCK_BOOTTIME instant (a local caller's stamp of a window's edge) on
  // the frames' timeline, where a frame sampled at that instant would lie:
  // after the newest frame, TimelineNs() less its age on CLOCK_BOOTTIME (both
  // read at once); up to it, at the offset from boottime of the frames of its
  // own stretch, so a start stamped before a wall-clock step still holds the
  // frames sampled after it, and a stamp taken before a step that no frame
  // has seen yet is not moved by it. Saturates at the ends of int64;
  // plausibility is the caller's to check on age_ns.
  struct BoottimeOnTimeline {
    int64_t timeline_ns = 0;
    int64_t age_ns = 0;  // CLOCK_BOOTTIME now - the instant (< 0: ahead of now)
  };
  BoottimeOnTimeline TimelineAtBoottime(int64_t boottime_ns) const;
  // Continues a timeline whose newest frame was stamped `realtime_ns` at
  // `boottime_ns` (the store's newest frame); a later boot's frames go on
  // from it. Call before the first frame.
  void SeedTimeline(int64_t realtime_ns, int64_t boottime_ns);
  // The effective rail sampling rates over realtime [from_ns, to_ns), as far
  // as the log reaches back (the sampler's start); nullopt outside it.
  std::optional<RateRange> RatesBetween(int64_t from_ns, int64_t to_ns) const;
  // Changes the frame and energy periods (SIGHUP reload); thread-safe.
  void Reconfigure(int64_t frame_period_ns, int64_t energy_period_ns);

  uint64_t frames() const { return frames_.load(); }
  uint64_t fast_samples() const { return fast_.load(); }
  uint64_t live_frames() const { return live_.load(); }
  uint64_t deadline_misses() const { return misses_.load(); }
  int64_t frame_period_ns() const { return frame_period_.load(); }
  int64_t energy_period_ns() const;  // the effective one, boost included
  int64_t live_period_ns() const;    // 0: no live frames between stored ones

 private:
  struct LeaseEntry {
    LeaseKind kind;
    int64_t period_ns;
    int64_t until_ns;
    std::string owner;  // Principal::key
    uint64_t order;     // when taken: the oldest of a principal goes first
  };
  // A new random lease id, not 0 and not in use (leases_mu_ held).
  uint64_t NewLeaseIdLocked();
  // The stored-time rule (invariant 3) for a wall-clock reading `rt` at
  // boottime `boot` (time_mu_ held).
  int64_t KeptLocked(int64_t rt, int64_t boot) const;
  // What the leases ask for at monotonic `now` (expired ones are dropped).
  struct Plan {
    int64_t energy_period = 0;  // 0: none
    int64_t live_period = 0;    // 0: none
    int64_t next_expiry = kNoExpiry;
  };
  Plan PlanAt(int64_t now) const;
  int64_t EffectiveEnergyPeriod(const Plan& plan) const;
  const Frame& Take(bool live, int64_t due_mono_ns);
  // Rail capture (rail_capture.cc; sampler thread): appends the power rails
  // of `values` at `realtime_ns`; hands the chunk to the sink.
  void CaptureRails(int64_t realtime_ns, const std::vector<Value>& values);
  void FlushRails();
  // frame_ as an immutable snapshot for the sinks, in the memory of an
  // earlier one no sink holds any more where there is one (no allocation
  // in steady state).
  std::shared_ptr<const Frame> Snapshot();
  // PlanAt, and the rate it gives into the log.
  Plan PlanAndLog(int64_t now);
  void LogRateLocked(double hz);  // rates_mu_ held
  void Replan();                  // after a lease changed: log the rate, wake the loop
  void Wake();                    // the loop re-checks stop_ and its plan now

  Collection& collection_;
  Clock& clock_;
  SamplerOptions options_;
  std::vector<FrameSink*> sinks_;
  std::function<void(const Frame&)> on_frame_;
  std::function<void(store::RailChunk)> rail_sink_;
  bool capturing_ = false;  // an energy lease is held (sampler thread)
  uint64_t rail_generation_ = 0;
  std::vector<ChannelId> rail_ids_;  // the power rails captured, for rail_generation_
  store::RailChunk rail_chunk_;      // being filled; its buffers preallocated
  std::atomic<int64_t> rail_through_{0};
  std::atomic<uint64_t> rail_samples_{0};
  Frame frame_;
  // Snapshots handed to sinks, oldest first (sampler thread only); at most
  // kMaxSnapshots are kept for reuse: the store holds a batch of frames
  // (256 by default) until its commit and releases them in order, the watch
  // hub and /metrics the newest. The pool grows only to what is held at once.
  std::deque<std::shared_ptr<Frame>> snapshots_;
  static constexpr size_t kMaxSnapshots = 272;
  uint64_t seq_;
  mutable runtime::PiMutex time_mu_;  // guards the four below
  bool have_last_ = false;            // a frame was stamped, or the timeline was seeded
  int64_t last_realtime_ = 0;
  int64_t last_boottime_ = 0;
  // Where the timeline moved against CLOCK_BOOTTIME (a forward wall-clock
  // step, or stored time catching up after a backward one): at the first
  // frame stamped `boottime_ns` after it, the timeline ran `offset_before_ns`
  // ahead of boottime until then. Oldest first, at most kMaxTimelineSteps;
  // an instant before one of them lands where that stretch's frames did.
  struct TimelineStep {
    int64_t boottime_ns;
    int64_t offset_before_ns;
  };
  std::vector<TimelineStep> timeline_steps_;
  static constexpr size_t kMaxTimelineSteps = 256;
  static constexpr int64_t kTimelineStepNs = 5'000'000;
  std::optional<int64_t> last_wall_offset_;  // CLOCK_REALTIME - CLOCK_BOOTTIME, as read
  int64_t last_topology_check_ = 0;
  int64_t last_tick_mono_ = 0;
  int64_t boot_offset_ = 0;  // CLOCK_BOOTTIME - CLOCK_MONOTONIC (time suspended)
  static constexpr int64_t kBootOffsetJitterNs = 1'000'000;
  static constexpr int64_t kClockStepNs = 1'000'000'000;

  std::atomic<int64_t> frame_period_;
  std::atomic<int64_t> energy_period_;
  std::atomic<uint64_t> plan_version_{0};  // bumped by every lease or period change
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> fast_{0};
  std::atomic<uint64_t> live_{0};

  mutable runtime::PiMutex leases_mu_;
  mutable std::map<uint64_t, LeaseEntry> leases_;  // guarded by leases_mu_
  uint64_t lease_order_ = 0;                       // guarded by leases_mu_

  static constexpr size_t kMaxRateLog = 65536;
  mutable runtime::PiMutex rates_mu_;              // taken before leases_mu_
  std::vector<std::pair<int64_t, double>> rates_;  // guarded by rates_mu_: (realtime, Hz) changes
  std::atomic<uint64_t> misses_{0};

  std::mutex mu_;
  std::condition_variable cv_;  // the loop's wait on a clock without SleepOnWord
  bool stop_ = false;           // guarded by mu_
  // Changed by every Wake(): the loop sleeps on it (Clock::SleepOnWord).
  std::atomic<uint32_t> wake_word_{0};
};

}  // namespace edgemon
