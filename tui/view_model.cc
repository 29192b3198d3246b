#include "tui/view_model.h"

#include <algorithm>
#include <string>
#include <vector>

#include "tui/panels/panels.h"

namespace edgemon::tui {

namespace {

// ------------------------------------------------------------------- pages

void DrawOverview(Canvas& cv, const Telemetry& t, const UiState& ui, const Glyphs& g) {
  const int w = cv.width();
  const int bottom = cv.height();
  int row = 3;
  row = DrawMeters(cv, t, row, bottom, g);
  row = DrawMemory(cv, t, row, bottom, g);
  // Lower block: power on the left, temperatures and fans on the right.
  const int half = w / 2;
  int left = DrawRails(cv, t, row, bottom, 1, half - 1, false, g);
  left = DrawPowerSummary(cv, t, left, bottom, 1, half - 1, g);
  int right = DrawTemps(cv, t, row, bottom, half + 1, w - 1, false, g);
  right = DrawFans(cv, t, right, bottom, half + 1, w - 1, g);
  row = std::max(left, right);
  row = DrawEngines(cv, t, row, bottom, 1, w - 1, g);
  if (bottom - row >= 2) DrawProcesses(cv, t, ui, row, bottom, false, g);
}

void DrawPowerPage(Canvas& cv, const Telemetry& t, const Glyphs& g) {
  const int w = cv.width();
  const int bottom = cv.height();
  int row = 3;
  if (RailTree(t.inventory()).empty()) {
    cv.Put(row++, 1,
           "No power rails on this board: edgemond found no INA3221, RAPL, power_supply or NVML "
           "power sensor",
           Role::kDim, w - 1);
  }
  row = DrawRails(cv, t, row, bottom, 1, std::min(w - 1, 80), true, g);
  if (row < bottom) ++row;
  row = DrawPowerSummary(cv, t, row, bottom, 1, w - 1, g);
  if (row < bottom) ++row;
  row = DrawTemps(cv, t, row, bottom, 1, w - 1, true, g);
  row = DrawFans(cv, t, row, bottom, 1, w - 1, g);
  row = DrawEngines(cv, t, row, bottom, 1, w - 1, g);
  if (row < bottom) ++row;
  DrawDiagnostics(cv, t, row, bottom, 1, w - 1, g);
}

// The screen of `ui`'s size; `min_height`: the least height drawn (below it,
// a note of the size needed).
Screen BuildScreenRows(const Telemetry& t, const UiState& ui, int min_height) {
  Canvas cv(std::max(ui.width, 1), std::max(ui.height, 1));
  const Glyphs g{ui.utf8};
  if (ui.width < kMinWidth || ui.height < min_height) {
    cv.Put(0, 0, "edgetop needs " + std::to_string(kMinWidth) + "x" + std::to_string(kMinHeight),
           Role::kAlert);
    cv.Put(1, 0, "now " + std::to_string(ui.width) + "x" + std::to_string(ui.height), Role::kText);
    cv.Put(2, 0, "q quits", Role::kDim);
    return cv.Take();
  }
  DrawHeader(cv, t, ui, g);
  if (ui.help) {
    DrawHelp(cv, ui);
  } else if (!t.has_info()) {
    cv.Put(4, 1, "no data yet from " + ui.target, Role::kDim, cv.width() - 1);
  } else {
    switch (ui.page) {
      case Page::kOverview:
        DrawOverview(cv, t, ui, g);
        break;
      case Page::kProcesses:
        DrawProcesses(cv, t, ui, 3, cv.height(), true, g);
        break;
      case Page::kPower:
        DrawPowerPage(cv, t, g);
        break;
    }
  }
  return cv.Take();
}

}  // namespace

Screen BuildScreen(const Telemetry& t, const UiState& ui) {
  // Disconnected: the whole reason shows, its lines after the first under
  // the header's row 1, and everything below moves down by as many rows.
  const bool fits = ui.width >= kMinWidth && ui.height >= kMinHeight;
  const std::vector<std::string> reason =
      fits ? ConnectionReasonLines(ui, ui.width - 2) : std::vector<std::string>{};
  const int extra = std::min(static_cast<int>(reason.size()) - 1, kMinHeight / 4);
  if (extra > 0) {
    UiState inner = ui;
    inner.height = ui.height - extra;
    Screen s = BuildScreenRows(t, inner, kMinHeight - extra);
    for (Span& sp : s.spans) {
      if (sp.row >= 2) sp.row += extra;
    }
    for (int i = 1; i <= extra; ++i) {
      s.spans.push_back(
          {1 + i, 1, Clip(reason[static_cast<size_t>(i)], ui.width - 2), Role::kAlert});
    }
    s.height = ui.height;
    return s;
  }
  return BuildScreenRows(t, ui, kMinHeight);
}

}  // namespace edgemon::tui
