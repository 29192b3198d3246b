// Checked int64 arithmetic for nanosecond times, durations and counts: the
// one copy for the store, the service, the command line and the time syntax.
// A request may carry any int64 (INT64_MIN..INT64_MAX), so a difference of
// two times can exceed int64 and a sum can wrap: signed overflow is undefined
// behaviour, and a wrapped index is an out-of-bounds write. Every time or
// count a client sent goes through one of these before any other arithmetic.
//
//   Saturating (AddSaturating, SubSaturating, MulSaturating): clamp to
//     INT64_MIN / INT64_MAX; for cutoffs and deadlines ("now - keep").
//   Failing (CheckedAdd, CheckedSub, CheckedMul, CheckedDiv): std::nullopt
//     where the exact result is not an int64; for values that must be exact.
//   Ranges (SpanNs, BucketCount, BucketIndex, BucketStart): a half-open range
//     [from, to) cut into steps, exact for any int64 bounds, in uint64.
//
// Header-only, constexpr, no state: any thread.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace edgemon {

inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

constexpr std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

constexpr std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

constexpr std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a / b truncated toward zero; nullopt for b == 0 and INT64_MIN / -1.
constexpr std::optional<int64_t> CheckedDiv(int64_t a, int64_t b) {
  if (b == 0 || (a == kInt64Min && b == -1)) return std::nullopt;
  return a / b;
}

constexpr int64_t AddSaturating(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kInt64Max : kInt64Min;
  return r;
}

constexpr int64_t SubSaturating(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kInt64Max : kInt64Min;
  return r;
}

constexpr int64_t MulSaturating(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? kInt64Min : kInt64Max;
  return r;
}

// floor(a / b) for b > 0 (rounds toward negative infinity: -1 / 10 is -1).
constexpr int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}

// a - floor(a / b) * b for b > 0: in [0, b), also for negative a.
constexpr int64_t FloorMod(int64_t a, int64_t b) {
  const int64_t rem = a % b;
  return rem < 0 ? rem + b : rem;
}

// The largest multiple of `period` (> 0) at or below `t`, clamped to
// INT64_MIN where that multiple is below it.
constexpr int64_t FloorToMultiple(int64_t t, int64_t period) {
  return SubSaturating(t, FloorMod(t, period));
}

// The smallest multiple of `period` (> 0) at or above `t`, clamped to
// INT64_MAX where that multiple is above it.
constexpr int64_t CeilToMultiple(int64_t t, int64_t period) {
  const int64_t rem = FloorMod(t, period);
  return rem == 0 ? t : AddSaturating(t, period - rem);
}

// to - from for from <= to, exactly (up to 2^64 - 1); 0 when to < from.
constexpr uint64_t SpanNs(int64_t from, int64_t to) {
  if (to <= from) return 0;
  return static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
}

// The number of steps of `step` (> 0) that cover [from, to): ceil(span / step).
constexpr uint64_t BucketCount(int64_t from, int64_t to, int64_t step) {
  const uint64_t span = SpanNs(from, to);
  const auto s = static_cast<uint64_t>(step);
  return span / s + (span % s != 0 ? 1 : 0);
}

// The step of [from, to) that holds `t`, for from <= t and step > 0:
// (t - from) / step, exact for any int64 t and from.
constexpr uint64_t BucketIndex(int64_t t, int64_t from, int64_t step) {
  return SpanNs(from, t) / static_cast<uint64_t>(step);
}

// The start of step `index` of a range starting at `from`: from + index * step,
// or nullopt where that is past INT64_MAX. Any index below
// BucketCount(from, to, step) gives a start inside [from, to).
constexpr std::optional<int64_t> BucketStart(int64_t from, uint64_t index, int64_t step) {
  const auto s = static_cast<uint64_t>(step);
  uint64_t offset = 0;
  if (__builtin_mul_overflow(index, s, &offset)) return std::nullopt;
  if (offset > SpanNs(from, kInt64Max)) return std::nullopt;
  return static_cast<int64_t>(static_cast<uint64_t>(from) + offset);  // modular: C++20
}

}  // namespace edgemon
