// edgemon-control: the privileged helper that makes the writes edgemond never
// makes (power mode, locked clocks, fan), each as a lease that is undone when
// its holder goes away. Off unless [control] enable = true in the config.
//
//   edgemon-control --config /etc/edgemon/edgemond.toml
//   edgemon-control --config c.toml --root /tmp/board --listen unix:/tmp/c.sock
//
// It serves edgemon.v1.Control on its own unix socket (mode 0660, group
// control.group, "edgemon-control" by default). Each connection's SO_PEERCRED
// (uid, gid, pid) is taken at accept; callers that are neither root nor in the
// group (primary or supplementary) are refused, and every change is logged
// with who asked. Live leases are kept in <state_dir>/state.json so that a
// helper restarted after a crash restores what its predecessor changed.
//
//   SIGTERM/SIGINT  end every lease (restoring the board), stop, exit 0
#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "daemon/collect/confined.h"
#include "daemon/collect/parse.h"
#include "daemon/collect/sysfs.h"
#include "daemon/control/board.h"
#include "daemon/control/control_service.h"
#include "daemon/runtime/config.h"
#include "daemon/runtime/logging.h"
#include "daemon/runtime/peers.h"
#include "daemon/runtime/signals.h"
#include "daemon/runtime/sockets.h"
#include "edgemon/groups.h"

namespace edgemon::control {
namespace {

constexpr int kExitConfig = 2;

struct Flags {
  std::string config_path;
  std::optional<std::string> root, listen, state_dir, log_level;
};

Status Load(const Flags& flags, runtime::Config& c) {
  if (!flags.config_path.empty()) {
    auto text = runtime::ReadConfigFile(flags.config_path);
    if (!text.ok()) return text.status();
    if (Status s = runtime::ApplyToml(*text, flags.config_path, c); !s.ok()) return s;
  }
  std::error_code ec;
  if (flags.root) {
    if (flags.root->empty()) return Status::InvalidArgument("flag --root: must not be empty");
    c.root = std::filesystem::absolute(*flags.root, ec).lexically_normal().string();
  }
  if (flags.listen) c.control_listen = *flags.listen;
  if (flags.log_level) c.log_level = *flags.log_level;
  if (flags.state_dir) {
    c.control_state_dir = std::filesystem::absolute(*flags.state_dir, ec).string();
  } else if (c.root != "/") {
    // A simulated root keeps its own state, never the real board's.
    c.control_state_dir =
        (std::filesystem::path(c.root) / std::filesystem::path(c.control_state_dir).relative_path())
            .string();
  }
  if (c.control_listen.rfind("unix:", 0) != 0 || c.control_listen.size() <= 5) {
    return Status::InvalidArgument("key control.listen: expected unix:/path, got \"" +
                                   c.control_listen + "\"");
  }
  if (c.control_group.empty())
    return Status::InvalidArgument("key control.group: must not be empty");
  return runtime::Validate(c);
}

// Whether a process is in `group`: its primary group, or one of the
// supplementary groups its /proc/PID/status lists.
bool InGroup(pid_t pid, gid_t primary, gid_t group) {
  if (primary == group) return true;
  auto text = ConfinedRoot("/").ReadText(HostProcPath(std::to_string(pid) + "/status"),
                                         ConfinedRoot::kMaxRead, ConfinedRoot::Last::kNoFollow);
  if (!text.ok()) return false;
  const auto groups = parse::ProcPidStatus(*text).groups;
  return groups && std::ranges::find(*groups, group) != groups->end();
}

std::string Comm(pid_t pid) {
  auto text = ConfinedRoot("/").ReadText(HostProcPath(std::to_string(pid) + "/comm"), 4096,
                                         ConfinedRoot::Last::kNoFollow);
  if (!text.ok()) return "?";
  while (!text->empty() && text->back() == '\n') text->pop_back();
  return *text;
}

// The state directory (created 0700 when missing) must be a directory of
// this uid that no one else may write: what it holds is restored, and run,
// as root.
Status CheckStateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return Status::Unavailable("state directory " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 0022) != 0) {
    return Status::FailedPrecondition(
        "state directory " + dir + " must be a directory of uid " + std::to_string(::geteuid()) +
        " that group and others cannot write (it is " +
        (S_ISLNK(st.st_mode) ? std::string("a symbolic link")
                             : fmt::format("mode {:o}, uid {}", st.st_mode & 07777, st.st_uid)) +
        "); refusing to start");
  }
  return Status::Ok();
}

int Run(const Flags& flags) {
  ::umask(0077);
  runtime::Config config;
  if (Status s = Load(flags, config); !s.ok()) {
    std::fprintf(stderr, "edgemon-control: %s\n", s.message().c_str());
    return kExitConfig;
  }
  if (!config.control_enable) {
    std::fprintf(
        stderr,
        "edgemon-control: control is disabled; to enable it set\n"
        "  [control]\n  enable = true\n"
        "in %s and add the users who may change the power mode, clocks and fan to "
        "group %s\n",
        flags.config_path.empty() ? "the config file (--config)" : flags.config_path.c_str(),
        config.control_group.c_str());
    return kExitConfig;
  }
  auto log = runtime::MakeLogger("edgemon-control", config.log_level);

  auto signal_fd = runtime::OpenSignalFd({SIGTERM, SIGINT, SIGHUP});
  if (!signal_fd.ok()) {
    log->critical("{}", signal_fd.status().message());
    return 1;
  }
  const int sfd = *signal_fd;

  const auto gid = LocalGroupId(config.control_group);
  if (!gid) {
    log->warn("group {} does not exist: only root may use the control helper",
              config.control_group);
  }
  if (Status s = CheckStateDir(config.control_state_dir); !s.ok()) {
    log->critical("{}", s.message());
    return kExitConfig;
  }
  const std::string socket_path = config.control_listen.substr(5);
  BoardControl board(config.root, config.control_state_dir);
  CallerTable callers;
  ControlService service(board, config.control_state_dir + "/state.json", callers, log);
  service.RecoverFromState();

  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(1 << 16);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    log->critical("cannot start the gRPC server");
    return 1;
  }
  auto listening = runtime::ListenUnix(socket_path, gid);
  if (!listening.ok()) {
    log->critical("{}", listening.status().message());
    return 1;
  }
  const int lfd = *listening;
  log->info("control of {} on {} (group {}), state in {}; nvpmodel: {}, jetson_clocks: {}",
            config.root, config.control_listen, config.control_group, config.control_state_dir,
            board.NvpmodelTool().empty() ? "absent" : board.NvpmodelTool(),
            board.JetsonClocksTool().empty() ? "absent (direct cpufreq/devfreq writes)"
                                             : board.JetsonClocksTool());

  runtime::UnixAcceptor acceptor;
  auto accepted = [&](int fd, const runtime::PeerCred& cred) {
    Caller c;
    c.uid = cred.uid;
    c.gid = cred.gid;
    c.pid = cred.pid;
    c.comm = Comm(cred.pid);
    c.allowed = cred.uid == 0 || (gid && InGroup(cred.pid, cred.gid, *gid));
    if (!c.allowed) {
      c.refusal = "uid " + std::to_string(cred.uid) + " (pid " + std::to_string(cred.pid) +
                  ") is not in group " + config.control_group +
                  "; an administrator may add the user with: usermod -aG " + config.control_group +
                  " USER (then log in again)";
    }
    log->debug("connection from uid {} gid {} pid {} ({})", c.uid, c.gid, c.pid, c.comm);
    callers.Set(fd, std::move(c));
  };
  if (Status s = acceptor.Start(lfd, server.get(), accepted,
                                [&log](const std::string& m) { log->warn("{}", m); });
      !s.ok()) {
    log->critical("{}", s.message());
    return 1;
  }

  for (;;) {
    signalfd_siginfo si{};
    if (::read(sfd, &si, sizeof si) != sizeof si) {
      if (errno == EINTR) continue;
      break;
    }
    if (si.ssi_signo == SIGHUP) {
      log->info("SIGHUP: nothing to reload (restart to apply config changes)");
      continue;
    }
    log->info("{} received: restoring what is changed and stopping",
              strsignal(static_cast<int>(si.ssi_signo)));
    break;
  }
  acceptor.Stop();
  ::unlink(socket_path.c_str());
  service.Shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
  log->info("stopped");
  return 0;
}

}  // namespace
}  // namespace edgemon::control

int main(int argc, char** argv) {
  CLI::App app{"edgemon-control: power mode, locked clocks and fan, as leases (off by default)"};
  edgemon::control::Flags flags;
  app.set_version_flag("--version", std::string("edgemon-control ") + EDGEMON_VERSION);
  app.add_option("--config", flags.config_path,
                 "TOML config file (edgemond.toml; [control] enable = true turns the helper on)");
  app.add_option("--root", flags.root, "Root of the controlled system (prefixes /sys, /etc, ...)");
  app.add_option("--listen", flags.listen, "Control socket: unix:/path");
  app.add_option(
      "--state-dir", flags.state_dir,
      "Where live leases are kept (default: control.state_dir, under --root when given)");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn or error");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : edgemon::control::kExitConfig;
  }
  return edgemon::control::Run(flags);
}
