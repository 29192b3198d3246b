#include "config.h"

#include <gtest/gtest.h>

namespace edgemon {
namespace {

TEST(Config, DurationsAndSizes) {
  EXPECT_EQ(ParseDurationMs("90"), 90'000);
  EXPECT_EQ(ParseDurationMs("500ms"), 500);
  EXPECT_EQ(ParseDurationMs("24h"), 86'400'000);
  EXPECT_EQ(ParseDurationMs("7d"), 7 * 86'400'000LL);
  EXPECT_FALSE(ParseDurationMs("7 days"));
  EXPECT_FALSE(ParseDurationMs("-5s"));
  EXPECT_FALSE(ParseDurationMs("99999999999999999999d"));
  EXPECT_EQ(ParseBytes("64MiB"), 64LL << 20);
  EXPECT_FALSE(ParseBytes("lots"));
}

TEST(Config, FileValuesApply) {
  Config c;
  EXPECT_EQ(ApplyToml("[daemon]\ninterval_ms = 500\nenergy_rate_hz = 200\n"
                      "[store]\npath = \"/tmp/x.db\"\nretention = \"2d\"\nmax_size = \"64MiB\"\n"
                      "rollup_period = 30\n",
                      "edgemond.toml", c),
            "");
  EXPECT_EQ(c.interval_ms, 500);
  EXPECT_EQ(c.energy_rate_hz, 200);
  EXPECT_EQ(c.db_path, "/tmp/x.db");
  EXPECT_EQ(c.retention_s, 2 * 86400);
  EXPECT_EQ(c.max_db_bytes, 64LL << 20);
  EXPECT_EQ(c.rollup_period_s, 30);
  EXPECT_EQ(Validate(c), "");
}

TEST(Config, ErrorsNameTheKeyAndTheReason) {
  Config c;
  EXPECT_EQ(ApplyToml("[daemon]\ninterval = 5\n", "f.toml", c),
            "f.toml: key daemon.interval: unknown key");
  EXPECT_EQ(ApplyToml("[daemon]\ninterval_ms = \"fast\"\n", "f.toml", c),
            "f.toml: key daemon.interval_ms: expected an integer");
  EXPECT_NE(
      ApplyToml("[store]\nretention = \"forever\"\n", "f.toml", c).find("key store.retention"),
      std::string::npos);
  EXPECT_NE(ApplyToml("[daemon\n", "f.toml", c).find("f.toml:1"), std::string::npos);
  Config bad;
  bad.interval_ms = 5;
  EXPECT_EQ(Validate(bad), "key daemon.interval_ms: must be between 10 and 3600000, got 5");
  bad = Config{};
  bad.energy_rate_hz = 5000;
  EXPECT_NE(Validate(bad).find("key daemon.energy_rate_hz"), std::string::npos);
  bad = Config{};
  bad.listen = "nowhere";
  EXPECT_NE(Validate(bad).find("key daemon.listen"), std::string::npos);
}

}  // namespace
}  // namespace edgemon
