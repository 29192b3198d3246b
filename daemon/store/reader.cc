// The read side of the store (I9): pooled read connections, each read in
// one short transaction, and every read: frames (Latest, Range),
// Downsample from the raw or rollup tier, counters and energy (CounterAt,
// EnergyBetween, LastCounters), clock steps, Stats and the integrity check.
// Frames that do not decode are skipped, never fail a read (I14).
#include <limits>

#include "daemon/store/frame_codec.h"
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {
namespace internal {

Result<std::optional<int64_t>> OldestFrameNs(sql::Conn& c) {
  // The first by seq is the oldest (I11).
  sql::Stmt o(c, "SELECT realtime_ns FROM frames WHERE seq = (SELECT min(seq) FROM frames)");
  std::optional<int64_t> oldest;
  if (o.Step() && !o.IsNull(0)) oldest = o.Int(0);
  if (o.failed()) return o.status();
  return oldest;
}

Result<std::optional<std::pair<int64_t, int64_t>>> SeqsBetween(sql::Conn& c, int64_t from_ns,
                                                               int64_t to_ns) {
  using Seqs = std::optional<std::pair<int64_t, int64_t>>;
  if (to_ns <= from_ns) return Seqs();
  auto lo = FirstSeqAt(c, from_ns, /*after=*/false);
  if (!lo.ok()) return lo.status();
  if (!*lo) return Seqs();
  auto hi = FirstSeqAt(c, to_ns, /*after=*/false);
  if (!hi.ok()) return hi.status();
  const int64_t end = hi->value_or(INT64_MAX);
  if (end <= **lo) return Seqs();
  return Seqs(std::pair{**lo, end});
}

Result<std::optional<int64_t>> FirstSeqAt(sql::Conn& c, int64_t t, bool after) {
  // A probe: the first frame at or after seq k, as (seq, realtime_ns).
  auto probe = [&c](const char* sql,
                    int64_t k) -> Result<std::optional<std::pair<int64_t, int64_t>>> {
    sql::Stmt s(c, sql);
    s.Bind(1, k);
    std::optional<std::pair<int64_t, int64_t>> row;
    if (s.Step()) row.emplace(s.Int(0), s.Int(1));
    if (s.failed()) return s.status();
    return row;
  };
  auto newest = probe(
      "SELECT seq, realtime_ns FROM frames WHERE seq <= ?1 ORDER BY seq DESC LIMIT 1", INT64_MAX);
  if (!newest.ok()) return newest.status();
  auto holds = [&](int64_t rt) { return after ? rt > t : rt >= t; };
  if (!*newest || !holds((*newest)->second)) return std::optional<int64_t>();
  const char* const at_or_after =
      "SELECT seq, realtime_ns FROM frames WHERE seq >= ?1 ORDER BY seq LIMIT 1";
  auto oldest = probe(at_or_after, INT64_MIN);
  if (!oldest.ok()) return oldest.status();
  if (!*oldest) return std::optional<int64_t>();
  if (holds((*oldest)->second)) return std::optional<int64_t>((*oldest)->first);
  // Frame a does not hold, frame b does: the answer is the first frame of
  // the least k in [lo, hi] whose first frame at or after it holds (holding
  // only grows with k). A probe that does not hold at k's frame s does not
  // at any k up to s either. Frames come at a steady rate, so the guess
  // interpolates a time between a and b, every other step (the others
  // halve, so a store of uneven times costs at most twice the bisection).
  std::pair<int64_t, int64_t> a = **oldest, b = **newest;
  int64_t lo = a.first + 1, hi = b.first;
  bool guess = true;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (guess && b.second > a.second) {
      const double f = (static_cast<double>(t) - static_cast<double>(a.second)) /
                       (static_cast<double>(b.second) - static_cast<double>(a.second));
      const double k = static_cast<double>(a.first) +
                       f * (static_cast<double>(b.first) - static_cast<double>(a.first));
      if (k >= static_cast<double>(lo) && k < static_cast<double>(hi)) {
        mid = static_cast<int64_t>(k);
      }
    }
    guess = !guess;
    auto at = probe(at_or_after, mid);
    if (!at.ok()) return at.status();
    if (!*at) break;  // not while the snapshot holds the newest frame
    if (holds((*at)->second)) {
      hi = mid;
      b = **at;
    } else {
      lo = (*at)->first + 1;
      a = **at;
    }
  }
  auto found = probe(at_or_after, lo);
  if (!found.ok()) return found.status();
  if (!*found) return std::optional<int64_t>();
  return std::optional<int64_t>((*found)->first);
}

}  // namespace internal

namespace {

// (I15) Spans of several levels, coarsest first: find(level, a, b) lists the
// usable spans of `level` inside [a, b) in time order (each with t_ns and
// end_ns); the stretches between them are filled from the next finer level,
// down to `finest`. Appends them to `out` in time order, without overlap.
// Each find() is done with its statement before the finer levels run (they
// reuse the connection's cached statement of the same SQL).
template <typename T, typename Find>
Status CoarsestFirst(int level, int finest, int64_t a, int64_t b, Find& find, std::vector<T>& out) {
  if (b <= a || level < finest) return Status::Ok();
  auto found = find(level, a, b);
  if (!found.ok()) return found.status();
  int64_t cur = a;
  for (const T& sp : *found) {
    if (Status e = CoarsestFirst(level - 1, finest, cur, sp.t_ns, find, out); !e.ok()) return e;
    out.push_back(sp);
    cur = sp.end_ns;
  }
  return CoarsestFirst(level - 1, finest, cur, b, find, out);
}

using internal::ChannelFromRow;
using internal::FileSize;
using internal::IsDamageCode;
using internal::OldestFrameNs;
using internal::ReadAgg;

struct Point {
  int64_t t;
  double v;
};

// The nearest frame holding a value of `id` at or before t, or after t. A
// frame that does not decode is passed over (I14: interpolate across it).
enum class Side { kAtOrBefore, kAfter };
// `past` is the first seq whose frame is after t (FirstSeqAt(c, t, true):
// the frames after t start there, I11), nullopt when none is.
// `frames` is the caller's, so that both sides read a block once (I18).
Result<std::optional<Point>> RawNeighbour(sql::Conn& c, internal::FrameReader& frames, uint32_t id,
                                          std::optional<int64_t> past, Side side) {
  if (side == Side::kAfter && !past) return std::optional<Point>();
  sql::Stmt s(c, side == Side::kAfter
                     ? "SELECT realtime_ns, data FROM frames WHERE seq >= ?1 ORDER BY seq"
                     : "SELECT realtime_ns, data FROM frames WHERE seq < ?1 ORDER BY seq DESC");
  s.Bind(1, past.value_or(INT64_MAX));
  std::optional<int64_t> v;
  while (s.Step()) {
    if (!frames.Find(s.Blob(1), id, v)) continue;
    if (v) return std::optional<Point>(Point{s.Int(0), static_cast<double>(*v)});
  }
  if (s.failed()) return s.status();
  return std::optional<Point>();
}

}  // namespace

Result<std::unique_ptr<sql::Conn>> RingStore::Impl::AcquireReader() {
  {
    std::lock_guard lk(pool_mu_);
    if (readers_closed_) return Status::Unavailable("store is closed");
    if (!idle_readers_.empty()) {
      auto c = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return c;
    }
  }
  auto c = sql::Conn::Open(path_, SQLITE_OPEN_READWRITE);
  if (!c.ok()) return c.status();
  sqlite3_busy_timeout((*c)->db(), 5000);
  std::string pragmas = "PRAGMA query_only=1; PRAGMA mmap_size=" +
                        std::to_string(std::max<int64_t>(0, options_.reader_mmap_bytes)) +
                        "; PRAGMA cache_size=-" +
                        std::to_string(std::max<int64_t>(64, options_.cache_kib));
  if (Status s = (*c)->Exec(pragmas.c_str()); !s.ok()) {
    // The first statement of a new connection reads the schema (I13).
    if (int code = (*c)->failure_code(); IsDamageCode(code)) {
      NoteDamage(code, "opening a reader", (*c)->failure_message());
    }
    return s;
  }
  return std::move(c.value());
}

void RingStore::Impl::ReleaseReader(std::unique_ptr<sql::Conn> conn) {
  if (conn->InTransaction()) (void)conn->Exec("ROLLBACK");
  rows_read_.fetch_add(conn->TakeRows(), std::memory_order_relaxed);
  // An idle reader keeps no page cache (the file's pages stay in the OS page
  // cache): a burst of large reads leaves no memory behind in the pool.
  sqlite3_db_release_memory(conn->db());
  std::lock_guard lk(pool_mu_);
  if (!readers_closed_ && idle_readers_.size() < options_.max_idle_readers) {
    idle_readers_.push_back(std::move(conn));
  }
}

RingStore::Impl::Lease::Lease(Impl& impl) : impl_(impl) {
  auto c = impl.AcquireReader();
  if (!c.ok()) {
    status_ = c.status();
    return;
  }
  conn_ = std::move(c.value());
  conn_->set_failure_code(SQLITE_OK);
  status_ = conn_->Exec("BEGIN");
}

RingStore::Impl::Lease::~Lease() {
  if (!conn_) return;
  // (I13) Any statement of this read that found the file damaged.
  if (int code = conn_->failure_code(); IsDamageCode(code)) {
    impl_.NoteDamage(code, "reading", conn_->failure_message());
  }
  if (conn_->InTransaction()) (void)conn_->Exec("COMMIT");
  impl_.ReleaseReader(std::move(conn_));
}

Result<std::vector<StoredChannel>> RingStore::Impl::LoadChannels(sql::Conn& c) {
  // Decoding every description (JSON trips and attrs) per read is the larger
  // part of a small read: reuse them while channels_version is unchanged.
  int64_t version = 0;
  {
    sql::Stmt v(c, "SELECT value FROM meta WHERE key = 'channels_version'");
    if (v.Step()) version = v.Int(0);
    if (v.failed()) return v.status();
  }
  {
    std::lock_guard lk(pool_mu_);
    if (cached_channels_ && cached_channels_version_ == version) return *cached_channels_;
  }
  std::vector<StoredChannel> out;
  sql::Stmt s(c,
              "SELECT id, key, kind, name, field, unit, device, parent, flags, min, max, crit, "
              "trips, attrs, first_seen_ns FROM channels ORDER BY id");
  while (s.Step()) out.push_back(ChannelFromRow(s));
  if (s.failed()) return s.status();
  for (size_t i = 0; i < out.size(); ++i) out[i].channel.id = static_cast<ChannelId>(i);
  std::lock_guard lk(pool_mu_);
  cached_channels_version_ = version;
  cached_channels_ = std::make_shared<const std::vector<StoredChannel>>(out);
  return out;
}

Result<RingStore::Impl::ChannelRef> RingStore::Impl::FindChannel(sql::Conn& c,
                                                                 const std::string& key) {
  sql::Stmt s(c, "SELECT id, flags FROM channels WHERE key = ?1");
  s.Bind(1, std::string_view(key));
  if (!s.Step()) {
    if (s.failed()) return s.status();
    return Status::NotFound("unknown channel \"" + key + "\"");
  }
  return ChannelRef{s.Int(0), static_cast<uint32_t>(s.Int(1))};
}

Result<uint32_t> RingStore::Impl::FindCounter(sql::Conn& c, const std::string& key) {
  auto ch = FindChannel(c, key);
  if (!ch.ok()) return ch.status();
  if ((ch->flags & kFlagCounter) == 0)
    return Status::InvalidArgument("\"" + key + "\" is not a counter");
  return static_cast<uint32_t>(ch->id);
}

Result<std::vector<StoredChannel>> RingStore::Impl::Channels() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  return LoadChannels(l.conn());
}

Result<FrameSet> RingStore::Impl::ReadFrames(FrameQuery query, int64_t from_ns, int64_t to_ns,
                                             const std::vector<std::string>& keys, size_t limit,
                                             int64_t seq_below, const std::vector<Row>* queued) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto all = LoadChannels(l.conn());
  if (!all.ok()) return all.status();
  FrameSet out;
  if (keys.empty()) {
    out.channels = std::move(all.value());
  } else {
    std::unordered_map<std::string_view, size_t> by_key;
    for (size_t i = 0; i < all->size(); ++i) by_key.emplace((*all)[i].key, i);
    for (const auto& k : keys) {
      auto it = by_key.find(k);
      if (it == by_key.end()) return Status::NotFound("unknown channel \"" + k + "\"");
      for (const auto& have : out.channels) {
        if (have.key == k) return Status::InvalidArgument("channel \"" + k + "\" requested twice");
      }
      out.channels.push_back((*all)[it->second]);
      out.channels.back().channel.id = static_cast<ChannelId>(out.channels.size() - 1);
    }
  }
  std::vector<int32_t> column;
  for (size_t i = 0; i < out.channels.size(); ++i) {
    auto id = static_cast<size_t>(out.channels[i].store_id);
    if (column.size() <= id) column.resize(id + 1, -1);
    column[id] = static_cast<int32_t>(i);
  }
  internal::FrameReader frames(l.conn());
  auto add_frame = [&](uint64_t seq, int64_t boottime_ns, int64_t realtime_ns,
                       std::string_view blob) {
    Frame f;
    f.seq = seq;
    f.boottime_ns = boottime_ns;
    f.realtime_ns = realtime_ns;
    f.values.resize(out.channels.size());
    bool ok = frames.ForEach(blob, [&](uint32_t id, int64_t v) {
      if (id < column.size() && column[id] >= 0) f.values[static_cast<size_t>(column[id])] = v;
    });
    if (ok) {
      out.frames.push_back(std::move(f));
    } else {
      ++out.bad_frames;  // (I14) skipped, not the whole range
    }
  };
  auto read_row = [&](sql::Stmt& s) -> Status {
    add_frame(static_cast<uint64_t>(s.Int(0)), s.Int(1), s.Int(2), s.Blob(3));
    return Status::Ok();
  };
  // The queued rows in the range (after the seq) after the committed ones,
  // within `limit`.
  auto add_queued = [&] {
    if (!queued || out.truncated) return;
    for (const Row& r : *queued) {
      if (query == FrameQuery::kAfterSeq ? r.seq <= static_cast<uint64_t>(from_ns)
                                         : r.realtime_ns < from_ns || r.realtime_ns >= to_ns) {
        continue;
      }
      if (limit != 0 && out.frames.size() == limit) {
        out.truncated = true;
        return;
      }
      add_frame(r.seq, r.boottime_ns, r.realtime_ns, r.blob);
    }
  };
  if (query == FrameQuery::kLatest) {
    sql::Stmt s(l.conn(),
                "SELECT seq, boottime_ns, realtime_ns, data FROM frames ORDER BY seq DESC LIMIT 1");
    if (s.Step()) {
      if (Status e = read_row(s); !e.ok()) return e;
    }
    if (s.failed()) return s.status();
    return out;
  }
  if (query == FrameQuery::kTimeRange && to_ns <= from_ns) return out;
  int64_t lo = from_ns, hi = seq_below;
  if (query == FrameQuery::kTimeRange) {
    auto seqs = internal::SeqsBetween(l.conn(), from_ns, to_ns);
    if (!seqs.ok()) return seqs.status();
    if (!*seqs || (*seqs)->first >= seq_below) {
      add_queued();
      return out;
    }
    std::tie(lo, hi) = **seqs;
    hi = std::min(hi, seq_below);
  }
  sql::Stmt s(l.conn(), query == FrameQuery::kAfterSeq
                            ? "SELECT seq, boottime_ns, realtime_ns, data FROM frames "
                              "WHERE seq > ?1 AND seq < ?2 ORDER BY seq LIMIT ?3"
                            : "SELECT seq, boottime_ns, realtime_ns, data FROM frames "
                              "WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT ?3");
  s.Bind(1, lo).Bind(2, hi);
  // No SQL limit: skipped bad frames (I14) must not end a page early; the
  // index scan stops when the loop does.
  s.Bind(3, int64_t{-1});
  while (s.Step()) {
    if (limit != 0 && out.frames.size() == limit) {
      out.truncated = true;
      break;
    }
    if (Status e = read_row(s); !e.ok()) return e;
  }
  if (s.failed()) return s.status();
  add_queued();
  return out;
}

Result<std::vector<int64_t>> RingStore::Impl::FrameTimes(int64_t from_ns, int64_t to_ns,
                                                         size_t limit, int64_t seq_below) {
  std::vector<int64_t> out;
  if (to_ns <= from_ns) return out;
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto seqs = internal::SeqsBetween(l.conn(), from_ns, to_ns);
  if (!seqs.ok()) return seqs.status();
  if (!*seqs) return out;
  sql::Stmt s(l.conn(),
              "SELECT realtime_ns FROM frames WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT ?3");
  const bool all = limit == 0 || limit > static_cast<size_t>(INT64_MAX);
  s.Bind(1, (*seqs)->first).Bind(2, std::min((*seqs)->second, seq_below));
  s.Bind(3, all ? int64_t{-1} : static_cast<int64_t>(limit));
  while (s.Step()) out.push_back(s.Int(0));
  if (s.failed()) return s.status();
  return out;
}

Result<std::vector<int64_t>> RingStore::Impl::FrameTimesWithQueued(int64_t from_ns, int64_t to_ns,
                                                                   size_t limit) {
  // As RangeWithQueued: the committed times below the copy's first seq,
  // then the copy's.
  if (to_ns <= committed_newest_.load(std::memory_order_acquire)) {
    return FrameTimes(from_ns, to_ns, limit);
  }
  std::vector<Row> queued;
  int64_t seq_below = 0;
  if (Status s = CopyQueued(from_ns, to_ns, limit, queued, seq_below); !s.ok()) return s;
  auto out = FrameTimes(from_ns, to_ns, limit, seq_below);
  if (!out.ok()) return out;
  for (const Row& r : queued) {
    if (limit != 0 && out->size() >= limit) break;
    out->push_back(r.realtime_ns);
  }
  return out;
}

Result<FrameSet> RingStore::Impl::Latest(const std::vector<std::string>& keys) {
  return ReadFrames(FrameQuery::kLatest, 0, 0, keys, 1);
}

Result<FrameSet> RingStore::Impl::Range(int64_t from_ns, int64_t to_ns,
                                        const std::vector<std::string>& keys, size_t limit) {
  return ReadFrames(FrameQuery::kTimeRange, from_ns, to_ns, keys, limit);
}

Status RingStore::Impl::CopyQueued(int64_t from_ns, int64_t to_ns, size_t limit,
                                   std::vector<Row>& rows, int64_t& seq_below) {
  // The writer takes the queued frames in (it commits only when due).
  auto ingested = Submit(SyncOp::Kind::kIngest, {}, 0, 0);
  if (!ingested.ok()) return ingested.status();
  {
    std::lock_guard lk(batch_mu_);
    seq_below = static_cast<int64_t>(std::min<uint64_t>(
        batch_.empty() ? committed_next_.load(std::memory_order_acquire) : batch_.front().seq,
        INT64_MAX));
    for (const Row& r : batch_) {
      if (r.realtime_ns < from_ns || r.realtime_ns >= to_ns) continue;
      if (limit != 0 && rows.size() == limit) break;
      rows.push_back(r);
    }
  }
  if (options_.after_queued_copy) options_.after_queued_copy();
  return Status::Ok();
}

Result<FrameSet> RingStore::Impl::RangeWithQueued(int64_t from_ns, int64_t to_ns,
                                                  const std::vector<std::string>& keys,
                                                  size_t limit) {
  // Queued frames are stamped no earlier than the newest committed one
  // (I11): a range that ends by then holds none.
  if (to_ns <= committed_newest_.load(std::memory_order_acquire)) {
    return Range(from_ns, to_ns, keys, limit);
  }
  // The committed frames are read below the copy's first seq: what the copy
  // holds may be committed by then, and is read from the copy alone. One
  // past the limit: ReadFrames marks the set truncated.
  std::vector<Row> queued;
  int64_t seq_below = 0;
  if (Status s = CopyQueued(from_ns, to_ns, limit == 0 ? 0 : limit + 1, queued, seq_below);
      !s.ok()) {
    return s;
  }
  return ReadFrames(FrameQuery::kTimeRange, from_ns, to_ns, keys, limit, seq_below, &queued);
}

Result<FrameSet> RingStore::Impl::FramesAfter(uint64_t after_seq, size_t limit) {
  if (after_seq > static_cast<uint64_t>(INT64_MAX)) return FrameSet{};
  return ReadFrames(FrameQuery::kAfterSeq, static_cast<int64_t>(after_seq), 0, {}, limit);
}

Result<FrameSet> RingStore::Impl::FramesAfterWithQueued(uint64_t after_seq, size_t limit) {
  if (after_seq > static_cast<uint64_t>(INT64_MAX)) return FrameSet{};
  // Every queued row (at most a batch): those after the seq are read from
  // the copy, the committed frames below its first seq, as RangeWithQueued.
  std::vector<Row> queued;
  int64_t seq_below = 0;
  if (Status s = CopyQueued(INT64_MIN, INT64_MAX, 0, queued, seq_below); !s.ok()) return s;
  return ReadFrames(FrameQuery::kAfterSeq, static_cast<int64_t>(after_seq), 0, {}, limit, seq_below,
                    &queued);
}

// Folds raw frames' values of channel `id` with a time in [lo_ns, hi_ns)
// into the steps of a range starting at from_ns (from_ns <= lo_ns). With
// `after_seq`, only frames with a larger seq (the rollup tier's tail).
Status RingStore::Impl::FoldRaw(sql::Conn& c, uint32_t id, int64_t from_ns, int64_t lo_ns,
                                int64_t hi_ns, int64_t step_ns, std::optional<uint64_t> after_seq,
                                std::vector<ReadAgg>& acc, uint64_t& bad_frames) {
  if (hi_ns <= lo_ns) return Status::Ok();
  int64_t lo, hi;
  if (after_seq) {
    lo = static_cast<int64_t>(*after_seq) + 1;
    hi = INT64_MAX;
  } else {
    // The seq span of the time range (I11), then one pass over the table
    // in rowid order.
    auto seqs = internal::SeqsBetween(c, lo_ns, hi_ns);
    if (!seqs.ok()) return seqs.status();
    if (!*seqs) return Status::Ok();
    lo = (*seqs)->first;
    hi = (*seqs)->second - 1;
  }
  sql::Stmt s(c, "SELECT realtime_ns, data FROM frames WHERE seq BETWEEN ?1 AND ?2");
  s.Bind(1, lo).Bind(2, hi);
  std::optional<int64_t> v;
  internal::FrameReader frames(c);
  while (s.Step()) {
    int64_t t = s.Int(0);
    if (t < lo_ns || t >= hi_ns || t < from_ns) continue;
    if (!frames.Find(s.Blob(1), id, v)) {
      ++bad_frames;  // (I14)
      continue;
    }
    if (!v) continue;
    auto& a = acc[static_cast<size_t>(BucketIndex(t, from_ns, step_ns))];
    a.Merge(t, 1, *v, *v, static_cast<double>(*v));
  }
  return s.failed() ? s.status() : Status::Ok();
}

Status RingStore::Impl::FoldTail(sql::Conn& c, uint32_t id, int64_t from_ns, int64_t hi_ns,
                                 int64_t step_ns, uint64_t after_seq, std::vector<ReadAgg>& acc,
                                 uint64_t& bad_frames) {
  // The most frames kept (about 8 bytes a value): the tail at the default
  // rollup_write_frames, with room for a faster frame rate.
  constexpr size_t kMaxTailFrames = 20'000;
  auto from_table = [&] {
    return FoldRaw(c, id, from_ns, from_ns, hi_ns, step_ns, after_seq, acc, bad_frames);
  };
  if (after_seq >= static_cast<uint64_t>(INT64_MAX)) return from_table();
  std::unique_lock lk(tail_.mu);
  if (tail_.after_seq != after_seq) {
    tail_.Reset();
    tail_.after_seq = after_seq;
    tail_.through_seq = static_cast<int64_t>(after_seq);
  }
  {
    sql::Stmt s(c, "SELECT seq, realtime_ns, data FROM frames WHERE seq > ?1 ORDER BY seq");
    s.Bind(1, tail_.through_seq);
    internal::FrameReader frames(c);
    std::vector<uint32_t> ids;
    while (s.Step()) {
      if (tail_.frames.size() >= kMaxTailFrames || tail_.values.size() >= UINT32_MAX / 2) {
        tail_.Reset();
        lk.unlock();
        return from_table();
      }
      TailFrame& f = tail_.frames.emplace_back();
      tail_.through_seq = s.Int(0);
      f.t_ns = s.Int(1);
      f.at = static_cast<uint32_t>(tail_.values.size());
      ids.clear();
      if (!frames.ForEach(s.Blob(2), [&](uint32_t k, int64_t v) {
            ids.push_back(k);
            tail_.values.push_back(v);
          })) {
        tail_.values.resize(f.at);  // (I14)
        continue;
      }
      if (tail_.id_sets.empty() || tail_.id_sets.back() != ids) tail_.id_sets.push_back(ids);
      f.ids = static_cast<uint32_t>(tail_.id_sets.size() - 1);
    }
    if (s.failed()) {
      tail_.Reset();
      return s.status();
    }
  }
  // Where `id` is in the frames' id list, found once per list.
  uint32_t list = kBadTailFrame;
  std::optional<size_t> pos;
  for (const TailFrame& f : tail_.frames) {
    if (f.t_ns >= hi_ns || f.t_ns < from_ns) continue;
    if (f.ids == kBadTailFrame) {
      ++bad_frames;  // (I14)
      continue;
    }
    if (f.ids != list) {
      list = f.ids;
      const auto& ids = tail_.id_sets[list];
      auto it = std::lower_bound(ids.begin(), ids.end(), id);
      pos.reset();
      if (it != ids.end() && *it == id) pos = static_cast<size_t>(it - ids.begin());
    }
    if (!pos) continue;
    const int64_t v = tail_.values[f.at + *pos];
    acc[static_cast<size_t>(BucketIndex(f.t_ns, from_ns, step_ns))].Merge(f.t_ns, 1, v, v,
                                                                          static_cast<double>(v));
  }
  return Status::Ok();
}

// (I15) For each of `ids`: the months, then the days and blocks between
// them, whose periods all start inside [from_ns, to_ns) and in one step of a
// range starting at from_ns: their span_stats rows, in time order, without
// overlap. None that holds `oldest` (the raw tier's start) strictly inside
// it. The spans are chosen once for every channel (a span's rows are
// written for each channel with rollup rows in it, with its spans row, and
// deleted with it); each run of spans of one level is then one range of
// each channel's rows, read by one cached statement (not a statement per
// set of channels: a client's choice of channels never adds one).
Result<std::vector<std::vector<RingStore::Impl::Aggregate>>> RingStore::Impl::StepAggregates(
    sql::Conn& c, const std::vector<uint32_t>& ids, int64_t from_ns, int64_t to_ns, int64_t step_ns,
    std::optional<int64_t> oldest) {
  std::vector<std::vector<Aggregate>> out(ids.size());
  const int64_t period = options_.rollup_period_ns;
  if (ids.empty() || step_ns < SpanLength(period, 1)) return out;  // no block fits in a step
  struct Chosen {
    int level = 0;
    int64_t t_ns = 0;
    int64_t end_ns = 0;
  };
  auto find = [&](int level, int64_t a, int64_t b) -> Result<std::vector<Chosen>> {
    const int64_t len = SpanLength(period, level);
    std::vector<Chosen> found;
    sql::Stmt s(c,
                "SELECT t_ns FROM spans WHERE level = ?1 AND t_ns >= ?2 AND t_ns < ?3 "
                "AND span_ns = ?4 ORDER BY t_ns");
    s.Bind(1, int64_t{level}).Bind(2, a).Bind(3, b).Bind(4, len);
    while (s.Step()) {
      const Chosen g{level, s.Int(0), AddSaturating(s.Int(0), len)};
      const int64_t last = SubSaturating(g.end_ns, period);  // its last period's start
      if (g.end_ns > b || last >= to_ns) continue;
      if (oldest && g.t_ns < *oldest && *oldest < g.end_ns) continue;
      if (BucketIndex(g.t_ns, from_ns, step_ns) != BucketIndex(last, from_ns, step_ns)) continue;
      found.push_back(g);
    }
    if (s.failed()) return s.status();
    return found;
  };
  // Up to the end of the last period starting before to_ns.
  std::vector<Chosen> chosen;
  if (Status e =
          CoarsestFirst(kTopSpanLevel, 1, from_ns, AddSaturating(to_ns, period), find, chosen);
      !e.ok()) {
    return e;
  }
  if (chosen.empty()) return out;
  std::vector<size_t> first(ids.size());  // the first position of each id in ids
  {
    std::unordered_map<uint32_t, size_t> seen;
    for (size_t i = 0; i < ids.size(); ++i) first[i] = seen.try_emplace(ids[i], i).first->second;
  }
  std::vector<int64_t> starts;
  for (size_t a = 0; a < chosen.size();) {
    size_t b = a + 1;
    while (b < chosen.size() && chosen[b].level == chosen[a].level) ++b;
    const int level = chosen[a].level;
    const int64_t len = SpanLength(period, level), lo = chosen[a].t_ns, hi = chosen[b - 1].end_ns;
    // The run's spans by start: a row of another start in [lo, hi) is not one of them.
    starts.clear();
    for (size_t k = a; k < b; ++k) starts.push_back(chosen[k].t_ns);
    Status e = internal::ForEachSpanChunk(c, level, lo, hi, [&](int64_t chunk) -> Status {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (first[i] != i) continue;
        sql::Stmt s(c,
                    "SELECT t_ns, count, min, max, sum FROM span_stats WHERE level = ?1 "
                    "AND chunk = ?2 AND channel = ?3 AND t_ns >= ?4 AND t_ns < ?5");
        s.Bind(1, int64_t{level}).Bind(2, chunk).Bind(3, int64_t{ids[i]}).Bind(4, lo).Bind(5, hi);
        while (s.Step()) {
          const int64_t t = s.Int(0);
          if (s.Int(1) <= 0 || !std::binary_search(starts.begin(), starts.end(), t)) continue;
          out[i].push_back(
              Aggregate{t, AddSaturating(t, len), s.Int(1), s.Int(2), s.Int(3), s.Double(4)});
        }
        if (s.failed()) return s.status();
      }
      return Status::Ok();
    });
    if (!e.ok()) return e;
    a = b;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (first[i] != i) out[i] = out[first[i]];
  }
  return out;
}

Result<std::vector<std::vector<Bucket>>> RingStore::Impl::DownsampleEach(
    const std::vector<std::string>& keys, int64_t from_ns, int64_t to_ns, int64_t step_ns,
    Tier tier, uint64_t* bad_frames, const std::vector<Row>* queued) {
  if (step_ns <= 0) return Status::InvalidArgument("step must be positive");
  std::vector<std::vector<Bucket>> out(keys.size());
  if (to_ns <= from_ns) return out;
  // Exact for any int64 bounds: the width of the range may exceed int64.
  const uint64_t steps = BucketCount(from_ns, to_ns, step_ns);
  if (steps > kMaxDownsampleSteps) {
    return Status::InvalidArgument("too many steps (" + std::to_string(steps) + " > " +
                                   std::to_string(kMaxDownsampleSteps) + ")");
  }
  // One read for every channel: the same snapshot, and the pages they share
  // read once.
  Lease l(*this);
  if (!l.ok()) return l.status();
  const bool coarse = tier == Tier::kRollup || step_ns >= options_.rollup_period_ns;
  std::optional<int64_t> oldest;  // the raw tier's start (kAuto)
  if (tier == Tier::kAuto) {
    auto o = OldestFrameNs(l.conn());
    if (!o.ok()) return o.status();
    oldest = *o;
  }
  // The newest frame this read's snapshot holds: queued rows after it are
  // folded in from their copy.
  int64_t committed_seq = INT64_MAX;
  if (queued && !queued->empty()) {
    sql::Stmt m(l.conn(), "SELECT coalesce(max(seq), -1) FROM frames");
    if (!m.Step()) return m.failed() ? m.status() : Status::Internal("no newest frame");
    committed_seq = m.Int(0);
  }
  uint64_t rollup_seq = 0;
  if (tier != Tier::kRaw && coarse) {
    sql::Stmt m(l.conn(), "SELECT value FROM meta WHERE key = 'rollup_seq'");
    if (m.Step()) rollup_seq = static_cast<uint64_t>(m.Int(0));
    if (m.failed()) return m.status();
  }
  uint64_t bad = 0;
  std::vector<uint32_t> ids;
  for (const auto& key : keys) {
    auto ch = FindChannel(l.conn(), key);
    if (!ch.ok()) return ch.status();
    ids.push_back(static_cast<uint32_t>(ch->id));
  }
  // (I15) Whole months, days and blocks whose periods all start in one
  // step, for every channel at once.
  std::vector<std::vector<Aggregate>> aggs(keys.size());
  if (tier != Tier::kRaw && coarse) {
    auto found = StepAggregates(l.conn(), ids, from_ns, to_ns, step_ns, oldest);
    if (!found.ok()) return found.status();
    aggs = std::move(*found);
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    auto b = DownsampleIn(l.conn(), ids[k], from_ns, to_ns, step_ns, tier, oldest, rollup_seq,
                          std::move(aggs[k]), bad, queued, committed_seq);
    if (!b.ok()) return b.status();
    out[k] = std::move(*b);
  }
  if (bad_frames) *bad_frames += bad;
  return out;
}

Result<std::vector<Bucket>> RingStore::Impl::DownsampleIn(
    sql::Conn& c, uint32_t id, int64_t from_ns, int64_t to_ns, int64_t step_ns, Tier tier,
    std::optional<int64_t> oldest, uint64_t rollup_seq, std::vector<Aggregate> aggs, uint64_t& bad,
    const std::vector<Row>* queued, int64_t committed_seq) {
  std::vector<ReadAgg> acc(static_cast<size_t>(BucketCount(from_ns, to_ns, step_ns)));
  const int64_t period = options_.rollup_period_ns;

  if (tier == Tier::kRaw) {
    if (Status s = FoldRaw(c, id, from_ns, from_ns, to_ns, step_ns, std::nullopt, acc, bad);
        !s.ok()) {
      return s;
    }
  } else {
    // kAuto at a step of at least one rollup period: the rollup rows, each in
    // the step that holds its period's start (a row is as fine as the step),
    // plus the raw frames after them. At a finer step: the rows only where
    // their frames were retired (the period ends at or before the raw tier's
    // start), and the raw frames everywhere else, at the asked step; `used`
    // holds the periods answered from rows, in time order. `oldest`: the raw
    // tier's start (kAuto).
    const bool coarse = tier == Tier::kRollup || step_ns >= period;
    std::vector<std::pair<int64_t, int64_t>> used;
    // (I15) `aggs`, whole months, days and blocks whose periods all start in
    // one step (StepAggregates; none at a finer step): their span_stats rows
    // stand for their rollup rows, which are read only in the stretches
    // between them. Not the one holding the raw tier's start (its first
    // value is worked out below, from the rows).
    for (const Aggregate& g : aggs) {
      auto& a = acc[static_cast<size_t>(BucketIndex(g.t_ns, from_ns, step_ns))];
      a.Merge(g.t_ns, g.count, g.min, g.max, g.sum);
    }
    auto chunks = internal::RollupChunks(c, id);
    if (!chunks.ok()) return chunks.status();
    // The stretches before, between and after them: [gap_from, gap_to).
    int64_t next_from = from_ns;
    for (size_t gi = 0; gi <= aggs.size(); ++gi) {
      const int64_t gap_from = next_from;
      const int64_t gap_to = gi < aggs.size() ? aggs[gi].t_ns : to_ns;
      if (gi < aggs.size()) next_from = aggs[gi].end_ns;
      if (gap_to <= gap_from) continue;
      Status failed;
      Status read = internal::ForEachRollupRow(
          c, *chunks, id, gap_from, gap_to, [&](uint32_t, const internal::RollupRow& r) {
            const int64_t t = r.t_ns;
            if (!failed.ok() || t < from_ns || t >= to_ns) return;  // checked before indexing
            int64_t first = t;  // the row's first value: its period's start
            const int64_t end = AddSaturating(t, period);
            if (!coarse) {
              if (oldest && end > *oldest) return;  // not retired: the raw frames answer
              used.emplace_back(t, end);
            } else if (oldest && t < *oldest && *oldest < end) {
              // The period the raw tier starts in: its first value is the
              // oldest frame where no row before it says frames were
              // retired (a daemon started mid-period).
              auto before = internal::RollupNeighbour(c, id, t, internal::RollupSide::kBefore);
              if (!before.ok()) {
                failed = before.status();
                return;
              }
              if (!*before) first = *oldest;
            }
            acc[static_cast<size_t>(BucketIndex(t, from_ns, step_ns))].Merge(
                first, r.count, r.min, r.max, static_cast<double>(r.sum));
          });
      if (!read.ok()) return read;
      if (!failed.ok()) return failed;
    }
    // A step whose first value lies in a day or block: the first of its
    // periods with a row for this channel.
    for (const Aggregate& g : aggs) {
      auto& a = acc[static_cast<size_t>(BucketIndex(g.t_ns, from_ns, step_ns))];
      if (a.first_ns != g.t_ns) continue;
      auto f = internal::RollupNeighbour(c, id, g.t_ns, internal::RollupSide::kAtOrAfter);
      if (!f.ok()) return f.status();
      if (*f && (*f)->t_ns < g.end_ns) a.first_ns = (*f)->t_ns;
    }
    if (coarse) {
      // Frames not yet in the rollup tier (the open period, and the closed
      // ones held back, I7).
      if (Status e = FoldTail(c, id, from_ns, to_ns, step_ns, rollup_seq, acc, bad); !e.ok()) {
        return e;
      }
    } else if (oldest) {
      // The raw frames from the raw tier's start on, between the retired
      // periods answered from rows.
      int64_t lo = std::max(from_ns, *oldest);
      for (const auto& [b, e] : used) {
        if (b > lo) {
          if (Status st = FoldRaw(c, id, from_ns, lo, b, step_ns, std::nullopt, acc, bad);
              !st.ok()) {
            return st;
          }
        }
        lo = std::max(lo, e);
      }
      if (Status st = FoldRaw(c, id, from_ns, lo, to_ns, step_ns, std::nullopt, acc, bad);
          !st.ok()) {
        return st;
      }
    }
  }
  // The queued frames after the snapshot's newest: raw frames, after every
  // committed one (the rollup tier's tail, I7).
  if (queued) {
    std::optional<int64_t> v;
    internal::FrameReader frames(c);
    for (const Row& r : *queued) {
      const int64_t t = r.realtime_ns;
      if (r.seq > static_cast<uint64_t>(INT64_MAX) ||
          static_cast<int64_t>(r.seq) <= committed_seq || t < from_ns || t >= to_ns) {
        continue;
      }
      if (!frames.Find(r.blob, id, v)) {
        ++bad;  // (I14)
        continue;
      }
      if (!v) continue;
      acc[static_cast<size_t>(BucketIndex(t, from_ns, step_ns))].Merge(t, 1, *v, *v,
                                                                       static_cast<double>(*v));
    }
  }
  std::vector<Bucket> out;
  for (size_t k = 0; k < acc.size(); ++k) {
    const auto& a = acc[k];
    if (a.count == 0) continue;
    // Below BucketCount: a start inside [from_ns, to_ns). Never dated before
    // the first value it holds.
    const int64_t t = std::max(BucketStart(from_ns, k, step_ns).value_or(to_ns), a.first_ns);
    out.push_back({t, a.min, a.sum / static_cast<double>(a.count), a.max, a.count});
  }
  return out;
}

Result<std::vector<Bucket>> RingStore::Impl::Downsample(const std::string& key, int64_t from_ns,
                                                        int64_t to_ns, int64_t step_ns, Tier tier,
                                                        uint64_t* bad_frames) {
  auto each = DownsampleEach({key}, from_ns, to_ns, step_ns, tier, bad_frames);
  if (!each.ok()) return each.status();
  return std::move(each->front());
}

Result<std::vector<Bucket>> RingStore::Impl::DownsampleWithQueued(const std::string& key,
                                                                  int64_t from_ns, int64_t to_ns,
                                                                  int64_t step_ns, Tier tier,
                                                                  uint64_t* bad_frames) {
  // Queued frames are stamped no earlier than the newest committed one
  // (I11): a range that ends by then holds none.
  if (to_ns <= committed_newest_.load(std::memory_order_acquire)) {
    return Downsample(key, from_ns, to_ns, step_ns, tier, bad_frames);
  }
  auto each = DownsampleEachWithQueued({key}, from_ns, to_ns, step_ns, tier, bad_frames);
  if (!each.ok()) return each.status();
  return std::move(each->front());
}

Result<std::vector<std::vector<Bucket>>> RingStore::Impl::DownsampleEachWithQueued(
    const std::vector<std::string>& keys, int64_t from_ns, int64_t to_ns, int64_t step_ns,
    Tier tier, uint64_t* bad_frames) {
  if (to_ns <= committed_newest_.load(std::memory_order_acquire)) {
    return DownsampleEach(keys, from_ns, to_ns, step_ns, tier, bad_frames);
  }
  std::vector<Row> queued;
  int64_t seq_below = 0;
  if (Status s = CopyQueued(from_ns, to_ns, 0, queued, seq_below); !s.ok()) return s;
  return DownsampleEach(keys, from_ns, to_ns, step_ns, tier, bad_frames, &queued);
}

namespace {

// A counter's value at t between its readings around it: `prev` at or
// before t, `next` after it. nullopt without both (but for a reading at t).
std::optional<double> Interpolate(const std::optional<Point>& prev,
                                  const std::optional<Point>& next, int64_t t) {
  if (prev && prev->t == t) return prev->v;
  if (!prev || !next) return std::nullopt;
  if (next->t <= prev->t) return next->v;
  // Spans in uint64: the points may be further apart than int64 reaches.
  double f =
      static_cast<double>(SpanNs(prev->t, t)) / static_cast<double>(SpanNs(prev->t, next->t));
  return prev->v + (next->v - prev->v) * f;
}

// The readings of counter `id` around t in the committed frames (the raw
// tier; the rollup tier, at period precision, older than it): `prev` at or
// before t, `next` after t.
Status CounterNeighbours(sql::Conn& c, int64_t period, uint32_t id, int64_t t,
                         std::optional<Point>& prev, std::optional<Point>& next) {
  auto oldest = internal::OldestFrameNs(c);
  if (!oldest.ok()) return oldest.status();
  const std::optional<int64_t> oldest_raw = *oldest;
  internal::FrameReader frames(c);
  // The first frame after t, for the raw neighbours on either side.
  std::optional<std::optional<int64_t>> past;
  auto first_past = [&]() -> Status {
    if (past) return Status::Ok();
    auto p = internal::FirstSeqAt(c, t, /*after=*/true);
    if (!p.ok()) return p.status();
    past = *p;
    return Status::Ok();
  };
  if (oldest_raw && t >= *oldest_raw) {
    if (Status e = first_past(); !e.ok()) return e;
    auto p = RawNeighbour(c, frames, id, *past, Side::kAtOrBefore);
    if (!p.ok()) return p.status();
    prev = *p;
    if (prev && prev->t == t) return Status::Ok();
    auto n = RawNeighbour(c, frames, id, *past, Side::kAfter);
    if (!n.ok()) return n.status();
    next = *n;
  }
  if (!prev) {
    // Older than the raw tier: the rollup tier, where a period's row is the
    // counter going from `min` at its start to `max` at its end.
    auto p = internal::RollupNeighbour(c, id, t, internal::RollupSide::kAtOrBefore);
    if (!p.ok()) return p.status();
    if (*p) {
      const int64_t tb = (*p)->t_ns;
      const int64_t te = AddSaturating(tb, period);  // the period's end
      if (t < te) {
        prev = Point{tb, static_cast<double>((*p)->min)};
        if (!next || next->t > te) next = Point{te, static_cast<double>((*p)->max)};
      } else {
        prev = Point{te, static_cast<double>((*p)->max)};
      }
    }
    if (prev && !next) {
      auto n = internal::RollupNeighbour(c, id, t, internal::RollupSide::kAfter);
      if (!n.ok()) return n.status();
      if (*n) next = Point{(*n)->t_ns, static_cast<double>((*n)->min)};
      if (!next) {
        if (Status e = first_past(); !e.ok()) return e;
        auto r = RawNeighbour(c, frames, id, *past, Side::kAfter);
        if (!r.ok()) return r.status();
        next = *r;
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::optional<double>> RingStore::Impl::CounterAtIn(sql::Conn& c, uint32_t id, int64_t t) {
  std::optional<Point> prev, next;
  if (Status s = CounterNeighbours(c, options_.rollup_period_ns, id, t, prev, next); !s.ok()) {
    return s;
  }
  return Interpolate(prev, next, t);
}

Result<std::optional<double>> RingStore::Impl::CounterAtWithQueued(const std::string& key,
                                                                   int64_t t_ns) {
  // Nothing queued, or readings on both sides of t committed: the store alone.
  if (next_seq() <= committed_next_seq()) return CounterAt(key, t_ns);
  if (t_ns < committed_newest_.load(std::memory_order_acquire)) {
    auto v = CounterAt(key, t_ns);
    if (!v.ok() || *v) return v;
  }
  // The writer takes its queue in (committing a new channel's row first),
  // then its rows' readings around t are found under the lock, and the
  // committed frames' are read afterwards, in a snapshot of their own. A row
  // committed meanwhile is read on both sides, as the same reading: the
  // queue's `prev` is the latest at or before t, and a committed `next` is
  // the earliest after t, so either side gives the same points.
  auto ingested = Submit(SyncOp::Kind::kIngest, {}, 0, 0);
  if (!ingested.ok()) return ingested.status();
  uint32_t id = 0;
  {
    Lease l(*this);
    if (!l.ok()) return l.status();
    auto found = FindCounter(l.conn(), key);
    if (!found.ok()) return found.status();
    id = *found;
  }
  std::optional<Point> qprev, qnext;
  {
    std::lock_guard lk(batch_mu_);
    std::optional<int64_t> v;
    for (const Row& r : batch_) {
      // (I14) a row that does not decode is passed over, as a stored one is
      if (!FindValue(r.blob, id, v) || !v) continue;
      const Point p{r.realtime_ns, static_cast<double>(*v)};
      if (r.realtime_ns > t_ns) {
        qnext = p;
        break;
      }
      qprev = p;
    }
  }
  if (options_.after_queued_copy) options_.after_queued_copy();
  Lease l(*this);
  if (!l.ok()) return l.status();
  std::optional<Point> prev, next;
  if (Status s = CounterNeighbours(l.conn(), options_.rollup_period_ns, id, t_ns, prev, next);
      !s.ok()) {
    return s;
  }
  // The nearest reading on either side, from the queue or the file.
  if (qprev && (!prev || qprev->t >= prev->t)) prev = qprev;
  if (qnext && (!next || qnext->t < next->t)) next = qnext;
  return Interpolate(prev, next, t_ns);
}

Result<std::optional<double>> RingStore::Impl::CounterAt(const std::string& key, int64_t t_ns) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto id = FindCounter(l.conn(), key);
  if (!id.ok()) return id.status();
  return CounterAtIn(l.conn(), *id, t_ns);
}

Result<std::optional<double>> RingStore::Impl::EnergyBetween(const std::string& key, int64_t t0,
                                                             int64_t t1) {
  if (t1 < t0) return Status::InvalidArgument("window ends before it starts");
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto id = FindCounter(l.conn(), key);
  if (!id.ok()) return id.status();
  auto a = CounterAtIn(l.conn(), *id, t0);
  if (!a.ok()) return a.status();
  auto b = CounterAtIn(l.conn(), *id, t1);
  if (!b.ok()) return b.status();
  if (!*a || !*b) return std::optional<double>();
  return std::optional<double>(**b - **a);
}

Result<std::map<std::string, int64_t>> RingStore::Impl::LastCounters() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto all = LoadChannels(l.conn());
  if (!all.ok()) return all.status();
  std::unordered_map<int64_t, const StoredChannel*> wanted;
  for (const auto& c : *all) {
    if (c.channel.Has(kFlagCounter)) wanted.emplace(c.store_id, &c);
  }
  std::map<std::string, int64_t> out;
  sql::Stmt s(l.conn(), "SELECT data FROM frames ORDER BY seq DESC LIMIT 100000");
  std::vector<std::pair<uint32_t, int64_t>> values;
  internal::FrameReader frames(l.conn());
  while (!wanted.empty() && s.Step()) {
    values.clear();
    // (I14) a blob that does not decode gives nothing, not its first values
    if (!frames.ForEach(s.Blob(0), [&](uint32_t id, int64_t v) { values.emplace_back(id, v); })) {
      continue;
    }
    for (const auto& [id, v] : values) {
      auto it = wanted.find(id);
      if (it == wanted.end()) continue;
      out.emplace(it->second->key, v);
      wanted.erase(it);
    }
  }
  if (s.failed()) return s.status();
  for (const auto& [id, c] : wanted) {
    auto r = internal::RollupNeighbour(l.conn(), id, INT64_MAX, internal::RollupSide::kAtOrBefore);
    if (!r.ok()) return r.status();
    if (*r) out.emplace(c->key, (*r)->max);
  }
  return out;
}

Result<std::vector<ClockJump>> RingStore::Impl::ClockJumps(int64_t from_ns, int64_t to_ns) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  std::vector<ClockJump> out;
  sql::Stmt s(l.conn(),
              "SELECT boottime_ns, realtime_ns, old_offset_ns, new_offset_ns FROM clock_jumps "
              "WHERE realtime_ns >= ?1 AND realtime_ns < ?2 ORDER BY rowid");
  s.Bind(1, from_ns).Bind(2, to_ns);
  while (s.Step()) out.push_back(ClockJump{s.Int(0), s.Int(1), s.Int(2), s.Int(3)});
  if (s.failed()) return s.status();
  return out;
}

Result<std::optional<int64_t>> RingStore::Impl::OldestNs() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto oldest_raw = OldestFrameNs(l.conn());
  if (!oldest_raw.ok()) return oldest_raw.status();
  auto oldest_rollup = internal::OldestRollupNs(l.conn());
  if (!oldest_rollup.ok()) return oldest_rollup.status();
  const std::optional<int64_t> raw = *oldest_raw, rollup = *oldest_rollup;
  // A rollup row is stamped with its period's start, before the first frame
  // folded into it: it only reaches further back than the raw tier when it
  // is from an earlier period.
  const int64_t period = options_.rollup_period_ns;
  if (raw && (!rollup || *rollup >= FloorToMultiple(*raw, period))) return raw;
  return rollup;
}

StoreStats RingStore::Impl::Counters() {
  StoreStats st;
  {
    std::lock_guard lk(stats_mu_);
    st = counters_;
  }
  {
    std::lock_guard lk(mu_);
    st.queued_frames = queued_frames_ + batched_frames_.load(std::memory_order_relaxed);
    st.writer_wakeups = writer_wakeups_;
    st.dropped_frames += queue_dropped_;
  }
  st.max_bytes = options_.max_bytes;
  st.db_bytes = FileSize(path_).value_or(0);
  st.wal_bytes = FileSize(path_ + "-wal").value_or(0);
  return st;
}

// One scalar subquery per bound: SQLite answers a lone min() or max() from
// the end of an index, but several aggregates in one SELECT scan the whole
// table (a week of 1 Hz frames: over 100 ms on the service's read worker,
// which every Summarize began with).
// Stored time follows seq (I11): the first and the last frame's.
const char* const RingStore::kFrameBoundsSql =
    "SELECT (SELECT realtime_ns FROM frames WHERE seq = (SELECT min(seq) FROM frames)), "
    "(SELECT realtime_ns FROM frames WHERE seq = (SELECT max(seq) FROM frames)), "
    "(SELECT min(seq) FROM frames), (SELECT max(seq) FROM frames)";

Result<StoreStats> RingStore::Impl::Stats() {
  StoreStats st = Counters();
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto& c = l.conn();
  for (auto [sql, field] : {std::pair{"PRAGMA page_size", &st.page_size},
                            std::pair{"PRAGMA page_count", &st.page_count},
                            std::pair{"PRAGMA freelist_count", &st.freelist_pages},
                            std::pair{"SELECT count(*) FROM channels", &st.channels},
                            std::pair{"SELECT count(*) FROM windows", &st.windows}}) {
    auto r = c.QueryInt(sql);
    if (!r.ok()) return r.status();
    *field = *r;
  }
  {
    sql::Stmt s(c, "SELECT key, value FROM meta WHERE key IN ('frames', 'rollup_rows')");
    while (s.Step()) (s.Text(0) == "frames" ? st.frames : st.rollup_rows) = s.Int(1);
    if (s.failed()) return s.status();
  }
  {
    sql::Stmt s(c, RingStore::kFrameBoundsSql);
    if (s.Step() && !s.IsNull(0)) {
      st.oldest_ns = s.Int(0);
      st.newest_ns = s.Int(1);
      st.first_seq = static_cast<uint64_t>(s.Int(2));
      st.last_seq = static_cast<uint64_t>(s.Int(3));
    }
    if (s.failed()) return s.status();
  }
  return st;
}

Status RingStore::Impl::IntegrityCheck() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  sql::Stmt s(l.conn(), "PRAGMA integrity_check");
  std::string problems;
  while (s.Step()) {
    std::string line = s.Text(0);
    if (line == "ok") continue;
    if (!problems.empty()) problems += "; ";
    problems += line;
  }
  if (s.failed()) return s.status();
  if (!problems.empty()) return Status::Internal("integrity_check: " + problems);
  return Status::Ok();
}

}  // namespace edgemon::store

namespace edgemon::store {
namespace {

Span SpanFromRow(const sql::Stmt& s, int level) {
  Span sp;
  sp.level = level;
  sp.t_ns = s.Int(0);
  sp.end_ns = AddSaturating(sp.t_ns, s.Int(1));
  internal::ReadSpanCounts(s, 2, sp);
  return sp;
}

}  // namespace

Result<std::vector<Span>> RingStore::Impl::Spans(int64_t from_ns, int64_t to_ns,
                                                 int64_t max_step_ns) {
  std::vector<Span> out;
  if (to_ns <= from_ns) return out;
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto& c = l.conn();
  int64_t rollup_seq = 0, spans_from = INT64_MAX;
  {
    sql::Stmt m(c, "SELECT key, value FROM meta WHERE key IN ('rollup_seq', 'spans_from_ns')");
    while (m.Step()) (m.Text(0) == "rollup_seq" ? rollup_seq : spans_from) = m.Int(1);
    if (m.failed()) return m.status();
  }
  // Frames are deleted as a seq prefix (I5, I6): a span whose first frame is
  // still held holds all of its frames.
  // Only a span that starts no earlier than the oldest frame's period (or
  // block, or day) can hold it as its first: the span rows before it are
  // not read (a year of retired periods would be half a million rows).
  std::optional<int64_t> min_seq, oldest_ns;
  {
    sql::Stmt m(c, "SELECT seq, realtime_ns FROM frames ORDER BY seq LIMIT 1");
    if (m.Step()) {
      min_seq = m.Int(0);
      oldest_ns = m.Int(1);
    }
    if (m.failed()) return m.status();
  }
  if (!min_seq) return out;
  // The open period (frames after rollup_seq) is in the writer's memory.
  int64_t hi = to_ns;
  {
    sql::Stmt o(c, "SELECT realtime_ns FROM frames WHERE seq > ?1 ORDER BY seq LIMIT 1");
    o.Bind(1, rollup_seq);
    if (o.Step()) hi = std::min(hi, o.Int(0));
    if (o.failed()) return o.status();
  }
  const int64_t period = options_.rollup_period_ns;
  auto ceil = [&](int64_t t) {
    const int64_t f = FloorToMultiple(t, period);
    return f < t ? AddSaturating(f, period) : f;
  };
  const int64_t lo = std::max(ceil(from_ns), ceil(spans_from));
  if (hi <= lo) return out;
  const char* const sql =
      "SELECT t_ns, span_ns, frames, first_seq, first_ns, last_seq, last_ns, holes, "
      "max_step_ns, bad FROM spans WHERE level = ?1 AND t_ns >= ?2 AND t_ns < ?3 ORDER BY t_ns";
  auto usable = [&](const sql::Stmt& s, const Span& sp, int64_t len) {
    return s.Int(1) == len && s.Int(9) == 0 && s.Int(2) > 0 &&
           sp.first_seq >= static_cast<uint64_t>(*min_seq) && sp.t_ns >= lo && sp.end_ns <= hi &&
           sp.end_ns > sp.t_ns && sp.max_step_ns <= max_step_ns;
  };
  // The usable spans of `level` in [a, b); days first, then blocks, then
  // periods in the stretches between them.
  auto find = [&](int level, int64_t a, int64_t b) -> Result<std::vector<Span>> {
    std::vector<Span> found;
    const int64_t len = SpanLength(period, level);
    sql::Stmt s(c, sql);
    s.Bind(1, int64_t{level}).Bind(2, std::max(a, FloorToMultiple(*oldest_ns, len))).Bind(3, b);
    while (s.Step()) {
      Span sp = SpanFromRow(s, level);
      if (usable(s, sp, len) && sp.end_ns <= b) found.push_back(sp);
    }
    if (s.failed()) return s.status();
    return found;
  };
  if (Status e = CoarsestFirst(kTopSpanLevel, 0, lo, hi, find, out); !e.ok()) return e;
  return out;
}

Result<std::vector<std::optional<SpanTotal>>> RingStore::Impl::SpanTotals(
    const std::vector<std::string>& keys, const std::vector<Span>& spans) {
  std::vector<std::optional<SpanTotal>> out(keys.size());
  if (spans.empty() || keys.empty()) return out;
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto& c = l.conn();
  auto all = LoadChannels(c);
  if (!all.ok()) return all.status();
  std::unordered_map<std::string_view, const StoredChannel*> by_key;
  for (const auto& sc : *all) by_key.emplace(sc.key, &sc);
  std::unordered_map<int64_t, size_t> index;  // store id -> key index
  std::string ids, clock_ids;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = by_key.find(keys[i]);
    if (it == by_key.end()) return Status::NotFound("unknown channel \"" + keys[i] + "\"");
    const int64_t id = it->second->store_id;
    index[id] = i;
    (ids.empty() ? ids : ids += ",") += std::to_string(id);
    if (IsClock(it->second->channel)) {
      (clock_ids.empty() ? clock_ids : clock_ids += ",") += std::to_string(id);
    }
  }
  std::vector<std::map<int64_t, uint64_t>> values(keys.size());
  auto chunks = internal::RollupChunks(c, 0);
  if (!chunks.ok()) return chunks.status();
  // Stretches of one level, in time order.
  for (size_t a = 0; a < spans.size();) {
    size_t b = a + 1;
    while (b < spans.size() && spans[b].level == spans[a].level) ++b;
    const int level = spans[a].level;
    const int64_t from = spans[a].t_ns, to = spans[b - 1].end_ns;
    // One channel's count, min, max, sum and first period over the stretch.
    struct Total {
      int64_t channel = 0, count = 0, min = 0, max = 0;
      double sum = 0;
      int64_t first_ns = 0;
    };
    std::vector<Total> totals;
    std::map<int64_t, Total> by_channel;
    auto fold = [&](int64_t ch, int64_t count, int64_t min, int64_t max, double sum, int64_t t) {
      if (!index.contains(ch)) return;
      auto [it, fresh] = by_channel.try_emplace(ch, Total{ch, count, min, max, sum, t});
      if (fresh) return;
      Total& g = it->second;
      g.count += count;
      g.min = std::min(g.min, min);
      g.max = std::max(g.max, max);
      g.sum += sum;
      g.first_ns = std::min(g.first_ns, t);
    };
    if (level == 0) {
      // Periods (I7): every channel's rows of the chunks when most channels
      // are asked, else a probe per chunk and channel asked.
      auto add = [&](uint32_t ch, const internal::RollupRow& r) {
        fold(ch, r.count, r.min, r.max, static_cast<double>(r.sum), r.t_ns);
      };
      if (index.size() * 4 >= all->size()) {
        if (Status e = internal::ForEachRollupRow(c, *chunks, 0, from, to, add); !e.ok()) return e;
      } else {
        for (const auto& [id, i] : index) {
          const auto ch = static_cast<uint32_t>(id);
          auto own = internal::RollupChunks(c, ch);
          if (!own.ok()) return own.status();
          if (Status e = internal::ForEachRollupRow(c, *own, ch, from, to, add); !e.ok()) return e;
        }
      }
    } else {
      const std::string stats =
          "SELECT channel, sum(count), min(min), max(max), total(sum), min(t_ns) "
          "FROM span_stats WHERE level = ?3 AND chunk = ?4 AND channel IN (" +
          ids + ") AND t_ns >= ?1 AND t_ns < ?2 GROUP BY channel";
      Status e = internal::ForEachSpanChunk(c, level, from, to, [&](int64_t chunk) -> Status {
        sql::Stmt s(c, stats.c_str());
        s.Bind(1, from).Bind(2, to).Bind(3, int64_t{level}).Bind(4, chunk);
        while (s.Step()) fold(s.Int(0), s.Int(1), s.Int(2), s.Int(3), s.Double(4), s.Int(5));
        return s.failed() ? s.status() : Status::Ok();
      });
      if (!e.ok()) return e;
    }
    for (const auto& [ch, t] : by_channel) totals.push_back(t);
    for (const Total& row : totals) {
      auto it = index.find(row.channel);
      if (it == index.end() || row.count <= 0) continue;
      auto& t = out[it->second];
      if (!t) {
        t = SpanTotal{};
        t->count = row.count;
        t->min = row.min;
        t->max = row.max;
        t->sum = row.sum;
        t->first_period_ns = row.first_ns;
        if (level > 0) {
          // The first period of the block or day with a value.
          auto f = internal::RollupNeighbour(c, static_cast<uint32_t>(row.channel), row.first_ns,
                                             internal::RollupSide::kAtOrAfter);
          if (!f.ok()) return f.status();
          if (*f && (*f)->t_ns < to) t->first_period_ns = (*f)->t_ns;
        }
      } else {
        t->count += row.count;
        t->min = std::min(t->min, row.min);
        t->max = std::max(t->max, row.max);
        t->sum += row.sum;
      }
    }
    if (!clock_ids.empty() && level == 0) {
      // The periods' values, packed by hour (I15).
      Status e = internal::ForEachPeriodValue(c, from, to, [&](const internal::PeriodValue& v) {
        auto it = index.find(int64_t{v.channel});
        if (it != index.end()) values[it->second][v.value] += v.count;
      });
      if (!e.ok()) return e;
    } else if (!clock_ids.empty()) {
      // Summed here, not by GROUP BY: its sort of every row cost more than
      // reading them (a partial hour of periods: 0.8 ms against 0.3).
      const std::string v =
          "SELECT channel, value, count FROM span_values WHERE level = ?3 AND channel IN (" +
          clock_ids + ") AND t_ns >= ?1 AND t_ns < ?2";
      sql::Stmt q(c, v.c_str());
      q.Bind(1, from).Bind(2, to).Bind(3, int64_t{level});
      while (q.Step()) {
        auto it = index.find(q.Int(0));
        if (it != index.end()) values[it->second][q.Int(1)] += static_cast<uint64_t>(q.Int(2));
      }
      if (q.failed()) return q.status();
    }
    a = b;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (out[i]) out[i]->values.assign(values[i].begin(), values[i].end());
  }
  return out;
}

}  // namespace edgemon::store
