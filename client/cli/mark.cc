// edgemon mark begin|end NAME: a named phase, as a sub-window of the
// edgemon record run it is called inside (EDGEMON_WINDOW), or alone.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "client/cli/cli.h"
#include "client/cli/record_common.h"
#include "client/cli/record_report.h"

namespace edgemon::cli::record {

namespace {

int RunMark(const Globals& globals, const std::string& action, const std::string& name) {
  if (name.empty() || name.size() > 200) {
    std::fprintf(stderr, "edgemon mark: NAME must be 1 to 200 bytes\n");
    return kExitUsage;
  }
  int64_t parent = 0, parent_start = 0;
  if (const char* w = std::getenv("EDGEMON_WINDOW"); w && *w) {
    char* end = nullptr;
    long long v = std::strtoll(w, &end, 10);
    if (!end || *end != '\0' || v <= 0) {
      std::fprintf(stderr, "edgemon mark: EDGEMON_WINDOW='%s' is not a window id\n",
                   TerminalSafe(w).c_str());
      return kExitUsage;
    }
    parent = v;
  }
  if (const char* s = std::getenv("EDGEMON_WINDOW_START"); s && *s) {
    parent_start = std::strtoll(s, nullptr, 10);
  }
  const std::string label = parent ? MarkLabel(parent, name) : name;
  auto c = ConnectOrReport(globals);
  if (!c) return kExitUsage;
  if (action == "begin") {
    // Inside a record, the recorder renews the mark's lease while it runs.
    auto w = parent ? c->BeginWindow(label, kWindowLeaseMs) : c->BeginWindow(label);
    if (!w.ok()) return ReportStatus("mark begin " + name, w.status());
    return kExitOk;
  }
  auto ws = c->ListWindows(parent_start, 0);
  if (!ws.ok()) return ReportStatus("mark end " + name, ws.status());
  const client::Window* open = nullptr;
  for (const auto& w : *ws) {
    if (w.label == label && !w.end_ns && (!open || w.start_ns >= open->start_ns)) open = &w;
  }
  if (!open) {
    std::fprintf(stderr, "edgemon mark end: no open mark '%s'%s\n", TerminalSafe(name).c_str(),
                 parent ? (" in window " + std::to_string(parent)).c_str() : "");
    return kExitFailure;
  }
  auto e = c->EndWindow(open->id);
  if (!e.ok()) return ReportStatus("mark end " + name, e.status());
  return kExitOk;
}

}  // namespace

void AddMarkCommand(CLI::App& app, Registry& registry) {
  auto mo = std::make_shared<std::pair<std::string, std::string>>();
  auto* mark = app.add_subcommand(
      "mark", "Begin or end a named phase inside `edgemon record` (EDGEMON_WINDOW) or alone");
  mark->add_option("action", mo->first, "begin or end")
      ->required()
      ->check(CLI::IsMember({"begin", "end"}));
  mark->add_option("name", mo->second, "Phase name")->required();
  mark->callback([&registry, mo] {
    registry.run = [&registry, mo] { return RunMark(registry.globals, mo->first, mo->second); };
  });
}

}  // namespace edgemon::cli::record
