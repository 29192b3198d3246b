// A CLI11 transform for options that take a duration in milliseconds
// (--interval): the value is read in the common syntax of edgemon/timespec.h
// ("500ms", "2s", "1m") and replaced by its whole milliseconds. A bare number
// counts in the unit users of the tool it stands in for expect: seconds for
// `edgemon watch` and `edgetop -d` (as watch(1), top -d and jtop), milliseconds
// for `edgemon tegrastats --interval` (as tegrastats). A value outside the
// option's bounds is refused with the bound, never clamped. Used by edgemon
// and edgetop.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "edgemon/timespec.h"

namespace edgemon::client {

// The daemon's floor for live frames (edgemond's Sampler::kMinLivePeriodNs):
// a watch faster than this is refused here rather than slowed down there.
inline constexpr uint32_t kDaemonFloorMs = 10;

// Bounds of an interval option, in milliseconds. `zero` names what 0 means
// where 0 is accepted below min_ms ("" = refused like any value below it);
// `floor_of` names whose floor min_ms is, for the error.
struct IntervalBounds {
  uint32_t min_ms = 1;
  uint32_t max_ms = 3600u * 1000u;
  int64_t bare_unit_ns = kNsPerSecond;
  std::string zero;
  std::string floor_of = "the smallest interval";
};

inline CLI::Validator DurationMsFlag(IntervalBounds b) {
  return CLI::Validator(
      [b](std::string& value) -> std::string {
        auto ms = ParseDurationMs(value, b.bare_unit_ns);
        if (!ms.ok()) return ms.status().message();
        const std::string bare = b.bare_unit_ns == kNsPerSecond ? "s" : "ms";
        if (*ms == 0 && !b.zero.empty()) {
          value = "0";
          return {};
        }
        if (*ms < b.min_ms) {
          return value + " is below " + b.floor_of + " of " + std::to_string(b.min_ms) +
                 "ms: use " + std::to_string(b.min_ms) + "ms or more" +
                 (b.zero.empty() ? "" : " (or 0 for " + b.zero + ")") + "; a bare number counts " +
                 (bare == "s" ? "seconds" : "milliseconds");
        }
        if (*ms > b.max_ms) {
          return value + " is above the largest interval, " + std::to_string(b.max_ms / 1000) + "s";
        }
        value = std::to_string(*ms);
        return {};
      },
      "DURATION", "duration");
}

// `--interval` (and its other names) in milliseconds through DurationMsFlag
// (edgemon watch, edgemon tegrastats, edgetop).
inline CLI::Option* AddIntervalOption(CLI::App& app, uint32_t& interval_ms, const std::string& help,
                                      IntervalBounds bounds,
                                      const std::string& names = "--interval") {
  return app.add_option(names, interval_ms, help)->transform(DurationMsFlag(std::move(bounds)));
}

}  // namespace edgemon::client
