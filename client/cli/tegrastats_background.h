// `edgemon tegrastats --start` and `--stop`: one background instance per
// user, as NVIDIA's tegrastats runs one with the same options.
//
// The instance is found through a pid file, edgemon-tegrastats.pid, in the
// user's runtime directory (UserRuntimeDir). The file holds "PID STARTTIME\n":
// the process id and the process's start time (field 22 of /proc/PID/stat,
// clock ticks after boot), so a pid the kernel has since given to another
// process is never signalled. The instance holds an exclusive flock(2) on the
// file for its whole life: a second --start fails to take it and is refused,
// and a file nobody holds is stale (the instance was killed) and is replaced.
//
// StartBackground forks before any connection is made (gRPC's threads do
// not survive fork): the first child calls setsid and forks the instance,
// which runs `body`. Until `body` calls `ready`, the instance's stderr is
// still the caller's, so a daemon that cannot be reached is reported there
// and its exit status is the caller's; `ready` writes the pid file, tells the
// caller to return 0, and points stdin, stdout and stderr at /dev/null. The
// instance removes the pid file when `body` returns.
//
// Threads: these functions are called by edgemon's main thread, with no other
// thread running (StartBackground forks).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "edgemon/paths.h"
#include "edgemon/status.h"

namespace edgemon::cli {

// The directory for per-user runtime files, the first that passes:
//   $XDG_RUNTIME_DIR (`xdg_runtime_dir`, when set and absolute),
//   RUN_USER/UID (`run_user`, normally /run/user),
// each a directory owned by `uid` that no one else may use (mode & 077 == 0);
// then TMP/edgemon-UID (`tmp`, normally /tmp), created 0700 when missing and
// `create` is set, and refused (FAILED_PRECONDITION) unless it is a directory
// (not a link) owned by `uid` with mode & 077 == 0. Without `create`, a
// missing TMP/edgemon-UID is NOT_FOUND.
Result<std::string> UserRuntimeDir(const char* xdg_runtime_dir, uid_t uid, bool create,
                                   const std::string& run_user = "/run/user",
                                   const std::string& tmp = "/tmp");

// Where --start writes without --logfile: $XDG_STATE_HOME/edgemon/tegrastats.log,
// else $HOME/.local/state/edgemon/tegrastats.log. The directories are made
// (0700) when missing. FAILED_PRECONDITION when neither variable is set.
Result<std::string> DefaultTegrastatsLog(const char* xdg_state_home, const char* home);

// The pid file's record.
struct PidRecord {
  pid_t pid = 0;
  uint64_t start_time = 0;
};
std::string FormatPidRecord(const PidRecord& r);                 // "PID STARTTIME\n"
std::optional<PidRecord> ParsePidRecord(std::string_view text);  // nullopt unless exactly that

// Whether the process a record names still runs: kGone when /proc/PID is
// absent or a zombie, kOther when the pid now belongs to a process that
// started at another time or runs another executable than this program
// (PROC/PID/exe and the running kernel's /proc/self/exe are not one file).
// `proc` is the procfs mount.
enum class RecordedProcess { kRunning, kGone, kOther };
RecordedProcess CheckRecord(const PidRecord& r, const std::string& proc = HostProcPath(""));

// This process's record (its pid and start time from /proc/self/stat).
std::optional<PidRecord> OwnRecord(const std::string& proc = HostProcPath(""));

// --start: see the top of this file. `who` prefixes messages
// ("edgemon tegrastats"); `log_name` names the logfile in them. `body` runs
// in the instance and must call `ready` once it is connected, and stop at
// once when `ready` returns false (the pid file could not be written). Returns the exit status for
// the process that returns from it: the caller gets 0 once `ready` was called, 1 when an instance
// already runs, 73 when the runtime directory or pid file cannot be used, or the status `body`
// returned before `ready`; the instance gets `body`'s status.
using ReadyFn = std::function<bool()>;
int StartBackground(std::string_view who, const std::string& log_name,
                    const std::function<int(const ReadyFn& ready)>& body);

// --stop: signals (SIGTERM) the instance the pid file names when its start
// time matches and it runs this program's executable, and waits up to `wait_ms` for it to end.
// Returns 0 when it ended or none was running (a stale pid file is removed, its pid not signalled),
// 1 when it could not be signalled or did not end in time, 73 when the runtime directory cannot be
// used or the pid file is not a regular file (a link, a FIFO: refused at once; both --start and
// --stop open it with O_NOFOLLOW|O_NONBLOCK).
int StopBackground(std::string_view who, int wait_ms = 10000);

}  // namespace edgemon::cli
