// BoardControl: the writes edgemon-control makes on a board (or on a
// simulated root): power modes through the board's nvpmodel tool, locked
// clocks through jetson_clocks or direct cpufreq/devfreq writes, fan duty.
//
// Every change is planned first (what it will write and what restores it, as
// JSON the caller persists before anything is written), then applied; a
// failed application rolls back what it wrote before returning its error.
//
// Every file below the root is read and written through ConfinedRoot
// (daemon/collect/confined.h): a value file that is written (and read for
// its plan: pwm, cpufreq and devfreq attributes, hwmon names) must be a
// regular file that is not a symlink, reached by links that stay inside the
// root; anything else refuses the request, naming the file. Plans keep
// logical paths ("/sys/..."), so a plan from the state file cannot name a
// file outside the root either.
//
// Tools are looked up under the root: <root>/usr/sbin, then <root>/usr/bin;
// with root "/" also $PATH; a tool is a regular executable file reached
// inside the root. A tool outside a non-"/" root is never run, so a
// simulated root cannot reach the real board; a plan (from the state file)
// naming another tool than the board's, or a jetson_clocks store outside the
// state directory, is not run.
//
// Thread safety: none; the caller serialises calls.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/collect/confined.h"
#include "edgemon/status.h"

namespace edgemon::control {

struct PowerModeInfo {
  int id = 0;
  std::string name;
  std::optional<long long> tpc_pg_mask;  // modes with different masks need a reboot
};

struct FanInfo {
  std::string name;      // hwmon name ("pwmfan"), suffixed "-N" when repeated
  std::string pwm_path;  // logical path of pwmN ("/sys/class/hwmon/hwmon1/pwm1")
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
  std::string Path(const std::string& abs) const;  // where `abs` lies on this machine
  std::string FindTool(const std::string& name) const;
  // The plan's tool when it is this board's `name` tool; else an error.
  Status CheckTool(const nlohmann::json& plan, const std::string& name) const;
  Status RunTool(const std::vector<std::string>& argv, std::string* output) const;
  // A value file's text for a plan (final symlink refused); nullopt when it
  // does not exist, an error for any other refusal.
  Result<std::optional<std::string>> ReadValue(const std::string& path) const;
  Status WriteFiles(const nlohmann::json& writes);  // [{path, old, new}], rolled back on failure
  // Writes back "old" of writes[0, count) newest first; " path (why)" for each
  // that failed.
  std::string UndoWrites(const nlohmann::json& writes, size_t count) const;

  ConfinedRoot root_;
  ConfinedRoot state_;  // the state directory (jetson_clocks' store files)
};

}  // namespace edgemon::control
