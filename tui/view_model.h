// edgetop's view model: everything edgetop shows, computed from the
// Telemetry (telemetry.h) and the UI state as a Screen of positioned text
// spans with colour roles. Pure: no terminal, no clock, no I/O. The terminal
// (terminal.h) draws a Screen with a dumb loop; tests render it to plain text
// (RenderText) and check values, widths and overlaps.
//
// Layout rules: every span lies inside the screen (the builder clips), spans
// never overlap, and missing values show as "-", never 0.
//
// Thread safety: pure functions over value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon_client.h"
#include "telemetry.h"

namespace edgemon::tui {

// What a span is, for colour and attributes. The terminal maps each role to a
// colour pair (and to bold/reverse/dim in monochrome).
enum class Role : uint8_t {
  kText,
  kDim,        // labels, units, absent values
  kTitle,      // section titles
  kHeader,     // the header lines
  kTab,        // an inactive page tab
  kTabActive,  // the current page tab
  kGood,       // connected, cool, low load
  kWarn,       // warm, medium load
  kHot,        // past a passive/hot trip, high load
  kCrit,       // past a critical trip
  kAlert,      // disconnected, paused
  kBarLow,
  kBarMid,
  kBarHigh,
  kSpark,
  kSelected,  // the sort column
};
inline constexpr int kRoleCount = static_cast<int>(Role::kSelected) + 1;

// Text at (row, col); `text` is UTF-8 and one cell per code point (edgetop
// only emits narrow characters).
struct Span {
  int row = 0;
  int col = 0;
  std::string text;
  Role role = Role::kText;
};

struct Screen {
  int width = 0;
  int height = 0;
  std::vector<Span> spans;
};

enum class Page : uint8_t { kOverview, kProcesses, kPower };
inline constexpr int kPageCount = 3;

enum class SortKey : uint8_t { kCpu, kMemory, kGpuMemory, kPid, kUser };
std::string_view ToString(SortKey key);

struct UiState {
  Page page = Page::kOverview;
  bool help = false;
  SortKey sort = SortKey::kCpu;
  bool sort_ascending = false;
  bool paused = false;
  uint32_t interval_ms = 1000;  // edgetop's refresh
  int process_scroll = 0;       // first process row shown
  client::ConnectionState connection = client::ConnectionState::kConnecting;
  std::string connection_message;  // why, when disconnected or stopped
  std::string target;              // daemon address
  int width = 80;
  int height = 24;
  bool color = true;
  bool utf8 = true;
};

// The smallest layout edgetop promises to fit without overlap.
inline constexpr int kMinWidth = 80;
inline constexpr int kMinHeight = 24;

// The refresh intervals + and - step through.
inline constexpr uint32_t kIntervalsMs[] = {250, 500, 1000, 2000, 5000, 10000};

// Keys the view model understands (printable keys are their ASCII code).
inline constexpr int kKeyTab = 9;
inline constexpr int kKeyEscape = 27;
inline constexpr int kKeyUp = 0x10001;
inline constexpr int kKeyDown = 0x10002;
inline constexpr int kKeyPageUp = 0x10003;
inline constexpr int kKeyPageDown = 0x10004;
inline constexpr int kKeyHome = 0x10005;
inline constexpr int kKeyEnd = 0x10006;
inline constexpr int kKeyBackTab = 0x10007;

// What a key asks of the app beyond the UiState change HandleKey made.
enum class Command : uint8_t {
  kNone,    // not a key edgetop uses
  kRedraw,  // UiState changed
  kQuit,
  kIntervalChanged,  // restart the stream at ui.interval_ms
  kSortChanged,      // fetch the process list again
};
Command HandleKey(int key, UiState& ui);

Screen BuildScreen(const Telemetry& t, const UiState& ui);

// Plain text of a Screen: `height` lines of at most `width` code points, with
// trailing blanks removed. Counts cells written by more than one span and
// spans that leave the screen.
struct TextRender {
  std::vector<std::string> lines;
  int overlaps = 0;
  int out_of_bounds = 0;
};
TextRender RenderText(const Screen& screen);

// Code points in a UTF-8 string.
int Utf8Width(std::string_view s);

// Formatting used on screen (exposed for tests). Each returns "-" for absent.
std::string FormatWatts(std::optional<double> mw);              // "2.29", "12.3"
std::string FormatTempC(std::optional<int64_t> mc, bool utf8);  // "44.6°C" / "44.6C"
std::string FormatMhz(std::optional<int64_t> khz);              // "1190MHz"
std::string FormatPercent(std::optional<int64_t> permille);     // "42%"
std::string FormatKib(std::optional<int64_t> kib);              // "4.4G", "512M", "900K"
std::string FormatDuration(int64_t seconds);                    // "2d 03:04", "03:04:05"
std::string FormatEnergy(std::optional<double> mj);             // "123.4 J", "1.23 Wh"

}  // namespace edgemon::tui
