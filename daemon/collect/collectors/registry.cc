// The explicit list of collectors, and the rail hierarchy shared by the
// power collectors.
#include <array>

#include "daemon/collect/collectors.h"

namespace edgemon {

std::vector<std::unique_ptr<Collector>> MakeDefaultCollectors(const CollectOptions& options) {
  std::vector<std::unique_ptr<Collector>> out;
  out.push_back(MakeBoardCollector());
  out.push_back(MakeCpuCollector());
  out.push_back(MakeMemoryCollector());
  out.push_back(MakeGpuDevfreqCollector());
  out.push_back(MakeAmdgpuCollector());
  if (options.nvml) out.push_back(MakeNvmlCollector());
  out.push_back(MakeEmcCollector());
  out.push_back(MakeEngineCollector());
  out.push_back(MakeThermalCollector());
  out.push_back(MakeIna3221Collector());
  out.push_back(MakeIna3221IioCollector());
  out.push_back(MakePowerSupplyCollector());
  out.push_back(MakeRaplCollector());
  out.push_back(MakeHwmonCollector());
  out.push_back(MakeFanCollector());
  out.push_back(MakeEventCollector());
  return out;
}

bool IsDedicatedHwmonChip(std::string_view name) {
  static constexpr std::array<std::string_view, 5> kDedicated = {"ina3221", "pwmfan", "pwm_tach",
                                                                 "tegra_pwmfan", "soctherm_oc"};
  for (auto d : kDedicated) {
    if (name == d) return true;
  }
  return false;
}

bool IsBoardInputRail(std::string_view name) {
  // VDD_IN: TX1/TX2/Xavier NX/Orin NX/Orin Nano; POM_5V_IN: Nano; VIN: the
  // INA238 on Thor's carrier. AGX Orin's VIN_SYS_5V0 is *not* the total.
  return name == "VDD_IN" || name == "POM_5V_IN" || name == "VIN";
}

void AssignRailHierarchy(std::vector<Channel>& channels) {
  // Only power monitors on the board's own rails (INA3221/INA238 families)
  // form the input/sub-rail tree; RAPL and power_supply set their own.
  auto is_monitor = [](const Channel& c) {
    return c.kind == Kind::kRail && c.device.rfind("ina", 0) == 0;
  };
  std::string input;
  for (const auto& c : channels) {
    if (is_monitor(c) && IsBoardInputRail(c.name)) {
      input = c.name;
      break;
    }
  }
  if (input.empty()) return;
  for (auto& c : channels) {
    if (!is_monitor(c)) continue;
    if (c.name == input) {
      c.flags |= kFlagInputRail;
      c.parent.clear();
    } else if (c.parent.empty()) {
      c.parent = input;
    }
  }
}

}  // namespace edgemon
