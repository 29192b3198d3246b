#include "simulator.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "parse.h"
#include "sysfs.h"

namespace edgemon::sim {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kGatedMc = -256000;
constexpr int64_t kImplausibleMc = 400000;
constexpr double kUserHz = 100;  // /proc/stat jiffies per second
constexpr int kIioMaxChannels = 8;

// ---------------------------------------------------------------------------
// In-place writer of value files.

class Writer {
 public:
  Writer() = default;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer() {
    for (auto& f : files_) ::close(f.fd);
  }

  // Opens a real path for rewriting in place. Returns an index, or -1.
  int Open(const std::string& real) {
    int fd = ::open(real.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) {
      struct stat st;
      if (::stat(real.c_str(), &st) == 0 && ::chmod(real.c_str(), st.st_mode | S_IWUSR) == 0) {
        fd = ::open(real.c_str(), O_WRONLY | O_CLOEXEC);
      }
    }
    if (fd < 0) return -1;
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return -1;
    }
    files_.push_back({fd, static_cast<size_t>(st.st_size), std::string()});
    return static_cast<int>(files_.size() - 1);
  }

  // Replaces the file's text: pwrite at 0 (padded with blanks after the text
  // while it is shorter than the old one), then ftruncate to its length.
  void Put(int index, std::string_view text) {
    if (index < 0) return;
    File& f = files_[static_cast<size_t>(index)];
    if (f.len == text.size() && f.last == text) return;
    scratch_.assign(text);
    if (scratch_.size() < f.len) scratch_.append(f.len - scratch_.size(), ' ');
    size_t done = 0;
    while (done < scratch_.size()) {
      ssize_t n =
          ::pwrite(f.fd, scratch_.data() + done, scratch_.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ++errors_;
        return;
      }
      done += static_cast<size_t>(n);
    }
    if (text.size() < f.len && ::ftruncate(f.fd, static_cast<off_t>(text.size())) != 0) {
      ++errors_;
    }
    f.len = text.size();
    f.last.assign(text);
  }

  void PutInt(int index, int64_t v) {
    if (index < 0) return;
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf - 1, v);
    *r.ptr++ = '\n';
    Put(index, std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }

  size_t size() const { return files_.size(); }
  uint64_t errors() const { return errors_; }

 private:
  struct File {
    int fd;
    size_t len;        // the file's current length
    std::string last;  // the text last written ("" before the first write)
  };
  std::vector<File> files_;
  std::string scratch_;
  uint64_t errors_ = 0;
};

void AppendUint(std::string& s, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

int64_t Round(double v) {
  return static_cast<int64_t>(std::llround(v));
}

double Clamp(double v, double lo, double hi) {
  return std::min(hi, std::max(lo, v));
}

// Whitespace- or comma-separated integers ("0 1 2 3", "0-3,5").
std::vector<int64_t> IntList(std::string_view s) {
  std::vector<int64_t> out;
  std::string text(s);
  for (char& ch : text) {
    if (ch == ',' || ch == '\n' || ch == '\t') ch = ' ';
  }
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    size_t end = rest.find(' ');
    std::string_view tok = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
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

int64_t NowNs(clockid_t clock) {
  timespec ts;
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Default base power of RAPL zones, which have no power reading to start from.
double RaplBaseMw(std::string_view zone_name) {
  if (zone_name.starts_with("package")) return 8000;
  if (zone_name == "core") return 4000;
  if (zone_name == "uncore") return 600;
  if (zone_name == "dram") return 1500;
  if (zone_name == "psys") return 15000;
  return 2000;
}

}  // namespace

// ---------------------------------------------------------------------------

struct Simulator::Impl {
  RootedSysFs fs;
  Options options;
  Model model;
  Writer writer;
  std::string scratch;

  explicit Impl(const std::string& root) : fs(root) {}

  // -- tree access ----------------------------------------------------------
  std::optional<int64_t> ReadInt(const std::string& path) {
    auto text = fs.ReadText(path, 256);
    if (!text) return std::nullopt;
    return parse::Int(*text);
  }
  std::optional<std::string> ReadLine(const std::string& path) {
    auto text = fs.ReadText(path, 4096);
    if (!text) return std::nullopt;
    std::string_view s = *text;
    s = parse::Trim(s.substr(0, s.find('\n')));
    if (s.empty()) return std::nullopt;
    return std::string(s);
  }
  // Opens a value file for writing, through its canonical path (which stays
  // inside the root). -1 when absent.
  int OpenValue(const std::string& path) {
    if (!fs.Exists(path)) return -1;
    auto resolved = fs.Resolve(path);
    if (!resolved) return -1;
    return writer.Open(fs.root() + *resolved);
  }
  double U(std::string_view key) const { return Uniform(options.seed, key); }
  double Phase(const std::string& key) const { return 2 * kPi * U(key + "/phase"); }

  std::string UniqueRailName(const std::string& name) const {
    if (!model.FindRail(name)) return name;
    for (int n = 2;; ++n) {
      std::string candidate = name + "#" + std::to_string(n);
      if (!model.FindRail(candidate)) return candidate;
    }
  }
  // Adds a rail with a seeded amplitude and phase; returns its index.
  int AddRail(const std::string& label, std::string source, std::string device, double base_mw,
              double voltage_mv) {
    RailWave r;
    r.name = UniqueRailName(label);
    r.source = std::move(source);
    r.device = std::move(device);
    r.base_mw = base_mw;
    r.amplitude = 0.15 + 0.3 * U(r.device + "/" + r.name + "/amplitude");
    r.phase = Phase(r.device + "/" + r.name);
    r.voltage_mv = voltage_mv;
    model.rails.push_back(std::move(r));
    return static_cast<int>(model.rails.size() - 1);
  }
  double PowerAt(int rail, double t) const {
    return model.rails[static_cast<size_t>(rail)].PowerMw(t, model.period_s);
  }
  double EnergyTo(int rail, double t) const {
    return model.rails[static_cast<size_t>(rail)].EnergyMj(0, t, model.period_s);
  }

  // -- CPU: /proc/stat and cpufreq ------------------------------------------
  struct StatLine {
    std::string prefix;  // "cpu  ", "cpu3 "
    int wave = -1;       // index into model.cpus; -1 for the aggregate
    std::vector<uint64_t> v;
  };
  int stat_file = -1;
  std::vector<StatLine> stat_lines;
  std::string stat_tail;
  std::vector<uint64_t> stat_deltas;  // per-tick scratch

  struct Policy {
    std::vector<int> waves;
    std::vector<int> files;
    double min_khz = 0;
    double max_khz = 0;
    std::vector<int64_t> table;
  };
  std::vector<Policy> policies;

  void DiscoverCpus() {
    auto text = fs.ReadText(ProcPath("stat"), 4 << 20);
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
        w.load.mean = 0.15 + 0.55 * U(key + "/mean");
        w.load.amplitude =
            (0.5 + 0.4 * U(key + "/amplitude")) * std::min(w.load.mean, 1 - w.load.mean);
        w.load.phase = Phase(key);
        w.load.period_s = model.period_s;
        l.wave = static_cast<int>(waves.size());
        waves.push_back(w);
      }
      lines.push_back(std::move(l));
    }
    if (lines.empty()) return;
    stat_file = OpenValue(ProcPath("stat"));
    if (stat_file < 0) return;
    model.cpus = std::move(waves);
    stat_lines = std::move(lines);
    stat_tail = std::string(s);
    DiscoverPolicies();
  }

  int WaveOf(int64_t cpu) const {
    for (size_t i = 0; i < model.cpus.size(); ++i) {
      if (model.cpus[i].cpu == cpu) return static_cast<int>(i);
    }
    return -1;
  }

  void DiscoverPolicies() {
    const std::string base = SysPath("devices/system/cpu");
    // Candidate policy directories: cpufreq/policyN, and each online core's
    // cpufreq link (kernels without policy directories).
    std::vector<std::pair<std::string, int64_t>> dirs;  // (logical dir, cpu or -1)
    const std::string cpufreq = JoinPath(base, "cpufreq");
    for (const auto& e : fs.List(cpufreq)) {
      if (e.starts_with("policy")) dirs.emplace_back(JoinPath(cpufreq, e), -1);
    }
    for (const auto& c : model.cpus) {
      dirs.emplace_back(JoinPath(JoinPath(base, "cpu" + std::to_string(c.cpu)), "cpufreq"), c.cpu);
    }
    std::vector<std::string> seen;
    for (const auto& [dir, cpu] : dirs) {
      if (!fs.IsDir(dir)) continue;
      auto resolved = fs.Resolve(dir);
      if (!resolved || std::find(seen.begin(), seen.end(), *resolved) != seen.end()) continue;
      seen.push_back(*resolved);
      Policy p;
      std::vector<int64_t> cpus;
      for (const char* list : {"affected_cpus", "related_cpus"}) {
        if (auto text = fs.ReadText(JoinPath(dir, list), 4096)) cpus = IntList(*text);
        if (!cpus.empty()) break;
      }
      if (cpus.empty() && cpu >= 0) cpus.push_back(cpu);
      for (int64_t c : cpus) {
        int w = WaveOf(c);
        if (w >= 0) p.waves.push_back(w);
      }
      if (p.waves.empty()) continue;  // every core of it offline: it stays as it is
      auto lo = ReadInt(JoinPath(dir, "scaling_min_freq"));
      if (!lo) lo = ReadInt(JoinPath(dir, "cpuinfo_min_freq"));
      auto hi = ReadInt(JoinPath(dir, "scaling_max_freq"));
      if (!hi) hi = ReadInt(JoinPath(dir, "cpuinfo_max_freq"));
      if (!lo || !hi || *lo <= 0 || *hi < *lo) continue;
      p.min_khz = static_cast<double>(*lo);
      p.max_khz = static_cast<double>(*hi);
      if (auto text = fs.ReadText(JoinPath(dir, "scaling_available_frequencies"), 16384)) {
        for (int64_t f : IntList(*text)) {
          if (f >= *lo && f <= *hi) p.table.push_back(f);
        }
      }
      for (const char* name : {"scaling_cur_freq", "cpuinfo_cur_freq"}) {
        int f = OpenValue(JoinPath(dir, name));
        if (f >= 0) p.files.push_back(f);
      }
      if (!p.files.empty()) policies.push_back(std::move(p));
    }
  }

  void StepCpus(double t) {
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
      const CpuWave& w = model.cpus[static_cast<size_t>(l.wave)];
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
    writer.Put(stat_file, out);

    for (const auto& p : policies) {
      double load = 0;
      for (int w : p.waves) load += model.cpus[static_cast<size_t>(w)].load.At(t);
      load = Clamp(load / static_cast<double>(p.waves.size()), 0, 1);
      int64_t khz = Snap(p.table, p.min_khz + (p.max_khz - p.min_khz) * load);
      for (int f : p.files) writer.PutInt(f, khz);
    }
  }

  // -- GPU (devfreq) and EMC ------------------------------------------------
  struct Gpu {
    int wave = 0;  // index into model.gpus
    int load_file = -1;
    std::vector<int> freq_files;
    double min_hz = 0;
    double max_hz = 0;
    std::vector<int64_t> table;
  };
  std::vector<Gpu> gpus;

  void DiscoverGpus() {
    const std::string root = SysPath("class/devfreq");
    for (const auto& entry : fs.List(root)) {
      if (entry == "bwmgr") continue;  // Thor's EMC
      const std::string path = JoinPath(root, entry);
      auto freq_dir = fs.Resolve(path);
      auto device = fs.Resolve(JoinPath(path, "device"));
      if (!freq_dir || !device || !fs.Exists(JoinPath(*device, "load"))) continue;
      auto lo = ReadInt(JoinPath(*freq_dir, "min_freq"));
      auto hi = ReadInt(JoinPath(*freq_dir, "max_freq"));
      Gpu g;
      if (lo && hi && *lo > 0 && *hi >= *lo) {
        g.min_hz = static_cast<double>(*lo);
        g.max_hz = static_cast<double>(*hi);
        if (auto text = fs.ReadText(JoinPath(*freq_dir, "available_frequencies"), 16384)) {
          for (int64_t f : IntList(*text)) {
            if (f >= *lo && f <= *hi) g.table.push_back(f);
          }
        }
        for (const char* name : {"cur_freq", "target_freq"}) {
          int f = OpenValue(JoinPath(*freq_dir, name));
          if (f >= 0) g.freq_files.push_back(f);
        }
      }
      g.load_file = OpenValue(JoinPath(*device, "load"));
      if (g.load_file < 0 && g.freq_files.empty()) continue;
      GpuWave w;
      w.entry = entry;
      const std::string key = "gpu " + entry;
      w.load_permille.mean = 300 + 300 * U(key + "/mean");
      w.load_permille.amplitude = (0.5 + 0.4 * U(key + "/amplitude")) *
                                  std::min(w.load_permille.mean, 1000 - w.load_permille.mean);
      w.load_permille.phase = Phase(key);
      w.load_permille.period_s = model.period_s;
      g.wave = static_cast<int>(model.gpus.size());
      model.gpus.push_back(std::move(w));
      gpus.push_back(std::move(g));
    }
  }

  void StepGpus(double t) {
    for (const auto& g : gpus) {
      double load =
          Clamp(std::round(model.gpus[static_cast<size_t>(g.wave)].load_permille.At(t)), 0, 1000);
      writer.PutInt(g.load_file, static_cast<int64_t>(load));
      if (g.freq_files.empty()) continue;
      int64_t hz = Snap(g.table, g.min_hz + (g.max_hz - g.min_hz) * load / 1000);
      for (int f : g.freq_files) writer.PutInt(f, hz);
    }
  }

  struct EmcRate {
    int file = -1;
    int64_t high_hz = 0;
    int64_t low_hz = 0;
  };
  std::vector<EmcRate> emc_rates;  // [0] is the one edgemon reads
  std::vector<int> emc_activity;

  void DiscoverEmc() {
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
      auto hz = ReadInt(rate);
      if (!hz || *hz <= 0) continue;
      EmcRate r;
      r.file = OpenValue(rate);
      if (r.file < 0) continue;
      r.high_hz = *hz;
      auto lo = ReadInt(min);
      r.low_hz = std::max<int64_t>(lo && *lo > 0 ? *lo : 0, *hz / 2);
      emc_rates.push_back(r);
    }
    if (emc_rates.empty()) return;
    for (const auto& path :
         {SysPath("kernel/actmon_avg_activity/mc_all"), SysPath("kernel/debug/cactmon/mc_all"),
          SysPath("kernel/debug/bpmp/debug/actmon/mc_all_avg_activity")}) {
      int f = OpenValue(path);
      if (f >= 0) emc_activity.push_back(f);
    }
    Sine s;
    s.mean = 150 + 300 * U("emc/mean");
    s.amplitude = (0.5 + 0.4 * U("emc/amplitude")) * s.mean;
    s.phase = Phase("emc");
    s.period_s = model.period_s;
    model.emc_load_permille = s;
  }

  void StepEmc(double t) {
    if (emc_rates.empty() || !model.emc_load_permille) return;
    const Sine& s = *model.emc_load_permille;
    const double load = s.At(t);
    // Busy: the fixture's rate; otherwise half of it (never below the minimum).
    const bool high = load >= s.mean - 0.5 * s.amplitude;
    for (const auto& r : emc_rates) writer.PutInt(r.file, high ? r.high_hz : r.low_hz);
    const int64_t khz = (high ? emc_rates[0].high_hz : emc_rates[0].low_hz) / 1000;
    // mc_all reads as utilisation % x EMC kHz: permille = mc_all * 10 / kHz.
    const int64_t mc_all = Round(Clamp(load, 0, 1000) * static_cast<double>(khz) / 10);
    for (int f : emc_activity) writer.PutInt(f, mc_all);
  }

  // -- temperatures ---------------------------------------------------------
  struct Temp {
    int wave = 0;  // index into model.temps
    int file = -1;
  };
  std::vector<Temp> temp_files;

  void AddTemp(const std::string& path, std::string key, std::string name, int64_t mc) {
    int f = OpenValue(path);
    if (f < 0) return;
    TempWave w;
    w.key = std::move(key);
    w.name = std::move(name);
    w.temp_mc.mean = static_cast<double>(mc);
    w.temp_mc.amplitude = 1500 + 2500 * U(w.key + "/amplitude");
    w.temp_mc.phase = Phase(w.key);
    w.temp_mc.period_s = 4 * model.period_s;
    temp_files.push_back({static_cast<int>(model.temps.size()), f});
    model.temps.push_back(std::move(w));
  }

  void DiscoverTemps() {
    const std::string thermal = SysPath("class/thermal");
    for (const auto& zone : fs.List(thermal)) {
      if (!zone.starts_with("thermal_zone")) continue;
      const std::string dir = JoinPath(thermal, zone);
      auto type = ReadLine(JoinPath(dir, "type"));
      auto mc = ReadInt(JoinPath(dir, "temp"));
      // Gated zones stay gated; PMIC-Die is a constant on the real boards.
      if (!type || !mc || *mc <= kGatedMc || *mc >= kImplausibleMc) continue;
      if (type->find("PMIC") != std::string::npos) continue;
      AddTemp(JoinPath(dir, "temp"), zone, *type, *mc);
    }
    const std::string hwmon = SysPath("class/hwmon");
    std::vector<std::string> seen;
    for (const auto& entry : fs.List(hwmon)) {
      const std::string dir = JoinPath(hwmon, entry);
      auto resolved = fs.Resolve(dir);
      if (!resolved || std::find(seen.begin(), seen.end(), *resolved) != seen.end()) continue;
      seen.push_back(*resolved);
      const std::string chip = ReadLine(JoinPath(dir, "name")).value_or(entry);
      for (const auto& file : fs.List(dir)) {
        if (!file.starts_with("temp") || file.size() < 11 ||
            file.compare(file.size() - 6, 6, "_input") != 0) {
          continue;
        }
        const std::string index = file.substr(4, file.size() - 10);
        if (!parse::Int(index)) continue;
        auto mc = ReadInt(JoinPath(dir, file));
        if (!mc || *mc <= kGatedMc || *mc >= kImplausibleMc) continue;
        auto label = ReadLine(JoinPath(dir, "temp" + index + "_label"));
        AddTemp(JoinPath(dir, file), entry + "/" + file,
                chip + "/" + label.value_or("temp" + index), *mc);
      }
    }
  }

  void StepTemps(double t) {
    for (const auto& tf : temp_files) {
      writer.PutInt(tf.file, Round(model.temps[static_cast<size_t>(tf.wave)].temp_mc.At(t)));
    }
  }

  // -- INA3221 through hwmon (JetPack 5+) -----------------------------------
  struct InaChannel {
    int rail = -1;  // -1: a fixed channel (NC, disabled, unreadable)
    double voltage_mv = 0;
    int64_t fixed_ma = 0;
    int64_t fixed_shunt = 0;
    int64_t shunt_uohm = 0;
    int curr_file = -1;
    int shunt_file = -1;
  };
  struct InaChip {
    std::vector<InaChannel> channels;
    int sum_curr_file = -1;   // curr4_input
    int sum_shunt_file = -1;  // in7_input
  };
  std::vector<InaChip> ina_chips;

  void DiscoverIna3221() {
    struct Dir {
      std::string dir, resolved, bus_addr;
    };
    std::vector<Dir> dirs;
    auto add = [&](const std::string& dir, const std::string& fallback) {
      if (!fs.IsDir(dir)) return;
      auto resolved = fs.Resolve(dir);
      if (!resolved) return;
      for (const auto& d : dirs) {
        if (d.resolved == *resolved) return;
      }
      std::string bus_addr = fallback;
      if (auto dev = fs.Resolve(JoinPath(dir, "device"))) {
        bus_addr = std::string(BaseName(*dev));
      } else if (BaseName(DirName(*resolved)) == "hwmon") {
        bus_addr = std::string(BaseName(DirName(DirName(*resolved))));
      }
      dirs.push_back({dir, *resolved, bus_addr});
    };
    const std::string klass = SysPath("class/hwmon");
    for (const auto& entry : fs.List(klass)) {
      const std::string dir = JoinPath(klass, entry);
      if (ReadLine(JoinPath(dir, "name")).value_or("") == "ina3221") add(dir, entry);
    }
    const std::string driver = SysPath("bus/i2c/drivers/ina3221");
    for (const auto& dev : fs.List(driver)) {
      const std::string hw = JoinPath(JoinPath(driver, dev), "hwmon");
      for (const auto& h : fs.List(hw)) {
        if (h.starts_with("hwmon")) add(JoinPath(hw, h), dev);
      }
    }
    std::sort(dirs.begin(), dirs.end(), [](const Dir& a, const Dir& b) {
      return a.bus_addr != b.bus_addr ? a.bus_addr < b.bus_addr : a.resolved < b.resolved;
    });
    for (const auto& d : dirs) {
      InaChip chip;
      bool any = false;
      for (int k = 1; k <= 3; ++k) {
        const std::string n = std::to_string(k);
        InaChannel c;
        auto label = ReadLine(JoinPath(d.dir, "in" + n + "_label"));
        auto enable = ReadInt(JoinPath(d.dir, "in" + n + "_enable"));
        auto mv = ReadInt(JoinPath(d.dir, "in" + n + "_input"));
        auto ma = ReadInt(JoinPath(d.dir, "curr" + n + "_input"));
        auto shunt = ReadInt(JoinPath(d.dir, "shunt" + n + "_resistor"));
        const std::string shunt_path = JoinPath(d.dir, "in" + std::to_string(k + 3) + "_input");
        c.fixed_ma = ma.value_or(0);
        c.fixed_shunt = ReadInt(shunt_path).value_or(0);
        if (label && !parse::IsUnusedInaLabel(*label) && (!enable || *enable != 0) && mv &&
            *mv > 0 && ma) {
          c.curr_file = OpenValue(JoinPath(d.dir, "curr" + n + "_input"));
        }
        if (c.curr_file >= 0) {
          c.voltage_mv = static_cast<double>(*mv);
          c.rail =
              AddRail(*label, "ina3221", "ina3221 " + d.bus_addr,
                      static_cast<double>(*mv) * static_cast<double>(*ma) / 1000, c.voltage_mv);
          if (shunt && *shunt > 0) {
            c.shunt_uohm = *shunt;
            c.shunt_file = OpenValue(shunt_path);
          }
          any = true;
        }
        chip.channels.push_back(c);
      }
      if (!any) continue;
      chip.sum_curr_file = OpenValue(JoinPath(d.dir, "curr4_input"));
      if (ReadLine(JoinPath(d.dir, "in7_label")).value_or("").find("sum") != std::string::npos) {
        chip.sum_shunt_file = OpenValue(JoinPath(d.dir, "in7_input"));
      }
      ina_chips.push_back(std::move(chip));
    }
  }

  void StepIna3221(double t) {
    for (const auto& chip : ina_chips) {
      int64_t sum_ma = 0, sum_shunt = 0;
      for (const auto& c : chip.channels) {
        int64_t ma = c.fixed_ma;
        int64_t shunt = c.fixed_shunt;
        if (c.rail >= 0) {
          ma = Round(PowerAt(c.rail, t) * 1000 / c.voltage_mv);
          writer.PutInt(c.curr_file, ma);
          if (c.shunt_file >= 0) {
            shunt = ma * c.shunt_uohm / 1000;
            writer.PutInt(c.shunt_file, shunt);
          }
        }
        sum_ma += ma;
        sum_shunt += shunt;
      }
      writer.PutInt(chip.sum_curr_file, sum_ma);
      writer.PutInt(chip.sum_shunt_file, sum_shunt);
    }
  }

  // -- INA3221 through NVIDIA's ina3221x iio driver (JetPack 4) -------------
  struct IioChannel {
    int rail = -1;
    double voltage_mv = 0;
    int64_t fixed_ma = 0;
    int power_file = -1;
    int curr_file = -1;
    int ui_file = -1;
  };
  struct IioDevice {
    std::vector<IioChannel> channels;
    int sum_file = -1;
  };
  std::vector<IioDevice> iio_devices;

  void DiscoverIna3221Iio() {
    struct Dir {
      std::string dir, resolved, bus_addr;
    };
    std::vector<Dir> dirs;
    auto add = [&](const std::string& dir, const std::string& bus_addr) {
      if (!fs.IsDir(dir)) return;
      auto resolved = fs.Resolve(dir);
      if (!resolved) return;
      for (const auto& d : dirs) {
        if (d.resolved == *resolved) return;
      }
      dirs.push_back({dir, *resolved, bus_addr});
    };
    const std::string driver = SysPath("bus/i2c/drivers/ina3221x");
    for (const auto& dev : fs.List(driver)) {
      const std::string dev_dir = JoinPath(driver, dev);
      for (const auto& e : fs.List(dev_dir)) {
        if (e.starts_with("iio:device")) add(JoinPath(dev_dir, e), dev);
      }
    }
    const std::string iio = SysPath("bus/iio/devices");
    for (const auto& e : fs.List(iio)) {
      if (!e.starts_with("iio:device")) continue;
      const std::string dir = JoinPath(iio, e);
      if (ReadLine(JoinPath(dir, "name")).value_or("") != "ina3221x") continue;
      std::string bus_addr = e;
      if (auto r = fs.Resolve(dir)) bus_addr = std::string(BaseName(DirName(*r)));
      add(dir, bus_addr);
    }
    std::sort(dirs.begin(), dirs.end(), [](const Dir& a, const Dir& b) {
      return a.bus_addr != b.bus_addr ? a.bus_addr < b.bus_addr : a.resolved < b.resolved;
    });
    for (const auto& d : dirs) {
      IioDevice dev;
      bool any = false;
      for (int k = 0; k < kIioMaxChannels; ++k) {
        const std::string n = std::to_string(k);
        auto label = ReadLine(JoinPath(d.dir, "rail_name_" + n));
        if (!label) continue;
        IioChannel c;
        auto mv = ReadInt(JoinPath(d.dir, "in_voltage" + n + "_input"));
        auto mw = ReadInt(JoinPath(d.dir, "in_power" + n + "_input"));
        c.fixed_ma = ReadInt(JoinPath(d.dir, "in_current" + n + "_input")).value_or(0);
        if (!parse::IsUnusedInaLabel(*label) && mv && *mv > 0 && mw && *mw >= 0) {
          c.power_file = OpenValue(JoinPath(d.dir, "in_power" + n + "_input"));
        }
        if (c.power_file >= 0) {
          c.voltage_mv = static_cast<double>(*mv);
          c.rail = AddRail(*label, "ina3221x", "ina3221x " + d.bus_addr, static_cast<double>(*mw),
                           c.voltage_mv);
          c.curr_file = OpenValue(JoinPath(d.dir, "in_current" + n + "_input"));
          c.ui_file = OpenValue(JoinPath(d.dir, "ui_input_" + n));
          any = true;
        }
        dev.channels.push_back(c);
      }
      if (!any) continue;
      dev.sum_file = OpenValue(JoinPath(d.dir, "in_current_sum_input"));
      iio_devices.push_back(std::move(dev));
    }
  }

  void StepIna3221Iio(double t) {
    char buf[64];
    for (const auto& dev : iio_devices) {
      int64_t sum_ma = 0;
      for (const auto& c : dev.channels) {
        int64_t ma = c.fixed_ma;
        if (c.rail >= 0) {
          const double mw = PowerAt(c.rail, t);
          ma = Round(mw * 1000 / c.voltage_mv);
          writer.PutInt(c.power_file, Round(mw));
          writer.PutInt(c.curr_file, ma);
          if (c.ui_file >= 0) {
            // "mV mA", as the driver prints it.
            auto r = std::to_chars(buf, buf + 30, Round(c.voltage_mv));
            *r.ptr++ = ' ';
            r = std::to_chars(r.ptr, buf + 60, ma);
            *r.ptr++ = '\n';
            writer.Put(c.ui_file, std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
          }
        }
        sum_ma += ma;
      }
      writer.PutInt(dev.sum_file, sum_ma);
    }
  }

  // -- RAPL -----------------------------------------------------------------
  struct Rapl {
    int rail = 0;
    int file = -1;
    int64_t start_uj = 0;
    int64_t max_uj = 0;
  };
  std::vector<Rapl> rapl;

  void DiscoverRapl() {
    const std::string klass = SysPath("class/powercap");
    struct Found {
      std::string entry, type, parent, zone_name, rail;
    };
    std::vector<Found> found;
    for (const auto& entry : fs.List(klass)) {
      auto colon = entry.find(':');
      if (colon == std::string::npos) continue;
      const std::string dir = JoinPath(klass, entry);
      if (!fs.Exists(JoinPath(dir, "energy_uj"))) continue;
      Found f;
      f.entry = entry;
      f.type = entry.substr(0, colon);
      auto last = entry.rfind(':');
      if (last != colon) f.parent = entry.substr(0, last);
      f.zone_name = ReadLine(JoinPath(dir, "name")).value_or(entry);
      found.push_back(std::move(f));
    }
    // Channel names as edgemon's RAPL collector gives them.
    auto top_name = [](const Found& f) {
      return f.type == "intel-rapl" ? f.zone_name : f.type + ":" + f.zone_name;
    };
    for (auto& f : found) {
      const Found* p = nullptr;
      for (const auto& g : found) {
        if (!f.parent.empty() && g.entry == f.parent) p = &g;
      }
      f.rail = p ? top_name(*p) + "/" + f.zone_name : top_name(f);
    }
    for (const auto& f : found) {
      const std::string dir = JoinPath(klass, f.entry);
      auto uj = ReadInt(JoinPath(dir, "energy_uj"));
      if (!uj || *uj < 0) continue;
      Rapl z;
      z.file = OpenValue(JoinPath(dir, "energy_uj"));
      if (z.file < 0) continue;
      auto max = ReadInt(JoinPath(dir, "max_energy_range_uj"));
      z.max_uj = max && *max > 0 ? *max : 0;
      z.start_uj = z.max_uj > 0 ? *uj % z.max_uj : *uj;
      z.rail = AddRail(f.rail, "rapl", "rapl " + f.entry, RaplBaseMw(f.zone_name), 0);
      RailWave& r = model.rails[static_cast<size_t>(z.rail)];
      r.energy_uj_start = z.start_uj;
      r.max_energy_range_uj = z.max_uj;
      rapl.push_back(z);
    }
  }

  void StepRapl(double t) {
    for (const auto& z : rapl) {
      int64_t uj = z.start_uj + static_cast<int64_t>(std::floor(1000 * EnergyTo(z.rail, t)));
      if (z.max_uj > 0) uj %= z.max_uj;
      writer.PutInt(z.file, uj);
    }
  }

  // -- power_supply batteries -----------------------------------------------
  struct Battery {
    int rail = 0;
    double voltage_uv = 0;
    int sign = 1;
    int direction = 0;  // +1 charging, -1 discharging, 0 neither
    int curr_file = -1;
    int power_file = -1;
    int charge_file = -1;  // uAh
    int energy_file = -1;  // uWh
    int capacity_file = -1;
    double charge0 = 0, charge_full = 0;
    double energy0 = 0, energy_full = 0;
  };
  std::vector<Battery> batteries;

  void DiscoverBatteries() {
    const std::string klass = SysPath("class/power_supply");
    for (const auto& name : fs.List(klass)) {
      const std::string dir = JoinPath(klass, name);
      auto type = ReadLine(JoinPath(dir, "type"));
      if (!type || (*type != "Battery" && *type != "UPS")) continue;
      if (ReadLine(JoinPath(dir, "scope")).value_or("") == "Device") continue;
      auto uv = ReadInt(JoinPath(dir, "voltage_now"));
      auto ua = ReadInt(JoinPath(dir, "current_now"));
      auto uw = ReadInt(JoinPath(dir, "power_now"));
      if (!uv || *uv <= 0 || (!ua && !uw)) continue;
      Battery b;
      b.voltage_uv = static_cast<double>(*uv);
      b.sign = ua && *ua < 0 ? -1 : 1;
      double base_mw = uw ? static_cast<double>(std::llabs(*uw)) / 1000
                          : b.voltage_uv * static_cast<double>(std::llabs(*ua)) / 1e9;
      if (ua) b.curr_file = OpenValue(JoinPath(dir, "current_now"));
      if (uw) b.power_file = OpenValue(JoinPath(dir, "power_now"));
      if (b.curr_file < 0 && b.power_file < 0) continue;
      const std::string status = ReadLine(JoinPath(dir, "status")).value_or("");
      b.direction = status == "Charging" ? 1 : status == "Discharging" ? -1 : 0;
      if (b.direction != 0) {
        auto charge = ReadInt(JoinPath(dir, "charge_now"));
        auto charge_full = ReadInt(JoinPath(dir, "charge_full"));
        auto energy = ReadInt(JoinPath(dir, "energy_now"));
        auto energy_full = ReadInt(JoinPath(dir, "energy_full"));
        if (charge && charge_full && *charge_full > 0) {
          b.charge_file = OpenValue(JoinPath(dir, "charge_now"));
          b.charge0 = static_cast<double>(*charge);
          b.charge_full = static_cast<double>(*charge_full);
        }
        if (energy && energy_full && *energy_full > 0) {
          b.energy_file = OpenValue(JoinPath(dir, "energy_now"));
          b.energy0 = static_cast<double>(*energy);
          b.energy_full = static_cast<double>(*energy_full);
        }
        if (b.charge_file >= 0 || b.energy_file >= 0) {
          b.capacity_file = OpenValue(JoinPath(dir, "capacity"));
        }
      }
      b.rail = AddRail(name, "power_supply", "power_supply " + name, base_mw, b.voltage_uv / 1000);
      batteries.push_back(b);
    }
  }

  void StepBatteries(double t) {
    for (const auto& b : batteries) {
      const double mw = PowerAt(b.rail, t);
      writer.PutInt(b.curr_file, b.sign * Round(mw * 1e9 / b.voltage_uv));
      writer.PutInt(b.power_file, Round(mw * 1000));
      if (b.direction == 0) continue;
      const double mj = EnergyTo(b.rail, t);
      double capacity = -1;
      if (b.charge_file >= 0) {
        // mJ / mV = coulomb; 1 uAh = 3600 uC.
        double uah = Clamp(b.charge0 + b.direction * mj / (b.voltage_uv / 1000) * 1e6 / 3600, 0,
                           b.charge_full);
        writer.PutInt(b.charge_file, Round(uah));
        capacity = 100 * uah / b.charge_full;
      }
      if (b.energy_file >= 0) {
        double uwh = Clamp(b.energy0 + b.direction * mj / 3.6, 0, b.energy_full);  // 1 uWh = 3.6 mJ
        writer.PutInt(b.energy_file, Round(uwh));
        if (capacity < 0) capacity = 100 * uwh / b.energy_full;
      }
      if (capacity >= 0) writer.PutInt(b.capacity_file, Round(capacity));
    }
  }

  // -------------------------------------------------------------------------
  void Discover() {
    DiscoverCpus();
    DiscoverGpus();
    DiscoverEmc();
    DiscoverTemps();
    DiscoverIna3221();
    DiscoverIna3221Iio();
    DiscoverRapl();
    DiscoverBatteries();
  }

  void Step(double t) {
    if (!(t > 0)) t = 0;  // also NaN
    StepCpus(t);
    StepGpus(t);
    StepEmc(t);
    StepTemps(t);
    StepIna3221(t);
    StepIna3221Iio(t);
    StepRapl(t);
    StepBatteries(t);
  }
};

// ---------------------------------------------------------------------------

Simulator::Simulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulator::~Simulator() = default;

namespace {

bool CopyTree(const fs::path& from, const fs::path& to, std::string* error) {
  std::error_code ec;
  for (fs::directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path src = it->path();
    const fs::path dst = to / src.filename();
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(st)) {
      fs::path target = fs::read_symlink(src, ec);
      if (!ec) fs::create_symlink(target, dst, ec);
    } else if (fs::is_directory(st)) {
      fs::create_directory(dst, ec);
      if (!ec && !CopyTree(src, dst, error)) return false;
    } else if (fs::is_regular_file(st)) {
      fs::copy_file(src, dst, ec);
    }
    if (ec) {
      *error = "cannot copy " + src.string() + ": " + ec.message();
      return false;
    }
  }
  if (ec) {
    *error = "cannot list " + from.string() + ": " + ec.message();
    return false;
  }
  return true;
}

// A live system tree, or the whole filesystem, must never be written.
bool IsSystemPath(const std::string& canonical) {
  if (canonical.empty() || canonical == "/") return true;
  for (const std::string& sys : {SysPath(""), ProcPath("")}) {
    if (canonical == sys || canonical.starts_with(sys + "/")) return true;
  }
  return false;
}

}  // namespace

bool Simulator::Materialise(const std::string& from, const std::string& to, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  std::error_code ec;
  const fs::path src(from);
  const fs::path dst(to);
  if (!fs::is_directory(src, ec)) {
    *error = from + " is not a directory";
    return false;
  }
  if (fs::exists(fs::symlink_status(dst, ec))) {
    if (!fs::is_directory(fs::symlink_status(dst, ec))) {
      *error = to + " exists and is not a directory";
      return false;
    }
    const bool empty = fs::is_empty(dst, ec);
    if (!empty) {
      if (!fs::exists(dst / std::string(kSidecarName), ec)) {
        *error = to + " is not empty and holds no earlier simulation (" +
                 std::string(kSidecarName) + ")";
        return false;
      }
      for (const auto& e : fs::directory_iterator(dst, ec)) fs::remove_all(e.path(), ec);
      if (ec) {
        *error = "cannot clear " + to + ": " + ec.message();
        return false;
      }
    }
  } else if (!fs::create_directories(dst, ec) || ec) {
    *error = "cannot create " + to + ": " + ec.message();
    return false;
  }
  const std::string src_c = fs::canonical(src, ec).string();
  const std::string dst_c = fs::canonical(dst, ec).string();
  if (ec || IsSystemPath(dst_c)) {
    *error = "refusing to write into " + to;
    return false;
  }
  if (dst_c == src_c || dst_c.starts_with(src_c + "/")) {
    *error = to + " lies inside the fixture " + from;
    return false;
  }
  return CopyTree(src, dst, error);
}

std::unique_ptr<Simulator> Simulator::Open(const std::string& root, const Options& options,
                                           std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    *error = root + " is not a directory";
    return nullptr;
  }
  const std::string canonical = fs::canonical(root, ec).string();
  if (ec || IsSystemPath(canonical)) {
    *error = "refusing to simulate on " + root + ": not a scratch tree";
    return nullptr;
  }
  if (!(options.period_s > 0) || !std::isfinite(options.period_s)) {
    *error = "period_s must be positive";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>(canonical);
  impl->options = options;
  impl->model.board = options.board;
  impl->model.seed = options.seed;
  impl->model.period_s = options.period_s;
  impl->Discover();
  return std::unique_ptr<Simulator>(new Simulator(std::move(impl)));
}

void Simulator::Step(double t_s) {
  impl_->Step(t_s);
}

const Model& Simulator::model() const {
  return impl_->model;
}

double Simulator::RailPowerMw(std::string_view rail, double t_s) const {
  return impl_->model.RailPowerMw(rail, t_s);
}

double Simulator::RailEnergyMj(std::string_view rail, double t0_s, double t1_s) const {
  return impl_->model.RailEnergyMj(rail, t0_s, t1_s);
}

const std::string& Simulator::root() const {
  return impl_->fs.root();
}

std::string Simulator::SidecarPath() const {
  return impl_->fs.root() + "/" + std::string(kSidecarName);
}

bool Simulator::WriteSidecar(int64_t start_realtime_ns, int64_t start_boottime_ns, double rate_hz,
                             std::string* error) const {
  const std::string path = SidecarPath();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << impl_->model.ToJson(start_realtime_ns, start_boottime_ns, rate_hz);
    out.flush();
    if (!out) {
      if (error) *error = "cannot write " + tmp;
      return false;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = "cannot rename " + tmp + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool Simulator::Run(const RunOptions& options, const volatile std::sig_atomic_t* stop,
                    RunStats* stats, std::string* error) {
  RunStats ignored;
  if (stats == nullptr) stats = &ignored;
  if (!(options.rate_hz > 0) || options.rate_hz > 10000) {
    if (error) *error = "rate_hz must be in (0, 10000]";
    return false;
  }
  const int64_t period_ns = std::max<int64_t>(1, Round(1e9 / options.rate_hz));
  // The start: CLOCK_REALTIME bracketed by two CLOCK_BOOTTIME reads.
  const int64_t b0 = NowNs(CLOCK_BOOTTIME);
  const int64_t start_real = NowNs(CLOCK_REALTIME);
  const int64_t b1 = NowNs(CLOCK_BOOTTIME);
  const int64_t start_boot = b0 + (b1 - b0) / 2;
  const int64_t start_mono = NowNs(CLOCK_MONOTONIC);

  for (int64_t k = 0;;) {
    if (stop != nullptr && *stop) break;
    const double t = static_cast<double>(NowNs(CLOCK_BOOTTIME) - start_boot) / 1e9;
    if (options.duration_s > 0 && t >= options.duration_s) break;
    impl_->Step(t);
    ++stats->ticks;
    if (stats->ticks == 1) {
      if (!WriteSidecar(start_real, start_boot, options.rate_hz, error)) return false;
      if (options.on_ready) options.on_ready();
    }
    // The next absolute deadline; skip the missed ones after an overrun.
    ++k;
    int64_t deadline = start_mono + k * period_ns;
    const int64_t now = NowNs(CLOCK_MONOTONIC);
    if (now >= deadline) {
      ++stats->overruns;
      k = (now - start_mono) / period_ns + 1;
      deadline = start_mono + k * period_ns;
    }
    timespec ts{static_cast<time_t>(deadline / 1'000'000'000),
                static_cast<long>(deadline % 1'000'000'000)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      if (stop != nullptr && *stop) break;
    }
  }
  return true;
}

size_t Simulator::open_files() const {
  return impl_->writer.size();
}

uint64_t Simulator::write_errors() const {
  return impl_->writer.errors();
}

}  // namespace edgemon::sim
