// BoardControl's file writes and restores on a scratch tree: what a refused
// write or a failed restore reports (the texts edgemon-control logs and sends).
#include "daemon/control/board.h"

#include <gtest/gtest.h>

#include <fstream>
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
  const std::string present = t.Real("/fan/pwm1"), missing = t.Real("/fan/pwm2");
  BoardControl board{t.root(), t.root() + "/state"};
  nlohmann::json plan = {{"type", "writes"},
                         {"writes",
                          {{{"path", present}, {"old", "100\n"}, {"new", "255\n"}},
                           {{"path", missing}, {"old", "7\n"}, {"new", "9\n"}}}}};
};

TEST(BoardWriteText, WritesAnExistingFileAndNeverCreatesOne) {
  testing::TempTree t;
  t.Write("/fan/pwm1", "100\n");
  EXPECT_TRUE(WriteText(t.Real("/fan/pwm1"), "255\n").ok());
  EXPECT_EQ(Slurp(t.Real("/fan/pwm1")), "255\n");

  Status missing = WriteText(t.Real("/fan/pwm2"), "255\n");
  EXPECT_EQ(missing.code(), StatusCode::kUnavailable);
  EXPECT_EQ(missing.message(), "No such file or directory");
}

TEST_F(FanWrites, RestoreWritesBackAndNamesTheOnesThatCannot) {
  t.Write("/fan/pwm1", "255\n");
  Status left = board.Restore(plan);
  EXPECT_EQ(left.code(), StatusCode::kAborted);
  EXPECT_EQ(left.message(), "could not restore: " + missing + " (No such file or directory)");
  EXPECT_EQ(Slurp(present), "100\n");  // the other write still went back

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
                            {"store", t.root() + "/state/never-written"}})
                  .ok());
}

TEST_F(FanWrites, ARefusedWriteRollsBackTheEarlierOnes) {
  Status applied = board.Apply(plan);
  EXPECT_EQ(applied.code(), StatusCode::kAborted);
  EXPECT_EQ(applied.message(), "writing 9 to " + missing +
                                   " was refused: No such file or directory; the 1 earlier "
                                   "writes were rolled back");
  EXPECT_EQ(Slurp(present), "100\n");
}

}  // namespace
}  // namespace edgemon::control
