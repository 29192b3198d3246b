// The thermal collector: gated zones are missing, PMIC is constant, trip
// points are limits; EAGAIN and garbage are absent.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::Get;
using testing::kSecond;
using testing::One;
using testing::TempTree;
using testing::WriteThermalZone;

TEST(ThermalCollector, GatedZonesAreMissingPmicIsConstantTripsAreLimits) {
  TempTree t;
  WriteThermalZone(t, 0, "cpu-thermal", "44562\n");
  WriteThermalZone(t, 1, "gpu-thermal", "-256000\n");
  WriteThermalZone(t, 2, "PMIC-Die", "100000\n");
  WriteThermalZone(t, 10, "tj-thermal", "45250\n");
  t.Write("/sys/devices/virtual/thermal/thermal_zone0/trip_point_0_temp", "99000\n");
  t.Write("/sys/devices/virtual/thermal/thermal_zone0/trip_point_0_type", "passive\n");
  t.Write("/sys/devices/virtual/thermal/thermal_zone0/trip_point_1_temp", "104500\n");
  t.Write("/sys/devices/virtual/thermal/thermal_zone0/trip_point_1_type", "critical\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  Collection c(fs, One(MakeThermalCollector()), {}, nullptr);
  c.Discover();
  ASSERT_EQ(c.inventory().channels.size(), 4u);
  EXPECT_EQ(c.inventory().channels[3].name, "tj-thermal");  // zone 10 after zone 2
  Frame f;
  c.Sample(kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "cpu-thermal", Field::kTemp), 44562);
  EXPECT_FALSE(Get(c, f, Kind::kThermal, "gpu-thermal", Field::kTemp));
  // Gated is a state, not a read error: nothing counted, nothing logged.
  EXPECT_EQ(c.total_errors(), 0u);
  const Channel* cpu = c.inventory().Find(Kind::kThermal, "cpu-thermal", Field::kTemp);
  EXPECT_EQ(cpu->max, 99000);
  EXPECT_EQ(cpu->crit, 104500);
  ASSERT_EQ(cpu->trips.size(), 2u);
  EXPECT_TRUE(c.inventory().Find(Kind::kThermal, "PMIC-Die", Field::kTemp)->Has(kFlagConstant));

  // EAGAIN (Thor's gated GPU) and garbage are absent too; others unaffected.
  fs.FailWith("/sys/class/thermal/thermal_zone0/temp", EAGAIN);
  fs.Replace("/sys/class/thermal/thermal_zone10/temp", "-9999999999\n");
  c.Sample(2 * kSecond, f);
  EXPECT_FALSE(Get(c, f, Kind::kThermal, "cpu-thermal", Field::kTemp));
  EXPECT_FALSE(Get(c, f, Kind::kThermal, "tj-thermal", Field::kTemp));
  EXPECT_EQ(Get(c, f, Kind::kThermal, "PMIC-Die", Field::kTemp), 100000);
}

}  // namespace
}  // namespace edgemon
