#include "daemon/web/live_json.h"

#include <set>

#include "edgemon/checked.h"
#include "edgemon/rail_tree.h"
#include "edgemon/render.h"
#include "edgemon/text.h"
#include "edgemon/timespec.h"

namespace edgemon::web {
namespace {

using nlohmann::json;

// Unix milliseconds of a frame or window time (exact in a JS number).
int64_t Ms(int64_t ns) {
  return ns / kNsPerMillisecond;
}

template <typename T>
json OrNull(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json OrNullScaled(const std::optional<double>& v, double scale) {
  return v ? json(*v * scale) : json(nullptr);
}

}  // namespace

json HelloJson(const Inventory& inventory, const Frame& frame, uint64_t generation,
               int64_t period_ns) {
  json out = ToJson(inventory, frame, {});
  out.erase("values");  // the channels carry theirs
  std::vector<RailLink> rails;
  for (const auto& c : inventory.channels) {
    if (c.kind == Kind::kRail && c.field == Field::kPower) {
      rails.push_back({c.name, c.parent, c.Has(kFlagInputRail)});
    }
  }
  json tree = json::array();
  WalkRailTree(rails, [&](size_t i, int depth) {
    tree.push_back({{"name", rails[i].name}, {"depth", depth}, {"input", rails[i].input}});
  });
  out["rail_tree"] = std::move(tree);
  out["generation"] = generation;
  out["period_ms"] = Ms(period_ns);
  return out;
}

json FrameJson(const Frame& frame) {
  json values = json::array();
  for (const auto& v : frame.values) values.push_back(OrNull(v));
  return {{"seq", frame.seq}, {"t", Ms(frame.realtime_ns)}, {"v", std::move(values)}};
}

json WindowJson(const Window& w) {
  return {{"id", w.id},
          {"label", w.label},
          {"start", Ms(w.start_ns)},
          {"end", w.end_ns ? json(Ms(*w.end_ns)) : json(nullptr)},
          {"abandoned", w.abandoned}};
}

json EnergyJson(const Summary& s, std::optional<int64_t> window_id) {
  json rails = json::array();
  for (const auto& r : s.rails) {
    rails.push_back({{"name", r.name},
                     {"parent", r.parent},
                     {"input", r.input},
                     {"energy_j", OrNullScaled(r.energy_mj, 1e-3)},
                     {"avg_w", OrNullScaled(r.avg_power_mw, 1e-3)},
                     {"peak_w", r.peak_power_mw ? json(static_cast<double>(*r.peak_power_mw) * 1e-3)
                                                : json(nullptr)}});
  }
  return {{"window", OrNull(window_id)}, {"from", Ms(s.from_ns)},     {"to", Ms(s.to_ns)},
          {"duration_s", s.duration_s},  {"rails", std::move(rails)}, {"note", s.note}};
}

std::string SseEvent(std::string_view name, const json& data) {
  std::string out = "event: ";
  out += name;
  out += "\ndata: ";
  out += data.dump(-1, ' ', false, json::error_handler_t::replace);
  out += "\n\n";
  return out;
}

Result<TimeRange> ParseRange(const ParamFn& param, int64_t now_ns) {
  TimeRange r;
  for (auto [name, fallback, out] :
       {std::tuple{"from", "-1h", &r.from_ns}, std::tuple{"to", "now", &r.to_ns}}) {
    std::string text = param(name).value_or(fallback);
    auto t = ParseTimeNs(text, now_ns);
    if (!t.ok()) return Status::InvalidArgument(std::string(name) + ": " + t.status().message());
    *out = *t;
  }
  if (r.from_ns >= r.to_ns) {
    return Status::InvalidArgument("from must be before to (got from " + std::to_string(r.from_ns) +
                                   " ns, to " + std::to_string(r.to_ns) + " ns)");
  }
  return r;
}

Result<HistoryRequest> ParseHistory(const ParamFn& param, int64_t now_ns, int64_t min_step_ns,
                                    const Inventory& known) {
  HistoryRequest h;
  auto range = ParseRange(param, now_ns);
  if (!range.ok()) return range.status();
  h.range = *range;
  const uint64_t span = SpanNs(h.range.from_ns, h.range.to_ns);
  if (auto step = param("step")) {
    auto d = ParseDurationNs(*step);
    if (!d.ok()) return Status::InvalidArgument("step: " + d.status().message());
    if (*d < kNsPerMillisecond) {
      return Status::InvalidArgument("step: at least 1ms, got " + *step);
    }
    h.step_ns = *d;
  } else {
    // About kDefaultHistoryPoints steps, in whole milliseconds.
    const uint64_t per = span / static_cast<uint64_t>(kDefaultHistoryPoints);
    const uint64_t ms = per / kNsPerMillisecond + 1;
    const uint64_t cap = static_cast<uint64_t>(INT64_MAX / kNsPerMillisecond);
    h.step_ns = static_cast<int64_t>(std::min(ms, cap)) * kNsPerMillisecond;
    h.step_ns = std::max(h.step_ns, min_step_ns);
  }
  const uint64_t steps = BucketCount(h.range.from_ns, h.range.to_ns, h.step_ns);
  if (steps > static_cast<uint64_t>(kMaxHistoryPoints)) {
    return Status::InvalidArgument("step: " + std::to_string(steps) + " steps over this range, " +
                                   "more than " + std::to_string(kMaxHistoryPoints) +
                                   "; use a larger step or a shorter range");
  }
  std::set<std::string> keys;
  for (const auto& c : known.channels) keys.insert(c.Key());
  if (auto list = param("channels"); list && !list->empty()) {
    std::set<std::string> seen;
    for (std::string_view rest = *list; !rest.empty();) {
      const size_t comma = rest.find(',');
      const std::string key(text::Trim(rest.substr(0, comma)));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (key.empty()) return Status::InvalidArgument("channels: an empty name in the list");
      if (!keys.count(key)) {
        return Status::InvalidArgument("channels: no channel " + key +
                                       " (a key such as rail/VDD_IN/power)");
      }
      if (!seen.insert(key).second) {
        return Status::InvalidArgument("channels: " + key + " is listed twice");
      }
      if (seen.size() > kMaxHistoryChannels) {
        return Status::InvalidArgument("channels: more than " +
                                       std::to_string(kMaxHistoryChannels));
      }
      h.keys.push_back(key);
    }
  } else {
    for (const auto& c : known.channels) {
      if (c.kind == Kind::kRail && c.field == Field::kPower) h.keys.push_back(c.Key());
    }
  }
  if (const uint64_t cells = steps * h.keys.size(); cells > kMaxHistoryCells) {
    return Status::InvalidArgument(
        "channels x steps: " + std::to_string(h.keys.size()) + " channels of " +
        std::to_string(steps) + " steps make " + std::to_string(cells) + " points, more than " +
        std::to_string(kMaxHistoryCells) +
        " per request; ask fewer channels, a larger step or a shorter range");
  }
  return h;
}

}  // namespace edgemon::web
