// The system trees' paths: the one place edgemon names /sys, /proc, /etc and
// /var/lib (their literal prefixes are in common/paths.cc only; the layering
// test checks that no other source spells out /sys or /proc). The daemon's
// collectors read these *logical* paths through a SysFs
// (daemon/collect/sysfs.h), which puts them under `--root`; HostProcPath is
// for the running kernel's own /proc, which every program may read.
#pragma once

#include <string>
#include <string_view>

namespace edgemon {

// Logical paths. `rel` has no leading slash: SysPath("class/hwmon").
std::string SysPath(std::string_view rel);
std::string ProcPath(std::string_view rel);
std::string EtcPath(std::string_view rel);
std::string VarLibPath(std::string_view rel);
// A real path in the running kernel's /proc, never under --root and never
// read through a SysFs: the files of edgemon's own process or of a peer on
// the same machine (HostProcPath("self/statm"), a caller's "PID/status"),
// which describe edgemon and its callers, not the monitored system.
std::string HostProcPath(std::string_view rel);

// Joins a logical directory and a relative name with one slash.
std::string JoinPath(std::string_view dir, std::string_view name);
// The last component of a path ("/sys/class/hwmon/hwmon3" -> "hwmon3").
std::string_view BaseName(std::string_view path);
// All but the last component ("/a/b/c" -> "/a/b").
std::string_view DirName(std::string_view path);

}  // namespace edgemon
