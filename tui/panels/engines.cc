#include "tui/panels/panels.h"

#include <string>
#include <vector>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

// Engines as "NAME 729MHz" / "NAME 12%@729MHz" / "NAME off" items flowing across rows.
int DrawEngines(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
                const Glyphs& g) {
  (void)g;
  std::vector<Source> engines = Sources(t.inventory(), Kind::kEngine);
  if (engines.empty() || row >= bottom) return row;
  int c = cv.Put(row, col, "Engines", Role::kTitle, end) + 1;
  const int start = c;
  for (const Source& s : engines) {
    Value state = Get(t, s.Get(Field::kState));
    Value freq = Get(t, s.Get(Field::kFreq));
    Value load = Get(t, s.Get(Field::kLoad));  // NVML's codecs: "NVENC 12%@1575MHz"
    std::string value;
    Role role = Role::kText;
    if (state && *state == 0) {
      value = "off";
      role = Role::kDim;
    } else if (load) {
      value = FormatPercent(load) + (freq ? "@" + FormatMhz(freq) : std::string());
      role = Role::kGood;
    } else if (state || freq) {
      value = freq ? FormatMhz(freq) : "on";
      role = Role::kGood;
    } else {
      value = "-";
      role = Role::kDim;
    }
    int item_w = Utf8Width(s.name) + 1 + Utf8Width(value);
    if (c + item_w >= end) {
      ++row;
      c = start;
      if (row >= bottom) return row;
    }
    c = cv.Put(row, c, s.name, Role::kDim, end) + 1;
    c = cv.Put(row, c, value, role, end) + 2;
  }
  return row + 1;
}
}  // namespace edgemon::tui
