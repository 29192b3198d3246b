// The INA3221 collector, upstream hwmon driver (JetPack 5+): rails, derived
// power and limits on scratch trees laid out as the kernel does (class
// entries are relative symlinks into /sys/devices).
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
using testing::kSecond;
using testing::Names;
using testing::TempTree;

constexpr std::string_view kI2c1 = "/sys/devices/platform/bus@0/c240000.i2c/i2c-1";

struct InaChannel {
  int k;
  std::string label;
  int64_t mv;
  int64_t ma;
};

// Writes an INA3221 the way the upstream driver shows it: the i2c client
// dir, hwmon/hwmonN below it with a `device` link back, the class entry and
// the driver's bus-addr link.
void WriteIna3221(TempTree& t, std::string_view bus_addr, int hwmon,
                  const std::vector<InaChannel>& channels, bool class_link = true) {
  const std::string dev = std::string(kI2c1) + "/" + std::string(bus_addr);
  const std::string h = "hwmon" + std::to_string(hwmon);
  const std::string dir = dev + "/hwmon/" + h;
  t.Write(dev + "/name", "ina3221\n");
  t.Write(dir + "/name", "ina3221\n");
  t.Link(dir + "/device", "../../../" + std::string(bus_addr));
  for (const auto& c : channels) {
    const std::string k = std::to_string(c.k);
    t.Write(dir + "/in" + k + "_label", c.label + "\n");
    t.Write(dir + "/in" + k + "_enable", "1\n");
    t.Write(dir + "/in" + k + "_input", std::to_string(c.mv) + "\n");
    t.Write(dir + "/curr" + k + "_input", std::to_string(c.ma) + "\n");
    t.Write(dir + "/curr" + k + "_max", "6800\n");
    t.Write(dir + "/curr" + k + "_crit", "7784\n");
    t.Write(dir + "/shunt" + k + "_resistor", "5000\n");
    t.Write(dir + "/in" + std::to_string(c.k + 3) + "_input", "2480\n");  // shunt uV
  }
  t.Write(dir + "/in7_label", "sum of shunt voltages\n");
  t.Write(dir + "/in7_input", "6200\n");
  t.Write(dir + "/curr4_input", "3100\n");
  t.Write(dir + "/samples", "1\n");
  t.Write(dir + "/update_interval", "7\n");
  if (class_link)
    t.Link("/sys/class/hwmon/" + h, "../../devices/platform/bus@0/c240000.i2c/i2c-1/" +
                                        std::string(bus_addr) + "/hwmon/" + h);
  t.Link("/sys/bus/i2c/drivers/ina3221/" + std::string(bus_addr),
         "../../../../devices/platform/bus@0/c240000.i2c/i2c-1/" + std::string(bus_addr));
  t.Write("/sys/bus/i2c/drivers/ina3221/uevent", "DRIVER=ina3221\n");
}

std::string InaDir(std::string_view bus_addr, int hwmon) {
  return std::string(kI2c1) + "/" + std::string(bus_addr) + "/hwmon/hwmon" + std::to_string(hwmon);
}

TEST(Ina3221, OrinNxRailsWithDerivedPowerAndLimits) {
  TempTree t;
  WriteIna3221(
      t, "1-0040", 3,
      {{1, "VDD_IN", 5123, 1200}, {2, "VDD_CPU_GPU_CV", 5104, 312}, {3, "VDD_SOC", 5112, 596}});
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeIna3221Collector());
  run.Sample();

  // Found through the class dir and the driver dir, declared once.
  EXPECT_EQ(run.channels().size(), 9u) << ::testing::PrintToString(Names(run.channels()));
  EXPECT_EQ(run.Rail("VDD_IN", Field::kVoltage), 5123);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kCurrent), 1200);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), 5123 * 1200 / 1000);  // 6147 mW
  EXPECT_EQ(run.Rail("VDD_CPU_GPU_CV", Field::kPower), 5104 * 312 / 1000);
  EXPECT_EQ(run.Rail("VDD_SOC", Field::kPower), 5112 * 596 / 1000);

  const Channel* p = run.Find(Kind::kRail, "VDD_IN", Field::kPower);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->Has(kFlagDerived));
  EXPECT_EQ(p->unit, Unit::kMilliwatt);
  EXPECT_EQ(p->device, "ina3221 1-0040");
  EXPECT_TRUE(p->Has(kFlagInputRail));  // AssignRailHierarchy: VDD_IN is the input
  const Channel* v = run.Find(Kind::kRail, "VDD_IN", Field::kVoltage);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->unit, Unit::kMillivolt);
  EXPECT_FALSE(v->Has(kFlagDerived));
  ASSERT_NE(v->Attr("sensor"), nullptr);
  EXPECT_EQ(*v->Attr("sensor"), "in1");
  EXPECT_EQ(*run.Find(Kind::kRail, "VDD_SOC", Field::kCurrent)->Attr("sensor"), "curr3");
  const Channel* i = run.Find(Kind::kRail, "VDD_SOC", Field::kCurrent);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->unit, Unit::kMilliamp);
  EXPECT_EQ(i->max, 6800);
  EXPECT_EQ(i->crit, 7784);
  EXPECT_EQ(i->parent, "VDD_IN");
  EXPECT_FALSE(p->max.has_value());  // power limits are not known
  EXPECT_FALSE(HasName(run.channels(), "sum of shunt voltages"));
  EXPECT_EQ(run.all_channels().size(), 12u);  // + one integrated energy counter per rail
}

TEST(Ina3221, AgxOrinTwoChipsSkipNcAndFindDriverDir) {
  TempTree t;
  // No class entries: found through /sys/bus/i2c/drivers/ina3221 only.
  WriteIna3221(t, "1-0040", 5,
               {{1, "VDD_GPU_SOC", 5008, 1520},
                {2, "VDD_CPU_CV", 5016, 880},
                {3, "VIN_SYS_5V0", 4968, 1040}},
               false);
  WriteIna3221(t, "1-0041", 2,
               {{1, "NC", 0, 0}, {2, "VDDQ_VDD2_1V8AO", 4992, 160}, {3, "NC", 8, 0}}, false);
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeIna3221Collector());
  run.Sample();

  EXPECT_EQ(run.channels().size(), 12u) << ::testing::PrintToString(Names(run.channels()));
  EXPECT_FALSE(HasName(run.channels(), "NC"));
  EXPECT_EQ(run.Rail("VDDQ_VDD2_1V8AO", Field::kPower), 4992 * 160 / 1000);
  EXPECT_EQ(run.Find(Kind::kRail, "VDDQ_VDD2_1V8AO", Field::kVoltage)->device, "ina3221 1-0041");
  EXPECT_EQ(run.Find(Kind::kRail, "VDD_GPU_SOC", Field::kVoltage)->device, "ina3221 1-0040");
  // AGX Orin has no board input rail: nothing is a parent, nothing the input.
  for (const auto& c : run.channels()) {
    EXPECT_EQ(c.parent, "") << c.name;
    EXPECT_FALSE(c.Has(kFlagInputRail)) << c.name;
  }
}

TEST(Ina3221, DisabledAndUnlabelledChannelsAreSkipped) {
  TempTree t;
  WriteIna3221(
      t, "7-0040", 6,
      {{1, "VDD_IN", 5000, 1000}, {2, "VDD_CPU_GPU_CV", 5000, 200}, {3, "VDD_SOC", 5000, 300}});
  const std::string dir = InaDir("7-0040", 6);
  t.Write(dir + "/in2_enable", "0\n");
  t.Remove(dir + "/in3_label");  // no DT label: the driver hides the file
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeIna3221Collector());
  run.Sample();
  EXPECT_EQ(Names(run.channels()), (std::vector<std::string>{"VDD_IN", "VDD_IN", "VDD_IN"}));
}

TEST(Ina3221, BadReadsAreAbsentNotZero) {
  TempTree t;
  WriteIna3221(
      t, "1-0040", 3,
      {{1, "VDD_IN", 5123, 1200}, {2, "VDD_CPU_GPU_CV", 5104, 312}, {3, "VDD_SOC", 5112, 596}});
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  CollectorRun run(fs, MakeIna3221Collector());
  // Faults apply to the path the collector opened: the class entry.
  const std::string dir = "/sys/class/hwmon/hwmon3";

  fs.FailWith(dir + "/in1_input", EIO);
  fs.Replace(dir + "/curr2_input", "garbage\n");
  fs.Replace(dir + "/in3_input", "");
  run.Sample(1 * kSecond);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kCurrent), 1200);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_CPU_GPU_CV", Field::kVoltage), 5104);
  EXPECT_EQ(run.Rail("VDD_CPU_GPU_CV", Field::kCurrent), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_CPU_GPU_CV", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_SOC", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_SOC", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Errors("VDD_IN", Field::kVoltage), 1u);
  EXPECT_EQ(run.Errors("VDD_CPU_GPU_CV", Field::kCurrent), 1u);

  fs.ClearAll();
  fs.Replace(dir + "/in1_input", "99999999999999999999\n");   // overflows int64
  fs.Replace(dir + "/in2_input", "70000\n");                  // beyond the bus register
  fs.Replace(dir + "/curr3_input", "9223372036854775807\n");  // no shunt reads that
  run.Sample(2 * kSecond);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_CPU_GPU_CV", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_CPU_GPU_CV", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_SOC", Field::kCurrent), std::nullopt);
  EXPECT_EQ(run.Rail("VDD_SOC", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Errors("VDD_CPU_GPU_CV", Field::kVoltage), 1u);
  EXPECT_EQ(run.Errors("VDD_SOC", Field::kCurrent), 1u);

  fs.ClearAll();
  run.Sample(3 * kSecond);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), 6147);
  EXPECT_EQ(run.Rail("VDD_SOC", Field::kPower), 5112 * 596 / 1000);
}

TEST(Ina3221, ValuesAreRereadEveryTick) {
  TempTree t;
  WriteIna3221(t, "1-0040", 1, {{1, "VDD_IN", 5000, 1000}});
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeIna3221Collector());
  run.Sample(1 * kSecond);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), 5000);
  t.Write(InaDir("1-0040", 1) + "/curr1_input", "2500\n");
  run.Sample(2 * kSecond);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), 12500);
}

}  // namespace
}  // namespace edgemon
