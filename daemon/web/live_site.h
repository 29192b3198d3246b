// LiveSite: the live page on edgemond's HTTP listener (the one that serves
// /metrics, daemon/metrics/listener.h, with its address rules, bounds and
// token), and the JSON endpoints the page reads (daemon/web/live_json.h):
//
//   GET /              the page (daemon/web/live.html), gzipped when accepted
//   GET /live.js       its script (daemon/web/live.js)
//   GET /api/live      text/event-stream: "hello" (board, channels, rail
//                      tree), then a "frame" per stored frame; at most
//                      `max_streams` at once, further ones 503
//   GET /api/history   ?from=&to=&step=&channels=: each channel downsampled
//                      by the store (RingStore::DownsampleWithQueued,
//                      Tier::kAuto: the rollup tier for long ranges), and the
//                      windows and marks in the range; 400 with a one-line
//                      message for bad parameters. Frames still queued for
//                      the store's batched writer are read from its memory:
//                      pages refreshing their history make the store commit
//                      (write flash) nothing
//   GET /api/energy    ?window=ID or ?from=&to=: the Summary (energy per
//                      rail) of a window or a range, the queued frames read
//                      from the writer's memory as for the history (no
//                      commit); 400, 404 as above
//
// Budget: /api/history and /api/energy read the store; at most
// `max_reads` of them run at once and `max_waiting` more wait, each up to
// `wait_ms`, for a turn; any more, or one whose wait runs out, gets 503 with
// Retry-After. A read stops its work (not only its reply) at `read_budget_ms`
// with 503: history between series, energy between pages of frames. A
// history answer is at most kMaxHistoryCells points (live_json.h), encoded
// one series at a time, so the listener's memory is bounded by
// max_reads x one answer (about 2 MB each), whatever the request mix.
//
// Live streams: OnFrame (the sampler thread) returns at once when no stream
// is open (one atomic load: nobody watching costs nothing); otherwise it
// bumps a counter and wakes the streams, each of which takes the newest
// frame from the daemon's publish path (`latest`, the watch hub) and writes
// it: latest-wins, nothing queues, a slow page only slows its own stream
// (each write has the listener's write timeout). A stream sends a comment
// every `keep_alive_ms` while no frame comes. Stop() (called by the
// listener's Stop before it joins its workers) ends every stream at once
// and refuses new ones.
//
// Thread safety: OnFrame on the sampler thread; the routes on the listener's
// workers; Stop from any thread. The store, `latest` and the sampler must
// outlive the listener the routes are mounted on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "daemon/metrics/listener.h"
#include "daemon/runtime/pi_mutex.h"
#include "daemon/sampler.h"
#include "daemon/store/ring_store.h"
#include "daemon/summary/summaries.h"
#include "edgemon/channel.h"

namespace edgemon::web {

// The newest published frame and its inventory (null before the first).
struct Latest {
  std::shared_ptr<const Inventory> inventory;
  uint64_t generation = 0;
  std::shared_ptr<const Frame> frame;
};

class LiveSite final : public FrameSink {
 public:
  struct Options {
    std::function<Latest()> latest;    // required
    const Sampler* sampler = nullptr;  // frame period, timeline, rail rates
    // edgemond's one summary entry (/api/energy), as the API and push use it
    // (null: the site makes its own from the store and the sampler: tests).
    const summary::Summaries* summaries = nullptr;
    size_t max_streams = 16;     // live streams at once (of the listener's 64 workers)
    size_t max_reads = 2;        // history and energy reads at once
    size_t max_waiting = 8;      // reads waiting for a turn; more get 503
    int wait_ms = 1000;          // the longest wait for a turn
    int read_budget_ms = 2000;   // a read's work stops here (503)
    int keep_alive_ms = 15'000;  // a comment this often without frames
    int64_t default_period_ns = 1'000'000'000;  // without a sampler
  };

  LiveSite(store::RingStore& store, Options options);
  ~LiveSite() override;
  LiveSite(const LiveSite&) = delete;
  LiveSite& operator=(const LiveSite&) = delete;

  // FrameSink (stored frames only).
  void OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) override;

  // The routes, to mount on a listener before it starts.
  metrics::Routes Routes();
  // Ends the open streams and refuses new ones. Idempotent.
  void Stop();

  size_t streams() const { return streams_.load(); }
  uint64_t frames_sent() const { return frames_sent_.load(); }
  uint64_t streams_refused() const { return refused_.load(); }
  // Reads answered 503 for want of a turn or over their budget.
  uint64_t reads_refused() const { return reads_refused_.load(); }

  class Handlers;

 private:
  int64_t Now() const;
  int64_t PeriodNs() const;

  store::RingStore& store_;
  const Options options_;
  std::unique_ptr<summary::Summaries> own_summaries_;  // without options_.summaries
  const summary::Summaries* summaries_ = nullptr;
  std::atomic<size_t> streams_{0};
  std::atomic<uint64_t> frames_sent_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> reads_refused_{0};

  // Turns for store reads (guarded by mu_).
  size_t reads_running_ = 0;
  size_t reads_waiting_ = 0;
  std::condition_variable_any read_turn_;

  runtime::PiMutex mu_;  // shared with the sampler (OnFrame; runtime/pi_mutex.h)
  std::condition_variable_any cv_;
  uint64_t published_ = 0;  // guarded by mu_: frames offered while streams were open
  bool stopping_ = false;   // guarded by mu_
};

}  // namespace edgemon::web
