// The one syntax for durations and times (edgemon/timespec.h), and channel
// selection.
#include "edgemon/timespec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>

#include "client/cli/cli.h"
#include "client/cli/session.h"
#include "tests/support/inventory.h"

namespace edgemon::cli {
namespace {

constexpr int64_t kS = 1'000'000'000;
// 1700000000 is 2023-11-14T22:13:20Z.
constexpr int64_t kT = 1'700'000'000 * kS;

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

TEST(ParseDuration, Units) {
  EXPECT_EQ(V(ParseDurationNs("90s")), 90 * kS);
  EXPECT_EQ(V(ParseDurationNs("10m")), 600 * kS);
  EXPECT_EQ(V(ParseDurationNs("2h")), 7200 * kS);
  EXPECT_EQ(V(ParseDurationNs("1d")), 86400 * kS);
  EXPECT_EQ(V(ParseDurationNs("7d")), 7 * 86400 * kS);
  EXPECT_EQ(V(ParseDurationNs("2w")), 14 * 86400 * kS);
  EXPECT_EQ(V(ParseDurationNs("250ms")), kS / 4);
  EXPECT_EQ(V(ParseDurationNs("500ms")), kS / 2);
  EXPECT_EQ(V(ParseDurationNs("1h30m")), 5400 * kS);
  EXPECT_EQ(V(ParseDurationNs("1m 30s")), 90 * kS);
  EXPECT_EQ(V(ParseDurationNs("5 s")), 5 * kS);
  EXPECT_EQ(V(ParseDurationNs("1.5s")), 1500 * 1'000'000);
  EXPECT_EQ(V(ParseDurationNs("90")), 90 * kS);
  EXPECT_EQ(V(ParseDurationNs("0.1")), kS / 10);
  EXPECT_EQ(V(ParseDurationNs("20us")), 20'000);
  EXPECT_EQ(V(ParseDurationNs("7ns")), 7);
  EXPECT_EQ(V(ParseDurationNs("5min")), 300 * kS);
  EXPECT_EQ(V(ParseDurationNs("3sec")), 3 * kS);
  EXPECT_EQ(V(ParseDurationNs("0")), 0);
  EXPECT_EQ(V(ParseDurationNs(" 10s\n")), 10 * kS);
  // A bare number in another unit: the --interval options count ms.
  EXPECT_EQ(V(ParseDurationNs("500", kNsPerMillisecond)), kS / 2);
  EXPECT_EQ(V(ParseDurationNs("2s", kNsPerMillisecond)), 2 * kS);
}

TEST(ParseDuration, RejectsWithAReason) {
  struct Bad {
    const char* text;
    const char* why;
  };
  for (const Bad& bad :
       {Bad{"", "empty"}, Bad{"s", "expected a number"}, Bad{"10x", "unknown unit at \"x\""},
        Bad{"-5m", "never negative"}, Bad{"m10", "expected a number"}, Bad{"1..5s", "unknown unit"},
        Bad{"abc", "expected a number"}, Bad{"10m-", "expected a number"},
        Bad{"7 days", "expected a number at \"ays\""}, Bad{"1m 30", "a unit is missing"},
        Bad{"99999999999999h", "too long"}, Bad{"99999999999999999999d", "too long"}}) {
    auto r = ParseDurationNs(bad.text);
    ASSERT_FALSE(r.ok()) << bad.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string& error = r.status().message();
    EXPECT_NE(error.find("bad duration \"" + std::string(bad.text) + "\""), std::string::npos)
        << error;
    EXPECT_NE(error.find(bad.why), std::string::npos) << bad.text << ": " << error;
  }
}

TEST(ParseDuration, WholeMilliseconds) {
  EXPECT_EQ(V(ParseDurationMs("90")), 90'000);
  EXPECT_EQ(V(ParseDurationMs("500ms")), 500);
  EXPECT_EQ(V(ParseDurationMs("24h")), 86'400'000);
  EXPECT_EQ(V(ParseDurationMs("1.5s")), 1'500);
  EXPECT_EQ(V(ParseDurationMs("250", kNsPerMillisecond)), 250);
  auto r = ParseDurationMs("1.5ms");
  ASSERT_FALSE(r.ok());
  const std::string& error = r.status().message();
  EXPECT_NE(error.find("finer than a millisecond"), std::string::npos) << error;
}

TEST(ParseTime, RelativeAndUnix) {
  const int64_t now = 1'763'892'000 * kS + 123;
  EXPECT_EQ(V(ParseTimeNs("now", now)), now);
  EXPECT_EQ(V(ParseTimeNs("-5m", now)), now - 300 * kS);
  EXPECT_EQ(V(ParseTimeNs("-10m", now)), now - 600 * kS);
  EXPECT_EQ(V(ParseTimeNs("+30s", now)), now + 30 * kS);
  EXPECT_EQ(V(ParseTimeNs("90s ago", now)), now - 90 * kS);
  EXPECT_EQ(V(ParseTimeNs("1763892000", now)), 1'763'892'000 * kS);
  EXPECT_EQ(V(ParseTimeNs("1763892000.5", now)), 1'763'892'000 * kS + kS / 2);
  EXPECT_EQ(V(ParseTimeNs("@1700000000.25", now)), kT + kS / 4);
  EXPECT_EQ(V(ParseTimeNs("@1700000000.000000007", now)), kT + 7);
  EXPECT_EQ(V(ParseTimeNs("@1700000000", now)), kT);
}

TEST(ParseTime, CalendarWithoutZoneIsUtc) {
  // Whatever the local zone, a time without one is UTC.
  setenv("TZ", "Europe/Paris", 1);
  tzset();
  const int64_t now = 1'763'892'000 * kS;
  EXPECT_EQ(V(ParseTimeNs("2023-11-14T22:13:20Z", now)), kT);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14T22:13:20", now)), kT);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14 22:13:20", now)), kT);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14 22:13:20 UTC", now)), kT);
  // The two spellings of the same instant (one or two digits per field).
  EXPECT_EQ(V(ParseTimeNs("2023-11-14 22:13:05", now)), kT - 15 * kS);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14 22:13:5", now)), kT - 15 * kS);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14T22:13:05Z", now)), kT - 15 * kS);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14 22:13:20.5", now)), kT + kS / 2);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14T22:13:20.000000001Z", now)), kT + 1);
  EXPECT_EQ(V(ParseTimeNs("2023-11-15T00:13:20+02:00", now)), kT);
  EXPECT_EQ(V(ParseTimeNs("2023-11-15T00:13:20+0200", now)), kT);
  EXPECT_EQ(V(ParseTimeNs("2023-11-15T00:13:20+02", now)), kT);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14T17:43:20-04:30", now)), kT);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14T22:13", now)), kT - 20 * kS);
  EXPECT_EQ(V(ParseTimeNs("2023-11-14", now)), kT - (22 * 3600 + 13 * 60 + 20) * kS);
  EXPECT_EQ(V(ParseTimeNs("2024-02-29", now)), 1'709'164'800 * kS);
  EXPECT_EQ(V(ParseTimeNs("1969-12-31T23:59:59Z", now)), -kS);
  // A time of day: that time today, UTC (now is 2025-11-23T10:00:00Z).
  EXPECT_EQ(V(ParseTimeNs("11:00:00", now)), 1'763'895'600 * kS);
  EXPECT_EQ(V(ParseTimeNs("9:30", now)), 1'763'890'200 * kS);
  unsetenv("TZ");
  tzset();
}

TEST(ParseTime, RejectsWithAReason) {
  struct Bad {
    const char* text;
    const char* why;
  };
  const int64_t now = kT;
  for (const Bad& bad :
       {Bad{"", "empty"}, Bad{"yesterday", "expected a time such as"},
        Bad{"10m", "a duration, not a time: write -10m"},
        Bad{"2023-02-29T00:00:00", "2023-02-29 is not a date"},
        Bad{"2025-13-01", "2025-13-01 is not a date"},
        Bad{"2025-11-23T25:00:00", "25:00:00 is not a time of day"},
        Bad{"2025-11-23T10:00:00+", "zone offset"}, Bad{"2025-11-23T10:00:00+25:00", "zone offset"},
        Bad{"2025-11-23X", "unexpected \"X\""},
        Bad{"2023-11-14T22:13:20Zjunk", "unexpected \"Zjunk\""},
        Bad{"2023-11-14T22:13:20.", "digits after the decimal point"},
        Bad{"@-5", "Unix seconds after @"}, Bad{"@1.5x", "Unix seconds after @"},
        Bad{"-5x", "unknown unit"}, Bad{"99999999999", "out of range"},
        Bad{"-99999999999999h", "too long"}, Bad{"12:61", "12:61:00 is not a time of day"}}) {
    auto r = ParseTimeNs(bad.text, now);
    ASSERT_FALSE(r.ok()) << bad.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string& error = r.status().message();
    EXPECT_NE(error.find("bad "), std::string::npos) << error;
    EXPECT_NE(error.find(bad.why), std::string::npos) << bad.text << ": " << error;
  }
}

// The ends of int64 nanoseconds: every form of time up to them parses
// exactly, and one past them is refused with the limits named.
TEST(ParseTime, TheEndsOfInt64AreExactAndBeyondIsNamed) {
  const int64_t now = kT;
  EXPECT_EQ(*ParseTimeNs("1678-01-01", now), -9'214'560'000'000'000'000);
  EXPECT_EQ(*ParseTimeNs("2262-01-01", now), 9'214'646'400'000'000'000);
  EXPECT_EQ(*ParseTimeNs("1677-09-21T00:12:43.145224192Z", now), INT64_MIN);
  EXPECT_EQ(*ParseTimeNs("@9223372036.854775807", now), INT64_MAX);
  EXPECT_EQ(*ParseTimeNs("1677-09-21T00:12:44Z", now), -9'223'372'036'000'000'000);
  EXPECT_EQ(*ParseTimeNs("2262-04-11T23:47:16Z", now), 9'223'372'036'000'000'000);
  for (const char* beyond :
       {"1677-09-21", "1677-09-21T00:12:43Z", "2262-04-12", "2262-04-11T23:47:17Z",
        "2262-04-11T23:47:16.854775808Z", "1677-09-21T00:12:43.145224191Z", "@9223372036.854775808",
        "0001-01-01", "9999-12-31T23:59:59+00:00", "+15000w"}) {
    auto r = ParseTimeNs(beyond, now);
    ASSERT_FALSE(r.ok()) << beyond;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string& error = r.status().message();
    EXPECT_NE(error.find("out of range"), std::string::npos) << beyond << ": " << error;
    EXPECT_NE(error.find("1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z"), std::string::npos)
        << beyond << ": " << error;
  }
  // Printed back: floored to the second, milliseconds never negative.
  EXPECT_NE(LocalTime(INT64_MIN).find(".145"), std::string::npos) << LocalTime(INT64_MIN);
  EXPECT_NE(LocalTime(INT64_MAX).find(".854"), std::string::npos) << LocalTime(INT64_MAX);
  EXPECT_NE(LocalTime(-1).find(".999"), std::string::npos) << LocalTime(-1);
  // "that time today" on a clock at either end of int64.
  EXPECT_TRUE(ParseTimeNs("00:00", INT64_MIN + kNsPerSecond * 86'400).ok());
  EXPECT_FALSE(ParseTimeNs("23:59", INT64_MAX).ok());
  EXPECT_EQ(*ParseTimeNs("00:00", INT64_MAX),
            INT64_MAX / (86'400 * kNsPerSecond) * 86'400 * kNsPerSecond);
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
