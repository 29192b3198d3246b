// INA3221 power monitors through NVIDIA's `ina3221x` iio driver (JetPack 4,
// L4T R32): /sys/bus/i2c/drivers/ina3221x/<bus-addr>/iio:deviceN/, or any
// /sys/bus/iio/devices/iio:deviceN whose `name` is "ina3221x".
// For each channel K with a rail_name_K that is not "NC":
//   in_powerK_input   mW  -> rail <name> power (read, not derived)
//   in_voltageK_input mV  -> rail <name> voltage
//   in_currentK_input mA  -> rail <name> current
//   crit_current_limit_K / warn_current_limit_K ("32760 ma") -> current crit / max
//   crit_power_limit_K ("... mw")                             -> power crit
// The *_trigger_input files are not used: they read 0 while the chip is in
// triggered mode. Rail parents are set by AssignRailHierarchy.
#include <algorithm>
#include <cctype>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

// NVIDIA's driver numbers channels 0..2; look a little further in case a
// variant exposes more, the files tell which exist.
constexpr int kMaxChannels = 8;

// "32760 ma" -> 32760 when the unit is the expected one (or absent).
std::optional<int64_t> Limit(const std::optional<std::string>& text, std::string_view unit) {
  if (!text) return std::nullopt;
  auto v = parse::LeadingInt(*text);
  if (!v || *v <= 0) return std::nullopt;
  std::string_view s = parse::Trim(*text);
  auto space = s.find_first_of(" \t");
  std::string rest =
      space == std::string_view::npos ? "" : parse::Lower(parse::Trim(s.substr(space)));
  if (!rest.empty() && rest != unit) return std::nullopt;
  return v;
}

struct IioRail {
  FileId power_file = -1;
  FileId volt_file = -1;
  FileId curr_file = -1;
  ChannelId power = 0;
  ChannelId volt = 0;
  ChannelId curr = 0;
};

class Ina3221IioCollector final : public Collector {
 public:
  std::string_view Name() const override { return "ina3221x"; }
  // Instantaneous rail power: also sampled between frames for energy.
  bool FastPath() const override { return true; }

  std::vector<std::string> WatchedDirs() const override {
    return {SysPath("bus/i2c/drivers/ina3221x"), SysPath("bus/iio/devices")};
  }

  void Discover(DiscoverContext& ctx) override {
    rails_.clear();
    for (const auto& d : FindIna3221IioDevices(ctx.fs())) AddDevice(ctx, d);
  }

  void Sample(SampleContext& ctx) override {
    for (const auto& r : rails_) {
      if (r.power_file >= 0) {
        if (auto mw = ctx.ReadInt(r.power_file, r.power)) ctx.Set(r.power, *mw);
      }
      if (r.volt_file >= 0) {
        ctx.ReadScaled(r.volt_file, r.volt, 1, 1, -kInaMaxBusMv, kInaMaxBusMv);
      }
      if (r.curr_file >= 0) {
        if (auto ma = ctx.ReadInt(r.curr_file, r.curr)) ctx.Set(r.curr, *ma);
      }
    }
  }

 private:
  void AddDevice(DiscoverContext& ctx, const InaDeviceDir& d) {
    const std::string device = "ina3221x " + d.bus_addr;
    for (int k = 0; k < kMaxChannels; ++k) {
      const std::string n = std::to_string(k);
      auto label = ctx.ReadLine(JoinPath(d.dir, "rail_name_" + n));
      if (!label || parse::IsUnusedInaLabel(*label)) continue;

      Channel base;
      base.kind = Kind::kRail;
      base.name = *label;
      base.device = device;
      base.attrs.emplace_back("chip", "ina3221x");
      base.attrs.emplace_back("channel", n);

      IioRail r;
      r.power_file = ctx.Open(JoinPath(d.dir, "in_power" + n + "_input"));
      r.volt_file = ctx.Open(JoinPath(d.dir, "in_voltage" + n + "_input"));
      r.curr_file = ctx.Open(JoinPath(d.dir, "in_current" + n + "_input"));
      if (r.power_file < 0 && r.volt_file < 0 && r.curr_file < 0) continue;
      if (r.power_file >= 0) {
        Channel c = base;
        c.field = Field::kPower;
        c.crit = Limit(ctx.fs().ReadText(JoinPath(d.dir, "crit_power_limit_" + n), 256), "mw");
        r.power = ctx.Add(std::move(c));
      }
      if (r.volt_file >= 0) {
        Channel c = base;
        c.field = Field::kVoltage;
        r.volt = ctx.Add(std::move(c));
      }
      if (r.curr_file >= 0) {
        Channel c = base;
        c.field = Field::kCurrent;
        c.crit = Limit(ctx.fs().ReadText(JoinPath(d.dir, "crit_current_limit_" + n), 256), "ma");
        c.max = Limit(ctx.fs().ReadText(JoinPath(d.dir, "warn_current_limit_" + n), 256), "ma");
        r.curr = ctx.Add(std::move(c));
      }
      rails_.push_back(r);
    }
  }

  std::vector<IioRail> rails_;
};

}  // namespace

std::vector<InaDeviceDir> FindIna3221IioDevices(SysFs& fs) {
  std::vector<InaDeviceDir> out;
  auto add = [&](const std::string& dir, std::string bus_addr) {
    if (auto* d = AddInaDeviceDir(fs, out, dir)) d->bus_addr = std::move(bus_addr);
  };
  const std::string driver = SysPath("bus/i2c/drivers/ina3221x");
  for (const auto& dev : fs.List(driver)) {
    const std::string dev_dir = JoinPath(driver, dev);
    for (const auto& e : fs.List(dev_dir)) {
      if (e.rfind("iio:device", 0) == 0) add(JoinPath(dev_dir, e), dev);
    }
  }
  // Without the driver directory (or with a differently bound device):
  // the iio bus, identified by the device's name.
  const std::string iio = SysPath("bus/iio/devices");
  for (const auto& e : fs.List(iio)) {
    if (e.rfind("iio:device", 0) != 0) continue;
    const std::string dir = JoinPath(iio, e);
    auto name = fs.ReadText(JoinPath(dir, "name"), 256);
    if (!name || parse::Trim(*name) != "ina3221x") continue;
    // /sys/devices/.../i2c-6/6-0040/iio:device0: the parent is the i2c client.
    std::string bus_addr = e;
    if (auto r = fs.Resolve(dir)) bus_addr = std::string(BaseName(DirName(*r)));
    add(dir, bus_addr);
  }
  SortInaDeviceDirs(out);
  return out;
}

std::unique_ptr<Collector> MakeIna3221IioCollector() {
  return std::make_unique<Ina3221IioCollector>();
}

}  // namespace edgemon
