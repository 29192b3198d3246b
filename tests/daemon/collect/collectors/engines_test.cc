// The hardware engines collector (clk debugfs): on/off from the enable
// count, the rate (BPMP's where the clk framework caches a stale one).
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::Harness;
using testing::Line;
using testing::TempTree;

const std::string kClk = "/sys/kernel/debug/clk";

void AddClock(TempTree& t, const std::string& name, int64_t enable_count, int64_t rate_hz) {
  t.Write(kClk + "/" + name + "/clk_enable_count", Line(enable_count));
  t.Write(kClk + "/" + name + "/clk_rate", Line(rate_hz));
  t.Write(kClk + "/" + name + "/clk_max_rate", "18446744073709551615\n");
  t.Write(kClk + "/" + name + "/clk_min_rate", Line(0));
}

TEST(Engines, OrinClocksStateAndRate) {
  TempTree t;
  AddClock(t, "nvenc", 2, 499200000);
  AddClock(t, "nvdec", 0, 115200000);
  AddClock(t, "nvjpg", 1, 1);  // the clk framework's cached rate ...
  t.Write("/sys/kernel/debug/bpmp/debug/clk/nvjpg/rate", Line(652800000));  // ... and BPMP's
  AddClock(t, "dla0", 0, 0);
  AddClock(t, "OFA", 1, 729600000);  // names compare case-insensitively
  // Not engines: the memory clock, DLA sub-clocks, look-alike names.
  AddClock(t, "emc", 1, 2133000000);
  AddClock(t, "dla0_core", 1, 1600000000);
  AddClock(t, "nvenc_foo", 1, 1);
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEngineCollector());
  h.Sample();

  const Channel* nvenc = h.Find(Kind::kEngine, "NVENC", Field::kState);
  ASSERT_NE(nvenc, nullptr);
  EXPECT_EQ(nvenc->device, "clk nvenc");
  EXPECT_EQ(nvenc->unit, Unit::kBool);
  EXPECT_EQ(h.Get(Kind::kEngine, "NVENC", Field::kState), 1);
  EXPECT_EQ(h.Get(Kind::kEngine, "NVENC", Field::kFreq), 499200);
  EXPECT_EQ(h.Find(Kind::kEngine, "NVENC", Field::kFreq)->unit, Unit::kKhz);
  EXPECT_EQ(h.Get(Kind::kEngine, "NVDEC", Field::kState), 0);
  EXPECT_EQ(h.Get(Kind::kEngine, "NVDEC", Field::kFreq), 115200);
  EXPECT_EQ(h.Get(Kind::kEngine, "NVJPG", Field::kFreq), 652800);  // BPMP preferred
  EXPECT_EQ(h.Get(Kind::kEngine, "DLA0", Field::kState), 0);
  EXPECT_EQ(h.Get(Kind::kEngine, "OFA", Field::kState), 1);
  EXPECT_EQ(h.Get(Kind::kEngine, "OFA", Field::kFreq), 729600);
  EXPECT_EQ(h.inventory().channels.size(), 5u * 2u);
  for (const auto& c : h.inventory().channels) {
    EXPECT_NE(c.name, "EMC");
    EXPECT_NE(c.name, "DLA0_CORE");
  }
}

TEST(Engines, OnOffFollowsTheEnableCount) {
  TempTree t;
  AddClock(t, "nvdec", 0, 115200000);
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEngineCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEngine, "NVDEC", Field::kState), 0);
  t.Write(kClk + "/nvdec/clk_enable_count", Line(3));
  t.Write(kClk + "/nvdec/clk_rate", Line(716800000));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEngine, "NVDEC", Field::kState), 1);
  EXPECT_EQ(h.Get(Kind::kEngine, "NVDEC", Field::kFreq), 716800);
  t.Write(kClk + "/nvdec/clk_enable_count", Line(0));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEngine, "NVDEC", Field::kState), 0);
}

TEST(Engines, BadValuesAreAbsent) {
  TempTree t;
  AddClock(t, "vic", 1, 115200000);
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness h(fs, MakeEngineCollector());
  for (const char* bad : {"", "on\n", "-1\n", "99999999999999999999\n"}) {
    fs.Replace(kClk + "/vic/clk_enable_count", bad);
    fs.Replace(kClk + "/vic/clk_rate", bad);
    h.Sample();
    EXPECT_EQ(h.Get(Kind::kEngine, "VIC", Field::kState), std::nullopt) << "'" << bad << "'";
    EXPECT_EQ(h.Get(Kind::kEngine, "VIC", Field::kFreq), std::nullopt) << "'" << bad << "'";
  }
  fs.FailWith(kClk + "/vic/clk_rate", EIO);
  fs.Clear(kClk + "/vic/clk_enable_count");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEngine, "VIC", Field::kFreq), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kEngine, "VIC", Field::kState), 1);
}

TEST(Engines, NoDebugfsNoChannels) {
  TempTree t;
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEngineCollector());
  EXPECT_TRUE(h.inventory().channels.empty());
}

}  // namespace
}  // namespace edgemon
