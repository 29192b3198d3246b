// GPU memory per process, where the board accounts for it:
//   Jetson (nvmap, Xavier/Orin/Nano/TX2): debugfs kernel/debug/nvmap/iovmm/maps,
//     readable by root only, with debugfs mounted;
//   Thor and discrete GPUs: NVML's running-process lists (when NVML is used).
// Other boards have no per-process GPU accounting: nothing, and no complaint.
//
// Read() caches its answer for `ttl_ns` (steady clock) so that process lists
// and scrapes arriving together read the kernel's table once.
//
// Thread safety: Read() may be called from any thread (a mutex serialises
// the readers; SysFs::ReadText opens its own descriptor).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/collect/sysfs.h"

namespace edgemon {

class NvmlProcessMemory;

struct GpuProcessMemory {
  bool available = false;           // kib holds every process using the GPU
  std::map<int, uint64_t> kib;      // pid -> KiB
  std::map<int, std::string> name;  // pid -> name, where the source gives one
  std::string source;               // "nvmap", "nvml"
  std::string unavailable;          // why not, where the board has accounting we cannot read
};

class GpuProcessReader {
 public:
  GpuProcessReader(SysFs& fs, bool nvml, int64_t ttl_ns = 1'000'000'000);
  ~GpuProcessReader();
  GpuProcessReader(const GpuProcessReader&) = delete;
  GpuProcessReader& operator=(const GpuProcessReader&) = delete;

  std::shared_ptr<const GpuProcessMemory> Read();

 private:
  GpuProcessMemory ReadNow();

  SysFs& fs_;
  const int64_t ttl_ns_;
  std::mutex mu_;
  std::unique_ptr<NvmlProcessMemory> nvml_;         // guarded by mu_
  std::shared_ptr<const GpuProcessMemory> cached_;  // guarded by mu_
  int64_t cached_at_ns_ = 0;                        // guarded by mu_
};

}  // namespace edgemon
