// Times and durations of --since/--until/--last/--step, and channel selection.
#include "timespec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "session.h"

namespace edgemon::cli {
namespace {

constexpr int64_t kS = 1'000'000'000;

TEST(ParseDuration, Units) {
  EXPECT_EQ(ParseDurationNs("90s"), 90 * kS);
  EXPECT_EQ(ParseDurationNs("10m"), 600 * kS);
  EXPECT_EQ(ParseDurationNs("2h"), 7200 * kS);
  EXPECT_EQ(ParseDurationNs("1d"), 86400 * kS);
  EXPECT_EQ(ParseDurationNs("250ms"), kS / 4);
  EXPECT_EQ(ParseDurationNs("1h30m"), 5400 * kS);
  EXPECT_EQ(ParseDurationNs("1m 30s"), 90 * kS);
  EXPECT_EQ(ParseDurationNs("1.5s"), 1500 * 1'000'000);
  EXPECT_EQ(ParseDurationNs("90"), 90 * kS);
  EXPECT_EQ(ParseDurationNs("0.1"), kS / 10);
  EXPECT_EQ(ParseDurationNs("20us"), 20'000);
  EXPECT_EQ(ParseDurationNs("7ns"), 7);
  EXPECT_EQ(ParseDurationNs("5min"), 300 * kS);
}

TEST(ParseDuration, Rejects) {
  for (const char* bad :
       {"", "s", "10x", "-5m", "m10", "1..5s", "abc", "10m-", "99999999999999h"}) {
    EXPECT_FALSE(ParseDurationNs(bad).has_value()) << bad;
  }
}

TEST(ParseTime, RelativeAndUnix) {
  const int64_t now = 1'763'892'000 * kS + 123;
  EXPECT_EQ(ParseTimeNs("now", now), now);
  EXPECT_EQ(ParseTimeNs("-5m", now), now - 300 * kS);
  EXPECT_EQ(ParseTimeNs("90s ago", now), now - 90 * kS);
  EXPECT_EQ(ParseTimeNs("1763892000", now), 1'763'892'000 * kS);
  EXPECT_EQ(ParseTimeNs("1763892000.5", now), 1'763'892'000 * kS + kS / 2);
}

TEST(ParseTime, Calendar) {
  setenv("TZ", "Europe/Paris", 1);  // UTC+1 in November, UTC+2 in July
  tzset();
  const int64_t now = 1'763'892'000 * kS;
  // 2025-11-23T10:00:00Z is 1763892000.
  EXPECT_EQ(ParseTimeNs("2025-11-23T10:00:00Z", now), 1'763'892'000 * kS);
  EXPECT_EQ(ParseTimeNs("2025-11-23T12:00:00+02:00", now), 1'763'892'000 * kS);
  EXPECT_EQ(ParseTimeNs("2025-11-23T05:30:00-0430", now), 1'763'892'000 * kS);
  EXPECT_EQ(ParseTimeNs("2025-11-23T11:00:00", now), 1'763'892'000 * kS);  // local, UTC+1
  EXPECT_EQ(ParseTimeNs("2025-11-23 11:00:00.250", now), 1'763'892'000 * kS + kS / 4);
  EXPECT_EQ(ParseTimeNs("2025-11-23T11:00", now), 1'763'892'000 * kS);
  EXPECT_EQ(ParseTimeNs("2025-07-01T12:00:00", now), 1'751'364'000 * kS);  // UTC+2
  EXPECT_EQ(ParseTimeNs("2025-11-23", now), (1'763'892'000 - 11 * 3600) * kS);
  EXPECT_EQ(ParseTimeNs("11:00:00", now), 1'763'892'000 * kS);  // today
  for (const char* bad : {"2025-02-30T00:00:00", "2025-13-01", "2025-11-23T25:00:00", "yesterday",
                          "2025-11-23T10:00:00+", "2025-11-23X", "10m"}) {
    EXPECT_FALSE(ParseTimeNs(bad, now).has_value()) << bad;
  }
  unsetenv("TZ");
  tzset();
}

Inventory SampleInventory() {
  Inventory inv;
  auto add = [&inv](Kind kind, const char* name, Field field) {
    Channel c;
    c.id = static_cast<ChannelId>(inv.channels.size());
    c.kind = kind;
    c.name = name;
    c.field = field;
    inv.channels.push_back(c);
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
  std::string error;
  EXPECT_EQ(SelectChannels(inv, {}, &error).size(), 5u);
  EXPECT_EQ(SelectChannels(inv, {"rail/*"}, &error), (std::vector<ChannelId>{0, 1, 2}));
  EXPECT_EQ(SelectChannels(inv, {"*/power"}, &error), (std::vector<ChannelId>{0, 2}));
  EXPECT_EQ(SelectChannels(inv, {"rail/VDD_IN/*", "thermal/*"}, &error),
            (std::vector<ChannelId>{0, 1, 3}));
  EXPECT_EQ(SelectChannels(inv, {"cpu/cpu0/load", "4", "2"}, &error),
            (std::vector<ChannelId>{2, 4}));
  EXPECT_TRUE(error.empty());
  EXPECT_TRUE(SelectChannels(inv, {"rail/*", "gpu/*"}, &error).empty());
  EXPECT_NE(error.find("gpu/*"), std::string::npos);
  EXPECT_TRUE(SelectChannels(inv, {"17"}, &error).empty());
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(SplitList({"rail/*,thermal/*", " cpu/* ", ",,"}),
            (std::vector<std::string>{"rail/*", "thermal/*", "cpu/*"}));
}

}  // namespace
}  // namespace edgemon::cli
