// A CLI11 transform for options that take a duration in milliseconds
// (--interval, --timeout-ms): the value is read in the common syntax of
// edgemon/timespec.h ("500ms", "2s", "1m") and replaced by its whole
// milliseconds; a bare number counts milliseconds, as tegrastats' --interval
// always has. Used by edgemon and edgetop.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "edgemon/timespec.h"

namespace edgemon::client {

inline CLI::Validator DurationMsFlag() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto ms = ParseDurationMs(value, kNsPerMillisecond);
        if (!ms.ok()) return ms.status().message();
        value = std::to_string(*ms);
        return {};
      },
      "DURATION", "duration");
}

// `--interval` in milliseconds through DurationMsFlag, checked to
// [min_ms, max_ms] (edgemon watch, edgemon tegrastats, edgetop).
inline CLI::Option* AddIntervalOption(CLI::App& app, uint32_t& interval_ms, const std::string& help,
                                      uint32_t min_ms, uint32_t max_ms) {
  return app.add_option("--interval", interval_ms, help)
      ->transform(DurationMsFlag())
      ->check(CLI::Range(min_ms, max_ms));
}

}  // namespace edgemon::client
