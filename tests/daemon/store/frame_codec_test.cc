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

}  // namespace
}  // namespace edgemon::store
