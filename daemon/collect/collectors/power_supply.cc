// Batteries and external supplies: /sys/class/power_supply/<NAME>/.
//
//   type Battery (or UPS): rail <NAME>
//     voltage_now uV -> voltage mV
//     current_now uA -> current mA (sign as the kernel gives it: some
//                       batteries report a negative current while discharging)
//     power_now   uW -> power mW; without power_now, V x I (kFlagDerived)
//   type Mains / USB*: rail <NAME> field online (0/1)
// Supplies with scope "Device" (a wireless mouse's battery) are not the
// machine's power and are skipped. A battery whose `present` reads 0 has no
// values. Only the supply's own files are read: its `subsystem` and `device`
// links lead back into the class directory (a cycle) and are never followed.
#include <cctype>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

// Text attributes end up in protobuf strings (UTF-8 only): keep printable
// ASCII; some batteries pad their model name with junk bytes.
std::string Printable(std::string_view s) {
  std::string out;
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    if (u >= 0x20 && u < 0x7f) out += ch;
  }
  return std::string(parse::Trim(out));
}

struct Battery {
  FileId present_file = -1;
  FileId volt_file = -1;   // uV
  FileId curr_file = -1;   // uA
  FileId power_file = -1;  // uW
  ChannelId volt = 0;
  ChannelId curr = 0;
  ChannelId power = 0;
  bool has_volt = false;
  bool has_curr = false;
  bool has_power = false;
  bool power_derived = false;
};

struct Adapter {
  FileId online_file = -1;
  ChannelId online = 0;
};

class PowerSupplyCollector final : public Collector {
 public:
  std::string_view Name() const override { return "power_supply"; }
  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/power_supply")}; }

  void Discover(DiscoverContext& ctx) override {
    batteries_.clear();
    adapters_.clear();
    const std::string klass = SysPath("class/power_supply");
    for (const auto& name : ctx.fs().List(klass)) {
      const std::string dir = JoinPath(klass, name);
      if (!ctx.fs().IsDir(dir)) continue;
      auto type = ctx.ReadLine(JoinPath(dir, "type"));
      if (!type) continue;
      auto scope = ctx.ReadLine(JoinPath(dir, "scope"));
      if (scope && *scope == "Device") continue;
      if (*type == "Battery" || *type == "UPS") {
        AddBattery(ctx, dir, name, *type);
      } else if (*type == "Mains" || type->rfind("USB", 0) == 0) {
        AddAdapter(ctx, dir, name, *type);
      }
    }
  }

  void Sample(SampleContext& ctx) override {
    for (const auto& b : batteries_) SampleBattery(ctx, b);
    for (const auto& a : adapters_) {
      auto v = ctx.ReadInt(a.online_file, a.online);
      if (!v) continue;
      // USB-C supplies report 2 for "online, programmable".
      if (*v < 0) {
        ctx.Fail(a.online, ReadError::kRange);
      } else {
        ctx.Set(a.online, *v > 0 ? 1 : 0);
      }
    }
  }

 private:
  static Channel Base(const std::string& name, std::string_view type) {
    Channel c;
    c.kind = Kind::kRail;
    c.name = name;
    c.device = "power_supply " + name;
    c.attrs.emplace_back("type", std::string(type));
    return c;
  }

  void AddBattery(DiscoverContext& ctx, const std::string& dir, const std::string& name,
                  std::string_view type) {
    Channel base = Base(name, type);
    for (const char* key : {"status", "technology", "manufacturer", "model_name"}) {
      if (auto text = ctx.fs().ReadText(JoinPath(dir, key), 256)) {
        std::string v = Printable(std::string_view(*text).substr(0, text->find('\n')));
        if (!v.empty()) base.attrs.emplace_back(key, v);
      }
    }
    Battery b;
    b.volt_file = ctx.Open(JoinPath(dir, "voltage_now"));
    b.curr_file = ctx.Open(JoinPath(dir, "current_now"));
    b.power_file = ctx.Open(JoinPath(dir, "power_now"));
    if (b.volt_file >= 0) {
      Channel c = base;
      c.field = Field::kVoltage;
      if (auto min = ctx.ReadInt(JoinPath(dir, "voltage_min_design")); min && *min > 0) {
        c.min = *min / 1000;
      }
      b.volt = ctx.Add(std::move(c));
      b.has_volt = true;
    }
    if (b.curr_file >= 0) {
      Channel c = base;
      c.field = Field::kCurrent;
      b.curr = ctx.Add(std::move(c));
      b.has_curr = true;
    }
    if (b.power_file >= 0 || (b.has_volt && b.has_curr)) {
      Channel c = base;
      c.field = Field::kPower;
      b.power_derived = b.power_file < 0;
      if (b.power_derived) c.flags |= kFlagDerived;
      b.power = ctx.Add(std::move(c));
      b.has_power = true;
    }
    if (!b.has_volt && !b.has_curr && !b.has_power) return;
    b.present_file = ctx.Open(JoinPath(dir, "present"));
    batteries_.push_back(b);
  }

  void AddAdapter(DiscoverContext& ctx, const std::string& dir, const std::string& name,
                  std::string_view type) {
    Adapter a;
    a.online_file = ctx.Open(JoinPath(dir, "online"));
    if (a.online_file < 0) return;
    Channel c = Base(name, type);
    c.field = Field::kOnline;
    a.online = ctx.Add(std::move(c));
    adapters_.push_back(a);
  }

  static void SampleBattery(SampleContext& ctx, const Battery& b) {
    if (b.present_file >= 0) {
      // A removed battery keeps its directory on some laptops; its values
      // are then not measurements. An unreadable `present` is no verdict.
      char buf[32];
      ssize_t n = ctx.fs().Read(b.present_file, buf, sizeof buf);
      if (n > 0) {
        auto present = parse::Int(std::string_view(buf, static_cast<size_t>(n)));
        if (present && *present == 0) return;
      }
    }
    std::optional<int64_t> uv;
    std::optional<int64_t> ua;
    if (b.has_volt) {
      uv = ctx.ReadInt(b.volt_file, b.volt);
      if (uv) ctx.Set(b.volt, *uv / 1000);
    }
    if (b.has_curr) {
      ua = ctx.ReadInt(b.curr_file, b.curr);
      if (ua) ctx.Set(b.curr, *ua / 1000);
    }
    if (!b.has_power) return;
    if (!b.power_derived) {
      ctx.ReadScaled(b.power_file, b.power, 1, 1000);
      return;
    }
    if (!uv || !ua) return;  // the failed input is counted on its own channel
    int64_t pw;              // pW = uV x uA
    if (__builtin_mul_overflow(*uv, *ua, &pw)) {
      ctx.Fail(b.power, ReadError::kRange);
      return;
    }
    ctx.Set(b.power, pw / 1'000'000'000);
  }

  std::vector<Battery> batteries_;
  std::vector<Adapter> adapters_;
};

}  // namespace

std::unique_ptr<Collector> MakePowerSupplyCollector() {
  return std::make_unique<PowerSupplyCollector>();
}

}  // namespace edgemon
