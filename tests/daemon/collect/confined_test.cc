// ConfinedRoot, with openat2 and with the walk that replaces it on older
// kernels: what is followed, what is refused and with which errno, on a
// scratch tree that has links inside and out, a FIFO, a directory, and a
// file outside the root that must never change.
#include "daemon/collect/confined.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::TempTree;
using Last = ConfinedRoot::Last;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Confined : public ::testing::TestWithParam<ConfinedRoot::Resolver> {
 protected:
  Confined() {
    outside.Write("/secret", "keep\n");
    t.Write("/sys/devices/platform/pwm-fan/hwmon/hwmon1/pwm1", "100\n");
    t.Write("/sys/devices/platform/pwm-fan/hwmon/hwmon1/name", "pwmfan\n");
    // As sysfs links its class directories: relative, inside the root.
    t.LinkRelative("/sys/class/hwmon/hwmon1", "/sys/devices/platform/pwm-fan/hwmon/hwmon1");
    t.MakeDir("/sys/class/hwmon/hwmon2");
    t.Link("/sys/class/hwmon/hwmon2/pwm1", outside.Real("/secret"));  // absolute, outside
    t.MakeDir("/sys/class/hwmon/hwmon3");
    t.Link("/sys/class/hwmon/hwmon3/pwm1", "../hwmon1/pwm1");  // a value file that is a link
    t.Link("/sys/class/hwmon/hwmon4", "../../../../../../../../../../" + outside.root());
    t.MakeDir("/sys/class/hwmon/hwmon5");
    EXPECT_EQ(::mkfifo(t.Real("/sys/class/hwmon/hwmon5/pwm1").c_str(), 0600), 0);
  }

  TempTree t, outside;
  ConfinedRoot root{t.root(), GetParam()};
};

TEST_P(Confined, FollowsLinksThatStayInside) {
  auto name = root.ReadText("/sys/class/hwmon/hwmon1/name", 4096, Last::kNoFollow);
  ASSERT_TRUE(name.ok()) << name.status().message();
  EXPECT_EQ(*name, "pwmfan\n");
  EXPECT_TRUE(root.WriteText("/sys/class/hwmon/hwmon1/pwm1", "255\n").ok());
  EXPECT_EQ(Slurp(t.Real("/sys/devices/platform/pwm-fan/hwmon/hwmon1/pwm1")), "255\n");
  auto names = root.List("/sys/class/hwmon");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"hwmon1", "hwmon2", "hwmon3", "hwmon4", "hwmon5"}));
  auto in_dir = root.List("/sys/class/hwmon/hwmon1");  // listed through the link
  ASSERT_TRUE(in_dir.ok());
  EXPECT_EQ(*in_dir, (std::vector<std::string>{"name", "pwm1"}));
}

TEST_P(Confined, AFinalLinkIsRefusedWhereverItPoints) {
  EXPECT_EQ(root.Open("/sys/class/hwmon/hwmon2/pwm1", O_WRONLY, Last::kNoFollow), -ELOOP);
  EXPECT_EQ(root.Open("/sys/class/hwmon/hwmon3/pwm1", O_WRONLY, Last::kNoFollow), -ELOOP);
  Status written = root.WriteText("/sys/class/hwmon/hwmon2/pwm1", "255\n");
  EXPECT_EQ(written.code(), StatusCode::kUnavailable);
  EXPECT_EQ(written.message(), "it is a symbolic link (a value file is never reached through one)");
  EXPECT_EQ(Slurp(outside.Real("/secret")), "keep\n");
  auto read = root.ReadText("/sys/class/hwmon/hwmon3/pwm1", 4096, Last::kNoFollow);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(),
            t.Real("/sys/class/hwmon/hwmon3/pwm1") +
                ": it is a symbolic link (a value file is never reached through one)");
  // Followed where the caller allows it, when it stays inside.
  EXPECT_EQ(*root.ReadText("/sys/class/hwmon/hwmon3/pwm1", 4096, Last::kFollow), "100\n");
}

TEST_P(Confined, ALinkOutOfTheRootIsRefused) {
  EXPECT_EQ(root.Open("/sys/class/hwmon/hwmon2/pwm1", O_RDONLY, Last::kFollow), -EXDEV);
  EXPECT_EQ(root.Open("/sys/class/hwmon/hwmon4/secret", O_WRONLY, Last::kNoFollow), -EXDEV);
  EXPECT_EQ(root.Open("/../" + outside.root() + "/secret", O_RDONLY, Last::kFollow), -EXDEV);
  EXPECT_FALSE(root.List("/sys/class/hwmon/hwmon4").ok());
  Status written = root.WriteText("/sys/class/hwmon/hwmon4/secret", "pwned\n");
  EXPECT_EQ(written.message(), "it leads out of " + t.root());
  EXPECT_EQ(Slurp(outside.Real("/secret")), "keep\n");
}

TEST_P(Confined, OnlyRegularFilesAreOpenedAndAFifoNeverBlocks) {
  EXPECT_EQ(root.Open("/sys/class/hwmon/hwmon5/pwm1", O_RDONLY, Last::kNoFollow), -EINVAL);
  EXPECT_EQ(root.Open("/sys/class/hwmon/hwmon5/pwm1", O_WRONLY, Last::kNoFollow), -EINVAL);
  Status written = root.WriteText("/sys/class/hwmon/hwmon5/pwm1", "1\n");
  EXPECT_EQ(written.message(),
            "it is not a regular file (a FIFO, socket, device or directory is never opened)");
  EXPECT_EQ(root.Open("/sys/class/hwmon", O_RDONLY, Last::kFollow), -EINVAL);
  EXPECT_EQ(root.Open("/sys/class/hwmon/hwmon9/pwm1", O_RDONLY, Last::kFollow), -ENOENT);
  // Never created.
  EXPECT_EQ(root.WriteText("/sys/class/hwmon/hwmon1/pwm2", "1\n").message(),
            "No such file or directory");
  EXPECT_FALSE(root.ReadText("/sys/class/hwmon/hwmon1/pwm2", 4096, Last::kFollow).ok());
}

TEST_P(Confined, ReadsAreBounded) {
  t.Write("/big", std::string(ConfinedRoot::kMaxRead + 1, 'x'));
  t.Write("/ten", "0123456789");
  auto big = root.ReadText("/big", 1 << 30, Last::kNoFollow);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(), t.Real("/big") + ": it is larger than 65536 bytes");
  EXPECT_FALSE(root.ReadText("/ten", 9, Last::kNoFollow).ok());
  EXPECT_EQ(*root.ReadText("/ten", 10, Last::kNoFollow), "0123456789");
}

TEST_P(Confined, ReplaceFileNeverWritesThroughAPlantedTmp) {
  t.MakeDir("/state");
  t.Link("/state/state.json.tmp", outside.Real("/secret"));
  ASSERT_TRUE(root.ReplaceFile("/state/state.json", "{}\n", 0600).ok());
  EXPECT_EQ(Slurp(t.Real("/state/state.json")), "{}\n");
  EXPECT_EQ(Slurp(outside.Real("/secret")), "keep\n");
  struct stat st {};
  ASSERT_EQ(::lstat(t.Real("/state/state.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(::access(t.Real("/state/state.json.tmp").c_str(), F_OK), 0);
}

INSTANTIATE_TEST_SUITE_P(Resolvers, Confined,
                         ::testing::Values(ConfinedRoot::Resolver::kAuto,
                                           ConfinedRoot::Resolver::kWalk),
                         [](const auto& param_info) {
                           return param_info.param == ConfinedRoot::Resolver::kAuto ? "Auto"
                                                                                    : "Walk";
                         });

TEST(ConfinedRoot, TheWalkCanBeChosen) {
  EXPECT_FALSE(ConfinedRoot("/", ConfinedRoot::Resolver::kWalk).UsesOpenat2());
}

TEST(ConfinedRoot, TheSystemRootFollowsAbsoluteLinksButNotAtTheEnd) {
  TempTree t;
  t.Write("/value", "1\n");
  t.Link("/link", t.Real("/value"));
  t.Link("/dir", t.root());
  ConfinedRoot sys("/");
  EXPECT_EQ(*sys.ReadText(t.Real("/dir/value"), 16, Last::kNoFollow), "1\n");
  EXPECT_EQ(*sys.ReadText(t.Real("/link"), 16, Last::kFollow), "1\n");
  EXPECT_EQ(sys.Open(t.Real("/link"), O_WRONLY, Last::kNoFollow), -ELOOP);
  EXPECT_EQ(sys.Real("/sys/class"), "/sys/class");
}

}  // namespace
}  // namespace edgemon
