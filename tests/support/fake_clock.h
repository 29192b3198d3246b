// FakeClock: deterministic time for tests. Nothing in it reads a real clock.
//
// Two modes:
//  - jump (the default): WaitUntil moves the clock straight to the deadline,
//    so a sampler loop runs through fake time as fast as the CPU allows.
//    Tests move the clocks by hand to model work or clock jumps.
//  - paced: WaitUntil blocks until the test moves the clock to the deadline
//    (Advance or Step), so a thread on this clock does only the work the
//    test lets it do. Step() lets one waiting thread run exactly one wake-up:
//    the clock goes to that thread's deadline and Step returns once the
//    thread is waiting again for a later one (its work for that deadline
//    done). The wait itself is a short real wait on the caller's condition
//    variable, returned from as a spurious wake-up, so the caller's loop
//    sees its stop and re-plan notifications as with a real clock.
//
// Thread safety: every method may be called from any thread. In paced mode
// at most one thread waits on the clock at a time (the sampler's loop).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "edgemon/clock.h"

namespace edgemon::testing {

class FakeClock final : public Clock {
 public:
  enum class Mode { kJump, kPaced };
  explicit FakeClock(Mode mode = Mode::kJump) : paced_(mode == Mode::kPaced) {}

  int64_t MonotonicNs() override { return mono_.load(); }
  int64_t BoottimeNs() override { return mono_.load() + boot_offset_; }
  int64_t RealtimeNs() override { return mono_.load() + real_offset_.load(); }
  void WaitUntil(int64_t deadline_ns, std::unique_lock<std::mutex>& lock,
                 std::condition_variable& cv) override {
    if (!paced_.load()) {
      MoveForwardTo(deadline_ns);
      return;
    }
    if (mono_.load() >= deadline_ns) return;
    {
      std::lock_guard g(wait_mu_);
      waiting_deadline_ = deadline_ns;
    }
    // One short real wait on `cv`: the caller's loop re-checks its state and
    // waits again (a spurious wake-up, which the interface allows), so its
    // stop or re-plan (a notification of `cv`) is never missed.
    cv.wait_for(lock, std::chrono::milliseconds(1));
    std::lock_guard g(wait_mu_);
    waiting_deadline_ = 0;
  }

  void SetMode(Mode mode) { paced_ = mode == Mode::kPaced; }
  // Time passing (work being done).
  void Advance(int64_t ns) { mono_ += ns; }
  // The wall clock alone jumps (settimeofday, NTP step).
  void JumpRealtime(int64_t ns) { real_offset_ += ns; }

  // Paced mode: waits until a thread waits on the clock, moves the clock to
  // its deadline (never backwards) and returns once that thread waits again
  // for a later deadline (its work for this one done). Returns the
  // monotonic time after the step.
  int64_t Step() {
    for (;;) {
      {
        std::lock_guard g(wait_mu_);
        if (waiting_deadline_ != 0) {
          MoveForwardTo(waiting_deadline_);
          break;
        }
      }
      Nap();
    }
    AwaitWaiter();
    return mono_.load();
  }
  // Paced mode: Step until the monotonic clock reaches `until_ns`.
  void StepUntil(int64_t until_ns) {
    while (mono_.load() < until_ns) Step();
  }
  // Paced mode: returns once a thread waits on the clock for a deadline
  // still ahead (e.g. a sampler thread just started has done what was due).
  void AwaitWaiter() {
    for (;;) {
      {
        std::lock_guard g(wait_mu_);
        if (waiting_deadline_ > mono_.load()) return;
      }
      Nap();
    }
  }

 private:
  // The monotonic clock to `t` unless it is already past it (never backwards).
  void MoveForwardTo(int64_t t) {
    int64_t now = mono_.load();
    while (now < t && !mono_.compare_exchange_weak(now, t)) {
    }
  }
  static void Nap() { std::this_thread::sleep_for(std::chrono::microseconds(100)); }

  std::atomic<bool> paced_;
  std::atomic<int64_t> mono_{1'000'000'000};
  const int64_t boot_offset_ = 5'000'000'000;
  std::atomic<int64_t> real_offset_{1'700'000'000'000'000'000};
  std::mutex wait_mu_;
  int64_t waiting_deadline_ = 0;  // guarded by wait_mu_; 0: nobody waits
};

}  // namespace edgemon::testing
