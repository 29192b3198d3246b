#include "edgemon/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>

#include "edgemon/render.h"
#include "edgemon/text.h"

namespace edgemon {
namespace {

bool IsSource(const Channel& c, std::string_view source) {
  const std::string* s = c.Attr("source");
  return s != nullptr && *s == source;
}

// "a", "a and b", "a, b and c".
std::string JoinAnd(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? " and " : ", ";
    out += parts[i];
  }
  return out;
}

std::string Plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The cooling device that throttled longest over the ranges, and its ms.
std::pair<int64_t, std::string> LongestThrottle(const Inventory& inv,
                                                const std::map<ChannelId, Range>& ranges) {
  std::pair<int64_t, std::string> most{0, ""};
  for (const auto& c : inv.channels) {
    if (c.kind != Kind::kEvent || c.field != Field::kTime) continue;
    auto it = ranges.find(c.id);
    if (it == ranges.end() || it->second.max - it->second.min <= most.first) continue;
    most = {it->second.max - it->second.min, c.name};
  }
  return most;
}

}  // namespace

std::vector<Headroom> RailHeadroom(const Inventory& inv, const Frame& frame) {
  std::vector<Headroom> out;
  for (const auto& c : inv.channels) {
    if (c.kind != Kind::kRail || c.Has(kFlagConstant)) continue;
    if (c.field != Field::kCurrent && c.field != Field::kPower) continue;
    Value v = frame.Get(c.id);
    if (!v) continue;
    for (const auto& [name, limit] : {std::pair{"max", c.max}, std::pair{"crit", c.crit}}) {
      if (!limit || *limit <= 0) continue;
      Headroom h;
      h.channel = &c;
      h.limit = name;
      h.value = *v;
      h.limit_value = *limit;
      h.headroom = *limit - *v;
      h.percent_of_limit = 100.0 * static_cast<double>(*v) / static_cast<double>(*limit);
      out.push_back(std::move(h));
    }
  }
  return out;
}

std::vector<FreqCap> PowerModeCaps(const Inventory& inv, const Frame& frame) {
  std::vector<FreqCap> out;
  std::string last_name;  // the last CPU merged into out.back()
  for (const auto& c : inv.channels) {
    if (c.field != Field::kFreqMax || !c.max) continue;
    if (c.kind != Kind::kCpu && c.kind != Kind::kGpu && c.kind != Kind::kEmc &&
        c.kind != Kind::kDevfreq) {
      continue;
    }
    Value v = frame.Get(c.id);
    if (!v || *v <= 0 || *v >= *c.max) continue;
    if (c.kind == Kind::kCpu && !out.empty() && out.back().kind == Kind::kCpu &&
        out.back().cap_khz == *v && out.back().max_khz == *c.max) {
      const std::string& first = out.back().names;
      out.back().names = first.substr(0, first.find('-')) + "-" + c.name;
      continue;
    }
    out.push_back({c.kind, c.name, *v, *c.max});
  }
  return out;
}

std::vector<const Channel*> ActiveEvents(const Inventory& inv, const Frame& frame) {
  std::vector<const Channel*> out;
  for (const auto& c : inv.channels) {
    if (c.kind != Kind::kEvent || c.field != Field::kState) continue;
    Value v = frame.Get(c.id);
    if (v && *v != 0) out.push_back(&c);
  }
  return out;
}

std::vector<std::string> DiagnosticLines(const Inventory& inv, const Frame& frame) {
  std::vector<std::string> out;
  for (const auto& h : RailHeadroom(inv, frame)) {
    const Channel& c = *h.channel;
    out.push_back(fmt::format("{} {} {}, {} {}: {:.1f} % (headroom {})", TerminalSafe(c.name),
                              ToString(c.field), FormatValue(c, h.value), h.limit,
                              FormatValue(c, h.limit_value), h.percent_of_limit,
                              FormatValue(c, h.headroom)));
  }
  for (const auto& cap : PowerModeCaps(inv, frame)) {
    out.push_back(fmt::format("{} capped by the power mode at {} MHz of {} MHz",
                              TerminalSafe(cap.names), cap.cap_khz / 1000, cap.max_khz / 1000));
  }
  for (const Channel* c : ActiveEvents(inv, frame)) {
    out.push_back("active: " + TerminalSafe(c->name));
  }
  return out;
}

nlohmann::json DiagnosticsJson(const Inventory& inv, const Frame& frame) {
  nlohmann::json headroom = nlohmann::json::array();
  for (const auto& h : RailHeadroom(inv, frame)) {
    headroom.push_back({{"key", h.channel->Key()},
                        {"unit", ToString(h.channel->unit)},
                        {"limit", h.limit},
                        {"value", h.value},
                        {"limit_value", h.limit_value},
                        {"headroom", h.headroom},
                        {"percent_of_limit", h.percent_of_limit}});
  }
  nlohmann::json capped = nlohmann::json::array();
  for (const auto& cap : PowerModeCaps(inv, frame)) {
    capped.push_back({{"kind", ToString(cap.kind)},
                      {"names", cap.names},
                      {"cap_khz", cap.cap_khz},
                      {"max_khz", cap.max_khz}});
  }
  nlohmann::json active = nlohmann::json::array();
  for (const Channel* c : ActiveEvents(inv, frame)) active.push_back(c->Key());
  return {{"headroom", headroom}, {"capped", capped}, {"active", active}};
}

std::string EventNote(const Inventory& inv, const std::map<ChannelId, Range>& ranges) {
  int64_t over_current = 0, alerts = 0;
  std::vector<std::string> oc_names, alert_names, stuck;
  for (const auto& c : inv.channels) {
    if (c.kind != Kind::kEvent) continue;
    auto it = ranges.find(c.id);
    if (it == ranges.end()) continue;
    const int64_t delta = it->second.max - it->second.min;
    if (c.field == Field::kEvents && delta > 0) {
      if (IsSource(c, "over-current")) {
        over_current += delta;
        oc_names.push_back(c.name);
      } else {
        alerts += delta;
        alert_names.push_back(c.name);
      }
    } else if (c.field == Field::kState && IsSource(c, "fan") && it->second.max != 0) {
      stuck.push_back(c.name.substr(0, c.name.rfind(':')));
    }
  }
  auto names = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
    return " (" + s + ")";
  };
  std::vector<std::string> parts;
  if (over_current > 0) {
    parts.push_back(Plural(over_current, "over-current event", "over-current events") +
                    names(oc_names));
  }
  if (alerts > 0) {
    parts.push_back(Plural(alerts, "current/power alert", "current/power alerts") +
                    names(alert_names));
  }
  if (auto [ms, name] = LongestThrottle(inv, ranges); ms > 0) {
    parts.push_back(
        fmt::format("{:.1f} s of thermal throttling ({})", static_cast<double>(ms) / 1000.0, name));
  }
  for (const auto& fan : stuck) parts.push_back("the fan " + fan + " stuck (PWM on, 0 rpm)");
  if (parts.empty()) return "";
  return JoinAnd(parts) + " during this run";
}

std::string ThrottleSummary(const Inventory& inv, const std::map<ChannelId, Range>& ranges) {
  auto [ms, name] = LongestThrottle(inv, ranges);
  if (ms <= 0) return "";
  return fmt::format("{:.1f} s ({})", static_cast<double>(ms) / 1000.0, name);
}

std::vector<std::string> EventKeys(const Inventory& inv) {
  std::vector<std::string> out;
  for (const auto& c : inv.channels) {
    if (c.kind == Kind::kEvent) out.push_back(c.Key());
  }
  return out;
}

}  // namespace edgemon
