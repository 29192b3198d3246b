// What edgetop knows about the monitored machine: the daemon's DeviceInfo,
// the latest frame, statistics since edgetop started (rail average and peak,
// energy), a bounded history of total board power for the sparkline, and the
// latest process list. Pure data: fed by the app from the client library's
// callbacks, read by the view model (view_model.h); tests fill it directly.
//
// Thread safety: none; the app guards it with a mutex and hands copies to the
// view model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "client/edgemon_client.h"
#include "edgemon/channel.h"

namespace edgemon::tui {

// Power of one rail channel since edgetop started (or since the inventory
// last changed).
struct RailStats {
  double sum_mw = 0;
  uint64_t count = 0;
  std::optional<int64_t> peak_mw;

  std::optional<double> avg_mw() const {
    if (count == 0) return std::nullopt;
    return sum_mw / static_cast<double>(count);
  }
};

// Which rails make up "total board power": the input rail where the board
// has one (VDD_IN, POM_5V_IN, psys), else the sum of the top-level rails.
struct TotalSource {
  std::vector<ChannelId> power_ids;
  std::vector<ChannelId> energy_ids;  // parallel to power_ids; kNoChannel when absent
  std::string input_rail;             // name of the input rail; "" for a sum
  bool empty() const { return power_ids.empty(); }
  // "VDD_IN" or "sum of 4 rails".
  std::string Label() const;
};

inline constexpr ChannelId kNoChannel = 0xffffffffu;

// Picks the total-power source of an inventory.
TotalSource FindTotalSource(const Inventory& inv);

// One point of the total-power history; mw is absent when a rail of the sum
// could not be read that tick.
struct PowerPoint {
  int64_t realtime_ns = 0;
  std::optional<double> mw;
};

class Telemetry {
 public:
  // History points kept for the sparkline (at 1 s: 10 minutes).
  static constexpr size_t kMaxHistory = 600;

  // A new inventory (first connection, a daemon restart, a generation change):
  // per-channel statistics restart; the history and the energy go on.
  void SetDeviceInfo(client::DeviceInfo info);
  // A frame of the current inventory (values indexed by its channel ids).
  void AddFrame(const Frame& frame);
  void SetProcesses(client::ProcessList list);
  // The daemon's process list could not be had: why (shown on the page).
  void SetProcessesError(std::string why);

  bool has_info() const { return info_.has_value(); }
  const client::DeviceInfo& info() const { return *info_; }
  const Inventory& inventory() const { return info_->inventory; }
  const std::optional<Frame>& latest() const { return latest_; }
  // Value of a channel in the latest frame.
  Value Get(ChannelId id) const { return latest_ ? latest_->Get(id) : std::nullopt; }
  const std::vector<RailStats>& rail_stats() const { return rail_stats_; }
  const TotalSource& total() const { return total_; }
  const std::deque<PowerPoint>& history() const { return history_; }
  // Total-power energy since the first frame (mJ): from the rails' energy
  // counters where they all have one, else the power integrated over time.
  std::optional<double> energy_mj() const { return energy_mj_; }
  int64_t first_realtime_ns() const { return first_realtime_ns_; }
  uint64_t frames() const { return frames_; }
  const std::optional<client::ProcessList>& processes() const { return processes_; }
  const std::string& processes_error() const { return processes_error_; }

  // The current total power of a frame (absent when a rail is unreadable).
  std::optional<double> TotalMw(const Frame& frame) const;

 private:
  std::optional<client::DeviceInfo> info_;
  std::optional<Frame> latest_;
  std::optional<Frame> previous_;  // of the current inventory, for energy deltas
  std::vector<RailStats> rail_stats_;
  TotalSource total_;
  std::deque<PowerPoint> history_;
  std::optional<double> energy_mj_;
  int64_t first_realtime_ns_ = 0;
  uint64_t frames_ = 0;
  std::optional<client::ProcessList> processes_;
  std::string processes_error_;
};

}  // namespace edgemon::tui
