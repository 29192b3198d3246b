// record --nvtx's pure pieces: reading the injection library's file (bad
// lines, escapes, ranges never ended) and the energy per range name
// (summed over occurrences, missing never counted as 0).
#include <gtest/gtest.h>

#include <sstream>

#include "client/cli/record_nvtx.h"

namespace edgemon::cli::record {
namespace {

client::Summary WithEnergy(std::optional<double> in_mj, std::optional<double> soc_mj) {
  client::Summary s;
  client::RailSummary in, soc;
  in.name = "VDD_IN";
  in.input = true;
  in.energy_mj = in_mj;
  soc.name = "VDD_SOC";
  soc.parent = "VDD_IN";
  soc.energy_mj = soc_mj;
  s.rails = {in, soc};
  return s;
}

TEST(NvtxRanges, ParsesEscapesAndLeavesOutWhatDoesNotParse) {
  std::istringstream in(
      "# edgemon-nvtx 1\n"
      "P\t10\t11\t0\t2000\t3000\t\tinfer\n"
      "P\t10\t11\t1\t1000\t1500\tapp\ttab\\there\\\\and\\nline\n"
      "S\t10\t12\t0\t500\t4000\t\tload\n"
      "P\t10\t11\t0\t5000\t-1\t\tnever popped\n"
      "P\t10\t11\t0\t9000\t8000\t\tends before it starts\n"
      "X\t10\t11\t0\t1\t2\t\tbad kind\n"
      "P\t10\t11\tdeep\t1\t2\t\tbad depth\n"
      "P\t10\t11\t-1\t1\t2\t\tnegative depth\n"
      "P\t10\t11\t0\t1\t2\tmissing name\n"
      "P\t10\t11\t0\t99999999999999999999\t2\t\ttoo big\n"
      "\n");
  std::vector<std::string> notes;
  auto ranges = ParseNvtxRanges(in, &notes);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].name, "load");  // in start order
  EXPECT_EQ(ranges[0].kind, 'S');
  EXPECT_EQ(ranges[1].domain, "app");
  EXPECT_EQ(ranges[1].name, "tab\there\\and\nline");
  EXPECT_EQ(ranges[1].depth, 1);
  EXPECT_EQ(ranges[2].start_ns, 2000);
  EXPECT_EQ(ranges[2].end_ns, 3000);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "6 NVTX lines that did not parse were left out");
  EXPECT_EQ(notes[1], "1 NVTX range still open when its process or thread ended were left out");
}

TEST(NvtxRanges, EnergyPerNameIsTheSumOverOccurrencesAndMissingIsNull) {
  std::vector<NvtxRange> ranges(4);
  ranges[0].name = ranges[1].name = "infer";
  ranges[2].name = "preprocess";
  ranges[3].name = "post";
  for (size_t i = 0; i < ranges.size(); ++i) {
    ranges[i].start_ns = static_cast<int64_t>(i) * 1'000'000'000;
    ranges[i].end_ns = ranges[i].start_ns + 500'000'000;
  }
  ranges[1].depth = 2;
  std::vector<std::optional<client::Summary>> summaries = {
      WithEnergy(1000, 300), WithEnergy(1500, std::nullopt), WithEnergy(200, 50), std::nullopt};
  auto stats = NvtxStats(ranges, summaries);
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].name, "infer");
  EXPECT_EQ(stats[0].count, 2u);
  EXPECT_DOUBLE_EQ(stats[0].total_s, 1.0);
  EXPECT_EQ(stats[0].max_depth, 2u);
  EXPECT_DOUBLE_EQ(*stats[0].rails[0].energy_mj, 2500);
  EXPECT_FALSE(stats[0].rails[1].energy_mj);  // one occurrence without VDD_SOC: no sum
  EXPECT_DOUBLE_EQ(*ranges[1].energy_mj, 1500);
  EXPECT_TRUE(stats[1].summarized);
  EXPECT_FALSE(stats[2].summarized);  // not summarized: no energy, never 0
  NvtxData data;
  data.stats = stats;
  auto j = NvtxJson(data);
  EXPECT_DOUBLE_EQ(j[0]["energy_j"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j[0]["avg_w"].get<double>(), 2.5);
  EXPECT_TRUE(j[0]["rails"][1]["energy_j"].is_null());
  EXPECT_TRUE(j[0]["domain"].is_null());
  EXPECT_TRUE(j[2]["energy_j"].is_null());
  EXPECT_TRUE(j[2]["avg_w"].is_null());
  std::string text = RenderNvtx(data);
  EXPECT_NE(text.find("infer"), std::string::npos);
  EXPECT_NE(text.find("—"), std::string::npos);  // post: no energy
}

}  // namespace
}  // namespace edgemon::cli::record
