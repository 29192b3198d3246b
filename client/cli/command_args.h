// Subcommands that run another program (edgemon record): where their own
// options end.
//
// As with env(1), sudo and time(1), such a subcommand's options end at the
// first word that is not one of them: the words from there on are the
// program's, options included (`edgemon record python3 train.py --out x`
// runs `python3 train.py --out x`). `--` before the program stays accepted,
// and is needed only for a program whose name begins with '-'.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace edgemon::cli {

// Adds the positional COMMAND [ARGS...] of `sub`, which marks `sub` as one
// that runs a program.
CLI::Option* AddCommandArgs(CLI::App& sub, std::vector<std::string>& command,
                            const std::string& help);

// The arguments (without argv[0]) with "--" inserted before the program's
// first word where a subcommand of AddCommandArgs is given without one, so
// that CLI11 passes every word from there on to the program.
std::vector<std::string> SeparateCommand(const CLI::App& root, std::vector<std::string> args);

}  // namespace edgemon::cli
