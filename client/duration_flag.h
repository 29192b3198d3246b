// A CLI11 transform for options that take a duration in milliseconds
// (--interval, --timeout-ms): the value is read in the common syntax of
// edgemon/timespec.h ("500ms", "2s", "1m") and replaced by its whole
// milliseconds; a bare number counts milliseconds, as tegrastats' --interval
// always has. Used by edgemon and edgetop.
#pragma once

#include <CLI/CLI.hpp>
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

}  // namespace edgemon::client
