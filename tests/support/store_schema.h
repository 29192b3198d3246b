// SQL that takes a store back from one schema version to the one before, for
// tests that upgrade a store written before a migration (schema.cc).
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/store/ring_store_impl.h"

namespace edgemon::testing {

// One integer from a query on a read-only connection of the caller's own
// (-1 when the file, the query or its row is not there).
inline int64_t QueryInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t out = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      out = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// Every stored frame's own blob (version 1 or 2) by seq, in seq order: a
// block's frames (I18) read from its head's row. A frame whose block does
// not decode is left out.
inline std::vector<std::pair<int64_t, std::string>> StoredFrameBlobs(const std::string& path) {
  std::vector<std::pair<int64_t, std::string>> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(db, "SELECT seq, data FROM frames ORDER BY seq", -1, &q, nullptr);
  std::string raw;
  std::vector<std::string_view> block;
  bool holding = false;  // a decoded block, headed by `held`
  uint64_t held = 0;
  while (q != nullptr && sqlite3_step(q) == SQLITE_ROW) {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(q, 1));
    std::string_view blob(data == nullptr ? "" : data,
                          static_cast<size_t>(sqlite3_column_bytes(q, 1)));
    uint64_t head = 0, index = 0;
    if (store::FrameBlockRef(blob, head, index)) {
      if (index == 0) {
        holding = store::DecodeFrameBlock(blob, raw, block);
        held = head;
      }
      if (!holding || held != head || index >= block.size()) continue;
      blob = block[index];
    }
    out.emplace_back(sqlite3_column_int64(q, 0), std::string(blob));
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return out;
}

// Schema 14 packs a chunk's periods of one channel into one rollup row,
// which SQL cannot read. Fills table `into` (created here, TEMP or not)
// with a row per period as schema 13 kept them: (chunk, channel, t_ns,
// count, min, max, sum). SQLITE_OK, or an error code (SQLITE_CORRUPT for a
// row that does not unpack).
inline int UnpackRollupInto(sqlite3* db, const std::string& into, bool temp) {
  const std::string create = std::string("CREATE ") + (temp ? "TEMP " : "") + "TABLE " + into +
                             "(chunk INTEGER NOT NULL, channel INTEGER NOT NULL, t_ns INTEGER NOT "
                             "NULL, count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT "
                             "NULL, sum INTEGER NOT NULL, PRIMARY KEY(chunk, channel, t_ns)) "
                             "WITHOUT ROWID";
  if (int rc = sqlite3_exec(db, create.c_str(), nullptr, nullptr, nullptr); rc != SQLITE_OK) {
    return rc;
  }
  sqlite3_stmt* get = nullptr;
  sqlite3_stmt* put = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT chunk, channel, data FROM rollup", -1, &get, nullptr);
  const std::string insert = "INSERT INTO " + into + " VALUES(?, ?, ?, ?, ?, ?, ?)";
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, insert.c_str(), -1, &put, nullptr);
  std::vector<store::internal::RollupRow> periods;
  while (rc == SQLITE_OK && sqlite3_step(get) == SQLITE_ROW) {
    const int64_t chunk = sqlite3_column_int64(get, 0), channel = sqlite3_column_int64(get, 1);
    const auto* data = static_cast<const char*>(sqlite3_column_blob(get, 2));
    periods.clear();
    if (!store::internal::UnpackRollup(
            chunk, std::string_view(data, static_cast<size_t>(sqlite3_column_bytes(get, 2))),
            periods)) {
      rc = SQLITE_CORRUPT;
    }
    for (const auto& r : periods) {
      if (rc != SQLITE_OK) break;
      sqlite3_bind_int64(put, 1, chunk);
      sqlite3_bind_int64(put, 2, channel);
      sqlite3_bind_int64(put, 3, r.t_ns);
      sqlite3_bind_int64(put, 4, r.count);
      sqlite3_bind_int64(put, 5, r.min);
      sqlite3_bind_int64(put, 6, r.max);
      sqlite3_bind_int64(put, 7, r.sum);
      if (sqlite3_step(put) != SQLITE_DONE) rc = sqlite3_errcode(db);
      sqlite3_reset(put);
    }
  }
  sqlite3_finalize(get);
  sqlite3_finalize(put);
  return rc;
}

// The rollup periods as rows in TEMP table rollup_rows (for tests that read
// them with SQL).
inline int ExpandRollup(sqlite3* db) {
  return UnpackRollupInto(db, "rollup_rows", true);
}

// Schema 15 packs an hour of the periods' clock values into one row of
// period_values. Appends every packed value to `out`: SQLITE_OK, or
// SQLITE_CORRUPT for a row that does not unpack.
inline int PeriodValueRows(sqlite3* db, std::vector<store::internal::PeriodValue>& out) {
  sqlite3_stmt* get = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT chunk, data FROM period_values ORDER BY chunk", -1, &get,
                              nullptr);
  while (rc == SQLITE_OK && sqlite3_step(get) == SQLITE_ROW) {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(get, 1));
    if (!store::internal::UnpackPeriodValues(
            sqlite3_column_int64(get, 0),
            std::string_view(data, static_cast<size_t>(sqlite3_column_bytes(get, 1))), out)) {
      rc = SQLITE_CORRUPT;
    }
  }
  sqlite3_finalize(get);
  return rc;
}

// Adds the packed periods' values to table `into` (span_values' columns) as
// level-0 rows, summed into a row already there.
inline int InsertPeriodValues(sqlite3* db, const std::string& into) {
  std::vector<store::internal::PeriodValue> values;
  int rc = PeriodValueRows(db, values);
  sqlite3_stmt* put = nullptr;
  const std::string insert = "INSERT INTO " + into +
                             "(level, channel, t_ns, value, count) VALUES(0, ?, ?, ?, ?) "
                             "ON CONFLICT DO UPDATE SET count = count + excluded.count";
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, insert.c_str(), -1, &put, nullptr);
  for (const auto& v : values) {
    if (rc != SQLITE_OK) break;
    sqlite3_bind_int64(put, 1, v.channel);
    sqlite3_bind_int64(put, 2, v.t_ns);
    sqlite3_bind_int64(put, 3, v.value);
    sqlite3_bind_int64(put, 4, static_cast<int64_t>(v.count));
    if (sqlite3_step(put) != SQLITE_DONE) rc = sqlite3_errcode(db);
    sqlite3_reset(put);
  }
  sqlite3_finalize(put);
  return rc;
}

// Every clock value as span_values kept them before schema 15, in TEMP
// table value_rows (for tests that read them with SQL): its rows, and the
// packed periods' as level 0.
inline int ExpandValues(sqlite3* db) {
  int rc = sqlite3_exec(db,
                        "DROP TABLE IF EXISTS temp.value_rows; "
                        "CREATE TEMP TABLE value_rows(level INTEGER NOT NULL, channel INTEGER NOT "
                        "NULL, t_ns INTEGER NOT NULL, value INTEGER NOT NULL, count INTEGER NOT "
                        "NULL, PRIMARY KEY(level, channel, t_ns, value)) WITHOUT ROWID; "
                        "INSERT INTO value_rows SELECT level, channel, t_ns, value, count "
                        "FROM span_values",
                        nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? InsertPeriodValues(db, "value_rows") : rc;
}

// 15 -> 14: the periods' clock values as level-0 rows of span_values
// again. Not SQL; UndoSchema14 runs it first.
inline int UndoSchema15(sqlite3* db) {
  int rc = sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) rc = InsertPeriodValues(db, "span_values");
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db, "DROP TABLE period_values; PRAGMA user_version = 14; COMMIT", nullptr,
                      nullptr, nullptr);
  }
  if (rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  return rc;
}

// 14 -> 13 (from the current schema: 15 -> 14 first): a rollup row per
// period again. Not SQL: run it before the SQL of the undo chain.
inline int UndoSchema14(sqlite3* db) {
  if (int rc = UndoSchema15(db); rc != SQLITE_OK) return rc;
  int rc = sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) rc = UnpackRollupInto(db, "rollup13", false);
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db,
                      "DROP TABLE rollup; ALTER TABLE rollup13 RENAME TO rollup; "
                      "PRAGMA user_version = 13; COMMIT",
                      nullptr, nullptr, nullptr);
  }
  if (rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  return rc;
}

// 13 -> 12: block and day rows keyed by (level, channel, t_ns) again.
inline constexpr const char* kUndoSchema13 =
    "CREATE TABLE span_stats12(level INTEGER NOT NULL, channel INTEGER NOT NULL, "
    "t_ns INTEGER NOT NULL, count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT NULL, "
    "sum REAL NOT NULL, PRIMARY KEY(level, channel, t_ns)) WITHOUT ROWID; "
    "INSERT INTO span_stats12 SELECT level, channel, t_ns, count, min, max, sum FROM span_stats; "
    "DROP TABLE span_stats; ALTER TABLE span_stats12 RENAME TO span_stats; ";

// 12 -> 11: the index on the frames' time.
inline constexpr const char* kUndoSchema12 = "CREATE INDEX frames_by_time ON frames(realtime_ns); ";

// 11 -> 10: clock values keyed by (level, channel, t_ns, value) again.
inline constexpr const char* kUndoSchema11 =
    "CREATE TABLE span_values10(level INTEGER NOT NULL, channel INTEGER NOT NULL, "
    "t_ns INTEGER NOT NULL, value INTEGER NOT NULL, count INTEGER NOT NULL, "
    "PRIMARY KEY(level, channel, t_ns, value)) WITHOUT ROWID; "
    "INSERT INTO span_values10 SELECT level, channel, t_ns, value, count FROM span_values; "
    "DROP TABLE span_values; ALTER TABLE span_values10 RENAME TO span_values; ";

// 10 -> 9: nothing. frame_bases stays, because the frames the test wrote
// against their bases need it; the migration creates it only when missing.
inline constexpr const char* kUndoSchema10 = "";

// 9 -> 8: rollup rows kept by (channel, t_ns) again, every row kept.
inline constexpr const char* kUndoSchema9 =
    "CREATE TABLE rollup8(channel INTEGER NOT NULL, t_ns INTEGER NOT NULL, "
    "count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT NULL, sum INTEGER NOT NULL, "
    "PRIMARY KEY(channel, t_ns)) WITHOUT ROWID; "
    "INSERT INTO rollup8 SELECT channel, t_ns, count, min, max, sum FROM rollup; "
    "DROP TABLE rollup; ALTER TABLE rollup8 RENAME TO rollup; DROP TABLE rollup_channels; ";

// 8 -> 7: the rail samples kept at a boosted rate.
inline constexpr const char* kUndoSchema8 = "DROP TABLE rail_chunks; ";

// 7 -> 6: the windows' run results (WindowResult).
inline constexpr const char* kUndoSchema7 =
    "ALTER TABLE windows DROP COLUMN items; ALTER TABLE windows DROP COLUMN exit_status; "
    "ALTER TABLE windows DROP COLUMN input_rail; "
    "ALTER TABLE windows DROP COLUMN input_energy_mj; ";

}  // namespace edgemon::testing
