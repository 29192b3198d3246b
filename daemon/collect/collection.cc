#include "daemon/collect/collection.h"

#include <algorithm>
#include <utility>

#include "daemon/collect/collectors.h"

namespace edgemon {
namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;
constexpr int64_t kLogEveryNs = 60 * kNsPerSec;  // a failing channel is logged once a minute
constexpr int64_t kMinRediscoveryNs = kNsPerSec;
constexpr int64_t kMaxRediscoveryWaitNs = 60 * kNsPerSec;

}  // namespace

Collection::Collection(SysFs& fs, std::vector<std::unique_ptr<Collector>> collectors,
                       CollectOptions options, WarnFn warn)
    : fs_(fs), collectors_(std::move(collectors)), options_(options), warn_(std::move(warn)) {}

Collection::~Collection() {
  for (FileId f : opened_) fs_.Close(f);
}

void Collection::Discover() {
  for (FileId f : opened_) fs_.Close(f);
  opened_.clear();
  table_.BeginPass();
  BoardInfo board;
  sampled_.clear();
  fast_collectors_.clear();
  fast_channels_.clear();
  std::vector<ChannelId> added;
  for (auto& c : collectors_) {
    DiscoverContext ctx(fs_, table_, board, options_, opened_, warn_);
    added.clear();
    ctx.RecordAddedTo(&added);
    const size_t opened_before = opened_.size();
    c->Discover(ctx);
    // Sample() only fills declared channels from files opened here: a
    // collector that found neither has nothing to do each tick.
    if (added.empty() && opened_.size() == opened_before && !c->Waiting()) continue;
    sampled_.push_back(c.get());
    if (c->FastPath()) {
      fast_collectors_.push_back(c.get());
      fast_channels_.insert(fast_channels_.end(), added.begin(), added.end());
    }
  }
  AssignRailHierarchy(table_.channels());
  energy_.Discover(table_);
  inventory_.board = std::move(board);
  inventory_.channels = table_.channels();
  size_t n = inventory_.channels.size();
  error_counts_.resize(n, 0);
  last_log_ns_.resize(n, 0);
  logged_count_.resize(n, 0);
  failures_.resize(n, ReadError::kIo);
  fast_values_.assign(n, std::nullopt);
  topology_ = TopologySignature();
  live_rails_.clear();
  auto keys = std::make_shared<std::vector<std::string>>();
  for (ChannelId id = 0; id < n; ++id) {
    const Channel& e = inventory_.channels[id];
    if (!table_.Live(id) || e.kind != Kind::kRail || e.field != Field::kEnergy) continue;
    LiveRail r{id, std::nullopt};
    for (ChannelId j = 0; j < n; ++j) {
      const Channel& p = inventory_.channels[j];
      if (table_.Live(j) && p.kind == Kind::kRail && p.field == Field::kPower && p.name == e.name)
        r.power = j;
    }
    live_rails_.push_back(r);
    keys->push_back(e.Key());
  }
  live_keys_ = std::move(keys);
  ++generation_;
  rediscover_ = false;
}

void Collection::Sample(int64_t boottime_ns, Frame& frame) {
  if (rediscover_ && boottime_ns - last_discovery_ns_ >= rediscover_wait_ns_) {
    last_discovery_ns_ = boottime_ns;
    Discover();
    // A file that stays gone (a sensor that answers ENODEV for good) must not
    // cost a directory walk every second: back off up to a minute.
    rediscover_wait_ns_ = std::min(rediscover_wait_ns_ * 2, kMaxRediscoveryWaitNs);
  }
  frame.values.assign(inventory_.channels.size(), std::nullopt);
  failed_.clear();
  SampleContext ctx(fs_, boottime_ns, frame.values, failures_, failed_);
  for (Collector* c : sampled_) c->Sample(ctx);
  if (ctx.rediscovery_requested()) {
    rediscover_ = true;
  } else {
    rediscover_wait_ns_ = kMinRediscoveryNs;  // healthy again
  }
  energy_.Observe(boottime_ns, frame.values);
  energy_.Fill(frame.values);
  realtime_offset_ns_ = frame.realtime_ns - boottime_ns;
  PublishLive(frame.realtime_ns, frame.values);
  CountFailures(boottime_ns);
}

void Collection::SampleFast(int64_t boottime_ns) {
  if (rediscover_) return;  // the next frame rediscovers first
  // Only the rail collectors write here, and only their own channels: the
  // rest stay absent from the discovery on, and theirs start absent each time.
  for (ChannelId id : fast_channels_) {
    if (id < fast_values_.size()) fast_values_[id].reset();
  }
  failed_.clear();
  SampleContext ctx(fs_, boottime_ns, fast_values_, failures_, failed_);
  for (Collector* c : fast_collectors_) c->Sample(ctx);
  if (ctx.rediscovery_requested()) rediscover_ = true;
  energy_.Observe(boottime_ns, fast_values_);
  PublishLive(boottime_ns + realtime_offset_ns_, fast_values_);
  CountFailures(boottime_ns);
}

void Collection::CountFailures(int64_t now_ns) {
  for (ChannelId id : failed_) {
    // A gated sensor (powered down, reads -256 C) is a state, not a fault:
    // absent, but neither counted nor logged.
    if (failures_[id] == ReadError::kGated) continue;
    ++error_counts_[id];
    ++total_errors_;
    Log(id, failures_[id], now_ns);
  }
}

void Collection::Log(ChannelId id, ReadError e, int64_t now_ns) {
  if (!warn_) return;
  bool first = logged_count_[id] == 0 && last_log_ns_[id] == 0;
  if (!first && now_ns - last_log_ns_[id] < kLogEveryNs) return;
  const Channel& c = inventory_.channels[id];
  std::string msg = "channel " + c.Key() + " (" + c.device + "): " + std::string(ToString(e));
  if (!first) {
    msg += "; " + std::to_string(error_counts_[id] - logged_count_[id]) +
           " failed reads since the last report";
  }
  warn_(msg);
  last_log_ns_[id] = now_ns == 0 ? 1 : now_ns;
  logged_count_[id] = error_counts_[id];
}

std::string Collection::TopologySignature() {
  std::string sig;
  for (auto& c : collectors_) {
    for (const auto& dir : c->WatchedDirs()) {
      sig += dir;
      sig += ':';
      for (const auto& name : fs_.List(dir)) {
        sig += name;
        sig += ',';
      }
      sig += ';';
    }
  }
  return sig;
}

bool Collection::CheckTopology() {
  if (TopologySignature() == topology_) return false;
  Discover();
  return true;
}

}  // namespace edgemon

namespace edgemon {

void Collection::PublishLive(int64_t realtime_ns, const std::vector<Value>& values) {
  if (live_rails_.empty()) return;
  // The reading the ring let go of last time lends its buffers to this one.
  LiveEnergy::Reading r = std::move(spare_);
  r.realtime_ns = realtime_ns;
  r.mj.clear();
  r.mw.clear();
  r.mj.reserve(live_rails_.size());
  r.mw.reserve(live_rails_.size());
  for (const LiveRail& lr : live_rails_) {
    std::optional<double> mj = energy_.Mj(lr.energy);
    if (!mj && lr.energy < values.size() && values[lr.energy]) {
      mj = static_cast<double>(*values[lr.energy]);  // a hardware counter (RAPL)
    }
    r.mj.push_back(mj);
    r.mw.push_back(lr.power && *lr.power < values.size() ? values[*lr.power] : std::nullopt);
  }
  spare_ = live_.Publish(live_keys_, std::move(r));
}

}  // namespace edgemon
