// Thermal zones: temp along a slow sine (period 4 x period_s); gated zones
// (-256000 or less) and PMIC* zones keep their value.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

struct ThermalSource final : SimSource {
  TempFiles temps;

  void Discover(SimTree& tree) override {
    const std::string thermal = SysPath("class/thermal");
    for (const auto& zone : tree.fs.List(thermal)) {
      if (!zone.starts_with("thermal_zone")) continue;
      const std::string dir = JoinPath(thermal, zone);
      auto type = tree.ReadLine(JoinPath(dir, "type"));
      auto mc = tree.ReadInt(JoinPath(dir, "temp"));
      // Gated zones stay gated; PMIC-Die is a constant on the real boards.
      if (!type || !mc || *mc <= kGatedMc || *mc >= kImplausibleMc) continue;
      if (type->find("PMIC") != std::string::npos) continue;
      temps.Add(tree, JoinPath(dir, "temp"), zone, *type, *mc);
    }
  }

  void Step(SimTree& tree, double t) override { temps.Step(tree, t); }
};

}  // namespace

std::unique_ptr<SimSource> MakeThermalSource() {
  return std::make_unique<ThermalSource>();
}

}  // namespace edgemon::sim
