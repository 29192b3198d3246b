// SQL that takes a store back from one schema version to the one before, for
// tests that upgrade a store written before a migration (schema.cc).
#pragma once

namespace edgemon::testing {

// 7 -> 6: the windows' run results (WindowResult).
inline constexpr const char* kUndoSchema7 =
    "ALTER TABLE windows DROP COLUMN items; ALTER TABLE windows DROP COLUMN exit_status; "
    "ALTER TABLE windows DROP COLUMN input_rail; "
    "ALTER TABLE windows DROP COLUMN input_energy_mj; ";

}  // namespace edgemon::testing
