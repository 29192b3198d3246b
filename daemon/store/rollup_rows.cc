// The rollup rows' key (I7): (chunk, channel, t_ns), chunk = the
// 15-minute stretch of t_ns. One write of held periods appends its rows
// at the end of the table instead of into every channel's own stretch of
// it, and one channel's rows are read a chunk at a time.
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store::internal {

Result<std::optional<ChunkRange>> RollupChunks(sql::Conn& c) {
  sql::Stmt s(c, "SELECT (SELECT min(chunk) FROM rollup), (SELECT max(chunk) FROM rollup)");
  std::optional<ChunkRange> r;
  if (s.Step() && !s.IsNull(0) && !s.IsNull(1)) r = ChunkRange{s.Int(0), s.Int(1)};
  if (s.failed()) return s.status();
  return r;
}

bool BindRollupChunks(sql::Stmt& s, const std::optional<ChunkRange>& rows, int64_t from_ns,
                      int64_t to_ns) {
  if (!rows || to_ns <= from_ns) return false;
  const int64_t lo = std::max(RollupChunk(from_ns), rows->first);
  const int64_t hi = std::min(RollupChunk(to_ns - 1), rows->last);
  if (hi < lo) return false;
  s.Bind(kRollupChunkFrom, lo).Bind(kRollupChunkTo, hi);
  return true;
}

Result<std::optional<RollupRow>> RollupNeighbour(sql::Conn& c, uint32_t id, int64_t t,
                                                 RollupSide side) {
  auto rows = RollupChunks(c);
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
    k += back ? -1 : 1;
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
