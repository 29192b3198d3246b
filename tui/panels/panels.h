// edgetop's panels: each draws one part of a page onto the Canvas from the
// Telemetry, in the region it is given, and returns the row after what it
// drew. The pages (view_model.cc) place them; one file each under panels/.
//
// Thread safety: pure functions over value types.
#pragma once

#include <vector>

#include "tui/canvas.h"
#include "tui/keys.h"
#include "tui/telemetry.h"

namespace edgemon::tui {

// Rows 0-2: identity and connection, software and rates (or why the daemon
// is gone), page tabs and key hints (header.cc).
void DrawHeader(Canvas& cv, const Telemetry& t, const UiState& ui, const Glyphs& g);
// Disconnected or stopped: why, word-wrapped to lines of at most `width`
// code points (the header's row 1 holds the first; BuildScreen moves the
// screen below down for the others). Empty when connected.
std::vector<std::string> ConnectionReasonLines(const UiState& ui, int width);

// CPU cores, GPUs and EMC as meter cells in a grid (meters.cc).
int DrawMeters(Canvas& cv, const Telemetry& t, int row, int bottom, const Glyphs& g);

// RAM (with lfb) and swap (memory.cc).
int DrawMemory(Canvas& cv, const Telemetry& t, int row, int bottom, const Glyphs& g);

// Rails in tree order: input rails, top-level rails, each followed by its
// sub-rails (depth 1, 2, ...).
struct RailRow {
  const Channel* power;
  int depth;
};

std::vector<RailRow> RailTree(const Inventory& inv);

// The rail table in [col, end), with V and A when `detail` (rails.cc).
int DrawRails(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end, bool detail,
              const Glyphs& g);

// Total power, its sparkline and the energy since start (power_summary.cc).
int DrawPowerSummary(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
                     const Glyphs& g);

// Temperatures, with trip points when `trips` (temps.cc).
int DrawTemps(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end, bool trips,
              const Glyphs& g);

// Fans: duty and speed (fans.cc).
int DrawFans(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
             const Glyphs& g);

// Engines (NVDEC, NVENC, DLA...): clock or on/off (engines.cc).
int DrawEngines(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
                const Glyphs& g);

// Protection and throttle events (over-current counts, throttled time, an
// INA alert or a stuck fan on now), the rails' headroom against their
// limits and the clocks the power mode caps (diagnostics.cc).
int DrawDiagnostics(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
                    const Glyphs& g);

// The process table, sorted by ui.sort; scrolled by ui.process_scroll when
// `scroll` (processes.cc).
int DrawProcesses(Canvas& cv, const Telemetry& t, const UiState& ui, int row, int bottom,
                  bool scroll, const Glyphs& g);

// The help page (help.cc).
void DrawHelp(Canvas& cv, const UiState& ui);

}  // namespace edgemon::tui
