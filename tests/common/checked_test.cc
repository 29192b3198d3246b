#include "edgemon/checked.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace edgemon {
namespace {

constexpr int64_t kMin = kInt64Min;
constexpr int64_t kMax = kInt64Max;
constexpr int64_t k2p62 = int64_t{1} << 62;
constexpr uint64_t kU64Max = UINT64_MAX;

// Usable where a constant is needed (the helpers are constexpr).
static_assert(AddSaturating(kMax, 1) == kMax);
static_assert(BucketIndex(kMax - 1, kMin, k2p62) == 3);
static_assert(!CheckedSub(0, kMin).has_value());

TEST(Checked, FailingArithmeticIsExactOrNothing) {
  EXPECT_EQ(CheckedAdd(kMax - 1, 1), kMax);
  EXPECT_EQ(CheckedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(CheckedAdd(kMin, -1), std::nullopt);
  EXPECT_EQ(CheckedAdd(kMin, kMax), -1);
  EXPECT_EQ(CheckedSub(kMax, kMax), 0);
  EXPECT_EQ(CheckedSub(kMax, -1), std::nullopt);
  EXPECT_EQ(CheckedSub(kMin, 1), std::nullopt);
  EXPECT_EQ(CheckedSub(0, kMin), std::nullopt);  // -INT64_MIN is not an int64
  EXPECT_EQ(CheckedSub(-1, kMin), kMax);
  EXPECT_EQ(CheckedMul(k2p62, 2), std::nullopt);
  EXPECT_EQ(CheckedMul(k2p62, -2), kMin);
  EXPECT_EQ(CheckedMul(kMin, -1), std::nullopt);
  EXPECT_EQ(CheckedMul(int64_t{3'000} * 86'400, 1'000'000'000), int64_t{259'200'000'000'000'000});
  EXPECT_EQ(CheckedDiv(kMin, -1), std::nullopt);
  EXPECT_EQ(CheckedDiv(1, 0), std::nullopt);
  EXPECT_EQ(CheckedDiv(kMin, 1), kMin);
  EXPECT_EQ(CheckedDiv(-7, 2), -3);  // toward zero, as C++
}

TEST(Checked, SaturatingArithmeticClampsAtBothEnds) {
  EXPECT_EQ(AddSaturating(kMax, kMax), kMax);
  EXPECT_EQ(AddSaturating(kMin, kMin), kMin);
  EXPECT_EQ(AddSaturating(kMin, kMax), -1);
  EXPECT_EQ(SubSaturating(kMin, 1), kMin);
  EXPECT_EQ(SubSaturating(0, kMin), kMax);  // now - keep with keep = INT64_MIN
  EXPECT_EQ(SubSaturating(kMax, -1), kMax);
  EXPECT_EQ(SubSaturating(-2, kMax), kMin);
  EXPECT_EQ(SubSaturating(1'700'000'000'000'000'000, kMax), 1'700'000'000'000'000'000 - kMax);
  EXPECT_EQ(MulSaturating(k2p62, 2), kMax);
  EXPECT_EQ(MulSaturating(k2p62, -3), kMin);
  EXPECT_EQ(MulSaturating(kMin, -1), kMax);
  EXPECT_EQ(MulSaturating(-k2p62, -4), kMax);
  EXPECT_EQ(MulSaturating(kMin, 0), 0);
}

TEST(Checked, FloorDivAndFloorToMultipleRoundDownWithoutWrapping) {
  EXPECT_EQ(FloorDiv(-1, 10), -1);
  EXPECT_EQ(FloorDiv(-10, 10), -1);
  EXPECT_EQ(FloorDiv(19, 10), 1);
  EXPECT_EQ(FloorDiv(kMin, 1), kMin);
  EXPECT_EQ(FloorDiv(kMin, kMax), -2);
  EXPECT_EQ(FloorMod(-1, 10), 9);
  EXPECT_EQ(FloorMod(25, 10), 5);
  EXPECT_EQ(FloorMod(kMin, 1'000'000'000), 145'224'192);  // 1677-09-21T00:12:43.145224192Z
  EXPECT_EQ(FloorMod(kMax, kMax), 0);
  EXPECT_EQ(FloorMod(kMin, kMax), kMax - 1);
  EXPECT_EQ(FloorToMultiple(25, 10), 20);
  EXPECT_EQ(FloorToMultiple(-25, 10), -30);
  EXPECT_EQ(FloorToMultiple(kMax, 10), kMax - 7);  // 9223372036854775800
  // The multiple below INT64_MIN + 1 (-9223372036854775810) is no int64: clamped.
  EXPECT_EQ(FloorToMultiple(kMin + 1, 10), kMin);
  EXPECT_EQ(FloorToMultiple(kMin, 2), kMin);
  EXPECT_EQ(FloorToMultiple(kMin, kMax), kMin);
}

TEST(Checked, SpanIsExactOverTheWholeInt64Range) {
  EXPECT_EQ(SpanNs(kMin, kMax), kU64Max);
  EXPECT_EQ(SpanNs(kMin, 0), uint64_t{1} << 63);
  EXPECT_EQ(SpanNs(-5, 5), 10u);
  EXPECT_EQ(SpanNs(5, 5), 0u);
  EXPECT_EQ(SpanNs(5, -5), 0u);  // an empty range
}

TEST(Checked, BucketCountCoversTheRangeExactly) {
  EXPECT_EQ(BucketCount(kMin, kMax, k2p62), 4u);  // (2^64 - 1) / 2^62, rounded up
  EXPECT_EQ(BucketCount(kMin, kMax, kMax), 3u);   // 2^64 - 1 = 2 * (2^63 - 1) + 1
  EXPECT_EQ(BucketCount(kMin, kMax, 1), kU64Max);
  EXPECT_EQ(BucketCount(0, 10, 5), 2u);
  EXPECT_EQ(BucketCount(0, 11, 5), 3u);
  EXPECT_EQ(BucketCount(0, 1, kMax), 1u);
  EXPECT_EQ(BucketCount(3, 3, 1), 0u);
}

TEST(Checked, BucketIndexIsRightForAnyTimeInTheRange) {
  EXPECT_EQ(BucketIndex(kMin, kMin, k2p62), 0u);
  EXPECT_EQ(BucketIndex(-1, kMin, k2p62), 1u);
  EXPECT_EQ(BucketIndex(0, kMin, k2p62), 2u);  // (0 - INT64_MIN) overflows in int64
  EXPECT_EQ(BucketIndex(1'700'000'000'000'000'000, kMin, k2p62), 2u);
  EXPECT_EQ(BucketIndex(kMax - 1, kMin, k2p62), 3u);
  EXPECT_EQ(BucketIndex(kMax - 1, kMin, 1), kU64Max - 1);
  EXPECT_EQ(BucketIndex(kMax - 1, kMin, kMax), 2u);
  EXPECT_EQ(BucketIndex(kMax - 1, kMax - 1, 1), 0u);
  EXPECT_EQ(BucketIndex(19, 10, 5), 1u);
  EXPECT_EQ(BucketIndex(-6, -10, 5), 0u);
  EXPECT_EQ(BucketIndex(-5, -10, 5), 1u);
  // Every index is below the count, for every time in [from, to).
  for (int64_t t : {kMin, kMin + 1, int64_t{-1}, int64_t{0}, kMax - 1}) {
    EXPECT_LT(BucketIndex(t, kMin, k2p62), BucketCount(kMin, kMax, k2p62)) << t;
    EXPECT_LT(BucketIndex(t, kMin, kMax), BucketCount(kMin, kMax, kMax)) << t;
  }
}

TEST(Checked, BucketStartIsFromPlusIndexStepsOrNothing) {
  EXPECT_EQ(BucketStart(kMin, 0, k2p62), kMin);
  EXPECT_EQ(BucketStart(kMin, 2, k2p62), 0);
  EXPECT_EQ(BucketStart(kMin, 3, k2p62), k2p62);
  EXPECT_EQ(BucketStart(kMin, 4, k2p62), std::nullopt);  // 2^63: past INT64_MAX
  EXPECT_EQ(BucketStart(kMin, kU64Max, 1), kMax);
  EXPECT_EQ(BucketStart(kMin, 2, kMax), kMax - 1);
  EXPECT_EQ(BucketStart(kMin, 3, kMax), std::nullopt);
  EXPECT_EQ(BucketStart(0, kU64Max, 2), std::nullopt);  // the product overflows uint64
  EXPECT_EQ(BucketStart(-10, 3, 5), 5);
  EXPECT_EQ(BucketStart(kMax, 0, 1), kMax);
  EXPECT_EQ(BucketStart(kMax, 1, 1), std::nullopt);
  // Start and index agree: the bucket a time falls in starts at or before it.
  const int64_t from = -9'151'488'000'000'000'000;  // 1680-01-01
  const int64_t step = int64_t{3'000} * 86'400 * 1'000'000'000;
  for (int64_t t : {from, int64_t{0}, int64_t{1'700'000'000'000'000'000}, kMax}) {
    auto start = BucketStart(from, BucketIndex(t, from, step), step);
    ASSERT_TRUE(start.has_value()) << t;
    EXPECT_LE(*start, t);
    EXPECT_LT(SpanNs(*start, t), static_cast<uint64_t>(step)) << t;
  }
}

}  // namespace
}  // namespace edgemon
