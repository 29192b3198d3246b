#include <fmt/format.h>

#include <string>

#include "edgemon/diagnostics.h"
#include "edgemon/render.h"
#include "tui/format.h"
#include "tui/panels/channels.h"
#include "tui/panels/panels.h"

namespace edgemon::tui {

namespace {

bool IsSource(const Channel* c, std::string_view source) {
  const std::string* s = c == nullptr ? nullptr : c->Attr("source");
  return s != nullptr && *s == source;
}

Role PercentRole(double percent) {
  if (percent >= 100) return Role::kCrit;
  if (percent >= 90) return Role::kHot;
  if (percent >= 75) return Role::kWarn;
  return Role::kText;
}

}  // namespace

int DrawDiagnostics(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
                    const Glyphs& g) {
  (void)g;
  if (!t.latest()) return row;
  const Inventory& inv = t.inventory();
  const Frame& frame = *t.latest();
  const std::vector<Source> events = Sources(inv, Kind::kEvent);
  const std::vector<Headroom> headroom = RailHeadroom(inv, frame);
  const std::vector<FreqCap> caps = PowerModeCaps(inv, frame);
  if (events.empty() && headroom.empty() && caps.empty()) return row;
  if (row >= bottom) return row;
  cv.Put(row++, col, "Diagnostics", Role::kTitle, end);

  // Events: over-current counters and throttling always; INA alerts only when
  // one was raised (a board has a pair per rail), then a count of the quiet ones.
  int quiet_alerts = 0;
  for (const Source& s : events) {
    const Channel* count = s.Get(Field::kEvents);
    const Channel* time = s.Get(Field::kTime);
    const Channel* state = s.Get(Field::kState);
    Value n = Get(t, count), ms = Get(t, time), on = Get(t, state);
    const bool alarm = IsSource(state, "alarm") || IsSource(count, "alarm");
    if (alarm && n.value_or(0) == 0 && on.value_or(0) == 0) {
      ++quiet_alerts;
      continue;
    }
    // A condition with nothing counted (a stuck fan) only while it is on.
    if (count == nullptr && time == nullptr && on.value_or(0) == 0) continue;
    if (row >= bottom) return row;
    int c = cv.Put(row, col + 1, s.name, Role::kDim, end);
    std::string text;
    if (count != nullptr) text += " " + (n ? std::to_string(*n) : std::string("-")) + " events";
    if (time != nullptr) {
      text += " throttled " +
              (ms ? Printf("%.1f", static_cast<double>(*ms) / 1000.0) + " s" : std::string("-"));
    }
    c = cv.Put(row, c, text, Role::kText, end);
    if (state != nullptr && on && *on != 0) {
      const char* what = IsSource(state, "fan")        ? " STUCK (PWM on, 0 rpm)"
                         : IsSource(state, "throttle") ? " THROTTLING"
                                                       : " ALERT";
      cv.Put(row, c, what, Role::kAlert, end);
    }
    ++row;
  }
  if (quiet_alerts > 0 && row < bottom) {
    cv.Put(row++, col + 1, fmt::format("{} INA alert limits watched, none raised", quiet_alerts),
           Role::kDim, end);
  }
  // One row per rail reading: "VDD_IN current 1.416 A  18% of max 6.000 A  15% of crit ...".
  for (size_t i = 0; i < headroom.size();) {
    if (row >= bottom) return row;
    const Channel& c = *headroom[i].channel;
    int x = cv.Put(row, col + 1, c.name, Role::kDim, end);
    x = cv.Put(row, x, fmt::format(" {} {}", ToString(c.field), FormatValue(c, headroom[i].value)),
               Role::kText, end);
    for (; i < headroom.size() && headroom[i].channel == &c; ++i) {
      const Headroom& h = headroom[i];
      x = cv.Put(row, x, "  ", Role::kText, end);
      x = cv.Put(row, x, Printf("%.0f%%", h.percent_of_limit), PercentRole(h.percent_of_limit),
                 end);
      x = cv.Put(row, x, fmt::format(" of {} {}", h.limit, FormatValue(c, h.limit_value)),
                 Role::kDim, end);
    }
    ++row;
  }
  for (const FreqCap& cap : caps) {
    if (row >= bottom) return row;
    cv.Put(row++, col + 1,
           fmt::format("{} capped by the power mode: {} of {}", cap.names, FormatMhz(cap.cap_khz),
                       FormatMhz(cap.max_khz)),
           Role::kWarn, end);
  }
  return row;
}

}  // namespace edgemon::tui
