// edgemon attach: the summary and bundle of edgemon record for a past time
// range or window, from edgemond's ring store.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "client/cli/cli.h"
#include "client/cli/record_bundle.h"
#include "client/cli/record_common.h"
#include "client/cli/record_report.h"
#include "edgemon/timespec.h"

namespace edgemon::cli::record {

namespace {

struct AttachOptions {
  std::string from, to, last, out, label;
  int64_t window = 0;
  double items = 0;
  bool json = false;
};

int RunAttach(const Globals& globals, const AttachOptions& o) {
  int ranges = (o.window ? 1 : 0) + (!o.last.empty() ? 1 : 0) + (!o.from.empty() ? 1 : 0);
  if (ranges != 1 || (!o.to.empty() && o.from.empty())) {
    std::fprintf(stderr,
                 "edgemon attach: give one of --from T [--to T], --window ID or --last DURATION\n");
    return kExitUsage;
  }
  Report report;
  report.mode = "attach";
  int64_t from = 0, to = 0;
  // The range from `now`: checked on this host's clock first, then taken
  // again on the daemon's (DeviceInfo.now_ns, the frames' timeline), so a
  // relative range is right whatever either wall clock did.
  auto range_at = [&](const int64_t now) -> int {
    if (!o.last.empty()) {
      auto d = PositiveDurationNs(o.last, "duration");
      if (!d.ok()) {
        std::fprintf(stderr, "edgemon attach: --last: %s\n",
                     TerminalSafe(d.status().message()).c_str());
        return kExitDataErr;
      }
      from = now - *d;
      to = now;
    } else if (!o.from.empty()) {
      auto f = ParseTimeNs(o.from, now);
      Result<int64_t> t = o.to.empty() ? Result<int64_t>(now) : ParseTimeNs(o.to, now);
      if (!f.ok() || !t.ok()) {
        std::fprintf(stderr, "edgemon attach: %s: %s\n", !f.ok() ? "--from" : "--to",
                     TerminalSafe((!f.ok() ? f : t).status().message()).c_str());
        return kExitDataErr;
      }
      if (*f >= *t) {
        std::fprintf(stderr, "edgemon attach: --from must be before --to\n");
        return kExitDataErr;
      }
      from = *f;
      to = *t;
    }
    return kExitOk;
  };
  if (int bad = range_at(NowNs()); bad != kExitOk) return bad;
  if (!o.out.empty() && !MakeBundleDir(o.out)) return kExitCantCreate;
  auto c = ConnectOrReport(globals);
  if (!c) return kExitUsage;
  auto info = c->DeviceInfo();
  if (!info.ok()) {
    return ReportFirstCall("edgemon attach", c->target(), info.status());
  }
  FillDevice(report, *info, c->target());
  if (info->now_ns) {
    if (int bad = range_at(*info->now_ns); bad != kExitOk) return bad;
  }
  Result<client::Summary> summary = Status::Unavailable("");
  if (o.window) {
    summary = c->SummarizeWindow(o.window);
    if (!summary.ok())
      return ReportStatus("attach: window " + std::to_string(o.window), summary.status());
    report.window_id = o.window;
    auto ws = c->ListWindows(summary->from_ns, summary->to_ns + 1);
    if (ws.ok()) {
      for (const auto& w : *ws) {
        if (w.id == o.window) {
          report.label = w.label;
          if (!w.end_ns) report.notes.push_back("the window is still open: summarized up to now");
          if (w.abandoned) {
            report.notes.push_back(
                "the window was closed as abandoned by edgemond (its lease ran out, or it was "
                "left open too long or past its holder's quota): it ends at its holder's last "
                "sign of life, not at the end of the run");
          }
        }
      }
    }
  } else {
    summary = c->Summarize(from, to);
    if (!summary.ok()) return ReportStatus("attach: summarize", summary.status());
  }
  if (!o.label.empty()) report.label = o.label;
  report.summary = *summary;
  report.run_start_ns = summary->from_ns;
  report.run_end_ns = summary->to_ns;
  if (o.items > 0) {
    report.items = o.items;
    report.items_source = "--items";
  }
  AddPhases(*c, report, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  AddEventNote(*c, report, info->inventory);
  if (o.json) {
    std::printf("%s\n", JsonText(SummaryJson(report, info->inventory), 2).c_str());
  } else {
    std::fputs(TerminalSafe(RenderSummary(report, info->inventory)).c_str(), stdout);
  }
  if (!o.out.empty() && !WriteBundle(*c, o.out, report, info->inventory)) return kExitCantCreate;
  return kExitOk;
}

}  // namespace

void AddAttachCommand(CLI::App& app, Registry& registry) {
  auto ao = std::make_shared<AttachOptions>();
  auto* att = app.add_subcommand("attach", "The same summary and bundle for a past time range");
  att->add_option("--from", ao->from, std::string("Start: ") + kTimeSyntax);
  att->add_option("--to", ao->to, "End (default: now)");
  att->add_option("--window", ao->window, "A window id (from edgemon record or mark)")
      ->check(CLI::PositiveNumber);
  att->add_option("--last", ao->last,
                  std::string("Up to now, the last DURATION: ") + kDurationSyntax);
  att->add_option("--out", ao->out,
                  "Write summary.json, samples.csv, trace.json and report.html here");
  att->add_option("--label", ao->label, "Label shown in the summary");
  att->add_option("--items", ao->items, "Items processed: adds energy per item")
      ->check(CLI::PositiveNumber);
  att->add_flag("--json", ao->json, "Print summary.json instead of the table");
  att->callback([&registry, ao] {
    registry.run = [&registry, ao] { return RunAttach(registry.globals, *ao); };
  });
}

}  // namespace edgemon::cli::record
