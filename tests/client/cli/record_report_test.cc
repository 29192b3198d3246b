// The pure pieces of edgemon record/attach: the rail tree and its remainder,
// summary.json, samples.csv, the Chrome trace JSON, --items-from and times.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>
#include <sstream>

#include "client/cli/record_report.h"
#include "tests/support/inventory.h"

namespace edgemon::cli::record {
namespace {

client::RailSummary Rail(std::string name, std::string parent, bool input, double mj,
                         std::optional<int64_t> peak = std::nullopt) {
  client::RailSummary r;
  r.name = std::move(name);
  r.parent = std::move(parent);
  r.input = input;
  r.energy_mj = mj;
  r.avg_power_mw = mj / 2.0;  // a 2 s range
  r.peak_power_mw = peak;
  return r;
}

// An Orin Nano-like tree: VDD_IN with two sub-rails, listed sub-rails first.
std::vector<client::RailSummary> NanoRails() {
  return {Rail("VDD_CPU_GPU_CV", "VDD_IN", false, 3000, 1800),
          Rail("VDD_SOC", "VDD_IN", false, 2500, 1300), Rail("VDD_IN", "", true, 9000, 5100)};
}

TEST(RailTree, InputOnTopSubRailsIndentedAndRemainder) {
  auto rows = RailTree(NanoRails(), 2.0);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "VDD_IN");
  EXPECT_EQ(rows[0].depth, 0);
  EXPECT_TRUE(rows[0].input);
  EXPECT_EQ(rows[1].name, "VDD_CPU_GPU_CV");
  EXPECT_EQ(rows[1].depth, 1);
  EXPECT_EQ(rows[2].name, "VDD_SOC");
  EXPECT_EQ(rows[3].name, "other (VDD_IN - sub-rails)");
  EXPECT_TRUE(rows[3].remainder);
  EXPECT_EQ(rows[3].depth, 1);
  EXPECT_EQ(rows[3].energy_mj, 9000 - 3000 - 2500);
  EXPECT_EQ(rows[3].avg_power_mw, (9000 - 3000 - 2500) / 2.0);
  EXPECT_FALSE(rows[3].peak_power_mw.has_value());
  EXPECT_EQ(TotalEnergyMj(NanoRails()), 9000);
}

TEST(RailTree, NoInputRailMeansNoTotalAndNoRemainder) {
  // AGX Orin: three top-level rails, none of them the board's input.
  std::vector<client::RailSummary> rails = {Rail("VDD_GPU_SOC", "", false, 4000),
                                            Rail("VDD_CPU_CV", "", false, 1000),
                                            Rail("VIN_SYS_5V0", "", false, 3000)};
  auto rows = RailTree(rails, 2.0);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.depth, 0);
    EXPECT_FALSE(r.remainder);
  }
  EXPECT_FALSE(TotalEnergyMj(rails).has_value());
}

TEST(RailTree, NestedParentsAndUnknownParentAndCycle) {
  // RAPL-like: psys (input) > package-0 > core; a rail naming an absent parent
  // is top level; a parent cycle still lists every rail once.
  std::vector<client::RailSummary> rails = {Rail("core", "package-0", false, 100),
                                            Rail("package-0", "psys", false, 300),
                                            Rail("psys", "", true, 1000),
                                            Rail("dram", "gone", false, 50),
                                            Rail("a", "b", false, 1),
                                            Rail("b", "a", false, 2)};
  auto rows = RailTree(rails, 1.0);
  std::vector<std::string> names;
  for (const auto& r : rows) names.push_back(std::string(r.depth * 2, ' ') + r.name);
  std::vector<std::string> want = {"psys",
                                   "  package-0",
                                   "    core",
                                   "    other (package-0 - sub-rails)",
                                   "  other (psys - sub-rails)",
                                   "dram",
                                   "a",
                                   "  b",
                                   "  other (a - sub-rails)"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(rows[3].energy_mj, 200);
  EXPECT_EQ(rows[4].energy_mj, 700);
}

Inventory SmallInventory() {
  Inventory inv;
  inv.board.model = "Test Board";
  auto add = [&](Kind kind, std::string name, Field field, Unit unit, uint32_t flags = 0) {
    Channel& c = testing::AddChannel(inv, kind, std::move(name), field);
    c.unit = unit;
    c.flags = flags;
    c.device = "dev";
    return &c;
  };
  add(Kind::kRail, "VDD_IN", Field::kPower, Unit::kMilliwatt, kFlagInputRail);         // 0
  add(Kind::kRail, "VDD_SOC", Field::kPower, Unit::kMilliwatt);                        // 1
  add(Kind::kThermal, "cpu-thermal", Field::kTemp, Unit::kMilliCelsius)->max = 95000;  // 2
  add(Kind::kCpu, "cpu0", Field::kFreq, Unit::kKhz)->max = 2000000;                    // 3
  add(Kind::kCpu, "cpu1", Field::kFreq, Unit::kKhz)->max = 2000000;                    // 4
  add(Kind::kThermal, "PMIC-Die", Field::kTemp, Unit::kMilliCelsius, kFlagConstant);   // 5
  add(Kind::kRail, "VDD_IN", Field::kEnergy, Unit::kMillijoule, kFlagCounter);         // 6
  return inv;
}

std::vector<Frame> SomeFrames() {
  std::vector<Frame> frames;
  for (int i = 0; i < 3; ++i) {
    Frame f;
    f.seq = 10 + i;
    f.realtime_ns = 1'700'000'000'000'000'000 + i * 100'000'000LL + 7;
    f.values.resize(7);
    f.values[0] = 5000 + i;
    f.values[1] = i == 1 ? std::optional<int64_t>() : std::optional<int64_t>(1200);
    f.values[2] = 45000 + i * 500;
    f.values[3] = 2000000;
    f.values[4] = 1000000;
    f.values[5] = 100000;
    f.values[6] = 100 * i;
    frames.push_back(f);
  }
  return frames;
}

Report SomeReport() {
  Report r;
  r.label = "bench";
  r.command = {"sh", "-c", "exit 7"};
  r.exit_code = 7;
  r.window_id = 42;
  r.run_start_ns = 1'700'000'000'000'000'000;
  r.run_end_ns = r.run_start_ns + 2'000'000'000;
  r.summary.from_ns = r.run_start_ns;
  r.summary.to_ns = r.run_end_ns;
  r.summary.duration_s = 2.0;
  r.summary.rails = NanoRails();
  r.summary.temps = {{"cpu-thermal", 45000, 44000, 96000}};
  r.summary.residency = {{"cpu0", {{1000000, 0.25}, {2000000, 0.75}}},
                         {"cpu1", {{1000000, 0.25}, {2000000, 0.75}}}};
  r.summary.samples = 20;
  r.interval_ms = 100;
  r.energy_rate_hz = 50;
  client::Summary phase;
  phase.duration_s = 1.0;
  phase.rails = {Rail("VDD_IN", "", true, 4000)};
  r.phases.push_back(
      {43, "warm", r.run_start_ns + 100'000'000, r.run_start_ns + 1'100'000'000, phase});
  r.items = 100;
  r.items_source = "--items";
  return r;
}

TEST(SummaryJson, EnergiesTreeItemsPhasesAndThrottling) {
  auto inv = SmallInventory();
  auto j = SummaryJson(SomeReport(), inv);
  EXPECT_EQ(j["exit_code"], 7);
  EXPECT_EQ(j["window"]["id"], 42);
  EXPECT_DOUBLE_EQ(j["total_energy_j"].get<double>(), 9.0);
  EXPECT_EQ(j["total_rail"], "VDD_IN");
  ASSERT_EQ(j["rails"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["rails"][0]["energy_j"].get<double>(), 3.0);
  EXPECT_EQ(j["rail_tree"][3]["remainder"], true);
  EXPECT_DOUBLE_EQ(j["rail_tree"][3]["energy_j"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(j["items"]["energy_j_per_item"].get<double>(), 9.0 / 100);
  EXPECT_DOUBLE_EQ(j["items"]["items_per_j"].get<double>(), 100 / 9.0);
  EXPECT_DOUBLE_EQ(j["items"]["energy_j_per_item_by_rail"]["VDD_SOC"].get<double>(), 2.5 / 100);
  ASSERT_EQ(j["phases"].size(), 1u);
  EXPECT_EQ(j["phases"][0]["name"], "warm");
  EXPECT_DOUBLE_EQ(j["phases"][0]["total_energy_j"].get<double>(), 4.0);
  // cpu0 and cpu1 share one residency: merged, 25 % below the 2 GHz maximum.
  ASSERT_EQ(j["clocks_below_max"].size(), 1u);
  EXPECT_EQ(j["clocks_below_max"][0]["names"], "cpu0-1");
  EXPECT_DOUBLE_EQ(j["clocks_below_max"][0]["below_max_share"].get<double>(), 0.25);
  // 96 C reached the 95 C passive trip.
  ASSERT_EQ(j["thermal_trips"].size(), 1u);
  // 2 s at 50 Hz is 100 periods: no short-run note.
  for (const auto& n : j["uncertainty"]) {
    EXPECT_EQ(n.get<std::string>().find("short run"), std::string::npos) << n;
  }
}

// Per item over the --items-phase phase only, items/s beside J/item; without
// it over the run alone, never the --pre/--post range around it.
TEST(SummaryJson, PerItemOverThePhaseOrTheRunNeverPrePost) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.items_phase = "warm";
  auto j = SummaryJson(r, inv);
  EXPECT_EQ(j["items"]["phase"], "warm");
  EXPECT_DOUBLE_EQ(j["items"]["energy_j_per_item"].get<double>(), 4.0 / 100);
  EXPECT_DOUBLE_EQ(j["items"]["per_s"].get<double>(), 100 / 1.0);
  EXPECT_DOUBLE_EQ(j["items"]["duration_s"].get<double>(), 1.0);
  EXPECT_NE(RenderSummary(r, inv).find("40.000 mJ/item, 25.000 items/J, 100.000 items/s"),
            std::string::npos)
      << RenderSummary(r, inv);
  // A phase that was not marked: missing, never the run's figures.
  r.items_phase = "timed";
  j = SummaryJson(r, inv);
  EXPECT_TRUE(j["items"]["energy_j_per_item"].is_null());
  EXPECT_TRUE(j["items"]["per_s"].is_null());
  EXPECT_NE(j["items"]["why"].get<std::string>().find("no phase named timed"), std::string::npos);
  // --pre/--post: the summary covers 4 s, the per-item figures the 2 s run.
  r.items_phase.clear();
  r.run_summary = r.summary;
  r.summary.duration_s = 4.0;
  r.summary.rails = {Rail("VDD_IN", "", true, 20000)};
  j = SummaryJson(r, inv);
  EXPECT_TRUE(j["items"]["phase"].is_null());
  EXPECT_DOUBLE_EQ(j["items"]["energy_j_per_item"].get<double>(), 9.0 / 100);
  EXPECT_DOUBLE_EQ(j["items"]["per_s"].get<double>(), 100 / 2.0);
  EXPECT_DOUBLE_EQ(j["total_energy_j"].get<double>(), 20.0);
}

// The baseline: each rail's energy above idle power x duration, on every
// rail, every phase and per item; they add back up to the totals.
TEST(SummaryJson, EnergyAboveTheBaselineAddsUpToTheTotals) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.baseline = Baseline{5.0, 1, 2, {{"VDD_IN", 3000.0}, {"VDD_SOC", 1000.0}}};
  auto j = SummaryJson(r, inv);
  EXPECT_DOUBLE_EQ(j["baseline"]["seconds"].get<double>(), 5.0);
  EXPECT_EQ(j["baseline"]["rails"][0]["name"], "VDD_IN");
  EXPECT_DOUBLE_EQ(j["baseline"]["rails"][0]["power_w"].get<double>(), 3.0);
  for (const auto& rail : j["rails"]) {
    if (rail["name"] == "VDD_CPU_GPU_CV") {
      EXPECT_TRUE(rail["energy_above_baseline_j"].is_null()) << "no baseline: missing, not 0";
    }
  }
  EXPECT_DOUBLE_EQ(j["rails"][2]["energy_above_baseline_j"].get<double>(), 9.0 - 3.0 * 2.0);
  EXPECT_DOUBLE_EQ(j["rails"][1]["energy_above_baseline_j"].get<double>(), 2.5 - 1.0 * 2.0);
  EXPECT_DOUBLE_EQ(j["energy_above_baseline_j"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["phases"][0]["energy_above_baseline_j"].get<double>(), 4.0 - 3.0 * 1.0);
  EXPECT_DOUBLE_EQ(j["items"]["energy_above_baseline_j_per_item"].get<double>(), 3.0 / 100);
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("above J"), std::string::npos) << text;
  EXPECT_NE(text.find("above the baseline: 30.000 mJ/item"), std::string::npos) << text;
  // Without a baseline: null, and no energy_above_baseline_j anywhere.
  j = SummaryJson(SomeReport(), inv);
  EXPECT_TRUE(j["baseline"].is_null());
  EXPECT_FALSE(j.contains("energy_above_baseline_j"));
  EXPECT_FALSE(j["rails"][0].contains("energy_above_baseline_j"));
}

// mean, sample std and the Student-t 95 % half-width, by hand for 1, 2, 3 and 4.
TEST(Aggregate, MeanStdAndStudentTInterval) {
  Spread s = SpreadOf({1.0, 2.0, 3.0, 4.0});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(*s.mean, 2.5);
  EXPECT_DOUBLE_EQ(*s.std, std::sqrt(5.0 / 3.0));
  EXPECT_DOUBLE_EQ(*s.ci95, 3.182 * std::sqrt(5.0 / 3.0) / 2.0);
  Spread one = SpreadOf({7.0});
  EXPECT_EQ(one.n, 1u);
  EXPECT_DOUBLE_EQ(*one.mean, 7.0);
  EXPECT_FALSE(one.std.has_value());
  EXPECT_FALSE(one.ci95.has_value());
  EXPECT_FALSE(SpreadOf({}).mean.has_value());
  EXPECT_DOUBLE_EQ(StudentT95(1), 12.706);
  EXPECT_DOUBLE_EQ(StudentT95(2), 4.303);
  EXPECT_DOUBLE_EQ(StudentT95(1000), 1.960);

  std::vector<RunFigures> runs(3);
  for (int i = 0; i < 3; ++i) {
    runs[i].duration_s = 1.0 + i;
    runs[i].energy_j = 10.0 + i;
    runs[i].avg_power_w = 5.0;
  }
  runs[1].j_per_item = 0.5;  // one run with items: n 1, no spread
  auto a = AggregateJson(runs);
  EXPECT_EQ(a["n"], 3);
  EXPECT_DOUBLE_EQ(a["duration_s"]["mean"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(a["duration_s"]["std"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(a["duration_s"]["ci95"].get<double>(), 4.303 / std::sqrt(3.0));
  EXPECT_EQ(a["duration_s"]["n"], 3);
  EXPECT_DOUBLE_EQ(a["avg_power_w"]["std"].get<double>(), 0.0);
  EXPECT_EQ(a["j_per_item"]["n"], 1);
  EXPECT_TRUE(a["j_per_item"]["std"].is_null());
  EXPECT_TRUE(a["items_per_s"]["mean"].is_null());
  EXPECT_EQ(a["items_per_s"]["n"], 0);
  std::string text = RenderAggregate(runs);
  EXPECT_NE(text.find("duration     2.000 s ± 2.484  (std 1.000)"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 of 3 runs)"), std::string::npos) << text;
  EXPECT_NE(text.find("throughput   —"), std::string::npos) << text;
}

// No sample in the range: the rail has no peak, and summary.json leaves the
// key out instead of writing 0.
TEST(SummaryJson, NoSampleMeansNoPeak) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.summary.rails = {Rail("VDD_IN", "", true, 9000)};
  auto j = SummaryJson(r, inv);
  ASSERT_EQ(j["rails"].size(), 1u);
  EXPECT_FALSE(j["rails"][0].contains("peak_power_w")) << j["rails"][0];
  r.summary.rails = NanoRails();
  j = SummaryJson(r, inv);
  EXPECT_DOUBLE_EQ(j["rails"][2]["peak_power_w"].get<double>(), 5.1);
  std::string text = RenderSummary(r, inv);
  EXPECT_EQ(text.find(" 0.000\n"), std::string::npos) << text;
}

// Throttling the cooling devices' counters saw replaces "no zone reached its
// trip point" (which read as "no throttling"); summary.json carries it, null
// when none was seen.
TEST(SummaryText, ThrottlingFromTheCoolingDevicesCounters) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.summary.temps.clear();
  r.summary.temps.push_back(TempSummary{"cpu-thermal", 45000, 44000, 46000});
  EXPECT_EQ(SummaryJson(r, inv)["throttled"], nullptr);
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("no zone reached its passive/hot trip point"), std::string::npos) << text;
  r.throttled = "4.0 s (cpufreq-cpu0)";
  text = RenderSummary(r, inv);
  EXPECT_NE(text.find("thermal throttling: 4.0 s (cpufreq-cpu0)"), std::string::npos) << text;
  EXPECT_EQ(text.find("no zone reached"), std::string::npos) << text;
  EXPECT_EQ(SummaryJson(r, inv)["throttled"], "4.0 s (cpufreq-cpu0)");
}

// GPU and engine load over the run: mean and peak in the text and in
// summary.json; a summary without load readings has no load section.
TEST(SummaryText, LoadsOfTheGpuAndEngines) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  EXPECT_EQ(RenderSummary(r, inv).find("Load (%)"), std::string::npos);
  EXPECT_TRUE(SummaryJson(r, inv)["loads"].empty());
  r.summary.loads = {{"gpu", "gpu", 634.25, 990}, {"engine", "nvenc", 120.0, 400}};
  const std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("Load (%)             mean   peak\n"
                      "  gpu                 63.4   99.0\n"
                      "  nvenc               12.0   40.0\n"),
            std::string::npos)
      << text;
  auto j = SummaryJson(r, inv)["loads"];
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["kind"], "gpu");
  EXPECT_DOUBLE_EQ(j[0]["mean_percent"].get<double>(), 63.425);
  EXPECT_DOUBLE_EQ(j[1]["peak_percent"].get<double>(), 40.0);
  EXPECT_EQ(j[1]["name"], "nvenc");
}

// A rail the daemon could not measure (no counter reading at the edges) is
// "—" on screen and null in summary.json, never 0; a measured 0 J is 0. A
// parent with an unmeasured sub-rail has no remainder figure and no warning.
TEST(SummaryJson, UnmeasuredIsNullMeasuredZeroIsZero) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  client::RailSummary unmeasured;
  unmeasured.name = "VDD_SOC";
  unmeasured.parent = "VDD_IN";
  r.summary.rails = {Rail("VDD_CPU_GPU_CV", "VDD_IN", false, 0), unmeasured,
                     Rail("VDD_IN", "", true, 9000)};
  r.summary.temps = {{"cpu-thermal", std::nullopt, 44000, 46000}};
  r.phases[0].end_ns.reset();
  auto j = SummaryJson(r, inv);
  ASSERT_EQ(j["rails"].size(), 3u);
  EXPECT_EQ(j["rails"][0]["energy_j"], 0.0);
  EXPECT_TRUE(j["rails"][1]["energy_j"].is_null()) << j["rails"][1];
  EXPECT_TRUE(j["rails"][1]["avg_power_w"].is_null()) << j["rails"][1];
  ASSERT_EQ(j["rail_tree"].size(), 4u);
  EXPECT_TRUE(j["rail_tree"][3]["remainder"].get<bool>());
  EXPECT_TRUE(j["rail_tree"][3]["energy_j"].is_null()) << j["rail_tree"][3];
  EXPECT_TRUE(j["items"]["energy_j_per_item_by_rail"]["VDD_SOC"].is_null());
  EXPECT_TRUE(j["temps"][0]["start_c"].is_null()) << j["temps"][0];
  EXPECT_EQ(j["temps"][0]["min_c"], 44.0);
  EXPECT_TRUE(j["phases"][0]["end_ns"].is_null());
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("    VDD_SOC                               —         —"), std::string::npos)
      << text;
  EXPECT_NE(text.find("    VDD_CPU_GPU_CV                    0.000     0.000"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  cpu-thermal            —   44.0   46.0"), std::string::npos) << text;
  EXPECT_NE(text.find("(not ended)"), std::string::npos) << text;
  EXPECT_EQ(text.find("sub-rails of"), std::string::npos) << text;
}

// Sub-rails above their parent beyond the sensors' tolerance: a warning
// with the size of the disagreement; within it, none.
TEST(SummaryText, WarnsWhenSubRailsExceedTheirParent) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.summary.rails = {Rail("VDD_CPU_GPU_CV", "VDD_IN", false, 5000),
                     Rail("VDD_SOC", "VDD_IN", false, 4113), Rail("VDD_IN", "", true, 9000)};
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("sub-rails of VDD_IN read 0.113 J (1.3 %) more than VDD_IN: within the "
                      "sensors' tolerance (2 %)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("miscalibrated"), std::string::npos) << text;
  r.summary.rails = {Rail("VDD_CPU_GPU_CV", "VDD_IN", false, 5000),
                     Rail("VDD_SOC", "VDD_IN", false, 4500), Rail("VDD_IN", "", true, 9000)};
  text = RenderSummary(r, inv);
  EXPECT_NE(text.find("Warning: sub-rails of VDD_IN sum to 9.500 J, 0.500 J (5.6 %) more than "
                      "VDD_IN"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("miscalibrated"), std::string::npos) << text;
  r.summary.rails = NanoRails();  // sub-rails below the input: nothing to say
  EXPECT_EQ(RenderSummary(r, inv).find("sub-rails of"), std::string::npos);
}

TEST(SummaryText, SaysWhenTheRangeWasClipped) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.summary.requested_from_ns = r.summary.from_ns - 30'000'000'000;
  r.summary.requested_to_ns = r.summary.to_ns + 5'000'000'000;
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("starts 30.000 s before the oldest data"), std::string::npos) << text;
  EXPECT_NE(text.find("ends 5.000 s in the future"), std::string::npos) << text;
}

TEST(SummaryText, ShowsTreeTotalPerItemAndShortRunNote) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.energy_rate_hz = 10;  // 2 s = 20 periods: short
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("  VDD_IN "), std::string::npos) << text;
  EXPECT_NE(text.find("    VDD_SOC "), std::string::npos) << text;
  EXPECT_NE(text.find("other (VDD_IN - sub-rails)"), std::string::npos) << text;
  EXPECT_NE(text.find("total: 9.000 J"), std::string::npos) << text;
  EXPECT_NE(text.find("90.000 mJ/item"), std::string::npos) << text;
  EXPECT_NE(text.find("short run"), std::string::npos) << text;
  EXPECT_NE(text.find("exit 7"), std::string::npos) << text;
  EXPECT_NE(text.find("thermal throttling likely: cpu-thermal"), std::string::npos) << text;
  // Never a sum of the input and its sub-rails (9 + 3 + 2.5 = 14.5).
  EXPECT_EQ(text.find("14.5"), std::string::npos) << text;
}

// The report states the rail rates that held (the daemon's log), never the
// boost that was asked for; unknown is said as such, not as a rate.
TEST(SummaryText, StatesTheRailRatesThatHeldNotTheRequest) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.boost_rate_hz = 1000;  // asked for
  r.summary.min_rail_rate_hz = 100;
  r.summary.max_rail_rate_hz = 1000;
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("rails integrated at 100 to 1000 Hz,"), std::string::npos) << text;
  auto j = SummaryJson(r, inv);
  EXPECT_DOUBLE_EQ(j["rail_rate_hz"]["min"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["rail_rate_hz"]["max"].get<double>(), 1000);
  // 2 s at the lowest rate held (100 Hz) is 200 periods: no short-run note.
  for (const auto& n : j["uncertainty"]) {
    EXPECT_EQ(n.get<std::string>().find("short run"), std::string::npos) << n;
  }
  r.summary.min_rail_rate_hz = r.summary.max_rail_rate_hz = 0.5;
  EXPECT_NE(RenderSummary(r, inv).find("rails integrated at 0.5 Hz,"), std::string::npos);
  r.summary.min_rail_rate_hz.reset();
  r.summary.max_rail_rate_hz.reset();
  text = RenderSummary(r, inv);
  EXPECT_EQ(text.find("integrated at 1000"), std::string::npos) << text;
  EXPECT_TRUE(SummaryJson(r, inv)["rail_rate_hz"].is_null());
}

// Clocks that are missing are never a bare "—": the board line says why the
// lock state is unknown, and a summary without clock residency says why it
// has none (no clock channel, no frame in the range, no clock reading).
TEST(SummaryText, SaysWhyClocksAreMissing) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.power_mode_id = 0;
  r.power_mode_name = "MAXN";
  r.clocks_unknown_why = "unknown: edgemon-control is asked only with --lock-clocks or --mode";
  std::string text = RenderSummary(r, inv);
  EXPECT_NE(text.find("power mode 0 (MAXN), clocks — (unknown: edgemon-control is asked only with "
                      "--lock-clocks or --mode)\n"),
            std::string::npos)
      << text;
  r.clocks_locked = true;
  EXPECT_NE(RenderSummary(r, inv).find("clocks locked\n"), std::string::npos);

  // The residency: present, then gone for each reason.
  EXPECT_EQ(text.find("Clocks      —"), std::string::npos) << text;
  r.summary.residency.clear();
  text = RenderSummary(r, inv);
  EXPECT_NE(text.find("Clocks      — (none of the 20 frames in this range holds a clock reading"),
            std::string::npos)
      << text;
  r.summary.samples = 0;
  text = RenderSummary(r, inv);
  EXPECT_NE(text.find("Clocks      — (no frame stored in this range: clocks are read with the "
                      "frames, every 100 ms)"),
            std::string::npos)
      << text;
  Inventory no_clocks = inv;
  std::erase_if(no_clocks.channels, [](const Channel& c) { return IsClockChannel(c); });
  ASSERT_LT(no_clocks.channels.size(), inv.channels.size());
  text = RenderSummary(r, no_clocks);
  EXPECT_NE(text.find("Clocks      — (no CPU, GPU or EMC frequency channel on this board)"),
            std::string::npos)
      << text;
}

TEST(SamplesCsv, ColumnsPerChannelEmptyCellsForAbsentValues) {
  auto inv = SmallInventory();
  std::string csv = SamplesCsv(SomeFrames(), inv);
  std::istringstream in(csv);
  std::string header, row0, row1;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_EQ(header,
            "realtime_ns,seq,rail/VDD_IN/power[mW],rail/VDD_SOC/power[mW],"
            "thermal/cpu-thermal/temp[mC],cpu/cpu0/freq[kHz],cpu/cpu1/freq[kHz],"
            "rail/VDD_IN/energy[mJ]");
  EXPECT_EQ(row0, "1700000000000000007,10,5000,1200,45000,2000000,1000000,0");
  EXPECT_EQ(row1, "1700000000100000007,11,5001,,45500,2000000,1000000,100");
}

TEST(TraceJson, ValidChromeJsonWithOneCounterTrackPerRailAndSlices) {
  auto inv = SmallInventory();
  auto frames = SomeFrames();
  std::string text = TraceJson(SomeReport(), frames, inv);
  auto j = nlohmann::json::parse(text);  // throws on invalid JSON
  std::map<std::string, int> counters;   // pid/name -> events
  std::vector<nlohmann::json> slices;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "C") {
      ++counters[std::to_string(e["pid"].get<int>()) + "/" + e["name"].get<std::string>()];
      ASSERT_TRUE(e["ts"].is_number());
      ASSERT_EQ(e["args"].size(), 1u);
    }
    if (e["ph"] == "X") slices.push_back(e);
  }
  EXPECT_EQ(counters["1/VDD_IN"], 3);
  EXPECT_EQ(counters["1/VDD_SOC"], 2);  // absent in one frame: no event
  EXPECT_EQ(counters["2/cpu-thermal"], 3);
  EXPECT_EQ(counters["3/cpu0"], 3);
  EXPECT_EQ(counters.count("2/PMIC-Die"), 0u);  // constant
  EXPECT_EQ(counters.size(), 5u);
  // The first VDD_IN value in W, at the frame's time in microseconds.
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "VDD_IN") {
      EXPECT_DOUBLE_EQ(e["args"]["W"].get<double>(), 5.0);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1'700'000'000'000'000.007);
      break;
    }
  }
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["name"], "bench");
  EXPECT_DOUBLE_EQ(slices[0]["dur"].get<double>(), 2e6);
  EXPECT_EQ(slices[1]["name"], "warm");
  EXPECT_DOUBLE_EQ(slices[1]["args"]["energy_j"]["VDD_IN"].get<double>(), 4.0);
  EXPECT_NE(slices[0]["tid"], slices[1]["tid"]);
}

TEST(TraceJson, BytesThatAreNotUtf8AreReplacedNotThrown) {
  auto inv = SmallInventory();
  Report r = SomeReport();
  r.label = "run \xff\xfe";
  r.board_model = "board \xc3";
  std::string text;
  ASSERT_NO_THROW(text = TraceJson(r, SomeFrames(), inv));
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["otherData"]["board"], "board \xef\xbf\xbd");
  bool found = false;
  for (const auto& e : j["traceEvents"])
    found = found || e["name"] == "run \xef\xbf\xbd\xef\xbf\xbd";
  EXPECT_TRUE(found);
}

TEST(ItemCounter, LastMatchFirstGroupAcrossChunks) {
  auto re = CompileItemsRegex(R"(images: ([0-9,]+))");
  ASSERT_TRUE(re.ok()) << re.status().ToString();
  ItemCounter c(*re);
  c.Feed("warmup images: 10\nima");
  c.Feed("ges: 1,200 done\nno match here\n");
  EXPECT_EQ(c.value(), 1200);
  c.Feed("images: 1,500");  // no newline yet
  EXPECT_EQ(c.value(), 1200);
  c.Finish();
  EXPECT_EQ(c.value(), 1500);
  EXPECT_EQ(c.matches(), 3u);
}

TEST(ItemCounter, WholeMatchWithoutGroupAndNonNumbersIgnored) {
  auto re = CompileItemsRegex(R"([0-9.]+(?= qps))");
  ASSERT_TRUE(re.ok()) << re.status().ToString();
  ItemCounter c(*re);
  c.Feed("throughput 812.5 qps\r\nthroughput n/a qps\n");
  EXPECT_DOUBLE_EQ(*c.value(), 812.5);
  auto bad = CompileItemsRegex("([");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(bad.status().message().empty());
}

TEST(MarkLabel, RoundTrip) {
  EXPECT_EQ(MarkLabel(12, "warm up"), "12:warm up");
  EXPECT_EQ(MarkName("12:warm up", 12), "warm up");
  EXPECT_FALSE(MarkName("121:x", 12));
  EXPECT_FALSE(MarkName("12:", 12));
}

}  // namespace
}  // namespace edgemon::cli::record
