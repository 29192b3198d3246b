// LowerOtherThreads: the sampler comes first. Every thread of this process
// that exists when it is called, except the caller and those named in
// `keep` (NameThread names), has its nice value raised by `steps` (at most
// to 19); the threads they start later (gRPC's pollers and executors, the
// HTTP listener's workers) inherit it. So under CPU contention the scheduler
// runs the kept threads (the sampler, the store's writer) before any thread
// that serves a request. Raising a nice value needs no privilege. Best
// effort: where a system-call filter refuses setpriority (the packaged
// unit keeps @resources out) nothing changes. Returns the threads lowered.
// RaiseSampler (below) lifts the sampler where that is allowed; the daemon
// lowers the other threads only when the sampler could not be lifted at all
// (a lifted or real-time sampler runs ahead of them anyway, and one of them
// lowered while holding an allocator lock the sampler waits on would keep
// it waiting).
#pragma once

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>

#include "edgemon/paths.h"

namespace edgemon::runtime {

// How many nice levels the threads that serve requests run below the sampler.
inline constexpr int kRequestThreadNiceSteps = 10;

inline size_t LowerOtherThreads(int steps, std::initializer_list<std::string_view> keep) {
  const auto self = static_cast<long>(::syscall(SYS_gettid));
  const std::string tasks = HostProcPath("self/task");
  DIR* dir = ::opendir(tasks.c_str());
  if (dir == nullptr) return 0;
  size_t lowered = 0;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || tid == self) continue;
    std::string name;
    std::getline(std::ifstream(tasks + "/" + e->d_name + "/comm"), name);
    if (std::find(keep.begin(), keep.end(), name) != keep.end()) continue;
    errno = 0;
    const int now = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (now == -1 && errno != 0) continue;  // gone meanwhile
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), std::min(19, now + steps)) == 0) {
      ++lowered;
    }
  }
  ::closedir(dir);
  return lowered;
}

// How the sampler thread was raised (RaiseSampler).
enum class SamplerPriority { kRealtime, kNice, kUnchanged };

// The sampler's priority, the best the daemon may take:
//   - with `realtime` (the key daemon.realtime), SCHED_FIFO at priority 1,
//     where allowed (CAP_SYS_NICE, as root outside the packaged unit, or an
//     RLIMIT_RTPRIO of at least 1; the packaged unit's RestrictRealtime=
//     refuses it): no thread of normal priority, in this process or any
//     other, then delays a frame. The sampler sleeps on absolute deadlines
//     and does a bounded read and parse per frame, and the kernel's
//     real-time throttling keeps 5 % of each CPU for the rest in any case.
//     SCHED_RESET_ON_FORK: a thread it starts (a library's) runs at normal
//     priority. It is not the default: the real-time class's bookkeeping
//     costs every tick 4-8 % more CPU (docs/performance.md).
//   - else (or where real-time is refused) `steps` nice levels above the
//     daemon (at least -20), where allowed (CAP_SYS_NICE; the unit's Nice=
//     otherwise sets the daemon's priority, and its filter refuses
//     setpriority).
inline SamplerPriority RaiseSampler(int steps, bool realtime) {
  sched_param rt{};
  rt.sched_priority = 1;
  if (realtime && ::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt) == 0) {
    return SamplerPriority::kRealtime;
  }
  const auto self = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, self);
  if (now == -1 && errno != 0) return SamplerPriority::kUnchanged;
  return ::setpriority(PRIO_PROCESS, self, std::max(-20, now - steps)) == 0
             ? SamplerPriority::kNice
             : SamplerPriority::kUnchanged;
}

}  // namespace edgemon::runtime
