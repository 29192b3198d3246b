// CPU, memory, thermal and board collectors on small scratch trees, and the
// Collection's error accounting and rediscovery.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::TempTree;

constexpr int64_t kSec = 1'000'000'000;

std::vector<std::unique_ptr<Collector>> One(std::unique_ptr<Collector> c) {
  std::vector<std::unique_ptr<Collector>> v;
  v.push_back(std::move(c));
  return v;
}

Value Get(const Collection& c, const Frame& f, Kind kind, std::string_view name, Field field) {
  const Channel* ch = c.inventory().Find(kind, name, field);
  if (ch == nullptr) {
    ADD_FAILURE() << "no channel " << ToString(kind) << "/" << name << "/" << ToString(field);
    return std::nullopt;
  }
  return f.Get(ch->id);
}

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
  c.Sample(1 * kSec, f);
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
  c.Sample(2 * kSec, f);
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
  c.Sample(kSec, f);
  std::string stat2 = "cpu  2 0 2 20 0 0 0 0 0 0\n";
  for (int i = 0; i < 3; ++i) stat2 += "cpu" + std::to_string(i) + " 5 0 1 14 0 0 0 0 0 0\n";
  t.Write("/proc/stat", stat2 + stat.substr(stat.find("intr")));
  c.Sample(2 * kSec, f);
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
  c.Sample(kSec, f);
  EXPECT_EQ(c.inventory().Find(Kind::kCpu, "cpu1", Field::kFreq), nullptr);
  // cpu1 comes online and its cpufreq directory appears.
  t.Write("/sys/devices/system/cpu/online", "0-2\n");
  t.Write("/sys/devices/system/cpu/cpu1/online", "1\n");
  t.Write("/sys/devices/system/cpu/cpufreq/policy1/scaling_cur_freq", "729600\n");
  t.Link("/sys/devices/system/cpu/cpu1/cpufreq", "../cpufreq/policy1");
  c.Sample(2 * kSec, f);  // notices, asks for rediscovery
  c.Sample(4 * kSec, f);  // rediscovers, then samples
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kOnline), 1);
  EXPECT_EQ(Get(c, f, Kind::kCpu, "cpu1", Field::kFreq), 729600);
}

TEST(MemoryCollector, TegrastatsUsedLfbSwapAndZram) {
  TempTree t;
  t.Write(
      "/proc/meminfo",
      "MemTotal:        7802868 kB\nMemFree:          409512 kB\nMemAvailable:    "
      "1090312 kB\nBuffers:           21040 kB\nCached:           885980 kB\nSwapCached:      "
      "   45952 kB\nSwapTotal:      16384000 kB\nSwapFree:       13680000 kB\nHugePages_Total:  "
      "     0\nNvMapMemUsed:     512000 kB\n");
  t.Write("/proc/buddyinfo",
          "Node 0, zone      DMA     80     60     40     20     10      5      3      1      4    "
          "  0      0\n"
          "Node 0, zone   Normal    900    400    100     50     12      6      2      4      1    "
          "  0      0\n");
  t.Write("/proc/swaps",
          "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
          "/dev/zram0                              partition\t1950716\t\t100\t\t5\n"
          "/dev/zram1                              partition\t1950716\t\t300\t\t5\n"
          "/swapfile                               file\t\t12482568\t\t2703600\t\t-2\n");
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeMemoryCollector()), {}, nullptr);
  c.Discover();
  Frame f;
  c.Sample(kSec, f);
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kTotal), 7802868);
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kUsed), 7802868 - 409512 - 21040 - 885980);
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kShared), 512000);
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kLfbBlocks), 5);   // order 8 in both zones
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kLfbSize), 1024);  // 4 KiB << 8
  EXPECT_EQ(Get(c, f, Kind::kSwap, "swap", Field::kUsed), 16384000 - 13680000);
  EXPECT_EQ(Get(c, f, Kind::kSwap, "swap", Field::kCached), 45952);
  EXPECT_EQ(Get(c, f, Kind::kSwap, "zram", Field::kDevices), 2);
  EXPECT_EQ(Get(c, f, Kind::kSwap, "zram", Field::kTotal), 2 * 1950716);
  EXPECT_EQ(Get(c, f, Kind::kSwap, "zram", Field::kUsed), 400);
}

TEST(MemoryCollector, NoNvmapOnAPcAndGarbageIsAbsent) {
  TempTree t;
  t.Write("/proc/meminfo", "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 20 kB\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  Collection c(fs, One(MakeMemoryCollector()), {}, nullptr);
  c.Discover();
  EXPECT_EQ(c.inventory().Find(Kind::kMemory, "ram", Field::kShared), nullptr);
  Frame f;
  c.Sample(kSec, f);
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kUsed), 870);
  fs.Replace("/proc/meminfo", "MemTotal: lots\nMemFree: 100 kB\n");
  c.Sample(2 * kSec, f);
  EXPECT_FALSE(Get(c, f, Kind::kMemory, "ram", Field::kTotal));
  EXPECT_FALSE(Get(c, f, Kind::kMemory, "ram", Field::kUsed));
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kFree), 100);
  EXPECT_GT(c.total_errors(), 0u);
}

void WriteZone(TempTree& t, int n, std::string_view type, std::string_view temp) {
  std::string dir = "/sys/devices/virtual/thermal/thermal_zone" + std::to_string(n);
  t.Write(dir + "/type", std::string(type) + "\n");
  t.Write(dir + "/temp", temp);
  t.Link("/sys/class/thermal/thermal_zone" + std::to_string(n),
         "../../devices/virtual/thermal/thermal_zone" + std::to_string(n));
}

TEST(ThermalCollector, GatedZonesAreMissingPmicIsConstantTripsAreLimits) {
  TempTree t;
  WriteZone(t, 0, "cpu-thermal", "44562\n");
  WriteZone(t, 1, "gpu-thermal", "-256000\n");
  WriteZone(t, 2, "PMIC-Die", "100000\n");
  WriteZone(t, 10, "tj-thermal", "45250\n");
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
  c.Sample(kSec, f);
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
  c.Sample(2 * kSec, f);
  EXPECT_FALSE(Get(c, f, Kind::kThermal, "cpu-thermal", Field::kTemp));
  EXPECT_FALSE(Get(c, f, Kind::kThermal, "tj-thermal", Field::kTemp));
  EXPECT_EQ(Get(c, f, Kind::kThermal, "PMIC-Die", Field::kTemp), 100000);
}

TEST(BoardCollector, IdentityWithoutSubprocesses) {
  TempTree t;
  using namespace std::string_literals;
  t.Write("/sys/firmware/devicetree/base/model", "NVIDIA Jetson Orin Nano Developer Kit\0"s);
  t.Write("/sys/firmware/devicetree/base/compatible",
          "nvidia,p3768-0000+p3767-0005\0nvidia,p3767-0005\0nvidia,tegra234\0"s);
  t.Link("/proc/device-tree", "../sys/firmware/devicetree/base");
  t.Write("/etc/nv_tegra_release",
          "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic\n");
  t.Write("/etc/nvpmodel.conf",
          "< POWER_MODEL ID=0 NAME=15W >\n< POWER_MODEL ID=2 NAME=MAXN_SUPER >\n");
  t.Write("/var/lib/nvpmodel/status", "pmode:0002\n");
  t.Write("/proc/sys/kernel/hostname", "orin\n");
  t.Write("/proc/sys/kernel/osrelease", "5.15.148-tegra\n");
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeBoardCollector()), {}, nullptr);
  c.Discover();
  const BoardInfo& b = c.inventory().board;
  EXPECT_EQ(b.model, "NVIDIA Jetson Orin Nano Developer Kit");
  EXPECT_EQ(b.soc, "tegra234");
  EXPECT_EQ(b.l4t, "36.4.3");
  EXPECT_EQ(b.jetpack, "6");
  EXPECT_EQ(b.nvpmodel_id, 2);
  EXPECT_EQ(b.nvpmodel, "MAXN_SUPER");
  EXPECT_EQ(b.hostname, "orin");
  Frame f;
  c.Sample(kSec, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 2);
  t.Write("/var/lib/nvpmodel/status", "pmode:0000\n");
  c.Sample(2 * kSec, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 0);
}

TEST(BoardCollector, StatusReplacedByRenameIsFollowed) {
  // Tools rewrite /var/lib/nvpmodel/status by writing a new file and
  // renaming it over the old one: the mode must follow, not stay at the
  // inode opened at discovery.
  TempTree t;
  t.Write("/etc/nvpmodel.conf", "< POWER_MODEL ID=0 NAME=15W >\n< POWER_MODEL ID=2 NAME=MAXN >\n");
  t.Write("/var/lib/nvpmodel/status", "pmode:0002\n");
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeBoardCollector()), {}, nullptr);
  c.Discover();
  Frame f;
  c.Sample(kSec, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 2);
  t.Write("/var/lib/nvpmodel/status.new", "pmode:0000\n");
  t.Rename("/var/lib/nvpmodel/status.new", "/var/lib/nvpmodel/status");
  c.Sample(2 * kSec, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 0);
}

// Every ReadText names its size cap: a default argument on the pure virtual
// would bind to the static type (SysFs) and not to the override.
template <typename T>
concept ReadsTextWithoutACap = requires(T& fs, const std::string& path) {
  fs.ReadText(path);
};

TEST(SysFs, ReadTextHasNoDefaultCap) {
  EXPECT_FALSE(ReadsTextWithoutACap<SysFs>);
  EXPECT_FALSE(ReadsTextWithoutACap<RootedSysFs>);
  EXPECT_FALSE(ReadsTextWithoutACap<FaultySysFs>);
}

TEST(RootedSysFs, OnlyRegularFilesInsideTheRootAreRead) {
  TempTree t;
  t.Write("/sys/class/thermal/thermal_zone0/temp", "41000\n");
  t.Link("/sys/class/thermal/thermal_zone1/type", "/etc/passwd");  // out of the root
  t.Link("/sys/class/thermal/thermal_zone2", "thermal_zone0");     // inside: fine
  t.MakeDir("/sys/class/thermal/thermal_zone3");
  ASSERT_EQ(::mkfifo(t.Real("/sys/class/thermal/thermal_zone3/temp").c_str(), 0600), 0);
  RootedSysFs fs(t.root());
  EXPECT_EQ(fs.ReadText("/sys/class/thermal/thermal_zone1/type", 4096), std::nullopt);
  EXPECT_EQ(fs.Open("/sys/class/thermal/thermal_zone1/type"), -EXDEV);
  EXPECT_EQ(fs.ReadText("/sys/class/thermal/thermal_zone2/temp", 4096), "41000\n");
  // A FIFO blocked the sampler forever (open waits for a writer).
  EXPECT_EQ(fs.Open("/sys/class/thermal/thermal_zone3/temp"), -EINVAL);
  EXPECT_EQ(fs.ReadText("/sys/class/thermal/thermal_zone3/temp", 4096), std::nullopt);
  EXPECT_EQ(fs.Open("/sys/class/thermal"), -EINVAL);  // a directory is no value file
  FileId id = fs.Open("/sys/class/thermal/thermal_zone0/temp");
  ASSERT_GE(id, 0);
  char buf[16];
  EXPECT_EQ(fs.Read(id, buf, sizeof buf), 6);
}

TEST(Collection, ErrorsAreCountedAndLoggedOnceAMinute) {
  TempTree t;
  WriteZone(t, 0, "cpu-thermal", "40000\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  std::vector<std::string> logs;
  Collection c(fs, One(MakeThermalCollector()), {},
               [&](const std::string& m) { logs.push_back(m); });
  c.Discover();
  fs.FailWith("/sys/class/thermal/thermal_zone0/temp", EIO);
  Frame f;
  for (int i = 1; i <= 30; ++i) c.Sample(i * kSec, f);
  EXPECT_EQ(c.error_counts()[0], 30u);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("thermal/cpu-thermal/temp"), std::string::npos);
  EXPECT_NE(logs[0].find("I/O error"), std::string::npos);
  for (int i = 31; i <= 62; ++i) c.Sample(i * kSec, f);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_NE(logs[1].find("60 failed reads"), std::string::npos);
}

TEST(Collection, RenumberedDeviceKeepsChannelIds) {
  TempTree t;
  WriteZone(t, 0, "cpu-thermal", "40000\n");
  WriteZone(t, 1, "gpu-thermal", "41000\n");
  RootedSysFs fs(t.root());
  Collection c(fs, One(MakeThermalCollector()), {}, nullptr);
  c.Discover();
  ChannelId gpu = c.inventory().Find(Kind::kThermal, "gpu-thermal", Field::kTemp)->id;
  // The zones are renumbered (as hwmonN indexes are across boots) and a new one appears.
  t.Remove("/sys/class/thermal/thermal_zone0");
  t.Remove("/sys/class/thermal/thermal_zone1");
  t.Remove("/sys/devices/virtual/thermal");
  WriteZone(t, 0, "gpu-thermal", "42000\n");
  WriteZone(t, 1, "soc0-thermal", "43000\n");
  WriteZone(t, 2, "cpu-thermal", "44000\n");
  EXPECT_TRUE(c.CheckTopology());
  EXPECT_FALSE(c.CheckTopology());
  Frame f;
  c.Sample(kSec, f);
  EXPECT_EQ(c.inventory().Find(Kind::kThermal, "gpu-thermal", Field::kTemp)->id, gpu);
  EXPECT_EQ(f.Get(gpu), 42000);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "cpu-thermal", Field::kTemp), 44000);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "soc0-thermal", Field::kTemp), 43000);
}

TEST(Collection, VanishedFileTriggersRediscovery) {
  TempTree t;
  WriteZone(t, 0, "cpu-thermal", "40000\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  Collection c(fs, One(MakeThermalCollector()), {}, nullptr);
  c.Discover();
  uint64_t gen = c.generation();
  fs.FailWith("/sys/class/thermal/thermal_zone0/temp", ENODEV);
  Frame f;
  c.Sample(10 * kSec, f);
  EXPECT_FALSE(f.Get(0));
  fs.ClearAll();
  c.Sample(12 * kSec, f);
  EXPECT_GT(c.generation(), gen);
  EXPECT_EQ(f.Get(0), 40000);
}

TEST(Collection, AFileGoneForGoodDoesNotCostAWalkEverySecond) {
  TempTree t;
  WriteZone(t, 0, "cpu-thermal", "40000\n");
  WriteZone(t, 1, "nvme-thermal", "35000\n");
  RootedSysFs inner(t.root());
  FaultySysFs fs(inner);
  Collection c(fs, One(MakeThermalCollector()), {}, nullptr);
  c.Discover();
  fs.FailWith("/sys/class/thermal/thermal_zone1/temp", ENXIO);  // asleep for good
  Frame f;
  uint64_t start = c.generation();
  for (int i = 1; i <= 300; ++i) c.Sample(i * kSec, f);
  // Backing off 1, 2, 4 ... 60 s: about ten rediscoveries in five minutes, not 300.
  EXPECT_LE(c.generation() - start, 10u);
  EXPECT_GE(c.generation() - start, 5u);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "cpu-thermal", Field::kTemp), 40000);
  // Once the sensor answers again, it is read at the next tick.
  fs.ClearAll();
  c.Sample(301 * kSec, f);
  EXPECT_EQ(Get(c, f, Kind::kThermal, "nvme-thermal", Field::kTemp), 35000);
}

}  // namespace
}  // namespace edgemon
