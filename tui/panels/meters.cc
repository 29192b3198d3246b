#include "tui/panels/panels.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

namespace {

// Core number of "cpu12"; -1 for the aggregate "cpu" or other names.
int CoreNumber(std::string_view name) {
  if (name.size() <= 3 || name.substr(0, 3) != "cpu") return -1;
  int n = -1;
  auto [p, ec] = std::from_chars(name.data() + 3, name.data() + name.size(), n);
  if (ec != std::errc() || p != name.data() + name.size()) return -1;
  return n;
}

std::optional<double> Fraction(Value permille) {
  if (!permille) return std::nullopt;
  return static_cast<double>(*permille) / 1000.0;
}

}  // namespace

// CPU cores, GPUs and EMC as meter cells in a grid. Returns the next row.
int DrawMeters(Canvas& cv, const Telemetry& t, int row, int bottom, const Glyphs& g) {
  const Inventory& inv = t.inventory();
  struct Cell {
    std::string label;
    std::optional<double> fraction;
    std::string text;
    bool off = false;
  };
  std::vector<std::pair<int, Cell>> cores;
  for (const Source& s : Sources(inv, Kind::kCpu)) {
    int n = CoreNumber(s.name);
    if (n < 0) continue;
    Cell c;
    c.label = "CPU" + std::to_string(n);
    Value online = Get(t, s.Get(Field::kOnline));
    if (online && *online == 0) {
      c.off = true;
      c.text = "off        -";
    } else {
      Value load = Get(t, s.Get(Field::kLoad));
      c.fraction = Fraction(load);
      c.text = PadLeft(FormatPercent(load), 4) + " " +
               PadLeft(FormatMhz(Get(t, s.Get(Field::kFreq))), 7);
    }
    cores.emplace_back(n, std::move(c));
  }
  std::stable_sort(cores.begin(), cores.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Cell> cells;
  for (auto& [n, c] : cores) cells.push_back(std::move(c));
  for (Kind kind : {Kind::kGpu, Kind::kEmc}) {
    for (const Source& s : Sources(inv, kind)) {
      Value load = Get(t, s.Get(Field::kLoad));
      Value freq = Get(t, s.Get(Field::kFreq));
      if (s.Get(Field::kLoad) == nullptr && s.Get(Field::kFreq) == nullptr) continue;
      Cell c;
      c.label = kind == Kind::kEmc ? "EMC" : (s.name == "gpu" ? "GPU" : s.name);
      c.fraction = Fraction(load);
      c.text = PadLeft(FormatPercent(load), 4) + " " + PadLeft(FormatMhz(freq), 7);
      cells.push_back(std::move(c));
    }
  }
  if (cells.empty()) return row;
  const int w = cv.width();
  const int ncols = std::clamp(w / 40, 1, 4);
  const int cell_w = w / ncols;
  int label_w = 3;
  for (const Cell& c : cells) label_w = std::max(label_w, std::min(8, Utf8Width(c.label)));
  const int rows = (static_cast<int>(cells.size()) + ncols - 1) / ncols;
  // Column-major, like a list read down then across.
  for (size_t i = 0; i < cells.size(); ++i) {
    int r = row + static_cast<int>(i) % rows;
    int c = static_cast<int>(i) / rows;
    if (r >= bottom) continue;
    const Cell& cell = cells[i];
    PutMeter(cv, r, 1 + c * cell_w, cell_w - (c == ncols - 1 ? 1 : 0), cell.label, label_w,
             cell.fraction, cell.text, 12, g, cell.off ? Role::kDim : Role::kTitle,
             cell.off ? "off" : "");
  }
  return std::min(bottom, row + rows);
}
}  // namespace edgemon::tui
