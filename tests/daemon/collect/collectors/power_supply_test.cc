// The power_supply collector: batteries and mains in fixed units, derived
// power, a battery removed, on scratch trees and the node_exporter fixtures.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
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
using testing::Fixture;
using testing::FixtureInt;
using testing::HasName;
using testing::kSecond;
using testing::Names;
using testing::TempTree;

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
  CollectorRun run(fs, MakePowerSupplyCollector());
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
  CollectorRun run(fs, MakePowerSupplyCollector());

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

TEST(PowerSupply, NodeExporterFixtures) {
  for (const char* tree : {"node_exporter/node_exporter", "node_exporter/procfs"}) {
    SCOPED_TRACE(tree);
    RootedSysFs fs(Fixture(tree));
    CollectorRun run(fs, MakePowerSupplyCollector());
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

}  // namespace
}  // namespace edgemon
