#include "tui/panels/panels.h"

#include <string>

#include <fmt/format.h>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

int DrawFans(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
             const Glyphs& g) {
  (void)g;
  for (const Source& s : Sources(t.inventory(), Kind::kFan)) {
    if (row >= bottom) break;
    int c = cv.Put(row, col, "Fan ", Role::kTitle, end);
    c = cv.Put(row, c, s.name, Role::kDim, end);
    std::string text;
    if (s.Get(Field::kDuty) != nullptr) {
      text += fmt::format(" {}", FormatPercent(Get(t, s.Get(Field::kDuty))));
    }
    if (s.Get(Field::kSpeed) != nullptr) {
      Value rpm = Get(t, s.Get(Field::kSpeed));
      text += fmt::format(" {} rpm", rpm ? std::to_string(*rpm) : std::string("-"));
    }
    c = cv.Put(row, c, text, Role::kText, end);
    // The fan collector's stuck-fan condition: duty on, 0 rpm for 10 s.
    if (const Channel* stuck = t.inventory().Find(Kind::kEvent, s.name + ":stuck", Field::kState)) {
      if (Get(t, stuck).value_or(0) != 0) cv.Put(row, c, " STUCK", Role::kAlert, end);
    }
    ++row;
  }
  return row;
}
}  // namespace edgemon::tui
