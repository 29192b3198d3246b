#include "tui/panels/panels.h"

#include <array>
#include <string>
#include <utility>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

void DrawHelp(Canvas& cv, const UiState& ui) {
  static constexpr std::array<std::pair<const char*, const char*>, 14> kKeys = {{
      {"1 2 3, Tab", "pages: Overview, Processes, Power"},
      {"h ?", "this help (any key closes it)"},
      {"q", "quit"},
      {"space p", "pause or resume the display"},
      {"+ -", "longer or shorter refresh interval"},
      {"c m g", "sort processes by CPU, memory, GPU memory"},
      {"n u", "sort processes by PID, user"},
      {"s", "next sort key"},
      {"r", "reverse the sort order"},
      {"Up Down PgUp PgDn", "scroll the process list"},
      {"", ""},
      {"Rails", "watts now, average and peak since edgetop started"},
      {"Total", "the input rail, else the sum of top-level rails"},
      {"-", "not reported by the board (never shown as 0)"},
  }};
  int row = 3;
  cv.Put(row++, 1, "edgetop keys", Role::kTitle);
  for (const auto& [key, what] : kKeys) {
    if (row >= cv.height()) break;
    cv.Put(row, 3, key, Role::kSelected, 22);
    cv.Put(row, 23, what, Role::kText, cv.width() - 1);
    ++row;
  }
  if (row + 1 < cv.height()) {
    cv.Put(row + 1, 1,
           "daemon " + ui.target + ", refresh " + std::to_string(ui.interval_ms) + " ms",
           Role::kDim, cv.width() - 1);
  }
}
}  // namespace edgemon::tui
