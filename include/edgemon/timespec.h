// The one syntax for durations and points in time, shared by edgemond's
// configuration file, every edgemon subcommand and edgetop.
//
// Durations (ParseDurationNs):
//   "500ms" "10s" "7d" "1h30m" "1m 30s" "1.5s" "20us" "7ns" "5min" "2w"
//   units: ns, us, ms, s (sec), m (min), h, d, w; several in a row add up;
//   a space may sit between a number and its unit. A bare number ("90")
//   counts in `bare_unit_ns`: seconds by default, milliseconds for the
//   --interval options that keep tegrastats' convention. Never negative.
//
// Points in time (ParseTimeNs), all Unix-epoch (CLOCK_REALTIME) nanoseconds:
//   "now"
//   "-10m", "10m ago"           a duration before now ("+30s": after now)
//   "1700000000", "1700000000.25"   Unix seconds
//   "@1700000000.250000000"     Unix seconds, exact to the nanosecond
//   "2023-11-14T22:13:05Z"      ISO 8601, "T" or a space between date and
//   "2023-11-14 22:13:05"       time, seconds and ".fff" optional, one or two
//   "2023-11-14 22:13:5"        digits per time field, "Z" or an offset
//   "2023-11-15T00:13:05+02:00" (+hh:mm, +hhmm, +hh)
//   "2023-11-14"                midnight
//   "22:13:05"                  that time today
// A time WITHOUT a zone is UTC, everywhere: the daemon stores UTC, the
// record summary prints UTC, and a command run on a laptop against a board
// in another zone, or from a service with another TZ, means the same
// instant. Write the offset ("+02:00") for a local time.
//
// Times are int64 nanoseconds: 1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z
// (kTimeRange); a time outside, written in any form, is an error that says so.
//
// Anything else (negative durations, overflow, 2023-02-30, trailing junk) is
// INVALID_ARGUMENT with a one-line reason that names the input. Pure functions: no time zone
// database, no locale.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "edgemon/status.h"

namespace edgemon {

inline constexpr int64_t kNsPerSecond = 1'000'000'000;
inline constexpr int64_t kNsPerMillisecond = 1'000'000;

Result<int64_t> ParseDurationNs(std::string_view text, int64_t bare_unit_ns = kNsPerSecond);

// The same in whole milliseconds; finer durations ("1.5ms") are an error.
Result<int64_t> ParseDurationMs(std::string_view text, int64_t bare_unit_ns = kNsPerSecond);

Result<int64_t> ParseTimeNs(std::string_view text, int64_t now_ns);

// The syntax in one line each, for --help texts and error messages.
inline constexpr const char* kDurationSyntax = "a duration such as 500ms, 10s, 5m, 1h30m, 7d";
inline constexpr const char* kTimeSyntax =
    "a time such as -10m, now, 2023-11-14T22:13:05Z, 2023-11-14 22:13:05 (no zone: UTC), "
    "2023-11-14T22:13:05+02:00, Unix seconds or @UNIX.NANOS";
// The times an int64 of nanoseconds since 1970 holds, whole seconds inside.
inline constexpr const char* kTimeRange =
    "times run from 1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z (int64 nanoseconds since 1970)";

}  // namespace edgemon
