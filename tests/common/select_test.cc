// The one channel-selection grammar (include/edgemon/select.h), shared by the
// CLI and the daemon's API.
#include "edgemon/select.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/inventory.h"

namespace edgemon {
namespace {

Inventory Board() {
  Inventory inv;
  auto add = [&](Kind k, const char* name, Field f) { testing::AddChannel(inv, k, name, f); };
  add(Kind::kRail, "VDD_IN", Field::kPower);         // 0
  add(Kind::kRail, "VDD_IN", Field::kVoltage);       // 1
  add(Kind::kThermal, "cpu-thermal", Field::kTemp);  // 2
  add(Kind::kRail, "VDD_GPU", Field::kPower);        // 3
  return inv;
}

std::vector<ChannelId> Ids(const Inventory& inv, const std::vector<std::string>& patterns) {
  auto r = SelectChannels(inv, patterns);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<ChannelId>{};
}

TEST(SelectChannels, KeysIdsAndGlobsAscendingWithoutRepeats) {
  const Inventory inv = Board();
  EXPECT_EQ(Ids(inv, {"rail/VDD_IN/voltage"}), (std::vector<ChannelId>{1}));
  EXPECT_EQ(Ids(inv, {"2", "0"}), (std::vector<ChannelId>{0, 2}));
  EXPECT_EQ(Ids(inv, {"rail/*"}), (std::vector<ChannelId>{0, 1, 3}));
  EXPECT_EQ(Ids(inv, {"rail/VDD_IN/*"}), (std::vector<ChannelId>{0, 1}));
  // Globs that are not "kind/*": any field of any kind, a name prefix.
  EXPECT_EQ(Ids(inv, {"*/power"}), (std::vector<ChannelId>{0, 3}));
  EXPECT_EQ(Ids(inv, {"thermal/cpu*"}), (std::vector<ChannelId>{2}));
  EXPECT_EQ(Ids(inv, {"rail/*/power", "rail/VDD_IN/power", "0"}), (std::vector<ChannelId>{0, 3}));
}

TEST(SelectChannels, EmptySelectsEveryNamedChannel) {
  Inventory inv = Board();
  inv.channels.push_back(Channel{});  // a slot of a kind this build does not know
  inv.channels.back().id = 4;
  EXPECT_EQ(Ids(inv, {}), (std::vector<ChannelId>{0, 1, 2, 3}));
  EXPECT_FALSE(SelectChannels(inv, {"4"}).ok());  // unnamed: not selectable by id either
}

TEST(SelectChannels, APatternThatMatchesNothingIsNamed) {
  const Inventory inv = Board();
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"rail/*", "gpu/*"}, {"9"}, {"99999999999999999999999"}, {"rail/VDD_IN"}, {""}}) {
    auto r = SelectChannels(inv, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("\"" + bad.back() + "\""), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace edgemon
