// The flight recorder's ring on a real mapped file: what a crashed run left
// is recovered whole and in order, damaged or foreign records never are.
#include "daemon/flight_recorder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/store/frame_codec.h"
#include "tests/support/inventory.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

Inventory TwoChannels(const char* second = "VDD_SOC") {
  Inventory inv;
  for (const char* name : {"VDD_IN", second})
    testing::AddChannel(inv, Kind::kRail, name, Field::kPower);
  return inv;
}

Frame MakeFrame(uint64_t seq) {
  Frame f;
  f.seq = seq;
  f.boottime_ns = static_cast<int64_t>(seq) * 100'000'000;
  f.realtime_ns = 1'700'000'000'000'000'000 + f.boottime_ns;
  f.values = {static_cast<int64_t>(seq * 10), std::nullopt};
  if (seq % 2 == 0) f.values[1] = -static_cast<int64_t>(seq);
  return f;
}

// `frames` are MakeFrame(first), MakeFrame(first + 1), ... in order: seq,
// both times and both values (an absent one stays absent).
void ExpectMadeFramesFrom(const std::vector<Frame>& frames, uint64_t first) {
  for (size_t i = 0; i < frames.size(); ++i) {
    Frame want = MakeFrame(first + i);
    ASSERT_EQ(frames[i].seq, want.seq) << "frame " << i;
    EXPECT_EQ(frames[i].boottime_ns, want.boottime_ns);
    EXPECT_EQ(frames[i].realtime_ns, want.realtime_ns);
    EXPECT_EQ(frames[i].Get(0), want.Get(0));
    EXPECT_EQ(frames[i].Get(1), want.Get(1));
  }
}

TEST(FlightRecorder, ACrashedRunsFramesComeBackInOrderFromTheGivenSeq) {
  testing::TempTree t;
  const std::string path = t.root() + "/api.sock.flight";
  Inventory inv = TwoChannels();
  {
    auto opened = FlightRecorder::Open(path, 64 << 10);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto fr = std::move(opened).value();
    fr->Reset();
    for (uint64_t seq = 1; seq <= 50; ++seq) fr->OnFrame(inv, 1, MakeFrame(seq));
  }  // the process "dies": the mapping is gone, the file stays
  auto opened = FlightRecorder::Open(path, 64 << 10);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto fr = std::move(opened).value();
  size_t other = 9;
  auto frames = fr->Recover(InventoryHash(inv), 41, &other);
  EXPECT_EQ(other, 0u);
  ASSERT_EQ(frames.size(), 10u);
  ExpectMadeFramesFrom(frames, 41);
  // Another inventory's frames are never replayed into this one's channels.
  frames = fr->Recover(InventoryHash(TwoChannels("VDD_CPU")), 0, &other);
  EXPECT_TRUE(frames.empty());
  EXPECT_EQ(other, 50u);
  fr->Reset();
  EXPECT_TRUE(fr->Recover(InventoryHash(inv), 0, nullptr).empty());
}

// crc32c bit by bit (reflected 0x82f63b78), as the format defines it.
uint32_t ReferenceCrc32c(const uint8_t* p, size_t n) {
  uint32_t crc = ~0u;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
  }
  return ~crc;
}

uint32_t U32At(const std::string& bytes, size_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void WriteAt(const std::string& path, size_t at, const void* p, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
}

TEST(FlightRecorder, RecordsCarryACrc32cAndFirstFormatRecordsStillReplay) {
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  ASSERT_EQ(ReferenceCrc32c(check, sizeof check), 0xe3069283u);  // the standard check value
  testing::TempTree t;
  const std::string path = t.root() + "/ring";
  Inventory inv = TwoChannels();
  constexpr size_t kHeader = 40;
  size_t len = 0;
  {
    auto opened = FlightRecorder::Open(path, 64 << 10);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto fr = std::move(opened).value();
    fr->Reset();
    fr->OnFrame(inv, 1, MakeFrame(7));
    fr->OnFrame(inv, 1, MakeFrame(8));
  }
  std::string ring = ReadAll(path);
  ASSERT_GE(ring.size(), size_t{64 << 10});
  EXPECT_EQ(ring.substr(0, 4), "EMF2");
  len = U32At(ring, 4);
  ASSERT_LT(kHeader + len + 4, ring.size());
  const auto* bytes = reinterpret_cast<const uint8_t*>(ring.data());
  EXPECT_EQ(U32At(ring, kHeader + len), ReferenceCrc32c(bytes + 4, kHeader - 4 + len));

  // The first record as an older daemon wrote it ("EMFR", zlib's crc32):
  // still replayed. The same magic over a crc32c is damage: skipped.
  const uint32_t zlib_crc =
      static_cast<uint32_t>(::crc32(0L, bytes + 4, static_cast<uInt>(kHeader - 4 + len)));
  WriteAt(path, 0, "EMFR", 4);
  WriteAt(path, kHeader + len, &zlib_crc, 4);
  auto recovered = [&] {
    auto opened = FlightRecorder::Open(path, 64 << 10);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? std::move(opened).value()->Recover(InventoryHash(inv), 0, nullptr)
                       : std::vector<Frame>{};
  };
  auto frames = recovered();
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].seq, 7u);
  EXPECT_EQ(frames[0].Get(0), MakeFrame(7).Get(0));
  EXPECT_EQ(frames[1].seq, 8u);
  EXPECT_EQ(frames[1].Get(1), MakeFrame(8).Get(1));
  const uint32_t crc32c = ReferenceCrc32c(bytes + 4, kHeader - 4 + len);
  WriteAt(path, kHeader + len, &crc32c, 4);
  frames = recovered();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].seq, 8u);
}

TEST(FlightRecorder, TheRingWrapsAndDamagedRecordsAreSkipped) {
  testing::TempTree t;
  const std::string path = t.root() + "/ring";
  Inventory inv = TwoChannels();
  auto opened = FlightRecorder::Open(path, 64 << 10);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto fr = std::move(opened).value();
  fr->Reset();
  for (uint64_t seq = 1; seq <= 5000; ++seq) fr->OnFrame(inv, 1, MakeFrame(seq));
  auto frames = fr->Recover(InventoryHash(inv), 0, nullptr);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().seq, 5000u);  // the newest survive the wrap
  EXPECT_LT(frames.size(), 5000u);      // the oldest were overwritten
  for (size_t i = 1; i < frames.size(); ++i) EXPECT_EQ(frames[i].seq, frames[i - 1].seq + 1);
  // Flip bytes in the middle of the file: the damaged records are dropped,
  // every other one still reads right.
  fr.reset();
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20000);
    std::string junk(300, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  opened = FlightRecorder::Open(path, 64 << 10);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  fr = std::move(opened).value();
  auto after = fr->Recover(InventoryHash(inv), 0, nullptr);
  EXPECT_LT(after.size(), frames.size());
  EXPECT_GT(after.size(), frames.size() - 20);
  for (const auto& f : after) {
    Frame want = MakeFrame(f.seq);
    EXPECT_EQ(f.Get(0), want.Get(0)) << f.seq;
    EXPECT_EQ(f.Get(1), want.Get(1)) << f.seq;
  }
}

TEST(FlightRecorder, APathThatCannotHoldARingIsAnErrorWithItsName) {
  testing::TempTree t;
  const std::string missing = t.root() + "/no/such/dir/ring";
  auto opened = FlightRecorder::Open(missing, 64 << 10);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(opened.status().message(),
            "cannot open flight recorder " + missing + ": No such file or directory");

  const std::string fifo = t.root() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  opened = FlightRecorder::Open(fifo, 64 << 10);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(opened.status().message(), "flight recorder " + fifo + " is not a regular file");
}

// The ring as the daemon has it: a file on a tmpfs (the runtime directory),
// where a written page is memory until it is punched out.
struct ShmRing {
  std::string path = "/dev/shm/edgemon-flight-test-" + std::to_string(::getpid());
  ShmRing() { ::unlink(path.c_str()); }
  ~ShmRing() { ::unlink(path.c_str()); }
};

// The type of the file system holding `path`, as /proc/self/mountinfo names
// it (the mount whose point is the longest prefix of the path).
std::string FileSystemTypeOf(const std::string& path) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return "";
  const std::string file = real;
  std::ifstream in("/proc/self/mountinfo");
  std::string line, type;
  size_t best = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, field;
    fields >> id >> parent >> dev >> root >> point;
    while (fields >> field && field != "-") {
    }
    std::string fstype;
    fields >> fstype;
    const bool under = point == "/" || file == point || file.rfind(point + "/", 0) == 0;
    if (under && point.size() >= best) {
      best = point.size();
      type = fstype;
    }
  }
  return type;
}

TEST(FlightRecorder, KnowsWhetherItsRingIsInMemory) {
  ShmRing shm;
  auto opened = FlightRecorder::Open(shm.path, 64 << 10);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ASSERT_EQ(FileSystemTypeOf(shm.path), "tmpfs");
  EXPECT_TRUE(opened.value()->InMemory());

  // The test's own directory: on a disk file system on CI and on most
  // machines, on tmpfs where TMPDIR points there.
  testing::TempTree t;
  const std::string disk = t.root() + "/ring";
  opened = FlightRecorder::Open(disk, 64 << 10);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const std::string type = FileSystemTypeOf(disk);
  ASSERT_FALSE(type.empty());
  EXPECT_EQ(opened.value()->InMemory(), type == "tmpfs" || type == "ramfs") << type;
}

TEST(FlightRecorder, ResetGivesTheRingsMemoryBack) {
  ShmRing ring;
  auto opened = FlightRecorder::Open(ring.path, 1 << 20);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto fr = std::move(opened).value();
  Inventory inv = TwoChannels();
  for (uint64_t seq = 1; seq <= 20000; ++seq) fr->OnFrame(inv, 1, MakeFrame(seq));
  EXPECT_GT(fr->ResidentBytes(), 512u << 10);  // nothing follows the store's commits
  fr->Reset();
  EXPECT_EQ(fr->ResidentBytes(), 0u);
  EXPECT_TRUE(fr->Recover(InventoryHash(inv), 0, nullptr).empty());
}

TEST(FlightRecorder, CommittedRecordsHoldNoMemoryAndUncommittedOnesSurvive) {
  ShmRing ring;
  Inventory inv = TwoChannels();
  uint64_t committed = 1;  // one past the newest committed frame
  size_t most = 0;
  {
    auto opened = FlightRecorder::Open(ring.path, 1 << 20);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto fr = std::move(opened).value();
    fr->Reset();
    fr->FollowCommits([&] { return committed; });
    // About three laps of the ring; the store commits in batches of 100.
    for (uint64_t seq = 1; seq <= 50000; ++seq) {
      fr->OnFrame(inv, 1, MakeFrame(seq));
      if (seq % 100 == 0) committed = seq - 99;  // the batch before this one
      most = std::max(most, fr->ResidentBytes());
    }
  }  // the process "dies" with frames 49901..50000 not committed
  EXPECT_LE(most, 160u << 10) << "a 1 MiB ring kept " << most << " bytes";
  auto opened = FlightRecorder::Open(ring.path, 1 << 20);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto frames = opened.value()->Recover(InventoryHash(inv), committed, nullptr);
  ASSERT_EQ(frames.size(), 100u);
  ExpectMadeFramesFrom(frames, committed);
}

TEST(FlightRecorder, AStoreThatStopsCommittingKeepsTheWholeRing) {
  ShmRing ring;
  Inventory inv = TwoChannels();
  uint64_t committed = 1;
  auto opened = FlightRecorder::Open(ring.path, 256 << 10);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto fr = std::move(opened).value();
  fr->Reset();
  fr->FollowCommits([&] { return committed; });
  for (uint64_t seq = 1; seq <= 10000; ++seq) {
    fr->OnFrame(inv, 1, MakeFrame(seq));
    if (seq % 100 == 0 && seq <= 3000) committed = seq + 1;
  }
  // Commits stopped at 3000; the ring wrapped since: every record it still
  // holds is readable, the newest included, with no hole among them.
  auto frames = fr->Recover(InventoryHash(inv), 0, nullptr);
  ASSERT_GT(frames.size(), 1000u);
  EXPECT_EQ(frames.back().seq, 10000u);
  for (size_t i = 1; i < frames.size(); ++i) EXPECT_EQ(frames[i].seq, frames[i - 1].seq + 1);
  // Commits resume: the memory goes back.
  for (uint64_t seq = 10001; seq <= 20000; ++seq) {
    fr->OnFrame(inv, 1, MakeFrame(seq));
    committed = seq + 1;
  }
  EXPECT_LE(fr->ResidentBytes(), 160u << 10);
}

// The pages of the file at `path` (`bytes` long) that hold memory now, as
// mincore sees them through a read-only view: a punched page holds none.
class RingPages {
 public:
  RingPages(const std::string& path, size_t bytes) : bytes_(bytes) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ >= 0) view_ = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd_, 0);
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    present_.resize((bytes + page - 1) / page);
    seen_.assign(present_.size(), 0);
  }
  ~RingPages() {
    if (view_ != MAP_FAILED) ::munmap(view_, bytes_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return view_ != MAP_FAILED; }
  // Marks the pages that hold memory now.
  void Look() {
    if (::mincore(view_, bytes_, present_.data()) != 0) return;
    for (size_t i = 0; i < present_.size(); ++i) seen_[i] |= present_[i] & 1;
  }
  // How many pages held memory at any Look.
  size_t Seen() const { return static_cast<size_t>(std::count(seen_.begin(), seen_.end(), 1)); }

 private:
  size_t bytes_;
  int fd_ = -1;
  void* view_ = MAP_FAILED;
  std::vector<unsigned char> present_, seen_;
};

TEST(FlightRecorder, AStoreThatKeepsUpKeepsTheRingOnTheSamePages) {
  // A punched page costs a page fault and a zeroed page when the head comes
  // back to it: with the store committing, the head goes round the same few
  // pages instead of the whole ring, and no other page ever holds memory.
  ShmRing ring;
  Inventory inv = TwoChannels();
  uint64_t committed = 1;
  auto opened = FlightRecorder::Open(ring.path, 1 << 20);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto fr = std::move(opened).value();
  fr->Reset();
  fr->FollowCommits([&] { return committed; });
  RingPages pages(ring.path, 1 << 20);
  ASSERT_TRUE(pages.ok());
  size_t most = 0;
  for (uint64_t seq = 1; seq <= 25000; ++seq) {
    fr->OnFrame(inv, 1, MakeFrame(seq));
    if (seq % 100 == 0) committed = seq - 99;  // the batch before this one
    if (seq > 5000) {
      most = std::max(most, fr->ResidentBytes());
      if (seq % 50 == 0) pages.Look();
    }
  }
  // 20000 records of about 60 bytes went round the 1 MiB ring more than
  // once: the build that punched committed pages had all 256 of them hold
  // memory in turn.
  EXPECT_LE(pages.Seen() * static_cast<size_t>(::sysconf(_SC_PAGESIZE)), 160u << 10)
      << pages.Seen() << " pages";
  EXPECT_LE(most, 160u << 10);
  auto kept = fr->Recover(InventoryHash(inv), committed, nullptr);
  ASSERT_EQ(kept.size(), 25000 - committed + 1);
  EXPECT_EQ(kept.front().seq, committed);
  EXPECT_EQ(kept.back().seq, 25000u);
}

TEST(FlightRecorder, AStoreLateByMoreThanTheWindowLosesNoFrame) {
  ShmRing ring;
  Inventory inv = TwoChannels();
  uint64_t committed = 1;
  {
    auto opened = FlightRecorder::Open(ring.path, 1 << 20);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto fr = std::move(opened).value();
    fr->Reset();
    fr->FollowCommits([&] { return committed; });
    for (uint64_t seq = 1; seq <= 9000; ++seq) {
      fr->OnFrame(inv, 1, MakeFrame(seq));
      // Batches of 100 up to 5000, then nothing: 4000 frames (about 240
      // KiB) wait, several times the pages the head went round.
      if (seq % 100 == 0 && seq <= 5000) committed = seq - 99;
    }
  }  // the process "dies"
  auto opened = FlightRecorder::Open(ring.path, 1 << 20);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto frames = opened.value()->Recover(InventoryHash(inv), committed, nullptr);
  ASSERT_EQ(frames.size(), 9000 - committed + 1);
  ExpectMadeFramesFrom(frames, committed);
}

TEST(FlightRecorder, RandomCommitLagsKeepEveryFrameThatFitsAndTheNewestInOrder) {
  // Frames of 1 to 60 channels, a store that commits after random lags and
  // now and then stops for a long while (the head going round a few pages,
  // moving a cycle's records when the store is late, overwriting when the
  // ring is full): at every check the ring holds a run of frames without a
  // hole that ends with the newest, and every frame not committed whenever
  // they fit in half the ring.
  ShmRing ring;
  Inventory inv;
  for (int i = 0; i < 60; ++i)
    testing::AddChannel(inv, Kind::kRail, ("R" + std::to_string(i)).c_str(), Field::kPower);
  constexpr size_t kRing = 1 << 20;
  const size_t most_bytes = 48 + store::MaxEncodedFrameBytes(60);
  std::mt19937_64 rng(20261207);
  auto frame = [&](uint64_t seq) {
    Frame f;
    f.seq = seq;
    f.boottime_ns = static_cast<int64_t>(seq) * 10'000'000;
    f.realtime_ns = 1'700'000'000'000'000'000 + f.boottime_ns;
    f.values.resize(1 + rng() % 60);
    for (size_t i = 0; i < f.values.size(); ++i) {
      if (rng() % 4 != 0) f.values[i] = static_cast<int64_t>(rng() % (uint64_t{1} << (rng() % 40)));
    }
    return f;
  };
  uint64_t committed = 1;
  auto opened = FlightRecorder::Open(ring.path, kRing);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto fr = std::move(opened).value();
  fr->Reset();
  fr->FollowCommits([&] { return committed; });
  uint64_t stall_until = 0;
  int checks = 0;
  const uint64_t kFrames = 120000;
  for (uint64_t seq = 1; seq <= kFrames; ++seq) {
    fr->OnFrame(inv, 1, frame(seq));
    if (seq > stall_until) {
      if (rng() % 5000 == 0) stall_until = seq + rng() % 6000;  // the store stops a while
      // A commit point never goes back.
      if (rng() % 50 == 0)
        committed = std::max(committed, seq + 1 - rng() % std::min<uint64_t>(seq, 300));
    }
    if (rng() % 400 != 0) continue;
    ++checks;
    auto kept = fr->Recover(InventoryHash(inv), committed, nullptr);
    ASSERT_FALSE(kept.empty());
    EXPECT_EQ(kept.back().seq, seq);
    for (size_t i = 1; i < kept.size(); ++i) ASSERT_EQ(kept[i].seq, kept[i - 1].seq + 1) << seq;
    if ((seq - committed + 1) * most_bytes <= kRing / 2) {
      EXPECT_EQ(kept.front().seq, committed) << "at " << seq;
    }
  }
  EXPECT_GT(checks, 100);
  // (Memory is not checked here: Recover reads every page of the ring, and
  // a read of a punched tmpfs page gives it memory again.)
}

TEST(FlightRecorder, RingSizeIsBounded) {
  EXPECT_EQ(FlightRingBytes(1, 1), 64u << 10);
  EXPECT_EQ(FlightRingBytes(100000, 100000), 16u << 20);
  EXPECT_GT(FlightRingBytes(150, 1024), 150u * 1024);
}

}  // namespace
}  // namespace edgemon
