// edgemon compare A B ... [--json] [--out DIR]: see compare.h.
#include "client/cli/compare.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "client/cli/cli.h"
#include "client/cli/record_bundle.h"
#include "client/cli/record_common.h"
#include "client/cli/record_report.h"
#include "client/cli/runs.h"

namespace edgemon::cli::record {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// The continued fraction of the regularized incomplete beta function
// I_x(a, b), evaluated by the modified Lentz method.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    c = 1 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    c = 1 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < 1e-14) break;
  }
  return h;
}

double IncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

std::optional<double> Num(const json& j) {
  if (!j.is_number()) return std::nullopt;
  const double v = j.get<double>();
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

std::optional<double> At(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return std::nullopt;
    p = &(*p)[k];
  }
  return Num(*p);
}

// The figures of one summary.json, in order: (figure, unit) -> value.
using Figures = std::vector<std::pair<std::pair<std::string, std::string>, double>>;

Figures CompareFigures(const json& s) {
  Figures f;
  auto add = [&](std::string name, std::string unit, std::optional<double> v) {
    if (v) f.push_back({{std::move(name), std::move(unit)}, *v});
  };
  const auto run_s = At(s, {"run", "duration_s"});
  add("duration", "s", run_s);
  const auto total = At(s, {"total_energy_j"});
  const std::string input = s.value("total_rail", json()).is_string()
                                ? s["total_rail"].get<std::string>()
                                : std::string("input rail");
  add("energy " + input, "J", total);
  const auto range_s = At(s, {"range", "duration_s"});
  if (total && range_s && *range_s > 0) add("avg power " + input, "W", *total / *range_s);
  if (s.contains("rails") && s["rails"].is_array()) {
    for (const auto& r : s["rails"]) {
      if (!r.is_object() || !r.value("name", json()).is_string()) continue;
      if (r.value("input", false)) continue;  // the line above
      add("rail " + r["name"].get<std::string>(), "J", At(r, {"energy_j"}));
    }
  }
  if (s.contains("phases") && s["phases"].is_array()) {
    for (const auto& p : s["phases"]) {
      if (!p.is_object() || !p.value("name", json()).is_string()) continue;
      const std::string n = p["name"].get<std::string>();
      add("phase " + n + " duration", "s", At(p, {"duration_s"}));
      add("phase " + n + " energy", "J", At(p, {"total_energy_j"}));
    }
  }
  if (s.contains("items") && s["items"].is_object()) {
    const json& it = s["items"];
    add("energy per item", "J/item", At(it, {"energy_j_per_item"}));
    auto per_s = At(it, {"per_s"});
    if (!per_s) {
      auto count = At(it, {"count"});
      if (count && run_s && *run_s > 0) per_s = *count / *run_s;
    }
    add("throughput", "items/s", per_s);
  }
  return f;
}

Result<json> ReadSummary(const fs::path& dir) {
  std::ifstream in(dir / "summary.json");
  if (!in) return Status::NotFound((dir / "summary.json").string() + ": cannot be read");
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "edgemon-record") {
    return Status::InvalidArgument((dir / "summary.json").string() +
                                   ": not an edgemon record summary");
  }
  return j;
}

// The summary.json of a recorded window, from the daemon.
Result<json> WindowSummary(client::Client& c, const client::Window& w, const Inventory& inventory) {
  auto s = c.SummarizeWindow(w.id);
  if (!s.ok()) return s.status();
  Report r;
  r.label = w.label;
  r.window_id = w.id;
  r.run_start_ns = w.start_ns;
  r.run_end_ns = w.end_ns.value_or(s->to_ns);
  r.summary = *s;
  if (w.result.items && *w.result.items > 0) {
    r.items = w.result.items;
    r.items_source = "stored with the window";
  }
  if (w.result.exit_status) r.exit_code = w.result.exit_status;
  AddPhases(c, r, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  return SummaryJson(r, inventory);
}

// The side an argument names; an error says which argument and why.
Result<CompareSide> ResolveSide(const std::string& arg, std::unique_ptr<client::Client>& c,
                                const Globals& globals, std::optional<client::DeviceInfo>& info) {
  CompareSide side{arg, {}};
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    auto j = ReadSummary(arg);
    if (!j.ok()) return j.status();
    if (j->contains("runs") && (*j)["runs"].is_array() && !(*j)["runs"].empty()) {
      for (const auto& r : (*j)["runs"]) {
        if (!r.value("warmup", false)) side.runs.push_back(r);  // warm-ups: not in the statistics
      }
    } else {
      side.runs.push_back(*j);
    }
    return side;
  }
  if (!c) {
    c = ConnectOrReport(globals);
    if (!c) return Status::InvalidArgument("cannot connect");
    auto i = c->DeviceInfo();
    if (!i.ok()) return i.status();
    info = *i;
  }
  auto runs = RecordedRuns(*c, 0, "");
  if (!runs.ok()) return runs.status();
  const bool id = text::AllDigits(arg) && arg.size() < 19;
  for (const auto& w : *runs) {
    if (id ? std::to_string(w.id) != arg : w.label != arg) continue;
    auto j = WindowSummary(*c, w, info->inventory);
    if (!j.ok()) return j.status().Context("window " + std::to_string(w.id));
    side.runs.push_back(std::move(*j));
  }
  if (side.runs.empty()) {
    return Status::NotFound(id ? "no recorded run with id " + arg
                               : "no recorded run labelled '" + arg +
                                     "' and no bundle directory of that name");
  }
  return side;
}

std::string Cell(const json& v, int decimals) {
  if (v.is_null()) return "\u2014";
  std::string s = Fixed(v["mean"].get<double>(), decimals);
  if (v["n"].get<size_t>() > 1) s += " \u00b1 " + Fixed(v["std"].get<double>(), decimals);
  return s;
}

int Decimals(const std::string& unit) {
  return unit == "items/s" ? 2 : unit == "s" ? 3 : 4;
}

int RunCompare(const Globals& globals, const std::vector<std::string>& args, bool as_json,
               const std::string& out) {
  if (args.size() < 2) {
    std::fprintf(stderr, "edgemon compare: give at least two runs (ids, labels or bundles)\n");
    return kExitUsage;
  }
  std::unique_ptr<client::Client> c;
  std::optional<client::DeviceInfo> info;
  std::vector<CompareSide> sides;
  for (const auto& a : args) {
    auto s = ResolveSide(a, c, globals, info);
    if (!s.ok()) return ReportStatus("compare: " + a, s.status());
    sides.push_back(std::move(*s));
  }
  json data = CompareData(sides);
  if (as_json) {
    std::printf("%s\n", JsonText(data, 2).c_str());
  } else {
    std::fputs(TerminalSafe(RenderCompare(data)).c_str(), stdout);
  }
  if (!out.empty()) {
    if (!MakeBundleDir(out)) return kExitCantCreate;
    const fs::path file = fs::path(out) / "compare.html";
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << FillTemplate(CompareTemplate(), data);
    f.close();
    if (!f) {
      std::fprintf(stderr, "edgemon compare: %s: cannot be written\n",
                   TerminalSafe(file.string()).c_str());
      return kExitCantCreate;
    }
    std::fprintf(stderr, "Compare: %s\n", TerminalSafe(file.string()).c_str());
  }
  return kExitOk;
}

}  // namespace

double WelchP(const Spread& a, const Spread& b) {
  const double sa = a.std.value_or(0), sb = b.std.value_or(0);
  const double ma = a.mean.value_or(0), mb = b.mean.value_or(0);
  const double va = sa * sa / static_cast<double>(a.n);
  const double vb = sb * sb / static_cast<double>(b.n);
  const double se2 = va + vb;
  if (se2 <= 0) return ma == mb ? 1.0 : 0.0;
  const double t = (mb - ma) / std::sqrt(se2);
  const double df =
      se2 * se2 / (va * va / static_cast<double>(a.n - 1) + vb * vb / static_cast<double>(b.n - 1));
  // Two-sided: P(|T| >= |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2).
  return IncompleteBeta(df / 2, 0.5, df / (df + t * t));
}

json CompareData(const std::vector<CompareSide>& sides) {
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<std::vector<double>>> values;
  for (size_t i = 0; i < sides.size(); ++i) {
    for (const auto& run : sides[i].runs) {
      for (auto& [key, v] : CompareFigures(run)) {
        auto [it, fresh] = values.try_emplace(key, sides.size());
        if (fresh) order.push_back(key);
        it->second[i].push_back(v);
      }
    }
  }
  json out = {{"format", "edgemon-compare"}, {"version", 1}};
  json js = json::array();
  for (const auto& s : sides) js.push_back({{"name", s.name}, {"n", s.runs.size()}});
  out["sides"] = js;
  json rows = json::array();
  for (const auto& key : order) {
    const auto& per_side = values[key];
    std::vector<Spread> spreads;
    json vals = json::array();
    for (const auto& v : per_side) {
      const Spread& sp = spreads.emplace_back(SpreadOf(v));
      vals.push_back(sp.mean ? json{{"mean", *sp.mean},
                                    {"std", sp.std ? json(*sp.std) : json(nullptr)},
                                    {"n", sp.n}}
                             : json(nullptr));
    }
    json diffs = json::array({nullptr});
    for (size_t i = 1; i < spreads.size(); ++i) {
      const Spread& a = spreads[0];
      const Spread& b = spreads[i];
      json d = {{"pct", nullptr}, {"p", nullptr}, {"verdict", "single runs: no spread"}};
      if (a.mean && b.mean && *a.mean != 0) {
        d["pct"] = (*b.mean - *a.mean) / std::fabs(*a.mean) * 100.0;
      }
      if (!a.mean || !b.mean) {
        d["verdict"] = "missing on one side";
      } else if (a.std && b.std) {  // n >= 2 on both sides
        const double p = WelchP(a, b);
        d["p"] = p;
        d["verdict"] = p < 0.05 ? "beyond the spread" : "within the spread";
      }
      diffs.push_back(d);
    }
    rows.push_back(
        {{"figure", key.first}, {"unit", key.second}, {"values", vals}, {"diff", diffs}});
  }
  out["rows"] = rows;
  return out;
}

std::string RenderCompare(const json& data) {
  std::ostringstream o;
  const auto& sides = data["sides"];
  for (size_t i = 0; i < sides.size(); ++i) {
    const size_t n = sides[i]["n"].get<size_t>();
    o << static_cast<char>('A' + std::min<size_t>(i, 25)) << " = "
      << sides[i]["name"].get<std::string>() << " (" << n << (n == 1 ? " run)\n" : " runs)\n");
  }
  size_t width = 6;
  for (const auto& r : data["rows"]) {
    width = std::max(
        width, r["figure"].get<std::string>().size() + r["unit"].get<std::string>().size() + 3);
  }
  o << "\n" << fmt::format("{:<{}}", "FIGURE", width);
  for (size_t i = 0; i < sides.size(); ++i) {
    o << fmt::format("  {:>22}", std::string(1, static_cast<char>('A' + std::min<size_t>(i, 25))));
  }
  for (size_t i = 1; i < sides.size(); ++i) {
    o << fmt::format("  {}",
                     std::string(1, static_cast<char>('A' + std::min<size_t>(i, 25))) + " vs A");
  }
  o << "\n";
  for (const auto& r : data["rows"]) {
    const std::string unit = r["unit"].get<std::string>();
    o << fmt::format("{:<{}}", r["figure"].get<std::string>() + " (" + unit + ")", width);
    for (const auto& v : r["values"]) o << fmt::format("  {:>22}", Cell(v, Decimals(unit)));
    for (size_t i = 1; i < r["diff"].size(); ++i) {
      const json& d = r["diff"][i];
      std::string pct =
          d["pct"].is_null() ? "\u2014" : fmt::format("{:+.1f} %", d["pct"].get<double>());
      std::string verdict = d["verdict"].get<std::string>();
      if (!d["p"].is_null()) verdict += fmt::format(" (Welch p={:.3g})", d["p"].get<double>());
      o << "  " << pct << ", " << verdict;
    }
    o << "\n";
  }
  return o.str();
}

void AddCompareCommand(CLI::App& app, Registry& registry) {
  struct Options {
    std::vector<std::string> args;
    bool json = false;
    std::string out;
  };
  auto o = std::make_shared<Options>();
  auto* cmp = app.add_subcommand(
      "compare", "Runs side by side (window ids, labels of repeated runs, bundle directories)");
  cmp->add_option("runs", o->args, "Two or more: window ids, labels or bundle directories")
      ->required();
  cmp->add_flag("--json", o->json, "The comparison as JSON");
  cmp->add_option("--out", o->out, "Write compare.html into this directory");
  cmp->footer(
      "Each figure's difference from the first is in %; with repeats on both sides (a label\n"
      "shared by several runs, a bundle of --repeat runs) Welch's t-test at 95 % says whether\n"
      "it exceeds the runs' own spread, otherwise \"single runs: no spread\".");
  cmp->callback([&registry, o] {
    registry.run = [&registry, o] {
      return RunCompare(registry.globals, o->args, o->json, o->out);
    };
  });
}

}  // namespace edgemon::cli::record
