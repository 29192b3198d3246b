// The event collector: soctherm over-current counters, INA3221/INA238 alert
// flags and the alerts counted from them, thermal throttling from cooling
// devices; and the fan collector's stuck-fan condition.
#include <gtest/gtest.h>

#include <string>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::AddHwmonChip;
using testing::Harness;
using testing::Line;
using testing::TempTree;

std::string AddCoolingDevice(TempTree& t, int n, const std::string& type, int cur, int max) {
  const std::string dir = "/sys/devices/virtual/thermal/cooling_device" + std::to_string(n);
  t.Write(dir + "/type", type + "\n");
  t.Write(dir + "/cur_state", Line(cur));
  t.Write(dir + "/max_state", Line(max));
  t.LinkRelative("/sys/class/thermal/cooling_device" + std::to_string(n), dir);
  return dir;
}

TEST(Events, SocthermOverCurrentCountersAreCounters) {
  TempTree t;
  std::string oc =
      AddHwmonChip(t, "hwmon3", "/sys/devices/platform/soctherm-oc-event", "soctherm_oc");
  for (int k = 1; k <= 3; ++k) {
    t.Write(oc + "/oc" + std::to_string(k) + "_event_cnt", Line(k == 3 ? 27 : 0));
    t.Write(oc + "/oc" + std::to_string(k) + "_throt_en", Line(1));
  }
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEventCollector());
  h.Sample();
  const Channel* c = h.Find(Kind::kEvent, "oc3", Field::kEvents);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->unit, Unit::kCount);
  EXPECT_TRUE(c->Has(kFlagCounter));
  EXPECT_EQ(c->device, "hwmon soctherm_oc");
  ASSERT_NE(c->Attr("throttle"), nullptr);
  EXPECT_EQ(*c->Attr("throttle"), "1");
  EXPECT_EQ(h.Get(Kind::kEvent, "oc1", Field::kEvents), 0);
  EXPECT_EQ(h.Get(Kind::kEvent, "oc3", Field::kEvents), 27);
  EXPECT_EQ(h.inventory().channels.size(), 3u);

  t.Write(oc + "/oc3_event_cnt", Line(29));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "oc3", Field::kEvents), 29);
  // Garbage and a negative count are absent, never 0.
  t.Write(oc + "/oc3_event_cnt", "x\n");
  t.Write(oc + "/oc2_event_cnt", Line(-1));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "oc3", Field::kEvents), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kEvent, "oc2", Field::kEvents), std::nullopt);
  EXPECT_EQ(h.Errors(Kind::kEvent, "oc3", Field::kEvents), 1u);
}

TEST(Events, SocthermChipIsNotAGenericHwmonChip) {
  EXPECT_TRUE(IsDedicatedHwmonChip("soctherm_oc"));
}

TEST(Events, Ina3221AlertsGiveStateAndCountedOnsets) {
  TempTree t;
  std::string dev = "/sys/devices/platform/c240000.i2c/i2c-1/1-0040";
  std::string h3 = AddHwmonChip(t, "hwmon2", dev, "ina3221");
  t.LinkRelative("/sys/bus/i2c/drivers/ina3221/1-0040", dev);
  const char* labels[] = {"VDD_IN", "NC", "VDD_SOC"};
  for (int k = 1; k <= 3; ++k) {
    const std::string n = std::to_string(k);
    t.Write(h3 + "/in" + n + "_label", std::string(labels[k - 1]) + "\n");
    t.Write(h3 + "/in" + n + "_input", Line(5000));
    t.Write(h3 + "/curr" + n + "_input", Line(1000));
    t.Write(h3 + "/curr" + n + "_crit_alarm", Line(0));
    t.Write(h3 + "/curr" + n + "_max_alarm", Line(0));
  }
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEventCollector());
  h.Sample();
  EXPECT_EQ(h.Find(Kind::kEvent, "NC:crit", Field::kState), nullptr);
  const Channel* crit = h.Find(Kind::kEvent, "VDD_IN:crit", Field::kEvents);
  ASSERT_NE(crit, nullptr);
  EXPECT_TRUE(crit->Has(kFlagCounter));
  EXPECT_EQ(crit->device, "ina3221 1-0040");
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kState), 0);
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kEvents), 0);
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_SOC:warn", Field::kEvents), 0);

  // An alert that stays up is one event; it counts again once it clears and returns.
  t.Write(h3 + "/curr1_crit_alarm", Line(1));
  h.Sample();
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kState), 1);
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kEvents), 1);
  t.Write(h3 + "/curr1_crit_alarm", Line(0));
  h.Sample();
  t.Write(h3 + "/curr1_crit_alarm", Line(1));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kEvents), 2);
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:warn", Field::kEvents), 0);

  // An unreadable flag leaves both absent; the count survives a rediscovery.
  t.Write(h3 + "/curr1_crit_alarm", "2\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kState), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kEvents), std::nullopt);
  t.Write(h3 + "/curr1_crit_alarm", Line(1));
  h.collection().Discover();
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "VDD_IN:crit", Field::kEvents), 2);
}

TEST(Events, Ina238AlarmsAreNamedByTheChipLabel) {
  TempTree t;
  std::string d =
      AddHwmonChip(t, "hwmon5", "/sys/devices/platform/bus@0/c250000.i2c/i2c-2/2-0044", "ina238");
  t.Write(d + "/label", "VIN\n");
  t.Write(d + "/power1_input", Line(19780000));
  t.Write(d + "/power1_max_alarm", Line(0));
  t.Write(d + "/in1_min_alarm", Line(1));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEventCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "VIN:power1_max", Field::kState), 0);
  EXPECT_EQ(h.Get(Kind::kEvent, "VIN:in1_min", Field::kState), 1);
  EXPECT_EQ(h.Get(Kind::kEvent, "VIN:in1_min", Field::kEvents), 1);
  EXPECT_EQ(h.Find(Kind::kEvent, "VIN:power1_max", Field::kEvents)->device, "ina238");
}

TEST(Events, ThrottlingCoolingDevicesGiveStateAndTime) {
  TempTree t;
  AddCoolingDevice(t, 0, "pwm-fan", 3, 10);  // a fan, not a throttle
  std::string cpu = AddCoolingDevice(t, 1, "cpufreq-cpu0", 0, 4);
  t.Write(cpu + "/stats/time_in_state_ms", "0 120000\n1 1500\n2 1600\n3 0\n4 0\n");
  RootedSysFs fs(t.root());
  Harness h(fs, MakeEventCollector());
  h.Sample();
  EXPECT_EQ(h.Find(Kind::kEvent, "pwm-fan", Field::kState), nullptr);
  const Channel* time = h.Find(Kind::kEvent, "cpufreq-cpu0", Field::kTime);
  ASSERT_NE(time, nullptr);
  EXPECT_EQ(time->unit, Unit::kMillisecond);
  EXPECT_TRUE(time->Has(kFlagCounter));
  EXPECT_EQ(h.Get(Kind::kEvent, "cpufreq-cpu0", Field::kTime), 3100);
  EXPECT_EQ(h.Get(Kind::kEvent, "cpufreq-cpu0", Field::kState), 0);
  t.Write(cpu + "/cur_state", Line(2));
  t.Write(cpu + "/stats/time_in_state_ms", "0 120000\n1 1500\n2 2600\n3 0\n4 0\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "cpufreq-cpu0", Field::kState), 1);
  EXPECT_EQ(h.Get(Kind::kEvent, "cpufreq-cpu0", Field::kTime), 4100);
  t.Write(cpu + "/stats/time_in_state_ms", "0 120000\n1 oops\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "cpufreq-cpu0", Field::kTime), std::nullopt);
}

TEST(Events, TimeInStateParser) {
  EXPECT_EQ(parse::TimeInStateAboveZero("0 10\n1 20\n2 30\n"), 50);
  EXPECT_EQ(parse::TimeInStateAboveZero("0 10\n"), 0);
  EXPECT_EQ(parse::TimeInStateAboveZero(""), 0);
  EXPECT_EQ(parse::TimeInStateAboveZero("0 10\n1\n"), std::nullopt);
  EXPECT_EQ(parse::TimeInStateAboveZero("1 -5\n"), std::nullopt);
  EXPECT_EQ(parse::TimeInStateAboveZero("1 9223372036854775807\n2 1\n"), std::nullopt);
}

TEST(Events, FanWithDutyAndNoSpeedIsStuckAfterTenSeconds) {
  TempTree t;
  std::string tach =
      AddHwmonChip(t, "hwmon0", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
  t.Write(tach + "/rpm", Line(1478));
  std::string pwm = AddHwmonChip(t, "hwmon1", "/sys/devices/platform/pwm-fan", "pwmfan");
  t.Write(pwm + "/pwm1", Line(77));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  const Channel* stuck = h.Find(Kind::kEvent, "pwmfan:stuck", Field::kState);
  ASSERT_NE(stuck, nullptr);
  EXPECT_EQ(stuck->unit, Unit::kBool);
  EXPECT_EQ(h.Get(Kind::kEvent, "pwmfan:stuck", Field::kState), 0);

  t.Write(tach + "/rpm", Line(0));
  for (int s = 0; s < 10; ++s) {  // one second per tick: 0 .. 9 s of duty with 0 rpm
    h.Sample();
    EXPECT_EQ(h.Get(Kind::kEvent, "pwmfan:stuck", Field::kState), 0) << s;
  }
  h.Sample();  // 10 s
  EXPECT_EQ(h.Get(Kind::kEvent, "pwmfan:stuck", Field::kState), 1);
  // Duty 0 (the fan off on purpose) is not stuck; an unreadable tach is unknown.
  t.Write(pwm + "/pwm1", Line(0));
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "pwmfan:stuck", Field::kState), 0);
  t.Write(tach + "/rpm", "garbage\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kEvent, "pwmfan:stuck", Field::kState), std::nullopt);
}

TEST(Events, LoneTachHasNoStuckCondition) {
  TempTree t;
  std::string tach =
      AddHwmonChip(t, "hwmon0", "/sys/devices/platform/39c0000.tachometer", "pwm_tach");
  t.Write(tach + "/rpm", Line(0));
  RootedSysFs fs(t.root());
  Harness h(fs, MakeFanCollector());
  h.Sample();
  EXPECT_EQ(h.Find(Kind::kEvent, "pwmfan:stuck", Field::kState), nullptr);
}

}  // namespace
}  // namespace edgemon
