// The INA3221 collector for NVIDIA's ina3221x iio driver (JetPack 4): rails
// read as power directly, found by the driver dir or on the iio bus.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::CollectorRun;
using testing::FaultySysFs;
using testing::HasName;
using testing::Names;
using testing::TempTree;

constexpr std::string_view kI2c6 = "/sys/devices/7000c400.i2c/i2c-6/6-0040";

void WriteIna3221x(TempTree& t, std::string_view iio, bool driver_link) {
  const std::string dir = std::string(kI2c6) + "/" + std::string(iio);
  t.Write(dir + "/name", "ina3221x\n");
  const char* rails[] = {"POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"};
  const int64_t mw[] = {2452, 78, 625};
  const int64_t mv[] = {5056, 5048, 5040};
  const int64_t ma[] = {488, 16, 124};
  for (int k = 0; k < 3; ++k) {
    const std::string n = std::to_string(k);
    t.Write(dir + "/rail_name_" + n, std::string(rails[k]) + "\n");
    t.Write(dir + "/in_power" + n + "_input", std::to_string(mw[k]) + "\n");
    t.Write(dir + "/in_voltage" + n + "_input", std::to_string(mv[k]) + "\n");
    t.Write(dir + "/in_current" + n + "_input", std::to_string(ma[k]) + "\n");
    t.Write(dir + "/in_power" + n + "_trigger_input", "0\n");
    t.Write(dir + "/crit_current_limit_" + n, "32760 ma\n");
    t.Write(dir + "/warn_current_limit_" + n, std::to_string(3000 + k) + " ma\n");
    t.Write(dir + "/crit_power_limit_" + n, "garbage mw\n");
  }
  t.Write(dir + "/running_mode", "0\n");
  if (driver_link) {
    t.Link("/sys/bus/i2c/drivers/ina3221x/6-0040", "../../../../devices/7000c400.i2c/i2c-6/6-0040");
  }
  t.Link("/sys/bus/iio/devices/" + std::string(iio),
         "../../../devices/7000c400.i2c/i2c-6/6-0040/" + std::string(iio));
}

TEST(Ina3221x, NanoRailsReadPowerDirectly) {
  TempTree t;
  WriteIna3221x(t, "iio:device0", true);
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeIna3221IioCollector());
  run.Sample();

  EXPECT_EQ(run.channels().size(), 9u) << ::testing::PrintToString(Names(run.channels()));
  EXPECT_EQ(run.Rail("POM_5V_IN", Field::kPower), 2452);
  EXPECT_EQ(run.Rail("POM_5V_IN", Field::kVoltage), 5056);
  EXPECT_EQ(run.Rail("POM_5V_IN", Field::kCurrent), 488);
  EXPECT_EQ(run.Rail("POM_5V_GPU", Field::kPower), 78);
  EXPECT_EQ(run.Rail("POM_5V_CPU", Field::kPower), 625);
  const Channel* p = run.Find(Kind::kRail, "POM_5V_IN", Field::kPower);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->Has(kFlagDerived));
  EXPECT_TRUE(p->Has(kFlagInputRail));
  EXPECT_EQ(p->device, "ina3221x 6-0040");
  EXPECT_FALSE(p->crit.has_value());  // "garbage mw" is no limit
  const Channel* i = run.Find(Kind::kRail, "POM_5V_CPU", Field::kCurrent);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->crit, 32760);
  EXPECT_EQ(i->max, 3002);
  EXPECT_EQ(i->parent, "POM_5V_IN");
}

TEST(Ina3221x, FoundOnTheIioBusWithoutDriverDirAndSkipsNc) {
  TempTree t;
  WriteIna3221x(t, "iio:device1", false);
  const std::string dir = std::string(kI2c6) + "/iio:device1";
  t.Write(dir + "/rail_name_2", "NC\n");
  t.Write(dir + "/crit_power_limit_0", "12000 mw\n");
  t.Write(dir + "/warn_current_limit_0", "3000 a\n");  // not the documented unit
  // Another iio device that is not an INA3221.
  t.Write("/sys/devices/platform/adc/iio:device0/name", "ads1015\n");
  t.Write("/sys/devices/platform/adc/iio:device0/in_voltage0_raw", "100\n");
  t.Link("/sys/bus/iio/devices/iio:device0", "../../../devices/platform/adc/iio:device0");
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeIna3221IioCollector());
  run.Sample();

  EXPECT_EQ(run.channels().size(), 6u) << ::testing::PrintToString(Names(run.channels()));
  EXPECT_FALSE(HasName(run.channels(), "NC"));
  EXPECT_FALSE(HasName(run.channels(), "POM_5V_CPU"));
  EXPECT_EQ(run.Rail("POM_5V_GPU", Field::kCurrent), 16);
  const Channel* p = run.Find(Kind::kRail, "POM_5V_IN", Field::kPower);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->device, "ina3221x 6-0040");
  EXPECT_EQ(p->crit, 12000);
  EXPECT_FALSE(run.Find(Kind::kRail, "POM_5V_IN", Field::kCurrent)->max.has_value());
}

TEST(Ina3221x, BadReadsAreAbsent) {
  TempTree t;
  WriteIna3221x(t, "iio:device0", true);
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  CollectorRun run(fs, MakeIna3221IioCollector());
  const std::string dir = "/sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0";
  fs.FailWith(dir + "/in_power0_input", EAGAIN);
  fs.Replace(dir + "/in_voltage1_input", "garbage\n");
  fs.Replace(dir + "/in_current2_input", "99999999999999999999");
  fs.Replace(dir + "/in_power2_input", "");
  run.Sample();
  EXPECT_EQ(run.Rail("POM_5V_IN", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Rail("POM_5V_IN", Field::kVoltage), 5056);
  EXPECT_EQ(run.Rail("POM_5V_GPU", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("POM_5V_GPU", Field::kPower), 78);
  EXPECT_EQ(run.Rail("POM_5V_CPU", Field::kCurrent), std::nullopt);
  EXPECT_EQ(run.Rail("POM_5V_CPU", Field::kPower), std::nullopt);
  EXPECT_EQ(run.collection().total_errors(), 4u);
}

}  // namespace
}  // namespace edgemon
