// Shared helpers of the edgemon subcommands.
#include <cstdio>
#include <string>

#include "cli.h"

namespace edgemon::cli {

std::unique_ptr<client::Client> ConnectOrReport(const Globals& globals) {
  client::ConnectOptions options = globals.tls_and_token;
  if (!globals.token_file.empty()) {
    std::string error;
    auto token = client::Client::ReadTokenFile(globals.token_file, &error);
    if (!token) {
      std::fprintf(stderr, "edgemon: %s\n", error.c_str());
      return nullptr;
    }
    options.bearer_token = *token;
  }
  auto connected = client::Client::Connect(globals.connect, options);
  if (!connected.ok()) {
    std::fprintf(stderr, "edgemon: bad daemon address '%s': %s\n", globals.connect.c_str(),
                 connected.status().message.c_str());
    return nullptr;
  }
  std::unique_ptr<client::Client> c = std::move(connected).value();
  c->set_timeout(globals.timeout);
  return c;
}

int ReportStatus(std::string_view what, const client::Status& status) {
  std::fprintf(stderr, "edgemon: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               status.ToString().c_str());
  switch (status.code) {
    case client::kUnavailable:
    case client::kDeadlineExceeded:
      return kExitUnavailable;
    case client::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

}  // namespace edgemon::cli
