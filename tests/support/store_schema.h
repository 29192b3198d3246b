// SQL that takes a store back from one schema version to the one before, for
// tests that upgrade a store written before a migration (schema.cc).
#pragma once

namespace edgemon::testing {

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
