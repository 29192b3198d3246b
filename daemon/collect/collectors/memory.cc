// Memory: RAM, swap and zram from /proc/meminfo, /proc/swaps and
// /proc/buddyinfo, all in KiB.
//
// RAM "used" is counted the way tegrastats and jtop count it: MemTotal -
// MemFree - Buffers - Cached. NvMapMemUsed (Jetson's shared GPU/CPU nvmap
// memory) is reported as `shared` where the kernel has it. The largest free
// block (tegrastats' "lfb NxSIZE") is the highest buddy order with any free
// block, and how many blocks of that order are free.
#include <unistd.h>

#include <algorithm>
#include <array>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

enum Slot : size_t {
  kTotal,
  kFree,
  kAvailable,
  kBuffers,
  kCached,
  kShared,
  kSwapTotal,
  kSwapFree,
  kSwapCached,
  kSlots
};
constexpr std::array<std::string_view, kSlots> kKeys = {"MemTotal",  "MemFree",  "MemAvailable",
                                                        "Buffers",   "Cached",   "NvMapMemUsed",
                                                        "SwapTotal", "SwapFree", "SwapCached"};

class MemoryCollector final : public Collector {
 public:
  std::string_view Name() const override { return "memory"; }

  void Discover(DiscoverContext& ctx) override {
    ids_.fill(std::nullopt);
    used_ = swap_used_ = lfb_blocks_ = lfb_size_ = zram_total_ = zram_used_ = zram_devices_ =
        std::nullopt;
    meminfo_ = ctx.Open(ProcPath("meminfo"));
    buddy_ = ctx.Open(ProcPath("buddyinfo"));
    swaps_ = ctx.Open(ProcPath("swaps"));
    long page = ::sysconf(_SC_PAGESIZE);
    page_kib_ = page > 0 ? page / 1024 : 4;

    if (meminfo_ >= 0) {
      std::vector<parse::MeminfoEntry> entries;
      auto text = ctx.fs().ReadText(ProcPath("meminfo"), 1 << 16);
      if (text) parse::Meminfo(*text, entries);
      auto has = [&](std::string_view key) {
        return std::any_of(entries.begin(), entries.end(),
                           [&](const parse::MeminfoEntry& e) { return e.key == key; });
      };
      const std::array<std::pair<Kind, Field>, kSlots> where = {{
          {Kind::kMemory, Field::kTotal},
          {Kind::kMemory, Field::kFree},
          {Kind::kMemory, Field::kAvailable},
          {Kind::kMemory, Field::kBuffers},
          {Kind::kMemory, Field::kCached},
          {Kind::kMemory, Field::kShared},
          {Kind::kSwap, Field::kTotal},
          {Kind::kSwap, Field::kFree},
          {Kind::kSwap, Field::kCached},
      }};
      for (size_t i = 0; i < kSlots; ++i) {
        if (!has(kKeys[i])) continue;
        ids_[i] = Add(ctx, where[i].first, where[i].second, 0);
      }
      if (ids_[kTotal] && ids_[kFree] && ids_[kBuffers] && ids_[kCached]) {
        used_ = Add(ctx, Kind::kMemory, Field::kUsed, kFlagDerived);
      }
      if (ids_[kSwapTotal] && ids_[kSwapFree]) {
        swap_used_ = Add(ctx, Kind::kSwap, Field::kUsed, kFlagDerived);
      }
    }
    if (buddy_ >= 0) {
      lfb_blocks_ = Add(ctx, Kind::kMemory, Field::kLfbBlocks, kFlagDerived);
      lfb_size_ = Add(ctx, Kind::kMemory, Field::kLfbSize, kFlagDerived);
    }
    if (swaps_ >= 0) {
      auto text = ctx.fs().ReadText(ProcPath("swaps"), 1 << 16);
      bool zram = false;
      if (text) {
        for (const auto& s : parse::Swaps(*text)) zram |= IsZram(s.name);
      }
      if (zram) {
        zram_total_ = Add(ctx, Kind::kSwap, Field::kTotal, 0, "zram");
        zram_used_ = Add(ctx, Kind::kSwap, Field::kUsed, 0, "zram");
        zram_devices_ = Add(ctx, Kind::kSwap, Field::kDevices, 0, "zram");
      }
    }
  }

  void Sample(SampleContext& ctx) override {
    if (meminfo_ >= 0) SampleMeminfo(ctx);
    if (buddy_ >= 0 && lfb_blocks_) {
      if (auto text = ctx.Read(buddy_, *lfb_blocks_)) {
        if (auto lfb = parse::BuddyinfoLargestFree(*text); lfb && lfb->order < 40) {
          ctx.Set(*lfb_blocks_, lfb->blocks);
          ctx.Set(*lfb_size_, page_kib_ << lfb->order);
        } else {
          ctx.Fail(*lfb_blocks_, ReadError::kGarbage);
          ctx.Fail(*lfb_size_, ReadError::kGarbage);
        }
      } else {
        ctx.Fail(*lfb_size_, ReadError::kIo);
      }
    }
    if (swaps_ >= 0 && zram_total_) {
      if (auto text = ctx.Read(swaps_, *zram_total_)) {
        int64_t total = 0, used = 0, devices = 0;
        parse::Swaps(*text, swaps_list_);
        for (const auto& s : swaps_list_) {
          if (!IsZram(s.name)) continue;
          total += s.size_kib;
          used += s.used_kib;
          ++devices;
        }
        ctx.Set(*zram_total_, total);
        ctx.Set(*zram_used_, used);
        ctx.Set(*zram_devices_, devices);
      }
    }
  }

 private:
  static bool IsZram(std::string_view name) { return name.find("zram") != std::string_view::npos; }

  static ChannelId Add(DiscoverContext& ctx, Kind kind, Field field, uint32_t flags,
                       std::string name = {}) {
    Channel c;
    c.kind = kind;
    c.name = name.empty() ? (kind == Kind::kMemory ? "ram" : "swap") : std::move(name);
    c.field = field;
    c.flags = flags;
    c.device = kind == Kind::kMemory && (field == Field::kLfbBlocks || field == Field::kLfbSize)
                   ? "proc/buddyinfo"
                   : (c.name == "zram" ? "proc/swaps" : "proc/meminfo");
    return ctx.Add(std::move(c));
  }

  void SampleMeminfo(SampleContext& ctx) {
    ChannelId blame = ids_[kTotal].value_or(ids_[kFree].value_or(0));
    auto text = ctx.Read(meminfo_, blame);
    if (!text) {
      for (auto& id : ids_) {
        if (id) ctx.Fail(*id, ReadError::kIo);
      }
      return;
    }
    std::array<std::optional<int64_t>, kSlots> v;
    parse::MeminfoValues(*text, kKeys, v);
    for (size_t i = 0; i < kSlots; ++i) {
      if (!ids_[i]) continue;
      if (v[i]) {
        ctx.Set(*ids_[i], *v[i]);
      } else {
        ctx.Fail(*ids_[i], ReadError::kGarbage);
      }
    }
    if (used_) {
      if (v[kTotal] && v[kFree] && v[kBuffers] && v[kCached]) {
        int64_t used = *v[kTotal] - *v[kFree] - *v[kBuffers] - *v[kCached];
        if (used >= 0) {
          ctx.Set(*used_, used);
        } else {
          ctx.Fail(*used_, ReadError::kRange);
        }
      } else {
        ctx.Fail(*used_, ReadError::kGarbage);
      }
    }
    if (swap_used_) {
      if (v[kSwapTotal] && v[kSwapFree] && *v[kSwapFree] <= *v[kSwapTotal]) {
        ctx.Set(*swap_used_, *v[kSwapTotal] - *v[kSwapFree]);
      } else {
        ctx.Fail(*swap_used_, ReadError::kRange);
      }
    }
  }

  FileId meminfo_ = -1;
  FileId buddy_ = -1;
  FileId swaps_ = -1;
  int64_t page_kib_ = 4;
  std::array<std::optional<ChannelId>, kSlots> ids_;
  std::optional<ChannelId> used_, swap_used_, lfb_blocks_, lfb_size_, zram_total_, zram_used_,
      zram_devices_;
  std::vector<parse::SwapEntry> swaps_list_;  // this tick's /proc/swaps, kept for its buffer
};

}  // namespace

std::unique_ptr<Collector> MakeMemoryCollector() {
  return std::make_unique<MemoryCollector>();
}

}  // namespace edgemon
