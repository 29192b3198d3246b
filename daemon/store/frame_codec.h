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

}  // namespace edgemon::store
