#include "daemon/runtime/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace edgemon {
namespace {

TEST(Config, DurationsAndSizes) {
  // Durations go through the common syntax (edgemon/timespec.h), in whole ms.
  auto retention = [](const std::string& value, std::string* error) {
    runtime::Config c;
    *error = runtime::ApplyToml("[store]\nretention = \"" + value + "\"\n", "edgemond.toml", c)
                 .message();
    return c.retention_s;
  };
  std::string error;
  EXPECT_EQ(retention("90", &error), 90);
  EXPECT_EQ(retention("24h", &error), 86'400);
  EXPECT_EQ(retention("7d", &error), 7 * 86'400);
  EXPECT_EQ(retention("1h30m", &error), 5'400);
  EXPECT_EQ(retention("5 s", &error), 5);
  EXPECT_EQ(error, "");
  for (const char* bad : {"7 days", "-5s", "99999999999999999999d", "1.0000001s", ""}) {
    retention(bad, &error);
    EXPECT_NE(error.find("store.retention"), std::string::npos) << bad << ": " << error;
    EXPECT_NE(error.find("bad duration"), std::string::npos) << bad << ": " << error;
  }
  runtime::Config c;
  EXPECT_EQ(
      runtime::ApplyToml("[daemon]\ntopology_check = \"500ms\"\n", "edgemond.toml", c).message(),
      "");
  EXPECT_EQ(c.topology_check_s, 0);  // kept in whole seconds
  EXPECT_EQ(runtime::ParseBytes("64MiB"), 64LL << 20);
  EXPECT_FALSE(runtime::ParseBytes("lots"));
}

TEST(Config, FileValuesApply) {
  runtime::Config c;
  EXPECT_EQ(
      runtime::ApplyToml("[daemon]\ninterval_ms = 500\nenergy_rate_hz = 200\n"
                         "[store]\npath = \"/tmp/x.db\"\nretention = \"2d\"\nmax_size = \"64MiB\"\n"
                         "rollup_period = 30\nrollup_write_frames = 0\n",
                         "edgemond.toml", c)
          .message(),
      "");
  EXPECT_EQ(c.rollup_write_frames, 0);
  EXPECT_EQ(c.interval_ms, 500);
  EXPECT_EQ(c.energy_rate_hz, 200);
  EXPECT_EQ(c.db_path, "/tmp/x.db");
  EXPECT_EQ(c.retention_s, 2 * 86400);
  EXPECT_EQ(c.max_db_bytes, 64LL << 20);
  EXPECT_EQ(c.rollup_period_s, 30);
  EXPECT_EQ(runtime::Validate(c).message(), "");
}

TEST(Config, ControlKeysAreOffByDefaultAndTyped) {
  runtime::Config c;
  EXPECT_FALSE(c.control_enable);
  EXPECT_EQ(
      runtime::ApplyToml("[control]\nenable = true\ngroup = \"bench\"\n", "f.toml", c).message(),
      "");
  EXPECT_TRUE(c.control_enable);
  EXPECT_EQ(c.control_group, "bench");
  EXPECT_EQ(runtime::ApplyToml("[control]\nenable = \"yes\"\n", "f.toml", c).message(),
            "f.toml: key control.enable: expected true or false");
  EXPECT_EQ(runtime::ApplyToml("[control]\nenabled = true\n", "f.toml", c).message(),
            "f.toml: key control.enabled: unknown key");
}

TEST(Config, ErrorsNameTheKeyAndTheReason) {
  runtime::Config c;
  EXPECT_EQ(runtime::ApplyToml("[daemon]\ninterval = 5\n", "f.toml", c).message(),
            "f.toml: key daemon.interval: unknown key");
  EXPECT_EQ(runtime::ApplyToml("[daemon]\ninterval_ms = \"fast\"\n", "f.toml", c).message(),
            "f.toml: key daemon.interval_ms: expected an integer");
  EXPECT_NE(runtime::ApplyToml("[store]\nretention = \"forever\"\n", "f.toml", c)
                .message()
                .find("key store.retention"),
            std::string::npos);
  EXPECT_NE(runtime::ApplyToml("[daemon\n", "f.toml", c).message().find("f.toml:1"),
            std::string::npos);
  runtime::Config bad;
  bad.interval_ms = 5;
  EXPECT_EQ(runtime::Validate(bad).message(),
            "key daemon.interval_ms: must be between 10 and 3600000, got 5");
  EXPECT_EQ(runtime::Validate(bad).code(), StatusCode::kInvalidArgument);
  bad = runtime::Config{};
  bad.energy_rate_hz = 5000;
  EXPECT_NE(runtime::Validate(bad).message().find("key daemon.energy_rate_hz"), std::string::npos);
  bad = runtime::Config{};
  bad.rollup_write_frames = -1;
  EXPECT_EQ(runtime::Validate(bad).message(),
            "key store.rollup_write_frames: must be between 0 and 1000000");
  bad = runtime::Config{};
  bad.listen = "nowhere";
  EXPECT_NE(runtime::Validate(bad).message().find("key daemon.listen"), std::string::npos);
}

TEST(Config, CommitIntervalIsAutomaticUnlessSetAndMinusOneMeansAutomatic) {
  runtime::Config c;
  EXPECT_EQ(c.commit_interval_ms, runtime::kCommitIntervalAuto);
  EXPECT_TRUE(runtime::Validate(c).ok());
  ASSERT_TRUE(runtime::ApplyToml("[store]\ncommit_interval_ms = 30000\n", "f.toml", c).ok());
  EXPECT_EQ(c.commit_interval_ms, 30000);
  ASSERT_TRUE(runtime::ApplyToml("[store]\ncommit_interval_ms = -1\n", "f.toml", c).ok());
  EXPECT_EQ(c.commit_interval_ms, runtime::kCommitIntervalAuto);
  EXPECT_TRUE(runtime::Validate(c).ok());
  for (int64_t bad : {int64_t{-2}, int64_t{600'001}, INT64_MIN}) {
    c.commit_interval_ms = bad;
    EXPECT_EQ(runtime::Validate(c).message(),
              "key store.commit_interval_ms: must be between 0 and 600000, or -1 (automatic)")
        << bad;
  }
}

TEST(Config, MetricsTokenFileNeedsTheHttpListener) {
  runtime::Config c;
  EXPECT_EQ(runtime::ApplyToml("[daemon]\nmetrics_token_file = \"/etc/edgemon/http.token\"\n",
                               "f.toml", c)
                .message(),
            "");
  EXPECT_EQ(c.metrics_token_file, "/etc/edgemon/http.token");
  EXPECT_EQ(runtime::Validate(c).message(),
            "key daemon.metrics_token_file: there is no HTTP listener to protect (set "
            "daemon.metrics_listen)");
  c.metrics_listen = "9469";
  EXPECT_EQ(runtime::Validate(c).message(), "");
}

TEST(Config, ApiKeys) {
  runtime::Config c;
  EXPECT_EQ(runtime::ApplyToml("[daemon]\ntcp_listen = \"127.0.0.1:7070\"\nmax_streams = 8\n",
                               "f.toml", c)
                .message(),
            "");
  EXPECT_EQ(c.tcp_listen, "127.0.0.1:7070");
  EXPECT_EQ(c.max_streams, 8);
  EXPECT_EQ(runtime::Validate(c).message(), "");
  // Non-loopback TCP without TLS is refused, naming the key.
  c.tcp_listen = "0.0.0.0:7070";
  EXPECT_EQ(runtime::Validate(c).message(),
            "key daemon.tcp_listen: 0.0.0.0:7070 is not a loopback address; refusing plain-text "
            "TCP (set daemon.tls_cert and daemon.tls_key)");
  c.tls_cert = "/etc/edgemon/cert.pem";
  EXPECT_EQ(runtime::Validate(c).message(),
            "keys daemon.tls_cert and daemon.tls_key: set both or neither");
  c.tls_key = "/etc/edgemon/key.pem";
  EXPECT_EQ(runtime::Validate(c).message(), "");
  // The main listen address follows the same rule.
  runtime::Config d;
  d.listen = "192.168.1.5:7070";
  EXPECT_NE(
      runtime::Validate(d).message().find("key daemon.listen: 192.168.1.5:7070 is not a loopback"),
      std::string::npos);
  d.listen = "[::1]:7070";
  EXPECT_EQ(runtime::Validate(d).message(), "");
  d.listen = "unix:";
  EXPECT_NE(runtime::Validate(d).message().find("key daemon.listen"), std::string::npos);
  runtime::Config e;
  e.tcp_listen = "7070";
  EXPECT_NE(runtime::Validate(e).message().find("key daemon.tcp_listen: expected host:port"),
            std::string::npos);
  e = runtime::Config{};
  e.max_streams = 0;
  EXPECT_EQ(runtime::Validate(e).message(),
            "key daemon.max_streams: must be between 1 and 100000, got 0");
  EXPECT_NE(runtime::ApplyToml("[daemon]\nmax_streams = \"many\"\n", "f.toml", e)
                .message()
                .find("max_streams"),
            std::string::npos);
}

TEST(Config, RealtimeIsOptIn) {
  runtime::Config c;
  EXPECT_FALSE(c.realtime);
  EXPECT_EQ(runtime::ApplyToml("[daemon]\nrealtime = true\n", "f.toml", c).message(), "");
  EXPECT_TRUE(c.realtime);
  EXPECT_EQ(runtime::ApplyToml("[daemon]\nrealtime = 1\n", "f.toml", c).message(),
            "f.toml: key daemon.realtime: expected true or false");
  EXPECT_TRUE(c.realtime);
}

TEST(Config, ErrorsStayOneLineWhateverTheFileHolds) {
  // The parser quotes the offending bytes; a newline or control byte there
  // must not split the error (found by config_fuzz).
  runtime::Config c;
  std::string text("11101101=n\n\n\n\n", 14);
  text += std::string(4, '\0') + "\n=\n\n119";
  std::string err = runtime::ApplyToml(text, "f.toml", c).message();
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_NE(err.find("f.toml:1:"), std::string::npos) << err;
  EXPECT_NE(err.find("\\n"), std::string::npos) << err;  // shown escaped
  runtime::Config bad;
  bad.tcp_listen = "host\nname:7070";
  err = runtime::Validate(bad).message();
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST(Config, DeepDocumentsAreRefusedBeforeParsing) {
  // 40,000 levels crashed the TOML parser (stack exhaustion) at start and on
  // SIGHUP reload; now refused with one line naming the place.
  runtime::Config c;
  std::string arrays = "[daemon]\nroot = " + std::string(40000, '[') + std::string(40000, ']');
  std::string err = runtime::ApplyToml(arrays, "f.toml", c).message();
  EXPECT_NE(err.find("f.toml:2: nested deeper than"), std::string::npos) << err;
  std::string tables = "x = ";
  for (int i = 0; i < 40000; ++i) tables += "{a = ";
  tables += "1" + std::string(40000, '}');
  EXPECT_NE(runtime::ApplyToml(tables, "f.toml", c).message().find("nested deeper"),
            std::string::npos);
  std::string dotted = "[a";
  for (int i = 0; i < 30000; ++i) dotted += ".a";
  dotted += "]\n";
  EXPECT_NE(runtime::ApplyToml(dotted, "f.toml", c).message().find("f.toml:1: nested deeper"),
            std::string::npos);
  // What a real config holds still passes: dots inside strings and numbers,
  // brackets in comments and strings.
  EXPECT_EQ(runtime::ApplyToml("# [[[[[[[[[[[[ a.b.c.d.e.f.g.h.i.j\n[daemon]\n"
                               "tcp_listen = \"127.0.0.1:7070\" # x.y.z.w.v.u.t.s.r\n"
                               "root = '/a.b/c.d/e.f/g.h/i.j/k.l/m.n/o.p/q[[[[[[[[[['\n",
                               "f.toml", c)
                .message(),
            "");
  EXPECT_EQ(c.root, "/a.b/c.d/e.f/g.h/i.j/k.l/m.n/o.p/q[[[[[[[[[[");
}

TEST(Config, NumericLimitsAreCheckedBeforeArithmetic) {
  // 18446744074 s in nanoseconds wraps int64 to 0.29 s, which deleted history.
  runtime::Config c;
  ASSERT_EQ(runtime::ApplyToml("[store]\nretention = 18446744074\n", "f.toml", c).message(), "");
  EXPECT_EQ(runtime::Validate(c).message(), "key store.retention: must be between 1m and 3650d");
  c = runtime::Config{};
  ASSERT_EQ(runtime::ApplyToml("[store]\nretention = \"1000000d\"\n", "f.toml", c).message(), "");
  EXPECT_EQ(runtime::Validate(c).message(), "key store.retention: must be between 1m and 3650d");
  c = runtime::Config{};
  EXPECT_NE(runtime::ApplyToml("[store]\nretention = 9223372036854775807\n", "f.toml", c)
                .message()
                .find("key store.retention: expected a duration"),
            std::string::npos);
  c = runtime::Config{};
  ASSERT_EQ(runtime::ApplyToml("[store]\nrollup_retention = \"99999d\"\n", "f.toml", c).message(),
            "");
  EXPECT_EQ(runtime::Validate(c).message(), "key store.rollup_retention: must be at most 3650d");
  c = runtime::Config{};
  ASSERT_EQ(runtime::ApplyToml("[store]\nmax_size = \"9000GiB\"\n", "f.toml", c).message(), "");
  EXPECT_EQ(runtime::Validate(c).message(), "key store.max_size: must be between 1MiB and 1TiB");
}

TEST(Config, PlainTcpIsJudgedByAddressNotSpelling) {
  // "127." as a prefix of a name is not loopback: the name may resolve to
  // 0.0.0.0, which served plain gRPC on every interface.
  runtime::Config c;
  c.tcp_listen = "127.0.0.1.example.test:17071";
  EXPECT_NE(runtime::Validate(c).message().find("is not a loopback address"), std::string::npos);
  c.tcp_listen = ":17071";  // every address
  EXPECT_NE(runtime::Validate(c).message().find("key daemon.tcp_listen"), std::string::npos);
  c.tcp_listen = "127.0.0.2:17071";
  EXPECT_EQ(runtime::Validate(c).message(), "");
  c.tcp_listen = "[::1]:17071";
  EXPECT_EQ(runtime::Validate(c).message(), "");
  c.tcp_listen = "localhost:17071";
  EXPECT_EQ(runtime::Validate(c).message(), "");
}

TEST(Config, OnlyBoundedRegularFilesAreRead) {
  auto dir = std::filesystem::temp_directory_path() / ("edgemon-cfg-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_NE(runtime::ReadConfigFile(dir.string()).status().message().find("is not a regular file"),
            std::string::npos);
  auto fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(runtime::ReadConfigFile(fifo).status().message().find("is not a regular file"),
            std::string::npos);
  EXPECT_NE(runtime::ReadConfigFile("/dev/zero").status().message().find("is not a regular file"),
            std::string::npos);
  auto big = (dir / "big.toml").string();
  {
    std::ofstream out(big);
    out << std::string(runtime::kMaxConfigBytes + 1, '#');
  }
  EXPECT_NE(runtime::ReadConfigFile(big).status().message().find("is larger than"),
            std::string::npos);
  auto good = (dir / "good.toml").string();
  {
    std::ofstream out(good);
    out << "[daemon]\ninterval_ms = 500\n";
  }
  auto text = runtime::ReadConfigFile(good);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "[daemon]\ninterval_ms = 500\n");
  auto missing = runtime::ReadConfigFile((dir / "missing").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("cannot read config file"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The documented bounds of the configuration, at the boundary: the store's
// max_size up to 1 TiB (README), and a monitored root that must exist.

// The error of a config whose [store] max_size is `value` ("" when accepted).
std::string MaxSizeError(const std::string& value, int64_t* bytes = nullptr) {
  runtime::Config c;
  Status s = runtime::ApplyToml("[store]\nmax_size = " + value + "\n", "edgemond.toml", c);
  if (s.ok()) s = runtime::Validate(c);
  if (bytes != nullptr) *bytes = c.max_db_bytes;
  return s.message();
}

TEST(ConfigBounds, MaxSizeAcceptsTheDocumentedMaximumOf1TiB) {
  int64_t bytes = 0;
  EXPECT_EQ(MaxSizeError("\"1TiB\"", &bytes), "");
  EXPECT_EQ(bytes, int64_t{1} << 40);
  EXPECT_EQ(MaxSizeError("\"1024GiB\"", &bytes), "");
  EXPECT_EQ(bytes, int64_t{1} << 40);
  EXPECT_EQ(MaxSizeError("1099511627776", &bytes), "");  // a bare integer is bytes
  EXPECT_EQ(bytes, int64_t{1} << 40);
  EXPECT_EQ(MaxSizeError("\"1TB\"", &bytes), "");  // 10^12 bytes, under 1 TiB
  EXPECT_EQ(bytes, int64_t{1'000'000'000'000});
  EXPECT_EQ(runtime::ParseBytes("1TiB"), int64_t{1} << 40);
}

TEST(ConfigBounds, MaxSizeRefusesOneByteMoreThan1TiB) {
  for (const char* over : {"1099511627777", "\"1099511627777B\"", "\"2TiB\"", "\"1025GiB\""}) {
    EXPECT_EQ(MaxSizeError(over), "key store.max_size: must be between 1MiB and 1TiB") << over;
  }
  EXPECT_FALSE(runtime::ParseBytes("9999999TiB"));  // overflows int64: refused, not wrapped
}

TEST(ConfigBounds, AMissingRootIsRefusedWithOneLine) {
  const std::string dir = ::testing::TempDir() + "edgemon_root_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  runtime::Config c;
  c.root = dir;
  EXPECT_EQ(runtime::Validate(c).message(), "key daemon.root: " + dir + ": no such directory");
  EXPECT_EQ(runtime::CheckRootDirectory(dir, "--root").message(),
            "--root " + dir + ": no such directory");

  std::ofstream(dir) << "a file\n";
  EXPECT_EQ(runtime::CheckRootDirectory(dir, "--root").message(),
            "--root " + dir + ": not a directory");
  std::filesystem::remove(dir);

  std::filesystem::create_directory(dir);
  EXPECT_EQ(runtime::Validate(c).message(), "");
  EXPECT_TRUE(runtime::CheckRootDirectory(dir, "--root").ok());
  std::filesystem::remove(dir);
}

}  // namespace
}  // namespace edgemon
