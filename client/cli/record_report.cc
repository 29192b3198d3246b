// The rail tree, the text summary and summary.json of edgemon record/attach.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
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

// The rails of a summary over `duration_s`; with a baseline each carries its
// energy above it.
nlohmann::json RailsJson(const std::vector<client::RailSummary>& rails, double duration_s,
                         const std::optional<Baseline>& baseline) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rails) {
    nlohmann::json j = {{"name", r.name},
                        {"parent", r.parent},
                        {"input", r.input},
                        {"energy_j", Scaled(r.energy_mj, 1000.0)},
                        {"avg_power_w", Scaled(r.avg_power_mw, 1000.0)}};
    // No sample in the range: no peak (absent, never 0).
    if (r.peak_power_mw) j["peak_power_w"] = static_cast<double>(*r.peak_power_mw) / 1000.0;
    if (baseline) {
      j["energy_above_baseline_j"] = Scaled(AboveBaselineMj(r, duration_s, *baseline), 1000.0);
    }
    out.push_back(std::move(j));
  }
  return out;
}

// The input rail's energy above the baseline (mJ): none without exactly one
// input rail, a baseline or a measurement.
std::optional<double> TotalAboveBaselineMj(const client::Summary& s,
                                           const std::optional<Baseline>& baseline) {
  if (!baseline || !TotalEnergyMj(s.rails)) return std::nullopt;
  for (const auto& r : s.rails) {
    if (r.input) return AboveBaselineMj(r, s.duration_s, *baseline);
  }
  return std::nullopt;
}

// A figure that may be missing, as JSON (null) and text ("—").
nlohmann::json OrNull(std::optional<double> v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
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

std::optional<double> Baseline::PowerMw(std::string_view rail) const {
  for (const auto& [name, mw] : rails_mw) {
    if (name == rail) return mw;
  }
  return std::nullopt;
}

std::optional<double> AboveBaselineMj(const client::RailSummary& rail, double duration_s,
                                      const Baseline& baseline) {
  auto mw = baseline.PowerMw(rail.name);
  if (!rail.energy_mj || !mw || !std::isfinite(duration_s) || duration_s < 0) return std::nullopt;
  return *rail.energy_mj - *mw * duration_s;
}

ItemBasis ItemsBasis(const Report& report) {
  ItemBasis b;
  if (!report.items_phase.empty()) {
    b.phase = report.items_phase;
    for (const auto& p : report.phases) {
      if (p.name != report.items_phase) continue;
      if (!p.summary) {
        b.why = "phase " + p.name + " has no summary";
        return b;
      }
      b.summary = &*p.summary;
      b.duration_s = p.summary->duration_s;
      return b;
    }
    b.why = "no phase named " + report.items_phase + " (edgemon mark begin/end " +
            report.items_phase + " inside the command)";
    return b;
  }
  b.summary = report.run_summary ? &*report.run_summary : &report.summary;
  b.duration_s = b.summary->duration_s;
  return b;
}

RunFigures FiguresOf(const Report& report) {
  RunFigures f;
  const client::Summary& run = report.run_summary ? *report.run_summary : report.summary;
  f.duration_s = static_cast<double>(report.run_end_ns - report.run_start_ns) / 1e9;
  if (auto total = TotalEnergyMj(run.rails)) {
    f.energy_j = *total / 1000.0;
    if (run.duration_s > 0) f.avg_power_w = *f.energy_j / run.duration_s;
  }
  if (report.items && *report.items > 0) {
    ItemBasis b = ItemsBasis(report);
    if (b.summary) {
      if (auto total = TotalEnergyMj(b.summary->rails)) {
        f.j_per_item = *total / 1000.0 / *report.items;
      }
      if (b.duration_s > 0) f.items_per_s = *report.items / b.duration_s;
    }
  }
  return f;
}

double StudentT95(size_t df) {
  // t(0.975, df) for df 1..30, then the usual steps down to the normal 1.960.
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return std::numeric_limits<double>::quiet_NaN();
  if (df <= 30) return kT[df - 1];
  if (df <= 40) return 2.021;
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

Spread SpreadOf(const std::vector<double>& values) {
  Spread s;
  s.n = values.size();
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  const double mean = sum / static_cast<double>(values.size());
  s.mean = mean;
  if (values.size() < 2) return s;
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / static_cast<double>(values.size() - 1));
  s.std = sd;
  s.ci95 = StudentT95(values.size() - 1) * sd / std::sqrt(static_cast<double>(values.size()));
  return s;
}

namespace {

using FigureOf = std::optional<double> RunFigures::*;
struct FigureName {
  const char* key;
  const char* text;
  const char* unit;
  int decimals;
  FigureOf field;
};
constexpr FigureName kFigures[] = {
    {"duration_s", "duration", "s", 3, &RunFigures::duration_s},
    {"energy_j", "energy", "J", 3, &RunFigures::energy_j},
    {"avg_power_w", "avg power", "W", 3, &RunFigures::avg_power_w},
    {"j_per_item", "energy/item", "J", 6, &RunFigures::j_per_item},
    {"items_per_s", "throughput", "items/s", 3, &RunFigures::items_per_s},
};

Spread SpreadOfFigure(const std::vector<RunFigures>& runs, FigureOf field) {
  std::vector<double> values;
  for (const auto& r : runs) {
    if (r.*field) values.push_back(*(r.*field));
  }
  return SpreadOf(values);
}

}  // namespace

nlohmann::json AggregateJson(const std::vector<RunFigures>& runs) {
  nlohmann::json j = {{"n", runs.size()}};
  for (const auto& f : kFigures) {
    Spread s = SpreadOfFigure(runs, f.field);
    j[f.key] = {
        {"mean", OrNull(s.mean)}, {"std", OrNull(s.std)}, {"ci95", OrNull(s.ci95)}, {"n", s.n}};
  }
  return j;
}

std::string RenderAggregate(const std::vector<RunFigures>& runs) {
  std::ostringstream o;
  o << "Over " << runs.size() << " run" << (runs.size() == 1 ? "" : "s")
    << " (mean ± 95 % CI, Student t; std)\n";
  for (const auto& f : kFigures) {
    Spread s = SpreadOfFigure(runs, f.field);
    o << "  " << fmt::format("{:<13}", f.text);
    if (!s.mean) {
      o << "—\n";
      continue;
    }
    o << Fixed(*s.mean, f.decimals) << " " << f.unit;
    if (s.ci95) {
      o << " ± " << Fixed(*s.ci95, f.decimals) << "  (std " << Fixed(*s.std, f.decimals) << ")";
    } else {
      o << "  (one value: no spread)";
    }
    if (s.n != runs.size()) o << "  (" << s.n << " of " << runs.size() << " runs)";
    o << "\n";
  }
  return o.str();
}

std::string RenderRunLine(const std::string& name, const RunFigures& f) {
  std::string line = name + ":";
  for (const auto& fig : kFigures) {
    const auto& v = f.*fig.field;
    line += std::string(" ") + (v ? Fixed(*v, fig.decimals) : "—") + " " + fig.unit;
    if (&fig != &kFigures[std::size(kFigures) - 1]) line += ",";
  }
  return line + "\n";
}

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
    const std::optional<Baseline>& base = report.baseline;
    o << "\n"
      << fmt::format("{:<{}}{:>11}{:>10}{:>10}", "Energy", width + 2, "J", "avg W", "peak W")
      << (base ? fmt::format("{:>11}{:>10}", "above J", "idle W") : "") << "\n";
    for (const auto& r : rows) {
      o << "  " << fmt::format("{:<{}}", std::string(2 * r.depth, ' ') + r.name, width)
        << fmt::format("{:>11}", FixedOr(r.energy_mj, 1000.0, 3))
        << fmt::format("{:>10}", FixedOr(r.avg_power_mw, 1000.0, 3))
        << fmt::format("{:>10}", r.peak_power_mw
                                     ? Fixed(static_cast<double>(*r.peak_power_mw) / 1000.0, 3)
                                     : "");
      if (base && !r.remainder) {
        for (const auto& rail : s.rails) {
          if (rail.name != r.name) continue;
          o << fmt::format("{:>11}{:>10}",
                           FixedOr(AboveBaselineMj(rail, s.duration_s, *base), 1000.0, 3),
                           FixedOr(base->PowerMw(rail.name), 1000.0, 3));
        }
      }
      o << (r.input ? "  (board input)" : "") << "\n";
    }
    if (base) {
      o << "  above J: the energy above each rail's mean power (idle W) over the "
        << Fixed(base->seconds, 3) << " s before the run (--baseline)\n";
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
    ItemBasis b = ItemsBasis(report);
    o << "\nPer item (" << Fixed(items, items == std::floor(items) ? 0 : 3) << " items, "
      << report.items_source << "; over "
      << (b.phase.empty() ? std::string("the run") : "phase " + b.phase)
      << (b.summary ? ", " + Fixed(b.duration_s, 3) + " s" : std::string()) << ")\n";
    if (!b.summary) {
      o << "  — (" << b.why << ")\n";
    } else {
      const std::string per_s =
          b.duration_s > 0 ? Fixed(items / b.duration_s, 3) + " items/s" : "— items/s";
      if (auto total = TotalEnergyMj(b.summary->rails)) {
        o << "  " << Fixed(*total / items, 3) << " mJ/item, "
          << Fixed(*total > 0 ? items / (*total / 1000.0) : 0, 3) << " items/J, " << per_s << "\n";
        if (auto above = TotalAboveBaselineMj(*b.summary, report.baseline)) {
          o << "  above the baseline: " << Fixed(*above / items, 3) << " mJ/item\n";
        }
      } else {
        o << "  " << per_s << "\n";
        for (const auto& r : RailTree(b.summary->rails, b.duration_s)) {
          if (r.depth != 0) continue;
          o << "  " << r.name << ": " << FixedOr(r.energy_mj, items, 3) << " mJ/item\n";
        }
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
        << "  " << (p.summary ? PhaseEnergy(*p.summary) : "no summary");
      if (p.summary) {
        if (auto above = TotalAboveBaselineMj(*p.summary, report.baseline)) {
          o << "  (" << Fixed(*above / 1000.0, 3) << " J above the baseline)";
        }
      }
      o << (p.end_ns ? "" : "  (not ended)") << "\n";
    }
  }

  if (report.nvtx) o << RenderNvtx(*report.nvtx);

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
  if (const auto& b = report.baseline) {
    json rails = json::array();
    for (const auto& [name, mw] : b->rails_mw) {
      rails.push_back({{"name", name}, {"power_w", Scaled(mw, 1000.0)}});
    }
    j["baseline"] = {
        {"seconds", b->seconds}, {"from_ns", b->from_ns}, {"to_ns", b->to_ns}, {"rails", rails}};
  } else {
    j["baseline"] = nullptr;
  }
  j["rails"] = RailsJson(s.rails, s.duration_s, report.baseline);
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
  if (report.baseline) {
    j["energy_above_baseline_j"] = Scaled(TotalAboveBaselineMj(s, report.baseline), 1000.0);
  }
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
      pj["rails"] = RailsJson(p.summary->rails, p.summary->duration_s, report.baseline);
      auto pt = TotalEnergyMj(p.summary->rails);
      pj["total_energy_j"] = pt ? json(*pt / 1000.0) : json(nullptr);
      if (report.baseline) {
        pj["energy_above_baseline_j"] =
            Scaled(TotalAboveBaselineMj(*p.summary, report.baseline), 1000.0);
      }
      pj["samples"] = p.summary->samples;
    }
    phases.push_back(pj);
  }
  j["phases"] = phases;
  j["nvtx"] = report.nvtx ? NvtxJson(*report.nvtx) : json(nullptr);
  if (report.nvtx) j["nvtx_attribution"] = kNvtxAttribution;
  if (report.items) {
    double items = *report.items;
    ItemBasis b = ItemsBasis(report);
    json ij = {{"count", items},
               {"source", report.items_source},
               {"phase", b.phase.empty() ? json(nullptr) : json(b.phase)},
               {"duration_s", b.summary ? json(b.duration_s) : json(nullptr)},
               {"per_s", b.summary && items > 0 && b.duration_s > 0 ? json(items / b.duration_s)
                                                                    : json(nullptr)}};
    if (!b.summary) ij["why"] = b.why;
    json by_rail = json::object();
    std::optional<double> basis_total;
    if (b.summary) {
      for (const auto& r : b.summary->rails) {
        by_rail[r.name] = items > 0 ? Scaled(r.energy_mj, 1000.0 * items) : json(nullptr);
      }
      basis_total = TotalEnergyMj(b.summary->rails);
    }
    ij["energy_j_per_item_by_rail"] = by_rail;
    ij["energy_j"] = Scaled(basis_total, 1000.0);
    if (basis_total && items > 0) {
      ij["energy_j_per_item"] = *basis_total / 1000.0 / items;
      ij["items_per_j"] = *basis_total > 0 ? json(items / (*basis_total / 1000.0)) : json(nullptr);
    } else {
      ij["energy_j_per_item"] = nullptr;
      ij["items_per_j"] = nullptr;
    }
    if (report.baseline) {
      auto above = b.summary ? TotalAboveBaselineMj(*b.summary, report.baseline) : std::nullopt;
      ij["energy_above_baseline_j"] = Scaled(above, 1000.0);
      ij["energy_above_baseline_j_per_item"] =
          items > 0 ? Scaled(above, 1000.0 * items) : json(nullptr);
    }
    j["items"] = ij;
  } else {
    j["items"] = nullptr;
  }
  if (report.repeats.is_object()) {
    j["runs"] = report.repeats["runs"];
    j["aggregate"] = report.repeats["aggregate"];
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
