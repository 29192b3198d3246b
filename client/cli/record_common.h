// What edgemon record, attach and mark share: talking to the daemon about
// windows and marks, filling a Report from it, and registering the
// subcommands (record.cc, attach.cc, mark.cc; AddRecordCommands in cli.h
// registers all three).
//
// Thread safety: plain functions; a Client is thread-safe, a Report is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "client/cli/cli.h"
#include "client/cli/record_report.h"
#include "client/edgemon_client.h"

namespace edgemon::cli::record {

// A record's window, and the marks begun inside it, are leased: the daemon
// closes them as abandoned when the recorder stops renewing (killed).
inline constexpr uint32_t kWindowLeaseMs = 10'000;

// This host's realtime clock, ns since the Unix epoch.
int64_t NowNs();

// Calls f() until it succeeds, fails with something other than UNAVAILABLE,
// or the deadline passes; reconnect() runs before each retry (a fresh
// channel reaches a restarted daemon at once, where the old one may still
// be backing off). *waited is set when it had to wait.
template <typename F>
auto Retry(F f, std::chrono::steady_clock::time_point deadline,
           const std::function<void()>& reconnect, bool* waited = nullptr) {
  auto r = f();
  while (!r.ok() && r.status().code() == StatusCode::kUnavailable &&
         std::chrono::steady_clock::now() < deadline) {
    if (waited) *waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (reconnect) reconnect();
    r = f();
  }
  return r;
}

// A new client for the same target (nullptr when the target is malformed).
std::unique_ptr<client::Client> FreshClient(const std::string& target,
                                            std::chrono::milliseconds timeout);

// The report's device fields from DeviceInfo.
void FillDevice(Report& report, const client::DeviceInfo& info, const std::string& target);

// Adds the marks of the report's window (sub-windows labelled
// "<window>:<name>" in [run_start, run_end]) with their summaries, and a
// note for each that failed or was never ended.
void AddPhases(client::Client& c, Report& report, std::chrono::steady_clock::time_point deadline);

// Adds the note on protection and throttle events over the report's
// summary range ("2 over-current events ... during this run"), from the
// event counters' lowest and highest stored values in the range; nothing
// when none moved or the board has no event channels.
void AddEventNote(client::Client& c, Report& report, const Inventory& inventory);

// The subcommands besides record (which AddRecordCommands registers first).
void AddAttachCommand(CLI::App& app, Registry& registry);   // attach.cc
void AddMarkCommand(CLI::App& app, Registry& registry);     // mark.cc
void AddTraceCommand(CLI::App& app, Registry& registry);    // trace merge (trace_merge.cc)
void AddRunsCommand(CLI::App& app, Registry& registry);     // runs.cc
void AddCompareCommand(CLI::App& app, Registry& registry);  // compare.cc
void AddMlperfCommand(CLI::App& app, Registry& registry);   // mlperf.cc

}  // namespace edgemon::cli::record
