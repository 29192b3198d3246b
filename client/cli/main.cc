// edgemon: the command line client of edgemond.
#include <grpc/support/log.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "client/cli/cli.h"
#include "client/cli/command_args.h"

#ifndef EDGEMON_VERSION
#define EDGEMON_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  using namespace edgemon::cli;
  // gRPC's own log lines (a failed TLS handshake, ...) stay off stderr: each
  // failure is said once, in edgemon's one line with what to do next.
  gpr_set_log_function([](gpr_log_func_args*) {});
  Registry registry;
  const char* env = std::getenv("EDGEMON_CONNECT");
  registry.globals.connect = (env && *env) ? env : kDefaultTarget;

  CLI::App app{"edgemon: read telemetry from edgemond, locally or from another host"};
  app.set_version_flag("--version", std::string("edgemon ") + EDGEMON_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--connect", registry.globals.connect,
                 "Daemon address: unix:/path, /path or host:port (default: $EDGEMON_CONNECT, "
                 "else " +
                     std::string(kDefaultTarget) + ")");
  const char* token_env = std::getenv("EDGEMON_TOKEN_FILE");
  if (token_env != nullptr) registry.globals.token_file = token_env;
  app.add_flag("--tls", registry.globals.tls_and_token.tls,
               "Use TLS to a host:port daemon, trusting the system's roots");
  app.add_option("--tls-ca", registry.globals.tls_and_token.tls_ca_file,
                 "Use TLS, trusting the CA certificates in this PEM file");
  app.add_option("--tls-server-name", registry.globals.tls_and_token.tls_server_name,
                 "Name to check in the daemon's certificate (default: the host)");
  app.add_option("--token-file", registry.globals.token_file,
                 "File holding the daemon's bearer token (default: $EDGEMON_TOKEN_FILE)");
  int timeout_ms = static_cast<int>(registry.globals.timeout.count());
  app.add_option("--timeout-ms", timeout_ms, "Deadline of each call to the daemon")
      ->check(CLI::Range(1, 3600 * 1000));

  AddSnapshotCommands(app, registry);
  AddWatchCommands(app, registry);
  AddQueryCommand(app, registry);
  AddRecordCommands(app, registry);
  AddControlCommands(app, registry);

  try {
    app.name(argc > 0 ? argv[0] : "edgemon");
    auto args =
        SeparateCommand(app, std::vector<std::string>(argv + std::min(argc, 1), argv + argc));
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  registry.globals.timeout = std::chrono::milliseconds(timeout_ms);
  if (!registry.run) {
    std::fprintf(stderr, "edgemon: no command given (see --help)\n");
    return kExitUsage;
  }
  return registry.run();
}
