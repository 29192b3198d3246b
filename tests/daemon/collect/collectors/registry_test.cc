// Every fixture board, sampled by the full collector set (MakeDefaultCollectors, registry.cc),
// shows the values a person would read off that board: tests/fixtures/expected/<board>.json lists
// spot checks (values in edgemon's units), channels that must read as absent (gated zones, offline
// cores) and channels that must not exist (NC rails, the INA3221 shunt-sum channel).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

std::vector<std::string> Boards() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(testing::FixturesDir() + "/expected", ec)) {
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class BoardFixture : public ::testing::TestWithParam<std::string> {};

const Channel* ByKey(const Inventory& inv, const std::string& key) {
  for (const auto& c : inv.channels) {
    if (c.Key() == key) return &c;
  }
  return nullptr;
}

TEST_P(BoardFixture, ShowsWhatTheBoardShows) {
  const std::string board = GetParam();
  std::ifstream in(testing::FixturesDir() + "/expected/" + board + ".json");
  ASSERT_TRUE(in) << board;
  const auto expected = nlohmann::json::parse(in);

  RootedSysFs fs(testing::Fixture(board));
  CollectOptions options;
  Collection c(fs, MakeDefaultCollectors(options), options, nullptr);
  c.Discover();
  Frame f;
  c.Sample(1'000'000'000, f);
  c.Sample(2'000'000'000, f);
  const Inventory& inv = c.inventory();

  const nlohmann::json none = nlohmann::json::array();
  const nlohmann::json& values = expected.contains("values") ? expected["values"] : none;
  for (const auto& [key, value] : values.items()) {
    const Channel* ch = ByKey(inv, key);
    ASSERT_NE(ch, nullptr) << board << ": no channel " << key;
    EXPECT_EQ(f.Get(ch->id), value.get<int64_t>()) << board << ": " << key;
  }
  for (const auto& key : expected.contains("absent") ? expected["absent"] : none) {
    const Channel* ch = ByKey(inv, key.get<std::string>());
    ASSERT_NE(ch, nullptr) << board << ": no channel " << key;
    EXPECT_FALSE(f.Get(ch->id)) << board << ": " << key << " should read as absent";
  }
  for (const auto& key : expected.contains("not_declared") ? expected["not_declared"] : none) {
    EXPECT_EQ(ByKey(inv, key.get<std::string>()), nullptr) << board << ": " << key;
  }
  const nlohmann::json& b = expected.contains("board") ? expected["board"] : none;
  const std::pair<const char*, const std::string*> strings[] = {
      {"model", &inv.board.model},       {"l4t", &inv.board.l4t},
      {"soc", &inv.board.soc},           {"nvpmodel", &inv.board.nvpmodel},
      {"hostname", &inv.board.hostname}, {"kernel", &inv.board.kernel}};
  for (const auto& [k, actual] : strings) {
    if (b.contains(k)) {
      EXPECT_EQ(*actual, b[k].get<std::string>()) << board << ": board " << k;
    }
  }
  if (b.contains("nvpmodel_id")) {
    EXPECT_EQ(inv.board.nvpmodel_id, b["nvpmodel_id"].get<int64_t>()) << board;
  }

  // No gated or failed reading ever shows up as a number.
  for (const auto& ch : inv.channels) {
    if (ch.kind == Kind::kThermal && f.Get(ch.id)) {
      EXPECT_GT(*f.Get(ch.id), -256000) << board << ": " << ch.Key();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BoardFixture, ::testing::ValuesIn(Boards()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (auto& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace edgemon
