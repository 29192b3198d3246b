// GPU memory per process: nvmap's debugfs table on the AGX Orin fixture, an
// nvmap board whose debugfs cannot be read (said so, with the reason the
// open gave, never zeros), and a board without per-process accounting
// (nothing, no complaint).
#include "daemon/collect/gpu_processes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
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

const char kMaps[] = "/sys/kernel/debug/nvmap/iovmm/maps";

TEST(GpuProcesses, AMissingTableSaysWhetherDebugfsIsMountedAndBlamesNoPermission) {
  TempTree t;
  t.CopyFrom(testing::Fixture("agx-orin"));
  t.Remove("/sys/kernel/debug/nvmap");  // debugfs there (bpmp, clk), without nvmap
  RootedSysFs fs(t.root());
  auto g = GpuProcessReader(fs, false).Read();
  EXPECT_FALSE(g->available);
  EXPECT_TRUE(g->kib.empty());
  EXPECT_THAT(g->unavailable, HasSubstr(std::string(kMaps) + " under " + fs.root() +
                                        " is not present: debugfs has no nvmap table"));
  EXPECT_THAT(g->unavailable, Not(HasSubstr("needs root")));
  EXPECT_THAT(g->unavailable, Not(HasSubstr("permission")));

  // No debugfs at all under the root (a simulated board, or debugfs unmounted).
  t.Remove("/sys/kernel/debug");
  auto none = GpuProcessReader(fs, false).Read();
  EXPECT_THAT(none->unavailable, HasSubstr(std::string(kMaps) + " under " + fs.root() +
                                           " is not present: no debugfs is mounted there"));
  EXPECT_THAT(none->unavailable, Not(HasSubstr("needs root")));
  EXPECT_THAT(none->unavailable, Not(HasSubstr("permission")));

  // A table that is not nvmap's: said so too.
  t.Write(kMaps, "garbage\n");
  auto bad = GpuProcessReader(fs, false).Read();
  EXPECT_FALSE(bad->available);
  EXPECT_THAT(bad->unavailable, HasSubstr("format"));
}

TEST(GpuProcesses, ARefusedTableSaysPermissionDeniedWithWhoEdgemondRunsAs) {
  RootedSysFs inner(testing::Fixture("agx-orin"));
  testing::FaultySysFs fs(inner);
  fs.FailWith(kMaps, EACCES);
  auto g = GpuProcessReader(fs, false).Read();
  EXPECT_FALSE(g->available);
  EXPECT_TRUE(g->kib.empty());
  const std::string cannot = "cannot read " + std::string(kMaps) + ": ";
  if (::geteuid() == 0) {
    EXPECT_THAT(g->unavailable,
                HasSubstr(cannot + std::strerror(EACCES) + " although edgemond runs as root"));
  } else {
    EXPECT_THAT(g->unavailable, HasSubstr(cannot + "permission denied (edgemond runs as uid " +
                                          std::to_string(::geteuid())));
  }
  fs.FailWith(kMaps, EIO);
  auto io = GpuProcessReader(fs, false).Read();
  EXPECT_EQ(io->unavailable, cannot + std::strerror(EIO));
}

TEST(GpuProcesses, TheReasonFollowsTheErrnoAndWhoEdgemondRunsAs) {
  const std::string maps = kMaps;
  EXPECT_EQ(NvmapUnreadable(maps, "", ENOENT, false, 0),
            maps +
                " is not present: debugfs is not mounted (mount -t debugfs none "
                "/sys/kernel/debug)");
  EXPECT_EQ(NvmapUnreadable(maps, "/", ENOENT, true, 0),
            maps + " is not present: debugfs has no nvmap table");
  EXPECT_EQ(NvmapUnreadable(maps, "/tmp/sim/orin-nano", ENOENT, false, 0),
            maps + " under /tmp/sim/orin-nano is not present: no debugfs is mounted there");
  EXPECT_EQ(NvmapUnreadable(maps, "", EACCES, true, 1000),
            "cannot read " + maps +
                ": permission denied (edgemond runs as uid 1000; debugfs is "
                "root's)");
  const std::string as_root = NvmapUnreadable(maps, "", EPERM, true, 0);
  EXPECT_THAT(as_root, HasSubstr("although edgemond runs as root"));
  EXPECT_THAT(as_root, Not(HasSubstr("needs root")));
  EXPECT_EQ(NvmapUnreadable(maps, "", 0, true, 0), "cannot read " + maps);
}

TEST(GpuProcesses, BoardsWithoutPerProcessAccountingSayNothing) {
  RootedSysFs fs(testing::Fixture("x86-laptop"));
  auto g = GpuProcessReader(fs, false).Read();
  EXPECT_FALSE(g->available);
  EXPECT_EQ(g->unavailable, "");
}

}  // namespace
}  // namespace edgemon
