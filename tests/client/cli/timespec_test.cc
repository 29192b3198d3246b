// The one syntax for durations and times (edgemon/timespec.h): the string
// cases live in tests/data/timespec_cases.json, which the Python client's
// tests read too; here also --last/--step and channel selection.
#include "edgemon/timespec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "client/cli/cli.h"
#include "client/cli/session.h"
#include "tests/support/inventory.h"

namespace edgemon::cli {
namespace {

constexpr int64_t kS = 1'000'000'000;

// The value, or nullopt for an error: comparable with EXPECT_EQ.
std::optional<int64_t> V(const Result<int64_t>& r) {
  return r.ok() ? std::optional<int64_t>(*r) : std::nullopt;
}

// --last and --step: a duration, and more than 0.
TEST(PositiveDuration, ZeroAndNegativeAreRefusedByName) {
  EXPECT_EQ(V(PositiveDurationNs("5s", "duration")), 5 * kS);
  EXPECT_EQ(PositiveDurationNs("0", "duration").status(),
            Status::InvalidArgument("the duration must be more than 0"));
  EXPECT_EQ(PositiveDurationNs("0s", "step").status(),
            Status::InvalidArgument("the step must be more than 0"));
  auto bad = PositiveDurationNs("soon", "step");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status(), ParseDurationNs("soon").status());  // the parser's own message
}

// Every string case of the shared file (tests/data/timespec_cases.json, also
// read by the Python client's tests), with a local zone that is not UTC: a
// time without a zone is UTC whatever TZ says.
TEST(TimespecCases, EveryCaseOfTheSharedFile) {
  struct LocalZone {
    LocalZone() {
      setenv("TZ", "Europe/Paris", 1);
      tzset();
    }
    ~LocalZone() {
      unsetenv("TZ");
      tzset();
    }
  } zone;
  std::ifstream in(EDGEMON_TIMESPEC_CASES);
  ASSERT_TRUE(in.is_open()) << "cannot read " << EDGEMON_TIMESPEC_CASES;
  const nlohmann::json doc = nlohmann::json::parse(in);
  const int64_t default_now = doc.at("now_ns").get<int64_t>();
  size_t checked = 0;
  for (const nlohmann::json& c : doc.at("cases")) {
    SCOPED_TRACE(c.dump());
    const int64_t bare = c.value("bare_unit_ns", kNsPerSecond);
    const int64_t now = c.value("now_ns", default_now);
    std::optional<Result<int64_t>> got;
    std::string input, what, value_key = "ns";
    if (c.contains("duration")) {
      input = c.at("duration").get<std::string>();
      what = "duration";
      got = ParseDurationNs(input, bare);
    } else if (c.contains("duration_ms")) {
      input = c.at("duration_ms").get<std::string>();
      what = "duration";
      value_key = "ms";
      got = ParseDurationMs(input, bare);
    } else {
      input = c.at("time").get<std::string>();
      what = "time";
      got = ParseTimeNs(input, now);
    }
    if (c.contains("error")) {
      ASSERT_FALSE(got->ok()) << "= " << **got;
      EXPECT_EQ(got->status().code(), StatusCode::kInvalidArgument);
      const std::string& error = got->status().message();
      EXPECT_NE(error.find("bad " + what + " \"" + input + "\""), std::string::npos) << error;
      EXPECT_NE(error.find(c.at("error").get<std::string>()), std::string::npos) << error;
    } else {
      ASSERT_TRUE(got->ok()) << got->status().ToString();
      EXPECT_EQ(**got, c.at(value_key).get<int64_t>());
    }
    ++checked;
  }
  EXPECT_GE(checked, 100u);
}

// Printed back: floored to the second, milliseconds never negative.
TEST(LocalTime, TheEndsOfInt64) {
  EXPECT_NE(LocalTime(INT64_MIN).find(".145"), std::string::npos) << LocalTime(INT64_MIN);
  EXPECT_NE(LocalTime(INT64_MAX).find(".854"), std::string::npos) << LocalTime(INT64_MAX);
  EXPECT_NE(LocalTime(-1).find(".999"), std::string::npos) << LocalTime(-1);
}

Inventory SampleInventory() {
  Inventory inv;
  auto add = [&inv](Kind kind, const char* name, Field field) {
    testing::AddChannel(inv, kind, name, field);
  };
  add(Kind::kRail, "VDD_IN", Field::kPower);         // 0
  add(Kind::kRail, "VDD_IN", Field::kVoltage);       // 1
  add(Kind::kRail, "VDD_SOC", Field::kPower);        // 2
  add(Kind::kThermal, "cpu-thermal", Field::kTemp);  // 3
  add(Kind::kCpu, "cpu0", Field::kLoad);             // 4
  return inv;
}

TEST(SelectChannels, KeysIdsAndGlobs) {
  const Inventory inv = SampleInventory();
  auto ids = [&](const std::vector<std::string>& patterns) {
    auto r = SelectChannels(inv, patterns);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<ChannelId>{};
  };
  EXPECT_EQ(ids({}).size(), 5u);
  EXPECT_EQ(ids({"rail/*"}), (std::vector<ChannelId>{0, 1, 2}));
  EXPECT_EQ(ids({"*/power"}), (std::vector<ChannelId>{0, 2}));
  EXPECT_EQ(ids({"rail/VDD_IN/*", "thermal/*"}), (std::vector<ChannelId>{0, 1, 3}));
  EXPECT_EQ(ids({"cpu/cpu0/load", "4", "2"}), (std::vector<ChannelId>{2, 4}));
  auto bad = SelectChannels(inv, {"rail/*", "gpu/*"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("gpu/*"), std::string::npos);
  EXPECT_FALSE(SelectChannels(inv, {"17"}).ok());
  EXPECT_EQ(SplitList({"rail/*,thermal/*", " cpu/* ", ",,"}),
            (std::vector<std::string>{"rail/*", "thermal/*", "cpu/*"}));
}

}  // namespace
}  // namespace edgemon::cli
