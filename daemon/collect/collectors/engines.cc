// Hardware engines (NVENC, NVDEC, VIC, DLA, ...) from the common-clock debugfs.
//
// /sys/kernel/debug/clk/<name>/ (root only; absent otherwise) holds
// clk_enable_count (> 0: the engine's clock is on) and clk_rate (Hz). On
// BPMP SoCs (T186+) /sys/kernel/debug/bpmp/debug/clk/<name>/rate is the
// firmware's view of the rate and is preferred, as tegrastats does.
//
// Channels: kind engine, name upper-case ("NVENC", "DLA0"), device
// "clk <name>", fields state (0/1) and freq (Hz -> kHz).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

// Clock names of engines (jtop's set; TX1/TX2 call NVENC "msenc").
constexpr std::array<std::string_view, 16> kEngineClocks = {
    "ape",   "dla0",   "dla1",  "pva0",   "pva1", "vic",   "nvjpg", "nvjpg1",
    "nvenc", "nvenc1", "nvdec", "nvdec1", "se",   "cvnas", "msenc", "ofa"};

bool IsEngineClock(std::string_view lower) {
  for (auto n : kEngineClocks) {
    if (lower == n) return true;
  }
  return false;
}

class EngineCollector final : public Collector {
 public:
  std::string_view Name() const override { return "engines"; }

  void Discover(DiscoverContext& ctx) override {
    states_.clear();
    rates_.clear();
    const std::string root = SysPath("kernel/debug/clk");
    const std::string bpmp = SysPath("kernel/debug/bpmp/debug/clk");
    for (const auto& name : ctx.fs().List(root)) {
      const std::string lower = parse::Lower(name);
      if (!IsEngineClock(lower)) continue;
      const std::string dir = JoinPath(root, name);
      Channel base;
      base.kind = Kind::kEngine;
      base.name = parse::Upper(name);
      base.device = "clk " + name;

      FileId enable = ctx.Open(JoinPath(dir, "clk_enable_count"));
      if (enable >= 0) {
        Channel c = base;
        c.field = Field::kState;
        states_.push_back({enable, ctx.Add(std::move(c))});
      }
      FileId rate = ctx.Open(JoinPath(JoinPath(bpmp, name), "rate"));
      const char* source = "bpmp";
      if (rate < 0 && lower != name) rate = ctx.Open(JoinPath(JoinPath(bpmp, lower), "rate"));
      if (rate < 0) {
        rate = ctx.Open(JoinPath(dir, "clk_rate"));
        source = "clk";
      }
      if (rate >= 0) {
        Channel c = base;
        c.field = Field::kFreq;
        c.attrs.emplace_back("rate_source", source);
        rates_.push_back({rate, ctx.Add(std::move(c))});
      }
    }
  }

  void Sample(SampleContext& ctx) override {
    for (const auto& s : states_) {
      auto count = ctx.ReadInt(s.file, s.channel);
      if (!count) continue;
      if (*count < 0) {
        ctx.Fail(s.channel, ReadError::kRange);
        continue;
      }
      ctx.Set(s.channel, *count > 0 ? 1 : 0);
    }
    for (const auto& r : rates_) ctx.ReadScaled(r.file, r.channel, 1, 1000, 0);  // Hz -> kHz
  }

 private:
  std::vector<ChannelFile> states_;
  std::vector<ChannelFile> rates_;
};

}  // namespace

std::unique_ptr<Collector> MakeEngineCollector() {
  return std::make_unique<EngineCollector>();
}

}  // namespace edgemon
