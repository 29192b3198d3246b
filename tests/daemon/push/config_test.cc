// [[push]] tables in edgemond's TOML config (daemon/config.h PushConfig).
#include <gtest/gtest.h>

#include <string>

#include "daemon/runtime/config.h"

namespace edgemon {
namespace {

runtime::Config Valid() {
  runtime::Config c;
  c.root = "/";
  return c;
}

TEST(PushConfig, TablesApplyEveryKey) {
  runtime::Config c = Valid();
  const std::string toml = R"([[push]]
url = "https://vm.example:8428/api/v1/write"
headers = { X-Scope-OrgID = "fleet-3" }
tls_ca = "/etc/ssl/fleet-ca.pem"
batch_size = 2000
rate_limit = 500
interval = "30s"
timeout = "5s"
min_backoff = "200ms"
max_backoff = "2m"
send = ["frames"]
labels = { site = "lab-2", rack = "r7" }

[[push]]
url = "http://collector:4318/v1/metrics"
protocol = "otlp"
send = ["windows"]
)";
  ASSERT_EQ(runtime::ApplyToml(toml, "edgemond.toml", c).message(), "");
  ASSERT_EQ(c.push.size(), 2u);
  const runtime::PushConfig& a = c.push[0];
  EXPECT_EQ(a.url, "https://vm.example:8428/api/v1/write");
  EXPECT_EQ(a.protocol, "remote-write");
  EXPECT_EQ(a.headers,
            (std::vector<std::pair<std::string, std::string>>{{"X-Scope-OrgID", "fleet-3"}}));
  EXPECT_EQ(a.tls_ca, "/etc/ssl/fleet-ca.pem");
  EXPECT_EQ(a.batch_size, 2000);
  EXPECT_EQ(a.rate_limit, 500);
  EXPECT_EQ(a.interval_ms, 30'000);
  EXPECT_EQ(a.timeout_ms, 5'000);
  EXPECT_EQ(a.min_backoff_ms, 200);
  EXPECT_EQ(a.max_backoff_ms, 120'000);
  EXPECT_TRUE(a.frames);
  EXPECT_FALSE(a.windows);
  EXPECT_EQ(a.labels.size(), 2u);
  EXPECT_EQ(c.push[1].protocol, "otlp");
  EXPECT_FALSE(c.push[1].frames);
  EXPECT_TRUE(c.push[1].windows);
  EXPECT_EQ(runtime::Validate(c).message(), "");
}

TEST(PushConfig, ErrorsNameTheTableTheKeyAndTheReason) {
  auto apply = [](const std::string& toml) {
    runtime::Config c = Valid();
    Status s = runtime::ApplyToml(toml, "f.toml", c);
    if (!s.ok()) return s.message();
    return runtime::Validate(c).message();
  };
  EXPECT_EQ(apply("[push]\nurl = \"http://x/\"\n"), "f.toml: key push: expected [[push]] tables");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nbatch = 5\n"),
            "f.toml: push[0] key batch: unknown key");
  EXPECT_EQ(apply("[[push]]\nurl = 5\n"), "f.toml: push[0] key url: expected a string");
  EXPECT_EQ(apply("[[push]]\nprotocol = \"otlp\"\n"), "push[0] key url: missing");
  EXPECT_EQ(apply("[[push]]\nurl = \"ftp://x/\"\n"),
            "push[0] key url: the scheme must be http or https, got \"ftp://x/\"");
  EXPECT_EQ(
      apply(
          "[[push]]\nurl = \"http://x/\"\n[[push]]\nurl = \"http://y/\"\nprotocol = \"influx\"\n"),
      "push[1] key protocol: must be remote-write or otlp");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nsend = [\"frames\", \"logs\"]\n"),
            "f.toml: push[0] key send: each entry must be \"frames\" or \"windows\"");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nsend = []\n"),
            "push[0] key send: must name frames, windows or both");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nlabels = { __name__ = \"x\" }\n"),
            "push[0] key labels: \"__name__\" is no label name ([a-zA-Z_][a-zA-Z0-9_]*, not __*)");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nlabels = { site = 3 }\n"),
            "f.toml: push[0] key labels.site: expected a string");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nheaders = { \"Bad Header\" = \"v\" }\n"),
            "push[0] key headers: \"Bad Header\" is no header name");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nbatch_size = 0\n"),
            "push[0] key batch_size: must be between 1 and 1000000");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nmin_backoff = \"1m\"\nmax_backoff = \"1s\"\n"),
            "push[0] keys min_backoff, max_backoff: need 10ms <= min_backoff <= max_backoff <= 1d");
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\ninterval = \"soon\"\n")
                .rfind("f.toml: push[0] key interval: ", 0),
            0u);
  EXPECT_EQ(apply("[[push]]\nurl = \"http://x/\"\nbearer_token_file = \"/nonexistent/token\"\n"),
            "push[0] key bearer_token_file: secret file /nonexistent/token: /nonexistent does not "
            "exist");
}

}  // namespace
}  // namespace edgemon
