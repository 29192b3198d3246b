// Shipper: pushes the store's history to one remote engine, oldest first,
// and remembers in the store what the receiver acknowledged.
//
// DESIGN NOTE
// ===========
//
// The store is the queue. Nothing is buffered in memory beyond the batch in
// flight: each batch is read from the raw frames after the destination's
// cursor (RingStore::FramesAfter, store invariant I16), encoded, sent, and
// the cursor is committed only after the receiver's 2xx. Delivery is at
// least once: a daemon killed between the 2xx and the cursor's commit sends
// that one batch again; every sample carries its frame's own time, so a
// receiver that accepts out-of-order samples fills late data in place.
//
// Answers (Classify):
//   2xx                          acknowledged: the cursor moves past the batch
//                                (whatever the body: at most kReplyReadBytes
//                                of it are read, http.h)
//   429, 408, 5xx, 1xx, no (whole) answer, the deadline passed
//                                the same batch again after a backoff: doubling
//                                from min_backoff to max_backoff with jitter
//                                (a random delay between half and all of
//                                it), at least the receiver's Retry-After (up
//                                to kRetryAfterCapMs)
//   3xx                          a redirect, not followed: retried like a 5xx,
//                                logged with its Location
//   400, 413, 415, 422           the batch is malformed (or too large for the
//                                receiver): refused for good, logged with the
//                                receiver's message, counted (samples_failed,
//                                batches_failed) and moved past
//   any other 4xx                the destination is misconfigured, not the
//                                batch (401, 403, 404, 405, 407, 410, ...):
//                                retried at max_backoff, logged, so a bad
//                                token or path drops no history
// A destination that has acknowledged nothing for kStalledAfterNs while
// failing is logged once as an error and flagged (PushHealth::stalled).
//
// Pace: batches of at most batch_samples samples, at most rate_limit samples
// a second on average (a backlog drains without a stampede when a fleet
// reconnects); once caught up the shipper looks for new frames every
// `interval`. A look that finds nothing committed reads the frames still
// queued for the store's batched writer from its memory
// (RingStore::FramesAfterWithQueued), at most once an `interval`, and
// commits nothing: a receiver is at most about an interval behind, whatever
// store.commit_interval_ms is, and the cursor at such a frame goes into the
// file with the frame (store invariant 16).
//
// Falling behind: when the cursor is older than the oldest raw frame held
// (retention or the size cap deleted frames never sent), the span between
// is sent from the rollup tier (a sample per channel and rollup period:
// the period's average, its maximum for counters, at the period's start),
// counted in rollup_gaps and logged, then the raw frames follow.
//
// Closed windows (when `windows`) are sent after the frames that cover them,
// ordered by (end, id), with their own cursor in the same row.
//
// Health reads the backlog from the store and the committed cursor when it
// is asked, so it is true while a request hangs.
//
// Thread safety: Start/Stop from one thread; RequestStop and Health from any
// thread. The shipper thread is the only one that writes its cursor.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemon/metrics/exposition.h"
#include "daemon/push/http.h"
#include "daemon/push/remote_write.h"
#include "daemon/push/types.h"
#include "daemon/store/ring_store.h"
#include "edgemon/clock.h"
#include "edgemon/status.h"

namespace edgemon::push {

enum class Protocol : uint8_t { kRemoteWrite, kOtlp };

// What an HTTP status means for the batch (the DESIGN NOTE's table).
enum class Verdict : uint8_t { kAcknowledged, kRetry, kRedirected, kMisconfigured, kRefused };
Verdict Classify(int status);

// A destination failing this long without an acknowledgement is stalled.
inline constexpr int64_t kStalledAfterNs = int64_t{3600} * 1'000'000'000;

struct ShipperOptions {
  runtime::Url url;
  Protocol protocol = Protocol::kRemoteWrite;
  HttpOptions http;
  size_t batch_samples = 5000;
  double rate_limit = 20000;  // samples per second; 0 = no limit
  bool frames = true;
  bool windows = true;
  int64_t interval_ns = 30'000'000'000;  // look for new frames this often when caught up
  int64_t min_backoff_ns = 1'000'000'000;
  int64_t max_backoff_ns = 300'000'000'000;
  Identity identity;
  // Summarizes a closed window (energy per rail); null: windows are not sent.
  std::function<Result<WindowEnergy>(const Window&)> window_energy;
  // Log lines: level 0 info, 1 warn, 2 error.
  std::function<void(int level, const std::string&)> log;
  // Null: the system clock. Must outlive the shipper.
  Clock* clock = nullptr;
};

// The cursor's key in the store: protocol and URL (as displayed).
std::string CursorName(const ShipperOptions& options);

// The rate limit: the wait after a batch of `samples` sent at `now_ns` so
// that batches average at most `rate` samples a second (0: no limit).
// `pace_ns` is the shipper's schedule, carried from batch to batch; an idle
// shipper earns at most one second of credit.
int64_t RateLimitWait(int64_t& pace_ns, int64_t now_ns, size_t samples, double rate);

class Shipper {
 public:
  Shipper(store::RingStore& store, ShipperOptions options);
  ~Shipper();  // Stop()s
  Shipper(const Shipper&) = delete;
  Shipper& operator=(const Shipper&) = delete;

  void Start();
  // Asks the thread to end and aborts the request in flight (its batch stays
  // in the store), without waiting; any thread.
  void RequestStop();
  // RequestStop, then waits for the thread (milliseconds; a TCP connect in
  // progress at most kConnectCapMs).
  void Stop();

  metrics::PushHealth Health() const;

  // What one step did (the thread's loop; tests drive it directly).
  enum class Step : uint8_t { kIdle, kSent, kRefused, kRetry, kStoreError };
  struct StepResult {
    Step step = Step::kIdle;
    size_t samples = 0;
    int64_t wait_ns = 0;  // kRetry: the backoff before the next try
  };
  StepResult ShipOnce();

 private:
  void Run();
  Status LoadCursor();
  // Sends one batch (a serialized request, not yet compressed); on a 2xx,
  // or a refusal for good, commits `next` as the cursor.
  StepResult Deliver(const std::string& request, size_t samples, const store::PushCursor& next,
                     const char* what);
  StepResult ShipGap(const store::StoreStats& stats);
  StepResult ShipFrames();
  StepResult ShipWindows();
  int64_t Backoff(std::optional<int64_t> retry_after_ms);
  void Log(int level, const std::string& message);
  // The inventory of a read's channels (ids = columns) and its labels.
  const SeriesLabels& PlanFor(const std::vector<store::StoredChannel>& channels);
  // The plan of every channel the store knows.
  Status LoadPlan();

  store::RingStore& store_;
  const ShipperOptions options_;
  const std::string name_;
  SystemClock system_clock_;
  Clock& clock_;
  HttpPoster http_;
  const LabelSet external_;

  // Shipper thread only.
  std::optional<store::PushCursor> cursor_;  // loaded: nullopt = never acknowledged
  bool cursor_loaded_ = false;
  bool in_gap_ = false;
  int attempt_ = 0;
  // When ShipFrames last read the store's queued frames (monotonic).
  std::optional<int64_t> flushed_at_ns_;
  std::mt19937_64 rng_;
  std::vector<store::StoredChannel> plan_channels_;
  Inventory plan_inventory_;
  std::optional<SeriesLabels> plan_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;            // guarded by mu_
  metrics::PushHealth health_;   // guarded by mu_
  bool stalled_logged_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace edgemon::push
