// RAPL: energy_uj = (start + floor(1000 * E(0, t))) mod max_energy_range_uj
// (the counter runs 0..max-1); zones start from documented default powers.
#include "daemon/collect/collectors.h"
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

// Default base power of RAPL zones, which have no power reading to start from.
double RaplBaseMw(std::string_view zone_name) {
  if (zone_name.starts_with("package")) return 8000;
  if (zone_name == "core") return 4000;
  if (zone_name == "uncore") return 600;
  if (zone_name == "dram") return 1500;
  if (zone_name == "psys") return 15000;
  return 2000;
}

struct RaplSource final : SimSource {
  struct Rapl {
    int rail = 0;
    int file = -1;
    int64_t start_uj = 0;
    int64_t max_uj = 0;
  };
  std::vector<Rapl> rapl;

  void Discover(SimTree& tree) override {
    const std::string klass = SysPath("class/powercap");
    // Rails named as edgemon's RAPL collector names them.
    std::vector<RaplZone> found = FindRaplZones(tree.fs);
    for (const auto& f : found) {
      const std::string dir = JoinPath(klass, f.entry);
      auto uj = tree.ReadInt(JoinPath(dir, "energy_uj"));
      if (!uj || *uj < 0) continue;
      Rapl z;
      z.file = tree.OpenValue(JoinPath(dir, "energy_uj"));
      if (z.file < 0) continue;
      auto max = tree.ReadInt(JoinPath(dir, "max_energy_range_uj"));
      z.max_uj = max && *max > 0 ? *max : 0;
      z.start_uj = z.max_uj > 0 ? *uj % z.max_uj : *uj;
      z.rail = tree.AddRail(f.rail, "rapl", "rapl " + f.entry, RaplBaseMw(f.zone_name), 0);
      RailWave& r = tree.model.rails[static_cast<size_t>(z.rail)];
      r.energy_uj_start = z.start_uj;
      r.max_energy_range_uj = z.max_uj;
      rapl.push_back(z);
    }
  }

  void Step(SimTree& tree, double t) override {
    for (const auto& z : rapl) {
      int64_t uj = z.start_uj + static_cast<int64_t>(std::floor(1000 * tree.EnergyTo(z.rail, t)));
      if (z.max_uj > 0) uj %= z.max_uj;
      tree.writer.PutInt(z.file, uj);
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeRaplSource() {
  return std::make_unique<RaplSource>();
}

}  // namespace edgemon::sim
