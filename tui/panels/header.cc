#include "tui/panels/panels.h"

#include <array>
#include <string>
#include <vector>

#include "edgemon/diagnostics.h"
#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

namespace {

using client::ConnectionState;

std::string JoinHeader(const std::vector<std::string>& parts, const Glyphs& g) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += g.sep();
    out += p;
  }
  return out;
}

}  // namespace

std::vector<std::string> ConnectionReasonLines(const UiState& ui, int width) {
  if (ui.connection != ConnectionState::kDisconnected &&
      ui.connection != ConnectionState::kStopped) {
    return {};
  }
  std::string why = "daemon at " + ui.target + " unreachable";
  if (!ui.connection_message.empty()) why += ": " + ui.connection_message;
  if (ui.connection == ConnectionState::kDisconnected) why += "; retrying";
  // Words in order, each line as full as fits; a word wider than a line is cut.
  std::vector<std::string> lines(1);
  width = std::max(width, 1);
  size_t pos = 0;
  while (pos < why.size()) {
    size_t end = why.find(' ', pos);
    if (end == std::string::npos) end = why.size();
    std::string word = why.substr(pos, end - pos);
    pos = end + 1;
    while (Utf8Width(word) > width) {
      if (!lines.back().empty()) lines.emplace_back();
      lines.back() = Clip(word, width);
      word = word.substr(lines.back().size());
      lines.emplace_back();
    }
    if (word.empty()) continue;
    const int have = Utf8Width(lines.back());
    if (have > 0 && have + 1 + Utf8Width(word) > width) lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + word;
  }
  if (lines.back().empty() && lines.size() > 1) lines.pop_back();
  return lines;
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
    cv.Put(1, 1, ConnectionReasonLines(ui, w - 2).front(), Role::kAlert, w - 1);
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
    if (t.latest()) {
      // What the Power page's diagnostics explain: said here on every page.
      if (!PowerModeCaps(info.inventory, *t.latest()).empty()) parts.push_back("capped");
      for (const Channel* c : ActiveEvents(info.inventory, *t.latest())) {
        parts.push_back("! " + c->name);
      }
    }
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
}  // namespace edgemon::tui
