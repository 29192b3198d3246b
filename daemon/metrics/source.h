// MetricsSource: what a /metrics scrape renders, kept in memory.
//
// On the sampler thread (FrameSink::OnFrame) it copies the frame, and the
// per-channel read-error counts when they changed, into an immutable
// snapshot and swaps it in under a mutex held for a pointer swap: sampling
// never waits on a scrape. A scrape (Render, any thread) takes the snapshot
// pointer, the sampler's atomic counters and the store's statistics (cached,
// refreshed at most every `store_stats_ttl_ns` by the scrape that finds them
// stale; other scrapes meanwhile use the cached copy) and renders them with
// an Exposition cached per inventory generation; the age of the cached
// statistics is read from Options::clock. Nothing here reads sysfs,
// except the per-process GPU memory table through Options::gpu_processes
// (cached by that reader).
//
// Thread safety: OnFrame on the sampler thread; Render from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/gpu_processes.h"
#include "daemon/metrics/exposition.h"
#include "daemon/runtime/pi_mutex.h"
#include "daemon/sampler.h"
#include "daemon/store/ring_store.h"
#include "edgemon/clock.h"

namespace edgemon::metrics {

class MetricsSource final : public FrameSink {
 public:
  struct Options {
    std::string version;
    int64_t store_stats_ttl_ns = 5'000'000'000;
    // edgemon-control's state file, read at scrape time; "" or absent: not exported.
    std::string control_state_path = "";
    // The processes using the most GPU memory, read (and cached) by the
    // reader at scrape time; null: not exported.
    GpuProcessReader* gpu_processes = nullptr;
    size_t top_gpu_processes = 10;
    // The push shipper's figures per destination, read at scrape time;
    // empty: not exported.
    std::function<std::vector<PushHealth>()> push_health = nullptr;
    // The clock store_stats_ttl_ns is measured on (monotonic); null: the
    // system clock. Must outlive this object.
    Clock* clock = nullptr;
  };
  // `sampler` and `store` may be null (their metrics are then left out).
  // All references must outlive this object.
  MetricsSource(const Collection& collection, const Sampler* sampler, store::RingStore* store,
                Options options);

  void OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) override;
  // Keeps the sampler's snapshot itself: no copy.
  void OnSharedFrame(const Inventory& inventory, uint64_t generation,
                     const std::shared_ptr<const Frame>& frame, int64_t scheduled_ns) override;

  std::string Render(Format format);

 private:
  struct Snapshot {
    std::shared_ptr<const Inventory> inventory;
    uint64_t generation = 0;
    std::shared_ptr<const Frame> frame;
    std::shared_ptr<const std::vector<uint64_t>> errors;
  };
  std::shared_ptr<const Exposition> PlanFor(const Snapshot& s);
  std::optional<StoreHealth> StoreStats();

  const Collection& collection_;
  const Sampler* sampler_;
  store::RingStore* store_;
  const Options options_;
  SystemClock system_clock_;
  Clock& clock_;  // options_.clock, or system_clock_

  // Sampler thread only.
  std::shared_ptr<const Inventory> inventory_;
  uint64_t generation_ = 0;
  uint64_t errors_total_ = 0;
  std::shared_ptr<const std::vector<uint64_t>> errors_;

  mutable runtime::PiMutex latest_mu_;  // shared with the sampler (pi_mutex.h)
  Snapshot latest_;                     // guarded by latest_mu_

  std::mutex plan_mu_;
  uint64_t plan_generation_ = 0;            // guarded by plan_mu_
  std::shared_ptr<const Exposition> plan_;  // guarded by plan_mu_

  std::mutex store_mu_;  // held while refreshing; try_lock'ed by scrapes
  std::mutex cache_mu_;
  std::optional<StoreHealth> store_cache_;  // guarded by cache_mu_
  int64_t store_cache_at_ns_ = 0;           // guarded by cache_mu_ (clock_'s monotonic time)
};

}  // namespace edgemon::metrics
