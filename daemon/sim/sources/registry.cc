// The explicit list of simulated sources, in the order they discover and
// write.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {

std::vector<std::unique_ptr<SimSource>> MakeSimSources() {
  std::vector<std::unique_ptr<SimSource>> out;
  out.push_back(MakeCpuSource());
  out.push_back(MakeGpuDevfreqSource());
  out.push_back(MakeEmcSource());
  out.push_back(MakeThermalSource());
  out.push_back(MakeHwmonSource());
  out.push_back(MakeIna3221Source());
  out.push_back(MakeIna3221IioSource());
  out.push_back(MakeRaplSource());
  out.push_back(MakePowerSupplySource());
  out.push_back(MakeEventSource());
  return out;
}

}  // namespace edgemon::sim
