// `edgemon now` and `edgemond --print` (RenderTable, RenderLine) with names
// read from a hostile sysfs: escape sequences are shown escaped, never
// written raw, and the JSON rendering keeps the exact bytes as data.
#include <gtest/gtest.h>

#include <string>

#include "edgemon/render.h"
#include "tests/support/inventory.h"

namespace edgemon {
namespace {

const std::string kTitle = "zone\x1b]0;pwned\x07\x1b[2J";  // retitle, then clear the screen
const std::string kCsi =
    "nv\xc2\x9b"
    "2Jme";  // C1 CSI in UTF-8

// No byte that drives a terminal: ESC, BEL, or the C1 CSI.
void ExpectNoControlBytes(const std::string& text) {
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
}

struct Hostile {
  Inventory inv;
  Frame frame;
  Hostile() {
    inv.board.model = "Think\x1b]0;owned\x07Pad";
    inv.board.hostname = "host\x1b[2J";
    Channel& zone = testing::AddChannel(inv, Kind::kThermal, kTitle, Field::kTemp);
    zone.unit = Unit::kMilliCelsius;
    Channel& rail = testing::AddChannel(inv, Kind::kRail, kCsi, Field::kPower);
    rail.unit = Unit::kMilliwatt;
    rail.parent = "VDD_IN\x1b[31m";
    frame.values = {int64_t{52000}, int64_t{1500}};
  }
};

TEST(RenderEscape, TableShowsHostileNamesEscaped) {
  Hostile h;
  const std::string text = RenderTable(h.inv, h.frame, {});
  ExpectNoControlBytes(text);
  EXPECT_NE(text.find("zone\\x1b]0;pwned\\x07\\x1b[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("nv\\u009b2Jme"), std::string::npos) << text;
  EXPECT_NE(text.find("< VDD_IN\\x1b[31m"), std::string::npos) << text;
  EXPECT_NE(text.find("Think\\x1b]0;owned\\x07Pad"), std::string::npos) << text;
  EXPECT_NE(text.find("52.0 C"), std::string::npos) << text;  // the values are still there
}

TEST(RenderEscape, LineShowsHostileNamesEscaped) {
  Hostile h;
  const std::string line = RenderLine(h.inv, h.frame);
  ExpectNoControlBytes(line);
  EXPECT_NE(line.find(" zone\\x1b]0;pwned\\x07\\x1b[2J=52.0 C"), std::string::npos) << line;
  EXPECT_NE(line.find(" nv\\u009b2Jme=1.500 W"), std::string::npos) << line;
}

TEST(RenderEscape, JsonKeepsTheExactNameAsData) {
  Hostile h;
  const nlohmann::json j = ToJson(h.inv, h.frame, {});
  EXPECT_EQ(j["channels"][0]["name"], kTitle);
  EXPECT_EQ(j["channels"][1]["name"], kCsi);
  const std::string text = j.dump();  // C0 bytes encoded by JSON itself
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("zone\\u001b]0;pwned\\u0007\\u001b[2J"), std::string::npos) << text;
}

}  // namespace
}  // namespace edgemon
