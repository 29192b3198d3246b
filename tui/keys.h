// edgetop's UI state (page, sort, pause, refresh interval, scroll, the
// connection) and the keys that change it. Pure: HandleKey changes a UiState
// and says what the app must do beyond redrawing.
//
// Thread safety: pure functions over value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/edgemon_client.h"

namespace edgemon::tui {

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

}  // namespace edgemon::tui
