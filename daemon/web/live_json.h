// What the live page's endpoints send, as JSON (nlohmann-json), and the
// checking of their parameters. Pure functions of their arguments: no
// store, no sockets (the routes are daemon/web/live_site.h).
//
//   hello   (the stream's first event, and again when the inventory changes)
//           the board and every channel as ToJson (include/edgemon/render.h)
//           renders them, plus "generation", "period_ms" and "rail_tree":
//           the power rails in tree order ({name, depth, input}; sub-rails
//           under their parent, never added to it)
//   frame   {"seq", "t" (Unix ms), "v": [value per channel id, null when absent]}
//   history {"from", "to", "step" (Unix ms, ms), "series": [{"key", "t": [..],
//           "min": [..], "avg": [..], "max": [..]}], "windows": [window..],
//           "truncated_windows"}: steps without a value are left out
//   window  {"id", "label", "start" (ms), "end" (ms or null while open),
//           "abandoned"}
//   energy  {"window" (or null), "from", "to", "duration_s", "rails":
//           [{"name", "parent", "input", "energy_j", "avg_w", "peak_w"} (null
//           where unknown)], "note"}
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/channel.h"
#include "edgemon/model.h"
#include "edgemon/status.h"

namespace edgemon::web {

nlohmann::json HelloJson(const Inventory& inventory, const Frame& frame, uint64_t generation,
                         int64_t period_ns);
nlohmann::json FrameJson(const Frame& frame);
nlohmann::json WindowJson(const Window& window);
nlohmann::json EnergyJson(const Summary& summary, std::optional<int64_t> window_id);

// One server-sent event: "event: NAME\ndata: JSON\n\n".
std::string SseEvent(std::string_view name, const nlohmann::json& data);

// A request parameter by name; nullopt when the request has none.
using ParamFn = std::function<std::optional<std::string>(const std::string& name)>;

// The most points a history series holds, the most series a request asks
// for, and the most points of one answer (series x points: about 1.6 MB of
// JSON), whatever the mix.
inline constexpr int64_t kMaxHistoryPoints = 5000;
inline constexpr size_t kMaxHistoryChannels = 64;
inline constexpr uint64_t kMaxHistoryCells = 40'000;
// Without `step`, a range is cut into about this many steps.
inline constexpr int64_t kDefaultHistoryPoints = 600;

struct TimeRange {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// `from` (default "-1h") and `to` (default "now") in the one time syntax
// (include/edgemon/timespec.h), relative to `now_ns`. INVALID_ARGUMENT, in one
// line naming the parameter, for a bad time or from >= to.
Result<TimeRange> ParseRange(const ParamFn& param, int64_t now_ns);

struct HistoryRequest {
  TimeRange range;
  int64_t step_ns = 0;
  std::vector<std::string> keys;  // channel keys ("kind/name/field")
};

// A history request: the range, `step` (a duration; default: the range in
// about kDefaultHistoryPoints steps, whole milliseconds, at least
// `min_step_ns`) and `channels` (comma-separated channel keys, each in
// `known`; default: every rail's power). INVALID_ARGUMENT for a step under
// 1 ms, more than kMaxHistoryPoints steps, an unknown or repeated channel,
// more than kMaxHistoryChannels of them, or more than kMaxHistoryCells
// points in all (each message names the limit).
Result<HistoryRequest> ParseHistory(const ParamFn& param, int64_t now_ns, int64_t min_step_ns,
                                    const Inventory& known);

}  // namespace edgemon::web
