// Placeholder: filled in by the subcommand's implementation.
#include "cli.h"

namespace edgemon::cli {
void AddQueryCommand(CLI::App&, Registry&) {}
}  // namespace edgemon::cli
