#include "client/cli/tegrastats_format.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>

#include <fmt/format.h>

namespace edgemon::cli {
namespace {

int L4tMajor(const std::string& l4t) {
  int major = 0;
  for (char c : l4t) {
    if (c < '0' || c > '9') break;
    major = major * 10 + (c - '0');
    if (major > 1000) break;
  }
  return major;
}

std::string Word(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    const bool word = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!word) c = '_';
  }
  return out.empty() ? std::string("_") : out;
}

// 1 s resolution in MHz, as tegrastats prints clocks (1036800 kHz -> 1036).
int64_t Mhz(int64_t khz) {
  return khz / 1000;
}

// Permille to a whole percent, rounded half up.
int64_t Percent(int64_t permille) {
  return permille >= 0 ? (permille + 5) / 10 : 0;
}

// KiB to MB rounded to the nearest, as tegrastats prints sizes: a 2 GiB swap
// file is "2048MB" although /proc/meminfo's SwapTotal, without the swap
// header's page, is 2097148 kB (2047.996 MB); an AGX Orin 64GB's MemTotal of
// 64308216 kB prints "62801MB" as in its published lines.
int64_t Mb(int64_t kib) {
  return (kib + (kib >= 0 ? 512 : -512)) / 1024;
}

// "59.75", "44.562", "32", "-3.5": milli-degrees without trailing zeros.
std::string Celsius(int64_t mc) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%lld.%03lld", mc < 0 ? "-" : "",
                static_cast<long long>((mc < 0 ? -mc : mc) / 1000),
                static_cast<long long>((mc < 0 ? -mc : mc) % 1000));
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// A size in KiB as tegrastats prints the largest free block: "4MB", "512kB".
std::string BlockSize(int64_t kib) {
  if (kib >= 1024 && kib % 1024 == 0) return std::to_string(kib / 1024) + "MB";
  return std::to_string(kib) + "kB";
}

// Engines in the order tegrastats prints them, with their label per naming.
struct EngineName {
  std::string_view clock;     // edgemon's channel name (upper-case clock name)
  std::string_view jp6;       // R36
  std::string_view numbered;  // R39 Orin
  std::string_view thor;      // R38/R39 Thor
};
constexpr std::array<EngineName, 14> kEngines = {{
    {"NVENC", "NVENC", "NVENC0", "NVENC0_FREQ"},
    {"NVENC1", "NVENC1", "NVENC1", "NVENC1_FREQ"},
    {"MSENC", "MSENC", "MSENC", "MSENC"},
    {"NVDEC", "NVDEC", "NVDEC0", "NVDEC0_FREQ"},
    {"NVDEC1", "NVDEC1", "NVDEC1", "NVDEC1_FREQ"},
    {"NVJPG", "NVJPG", "NVJPG0", "NVJPG0_FREQ"},
    {"NVJPG1", "NVJPG1", "NVJPG1", "NVJPG1_FREQ"},
    {"VIC", "VIC", "VIC", "VIC"},
    {"OFA", "OFA", "OFA", "OFA_FREQ"},
    {"DLA0", "NVDLA0", "NVDLA0", "NVDLA0"},
    {"DLA1", "NVDLA1", "NVDLA1", "NVDLA1"},
    {"PVA0", "PVA0_FREQ", "PVA0_FREQ", "PVA0_FREQ"},
    {"PVA1", "PVA1_FREQ", "PVA1_FREQ", "PVA1_FREQ"},
    {"APE", "APE", "APE", "APE"},
}};

bool IsThor(const BoardInfo& b) {
  return b.soc.starts_with("tegra26");
}

bool IsOrin(const BoardInfo& b) {
  return b.soc.starts_with("tegra23");
}

// GPCs per board as its published lines show them: Thor 3 (GR3D_FREQ
// @[314,314,314]), AGX Orin 2 (GR3D_FREQ 12%@[1300,1300]), Orin NX 2 (its
// early JetPack 5 lines carry GR3D2_FREQ), Orin Nano 1 (GR3D_FREQ 84%@[713]).
int GpcCount(const BoardInfo& b) {
  if (IsThor(b)) return 3;
  if (!IsOrin(b)) return 0;
  const bool two =
      b.model.find("AGX Orin") != std::string::npos || b.model.find("Orin NX") != std::string::npos;
  return two ? 2 : 1;
}

}  // namespace

TegrastatsDialect DialectFor(const BoardInfo& board) {
  using D = TegrastatsDialect;
  const int major = L4tMajor(board.l4t);
  const bool thor = IsThor(board);
  if (major > 0) {
    if (major <= 32) return D::kJetPack4;
    if (major < 36) return D::kJetPack5;
    if (major < 38) return D::kJetPack6;
    if (major == 38) return D::kThorR38;  // R38 exists for Thor only
    return thor ? D::kThorR39 : D::kOrinR39;
  }
  if (board.soc == "tegra210" || board.soc == "tegra186" || board.soc == "tegra194") {
    return D::kJetPack4;
  }
  return thor ? D::kThorR38 : D::kJetPack6;  // Orin, or not a Jetson: R36
}

TegrastatsStyle StyleFor(const BoardInfo& board) {
  using D = TegrastatsDialect;
  TegrastatsStyle s;
  const D d = DialectFor(board);
  const bool r39 = d == D::kOrinR39 || d == D::kThorR39;
  const bool thor_layout = d == D::kThorR38 || d == D::kThorR39;
  s.dialect = d;
  s.timestamp = d != D::kJetPack4;
  s.rail_units = d != D::kJetPack4;
  s.gpcs = d == D::kJetPack4 ? 0 : GpcCount(board);
  s.gr3d_clock_only = thor_layout;
  s.engines_off = d != D::kJetPack4 && d != D::kJetPack5;
  s.engine_load = d == D::kJetPack6 || d == D::kOrinR39;
  s.vic_freq = d == D::kJetPack5;
  s.engines = thor_layout         ? TegrastatsEngines::kThor
              : r39               ? TegrastatsEngines::kNumbered
              : d == D::kJetPack6 ? TegrastatsEngines::kJetPack6
                                  : TegrastatsEngines::kPlain;
  s.temp_highest = r39;
  s.rail_highest = r39;
  s.zones_only = !board.l4t.empty() || board.soc.starts_with("tegra");
  return s;
}

std::string TegrastatsTempName(const std::string& zone_type) {
  std::string_view s = zone_type;
  if (size_t dash = s.find('-'); dash != std::string_view::npos && dash > 0) s = s.substr(0, dash);
  constexpr std::string_view kTegra = "_tegra";
  if (s.size() > kTegra.size() && s.substr(s.size() - kTegra.size()) == kTegra) {
    s.remove_suffix(kTegra.size());
  }
  return Word(s);
}

TegrastatsFormatter::TegrastatsFormatter(const Inventory& inventory, TegrastatsStyle style)
    : style_(style) {
  Rebind(inventory);
}

const Channel* TegrastatsFormatter::Find(Kind kind, const std::string& name, Field field) const {
  return inventory_.Find(kind, name, field);
}

void TegrastatsFormatter::Rebind(const Inventory& inventory) {
  inventory_ = inventory;
  cores_.clear();
  temps_.clear();
  rails_.clear();
  engines_.clear();

  // Printed names, to tell duplicates apart; temperatures and rails apart
  // (AGX Xavier prints both "GPU@30.5C" and the rail "GPU 463/463").
  std::map<std::string, int> seen_temps, seen_rails;
  auto unique = [](std::map<std::string, int>& seen, std::string label) {
    int n = seen[label]++;
    return n == 0 ? label : label + std::to_string(n);
  };
  for (const Channel& c : inventory_.channels) {
    if (c.name.empty()) continue;  // a kind or field this client does not know
    if (c.kind == Kind::kCpu && c.name.size() > 3 && c.name.rfind("cpu", 0) == 0 &&
        std::all_of(c.name.begin() + 3, c.name.end(),
                    [](char ch) { return ch >= '0' && ch <= '9'; })) {
      const int index = std::stoi(c.name.substr(3));
      auto it = std::find_if(cores_.begin(), cores_.end(),
                             [&](const Core& k) { return k.index == index; });
      if (it == cores_.end()) {
        cores_.push_back(Core{index});
        it = cores_.end() - 1;
      }
      if (c.field == Field::kOnline) it->online = &c;
      if (c.field == Field::kLoad) it->load = &c;
      if (c.field == Field::kFreq) it->freq = &c;
    } else if (c.kind == Kind::kThermal && c.field == Field::kTemp) {
      if (style_.zones_only && !c.device.starts_with("thermal_zone")) continue;
      temps_.push_back({unique(seen_temps, TegrastatsTempName(c.name)), c.id});
    } else if (c.kind == Kind::kRail && c.field == Field::kPower) {
      rails_.push_back({unique(seen_rails, Word(c.name)), c.id});
    }
  }
  std::sort(cores_.begin(), cores_.end(),
            [](const Core& a, const Core& b) { return a.index < b.index; });
  for (const auto& e : kEngines) {
    const std::string clock(e.clock);
    Engine engine;
    engine.state = Find(Kind::kEngine, clock, Field::kState);
    engine.freq = Find(Kind::kEngine, clock, Field::kFreq);
    if (style_.engine_load) engine.load = Find(Kind::kEngine, clock, Field::kLoad);
    if (engine.state == nullptr && engine.freq == nullptr && engine.load == nullptr) continue;
    engine.always = e.clock == "APE";
    switch (style_.engines) {
      case TegrastatsEngines::kPlain:
        engine.label = style_.vic_freq && e.clock == "VIC" ? std::string("VIC_FREQ") : clock;
        break;
      case TegrastatsEngines::kJetPack6:
        engine.label = e.jp6;
        break;
      case TegrastatsEngines::kNumbered:
        engine.label = e.numbered;
        break;
      case TegrastatsEngines::kThor:
        engine.label = e.thor;
        engine.at_clock = engine.label.ends_with("_FREQ");
        break;
    }
    engines_.push_back(std::move(engine));
  }
  // Statistics of rails and zones that are gone are dropped.
  auto drop_gone = [](auto& stats, const std::vector<Named>& present) {
    for (auto it = stats.begin(); it != stats.end();) {
      const bool kept = std::any_of(present.begin(), present.end(),
                                    [&](const Named& n) { return n.label == it->first; });
      it = kept ? std::next(it) : stats.erase(it);
    }
  };
  drop_gone(rail_stats_, rails_);
  drop_gone(temp_highest_mc_, temps_);
}

std::string TegrastatsFormatter::Format(const Frame& frame) {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ' ';
    out += part;
  };
  auto get = [&frame](const Channel* c) -> Value {
    return c == nullptr ? std::nullopt : frame.Get(c->id);
  };

  if (style_.timestamp && frame.realtime_ns > 0) {
    const time_t t = static_cast<time_t>(frame.realtime_ns / 1'000'000'000);
    struct tm tm;
    char buf[32];
    if (localtime_r(&t, &tm) != nullptr &&
        std::strftime(buf, sizeof buf, "%m-%d-%Y %H:%M:%S", &tm)) {
      add(buf);
    }
  }

  // RAM used/totalMB (lfb NxSIZE)
  const Value ram_total = get(Find(Kind::kMemory, "ram", Field::kTotal));
  const Value ram_used = get(Find(Kind::kMemory, "ram", Field::kUsed));
  if (ram_total && ram_used) {
    std::string ram = fmt::format("RAM {}/{}MB", Mb(*ram_used), Mb(*ram_total));
    const Value blocks = get(Find(Kind::kMemory, "ram", Field::kLfbBlocks));
    const Value size = get(Find(Kind::kMemory, "ram", Field::kLfbSize));
    if (blocks && size) ram += fmt::format(" (lfb {}x{})", *blocks, BlockSize(*size));
    add(ram);
  }
  // SWAP used/totalMB (cached XMB), when there is swap.
  const Value swap_total = get(Find(Kind::kSwap, "swap", Field::kTotal));
  const Value swap_used = get(Find(Kind::kSwap, "swap", Field::kUsed));
  if (swap_total && swap_used && *swap_total > 0) {
    std::string swap = fmt::format("SWAP {}/{}MB", Mb(*swap_used), Mb(*swap_total));
    if (Value cached = get(Find(Kind::kSwap, "swap", Field::kCached))) {
      swap += fmt::format(" (cached {}MB)", Mb(*cached));
    }
    add(swap);
  }
  // CPU [load%@MHz,off,...]: only when every core is known to be off or has a load.
  if (!cores_.empty()) {
    std::string cpu = "CPU [";
    bool complete = true;
    for (size_t i = 0; i < cores_.size() && complete; ++i) {
      const Core& k = cores_[i];
      const Value online = get(k.online);
      const Value load = get(k.load);
      const Value freq = get(k.freq);
      if (i > 0) cpu += ',';
      if (online && *online == 0) {
        cpu += "off";
      } else if (load) {
        cpu += fmt::format("{}%", Percent(*load));
        if (freq) cpu += fmt::format("@{}", Mhz(*freq));
      } else if (!online && !freq) {
        cpu += "off";  // nothing known about the core: gone
      } else {
        complete = false;
      }
    }
    if (complete) add(cpu + "]");
  }
  // EMC_FREQ load%@MHz (or load% without the clock, as tegrastats does without root).
  if (Value load = get(Find(Kind::kEmc, "emc", Field::kLoad))) {
    std::string emc = fmt::format("EMC_FREQ {}%", Percent(*load));
    if (Value freq = get(Find(Kind::kEmc, "emc", Field::kFreq))) {
      emc += fmt::format("@{}", Mhz(*freq));
    }
    add(emc);
  }
  // GR3D_FREQ load%@MHz, load%@[MHz,...] (a clock per GPC), or on Thor,
  // whose GPU has no load, @[MHz,...].
  const Value gpu_load = get(Find(Kind::kGpu, "gpu", Field::kLoad));
  const Value gpu_freq = get(Find(Kind::kGpu, "gpu", Field::kFreq));
  if (gpu_load || (style_.gr3d_clock_only && gpu_freq)) {
    std::string gr3d = "GR3D_FREQ ";
    if (gpu_load) gr3d += fmt::format("{}%", Percent(*gpu_load));
    if (gpu_freq && style_.gpcs > 0) {
      gr3d += "@[";
      for (int i = 0; i < style_.gpcs; ++i) {
        gr3d += fmt::format("{}{}", i > 0 ? "," : "", Mhz(*gpu_freq));
      }
      gr3d += "]";
    } else if (gpu_freq) {
      gr3d += fmt::format("@{}", Mhz(*gpu_freq));
    }
    add(gr3d);
  }
  // Engines: "NAME MHz" (Thor: "NAME_FREQ @MHz"; R36 and R39 Orin with a
  // load: "NAME X%@MHz") while running; "NAME off" when idle (R36+).
  for (const Engine& e : engines_) {
    const Value state = get(e.state);
    const Value freq = get(e.freq);
    const Value load = get(e.load);
    const bool idle = state && *state == 0;
    if (idle && !e.always) {
      if (style_.engines_off) add(e.label + " off");
      continue;
    }
    if (load && freq) {
      add(fmt::format("{} {}%@{}", e.label, Percent(*load), Mhz(*freq)));
    } else if (load) {
      add(fmt::format("{} {}%", e.label, Percent(*load)));
    } else if (freq) {
      add(fmt::format("{} {}{}", e.label, e.at_clock ? "@" : "", Mhz(*freq)));
    }
  }
  // Temperatures name@XC (R39: name@XC/HIGHESTC).
  for (const Named& t : temps_) {
    const Value v = frame.Get(t.id);
    if (!v) continue;
    std::string temp = fmt::format("{}@{}C", t.label, Celsius(*v));
    if (style_.temp_highest) {
      auto [it, first] = temp_highest_mc_.try_emplace(t.label, *v);
      if (!first) it->second = std::max(it->second, *v);
      temp += fmt::format("/{}C", Celsius(it->second));
    }
    add(temp);
  }
  // Rails NAME cur/avg (mW; R39: cur/avg/highest).
  for (const Named& r : rails_) {
    const Value v = frame.Get(r.id);
    if (!v) continue;
    RailStats& a = rail_stats_[r.label];
    a.highest = a.count == 0 ? *v : std::max(a.highest, *v);
    a.sum += static_cast<double>(*v);
    ++a.count;
    const int64_t avg = static_cast<int64_t>(std::llround(a.sum / static_cast<double>(a.count)));
    const char* unit = style_.rail_units ? "mW" : "";
    std::string rail = fmt::format("{} {}{}/{}{}", r.label, *v, unit, avg, unit);
    if (style_.rail_highest) rail += fmt::format("/{}{}", a.highest, unit);
    add(rail);
  }
  return out;
}

}  // namespace edgemon::cli
