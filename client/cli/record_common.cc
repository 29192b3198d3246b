// What edgemon record, attach and mark share (see record_common.h).
#include "client/cli/record_common.h"

#include <algorithm>
#include <map>

#include "edgemon/clock.h"
#include "edgemon/diagnostics.h"

namespace edgemon::cli::record {

int64_t NowNs() {
  return SystemClock().RealtimeNs();
}

std::unique_ptr<client::Client> FreshClient(const std::string& target,
                                            std::chrono::milliseconds timeout) {
  auto c = client::Client::Connect(target);
  if (!c.ok()) return nullptr;
  std::unique_ptr<client::Client> out = std::move(c).value();
  out->set_timeout(timeout);
  return out;
}

void FillDevice(Report& report, const client::DeviceInfo& info, const std::string& target) {
  report.target = target;
  report.board_model = info.inventory.board.model;
  report.daemon_version = info.daemon_version;
  report.interval_ms = info.interval_ms;
  report.energy_rate_hz = info.energy_rate_hz;
}

void AddPhases(client::Client& c, Report& report, std::chrono::steady_clock::time_point deadline) {
  if (!report.window_id) return;
  auto ws = Retry([&] { return c.ListWindows(report.run_start_ns, report.run_end_ns + 1); },
                  deadline, nullptr);
  if (!ws.ok()) {
    report.notes.push_back("marks not listed: " + ws.status().ToString());
    return;
  }
  for (const auto& w : *ws) {
    auto name = MarkName(w.label, report.window_id);
    if (!name || w.id == report.window_id) continue;
    Phase p{w.id, *name, w.start_ns, w.end_ns, std::nullopt};
    auto s = w.end_ns ? c.SummarizeWindow(w.id)
                      : c.Summarize(w.start_ns, NonEmptyEnd(w.start_ns, report.run_end_ns));
    if (s.ok()) {
      p.summary = *s;
    } else {
      report.notes.push_back("mark " + *name + ": " + s.status().ToString());
    }
    if (!w.end_ns)
      report.notes.push_back("mark " + *name + " was never ended: counted to the run's end");
    report.phases.push_back(std::move(p));
  }
}

void AddEventNote(client::Client& c, Report& report, const Inventory& inventory) {
  const std::vector<std::string> keys = EventKeys(inventory);
  const int64_t from = report.summary.from_ns, to = report.summary.to_ns;
  if (keys.empty() || to <= from) return;
  // One step over the whole range: each counter's lowest and highest value.
  auto q = c.Query(from, to + 1, keys, to + 1 - from);
  if (!q.ok()) {
    report.notes.push_back("events not read: " + q.status().ToString());
    return;
  }
  std::map<ChannelId, Range> ranges;
  for (const auto& s : q->series) {
    for (const auto& b : s.buckets) {
      if (b.count == 0) continue;
      auto [it, fresh] = ranges.try_emplace(s.id, Range{b.min, b.max});
      if (!fresh) {
        it->second.min = std::min(it->second.min, b.min);
        it->second.max = std::max(it->second.max, b.max);
      }
    }
  }
  if (std::string note = EventNote(inventory, ranges); !note.empty()) {
    report.notes.push_back(note);
  }
  report.throttled = ThrottleSummary(inventory, ranges);
}

}  // namespace edgemon::cli::record
