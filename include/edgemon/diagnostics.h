// Diagnostics read from an inventory and a frame: rail headroom against the
// limits the sensors declare, clocks capped below their hardware maximum by
// the power mode, protection and throttle events that are active, and the
// notes a run's report gives from the event counters' change over its range.
// Shared by `edgemon now`, edgetop and `edgemon record`/`attach`.
//
// Nothing here guesses: a value or limit that is absent gives no row, never
// a row computed from 0.
//
// Thread safety: plain functions of their arguments.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgemon/channel.h"
#include "edgemon/model.h"

namespace edgemon {

// One rail reading against one of its limits (Channel::max: the warning
// limit, Channel::crit: the critical one).
struct Headroom {
  const Channel* channel = nullptr;  // rail current or power
  std::string limit;                 // "max" (warning) or "crit"
  int64_t value = 0;                 // in the channel's unit
  int64_t limit_value = 0;
  int64_t headroom = 0;         // limit_value - value (negative: over the limit)
  double percent_of_limit = 0;  // value / limit_value x 100
};
// Rails with a present value and a positive limit, in inventory order; the
// warning limit before the critical one.
std::vector<Headroom> RailHeadroom(const Inventory& inv, const Frame& frame);

// A clock whose upper policy limit (the freq_max channel: cpufreq
// scaling_max_freq, devfreq max_freq) is below the hardware maximum
// (Channel::max: cpuinfo_max_freq, the highest available frequency): what
// nvpmodel writes for a power mode. CPU cores with the same cap and maximum
// are one row ("cpu0-cpu7").
struct FreqCap {
  Kind kind = Kind::kCpu;
  std::string names;
  int64_t cap_khz = 0;
  int64_t max_khz = 0;
};
std::vector<FreqCap> PowerModeCaps(const Inventory& inv, const Frame& frame);

// Event conditions on now (event/*/state = 1): an INA alert raised, a cooling
// device throttling, a stuck fan.
std::vector<const Channel*> ActiveEvents(const Inventory& inv, const Frame& frame);

// "VDD_IN current 1.234 A, crit 7.784 A: 15.9 % (headroom 6.550 A)"; "cpu0-cpu11
// capped by the power mode at 1498 MHz of 2202 MHz"; "active: pwmfan:stuck".
// One line each, without a trailing newline; names are TerminalSafe.
std::vector<std::string> DiagnosticLines(const Inventory& inv, const Frame& frame);

// {"headroom": [{key, limit, value, limit_value, headroom, percent_of_limit}],
//  "capped": [{kind, names, cap_khz, max_khz}], "active": [key, ...]}
nlohmann::json DiagnosticsJson(const Inventory& inv, const Frame& frame);

// The lowest and highest value of a channel over a range (a counter's edges,
// since stored counters never decrease).
struct Range {
  int64_t min = 0;
  int64_t max = 0;
};
// The report's note on events over a range, from the event channels' ranges
// by channel id: "2 over-current events (oc3), 1 current alert (VDD_IN:crit)
// and 3.1 s of thermal throttling (cpufreq-cpu0) during this run"; "the fan
// pwmfan was stuck" when a stuck-fan condition was on. Empty when nothing
// happened or no event channel was read.
std::string EventNote(const Inventory& inv, const std::map<ChannelId, Range>& ranges);

// The thermal throttling over a range: the longest any cooling device spent
// throttling (devices overlap, so they are not added), "4.0 s (cpufreq-cpu0)";
// empty when none throttled or none was read.
std::string ThrottleSummary(const Inventory& inv, const std::map<ChannelId, Range>& ranges);

// The keys of the event channels (for a query of their ranges).
std::vector<std::string> EventKeys(const Inventory& inv);

}  // namespace edgemon
