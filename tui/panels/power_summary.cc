#include "tui/panels/panels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

namespace {

// One cell per history point (newest on the right), scaled between the
// shown minimum and maximum so that a steady load still shows its ripple.
std::string Sparkline(const std::deque<PowerPoint>& history, int width, double* min_mw,
                      double* max_mw, int64_t* span_ns, bool utf8) {
  std::string out;
  *min_mw = 0;
  *max_mw = 0;
  *span_ns = 0;
  if (width <= 0 || history.empty()) return out;
  const size_t n = std::min(history.size(), static_cast<size_t>(width));
  const size_t first = history.size() - n;
  bool any = false;
  for (size_t i = first; i < history.size(); ++i) {
    if (!history[i].mw) continue;
    *min_mw = any ? std::min(*min_mw, *history[i].mw) : *history[i].mw;
    *max_mw = any ? std::max(*max_mw, *history[i].mw) : *history[i].mw;
    any = true;
  }
  *span_ns = history.back().realtime_ns - history[first].realtime_ns;
  const double range = *max_mw - *min_mw;
  double lo = *min_mw - 0.1 * range;
  double hi = *max_mw;
  if (range < 0.05 * std::max(*max_mw, 1.0)) {  // steady: draw it mid-height
    lo = *min_mw - 0.05 * std::max(*max_mw, 100.0);
    hi = *max_mw + 0.05 * std::max(*max_mw, 100.0);
  }
  static constexpr std::array<const char*, 8> kLevels = {
      "\xE2\x96\x81", "\xE2\x96\x82", "\xE2\x96\x83", "\xE2\x96\x84",
      "\xE2\x96\x85", "\xE2\x96\x86", "\xE2\x96\x87", "\xE2\x96\x88"};
  static constexpr std::array<char, 8> kAscii = {'_', '.', ',', '-', '=', '+', '*', '#'};
  for (size_t i = first; i < history.size(); ++i) {
    if (!history[i].mw) {
      out += ' ';
      continue;
    }
    int level = static_cast<int>(std::lround((*history[i].mw - lo) / (hi - lo) * 7.0));
    level = std::clamp(level, 0, 7);
    if (utf8) {
      out += kLevels[static_cast<size_t>(level)];
    } else {
      out += kAscii[static_cast<size_t>(level)];
    }
  }
  return out;
}

}  // namespace

// "total 8.93 W (sum of 4 rails)" + sparkline + energy, in [col, end).
int DrawPowerSummary(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
                     const Glyphs& g) {
  if (row >= bottom || t.total().empty()) return row;
  std::optional<double> now;
  if (t.latest()) now = t.TotalMw(*t.latest());
  int c = cv.Put(row, col, "Total ", Role::kTitle, end);
  c = cv.Put(row, c, FormatWatts(now) + " W", Role::kText, end);
  c = cv.Put(row, c + 1, fmt::format("({})", t.total().Label()), Role::kDim, end);
  ++row;
  if (row < bottom) {
    double min_mw = 0;
    double max_mw = 0;
    int64_t span_ns = 0;
    const int label_w = 17;  // "99.9-99.9 W 600s"
    int spark_w = end - col - label_w - 1;
    std::string spark = Sparkline(t.history(), spark_w, &min_mw, &max_mw, &span_ns, g.utf8);
    cv.Put(row, col, spark, Role::kSpark, col + spark_w);
    std::string label = spark.empty() ? "-"
                                      : FormatWatts(min_mw) + "-" + FormatWatts(max_mw) + " W " +
                                            std::to_string(span_ns / 1'000'000'000) + "s";
    cv.Put(row, col + spark_w + 1, label, Role::kDim, end);
    ++row;
  }
  if (row < bottom) {
    int cc = cv.Put(row, col, "Energy ", Role::kTitle, end);
    cc = cv.Put(row, cc, FormatEnergy(t.energy_mj()), Role::kText, end);
    cv.Put(row, cc + 1, "since edgetop started", Role::kDim, end);
    ++row;
  }
  return row;
}
}  // namespace edgemon::tui
