#include "edgemon/proc_stat.h"

#include <charconv>

#include "edgemon/text.h"

namespace edgemon {
namespace {

// Splits off the next whitespace-separated token.
std::string_view NextToken(std::string_view& s) {
  size_t i = 0;
  while (i < s.size() && text::IsSpace(s[i])) ++i;
  size_t j = i;
  while (j < s.size() && !text::IsSpace(s[j])) ++j;
  std::string_view tok = s.substr(i, j - i);
  s.remove_prefix(j);
  return tok;
}

std::optional<uint64_t> Ticks(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  const auto open = text.find('('), close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcStat st;
  st.name = std::string(text.substr(open + 1, close - open - 1));
  std::string_view rest = text.substr(close + 1);
  const std::string_view state = NextToken(rest);
  if (state.size() != 1) return std::nullopt;
  st.state = state.front();
  for (int field = 4; field < 14; ++field) {
    if (NextToken(rest).empty()) return std::nullopt;
  }
  const auto utime = Ticks(NextToken(rest));
  const auto stime = Ticks(NextToken(rest));
  if (!utime || !stime) return std::nullopt;
  st.utime = *utime;
  st.stime = *stime;
  for (int field = 16; field < 22; ++field) {
    if (NextToken(rest).empty()) return st;
  }
  st.start_time = Ticks(NextToken(rest));
  return st;
}

}  // namespace edgemon
