#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "daemon/push/otlp.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "tests/support/inventory.h"

namespace edgemon::push {
namespace {

namespace collector = opentelemetry::proto::collector::metrics::v1;
namespace otlp = opentelemetry::proto::metrics::v1;

constexpr int64_t kT0 = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kSec = 1'000'000'000;

// Appends a channel (testing::AddChannel) with the flags, parent and device
// a rail or sensor needs.
void Add(Inventory& inv, Kind kind, std::string name, Field field, uint32_t flags = 0,
         std::string parent = "", std::string device = "") {
  Channel& c = testing::AddChannel(inv, kind, std::move(name), field);
  c.unit = UnitOf(field);
  c.flags = flags;
  c.parent = std::move(parent);
  c.device = std::move(device);
}

Frame At(int64_t t, std::vector<Value> values) {
  Frame f;
  f.realtime_ns = t;
  f.values = std::move(values);
  return f;
}

collector::ExportMetricsServiceRequest Decode(const std::string& bytes) {
  collector::ExportMetricsServiceRequest req;
  EXPECT_TRUE(req.ParseFromString(bytes));
  return req;
}

const otlp::Metric* Find(const collector::ExportMetricsServiceRequest& req,
                         const std::string& name) {
  const otlp::Metric* found = nullptr;
  for (const auto& m : req.resource_metrics(0).scope_metrics(0).metrics()) {
    if (m.name() == name) {
      EXPECT_EQ(found, nullptr) << name << " twice";
      found = &m;
    }
  }
  return found;
}

const google::protobuf::RepeatedPtrField<otlp::NumberDataPoint>& Points(const otlp::Metric& m) {
  return m.has_sum() ? m.sum().data_points() : m.gauge().data_points();
}

std::map<std::string, std::string> Attrs(
    const google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>& kvs) {
  std::map<std::string, std::string> out;
  for (const auto& kv : kvs) {
    const auto& v = kv.value();
    out[kv.key()] = v.has_bool_value()  ? (v.bool_value() ? "true" : "false")
                    : v.has_int_value() ? std::to_string(v.int_value())
                                        : v.string_value();
  }
  return out;
}

Identity Board() {
  Identity id;
  id.host_name = "orin-7";
  id.host_id = "abc123";
  id.board_model = "NVIDIA Jetson Orin Nano";
  id.soc = "tegra234";
  return id;
}

TEST(OtlpFrames, AbsentValuesAreLeftOutNotSentAsZero) {
  Inventory inv;
  Add(inv, Kind::kRail, "VDD_IN", Field::kPower, kFlagInputRail);
  std::vector<Frame> frames{At(kT0, {5123}), At(kT0 + kSec, {std::nullopt}),
                            At(kT0 + 2 * kSec, {4000})};
  auto req = Decode(EncodeOtlpFrames(inv, frames, Board()));
  const otlp::Metric* m = Find(req, "hw.host.power");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(Points(*m).size(), 2);
  EXPECT_EQ(Points(*m)[0].time_unix_nano(), static_cast<uint64_t>(kT0));
  EXPECT_DOUBLE_EQ(Points(*m)[0].as_double(), 5.123);
  EXPECT_EQ(Points(*m)[1].time_unix_nano(), static_cast<uint64_t>(kT0 + 2 * kSec));
  EXPECT_DOUBLE_EQ(Points(*m)[1].as_double(), 4.0);
}

TEST(OtlpFrames, ConstantChannelsAndMetricsWithoutPointsAreLeftOut) {
  Inventory inv;
  Add(inv, Kind::kThermal, "PMIC-Die", Field::kTemp, kFlagConstant);
  Add(inv, Kind::kThermal, "cpu-thermal", Field::kTemp);
  Add(inv, Kind::kFan, "pwmfan", Field::kSpeed);
  auto req =
      Decode(EncodeOtlpFrames(inv, std::vector<Frame>{At(kT0, {100000, 45500, {}})}, Board()));
  const otlp::Metric* t = Find(req, "hw.temperature");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->unit(), "Cel");
  ASSERT_EQ(Points(*t).size(), 1);
  EXPECT_DOUBLE_EQ(Points(*t)[0].as_double(), 45.5);
  EXPECT_EQ(Attrs(Points(*t)[0].attributes())["hw.name"], "cpu-thermal");
  EXPECT_EQ(Find(req, "hw.fan.speed"), nullptr);  // its one value was absent
}

TEST(OtlpFrames, NamesUnitsScalesAndRailTree) {
  Inventory inv;
  Add(inv, Kind::kRail, "VDD_IN", Field::kPower, kFlagInputRail, "", "ina3221 1-0040");
  Add(inv, Kind::kRail, "VDD_SOC", Field::kPower, 0, "VDD_IN", "ina3221 1-0040");
  Add(inv, Kind::kCpu, "cpu3", Field::kFreq);
  Add(inv, Kind::kMemory, "ram", Field::kUsed);
  Add(inv, Kind::kGpu, "gpu", Field::kLoad);
  Add(inv, Kind::kFan, "pwmfan", Field::kSpeed);
  Add(inv, Kind::kRail, "VDD_SOC", Field::kVoltage, 0, "VDD_IN");
  Add(inv, Kind::kBoard, "nvpmodel", Field::kMode);
  Add(inv, Kind::kGpu, "gpu", Field::kShared);
  Add(inv, Kind::kRail, "VDD_SOC", Field::kCurrent, 0, "VDD_IN");
  std::vector<Frame> frames{At(kT0, {7000, 1500, 1'510'000, 2048, 500, 3200, 5050, 2, 10, 300})};
  auto req = Decode(EncodeOtlpFrames(inv, frames, Board()));

  struct Want {
    const char* name;
    const char* unit;
    bool is_double;
    double value;
  };
  for (const Want& w :
       {Want{"hw.host.power", "W", true, 7.0}, Want{"hw.power", "W", true, 1.5},
        Want{"edgemon.cpu.frequency", "Hz", false, 1'510'000'000.0},
        Want{"edgemon.memory.used", "By", false, 2048.0 * 1024},
        Want{"hw.gpu.utilization", "1", true, 0.5}, Want{"hw.fan.speed", "rpm", false, 3200},
        Want{"hw.voltage", "V", true, 5.05}, Want{"edgemon.nvpmodel.mode", "", false, 2},
        Want{"edgemon.gpu.memory_shared", "By", false, 10240},
        Want{"edgemon.rail.current", "A", true, 0.3}}) {
    SCOPED_TRACE(w.name);
    const otlp::Metric* m = Find(req, w.name);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->unit(), w.unit);
    EXPECT_TRUE(m->has_gauge());
    ASSERT_EQ(Points(*m).size(), 1);
    const auto& p = Points(*m)[0];
    if (w.is_double) {
      ASSERT_TRUE(p.has_as_double());
      EXPECT_DOUBLE_EQ(p.as_double(), w.value);
    } else {
      ASSERT_TRUE(p.has_as_int());
      EXPECT_EQ(p.as_int(), static_cast<int64_t>(w.value));
    }
  }
  auto host = Attrs(Points(*Find(req, "hw.host.power"))[0].attributes());
  EXPECT_EQ(host["hw.id"], "rail/VDD_IN");
  EXPECT_EQ(host["edgemon.rail.input"], "true");
  EXPECT_EQ(host["device"], "ina3221 1-0040");
  EXPECT_EQ(host.count("hw.parent"), 0u);
  auto sub = Attrs(Points(*Find(req, "hw.power"))[0].attributes());
  EXPECT_EQ(sub["hw.id"], "rail/VDD_SOC");
  EXPECT_EQ(sub["hw.type"], "power_supply");  // VDD_SOC names no GPU, CPU or memory
  EXPECT_EQ(sub["edgemon.rail"], "VDD_SOC");
  EXPECT_EQ(host.count("hw.type"), 0u);  // hw.host.* has no hw.type
  EXPECT_EQ(sub["hw.parent"], "rail/VDD_IN");
  EXPECT_EQ(Attrs(Points(*Find(req, "hw.voltage"))[0].attributes())["hw.type"], "voltage");
  auto current = Attrs(Points(*Find(req, "edgemon.rail.current"))[0].attributes());
  EXPECT_EQ(current["hw.parent"], "rail/VDD_IN");  // every rail metric names its parent
  EXPECT_EQ(current.count("rail"), 0u);
  EXPECT_EQ(Attrs(Points(*Find(req, "edgemon.cpu.frequency"))[0].attributes())["cpu"], "cpu3");
}

// Semantic conventions 1.44: hw.type only from its enum (a rail's by what it
// feeds), engine load as hw.gpu.utilization by hw.gpu.task, the version in
// the scope's schema_url.
TEST(OtlpFrames, FollowsTheNamedSemanticConventionsVersion) {
  Inventory inv;
  Add(inv, Kind::kRail, "VDD_GPU_SOC", Field::kPower);
  Add(inv, Kind::kRail, "VDD_CPU_CV", Field::kEnergy);
  Add(inv, Kind::kRail, "VDDQ_VDD2_1V8AO", Field::kPower);
  Add(inv, Kind::kGpu, "gpu", Field::kLoad);
  Add(inv, Kind::kEngine, "NVENC", Field::kLoad);
  Add(inv, Kind::kEngine, "NVDEC", Field::kLoad);
  Add(inv, Kind::kEngine, "NVJPG", Field::kLoad);
  std::vector<Frame> frames{At(kT0, {1000, 2000, 300, 400, 250, 125, 50})};
  auto req = Decode(EncodeOtlpFrames(inv, frames, Board()));
  EXPECT_EQ(req.resource_metrics(0).scope_metrics(0).schema_url(),
            "https://opentelemetry.io/schemas/1.44.0");
  std::map<std::string, std::string> type_of;
  for (const auto& p : Points(*Find(req, "hw.power"))) {
    auto a = Attrs(p.attributes());
    type_of[a["hw.name"]] = a["hw.type"];
  }
  type_of["VDD_CPU_CV"] = Attrs(Points(*Find(req, "hw.energy"))[0].attributes())["hw.type"];
  EXPECT_EQ(type_of,
            (std::map<std::string, std::string>{
                {"VDD_GPU_SOC", "gpu"}, {"VDD_CPU_CV", "cpu"}, {"VDDQ_VDD2_1V8AO", "memory"}}));
  std::map<std::string, double> by_task;
  for (const auto& p : Points(*Find(req, "hw.gpu.utilization"))) {
    auto a = Attrs(p.attributes());
    EXPECT_EQ(a["hw.type"], "gpu");
    by_task[a["hw.gpu.task"]] = p.as_double();
  }
  EXPECT_EQ(by_task, (std::map<std::string, double>{
                         {"general", 0.4}, {"encoder", 0.25}, {"decoder", 0.125}}));
  EXPECT_NE(Find(req, "edgemon.engine.load"), nullptr);  // NVJPG is no GPU task
}

TEST(OtlpFrames, OneMetricPerNameCarriesEveryChannelAndFrame) {
  Inventory inv;
  Add(inv, Kind::kRail, "VDD_CPU", Field::kPower, 0, "VDD_IN");
  Add(inv, Kind::kRail, "VDD_GPU", Field::kPower, 0, "VDD_IN");
  std::vector<Frame> frames;
  for (int i = 0; i < 3; ++i) frames.push_back(At(kT0 + i * kSec, {1000 + i, 2000 + i}));
  auto req = Decode(EncodeOtlpFrames(inv, frames, Board()));
  ASSERT_EQ(req.resource_metrics(0).scope_metrics(0).metrics_size(), 1);
  const otlp::Metric* m = Find(req, "hw.power");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(Points(*m).size(), 6);
  for (int i = 0; i < 6; ++i) {
    const auto& p = Points(*m)[i];
    EXPECT_EQ(Attrs(p.attributes())["hw.name"], i < 3 ? "VDD_CPU" : "VDD_GPU");
    EXPECT_EQ(p.time_unix_nano(), static_cast<uint64_t>(kT0 + (i % 3) * kSec));
    EXPECT_DOUBLE_EQ(p.as_double(), (i < 3 ? 1.0 : 2.0) + (i % 3) / 1000.0);
  }
}

TEST(OtlpFrames, EnergyIsACumulativeMonotonicSumFromTheCounterStart) {
  Inventory inv;
  Add(inv, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagInputRail | kFlagCounter);
  Add(inv, Kind::kRail, "VDD_SOC", Field::kEnergy, kFlagCounter, "VDD_IN");
  std::vector<Frame> frames{At(kT0, {10'000, 500}), At(kT0 + kSec, {15'000, 900}),
                            At(kT0 + 2 * kSec, {20'000, 100}),  // VDD_SOC's counter restarted
                            At(kT0 + 3 * kSec, {25'000, 300})};
  OtlpOptions opt;
  opt.counter_start_ns = kT0 - 60 * kSec;
  auto req = Decode(EncodeOtlpFrames(inv, frames, Board(), opt));

  const otlp::Metric* host = Find(req, "hw.host.energy");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->unit(), "J");
  ASSERT_TRUE(host->has_sum());
  EXPECT_EQ(host->sum().aggregation_temporality(), otlp::AGGREGATION_TEMPORALITY_CUMULATIVE);
  EXPECT_TRUE(host->sum().is_monotonic());
  ASSERT_EQ(host->sum().data_points_size(), 4);
  for (const auto& p : host->sum().data_points()) {
    EXPECT_EQ(p.start_time_unix_nano(), static_cast<uint64_t>(opt.counter_start_ns));
  }
  EXPECT_DOUBLE_EQ(host->sum().data_points(3).as_double(), 25.0);

  const otlp::Metric* sub = Find(req, "hw.energy");
  ASSERT_NE(sub, nullptr);
  ASSERT_EQ(sub->sum().data_points_size(), 4);
  EXPECT_EQ(sub->sum().data_points(1).start_time_unix_nano(),
            static_cast<uint64_t>(opt.counter_start_ns));
  // After the drop the run starts after the last point of the old one.
  EXPECT_EQ(sub->sum().data_points(2).start_time_unix_nano(), static_cast<uint64_t>(kT0 + kSec));
  EXPECT_EQ(sub->sum().data_points(3).start_time_unix_nano(), static_cast<uint64_t>(kT0 + kSec));
}

TEST(OtlpFrames, OtherCountersAreSumsWithoutTheEnergyStart) {
  Inventory inv;
  Add(inv, Kind::kFan, "pwmfan", Field::kLoad, kFlagCounter);
  OtlpOptions opt;
  opt.counter_start_ns = kT0 - 60 * kSec;
  auto req = Decode(EncodeOtlpFrames(inv, std::vector<Frame>{At(kT0, {7})}, Board(), opt));
  const otlp::Metric* m = Find(req, "edgemon.fan.load");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->has_sum());
  EXPECT_TRUE(m->sum().is_monotonic());
  EXPECT_EQ(m->sum().data_points(0).start_time_unix_nano(), 0u);
}

TEST(OtlpFrames, UnknownCounterStartIsLeftUnset) {
  Inventory inv;
  Add(inv, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagInputRail | kFlagCounter);
  std::vector<Frame> frames{At(kT0, {10'000})};
  auto unknown = Decode(EncodeOtlpFrames(inv, frames, Board()));
  EXPECT_EQ(Find(unknown, "hw.host.energy")->sum().data_points(0).start_time_unix_nano(), 0u);
  OtlpOptions later;  // frames from before this run's start
  later.counter_start_ns = kT0 + kSec;
  auto before = Decode(EncodeOtlpFrames(inv, frames, Board(), later));
  EXPECT_EQ(Find(before, "hw.host.energy")->sum().data_points(0).start_time_unix_nano(), 0u);
}

TEST(OtlpFrames, FramesWithoutRealtimeAreLeftOut) {
  Inventory inv;
  Add(inv, Kind::kCpu, "cpu", Field::kLoad);
  auto req = Decode(EncodeOtlpFrames(inv, std::vector<Frame>{At(0, {10}), At(kT0, {20})}, Board()));
  const otlp::Metric* m = Find(req, "edgemon.cpu.load");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(Points(*m).size(), 1);
  EXPECT_EQ(Points(*m)[0].time_unix_nano(), static_cast<uint64_t>(kT0));
}

TEST(OtlpFrames, ResourceAndScope) {
  Identity id = Board();
  id.labels = {{"site", "lab"}, {"host.name", "cam-3"}};
  auto req = Decode(EncodeOtlpFrames(Inventory{}, {}, id));
  ASSERT_EQ(req.resource_metrics_size(), 1);
  const auto& rm = req.resource_metrics(0);
  auto attrs = Attrs(rm.resource().attributes());
  EXPECT_EQ(attrs["service.name"], "edgemond");
  EXPECT_EQ(attrs["host.name"], "cam-3");  // the configured label wins
  EXPECT_EQ(attrs["service.instance.id"], "orin-7");
  EXPECT_EQ(attrs["host.id"], "abc123");
  EXPECT_EQ(attrs["edgemon.board.model"], "NVIDIA Jetson Orin Nano");
  EXPECT_EQ(attrs["edgemon.board.soc"], "tegra234");
  EXPECT_EQ(attrs.count("edgemon.board.l4t"), 0u);  // empty: left out
  EXPECT_EQ(attrs["site"], "lab");
  EXPECT_EQ(rm.resource().attributes_size(), static_cast<int>(attrs.size()));  // keys unique
  ASSERT_EQ(rm.scope_metrics_size(), 1);
  EXPECT_EQ(rm.scope_metrics(0).scope().name(), "edgemon");
  EXPECT_EQ(rm.scope_metrics(0).scope().version(), attrs["service.version"]);
  EXPECT_EQ(rm.scope_metrics(0).metrics_size(), 0);
}

TEST(OtlpFrames, InvalidUtf8IsReplacedSoTheRequestParses) {
  Inventory inv;
  Add(inv, Kind::kThermal, "zone\xff\xc3", Field::kTemp);
  Identity id = Board();
  id.labels = {{"room", "b\x80"}};
  auto req = Decode(EncodeOtlpFrames(inv, std::vector<Frame>{At(kT0, {40000})}, id));
  const otlp::Metric* m = Find(req, "hw.temperature");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Attrs(Points(*m)[0].attributes())["hw.name"], "zone\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(Attrs(req.resource_metrics(0).resource().attributes())["room"], "b\xEF\xBF\xBD");
}

TEST(OtlpWindows, OnePointPerClosedWindowAndRailInJoules) {
  Inventory inv;
  Add(inv, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagInputRail, "", "ina3221 1-0040");
  WindowEnergy closed;
  closed.window.id = 12;
  closed.window.label = "resnet50";
  closed.window.start_ns = kT0;
  closed.window.end_ns = kT0 + 30 * kSec;
  closed.rails = {RailSummary{"VDD_IN", "", true, 152'500.0, {}, {}},
                  RailSummary{"VDD_SOC", "VDD_IN", false, 40'250.0, {}, {}},
                  RailSummary{"VDD_CPU", "VDD_IN", false, std::nullopt, {}, {}}};
  WindowEnergy abandoned = closed;
  abandoned.window.id = 13;
  abandoned.window.abandoned = true;
  WindowEnergy open = closed;
  open.window.id = 14;
  open.window.end_ns.reset();
  auto req =
      Decode(EncodeOtlpWindows(inv, std::vector<WindowEnergy>{closed, abandoned, open}, Board()));

  const otlp::Metric* host = Find(req, "edgemon.window.host.energy");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->unit(), "J");
  ASSERT_TRUE(host->has_gauge());
  ASSERT_EQ(host->gauge().data_points_size(), 2);  // windows 12 and 13, not the open one
  const auto& p = host->gauge().data_points(0);
  EXPECT_DOUBLE_EQ(p.as_double(), 152.5);
  EXPECT_EQ(p.start_time_unix_nano(), static_cast<uint64_t>(kT0));
  EXPECT_EQ(p.time_unix_nano(), static_cast<uint64_t>(kT0 + 30 * kSec));
  auto a = Attrs(p.attributes());
  EXPECT_EQ(a["edgemon.window.label"], "resnet50");
  EXPECT_EQ(a["edgemon.window.id"], "12");
  EXPECT_EQ(a["hw.id"], "rail/VDD_IN");
  EXPECT_EQ(a["device"], "ina3221 1-0040");
  EXPECT_EQ(a.count("edgemon.window.abandoned"), 0u);
  EXPECT_EQ(Attrs(host->gauge().data_points(1).attributes())["edgemon.window.abandoned"], "true");

  const otlp::Metric* sub = Find(req, "edgemon.window.energy");
  ASSERT_NE(sub, nullptr);
  ASSERT_EQ(sub->gauge().data_points_size(), 2);  // VDD_SOC twice; VDD_CPU has no figure
  EXPECT_DOUBLE_EQ(sub->gauge().data_points(0).as_double(), 40.25);
  EXPECT_EQ(Attrs(sub->gauge().data_points(0).attributes())["hw.parent"], "rail/VDD_IN");
}

}  // namespace
}  // namespace edgemon::push
