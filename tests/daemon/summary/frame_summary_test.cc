// FrameSummary: the frame-derived parts of a Summary, folded page by page;
// no store, no gRPC. The result must not depend on where pages split.
#include "daemon/summary/frame_summary.h"

#include <gtest/gtest.h>

namespace edgemon::summary {
namespace {

constexpr int64_t kSec = 1'000'000'000;

store::StoredChannel Col(Kind k, const std::string& name, Field f, uint32_t flags = 0) {
  store::StoredChannel c;
  c.channel.kind = k;
  c.channel.name = name;
  c.channel.field = f;
  c.channel.flags = flags;
  c.key = c.channel.Key();
  return c;
}

std::vector<store::StoredChannel> Columns() {
  return {Col(Kind::kRail, "VDD_IN", Field::kPower), Col(Kind::kThermal, "cpu", Field::kTemp),
          Col(Kind::kGpu, "gpu", Field::kFreq),
          Col(Kind::kThermal, "fixed", Field::kTemp, kFlagConstant)};
}

// 20 frames 1 s apart; seq 5 missing; frame 12 lacks the temperature.
std::vector<Frame> Frames() {
  std::vector<Frame> out;
  for (int i = 0; i < 20; ++i) {
    if (i == 5) continue;
    Frame f;
    f.seq = 100 + static_cast<uint64_t>(i);
    f.realtime_ns = 1000 * kSec + i * kSec;
    f.values = {4000 + (i % 4) * 100, i == 12 ? std::optional<int64_t>() : 40000 + 10 * i,
                i < 5 ? 600000 : 900000, 20000};
    out.push_back(f);
  }
  return out;
}

Summary Fold(size_t page) {
  FrameSummary fs(Columns(), kSec);
  auto all = Frames();
  for (size_t i = 0; i < all.size(); i += page) {
    fs.Add(std::vector<Frame>(all.begin() + static_cast<long>(i),
                              all.begin() + static_cast<long>(std::min(all.size(), i + page))));
  }
  Summary s;
  fs.Fill(&s, true);
  EXPECT_EQ(fs.column(0)->max, 4300);
  EXPECT_DOUBLE_EQ(fs.column(0)->avg(), (4000.0 * 19 + 100.0 * (0 + 1 + 2 + 3) * 5 - 100.0) / 19);
  return s;
}

TEST(FrameSummary, PagesGiveTheSameResultAsOneRead) {
  Summary one = Fold(1000);
  for (size_t page : {1u, 2u, 3u, 7u}) EXPECT_EQ(Fold(page), one) << "page " << page;
  EXPECT_EQ(one.samples, 19u);
  EXPECT_EQ(one.gaps, 1u);          // seq 105
  ASSERT_EQ(one.temps.size(), 1u);  // the constant zone is left out
  EXPECT_EQ(one.temps[0].start_mc, 40000);
  EXPECT_EQ(one.temps[0].min_mc, 40000);
  EXPECT_EQ(one.temps[0].max_mc, 40190);
  ASSERT_EQ(one.residency.size(), 1u);
  ASSERT_EQ(one.residency[0].khz_share.size(), 2u);  // by frequency
  EXPECT_EQ(one.residency[0].khz_share[0].first, 600000);
  EXPECT_NEAR(one.residency[0].khz_share[0].second, 5.0 / 19, 1e-12);
  EXPECT_EQ(one.residency[0].khz_share[1].first, 900000);
  EXPECT_NEAR(one.residency[0].khz_share[1].second, 14.0 / 19, 1e-12);
}

TEST(FrameSummary, TimeGapsAcrossPagesAndNoValueMeansNoColumn) {
  FrameSummary fs(Columns(), kSec);
  Frame a, b;
  a.seq = 1;
  a.realtime_ns = 0;
  a.values = {std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  b = a;
  b.seq = 2;
  b.realtime_ns = 4 * kSec;  // three frame periods unsampled, seq continuous
  fs.Add({a});
  fs.Add({b});
  EXPECT_EQ(fs.gaps(), 3u);
  EXPECT_EQ(fs.samples(), 2u);
  EXPECT_FALSE(fs.column(0));  // no power sample: no peak, never 0
  Summary s;
  fs.Fill(&s, true);
  EXPECT_TRUE(s.temps.empty());
  EXPECT_TRUE(s.residency.empty());
}

}  // namespace
}  // namespace edgemon::summary
