// Runs a command as a child of this process and reports how it ended: the
// process side of `edgemon record`, apart from anything edgemon measures.
//
//   ResolveCommand  where execve would find a command name ($PATH search)
//   Supervisor      spawns the command, forwards the signals sent to this
//                   process (SIGINT, SIGTERM, SIGHUP, SIGQUIT) to it, passes
//                   its stdout through (when captured), reaps it and, as
//                   their subreaper, every process it started, and reports
//                   its exit status or the signal that killed it
//
// Ownership and threads: a Supervisor is used by one thread. Signal
// dispositions and the subreaper attribute belong to the whole process, so
// at most one Supervisor may exist at a time (a second one aborts); its
// destructor restores the default dispositions and gives up the subreaper
// attribute it took.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/clock.h"

namespace edgemon::cli {

// Where execve would find `name` (searched in $PATH unless it holds a '/'):
// 0 with *path set, ENOENT (not found), EACCES (found, not executable) or
// EISDIR.
int ResolveCommand(const std::string& name, std::string* path);

// How the command ended.
struct ChildExit {
  std::optional<int> exit_code;  // its exit status
  std::optional<int> signal;     // or the signal that killed it
  int forwarded_signal = 0;      // the last signal forwarded to it (0: none)
  // The processes it started besides itself: whether they were waited for
  // (this process was their subreaper), and how many exited after it.
  bool waited_descendants = false;
  int outlived = 0;
  int64_t command_exit_ns = 0;  // when the command itself exited (the clock's realtime)
  int64_t last_exit_ns =
      0;  // when the last of them exited (= command_exit_ns when none outlived it)

  // The shell's convention: the exit status, or 128 + the signal.
  int Status() const { return signal ? 128 + *signal : exit_code.value_or(0); }
};

class Supervisor {
 public:
  // Forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process (not
  // those the terminal sends to the whole foreground process group, which
  // the command receives itself, nor those the command sends) to the
  // command once started, and ignores SIGPIPE. With `wait_descendants`,
  // becomes the subreaper of the command's processes (where the kernel
  // allows it): one that daemonises is reparented here and waited for.
  // Exit times are read from `clock`, which must outlive the Supervisor.
  Supervisor(Clock& clock, bool wait_descendants);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Spawns `path` with `argv` (argv[0] included) and the environment `env`,
  // the forwarded signals and SIGPIPE at their defaults and no signal
  // blocked. With `capture_stdout`, its stdout is a pipe that Wait reads.
  // 0, or an errno (ENOENT, EACCES, ...) when it could not be started.
  int Start(const std::string& path, const std::vector<std::string>& argv,
            const std::vector<std::string>& env, bool capture_stdout);

  // Waits until the command exits (and, when this process is their
  // subreaper, until every process it started has exited). A captured
  // stdout is copied to this process's stdout as it comes, each chunk also
  // given to `on_output`, and what is left in the pipe when the command is
  // done is read too (a background process that keeps the pipe open is not
  // waited for). Call once, after a successful Start.
  ChildExit Wait(const std::function<void(std::string_view)>& on_output = nullptr);

  // Restores the default dispositions of the forwarded signals (from here
  // on, they act on this process again). The destructor does it too.
  void StopForwarding();

  pid_t pid() const { return pid_; }

 private:
  // Reaps whatever of the command's tree has exited (the command itself into
  // *status); true once none is left. Those reaped after the command count
  // as having outlived it.
  bool Reap(bool block, int* status, bool* command_done, ChildExit* exit);
  // Wait with a captured stdout: passes it through while reaping.
  void WaitCaptured(const std::function<void(std::string_view)>& on_output, int* status,
                    ChildExit* exit);
  void Drain(const std::function<void(std::string_view)>& on_output, bool* broken);

  // The signal handler's state. A handler can reach only static storage,
  // and the dispositions it serves are the process's: hence static (one
  // Supervisor at a time), sig_atomic_t (written by the handler, read
  // here). Nothing else of the Supervisor is static.
  static void Forward(int sig, siginfo_t* info, void*);
  static volatile sig_atomic_t child_;      // the command's pid while it runs, else 0
  static volatile sig_atomic_t forwarded_;  // the last signal forwarded
  static volatile sig_atomic_t active_;     // a Supervisor exists

  Clock& clock_;
  bool subreaper_ = false;  // this process is the command tree's subreaper
  bool forwarding_ = false;
  pid_t pid_ = -1;
  int out_fd_ = -1;  // read end of the command's stdout, when captured
};

}  // namespace edgemon::cli
