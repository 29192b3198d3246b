// The external memory controller (EMC): frequency and utilisation.
//
// Sources per generation (all Hz; the debugfs ones are readable by root only,
// so their absence is normal):
//   T264 Thor     /sys/class/devfreq/bwmgr/{cur_freq,min_freq,max_freq}
//   T186/194/234  /sys/kernel/debug/bpmp/debug/clk/emc/{rate,min_rate,max_rate}
//   T210          /sys/kernel/debug/clk/override.emc/clk_rate and
//                 /sys/kernel/debug/tegra_bwmgr/emc_{min,max}_rate
// Utilisation counter (the activity monitor's mc_all, which reads as
// utilisation % x EMC kHz, as jtop and tegrastats use it):
//   JP4/JP5 /sys/kernel/actmon_avg_activity/mc_all
//   JP6     /sys/kernel/debug/cactmon/mc_all
//   Thor    /sys/kernel/debug/bpmp/debug/actmon/mc_all_avg_activity
// load (permille) = mc_all * 10 / EMC kHz, so it needs this tick's frequency.
//
// Channel: kind emc, name "emc", fields freq, freq_min, freq_max, load (each
// declared only when its files open); device names the frequency source.
//
// nvpmodel's EMC cap (T186/T194/T234, what a power mode's `EMC MAX_FREQ`
// writes; sysfs, not debugfs): /sys/kernel/nvpmodel_emc_cap/emc_iso_cap, Hz,
// 0 = no cap -> emc/emc_iso_cap/freq_max in kHz, with the frequency source's
// max_rate (read at discovery) as its `max`; a 0 reads as that maximum (no
// cap), and is absent when the maximum is unknown.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/collect/collectors.h"

namespace edgemon {
namespace {

struct FreqSource {
  std::string cur, min, max;  // Hz
  std::string device;
};

std::vector<FreqSource> FreqSources() {
  const std::string thor = SysPath("class/devfreq/bwmgr");
  const std::string bpmp = SysPath("kernel/debug/bpmp/debug/clk/emc");
  const std::string bwmgr = SysPath("kernel/debug/tegra_bwmgr");
  return {
      {JoinPath(thor, "cur_freq"), JoinPath(thor, "min_freq"), JoinPath(thor, "max_freq"),
       "devfreq bwmgr"},
      {JoinPath(bpmp, "rate"), JoinPath(bpmp, "min_rate"), JoinPath(bpmp, "max_rate"),
       "bpmp clk emc"},
      {SysPath("kernel/debug/clk/override.emc/clk_rate"), JoinPath(bwmgr, "emc_min_rate"),
       JoinPath(bwmgr, "emc_max_rate"), "clk override.emc"},
  };
}

std::array<std::string, 3> ActivitySources() {
  return {SysPath("kernel/actmon_avg_activity/mc_all"), SysPath("kernel/debug/cactmon/mc_all"),
          SysPath("kernel/debug/bpmp/debug/actmon/mc_all_avg_activity")};
}

class EmcCollector final : public Collector {
 public:
  std::string_view Name() const override { return "emc"; }

  void Discover(DiscoverContext& ctx) override {
    freq_ = min_ = max_ = activity_ = cap_ = ChannelFile{};
    max_khz_.reset();
    for (const auto& src : FreqSources()) {
      if (!ctx.fs().Exists(src.cur)) continue;
      if (auto hz = ctx.ReadInt(src.max); hz && *hz > 0) max_khz_ = *hz / 1000;
      break;
    }
    if (FileId f = ctx.Open(SysPath("kernel/nvpmodel_emc_cap/emc_iso_cap")); f >= 0) {
      Channel cap;
      cap.kind = Kind::kEmc;
      cap.name = "emc_iso_cap";
      cap.field = Field::kFreqMax;
      cap.device = "nvpmodel_emc_cap";
      cap.max = max_khz_;
      cap_ = {f, ctx.Add(std::move(cap))};
    }
    for (const auto& src : FreqSources()) {
      FileId cur = ctx.Open(src.cur);
      if (cur < 0) continue;
      Channel base;
      base.kind = Kind::kEmc;
      base.name = "emc";
      base.device = src.device;
      freq_ = {cur, ctx.Add(WithField(base, Field::kFreq))};
      min_ = Declare(ctx, WithField(base, Field::kFreqMin), src.min);
      max_ = Declare(ctx, WithField(base, Field::kFreqMax), src.max);
      for (const auto& path : ActivitySources()) {
        FileId act = ctx.Open(path);
        if (act < 0) continue;
        Channel load = WithField(base, Field::kLoad);
        load.attrs.emplace_back("activity", path);
        activity_ = {act, ctx.Add(std::move(load))};
        break;
      }
      break;
    }
  }

  void Sample(SampleContext& ctx) override {
    if (cap_.file >= 0) {
      if (auto hz = ctx.ReadInt(cap_.file, cap_.channel)) {
        if (*hz < 0) {
          ctx.Fail(cap_.channel, ReadError::kRange);
        } else if (*hz > 0) {
          ctx.Set(cap_.channel, *hz / 1000);
        } else if (max_khz_) {
          ctx.Set(cap_.channel, *max_khz_);  // no cap: the hardware maximum
        }
      }
    }
    if (freq_.file < 0) return;
    std::optional<int64_t> khz = ReadKhz(ctx, freq_);
    ReadKhz(ctx, min_);
    ReadKhz(ctx, max_);
    if (activity_.file < 0) return;
    auto mc_all = ctx.ReadInt(activity_.file, activity_.channel);
    if (!mc_all || !khz) return;  // no frequency this tick: no load either
    int64_t scaled;
    if (*mc_all < 0 || *khz <= 0 || __builtin_mul_overflow(*mc_all, int64_t{10}, &scaled)) {
      ctx.Fail(activity_.channel, ReadError::kRange);
      return;
    }
    int64_t permille = scaled / *khz;
    if (permille > 1000) {
      ctx.Fail(activity_.channel, ReadError::kRange);
      return;
    }
    ctx.Set(activity_.channel, permille);
  }

  // bwmgr can appear late with the rest of devfreq; debugfs does not change.
  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/devfreq")}; }

 private:
  static ChannelFile Declare(DiscoverContext& ctx, Channel c, const std::string& path) {
    FileId f = ctx.Open(path);
    if (f < 0) return {};
    return {f, ctx.Add(std::move(c))};
  }

  // Reads a Hz file into its channel in kHz.
  static std::optional<int64_t> ReadKhz(SampleContext& ctx, const ChannelFile& f) {
    if (f.file < 0) return std::nullopt;
    return ctx.ReadScaled(f.file, f.channel, 1, 1000, 0);
  }

  ChannelFile freq_, min_, max_, activity_, cap_;
  std::optional<int64_t> max_khz_;  // the frequency source's max_rate, kHz
};

}  // namespace

std::unique_ptr<Collector> MakeEmcCollector() {
  return std::make_unique<EmcCollector>();
}

}  // namespace edgemon
