// The store's schema: the migrations that create and upgrade it (I10:
// application_id + user_version), the connection set-up around them (WAL,
// page size, the WAL bound of I6), and channel descriptions <-> channels
// rows.
#include <nlohmann/json.hpp>

#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {
namespace internal {

std::string TripsJson(const std::vector<TripPoint>& trips) {
  auto j = nlohmann::json::array();
  for (const auto& t : trips) j.push_back({t.type, t.temp_mc});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string AttrsJson(const std::vector<std::pair<std::string, std::string>>& attrs) {
  auto j = nlohmann::json::array();
  for (const auto& [k, v] : attrs) j.push_back({k, v});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

std::vector<TripPoint> TripsFromJson(const std::string& text) {
  std::vector<TripPoint> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number_integer()) {
      out.push_back({e[0].get<std::string>(), e[1].get<int64_t>()});
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> AttrsFromJson(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      out.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    }
  }
  return out;
}

}  // namespace

StoredChannel ChannelFromRow(const sql::Stmt& s) {
  StoredChannel c;
  c.store_id = s.Int(0);
  c.key = s.Text(1);
  c.channel.kind = KindFromString(s.Text(2)).value_or(Kind::kBoard);
  c.channel.name = s.Text(3);
  c.channel.field = FieldFromString(s.Text(4)).value_or(Field::kLoad);
  c.channel.unit = UnitOf(c.channel.field);
  c.channel.device = s.Text(6);
  c.channel.parent = s.Text(7);
  c.channel.flags = static_cast<uint32_t>(s.Int(8));
  c.channel.min = s.OptInt(9);
  c.channel.max = s.OptInt(10);
  c.channel.crit = s.OptInt(11);
  c.channel.trips = TripsFromJson(s.Text(12));
  c.channel.attrs = AttrsFromJson(s.Text(13));
  c.first_seen_ns = s.Int(14);
  return c;
}

}  // namespace internal

namespace {

// Each migration takes the schema from version i to i + 1, inside one
// transaction together with the user_version bump.
const char* const kMigrations[] = {
    // 0 -> 1: the initial schema.
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE channels("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL UNIQUE,"
    "  kind TEXT NOT NULL, name TEXT NOT NULL, field TEXT NOT NULL, unit TEXT NOT NULL,"
    "  device TEXT NOT NULL, parent TEXT NOT NULL, flags INTEGER NOT NULL,"
    "  min INTEGER, max INTEGER, crit INTEGER,"
    "  trips TEXT NOT NULL, attrs TEXT NOT NULL,"
    "  first_seen_ns INTEGER NOT NULL);"
    "CREATE TABLE frames("
    "  seq INTEGER PRIMARY KEY,"
    "  boottime_ns INTEGER NOT NULL,"
    "  realtime_ns INTEGER NOT NULL,"
    "  data BLOB NOT NULL);"
    "CREATE INDEX frames_by_time ON frames(realtime_ns);"
    "CREATE TABLE rollup("
    "  channel INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT NULL, sum INTEGER NOT NULL,"
    "  PRIMARY KEY(channel, t_ns)) WITHOUT ROWID;"
    "CREATE TABLE windows("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  label TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER);"
    "CREATE INDEX windows_by_start ON windows(start_ns);"
    "INSERT INTO meta(key, value) VALUES('frames', 0), ('rollup_rows', 0), ('rollup_seq', 0);",
    // 1 -> 2: wall-clock steps seen while writing (I11).
    "CREATE TABLE clock_jumps("
    "  boottime_ns INTEGER NOT NULL, realtime_ns INTEGER NOT NULL,"
    "  old_offset_ns INTEGER NOT NULL, new_offset_ns INTEGER NOT NULL);"
    // Boot segments of the frames held (I5): found once here, then kept by
    // the writer.
    "CREATE TABLE boots(first_seq INTEGER PRIMARY KEY);"
    "INSERT INTO boots(first_seq) SELECT seq FROM (SELECT seq, boottime_ns, "
    "  lag(boottime_ns) OVER (ORDER BY seq) AS prev FROM frames) "
    "  WHERE prev IS NULL OR boottime_ns < prev;",
    // 2 -> 3: window leases and abandoned windows (I12).
    ("ALTER TABLE windows ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE windows ADD COLUMN lease_ns INTEGER;"),
    // 3 -> 4: who opened each window (principal.h); '' for older rows.
    "ALTER TABLE windows ADD COLUMN owner TEXT NOT NULL DEFAULT '';",
    // 4 -> 5: span aggregates (I15). Periods up to the newest frame held
    // were folded without them: spans_from_ns starts after it.
    "CREATE TABLE spans("
    "  level INTEGER NOT NULL, t_ns INTEGER NOT NULL, span_ns INTEGER NOT NULL,"
    "  frames INTEGER NOT NULL, first_seq INTEGER NOT NULL, first_ns INTEGER NOT NULL,"
    "  last_seq INTEGER NOT NULL, last_ns INTEGER NOT NULL, holes INTEGER NOT NULL,"
    "  max_step_ns INTEGER NOT NULL, bad INTEGER NOT NULL,"
    "  PRIMARY KEY(level, t_ns)) WITHOUT ROWID;"
    "CREATE TABLE span_stats("
    "  level INTEGER NOT NULL, channel INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT NULL, sum REAL NOT NULL,"
    "  PRIMARY KEY(level, channel, t_ns)) WITHOUT ROWID;"
    "CREATE TABLE span_values("
    "  level INTEGER NOT NULL, channel INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  value INTEGER NOT NULL, count INTEGER NOT NULL,"
    "  PRIMARY KEY(level, channel, t_ns, value)) WITHOUT ROWID;"
    "INSERT INTO meta(key, value) VALUES('spans_from_ns', "
    "  coalesce((SELECT min(max(realtime_ns), 9223372036854775806) + 1 FROM frames),"
    "  -9223372036854775807 - 1)),"
    "  ('blocks_through_ns', -9223372036854775807 - 1);",
    // 5 -> 6: push destinations' cursors (I16).
    "CREATE TABLE push_cursors("
    "  destination TEXT PRIMARY KEY, seq INTEGER NOT NULL, realtime_ns INTEGER NOT NULL,"
    "  window_end_ns INTEGER NOT NULL, window_id INTEGER NOT NULL,"
    "  updated_ns INTEGER NOT NULL) WITHOUT ROWID;",
    // 6 -> 7: what a run's window carries once ended (WindowResult); NULL
    // and '' for older rows.
    ("ALTER TABLE windows ADD COLUMN items REAL;"
     "ALTER TABLE windows ADD COLUMN exit_status INTEGER;"
     "ALTER TABLE windows ADD COLUMN input_rail TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE windows ADD COLUMN input_energy_mj REAL;"),
    // 7 -> 8: rail samples taken at a boosted rate (rail_samples.h).
    "CREATE TABLE rail_chunks("
    "  id INTEGER PRIMARY KEY, t_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    "  count INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE INDEX rail_chunks_by_time ON rail_chunks(t_ns);",
    // 8 -> 9: rollup rows kept by (chunk, channel, t_ns) (I7). The rows move
    // into it a day per transaction (MoveRollupDay), then it replaces rollup.
    "CREATE TABLE IF NOT EXISTS rollup_by_chunk("
    "  chunk INTEGER NOT NULL, channel INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT NULL, sum INTEGER NOT NULL,"
    "  PRIMARY KEY(chunk, channel, t_ns)) WITHOUT ROWID;"
    // The hours each channel's rows span, so that a channel's chunks are
    // walked only where it can have rows (filled once the rows have moved).
    "CREATE TABLE IF NOT EXISTS rollup_channels("
    "  channel INTEGER PRIMARY KEY, first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL);",
    // 9 -> 10: the bases frames are written against (I17); frames written
    // before stay version 1.
    "CREATE TABLE IF NOT EXISTS frame_bases(id INTEGER PRIMARY KEY, data BLOB NOT NULL);",
    // 10 -> 11: clock values keyed by level and time first (I15), so that
    // a period's values for every clock are written together. The rows
    // move a day per transaction (MoveSpanDay), then replace the old table.
    "CREATE TABLE IF NOT EXISTS span_values_by_time("
    "  level INTEGER NOT NULL, channel INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  value INTEGER NOT NULL, count INTEGER NOT NULL,"
    "  PRIMARY KEY(level, t_ns, channel, value)) WITHOUT ROWID;",
    // 11 -> 12: no index on the frames' time: stored time follows seq (I11),
    // so a time is found by bisecting the seqs, and a commit no longer
    // rewrites the index's last pages.
    "DROP INDEX IF EXISTS frames_by_time;",
    // 12 -> 13: block rows kept by (level, day, channel, t_ns) (I15), so
    // that an hour's rows of every channel go into the day's few pages
    // instead of a page of each channel's; days keep chunk 0 (by channel).
    // A copy in one transaction: the table is a sixtieth of the rollup's.
    "CREATE TABLE span_stats_by_chunk("
    "  level INTEGER NOT NULL, chunk INTEGER NOT NULL, channel INTEGER NOT NULL,"
    "  t_ns INTEGER NOT NULL,"
    "  count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT NULL, sum REAL NOT NULL,"
    "  PRIMARY KEY(level, chunk, channel, t_ns)) WITHOUT ROWID;"
    "INSERT INTO span_stats_by_chunk(level, chunk, channel, t_ns, count, min, max, sum) "
    "  SELECT level, CASE WHEN level <> 1 THEN 0 WHEN t_ns >= 0 THEN t_ns / 86400000000000 "
    "  ELSE -((-(t_ns + 1)) / 86400000000000) - 1 END, channel, t_ns, count, min, max, sum "
    "  FROM span_stats ORDER BY 1, 2, 3, 4;"
    "DROP TABLE span_stats;"
    "ALTER TABLE span_stats_by_chunk RENAME TO span_stats;",
    // 13 -> 14: a chunk's periods of one channel packed into one row (I7),
    // a few bytes a period instead of a row of about 30. The rows move a
    // day of chunks per transaction (PackRollupDay), then it replaces rollup.
    "CREATE TABLE IF NOT EXISTS rollup_packed("
    "  chunk INTEGER NOT NULL, channel INTEGER NOT NULL, periods INTEGER NOT NULL,"
    "  first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL, data BLOB NOT NULL,"
    "  PRIMARY KEY(chunk, channel)) WITHOUT ROWID;",
    // 14 -> 15: the periods' clock values, an hour of every clock's in one
    // packed row (I15), instead of a row per period, clock and value. The
    // level-0 rows written before stay in span_values until retention
    // deletes them; reads take both (ForEachPeriodValue).
    "CREATE TABLE period_values(chunk INTEGER PRIMARY KEY, data BLOB NOT NULL);",
    // 15 -> 16: frames written in blocks (I18, frame_codec.h versions 3 and
    // 4). The tables do not change; the version keeps an older edgemond,
    // which would read a block's frames as bad ones, from opening the store.
    "SELECT 1;",
};
static_assert(internal::kSpanChunkNs == 86'400'000'000'000);
static_assert(std::size(kMigrations) == kSchemaVersion);
// After the migration to 9 has moved the rows.
const char* const kRollupByChunkDone =
    "DROP TABLE rollup; ALTER TABLE rollup_by_chunk RENAME TO rollup;";

// After the migration to 11 has moved the rows.
const char* const kSpansByTimeDone =
    "DROP TABLE span_values; ALTER TABLE span_values_by_time RENAME TO span_values;";

// After the migration to 14 has packed the rows.
const char* const kRollupPackedDone =
    "DROP TABLE rollup; ALTER TABLE rollup_packed RENAME TO rollup;";

// floor(t_ns / kRollupChunkNs) in SQL (its / truncates toward zero), for
// every int64 t_ns.
#define EDGEMON_CHUNK_OF_T                              \
  "(CASE WHEN r.t_ns >= 0 THEN r.t_ns / 3600000000000 " \
  "ELSE -((-(r.t_ns + 1)) / 3600000000000) - 1 END)"
static_assert(internal::kRollupChunkNs == 3'600'000'000'000);

// (8 -> 9) Moves the oldest day of the old rollup table's rows into
// rollup_by_chunk, in the new key's order, and deletes them from the old
// table; false when none was left (after moving the rows of channels
// without a channels row, if any). The file grows by about a day of rows,
// not by a second copy of the table, so a store at its size cap (I6) can
// migrate; each day is a transaction of its own, so the WAL stays within
// its checkpoint interval.
Result<bool> MoveRollupDay(sql::Conn& w) {
  constexpr int64_t kDayNs = 86'400'000'000'000;
  std::optional<int64_t> first;
  {
    sql::Stmt s(w,
                "SELECT min((SELECT min(t_ns) FROM rollup WHERE channel = c.id)) "
                "FROM channels c");
    if (s.Step() && !s.IsNull(0)) first = s.Int(0);
    if (s.failed()) return s.status();
  }
  if (!first) {
    if (Status e = w.Exec("INSERT INTO rollup_by_chunk(chunk, channel, t_ns, count, min, max, sum) "
                          "SELECT " EDGEMON_CHUNK_OF_T
                          ", r.channel, r.t_ns, r.count, r.min, r.max, r.sum FROM rollup r");
        !e.ok()) {
      return e;
    }
    return false;
  }
  const int64_t last = AddSaturating(*first, kDayNs - 1);
  sql::Stmt m(w,
              "INSERT INTO rollup_by_chunk(chunk, channel, t_ns, count, min, max, sum) "
              "SELECT " EDGEMON_CHUNK_OF_T
              ", r.channel, r.t_ns, r.count, r.min, r.max, r.sum "
              "FROM channels c JOIN rollup r ON r.channel = c.id AND r.t_ns <= ?1 "
              "ORDER BY 1, 2, 3");
  if (Status e = m.Bind(1, last).Run(); !e.ok()) return e;
  sql::Stmt d(w, "DELETE FROM rollup WHERE channel IN (SELECT id FROM channels) AND t_ns <= ?1");
  if (Status e = d.Bind(1, last).Run(); !e.ok()) return e;
  return true;
}
#undef EDGEMON_CHUNK_OF_T

// (10 -> 11) Moves the oldest day of the clock values (of the levels and
// channels the store knows) into the table keyed by time, and deletes them
// from the old one; false when none was left (after moving any other rows),
// as MoveRollupDay.
Result<bool> MoveSpanDay(sql::Conn& w) {
  constexpr int64_t kDayNs = 86'400'000'000'000;
  std::optional<int64_t> first;
  {
    // One probe per level and channel: the old key leads with them.
    sql::Stmt s(w,
                "SELECT min((SELECT min(t_ns) FROM span_values WHERE level = l.v AND channel = "
                "c.id)) FROM channels c, (SELECT 0 AS v UNION ALL SELECT 1 UNION ALL SELECT 2) l");
    if (s.Step() && !s.IsNull(0)) first = s.Int(0);
    if (s.failed()) return s.status();
  }
  if (!first) {
    if (Status e = w.Exec("INSERT INTO span_values_by_time(level, channel, t_ns, value, count) "
                          "SELECT level, channel, t_ns, value, count FROM span_values");
        !e.ok()) {
      return e;
    }
    return false;
  }
  const int64_t last = AddSaturating(*first, kDayNs - 1);
  static constexpr const char* kMove[] = {
      "INSERT INTO span_values_by_time(level, channel, t_ns, value, count) "
      "SELECT s.level, s.channel, s.t_ns, s.value, s.count "
      "FROM (SELECT 0 AS v UNION ALL SELECT 1 UNION ALL SELECT 2) l, channels c "
      "JOIN span_values s ON s.level = l.v AND s.channel = c.id AND s.t_ns <= ?1 "
      "ORDER BY s.level, s.t_ns, s.channel, s.value",
      "DELETE FROM span_values WHERE level IN (0, 1, 2) AND channel IN (SELECT id FROM channels) "
      "AND t_ns <= ?1"};
  for (const char* q : kMove) {
    sql::Stmt s(w, q);
    if (Status e = s.Bind(1, last).Run(); !e.ok()) return e;
  }
  return true;
}

// (13 -> 14) Packs the oldest day of chunks of the rollup rows into
// rollup_packed and deletes them from the old table; false when none was
// left. As MoveRollupDay, the file grows by about a day of rows and each day
// is a transaction of its own.
Result<bool> PackRollupDay(sql::Conn& w) {
  std::optional<int64_t> first;
  {
    sql::Stmt s(w, "SELECT min(chunk) FROM rollup");
    if (s.Step() && !s.IsNull(0)) first = s.Int(0);
    if (s.failed()) return s.status();
  }
  if (!first) return false;
  const int64_t last = AddSaturating(*first, 23);
  std::vector<internal::RollupRow> rows;
  int64_t chunk = 0, channel = 0;
  auto put = [&]() -> Status {
    if (rows.empty()) return Status::Ok();
    Status e = internal::PutRollupRow(w, "rollup_packed", chunk, channel, rows);
    rows.clear();
    return e;
  };
  {
    sql::Stmt s(w,
                "SELECT chunk, channel, t_ns, count, min, max, sum FROM rollup "
                "WHERE chunk >= ?1 AND chunk <= ?2 ORDER BY chunk, channel, t_ns");
    s.Bind(1, *first).Bind(2, last);
    while (s.Step()) {
      if (!rows.empty() && (s.Int(0) != chunk || s.Int(1) != channel)) {
        if (Status e = put(); !e.ok()) return e;
      }
      chunk = s.Int(0);
      channel = s.Int(1);
      rows.push_back(internal::RollupRow{s.Int(2), s.Int(3), s.Int(4), s.Int(5), s.Int(6)});
    }
    if (s.failed()) return s.status();
  }
  if (Status e = put(); !e.ok()) return e;
  sql::Stmt d(w, "DELETE FROM rollup WHERE chunk >= ?1 AND chunk <= ?2");
  if (Status e = d.Bind(1, *first).Bind(2, last).Run(); !e.ok()) return e;
  return true;
}

// (8 -> 9) Once every row has moved: each channel's first and last row,
// found by walking the chunks from each end of the table.
Status FillRollupChannels(sql::Conn& w) {
  auto table = internal::RollupChunks(w, 0);
  if (!table.ok()) return table.status();
  const std::optional<internal::ChunkRange> all = *table;
  if (Status e = w.Exec("DELETE FROM rollup_channels"); !e.ok()) return e;
  if (!all) return Status::Ok();
  std::vector<int64_t> ids;
  {
    sql::Stmt s(w, "SELECT id FROM channels");
    while (s.Step()) ids.push_back(s.Int(0));
    if (s.failed()) return s.status();
  }
  // The first (up) or last row of channel `id`: walks the chunks that hold
  // rows from one end of the table.
  auto edge = [&w, &all](int64_t id, bool up) -> Result<std::optional<int64_t>> {
    std::optional<int64_t> k = up ? all->first : all->last;
    while (k) {
      sql::Stmt s(w, up ? "SELECT min(t_ns) FROM rollup WHERE chunk = ?1 AND channel = ?2"
                        : "SELECT max(t_ns) FROM rollup WHERE chunk = ?1 AND channel = ?2");
      s.Bind(1, *k).Bind(2, id);
      if (s.Step() && !s.IsNull(0)) return std::optional<int64_t>(s.Int(0));
      if (s.failed()) return s.status();
      auto next = internal::NextChunk(w, *k, up);
      if (!next.ok()) return next.status();
      k = *next;
    }
    return std::optional<int64_t>();
  };
  for (int64_t id : ids) {
    auto first = edge(id, true);
    if (!first.ok()) return first.status();
    if (!*first) continue;
    auto last = edge(id, false);
    if (!last.ok()) return last.status();
    sql::Stmt s(w, "INSERT INTO rollup_channels(channel, first_ns, last_ns) VALUES(?1, ?2, ?3)");
    if (Status e = s.Bind(1, id).Bind(2, **first).Bind(3, last->value_or(**first)).Run(); !e.ok()) {
      return e;
    }
  }
  return Status::Ok();
}

}  // namespace

Status RingStore::Impl::Setup() {
  auto version = w_->QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (*version == 0) {
    // Must precede the first table. No pointer map: with one, each commit
    // rewrote a pointer-map page for every page it took from or gave to the
    // free list (about three a commit); a lowered cap is met by VACUUM (I6).
    if (Status s = w_->Exec("PRAGMA auto_vacuum=NONE; PRAGMA page_size=4096"); !s.ok()) {
      return s;
    }
  }
  auto mode = w_->QueryText("PRAGMA journal_mode=WAL");
  if (!mode.ok()) return mode.status();
  if (*mode != "wal") return Status::Internal("cannot enable WAL (journal_mode is " + *mode + ")");
  const std::string setup =
      "PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA secure_delete=FAST; "
      "PRAGMA cache_size=-" +
      std::to_string(std::max<int64_t>(64, options_.cache_kib));
  if (Status s = w_->Exec(setup.c_str()); !s.ok()) return s;
  auto ps = w_->QueryInt("PRAGMA page_size");
  if (!ps.ok()) return ps.status();
  page_size_ = *ps;
  // WAL bound (I6): checkpoint at min(kMaxWalPages, cap / 16) pages and
  // truncate the WAL back to that size afterwards.
  int64_t wal_pages = kMaxWalPages;
  if (options_.max_bytes > 0) {
    wal_pages = std::clamp<int64_t>(options_.max_bytes / page_size_ / 16, 16, kMaxWalPages);
  }
  std::string pragmas = "PRAGMA wal_autocheckpoint=" + std::to_string(wal_pages) +
                        "; PRAGMA journal_size_limit=" + std::to_string(wal_pages * page_size_);
  if (Status s = w_->Exec(pragmas.c_str()); !s.ok()) return s;

  // Migrations, each with its user_version bump in one transaction (8 -> 9,
  // 10 -> 11 and 13 -> 14: in several, MoveRollupDay, MoveSpanDay and
  // PackRollupDay).
  for (;;) {
    auto v = w_->QueryInt("PRAGMA user_version");
    if (!v.ok()) return v.status();
    if (*v >= kSchemaVersion) break;
    Status s = InWriteTxn([&]() -> Status {
      auto again = w_->QueryInt("PRAGMA user_version");  // another process may have migrated
      if (!again.ok()) return again.status();
      if (*again != *v) return Status::Ok();
      if (Status e = w_->Exec(kMigrations[*v]); !e.ok()) return e;
      if (*v == 8) {
        // A day of rollup rows per transaction; the one that finds none
        // left replaces the table and bumps the version.
        auto moved = MoveRollupDay(*w_);
        if (!moved.ok()) return moved.status();
        if (*moved) return Status::Ok();
        if (Status e = w_->Exec(kRollupByChunkDone); !e.ok()) return e;
        if (Status e = FillRollupChannels(*w_); !e.ok()) return e;
      }
      if (*v == 10) {  // the same, a day of clock values per transaction
        auto moved = MoveSpanDay(*w_);
        if (!moved.ok()) return moved.status();
        if (*moved) return Status::Ok();
        if (Status e = w_->Exec(kSpansByTimeDone); !e.ok()) return e;
      }
      if (*v == 13) {  // a day of chunks of rollup rows per transaction
        auto moved = PackRollupDay(*w_);
        if (!moved.ok()) return moved.status();
        if (*moved) return Status::Ok();
        if (Status e = w_->Exec(kRollupPackedDone); !e.ok()) return e;
      }
      std::string bump = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                         "; PRAGMA user_version=" + std::to_string(*v + 1);
      return w_->Exec(bump.c_str());
    });
    if (!s.ok()) return s.Context("migrating schema " + std::to_string(*v));
  }
  return Status::Ok();
}

}  // namespace edgemon::store
