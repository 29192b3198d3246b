// The daemon's typed configuration: a TOML file (packaging/edgemond.toml
// documents every key) overridden by command-line flags. Invalid input is
// reported as one line naming the key and the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgemon/addresses.h"
#include "edgemon/status.h"

namespace edgemon::runtime {

// One [[push]] table (or --push URL): a remote engine the shipper
// (daemon/push) sends the history to.
struct PushConfig {
  std::string url;                                           // http[s]://host[:port]/path
  std::string protocol = "remote-write";                     // remote-write | otlp
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request
  std::string bearer_token_file;                             // "Authorization: Bearer <first line>"
  std::string tls_ca;                // PEM CA file for https ("" = the system's)
  int64_t batch_size = 5000;         // samples per request
  int64_t rate_limit = 20000;        // samples per second on average; 0 = no limit
  int64_t interval_ms = 30'000;      // how often new frames are looked for once caught up
  int64_t timeout_ms = 30'000;       // per request
  int64_t min_backoff_ms = 1000;     // retries double from here...
  int64_t max_backoff_ms = 300'000;  // ...up to here
  bool frames = true;                // send = [...] holds "frames"
  bool windows = true;               // send = [...] holds "windows"
  std::vector<std::pair<std::string, std::string>> labels;  // on every series

  friend bool operator==(const PushConfig&, const PushConfig&) = default;
};

// store.commit_interval_ms: -1 (the default) chooses by whether a flight
// recorder keeps the frames not yet committed (edgemond's main).
inline constexpr int64_t kCommitIntervalAuto = -1;
inline constexpr int64_t kCommitIntervalFlightMs = 600'000;
inline constexpr int64_t kCommitIntervalBareMs = 5'000;

struct Config {
  // [daemon]
  std::string root = "/";         // prefixes /sys, /proc, /etc, /var/lib
  int64_t interval_ms = 1000;     // frame period (tegrastats' default)
  int64_t energy_rate_hz = 100;   // rail sampling for energy integration; 0 = frames only
  int64_t topology_check_s = 10;  // how often watched directories are re-listed
  std::string listen = kDefaultTarget;
  std::string tcp_listen;          // "host:port"; "" = no TCP listener
  std::string tls_cert;            // PEM certificate for TCP (required off loopback)
  std::string tls_key;             // PEM private key, with tls_cert
  std::string tcp_token_file;      // file holding a bearer token TCP clients must send
  std::string metrics_listen;      // Prometheus /metrics: "host:port" or a port; "" = off
  std::string metrics_token_file;  // a token every request to metrics_listen must carry
  int64_t max_streams = 256;       // concurrent Watch + Query streams
  bool realtime = false;           // the sampler SCHED_FIFO 1 where allowed
  std::string nvml = "auto";       // auto | on | off
  std::string log_level = "info";  // trace | debug | info | warn | error
  // [store]
  std::string db_path = "/var/lib/edgemon/edgemon.db";
  int64_t retention_s = 7 * 86400;   // raw frames
  int64_t max_db_bytes = 1LL << 30;  // whole file, honoured exactly
  int64_t rollup_period_s = 60;      // downsampled tier: min/avg/max per period
  int64_t rollup_retention_s = 60 * 86400;
  // Batched commits; kCommitIntervalAuto (the default): kCommitIntervalFlightMs
  // while a flight recorder keeps the uncommitted frames, else
  // kCommitIntervalBareMs.
  int64_t commit_interval_ms = kCommitIntervalAuto;
  // Closed rollup periods are written once they hold this many frames (or
  // hourly); 0: each period with the commit after it closes.
  int64_t rollup_write_frames = 3600;
  // [control]: the separate helper edgemon-control (edgemond ignores these)
  bool control_enable = false;  // the helper refuses to start unless true
  std::string control_listen = kDefaultControlTarget;
  std::string control_group = "edgemon-control";           // who may connect
  std::string control_state_dir = "/run/edgemon-control";  // leases to restore after a crash
  // [[push]]
  std::vector<PushConfig> push;
};

// Parses "1048576", "512KiB", "64MiB", "2GiB", "1TiB" into bytes.
std::optional<int64_t> ParseBytes(const std::string& s);

// OK when `root` (the monitored root, daemon.root or --root) is a directory;
// otherwise INVALID_ARGUMENT "<what> <root>: no such directory" (or "not a
// directory"): a missing root would otherwise run with no channels.
Status CheckRootDirectory(const std::string& root, std::string_view what);

// A parsed daemon.metrics_listen: "host:port", "[v6addr]:port", or a port
// alone ("9469" or ":9469"), which binds 127.0.0.1. The host must be an IP
// literal or "localhost" (no name lookups at start). A non-loopback host is
// the explicit opt-in to serve the metrics off the machine.
struct HostPort {
  std::string host;  // without brackets
  int port = 0;
  bool loopback = false;
};
// INVALID_ARGUMENT (one phrase) when `s` is not a valid address.
Result<HostPort> ParseHostPort(const std::string& s);

// Reads a config file: a regular file (not a directory, FIFO or device) of
// at most kMaxConfigBytes. Returns its bytes, else an error in one line.
inline constexpr int64_t kMaxConfigBytes = 1 << 20;
Result<std::string> ReadConfigFile(const std::string& path);

// Applies a TOML document to `config`. The document's shape is checked
// before it is parsed (at most kMaxConfigBytes, nesting and dotted keys at
// most kMaxConfigDepth deep), so a hostile file cannot exhaust the stack. Unknown keys are errors
// (typos must not pass silently). Errors are INVALID_ARGUMENT in one line.
inline constexpr int kMaxConfigDepth = 8;
Status ApplyToml(const std::string& text, const std::string& source, Config& config);
// Checks ranges and combinations: OK, else INVALID_ARGUMENT in one line.
Status Validate(const Config& config);

}  // namespace edgemon::runtime
