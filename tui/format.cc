#include "tui/format.h"

#include <cmath>
#include <cstdio>

namespace edgemon::tui {

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string FormatWatts(std::optional<double> mw) {
  if (!mw) return "-";
  double w = *mw / 1000.0;
  if (std::fabs(w) >= 100) return Printf("%.0f", w);
  if (std::fabs(w) >= 10) return Printf("%.1f", w);
  return Printf("%.2f", w);
}

std::string FormatTempC(std::optional<int64_t> mc, bool utf8) {
  if (!mc) return "-";
  return Printf("%.1f", static_cast<double>(*mc) / 1000.0) + (utf8 ? "\xC2\xB0"
                                                                     "C"
                                                                   : "C");
}

std::string FormatMhz(std::optional<int64_t> khz) {
  if (!khz) return "-";
  return std::to_string((*khz + 500) / 1000) + "MHz";
}

std::string FormatPercent(std::optional<int64_t> permille) {
  if (!permille) return "-";
  return std::to_string((*permille + 5) / 10) + "%";
}

std::string FormatKib(std::optional<int64_t> kib) {
  if (!kib) return "-";
  double v = static_cast<double>(*kib);
  if (v >= 1024.0 * 1024.0 * 1024.0) return Printf("%.1fT", v / (1024.0 * 1024.0 * 1024.0));
  if (v >= 1024.0 * 1024.0) return Printf("%.1fG", v / (1024.0 * 1024.0));
  if (v >= 1024.0) return Printf("%.0fM", v / 1024.0);
  return std::to_string(*kib) + "K";
}

std::string FormatDuration(int64_t seconds) {
  if (seconds < 0) return "-";
  char buf[48];
  int64_t d = seconds / 86400;
  int64_t h = seconds / 3600 % 24;
  int64_t m = seconds / 60 % 60;
  int64_t s = seconds % 60;
  if (d > 0) {
    std::snprintf(buf, sizeof(buf), "%lldd %02lld:%02lld", static_cast<long long>(d),
                  static_cast<long long>(h), static_cast<long long>(m));
  } else {
    std::snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  }
  return buf;
}

std::string FormatEnergy(std::optional<double> mj) {
  if (!mj) return "-";
  double j = *mj / 1000.0;
  if (j >= 3600.0) return Printf("%.2f Wh", j / 3600.0);
  return Printf("%.1f J", j);
}

}  // namespace edgemon::tui
