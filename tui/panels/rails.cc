#include "tui/panels/panels.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/rail_tree.h"
#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

std::vector<RailRow> RailTree(const Inventory& inv) {
  std::vector<const Channel*> rails;
  std::vector<RailLink> links;
  for (const Channel& c : inv.channels) {
    if (c.kind == Kind::kRail && c.field == Field::kPower && !c.name.empty()) {
      rails.push_back(&c);
      links.push_back({c.name, c.parent, c.Has(kFlagInputRail)});
    }
  }
  std::vector<RailRow> out;
  WalkRailTree(links, [&](size_t i, int depth) { out.push_back({rails[i], depth}); });
  return out;
}

// The rail table in [col, end): name, then now/avg/peak in W (and V, A when
// `detail`). Returns the next row.
int DrawRails(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end, bool detail,
              const Glyphs& g) {
  std::vector<RailRow> rails = RailTree(t.inventory());
  if (rails.empty() || row >= bottom) return row;
  (void)g;
  const int num_w = 7;
  const int ncols = detail ? 5 : 3;
  const int name_w = end - col - ncols * num_w;
  int c = cv.Put(row, col, PadRight("Rail (W)", name_w), Role::kTitle, end);
  std::vector<std::string> heads = {"now", "avg", "peak"};
  if (detail) heads = {"V", "A", "now", "avg", "peak"};
  for (const std::string& h : heads) c = cv.Put(row, c, PadLeft(h, num_w), Role::kTitle, end);
  ++row;
  for (const RailRow& r : rails) {
    if (row >= bottom) break;
    const Channel& p = *r.power;
    // A sub-rail named "parent/x" (RAPL) shows as "x" under its parent.
    std::string_view short_name = p.name;
    if (r.depth > 0 && short_name.size() > p.parent.size() + 1 &&
        short_name.substr(0, p.parent.size()) == p.parent && short_name[p.parent.size()] == '/') {
      short_name.remove_prefix(p.parent.size() + 1);
    }
    std::string name = std::string(static_cast<size_t>(2 * r.depth), ' ') + std::string(short_name);
    Role role = p.Has(kFlagInputRail) ? Role::kTitle : Role::kText;
    c = cv.Put(row, col, PadRight(name, name_w - 1), role, end) + 1;
    std::vector<std::string> cells;
    if (detail) {
      const Channel* v = t.inventory().Find(Kind::kRail, p.name, Field::kVoltage);
      const Channel* a = t.inventory().Find(Kind::kRail, p.name, Field::kCurrent);
      Value mv = Get(t, v);
      Value ma = Get(t, a);
      cells.push_back(mv ? Printf("%.2f", static_cast<double>(*mv) / 1000.0) : "-");
      cells.push_back(ma ? Printf("%.3f", static_cast<double>(*ma) / 1000.0) : "-");
    }
    Value now = t.Get(p.id);
    const RailStats* s = p.id < t.rail_stats().size() ? &t.rail_stats()[p.id] : nullptr;
    cells.push_back(
        FormatWatts(now ? std::optional<double>(static_cast<double>(*now)) : std::nullopt));
    cells.push_back(FormatWatts(s != nullptr ? s->avg_mw() : std::nullopt));
    cells.push_back(FormatWatts(s != nullptr && s->peak_mw
                                    ? std::optional<double>(static_cast<double>(*s->peak_mw))
                                    : std::nullopt));
    for (const std::string& cell : cells) {
      c = cv.Put(row, c, PadLeft(cell, num_w), cell == "-" ? Role::kDim : Role::kText, end);
    }
    ++row;
  }
  return row;
}
}  // namespace edgemon::tui
