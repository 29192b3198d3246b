#include "daemon/store/frame_codec.h"

#include <algorithm>
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

bool OpenDelta(std::string_view blob, size_t n, const uint8_t*& bitmap, const uint8_t*& p,
               const uint8_t*& end, uint64_t& changed) {
  p = reinterpret_cast<const uint8_t*>(blob.data());
  end = p + blob.size();
  uint64_t id = 0;
  if (p == end || *p++ != kFrameFormatV2 || !ReadVarint(p, end, id)) return false;
  const size_t bytes = (n + 7) / 8;
  if (static_cast<size_t>(end - p) < bytes) return false;
  bitmap = p;
  p += bytes;
  // No bit past the n-th: the base must be the one the frame was made on.
  if (n % 8 != 0 && (bitmap[bytes - 1] >> (n % 8)) != 0) return false;
  changed = 0;
  for (size_t i = 0; i < bytes; ++i)
    changed += static_cast<uint64_t>(__builtin_popcount(bitmap[i]));
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

bool EncodeFrameDelta(const FrameValues& values, uint64_t base_id, const FrameValues& base,
                      std::string& out) {
  using codec_internal::ZigZag;
  if (values.size() != base.size()) return false;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].first != base[i].first) return false;
  }
  char head[11];
  head[0] = static_cast<char>(kFrameFormatV2);
  out.append(head, static_cast<size_t>(PutVarint(base_id, head + 1) - head));
  const size_t bitmap = out.size();
  out.append((values.size() + 7) / 8, '\0');
  char v[10];
  for (size_t i = 0; i < values.size(); ++i) {
    const uint64_t d =
        static_cast<uint64_t>(values[i].second) - static_cast<uint64_t>(base[i].second);
    if (d == 0) continue;
    out[bitmap + i / 8] = static_cast<char>(out[bitmap + i / 8] | (1 << (i % 8)));
    out.append(v, static_cast<size_t>(PutVarint(ZigZag(static_cast<int64_t>(d)), v) - v));
  }
  return true;
}

bool FrameBaseId(std::string_view blob, uint64_t& base_id) {
  auto p = reinterpret_cast<const uint8_t*>(blob.data());
  const uint8_t* end = p + blob.size();
  return p != end && *p++ == kFrameFormatV2 && codec_internal::ReadVarint(p, end, base_id);
}

bool FindValue(std::string_view blob, const FrameValues* base, uint32_t id,
               std::optional<int64_t>& out) {
  using namespace codec_internal;
  uint64_t base_id = 0;
  if (!FrameBaseId(blob, base_id)) return FindValue(blob, id, out);
  out.reset();
  if (base == nullptr) return false;
  const uint8_t *bitmap = nullptr, *p = nullptr, *end = nullptr;
  uint64_t changed = 0;
  if (!OpenDelta(blob, base->size(), bitmap, p, end, changed)) return false;
  auto it = std::lower_bound(base->begin(), base->end(), id,
                             [](const auto& a, uint32_t k) { return a.first < k; });
  if (it == base->end() || it->first != id) return true;  // absent
  const auto i = static_cast<size_t>(it - base->begin());
  if (!Changed(bitmap, i)) {
    out = it->second;
    return true;
  }
  uint64_t before = 0;  // differences before the i-th value
  for (size_t k = 0; k < i / 8; ++k) before += static_cast<uint64_t>(__builtin_popcount(bitmap[k]));
  before += static_cast<uint64_t>(__builtin_popcount(bitmap[i / 8] & ((1u << (i % 8)) - 1)));
  uint64_t u = 0;
  if (!SkipVarints(p, end, before) || !ReadVarint(p, end, u)) return false;
  out =
      static_cast<int64_t>(static_cast<uint64_t>(it->second) + static_cast<uint64_t>(UnZigZag(u)));
  return true;
}

}  // namespace edgemon::store
