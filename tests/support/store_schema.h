// SQL that takes a store back from one schema version to the one before, for
// tests that upgrade a store written before a migration (schema.cc).
#pragma once

namespace edgemon::testing {

// 8 -> 7: the rail samples kept at a boosted rate.
inline constexpr const char* kUndoSchema8 = "DROP TABLE rail_chunks; ";

// 7 -> 6: the windows' run results (WindowResult).
inline constexpr const char* kUndoSchema7 =
    "ALTER TABLE windows DROP COLUMN items; ALTER TABLE windows DROP COLUMN exit_status; "
    "ALTER TABLE windows DROP COLUMN input_rail; "
    "ALTER TABLE windows DROP COLUMN input_energy_mj; ";

}  // namespace edgemon::testing
