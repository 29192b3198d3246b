#include "view_model.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

namespace edgemon::tui {

namespace {

using client::ConnectionState;

// ---------------------------------------------------------------- text utils

// Byte length of the first `n` code points of `s`.
size_t Utf8PrefixBytes(std::string_view s, int n) {
  size_t i = 0;
  int count = 0;
  while (i < s.size() && count < n) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++count;
  }
  return i;
}

std::string Clip(std::string_view s, int n) {
  if (n <= 0) return {};
  return std::string(s.substr(0, Utf8PrefixBytes(s, n)));
}

std::string PadRight(std::string_view s, int n) {
  std::string out = Clip(s, n);
  int w = Utf8Width(out);
  if (w < n) out.append(static_cast<size_t>(n - w), ' ');
  return out;
}

std::string PadLeft(std::string_view s, int n) {
  std::string clipped = Clip(s, n);
  int w = Utf8Width(clipped);
  std::string out;
  if (w < n) out.assign(static_cast<size_t>(n - w), ' ');
  return out + clipped;
}

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// Writes spans clipped to the screen and to a right limit; callers keep
// their regions apart, and RenderText in tests proves it.
class Canvas {
 public:
  Canvas(int width, int height) {
    screen_.width = width;
    screen_.height = height;
  }

  int width() const { return screen_.width; }
  int height() const { return screen_.height; }

  // Puts `text` at (row, col), clipped to columns [col, min(limit, width)).
  // Returns the column after the text.
  int Put(int row, int col, std::string_view text, Role role, int limit = INT_MAX) {
    limit = std::min(limit, screen_.width);
    if (row < 0 || row >= screen_.height || col < 0 || col >= limit || text.empty()) return col;
    std::string clipped = Clip(text, limit - col);
    int w = Utf8Width(clipped);
    if (w == 0) return col;
    screen_.spans.push_back({row, col, std::move(clipped), role});
    return col + w;
  }

  Screen Take() { return std::move(screen_); }

 private:
  Screen screen_;
};

// ------------------------------------------------------------------- glyphs

struct Glyphs {
  bool utf8;
  const char* sep() const { return utf8 ? " \xE2\x94\x82 " : " | "; }  // " │ "
};

// A bar of exactly `width` cells for a fraction in [0, 1].
std::string BarFill(double fraction, int width, bool utf8) {
  if (width <= 0) return {};
  fraction = std::clamp(fraction, 0.0, 1.0);
  std::string out;
  if (!utf8) {
    int n = static_cast<int>(std::lround(fraction * width));
    out.assign(static_cast<size_t>(n), '|');
    return out;
  }
  // Eighths of a cell: U+2588 full block, U+2589..U+258F partial blocks.
  static constexpr std::array<const char*, 8> kPartial = {"",
                                                          "\xE2\x96\x8F",
                                                          "\xE2\x96\x8E",
                                                          "\xE2\x96\x8D",
                                                          "\xE2\x96\x8C",
                                                          "\xE2\x96\x8B",
                                                          "\xE2\x96\x8A",
                                                          "\xE2\x96\x89"};
  int eighths = static_cast<int>(std::lround(fraction * width * 8));
  int full = eighths / 8;
  for (int i = 0; i < full; ++i) out += "\xE2\x96\x88";
  if (full < width && eighths % 8 != 0) out += kPartial[static_cast<size_t>(eighths % 8)];
  return out;
}

Role BarRole(double fraction) {
  if (fraction >= 0.8) return Role::kBarHigh;
  if (fraction >= 0.5) return Role::kBarMid;
  return Role::kBarLow;
}

// "[bar     ]" at (row, col) with `width` cells including the brackets.
void PutBar(Canvas& cv, int row, int col, int width, std::optional<double> fraction,
            const Glyphs& g, std::string_view inside = {}) {
  if (width < 3) return;
  cv.Put(row, col, "[", Role::kDim);
  cv.Put(row, col + width - 1, "]", Role::kDim);
  if (!inside.empty()) {
    cv.Put(row, col + 1, inside, Role::kDim, col + width - 1);
  } else if (fraction) {
    cv.Put(row, col + 1, BarFill(*fraction, width - 2, g.utf8), BarRole(*fraction),
           col + width - 1);
  }
}

// ------------------------------------------------------------ channel lookup

// The channels of one kind grouped by name, in inventory order.
struct Source {
  std::string name;
  std::map<Field, const Channel*> fields;
  const Channel* Get(Field f) const {
    auto it = fields.find(f);
    return it == fields.end() ? nullptr : it->second;
  }
};

std::vector<Source> Sources(const Inventory& inv, Kind kind) {
  std::vector<Source> out;
  std::map<std::string, size_t> index;
  for (const Channel& c : inv.channels) {
    if (c.kind != kind || c.name.empty()) continue;
    auto [it, inserted] = index.emplace(c.name, out.size());
    if (inserted) out.push_back({c.name, {}});
    out[it->second].fields.emplace(c.field, &c);
  }
  return out;
}

Value Get(const Telemetry& t, const Channel* c) {
  return c != nullptr ? t.Get(c->id) : std::nullopt;
}

// Core number of "cpu12"; -1 for the aggregate "cpu" or other names.
int CoreNumber(std::string_view name) {
  if (name.size() <= 3 || name.substr(0, 3) != "cpu") return -1;
  int n = -1;
  auto [p, ec] = std::from_chars(name.data() + 3, name.data() + name.size(), n);
  if (ec != std::errc() || p != name.data() + name.size()) return -1;
  return n;
}

// ---------------------------------------------------------------- sections

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

std::string JoinHeader(const std::vector<std::string>& parts, const Glyphs& g) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += g.sep();
    out += p;
  }
  return out;
}

void DrawHeader(Canvas& cv, const Telemetry& t, const UiState& ui, const Glyphs& g) {
  const int w = cv.width();
  // Row 0: identity left, connection state right.
  std::string state;
  Role state_role = Role::kGood;
  switch (ui.connection) {
    case ConnectionState::kConnecting:
      state = "connecting";
      state_role = Role::kWarn;
      break;
    case ConnectionState::kConnected:
      state = g.utf8 ? "\xE2\x97\x8F connected" : "* connected";  // ●
      break;
    case ConnectionState::kDisconnected:
      state = "DISCONNECTED - reconnecting";
      state_role = Role::kAlert;
      break;
    case ConnectionState::kStopped:
      state = "STOPPED";
      state_role = Role::kAlert;
      break;
  }
  const int state_col = w - Utf8Width(state) - 1;
  cv.Put(0, state_col, state, state_role);
  std::vector<std::string> id = {"edgetop"};
  if (t.has_info()) {
    const BoardInfo& b = t.inventory().board;
    id.push_back(b.hostname.empty() ? "-" : b.hostname);
    id.push_back(b.model.empty() ? "-" : b.model);
  } else {
    id.push_back(ui.target);
  }
  cv.Put(0, 1, JoinHeader(id, g), Role::kHeader, state_col - 1);

  // Row 1: software, power mode, uptime, rates; or why the daemon is gone.
  if (ui.connection == ConnectionState::kDisconnected ||
      ui.connection == ConnectionState::kStopped) {
    std::string why = "daemon at " + ui.target + " unreachable";
    if (!ui.connection_message.empty()) why += ": " + ui.connection_message;
    if (ui.connection == ConnectionState::kDisconnected) why += "; retrying";
    cv.Put(1, 1, why, Role::kAlert, w - 1);
  } else if (t.has_info()) {
    const client::DeviceInfo& info = t.info();
    const BoardInfo& b = info.inventory.board;
    std::vector<std::string> parts;
    if (!b.l4t.empty()) {
      parts.push_back("L4T " + b.l4t + (b.jetpack.empty() ? "" : " JetPack " + b.jetpack));
    } else if (!b.kernel.empty()) {
      parts.push_back("Linux " + b.kernel);
    }
    // nvpmodel: the live mode channel wins over the discovery-time name.
    std::string mode = b.nvpmodel;
    if (const Channel* c = info.inventory.Find(Kind::kBoard, "nvpmodel", Field::kMode)) {
      if (Value v = t.Get(c->id)) {
        mode = std::to_string(*v);
        for (const auto& [id_, name] : b.nvpmodel_modes) {
          if (id_ == *v) mode = name;
        }
      }
    }
    if (!mode.empty()) parts.push_back("nvpmodel " + mode);
    // Locked clocks (jetson_clocks, edgemon control clocks lock): every CPU
    // with both policy limits read runs at min == max. Shown only when so.
    int limits = 0;
    bool pinned = true;
    for (const Channel& c : info.inventory.channels) {
      if (c.kind != Kind::kCpu || c.field != Field::kFreqMin) continue;
      const Channel* max = info.inventory.Find(Kind::kCpu, c.name, Field::kFreqMax);
      Value lo = t.Get(c.id);
      Value hi = max ? t.Get(max->id) : Value();
      if (!lo || !hi) continue;
      ++limits;
      pinned = pinned && *lo == *hi;
    }
    if (limits > 0 && pinned) parts.push_back("clocks locked");
    if (t.latest() && t.latest()->boottime_ns > 0) {
      parts.push_back("up " + FormatDuration(t.latest()->boottime_ns / 1'000'000'000));
    } else {
      parts.push_back("up -");
    }
    std::string rate =
        "daemon " + (info.interval_ms > 0 ? std::to_string(info.interval_ms) + " ms" : "-");
    if (info.energy_rate_hz > 0) rate += "/" + std::to_string(info.energy_rate_hz) + " Hz";
    parts.push_back(rate);
    std::string line;
    for (const std::string& p : parts) line += (line.empty() ? "" : "  ") + p;
    cv.Put(1, 1, line, Role::kHeader, w - 1);
  } else {
    cv.Put(1, 1, "waiting for " + ui.target, Role::kDim, w - 1);
  }

  // Row 2: page tabs left; pause and key hints right.
  static constexpr std::array<const char*, kPageCount> kTabs = {"1 Overview", "2 Processes",
                                                                "3 Power"};
  const std::string keys = "every " + Printf("%g", ui.interval_ms / 1000.0) + " s  h help  q quit";
  std::string right = keys;
  if (ui.paused) right = "PAUSED  " + right;
  const int right_col = w - Utf8Width(right) - 1;
  int col = 1;
  for (int i = 0; i < kPageCount; ++i) {
    bool active = !ui.help && static_cast<int>(ui.page) == i;
    std::string tab = std::string(" ") + kTabs[static_cast<size_t>(i)] + " ";
    col = cv.Put(2, col, tab, active ? Role::kTabActive : Role::kTab, right_col - 1) + 1;
  }
  if (ui.paused) {
    cv.Put(2, right_col, "PAUSED", Role::kAlert);
    cv.Put(2, right_col + 8, keys, Role::kDim);
  } else {
    cv.Put(2, right_col, right, Role::kDim);
  }
}

// One meter cell: "LABEL [bar      ] text", `width` cells from `col`.
void PutMeter(Canvas& cv, int row, int col, int width, std::string_view label, int label_width,
              std::optional<double> fraction, std::string_view text, int text_width,
              const Glyphs& g, Role label_role = Role::kTitle, std::string_view inside = {}) {
  const int end = col + width - 1;  // one blank column between cells
  cv.Put(row, col, label, label_role, col + label_width);
  const int bar_col = col + label_width + 1;
  const int bar_width = end - bar_col - text_width - 1;
  if (bar_width >= 3) {
    PutBar(cv, row, bar_col, bar_width, fraction, g, inside);
    cv.Put(row, end - text_width, PadLeft(text, text_width), Role::kText, end);
  } else {
    cv.Put(row, bar_col, text, Role::kText, end);
  }
}

std::optional<double> Fraction(Value permille) {
  if (!permille) return std::nullopt;
  return static_cast<double>(*permille) / 1000.0;
}

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

// Rails in tree order: input rails, top-level rails, each followed by its
// sub-rails (depth 1, 2, ...).
struct RailRow {
  const Channel* power;
  int depth;
};

std::vector<RailRow> RailTree(const Inventory& inv) {
  std::vector<const Channel*> rails;
  for (const Channel& c : inv.channels) {
    if (c.kind == Kind::kRail && c.field == Field::kPower && !c.name.empty()) rails.push_back(&c);
  }
  std::vector<RailRow> out;
  std::vector<bool> done(rails.size(), false);
  auto add = [&](auto&& self, size_t i, int depth) -> void {
    if (done[i]) return;
    done[i] = true;
    out.push_back({rails[i], depth});
    for (size_t j = 0; j < rails.size(); ++j) {
      if (!done[j] && rails[j]->parent == rails[i]->name) self(self, j, depth + 1);
    }
  };
  for (size_t i = 0; i < rails.size(); ++i) {
    if (rails[i]->Has(kFlagInputRail)) add(add, i, 0);
  }
  auto known = [&](const std::string& parent) {
    return std::any_of(rails.begin(), rails.end(),
                       [&](const Channel* c) { return c->name == parent; });
  };
  for (size_t i = 0; i < rails.size(); ++i) {
    if (rails[i]->parent.empty() || !known(rails[i]->parent)) add(add, i, 0);
  }
  for (size_t i = 0; i < rails.size(); ++i) add(add, i, 0);  // cycles, if any
  return out;
}

// One cell per history point (newest on the right), scaled between the
// shown minimum and maximum so that a steady load still shows its ripple.
std::string Sparkline(const std::deque<PowerPoint>& history, int width, double* min_mw,
                      double* max_mw, int64_t* span_ns, bool utf8) {
  std::string out;
  *min_mw = 0;
  *max_mw = 0;
  *span_ns = 0;
  if (width <= 0 || history.empty()) return out;
  const size_t n = std::min(history.size(), static_cast<size_t>(width));
  const size_t first = history.size() - n;
  bool any = false;
  for (size_t i = first; i < history.size(); ++i) {
    if (!history[i].mw) continue;
    *min_mw = any ? std::min(*min_mw, *history[i].mw) : *history[i].mw;
    *max_mw = any ? std::max(*max_mw, *history[i].mw) : *history[i].mw;
    any = true;
  }
  *span_ns = history.back().realtime_ns - history[first].realtime_ns;
  const double range = *max_mw - *min_mw;
  double lo = *min_mw - 0.1 * range;
  double hi = *max_mw;
  if (range < 0.05 * std::max(*max_mw, 1.0)) {  // steady: draw it mid-height
    lo = *min_mw - 0.05 * std::max(*max_mw, 100.0);
    hi = *max_mw + 0.05 * std::max(*max_mw, 100.0);
  }
  static constexpr std::array<const char*, 8> kLevels = {
      "\xE2\x96\x81", "\xE2\x96\x82", "\xE2\x96\x83", "\xE2\x96\x84",
      "\xE2\x96\x85", "\xE2\x96\x86", "\xE2\x96\x87", "\xE2\x96\x88"};
  static constexpr std::array<char, 8> kAscii = {'_', '.', ',', '-', '=', '+', '*', '#'};
  for (size_t i = first; i < history.size(); ++i) {
    if (!history[i].mw) {
      out += ' ';
      continue;
    }
    int level = static_cast<int>(std::lround((*history[i].mw - lo) / (hi - lo) * 7.0));
    level = std::clamp(level, 0, 7);
    if (utf8) {
      out += kLevels[static_cast<size_t>(level)];
    } else {
      out += kAscii[static_cast<size_t>(level)];
    }
  }
  return out;
}

// "total 8.93 W (sum of 4 rails)" + sparkline + energy, in [col, end).
int DrawPowerSummary(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
                     const Glyphs& g) {
  if (row >= bottom || t.total().empty()) return row;
  std::optional<double> now;
  if (t.latest()) now = t.TotalMw(*t.latest());
  int c = cv.Put(row, col, "Total ", Role::kTitle, end);
  c = cv.Put(row, c, FormatWatts(now) + " W", Role::kText, end);
  c = cv.Put(row, c + 1, "(" + t.total().Label() + ")", Role::kDim, end);
  ++row;
  if (row < bottom) {
    double min_mw = 0;
    double max_mw = 0;
    int64_t span_ns = 0;
    const int label_w = 17;  // "99.9-99.9 W 600s"
    int spark_w = end - col - label_w - 1;
    std::string spark = Sparkline(t.history(), spark_w, &min_mw, &max_mw, &span_ns, g.utf8);
    cv.Put(row, col, spark, Role::kSpark, col + spark_w);
    std::string label = spark.empty() ? "-"
                                      : FormatWatts(min_mw) + "-" + FormatWatts(max_mw) + " W " +
                                            std::to_string(span_ns / 1'000'000'000) + "s";
    cv.Put(row, col + spark_w + 1, label, Role::kDim, end);
    ++row;
  }
  if (row < bottom) {
    int cc = cv.Put(row, col, "Energy ", Role::kTitle, end);
    cc = cv.Put(row, cc, FormatEnergy(t.energy_mj()), Role::kText, end);
    cv.Put(row, cc + 1, "since edgetop started", Role::kDim, end);
    ++row;
  }
  return row;
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

int DrawFans(Canvas& cv, const Telemetry& t, int row, int bottom, int col, int end,
             const Glyphs& g) {
  (void)g;
  for (const Source& s : Sources(t.inventory(), Kind::kFan)) {
    if (row >= bottom) break;
    int c = cv.Put(row, col, "Fan ", Role::kTitle, end);
    c = cv.Put(row, c, s.name, Role::kDim, end);
    std::string text;
    if (s.Get(Field::kDuty) != nullptr) text += " " + FormatPercent(Get(t, s.Get(Field::kDuty)));
    if (s.Get(Field::kSpeed) != nullptr) {
      Value rpm = Get(t, s.Get(Field::kSpeed));
      text += " " + (rpm ? std::to_string(*rpm) : std::string("-")) + " rpm";
    }
    cv.Put(row, c, text, Role::kText, end);
    ++row;
  }
  return row;
}

// Engines as "NAME 729MHz" / "NAME off" items flowing across rows.
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
    std::string value;
    Role role = Role::kText;
    if (state && *state == 0) {
      value = "off";
      role = Role::kDim;
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

// ---------------------------------------------------------------- processes

std::vector<client::Process> SortedProcesses(const Telemetry& t, const UiState& ui) {
  if (!t.processes()) return {};
  std::vector<client::Process> procs = t.processes()->processes;
  auto key_less = [&](const client::Process& a, const client::Process& b) {
    switch (ui.sort) {
      case SortKey::kCpu:
        return a.cpu_permille < b.cpu_permille;
      case SortKey::kMemory:
        return a.rss_kib < b.rss_kib;
      case SortKey::kGpuMemory:
        return a.gpu_mem_kib.value_or(0) < b.gpu_mem_kib.value_or(0) ||
               (!a.gpu_mem_kib && b.gpu_mem_kib);
      case SortKey::kPid:
        return a.pid < b.pid;
      case SortKey::kUser:
        return a.user < b.user;
    }
    return false;
  };
  std::stable_sort(procs.begin(), procs.end(), [&](const auto& a, const auto& b) {
    if (key_less(a, b)) return ui.sort_ascending;
    if (key_less(b, a)) return !ui.sort_ascending;
    return a.pid < b.pid;
  });
  return procs;
}

int DrawProcesses(Canvas& cv, const Telemetry& t, const UiState& ui, int row, int bottom,
                  bool scroll, const Glyphs& g) {
  if (row >= bottom) return row;
  const int w = cv.width();
  std::vector<client::Process> procs = SortedProcesses(t, ui);
  const std::string gpu_unavailable =
      t.processes() ? t.processes()->gpu_mem_unavailable : std::string();
  bool gpu = !gpu_unavailable.empty() ||
             std::any_of(procs.begin(), procs.end(),
                         [](const client::Process& p) { return p.gpu_mem_kib.has_value(); });
  struct Col {
    const char* title;
    int width;
    SortKey key;
    bool left;
  };
  std::vector<Col> cols = {{"PID", 8, SortKey::kPid, false},
                           {"USER", 10, SortKey::kUser, true},
                           {"CPU%", 7, SortKey::kCpu, false},
                           {"MEM", 7, SortKey::kMemory, false}};
  if (gpu) cols.push_back({"GPU", 7, SortKey::kGpuMemory, false});
  int c = 1;
  for (const Col& col : cols) {
    std::string title = col.title;
    if (col.key == ui.sort) {
      if (g.utf8) {
        title += ui.sort_ascending ? "\xE2\x96\xB2" : "\xE2\x96\xBC";  // ▲ ▼
      } else {
        title += ui.sort_ascending ? "^" : "v";
      }
    }
    std::string cell = col.left ? " " + PadRight(title, col.width - 1) : PadLeft(title, col.width);
    c = cv.Put(row, c, cell, col.key == ui.sort ? Role::kSelected : Role::kTitle, w - 1);
  }
  cv.Put(row, c + 1, "COMMAND", Role::kTitle, w - 1);
  ++row;
  if (!t.processes()) {
    cv.Put(row, 1,
           t.processes_error().empty() ? "(no process list from the daemon yet)"
                                       : "process list unavailable: " + t.processes_error(),
           Role::kDim, w - 1);
    return row + 1;
  }
  if (!gpu_unavailable.empty() && row < bottom) {
    cv.Put(row++, 1, "GPU memory unavailable: " + gpu_unavailable, Role::kWarn, w - 1);
  }
  int first =
      scroll ? std::clamp(ui.process_scroll, 0, std::max(0, static_cast<int>(procs.size()) - 1))
             : 0;
  for (size_t i = static_cast<size_t>(first); i < procs.size() && row < bottom; ++i, ++row) {
    const client::Process& p = procs[i];
    std::vector<std::string> cells = {
        std::to_string(p.pid), p.user,
        p.cpu_permille ? Printf("%.1f", static_cast<double>(*p.cpu_permille) / 10.0)
                       : std::string("-"),
        FormatKib(static_cast<int64_t>(p.rss_kib))};
    if (gpu) {
      cells.push_back(p.gpu_mem_kib ? FormatKib(static_cast<int64_t>(*p.gpu_mem_kib))
                                    : std::string("-"));
    }
    int cc = 1;
    for (size_t k = 0; k < cols.size(); ++k) {
      std::string cell = cols[k].left ? " " + PadRight(cells[k], cols[k].width - 1)
                                      : PadLeft(cells[k], cols[k].width);
      cc = cv.Put(row, cc, cell, cells[k] == "-" ? Role::kDim : Role::kText, w - 1);
    }
    cv.Put(row, cc + 1, p.command.empty() ? p.name : p.command, Role::kText, w - 1);
  }
  return row;
}

// ------------------------------------------------------------------- pages

void DrawOverview(Canvas& cv, const Telemetry& t, const UiState& ui, const Glyphs& g) {
  const int w = cv.width();
  const int bottom = cv.height();
  int row = 3;
  row = DrawMeters(cv, t, row, bottom, g);
  row = DrawMemory(cv, t, row, bottom, g);
  // Lower block: power on the left, temperatures and fans on the right.
  const int half = w / 2;
  int left = DrawRails(cv, t, row, bottom, 1, half - 1, false, g);
  left = DrawPowerSummary(cv, t, left, bottom, 1, half - 1, g);
  int right = DrawTemps(cv, t, row, bottom, half + 1, w - 1, false, g);
  right = DrawFans(cv, t, right, bottom, half + 1, w - 1, g);
  row = std::max(left, right);
  row = DrawEngines(cv, t, row, bottom, 1, w - 1, g);
  if (bottom - row >= 2) DrawProcesses(cv, t, ui, row, bottom, false, g);
}

void DrawPowerPage(Canvas& cv, const Telemetry& t, const Glyphs& g) {
  const int w = cv.width();
  const int bottom = cv.height();
  int row = 3;
  if (RailTree(t.inventory()).empty()) {
    cv.Put(row++, 1,
           "No power rails on this board: edgemond found no INA3221, RAPL, power_supply or NVML "
           "power sensor",
           Role::kDim, w - 1);
  }
  row = DrawRails(cv, t, row, bottom, 1, std::min(w - 1, 80), true, g);
  if (row < bottom) ++row;
  row = DrawPowerSummary(cv, t, row, bottom, 1, w - 1, g);
  if (row < bottom) ++row;
  row = DrawTemps(cv, t, row, bottom, 1, w - 1, true, g);
  row = DrawFans(cv, t, row, bottom, 1, w - 1, g);
  DrawEngines(cv, t, row, bottom, 1, w - 1, g);
}

void DrawHelp(Canvas& cv, const UiState& ui) {
  static constexpr std::array<std::pair<const char*, const char*>, 14> kKeys = {{
      {"1 2 3, Tab", "pages: Overview, Processes, Power"},
      {"h ?", "this help (any key closes it)"},
      {"q", "quit"},
      {"space p", "pause or resume the display"},
      {"+ -", "longer or shorter refresh interval"},
      {"c m g", "sort processes by CPU, memory, GPU memory"},
      {"n u", "sort processes by PID, user"},
      {"s", "next sort key"},
      {"r", "reverse the sort order"},
      {"Up Down PgUp PgDn", "scroll the process list"},
      {"", ""},
      {"Rails", "watts now, average and peak since edgetop started"},
      {"Total", "the input rail, else the sum of top-level rails"},
      {"-", "not reported by the board (never shown as 0)"},
  }};
  int row = 3;
  cv.Put(row++, 1, "edgetop keys", Role::kTitle);
  for (const auto& [key, what] : kKeys) {
    if (row >= cv.height()) break;
    cv.Put(row, 3, key, Role::kSelected, 22);
    cv.Put(row, 23, what, Role::kText, cv.width() - 1);
    ++row;
  }
  if (row + 1 < cv.height()) {
    cv.Put(row + 1, 1,
           "daemon " + ui.target + ", refresh " + std::to_string(ui.interval_ms) + " ms",
           Role::kDim, cv.width() - 1);
  }
}

}  // namespace

// ---------------------------------------------------------------- public API

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

int Utf8Width(std::string_view s) {
  int n = 0;
  for (char ch : s) {
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string FormatWatts(std::optional<double> mw) {
  if (!mw) return "-";
  double w = *mw / 1000.0;
  if (std::fabs(w) >= 100) return Printf("%.0f", w);
  if (std::fabs(w) >= 10) return Printf("%.1f", w);
  return Printf("%.2f", w);
}

std::string FormatTempC(std::optional<int64_t> mc, bool utf8) {
  if (!mc) return "-";
  return Printf("%.1f", static_cast<double>(*mc) / 1000.0) + (utf8 ? "\xC2\xB0"
                                                                     "C"
                                                                   : "C");
}

std::string FormatMhz(std::optional<int64_t> khz) {
  if (!khz) return "-";
  return std::to_string((*khz + 500) / 1000) + "MHz";
}

std::string FormatPercent(std::optional<int64_t> permille) {
  if (!permille) return "-";
  return std::to_string((*permille + 5) / 10) + "%";
}

std::string FormatKib(std::optional<int64_t> kib) {
  if (!kib) return "-";
  double v = static_cast<double>(*kib);
  if (v >= 1024.0 * 1024.0 * 1024.0) return Printf("%.1fT", v / (1024.0 * 1024.0 * 1024.0));
  if (v >= 1024.0 * 1024.0) return Printf("%.1fG", v / (1024.0 * 1024.0));
  if (v >= 1024.0) return Printf("%.0fM", v / 1024.0);
  return std::to_string(*kib) + "K";
}

std::string FormatDuration(int64_t seconds) {
  if (seconds < 0) return "-";
  char buf[48];
  int64_t d = seconds / 86400;
  int64_t h = seconds / 3600 % 24;
  int64_t m = seconds / 60 % 60;
  int64_t s = seconds % 60;
  if (d > 0) {
    std::snprintf(buf, sizeof(buf), "%lldd %02lld:%02lld", static_cast<long long>(d),
                  static_cast<long long>(h), static_cast<long long>(m));
  } else {
    std::snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  }
  return buf;
}

std::string FormatEnergy(std::optional<double> mj) {
  if (!mj) return "-";
  double j = *mj / 1000.0;
  if (j >= 3600.0) return Printf("%.2f Wh", j / 3600.0);
  return Printf("%.1f J", j);
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

Screen BuildScreen(const Telemetry& t, const UiState& ui) {
  Canvas cv(std::max(ui.width, 1), std::max(ui.height, 1));
  const Glyphs g{ui.utf8};
  if (ui.width < kMinWidth || ui.height < kMinHeight) {
    cv.Put(0, 0, "edgetop needs " + std::to_string(kMinWidth) + "x" + std::to_string(kMinHeight),
           Role::kAlert);
    cv.Put(1, 0, "now " + std::to_string(ui.width) + "x" + std::to_string(ui.height), Role::kText);
    cv.Put(2, 0, "q quits", Role::kDim);
    return cv.Take();
  }
  DrawHeader(cv, t, ui, g);
  if (ui.help) {
    DrawHelp(cv, ui);
  } else if (!t.has_info()) {
    cv.Put(4, 1, "no data yet from " + ui.target, Role::kDim, cv.width() - 1);
  } else {
    switch (ui.page) {
      case Page::kOverview:
        DrawOverview(cv, t, ui, g);
        break;
      case Page::kProcesses:
        DrawProcesses(cv, t, ui, 3, cv.height(), true, g);
        break;
      case Page::kPower:
        DrawPowerPage(cv, t, g);
        break;
    }
  }
  return cv.Take();
}

TextRender RenderText(const Screen& screen) {
  TextRender out;
  const int w = std::max(screen.width, 0);
  const int h = std::max(screen.height, 0);
  std::vector<std::vector<std::string>> cells(
      static_cast<size_t>(h), std::vector<std::string>(static_cast<size_t>(w), " "));
  std::vector<std::vector<bool>> used(static_cast<size_t>(h),
                                      std::vector<bool>(static_cast<size_t>(w), false));
  for (const Span& s : screen.spans) {
    int col = s.col;
    size_t i = 0;
    while (i < s.text.size()) {
      size_t j = i + 1;
      while (j < s.text.size() && (static_cast<unsigned char>(s.text[j]) & 0xC0) == 0x80) ++j;
      if (s.row < 0 || s.row >= h || col < 0 || col >= w) {
        ++out.out_of_bounds;
      } else {
        auto r = static_cast<size_t>(s.row);
        auto c = static_cast<size_t>(col);
        if (used[r][c]) ++out.overlaps;
        used[r][c] = true;
        cells[r][c] = s.text.substr(i, j - i);
      }
      ++col;
      i = j;
    }
  }
  for (const auto& row : cells) {
    std::string line;
    for (const std::string& c : row) line += c;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.lines.push_back(std::move(line));
  }
  return out;
}

}  // namespace edgemon::tui
