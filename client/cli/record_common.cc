// What edgemon record, attach and mark share (see record_common.h).
#include "client/cli/record_common.h"

#include <algorithm>

#include "edgemon/clock.h"

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

}  // namespace edgemon::cli::record
