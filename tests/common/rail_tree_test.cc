// The one rail-tree order (include/edgemon/rail_tree.h) that edgetop and the
// record report both list rails in.
#include "edgemon/rail_tree.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace edgemon {
namespace {

struct Step {
  std::string name;
  int depth;
  std::vector<std::string> children;  // filled on leave
};

std::vector<Step> Walk(const std::vector<RailLink>& rails) {
  std::vector<Step> out;
  std::vector<size_t> at(rails.size(), 0);
  WalkRailTree(
      rails,
      [&](size_t i, int depth) {
        at[i] = out.size();
        out.push_back({rails[i].name, depth, {}});
      },
      [&](size_t i, int, const std::vector<size_t>& children) {
        for (size_t c : children) out[at[i]].children.push_back(rails[c].name);
      });
  return out;
}

TEST(RailTree, InputFirstThenTopLevelEachFollowedByItsSubRails) {
  // Listed in an order that is not the tree's: a sub-rail before its parent,
  // the input rail last.
  auto steps = Walk({{"VDD_CPU", "VDD_IN", false},
                     {"VDD_SOC", "", false},
                     {"VDD_GPU", "VDD_IN", false},
                     {"VDD_IN", "", true}});
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].name, "VDD_IN");
  EXPECT_EQ(steps[0].depth, 0);
  EXPECT_EQ(steps[0].children, (std::vector<std::string>{"VDD_CPU", "VDD_GPU"}));
  EXPECT_EQ(steps[1].name, "VDD_CPU");
  EXPECT_EQ(steps[1].depth, 1);
  EXPECT_EQ(steps[2].name, "VDD_GPU");
  EXPECT_EQ(steps[2].depth, 1);
  EXPECT_EQ(steps[3].name, "VDD_SOC");
  EXPECT_EQ(steps[3].depth, 0);
  EXPECT_TRUE(steps[3].children.empty());
}

TEST(RailTree, DeeperLevelsAndAnUnknownParentIsTopLevel) {
  auto steps = Walk(
      {{"in", "", true}, {"soc", "in", false}, {"cv", "soc", false}, {"orphan", "nowhere", false}});
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[2].name, "cv");
  EXPECT_EQ(steps[2].depth, 2);
  EXPECT_EQ(steps[3].name, "orphan");
  EXPECT_EQ(steps[3].depth, 0);
}

TEST(RailTree, CyclesAndRepeatedNamesAppearOnce) {
  auto steps =
      Walk({{"a", "b", false}, {"b", "a", false}, {"self", "self", false}, {"self", "", false}});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].name, "self");  // its own parent: top level
  EXPECT_EQ(steps[0].depth, 0);
  EXPECT_EQ(steps[1].name, "a");  // the cycle after the rest, at the top
  EXPECT_EQ(steps[1].depth, 0);
  EXPECT_EQ(steps[2].name, "b");
  EXPECT_EQ(steps[2].depth, 1);
}

TEST(RailTree, AnInputRailUnderAKnownParentStaysUnderIt) {
  auto steps = Walk({{"sys", "", false}, {"in", "sys", true}});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "sys");
  EXPECT_EQ(steps[1].name, "in");
  EXPECT_EQ(steps[1].depth, 1);
}

TEST(RailTree, NoRailsNoSteps) {
  EXPECT_TRUE(Walk({}).empty());
}

}  // namespace
}  // namespace edgemon
