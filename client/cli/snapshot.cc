// edgemon now: one snapshot (a table grouped by kind, or JSON), with the
// diagnostics: rail headroom, clocks capped by the power mode, active events.
// edgemon sensors: the inventory with units, limits, parents and flags.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/cli/cli.h"
#include "client/cli/session.h"
#include "edgemon/diagnostics.h"
#include "edgemon/render.h"

namespace edgemon::cli {
namespace {

struct SnapshotOptions {
  bool json = false;
  std::vector<std::string> channels;
};

std::string FlagList(const Channel& c) {
  std::string out;
  auto add = [&out](const char* s) { out += out.empty() ? s : std::string(",") + s; };
  if (c.Has(kFlagInputRail)) add("input");
  if (c.Has(kFlagConstant)) add("constant");
  if (c.Has(kFlagCounter)) add("counter");
  if (c.Has(kFlagDerived)) add("derived");
  return out;
}

std::string Limits(const Channel& c) {
  std::string out;
  auto add = [&](const char* what, const std::optional<int64_t>& v) {
    if (!v) return;
    if (!out.empty()) out += ' ';
    out += std::string(what) + " " + CompactValue(c, v);
  };
  add("min", c.min);
  add("max", c.max);
  add("crit", c.crit);
  for (const auto& t : c.trips) {
    if (!out.empty()) out += ' ';
    out += (t.type.empty() ? std::string("trip") : TerminalSafe(t.type)) + " " +
           CompactValue(c, t.temp_mc);
  }
  return out;
}

int RunNow(const Registry& registry, const SnapshotOptions& o) {
  int rc = kExitOk;
  auto session = OpenSession(registry.globals, &rc);
  if (!session) return rc;
  const auto ids = SelectOrReport("now", session->info.inventory, SplitList(o.channels));
  if (!ids) return kExitUsage;
  // The frame and when its event counters last rose, in one call (the
  // daemon reads its own store for those).
  auto latest = session->client->Latest(
      o.channels.empty() ? std::vector<std::string>{} : KeysOf(session->info.inventory, *ids),
      true);
  if (!latest.ok()) return ReportStatus("now", latest.status());
  if (latest->generation != session->info.generation) {  // the daemon restarted in between
    auto info = session->client->DeviceInfo();
    if (!info.ok()) return ReportStatus("now", info.status());
    session->info = std::move(info).value();
  }
  const Inventory inv = Subset(session->info.inventory, *ids);
  std::string out;
  std::vector<std::pair<const Channel*, int64_t>> last;  // the rises, of channels shown
  for (const auto& [id, at] : latest->last_rises) {
    for (const Channel& c : inv.channels) {
      if (c.id == id) last.emplace_back(&c, at);
    }
  }
  if (o.json) {
    nlohmann::json j = ToJson(inv, latest->frame, {});
    j["diagnostics"] = DiagnosticsJson(inv, latest->frame);
    nlohmann::json events = nlohmann::json::array();
    for (const auto& [c, at] : last) events.push_back({{"key", c->Key()}, {"realtime_ns", at}});
    j["diagnostics"]["last_events"] = std::move(events);
    out = JsonText(j, 2) + "\n";
  } else {
    out = RenderTable(inv, latest->frame, {});
    auto lines = DiagnosticLines(inv, latest->frame);
    for (const auto& [c, at] : last) {
      lines.push_back("last " + std::string(c->field == Field::kTime ? "throttling" : "event") +
                      ": " + TerminalSafe(c->name) + " at " + LocalTime(at));
    }
    if (!lines.empty()) out += "\n[diagnostics]\n";
    for (const auto& l : lines) out += "  " + l + "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitCantCreate;
}

// The push destinations (DeviceInfo.push): JSON with null for what is
// unknown, or a line each with "—" for it.
nlohmann::json PushJson(const std::vector<client::PushStatus>& push) {
  nlohmann::json out = nlohmann::json::array();
  auto opt = [](const std::optional<int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  for (const auto& p : push) {
    out.push_back({{"destination", p.destination},
                   {"protocol", p.protocol},
                   {"backlog_frames", opt(p.backlog_frames)},
                   {"backlog_age_ns", opt(p.backlog_age_ns)},
                   {"last_success_ns", opt(p.last_success_ns)},
                   {"last_error_ns", opt(p.last_error_ns)},
                   {"last_error", p.last_error},
                   {"failing_since_ns", opt(p.failing_since_ns)},
                   {"stalled", p.stalled},
                   {"samples_sent", p.samples_sent},
                   {"samples_retried", p.samples_retried},
                   {"samples_failed", p.samples_failed}});
  }
  return out;
}

std::string PushText(const std::vector<client::PushStatus>& push) {
  const std::string none = "—";
  auto when = [&](const std::optional<int64_t>& t) { return t ? LocalTime(*t, false) : none; };
  std::string out;
  for (const auto& p : push) {
    out += "push:   " + TerminalSafe(p.destination) + " (" + TerminalSafe(p.protocol) +
           "): backlog " +
           (p.backlog_frames ? std::to_string(*p.backlog_frames) + " frames" : none);
    if (p.backlog_frames && *p.backlog_frames > 0 && p.backlog_age_ns) {
      out += fmt::format(" (oldest {:.1f} s)", static_cast<double>(*p.backlog_age_ns) / 1e9);
    }
    out += ", last success " + when(p.last_success_ns);
    if (p.failing_since_ns) {
      out += std::string(p.stalled ? ", STALLED" : ", failing") + " since " +
             when(p.failing_since_ns) + ": " + TerminalSafe(p.last_error);
    }
    out += "\n";
  }
  return out;
}

int RunSensors(const Registry& registry, const SnapshotOptions& o) {
  int rc = kExitOk;
  auto session = OpenSession(registry.globals, &rc);
  if (!session) return rc;
  const auto ids = SelectOrReport("sensors", session->info.inventory, SplitList(o.channels));
  if (!ids) return kExitUsage;
  const Inventory inv = Subset(session->info.inventory, *ids);
  std::string out;
  if (o.json) {
    nlohmann::json j = ToJson(inv, Frame{}, {});
    j.erase("values");
    j.erase("seq");
    j.erase("boottime_ns");
    j.erase("realtime_ns");
    for (auto& c : j["channels"]) {
      c.erase("value");
      c.erase("errors");
      c["key"] =
          std::string(c["kind"]) + "/" + std::string(c["name"]) + "/" + std::string(c["field"]);
    }
    j["daemon"] = {{"version", session->info.daemon_version},
                   {"interval_ms", session->info.interval_ms},
                   {"energy_rate_hz", session->info.energy_rate_hz},
                   {"api_version", session->info.api_version},
                   {"push", PushJson(session->info.push)}};
    out = JsonText(j, 2) + "\n";
  } else {
    const BoardInfo& b = inv.board;
    out += "board:  " + (b.model.empty() ? std::string("(unknown)") : TerminalSafe(b.model));
    if (!b.soc.empty()) out += " (" + TerminalSafe(b.soc) + ")";
    if (!b.l4t.empty()) out += ", L4T " + TerminalSafe(b.l4t);
    out += "\ndaemon: edgemond " + TerminalSafe(session->info.daemon_version) + ", every " +
           std::to_string(session->info.interval_ms) + " ms, energy at " +
           std::to_string(session->info.energy_rate_hz) + " Hz\n";
    out += PushText(session->info.push);
    for (int k = 0; k <= static_cast<int>(kLastKind); ++k) {
      const Kind kind = static_cast<Kind>(k);
      bool header = false;
      for (const Channel& c : inv.channels) {
        if (c.kind != kind) continue;
        if (!header) {
          out += "\n[" + std::string(ToString(kind)) + "]\n";
          out += fmt::format("  {:<36} {:<8} {:<26} {}\n", "CHANNEL", "UNIT", "SOURCE",
                             "LIMITS / PARENT / FLAGS");
          header = true;
        }
        std::string extra = Limits(c);
        if (!c.parent.empty()) {
          extra += (extra.empty() ? "" : "  ") + std::string("< ") + TerminalSafe(c.parent);
        }
        if (std::string f = FlagList(c); !f.empty()) {
          extra += (extra.empty() ? "" : "  ") + std::string("[") + f + "]";
        }
        // Names, devices and limits come from sysfs: escaped before padding.
        std::string l = fmt::format("  {:<36} {:<8} {:<26} {}", TerminalSafe(c.Key()),
                                    ToString(c.unit), TerminalSafe(c.device), extra);
        while (!l.empty() && l.back() == ' ') l.pop_back();
        out += l + "\n";
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitCantCreate;
}

}  // namespace

void AddSnapshotCommands(CLI::App& app, Registry& registry) {
  auto now_opts = std::make_shared<SnapshotOptions>();
  CLI::App* now = app.add_subcommand("now", "Print one snapshot of every channel, grouped by kind");
  now->add_flag("--json", now_opts->json, "JSON for scripts (board, channels, values by key)");
  now->add_option("--channels", now_opts->channels,
                  "Only these channels: keys, ids or globs (rail/*, */power), comma-separated")
      ->delimiter(',');
  now->callback([&registry, now_opts] {
    registry.run = [&registry, now_opts] { return RunNow(registry, *now_opts); };
  });

  auto sensors_opts = std::make_shared<SnapshotOptions>();
  CLI::App* sensors =
      app.add_subcommand("sensors", "List the daemon's channels with units, limits and flags");
  sensors->add_flag("--json", sensors_opts->json, "JSON for scripts");
  sensors
      ->add_option("--channels", sensors_opts->channels,
                   "Only these channels: keys, ids or globs, comma-separated")
      ->delimiter(',');
  sensors->callback([&registry, sensors_opts] {
    registry.run = [&registry, sensors_opts] { return RunSensors(registry, *sensors_opts); };
  });
}

}  // namespace edgemon::cli
