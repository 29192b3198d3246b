// The frame codec (daemon/store/frame_codec.h): sparse values in, the same
// values out; malformed blobs rejected without reading past their end.
#include "daemon/store/frame_codec.h"

#include <gtest/gtest.h>

#include <limits>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace edgemon::store {
namespace {

TEST(FrameCodec, RoundTripsSparseValuesAndExtremes) {
  std::vector<std::pair<uint32_t, int64_t>> in = {
      {1, 0}, {2, -1}, {3, INT64_MIN}, {7, INT64_MAX}, {8, 45000}, {300, 2201600}, {301, -256000}};
  std::string blob;
  ASSERT_TRUE(EncodeFrame(in, blob));
  std::vector<std::pair<uint32_t, int64_t>> out;
  ASSERT_TRUE(ForEachValue(blob, [&](uint32_t id, int64_t v) { out.emplace_back(id, v); }));
  EXPECT_EQ(out, in);
  for (uint32_t id = 0; id < 310; ++id) {
    std::optional<int64_t> v;
    ASSERT_TRUE(FindValue(blob, id, v));
    auto it = std::find_if(in.begin(), in.end(), [&](const auto& p) { return p.first == id; });
    if (it == in.end()) {
      EXPECT_FALSE(v) << id;
    } else {
      EXPECT_EQ(v, it->second) << id;
    }
  }
  // A full frame of small values costs one byte each plus a 3-byte header.
  std::vector<std::pair<uint32_t, int64_t>> dense;
  for (uint32_t id = 1; id <= 100; ++id) dense.emplace_back(id, 5);
  blob.clear();
  ASSERT_TRUE(EncodeFrame(dense, blob));
  EXPECT_EQ(blob.size(), 1u + 2u + 100u);
  std::string empty;
  ASSERT_TRUE(EncodeFrame({}, empty));
  EXPECT_TRUE(empty.empty());
  EXPECT_FALSE(EncodeFrame({{3, 1}, {3, 2}}, blob));
}

// The widest encodings (every value its own run, ids up to UINT32_MAX,
// values at both ends of int64) fit and round-trip after what `out` held;
// refused ids leave `out` as it was.
TEST(FrameCodec, WidestFramesRoundTripAndRefusalsLeaveTheBufferAlone) {
  std::vector<std::pair<uint32_t, int64_t>> in;
  for (uint32_t k = 0; k < 64; ++k) {
    const uint32_t id = k == 63 ? UINT32_MAX : k * 60'000'000u;
    in.emplace_back(id, k % 2 ? std::numeric_limits<int64_t>::min() + k
                              : std::numeric_limits<int64_t>::max() - k);
  }
  std::string blob = "header";
  ASSERT_TRUE(EncodeFrame(in, blob));
  ASSERT_EQ(blob.substr(0, 6), "header");
  std::vector<std::pair<uint32_t, int64_t>> out;
  ASSERT_TRUE(ForEachValue(std::string_view(blob).substr(6),
                           [&](uint32_t id, int64_t v) { out.emplace_back(id, v); }));
  EXPECT_EQ(out, in);
  const std::string before = blob;
  EXPECT_FALSE(EncodeFrame({{1, 1}, {7, 2}, {5, 3}}, blob));
  EXPECT_EQ(blob, before);
}

// Into a caller's buffer: the same bytes as EncodeFrame, never past the
// room MaxEncodedFrameBytes gives even for the widest frame, no writes for
// no values, and nullptr for ids out of order.
TEST(FrameCodec, EncodingIntoABufferWritesTheSameBytesWithinItsRoom) {
  std::vector<std::pair<uint32_t, int64_t>> widest;
  for (uint32_t k = 0; k < 64; ++k) {
    widest.emplace_back(
        k == 63 ? UINT32_MAX : k * 60'000'000u,
        k % 2 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
  }
  std::vector<std::pair<uint32_t, int64_t>> dense;
  for (uint32_t id = 0; id < 136; ++id) dense.emplace_back(id, int64_t{45000} * id - 3'000'000);
  for (const auto* values : {&widest, &dense}) {
    const size_t room = MaxEncodedFrameBytes(values->size());
    std::string buf(room + 16, '\x5a');
    char* end = EncodeFrameInto(*values, buf.data());
    ASSERT_NE(end, nullptr);
    ASSERT_LE(end, buf.data() + room);
    EXPECT_EQ(buf.substr(room), std::string(16, '\x5a'));  // nothing past the room
    std::string blob;
    ASSERT_TRUE(EncodeFrame(*values, blob));
    EXPECT_EQ(std::string(buf.data(), end), blob);
  }
  char one = 'x';
  EXPECT_EQ(EncodeFrameInto({}, &one), &one);
  EXPECT_EQ(one, 'x');
  std::string buf(MaxEncodedFrameBytes(3), '\0');
  EXPECT_EQ(EncodeFrameInto({{1, 1}, {7, 2}, {5, 3}}, buf.data()), nullptr);
}

TEST(FrameCodec, MalformedBlobsAreRejectedWithoutOverrun) {
  std::vector<std::pair<uint32_t, int64_t>> in;
  for (uint32_t id = 1; id < 60; id += (id % 5 == 0) ? 3 : 1) in.emplace_back(id, id * 100003);
  std::string blob;
  ASSERT_TRUE(EncodeFrame(in, blob));
  // Every truncation is either a clean prefix or rejected, never a crash.
  for (size_t n = 1; n < blob.size(); ++n) {
    std::string cut = blob.substr(0, n);
    (void)ForEachValue(cut, [](uint32_t, int64_t) {});
    std::optional<int64_t> v;
    (void)FindValue(cut, 59, v);
  }
  EXPECT_FALSE(ForEachValue(std::string("\x02\x01\x01\x02", 4), [](uint32_t, int64_t) {}));
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 40, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    (void)ForEachValue(junk, [](uint32_t, int64_t) {});
    std::optional<int64_t> v;
    (void)FindValue(junk, rng() % 100, v);
  }
}

TEST(FrameCodec, BothDecodersRejectARunPastTheLastId) {
  // One run of two values at gap 0xFFFFFFFF: its second id is not a uint32.
  const std::string blob("\x01\xff\xff\xff\xff\x0f\x02\x02\x04", 9);
  EXPECT_FALSE(ForEachValue(blob, [](uint32_t, int64_t) {}));
  std::optional<int64_t> v;
  EXPECT_FALSE(FindValue(blob, UINT32_MAX, v));
  EXPECT_FALSE(v);
}

// ---------------------------------------------------------------- version 2

// Every value of `blob` read through both decoders against `base`.
FrameValues DecodedAgainst(const std::string& blob, const FrameValues* base) {
  FrameValues out;
  EXPECT_TRUE(ForEachValue(blob, base, [&](uint32_t id, int64_t v) { out.emplace_back(id, v); }));
  for (const auto& [id, v] : out) {
    std::optional<int64_t> one;
    EXPECT_TRUE(FindValue(blob, base, id, one));
    EXPECT_EQ(one, v) << id;
  }
  return out;
}

TEST(FrameCodec, AFrameAgainstItsBaseRoundTripsAndAnUnchangedValueCostsABit) {
  const FrameValues base = {{1, 0},     {2, -1}, {3, INT64_MIN}, {7, INT64_MAX}, {8, 45000},
                            {9, 45000}, {10, 7}, {300, 2201600}, {301, -256000}, {302, 1000}};
  // Differences at both ends of int64 wrap and come back exactly.
  FrameValues now = base;
  now[2].second = INT64_MAX;  // INT64_MIN -> INT64_MAX
  now[3].second = INT64_MIN;  // INT64_MAX -> INT64_MIN
  now[4].second = 45125;      // a temperature moved
  now[9].second = 999;        // a counter went down by one
  std::string blob = "kept";
  ASSERT_TRUE(EncodeFrameDelta(now, 77, base, blob));
  EXPECT_EQ(blob.substr(0, 4), "kept");
  blob.erase(0, 4);
  uint64_t id = 0;
  ASSERT_TRUE(FrameBaseId(blob, id));
  EXPECT_EQ(id, 77u);
  EXPECT_EQ(DecodedAgainst(blob, &base), now);
  for (uint32_t k = 0; k < 310; ++k) {  // ids the base lacks are absent
    std::optional<int64_t> v;
    ASSERT_TRUE(FindValue(blob, &base, k, v));
    auto it = std::find_if(now.begin(), now.end(), [&](const auto& p) { return p.first == k; });
    EXPECT_EQ(v, it == now.end() ? std::nullopt : std::optional<int64_t>(it->second)) << k;
  }
  // 100 values of which 3 moved by a little: the header, 13 bytes of bits
  // and a byte a difference, against a byte or more a value in version 1.
  FrameValues many, moved;
  for (uint32_t k = 1; k <= 100; ++k) many.emplace_back(k, 40000 + k);
  moved = many;
  for (size_t i : {0, 50, 99}) moved[i].second += 3;
  std::string small;
  ASSERT_TRUE(EncodeFrameDelta(moved, 5, many, small));
  EXPECT_EQ(small.size(), 1u + 1u + 13u + 3u);
  EXPECT_EQ(DecodedAgainst(small, &many), moved);
  // A frame identical to its base: header and bits alone.
  std::string same;
  ASSERT_TRUE(EncodeFrameDelta(many, 5, many, same));
  EXPECT_EQ(same.size(), 1u + 1u + 13u);
  EXPECT_EQ(DecodedAgainst(same, &many), many);
  // Version-1 blobs decode with or without a base.
  std::string v1;
  ASSERT_TRUE(EncodeFrame(now, v1));
  EXPECT_FALSE(FrameBaseId(v1, id));
  EXPECT_EQ(DecodedAgainst(v1, nullptr), now);
  EXPECT_EQ(DecodedAgainst(v1, &many), now);
}

TEST(FrameCodec, AFrameWhoseIdsAreNotItsBasesIsRefusedAndOutStaysAsItWas) {
  const FrameValues base = {{1, 10}, {2, 20}, {4, 40}};
  std::string out = "x";
  EXPECT_FALSE(EncodeFrameDelta({{1, 10}, {2, 20}}, 1, base, out));                   // one went
  EXPECT_FALSE(EncodeFrameDelta({{1, 10}, {2, 20}, {3, 30}}, 1, base, out));          // another id
  EXPECT_FALSE(EncodeFrameDelta({{1, 10}, {2, 20}, {4, 40}, {5, 1}}, 1, base, out));  // one came
  EXPECT_EQ(out, "x");
}

TEST(FrameCodec, AVersion2BlobWithoutItsBaseOrMalformedIsRejectedWithoutOverrun) {
  FrameValues base;
  for (uint32_t k = 1; k <= 20; ++k) base.emplace_back(k, int64_t{k} * 1000);
  FrameValues now = base;
  for (size_t i = 0; i < now.size(); i += 3) now[i].second += 70000;  // 3-byte differences
  std::string blob;
  ASSERT_TRUE(EncodeFrameDelta(now, 300, base, blob));
  auto nothing = [](uint32_t, int64_t) {};
  std::optional<int64_t> v;
  EXPECT_FALSE(ForEachValue(blob, nullptr, nothing));
  EXPECT_FALSE(ForEachValue(blob, nothing));  // the version-1 decoder
  EXPECT_FALSE(FindValue(blob, nullptr, 1, v));
  EXPECT_FALSE(v);
  // Every truncation is rejected by the whole decoder, and the decoders
  // never read past the end (an empty blob is a version-1 frame of no values).
  for (size_t n = 1; n < blob.size(); ++n) {
    const std::string cut = blob.substr(0, n);
    size_t seen = 0;
    EXPECT_FALSE(ForEachValue(cut, &base, [&](uint32_t, int64_t) { ++seen; })) << n;
    EXPECT_EQ(seen, 0u) << n;  // nothing passed from a blob cut short
    for (uint32_t k = 1; k <= 20; ++k) (void)FindValue(cut, &base, k, v);
  }
  // A trailing byte, or a base of another length (a bit past its last
  // value, or bits left over), is not the frame that was written.
  EXPECT_FALSE(ForEachValue(blob + '\x01', &base, nothing));
  FrameValues shorter(base.begin(), base.begin() + 17);  // bits 17..19 set past it
  EXPECT_FALSE(ForEachValue(blob, &shorter, nothing));
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(1 + rng() % 40, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    junk[0] = static_cast<char>(kFrameFormatV2);
    (void)ForEachValue(junk, &base, nothing);
    (void)FindValue(junk, &base, 1 + rng() % 20, v);
  }
}

// (I18) A block of frames: each frame's blob back as it went in, the
// references of the frames after the head, and every damaged block refused
// without reading past its end or taking memory for a length it claims.
TEST(FrameCodec, ABlockOfFramesRoundTripsAndADamagedOneIsRefused) {
  std::mt19937_64 rng(21);
  FrameValues base;
  for (uint32_t k = 0; k < 60; ++k) base.emplace_back(k, static_cast<int64_t>(rng() % 100000));
  std::string base_blob;
  ASSERT_TRUE(EncodeFrame(base, base_blob));
  std::vector<std::string> blobs;
  for (int i = 0; i < 200; ++i) {
    FrameValues now = base;
    // A board's values come back: a few states, and a counter that climbs.
    for (auto& [k, v] : now) {
      v += k == 0 ? i * 17 : static_cast<int64_t>((static_cast<uint32_t>(i) + k) % 5) - 2;
    }
    std::string b;
    if (i % 50 == 7) {
      ASSERT_TRUE(EncodeFrame(now, b));  // a frame of its own now and then
    } else if (i != 9) {                 // and one of no values
      ASSERT_TRUE(EncodeFrameDelta(now, 42, base, b));
    }
    blobs.push_back(std::move(b));
  }
  std::vector<std::string_view> views(blobs.begin(), blobs.end());
  std::string block = "kept";
  ASSERT_TRUE(EncodeFrameBlock(1'000'000'007, views, block));
  ASSERT_EQ(block.substr(0, 4), "kept");  // appended
  block.erase(0, 4);
  size_t alone = 0;
  for (const auto& b : blobs) alone += b.size();
  EXPECT_LT(block.size(), alone / 2) << "frames that repeat themselves compress";
  uint64_t head = 0, index = 9;
  ASSERT_TRUE(FrameBlockRef(block, head, index));
  EXPECT_EQ(head, 1'000'000'007u);
  EXPECT_EQ(index, 0u);
  std::string raw;
  std::vector<std::string_view> back;
  ASSERT_TRUE(DecodeFrameBlock(block, raw, back));
  ASSERT_EQ(back.size(), blobs.size());
  for (size_t i = 0; i < blobs.size(); ++i) EXPECT_EQ(back[i], blobs[i]) << i;
  for (uint64_t i : {uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{255}}) {
    std::string ref;
    EncodeInBlock(1'000'000'007, i, ref);
    ASSERT_TRUE(FrameBlockRef(ref, head, index)) << i;
    EXPECT_EQ(head, 1'000'000'007u);
    EXPECT_EQ(index, i);
    EXPECT_FALSE(DecodeFrameBlock(ref, raw, back));  // not a head
    for (size_t n = 0; n < ref.size(); ++n)
      EXPECT_FALSE(FrameBlockRef(ref.substr(0, n), head, index));
    EXPECT_FALSE(FrameBlockRef(ref + '\x00', head, index));
  }
  std::string ref;
  EncodeInBlock(5, 0, ref);  // the head is no reference
  EXPECT_FALSE(FrameBlockRef(ref, head, index));
  ref.clear();
  EncodeInBlock(5, kMaxBlockFrames, ref);
  EXPECT_FALSE(FrameBlockRef(ref, head, index));
  // A block of one frame, or of more than kMaxBlockFrames, is not made.
  std::string none;
  EXPECT_FALSE(EncodeFrameBlock(1, {views[0]}, none));
  std::vector<std::string_view> many(kMaxBlockFrames + 1, views[0]);
  EXPECT_FALSE(EncodeFrameBlock(1, many, none));
  EXPECT_TRUE(none.empty());
  // Every truncation, a byte changed anywhere, and random bytes after a
  // block header are refused, never read past.
  for (size_t n = 0; n < block.size(); ++n) {
    EXPECT_FALSE(DecodeFrameBlock(block.substr(0, n), raw, back)) << n;
  }
  for (size_t at = 1; at < block.size(); at += 3) {
    std::string bad = block;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    if (DecodeFrameBlock(bad, raw, back)) {
      // Only a changed head seq (not part of what the check covers) reads.
      EXPECT_LT(at, 6u) << at;
    }
  }
  // A claimed length past the bound is refused before any is allocated.
  std::string huge(1, static_cast<char>(kFrameFormatBlock));
  for (uint64_t v : {uint64_t{1}, uint64_t{2}, kMaxBlockRawBytes + 1}) {
    char buf[10];
    huge.append(buf, codec_internal::PutVarint(v, buf));
  }
  huge.append(block.substr(block.size() - 20));
  EXPECT_FALSE(DecodeFrameBlock(huge, raw, back));
  // A frame inside that is itself a block is refused.
  std::string nested_block;
  std::vector<std::string_view> nested{block, views[1]};
  ASSERT_TRUE(EncodeFrameBlock(3, nested, nested_block));
  EXPECT_FALSE(DecodeFrameBlock(nested_block, raw, back));
  for (int i = 0; i < 2000; ++i) {
    std::string junk(1 + rng() % 60, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    junk[0] = static_cast<char>(kFrameFormatBlock);
    (void)DecodeFrameBlock(junk, raw, back);
    junk[0] = static_cast<char>(kFrameFormatInBlock);
    (void)FrameBlockRef(junk, head, index);
  }
}

}  // namespace
}  // namespace edgemon::store
