// LiveEnergy: the energy counters as the sampler last saw them, for ranges
// that reach past the newest stored frame (an open window, a window that just
// ended, "the last minute").
//
// The sampler publishes one reading after every observation of the rails
// (each frame and each rail-rate sample between frames): every rail energy
// counter (mJ, unrounded for the daemon's own integrators) and the power
// sample it was integrated from, stamped with realtime. A ring keeps the
// newest `capacity` readings, so a counter can be read at any instant from
// the oldest reading up to now:
//   - at or after a reading: its value plus its power sample held up to the
//     instant (so a reading taken at an instant, EndWindow's, reads the same
//     later when newer samples exist); after the newest reading for at most
//     max_hold_ns (beyond it the sampler has stalled and nothing is
//     invented: nullopt);
//   - before the oldest reading: nullopt (read the store instead).
//
// Thread safety: Publish from the sampler thread; the readers from any
// thread (one mutex, held for a copy or a short scan, never for I/O).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/runtime/pi_mutex.h"

namespace edgemon {

class LiveEnergy {
 public:
  struct Reading {
    int64_t realtime_ns = 0;
    std::vector<std::optional<double>> mj;   // by index into keys
    std::vector<std::optional<int64_t>> mw;  // the power sample, when one was read
  };
  using Keys = std::shared_ptr<const std::vector<std::string>>;

  explicit LiveEnergy(size_t capacity = 2048) : capacity_(capacity) {}

  // Sampler thread. A new key list (a rediscovery) starts the ring afresh.
  // Returns the reading the ring let go of to make room, or buffers sized
  // for the keys while the ring fills (allocated at once when the keys
  // change), so the caller can reuse them for the next one.
  Reading Publish(const Keys& keys, Reading reading);
  void set_max_hold_ns(int64_t ns);

  // The counter `key` (Channel::Key of a rail energy channel) at realtime t.
  std::optional<double> CounterAt(const std::string& key, int64_t t_ns) const;
  // The highest power sample of `key` with from <= t < to among the readings
  // held; nullopt when none fell in the range.
  std::optional<int64_t> PeakIn(const std::string& key, int64_t from_ns, int64_t to_ns) const;
  // Realtime of the oldest reading held (nullopt: none yet).
  std::optional<int64_t> oldest_ns() const;
  // The counters' keys, in order.
  std::vector<std::string> keys() const;

 private:
  std::optional<size_t> IndexOf(const std::string& key) const;  // mu_ held

  const size_t capacity_;
  mutable runtime::PiMutex mu_;
  Keys keys_;                            // guarded by mu_
  std::deque<Reading> ring_;             // guarded by mu_; oldest first
  std::vector<Reading> spares_;          // guarded by mu_; buffers not yet in the ring
  int64_t max_hold_ns_ = 3'000'000'000;  // guarded by mu_
};

}  // namespace edgemon
