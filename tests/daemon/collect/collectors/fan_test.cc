// The fan collector: JP5+ pwmfan/pwm_tach pairs (paired by device path, not
// hwmon index), a lone tach, JP4's legacy pwm-fan, a fan appearing later.
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

using testing::AddHwmonChip;
using testing::FaultySysFs;
using testing::Harness;
using testing::Line;
using testing::TempTree;

TEST(Fan, Jp5PwmfanAndTachAreOneFan) {
  TempTree t;
  std::string tach =
      AddHwmonChip(t, "hwmon0", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
  t.Write(tach + "/rpm", Line(2345));
  std::string other =
      AddHwmonChip(t, "hwmon1", "/sys/devices/platform/c240000.i2c/i2c-1/1-004c", "tmp451");
  t.Write(other + "/temp1_input", Line(45000));
  std::string pwm = AddHwmonChip(t, "hwmon2", "/sys/devices/platform/pwm-fan", "pwmfan");
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
  EXPECT_EQ(h.inventory().channels.size(), 3u);  // duty, speed, event/<fan>:stuck

  t.Write(pwm + "/pwm1", Line(255));
  t.Write(tach + "/rpm", Line(0));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 1000);
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 0);
}

TEST(Fan, LoneTachStillGivesASpeed) {
  TempTree t;
  std::string tach =
      AddHwmonChip(t, "hwmon3", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
  t.Write(tach + "/rpm", Line(5371));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kSpeed), 5371);
  EXPECT_EQ(h.Find(Kind::kFan, "pwmfan", Field::kDuty), nullptr);
}

TEST(Fan, PwmfanWithoutTachUsesItsOwnTachInput) {
  TempTree t;
  std::string pwm = AddHwmonChip(t, "hwmon1", "/sys/devices/platform/pwm-fan", "pwmfan");
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
  std::string pwm_a = AddHwmonChip(t, "hwmon5", "/sys/devices/platform/pwm-fan0", "pwmfan");
  std::string pwm_b = AddHwmonChip(t, "hwmon1", "/sys/devices/platform/pwm-fan1", "pwmfan");
  std::string tach_a = AddHwmonChip(t, "hwmon3", "/sys/devices/platform/tach0", "pwm_tach");
  std::string tach_b = AddHwmonChip(t, "hwmon2", "/sys/devices/platform/tach1", "pwm_tach");
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
  AddHwmonChip(t, "hwmon1", dev, "tegra_pwmfan");  // the same fan seen through hwmon
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kDuty), 77 * 1000 / 255);  // 301
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kSpeed), 1500);
  EXPECT_EQ(h.Find(Kind::kFan, "pwm-fan", Field::kDuty)->device, "pwm-fan");
  EXPECT_EQ(h.inventory().channels.size(), 3u);  // duty, speed, event/<fan>:stuck
}

TEST(Fan, TegraPwmfanHwmonWithFilesInItsDevice) {
  TempTree t;
  const std::string dev = "/sys/devices/platform/pwm_fan";
  t.Write(dev + "/target_pwm", Line(255));
  t.Write(dev + "/rpm_measured", Line(4000));
  AddHwmonChip(t, "hwmon0", dev, "tegra_pwmfan");
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kDuty), 1000);
  EXPECT_EQ(h.Get(Kind::kFan, "pwm-fan", Field::kSpeed), 4000);
  EXPECT_EQ(h.Find(Kind::kFan, "pwm-fan", Field::kDuty)->device, "hwmon tegra_pwmfan");
  EXPECT_EQ(h.inventory().channels.size(), 3u);  // duty, speed, event/<fan>:stuck
}

TEST(Fan, PwmOutOfRangeAndBadValuesAreAbsent) {
  TempTree t;
  std::string pwm = AddHwmonChip(t, "hwmon2", "/sys/devices/platform/pwm-fan", "pwmfan");
  std::string tach =
      AddHwmonChip(t, "hwmon0", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
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
  std::string pwm = AddHwmonChip(t, "hwmon4", "/sys/devices/platform/pwm-fan", "pwmfan");
  t.Write(pwm + "/pwm1", Line(51));
  EXPECT_TRUE(h.collection().CheckTopology());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kFan, "pwmfan", Field::kDuty), 200);
}

}  // namespace
}  // namespace edgemon
