// The EMC collector, every generation's sources: BPMP clock with the JP4/JP5
// actmon counter, JP6's cactmon, T210's override clock and bwmgr limits,
// Thor's bwmgr devfreq and BPMP actmon; load only with a frequency.
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

const std::string kBpmpEmc = "/sys/kernel/debug/bpmp/debug/clk/emc";
const std::string kActmonJp5 = "/sys/kernel/actmon_avg_activity/mc_all";

// Orin JP5: BPMP clock and the JP4/JP5 actmon counter.
void AddOrinJp5Emc(TempTree& t, int64_t rate_hz, int64_t mc_all) {
  t.Write(kBpmpEmc + "/rate", Line(rate_hz));
  t.Write(kBpmpEmc + "/min_rate", Line(204000000));
  t.Write(kBpmpEmc + "/max_rate", Line(3199000000));
  t.Write(kBpmpEmc + "/mrq_rate_locked", Line(0));
  t.Write(kActmonJp5, Line(mc_all));
}

TEST(Emc, OrinJp5FrequencyAndLoad) {
  TempTree t;
  // mc_all reads as utilisation % x EMC kHz: 37.5 % at 2133 MHz.
  AddOrinJp5Emc(t, 2133000000, 79987500);
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  const Channel* freq = h.Find(Kind::kEmc, "emc", Field::kFreq);
  ASSERT_NE(freq, nullptr);
  EXPECT_EQ(freq->device, "bpmp clk emc");
  EXPECT_EQ(freq->unit, Unit::kKhz);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 2133000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMin), 204000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMax), 3199000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), 79987500 * 10 / 2133000);  // 375
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), 375);
  EXPECT_EQ(h.Find(Kind::kEmc, "emc", Field::kLoad)->unit, Unit::kPermille);
  EXPECT_EQ(h.inventory().channels.size(), 4u);

  // The load follows this tick's frequency.
  t.Write(kBpmpEmc + "/rate", Line(665600000));
  t.Write(kActmonJp5, Line(665600));  // 1 % of 665.6 MHz
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 665600);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), 10);
}

TEST(Emc, OrinJp6UsesCactmon) {
  TempTree t;
  t.Write(kBpmpEmc + "/rate", Line(3199000000));
  t.Write(kBpmpEmc + "/min_rate", Line(204000000));
  t.Write(kBpmpEmc + "/max_rate", Line(3199000000));
  t.Write("/sys/kernel/debug/cactmon/mc_all", Line(39987500));  // 12.5 %
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 3199000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), 125);
}

TEST(Emc, T210OverrideClockAndBwmgrLimits) {
  TempTree t;
  t.Write("/sys/kernel/debug/clk/override.emc/clk_rate", Line(1600000000));
  t.Write("/sys/kernel/debug/tegra_bwmgr/emc_min_rate", Line(204000000));
  t.Write("/sys/kernel/debug/tegra_bwmgr/emc_max_rate", Line(1600000000));
  t.Write(kActmonJp5, Line(80000000));  // 50 % of 1600 MHz
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  EXPECT_EQ(h.Find(Kind::kEmc, "emc", Field::kFreq)->device, "clk override.emc");
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 1600000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMin), 204000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMax), 1600000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), 500);
}

TEST(Emc, ThorBwmgrDevfreqAndBpmpActmon) {
  TempTree t;
  const std::string df = "/sys/devices/platform/bwmgr/devfreq/bwmgr";
  t.Write(df + "/cur_freq", Line(4266000000));
  t.Write(df + "/min_freq", Line(665600000));
  t.Write(df + "/max_freq", Line(4266000000));
  t.LinkRelative("/sys/class/devfreq/bwmgr", df);
  t.Write("/sys/kernel/debug/bpmp/debug/actmon/mc_all_avg_activity", Line(106650000));  // 25 %
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  EXPECT_EQ(h.Find(Kind::kEmc, "emc", Field::kFreq)->device, "devfreq bwmgr");
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 4266000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMin), 665600);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMax), 4266000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), 250);
}

TEST(Emc, NothingReadableNothingDeclared) {
  TempTree t;
  // Without root, debugfs is absent; the actmon counter alone gives no load.
  t.Write(kActmonJp5, Line(1000));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  EXPECT_TRUE(h.inventory().channels.empty());
}

TEST(Emc, FrequencyWithoutActivityHasNoLoad) {
  TempTree t;
  t.Write(kBpmpEmc + "/rate", Line(2133000000));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 2133000);
  EXPECT_EQ(h.Find(Kind::kEmc, "emc", Field::kLoad), nullptr);
  EXPECT_EQ(h.Find(Kind::kEmc, "emc", Field::kFreqMin), nullptr);
  EXPECT_EQ(h.inventory().channels.size(), 1u);
}

TEST(Emc, LoadOutOfRangeOrWithoutFrequencyIsAbsent) {
  TempTree t;
  AddOrinJp5Emc(t, 2133000000, 213513300);  // 100.1 % -> 1001 permille
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  ASSERT_NE(h.Find(Kind::kEmc, "emc", Field::kLoad), nullptr);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 2133000);

  t.Write(kActmonJp5, Line(-1));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), std::nullopt);

  // mc_all x 10 overflows int64.
  t.Write(kActmonJp5, "9223372036854775807\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), std::nullopt);

  t.Write(kActmonJp5, Line(21330000));  // 10 %
  fs.FailWith(kBpmpEmc + "/rate", EIO);
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMin), 204000);

  fs.Replace(kBpmpEmc + "/rate", "0\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 0);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), std::nullopt);

  fs.ClearAll();
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), 100);
}

TEST(Emc, BadCounterTextIsAbsent) {
  TempTree t;
  AddOrinJp5Emc(t, 2133000000, 79987500);
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness h(fs, MakeEmcCollector());
  for (const char* bad : {"", "garbage\n", "99999999999999999999\n"}) {
    fs.Replace(kActmonJp5, bad);
    fs.Replace(kBpmpEmc + "/max_rate", bad);
    h.Sample();
    EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), std::nullopt) << "'" << bad << "'";
    EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreqMax), std::nullopt) << "'" << bad << "'";
    EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kFreq), 2133000);
  }
  fs.FailWith(kActmonJp5, EAGAIN);
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc", Field::kLoad), std::nullopt);
  // Three ticks with two bad files, then one with both (max_rate still overflows).
  EXPECT_EQ(h.collection().total_errors(), 3u * 2u + 2u);
}

// nvpmodel's EMC cap: kHz against the clock's max_rate; 0 (no cap) reads as
// that maximum; a cap below it is what PowerModeCaps reports.
TEST(Emc, NvpmodelEmcCapAgainstTheMaximum) {
  TempTree t;
  AddOrinJp5Emc(t, 2133000000, 79987500);
  const std::string cap = "/sys/kernel/nvpmodel_emc_cap/emc_iso_cap";
  t.Write(cap, Line(2133000000));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  const Channel* c = h.Find(Kind::kEmc, "emc_iso_cap", Field::kFreqMax);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->max, 3199000);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc_iso_cap", Field::kFreqMax), 2133000);
  t.Write(cap, Line(0));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc_iso_cap", Field::kFreqMax), 3199000);
  t.Write(cap, Line(-1));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEmc, "emc_iso_cap", Field::kFreqMax), std::nullopt);
}

// Without the (root-only) clock files the cap is still read; a 0 is then
// absent, since the maximum it stands for is unknown.
TEST(Emc, NvpmodelEmcCapWithoutTheClock) {
  TempTree t;
  const std::string cap = "/sys/kernel/nvpmodel_emc_cap/emc_iso_cap";
  t.Write(cap, Line(0));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEmcCollector());
  h.Sample();
  const Channel* c = h.Find(Kind::kEmc, "emc_iso_cap", Field::kFreqMax);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->max, std::nullopt);
  EXPECT_EQ(h.Get(Kind::kEmc, "emc_iso_cap", Field::kFreqMax), std::nullopt);
  EXPECT_EQ(h.Find(Kind::kEmc, "emc", Field::kFreq), nullptr);
}

}  // namespace
}  // namespace edgemon
