// The CPU collector: load from /proc/stat deltas, offline cores, cpufreq
// policies, capped reads of huge /proc/stat files, a core coming online.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::Get;
using testing::kSecond;
using testing::One;
using testing::TempTree;

void WriteCpuTree(TempTree& t, std::string_view stat) {
  t.Write("/proc/stat", stat);
  t.Write("/sys/devices/system/cpu/present", "0-2\n");
  t.Write("/sys/devices/system/cpu/online", "0,2\n");
  for (int i = 0; i < 3; ++i) {
    std::string p = "/sys/devices/system/cpu/cpufreq/policy" + std::to_string(i);
    if (i != 1) {
      t.Write(p + "/scaling_cur_freq", std::to_string(1000000 + i * 100000) + "\n");
      t.Write(p + "/scaling_min_freq", "115200\n");
      t.Write(p + "/scaling_max_freq", "1984000\n");
      t.Write(p + "/cpuinfo_min_freq", "115200\n");
      t.Write(p + "/cpuinfo_max_freq", "2201600\n");
      t.Write(p + "/scaling_governor", "schedutil\n");
      t.Link("/sys/devices/system/cpu/cpu" + std::to_string(i) + "/cpufreq",
             "../cpufreq/policy" + std::to_string(i));
    }
    if (i > 0)
      t.Write("/sys/devices/system/cpu/cpu" + std::to_string(i) + "/online",
              i == 1 ? "0\n" : "1\n");
  }
}

TEST(CpuCollector, LoadFromDeltasOfflineCoresAndFrequencies) {
  TempTree t;
  WriteCpuTree(t,
               "cpu  200 0 100 700 0 0 0 0 0 0\n"
               "cpu0 100 0 50 350 0 0 0 0 0 0\n"
               "cpu2 100 0 50 350 0 0 0 0 0 0\n"
               "intr 12345 1 2 3\n");
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeCpuCollector()), {}, nullptr);
  c.Discover();
  Frame f;
  c.Sample(1 * kSecond, f);
  // One sample: no interval yet, so no load; but frequencies and online map.
  EXPECT_FALSE(Get(c, f, Kind::kCpu, "cpu0", Field::kLoad));
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu0", Field::kFreq), 1000000);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu2", Field::kFreq), 1200000);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu0", Field::kOnline), 1);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kOnline), 0);
  const Channel* freq = c.inventory().Find(Kind::kCpu, "cpu0", Field::kFreq);
  ASSERT_NE(freq, nullptr);
  EXPECT_EQ(freq->min, 115200);
  EXPECT_EQ(freq->max, 2201600);
  ASSERT_NE(freq->Attr("governor"), nullptr);
  EXPECT_EQ(*freq->Attr("governor"), "schedutil");

  // cpu0: +30 busy of +100; cpu2: +75 busy (user+irq+steal) of +100.
  t.Write("/proc/stat",
          "cpu  305 0 100 795 0 0 0 0 0 0\n"
          "cpu0 120 0 60 420 0 0 0 0 0 0\n"
          "cpu2 150 0 50 375 0 20 0 5 0 0\n"
          "intr 12345 1 2 3\n");
  c.Sample(2 * kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu0", Field::kLoad), 300);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu2", Field::kLoad), 750);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu", Field::kLoad), 525);  // 105 of 200
  // Offline is not 0 %: the offline core's load and frequency are absent.
  EXPECT_FALSE(Get(c, f, Kind::kCpu, "cpu1", Field::kLoad));
  // It had no cpufreq directory at discovery, so it has no frequency channel.
  EXPECT_EQ(c.inventory().Find(Kind::kCpu, "cpu1", Field::kFreq), nullptr);
  EXPECT_EQ(c.total_errors(), 0u);
}

TEST(CpuCollector, HugeIntrLineAndManyCoresNeedNoBigReads) {
  TempTree t;
  std::string stat = "cpu  1 0 1 10 0 0 0 0 0 0\n";
  for (int i = 0; i < 3; ++i) stat += "cpu" + std::to_string(i) + " 1 0 1 10 0 0 0 0 0 0\n";
  stat += "intr";
  for (int i = 0; i < 30000; ++i) stat += " 12345";  // ~180 KB, like the procfs fixture
  stat += "\nctxt 1\n";
  WriteCpuTree(t, stat);
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeCpuCollector()), {}, nullptr);
  c.Discover();
  Frame f;
  c.Sample(kSecond, f);
  std::string stat2 = "cpu  2 0 2 20 0 0 0 0 0 0\n";
  for (int i = 0; i < 3; ++i) stat2 += "cpu" + std::to_string(i) + " 5 0 1 14 0 0 0 0 0 0\n";
  t.Write("/proc/stat", stat2 + stat.substr(stat.find("intr")));
  c.Sample(2 * kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu2", Field::kLoad), 500);  // 4 of 8
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu", Field::kLoad), 167);   // 2 of 12
}

TEST(CpuCollector, AProcStatListingThousandsOfCoresIsCapped) {
  // 20,000 cpuN lines grew the inventory to 40,082 channels and 140 MB.
  TempTree t;
  std::string stat = "cpu  1 0 1 10 0 0 0 0 0 0\n";
  for (int i = 0; i < 20000; ++i) stat += "cpu" + std::to_string(i) + " 1 0 1 10 0 0 0 0 0 0\n";
  t.Write("/proc/stat", stat);
  RootedSysFs fs(t.root());
  std::vector<std::string> warnings;
  Collection c(fs, One(MakeCpuCollector()), {},
               [&](const std::string& m) { warnings.push_back(m); });
  c.Discover();
  EXPECT_LE(c.inventory().channels.size(), 4u * 1024 + 1);
  EXPECT_NE(c.inventory().Find(Kind::kCpu, "cpu1023", Field::kLoad), nullptr);
  EXPECT_EQ(c.inventory().Find(Kind::kCpu, "cpu1024", Field::kLoad), nullptr);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("20000 cores listed; keeping the first 1024"), std::string::npos);
}

TEST(CpuCollector, CoreComingOnlineIsRediscovered) {
  TempTree t;
  WriteCpuTree(t,
               "cpu  1 0 1 10 0 0 0 0 0 0\ncpu0 1 0 1 10 0 0 0 0 0 0\ncpu2 1 0 1 10 0 0 0 0 0 0\n");
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeCpuCollector()), {}, nullptr);
  c.Discover();
  Frame f;
  c.Sample(kSecond, f);
  EXPECT_EQ(c.inventory().Find(Kind::kCpu, "cpu1", Field::kFreq), nullptr);
  // cpu1 comes online and its cpufreq directory appears.
  t.Write("/sys/devices/system/cpu/online", "0-2\n");
  t.Write("/sys/devices/system/cpu/cpu1/online", "1\n");
  t.Write("/sys/devices/system/cpu/cpufreq/policy1/scaling_cur_freq", "729600\n");
  t.Link("/sys/devices/system/cpu/cpu1/cpufreq", "../cpufreq/policy1");
  c.Sample(2 * kSecond, f);  // notices, asks for rediscovery
  c.Sample(4 * kSecond, f);  // rediscovers, then samples
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kOnline), 1);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kFreq), 729600);
}

// Four cores in two cpufreq policies (cpuN/cpufreq links to policy0 and
// policy2): each policy's files are read once a tick, by its first online
// core, and its other cores show the same values or the same failure.
TEST(CpuCollector, CoresOfOnePolicyShareOneReadATick) {
  TempTree t;
  std::string stat = "cpu  4 0 4 40 0 0 0 0 0 0\n";
  for (int i = 0; i < 4; ++i) stat += "cpu" + std::to_string(i) + " 1 0 1 10 0 0 0 0 0 0\n";
  t.Write("/proc/stat", stat);
  t.Write("/sys/devices/system/cpu/present", "0-3\n");
  t.Write("/sys/devices/system/cpu/online", "0-3\n");
  for (int p : {0, 2}) {
    const std::string dir = "/sys/devices/system/cpu/cpufreq/policy" + std::to_string(p);
    t.Write(dir + "/scaling_cur_freq", std::to_string(1000000 + p * 100000) + "\n");
    t.Write(dir + "/scaling_min_freq", "115200\n");
    t.Write(dir + "/scaling_max_freq", "1984000\n");
  }
  for (int i = 0; i < 4; ++i) {
    t.Link("/sys/devices/system/cpu/cpu" + std::to_string(i) + "/cpufreq",
           "../cpufreq/policy" + std::to_string(i < 2 ? 0 : 2));
  }
  RootedSysFs rooted(t.root());
  testing::FaultySysFs fs(rooted);
  Collection c(fs, One(MakeCpuCollector()), {}, nullptr);
  c.Discover();
  Frame f;
  const uint64_t before = fs.reads();
  c.Sample(kSecond, f);
  // /proc/stat, the online list, and three files of each of two policies.
  EXPECT_EQ(fs.reads() - before, 2u + 2 * 3);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kFreq), 1000000);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu3", Field::kFreq), 1200000);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu3", Field::kFreqMax), 1984000);
  t.Write("/sys/devices/system/cpu/cpufreq/policy2/scaling_cur_freq", "729600\n");
  c.Sample(2 * kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu2", Field::kFreq), 729600);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu3", Field::kFreq), 729600);
  EXPECT_EQ(c.total_errors(), 0u);

  // The policy's reading core fails: its partner shows the failure too.
  fs.FailWith("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", EIO);
  c.Sample(3 * kSecond, f);
  EXPECT_FALSE(Get(c, f, Kind::kCpu, "cpu0", Field::kFreq));
  EXPECT_FALSE(Get(c, f, Kind::kCpu, "cpu1", Field::kFreq));
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kFreqMin), 115200);
  EXPECT_EQ(c.total_errors(), 2u);
  fs.ClearAll();

  // cpu0 offline: cpu1 reads the policy itself.
  t.Write("/sys/devices/system/cpu/online", "1-3\n");
  t.Write("/sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "806400\n");
  c.Sample(4 * kSecond, f);
  EXPECT_FALSE(Get(c, f, Kind::kCpu, "cpu0", Field::kFreq));
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kFreq), 806400);
}

}  // namespace
}  // namespace edgemon
