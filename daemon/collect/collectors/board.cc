// Board identity: model, SoC, L4T release, nvpmodel mode, kernel, CPU model,
// hostname. Read at discovery, without any subprocess; the nvpmodel mode is
// also a channel because it can change while the daemon runs.
#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

// L4T major release -> JetPack generation (R32: 4, R34/R35: 5, R36: 6,
// R38/R39: 7). Only the generation: no per-release table to fall behind.
std::string JetpackOf(std::string_view l4t) {
  auto major = parse::LeadingInt(l4t.substr(0, l4t.find('.')));
  if (!major) return {};
  if (*major == 32) return "4";
  if (*major == 34 || *major == 35) return "5";
  if (*major == 36) return "6";
  if (*major == 38 || *major == 39) return "7";
  return {};
}

class BoardCollector final : public Collector {
 public:
  std::string_view Name() const override { return "board"; }

  void Discover(DiscoverContext& ctx) override {
    SysFs& fs = ctx.fs();
    BoardInfo& b = ctx.board();
    mode_ = std::nullopt;
    read_at_.reset();
    file_ = -1;

    // Device tree (Jetson and other ARM boards); DMI on PCs.
    for (const auto& dir : {ProcPath("device-tree"), SysPath("firmware/devicetree/base")}) {
      if (auto model = fs.ReadText(JoinPath(dir, "model"), 4096)) {
        auto strings = parse::DtStrings(*model);
        if (!strings.empty()) b.model = strings.front();
      }
      if (auto compat = fs.ReadText(JoinPath(dir, "compatible"), 4096)) {
        // The most specific SoC entry: "tegra234" rather than the family "tegra23x".
        bool specific = false;
        for (const auto& s : parse::DtStrings(*compat)) {
          auto comma = s.find(',');
          std::string_view chip =
              comma == std::string::npos ? s : std::string_view(s).substr(comma + 1);
          if (chip.rfind("tegra", 0) != 0) continue;
          bool numeric = chip.size() > 5 && chip.find_first_not_of("0123456789", 5) == chip.npos;
          if (b.soc.empty() || (numeric && !specific)) b.soc = std::string(chip);
          specific = specific || numeric;
        }
      }
      if (!b.model.empty()) break;
    }
    if (b.model.empty()) {
      auto vendor = ctx.ReadLine(SysPath("class/dmi/id/sys_vendor"));
      auto product = ctx.ReadLine(SysPath("class/dmi/id/product_name"));
      if (product) b.model = vendor ? *vendor + " " + *product : *product;
    }

    if (auto rel = fs.ReadText(EtcPath("nv_tegra_release"), 4096)) {
      if (auto l4t = parse::L4tRelease(*rel)) {
        b.l4t = *l4t;
        b.jetpack = JetpackOf(b.l4t);
      }
    }
    if (auto conf = fs.ReadText(EtcPath("nvpmodel.conf"), 1 << 20)) {
      b.nvpmodel_modes = parse::Nvpmodel(*conf).modes;
    }
    const std::string status = VarLibPath("nvpmodel/status");
    if (auto text = fs.ReadText(status, 256)) {
      if (auto id = parse::NvpmodelStatus(*text)) {
        b.nvpmodel_id = *id;
        for (const auto& [mid, name] : b.nvpmodel_modes) {
          if (mid == *id) b.nvpmodel = name;
        }
      }
      file_ = ctx.Open(status);
      if (file_ >= 0) {
        Channel c;
        c.kind = Kind::kBoard;
        c.name = "nvpmodel";
        c.field = Field::kMode;
        c.device = "nvpmodel";
        mode_ = ctx.Add(std::move(c));
      }
    }

    if (auto v = ctx.ReadLine(ProcPath("sys/kernel/osrelease"))) b.kernel = *v;
    if (auto v = ctx.ReadLine(ProcPath("sys/kernel/hostname"))) b.hostname = *v;
    if (auto info = fs.ReadText(ProcPath("cpuinfo"), 1 << 20)) b.cpu_model = parse::CpuModel(*info);
  }

  void Sample(SampleContext& ctx) override {
    if (!mode_) return;
    // The power mode changes by hand, rarely: the status file (a path
    // checked for a rename on every read) is read at most once a second,
    // and the ticks between show what that read gave.
    const int64_t now = ctx.boottime_ns();
    if (read_at_ && now >= *read_at_ && now - *read_at_ < kModeRecheckNs) {
      if (mode_value_) {
        ctx.Set(*mode_, *mode_value_);
      } else {
        ctx.Fail(*mode_, mode_error_);
      }
      return;
    }
    read_at_ = now;
    mode_value_.reset();
    mode_error_ = ReadError::kGarbage;
    auto text = ctx.Read(file_, *mode_);
    if (!text) {
      mode_error_ = ctx.failure(*mode_);
      return;
    }
    if (auto id = parse::NvpmodelStatus(*text)) {
      mode_value_ = *id;
      ctx.Set(*mode_, *id);
    } else {
      ctx.Fail(*mode_, ReadError::kGarbage);
    }
  }

 private:
  static constexpr int64_t kModeRecheckNs = 1'000'000'000;
  std::optional<ChannelId> mode_;
  FileId file_ = -1;
  std::optional<int64_t> read_at_;     // boottime of the last read of the status
  std::optional<int64_t> mode_value_;  // what it gave (nullopt: mode_error_)
  ReadError mode_error_ = ReadError::kGarbage;
};

}  // namespace

std::unique_ptr<Collector> MakeBoardCollector() {
  return std::make_unique<BoardCollector>();
}

}  // namespace edgemon
