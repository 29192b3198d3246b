// SysFs and RootedSysFs: every read names its cap; only regular files inside
// the root are read.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "daemon/collect/sysfs.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::TempTree;

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

}  // namespace
}  // namespace edgemon
