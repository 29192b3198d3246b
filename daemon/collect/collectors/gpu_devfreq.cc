// Integrated GPUs and other devfreq devices (/sys/class/devfreq).
//
// A devfreq entry is a GPU when its device's device-tree node is named like
// one (gpu, gp10b, gv11b, ga10b, gb10b, or any name containing "gpu"), or,
// without an of_node, when the entry itself is named "<addr>.gpu",
// "<addr>.gv11b", ... Jetson Thor exposes its GPU clock domains as
// "gpu-gpc-N" (the GPU) and "gpu-nvd-N" (a second domain, reported as a
// plain devfreq device). "bwmgr" is Thor's EMC and belongs to emc.cc.
//
// GPU channels: kind gpu, name "gpu" ("gpu1", ... for further GPUs), device
// "devfreq <entry>", fields freq/freq_min/freq_max (Hz -> kHz; the limits are
// re-read every tick because nvpmodel changes them), load (device/load,
// permille 0..1000) and state (device/railgate_enable, 0/1) where present.
// Other entries: kind devfreq, name = entry, fields freq/freq_min/freq_max.
#include <array>
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

// Device-tree node names of NVIDIA integrated GPUs (jtop's list).
constexpr std::array<std::string_view, 5> kGpuNodeNames = {"gpu", "gp10b", "gv11b", "ga10b",
                                                           "gb10b"};

bool IsGpuNodeName(std::string_view name) {
  for (auto n : kGpuNodeNames) {
    if (name == n) return true;
  }
  return name.find("gpu") != std::string_view::npos;
}

// Entry names of Jetson GPUs ("57000000.gpu", "17000000.ga10b"), for kernels
// whose device has no of_node.
bool IsGpuEntryName(std::string_view entry) {
  for (auto n : kGpuNodeNames) {
    if (entry.size() > n.size() && entry.ends_with(n) &&
        entry[entry.size() - n.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

enum class Role { kSkip, kGpu, kDevfreq };

Role Classify(std::string_view entry, const std::optional<std::string>& node_name) {
  if (entry == "bwmgr") return Role::kSkip;  // Thor's EMC: emc.cc
  // Thor: "gpu-gpc-N" is the GPU; the other "gpu-*" domains (gpu-nvd-N) are
  // clock domains of the same GPU, reported as plain devfreq devices.
  if (entry.starts_with("gpu-")) return entry.starts_with("gpu-gpc") ? Role::kGpu : Role::kDevfreq;
  if (node_name) return IsGpuNodeName(*node_name) ? Role::kGpu : Role::kDevfreq;
  return IsGpuEntryName(entry) ? Role::kGpu : Role::kDevfreq;
}

// The device-tree node name of a device dir: of_node/name (NUL-terminated),
// else the node directory's name without its unit address ("gpu@17000000").
std::optional<std::string> NodeName(SysFs& fs, const std::string& device_dir) {
  auto node = fs.Resolve(JoinPath(device_dir, "of_node"));
  if (!node) return std::nullopt;
  if (auto text = fs.ReadText(JoinPath(*node, "name"), 256)) {
    auto names = parse::DtStrings(*text);
    if (!names.empty()) return names.front();
  }
  std::string_view base = BaseName(*node);
  base = base.substr(0, base.find('@'));
  if (base.empty()) return std::nullopt;
  return std::string(base);
}

// The number of entries in available_frequencies, and the lowest and highest (kHz).
struct FreqTable {
  int count = 0;
  std::optional<int64_t> min_khz;
  std::optional<int64_t> max_khz;
};

FreqTable ReadFreqTable(SysFs& fs, const std::string& path) {
  FreqTable t;
  auto text = fs.ReadText(path, 16384);
  if (!text) return t;
  for (std::string_view tok : parse::Words(*text)) {
    auto hz = parse::Int(tok);
    if (!hz || *hz < 0) continue;
    int64_t khz = *hz / 1000;
    ++t.count;
    if (!t.min_khz || khz < *t.min_khz) t.min_khz = khz;
    if (!t.max_khz || khz > *t.max_khz) t.max_khz = khz;
  }
  return t;
}

class GpuDevfreqCollector final : public Collector {
 public:
  std::string_view Name() const override { return "gpu_devfreq"; }

  void Discover(DiscoverContext& ctx) override {
    files_.clear();
    const std::string root = SysPath("class/devfreq");
    int gpus = 0;
    for (const auto& entry : ctx.fs().List(root)) {
      const std::string path = JoinPath(root, entry);
      auto freq_dir = ctx.fs().Resolve(path);
      if (!freq_dir) continue;
      auto device_dir = ctx.fs().Resolve(JoinPath(path, "device"));
      std::optional<std::string> node = device_dir ? NodeName(ctx.fs(), *device_dir) : std::nullopt;
      Role role = Classify(entry, node);
      if (role == Role::kSkip) continue;

      Channel base;
      if (role == Role::kGpu) {
        base.kind = Kind::kGpu;
        base.name = gpus == 0 ? std::string("gpu") : "gpu" + std::to_string(gpus);
        ++gpus;
      } else {
        base.kind = Kind::kDevfreq;
        base.name = entry;
      }
      base.device = "devfreq " + entry;
      if (auto governor = ctx.ReadLine(JoinPath(*freq_dir, "governor"))) {
        base.attrs.emplace_back("governor", *governor);
      }
      FreqTable table = ReadFreqTable(ctx.fs(), JoinPath(*freq_dir, "available_frequencies"));
      if (table.count > 0) {
        base.attrs.emplace_back("available_frequencies_count", std::to_string(table.count));
      }
      if (role == Role::kGpu && node) base.attrs.emplace_back("of_node", *node);

      Channel freq = base;
      freq.field = Field::kFreq;
      freq.min = table.min_khz;
      freq.max = table.max_khz;
      Add(ctx, std::move(freq), JoinPath(*freq_dir, "cur_freq"), 0, kNoUpperBound, 1, 1000);
      Add(ctx, WithField(base, Field::kFreqMin), JoinPath(*freq_dir, "min_freq"), 0, kNoUpperBound,
          1, 1000);
      Channel freq_max = WithField(base, Field::kFreqMax);
      freq_max.max = table.max_khz;  // the hardware's highest: a lower max_freq is a cap
      Add(ctx, std::move(freq_max), JoinPath(*freq_dir, "max_freq"), 0, kNoUpperBound, 1, 1000);
      if (role == Role::kGpu && device_dir) {
        Add(ctx, WithField(base, Field::kLoad), JoinPath(*device_dir, "load"), 0, 1000, 1, 1);
        Add(ctx, WithField(base, Field::kState), JoinPath(*device_dir, "railgate_enable"), 0, 1, 1,
            1);
      }
    }
  }

  void Sample(SampleContext& ctx) override { SampleScaled(ctx, files_); }

  std::vector<std::string> WatchedDirs() const override { return {SysPath("class/devfreq")}; }

 private:
  // Declares `c` when `path` opens; the file is read every tick.
  void Add(DiscoverContext& ctx, Channel c, const std::string& path, int64_t lo, int64_t hi,
           int64_t num, int64_t den) {
    FileId f = ctx.Open(path);
    if (f < 0) return;
    files_.push_back({f, ctx.Add(std::move(c)), num, den, lo, hi});
  }

  std::vector<ScaledFile> files_;
};

}  // namespace

std::unique_ptr<Collector> MakeGpuDevfreqCollector() {
  return std::make_unique<GpuDevfreqCollector>();
}

}  // namespace edgemon
