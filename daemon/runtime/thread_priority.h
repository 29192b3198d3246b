// LowerOtherThreads: the sampler comes first. Every thread of this process
// that exists when it is called, except the caller and those named in
// `keep` (NameThread names), has its nice value raised by `steps` (at most
// to 19); the threads they start later (gRPC's pollers and executors, the
// HTTP listener's workers) inherit it. So under CPU contention the scheduler
// runs the kept threads (the sampler, the store's writer) before any thread
// that serves a request. Raising a nice value needs no privilege. Best
// effort: where a system-call filter refuses setpriority (the packaged
// unit keeps @resources out) nothing changes. Returns the threads lowered.
// RaiseThisThread (below) lifts the sampler further where that is allowed.
#pragma once

#include <dirent.h>
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

// Raises the calling thread's priority by `steps` nice levels (at least
// -20): the sampler's, where the daemon may (CAP_SYS_NICE: root outside the
// packaged unit, whose empty capability set and filter refuse it; there
// the unit's Nice= sets the daemon's priority). False when refused.
inline bool RaiseThisThread(int steps) {
  const auto self = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, self);
  if (now == -1 && errno != 0) return false;
  return ::setpriority(PRIO_PROCESS, self, std::max(-20, now - steps)) == 0;
}

}  // namespace edgemon::runtime
