// /proc/PID/stat, the one parser: edgemond's process list reads a process's
// CPU ticks from it, `edgemon tegrastats --stop` a process's start time (so a
// recycled pid is never taken for the process it recorded).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edgemon {

// "pid (comm) S ppid ... utime stime ... starttime ...". The name is the
// text between the first '(' and the last ')' (a comm may hold spaces and
// parentheses), and fields are counted after that ')'.
struct ProcStat {
  std::string name;
  char state = 0;                      // field 3
  uint64_t utime = 0;                  // field 14, clock ticks
  uint64_t stime = 0;                  // field 15, clock ticks
  std::optional<uint64_t> start_time;  // field 22, clock ticks after boot; none
                                       // when the line stops before it or it is
                                       // not a number
};
// nullopt unless the line holds a name, a one-letter state and the fields up
// to stime, utime and stime unsigned numbers.
std::optional<ProcStat> ParseProcStat(std::string_view text);

}  // namespace edgemon
