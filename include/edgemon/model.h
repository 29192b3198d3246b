// edgemon's history model: the value types the store reads back, the daemon
// summarizes and the client library receives (the edgemon.v1 messages of the
// same names are their wire form; proto/convert.h converts), and the rule
// that keeps a measured range non-empty.
//
// Missing is not zero: what was not measured is std::nullopt, never 0.
//
// Header-only value types; no internal synchronisation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edgemon/checked.h"

namespace edgemon {

// One step of a downsampled channel: min/avg/max of the present values in
// [t_ns, t_ns + step).
struct Bucket {
  int64_t t_ns = 0;  // start of the step
  int64_t min = 0;
  double avg = 0;
  int64_t max = 0;
  int64_t count = 0;  // number of present values folded in

  friend bool operator==(const Bucket&, const Bucket&) = default;
};

// What a run's window carries once it ended, for listings (edgemon runs):
// the caller's count of items and the command's exit status as it ended the
// window (absent when it sent none), and the board's input rail with its
// energy over the window, read by the daemon from its counters at the
// window's edges (absent without an input rail or a reading at both edges).
struct WindowResult {
  std::optional<double> items;
  std::optional<int32_t> exit_status;  // 0-255: the shell's status (128 + N: killed by signal N)
  std::string input_rail;              // "" when the board has no input rail
  std::optional<double> input_energy_mj;

  friend bool operator==(const WindowResult&, const WindowResult&) = default;
};

// A named window (a marker around a benchmark run). lease_ns and owner are
// kept by the store for the daemon's lease and ownership checks; a client
// sees the lease (the wire carries it in ms) but never the owner.
struct Window {
  int64_t id = 0;
  std::string label;
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;    // nullopt while open
  bool abandoned = false;           // closed because its lease ran out
  std::optional<int64_t> lease_ns;  // nullopt when unleased
  std::string owner;                // Principal key of who opened it ("": not recorded)
  WindowResult result;              // set when EndWindow ended it

  friend bool operator==(const Window&, const Window&) = default;
};

// A rail over a summarized range.
struct RailSummary {
  std::string name;
  std::string parent;
  bool input = false;                    // the board's input rail
  std::optional<double> energy_mj;       // none without a counter reading at both edges
  std::optional<double> avg_power_mw;    // none without a counter or power samples
  std::optional<int64_t> peak_power_mw;  // none when no sample fell in the range

  friend bool operator==(const RailSummary&, const RailSummary&) = default;
};

// A (non-constant) thermal zone over a summarized range.
struct TempSummary {
  std::string name;
  std::optional<int64_t> start_mc;  // none when the first reading could not be read
  int64_t min_mc = 0;
  int64_t max_mc = 0;

  friend bool operator==(const TempSummary&, const TempSummary&) = default;
};

// Share of the samples at each frequency of a CPU, GPU or EMC clock.
struct FreqResidency {
  std::string name;
  std::vector<std::pair<int64_t, double>> khz_share;  // sorted by frequency

  friend bool operator==(const FreqResidency&, const FreqResidency&) = default;
};

// A GPU's or a hardware engine's load over a summarized range.
struct LoadSummary {
  std::string kind;  // "gpu" or "engine"
  std::string name;
  double mean_permille = 0;   // over the samples that had a value
  int64_t peak_permille = 0;  // the highest sample

  friend bool operator==(const LoadSummary&, const LoadSummary&) = default;
};

// Energy, power, temperatures and frequencies over a time range.
struct Summary {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  double duration_s = 0;
  std::vector<RailSummary> rails;
  std::vector<TempSummary> temps;
  std::vector<FreqResidency> residency;
  // GPUs and engines with a load reading in the range (none: not read).
  std::vector<LoadSummary> loads;
  uint64_t samples = 0;
  uint64_t gaps = 0;  // missing frames (seq jumps or intervals over 1.5 periods)
  std::string note;   // uncertainty notes, "; "-separated ("" when none)
  // The effective rail sampling rates that held over the range (unknown
  // before the daemon's rate log begins).
  std::optional<double> min_rail_rate_hz;
  std::optional<double> max_rail_rate_hz;
  // The edges asked for, when the daemon clipped the range to its data
  // (from_ns/to_ns are then the measured range).
  std::optional<int64_t> requested_from_ns;  // before the oldest stored data
  std::optional<int64_t> requested_to_ns;    // after now
  // Stored frames in the range that could not be decoded and were left out
  // (also named in `note`).
  uint64_t bad_frames = 0;

  friend bool operator==(const Summary&, const Summary&) = default;
};

// The end of a measured range [from_ns, end): never empty, so the end is
// to_ns, or from_ns + 1 when to_ns is not after from_ns (saturating at the
// top of int64). A window that ended the instant it began, an open window
// measured up to now, a run that exited at once: each measures 1 ns at least.
constexpr int64_t NonEmptyEnd(int64_t from_ns, int64_t to_ns) {
  const int64_t least = AddSaturating(from_ns, 1);
  return to_ns < least ? least : to_ns;
}

// to_ns - from_ns in seconds (Summary::duration_s), for any two int64: no
// overflow, negative when to_ns is before from_ns.
constexpr double DurationS(int64_t from_ns, int64_t to_ns) {
  return (static_cast<double>(to_ns) - static_cast<double>(from_ns)) / 1e9;
}

}  // namespace edgemon
