// Clocks, injected so tests run on fake time.
//
// Scheduling uses the monotonic clock only, so a wall-clock jump changes no
// deadline. Frames carry CLOCK_BOOTTIME (monotonic, counts suspend) and
// CLOCK_REALTIME.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace edgemon {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t MonotonicNs() = 0;
  virtual int64_t BoottimeNs() = 0;
  virtual int64_t RealtimeNs() = 0;
  // Waits until the monotonic clock reaches `deadline_ns` or `cv` is
  // notified (spurious wake-ups allowed). `lock` holds the mutex `cv` uses.
  virtual void WaitUntil(int64_t deadline_ns, std::unique_lock<std::mutex>& lock,
                         std::condition_variable& cv) = 0;
  // Sleeps until the monotonic clock reaches `deadline_ns`, or until `word`
  // no longer holds `seen` (a waker changes it, then calls WakeWord): one
  // system call a sleep, where a condition variable takes a second one to
  // hand its mutex back. Spurious returns allowed. Returns false at once
  // where the clock cannot (a test clock): the caller waits with WaitUntil.
  virtual bool SleepOnWord(const std::atomic<uint32_t>& /*word*/, uint32_t /*seen*/,
                           int64_t /*deadline_ns*/) {
    return false;
  }
  // Wakes every thread in SleepOnWord on `word`.
  virtual void WakeWord(std::atomic<uint32_t>& /*word*/) {}
};

class SystemClock final : public Clock {
 public:
  int64_t MonotonicNs() override;
  int64_t BoottimeNs() override;
  int64_t RealtimeNs() override;
  void WaitUntil(int64_t deadline_ns, std::unique_lock<std::mutex>& lock,
                 std::condition_variable& cv) override;
  bool SleepOnWord(const std::atomic<uint32_t>& word, uint32_t seen, int64_t deadline_ns) override;
  void WakeWord(std::atomic<uint32_t>& word) override;
};

}  // namespace edgemon
