// The compact encoding of one frame's values in a `frames.data` blob.
//
// A frame is a sparse map from store channel id to int64 value: an absent
// value is simply not in the blob (missing is not zero). Layout, version 1:
//
//   byte 0          0x01, the format version
//   then runs       varint gap, varint n, then n zigzag varint values
//
// A run covers the n consecutive ids starting at `next + gap`, where `next`
// is 0 for the first run and one past the last id of the previous run. A
// frame where every channel is present is one run: two bytes of header, then
// one varint per value (1 byte for |v| < 64, 3 bytes for a temperature in
// m°C, 4 for a frequency in kHz).
//
// Layout, version 2: a frame against a base, the values of an earlier frame
// of the same ids (the store keeps bases in its frame_bases table):
//
//   byte 0          0x02
//   varint          the base's id
//   bitmap          ceil(n / 8) bytes, n the base's value count: bit i
//                   (least significant first) set when the i-th value
//                   differs from the base's
//   then            for each set bit in order, a zigzag varint of
//                   value - base value (wrapping, so every int64 pair fits)
//
// A version-2 frame holds exactly the ids its base holds: one whose ids
// differ is written as version 1 (missing stays missing). A value the board
// did not change costs one bit; a rail's power, a temperature or a counter a
// byte or two of difference.
//
// Layout, version 3: a block head, the first frame of a run of frames the
// store compressed together (ring_store.h, I18):
//
//   byte 0          0x03
//   varint          the head's own seq
//   varint          n, the frames in the block (2 to kMaxBlockFrames)
//   varint          the length of the block once inflated
//   then            a zlib stream (RFC 1950) of the n frames in seq order,
//                   the head's first: for each a varint length, then that
//                   many bytes of a version-1 or version-2 blob
//
// Layout, version 4: a frame in a block, after its head:
//
//   byte 0          0x04
//   varint          the head's seq
//   varint          i, the frame's place in the block (1 to n - 1)
//
// A frame of a block costs its share of the compressed block (a run of
// frames repeats itself: about 40 % of their own encodings on a
// simulated board) and a few bytes of its own.
//
// Decoding is defensive: a truncated or malformed blob makes the decoder
// return false, never read out of bounds.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgemon::store {

inline constexpr uint8_t kFrameFormatV1 = 1;
inline constexpr uint8_t kFrameFormatV2 = 2;
inline constexpr uint8_t kFrameFormatBlock = 3;
inline constexpr uint8_t kFrameFormatInBlock = 4;
// The most frames a block holds: a read of one frame inflates its block.
inline constexpr size_t kMaxBlockFrames = 256;
// The writer ends a block before its frames' own blobs pass this many bytes,
// which bounds what a read of one frame inflates (about 16 KiB: 130 frames
// of a simulated AGX Orin, a few dozen of random values).
inline constexpr size_t kBlockTargetBytes = 16 * 1024;
// The most bytes a block inflates to: a damaged length is refused before
// any memory is taken for it.
inline constexpr uint64_t kMaxBlockRawBytes = uint64_t{64} << 20;

// A frame's values, ids strictly increasing.
using FrameValues = std::vector<std::pair<uint32_t, int64_t>>;

// Appends the encoding of `values` (ids strictly increasing) to `out`.
// Returns false (and leaves `out` as it was) if the ids are not strictly
// increasing.
bool EncodeFrame(const std::vector<std::pair<uint32_t, int64_t>>& values, std::string& out);

// EncodeFrame through `room`, a buffer the caller keeps from call to call
// (grown to MaxEncodedFrameBytes, not zero-filled again): `out` grows by the
// bytes the encoding takes, not by the bound.
bool EncodeFrame(const std::vector<std::pair<uint32_t, int64_t>>& values, std::vector<char>& room,
                 std::string& out);

// The most the encoding of `n` values takes: the format byte, and for each
// value its own varint and, when it starts a run, the run's two (ids are
// uint32).
constexpr size_t MaxEncodedFrameBytes(size_t n) {
  return 1 + n * (10 + 5 + 5);
}

// EncodeFrame into `out`, which has room for MaxEncodedFrameBytes(n) bytes:
// returns one past the last byte written (`out` for no values), or nullptr
// if the ids are not strictly increasing. For a caller that keeps its own
// buffer (nothing is zero-filled).
char* EncodeFrameInto(const std::vector<std::pair<uint32_t, int64_t>>& values, char* out);

namespace codec_internal {

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
// Writes `v` as a varint at `p`; returns the end (at most 10 bytes on).
inline char* PutVarint(uint64_t v, char* p) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
inline int64_t UnZigZag(uint64_t u) {
  return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
}

// Reads one LEB128 varint; false on truncation or more than 64 bits.
inline bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t& out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    uint8_t b = *p++;
    if (shift == 63 && (b & 0x7e) != 0) return false;  // would overflow
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      out = v;
      return true;
    }
  }
  return false;
}

// Skips n varints; false on truncation.
bool SkipVarints(const uint8_t*& p, const uint8_t* end, uint64_t n);

// Walks the runs of a blob: each run's header, then its n values (zigzag
// varints) read or skipped from `p` by the caller before the next run.
struct RunReader {
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
  uint64_t next = 0;  // one past the last id of the previous run

  // False when the format byte is not kFrameFormatV1. An empty blob is a
  // frame with no values: no runs.
  bool Open(std::string_view blob) {
    p = reinterpret_cast<const uint8_t*>(blob.data());
    end = p + blob.size();
    next = 0;
    return p == end || *p++ == kFrameFormatV1;
  }
  bool done() const { return p == end; }
  // Reads the next run's header: its ids are first .. first + n - 1, every one
  // a uint32. False when the header is truncated or out of range.
  bool NextRun(uint64_t& first, uint64_t& n) {
    uint64_t gap = 0;
    if (!ReadVarint(p, end, gap) || !ReadVarint(p, end, n)) return false;
    if (n == 0 || gap > UINT32_MAX || n > UINT32_MAX) return false;
    first = next + gap;
    if (first + n > uint64_t{UINT32_MAX} + 1) return false;
    next = first + n;
    return true;
  }
};

}  // namespace codec_internal

// Calls f(id, value) for every value in id order. Returns false if the blob
// is malformed (values already passed to f stay passed).
template <typename F>
bool ForEachValue(std::string_view blob, F&& f) {
  using namespace codec_internal;
  RunReader r;
  if (!r.Open(blob)) return false;
  uint64_t first = 0, n = 0;
  while (!r.done()) {
    if (!r.NextRun(first, n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t u = 0;
      if (!ReadVarint(r.p, r.end, u)) return false;
      f(static_cast<uint32_t>(first + i), UnZigZag(u));
    }
  }
  return true;
}

// Looks up one id without decoding the values before it. Returns false if
// the blob is malformed; otherwise `out` is the value or nullopt (absent).
bool FindValue(std::string_view blob, uint32_t id, std::optional<int64_t>& out);

// Appends the version-2 encoding of `values` against `base` (whose id is
// `base_id`) to `out`. Returns false, leaving `out` as it was, when the ids
// of `values` are not those of `base`.
bool EncodeFrameDelta(const FrameValues& values, uint64_t base_id, const FrameValues& base,
                      std::string& out);

// True for a version-2 blob, with the id of its base in `base_id` (false
// for version 1, an empty blob or a truncated header).
bool FrameBaseId(std::string_view blob, uint64_t& base_id);

namespace codec_internal {

// The header of a version-2 blob against a base of `n` values: `bitmap`
// points at its ceil(n / 8) bytes, `p` at the first difference and
// `changed` is how many there are. False when truncated, when a bit past
// the n-th is set, or when the blob is not version 2.
bool OpenDelta(std::string_view blob, size_t n, const uint8_t*& bitmap, const uint8_t*& p,
               const uint8_t*& end, uint64_t& changed);
inline bool Changed(const uint8_t* bitmap, size_t i) {
  return (bitmap[i / 8] >> (i % 8)) & 1;
}

}  // namespace codec_internal

// ForEachValue and FindValue for a blob of either version: `base` holds the
// values of the base a version-2 blob names (see FrameBaseId), and may be
// null for a version-1 blob. False when the blob is malformed or is version
// 2 without a base.
template <typename F>
bool ForEachValue(std::string_view blob, const FrameValues* base, F&& f) {
  using namespace codec_internal;
  uint64_t id = 0;
  if (!FrameBaseId(blob, id)) return ForEachValue(blob, std::forward<F>(f));
  if (base == nullptr) return false;
  const uint8_t *bitmap = nullptr, *p = nullptr, *end = nullptr;
  uint64_t changed = 0;
  if (!OpenDelta(blob, base->size(), bitmap, p, end, changed)) return false;
  // Checked whole before f sees a value: the differences end the blob.
  const uint8_t* q = p;
  if (!SkipVarints(q, end, changed) || q != end) return false;
  for (size_t i = 0; i < base->size(); ++i) {
    const auto& [k, b] = (*base)[i];
    uint64_t u = 0;
    if (Changed(bitmap, i)) ReadVarint(p, end, u);
    f(k, static_cast<int64_t>(static_cast<uint64_t>(b) + static_cast<uint64_t>(UnZigZag(u))));
  }
  return true;
}
bool FindValue(std::string_view blob, const FrameValues* base, uint32_t id,
               std::optional<int64_t>& out);

// Appends the version-3 blob of the block of `frames` (version-1 or -2
// blobs, 2 to kMaxBlockFrames of them) headed by the frame whose seq is
// `head_seq`. False, leaving `out` as it was, for a count out of range or a
// compression error.
bool EncodeFrameBlock(uint64_t head_seq, const std::vector<std::string_view>& frames,
                      std::string& out);
// Appends the version-4 blob of the frame at place `index` of the block
// headed by `head_seq`.
void EncodeInBlock(uint64_t head_seq, uint64_t index, std::string& out);
// True for a version-3 or -4 blob, with its head's seq and the frame's place
// in the block (0 for the head).
bool FrameBlockRef(std::string_view blob, uint64_t& head_seq, uint64_t& index);
// Inflates a version-3 blob into `raw` and points `frames` at its frames'
// blobs in it. False when the blob is malformed, does not inflate to its
// length, or holds a frame that is not version 1 or 2.
bool DecodeFrameBlock(std::string_view blob, std::string& raw,
                      std::vector<std::string_view>& frames);

}  // namespace edgemon::store
