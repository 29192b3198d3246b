// The edgemon command line: shared pieces of its subcommands.
//
// main.cc builds one CLI11 app with the global options (--connect, --timeout)
// and asks each group of subcommands to register itself. A subcommand's parse
// callback stores the function that runs it in Registry::run; main.cc runs it
// after parsing and exits with its result.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "client/edgemon_client.h"
#include "edgemon/text.h"  // TerminalSafe for every printed name and message

namespace CLI {
class App;
}

namespace edgemon::cli {

// Exit codes (sysexits.h values where one fits).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // the operation failed (a server-side error)
inline constexpr int kExitUsage = 2;         // bad flags or arguments
inline constexpr int kExitDataErr = 65;      // bad input data (a file, a regex, a time)
inline constexpr int kExitUnavailable = 69;  // the daemon cannot be reached
inline constexpr int kExitSoftware = 70;     // an internal error
inline constexpr int kExitCantCreate = 73;   // an output file or directory cannot be written
inline constexpr int kExitNoPerm = 77;       // the daemon refused us (token, socket permissions)
inline constexpr int kExitNoExec = 126;      // the wrapped command exists but cannot run
inline constexpr int kExitNotFound = 127;    // the wrapped command does not exist

// The JSON text of `j` (nlohmann::json or ordered_json), compact or indented.
// Bytes that are not UTF-8 (a name read from sysfs, a --label) become U+FFFD
// instead of an exception.
template <typename Json>
std::string JsonText(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

using client::kDefaultTarget;

struct Globals {
  std::string connect;                       // as given (unix:/path, /path, host:port)
  std::chrono::milliseconds timeout{10000};  // per unary call
  client::ConnectOptions tls_and_token;      // --tls, --tls-ca, --tls-server-name
  std::string token_file;                    // --token-file (or $EDGEMON_TOKEN_FILE)
};

struct Registry {
  Globals globals;
  std::function<int()> run;  // set by the chosen subcommand's callback
};

// Creates a client for globals.connect with its TLS and token options (no
// I/O yet: an unreachable daemon shows at the first call). On a malformed
// address, CA file or token file prints "edgemon: ..." to stderr and returns
// nullptr.
std::unique_ptr<client::Client> ConnectOrReport(const Globals& globals);

// Prints "edgemon: <what>: <status>" to stderr and returns the exit code that
// fits the status (kExitUnavailable for UNAVAILABLE/DEADLINE_EXCEEDED,
// kExitUsage for INVALID_ARGUMENT, kExitNoPerm for UNAUTHENTICATED and
// PERMISSION_DENIED, kExitFailure otherwise).
int ReportStatus(std::string_view what, const Status& status);

// The first call to the daemon failed: prints "<who>: cannot reach the
// daemon at T: <status><suffix>" (or "the daemon refused us at T: ..." for
// UNAUTHENTICATED / PERMISSION_DENIED) and returns kExitUnavailable,
// kExitNoPerm or kExitFailure.
int ReportFirstCall(std::string_view who, const std::string& target, const Status& status,
                    std::string_view suffix = "");

// A duration option that must be more than 0 (--last, --step) in the common
// syntax (edgemon/timespec.h): the parser's INVALID_ARGUMENT for text that is
// not a duration, "the <what> must be more than 0" for one that is not positive.
Result<int64_t> PositiveDurationNs(const std::string& text, std::string_view what);

// A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a
// comma, a quote or a line break (CR or LF). CSV is data: other control
// bytes are kept as they are, not escaped for a terminal.
std::string CsvField(std::string_view s);

// Subcommand groups, one source file each.
void AddSnapshotCommands(CLI::App& app, Registry& registry);  // now, sensors (snapshot.cc)
void AddWatchCommands(CLI::App& app, Registry& registry);     // watch, tegrastats (watch.cc)
void AddQueryCommand(CLI::App& app, Registry& registry);      // query (query.cc)
void AddRecordCommands(CLI::App& app, Registry& registry);    // record, attach, mark (record.cc)
void AddControlCommands(CLI::App& app, Registry& registry);   // control (control.cc)

}  // namespace edgemon::cli
