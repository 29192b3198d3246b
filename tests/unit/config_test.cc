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

TEST(Config, ApiKeys) {
  Config c;
  EXPECT_EQ(ApplyToml("[daemon]\ntcp_listen = \"127.0.0.1:7070\"\nmax_streams = 8\n", "f.toml", c),
            "");
  EXPECT_EQ(c.tcp_listen, "127.0.0.1:7070");
  EXPECT_EQ(c.max_streams, 8);
  EXPECT_EQ(Validate(c), "");
  // Non-loopback TCP without TLS is refused, naming the key.
  c.tcp_listen = "0.0.0.0:7070";
  EXPECT_EQ(Validate(c),
            "key daemon.tcp_listen: 0.0.0.0:7070 is not a loopback address; refusing plain-text "
            "TCP (set daemon.tls_cert and daemon.tls_key)");
  c.tls_cert = "/etc/edgemon/cert.pem";
  EXPECT_EQ(Validate(c), "keys daemon.tls_cert and daemon.tls_key: set both or neither");
  c.tls_key = "/etc/edgemon/key.pem";
  EXPECT_EQ(Validate(c), "");
  // The main listen address follows the same rule.
  Config d;
  d.listen = "192.168.1.5:7070";
  EXPECT_NE(Validate(d).find("key daemon.listen: 192.168.1.5:7070 is not a loopback"),
            std::string::npos);
  d.listen = "[::1]:7070";
  EXPECT_EQ(Validate(d), "");
  d.listen = "unix:";
  EXPECT_NE(Validate(d).find("key daemon.listen"), std::string::npos);
  Config e;
  e.tcp_listen = "7070";
  EXPECT_NE(Validate(e).find("key daemon.tcp_listen: expected host:port"), std::string::npos);
  e = Config{};
  e.max_streams = 0;
  EXPECT_EQ(Validate(e), "key daemon.max_streams: must be between 1 and 100000, got 0");
  EXPECT_NE(ApplyToml("[daemon]\nmax_streams = \"many\"\n", "f.toml", e).find("max_streams"),
            std::string::npos);
}

TEST(Config, ErrorsStayOneLineWhateverTheFileHolds) {
  // The parser quotes the offending bytes; a newline or control byte there
  // must not split the error (found by config_fuzz).
  Config c;
  std::string text("11101101=n\n\n\n\n", 14);
  text += std::string(4, '\0') + "\n=\n\n119";
  std::string err = ApplyToml(text, "f.toml", c);
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_NE(err.find("f.toml:1:"), std::string::npos) << err;
  EXPECT_NE(err.find("\\n"), std::string::npos) << err;  // shown escaped
  Config bad;
  bad.tcp_listen = "host\nname:7070";
  err = Validate(bad);
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

}  // namespace
}  // namespace edgemon
