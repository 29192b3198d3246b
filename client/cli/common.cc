// Shared helpers of the edgemon subcommands.
#include <cstdio>
#include <string>

#include "client/cli/cli.h"
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
  std::fprintf(stderr, "%.*s: %s %s: %s%.*s\n", static_cast<int>(who.size()), who.data(),
               refused ? "the daemon refused us at" : "cannot reach the daemon at",
               TerminalSafe(target).c_str(), TerminalSafe(status.ToString()).c_str(),
               static_cast<int>(suffix.size()), suffix.data());
  return refused ? kExitNoPerm : unreachable ? kExitUnavailable : kExitFailure;
}

}  // namespace edgemon::cli
