#include "notify.h"

#include <systemd/sd-daemon.h>

namespace edgemon {

Notifier::Notifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0) watchdog_usec_ = usec;
}

void Notifier::Ready(const std::string& status) {
  sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
}

void Notifier::Status(const std::string& status) {
  sd_notifyf(0, "STATUS=%s", status.c_str());
}

void Notifier::Watchdog(int64_t monotonic_ns) {
  if (watchdog_usec_ == 0) return;
  int64_t half = static_cast<int64_t>(watchdog_usec_.load()) * 500;
  if (monotonic_ns - last_watchdog_ns_.load() < half) return;
  last_watchdog_ns_.store(monotonic_ns);
  sd_notify(0, "WATCHDOG=1");
}

void Notifier::Reloading(int64_t monotonic_ns) {
  sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%lld", static_cast<long long>(monotonic_ns / 1000));
}

void Notifier::FitWatchdogTo(int64_t frame_period_ns) {
  if (watchdog_usec_ == 0) return;
  uint64_t need = static_cast<uint64_t>(frame_period_ns / 1000) * 3;
  if (need <= watchdog_usec_) return;
  watchdog_usec_ = need;
  sd_notifyf(0, "WATCHDOG_USEC=%llu", static_cast<unsigned long long>(need));
}

void Notifier::Stopping() {
  sd_notify(0, "STOPPING=1");
}

}  // namespace edgemon
