#include "client/cli/tegrastats_background.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "client/cli/cli.h"
#include "edgemon/proc_stat.h"
#include "edgemon/secret_file.h"
#include "edgemon/text.h"

namespace edgemon::cli {
namespace {

constexpr char kPidFileName[] = "edgemon-tegrastats.pid";

std::string Errno(int err) {
  return std::strerror(err);
}

// A directory owned by `uid` that no one else may use.
bool PrivateDir(const struct stat& st, uid_t uid) {
  return S_ISDIR(st.st_mode) && st.st_uid == uid && (st.st_mode & 077) == 0;
}

template <typename T>
std::optional<T> Number(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Makes `path` and its missing parents, each new one 0700.
bool MakeDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = path.substr(0, slash);
    struct stat st {};
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST &&
        (::stat(part.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
      return false;
    }
    if (slash == std::string::npos) return true;
  }
}

std::optional<std::string> ReadFd(int fd) {
  std::string text;
  char buf[256];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    at += n;
    if (text.size() > 4096) return std::nullopt;
  }
}

// Opens the pid file: never through a link, never waiting on a FIFO, and
// only a regular file (-1 with errno EINVAL otherwise).
int OpenPidFile(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

std::string CannotOpen(const std::string& path, int err) {
  if (err == EINVAL) return TerminalSafe(path) + " is not a regular file: refusing to use it";
  if (err == ELOOP) return TerminalSafe(path) + " is a link: refusing to use it";
  return "cannot open " + TerminalSafe(path) + ": " + Errno(err);
}

// Whether `pid` runs the same executable file as this program (its
// /proc/PID/exe and /proc/self/exe are one inode): a pid file naming any
// other program is never taken for an instance.
bool SameExecutable(pid_t pid, const std::string& proc) {
  struct stat theirs {
  }, ours{};
  return ::stat((proc + "/" + std::to_string(pid) + "/exe").c_str(), &theirs) == 0 &&
         ::stat(HostProcPath("self/exe").c_str(), &ours) == 0 && theirs.st_dev == ours.st_dev &&
         theirs.st_ino == ours.st_ino;
}

// Whether `fd` is still the file at `path` (not unlinked, not replaced).
bool StillAt(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

// Writes all of `data`, retrying on EINTR.
bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// What the instance tells the process that started it, once.
struct Report {
  int32_t rc = 0;  // 0: running; otherwise the exit status to return
  int32_t pid = 0;
};

std::string PidFileOf(std::string_view who, uid_t uid, bool create, int* rc) {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  auto dir = UserRuntimeDir(xdg, uid, create);
  if (!dir.ok()) {
    if (dir.status().code() == StatusCode::kNotFound) {
      *rc = kExitOk;
      return {};
    }
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(who.size()), who.data(),
                 TerminalSafe(dir.status().message()).c_str());
    *rc = kExitCantCreate;
    return {};
  }
  return *dir + "/" + kPidFileName;
}

void Say(std::string_view who, const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(who.size()), who.data(), message.c_str());
}

}  // namespace

Result<std::string> UserRuntimeDir(const char* xdg_runtime_dir, uid_t uid, bool create,
                                   const std::string& run_user, const std::string& tmp) {
  struct stat st {};
  if (xdg_runtime_dir != nullptr && xdg_runtime_dir[0] == '/' &&
      ::stat(xdg_runtime_dir, &st) == 0 && PrivateDir(st, uid)) {
    return std::string(xdg_runtime_dir);
  }
  const std::string per_user = run_user + "/" + std::to_string(uid);
  if (::stat(per_user.c_str(), &st) == 0 && PrivateDir(st, uid)) return per_user;

  const std::string dir = tmp + "/edgemon-" + std::to_string(uid);
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::FailedPrecondition("cannot create " + dir + ": " + Errno(errno));
  }
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT && !create) return Status::NotFound(dir + " does not exist");
    return Status::FailedPrecondition("cannot use " + dir + ": " + Errno(errno));
  }
  if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
    return Status::FailedPrecondition(
        dir + " is not a directory of its own (a link or a file): " + "refusing to use it");
  }
  if (st.st_uid != uid) {
    return Status::FailedPrecondition(dir + " belongs to uid " + std::to_string(st.st_uid) +
                                      ", not " + std::to_string(uid) + ": refusing to use it");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::FailedPrecondition(dir + " is open to other users (mode " + mode +
                                      "): refusing to use it");
  }
  return dir;
}

Result<std::string> DefaultTegrastatsLog(const char* xdg_state_home, const char* home) {
  std::string dir;
  if (xdg_state_home != nullptr && xdg_state_home[0] == '/') {
    dir = std::string(xdg_state_home) + "/edgemon";
  } else if (home != nullptr && home[0] == '/') {
    dir = std::string(home) + "/.local/state/edgemon";
  } else {
    return Status::FailedPrecondition(
        "neither XDG_STATE_HOME nor HOME is set to an absolute path: give --logfile FILE");
  }
  if (!MakeDirs(dir))
    return Status::FailedPrecondition("cannot create " + dir + ": " + Errno(errno));
  return dir + "/tegrastats.log";
}

std::string FormatPidRecord(const PidRecord& r) {
  return std::to_string(r.pid) + " " + std::to_string(r.start_time) + "\n";
}

std::optional<PidRecord> ParsePidRecord(std::string_view text) {
  if (!text.ends_with('\n')) return std::nullopt;
  text.remove_suffix(1);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto pid = Number<pid_t>(text.substr(0, space));
  auto start = Number<uint64_t>(text.substr(space + 1));
  if (!pid || !start || *pid <= 0) return std::nullopt;
  return PidRecord{*pid, *start};
}

RecordedProcess CheckRecord(const PidRecord& r, const std::string& proc) {
  auto text = ReadWholeFile(proc + "/" + std::to_string(r.pid) + "/stat");
  if (!text) return RecordedProcess::kGone;
  auto st = ParseProcStat(*text);
  if (!st || !st->start_time) return RecordedProcess::kGone;
  if (*st->start_time != r.start_time) return RecordedProcess::kOther;
  // A zombie (or a dead task) has ended; its parent has not reaped it yet.
  if (st->state == 'Z' || st->state == 'X' || st->state == 'x') return RecordedProcess::kGone;
  if (!SameExecutable(r.pid, proc)) return RecordedProcess::kOther;
  return RecordedProcess::kRunning;
}

std::optional<PidRecord> OwnRecord(const std::string& proc) {
  auto text = ReadWholeFile(proc + "/self/stat");
  if (!text) return std::nullopt;
  auto st = ParseProcStat(*text);
  if (!st || !st->start_time) return std::nullopt;
  return PidRecord{::getpid(), *st->start_time};
}

int StartBackground(std::string_view who, const std::string& log_name,
                    const std::function<int(const ReadyFn& ready)>& body) {
  int rc = kExitOk;
  const std::string path = PidFileOf(who, ::getuid(), true, &rc);
  if (path.empty()) return rc;

  // Take the pid file's lock; a file unlinked by an instance that was
  // ending while we opened it is opened again.
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 5; ++attempt) {
    fd = OpenPidFile(path, O_RDWR | O_CREAT);
    if (fd < 0) {
      Say(who, CannotOpen(path, errno));
      return kExitCantCreate;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      auto record = ReadFd(fd);
      ::close(fd);
      if (err != EWOULDBLOCK) {
        Say(who, "cannot lock " + TerminalSafe(path) + ": " + Errno(err));
        return kExitCantCreate;
      }
      auto r = record ? ParsePidRecord(*record) : std::nullopt;
      if (r && CheckRecord(*r) == RecordedProcess::kRunning) {
        Say(who, "already running in the background (pid " + std::to_string(r->pid) +
                     "); stop it first with --stop");
      } else {
        Say(who, "another --start or --stop is under way; try again");
      }
      return kExitFailure;
    }
    if (!StillAt(fd, path)) {
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    Say(who, "cannot take " + TerminalSafe(path) + ": it keeps being replaced");
    return kExitCantCreate;
  }
  if (::ftruncate(fd, 0) != 0) {
    Say(who, "cannot write " + TerminalSafe(path) + ": " + Errno(errno));
    ::close(fd);
    return kExitCantCreate;
  }

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    Say(who, std::string("cannot make a pipe: ") + Errno(errno));
    ::close(fd);
    return kExitSoftware;
  }
  std::fflush(nullptr);
  const pid_t first = ::fork();
  if (first < 0) {
    Say(who, std::string("cannot fork: ") + Errno(errno));
    ::close(fd);
    return kExitSoftware;
  }
  if (first > 0) {
    // The caller: wait for the first child (it exits at once), then for the
    // instance's report.
    ::close(pipe_fds[1]);
    int status = 0;
    while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
    }
    Report report;
    size_t got = 0;
    while (got < sizeof report) {
      ssize_t n = ::read(pipe_fds[0], reinterpret_cast<char*>(&report) + got, sizeof report - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(pipe_fds[0]);
    ::close(fd);
    if (got != sizeof report) {
      Say(who, "the background process ended before it was running");
      return kExitSoftware;
    }
    if (report.rc == 0) {
      Say(who, "running in the background (pid " + std::to_string(report.pid) + "), appending to " +
                   TerminalSafe(log_name) + "; stop it with --stop");
    }
    return report.rc;
  }

  // The first child: a new session, without a controlling terminal; its
  // child can never acquire one.
  ::close(pipe_fds[0]);
  if (::setsid() < 0 || ::fork() != 0) _exit(0);  // a failed fork shows as no report

  // The instance.
  std::signal(SIGHUP, SIG_IGN);
  const int report_fd = pipe_fds[1];
  bool reported = false;
  auto send = [&](int32_t code) {
    Report r{code, static_cast<int32_t>(::getpid())};
    WriteAll(report_fd, &r, sizeof r);
    ::close(report_fd);
    reported = true;
  };
  const ReadyFn ready = [&]() -> bool {
    if (reported) return true;
    auto self = OwnRecord();
    const std::string text = self ? FormatPidRecord(*self) : std::string();
    if (text.empty() ||
        ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      Say(who, "cannot write " + TerminalSafe(path));
      send(kExitCantCreate);
      return false;
    }
    if (::chdir("/") != 0) {
      // Stays where it was started; nothing depends on it.
    }
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    send(0);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      if (null > STDERR_FILENO) ::close(null);
    }
    return true;
  };
  rc = body(ready);
  if (!reported) send(rc == 0 ? kExitSoftware : rc);
  if (StillAt(fd, path)) ::unlink(path.c_str());
  ::close(fd);
  return rc;
}

int StopBackground(std::string_view who, int wait_ms) {
  int rc = kExitOk;
  const std::string path = PidFileOf(who, ::getuid(), false, &rc);
  if (path.empty()) {
    if (rc == kExitOk) Say(who, "no background instance is running");
    return rc;
  }
  const int fd = OpenPidFile(path, O_RDONLY);
  if (fd < 0) {
    if (errno == ENOENT) {
      Say(who, "no background instance is running");
      return kExitOk;
    }
    Say(who, CannotOpen(path, errno));
    return kExitCantCreate;
  }
  auto text = ReadFd(fd);
  auto record = text ? ParsePidRecord(*text) : std::nullopt;
  const RecordedProcess state = record ? CheckRecord(*record) : RecordedProcess::kGone;
  if (state != RecordedProcess::kRunning) {
    // Nothing runs: the file is stale unless an instance holds it while it
    // starts (and has not written its record yet).
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      if (record && state == RecordedProcess::kOther) {
        // Held by a live instance whose executable is not this one's (an
        // edgemon replaced on disk since it started): never signalled.
        Say(who, "pid " + std::to_string(record->pid) +
                     " holds the pid file but does not run this edgemon's executable (one "
                     "replaced since it started?): not signalled; end it with kill if it is yours");
      } else {
        Say(who, "a background instance is starting; try again");
      }
      return kExitFailure;
    }
    if (StillAt(fd, path)) ::unlink(path.c_str());
    ::close(fd);
    std::string why = "no background instance is running";
    if (record && state == RecordedProcess::kOther) {
      why += " (pid " + std::to_string(record->pid) +
             " of the stale pid file is another process now, or runs another program: not "
             "signalled)";
    }
    Say(who, why + "; removed the stale " + TerminalSafe(path));
    return kExitOk;
  }
  ::close(fd);
  if (::kill(record->pid, SIGTERM) != 0) {
    Say(who, "cannot signal pid " + std::to_string(record->pid) + ": " + Errno(errno));
    return kExitFailure;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (CheckRecord(*record) == RecordedProcess::kRunning) {
    if (std::chrono::steady_clock::now() > deadline) {
      Say(who, "pid " + std::to_string(record->pid) + " did not end within " +
                   std::to_string(wait_ms / 1000) + " s of SIGTERM");
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return kExitOk;
}

}  // namespace edgemon::cli
