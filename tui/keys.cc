#include "tui/keys.h"

#include <algorithm>
#include <iterator>

namespace edgemon::tui {

std::string_view ToString(SortKey key) {
  switch (key) {
    case SortKey::kCpu:
      return "cpu";
    case SortKey::kMemory:
      return "mem";
    case SortKey::kGpuMemory:
      return "gpu";
    case SortKey::kPid:
      return "pid";
    case SortKey::kUser:
      return "user";
  }
  return "cpu";
}

Command HandleKey(int key, UiState& ui) {
  if (ui.help) {
    if (key == 'q' || key == 'Q') return Command::kQuit;
    ui.help = false;
    return Command::kRedraw;
  }
  auto set_sort = [&](SortKey k) {
    if (ui.sort == k) {
      ui.sort_ascending = !ui.sort_ascending;
    } else {
      ui.sort = k;
      ui.sort_ascending = k == SortKey::kPid || k == SortKey::kUser;
    }
    ui.process_scroll = 0;
    return Command::kSortChanged;
  };
  auto step_interval = [&](int dir) {
    constexpr int n = static_cast<int>(std::size(kIntervalsMs));
    int i = 0;
    while (i < n - 1 && kIntervalsMs[i] < ui.interval_ms) ++i;
    int next = std::clamp(i + dir, 0, n - 1);
    if (kIntervalsMs[next] == ui.interval_ms) return Command::kRedraw;
    ui.interval_ms = kIntervalsMs[next];
    return Command::kIntervalChanged;
  };
  switch (key) {
    case 'q':
    case 'Q':
      return Command::kQuit;
    case 'h':
    case '?':
      ui.help = true;
      return Command::kRedraw;
    case '1':
    case '2':
    case '3':
      ui.page = static_cast<Page>(key - '1');
      return Command::kRedraw;
    case kKeyTab:
      ui.page = static_cast<Page>((static_cast<int>(ui.page) + 1) % kPageCount);
      return Command::kRedraw;
    case kKeyBackTab:
      ui.page = static_cast<Page>((static_cast<int>(ui.page) + kPageCount - 1) % kPageCount);
      return Command::kRedraw;
    case ' ':
    case 'p':
      ui.paused = !ui.paused;
      return Command::kRedraw;
    case '+':
    case '=':
      return step_interval(+1);
    case '-':
    case '_':
      return step_interval(-1);
    case 'c':
      return set_sort(SortKey::kCpu);
    case 'm':
      return set_sort(SortKey::kMemory);
    case 'g':
      return set_sort(SortKey::kGpuMemory);
    case 'n':
      return set_sort(SortKey::kPid);
    case 'u':
      return set_sort(SortKey::kUser);
    case 's': {
      SortKey next = static_cast<SortKey>((static_cast<int>(ui.sort) + 1) % 5);
      return set_sort(next);
    }
    case 'r':
      ui.sort_ascending = !ui.sort_ascending;
      return Command::kSortChanged;
    case kKeyDown:
      ++ui.process_scroll;
      return Command::kRedraw;
    case kKeyUp:
      ui.process_scroll = std::max(0, ui.process_scroll - 1);
      return Command::kRedraw;
    case kKeyPageDown:
      ui.process_scroll += std::max(1, ui.height - 6);
      return Command::kRedraw;
    case kKeyPageUp:
      ui.process_scroll = std::max(0, ui.process_scroll - std::max(1, ui.height - 6));
      return Command::kRedraw;
    case kKeyHome:
      ui.process_scroll = 0;
      return Command::kRedraw;
    case kKeyEscape:
      return Command::kRedraw;
    default:
      return Command::kNone;
  }
}

}  // namespace edgemon::tui
