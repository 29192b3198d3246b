// GPU memory per process, where the board accounts for it:
//   Jetson (nvmap, Xavier/Orin/Nano/TX2): debugfs kernel/debug/nvmap/iovmm/maps,
//     readable by root only, with debugfs mounted (where it cannot be read,
//     `unavailable` says why, from the errno of reading it);
//   Thor and discrete GPUs: NVML's running-process lists (when NVML is used).
// Where NVML lists devices but answers NOT_SUPPORTED to their process lists
// (Orin under JetPack 7), or lists processes without their memory,
// `unavailable` says so: GPU memory per process is "not available", never 0.
// Other boards have no per-process GPU accounting: nothing, and no complaint.
//
// Read() caches its answer for `ttl_ns` (steady clock) so that process lists
// and scrapes arriving together read the kernel's table once.
//
// Thread safety: Read() may be called from any thread (a mutex serialises
// the readers; SysFs::ReadText opens its own descriptor).
#pragma once

#include <sys/types.h>

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

// Why nvmap's table `path` (a logical path) could not be read, as one line:
// `err` is the errno of reading it (0: none was given),
// `root` the monitored root ("" or "/" for this machine), `debugfs` whether
// the root's kernel/debug holds anything, `euid` edgemond's effective uid.
// A missing table says whether debugfs is mounted; a refused one blames
// root's absence only where edgemond is not root.
std::string NvmapUnreadable(const std::string& path, const std::string& root, int err, bool debugfs,
                            uid_t euid);

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
