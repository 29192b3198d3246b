// BoardControl's file writes and restores on a scratch tree: what a refused
// write or a failed restore reports (the texts edgemon-control logs and sends),
// and what it refuses to touch: a value file that is a link or a FIFO, a
// tool or a store file that a plan names but the board does not have.
#include "daemon/control/board.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "tests/support/temp_tree.h"

namespace edgemon::control {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch root with one fan file (`present`, at 100) and a plan of two
// writes: `present` from 100 to 255, then `missing` (never there) from 7 to 9.
class FanWrites : public ::testing::Test {
 protected:
  FanWrites() { t.Write("/fan/pwm1", "100\n"); }

  testing::TempTree t;
  const std::string present = "/fan/pwm1", missing = "/fan/pwm2";  // logical, as plans keep them
  BoardControl board{t.root(), t.root() + "/state"};
  nlohmann::json plan = {{"type", "writes"},
                         {"writes",
                          {{{"path", present}, {"old", "100\n"}, {"new", "255\n"}},
                           {{"path", missing}, {"old", "7\n"}, {"new", "9\n"}}}}};
};

// A board with one fan (hwmon1, linked from /sys/class/hwmon as sysfs does)
// and a file outside its root that no request may change.
class OneFan : public ::testing::Test {
 protected:
  OneFan() {
    outside.Write("/secret", "keep\n");
    t.Write(dir + "/name", "pwmfan\n");
    t.Write(dir + "/pwm1", "100\n");
    t.LinkRelative("/sys/class/hwmon/hwmon1", dir);
  }
  void Replace(const std::function<void(const std::string&)>& make) {
    t.Remove(dir + "/pwm1");
    make(t.Real(dir + "/pwm1"));
  }

  testing::TempTree t, outside;
  const std::string dir = "/sys/devices/platform/pwm-fan/hwmon/hwmon1";
  BoardControl board{t.root(), t.root() + "/state"};
};

TEST_F(OneFan, AFanIsPlannedByItsPathInsideTheRoot) {
  nlohmann::json plan;
  ASSERT_TRUE(board.PlanFan("pwmfan", 100, &plan).ok());
  EXPECT_EQ(plan["writes"][0]["path"], "/sys/class/hwmon/hwmon1/pwm1");
  EXPECT_EQ(plan["writes"][0]["old"], "100\n");
  ASSERT_TRUE(board.Apply(plan).ok());
  EXPECT_EQ(Slurp(t.Real(dir + "/pwm1")), "255\n");
  ASSERT_TRUE(board.Restore(plan).ok());
  EXPECT_EQ(Slurp(t.Real(dir + "/pwm1")), "100\n");
}

TEST_F(OneFan, APwmThatIsALinkIsRefusedAndNothingOutsideChanges) {
  Replace([&](const std::string& p) {
    ASSERT_EQ(::symlink(outside.Real("/secret").c_str(), p.c_str()), 0);
  });
  nlohmann::json plan;
  Status planned = board.PlanFan("", 50, &plan);
  EXPECT_EQ(planned.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(planned.message(), "refusing " + t.Real("/sys/class/hwmon/hwmon1/pwm1") +
                                   ": it is a symbolic link (a value file is never reached "
                                   "through one)");
  EXPECT_EQ(board.PlanClocks("0123", &plan).code(), StatusCode::kUnimplemented);  // no clocks here
  // A plan naming it (a state file) writes nothing through it either.
  Status applied = board.Apply(
      {{"type", "writes"},
       {"writes",
        {{{"path", "/sys/class/hwmon/hwmon1/pwm1"}, {"old", "keep\n"}, {"new", "255\n"}}}}});
  EXPECT_EQ(applied.code(), StatusCode::kAborted);
  EXPECT_EQ(Slurp(outside.Real("/secret")), "keep\n");
}

TEST_F(OneFan, APwmThatIsAFifoIsRefusedWithoutWaiting) {
  Replace([&](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); });
  nlohmann::json plan;
  Status planned = board.PlanFan("pwmfan", 50, &plan);  // blocked in open(2) before
  EXPECT_EQ(planned.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(planned.message().find("it is not a regular file"), std::string::npos)
      << planned.message();
  ASSERT_EQ(board.Fans().size(), 1u);
  EXPECT_FALSE(board.Fans()[0].pwm.has_value());  // unknown, not 0
}

TEST_F(FanWrites, RestoreWritesBackAndNamesTheOnesThatCannot) {
  t.Write(present, "255\n");
  Status left = board.Restore(plan);
  EXPECT_EQ(left.code(), StatusCode::kAborted);
  EXPECT_EQ(left.message(),
            "could not restore: " + t.Real(missing) + " (No such file or directory)");
  EXPECT_EQ(Slurp(t.Real(present)), "100\n");  // the other write still went back

  plan["writes"].erase(1);
  EXPECT_TRUE(board.Restore(plan).ok());
}

TEST(BoardRestore, APlanThatCannotSayWhatToRestoreIsRefused) {
  testing::TempTree t;
  BoardControl board(t.root(), t.root() + "/state");
  Status mode = board.Restore({{"type", "mode"}, {"tool", "/usr/sbin/nvpmodel"}});
  EXPECT_EQ(mode.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(mode.message(), "the previous power mode was unknown; left as it is");
  Status unknown = board.Restore({{"type", "teleport"}});
  EXPECT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.message(), "unknown change type 'teleport'");
  // jetson_clocks killed before --store wrote its file: nothing changed.
  EXPECT_TRUE(board
                  .Restore({{"type", "jetson_clocks"},
                            {"tool", "/usr/bin/jetson_clocks"},
                            {"store", t.root() + "/state/jetson_clocks-0123abcd.conf"}})
                  .ok());
}

// A plan comes back from the state file: the tool it names must be the
// board's, and a store file must be one of the state directory's.
TEST(BoardRestore, APlanRunsOnlyTheBoardsToolsOnItsStoreFiles) {
  testing::TempTree t;
  t.Write("/state/jetson_clocks-0123abcd.conf", "stored\n");
  BoardControl board(t.root(), t.root() + "/state");
  Status mode = board.Restore({{"type", "mode"}, {"tool", "/bin/sh"}, {"from", 1}});
  EXPECT_EQ(mode.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(mode.message(), "the plan names /bin/sh but this board's nvpmodel is absent; not run");
  Status clocks = board.Restore({{"type", "jetson_clocks"},
                                 {"tool", "/bin/sh"},
                                 {"store", t.root() + "/state/jetson_clocks-0123abcd.conf"}});
  EXPECT_EQ(clocks.message(),
            "the plan names /bin/sh but this board's jetson_clocks is absent; not run");
  Status store =
      board.Restore({{"type", "jetson_clocks"}, {"tool", "/bin/sh"}, {"store", "/etc/shadow"}});
  EXPECT_EQ(store.message(), "jetson_clocks store /etc/shadow is not a store file in " + t.root() +
                                 "/state; not used");
}

TEST_F(FanWrites, ARefusedWriteRollsBackTheEarlierOnes) {
  Status applied = board.Apply(plan);
  EXPECT_EQ(applied.code(), StatusCode::kAborted);
  EXPECT_EQ(applied.message(), "writing 9 to " + t.Real(missing) +
                                   " was refused: No such file or directory; the 1 earlier "
                                   "writes were rolled back");
  EXPECT_EQ(Slurp(t.Real(present)), "100\n");
}

}  // namespace
}  // namespace edgemon::control
