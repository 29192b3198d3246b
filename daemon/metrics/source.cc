#include "daemon/metrics/source.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "edgemon/clock.h"
#include "edgemon/secret_file.h"

namespace edgemon::metrics {

MetricsSource::MetricsSource(const Collection& collection, const Sampler* sampler,
                             store::RingStore* store, Options options)
    : collection_(collection),
      sampler_(sampler),
      store_(store),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : system_clock_) {}

void MetricsSource::OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) {
  OnSharedFrame(inventory, generation, std::make_shared<const Frame>(frame), frame.boottime_ns);
}

void MetricsSource::OnSharedFrame(const Inventory& inventory, uint64_t generation,
                                  const std::shared_ptr<const Frame>& frame, int64_t) {
  bool new_inventory = !inventory_ || generation != generation_;
  if (new_inventory) {
    inventory_ = std::make_shared<const Inventory>(inventory);
    generation_ = generation;
  }
  // Error counts are copied only when they changed (rarely, on a healthy board).
  if (new_inventory || !errors_ || collection_.total_errors() != errors_total_) {
    errors_ = std::make_shared<const std::vector<uint64_t>>(collection_.error_counts());
    errors_total_ = collection_.total_errors();
  }
  std::shared_ptr<const Frame> old;
  {
    std::lock_guard lk(latest_mu_);
    old = std::move(latest_.frame);  // freed outside the lock
    latest_.inventory = inventory_;
    latest_.generation = generation_;
    latest_.frame = frame;
    latest_.errors = errors_;
  }
}

std::shared_ptr<const Exposition> MetricsSource::PlanFor(const Snapshot& s) {
  std::lock_guard lk(plan_mu_);
  if (!plan_ || plan_generation_ != s.generation) {
    plan_ = std::make_shared<const Exposition>(*s.inventory);
    plan_generation_ = s.generation;
  }
  return plan_;
}

std::optional<StoreHealth> MetricsSource::StoreStats() {
  if (store_ == nullptr) return std::nullopt;
  int64_t now = clock_.MonotonicNs();
  {
    std::lock_guard lk(cache_mu_);
    if (store_cache_ && now - store_cache_at_ns_ < options_.store_stats_ttl_ns) return store_cache_;
  }
  std::unique_lock refresh(store_mu_, std::try_to_lock);
  if (refresh.owns_lock()) {
    // When the file cannot be read (damaged), what the store knows without
    // it is still exported; only the frame count is left out.
    auto st = store_->Stats();
    const store::StoreStats c = st.ok() ? *st : store_->Counters();
    StoreHealth h;
    h.bytes = c.db_bytes + c.wal_bytes;
    h.max_bytes = c.max_bytes;
    if (st.ok()) h.frames = c.frames;
    h.dropped_frames = c.dropped_frames;
    h.failed_commits = c.failed_commits;
    h.damaged = c.damaged;
    std::lock_guard lk(cache_mu_);
    store_cache_ = h;
    store_cache_at_ns_ = now;  // a failing Stats() is not retried by every scrape
    return store_cache_;
  }
  std::lock_guard lk(cache_mu_);
  return store_cache_;
}

std::string MetricsSource::Render(Format format) {
  Snapshot s;
  {
    std::lock_guard lk(latest_mu_);
    s = latest_;
  }
  Health h;
  h.version = options_.version;
  if (sampler_ != nullptr) {
    h.frames = sampler_->frames();
    h.energy_samples = sampler_->fast_samples();
    h.deadline_misses = sampler_->deadline_misses();
    h.frame_period_ns = sampler_->frame_period_ns();
    int64_t energy = sampler_->energy_period_ns();
    h.energy_period_ns = energy > 0 ? energy : *h.frame_period_ns;
  }
  if (s.errors) h.read_errors = *s.errors;
  h.store = StoreStats();
  // Damage shows at once, not when the cached statistics expire.
  if (h.store && store_->damaged()) h.store->damaged = true;
  std::vector<ProcessGpuMemory> top;
  if (options_.gpu_processes != nullptr) {
    auto gpu = options_.gpu_processes->Read();
    for (const auto& [pid, kib] : gpu->kib) {
      auto name = gpu->name.find(pid);
      top.push_back({pid, name != gpu->name.end() ? name->second : std::string(), kib});
    }
    auto more = [](const ProcessGpuMemory& a, const ProcessGpuMemory& b) {
      return a.kib != b.kib ? a.kib > b.kib : a.pid < b.pid;
    };
    size_t n = std::min(top.size(), options_.top_gpu_processes);
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(n), top.end(), more);
    top.resize(n);
    h.gpu_processes = top;
  }
  std::vector<PushHealth> push;
  if (options_.push_health) {
    push = options_.push_health();
    h.push = push;
  }
  if (!options_.control_state_path.empty()) {
    int err = 0;
    auto text = ReadRegularFile(options_.control_state_path, 1 << 20, &err);
    auto state = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
    if (state.is_object() && state.contains("leases") && state["leases"].is_array()) {
      ControlHealth c;
      c.leases = state["leases"].size();
      if (state.contains("changes") && state["changes"].is_number_unsigned()) {
        c.changes = state["changes"].get<uint64_t>();
      }
      h.control = c;
    }
  }
  if (!s.inventory) {
    // Before the first frame: health only.
    return Exposition(Inventory{}).Render(nullptr, h, format);
  }
  return PlanFor(s)->Render(s.frame.get(), h, format);
}

}  // namespace edgemon::metrics
