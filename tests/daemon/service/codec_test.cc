// The service's codec (daemon/service/codec.h): channel selection in the one
// selection grammar, and the board's power mode from the newest frame.
#include "daemon/service/codec.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/support/inventory.h"

namespace edgemon::service {
namespace {

TEST(CodecSelectChannels, KeysIdsGlobsOrInvalidArgument) {
  Inventory inv;
  auto add = [&](Kind k, const char* name, Field f) { testing::AddChannel(inv, k, name, f); };
  add(Kind::kRail, "VDD_IN", Field::kPower);         // 0
  add(Kind::kRail, "VDD_IN", Field::kVoltage);       // 1
  add(Kind::kThermal, "cpu-thermal", Field::kTemp);  // 2
  auto all = SelectChannelsOrAll(inv, {});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->empty());
  auto some = SelectChannelsOrAll(inv, {"thermal/*", "1", "rail/VDD_IN/voltage"});
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  EXPECT_EQ(*some, (std::vector<ChannelId>{1, 2}));
  auto bad = SelectChannelsOrAll(inv, {"rail/*", "gpu/*"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), edgemon::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("\"gpu/*\""), std::string::npos) << bad.status().message();
  EXPECT_FALSE(SelectChannelsOrAll(inv, {"3"}).ok());
}

TEST(Codec, DeviceInfoTakesThePowerModeFromTheNewestFrame) {
  // GetDeviceInfo kept the mode seen at discovery while /metrics followed
  // nvpmodel changes.
  Inventory inv;
  inv.board.nvpmodel = "MAXN";
  inv.board.nvpmodel_id = 0;
  inv.board.nvpmodel_modes = {{0, "MAXN"}, {2, "MODE_30W"}};
  Channel mode;
  mode.id = 0;
  mode.kind = Kind::kBoard;
  mode.name = "nvpmodel";
  mode.field = Field::kMode;
  inv.channels.push_back(mode);
  Frame f;
  f.values = {int64_t{2}};
  v1::BoardInfo b;
  ToProto(inv, &f, &b);
  EXPECT_EQ(b.nvpmodel_id(), 2);
  EXPECT_EQ(b.nvpmodel(), "MODE_30W");
  f.values = {std::nullopt};  // unreadable this tick: the discovery value
  ToProto(inv, &f, &b);
  EXPECT_EQ(b.nvpmodel_id(), 0);
  EXPECT_EQ(b.nvpmodel(), "MAXN");
  ToProto(inv, nullptr, &b);
  EXPECT_EQ(b.nvpmodel(), "MAXN");
}

}  // namespace
}  // namespace edgemon::service
