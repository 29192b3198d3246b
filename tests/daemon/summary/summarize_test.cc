// Summarizer (daemon/summary/summarize.h): a real RingStore in a temp file,
// frames written, the model's Summary asserted. No gRPC object: the service
// only decodes, runs this and encodes (tests/daemon/service/service_test.cc checks
// that end to end).
#include "daemon/summary/summarize.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "tests/support/inventory.h"
#include "tests/support/known_history.h"
#include "tests/support/temp_tree.h"

namespace edgemon::summary {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Channel ids of the test inventory.
enum : ChannelId { kEnergy, kPower, kTemp, kGpu, kFixedTemp, kFanPower, kGpuLoad, kEncLoad };

class SummarizeTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(store::RingStoreOptions{}); }
  void TearDown() override {
    if (store_) (void)store_->Close();
  }

  void Open(store::RingStoreOptions options, const std::string& name = "edgemon.db") {
    if (store_) (void)store_->Close();
    auto st = store::RingStore::Open(tmp_.root() + "/" + name, options);
    ASSERT_TRUE(st.ok()) << st.status().message();
    store_ = std::move(st.value());
    inv_ = Inventory{};
    using testing::AddChannel;
    AddChannel(inv_, Kind::kRail, "VIN", Field::kEnergy).flags = kFlagCounter | kFlagInputRail;
    AddChannel(inv_, Kind::kRail, "VIN", Field::kPower).flags = kFlagInputRail;
    AddChannel(inv_, Kind::kThermal, "CPU-therm", Field::kTemp);
    AddChannel(inv_, Kind::kGpu, "gpu", Field::kFreq);
    AddChannel(inv_, Kind::kThermal, "fixed", Field::kTemp).flags = kFlagConstant;
    AddChannel(inv_, Kind::kRail, "FAN", Field::kPower).parent = "VIN";
    AddChannel(inv_, Kind::kGpu, "gpu", Field::kLoad);
    AddChannel(inv_, Kind::kEngine, "nvenc", Field::kLoad);
    for (Channel& c : inv_.channels) c.unit = UnitOf(c.field);
    store_->SetInventory(inv_);
  }

  Frame At(uint64_t seq, int64_t t0, int i) const {
    return testing::HistoryFrame(seq, t0, i, inv_.channels.size());
  }

  // testing::WriteKnownHistory on VIN, CPU-therm and the GPU, plus the
  // constant zone at 20 C and FAN at 300 + i mW.
  void WriteKnownHistory() {
    ASSERT_TRUE(testing::WriteKnownHistory(*store_, inv_.channels.size(),
                                           {kEnergy, kPower, kTemp, kGpu}, t0_,
                                           [](int i, Frame& f) {
                                             f.values[kFixedTemp] = 20000;
                                             f.values[kFanPower] = 300 + i;
                                           })
                    .ok());
  }

  Summary Run(int64_t from, int64_t to) { return Run(from, to, now_); }
  Summary Run(int64_t from, int64_t to, int64_t now) {
    auto s = Summarize(*store_, options_, from, to, now);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? *s : Summary{};
  }

  static const RailSummary* FindRail(const Summary& s, const std::string& name) {
    for (const auto& r : s.rails) {
      if (r.name == name) return &r;
    }
    return nullptr;
  }

  testing::TempTree tmp_;
  Inventory inv_;
  std::unique_ptr<store::RingStore> store_;
  SummaryOptions options_;
  // On a minute, so the rollup tier's first period starts at t0_ too.
  const int64_t t0_ = 1'700'000'040 * kSec;
  const int64_t now_ = t0_ + 1000 * kSec;
};

TEST_F(SummarizeTest, KnownRange) {
  WriteKnownHistory();
  const Summary s = Run(t0_ + 10 * kSec, t0_ + 20 * kSec);
  EXPECT_EQ(s.from_ns, t0_ + 10 * kSec);
  EXPECT_EQ(s.to_ns, t0_ + 20 * kSec);
  EXPECT_DOUBLE_EQ(s.duration_s, 10.0);
  EXPECT_FALSE(s.requested_from_ns || s.requested_to_ns);
  const RailSummary* vin = FindRail(s, "VIN");
  ASSERT_NE(vin, nullptr);
  EXPECT_TRUE(vin->input);
  EXPECT_NEAR(*vin->energy_mj, 50000.0, 1e-6);  // 5 W for 10 s
  EXPECT_NEAR(*vin->avg_power_mw, 5000.0, 1e-6);
  EXPECT_EQ(vin->peak_power_mw, 5800);
  // A rail without a counter: no energy, the mean and the peak of its samples.
  const RailSummary* fan = FindRail(s, "FAN");
  ASSERT_NE(fan, nullptr);
  EXPECT_EQ(fan->parent, "VIN");
  EXPECT_FALSE(fan->energy_mj);
  EXPECT_DOUBLE_EQ(*fan->avg_power_mw, (310 + 311 + 312 + 313 + 314 + 316 + 317 + 318 + 319) / 9.0);
  EXPECT_EQ(fan->peak_power_mw, 319);
  ASSERT_EQ(s.temps.size(), 1u);  // the constant zone is left out
  EXPECT_EQ(s.temps[0].name, "CPU-therm");
  EXPECT_EQ(s.temps[0].start_mc, 41000);
  EXPECT_EQ(s.temps[0].min_mc, 41000);
  EXPECT_EQ(s.temps[0].max_mc, 41900);
  // GPU residency: frames 10-12 at 1300.5 MHz, 13, 14 and 16-19 at 624.75 MHz.
  ASSERT_EQ(s.residency.size(), 1u);
  ASSERT_EQ(s.residency[0].khz_share.size(), 2u);
  EXPECT_EQ(s.residency[0].khz_share[0].first, 624750);
  EXPECT_NEAR(s.residency[0].khz_share[0].second, 6.0 / 9, 1e-12);
  EXPECT_NEAR(s.residency[0].khz_share[1].second, 3.0 / 9, 1e-12);
  EXPECT_EQ(s.samples, 9u);  // frames 10..19 without 15
  EXPECT_EQ(s.gaps, 1u);
  EXPECT_NE(s.note.find("short range: 9 frames"), std::string::npos) << s.note;
  EXPECT_EQ(s.bad_frames, 0u);
}

// A range reaching past the newest committed frame reads the frames still
// queued for the batched writer from its memory: nothing is committed, and
// each summary (energy from the store's counters, peaks, temperatures,
// residency, samples and gaps, a short range's period) is the one the same
// range gets once they are committed.
TEST_F(SummarizeTest, ARangeReachingTheQueueReadsItWithoutACommit) {
  WriteKnownHistory();  // committed, the newest frame at t0_ + 99 s
  store_->SetCommitInterval(3'600'000);
  const uint64_t seq = store_->next_seq() - 100;
  for (int i = 100; i < 130; ++i) {
    if (i == 117) continue;  // a gap among the queued frames
    Frame f = At(seq, t0_, i);
    f.values[kEnergy] = 5000LL * 99 + 9000LL * (i - 99);  // 9 W
    f.values[kPower] = 9000 + 100 * (i % 7);
    f.values[kTemp] = 49000 - 50 * (i - 100);
    f.values[kGpu] = i % 4 == 0 ? 1300500 : 624750;
    f.values[kFixedTemp] = 20000;
    f.values[kFanPower] = 300 + i;
    f.values[kGpuLoad] = 10 * i;
    ASSERT_NE(store_->Append(std::move(f)), 0u);
  }
  auto stored = [&] {
    auto st = store_->Stats();
    EXPECT_TRUE(st.ok());
    return st.ok() ? st->frames : int64_t{-1};
  };
  const int64_t committed = stored();
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {95 * kSec, 105 * kSec},         {10 * kSec, 130 * kSec},  {100 * kSec, 129 * kSec},
      {110 * kSec, 111 * kSec},        {120 * kSec, 200 * kSec}, {99500'000'000, 99600'000'000},
      {101500'000'000, 128250'000'000}};
  std::vector<Summary> before;
  for (const auto& [a, b] : ranges) before.push_back(Run(t0_ + a, t0_ + b));
  EXPECT_EQ(stored(), committed);
  const RailSummary* vin = FindRail(before[2], "VIN");
  ASSERT_NE(vin, nullptr);
  ASSERT_TRUE(vin->energy_mj);
  EXPECT_NEAR(*vin->energy_mj, 9000.0 * 29, 1e-6);  // 100 to 129: the queued frames' counters
  EXPECT_EQ(vin->peak_power_mw, 9600);
  EXPECT_EQ(before[2].samples, 28u);  // 100 to 128 without 117
  EXPECT_EQ(before[2].gaps, 1u);
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(stored(), committed + 29);
  for (size_t i = 0; i < ranges.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(Run(t0_ + ranges[i].first, t0_ + ranges[i].second), before[i]);
  }
}

// GPU and engine load: the mean and the peak over the samples that had a
// reading; an engine with no reading in the range is not listed (not 0 %).
TEST_F(SummarizeTest, LoadsAreMeanAndPeakOfThePresentSamples) {
  ASSERT_TRUE(testing::WriteKnownHistory(*store_, inv_.channels.size(),
                                         {kEnergy, kPower, kTemp, kGpu}, t0_,
                                         [](int i, Frame& f) {
                                           f.values[kGpuLoad] = 100 * (i % 10);
                                           if (i >= 10 && i % 2 == 0) f.values[kEncLoad] = 3 * i;
                                         })
                  .ok());
  Summary s = Run(t0_ + 10 * kSec, t0_ + 20 * kSec);  // frames 10..19 without 15
  ASSERT_EQ(s.loads.size(), 2u);
  EXPECT_EQ(s.loads[0].kind, "gpu");
  EXPECT_EQ(s.loads[0].name, "gpu");
  EXPECT_DOUBLE_EQ(s.loads[0].mean_permille,
                   (0 + 100 + 200 + 300 + 400 + 600 + 700 + 800 + 900) / 9.0);
  EXPECT_EQ(s.loads[0].peak_permille, 900);
  EXPECT_EQ(s.loads[1].kind, "engine");
  EXPECT_EQ(s.loads[1].name, "nvenc");
  EXPECT_DOUBLE_EQ(s.loads[1].mean_permille, 3 * (10 + 12 + 14 + 16 + 18) / 5.0);
  EXPECT_EQ(s.loads[1].peak_permille, 54);
  s = Run(t0_ + 1 * kSec, t0_ + 9 * kSec);  // no engine reading there
  ASSERT_EQ(s.loads.size(), 1u);
  EXPECT_EQ(s.loads[0].name, "gpu");
}

// The frames are read in pages of page_frames, one ReadPage each, so the
// caller can yield between them; where the pages split changes nothing.
TEST_F(SummarizeTest, PagesYieldBetweenThemAndChangeNothing) {
  WriteKnownHistory();
  options_.raw_frames = true;  // every frame read (span aggregates: span_summary_test.cc)
  options_.page_frames = 1000;
  const Summary whole = Run(t0_, t0_ + 60 * kSec);
  EXPECT_EQ(whole.samples, 59u);
  options_.page_frames = 4;
  auto run = Summarizer::Start(*store_, options_, t0_, t0_ + 60 * kSec, now_);
  ASSERT_TRUE(run.ok()) << run.status().message();
  size_t pages = 0;
  while (!run->done()) {
    ASSERT_TRUE(run->ReadPage().ok());
    ++pages;
  }
  EXPECT_EQ(pages, 15u);  // 59 frames, 4 a page
  EXPECT_EQ(run->summary(), whole);
  options_.page_frames = 7;
  EXPECT_EQ(Run(t0_, t0_ + 60 * kSec), whole);
}

// A counter that stood still drew 0 J: a measurement, not an absence; a
// rail without a power sample in the range has no peak, never a peak of 0.
TEST_F(SummarizeTest, ZeroEnergyIsMeasuredAndNoSampleMeansNoPeak) {
  const uint64_t seq = store_->next_seq();
  for (int i = 0; i < 20; ++i) {
    Frame f = At(seq, t0_, i);
    f.values[kEnergy] = 7000;
    f.values[kTemp] = 0;  // 0 C is a temperature
    store_->Append(f);
  }
  ASSERT_TRUE(store_->Flush().ok());
  const Summary s = Run(t0_ + 2 * kSec, t0_ + 12 * kSec);
  const RailSummary* vin = FindRail(s, "VIN");
  ASSERT_NE(vin, nullptr);
  EXPECT_EQ(vin->energy_mj, std::optional<double>(0.0));
  EXPECT_EQ(vin->avg_power_mw, std::optional<double>(0.0));
  EXPECT_FALSE(vin->peak_power_mw);
  EXPECT_EQ(FindRail(s, "FAN"), nullptr);  // no counter, no sample: not listed
  ASSERT_EQ(s.temps.size(), 1u);
  EXPECT_EQ(s.temps[0].start_mc, 0);
  EXPECT_EQ(s.temps[0].max_mc, 0);
}

TEST_F(SummarizeTest, ClippedToTheStoredRangeAndToNow) {
  WriteKnownHistory();
  // Before the oldest stored data: clipped, and the summary says so.
  Summary s = Run(t0_ - 100 * kSec, t0_ + 10 * kSec);
  EXPECT_EQ(s.requested_from_ns, t0_ - 100 * kSec);
  EXPECT_EQ(s.from_ns, t0_);
  EXPECT_DOUBLE_EQ(s.duration_s, 10.0);
  EXPECT_NEAR(*FindRail(s, "VIN")->energy_mj, 50000.0, 1e-6);
  // Past now: measured up to now, noted beyond the clock skew allowed.
  const int64_t now = t0_ + 99 * kSec;
  s = Run(t0_ + 90 * kSec, now + 60 * kSec, now);
  EXPECT_EQ(s.to_ns, now);
  EXPECT_EQ(s.requested_to_ns, now + 60 * kSec);
  EXPECT_NEAR(*FindRail(s, "VIN")->energy_mj, 45000.0, 1e-6);
  s = Run(t0_ + 90 * kSec, now + kSec / 2, now);
  EXPECT_EQ(s.to_ns, now);
  EXPECT_FALSE(s.requested_to_ns);  // half a second of skew is not worth a remark
  // The whole int64 range: clipped at both ends, no overflow.
  s = Run(kInt64Min, kInt64Max, now);
  EXPECT_EQ(s.from_ns, t0_);
  EXPECT_EQ(s.to_ns, now);
  EXPECT_EQ(s.requested_from_ns, kInt64Min);
  EXPECT_EQ(s.requested_to_ns, kInt64Max);
  EXPECT_DOUBLE_EQ(s.duration_s, 99.0);
  EXPECT_EQ(s.samples, 98u);  // frames 0..98 without 15 (to is exclusive)
}

TEST_F(SummarizeTest, NoDataIsSaidNotZero) {
  Summary s = Run(t0_, t0_ + 10 * kSec);
  EXPECT_EQ(s.note, "no data in this range: nothing is stored yet");
  EXPECT_TRUE(s.rails.empty());
  EXPECT_EQ(s.samples, 0u);
  WriteKnownHistory();
  s = Run(t0_ - 100 * kSec, t0_ - 50 * kSec);
  EXPECT_EQ(s.note,
            "no data in this range: the oldest data held is at " + std::to_string(t0_) + " ns");
  EXPECT_EQ(s.from_ns, t0_ - 100 * kSec);  // not clipped into the data
  EXPECT_TRUE(s.rails.empty() && s.temps.empty());
}

// A range that ended the instant it began measures 1 ns (NonEmptyEnd).
TEST_F(SummarizeTest, AnOpenRangeUpToNowIsNeverEmpty) {
  WriteKnownHistory();
  const int64_t now = t0_ + 50 * kSec;
  const Summary s = Run(now, now + 10 * kSec, now);
  EXPECT_EQ(s.from_ns, now);
  EXPECT_EQ(s.to_ns, now + 1);
  EXPECT_EQ(s.requested_to_ns, now + 10 * kSec);
}

TEST_F(SummarizeTest, GapsCountMissingSeqsAndLongIntervals) {
  const uint64_t seq = store_->next_seq();
  for (int i = 0; i < 30; ++i) {
    if (i == 5 || i == 6) continue;  // two seqs missing
    Frame f = At(seq, t0_, i);
    if (i >= 20) {  // seq continuous, but three periods unsampled before frame 20
      f.realtime_ns += 3 * kSec;
      f.boottime_ns += 3 * kSec;
    }
    f.values[kPower] = 4000;
    store_->Append(f);
  }
  ASSERT_TRUE(store_->Flush().ok());
  options_.page_frames = 3;  // gaps across page edges count too
  const Summary s = Run(t0_, t0_ + 40 * kSec);
  EXPECT_EQ(s.samples, 28u);
  EXPECT_EQ(s.gaps, 2u + 3u);
}

TEST_F(SummarizeTest, AWallClockStepInTheRangeIsNoted) {
  // Committed, then still queued for the batched writer: a read of the
  // queue commits the step's row first, so the note holds it either way.
  for (bool queued : {false, true}) {
    SCOPED_TRACE(queued);
    Open(store::RingStoreOptions{}, queued ? "queued.db" : "committed.db");
    WriteKnownHistory();
    if (queued) store_->SetCommitInterval(3'600'000);
    // The wall clock steps 500 s forward after the known history.
    const uint64_t seq = store_->next_seq();
    for (int i = 0; i < 20; ++i) {
      Frame f = At(seq, t0_ + 600 * kSec, i);
      f.boottime_ns = 1100 * kSec + i * kSec;
      f.values[kPower] = 4000;
      store_->Append(f);
    }
    if (!queued) {
      ASSERT_TRUE(store_->Flush().ok());
    }
    const Summary across = Run(t0_ + 50 * kSec, t0_ + 610 * kSec);
    EXPECT_NE(across.note.find("wall clock stepped 1 time(s)"), std::string::npos) << across.note;
    EXPECT_NE(across.note.find("by 500000 ms"), std::string::npos) << across.note;
    EXPECT_EQ(across.samples, 50u + 10u);  // 50..99 and the ten after the step
    const Summary before = Run(t0_ + 10 * kSec, t0_ + 60 * kSec);
    EXPECT_EQ(before.note.find("stepped"), std::string::npos) << before.note;
  }
}

// The rates that held come from the sampler's log; without it they are
// unknown (absent), never 0.
TEST_F(SummarizeTest, RailRatesFromTheRateLog) {
  WriteKnownHistory();
  EXPECT_FALSE(Run(t0_, t0_ + 10 * kSec).min_rail_rate_hz);
  int64_t asked_from = 0, asked_to = 0;
  options_.rates = [&](int64_t from, int64_t to) -> std::optional<RateRange> {
    asked_from = from;
    asked_to = to;
    if (from < t0_ + 5 * kSec) return std::nullopt;  // before the log begins
    return RateRange{50, 1000};
  };
  Summary s = Run(t0_ - kSec, t0_ + 10 * kSec);
  EXPECT_EQ(asked_from, t0_);  // asked over the measured range, not the requested one
  EXPECT_EQ(asked_to, t0_ + 10 * kSec);
  EXPECT_FALSE(s.min_rail_rate_hz || s.max_rail_rate_hz);
  s = Run(t0_ + 10 * kSec, t0_ + 20 * kSec);
  EXPECT_EQ(s.min_rail_rate_hz, 50.0);
  EXPECT_EQ(s.max_rail_rate_hz, 1000.0);
}

// The rate rails were integrated at is stated once, by the report; the
// daemon's note never states another.
TEST_F(SummarizeTest, ShortRangeNoteSaysWhatIsCoarse) {
  WriteKnownHistory();
  options_.energy_rate_hz = 500;
  Summary s = Run(t0_ + 10 * kSec, t0_ + 15 * kSec);
  EXPECT_NE(s.note.find("short range: 5 frames; temperatures"), std::string::npos) << s.note;
  EXPECT_EQ(s.note.find("Hz"), std::string::npos) << s.note;
  options_.energy_rate_hz = 0;
  s = Run(t0_ + 10 * kSec, t0_ + 15 * kSec);
  EXPECT_NE(s.note.find("energy, averages and edges are uncertain"), std::string::npos) << s.note;
  EXPECT_EQ(Run(t0_ + 10 * kSec, t0_ + 40 * kSec).note, "");  // 29 frames: nothing to say
}

// Past the newest stored frame the sampler's live counters answer: energy
// from the readings (held at the last power sample up to the instant
// asked), peaks from the rail-rate samples.
TEST_F(SummarizeTest, LiveCountersAnswerPastTheNewestFrame) {
  WriteKnownHistory();
  const int64_t newest = t0_ + 99 * kSec;  // VIN's counter 495000 mJ
  LiveEnergy live;
  auto keys = std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{inv_.channels[kEnergy].Key()});
  live.Publish(keys, {newest, {495000.0}, {5000}});
  live.Publish(keys, {newest + 10'000'000, {495070.0}, {7000}});  // 7 W for 10 ms
  options_.live_energy = &live;
  const int64_t now = newest + 12'000'000;
  Summary s = Run(newest, newest + 11'000'000, now);
  const RailSummary* vin = FindRail(s, "VIN");
  ASSERT_NE(vin, nullptr);
  EXPECT_NEAR(*vin->energy_mj, 70.0 + 7.0, 1e-6);  // + 1 ms at the last sample's 7 W
  EXPECT_NEAR(s.duration_s, 0.011, 1e-6);  // (wall times of 1.7e18 ns: doubles step by 256 ns)
  EXPECT_NEAR(*vin->avg_power_mw, *vin->energy_mj / s.duration_s, 1e-6);
  EXPECT_EQ(vin->peak_power_mw, 7000);  // the live samples' peak, above the frame's 5800
  // Between the live samples, none in it: energy, and no peak.
  s = Run(newest + 1'000'000, newest + 3'000'000, now);
  vin = FindRail(s, "VIN");
  ASSERT_NE(vin, nullptr);
  EXPECT_TRUE(vin->energy_mj);
  EXPECT_FALSE(vin->peak_power_mw);
}

// Raw frames kept 30 s, rollups every 10 s: an older range is summarized
// from the rollup tier, which has no first reading: start_mc is absent,
// never the range's minimum standing in for it.
TEST_F(SummarizeTest, FromTheRollupTierTheFirstReadingIsAbsentNotTheMinimum) {
  store::RingStoreOptions o;
  o.raw_retention_ns = 30 * kSec;
  o.rollup_period_ns = 10 * kSec;
  Open(o);
  const uint64_t seq = store_->next_seq();
  for (int i = 0; i < 200; ++i) {
    Frame f = At(seq, t0_, i);
    f.values[kTemp] = 40000 + 100 * i;
    f.values[kPower] = 4000 + i;
    f.values[kGpuLoad] = 10 * (i % 50);
    store_->Append(f);
  }
  ASSERT_TRUE(store_->Flush().ok());
  auto stats = store_->Stats();
  ASSERT_TRUE(stats.ok() && stats->oldest_ns);
  ASSERT_GT(*stats->oldest_ns, t0_ + 100 * kSec) << "the raw tier still holds the range";
  const Summary s = Run(t0_ + 20 * kSec, t0_ + 80 * kSec);
  ASSERT_EQ(s.temps.size(), 1u);
  EXPECT_LT(s.temps[0].min_mc, s.temps[0].max_mc);
  EXPECT_FALSE(s.temps[0].start_mc) << "start " << *s.temps[0].start_mc;
  const RailSummary* vin = FindRail(s, "VIN");
  ASSERT_NE(vin, nullptr);
  EXPECT_EQ(vin->peak_power_mw, 4079);  // the rollup rows' maximum
  // Loads from the rollup rows too: frames 20..79, 10 * (i % 50) permille.
  ASSERT_EQ(s.loads.size(), 1u);
  EXPECT_EQ(s.loads[0].name, "gpu");
  EXPECT_EQ(s.loads[0].peak_permille, 490);
  EXPECT_NEAR(s.loads[0].mean_permille, (10.0 * (20 + 49) * 30 / 2 + 10.0 * (0 + 29) * 30 / 2) / 60,
              1e-9);
  EXPECT_EQ(s.samples, 0u);  // no raw frame left in the range
}

}  // namespace
}  // namespace edgemon::summary
