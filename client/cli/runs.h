// edgemon runs and edgemon compare: the recorded runs in the daemon's store.
//
// A run is a closed window that is not a mark (marks are sub-windows
// labelled "<window id>:<name>", record_report.h MarkLabel). What a listing
// shows is stored with the window when it ends (WindowResult): the items and
// exit status its recorder sent, and the input rail's energy.
//
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/edgemon_client.h"

namespace edgemon::cli::record {

// True for a mark's label ("<digits>:<name>").
bool IsMarkLabel(std::string_view label);

// The closed, not abandoned runs whose start is at or after since_ns and
// whose label matches the shell pattern `glob` (fnmatch(3); empty: any), by
// start time.
Result<std::vector<client::Window>> RecordedRuns(client::Client& c, int64_t since_ns,
                                                 const std::string& glob);

// One run as `edgemon runs --json` prints it: {id, label, start_ns, end_ns,
// duration_s, input_rail, energy_j, avg_power_w, items, exit_status}, null
// where unknown (never 0).
nlohmann::json RunJson(const client::Window& w);

}  // namespace edgemon::cli::record
