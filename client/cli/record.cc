// edgemon record, attach and mark: energy, power, temperatures and clocks of
// a benchmark run (or of any past range) from edgemond's ring store, printed
// as a summary and saved as a bundle (summary.json, samples.csv, trace.json).
//
// record: connects (refuses to start the command without a daemon), opens a
// window named after the command, boosts the rail sampling rate (--rate,
// renewed while the command runs), spawns the command with EDGEMON_WINDOW,
// EDGEMON_WINDOW_START and EDGEMON_CONNECT in its environment, forwards
// SIGINT/SIGTERM/SIGHUP sent to edgemon (not the terminal's, which the
// command receives itself), ends the window as soon as the command exits,
// then summarizes [start - pre, end + post] and exits with the command's
// status (128 + signal when a signal killed it). A daemon that goes away
// during the run is waited for; what it stored is still summarized.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stop_token>
#include <thread>

#include "client/cli/cli.h"
#include "client/cli/record_report.h"
#include "client/control_client.h"
#include "edgemon/timespec.h"

extern char** environ;

namespace edgemon::cli {

namespace {

using record::Report;

// How long record waits for a daemon that went away before giving up on a summary.
constexpr std::chrono::seconds kDaemonWait{15};
constexpr uint32_t kBoostLeaseMs = 10'000;
// A record's window, and the marks begun inside it, are leased: the daemon
// closes them as abandoned when the recorder stops renewing (killed).
constexpr uint32_t kWindowLeaseMs = 10'000;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SleepNs(int64_t ns) {
  if (ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

// Calls f() until it succeeds, fails with something other than UNAVAILABLE,
// or the deadline passes; reconnect() runs before each retry (a fresh
// channel reaches a restarted daemon at once, where the old one may still
// be backing off). *waited is set when it had to wait.
template <typename F>
auto Retry(F f, std::chrono::steady_clock::time_point deadline,
           const std::function<void()>& reconnect, bool* waited = nullptr) {
  auto r = f();
  while (!r.ok() && r.status().code() == StatusCode::kUnavailable &&
         std::chrono::steady_clock::now() < deadline) {
    if (waited) *waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (reconnect) reconnect();
    r = f();
  }
  return r;
}

// A new client for the same target (nullptr when the target is malformed).
std::unique_ptr<client::Client> Fresh(const std::string& target,
                                      std::chrono::milliseconds timeout) {
  auto c = client::Client::Connect(target);
  if (!c.ok()) return nullptr;
  std::unique_ptr<client::Client> out = std::move(c).value();
  out->set_timeout(timeout);
  return out;
}

// ---- The wrapped command ----

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;

void Forward(int sig, siginfo_t* info, void*) {
  pid_t child = g_child;
  if (child <= 0) return;
  // The terminal signals the whole foreground process group (SI_KERNEL): the
  // command got it too. Forward only what was sent to edgemon itself.
  if (info && info->si_code == SI_KERNEL) return;
  if (info && info->si_pid == child) return;
  kill(child, sig);
  g_forwarded = sig;
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void InstallForwarding() {
  struct sigaction sa {};
  sa.sa_sigaction = Forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwarded) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void RestoreSignals() {
  for (int sig : kForwarded) signal(sig, SIG_DFL);
}

// Where execve would find `name`: ENOENT (not found), EACCES (found, not
// executable), EISDIR, or 0 with *path set.
int Resolve(const std::string& name, std::string* path) {
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

int ReportExecError(const std::string& name, int err) {
  if (err == ENOENT) {
    std::fprintf(stderr, "edgemon record: %s: command not found\n", TerminalSafe(name).c_str());
    return kExitNotFound;
  }
  std::fprintf(stderr, "edgemon record: %s: cannot execute: %s\n", TerminalSafe(name).c_str(),
               err == EISDIR ? "is a directory" : std::strerror(err));
  return kExitNoExec;
}

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // read end of the command's stdout (--items-from only)
};

// Spawns the command with `env`; 0 or an errno.
int Spawn(const std::string& path, const std::vector<std::string>& argv,
          const std::vector<std::string>& env, bool capture, Child* child) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int fds[2] = {-1, -1};
  if (capture && pipe2(fds, O_CLOEXEC) != 0) return errno;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (capture) posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
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
  if (capture) close(fds[1]);
  if (rc != 0) {
    if (capture) close(fds[0]);
    return rc;
  }
  child->pid = pid;
  child->out_fd = capture ? fds[0] : -1;
  return 0;
}

void WriteAll(int fd, const char* data, size_t n, bool* broken) {
  while (n > 0 && !*broken) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *broken = true;  // our stdout is gone: keep draining the command's
      return;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

// What became of the processes the command started besides itself.
struct Descendants {
  bool waited = false;          // edgemon was their subreaper and waited for them
  int outlived = 0;             // reaped after the command itself exited
  int64_t command_exit_ns = 0;  // when the command itself exited (local clock)
};

// Makes edgemon the subreaper of everything the command starts: a process
// that daemonises (double fork) is reparented here, not to init, and can be
// waited for. False when the kernel refuses (then only the command is waited for).
bool BecomeSubreaper() {
  return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

// Reaps whatever of the command's tree has exited (the command itself into
// *status); true once none is left. Those reaped after the command count as
// having outlived it.
bool Reap(const Child& child, bool block, int* status, bool* command_done, Descendants* d) {
  for (;;) {
    int st = 0;
    pid_t w = waitpid(-1, &st, block ? 0 : WNOHANG);
    if (w == child.pid) {
      *status = st;
      *command_done = true;
      d->command_exit_ns = NowNs();
      g_child = 0;  // signals now have nobody to be forwarded to
      continue;
    }
    if (w > 0) {
      if (*command_done) ++d->outlived;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    return w < 0;  // ECHILD: nothing left; 0: some still run
  }
}

// Passes the command's output through until it exits (and, with `d->waited`,
// until every process it started has exited); returns the command's wait
// status. *exit_ns is when the last of them exited.
int WaitChild(const Child& child, record::ItemCounter* items, int64_t* exit_ns, Descendants* d) {
  int status = 0;
  bool command_done = false;
  if (child.out_fd < 0) {
    if (d->waited) {
      Reap(child, true, &status, &command_done, d);
      *exit_ns = d->outlived > 0 ? NowNs() : d->command_exit_ns;
      return status;
    }
    while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
    *exit_ns = d->command_exit_ns = NowNs();
    return status;
  }
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child.pid, 0));
  bool open = true, broken = false;
  char buf[65536];
  for (;;) {
    pollfd p[2] = {{child.out_fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int n = open ? 1 : 0;
    pollfd* set = open ? p : p + 1;
    if (pidfd >= 0) ++n;
    int r = poll(set, static_cast<nfds_t>(n), pidfd >= 0 ? -1 : 10);
    if (r < 0 && errno != EINTR) break;
    if (open && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t got = read(child.out_fd, buf, sizeof buf);
      if (got > 0) {
        WriteAll(STDOUT_FILENO, buf, static_cast<size_t>(got), &broken);
        items->Feed(std::string_view(buf, static_cast<size_t>(got)));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        open = false;
      }
    }
    if (!d->waited) {
      pid_t w = waitpid(child.pid, &status, WNOHANG);
      if (w == child.pid) {
        d->command_exit_ns = NowNs();
        break;
      }
      if (w < 0 && errno != EINTR) break;
      continue;
    }
    if (Reap(child, false, &status, &command_done, d)) break;
    if (command_done && pidfd >= 0) {
      close(pidfd);
      pidfd = -1;  // from here on: poll the pipe, reap every 10 ms
    }
  }
  *exit_ns = d->waited && d->outlived > 0 ? NowNs() : d->command_exit_ns;
  if (pidfd >= 0) close(pidfd);
  // What the command wrote before it exited; a background process that keeps
  // the pipe open is not waited for.
  fcntl(child.out_fd, F_SETFL, fcntl(child.out_fd, F_GETFL) | O_NONBLOCK);
  for (;;) {
    ssize_t got = read(child.out_fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    WriteAll(STDOUT_FILENO, buf, static_cast<size_t>(got), &broken);
    items->Feed(std::string_view(buf, static_cast<size_t>(got)));
  }
  close(child.out_fd);
  items->Finish();
  return status;
}

// ---- Talking to the daemon ----

// Rail sampling boost and daemon reachability while the command runs. The
// boost is this run's own lease (`lease_id`), renewed by its id and ended
// at Stop, so it neither shortens nor outlives other clients' leases.
class Monitor {
 public:
  Monitor(const std::string& target, std::chrono::milliseconds timeout, uint32_t rate_hz,
          uint64_t lease_id, std::string probe_key, int64_t window_id, int64_t window_start_ns)
      : target_(target),
        timeout_(timeout),
        client_(Fresh(target, timeout)),
        rate_hz_(rate_hz),
        lease_id_(lease_id),
        probe_key_(std::move(probe_key)),
        window_id_(window_id),
        window_start_ns_(window_start_ns) {
    thread_ = std::jthread([this](std::stop_token st) { Run(st); });
  }
  ~Monitor() { Stop(); }
  void Stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
      // End the lease now (a renewal 1 ms long) rather than at its expiry.
      if (rate_hz_ > 0 && lease_id_ != 0 && client_) (void)client_->Boost(rate_hz_, 1, lease_id_);
    }
  }
  uint32_t effective_rate() const { return effective_.load(); }
  std::vector<std::string> notes() {
    std::lock_guard lk(mu_);
    std::vector<std::string> out = notes_;
    if (down_since_)
      out.push_back("the daemon was unreachable from " + Clock(*down_since_) + " on");
    return out;
  }
  // A boost renewal was refused (not for unreachability).
  bool renew_failed() const { return renew_failed_.load(); }

 private:
  static std::string Clock(int64_t ns) {
    std::time_t s = static_cast<std::time_t>(ns / 1'000'000'000);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d UTC", tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ns % 1'000'000'000 / 1'000'000));
    return buf;
  }
  // Renews the window's lease and those of its open marks.
  void RenewWindows() {
    (void)client_->RenewWindow(window_id_);
    auto ws = client_->ListWindows(window_start_ns_, 0);
    if (!ws.ok()) return;
    for (const auto& w : *ws) {
      if (!w.end_ns && w.id != window_id_ && record::MarkName(w.label, window_id_)) {
        (void)client_->RenewWindow(w.id);
      }
    }
  }
  void Run(std::stop_token st) {
    auto next_boost = std::chrono::steady_clock::now();
    auto next_renewal = std::chrono::steady_clock::now();
    while (!st.stop_requested() && client_) {
      if (std::chrono::steady_clock::now() >= next_renewal) {
        RenewWindows();
        next_renewal =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(kWindowLeaseMs / 4);
      }
      bool ok = true;
      if (rate_hz_ > 0 && std::chrono::steady_clock::now() >= next_boost) {
        auto b = client_->Boost(rate_hz_, kBoostLeaseMs, lease_id_);
        if (b.ok()) {
          effective_ = b->rate_hz;
          lease_id_ = b->lease_id;  // a new one if the daemon lost ours
          next_boost =
              std::chrono::steady_clock::now() + std::chrono::milliseconds(kBoostLeaseMs / 3);
        } else {
          ok = b.status().code() != StatusCode::kUnavailable &&
               b.status().code() != StatusCode::kDeadlineExceeded;
          if (ok) renew_failed_ = true;
        }
      } else {
        auto l = client_->Latest({probe_key_});
        ok = l.ok() || (l.status().code() != StatusCode::kUnavailable &&
                        l.status().code() != StatusCode::kDeadlineExceeded);
      }
      {
        std::lock_guard lk(mu_);
        if (!ok && !down_since_) down_since_ = NowNs();
        if (!ok) {
          if (auto fresh = Fresh(target_, timeout_)) client_ = std::move(fresh);
        }
        if (ok && down_since_) {
          notes_.push_back("the daemon was unreachable from " + Clock(*down_since_) + " to " +
                           Clock(NowNs()) +
                           " during the run (restarted?): the energy of that gap was not "
                           "measured; the summary covers the data it stored");
          down_since_.reset();
          next_boost = std::chrono::steady_clock::now();  // a restarted daemon lost the lease
        }
      }
      // Wakes at once when stopped: the command's end is not held up.
      std::unique_lock lk(sleep_mu_);
      sleep_cv_.wait_for(lk, st, std::chrono::milliseconds(500), [] { return false; });
    }
  }

  const std::string target_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<client::Client> client_;
  const uint32_t rate_hz_;
  uint64_t lease_id_;  // Run's thread, then Stop's after the join
  const std::string probe_key_;
  const int64_t window_id_;
  const int64_t window_start_ns_;
  std::atomic<uint32_t> effective_{0};
  std::atomic<bool> renew_failed_{false};
  std::mutex mu_;
  std::vector<std::string> notes_;     // guarded by mu_
  std::optional<int64_t> down_since_;  // guarded by mu_
  std::mutex sleep_mu_;
  std::condition_variable_any sleep_cv_;
  std::jthread thread_;
};

// The marks of window `parent` (sub-windows labelled "<parent>:<name>").
void AddPhases(client::Client& c, Report& report, std::chrono::steady_clock::time_point deadline) {
  if (!report.window_id) return;
  auto ws = Retry([&] { return c.ListWindows(report.run_start_ns, report.run_end_ns + 1); },
                  deadline, nullptr);
  if (!ws.ok()) {
    report.notes.push_back("marks not listed: " + ws.status().ToString());
    return;
  }
  for (const auto& w : *ws) {
    auto name = record::MarkName(w.label, report.window_id);
    if (!name || w.id == report.window_id) continue;
    record::Phase p{w.id, *name, w.start_ns, w.end_ns, std::nullopt};
    auto s = w.end_ns ? c.SummarizeWindow(w.id)
                      : c.Summarize(w.start_ns, std::max(report.run_end_ns, w.start_ns + 1));
    if (s.ok()) {
      p.summary = *s;
    } else {
      report.notes.push_back("mark " + *name + ": " + s.status().ToString());
    }
    if (!w.end_ns)
      report.notes.push_back("mark " + *name + " was never ended: counted to the run's end");
    report.phases.push_back(std::move(p));
  }
}

// Appends the raw frames of [from, to] to *out, in chunks; on a failed
// query the frames read before it stay in *out.
Status Frames(client::Client& c, int64_t from, int64_t to, std::vector<Frame>* out) {
  int64_t at = from;
  for (int chunk = 0; chunk < 100 && at <= to; ++chunk) {
    auto q = c.Query(at, to + 1, {}, 0, 100'000);
    if (!q.ok()) return q.status();
    for (auto& f : q->frames) out->push_back(std::move(f));
    if (!q->truncated || q->frames.empty()) break;
    at = out->back().realtime_ns + 1;
  }
  return Status::Ok();
}

Status WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Status::Unavailable("cannot write " + p.string() + ": " + std::strerror(errno));
  return Status::Ok();
}

bool MakeOutDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    std::fprintf(stderr, "edgemon: cannot create the output directory %s: %s\n",
                 TerminalSafe(dir).c_str(), ec ? ec.message().c_str() : "not a directory");
    return false;
  }
  return true;
}

// Writes summary.json, samples.csv and trace.json; false (message printed) on failure.
bool WriteBundle(client::Client& c, const std::string& dir, const Report& report,
                 const Inventory& inventory) {
  std::vector<Frame> frames;
  Status read = Frames(c, report.summary.from_ns, report.summary.to_ns, &frames);
  Report r = report;
  if (!read.ok()) r.notes.push_back("samples not read: " + read.ToString());
  namespace fs = std::filesystem;
  Status written = WriteFile(fs::path(dir) / "summary.json",
                             JsonText(record::SummaryJson(r, inventory), 2) + "\n");
  if (written.ok()) {
    written = WriteFile(fs::path(dir) / "samples.csv", record::SamplesCsv(frames, inventory));
  }
  if (written.ok()) {
    written = WriteFile(fs::path(dir) / "trace.json", record::TraceJson(r, frames, inventory));
  }
  if (!written.ok()) {
    std::fprintf(stderr, "edgemon: bundle: %s\n", TerminalSafe(written.message()).c_str());
  }
  return written.ok();
}

void FillDevice(Report& report, const client::DeviceInfo& info, const std::string& target) {
  report.target = target;
  report.board_model = info.inventory.board.model;
  report.daemon_version = info.daemon_version;
  report.interval_ms = info.interval_ms;
  report.energy_rate_hz = info.energy_rate_hz;
}

std::string ProbeKey(const Inventory& inv) {
  for (const auto& c : inv.channels) {
    if (!c.name.empty()) return c.Key();
  }
  return "";
}

// ---- Subcommands ----

struct RecordOptions {
  std::string label;
  uint32_t rate_hz = 0;
  std::string pre = "0";
  std::string post = "0";
  std::string out;
  double items = 0;
  std::string items_from;
  bool no_wait_descendants = false;
  bool lock_clocks = false;  // --lock-clocks
  std::optional<int> mode;   // --mode N
  std::string control;       // --control ADDR
  std::vector<std::string> command;
};

// The leases --mode and --lock-clocks hold for the run (ended, restoring the
// board, when they go out of scope or this process dies).
struct RunControl {
  std::unique_ptr<client::ControlClient> client;
  std::unique_ptr<client::HeldLease> mode, clocks;
};

// Takes the leases before the command starts; false (message printed, *rc set)
// when the helper refused.
bool TakeControl(const RecordOptions& o, Report& report, RunControl* rc_out, int* rc) {
  if (!o.lock_clocks && !o.mode) return true;
  auto c = client::ControlClient::Connect(client::ControlTarget(o.control));
  if (!c.ok()) {
    *rc = ReportStatus("record: control", c.status());
    return false;
  }
  rc_out->client = std::move(*c);
  edgemon::v1::LeaseOptions held;
  if (o.mode) {
    auto m = rc_out->client->SetMode(*o.mode, held);
    if (!m.ok()) {
      *rc = ReportStatus("record: --mode " + std::to_string(*o.mode) + "; not starting the command",
                         m.status());
      return false;
    }
    rc_out->mode = std::move(*m);
  }
  if (o.lock_clocks) {
    auto l = rc_out->client->LockClocks(held);
    if (!l.ok()) {
      *rc = ReportStatus("record: --lock-clocks; not starting the command", l.status());
      return false;
    }
    rc_out->clocks = std::move(*l);
  }
  if (auto st = rc_out->client->GetState(); st.ok()) {
    if (st->has_mode_id()) {
      report.power_mode_id = st->mode_id();
      report.power_mode_name = st->mode_name();
    }
    report.clocks_locked = st->clocks_locked();
  }
  return true;
}

// Ends the leases (clocks first, then the mode under them) and notes any
// restore that did not go cleanly or a lease that ended during the run.
void EndControl(RunControl& control, Report& report) {
  for (auto* lease : {&control.clocks, &control.mode}) {
    if (!*lease) continue;
    const bool early = (*lease)->ended();
    std::string how = (*lease)->End();
    if (early || how.find("; restored") == std::string::npos) {
      report.notes.push_back((early ? "during the run: " : "") + how);
    }
    lease->reset();
  }
}

int RunRecord(const Globals& globals, const RecordOptions& o) {
  auto pre = ParseDurationNs(o.pre);
  auto post = ParseDurationNs(o.post);
  if (!pre.ok() || !post.ok()) {
    std::fprintf(stderr, "edgemon record: %s: %s\n", pre.ok() ? "--post" : "--pre",
                 TerminalSafe((pre.ok() ? post : pre).status().message()).c_str());
    return kExitDataErr;
  }
  std::optional<std::regex> re;
  if (!o.items_from.empty()) {
    auto compiled = record::CompileItemsRegex(o.items_from);
    if (!compiled.ok()) {
      std::fprintf(stderr, "edgemon record: --items-from: bad regular expression: %s\n",
                   TerminalSafe(compiled.status().message()).c_str());
      return kExitDataErr;
    }
    re = std::move(compiled).value();
  }
  std::string path;
  if (int e = Resolve(o.command[0], &path); e != 0) return ReportExecError(o.command[0], e);
  auto c = ConnectOrReport(globals);
  if (!c) return kExitUsage;
  auto info = c->DeviceInfo();
  if (!info.ok()) {
    return ReportFirstCall("edgemon record", c->target(), info.status(),
                           "; not starting the command");
  }
  if (!o.out.empty() && !MakeOutDir(o.out)) return kExitCantCreate;
  Report report;
  FillDevice(report, *info, c->target());
  report.command = o.command;
  report.pre_s = static_cast<double>(*pre) / 1e9;
  report.post_s = static_cast<double>(*post) / 1e9;
  report.label =
      o.label.empty() ? std::filesystem::path(o.command[0]).filename().string() : o.label;
  if (o.items > 0) {
    report.items = o.items;
    report.items_source = "--items";
  }
  if (info->inventory.board.nvpmodel_id >= 0) {
    report.power_mode_id = info->inventory.board.nvpmodel_id;
    report.power_mode_name = info->inventory.board.nvpmodel;
  }
  RunControl control;
  if (int control_rc = 0; !TakeControl(o, report, &control, &control_rc)) return control_rc;

  std::optional<Monitor> monitor;
  uint64_t lease_id = 0;
  if (o.rate_hz > 0) {
    auto b = c->Boost(o.rate_hz, kBoostLeaseMs);
    if (!b.ok()) return ReportStatus("record: boost", b.status());
    report.boost_rate_hz = b->rate_hz;
    lease_id = b->lease_id;
  }
  int64_t before = NowNs();
  auto window = c->BeginWindow(report.label, kWindowLeaseMs);
  int64_t after = NowNs();
  if (!window.ok()) return ReportStatus("record: begin window", window.status());
  report.window_id = window->id;
  report.run_start_ns = window->start_ns;
  const int64_t offset = window->start_ns - (before + after) / 2;  // daemon - local clock

  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view v(*e);
    if (v.starts_with("EDGEMON_WINDOW=") || v.starts_with("EDGEMON_WINDOW_START=") ||
        v.starts_with("EDGEMON_CONNECT=")) {
      continue;
    }
    env.emplace_back(v);
  }
  env.push_back("EDGEMON_WINDOW=" + std::to_string(window->id));
  env.push_back("EDGEMON_WINDOW_START=" + std::to_string(window->start_ns));
  env.push_back("EDGEMON_CONNECT=" + c->target());

  InstallForwarding();
  Descendants descendants;
  descendants.waited = !o.no_wait_descendants && BecomeSubreaper();
  Child child;
  int spawn_err = Spawn(path, o.command, env, re.has_value(), &child);
  if (spawn_err != 0) {
    RestoreSignals();
    (void)c->EndWindow(window->id);
    return ReportExecError(o.command[0], spawn_err);
  }
  g_child = child.pid;
  monitor.emplace(c->target(), globals.timeout, o.rate_hz, lease_id, ProbeKey(info->inventory),
                  window->id, window->start_ns);

  record::ItemCounter counter(re ? *re : std::regex());
  int64_t exit_local = 0;
  int status = WaitChild(child, &counter, &exit_local, &descendants);
  g_child = 0;
  EndControl(control, report);
  if (descendants.outlived > 0) {
    report.notes.push_back(
        std::to_string(descendants.outlived) + " process" +
        (descendants.outlived == 1 ? "" : "es") + " started by the command outlived it by " +
        record::Fixed(static_cast<double>(exit_local - descendants.command_exit_ns) / 1e9, 3) +
        " s: measured until the last exited (--no-wait-descendants stops at the command's exit)");
  }
  if (int sig = g_forwarded; sig != 0) {
    report.notes.push_back("edgemon forwarded signal " + std::to_string(sig) + " (" +
                           strsignal(sig) + ") to the command");
  }

  // End the window right away; a daemon that went away is waited for.
  auto deadline = std::chrono::steady_clock::now() + kDaemonWait;
  const std::string target = c->target();
  const std::function<void()> reconnect = [&] {
    if (auto fresh = Fresh(target, globals.timeout)) c = std::move(fresh);
  };
  bool waited = false;
  auto ended = Retry([&] { return c->EndWindow(window->id); }, deadline, reconnect, &waited);
  RestoreSignals();
  if (WIFSIGNALED(status)) {
    report.signal = WTERMSIG(status);
  } else {
    report.exit_code = WEXITSTATUS(status);
  }
  const int rc = report.signal ? 128 + *report.signal : *report.exit_code;
  if (re) {
    report.items = counter.value();
    report.items_source = "--items-from '" + o.items_from + "', last of " +
                          std::to_string(counter.matches()) + " matching line" +
                          (counter.matches() == 1 ? "" : "s");
    if (!report.items) report.items = 0.0;
  }
  // The window's end is exact unless the daemon was away when the command
  // exited: then the range ends at the exit as this host saw it.
  const bool exact_end = ended.ok() && !waited && ended->end_ns;
  if (exact_end) {
    report.run_end_ns = *ended->end_ns;
  } else {
    report.run_end_ns = std::max(exit_local + offset, report.run_start_ns + 1);
    report.notes.push_back(
        ended.ok()
            ? "the daemon was unreachable when the command exited: window " +
                  std::to_string(window->id) + " ended " +
                  record::Fixed(static_cast<double>(ended->end_ns.value_or(report.run_end_ns) -
                                                    report.run_end_ns) /
                                    1e9,
                                3) +
                  " s late; this summary ends at the command's exit as seen here"
            : "the window could not be ended (" + ended.status().ToString() +
                  "): summarized by time range up to the command's exit as seen here");
  }
  // Post: keep measuring (and boosting) after the command, for --post from
  // its exit on this host's clock (never through the daemon's time, which a
  // wall-clock step between begin and end may have moved).
  const int64_t to = report.run_end_ns + *post;
  SleepNs(exit_local + *post - NowNs());
  monitor->Stop();
  for (auto& n : monitor->notes()) report.notes.push_back(n);
  if (monitor->effective_rate()) report.boost_rate_hz = monitor->effective_rate();
  if (monitor->renew_failed()) report.notes.push_back("renewing the rate boost failed");

  const int64_t from = report.run_start_ns - *pre;
  deadline = std::chrono::steady_clock::now() + kDaemonWait;
  auto again = Retry([&] { return c->DeviceInfo(); }, deadline, reconnect);
  if (!again.ok()) {
    std::fprintf(stderr,
                 "edgemon record: the daemon at %s is unreachable (%s): no summary. The command "
                 "ran from %s to %s (daemon time, ns); once the daemon is back, run: edgemon "
                 "attach --from @%.9f --to @%.9f\n",
                 TerminalSafe(c->target()).c_str(), TerminalSafe(again.status().ToString()).c_str(),
                 std::to_string(from).c_str(), std::to_string(to).c_str(),
                 static_cast<double>(from) / 1e9, static_cast<double>(to) / 1e9);
    return rc;
  }
  FillDevice(report, *again, c->target());
  if (report.boost_rate_hz && report.boost_rate_hz <= report.energy_rate_hz) {
    report.boost_rate_hz = 0;  // the boost did not raise the rate
  }
  // No waiting for a frame after the end: the daemon answers the part of the
  // range past its newest stored frame from its live energy counters.
  auto summary = Retry(
      [&] {
        return exact_end && *pre == 0 && *post == 0 ? c->SummarizeWindow(window->id)
                                                    : c->Summarize(from, std::max(to, from + 1));
      },
      deadline, reconnect);
  if (!summary.ok()) {
    std::fprintf(stderr, "edgemon record: summarize: %s\n",
                 TerminalSafe(summary.status().ToString()).c_str());
    return rc;
  }
  report.summary = *summary;
  if (const auto& held = report.summary.min_rail_rate_hz;
      o.rate_hz > 0 && held && *held + 0.5 < o.rate_hz) {
    report.notes.push_back(
        "--rate " + std::to_string(o.rate_hz) +
        " Hz was asked for; the rail rate that held over the range went down "
        "to " +
        record::RateHz(*held) +
        (*pre > 0 ? " (the boost starts with the command, not with --pre)" : ""));
  }
  AddPhases(*c, report, deadline);
  std::string text = record::RenderSummary(report, again->inventory);
  std::fflush(stdout);
  std::fputs(TerminalSafe(text).c_str(), stderr);
  if (!o.out.empty()) {
    if (!WriteBundle(*c, o.out, report, again->inventory)) return rc == 0 ? kExitCantCreate : rc;
    std::fprintf(stderr,
                 "Bundle: %s/{summary.json,samples.csv,trace.json} (open trace.json in "
                 "ui.perfetto.dev)\n",
                 TerminalSafe(o.out).c_str());
  }
  return rc;
}

struct AttachOptions {
  std::string from, to, last, out, label;
  int64_t window = 0;
  double items = 0;
  bool json = false;
};

int RunAttach(const Globals& globals, const AttachOptions& o) {
  int ranges = (o.window ? 1 : 0) + (!o.last.empty() ? 1 : 0) + (!o.from.empty() ? 1 : 0);
  if (ranges != 1 || (!o.to.empty() && o.from.empty())) {
    std::fprintf(stderr,
                 "edgemon attach: give one of --from T [--to T], --window ID or --last DURATION\n");
    return kExitUsage;
  }
  Report report;
  report.mode = "attach";
  int64_t from = 0, to = 0;
  // The range from `now`: checked on this host's clock first, then taken
  // again on the daemon's (DeviceInfo.now_ns, the frames' timeline), so a
  // relative range is right whatever either wall clock did.
  auto range_at = [&](const int64_t now) -> int {
    if (!o.last.empty()) {
      auto d = PositiveDurationNs(o.last, "duration");
      if (!d.ok()) {
        std::fprintf(stderr, "edgemon attach: --last: %s\n",
                     TerminalSafe(d.status().message()).c_str());
        return kExitDataErr;
      }
      from = now - *d;
      to = now;
    } else if (!o.from.empty()) {
      auto f = ParseTimeNs(o.from, now);
      Result<int64_t> t = o.to.empty() ? Result<int64_t>(now) : ParseTimeNs(o.to, now);
      if (!f.ok() || !t.ok()) {
        std::fprintf(stderr, "edgemon attach: %s: %s\n", !f.ok() ? "--from" : "--to",
                     TerminalSafe((!f.ok() ? f : t).status().message()).c_str());
        return kExitDataErr;
      }
      if (*f >= *t) {
        std::fprintf(stderr, "edgemon attach: --from must be before --to\n");
        return kExitDataErr;
      }
      from = *f;
      to = *t;
    }
    return kExitOk;
  };
  if (int bad = range_at(NowNs()); bad != kExitOk) return bad;
  if (!o.out.empty() && !MakeOutDir(o.out)) return kExitCantCreate;
  auto c = ConnectOrReport(globals);
  if (!c) return kExitUsage;
  auto info = c->DeviceInfo();
  if (!info.ok()) {
    return ReportFirstCall("edgemon attach", c->target(), info.status());
  }
  FillDevice(report, *info, c->target());
  if (info->now_ns) {
    if (int bad = range_at(*info->now_ns); bad != kExitOk) return bad;
  }
  Result<client::Summary> summary = Status::Unavailable("");
  if (o.window) {
    summary = c->SummarizeWindow(o.window);
    if (!summary.ok())
      return ReportStatus("attach: window " + std::to_string(o.window), summary.status());
    report.window_id = o.window;
    auto ws = c->ListWindows(summary->from_ns, summary->to_ns + 1);
    if (ws.ok()) {
      for (const auto& w : *ws) {
        if (w.id == o.window) {
          report.label = w.label;
          if (!w.end_ns) report.notes.push_back("the window is still open: summarized up to now");
        }
      }
    }
  } else {
    summary = c->Summarize(from, to);
    if (!summary.ok()) return ReportStatus("attach: summarize", summary.status());
  }
  if (!o.label.empty()) report.label = o.label;
  report.summary = *summary;
  report.run_start_ns = summary->from_ns;
  report.run_end_ns = summary->to_ns;
  if (o.items > 0) {
    report.items = o.items;
    report.items_source = "--items";
  }
  AddPhases(*c, report, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  if (o.json) {
    std::printf("%s\n", JsonText(record::SummaryJson(report, info->inventory), 2).c_str());
  } else {
    std::fputs(TerminalSafe(record::RenderSummary(report, info->inventory)).c_str(), stdout);
  }
  if (!o.out.empty() && !WriteBundle(*c, o.out, report, info->inventory)) return kExitCantCreate;
  return kExitOk;
}

int RunMark(const Globals& globals, const std::string& action, const std::string& name) {
  if (name.empty() || name.size() > 200) {
    std::fprintf(stderr, "edgemon mark: NAME must be 1 to 200 bytes\n");
    return kExitUsage;
  }
  int64_t parent = 0, parent_start = 0;
  if (const char* w = std::getenv("EDGEMON_WINDOW"); w && *w) {
    char* end = nullptr;
    long long v = std::strtoll(w, &end, 10);
    if (!end || *end != '\0' || v <= 0) {
      std::fprintf(stderr, "edgemon mark: EDGEMON_WINDOW='%s' is not a window id\n",
                   TerminalSafe(w).c_str());
      return kExitUsage;
    }
    parent = v;
  }
  if (const char* s = std::getenv("EDGEMON_WINDOW_START"); s && *s) {
    parent_start = std::strtoll(s, nullptr, 10);
  }
  const std::string label = parent ? record::MarkLabel(parent, name) : name;
  auto c = ConnectOrReport(globals);
  if (!c) return kExitUsage;
  if (action == "begin") {
    // Inside a record, the recorder renews the mark's lease while it runs.
    auto w = parent ? c->BeginWindow(label, kWindowLeaseMs) : c->BeginWindow(label);
    if (!w.ok()) return ReportStatus("mark begin " + name, w.status());
    return kExitOk;
  }
  auto ws = c->ListWindows(parent_start, 0);
  if (!ws.ok()) return ReportStatus("mark end " + name, ws.status());
  const client::Window* open = nullptr;
  for (const auto& w : *ws) {
    if (w.label == label && !w.end_ns && (!open || w.start_ns >= open->start_ns)) open = &w;
  }
  if (!open) {
    std::fprintf(stderr, "edgemon mark end: no open mark '%s'%s\n", TerminalSafe(name).c_str(),
                 parent ? (" in window " + std::to_string(parent)).c_str() : "");
    return kExitFailure;
  }
  auto e = c->EndWindow(open->id);
  if (!e.ok()) return ReportStatus("mark end " + name, e.status());
  return kExitOk;
}

}  // namespace

void AddRecordCommands(CLI::App& app, Registry& registry) {
  auto ro = std::make_shared<RecordOptions>();
  auto* rec = app.add_subcommand(
      "record", "Run a command and measure it: energy per rail, power, temperatures, clocks");
  rec->add_option("--label", ro->label, "Window label (default: the command's name)");
  rec->add_option("--rate", ro->rate_hz, "Raise the rail sampling rate to HZ while it runs")
      ->check(CLI::Range(1, 1000));
  rec->add_option("--pre", ro->pre, "Also measure this long before the command (e.g. 2s)");
  rec->add_option("--post", ro->post, "Keep measuring this long after it exits (e.g. 2s)");
  rec->add_option("--out", ro->out, "Write summary.json, samples.csv and trace.json here");
  auto* items = rec->add_option("--items", ro->items, "Items processed: adds energy per item")
                    ->check(CLI::PositiveNumber);
  rec->add_option("--items-from", ro->items_from,
                  "Regex over the command's output; the last match's first group is the item "
                  "count")
      ->excludes(items);
  rec->add_flag("--no-wait-descendants", ro->no_wait_descendants,
                "Stop at the command's own exit; by default edgemon waits for every process "
                "the command started (daemons included) and measures until the last exits");
  rec->add_flag("--lock-clocks", ro->lock_clocks,
                "Lock the clocks at their maximum for the run (through edgemon-control); "
                "restored when the command ends, fails or is interrupted");
  rec->add_option("--mode", ro->mode,
                  "Run in power mode N (through edgemon-control); restored after");
  rec->add_option("--control", ro->control,
                  "The control helper for --lock-clocks/--mode (default: $EDGEMON_CONTROL, else " +
                      std::string(client::kDefaultControlTarget) + ")");
  rec->add_option("command", ro->command, "The command and its arguments (after --)")->required();
  rec->footer(
      "Run it as: edgemon record [OPTIONS] -- CMD [ARGS...]\n"
      "The summary goes to stderr; the command's output passes through unchanged (through a\n"
      "pipe with --items-from). The command gets EDGEMON_WINDOW, EDGEMON_WINDOW_START and\n"
      "EDGEMON_CONNECT, so `edgemon mark begin NAME` / `edgemon mark end NAME` inside it\n"
      "measure phases. Exit status: the command's (128+N when signal N killed it), 127 when\n"
      "it is not found, 126 when it cannot run, 69 when the daemon cannot be reached (the\n"
      "command is then not started), 2 for bad flags.");
  rec->callback([&registry, ro] {
    registry.run = [&registry, ro] { return RunRecord(registry.globals, *ro); };
  });

  auto ao = std::make_shared<AttachOptions>();
  auto* att = app.add_subcommand("attach", "The same summary and bundle for a past time range");
  att->add_option("--from", ao->from, std::string("Start: ") + kTimeSyntax);
  att->add_option("--to", ao->to, "End (default: now)");
  att->add_option("--window", ao->window, "A window id (from edgemon record or mark)")
      ->check(CLI::PositiveNumber);
  att->add_option("--last", ao->last,
                  std::string("Up to now, the last DURATION: ") + kDurationSyntax);
  att->add_option("--out", ao->out, "Write summary.json, samples.csv and trace.json here");
  att->add_option("--label", ao->label, "Label shown in the summary");
  att->add_option("--items", ao->items, "Items processed: adds energy per item")
      ->check(CLI::PositiveNumber);
  att->add_flag("--json", ao->json, "Print summary.json instead of the table");
  att->callback([&registry, ao] {
    registry.run = [&registry, ao] { return RunAttach(registry.globals, *ao); };
  });

  auto mo = std::make_shared<std::pair<std::string, std::string>>();
  auto* mark = app.add_subcommand(
      "mark", "Begin or end a named phase inside `edgemon record` (EDGEMON_WINDOW) or alone");
  mark->add_option("action", mo->first, "begin or end")
      ->required()
      ->check(CLI::IsMember({"begin", "end"}));
  mark->add_option("name", mo->second, "Phase name")->required();
  mark->callback([&registry, mo] {
    registry.run = [&registry, mo] { return RunMark(registry.globals, mo->first, mo->second); };
  });
}

}  // namespace edgemon::cli
