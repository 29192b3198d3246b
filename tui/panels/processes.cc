#include "tui/panels/panels.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "tui/format.h"
#include "tui/panels/channels.h"

namespace edgemon::tui {

namespace {

// KiB as the daemon sends them (unsigned, optional): "-" when none.
std::string Kib(const std::optional<uint64_t>& kib) {
  return FormatKib(kib ? std::optional<int64_t>(static_cast<int64_t>(*kib)) : std::nullopt);
}

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

}  // namespace

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
    std::string cell = col.left ? PadRight(" " + title, col.width) : PadLeft(title, col.width);
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
  // Why GPU memory per process is missing: a quiet note on the Processes page
  // (the column shows dashes); the Overview keeps its rows for processes.
  if (!gpu_unavailable.empty() && scroll && row < bottom) {
    cv.Put(row++, 1, "GPU memory unavailable: " + gpu_unavailable, Role::kDim, w - 1);
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
        Kib(p.rss_kib)};
    if (gpu) cells.push_back(Kib(p.gpu_mem_kib));
    int cc = 1;
    for (size_t k = 0; k < cols.size(); ++k) {
      std::string cell =
          cols[k].left ? PadRight(" " + cells[k], cols[k].width) : PadLeft(cells[k], cols[k].width);
      cc = cv.Put(row, cc, cell, cells[k] == "-" ? Role::kDim : Role::kText, w - 1);
    }
    cv.Put(row, cc + 1, p.command.empty() ? p.name : p.command, Role::kText, w - 1);
  }
  return row;
}
}  // namespace edgemon::tui
