// edgemon watch: a line per interval (text or JSON lines).
// edgemon tegrastats: lines in tegrastats' own format (tegrastats_format.h),
// in the foreground or, with --start, in the background (tegrastats_background.h).
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/cli/cli.h"
#include "client/cli/session.h"
#include "client/cli/tegrastats_background.h"
#include "client/cli/tegrastats_format.h"
#include "client/duration_flag.h"
#include "edgemon/render.h"

namespace edgemon::cli {
namespace {

struct WatchFlags {
  bool json = false;
  uint32_t interval_ms = 0;
  std::vector<std::string> channels;
  uint64_t count = 0;
};

// Without --channels, the text line shows what a person scans for: CPU and
// GPU load, memory, EMC, rail power and temperatures.
bool DefaultLineChannel(const Channel& c, bool has_cpu_total) {
  switch (c.kind) {
    case Kind::kCpu:
      return c.field == Field::kLoad && (c.name == "cpu" || !has_cpu_total);
    case Kind::kGpu:
      return c.field == Field::kLoad || c.field == Field::kFreq;
    case Kind::kEmc:
      return c.field == Field::kLoad;
    case Kind::kMemory:
      return c.name == "ram" && c.field == Field::kUsed;
    case Kind::kRail:
      return c.field == Field::kPower;
    case Kind::kThermal:
      return c.field == Field::kTemp;
    default:
      return false;
  }
}

int RunWatch(const Registry& registry, const WatchFlags& f) {
  InstallStopSignals();
  int rc = kExitOk;
  auto session = OpenSession(registry.globals, &rc);
  if (!session) return rc;
  const std::vector<std::string> patterns = SplitList(f.channels);
  const auto first = SelectOrReport("watch", session->info.inventory, patterns);
  if (!first) return kExitUsage;
  client::WatchOptions options;
  options.interval_ms = f.interval_ms;
  if (!patterns.empty()) options.channels = KeysOf(session->info.inventory, *first);

  std::vector<const Channel*> shown;
  Inventory inventory;
  StreamHooks hooks;
  hooks.on_inventory = [&](const client::DeviceInfo& info) {
    inventory = info.inventory;
    auto selected = SelectChannels(inventory, patterns);
    std::vector<ChannelId> ids = selected.ok() ? *selected : std::vector<ChannelId>{};
    shown.clear();
    bool has_total = inventory.Find(Kind::kCpu, "cpu", Field::kLoad) != nullptr;
    for (ChannelId id : ids) {
      const Channel& c = inventory.channels[id];
      if (f.json || !patterns.empty() || DefaultLineChannel(c, has_total)) shown.push_back(&c);
    }
  };
  hooks.on_frame = [&](const client::LiveFrame& lf) -> std::optional<int> {
    std::string line;
    if (f.json) {
      nlohmann::json values = nlohmann::json::object();
      for (const Channel* c : shown) {
        Value v = lf.frame.Get(c->id);
        values[c->Key()] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
      }
      nlohmann::json j = {{"seq", lf.frame.seq},
                          {"realtime_ns", lf.frame.realtime_ns},
                          {"boottime_ns", lf.frame.boottime_ns},
                          {"values", std::move(values)}};
      line = JsonText(j);
    } else {
      line = LocalTime(lf.frame.realtime_ns).substr(11);  // HH:MM:SS.mmm
      for (const Channel* c : shown) {
        line += " " + TerminalSafe(c->name);  // names come from sysfs
        if (c->kind == Kind::kGpu || c->kind == Kind::kEmc || !patterns.empty()) {
          line += "." + std::string(ToString(c->field));
        }
        line += "=" + CompactValue(*c, lf.frame.Get(c->id));
      }
    }
    if (!WriteLine(stdout, line)) return kExitOk;  // the reader went away
    return std::nullopt;
  };
  return RunStream(*session, options, f.count, hooks);
}

struct TegrastatsFlags {
  uint32_t interval_ms = 1000;
  std::string logfile;
  uint64_t count = 0;
  bool start = false;
  bool stop = false;
};

constexpr char kTegrastats[] = "edgemon tegrastats";

// Lines to `out` until the count, a signal, or a failed write to the logfile.
int StreamTegrastats(Session& session, const TegrastatsFlags& f, std::FILE* out) {
  client::WatchOptions options;
  options.interval_ms = f.interval_ms;
  std::unique_ptr<TegrastatsFormatter> formatter;
  StreamHooks hooks;
  hooks.on_inventory = [&](const client::DeviceInfo& info) {
    if (formatter == nullptr) {
      formatter =
          std::make_unique<TegrastatsFormatter>(info.inventory, StyleFor(info.inventory.board));
    } else {
      formatter->Rebind(info.inventory);
    }
  };
  hooks.on_frame = [&](const client::LiveFrame& lf) -> std::optional<int> {
    if (WriteLine(out, formatter->Format(lf.frame))) return std::nullopt;
    if (out == stdout) return kExitOk;  // the reader went away
    std::fprintf(stderr, "%s: cannot write %s: %s\n", kTegrastats, TerminalSafe(f.logfile).c_str(),
                 std::strerror(errno));
    return kExitCantCreate;
  };
  return RunStream(session, options, f.count, hooks);
}

std::FILE* OpenLog(const std::string& path) {
  std::FILE* out = std::fopen(path.c_str(), "ae");
  if (out == nullptr) {
    std::fprintf(stderr, "%s: cannot open %s: %s\n", kTegrastats, TerminalSafe(path).c_str(),
                 std::strerror(errno));
  }
  return out;
}

// --start: the logfile is opened here, so that its errors and a relative
// path are the caller's; the instance connects before the caller returns.
int StartTegrastats(const Registry& registry, TegrastatsFlags f) {
  if (f.logfile.empty()) {
    auto path = DefaultTegrastatsLog(std::getenv("XDG_STATE_HOME"), std::getenv("HOME"));
    if (!path.ok()) {
      std::fprintf(stderr, "%s: %s\n", kTegrastats, TerminalSafe(path.status().message()).c_str());
      return kExitCantCreate;
    }
    f.logfile = *path;
  }
  std::FILE* out = OpenLog(f.logfile);
  if (out == nullptr) return kExitCantCreate;
  Registry background = registry;
  // The instance leaves the working directory: a relative socket path is
  // made absolute first.
  std::string& target = background.globals.connect;
  if (target.starts_with("unix:") && !target.starts_with("unix:/")) {
    if (char* cwd = ::getcwd(nullptr, 0)) {
      target = "unix:" + std::string(cwd) + "/" + target.substr(5);
      std::free(cwd);
    }
  }
  const int rc = StartBackground(kTegrastats, f.logfile, [&](const ReadyFn& ready) {
    InstallStopSignals();
    int open_rc = kExitOk;
    auto session = OpenSession(background.globals, &open_rc);
    if (!session) return open_rc;  // reported on the caller's stderr
    if (!ready()) return kExitCantCreate;
    return StreamTegrastats(*session, f, out);
  });
  if (std::fclose(out) != 0 && rc == kExitOk) return kExitCantCreate;
  return rc;
}

int RunTegrastats(const Registry& registry, const TegrastatsFlags& f) {
  if (f.stop) return StopBackground(kTegrastats);
  if (f.start) return StartTegrastats(registry, f);
  InstallStopSignals();
  std::FILE* out = stdout;
  if (!f.logfile.empty()) {
    out = OpenLog(f.logfile);
    if (out == nullptr) return kExitCantCreate;
  }
  int rc = kExitOk;
  auto session = OpenSession(registry.globals, &rc);
  if (session) rc = StreamTegrastats(*session, f, out);
  if (out != stdout && std::fclose(out) != 0 && rc == kExitOk) rc = kExitCantCreate;
  return rc;
}

}  // namespace

void AddWatchCommands(CLI::App& app, Registry& registry) {
  auto wf = std::make_shared<WatchFlags>();
  CLI::App* watch = app.add_subcommand("watch", "Print a line per interval until interrupted");
  watch->add_flag("--json", wf->json, "One JSON object per line (values by key, raw units)");
  client::AddIntervalOption(*watch, wf->interval_ms,
                            "Time between lines: 2s, 500ms, or a bare number of seconds as in "
                            "watch(1); at least 10ms, the daemon's floor (default: every daemon "
                            "sample)",
                            {.min_ms = client::kDaemonFloorMs,
                             .max_ms = 3600u * 1000u,
                             .bare_unit_ns = kNsPerSecond,
                             .zero = "every daemon sample",
                             .floor_of = "the daemon's floor"});
  watch
      ->add_option("--channels", wf->channels,
                   "Only these channels: keys, ids or globs (rail/*,thermal/*), comma-separated")
      ->delimiter(',');
  watch->add_option("--count", wf->count, "Stop after N lines");
  watch->callback(
      [&registry, wf] { registry.run = [&registry, wf] { return RunWatch(registry, *wf); }; });

  auto tf = std::make_shared<TegrastatsFlags>();
  CLI::App* tegra = app.add_subcommand(
      "tegrastats", "Print lines in tegrastats' format for this board (a drop-in for tegrastats)");
  client::AddIntervalOption(*tegra, tf->interval_ms,
                            "Time between lines: a bare number of milliseconds as in tegrastats, "
                            "or 2s, 500ms; at least 10ms, the daemon's floor (default 1000)",
                            {.min_ms = client::kDaemonFloorMs,
                             .max_ms = 3600u * 1000u,
                             .bare_unit_ns = kNsPerMillisecond,
                             .zero = "",
                             .floor_of = "the daemon's floor"});
  tegra->add_option("--logfile", tf->logfile, "Append the lines to FILE (flushed after each)");
  tegra->add_option("--count", tf->count, "Stop after N lines");
  CLI::Option* start = tegra->add_flag(
      "--start", tf->start,
      "Run in the background, appending to --logfile (default "
      "$XDG_STATE_HOME/edgemon/tegrastats.log or ~/.local/state/edgemon/tegrastats.log); "
      "one instance per user");
  tegra
      ->add_flag("--stop", tf->stop,
                 "Stop the background instance started by --start (exit 0, also when none runs)")
      ->excludes(start);
  tegra->callback(
      [&registry, tf] { registry.run = [&registry, tf] { return RunTegrastats(registry, *tf); }; });
}

}  // namespace edgemon::cli
