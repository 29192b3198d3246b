// What the simulated sources share: integer lists, frequency tables and the
// temperature files.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {

std::vector<int64_t> IntList(std::string_view s) {
  std::vector<int64_t> out;
  for (std::string_view tok : parse::Words(s, " ,\t\n")) {
    if (auto range = parse::CpuList(tok)) {
      for (int v : *range) out.push_back(v);
    } else if (auto v = parse::Int(tok)) {
      out.push_back(*v);
    }
  }
  return out;
}

int64_t Snap(const std::vector<int64_t>& table, double v) {
  if (table.empty()) return Round(v);
  int64_t best = table.front();
  for (int64_t x : table) {
    if (std::fabs(static_cast<double>(x) - v) < std::fabs(static_cast<double>(best) - v)) best = x;
  }
  return best;
}

void TempFiles::Add(SimTree& tree, const std::string& path, std::string key, std::string name,
                    int64_t mc) {
  int f = tree.OpenValue(path);
  if (f < 0) return;
  TempWave w;
  w.key = std::move(key);
  w.name = std::move(name);
  w.temp_mc.mean = static_cast<double>(mc);
  w.temp_mc.amplitude = 1500 + 2500 * tree.U(w.key + "/amplitude");
  w.temp_mc.phase = tree.Phase(w.key);
  w.temp_mc.period_s = 4 * tree.model.period_s;
  files_.push_back({static_cast<int>(tree.model.temps.size()), f});
  tree.model.temps.push_back(std::move(w));
}

void TempFiles::Step(SimTree& tree, double t) const {
  for (const auto& tf : files_) {
    tree.writer.PutInt(tf.file,
                       Round(tree.model.temps[static_cast<size_t>(tf.wave)].temp_mc.At(t)));
  }
}

}  // namespace edgemon::sim
