// /proc/stat: per-core jiffies at USER_HZ=100 following each online core's
// load; the aggregate line adds the deltas of every core. cpufreq: each
// policy with an online core runs at min + (max - min) x its mean load,
// snapped to scaling_available_frequencies.
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

constexpr double kUserHz = 100;  // /proc/stat jiffies per second

void AppendUint(std::string& s, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

struct CpuSource final : SimSource {
  struct StatLine {
    std::string prefix;  // "cpu  ", "cpu3 "
    int wave = -1;       // index into model.cpus; -1 for the aggregate
    std::vector<uint64_t> v;
  };
  int stat_file = -1;
  std::vector<StatLine> stat_lines;
  std::string stat_tail;
  std::vector<uint64_t> stat_deltas;  // per-tick scratch
  std::string scratch;

  struct Policy {
    std::vector<int> waves;
    std::vector<int> files;
    double min_khz = 0;
    double max_khz = 0;
    std::vector<int64_t> table;
  };
  std::vector<Policy> policies;

  void Discover(SimTree& tree) override {
    auto text = tree.fs.ReadText(ProcPath("stat"), 4 << 20);
    if (!text) return;
    std::string_view s = *text;
    std::vector<StatLine> lines;
    std::vector<CpuWave> waves;
    while (s.starts_with("cpu")) {
      size_t nl = s.find('\n');
      std::string_view line = s.substr(0, nl);
      s.remove_prefix(nl == std::string_view::npos ? s.size() : nl + 1);
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos) return;
      std::string_view label = line.substr(0, sp);
      size_t first = line.find_first_not_of(' ', sp);
      if (first == std::string_view::npos) return;
      StatLine l;
      l.prefix = std::string(line.substr(0, first));
      std::string_view rest = line.substr(first);
      while (!rest.empty()) {
        size_t end = rest.find(' ');
        auto v = parse::Uint(rest.substr(0, end));
        if (!v) return;  // not a format we can rewrite: leave /proc/stat alone
        l.v.push_back(*v);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
      }
      if (l.v.size() < 4) return;
      if (label.size() > 3) {
        auto n = parse::Int(label.substr(3));
        if (!n || *n < 0 || *n > 65535) return;
        CpuWave w;
        w.cpu = static_cast<int>(*n);
        const std::string key = "cpu" + std::to_string(w.cpu);
        w.load.mean = 0.15 + 0.55 * tree.U(key + "/mean");
        w.load.amplitude =
            (0.5 + 0.4 * tree.U(key + "/amplitude")) * std::min(w.load.mean, 1 - w.load.mean);
        w.load.phase = tree.Phase(key);
        w.load.period_s = tree.model.period_s;
        l.wave = static_cast<int>(waves.size());
        waves.push_back(w);
      }
      lines.push_back(std::move(l));
    }
    if (lines.empty()) return;
    stat_file = tree.OpenValue(ProcPath("stat"));
    if (stat_file < 0) return;
    tree.model.cpus = std::move(waves);
    stat_lines = std::move(lines);
    stat_tail = std::string(s);
    DiscoverPolicies(tree);
  }

  int WaveOf(const SimTree& tree, int64_t cpu) const {
    for (size_t i = 0; i < tree.model.cpus.size(); ++i) {
      if (tree.model.cpus[i].cpu == cpu) return static_cast<int>(i);
    }
    return -1;
  }

  void DiscoverPolicies(SimTree& tree) {
    const std::string base = SysPath("devices/system/cpu");
    // Candidate policy directories: cpufreq/policyN, and each online core's
    // cpufreq link (kernels without policy directories).
    std::vector<std::pair<std::string, int64_t>> dirs;  // (logical dir, cpu or -1)
    const std::string cpufreq = JoinPath(base, "cpufreq");
    for (const auto& e : tree.fs.List(cpufreq)) {
      if (e.starts_with("policy")) dirs.emplace_back(JoinPath(cpufreq, e), -1);
    }
    for (const auto& c : tree.model.cpus) {
      dirs.emplace_back(JoinPath(JoinPath(base, "cpu" + std::to_string(c.cpu)), "cpufreq"), c.cpu);
    }
    std::vector<std::string> seen;
    for (const auto& [dir, cpu] : dirs) {
      if (!tree.fs.IsDir(dir)) continue;
      auto resolved = tree.fs.Resolve(dir);
      if (!resolved || std::find(seen.begin(), seen.end(), *resolved) != seen.end()) continue;
      seen.push_back(*resolved);
      Policy p;
      std::vector<int64_t> cpus;
      for (const char* list : {"affected_cpus", "related_cpus"}) {
        if (auto text = tree.fs.ReadText(JoinPath(dir, list), 4096)) cpus = IntList(*text);
        if (!cpus.empty()) break;
      }
      if (cpus.empty() && cpu >= 0) cpus.push_back(cpu);
      for (int64_t c : cpus) {
        int w = WaveOf(tree, c);
        if (w >= 0) p.waves.push_back(w);
      }
      if (p.waves.empty()) continue;  // every core of it offline: it stays as it is
      auto lo = tree.ReadInt(JoinPath(dir, "scaling_min_freq"));
      if (!lo) lo = tree.ReadInt(JoinPath(dir, "cpuinfo_min_freq"));
      auto hi = tree.ReadInt(JoinPath(dir, "scaling_max_freq"));
      if (!hi) hi = tree.ReadInt(JoinPath(dir, "cpuinfo_max_freq"));
      if (!lo || !hi || *lo <= 0 || *hi < *lo) continue;
      p.min_khz = static_cast<double>(*lo);
      p.max_khz = static_cast<double>(*hi);
      if (auto text = tree.fs.ReadText(JoinPath(dir, "scaling_available_frequencies"), 16384)) {
        for (int64_t f : IntList(*text)) {
          if (f >= *lo && f <= *hi) p.table.push_back(f);
        }
      }
      for (const char* name : {"scaling_cur_freq", "cpuinfo_cur_freq"}) {
        int f = tree.OpenValue(JoinPath(dir, name));
        if (f >= 0) p.files.push_back(f);
      }
      if (!p.files.empty()) policies.push_back(std::move(p));
    }
  }

  void Step(SimTree& tree, double t) override {
    if (stat_file < 0) return;
    const uint64_t total = static_cast<uint64_t>(std::floor(kUserHz * t));
    uint64_t d_user = 0, d_system = 0, d_idle = 0;
    std::string& out = scratch;
    out.clear();
    // Per-core lines first (the aggregate adds their deltas), then assemble.
    std::vector<uint64_t>& deltas = stat_deltas;  // (user, system, idle) per line
    deltas.assign(stat_lines.size() * 3, 0);
    for (size_t i = 0; i < stat_lines.size(); ++i) {
      const StatLine& l = stat_lines[i];
      if (l.wave < 0) continue;
      const CpuWave& w = tree.model.cpus[static_cast<size_t>(l.wave)];
      double busy_s = Clamp(w.load.Integral(0, t), 0, t);
      uint64_t busy = std::min(total, static_cast<uint64_t>(std::floor(kUserHz * busy_s)));
      uint64_t system = busy / 5;
      deltas[i * 3] = busy - system;
      deltas[i * 3 + 1] = system;
      deltas[i * 3 + 2] = total - busy;
      d_user += busy - system;
      d_system += system;
      d_idle += total - busy;
    }
    for (size_t i = 0; i < stat_lines.size(); ++i) {
      const StatLine& l = stat_lines[i];
      uint64_t du = l.wave < 0 ? d_user : deltas[i * 3];
      uint64_t ds = l.wave < 0 ? d_system : deltas[i * 3 + 1];
      uint64_t di = l.wave < 0 ? d_idle : deltas[i * 3 + 2];
      out += l.prefix;
      for (size_t k = 0; k < l.v.size(); ++k) {
        if (k > 0) out += ' ';
        uint64_t v = l.v[k];
        if (k == 0) v += du;
        if (k == 2) v += ds;
        if (k == 3) v += di;
        AppendUint(out, v);
      }
      out += '\n';
    }
    out += stat_tail;
    tree.writer.Put(stat_file, out);

    for (const auto& p : policies) {
      double load = 0;
      for (int w : p.waves) load += tree.model.cpus[static_cast<size_t>(w)].load.At(t);
      load = Clamp(load / static_cast<double>(p.waves.size()), 0, 1);
      int64_t khz = Snap(p.table, p.min_khz + (p.max_khz - p.min_khz) * load);
      for (int f : p.files) tree.writer.PutInt(f, khz);
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeCpuSource() {
  return std::make_unique<CpuSource>();
}

}  // namespace edgemon::sim
