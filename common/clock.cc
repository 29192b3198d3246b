#include "edgemon/clock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>

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

// A futex on the word: FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC
// deadline. EAGAIN (the word moved), ETIMEDOUT and EINTR all return.
bool SystemClock::SleepOnWord(const std::atomic<uint32_t>& word, uint32_t seen,
                              int64_t deadline_ns) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  if (deadline_ns < 0) deadline_ns = 0;
  const timespec at{static_cast<time_t>(deadline_ns / 1'000'000'000),
                    static_cast<long>(deadline_ns % 1'000'000'000)};
  ::syscall(SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, seen, &at, nullptr,
            FUTEX_BITSET_MATCH_ANY);
  return true;
}

void SystemClock::WakeWord(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace edgemon
