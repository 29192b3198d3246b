// Analytic waveforms of the board simulator (edgemon-sim).
//
// Every simulated quantity is a sine around a mean, with t in seconds since
// the simulation's start (CLOCK_BOOTTIME; the sidecar's start_boottime_ns):
//
//   x(t) = mean + amplitude * sin(2*pi*t/period_s + phase)
//
// Rail power is written relative to its base (the fixture's reading):
//
//   P(t) = base_mw * (1 + amplitude * sin(2*pi*t/period_s + phase))   [mW]
//   E(t0, t1) = base_mw * ((t1 - t0)
//               - amplitude * period_s / (2*pi) * (cos(w*t1 + phase) - cos(w*t0 + phase)))  [mJ]
//
// with 0 <= amplitude < 1 so power is never negative and every energy
// counter only grows. The Model holds every waveform of one board; it is
// what the simulator writes and what a test (C++ here, or any language from
// the JSON sidecar) computes as the truth.
//
// Thread safety: plain values, no internal state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/status.h"

namespace edgemon::sim {

inline constexpr double kPi = 3.14159265358979323846;

struct Sine {
  double mean = 0;
  double amplitude = 0;  // absolute, in the quantity's unit
  double phase = 0;      // radians
  double period_s = 10;

  double At(double t_s) const;
  // The exact integral over [t0, t1] (unit x seconds).
  double Integral(double t0_s, double t1_s) const;
};

// One simulated power rail. `name` is edgemon's channel name for it.
struct RailWave {
  std::string name;    // "VDD_IN", "POM_5V_GPU", "package-0/core", "BAT0"
  std::string source;  // "ina3221", "ina3221x", "ina238", "rapl", "power_supply"
  std::string device;  // edgemon's channel device ("ina3221 1-0040", "rapl intel-rapl:0")
  double base_mw = 0;
  double amplitude = 0;   // relative to base_mw, in [0, 1)
  double phase = 0;       // radians
  double voltage_mv = 0;  // constant bus voltage; 0 where the source has none (RAPL)
  // RAPL only: the counter's value at t = 0 and its wrap (0: none).
  int64_t energy_uj_start = 0;
  int64_t max_energy_range_uj = 0;

  double PowerMw(double t_s, double period_s) const;
  double EnergyMj(double t0_s, double t1_s, double period_s) const;
};

// Load of one online core, as a fraction 0..1.
struct CpuWave {
  int cpu = 0;
  Sine load;
};

// One simulated temperature (millidegree C).
struct TempWave {
  std::string key;   // "thermal_zone3" or "hwmon <chip>/temp2"
  std::string name;  // edgemon's channel name: the zone type, or "<chip>/<label or tempN>"
  Sine temp_mc;
};

// A GPU's load (permille); its frequency follows the load.
struct GpuWave {
  std::string entry;  // devfreq entry ("17000000.gpu")
  Sine load_permille;
};

class Model {
 public:
  std::string board;
  uint64_t seed = 1;
  double period_s = 10;
  std::vector<RailWave> rails;
  std::vector<CpuWave> cpus;
  std::vector<TempWave> temps;
  std::vector<GpuWave> gpus;
  std::optional<Sine> emc_load_permille;

  const RailWave* FindRail(std::string_view name) const;
  // Power of a rail at t (mW); NaN for an unknown rail.
  double RailPowerMw(std::string_view rail, double t_s) const;
  // The exact energy of a rail over [t0, t1] (mJ); NaN for an unknown rail.
  double RailEnergyMj(std::string_view rail, double t0_s, double t1_s) const;
  // Load of an online core at t (fraction); NaN for an unknown core.
  double CpuLoad(int cpu, double t_s) const;
  // Busy seconds of a core over [t0, t1]; NaN for an unknown core.
  double CpuBusySeconds(int cpu, double t0_s, double t1_s) const;

  // The sidecar JSON (see simulator.h for its format).
  std::string ToJson(int64_t start_realtime_ns, int64_t start_boottime_ns, double rate_hz) const;
};

// The contents of a sidecar file.
struct Sidecar {
  Model model;
  int64_t start_realtime_ns = 0;
  int64_t start_boottime_ns = 0;
  double rate_hz = 0;
};
// Parses a sidecar's text; INVALID_ARGUMENT saying why when it is not one.
Result<Sidecar> ParseSidecar(std::string_view text);
// Reads and parses a sidecar file; NOT_FOUND when it cannot be read.
Result<Sidecar> LoadSidecar(const std::string& path);

// Deterministic parameters: a uniform double in [0, 1) from a seed and a key
// (FNV-1a + splitmix64, the same on every platform).
double Uniform(uint64_t seed, std::string_view key);

}  // namespace edgemon::sim
