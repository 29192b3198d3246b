// GPU memory per process: nvmap's debugfs table on the AGX Orin fixture, an
// nvmap board whose debugfs cannot be read (said so, never zeros), and a
// board without per-process accounting (nothing, no complaint).
#include "daemon/collect/gpu_processes.h"

#include <gtest/gtest.h>

#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::TempTree;

TEST(GpuProcesses, NvmapTableOfTheAgxOrinFixture) {
  RootedSysFs fs(testing::Fixture("agx-orin"));
  GpuProcessReader reader(fs, /*nvml=*/false);
  auto g = reader.Read();
  ASSERT_TRUE(g->available) << g->unavailable;
  EXPECT_EQ(g->source, "nvmap");
  EXPECT_EQ(g->unavailable, "");
  ASSERT_EQ(g->kib.size(), 3u);
  EXPECT_EQ(g->kib.at(4242), 196608u + 4096u);  // two nvmap clients of one process
  EXPECT_EQ(g->kib.at(1878), 29736u);
  EXPECT_EQ(g->name.at(1211), "nvargus-daemon");
  EXPECT_EQ(g->kib.count(0), 0u);  // the kernel's client
}

TEST(GpuProcesses, UnreadableDebugfsOnAnNvmapBoardIsSaid) {
  TempTree t;
  t.CopyFrom(testing::Fixture("agx-orin"));
  t.Remove("/sys/kernel/debug/nvmap");  // as for a user without access to debugfs
  RootedSysFs fs(t.root());
  auto g = GpuProcessReader(fs, false).Read();
  EXPECT_FALSE(g->available);
  EXPECT_TRUE(g->kib.empty());
  EXPECT_NE(g->unavailable.find("/sys/kernel/debug/nvmap/iovmm/maps"), std::string::npos)
      << g->unavailable;
  EXPECT_NE(g->unavailable.find("root"), std::string::npos) << g->unavailable;

  // A table that is not nvmap's: said so too.
  t.Write("/sys/kernel/debug/nvmap/iovmm/maps", "garbage\n");
  auto bad = GpuProcessReader(fs, false).Read();
  EXPECT_FALSE(bad->available);
  EXPECT_NE(bad->unavailable.find("format"), std::string::npos) << bad->unavailable;
}

TEST(GpuProcesses, BoardsWithoutPerProcessAccountingSayNothing) {
  RootedSysFs fs(testing::Fixture("x86-laptop"));
  auto g = GpuProcessReader(fs, false).Read();
  EXPECT_FALSE(g->available);
  EXPECT_EQ(g->unavailable, "");
}

}  // namespace
}  // namespace edgemon
