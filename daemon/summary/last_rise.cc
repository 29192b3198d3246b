#include "daemon/summary/last_rise.h"

#include <algorithm>

namespace edgemon::summary {

std::optional<size_t> LastRise(const std::vector<Bucket>& buckets) {
  std::optional<size_t> last;
  std::optional<int64_t> before;  // the highest value before the bucket
  for (size_t i = 0; i < buckets.size(); ++i) {
    const Bucket& b = buckets[i];
    if (b.count == 0) continue;
    if (b.min < b.max || (before && b.max > *before)) last = i;
    before = std::max(before.value_or(b.max), b.max);
  }
  return last;
}

std::vector<std::pair<std::string, int64_t>> LastRises(store::RingStore& store,
                                                       const std::vector<std::string>& keys,
                                                       int64_t now_ns) {
  std::vector<std::pair<std::string, int64_t>> out;
  const int64_t from = now_ns - kLastRiseLookbackNs, to = now_ns + 1;
  for (const std::string& key : keys) {
    auto buckets = store.Downsample(key, from, to, kLastRiseStepNs);
    if (!buckets.ok()) continue;
    auto i = LastRise(*buckets);
    if (!i) continue;
    const Bucket& b = (*buckets)[*i];
    std::optional<int64_t> before;  // the highest count before the minute
    for (size_t k = 0; k < *i; ++k) {
      if ((*buckets)[k].count > 0)
        before = std::max(before.value_or((*buckets)[k].max), (*buckets)[k].max);
    }
    // The minute's frames: the first one above every count before it (and
    // above the first frame of the minute, for a rise within it) is the rise.
    int64_t at = b.t_ns;                            // the minute, when its frames were retired
    constexpr size_t kMaxFramesInAMinute = 60'000;  // 1 kHz, above the fastest frame rate
    if (auto frames = store.Range(b.t_ns, b.t_ns + kLastRiseStepNs, {key}, kMaxFramesInAMinute);
        frames.ok()) {
      for (const Frame& f : frames->frames) {
        if (f.values.empty() || !f.values[0]) continue;
        const int64_t v = *f.values[0];
        if (before && v > *before) at = f.realtime_ns;
        before = std::max(before.value_or(v), v);
      }
    }
    out.emplace_back(key, at);
  }
  return out;
}

}  // namespace edgemon::summary
