// edgetop's formatters: values with their units as shown on screen. Each
// returns "-" for an absent value, never 0.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace edgemon::tui {

// printf of one double, e.g. Printf("%.1f", v).
std::string Printf(const char* fmt, double v);

// Formatting used on screen (exposed for tests). Each returns "-" for absent.
std::string FormatWatts(std::optional<double> mw);              // "2.29", "12.3"
std::string FormatTempC(std::optional<int64_t> mc, bool utf8);  // "44.6°C" / "44.6C"
std::string FormatMhz(std::optional<int64_t> khz);              // "1190MHz"
std::string FormatPercent(std::optional<int64_t> permille);     // "42%"
std::string FormatKib(std::optional<int64_t> kib);              // "4.4G", "512M", "900K"
std::string FormatDuration(int64_t seconds);                    // "2d 03:04", "03:04:05"
std::string FormatEnergy(std::optional<double> mj);             // "123.4 J", "1.23 Wh"

}  // namespace edgemon::tui
