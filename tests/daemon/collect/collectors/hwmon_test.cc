// The generic hwmon collector on the node_exporter fixture (coretemp x2,
// nct6779 without a device link, applesmc with its files on the device dir,
// a plain hwmonN directory without a name, chips sharing a device) and on
// scratch trees (INA2xx board monitors, power units, faults).
#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::CollectorRun;
using testing::FaultySysFs;
using testing::Fixture;
using testing::FixtureInt;
using testing::kSecond;
using testing::TempTree;

std::string AllNames(const std::vector<Channel>& channels) {
  std::string out;
  for (const auto& c : channels) out += c.name + " [" + c.device + "]\n";
  return out;
}

// ---------------------------------------------------------------------------
// node_exporter fixture

class NodeExporterHwmon : public ::testing::Test {
 protected:
  NodeExporterHwmon()
      : fs_(Fixture("node_exporter/node_exporter")), run_(fs_, MakeHwmonCollector()) {
    run_.Sample();
  }
  int64_t File(std::string_view rel) { return FixtureInt(fs_, SysPath(rel)); }

  RootedSysFs fs_;
  CollectorRun run_;
};

TEST_F(NodeExporterHwmon, CoretempTemperaturesAndLimits) {
  const std::string c0 = "devices/platform/coretemp.0/hwmon/hwmon0/";
  EXPECT_EQ(run_.Temp("coretemp/Physical id 0"), File(c0 + "temp1_input"));
  EXPECT_EQ(run_.Temp("coretemp/Core 0"), File(c0 + "temp2_input"));
  EXPECT_EQ(run_.Temp("coretemp/Core 3"), File(c0 + "temp5_input"));
  const Channel* core0 = run_.Find(Kind::kThermal, "coretemp/Core 0", Field::kTemp);
  ASSERT_NE(core0, nullptr);
  EXPECT_EQ(core0->unit, Unit::kMilliCelsius);
  EXPECT_EQ(core0->device, "hwmon coretemp");
  EXPECT_EQ(core0->max, File(c0 + "temp2_max"));
  EXPECT_EQ(core0->crit, File(c0 + "temp2_crit"));
  ASSERT_NE(core0->Attr("sensor"), nullptr);
  EXPECT_EQ(*core0->Attr("sensor"), "temp2");
  ASSERT_NE(core0->Attr("hwmon"), nullptr);
  EXPECT_EQ(*core0->Attr("hwmon"), "hwmon0");
}

TEST_F(NodeExporterHwmon, CollidingChipNamesGetDistinctStableNames) {
  // Two chips named "coretemp": the second is told apart by its device dir.
  const std::string c1 = "devices/platform/coretemp.1/hwmon/hwmon1/";
  EXPECT_EQ(run_.Temp("coretemp.1/Core 2"), File(c1 + "temp4_input"));
  EXPECT_EQ(run_.Find(Kind::kThermal, "coretemp.1/Core 2", Field::kTemp)->device,
            "hwmon coretemp.1");
  // Three chips on one device dir, with their own names.
  const std::string phy = "devices/platform/soc/18000000.wifi/ieee80211/phy0/hwmon/";
  EXPECT_EQ(run_.Temp("mt7996_phy0_0/temp1"), File(phy + "hwmon8/temp1_input"));
  EXPECT_EQ(run_.Temp("mt7996_phy0_1/temp1"), File(phy + "hwmon9/temp1_input"));
  EXPECT_EQ(run_.Temp("mt7996_phy0_2/temp1"), File(phy + "hwmon10/temp1_input"));
  std::set<std::string> keys;
  for (const auto& c : run_.channels()) {
    EXPECT_EQ(c.name.find('#'), std::string::npos) << c.name;  // no ChannelTable fallback
    EXPECT_TRUE(keys.insert(c.Key()).second) << c.Key();
  }
}

TEST_F(NodeExporterHwmon, Nct6779VoltagesAndFanWithoutDeviceLink) {
  const std::string n = "devices/platform/nct6775.656/hwmon/hwmon3/";
  EXPECT_EQ(run_.Get(Kind::kRail, "nct6779/in0", Field::kVoltage), File(n + "in0_input"));
  EXPECT_EQ(run_.Get(Kind::kRail, "nct6779/in1", Field::kVoltage), File(n + "in1_input"));
  const Channel* in0 = run_.Find(Kind::kRail, "nct6779/in0", Field::kVoltage);
  ASSERT_NE(in0, nullptr);
  EXPECT_EQ(in0->unit, Unit::kMillivolt);
  EXPECT_EQ(in0->device, "hwmon nct6779");
  EXPECT_EQ(in0->max, File(n + "in0_max"));
  EXPECT_FALSE(in0->min.has_value());  // in0_min is 0: not configured
  EXPECT_FALSE(run_.Find(Kind::kRail, "nct6779/in1", Field::kVoltage)->max.has_value());
  EXPECT_EQ(run_.Get(Kind::kFan, "nct6779/fan2", Field::kSpeed), File(n + "fan2_input"));
  EXPECT_EQ(run_.Find(Kind::kFan, "nct6779/fan2", Field::kSpeed)->unit, Unit::kRpm);
  // intrusion*, pwm* are not sensors of this collector.
  for (const auto& c : run_.channels()) {
    EXPECT_EQ(c.name.find("intrusion"), std::string::npos);
    EXPECT_EQ(c.name.find("pwm"), std::string::npos);
  }
}

TEST_F(NodeExporterHwmon, ApplesmcFilesOnTheDeviceDir) {
  const std::string a = "devices/platform/applesmc.768/";
  EXPECT_EQ(run_.Get(Kind::kFan, "applesmc/Left side", Field::kSpeed), File(a + "fan1_input"));
  EXPECT_EQ(run_.Get(Kind::kFan, "applesmc/Right side", Field::kSpeed), File(a + "fan2_input"));
  const Channel* right = run_.Find(Kind::kFan, "applesmc/Right side", Field::kSpeed);
  ASSERT_NE(right, nullptr);
  EXPECT_EQ(right->min, File(a + "fan2_min"));
  EXPECT_EQ(right->max, File(a + "fan2_max"));
  EXPECT_EQ(right->device, "hwmon applesmc");
}

TEST_F(NodeExporterHwmon, NamelessChipAndUnknownAttributes) {
  // hwmon4: a plain directory without `name` or `device`, two temps sharing a label.
  const std::string h4 = "class/hwmon/hwmon4/";
  EXPECT_EQ(run_.Temp("hwmon4/foosensor (temp1)"), File(h4 + "temp1_input"));
  EXPECT_EQ(run_.Temp("hwmon4/foosensor (temp2)"), File(h4 + "temp2_input"));
  EXPECT_EQ(run_.Find(Kind::kThermal, "hwmon4/foosensor (temp2)", Field::kTemp)->crit,
            File(h4 + "temp2_crit"));
  // hwmon5 has only bogus1_* files; hwmon6/7 only pwm1_enable.
  for (const auto& c : run_.channels()) {
    EXPECT_NE(c.device, "hwmon bogus") << c.name;
    EXPECT_NE(c.device, "hwmon asus") << c.name;
    EXPECT_EQ(c.name.find("freq"), std::string::npos) << c.name;
  }
  // 5 + 5 coretemp, 2 hwmon4, 3 mt7996 temps; 2 nct6779 in; 3 fans.
  EXPECT_EQ(run_.channels().size(), 20u) << AllNames(run_.channels());
}

// ---------------------------------------------------------------------------
// Scratch trees

// A chip as the kernel lays it out: device dir, hwmon/hwmonN below it with a
// `device` link, and the class entry.
std::string WriteChip(TempTree& t, std::string_view device_rel, int hwmon, std::string_view name) {
  const std::string h = "hwmon" + std::to_string(hwmon);
  const std::string dir = "/sys/" + std::string(device_rel) + "/hwmon/" + h;
  if (!name.empty()) t.Write(dir + "/name", std::string(name) + "\n");
  t.Link(dir + "/device", "../../../" + std::string(BaseName(device_rel)));
  t.Link("/sys/class/hwmon/" + h, "../../" + std::string(device_rel) + "/hwmon/" + h);
  return dir;
}

TEST(Hwmon, Ina238BoardMonitorIsARailNamedByItsLabel) {
  TempTree t;
  // Thor's carrier: an INA238 with the DT label "VIN" (hwmon core `label`).
  const std::string d = WriteChip(t, "devices/platform/c250000.i2c/i2c-2/2-0044", 7, "ina238");
  t.Write(d + "/label", "VIN\n");
  t.Write(d + "/in0_input", "12\n");  // shunt voltage: not a rail
  t.Write(d + "/in1_input", "19800\n");
  t.Write(d + "/in1_max", "26000\n");
  t.Write(d + "/curr1_input", "2500\n");
  t.Write(d + "/power1_input", "49512345\n");  // uW
  t.Write(d + "/power1_max", "120000000\n");
  t.Write(d + "/temp1_input", "41250\n");
  t.Write(d + "/shunt_resistor", "2000\n");
  // An unlabelled INA226 on another bus: a sub-rail of VIN.
  const std::string e = WriteChip(t, "devices/platform/c240000.i2c/i2c-1/1-0045", 2, "ina226");
  t.Write(e + "/in0_input", "3\n");
  t.Write(e + "/in1_input", "3312\n");
  t.Write(e + "/curr1_input", "-150\n");
  t.Write(e + "/power1_input", "496800\n");
  // The INA3221 and the fan chips belong to their own collectors.
  WriteChip(t, "devices/platform/c240000.i2c/i2c-1/1-0040", 1, "ina3221");
  t.Write("/sys/devices/platform/c240000.i2c/i2c-1/1-0040/hwmon/hwmon1/in1_input", "5000\n");
  t.Write("/sys/devices/platform/c240000.i2c/i2c-1/1-0040/hwmon/hwmon1/in1_label", "VDD_GPU\n");
  WriteChip(t, "devices/platform/pwm-fan", 3, "pwmfan");
  t.Write("/sys/devices/platform/pwm-fan/hwmon/hwmon3/fan1_input", "0\n");
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeHwmonCollector());
  run.Sample();

  EXPECT_EQ(run.Get(Kind::kRail, "VIN", Field::kVoltage), 19800);
  EXPECT_EQ(run.Get(Kind::kRail, "VIN", Field::kCurrent), 2500);
  EXPECT_EQ(run.Get(Kind::kRail, "VIN", Field::kPower), 49512);  // uW -> mW
  const Channel* p = run.Find(Kind::kRail, "VIN", Field::kPower);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->device, "ina238 2-0044");
  EXPECT_EQ(p->unit, Unit::kMilliwatt);
  EXPECT_EQ(p->max, 120000);
  EXPECT_FALSE(p->Has(kFlagDerived));
  EXPECT_TRUE(p->Has(kFlagInputRail));  // AssignRailHierarchy keys on "ina" devices
  EXPECT_EQ(run.Find(Kind::kRail, "VIN", Field::kVoltage)->max, 26000);
  EXPECT_EQ(run.Temp("ina238/temp1"), 41250);

  EXPECT_EQ(run.Get(Kind::kRail, "ina226 1-0045", Field::kVoltage), 3312);
  EXPECT_EQ(run.Get(Kind::kRail, "ina226 1-0045", Field::kCurrent), -150);
  EXPECT_EQ(run.Get(Kind::kRail, "ina226 1-0045", Field::kPower), 496);
  EXPECT_EQ(run.Find(Kind::kRail, "ina226 1-0045", Field::kPower)->parent, "VIN");
  EXPECT_EQ(run.Find(Kind::kRail, "ina226 1-0045", Field::kPower)->device, "ina226 1-0045");

  for (const auto& c : run.channels()) {
    EXPECT_NE(c.name, "VDD_GPU");
    EXPECT_EQ(c.name.find("in0"), std::string::npos) << c.name;
    EXPECT_EQ(c.device.find("ina3221"), std::string::npos) << c.name;
    EXPECT_EQ(c.device.find("pwmfan"), std::string::npos) << c.name;
  }
  EXPECT_EQ(run.channels().size(), 7u) << AllNames(run.channels());
}

TEST(Hwmon, InaLabelsFollowTheOneRule) {
  // parse::IsUnusedInaLabel: "NC" is no rail; a label that merely contains
  // "shunt" or "nc" is one.
  TempTree t;
  struct Ina {
    const char* dev;
    int hwmon;
    const char* label;
  };
  for (const Ina& ina : {Ina{"1-0044", 2, "VDD_SHUNT_5V"}, Ina{"1-0045", 3, "NC"}}) {
    const std::string d = WriteChip(t, std::string("devices/platform/c240000.i2c/i2c-1/") + ina.dev,
                                    ina.hwmon, "ina226");
    for (const auto& [file, value] :
         {std::pair{"/in1_label", ina.label}, {"/in1_input", "5000"}, {"/curr1_input", "100"}}) {
      t.Write(d + file, std::string(value) + "\n");
    }
  }
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeHwmonCollector());
  run.Sample();
  EXPECT_EQ(run.Get(Kind::kRail, "VDD_SHUNT_5V", Field::kVoltage), 5000)
      << AllNames(run.channels());
  for (const auto& c : run.channels()) {
    EXPECT_TRUE(c.kind != Kind::kRail || c.name == "VDD_SHUNT_5V") << c.name;
  }
}

TEST(Hwmon, GenericRailsPowerUnitsAndLabels) {
  TempTree t;
  // ACPI power meter: power1_average only, in uW.
  const std::string pm = WriteChip(t, "devices/LNXSYSTM:00/ACPI000D:00", 0, "power_meter");
  t.Write(pm + "/power1_average", "123456789\n");
  t.Write(pm + "/power1_average_interval", "1000\n");
  // A PMBus regulator: in/curr/power with the same label form one rail.
  const std::string reg = WriteChip(t, "devices/platform/i2c-3/3-0060", 1, "tps53679");
  t.Write(reg + "/in2_label", "vout1\n");
  t.Write(reg + "/in2_input", "1800\n");
  t.Write(reg + "/in2_crit", "2000\n");
  t.Write(reg + "/curr2_label", "vout1\n");
  t.Write(reg + "/curr2_input", "4200\n");
  t.Write(reg + "/power2_label", "vout1\n");
  t.Write(reg + "/power2_input", "7560000\n");
  t.Write(reg + "/power2_average", "1\n");  // _input wins
  t.Write(reg + "/temp1_input", "48000\n");
  t.Write(reg + "/temp1_enable", "1\n");
  t.Write(reg + "/temp2_input", "1000\n");
  t.Write(reg + "/temp2_enable", "0\n");          // disabled
  t.Write(reg + "/temp3_label", "label only\n");  // no _input: no channel
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeHwmonCollector());
  run.Sample();

  EXPECT_EQ(run.Get(Kind::kRail, "power_meter/power1", Field::kPower), 123456);
  EXPECT_EQ(run.Get(Kind::kRail, "tps53679/vout1", Field::kVoltage), 1800);
  EXPECT_EQ(run.Get(Kind::kRail, "tps53679/vout1", Field::kCurrent), 4200);
  EXPECT_EQ(run.Get(Kind::kRail, "tps53679/vout1", Field::kPower), 7560);
  EXPECT_EQ(run.Find(Kind::kRail, "tps53679/vout1", Field::kVoltage)->crit, 2000);
  EXPECT_EQ(run.Find(Kind::kRail, "tps53679/vout1", Field::kVoltage)->device, "hwmon tps53679");
  EXPECT_EQ(run.Temp("tps53679/temp1"), 48000);
  EXPECT_EQ(run.Find(Kind::kThermal, "tps53679/temp2", Field::kTemp), nullptr);
  EXPECT_EQ(run.Find(Kind::kThermal, "tps53679/label only", Field::kTemp), nullptr);
  // Generic chips are not board monitors: no hierarchy.
  for (const auto& c : run.channels()) {
    EXPECT_EQ(c.parent, "");
    EXPECT_FALSE(c.Has(kFlagInputRail));
  }
  EXPECT_EQ(run.channels().size(), 5u) << AllNames(run.channels());
}

TEST(Hwmon, DisambiguationFollowsDevicePathsNotHwmonIndexes) {
  TempTree t;
  // hwmonN order is the reverse of the device order; names still follow devices.
  t.Write(WriteChip(t, "devices/platform/coretemp.1", 0, "coretemp") + "/temp1_input", "61000\n");
  t.Write(WriteChip(t, "devices/platform/coretemp.0", 1, "coretemp") + "/temp1_input", "60000\n");
  // Two chips with one name on one device: the hwmon entry breaks the tie.
  const std::string acpi = "devices/LNXSYSTM:00/LNXTHERM:00";
  t.Write("/sys/" + acpi + "/hwmon/hwmon2/name", "acpitz\n");
  t.Write("/sys/" + acpi + "/hwmon/hwmon2/temp1_input", "40000\n");
  t.Link("/sys/class/hwmon/hwmon2", "../../" + acpi + "/hwmon/hwmon2");
  t.Write("/sys/" + acpi + "/hwmon/hwmon3/name", "acpitz\n");
  t.Write("/sys/" + acpi + "/hwmon/hwmon3/temp1_input", "41000\n");
  t.Link("/sys/class/hwmon/hwmon3", "../../" + acpi + "/hwmon/hwmon3");
  // Two NVMe drives.
  t.Write(WriteChip(t, "devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme1", 4, "nvme") +
              "/temp1_input",
          "35850\n");
  t.Write(WriteChip(t, "devices/pci0000:00/0000:00:1d.0/0000:3c:00.0/nvme/nvme0", 5, "nvme") +
              "/temp1_input",
          "33850\n");
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeHwmonCollector());
  run.Sample();

  EXPECT_EQ(run.Temp("coretemp/temp1"), 60000);
  EXPECT_EQ(run.Temp("coretemp.1/temp1"), 61000);
  EXPECT_EQ(run.Temp("acpitz/temp1"), 40000);
  EXPECT_EQ(run.Temp("acpitz@hwmon3/temp1"), 41000);
  EXPECT_EQ(run.Temp("nvme/temp1"), 33850);
  EXPECT_EQ(run.Temp("nvme1/temp1"), 35850);
  for (const auto& c : run.channels()) EXPECT_EQ(c.name.find('#'), std::string::npos) << c.name;
}

TEST(Hwmon, BadReadsAreAbsentNotZero) {
  TempTree t;
  const std::string d = WriteChip(t, "devices/platform/bus@0/thermal-sensor", 0, "soc_therm");
  for (int i = 1; i <= 7; ++i) {
    t.Write(d + "/temp" + std::to_string(i) + "_input", std::to_string(40000 + i) + "\n");
  }
  t.Write(d + "/fan1_input", "1200\n");
  t.Write(d + "/in1_input", "912\n");
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  CollectorRun run(fs, MakeHwmonCollector());
  const std::string c = "/sys/class/hwmon/hwmon0";  // the path the collector opened
  fs.FailWith(c + "/temp1_input", EIO);
  fs.FailWith(c + "/temp2_input", EAGAIN);
  fs.Replace(c + "/temp3_input", "garbage\n");
  fs.Replace(c + "/temp4_input", "");
  fs.Replace(c + "/temp5_input", "99999999999999999999\n");
  fs.Replace(c + "/temp6_input", "-256000\n");  // gated sensor sentinel
  fs.Replace(c + "/temp7_input", "-300000\n");  // below absolute zero
  fs.Replace(c + "/fan1_input", "-1\n");
  fs.Replace(c + "/in1_input", "12abc\n");
  run.Sample(1 * kSecond);
  for (int i = 1; i <= 7; ++i) {
    const std::string name = "soc_therm/temp" + std::to_string(i);
    EXPECT_EQ(run.Temp(name), std::nullopt) << name;
    // A gated sensor is a state, not a fault: absent but not counted.
    EXPECT_EQ(run.Errors(Kind::kThermal, name, Field::kTemp), i == 6 ? 0u : 1u) << name;
  }
  EXPECT_EQ(run.Get(Kind::kFan, "soc_therm/fan1", Field::kSpeed), std::nullopt);
  EXPECT_EQ(run.Get(Kind::kRail, "soc_therm/in1", Field::kVoltage), std::nullopt);

  fs.ClearAll();
  run.Sample(2 * kSecond);
  EXPECT_EQ(run.Temp("soc_therm/temp1"), 40001);
  EXPECT_EQ(run.Temp("soc_therm/temp7"), 40007);
  EXPECT_EQ(run.Get(Kind::kFan, "soc_therm/fan1", Field::kSpeed), 1200);
  EXPECT_EQ(run.Get(Kind::kRail, "soc_therm/in1", Field::kVoltage), 912);
  EXPECT_EQ(run.Errors(Kind::kThermal, "soc_therm/temp1", Field::kTemp), 1u);
}

TEST(Hwmon, ValuesAreRereadEveryTickAndNameFallsBack) {
  TempTree t;
  const std::string d = WriteChip(t, "devices/platform/coretemp.0", 0, "coretemp");
  t.Write(d + "/temp1_label", "Package id 0\n");
  t.Write(d + "/temp1_input", "45000\n");
  RootedSysFs fs(t.root());
  CollectorRun run(fs, MakeHwmonCollector());
  run.Sample(1 * kSecond);
  EXPECT_EQ(run.Temp("coretemp/Package id 0"), 45000);
  t.Write(d + "/temp1_input", "47000\n");
  run.Sample(2 * kSecond);
  EXPECT_EQ(run.Temp("coretemp/Package id 0"), 47000);
  // An empty name file falls back to the device directory's name.
  t.Write(d + "/name", "\n");
  CollectorRun again(fs, MakeHwmonCollector());
  again.Sample();
  EXPECT_EQ(again.Temp("coretemp.0/Package id 0"), 47000);
}

}  // namespace
}  // namespace edgemon
