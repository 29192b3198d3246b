// BoardControl: the writes edgemon-control makes on a board (or on a
// simulated root): power modes through the board's nvpmodel tool, locked
// clocks through jetson_clocks or direct cpufreq/devfreq writes, fan duty.
//
// Every change is planned first (what it will write and what restores it, as
// JSON the caller persists before anything is written), then applied; a
// failed application rolls back what it wrote before returning its error.
//
// Tools are looked up under the root: <root>/usr/sbin, then <root>/usr/bin;
// with root "/" also $PATH. A tool outside a non-"/" root is never run, so a
// simulated root cannot reach the real board.
//
// Thread safety: none; the caller serialises calls.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edgemon/status.h"

namespace edgemon::control {

struct PowerModeInfo {
  int id = 0;
  std::string name;
  std::optional<long long> tpc_pg_mask;  // modes with different masks need a reboot
};

struct FanInfo {
  std::string name;      // hwmon name ("pwmfan"), suffixed "-N" when repeated
  std::string pwm_path;  // absolute path of pwmN under the root
  std::optional<int> pwm;
};

// Operations report an edgemon::Status: OK, or INVALID_ARGUMENT,
// FAILED_PRECONDITION, ABORTED or UNIMPLEMENTED and one line.

class BoardControl {
 public:
  // `root` "/" or a board root; `state_dir` holds jetson_clocks' store files.
  BoardControl(std::string root, std::string state_dir);

  // Power modes from <root>/etc/nvpmodel.conf (POWER_MODEL lines), the
  // default (PM_CONFIG DEFAULT=) and the current one (<root>/var/lib/nvpmodel/status).
  std::vector<PowerModeInfo> Modes() const;
  std::optional<int> DefaultMode() const;
  std::optional<int> CurrentMode() const;
  std::string NvpmodelTool() const;      // "" when absent
  std::string JetsonClocksTool() const;  // "" when absent

  // Plans: fill *restore (JSON to persist) or return an error; nothing written.
  Status PlanMode(int id, nlohmann::json* restore) const;
  Status PlanClocks(const std::string& lease_id, nlohmann::json* restore) const;
  Status PlanFan(const std::string& fan, int percent, nlohmann::json* restore) const;
  // Applies a planned change; on failure everything it wrote is restored.
  Status Apply(const nlohmann::json& plan);
  // Restores from a plan (after Apply, or from a state file after a crash).
  // OK when everything was restored, else what could not be (ABORTED for
  // writes the kernel refused, the tool's status for a failed nvpmodel or
  // jetson_clocks, FAILED_PRECONDITION when the plan cannot say what to restore).
  Status Restore(const nlohmann::json& plan);

  std::vector<FanInfo> Fans() const;
  // True when every cpufreq policy runs at min == max (the jetson_clocks effect).
  bool ClocksLocked() const;

 private:
  std::string Path(const std::string& abs) const;  // root + abs
  std::string FindTool(const std::string& name) const;
  Status RunTool(const std::vector<std::string>& argv, std::string* output) const;
  Status WriteFiles(const nlohmann::json& writes);  // [{path, old, new}], rolled back on failure
  // Writes back "old" of writes[0, count) newest first; " path (why)" for each
  // that failed.
  static std::string UndoWrites(const nlohmann::json& writes, size_t count);

  std::string root_;  // "" for "/"
  std::string state_dir_;
};

// Reads a whole small file; nullopt when it cannot be read.
std::optional<std::string> ReadText(const std::string& path);
// Writes `text` to an existing file (O_WRONLY|O_TRUNC, no create);
// UNAVAILABLE with strerror's text alone (the caller names the file).
Status WriteText(const std::string& path, const std::string& text);

}  // namespace edgemon::control
