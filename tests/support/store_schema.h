// SQL that takes a store back from one schema version to the one before, for
// tests that upgrade a store written before a migration (schema.cc).
#pragma once

namespace edgemon::testing {

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
