#include "tui/panels/panels.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

namespace {

// The colour of a temperature: from the zone's passive/hot/critical trip
// points (active trips only start fans), else from the channel's max/crit.
Role TempRole(const Channel& c, std::optional<int64_t> mc) {
  if (!mc) return Role::kDim;
  std::optional<int64_t> hot;
  std::optional<int64_t> crit = c.crit;
  for (const TripPoint& trip : c.trips) {
    if (trip.type == "critical") {
      crit = std::min(crit.value_or(trip.temp_mc), trip.temp_mc);
    } else if (trip.type == "hot" || trip.type == "passive") {
      hot = std::min(hot.value_or(trip.temp_mc), trip.temp_mc);
    }
  }
  if (!hot) hot = c.max;
  if (!hot && !crit) return Role::kText;
  if (crit && *mc >= *crit) return Role::kCrit;
  if (hot && *mc >= *hot) return Role::kHot;
  int64_t first = hot ? *hot : *crit;
  if (*mc >= first - 15'000) return Role::kWarn;
  return Role::kGood;
}

// "coretemp/Core 0" shows as "Core 0" when no other zone ends the same way.
std::string ShortTempName(const std::string& name, const std::vector<const Channel*>& temps) {
  size_t slash = name.find('/');
  if (slash == std::string::npos || slash + 1 >= name.size()) return name;
  std::string_view tail = std::string_view(name).substr(slash + 1);
  int same = 0;
  for (const Channel* c : temps) {
    std::string_view n = c->name;
    size_t s = n.find('/');
    if ((s != std::string_view::npos ? n.substr(s + 1) : n) == tail) ++same;
  }
  return same == 1 ? std::string(tail) : name;
}

}  // namespace

// Temperatures as "name value" items in sub-columns of [col, end).
int DrawTemps(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end, bool trips,
              const Glyphs& g) {
  std::vector<const Channel*> temps;
  for (const Channel& c : t.inventory().channels) {
    if (c.kind == Kind::kThermal && c.field == Field::kTemp && !c.name.empty()) temps.push_back(&c);
  }
  if (temps.empty() || row >= bottom) return row;
  cv.Put(row, col, "Temperature", Role::kTitle, end);
  ++row;
  // Values take the width of the widest one; names get the rest of each item
  // (the longest name in full on the Power page, where items have a line each).
  int value_w = 6;
  int longest = 0;
  for (const Channel* c : temps) {
    Value v = t.Get(c->id);
    std::string value = FormatTempC(v, g.utf8);
    if (c->Has(kFlagConstant) && v) value += "*";
    value_w = std::max(value_w, Utf8Width(value));
    longest = std::max(longest, Utf8Width(ShortTempName(c->name, temps)));
  }
  // As many items a row as fit at 19 cells; fewer and wider, so that the
  // longest name fits, while that takes at most max(6, that many) rows.
  const int avail = end - col + 1;
  const int n = static_cast<int>(temps.size());
  const int dense = std::max(1, avail / 19);
  const int allowed_rows = std::max(6, (n + dense - 1) / dense);
  const int fit = std::max(1, avail / (longest + value_w + 2));
  const int per_row = trips ? 1 : std::clamp(fit, (n + allowed_rows - 1) / allowed_rows, dense);
  const int item_w = trips ? end - col : avail / per_row;
  const int rows = (static_cast<int>(temps.size()) + per_row - 1) / per_row;
  for (size_t i = 0; i < temps.size(); ++i) {
    int r = row + static_cast<int>(i) % rows;
    int k = static_cast<int>(i) / rows;
    if (r >= bottom) continue;
    const Channel& c = *temps[i];
    Value v = t.Get(c.id);
    int x = col + k * item_w;
    int item_end = std::min(end, x + item_w - 1);
    int name_w =
        trips ? std::clamp(longest + 1, 16, std::max(16, item_w / 2)) : item_w - 1 - value_w;
    cv.Put(r, x, ShortTempName(c.name, temps), Role::kDim, x + name_w - 1);
    std::string value = FormatTempC(v, g.utf8);
    if (c.Has(kFlagConstant) && v) value += "*";
    int after = cv.Put(r, x + name_w, PadLeft(value, value_w), TempRole(c, v), item_end);
    if (trips) {
      std::string tt;
      for (const TripPoint& tp : c.trips) {
        if (tp.type == "active") continue;
        tt += " " + tp.type + " " + FormatTempC(tp.temp_mc, g.utf8);
      }
      if (c.Has(kFlagConstant)) tt += " (fixed value)";
      cv.Put(r, after, tt, Role::kDim, item_end);
    }
  }
  return std::min(bottom, row + rows);
}
}  // namespace edgemon::tui
