// Generic hwmon chips: temp*_input (x86 coretemp, nvme, ...) like the thermal
// zones, and the INA2xx-style board monitors (ina219, ina226, ina238: Thor's
// carrier "VIN") that edgemon's hwmon collector reads as rails: for each
// index N >= 1 with a label (its own, or the chip's `label` when it has one
// index), inN_input (mV > 0) and powerN_input (uW), powerN_input =
// round(P(t) * 1000) uW and currN_input = round(P(t) * 1000 / inN_input) mA;
// inN_input stays, and so does in0 (the shunt voltage, not a rail).
#include "daemon/collect/collectors.h"
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

struct HwmonSource final : SimSource {
  struct MonitorRail {
    int rail = -1;
    double voltage_mv = 0;
    int power_file = -1;
    int curr_file = -1;
  };
  TempFiles temps;
  std::vector<MonitorRail> monitors;

  void Discover(SimTree& tree) override {
    const std::string hwmon = SysPath("class/hwmon");
    std::vector<std::string> seen;
    for (const auto& entry : tree.fs.List(hwmon)) {
      const std::string dir = JoinPath(hwmon, entry);
      auto resolved = tree.fs.Resolve(dir);
      if (!resolved || std::find(seen.begin(), seen.end(), *resolved) != seen.end()) continue;
      seen.push_back(*resolved);
      const std::string chip = tree.ReadLine(JoinPath(dir, "name")).value_or(entry);
      std::vector<int> ina_indexes;
      for (const auto& file : tree.fs.List(dir)) {
        if (file.starts_with("power") && file.ends_with("_input")) {
          if (auto n = parse::Int(std::string_view(file).substr(5, file.size() - 11));
              n && *n >= 1) {
            ina_indexes.push_back(static_cast<int>(*n));
          }
        }
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
      if (chip.starts_with("ina") && !IsDedicatedHwmonChip(chip)) {
        std::sort(ina_indexes.begin(), ina_indexes.end());
        AddMonitor(tree, dir, chip, ina_indexes);
      }
    }
  }

  // One INA2xx chip's rails, named as edgemon's hwmon collector names them.
  void AddMonitor(SimTree& tree, const std::string& dir, const std::string& chip,
                  const std::vector<int>& indexes) {
    auto device = tree.fs.Resolve(JoinPath(dir, "device"));
    const std::string bus = device ? std::string(BaseName(*device)) : std::string();
    const auto chip_label = tree.ReadLine(JoinPath(dir, "label"));
    for (int n : indexes) {
      const std::string k = std::to_string(n);
      std::optional<std::string> label;
      for (const char* type : {"in", "curr", "power"}) {
        if (!label) label = tree.ReadLine(JoinPath(dir, type + k + "_label"));
      }
      if (!label && chip_label && indexes.size() == 1) label = chip_label;
      if (!label || bus.empty() || parse::IsUnusedInaLabel(*label)) continue;
      auto mv = tree.ReadInt(JoinPath(dir, "in" + k + "_input"));
      auto uw = tree.ReadInt(JoinPath(dir, "power" + k + "_input"));
      if (!mv || *mv <= 0 || !uw) continue;
      MonitorRail m;
      m.power_file = tree.OpenValue(JoinPath(dir, "power" + k + "_input"));
      if (m.power_file < 0) continue;
      m.curr_file = tree.OpenValue(JoinPath(dir, "curr" + k + "_input"));
      m.voltage_mv = static_cast<double>(*mv);
      m.rail = tree.AddRail(*label, chip, chip + " " + bus, static_cast<double>(*uw) / 1000,
                            m.voltage_mv);
      monitors.push_back(m);
    }
  }

  void Step(SimTree& tree, double t) override {
    temps.Step(tree, t);
    for (const auto& m : monitors) {
      const double mw = tree.PowerAt(m.rail, t);
      tree.writer.PutInt(m.power_file, Round(mw * 1000));
      tree.writer.PutInt(m.curr_file, Round(mw * 1000 / m.voltage_mv));
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeHwmonSource() {
  return std::make_unique<HwmonSource>();
}

}  // namespace edgemon::sim
