// Placeholder: filled in by the subcommand's implementation.
#include "cli.h"

namespace edgemon::cli {
void AddWatchCommands(CLI::App&, Registry&) {}
}  // namespace edgemon::cli
