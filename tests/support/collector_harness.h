// Running collectors in tests: one collector through a Collection, as the
// daemon runs it (Harness: a tick of one second of fake boottime per
// Sample(); CollectorRun: at the boottimes a test gives, every channel it
// reads declared), and the small pieces the collector tests share.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/parse.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon::testing {

constexpr int64_t kSecond = 1'000'000'000;

// A collector set of one, as Collection takes it.
inline std::vector<std::unique_ptr<Collector>> One(std::unique_ptr<Collector> c) {
  std::vector<std::unique_ptr<Collector>> v;
  v.push_back(std::move(c));
  return v;
}

// The value of a channel in `f`; a channel `c` does not declare fails the test.
inline Value Get(const Collection& c, const Frame& f, Kind kind, std::string_view name,
                 Field field) {
  const Channel* ch = c.inventory().Find(kind, name, field);
  if (ch == nullptr) {
    ADD_FAILURE() << "no channel " << ToString(kind) << "/" << name << "/" << ToString(field);
    return std::nullopt;
  }
  return f.Get(ch->id);
}

// A value file's text as sysfs shows it: the decimal number and a newline.
inline std::string Line(int64_t v) {
  return std::to_string(v) + "\n";
}

// The integer in a file of a fixture tree (read through `fs`); -1 and a
// failure when it is missing or no integer.
inline int64_t FixtureInt(SysFs& fs, const std::string& path) {
  auto text = fs.ReadText(path, 256);
  EXPECT_TRUE(text.has_value()) << path;
  auto v = text ? parse::Int(*text) : std::nullopt;
  EXPECT_TRUE(v.has_value()) << path;
  return v.value_or(-1);
}

// An hwmon chip below `device_dir` (its hwmon/<index> dir with `name` and a
// `device` link), listed as /sys/class/hwmon/<index>; returns its dir.
inline std::string AddHwmonChip(TempTree& t, const std::string& index,
                                const std::string& device_dir, const std::string& name) {
  const std::string dir = device_dir + "/hwmon/" + index;
  t.Write(dir + "/name", name + "\n");
  t.LinkRelative(dir + "/device", device_dir);
  t.LinkRelative("/sys/class/hwmon/" + index, dir);
  return dir;
}

// Thermal zone `n` as the kernel lays it out: the device dir below
// /sys/devices/virtual/thermal and its /sys/class/thermal link.
inline void WriteThermalZone(TempTree& t, int n, std::string_view type, std::string_view temp) {
  std::string dir = "/sys/devices/virtual/thermal/thermal_zone" + std::to_string(n);
  t.Write(dir + "/type", std::string(type) + "\n");
  t.Write(dir + "/temp", temp);
  t.Link("/sys/class/thermal/thermal_zone" + std::to_string(n),
         "../../devices/virtual/thermal/thermal_zone" + std::to_string(n));
}

inline std::vector<std::string> Names(const std::vector<Channel>& channels) {
  std::vector<std::string> out;
  for (const auto& c : channels) out.push_back(c.name);
  return out;
}

inline bool HasName(const std::vector<Channel>& channels, std::string_view name) {
  for (const auto& c : channels) {
    if (c.name == name) return true;
  }
  return false;
}

// Runs one collector through a Collection, as the daemon does.
class Harness {
 public:
  Harness(SysFs& fs, std::unique_ptr<Collector> collector)
      : collection_(fs, One(std::move(collector)), CollectOptions{}, nullptr) {
    collection_.Discover();
  }

  Collection& collection() { return collection_; }
  const Inventory& inventory() const { return collection_.inventory(); }
  const Channel* Find(Kind kind, std::string_view name, Field field) const {
    return inventory().Find(kind, name, field);
  }
  void Sample() {
    now_ns_ += kSecond;
    collection_.Sample(now_ns_, frame_);
  }
  // The latest value of a channel; nullopt when absent or not declared.
  Value Get(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    return c == nullptr ? std::nullopt : frame_.Get(c->id);
  }
  uint64_t Errors(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    return c == nullptr ? 0 : collection_.error_counts().at(c->id);
  }

 private:
  Collection collection_;
  Frame frame_;
  int64_t now_ns_ = 0;
};

// Runs one collector through a Collection, sampled at the boottimes the test
// gives; a channel the test reads must have been declared.
class CollectorRun {
 public:
  CollectorRun(SysFs& fs, std::unique_ptr<Collector> collector)
      : collection_(fs, One(std::move(collector)), CollectOptions{}, nullptr) {
    collection_.Discover();
  }
  void Sample(int64_t t_ns = kSecond) { collection_.Sample(t_ns, frame_); }
  const Channel* Find(Kind kind, std::string_view name, Field field) const {
    return collection_.inventory().Find(kind, name, field);
  }
  // The value of a channel that must exist.
  Value Get(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    EXPECT_NE(c, nullptr) << name << " " << ToString(field);
    return c ? frame_.Get(c->id) : std::nullopt;
  }
  Value Rail(std::string_view name, Field field) const { return Get(Kind::kRail, name, field); }
  Value Temp(std::string_view name) const { return Get(Kind::kThermal, name, Field::kTemp); }
  uint64_t Errors(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    return c && c->id < collection_.error_counts().size() ? collection_.error_counts()[c->id] : 0;
  }
  // A rail's.
  uint64_t Errors(std::string_view name, Field field) const {
    return Errors(Kind::kRail, name, field);
  }
  // The collector's own channels, without the energy counters the
  // Collection's integrator adds for every rail power channel.
  std::vector<Channel> channels() const {
    std::vector<Channel> out;
    for (const auto& c : collection_.inventory().channels) {
      if (!(c.field == Field::kEnergy && c.Has(kFlagDerived))) out.push_back(c);
    }
    return out;
  }
  const std::vector<Channel>& all_channels() const { return collection_.inventory().channels; }
  Collection& collection() { return collection_; }

 private:
  Collection collection_;
  Frame frame_;
};

}  // namespace edgemon::testing
