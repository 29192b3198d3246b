// Pieces shared by edgemon's reading subcommands (now, sensors, watch,
// tegrastats, query): opening a session, choosing channels, streaming.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli/cli.h"
#include "client/edgemon_client.h"
#include "edgemon/select.h"

namespace edgemon::cli {

// A connected client and the daemon's inventory.
struct Session {
  std::unique_ptr<client::Client> client;
  client::DeviceInfo info;
};

// Connects and fetches DeviceInfo. On failure prints one line
// ("edgemon: cannot reach the daemon at unix:/x: UNAVAILABLE: ...") and sets
// *exit_code (kExitUnavailable, or kExitUsage for a malformed address).
std::optional<Session> OpenSession(const Globals& globals, int* exit_code);

// Splits "a,b" entries into a flat list, dropping empty items.
std::vector<std::string> SplitList(const std::vector<std::string>& items);

// SelectChannels (edgemon/select.h) for subcommand `command`: on a pattern that matches nothing
// prints "edgemon <command>: <why>" to stderr and returns nullopt (exit 2).
std::optional<std::vector<ChannelId>> SelectOrReport(std::string_view command,
                                                     const Inventory& inventory,
                                                     const std::vector<std::string>& patterns);

// The keys of `ids`, for a request the daemon resolves itself.
std::vector<std::string> KeysOf(const Inventory& inventory, const std::vector<ChannelId>& ids);

// A copy of `inventory` holding only `ids` (channels keep their ids, so the
// copy still indexes frames of the full inventory).
Inventory Subset(const Inventory& inventory, const std::vector<ChannelId>& ids);

// FormatValue without the space before the unit ("5.123W", "45.5C").
std::string CompactValue(const Channel& c, const Value& v);

// "2026-11-23T10:00:00.123" in local time.
std::string LocalTime(int64_t realtime_ns, bool millis = true);

// SIGINT/SIGTERM set a flag that StopRequested() reads; SIGPIPE is ignored
// (a closed pipe shows up as a failed write instead).
void InstallStopSignals();
bool StopRequested();

// Writes `line` and a newline to `out` and flushes; false when the write fails.
bool WriteLine(std::FILE* out, const std::string& line);

// Streams live frames until `count` frames were handled (0: no limit),
// SIGINT/SIGTERM, on_frame returns an exit code, or a permanent error. When the
// daemon's inventory changes (a restart), session.info is re-fetched and
// on_inventory called before the next frame. A lost connection is reported
// on stderr and retried. Returns the exit code.
struct StreamHooks {
  std::function<void(const client::DeviceInfo&)> on_inventory;
  std::function<std::optional<int>(const client::LiveFrame&)> on_frame;  // nullopt: go on
};
int RunStream(Session& session, const client::WatchOptions& options, uint64_t count,
              const StreamHooks& hooks);

}  // namespace edgemon::cli
