#include "daemon/collect/gpu_processes.h"

#include "edgemon/clock.h"

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {

GpuProcessReader::GpuProcessReader(SysFs& fs, bool nvml, int64_t ttl_ns)
    : fs_(fs), ttl_ns_(ttl_ns) {
  if (nvml) nvml_ = std::make_unique<NvmlProcessMemory>();
}

GpuProcessReader::~GpuProcessReader() = default;

std::shared_ptr<const GpuProcessMemory> GpuProcessReader::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t now = SystemClock().MonotonicNs();
  if (!cached_ || now - cached_at_ns_ >= ttl_ns_) {
    cached_ = std::make_shared<const GpuProcessMemory>(ReadNow());
    cached_at_ns_ = now;
  }
  return cached_;
}

GpuProcessMemory GpuProcessReader::ReadNow() {
  GpuProcessMemory out;
  const std::string maps = SysPath("kernel/debug/nvmap/iovmm/maps");
  if (auto text = fs_.ReadText(maps, 4 << 20)) {
    if (auto parsed = parse::NvmapIovmmMaps(*text)) {
      out.available = true;
      out.source = "nvmap";
      for (auto& c : parsed->clients) {
        out.kib[c.pid] = c.kib;
        out.name[c.pid] = std::move(c.process);
      }
      return out;
    }
    out.unavailable = maps + " is not in the expected format";
    return out;
  }
  if (nvml_) {
    if (auto kib = nvml_->Read()) {
      out.available = true;
      out.source = "nvml";
      out.kib = std::move(*kib);
      for (const auto& [pid, v] : out.kib) {
        auto comm = fs_.ReadText(ProcPath(std::to_string(pid) + "/comm"), 256);
        if (comm) out.name[pid] = std::string(parse::Trim(*comm));
      }
      return out;
    }
  }
  // nvmap boards say so in /proc/meminfo (NvMapMemUsed); their table is in
  // debugfs, which only root can read.
  auto meminfo = fs_.ReadText(ProcPath("meminfo"), 1 << 16);
  if (meminfo && meminfo->find("NvMapMemUsed:") != std::string::npos) {
    out.unavailable = "cannot read " + maps + " (edgemond needs root and debugfs mounted)";
  }
  return out;
}

}  // namespace edgemon
