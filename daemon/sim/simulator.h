// The board simulator: a fixture board (tests/fixtures/<board>) copied into a
// scratch root whose values then change over time along known, analytic
// waveforms (waveform.h), for demos and end-to-end tests of edgemon.
//
// What moves (everything else keeps the fixture's value; each source in
// sources/<name of its collector>.cc, listed in sources/registry.cc):
//   /proc/stat           per-core jiffies at USER_HZ=100 following each online
//                        core's load; busy = floor(100 * integral(load)),
//                        total = floor(100 * t); the aggregate line adds the
//                        deltas of every core. Offline cores stay offline.
//   cpufreq              scaling_cur_freq/cpuinfo_cur_freq of each policy with
//                        an online core: min + (max - min) * the policy's mean
//                        load, snapped to scaling_available_frequencies.
//   devfreq GPU          device/load (permille) along a sine; cur_freq (and
//                        target_freq) follow it, snapped to available_frequencies.
//                        Thor's gpu-gpc-N has no load file: only its clock moves.
//   EMC                  the EMC rate files (bpmp clk, clk/emc, override.emc,
//                        devfreq bwmgr) switch between the fixture's rate and half
//                        of it (never below min); mc_all = load% x EMC kHz.
//   thermal zones        temp along a slow sine (period 4 x period_s); gated zones
//                        (-256000 or less) and PMIC* zones keep their value.
//   hwmon temp*_input    likewise (x86 coretemp, nvme, ...).
//   INA2xx (hwmon)       board monitors such as Thor's INA238 "VIN": powerN_input
//                        = round(P(t) * 1000) uW, currN_input = round(P * 1000 /
//                        inN_input) mA; inN_input and the shunt in0 stay.
//   INA3221 (hwmon)      currK_input = round(P(t) * 1000 / inK_input); inK_input
//                        stays; the shunt channels in4..6, in7 (sum) and curr4
//                        (sum) stay consistent where present.
//   ina3221x (iio)       in_powerK_input = round(P(t)); in_currentK_input =
//                        round(P * 1000 / V); ui_input_K and in_current_sum_input.
//   RAPL                 energy_uj = (start + floor(1000 * E(0, t))) mod
//                        max_energy_range_uj (counter runs 0..max-1).
//   power_supply battery current_now = P / V (uA, sign of the fixture kept);
//                        power_now when present; charge_now/energy_now move by
//                        the energy when the status is Charging/Discharging.
//   soctherm_oc          the last ocN_event_cnt: + 2 per burst, a burst at 1 s
//                        and then every 2 x period_s.
//   cooling devices      with stats/time_in_state_ms (not fans): throttling
//                        (cur_state 1, state 1's ms growing) in the second
//                        half of every 2 x period_s.
// A rail's base power is its fixture reading (V x I, in_power or powerN); RAPL zones
// and batteries without a power reading get documented defaults.
//
// Value files are opened once and rewritten in place (never replaced by
// rename, since readers keep them open): pwrite of the new text at offset 0,
// padded with spaces after its newline when it is shorter than the old text,
// then ftruncate to its length. A concurrent reader never sees an empty file,
// blanks alone or a stale tail after the newline. Unlike a real sysfs file,
// whose every read is formatted whole, a read that overlaps the copy of a
// write can mix old and new digits: the kernel copies page-cache reads
// without a lock against writers (rare: about once in 10^7 reads of a file
// rewritten every 45 us).
//
// The sidecar DIR/.edgemon-sim.json (written by Run() once the first values
// are in place, replaced atomically by rename) records the start of the
// simulated time and every waveform:
//   {"format": "edgemon-sim", "version": 1, "board": ..., "seed": ..., "period_s": ...,
//    "rate_hz": ..., "start_realtime_ns": ..., "start_boottime_ns": ...,
//    "rails": {name: {"base_mw", "amplitude", "phase", "voltage_mv", "source",
//                     "device"[, "energy_uj_start", "max_energy_range_uj"]}},
//    "cpus_load_fraction": {"cpu0": sine}, "temps_mc": {key: sine + "name"},
//    "gpus_load_permille": {entry: sine}, "emc_load_permille": sine}
// with sine = {"mean", "amplitude", "phase", "period_s"} (waveform.h formulas).
//
// Thread safety: one thread drives a Simulator.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/sim/waveform.h"

namespace edgemon::sim {

inline constexpr std::string_view kSidecarName = ".edgemon-sim.json";

class Simulator {
 public:
  struct Options {
    std::string board;  // recorded in the sidecar
    uint64_t seed = 1;
    double period_s = 10;
  };

  // Copies the fixture tree `from` into `to`, keeping symlinks verbatim (the
  // fixtures' links are relative, so they stay inside the copy). `to` must be
  // absent, empty, or an earlier simulator output (holding a sidecar), whose
  // contents are then replaced. INVALID_ARGUMENT for a `from` or `to` that
  // cannot be used, UNAVAILABLE when copying fails.
  static Status Materialise(const std::string& from, const std::string& to);

  // Scans a materialised root, derives every waveform from its values and
  // opens each file it will write. INVALID_ARGUMENT when `root` is not a
  // directory or is a live system tree, or the options are out of range.
  static Result<std::unique_ptr<Simulator>> Open(const std::string& root, const Options& options);

  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Writes every simulated value for time t_s (seconds since the start).
  // A pure function of t_s: no sleeping, and stepping to the same t twice
  // writes the same text. Negative t_s counts as 0.
  void Step(double t_s);

  const Model& model() const;
  double RailPowerMw(std::string_view rail, double t_s) const;
  double RailEnergyMj(std::string_view rail, double t0_s, double t1_s) const;

  const std::string& root() const;
  std::string SidecarPath() const;
  // Writes the sidecar (to a temporary name, then renamed into place).
  Status WriteSidecar(int64_t start_realtime_ns, int64_t start_boottime_ns, double rate_hz) const;

  struct RunOptions {
    double rate_hz = 20;
    double duration_s = 0;  // 0: until *stop
    // Called once the first values and the sidecar are in place.
    std::function<void()> on_ready;
  };
  struct RunStats {
    uint64_t ticks = 0;
    uint64_t overruns = 0;  // deadlines missed (the loop then skips ahead)
  };
  // The real-time loop: records the start (CLOCK_BOOTTIME bracketing
  // CLOCK_REALTIME), steps and writes the sidecar, then steps on absolute
  // CLOCK_MONOTONIC deadlines (clock_nanosleep TIMER_ABSTIME) with t taken
  // from CLOCK_BOOTTIME, until *stop is set or duration_s has elapsed.
  // INVALID_ARGUMENT for a rate out of range, UNAVAILABLE when the sidecar
  // cannot be written.
  Status Run(const RunOptions& options, const volatile std::sig_atomic_t* stop, RunStats* stats);

  // Files kept open for writing, and failed writes so far.
  size_t open_files() const;
  uint64_t write_errors() const;

 private:
  struct Impl;
  explicit Simulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgemon::sim
