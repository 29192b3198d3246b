// The simulated sources of edgemon-sim, one file per source under sources/
// (named like the collector that reads it back), and what they share: the
// scratch tree they read and write (SimTree), its in-place writer of value
// files and the board's Model of waveforms.
//
// A source's Discover() reads the fixture's values, adds its waveforms to the
// model and opens every file it will write; Step(t) writes its values for
// time t (>= 0), a pure function of t. The Simulator runs every source of
// MakeSimSources() in that order (which is the order of the model's rails,
// temperatures and of the writes within a tick).
//
// Thread safety: one thread drives the sources of one SimTree.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/collect/collector.h"
#include "daemon/collect/parse.h"
#include "daemon/collect/sysfs.h"
#include "daemon/sim/simulator.h"
#include "daemon/sim/waveform.h"

namespace edgemon::sim {

// Temperatures at or below kGatedMc (gated sensors) or at or above
// kImplausibleMc keep their fixture value.
inline constexpr int64_t kGatedMc = -256000;
inline constexpr int64_t kImplausibleMc = 400000;

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

inline int64_t Round(double v) {
  return static_cast<int64_t>(std::llround(v));
}

inline double Clamp(double v, double lo, double hi) {
  return std::min(hi, std::max(lo, v));
}

// Whitespace- or comma-separated integers ("0 1 2 3", "0-3,5").
std::vector<int64_t> IntList(std::string_view s);
// The entry of `table` nearest to v; v rounded when the table is empty.
int64_t Snap(const std::vector<int64_t>& table, double v);

// The materialised root the sources read and write, and the board's model.
struct SimTree {
  RootedSysFs fs;
  Simulator::Options options;
  Model model;
  Writer writer;

  explicit SimTree(const std::string& root) : fs(root) {}

  // -- tree access ----------------------------------------------------------
  std::optional<int64_t> ReadInt(const std::string& path) { return edgemon::ReadInt(fs, path); }
  std::optional<std::string> ReadLine(const std::string& path) {
    return edgemon::ReadLine(fs, path);
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
};

class SimSource {
 public:
  virtual ~SimSource() = default;
  virtual void Discover(SimTree& tree) = 0;
  virtual void Step(SimTree& tree, double t) = 0;
};

// Temperature files moving along the model's temps (thermal zones and hwmon
// temp*_input): a slow sine (period 4 x period_s) around the fixture's value.
class TempFiles {
 public:
  void Add(SimTree& tree, const std::string& path, std::string key, std::string name, int64_t mc);
  void Step(SimTree& tree, double t) const;

 private:
  struct Temp {
    int wave = 0;  // index into model.temps
    int file = -1;
  };
  std::vector<Temp> files_;
};

std::unique_ptr<SimSource> MakeCpuSource();
std::unique_ptr<SimSource> MakeGpuDevfreqSource();
std::unique_ptr<SimSource> MakeEmcSource();
std::unique_ptr<SimSource> MakeThermalSource();
std::unique_ptr<SimSource> MakeHwmonSource();
std::unique_ptr<SimSource> MakeIna3221Source();
std::unique_ptr<SimSource> MakeIna3221IioSource();
std::unique_ptr<SimSource> MakeRaplSource();
std::unique_ptr<SimSource> MakePowerSupplySource();
std::unique_ptr<SimSource> MakeEventSource();

// Every simulated source, in the order they discover and write (registry.cc).
std::vector<std::unique_ptr<SimSource>> MakeSimSources();

}  // namespace edgemon::sim
