// Rail samples: the rail power readings the sampler takes at the boosted
// rate (a Boost lease, the rate a `record --rate` or measure(rate=) asks
// for), kept in the store beside the frames, which stay at the frame rate.
//
// Table (schema version 8):
//
//   rail_chunks(id, t_ns, end_ns,   one row per chunk: the samples of one
//     count, data)                  frame period at most, realtime on the
//                                   frames' timeline; index by t_ns
//
// `data` (version 1): byte 0x01; varint number of channels, then each
// channel's key (varint length, bytes); varint number of samples; then per
// sample: varint time since the previous sample (the first: since t_ns),
// then per channel a varint, 0 for an absent value (missing is not zero) or
// zigzag(value) + 1. Three rails at 500 Hz cost about 10 bytes a sample.
//
// Bounds: a chunk holds at most kMaxChunkSamples samples of at most
// kMaxChunkChannels channels; the table holds at most RailBytesCap(max_bytes)
// bytes of blobs, the oldest chunks deleted first; and no chunk is kept that
// ended before the oldest raw frame (it goes with the frames of its time:
// raw retention, I5, and the size cap, I6). A read returns at most
// kMaxRailSamplesPerRead samples (truncated beyond).
//
// Thread safety: the codec is pure; the store's methods are the store's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/channel.h"

namespace edgemon::store {

inline constexpr size_t kMaxChunkSamples = 4096;
inline constexpr size_t kMaxChunkChannels = 64;
inline constexpr size_t kMaxRailSamplesPerRead = 100'000;

// Blob bytes the rail_chunks table may hold: an eighth of the store's cap,
// between 1 MiB and 256 MiB; 256 MiB without a cap.
constexpr int64_t RailBytesCap(int64_t max_bytes) {
  constexpr int64_t kMin = int64_t{1} << 20, kMax = int64_t{256} << 20;
  if (max_bytes <= 0) return kMax;
  const int64_t eighth = max_bytes / 8;
  return eighth < kMin ? kMin : eighth > kMax ? kMax : eighth;
}

// Samples as the sampler collects them: `values` holds keys->size() values
// per sample, sample after sample.
struct RailChunk {
  std::shared_ptr<const std::vector<std::string>> keys;
  std::vector<int64_t> t_ns;
  std::vector<Value> values;
};

// Samples read back: per channel (keys[i]) a column values[i] as long as t_ns.
struct RailSamples {
  std::vector<std::string> keys;
  std::vector<int64_t> t_ns;
  std::vector<std::vector<Value>> values;
  bool truncated = false;  // more samples lay in the range than the limit
};

// The blob of `chunk` (version 1, above); empty when the chunk is empty or
// too wide.
std::string EncodeRailChunk(const RailChunk& chunk);

// Appends the samples of `blob` with from_ns <= t < to_ns to `out` (columns
// matched by key; a key new to `out` gets a column of absent values so far),
// at most `limit` samples in `out` (truncated set beyond). False when the
// blob does not decode: nothing of it is appended.
bool DecodeRailChunk(std::string_view blob, int64_t t_ns, int64_t from_ns, int64_t to_ns,
                     size_t limit, RailSamples& out);

}  // namespace edgemon::store
