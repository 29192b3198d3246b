// Jetson fans: PWM duty and tachometer speed.
//
// JP5 and later: the duty is an hwmon chip named "pwmfan" (pwm1, 0..255) and
// the tachometer a separate hwmon chip named "pwm_tach" (rpm). They are merged
// into one fan "pwmfan"; with several chips of each, they are paired in the
// order of their device paths ("pwmfan", "pwmfan1", ...). A tachometer without
// a pwmfan chip still gives a fan with a speed; a pwmfan chip without a
// tachometer uses its own fan1_input when it has one.
// JP4 (legacy): /sys/devices/pwm-fan/{target_pwm, rpm_measured}, also reached
// as hwmon chip "tegra_pwmfan"; the fan is named "pwm-fan".
//
// Channels: kind fan, fields duty (permille = pwm * 1000 / 255) and speed (rpm).
//
// A fan with both a duty and a tachometer also gets event/<fan>:stuck/state:
// 1 once the duty has been above 0 with the tachometer reading 0 rpm for
// kStuckAfterNs without a break (the tachometer lags a duty change by
// seconds, so a fan spinning up is not stuck), 0 otherwise, absent while
// either reading is.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/collect/collectors.h"

namespace edgemon {
namespace {

constexpr int64_t kPwmMax = 255;
constexpr int64_t kStuckAfterNs = 10'000'000'000;

// A fan whose duty and speed are both read: the stuck-fan condition.
struct StuckWatch {
  ChannelId duty = 0;
  ChannelId speed = 0;
  ChannelId stuck = 0;
  std::optional<int64_t> since_ns;  // start of the current duty > 0, 0 rpm run
};

std::string Indexed(std::string_view base, size_t i) {
  return i == 0 ? std::string(base) : std::string(base) + std::to_string(i);
}

class FanCollector final : public Collector {
 public:
  std::string_view Name() const override { return "fan"; }

  void Discover(DiscoverContext& ctx) override {
    files_.clear();
    stuck_.clear();
    std::vector<std::string> pwmfans, tachs, legacy;
    const std::string root = SysPath("class/hwmon");
    for (const auto& entry : ctx.fs().List(root)) {
      const std::string path = JoinPath(root, entry);
      auto name = ctx.ReadLine(JoinPath(path, "name"));
      if (!name) continue;
      auto dir = ctx.fs().Resolve(path);
      if (!dir) continue;
      if (*name == "pwmfan") pwmfans.push_back(*dir);
      if (*name == "pwm_tach") tachs.push_back(*dir);
      if (*name == "tegra_pwmfan") legacy.push_back(*dir);
    }
    // hwmonN numbering is not stable; device paths are.
    std::sort(pwmfans.begin(), pwmfans.end());
    std::sort(tachs.begin(), tachs.end());
    DiscoverPwmfans(ctx, pwmfans, tachs);
    DiscoverLegacy(ctx, legacy);
  }

  void Sample(SampleContext& ctx) override {
    SampleScaled(ctx, files_);
    for (auto& w : stuck_) {
      Value duty = ctx.Get(w.duty);
      Value speed = ctx.Get(w.speed);
      if (!duty || !speed) {  // absent: the failed read is counted on its own channel
        w.since_ns.reset();
        continue;
      }
      if (*duty > 0 && *speed == 0) {
        if (!w.since_ns) w.since_ns = ctx.boottime_ns();
      } else {
        w.since_ns.reset();
      }
      ctx.Set(w.stuck, w.since_ns && ctx.boottime_ns() - *w.since_ns >= kStuckAfterNs ? 1 : 0);
    }
  }

  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/hwmon")}; }

 private:
  void DiscoverPwmfans(DiscoverContext& ctx, const std::vector<std::string>& pwmfans,
                       const std::vector<std::string>& tachs) {
    for (size_t i = 0; i < std::max(pwmfans.size(), tachs.size()); ++i) {
      Channel base;
      base.kind = Kind::kFan;
      base.name = Indexed("pwmfan", i);
      std::optional<ChannelId> speed, duty;
      if (i < tachs.size()) {
        speed = AddSpeed(ctx, base, "hwmon pwm_tach", tachs[i], {"rpm"});
      }
      if (i < pwmfans.size()) {
        Channel d = base;
        if (auto mode = ctx.ReadLine(JoinPath(pwmfans[i], "pwm1_enable"))) {
          d.attrs.emplace_back("pwm1_enable", *mode);
        }
        duty = AddDuty(ctx, d, "hwmon pwmfan", pwmfans[i], {"pwm1"});
        if (!speed) speed = AddSpeed(ctx, base, "hwmon pwmfan", pwmfans[i], {"fan1_input"});
      }
      WatchStuck(ctx, base.name, "hwmon pwmfan", duty, speed);
    }
  }

  void DiscoverLegacy(DiscoverContext& ctx, const std::vector<std::string>& chips) {
    // Each group is one fan: the platform device, then per tegra_pwmfan chip
    // its device dir (on JP4 the same platform device: declared once) or else
    // the chip's own dir.
    struct Place {
      std::string dir;
      std::string device;
    };
    std::vector<std::vector<Place>> groups;
    if (auto dev = ctx.fs().Resolve(SysPath("devices/pwm-fan"))) {
      groups.push_back({{*dev, "pwm-fan"}});
    }
    for (const auto& chip : chips) {
      std::vector<Place> places;
      if (auto dev = ctx.fs().Resolve(JoinPath(chip, "device"))) {
        places.push_back({*dev, "hwmon tegra_pwmfan"});
      }
      places.push_back({chip, "hwmon tegra_pwmfan"});
      groups.push_back(std::move(places));
    }
    std::vector<std::string> seen;
    for (const auto& places : groups) {
      bool known = std::any_of(places.begin(), places.end(), [&](const Place& p) {
        return std::find(seen.begin(), seen.end(), p.dir) != seen.end();
      });
      if (known) continue;
      Channel base;
      base.kind = Kind::kFan;
      base.name = Indexed("pwm-fan", seen.size());
      for (const auto& p : places) {
        auto duty = AddDuty(ctx, base, p.device, p.dir, {"target_pwm"});
        auto speed = AddSpeed(ctx, base, p.device, p.dir, {"rpm_measured"});
        if (duty || speed) {
          WatchStuck(ctx, base.name, p.device, duty, speed);
          seen.push_back(p.dir);
          break;
        }
      }
    }
  }

  void WatchStuck(DiscoverContext& ctx, const std::string& fan, const std::string& device,
                  std::optional<ChannelId> duty, std::optional<ChannelId> speed) {
    if (!duty || !speed) return;
    Channel c;
    c.kind = Kind::kEvent;
    c.name = fan + ":stuck";
    c.field = Field::kState;
    c.device = device;
    c.flags = kFlagDerived;
    c.attrs.emplace_back("source", "fan");
    stuck_.push_back({*duty, *speed, ctx.Add(std::move(c)), std::nullopt});
  }

  std::optional<ChannelId> AddDuty(DiscoverContext& ctx, const Channel& base,
                                   const std::string& device, const std::string& dir,
                                   std::initializer_list<const char*> names) {
    Channel c = base;
    c.field = Field::kDuty;
    c.device = device;
    return Add(ctx, std::move(c), dir, names, 0, kPwmMax, 1000, kPwmMax);
  }

  std::optional<ChannelId> AddSpeed(DiscoverContext& ctx, const Channel& base,
                                    const std::string& device, const std::string& dir,
                                    std::initializer_list<const char*> names) {
    Channel c = base;
    c.field = Field::kSpeed;
    c.device = device;
    return Add(ctx, std::move(c), dir, names, 0, kNoUpperBound, 1, 1);
  }

  // Declares `c` from the first of `names` in `dir` that opens.
  std::optional<ChannelId> Add(DiscoverContext& ctx, Channel c, const std::string& dir,
                               std::initializer_list<const char*> names, int64_t lo, int64_t hi,
                               int64_t num, int64_t den) {
    for (const char* name : names) {
      FileId f = ctx.Open(JoinPath(dir, name));
      if (f < 0) continue;
      ChannelId id = ctx.Add(std::move(c));
      files_.push_back({f, id, num, den, lo, hi});
      return id;
    }
    return std::nullopt;
  }

  std::vector<ScaledFile> files_;
  std::vector<StuckWatch> stuck_;
};

}  // namespace

std::unique_ptr<Collector> MakeFanCollector() {
  return std::make_unique<FanCollector>();
}

}  // namespace edgemon
