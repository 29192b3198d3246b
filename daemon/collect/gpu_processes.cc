#include "daemon/collect/gpu_processes.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "edgemon/clock.h"

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {

std::string NvmapUnreadable(const std::string& path, const std::string& root, int err, bool debugfs,
                            uid_t euid) {
  const std::string where = root.empty() || root == "/" ? path : path + " under " + root;
  if (err == ENOENT || err == ENOTDIR) {
    if (debugfs) {
      return where + " is not present: debugfs has no nvmap table";
    }
    if (root.empty() || root == "/") {
      return where +
             " is not present: debugfs is not mounted (mount -t debugfs none /sys/kernel/debug)";
    }
    return where + " is not present: no debugfs is mounted there";
  }
  if (err == EACCES || err == EPERM) {
    if (euid != 0) {
      return "cannot read " + where + ": permission denied (edgemond runs as uid " +
             std::to_string(euid) + "; debugfs is root's)";
    }
    return "cannot read " + where + ": " + std::strerror(err) +
           " although edgemond runs as root (kernel lockdown, or a sandbox that hides debugfs)";
  }
  if (err == 0) return "cannot read " + where;
  return "cannot read " + where + ": " + std::strerror(err);
}

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
  auto text = fs_.ReadText(maps, 4 << 20);
  const int maps_errno = text ? 0 : errno;
  if (text) {
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
  std::string nvml_why;
  if (nvml_) {
    auto kib = nvml_->Read();
    nvml_why = nvml_->why();
    if (kib) {
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
  // debugfs, which must be mounted and which only root can read. Why it was
  // not read comes from the errno ReadText left.
  auto meminfo = fs_.ReadText(ProcPath("meminfo"), 1 << 16);
  if (meminfo && meminfo->find("NvMapMemUsed:") != std::string::npos) {
    const bool debugfs = !fs_.List(SysPath("kernel/debug")).empty();
    // The monitored root, for the message, where the SysFs is the real one.
    const auto* rooted = dynamic_cast<const RootedSysFs*>(&fs_);
    out.unavailable = NvmapUnreadable(maps, rooted ? rooted->root() : std::string(), maps_errno,
                                      debugfs, ::geteuid());
    if (!nvml_why.empty()) out.unavailable += "; " + nvml_why;
  } else {
    // A board whose NVML lists devices but not their processes' memory
    // (Orin under JetPack 7) says so rather than showing nothing.
    out.unavailable = std::move(nvml_why);
  }
  return out;
}

}  // namespace edgemon
