// Shared helpers of the edgemon subcommands.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

#include "client/cli/cli.h"
#include "client/cli/command_args.h"
#include "client/first_contact.h"
#include "edgemon/secret_file.h"
#include "edgemon/text.h"
#include "edgemon/timespec.h"

namespace edgemon::cli {

Result<int64_t> PositiveDurationNs(const std::string& text, std::string_view what) {
  auto d = ParseDurationNs(text);
  if (d.ok() && *d <= 0) {
    return Status::InvalidArgument("the " + std::string(what) + " must be more than 0");
  }
  return d;
}

std::unique_ptr<client::Client> ConnectOrReport(const Globals& globals) {
  client::ConnectOptions options = globals.tls_and_token;
  if (!globals.token_file.empty()) {
    auto token = ReadTokenFile(globals.token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "edgemon: %s\n", TerminalSafe(token.status().message()).c_str());
      return nullptr;
    }
    options.bearer_token = *token;
  }
  auto connected = client::Client::Connect(globals.connect, options);
  if (!connected.ok()) {
    std::fprintf(stderr, "edgemon: bad daemon address '%s': %s\n",
                 TerminalSafe(globals.connect).c_str(),
                 TerminalSafe(connected.status().message()).c_str());
    return nullptr;
  }
  std::unique_ptr<client::Client> c = std::move(connected).value();
  c->set_timeout(globals.timeout);
  return c;
}

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

int ReportStatus(std::string_view what, const Status& status) {
  std::fprintf(stderr, "edgemon: %s: %s\n", TerminalSafe(what).c_str(),
               TerminalSafe(status.ToString()).c_str());
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return kExitUnavailable;
    case StatusCode::kInvalidArgument:
      return kExitUsage;
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
      return kExitNoPerm;
    default:
      return kExitFailure;
  }
}

int ReportFirstCall(std::string_view who, const std::string& target, const Status& status,
                    std::string_view suffix) {
  const bool refused = status.code() == StatusCode::kUnauthenticated ||
                       status.code() == StatusCode::kPermissionDenied;
  const bool unreachable =
      status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded;
  // What to do next where the failure says it; the status as it is elsewhere.
  std::string advice = client::FirstContactAdvice(target, status);
  if (advice.empty()) advice = status.ToString();
  std::fprintf(stderr, "%.*s: %s %s: %s%.*s\n", static_cast<int>(who.size()), who.data(),
               refused       ? "the daemon refused us at"
               : unreachable ? "cannot reach the daemon at"
                             : "the first call failed at",
               TerminalSafe(target).c_str(), TerminalSafe(advice).c_str(),
               static_cast<int>(suffix.size()), suffix.data());
  return refused ? kExitNoPerm : unreachable ? kExitUnavailable : kExitFailure;
}

namespace {

// The name of the positional of AddCommandArgs, its mark.
constexpr const char* kCommandArgs = "command";

// How many words an option of `scope` (or of an app above it, whose options
// fall through) takes after `word`: 0 or 1; nullopt when `word` is no option
// of theirs.
std::optional<size_t> OptionWords(const CLI::App* scope, const std::string& word) {
  const bool is_long = word.rfind("--", 0) == 0;
  const size_t eq = is_long ? word.find('=') : std::string::npos;
  const std::string name = is_long ? word.substr(0, eq) : word.substr(0, 2);
  for (const CLI::App* app = scope; app != nullptr; app = app->get_parent()) {
    const CLI::Option* o = app->get_option_no_throw(name);
    if (o == nullptr) continue;
    const bool attached = is_long ? eq != std::string::npos : word.size() > 2;
    return (o->get_items_expected_max() > 0 && !attached) ? 1 : 0;
  }
  return std::nullopt;
}

}  // namespace

CLI::Option* AddCommandArgs(CLI::App& sub, std::vector<std::string>& command,
                            const std::string& help) {
  return sub.add_option(kCommandArgs, command, help);
}

std::vector<std::string> SeparateCommand(const CLI::App& root, std::vector<std::string> args) {
  const CLI::App* scope = &root;
  bool runs = false;
  for (size_t i = 0; i < args.size();) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() > 1 && a[0] == '-') {
      auto n = OptionWords(scope, a);
      if (!n) break;  // an unknown option: CLI11 says so
      i += 1 + *n;
      continue;
    }
    if (runs) {
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i), "--");
      break;
    }
    if (scope != &root) break;  // a positional of a subcommand that runs nothing
    auto subs = root.get_subcommands([&a](const CLI::App* s) { return s->check_name(a); });
    if (subs.empty()) break;
    scope = subs.front();
    const CLI::Option* command = scope->get_option_no_throw(kCommandArgs);
    runs = command != nullptr && command->get_positional();
    ++i;
  }
  return args;
}

}  // namespace edgemon::cli
