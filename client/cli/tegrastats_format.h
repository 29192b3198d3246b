// Lines in tegrastats' own format, from edgemon's channels, so that scripts
// and parsers written for tegrastats keep working (`edgemon tegrastats`).
//
// The layout follows the lines that each L4T generation prints (see the
// examples in the project's Jetson facts):
//
//   R32 (JetPack 4; Nano, TX2, Xavier):
//     RAM 1180/3965MB (lfb 1x2MB) SWAP 149/1024MB (cached 7MB)
//     CPU [30%@1036,off,28%@1036,26%@1036] EMC_FREQ 10%@1600 GR3D_FREQ 0%@76
//     NVENC 716 APE 25 PLL@57C CPU@60.5C PMIC@100C POM_5V_IN 4520/4680 ...
//   R35 (JetPack 5): a "MM-DD-YYYY HH:MM:SS " prefix, GR3D_FREQ 0%@[1300] on
//     Orin, VIC_FREQ 729, rails "VDD_GPU_SOC 2340mW/2340mW".
//   R36+ (JetPack 6/7) and non-Jetson machines: as R35, plus idle engines
//     printed as "NVENC off" and the JP6 engine names NVDLA0 and PVA0_FREQ.
//
// Differences from tegrastats, all deliberate:
//   - A value edgemon could not read is left out, never printed as 0 or as
//     -256C: a gated thermal zone is not listed; the CPU block is left out
//     while any online core has no load yet (the daemon's first sample);
//     EMC_FREQ and GR3D_FREQ need their load.
//   - Engines carry no utilisation in edgemon, so a running engine prints
//     its clock only ("NVENC 115", as JetPack 4 does), never "NVENC 0%@115".
//   - The rail average is the mean of the readings printed so far (tegrastats
//     documents it only as "average power"); it restarts with the command.
//   - Names that are not single words (x86 "package-0") have their other
//     characters replaced by '_', so "(\w+)@" and "(\w+) (\d+)mW" still match.
//
// Thread safety: a TegrastatsFormatter is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "edgemon/channel.h"

namespace edgemon::cli {

struct TegrastatsStyle {
  bool timestamp = true;      // R35+: "MM-DD-YYYY HH:MM:SS " prefix (local time)
  bool rail_units = true;     // R35+: "VDD_IN 4520mW/4680mW"; R32: "VDD_IN 4520/4680"
  bool gpc_brackets = false;  // Orin R35+: "GR3D_FREQ 12%@[1300]"
  bool engines_off = true;    // R36+: idle engines as "NVENC off"; NVDLA0, PVA0_FREQ names
  bool vic_freq = false;      // R35: "VIC_FREQ 729"
};

// The style of the board's L4T release (BoardInfo::l4t), else of its SoC;
// a machine that is not a Jetson gets the newest style.
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
  // channels, keeping the rail averages of rails that still exist by name.
  void Rebind(const Inventory& inventory);

  // One line, without a newline. Updates the rail averages.
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
    bool always = false;  // APE: printed whenever its clock is known
    const Channel* state = nullptr;
    const Channel* freq = nullptr;
  };
  struct Average {
    double sum = 0;
    uint64_t count = 0;
  };

  const Channel* Find(Kind kind, const std::string& name, Field field) const;

  Inventory inventory_;
  TegrastatsStyle style_;
  std::vector<Core> cores_;
  std::vector<Named> temps_;
  std::vector<Named> rails_;
  std::vector<Engine> engines_;
  std::map<std::string, Average> rail_avg_;  // by printed rail name
};

}  // namespace edgemon::cli
