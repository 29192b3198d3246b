// `edgemon now` (RenderTable): a rail's sub-rails follow it, indented, even
// where the board declares them first (TX2's and x86's power monitors).
#include <gtest/gtest.h>

#include "edgemon/render.h"
#include "tests/support/inventory.h"

namespace edgemon {
namespace {

TEST(RenderTable, SubRailsFollowTheirParent) {
  Inventory inv;
  Frame f;
  auto add = [&](std::string name, std::string parent, uint32_t flags) {
    Channel& c = testing::AddChannel(inv, Kind::kRail, std::move(name), Field::kPower);
    c.unit = Unit::kMilliwatt;
    c.parent = std::move(parent);
    c.flags = flags;
    f.values.push_back(int64_t{1000});
  };
  // TX2's order: sub-rails of VDD_IN on the first INA3221, VDD_IN on the second.
  add("VDD_SYS_GPU", "VDD_IN", 0);
  add("VDD_SYS_SOC", "VDD_IN", 0);
  add("VDD_4V0_WIFI", "", 0);
  add("VDD_IN", "", kFlagInputRail);
  add("VDD_SYS_CPU", "VDD_IN", 0);
  std::string text = RenderTable(inv, f, {});
  auto at = [&](const std::string& s) { return text.find(s); };
  ASSERT_NE(at("VDD_IN (input)"), std::string::npos) << text;
  EXPECT_LT(at("VDD_IN (input)"), at("VDD_SYS_GPU")) << text;
  EXPECT_LT(at("VDD_SYS_GPU"), at("VDD_SYS_SOC")) << text;
  EXPECT_LT(at("VDD_SYS_SOC"), at("VDD_SYS_CPU")) << text;
  EXPECT_LT(at("VDD_4V0_WIFI"), at("VDD_IN (input)")) << text;  // top level keeps its order
  EXPECT_NE(at("  VDD_SYS_CPU < VDD_IN"), std::string::npos) << text;
}

}  // namespace
}  // namespace edgemon
