// Diagnostics: rail headroom, power-mode caps, active events and the run note.
#include "edgemon/diagnostics.h"

#include <gtest/gtest.h>

#include "tests/support/inventory.h"

namespace edgemon {
namespace {

Inventory Board() {
  using testing::AddChannel;
  Inventory inv;
  Channel& curr = AddChannel(inv, Kind::kRail, "VDD_IN", Field::kCurrent);  // 0
  curr.max = 6000;
  curr.crit = 7784;
  AddChannel(inv, Kind::kRail, "VDD_SOC", Field::kPower);  // 1: no limit
  AddChannel(inv, Kind::kCpu, "cpu0", Field::kFreqMax).max = 2201600;
  AddChannel(inv, Kind::kCpu, "cpu1", Field::kFreqMax).max = 2201600;
  AddChannel(inv, Kind::kGpu, "gpu", Field::kFreqMax).max = 1300500;  // 4
  AddChannel(inv, Kind::kEvent, "oc3", Field::kEvents).attrs = {{"source", "over-current"}};
  AddChannel(inv, Kind::kEvent, "VDD_IN:crit", Field::kEvents).attrs = {{"source", "alarm"}};
  AddChannel(inv, Kind::kEvent, "VDD_IN:crit", Field::kState).attrs = {{"source", "alarm"}};
  AddChannel(inv, Kind::kEvent, "cpufreq-cpu0", Field::kTime).attrs = {{"source", "throttle"}};
  AddChannel(inv, Kind::kEvent, "pwmfan:stuck", Field::kState).attrs = {{"source", "fan"}};
  for (auto& c : inv.channels) c.unit = UnitOf(c.field);
  return inv;
}

Frame At(std::vector<Value> v) {
  Frame f;
  f.values = std::move(v);
  return f;
}

TEST(Diagnostics, HeadroomAgainstEachDeclaredLimit) {
  Inventory inv = Board();
  auto rows = RailHeadroom(inv, At({1234, 5000}));
  ASSERT_EQ(rows.size(), 2u);  // VDD_SOC has no limit: no row
  EXPECT_EQ(rows[0].limit, "max");
  EXPECT_EQ(rows[0].headroom, 6000 - 1234);
  EXPECT_EQ(rows[1].limit, "crit");
  EXPECT_EQ(rows[1].headroom, 7784 - 1234);
  EXPECT_NEAR(rows[1].percent_of_limit, 15.85, 0.01);
  // An absent value is no row, never a full headroom.
  EXPECT_TRUE(RailHeadroom(inv, At({std::nullopt})).empty());
  // Over the limit: a negative headroom.
  EXPECT_EQ(RailHeadroom(inv, At({8000}))[1].headroom, -216);
}

TEST(Diagnostics, CapsBelowTheHardwareMaximumMergeCores) {
  Inventory inv = Board();
  auto caps = PowerModeCaps(inv, At({{}, {}, 1497600, 1497600, 1300500}));
  ASSERT_EQ(caps.size(), 1u);  // the GPU is at its maximum: not capped
  EXPECT_EQ(caps[0].names, "cpu0-cpu1");
  EXPECT_EQ(caps[0].cap_khz, 1497600);
  EXPECT_EQ(caps[0].max_khz, 2201600);
  caps = PowerModeCaps(inv, At({{}, {}, 2201600, std::nullopt, 612000}));
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(caps[0].names, "gpu");
  auto lines = DiagnosticLines(inv, At({{}, {}, 2201600, std::nullopt, 612000}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "gpu capped by the power mode at 612 MHz of 1300 MHz");
}

TEST(Diagnostics, ActiveEventsAndJson) {
  Inventory inv = Board();
  Frame f = At({1234, {}, {}, {}, {}, 2, 1, 1, 3100, 0});
  auto active = ActiveEvents(inv, f);
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0]->Key(), "event/VDD_IN:crit/state");
  nlohmann::json j = DiagnosticsJson(inv, f);
  EXPECT_EQ(j["active"], nlohmann::json::array({"event/VDD_IN:crit/state"}));
  EXPECT_EQ(j["headroom"][1]["limit"], "crit");
  EXPECT_EQ(j["headroom"][1]["headroom"], 6550);
  EXPECT_TRUE(j["capped"].empty());
}

TEST(Diagnostics, EventNoteFromTheCountersEdges) {
  Inventory inv = Board();
  std::map<ChannelId, Range> r = {{5, {27, 29}}, {6, {0, 1}}, {8, {1000, 4100}}, {9, {0, 0}}};
  EXPECT_EQ(EventNote(inv, r),
            "2 over-current events (oc3), 1 current/power alert (VDD_IN:crit) and 3.1 s of "
            "thermal throttling (cpufreq-cpu0) during this run");
  r[9] = {0, 1};
  r[5] = {29, 29};
  r[6] = {1, 1};
  r[8] = {4100, 4100};
  EXPECT_EQ(EventNote(inv, r), "the fan pwmfan stuck (PWM on, 0 rpm) during this run");
  EXPECT_EQ(EventNote(inv, {}), "");
  EXPECT_EQ(EventKeys(inv).size(), 5u);
}

}  // namespace
}  // namespace edgemon
