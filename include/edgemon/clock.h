// Clocks, injected so tests run on fake time.
//
// Scheduling uses the monotonic clock only, so a wall-clock jump changes no
// deadline. Frames carry CLOCK_BOOTTIME (monotonic, counts suspend) and
// CLOCK_REALTIME.
#pragma once

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
};

class SystemClock final : public Clock {
 public:
  int64_t MonotonicNs() override;
  int64_t BoottimeNs() override;
  int64_t RealtimeNs() override;
  void WaitUntil(int64_t deadline_ns, std::unique_lock<std::mutex>& lock,
                 std::condition_variable& cv) override;
};

}  // namespace edgemon
