// The rollup rows' key (I7): (chunk, channel, t_ns), chunk = the hour of
// t_ns. One write of held periods goes into the table's newest hour instead
// of into every channel's own stretch of it, and one channel's rows are
// read a chunk at a time.
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store::internal {

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
  const char* sql = id == 0 ? "SELECT channel, t_ns, count, min, max, sum FROM rollup "
                              "WHERE chunk = ?1 AND t_ns >= ?3 AND t_ns < ?4"
                            : "SELECT channel, t_ns, count, min, max, sum FROM rollup "
                              "WHERE chunk = ?1 AND channel = ?2 AND t_ns >= ?3 AND t_ns < ?4";
  for (int64_t k = lo; k <= hi;) {
    bool any = false;
    {
      sql::Stmt s(c, sql);
      s.Bind(1, k).Bind(3, from_ns).Bind(4, to_ns);
      if (id != 0) s.Bind(2, int64_t{id});
      while (s.Step()) {
        any = true;
        fn(static_cast<uint32_t>(s.Int(0)),
           RollupRow{s.Int(1), s.Int(2), s.Int(3), s.Int(4), s.Int(5)});
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
  const char* sql = nullptr;
  switch (side) {
    case RollupSide::kBefore:
      sql =
          "SELECT t_ns, count, min, max, sum FROM rollup WHERE chunk = ?1 AND channel = ?2 "
          "AND t_ns < ?3 ORDER BY t_ns DESC LIMIT 1";
      break;
    case RollupSide::kAtOrBefore:
      sql =
          "SELECT t_ns, count, min, max, sum FROM rollup WHERE chunk = ?1 AND channel = ?2 "
          "AND t_ns <= ?3 ORDER BY t_ns DESC LIMIT 1";
      break;
    case RollupSide::kAtOrAfter:
      sql =
          "SELECT t_ns, count, min, max, sum FROM rollup WHERE chunk = ?1 AND channel = ?2 "
          "AND t_ns >= ?3 ORDER BY t_ns LIMIT 1";
      break;
    case RollupSide::kAfter:
      sql =
          "SELECT t_ns, count, min, max, sum FROM rollup WHERE chunk = ?1 AND channel = ?2 "
          "AND t_ns > ?3 ORDER BY t_ns LIMIT 1";
      break;
  }
  const bool back = side == RollupSide::kBefore || side == RollupSide::kAtOrBefore;
  // Chunks from t's own towards the end of the table in that direction.
  int64_t k = std::clamp(RollupChunk(t), (*rows)->first, (*rows)->last);
  if (back && RollupChunk(t) < (*rows)->first) return found;
  if (!back && RollupChunk(t) > (*rows)->last) return found;
  for (;;) {
    sql::Stmt s(c, sql);
    s.Bind(1, k).Bind(2, int64_t{id}).Bind(3, t);
    if (s.Step()) {
      found = RollupRow{s.Int(0), s.Int(1), s.Int(2), s.Int(3), s.Int(4)};
      return found;
    }
    if (s.failed()) return s.status();
    if (back ? k <= (*rows)->first : k >= (*rows)->last) return found;
    auto next = NextChunk(c, k, !back);
    if (!next.ok()) return next.status();
    if (!*next) return found;
    k = **next;
  }
}

Result<std::optional<int64_t>> OldestRollupNs(sql::Conn& c) {
  sql::Stmt s(c, "SELECT min(t_ns) FROM rollup WHERE chunk = (SELECT min(chunk) FROM rollup)");
  std::optional<int64_t> oldest;
  if (s.Step() && !s.IsNull(0)) oldest = s.Int(0);
  if (s.failed()) return s.status();
  return oldest;
}

}  // namespace edgemon::store::internal
