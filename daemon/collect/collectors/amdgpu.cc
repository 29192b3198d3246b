// AMD GPUs through the amdgpu driver's sysfs files (/sys/class/drm/cardN/device).
//
// A card is read when its device dir has gpu_busy_percent (amdgpu only).
// Channels: kind gpu, name "cardN", device "amdgpu <PCI slot>" (or
// "amdgpu cardN"), fields load (gpu_busy_percent x 10, permille), freq (the
// starred level of pp_dpm_sclk, MHz -> kHz), used/total (mem_info_vram_*,
// bytes -> KiB). Temperatures, power and fans of the card come from its
// hwmon chip (generic hwmon collector).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

// "card0", "card12"; not connectors ("card0-DP-1") nor render nodes.
bool IsCardName(std::string_view name) {
  if (name.size() <= 4 || name.substr(0, 4) != "card") return false;
  for (char ch : name.substr(4)) {
    if (ch < '0' || ch > '9') return false;
  }
  return true;
}

// PCI_SLOT_NAME from a device's uevent ("0000:09:00.0").
std::optional<std::string> PciSlot(SysFs& fs, const std::string& device_dir) {
  auto text = fs.ReadText(JoinPath(device_dir, "uevent"), 4096);
  if (!text) return std::nullopt;
  std::string_view s = *text;
  constexpr std::string_view kKey = "PCI_SLOT_NAME=";
  while (!s.empty()) {
    size_t nl = s.find('\n');
    std::string_view line = s.substr(0, nl);
    s.remove_prefix(nl == std::string_view::npos ? s.size() : nl + 1);
    if (line.substr(0, kKey.size()) != kKey) continue;
    line = parse::Trim(line.substr(kKey.size()));
    if (!line.empty()) return std::string(line);
  }
  return std::nullopt;
}

class AmdgpuCollector final : public Collector {
 public:
  std::string_view Name() const override { return "amdgpu"; }

  void Discover(DiscoverContext& ctx) override {
    files_.clear();
    sclk_.clear();
    const std::string root = SysPath("class/drm");
    for (const auto& card : ctx.fs().List(root)) {
      if (!IsCardName(card)) continue;
      auto device_dir = ctx.fs().Resolve(JoinPath(JoinPath(root, card), "device"));
      if (!device_dir) continue;
      FileId busy = ctx.Open(JoinPath(*device_dir, "gpu_busy_percent"));
      if (busy < 0) continue;

      Channel base;
      base.kind = Kind::kGpu;
      base.name = card;
      auto slot = PciSlot(ctx.fs(), *device_dir);
      base.device = "amdgpu " + (slot ? *slot : card);
      if (auto product = ctx.ReadLine(JoinPath(*device_dir, "product_name"))) {
        base.attrs.emplace_back("product", *product);
      }

      files_.push_back({busy, ctx.Add(WithField(base, Field::kLoad)), 10, 1, 0, 100});
      FileId sclk = ctx.Open(JoinPath(*device_dir, "pp_dpm_sclk"));
      if (sclk >= 0) sclk_.push_back({sclk, ctx.Add(WithField(base, Field::kFreq))});
      Add(ctx, WithField(base, Field::kUsed), JoinPath(*device_dir, "mem_info_vram_used"));
      Add(ctx, WithField(base, Field::kTotal), JoinPath(*device_dir, "mem_info_vram_total"));
    }
  }

  void Sample(SampleContext& ctx) override {
    SampleScaled(ctx, files_);
    for (const auto& s : sclk_) {
      // A multi-line table; the starred line is the current level.
      auto text = ctx.Read(s.file, s.channel);
      if (!text) continue;
      auto mhz = parse::PpDpmCurrentMhz(*text);
      if (!mhz) {
        ctx.Fail(s.channel, ReadError::kGarbage);
        continue;
      }
      int64_t khz;
      if (*mhz < 0 || __builtin_mul_overflow(*mhz, int64_t{1000}, &khz)) {
        ctx.Fail(s.channel, ReadError::kRange);
        continue;
      }
      ctx.Set(s.channel, khz);
    }
  }

  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/drm")}; }

 private:
  // Declares a byte count channel (stored in KiB) when `path` opens.
  void Add(DiscoverContext& ctx, Channel c, const std::string& path) {
    FileId f = ctx.Open(path);
    if (f < 0) return;
    files_.push_back({f, ctx.Add(std::move(c)), 1, 1024, 0, kNoUpperBound});
  }

  std::vector<ScaledFile> files_;
  std::vector<ChannelFile> sclk_;
};

}  // namespace

std::unique_ptr<Collector> MakeAmdgpuCollector() {
  return std::make_unique<AmdgpuCollector>();
}

}  // namespace edgemon
