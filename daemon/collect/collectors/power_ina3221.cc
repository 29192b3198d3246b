// INA3221 power monitors through the upstream hwmon driver (JetPack 5+).
//
// Chips are found by their hwmon `name` ("ina3221") under /sys/class/hwmon,
// and under /sys/bus/i2c/drivers/ina3221/<bus-addr>/hwmon/hwmonN (the hwmon
// index is not stable across boots, so it is never used as an identity).
// For each of the three channels K with a DT label that is not "NC":
//   inK_input   bus voltage, mV          -> rail <label> voltage
//   currK_input current, mA              -> rail <label> current
//   V x I / 1000                         -> rail <label> power (derived)
//   currK_max / currK_crit, mA           -> current limits
// in4..6 (shunt voltages) and in7 ("sum of shunt voltages") are not rails.
// A channel disabled with inK_enable = 0 is skipped. Rail parents and the
// input-rail flag are set by AssignRailHierarchy after discovery.
#include <algorithm>
#include <cctype>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

constexpr int kChannels = 3;
// Shunt register: +-163.8 mV; even a 0.2 mOhm shunt stays far below 1 kA.
constexpr int64_t kMaxCurrentMa = 1'000'000;

// L4T device trees label unused channels "NC" (shown as "(NC)" by some tools).
struct HwmonRail {
  FileId volt_file = -1;
  FileId curr_file = -1;
  ChannelId volt = 0;
  ChannelId curr = 0;
  ChannelId power = 0;
  bool has_power = false;
};

// The chip's i2c client ("1-0040"): its device link, else the directory
// above .../<bus-addr>/hwmon/hwmonN, else `fallback`.
std::string BusAddr(SysFs& fs, const std::string& hwmon_dir, const std::string& resolved,
                    std::string_view fallback) {
  if (auto dev = fs.Resolve(JoinPath(hwmon_dir, "device"))) return std::string(BaseName(*dev));
  // .../1-0040/hwmon/hwmonN without a device link.
  std::string_view parent = DirName(resolved);
  if (BaseName(parent) == "hwmon" && parent != SysPath("class/hwmon")) {
    return std::string(BaseName(DirName(parent)));
  }
  return std::string(fallback);
}

class Ina3221Collector final : public Collector {
 public:
  std::string_view Name() const override { return "ina3221"; }
  // Instantaneous rail power: also sampled between frames for energy.
  bool FastPath() const override { return true; }

  std::vector<std::string> WatchedDirs() const override {
    return {SysPath("class/hwmon"), SysPath("bus/i2c/drivers/ina3221")};
  }

  void Discover(DiscoverContext& ctx) override {
    rails_.clear();
    for (const auto& chip : FindIna3221Chips(ctx.fs())) AddChip(ctx, chip);
  }

  void Sample(SampleContext& ctx) override {
    for (const auto& r : rails_) {
      std::optional<int64_t> mv, ma;
      if (r.volt_file >= 0) {
        mv = ctx.ReadScaled(r.volt_file, r.volt, 1, 1, -kInaMaxBusMv, kInaMaxBusMv);
      }
      if (r.curr_file >= 0) {
        ma = ctx.ReadScaled(r.curr_file, r.curr, 1, 1, -kMaxCurrentMa, kMaxCurrentMa);
      }
      // Power only from two good reads; a failed one is counted on its own channel.
      if (r.has_power && mv && ma) {
        int64_t uw;
        if (__builtin_mul_overflow(*mv, *ma, &uw)) {
          ctx.Fail(r.power, ReadError::kRange);
        } else {
          ctx.Set(r.power, uw / 1000);
        }
      }
    }
  }

 private:
  void AddChip(DiscoverContext& ctx, const InaDeviceDir& chip) {
    const std::string device = "ina3221 " + chip.bus_addr;
    for (int k = 1; k <= kChannels; ++k) {
      const std::string n = std::to_string(k);
      auto label = ctx.ReadLine(JoinPath(chip.dir, "in" + n + "_label"));
      if (!label || parse::IsUnusedInaLabel(*label)) continue;
      auto enable = ctx.ReadInt(JoinPath(chip.dir, "in" + n + "_enable"));
      if (enable && *enable == 0) continue;

      Channel base;
      base.kind = Kind::kRail;
      base.name = *label;
      base.device = device;
      base.attrs.emplace_back("chip", "ina3221");
      base.attrs.emplace_back("channel", n);
      base.attrs.emplace_back("hwmon", std::string(BaseName(chip.dir)));
      if (auto shunt = ctx.ReadInt(JoinPath(chip.dir, "shunt" + n + "_resistor"))) {
        if (*shunt > 0) base.attrs.emplace_back("shunt_resistor_uohm", std::to_string(*shunt));
      }

      HwmonRail r;
      r.volt_file = ctx.Open(JoinPath(chip.dir, "in" + n + "_input"));
      r.curr_file = ctx.Open(JoinPath(chip.dir, "curr" + n + "_input"));
      if (r.volt_file < 0 && r.curr_file < 0) continue;
      if (r.volt_file >= 0) {
        Channel c = base;
        c.field = Field::kVoltage;
        c.attrs.emplace_back("sensor", "in" + n);
        r.volt = ctx.Add(std::move(c));
      }
      if (r.curr_file >= 0) {
        Channel c = base;
        c.field = Field::kCurrent;
        c.attrs.emplace_back("sensor", "curr" + n);
        if (auto max = ctx.ReadInt(JoinPath(chip.dir, "curr" + n + "_max")); max && *max > 0) {
          c.max = *max;
        }
        if (auto crit = ctx.ReadInt(JoinPath(chip.dir, "curr" + n + "_crit")); crit && *crit > 0) {
          c.crit = *crit;
        }
        r.curr = ctx.Add(std::move(c));
      }
      if (r.volt_file >= 0 && r.curr_file >= 0) {
        Channel c = base;
        c.field = Field::kPower;
        c.flags |= kFlagDerived;
        r.power = ctx.Add(std::move(c));
        r.has_power = true;
      }
      rails_.push_back(r);
    }
  }

  std::vector<HwmonRail> rails_;
};

}  // namespace

InaDeviceDir* AddInaDeviceDir(SysFs& fs, std::vector<InaDeviceDir>& dirs, const std::string& dir) {
  if (!fs.IsDir(dir)) return nullptr;
  auto resolved = fs.Resolve(dir).value_or(dir);
  for (const auto& d : dirs) {
    if (d.resolved == resolved) return nullptr;
  }
  dirs.push_back({dir, std::move(resolved), ""});
  return &dirs.back();
}

void SortInaDeviceDirs(std::vector<InaDeviceDir>& dirs) {
  std::sort(dirs.begin(), dirs.end(), [](const InaDeviceDir& a, const InaDeviceDir& b) {
    return a.bus_addr != b.bus_addr ? a.bus_addr < b.bus_addr : a.resolved < b.resolved;
  });
}

std::vector<InaDeviceDir> FindIna3221Chips(SysFs& fs) {
  std::vector<InaDeviceDir> chips;
  auto add = [&](const std::string& dir, std::string_view fallback_addr) {
    if (auto* d = AddInaDeviceDir(fs, chips, dir)) {
      d->bus_addr = BusAddr(fs, dir, d->resolved, fallback_addr);
    }
  };
  const std::string klass = SysPath("class/hwmon");
  for (const auto& entry : fs.List(klass)) {
    const std::string dir = JoinPath(klass, entry);
    auto name = fs.ReadText(JoinPath(dir, "name"), 256);
    if (!name || parse::Trim(*name) != "ina3221") continue;
    add(dir, entry);
  }
  const std::string driver = SysPath("bus/i2c/drivers/ina3221");
  for (const auto& dev : fs.List(driver)) {
    const std::string hwmon = JoinPath(JoinPath(driver, dev), "hwmon");
    if (!fs.IsDir(hwmon)) continue;  // bind, unbind, uevent, module
    for (const auto& h : fs.List(hwmon)) {
      if (h.rfind("hwmon", 0) != 0) continue;
      add(JoinPath(hwmon, h), dev);
    }
  }
  SortInaDeviceDirs(chips);
  return chips;
}

std::unique_ptr<Collector> MakeIna3221Collector() {
  return std::make_unique<Ina3221Collector>();
}

}  // namespace edgemon
