// The Collector interface: one implementation per source, one file each
// (collectors/*.cc), listed explicitly in collectors/registry.cc.
//
// A collector declares its channels in Discover() (once, and again when the
// hardware changes) and fills their values in Sample() (every tick). Sample()
// only re-reads files opened during Discover(): no directory walk, no open,
// no subprocess per tick. Nothing may throw out of either method; a value that
// cannot be read is reported with Fail() and stays absent for that tick.
//
// Thread safety: a collector is driven by one thread (the sampler's).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/collect/sysfs.h"
#include "edgemon/channel.h"

namespace edgemon {

// Why a value is absent.
enum class ReadError : uint8_t {
  kMissing,  // ENOENT/ENODEV/ENXIO: the file or device went away
  kAgain,    // EAGAIN/EBUSY: the sensor is gated or busy
  kIo,       // EIO and any other errno
  kEmpty,    // the file was empty
  kGarbage,  // the text did not parse
  kRange,    // parsed, but outside what the source can report (or overflowed)
  kGated,    // the sensor reports its "unavailable" sentinel (-256 C)
};
std::string_view ToString(ReadError e);
ReadError ErrorFromErrno(int err);

struct CollectOptions {
  // Load NVIDIA's NVML at run time for discrete GPUs. Only meaningful when the
  // root is the live system ("/").
  bool nvml = false;
};

// Keeps channel ids stable across rediscoveries: a channel is identified by
// its key (kind/name/field). Ids are dense and never reused.
class ChannelTable {
 public:
  void BeginPass();
  // Declares (or re-declares) a channel and returns its id. A key already
  // declared in this pass gets a "#2", "#3"... suffix on its name.
  ChannelId Add(Channel c);
  std::vector<Channel>& channels() { return channels_; }
  const std::vector<Channel>& channels() const { return channels_; }
  // Whether the channel was declared by the latest pass.
  bool Live(ChannelId id) const { return id < live_.size() && live_[id]; }

 private:
  std::vector<Channel> channels_;
  std::vector<bool> live_;
  std::unordered_map<std::string, ChannelId> by_key_;
};

// Discovery-time reads through `fs`: an integer file, and the first line of a
// text file, trimmed (nullopt when absent or empty).
std::optional<int64_t> ReadInt(SysFs& fs, const std::string& path);
std::optional<std::string> ReadLine(SysFs& fs, const std::string& path);

class DiscoverContext {
 public:
  DiscoverContext(SysFs& fs, ChannelTable& table, BoardInfo& board, const CollectOptions& options,
                  std::vector<FileId>& opened,
                  std::function<void(const std::string&)> warn = nullptr)
      : fs_(fs),
        table_(table),
        board_(board),
        options_(options),
        opened_(opened),
        warn_(std::move(warn)) {}

  SysFs& fs() { return fs_; }
  BoardInfo& board() { return board_; }
  const CollectOptions& options() const { return options_; }

  // Declares a channel; a kNone unit is filled in from the field.
  ChannelId Add(Channel c);
  // Opens a value file for the lifetime of this discovery (closed by the next
  // one). Returns < 0 (-errno) when it cannot be opened.
  FileId Open(const std::string& path);

  // Discovery-time reads (not for Sample()).
  std::optional<int64_t> ReadInt(const std::string& path);
  // The first line of a text file, trimmed; nullopt when absent or empty.
  std::optional<std::string> ReadLine(const std::string& path);
  // Logs a discovery-time problem (a source cut short, say), once per discovery.
  void Warn(const std::string& message) {
    if (warn_) warn_(message);
  }
  // Where Add() also records the ids it returns (nullptr: nowhere); the
  // collection learns so which channels a collector fills.
  void RecordAddedTo(std::vector<ChannelId>* added) { added_ = added; }

 private:
  SysFs& fs_;
  ChannelTable& table_;
  BoardInfo& board_;
  const CollectOptions& options_;
  std::vector<FileId>& opened_;
  std::function<void(const std::string&)> warn_;
  std::vector<ChannelId>* added_ = nullptr;
};

class SampleContext {
 public:
  SampleContext(SysFs& fs, int64_t boottime_ns, std::vector<Value>& values,
                std::vector<ReadError>& failures, std::vector<ChannelId>& failed)
      : fs_(fs), now_ns_(boottime_ns), values_(values), failures_(failures), failed_(failed) {}

  SysFs& fs() { return fs_; }
  int64_t boottime_ns() const { return now_ns_; }

  void Set(ChannelId id, int64_t v) {
    if (id < values_.size()) values_[id] = v;
  }
  // This tick's value of a channel filled earlier in this tick (absent when
  // it failed or was not read yet).
  Value Get(ChannelId id) const { return id < values_.size() ? values_[id] : std::nullopt; }
  // Marks the channel absent for this tick and counts the error.
  void Fail(ChannelId id, ReadError e);
  // Reads a value file into a scratch buffer (valid until the next Read).
  // Errors are reported against `id` and yield nullopt.
  std::optional<std::string_view> Read(FileId file, ChannelId id);
  // Reads one integer. Errors are reported against `id`.
  std::optional<int64_t> ReadInt(FileId file, ChannelId id);
  // Reads an integer, multiplies by num and divides by den (overflow: kRange),
  // and stores it. Returns the stored value.
  std::optional<int64_t> ReadScaled(FileId file, ChannelId id, int64_t num, int64_t den,
                                    int64_t lo = std::numeric_limits<int64_t>::min(),
                                    int64_t hi = std::numeric_limits<int64_t>::max());
  // Why `id` is absent this tick (meaningful after a Fail on it).
  ReadError failure(ChannelId id) const {
    return id < failures_.size() ? failures_[id] : ReadError::kMissing;
  }
  // Gives channel `to` what channel `from` got this tick (its value, or its
  // failure): one read of a file two channels show (cores of one cpufreq
  // policy). Call after `from` was read this tick.
  void Copy(ChannelId from, ChannelId to);
  // Asks for a rediscovery before the next tick (a device vanished).
  void RequestRediscovery() { rediscover_ = true; }
  bool rediscovery_requested() const { return rediscover_; }

 private:
  SysFs& fs_;
  int64_t now_ns_;
  std::vector<Value>& values_;
  std::vector<ReadError>& failures_;
  std::vector<ChannelId>& failed_;
  char buf_[4096];
  bool rediscover_ = false;
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  // Forgets any previous discovery and declares the channels found now.
  virtual void Discover(DiscoverContext& ctx) = 0;
  // Fills this tick's values of the channels declared by Discover().
  virtual void Sample(SampleContext& ctx) = 0;
  // Directories whose listing changes when this collector's hardware appears
  // or vanishes; the sampler checks them every few seconds.
  virtual std::vector<std::string> WatchedDirs() const { return {}; }
  // True for collectors of instantaneous rail power: the sampler also runs
  // them between frames, at the energy rate, to integrate energy.
  virtual bool FastPath() const { return false; }
  // True while a collector that found nothing to read still has work each
  // tick: a source it waits for (a driver that loads after the daemon).
  virtual bool Waiting() const { return false; }
};

// A value file opened by Discover() and the channel it feeds (file < 0: none).
struct ChannelFile {
  FileId file = -1;
  ChannelId channel = 0;
};

// `base` (same kind, name, device and attributes) for another field.
Channel WithField(const Channel& base, Field field);

// A file whose integer value, times num/den, is a channel's value. A raw
// value outside [lo, hi] is out of range (absent, counted).
struct ScaledFile {
  FileId file = -1;
  ChannelId channel = 0;
  int64_t num = 1;
  int64_t den = 1;
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
};

// Reads each scaled file into its channel.
void SampleScaled(SampleContext& ctx, const std::vector<ScaledFile>& files);

// Opens `path` as a scaled value of a new channel; adds it to `out` when the
// file opens. Returns the channel id, or nullopt when the file is absent.
std::optional<ChannelId> AddScaled(DiscoverContext& ctx, Channel c, const std::string& path,
                                   int64_t num, int64_t den, std::vector<ScaledFile>& out);

}  // namespace edgemon
