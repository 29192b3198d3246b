// The board collector: model, SoC, L4T/JetPack, nvpmodel and hostname read
// from files (no subprocesses); the nvpmodel status followed across renames.
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

using testing::Get;
using testing::kSecond;
using testing::One;
using testing::TempTree;

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
  c.Sample(kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 2);
  t.Write("/var/lib/nvpmodel/status", "pmode:0000\n");
  c.Sample(2 * kSecond, f);
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
  c.Sample(kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 2);
  t.Write("/var/lib/nvpmodel/status.new", "pmode:0000\n");
  t.Rename("/var/lib/nvpmodel/status.new", "/var/lib/nvpmodel/status");
  c.Sample(2 * kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 0);
}

// At 100 Hz the power mode's status file is read once a second, not once
// a tick (each read also looks the path up for a rename); the ticks between
// show the mode read last, and a new mode shows within a second.
TEST(BoardCollector, StatusIsReadAtMostOnceASecond) {
  TempTree t;
  t.Write("/etc/nvpmodel.conf", "< POWER_MODEL ID=0 NAME=15W >\n< POWER_MODEL ID=2 NAME=MAXN >\n");
  t.Write("/var/lib/nvpmodel/status", "pmode:0002\n");
  RootedSysFs rooted(t.root());
  testing::FaultySysFs fs(rooted);
  Collection c(fs, One(MakeBoardCollector()), {}, nullptr);
  c.Discover();
  Frame f;
  const uint64_t before = fs.reads();
  const int64_t tick = kSecond / 100;
  for (int i = 0; i < 100; ++i) {
    c.Sample(kSecond + i * tick, f);
    ASSERT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 2) << i;
  }
  EXPECT_EQ(fs.reads() - before, 1u);
  t.Write("/var/lib/nvpmodel/status.new", "pmode:0000\n");
  t.Rename("/var/lib/nvpmodel/status.new", "/var/lib/nvpmodel/status");
  c.Sample(kSecond + 100 * tick, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 0);
  EXPECT_EQ(fs.reads() - before, 2u);
  // A failed read is shown as failed until the next one.
  fs.FailWith("/var/lib/nvpmodel/status", EIO);
  c.Sample(3 * kSecond, f);
  c.Sample(3 * kSecond + tick, f);
  EXPECT_FALSE(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode));
  fs.ClearAll();
  c.Sample(4 * kSecond, f);
  EXPECT_EQ(Get(c, f, Kind::kBoard, "nvpmodel", Field::kMode), 0);
}

}  // namespace
}  // namespace edgemon
