// Frames written against their bases (ring_store.h, I17), on real SQLite
// files: read back value for value whatever their format, smaller than
// their own encoding, bases dropped as the frames that need them go, and a
// frame whose base is gone read as a bad frame, not a wrong one.
#include <sqlite3.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/store/frame_codec.h"
#include "daemon/store/ring_store.h"
#include "tests/support/store_schema.h"
#include "tests/support/temp_tree.h"

namespace edgemon::store::bases_test {
namespace {

using edgemon::testing::QueryInt;
using edgemon::testing::TempTree;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 28'333'333 * 60 * kSec;

// Channels of a board: clocks and limits that hold still, temperatures and
// rails that wander, an energy counter that grows, a load that jumps.
Inventory Board(size_t n) {
  Inventory inv;
  for (size_t i = 0; i < n; ++i) {
    Channel c;
    c.id = static_cast<ChannelId>(i);
    c.kind = Kind::kRail;
    c.name = "r" + std::to_string(i);
    c.field = i % 4 == 3 ? Field::kEnergy : Field::kPower;
    c.unit = UnitOf(c.field);
    if (c.field == Field::kEnergy) c.flags = kFlagCounter;
    inv.channels.push_back(c);
  }
  return inv;
}

std::vector<Value> Sample(size_t n, uint64_t i, std::mt19937_64& rng) {
  std::vector<Value> v(n);
  for (size_t k = 0; k < n; ++k) {
    switch (k % 4) {
      case 0:  // holds still
        v[k] = 2'201'600;
        break;
      case 1:  // wanders a little
        v[k] = 45'000 + static_cast<int64_t>(rng() % 200);
        break;
      case 2:  // jumps anywhere
        v[k] = static_cast<int64_t>(rng() % 60'000'000);
        break;
      default:  // a counter
        v[k] = 1'000'000 + static_cast<int64_t>(i) * 5'000;
        break;
    }
  }
  return v;
}

Frame MakeFrame(int64_t t, std::vector<Value> values) {
  Frame f;
  f.realtime_ns = t;
  f.boottime_ns = t - kT0 + 42 * kSec;
  f.values = std::move(values);
  return f;
}

RingStoreOptions Options() {
  RingStoreOptions o;
  o.batch_frames = 50;
  o.commit_interval_ms = 5;
  return o;
}

void Exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// The bytes the frames would take in version 1 (frame_codec.h).
size_t Version1Bytes(const std::vector<std::vector<Value>>& frames) {
  size_t bytes = 0;
  for (const auto& values : frames) {
    FrameValues pairs;
    for (size_t k = 0; k < values.size(); ++k) {
      if (values[k]) pairs.emplace_back(static_cast<uint32_t>(k + 1), *values[k]);
    }
    std::string blob;
    EXPECT_TRUE(EncodeFrame(pairs, blob));
    bytes += blob.size();
  }
  return bytes;
}

TEST(FrameBases, FramesReadBackValueForValueAndTakeLessThanTheirOwnEncoding) {
  TempTree dir;
  const auto path = dir.Real("/bases.db");
  constexpr size_t kChannels = 40;
  std::mt19937_64 rng(3);
  std::vector<std::vector<Value>> written;
  {
    auto r = RingStore::Open(path, Options());
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto& s = **r;
    s.SetInventory(Board(kChannels));
    for (uint64_t i = 0; i < 400; ++i) {
      auto v = Sample(kChannels, i, rng);
      if (i >= 150 && i < 160) v[5].reset();            // a channel gone for ten frames
      if (i == 300) v.assign(kChannels, std::nullopt);  // a frame of nothing
      written.push_back(v);
      s.Append(MakeFrame(kT0 + static_cast<int64_t>(i) * kSec, v));
    }
    ASSERT_TRUE(s.Flush().ok());
    // Read back through the store: every value, absent ones absent.
    auto all = s.Range(kT0, kT0 + 1000 * kSec, {}, 0);
    ASSERT_TRUE(all.ok()) << all.status().message();
    ASSERT_EQ(all->frames.size(), written.size());
    EXPECT_EQ(all->bad_frames, 0u);
    for (size_t i = 0; i < written.size(); ++i) {
      ASSERT_EQ(all->frames[i].values, written[i]) << "frame " << i;
    }
    // One value at a time (Downsample's raw path): the same values.
    uint64_t bad = 0;
    auto one = s.Downsample("rail/r5/power", kT0, kT0 + 400 * kSec, kSec, Tier::kRaw, &bad);
    ASSERT_TRUE(one.ok()) << one.status().message();
    size_t present = 0;
    EXPECT_EQ(bad, 0u);
    for (const auto& b : *one) {
      if (b.count == 0) continue;
      const auto i = static_cast<size_t>((b.t_ns - kT0) / kSec);
      ASSERT_LT(i, written.size());
      ASSERT_TRUE(written[i][5]);
      EXPECT_EQ(b.min, *written[i][5]);
      ++present;
    }
    EXPECT_EQ(present, 400u - 10u - 1u);  // the ten frames without it, the empty one
  }
  // In the file: most frames against a base, a base for each change of
  // the channels present (and every few hundred frames), and fewer bytes
  // than the frames' own encoding.
  int64_t against_base = 0;
  uint64_t base_id = 0;
  for (const auto& [seq, blob] : edgemon::testing::StoredFrameBlobs(path)) {
    against_base += store::FrameBaseId(blob, base_id) ? 1 : 0;
  }
  EXPECT_GT(against_base, 350);
  // (I18) In blocks: a head and its frames' references.
  EXPECT_GT(
      QueryInt(path, "SELECT count(*) FROM frames WHERE substr(data, 1, 1) IN (x'03', x'04')"),
      350);
  const int64_t bases = QueryInt(path, "SELECT count(*) FROM frame_bases");
  EXPECT_GE(bases, 3);  // the first frame, one channel gone, back
  EXPECT_LE(bases, 3 + 400 / 64);
  const int64_t stored = QueryInt(path, "SELECT sum(length(data)) FROM frames") +
                         QueryInt(path, "SELECT sum(length(data)) FROM frame_bases");
  EXPECT_LT(static_cast<double>(stored), 0.8 * static_cast<double>(Version1Bytes(written)));
}

TEST(FrameBases, BasesGoWithTheFramesThatNeedThemAndARestartStartsANewOne) {
  TempTree dir;
  const auto path = dir.Real("/expire.db");
  constexpr size_t kChannels = 12;
  std::mt19937_64 rng(5);
  RingStoreOptions o = Options();
  o.raw_retention_ns = 100 * kSec;
  uint64_t i = 0;
  for (int run = 0; run < 2; ++run) {
    auto r = RingStore::Open(path, o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto& s = **r;
    s.SetInventory(Board(kChannels));
    for (const uint64_t end = i + 1000; i < end; ++i) {
      s.Append(MakeFrame(kT0 + static_cast<int64_t>(i) * kSec, Sample(kChannels, i, rng)));
    }
    ASSERT_TRUE(s.Flush().ok());
    auto all = s.Range(kT0, kT0 + 3000 * kSec, {}, 0);
    ASSERT_TRUE(all.ok()) << all.status().message();
    // Whole blocks go (I18): the oldest kept may be up to a block older.
    EXPECT_LE(all->frames.size(), 101u + store::kMaxBlockFrames);
    EXPECT_GE(all->frames.size(), 100u);
    EXPECT_EQ(QueryInt(path,
                       "SELECT count(*) FROM frames WHERE seq = (SELECT min(seq) FROM frames) "
                       "AND substr(data, 1, 1) = x'04'"),
              0)
        << "a block lost its head";
    EXPECT_EQ(all->bad_frames, 0u);
    // About 100 s of frames need two or three bases: the rest went.
    EXPECT_LE(QueryInt(path, "SELECT count(*) FROM frame_bases"), 4) << "run " << run;
  }
  // The oldest frame's base is still there, and the newest base was made
  // after the restart (after the first run's newest).
  EXPECT_EQ(
      QueryInt(path,
               "SELECT count(*) FROM frame_bases WHERE id >= (SELECT min(id) FROM frame_bases)"),
      QueryInt(path, "SELECT count(*) FROM frame_bases"));
}

TEST(FrameBases, AFrameWhoseBaseIsGoneIsABadFrameAndTheOthersRead) {
  TempTree dir;
  const auto path = dir.Real("/gone.db");
  constexpr size_t kChannels = 12;
  std::mt19937_64 rng(9);
  {
    auto r = RingStore::Open(path, Options());
    ASSERT_TRUE(r.ok());
    (*r)->SetInventory(Board(kChannels));
    for (uint64_t i = 0; i < 200; ++i) {
      auto v = Sample(kChannels, i, rng);
      if (i >= 100 && i < 110) v[1].reset();  // ten frames of other ids: a base of their own
      (*r)->Append(MakeFrame(kT0 + static_cast<int64_t>(i) * kSec, v));
    }
    ASSERT_TRUE((*r)->Flush().ok());
  }
  // The second base (of those ten frames) goes, as a damaged or
  // hand-edited file would lose it.
  const int64_t second = QueryInt(path, "SELECT id FROM frame_bases ORDER BY id LIMIT 1 OFFSET 1");
  ASSERT_GT(second, 0);
  int64_t lost = 0;
  for (const auto& [seq, blob] : edgemon::testing::StoredFrameBlobs(path)) {
    uint64_t id = 0;
    lost += store::FrameBaseId(blob, id) && id == static_cast<uint64_t>(second) ? 1 : 0;
  }
  ASSERT_EQ(lost, 10);
  Exec(path, "DELETE FROM frame_bases WHERE id = " + std::to_string(second));
  auto r = RingStore::Open(path, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto all = (*r)->Range(kT0, kT0 + 1000 * kSec, {}, 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->bad_frames, static_cast<uint64_t>(lost));
  EXPECT_EQ(all->frames.size() + all->bad_frames, 200u);
}

}  // namespace
// (I18) Frames go in blocks of up to kMaxBlockFrames, the head's row holding
// them all: a block whose head is gone (a damaged or hand-edited file) is
// that many bad frames, and the other blocks read.
TEST(FrameBases, ABlockWhoseHeadIsGoneIsBadFramesAndTheOthersRead) {
  TempTree dir;
  const auto path = dir.Real("/blocks.db");
  constexpr size_t kChannels = 12;
  std::mt19937_64 rng(13);
  std::vector<std::vector<Value>> written;
  {
    RingStoreOptions o = Options();
    o.batch_frames = 1000;  // one batch, committed by Flush
    o.commit_interval_ms = 600'000;
    auto r = RingStore::Open(path, o);
    ASSERT_TRUE(r.ok());
    (*r)->SetInventory(Board(kChannels));
    for (uint64_t i = 0; i < 600; ++i) {
      written.push_back(Sample(kChannels, i, rng));
      (*r)->Append(MakeFrame(kT0 + static_cast<int64_t>(i) * kSec, written.back()));
    }
    ASSERT_TRUE((*r)->Flush().ok());
  }
  // Three blocks: every row a head or a frame of one, the heads where the
  // blocks start.
  const int64_t heads =
      QueryInt(path, "SELECT count(*) FROM frames WHERE substr(data, 1, 1) = x'03'");
  EXPECT_EQ(heads, 3);
  EXPECT_EQ(QueryInt(path, "SELECT count(*) FROM frames WHERE substr(data, 1, 1) = x'04'"),
            600 - heads);
  const int64_t second = QueryInt(
      path,
      "SELECT seq FROM frames WHERE substr(data, 1, 1) = x'03' ORDER BY seq LIMIT 1 OFFSET 1");
  const int64_t first = QueryInt(path, "SELECT min(seq) FROM frames");
  ASSERT_EQ(second - first, static_cast<int64_t>(store::kMaxBlockFrames));
  Exec(path, "DELETE FROM frames WHERE seq = " + std::to_string(second));
  auto r = RingStore::Open(path, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto all = (*r)->Range(kT0, kT0 + 1000 * kSec, {}, 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->bad_frames, store::kMaxBlockFrames - 1);
  ASSERT_EQ(all->frames.size(), 600 - store::kMaxBlockFrames);
  // The frames read are the ones written, before and after the lost block.
  for (size_t i = 0; i < all->frames.size(); ++i) {
    const size_t w = i < store::kMaxBlockFrames ? i : i + store::kMaxBlockFrames;
    ASSERT_EQ(all->frames[i].values, written[w]) << "frame " << i;
  }
  // One value at a time (Downsample's raw path) passes over them too.
  uint64_t bad = 0;
  auto one = (*r)->Downsample("rail/r2/power", kT0, kT0 + 600 * kSec, kSec, Tier::kRaw, &bad);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(bad, store::kMaxBlockFrames - 1);
}

// (I18) A block ends before its frames' own blobs pass kBlockTargetBytes, so
// a read of one frame inflates a bounded block whatever the frames weigh.
TEST(FrameBases, ABlockEndsBeforeItsFramesPassTheTargetBytes) {
  TempTree dir;
  const auto path = dir.Real("/heavy.db");
  constexpr size_t kChannels = 160;  // frames of several hundred bytes
  std::mt19937_64 rng(17);
  {
    RingStoreOptions o = Options();
    o.batch_frames = 1000;
    o.commit_interval_ms = 600'000;
    auto r = RingStore::Open(path, o);
    ASSERT_TRUE(r.ok());
    (*r)->SetInventory(Board(kChannels));
    for (uint64_t i = 0; i < 600; ++i) {
      (*r)->Append(MakeFrame(kT0 + static_cast<int64_t>(i) * kSec, Sample(kChannels, i, rng)));
    }
    ASSERT_TRUE((*r)->Flush().ok());
  }
  const auto stored = edgemon::testing::StoredFrameBlobs(path);
  ASSERT_EQ(stored.size(), 600u);
  size_t own = 0;
  for (const auto& [seq, blob] : stored) own += blob.size();
  const int64_t heads =
      QueryInt(path, "SELECT count(*) FROM frames WHERE substr(data, 1, 1) = x'03'");
  EXPECT_GE(static_cast<size_t>(heads), own / store::kBlockTargetBytes);
  EXPECT_LE(static_cast<size_t>(heads), own / store::kBlockTargetBytes + 2);
  // Each block's frames, head first, hold at most the target.
  size_t in_block = 0;
  int64_t rows = 0;
  for (const auto& [seq, blob] : stored) {
    if (QueryInt(path, "SELECT substr(data, 1, 1) = x'03' FROM frames WHERE seq = " +
                           std::to_string(seq)) == 1) {
      in_block = 0;
    }
    in_block += blob.size();
    EXPECT_LE(in_block, store::kBlockTargetBytes) << "frame " << seq;
    ++rows;
  }
  EXPECT_EQ(rows, 600);
}

}  // namespace edgemon::store::bases_test
