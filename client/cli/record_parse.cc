// --items-from matching of edgemon record.
#include <cctype>
#include <charconv>
#include <cmath>

#include "client/cli/record_report.h"

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

Result<std::regex> CompileItemsRegex(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Status::InvalidArgument(e.what());
  }
}

}  // namespace edgemon::cli::record
