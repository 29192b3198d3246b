// edgetop: a top-style terminal monitor of an edgemond, local or remote.
//
//   edgetop [--connect ADDR] [--interval MS] [--ascii] [--no-color]
//
// The watcher thread (client library) receives frames, re-fetches the
// DeviceInfo after a (re)connect or an inventory change, fetches the process
// list, and wakes the main thread through an eventfd. The main thread sleeps
// in poll() on stdin and that eventfd: it redraws only on new data, a key or
// a resize. Everything shown comes from the view model (view_model.h); only
// terminal.cc knows ncurses.
#include <langinfo.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <grpc/support/log.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "client/duration_flag.h"
#include "client/edgemon_client.h"
#include "client/first_contact.h"
#include "edgemon/paths.h"
#include "edgemon/secret_file.h"
#include "edgemon/text.h"
#include "tui/telemetry.h"
#include "tui/terminal.h"
#include "tui/view_model.h"

#ifndef EDGEMON_VERSION
#define EDGEMON_VERSION "unknown"
#endif

namespace {

using edgemon::client::ConnectionState;
using edgemon::client::kDefaultTarget;
namespace tui = edgemon::tui;

constexpr uint32_t kProcessLimit = 200;

int g_wake_fd = -1;                       // eventfd: new data or a signal
volatile std::sig_atomic_t g_signal = 0;  // SIGINT/SIGTERM/SIGHUP received

void Wake() {
  uint64_t one = 1;
  ssize_t ignored = ::write(g_wake_fd, &one, sizeof(one));
  (void)ignored;
}

void OnQuitSignal(int sig) {
  g_signal = sig;
  int saved = errno;
  Wake();
  errno = saved;
}

// What the watcher thread hands to the main thread.
struct Shared {
  std::mutex mu;
  tui::Telemetry telemetry;
  ConnectionState state = ConnectionState::kConnecting;
  std::string message;
  bool need_info = true;    // re-fetch DeviceInfo before the next frame
  bool data_dirty = false;  // a frame or a process list arrived
  bool state_dirty = false;
  std::atomic<bool> want_processes{true};
  std::atomic<int> sort{0};  // SortKey, for the daemon's ordering
};

std::string DaemonSort(tui::SortKey key) {
  switch (key) {
    case tui::SortKey::kMemory:
      return "mem";
    case tui::SortKey::kGpuMemory:
      return "gpu";
    case tui::SortKey::kPid:
      return "pid";
    default:
      return "cpu";
  }
}

class App {
 public:
  App(edgemon::client::Client& client, Shared& shared) : client_(client), shared_(shared) {}

  void StartWatch(uint32_t interval_ms) {
    if (watcher_) watcher_->Stop();
    edgemon::client::WatchOptions options;
    options.interval_ms = interval_ms;
    options.max_backoff = std::chrono::milliseconds(2000);
    watcher_ = client_.Watch(
        options, [this](const edgemon::client::LiveFrame& f) { OnFrame(f); },
        [this](ConnectionState s, const edgemon::Status& st) { OnState(s, st); });
  }

  void Stop() {
    if (watcher_) watcher_->Stop();
    watcher_.reset();
  }

 private:
  // Watcher thread.
  void OnFrame(const edgemon::client::LiveFrame& f) {
    bool need_info;
    {
      std::lock_guard<std::mutex> lock(shared_.mu);
      need_info = shared_.need_info || !shared_.telemetry.has_info() ||
                  shared_.telemetry.info().generation != f.generation;
    }
    if (need_info) {
      auto info = client_.DeviceInfo();
      if (!info.ok()) return;  // the next frame tries again
      std::lock_guard<std::mutex> lock(shared_.mu);
      shared_.telemetry.SetDeviceInfo(std::move(*info));
      shared_.need_info = false;
    }
    std::optional<edgemon::client::ProcessList> procs;
    std::string procs_error;
    if (shared_.want_processes.load()) {
      auto list = client_.ListProcesses(DaemonSort(static_cast<tui::SortKey>(shared_.sort.load())),
                                        kProcessLimit);
      if (list.ok()) {
        procs = std::move(*list);
      } else {
        procs_error = list.status().ToString();
      }
    }
    {
      std::lock_guard<std::mutex> lock(shared_.mu);
      shared_.telemetry.AddFrame(f.frame);
      if (procs) shared_.telemetry.SetProcesses(std::move(*procs));
      if (!procs_error.empty()) shared_.telemetry.SetProcessesError(std::move(procs_error));
      shared_.data_dirty = true;
    }
    Wake();
  }

  void OnState(ConnectionState s, const edgemon::Status& st) {
    {
      std::lock_guard<std::mutex> lock(shared_.mu);
      shared_.state = s;
      // What to do next where the failure says it (no daemon, the group, ...).
      std::string advice = st.ok() ? "" : edgemon::client::FirstContactAdvice(client_.target(), st);
      shared_.message = st.ok() ? "" : advice.empty() ? st.message() : advice;
      // A reconnect may reach a restarted daemon: channel ids may differ.
      if (s != ConnectionState::kConnected) shared_.need_info = true;
      shared_.state_dirty = true;
    }
    Wake();
  }

  edgemon::client::Client& client_;
  Shared& shared_;
  std::unique_ptr<edgemon::client::Watcher> watcher_;
};

bool LocaleIsUtf8() {
  const char* codeset = ::nl_langinfo(CODESET);
  return codeset != nullptr &&
         (std::strcmp(codeset, "UTF-8") == 0 || std::strcmp(codeset, "utf8") == 0);
}

#ifdef EDGEMON_STATIC
// The release bundle carries its own terminfo entries and C.UTF-8 locale in
// <bundle>/share, for machines that have neither: the host's terminfo comes
// first (the empty TERMINFO_DIRS entry), the bundle's after it; the bundled
// locale only when the host's cannot be loaded by this build's C library.
void UseBundledTerminalData() {
  std::error_code ec;
  const auto share = std::filesystem::read_symlink(edgemon::HostProcPath("self/exe"), ec)
                         .parent_path()
                         .parent_path() /
                     "share";
  if (ec) return;
  const char* dirs = std::getenv("TERMINFO_DIRS");
  const std::string terminfo =
      std::string(dirs != nullptr ? dirs : "") + ":" + (share / "terminfo").string();
  ::setenv("TERMINFO_DIRS", terminfo.c_str(), 1);
  if (LocaleIsUtf8() || std::getenv("LOCPATH") != nullptr) return;
  std::string wanted;  // the locale the environment asks for, as setlocale reads it
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      wanted = value;
      break;
    }
  }
  if (wanted.find("UTF-8") == std::string::npos && wanted.find("utf8") == std::string::npos) return;
  ::setenv("LOCPATH", (share / "locale").c_str(), 1);
  if (std::setlocale(LC_CTYPE, "C.UTF-8") == nullptr) ::unsetenv("LOCPATH");
}
#endif

}  // namespace

int main(int argc, char** argv) {
  // gRPC's own log lines would land on the screen; the reason a call failed
  // is shown under the header instead.
  gpr_set_log_function([](gpr_log_func_args*) {});
  std::setlocale(LC_ALL, "");
#ifdef EDGEMON_STATIC
  UseBundledTerminalData();
#endif
  const char* env = std::getenv("EDGEMON_CONNECT");
  std::string target = (env != nullptr && *env != '\0') ? env : kDefaultTarget;
  uint32_t interval_ms = 1000;
  bool ascii = false;
  bool no_color = false;

  CLI::App app{"edgetop: a top-style monitor of edgemond (q quits, h shows the keys)"};
  app.set_version_flag("--version", std::string("edgetop ") + EDGEMON_VERSION);
  app.add_option("--connect", target,
                 "Daemon address: unix:/path, /path or host:port (default: $EDGEMON_CONNECT, "
                 "else " +
                     std::string(kDefaultTarget) + ")");
  edgemon::client::AddIntervalOption(
      app, interval_ms,
      "Refresh interval: 2s, 500ms, or a bare number of seconds as in top -d (100ms to 60s)",
      {.min_ms = 100,
       .max_ms = 60'000,
       .bare_unit_ns = edgemon::kNsPerSecond,
       .zero = "",
       .floor_of = "edgetop's smallest refresh"},
      "-d,--delay,--interval");
  app.add_flag("--ascii", ascii, "ASCII bars and lines (default when the locale is not UTF-8)");
  app.add_flag("--no-color", no_color, "Monochrome (also when $NO_COLOR is set)");
  edgemon::client::ConnectOptions connect_options;
  std::string token_file;
  if (const char* t = std::getenv("EDGEMON_TOKEN_FILE")) token_file = t;
  app.add_flag("--tls", connect_options.tls, "Use TLS to a host:port daemon (system roots)");
  app.add_option("--tls-ca", connect_options.tls_ca_file, "Use TLS, trusting this PEM file's CAs");
  app.add_option("--tls-server-name", connect_options.tls_server_name,
                 "Name to check in the daemon's certificate");
  app.add_option("--token-file", token_file,
                 "File holding the daemon's bearer token (default: $EDGEMON_TOKEN_FILE)");
  CLI11_PARSE(app, argc, argv);

  const char* no_color_env = std::getenv("NO_COLOR");
  if (no_color_env != nullptr && *no_color_env != '\0') no_color = true;

  if (!token_file.empty()) {
    auto token = edgemon::ReadTokenFile(token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "edgetop: %s\n",
                   edgemon::TerminalSafe(token.status().message()).c_str());
      return 2;
    }
    connect_options.bearer_token = *token;
  }
  auto client = edgemon::client::Client::Connect(target, connect_options);
  if (!client.ok()) {
    std::fprintf(stderr, "edgetop: --connect %s: %s\n", edgemon::TerminalSafe(target).c_str(),
                 edgemon::TerminalSafe(client.status().message()).c_str());
    return 2;
  }
  (*client)->set_timeout(std::chrono::milliseconds(3000));

  g_wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (g_wake_fd < 0) {
    std::fprintf(stderr, "edgetop: eventfd: %s\n", std::strerror(errno));
    return 1;
  }
  // Before the terminal opens, so that ncurses keeps its hands off them.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction sa {};
    sa.sa_handler = OnQuitSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }

  auto opened = tui::Terminal::Open({.color = !no_color});
  if (!opened.ok()) {
    std::fprintf(stderr, "edgetop: %s\n", opened.status().message().c_str());
    return 1;
  }
  std::unique_ptr<tui::Terminal> term = std::move(opened).value();

  tui::UiState ui;
  ui.target = (*client)->target();
  ui.interval_ms = interval_ms;
  ui.color = term->color();
  ui.utf8 = !ascii && LocaleIsUtf8();
  ui.width = term->width();
  ui.height = term->height();

  Shared shared;
  App watch(**client, shared);
  watch.StartWatch(ui.interval_ms);

  tui::Telemetry shown;
  bool redraw = true;
  while (g_signal == 0) {
    if (redraw) {
      shared.want_processes = ui.page != tui::Page::kPower;
      shared.sort = static_cast<int>(ui.sort);
      term->Draw(tui::BuildScreen(shown, ui));
      redraw = false;
    }
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_wake_fd, POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno != EINTR) break;
    if (g_signal != 0) break;
    if (fds[1].revents & POLLIN) {
      uint64_t count;
      ssize_t ignored = ::read(g_wake_fd, &count, sizeof(count));
      (void)ignored;
      std::lock_guard<std::mutex> lock(shared.mu);
      if (shared.state_dirty) {
        ui.connection = shared.state;
        ui.connection_message = shared.message;
        shared.state_dirty = false;
        redraw = true;
      }
      if (shared.data_dirty && !ui.paused) {
        shown = shared.telemetry;
        shared.data_dirty = false;
        redraw = true;
      }
    }
    // Keys, and the resize that ncurses reports as a key after SIGWINCH
    // (which also interrupts poll with EINTR).
    bool resized = false;
    bool quit = false;
    for (int key : term->ReadKeys(&resized)) {
      tui::Command cmd = tui::HandleKey(key, ui);
      if (cmd == tui::Command::kQuit) quit = true;
      if (cmd == tui::Command::kIntervalChanged) watch.StartWatch(ui.interval_ms);
      if (cmd != tui::Command::kNone) redraw = true;
      if (!ui.paused && (cmd == tui::Command::kRedraw || cmd == tui::Command::kSortChanged)) {
        std::lock_guard<std::mutex> lock(shared.mu);
        if (shared.data_dirty) {
          shown = shared.telemetry;
          shared.data_dirty = false;
        }
      }
    }
    if (quit) break;
    if (resized) {
      ui.width = term->width();
      ui.height = term->height();
      redraw = true;
    }
  }
  watch.Stop();
  term.reset();  // endwin: the terminal is back before we exit
  ::close(g_wake_fd);
  if (g_signal != 0) return 128 + g_signal;
  return 0;
}
