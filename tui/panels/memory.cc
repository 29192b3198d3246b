#include "tui/panels/panels.h"

#include <optional>
#include <string>
#include <utility>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

// RAM (with lfb) and swap. Returns the next row.
int DrawMemory(Canvas& cv, const Telemetry& t, int row, int bottom, const Glyphs& g) {
  if (row >= bottom) return row;
  const Inventory& inv = t.inventory();
  const int w = cv.width();
  const int half = w / 2;
  bool any = false;
  auto used_of = [&](const Source& s) -> std::pair<Value, Value> {
    return {Get(t, s.Get(Field::kUsed)), Get(t, s.Get(Field::kTotal))};
  };
  for (const Source& s : Sources(inv, Kind::kMemory)) {
    if (s.Get(Field::kTotal) == nullptr) continue;
    auto [used, total] = used_of(s);
    std::optional<double> frac;
    if (used && total && *total > 0)
      frac = static_cast<double>(*used) / static_cast<double>(*total);
    std::string text = FormatKib(used) + "/" + FormatKib(total);
    if (s.Get(Field::kLfbBlocks) != nullptr) {
      Value blocks = Get(t, s.Get(Field::kLfbBlocks));
      Value size = Get(t, s.Get(Field::kLfbSize));
      text +=
          " lfb " + (blocks ? std::to_string(*blocks) : std::string("-")) + "x" + FormatKib(size);
    }
    PutMeter(cv, row, 1, half - 1, "RAM", 4, frac, text, Utf8Width(text), g);
    any = true;
    break;
  }
  for (const Source& s : Sources(inv, Kind::kSwap)) {
    if (s.Get(Field::kTotal) == nullptr) continue;
    auto [used, total] = used_of(s);
    std::optional<double> frac;
    if (used && total && *total > 0)
      frac = static_cast<double>(*used) / static_cast<double>(*total);
    if (total && *total == 0) frac = 0.0;
    std::string text = FormatKib(used) + "/" + FormatKib(total);
    PutMeter(cv, row, half + 1, w - half - 2, "Swap", 4, frac, text, Utf8Width(text), g);
    any = true;
    break;
  }
  return any ? row + 1 : row;
}
}  // namespace edgemon::tui
