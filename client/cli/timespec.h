// Times and durations on the edgemon command line (--since, --until, --last,
// --from, --to, --step).
//
//   ParseDurationNs("90s")   ->  90 s     units: ns us ms s m h d (w), several
//   ParseDurationNs("1h30m") ->  5400 s   in a row; "1.5s" and a bare number of
//   ParseDurationNs("250ms") ->  0.25 s   seconds ("90") are accepted too.
//
//   ParseTimeNs("now", now)                  -> now
//   ParseTimeNs("-5m", now)                  -> now - 5 min (also "5m ago")
//   ParseTimeNs("1763892000", now)           -> unix seconds (decimals allowed)
//   ParseTimeNs("2026-11-23T10:00:00", now)  -> local time; "T" or " " between
//   ParseTimeNs("2026-11-23T10:00:00Z", now)    date and time, optional ".fff",
//   ParseTimeNs("2026-11-23T10:00:00+02:00")    "Z" or a +HH:MM / -HHMM offset
//   ParseTimeNs("2026-11-23", now)           -> local midnight
//   ParseTimeNs("10:00:00", now)             -> today, local time
//
// All results are CLOCK_REALTIME nanoseconds. nullopt for anything else,
// including negative durations and overflow. Pure functions (the local time
// zone is read through localtime_r/mktime).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace edgemon::cli {

std::optional<int64_t> ParseDurationNs(std::string_view s);
std::optional<int64_t> ParseTimeNs(std::string_view s, int64_t now_ns);

// The current CLOCK_REALTIME in ns.
int64_t RealtimeNowNs();

}  // namespace edgemon::cli
