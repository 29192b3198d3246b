// edgemon record: runs a command and measures it (energy per rail, power,
// temperatures and clocks) from edgemond's ring store, printed as a summary
// and saved as a bundle (summary.json, samples.csv, trace.json, report.html).
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
//
// The pieces: supervisor.h runs the command, record_monitor.h renews the
// leases while it runs, record_bundle.h writes the bundle, record_report.h
// renders the summary. attach.cc and mark.cc are the other two subcommands.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/cli/cli.h"
#include "client/cli/command_args.h"
#include "client/cli/record_bundle.h"
#include "client/cli/record_common.h"
#include "client/cli/record_monitor.h"
#include "client/cli/record_nvtx.h"
#include "client/cli/record_report.h"
#include "client/cli/supervisor.h"
#include "client/control_client.h"
#include "edgemon/clock.h"
#include "edgemon/timespec.h"

extern char** environ;

namespace edgemon::cli::record {

namespace {

// How long record waits for a daemon that went away before giving up on a summary.
constexpr std::chrono::seconds kDaemonWait{15};

void SleepNs(int64_t ns) {
  if (ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
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

// The command's environment: edgemon's own, with the run's window and the
// daemon's address for `edgemon mark` inside it.
std::vector<std::string> CommandEnv(const client::Window& window, const std::string& target) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view v(*e);
    if (v.starts_with("EDGEMON_WINDOW=") || v.starts_with("EDGEMON_WINDOW_START=") ||
        v.starts_with("EDGEMON_CONNECT=")) {
      continue;
    }
    env.emplace_back(v);
  }
  env.push_back("EDGEMON_WINDOW=" + std::to_string(window.id));
  env.push_back("EDGEMON_WINDOW_START=" + std::to_string(window.start_ns));
  env.push_back("EDGEMON_CONNECT=" + target);
  return env;
}

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
  // The benchmark's figures: per item over one phase, above the idle
  // baseline, over repeated runs.
  std::string items_phase;     // --items-phase NAME
  std::string baseline;        // --baseline DURATION ("": none)
  uint32_t repeat = 1;         // --repeat N
  uint32_t warmup_runs = 0;    // --warmup-runs K
  std::string cooldown = "0";  // --cooldown DURATION between runs
  bool nvtx = false;           // --nvtx
  std::vector<std::string> command;
  MlperfOptions mlperf;  // --mlperf-energy, --prefill-phase, --generation-phase, --mlperf
};

// What every run of a record shares: the parsed options and the daemon.
struct RunSetup {
  RunSetup(const Globals& g, const RecordOptions& opts) : globals(g), o(opts) {}
  const Globals& globals;
  const RecordOptions& o;
  std::string path;  // the command, resolved
  std::optional<std::regex> re;
  int64_t pre = 0, post = 0;
  std::unique_ptr<client::Client> c;
  client::DeviceInfo info;
  std::optional<Baseline> baseline;
  nlohmann::json mlperf_given;  // --mlperf, checked (ParseMlperfFields)
};

// --baseline: each rail's mean power over `ns` of stored history right
// before now; refused (message printed, false) when the store does not reach
// back that far or a window (another record, a measure()) overlaps it.
bool TakeBaseline(client::Client& c, int64_t ns, std::optional<Baseline>* out) {
  const int64_t to = NowNs(), from = to - ns;
  const std::string what =
      "edgemon record: --baseline " + Fixed(static_cast<double>(ns) / 1e9, 3) + " s: ";
  auto s = c.Summarize(from, to);
  if (!s.ok()) {
    std::fprintf(stderr, "%s%s. Not starting the command.\n", what.c_str(),
                 TerminalSafe(s.status().ToString()).c_str());
    return false;
  }
  if (s->requested_from_ns) {
    std::fprintf(stderr,
                 "%sthe store holds only %s s of history before now (the daemon started "
                 "recently, or retention is shorter): wait or shorten --baseline. Not "
                 "starting the command.\n",
                 what.c_str(), Fixed(s->duration_s, 3).c_str());
    return false;
  }
  auto windows = c.ListWindows(from, to);
  if (!windows.ok()) {
    std::fprintf(stderr, "%swindows not listed: %s\n", what.c_str(),
                 TerminalSafe(windows.status().ToString()).c_str());
    return false;
  }
  if (!windows->empty()) {
    const auto& w = windows->front();
    std::fprintf(stderr,
                 "%swindow %lld (%s) overlaps that history: the board was not idle; wait "
                 "for a quiet stretch or shorten --baseline. Not starting the command.\n",
                 what.c_str(), static_cast<long long>(w.id), TerminalSafe(w.label).c_str());
    return false;
  }
  Baseline b;
  b.seconds = s->duration_s;
  b.from_ns = s->from_ns;
  b.to_ns = s->to_ns;
  bool any = false;
  for (const auto& r : s->rails) {
    std::optional<double> mw;
    if (r.energy_mj && s->duration_s > 0) mw = *r.energy_mj / s->duration_s;
    any = any || mw.has_value();
    b.rails_mw.emplace_back(r.name, mw);
  }
  if (!any) {
    std::fprintf(stderr, "%sno rail energy measured over it. Not starting the command.\n",
                 what.c_str());
    return false;
  }
  *out = std::move(b);
  return true;
}

// The leases --mode and --lock-clocks hold for the run (ended, restoring the
// board, when they go out of scope or this process dies).
struct RunControl {
  std::unique_ptr<client::ControlClient> client;
  std::unique_ptr<client::HeldLease> mode, clocks;
};

// Takes the leases before the command starts; false (message printed, *rc set)
// when the helper refused. Without them the helper is not asked, and whether
// the clocks are locked stays unknown (the report says why).
bool TakeControl(const RecordOptions& o, Report& report, RunControl* rc_out, int* rc) {
  if (!o.lock_clocks && !o.mode) {
    report.clocks_unknown_why =
        "unknown: edgemon-control is asked only with --lock-clocks or --mode";
    return true;
  }
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
  } else {
    report.clocks_unknown_why = "edgemon-control's state not read: " + st.status().ToString();
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

// One run of the command: measured into *report_out; prints its summary
// unless `quiet`, writes a bundle into `bundle_dir` unless it is empty. Returns the
// command's status; *summarized says whether the report holds a summary.
int RecordOnce(RunSetup& setup, const std::string& bundle_dir, bool quiet, Report* report_out,
               bool* summarized) {
  const Globals& globals = setup.globals;
  const RecordOptions& o = setup.o;
  const std::string& path = setup.path;
  const std::optional<std::regex>& re = setup.re;
  const int64_t* pre = &setup.pre;
  const int64_t* post = &setup.post;
  std::unique_ptr<client::Client>& c = setup.c;
  const client::DeviceInfo* info = &setup.info;
  *summarized = false;
  Report& report = *report_out;
  report = Report{};
  report.baseline = setup.baseline;
  report.items_phase = o.items_phase;
  FillDevice(report, *info, c->target());
  report.command = o.command;
  report.mlperf = o.mlperf;
  report.mlperf_given = setup.mlperf_given;
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
  std::unique_ptr<NvtxCapture> nvtx;  // --nvtx: the ranges' file, made before the run
  if (o.nvtx) {
    auto made = NvtxCapture::Create(o.out);
    if (!made.ok()) return ReportStatus("record", made.status());
    nvtx = std::move(made).value();
  }
  RunControl control;
  if (int control_rc = 0; !TakeControl(o, report, &control, &control_rc)) return control_rc;

  std::optional<LeaseMonitor> monitor;
  uint64_t lease_id = 0;
  if (o.rate_hz > 0) {
    auto b = c->Boost(o.rate_hz, kBoostLeaseMs);
    if (!b.ok()) return ReportStatus("record: boost", b.status());
    report.boost_rate_hz = b->rate_hz;
    lease_id = b->lease_id;
  }
  // The window: begun right before the command starts, stamped on
  // CLOCK_BOOTTIME here (the daemon's own stamp over TCP).
  SystemClock clock;
  int64_t before = NowNs();
  auto window = c->BeginWindow(report.label, kWindowLeaseMs, clock.BoottimeNs());
  int64_t after = NowNs();
  if (!window.ok()) return ReportStatus("record: begin window", window.status());
  report.window_id = window->id;
  report.run_start_ns = window->start_ns;
  const int64_t offset = window->start_ns - (before + after) / 2;  // daemon - local clock

  // The command, from here until the window ends: signals sent to edgemon go to it.
  // The window starts at its spawn, after BeginWindow returned (sent with the end).
  Supervisor supervisor(clock, !o.no_wait_descendants);
  const int64_t spawn_boot = clock.BoottimeNs();
  std::vector<std::string> env = CommandEnv(*window, c->target());
  if (nvtx) nvtx->AddEnv(env, &report.notes);
  if (int e = supervisor.Start(path, o.command, env, re.has_value()); e != 0) {
    supervisor.StopForwarding();
    (void)c->EndWindow(window->id);
    return ReportExecError(o.command[0], e);
  }
  monitor.emplace(c->target(), globals.timeout, o.rate_hz, lease_id, ProbeKey(info->inventory),
                  window->id, window->start_ns);

  ItemCounter counter(re ? *re : std::regex());
  const ChildExit child = supervisor.Wait([&](std::string_view out) { counter.Feed(out); });
  if (re) counter.Finish();
  // Stored with the window, for `edgemon runs` and `edgemon compare`.
  WindowResult sent;
  sent.exit_status = child.Status();
  if (re && counter.value()) sent.items = *counter.value();
  if (o.items > 0) sent.items = o.items;
  const int64_t exit_local = child.last_exit_ns;
  const int64_t exit_boot = clock.BoottimeNs() - (clock.RealtimeNs() - exit_local);
  EndControl(control, report);
  if (child.outlived > 0) {
    report.notes.push_back(
        std::to_string(child.outlived) + " process" + (child.outlived == 1 ? "" : "es") +
        " started by the command outlived it by " +
        Fixed(static_cast<double>(exit_local - child.command_exit_ns) / 1e9, 3) +
        " s: measured until the last exited (--no-wait-descendants stops at the command's exit)");
  }
  if (int sig = child.forwarded_signal; sig != 0) {
    report.notes.push_back("edgemon forwarded signal " + std::to_string(sig) + " (" +
                           strsignal(sig) + ") to the command");
  }

  // The window: ended right away; a daemon that went away is waited for.
  auto deadline = std::chrono::steady_clock::now() + kDaemonWait;
  const std::string target = c->target();
  const std::function<void()> reconnect = [&] {
    if (auto fresh = FreshClient(target, globals.timeout)) c = std::move(fresh);
  };
  bool waited = false;
  // Stamped at the exit unless the daemon had to be waited for (then it ends late, said below).
  auto ended = Retry(
      [&] {
        return c->EndWindow(window->id, waited ? std::nullopt : std::optional(exit_boot),
                            spawn_boot, sent);
      },
      deadline, reconnect, &waited);
  if (ended.ok()) report.run_start_ns = ended->start_ns;
  supervisor.StopForwarding();
  report.exit_code = child.exit_code;
  report.signal = child.signal;
  const int rc = child.Status();
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
    report.run_end_ns = NonEmptyEnd(report.run_start_ns, exit_local + offset);
    report.notes.push_back(
        ended.ok() ? "the daemon was unreachable when the command exited: window " +
                         std::to_string(window->id) + " ended " +
                         Fixed(static_cast<double>(ended->end_ns.value_or(report.run_end_ns) -
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
                                                    : c->Summarize(from, NonEmptyEnd(from, to));
      },
      deadline, reconnect);
  if (!summary.ok()) {
    std::fprintf(stderr, "edgemon record: summarize: %s\n",
                 TerminalSafe(summary.status().ToString()).c_str());
    return rc;
  }
  report.summary = *summary;
  if (*pre > 0 || *post > 0) {
    // The run alone, for the per-item figures and the repeats' statistics.
    auto run = Retry(
        [&] {
          return exact_end ? c->SummarizeWindow(window->id)
                           : c->Summarize(report.run_start_ns,
                                          NonEmptyEnd(report.run_start_ns, report.run_end_ns));
        },
        deadline, reconnect);
    if (run.ok()) {
      report.run_summary = *run;
    } else {
      report.notes.push_back("the run alone not summarized (" + run.status().ToString() +
                             "): per-item figures include --pre/--post");
    }
  }
  if (const auto& held = report.summary.min_rail_rate_hz;
      o.rate_hz > 0 && held && *held + 0.5 < o.rate_hz) {
    report.notes.push_back(
        "--rate " + std::to_string(o.rate_hz) +
        " Hz was asked for; the rail rate that held over the range went down "
        "to " +
        RateHz(*held) + (*pre > 0 ? " (the boost starts with the command, not with --pre)" : ""));
  }
  AddPhases(*c, report, deadline);
  if (nvtx) {
    report.nvtx = nvtx->Collect(*c, offset);
    for (const auto& n : report.nvtx->notes) report.notes.push_back(n);
  }
  AddEventNote(*c, report, again->inventory);
  setup.info = *again;
  *summarized = true;
  if (!quiet) {
    std::string text = RenderSummary(report, again->inventory);
    std::fflush(stdout);
    std::fputs(TerminalSafe(text).c_str(), stderr);
  }
  if (!bundle_dir.empty()) {
    if (!WriteBundle(*c, bundle_dir, report, again->inventory)) {
      return rc == 0 ? kExitCantCreate : rc;
    }
    std::fprintf(stderr,
                 "Bundle: %s/{summary.json,samples.csv,trace.json,report.html} (open "
                 "report.html in a browser, trace.json in ui.perfetto.dev)\n",
                 TerminalSafe(bundle_dir).c_str());
  }
  return rc;
}

// --mlperf-energy FILE: the run's MLPerf energy report (for --repeat, the
// last run's with the repeats' spread); the status to exit with.
int WriteMlperfFile(const RunSetup& setup, const Report& report, int rc) {
  if (setup.o.mlperf.file.empty()) return rc;
  if (!WriteMlperfReport(setup.o.mlperf.file, SummaryJson(report, setup.info.inventory),
                         setup.mlperf_given, setup.o.mlperf)) {
    return rc == 0 ? kExitCantCreate : rc;
  }
  return rc;
}

int RunRecord(const Globals& globals, const RecordOptions& o) {
  RunSetup setup(globals, o);
  auto pre = ParseDurationNs(o.pre);
  auto post = ParseDurationNs(o.post);
  if (!pre.ok() || !post.ok()) {
    std::fprintf(stderr, "edgemon record: %s: %s\n", pre.ok() ? "--post" : "--pre",
                 TerminalSafe((pre.ok() ? post : pre).status().message()).c_str());
    return kExitDataErr;
  }
  setup.pre = *pre;
  setup.post = *post;
  auto cooldown = ParseDurationNs(o.cooldown);
  if (!cooldown.ok()) {
    std::fprintf(stderr, "edgemon record: --cooldown: %s\n",
                 TerminalSafe(cooldown.status().message()).c_str());
    return kExitDataErr;
  }
  std::optional<int64_t> baseline_ns;
  if (!o.baseline.empty()) {
    auto b = ParseDurationNs(o.baseline);
    if (!b.ok() || *b <= 0) {
      std::fprintf(
          stderr, "edgemon record: --baseline: %s\n",
          b.ok() ? "must be longer than 0 (e.g. 10s)" : TerminalSafe(b.status().message()).c_str());
      return kExitDataErr;
    }
    baseline_ns = *b;
  }
  if (!o.items_phase.empty() && o.items <= 0 && o.items_from.empty()) {
    std::fprintf(stderr, "edgemon record: --items-phase needs --items or --items-from\n");
    return kExitUsage;
  }
  if (!o.items_from.empty()) {
    auto compiled = CompileItemsRegex(o.items_from);
    if (!compiled.ok()) {
      std::fprintf(stderr, "edgemon record: --items-from: bad regular expression: %s\n",
                   TerminalSafe(compiled.status().message()).c_str());
      return kExitDataErr;
    }
    setup.re = std::move(compiled).value();
  }
  auto mlperf_given = ParseMlperfFields(o.mlperf.fields);
  if (!mlperf_given.ok()) {
    std::fprintf(stderr, "edgemon record: %s\n",
                 TerminalSafe(mlperf_given.status().message()).c_str());
    return kExitUsage;
  }
  setup.mlperf_given = *mlperf_given;
  if (int e = ResolveCommand(o.command[0], &setup.path); e != 0) {
    return ReportExecError(o.command[0], e);
  }
  setup.c = ConnectOrReport(globals);
  if (!setup.c) return kExitUsage;
  auto info = setup.c->DeviceInfo();
  if (!info.ok()) {
    return ReportFirstCall("edgemon record", setup.c->target(), info.status(),
                           "; not starting the command");
  }
  setup.info = *info;
  if (!o.out.empty() && !MakeBundleDir(o.out)) return kExitCantCreate;
  // The baseline once, before the first run (a later run's history holds the
  // runs before it).
  if (baseline_ns && !TakeBaseline(*setup.c, *baseline_ns, &setup.baseline)) return kExitDataErr;

  Report report;
  bool summarized = false;
  if (o.repeat <= 1 && o.warmup_runs == 0) {
    const int rc = RecordOnce(setup, o.out, false, &report, &summarized);
    return summarized ? WriteMlperfFile(setup, report, rc) : rc;
  }
  // Repeats: each run its own window with the same label; warm-ups measured
  // but left out of the statistics; a failed run ends the series.
  const uint32_t total = o.warmup_runs + o.repeat;
  std::vector<nlohmann::json> runs;
  std::vector<RunFigures> figures;
  int rc = 0;
  for (uint32_t i = 0; i < total; ++i) {
    if (i > 0) SleepNs(*cooldown);
    const bool warmup = i < o.warmup_runs;
    const std::string name =
        warmup ? "warm-up " + std::to_string(i + 1) + " of " + std::to_string(o.warmup_runs)
               : "run " + std::to_string(i - o.warmup_runs + 1) + " of " + std::to_string(o.repeat);
    rc = RecordOnce(setup, "", true, &report, &summarized);
    if (!summarized) break;
    RunFigures f = FiguresOf(report);
    std::fflush(stdout);
    std::fputs(
        TerminalSafe(RenderRunLine(name + " (window " + std::to_string(report.window_id) + ")", f))
            .c_str(),
        stderr);
    nlohmann::json rj = SummaryJson(report, setup.info.inventory);
    rj["warmup"] = warmup;
    runs.push_back(std::move(rj));
    if (!warmup) figures.push_back(f);
    if (rc != 0) {
      std::fprintf(stderr, "edgemon record: %s exited with status %d: no further runs\n",
                   name.c_str(), rc);
      break;
    }
  }
  if (!summarized && runs.empty()) return rc;
  report.repeats = {{"runs", runs}, {"aggregate", AggregateJson(figures)}};
  std::string text = RenderSummary(report, setup.info.inventory);
  text += "\n" + RenderAggregate(figures);
  std::fflush(stdout);
  std::fputs(TerminalSafe(text).c_str(), stderr);
  if (!o.out.empty()) {
    if (!WriteBundle(*setup.c, o.out, report, setup.info.inventory)) {
      return rc == 0 ? kExitCantCreate : rc;
    }
    std::fprintf(stderr,
                 "Bundle: %s/{summary.json,samples.csv,trace.json,report.html} (the last run; "
                 "every run's summary and the aggregate in summary.json)\n",
                 TerminalSafe(o.out).c_str());
  }
  return WriteMlperfFile(setup, report, rc);
}

}  // namespace

}  // namespace edgemon::cli::record

namespace edgemon::cli {

void AddRecordCommands(CLI::App& app, Registry& registry) {
  auto ro = std::make_shared<record::RecordOptions>();
  auto* rec = app.add_subcommand(
      "record", "Run a command and measure it: energy per rail, power, temperatures, clocks");
  rec->add_option("--label", ro->label, "Window label (default: the command's name)");
  rec->add_option("--rate", ro->rate_hz, "Raise the rail sampling rate to HZ while it runs")
      ->check(CLI::Range(1, 1000));
  rec->add_option("--pre", ro->pre, "Also measure this long before the command (e.g. 2s)");
  rec->add_option("--post", ro->post, "Keep measuring this long after it exits (e.g. 2s)");
  rec->add_option("--out", ro->out,
                  "Write summary.json, samples.csv, trace.json and report.html here");
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
  // The benchmark's figures.
  rec->add_option("--items-phase", ro->items_phase,
                  "Per-item figures (energy per item, items/s) over this phase (edgemon mark) "
                  "only; by default over the run, never --pre/--post");
  rec->add_option("--baseline", ro->baseline,
                  "Idle baseline: each rail's mean power over this much stored history right "
                  "before the run (e.g. 10s); adds the energy above it");
  rec->add_option("--repeat", ro->repeat,
                  "Run the command N times, each its own window; prints each run and the mean, "
                  "std and 95 % CI")
      ->check(CLI::Range(1, 1000));
  rec->add_option("--warmup-runs", ro->warmup_runs,
                  "Runs before the --repeat runs: measured, left out of the statistics")
      ->check(CLI::Range(0, 1000));
  rec->add_option("--cooldown", ro->cooldown, "Wait this long between runs (e.g. 30s)");
  rec->add_flag("--nvtx", ro->nvtx,
                "Energy per NVTX range: loads edgemon's NVTX injection library into the command "
                "(NVTX_INJECTION64_PATH) and adds each range name's count, time and energy");
  AddMlperfOptions(rec, ro->mlperf, true);
  AddCommandArgs(*rec, ro->command,
                 "The command and its arguments: every word from the first that is not an "
                 "option of record is the command's")
      ->required();
  rec->footer(
      "Run it as: edgemon record [OPTIONS] CMD [ARGS...]\n"
      "record's options end at CMD: `edgemon record python3 train.py --out x` passes --out x\n"
      "to train.py. `--` before CMD is accepted too (needed when CMD begins with -).\n"
      "The summary goes to stderr; the command's output passes through unchanged (through a\n"
      "pipe with --items-from). The command gets EDGEMON_WINDOW, EDGEMON_WINDOW_START and\n"
      "EDGEMON_CONNECT, so `edgemon mark begin NAME` / `edgemon mark end NAME` inside it\n"
      "measure phases. Exit status: the command's (128+N when signal N killed it), 127 when\n"
      "it is not found, 126 when it cannot run, 69 when the daemon cannot be reached (the\n"
      "command is then not started), 2 for bad flags.");
  rec->callback([&registry, ro] {
    registry.run = [&registry, ro] { return record::RunRecord(registry.globals, *ro); };
  });

  record::AddAttachCommand(app, registry);
  record::AddMarkCommand(app, registry);
  record::AddRunsCommand(app, registry);
  record::AddCompareCommand(app, registry);
  record::AddMlperfCommand(app, registry);
  record::AddTraceCommand(app, registry);
}

}  // namespace edgemon::cli
