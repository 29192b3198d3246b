// TelemetryService: edgemon.v1.Telemetry on the gRPC callback API.
//
// Reactions never block: Watch is served from the WatchHub; every RPC that
// reads the store or the file system (Query, ListWindows, Summarize,
// ListProcesses) runs on the service's worker thread, and Query pages its
// results one chunk at a time, fetching the next page only after the
// previous chunk was written (transport back-pressure, bounded memory).
// BeginWindow and EndWindow take their time when the request arrives and run
// on a worker of their own, so they never wait behind long reads.
// Every stream finishes exactly once.
//
// Bad input is refused before anything is read or written, with
// INVALID_ARGUMENT or NOT_FOUND and a one-line message naming the field.
//
// Ownership (principal.h): every rate lease and window belongs to the
// principal whose call made it (the unix socket's SO_PEERCRED uid, recorded
// in peers() by the acceptor; a TCP peer's address). Renewing or ending
// another principal's is PERMISSION_DENIED (root excepted). Each principal
// holds at most Sampler::kMaxLeasesPerPrincipal rate leases; the windows'
// lifecycle, quotas and sweep are the window book's
// (daemon/windows/window_book.h), which the service runs on its window
// worker. Stream slots are shared per principal too
// (WatchHub::AcquireStream).
//
// Time: windows, Summarize's "now" and Boost's end are stamped on the
// frames' timeline (Sampler::TimelineNs: the wall clock kept monotonic
// across steps), never on the raw wall clock, so a record right after a
// step measures the frames it spans.
//
// Thread safety: gRPC calls the handlers from its threads; Stop() once,
// after grpc::Server::Shutdown returned.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daemon/collect/gpu_processes.h"
#include "daemon/collect/live_energy.h"
#include "daemon/collect/processes.h"
#include "daemon/collect/sysfs.h"
#include "daemon/runtime/peers.h"
#include "daemon/sampler.h"
#include "daemon/service/watch_hub.h"
#include "daemon/service/worker.h"
#include "daemon/store/ring_store.h"
#include "daemon/summary/summaries.h"
#include "daemon/summary/summarize.h"
#include "daemon/windows/window_book.h"
#include "edgemon/clock.h"
#include "edgemon/status.h"
#include "edgemon/v1/edgemon.grpc.pb.h"

namespace edgemon::service {

struct ServiceOptions {
  std::string daemon_version;
  uint32_t energy_rate_hz = 0;              // configured rail rate, for DeviceInfo
  int64_t frame_period_ns = 1'000'000'000;  // used when no sampler is given
  uint32_t default_rows = 10'000;           // Query limit when the request says 0
  uint32_t max_rows = 100'000;              // larger limits are INVALID_ARGUMENT
  uint32_t frames_per_chunk = 500;          // raw Query page size
  uint32_t summary_page_frames = 2000;      // Summarize reads frames in pages of this size
  size_t max_channels_per_request = 4096;
  size_t max_queued_jobs = 256;  // worker backlog; beyond it RESOURCE_EXHAUSTED
  // The sampler's live energy counters: ranges past the newest stored frame
  // are answered from them (null: from the store only).
  const LiveEnergy* live_energy = nullptr;
  // edgemond's one summary entry (main builds it; the live page and the push
  // shippers ask the same one). Null: the service makes its own from the
  // store, the sampler and the fields above (tests).
  const summary::Summaries* summaries = nullptr;
  // GPU memory per process for ListProcesses; null: the service reads the
  // nvmap table through `fs` itself (no NVML).
  GpuProcessReader* gpu_processes = nullptr;
  // Fills DeviceInfo.push with the push destinations' status (null: none).
  std::function<void(google::protobuf::RepeatedPtrField<v1::PushStatus>*)> push_status;
};

// A started Watch stream's settings (TelemetryService::PlanWatch).
struct WatchPlan {
  int64_t interval_ns = 0;
  std::vector<ChannelId> subset;  // empty: every channel
  std::function<void()> release;  // ends the live-rate lease; may be empty
  runtime::Principal who;         // holds the stream slot
};

class TelemetryService final : public v1::Telemetry::CallbackService {
 public:
  // An unleased window (a mark begun and never ended) still open this long
  // after its start is closed as abandoned (windows::WindowBook).
  static constexpr int64_t kUnleasedWindowMaxAgeNs = windows::WindowBook::kUnleasedMaxAgeNs;

  // `sampler` and `fs` may be null (Boost / ListProcesses then answer
  // UNIMPLEMENTED).
  TelemetryService(WatchHub& hub, store::RingStore& store, Clock& clock, Sampler* sampler,
                   SysFs* fs, ServiceOptions options);
  ~TelemetryService() override;

  // Stops the worker; call after the server has shut down.
  void Stop();

  grpc::ServerUnaryReactor* GetDeviceInfo(grpc::CallbackServerContext* ctx,
                                          const v1::GetDeviceInfoRequest* req,
                                          v1::DeviceInfo* resp) override;
  grpc::ServerUnaryReactor* GetLatest(grpc::CallbackServerContext* ctx,
                                      const v1::GetLatestRequest* req, v1::Frame* resp) override;
  grpc::ServerWriteReactor<v1::Frame>* Watch(grpc::CallbackServerContext* ctx,
                                             const v1::WatchRequest* req) override;
  grpc::ServerWriteReactor<v1::QueryChunk>* Query(grpc::CallbackServerContext* ctx,
                                                  const v1::QueryRequest* req) override;
  grpc::ServerUnaryReactor* BeginWindow(grpc::CallbackServerContext* ctx,
                                        const v1::BeginWindowRequest* req,
                                        v1::Window* resp) override;
  grpc::ServerUnaryReactor* EndWindow(grpc::CallbackServerContext* ctx,
                                      const v1::EndWindowRequest* req, v1::Window* resp) override;
  grpc::ServerUnaryReactor* ListWindows(grpc::CallbackServerContext* ctx,
                                        const v1::ListWindowsRequest* req,
                                        v1::ListWindowsResponse* resp) override;
  grpc::ServerUnaryReactor* Summarize(grpc::CallbackServerContext* ctx,
                                      const v1::SummarizeRequest* req, v1::Summary* resp) override;
  grpc::ServerUnaryReactor* Boost(grpc::CallbackServerContext* ctx, const v1::BoostRequest* req,
                                  v1::BoostResponse* resp) override;
  grpc::ServerUnaryReactor* ListProcesses(grpc::CallbackServerContext* ctx,
                                          const v1::ListProcessesRequest* req,
                                          v1::ListProcessesResponse* resp) override;
  // rail_samples.cc
  grpc::ServerUnaryReactor* ReadRailSamples(grpc::CallbackServerContext* ctx,
                                            const v1::ReadRailSamplesRequest* req,
                                            v1::RailSamples* resp) override;

  // A Watch request checked (interval, channels) and started: its stream
  // slot taken from the hub and, when faster than frames, a live-rate lease
  // held for `who` (ended by the plan's `release`). Used by Watch and by the
  // local feed (feed.h); the caller releases the slot when the stream ends.
  Result<WatchPlan> PlanWatch(const v1::WatchRequest& req, const runtime::Principal& who);

  WatchHub& hub() { return hub_; }
  // Unix-socket peers by connection (filled by ApiServer's acceptor).
  runtime::PeerTable& peers() { return peers_; }
  // Now on the frames' timeline (the raw wall clock without a sampler).
  int64_t Now() const;
  store::RingStore& store() { return store_; }
  Clock& clock() { return clock_; }
  Worker& worker() { return worker_; }
  const ServiceOptions& options() const { return options_; }
  int64_t frame_period_ns() const;
  // Sweeps of leased windows the timer asked for (none while no open
  // window has a lease).
  uint64_t timer_sweeps() const { return timer_sweeps_.load(); }

 private:
  // Who made the call.
  runtime::Principal Who(const grpc::CallbackServerContext* ctx) const;
  // Runs `job` on the worker and finishes the unary call with its status.
  grpc::ServerUnaryReactor* Defer(grpc::CallbackServerContext* ctx, std::function<Status()> job,
                                  Worker* on = nullptr);
  // Every live counter at t (key -> mJ).
  void LiveCounters(int64_t t_ns, google::protobuf::Map<std::string, double>* out) const;
  // What the window [start, end] stores with its end: `sent` (the caller's
  // items and exit status) and the input rail's energy from the counters at
  // the edges (live, else stored).
  WindowResult RunResult(int64_t start, int64_t end, WindowResult sent) const;
  // Summarize on the worker (summary::Summarizer): the edges and energy
  // first, then the frames in bounded pages, each page its own job so other
  // requests run between them; encodes the summary into `out` and finishes
  // `r` exactly once.
  void RunSummarize(grpc::ServerUnaryReactor* r, int64_t from_ns, int64_t to_ns, v1::Summary* out);
  void NextSummaryPage(grpc::ServerUnaryReactor* r, const std::shared_ptr<summary::Summarizer>& run,
                       v1::Summary* out);
  Status DoListProcesses(const v1::ListProcessesRequest& req, v1::ListProcessesResponse* out);

  WatchHub& hub_;
  store::RingStore& store_;
  Clock& clock_;
  Sampler* sampler_;
  SysFs* fs_;
  std::unique_ptr<GpuProcessReader> own_gpu_processes_;
  GpuProcessReader* gpu_processes_ = nullptr;
  std::unique_ptr<ProcessReader> processes_;  // null without `fs`
  const ServiceOptions options_;
  std::unique_ptr<summary::Summaries> own_summaries_;  // without options_.summaries
  const summary::Summaries* summaries_ = nullptr;
  Worker worker_;
  Worker window_worker_;  // BeginWindow / EndWindow / lease sweeps only

  runtime::PeerTable peers_;
  // Posts the window book's Sweep to the window worker a few times a second
  // while some open window holds a lease.
  std::thread lease_timer_;
  std::mutex timer_mu_;
  std::condition_variable timer_cv_;
  bool timer_stop_ = false;  // guarded by timer_mu_
  std::atomic<uint64_t> timer_sweeps_{0};
  // The open windows' lifecycle (daemon/windows/window_book.h), used on the
  // window worker only; after the timer's members, which it wakes.
  windows::WindowBook book_;
};

}  // namespace edgemon::service
