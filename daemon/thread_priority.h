// LowerThreadPriority: request workers yield the CPU to the sampler. The
// calling thread's nice value is raised by `steps` (at most to 19), so that
// under CPU contention the scheduler runs the sampler and the store's writer
// (left at the daemon's own priority) first; raising one's own nice value
// needs no privilege. Best effort: where a system-call filter refuses
// setpriority (the packaged unit keeps @resources out), the thread runs at
// the daemon's priority and false is returned.
#pragma once

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace edgemon {

inline bool LowerThreadPriority(int steps) {
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (now == -1 && errno != 0) return false;
  return ::setpriority(PRIO_PROCESS, tid, std::min(19, now + steps)) == 0;
}

// How many nice levels request workers run below the sampler.
inline constexpr int kRequestWorkerNiceSteps = 10;

}  // namespace edgemon
