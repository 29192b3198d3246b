#include "daemon/collect/live_energy.h"

#include <algorithm>

namespace edgemon {

LiveEnergy::Reading LiveEnergy::Publish(const Keys& keys, Reading reading) {
  // A new key list: the buffers of a whole ring, allocated now, outside the
  // lock, so that filling the ring takes nothing more from the allocator
  // (whose locks the sampler would share with every other thread).
  std::vector<Reading> spares;
  const bool new_keys = keys != keys_;  // keys_ is written by this thread only
  if (new_keys) {
    const size_t n = keys ? keys->size() : 0;
    spares.resize(capacity_);
    for (Reading& r : spares) {
      r.mj.reserve(n);
      r.mw.reserve(n);
    }
  }
  std::lock_guard lock(mu_);
  if (new_keys) {
    keys_ = keys;
    ring_.clear();
    spares_ = std::move(spares);
  }
  if (!ring_.empty() && reading.realtime_ns < ring_.back().realtime_ns) ring_.clear();
  ring_.push_back(std::move(reading));
  Reading evicted;
  while (ring_.size() > capacity_) {
    evicted = std::move(ring_.front());
    ring_.pop_front();
  }
  if (evicted.mj.capacity() == 0 && !spares_.empty()) {
    evicted = std::move(spares_.back());
    spares_.pop_back();
  }
  return evicted;
}

void LiveEnergy::set_max_hold_ns(int64_t ns) {
  std::lock_guard lock(mu_);
  max_hold_ns_ = ns;
}

std::optional<size_t> LiveEnergy::IndexOf(const std::string& key) const {
  if (!keys_) return std::nullopt;
  auto it = std::find(keys_->begin(), keys_->end(), key);
  if (it == keys_->end()) return std::nullopt;
  return static_cast<size_t>(it - keys_->begin());
}

std::optional<double> LiveEnergy::CounterAt(const std::string& key, int64_t t) const {
  std::lock_guard lock(mu_);
  auto i = IndexOf(key);
  if (!i || ring_.empty() || t < ring_.front().realtime_ns) return std::nullopt;
  auto has = [&](const Reading& r) { return r.mj.size() > *i && r.mj[*i].has_value(); };
  // The readings around t that carry this counter (a hardware counter read
  // with frames only is absent from the rail-rate readings between them).
  auto after = std::upper_bound(ring_.begin(), ring_.end(), t,
                                [](int64_t v, const Reading& r) { return v < r.realtime_ns; });
  auto prev = after;
  while (prev != ring_.begin() && !has(*std::prev(prev))) --prev;
  if (prev == ring_.begin()) return std::nullopt;
  const Reading& p = *std::prev(prev);
  const double a = *p.mj[*i];
  const int64_t dt = t - p.realtime_ns;
  if (dt == 0) return a;
  auto next = std::find_if(after, ring_.end(), has);
  if (dt > max_hold_ns_) {
    // A gap the integrator does not bridge: the counter holds over it; after
    // the newest reading the sampler has stalled and nothing is invented.
    if (next == ring_.end()) return std::nullopt;
    return a;
  }
  // The power of the newest sample at or before the reading, held: so a
  // reading taken at an instant (EndWindow) reads the same later, when
  // newer samples exist. Without a power sample the counter holds.
  std::optional<int64_t> mw;
  for (auto it = std::prev(prev); it != after; ++it) {
    if (it->mw.size() > *i && it->mw[*i]) mw = it->mw[*i];
  }
  double v = a + (mw ? static_cast<double>(*mw) * static_cast<double>(dt) * 1e-9 : 0.0);
  // Never past the next reading: the counter stays monotonic.
  if (next != ring_.end()) v = std::min(v, *next->mj[*i]);
  return v;
}

std::optional<int64_t> LiveEnergy::PeakIn(const std::string& key, int64_t from_ns,
                                          int64_t to_ns) const {
  std::lock_guard lock(mu_);
  auto i = IndexOf(key);
  if (!i) return std::nullopt;
  std::optional<int64_t> peak;
  auto first = std::lower_bound(ring_.begin(), ring_.end(), from_ns,
                                [](const Reading& r, int64_t v) { return r.realtime_ns < v; });
  for (auto it = first; it != ring_.end() && it->realtime_ns < to_ns; ++it) {
    if (it->mw.size() > *i && it->mw[*i]) peak = std::max(peak.value_or(*it->mw[*i]), *it->mw[*i]);
  }
  return peak;
}

std::optional<int64_t> LiveEnergy::oldest_ns() const {
  std::lock_guard lock(mu_);
  if (ring_.empty()) return std::nullopt;
  return ring_.front().realtime_ns;
}

std::vector<std::string> LiveEnergy::keys() const {
  std::lock_guard lock(mu_);
  return keys_ ? *keys_ : std::vector<std::string>{};
}

}  // namespace edgemon
