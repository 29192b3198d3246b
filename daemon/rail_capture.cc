// The sampler's rail capture (sampler.h): the power rails' readings while an
// energy lease is held, in chunks for the store (store/rail_samples.h).
#include <algorithm>

#include "daemon/sampler.h"

namespace edgemon {

void Sampler::CaptureRails(int64_t realtime_ns, const std::vector<Value>& values) {
  if (!rail_sink_) return;
  if (collection_.generation() != rail_generation_ || !rail_chunk_.keys) {
    // The rails changed: what was captured goes with the old keys.
    FlushRails();
    rail_generation_ = collection_.generation();
    rail_ids_.clear();
    auto keys = std::make_shared<std::vector<std::string>>();
    const auto& channels = collection_.inventory().channels;
    for (ChannelId id : collection_.fast_channels()) {
      if (id >= channels.size() || channels[id].field != Field::kPower) continue;
      if (rail_ids_.size() == store::kMaxChunkChannels) break;
      rail_ids_.push_back(id);
      keys->push_back(channels[id].Key());
    }
    rail_chunk_.keys = std::move(keys);
    rail_chunk_.t_ns.reserve(store::kMaxChunkSamples);
    rail_chunk_.values.reserve(store::kMaxChunkSamples * rail_ids_.size());
  }
  if (rail_ids_.empty()) return;
  // Times never go back within the capture (a fast sample stamped before the
  // frame that moved the offset).
  if (!rail_chunk_.t_ns.empty()) realtime_ns = std::max(realtime_ns, rail_chunk_.t_ns.back());
  rail_chunk_.t_ns.push_back(realtime_ns);
  for (ChannelId id : rail_ids_)
    rail_chunk_.values.push_back(id < values.size() ? values[id] : Value());
  rail_samples_.fetch_add(1, std::memory_order_relaxed);
  if (rail_chunk_.t_ns.size() >= store::kMaxChunkSamples) FlushRails();
}

void Sampler::FlushRails() {
  if (rail_chunk_.t_ns.empty()) return;
  store::RailChunk full;
  full.keys = rail_chunk_.keys;
  std::swap(full.t_ns, rail_chunk_.t_ns);
  std::swap(full.values, rail_chunk_.values);
  // The next chunk's room, taken once a frame period at most.
  rail_chunk_.t_ns.reserve(store::kMaxChunkSamples);
  rail_chunk_.values.reserve(store::kMaxChunkSamples * rail_ids_.size());
  rail_sink_(std::move(full));
}

}  // namespace edgemon
