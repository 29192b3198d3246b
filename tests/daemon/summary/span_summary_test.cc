// Summaries from span aggregates (store invariant 15) against summaries read
// from every frame (SummaryOptions::raw_frames): a real store in a temp dir,
// hours of frames with varying values and clock frequencies, absent values,
// time gaps, seq holes, a stretch at another rate, wall-clock steps and a
// restart; every field of a few hundred random ranges must be equal. Sums
// of integers are exactly equal as doubles (every partial sum is far below
// 2^53), so averages and residency shares are compared exactly too.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
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

// (I15) A store written before schema 15 keeps its periods' clock values
// as rows of span_values; the upgrade leaves them there and packs the
// periods written after it by hour. A period closed mid-way before the
// upgrade and finished after it has its values in both, a block across the
// upgrade is written from both, and every summary still equals the frames'.
TEST(SpanSummary, ClockValuesFromBeforeTheUpgradeAreReadWithThePackedOnes) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/v14.db";
  Writer w;
  {
    auto s = Open(path);
    ASSERT_TRUE(s);
    w.Write(*s, 2 * 3600 + 37);  // closed 37 s into a period
    ASSERT_TRUE(s->Close().ok());
  }
  const int64_t upgraded_at = w.rt;
  const int64_t split = upgraded_at / (60 * kSec) * (60 * kSec);  // that period
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(edgemon::testing::UndoSchema15(db), SQLITE_OK) << sqlite3_errmsg(db);
  auto rows = [&db](const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    int64_t n = -1;
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
  };
  EXPECT_GT(rows("SELECT count(*) FROM span_values WHERE level = 0"), 2 * 60 * 2);
  EXPECT_GT(
      rows("SELECT count(*) FROM span_values WHERE level = 0 AND t_ns = " + std::to_string(split)),
      0);
  auto s = Open(path);
  ASSERT_TRUE(s);
  w.Write(*s, 2 * 3600);
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_EQ(rows("PRAGMA user_version"), store::kSchemaVersion);
  // The rows from before stay; the periods after the upgrade are packed,
  // the split one's later frames among them.
  EXPECT_GT(rows("SELECT count(*) FROM span_values WHERE level = 0"), 2 * 60 * 2);
  EXPECT_EQ(
      rows("SELECT count(*) FROM span_values WHERE level = 0 AND t_ns > " + std::to_string(split)),
      0);
  std::vector<store::internal::PeriodValue> packed;
  ASSERT_EQ(edgemon::testing::PeriodValueRows(db, packed), SQLITE_OK);
  ASSERT_FALSE(packed.empty());
  EXPECT_EQ(packed.front().t_ns, split);
  sqlite3_close(db);
  // A block and a day across the upgrade, from both.
  auto spans = s->Spans(upgraded_at - 3600 * kSec, upgraded_at + 3600 * kSec, 3 * kSec / 2);
  ASSERT_TRUE(spans.ok());
  bool across = false;
  for (const auto& sp : *spans) across |= sp.t_ns < upgraded_at && sp.end_ns > upgraded_at;
  EXPECT_TRUE(across);
  CompareRanges(*s, kT0, w.rt, w.rt + kSec, 120);
  CompareRanges(*s, split - 600 * kSec, split + 600 * kSec, w.rt + kSec, 40);
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
                          "SELECT count(*) FROM spans WHERE t_ns >= ?1"}) {
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
  // The periods' clock values, packed by hour, likewise.
  std::vector<store::internal::PeriodValue> values;
  ASSERT_EQ(edgemon::testing::PeriodValueRows(db, values), SQLITE_OK);
  auto before = [cutoff](const store::internal::PeriodValue& v) { return v.t_ns < cutoff; };
  EXPECT_EQ(std::count_if(values.begin(), values.end(), before), 0);
  EXPECT_GT(values.size(), 30u);
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

// 22,000 frames `step` apart into a new store at `path`: 9,000, a stop with
// a gap and seq holes, 4,000, a restart, 9,000. Returns the store, open,
// with every frame committed (null after a failure, reported).
std::unique_ptr<store::RingStore> WriteWithARestart(const std::string& path, Writer& w,
                                                    int64_t step,
                                                    store::RingStoreOptions options = {}) {
  {
    auto s = Open(path, options);
    if (!s) return nullptr;
    w.Write(*s, 9000, step);
    w.rt += 3000 * kSec;  // the daemon stopped
    w.bt += 3000 * kSec;
    w.seq += 9;
    w.Write(*s, 4000, step);
    if (Status e = s->Close(); !e.ok()) {
      ADD_FAILURE() << e.message();
      return nullptr;
    }
  }
  auto s = Open(path, options);
  if (!s) return nullptr;
  w.Write(*s, 9000, step);
  if (Status e = s->Flush(); !e.ok()) {
    ADD_FAILURE() << e.message();
    return nullptr;
  }
  return s;
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
  auto s = WriteWithARestart(path, w, kStep);
  ASSERT_TRUE(s);
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

// Downsample at steps holding whole blocks, days and months (answered from
// their span_stats rows) against the same history at a step of `fine`
// (every row read), folded into the coarser steps: the same counts,
// extremes, dates and averages; `n` ranges in [lo, hi) that start and end
// anywhere, at `steps` in turn (0: the whole range in one step). Every key
// in one DownsampleEach (one of them twice) gives the buckets of one call
// per key.
void CoarseDownsampleMatchesEveryRow(store::RingStore& s, int64_t lo, int64_t hi, int64_t fine,
                                     const std::vector<int64_t>& steps, int n) {
  const int64_t kPeriod = s.rollup_period_ns();
  const std::vector<std::string> keys = {"rail/VIN/power", "thermal/CPU-therm/temp", "gpu/gpu/load",
                                         "rail/VIN/power"};
  std::mt19937_64 rng(5);
  int from_totals = 0;
  for (int i = 0; i < n; ++i) {
    int64_t a = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    int64_t b = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    if (a > b) std::swap(a, b);
    if (b - a < kPeriod) continue;
    int64_t step = steps[static_cast<size_t>(i) % steps.size()];
    if (step == 0) step = (b - a) / kPeriod * kPeriod + kPeriod;
    from_totals += step >= store::SpanLength(kPeriod, 1);
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
      auto folded = s.Downsample(key, a, b, fine);
      ASSERT_TRUE(coarse.ok() && folded.ok()) << what;
      // The fine buckets folded into the coarse steps.
      std::map<int64_t, Bucket> want;
      std::map<int64_t, double> sums;
      for (const Bucket& f : *folded) {
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
  EXPECT_GT(from_totals, n / 2);
}

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
  CoarseDownsampleMatchesEveryRow(s, kT0 - 3600 * kSec, w.rt + 600 * kSec, 60 * kSec,
                                  {3600 * kSec, 4 * 3600 * kSec, 86400 * kSec, 0}, 60);
}

// The rows of `level` in spans and in span_stats (one per channel).
std::pair<int64_t, int64_t> LevelRows(const std::string& path, int level) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::pair<int64_t, int64_t> n{-1, -1};
  for (int k = 0; k < 2; ++k) {
    sqlite3_stmt* q = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db,
                                 k == 0 ? "SELECT count(*) FROM spans WHERE level = ?1"
                                        : "SELECT count(*) FROM span_stats WHERE level = ?1",
                                 -1, &q, nullptr),
              SQLITE_OK);
    sqlite3_bind_int(q, 1, level);
    if (sqlite3_step(q) == SQLITE_ROW) (k == 0 ? n.first : n.second) = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
  }
  sqlite3_close(db);
  return n;
}

// Months (level 3), here of 12 h (1 s periods, days of 1440 s): frames 5 s
// apart over two and a half months, with a gap, seq holes and a restart.
// Summaries from months, days, blocks and periods give the figures of every
// frame, and Downsample at steps holding whole months (some ranges older
// than the raw tier) those of every row.
TEST(SpanSummary, MonthsGiveTheFiguresOfEveryFrameAndRow) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/months.db";
  constexpr int64_t kStep = 5 * kSec;
  store::RingStoreOptions o;
  o.rollup_period_ns = kSec;
  const int64_t month = store::SpanLength(o.rollup_period_ns, 3);
  ASSERT_EQ(month, 43200 * kSec);
  Writer w;
  auto s = WriteWithARestart(path, w, kStep, o);
  ASSERT_TRUE(s);
  auto spans = s->Spans(kT0, w.rt, 3 * kStep / 2);
  ASSERT_TRUE(spans.ok());
  int months = 0;
  for (const auto& sp : *spans) {
    months += sp.level == 3;
    if (sp.level == 3) {
      EXPECT_EQ(sp.end_ns - sp.t_ns, month);
    }
  }
  EXPECT_GE(months, 1);
  const auto [spans3, stats3] = LevelRows(path, 3);
  EXPECT_GE(spans3, 2);
  EXPECT_EQ(stats3, spans3 * 8);  // a row per channel
  CompareRanges(*s, kT0 - 600 * kSec, w.rt + 120 * kSec, w.rt + kSec, 80, kStep);
  ASSERT_TRUE(s->Close().ok());
  // The first 15 hours as rows only.
  o.raw_retention_ns = 16 * 3600 * kSec;
  auto r = Open(path, o);
  ASSERT_TRUE(r);
  w.Write(*r, 10, kStep);
  ASSERT_TRUE(r->Flush().ok());
  CoarseDownsampleMatchesEveryRow(*r, kT0 - 3600 * kSec, w.rt + 600 * kSec, kStep,
                                  {month, 2 * month, 0}, 45);
}

// A month with a period whose day has no row (here deleted) is not written:
// its days answer for it, and the same figures come out.
TEST(SpanSummary, AMonthMissingADaysRowIsReadByDay) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/gap.db";
  constexpr int64_t kStep = 5 * kSec;
  store::RingStoreOptions o;
  o.rollup_period_ns = kSec;
  o.raw_retention_ns = 8 * 3600 * kSec;
  const int64_t month = store::SpanLength(o.rollup_period_ns, 3);
  const int64_t day = store::SpanLength(o.rollup_period_ns, 2);
  Writer w;
  {
    auto s = Open(path, o);
    ASSERT_TRUE(s);
    // 100 min: days closed in the first month, not the month (kT0 is 10 h
    // 13 min into it).
    w.Write(*s, 1200, kStep);
    ASSERT_TRUE(s->Close().ok());
  }
  ASSERT_EQ(LevelRows(path, 3).first, 0);
  // A whole closed day of the first month loses its row.
  const int64_t gone = (kT0 / day + 2) * day;
  ASSERT_EQ(gone / month, kT0 / month);
  ASSERT_LT(gone + day, w.rt - day);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::string sql =
        "DELETE FROM spans WHERE level = 2 AND t_ns = " + std::to_string(gone) +
        "; DELETE FROM span_stats WHERE level = 2 AND t_ns = " + std::to_string(gone) + ";";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_changes(db), 8);
    sqlite3_close(db);
  }
  auto s = Open(path, o);
  ASSERT_TRUE(s);
  w.Write(*s, 14000, kStep);  // into the third month
  ASSERT_TRUE(s->Flush().ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT t_ns FROM spans WHERE level = 3 ORDER BY t_ns", -1, &q,
                               nullptr),
            SQLITE_OK);
  std::vector<int64_t> months;
  while (sqlite3_step(q) == SQLITE_ROW) months.push_back(sqlite3_column_int64(q, 0));
  sqlite3_finalize(q);
  sqlite3_close(db);
  // Not the first month; the second.
  EXPECT_EQ(months, std::vector<int64_t>{(kT0 / month + 1) * month});
  CoarseDownsampleMatchesEveryRow(*s, kT0 - 3600 * kSec, w.rt + 600 * kSec, kStep, {month, day, 0},
                                  30);
}

}  // namespace
}  // namespace edgemon::summary
