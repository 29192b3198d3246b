// edgemon's C++ client library: a thin, exception-free wrapper over the
// edgemon.v1.Telemetry gRPC API (proto/edgemon/v1/edgemon.proto), used by
// edgemon (--connect) and edgetop.
//
//   auto client = edgemon::client::Client::Connect("unix:/run/edgemon/edgemon.sock");
//   if (!client.ok()) { ... client.status().message() ... }
//   auto info = (*client)->DeviceInfo();               // inventory, board, settings
//   auto watch = (*client)->Watch({.interval_ms = 500}, on_frame, on_state);
//   ...
//   watch->Stop();                                     // or let it go out of scope
//
// Targets: "unix:/path", "/path" (a unix socket path), or "host:port".
//
// Every call returns a Status or a Result<T> carrying the gRPC status code and
// message; nothing throws across this API (allocation failure aside).
//
// Thread safety: a Client is thread-safe: any number of threads may call its
// methods at once (they share one gRPC channel). A Watcher runs its callbacks
// on its own thread, one at a time and in order; Stop() and the destructor may
// be called from any thread except the watcher's own callbacks. The value
// types (Status, Result, DeviceInfo, ...) have no internal synchronisation.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgemon/addresses.h"
#include "edgemon/channel.h"
#include "edgemon/model.h"
#include "edgemon/status.h"

namespace edgemon::client {

// Every call's outcome is an edgemon::Status (a gRPC status code and its
// message) or an edgemon::Result<T> (include/edgemon/status.h).

// A push destination's state (DeviceInfo.push, docs/push.md); unknown
// figures are nullopt, never 0.
struct PushStatus {
  std::string destination;  // scheme://host:port/path
  std::string protocol;     // "remote-write" | "otlp"
  std::optional<int64_t> last_success_ns;
  std::optional<int64_t> last_error_ns;
  std::string last_error;
  std::optional<int64_t> backlog_frames;
  std::optional<int64_t> backlog_age_ns;
  uint64_t samples_sent = 0;
  uint64_t samples_retried = 0;
  uint64_t samples_failed = 0;
  std::optional<int64_t> failing_since_ns;
  bool stalled = false;  // failing for an hour or more
};

// GetDeviceInfo. inventory.channels is indexed by channel id (ids are dense);
// a channel whose kind or field this client does not know (a newer daemon)
// keeps its slot with an empty name and is counted in `unknown_channels`.
struct DeviceInfo {
  Inventory inventory;
  uint64_t generation = 0;
  std::string daemon_version;
  uint32_t interval_ms = 0;
  uint32_t energy_rate_hz = 0;
  uint32_t api_version = 0;
  size_t unknown_channels = 0;
  // The daemon's time when it answered, on the frames' timeline (nullopt
  // from an older daemon). Relative ranges are computed from it, so a
  // client's own clock (or a stepped one) never shifts them.
  std::optional<int64_t> now_ns;
  std::vector<PushStatus> push;  // empty: no push destination
};

// A frame as received: values indexed by channel id, plus the inventory
// generation it belongs to (re-fetch DeviceInfo when it changes).
struct LiveFrame {
  Frame frame;
  uint64_t generation = 0;
  // Asked for (Latest's last_rises): when each selected event counter last
  // rose within the store's last day, as (channel, realtime_ns); a counter
  // that did not rise is not listed. Empty from a daemon that predates it.
  std::vector<std::pair<ChannelId, int64_t>> last_rises;
};

// History's value types are the model's (include/edgemon/model.h): a
// window, a downsampled step and a summary read from the daemon are the
// same types the daemon's store and summarizer produce.
using edgemon::Bucket;
using edgemon::FreqResidency;
using edgemon::LoadSummary;
using edgemon::RailSummary;
using edgemon::Summary;
using edgemon::TempSummary;
using edgemon::Window;

struct Series {
  ChannelId id = 0;
  std::vector<Bucket> buckets;
};

// Query: raw frames (step 0) or per-channel downsampled series (step > 0).
struct QueryRequest {
  int64_t from_ns = 0;                // realtime, inclusive
  int64_t to_ns = 0;                  // realtime, exclusive
  std::vector<std::string> channels;  // keys or patterns; empty = all
  int64_t step_ns = 0;
  uint32_t limit = 0;  // 0 = server default
};

struct QueryResult {
  std::vector<Frame> frames;
  std::vector<Series> series;
  bool truncated = false;
  size_t chunks = 0;
  // Stored frames in the range the daemon could not decode and left out.
  uint64_t bad_frames = 0;
};

struct BoostLease {
  uint32_t rate_hz = 0;   // effective now, all leases included
  int64_t until_ns = 0;   // realtime this lease ends
  uint64_t lease_id = 0;  // renew with Boost(..., lease_id)
};

// ReadRailSamples, every page: the rail power samples kept at a boosted rate.
struct RailSampleSet {
  std::vector<std::string> keys;           // channel keys
  std::vector<int64_t> t_ns;               // realtime on the frames' timeline, ascending
  std::vector<std::vector<Value>> values;  // per key, one per t_ns; nullopt: no reading
  int64_t complete_to_ns = 0;              // every sample before it is stored (RailSamples)
  bool truncated = false;                  // more than kMaxRailSamples lay in the range
};
// The most samples RailSamples reads for one range or window (2 000 000:
// more than an hour at 500 Hz).
inline constexpr size_t kMaxRailSamples = 2'000'000;

struct Process {
  int32_t pid = 0;
  std::string user;
  std::string name;
  std::string command;
  std::optional<uint32_t> cpu_permille;  // none on the first request that sees the process
  std::optional<uint64_t> rss_kib;       // none where the daemon could not read it
  std::optional<uint64_t> gpu_mem_kib;
};

struct ProcessList {
  std::vector<Process> processes;
  int64_t realtime_ns = 0;
  // Why GPU memory is missing where the board accounts for it ("" otherwise).
  std::string gpu_mem_unavailable;
};

// Connection state of a Watcher.
enum class ConnectionState {
  kConnecting,    // a stream is being opened
  kConnected,     // the stream delivered its first frame
  kDisconnected,  // the stream ended with an error; retrying after a backoff
  kStopped,       // stopped by the caller, or a permanent error (see the Status)
};
std::string_view ToString(ConnectionState state);

struct WatchOptions {
  uint32_t interval_ms = 0;           // 0 = every frame
  std::vector<std::string> channels;  // keys, "kind/*", "kind/name/*"; empty = all
  // Reconnect backoff: starts at initial, doubles per failed attempt up to
  // max; reset once a stream delivers a frame.
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
};

using FrameCallback = std::function<void(const LiveFrame&)>;
// status: why the stream ended (kDisconnected, kStopped on error); OK otherwise.
using StateCallback = std::function<void(ConnectionState, const Status&)>;

// A running Watch. Reconnects by itself when the daemon goes away, until
// stopped. Errors that retrying cannot fix (INVALID_ARGUMENT, NOT_FOUND,
// UNIMPLEMENTED, PERMISSION_DENIED, UNAUTHENTICATED) stop it (kStopped with
// the Status). After a reconnect the daemon may have restarted: channel ids
// are stable only for one daemon's lifetime, so re-fetch DeviceInfo on
// kConnected (and when LiveFrame::generation changes).
class Watcher {
 public:
  virtual ~Watcher() = default;  // stops and joins
  // Stops the stream and joins the thread. Idempotent. Not from a callback.
  virtual void Stop() = 0;
  virtual bool running() const = 0;
  // Number of streams opened so far (1 + reconnect attempts).
  virtual uint64_t attempts() const = 0;
};

// The default daemon address of edgemon and edgetop: the packaged daemon's
// unix socket (include/edgemon/addresses.h). The environment variable
// EDGEMON_CONNECT overrides it, --connect overrides both.
using edgemon::kDefaultTarget;

// How to reach a TCP listener that needs more than plain text.
struct ConnectOptions {
  // TLS: set `tls` (roots from the system) or name a PEM file of roots.
  bool tls = false;
  std::string tls_ca_file;      // implies tls
  std::string tls_server_name;  // overrides the name checked in the certificate
  // Sent as "authorization: Bearer <token>" on every call when not empty.
  std::string bearer_token;
};

class Client {
 public:
  // Creates the channel (no I/O: a daemon that is not up yet is not an error
  // here; calls fail with UNAVAILABLE until it is). INVALID_ARGUMENT for an
  // empty or malformed target.
  static Result<std::unique_ptr<Client>> Connect(std::string_view target);
  // The same with TLS and/or a bearer token. INVALID_ARGUMENT also when the
  // CA file cannot be read, or TLS is asked for on a unix socket.
  static Result<std::unique_ptr<Client>> Connect(std::string_view target,
                                                 const ConnectOptions& options);

  // "unix:/path" for "/path"; other forms unchanged; INVALID_ARGUMENT
  // ("bad target '...': expected unix:/path, /path or host:port") when malformed.
  static Result<std::string> NormalizeTarget(std::string_view target);

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& target() const;

  // Deadline for unary calls and for a whole Query (default 10 s).
  void set_timeout(std::chrono::milliseconds timeout);

  Result<edgemon::client::DeviceInfo> DeviceInfo();
  // The newest frame of `channels` (empty: all); with last_rises, also when
  // the event counters among them last rose (one call either way).
  Result<LiveFrame> Latest(const std::vector<std::string>& channels = {}, bool last_rises = false);
  Result<QueryResult> Query(const QueryRequest& request);
  Result<QueryResult> Query(int64_t from_ns, int64_t to_ns,
                            const std::vector<std::string>& channels, int64_t step_ns = 0,
                            uint32_t limit = 0);
  // With a lease the window closes as abandoned unless RenewWindow is called
  // within lease_ms of its start or the last renewal. `caller_boottime_ns`:
  // the edge as this process read CLOCK_BOOTTIME (SystemClock::BoottimeNs)
  // right at it, so the call's own delays stay out of the window; sent over
  // a unix socket only (a daemon on another machine has another boottime
  // and stamps the edge when the call arrives). The daemon refuses a stamp
  // over 10 s old (INVALID_ARGUMENT).
  Result<Window> BeginWindow(const std::string& label,
                             std::optional<uint32_t> lease_ms = std::nullopt,
                             std::optional<int64_t> caller_boottime_ns = std::nullopt);
  Result<Window> RenewWindow(int64_t id);
  // `caller_start_boottime_ns`: the work's real start, read on CLOCK_BOOTTIME
  // once BeginWindow had returned (right before the work); the daemon moves
  // the window's start there, so BeginWindow's round trip stays out of it.
  // At or after the window's recorded start and at or before its end
  // (INVALID_ARGUMENT otherwise, the window left open); a unix socket only.
  // `sent`: the run's items and exit status, stored with the window (its
  // other fields are the daemon's and not sent).
  Result<Window> EndWindow(int64_t id, std::optional<int64_t> caller_boottime_ns = std::nullopt,
                           std::optional<int64_t> caller_start_boottime_ns = std::nullopt,
                           const WindowResult& sent = {});
  // Every page of ListWindows, in (start, id) order.
  Result<std::vector<Window>> ListWindows(int64_t from_ns = 0, int64_t to_ns = 0);
  Result<Summary> SummarizeWindow(int64_t window_id);
  Result<Summary> Summarize(int64_t from_ns, int64_t to_ns);
  // A new lease (lease_id 0), or a renewal of the lease with that id.
  Result<BoostLease> Boost(uint32_t rate_hz, uint32_t duration_ms, uint64_t lease_id = 0);
  Result<ProcessList> ListProcesses(const std::string& sort = "cpu", uint32_t limit = 0);
  // The rail samples of window `window_id`, or (window_id 0) of realtime
  // [from_ns, to_ns), every page, at most kMaxRailSamples (truncated beyond).
  Result<RailSampleSet> RailSamples(int64_t window_id, int64_t from_ns = 0, int64_t to_ns = 0);

  // Starts a Watch on its own thread. on_frame and on_state run on that
  // thread. The stream also stops when `stop` is requested. The returned
  // Watcher must not outlive this Client.
  std::unique_ptr<Watcher> Watch(const WatchOptions& options, FrameCallback on_frame,
                                 StateCallback on_state = {}, std::stop_token stop = {});

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgemon::client
