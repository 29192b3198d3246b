// The child-process side of edgemon record: spawn, signal forwarding,
// subreaping and reaping (see supervisor.h).
#include "client/cli/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace edgemon::cli {

namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Writes all of `data` to `fd`; sets *broken (and writes nothing more) once
// a write fails: our stdout is gone, the command's output is still drained.
void WriteAll(int fd, const char* data, size_t n, bool* broken) {
  while (n > 0 && !*broken) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *broken = true;
      return;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

volatile sig_atomic_t Supervisor::child_ = 0;
volatile sig_atomic_t Supervisor::forwarded_ = 0;
volatile sig_atomic_t Supervisor::active_ = 0;

int ResolveCommand(const std::string& name, std::string* path) {
  auto check = [](const std::string& p) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) return errno == EACCES ? EACCES : ENOENT;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (access(p.c_str(), X_OK) != 0) return EACCES;
    return 0;
  };
  if (name.empty()) return ENOENT;
  if (name.find('/') != std::string::npos) {
    *path = name;
    return check(name);
  }
  const char* env = std::getenv("PATH");
  std::string dirs = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
  int best = ENOENT;
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t colon = dirs.find(':', pos);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(pos, colon - pos);
    pos = colon + 1;
    std::string p = (dir.empty() ? "." : dir) + "/" + name;
    int e = check(p);
    if (e == 0) {
      *path = p;
      return 0;
    }
    if (e != ENOENT) best = e;
  }
  return best;
}

void Supervisor::Forward(int sig, siginfo_t* info, void*) {
  pid_t child = child_;
  if (child <= 0) return;
  // The terminal signals the whole foreground process group (SI_KERNEL): the
  // command got it too. Forward only what was sent to this process itself.
  if (info && info->si_code == SI_KERNEL) return;
  if (info && info->si_pid == child) return;
  kill(child, sig);
  forwarded_ = sig;
}

Supervisor::Supervisor(Clock& clock, bool wait_descendants) : clock_(clock) {
  if (active_) {
    std::fprintf(stderr, "edgemon: internal error: two supervisors at once\n");
    std::abort();
  }
  active_ = 1;
  child_ = 0;
  forwarded_ = 0;
  struct sigaction sa {};
  sa.sa_sigaction = Forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwarded) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  forwarding_ = true;
  subreaper_ = wait_descendants && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

Supervisor::~Supervisor() {
  StopForwarding();
  if (out_fd_ >= 0) close(out_fd_);
  if (subreaper_) prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  child_ = 0;
  active_ = 0;
}

void Supervisor::StopForwarding() {
  if (!forwarding_) return;
  for (int sig : kForwarded) signal(sig, SIG_DFL);
  forwarding_ = false;
}

int Supervisor::Start(const std::string& path, const std::vector<std::string>& argv,
                      const std::vector<std::string>& env, bool capture_stdout) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int fds[2] = {-1, -1};
  if (capture_stdout && pipe2(fds, O_CLOEXEC) != 0) return errno;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (capture_stdout) posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t def, mask;
  sigemptyset(&def);
  for (int sig : kForwarded) sigaddset(&def, sig);
  sigaddset(&def, SIGPIPE);
  sigemptyset(&mask);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setsigmask(&attr, &mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (capture_stdout) close(fds[1]);
  if (rc != 0) {
    if (capture_stdout) close(fds[0]);
    return rc;
  }
  pid_ = pid;
  child_ = pid;
  out_fd_ = capture_stdout ? fds[0] : -1;
  return 0;
}

bool Supervisor::Reap(bool block, int* status, bool* command_done, ChildExit* exit) {
  for (;;) {
    int st = 0;
    pid_t w = waitpid(-1, &st, block ? 0 : WNOHANG);
    if (w == pid_) {
      *status = st;
      *command_done = true;
      exit->command_exit_ns = clock_.RealtimeNs();
      child_ = 0;  // signals now have nobody to be forwarded to
      continue;
    }
    if (w > 0) {
      if (*command_done) ++exit->outlived;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    return w < 0;  // ECHILD: nothing left; 0: some still run
  }
}

void Supervisor::Drain(const std::function<void(std::string_view)>& on_output, bool* broken) {
  char buf[65536];
  fcntl(out_fd_, F_SETFL, fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
  for (;;) {
    ssize_t got = read(out_fd_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    WriteAll(STDOUT_FILENO, buf, static_cast<size_t>(got), broken);
    if (on_output) on_output(std::string_view(buf, static_cast<size_t>(got)));
  }
  close(out_fd_);
  out_fd_ = -1;
}

void Supervisor::WaitCaptured(const std::function<void(std::string_view)>& on_output, int* status,
                              ChildExit* exit) {
  bool command_done = false;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  bool open = true, broken = false;
  char buf[65536];
  for (;;) {
    pollfd p[2] = {{out_fd_, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int n = open ? 1 : 0;
    pollfd* set = open ? p : p + 1;
    if (pidfd >= 0) ++n;
    int r = poll(set, static_cast<nfds_t>(n), pidfd >= 0 ? -1 : 10);
    if (r < 0 && errno != EINTR) break;
    if (open && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t got = read(out_fd_, buf, sizeof buf);
      if (got > 0) {
        WriteAll(STDOUT_FILENO, buf, static_cast<size_t>(got), &broken);
        if (on_output) on_output(std::string_view(buf, static_cast<size_t>(got)));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        open = false;
      }
    }
    if (!subreaper_) {
      pid_t w = waitpid(pid_, status, WNOHANG);
      if (w == pid_) {
        exit->command_exit_ns = clock_.RealtimeNs();
        break;
      }
      if (w < 0 && errno != EINTR) break;
      continue;
    }
    if (Reap(false, status, &command_done, exit)) break;
    if (command_done && pidfd >= 0) {
      close(pidfd);
      pidfd = -1;  // from here on: poll the pipe, reap every 10 ms
    }
  }
  exit->last_exit_ns =
      subreaper_ && exit->outlived > 0 ? clock_.RealtimeNs() : exit->command_exit_ns;
  if (pidfd >= 0) close(pidfd);
  // What the command wrote before it exited.
  Drain(on_output, &broken);
}

ChildExit Supervisor::Wait(const std::function<void(std::string_view)>& on_output) {
  ChildExit exit;
  exit.waited_descendants = subreaper_;
  int status = 0;
  if (out_fd_ >= 0) {
    WaitCaptured(on_output, &status, &exit);
  } else if (subreaper_) {
    bool command_done = false;
    Reap(true, &status, &command_done, &exit);
    exit.last_exit_ns = exit.outlived > 0 ? clock_.RealtimeNs() : exit.command_exit_ns;
  } else {
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exit.last_exit_ns = exit.command_exit_ns = clock_.RealtimeNs();
  }
  child_ = 0;  // signals now have nobody to be forwarded to
  if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
  exit.forwarded_signal = forwarded_;
  return exit;
}

}  // namespace edgemon::cli
