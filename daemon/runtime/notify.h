// The systemd contract (sd_notify): READY=1 once the first frame is stored
// and the service listens; WATCHDOG=1 from the sampling loop, so liveness
// means samples flow; STATUS= kept current; RELOADING=1 / STOPPING=1.
// Every call is a no-op when NOTIFY_SOCKET is unset (not under systemd).
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace edgemon::runtime {

class Notifier {
 public:
  Notifier();
  void Ready(const std::string& status);
  void Status(const std::string& status);
  // Sends WATCHDOG=1 when half the watchdog interval has passed since the
  // last one (call it every frame; cheap otherwise).
  void Watchdog(int64_t monotonic_ns);
  void Reloading(int64_t monotonic_ns);
  // Liveness means frames flow, so the watchdog must outlast a frame period:
  // when the unit's WatchdogSec is shorter than three periods, extends it
  // (WATCHDOG_USEC=) to that.
  void FitWatchdogTo(int64_t frame_period_ns);
  void Stopping();
  bool watchdog_enabled() const { return watchdog_usec_ > 0; }

 private:
  std::atomic<uint64_t> watchdog_usec_{0};
  std::atomic<int64_t> last_watchdog_ns_{0};
};

}  // namespace edgemon::runtime
