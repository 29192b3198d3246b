// edgemon record/attach: the pure pieces of a run's report, kept apart from
// the process and daemon handling in record.cc so they can be unit-tested.
//
//   RailTree        the rails as a tree: the input rail on top, its sub-rails
//                   indented, and the unmeasured remainder of every parent
//   RenderSummary   the human-readable summary printed after a run
//   SummaryJson     summary.json of the bundle
//   SamplesCsv      samples.csv: one row per stored frame, one column per channel
//   TraceJson       trace.json: Chrome trace-event JSON (counter tracks per
//                   rail, temperature and clock; slices for the run and marks)
//   ItemCounter     --items-from REGEX over the wrapped command's output
//
// All times are the daemon's realtime (Unix epoch ns). Thread safety: plain
// functions and values; an ItemCounter is used by one thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli/mlperf.h"
#include "client/cli/record_nvtx.h"
#include "client/edgemon_client.h"
#include "edgemon/channel.h"
#include "edgemon/status.h"

namespace edgemon::cli::record {

// A sub-window opened by `edgemon mark begin NAME` inside a recorded run.
struct Phase {
  int64_t window_id = 0;
  std::string name;
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;  // none: never ended (the summary then stops at the run's end)
  std::optional<client::Summary> summary;
};

// --baseline: each rail's mean power over the history right before the run
// (the store's energy over [from_ns, to_ns) divided by its length).
struct Baseline {
  double seconds = 0;
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  std::vector<std::pair<std::string, std::optional<double>>> rails_mw;  // none: not measured
  std::optional<double> PowerMw(std::string_view rail) const;
};

// A rail's energy above the baseline over `duration_s`: energy - baseline
// power x duration (mJ); none when either is not measured.
std::optional<double> AboveBaselineMj(const client::RailSummary& rail, double duration_s,
                                      const Baseline& baseline);

struct Report {
  std::string mode = "record";  // "record" or "attach"
  std::string label;
  std::vector<std::string> command;  // record only
  std::optional<int> exit_code;      // the command's exit status
  std::optional<int> signal;         // or the signal that killed it
  int64_t window_id = 0;             // 0: none (a plain time range)
  int64_t run_start_ns = 0;          // the window (or the range) itself
  int64_t run_end_ns = 0;
  double pre_s = 0;  // the summary covers [run_start - pre, run_end + post]
  double post_s = 0;
  client::Summary summary;
  std::vector<Phase> phases;
  std::optional<double> items;  // --items N or the last --items-from match
  std::string items_source;     // "--items" or the regex
  std::string items_phase;      // --items-phase NAME: per-item figures over that phase only
  // The run alone ([run_start, run_end], no --pre/--post): the basis of the
  // per-item figures without --items-phase; none when the summary is the run.
  std::optional<client::Summary> run_summary;
  std::optional<Baseline> baseline;  // --baseline
  // --repeat: {"runs": [each run's summary.json], "aggregate": AggregateJson},
  // added to this (the last) run's summary.json; null for a single run.
  nlohmann::json repeats;
  uint32_t boost_rate_hz = 0;      // effective rail sampling rate during the run (0: no boost)
  std::vector<std::string> notes;  // what went wrong along the way (daemon restart, ...)
  // Thermal throttling the cooling devices' counters saw over the range,
  // "4.0 s (cpufreq-cpu0)"; empty when none throttled or none is read.
  std::string throttled;
  std::optional<int64_t> power_mode_id;  // nvpmodel mode during the run (absent: unknown)
  std::string power_mode_name;
  std::optional<bool> clocks_locked;  // absent: unknown (no --lock-clocks, no helper asked)
  std::string clocks_unknown_why;     // why clocks_locked is absent, shown after "clocks —"
  // From DeviceInfo.
  std::string target;
  std::string board_model;
  std::string daemon_version;
  uint32_t interval_ms = 0;
  uint32_t energy_rate_hz = 0;
  // The MLPerf energy report's options and --mlperf fields (ParseMlperfFields).
  MlperfOptions mlperf;
  nlohmann::json mlperf_given = nlohmann::json::object();
  // record --nvtx: the command's NVTX ranges with their energy (absent without --nvtx).
  std::optional<NvtxData> nvtx;
};

// One line of the rail tree.
struct RailRow {
  std::string name;  // the rail, or "other (PARENT - sub-rails)" for a remainder
  int depth = 0;     // 0 = top level
  bool input = false;
  bool remainder = false;
  std::optional<double> energy_mj;       // none: not measured (shown as "—", never 0)
  std::optional<double> avg_power_mw;    // none: not measured
  std::optional<int64_t> peak_power_mw;  // none for a remainder
};

// The rails as a tree: input rails first, then other top-level rails in the
// order given; each rail's sub-rails (RailSummary::parent == its name) follow
// it one level deeper, then a remainder row (parent minus the sum of its
// sub-rails' energy) where it has any. A rail whose parent is not in the list
// is top level. Never sums top-level rails.
std::vector<RailRow> RailTree(const std::vector<client::RailSummary>& rails, double duration_s);
// The same as summary.json's "rail_tree": [{name, depth, input, remainder,
// energy_j, avg_power_w}] (null where not measured).
nlohmann::json RailTreeJson(const std::vector<client::RailSummary>& rails, double duration_s);

// Sub-rails may read above their parent by the sensors' tolerance (INA3221:
// gain and shunt errors of about 1 % each); beyond it the report warns.
inline constexpr double kRailTolerance = 0.02;
// One line per parent rail whose sub-rails sum to more than it (a negative
// remainder), with the size of the disagreement: a note within
// kRailTolerance, a warning beyond it.
std::vector<std::string> ResidualWarnings(const std::vector<client::RailSummary>& rails);

// The board's total energy: the input rail's, if there is exactly one.
std::optional<double> TotalEnergyMj(const std::vector<client::RailSummary>& rails);

// Frequency residency with identical rows merged ("cpu0-3").
struct ResidencyRow {
  std::string names;
  std::vector<std::pair<int64_t, double>> khz_share;  // sorted by frequency
  int64_t max_khz = 0;                                // the hardware maximum, or the highest seen
  double below_max_share = 0;                         // share of samples below max_khz
};
std::vector<ResidencyRow> GroupResidency(const std::vector<client::FreqResidency>& residency,
                                         const Inventory& inventory);

// Thermal zones whose maximum in the range reached their passive/hot trip
// point (Channel::max of thermal temp channels): "cpu-thermal 96.0 C >= trip 95.0 C".
std::vector<std::string> ThermalTrips(const std::vector<client::TempSummary>& temps,
                                      const Inventory& inventory);

// The uncertainty notes of a summary: the daemon's own note, plus a warning
// when the run is shorter than 50 sampling periods of the rail integrator
// (or of the frames where no rail rate is known), and one for gaps.
std::vector<std::string> UncertaintyNotes(const client::Summary& summary, uint32_t interval_ms,
                                          uint32_t energy_rate_hz);

// "100 Hz", "0.5 Hz".
std::string RateHz(double hz);
// The rail sampling rates that held over the summary's range, as the daemon
// logged them: "100 Hz", "100 to 1000 Hz"; empty when unknown.
std::string HeldRailRates(const client::Summary& summary);

// A CPU, GPU or EMC frequency channel: what the clock residency and the
// trace's clock tracks cover.
bool IsClockChannel(const Channel& c);

// Why a summary has no clock residency: no CPU/GPU/EMC frequency channel in
// the inventory, no frame in the range, or no clock value in its frames.
std::string MissingClocksWhy(const client::Summary& summary, const Inventory& inventory,
                             uint32_t interval_ms);

// What the per-item figures are computed over: the --items-phase phase, else
// the run without --pre/--post. summary is null (and why says why) when the
// phase is missing or has no summary.
struct ItemBasis {
  std::string phase;  // "" for the whole run
  double duration_s = 0;
  const client::Summary* summary = nullptr;
  std::string why;
};
ItemBasis ItemsBasis(const Report& report);

// The figures --repeat aggregates, of one run (none where not measured):
// duration_s of the run, energy_j and avg_power_w of the input rail over the
// run (no --pre/--post), j_per_item and items_per_s over the items' basis.
struct RunFigures {
  std::optional<double> duration_s, energy_j, avg_power_w, j_per_item, items_per_s;
};
RunFigures FiguresOf(const Report& report);

// mean, sample standard deviation and the half-width of the 95 % confidence
// interval of the mean (Student t, n - 1 degrees of freedom) of the values
// given; std and ci95 need two values.
struct Spread {
  size_t n = 0;
  std::optional<double> mean, std, ci95;
};
Spread SpreadOf(const std::vector<double>& values);
// The two-sided 95 % quantile of Student's t with `df` degrees of freedom (df >= 1).
double StudentT95(size_t df);

// summary.json's "aggregate" over the measured runs (warm-ups left out):
// {"n", "duration_s"|"energy_j"|"avg_power_w"|"j_per_item"|"items_per_s":
//  {"mean", "std", "ci95", "n"}} (null where not measured or fewer than two
// values for std/ci95).
nlohmann::json AggregateJson(const std::vector<RunFigures>& runs);
// The aggregate as text: one line per figure, "mean ± ci95 (std, n)".
std::string RenderAggregate(const std::vector<RunFigures>& runs);
// One line of a repeated run: "run 2 of 3: 1.003 s, 5.021 J, 5.006 W, ...".
std::string RenderRunLine(const std::string& name, const RunFigures& f);

std::string RenderSummary(const Report& report, const Inventory& inventory);
nlohmann::json SummaryJson(const Report& report, const Inventory& inventory);

// CSV: "realtime_ns,seq,<key>[<unit>],..." for every channel that is not
// constant and has a value in some frame; empty cells for absent values.
// With `rails` (the rail samples kept at a boosted rate), each rail sample
// that is not a frame's own reading is a row of its own, in time order, with
// an empty seq and only its rails' cells filled.
std::string SamplesCsv(const std::vector<Frame>& frames, const Inventory& inventory,
                       const client::RailSampleSet* rails = nullptr);

// One channel's values over time: the frames' and, for a rail in `rails`,
// the rail samples between them (a sample at a frame's own time is that
// frame's reading, taken once), ascending. Absent values are left out.
std::vector<std::pair<int64_t, int64_t>> MergedSeries(const std::vector<Frame>& frames,
                                                      const Channel& channel,
                                                      const client::RailSampleSet* rails);

// Chrome trace-event JSON ({"traceEvents": [...], "displayTimeUnit": "ms"}),
// ts in microseconds since the Unix epoch (the daemon's realtime, as PyTorch
// profiler traces use). Counter tracks ("ph":"C"): one per rail in W (pid 1),
// per thermal zone in C (pid 2), per CPU/GPU/EMC clock in MHz (pid 3); slices
// ("ph":"X", pid 4): the run on tid 1, each mark name on its own tid; with
// --nvtx, the NVTX ranges on pid 5, one tid per thread of the command, with
// their energy in args. With `rails`, a rail's counter track holds its
// samples at the boosted rate (MergedSeries).
std::string TraceJson(const Report& report, const std::vector<Frame>& frames,
                      const Inventory& inventory, const client::RailSampleSet* rails = nullptr);

// --items-from: feeds the command's output through; every complete line is
// matched with std::regex_search and the last match wins. The value is the
// first capture group (the whole match without one), read as a number
// (thousands separators "," and "_" removed).
class ItemCounter {
 public:
  explicit ItemCounter(std::regex re) : re_(std::move(re)) {}
  void Feed(std::string_view chunk);
  void Finish();  // matches a last line without a newline
  std::optional<double> value() const { return value_; }
  uint64_t matches() const { return matches_; }

 private:
  void MatchLine(const std::string& line);
  std::regex re_;
  std::string partial_;
  std::optional<double> value_;
  uint64_t matches_ = 0;
};

// Compiles an --items-from pattern (ECMAScript); INVALID_ARGUMENT with the
// regex library's account of a bad one.
Result<std::regex> CompileItemsRegex(const std::string& pattern);

// The mark label of a sub-window of window `parent`: "<parent>:<name>".
std::string MarkLabel(int64_t parent, std::string_view name);
// The mark name in a label of a sub-window of `parent`, or nullopt.
std::optional<std::string> MarkName(std::string_view label, int64_t parent);

// "2026-11-23 12:00:00.123 UTC" (realtime ns).
std::string UtcTime(int64_t ns);

// Formats a number with `decimals` digits after the point.
std::string Fixed(double value, int decimals);

}  // namespace edgemon::cli::record
