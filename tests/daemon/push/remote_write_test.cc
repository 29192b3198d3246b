#include "daemon/push/remote_write.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <string>
#include <vector>

#include "daemon/metrics/exposition.h"
#include "daemon/push/http.h"
#include "remote_write.pb.h"
#include "tests/support/inventory.h"

namespace edgemon::push {
namespace {

using testing::AddChannel;

constexpr int64_t kT0 = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kSec = 1'000'000'000;

Inventory Board() {
  Inventory inv;
  Channel& in = AddChannel(inv, Kind::kRail, "VDD_IN", Field::kPower);
  in.flags = kFlagInputRail;
  in.device = "ina3221 1-0040";
  Channel& gpu = AddChannel(inv, Kind::kRail, "VDD_GPU", Field::kPower);
  gpu.parent = "VDD_IN";
  AddChannel(inv, Kind::kRail, "VDD_IN", Field::kEnergy).flags = kFlagInputRail | kFlagCounter;
  AddChannel(inv, Kind::kThermal, "cpu-thermal", Field::kTemp);
  AddChannel(inv, Kind::kCpu, "cpu0", Field::kFreq);
  AddChannel(inv, Kind::kThermal, "PMIC-Die", Field::kTemp).flags = kFlagConstant;
  return inv;
}

Frame At(int64_t t, std::vector<Value> values) {
  Frame f;
  f.realtime_ns = t;
  f.values = std::move(values);
  return f;
}

std::string Get(const LabelSet& labels, const std::string& name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "<absent>";
}

Identity Orin() {
  Identity id;
  id.host_name = "orin-7";
  id.host_id = "0123abcd";
  id.board_model = "NVIDIA Jetson AGX Orin";
  id.soc = "tegra234";
  id.labels = {{"site", "lab-2"}, {"job", "edge"}};
  return id;
}

TEST(RemoteWrite, ExternalLabelsNameTheBoardAndConfiguredOnesReplaceBuiltIns) {
  LabelSet l = ExternalLabels(Orin());
  EXPECT_EQ(Get(l, "instance"), "orin-7");
  EXPECT_EQ(Get(l, "machine_id"), "0123abcd");
  EXPECT_EQ(Get(l, "board_model"), "NVIDIA Jetson AGX Orin");
  EXPECT_EQ(Get(l, "soc"), "tegra234");
  EXPECT_EQ(Get(l, "l4t"), "<absent>");  // unknown: left out, not ""
  EXPECT_EQ(Get(l, "site"), "lab-2");
  EXPECT_EQ(Get(l, "job"), "edge");
  EXPECT_EQ(std::count_if(l.begin(), l.end(), [](auto& p) { return p.first == "job"; }), 1);
}

TEST(RemoteWrite, LabelsAreSortedWithNameFirstAndSeriesLabelsWinOverExternal) {
  LabelSet l = {{"rail", "x"}, {"Zone", "z"}, {"__name__", "m"}, {"device", "a"}, {"device", "b"}};
  SortLabels(l);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].first, "__name__");
  EXPECT_EQ(l[1].first, "Zone");  // byte order after __name__
  EXPECT_EQ(l[2], (std::pair<std::string, std::string>{"device", "a"}));
  EXPECT_EQ(l[3].first, "rail");

  SeriesLabels plan(Board(), {{"rail", "external"}, {"site", "s"}});
  for (const auto& e : plan.entries()) {
    ASSERT_FALSE(e.labels.empty());
    EXPECT_EQ(e.labels[0].first, "__name__");
    for (size_t i = 2; i < e.labels.size(); ++i)
      EXPECT_LT(e.labels[i - 1].first, e.labels[i].first);
    EXPECT_EQ(Get(e.labels, "site"), "s");
    if (Get(e.labels, "__name__").rfind("edgemon_rail_", 0) == 0) {
      EXPECT_NE(Get(e.labels, "rail"), "external");
    }
  }
}

// The names and labels are /metrics's: every series sent appears, with the
// same labels, in the text exposition of the same inventory.
TEST(RemoteWrite, SeriesAreNamedAsTheExpositionNamesThem) {
  Inventory inv = Board();
  Frame f = At(kT0, {5123, 1200, 987654, 45500, 1'984'000, 40000});
  std::string text = metrics::RenderExposition(inv, &f, {}, metrics::Format::kPrometheus);
  SeriesLabels plan(inv, {});
  std::vector<Series> series = FrameSeries(plan, std::span(&f, 1));
  ASSERT_EQ(series.size(), 5u);  // the constant channel is not exported
  for (const Series& s : series) {
    std::string line = Get(s.labels, "__name__");
    std::string labels;
    for (const auto& [k, v] : s.labels) {
      if (k != "__name__") labels += k + "=\"" + v + "\"";
    }
    // The exposition writes labels in plan order; compare as sets of pairs.
    bool found = false;
    size_t at = 0;
    while ((at = text.find("\n" + line + "{", at)) != std::string::npos) {
      size_t end = text.find('}', at);
      std::string got = text.substr(at + line.size() + 2, end - at - line.size() - 2);
      bool all = true;
      for (const auto& [k, v] : s.labels) {
        if (k != "__name__" && got.find(k + "=\"" + v + "\"") == std::string::npos) all = false;
      }
      found = found || all;
      ++at;
    }
    EXPECT_TRUE(found) << line << "{" << labels << "} not in\n" << text;
  }
  auto by_name = [&](const std::string& n, const std::string& rail) -> const Series* {
    for (const Series& s : series) {
      if (Get(s.labels, "__name__") == n && (rail.empty() || Get(s.labels, "rail") == rail)) {
        return &s;
      }
    }
    return nullptr;
  };
  const Series* in = by_name("edgemon_rail_power_watts", "VDD_IN");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->samples[0], (std::pair<int64_t, double>{kT0 / 1'000'000, 5.123}));
  EXPECT_EQ(Get(in->labels, "input"), "true");
  EXPECT_EQ(Get(in->labels, "parent"), "<absent>");  // "" is no label to Prometheus
  const Series* energy = by_name("edgemon_rail_energy_joules_total", "VDD_IN");
  ASSERT_NE(energy, nullptr);
  EXPECT_DOUBLE_EQ(energy->samples[0].second, 987.654);
  const Series* freq = by_name("edgemon_cpu_frequency_hertz", "");
  ASSERT_NE(freq, nullptr);
  EXPECT_DOUBLE_EQ(freq->samples[0].second, 1'984'000'000.0);
}

TEST(RemoteWrite, AbsentValuesAreLeftOutAndEachSampleKeepsItsFrameTime) {
  Inventory inv = Board();
  std::vector<Frame> frames = {At(kT0, {1000, std::nullopt, 5, std::nullopt, 1, std::nullopt}),
                               At(kT0 + kSec + 7'000'000, {2000, 7, 6, std::nullopt, 1, 1})};
  std::vector<Series> series = FrameSeries(SeriesLabels(inv, {}), frames);
  // VDD_IN power 2, VDD_GPU power 1, energy 2, cpu0 freq 2; the thermal zone
  // never had a value and has no series.
  ASSERT_EQ(series.size(), 4u);
  EXPECT_EQ(SampleCount(series), 7u);
  EXPECT_EQ(series[0].samples[1].first, kT0 / 1'000'000 + 1007);
  EXPECT_EQ(series[1].samples.size(), 1u);
  EXPECT_EQ(series[1].samples[0].first, kT0 / 1'000'000 + 1007);
}

TEST(RemoteWrite, WriteRequestDecodesWithPrometheusFieldNumbersAfterSnappy) {
  std::vector<Series> series = {
      {{{"__name__", "edgemon_rail_power_watts"}, {"rail", "VDD_IN"}},
       {{1000, 5.5}, {2000, -1.25}}},
      {{{"__name__", "up"}}, {{3000, 1}}},
  };
  std::string compressed = SnappyCompress(EncodeWriteRequest(series));
  std::string raw;
  ASSERT_TRUE(snappy::Uncompress(compressed.data(), compressed.size(), &raw));
  prometheus::WriteRequest req;
  ASSERT_TRUE(req.ParseFromString(raw));
  ASSERT_EQ(req.timeseries_size(), 2);
  EXPECT_EQ(req.timeseries(0).labels(1).name(), "rail");
  EXPECT_EQ(req.timeseries(0).labels(1).value(), "VDD_IN");
  EXPECT_EQ(req.timeseries(0).samples(1).timestamp(), 2000);
  EXPECT_EQ(req.timeseries(0).samples(1).value(), -1.25);
  // Wire bytes of the upstream numbering: WriteRequest.timeseries = 1 (0x0a),
  // TimeSeries.labels = 1 (0x0a), Label.name = 1 (0x0a), Sample.value = 1
  // (0x09, fixed64) and Sample.timestamp = 2 (0x10, varint).
  prometheus::WriteRequest one;
  auto* ts = one.add_timeseries();
  auto* s = ts->add_samples();
  s->set_value(1);
  s->set_timestamp(5);
  EXPECT_EQ(one.SerializeAsString(),
            std::string("\x0a\x0d\x12\x0b\x09\x00\x00\x00\x00\x00\x00\xf0\x3f\x10\x05", 15));
}

TEST(RemoteWrite, WindowsBecomeOneSamplePerRailAtTheWindowsEnd) {
  WindowEnergy w;
  w.window.id = 42;
  w.window.label = "resnet50 batch 8";
  w.window.start_ns = kT0;
  w.window.end_ns = kT0 + 90 * kSec;
  RailSummary in;
  in.name = "VDD_IN";
  in.energy_mj = 812'500;
  RailSummary none;
  none.name = "VDD_GPU";  // no counter at both edges: no sample
  w.rails = {in, none};
  std::vector<Series> s =
      WindowSeries(SeriesLabels(Board(), {{"instance", "orin-7"}}), std::span(&w, 1));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(Get(s[0].labels, "__name__"), "edgemon_window_energy_joules");
  EXPECT_EQ(Get(s[0].labels, "window"), "resnet50 batch 8");
  EXPECT_EQ(Get(s[0].labels, "window_id"), "42");
  EXPECT_EQ(Get(s[0].labels, "rail"), "VDD_IN");
  EXPECT_EQ(Get(s[0].labels, "instance"), "orin-7");
  EXPECT_EQ(s[0].samples[0], (std::pair<int64_t, double>{(kT0 + 90 * kSec) / 1'000'000, 812.5}));
}

TEST(PushHttp, UrlsAreCheckedAndDisplayedWithoutTheirQuery) {
  auto u = runtime::ParseUrl("https://vm.example:8428/api/v1/write?extra_label=a");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->host, "vm.example");
  EXPECT_EQ(u->port, 8428);
  EXPECT_EQ(u->path, "/api/v1/write?extra_label=a");
  EXPECT_EQ(u->display, "https://vm.example:8428/api/v1/write");
  auto v6 = runtime::ParseUrl("http://[::1]:9090/api/v1/write");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->display, "http://[::1]:9090/api/v1/write");
  auto bare = runtime::ParseUrl("http://collector");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->path, "/");
  EXPECT_FALSE(runtime::ParseUrl("ftp://x/").ok());
  EXPECT_FALSE(runtime::ParseUrl("http://user:secret@x/").ok());
  EXPECT_FALSE(runtime::ParseUrl("http://x:0/").ok());
  EXPECT_FALSE(runtime::ParseUrl("http://x:99999/").ok());
  EXPECT_FALSE(runtime::ParseUrl("localhost:9090").ok());
}

TEST(PushHttp, RetryAfterIsSecondsOrAnHttpDate) {
  EXPECT_EQ(ParseRetryAfterMs("7", 0), 7000);
  EXPECT_EQ(ParseRetryAfterMs(" 0 ", 0), 0);
  EXPECT_EQ(ParseRetryAfterMs("-3", 0), std::nullopt);
  EXPECT_EQ(ParseRetryAfterMs("soon", 0), std::nullopt);
  // Honoured up to the cap, whatever the number of digits.
  EXPECT_EQ(ParseRetryAfterMs("3600", 0), kRetryAfterCapMs);
  EXPECT_EQ(ParseRetryAfterMs("7200", 0), kRetryAfterCapMs);
  EXPECT_EQ(ParseRetryAfterMs("99999999999999999999", 0), kRetryAfterCapMs);
  EXPECT_EQ(ParseRetryAfterMs("Fri, 31 Dec 9999 23:59:59 GMT", 0), kRetryAfterCapMs);
  // Sun, 06 Nov 1994 08:49:37 GMT is 784111777 s; asked 10 s before.
  EXPECT_EQ(ParseRetryAfterMs("Sun, 06 Nov 1994 08:49:37 GMT", 784'111'767'000'000'000LL), 10'000);
  EXPECT_EQ(ParseRetryAfterMs("Sun, 06 Nov 1994 08:49:37 GMT", 784'111'787'000'000'000LL), 0);
}

}  // namespace
}  // namespace edgemon::push
