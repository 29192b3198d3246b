// --items-from matching and the duration/time parsing of edgemon record/attach.
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>

#include "record_report.h"

namespace edgemon::cli::record {

namespace {

std::optional<double> ToNumber(std::string text) {
  std::string clean;
  for (char c : text) {
    if (c != ',' && c != '_' && !std::isspace(static_cast<unsigned char>(c))) clean += c;
  }
  if (clean.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (ec != std::errc() || p != clean.data() + clean.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// A non-negative decimal number at the start of s; advances s.
std::optional<double> TakeNumber(std::string_view& s) {
  size_t n = 0;
  bool dot = false;
  while (n < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[n])) || (s[n] == '.' && !dot))) {
    dot = dot || s[n] == '.';
    ++n;
  }
  if (n == 0 || (n == 1 && s[0] == '.')) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + n, v);
  if (ec != std::errc() || p != s.data() + n) return std::nullopt;
  s.remove_prefix(n);
  return v;
}

std::optional<int> TakeInt(std::string_view& s, size_t digits) {
  if (s.size() < digits) return std::nullopt;
  int v = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  s.remove_prefix(digits);
  return v;
}

bool Take(std::string_view& s, char c) {
  if (s.empty() || s[0] != c) return false;
  s.remove_prefix(1);
  return true;
}

}  // namespace

void ItemCounter::MatchLine(const std::string& line) {
  std::smatch m;
  auto begin = line.cbegin();
  std::optional<double> last;
  while (std::regex_search(begin, line.cend(), m, re_)) {
    std::string text = m.size() > 1 && m[1].matched ? m[1].str() : m[0].str();
    if (auto v = ToNumber(text)) last = v;
    if (m[0].length() == 0) {
      if (m[0].second == line.cend()) break;
      begin = m[0].second + 1;
    } else {
      begin = m[0].second;
    }
  }
  if (last) {
    value_ = last;
    ++matches_;
  }
}

void ItemCounter::Feed(std::string_view chunk) {
  size_t pos = 0;
  while (pos < chunk.size()) {
    size_t nl = chunk.find('\n', pos);
    if (nl == std::string_view::npos) {
      partial_.append(chunk.substr(pos));
      // A line longer than 1 MiB is matched in pieces rather than kept.
      if (partial_.size() > (1u << 20)) {
        MatchLine(partial_);
        partial_.clear();
      }
      return;
    }
    partial_.append(chunk.substr(pos, nl - pos));
    if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
    MatchLine(partial_);
    partial_.clear();
    pos = nl + 1;
  }
}

void ItemCounter::Finish() {
  if (!partial_.empty()) MatchLine(partial_);
  partial_.clear();
}

std::optional<std::regex> CompileItemsRegex(const std::string& pattern, std::string* error) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

std::optional<int64_t> ParseDuration(std::string_view text) {
  std::string_view s = text;
  auto v = TakeNumber(s);
  if (!v) return std::nullopt;
  double scale = 1e9;
  if (s.empty() || s == "s") {
    scale = 1e9;
  } else if (s == "ms") {
    scale = 1e6;
  } else if (s == "us") {
    scale = 1e3;
  } else if (s == "m" || s == "min") {
    scale = 60e9;
  } else if (s == "h") {
    scale = 3600e9;
  } else if (s == "d") {
    scale = 86400e9;
  } else {
    return std::nullopt;
  }
  double ns = *v * scale;
  if (!std::isfinite(ns) || ns > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(ns));
}

std::optional<int64_t> ParseTimePoint(std::string_view text, int64_t now_ns) {
  if (text == "now") return now_ns;
  if (text.empty()) return std::nullopt;
  if (text[0] == '-' || text[0] == '+') {
    auto d = ParseDuration(text.substr(1));
    if (!d) return std::nullopt;
    return text[0] == '-' ? now_ns - *d : now_ns + *d;
  }
  if (text[0] == '@') {
    // Integer seconds and up to 9 fraction digits, exactly (a double loses ns).
    std::string_view s = text.substr(1);
    size_t dot = s.find('.');
    std::string_view whole = s.substr(0, dot);
    std::string frac(dot == std::string_view::npos ? "" : s.substr(dot + 1));
    int64_t secs = 0;
    auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), secs);
    if (whole.empty() || ec != std::errc() || p != whole.data() + whole.size() || secs < 0 ||
        secs > 9'000'000'000 || frac.size() > 9 ||
        frac.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    frac.append(9 - frac.size(), '0');
    return secs * 1'000'000'000 + std::stoll(frac);
  }
  // ISO 8601: YYYY-MM-DD[T ]hh:mm[:ss[.fff]][Z|+hh:mm|-hh:mm]
  std::string_view s = text;
  auto year = TakeInt(s, 4);
  if (!year || !Take(s, '-')) return std::nullopt;
  auto month = TakeInt(s, 2);
  if (!month || !Take(s, '-')) return std::nullopt;
  auto day = TakeInt(s, 2);
  if (!day) return std::nullopt;
  int hour = 0, minute = 0;
  double sec = 0;
  if (!s.empty()) {
    if (!Take(s, 'T') && !Take(s, ' ')) return std::nullopt;
    auto h = TakeInt(s, 2);
    if (!h || !Take(s, ':')) return std::nullopt;
    auto mi = TakeInt(s, 2);
    if (!mi) return std::nullopt;
    hour = *h;
    minute = *mi;
    if (Take(s, ':')) {
      auto sv = TakeNumber(s);
      if (!sv || *sv >= 61) return std::nullopt;
      sec = *sv;
    }
  }
  int64_t offset_s = 0;
  if (Take(s, 'Z')) {
  } else if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    int sign = s[0] == '-' ? -1 : 1;
    s.remove_prefix(1);
    auto oh = TakeInt(s, 2);
    if (!oh) return std::nullopt;
    Take(s, ':');
    auto om = TakeInt(s, 2);
    if (!om) return std::nullopt;
    offset_s = sign * (*oh * 3600 + *om * 60);
  }
  if (!s.empty()) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || hour > 23 || minute > 59) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = 0;
  std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return (static_cast<int64_t>(t) - offset_s) * 1'000'000'000 +
         static_cast<int64_t>(std::llround(sec * 1e9));
}

}  // namespace edgemon::cli::record
