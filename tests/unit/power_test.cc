// Power collectors: INA3221 (hwmon and NVIDIA iio drivers), power_supply and
// RAPL, on scratch trees laid out as the kernel does (class entries are
// relative symlinks into /sys/devices) and on the node_exporter fixtures.
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::Fixture;
using testing::TempTree;

constexpr int64_t kSecond = 1'000'000'000;

// One collector over one SysFs, as the daemon runs it.
class Harness {
 public:
  Harness(SysFs& fs, std::unique_ptr<Collector> c) {
    std::vector<std::unique_ptr<Collector>> v;
    v.push_back(std::move(c));
    col_ = std::make_unique<Collection>(fs, std::move(v), CollectOptions{}, nullptr);
    col_->Discover();
  }
  void Sample(int64_t t_ns = kSecond) { col_->Sample(t_ns, frame_); }
  const Channel* Find(Kind kind, std::string_view name, Field field) const {
    return col_->inventory().Find(kind, name, field);
  }
  // The value of a channel that must exist.
  Value Get(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    EXPECT_NE(c, nullptr) << name << " " << ToString(field);
    return c ? frame_.Get(c->id) : std::nullopt;
  }
  Value Rail(std::string_view name, Field field) const { return Get(Kind::kRail, name, field); }
  uint64_t Errors(std::string_view name, Field field) const {
    const Channel* c = Find(Kind::kRail, name, field);
    return c && c->id < col_->error_counts().size() ? col_->error_counts()[c->id] : 0;
  }
  // The collector's own channels, without the energy counters the
  // Collection's integrator adds for every rail power channel.
  std::vector<Channel> channels() const {
    std::vector<Channel> out;
    for (const auto& c : col_->inventory().channels) {
      if (!(c.field == Field::kEnergy && c.Has(kFlagDerived))) out.push_back(c);
    }
    return out;
  }
  const std::vector<Channel>& all_channels() const { return col_->inventory().channels; }
  Collection& collection() { return *col_; }

 private:
  std::unique_ptr<Collection> col_;
  Frame frame_;
};

std::vector<std::string> Names(const std::vector<Channel>& channels) {
  std::vector<std::string> out;
  for (const auto& c : channels) out.push_back(c.name);
  return out;
}

bool HasName(const std::vector<Channel>& channels, std::string_view name) {
  for (const auto& c : channels) {
    if (c.name == name) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// INA3221, upstream hwmon driver (JetPack 5+)

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
  Harness run(fs, MakeIna3221Collector());
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
  Harness run(fs, MakeIna3221Collector());
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
  Harness run(fs, MakeIna3221Collector());
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
  Harness run(fs, MakeIna3221Collector());
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
  Harness run(fs, MakeIna3221Collector());
  run.Sample(1 * kSecond);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), 5000);
  t.Write(InaDir("1-0040", 1) + "/curr1_input", "2500\n");
  run.Sample(2 * kSecond);
  EXPECT_EQ(run.Rail("VDD_IN", Field::kPower), 12500);
}

// ---------------------------------------------------------------------------
// INA3221, NVIDIA ina3221x iio driver (JetPack 4)

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
  Harness run(fs, MakeIna3221IioCollector());
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
  Harness run(fs, MakeIna3221IioCollector());
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
  Harness run(fs, MakeIna3221IioCollector());
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

// ---------------------------------------------------------------------------
// power_supply

constexpr std::string_view kAcpi = "/sys/devices/LNXSYSTM:00/LNXSYBUS:00/PNP0C0A:00";

void WriteSupply(TempTree& t, std::string_view name,
                 const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string dir = std::string(kAcpi) + "/power_supply/" + std::string(name);
  for (const auto& [f, v] : files) t.Write(dir + "/" + f, v);
  // The cycle of a real system: subsystem points back at the class dir.
  t.Link(dir + "/subsystem", "../../../../../../class/power_supply");
  t.Link(dir + "/device", "../../../PNP0C0A:00");
  t.Link("/sys/class/power_supply/" + std::string(name),
         "../../devices/LNXSYSTM:00/LNXSYBUS:00/PNP0C0A:00/power_supply/" + std::string(name));
}

TEST(PowerSupply, BatteryUnitsAndDerivedPower) {
  TempTree t;
  // No power_now: power = V x I, negative while discharging as the kernel signs it.
  WriteSupply(t, "BAT1",
              {{"type", "Battery\n"},
               {"status", "Discharging\n"},
               {"technology", "Li-poly\n"},
               {"manufacturer", "SMP\n"},
               {"model_name", "5B10W13930\xff\n"},
               {"present", "1\n"},
               {"voltage_now", "11660000\n"},
               {"current_now", "-1500000\n"},
               {"voltage_min_design", "11520000\n"}});
  // power_now given: read, not derived.
  WriteSupply(t, "BAT2",
              {{"type", "Battery\n"},
               {"voltage_now", "7412345\n"},
               {"current_now", "812000\n"},
               {"power_now", "6018000\n"}});
  WriteSupply(t, "ADP1", {{"type", "Mains\n"}, {"online", "1\n"}});
  WriteSupply(t, "ucsi-source-psy-USBC000:001",
              {{"type", "USB\n"}, {"online", "2\n"}, {"voltage_now", "5000000\n"}});
  // A peripheral's battery is not the machine's power.
  WriteSupply(t, "hid-00:11:22:33:44:55-battery",
              {{"type", "Battery\n"}, {"scope", "Device\n"}, {"voltage_now", "3900000\n"}});
  RootedSysFs fs(t.root());
  Harness run(fs, MakePowerSupplyCollector());
  run.Sample();

  EXPECT_EQ(run.Rail("BAT1", Field::kVoltage), 11660);
  EXPECT_EQ(run.Rail("BAT1", Field::kCurrent), -1500);
  EXPECT_EQ(run.Rail("BAT1", Field::kPower), int64_t{11660000} * -1500000 / 1'000'000'000);
  const Channel* p1 = run.Find(Kind::kRail, "BAT1", Field::kPower);
  ASSERT_NE(p1, nullptr);
  EXPECT_TRUE(p1->Has(kFlagDerived));
  EXPECT_EQ(p1->device, "power_supply BAT1");
  EXPECT_EQ(p1->unit, Unit::kMilliwatt);
  ASSERT_NE(p1->Attr("status"), nullptr);
  EXPECT_EQ(*p1->Attr("status"), "Discharging");
  EXPECT_EQ(*p1->Attr("technology"), "Li-poly");
  EXPECT_EQ(*p1->Attr("manufacturer"), "SMP");
  EXPECT_EQ(*p1->Attr("model_name"), "5B10W13930");  // junk byte dropped
  EXPECT_EQ(run.Find(Kind::kRail, "BAT1", Field::kVoltage)->min, 11520);

  EXPECT_EQ(run.Rail("BAT2", Field::kVoltage), 7412);
  EXPECT_EQ(run.Rail("BAT2", Field::kCurrent), 812);
  EXPECT_EQ(run.Rail("BAT2", Field::kPower), 6018);
  EXPECT_FALSE(run.Find(Kind::kRail, "BAT2", Field::kPower)->Has(kFlagDerived));

  EXPECT_EQ(run.Rail("ADP1", Field::kOnline), 1);
  EXPECT_EQ(run.Find(Kind::kRail, "ADP1", Field::kOnline)->device, "power_supply ADP1");
  EXPECT_EQ(run.Rail("ucsi-source-psy-USBC000:001", Field::kOnline), 1);
  EXPECT_EQ(run.Find(Kind::kRail, "ucsi-source-psy-USBC000:001", Field::kVoltage), nullptr);
  EXPECT_FALSE(HasName(run.channels(), "hid-00:11:22:33:44:55-battery"));
}

TEST(PowerSupply, BadReadsAndRemovedBatteryAreAbsent) {
  TempTree t;
  WriteSupply(t, "BAT0",
              {{"type", "Battery\n"},
               {"present", "1\n"},
               {"voltage_now", "12000000\n"},
               {"current_now", "1000000\n"}});
  WriteSupply(t, "AC", {{"type", "Mains\n"}, {"online", "0\n"}});
  const std::string dir = "/sys/class/power_supply/BAT0";
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness run(fs, MakePowerSupplyCollector());

  run.Sample(1 * kSecond);
  EXPECT_EQ(run.Rail("BAT0", Field::kPower), 12000);
  EXPECT_EQ(run.Rail("AC", Field::kOnline), 0);

  fs.Replace(dir + "/voltage_now", "garbage\n");
  fs.Replace("/sys/class/power_supply/AC/online", "-1\n");
  run.Sample(2 * kSecond);
  EXPECT_EQ(run.Rail("BAT0", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("BAT0", Field::kCurrent), 1000);
  EXPECT_EQ(run.Rail("BAT0", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Rail("AC", Field::kOnline), std::nullopt);

  fs.ClearAll();
  fs.FailWith(dir + "/current_now", EIO);
  fs.Replace(dir + "/voltage_now", "99999999999999999999");
  run.Sample(3 * kSecond);
  EXPECT_EQ(run.Rail("BAT0", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("BAT0", Field::kCurrent), std::nullopt);
  EXPECT_EQ(run.Rail("BAT0", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Errors("BAT0", Field::kCurrent), 1u);

  fs.ClearAll();
  t.Write(dir + "/present", "0\n");
  run.Sample(4 * kSecond);
  EXPECT_EQ(run.Rail("BAT0", Field::kVoltage), std::nullopt);
  EXPECT_EQ(run.Rail("BAT0", Field::kPower), std::nullopt);
}

int64_t FixtureInt(SysFs& fs, const std::string& path) {
  auto text = fs.ReadText(path, 256);
  EXPECT_TRUE(text.has_value()) << path;
  auto v = text ? parse::Int(*text) : std::nullopt;
  EXPECT_TRUE(v.has_value()) << path;
  return v.value_or(-1);
}

TEST(PowerSupply, NodeExporterFixtures) {
  for (const char* tree : {"node_exporter/node_exporter", "node_exporter/procfs"}) {
    SCOPED_TRACE(tree);
    RootedSysFs fs(Fixture(tree));
    Harness run(fs, MakePowerSupplyCollector());
    run.Sample();
    const std::string bat = SysPath("class/power_supply/BAT0");
    EXPECT_EQ(run.Rail("BAT0", Field::kVoltage), FixtureInt(fs, bat + "/voltage_now") / 1000);
    EXPECT_EQ(run.Rail("BAT0", Field::kPower), FixtureInt(fs, bat + "/power_now") / 1000);
    EXPECT_EQ(run.Find(Kind::kRail, "BAT0", Field::kCurrent), nullptr);  // no current_now
    EXPECT_FALSE(run.Find(Kind::kRail, "BAT0", Field::kPower)->Has(kFlagDerived));
    const Channel* v = run.Find(Kind::kRail, "BAT0", Field::kVoltage);
    ASSERT_NE(v, nullptr);
    ASSERT_NE(v->Attr("model_name"), nullptr);
    EXPECT_EQ(*v->Attr("model_name"), "LNV-45N1");
    EXPECT_EQ(run.Rail("AC", Field::kOnline),
              FixtureInt(fs, SysPath("class/power_supply/AC/online")));
    EXPECT_EQ(run.channels().size(), 3u) << ::testing::PrintToString(Names(run.channels()));
  }
}

// ---------------------------------------------------------------------------
// RAPL

constexpr int64_t kMaxRange = 262143328850;

// Subzones live inside their package's directory, as on a real system.
std::string ZoneRel(std::string_view entry) {
  std::string rel = "devices/virtual/powercap/intel-rapl/";
  auto first = entry.find(':');
  auto last = entry.rfind(':');
  if (first != last) rel += std::string(entry.substr(0, last)) + "/";
  return rel + std::string(entry);
}

void WriteZone(TempTree& t, std::string_view entry, std::string_view name, int64_t energy) {
  const std::string dir = "/sys/" + ZoneRel(entry);
  t.Write(dir + "/name", std::string(name) + "\n");
  t.Write(dir + "/energy_uj", std::to_string(energy) + "\n");
  t.Write(dir + "/max_energy_range_uj", std::to_string(kMaxRange) + "\n");
  t.Write(dir + "/enabled", "1\n");
  t.Link("/sys/class/powercap/" + std::string(entry), "../../" + ZoneRel(entry));
}

std::string ZoneFile(std::string_view entry) {
  return "/sys/" + ZoneRel(entry) + "/energy_uj";
}

TEST(Rapl, HierarchyNamesAndDevices) {
  TempTree t;
  t.Write("/sys/devices/virtual/powercap/intel-rapl/enabled", "1\n");
  t.Link("/sys/class/powercap/intel-rapl", "../../devices/virtual/powercap/intel-rapl");
  WriteZone(t, "intel-rapl:0", "package-0", 1000);
  WriteZone(t, "intel-rapl:0:0", "core", 2000);
  WriteZone(t, "intel-rapl:0:1", "uncore", 3000);
  WriteZone(t, "intel-rapl:0:2", "dram", 4000);
  WriteZone(t, "intel-rapl:1", "psys", 5000);
  RootedSysFs fs(t.root());
  Harness run(fs, MakeRaplCollector());
  run.Sample();

  EXPECT_EQ(run.channels().size(), 10u) << ::testing::PrintToString(Names(run.channels()));
  const Channel* psys = run.Find(Kind::kRail, "psys", Field::kEnergy);
  ASSERT_NE(psys, nullptr);
  EXPECT_TRUE(psys->Has(kFlagInputRail));
  EXPECT_TRUE(psys->Has(kFlagCounter));
  EXPECT_EQ(psys->unit, Unit::kMillijoule);
  EXPECT_EQ(psys->parent, "");
  EXPECT_EQ(run.Find(Kind::kRail, "package-0", Field::kEnergy)->parent, "psys");
  EXPECT_EQ(run.Find(Kind::kRail, "package-0/core", Field::kEnergy)->parent, "package-0");
  EXPECT_EQ(run.Find(Kind::kRail, "package-0/uncore", Field::kPower)->parent, "package-0");
  EXPECT_EQ(run.Find(Kind::kRail, "package-0/dram", Field::kEnergy)->parent, "psys");
  EXPECT_EQ(run.Find(Kind::kRail, "package-0/core", Field::kEnergy)->device, "rapl intel-rapl:0:0");
  const Channel* power = run.Find(Kind::kRail, "package-0", Field::kPower);
  ASSERT_NE(power, nullptr);
  EXPECT_TRUE(power->Has(kFlagDerived));
  EXPECT_EQ(power->unit, Unit::kMilliwatt);
  EXPECT_EQ(run.Rail("package-0/dram", Field::kEnergy), 4);            // 4000 uJ
  EXPECT_EQ(run.Rail("package-0/dram", Field::kPower), std::nullopt);  // first sample
}

TEST(Rapl, PowerFromDeltaAndWrapAround) {
  TempTree t;
  const int64_t e1 = kMaxRange - 2'000'000;
  WriteZone(t, "intel-rapl:0", "package-0", e1);
  WriteZone(t, "intel-rapl:0:0", "core", 100'000'000);
  RootedSysFs fs(t.root());
  Harness run(fs, MakeRaplCollector());

  run.Sample(10 * kSecond);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), e1 / 1000);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), std::nullopt);

  // 0.5 s later the package counter wrapped: 2,000,000 uJ to the top, one
  // step to 0, then 3,000,000 uJ. The core counter moved 7.5 J.
  // e2 is chosen so that the wrap's one-step (1 uJ) lands the sum exactly on
  // a whole mJ: dropping it would read one mJ less.
  const int64_t e2 = 3'000'149;
  static_assert((kMaxRange + e2 + 1) % 1000 == 0);
  t.Write(ZoneFile("intel-rapl:0"), std::to_string(e2) + "\n");
  t.Write(ZoneFile("intel-rapl:0:0"), "107500000\n");
  run.Sample(10 * kSecond + kSecond / 2);
  const int64_t delta = (kMaxRange - e1) + e2 + 1;
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), (e1 + delta) / 1000);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), delta * 1'000'000 / (kSecond / 2));  // ~10 W
  EXPECT_EQ(run.Rail("package-0/core", Field::kEnergy), 107'500);
  EXPECT_EQ(run.Rail("package-0/core", Field::kPower), 15'000);  // 7.5 J in 0.5 s

  // A plain step of 20 J over 2 s.
  const int64_t e3 = e2 + 20'000'000;
  t.Write(ZoneFile("intel-rapl:0"), std::to_string(e3) + "\n");
  run.Sample(12 * kSecond + kSecond / 2);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), (e1 + delta + 20'000'000) / 1000);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), 10'000);

  // A drop that would mean ~262 kJ in 1 s is a counter reset (resume), not
  // energy: the accumulator does not move and power is absent.
  t.Write(ZoneFile("intel-rapl:0"), "1000000\n");
  run.Sample(13 * kSecond + kSecond / 2);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), (e1 + delta + 20'000'000) / 1000);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), std::nullopt);
  t.Write(ZoneFile("intel-rapl:0"), "6000000\n");
  run.Sample(14 * kSecond + kSecond / 2);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), (e1 + delta + 25'000'000) / 1000);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), 5'000);

  // Rediscovery (hot-plug) keeps the counter where it was.
  run.collection().Discover();
  run.Sample(15 * kSecond + kSecond / 2);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), (e1 + delta + 25'000'000) / 1000);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), 0);
}

TEST(Rapl, UnreadableAndBadCountersAreAbsent) {
  TempTree t;
  t.Write("/sys/devices/virtual/powercap/intel-rapl/enabled", "1\n");
  t.Link("/sys/class/powercap/intel-rapl", "../../devices/virtual/powercap/intel-rapl");
  WriteZone(t, "intel-rapl:0", "package-0", 5'000'000);
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness run(fs, MakeRaplCollector());
  const std::string file = "/sys/class/powercap/intel-rapl:0/energy_uj";

  // Root-only energy_uj (kernels since 2020): declared, absent, counted.
  fs.FailWith(file, EACCES);
  run.Sample(1 * kSecond);
  run.Sample(2 * kSecond);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), std::nullopt);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), std::nullopt);
  EXPECT_EQ(run.Errors("package-0", Field::kEnergy), 2u);

  for (const char* bad : {"garbage\n", "", "99999999999999999999\n", "-5\n", "262143328851\n"}) {
    fs.Replace(file, bad);
    run.Sample(3 * kSecond);
    EXPECT_EQ(run.Rail("package-0", Field::kEnergy), std::nullopt) << bad;
    EXPECT_EQ(run.Rail("package-0", Field::kPower), std::nullopt) << bad;
  }
  fs.ClearAll();
  run.Sample(4 * kSecond);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), 5'000);
  t.Write(ZoneFile("intel-rapl:0"), "9000000\n");
  run.Sample(6 * kSecond);
  EXPECT_EQ(run.Rail("package-0", Field::kEnergy), 9'000);
  EXPECT_EQ(run.Rail("package-0", Field::kPower), 2'000);
}

TEST(Rapl, NodeExporterFixtures) {
  for (const char* tree : {"node_exporter/node_exporter", "node_exporter/procfs"}) {
    SCOPED_TRACE(tree);
    RootedSysFs fs(Fixture(tree));
    Harness run(fs, MakeRaplCollector());
    run.Sample();
    const std::string pc = SysPath("class/powercap");
    // node_exporter's node_rapl_package_joules_total is energy_uj / 1e6.
    EXPECT_EQ(run.Rail("package-0", Field::kEnergy),
              FixtureInt(fs, pc + "/intel-rapl:0/energy_uj") / 1000);
    EXPECT_EQ(run.Rail("package-0/core", Field::kEnergy),
              FixtureInt(fs, pc + "/intel-rapl:0:0/energy_uj") / 1000);
    EXPECT_EQ(run.Find(Kind::kRail, "package-0/core", Field::kEnergy)->parent, "package-0");
    EXPECT_EQ(run.Find(Kind::kRail, "package-0", Field::kEnergy)->device, "rapl intel-rapl:0");
    EXPECT_EQ(run.Rail("package-0", Field::kPower), std::nullopt);
    run.Sample(2 * kSecond);
    EXPECT_EQ(run.Rail("package-0", Field::kPower), 0);  // the files do not move
    for (const auto& c : run.channels()) EXPECT_NE(c.device, "rapl intel-rapl");  // control type
  }
  RootedSysFs fs(Fixture("node_exporter/procfs"));
  Harness run(fs, MakeRaplCollector());
  run.Sample();
  EXPECT_EQ(run.Rail("package-10", Field::kEnergy),
            FixtureInt(fs, SysPath("class/powercap/intel-rapl:a/energy_uj")) / 1000);
  EXPECT_EQ(run.channels().size(), 6u) << ::testing::PrintToString(Names(run.channels()));
}

}  // namespace
}  // namespace edgemon
