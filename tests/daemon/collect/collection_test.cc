// The Collection: error accounting (counted per channel, logged once a
// minute), channel ids kept across renumbered devices, rediscovery when a
// file vanishes, with back-off for a file gone for good.
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::Get;
using testing::kSecond;
using testing::One;
using testing::TempTree;
using testing::WriteThermalZone;

// Counts its samples; opens `path` at discovery when given one.
class CountingCollector final : public Collector {
 public:
  explicit CountingCollector(std::string path) : path_(std::move(path)) {}
  std::string_view Name() const override { return "counting"; }
  void Discover(DiscoverContext& ctx) override {
    if (!path_.empty()) ctx.Open(path_);
  }
  void Sample(SampleContext&) override { ++samples; }
  int samples = 0;

 private:
  std::string path_;
};

TEST(Collection, ACollectorThatFoundNothingToReadIsNotSampled) {
  TempTree t;
  t.Write("/sys/class/thing/value", "1\n");
  RootedSysFs fs(t.root());
  auto idle = std::make_unique<CountingCollector>("");
  auto reader = std::make_unique<CountingCollector>("/sys/class/thing/value");
  CountingCollector* idle_ptr = idle.get();
  CountingCollector* reader_ptr = reader.get();
  std::vector<std::unique_ptr<Collector>> v;
  v.push_back(std::move(idle));
  v.push_back(std::move(reader));
  Collection c(fs, std::move(v), {}, nullptr);
  c.Discover();
  Frame f;
  c.Sample(kSecond, f);
  c.Sample(2 * kSecond, f);
  EXPECT_EQ(idle_ptr->samples, 0);
  EXPECT_EQ(reader_ptr->samples, 2);
}

TEST(Collection, ErrorsAreCountedAndLoggedOnceAMinute) {
  TempTree t;
  WriteThermalZone(t, 0, "cpu-thermal", "40000\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  std::vector<std::string> logs;
  Collection c(fs, One(MakeThermalCollector()), {},
               [&](const std::string& m) { logs.push_back(m); });
  c.Discover();
  fs.FailWith("/sys/class/thermal/thermal_zone0/temp", EIO);
  Frame f;
  for (int i = 1; i <= 30; ++i) c.Sample(i * kSecond, f);
  EXPECT_EQ(c.error_counts()[0], 30u);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("thermal/cpu-thermal/temp"), std::string::npos);
  EXPECT_NE(logs[0].find("I/O error"), std::string::npos);
  for (int i = 31; i <= 62; ++i) c.Sample(i * kSecond, f);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_NE(logs[1].find("60 failed reads"), std::string::npos);
}

TEST(Collection, RenumberedDeviceKeepsChannelIds) {
  TempTree t;
  WriteThermalZone(t, 0, "cpu-thermal", "40000\n");
  WriteThermalZone(t, 1, "gpu-thermal", "41000\n");
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeThermalCollector()), {}, nullptr);
  c.Discover();
  ChannelId gpu = c.inventory().Find(Kind::kThermal, "gpu-thermal", Field::kTemp)->id;
  // The zones are renumbered (as hwmonN indexes are across boots) and a new one appears.
  t.Remove("/sys/class/thermal/thermal_zone0");
  t.Remove("/sys/class/thermal/thermal_zone1");
  t.Remove("/sys/devices/virtual/thermal");
  WriteThermalZone(t, 0, "gpu-thermal", "42000\n");
  WriteThermalZone(t, 1, "soc0-thermal", "43000\n");
  WriteThermalZone(t, 2, "cpu-thermal", "44000\n");
  EXPECT_TRUE(c.CheckTopology());
  EXPECT_FALSE(c.CheckTopology());
  Frame f;
  c.Sample(kSecond, f);
  EXPECT_EQ(c.inventory().Find(Kind::kThermal, "gpu-thermal", Field::kTemp)->id, gpu);
  EXPECT_EQ(f.Get(gpu), 42000);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "cpu-thermal", Field::kTemp), 44000);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "soc0-thermal", Field::kTemp), 43000);
}

TEST(Collection, VanishedFileTriggersRediscovery) {
  TempTree t;
  WriteThermalZone(t, 0, "cpu-thermal", "40000\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  Collection c(fs, One(MakeThermalCollector()), {}, nullptr);
  c.Discover();
  uint64_t gen = c.generation();
  fs.FailWith("/sys/class/thermal/thermal_zone0/temp", ENODEV);
  Frame f;
  c.Sample(10 * kSecond, f);
  EXPECT_FALSE(f.Get(0));
  fs.ClearAll();
  c.Sample(12 * kSecond, f);
  EXPECT_GT(c.generation(), gen);
  EXPECT_EQ(f.Get(0), 40000);
}

TEST(Collection, AFileGoneForGoodDoesNotCostAWalkEverySecond) {
  TempTree t;
  WriteThermalZone(t, 0, "cpu-thermal", "40000\n");
  WriteThermalZone(t, 1, "nvme-thermal", "35000\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  Collection c(fs, One(MakeThermalCollector()), {}, nullptr);
  c.Discover();
  fs.FailWith("/sys/class/thermal/thermal_zone1/temp", ENXIO);  // asleep for good
  Frame f;
  uint64_t start = c.generation();
  for (int i = 1; i <= 300; ++i) c.Sample(i * kSecond, f);
  // Backing off 1, 2, 4 ... 60 s: about ten rediscoveries in five minutes, not 300.
  EXPECT_LE(c.generation() - start, 10u);
  EXPECT_GE(c.generation() - start, 5u);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "cpu-thermal", Field::kTemp), 40000);
  // Once the sensor answers again, it is read at the next tick.
  fs.ClearAll();
  c.Sample(301 * kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "nvme-thermal", Field::kTemp), 35000);
}

}  // namespace
}  // namespace edgemon
