// Placeholder: filled in by the subcommand's implementation.
#include "cli.h"

namespace edgemon::cli {
void AddRecordCommands(CLI::App&, Registry&) {}
}  // namespace edgemon::cli
