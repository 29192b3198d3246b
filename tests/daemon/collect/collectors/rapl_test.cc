// The RAPL collector (powercap): zone hierarchy, power from counter deltas
// with wrap-around, bad counters, on scratch trees and the node_exporter
// fixtures.
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
using testing::Fixture;
using testing::FixtureInt;
using testing::kSecond;
using testing::Names;
using testing::TempTree;

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
  CollectorRun run(fs, MakeRaplCollector());
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
  CollectorRun run(fs, MakeRaplCollector());

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
  CollectorRun run(fs, MakeRaplCollector());
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
    CollectorRun run(fs, MakeRaplCollector());
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
  CollectorRun run(fs, MakeRaplCollector());
  run.Sample();
  EXPECT_EQ(run.Rail("package-10", Field::kEnergy),
            FixtureInt(fs, SysPath("class/powercap/intel-rapl:a/energy_uj")) / 1000);
  EXPECT_EQ(run.channels().size(), 6u) << ::testing::PrintToString(Names(run.channels()));
}

}  // namespace
}  // namespace edgemon
