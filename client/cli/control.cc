// edgemon control: the power mode, locked clocks and fan through the
// edgemon-control helper (--control ADDR, else $EDGEMON_CONTROL, else its
// default socket).
//
//   edgemon control modes | state
//   edgemon control mode N [--for DURATION]
//   edgemon control clocks lock [--for DURATION] | clocks restore
//   edgemon control fan SPEED [--fan NAME] [--for DURATION]
//   edgemon control release KIND|LEASE_ID
//
// Without --for a change is held while the command runs (until Ctrl-C or
// SIGTERM) and restored when it stops; with --for it outlives the command
// and is restored when the duration passes or on `release`.
#include <csignal>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>

#include "client/cli/cli.h"
#include "client/control_client.h"
#include "edgemon/timespec.h"

namespace edgemon::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnStop(int) {
  g_stop = 1;
}

struct ControlOptions {
  std::string control;
  std::string what;  // modes, state, mode, clocks, fan, release
  std::string arg;   // N, lock/restore, SPEED, KIND
  std::string fan;
  std::string duration;
};

int Report(const std::string& what, const Status& s) {
  return ReportStatus("control: " + what, s);
}

// Holds `lease` until a signal (or the helper ends it), then releases it.
int HoldOrDetach(Result<std::unique_ptr<client::HeldLease>> lease, const std::string& what) {
  if (!lease.ok()) return Report(what, lease.status());
  const auto& l = (*lease)->lease();
  if (l.detached()) {
    std::printf("%s: lease %s, restored in %.0f s or on `edgemon control release %s`\n",
                TerminalSafe(l.detail()).c_str(), TerminalSafe(l.id()).c_str(),
                static_cast<double>(l.expires_realtime_ns() - l.start_realtime_ns()) / 1e9,
                TerminalSafe(l.kind()).c_str());
    return kExitOk;
  }
  std::printf("%s: lease %s held; Ctrl-C (or SIGTERM) restores it\n",
              TerminalSafe(l.detail()).c_str(), TerminalSafe(l.id()).c_str());
  std::fflush(stdout);
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  while (!g_stop && !(*lease)->ended()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::printf("%s\n", TerminalSafe((*lease)->End()).c_str());
  return kExitOk;
}

int RunControl(const ControlOptions& o) {
  auto connected = client::ControlClient::Connect(client::ControlTarget(o.control));
  if (!connected.ok()) return Report("address", connected.status());
  auto& c = *connected;
  edgemon::v1::LeaseOptions lease;
  if (!o.duration.empty()) {
    auto ns = ParseDurationNs(o.duration);
    if (!ns.ok() || *ns <= 0) {
      std::fprintf(stderr, "edgemon control: --for: expected a duration such as 10m or 90s\n");
      return kExitUsage;
    }
    lease.set_duration_s(static_cast<double>(*ns) / 1e9);
    lease.set_detach(true);
  }
  if (o.what == "modes") {
    auto m = c->ListModes();
    if (!m.ok()) return Report("modes", m.status());
    for (const auto& mode : m->modes()) {
      std::printf("%c %3d  %s%s\n", m->has_current_id() && m->current_id() == mode.id() ? '*' : ' ',
                  mode.id(), TerminalSafe(mode.name()).c_str(),
                  mode.is_default() ? "  (default)" : "");
    }
    if (m->modes().empty()) std::printf("this board has no power modes\n");
    return kExitOk;
  }
  if (o.what == "state") {
    auto s = c->GetState();
    if (!s.ok()) return Report("state", s.status());
    std::printf(
        "power mode  %s\n",
        s->has_mode_id()
            ? (std::to_string(s->mode_id()) + " (" + TerminalSafe(s->mode_name()) + ")").c_str()
            : "—");
    std::printf("clocks      %s\n", s->clocks_locked() ? "locked" : "not locked");
    for (const auto& f : s->fans()) {
      std::printf("fan         %s pwm %s\n", TerminalSafe(f.name()).c_str(),
                  f.has_pwm() ? std::to_string(f.pwm()).c_str() : "—");
    }
    for (const auto& l : s->leases()) {
      std::printf("lease       %s  %s  uid %u pid %u%s\n", TerminalSafe(l.id()).c_str(),
                  TerminalSafe(l.detail()).c_str(), l.uid(), l.pid(),
                  l.detached() ? "  (detached)" : "");
    }
    std::printf("changes     %llu (leases granted since boot)\n",
                static_cast<unsigned long long>(s->changes()));
    return kExitOk;
  }
  if (o.what == "mode") {
    char* end = nullptr;
    long id = std::strtol(o.arg.c_str(), &end, 10);
    if (o.arg.empty() || *end != '\0') {
      std::fprintf(stderr,
                   "edgemon control mode: expected a mode id (see `edgemon control modes`)\n");
      return kExitUsage;
    }
    return HoldOrDetach(c->SetMode(static_cast<int>(id), lease), "mode " + o.arg);
  }
  if (o.what == "clocks") {
    if (o.arg == "lock") return HoldOrDetach(c->LockClocks(lease), "clocks lock");
    if (o.arg == "restore") {
      auto r = c->Release("clocks");
      if (!r.ok()) return Report("clocks restore", r.status());
      std::printf("%s\n", TerminalSafe(r->message()).c_str());
      return kExitOk;
    }
    std::fprintf(stderr, "edgemon control clocks: expected lock or restore\n");
    return kExitUsage;
  }
  if (o.what == "fan") {
    char* end = nullptr;
    long pct = std::strtol(o.arg.c_str(), &end, 10);
    if (o.arg.empty() || *end != '\0' || pct < 0 || pct > 100) {
      std::fprintf(stderr, "edgemon control fan: expected a speed in percent, 0..100\n");
      return kExitUsage;
    }
    return HoldOrDetach(c->SetFan(o.fan, static_cast<int>(pct), lease), "fan " + o.arg);
  }
  if (o.what == "release") {
    const bool kind = o.arg == "mode" || o.arg == "clocks" || o.arg == "fan";
    auto r = c->Release(kind ? o.arg : "", kind ? "" : o.arg);
    if (!r.ok()) return Report("release", r.status());
    std::printf("%s\n", TerminalSafe(r->message()).c_str());
    return kExitOk;
  }
  std::fprintf(stderr,
               "edgemon control: expected modes, state, mode N, clocks lock|restore, fan SPEED "
               "or release KIND|ID\n");
  return kExitUsage;
}

}  // namespace

void AddControlCommands(CLI::App& app, Registry& registry) {
  auto o = std::make_shared<ControlOptions>();
  auto* cmd = app.add_subcommand(
      "control", "Power mode, locked clocks and fan through edgemon-control (as leases)");
  cmd->add_option("--control", o->control,
                  std::string("The control helper: unix:/path (default: $EDGEMON_CONTROL, else ") +
                      client::kDefaultControlTarget + ")");
  cmd->add_option("--fan", o->fan, "fan: which fan (a name from `control state`; default: all)");
  cmd->add_option("--for", o->duration,
                  "Keep the change after this command exits, for DURATION (e.g. 10m); "
                  "without it the change is held until Ctrl-C");
  cmd->add_option("what", o->what, "modes, state, mode, clocks, fan or release")->required();
  cmd->add_option("arg", o->arg, "mode id, lock|restore, fan speed (%), or what to release");
  cmd->footer(
      "  edgemon control modes              list the power modes (* = current)\n"
      "  edgemon control mode 0 --for 1h    power mode 0 for an hour\n"
      "  edgemon control clocks lock        lock the clocks at their maximum until Ctrl-C\n"
      "  edgemon control clocks restore     end the clocks lease (restores the clocks)\n"
      "  edgemon control fan 100            fan at 100% until Ctrl-C\n"
      "Only root and members of group edgemon-control may make changes; every change is\n"
      "logged by the helper with the caller's uid and pid, and undone when its lease ends.");
  cmd->callback([&registry, o] { registry.run = [o] { return RunControl(*o); }; });
}

}  // namespace edgemon::cli
