// The memory collector: RAM, swap and zram as tegrastats counts them (used,
// largest free block), a PC without nvmap, garbage read as absent.
#include <gtest/gtest.h>

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
  c.Sample(kSecond, f);
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
  c.Sample(kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kUsed), 870);
  fs.Replace("/proc/meminfo", "MemTotal: lots\nMemFree: 100 kB\n");
  c.Sample(2 * kSecond, f);
  EXPECT_FALSE(Get(c, f, Kind::kMemory, "ram", Field::kTotal));
  EXPECT_FALSE(Get(c, f, Kind::kMemory, "ram", Field::kUsed));
  EXPECT_EQ(Get(c, f, Kind::kMemory, "ram", Field::kFree), 100);
  EXPECT_GT(c.total_errors(), 0u);
}

}  // namespace
}  // namespace edgemon
