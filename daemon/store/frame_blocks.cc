// Blocks of frames (frame_codec.h, versions 3 and 4; ring_store.h, I18).
#include <zlib.h>

#include "daemon/store/frame_codec.h"

namespace edgemon::store {

namespace {

using codec_internal::PutVarint;
using codec_internal::ReadVarint;

// Level 3: most of level 6's size (a few percent more bytes) for about two
// thirds of its time, which the writer pays once a frame.
constexpr int kLevel = 3;

void AppendVarint(uint64_t v, std::string& out) {
  char buf[10];
  out.append(buf, PutVarint(v, buf));
}

}  // namespace

bool EncodeFrameBlock(uint64_t head_seq, const std::vector<std::string_view>& frames,
                      std::string& out) {
  if (frames.size() < 2 || frames.size() > kMaxBlockFrames) return false;
  std::string raw;
  size_t need = 0;
  for (std::string_view f : frames) need += f.size() + 10;
  raw.reserve(need);
  for (std::string_view f : frames) {
    AppendVarint(f.size(), raw);
    raw.append(f);
  }
  if (raw.size() > kMaxBlockRawBytes) return false;
  uLongf bound = compressBound(static_cast<uLong>(raw.size()));
  const size_t start = out.size();
  out.push_back(static_cast<char>(kFrameFormatBlock));
  AppendVarint(head_seq, out);
  AppendVarint(frames.size(), out);
  AppendVarint(raw.size(), out);
  const size_t head = out.size();
  out.resize(head + bound);
  if (compress2(reinterpret_cast<Bytef*>(out.data() + head), &bound,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()),
                kLevel) != Z_OK) {
    out.resize(start);
    return false;
  }
  out.resize(head + bound);
  return true;
}

void EncodeInBlock(uint64_t head_seq, uint64_t index, std::string& out) {
  out.push_back(static_cast<char>(kFrameFormatInBlock));
  AppendVarint(head_seq, out);
  AppendVarint(index, out);
}

bool FrameBlockRef(std::string_view blob, uint64_t& head_seq, uint64_t& index) {
  const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
  const uint8_t* end = p + blob.size();
  if (p == end) return false;
  const uint8_t format = *p++;
  if (format == kFrameFormatBlock) {
    index = 0;
    return ReadVarint(p, end, head_seq);
  }
  if (format != kFrameFormatInBlock) return false;
  return ReadVarint(p, end, head_seq) && ReadVarint(p, end, index) && index > 0 &&
         index < kMaxBlockFrames && p == end;
}

bool DecodeFrameBlock(std::string_view blob, std::string& raw,
                      std::vector<std::string_view>& frames) {
  frames.clear();
  const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
  const uint8_t* end = p + blob.size();
  uint64_t head_seq = 0, n = 0, length = 0;
  if (p == end || *p++ != kFrameFormatBlock || !ReadVarint(p, end, head_seq) ||
      !ReadVarint(p, end, n) || !ReadVarint(p, end, length)) {
    return false;
  }
  if (n < 2 || n > kMaxBlockFrames || length > kMaxBlockRawBytes) return false;
  raw.resize(length);
  uLongf got = static_cast<uLongf>(length);
  if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &got, p, static_cast<uLong>(end - p)) !=
          Z_OK ||
      got != length) {
    return false;
  }
  const auto* q = reinterpret_cast<const uint8_t*>(raw.data());
  const uint8_t* raw_end = q + raw.size();
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    if (!ReadVarint(q, raw_end, len) || len > static_cast<uint64_t>(raw_end - q)) return false;
    std::string_view f(reinterpret_cast<const char*>(q), len);
    // A frame in a block is one of its own: no block inside a block.
    if (!f.empty() && f[0] != static_cast<char>(kFrameFormatV1) &&
        f[0] != static_cast<char>(kFrameFormatV2)) {
      return false;
    }
    frames.push_back(f);
    q += len;
  }
  return q == raw_end;
}

}  // namespace edgemon::store
