// edgetop's view model: everything edgetop shows, computed from the
// Telemetry (telemetry.h) and the UI state as a Screen of positioned text
// spans with colour roles. Pure: no terminal, no clock, no I/O. The terminal
// (terminal.h) draws a Screen with a dumb loop; tests render it to plain text
// (RenderText, canvas.h) and check values, widths and overlaps.
//
// Layout rules: every span lies inside the screen (the builder clips), spans
// never overlap, and missing values show as "-", never 0.
//
// Thread safety: pure functions over value types.
#pragma once

#include "tui/canvas.h"
#include "tui/format.h"
#include "tui/keys.h"
#include "tui/telemetry.h"

namespace edgemon::tui {

// The smallest layout edgetop promises to fit without overlap.
inline constexpr int kMinWidth = 80;
inline constexpr int kMinHeight = 24;

Screen BuildScreen(const Telemetry& t, const UiState& ui);

}  // namespace edgemon::tui
