// Summaries from span aggregates (store invariant 15) against summaries read
// from every frame (SummaryOptions::raw_frames): a real store in a temp dir,
// hours of frames with varying values and clock frequencies, absent values,
// time gaps, seq holes, a stretch at another rate, wall-clock steps and a
// restart; every field of a few hundred random ranges must be equal. Sums
// of integers are exactly equal as doubles (every partial sum is far below
// 2^53), so averages and residency shares are compared exactly too.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "daemon/summary/summarize.h"
#include "tests/support/inventory.h"
#include "tests/support/store_schema.h"
#include "tests/support/temp_tree.h"

namespace edgemon::summary {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'017'300'000'000;  // not on a period's edge

enum : ChannelId { kEnergy, kPower, kTemp, kGpu, kCpu, kFanPower, kGpuLoad, kEncLoad };

Inventory TestInventory() {
  Inventory inv;
  using testing::AddChannel;
  AddChannel(inv, Kind::kRail, "VIN", Field::kEnergy).flags = kFlagCounter | kFlagInputRail;
  AddChannel(inv, Kind::kRail, "VIN", Field::kPower).flags = kFlagInputRail;
  AddChannel(inv, Kind::kThermal, "CPU-therm", Field::kTemp);
  AddChannel(inv, Kind::kGpu, "gpu", Field::kFreq);
  AddChannel(inv, Kind::kCpu, "cpu0", Field::kFreq);
  AddChannel(inv, Kind::kRail, "FAN", Field::kPower).parent = "VIN";
  AddChannel(inv, Kind::kGpu, "gpu", Field::kLoad);
  AddChannel(inv, Kind::kEngine, "nvenc", Field::kLoad);
  for (Channel& c : inv.channels) c.unit = UnitOf(c.field);
  return inv;
}

// Writes frames from realtime `rt`, boottime `bt`, seq `seq` on: `n` frames
// `step` apart, values drawn from `rng`.
struct Writer {
  std::mt19937_64 rng{7};
  uint64_t seq = 1;
  int64_t rt = kT0;
  int64_t bt = 1000 * kSec;
  int64_t energy = 0;
  void Write(store::RingStore& s, int n, int64_t step = kSec) {
    static const int64_t kFreqs[] = {306000, 612000, 918000, 1300500};
    for (int i = 0; i < n; ++i) {
      Frame f;
      f.seq = seq++;
      f.realtime_ns = rt;
      f.boottime_ns = bt;
      f.values.resize(8);
      const int64_t p = 3000 + static_cast<int64_t>(rng() % 5000);
      energy += p;
      f.values[kEnergy] = energy;
      if (rng() % 50 != 0) f.values[kPower] = p;
      if (rng() % 40 != 0) f.values[kTemp] = 40000 + static_cast<int64_t>(rng() % 9000);
      f.values[kGpu] = kFreqs[rng() % 4];
      if (rng() % 30 != 0) f.values[kCpu] = kFreqs[(rng() % 7) / 2];
      f.values[kFanPower] = 200 + static_cast<int64_t>(rng() % 100);
      f.values[kGpuLoad] = static_cast<int64_t>(rng() % 1001);
      if (rng() % 4 == 0) f.values[kEncLoad] = static_cast<int64_t>(rng() % 400);
      s.Append(f);
      rt += step;
      bt += step;
    }
  }
};

std::unique_ptr<store::RingStore> Open(const std::string& path,
                                       store::RingStoreOptions options = {}) {
  auto st = store::RingStore::Open(path, std::move(options));
  EXPECT_TRUE(st.ok()) << st.status().message();
  if (!st.ok()) return nullptr;
  (*st)->SetInventory(TestInventory());
  return std::move(st.value());
}

// Every field of `a` and `b`, said where they differ.
void ExpectSame(const Summary& raw, const Summary& spans, const std::string& what) {
  EXPECT_EQ(raw.samples, spans.samples) << what;
  EXPECT_EQ(raw.gaps, spans.gaps) << what;
  EXPECT_EQ(raw.note, spans.note) << what;
  EXPECT_EQ(raw.bad_frames, spans.bad_frames) << what;
  ASSERT_EQ(raw.rails.size(), spans.rails.size()) << what;
  for (size_t i = 0; i < raw.rails.size(); ++i) {
    EXPECT_EQ(raw.rails[i].name, spans.rails[i].name) << what;
    EXPECT_EQ(raw.rails[i].energy_mj, spans.rails[i].energy_mj) << what;
    EXPECT_EQ(raw.rails[i].avg_power_mw, spans.rails[i].avg_power_mw) << what;
    EXPECT_EQ(raw.rails[i].peak_power_mw, spans.rails[i].peak_power_mw) << what;
  }
  ASSERT_EQ(raw.temps.size(), spans.temps.size()) << what;
  for (size_t i = 0; i < raw.temps.size(); ++i) {
    EXPECT_EQ(raw.temps[i].start_mc, spans.temps[i].start_mc) << what;
    EXPECT_EQ(raw.temps[i].min_mc, spans.temps[i].min_mc) << what;
    EXPECT_EQ(raw.temps[i].max_mc, spans.temps[i].max_mc) << what;
  }
  ASSERT_EQ(raw.residency.size(), spans.residency.size()) << what;
  for (size_t i = 0; i < raw.residency.size(); ++i) {
    EXPECT_EQ(raw.residency[i].khz_share, spans.residency[i].khz_share) << what;
  }
  ASSERT_EQ(raw.loads.size(), spans.loads.size()) << what;
  for (size_t i = 0; i < raw.loads.size(); ++i) {
    EXPECT_EQ(raw.loads[i].name, spans.loads[i].name) << what;
    EXPECT_EQ(raw.loads[i].mean_permille, spans.loads[i].mean_permille) << what;
    EXPECT_EQ(raw.loads[i].peak_permille, spans.loads[i].peak_permille) << what;
  }
  EXPECT_TRUE(raw == spans) << what;
}

// Random ranges over [lo, hi), summarized both ways (frames `period` apart).
void CompareRanges(store::RingStore& s, int64_t lo, int64_t hi, int64_t now, int n,
                   int64_t period = kSec) {
  std::mt19937_64 rng(11);
  SummaryOptions raw;
  raw.raw_frames = true;
  raw.frame_period_ns = period;
  // The same page size: the gap period is the median spacing of the range's
  // first page of frames, whichever way the rest is read.
  raw.page_frames = 700;
  SummaryOptions fast = raw;
  fast.raw_frames = false;
  int used_spans = 0;
  for (int i = 0; i < n; ++i) {
    int64_t a = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    int64_t b = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    if (i % 5 == 0) a = a / (60 * kSec) * (60 * kSec);  // on a period's edge
    if (a > b) std::swap(a, b);
    if (a == b) continue;
    auto r = Summarize(s, raw, a, b, now);
    auto f = Summarize(s, fast, a, b, now);
    ASSERT_TRUE(r.ok() && f.ok());
    ExpectSame(*r, *f, "range " + std::to_string(a) + " .. " + std::to_string(b));
    auto spans = s.Spans(a, b, 3 * period / 2);
    ASSERT_TRUE(spans.ok());
    if (!spans->empty()) ++used_spans;
  }
  EXPECT_GT(used_spans, n / 2);  // most ranges were answered from spans
}

// With closed periods written as the daemon writes them, or held back
// (rollup_write_frames): a range whose end is in the held-back periods
// reads them from the raw tier.
void SameFiguresAsEveryFrame(size_t rollup_write_frames) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/e.db";
  store::RingStoreOptions o;
  o.rollup_write_frames = rollup_write_frames;
  Writer w;
  {
    auto s = Open(path, o);
    ASSERT_TRUE(s);
    w.Write(*s, 3000);
    w.rt += 95 * kSec;  // the daemon stopped: a gap with consecutive seqs
    w.bt += 95 * kSec;
    w.Write(*s, 2000);
    w.seq += 17;  // frames lost before the store: seq holes
    w.Write(*s, 1500);
    w.Write(*s, 300, 5 * kSec);  // another rate
    w.Write(*s, 1000);
    w.rt -= 200 * kSec;  // a backward wall-clock step: stored time goes on
    w.Write(*s, 1200);
    w.rt += 400 * kSec;  // a forward step
    w.Write(*s, 1700);
    for (int i = 0; i < 40; ++i) {
      w.seq += static_cast<uint64_t>(i % 3);  // holes inside periods
      w.Write(*s, 50);
    }
    w.Write(*s, 37);  // closed mid-period: a restart merges into it
    ASSERT_TRUE(s->Close().ok());
  }
  auto s = Open(path, o);
  ASSERT_TRUE(s);
  // Three hours and more, to 25 minutes into a block (I15): the periods
  // since the block's first are held back.
  const int64_t block = 3600 * kSec;
  int64_t end = w.rt + 3 * block;
  end += ((25 * 60 * kSec - end % block) % block + block) % block;
  w.Write(*s, static_cast<int>((end - w.rt) / kSec));
  ASSERT_TRUE(s->Flush().ok());
  auto spans = s->Spans(kT0, w.rt, 3 * kSec / 2);
  ASSERT_TRUE(spans.ok());
  int blocks = 0;
  for (const auto& sp : *spans) blocks += sp.level == 1;
  EXPECT_GE(blocks, 2);
  EXPECT_GT(spans->size(), static_cast<size_t>(blocks) + 20);
  // Held back: the newest closed periods are not in the span tier yet.
  const int64_t newest_span = spans->empty() ? 0 : spans->back().end_ns;
  if (rollup_write_frames > 0) {
    EXPECT_LT(newest_span, w.rt - 10 * 60 * kSec);
  } else {
    EXPECT_GE(newest_span, w.rt - 2 * 60 * kSec);
  }
  CompareRanges(*s, kT0 - 600 * kSec, w.rt + 120 * kSec, w.rt + kSec, 300);
}

TEST(SpanSummary, SameFiguresAsEveryFrame) {
  SameFiguresAsEveryFrame(0);
}

TEST(SpanSummary, SameFiguresAsEveryFrameWithPeriodsHeldBack) {
  SameFiguresAsEveryFrame(3600);
}

TEST(SpanSummary, SchemaFourStoreUpgradesAndOlderPeriodsAreReadAsFrames) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/v4.db";
  Writer w;
  {
    auto s = Open(path);
    ASSERT_TRUE(s);
    w.Write(*s, 3 * 3600 + 20);
    ASSERT_TRUE(s->Close().ok());
  }
  const int64_t upgraded_at = w.rt;
  {  // Back to schema 4, as written before span aggregates.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
    ASSERT_EQ(sqlite3_exec(db,
                           (std::string(edgemon::testing::kUndoSchema11) +
                            edgemon::testing::kUndoSchema10 + edgemon::testing::kUndoSchema9 +
                            edgemon::testing::kUndoSchema8 + edgemon::testing::kUndoSchema7 +
                            "DROP TABLE push_cursors; DROP TABLE spans; DROP TABLE span_stats; "
                            "DROP TABLE span_values; "
                            "DELETE FROM meta WHERE key IN ('spans_from_ns', "
                            "'blocks_through_ns'); PRAGMA user_version=4")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = Open(path);
  ASSERT_TRUE(s);
  w.Write(*s, 3 * 3600);
  ASSERT_TRUE(s->Flush().ok());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), store::kSchemaVersion);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  // No span before the upgrade; spans (whole hours too) after it.
  auto before = s->Spans(kT0, upgraded_at, 3 * kSec / 2);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->empty());
  auto after = s->Spans(upgraded_at, w.rt, 3 * kSec / 2);
  ASSERT_TRUE(after.ok());
  ASSERT_FALSE(after->empty());
  EXPECT_GT(after->front().t_ns, upgraded_at);
  int blocks = 0;
  for (const auto& sp : *after) blocks += sp.level == 1;
  EXPECT_GE(blocks, 1);
  CompareRanges(*s, kT0, w.rt, w.rt + kSec, 60);
}

TEST(SpanSummary, RetentionDeletesSpansWithTheirPeriods) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/ret.db";
  store::RingStoreOptions o;
  o.rollup_retention_ns = 3600 * kSec;
  o.raw_retention_ns = 1800 * kSec;
  auto st = store::RingStore::Open(path, o);
  ASSERT_TRUE(st.ok());
  auto& s = **st;
  s.SetInventory(TestInventory());
  Writer w;
  w.Write(s, 4 * 3600);
  ASSERT_TRUE(s.Flush().ok());
  const int64_t cutoff = w.rt - kSec - 3600 * kSec;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  for (const char* sql : {"SELECT count(*) FROM spans WHERE t_ns < ?1",
                          "SELECT count(*) FROM span_stats WHERE t_ns < ?1",
                          "SELECT count(*) FROM span_values WHERE t_ns < ?1",
                          "SELECT count(*) FROM spans WHERE t_ns >= ?1",
                          "SELECT count(*) FROM span_values WHERE t_ns >= ?1"}) {
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &q, nullptr), SQLITE_OK);
    sqlite3_bind_int64(q, 1, cutoff);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    if (std::string(sql).find(">=") == std::string::npos) {
      EXPECT_EQ(sqlite3_column_int64(q, 0), 0) << sql;
    } else {
      EXPECT_GT(sqlite3_column_int64(q, 0), 30) << sql;
    }
    sqlite3_finalize(q);
  }
  sqlite3_close(db);
  // Older than the raw tier's frames: spans whose frames are gone are not used.
  auto spans = s.Spans(w.rt - 3500 * kSec, w.rt, 3 * kSec / 2);
  ASSERT_TRUE(spans.ok());
  ASSERT_FALSE(spans->empty());
  auto oldest = s.Stats();
  ASSERT_TRUE(oldest.ok() && oldest->oldest_ns);
  EXPECT_GE(spans->front().t_ns, *oldest->oldest_ns);
  CompareRanges(s, w.rt - 3500 * kSec, w.rt, w.rt + kSec, 40);
}

// Days (level 2) where one qualifies: frames 10 s apart over two and a
// half days, with a gap, seq holes and a restart. Days, the blocks and
// periods between them and the frames at the edges give the figures every
// frame gives.
TEST(SpanSummary, DaysGiveTheFiguresOfEveryFrame) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/days.db";
  constexpr int64_t kStep = 10 * kSec;
  Writer w;
  {
    auto s = Open(path);
    ASSERT_TRUE(s);
    w.Write(*s, 9000, kStep);
    w.rt += 3000 * kSec;  // the daemon stopped
    w.bt += 3000 * kSec;
    w.seq += 9;
    w.Write(*s, 4000, kStep);
    ASSERT_TRUE(s->Close().ok());
  }
  auto s = Open(path);
  ASSERT_TRUE(s);
  w.Write(*s, 9000, kStep);
  ASSERT_TRUE(s->Flush().ok());
  auto spans = s->Spans(kT0, w.rt, 3 * kStep / 2);
  ASSERT_TRUE(spans.ok());
  int days = 0, blocks = 0;
  for (const auto& sp : *spans) {
    days += sp.level == 2;
    blocks += sp.level == 1;
    if (sp.level == 2) {
      EXPECT_EQ(sp.end_ns - sp.t_ns, 86400 * kSec);
    }
  }
  EXPECT_GE(days, 1);
  EXPECT_GE(blocks, 2);
  CompareRanges(*s, kT0 - 600 * kSec, w.rt + 120 * kSec, w.rt + kSec, 80, kStep);
}

// Downsample at steps holding whole blocks and days (answered from their
// span_stats rows) against the same history at the rollup period's step
// (every row read), folded into the coarser steps: the same counts,
// extremes, dates and averages; ranges that start and end anywhere, some
// older than the raw tier.
TEST(SpanSummary, CoarseDownsampleFromDaysAndBlocksMatchesEveryRow) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/coarse.db";
  store::RingStoreOptions o;
  o.raw_retention_ns = 20 * 3600 * kSec;  // the first day and a half: rows only
  auto st = store::RingStore::Open(path, o);
  ASSERT_TRUE(st.ok());
  auto& s = **st;
  s.SetInventory(TestInventory());
  Writer w;
  w.Write(s, 14000, 10 * kSec);
  w.rt += 7200 * kSec;
  w.bt += 7200 * kSec;
  w.Write(s, 9000, 10 * kSec);
  ASSERT_TRUE(s.Flush().ok());
  constexpr int64_t kPeriod = 60 * kSec;
  const std::vector<std::string> keys = {"rail/VIN/power", "thermal/CPU-therm/temp",
                                         "gpu/gpu/load"};
  std::mt19937_64 rng(5);
  const int64_t lo = kT0 - 3600 * kSec, hi = w.rt + 600 * kSec;
  int from_totals = 0;
  for (int i = 0; i < 60; ++i) {
    int64_t a = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    int64_t b = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    if (a > b) std::swap(a, b);
    if (b - a < kPeriod) continue;
    const int64_t steps[] = {3600 * kSec, 4 * 3600 * kSec, 86400 * kSec,
                             (b - a) / kPeriod * kPeriod + kPeriod};
    const int64_t step = steps[i % 4];
    from_totals += step >= 3600 * kSec;
    // Every key in one read: the buckets of one call per key.
    auto each = s.DownsampleEach(keys, a, b, step);
    ASSERT_TRUE(each.ok()) << each.status().message();
    ASSERT_EQ(each->size(), keys.size());
    for (size_t k = 0; k < keys.size(); ++k) {
      auto one = s.Downsample(keys[k], a, b, step);
      ASSERT_TRUE(one.ok());
      ASSERT_EQ((*each)[k].size(), one->size()) << keys[k];
      for (size_t j = 0; j < one->size(); ++j) {
        EXPECT_EQ((*each)[k][j].t_ns, (*one)[j].t_ns) << keys[k];
        EXPECT_EQ((*each)[k][j].min, (*one)[j].min) << keys[k];
        EXPECT_EQ((*each)[k][j].max, (*one)[j].max) << keys[k];
        EXPECT_EQ((*each)[k][j].count, (*one)[j].count) << keys[k];
        EXPECT_EQ((*each)[k][j].avg, (*one)[j].avg) << keys[k];
      }
    }
    for (const auto& key : keys) {
      const std::string what = key + " " + std::to_string(a) + " .. " + std::to_string(b) +
                               " step " + std::to_string(step / kSec) + " s";
      auto coarse = s.Downsample(key, a, b, step);
      auto fine = s.Downsample(key, a, b, kPeriod);
      ASSERT_TRUE(coarse.ok() && fine.ok()) << what;
      // The fine buckets folded into the coarse steps.
      std::map<int64_t, Bucket> want;
      std::map<int64_t, double> sums;
      for (const Bucket& f : *fine) {
        const int64_t k = (f.t_ns - a) / step;
        auto [it, added] = want.emplace(k, f);
        if (!added) {
          it->second.t_ns = std::min(it->second.t_ns, f.t_ns);
          it->second.min = std::min(it->second.min, f.min);
          it->second.max = std::max(it->second.max, f.max);
          it->second.count += f.count;
        }
        sums[k] += f.avg * static_cast<double>(f.count);
      }
      ASSERT_EQ(coarse->size(), want.size()) << what;
      size_t j = 0;
      for (const auto& [k, bucket] : want) {
        const Bucket& c = (*coarse)[j++];
        EXPECT_EQ(c.t_ns, bucket.t_ns) << what;
        EXPECT_EQ(c.min, bucket.min) << what;
        EXPECT_EQ(c.max, bucket.max) << what;
        EXPECT_EQ(c.count, bucket.count) << what;
        EXPECT_NEAR(c.avg, sums[k] / static_cast<double>(bucket.count), 1e-9 * std::abs(c.avg))
            << what;
      }
    }
  }
  EXPECT_GT(from_totals, 30);
}

}  // namespace
}  // namespace edgemon::summary
