// EnergyIntegrator: turns instantaneous rail power into cumulative energy
// counters (mJ), so the energy of any window is the difference of two counter
// readings.
//
// Each rail that reports power but no energy of its own (INA3221, the iio
// driver, INA238, batteries; not RAPL, whose hardware counter is used as is)
// gets a channel rail/<name>/energy with kFlagCounter | kFlagDerived. Every
// power observation (each frame, and each fast rail sample between frames)
// adds the trapezoid (P_prev + P_now) / 2 * dt. A gap longer than max_gap
// (a failed read, a stalled sampler) is not bridged: the counter holds and
// the gap is counted, so energy is never invented.
//
// Thread safety: owned and driven by the sampler thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/collect/collector.h"

namespace edgemon {

class EnergyIntegrator {
 public:
  // Declares an energy counter for every rail power channel that lacks one.
  // Keeps the accumulated energy of rails it already tracked.
  void Discover(ChannelTable& table);
  // Starts counters from these values (key -> mJ), e.g. the last stored ones,
  // so counters continue across daemon restarts.
  void Seed(const std::map<std::string, int64_t>& mj_by_key);
  void set_max_gap_ns(int64_t ns) { max_gap_ns_ = ns; }

  // One observation of the rails' power at boottime t_ns.
  void Observe(int64_t t_ns, const std::vector<Value>& values);
  // Writes the counters into a frame's values.
  void Fill(std::vector<Value>& values) const;

  // The unrounded counter of the energy channel `energy` (nullopt: not one
  // of ours, or never measured).
  std::optional<double> Mj(ChannelId energy) const;

  uint64_t gaps() const { return gaps_; }
  size_t rails() const { return rails_.size(); }

 private:
  struct Rail {
    std::string key;  // of the energy channel
    ChannelId power = 0;
    ChannelId energy = 0;
    double mj = 0;
    int64_t last_t = 0;
    int64_t last_mw = 0;
    bool have_last = false;
  };
  std::vector<Rail> rails_;
  std::map<std::string, Rail> carried_;  // rails' state across rediscoveries
  int64_t max_gap_ns_ = 3'000'000'000;
  uint64_t gaps_ = 0;
};

}  // namespace edgemon
