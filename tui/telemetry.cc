#include "tui/telemetry.h"

#include <algorithm>
#include <utility>

namespace edgemon::tui {

namespace {

// Longest gap between two frames that power integration bridges.
constexpr int64_t kMaxIntegrationGapNs = 5'000'000'000;

}  // namespace

std::string TotalSource::Label() const {
  if (!input_rail.empty()) return input_rail;
  if (power_ids.size() == 1) return "1 rail";
  return "sum of " + std::to_string(power_ids.size()) + " rails";
}

TotalSource FindTotalSource(const Inventory& inv) {
  TotalSource input;
  TotalSource sum;
  auto energy_of = [&](const Channel& c) {
    const Channel* e = inv.Find(Kind::kRail, c.name, Field::kEnergy);
    return e != nullptr ? e->id : kNoChannel;
  };
  for (const Channel& c : inv.channels) {
    if (c.kind != Kind::kRail || c.field != Field::kPower || c.name.empty()) continue;
    if (c.Has(kFlagInputRail) && input.empty()) {
      input.power_ids.push_back(c.id);
      input.energy_ids.push_back(energy_of(c));
      input.input_rail = c.name;
    } else if (c.parent.empty() && !c.Has(kFlagInputRail)) {
      sum.power_ids.push_back(c.id);
      sum.energy_ids.push_back(energy_of(c));
    }
  }
  return input.empty() ? sum : input;
}

void Telemetry::SetDeviceInfo(client::DeviceInfo info) {
  rail_stats_.assign(info.inventory.channels.size(), RailStats{});
  total_ = FindTotalSource(info.inventory);
  info_ = std::move(info);
  latest_.reset();
  previous_.reset();
}

std::optional<double> Telemetry::TotalMw(const Frame& frame) const {
  if (total_.empty()) return std::nullopt;
  double sum = 0;
  for (ChannelId id : total_.power_ids) {
    Value v = frame.Get(id);
    if (!v) return std::nullopt;
    sum += static_cast<double>(*v);
  }
  return sum;
}

void Telemetry::AddFrame(const Frame& frame) {
  if (!info_) return;
  const auto& channels = info_->inventory.channels;
  for (size_t id = 0; id < channels.size() && id < frame.values.size(); ++id) {
    const Channel& c = channels[id];
    if (c.kind != Kind::kRail || c.field != Field::kPower || !frame.values[id]) continue;
    RailStats& s = rail_stats_[id];
    int64_t mw = *frame.values[id];
    s.sum_mw += static_cast<double>(mw);
    ++s.count;
    s.peak_mw = std::max(s.peak_mw.value_or(mw), mw);
  }

  if (frames_ == 0) first_realtime_ns_ = frame.realtime_ns;
  ++frames_;

  if (!total_.empty()) {
    history_.push_back({frame.realtime_ns, TotalMw(frame)});
    while (history_.size() > kMaxHistory) history_.pop_front();
    if (!energy_mj_) energy_mj_ = 0.0;
    if (previous_) {
      const int64_t dt_ns = frame.realtime_ns - previous_->realtime_ns;
      for (size_t i = 0; i < total_.power_ids.size(); ++i) {
        ChannelId e = total_.energy_ids[i];
        Value e0 = e != kNoChannel ? previous_->Get(e) : std::nullopt;
        Value e1 = e != kNoChannel ? frame.Get(e) : std::nullopt;
        if (e0 && e1 && *e1 >= *e0) {
          *energy_mj_ += static_cast<double>(*e1 - *e0);
          continue;
        }
        Value p0 = previous_->Get(total_.power_ids[i]);
        Value p1 = frame.Get(total_.power_ids[i]);
        if (p0 && p1 && dt_ns > 0 && dt_ns <= kMaxIntegrationGapNs) {
          // mW x s = mJ (trapezoid).
          *energy_mj_ += static_cast<double>(*p0 + *p1) / 2.0 * static_cast<double>(dt_ns) / 1e9;
        }
      }
    }
  }
  previous_ = frame;
  latest_ = frame;
}

void Telemetry::SetProcesses(client::ProcessList list) {
  processes_ = std::move(list);
  processes_error_.clear();
}

void Telemetry::SetProcessesError(std::string why) {
  processes_error_ = std::move(why);
}

}  // namespace edgemon::tui
