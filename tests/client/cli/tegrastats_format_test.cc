// The tegrastats formatter, checked against real tegrastats lines of every
// release it imitates, three ways:
//   - a parser written from tegrastats' published format (the regular
//     expressions public tegrastats parsers use: jetson-stats' tegra_parse and
//     the exporters built on the same patterns), first validated on the real
//     lines, then applied to ours: every field of our line equals the field
//     of the real line it imitates;
//   - our line, given the real line's readings, equals the real line except
//     for the documented differences (tegrastats_format.h), spelled out per
//     release as substitutions;
//   - jetson-stats' (jtop's) own tegrastats field parsers, ported below,
//     read the documented fields (RAM, SWAP, CPU, EMC, GR3D, APE and the
//     engines, temperatures, rails) of our lines as the values we put in.
//
// The real lines: the project's Jetson facts (§3.1; JetPack 4 Nano, TX2 and
// Xavier, JetPack 5 AGX Orin, JetPack 6 Orin Nano, JetPack 7.2 AGX Orin from
// jetson-stats' jtop/tests/test_06_tegra_parse.py), and for Thor the lines
// published with public tegrastats parsers: an AGX Thor on L4T R38.4.0 (a Go
// parser's test case; another capture beside NVIDIA's R38.4 "Tegrastats
// Utility" guide page) and one on L4T R39.2.0 (wendylabsinc/WendyOS PR #1316,
// a capture without root: no EMC, GR3D or engines).
#include "client/cli/tegrastats_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace edgemon::cli {
namespace {

// ---------------------------------------------------------------- real lines
// JetPack 4 (R32.x), Jetson Nano, root (jetson-stats' tegrastats emulator).
const std::string kNanoR32 =
    "RAM 1180/3965MB (lfb 1x2MB) SWAP 149/1024MB (cached 7MB) IRAM 0/252kB(lfb 252kB) CPU "
    "[30%@1036,33%@1036,28%@1036,26%@1036] EMC_FREQ 10%@1600 GR3D_FREQ 0%@76 NVENC 716 NVDEC 716 "
    "APE 25 PLL@57C CPU@60.5C PMIC@100C GPU@59C AO@65C thermal@59.75C POM_5V_IN 4520/4680 "
    "POM_5V_GPU 0/0 POM_5V_CPU 1078/1205";
// JetPack 4, TX2, root (henrygd/beszel PR #1631).
const std::string kTx2R32 =
    "RAM 3276/7859MB (lfb 5x4MB) SWAP 1626/12122MB (cached 181MB) CPU "
    "[44%@1421,49%@2031,67%@2034,17%@1420,25%@1419,8%@1420] EMC_FREQ 1%@1866 GR3D_FREQ 0%@114 "
    "APE 150 MTS fg 1% bg 1% PLL@42.5C MCPU@42.5C PMIC@50C Tboard@38C GPU@39.5C BCPU@42.5C "
    "thermal@41.3C Tdiode@39.25C VDD_SYS_GPU 182/182 VDD_SYS_SOC 730/730 VDD_4V0_WIFI 0/0 VDD_IN "
    "5297/5297 VDD_SYS_CPU 1917/1917 VDD_SYS_DDR 1241/1241";
// JetPack 4.6, TX2 4GB, without root, two cores off (jetson-stats #187).
const std::string kTx2OffR32 =
    "RAM 1689/3825MB (lfb 339x4MB) SWAP 0/1913MB (cached 0MB) CPU "
    "[3%@345,off,off,0%@345,1%@345,1%@345] EMC_FREQ 0% GR3D_FREQ 0% PLL@50.5C MCPU@50.5C "
    "PMIC@50C GPU@50C BCPU@50.5C thermal@50.3C";
// JetPack 4.2, AGX Xavier, without root (martinkersner/gtop PR #7); the facts
// keep the CPU block elided, so it is left out here (and from our line).
const std::string kXavierR32 =
    "RAM 14700/15692MB (lfb 3x2MB) SWAP 898/8192MB (cached 23MB) EMC_FREQ 0% GR3D_FREQ 0% AO@30C "
    "GPU@30.5C Tboard@31C Tdiode@32C AUX@30.5C CPU@31.5C thermal@30.8C PMIC@100C GPU 463/463 CPU "
    "618/618 SOC 2936/2936 CV 0/0 VDDRQ 309/309 SYS5V 3306/3306";
// JetPack 5, AGX Orin 64GB (GDWR/jetson_exporter #14), CPU block elided as above.
const std::string kAgxOrinR35 =
    "04-11-2025 10:36:27 RAM 4321/62801MB (lfb 1759x4MB) SWAP 19/31400MB (cached 0MB) EMC_FREQ "
    "0%@2133 GR3D_FREQ 0%@[0,0] VIC_FREQ 729 APE 174 CV0@-256C CPU@44.562C Tboard@32C "
    "SOC2@40.093C Tdiode@33C SOC0@41.093C CV1@-256C GPU@-256C tj@44.343C SOC1@41.25C CV2@-256C "
    "VDD_GPU_SOC 2340mW/2340mW VDD_CPU_CV 390mW/390mW VIN_SYS_5V0 4025mW/4025mW NC 0mW/0mW "
    "VDDQ_VDD2_1V8AO 301mW/301mW NC 0mW/0mW";
// JetPack 6 (R36), Orin Nano 8GB (jetson-stats #624).
const std::string kOrinNanoR36 =
    "05-15-2025 18:30:28 RAM 6982/7620MB (lfb 5x1MB) SWAP 2640/16384MB (cached 202MB) CPU "
    "[97%@1984,95%@1984,95%@1984,91%@1984,88%@1984,93%@247] EMC_FREQ 18%@3199 GR3D_FREQ "
    "84%@[713] NVENC 1%@115 NVDEC 40%@115 NVJPG off NVJPG1 off VIC 31%@115 OFA off NVDLA0 off "
    "PVA0_FREQ off APE 174 cv0@63.031C cpu@65.562C soc2@64.156C soc0@63.031C cv1@62.937C "
    "gpu@63.5C tj@65.562C soc1@64.718C cv2@60.875C VDD_IN 17946mW/15710mW VDD_CPU_GPU_CV "
    "8896mW/7585mW VDD_SOC 3923mW/3515mW";
// JetPack 7.2 (R39.2), AGX Orin devkit (jetson-stats jtop/tests/test_06_tegra_parse.py).
const std::string kAgxOrinR39 =
    "07-25-2026 09:08:28 RAM 20642/62817MB (lfb 1x2MB) CPU "
    "[23%@2201,10%@2201,4%@2201,14%@2201,30%@2201,18%@2201,10%@2201,10%@2201,33%@2201,7%@2201,5%@"
    "2201,27%@2201] EMC_FREQ 3%@3199 GR3D_FREQ 12%@[1300,1300] NVENC0 off NVDEC0 off NVJPG0 off "
    "NVJPG1 off VIC off OFA off NVDLA0 off NVDLA1 off PVA0_FREQ off APE 174 "
    "cpu@52.968C/52.968C soc2@48.406C/48.406C soc0@49.531C/49.531C gpu@47.625C/47.625C "
    "VDD_GPU_SOC 5139mW/5139mW/5139mW VDD_CPU_CV 3268mW/3268mW/3268mW VIN_SYS_5V0 "
    "5500mW/5500mW/5500mW";
// L4T R38.4 (JetPack 7.1), AGX Thor, root, GPU in use (capture beside NVIDIA's
// R38.4 Tegrastats Utility guide).
const std::string kThorR38 =
    "04-21-2026 15:50:52 RAM 105265/125772MB (lfb 34x4MB) CPU "
    "[0%@972,0%@972,0%@972,0%@972,0%@972,0%@972,1%@972,0%@972,0%@972,0%@972,0%@972,8%@972,0%@972,"
    "0%@972] EMC_FREQ 0%@2750 GR3D_FREQ @[314,314,314] NVENC0_FREQ @314 NVENC1_FREQ @314 "
    "NVDEC0_FREQ @314 NVDEC1_FREQ @314 NVJPG0_FREQ @314 VIC off OFA_FREQ @315 PVA0_FREQ off APE "
    "300 cpu@37.343C tj@38.875C soc012@37.468C gpu@38.875C soc345@37.406C VDD_GPU 1962mW/1962mW "
    "VDD_CPU_SOC_MSS 5887mW/5887mW VIN_SYS_5V0 5635mW/5635mW VIN 19780mW/19780mW";
// L4T R38.4.0, AGX Thor, root, GPU power-gated: its zone is not listed and its
// GPC clocks read 0 (a Go tegrastats parser's test case).
const std::string kThorR38Idle =
    "05-17-2026 10:00:32 RAM 4208/125773MB (lfb 31x4MB) SWAP 0/2048MB (cached 0MB) CPU "
    "[1%@972,0%@972,0%@972,0%@972,1%@972,0%@972,1%@972,1%@972,0%@972,0%@972,3%@972,0%@972,0%@972,"
    "1%@972] EMC_FREQ 0%@665 GR3D_FREQ @[0,0,0] NVENC0_FREQ @0 NVENC1_FREQ @0 NVDEC0_FREQ @0 "
    "NVDEC1_FREQ @0 NVJPG0_FREQ @0 VIC off OFA_FREQ @0 PVA0_FREQ off APE 300 cpu@34.468C "
    "tj@34.5C soc012@33.781C soc345@34.5C VDD_GPU 0mW/0mW VDD_CPU_SOC_MSS 4165mW/4165mW "
    "VIN_SYS_5V0 4126mW/4126mW";
// L4T R39.2.0 (JetPack 7.2), AGX Thor, without root (wendylabsinc/WendyOS PR #1316).
const std::string kThorR39 =
    "07-02-2026 13:45:44 RAM 36529/125749MB (lfb 12x4MB) SWAP 11/4096MB (cached 9MB) CPU "
    "[2%@972,1%@972,0%@972,0%@972,0%@972,0%@972,0%@972,0%@972,0%@972,0%@972,0%@972,0%@972,0%@972,"
    "2%@972] cpu@60.406C tj@63.281C soc012@58.468C gpu@62.906C soc345@63.281C VDD_GPU "
    "37528mW/37528mW/37528mW VDD_CPU_SOC_MSS 18961mW/18961mW/18961mW VIN_SYS_5V0 "
    "18331mW/18331mW/18331mW VIN 87426mW/43713mW/87426mW";

// ---------------------------------------------------------------- parser
struct Gr3d;
struct Temp;
struct Rail;
void PrintTo(const Gr3d& g, std::ostream* os);
void PrintTo(const Temp& t, std::ostream* os);
void PrintTo(const Rail& r, std::ostream* os);

struct Gr3d {
  std::optional<int> load;
  std::vector<int> mhz;  // the clock, or one per GPC between brackets
  bool brackets = false;
  bool operator==(const Gr3d&) const = default;
};
struct Temp {
  std::string name;
  double c = 0;
  std::optional<double> highest;  // R39: name@XC/YC
  bool operator==(const Temp&) const = default;
};
struct Rail {
  int cur = 0;
  int avg = 0;
  std::optional<int> highest;  // R39: cur/avg/highest
  bool operator==(const Rail&) const = default;
};

std::string Opt(const std::optional<int>& v) {
  return v ? std::to_string(*v) : std::string("-");
}
void PrintTo(const Gr3d& g, std::ostream* os) {
  *os << "GR3D " << Opt(g.load) << "% @" << (g.brackets ? "[" : "");
  for (int f : g.mhz) *os << f << ",";
  *os << (g.brackets ? "]" : "");
}
void PrintTo(const Temp& t, std::ostream* os) {
  *os << t.name << "@" << t.c << "C";
  if (t.highest) *os << "/" << *t.highest << "C";
}
void PrintTo(const Rail& r, std::ostream* os) {
  *os << r.cur << "/" << r.avg << "/" << Opt(r.highest);
}

struct Parsed {
  std::optional<std::string> timestamp;
  std::optional<std::vector<int>> ram;   // used, total, lfb n, lfb size, in the line's unit
  std::string ram_lfb_unit;              // "M" or "k"
  std::optional<std::vector<int>> swap;  // used, total, cached
  bool has_cpu = false;
  std::vector<std::optional<std::pair<int, int>>> cpus;   // load%, MHz; nullopt = off
  std::optional<std::pair<int, std::optional<int>>> emc;  // load%, MHz
  std::optional<Gr3d> gr3d;
  std::map<std::string, std::string> vals;  // NAME value (VALS_RE)
  std::vector<std::string> off;             // engines printed "NAME off"
  std::vector<Temp> temps;
  std::map<std::string, Rail> rails;  // mW
  bool rails_have_units = false;
};

std::vector<int> Ints(const std::string& list) {
  std::vector<int> out;
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    out.push_back(std::stoi(list.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

const std::regex kTimestamp(R"(^(\d\d-\d\d-\d{4} \d\d:\d\d:\d\d) )");

Parsed ParseTegrastats(const std::string& full) {
  Parsed p;
  std::smatch m;
  static const std::regex kRam(R"(RAM (\d+)/(\d+)(\w)B( ?)\(lfb (\d+)x(\d+)(\w)B\))");
  static const std::regex kSwap(R"(SWAP (\d+)/(\d+)(\w)B( ?)\(cached (\d+)(\w)B\))");
  static const std::regex kCpu(R"(CPU \[(.*?)\])");
  static const std::regex kValFreq(R"(^(\d+)%@(\d+)$)");
  static const std::regex kEmc(R"(EMC_FREQ (\d+)%(@(\d+))?)");
  static const std::regex kGr3d(R"(GR3D_FREQ (?:(\d+)%)?(?:@(?:\[([0-9,]+)\]|(\d+)))?)");
  static const std::regex kVals(R"(\b([A-Z0-9_]+) ([0-9%@]+)(?=[^/])\b)");
  static const std::regex kOff(R"(\b([A-Z0-9_]+) off\b)");
  static const std::regex kTemp(R"(\b(\w+)@(-?[0-9.]+)C(?:/(-?[0-9.]+)C)?\b)");
  static const std::regex kRailMw(R"(\b(\w+) (-?\d+)mW/(-?\d+)mW(?:/(-?\d+)mW)?\b)");
  static const std::regex kRailOld(R"(\b(\w+) ([0-9.]+)/([0-9.]+)\b)");

  std::string line = full;
  if (std::regex_search(full, m, kTimestamp)) {
    p.timestamp = m[1];
    line = m.suffix();
  }
  if (std::regex_search(line, m, kRam)) {
    p.ram = std::vector<int>{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[5]), std::stoi(m[6])};
    p.ram_lfb_unit = m[7];
  }
  if (std::regex_search(line, m, kSwap)) {
    p.swap = std::vector<int>{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[5])};
  }
  if (std::regex_search(line, m, kCpu)) {
    p.has_cpu = true;
    std::string list = m[1];
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      std::string item = list.substr(start, end - start);
      std::smatch c;
      if (item == "off") {
        p.cpus.push_back(std::nullopt);
      } else if (std::regex_match(item, c, kValFreq)) {
        p.cpus.push_back(std::make_pair(std::stoi(c[1]), std::stoi(c[2])));
      } else {
        ADD_FAILURE() << "CPU entry '" << item << "' is neither off nor load%@MHz";
      }
      start = end + 1;
    }
  }
  if (std::regex_search(line, m, kEmc)) {
    p.emc = {std::stoi(m[1]), m[3].matched ? std::optional<int>(std::stoi(m[3])) : std::nullopt};
  }
  if (std::regex_search(line, m, kGr3d)) {
    Gr3d g;
    if (m[1].matched) g.load = std::stoi(m[1]);
    if (m[2].matched) {
      g.brackets = true;
      g.mhz = Ints(m[2]);
    } else if (m[3].matched) {
      g.mhz = {std::stoi(m[3])};
    }
    p.gr3d = g;
  }
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kVals);
       it != std::sregex_iterator(); ++it) {
    p.vals[(*it)[1]] = (*it)[2];
  }
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kOff); it != std::sregex_iterator();
       ++it) {
    p.off.push_back((*it)[1]);
  }
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kTemp);
       it != std::sregex_iterator(); ++it) {
    Temp t{(*it)[1], std::stod((*it)[2]), std::nullopt};
    if ((*it)[3].matched) t.highest = std::stod((*it)[3]);
    p.temps.push_back(t);
  }
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kRailMw);
       it != std::sregex_iterator(); ++it) {
    Rail r{std::stoi((*it)[2]), std::stoi((*it)[3]), std::nullopt};
    if ((*it)[4].matched) r.highest = std::stoi((*it)[4]);
    p.rails[(*it)[1]] = r;
    p.rails_have_units = true;
  }
  if (!p.rails_have_units) {
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kRailOld);
         it != std::sregex_iterator(); ++it) {
      p.rails[(*it)[1]] = {std::stoi((*it)[2]), std::stoi((*it)[3]), std::nullopt};
    }
  }
  return p;
}

double TempOf(const Parsed& p, const std::string& name) {
  for (const auto& t : p.temps) {
    if (t.name == name) return t.c;
  }
  return -1000;
}

// Every field of `ours` equals the field of `real`.
void ExpectSameFields(const Parsed& real, const Parsed& ours) {
  EXPECT_EQ(ours.timestamp, real.timestamp);
  EXPECT_EQ(ours.ram, real.ram);
  EXPECT_EQ(ours.ram_lfb_unit, real.ram_lfb_unit);
  EXPECT_EQ(ours.swap, real.swap);
  EXPECT_EQ(ours.has_cpu, real.has_cpu);
  EXPECT_EQ(ours.cpus, real.cpus);
  EXPECT_EQ(ours.emc, real.emc);
  EXPECT_EQ(ours.gr3d.has_value(), real.gr3d.has_value());
  if (ours.gr3d && real.gr3d) {
    EXPECT_EQ(ours.gr3d->load, real.gr3d->load);
    EXPECT_EQ(ours.gr3d->mhz, real.gr3d->mhz);
    EXPECT_EQ(ours.gr3d->brackets, real.gr3d->brackets);
  }
  EXPECT_EQ(ours.vals, real.vals);
  EXPECT_EQ(ours.off, real.off);
  EXPECT_EQ(ours.temps, real.temps);
  EXPECT_EQ(ours.rails, real.rails);
  EXPECT_EQ(ours.rails_have_units, real.rails_have_units);
}

// `line` with each `from` replaced by its `to` (once each, and each must be there).
std::string Substitute(std::string line,
                       const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) {
    const size_t at = line.find(from);
    EXPECT_NE(at, std::string::npos) << "'" << from << "' is not in the real line";
    if (at != std::string::npos) line.replace(at, from.size(), to);
  }
  return line;
}

// Our line equals `expected` (the real line, with the documented differences
// applied), and so does every field the parser reads from it.
void ExpectLine(const std::string& line, const std::string& expected) {
  SCOPED_TRACE(line);
  EXPECT_EQ(line, expected);
  ExpectSameFields(ParseTegrastats(expected), ParseTegrastats(line));
}

// ---------------------------------------------------------------- jtop's parsers
// jetson-stats' jtop/core/tegra_parse.py, ported: RAM_RE, SWAP_RE, CPU_RE,
// VALS_RE with val_freq(), TEMP_RE and WATT_RE (VOLT_RE in older releases),
// plus what jtop 7.2's tests document of its newer forms: DATE() strips the
// timestamp, VALS_ARRAY_RE reads GR3D_FREQ [N%]@[f,...] (the first GPC's
// clock), and VALS_PLAIN_RE is VALS_RE refusing to half-match that form.
struct JtopVal {
  std::optional<int> val;
  std::optional<int> frq;
  bool operator==(const JtopVal&) const = default;
};
void PrintTo(const JtopVal& v, std::ostream* os) {
  *os << "{val " << Opt(v.val) << ", frq " << Opt(v.frq) << "}";
}
struct Jtop {
  std::optional<std::vector<int>> ram;       // use, tot, nblock, size
  std::optional<std::vector<int>> swap;      // use, tot, cached size
  std::vector<std::optional<JtopVal>> cpus;  // nullopt: "OFF"
  std::map<std::string, JtopVal> vals;       // "GR3D", "EMC", "APE", "NVENC", ...
  std::vector<std::string> val_failures;     // values val_freq() cannot read (jtop raises)
  std::map<std::string, double> temps;
  std::map<std::string, std::pair<double, double>> watts;  // cur, avg
};

// val_freq(): "N%@M" -> val, frq; a plain number -> val; else jtop raises.
std::optional<JtopVal> JtopValFreq(const std::string& v) {
  static const std::regex kValFre(R"(\b(\d+)%@(\d+))");
  std::smatch m;
  if (v.find('@') != std::string::npos) {
    if (!std::regex_search(v, m, kValFre)) return std::nullopt;
    return JtopVal{std::stoi(m[1]), std::stoi(m[2])};
  }
  return JtopVal{std::stoi(v), std::nullopt};
}

std::string JtopName(const std::string& name) {
  return name.find("FREQ") != std::string::npos ? name.substr(0, name.find('_')) : name;
}

const std::regex kJtopValsPlain(R"(\b([A-Z0-9_]+) ([0-9%@]+)(?!%?@\[)(?=[^/])\b)");
const std::regex kJtopValsArray(R"(\b([A-Z0-9_]+) (?:(\d+)%)?@\[([0-9,]+)\])");

Jtop JtopParse(const std::string& full) {
  static const std::regex kRam(R"(RAM (\d+)\/(\d+)(\w)B( ?)\(lfb (\d+)x(\d+)(\w)B\))");
  static const std::regex kSwap(R"(SWAP (\d+)\/(\d+)(\w)B( ?)\(cached (\d+)(\w)B\))");
  static const std::regex kCpu(R"(CPU \[(.*?)\])");
  static const std::regex kTemp(R"(\b(\w+)@(-?[0-9.]+)C\b)");
  static const std::regex kWatt(R"(\b(\w+) ([0-9.]+)\/([0-9.]+)\b)");
  Jtop j;
  std::smatch m;
  const std::string text = std::regex_replace(full, kTimestamp, "");  // DATE()
  if (std::regex_search(text, m, kRam)) {
    j.ram = std::vector<int>{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[5]), std::stoi(m[6])};
  }
  if (std::regex_search(text, m, kSwap)) {
    j.swap = std::vector<int>{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[5])};
  }
  if (std::regex_search(text, m, kCpu)) {
    std::string list = m[1];
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      const std::string item = list.substr(start, end - start);
      if (item == "off") {
        j.cpus.push_back(std::nullopt);
      } else {
        auto v = JtopValFreq(item);
        if (!v) j.val_failures.push_back("CPU " + item);
        j.cpus.push_back(v.value_or(JtopVal{}));
      }
      start = end + 1;
    }
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kJtopValsArray);
       it != std::sregex_iterator(); ++it) {
    JtopVal v;
    if ((*it)[2].matched) v.val = std::stoi((*it)[2]);
    v.frq = Ints((*it)[3]).front();
    j.vals[JtopName((*it)[1])] = v;
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kJtopValsPlain);
       it != std::sregex_iterator(); ++it) {
    auto v = JtopValFreq((*it)[2]);
    if (!v) {
      j.val_failures.push_back((*it)[1].str() + " " + (*it)[2].str());
      continue;
    }
    j.vals[JtopName((*it)[1])] = *v;
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kTemp);
       it != std::sregex_iterator(); ++it) {
    j.temps[(*it)[1]] = std::stod((*it)[2]);
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kWatt);
       it != std::sregex_iterator(); ++it) {
    j.watts[(*it)[1]] = {std::stod((*it)[2]), std::stod((*it)[3])};
  }
  return j;
}

// ---------------------------------------------------------------- boards
// A board described the way edgemond's collectors declare it.
class Board {
 public:
  explicit Board(BoardInfo info) { inv_.board = std::move(info); }

  ChannelId Add(Kind kind, const std::string& name, Field field, std::string device = {}) {
    Channel c;
    c.id = static_cast<ChannelId>(inv_.channels.size());
    c.kind = kind;
    c.name = name;
    c.field = field;
    c.unit = UnitOf(field);
    c.device = std::move(device);
    inv_.channels.push_back(c);
    return c.id;
  }
  // Declares and sets in one go. Thermal channels are zones, as the
  // thermal collector declares them ("thermal_zoneN").
  void Put(Kind kind, const std::string& name, Field field, std::optional<int64_t> v,
           std::string device = {}) {
    const Channel* c = inv_.Find(kind, name, field);
    if (c == nullptr && kind == Kind::kThermal && device.empty()) {
      device = "thermal_zone" + std::to_string(zones_++);
    }
    ChannelId id = c != nullptr ? c->id : Add(kind, name, field, std::move(device));
    if (values_.size() <= id) values_.resize(id + 1);
    values_[id] = v;
  }
  Frame MakeFrame(int64_t realtime_ns = 1'763'892'000'000'000'000) const {
    Frame f;
    f.seq = 7;
    f.realtime_ns = realtime_ns;
    f.values = values_;
    f.values.resize(inv_.channels.size());
    return f;
  }
  const Inventory& inventory() const { return inv_; }

 private:
  Inventory inv_;
  std::vector<Value> values_;
  int zones_ = 0;
};

BoardInfo Info(std::string model, std::string soc, std::string l4t) {
  BoardInfo b;
  b.model = std::move(model);
  b.soc = std::move(soc);
  b.l4t = std::move(l4t);
  return b;
}

// "MM-DD-YYYY HH:MM:SS" as a UTC instant in ns; the formatter prints local
// time, so the tests that use it run with TZ=UTC.
int64_t UtcNs(const std::string& stamp) {
  setenv("TZ", "UTC", 1);
  tzset();
  struct tm tm = {};
  tm.tm_mon = std::stoi(stamp.substr(0, 2)) - 1;
  tm.tm_mday = std::stoi(stamp.substr(3, 2));
  tm.tm_year = std::stoi(stamp.substr(6, 4)) - 1900;
  tm.tm_hour = std::stoi(stamp.substr(11, 2));
  tm.tm_min = std::stoi(stamp.substr(14, 2));
  tm.tm_sec = std::stoi(stamp.substr(17, 2));
  return static_cast<int64_t>(timegm(&tm)) * 1'000'000'000;
}

void PutMemory(Board& b, int64_t total_kib, int64_t used_kib, int64_t lfb_n, int64_t lfb_kib,
               int64_t swap_total, int64_t swap_used, int64_t swap_cached) {
  b.Put(Kind::kMemory, "ram", Field::kTotal, total_kib);
  b.Put(Kind::kMemory, "ram", Field::kUsed, used_kib);
  b.Put(Kind::kMemory, "ram", Field::kLfbBlocks, lfb_n);
  b.Put(Kind::kMemory, "ram", Field::kLfbSize, lfb_kib);
  b.Put(Kind::kSwap, "swap", Field::kTotal, swap_total);
  b.Put(Kind::kSwap, "swap", Field::kUsed, swap_used);
  b.Put(Kind::kSwap, "swap", Field::kCached, swap_cached);
}

// Per core: load permille and kHz, or nullopt for an offline core.
using Cores = std::vector<std::optional<std::pair<int64_t, int64_t>>>;
void PutCpus(Board& b, const Cores& cores) {
  for (size_t i = 0; i < cores.size(); ++i) {
    const std::string name = "cpu" + std::to_string(i);
    b.Put(Kind::kCpu, name, Field::kOnline, cores[i] ? 1 : 0);
    b.Put(Kind::kCpu, name, Field::kLoad,
          cores[i] ? std::optional<int64_t>(cores[i]->first) : std::nullopt);
    b.Put(Kind::kCpu, name, Field::kFreq,
          cores[i] ? std::optional<int64_t>(cores[i]->second) : std::nullopt);
  }
}

// The cores of a real line's CPU block, as edgemon's channels would hold them.
Cores CoresOf(const Parsed& real) {
  Cores out;
  for (const auto& c : real.cpus) {
    if (c) {
      out.push_back(std::make_pair(int64_t{c->first} * 10, int64_t{c->second} * 1000));
    } else {
      out.push_back(std::nullopt);
    }
  }
  return out;
}

// A real line's RAM and SWAP fields as edgemon's memory channels (KiB).
void PutMemoryOf(Board& b, const Parsed& real) {
  ASSERT_TRUE(real.ram);
  const auto& r = *real.ram;
  const int64_t lfb_kib = real.ram_lfb_unit == "M" ? int64_t{r[3]} * 1024 : r[3];
  const std::vector<int> none = {0, 0, 0};
  const auto& s = real.swap ? *real.swap : none;
  PutMemory(b, int64_t{r[1]} * 1024, int64_t{r[0]} * 1024, r[2], lfb_kib, int64_t{s[1]} * 1024,
            int64_t{s[0]} * 1024, int64_t{s[2]} * 1024);
}

// The temperatures of a real line as thermal zones of these types.
void PutTempsOf(Board& b, const Parsed& real, const std::vector<std::string>& zone_types) {
  ASSERT_EQ(real.temps.size(), zone_types.size());
  for (size_t i = 0; i < zone_types.size(); ++i) {
    EXPECT_EQ(TegrastatsTempName(zone_types[i]), real.temps[i].name);
    b.Put(Kind::kThermal, zone_types[i], Field::kTemp, std::llround(real.temps[i].c * 1000));
  }
}

// Rails of a real line: the reading before the last one is chosen so that
// the mean of the two is the line's average (and the highest its highest).
struct RailFrames {
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> rails;  // first, last
};
RailFrames RailsOf(const Parsed& real, const std::vector<std::string>& order) {
  RailFrames out;
  for (const auto& name : order) {
    const Rail& r = real.rails.at(name);
    out.rails.push_back({name, {int64_t{2} * r.avg - r.cur, r.cur}});
  }
  return out;
}

// Formats two frames (the rails' first readings, then the line's) and
// returns the second line.
std::string FormatTwice(Board& b, const RailFrames& rails, int64_t realtime_ns) {
  for (const auto& [name, v] : rails.rails) b.Put(Kind::kRail, name, Field::kPower, v.first);
  TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
  f.Format(b.MakeFrame(realtime_ns - 1'000'000'000));
  for (const auto& [name, v] : rails.rails) b.Put(Kind::kRail, name, Field::kPower, v.second);
  return f.Format(b.MakeFrame(realtime_ns));
}

void ExpectCpus(const Parsed& p, const Cores& cores) {
  ASSERT_TRUE(p.has_cpu);
  ASSERT_EQ(p.cpus.size(), cores.size());
  for (size_t i = 0; i < cores.size(); ++i) {
    if (!cores[i]) {
      EXPECT_FALSE(p.cpus[i].has_value()) << "cpu" << i;
      continue;
    }
    ASSERT_TRUE(p.cpus[i].has_value()) << "cpu" << i;
    EXPECT_NEAR(p.cpus[i]->first, cores[i]->first / 10.0, 0.5) << "cpu" << i;
    EXPECT_EQ(p.cpus[i]->second, cores[i]->second / 1000) << "cpu" << i;
  }
}

// ---------------------------------------------------------------- the parsers
// The parser itself, on the real lines, before it judges ours.
TEST(TegrastatsParser, ReadsRealLines) {
  Parsed p = ParseTegrastats(kNanoR32);
  EXPECT_FALSE(p.timestamp);
  ASSERT_TRUE(p.ram);
  EXPECT_EQ(*p.ram, (std::vector<int>{1180, 3965, 1, 2}));
  ASSERT_TRUE(p.swap);
  EXPECT_EQ(*p.swap, (std::vector<int>{149, 1024, 7}));
  ASSERT_EQ(p.cpus.size(), 4u);
  EXPECT_EQ(p.cpus[1], std::make_pair(33, 1036));
  EXPECT_EQ(p.emc->first, 10);
  EXPECT_EQ(p.emc->second, 1600);
  EXPECT_EQ(p.gr3d->mhz, std::vector<int>{76});
  EXPECT_EQ(p.vals["NVENC"], "716");
  EXPECT_EQ(p.vals["APE"], "25");
  EXPECT_EQ(p.vals.count("POM_5V_IN"), 0u);  // rails are not plain values
  EXPECT_DOUBLE_EQ(TempOf(p, "thermal"), 59.75);
  EXPECT_EQ(p.temps.size(), 6u);
  EXPECT_EQ(p.rails["POM_5V_IN"], (Rail{4520, 4680, std::nullopt}));
  EXPECT_EQ(p.rails["POM_5V_CPU"], (Rail{1078, 1205, std::nullopt}));

  p = ParseTegrastats(kTx2OffR32);
  ASSERT_EQ(p.cpus.size(), 6u);
  EXPECT_FALSE(p.cpus[1].has_value());
  EXPECT_FALSE(p.cpus[2].has_value());
  EXPECT_EQ(p.cpus[5], std::make_pair(1, 345));
  EXPECT_FALSE(p.emc->second.has_value());
  EXPECT_TRUE(p.gr3d->mhz.empty());
  EXPECT_TRUE(p.rails.empty());

  p = ParseTegrastats(kOrinNanoR36);
  EXPECT_EQ(p.timestamp, "05-15-2025 18:30:28");
  EXPECT_EQ(p.cpus[5], std::make_pair(93, 247));
  EXPECT_EQ(p.gr3d, (Gr3d{84, {713}, true}));
  EXPECT_EQ(p.emc->second, 3199);
  EXPECT_EQ(p.vals["APE"], "174");
  EXPECT_EQ(p.off, (std::vector<std::string>{"NVJPG", "NVJPG1", "OFA", "NVDLA0", "PVA0_FREQ"}));
  EXPECT_DOUBLE_EQ(TempOf(p, "cpu"), 65.562);
  EXPECT_TRUE(p.rails_have_units);
  EXPECT_EQ(p.rails["VDD_IN"], (Rail{17946, 15710, std::nullopt}));
  EXPECT_EQ(p.rails.size(), 3u);

  p = ParseTegrastats(kAgxOrinR39);
  EXPECT_EQ(p.cpus.size(), 12u);
  EXPECT_FALSE(p.swap);
  EXPECT_EQ(p.gr3d, (Gr3d{12, {1300, 1300}, true}));
  EXPECT_EQ(p.off.size(), 9u);
  EXPECT_EQ(p.off.front(), "NVENC0");
  ASSERT_EQ(p.temps.size(), 4u);
  EXPECT_EQ(p.temps[0], (Temp{"cpu", 52.968, 52.968}));
  EXPECT_EQ(p.rails["VDD_GPU_SOC"], (Rail{5139, 5139, 5139}));

  p = ParseTegrastats(kThorR38);
  EXPECT_EQ(p.cpus.size(), 14u);
  EXPECT_EQ(p.emc, std::make_pair(0, std::optional<int>(2750)));
  EXPECT_EQ(p.gr3d, (Gr3d{std::nullopt, {314, 314, 314}, true}));
  EXPECT_EQ(p.vals["NVENC0_FREQ"], "@314");
  EXPECT_EQ(p.vals["OFA_FREQ"], "@315");
  EXPECT_EQ(p.off, (std::vector<std::string>{"VIC", "PVA0_FREQ"}));
  EXPECT_EQ(p.temps[3], (Temp{"gpu", 38.875, std::nullopt}));
  EXPECT_EQ(p.rails["VIN"], (Rail{19780, 19780, std::nullopt}));

  p = ParseTegrastats(kThorR39);
  EXPECT_FALSE(p.gr3d);
  EXPECT_EQ(p.rails["VIN"], (Rail{87426, 43713, 87426}));
  EXPECT_EQ(p.temps.size(), 5u);
}

// The jtop port, on the forms jtop 7.2's tests document.
TEST(TegrastatsParser, JtopPortReadsWhatJtopDocuments) {
  Jtop j = JtopParse(kAgxOrinR39);
  EXPECT_EQ(j.vals["GR3D"], (JtopVal{12, 1300}));
  EXPECT_EQ(j.vals["EMC"], (JtopVal{3, 3199}));
  EXPECT_EQ(j.vals["APE"], (JtopVal{174, std::nullopt}));
  EXPECT_EQ(j.vals.count("2026"), 0u);  // the timestamp is not a value
  EXPECT_TRUE(j.val_failures.empty());
  j = JtopParse(
      "RAM 4722/7844MB (lfb 1x512kB) EMC_FREQ 2%@1866 GR3D_FREQ @[1000,1000,1000] APE 150");
  EXPECT_EQ(j.vals["GR3D"], (JtopVal{std::nullopt, 1000}));
  EXPECT_EQ(JtopParse("GR3D_FREQ 10%@1300 APE 150").vals["GR3D"], (JtopVal{10, 1300}));
  EXPECT_EQ(JtopParse("GR3D_FREQ 0%@[1300,1300]").vals["GR3D"], (JtopVal{0, 1300}));
  const std::string s = "GR3D_FREQ 0%@[1300,1300] APE 174 VIC off";
  std::vector<std::string> plain;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), kJtopValsPlain);
       it != std::sregex_iterator(); ++it) {
    plain.push_back((*it)[1].str() + " " + (*it)[2].str());
  }
  EXPECT_EQ(plain, std::vector<std::string>{"APE 174"});
  // R32: WATT_RE reads the unit-less rails; NVENC is a clock.
  j = JtopParse(kNanoR32);
  EXPECT_EQ(j.watts["POM_5V_IN"], std::make_pair(4520.0, 4680.0));
  EXPECT_EQ(j.vals["NVENC"], (JtopVal{716, std::nullopt}));
  EXPECT_EQ(j.temps["thermal"], 59.75);
  // Thor's engine clocks ("NVENC0_FREQ @314") are values val_freq() cannot read.
  j = JtopParse(kThorR38);
  EXPECT_EQ(j.val_failures,
            (std::vector<std::string>{"NVENC0_FREQ @314", "NVENC1_FREQ @314", "NVDEC0_FREQ @314",
                                      "NVDEC1_FREQ @314", "NVJPG0_FREQ @314", "OFA_FREQ @315"}));
  EXPECT_EQ(j.vals["GR3D"], (JtopVal{std::nullopt, 314}));
  EXPECT_EQ(j.vals["APE"], (JtopVal{300, std::nullopt}));
}

// ---------------------------------------------------------------- dialects
TEST(TegrastatsFormat, DialectPerReleaseAndSoc) {
  using D = TegrastatsDialect;
  EXPECT_EQ(DialectFor(Info("Jetson Nano", "tegra210", "32.7.1")), D::kJetPack4);
  EXPECT_EQ(DialectFor(Info("AGX Xavier", "tegra194", "")), D::kJetPack4);
  EXPECT_EQ(DialectFor(Info("AGX Orin", "tegra234", "35.4.1")), D::kJetPack5);
  EXPECT_EQ(DialectFor(Info("Orin Nano", "tegra234", "36.4.3")), D::kJetPack6);
  EXPECT_EQ(DialectFor(Info("AGX Orin", "tegra234", "")), D::kJetPack6);
  EXPECT_EQ(DialectFor(Info("AGX Thor", "tegra264", "38.2.0")), D::kThorR38);
  EXPECT_EQ(DialectFor(Info("AGX Thor", "tegra264", "")), D::kThorR38);
  EXPECT_EQ(DialectFor(Info("AGX Orin", "tegra234", "39.2.0")), D::kOrinR39);
  EXPECT_EQ(DialectFor(Info("AGX Thor", "tegra264", "39.2.0")), D::kThorR39);
  EXPECT_EQ(DialectFor(Info("AGX Orin", "tegra234", "40.0")), D::kOrinR39);  // the newest known
  EXPECT_EQ(DialectFor(Info("ThinkPad", "", "")), D::kJetPack6);
}

TEST(TegrastatsFormat, StylePerDialect) {
  const TegrastatsStyle nano = StyleFor(Info("Jetson Nano", "tegra210", "32.7.1"));
  EXPECT_FALSE(nano.timestamp);
  EXPECT_FALSE(nano.rail_units);
  EXPECT_EQ(nano.gpcs, 0);
  EXPECT_FALSE(nano.engines_off);
  EXPECT_TRUE(nano.zones_only);
  const TegrastatsStyle orin5 = StyleFor(Info("NVIDIA Jetson AGX Orin", "tegra234", "35.4.1"));
  EXPECT_TRUE(orin5.timestamp);
  EXPECT_TRUE(orin5.rail_units);
  EXPECT_EQ(orin5.gpcs, 2);
  EXPECT_TRUE(orin5.vic_freq);
  EXPECT_FALSE(orin5.engines_off);
  const TegrastatsStyle orin6 = StyleFor(Info("Orin Nano", "tegra234", "36.4.3"));
  EXPECT_TRUE(orin6.engines_off);
  EXPECT_FALSE(orin6.vic_freq);
  EXPECT_EQ(orin6.gpcs, 1);
  EXPECT_EQ(orin6.engines, TegrastatsEngines::kJetPack6);
  EXPECT_FALSE(orin6.temp_highest);
  const TegrastatsStyle orin39 = StyleFor(Info("NVIDIA Jetson AGX Orin", "tegra234", "39.2.0"));
  EXPECT_EQ(orin39.engines, TegrastatsEngines::kNumbered);
  EXPECT_TRUE(orin39.temp_highest);
  EXPECT_TRUE(orin39.rail_highest);
  EXPECT_FALSE(orin39.gr3d_clock_only);
  const TegrastatsStyle thor38 = StyleFor(Info("NVIDIA Jetson AGX Thor", "tegra264", "38.4.0"));
  EXPECT_EQ(thor38.gpcs, 3);
  EXPECT_TRUE(thor38.gr3d_clock_only);
  EXPECT_EQ(thor38.engines, TegrastatsEngines::kThor);
  EXPECT_FALSE(thor38.temp_highest);
  EXPECT_FALSE(thor38.rail_highest);
  const TegrastatsStyle thor39 = StyleFor(Info("NVIDIA Jetson AGX Thor", "tegra264", "39.2.0"));
  EXPECT_TRUE(thor39.rail_highest);
  EXPECT_TRUE(thor39.gr3d_clock_only);
  const TegrastatsStyle xavier_no_l4t = StyleFor(Info("AGX Xavier", "tegra194", ""));
  EXPECT_FALSE(xavier_no_l4t.rail_units);
  const TegrastatsStyle x86 = StyleFor(Info("ThinkPad", "", ""));
  EXPECT_TRUE(x86.timestamp);
  EXPECT_TRUE(x86.rail_units);
  EXPECT_EQ(x86.gpcs, 0);
  EXPECT_FALSE(x86.zones_only);
}

TEST(TegrastatsFormat, TempNames) {
  EXPECT_EQ(TegrastatsTempName("CPU-therm"), "CPU");
  EXPECT_EQ(TegrastatsTempName("tj-thermal"), "tj");
  EXPECT_EQ(TegrastatsTempName("soc012-thermal"), "soc012");
  EXPECT_EQ(TegrastatsTempName("PMIC-Die"), "PMIC");
  EXPECT_EQ(TegrastatsTempName("thermal-fan-est"), "thermal");
  EXPECT_EQ(TegrastatsTempName("Tboard_tegra"), "Tboard");
  EXPECT_EQ(TegrastatsTempName("x86_pkg_temp"), "x86_pkg_temp");
  EXPECT_EQ(TegrastatsTempName("coretemp/Package id 0"), "coretemp_Package_id_0");
}

// ---------------------------------------------------------------- each release
// JetPack 4, Jetson Nano: the real line but its IRAM field (edgemon has no IRAM).
TEST(TegrastatsRelease, JetPack4Nano) {
  const Parsed real = ParseTegrastats(kNanoR32);
  Board b(Info("NVIDIA Jetson Nano Developer Kit", "tegra210", "32.7.1"));
  PutMemoryOf(b, real);
  PutCpus(b, CoresOf(real));
  b.Put(Kind::kEmc, "emc", Field::kFreq, 1600000);
  b.Put(Kind::kEmc, "emc", Field::kLoad, 100);
  b.Put(Kind::kGpu, "gpu", Field::kFreq, 76800);
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 0);
  for (const char* engine : {"NVENC", "NVDEC"}) {
    b.Put(Kind::kEngine, engine, Field::kState, 1);
    b.Put(Kind::kEngine, engine, Field::kFreq, 716800);
  }
  b.Put(Kind::kEngine, "NVJPG", Field::kState, 0);  // idle: not printed before R36
  b.Put(Kind::kEngine, "NVJPG", Field::kFreq, 716800);
  b.Put(Kind::kEngine, "APE", Field::kState, 1);
  b.Put(Kind::kEngine, "APE", Field::kFreq, 25000);
  b.Put(Kind::kEngine, "SE", Field::kState, 1);  // tegrastats has no SE
  b.Put(Kind::kEngine, "SE", Field::kFreq, 200000);
  PutTempsOf(b, real,
             {"PLL-therm", "CPU-therm", "PMIC-Die", "GPU-therm", "AO-therm", "thermal-fan-est"});
  b.Put(Kind::kRail, "POM_5V_IN", Field::kVoltage, 5088);  // not a tegrastats field
  const std::string line =
      FormatTwice(b, RailsOf(real, {"POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"}), 1'700'000'000);
  ExpectLine(line, Substitute(kNanoR32, {{"IRAM 0/252kB(lfb 252kB) ", ""}}));
}

// JetPack 4, TX2 with root: the real line but MTS (not read by edgemon).
TEST(TegrastatsRelease, JetPack4Tx2) {
  const Parsed real = ParseTegrastats(kTx2R32);
  Board b(Info("quill", "tegra186", "32.7.4"));
  PutMemoryOf(b, real);
  PutCpus(b, CoresOf(real));
  b.Put(Kind::kEmc, "emc", Field::kFreq, 1866000);
  b.Put(Kind::kEmc, "emc", Field::kLoad, 10);
  b.Put(Kind::kGpu, "gpu", Field::kFreq, 114750);
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 0);
  b.Put(Kind::kEngine, "APE", Field::kFreq, 150000);
  PutTempsOf(b, real,
             {"PLL-therm", "MCPU-therm", "PMIC-Die", "Tboard_tegra", "GPU-therm", "BCPU-therm",
              "thermal-fan-est", "Tdiode_tegra"});
  const std::string line = FormatTwice(b,
                                       RailsOf(real, {"VDD_SYS_GPU", "VDD_SYS_SOC", "VDD_4V0_WIFI",
                                                      "VDD_IN", "VDD_SYS_CPU", "VDD_SYS_DDR"}),
                                       1'700'000'000);
  ExpectLine(line, Substitute(kTx2R32, {{"MTS fg 1% bg 1% ", ""}}));
}

// JetPack 4.6, TX2 without root: EMC and GPU loads without clocks, two cores
// off, no rails.
TEST(TegrastatsRelease, JetPack4Tx2WithoutRoot) {
  const Parsed real = ParseTegrastats(kTx2OffR32);
  Board b(Info("quill", "tegra186", "32.6.1"));
  PutMemoryOf(b, real);
  PutCpus(b, CoresOf(real));
  b.Put(Kind::kEmc, "emc", Field::kLoad, 3);  // 0.3 % rounds to 0
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 0);
  PutTempsOf(b, real,
             {"PLL-therm", "MCPU-therm", "PMIC-Die", "GPU-therm", "BCPU-therm", "thermal-fan-est"});
  TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
  const std::string line = f.Format(b.MakeFrame());
  ExpectLine(line, kTx2OffR32);
}

// JetPack 4.2, AGX Xavier without root: a zone and a rail both named "GPU".
TEST(TegrastatsRelease, JetPack4Xavier) {
  const Parsed real = ParseTegrastats(kXavierR32);
  Board b(Info("Jetson-AGX", "tegra194", "32.1.0"));
  PutMemoryOf(b, real);
  b.Put(Kind::kEmc, "emc", Field::kLoad, 0);
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 0);
  PutTempsOf(b, real,
             {"AO-therm", "GPU-therm", "Tboard_tegra", "Tdiode_tegra", "AUX-therm", "CPU-therm",
              "thermal-fan-est", "PMIC-Die"});
  const std::string line =
      FormatTwice(b, RailsOf(real, {"GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"}), 1'700'000'000);
  ExpectLine(line, kXavierR32);
}

// JetPack 5, AGX Orin: two GPC clocks, VIC_FREQ; gated zones (-256C) and the
// NC channels are not printed.
TEST(TegrastatsRelease, JetPack5AgxOrin) {
  const Parsed real = ParseTegrastats(kAgxOrinR35);
  Board b(Info("NVIDIA Jetson AGX Orin Developer Kit", "tegra234", "35.4.1"));
  PutMemoryOf(b, real);
  b.Put(Kind::kEmc, "emc", Field::kLoad, 0);
  b.Put(Kind::kEmc, "emc", Field::kFreq, 2133000);
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 0);
  b.Put(Kind::kGpu, "gpu", Field::kFreq, 0);
  b.Put(Kind::kEngine, "VIC", Field::kState, 1);
  b.Put(Kind::kEngine, "VIC", Field::kFreq, 729600);
  b.Put(Kind::kEngine, "NVENC", Field::kState, 0);
  b.Put(Kind::kEngine, "APE", Field::kFreq, 174000);
  const std::vector<std::pair<std::string, std::optional<int64_t>>> zones = {
      {"CV0-therm", std::nullopt}, {"CPU-therm", 44562},        {"Tboard_tegra", 32000},
      {"SOC2-therm", 40093},       {"Tdiode_tegra", 33000},     {"SOC0-therm", 41093},
      {"CV1-therm", std::nullopt}, {"GPU-therm", std::nullopt}, {"tj-therm", 44343},
      {"SOC1-therm", 41250},       {"CV2-therm", std::nullopt}};
  for (const auto& [zone, mc] : zones) b.Put(Kind::kThermal, zone, Field::kTemp, mc);
  const std::string line =
      FormatTwice(b, RailsOf(real, {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}),
                  UtcNs("04-11-2025 10:36:27"));
  ExpectLine(line, Substitute(kAgxOrinR35, {{"CV0@-256C ", ""},
                                            {"CV1@-256C GPU@-256C ", ""},
                                            {" CV2@-256C", ""},
                                            {"NC 0mW/0mW ", ""},
                                            {" NC 0mW/0mW", ""}}));
  const Parsed ours = ParseTegrastats(line);
  EXPECT_EQ(ours.gr3d, (Gr3d{0, {0, 0}, true}));
  EXPECT_EQ(ours.vals.at("VIC_FREQ"), "729");
  EXPECT_EQ(ours.temps.size() + 4, real.temps.size());  // the four gated zones
}

// JetPack 6, Orin Nano: the board of the real line, with or without the
// engines' load (which edgemon reads only where NVML measures it).
std::string OrinNanoR36Line(bool engine_load) {
  const Parsed real = ParseTegrastats(kOrinNanoR36);
  Board b(Info("NVIDIA Jetson Orin Nano Developer Kit", "tegra234", "36.4.3"));
  PutMemoryOf(b, real);
  PutCpus(b, CoresOf(real));
  b.Put(Kind::kEmc, "emc", Field::kLoad, 180);
  b.Put(Kind::kEmc, "emc", Field::kFreq, 3199000);
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 840);
  b.Put(Kind::kGpu, "gpu", Field::kFreq, 713000);
  for (const char* on : {"NVENC", "NVDEC", "VIC"}) {
    b.Put(Kind::kEngine, on, Field::kState, 1);
    b.Put(Kind::kEngine, on, Field::kFreq, 115200);
  }
  if (engine_load) {
    b.Put(Kind::kEngine, "NVENC", Field::kLoad, 10);
    b.Put(Kind::kEngine, "NVDEC", Field::kLoad, 400);
    b.Put(Kind::kEngine, "VIC", Field::kLoad, 310);
  }
  for (const char* off : {"NVJPG", "NVJPG1", "OFA", "DLA0", "PVA0"}) {
    b.Put(Kind::kEngine, off, Field::kState, 0);
  }
  b.Put(Kind::kEngine, "APE", Field::kFreq, 174000);
  PutTempsOf(b, real,
             {"cv0-thermal", "cpu-thermal", "soc2-thermal", "soc0-thermal", "cv1-thermal",
              "gpu-thermal", "tj-thermal", "soc1-thermal", "cv2-thermal"});
  return FormatTwice(b, RailsOf(real, {"VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"}),
                     UtcNs("05-15-2025 18:30:28"));
}

// Without engine load: the real line but the engines' utilisation
// ("NVENC 1%@115" -> "NVENC 115").
TEST(TegrastatsRelease, JetPack6OrinNano) {
  ExpectLine(OrinNanoR36Line(false), Substitute(kOrinNanoR36, {{"NVENC 1%@115", "NVENC 115"},
                                                               {"NVDEC 40%@115", "NVDEC 115"},
                                                               {"VIC 31%@115", "VIC 115"}}));
}

// With engine load: the real line exactly ("NVENC 1%@115 NVDEC 40%@115 ...").
TEST(TegrastatsRelease, JetPack6OrinNanoWithEngineLoad) {
  ExpectLine(OrinNanoR36Line(true), kOrinNanoR36);
}

// An engine whose load is known without its clock (NVML's codecs on a
// machine without the debugfs clocks) prints its load alone; Thor's lines
// print engine clocks only, and so does edgemon there.
TEST(TegrastatsFormat, EngineLoadPerDialect) {
  Board jp6(Info("NVIDIA Jetson Orin Nano Developer Kit", "tegra234", "36.4.3"));
  jp6.Put(Kind::kEngine, "NVENC", Field::kLoad, 120);
  const std::string jp6_line = FormatTwice(jp6, {}, UtcNs("05-15-2025 18:30:28"));
  EXPECT_TRUE(jp6_line.ends_with(" NVENC 12%")) << jp6_line;
  Board r39(Info("NVIDIA Jetson AGX Orin Developer Kit", "tegra234", "39.2.0"));
  r39.Put(Kind::kEngine, "NVDEC", Field::kState, 1);
  r39.Put(Kind::kEngine, "NVDEC", Field::kFreq, 115200);
  r39.Put(Kind::kEngine, "NVDEC", Field::kLoad, 400);
  EXPECT_NE(FormatTwice(r39, {}, UtcNs("05-15-2025 18:30:28")).find(" NVDEC0 40%@115"),
            std::string::npos);
  Board thor(Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "38.2.0"));
  thor.Put(Kind::kEngine, "NVENC", Field::kState, 1);
  thor.Put(Kind::kEngine, "NVENC", Field::kFreq, 314000);
  thor.Put(Kind::kEngine, "NVENC", Field::kLoad, 120);
  const std::string line = FormatTwice(thor, {}, UtcNs("05-15-2025 18:30:28"));
  EXPECT_NE(line.find(" NVENC0_FREQ @314"), std::string::npos) << line;
  EXPECT_EQ(line.find('%'), std::string::npos) << line;
}

// JetPack 7.2, AGX Orin: the real line exactly (numbered engines, two values
// per temperature, three per rail, two GPC clocks).
TEST(TegrastatsRelease, R39AgxOrin) {
  const Parsed real = ParseTegrastats(kAgxOrinR39);
  Board b(Info("NVIDIA Jetson AGX Orin Developer Kit", "tegra234", "39.2.0"));
  PutMemoryOf(b, real);
  PutCpus(b, CoresOf(real));
  b.Put(Kind::kEmc, "emc", Field::kLoad, 30);
  b.Put(Kind::kEmc, "emc", Field::kFreq, 3199000);
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 120);
  b.Put(Kind::kGpu, "gpu", Field::kFreq, 1300500);
  for (const char* off :
       {"NVENC", "NVDEC", "NVJPG", "NVJPG1", "VIC", "OFA", "DLA0", "DLA1", "PVA0"}) {
    b.Put(Kind::kEngine, off, Field::kState, 0);
    b.Put(Kind::kEngine, off, Field::kFreq, 115200);
  }
  b.Put(Kind::kEngine, "APE", Field::kState, 1);
  b.Put(Kind::kEngine, "APE", Field::kFreq, 174000);
  PutTempsOf(b, real, {"cpu-thermal", "soc2-thermal", "soc0-thermal", "gpu-thermal"});
  b.Put(Kind::kThermal, "cv0-thermal", Field::kTemp, std::nullopt);  // gated
  const std::string line = FormatTwice(
      b, RailsOf(real, {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"}), UtcNs("07-25-2026 09:08:28"));
  ExpectLine(line, kAgxOrinR39);
}

// L4T R38, AGX Thor: the real lines exactly: GR3D_FREQ with the clock of
// each of the three GPCs and no load, EMC as on Orin, Thor's engine names.
void PutThor(Board& b, const Parsed& real, int64_t emc_khz, int64_t gpc_khz, int64_t engine_khz,
             int64_t ofa_khz) {
  PutMemoryOf(b, real);
  PutCpus(b, CoresOf(real));
  b.Put(Kind::kEmc, "emc", Field::kLoad, 0);
  b.Put(Kind::kEmc, "emc", Field::kFreq, emc_khz);
  b.Put(Kind::kGpu, "gpu", Field::kFreq, gpc_khz);  // gpu-gpc-0: no load on Thor
  b.Put(Kind::kGpu, "gpu", Field::kFreqMax, 1575000);
  b.Put(Kind::kDevfreq, "gpu-nvd-0", Field::kFreq, 564000);  // not a tegrastats field
  for (const char* on : {"NVENC", "NVENC1", "NVDEC", "NVDEC1", "NVJPG"}) {
    b.Put(Kind::kEngine, on, Field::kState, 1);
    b.Put(Kind::kEngine, on, Field::kFreq, engine_khz);
  }
  b.Put(Kind::kEngine, "VIC", Field::kState, 0);
  b.Put(Kind::kEngine, "OFA", Field::kState, 1);
  b.Put(Kind::kEngine, "OFA", Field::kFreq, ofa_khz);
  b.Put(Kind::kEngine, "PVA0", Field::kState, 0);
  b.Put(Kind::kEngine, "APE", Field::kState, 1);
  b.Put(Kind::kEngine, "APE", Field::kFreq, 300000);
}

TEST(TegrastatsRelease, R38Thor) {
  const Parsed real = ParseTegrastats(kThorR38);
  Board b(Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "38.4.0"));
  PutThor(b, real, 2750000, 314000, 314000, 315000);
  PutTempsOf(b, real,
             {"cpu-thermal", "tj-thermal", "soc012-thermal", "gpu-thermal", "soc345-thermal"});
  b.Put(Kind::kThermal, "ina238/temp1", Field::kTemp, 41250, "hwmon ina238");  // not a zone
  const std::string line =
      FormatTwice(b, RailsOf(real, {"VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN"}),
                  UtcNs("04-21-2026 15:50:52"));
  ExpectLine(line, kThorR38);
}

TEST(TegrastatsRelease, R38ThorGpuGated) {
  const Parsed real = ParseTegrastats(kThorR38Idle);
  Board b(Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "38.4.0"));
  PutThor(b, real, 665000, 0, 0, 0);
  b.Put(Kind::kThermal, "cpu-thermal", Field::kTemp, 34468);
  b.Put(Kind::kThermal, "tj-thermal", Field::kTemp, 34500);
  b.Put(Kind::kThermal, "soc012-thermal", Field::kTemp, 33781);
  b.Put(Kind::kThermal, "gpu-thermal", Field::kTemp, std::nullopt);  // EAGAIN while gated
  b.Put(Kind::kThermal, "soc345-thermal", Field::kTemp, 34500);
  const std::string line =
      FormatTwice(b, RailsOf(real, {"VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0"}),
                  UtcNs("05-17-2026 10:00:32"));
  ExpectLine(line, kThorR38Idle);
}

// L4T R39, AGX Thor, as a capture without root shows it (no EMC, GPU or
// engine readings): R39's three rail values; the zones carry R39's second
// value, which that capture (without root) does not show.
TEST(TegrastatsRelease, R39Thor) {
  const Parsed real = ParseTegrastats(kThorR39);
  Board b(Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "39.2.0"));
  PutMemoryOf(b, real);
  PutCpus(b, CoresOf(real));
  PutTempsOf(b, real,
             {"cpu-thermal", "tj-thermal", "soc012-thermal", "gpu-thermal", "soc345-thermal"});
  const std::string line =
      FormatTwice(b, RailsOf(real, {"VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN"}),
                  UtcNs("07-02-2026 13:45:44"));
  SCOPED_TRACE(line);
  EXPECT_EQ(line, Substitute(kThorR39, {{"cpu@60.406C", "cpu@60.406C/60.406C"},
                                        {"tj@63.281C", "tj@63.281C/63.281C"},
                                        {"soc012@58.468C", "soc012@58.468C/58.468C"},
                                        {"gpu@62.906C", "gpu@62.906C/62.906C"},
                                        {"soc345@63.281C", "soc345@63.281C/63.281C"}}));
  Parsed ours = ParseTegrastats(line);
  for (auto& t : ours.temps) {
    EXPECT_EQ(t.highest, t.c) << t.name;
    t.highest.reset();
  }
  ExpectSameFields(real, ours);

  // With root: the GPC clocks, and a load where the GPU has one.
  b.Put(Kind::kGpu, "gpu", Field::kFreq, 1575000);
  TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
  EXPECT_EQ(ParseTegrastats(f.Format(b.MakeFrame())).gr3d,
            (Gr3d{std::nullopt, {1575, 1575, 1575}, true}));
  b.Put(Kind::kGpu, "gpu", Field::kLoad, 870);
  f.Rebind(b.inventory());
  EXPECT_EQ(ParseTegrastats(f.Format(b.MakeFrame())).gr3d, (Gr3d{87, {1575, 1575, 1575}, true}));
}

// R39's second temperature value and third rail value are the highest
// readings printed so far: they rise with the readings and stay when these
// fall, and survive a Rebind.
TEST(TegrastatsFormat, R39HighestReadingsSoFar) {
  Board b(Info("NVIDIA Jetson AGX Orin Developer Kit", "tegra234", "39.2.0"));
  TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
  const std::vector<std::pair<int64_t, int64_t>> readings = {
      {50000, 4000}, {52500, 6100}, {51000, 3000}, {49000, 5000}};
  int64_t top_mc = 0, top_mw = 0;
  double sum = 0;
  for (size_t i = 0; i < readings.size(); ++i) {
    b.Put(Kind::kThermal, "cpu-thermal", Field::kTemp, readings[i].first);
    b.Put(Kind::kRail, "VDD_GPU_SOC", Field::kPower, readings[i].second);
    f.Rebind(b.inventory());
    top_mc = std::max(top_mc, readings[i].first);
    top_mw = std::max(top_mw, readings[i].second);
    sum += static_cast<double>(readings[i].second);
    const Parsed p = ParseTegrastats(f.Format(b.MakeFrame()));
    ASSERT_EQ(p.temps.size(), 1u);
    EXPECT_DOUBLE_EQ(p.temps[0].c, readings[i].first / 1000.0);
    EXPECT_EQ(p.temps[0].highest, top_mc / 1000.0);
    const Rail& r = p.rails.at("VDD_GPU_SOC");
    EXPECT_EQ(r.cur, readings[i].second);
    EXPECT_NEAR(r.avg, sum / static_cast<double>(i + 1), 0.5);
    EXPECT_EQ(r.highest, top_mw);
  }
  // A missing reading is left out, and does not count.
  b.Put(Kind::kThermal, "cpu-thermal", Field::kTemp, std::nullopt);
  b.Put(Kind::kRail, "VDD_GPU_SOC", Field::kPower, std::nullopt);
  Parsed p = ParseTegrastats(f.Format(b.MakeFrame()));
  EXPECT_TRUE(p.temps.empty());
  EXPECT_TRUE(p.rails.empty());
  b.Put(Kind::kThermal, "cpu-thermal", Field::kTemp, 40000);
  b.Put(Kind::kRail, "VDD_GPU_SOC", Field::kPower, 1000);
  p = ParseTegrastats(f.Format(b.MakeFrame()));
  EXPECT_EQ(p.temps[0].highest, 52.5);
  EXPECT_EQ(p.rails.at("VDD_GPU_SOC").highest, 6100);
}

// On a Jetson only thermal zones are listed, as tegrastats lists them; a
// machine that is not a Jetson lists its hwmon temperatures too.
TEST(TegrastatsFormat, JetsonsListThermalZonesOnly) {
  Board thor(Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "38.4.0"));
  thor.Put(Kind::kThermal, "cpu-thermal", Field::kTemp, 37343);
  thor.Put(Kind::kThermal, "ina238/temp1", Field::kTemp, 41250, "hwmon ina238");
  thor.Put(Kind::kThermal, "nvme/Composite", Field::kTemp, 38850, "hwmon nvme");
  TegrastatsFormatter f(thor.inventory(), StyleFor(thor.inventory().board));
  const Parsed p = ParseTegrastats(f.Format(thor.MakeFrame()));
  ASSERT_EQ(p.temps.size(), 1u);
  EXPECT_EQ(p.temps[0].name, "cpu");

  Board pc(Info("ThinkPad X1", "", ""));
  pc.Put(Kind::kThermal, "x86_pkg_temp", Field::kTemp, 52000);
  pc.Put(Kind::kThermal, "nvme/Composite", Field::kTemp, 38850, "hwmon nvme");
  TegrastatsFormatter g(pc.inventory(), StyleFor(pc.inventory().board));
  EXPECT_EQ(ParseTegrastats(g.Format(pc.MakeFrame())).temps.size(), 2u);
}

// Without a load, Orin prints no GR3D_FREQ (tegrastats always has one there);
// Thor, whose GPU has none, prints the clocks alone.
TEST(TegrastatsFormat, Gr3dWithoutLoad) {
  Board orin(Info("NVIDIA Jetson AGX Orin Developer Kit", "tegra234", "39.2.0"));
  orin.Put(Kind::kGpu, "gpu", Field::kFreq, 1300500);
  orin.Put(Kind::kGpu, "gpu", Field::kLoad, std::nullopt);
  TegrastatsFormatter f(orin.inventory(), StyleFor(orin.inventory().board));
  EXPECT_EQ(f.Format(orin.MakeFrame()).find("GR3D"), std::string::npos);
  Board thor(Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", ""));
  thor.Put(Kind::kGpu, "gpu", Field::kFreq, std::nullopt);
  TegrastatsFormatter g(thor.inventory(), StyleFor(thor.inventory().board));
  EXPECT_EQ(g.Format(thor.MakeFrame()).find("GR3D"), std::string::npos);  // nothing known
}

// ---------------------------------------------------------------- jtop's fields
// jtop's parsers read the documented fields of our line of each release as
// the values the board holds, and stumble only where they stumble on the
// real line of that release too (Thor's "NVENC0_FREQ @314").
TEST(TegrastatsJtop, ReadsTheDocumentedFieldsOfEveryDialect) {
  struct Case {
    BoardInfo info;
    std::vector<std::string> failures;
  };
  const std::vector<Case> cases = {
      {Info("NVIDIA Jetson Nano Developer Kit", "tegra210", "32.7.1"), {}},
      {Info("NVIDIA Jetson AGX Orin Developer Kit", "tegra234", "35.4.1"), {}},
      {Info("NVIDIA Jetson Orin Nano Developer Kit", "tegra234", "36.4.3"), {}},
      {Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "38.4.0"), {"NVENC0_FREQ @115"}},
      {Info("NVIDIA Jetson AGX Orin Developer Kit", "tegra234", "39.2.0"), {}},
      {Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "39.2.0"), {"NVENC0_FREQ @115"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.info.l4t + " " + c.info.soc);
    const TegrastatsStyle style = StyleFor(c.info);
    Board b(c.info);
    PutMemory(b, 7802880, 7149568, 5, 1024, 16777216, 2703360, 206848);
    const Cores cores = {{{970, 1984000}}, std::nullopt, {{126, 729600}}};
    PutCpus(b, cores);
    b.Put(Kind::kEmc, "emc", Field::kLoad, 180);
    b.Put(Kind::kEmc, "emc", Field::kFreq, 3199000);
    b.Put(Kind::kGpu, "gpu", Field::kLoad, 840);
    b.Put(Kind::kGpu, "gpu", Field::kFreq, 713000);
    b.Put(Kind::kEngine, "NVENC", Field::kState, 1);
    b.Put(Kind::kEngine, "NVENC", Field::kFreq, 115200);
    b.Put(Kind::kEngine, "NVDEC", Field::kState, 0);
    b.Put(Kind::kEngine, "APE", Field::kFreq, 174000);
    b.Put(Kind::kThermal, "cpu-thermal", Field::kTemp, 65562);
    b.Put(Kind::kThermal, "tj-thermal", Field::kTemp, 66000);
    b.Put(Kind::kRail, "VDD_IN", Field::kPower, 17946);
    TegrastatsFormatter f(b.inventory(), style);
    const std::string line = f.Format(b.MakeFrame());
    SCOPED_TRACE(line);
    const Jtop j = JtopParse(line);
    EXPECT_EQ(j.ram, (std::vector<int>{7149568 / 1024, 7802880 / 1024, 5, 1}));
    EXPECT_EQ(j.swap, (std::vector<int>{2640, 16384, 202}));
    ASSERT_EQ(j.cpus.size(), 3u);
    EXPECT_EQ(j.cpus[0], (JtopVal{97, 1984}));
    EXPECT_FALSE(j.cpus[1].has_value());
    EXPECT_EQ(j.cpus[2], (JtopVal{13, 729}));
    EXPECT_EQ(j.vals.at("EMC"), (JtopVal{18, 3199}));
    EXPECT_EQ(j.vals.at("GR3D"), (JtopVal{84, 713}));
    EXPECT_EQ(j.vals.at("APE"), (JtopVal{174, std::nullopt}));
    if (style.engines != TegrastatsEngines::kThor) {
      const std::string nvenc = style.engines == TegrastatsEngines::kNumbered ? "NVENC0" : "NVENC";
      EXPECT_EQ(j.vals.at(nvenc), (JtopVal{115, std::nullopt}));  // "NVENC Y": the clock
    }
    EXPECT_EQ(j.vals.count("NVDEC"), 0u);
    EXPECT_EQ(j.val_failures, c.failures);
    EXPECT_EQ(j.temps, (std::map<std::string, double>{{"cpu", 65.562}, {"tj", 66.0}}));
    if (!style.rail_units) {
      EXPECT_EQ(j.watts.at("VDD_IN"), std::make_pair(17946.0, 17946.0));
    } else {
      EXPECT_TRUE(j.watts.empty());  // WATT_RE does not read "mW" rails
    }
  }
}

// ---------------------------------------------------------------- behaviours
// The rail average is the mean of the readings printed so far.
TEST(TegrastatsFormat, RailAverageIsTheRunningMean) {
  Board b(Info("Jetson Nano", "tegra210", "32.7.1"));
  b.Put(Kind::kRail, "POM_5V_IN", Field::kPower, 4000);
  TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
  const std::vector<int64_t> readings = {4000, 5000, 6100, 4700};
  double sum = 0;
  for (size_t i = 0; i < readings.size(); ++i) {
    b.Put(Kind::kRail, "POM_5V_IN", Field::kPower, readings[i]);
    sum += static_cast<double>(readings[i]);
    Parsed p = ParseTegrastats(f.Format(b.MakeFrame()));
    ASSERT_EQ(p.rails.count("POM_5V_IN"), 1u);
    EXPECT_EQ(p.rails["POM_5V_IN"].cur, readings[i]);
    EXPECT_NEAR(p.rails["POM_5V_IN"].avg, sum / static_cast<double>(i + 1), 0.5);
    EXPECT_FALSE(p.rails["POM_5V_IN"].highest);
  }
  // An absent reading is left out of the line and of the mean.
  b.Put(Kind::kRail, "POM_5V_IN", Field::kPower, std::nullopt);
  EXPECT_EQ(ParseTegrastats(f.Format(b.MakeFrame())).rails.count("POM_5V_IN"), 0u);
  b.Put(Kind::kRail, "POM_5V_IN", Field::kPower, 2000);
  Parsed p = ParseTegrastats(f.Format(b.MakeFrame()));
  EXPECT_NEAR(p.rails["POM_5V_IN"].avg, (sum + 2000) / 5.0, 0.5);
}

// Sizes as /proc/meminfo gives them, not whole MB: tegrastats rounds to the
// nearest MB. A swap area loses a page to its header (SwapTotal 2097148 kB
// for a 2 GiB swap file), yet the published lines print "SWAP 0/2048MB"
// (Thor, R38.4) and "SWAP 2640/16384MB" (Orin Nano, R36); an AGX Orin 64GB's
// MemTotal of 64308216 kB prints "RAM 4321/62801MB" (JetPack 5).
TEST(TegrastatsFormat, SizesRoundToTheNearestMb) {
  struct Case {
    BoardInfo board;
    std::vector<int64_t> kib;    // RAM total, used; SWAP total, used, cached
    std::vector<int> ram, swap;  // RAM used, total; SWAP used, total, cached (as printed)
  };
  const std::vector<Case> cases = {
      {Info("NVIDIA Jetson AGX Thor Developer Kit", "tegra264", "38.4.0"),
       {128790956, 4308700, 2097148, 0, 0},
       {4208, 125772},
       {0, 2048, 0}},
      {Info("NVIDIA Jetson Orin Nano Developer Kit", "tegra234", "36.4.3"),
       {7802212, 7149367, 16777212, 2703359, 206848},
       {6982, 7619},
       {2640, 16384, 202}},
      {Info("Jetson AGX Orin", "tegra234", "35.4.1"),
       {64308216, 4424700, 32154048, 19200, 0},
       {4321, 62801},
       {19, 31400, 0}},
      // Half a MB rounds up; just under half rounds down.
      {Info("NVIDIA Jetson Nano Developer Kit", "tegra210", "32.7.4"),
       {1536, 1535, 2560, 511, 512},
       {1, 2},
       {0, 3, 1}},
  };
  for (const Case& c : cases) {
    Board b(c.board);
    PutMemory(b, c.kib[0], c.kib[1], 1, 4096, c.kib[2], c.kib[3], c.kib[4]);
    TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
    const std::string line = f.Format(b.MakeFrame());
    SCOPED_TRACE(line);
    const Parsed p = ParseTegrastats(line);
    ASSERT_TRUE(p.ram);
    EXPECT_EQ((std::vector<int>{(*p.ram)[0], (*p.ram)[1]}), c.ram);
    ASSERT_TRUE(p.swap);
    EXPECT_EQ(*p.swap, c.swap);
  }
}

// A laptop: RAPL rails and hwmon sensors with names that are not words,
// no swap, no GPU: only what exists is printed, and it still parses.
TEST(TegrastatsFormat, X86Laptop) {
  Board b(Info("ThinkPad X1", "", ""));
  b.Put(Kind::kMemory, "ram", Field::kTotal, 16252928);
  b.Put(Kind::kMemory, "ram", Field::kUsed, 5242880);
  b.Put(Kind::kSwap, "swap", Field::kTotal, 0);
  b.Put(Kind::kSwap, "swap", Field::kUsed, 0);
  const Cores cores = {{{125, 2400000}}, {{75, 1800000}}};
  PutCpus(b, cores);
  b.Put(Kind::kThermal, "x86_pkg_temp", Field::kTemp, 52000);
  b.Put(Kind::kThermal, "coretemp/Package id 0", Field::kTemp, 51000, "hwmon coretemp");
  b.Put(Kind::kThermal, "acpitz", Field::kTemp, 48000);
  b.Put(Kind::kRail, "package-0", Field::kPower, 7250);
  b.Put(Kind::kRail, "package-0/core", Field::kPower, 3100);
  b.Put(Kind::kRail, "psys", Field::kPower, std::nullopt);
  TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
  const std::string line = f.Format(b.MakeFrame());
  SCOPED_TRACE(line);
  Parsed p = ParseTegrastats(line);
  EXPECT_TRUE(p.timestamp);
  EXPECT_FALSE(p.ram.has_value());  // no buddyinfo: RAM without "(lfb ...)"
  EXPECT_NE(line.find("RAM 5120/15872MB"), std::string::npos);
  EXPECT_FALSE(p.swap.has_value());
  EXPECT_EQ(line.find("SWAP"), std::string::npos);
  ExpectCpus(p, cores);
  EXPECT_FALSE(p.gr3d.has_value());
  EXPECT_FALSE(p.emc.has_value());
  EXPECT_DOUBLE_EQ(TempOf(p, "x86_pkg_temp"), 52.0);
  EXPECT_DOUBLE_EQ(TempOf(p, "coretemp_Package_id_0"), 51.0);
  EXPECT_EQ(p.rails["package_0"], (Rail{7250, 7250, std::nullopt}));
  EXPECT_EQ(p.rails["package_0_core"], (Rail{3100, 3100, std::nullopt}));
  EXPECT_EQ(p.rails.count("psys"), 0u);
}

// While a core's load is unknown (the daemon's first sample) the CPU block
// is left out rather than printed with a made-up 0 %.
TEST(TegrastatsFormat, NoCpuBlockWithoutLoads) {
  Board b(Info("Jetson Nano", "tegra210", "32.7.1"));
  b.Put(Kind::kCpu, "cpu0", Field::kOnline, 1);
  b.Put(Kind::kCpu, "cpu0", Field::kLoad, std::nullopt);
  b.Put(Kind::kCpu, "cpu0", Field::kFreq, 1479000);
  b.Put(Kind::kRail, "POM_5V_IN", Field::kPower, 3000);
  TegrastatsFormatter f(b.inventory(), StyleFor(b.inventory().board));
  const std::string line = f.Format(b.MakeFrame());
  EXPECT_EQ(line.find("CPU"), std::string::npos) << line;
  EXPECT_EQ(line.find("0%"), std::string::npos) << line;
  EXPECT_EQ(ParseTegrastats(line).rails["POM_5V_IN"].cur, 3000);
}

// Rebind after a daemon restart keeps the averages of rails still there.
TEST(TegrastatsFormat, RebindKeepsAverages) {
  Board a(Info("Jetson Nano", "tegra210", "32.7.1"));
  a.Put(Kind::kRail, "POM_5V_IN", Field::kPower, 1000);
  TegrastatsFormatter f(a.inventory(), StyleFor(a.inventory().board));
  f.Format(a.MakeFrame());
  Board b(Info("Jetson Nano", "tegra210", "32.7.1"));
  b.Put(Kind::kThermal, "CPU-therm", Field::kTemp, 40000);  // ids shift
  b.Put(Kind::kRail, "POM_5V_IN", Field::kPower, 3000);
  f.Rebind(b.inventory());
  Parsed p = ParseTegrastats(f.Format(b.MakeFrame()));
  EXPECT_EQ(p.rails["POM_5V_IN"], (Rail{3000, 2000, std::nullopt}));
  EXPECT_DOUBLE_EQ(TempOf(p, "CPU"), 40.0);
}

}  // namespace
}  // namespace edgemon::cli
