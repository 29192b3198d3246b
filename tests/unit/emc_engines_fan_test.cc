// EMC (every generation's sources), hardware engines (clk debugfs) and fans
// (JP5+ pwmfan/pwm_tach pairs, JP4 pwm-fan).
#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::Harness;
using testing::TempTree;

std::string Line(int64_t v) {
  return std::to_string(v) + "\n";
}

// --- EMC ---

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

// --- Engines ---

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

// --- Fans ---

// An hwmon chip below `device_dir`, listed as /sys/class/hwmon/<index>.
std::string AddHwmon(TempTree& t, const std::string& index, const std::string& device_dir,
                     const std::string& name) {
  const std::string dir = device_dir + "/hwmon/" + index;
  t.Write(dir + "/name", name + "\n");
  t.LinkRelative(dir + "/device", device_dir);
  t.LinkRelative("/sys/class/hwmon/" + index, dir);
  return dir;
}

TEST(Fan, Jp5PwmfanAndTachAreOneFan) {
  TempTree t;
  std::string tach = AddHwmon(t, "hwmon0", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
  t.Write(tach + "/rpm", Line(2345));
  std::string other =
      AddHwmon(t, "hwmon1", "/sys/devices/platform/c240000.i2c/i2c-1/1-004c", "tmp451");
  t.Write(other + "/temp1_input", Line(45000));
  std::string pwm = AddHwmon(t, "hwmon2", "/sys/devices/platform/pwm-fan", "pwmfan");
  t.Write(pwm + "/pwm1", Line(128));
  t.Write(pwm + "/pwm1_enable", Line(1));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  const Channel* duty = h.Find(Kind::kFan, "pwmfan", Field::kDuty);
  ASSERT_NE(duty, nullptr);
  EXPECT_EQ(duty->unit, Unit::kPermille);
  EXPECT_EQ(duty->device, "hwmon pwmfan");
  ASSERT_NE(duty->Attr("pwm1_enable"), nullptr);
  EXPECT_EQ(*duty->Attr("pwm1_enable"), "1");
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 128 * 1000 / 255);  // 501
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 2345);
  EXPECT_EQ(h.Find(Kind::kFan, "pwmfan", Field::kSpeed)->unit, Unit::kRpm);
  EXPECT_EQ(h.inventory().channels.size(), 2u);

  t.Write(pwm + "/pwm1", Line(255));
  t.Write(tach + "/rpm", Line(0));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 1000);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 0);
}

TEST(Fan, LoneTachStillGivesASpeed) {
  TempTree t;
  std::string tach = AddHwmon(t, "hwmon3", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
  t.Write(tach + "/rpm", Line(5371));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 5371);
  EXPECT_EQ(h.Find(Kind::kFan, "pwmfan", Field::kDuty), nullptr);
}

TEST(Fan, PwmfanWithoutTachUsesItsOwnTachInput) {
  TempTree t;
  std::string pwm = AddHwmon(t, "hwmon1", "/sys/devices/platform/pwm-fan", "pwmfan");
  t.Write(pwm + "/pwm1", Line(64));
  t.Write(pwm + "/fan1_input", Line(1873));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 64 * 1000 / 255);  // 250
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 1873);
  EXPECT_EQ(h.Find(Kind::kFan, "pwmfan", Field::kSpeed)->device, "hwmon pwmfan");
}

TEST(Fan, SeveralChipsPairByDevicePathNotHwmonIndex) {
  TempTree t;
  std::string pwm_a = AddHwmon(t, "hwmon5", "/sys/devices/platform/pwm-fan0", "pwmfan");
  std::string pwm_b = AddHwmon(t, "hwmon1", "/sys/devices/platform/pwm-fan1", "pwmfan");
  std::string tach_a = AddHwmon(t, "hwmon3", "/sys/devices/platform/tach0", "pwm_tach");
  std::string tach_b = AddHwmon(t, "hwmon2", "/sys/devices/platform/tach1", "pwm_tach");
  t.Write(pwm_a + "/pwm1", Line(100));
  t.Write(pwm_b + "/pwm1", Line(200));
  t.Write(tach_a + "/rpm", Line(1000));
  t.Write(tach_b + "/rpm", Line(2000));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 100 * 1000 / 255);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 1000);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan1", Field::kDuty), 200 * 1000 / 255);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan1", Field::kSpeed), 2000);
}

TEST(Fan, Jp4LegacyPwmFanIsDeclaredOnce) {
  TempTree t;
  const std::string dev = "/sys/devices/pwm-fan";
  t.Write(dev + "/target_pwm", Line(77));
  t.Write(dev + "/rpm_measured", Line(1500));
  t.Write(dev + "/temp_control", Line(1));
  AddHwmon(t, "hwmon1", dev, "tegra_pwmfan");  // the same fan seen through hwmon
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kDuty), 77 * 1000 / 255);  // 301
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kSpeed), 1500);
  EXPECT_EQ(h.Find(Kind::kFan, "pwm-fan", Field::kDuty)->device, "pwm-fan");
  EXPECT_EQ(h.inventory().channels.size(), 2u);
}

TEST(Fan, TegraPwmfanHwmonWithFilesInItsDevice) {
  TempTree t;
  const std::string dev = "/sys/devices/platform/pwm_fan";
  t.Write(dev + "/target_pwm", Line(255));
  t.Write(dev + "/rpm_measured", Line(4000));
  AddHwmon(t, "hwmon0", dev, "tegra_pwmfan");
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kDuty), 1000);
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kSpeed), 4000);
  EXPECT_EQ(h.Find(Kind::kFan, "pwm-fan", Field::kDuty)->device, "hwmon tegra_pwmfan");
  EXPECT_EQ(h.inventory().channels.size(), 2u);
}

TEST(Fan, PwmOutOfRangeAndBadValuesAreAbsent) {
  TempTree t;
  std::string pwm = AddHwmon(t, "hwmon2", "/sys/devices/platform/pwm-fan", "pwmfan");
  std::string tach = AddHwmon(t, "hwmon0", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
  t.Write(pwm + "/pwm1", Line(256));
  t.Write(tach + "/rpm", Line(-1));
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness h(fs, MakeFanCollector());
  h.Sample();
  ASSERT_NE(h.Find(Kind::kFan, "pwmfan", Field::kDuty), nullptr);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), std::nullopt);

  t.Write(pwm + "/pwm1", Line(-1));
  t.Write(tach + "/rpm", Line(3000));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 3000);

  for (const char* bad : {"", "fast\n", "99999999999999999999\n"}) {
    fs.Replace(pwm + "/pwm1", bad);
    fs.Replace(tach + "/rpm", bad);
    h.Sample();
    EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), std::nullopt) << "'" << bad << "'";
    EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), std::nullopt) << "'" << bad << "'";
  }
  fs.FailWith(tach + "/rpm", EAGAIN);
  fs.Replace(pwm + "/pwm1", "0\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 0);
}

TEST(Fan, FanAppearingLaterIsFoundByCheckTopology) {
  TempTree t;
  t.MakeDir("/sys/class/hwmon");
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  EXPECT_TRUE(h.inventory().channels.empty());
  std::string pwm = AddHwmon(t, "hwmon4", "/sys/devices/platform/pwm-fan", "pwmfan");
  t.Write(pwm + "/pwm1", Line(51));
  EXPECT_TRUE(h.collection().CheckTopology());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 200);
}

}  // namespace
}  // namespace edgemon
