// Generic hwmon chips: /sys/class/hwmon/hwmonN, except the chips a dedicated
// collector reads (IsDedicatedHwmonChip: ina3221, the Jetson fan chips).
//
//   temp*_input   m-degC -> thermal "<chip>/<label or tempN>" temp; _max, _crit
//   in*_input     mV     -> rail "<chip>/<label or inN>" voltage; _min, _max, _crit
//   curr*_input   mA     -> rail "<chip>/<label or currN>" current; _max, _crit
//   power*_input  uW     -> rail "<chip>/<label or powerN>" power mW (or
//   power*_average)        _average when there is no _input); _max, _crit
//   fan*_input    rpm    -> fan "<chip>/<label or fanN>" speed; _min, _max
// device "hwmon <chip>". Sensors disabled with *_enable = 0 are skipped.
//
// Older drivers (applesmc, ...) keep the sensor files (and even `name`) on
// the parent device rather than in hwmonN: when hwmonN has no sensor files,
// hwmonN/device/ is read instead. The hwmonN index is not stable, so a chip
// is named by its `name` file (else the device directory's name, else
// hwmonN); chips sharing a name are told apart by their device directory
// ("coretemp", "coretemp.1"), in the order of their canonical paths.
//
// INA2xx-style power monitors (name "ina*": ina219, ina226, ina238, ...) are
// board rails: in/curr/power of one index form one rail named by its label
// (a channel label, else the chip's DT `label`; "VIN" on Thor's carrier),
// device "<name> <bus-addr>", so that AssignRailHierarchy treats them as
// board monitors. in0 is their shunt voltage and is not a rail.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

constexpr int64_t kHwmonImplausibleMc = 2'000'000;  // thermocouple chips read up to ~1400 C

enum class Type : uint8_t { kTemp, kIn, kCurr, kPower, kFan };

// What a sensor type becomes (the table at the top of this file).
struct TypeInfo {
  Type type;
  std::string_view prefix;
  Kind kind;
  Field field;
  int64_t den;  // the file's unit per channel unit (power: uW -> mW)
  bool min;     // has a _min limit
  bool crit;    // has a _crit limit (every type has _max)
};
constexpr TypeInfo kTypes[] = {
    {Type::kTemp, "temp", Kind::kThermal, Field::kTemp, 1, false, true},
    {Type::kIn, "in", Kind::kRail, Field::kVoltage, 1, true, true},
    {Type::kCurr, "curr", Kind::kRail, Field::kCurrent, 1, false, true},
    {Type::kPower, "power", Kind::kRail, Field::kPower, 1000, false, true},
    {Type::kFan, "fan", Kind::kFan, Field::kSpeed, 1, true, false}};

const TypeInfo& Info(Type t) {
  for (const auto& ti : kTypes) {
    if (ti.type == t) return ti;
  }
  return kTypes[0];
}

std::string_view Prefix(Type t) {
  return Info(t).prefix;
}

// "temp12_input" -> {kTemp, 12, "input"}.
struct AttrName {
  Type type;
  int index;
  std::string_view suffix;
};
std::optional<AttrName> ParseAttr(std::string_view name) {
  for (const auto& ti : kTypes) {
    if (name.substr(0, ti.prefix.size()) != ti.prefix) continue;
    std::string_view rest = name.substr(ti.prefix.size());
    size_t digits = 0;
    while (digits < rest.size() && digits < 6 &&
           std::isdigit(static_cast<unsigned char>(rest[digits]))) {
      ++digits;
    }
    if (digits == 0 || digits >= rest.size() || rest[digits] != '_') continue;
    auto index = parse::Int(rest.substr(0, digits));
    if (!index) continue;
    return AttrName{ti.type, static_cast<int>(*index), rest.substr(digits + 1)};
  }
  return std::nullopt;
}

struct Sensor {
  FileId file = -1;
  ChannelId channel = 0;
  Type type = Type::kTemp;
  int64_t den = 1;  // power: uW -> mW
};

struct Chip {
  std::string entry;     // "hwmon3"
  std::string dir;       // logical /sys/class/hwmon/hwmon3
  std::string resolved;  // canonical path: identity and sort key
  std::string name;      // the `name` file
  std::string dev_base;  // device directory name ("coretemp.1", "1-0040"), may be empty
  bool has_device_link = false;
  std::string display;  // name, disambiguated
};

struct Found {
  std::string input;  // file name of the value file
  bool average = false;
};

class HwmonCollector final : public Collector {
 public:
  std::string_view Name() const override { return "hwmon"; }
  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/hwmon")}; }

  void Discover(DiscoverContext& ctx) override {
    sensors_.clear();
    auto chips = FindChips(ctx.fs());
    for (const auto& chip : chips) AddChip(ctx, chip);
  }

  void Sample(SampleContext& ctx) override {
    for (const auto& s : sensors_) {
      auto v = ctx.ReadInt(s.file, s.channel);
      if (!v) continue;
      switch (s.type) {
        case Type::kTemp:
          if (*v == kGatedMc) {
            ctx.Fail(s.channel, ReadError::kGated);
            continue;
          }
          if (*v <= kAbsoluteZeroMc || *v >= kHwmonImplausibleMc) {
            ctx.Fail(s.channel, ReadError::kRange);
            continue;
          }
          break;
        case Type::kFan:
          if (*v < 0) {
            ctx.Fail(s.channel, ReadError::kRange);
            continue;
          }
          break;
        case Type::kIn:
        case Type::kCurr:
        case Type::kPower:
          break;
      }
      ctx.Set(s.channel, *v / s.den);
    }
  }

 private:
  static std::vector<Chip> FindChips(SysFs& fs) {
    std::vector<Chip> chips;
    const std::string klass = SysPath("class/hwmon");
    for (const auto& entry : fs.List(klass)) {
      Chip c;
      c.entry = entry;
      c.dir = JoinPath(klass, entry);
      if (!fs.IsDir(c.dir)) continue;
      c.resolved = fs.Resolve(c.dir).value_or(c.dir);
      const std::string dev_link = JoinPath(c.dir, "device");
      if (auto dev = fs.Resolve(dev_link); dev && fs.IsDir(dev_link)) {
        c.has_device_link = true;
        c.dev_base = std::string(BaseName(*dev));
      } else {
        std::string_view parent = DirName(c.resolved);  // .../<device>/hwmon/hwmonN
        if (BaseName(parent) == "hwmon" && parent != SysPath("class/hwmon")) {
          c.dev_base = std::string(BaseName(DirName(parent)));
        }
      }
      auto name = ReadLine(fs, JoinPath(c.dir, "name"));
      if (!name && c.has_device_link) name = ReadLine(fs, JoinPath(dev_link, "name"));
      if (!name && !c.dev_base.empty()) name = c.dev_base;
      c.name = name.value_or(entry);
      if (IsDedicatedHwmonChip(c.name)) continue;
      chips.push_back(std::move(c));
    }
    std::sort(chips.begin(), chips.end(),
              [](const Chip& a, const Chip& b) { return a.resolved < b.resolved; });
    // Chips sharing a name: the first keeps it, the others add their device.
    // A device shared by same-named chips does not tell them apart; the
    // hwmon entry (not stable across boots) is the last resort.
    std::map<std::string, int> count;
    std::map<std::pair<std::string, std::string>, int> on_device;
    for (const auto& c : chips) {
      ++count[c.name];
      ++on_device[{c.name, c.dev_base}];
    }
    std::set<std::string> used;
    for (auto& c : chips) {
      std::string display = c.name;
      if (count[c.name] > 1 && used.count(display)) {
        display.clear();
        if (!c.dev_base.empty() && on_device[{c.name, c.dev_base}] == 1) {
          display = c.dev_base.rfind(c.name, 0) == 0 ? c.dev_base : c.name + "@" + c.dev_base;
        }
        if (display.empty() || used.count(display)) display = c.name + "@" + c.entry;
      }
      used.insert(display);
      c.display = std::move(display);
    }
    return chips;
  }

  // The sensors of a directory, by (type, index).
  static std::map<std::pair<Type, int>, Found> Scan(SysFs& fs, const std::string& dir) {
    std::map<std::pair<Type, int>, Found> out;
    for (const auto& f : fs.List(dir)) {
      auto a = ParseAttr(f);
      if (!a) continue;
      auto key = std::make_pair(a->type, a->index);
      if (a->suffix == "input") {
        out[key] = Found{f, false};
      } else if (a->type == Type::kPower && a->suffix == "average") {
        auto it = out.find(key);
        if (it == out.end()) out[key] = Found{f, true};  // _input wins
      }
    }
    return out;
  }

  void AddChip(DiscoverContext& ctx, const Chip& chip) {
    std::string dir = chip.dir;
    auto found = Scan(ctx.fs(), dir);
    if (found.empty() && chip.has_device_link) {
      dir = JoinPath(chip.dir, "device");
      found = Scan(ctx.fs(), dir);
    }
    if (found.empty()) return;
    const bool ina = chip.name.rfind("ina", 0) == 0;

    // Labels, and which labels repeat within a type (two "foosensor" temps).
    std::map<std::pair<Type, int>, std::optional<std::string>> labels;
    std::map<std::pair<Type, std::string>, int> label_count;
    for (const auto& [key, f] : found) {
      auto label = ctx.ReadLine(
          JoinPath(dir, std::string(Prefix(key.first)) + std::to_string(key.second) + "_label"));
      if (label) ++label_count[{key.first, *label}];
      labels[key] = std::move(label);
    }

    // INA rails: one name per index, from any of its labels or the chip's.
    std::map<int, std::string> ina_rail;
    if (ina) {
      std::set<int> indexes;
      for (const auto& [key, f] : found) {
        if (key.first != Type::kTemp && key.first != Type::kFan && key.second >= 1) {
          indexes.insert(key.second);
        }
      }
      auto chip_label = ctx.ReadLine(JoinPath(chip.dir, "label"));
      const std::string bus = chip.dev_base.empty() ? chip.entry : chip.dev_base;
      for (int n : indexes) {
        std::optional<std::string> label;
        for (Type t : {Type::kIn, Type::kCurr, Type::kPower}) {
          auto it = labels.find({t, n});
          if (!label && it != labels.end() && it->second) label = it->second;
        }
        if (!label && chip_label && indexes.size() == 1) label = chip_label;
        if (!label)
          label = n == 1 ? fmt::format("{} {}", chip.name, bus)
                         : fmt::format("{} {}/{}", chip.name, bus, n);
        if (parse::IsUnusedInaLabel(*label)) continue;
        ina_rail[n] = *label;
      }
    }

    for (const auto& [key, f] : found) {
      const auto [type, n] = key;
      const std::string id = std::string(Prefix(type)) + std::to_string(n);
      if (auto en = ctx.ReadInt(JoinPath(dir, id + "_enable")); en && *en == 0) continue;
      const auto& label = labels[key];

      Channel c;
      c.attrs.emplace_back("chip", chip.name);
      c.attrs.emplace_back("hwmon", chip.entry);  // informational: not stable across boots
      c.attrs.emplace_back("sensor", id);
      if (label) c.attrs.emplace_back("label", *label);
      if (ina && type != Type::kTemp && type != Type::kFan) {
        auto it = ina_rail.find(n);
        if (it == ina_rail.end()) continue;  // in0 (shunt voltage), NC
        c.name = it->second;
        c.device = chip.name + " " + (chip.dev_base.empty() ? chip.entry : chip.dev_base);
      } else {
        std::string leaf = id;
        if (label) {
          leaf = *label;
          if (label_count[{type, *label}] > 1) leaf += " (" + id + ")";
        }
        c.name = chip.display + "/" + leaf;
        c.device = "hwmon " + chip.display;
      }

      const TypeInfo& info = Info(type);
      c.kind = info.kind;
      c.field = info.field;
      const int64_t den = info.den;
      auto limit = [&](std::string_view suffix) -> std::optional<int64_t> {
        auto v = ctx.ReadInt(JoinPath(dir, id + "_" + std::string(suffix)));
        if (!v || *v <= 0) return std::nullopt;  // 0: not configured
        return *v / den;
      };
      if (info.min) c.min = limit("min");
      c.max = limit("max");
      if (info.crit) c.crit = limit("crit");
      if (type == Type::kPower && f.average) c.attrs.emplace_back("source", "average");
      FileId file = ctx.Open(JoinPath(dir, f.input));
      if (file < 0) continue;
      sensors_.push_back({file, ctx.Add(std::move(c)), type, den});
    }
  }

  std::vector<Sensor> sensors_;
};

}  // namespace

std::unique_ptr<Collector> MakeHwmonCollector() {
  return std::make_unique<HwmonCollector>();
}

}  // namespace edgemon
