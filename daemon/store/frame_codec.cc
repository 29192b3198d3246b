#include "daemon/store/frame_codec.h"

#include <cstring>

namespace edgemon::store {

using codec_internal::PutVarint;
namespace codec_internal {

bool SkipVarints(const uint8_t*& p, const uint8_t* end, uint64_t n) {
  // Every varint ends with the one byte whose high bit is clear: count those,
  // eight bytes at a time while far from the end.
  while (n >= 8 && end - p >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    uint64_t ends = ~w & 0x8080808080808080ULL;
    auto k = static_cast<uint64_t>(__builtin_popcountll(ends));
    // Stop before the word that holds the n-th end: its tail bytes may
    // already belong to the next varint.
    if (k >= n) break;
    n -= k;
    p += 8;
  }
  while (n > 0) {
    if (p == end) return false;
    if ((*p++ & 0x80) == 0) --n;
  }
  return true;
}

}  // namespace codec_internal

char* EncodeFrameInto(const std::vector<std::pair<uint32_t, int64_t>>& values, char* p) {
  if (values.empty()) return p;
  *p++ = static_cast<char>(kFrameFormatV1);
  uint64_t next = 0;
  size_t i = 0;
  while (i < values.size()) {
    uint64_t first = values[i].first;
    size_t j = i + 1;
    while (j < values.size() && values[j].first == values[j - 1].first + 1) ++j;
    if (first < next || (j < values.size() && values[j].first <= values[j - 1].first)) {
      return nullptr;
    }
    p = PutVarint(first - next, p);
    p = PutVarint(j - i, p);
    for (size_t k = i; k < j; ++k) p = PutVarint(codec_internal::ZigZag(values[k].second), p);
    next = uint64_t{values[j - 1].first} + 1;
    i = j;
  }
  return p;
}

bool EncodeFrame(const std::vector<std::pair<uint32_t, int64_t>>& values, std::string& out) {
  std::vector<char> room;
  return EncodeFrame(values, room, out);
}

bool EncodeFrame(const std::vector<std::pair<uint32_t, int64_t>>& values, std::vector<char>& room,
                 std::string& out) {
  if (values.empty()) return true;
  // Written through a pointer into room made once: a frame is a few hundred
  // varints, each a byte or three; `out` gets only the bytes they take.
  const size_t need = MaxEncodedFrameBytes(values.size());
  if (room.size() < need) room.resize(need);
  const char* end = EncodeFrameInto(values, room.data());
  if (end == nullptr) return false;
  out.append(room.data(), static_cast<size_t>(end - room.data()));
  return true;
}

bool FindValue(std::string_view blob, uint32_t id, std::optional<int64_t>& out) {
  using namespace codec_internal;
  out.reset();
  RunReader r;
  if (!r.Open(blob)) return false;
  uint64_t first = 0, n = 0;
  while (!r.done()) {
    if (!r.NextRun(first, n)) return false;
    if (id < first) return true;  // ids are increasing: absent
    if (id < first + n) {
      if (!SkipVarints(r.p, r.end, id - first)) return false;
      uint64_t u = 0;
      if (!ReadVarint(r.p, r.end, u)) return false;
      out = UnZigZag(u);
      return true;
    }
    if (!SkipVarints(r.p, r.end, n)) return false;
  }
  return true;
}

}  // namespace edgemon::store
