// devfreq GPUs: device/load (permille) along a sine; cur_freq (and
// target_freq) follow it, snapped to available_frequencies. Thor's GPU clock
// domains (gpu-gpc-N) have no load file: only their clock moves, following
// the same kind of wave.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

struct GpuDevfreqSource final : SimSource {
  struct Gpu {
    int wave = 0;  // index into model.gpus
    int load_file = -1;
    std::vector<int> freq_files;
    double min_hz = 0;
    double max_hz = 0;
    std::vector<int64_t> table;
  };
  std::vector<Gpu> gpus;

  void Discover(SimTree& tree) override {
    const std::string root = SysPath("class/devfreq");
    for (const auto& entry : tree.fs.List(root)) {
      if (entry == "bwmgr") continue;  // Thor's EMC
      const std::string path = JoinPath(root, entry);
      auto freq_dir = tree.fs.Resolve(path);
      auto device = tree.fs.Resolve(JoinPath(path, "device"));
      if (!freq_dir || !device) continue;
      if (!tree.fs.Exists(JoinPath(*device, "load")) && !entry.starts_with("gpu-gpc")) continue;
      auto lo = tree.ReadInt(JoinPath(*freq_dir, "min_freq"));
      auto hi = tree.ReadInt(JoinPath(*freq_dir, "max_freq"));
      Gpu g;
      if (lo && hi && *lo > 0 && *hi >= *lo) {
        g.min_hz = static_cast<double>(*lo);
        g.max_hz = static_cast<double>(*hi);
        if (auto text = tree.fs.ReadText(JoinPath(*freq_dir, "available_frequencies"), 16384)) {
          for (int64_t f : IntList(*text)) {
            if (f >= *lo && f <= *hi) g.table.push_back(f);
          }
        }
        for (const char* name : {"cur_freq", "target_freq"}) {
          int f = tree.OpenValue(JoinPath(*freq_dir, name));
          if (f >= 0) g.freq_files.push_back(f);
        }
      }
      g.load_file = tree.OpenValue(JoinPath(*device, "load"));
      if (g.load_file < 0 && g.freq_files.empty()) continue;
      GpuWave w;
      w.entry = entry;
      const std::string key = "gpu " + entry;
      w.load_permille.mean = 300 + 300 * tree.U(key + "/mean");
      w.load_permille.amplitude = (0.5 + 0.4 * tree.U(key + "/amplitude")) *
                                  std::min(w.load_permille.mean, 1000 - w.load_permille.mean);
      w.load_permille.phase = tree.Phase(key);
      w.load_permille.period_s = tree.model.period_s;
      g.wave = static_cast<int>(tree.model.gpus.size());
      tree.model.gpus.push_back(std::move(w));
      gpus.push_back(std::move(g));
    }
  }

  void Step(SimTree& tree, double t) override {
    for (const auto& g : gpus) {
      double load = Clamp(
          std::round(tree.model.gpus[static_cast<size_t>(g.wave)].load_permille.At(t)), 0, 1000);
      tree.writer.PutInt(g.load_file, static_cast<int64_t>(load));
      if (g.freq_files.empty()) continue;
      int64_t hz = Snap(g.table, g.min_hz + (g.max_hz - g.min_hz) * load / 1000);
      for (int f : g.freq_files) tree.writer.PutInt(f, hz);
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeGpuDevfreqSource() {
  return std::make_unique<GpuDevfreqSource>();
}

}  // namespace edgemon::sim
