// RAPL energy counters through powercap: /sys/class/powercap/<type>:N[:M]/
// with energy_uj, max_energy_range_uj and name ("package-0", "core",
// "uncore", "dram", "psys"). The bare control-type directory ("intel-rapl")
// has no energy_uj and is not a zone.
//
// Channels per zone (kind rail, device "rapl <zone dir>"):
//   energy  mJ, kFlagCounter: a 64-bit accumulator of the zone's microjoules.
//           The first reading is the raw counter (so it matches
//           node_exporter's energy_uj / 1e6 at the start); later readings add
//           the delta, across the wrap at max_energy_range_uj (the counter
//           runs 0..max and then starts again at 0).
//   power   mW, kFlagDerived: the energy delta over the CLOCK_BOOTTIME
//           between two readings; absent on the first one.
// Names: top zones use their `name` ("package-0", "psys"); subzones
// "<package>/<name>" ("package-0/core"). Zones of another control type
// (intel-rapl-mmio duplicates package-0) are prefixed "<type>:".
// Hierarchy: subzones have their package as parent, except dram (not part of
// the package's power); psys is the platform's input rail and every other
// zone of its control type without a parent gets parent "psys".
// energy_uj is root-only on kernels since 2020 (CVE-2020-8694): the channels
// are still declared and every tick counts the error.
#include <algorithm>
#include <map>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

// A delta that implies more than this is not energy but a counter reset
// (resume from suspend) or a corrupted read: it is not accumulated.
constexpr int64_t kMaxPlausibleMw = 10'000'000;  // 10 kW

struct ZoneState {
  bool have = false;
  int64_t last_raw = 0;  // uJ
  int64_t last_ns = 0;
  uint64_t acc_uj = 0;
};

struct Zone {
  std::string key;        // identity across rediscoveries
  FileId file = -1;       // < 0: -errno of the failed open
  int64_t max_range = 0;  // uJ; 0 when unknown
  ChannelId energy = 0;
  ChannelId power = 0;
};

class RaplCollector final : public Collector {
 public:
  std::string_view Name() const override { return "rapl"; }
  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/powercap")}; }

  void Discover(DiscoverContext& ctx) override {
    zones_.clear();
    const std::string klass = SysPath("class/powercap");
    std::vector<RaplZone> found = FindRaplZones(ctx.fs());
    auto find = [&](const std::string& entry) -> const RaplZone* {
      for (const auto& f : found) {
        if (f.entry == entry) return &f;
      }
      return nullptr;
    };
    // Top zones first so a package precedes its subzones.
    std::stable_sort(found.begin(), found.end(), [](const RaplZone& a, const RaplZone& b) {
      return a.parent.empty() && !b.parent.empty();
    });
    for (const auto& f : found) {
      std::string psys;
      for (const auto& g : found) {
        if (g.type == f.type && g.parent.empty() && g.zone_name == "psys") psys = g.rail;
      }
      const RaplZone* p = f.parent.empty() ? nullptr : find(f.parent);
      Channel base;
      base.kind = Kind::kRail;
      base.name = f.rail;
      base.device = "rapl " + f.entry;
      if (f.parent.empty() && f.zone_name == "psys") {
        base.flags |= kFlagInputRail;
      } else if (p && f.zone_name != "dram") {
        base.parent = p->rail;
      } else if (!psys.empty()) {
        base.parent = psys;
      }
      AddZone(ctx, JoinPath(klass, f.entry), std::move(base));
    }
  }

  void Sample(SampleContext& ctx) override {
    const int64_t now = ctx.boottime_ns();
    for (const auto& z : zones_) {
      if (z.file < 0) {
        ctx.Fail(z.energy, ErrorFromErrno(-z.file));
        continue;
      }
      auto raw = ctx.ReadInt(z.file, z.energy);
      if (!raw) continue;
      if (*raw < 0 || (z.max_range > 0 && *raw > z.max_range)) {
        ctx.Fail(z.energy, ReadError::kRange);
        continue;
      }
      ZoneState& s = state_[z.key];
      if (!s.have) {
        s = ZoneState{true, *raw, now, static_cast<uint64_t>(*raw)};
        ctx.Set(z.energy, *raw / 1000);
        continue;
      }
      std::optional<int64_t> delta;
      if (*raw >= s.last_raw) {
        delta = *raw - s.last_raw;
      } else if (z.max_range > 0) {
        delta = (z.max_range - s.last_raw) + *raw + 1;  // wrapped past max to 0
      }
      const int64_t dt = now - s.last_ns;
      std::optional<int64_t> power;
      if (delta && dt > 0) {
        int64_t scaled;
        if (__builtin_mul_overflow(*delta, int64_t{1'000'000}, &scaled) ||
            scaled / dt > kMaxPlausibleMw) {
          delta.reset();  // a reset or a bad read, not energy
        } else {
          power = scaled / dt;
        }
      }
      // A decrease without a known range, or an implausible step, resyncs
      // the counter without adding anything.
      if (delta) s.acc_uj += static_cast<uint64_t>(*delta);
      s.last_raw = *raw;
      s.last_ns = now;
      ctx.Set(z.energy, static_cast<int64_t>(s.acc_uj / 1000));
      if (power) ctx.Set(z.power, *power);
    }
  }

 private:
  void AddZone(DiscoverContext& ctx, const std::string& dir, Channel base) {
    Zone z;
    z.key = dir + "|" + base.name;
    z.file = ctx.Open(JoinPath(dir, "energy_uj"));
    if (auto max = ctx.ReadInt(JoinPath(dir, "max_energy_range_uj")); max && *max > 0) {
      z.max_range = *max;
      base.attrs.emplace_back("max_energy_range_uj", std::to_string(*max));
    }
    Channel energy = base;
    energy.field = Field::kEnergy;
    energy.flags |= kFlagCounter;
    z.energy = ctx.Add(std::move(energy));
    Channel power = std::move(base);
    power.field = Field::kPower;
    power.flags |= kFlagDerived;
    z.power = ctx.Add(std::move(power));
    zones_.push_back(std::move(z));
  }

  std::vector<Zone> zones_;
  // Kept across rediscoveries so the energy counters never step back.
  std::map<std::string, ZoneState> state_;
};

}  // namespace

std::vector<RaplZone> FindRaplZones(SysFs& fs) {
  const std::string klass = SysPath("class/powercap");
  std::vector<RaplZone> found;
  for (const auto& entry : fs.List(klass)) {
    auto colon = entry.find(':');
    if (colon == std::string::npos) continue;  // the control type itself
    const std::string dir = JoinPath(klass, entry);
    if (!fs.Exists(JoinPath(dir, "energy_uj"))) continue;
    RaplZone z;
    z.entry = entry;
    z.type = entry.substr(0, colon);
    auto last = entry.rfind(':');
    if (last != colon) z.parent = entry.substr(0, last);
    z.zone_name = ReadLine(fs, JoinPath(dir, "name")).value_or(entry);
    found.push_back(std::move(z));
  }
  auto top_name = [](const RaplZone& z) {
    return z.type == "intel-rapl" ? z.zone_name : z.type + ":" + z.zone_name;
  };
  for (auto& z : found) {
    const RaplZone* p = nullptr;
    for (const auto& g : found) {
      if (!z.parent.empty() && g.entry == z.parent) p = &g;
    }
    z.rail = p ? top_name(*p) + "/" + z.zone_name : top_name(z);
  }
  return found;
}

std::unique_ptr<Collector> MakeRaplCollector() {
  return std::make_unique<RaplCollector>();
}

}  // namespace edgemon
