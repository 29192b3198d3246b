// hwmon temp*_input (x86 coretemp, nvme, ...): like the thermal zones.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

struct HwmonSource final : SimSource {
  TempFiles temps;

  void Discover(SimTree& tree) override {
    const std::string hwmon = SysPath("class/hwmon");
    std::vector<std::string> seen;
    for (const auto& entry : tree.fs.List(hwmon)) {
      const std::string dir = JoinPath(hwmon, entry);
      auto resolved = tree.fs.Resolve(dir);
      if (!resolved || std::find(seen.begin(), seen.end(), *resolved) != seen.end()) continue;
      seen.push_back(*resolved);
      const std::string chip = tree.ReadLine(JoinPath(dir, "name")).value_or(entry);
      for (const auto& file : tree.fs.List(dir)) {
        if (!file.starts_with("temp") || file.size() < 11 ||
            file.compare(file.size() - 6, 6, "_input") != 0) {
          continue;
        }
        const std::string index = file.substr(4, file.size() - 10);
        if (!parse::Int(index)) continue;
        auto mc = tree.ReadInt(JoinPath(dir, file));
        if (!mc || *mc <= kGatedMc || *mc >= kImplausibleMc) continue;
        auto label = tree.ReadLine(JoinPath(dir, "temp" + index + "_label"));
        temps.Add(tree, JoinPath(dir, file), entry + "/" + file,
                  chip + "/" + label.value_or("temp" + index), *mc);
      }
    }
  }

  void Step(SimTree& tree, double t) override { temps.Step(tree, t); }
};

}  // namespace

std::unique_ptr<SimSource> MakeHwmonSource() {
  return std::make_unique<HwmonSource>();
}

}  // namespace edgemon::sim
