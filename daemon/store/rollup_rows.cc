// The rollup rows' key (I7): (chunk, channel), chunk = the hour of the
// periods' starts, each row a chunk's periods of one channel packed into a
// blob. One write of held periods goes into the table's newest hour instead
// of into every channel's own stretch of it, and one channel's periods are
// read a chunk at a time.
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store::internal {

namespace {

using codec_internal::PutVarint;
using codec_internal::ReadVarint;
using codec_internal::UnZigZag;
using codec_internal::ZigZag;

constexpr uint8_t kPackVersion = 1;

}  // namespace

char* PackedStarts::PutHeader(char* p, uint8_t version, uint64_t periods) const {
  *p++ = static_cast<char>(version);
  p = PutVarint(unit_, p);
  return PutVarint(periods, p);
}

char* PackedStarts::PutStart(char* p, int64_t t_ns) {
  const uint64_t off = static_cast<uint64_t>(t_ns) - base_;
  p = PutVarint((off - at_) / unit_, p);
  at_ = off;
  return p;
}

bool PackedStarts::ReadHeader(const uint8_t*& p, const uint8_t* end, uint8_t version,
                              uint64_t min_period_bytes, uint64_t& periods) {
  return p != end && *p++ == version && ReadVarint(p, end, unit_) && unit_ != 0 &&
         ReadVarint(p, end, periods) && periods != 0 &&
         periods <= static_cast<uint64_t>(end - p) / min_period_bytes;
}

bool PackedStarts::ReadStart(const uint8_t*& p, const uint8_t* end, int64_t& t_ns) {
  uint64_t step = 0;
  if (!ReadVarint(p, end, step)) return false;
  // Starts rise within the chunk.
  if ((!first_ && step == 0) || step > (static_cast<uint64_t>(kRollupChunkNs) - 1 - at_) / unit_) {
    return false;
  }
  first_ = false;
  at_ += step * unit_;
  t_ns = static_cast<int64_t>(base_ + at_);
  return RollupChunk(t_ns) == chunk_;  // else past either end of int64
}

// Layout: PackedStarts' opening, then per period: its start, varint count,
// zigzag min - the previous period's min (0 for the first), varint max -
// min, zigzag sum - count * min. The differences wrap in uint64, so every
// int64 value round-trips.
std::string PackRollup(int64_t chunk, const std::vector<RollupRow>& rows) {
  PackedStarts starts(chunk, rows);
  std::string out(1 + 10 * (2 + 5 * rows.size()), '\0');
  char* p = starts.PutHeader(out.data(), kPackVersion, rows.size());
  uint64_t min = 0;
  for (const auto& r : rows) {
    const auto count = static_cast<uint64_t>(r.count), lo = static_cast<uint64_t>(r.min);
    p = starts.PutStart(p, r.t_ns);
    p = PutVarint(count, p);
    p = PutVarint(ZigZag(static_cast<int64_t>(lo - min)), p);
    p = PutVarint(static_cast<uint64_t>(r.max) - lo, p);
    p = PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.sum) - count * lo)), p);
    min = lo;
  }
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

bool UnpackRollup(int64_t chunk, std::string_view data, std::vector<RollupRow>& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  const uint8_t* end = p + data.size();
  PackedStarts starts(chunk);
  uint64_t n = 0;
  if (!starts.ReadHeader(p, end, kPackVersion, 5, n)) return false;
  const size_t had = out.size();
  uint64_t min = 0;
  for (uint64_t i = 0; i < n; ++i) {
    int64_t t = 0;
    uint64_t count = 0, lo = 0, width = 0, extra = 0;
    // A count is a positive int64.
    if (!starts.ReadStart(p, end, t) || !ReadVarint(p, end, count) || !ReadVarint(p, end, lo) ||
        !ReadVarint(p, end, width) || !ReadVarint(p, end, extra) || count == 0 ||
        count > static_cast<uint64_t>(INT64_MAX)) {
      out.resize(had);
      return false;
    }
    min += static_cast<uint64_t>(UnZigZag(lo));
    out.push_back(
        RollupRow{t, static_cast<int64_t>(count), static_cast<int64_t>(min),
                  static_cast<int64_t>(min + width),
                  static_cast<int64_t>(count * min + static_cast<uint64_t>(UnZigZag(extra)))});
  }
  if (p != end) {
    out.resize(had);
    return false;
  }
  return true;
}

Status PutRollupRow(sql::Conn& c, const char* table, int64_t chunk, int64_t channel,
                    const std::vector<RollupRow>& periods) {
  const std::string sql = std::string("INSERT OR REPLACE INTO ") + table +
                          "(chunk, channel, periods, first_ns, last_ns, data) "
                          "VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
  sql::Stmt s(c, sql.c_str());
  s.Bind(1, chunk).Bind(2, channel).Bind(3, static_cast<int64_t>(periods.size()));
  s.Bind(4, periods.front().t_ns).Bind(5, periods.back().t_ns);
  return s.BindBlob(6, PackRollup(chunk, periods)).Run();
}

Result<std::optional<ChunkRange>> RollupChunks(sql::Conn& c, uint32_t id) {
  std::optional<ChunkRange> r;
  if (id == 0) {
    sql::Stmt s(c, "SELECT (SELECT min(chunk) FROM rollup), (SELECT max(chunk) FROM rollup)");
    if (s.Step() && !s.IsNull(0) && !s.IsNull(1)) r = ChunkRange{s.Int(0), s.Int(1)};
    if (s.failed()) return s.status();
    return r;
  }
  sql::Stmt s(c, "SELECT first_ns, last_ns FROM rollup_channels WHERE channel = ?1");
  s.Bind(1, int64_t{id});
  if (s.Step()) r = ChunkRange{RollupChunk(s.Int(0)), RollupChunk(s.Int(1))};
  if (s.failed()) return s.status();
  return r;
}

// The chunk after (or before) k that holds a row of any channel; nullopt
// when none does. A walk that found nothing in k jumps there, so it never
// steps through hours that no row falls in (a clock set from 1970 leaves
// decades between two rows).
Result<std::optional<int64_t>> NextChunk(sql::Conn& c, int64_t k, bool up) {
  sql::Stmt s(c, up ? "SELECT min(chunk) FROM rollup WHERE chunk > ?1"
                    : "SELECT max(chunk) FROM rollup WHERE chunk < ?1");
  s.Bind(1, k);
  std::optional<int64_t> next;
  if (s.Step() && !s.IsNull(0)) next = s.Int(0);
  if (s.failed()) return s.status();
  return next;
}

Status ForEachSpanChunk(sql::Conn& c, int level, int64_t from_ns, int64_t to_ns,
                        const std::function<Status(int64_t)>& fn) {
  if (to_ns <= from_ns) return Status::Ok();
  const int64_t lo = SpanChunk(level, from_ns), hi = SpanChunk(level, to_ns - 1);
  if (hi - lo < 4) {  // a probe of each costs what finding the ones with rows would
    for (int64_t k = lo;; ++k) {
      if (Status e = fn(k); !e.ok()) return e;
      if (k == hi) return Status::Ok();
    }
  }
  for (int64_t k = lo;;) {
    std::optional<int64_t> next;
    {
      sql::Stmt s(c,
                  "SELECT chunk FROM span_stats WHERE level = ?1 AND chunk >= ?2 AND chunk <= ?3 "
                  "ORDER BY level, chunk LIMIT 1");
      s.Bind(1, int64_t{level}).Bind(2, k).Bind(3, hi);
      if (s.Step()) next = s.Int(0);
      if (s.failed()) return s.status();
    }
    if (!next) return Status::Ok();
    if (Status e = fn(*next); !e.ok()) return e;
    if (*next >= hi) return Status::Ok();
    k = *next + 1;
  }
}

Status ForEachRollupRow(sql::Conn& c, const std::optional<ChunkRange>& rows, uint32_t id,
                        int64_t from_ns, int64_t to_ns,
                        const std::function<void(uint32_t, const RollupRow&)>& fn) {
  if (!rows || to_ns <= from_ns) return Status::Ok();
  const int64_t lo = std::max(RollupChunk(from_ns), rows->first);
  const int64_t hi = std::min(RollupChunk(to_ns - 1), rows->last);
  const char* sql = id == 0 ? "SELECT channel, first_ns, last_ns, data FROM rollup "
                              "WHERE chunk = ?1"
                            : "SELECT channel, first_ns, last_ns, data FROM rollup "
                              "WHERE chunk = ?1 AND channel = ?2";
  std::vector<RollupRow> periods;
  for (int64_t k = lo; k <= hi;) {
    bool any = false;
    {
      sql::Stmt s(c, sql);
      s.Bind(1, k);
      if (id != 0) s.Bind(2, int64_t{id});
      while (s.Step()) {
        any = true;
        if (s.Int(2) < from_ns || s.Int(1) >= to_ns) continue;
        periods.clear();
        if (!UnpackRollup(k, s.Blob(3), periods)) continue;
        const auto ch = static_cast<uint32_t>(s.Int(0));
        for (const auto& r : periods) {
          if (r.t_ns >= from_ns && r.t_ns < to_ns) fn(ch, r);
        }
      }
      if (s.failed()) return s.status();
    }
    if (any) {
      ++k;
      continue;
    }
    auto next = NextChunk(c, k, true);
    if (!next.ok()) return next.status();
    if (!*next) break;
    k = **next;
  }
  return Status::Ok();
}

Result<std::optional<RollupRow>> RollupNeighbour(sql::Conn& c, uint32_t id, int64_t t,
                                                 RollupSide side) {
  auto rows = RollupChunks(c, id);
  if (!rows.ok()) return rows.status();
  std::optional<RollupRow> found;
  if (!*rows) return found;
  const bool back = side == RollupSide::kBefore || side == RollupSide::kAtOrBefore;
  // Whether a period starting at `at` is on the wanted side of t.
  auto wanted = [side, t](int64_t at) {
    switch (side) {
      case RollupSide::kBefore:
        return at < t;
      case RollupSide::kAtOrBefore:
        return at <= t;
      case RollupSide::kAtOrAfter:
        return at >= t;
      case RollupSide::kAfter:
        return at > t;
    }
    return false;
  };
  // Chunks from t's own towards the end of the table in that direction.
  int64_t k = std::clamp(RollupChunk(t), (*rows)->first, (*rows)->last);
  if (back && RollupChunk(t) < (*rows)->first) return found;
  if (!back && RollupChunk(t) > (*rows)->last) return found;
  std::vector<RollupRow> periods;
  for (;;) {
    {
      sql::Stmt s(c, "SELECT data FROM rollup WHERE chunk = ?1 AND channel = ?2");
      s.Bind(1, k).Bind(2, int64_t{id});
      periods.clear();
      if (s.Step() && !UnpackRollup(k, s.Blob(0), periods)) periods.clear();
      if (s.failed()) return s.status();
    }
    if (back) {
      for (auto it = periods.rbegin(); it != periods.rend(); ++it) {
        if (wanted(it->t_ns)) return std::optional<RollupRow>(*it);
      }
    } else {
      for (const auto& r : periods) {
        if (wanted(r.t_ns)) return std::optional<RollupRow>(r);
      }
    }
    if (back ? k <= (*rows)->first : k >= (*rows)->last) return found;
    auto next = NextChunk(c, k, !back);
    if (!next.ok()) return next.status();
    if (!*next) return found;
    k = **next;
  }
}

Result<std::optional<int64_t>> OldestRollupNs(sql::Conn& c) {
  sql::Stmt s(c, "SELECT min(first_ns) FROM rollup WHERE chunk = (SELECT min(chunk) FROM rollup)");
  std::optional<int64_t> oldest;
  if (s.Step() && !s.IsNull(0)) oldest = s.Int(0);
  if (s.failed()) return s.status();
  return oldest;
}

}  // namespace edgemon::store::internal
