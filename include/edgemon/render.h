// Text and JSON renderings of an inventory and a frame, for edgemon-probe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgemon/channel.h"

namespace edgemon {

// "45.5 C", "5.123 W", "1984 MHz", "37.5 %", "3.1 GiB"; "-" when absent.
std::string FormatValue(const Channel& c, const Value& v);

// A table grouped by kind: one row per source, one column per field. Text
// for a terminal: names and board strings are TerminalSafe.
std::string RenderTable(const Inventory& inv, const Frame& frame,
                        const std::vector<uint64_t>& error_counts);

// {"board": {...}, "channels": [...], "values": {"kind/name/field": v|null}}
nlohmann::json ToJson(const Inventory& inv, const Frame& frame,
                      const std::vector<uint64_t>& error_counts);

// One compact line per frame for --watch (names TerminalSafe).
std::string RenderLine(const Inventory& inv, const Frame& frame);

}  // namespace edgemon
