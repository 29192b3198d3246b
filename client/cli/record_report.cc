// The rail tree, the text summary and summary.json of edgemon record/attach.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "client/cli/record_report.h"
#include "edgemon/rail_tree.h"

namespace edgemon::cli::record {

namespace {

const Channel* FindChannel(const Inventory& inv, Field field, std::string_view name,
                           std::initializer_list<Kind> kinds) {
  for (const auto& c : inv.channels) {
    if (c.field != field || c.name != name) continue;
    for (Kind k : kinds) {
      if (c.kind == k) return &c;
    }
  }
  return nullptr;
}

// A measured figure divided by `per`, or null when it was not measured:
// missing is never 0.
nlohmann::json Scaled(std::optional<double> v, double per) {
  return v ? nlohmann::json(*v / per) : nlohmann::json(nullptr);
}
// The same as table text: "—" when not measured.
std::string FixedOr(std::optional<double> v, double per, int decimals) {
  return v ? Fixed(*v / per, decimals) : "—";
}
std::optional<double> Real(std::optional<int64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

// "cpu0".."cpu3" -> "cpu0-3"; other names joined by ",".
std::string JoinNames(const std::vector<std::string>& names) {
  if (names.size() == 1) return names[0];
  auto split = [](const std::string& n) -> std::optional<std::pair<std::string, int>> {
    size_t i = n.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(n[i - 1]))) --i;
    if (i == n.size() || i == 0 || n.size() - i > 6) return std::nullopt;
    return std::make_pair(n.substr(0, i), std::stoi(n.substr(i)));
  };
  auto first = split(names.front());
  bool run = first.has_value();
  for (size_t k = 0; run && k < names.size(); ++k) {
    auto p = split(names[k]);
    run = p && p->first == first->first && p->second == first->second + static_cast<int>(k);
  }
  if (run) return names.front() + "-" + std::to_string(first->second + names.size() - 1);
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

nlohmann::json RailsJson(const std::vector<client::RailSummary>& rails) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rails) {
    nlohmann::json j = {{"name", r.name},
                        {"parent", r.parent},
                        {"input", r.input},
                        {"energy_j", Scaled(r.energy_mj, 1000.0)},
                        {"avg_power_w", Scaled(r.avg_power_mw, 1000.0)}};
    // No sample in the range: no peak (absent, never 0).
    if (r.peak_power_mw) j["peak_power_w"] = static_cast<double>(*r.peak_power_mw) / 1000.0;
    out.push_back(std::move(j));
  }
  return out;
}

// The energy line of a phase: the input rail's, else each top-level rail's.
std::string PhaseEnergy(const client::Summary& s) {
  if (auto total = TotalEnergyMj(s.rails)) {
    return Fixed(*total / 1000.0, 3) + " J  " +
           Fixed(s.duration_s > 0 ? *total / s.duration_s / 1000.0 : 0, 3) + " W";
  }
  std::string out;
  for (const auto& row : RailTree(s.rails, s.duration_s)) {
    if (row.depth != 0) continue;
    out += (out.empty() ? "" : ", ") + row.name + " " + FixedOr(row.energy_mj, 1000.0, 3) + " J";
  }
  return out.empty() ? "no rail energy" : out;
}

}  // namespace

std::string Fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    bool zero = s.find_first_not_of("-0.") == std::string::npos;
    if (zero) s.erase(0, 1);
  }
  return s;
}

std::vector<RailRow> RailTree(const std::vector<client::RailSummary>& rails, double duration_s) {
  auto avg = [&](std::optional<double> mj) -> std::optional<double> {
    if (!mj || duration_s <= 0) return std::nullopt;
    return *mj / duration_s;
  };
  std::vector<RailLink> links;
  for (const auto& r : rails) links.push_back({r.name, r.parent, r.input});
  std::vector<RailRow> out;
  WalkRailTree(
      links,
      [&](size_t i, int depth) {
        const auto& r = rails[i];
        out.push_back(
            {r.name, depth, r.input, false, r.energy_mj, r.avg_power_mw, r.peak_power_mw});
      },
      [&](size_t i, int depth, const std::vector<size_t>& children) {
        if (children.empty()) return;
        std::optional<double> sum = 0.0;  // none when a sub-rail was not measured
        for (size_t c : children) {
          sum = sum && rails[c].energy_mj ? std::optional<double>(*sum + *rails[c].energy_mj)
                                          : std::nullopt;
        }
        const auto& r = rails[i];
        std::optional<double> rest =
            r.energy_mj && sum ? std::optional<double>(*r.energy_mj - *sum) : std::nullopt;
        out.push_back({"other (" + r.name + " - sub-rails)", depth + 1, false, true, rest,
                       avg(rest), std::nullopt});
      });
  return out;
}

nlohmann::json RailTreeJson(const std::vector<client::RailSummary>& rails, double duration_s) {
  nlohmann::json tree = nlohmann::json::array();
  for (const auto& r : RailTree(rails, duration_s)) {
    tree.push_back({{"name", r.name},
                    {"depth", r.depth},
                    {"input", r.input},
                    {"remainder", r.remainder},
                    {"energy_j", Scaled(r.energy_mj, 1000.0)},
                    {"avg_power_w", Scaled(r.avg_power_mw, 1000.0)}});
  }
  return tree;
}

std::optional<double> TotalEnergyMj(const std::vector<client::RailSummary>& rails) {
  std::optional<double> total;
  bool seen = false;
  for (const auto& r : rails) {
    if (!r.input) continue;
    if (seen) return std::nullopt;  // two inputs: not one board total
    seen = true;
    total = r.energy_mj;  // none when the input rail's energy was not measured
  }
  return total;
}

std::vector<ResidencyRow> GroupResidency(const std::vector<client::FreqResidency>& residency,
                                         const Inventory& inventory) {
  std::vector<ResidencyRow> out;
  std::vector<std::vector<std::string>> members;
  for (const auto& r : residency) {
    int64_t max_khz = 0;
    if (const Channel* c =
            FindChannel(inventory, Field::kFreq, r.name, {Kind::kCpu, Kind::kGpu, Kind::kEmc});
        c && c->max) {
      max_khz = *c->max;
    }
    for (const auto& [khz, share] : r.khz_share) max_khz = std::max(max_khz, khz);
    double below = 0;
    for (const auto& [khz, share] : r.khz_share) {
      if (khz < max_khz) below += share;
    }
    bool merged = false;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].khz_share == r.khz_share && out[i].max_khz == max_khz) {
        members[i].push_back(r.name);
        merged = true;
        break;
      }
    }
    if (!merged) {
      out.push_back({r.name, r.khz_share, max_khz, below});
      members.push_back({r.name});
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].names = JoinNames(members[i]);
  return out;
}

std::vector<std::string> ThermalTrips(const std::vector<client::TempSummary>& temps,
                                      const Inventory& inventory) {
  std::vector<std::string> out;
  for (const auto& t : temps) {
    const Channel* c = FindChannel(inventory, Field::kTemp, t.name, {Kind::kThermal});
    if (!c || !c->max || t.max_mc < *c->max) continue;
    out.push_back(t.name + " " + Fixed(static_cast<double>(t.max_mc) / 1000.0, 1) + " C >= trip " +
                  Fixed(static_cast<double>(*c->max) / 1000.0, 1) + " C");
  }
  return out;
}

std::string RateHz(double hz) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g Hz", hz);
  return buf;
}

std::string HeldRailRates(const client::Summary& s) {
  if (!s.min_rail_rate_hz || !s.max_rail_rate_hz) return "";
  if (*s.min_rail_rate_hz == *s.max_rail_rate_hz) return RateHz(*s.min_rail_rate_hz);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g to %g Hz", *s.min_rail_rate_hz, *s.max_rail_rate_hz);
  return buf;
}

namespace {

// The rail rate the uncertainty notes reckon with: the lowest that held, or
// (from a daemon that keeps no rate log) the boost or the configured rate.
uint32_t NotesRate(const Report& report) {
  if (report.summary.min_rail_rate_hz) {
    return static_cast<uint32_t>(std::max(1.0, std::floor(*report.summary.min_rail_rate_hz)));
  }
  return std::max(report.boost_rate_hz, report.energy_rate_hz);
}

}  // namespace

std::vector<std::string> UncertaintyNotes(const client::Summary& summary, uint32_t interval_ms,
                                          uint32_t energy_rate_hz) {
  std::vector<std::string> out;
  if (!summary.note.empty()) out.push_back(summary.note);
  double period_s = energy_rate_hz > 0 ? 1.0 / energy_rate_hz : interval_ms / 1000.0;
  if (period_s > 0 && summary.duration_s < 50 * period_s) {
    out.push_back("short run: " + Fixed(summary.duration_s, 3) + " s is " +
                  Fixed(summary.duration_s / period_s, 1) + " rail sampling periods (" +
                  Fixed(period_s * 1000, 1) +
                  " ms); energy edges and peaks are uncertain below 50 periods (use --rate or a "
                  "longer run)");
  }
  if (summary.gaps > 0) {
    out.push_back(std::to_string(summary.gaps) +
                  " frames missing in the range: energy is not bridged over gaps longer than the "
                  "daemon's limit");
  }
  // Frames the store should hold for the range at the frame period.
  if (interval_ms > 0 && summary.duration_s >= 1.0 &&
      summary.duration_s * 1000 >= 5.0 * interval_ms) {
    double expected = summary.duration_s * 1000.0 / interval_ms;
    if (static_cast<double>(summary.samples) < 0.8 * expected) {
      out.push_back("the store holds " + std::to_string(summary.samples) + " frames for this " +
                    Fixed(summary.duration_s, 3) + " s range, about " + Fixed(expected, 0) +
                    " expected at " + std::to_string(interval_ms) +
                    " ms: part of it was not sampled or not stored (daemon stopped?); the "
                    "energy covers the stored part only");
    }
  }
  if (summary.requested_from_ns) {
    out.push_back(
        "the range was clipped: it starts " +
        Fixed(static_cast<double>(summary.from_ns - *summary.requested_from_ns) / 1e9, 3) +
        " s before the oldest data the daemon holds; measured from there");
  }
  if (summary.requested_to_ns) {
    out.push_back("the range was clipped: it ends " +
                  Fixed(static_cast<double>(*summary.requested_to_ns - summary.to_ns) / 1e9, 3) +
                  " s in the future; measured up to now");
  }
  for (auto& w : ResidualWarnings(summary.rails)) out.push_back(std::move(w));
  if (summary.rails.empty()) out.push_back("no rail energy in this range (no power rails stored)");
  return out;
}

std::vector<std::string> ResidualWarnings(const std::vector<client::RailSummary>& rails) {
  std::vector<std::string> out;
  for (const auto& parent_rail : rails) {
    if (!parent_rail.energy_mj) continue;  // not measured: nothing to compare with
    const auto& parent = parent_rail;
    const double parent_mj = *parent.energy_mj;
    double children = 0;
    size_t n = 0;
    bool measured = true;
    for (const auto& c : rails) {
      if (c.parent != parent.name || c.name == parent.name) continue;
      if (!c.energy_mj) measured = false;
      children += c.energy_mj.value_or(0.0);
      ++n;
    }
    if (!measured) continue;  // a sub-rail without a figure: no sum to compare
    const double excess = children - parent_mj;
    if (n == 0 || excess <= 0) continue;
    const double tolerance = kRailTolerance * std::max(parent_mj, children);
    const std::string share = Fixed(parent_mj > 0 ? 100.0 * excess / parent_mj : 100.0, 1) + " %";
    const std::string limit = Fixed(kRailTolerance * 100, 0) + " %";
    if (excess <= tolerance) {
      out.push_back("sub-rails of " + parent.name + " read " + Fixed(excess / 1000.0, 3) + " J (" +
                    share + ") more than " + parent.name + ": within the sensors' tolerance (" +
                    limit + "), so the negative \"other\" row is measurement error");
    } else {
      out.push_back("Warning: sub-rails of " + parent.name + " sum to " +
                    Fixed(children / 1000.0, 3) + " J, " + Fixed(excess / 1000.0, 3) + " J (" +
                    share + ") more than " + parent.name + " itself (" +
                    Fixed(parent_mj / 1000.0, 3) + " J), beyond the sensors' tolerance (" + limit +
                    "): a rail is miscalibrated or mislabelled; its \"other\" row is not "
                    "meaningful");
    }
  }
  return out;
}

bool IsClockChannel(const Channel& c) {
  return c.field == Field::kFreq &&
         (c.kind == Kind::kCpu || c.kind == Kind::kGpu || c.kind == Kind::kEmc);
}

std::string MissingClocksWhy(const client::Summary& summary, const Inventory& inventory,
                             uint32_t interval_ms) {
  if (std::none_of(inventory.channels.begin(), inventory.channels.end(), IsClockChannel))
    return "no CPU, GPU or EMC frequency channel on this board";
  if (summary.samples == 0) {
    return "no frame stored in this range: clocks are read with the frames" +
           (interval_ms ? ", every " + std::to_string(interval_ms) + " ms" : std::string());
  }
  return "none of the " + std::to_string(summary.samples) +
         " frames in this range holds a clock reading (the frequency files could not be read)";
}

std::string RenderSummary(const Report& report, const Inventory& inventory) {
  std::ostringstream o;
  const client::Summary& s = report.summary;
  o << "edgemon " << report.mode << ": " << (report.label.empty() ? "(no label)" : report.label);
  if (report.window_id) o << " (window " << report.window_id << ")";
  if (!report.board_model.empty()) o << " on " << report.board_model;
  o << "\n";
  if (!report.command.empty()) {
    std::string cmd;
    for (const auto& a : report.command) cmd += (cmd.empty() ? "" : " ") + a;
    o << "  command   " << cmd;
    if (report.signal) {
      o << "  -> killed by signal " << *report.signal;
    } else if (report.exit_code) {
      o << "  -> exit " << *report.exit_code;
    }
    o << "\n";
  }
  double run_s = static_cast<double>(report.run_end_ns - report.run_start_ns) / 1e9;
  o << "  duration  " << Fixed(run_s, 3) << " s  (" << UtcTime(report.run_start_ns) << " .. "
    << UtcTime(report.run_end_ns) << ")\n";
  if (report.power_mode_id || report.clocks_locked) {
    o << "  board     power mode "
      << (report.power_mode_id
              ? std::to_string(*report.power_mode_id) +
                    (report.power_mode_name.empty() ? "" : " (" + report.power_mode_name + ")")
              : std::string("—"))
      << ", clocks "
      << (report.clocks_locked                ? (*report.clocks_locked ? "locked" : "not locked")
          : report.clocks_unknown_why.empty() ? "—"
                                              : "— (" + report.clocks_unknown_why + ")")
      << "\n";
  }
  if (report.pre_s > 0 || report.post_s > 0) {
    o << "  measured  " << Fixed(s.duration_s, 3) << " s: " << Fixed(report.pre_s, 3)
      << " s before the run and " << Fixed(report.post_s, 3) << " s after it\n";
  }

  auto rows = RailTree(s.rails, s.duration_s);
  if (!rows.empty()) {
    size_t width = 10;
    for (const auto& r : rows) width = std::max(width, r.name.size() + 2 * r.depth + 2);
    o << "\n"
      << fmt::format("{:<{}}{:>11}{:>10}{:>10}\n", "Energy", width + 2, "J", "avg W", "peak W");
    for (const auto& r : rows) {
      o << "  " << fmt::format("{:<{}}", std::string(2 * r.depth, ' ') + r.name, width)
        << fmt::format("{:>11}", FixedOr(r.energy_mj, 1000.0, 3))
        << fmt::format("{:>10}", FixedOr(r.avg_power_mw, 1000.0, 3))
        << fmt::format("{:>10}", r.peak_power_mw
                                     ? Fixed(static_cast<double>(*r.peak_power_mw) / 1000.0, 3)
                                     : "")
        << (r.input ? "  (board input)" : "") << "\n";
    }
    if (auto total = TotalEnergyMj(s.rails)) {
      std::string input;
      for (const auto& r : s.rails) {
        if (r.input) input = r.name;
      }
      o << "  total: " << Fixed(*total / 1000.0, 3) << " J, the board input rail " << input
        << " (sub-rails are part of it, not added)\n";
    } else {
      o << "  no board input rail here: the rails are separate measurements, not a total\n";
    }
  }

  if (report.items && *report.items > 0) {
    double items = *report.items;
    o << "\nPer item (" << Fixed(items, items == std::floor(items) ? 0 : 3) << " items, "
      << report.items_source << ")\n";
    if (auto total = TotalEnergyMj(s.rails)) {
      o << "  " << Fixed(*total / items, 3) << " mJ/item, "
        << Fixed(*total > 0 ? items / (*total / 1000.0) : 0, 3) << " items/J\n";
    } else {
      for (const auto& r : rows) {
        if (r.depth != 0) continue;
        o << "  " << r.name << ": " << FixedOr(r.energy_mj, items, 3) << " mJ/item\n";
      }
    }
  } else if (report.items) {
    o << "\nPer item: no items counted (" << report.items_source << ")\n";
  }

  if (!report.phases.empty()) {
    o << "\nPhases (edgemon mark)\n";
    for (const auto& p : report.phases) {
      double dur = static_cast<double>(p.end_ns.value_or(report.run_end_ns) - p.start_ns) / 1e9;
      o << "  " << fmt::format("{:<16}", p.name) << fmt::format("{:>11}", Fixed(dur, 3) + " s")
        << "  " << (p.summary ? PhaseEnergy(*p.summary) : "no summary")
        << (p.end_ns ? "" : "  (not ended)") << "\n";
    }
  }

  if (!s.temps.empty()) {
    o << "\nTemperatures (C)     start    min    max\n";
    for (const auto& t : s.temps) {
      o << fmt::format("  {:<18}{:>6}{:>7}{:>7}\n", t.name, FixedOr(Real(t.start_mc), 1000.0, 1),
                       Fixed(static_cast<double>(t.min_mc) / 1000.0, 1),
                       Fixed(static_cast<double>(t.max_mc) / 1000.0, 1));
    }
  }

  auto groups = GroupResidency(s.residency, inventory);
  if (!groups.empty()) {
    o << "\nClocks (share of samples at each frequency)\n";
    for (const auto& g : groups) {
      auto shares = g.khz_share;
      std::stable_sort(shares.begin(), shares.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      std::string line;
      for (size_t i = 0; i < shares.size() && i < 3; ++i) {
        line += (line.empty() ? "" : ", ") + Fixed(shares[i].second * 100, 0) + "% " +
                Fixed(static_cast<double>(shares[i].first) / 1000.0, 0) + " MHz";
      }
      if (shares.size() > 3) line += ", ...";
      o << "  " << fmt::format("{:<12}", g.names) << line << "  (below max "
        << Fixed(static_cast<double>(g.max_khz) / 1000.0, 0)
        << " MHz: " << Fixed(g.below_max_share * 100, 0) << "%)\n";
    }
  } else {
    o << "\nClocks      — (" << MissingClocksWhy(s, inventory, report.interval_ms) << ")\n";
  }
  auto trips = ThermalTrips(s.temps, inventory);
  if (!report.throttled.empty()) {
    o << "  thermal throttling: " << report.throttled << " (cooling device counters)\n";
  }
  if (!groups.empty() || !s.temps.empty()) {
    if (trips.empty()) {
      if (report.throttled.empty()) {
        o << "  thermal throttling: no zone reached its passive/hot trip point\n";
      }
    } else {
      for (const auto& t : trips) o << "  thermal throttling likely: " << t << "\n";
    }
  }

  if (!s.loads.empty()) {
    o << "\nLoad (%)             mean   peak\n";
    for (const auto& l : s.loads) {
      o << fmt::format("  {:<18}{:>6}{:>7}\n", l.name, Fixed(l.mean_permille / 10.0, 1),
                       Fixed(static_cast<double>(l.peak_permille) / 10.0, 1));
    }
  }
  o << "\nSamples   " << s.samples << " frames";
  if (report.interval_ms) o << " every " << report.interval_ms << " ms";
  // The rates that held over the range, never the one asked for.
  if (std::string held = HeldRailRates(s); !held.empty()) o << ", rails integrated at " << held;
  o << ", " << s.gaps << " gaps\n";
  for (const auto& n : UncertaintyNotes(s, report.interval_ms, NotesRate(report))) {
    o << "Note: " << n << "\n";
  }
  for (const auto& n : report.notes) o << "Note: " << n << "\n";
  return o.str();
}

nlohmann::json SummaryJson(const Report& report, const Inventory& inventory) {
  using nlohmann::json;
  const client::Summary& s = report.summary;
  json j;
  j["format"] = "edgemon-record";
  j["version"] = 1;
  j["mode"] = report.mode;
  j["label"] = report.label;
  j["command"] = report.command;
  j["exit_code"] = report.exit_code ? json(*report.exit_code) : json(nullptr);
  j["signal"] = report.signal ? json(*report.signal) : json(nullptr);
  j["target"] = report.target;
  j["board"] = report.board_model;
  j["daemon_version"] = report.daemon_version;
  j["interval_ms"] = report.interval_ms;
  j["energy_rate_hz"] = report.energy_rate_hz;
  j["boost_rate_hz"] = report.boost_rate_hz;
  j["power_mode"] = report.power_mode_id
                        ? json{{"id", *report.power_mode_id}, {"name", report.power_mode_name}}
                        : json(nullptr);
  j["clocks_locked"] = report.clocks_locked ? json(*report.clocks_locked) : json(nullptr);
  j["rail_rate_hz"] = s.min_rail_rate_hz && s.max_rail_rate_hz
                          ? json{{"min", *s.min_rail_rate_hz}, {"max", *s.max_rail_rate_hz}}
                          : json(nullptr);
  j["window"] = report.window_id ? json{{"id", report.window_id},
                                        {"start_ns", report.run_start_ns},
                                        {"end_ns", report.run_end_ns}}
                                 : json(nullptr);
  j["run"] = {{"start_ns", report.run_start_ns},
              {"end_ns", report.run_end_ns},
              {"duration_s", static_cast<double>(report.run_end_ns - report.run_start_ns) / 1e9}};
  j["range"] = {{"from_ns", s.from_ns},
                {"to_ns", s.to_ns},
                {"duration_s", s.duration_s},
                {"pre_s", report.pre_s},
                {"post_s", report.post_s}};
  j["rails"] = RailsJson(s.rails);
  j["rail_tree"] = RailTreeJson(s.rails, s.duration_s);
  auto total = TotalEnergyMj(s.rails);
  j["total_energy_j"] = total ? json(*total / 1000.0) : json(nullptr);
  std::string input;
  for (const auto& r : s.rails) {
    if (r.input) input = r.name;
  }
  j["total_rail"] = total ? json(input) : json(nullptr);
  // Where the total is read (an INA sensor, RAPL, ...): the MLPerf report's method.
  json device = nullptr;
  for (const auto& c : inventory.channels) {
    if (total && c.kind == Kind::kRail && c.name == input && !c.device.empty()) device = c.device;
  }
  j["total_rail_device"] = device;
  json temps = json::array();
  for (const auto& t : s.temps) {
    temps.push_back({{"name", t.name},
                     {"start_c", Scaled(Real(t.start_mc), 1000.0)},
                     {"min_c", static_cast<double>(t.min_mc) / 1000.0},
                     {"max_c", static_cast<double>(t.max_mc) / 1000.0}});
  }
  j["temps"] = temps;
  json res = json::array();
  for (const auto& r : s.residency) {
    json shares = json::array();
    for (const auto& [khz, share] : r.khz_share) shares.push_back({khz, share});
    res.push_back({{"name", r.name}, {"khz_share", shares}});
  }
  j["residency"] = res;
  json loads = json::array();
  for (const auto& l : s.loads) {
    loads.push_back({{"kind", l.kind},
                     {"name", l.name},
                     {"mean_percent", l.mean_permille / 10.0},
                     {"peak_percent", static_cast<double>(l.peak_permille) / 10.0}});
  }
  j["loads"] = loads;
  json groups = json::array();
  for (const auto& g : GroupResidency(s.residency, inventory)) {
    groups.push_back(
        {{"names", g.names}, {"max_khz", g.max_khz}, {"below_max_share", g.below_max_share}});
  }
  j["clocks_below_max"] = groups;
  j["thermal_trips"] = ThermalTrips(s.temps, inventory);
  j["throttled"] = report.throttled.empty() ? json(nullptr) : json(report.throttled);
  j["samples"] = s.samples;
  j["gaps"] = s.gaps;
  j["uncertainty"] = UncertaintyNotes(s, report.interval_ms, NotesRate(report));
  j["notes"] = report.notes;
  json phases = json::array();
  for (const auto& p : report.phases) {
    json pj = {{"name", p.name},
               {"window_id", p.window_id},
               {"start_ns", p.start_ns},
               {"end_ns", p.end_ns ? json(*p.end_ns) : json(nullptr)}};
    if (p.summary) {
      pj["duration_s"] = p.summary->duration_s;
      pj["rails"] = RailsJson(p.summary->rails);
      auto pt = TotalEnergyMj(p.summary->rails);
      pj["total_energy_j"] = pt ? json(*pt / 1000.0) : json(nullptr);
      pj["samples"] = p.summary->samples;
    }
    phases.push_back(pj);
  }
  j["phases"] = phases;
  if (report.items) {
    double items = *report.items;
    json ij = {{"count", items}, {"source", report.items_source}};
    json by_rail = json::object();
    for (const auto& r : s.rails) {
      by_rail[r.name] = items > 0 ? Scaled(r.energy_mj, 1000.0 * items) : json(nullptr);
    }
    ij["energy_j_per_item_by_rail"] = by_rail;
    if (total && items > 0) {
      ij["energy_j_per_item"] = *total / 1000.0 / items;
      ij["items_per_j"] = *total > 0 ? json(items / (*total / 1000.0)) : json(nullptr);
    } else {
      ij["energy_j_per_item"] = nullptr;
      ij["items_per_j"] = nullptr;
    }
    j["items"] = ij;
  } else {
    j["items"] = nullptr;
  }
  return j;
}

std::string UtcTime(int64_t ns) {
  std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  int ms = static_cast<int>((ns % 1'000'000'000) / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

std::string MarkLabel(int64_t parent, std::string_view name) {
  return std::to_string(parent) + ":" + std::string(name);
}

std::optional<std::string> MarkName(std::string_view label, int64_t parent) {
  std::string prefix = std::to_string(parent) + ":";
  if (label.size() <= prefix.size() || label.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  return std::string(label.substr(prefix.size()));
}

}  // namespace edgemon::cli::record
