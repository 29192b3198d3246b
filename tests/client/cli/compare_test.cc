// The pure pieces of edgemon compare (spread, Welch's t-test, the figures
// side by side) and of the MLPerf report's --mlperf fields.
#include <gtest/gtest.h>

#include <cmath>

#include "client/cli/compare.h"
#include "client/cli/mlperf.h"

namespace edgemon::cli::record {
namespace {

using json = nlohmann::json;

// Student's t at the two-sided 5 % points (tables): equal n and std make
// Welch's df = 2 (n - 1) exactly.
TEST(Compare, WelchPAtTabulatedCriticalValues) {
  struct Case {
    size_t n;
    double t95;
  } cases[] = {{4, 2.446912}, {6, 2.228139}, {11, 2.085963}, {2, 4.302653}};
  for (const auto& c : cases) {
    // std sqrt(n/2) makes the standard error 1, so t is the mean difference.
    const double sd = std::sqrt(static_cast<double>(c.n) / 2);
    const Spread a{c.n, 10.0, sd, std::nullopt}, b{c.n, 10 + c.t95, sd, std::nullopt};
    EXPECT_NEAR(WelchP(a, b), 0.05, 2e-6) << "n " << c.n;
    EXPECT_NEAR(WelchP(b, a), 0.05, 2e-6) << "n " << c.n;
  }
  // Unequal spreads: t 2.4807, Welch-Satterthwaite df 6.969; p 0.04231 from
  // integrating Student's density numerically.
  EXPECT_NEAR(WelchP({5, 10.0, 1.0, {}}, {5, 12.0, 1.5, {}}), 0.04231, 5e-5);
  EXPECT_DOUBLE_EQ(WelchP({3, 3.0, 0.0, {}}, {3, 3.0, 0.0, {}}), 1.0);
  EXPECT_DOUBLE_EQ(WelchP({3, 3.0, 0.0, {}}, {3, 4.0, 0.0, {}}), 0.0);
}

json RecordedRun(double duration, std::optional<double> energy) {
  return {
      {"format", "edgemon-record"},
      {"run", {{"duration_s", duration}}},
      {"range", {{"duration_s", duration}}},
      {"total_rail", "VDD_IN"},
      {"total_energy_j", energy ? json(*energy) : json(nullptr)},
      {"rails", json::array({{{"name", "VDD_IN"},
                              {"input", true},
                              {"energy_j", energy ? json(*energy) : json(nullptr)}},
                             {{"name", "VDD_GPU"}, {"input", false}, {"energy_j", 1.0}}})},
      {"phases",
       json::array({{{"name", "timed"}, {"duration_s", duration / 2}, {"total_energy_j", 2.0}}})},
      {"items", {{"count", 10.0}, {"energy_j_per_item", 0.5}}}};
}

TEST(Compare, FiguresSideBySideWithTheirVerdicts) {
  CompareSide a{"fp16", {RecordedRun(2.0, 10.0), RecordedRun(2.1, 10.5), RecordedRun(1.9, 9.5)}};
  CompareSide b{"int8", {RecordedRun(1.0, 5.0), RecordedRun(1.05, 5.2), RecordedRun(0.95, 4.8)}};
  CompareSide once{"once", {RecordedRun(1.0, std::nullopt)}};
  json d = CompareData({a, b, once});
  ASSERT_EQ(d["sides"].size(), 3u);
  std::map<std::string, json> rows;
  for (const auto& r : d["rows"]) rows[r["figure"].get<std::string>()] = r;
  const json& dur = rows.at("duration");
  EXPECT_NEAR(dur["values"][0]["mean"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(dur["values"][0]["std"].get<double>(), 0.1, 1e-12);
  EXPECT_NEAR(dur["diff"][1]["pct"].get<double>(), -50.0, 1e-9);
  EXPECT_EQ(dur["diff"][1]["verdict"], "beyond the spread");
  EXPECT_LT(dur["diff"][1]["p"].get<double>(), 0.05);
  EXPECT_EQ(dur["diff"][2]["verdict"], "single runs: no spread");
  EXPECT_TRUE(dur["diff"][2]["p"].is_null());
  // Missing is never zero: the energy of the run without one is absent.
  const json& e = rows.at("energy VDD_IN");
  EXPECT_TRUE(e["values"][2].is_null());
  EXPECT_TRUE(e["diff"][2]["pct"].is_null());
  EXPECT_EQ(e["diff"][2]["verdict"], "missing on one side");
  // Equal figures on both sides: within the spread (no difference at all).
  EXPECT_EQ(rows.at("rail VDD_GPU")["diff"][1]["verdict"], "within the spread");
  EXPECT_NEAR(rows.at("throughput")["values"][0]["mean"].get<double>(),
              (10 / 2.0 + 10 / 2.1 + 10 / 1.9) / 3, 1e-12);
  EXPECT_TRUE(rows.count("phase timed energy"));
  const std::string text = RenderCompare(d);
  EXPECT_NE(text.find("A = fp16 (3 runs)"), std::string::npos) << text;
  EXPECT_NE(text.find("-50.0 %, beyond the spread"), std::string::npos) << text;
  EXPECT_NE(text.find("\u2014"), std::string::npos) << text;
}

TEST(Mlperf, FieldsAreCheckedAgainstTheSchemaTypes) {
  auto ok = ParseMlperfFields({"scenario=singlestream", "batch_size=1", "task_type=llm",
                               "thermal_stabilization_seconds=30.5",
                               "software_runtime_versions.cuda=12.6"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)["batch_size"], 1);
  EXPECT_EQ((*ok)["thermal_stabilization_seconds"], 30.5);
  EXPECT_EQ((*ok)["software_runtime_versions"]["cuda"], "12.6");
  for (const char* bad :
       {"batch_size=0", "batch_size=1.5", "batch_size=", "scenario=fast", "task_type=LLM",
        "thermal_stabilization_seconds=-1", "thermal_stabilization_seconds=nan",
        "total_energy_joules=1", "measurement_method=nvml", "colour=red", "noequals",
        "software_runtime_versions.=1"}) {
    auto r = ParseMlperfFields({bad});
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ParseMlperfFields({"batch_size=1", "batch_size=2"}).ok());
}

}  // namespace
}  // namespace edgemon::cli::record
