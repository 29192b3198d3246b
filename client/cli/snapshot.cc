// Placeholder: filled in by the subcommand's implementation.
#include "cli.h"

namespace edgemon::cli {
void AddSnapshotCommands(CLI::App&, Registry&) {}
}  // namespace edgemon::cli
