// RingStore::Impl: the store's machinery, declared once for the files that
// implement it (private to daemon/store). The design (files, tables, the
// invariants I1..I17, writer states, threads) is ring_store.h's design note;
// (In) below refers to its invariants.
//
//   ring_store.cc  opening (validation, moving a bad file aside, loading the
//                  writer's state), Close, and the public RingStore facade
//   schema.cc      the schema and its migrations, the connection's set-up,
//                  channel descriptions <-> channels rows
//   writer.cc      the queue and the writer thread: ingesting frames,
//                  wall-clock steps, rollup periods, events, damage
//   commit.cc      one write transaction per batch: rows, retention (I5),
//                  the size cap (I6)
//   reader.cc      read connections and every read: frames, downsampling,
//                  counters, stats
//   rollup_rows.cc the rollup rows' key (I7): chunks, neighbours, the oldest
//   period_values.cc  the periods' clock values packed by hour (I15)
//   frame_bases.cc frames against their bases (I17): the writer's encoding,
//                  FrameReader, dropping bases no frame needs
//   windows.cc     the windows table
//   push_cursors.cc  push destinations' cursors (I16)
//   rail_samples.cc  rail samples kept at a boosted rate (rail_samples.h)
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <sys/stat.h>

#include "daemon/runtime/thread_name.h"
#include "daemon/store/frame_codec.h"
#include "daemon/store/ring_store.h"
#include "daemon/store/sql.h"
#include "edgemon/checked.h"

namespace edgemon::store {
namespace internal {

// (I15) The most distinct values of one channel a period (a block) keeps;
// one with more is not described, and is read as frames. A clock has a few
// dozen frequencies at most and visits few of them in a minute; a channel
// of random values would otherwise cost a row per frame.
inline constexpr size_t kMaxSpanValues = 16;
inline constexpr size_t kMaxBlockValues = 64;

// Bytes a frame row costs beyond its blob: record header, seq, two
// timestamps, and the b-tree's room (a round figure, on the safe side).
inline constexpr int64_t kRowOverheadBytes = 40;
// (I5) A batch whose rows are expected to fill this many pages expires
// frames with it, whatever expire_step.
inline constexpr int64_t kExpireWithBatchPages = 3;

inline std::optional<int64_t> FileSize(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<int64_t>(st.st_size);
}

inline bool IsBadFileCode(int extended_code) {
  int c = extended_code & 0xff;
  return c == SQLITE_NOTADB || c == SQLITE_CORRUPT;
}
// A statement failed because the file is damaged (I13): its content is
// corrupt or no longer a database, or reading it fails (EIO, a file
// shortened under us). Disk full and write errors are not damage: they pass
// (kFailing).
inline bool IsDamageCode(int extended_code) {
  switch (extended_code) {
    case SQLITE_IOERR_READ:
    case SQLITE_IOERR_SHORT_READ:
    case SQLITE_IOERR_CORRUPTFS:
    case SQLITE_IOERR_DATA:
      return true;
    default:
      return IsBadFileCode(extended_code);
  }
}

// Channel descriptions <-> channels rows (schema.cc).
std::string TripsJson(const std::vector<TripPoint>& trips);
std::string AttrsJson(const std::vector<std::pair<std::string, std::string>>& attrs);
StoredChannel ChannelFromRow(const sql::Stmt& s);

// (I17, I18) Decodes frames.data blobs of any format on one connection,
// fetching a version-2 frame's base from frame_bases and a block's frames
// from its head's row (the last base and the last block read are kept:
// consecutive frames share theirs). A blob that does not decode, or whose
// base or block cannot be read, is a bad frame (I14): the calls return
// false.
class FrameReader {
 public:
  explicit FrameReader(sql::Conn& c) : c_(c) {}
  template <typename F>
  bool ForEach(std::string_view blob, F&& f) {
    const FrameValues* base = nullptr;
    return Resolve(blob) && BaseOf(blob, base) && ForEachValue(blob, base, std::forward<F>(f));
  }
  bool Find(std::string_view blob, uint32_t id, std::optional<int64_t>& out) {
    const FrameValues* base = nullptr;
    out.reset();
    return Resolve(blob) && BaseOf(blob, base) && FindValue(blob, base, id, out);
  }
  // A block's blob (version 3 or 4) replaced by its frame's own; any other
  // left as it is. False when the block cannot be read.
  bool Resolve(std::string_view& blob);

 private:
  // `base` stays null for a version-1 blob.
  bool BaseOf(std::string_view blob, const FrameValues*& base);
  sql::Conn& c_;
  std::optional<uint64_t> id_;
  FrameValues values_;
  std::optional<uint64_t> block_;  // the head seq of the block held
  std::string block_raw_;
  std::vector<std::string_view> block_frames_;
};

// (I11) Stored time never goes back in seq order, so the frames of a time
// range are a range of seqs, found by bisecting the seqs with rowid probes
// (about log2 of the seqs held; there is no index on time): the first seq
// whose realtime_ns is >= t (> t with `after`), nullopt when none is.
Result<std::optional<int64_t>> FirstSeqAt(sql::Conn& c, int64_t t, bool after);
// The seqs [first, second) of the frames in [from_ns, to_ns); nullopt when
// none is.
Result<std::optional<std::pair<int64_t, int64_t>>> SeqsBetween(sql::Conn& c, int64_t from_ns,
                                                               int64_t to_ns);

// The time of the oldest frame (where the raw tier starts); nullopt when there
// is no frame.
Result<std::optional<int64_t>> OldestFrameNs(sql::Conn& c);

// (I7) Rollup rows are kept by (chunk, channel, t_ns) with chunk =
// RollupChunk(t_ns), the hour (of the epoch) holding the period's start
// (rollup_rows.cc).
inline constexpr int64_t kRollupChunkNs = 3'600'000'000'000;
// The chunk's start as an unsigned offset base: t_ns - start is in
// [0, kRollupChunkNs) for every t_ns of the chunk, and the arithmetic wraps
// where chunk * kRollupChunkNs leaves int64 (the oldest chunk).
constexpr uint64_t RollupChunkBase(int64_t chunk) {
  return static_cast<uint64_t>(chunk) * static_cast<uint64_t>(kRollupChunkNs);
}
constexpr int64_t RollupChunk(int64_t t_ns) {
  return FloorDiv(t_ns, kRollupChunkNs);
}
// (I7, I15) The period starts of a chunk's packed row (rollup,
// period_values): the row opens with a version byte, a varint unit that
// divides every start's offset from the chunk's start and a varint number
// of periods; each period then opens with its start as a varint step in
// units from the one before (from the chunk's start for the first). One
// object writes or reads one row's starts, in increasing order.
class PackedStarts {
 public:
  // To read a row of `chunk` (ReadHeader, then ReadStart per period).
  explicit PackedStarts(int64_t chunk) : chunk_(chunk), base_(RollupChunkBase(chunk)) {}
  // To write `rows` (each with a t_ns in `chunk`).
  template <typename Rows>
  PackedStarts(int64_t chunk, const Rows& rows) : PackedStarts(chunk) {
    for (const auto& r : rows) unit_ = std::gcd(unit_, static_cast<uint64_t>(r.t_ns) - base_);
    if (unit_ == 0) unit_ = 1;
  }
  // Writes the opening at `p` (at most 21 bytes); returns the end.
  char* PutHeader(char* p, uint8_t version, uint64_t periods) const;
  // Writes the step to `t_ns`; returns the end.
  char* PutStart(char* p, int64_t t_ns);
  // Reads the opening: false unless it has `version`, a unit and from 1 to
  // (bytes left / min_period_bytes) periods.
  bool ReadHeader(const uint8_t*& p, const uint8_t* end, uint8_t version, uint64_t min_period_bytes,
                  uint64_t& periods);
  // Reads the next start: false when its step is 0 after the first, or it
  // falls past the chunk or either end of int64.
  bool ReadStart(const uint8_t*& p, const uint8_t* end, int64_t& t_ns);

 private:
  int64_t chunk_;
  uint64_t base_;
  uint64_t unit_ = 0;
  uint64_t at_ = 0;  // the last start's offset
  bool first_ = true;
};
// (I15) Block rows (span_stats of level 1) are kept by (level, chunk,
// channel, t_ns) with chunk = SpanChunk(1, t_ns), the day (of the epoch)
// holding the block's start, so a block's rows of every channel go into the
// day's few pages; days (level 2) and months (level 3) have chunk 0, so
// they are kept by channel.
inline constexpr int64_t kSpanChunkNs = 86'400'000'000'000;
constexpr int64_t SpanChunk(int level, int64_t t_ns) {
  return level == 1 ? FloorDiv(t_ns, kSpanChunkNs) : 0;
}
// (I15) The meta key of the time before which `level`'s spans (1 to
// kTopSpanLevel) are written.
constexpr const char* SpanThroughKey(int level) {
  return level == 1 ? "blocks_through_ns" : level == 2 ? "days_through_ns" : "months_through_ns";
}
// Calls fn(chunk) for the chunks of `level`'s span_stats rows that may hold
// one starting in [from_ns, to_ns), in order: each of up to four, else each
// that holds a row (a probe finds it, rollup_rows.cc); fn's error ends the
// walk.
Status ForEachSpanChunk(sql::Conn& c, int level, int64_t from_ns, int64_t to_ns,
                        const std::function<Status(int64_t)>& fn);
// The chunks of the oldest and the newest rows.
struct ChunkRange {
  int64_t first = 0;
  int64_t last = 0;
};
// Of channel `id` (from rollup_channels: they may reach past its rows, never
// fall short of them), or of the whole table when `id` is 0; nullopt when
// there is none.
Result<std::optional<ChunkRange>> RollupChunks(sql::Conn& c, uint32_t id);
struct RollupRow {
  int64_t t_ns = 0;
  int64_t count = 0;
  int64_t min = 0;
  int64_t max = 0;
  int64_t sum = 0;
};
// (I7) A chunk's periods of one channel are one row of rollup: (chunk,
// channel, periods, first_ns, last_ns, data), `data` the periods packed in
// time order (rollup_rows.cc), a few bytes a period where a row each took
// about 30. PackRollup takes rows of `chunk` in strictly increasing t_ns;
// UnpackRollup appends them to `out`, false when `data` is not such a
// packing (a damaged file: the row reads as missing).
std::string PackRollup(int64_t chunk, const std::vector<RollupRow>& rows);
bool UnpackRollup(int64_t chunk, std::string_view data, std::vector<RollupRow>& out);
// Writes, or replaces, the row of `chunk` and `channel` in `table` (rollup,
// or rollup_packed while schema 14 migrates): `periods` (not empty, of the
// chunk, in time order) packed, their number, first and last.
Status PutRollupRow(sql::Conn& c, const char* table, int64_t chunk, int64_t channel,
                    const std::vector<RollupRow>& periods);
// The nearest chunk after (up) or before k holding a row of any channel.
Result<std::optional<int64_t>> NextChunk(sql::Conn& c, int64_t k, bool up);
// Calls fn(channel, row) for the rows of [from_ns, to_ns), a chunk at a
// time (one probe per chunk of `rows`, RollupChunks(c, id)), in time order within each
// channel: of channel `id` alone, or of every channel when `id` is 0 (each
// chunk read whole: cheaper than a probe per channel when most are wanted).
Status ForEachRollupRow(sql::Conn& c, const std::optional<ChunkRange>& rows, uint32_t id,
                        int64_t from_ns, int64_t to_ns,
                        const std::function<void(uint32_t, const RollupRow&)>& fn);
// Channel `id`'s nearest row before, at or before, at or after, or after t.
enum class RollupSide { kBefore, kAtOrBefore, kAtOrAfter, kAfter };
Result<std::optional<RollupRow>> RollupNeighbour(sql::Conn& c, uint32_t id, int64_t t,
                                                 RollupSide side);
// The start of the oldest period with a rollup row, of any channel.
Result<std::optional<int64_t>> OldestRollupNs(sql::Conn& c);

// (I15) A clock channel's value held by `count` frames of the period
// starting at t_ns (level 0).
struct PeriodValue {
  int64_t t_ns = 0;
  uint32_t channel = 0;
  int64_t value = 0;
  uint64_t count = 0;
};
// (I15) A chunk's periods' clock values are one row of period_values:
// (chunk, data), `data` every clock's values packed in time order
// (period_values.cc). PackPeriodValues takes values of `chunk` ordered by
// (t_ns, channel, value), each triple once, channel >= 1, count in
// [1, INT64_MAX]; UnpackPeriodValues appends them to `out` in that order,
// false when `data` is not such a packing (a damaged file: the row reads
// as missing).
std::string PackPeriodValues(int64_t chunk, const std::vector<PeriodValue>& values);
bool UnpackPeriodValues(int64_t chunk, std::string_view data, std::vector<PeriodValue>& out);
// Writes, or replaces, the row of `chunk` (deletes it when `values` is
// empty).
Status PutPeriodValues(sql::Conn& c, int64_t chunk, const std::vector<PeriodValue>& values);
// Calls fn for every level-0 value of a period starting in [from_ns,
// to_ns): the rows span_values kept before schema 15 (a store from an
// earlier edition, until retention takes them), then the packed rows. A
// period written on both sides of the upgrade (a restart in it) has its
// values in both: callers add counts.
Status ForEachPeriodValue(sql::Conn& c, int64_t from_ns, int64_t to_ns,
                          const std::function<void(const PeriodValue&)>& fn);

// Running min/max/sum/count of one channel over one period.
struct Agg {
  int64_t count = 0;
  int64_t min = 0;
  int64_t max = 0;
  int64_t sum = 0;

  void Add(int64_t v) {
    if (count == 0) {
      min = max = v;
    } else {
      min = std::min(min, v);
      max = std::max(max, v);
    }
    sum = AddSaturating(sum, v);
    ++count;
  }
  // Folds in another aggregate of the same period (written twice).
  void Merge(const Agg& o) {
    if (o.count == 0) return;
    if (count == 0) {
      *this = o;
      return;
    }
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    sum = AddSaturating(sum, o.sum);
    count = AddSaturating(count, o.count);
  }
};

// (I15) The counts of a spans row, read from `s` starting at column `col` in
// the table's order (frames, first_seq, first_ns, last_seq, last_ns, holes,
// max_step_ns) into any record with those members (SpanAgg, Span).
template <typename T>
void ReadSpanCounts(const sql::Stmt& s, int col, T& out) {
  out.frames = static_cast<uint64_t>(s.Int(col));
  out.first_seq = static_cast<uint64_t>(s.Int(col + 1));
  out.first_ns = s.Int(col + 2);
  out.last_seq = static_cast<uint64_t>(s.Int(col + 3));
  out.last_ns = s.Int(col + 4);
  out.holes = static_cast<uint64_t>(s.Int(col + 5));
  out.max_step_ns = s.Int(col + 6);
}

// (I15) The frames of one span as they are folded: count, first and last,
// the seqs missing between them, the largest step between frames with
// consecutive seqs, frames without their values.
struct SpanAgg {
  uint64_t frames = 0;
  uint64_t first_seq = 0;
  int64_t first_ns = 0;
  uint64_t last_seq = 0;
  int64_t last_ns = 0;
  uint64_t holes = 0;
  int64_t max_step_ns = 0;
  uint64_t bad = 0;

  // Appends `later` (frames after every frame of this one).
  void Merge(const SpanAgg& later) {
    if (later.frames == 0) {
      bad += later.bad;
      return;
    }
    if (frames == 0) {
      const uint64_t b = bad;
      *this = later;
      bad += b;
      return;
    }
    if (later.first_seq > last_seq + 1) {
      holes += later.first_seq - last_seq - 1;
    } else {
      max_step_ns = std::max(max_step_ns, SubSaturating(later.first_ns, last_ns));
    }
    max_step_ns = std::max(max_step_ns, later.max_step_ns);
    holes += later.holes;
    frames += later.frames;
    bad += later.bad;
    last_seq = later.last_seq;
    last_ns = later.last_ns;
  }
  void Add(uint64_t seq, int64_t realtime_ns, bool without_values) {
    SpanAgg one;
    one.frames = 1;
    one.first_seq = one.last_seq = seq;
    one.first_ns = one.last_ns = realtime_ns;
    one.bad = without_values ? 1 : 0;
    Merge(one);
  }
};

// Read-side accumulator (sums in double: averages only). `first_ns`: the
// earliest time folded in (a raw frame's time, a rollup row's period start).
struct ReadAgg {
  int64_t count = 0;
  int64_t min = 0;
  int64_t max = 0;
  double sum = 0;
  int64_t first_ns = INT64_MAX;

  void Merge(int64_t t, int64_t n, int64_t mn, int64_t mx, double s) {
    if (n <= 0) return;
    first_ns = std::min(first_ns, t);
    if (count == 0) {
      min = mn;
      max = mx;
    } else {
      min = std::min(min, mn);
      max = std::max(max, mx);
    }
    count += n;
    sum += s;
  }
};

}  // namespace internal

class RingStore::Impl {
 public:
  Impl(std::string path, RingStoreOptions options)
      : path_(std::move(path)),
        options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : system_clock_),
        commit_interval_ns_(MulSaturating(options_.commit_interval_ms, 1'000'000)) {}
  ~Impl() { (void)Close(); }
  uint64_t rows_read() const { return rows_read_.load(std::memory_order_relaxed); }

  Status Init();
  // Init() failed on damage found after the file passed validation (I10):
  // a second Impl given the reason treats the file as bad (recreate_bad).
  const std::string& damaged_opening() const { return damaged_opening_; }
  void TreatAsBad(std::string why) { treat_as_bad_ = std::move(why); }
  void Start() {
    started_ = true;
    thread_ = std::thread([this] { Run(); });
    runtime::NameThread(thread_, "store-writer");
  }
  Status Close();

  void SetInventory(const Inventory& inventory);
  uint64_t Append(std::shared_ptr<const Frame> frame);
  Status Flush();
  void SetCommitInterval(int64_t ms);
  uint64_t next_seq() const {
    std::lock_guard lk(mu_);
    return next_seq_;
  }
  uint64_t committed_next_seq() const { return committed_next_.load(std::memory_order_acquire); }
  int64_t committed_newest_ns() const { return committed_newest_.load(std::memory_order_acquire); }

  Result<int64_t> BeginWindow(const std::string& label, int64_t start_ns,
                              std::optional<int64_t> lease_ns, const std::string& owner);
  Status EndWindow(int64_t id, int64_t end_ns, bool abandoned, const WindowResult& result);
  Status EndWindowFrom(int64_t id, int64_t start_ns, int64_t end_ns, const WindowResult& result);
  Result<int64_t> AddWindow(const std::string& label, int64_t start_ns, int64_t end_ns);
  Result<std::optional<Window>> GetWindow(int64_t id);
  Result<std::vector<Window>> ListWindows(int64_t from_ns, int64_t to_ns, size_t limit,
                                          std::optional<std::pair<int64_t, int64_t>> after);
  Result<std::vector<Window>> OpenWindows();
  Result<std::vector<Window>> ClosedWindowsAfter(int64_t end_ns, int64_t id, size_t limit);
  Result<std::optional<PushCursor>> GetPushCursor(const std::string& destination);
  void AppendRailChunk(RailChunk chunk);
  Result<RailSamples> RailSamplesBetween(int64_t from_ns, int64_t to_ns, size_t limit);
  Status SetPushCursor(const std::string& destination, const PushCursor& cursor);
  size_t max_windows() const {
    if (options_.max_bytes <= 0) return 65536;
    return static_cast<size_t>(std::clamp<int64_t>(options_.max_bytes / 8192, 64, 65536));
  }
  // Writer thread (windows.cc).
  Status CapWindows();
  Status TrimWindowsToData();

  Result<std::vector<StoredChannel>> Channels();
  Result<FrameSet> Latest(const std::vector<std::string>& keys);
  Result<FrameSet> Range(int64_t from_ns, int64_t to_ns, const std::vector<std::string>& keys,
                         size_t limit);
  Result<FrameSet> RangeWithQueued(int64_t from_ns, int64_t to_ns,
                                   const std::vector<std::string>& keys, size_t limit);
  // Frames from seq `seq_below` on are not read.
  Result<std::vector<int64_t>> FrameTimes(int64_t from_ns, int64_t to_ns, size_t limit,
                                          int64_t seq_below = INT64_MAX);
  Result<std::vector<int64_t>> FrameTimesWithQueued(int64_t from_ns, int64_t to_ns, size_t limit);
  Result<FrameSet> FramesAfter(uint64_t after_seq, size_t limit);
  Result<FrameSet> FramesAfterWithQueued(uint64_t after_seq, size_t limit);
  // A frame as the writer encoded it (batch_), not yet committed.
  struct Row {
    uint64_t seq;
    int64_t boottime_ns;
    int64_t realtime_ns;
    std::string blob;
  };
  // `queued`: rows copied from batch_ (CopyQueued), folded in where the
  // read's snapshot does not hold them.
  Result<std::vector<std::vector<Bucket>>> DownsampleEach(const std::vector<std::string>& keys,
                                                          int64_t from_ns, int64_t to_ns,
                                                          int64_t step_ns, Tier tier,
                                                          uint64_t* bad_frames,
                                                          const std::vector<Row>* queued = nullptr);
  Result<std::vector<Bucket>> Downsample(const std::string& key, int64_t from_ns, int64_t to_ns,
                                         int64_t step_ns, Tier tier, uint64_t* bad_frames);
  Result<std::vector<Bucket>> DownsampleWithQueued(const std::string& key, int64_t from_ns,
                                                   int64_t to_ns, int64_t step_ns, Tier tier,
                                                   uint64_t* bad_frames);
  Result<std::vector<std::vector<Bucket>>> DownsampleEachWithQueued(
      const std::vector<std::string>& keys, int64_t from_ns, int64_t to_ns, int64_t step_ns,
      Tier tier, uint64_t* bad_frames);
  Result<std::optional<double>> CounterAt(const std::string& key, int64_t t_ns);
  Result<std::optional<double>> CounterAtWithQueued(const std::string& key, int64_t t_ns);
  Result<std::optional<double>> EnergyBetween(const std::string& key, int64_t t0, int64_t t1);
  Result<std::map<std::string, int64_t>> LastCounters();
  Result<StoreStats> Stats();
  StoreStats Counters();
  bool damaged() const { return damaged_.load(std::memory_order_acquire); }
  std::string damage() {
    std::lock_guard lk(stats_mu_);
    return counters_.damage;
  }
  // (I13) Marks the store damaged once: `code` is the extended result code
  // of the failed statement, `doing` what was being done, `error` its message.
  void NoteDamage(int code, std::string_view doing, const std::string& error);
  Result<std::optional<int64_t>> OldestNs();
  Result<std::vector<Span>> Spans(int64_t from_ns, int64_t to_ns, int64_t max_step_ns);
  Result<std::vector<std::optional<SpanTotal>>> SpanTotals(const std::vector<std::string>& keys,
                                                           const std::vector<Span>& spans);
  int64_t rollup_period_ns() const { return options_.rollup_period_ns; }
  Result<std::vector<ClockJump>> ClockJumps(int64_t from_ns, int64_t to_ns);
  Status IntegrityCheck();
  Status SetMaxPageCount(int64_t pages);

 private:
  // ---- Queue items ----
  struct SyncOp {
    enum class Kind {
      kFlush,
      kBeginWindow,
      kEndWindow,
      kAddWindow,
      kSetMaxPages,
      kSetCursor,
      kRailChunk,  // rail_samples.cc: nobody waits for it
      kIngest,     // takes the queued frames into batch_; commits only channel rows due
    } kind;
    std::string label;
    int64_t a = 0;
    int64_t b = 0;
    std::optional<int64_t> c;  // BeginWindow: lease; EndWindow: abandoned if set
    std::string owner;         // BeginWindow
    std::optional<int64_t> d;  // EndWindow: the start moved here
    WindowResult result;       // EndWindow
    std::promise<Result<int64_t>> done;
    std::shared_ptr<const RailChunk> rail;  // kRailChunk
  };
  using InventoryPtr = std::shared_ptr<const std::vector<Channel>>;
  // A frame as the sampler shared it (never changed here), and its seq (I2).
  struct QueuedFrame {
    std::shared_ptr<const Frame> frame;
    uint64_t seq = 0;
  };
  using Item = std::variant<QueuedFrame, InventoryPtr, std::shared_ptr<SyncOp>>;

  Result<int64_t> Submit(SyncOp::Kind kind, std::string label, int64_t a, int64_t b,
                         std::optional<int64_t> c = std::nullopt, std::string owner = {},
                         std::optional<int64_t> d = std::nullopt, WindowResult result = {});

  // ---- Opening (ring_store.cc; Setup: schema.cc) ----
  struct Verdict {
    Status status;    // error that is not about the file's content
    std::string bad;  // non-empty: the file is not a usable store, and why
  };
  Verdict Validate();
  Status MoveAside(std::string& moved_to);
  Status Setup();
  Status LoadState();

  // ---- Writer thread (writer.cc; windows: windows.cc) ----
  void Run();
  void Process(std::deque<Item>& items);
  Status HandleSyncOp(SyncOp& op, Result<int64_t>& result);
  Result<int64_t> InsertWindow(const SyncOp& op);
  Status WriteWindowEnd(const SyncOp& op);
  // kSetCursor: a cursor at a committed frame in its own transaction, one
  // at a frame still queued held for the commit that stores that frame.
  Status WriteCursor(const SyncOp& op);  // push_cursors.cc
  // The push_cursors row of `destination` (in the open transaction).
  Status InsertCursorRow(const std::string& destination, const PushCursor& cursor);
  // Writes the held cursors (in the batch's transaction).
  Status InsertHeldCursors();
  Status WriteRailChunk(const SyncOp& op);  // rail_samples.cc
  void ApplyInventory(const std::vector<Channel>& channels);
  void Ingest(const Frame& frame, uint64_t seq);
  // The realtime frame `seq` sampled at (`boottime_ns`, `realtime_ns`) is
  // stored with.
  int64_t StampWallTime(uint64_t seq, int64_t boottime_ns, int64_t realtime_ns);
  // `without_values`: a frame that did not decode (I14, I15).
  void Fold(uint64_t seq, int64_t realtime_ns,
            const std::vector<std::pair<uint32_t, int64_t>>& values, bool without_values = false);
  void CloseBucket();
  void Report(StoreEvent::Kind kind, const std::string& message);
  void SetState(WriterState s) {
    std::lock_guard lk(stats_mu_);
    counters_.state = s;
  }

  // ---- Transactions (commit.cc) ----
  Status Commit();
  // (I7) Whether the closed periods held in memory are written with the
  // next commit: at once without options_.rollup_write_frames, else once
  // they hold that many frames, a period of a later block has closed, or
  // the store closes.
  bool RollupDue() const;
  // Rollup retention deletes rows in steps of this length (I5).
  int64_t RollupDeleteStep() const;
  // (I17) The base the writer encodes frames against: its id in
  // frame_bases, the seq of the first frame written against it, its values.
  struct FrameBase {
    uint64_t id = 0;
    uint64_t first_seq = 0;
    FrameValues values;
  };
  struct Deltas {
    int64_t inserted = 0;
    int64_t expired = 0;
    int64_t trimmed = 0;
    int64_t rollup_inserted = 0;
    int64_t rollup_deleted = 0;
    int64_t rollup_trimmed = 0;
    std::optional<int64_t> channels_version;
    size_t boots_emptied = 0;  // oldest boot segments fully expired (I5)
    // (I15) By level (1 blocks, 2 days, 3 months): meta's SpanThroughKey as written.
    std::array<std::optional<int64_t>, kTopSpanLevel + 1> spans_through;
    std::optional<int64_t> written_from;   // the oldest rollup, span or block row written
    std::optional<int64_t> rollup_floor;   // rollup_floor_ns_ once committed
    bool rollup_written = false;           // the closed periods went in (I7)
    std::optional<int64_t> expired_at_bt;  // raw retention ran by its step at this boottime (I5)
    std::optional<FrameBase> base;         // (I17) base_ once committed
    int64_t stored_bytes = 0;              // the frames' blobs as written
    void Wrote(int64_t t_ns) { written_from = std::min(written_from.value_or(t_ns), t_ns); }
  };
  Status TryCommit(Deltas& d);
  // (I17) The batch's frame rows, each against the base (a new one when
  // due), and the bases no frame left needs any more (frame_bases.cc).
  Status InsertFrames(Deltas& d);
  Result<int64_t> BlockStart(int64_t at);
  Status InsertBlock(size_t first, size_t end, const std::vector<std::string>& blobs, Deltas& d);
  Status DropUnusedBases();
  Status GiveBackFreePages();
  // (I5) Raw retention: whether this commit runs it (by expire_step, or
  // with a batch whose rows fill a few pages), and the deletions.
  enum class ExpireRun { kNo, kWithBatch, kByStep };
  ExpireRun ExpireDue() const;
  Status ExpireFrames(ExpireRun run, Deltas& d);
  Status EnsureRoom(int64_t need_pages, int64_t target_pages, Deltas& d);
  Result<bool> TrimOnce(int64_t excess_pages, Deltas& d);
  Status WriteMeta(const char* key, int64_t value);
  Status WriteRollup(Deltas& d);
  Status WriteSpans(Deltas& d);
  Status WritePeriodValues();
  Status TrimPeriodValues(int64_t cutoff_ns);
  // (I15) A block's, day's or month's span_stats row for one channel.
  struct Aggregate {
    int64_t t_ns = 0;
    int64_t end_ns = 0;
    int64_t count = 0;
    int64_t min = 0;
    int64_t max = 0;
    double sum = 0;
  };
  Result<std::vector<std::vector<Aggregate>>> StepAggregates(sql::Conn& c,
                                                             const std::vector<uint32_t>& ids,
                                                             int64_t from_ns, int64_t to_ns,
                                                             int64_t step_ns,
                                                             std::optional<int64_t> oldest);
  // (I15) The block, day or month span starting at t_ns.
  Status WriteLevelSpan(int level, int64_t t_ns);
  Status DeleteRollup(int64_t cutoff_ns, int64_t& deleted);
  Status TrimRollupChunk(int64_t chunk, int64_t cutoff_ns, int64_t& deleted);
  Status InWriteTxn(const std::function<Status()>& body);
  int64_t EstimatePages() const;

  // ---- Readers (reader.cc) ----
  class Lease;
  Result<std::unique_ptr<sql::Conn>> AcquireReader();
  void ReleaseReader(std::unique_ptr<sql::Conn> conn);
  Result<std::vector<StoredChannel>> LoadChannels(sql::Conn& c);
  struct ChannelRef {
    int64_t id = 0;
    uint32_t flags = 0;
  };
  Result<ChannelRef> FindChannel(sql::Conn& c, const std::string& key);
  // The id of a counter channel; InvalidArgument when the channel is no counter.
  Result<uint32_t> FindCounter(sql::Conn& c, const std::string& key);
  enum class FrameQuery { kLatest, kTimeRange, kAfterSeq };
  // kAfterSeq: frames with seq > from_ns (a seq) in seq order.
  // Has the writer take the queued frames in (kIngest), then copies the
  // rows it holds with a time in [from_ns, to_ns) into `rows` (at most
  // limit + 1; 0: all), and sets `seq_below`: every frame before it is
  // committed (what the copy holds may be committed by the time it is read).
  Status CopyQueued(int64_t from_ns, int64_t to_ns, size_t limit, std::vector<Row>& rows,
                    int64_t& seq_below);
  // kTimeRange: only committed frames with seq < seq_below, then those of
  // `queued` (rows of batch_, in seq order, each seq >= seq_below) in the
  // range.
  Result<FrameSet> ReadFrames(FrameQuery query, int64_t from_ns, int64_t to_ns,
                              const std::vector<std::string>& keys, size_t limit,
                              int64_t seq_below = INT64_MAX,
                              const std::vector<Row>* queued = nullptr);
  // Folds raw frames with a time in [lo_ns, hi_ns) into the steps of
  // [from_ns, ...) (all frames after `after_seq` where that is given).
  Status FoldRaw(sql::Conn& c, uint32_t id, int64_t from_ns, int64_t lo_ns, int64_t hi_ns,
                 int64_t step_ns, std::optional<uint64_t> after_seq,
                 std::vector<internal::ReadAgg>& acc, uint64_t& bad_frames);
  // One channel's Downsample on a read already open: `oldest` is the raw
  // tier's start (kAuto), `rollup_seq` the rollup tier's end (a coarse step),
  // `aggs` its StepAggregates (a coarse step).
  Result<std::vector<Bucket>> DownsampleIn(sql::Conn& c, uint32_t id, int64_t from_ns,
                                           int64_t to_ns, int64_t step_ns, Tier tier,
                                           std::optional<int64_t> oldest, uint64_t rollup_seq,
                                           std::vector<Aggregate> aggs, uint64_t& bad,
                                           const std::vector<Row>* queued = nullptr,
                                           int64_t committed_seq = INT64_MAX);
  // FoldRaw of the frames after `after_seq` (rollup_seq: the open period
  // and the closed ones held back, I7) from tail_, which decodes each of
  // them once for every reader and channel; FoldRaw itself when they are
  // more than tail_ keeps.
  Status FoldTail(sql::Conn& c, uint32_t id, int64_t from_ns, int64_t hi_ns, int64_t step_ns,
                  uint64_t after_seq, std::vector<internal::ReadAgg>& acc, uint64_t& bad_frames);
  Result<std::optional<double>> CounterAtIn(sql::Conn& c, uint32_t id, int64_t t);

  const std::string path_;
  const RingStoreOptions options_;
  // Every time the store reads (options_.clock, or the system clock).
  SystemClock system_clock_;
  Clock& clock_;

  // ---- Queue: guarded by mu_ ----
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  size_t queued_frames_ = 0;
  bool sync_pending_ = false;
  // The writer waits with no deadline (nothing queued, nothing batched): the
  // next frame wakes it to start the commit interval. In a timed wait a
  // frame does not: it is taken in at IngestFrames() or when the wait ends.
  bool waiting_idle_ = false;
  uint64_t writer_wakeups_ = 0;  // the writer's waits that returned (StoreStats)
  bool stop_ = false;
  uint64_t next_seq_ = 1;
  int64_t first_queued_ns_ = 0;  // monotonic
  // Frames taken in a few at a time (IngestFrames), so the queue holds few
  // frames however long the commit interval.
  size_t IngestFrames() const { return std::min<size_t>(options_.batch_frames, 64); }
  int64_t commit_interval_ns_;  // options_.commit_interval_ms, or SetCommitInterval's
  std::thread thread_;

  // ---- Close: guarded by close_mu_ ----
  std::mutex close_mu_;
  bool closed_ = false;
  Status close_status_;

  // ---- Damage (I13): set once, never cleared ----
  std::atomic<bool> damaged_{false};
  // One past the newest frame in the file (0 before Open): what a frame
  // sink beside the store may forget.
  std::atomic<uint64_t> committed_next_{0};
  std::atomic<int64_t> committed_newest_{INT64_MIN};  // its stored realtime (committed_newest_ns)
  std::atomic<uint64_t> rows_read_{0};  // rows SQLite returned to readers (rows_read())
  std::atomic<bool> started_{false};    // Open() succeeded: damage is reported, not returned
  std::string damaged_opening_;         // Init only: why, when Setup/LoadState met damage
  std::string treat_as_bad_;            // Init only

  // ---- Counters for Stats(): guarded by stats_mu_ ----
  std::mutex stats_mu_;
  StoreStats counters_;
  uint64_t queue_dropped_ = 0;  // guarded by mu_
  // Rail chunks queued and not yet written; beyond the bound a chunk is
  // dropped and counted (the sampler never waits).
  static constexpr size_t kMaxQueuedRailChunks = 64;
  size_t queued_rail_chunks_ = 0;     // guarded by mu_
  uint64_t rail_chunks_dropped_ = 0;  // guarded by mu_

  // ---- Read connections: guarded by pool_mu_ ----
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<sql::Conn>> idle_readers_;
  std::atomic<bool> readers_closed_{false};
  // Channel rows as last read, by meta.channels_version: guarded by pool_mu_.
  std::optional<int64_t> cached_channels_version_;
  std::shared_ptr<const std::vector<StoredChannel>> cached_channels_;

  // ---- The decoded tail (reader.cc): guarded by tail_.mu ----
  // (I7) The frames after rollup_seq, decoded: committed frames are never
  // rewritten (I2), and a new rollup_seq starts it afresh.
  // A frame's values are kept without their channel ids (8 bytes a value):
  // frames of one inventory share one list of ids.
  static constexpr uint32_t kBadTailFrame = UINT32_MAX;
  struct TailFrame {
    int64_t t_ns = 0;
    uint32_t ids = kBadTailFrame;  // index in id_sets; kBadTailFrame: (I14) did not decode
    uint32_t at = 0;               // its values start at values[at], in id order
  };
  struct TailCache {
    std::mutex mu;
    std::optional<uint64_t> after_seq;  // what `frames` follow
    int64_t through_seq = 0;            // the last seq read
    std::vector<TailFrame> frames;
    std::vector<std::vector<uint32_t>> id_sets;  // ascending channel ids
    std::vector<int64_t> values;
    // Empties it and gives its memory back.
    void Reset() {
      frames = {};
      id_sets = {};
      values = {};
      after_seq.reset();
    }
  };
  TailCache tail_;

  // ---- Writer thread only (and Init, before the thread starts) ----
  std::unique_ptr<sql::Conn> w_;
  int64_t page_size_ = 4096;
  int64_t max_pages_ = 0;  // ring cap (I6); 0 = none
  struct ChanState {
    std::string key;
    Channel desc;
    int64_t first_seen_ns = 0;
    bool dirty = false;
    std::optional<int64_t> last_counter;  // (I8)
    int64_t counter_offset = 0;
  };
  std::vector<ChanState> chans_{1};  // index = store id; 0 unused
  std::unordered_map<std::string, uint32_t> id_by_key_;
  std::vector<uint32_t> inv_map_;                    // inventory ChannelId -> store id (0 = none)
  std::vector<std::pair<uint32_t, int64_t>> pairs_;  // scratch
  std::vector<char> encoded_;                        // scratch: EncodeFrame's room
  std::optional<FrameBase> base_;                    // (I17) as committed
  std::string stored_;                               // scratch: a frame as written
  // The writer changes batch_ under batch_mu_ (appends and clears); readers
  // copy rows of it under the lock (RangeWithQueued): those ingested and
  // not yet committed, committed_next_ at its front when it is empty.
  std::vector<Row> batch_;
  std::mutex batch_mu_;
  int64_t batch_bytes_ = 0;
  int64_t batch_since_ns_ = 0;             // monotonic: when batch_'s first frame was queued
  std::atomic<size_t> batched_frames_{0};  // batch_.size(), for Counters
  // Rollup (I7).
  std::optional<int64_t> bucket_;   // start of the open period
  std::vector<internal::Agg> agg_;  // by store id
  std::vector<uint32_t> touched_;   // ids with agg_[id].count > 0
  uint64_t folded_seq_ = 0;         // last seq folded into the open period
  struct RollupRow {
    uint32_t channel;
    int64_t t_ns;
    internal::Agg agg;
  };
  std::vector<RollupRow> pending_rollup_;
  // (I15) The open period's frames and clock values; closed periods' rows
  // waiting for the next commit.
  internal::SpanAgg span_;
  std::vector<std::map<int64_t, uint64_t>> values_;  // by store id (IsClock channels)
  struct SpanRow {
    int64_t t_ns;
    internal::SpanAgg agg;
    std::vector<std::tuple<uint32_t, int64_t, uint64_t>> values;  // (channel, value, count)
  };
  std::vector<SpanRow> pending_spans_;
  // (I15) By level: the spans before it are written (meta's SpanThroughKey).
  std::array<int64_t, kTopSpanLevel + 1> spans_through_ns_ = MinThrough();
  static constexpr std::array<int64_t, kTopSpanLevel + 1> MinThrough() {
    std::array<int64_t, kTopSpanLevel + 1> a{};
    a.fill(INT64_MIN);
    return a;
  }
  uint64_t pending_rollup_seq_ = 0;  // rollup_seq once pending_rollup_ is written
  bool rollup_dirty_ = false;
  // (I5) No rollup, span or block row is older than this (they sit on the
  // period grid, and DeleteRollup took every row before the last cutoff):
  // the retention pass has nothing to delete until the cutoff passes it.
  // Unknown until the first commit, which runs the pass.
  std::optional<int64_t> rollup_floor_ns_;
  std::optional<int64_t> expired_at_bt_;  // the boottime raw retention last ran at by its step (I5)
  uint64_t rollup_seq_ = 0;               // as stored
  int64_t frames_ = 0;                    // as stored (meta.frames)
  int64_t rollup_rows_ = 0;               // as stored (meta.rollup_rows)
  int64_t channels_version_ = 0;          // as stored (meta.channels_version)
  std::optional<int64_t> newest_rt_;
  // Clock policy (I5, I11): the last frame ingested, as stored and as
  // carried, and the boot segments of the frames held, oldest first (a
  // segment starts where boottime_ns goes down in seq order).
  std::optional<int64_t> last_rt_, last_bt_, last_offset_;
  struct BootSeg {
    uint64_t first_seq;
    int64_t last_bt;
  };
  std::vector<BootSeg> boots_;
  std::vector<uint64_t> pending_boots_;  // segments started since the last commit
  struct Jump {
    int64_t boottime_ns, realtime_ns, old_offset_ns, new_offset_ns;
  };
  std::vector<Jump> pending_jumps_;
  // (I16) Cursors at frames not committed yet, by destination: written with
  // the commit that stores their frames (the writer changes them; a reader
  // of GetPushCursor reads them under cursor_mu_).
  mutable std::mutex cursor_mu_;
  std::map<std::string, PushCursor> held_cursors_;
  double avg_row_bytes_ = 600;
  std::optional<int64_t> last_failure_report_ns_;  // monotonic
  uint64_t unreported_failures_ = 0;
  bool failing_ = false;
  bool closing_ = false;                     // the last commit: every closed period goes in (I7)
  bool frames_trimmed_ = false;              // since the closed periods were last written (I7)
  int last_errcode_ = SQLITE_OK;             // of the last failed InWriteTxn
  std::optional<Status> error_since_flush_;  // first dropped batch since the last Flush
};

// A read connection inside one short read transaction (I9).
class RingStore::Impl::Lease {
 public:
  explicit Lease(Impl& impl);
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  sql::Conn& conn() { return *conn_; }

 private:
  Impl& impl_;
  std::unique_ptr<sql::Conn> conn_;
  Status status_;
};

}  // namespace edgemon::store
