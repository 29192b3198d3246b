#include "timespec.h"

#include <time.h>

#include <cctype>
#include <string>

namespace edgemon::cli {
namespace {

// Wide enough for any int64 times a unit, with room to detect overflow.
__extension__ typedef __int128 Int128;

constexpr int64_t kSecond = 1'000'000'000;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// A decimal number "12", "1.5", ".25" scaled by `unit_ns`, exactly (no
// floating point). Consumes the digits from `s`.
std::optional<Int128> Scaled(std::string_view& s, int64_t unit_ns) {
  Int128 whole = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size() && IsDigit(s[i])) {
    whole = whole * 10 + (s[i] - '0');
    if (whole > static_cast<Int128>(INT64_MAX)) return std::nullopt;
    ++i;
    any = true;
  }
  Int128 frac_ns = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    Int128 scale = unit_ns;
    Int128 num = 0;
    Int128 den = 1;
    while (i < s.size() && IsDigit(s[i])) {
      if (den < static_cast<Int128>(1) << 80) {  // digits past ~1e-24 change nothing
        num = num * 10 + (s[i] - '0');
        den *= 10;
      }
      ++i;
      any = true;
    }
    frac_ns = num * scale / den;
  }
  if (!any) return std::nullopt;
  s.remove_prefix(i);
  return whole * unit_ns + frac_ns;
}

// The unit at the front of `s` (longest match), consumed.
std::optional<int64_t> Unit(std::string_view& s) {
  struct U {
    std::string_view name;
    int64_t ns;
  };
  static constexpr U kUnits[] = {
      {"ns", 1},
      {"us", 1000},
      {"ms", 1'000'000},
      {"sec", kSecond},
      {"min", 60 * kSecond},
      {"s", kSecond},
      {"m", 60 * kSecond},
      {"h", 3600 * kSecond},
      {"d", 86400 * kSecond},
      {"w", 7 * 86400 * kSecond},
  };
  for (const auto& u : kUnits) {
    if (s.substr(0, u.name.size()) == u.name) {
      s.remove_prefix(u.name.size());
      return u.ns;
    }
  }
  return std::nullopt;
}

// Reads exactly `n` digits.
std::optional<int> Digits(std::string_view& s, size_t n) {
  if (s.size() < n) return std::nullopt;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!IsDigit(s[i])) return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  s.remove_prefix(n);
  return v;
}

bool Eat(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

// "HH:MM[:SS[.fff]]" into tm and a fraction of a second in ns.
bool ClockTime(std::string_view& s, struct tm& tm, int64_t& frac_ns) {
  auto h = Digits(s, 2);
  if (!h || !Eat(s, ':')) return false;
  auto m = Digits(s, 2);
  if (!m) return false;
  int sec = 0;
  frac_ns = 0;
  if (Eat(s, ':')) {
    auto sv = Digits(s, 2);
    if (!sv) return false;
    sec = *sv;
    if (!s.empty() && s.front() == '.') {
      std::string_view rest = s.substr(1);
      int64_t scale = kSecond / 10;
      size_t i = 0;
      while (i < rest.size() && IsDigit(rest[i])) {
        frac_ns += (rest[i] - '0') * scale;
        scale /= 10;
        ++i;
      }
      if (i == 0) return false;
      s = rest.substr(i);
    }
  }
  if (*h > 23 || *m > 59 || sec > 60) return false;
  tm.tm_hour = *h;
  tm.tm_min = *m;
  tm.tm_sec = sec;
  return true;
}

std::optional<int64_t> FromTm(struct tm tm, bool utc, int64_t offset_s, int64_t frac_ns) {
  time_t t;
  if (utc) {
    t = timegm(&tm);
  } else {
    tm.tm_isdst = -1;
    t = mktime(&tm);
  }
  if (t == static_cast<time_t>(-1) && !(tm.tm_year == 69 && tm.tm_mon == 11)) return std::nullopt;
  const Int128 ns = (static_cast<Int128>(t) - offset_s) * kSecond + frac_ns;
  if (ns > INT64_MAX || ns < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(ns);
}

}  // namespace

int64_t RealtimeNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kSecond + ts.tv_nsec;
}

std::optional<int64_t> ParseDurationNs(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  // A bare number is seconds.
  {
    std::string_view t = s;
    auto v = Scaled(t, kSecond);
    if (v && t.empty()) {
      if (*v > INT64_MAX) return std::nullopt;
      return static_cast<int64_t>(*v);
    }
  }
  Int128 total = 0;
  while (!s.empty()) {
    // The number's unit is needed before scaling: find where the digits end.
    size_t n = 0;
    while (n < s.size() && (IsDigit(s[n]) || s[n] == '.')) ++n;
    if (n == 0) return std::nullopt;
    std::string_view rest = s.substr(n);
    auto unit = Unit(rest);
    if (!unit) return std::nullopt;
    std::string_view number = s.substr(0, n);
    auto v = Scaled(number, *unit);
    if (!v || !number.empty()) return std::nullopt;
    total += *v;
    if (total > INT64_MAX) return std::nullopt;
    s = rest;
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  }
  return static_cast<int64_t>(total);
}

std::optional<int64_t> ParseTimeNs(std::string_view s, int64_t now_ns) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  if (s == "now") return now_ns;
  auto relative = [&](std::string_view d) -> std::optional<int64_t> {
    auto v = ParseDurationNs(d);
    if (!v) return std::nullopt;
    return now_ns - *v;
  };
  if (s.front() == '-') return relative(s.substr(1));
  if (s.size() > 4 && s.substr(s.size() - 4) == " ago") return relative(s.substr(0, s.size() - 4));

  // Unix seconds, with an optional fraction.
  {
    std::string_view t = s;
    auto v = Scaled(t, kSecond);
    if (v && t.empty()) {
      if (*v > INT64_MAX) return std::nullopt;
      return static_cast<int64_t>(*v);
    }
  }

  struct tm tm = {};
  int64_t frac_ns = 0;
  // "HH:MM[:SS]": today.
  if (s.size() >= 5 && s[2] == ':') {
    time_t now_s = static_cast<time_t>(now_ns / kSecond);
    localtime_r(&now_s, &tm);
    if (!ClockTime(s, tm, frac_ns) || !s.empty()) return std::nullopt;
    return FromTm(tm, false, 0, frac_ns);
  }
  auto y = Digits(s, 4);
  if (!y || !Eat(s, '-')) return std::nullopt;
  auto mo = Digits(s, 2);
  if (!mo || !Eat(s, '-')) return std::nullopt;
  auto d = Digits(s, 2);
  if (!d || *mo < 1 || *mo > 12 || *d < 1 || *d > 31) return std::nullopt;
  tm.tm_year = *y - 1900;
  tm.tm_mon = *mo - 1;
  tm.tm_mday = *d;
  if (!s.empty() && (s.front() == 'T' || s.front() == 't' || s.front() == ' ')) {
    s.remove_prefix(1);
    if (!ClockTime(s, tm, frac_ns)) return std::nullopt;
  }
  bool utc = false;
  int64_t offset_s = 0;
  if (s == "Z" || s == "z") {
    utc = true;
    s = {};
  } else if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    const int sign = s.front() == '-' ? -1 : 1;
    s.remove_prefix(1);
    auto oh = Digits(s, 2);
    if (!oh) return std::nullopt;
    Eat(s, ':');
    auto om = Digits(s, 2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    utc = true;
    offset_s = sign * (*oh * 3600 + *om * 60);
  }
  if (!s.empty()) return std::nullopt;
  // Reject dates that mktime would normalise (2026-02-31).
  struct tm check = tm;
  auto v = FromTm(tm, utc, offset_s, frac_ns);
  if (!v) return std::nullopt;
  time_t back = static_cast<time_t>((*v / kSecond) + offset_s);
  struct tm out = {};
  if (utc) {
    gmtime_r(&back, &out);
  } else {
    localtime_r(&back, &out);
  }
  if (out.tm_mday != check.tm_mday || out.tm_mon != check.tm_mon) return std::nullopt;
  return v;
}

}  // namespace edgemon::cli
