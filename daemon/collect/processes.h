// The process list: every process under the monitored root's /proc, with its
// user (from the root's /etc/passwd), resident set and CPU share.
//
// Read through the SysFs seam only, so a fixture tree or the simulator's root
// is listed as the live system is. The CPU share of a process is its
// utime+stime ticks since the previous Read(), over the monotonic time
// between the two calls (injected clock): absent on the first call and for a
// process the previous call did not see, never 0 for "not known".
//
// A process that exits between the directory listing and the read of its
// stat is left out; one whose status cannot be read has no resident set and
// no user (never 0 KiB, never uid 0). The list is in directory order: sorting
// and limiting are the caller's.
//
// Thread safety: Read() may be called from any thread (a mutex serialises
// callers and guards the previous ticks); the service calls it from its
// worker. The SysFs must allow ReadText/List from that thread (they open
// their own descriptors).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/collect/sysfs.h"
#include "edgemon/clock.h"

namespace edgemon {

struct ProcessInfo {
  int pid = 0;
  std::string name;  // comm, as in /proc/PID/stat
  // The user name, or the uid as a number where passwd does not name it;
  // empty where status could not be read.
  std::string user;
  char state = 0;                        // R, S, D, Z, ... as in /proc/PID/stat
  std::optional<uint32_t> cpu_permille;  // of one core, since the previous Read()
  std::optional<uint64_t> rss_kib;       // VmRSS; none for kernel threads
  std::string command;                   // cmdline, space-joined; empty for kernel threads
};

// The kernel's clock ticks per second (sysconf(_SC_CLK_TCK), 100 if unknown).
int64_t ClockTicksPerSecond();

class ProcessReader {
 public:
  // `ticks_per_s`: the unit of utime/stime in /proc/PID/stat.
  ProcessReader(SysFs& fs, Clock& clock, int64_t ticks_per_s = ClockTicksPerSecond());
  ProcessReader(const ProcessReader&) = delete;
  ProcessReader& operator=(const ProcessReader&) = delete;

  std::vector<ProcessInfo> Read();

 private:
  SysFs& fs_;
  Clock& clock_;
  const int64_t ticks_per_s_;
  std::mutex mu_;
  std::map<int, uint64_t> prev_ticks_;  // pid -> utime+stime at the previous Read(); mu_
  int64_t prev_ns_ = 0;                 // monotonic time of the previous Read(); mu_
};

}  // namespace edgemon
