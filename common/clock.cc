#include "edgemon/clock.h"

#include <time.h>

#include <chrono>

namespace edgemon {
namespace {

int64_t Read(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int64_t SystemClock::MonotonicNs() {
  return Read(CLOCK_MONOTONIC);
}
int64_t SystemClock::BoottimeNs() {
  return Read(CLOCK_BOOTTIME);
}
int64_t SystemClock::RealtimeNs() {
  return Read(CLOCK_REALTIME);
}

void SystemClock::WaitUntil(int64_t deadline_ns, std::unique_lock<std::mutex>& lock,
                            std::condition_variable& cv) {
  // libstdc++'s steady_clock is CLOCK_MONOTONIC.
  std::chrono::steady_clock::time_point tp{std::chrono::nanoseconds(deadline_ns)};
  cv.wait_until(lock, tp);
}

}  // namespace edgemon
