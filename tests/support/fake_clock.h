// FakeClock: deterministic time for sampler tests. Waiting jumps straight to
// the deadline; tests move the clocks by hand to model work or clock jumps.
#pragma once

#include "edgemon/clock.h"

namespace edgemon::testing {

class FakeClock final : public Clock {
 public:
  int64_t MonotonicNs() override { return mono_; }
  int64_t BoottimeNs() override { return mono_ + boot_offset_; }
  int64_t RealtimeNs() override { return mono_ + real_offset_; }
  void WaitUntil(int64_t deadline_ns, std::unique_lock<std::mutex>&,
                 std::condition_variable&) override {
    if (deadline_ns > mono_) mono_ = deadline_ns;
  }
  // Time passing (work being done).
  void Advance(int64_t ns) { mono_ += ns; }
  // The wall clock alone jumps (settimeofday, NTP step).
  void JumpRealtime(int64_t ns) { real_offset_ += ns; }

 private:
  int64_t mono_ = 1'000'000'000;
  int64_t boot_offset_ = 5'000'000'000;
  int64_t real_offset_ = 1'700'000'000'000'000'000;
};

}  // namespace edgemon::testing
