#include "edgemon/groups.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace edgemon {
namespace {

class GroupsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("edgemon-groups-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
  }
  void TearDown() override { std::remove(path_.c_str()); }
  const std::string& Write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  std::string path_;
};

TEST_F(GroupsTest, NamesAndIdsBothWays) {
  const std::string& f = Write(
      "root:x:0:\n"
      "edgemon:x:997:alice,bob\n"
      "edgemon-control:x:996:\n");
  EXPECT_EQ(LocalGroupId("edgemon", f), 997u);
  EXPECT_EQ(LocalGroupId("edgemon-control", f), 996u);
  EXPECT_EQ(LocalGroupId("root", f), 0u);
  EXPECT_EQ(LocalGroupName(997, f), "edgemon");
  EXPECT_EQ(LocalGroupName(0, f), "root");
  EXPECT_EQ(LocalGroupId("edgemo", f), std::nullopt);  // whole names only
  EXPECT_EQ(LocalGroupName(995, f), std::nullopt);
}

TEST_F(GroupsTest, MembersAreWholeNamesOfTheirGroup) {
  const std::string& f = Write(
      "root:x:0:\n"
      "edgemon:x:997:alice,bob\n"
      "other:x:998:carol\n");
  EXPECT_TRUE(LocalGroupHasMember(997, "alice", f));
  EXPECT_TRUE(LocalGroupHasMember(997, "bob", f));
  EXPECT_FALSE(LocalGroupHasMember(997, "al", f));     // whole names only
  EXPECT_FALSE(LocalGroupHasMember(997, "carol", f));  // another group's
  EXPECT_FALSE(LocalGroupHasMember(0, "root", f));     // a primary group lists none
  EXPECT_FALSE(LocalGroupHasMember(996, "alice", f));  // no such group
}

TEST_F(GroupsTest, AMalformedEntryIsNoGroup) {
  const std::string& f = Write(
      "bad:x:12a:\n"
      "negative:x:-1:\n"
      "empty:x::\n"
      "short:x\n"
      "huge:x:99999999999999999999:\n"
      "\n"
      "ok:x:5\n");
  for (const char* name : {"bad", "negative", "empty", "short", "huge", ""}) {
    EXPECT_EQ(LocalGroupId(name, f), std::nullopt) << name;
  }
  EXPECT_EQ(LocalGroupId("ok", f), 5u);  // no members field
  EXPECT_EQ(LocalGroupName(12, f), std::nullopt);
}

TEST_F(GroupsTest, NoFileIsNoGroup) {
  EXPECT_EQ(LocalGroupId("root", path_ + ".absent"), std::nullopt);
  EXPECT_EQ(LocalGroupName(0, path_ + ".absent"), std::nullopt);
}

TEST(Groups, TheSystemDatabaseHasRoot) {
  EXPECT_EQ(LocalGroupId("root"), 0u);
  EXPECT_EQ(LocalGroupName(0), "root");
}

}  // namespace
}  // namespace edgemon
