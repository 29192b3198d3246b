#include "edgemon/timespec.h"

#include <algorithm>
#include <cstdio>

#include "edgemon/checked.h"
#include "edgemon/text.h"

namespace edgemon {
namespace {

// Wide enough for any int64 times a unit, with room to detect overflow.
__extension__ typedef __int128 Int128;

constexpr int64_t kNsPerDay = 86'400 * kNsPerSecond;

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

using text::IsSpace;
using text::Trim;

void SkipSpaces(std::string_view& s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
}

Status Fail(const char* what, std::string_view text, const std::string& why) {
  return Status::InvalidArgument(std::string("bad ") + what + " \"" + std::string(text) +
                                 "\": " + why);
}

// A decimal number "12", "1.5", ".25" at the front of `s` (consumed), as its
// digits: whole part and fraction in units of 1e-18, exactly.
struct Decimal {
  Int128 whole = 0;
  Int128 frac_num = 0;  // fraction = frac_num / frac_den
  Int128 frac_den = 1;
  Int128 Times(int64_t unit) const { return whole * unit + frac_num * unit / frac_den; }
};

std::optional<Decimal> TakeDecimal(std::string_view& s) {
  Decimal d;
  size_t i = 0;
  bool any = false;
  while (i < s.size() && IsDigit(s[i])) {
    // Past INT64_MAX it stays just past it: too large for any result.
    d.whole = std::min<Int128>(d.whole * 10 + (s[i] - '0'), static_cast<Int128>(INT64_MAX) + 1);
    ++i;
    any = true;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) {
      if (d.frac_den < static_cast<Int128>(1'000'000'000'000'000'000)) {  // past 1e-18: nothing
        d.frac_num = d.frac_num * 10 + (s[i] - '0');
        d.frac_den *= 10;
      }
      ++i;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  s.remove_prefix(i);
  return d;
}

// The unit at the front of `s` (longest match), consumed.
std::optional<int64_t> TakeUnit(std::string_view& s) {
  struct U {
    std::string_view name;
    int64_t ns;
  };
  static constexpr U kUnits[] = {
      {"ns", 1},
      {"us", 1000},
      {"ms", kNsPerMillisecond},
      {"min", 60 * kNsPerSecond},
      {"sec", kNsPerSecond},
      {"s", kNsPerSecond},
      {"m", 60 * kNsPerSecond},
      {"h", 3600 * kNsPerSecond},
      {"d", kNsPerDay},
      {"w", 7 * kNsPerDay},
  };
  for (const auto& u : kUnits) {
    if (s.substr(0, u.name.size()) == u.name) {
      s.remove_prefix(u.name.size());
      return u.ns;
    }
  }
  return std::nullopt;
}

// One or two digits at the front of `s` (consumed).
std::optional<int> TakeField(std::string_view& s, size_t max_digits) {
  size_t n = 0;
  int v = 0;
  while (n < s.size() && n < max_digits && IsDigit(s[n])) v = v * 10 + (s[n++] - '0');
  if (n == 0) return std::nullopt;
  s.remove_prefix(n);
  return v;
}

bool Eat(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// "H:M[:S[.fff]]" (one or two digits each) as ns since midnight.
Result<int64_t> TakeClock(std::string_view& s, std::string_view text) {
  auto h = TakeField(s, 2);
  if (!h || !Eat(s, ':')) {
    return Fail("time", text, "expected HH:MM after the date");
  }
  auto m = TakeField(s, 2);
  if (!m) {
    return Fail("time", text, "expected minutes after HH:");
  }
  int sec = 0;
  Int128 frac_ns = 0;
  if (Eat(s, ':')) {
    auto sv = TakeField(s, 2);
    if (!sv) {
      return Fail("time", text, "expected seconds after HH:MM:");
    }
    sec = *sv;
    if (!s.empty() && s.front() == '.') {
      auto frac = TakeDecimal(s);  // ".fff": whole part 0
      if (!frac) {
        return Fail("time", text, "expected digits after the decimal point");
      }
      frac_ns = frac->Times(kNsPerSecond);
    }
  }
  if (*h > 23 || *m > 59 || sec > 60) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d is not a time of day", *h, *m, sec);
    return Fail("time", text, buf);
  }
  return static_cast<int64_t>((*h * 3600LL + *m * 60LL + sec) * kNsPerSecond + frac_ns);
}

// A time in int64 nanoseconds since 1970, or an error naming the limits.
Result<int64_t> Checked(Int128 v, std::string_view text) {
  if (v > INT64_MAX || v < INT64_MIN) {
    return Fail("time", text, std::string("out of range: ") + kTimeRange);
  }
  return static_cast<int64_t>(v);
}

}  // namespace

namespace {

// The duration in ns, exactly, up to `limit_ns`.
Result<Int128> DurationTotal(std::string_view text, int64_t bare_unit_ns, Int128 limit_ns) {
  std::string_view s = Trim(text);
  if (s.empty()) {
    return Fail("duration", text, "empty; expected " + std::string(kDurationSyntax));
  }
  if (s.front() == '-') {
    return Fail("duration", text, "a duration is never negative");
  }
  Int128 total = 0;
  bool first = true;
  while (!s.empty()) {
    auto number = TakeDecimal(s);
    if (!number) {
      return Fail("duration", text,
                  "expected a number at \"" + std::string(s) + "\"; " + kDurationSyntax);
    }
    SkipSpaces(s);
    std::optional<int64_t> unit;
    if (s.empty() && first) {
      unit = bare_unit_ns;
    } else if (!(unit = TakeUnit(s))) {
      return Fail("duration", text,
                  s.empty()
                      ? std::string("a unit is missing at the end (ns, us, ms, s, m, h, d, w)")
                      : "unknown unit at \"" + std::string(s) + "\" (ns, us, ms, s, m, h, d, w)");
    }
    total += number->Times(*unit);
    if (total > limit_ns) {
      return Fail("duration", text, "too long");
    }
    SkipSpaces(s);
    first = false;
  }
  return total;
}

}  // namespace

Result<int64_t> ParseDurationNs(std::string_view text, int64_t bare_unit_ns) {
  auto total = DurationTotal(text, bare_unit_ns, INT64_MAX);
  if (!total.ok()) return total.status();
  return static_cast<int64_t>(*total);
}

Result<int64_t> ParseDurationMs(std::string_view text, int64_t bare_unit_ns) {
  auto total =
      DurationTotal(text, bare_unit_ns, static_cast<Int128>(INT64_MAX) * kNsPerMillisecond);
  if (!total.ok()) return total.status();
  if (*total % kNsPerMillisecond != 0) {
    return Fail("duration", text, "finer than a millisecond");
  }
  return static_cast<int64_t>(*total / kNsPerMillisecond);
}

Result<int64_t> ParseTimeNs(std::string_view text, int64_t now_ns) {
  std::string_view s = Trim(text);
  if (s.empty()) {
    return Fail("time", text, std::string("empty; expected ") + kTimeSyntax);
  }
  if (s == "now") return now_ns;

  // Relative: "-10m", "+30s", "10m ago".
  const bool ago = s.size() > 4 && s.substr(s.size() - 4) == " ago";
  if (s.front() == '-' || s.front() == '+' || ago) {
    const int sign = s.front() == '+' ? 1 : -1;
    std::string_view d = ago ? s.substr(0, s.size() - 4) : s.substr(1);
    auto v = ParseDurationNs(d);
    if (!v.ok()) {
      return Fail("time", text, v.status().message());
    }
    return Checked(static_cast<Int128>(now_ns) + sign * static_cast<Int128>(*v), text);
  }

  // Unix seconds: "1700000000.25" or "@1700000000.250000000".
  {
    std::string_view t = s;
    const bool at = Eat(t, '@');
    auto v = TakeDecimal(t);
    if (v && t.empty()) return Checked(v->Times(kNsPerSecond), text);
    if (at) {
      return Fail("time", text, "expected Unix seconds after @ (@1700000000.5)");
    }
  }

  // "HH:MM[:SS]": that time today (UTC).
  if (s.size() >= 3 && (s[1] == ':' || s[2] == ':')) {
    auto clock = TakeClock(s, text);
    if (!clock.ok()) return clock.status();
    if (!s.empty()) {
      return Fail("time", text, "unexpected \"" + std::string(s) + "\" after the time of day");
    }
    const int64_t day = FloorDiv(now_ns, kNsPerDay);
    return Checked(static_cast<Int128>(day) * kNsPerDay + *clock, text);
  }

  // ISO 8601: YYYY-MM-DD[(T| )H:M[:S[.fff]]][ ][Z|UTC|+hh[:mm]|-hh[:mm]]
  std::string_view rest = s;
  std::optional<int> year, month, day;
  if (s.size() >= 5 && IsDigit(s[0]) && IsDigit(s[1]) && IsDigit(s[2]) && IsDigit(s[3]) &&
      s[4] == '-') {
    year = TakeField(rest, 4);
    Eat(rest, '-');
    month = TakeField(rest, 2);
    if (month && Eat(rest, '-')) day = TakeField(rest, 2);
  }
  if (!year || !month || !day) {
    std::string why = std::string("expected ") + kTimeSyntax;
    if (ParseDurationNs(s).ok()) {
      why = "a duration, not a time: write -" + std::string(s) + " for that long ago";
    }
    return Fail("time", text, why);
  }
  if (*month < 1 || *month > 12 || *day < 1 || *day > DaysInMonth(*year, *month)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d is not a date", *year, *month, *day);
    return Fail("time", text, buf);
  }
  Int128 ns = static_cast<Int128>(DaysFromCivil(*year, *month, *day)) * kNsPerDay;
  if (!rest.empty() && (rest.front() == 'T' || rest.front() == 't' || rest.front() == ' ') &&
      rest.size() > 1 && IsDigit(rest[1])) {
    rest.remove_prefix(1);
    auto clock = TakeClock(rest, text);
    if (!clock.ok()) return clock.status();
    ns += *clock;
  }
  SkipSpaces(rest);
  if (rest == "Z" || rest == "z" || rest == "UTC") {
    rest = {};
  } else if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    const int sign = rest.front() == '-' ? -1 : 1;
    rest.remove_prefix(1);
    std::optional<int> oh, om = 0;
    if (rest.size() >= 2 && IsDigit(rest[0]) && IsDigit(rest[1])) oh = TakeField(rest, 2);
    if (Eat(rest, ':') || (!rest.empty() && IsDigit(rest.front()))) {
      om = rest.size() >= 2 && IsDigit(rest[0]) && IsDigit(rest[1]) ? TakeField(rest, 2)
                                                                    : std::nullopt;
    }
    if (!oh || !om || *oh > 23 || *om > 59 || !rest.empty()) {
      return Fail("time", text, "expected a zone offset such as +02:00, -0430 or Z");
    }
    ns -= sign * static_cast<Int128>(*oh * 3600 + *om * 60) * kNsPerSecond;
  }
  if (!rest.empty()) {
    return Fail("time", text, "unexpected \"" + std::string(rest) + "\" after the date and time");
  }
  return Checked(ns, text);
}

}  // namespace edgemon
