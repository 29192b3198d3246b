// edgemon runs [--since T] [--label GLOB] [--json]: the recorded runs held in
// the daemon's store, one line each.
#include "client/cli/runs.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "client/cli/cli.h"
#include "client/cli/record_common.h"
#include "client/cli/record_report.h"
#include "edgemon/clock.h"
#include "edgemon/timespec.h"

namespace edgemon::cli::record {

bool IsMarkLabel(std::string_view label) {
  size_t colon = label.find(':');
  return colon != std::string_view::npos && colon > 0 && text::AllDigits(label.substr(0, colon));
}

Result<std::vector<client::Window>> RecordedRuns(client::Client& c, int64_t since_ns,
                                                 const std::string& glob) {
  auto ws = c.ListWindows(since_ns, 0);
  if (!ws.ok()) return ws.status();
  std::vector<client::Window> out;
  for (auto& w : *ws) {
    if (!w.end_ns || w.abandoned || w.start_ns < since_ns || IsMarkLabel(w.label)) continue;
    if (!glob.empty() && fnmatch(glob.c_str(), w.label.c_str(), 0) != 0) continue;
    out.push_back(std::move(w));
  }
  return out;
}

namespace {

std::optional<double> DurationS(const client::Window& w) {
  if (!w.end_ns) return std::nullopt;
  return static_cast<double>(*w.end_ns - w.start_ns) / 1e9;
}

std::optional<double> AvgPowerW(const client::Window& w) {
  auto d = DurationS(w);
  if (!d || *d <= 0 || !w.result.input_energy_mj) return std::nullopt;
  return *w.result.input_energy_mj / 1000.0 / *d;
}

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string Cell(const std::optional<double>& v, int decimals) {
  return v ? Fixed(*v, decimals) : std::string("\u2014");
}

std::string Table(const std::vector<client::Window>& runs) {
  size_t width = 5;
  for (const auto& w : runs) width = std::max(width, TerminalSafe(w.label).size());
  width = std::min<size_t>(width, 40);
  std::string out =
      fmt::format("{:>6}  {:<{}}  {:<23}  {:>10}  {:>10}  {:>8}  {:>10}  {:>4}\n", "ID", "LABEL",
                  width, "START (UTC)", "DURATION s", "ENERGY J", "AVG W", "ITEMS", "EXIT");
  for (const auto& w : runs) {
    const auto& r = w.result;
    std::string start = UtcTime(w.start_ns);
    if (start.size() > 4) start.resize(start.size() - 4);  // " UTC" is in the header
    // A multi-byte label counts its bytes: the columns after it may shift.
    out += fmt::format(
        "{:>6}  {:<{}}  {:<23}  {:>10}  {:>10}  {:>8}  {:>10}  {:>4}\n", w.id,
        TerminalSafe(w.label), width, start, Cell(DurationS(w), 3),
        Cell(r.input_energy_mj ? std::optional(*r.input_energy_mj / 1000.0) : std::nullopt, 3),
        Cell(AvgPowerW(w), 3), Cell(r.items, 0),
        r.exit_status ? std::to_string(*r.exit_status) : "\u2014");
  }
  return out;
}

int RunRuns(const Globals& globals, const std::string& since, const std::string& label,
            bool as_json) {
  int64_t since_ns = 0;
  if (!since.empty()) {
    auto t = ParseTimeNs(since, SystemClock().RealtimeNs());
    if (!t.ok()) {
      std::fprintf(stderr, "edgemon runs: --since: %s\n",
                   TerminalSafe(t.status().message()).c_str());
      return kExitUsage;
    }
    since_ns = *t;
  }
  auto c = ConnectOrReport(globals);
  if (!c) return kExitUsage;
  auto runs = RecordedRuns(*c, since_ns, label);
  if (!runs.ok()) return ReportStatus("runs", runs.status());
  if (as_json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& w : *runs) a.push_back(RunJson(w));
    std::printf("%s\n", JsonText(a, 2).c_str());
    return kExitOk;
  }
  std::fputs(Table(*runs).c_str(), stdout);
  return kExitOk;
}

}  // namespace

nlohmann::json RunJson(const client::Window& w) {
  const auto& r = w.result;
  return {
      {"id", w.id},
      {"label", w.label},
      {"start_ns", w.start_ns},
      {"end_ns", OrNull(w.end_ns)},
      {"duration_s", OrNull(DurationS(w))},
      {"input_rail", r.input_rail.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.input_rail)},
      {"energy_j",
       r.input_energy_mj ? nlohmann::json(*r.input_energy_mj / 1000.0) : nlohmann::json(nullptr)},
      {"avg_power_w", OrNull(AvgPowerW(w))},
      {"items", OrNull(r.items)},
      {"exit_status", OrNull(r.exit_status)}};
}

void AddRunsCommand(CLI::App& app, Registry& registry) {
  struct Options {
    std::string since, label;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* runs = app.add_subcommand(
      "runs", "List the recorded runs the daemon holds (edgemon record, measure())");
  runs->add_option("--since", o->since,
                   std::string("Runs that started at or after this: ") + kTimeSyntax);
  runs->add_option("--label", o->label, "Runs whose label matches this shell pattern (fmt*)");
  runs->add_flag("--json", o->json, "A JSON array, null where unknown");
  runs->callback([&registry, o] {
    registry.run = [&registry, o] {
      return RunRuns(registry.globals, o->since, o->label, o->json);
    };
  });
}

}  // namespace edgemon::cli::record
