// Thermal zones: /sys/class/thermal/thermal_zoneN/{type,temp,trip_point_*}.
//
// Temperatures are millidegree C. A zone that is power-gated reads -256 C
// (Orin CV/GPU zones at idle) or fails with EAGAIN (Thor): both are absent,
// never -256. PMIC-Die reports a fixed value and is flagged as a constant.
#include <algorithm>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

constexpr int64_t kZoneImplausibleMc = 400000;  // no sensor of ours reads 400 C

struct ThermalZone {
  FileId file;
  ChannelId channel;
};

class ThermalCollector final : public Collector {
 public:
  std::string_view Name() const override { return "thermal"; }
  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/thermal")}; }

  void Discover(DiscoverContext& ctx) override {
    zones_.clear();
    const std::string base = SysPath("class/thermal");
    std::vector<std::pair<int, std::string>> found;
    for (const auto& name : ctx.fs().List(base)) {
      if (name.rfind("thermal_zone", 0) != 0) continue;
      auto n = parse::Int(std::string_view(name).substr(12));
      if (!n) continue;
      found.emplace_back(static_cast<int>(*n), name);
    }
    std::sort(found.begin(), found.end());  // zone 2 before zone 10
    for (const auto& [n, name] : found) {
      const std::string dir = JoinPath(base, name);
      auto type = ctx.ReadLine(JoinPath(dir, "type"));
      FileId f = ctx.Open(JoinPath(dir, "temp"));
      if (!type || f < 0) continue;
      Channel c;
      c.kind = Kind::kThermal;
      c.name = *type;
      c.field = Field::kTemp;
      c.device = name;
      if (type->find("PMIC") != std::string::npos) c.flags |= kFlagConstant;
      ReadTrips(ctx, dir, c);
      zones_.push_back({f, ctx.Add(std::move(c))});
    }
  }

  void Sample(SampleContext& ctx) override {
    for (const auto& z : zones_) {
      auto v = ctx.ReadInt(z.file, z.channel);
      if (!v) continue;
      if (*v <= kGatedMc && *v > kAbsoluteZeroMc) {
        ctx.Fail(z.channel, ReadError::kGated);
      } else if (*v <= kAbsoluteZeroMc || *v >= kZoneImplausibleMc) {
        ctx.Fail(z.channel, ReadError::kRange);
      } else {
        ctx.Set(z.channel, *v);
      }
    }
  }

 private:
  static void ReadTrips(DiscoverContext& ctx, const std::string& dir, Channel& c) {
    for (int k = 0; k < 64; ++k) {
      const std::string prefix = JoinPath(dir, "trip_point_" + std::to_string(k));
      auto temp = ctx.ReadInt(prefix + "_temp");
      if (!temp) {
        if (!ctx.fs().Exists(prefix + "_type")) break;
        continue;
      }
      auto type = ctx.ReadLine(prefix + "_type");
      TripPoint t{type.value_or(""), *temp};
      // A disabled trip reads as a huge or non-positive value on some boards.
      if (t.temp_mc <= 0 || t.temp_mc >= kZoneImplausibleMc) continue;
      if (t.type == "critical" && (!c.crit || t.temp_mc < *c.crit)) c.crit = t.temp_mc;
      if ((t.type == "hot" || t.type == "passive") && (!c.max || t.temp_mc < *c.max)) {
        c.max = t.temp_mc;
      }
      c.trips.push_back(std::move(t));
    }
  }

  std::vector<ThermalZone> zones_;
};

}  // namespace

std::unique_ptr<Collector> MakeThermalCollector() {
  return std::make_unique<ThermalCollector>();
}

}  // namespace edgemon
