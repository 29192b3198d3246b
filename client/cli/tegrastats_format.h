// Lines in tegrastats' own format, from edgemon's channels, so that scripts
// and parsers written for tegrastats keep working (`edgemon tegrastats`).
//
// Each L4T release prints its own dialect; the board's release (BoardInfo::l4t)
// and SoC choose it (StyleFor). The layouts follow real lines of each release
// (the project's Jetson facts, §3.1, and the published lines cited in
// tests/client/cli/tegrastats_format_test.cc):
//
//   JetPack 4, R32 (Nano, TX2, Xavier): no timestamp, rails without units,
//     running engines only:
//       RAM 1180/3965MB (lfb 1x2MB) SWAP 149/1024MB (cached 7MB)
//       CPU [30%@1036,off,28%@1036,26%@1036] EMC_FREQ 10%@1600 GR3D_FREQ 0%@76
//       NVENC 716 APE 25 PLL@57C CPU@60.5C PMIC@100C POM_5V_IN 4520/4680 ...
//   JetPack 5, R35: a "MM-DD-YYYY HH:MM:SS " prefix, one GPU clock per GPC on
//     Orin (GR3D_FREQ 0%@[0,0] on AGX Orin), VIC_FREQ 729, upper-case zones,
//     rails "VDD_GPU_SOC 2340mW/2340mW".
//   JetPack 6, R36 (and machines that are not Jetsons): as R35, plus idle
//     engines printed as "NVENC off", the names NVDLA0 and PVA0_FREQ, and
//     lower-case zones ("cpu@65.562C").
//   Thor, R38 (JetPack 7.0/7.1): as R36, with GR3D_FREQ @[314,314,314] (the
//     clock of each of Thor's three GPCs; Thor's GPU has no load in sysfs, so
//     no percentage) and the engines NVENC0_FREQ @314, NVDEC1_FREQ @314,
//     OFA_FREQ @315, VIC off, PVA0_FREQ off, APE 300.
//   AGX Orin, R39 (JetPack 7.2): numbered engines (NVENC0 off NVDEC0 off
//     NVJPG0 off NVJPG1 off ... NVDLA1 off PVA0_FREQ off APE 174), two
//     values per temperature (cpu@52.968C/52.968C) and three per rail
//     (VDD_GPU_SOC 5139mW/5139mW/5139mW).
//   Thor, R39: the R38 Thor layout with R39's temperatures and rails.
//
// R39's extra values are not documented by NVIDIA. What the published lines
// show: the second temperature value and the third rail value are never
// below the first (cpu@58.25C/61.75C, VIN 87426mW/43713mW/87426mW) and equal
// it on a steady board; the second rail value moves like the R36 average.
// edgemon prints there the highest reading printed since the command started
// (temperature: current/highest; rail: current/mean/highest).
//
// Sizes (RAM, SWAP, cached) are KiB / 1024 rounded to the nearest MB, as the
// published lines show them: a swap area loses a page to its header, yet a
// 2 GiB swap file prints "SWAP 0/2048MB" and a 16 GiB one "16384MB".
//
// Differences from tegrastats, all deliberate:
//   - A value edgemon could not read is left out, never printed as 0 or as
//     -256C: a gated thermal zone is not listed; the CPU block is left out
//     while any online core has no load yet (the daemon's first sample);
//     EMC_FREQ needs its load, GR3D_FREQ its load too except on Thor.
//   - An engine's load is printed where edgemon reads one (NVML's codec
//     utilisation, on Thor and discrete GPUs) and the dialect prints loads
//     (R36, R39 Orin: "NVENC 1%@115", "NVENC 1%" without a clock); elsewhere
//     a running engine prints its clock only ("NVENC 115", as JetPack 4
//     does), never "NVENC 0%@115". Thor's lines print engine clocks only
//     ("NVENC0_FREQ @314"), and so does edgemon there.
//   - Each GPC shows the GPU's devfreq clock (the GPCs share that clock; the
//     count per board is the one in the board's published lines: AGX Orin
//     and Orin NX 2, other Orins 1, Thor 3).
//   - The rail average is the mean of the readings printed so far (tegrastats
//     documents it only as "average power"); it restarts with the command.
//   - Names that are not single words (x86 "package-0") have their other
//     characters replaced by '_', so "(\w+)@" and "(\w+) (\d+)mW" still match.
//   - On Jetsons only thermal zones are listed, as tegrastats does; other
//     machines also list their hwmon temperatures (coretemp, nvme, ...).
//
// Thread safety: a TegrastatsFormatter is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "edgemon/channel.h"

namespace edgemon::cli {

enum class TegrastatsDialect {
  kJetPack4,  // L4T R32
  kJetPack5,  // R35 (and R34)
  kJetPack6,  // R36, and machines that are not Jetsons
  kThorR38,   // JetPack 7.0/7.1, Thor only
  kOrinR39,   // JetPack 7.2 (and later releases) on Orin
  kThorR39,   // JetPack 7.2 (and later releases) on Thor
};

// How engines are named and printed.
enum class TegrastatsEngines {
  kPlain,     // R32/R35: NVENC, NVDEC, NVJPG, DLA0, PVA0
  kJetPack6,  // R36: NVDLA0, PVA0_FREQ
  kNumbered,  // R39 Orin: NVENC0, NVDEC0, NVJPG0, NVDLA0, PVA0_FREQ
  kThor,      // Thor: NVENC0_FREQ @314, OFA_FREQ @315, VIC, PVA0_FREQ
};

struct TegrastatsStyle {
  TegrastatsDialect dialect = TegrastatsDialect::kJetPack6;
  bool timestamp = true;         // R35+: "MM-DD-YYYY HH:MM:SS " prefix (local time)
  bool rail_units = true;        // R35+: "VDD_IN 4520mW/4680mW"; R32: "VDD_IN 4520/4680"
  int gpcs = 0;                  // Orin/Thor R35+: "GR3D_FREQ 12%@[1300,1300]", a clock per GPC
  bool gr3d_clock_only = false;  // Thor: "GR3D_FREQ @[314,314,314]" while there is no load
  bool engines_off = true;       // R36+: idle engines as "NVENC off"
  bool engine_load = true;       // R36, R39 Orin: "NVENC 1%@115" where the load is known
  bool vic_freq = false;         // R35: "VIC_FREQ 729"
  TegrastatsEngines engines = TegrastatsEngines::kJetPack6;
  bool temp_highest = false;  // R39: "cpu@52.968C/52.968C": current/highest
  bool rail_highest = false;  // R39: "VIN 5500mW/5500mW/5500mW": current/mean/highest
  bool zones_only = false;    // Jetsons: thermal zones only, not hwmon chips
};

// The dialect of the board's L4T release (BoardInfo::l4t) and SoC; without a
// release, the SoC's (R32 for T210/T186/T194, R38 for Thor, R36 for Orin); a
// machine that is not a Jetson gets the R36 layout.
TegrastatsDialect DialectFor(const BoardInfo& board);
TegrastatsStyle StyleFor(const BoardInfo& board);

// The name tegrastats prints for a thermal zone type: cut at the first '-'
// ("CPU-therm" -> "CPU", "tj-thermal" -> "tj", "PMIC-Die" -> "PMIC"),
// without a "_tegra" suffix ("Tboard_tegra" -> "Tboard"), other characters
// than [A-Za-z0-9_] replaced by '_'.
std::string TegrastatsTempName(const std::string& zone_type);

class TegrastatsFormatter {
 public:
  TegrastatsFormatter(const Inventory& inventory, TegrastatsStyle style);

  // After the daemon's inventory changed (a reconnect): re-resolves the
  // channels, keeping the rail averages and the highest readings of rails
  // and temperatures that still exist by name.
  void Rebind(const Inventory& inventory);

  // One line, without a newline. Updates the rail averages and highest readings.
  std::string Format(const Frame& frame);

 private:
  struct Core {
    int index = 0;
    const Channel* online = nullptr;
    const Channel* load = nullptr;
    const Channel* freq = nullptr;
  };
  struct Named {
    std::string label;
    ChannelId id = 0;
  };
  struct Engine {
    std::string label;
    bool always = false;    // APE: printed whenever its clock is known
    bool at_clock = false;  // Thor: "NVENC0_FREQ @314"
    const Channel* state = nullptr;
    const Channel* freq = nullptr;
    const Channel* load = nullptr;
  };
  struct RailStats {
    double sum = 0;
    uint64_t count = 0;
    int64_t highest = 0;
  };

  const Channel* Find(Kind kind, const std::string& name, Field field) const;

  Inventory inventory_;
  TegrastatsStyle style_;
  std::vector<Core> cores_;
  std::vector<Named> temps_;
  std::vector<Named> rails_;
  std::vector<Engine> engines_;
  std::map<std::string, RailStats> rail_stats_;     // by printed rail name
  std::map<std::string, int64_t> temp_highest_mc_;  // by printed zone name
};

}  // namespace edgemon::cli
