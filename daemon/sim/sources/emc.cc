// EMC: the rate files (bpmp clk, clk/emc, override.emc, devfreq bwmgr)
// switch between the fixture's rate and half of it (never below min);
// mc_all = load % x EMC kHz.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

struct EmcSource final : SimSource {
  struct EmcRate {
    int file = -1;
    int64_t high_hz = 0;
    int64_t low_hz = 0;
  };
  std::vector<EmcRate> emc_rates;  // [0] is the one edgemon reads
  std::vector<int> emc_activity;

  void Discover(SimTree& tree) override {
    const std::string thor = SysPath("class/devfreq/bwmgr");
    const std::string bpmp = SysPath("kernel/debug/bpmp/debug/clk/emc");
    const std::string bwmgr = SysPath("kernel/debug/tegra_bwmgr");
    // In edgemon's order of preference; each with its lower limit.
    const std::pair<std::string, std::string> sources[] = {
        {JoinPath(thor, "cur_freq"), JoinPath(thor, "min_freq")},
        {JoinPath(bpmp, "rate"), JoinPath(bpmp, "min_rate")},
        {SysPath("kernel/debug/clk/override.emc/clk_rate"), JoinPath(bwmgr, "emc_min_rate")},
        {SysPath("kernel/debug/clk/emc/clk_rate"), JoinPath(bpmp, "min_rate")},
    };
    for (const auto& [rate, min] : sources) {
      auto hz = tree.ReadInt(rate);
      if (!hz || *hz <= 0) continue;
      EmcRate r;
      r.file = tree.OpenValue(rate);
      if (r.file < 0) continue;
      r.high_hz = *hz;
      auto lo = tree.ReadInt(min);
      r.low_hz = std::max<int64_t>(lo && *lo > 0 ? *lo : 0, *hz / 2);
      emc_rates.push_back(r);
    }
    if (emc_rates.empty()) return;
    for (const auto& path :
         {SysPath("kernel/actmon_avg_activity/mc_all"), SysPath("kernel/debug/cactmon/mc_all"),
          SysPath("kernel/debug/bpmp/debug/actmon/mc_all_avg_activity")}) {
      int f = tree.OpenValue(path);
      if (f >= 0) emc_activity.push_back(f);
    }
    Sine s;
    s.mean = 150 + 300 * tree.U("emc/mean");
    s.amplitude = (0.5 + 0.4 * tree.U("emc/amplitude")) * s.mean;
    s.phase = tree.Phase("emc");
    s.period_s = tree.model.period_s;
    tree.model.emc_load_permille = s;
  }

  void Step(SimTree& tree, double t) override {
    if (emc_rates.empty() || !tree.model.emc_load_permille) return;
    const Sine& s = *tree.model.emc_load_permille;
    const double load = s.At(t);
    // Busy: the fixture's rate; otherwise half of it (never below the minimum).
    const bool high = load >= s.mean - 0.5 * s.amplitude;
    for (const auto& r : emc_rates) tree.writer.PutInt(r.file, high ? r.high_hz : r.low_hz);
    const int64_t khz = (high ? emc_rates[0].high_hz : emc_rates[0].low_hz) / 1000;
    // mc_all reads as utilisation % x EMC kHz: permille = mc_all * 10 / kHz.
    const int64_t mc_all = Round(Clamp(load, 0, 1000) * static_cast<double>(khz) / 10);
    for (int f : emc_activity) tree.writer.PutInt(f, mc_all);
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeEmcSource() {
  return std::make_unique<EmcSource>();
}

}  // namespace edgemon::sim
