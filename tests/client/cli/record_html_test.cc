// report.html of the record bundle: the data it embeds (ReportData), the
// escaping that keeps that data inside its <script> element, and the template.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "client/cli/record_bundle.h"
#include "tests/support/inventory.h"

namespace edgemon::cli::record {
namespace {

constexpr const char* kHostile = "</script><script>alert(1)</script><!-- & \xe2\x80\xa8 -->";

size_t Count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

// The text of the data element of a report page.
std::string DataElement(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"edgemon-data\">";
  size_t at = html.find(open);
  if (at == std::string::npos) return "";
  at += open.size();
  return html.substr(at, html.find("</script>", at) - at);
}

Inventory TwoRails() {
  Inventory inv;
  testing::AddChannel(inv, Kind::kRail, "VDD_IN", Field::kPower).flags = kFlagInputRail;
  testing::AddChannel(inv, Kind::kRail, "VDD_SOC", Field::kPower);
  testing::AddChannel(inv, Kind::kThermal, "tj-therm", Field::kTemp);
  testing::AddChannel(inv, Kind::kGpu, "gpu", Field::kFreq);
  testing::AddChannel(inv, Kind::kMemory, "ram", Field::kUsed);  // the memory chart only
  return inv;
}

Report TwoRailReport() {
  Report r;
  r.label = kHostile;
  r.command = {"sleep", "3"};
  r.exit_code = 0;
  r.run_start_ns = 1'800'000'000'000'000'000;
  r.run_end_ns = r.run_start_ns + 3'000'000'000;
  r.summary.from_ns = r.run_start_ns;
  r.summary.to_ns = r.run_end_ns;
  r.summary.duration_s = 3.0;
  auto rail = [](std::string name, std::string parent, std::optional<double> mj) {
    client::RailSummary rs;
    rs.name = std::move(name);
    rs.input = parent.empty();
    rs.parent = std::move(parent);
    rs.energy_mj = mj;
    return rs;
  };
  r.summary.rails = {rail("VDD_IN", "", 9000), rail("VDD_SOC", "VDD_IN", 3000)};
  client::Summary warm;
  warm.duration_s = 1.0;
  warm.rails = {rail("VDD_IN", "", 9000), rail("VDD_SOC", "VDD_IN", std::nullopt)};
  r.phases.push_back({7, kHostile, r.run_start_ns + 1'000'000'000, std::nullopt, warm});
  r.phases.push_back({8, "timed", r.run_start_ns + 2'000'000'000, r.run_end_ns, std::nullopt});
  return r;
}

std::vector<Frame> ThreeFrames() {
  std::vector<Frame> frames;
  for (int i = 0; i < 3; ++i) {
    Frame f;
    f.seq = i;
    f.realtime_ns = 1'800'000'000'000'000'000 + i * 1'000'000'123LL;
    f.values = {5000 + i, i == 1 ? std::nullopt : std::optional<int64_t>(1500), 45000, std::nullopt,
                100};
    frames.push_back(f);
  }
  return frames;
}

TEST(ScriptSafeJson, NothingEndsOrCommentsOutTheScriptElement) {
  nlohmann::json data = {{"label", kHostile}, {"list", {"a<b", "c>d", "e&f"}}};
  std::string text = ScriptSafeJson(data);
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_EQ(text.find('>'), std::string::npos) << text;
  EXPECT_EQ(text.find('&'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xe2\x80\xa8"), std::string::npos) << text;
  EXPECT_NE(text.find("\\u003c/script\\u003e"), std::string::npos) << text;
  EXPECT_NE(text.find("\\u2028"), std::string::npos) << text;
  EXPECT_EQ(nlohmann::json::parse(text), data);  // the same data, read back
}

TEST(ReportHtml, TheDataStaysInItsElement) {
  nlohmann::json data = ReportData(TwoRailReport(), ThreeFrames(), TwoRails());
  std::string html = ReportHtml(data);
  // As many script elements as the template has: the label made none.
  EXPECT_EQ(Count(html, "<script"), Count(ReportTemplate(), "<script"));
  EXPECT_EQ(Count(html, "</script"), Count(ReportTemplate(), "</script"));
  EXPECT_EQ(Count(html, "<!--"), Count(ReportTemplate(), "<!--"));
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  std::string embedded = DataElement(html);
  ASSERT_FALSE(embedded.empty());
  EXPECT_EQ(nlohmann::json::parse(embedded), data);
  EXPECT_EQ(html.find("@EDGEMON_DATA@"), std::string::npos);
}

TEST(ReportTemplate, OneSlotAndNoAddressToFetch) {
  std::string_view t = ReportTemplate();
  EXPECT_GT(t.size(), 1000u);
  EXPECT_EQ(Count(t, "@EDGEMON_DATA@"), 1u);
  EXPECT_EQ(
      Count(t, "<script type=\"application/json\" id=\"edgemon-data\">@EDGEMON_DATA@</script>"),
      1u);
  // Self-contained: nothing loaded from anywhere, not even a namespace URL.
  EXPECT_EQ(Count(t, "http:"), 0u);
  EXPECT_EQ(Count(t, "https:"), 0u);
  EXPECT_EQ(Count(t, "//cdn"), 0u);
  EXPECT_EQ(Count(t, " src="), 0u);
  EXPECT_EQ(Count(t, "<link"), 0u);
  EXPECT_EQ(Count(t, "@import"), 0u);
}

TEST(ReportData, SeriesWithGapsPhaseTreesAndTheSummary) {
  Report r = TwoRailReport();
  auto inv = TwoRails();
  nlohmann::json d = ReportData(r, ThreeFrames(), inv);
  EXPECT_EQ(d["format"], "edgemon-report");
  EXPECT_EQ(d["version"], 1);
  EXPECT_EQ(d["summary"], SummaryJson(r, inv));
  const auto& t = d["series"]["t_s"];
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(t[2].get<double>(), 2.000000);  // to the microsecond
  const auto& groups = d["series"]["groups"];
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_EQ(groups[0]["id"], "power");
  EXPECT_EQ(groups[0]["unit"], "W");
  EXPECT_DOUBLE_EQ(groups[0]["scale"].get<double>(), 1e-3);
  ASSERT_EQ(groups[0]["lines"].size(), 2u);
  EXPECT_EQ(groups[0]["lines"][0]["name"], "VDD_IN");
  EXPECT_EQ(groups[0]["lines"][0]["values"], nlohmann::json({5000, 5001, 5002}));
  // A frame without the value is a gap (null), never 0.
  EXPECT_EQ(groups[0]["lines"][1]["values"], nlohmann::json({1500, nullptr, 1500}));
  EXPECT_EQ(groups[1]["id"], "temp");
  EXPECT_EQ(groups[1]["lines"][0]["name"], "tj-therm");
  EXPECT_EQ(groups[2]["id"], "clock");
  EXPECT_EQ(groups[2]["lines"][0]["values"], nlohmann::json({nullptr, nullptr, nullptr}));
  // Beside power: the load (no load channel here: no line) and the memory in use in MiB.
  EXPECT_EQ(groups[3]["id"], "load");
  EXPECT_TRUE(groups[3]["lines"].empty());
  EXPECT_EQ(groups[4]["id"], "memory");
  EXPECT_EQ(groups[4]["unit"], "MiB");
  EXPECT_DOUBLE_EQ(groups[4]["scale"].get<double>(), 1.0 / 1024);
  ASSERT_EQ(groups[4]["lines"].size(), 1u);
  EXPECT_EQ(groups[4]["lines"][0]["name"], "ram");
  EXPECT_EQ(groups[4]["lines"][0]["values"], nlohmann::json({100, 100, 100}));
  // Each phase's own rail tree: the unmeasured sub-rail and the remainder are null.
  const auto& trees = d["phase_rail_trees"];
  ASSERT_EQ(trees.size(), 2u);
  ASSERT_EQ(trees[0].size(), 3u);
  EXPECT_EQ(trees[0][0]["name"], "VDD_IN");
  EXPECT_DOUBLE_EQ(trees[0][0]["energy_j"].get<double>(), 9.0);
  EXPECT_TRUE(trees[0][1]["energy_j"].is_null());
  EXPECT_TRUE(trees[0][2]["remainder"].get<bool>());
  EXPECT_TRUE(trees[0][2]["energy_j"].is_null());
  EXPECT_TRUE(trees[1].is_null());  // no summary
}

}  // namespace
}  // namespace edgemon::cli::record
