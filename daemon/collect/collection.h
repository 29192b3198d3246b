// Collection: runs a set of collectors against one SysFs and produces the
// Inventory and each tick's values.
//
// It owns discovery (and rediscovery when a collector reports a vanished
// device or a watched directory changes), keeps channel ids stable across
// rediscoveries, counts read errors per channel and logs each failing channel
// once, then at most once a minute (rate-limited, through the warn callback).
//
// Thread safety: one thread (the sampler) calls everything but the const
// accessors' results may be copied out under the caller's own lock.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/collect/collector.h"
#include "daemon/collect/energy.h"
#include "daemon/collect/live_energy.h"

namespace edgemon {

class Collection {
 public:
  using WarnFn = std::function<void(const std::string&)>;

  Collection(SysFs& fs, std::vector<std::unique_ptr<Collector>> collectors, CollectOptions options,
             WarnFn warn);
  ~Collection();
  Collection(const Collection&) = delete;
  Collection& operator=(const Collection&) = delete;

  // (Re)discovers every collector. Channel ids of known channels are kept.
  void Discover();
  // Samples every collector into frame.values (resized to the inventory);
  // one whose discovery declared no channel and opened no file is skipped.
  // Rediscovers first when the previous tick asked for it (at most once a
  // second of `boottime_ns`, backing off to once a minute while the request
  // persists). Does not touch frame.seq or the timestamps.
  void Sample(int64_t boottime_ns, Frame& frame);
  // Compares the watched directories with the last discovery and rediscovers
  // when they changed. Returns true if it rediscovered. A few readdirs:
  // call it every few seconds, not every tick.
  bool CheckTopology();
  // Samples only the rail power collectors (FastPath) and feeds the energy
  // integrator; nothing is published. Called between frames at the energy rate.
  void SampleFast(int64_t boottime_ns);
  // Continues energy counters from earlier values (key -> mJ).
  void SeedEnergy(const std::map<std::string, int64_t>& mj_by_key) { energy_.Seed(mj_by_key); }
  // Longest interval bridged by energy integration (default 3 s).
  void set_max_energy_gap_ns(int64_t ns) {
    energy_.set_max_gap_ns(ns);
    live_.set_max_hold_ns(ns);
  }
  const EnergyIntegrator& energy() const { return energy_; }
  // Every rail energy counter after each observation (frames and rail-rate
  // samples), for any thread to read.
  const LiveEnergy& live_energy() const { return live_; }

  const Inventory& inventory() const { return inventory_; }
  // The last SampleFast's values (indexed by channel id; only the rail
  // collectors' channels are filled), the channels those collectors declared,
  // and realtime - boottime of the last frame (a fast sample's realtime is
  // its boottime plus that).
  const std::vector<Value>& fast_values() const { return fast_values_; }
  const std::vector<ChannelId>& fast_channels() const { return fast_channels_; }
  int64_t realtime_offset_ns() const { return realtime_offset_ns_; }
  // Incremented by every discovery; lets consumers notice inventory changes.
  uint64_t generation() const { return generation_; }
  // Read errors counted per channel since start.
  const std::vector<uint64_t>& error_counts() const { return error_counts_; }
  uint64_t total_errors() const { return total_errors_; }

 private:
  std::string TopologySignature();
  void Log(ChannelId id, ReadError e, int64_t now_ns);
  void CountFailures(int64_t now_ns);

  SysFs& fs_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  CollectOptions options_;
  WarnFn warn_;
  ChannelTable table_;
  EnergyIntegrator energy_;
  void PublishLive(int64_t realtime_ns, const std::vector<Value>& values);
  struct LiveRail {
    ChannelId energy = 0;
    std::optional<ChannelId> power;
  };
  std::vector<LiveRail> live_rails_;  // rail energy channels, as live_keys_
  LiveEnergy::Keys live_keys_;
  LiveEnergy live_;
  int64_t realtime_offset_ns_ = 0;           // realtime - boottime of the last frame
  LiveEnergy::Reading spare_;                // the ring's last evicted reading, reused
  std::vector<Value> fast_values_;           // sized at discovery
  std::vector<Collector*> sampled_;          // those that found something to read
  std::vector<Collector*> fast_collectors_;  // those of them with FastPath()
  std::vector<ChannelId> fast_channels_;     // the channels they declared
  Inventory inventory_;
  std::vector<FileId> opened_;
  std::string topology_;
  uint64_t generation_ = 0;
  bool rediscover_ = false;
  int64_t last_discovery_ns_ = 0;
  int64_t rediscover_wait_ns_ = 1'000'000'000;  // doubles while rediscoveries do not help

  std::vector<uint64_t> error_counts_;
  std::vector<int64_t> last_log_ns_;  // 0: never logged
  std::vector<uint64_t> logged_count_;
  std::vector<ReadError> failures_;
  std::vector<ChannelId> failed_;
  uint64_t total_errors_ = 0;
};

}  // namespace edgemon
