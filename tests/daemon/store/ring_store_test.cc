// RingStore against real SQLite files in a scratch directory: round trips,
// seq continuity, inventory changes, both retentions, the rollup tier,
// counters, windows, bad files, a full disk and kill -9.
#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/store/frame_codec.h"
#include "daemon/store/ring_store.h"
#include "tests/support/fake_clock.h"
#include "tests/support/orin_inventory.h"
#include "tests/support/store_schema.h"

namespace edgemon::store {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 28'333'333 * 60 * kSec;  // a round minute (2023-11-14)

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/edgemon-store-test-XXXXXX";
    char* p = mkdtemp(tmpl);
    if (p) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

Channel Ch(ChannelId id, Kind kind, std::string name, Field field, uint32_t flags = 0) {
  Channel c;
  c.id = id;
  c.kind = kind;
  c.name = std::move(name);
  c.field = field;
  c.unit = UnitOf(field);
  c.flags = flags;
  return c;
}

Frame MakeFrame(int64_t realtime_ns, std::vector<Value> values, uint64_t seq = 0) {
  Frame f;
  f.seq = seq;
  f.realtime_ns = realtime_ns;
  f.boottime_ns = realtime_ns - kT0 + 42 * kSec;
  f.values = std::move(values);
  return f;
}

RingStoreOptions Fast() {
  RingStoreOptions o;
  o.batch_frames = 64;
  o.commit_interval_ms = 5;
  return o;
}

std::unique_ptr<RingStore> MustOpen(const std::string& path, RingStoreOptions o = Fast()) {
  auto r = RingStore::Open(path, std::move(o));
  if (!r.ok()) {
    ADD_FAILURE() << "Open(" << path << "): " << r.status().message();
    return nullptr;
  }
  return std::move(r.value());
}

std::vector<Value> BigValues(const Inventory& inv, uint64_t i, std::mt19937_64& rng) {
  std::vector<Value> v(inv.channels.size());
  for (const auto& c : inv.channels) {
    int64_t x = 0;
    auto r = [&](int64_t lo, int64_t hi) {
      return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
    };
    switch (c.field) {
      case Field::kLoad:
        x = r(0, 1000);
        break;
      case Field::kFreq:
        x = r(115200, 2201600);
        break;
      case Field::kFreqMin:
        x = 115200;
        break;
      case Field::kFreqMax:
        x = 2201600;
        break;
      case Field::kOnline:
      case Field::kState:
        x = r(0, 1);
        break;
      case Field::kTemp:
        x = r(38000, 62000);
        break;
      case Field::kPower:
        x = r(400, 15000);
        break;
      case Field::kVoltage:
        x = r(4980, 5020);
        break;
      case Field::kCurrent:
        x = r(80, 3000);
        break;
      case Field::kEnergy:
        x = static_cast<int64_t>(i) * 5000 + 1'000'000;
        break;
      case Field::kTotal:
        x = 63'000'000;
        break;
      case Field::kUsed:
        x = r(4'000'000, 30'000'000);
        break;
      case Field::kDuty:
        x = r(0, 1000);
        break;
      case Field::kSpeed:
        x = r(0, 6000);
        break;
      case Field::kMode:
        x = 0;
        break;
      default:
        x = r(0, 60'000'000);
        break;
    }
    v[c.id] = x;
  }
  return v;
}

// ---------------------------------------------------------------- basics

Inventory SmallInventory() {
  Inventory inv;
  inv.channels = {Ch(0, Kind::kCpu, "cpu0", Field::kLoad),
                  Ch(1, Kind::kThermal, "cpu-thermal", Field::kTemp),
                  Ch(2, Kind::kRail, "VDD_IN", Field::kPower, kFlagInputRail),
                  Ch(3, Kind::kMemory, "ram", Field::kUsed)};
  inv.channels[1].trips = {{"passive", 95000}, {"critical", 105000}};
  inv.channels[1].max = 105000;
  inv.channels[2].device = "ina3221 1-0040";
  inv.channels[2].attrs = {{"label", "VDD_IN"}};
  return inv;
}

TEST(RingStore, RoundTripKeepsAbsentValuesAbsentAndZeroZero) {
  TempDir dir;
  auto s = MustOpen(dir.File("a.db"));
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  EXPECT_EQ(s->Append(MakeFrame(kT0, {500, 45000, 0, INT64_MAX})), 1u);
  EXPECT_EQ(s->Append(MakeFrame(kT0 + kSec, {std::nullopt, -5000, std::nullopt, 1})), 2u);
  EXPECT_EQ(s->Append(MakeFrame(kT0 + 2 * kSec,
                                {std::nullopt, std::nullopt, std::nullopt, std::nullopt})),
            3u);
  ASSERT_TRUE(s->Flush().ok());

  auto all = s->Range(kT0, kT0 + 10 * kSec, {}, 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->channels.size(), 4u);
  EXPECT_EQ(all->channels[0].key, "cpu/cpu0/load");
  EXPECT_EQ(all->channels[1].channel.trips.size(), 2u);
  EXPECT_EQ(all->channels[1].channel.trips[1].temp_mc, 105000);
  EXPECT_EQ(all->channels[1].channel.max, 105000);
  EXPECT_EQ(all->channels[2].channel.device, "ina3221 1-0040");
  EXPECT_EQ(all->channels[2].channel.flags, kFlagInputRail);
  ASSERT_EQ(all->channels[2].channel.attrs.size(), 1u);
  EXPECT_EQ(all->channels[2].channel.attrs[0].second, "VDD_IN");
  ASSERT_EQ(all->frames.size(), 3u);
  const auto& f0 = all->frames[0];
  EXPECT_EQ(f0.seq, 1u);
  EXPECT_EQ(f0.realtime_ns, kT0);
  EXPECT_EQ(f0.boottime_ns, 42 * kSec);
  EXPECT_EQ(f0.values, (std::vector<Value>{500, 45000, 0, INT64_MAX}));
  EXPECT_EQ(all->frames[1].values, (std::vector<Value>{std::nullopt, -5000, std::nullopt, 1}));
  EXPECT_EQ(all->frames[2].values, std::vector<Value>(4));
  EXPECT_FALSE(all->truncated);

  // A subset, in the order asked for.
  auto sub = s->Range(kT0, kT0 + 10 * kSec, {"rail/VDD_IN/power", "cpu/cpu0/load"}, 2);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  ASSERT_EQ(sub->channels.size(), 2u);
  EXPECT_EQ(sub->channels[0].key, "rail/VDD_IN/power");
  EXPECT_EQ(sub->channels[0].channel.id, 0u);
  ASSERT_EQ(sub->frames.size(), 2u);
  EXPECT_TRUE(sub->truncated);
  EXPECT_EQ(sub->frames[0].values, (std::vector<Value>{0, 500}));
  EXPECT_EQ(sub->frames[1].values, (std::vector<Value>{std::nullopt, std::nullopt}));

  // Half-open range.
  auto one = s->Range(kT0 + kSec, kT0 + 2 * kSec, {}, 0);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->frames.size(), 1u);
  EXPECT_EQ(one->frames[0].seq, 2u);

  auto latest = s->Latest({"thermal/cpu-thermal/temp"});
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->frames.size(), 1u);
  EXPECT_EQ(latest->frames[0].seq, 3u);

  auto bad = s->Range(kT0, kT0 + kSec, {"cpu/cpu9/load"}, 0);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown channel"), std::string::npos);
}

// A time range is the seq range found by bisecting the seqs (I11; no index
// on time): with holes in the seqs and runs of frames at one time, every
// Range, FrameTimes-backed count and Downsample over a grid of bounds finds
// exactly the frames a scan of every frame finds.
TEST(RingStore, TimeRangesAreTheFramesAScanFindsWithHolesAndRepeatedTimes) {
  TempDir dir;
  auto s = MustOpen(dir.File("bisect.db"));
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  std::vector<std::pair<uint64_t, int64_t>> held;  // (seq, realtime)
  uint64_t seq = 1;
  int64_t t = kT0;
  for (int i = 0; i < 300; ++i) {
    if (i % 37 == 5) seq += 1000;                          // a hole in the seqs
    if (i % 11 != 3) t += (i % 5 == 0) ? 7 * kSec : kSec;  // else a repeated time
    held.emplace_back(s->Append(MakeFrame(t, {i, 45000, i % 7, 1}, seq)), t);
    seq = held.back().first + 1;
  }
  ASSERT_TRUE(s->Flush().ok());
  for (int64_t a = kT0 - 2 * kSec; a < t + 3 * kSec; a += 13 * kSec) {
    for (int64_t b = a; b < t + 3 * kSec; b += 29 * kSec) {
      std::vector<uint64_t> want;
      for (const auto& [q, rt] : held) {
        if (rt >= a && rt < b) want.push_back(q);
      }
      auto r = s->Range(a, b, {"cpu/cpu0/load"}, 0);
      ASSERT_TRUE(r.ok()) << r.status().message();
      std::vector<uint64_t> got;
      for (const auto& f : r->frames) got.push_back(f.seq);
      ASSERT_EQ(got, want) << a - kT0 << " .. " << b - kT0;
      if (b == a) continue;  // a Downsample needs a step
      auto d = s->Downsample("cpu/cpu0/load", a, b, b - a, Tier::kRaw);
      ASSERT_TRUE(d.ok()) << d.status().message();
      int64_t count = 0;
      for (const auto& x : *d) count += x.count;
      EXPECT_EQ(count, static_cast<int64_t>(want.size())) << a - kT0 << " .. " << b - kT0;
    }
  }
  // Past either end: nothing, and the bounds of the store are its first
  // and last frame's.
  auto before = s->Range(kT0 - 100 * kSec, kT0, {}, 0);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->frames.empty());
  auto after = s->Range(t + 1, t + 100 * kSec, {}, 0);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->frames.empty());
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->oldest_ns, held.front().second);
  EXPECT_EQ(st->newest_ns, held.back().second);
  EXPECT_EQ(st->last_seq, held.back().first);
}

TEST(RingStore, TheCommitPointFollowsCommitsNotAppends) {
  TempDir dir;
  const auto path = dir.File("commit_point.db");
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->committed_next_seq(), 1u);  // an empty file
    s->SetInventory(SmallInventory());
    for (int i = 0; i < 5; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i, 1, 2, 3}));
    ASSERT_TRUE(s->Flush().ok());
    EXPECT_EQ(s->committed_next_seq(), 6u);
  }
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->committed_next_seq(), 6u);  // what the file holds
}

// Frames a few milliseconds apart, as a 100 Hz sampler sends them, wake the
// writer once for each IngestFrames() (64) it takes in, and once for the
// first frame of an idle store: not also for the first frame after each
// take, while it waits for its commit interval anyway. A take that finds the
// writer still busy with the one before needs no wake (it goes on without
// waiting), so a loaded machine may count fewer wakes than takes: what must
// hold is that every take is taken in without waiting for the interval.
TEST(RingStore, FramesWakeTheWriterOnceATake) {
  TempDir dir;
  RingStoreOptions o;
  o.batch_frames = 512;
  o.commit_interval_ms = 3'600'000;  // commits at batch_frames or Flush only
  auto s = MustOpen(dir.File("wakes.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  constexpr int kFrames = 640;  // ten takes of 64
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_NE(s->Append(MakeFrame(kT0 + i * kSec, {i, 1, 2, 3})), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the writer waits again
  }
  // The eighth take fills batch_frames and commits it: only a writer that
  // took in each take as it completed gets there within the hour's interval.
  StoreStats st;
  for (int tries = 0; tries < 1000; ++tries) {
    auto r = s->Stats();
    ASSERT_TRUE(r.ok());
    st = *r;
    if (st.commits >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(st.commits, 1u) << "the writer did not take in each take as it completed";
  EXPECT_EQ(st.frames, 512);
  // One a take at most, and one for the first frame unless the writer was
  // awake then; the first frame after each take waking it too (19 more) was
  // the waste.
  EXPECT_GE(st.writer_wakeups, 1u);
  EXPECT_LE(st.writer_wakeups, 14u) << "the writer woke for frames it does not take in yet";
  ASSERT_TRUE(s->Flush().ok());
  auto after = s->Stats();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->frames, kFrames);
}

// A lone frame on an idle store still starts the commit interval: it is
// committed without a Flush once the interval has passed.
TEST(RingStore, ALoneFrameOnAnIdleStoreIsCommittedAfterTheInterval) {
  TempDir dir;
  RingStoreOptions o;
  o.batch_frames = 512;
  o.commit_interval_ms = 20;
  auto s = MustOpen(dir.File("lone.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  ASSERT_NE(s->Append(MakeFrame(kT0, {1, 2, 3, 4})), 0u);
  uint64_t commits = 0;
  for (int tries = 0; tries < 500 && commits == 0; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto st = s->Stats();
    ASSERT_TRUE(st.ok());
    commits = st->commits;
  }
  EXPECT_EQ(s->committed_next_seq(), 2u) << "the lone frame was never committed";
}

// The inode flags of `path` (chattr), or -1 where the file system has none.
int InodeFlags(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int flags = 0;
  const bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  ::close(fd);
  return ok ? flags : -1;
}

// (I19) The store's three files carry the no-atime flag, so a read after a
// commit does not write the inode; the directory's other files do not.
TEST(RingStore, ItsFilesTakeNoAccessTimes) {
  TempDir dir;
  const auto path = dir.File("atime.db");
  const auto other = dir.File("other");
  WriteAll(other, "x");
  ASSERT_GE(InodeFlags(other), 0)
      << dir.path() << ": this test needs a file system with inode flags (ext4, xfs, btrfs)";
  EXPECT_EQ(InodeFlags(other) & FS_NOATIME_FL, 0);
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  for (int i = 0; i < 5; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i, 1, 2, 3}));
  ASSERT_TRUE(s->Flush().ok());
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const int flags = InodeFlags(path + suffix);
    ASSERT_GE(flags, 0) << path << suffix;
    EXPECT_NE(flags & FS_NOATIME_FL, 0) << path << suffix;
  }
  EXPECT_EQ(InodeFlags(other) & FS_NOATIME_FL, 0);  // the directory's other files keep theirs
}

// (I19) Setting the flag keeps SQLite's locks: another process that
// checkpoints and closes the store while edgemond holds it must find it in
// use, and leave its WAL and -shm in place (a descriptor of the store's
// own, opened and closed beside SQLite's, dropped them, and the other
// process deleted the WAL under the writer).
TEST(RingStore, AnotherProcessClosingTheStoreLeavesItsWal) {
  TempDir dir;
  const auto path = dir.File("shared.db");
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  // The child is forked before the store opens: no thread and no SQLite
  // state of the parent's comes with it.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);
    char c = 0;
    if (::read(go[0], &c, 1) != 1) ::_exit(2);
    sqlite3* db = nullptr;
    int rc = sqlite3_open(path.c_str(), &db);
    if (rc == SQLITE_OK)
      rc = sqlite3_exec(db, "PRAGMA wal_checkpoint(PASSIVE)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    ::_exit(rc == SQLITE_OK ? 0 : 3);
  }
  ::close(go[0]);
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  for (int i = 0; i < 5; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i, 1, 2, 3}));
  ASSERT_TRUE(s->Flush().ok());
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GE(FileBytes(path + "-wal"), 0) << "the WAL was deleted under the writer";
  EXPECT_GE(FileBytes(path + "-shm"), 0) << "the -shm was deleted under the writer";
  for (int i = 5; i < 10; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i, 1, 2, 3}));
  ASSERT_TRUE(s->Flush().ok());
  s.reset();
  auto again = MustOpen(path);
  ASSERT_TRUE(again);
  auto all = again->Range(kT0, kT0 + 100 * kSec, {}, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->frames.size(), 10u);  // what went in after the other process closed is there
}

TEST(RingStore, SeqContinuesAfterReopen) {
  TempDir dir;
  const auto path = dir.File("seq.db");
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(SmallInventory());
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(s->Append(MakeFrame(kT0 + i * kSec, {i, 1, 2, 3})), static_cast<uint64_t>(i + 1));
    }
    EXPECT_EQ(s->next_seq(), 6u);
  }
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->next_seq(), 6u);
    s->SetInventory(SmallInventory());
    EXPECT_EQ(s->Append(MakeFrame(kT0 + 10 * kSec, {1, 1, 1, 1})), 6u);
    // A frame may carry a larger seq (the sampler's); a smaller one is raised.
    EXPECT_EQ(s->Append(MakeFrame(kT0 + 11 * kSec, {1, 1, 1, 1}, 100)), 100u);
    EXPECT_EQ(s->Append(MakeFrame(kT0 + 12 * kSec, {1, 1, 1, 1}, 50)), 101u);
  }
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->next_seq(), 102u);
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 8);
  EXPECT_EQ(st->first_seq, 1u);
  EXPECT_EQ(st->last_seq, 101u);
  auto latest = s->Latest();
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->frames.size(), 1u);
  EXPECT_EQ(latest->frames[0].seq, 101u);
  EXPECT_EQ(latest->frames[0].realtime_ns, kT0 + 12 * kSec);
}

TEST(RingStore, InventoryChangeKeepsHistoryAndIds) {
  TempDir dir;
  const auto path = dir.File("inv.db");
  Inventory a;
  a.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kPower),
                Ch(1, Kind::kThermal, "cpu-thermal", Field::kTemp)};
  a.channels[0].device = "ina3221 1-0040";
  Inventory b;  // a new sensor first, the old ones moved and one re-described
  b.channels = {Ch(0, Kind::kFan, "pwmfan", Field::kSpeed),
                Ch(1, Kind::kRail, "VDD_IN", Field::kPower),
                Ch(2, Kind::kThermal, "cpu-thermal", Field::kTemp)};
  b.channels[1].device = "ina3221 1-0041";
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(a);
    s->Append(MakeFrame(kT0, {1, 2}));
    s->SetInventory(b);
    s->Append(MakeFrame(kT0 + kSec, {30, 10, 20}));
  }
  Inventory c;  // after a restart only the thermal zone remains
  c.channels = {Ch(0, Kind::kThermal, "cpu-thermal", Field::kTemp)};
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  s->SetInventory(c);
  s->Append(MakeFrame(kT0 + 2 * kSec, {200}));
  ASSERT_TRUE(s->Flush().ok());

  auto chans = s->Channels();
  ASSERT_TRUE(chans.ok());
  ASSERT_EQ(chans->size(), 3u);
  EXPECT_EQ((*chans)[0].key, "rail/VDD_IN/power");
  EXPECT_EQ((*chans)[0].store_id, 1);
  EXPECT_EQ((*chans)[0].channel.device, "ina3221 1-0041");  // updated in place
  EXPECT_EQ((*chans)[1].key, "thermal/cpu-thermal/temp");
  EXPECT_EQ((*chans)[1].store_id, 2);
  EXPECT_EQ((*chans)[2].key, "fan/pwmfan/speed");
  EXPECT_EQ((*chans)[2].store_id, 3);

  auto r = s->Range(kT0, kT0 + 3 * kSec, {}, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->frames.size(), 3u);
  EXPECT_EQ(r->frames[0].values, (std::vector<Value>{1, 2, std::nullopt}));
  EXPECT_EQ(r->frames[1].values, (std::vector<Value>{10, 20, 30}));
  EXPECT_EQ(r->frames[2].values, (std::vector<Value>{std::nullopt, 200, std::nullopt}));
}

// ---------------------------------------------------------------- retention

// A rollup row is stamped with its period's start, before the first frame
// folded into it: that is not older data.
TEST(RingStore, OldestNsIsTheFirstFrameWithinItsRollupPeriod) {
  TempDir dir;
  auto o = Fast();
  o.rollup_period_ns = 10 * kSec;
  auto s = MustOpen(dir.File("oldest.db"), o);
  ASSERT_TRUE(s);
  auto empty = s->OldestNs();
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(*empty);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kCpu, "cpu", Field::kLoad)};
  s->SetInventory(inv);
  for (int i = 0; i < 30; ++i) s->Append(MakeFrame(kT0 + 7 * kSec + i * kSec, {i}));
  ASSERT_TRUE(s->Flush().ok());
  ASSERT_GT(s->Stats()->rollup_rows, 0);
  auto oldest = s->OldestNs();
  ASSERT_TRUE(oldest.ok()) << oldest.status().message();
  EXPECT_EQ(*oldest, kT0 + 7 * kSec);
}

// Stats() is on the service's read worker at the start of every Summarize:
// its frame bounds are four index lookups, never a scan of the frames table
// (four aggregates in one SELECT scanned it: over 100 ms for a week of 1 Hz
// frames, holding every Query and Summarize behind it). Checked through the
// statement's query plan on a real store file, and the bounds it reads.
TEST(RingStore, StatsReadsTheFrameBoundsWithoutAScan) {
  TempDir dir;
  const std::string path = dir.File("bounds.db");
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  for (int i = 0; i < 50; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i, 45000, 0, i}));
  ASSERT_TRUE(s->Flush().ok());
  auto st = s->Stats();
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->oldest_ns, kT0);
  EXPECT_EQ(st->newest_ns, kT0 + 49 * kSec);
  EXPECT_EQ(st->first_seq, 1u);
  EXPECT_EQ(st->last_seq, 50u);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* plan = nullptr;
  const std::string sql = std::string("EXPLAIN QUERY PLAN ") + RingStore::kFrameBoundsSql;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &plan, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  int searches = 0;
  while (sqlite3_step(plan) == SQLITE_ROW) {
    const std::string step = reinterpret_cast<const char*>(sqlite3_column_text(plan, 3));
    EXPECT_EQ(step.rfind("SCAN frames", 0), std::string::npos) << step;
    searches += step.rfind("SEARCH frames", 0) == 0;
  }
  sqlite3_finalize(plan);
  sqlite3_close(db);
  EXPECT_EQ(searches, 6);  // min and max seq, and the two frames they name
}

TEST(RingStore, DurationRetentionOfRawRollupAndWindows) {
  TempDir dir;
  auto o = Fast();
  o.raw_retention_ns = 100 * kSec;
  o.rollup_period_ns = 10 * kSec;
  o.rollup_retention_ns = 300 * kSec;
  auto s = MustOpen(dir.File("ret.db"), o);
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kCpu, "cpu", Field::kLoad)};
  s->SetInventory(inv);
  auto old_window = s->AddWindow("old", kT0 - 100 * kSec, kT0 - 50 * kSec);
  auto open_window = s->BeginWindow("open", kT0 - 100 * kSec);
  auto recent_window = s->AddWindow("recent", kT0 + 500 * kSec, kT0 + 550 * kSec);
  ASSERT_TRUE(old_window.ok() && open_window.ok() && recent_window.ok());
  for (int i = 0; i < 600; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i}));
  ASSERT_TRUE(s->Flush().ok());

  const int64_t newest = kT0 + 599 * kSec;
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->newest_ns, newest);
  EXPECT_EQ(st->oldest_ns, newest - 100 * kSec);  // exactly the retention
  EXPECT_EQ(st->frames, 101);
  EXPECT_EQ(st->expired_frames, 499u);
  // Rollup rows of closed periods starting at or after newest - 300 s:
  // t = 300, 310, ..., 580 (the period at 590 is still open).
  EXPECT_EQ(st->rollup_rows, 29);
  auto rows = s->Downsample("cpu/cpu/load", kT0, kT0 + 590 * kSec, 10 * kSec, Tier::kRollup);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 29u);
  EXPECT_EQ(rows->front().t_ns, kT0 + 300 * kSec);
  EXPECT_EQ(rows->front().min, 300);
  EXPECT_EQ(rows->front().max, 309);
  // The oldest data held: the rollup tier's, older than the raw tier.
  auto oldest = s->OldestNs();
  ASSERT_TRUE(oldest.ok()) << oldest.status().message();
  EXPECT_EQ(*oldest, kT0 + 300 * kSec);
  // Windows: the one that ended long ago is gone, the open one stays.
  auto w = s->ListWindows(INT64_MIN, INT64_MAX);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[0].label, "open");
  EXPECT_EQ((*w)[1].label, "recent");
  auto gone = s->GetWindow(*old_window);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
}

// (I5) With expire_step, expired frames are deleted in steps: none older
// than the retention plus the step after any commit, and some past the
// retention between deletions.
TEST(RingStore, RawRetentionDeletesInSteps) {
  TempDir dir;
  auto o = Fast();
  o.raw_retention_ns = 100 * kSec;
  o.expire_step_ns = 30 * kSec;
  auto s = MustOpen(dir.File("steps.db"), o);
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kCpu, "cpu", Field::kLoad)};
  s->SetInventory(inv);
  int64_t longest = 0;
  for (int i = 0; i < 600; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, {i}));
    if (i % 5 != 4) continue;
    ASSERT_TRUE(s->Flush().ok());
    auto st = s->Stats();
    ASSERT_TRUE(st.ok() && st->oldest_ns);
    const int64_t held = kT0 + i * kSec - *st->oldest_ns;
    EXPECT_LE(held, 130 * kSec) << "after frame " << i;
    longest = std::max(longest, held);
  }
  EXPECT_GT(longest, 120 * kSec);  // deletions waited for the step
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->expired_frames, 400u);
}

// The oldest t_ns of `table` (a table name, or one with a WHERE clause), read
// through a connection of the test's own; of rollup, its rows' first period.
std::optional<int64_t> OldestT(sqlite3* db, const std::string& table) {
  if (table == "period_values") {
    std::vector<store::internal::PeriodValue> values;
    EXPECT_EQ(edgemon::testing::PeriodValueRows(db, values), SQLITE_OK);
    std::optional<int64_t> t;
    for (const auto& v : values) t = std::min(t.value_or(v.t_ns), v.t_ns);
    return t;
  }
  sqlite3_stmt* q = nullptr;
  const std::string sql =
      (table == "rollup" ? "SELECT min(first_ns) FROM " : "SELECT min(t_ns) FROM ") + table;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr), SQLITE_OK) << sql;
  std::optional<int64_t> t;
  if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
    t = sqlite3_column_int64(q, 0);
  }
  sqlite3_finalize(q);
  return t;
}

// A store at `path` with SmallInventory() and a GPU clock, and a read-only
// connection of the test's own to its file, closed with it.
struct RetentionStore {
  std::unique_ptr<RingStore> store;
  sqlite3* db = nullptr;
  RetentionStore(const std::string& path, const RingStoreOptions& o) : store(MustOpen(path, o)) {
    if (!store) return;
    Inventory inv = SmallInventory();
    inv.channels.push_back(Ch(4, Kind::kGpu, "gpu", Field::kFreq));
    store->SetInventory(inv);
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      db = nullptr;
    }
  }
  ~RetentionStore() { sqlite3_close(db); }
  RetentionStore(const RetentionStore&) = delete;
  RetentionStore& operator=(const RetentionStore&) = delete;
};

// (I5) The rollup retention pass runs only when a row can be older than the
// cutoff (once a period, or after a block row from before it). Over many
// small commits every rollup, span and block table still holds exactly the
// rows from the cutoff on: none older, none deleted early.
TEST(RingStore, RollupRetentionHoldsAcrossManySmallCommits) {
  TempDir dir;
  const std::string path = dir.File("roll.db");
  auto o = Fast();
  o.raw_retention_ns = 100 * kSec;
  o.rollup_period_ns = 10 * kSec;      // blocks of 600 s
  o.rollup_retention_ns = 900 * kSec;  // longer than a block: blocks are kept, then expire
  RetentionStore rs(path, o);
  ASSERT_TRUE(rs.store && rs.db);
  auto& s = rs.store;
  auto oldest = [&rs](const std::string& table) { return OldestT(rs.db, table); };
  int checked = 0;
  std::set<int64_t> oldest_blocks;
  for (int i = 0; i < 3000; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, {i, 45000, 0, i, 306000 * (1 + i % 3)}));
    if (i % 7 != 6) continue;
    ASSERT_TRUE(s->Flush().ok());
    const int64_t cutoff = kT0 + i * kSec - o.rollup_retention_ns;
    for (const char* table : {"rollup", "spans", "span_stats", "span_values", "period_values"}) {
      const auto t = oldest(table);
      EXPECT_GE(t.value_or(cutoff), cutoff) << table << " after frame " << i;
    }
    if (auto b = oldest("span_stats")) oldest_blocks.insert(*b);
    if (i >= 1000) {  // a full retention of closed periods behind the newest
      EXPECT_EQ(oldest("rollup"), CeilToMultiple(cutoff, o.rollup_period_ns)) << i;
      EXPECT_EQ(oldest("spans WHERE level = 0"), CeilToMultiple(cutoff, o.rollup_period_ns)) << i;
      EXPECT_EQ(oldest("period_values"), CeilToMultiple(cutoff, o.rollup_period_ns)) << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 200);
  // Blocks were written, and expired one after another (each was the oldest
  // for a while).
  EXPECT_GE(oldest_blocks.size(), 3u);
}

// (I5) With closed periods written in batches, the rollup retention pass
// runs once a day: it rewrites the head of every channel's rows, so it waits
// until the cutoff passes a day boundary. No row of any rollup, span or block
// table outlives the retention by a day; between passes rows outlive it by
// more than a block.
TEST(RingStore, BatchedRollupRetentionDeletesWholeDays) {
  TempDir dir;
  const std::string path = dir.File("days.db");
  auto o = Fast();
  o.raw_retention_ns = 300 * kSec;
  o.rollup_period_ns = kSec;            // blocks of 60 s, days of 1440 s
  o.rollup_retention_ns = 2000 * kSec;  // longer than a day
  o.rollup_write_frames = 30;
  const int64_t day = SpanLength(o.rollup_period_ns, 2);
  RetentionStore rs(path, o);
  ASSERT_TRUE(rs.store && rs.db);
  auto& s = rs.store;
  auto oldest = [&rs](const std::string& table) { return OldestT(rs.db, table); };
  int64_t longest = 0;  // the most a row outlived the retention after a commit
  int passes = 0;       // commits after which the oldest row moved
  std::optional<int64_t> last_oldest;
  for (int i = 0; i < 8000; ++i) {  // the cutoff passes four or five day boundaries
    const int64_t t = kT0 + i * kSec;
    s->Append(MakeFrame(t, {i, 45000, 0, i, 306000 * (1 + i % 3)}));
    if (i % 11 != 10) continue;
    ASSERT_TRUE(s->Flush().ok());
    const int64_t cutoff = t - o.rollup_retention_ns;
    for (const char* table : {"rollup", "spans", "span_stats", "span_values", "period_values"}) {
      const auto held = oldest(table);
      EXPECT_GT(held.value_or(cutoff), cutoff - day) << table << " after frame " << i;
    }
    const auto r = oldest("rollup");
    if (!r) continue;  // no period written yet
    longest = std::max(longest, cutoff - *r);
    if (last_oldest && *r != *last_oldest) ++passes;
    last_oldest = r;
  }
  EXPECT_GT(longest, SpanLength(o.rollup_period_ns, 1)) << "the pass ran once a block";
  EXPECT_GE(passes, 4) << "rows expired at each day boundary";
  EXPECT_LE(passes, 5) << "rows expired between day boundaries";
}

// ------------------------------------------------------------- clock jumps

Frame At(int64_t boottime_ns, int64_t realtime_ns, int64_t v) {
  Frame f;
  f.boottime_ns = boottime_ns;
  f.realtime_ns = realtime_ns;
  f.values = {v};
  return f;
}

Inventory OneCpu() {
  Inventory inv;
  inv.channels = {Ch(0, Kind::kCpu, "cpu", Field::kLoad)};
  return inv;
}

// Every frame held, in seq order, checked never to go back in stored time.
std::vector<Frame> AllFramesMonotonic(RingStore& s) {
  auto r = s.Range(INT64_MIN, INT64_MAX, {}, 0);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  auto frames = r->frames;
  std::sort(frames.begin(), frames.end(),
            [](const Frame& a, const Frame& b) { return a.seq < b.seq; });
  for (size_t i = 1; i < frames.size(); ++i) {
    EXPECT_GE(frames[i].realtime_ns, frames[i - 1].realtime_ns) << "seq " << frames[i].seq;
  }
  return frames;
}

constexpr int64_t kDay = 86'400 * kSec;

TEST(RingStore, ForwardJumpDeletesNothingAndIsRecorded) {
  TempDir dir;
  auto o = Fast();
  o.raw_retention_ns = 100 * kSec;
  std::vector<StoreEvent> events;
  o.on_event = [&](const StoreEvent& e) { events.push_back(e); };
  auto s = MustOpen(dir.File("fwd.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(OneCpu());
  int64_t bt = 10 * kSec;
  int64_t v = 0;
  for (int i = 0; i < 60; ++i, bt += kSec) s->Append(At(bt, kT0 + bt, v++));
  // +8 days for 3 s, then back.
  for (int i = 0; i < 3; ++i, bt += kSec) s->Append(At(bt, kT0 + 8 * kDay + bt, v++));
  for (int i = 0; i < 30; ++i, bt += kSec) s->Append(At(bt, kT0 + bt, v++));
  ASSERT_TRUE(s->Flush().ok());

  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 93);
  EXPECT_EQ(st->expired_frames, 0u);
  auto frames = AllFramesMonotonic(*s);
  ASSERT_EQ(frames.size(), 93u);
  auto jumps = s->ClockJumps(INT64_MIN, INT64_MAX);
  ASSERT_TRUE(jumps.ok()) << jumps.status().message();
  ASSERT_EQ(jumps->size(), 2u);
  EXPECT_EQ((*jumps)[0].boottime_ns, 70 * kSec);
  EXPECT_EQ((*jumps)[0].new_offset_ns - (*jumps)[0].old_offset_ns, 8 * kDay);
  EXPECT_EQ((*jumps)[1].boottime_ns, 73 * kSec);
  EXPECT_EQ((*jumps)[1].new_offset_ns - (*jumps)[1].old_offset_ns, -8 * kDay);
  int jump_events = 0;
  for (const auto& e : events) jump_events += e.kind == StoreEvent::Kind::kClockJump;
  EXPECT_EQ(jump_events, 2);

  // Retention still applies, by elapsed boottime: 100 s after the newest frame.
  for (int i = 0; i < 200; ++i, bt += kSec) s->Append(At(bt, kT0 + bt, v++));
  ASSERT_TRUE(s->Flush().ok());
  st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 101);
  frames = AllFramesMonotonic(*s);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.front().boottime_ns, bt - kSec - 100 * kSec);
}

TEST(RingStore, BackwardJumpKeepsStoredTimeMonotonicAndDeletesNothing) {
  TempDir dir;
  auto o = Fast();
  o.raw_retention_ns = 1000 * kSec;
  auto s = MustOpen(dir.File("back.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(OneCpu());
  int64_t bt = 10 * kSec;
  int64_t v = 0;
  for (int i = 0; i < 60; ++i, bt += kSec) s->Append(At(bt, kT0 + bt, v++));
  // 30 days behind for 30 s, then corrected.
  for (int i = 0; i < 30; ++i, bt += kSec) s->Append(At(bt, kT0 - 30 * kDay + bt, v++));
  for (int i = 0; i < 30; ++i, bt += kSec) s->Append(At(bt, kT0 + bt, v++));
  ASSERT_TRUE(s->Flush().ok());

  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 120);
  EXPECT_EQ(st->expired_frames, 0u);
  auto frames = AllFramesMonotonic(*s);
  ASSERT_EQ(frames.size(), 120u);
  // While behind, stored time went on at boottime's pace from the last frame.
  EXPECT_EQ(frames[60].realtime_ns, kT0 + 70 * kSec);
  EXPECT_EQ(frames[89].realtime_ns, kT0 + 99 * kSec);
  EXPECT_EQ(frames[90].realtime_ns, kT0 + 100 * kSec);
  auto jumps = s->ClockJumps(INT64_MIN, INT64_MAX);
  ASSERT_TRUE(jumps.ok()) << jumps.status().message();
  ASSERT_EQ(jumps->size(), 2u);
  EXPECT_EQ((*jumps)[0].new_offset_ns - (*jumps)[0].old_offset_ns, -30 * kDay);
  EXPECT_EQ((*jumps)[0].realtime_ns, kT0 + 70 * kSec);
  EXPECT_EQ((*jumps)[1].new_offset_ns - (*jumps)[1].old_offset_ns, 30 * kDay);
}

// A frame appended as a shared snapshot (the sampler's) is stored as a copy
// of it would be, seq (I2) and stored time (I11) included, and the store
// never writes into it.
TEST(RingStore, ASharedFrameIsStoredAsACopyWouldBeAndLeftUnchanged) {
  TempDir dir;
  auto copied = MustOpen(dir.File("copied.db"), Fast());
  auto shared = MustOpen(dir.File("shared.db"), Fast());
  ASSERT_TRUE(copied && shared);
  copied->SetInventory(OneCpu());
  shared->SetInventory(OneCpu());
  std::vector<Frame> sent;
  std::vector<std::shared_ptr<const Frame>> held;
  int64_t bt = 10 * kSec;
  for (int i = 0; i < 40; ++i, bt += kSec) {
    // The wall clock 30 days behind for frames 10 to 19; seq 0 takes the
    // next one, frames from 30 on ask for a later seq.
    Frame f = At(bt, kT0 + bt - (i >= 10 && i < 20 ? 30 * kDay : 0), i * 7 - 100);
    f.seq = i < 30 ? 0 : 1000 + static_cast<uint64_t>(i);
    sent.push_back(f);
    held.push_back(std::make_shared<const Frame>(f));
    EXPECT_EQ(copied->Append(f), shared->Append(held.back())) << i;
  }
  ASSERT_TRUE(copied->Flush().ok());
  ASSERT_TRUE(shared->Flush().ok());
  auto want = AllFramesMonotonic(*copied);
  auto got = AllFramesMonotonic(*shared);
  ASSERT_EQ(want.size(), 40u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, want[i].seq) << i;
    EXPECT_EQ(got[i].boottime_ns, want[i].boottime_ns) << i;
    EXPECT_EQ(got[i].realtime_ns, want[i].realtime_ns) << i;
    EXPECT_EQ(got[i].values, want[i].values) << i;
  }
  EXPECT_EQ(got[12].realtime_ns, kT0 + 22 * kSec);  // kept monotonic, not 30 days back
  EXPECT_EQ(got[35].seq, 1035u);
  for (size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(held[i]->seq, sent[i].seq) << i;
    EXPECT_EQ(held[i]->realtime_ns, sent[i].realtime_ns) << i;
    EXPECT_EQ(held[i]->values, sent[i].values) << i;
  }
}

TEST(RingStore, BootIn1970ThenNtpStepKeepsHistoryAndRetentionFollowsBoottime) {
  TempDir dir;
  const auto path = dir.File("boot.db");
  auto o = Fast();
  o.raw_retention_ns = 1000 * kSec;
  int64_t v = 0;
  {  // First boot: the right time.
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    s->SetInventory(OneCpu());
    for (int64_t bt = 10 * kSec; bt < 70 * kSec; bt += kSec) s->Append(At(bt, kT0 + bt, v++));
  }
  {  // Second boot, no RTC: 1970 until NTP steps the clock an hour after the last frame.
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    s->SetInventory(OneCpu());
    int64_t bt = 5 * kSec;
    for (int i = 0; i < 20; ++i, bt += kSec) s->Append(At(bt, bt, v++));
    for (int i = 0; i < 20; ++i, bt += kSec) s->Append(At(bt, kT0 + 3600 * kSec + bt, v++));
    ASSERT_TRUE(s->Flush().ok());
    auto st = s->Stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->frames, 100);
    EXPECT_EQ(st->expired_frames, 0u);
    auto frames = AllFramesMonotonic(*s);
    ASSERT_EQ(frames.size(), 100u);
    // The 1970 frames follow the last stored one at boottime's pace.
    EXPECT_EQ(frames[60].realtime_ns, kT0 + 69 * kSec);
    EXPECT_EQ(frames[61].realtime_ns, kT0 + 70 * kSec);
    EXPECT_EQ(frames[80].realtime_ns, kT0 + 3600 * kSec + 25 * kSec);
    auto jumps = s->ClockJumps(INT64_MIN, INT64_MAX);
    ASSERT_TRUE(jumps.ok()) << jumps.status().message();
    ASSERT_EQ(jumps->size(), 1u);
    EXPECT_EQ((*jumps)[0].boottime_ns, 25 * kSec);
    EXPECT_EQ((*jumps)[0].old_offset_ns, 0);
    EXPECT_EQ((*jumps)[0].new_offset_ns, kT0 + 3600 * kSec);
  }
  // Reopened with a short retention: the first boot's frames are at least
  // (its last boottime - theirs) + the second boot's boottime old.
  o.raw_retention_ns = 100 * kSec;
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  s->SetInventory(OneCpu());
  int64_t bt = 45 * kSec;
  s->Append(At(bt, kT0 + 3600 * kSec + bt, v++));
  ASSERT_TRUE(s->Flush().ok());
  // Cutoff in the first boot: 69 s + 45 s - 100 s = 14 s: four frames go.
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 97);
  for (bt += kSec; bt < 300 * kSec; bt += kSec) s->Append(At(bt, kT0 + 3600 * kSec + bt, v++));
  ASSERT_TRUE(s->Flush().ok());
  auto frames = AllFramesMonotonic(*s);
  ASSERT_EQ(frames.size(), 101u);
  EXPECT_EQ(frames.front().boottime_ns, 199 * kSec);
}

// A window keeps who opened it (principal.h); older rows read as "".
TEST(RingStore, WindowsKeepTheirOwner) {
  TempDir dir;
  auto s = MustOpen(dir.File("owners.db"), Fast());
  ASSERT_TRUE(s);
  auto mine = s->BeginWindow("run", kT0, std::nullopt, "uid:1000");
  auto legacy = s->BeginWindow("old", kT0);
  ASSERT_TRUE(mine.ok() && legacy.ok());
  auto w = s->GetWindow(*mine);
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_EQ((*w)->owner, "uid:1000");
  auto open = s->OpenWindows();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 2u);
  EXPECT_EQ((*open)[0].owner, "uid:1000");
  EXPECT_EQ((*open)[1].owner, "");
}

// What a run's window carries once ended (WindowResult) is stored with the
// end, in the same transaction, and read back by every listing; a window
// ended without one reads as absent (never 0).
TEST(RingStore, WindowsKeepTheirRunResult) {
  TempDir dir;
  const auto path = dir.File("results.db");
  int64_t run = 0, bare = 0;
  {
    auto s = MustOpen(path, Fast());
    ASSERT_TRUE(s);
    auto a = s->BeginWindow("resnet50", kT0);
    auto b = s->BeginWindow("plain", kT0);
    ASSERT_TRUE(a.ok() && b.ok());
    run = *a;
    bare = *b;
    WindowResult r{12.5, 130, "VDD_IN", 4321.25};
    ASSERT_TRUE(s->EndWindowFrom(run, kT0 + kSec, kT0 + 3 * kSec, r).ok());
    ASSERT_TRUE(s->EndWindow(bare, kT0 + 2 * kSec).ok());
  }
  auto s = MustOpen(path, Fast());  // durable: read back from the file
  ASSERT_TRUE(s);
  auto w = s->GetWindow(run);
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_EQ((*w)->start_ns, kT0 + kSec);
  EXPECT_EQ((*w)->result, (WindowResult{12.5, 130, "VDD_IN", 4321.25}));
  auto all = s->ListWindows(0, std::numeric_limits<int64_t>::max());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  const Window& plain = (*all)[0].id == bare ? (*all)[0] : (*all)[1];
  EXPECT_EQ(plain.result, WindowResult{});
  EXPECT_FALSE(plain.result.items.has_value());
  EXPECT_FALSE(plain.result.input_energy_mj.has_value());
  auto closed = s->ClosedWindowsAfter(std::numeric_limits<int64_t>::min(), 0, 0);
  ASSERT_TRUE(closed.ok());
  ASSERT_EQ(closed->size(), 2u);
  EXPECT_EQ(closed->back().result.exit_status, 130);
}

TEST(RingStore, SchemaOneStoreGetsItsBootSegmentsOnUpgrade) {
  TempDir dir;
  const auto path = dir.File("v1.db");
  auto o = Fast();
  o.raw_retention_ns = 1000 * kSec;
  {
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    s->SetInventory(OneCpu());
    for (int64_t bt = 10 * kSec; bt < 70 * kSec; bt += kSec) s->Append(At(bt, kT0 + bt, 1));
    for (int64_t bt = 5 * kSec; bt < 45 * kSec; bt += kSec) {
      s->Append(At(bt, kT0 + 3600 * kSec + bt, 2));
    }
  }
  {  // Back to schema 1, as written before boot segments were kept.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
    ASSERT_EQ(sqlite3_exec(db,
                           (std::string(edgemon::testing::kUndoSchema11) +
                            edgemon::testing::kUndoSchema10 + edgemon::testing::kUndoSchema9 +
                            edgemon::testing::kUndoSchema8 + edgemon::testing::kUndoSchema7 +
                            "DROP TABLE push_cursors; DROP TABLE spans; DROP TABLE span_stats; "
                            "DROP TABLE span_values; "
                            "DELETE FROM meta WHERE key IN ('spans_from_ns', 'blocks_through_ns'); "
                            "DROP TABLE boots; DROP TABLE clock_jumps; ALTER TABLE windows DROP "
                            "COLUMN abandoned; ALTER TABLE windows DROP COLUMN lease_ns; ALTER "
                            "TABLE windows DROP COLUMN owner; PRAGMA user_version=1")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  o.raw_retention_ns = 100 * kSec;
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  s->SetInventory(OneCpu());
  s->Append(At(45 * kSec, kT0 + 3645 * kSec, 3));
  ASSERT_TRUE(s->Flush().ok());
  // As in a store written with segments: 69 s + 45 s - 100 s = 14 s, so the
  // first boot's frames at 10..13 s go and nothing else.
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 97);
  EXPECT_EQ(st->expired_frames, 4u);
}

// (I6) Without a cap the WAL holds up to kMaxWalPages before the writer
// checkpoints it: pages that many commits change again go to the database
// file once per checkpoint. It never holds much more than that plus a batch.
TEST(RingStore, WithoutACapTheWalHoldsUpToMaxWalPagesBetweenCheckpoints) {
  TempDir dir;
  const auto path = dir.File("wal.db");
  auto o = Fast();
  o.batch_frames = 200;
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  std::mt19937_64 rng(1);
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  const int64_t page = st->page_size;
  int64_t max_wal = 0;
  bool restarted = false;  // the WAL was checkpointed and written from its start again
  for (int i = 0; i < 200'000 && !restarted; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
    if (i % 200 != 199) continue;
    ASSERT_TRUE(s->Flush().ok());
    const int64_t wal = FileBytes(path + "-wal");
    if (wal < max_wal) restarted = true;  // truncated to journal_size_limit after it
    max_wal = std::max(max_wal, wal);
    auto now = s->Stats();
    ASSERT_TRUE(now.ok());
    if (max_wal > kMaxWalPages * page && now->wal_bytes < max_wal / 2) restarted = true;
  }
  EXPECT_TRUE(restarted) << "the writer never checkpointed";
  EXPECT_GT(max_wal, (kMaxWalPages - 512) * page) << "checkpointed well before kMaxWalPages";
  EXPECT_LT(max_wal, (kMaxWalPages + 512) * page);
}

TEST(RingStore, MaxSizeIsNeverExceededAndOldestFramesGo) {
  TempDir dir;
  const auto path = dir.File("cap.db");
  const int64_t cap = 2 << 20;
  auto o = Fast();
  o.max_bytes = cap;
  o.batch_frames = 200;
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  std::mt19937_64 rng(1);
  const int kFrames = 12000;
  int64_t max_db = 0, max_wal = 0;
  for (int i = 0; i < kFrames; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
    if (i % 500 == 499) {
      Status flushed = s->Flush();
      ASSERT_TRUE(flushed.ok()) << flushed.message();
      max_db = std::max(max_db, FileBytes(path));
      max_wal = std::max(max_wal, FileBytes(path + "-wal"));
      auto st = s->Stats();
      ASSERT_TRUE(st.ok());
      ASSERT_LE(st->page_count * st->page_size, cap);
      ASSERT_LE(st->db_bytes, cap);
    }
  }
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->trimmed_frames, 0u);
  EXPECT_EQ(st->last_seq, static_cast<uint64_t>(kFrames));
  ASSERT_TRUE(st->first_seq.has_value());
  EXPECT_GT(*st->first_seq, 1u);
  // The ring holds a contiguous tail of the frames.
  EXPECT_EQ(st->frames, static_cast<int64_t>(*st->last_seq - *st->first_seq + 1));
  EXPECT_GT(st->frames, 1000);
  EXPECT_EQ(st->dropped_batches, 0u);
  EXPECT_TRUE(s->IntegrityCheck().ok());
  auto first = s->Range(kT0, kT0 + 10 * kSec, {}, 0);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->frames.empty());  // the oldest frames were dropped
  ASSERT_TRUE(s->Close().ok());
  EXPECT_LE(FileBytes(path), cap);
  EXPECT_LE(max_db, cap);
  RecordProperty("max_wal_bytes", std::to_string(max_wal));
  EXPECT_LT(max_wal, cap);

  // Lowering the cap shrinks the file at the next open.
  o.max_bytes = 1 << 20;
  auto small = MustOpen(path, o);
  ASSERT_TRUE(small);
  EXPECT_LE(FileBytes(path), 1 << 20);
  auto st2 = small->Stats();
  ASSERT_TRUE(st2.ok());
  EXPECT_LT(st2->frames, st->frames);
  EXPECT_EQ(st2->last_seq, static_cast<uint64_t>(kFrames));
  EXPECT_TRUE(small->IntegrityCheck().ok());
}

// A store capped at 2 MiB and 6000 frames of the Orin-like inventory in it
// (over 1 MiB of file, closed): a store to lower the cap of.
RingStoreOptions TwoMiBCap() {
  auto o = Fast();
  o.max_bytes = 2 << 20;
  o.batch_frames = 200;
  return o;
}

void FillTwoMiBStore(const std::string& path) {
  Inventory inv = edgemon::testing::OrinLikeInventory();
  auto s = MustOpen(path, TwoMiBCap());
  ASSERT_TRUE(s);
  s->SetInventory(inv);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 6000; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
  }
  ASSERT_TRUE(s->Close().ok());
}

// (I6) A store is made without a pointer map (auto_vacuum=NONE), so a
// lowered cap is met by VACUUM; a store made with one (as they were before)
// still shrinks by incremental_vacuum, and keeps its mode.
TEST(RingStore, ALoweredCapShrinksStoresMadeWithAndWithoutAPointerMap) {
  for (const bool pointer_map : {false, true}) {
    SCOPED_TRACE(pointer_map ? "auto_vacuum=INCREMENTAL" : "auto_vacuum=NONE");
    TempDir dir;
    const auto path = dir.File("lowered.db");
    auto o = TwoMiBCap();
    Inventory inv = edgemon::testing::OrinLikeInventory();
    ASSERT_NO_FATAL_FAILURE(FillTwoMiBStore(path));
    EXPECT_EQ(edgemon::testing::QueryInt(path, "PRAGMA auto_vacuum"), 0);  // a new store's
    if (pointer_map) {
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      ASSERT_EQ(
          sqlite3_exec(db, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM;", nullptr, nullptr, nullptr),
          SQLITE_OK)
          << sqlite3_errmsg(db);
      sqlite3_close(db);
      ASSERT_EQ(edgemon::testing::QueryInt(path, "PRAGMA auto_vacuum"), 2);
    }
    const int64_t before = FileBytes(path);
    ASSERT_GT(before, 1 << 20);
    o.max_bytes = 1 << 20;
    {
      auto s = MustOpen(path, o);
      ASSERT_TRUE(s);
      EXPECT_LE(FileBytes(path), 1 << 20);
      auto st = s->Stats();
      ASSERT_TRUE(st.ok());
      EXPECT_EQ(st->last_seq, 6000u);
      EXPECT_GT(st->frames, 100);
      EXPECT_TRUE(s->IntegrityCheck().ok());
      // It goes on under the new cap.
      std::mt19937_64 rng(3);
      for (int i = 6000; i < 7000; ++i) {
        s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
      }
      ASSERT_TRUE(s->Close().ok());
    }
    EXPECT_LE(FileBytes(path), 1 << 20);
    EXPECT_EQ(edgemon::testing::QueryInt(path, "PRAGMA auto_vacuum"), pointer_map ? 2 : 0);
  }
}

// A mount namespace of this process's own (a user namespace first when not
// root), with `dir` a tmpfs of `bytes`: "" or why it could not be made.
std::string SmallFileSystem(const std::string& dir, int64_t bytes) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(uid == 0 ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    return std::string("unshare: ") + std::strerror(errno);
  }
  if (uid != 0) {
    auto put = [](const char* file, const std::string& text) {
      std::ofstream f(file);
      f << text;
      return static_cast<bool>(f.flush());
    };
    if (!put("/proc/self/setgroups", "deny") ||
        !put("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n") ||
        !put("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n")) {
      return "cannot map the user namespace's ids";
    }
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("mount --make-rprivate /: ") + std::strerror(errno);
  }
  std::filesystem::create_directories(dir);
  const std::string size = "size=" + std::to_string(bytes);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, size.c_str()) != 0) {
    return std::string("mount tmpfs: ") + std::strerror(errno);
  }
  return "";
}

// A lowered cap rebuilds the store (VACUUM) through the WAL: on a file
// system without room for that, the start fails with the reason, keeps
// every frame the trim left and is not taken for damage; once there is room,
// the next start shrinks the store.
TEST(RingStore, ALoweredCapOnAFullFileSystemFailsClearlyAndLosesNothing) {
  TempDir dir;
  const auto made = dir.File("full.db");
  auto o = TwoMiBCap();
  ASSERT_NO_FATAL_FAILURE(FillTwoMiBStore(made));
  const int64_t bytes = FileBytes(made);
  ASSERT_GT(bytes, 1 << 20);
  ASSERT_EQ(FileBytes(made + "-wal"), -1);  // checkpointed and gone at close
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(out[0]);
    std::ostringstream report;
    auto send = [&] {
      const std::string text = report.str();
      (void)!::write(out[1], text.data(), text.size());
      ::_exit(0);
    };
    const std::string small = dir.File("small"), path = small + "/full.db";
    // Room for the store and 256 KiB: not for the VACUUM's copy in the WAL.
    if (std::string why = SmallFileSystem(small, bytes + (256 << 10)); !why.empty()) {
      report << "setup " << why << "\n";
      send();
    }
    std::filesystem::copy_file(made, path);
    auto lowered = o;
    lowered.max_bytes = 1 << 20;
    auto first = RingStore::Open(path, lowered);
    report << "first " << (first.ok() ? "opened" : first.status().message()) << "\n";
    first = Status::Internal("closed");
    for (const auto& e : std::filesystem::directory_iterator(small)) {
      report << "file " << e.path().filename().string() << "\n";
    }
    if (::mount("tmpfs", small.c_str(), "tmpfs", MS_REMOUNT, "size=16m") != 0) {
      report << "setup remount: " << std::strerror(errno) << "\n";
      send();
    }
    auto second = RingStore::Open(path, lowered);
    if (!second.ok()) {
      report << "second " << second.status().message() << "\n";
      send();
    }
    auto st = (*second)->Stats();
    report << "second opened\n"
           << "last_seq " << (st.ok() && st->last_seq ? *st->last_seq : 0) << "\n"
           << "frames " << (st.ok() ? st->frames : 0) << "\n"
           << "integrity " << ((*second)->IntegrityCheck().ok() ? "ok" : "failed") << "\n"
           << "close " << ((*second)->Close().ok() ? "ok" : "failed") << "\n"
           << "bytes " << FileBytes(path) << "\n";
    send();
  }
  ::close(out[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << text;
  std::map<std::string, std::string> r;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto space = line.find(' ');
    if (line.rfind("file ", 0) == 0) {
      r["files"] += line.substr(5) + " ";
    } else {
      r[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
    }
  }
  ASSERT_EQ(r.count("setup"), 0u) << r["setup"];
  EXPECT_NE(r["first"].find("shrinking to max_bytes"), std::string::npos) << r["first"];
  EXPECT_NE(r["first"].find("full"), std::string::npos) << r["first"];
  EXPECT_EQ(r["files"].find(".bad"), std::string::npos) << r["files"];  // not taken for damage
  ASSERT_EQ(r["second"], "opened") << text;
  EXPECT_EQ(r["last_seq"], "6000");  // the newest frames are all there
  EXPECT_GT(std::stoll(r["frames"]), 100);
  EXPECT_EQ(r["integrity"], "ok");
  EXPECT_EQ(r["close"], "ok");
  EXPECT_LE(std::stoll(r["bytes"]), 1 << 20);
}

// Windows are capped as a table of their own: a flood of long-labelled
// windows under a small cap never evicts a frame (it used to take all of them).
TEST(RingStore, WindowsNeverEvictFrameHistory) {
  TempDir dir;
  auto o = Fast();
  o.max_bytes = 2 << 20;
  o.batch_frames = 200;
  auto s = MustOpen(dir.File("w.db"), o);
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 500; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
  }
  ASSERT_TRUE(s->Flush().ok());
  const size_t cap = s->max_windows();
  EXPECT_EQ(cap, size_t{256});  // 2 MiB / 8 KiB
  const std::string label(256, 'w');
  for (int i = 0; i < 7000; ++i) {
    auto w = s->AddWindow(label, kT0 + i * 1000, kT0 + i * 1000 + 500);
    ASSERT_TRUE(w.ok()) << i << ": " << w.status().message();
  }
  s->Append(MakeFrame(kT0 + 500 * kSec, BigValues(inv, 500, rng)));
  ASSERT_TRUE(s->Flush().ok());
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 501);
  EXPECT_EQ(st->first_seq, 1u);
  EXPECT_EQ(st->trimmed_frames, 0u);
  EXPECT_EQ(st->windows, static_cast<int64_t>(cap));
  // The newest windows stay, the oldest closed ones went.
  auto all = s->ListWindows(INT64_MIN, INT64_MAX);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), cap);
  EXPECT_EQ(all->back().start_ns, kT0 + 6999 * 1000);
  // A table of open windows only refuses one more, still without a trim.
  for (size_t i = 0; i < cap; ++i) {
    ASSERT_TRUE(s->BeginWindow(label, kT0 + 600 * kSec, 5 * kSec).ok()) << i;
  }
  auto refused = s->BeginWindow(label, kT0 + 600 * kSec);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("open windows"), std::string::npos)
      << refused.status().message();
  auto open = s->OpenWindows();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), cap);
  EXPECT_EQ(open->front().lease_ns, 5 * kSec);
  // Abandoned is stored and read back.
  ASSERT_TRUE(s->EndWindow(open->front().id, kT0 + 601 * kSec, /*abandoned=*/true).ok());
  auto g = s->GetWindow(open->front().id);
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_TRUE((*g)->abandoned);
  EXPECT_EQ((*g)->end_ns, kT0 + 601 * kSec);
  st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 501);
  EXPECT_EQ(st->trimmed_frames, 0u);
  EXPECT_TRUE(s->IntegrityCheck().ok());
}

// A size trim takes the closed windows that ended before the oldest data left.
TEST(RingStore, WindowsAreTrimmedWithTheHistory) {
  TempDir dir;
  auto o = Fast();
  o.max_bytes = 256 << 10;
  o.raw_retention_ns = 30LL * 86400 * kSec;
  o.rollup_retention_ns = 30LL * 86400 * kSec;
  o.rollup_period_ns = 10 * kSec;
  auto s = MustOpen(dir.File("t.db"), o);
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  auto early = s->AddWindow("early", kT0, kT0 + 5 * kSec);
  auto open = s->BeginWindow("open", kT0);
  auto late = s->AddWindow("late", kT0 + 2990 * kSec, kT0 + 2995 * kSec);
  ASSERT_TRUE(early.ok() && open.ok() && late.ok());
  std::mt19937_64 rng(3);
  for (int i = 0; i < 3000; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
  }
  ASSERT_TRUE(s->Flush().ok());
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  ASSERT_GT(st->trimmed_frames, 0u);
  ASSERT_GT(st->trimmed_rollup_rows, 0u);
  auto e = s->GetWindow(*early);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->has_value()) << "a window older than every stored frame and rollup row stays";
  for (int64_t id : {*open, *late}) {
    auto w = s->GetWindow(id);
    ASSERT_TRUE(w.ok());
    EXPECT_TRUE(w->has_value()) << id;
  }
}

// ListWindows pages by (start, id), ties included.
TEST(RingStore, ListWindowsPages) {
  TempDir dir;
  auto s = MustOpen(dir.File("p.db"));
  ASSERT_TRUE(s);
  for (int i = 0; i < 25; ++i)
    ASSERT_TRUE(s->AddWindow("w", kT0 + (i / 2) * kSec, kT0 + 100 * kSec).ok());
  std::vector<int64_t> seen;
  std::optional<std::pair<int64_t, int64_t>> after;
  for (;;) {
    auto page = s->ListWindows(INT64_MIN, INT64_MAX, 10, after);
    ASSERT_TRUE(page.ok());
    for (const auto& w : *page) seen.push_back(w.id);
    if (page->size() < 10) break;
    after = std::pair{page->back().start_ns, page->back().id};
  }
  ASSERT_EQ(seen.size(), 25u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i + 1));
}

// ---------------------------------------------------------------- rollup

struct Expect {
  int64_t count = 0, min = INT64_MAX, max = INT64_MIN;
  double sum = 0;
};

TEST(RingStore, RollupHoldsExactMinAvgMaxPerPeriod) {
  TempDir dir;
  const auto path = dir.File("roll.db");
  Inventory inv;
  inv.channels = {Ch(0, Kind::kThermal, "tj-thermal", Field::kTemp)};
  std::map<int64_t, Expect> expect;  // by period start
  auto value = [](int i) -> Value {
    if (i % 7 == 3) return std::nullopt;
    return (i * 37) % 101 - 50;
  };
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(inv);
    for (int i = 0; i < 180; ++i) {
      Value v = value(i);
      s->Append(MakeFrame(kT0 + i * kSec, {v}));
      if (!v) continue;
      auto& e = expect[kT0 + (i / 60) * 60 * kSec];
      e.count++;
      e.min = std::min(e.min, *v);
      e.max = std::max(e.max, *v);
      e.sum += static_cast<double>(*v);
    }
    ASSERT_TRUE(s->Flush().ok());
    // Two closed periods come from the rollup tier, the open one from raw.
    for (Tier tier : {Tier::kRollup, Tier::kRaw, Tier::kAuto}) {
      auto b = s->Downsample("thermal/tj-thermal/temp", kT0, kT0 + 180 * kSec, 60 * kSec, tier);
      ASSERT_TRUE(b.ok()) << b.status().message();
      ASSERT_EQ(b->size(), 3u);
      for (const auto& bucket : *b) {
        const auto& e = expect.at(bucket.t_ns);
        EXPECT_EQ(bucket.count, e.count);
        EXPECT_EQ(bucket.min, e.min);
        EXPECT_EQ(bucket.max, e.max);
        EXPECT_DOUBLE_EQ(bucket.avg, e.sum / static_cast<double>(e.count));
      }
    }
  }
  // Close wrote the open period: the table itself holds all three.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_EQ(edgemon::testing::ExpandRollup(db), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db, "SELECT t_ns, count, min, max, sum FROM rollup_rows ORDER BY t_ns", -1,
                         &st, nullptr),
      SQLITE_OK);
  int rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const auto& e = expect.at(sqlite3_column_int64(st, 0));
    EXPECT_EQ(sqlite3_column_int64(st, 1), e.count);
    EXPECT_EQ(sqlite3_column_int64(st, 2), e.min);
    EXPECT_EQ(sqlite3_column_int64(st, 3), e.max);
    EXPECT_EQ(static_cast<double>(sqlite3_column_int64(st, 4)), e.sum);
    ++rows;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_EQ(rows, 3);
}

// (I7) A store of schema 8 kept its rollup rows by (channel, t_ns). Opening
// it moves them to (chunk, channel, t_ns) a day at a time, also after a
// migration that stopped part way: every row stays,
// each in the chunk that RollupChunk gives (the SQL floor division agrees
// with the C++ one for negative times too), and reads answer as before.
TEST(RingStore, ASchema8StoreKeepsEveryRollupRowUnderTheChunkedKey) {
  TempDir dir;
  const auto path = dir.File("v8.db");
  Inventory inv;
  inv.channels = {Ch(0, Kind::kThermal, "tj-thermal", Field::kTemp),
                  Ch(1, Kind::kCpu, "cpu", Field::kLoad)};
  const std::vector<std::string> keys = {"thermal/tj-thermal/temp", "cpu/cpu/load"};
  const int64_t span = 2 * 86400 * kSec + 5 * 3600 * kSec;  // 2 days 5 hours: three moves
  std::vector<std::vector<Bucket>> rolled;
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(inv);
    for (int64_t t = 0; t < span; t += 30 * kSec) {
      const int64_t i = t / kSec;
      s->Append(MakeFrame(kT0 + t, {(i * 37) % 101 - 50, (i * 11) % 1000}));
    }
    ASSERT_TRUE(s->Close().ok());
  }
  using Row = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
  auto rows_of = [](sqlite3* db, const std::string& table) {
    std::vector<Row> out;
    sqlite3_stmt* st = nullptr;
    const std::string sql =
        "SELECT channel, t_ns, count, min, max, sum FROM " + table + " ORDER BY channel, t_ns";
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
      out.emplace_back(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                       sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5));
    }
    sqlite3_finalize(st);
    return out;
  };
  // Back to schema 8's table, with two rows of a channel no channels row
  // names, before 1970 and at the start of int64.
  std::vector<Row> rows;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
    ASSERT_EQ(sqlite3_exec(db,
                           (std::string("BEGIN; ") + edgemon::testing::kUndoSchema13 +
                            edgemon::testing::kUndoSchema12 + edgemon::testing::kUndoSchema11 +
                            edgemon::testing::kUndoSchema10 + edgemon::testing::kUndoSchema9 +
                            "INSERT INTO rollup VALUES(99, -1, 1, 5, 5, 5), "
                            "(99, -9223372036854775807 - 1, 1, 6, 6, 6); "
                            "PRAGMA user_version = 8; COMMIT;")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    rows = rows_of(db, "rollup");
    // As a migration stopped after its first day leaves it.
    ASSERT_EQ(sqlite3_exec(db,
                           (std::string("BEGIN; CREATE TABLE rollup_by_chunk(chunk INTEGER NOT "
                                        "NULL, channel INTEGER NOT NULL, t_ns INTEGER NOT NULL, "
                                        "count INTEGER NOT NULL, min INTEGER NOT NULL, max "
                                        "INTEGER NOT NULL, sum INTEGER NOT NULL, PRIMARY "
                                        "KEY(chunk, channel, t_ns)) WITHOUT ROWID; "
                                        "INSERT INTO rollup_by_chunk SELECT t_ns / 3600000000000, "
                                        "channel, t_ns, count, min, max, sum FROM rollup WHERE "
                                        "t_ns >= 0 AND t_ns < ") +
                            std::to_string(kT0 + 86400 * kSec) +
                            "; DELETE FROM rollup WHERE t_ns >= 0 AND t_ns < " +
                            std::to_string(kT0 + 86400 * kSec) + "; COMMIT;")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  ASSERT_GT(rows.size(), 2u * 3000u);
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    for (const auto& key : keys) {
      auto b = s->Downsample(key, kT0, kT0 + span, 3600 * kSec, Tier::kRollup);
      ASSERT_TRUE(b.ok()) << b.status().message();
      rolled.push_back(*b);
    }
    EXPECT_TRUE(s->IntegrityCheck().ok());
    ASSERT_TRUE(s->Close().ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_EQ(edgemon::testing::ExpandRollup(db), SQLITE_OK) << sqlite3_errmsg(db);
  EXPECT_EQ(rows_of(db, "rollup_rows"), rows);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT chunk, t_ns FROM rollup_rows", -1, &st, nullptr),
            SQLITE_OK);
  size_t chunked = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    EXPECT_EQ(sqlite3_column_int64(st, 0), FloorDiv(sqlite3_column_int64(st, 1), 3600 * kSec));
    ++chunked;
  }
  sqlite3_finalize(st);
  EXPECT_EQ(chunked, rows.size());
  // Each channel's span of hours covers its rows exactly after the move.
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT count(*) FROM channels c WHERE "
                               "(SELECT min(t_ns) FROM rollup_rows WHERE channel = c.id) IS NOT "
                               "(SELECT first_ns FROM rollup_channels WHERE channel = c.id) OR "
                               "(SELECT max(t_ns) FROM rollup_rows WHERE channel = c.id) IS NOT "
                               "(SELECT last_ns FROM rollup_channels WHERE channel = c.id)",
                               -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), 0);
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), kSchemaVersion);
  sqlite3_finalize(st);
  sqlite3_close(db);
  // The hourly figures from the rollup tier, against the frames' own.
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  for (size_t k = 0; k < keys.size(); ++k) {
    auto raw = s->Downsample(keys[k], kT0, kT0 + span, 3600 * kSec, Tier::kRaw);
    ASSERT_TRUE(raw.ok()) << raw.status().message();
    ASSERT_EQ(rolled[k].size(), raw->size()) << keys[k];
    for (size_t i = 0; i < raw->size(); ++i) {
      EXPECT_EQ(rolled[k][i].t_ns, (*raw)[i].t_ns) << keys[k] << " " << i;
      EXPECT_EQ(rolled[k][i].count, (*raw)[i].count) << keys[k] << " " << i;
      EXPECT_EQ(rolled[k][i].min, (*raw)[i].min) << keys[k] << " " << i;
      EXPECT_EQ(rolled[k][i].max, (*raw)[i].max) << keys[k] << " " << i;
      EXPECT_DOUBLE_EQ(rolled[k][i].avg, (*raw)[i].avg) << keys[k] << " " << i;
    }
  }
}

// (I6, I7) A schema-8 store at its size cap migrates too: the moved rows
// are larger (the chunk column) and the file may pass the cap while they
// move, but Open() trims the oldest data back under it before it returns.
TEST(RingStore, ASchema8StoreAtItsCapMigratesAndEndsUnderIt) {
  TempDir dir;
  const auto path = dir.File("cap8.db");
  const int64_t cap = 2 << 20;
  auto o = Fast();
  o.max_bytes = cap;
  o.batch_frames = 200;
  o.rollup_period_ns = kSec;  // many rollup rows for the frames written
  {
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    Inventory inv = edgemon::testing::OrinLikeInventory();
    s->SetInventory(inv);
    std::mt19937_64 rng(1);
    for (int i = 0; i < 6000; ++i) {
      s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
    }
    ASSERT_TRUE(s->Close().ok());
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
    ASSERT_EQ(sqlite3_exec(db,
                           (std::string("BEGIN; ") + edgemon::testing::kUndoSchema13 +
                            edgemon::testing::kUndoSchema12 + edgemon::testing::kUndoSchema11 +
                            edgemon::testing::kUndoSchema10 + edgemon::testing::kUndoSchema9 +
                            "PRAGMA user_version = 8; COMMIT; VACUUM;")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  ASSERT_LE(FileBytes(path), cap);
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  EXPECT_LE(FileBytes(path), cap);
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->rollup_rows, 0);
  EXPECT_EQ(st->last_seq, 6000u);
  EXPECT_TRUE(s->IntegrityCheck().ok());
  ASSERT_TRUE(s->Close().ok());
  EXPECT_LE(FileBytes(path), cap);
}

std::string RollupTables(const std::string& path);  // every rollup and span row, below

// Checkpoints the store at `path` whole, so that its WAL starts afresh.
void CheckpointWhole(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 0) << "the checkpoint was blocked";
  sqlite3_finalize(st);
  sqlite3_close(db);
}

// The pages of table `name` (every page for null) that frames of the WAL
// at `path` (those of its current salt) write.
std::set<uint32_t> WalPagesOf(const std::string& path, const char* name) {
  std::set<uint32_t> pages, table;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "open " << path;
    sqlite3_close(db);
    return pages;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT pageno FROM dbstat WHERE name = ?1", -1, &st, nullptr) !=
      SQLITE_OK) {
    ADD_FAILURE() << sqlite3_errmsg(db);
  } else {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW)
      table.insert(static_cast<uint32_t>(sqlite3_column_int64(st, 0)));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::ifstream in(path + "-wal", std::ios::binary);
  std::string wal((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<uint8_t>(wal[at + i]);
    return v;
  };
  if (wal.size() < 32) return pages;
  const size_t page = be32(8);
  for (size_t at = 32; page > 0 && at + 24 + page <= wal.size(); at += 24 + page) {
    if (wal.compare(at + 8, 8, wal, 16, 8) != 0) continue;  // an older salt
    if (name == nullptr || table.contains(be32(at))) pages.insert(be32(at));
  }
  return pages;
}

TEST(RingStore, AnHoursBlockRowsOfEveryChannelGoIntoAFewPages) {
  TempDir dir;
  const std::string path = dir.File("blocks.db");
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  std::mt19937_64 rng(5);
  // A frame a minute (a period each) for six days from midnight: each
  // channel's block rows fill a page or more.
  constexpr int64_t kMinute = 60 * kSec;
  int64_t t = (kT0 / kDay + 1) * kDay;
  // And the first minutes of the seventh, which write the sixth day's rows.
  for (int i = 0; i < 6 * 1440 + 3; ++i, t += kMinute) {
    ASSERT_NE(s->Append(MakeFrame(t, BigValues(inv, static_cast<uint64_t>(i), rng))), 0u);
  }
  ASSERT_TRUE(s->Flush().ok());
  CheckpointWhole(path);
  // The rest of its first hour, and a frame after it: the block closes.
  for (int i = 0; i <= 58; ++i, t += kMinute) {
    ASSERT_NE(s->Append(MakeFrame(t, BigValues(inv, static_cast<uint64_t>(i), rng))), 0u);
  }
  ASSERT_TRUE(s->Flush().ok());
  const std::set<uint32_t> pages = WalPagesOf(path, "span_stats");
  EXPECT_GT(pages.size(), 0u) << "no block rows were written";
  // Kept by channel, the block's rows took a page of each channel's (about
  // one per channel here); kept by day first, the new day's few (the rows
  // of a later hour go into the pages of the day's hours before it).
  EXPECT_LE(pages.size() * 8, inv.channels.size())
      << pages.size() << " span_stats pages for " << inv.channels.size() << " channels";
}

std::vector<int64_t> ReadInts(const std::string& path, const char* sql);  // below

// (I5) A long batch on a store past its raw retention: the frames that
// expire go before its rows, which take the pages they free in the same
// transaction, so each such page is written once (refilled) instead of
// twice (emptied by this commit, refilled by the next). Bases no frame
// needs go with each expire_step only, not with every such batch.
TEST(RingStore, ALongBatchsRowsTakeThePagesItsExpiredFramesFreeInOneWrite) {
  TempDir dir;
  const std::string path = dir.File("expire.db");
  RingStoreOptions o;
  o.raw_retention_ns = 3600 * kSec;
  o.expire_step_ns = 3600 * kSec;  // as edgemond sets it: the measured batch is not a step
  o.batch_frames = 512;
  o.commit_interval_ms = 3'600'000;   // commits at Flush only
  o.rollup_write_frames = 1'000'000;  // periods held until their frames expire
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  std::mt19937_64 rng(8);
  // A board where a quarter of the values move: frames go against bases.
  const std::vector<Value> still = BigValues(inv, 0, rng);
  int64_t t = (kT0 / (3600 * kSec) + 1) * 3600 * kSec;
  int i = 0;
  // `n` frames a second apart, a commit each 300 (five-minute batches).
  auto frames = [&](int n) {
    for (int k = 0; k < n; ++k, ++i, t += kSec) {
      std::vector<Value> v = BigValues(inv, static_cast<uint64_t>(i), rng);
      for (size_t c = 0; c < v.size(); ++c) {
        if (c % 4 != 0) v[c] = still[c];
      }
      ASSERT_NE(s->Append(MakeFrame(t, std::move(v))), 0u);
      if (k % 300 == 299 || k + 1 == n) {
        ASSERT_TRUE(s->Flush().ok());
      }
    }
  };
  // An hour and five minutes from the top of an hour: past the retention.
  frames(13 * 300);
  CheckpointWhole(path);
  frames(300);  // five more minutes, within the same hour: one commit
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  // Whole blocks go (I18): up to a block more than the retention's.
  EXPECT_GE(st->frames, 3601) << "the retention was not kept";
  EXPECT_LE(st->frames, 3600 + static_cast<int64_t>(store::kMaxBlockFrames))
      << "the retention was not kept";
  const size_t rows = WalPagesOf(path, "frames").size();
  ASSERT_GE(rows, 10u) << "the batch's rows fill too few pages to tell";
  // Beside its rows' pages (and those of the expired frames' periods: their
  // rollup rows and clock values), the commit writes a few: page 1, meta,
  // the pointer map, the new base. Expired after its rows went in, also the
  // pages the expired frames freed, about as many as the rows'.
  size_t others = WalPagesOf(path, nullptr).size() - rows;
  for (const char* periods :
       {"rollup", "rollup_channels", "span_values", "period_values", "spans", "span_stats"})
    others -= WalPagesOf(path, periods).size();
  EXPECT_LE(others, 6u) << rows << " pages of frames";
  // The new base's page only: dropping unused bases rewrites the head.
  EXPECT_LE(WalPagesOf(path, "frame_bases").size(), 1u);
  // The next step drops them: the oldest base left is the oldest frame's.
  frames(3300);
  ASSERT_TRUE(s->Close().ok());
  const std::vector<int64_t> oldest = ReadInts(path, "SELECT min(id) FROM frame_bases");
  const auto stored = edgemon::testing::StoredFrameBlobs(path);
  ASSERT_FALSE(stored.empty());
  uint64_t base = 0;
  ASSERT_TRUE(store::FrameBaseId(stored.front().second, base))
      << "the oldest frame is not against a base";
  ASSERT_EQ(oldest.size(), 1u);
  EXPECT_EQ(oldest[0], static_cast<int64_t>(base));
}

// The chunks the packing tests try: both ends of int64, around 0 and now.
std::vector<int64_t> PackingChunks() {
  using store::internal::RollupChunk;
  return {RollupChunk(INT64_MIN), RollupChunk(-1), 0, RollupChunk(kT0), RollupChunk(INT64_MAX)};
}

// A period start in `chunk` (its times within int64): on the minute from
// its start, or anywhere in it.
int64_t StartIn(int64_t chunk, bool on_minute, std::mt19937_64& rng) {
  using store::internal::kRollupChunkNs;
  using store::internal::RollupChunk;
  const uint64_t base = static_cast<uint64_t>(chunk) * static_cast<uint64_t>(kRollupChunkNs);
  const int64_t lo = chunk == RollupChunk(INT64_MIN) ? INT64_MIN : static_cast<int64_t>(base);
  const int64_t hi = chunk == RollupChunk(INT64_MAX)
                         ? INT64_MAX
                         : static_cast<int64_t>(base + static_cast<uint64_t>(kRollupChunkNs) - 1);
  const auto width = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  const uint64_t off = on_minute ? (rng() % 60) * 60 * static_cast<uint64_t>(kSec) % (width + 1)
                                 : rng() % (width + 1);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + off);
}

// An int64 at either end or near 0, any, or `ordinary()`, a third each.
int64_t AnyInt64(std::mt19937_64& rng, const std::function<int64_t()>& ordinary) {
  static constexpr int64_t kExtremes[] = {INT64_MIN, INT64_MIN + 1, -1,       0,
                                          1,         INT64_MAX - 1, INT64_MAX};
  switch (rng() % 3) {
    case 0:
      return kExtremes[rng() % std::size(kExtremes)];
    case 1:
      return static_cast<int64_t>(rng());
    default:
      return ordinary();
  }
}

// A packing of `chunk` cut short never unpacks (and appends nothing); one
// with a bit flipped either does not unpack (appending nothing) or unpacks
// into rows that `check` is given.
template <typename Row>
void ExpectDamagedPackingsCaught(int64_t chunk, const std::string& packed,
                                 bool (*unpack)(int64_t, std::string_view, std::vector<Row>&),
                                 const std::function<void(const std::vector<Row>&)>& check,
                                 std::mt19937_64& rng) {
  std::vector<Row> back;
  for (size_t cut = 0; cut < packed.size(); ++cut) {
    back.clear();
    EXPECT_FALSE(unpack(chunk, std::string_view(packed).substr(0, cut), back)) << cut;
    EXPECT_TRUE(back.empty());
  }
  for (size_t at = 0; at < packed.size(); ++at) {
    std::string bad = packed;
    bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
    back.clear();
    if (unpack(chunk, bad, back)) {
      check(back);
    } else {
      EXPECT_TRUE(back.empty());
    }
  }
}

// (I7) A chunk's periods of one channel pack into one row and unpack as
// they were, for every int64 value and the chunks at both ends of int64;
// a packing cut short or with a byte changed never unpacks into periods
// outside the chunk.
TEST(RingStore, RollupPeriodsPackAndUnpackEveryInt64) {
  using store::internal::kRollupChunkNs;
  using store::internal::PackRollup;
  using store::internal::RollupChunk;
  using store::internal::RollupRow;
  using store::internal::UnpackRollup;
  std::mt19937_64 rng(11);
  auto value = [&rng] {
    return AnyInt64(rng, [&rng] { return static_cast<int64_t>(rng() % 20'000) - 1'000; });
  };
  for (int64_t chunk : PackingChunks()) {
    SCOPED_TRACE(chunk);
    for (int round = 0; round < 300; ++round) {
      std::set<int64_t> times;
      const size_t n = 1 + rng() % 60;
      while (times.size() < n) times.insert(StartIn(chunk, round % 2, rng));
      std::vector<RollupRow> rows;
      for (int64_t t : times) {
        const int64_t count = rng() % 4 ? 1 + static_cast<int64_t>(rng() % 100) : INT64_MAX;
        rows.push_back(RollupRow{t, count, value(), value(), value()});
      }
      const std::string packed = PackRollup(chunk, rows);
      std::vector<RollupRow> back = {RollupRow{1, 2, 3, 4, 5}};
      ASSERT_TRUE(UnpackRollup(chunk, packed, back));
      ASSERT_EQ(back.size(), rows.size() + 1);
      for (size_t i = 0; i < rows.size(); ++i) {
        const RollupRow &a = rows[i], &b = back[i + 1];
        EXPECT_EQ(std::tie(a.t_ns, a.count, a.min, a.max, a.sum),
                  std::tie(b.t_ns, b.count, b.min, b.max, b.sum))
            << i;
      }
      if (round % 10 > 1) continue;  // both kinds of starts
      ExpectDamagedPackingsCaught<RollupRow>(
          chunk, packed, &UnpackRollup,
          [chunk](const std::vector<RollupRow>& read) {
            for (size_t i = 0; i < read.size(); ++i) {
              EXPECT_EQ(RollupChunk(read[i].t_ns), chunk);
              EXPECT_GT(read[i].count, 0);
              if (i > 0) {
                EXPECT_GT(read[i].t_ns, read[i - 1].t_ns);
              }
            }
          },
          rng);
    }
  }
  // A still value's hour of minutes: five bytes a period, where a row of
  // its own took about 30.
  std::vector<RollupRow> still;
  for (int64_t m = 0; m < 60; ++m) {
    still.push_back(RollupRow{kT0 / kRollupChunkNs * kRollupChunkNs + m * 60 * kSec, 60, 4'523,
                              4'523, 60 * 4'523});
  }
  EXPECT_LE(PackRollup(RollupChunk(kT0), still).size(), 16u + 5u * 60u);
}

// (I15) A chunk's clock values pack into one row and unpack as they were,
// for every int64 value and count, channel ids up to the largest and the
// chunks at both ends of int64; a packing cut short or with a byte changed
// never unpacks into values outside the chunk or out of order.
TEST(RingStore, PeriodValuesPackAndUnpackEveryInt64) {
  using store::internal::kRollupChunkNs;
  using store::internal::PackPeriodValues;
  using store::internal::PeriodValue;
  using store::internal::RollupChunk;
  using store::internal::UnpackPeriodValues;
  std::mt19937_64 rng(15);
  auto value = [&rng] {
    // A clock's steps.
    return AnyInt64(rng, [&rng] { return 1'000'000 * static_cast<int64_t>(rng() % 40); });
  };
  auto key = [](const PeriodValue& v) { return std::tie(v.t_ns, v.channel, v.value); };
  for (int64_t chunk : PackingChunks()) {
    SCOPED_TRACE(chunk);
    for (int round = 0; round < 200; ++round) {
      std::map<std::tuple<int64_t, uint32_t, int64_t>, uint64_t> unique;
      const size_t periods = 1 + rng() % 30;
      for (size_t p = 0; p < periods; ++p) {
        const int64_t t = StartIn(chunk, round % 2, rng);
        for (size_t c = 1 + rng() % 5; c > 0; --c) {
          const uint32_t ch = rng() % 8 == 0 ? UINT32_MAX - static_cast<uint32_t>(rng() % 2)
                                             : 1 + static_cast<uint32_t>(rng() % 20);
          for (size_t n = 1 + rng() % 6; n > 0; --n) {
            unique[{t, ch, value()}] = rng() % 4 ? 1 + rng() % 100 : uint64_t{INT64_MAX};
          }
        }
      }
      std::vector<PeriodValue> values;
      for (const auto& [k, n] : unique) {
        values.push_back(PeriodValue{std::get<0>(k), std::get<1>(k), std::get<2>(k), n});
      }
      const std::string packed = PackPeriodValues(chunk, values);
      std::vector<PeriodValue> back = {PeriodValue{1, 2, 3, 4}};
      ASSERT_TRUE(UnpackPeriodValues(chunk, packed, back));
      ASSERT_EQ(back.size(), values.size() + 1);
      for (size_t i = 0; i < values.size(); ++i) {
        const PeriodValue &a = values[i], &b = back[i + 1];
        EXPECT_EQ(std::tie(a.t_ns, a.channel, a.value, a.count),
                  std::tie(b.t_ns, b.channel, b.value, b.count))
            << i;
      }
      if (round % 10 > 1) continue;  // both kinds of starts
      ExpectDamagedPackingsCaught<PeriodValue>(
          chunk, packed, &UnpackPeriodValues,
          [chunk, &key](const std::vector<PeriodValue>& rows) {
            for (size_t i = 0; i < rows.size(); ++i) {
              EXPECT_EQ(RollupChunk(rows[i].t_ns), chunk);
              EXPECT_GT(rows[i].channel, 0u);
              EXPECT_GT(rows[i].count, 0u);
              EXPECT_LE(rows[i].count, uint64_t{INT64_MAX});
              if (i > 0) {
                EXPECT_LT(key(rows[i - 1]), key(rows[i]));
              }
            }
          },
          rng);
    }
  }
  // An hour of minutes of 14 steady clocks (a value each) takes four bytes
  // a clock and period past the first; a row of span_values took about 24.
  std::vector<PeriodValue> steady;
  for (int64_t m = 0; m < 60; ++m) {
    for (uint32_t ch = 20; ch < 34; ++ch) {
      steady.push_back(PeriodValue{RollupChunk(kT0) * kRollupChunkNs + m * 60 * kSec, ch,
                                   1'420'800'000 + int64_t{ch}, 60});
    }
  }
  EXPECT_LE(PackPeriodValues(RollupChunk(kT0), steady).size(),
            16u + 14u * 8u + 60u * (2u + 14u * 4u));
}

// (I7) The rollup tier of a board's channels, its values moving, takes a
// few bytes a period in the file: a row per period took about 33.
TEST(RingStore, ABoardsRollupPeriodsTakeAFewBytesEachInTheFile) {
  TempDir dir;
  const std::string path = dir.File("packed.db");
  Inventory inv = edgemon::testing::OrinLikeInventory();
  uint64_t periods = 0;
  {
    auto o = Fast();
    o.raw_retention_ns = 3'600 * kSec;
    o.rollup_write_frames = 3'600;
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    s->SetInventory(inv);
    std::mt19937_64 rng(7);
    // Six hours at a frame every 10 s: each value wanders a little around
    // its channel's level, as a loaded board's do.
    std::vector<Value> level = BigValues(inv, 0, rng);
    for (int i = 0; i < 6 * 360; ++i) {
      std::vector<Value> v = level;
      for (auto& x : v) {
        if (x) *x += static_cast<int64_t>(rng() % 41) - 20;
      }
      ASSERT_NE(s->Append(MakeFrame(kT0 + i * 10 * kSec, v)), 0u);
    }
    ASSERT_TRUE(s->Close().ok());
    auto st = RingStore::Open(path, o);
    ASSERT_TRUE(st.ok());
    auto stats = (*st)->Stats();
    ASSERT_TRUE(stats.ok());
    periods = static_cast<uint64_t>(stats->rollup_rows);
    ASSERT_TRUE((*st)->Close().ok());
  }
  ASSERT_GT(periods, inv.channels.size() * 300);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT sum(pgsize) FROM dbstat WHERE name = 'rollup'", -1, &st,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  const int64_t bytes = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_LE(bytes, static_cast<int64_t>(periods) * 12)
      << bytes << " B for " << periods << " periods";
}

// What the block and day rows answer: Downsample at an hour's and a day's
// step, and span totals over every span, for each channel.
std::string BlockAnswers(RingStore& s, int64_t from, int64_t to) {
  std::string out;
  const std::vector<std::string> keys = {"cpu/cpu0/load", "thermal/cpu-thermal/temp",
                                         "rail/VDD_IN/power", "memory/ram/used"};
  for (const auto& key : keys) {
    for (int64_t step : {3'600 * kSec, 86'400 * kSec, 7 * 3'600 * kSec}) {
      auto b = s.Downsample(key, from, to, step, Tier::kRollup);
      if (!b.ok()) return "downsample: " + b.status().message();
      for (const Bucket& x : *b) {
        out += key + " " + std::to_string(x.t_ns) + " " + std::to_string(x.count) + " " +
               std::to_string(x.min) + " " + std::to_string(x.max) + " " + std::to_string(x.avg) +
               "\n";
      }
    }
  }
  auto spans = s.Spans(from, to, INT64_MAX);
  if (!spans.ok()) return "spans: " + spans.status().message();
  auto totals = s.SpanTotals(keys, *spans);
  if (!totals.ok()) return "totals: " + totals.status().message();
  for (const auto& t : *totals) {
    out += t ? std::to_string(t->count) + " " + std::to_string(t->min) + " " +
                   std::to_string(t->max) + " " + std::to_string(t->sum) + "\n"
             : "none\n";
  }
  return out + std::to_string(spans->size()) + " spans\n";
}

TEST(RingStore, ASchema12StoreKeepsItsBlockRowsUnderTheDayKey) {
  TempDir dir;
  const std::string path = dir.File("s12.db");
  constexpr int64_t kMinute = 60 * kSec;
  // Three days and a half at a frame a minute, from before 1970 (negative
  // times take the day below them) and from now.
  for (int64_t start : {-36 * 3'600 * kSec - 17 * kMinute, kT0}) {
    SCOPED_TRACE(start);
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    const int64_t end = start + 84 * 3'600 * kSec;
    std::string before, tables;
    {
      auto o = Fast();
      o.raw_retention_ns = 3'600 * kSec;  // the rollup tier answers the rest
      auto s = MustOpen(path, o);
      ASSERT_TRUE(s);
      s->SetInventory(SmallInventory());
      int i = 0;
      for (int64_t t = start; t < end; t += kMinute, ++i) {
        ASSERT_NE(s->Append(MakeFrame(t, {i % 97, 40'000 + i % 13, 5'000 + (i * 7) % 101, i})), 0u);
      }
      ASSERT_TRUE(s->Close().ok());  // writes the open period too
      s = MustOpen(path, o);
      ASSERT_TRUE(s);
      before = BlockAnswers(*s, start, end);
      ASSERT_TRUE(s->Close().ok());
      tables = RollupTables(path);
    }
    ASSERT_NE(before.find("spans"), std::string::npos) << before;
    {
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
      ASSERT_EQ(sqlite3_exec(db,
                             (std::string("BEGIN; ") + edgemon::testing::kUndoSchema13 +
                              "PRAGMA user_version = 12; COMMIT;")
                                 .c_str(),
                             nullptr, nullptr, nullptr),
                SQLITE_OK)
          << sqlite3_errmsg(db);
      sqlite3_close(db);
    }
    auto o = Fast();
    o.raw_retention_ns = 3'600 * kSec;
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    const std::string after = BlockAnswers(*s, start, end);
    if (after != before) {  // the first line that differs
      size_t at = 0;
      while (at < after.size() && at < before.size() && after[at] == before[at]) ++at;
      const size_t line =
          before.rfind('\n', at) == std::string::npos ? 0 : before.rfind('\n', at) + 1;
      ADD_FAILURE() << "before: " << before.substr(line, before.find('\n', at) - line)
                    << "\nafter:  " << after.substr(line, after.find('\n', at) - line);
    }
    ASSERT_TRUE(s->Close().ok());
    EXPECT_EQ(RollupTables(path), tables);
    // Each block row under its day, each day row under chunk 0.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT level, chunk, t_ns, count(*) OVER () FROM span_stats",
                                 -1, &st, nullptr),
              SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      ++rows;
      const int level = sqlite3_column_int(st, 0);
      const int64_t chunk = sqlite3_column_int64(st, 1), t = sqlite3_column_int64(st, 2);
      const int64_t day = t >= 0 ? t / (86'400 * kSec) : -((-(t + 1)) / (86'400 * kSec)) - 1;
      EXPECT_EQ(chunk, level == 1 ? day : 0) << level << " " << t;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    EXPECT_GT(rows, 4 * 80);  // four channels' blocks and days
  }
}

// The first row of `sql` on the store at `path`, as integers; empty when
// it fails or has no row.
std::vector<int64_t> ReadInts(const std::string& path, const char* sql) {
  std::vector<int64_t> out;
  sqlite3* db = nullptr;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(st); ++c) out.push_back(sqlite3_column_int64(st, c));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// Every minute bucket of the rollup tier of `keys` over [from, to).
std::string MinuteAnswers(RingStore& s, const std::vector<std::string>& keys, int64_t from,
                          int64_t to) {
  std::string out;
  for (const auto& key : keys) {
    auto b = s.Downsample(key, from, to, 60 * kSec, Tier::kRollup);
    if (!b.ok()) return "downsample: " + b.status().message();
    for (const Bucket& x : *b) {
      out += key + " " + std::to_string(x.t_ns) + " " + std::to_string(x.count) + " " +
             std::to_string(x.min) + " " + std::to_string(x.max) + " " + std::to_string(x.avg) +
             "\n";
    }
  }
  return out;
}

// (I7) A store of schema 13 kept a row per period. Opening it packs them a
// day of chunks per transaction: a migration stopped after its first day
// goes on from there, and every period, block, day and answer is as before.
TEST(RingStore, ASchema13StorePacksItsRollupRowsAndGoesOnFromAStoppedMigration) {
  TempDir dir;
  const std::string path = dir.File("s13.db");
  const std::vector<std::string> keys = {"cpu/cpu0/load", "thermal/cpu-thermal/temp",
                                         "rail/VDD_IN/power", "memory/ram/used"};
  auto o = Fast();
  o.raw_retention_ns = 3'600 * kSec;  // the rollup tier answers the rest
  const int64_t start = kT0 - 7 * 60 * kSec, end = start + 80 * 3'600 * kSec;
  std::string before, minutes, tables;
  {
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    s->SetInventory(SmallInventory());
    int i = 0;
    for (int64_t t = start; t < end; t += 20 * kSec, ++i) {
      ASSERT_NE(s->Append(MakeFrame(t, {i % 97, 40'000 + i % 13, 5'000 + (i * 7) % 101, i})), 0u);
    }
    ASSERT_TRUE(s->Close().ok());
    s = MustOpen(path, o);
    ASSERT_TRUE(s);
    before = BlockAnswers(*s, start, end);
    minutes = MinuteAnswers(*s, keys, start, end);
    ASSERT_TRUE(s->Close().ok());
    tables = RollupTables(path);
  }
  ASSERT_GT(std::count(minutes.begin(), minutes.end(), '\n'), 4 * 4'700);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
    // As a migration stopped after its first day leaves it: that day's
    // chunks packed, the rest still a row per period.
    ASSERT_EQ(sqlite3_exec(db,
                           "BEGIN; CREATE TABLE rollup_packed(chunk INTEGER NOT NULL, channel "
                           "INTEGER NOT NULL, periods INTEGER NOT NULL, first_ns INTEGER NOT NULL, "
                           "last_ns INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(chunk, "
                           "channel)) WITHOUT ROWID",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    const int64_t first = store::internal::RollupChunk(start);
    std::map<std::pair<int64_t, int64_t>, std::vector<store::internal::RollupRow>> day;
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT chunk, channel, t_ns, count, min, max, sum FROM rollup "
                                 "WHERE chunk < ?1 ORDER BY chunk, channel, t_ns",
                                 -1, &st, nullptr),
              SQLITE_OK);
    sqlite3_bind_int64(st, 1, first + 24);
    while (sqlite3_step(st) == SQLITE_ROW) {
      day[{sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)}].push_back(
          {sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
           sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6)});
    }
    sqlite3_finalize(st);
    ASSERT_EQ(day.size(), 24u * 4u);
    ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO rollup_packed VALUES(?1, ?2, ?3, ?4, ?5, ?6)", -1,
                                 &st, nullptr),
              SQLITE_OK);
    for (const auto& [key, rows] : day) {
      const std::string data = store::internal::PackRollup(key.first, rows);
      sqlite3_bind_int64(st, 1, key.first);
      sqlite3_bind_int64(st, 2, key.second);
      sqlite3_bind_int64(st, 3, static_cast<int64_t>(rows.size()));
      sqlite3_bind_int64(st, 4, rows.front().t_ns);
      sqlite3_bind_int64(st, 5, rows.back().t_ns);
      sqlite3_bind_blob(st, 6, data.data(), static_cast<int>(data.size()), SQLITE_TRANSIENT);
      ASSERT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db);
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    const std::string cut =
        "DELETE FROM rollup WHERE chunk < " + std::to_string(first + 24) + "; COMMIT";
    ASSERT_EQ(sqlite3_exec(db, cut.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  EXPECT_EQ(BlockAnswers(*s, start, end), before);
  EXPECT_EQ(MinuteAnswers(*s, keys, start, end), minutes);
  EXPECT_TRUE(s->IntegrityCheck().ok());
  ASSERT_TRUE(s->Close().ok());
  EXPECT_EQ(RollupTables(path), tables);
  // Schema 14, the packing table renamed, each row under its periods' hour.
  EXPECT_EQ(ReadInts(path,
                     "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) "
                     "FROM sqlite_schema WHERE name = 'rollup_packed'), (SELECT count(*) FROM "
                     "rollup WHERE first_ns < chunk * 3600000000000 OR last_ns >= (chunk + 1) * "
                     "3600000000000)"),
            (std::vector<int64_t>{kSchemaVersion, 0, 0}));
}

// (I7) A rollup row that does not unpack (a damaged file) reads as missing:
// its channel's periods of that hour are absent, never zero, and every
// other row reads as before.
TEST(RingStore, ARollupRowThatDoesNotUnpackReadsAsMissing) {
  TempDir dir;
  const std::string path = dir.File("bad.db");
  const std::vector<std::string> keys = {"cpu/cpu0/load", "thermal/cpu-thermal/temp"};
  auto o = Fast();
  o.raw_retention_ns = 3'600 * kSec;
  const int64_t start = (kT0 / (3'600 * kSec) + 1) * 3'600 * kSec, end = start + 3 * 3'600 * kSec;
  std::string before;
  {
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    s->SetInventory(SmallInventory());
    int i = 0;
    for (int64_t t = start; t < end; t += 20 * kSec, ++i) {
      ASSERT_NE(s->Append(MakeFrame(t, {i % 97, 40'000 + i % 13, 5'000, i})), 0u);
    }
    ASSERT_TRUE(s->Close().ok());
    s = MustOpen(path, o);
    ASSERT_TRUE(s);
    before = MinuteAnswers(*s, keys, start, end);
    ASSERT_TRUE(s->Close().ok());
  }
  {  // The load's row of the middle hour cut short.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::string sql =
        "UPDATE rollup SET data = substr(data, 1, length(data) - 1) WHERE chunk = " +
        std::to_string(start / (3'600 * kSec) + 1) +
        " AND channel = (SELECT id FROM channels WHERE key = 'cpu/cpu0/load')";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_changes(db), 1);
    sqlite3_close(db);
  }
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  const std::string after = MinuteAnswers(*s, keys, start, end);
  // The lines of the load's middle hour are gone; every other line stays.
  std::string expect;
  size_t gone = 0;
  for (size_t at = 0; at < before.size();) {
    const size_t eol = before.find('\n', at);
    const std::string line = before.substr(at, eol + 1 - at);
    at = eol + 1;
    std::istringstream in(line);
    std::string key;
    int64_t t = 0;
    in >> key >> t;
    if (key == keys[0] && t >= start + 3'600 * kSec && t < start + 2 * 3'600 * kSec) {
      ++gone;
      continue;
    }
    expect += line;
  }
  EXPECT_EQ(gone, 60u);
  EXPECT_EQ(after, expect);
  ASSERT_TRUE(s->Close().ok());
}

// Schema 11 keys the clock values by level and time first, so that a
// period's values for every clock are written together: a schema-10 store
// (values keyed by channel first), here one whose migration stopped after
// its first day, keeps every row, and its spans' totals read the same,
// whether every channel is asked or one.
TEST(RingStore, ASchema10StoreKeepsEveryClockValueUnderTheTimeKey) {
  TempDir dir;
  const auto path = dir.File("v10.db");
  Inventory inv;
  std::vector<std::string> keys;
  for (ChannelId id = 0; id < 20; ++id) {
    inv.channels.push_back(id == 3
                               ? Ch(id, Kind::kCpu, "cpu0", Field::kFreq)
                               : Ch(id, Kind::kThermal, "t" + std::to_string(id), Field::kTemp));
    keys.push_back(inv.channels.back().Key());
  }
  const int64_t span = 2 * 86400 * kSec + 5 * 3600 * kSec;  // a whole day, blocks, periods
  auto totals = [&](RingStore& s, const std::vector<std::string>& asked) {
    auto spans = s.Spans(kT0, kT0 + span, INT64_MAX);
    EXPECT_TRUE(spans.ok());
    std::vector<std::string> out;
    if (!spans.ok()) return out;
    auto t = s.SpanTotals(asked, *spans);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (!t.ok()) return out;
    for (const auto& x : *t) {
      std::string line = "none";
      if (x) {
        line = std::to_string(x->count) + " " + std::to_string(x->min) + " " +
               std::to_string(x->max) + " " + std::to_string(x->sum) + " " +
               std::to_string(x->first_period_ns);
        for (const auto& [v, n] : x->values)
          line += " " + std::to_string(v) + "x" + std::to_string(n);
      }
      out.push_back(line);
    }
    return out;
  };
  std::vector<std::string> all_before, one_before;
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(inv);
    for (int64_t t = 0; t < span; t += 30 * kSec) {
      const int64_t i = t / kSec;
      std::vector<Value> v(inv.channels.size());
      for (size_t k = 0; k < v.size(); ++k) v[k] = (i * 37 + static_cast<int64_t>(k)) % 101;
      v[3] = 115200 * (1 + (i / 600) % 4);  // a clock at four frequencies
      s->Append(MakeFrame(kT0 + t, v));
    }
    ASSERT_TRUE(s->Close().ok());
  }
  {  // As closed (the open period written).
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    all_before = totals(*s, keys);
    one_before = totals(*s, {keys[3]});
    ASSERT_TRUE(s->Close().ok());
  }
  ASSERT_EQ(all_before.size(), keys.size());
  ASSERT_EQ(one_before, std::vector<std::string>{all_before[3]});
  const std::string tables = RollupTables(path);
  ASSERT_GT(std::count(tables.begin(), tables.end(), '\n'), 1000);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    // Back to schema 10's tables, then as a migration stopped after its
    // first day leaves them.
    const std::string day = std::to_string(kT0 + 86400 * kSec);
    ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
    ASSERT_EQ(sqlite3_exec(db,
                           (std::string("BEGIN; ") + edgemon::testing::kUndoSchema13 +
                            edgemon::testing::kUndoSchema12 + edgemon::testing::kUndoSchema11 +
                            "PRAGMA user_version = 10; COMMIT; BEGIN; "
                            "CREATE TABLE span_values_by_time(level INTEGER NOT NULL, channel "
                            "INTEGER NOT NULL, t_ns INTEGER NOT NULL, value INTEGER NOT NULL, "
                            "count INTEGER NOT NULL, PRIMARY KEY(level, t_ns, channel, value)) "
                            "WITHOUT ROWID; "
                            "INSERT INTO span_values_by_time SELECT * FROM span_values WHERE "
                            "t_ns < " +
                            day + "; DELETE FROM span_values WHERE t_ns < " + day + "; COMMIT;")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(totals(*s, keys), all_before);
    EXPECT_EQ(totals(*s, {keys[3]}), one_before);
    EXPECT_TRUE(s->IntegrityCheck().ok());
    ASSERT_TRUE(s->Close().ok());
  }
  EXPECT_EQ(RollupTables(path), tables);
  EXPECT_EQ(ReadInts(path,
                     "SELECT count(*) FROM sqlite_schema WHERE name = 'span_values' "
                     "AND sql LIKE '%PRIMARY KEY(level, t_ns, channel, value)%'"),
            std::vector<int64_t>{1});
}

TEST(RingStore, RollupRebuildsTheOpenPeriodAfterACrash) {
  // Frames committed but the process gone before the period closed: the
  // rows must still count every frame exactly once.
  TempDir dir;
  const auto path = dir.File("crash.db");
  Inventory inv;
  inv.channels = {Ch(0, Kind::kCpu, "cpu", Field::kLoad)};
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = RingStore::Open(path, Fast());
    if (!r.ok()) _exit(2);
    auto& s = *r.value();
    s.SetInventory(inv);
    for (int i = 0; i < 90; ++i) s.Append(MakeFrame(kT0 + i * kSec, {i}));
    _exit(s.Flush().ok() ? 0 : 3);  // no Close: the open period is lost with the process
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(inv);
    for (int i = 90; i < 130; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i}));
  }
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  auto b = s->Downsample("cpu/cpu/load", kT0, kT0 + 180 * kSec, 60 * kSec, Tier::kRollup);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->size(), 3u);
  EXPECT_EQ((*b)[0].count, 60);
  EXPECT_EQ((*b)[1].count, 60);
  EXPECT_EQ((*b)[1].min, 60);
  EXPECT_EQ((*b)[1].max, 119);
  EXPECT_DOUBLE_EQ((*b)[1].avg, 89.5);
  EXPECT_EQ((*b)[2].count, 10);
}

// Every row of the rollup and span tables, in key order, one line each.
std::string RollupTables(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return "cannot open";
  }
  if (edgemon::testing::ExpandRollup(db) != SQLITE_OK ||
      edgemon::testing::ExpandValues(db) != SQLITE_OK) {
    sqlite3_close(db);
    return "cannot unpack the rollup rows or clock values";
  }
  for (const char* sql :
       {"SELECT 'rollup', channel, t_ns, count, min, max, sum FROM rollup_rows ORDER BY 2, 3",
        "SELECT 'spans', level, t_ns, span_ns, frames, first_seq, last_seq, holes, bad FROM spans "
        "ORDER BY 2, 3",
        "SELECT 'stats', level, channel, t_ns, count, min, max, sum FROM span_stats ORDER BY 2, 3, "
        "4",
        "SELECT 'values', level, channel, t_ns, value, count FROM value_rows "
        "ORDER BY 2, 3, 4, 5"}) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) return "bad query";
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        out += reinterpret_cast<const char*>(sqlite3_column_text(st, c));
        out += ' ';
      }
      out += '\n';
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

int64_t RollupRows(const std::string& path) {
  return edgemon::testing::QueryInt(path, "SELECT coalesce(sum(periods), 0) FROM rollup");
}

// (I7) Closed periods held back by rollup_write_frames: none in the table
// until they hold that many frames or a later block's period closes; every
// read meanwhile the same as a store that writes each period at once (the
// raw tier answers for them); a crash loses none (Open rebuilds them); and
// Close leaves the same rows, spans and clock values, byte for byte.
TEST(RingStore, ClosedPeriodsHeldBackAreReadFromFramesAndWrittenTheSame) {
  TempDir dir;
  const std::string held = dir.File("held.db"), each = dir.File("each.db");
  Inventory inv;
  inv.channels = {Ch(0, Kind::kThermal, "tj-thermal", Field::kTemp),
                  Ch(1, Kind::kCpu, "cpu0", Field::kFreq),
                  Ch(2, Kind::kRail, "VDD_IN", Field::kPower),
                  Ch(3, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagCounter)};
  auto held_options = Fast();
  held_options.rollup_write_frames = 2000;
  const int64_t hour = 3600 * kSec;
  const int64_t h0 = (kT0 / hour + 1) * hour;  // a block's start (I15)
  auto frame = [&](int i) {
    return MakeFrame(h0 + i * kSec,
                     {40000 + (i * 37) % 900, int64_t{(i / 7) % 3} * 300000 + 115200,
                      i % 11 == 0 ? Value() : Value(1000 + (i * 13) % 500), int64_t{i} * 1300});
  };
  auto h = MustOpen(held, held_options);
  auto e = MustOpen(each);
  ASSERT_TRUE(h && e);
  h->SetInventory(inv);
  e->SetInventory(inv);
  int next = 0;
  auto write_to = [&](int end) {
    for (; next < end; ++next) {
      h->Append(frame(next));
      e->Append(frame(next));
    }
    ASSERT_TRUE(h->Flush().ok());
    ASSERT_TRUE(e->Flush().ok());
  };
  auto same_reads = [&](const char* when) {
    for (const char* key : {"thermal/tj-thermal/temp", "cpu/cpu0/freq", "rail/VDD_IN/power"}) {
      for (int64_t step : {int64_t{7} * kSec, 60 * kSec, 300 * kSec, hour}) {
        // The rollup tier itself at a step finer than its period: the
        // frames after rollup_seq are read at the step, so not compared.
        for (Tier tier : {Tier::kAuto, Tier::kRollup}) {
          if (tier == Tier::kRollup && step < 60 * kSec) continue;
          auto a = h->Downsample(key, h0 - hour, h0 + 3 * hour, step, tier);
          auto b = e->Downsample(key, h0 - hour, h0 + 3 * hour, step, tier);
          ASSERT_TRUE(a.ok() && b.ok());
          ASSERT_EQ(a->size(), b->size()) << when << " " << key << " step " << step;
          // A step is dated at its first value: a frame's time where read
          // from frames, its period's start where read from a rollup row.
          const int64_t from = h0 - hour;
          for (size_t i = 0; i < a->size(); ++i) {
            EXPECT_EQ(((*a)[i].t_ns - from) / step, ((*b)[i].t_ns - from) / step)
                << when << " " << key;
            EXPECT_EQ((*a)[i].count, (*b)[i].count) << when << " " << key;
            EXPECT_EQ((*a)[i].min, (*b)[i].min) << when << " " << key;
            EXPECT_EQ((*a)[i].max, (*b)[i].max) << when << " " << key;
            EXPECT_DOUBLE_EQ((*a)[i].avg, (*b)[i].avg) << when << " " << key;
          }
        }
      }
    }
    for (int64_t t : {h0 + 1234 * kSec + kSec / 3, h0 + 2500 * kSec, h0 + 3700 * kSec}) {
      auto a = h->CounterAt("rail/VDD_IN/energy", t);
      auto b = e->CounterAt("rail/VDD_IN/energy", t);
      ASSERT_TRUE(a.ok() && b.ok()) << when;
      EXPECT_EQ(*a, *b) << when << " at " << t;
    }
  };
  // 25 minutes: 24 closed periods, 1440 frames, held back.
  write_to(25 * 60);
  EXPECT_EQ(RollupRows(held), 0);
  EXPECT_EQ(RollupRows(each), 24 * 4);
  same_reads("held back");
  // 40 minutes: 39 closed periods; written once they held 2000 frames (34
  // periods, or one more where a batch of frames closed two), the rest held.
  write_to(40 * 60);
  EXPECT_GE(RollupRows(held), 34 * 4);
  EXPECT_LT(RollupRows(held), 39 * 4);
  same_reads("written by frames");
  // The block's last period and the next block's first closed: written.
  write_to(61 * 60 + 30);
  EXPECT_EQ(RollupRows(held), 61 * 4);
  same_reads("written by the next block");
  h.reset();
  e.reset();
  EXPECT_EQ(RollupTables(held), RollupTables(each));

  // kill -9 with periods held back: Open rebuilds them from the frames.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = RingStore::Open(held, held_options);
    if (!r.ok()) _exit(2);
    auto& s = *r.value();
    s.SetInventory(inv);
    for (int i = next; i < next + 20 * 60; ++i) s.Append(frame(i));
    if (!s.Flush().ok() || RollupRows(held) != 62 * 4) _exit(3);
    _exit(0);  // no Close: 19 closed periods and the open one are lost with the process
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  h = MustOpen(held, held_options);
  e = MustOpen(each);
  ASSERT_TRUE(h && e);
  h->SetInventory(inv);
  e->SetInventory(inv);
  for (int i = next; i < next + 20 * 60; ++i) e->Append(frame(i));
  ASSERT_TRUE(e->Flush().ok());
  next += 20 * 60;
  write_to(next + 5 * 60);
  same_reads("after a crash");
  h.reset();
  e.reset();
  EXPECT_EQ(RollupTables(held), RollupTables(each));
  EXPECT_GT(RollupRows(held), 80 * 4);
}

// (I7) More frames after rollup_seq than the readers' decoded tail keeps
// (20,000): the coarse reads take them from the table, with the same
// figures.
TEST(RingStore, ALongHeldTailIsReadFromTheTable) {
  TempDir dir;
  auto held_options = Fast();
  held_options.batch_frames = 1000;
  held_options.rollup_write_frames = 1'000'000;
  auto h = MustOpen(dir.File("held.db"), held_options);
  auto o = Fast();
  o.batch_frames = 1000;
  auto e = MustOpen(dir.File("each.db"), o);
  ASSERT_TRUE(h && e);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kThermal, "tj-thermal", Field::kTemp)};
  h->SetInventory(inv);
  e->SetInventory(inv);
  const int64_t hour = 3600 * kSec;
  const int64_t h0 = (kT0 / hour + 1) * hour;
  constexpr int kFrames = 25'000;  // 10 Hz, inside one block
  for (int i = 0; i < kFrames; ++i) {
    const Frame f = MakeFrame(h0 + i * (kSec / 10), {40000 + (i * 7919) % 5000});
    h->Append(f);
    e->Append(f);
  }
  ASSERT_TRUE(h->Flush().ok() && e->Flush().ok());
  for (int64_t step : {60 * kSec, 600 * kSec, hour}) {
    auto a = h->Downsample("thermal/tj-thermal/temp", h0, h0 + hour, step);
    auto b = e->Downsample("thermal/tj-thermal/temp", h0, h0 + hour, step);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), b->size());
    int64_t counted = 0;
    for (size_t i = 0; i < a->size(); ++i) {
      EXPECT_EQ((*a)[i].count, (*b)[i].count) << "step " << step;
      EXPECT_EQ((*a)[i].min, (*b)[i].min) << "step " << step;
      EXPECT_EQ((*a)[i].max, (*b)[i].max) << "step " << step;
      EXPECT_DOUBLE_EQ((*a)[i].avg, (*b)[i].avg) << "step " << step;
      counted += (*a)[i].count;
    }
    EXPECT_EQ(counted, kFrames);
  }
}

// (I7) The decoded tail keeps a frame's values without their ids, one id
// list for each run of frames of one inventory: across a channel that comes
// and one that goes, and values absent now and then, every channel's
// figures are those of a store that wrote each period as it closed.
TEST(RingStore, AHeldTailAcrossAnInventoryChangeReadsEachChannel) {
  TempDir dir;
  auto held_options = Fast();
  held_options.rollup_write_frames = 1'000'000;
  auto h = MustOpen(dir.File("held.db"), held_options);
  auto e = MustOpen(dir.File("each.db"), Fast());
  ASSERT_TRUE(h && e);
  Inventory before = SmallInventory(), after = SmallInventory();
  after.channels.erase(after.channels.begin() + 1);  // the temperature goes
  after.channels.push_back(Ch(3, Kind::kThermal, "gpu-thermal", Field::kTemp));
  const int64_t hour = 3600 * kSec;
  const int64_t h0 = (kT0 / hour + 1) * hour;
  for (RingStore* s : {h.get(), e.get()}) s->SetInventory(before);
  for (int i = 0; i < 1200; ++i) {
    if (i == 700) {
      for (RingStore* s : {h.get(), e.get()}) s->SetInventory(after);
    }
    std::vector<Value> v = {i % 7, 40'000 + i % 11, 5'000 + i % 13, 30'000 + i % 5};
    if (i % 3 == 0) v[2] = std::nullopt;  // absent now and then
    for (RingStore* s : {h.get(), e.get()}) s->Append(MakeFrame(h0 + i * kSec, v));
  }
  ASSERT_TRUE(h->Flush().ok() && e->Flush().ok());
  for (const char* key : {"cpu/cpu0/load", "thermal/cpu-thermal/temp", "rail/VDD_IN/power",
                          "memory/ram/used", "thermal/gpu-thermal/temp"}) {
    for (int64_t step : {60 * kSec, 420 * kSec}) {
      uint64_t bad_h = 0, bad_e = 0;
      auto a = h->Downsample(key, h0, h0 + hour, step, Tier::kRollup, &bad_h);
      auto b = e->Downsample(key, h0, h0 + hour, step, Tier::kRollup, &bad_e);
      ASSERT_TRUE(a.ok() && b.ok()) << key;
      ASSERT_EQ(a->size(), b->size()) << key << " step " << step;
      for (size_t i = 0; i < a->size(); ++i) {  // (a step's time: its first frame's, or row's)
        EXPECT_EQ((*a)[i].count, (*b)[i].count) << key << " step " << step << " #" << i;
        EXPECT_EQ((*a)[i].min, (*b)[i].min) << key << " step " << step << " #" << i;
        EXPECT_EQ((*a)[i].max, (*b)[i].max) << key << " step " << step << " #" << i;
        EXPECT_DOUBLE_EQ((*a)[i].avg, (*b)[i].avg) << key << " step " << step << " #" << i;
      }
      EXPECT_EQ(bad_h, bad_e) << key;
    }
  }
}

// (I6, I7) Under a cap that holds less than the periods held back, the
// frames trimmed for size take their periods into the rollup tier first:
// every frame still counts once, in a row or as a frame.
TEST(RingStore, HeldBackPeriodsGoInBeforeTheCapTrimsTheirFrames) {
  TempDir dir;
  auto o = Fast();
  o.max_bytes = 1 << 20;  // about half an hour of these frames
  o.batch_frames = 200;
  o.rollup_write_frames = 1'000'000;  // never due by count, nor by block here
  auto s = MustOpen(dir.File("cap.db"), o);
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  std::mt19937_64 rng(3);
  const int64_t hour = 3600 * kSec;
  const int64_t h0 = (kT0 / hour + 1) * hour;
  const int kFrames = 55 * 60;
  for (int i = 0; i < kFrames; ++i) {
    s->Append(MakeFrame(h0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
  }
  ASSERT_TRUE(s->Flush().ok());
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  ASSERT_GT(st->trimmed_frames, 0u);
  const std::string key = inv.channels.front().Key();
  auto b = s->Downsample(key, h0, h0 + hour, 60 * kSec, Tier::kAuto);
  ASSERT_TRUE(b.ok()) << b.status().message();
  int64_t counted = 0;
  for (const auto& bucket : *b) counted += bucket.count;
  EXPECT_EQ(counted, kFrames);
  EXPECT_EQ(b->size(), 55u);
}

// An hour of 1 Hz frames of VDD_IN's power (value i at kT0 + i s), with
// 10 minutes of raw frames kept and a rollup row per minute.
std::unique_ptr<RingStore> HourOfFrames(const std::string& path) {
  auto o = Fast();
  o.raw_retention_ns = 600 * kSec;
  o.rollup_period_ns = 60 * kSec;
  o.batch_frames = 500;
  auto s = MustOpen(path, o);
  if (!s) return nullptr;
  Inventory inv;
  inv.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kPower)};
  s->SetInventory(inv);
  for (int i = 0; i < 3600; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i}));
  if (!s->Flush().ok()) return nullptr;
  return s;
}

TEST(RingStore, DownsampleReadsRawOrRollupTier) {
  TempDir dir;
  auto s = HourOfFrames(dir.File("ds.db"));
  ASSERT_TRUE(s);
  const std::string key = "rail/VDD_IN/power";

  // Fine steps inside the raw tier: from raw frames.
  auto fine = s->Downsample(key, kT0 + 3300 * kSec, kT0 + 3600 * kSec, 10 * kSec);
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  ASSERT_EQ(fine->size(), 30u);
  for (size_t k = 0; k < fine->size(); ++k) {
    const auto& b = (*fine)[k];
    int64_t first = 3300 + static_cast<int64_t>(k) * 10;
    EXPECT_EQ(b.t_ns, kT0 + first * kSec);
    EXPECT_EQ(b.count, 10);
    EXPECT_EQ(b.min, first);
    EXPECT_EQ(b.max, first + 9);
    EXPECT_DOUBLE_EQ(b.avg, static_cast<double>(first) + 4.5);
  }
  // The whole hour at 5-minute steps: the raw tier holds only 10 minutes, so
  // this comes from the rollup tier (plus the open minute from raw).
  auto coarse = s->Downsample(key, kT0, kT0 + 3600 * kSec, 300 * kSec);
  ASSERT_TRUE(coarse.ok()) << coarse.status().message();
  ASSERT_EQ(coarse->size(), 12u);
  for (size_t k = 0; k < coarse->size(); ++k) {
    const auto& b = (*coarse)[k];
    int64_t first = static_cast<int64_t>(k) * 300;
    EXPECT_EQ(b.count, 300);
    EXPECT_EQ(b.min, first);
    EXPECT_EQ(b.max, first + 299);
    EXPECT_DOUBLE_EQ(b.avg, static_cast<double>(first) + 149.5);
  }
  // The raw tier alone no longer knows the first 50 minutes.
  auto raw_only = s->Downsample(key, kT0, kT0 + 3600 * kSec, 300 * kSec, Tier::kRaw);
  ASSERT_TRUE(raw_only.ok());
  ASSERT_EQ(raw_only->size(), 3u);
  EXPECT_EQ((*raw_only)[0].count, 1);  // frame 2999 = newest - 600 s
  EXPECT_EQ((*raw_only)[0].min, 2999);
  EXPECT_EQ((*raw_only)[1].count, 300);
  // Fine steps over old times: the rollup rows, one per minute.
  auto old = s->Downsample(key, kT0, kT0 + 300 * kSec, 10 * kSec);
  ASSERT_TRUE(old.ok());
  ASSERT_EQ(old->size(), 5u);
  EXPECT_EQ((*old)[1].t_ns, kT0 + 60 * kSec);
  EXPECT_EQ((*old)[1].count, 60);

  EXPECT_FALSE(s->Downsample("rail/nope/power", kT0, kT0 + kSec, kSec).ok());
  EXPECT_FALSE(s->Downsample(key, kT0, kT0 + kSec, 0).ok());
  EXPECT_FALSE(s->Downsample(key, 0, INT64_MAX, 1).ok());  // too many steps
}

// A store younger than the range asked for: every step from the raw frames
// at the asked step, none dated before the first frame it holds (not a
// rollup row per minute dated at the minute's start).
TEST(RingStore, DownsampleOnAYoungStoreIsAtTheAskedStep) {
  TempDir dir;
  auto o = Fast();
  o.rollup_period_ns = 60 * kSec;
  auto s = MustOpen(dir.File("young.db"), o);
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kPower)};
  s->SetInventory(inv);
  const int64_t first = kT0 + 37 * kSec;  // started mid-minute, up 70 s
  for (int i = 0; i < 70; ++i) s->Append(MakeFrame(first + i * kSec, {i}));
  ASSERT_TRUE(s->Flush().ok());
  const int64_t to = first + 70 * kSec;
  auto b = s->Downsample("rail/VDD_IN/power", to - 180 * kSec, to, 10 * kSec);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->size(), 7u);
  int64_t total = 0;
  for (size_t k = 0; k < b->size(); ++k) {
    const auto& x = (*b)[k];
    SCOPED_TRACE(k);
    EXPECT_GE(x.t_ns, first);
    EXPECT_EQ(x.t_ns, first + static_cast<int64_t>(k) * 10 * kSec);
    EXPECT_EQ(x.count, 10);
    EXPECT_EQ(x.min, static_cast<int64_t>(k) * 10);
    EXPECT_EQ(x.max, static_cast<int64_t>(k) * 10 + 9);
    total += x.count;
  }
  EXPECT_EQ(total, 70);
  // A step coarser than the rollup period: still no bucket before the first frame.
  auto coarse = s->Downsample("rail/VDD_IN/power", kT0 - 100 * kSec, to, 100 * kSec);
  ASSERT_TRUE(coarse.ok());
  ASSERT_EQ(coarse->size(), 2u);
  EXPECT_EQ((*coarse)[0].t_ns, first);
  EXPECT_EQ((*coarse)[0].count, 63);  // first .. kT0 + 99 s
  EXPECT_EQ((*coarse)[1].t_ns, kT0 + 100 * kSec);
  EXPECT_EQ((*coarse)[1].count, 7);
}

// A range across the raw tier's start: rollup rows (a step per period, dated
// at the period) only where the raw frames were retired, the raw frames at
// the asked step from the oldest one on.
TEST(RingStore, DownsampleAcrossTheRawBoundaryUsesEachTierWhereItHolds) {
  TempDir dir;
  auto s = HourOfFrames(dir.File("straddle.db"));
  ASSERT_TRUE(s);
  auto stats = s->Stats();
  ASSERT_TRUE(stats.ok() && stats->oldest_ns);
  const int64_t oldest = *stats->oldest_ns;  // frame 2999: newest - 600 s
  ASSERT_EQ(oldest, kT0 + 2999 * kSec);
  auto b = s->Downsample("rail/VDD_IN/power", kT0 + 2700 * kSec, kT0 + 3300 * kSec, 10 * kSec);
  ASSERT_TRUE(b.ok()) << b.status().message();
  std::vector<Bucket> rollup, raw;
  for (const auto& x : *b) (x.t_ns < oldest ? rollup : raw).push_back(x);
  // Retired minutes 2700..2940: one row each (the minute that holds the
  // oldest frame is answered by its raw frames).
  ASSERT_EQ(rollup.size(), 4u);
  for (size_t k = 0; k < rollup.size(); ++k) {
    const int64_t minute = 2700 + static_cast<int64_t>(k) * 60;
    EXPECT_EQ(rollup[k].t_ns, kT0 + minute * kSec);
    EXPECT_EQ(rollup[k].count, 60);
    EXPECT_EQ(rollup[k].min, minute);
  }
  // From the oldest raw frame on: 10 s steps, the first dated at that frame.
  ASSERT_EQ(raw.size(), 31u);
  EXPECT_EQ(raw[0].t_ns, oldest);
  EXPECT_EQ(raw[0].count, 1);
  for (size_t k = 1; k < raw.size(); ++k) {
    const int64_t t = 3000 + static_cast<int64_t>(k - 1) * 10;
    EXPECT_EQ(raw[k].t_ns, kT0 + t * kSec);
    EXPECT_EQ(raw[k].count, 10);
    EXPECT_EQ(raw[k].min, t);
    EXPECT_EQ(raw[k].max, t + 9);
  }
}

// Ranges wider than int64 (t - from overflows int64): every step index and
// start computed exactly, on every tier, for frames at ordinary times and at
// the ends of int64.
TEST(RingStore, DownsampleOverRangesWiderThanInt64) {
  TempDir dir;
  auto o = Fast();
  o.rollup_period_ns = 60 * kSec;
  auto s = MustOpen(dir.File("wide.db"), o);
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kPower)};
  s->SetInventory(inv);
  for (int i = 0; i < 180; ++i) s->Append(MakeFrame(kT0 + i * kSec, {1000 + i}));
  ASSERT_TRUE(s->Flush().ok());
  const std::string key = "rail/VDD_IN/power";
  constexpr int64_t k2p62 = int64_t{1} << 62;
  constexpr int64_t k1678 = -9'214'560'000'000'000'000;  // 1678-01-01T00:00:00Z
  constexpr int64_t k2262 = 9'214'646'400'000'000'000;   // 2262-01-01T00:00:00Z
  constexpr int64_t k3000d = int64_t{3000} * 86'400 * kSec;
  __extension__ typedef __int128 Wide;
  struct Case {
    int64_t from, to, step;
  };
  for (Tier tier : {Tier::kAuto, Tier::kRaw, Tier::kRollup}) {
    for (Case c : {Case{INT64_MIN, INT64_MAX, k2p62}, Case{INT64_MIN, INT64_MAX, INT64_MAX},
                   Case{k1678, k2262, k3000d}, Case{INT64_MIN, kT0 + 120 * kSec, k2p62}}) {
      SCOPED_TRACE(::testing::Message() << "tier " << static_cast<int>(tier) << " from " << c.from
                                        << " to " << c.to << " step " << c.step);
      auto b = s->Downsample(key, c.from, c.to, c.step, tier);
      ASSERT_TRUE(b.ok()) << b.status().message();
      ASSERT_EQ(b->size(), 1u);  // every frame falls in the one step that holds kT0
      const Wide start = (Wide{kT0} - c.from) / c.step * c.step + c.from;
      EXPECT_LE(start, Wide{kT0});
      // Dated at its first value, kT0 (its start is before it).
      EXPECT_EQ((*b)[0].t_ns, kT0);
      const int64_t n = c.to == kT0 + 120 * kSec ? 120 : 180;  // whole rollup periods
      EXPECT_EQ((*b)[0].count, n);
      EXPECT_EQ((*b)[0].min, 1000);
      EXPECT_EQ((*b)[0].max, 1000 + n - 1);
    }
  }
  // A value-less start (0, -1) is no bucket's time: its first value is.
  EXPECT_EQ((*s->Downsample(key, INT64_MIN, INT64_MAX, k2p62))[0].t_ns, kT0);
  EXPECT_EQ((*s->Downsample(key, INT64_MIN, INT64_MAX, INT64_MAX))[0].t_ns, kT0);
  // A range with nothing in it, at either end of int64.
  auto none = s->Downsample(key, INT64_MAX - 1, INT64_MAX, INT64_MAX);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  none = s->Downsample(key, INT64_MIN, INT64_MIN + 1, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // The step count is exact: 2^64 - 1 ns in 2^44 ns steps is over a million.
  EXPECT_FALSE(s->Downsample(key, INT64_MIN, INT64_MAX, int64_t{1} << 44).ok());
  EXPECT_TRUE(s->Downsample(key, INT64_MIN, INT64_MAX, int64_t{1} << 45).ok());  // 524288
}

// Frames stored at the ends of int64: folded into rollup periods, counted
// in the right steps, and interpolated across without overflow.
TEST(RingStore, FramesAtTheEndsOfInt64) {
  TempDir dir;
  auto o = Fast();
  o.rollup_period_ns = 60 * kSec;
  auto s = MustOpen(dir.File("ends.db"), o);
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagCounter | kFlagDerived)};
  s->SetInventory(inv);
  auto frame = [](int64_t bt, int64_t rt, int64_t v) {
    Frame f;
    f.boottime_ns = bt;
    f.realtime_ns = rt;
    f.values = {Value(v)};
    return f;
  };
  s->Append(frame(kSec, INT64_MIN + 1, 0));
  s->Append(frame(2 * kSec, INT64_MAX - 1, 1'000'000));  // a wall-clock step of 2^64 ns
  ASSERT_TRUE(s->Flush().ok());
  const std::string key = "rail/VDD_IN/energy";
  constexpr int64_t k2p62 = int64_t{1} << 62;
  auto raw = s->Downsample(key, INT64_MIN, INT64_MAX, k2p62, Tier::kRaw);
  ASSERT_TRUE(raw.ok()) << raw.status().message();
  ASSERT_EQ(raw->size(), 2u);
  EXPECT_EQ((*raw)[0].t_ns, INT64_MIN + 1);  // the step's first value, after its start
  EXPECT_EQ((*raw)[0].min, 0);
  EXPECT_EQ((*raw)[1].t_ns, INT64_MAX - 1);  // after its start, INT64_MIN + 3 * 2^62
  EXPECT_EQ((*raw)[1].max, 1'000'000);
  // The rollup tier: the first frame's period (its start clamped to
  // INT64_MIN) is past rollup retention from the newest frame, and gone.
  for (Tier tier : {Tier::kAuto, Tier::kRollup}) {
    auto b = s->Downsample(key, INT64_MIN, INT64_MAX, k2p62, tier);
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_EQ(b->size(), 1u) << static_cast<int>(tier);
    EXPECT_GE((*b)[0].t_ns, k2p62);  // its period's start, in the step after k2p62
    EXPECT_LE((*b)[0].t_ns, INT64_MAX - 1);
    EXPECT_EQ((*b)[0].count, 1);
  }
  // Halfway between the two frames (-1 is 2^63 - 1 ns after the first).
  auto mid = s->CounterAt(key, -1);
  ASSERT_TRUE(mid.ok()) << mid.status().message();
  ASSERT_TRUE(mid->has_value());
  EXPECT_NEAR(**mid, 500'000, 1);
  auto e = s->EnergyBetween(key, INT64_MIN + 1, INT64_MAX - 1);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->has_value());
  EXPECT_DOUBLE_EQ(**e, 1'000'000);
}

// ---------------------------------------------------------------- counters

TEST(RingStore, CounterAtInterpolatesAndEnergyIsASubtraction) {
  TempDir dir;
  auto s = MustOpen(dir.File("energy.db"));
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagCounter | kFlagDerived),
                  Ch(1, Kind::kRail, "VDD_IN", Field::kPower)};
  s->SetInventory(inv);
  // 1 W: the counter gains 1000 mJ per second; i = 5 is missing.
  for (int i = 0; i <= 100; ++i) {
    Value e = i == 5 ? std::nullopt : Value(1000 * i);
    s->Append(MakeFrame(kT0 + i * kSec, {e, 1000}));
  }
  ASSERT_TRUE(s->Flush().ok());
  const std::string key = "rail/VDD_IN/energy";
  auto at = [&](int64_t t) {
    auto r = s->CounterAt(key, t);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : std::nullopt;
  };
  EXPECT_EQ(at(kT0 + 2500 * int64_t{1'000'000}), 2500.0);
  EXPECT_EQ(at(kT0 + 3 * kSec), 3000.0);
  EXPECT_EQ(at(kT0 + 5500 * int64_t{1'000'000}), 5500.0);  // across the missing sample
  EXPECT_EQ(at(kT0), 0.0);
  EXPECT_FALSE(at(kT0 - 1));
  EXPECT_FALSE(at(kT0 + 100 * kSec + 1));
  auto e = s->EnergyBetween(key, kT0 + kSec / 2, kT0 + 10 * kSec + kSec / 4);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->has_value());
  EXPECT_DOUBLE_EQ(**e, 9750.0);
  EXPECT_FALSE(s->EnergyBetween(key, kT0 + 2 * kSec, kT0 + kSec).ok());
  EXPECT_FALSE(s->CounterAt("rail/VDD_IN/power", kT0).ok());  // not a counter
  EXPECT_FALSE(s->CounterAt("rail/nope/energy", kT0).ok());

  // The daemon restarts without seeding its integrator: the counter starts
  // again from 0, the store keeps it non-decreasing.
  ASSERT_TRUE(s->Close().ok());
  s = MustOpen(dir.File("energy.db"));
  ASSERT_TRUE(s);
  s->SetInventory(inv);
  for (int i = 101; i <= 103; ++i) s->Append(MakeFrame(kT0 + i * kSec, {1000 * (i - 101), 1000}));
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_EQ(at(kT0 + 101 * kSec), 100000.0);
  EXPECT_EQ(at(kT0 + 103 * kSec), 102000.0);
  auto across = s->EnergyBetween(key, kT0 + 99 * kSec, kT0 + 103 * kSec);
  ASSERT_TRUE(across.ok());
  EXPECT_EQ(**across, 3000.0);  // 99..100 and 101..103; nothing invented for the gap
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->counter_resets, 1u);
  auto last = s->LastCounters();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, (std::map<std::string, int64_t>{{key, 102000}}));
}

// (I8) A channel declared again as a counter (the same key, the flag added)
// is kept non-decreasing from its first frame as one, like a channel that
// was a counter from the start.
TEST(RingStore, AChannelDeclaredAgainAsACounterIsKeptNonDecreasing) {
  TempDir dir;
  auto s = MustOpen(dir.File("redeclared.db"));
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kEnergy)};
  s->SetInventory(inv);
  s->Append(MakeFrame(kT0, {300}));
  s->Append(MakeFrame(kT0 + kSec, {100}));  // not a counter yet: stored as read
  inv.channels[0].flags = kFlagCounter;
  s->SetInventory(inv);
  for (int i = 2; i <= 4; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i == 2 ? 500 : 10 * i}));
  ASSERT_TRUE(s->Flush().ok());
  auto r = s->Range(kT0, kT0 + 5 * kSec, {"rail/VDD_IN/energy"}, 10);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->channels.size(), 1u);
  std::vector<int64_t> stored;
  for (const auto& f : r->frames) stored.push_back(f.values.at(0).value_or(-1));
  // 30 after 500 is a reset: the counter goes on from 500.
  EXPECT_EQ(stored, (std::vector<int64_t>{300, 100, 500, 500, 510}));
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->counter_resets, 1u);
}

TEST(RingStore, CounterAtFallsBackToTheRollupTier) {
  TempDir dir;
  auto o = Fast();
  o.raw_retention_ns = 120 * kSec;
  o.rollup_period_ns = 60 * kSec;
  auto s = MustOpen(dir.File("energy2.db"), o);
  ASSERT_TRUE(s);
  Inventory inv;
  inv.channels = {Ch(0, Kind::kRail, "VDD_CPU_CV", Field::kEnergy, kFlagCounter)};
  s->SetInventory(inv);
  for (int i = 0; i < 600; ++i) s->Append(MakeFrame(kT0 + i * kSec, {2000 * i}));  // 2 W
  ASSERT_TRUE(s->Flush().ok());
  const std::string key = "rail/VDD_CPU_CV/energy";
  // Period starts are exact (the first sample of each minute is at its start).
  auto e = s->EnergyBetween(key, kT0 + 60 * kSec, kT0 + 180 * kSec);
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_TRUE(e->has_value());
  EXPECT_DOUBLE_EQ(**e, 240000.0);
  // Inside a period: within one sample of the truth.
  auto mid = s->CounterAt(key, kT0 + 90 * kSec);
  ASSERT_TRUE(mid.ok());
  ASSERT_TRUE(mid->has_value());
  EXPECT_NEAR(**mid, 180000.0, 2000.0);
  // From the rollup tier into the raw tier.
  auto span = s->EnergyBetween(key, kT0 + 120 * kSec, kT0 + 590 * kSec);
  ASSERT_TRUE(span.ok());
  EXPECT_DOUBLE_EQ(**span, 2000.0 * 470);
}

// ---------------------------------------------------------------- windows

TEST(RingStore, WindowsCrud) {
  TempDir dir;
  const auto path = dir.File("win.db");
  int64_t a = 0, b = 0;
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    auto ra = s->BeginWindow("resnet50 fp16", kT0 + 10 * kSec);
    ASSERT_TRUE(ra.ok()) << ra.status().message();
    a = *ra;
    auto g = s->GetWindow(a);
    ASSERT_TRUE(g.ok() && g->has_value());
    EXPECT_EQ((*g)->label, "resnet50 fp16");
    EXPECT_EQ((*g)->start_ns, kT0 + 10 * kSec);
    EXPECT_FALSE((*g)->end_ns);
    ASSERT_TRUE(s->EndWindow(a, kT0 + 20 * kSec).ok());
    g = s->GetWindow(a);
    ASSERT_TRUE(g.ok() && g->has_value());
    EXPECT_EQ((*g)->end_ns, kT0 + 20 * kSec);
    EXPECT_FALSE(s->EndWindow(a, kT0 + 30 * kSec).ok());  // already ended
    EXPECT_FALSE(s->EndWindow(9999, kT0).ok());           // no such window
    auto rb = s->AddWindow("idle", kT0 + 30 * kSec, kT0 + 40 * kSec);
    ASSERT_TRUE(rb.ok());
    b = *rb;
    EXPECT_NE(a, b);
    EXPECT_FALSE(s->AddWindow("backwards", kT0 + 5 * kSec, kT0).ok());
    auto c = s->BeginWindow("open", kT0 + 50 * kSec);
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(s->EndWindow(*c, kT0).ok());  // before its start
    auto none = s->GetWindow(12345);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
  }
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  auto list = s->ListWindows(kT0 + 15 * kSec, kT0 + 35 * kSec);  // overlapping
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, a);
  EXPECT_EQ((*list)[1].id, b);
  auto later = s->ListWindows(kT0 + 45 * kSec, kT0 + 1000 * kSec);  // the open one
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].label, "open");
  EXPECT_TRUE(s->ListWindows(kT0, kT0 + 10 * kSec)->empty());
  auto d = s->AddWindow("after reopen", kT0, kT0 + 1);
  ASSERT_TRUE(d.ok());
  EXPECT_GT(*d, b);  // ids are never reused
}

// ---------------------------------------------------------------- bad files

TEST(RingStore, GarbageFileIsAnErrorOrMovedAside) {
  TempDir dir;
  const auto path = dir.File("bad.db");
  std::string garbage(10000, '\0');
  std::mt19937 rng(3);
  for (auto& c : garbage) c = static_cast<char>(rng());
  WriteAll(path, garbage);

  auto r = RingStore::Open(path, Fast());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not an SQLite database"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(r.status().code() == edgemon::StatusCode::kDataLoss);
  EXPECT_EQ(ReadAll(path), garbage);  // untouched

  auto o = Fast();
  o.recreate_bad = true;
  std::vector<StoreEvent> events;
  o.on_event = [&](const StoreEvent& e) { events.push_back(e); };
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kRecreated);
  std::string moved;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().filename().string().rfind("bad.db.bad-", 0) == 0) moved = e.path().string();
  }
  ASSERT_FALSE(moved.empty());
  EXPECT_EQ(ReadAll(moved), garbage);
  EXPECT_NE(events[0].message.find(moved), std::string::npos);
  s->SetInventory(SmallInventory());
  s->Append(MakeFrame(kT0, {1, 2, 3, 4}));
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_TRUE(s->IntegrityCheck().ok());
}

TEST(RingStore, CorruptPagesForeignAndNewerFilesAreRefused) {
  TempDir dir;
  // A real store with damaged pages.
  const auto path = dir.File("corrupt.db");
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    Inventory inv = edgemon::testing::OrinLikeInventory();
    s->SetInventory(inv);
    std::mt19937_64 rng(5);
    for (int i = 0; i < 400; ++i) s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, 0, rng)));
  }
  std::string bytes = ReadAll(path);
  ASSERT_GT(bytes.size(), 40000u);
  for (size_t i = 3 * 4096; i < 7 * 4096; ++i) bytes[i] = static_cast<char>(0xA5);
  WriteAll(path, bytes);
  auto r = RingStore::Open(path, Fast());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("corrupt"), std::string::npos) << r.status().message();
  EXPECT_TRUE(r.status().code() == edgemon::StatusCode::kDataLoss);
  EXPECT_EQ(ReadAll(path), bytes);

  // Someone else's SQLite database.
  const auto foreign = dir.File("foreign.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE songs(title TEXT); INSERT INTO songs VALUES('x')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto f = RingStore::Open(foreign, Fast());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("foreign"), std::string::npos) << f.status().message();
  EXPECT_TRUE(f.status().code() == edgemon::StatusCode::kDataLoss);
  auto o = Fast();
  o.recreate_bad = true;
  EXPECT_TRUE(MustOpen(foreign, o));
  EXPECT_TRUE(std::any_of(std::filesystem::directory_iterator(dir.path()), {}, [](const auto& e) {
    return e.path().filename().string().rfind("foreign.db.bad-", 0) == 0;
  }));

  // A store from a newer edgemon is never moved aside.
  const auto newer = dir.File("newer.db");
  { EXPECT_TRUE(MustOpen(newer)); }
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto n = RingStore::Open(newer, o);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("newer"), std::string::npos) << n.status().message();
  EXPECT_TRUE(n.status().code() == edgemon::StatusCode::kDataLoss);
  EXPECT_GT(FileBytes(newer), 0);
}

TEST(RingStore, OptionsAreValidated) {
  TempDir dir;
  auto o = Fast();
  o.max_bytes = 1000;
  EXPECT_FALSE(RingStore::Open(dir.File("x.db"), o).ok());
  o = Fast();
  o.rollup_period_ns = 0;
  EXPECT_FALSE(RingStore::Open(dir.File("x.db"), o).ok());
  o = Fast();
  o.rollup_retention_ns = -1;
  EXPECT_FALSE(RingStore::Open(dir.File("x.db"), o).ok());
  o = Fast();
  o.batch_frames = 0;
  EXPECT_FALSE(RingStore::Open(dir.File("x.db"), o).ok());
  auto missing = RingStore::Open(dir.File("no/such/dir/x.db"), Fast());
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(missing.status().code() == edgemon::StatusCode::kDataLoss);  // not the file's fault
}

// (I14) A frame blob that does not decode passes quick_check; every read
// skips and counts it instead of failing the range.
TEST(RingStore, MalformedFrameBlobIsSkippedAndCounted) {
  TempDir dir;
  const auto path = dir.File("blob.db");
  const int kFrames = 20;
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    Inventory inv = SmallInventory();
    inv.channels.push_back(Ch(4, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagCounter));
    s->SetInventory(inv);
    for (int i = 0; i < kFrames; ++i) {
      s->Append(MakeFrame(kT0 + i * kSec, {i, 40000 + i, 5000, 1000, 100 * i}));
    }
    ASSERT_TRUE(s->Flush().ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // 0x01 (format v1), then a varint that never ends.
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE frames SET data = x'01ff' WHERE seq = 6", nullptr, nullptr, nullptr),
      SQLITE_OK);
  ASSERT_EQ(sqlite3_changes(db), 1);
  sqlite3_close(db);

  auto s = MustOpen(path);  // quick_check passes; opening replays nothing from it
  ASSERT_TRUE(s);
  auto all = s->Range(kT0, kT0 + kFrames * kSec, {}, 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->frames.size(), static_cast<size_t>(kFrames - 1));
  EXPECT_EQ(all->bad_frames, 1u);
  for (const auto& f : all->frames) EXPECT_NE(f.seq, 6u);
  // Paged: the bad frame does not end a page early.
  auto page = s->Range(kT0, kT0 + kFrames * kSec, {"cpu/cpu0/load"}, 10);
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_EQ(page->frames.size(), 10u);
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->bad_frames, 1u);
  // The frame times, read from the time index: every stored frame's, the
  // undecodable one too, oldest first and at most `limit`.
  auto times = s->FrameTimes(kT0 + kSec, kT0 + kFrames * kSec, 0);
  ASSERT_TRUE(times.ok()) << times.status().message();
  ASSERT_EQ(times->size(), static_cast<size_t>(kFrames - 1));
  for (size_t i = 0; i < times->size(); ++i) {
    EXPECT_EQ((*times)[i], kT0 + static_cast<int64_t>(i + 1) * kSec);
  }
  auto first = s->FrameTimes(kT0, kT0 + kFrames * kSec, 7);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->size(), 7u);
  EXPECT_EQ(first->back(), kT0 + 6 * kSec);
  auto none = s->FrameTimes(kT0 + kSec, kT0 + kSec, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // Downsampled from raw frames: 19 values, one frame counted as bad.
  uint64_t bad = 0;
  auto b =
      s->Downsample("cpu/cpu0/load", kT0, kT0 + kFrames * kSec, kFrames * kSec, Tier::kRaw, &bad);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*b)[0].count, kFrames - 1);
  EXPECT_EQ(bad, 1u);
  // Energy across it: interpolated from its neighbours.
  auto e = s->EnergyBetween("rail/VDD_IN/energy", kT0 + 5 * kSec, kT0 + 7 * kSec);
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_TRUE(e->has_value());
  EXPECT_DOUBLE_EQ(**e, 200.0);
  EXPECT_FALSE(s->damaged());  // a bad blob is not a damaged file
}

// (I13) A file shortened while the store is open: the first statement that
// meets it marks the store damaged, reported once; nothing more is written
// and Close() says so.
TEST(RingStore, TruncatedWhileOpenIsReportedOnceAsDamage) {
  TempDir dir;
  const auto path = dir.File("cut.db");
  Inventory inv = edgemon::testing::OrinLikeInventory();
  std::mt19937_64 rng(9);
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(inv);
    for (int i = 0; i < 600; ++i) s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, 0, rng)));
  }  // closed: everything checkpointed into the main file
  ASSERT_GT(FileBytes(path), 200000);
  std::mutex mu;
  std::vector<StoreEvent> events;
  auto o = Fast();
  o.on_event = [&](const StoreEvent& e) {
    std::lock_guard lk(mu);
    events.push_back(e);
  };
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->damaged());
  ASSERT_EQ(truncate(path.c_str(), FileBytes(path) / 3), 0);

  auto r = s->Range(kT0, kT0 + 600 * kSec, {}, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(s->damaged()) << (r.ok() ? "read ok" : r.status().message());
  EXPECT_NE(s->damage().find(path), std::string::npos) << s->damage();
  EXPECT_FALSE(s->Range(kT0, kT0 + 600 * kSec, {}, 0).ok());  // reported once only
  auto counters = s->Counters();
  EXPECT_TRUE(counters.damaged);
  EXPECT_GT(counters.db_bytes, 0);
  // Writes are not attempted any more: dropped and counted.
  s->SetInventory(inv);
  s->Append(MakeFrame(kT0 + 601 * kSec, BigValues(inv, 0, rng)));
  EXPECT_FALSE(s->Flush().ok());
  EXPECT_FALSE(s->BeginWindow("run", kT0 + 601 * kSec).ok());
  EXPECT_GE(s->Counters().dropped_frames, 1u);
  Status closed = s->Close();
  EXPECT_FALSE(closed.ok());
  EXPECT_TRUE(closed.code() == edgemon::StatusCode::kDataLoss);
  std::lock_guard lk(mu);
  ASSERT_EQ(std::count_if(events.begin(), events.end(),
                          [](const StoreEvent& e) { return e.kind == StoreEvent::Kind::kDamaged; }),
            1)
      << events.size();
  for (const auto& e : events) {
    EXPECT_NE(e.kind, StoreEvent::Kind::kWriteFailed) << e.message;  // damage is logged once
  }
}

// ---------------------------------------------------------------- disk full

// A store of an Orin-like board, in batches of 100 frames, whose disk can be
// made full. Write(n) appends n frames 1 s apart (each one accepted) and
// returns the last seq; Events() is what on_event was given so far.
class OrinStore {
 public:
  OrinStore(const std::string& path, RingStoreOptions o, uint64_t seed) : rng_(seed) {
    o.batch_frames = 100;
    o.on_event = [this](const StoreEvent& e) {
      std::lock_guard lk(mu_);
      events_.push_back(e);
    };
    store_ = MustOpen(path, std::move(o));
    if (store_) store_->SetInventory(inv_);
  }
  explicit operator bool() const { return store_ != nullptr; }
  RingStore* operator->() { return store_.get(); }

  uint64_t Write(int n) {
    uint64_t seq = 0;
    for (int k = 0; k < n; ++k, ++i_) {
      seq = store_->Append(
          MakeFrame(kT0 + static_cast<int64_t>(i_) * kSec, BigValues(inv_, i_, rng_)));
      EXPECT_NE(seq, 0u);  // always accepted
    }
    return seq;
  }
  // The disk is full: the file may not grow by one more page.
  bool FillDisk() {
    auto st = store_->Stats();
    return st.ok() && store_->SetMaxPageCountForTesting(st->page_count).ok();
  }
  std::vector<StoreEvent> Events() {
    std::lock_guard lk(mu_);
    return events_;
  }

 private:
  Inventory inv_ = edgemon::testing::OrinLikeInventory();
  std::mt19937_64 rng_;
  uint64_t i_ = 0;
  std::mutex mu_;
  std::vector<StoreEvent> events_;    // guarded by mu_
  std::unique_ptr<RingStore> store_;  // last: closed before the rest goes
};

TEST(RingStore, FullDiskDropsBatchesKeepsAcceptingAndResumes) {
  TempDir dir;
  OrinStore s(dir.File("full.db"), Fast(), 9);
  ASSERT_TRUE(s);
  s.Write(100);
  ASSERT_TRUE(s->Flush().ok());
  ASSERT_TRUE(s.FillDisk());
  int failures = 0;
  for (int round = 0; round < 6; ++round) {
    s.Write(100);
    if (!s->Flush().ok()) ++failures;
  }
  EXPECT_GE(failures, 5);
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_GE(st->dropped_batches, 5u);
  EXPECT_GE(st->dropped_frames, 500u);
  EXPECT_EQ(st->state, WriterState::kFailing);
  EXPECT_NE(st->last_error.find("full"), std::string::npos) << st->last_error;
  {
    auto events = s.Events();
    ASSERT_EQ(events.size(), 1u);  // rate-limited: once a minute
    EXPECT_EQ(events[0].kind, StoreEvent::Kind::kWriteFailed);
    EXPECT_NE(events[0].message.find("disk full"), std::string::npos);
  }
  // Space returns.
  ASSERT_TRUE(s->SetMaxPageCountForTesting(1 << 30).ok());
  uint64_t last = s.Write(50);
  ASSERT_TRUE(s->Flush().ok());
  st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, WriterState::kIdle);
  EXPECT_EQ(st->last_seq, last);
  {
    auto events = s.Events();
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1].kind, StoreEvent::Kind::kResumed);
  }
  auto latest = s->Latest({"rail/VDD_CPU_CV/energy"});
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->frames.size(), 1u);
  EXPECT_EQ(latest->frames[0].seq, last);
  EXPECT_TRUE(latest->frames[0].values[0].has_value());
  EXPECT_TRUE(s->IntegrityCheck().ok());
}

// ---------------------------------------------------------------- the store's clock

// The times the store reads come from RingStoreOptions::clock. A paced fake
// clock moves only when the test moves it, and its wall clock is set years
// before the machine's.

using edgemon::testing::FakeClock;

// Sets `clock`'s wall clock to `realtime_ns` (its monotonic clock stays).
void SetRealtime(FakeClock& clock, int64_t realtime_ns) {
  clock.JumpRealtime(realtime_ns - clock.RealtimeNs());
}

TEST(RingStore, ChannelsAreFirstSeenAtTheInjectedWallClockTime) {
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  SetRealtime(clock, kT0 + 3 * kSec);
  auto o = Fast();
  o.clock = &clock;
  auto s = MustOpen(dir.File("seen.db"), o);
  ASSERT_TRUE(s);
  Inventory inv = SmallInventory();
  s->SetInventory(inv);
  s->Append(MakeFrame(kT0, {1, 2, 3, 4}));
  ASSERT_TRUE(s->Flush().ok());
  clock.Advance(10 * kSec);
  inv.channels.push_back(Ch(4, Kind::kFan, "fan0", Field::kSpeed));
  s->SetInventory(inv);
  s->Append(MakeFrame(kT0 + kSec, {1, 2, 3, 4, 5}));
  ASSERT_TRUE(s->Flush().ok());

  auto channels = s->Channels();
  ASSERT_TRUE(channels.ok());
  ASSERT_EQ(channels->size(), 5u);
  for (const auto& c : *channels) {
    EXPECT_EQ(c.first_seen_ns, c.key == "fan/fan0/speed" ? kT0 + 13 * kSec : kT0 + 3 * kSec)
        << c.key;
  }
}

TEST(RingStore, BadFileIsMovedAsideUnderTheInjectedWallClockTime) {
  TempDir dir;
  const auto path = dir.File("bad.db");
  WriteAll(path, std::string(8192, 'x'));
  FakeClock clock;
  SetRealtime(clock, kT0 + 7 * kSec + 999'999'999);  // 2023-11-14 22:13:07.999999999 UTC
  auto o = Fast();
  o.recreate_bad = true;
  o.clock = &clock;
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "bad.db.bad-20231114T221307Z"), names.end())
      << ::testing::PrintToString(names);
}

// The store's statistics once its writer has committed a frame on its own
// (no Flush). The bound only turns a writer that never commits into a
// failure rather than a hang.
Result<StoreStats> StatsOnceCommitted(RingStore& s) {
  auto st = s.Stats();
  for (int i = 0; i < 60'000 && st.ok() && st->frames == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    st = s.Stats();
  }
  return st;
}

TEST(RingStore, CommitIntervalIsMeasuredOnTheInjectedClock) {
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  auto o = Fast();
  o.commit_interval_ms = 3'600'000;  // an hour: no test run lasts that long on the real clock
  o.clock = &clock;
  auto s = MustOpen(dir.File("interval.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  ASSERT_NE(s->Append(MakeFrame(kT0, {1, 2, 3, 4})), 0u);
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 0);  // the clock has not moved: the frame waits in the queue
  EXPECT_EQ(st->queued_frames, 1u);

  clock.Advance(3'600 * kSec);
  st = StatsOnceCommitted(*s);  // by the writer unasked (no Flush)
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 1);
  EXPECT_EQ(st->queued_frames, 0u);
}

TEST(RingStore, SetCommitIntervalTakesEffectForFramesAlreadyQueued) {
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  auto o = Fast();
  o.commit_interval_ms = 5'000;
  o.clock = &clock;
  auto s = MustOpen(dir.File("interval.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  s->SetCommitInterval(3'600'000);  // longer: 5 s on the store's clock no longer commits
  ASSERT_NE(s->Append(MakeFrame(kT0, {1, 2, 3, 4})), 0u);
  clock.Advance(5 * kSec);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 0);
  EXPECT_EQ(st->queued_frames, 1u);

  s->SetCommitInterval(1'000);  // shorter: due already, for the frame that waits
  st = StatsOnceCommitted(*s);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 1);
  EXPECT_EQ(st->queued_frames, 0u);
}

TEST(RingStore, FramesWaitingForTheIntervalAreTakenInSoTheQueueStaysShort) {
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  auto o = Fast();
  o.commit_interval_ms = 3'600'000;  // the store's clock never gets there before the end
  o.batch_frames = 256;
  o.max_queued_frames = 80;  // fewer than a batch: the writer must take frames in before
  o.clock = &clock;
  auto s = MustOpen(dir.File("ingest.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  for (int i = 0; i < 300; ++i) {
    // A full queue drops the frame: try again until the writer has taken
    // the queue in (it never would while waiting for a batch or the hour).
    uint64_t seq = 0;
    for (int tries = 0; seq == 0 && tries < 20'000; ++tries) {
      seq = s->Append(MakeFrame(kT0 + i * kSec, {i, 2, 3, 4}));
      if (seq == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_NE(seq, 0u) << "frame " << i << " never fitted in the queue";
  }
  // Taken in, waiting for the hour; a batch of 256 commits without it if
  // the writer happened to take that many in (it takes what has queued).
  // (Polled: a commit and the count of frames still batched are not one step.)
  auto st = s->Stats();
  for (int i = 0;
       i < 10'000 && st.ok() && static_cast<uint64_t>(st->frames) + st->queued_frames != 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    st = s->Stats();
  }
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->frames == 0 || st->frames == 256) << st->frames;
  EXPECT_EQ(static_cast<uint64_t>(st->frames) + st->queued_frames, 300u);

  clock.Advance(3'600 * kSec);
  for (int i = 0; i < 60'000 && st.ok() && (st->frames != 300 || st->queued_frames != 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    st = s->Stats();
  }
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 300);
  EXPECT_EQ(st->queued_frames, 0u);
  auto back = s->Range(kT0, kT0 + 300 * kSec, {}, 1000);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->frames.size(), 300u);
}

// Options under which a store commits at Flush only (its paced clock never
// reaches the hour), for the reads of queued frames.
RingStoreOptions CommitAtFlushOnly(FakeClock& clock) {
  auto o = Fast();
  o.commit_interval_ms = 3'600'000;
  o.batch_frames = 256;
  o.clock = &clock;
  return o;
}

// A store of SmallInventory() opened with `o` (CommitAtFlushOnly and what
// the test adds); with `commit_between`, every read of the queued frames
// commits between its copy of the writer's rows and its read of the
// committed ones (after_queued_copy).
std::unique_ptr<RingStore> OpenForQueuedReads(const std::string& path, RingStoreOptions o,
                                              bool commit_between) {
  auto opened = std::make_shared<RingStore*>(nullptr);
  if (commit_between) o.after_queued_copy = [opened] { ASSERT_TRUE((*opened)->Flush().ok()); };
  auto s = MustOpen(path, std::move(o));
  if (s) {
    *opened = s.get();
    s->SetInventory(SmallInventory());
  }
  return s;
}

// Appends frames i in [from, to), a second apart from kT0, each {i, 2, 3, 4}.
void AppendSeconds(RingStore& s, int from, int to) {
  for (int i = from; i < to; ++i) ASSERT_NE(s.Append(MakeFrame(kT0 + i * kSec, {i, 2, 3, 4})), 0u);
}

// Reads every frame of [from_ns, to_ns) through RangeWithQueued in pages of
// `limit`, each page starting after the previous page's last frame.
std::vector<Frame> QueuedPages(RingStore& s, int64_t from_ns, int64_t to_ns, size_t limit) {
  std::vector<Frame> out;
  for (int pages = 0; pages < 1000; ++pages) {
    auto r = s.RangeWithQueued(from_ns, to_ns, {}, limit);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) break;
    EXPECT_LE(r->frames.size(), limit);
    out.insert(out.end(), r->frames.begin(), r->frames.end());
    if (!r->truncated) break;
    EXPECT_FALSE(r->frames.empty());
    from_ns = r->frames.back().realtime_ns + 1;
  }
  return out;
}

void ExpectSameFrames(const std::vector<Frame>& a, const std::vector<Frame>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].seq, b[i].seq) << i;
    EXPECT_EQ(a[i].realtime_ns, b[i].realtime_ns) << i;
    EXPECT_EQ(a[i].boottime_ns, b[i].boottime_ns) << i;
    EXPECT_EQ(a[i].values, b[i].values) << i;
  }
}

TEST(RingStore, RangeWithQueuedReadsTheWritersFramesWithoutACommit) {
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  auto s = MustOpen(dir.File("queued.db"), CommitAtFlushOnly(clock));
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  AppendSeconds(*s, 0, 20);
  ASSERT_TRUE(s->Flush().ok());
  for (int i = 20; i < 50; ++i) {
    ASSERT_NE(s->Append(MakeFrame(kT0 + i * kSec,
                                  {i, i % 3 == 0 ? Value{} : Value{-i}, 3, int64_t{1} << 40})),
              0u);
  }
  const int64_t to = kT0 + 100 * kSec;
  auto all = s->RangeWithQueued(kT0, to, {}, 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_FALSE(all->truncated);
  ASSERT_EQ(all->frames.size(), 50u);
  for (size_t i = 0; i < 50; ++i) {
    const auto& f = all->frames[i];
    EXPECT_EQ(f.seq, i + 1);
    EXPECT_EQ(f.realtime_ns, kT0 + static_cast<int64_t>(i) * kSec);
    EXPECT_EQ(f.values[0], static_cast<int64_t>(i));
  }
  EXPECT_EQ(all->frames[21].values, (std::vector<Value>{21, Value{}, 3, int64_t{1} << 40}));
  EXPECT_EQ(all->frames[22].values, (std::vector<Value>{22, -22, 3, int64_t{1} << 40}));
  // Nothing was committed for it.
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 20);
  EXPECT_EQ(st->queued_frames, 30u);

  // One channel; a range that starts among the queued frames; one that
  // ends among the committed.
  const std::string key = all->channels[1].key;
  auto one = s->RangeWithQueued(kT0 + 10 * kSec, to, {key}, 0);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->channels.size(), 1u);
  ASSERT_EQ(one->frames.size(), 40u);
  EXPECT_EQ(one->frames[11].values, (std::vector<Value>{Value{}}));
  EXPECT_EQ(one->frames[12].values, (std::vector<Value>{-22}));
  auto late = s->RangeWithQueued(kT0 + 30 * kSec + 1, to, {}, 0);
  ASSERT_TRUE(late.ok());
  ASSERT_EQ(late->frames.size(), 19u);
  EXPECT_EQ(late->frames.front().seq, 32u);
  auto early = s->RangeWithQueued(kT0, kT0 + 5 * kSec, {}, 0);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->frames.size(), 5u);

  // Pages of every size across the committed and queued frames.
  for (size_t limit : {1, 7, 19, 20, 21, 29, 30, 31, 49, 50, 51}) {
    SCOPED_TRACE(limit);
    ExpectSameFrames(QueuedPages(*s, kT0, to, limit), all->frames);
  }
  st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 20);

  // What a Flush then Range reads.
  ASSERT_TRUE(s->Flush().ok());
  auto committed = s->Range(kT0, to, {}, 0);
  ASSERT_TRUE(committed.ok());
  ExpectSameFrames(committed->frames, all->frames);
}

TEST(RingStore, RangeWithQueuedCommitsNewChannelsFirst) {
  // Queued frames are read through the committed channel rows: a store that
  // has committed none (or a channel that came since) commits them first,
  // else the frames would read without their values.
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  auto s = MustOpen(dir.File("new.db"), CommitAtFlushOnly(clock));
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  AppendSeconds(*s, 0, 5);
  auto r = s->RangeWithQueued(kT0, kT0 + 10 * kSec, {}, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->channels.size(), 4u);
  ASSERT_EQ(r->frames.size(), 5u);
  EXPECT_EQ(r->frames[4].values, (std::vector<Value>{4, 2, 3, 4}));

  // The channel rows are committed now: the next frames are read from
  // memory.
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  const int64_t committed = st->frames;
  AppendSeconds(*s, 5, 9);
  r = s->RangeWithQueued(kT0, kT0 + 10 * kSec, {}, 0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->frames.size(), 9u);
  EXPECT_EQ(r->frames[8].values, (std::vector<Value>{8, 2, 3, 4}));
  st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, committed);
}

TEST(RingStore, RangeWithQueuedReadsFramesCommittedAfterItsCopyOnce) {
  // A commit between the copy of the writer's rows and the read of the
  // committed frames: the copied rows are in both, and read once.
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  auto o = CommitAtFlushOnly(clock);
  RingStore* store = nullptr;
  int commits = 0;
  o.after_queued_copy = [&] {
    ++commits;
    ASSERT_TRUE(store->Flush().ok());
  };
  auto s = MustOpen(dir.File("between.db"), o);
  ASSERT_TRUE(s);
  store = s.get();
  s->SetInventory(SmallInventory());
  AppendSeconds(*s, 0, 10);
  ASSERT_TRUE(s->Flush().ok());
  AppendSeconds(*s, 10, 25);
  auto r = s->RangeWithQueued(kT0, kT0 + 100 * kSec, {}, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(commits, 1);
  ASSERT_EQ(r->frames.size(), 25u);
  for (size_t i = 0; i < r->frames.size(); ++i) EXPECT_EQ(r->frames[i].seq, i + 1);
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 25);
}

TEST(RingStore, CounterAtWithQueuedReadsTheWritersReadingsWithoutACommit) {
  // A counter whose readings straddle the commit point (1 W, the counter
  // missing at 5, at 23 and at 24, which is the last committed frame): every
  // time from before the data to after it reads what Flush then CounterAt
  // reads, and nothing is committed; then with a commit between the scan of
  // the writer's rows and the read of the committed ones.
  for (bool commit_between : {false, true}) {
    SCOPED_TRACE(commit_between);
    TempDir dir;
    FakeClock clock(FakeClock::Mode::kPaced);
    auto o = CommitAtFlushOnly(clock);
    RingStore* store = nullptr;
    int commits = 0;
    if (commit_between) {
      o.after_queued_copy = [&] {
        if (commits++ == 0) {
          ASSERT_TRUE(store->Flush().ok());
        }
      };
    }
    auto s = MustOpen(dir.File("counter.db"), o);
    ASSERT_TRUE(s);
    store = s.get();
    Inventory inv;
    inv.channels = {Ch(0, Kind::kRail, "VDD_IN", Field::kEnergy, kFlagCounter),
                    Ch(1, Kind::kRail, "VDD_IN", Field::kPower)};
    s->SetInventory(inv);
    auto append = [&](int from, int to) {
      for (int i = from; i < to; ++i) {
        Value e = i == 5 || i == 23 || i == 24 ? std::nullopt : Value(1000 * i);
        ASSERT_NE(s->Append(MakeFrame(kT0 + i * kSec, {e, 1000})), 0u);
      }
    };
    append(0, 25);
    ASSERT_TRUE(s->Flush().ok());
    append(25, 40);
    const std::string key = "rail/VDD_IN/energy";
    std::vector<int64_t> times;
    for (int64_t ms = -1500; ms <= 41'000; ms += 250) times.push_back(kT0 + ms * 1'000'000);
    times.push_back(kT0 + 39 * kSec + 1);
    std::vector<std::optional<double>> queued;
    for (int64_t t : times) {
      auto r = s->CounterAtWithQueued(key, t);
      ASSERT_TRUE(r.ok()) << r.status().message();
      queued.push_back(*r);
    }
    auto st = s->Stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->frames, commit_between ? 40 : 25);
    EXPECT_FALSE(s->CounterAtWithQueued("rail/VDD_IN/power", kT0).ok());  // not a counter
    ASSERT_TRUE(s->Flush().ok());
    for (size_t i = 0; i < times.size(); ++i) {
      auto r = s->CounterAt(key, times[i]);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(queued[i], *r) << (times[i] - kT0) / 1'000'000 << " ms";
    }
    EXPECT_EQ(queued[(30 * 1000 + 1500) / 250], 30000.0);  // a queued reading
    EXPECT_EQ(queued[(23 * 1000 + 1500) / 250], 23000.0);  // between committed and queued
    EXPECT_FALSE(queued.back());                           // after the newest reading
  }
}

TEST(RingStore, FramesAfterWithQueuedReadsTheWritersFramesOnce) {
  // A push destination's look past the committed frames: for cursors on
  // both sides of the commit point and limits across it, the frames Flush
  // then FramesAfter reads, nothing committed; then with a commit between
  // the copy and the read.
  for (bool commit_between : {false, true}) {
    SCOPED_TRACE(commit_between);
    TempDir dir;
    FakeClock clock(FakeClock::Mode::kPaced);
    auto s = OpenForQueuedReads(dir.File("after.db"), CommitAtFlushOnly(clock), commit_between);
    ASSERT_TRUE(s);
    AppendSeconds(*s, 0, 10);
    ASSERT_TRUE(s->Flush().ok());
    int next = 10;
    for (uint64_t after : {0u, 7u, 10u, 12u}) {
      for (size_t limit : {size_t{0}, size_t{1}, size_t{4}}) {
        SCOPED_TRACE(::testing::Message() << "after " << after << ", limit " << limit);
        AppendSeconds(*s, next, next + 2);  // frames queued again
        next += 2;
        auto r = s->FramesAfterWithQueued(after, limit);
        ASSERT_TRUE(r.ok()) << r.status().message();
        std::vector<uint64_t> seqs;
        for (const Frame& f : r->frames) seqs.push_back(f.seq);
        std::vector<uint64_t> want;
        for (uint64_t q = after + 1; q <= static_cast<uint64_t>(next); ++q) {
          if (limit == 0 || want.size() < limit) want.push_back(q);
        }
        EXPECT_EQ(seqs, want);
        EXPECT_EQ(r->truncated, limit != 0 && static_cast<uint64_t>(next) - after > limit);
        ASSERT_FALSE(r->frames.empty());
        EXPECT_EQ(r->frames[0].values[0], static_cast<int64_t>(after));  // {i, 2, 3, 4}
      }
    }
    auto st = s->Stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->frames, commit_between ? next : 10);
  }
}

TEST(RingStore, FrameTimesWithQueuedHoldsTheWritersFrames) {
  // Then with a commit between the copy of the writer's rows and the read
  // of the committed times: each time once.
  for (bool commit_between : {false, true}) {
    SCOPED_TRACE(commit_between);
    TempDir dir;
    FakeClock clock(FakeClock::Mode::kPaced);
    auto s = OpenForQueuedReads(dir.File("times.db"), CommitAtFlushOnly(clock), commit_between);
    ASSERT_TRUE(s);
    AppendSeconds(*s, 0, 10);
    ASSERT_TRUE(s->Flush().ok());
    int from = 10;
    for (size_t limit : {size_t{0}, size_t{5}, size_t{12}, size_t{30}}) {
      SCOPED_TRACE(limit);
      AppendSeconds(*s, from, from + 4);  // queued again after each commit
      from += 4;
      auto q = s->FrameTimesWithQueued(kT0 + 3 * kSec, kT0 + 21 * kSec, limit);
      ASSERT_TRUE(q.ok()) << q.status().message();
      std::vector<int64_t> want;
      for (int i = 3; i < std::min(from, 21) && (limit == 0 || want.size() < limit); ++i) {
        want.push_back(kT0 + i * kSec);
      }
      EXPECT_EQ(*q, want);
    }
    auto st = s->Stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->frames, commit_between ? 22 : 10);  // the last read ends by the newest committed
  }
}

TEST(RingStore, DownsampleWithQueuedFoldsTheWritersFramesWithoutACommit) {
  // Every tier and a step finer than, equal to and coarser than the rollup
  // period (the rollup rows and their tail of frames, I7): the buckets a
  // Flush then Downsample gives, before any commit, where the closed
  // periods are held back as edgemond holds them (hourly writes: their
  // frames answer). Then with a commit between the copy of the writer's rows
  // and the read: counted once.
  for (bool commit_between : {false, true}) {
    SCOPED_TRACE(commit_between);
    TempDir dir;
    FakeClock clock(FakeClock::Mode::kPaced);
    auto o = CommitAtFlushOnly(clock);
    o.batch_frames = 1024;
    o.rollup_period_ns = 10 * kSec;
    o.rollup_write_frames = 1'000'000;
    auto s = OpenForQueuedReads(dir.File("series.db"), o, commit_between);
    ASSERT_TRUE(s);
    int i = 0;
    auto append = [&](int n) {
      for (int end = i + n; i < end; ++i) {
        ASSERT_NE(s->Append(MakeFrame(
                      kT0 + i * kSec,
                      {i * 7 % 23, i % 4 == 0 ? Value{} : Value{40000 + i}, 3, int64_t{1} << 40})),
                  0u);
      }
    };
    append(95);
    ASSERT_TRUE(s->Flush().ok());
    append(64);
    auto chans = s->Channels();
    ASSERT_TRUE(chans.ok());
    ASSERT_EQ(chans->size(), 4u);
    struct Ask {
      std::string key;
      int64_t from_ns, to_ns, step_ns;
      Tier tier;
    };
    std::vector<Ask> asks;
    for (const auto& c : {(*chans)[0].key, (*chans)[1].key}) {
      for (int64_t step : {kSec, 3 * kSec, 10 * kSec, 25 * kSec, 3600 * kSec}) {
        for (Tier tier : {Tier::kAuto, Tier::kRaw, Tier::kRollup}) {
          asks.push_back({c, kT0, kT0 + 400 * kSec, step, tier});
          asks.push_back({c, kT0 + 101 * kSec, kT0 + 150 * kSec, step, tier});
        }
      }
    }
    std::vector<std::vector<Bucket>> queued;
    for (const auto& a : asks) {
      auto b = s->DownsampleWithQueued(a.key, a.from_ns, a.to_ns, a.step_ns, a.tier);
      ASSERT_TRUE(b.ok()) << b.status().message();
      queued.push_back(std::move(*b));
    }
    auto st = s->Stats();
    ASSERT_TRUE(st.ok());
    if (!commit_between) {
      EXPECT_EQ(st->frames, 95);
      EXPECT_EQ(st->queued_frames, 64u);
    }
    ASSERT_TRUE(s->Flush().ok());
    for (size_t k = 0; k < asks.size(); ++k) {
      const auto& a = asks[k];
      SCOPED_TRACE(a.key + " step " + std::to_string(a.step_ns) + " tier " +
                   std::to_string(static_cast<int>(a.tier)) + " from " +
                   std::to_string(a.from_ns - kT0));
      auto b = s->Downsample(a.key, a.from_ns, a.to_ns, a.step_ns, a.tier);
      ASSERT_TRUE(b.ok());
      EXPECT_EQ(queued[k], *b);
      if (a.tier != Tier::kRollup) {
        EXPECT_FALSE(b->empty());
      }
    }
  }
}

TEST(RingStore, RangeWithQueuedSeesEachFrameOnceWhileTheWriterCommits) {
  // Reads race the writer's commits (every few milliseconds): each read
  // holds every frame from the first to its newest exactly once, and never
  // fewer than the read before.
  TempDir dir;
  auto o = Fast();
  o.commit_interval_ms = 3;
  auto s = MustOpen(dir.File("race.db"), o);
  ASSERT_TRUE(s);
  s->SetInventory(SmallInventory());
  constexpr int kFrames = 3000;
  constexpr int64_t kMs = 1'000'000;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread appender([&] {
    for (int i = 0; i < kFrames; ++i) {
      while (s->Append(MakeFrame(kT0 + i * kMs, {i, 2, 3, 4})) == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (i % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      // Every 200 frames, a read that starts after them, however slow the
      // reads are on this machine: some always race the appends.
      if (i % 200 == 100) {
        const int seen = reads.load();
        for (int w = 0; w < 30'000 && reads.load() <= seen + 1; ++w) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
    }
    done = true;
  });
  size_t before = 0;
  for (bool last = false; !last; ++reads) {
    last = done.load();
    auto r = s->RangeWithQueued(kT0, kT0 + kFrames * kMs, {}, 0);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_GE(r->frames.size(), before) << "read " << reads;
    for (size_t i = 0; i < r->frames.size(); ++i) {
      ASSERT_EQ(r->frames[i].seq, i + 1) << "read " << reads;
      ASSERT_EQ(r->frames[i].values[0], static_cast<int64_t>(i)) << "read " << reads;
    }
    before = r->frames.size();
  }
  appender.join();
  EXPECT_EQ(before, static_cast<size_t>(kFrames));
  EXPECT_GT(reads.load(), 15);  // at least one whole read in each of 15 pauses
}

TEST(RingStore, WriteFailuresAreReportedOncePerMinuteOfTheInjectedClock) {
  TempDir dir;
  FakeClock clock(FakeClock::Mode::kPaced);
  auto o = Fast();
  o.clock = &clock;
  OrinStore s(dir.File("full.db"), o, 11);
  ASSERT_TRUE(s);
  s.Write(100);
  ASSERT_TRUE(s->Flush().ok());
  ASSERT_TRUE(s.FillDisk());
  auto fail = [&] {
    s.Write(100);
    return !s->Flush().ok();
  };
  for (int round = 0; round < 3; ++round) EXPECT_TRUE(fail());
  ASSERT_EQ(s.Events().size(), 1u);
  EXPECT_EQ(s.Events()[0].kind, StoreEvent::Kind::kWriteFailed);
  clock.Advance(59 * kSec);
  EXPECT_TRUE(fail());
  EXPECT_EQ(s.Events().size(), 1u);  // 59 s on the store's clock: still quiet
  clock.Advance(kSec);
  EXPECT_TRUE(fail());
  auto events = s.Events();
  ASSERT_EQ(events.size(), 2u);  // a minute on the store's clock since the first report
  EXPECT_EQ(events[1].kind, StoreEvent::Kind::kWriteFailed);
  EXPECT_NE(events[1].message.find(" more since the last report)"), std::string::npos)
      << events[1].message;
}

// ---------------------------------------------------------------- concurrency

TEST(RingStore, ReadersRunAlongsideTheWriter) {
  TempDir dir;
  auto s = MustOpen(dir.File("conc.db"));
  ASSERT_TRUE(s);
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  std::mt19937_64 rng(11);
  s->Append(MakeFrame(kT0 - kSec, BigValues(inv, 0, rng)));
  ASSERT_TRUE(s->Flush().ok());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done) {
        auto a = s->Range(kT0, kT0 + 10000 * kSec, {"cpu/cpu/load"}, 100);
        auto b = s->Downsample("thermal/tj-thermal/temp", kT0, kT0 + 10000 * kSec, 60 * kSec);
        auto c = s->Stats();
        if (!a.ok() || !b.ok() || !c.ok()) {
          if (errors++ == 0) {
            ADD_FAILURE() << (!a.ok()   ? a.status().message()
                              : !b.ok() ? b.status().message()
                                        : c.status().message());
          }
        }
        ++reads;
      }
    });
  }
  for (int i = 0; i < 3000; ++i) {
    s->Append(MakeFrame(kT0 + i * kSec, BigValues(inv, static_cast<uint64_t>(i), rng)));
  }
  ASSERT_TRUE(s->Flush().ok());
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(errors, 0);
  EXPECT_GT(reads, 0);
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 3001);
}

// ---------------------------------------------------------------- kill -9

TEST(RingStore, SurvivesKillDashNineDuringHeavyWrites) {
  TempDir dir;
  const auto path = dir.File("kill.db");
  Inventory inv = edgemon::testing::OrinLikeInventory();
  std::mt19937 rng(2024);
  uint64_t prev_max = 0;
  int64_t t_next = kT0;
  for (int round = 0; round < 20; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const int64_t t_start = t_next;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto o = Fast();
      o.batch_frames = 32;
      o.commit_interval_ms = 2;
      o.max_bytes = 4 << 20;  // the ring trims while it is killed, too
      auto r = RingStore::Open(path, o);
      if (!r.ok()) _exit(2);
      auto& s = *r.value();
      s.SetInventory(inv);
      std::mt19937_64 vr(static_cast<uint64_t>(round));
      for (uint64_t i = 0;; ++i) {
        uint64_t seq = s.Append(
            MakeFrame(t_start + static_cast<int64_t>(i) * (kSec / 100), BigValues(inv, i, vr)));
        if (i % 50 == 49) {
          if (!s.Flush().ok()) _exit(3);
          // Acknowledge: every frame up to `seq` is committed.
          if (write(fds[1], &seq, sizeof seq) != sizeof seq) _exit(4);
        }
      }
    }
    close(fds[1]);
    // Let it write, then kill it at a random moment.
    uint64_t acked = 0;
    if (round % 4 != 3) {  // some rounds: wait for a first commit; others: kill at once-ish
      ASSERT_EQ(read(fds[0], &acked, sizeof acked), static_cast<ssize_t>(sizeof acked));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 60));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited by itself with " << WEXITSTATUS(status);
    uint64_t v;
    while (read(fds[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) acked = v;
    close(fds[0]);

    auto s = MustOpen(path);
    ASSERT_TRUE(s) << "round " << round;
    ASSERT_TRUE(s->IntegrityCheck().ok()) << "round " << round;
    auto st = s->Stats();
    ASSERT_TRUE(st.ok());
    uint64_t last = st->last_seq.value_or(0);
    EXPECT_GE(last, acked) << "round " << round << ": an acknowledged commit was lost";
    EXPECT_GE(last, prev_max) << "round " << round;
    EXPECT_EQ(s->next_seq(), last + 1) << "round " << round;
    prev_max = last;
    t_next = st->newest_ns.value_or(t_next) + kSec;
  }
  EXPECT_GT(prev_max, 0u);
}

// (I16) A destination's cursor is committed when SetPushCursor returns,
// survives a restart, and a store of schema 5 gets the table on upgrade
// with its frames untouched.
TEST(RingStore, PushCursorsPersistAndUpgradeFromSchemaFive) {
  TempDir dir;
  const auto path = dir.File("cursor.db");
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    s->SetInventory(OneCpu());
    for (int i = 0; i < 10; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i}));
    ASSERT_TRUE(s->Flush().ok());
  }
  {  // Back to schema 5, as written before push cursors.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(edgemon::testing::UndoSchema14(db), SQLITE_OK) << sqlite3_errmsg(db);
    ASSERT_EQ(sqlite3_exec(db,
                           (std::string(edgemon::testing::kUndoSchema11) +
                            edgemon::testing::kUndoSchema10 + edgemon::testing::kUndoSchema9 +
                            edgemon::testing::kUndoSchema8 + edgemon::testing::kUndoSchema7 +
                            "DROP TABLE push_cursors; PRAGMA user_version=5")
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    auto none = s->GetPushCursor("remote-write http://127.0.0.1:9090/api/v1/write");
    ASSERT_TRUE(none.ok()) << none.status().message();
    EXPECT_FALSE(none->has_value());
    auto after = s->FramesAfter(3, 4);
    ASSERT_TRUE(after.ok());
    ASSERT_EQ(after->frames.size(), 4u);
    EXPECT_EQ(after->frames.front().seq, 4u);
    EXPECT_EQ(after->frames.back().seq, 7u);
    EXPECT_EQ(after->frames.front().realtime_ns, kT0 + 3 * kSec);
    EXPECT_EQ(after->frames.front().values[0], 3);
    PushCursor c{7, kT0 + 6 * kSec, kT0 + 9 * kSec, 12};
    ASSERT_TRUE(s->SetPushCursor("remote-write http://127.0.0.1:9090/api/v1/write", c).ok());
    ASSERT_TRUE(s->SetPushCursor("otlp http://collector:4318/v1/metrics", {1, kT0}).ok());
    EXPECT_FALSE(s->SetPushCursor("", c).ok());
  }
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  auto got = s->GetPushCursor("remote-write http://127.0.0.1:9090/api/v1/write");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, (PushCursor{7, kT0 + 6 * kSec, kT0 + 9 * kSec, 12}));
  auto other = s->GetPushCursor("otlp http://collector:4318/v1/metrics");
  ASSERT_TRUE(other.ok() && other->has_value());
  EXPECT_EQ((*other)->seq, 1u);
  EXPECT_EQ((*other)->window_end_ns, std::numeric_limits<int64_t>::min());
  auto st = s->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames, 10);
  EXPECT_TRUE(s->IntegrityCheck().ok());
}

TEST(RingStore, ClosedWindowsAfterFollowEndThenId) {
  TempDir dir;
  auto s = MustOpen(dir.File("w.db"));
  ASSERT_TRUE(s);
  auto a = s->AddWindow("a", kT0, kT0 + 5 * kSec);
  auto b = s->AddWindow("b", kT0, kT0 + 3 * kSec);
  auto open = s->BeginWindow("open", kT0);
  auto c = s->AddWindow("c", kT0 + kSec, kT0 + 5 * kSec);
  ASSERT_TRUE(a.ok() && b.ok() && open.ok() && c.ok());
  auto all = s->ClosedWindowsAfter(std::numeric_limits<int64_t>::min(), 0, 0);
  ASSERT_TRUE(all.ok());
  std::vector<std::string> labels;
  for (const auto& w : *all) labels.push_back(w.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"b", "a", "c"}));
  auto next = s->ClosedWindowsAfter(kT0 + 5 * kSec, *a, 1);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ(next->front().label, "c");
}

// ---- Rail samples kept at a boosted rate (rail_samples.h) ----

RailChunk Rails(int64_t t0, int64_t step, size_t n, std::vector<std::string> keys,
                std::function<Value(size_t, size_t)> value) {
  RailChunk c;
  c.keys = std::make_shared<const std::vector<std::string>>(std::move(keys));
  for (size_t i = 0; i < n; ++i) {
    c.t_ns.push_back(t0 + static_cast<int64_t>(i) * step);
    for (size_t k = 0; k < c.keys->size(); ++k) c.values.push_back(value(i, k));
  }
  return c;
}

TEST(RailChunk, RoundTripKeepsAbsentValuesAbsentAndRefusesDamage) {
  RailChunk c = Rails(kT0, 2'000'000, 100, {"rail/VDD_IN/power", "rail/VDD_GPU/power"},
                      [](size_t i, size_t k) -> Value {
                        if (k == 1 && i % 7 == 0) return std::nullopt;
                        if (i == 3) return 0;  // a real zero stays a zero
                        return static_cast<int64_t>(i * 37) - 1000 + static_cast<int64_t>(k);
                      });
  const std::string blob = EncodeRailChunk(c);
  ASSERT_FALSE(blob.empty());
  EXPECT_LT(blob.size(), 100u * 8);  // compact: a few bytes a value
  RailSamples out;
  ASSERT_TRUE(DecodeRailChunk(blob, kT0, kT0 + 10 * 2'000'000, kT0 + 20 * 2'000'000, 1000, out));
  ASSERT_EQ(out.t_ns.size(), 10u);  // [from, to) only
  EXPECT_EQ(out.t_ns.front(), kT0 + 10 * 2'000'000);
  ASSERT_EQ(out.keys, *c.keys);
  EXPECT_EQ(out.values[0][0], Value(10 * 37 - 1000));
  EXPECT_EQ(out.values[1][4], std::nullopt);  // sample 14
  EXPECT_EQ(out.values[1][5], Value(15 * 37 - 999));
  RailSamples all;
  ASSERT_TRUE(DecodeRailChunk(blob, kT0, kT0, kT0 + kSec, 1000, all));
  EXPECT_EQ(all.values[0][3], Value(0));
  EXPECT_EQ(all.values[1][0], std::nullopt);
  // A limit cuts and says so.
  RailSamples few;
  ASSERT_TRUE(DecodeRailChunk(blob, kT0, kT0, kT0 + kSec, 30, few));
  EXPECT_EQ(few.t_ns.size(), 30u);
  EXPECT_TRUE(few.truncated);
  // Every truncation of the blob, and a trailing byte, is refused whole.
  for (size_t n = 0; n < blob.size(); ++n) {
    RailSamples bad;
    EXPECT_FALSE(DecodeRailChunk(blob.substr(0, n), kT0, kT0, kT0 + kSec, 1000, bad)) << n;
    EXPECT_TRUE(bad.t_ns.empty() && bad.keys.empty()) << n;
  }
  RailSamples extra;
  EXPECT_FALSE(DecodeRailChunk(blob + '\x01', kT0, kT0, kT0 + kSec, 1000, extra));
  // Values that do not match the keys are not encoded.
  c.values.pop_back();
  EXPECT_TRUE(EncodeRailChunk(c).empty());
}

// Chunks are written through the writer, read back by range (across chunks,
// with a rail that appears later), kept across a restart, and go with the
// frames of their time and with the table's byte cap.
TEST(RingStore, RailSamplesStoredReadByRangeAndBounded) {
  TempDir dir;
  const auto path = dir.File("rails.db");
  RingStoreOptions o = Fast();
  o.max_bytes = 8 << 20;  // the rail table's cap: 1 MiB
  o.raw_retention_ns = 60 * kSec;
  {
    auto s = MustOpen(path, o);
    ASSERT_TRUE(s);
    s->SetInventory(OneCpu());
    for (int i = 0; i < 3; ++i) s->Append(MakeFrame(kT0 + i * kSec, {i}));
    s->AppendRailChunk(Rails(kT0, 2'000'000, 500, {"rail/VDD_IN/power"},
                             [](size_t i, size_t) { return Value(5000 + int64_t(i)); }));
    s->AppendRailChunk(
        Rails(kT0 + kSec, 2'000'000, 500, {"rail/VDD_IN/power", "rail/VDD_GPU/power"},
              [](size_t i, size_t k) { return Value(int64_t(k) * 100 + int64_t(i)); }));
    ASSERT_TRUE(s->Flush().ok());
  }
  auto s = MustOpen(path, o);
  ASSERT_TRUE(s);
  auto got = s->RailSamplesBetween(kT0 + kSec - 10'000'000, kT0 + kSec + 10'000'000, 0);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->t_ns.size(), 10u);
  ASSERT_EQ(got->keys, (std::vector<std::string>{"rail/VDD_IN/power", "rail/VDD_GPU/power"}));
  EXPECT_EQ(got->values[0][0], Value(5000 + 495));
  EXPECT_EQ(got->values[1][0], std::nullopt);  // not captured then: absent, not 0
  EXPECT_EQ(got->values[0][5], Value(0));
  EXPECT_EQ(got->values[1][5], Value(100));
  auto cut = s->RailSamplesBetween(kT0, kT0 + 2 * kSec, 700);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->t_ns.size(), 700u);
  EXPECT_TRUE(cut->truncated);
  // Frames of a minute later: the chunks ended before the oldest frame kept.
  for (int i = 0; i < 3; ++i) s->Append(MakeFrame(kT0 + (200 + i) * kSec, {i}));
  ASSERT_TRUE(s->Flush().ok());
  // Random values (about 9 bytes each) past the 1 MiB cap: the oldest go.
  std::mt19937_64 rng(7);
  for (int c = 0; c < 12; ++c) {
    s->AppendRailChunk(Rails(kT0 + (200 + c) * kSec, 200'000, kMaxChunkSamples,
                             {"rail/a/power", "rail/b/power", "rail/c/power"},
                             [&](size_t, size_t) { return Value(int64_t(rng() >> 2)); }));
    ASSERT_TRUE(s->Flush().ok());
  }
  auto old = s->RailSamplesBetween(kT0, kT0 + 3 * kSec, 0);
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->t_ns.empty()) << "chunks older than every frame were kept";
  auto first = s->RailSamplesBetween(kT0 + 200 * kSec, kT0 + 201 * kSec, 0);
  auto last = s->RailSamplesBetween(kT0 + 211 * kSec, kT0 + 212 * kSec, 0);
  ASSERT_TRUE(first.ok() && last.ok());
  EXPECT_TRUE(first->t_ns.empty()) << "the oldest chunk outlived the byte cap";
  EXPECT_EQ(last->t_ns.size(), kMaxChunkSamples);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT sum(length(data)) FROM rail_chunks", -1, &q, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_LE(sqlite3_column_int64(q, 0), RailBytesCap(o.max_bytes));
  EXPECT_GT(sqlite3_column_int64(q, 0), RailBytesCap(o.max_bytes) / 2);
  sqlite3_finalize(q);
  sqlite3_close(db);
  EXPECT_TRUE(s->IntegrityCheck().ok());
}

}  // namespace
}  // namespace edgemon::store
