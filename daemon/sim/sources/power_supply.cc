// power_supply batteries: current_now = P / V (uA, sign of the fixture
// kept); power_now when present; charge_now/energy_now (and capacity) move by
// the energy when the status is Charging/Discharging.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

struct PowerSupplySource final : SimSource {
  struct Battery {
    int rail = 0;
    double voltage_uv = 0;
    int sign = 1;
    int direction = 0;  // +1 charging, -1 discharging, 0 neither
    int curr_file = -1;
    int power_file = -1;
    int charge_file = -1;  // uAh
    int energy_file = -1;  // uWh
    int capacity_file = -1;
    double charge0 = 0, charge_full = 0;
    double energy0 = 0, energy_full = 0;
  };
  std::vector<Battery> batteries;

  void Discover(SimTree& tree) override {
    const std::string klass = SysPath("class/power_supply");
    for (const auto& name : tree.fs.List(klass)) {
      const std::string dir = JoinPath(klass, name);
      auto type = tree.ReadLine(JoinPath(dir, "type"));
      if (!type || (*type != "Battery" && *type != "UPS")) continue;
      if (tree.ReadLine(JoinPath(dir, "scope")).value_or("") == "Device") continue;
      auto uv = tree.ReadInt(JoinPath(dir, "voltage_now"));
      auto ua = tree.ReadInt(JoinPath(dir, "current_now"));
      auto uw = tree.ReadInt(JoinPath(dir, "power_now"));
      if (!uv || *uv <= 0 || (!ua && !uw)) continue;
      Battery b;
      b.voltage_uv = static_cast<double>(*uv);
      b.sign = ua && *ua < 0 ? -1 : 1;
      double base_mw = uw ? static_cast<double>(std::llabs(*uw)) / 1000
                          : b.voltage_uv * static_cast<double>(std::llabs(*ua)) / 1e9;
      if (ua) b.curr_file = tree.OpenValue(JoinPath(dir, "current_now"));
      if (uw) b.power_file = tree.OpenValue(JoinPath(dir, "power_now"));
      if (b.curr_file < 0 && b.power_file < 0) continue;
      const std::string status = tree.ReadLine(JoinPath(dir, "status")).value_or("");
      b.direction = status == "Charging" ? 1 : status == "Discharging" ? -1 : 0;
      if (b.direction != 0) {
        auto charge = tree.ReadInt(JoinPath(dir, "charge_now"));
        auto charge_full = tree.ReadInt(JoinPath(dir, "charge_full"));
        auto energy = tree.ReadInt(JoinPath(dir, "energy_now"));
        auto energy_full = tree.ReadInt(JoinPath(dir, "energy_full"));
        if (charge && charge_full && *charge_full > 0) {
          b.charge_file = tree.OpenValue(JoinPath(dir, "charge_now"));
          b.charge0 = static_cast<double>(*charge);
          b.charge_full = static_cast<double>(*charge_full);
        }
        if (energy && energy_full && *energy_full > 0) {
          b.energy_file = tree.OpenValue(JoinPath(dir, "energy_now"));
          b.energy0 = static_cast<double>(*energy);
          b.energy_full = static_cast<double>(*energy_full);
        }
        if (b.charge_file >= 0 || b.energy_file >= 0) {
          b.capacity_file = tree.OpenValue(JoinPath(dir, "capacity"));
        }
      }
      b.rail =
          tree.AddRail(name, "power_supply", "power_supply " + name, base_mw, b.voltage_uv / 1000);
      batteries.push_back(b);
    }
  }

  void Step(SimTree& tree, double t) override {
    for (const auto& b : batteries) {
      const double mw = tree.PowerAt(b.rail, t);
      tree.writer.PutInt(b.curr_file, b.sign * Round(mw * 1e9 / b.voltage_uv));
      tree.writer.PutInt(b.power_file, Round(mw * 1000));
      if (b.direction == 0) continue;
      const double mj = tree.EnergyTo(b.rail, t);
      double capacity = -1;
      if (b.charge_file >= 0) {
        // mJ / mV = coulomb; 1 uAh = 3600 uC.
        double uah = Clamp(b.charge0 + b.direction * mj / (b.voltage_uv / 1000) * 1e6 / 3600, 0,
                           b.charge_full);
        tree.writer.PutInt(b.charge_file, Round(uah));
        capacity = 100 * uah / b.charge_full;
      }
      if (b.energy_file >= 0) {
        double uwh = Clamp(b.energy0 + b.direction * mj / 3.6, 0, b.energy_full);  // 1 uWh = 3.6 mJ
        tree.writer.PutInt(b.energy_file, Round(uwh));
        if (capacity < 0) capacity = 100 * uwh / b.energy_full;
      }
      if (capacity >= 0) tree.writer.PutInt(b.capacity_file, Round(capacity));
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakePowerSupplySource() {
  return std::make_unique<PowerSupplySource>();
}

}  // namespace edgemon::sim
