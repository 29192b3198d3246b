// edgemon query: history from the daemon's ring store, as a table, CSV or
// JSON. Raw frames by default; --step gives min/avg/max per bucket.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/cli/cli.h"
#include "client/cli/session.h"
#include "edgemon/checked.h"
#include "edgemon/clock.h"
#include "edgemon/render.h"
#include "edgemon/timespec.h"

namespace edgemon::cli {
namespace {

struct QueryFlags {
  std::string since;
  std::string until;
  std::string last;
  std::string step;
  std::vector<std::string> channels;
  uint32_t limit = 0;
  std::string format = "table";
};

constexpr size_t kWideColumns = 6;  // a table with more channels is printed long

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// The unit a channel's values are shown in, and the divisor from its own
// unit: one per channel, so min, avg and max of a row never mix W and mW.
struct DisplayUnit {
  const char* name;
  double divisor;
  int decimals;
};
DisplayUnit DisplayOf(const Channel& c) {
  switch (c.unit) {
    case Unit::kMilliwatt:
      return {"W", 1000, 3};
    case Unit::kMillivolt:
      return {"V", 1000, 3};
    case Unit::kMilliamp:
      return {"A", 1000, 3};
    case Unit::kMillijoule:
      return {"J", 1000, 3};
    case Unit::kMilliCelsius:
      return {"C", 1000, 2};
    case Unit::kKhz:
      return {"MHz", 1000, 1};
    case Unit::kPermille:
      return {"%", 10, 2};
    case Unit::kKib:
      return {"MiB", 1024, 1};
    case Unit::kRpm:
      return {"rpm", 1, 1};
    default:
      return {"", 1, 3};
  }
}
std::string InUnit(const DisplayUnit& u, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", u.decimals, v / u.divisor);
  return buf;
}

// A CSV column header: the channel's key and its unit ("rail/VDD_IN/power (mW)").
std::string CsvHeader(const Channel& c) {
  std::string_view unit = ToString(c.unit);
  return CsvField(c.Key() +
                  (c.unit == Unit::kNone || unit.empty() ? "" : " (" + std::string(unit) + ")"));
}

int Emit(const std::string& out) {
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitCantCreate;
}

std::string RenderFrames(const Inventory& inv, const std::vector<ChannelId>& selected,
                         bool all_selected, const client::QueryResult& r, const QueryFlags& f) {
  // With every channel selected, columns that have no value in the range are left out.
  std::vector<const Channel*> cols;
  for (ChannelId id : selected) {
    bool any = !all_selected;
    for (size_t i = 0; i < r.frames.size() && !any; ++i) any = r.frames[i].Get(id).has_value();
    if (any) cols.push_back(&inv.channels[id]);
  }
  std::string out;
  if (f.format == "csv") {
    out += "time,realtime_ns";
    for (const Channel* c : cols) out += "," + CsvHeader(*c);
    out += "\n";
    for (const Frame& fr : r.frames) {
      out += LocalTime(fr.realtime_ns) + "," + std::to_string(fr.realtime_ns);
      for (const Channel* c : cols) {
        Value v = fr.Get(c->id);
        out += "," + (v ? std::to_string(*v) : std::string());
      }
      out += "\n";
    }
  } else if (f.format == "json") {
    nlohmann::json channels = nlohmann::json::object();
    for (const Channel* c : cols) channels[c->Key()] = {{"unit", ToString(c->unit)}};
    nlohmann::json frames = nlohmann::json::array();
    for (const Frame& fr : r.frames) {
      nlohmann::json values = nlohmann::json::object();
      for (const Channel* c : cols) {
        Value v = fr.Get(c->id);
        values[c->Key()] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
      }
      frames.push_back({{"seq", fr.seq},
                        {"realtime_ns", fr.realtime_ns},
                        {"boottime_ns", fr.boottime_ns},
                        {"values", std::move(values)}});
    }
    out = JsonText(nlohmann::json{{"channels", channels},
                                  {"frames", frames},
                                  {"truncated", r.truncated},
                                  {"bad_frames", r.bad_frames}},
                   2) +
          "\n";
  } else if (cols.size() <= kWideColumns) {
    std::vector<size_t> width;
    out += fmt::format("{:<24}", "TIME");
    for (const Channel* c : cols) {
      const std::string key = TerminalSafe(c->Key());  // names come from sysfs
      width.push_back(std::max<size_t>(key.size(), 12) + 2);
      out += fmt::format("{:<{}}", key, width.back());
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
    for (const Frame& fr : r.frames) {
      out += fmt::format("{:<24}", LocalTime(fr.realtime_ns));
      for (size_t i = 0; i < cols.size(); ++i) {
        out += fmt::format("{:<{}}", FormatValue(*cols[i], fr.Get(cols[i]->id)), width[i]);
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      out += "\n";
    }
  } else {
    // Keys escaped once (names come from sysfs), not once per frame.
    std::vector<std::string> keys;
    size_t key_width = 8;
    for (const Channel* c : cols) {
      keys.push_back(TerminalSafe(c->Key()));
      key_width = std::max(key_width, keys.back().size() + 2);
    }
    out += fmt::format("{:<24}{:<{}}VALUE\n", "TIME", "CHANNEL", key_width);
    for (const Frame& fr : r.frames) {
      const std::string t = LocalTime(fr.realtime_ns);
      for (size_t i = 0; i < cols.size(); ++i) {
        Value v = fr.Get(cols[i]->id);
        if (!v) continue;
        out += fmt::format("{:<24}{:<{}}{}\n", t, keys[i], key_width, FormatValue(*cols[i], v));
      }
    }
  }
  return out;
}

std::string RenderSeries(const Inventory& inv, const client::QueryResult& r, const QueryFlags& f) {
  std::string out;
  auto channel = [&](ChannelId id) -> const Channel* {
    return id < inv.channels.size() && !inv.channels[id].name.empty() ? &inv.channels[id] : nullptr;
  };
  if (f.format == "csv") {
    out += "time,realtime_ns,channel,unit,min,avg,max,count\n";
    for (const auto& s : r.series) {
      const Channel* c = channel(s.id);
      if (c == nullptr) continue;
      for (const auto& b : s.buckets) {
        out += LocalTime(b.t_ns) + "," + std::to_string(b.t_ns) + "," + CsvField(c->Key()) + "," +
               std::string(ToString(c->unit)) + "," + std::to_string(b.min) + "," + Number(b.avg) +
               "," + std::to_string(b.max) + "," + std::to_string(b.count) + "\n";
      }
    }
  } else if (f.format == "json") {
    nlohmann::json series = nlohmann::json::array();
    for (const auto& s : r.series) {
      const Channel* c = channel(s.id);
      if (c == nullptr) continue;
      nlohmann::json buckets = nlohmann::json::array();
      for (const auto& b : s.buckets) {
        buckets.push_back(
            {{"t_ns", b.t_ns}, {"min", b.min}, {"avg", b.avg}, {"max", b.max}, {"count", b.count}});
      }
      series.push_back({{"channel", c->Key()}, {"unit", ToString(c->unit)}, {"buckets", buckets}});
    }
    out = JsonText(
              nlohmann::json{
                  {"series", series}, {"truncated", r.truncated}, {"bad_frames", r.bad_frames}},
              2) +
          "\n";
  } else {
    size_t key_width = 8;
    for (const auto& s : r.series) {
      if (const Channel* c = channel(s.id)) {
        key_width = std::max(key_width, TerminalSafe(c->Key()).size() + 2);
      }
    }
    out += fmt::format("{:<24}{:<{}}{:<6}{:<14}{:<14}{:<14}N\n", "TIME", "CHANNEL", key_width,
                       "UNIT", "MIN", "AVG", "MAX");
    for (const auto& s : r.series) {
      const Channel* c = channel(s.id);
      if (c == nullptr) continue;
      const DisplayUnit u = DisplayOf(*c);
      const std::string key = TerminalSafe(c->Key());  // once per series, not per bucket
      for (const auto& b : s.buckets) {
        // Min, average and max in one unit, named once in the UNIT column.
        out += fmt::format("{:<24}{:<{}}{:<6}{:<14}{:<14}{:<14}{}\n", LocalTime(b.t_ns), key,
                           key_width, u.name, InUnit(u, static_cast<double>(b.min)),
                           InUnit(u, b.avg), InUnit(u, static_cast<double>(b.max)), b.count);
      }
    }
  }
  return out;
}

int RunQuery(const Registry& registry, const QueryFlags& f) {
  // The range, from `now`: checked here on this host's clock, then taken
  // again on the daemon's (its DeviceInfo.now_ns), so relative ranges are
  // on the frames' timeline whatever either wall clock did.
  int64_t from = 0;
  int64_t to = 0;
  auto range_at = [&](const int64_t now) -> int {
    to = now;
    if (!f.last.empty()) {
      auto d = PositiveDurationNs(f.last, "duration");
      if (!d.ok()) {
        std::fprintf(stderr, "edgemon query: --last: %s\n",
                     TerminalSafe(d.status().message()).c_str());
        return kExitDataErr;
      }
      from = SubSaturating(now, *d);  // --last longer than since 1677: from the start
    } else {
      const std::string since = f.since.empty() ? std::string("-10m") : f.since;
      auto t = ParseTimeNs(since, now);
      if (!t.ok()) {
        std::fprintf(stderr, "edgemon query: --since: %s\n",
                     TerminalSafe(t.status().message()).c_str());
        return kExitDataErr;
      }
      from = *t;
      if (!f.until.empty()) {
        auto u = ParseTimeNs(f.until, now);
        if (!u.ok()) {
          std::fprintf(stderr, "edgemon query: --until: %s\n",
                       TerminalSafe(u.status().message()).c_str());
          return kExitDataErr;
        }
        to = *u;
      }
    }
    if (to <= from) {
      std::fprintf(stderr, "edgemon query: the range is empty (--until is not after --since)\n");
      return kExitDataErr;
    }
    return kExitOk;
  };
  if (int bad = range_at(SystemClock().RealtimeNs()); bad != kExitOk) return bad;
  int64_t step = 0;
  if (!f.step.empty()) {
    auto s = PositiveDurationNs(f.step, "step");
    if (!s.ok()) {
      std::fprintf(stderr, "edgemon query: --step: %s\n",
                   TerminalSafe(s.status().message()).c_str());
      return kExitDataErr;
    }
    step = *s;
  }

  int rc = kExitOk;
  auto session = OpenSession(registry.globals, &rc);
  if (!session) return rc;
  if (session->info.now_ns) {
    if (int bad = range_at(*session->info.now_ns); bad != kExitOk) return bad;
  }
  const std::vector<std::string> patterns = SplitList(f.channels);
  const auto selected = SelectOrReport("query", session->info.inventory, patterns);
  if (!selected) return kExitUsage;
  const std::vector<ChannelId>& ids = *selected;
  client::QueryRequest req;
  req.from_ns = from;
  req.to_ns = to;
  req.step_ns = step;
  req.limit = f.limit;
  if (!patterns.empty()) req.channels = KeysOf(session->info.inventory, ids);
  auto result = session->client->Query(req);
  if (!result.ok()) return ReportStatus("query", result.status());
  if (result->truncated) {
    std::fprintf(stderr,
                 "edgemon query: the result was cut at the limit (%zu %s); narrow the range or "
                 "raise --limit\n",
                 step > 0 ? result->series.size() : result->frames.size(),
                 step > 0 ? "series" : "frames");
  }
  if (result->bad_frames > 0) {
    std::fprintf(stderr,
                 "edgemon query: warning: %llu stored frame(s) in this range could not be decoded "
                 "(a damaged store row) and were left out\n",
                 static_cast<unsigned long long>(result->bad_frames));
  }
  if (result->frames.empty() && result->series.empty()) {
    std::fprintf(stderr, "edgemon query: no data between %s and %s\n", LocalTime(from).c_str(),
                 LocalTime(to).c_str());
  }
  const Inventory& inv = session->info.inventory;
  return Emit(step > 0 ? RenderSeries(inv, *result, f)
                       : RenderFrames(inv, ids, patterns.empty(), *result, f));
}

}  // namespace

void AddQueryCommand(CLI::App& app, Registry& registry) {
  auto f = std::make_shared<QueryFlags>();
  CLI::App* q = app.add_subcommand("query", "Print history from the daemon's store");
  auto* since =
      q->add_option("--since", f->since, std::string("Start (default -10m): ") + kTimeSyntax);
  auto* until = q->add_option("--until", f->until, "End (default now)");
  q->add_option("--last", f->last, std::string("Up to now, the last DURATION: ") + kDurationSyntax)
      ->excludes(since)
      ->excludes(until);
  q->add_option("--channels", f->channels,
                "Only these channels: keys, ids or globs (rail/*, */power), comma-separated")
      ->delimiter(',');
  q->add_option("--step", f->step, "Downsample to min/avg/max per STEP (1s, 1m); default raw");
  q->add_option("--limit", f->limit, "At most N frames (default: the daemon's limit)");
  q->add_option("--format", f->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  q->callback([&registry, f] { registry.run = [&registry, f] { return RunQuery(registry, *f); }; });
}

}  // namespace edgemon::cli
