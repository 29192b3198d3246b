// Discrete NVIDIA GPUs through NVML, loaded at run time.
//
// libnvidia-ml.so.1 is opened with dlopen: no build dependency and no NVML
// header. The few types and functions used are declared below from NVML's
// documented ABI (nvmlReturn_t is an int, 0 = success; handles are opaque
// pointers). Without the library, or when nvmlInit fails, nothing is declared.
//
// Channels per device: kind gpu, name "nvml0", "nvml1", ..., device
// "nvml <PCI bus id>" (or "nvml <name>"), fields load (utilisation % x 10),
// freq and freq_max (graphics clock, MHz -> kHz), temp (degC -> m degC),
// power (mW; max = the enforced power limit) and used/total (bytes -> KiB).
// A field is declared only when its query succeeds at discovery (NVML on
// Jetson Orin answers NotSupported to every metric); a query failing later
// makes that tick's value absent.
//
// NVML is only used when CollectOptions::nvml is set (registry.cc), i.e. on
// the live system. It is not a sysfs source: Sample() calls the library.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/collect/collectors.h"

namespace edgemon {
namespace {

// --- The part of NVML's ABI used here. ---
using NvmlReturn = int;    // nvmlReturn_t
using NvmlDevice = void*;  // nvmlDevice_t (opaque)
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr unsigned kNvmlClockGraphics = 0;   // NVML_CLOCK_GRAPHICS

struct NvmlUtilization {  // nvmlUtilization_t, percent
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {  // nvmlMemory_t (v1), bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlPciInfo {  // nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};

struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2), as the _v3 process queries fill it
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes; kNvmlValueNotAvailable when unknown
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
constexpr NvmlReturn kNvmlInsufficientSize = 7;               // NVML_ERROR_INSUFFICIENT_SIZE

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;                                     // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;                                 // nvmlShutdown
  NvmlReturn (*get_count)(unsigned int*) = nullptr;                   // nvmlDeviceGetCount_v2
  NvmlReturn (*get_handle)(unsigned int, NvmlDevice*) = nullptr;      // ..GetHandleByIndex_v2
  NvmlReturn (*get_name)(NvmlDevice, char*, unsigned int) = nullptr;  // nvmlDeviceGetName
  NvmlReturn (*get_pci)(NvmlDevice, NvmlPciInfo*) = nullptr;          // ..GetPciInfo_v3
  NvmlReturn (*get_util)(NvmlDevice, NvmlUtilization*) = nullptr;     // ..GetUtilizationRates
  NvmlReturn (*get_power)(NvmlDevice, unsigned int*) = nullptr;       // ..GetPowerUsage, mW
  NvmlReturn (*get_temp)(NvmlDevice, unsigned int, unsigned int*) = nullptr;   // ..GetTemperature
  NvmlReturn (*get_clock)(NvmlDevice, unsigned int, unsigned int*) = nullptr;  // ..GetClockInfo
  NvmlReturn (*get_max_clock)(NvmlDevice, unsigned int,
                              unsigned int*) = nullptr;                // ..GetMaxClockInfo
  NvmlReturn (*get_memory)(NvmlDevice, NvmlMemory*) = nullptr;         // ..GetMemoryInfo
  NvmlReturn (*get_power_limit)(NvmlDevice, unsigned int*) = nullptr;  // ..GetEnforcedPowerLimit
  NvmlReturn (*get_compute_procs)(NvmlDevice, unsigned int*,
                                  NvmlProcessInfo*) = nullptr;  // ..GetComputeRunningProcesses_v3
  NvmlReturn (*get_graphics_procs)(NvmlDevice, unsigned int*,
                                   NvmlProcessInfo*) = nullptr;  // ..GetGraphicsRunningProcesses_v3
};

// Looks up `name` in `lib` into the function pointer `fn` (nullptr when absent).
template <typename Fn>
void Bind(void* lib, const char* name, Fn& fn) {
  void* sym = ::dlsym(lib, name);
  static_assert(sizeof(fn) == sizeof(sym));
  std::memcpy(&fn, &sym, sizeof fn);  // object -> function pointer, as POSIX allows
}

int64_t Permille(unsigned int percent) {
  return int64_t{percent} * 10;
}
int64_t Khz(unsigned int mhz) {
  return int64_t{mhz} * 1000;
}
int64_t MilliCelsius(unsigned int c) {
  return int64_t{c} * 1000;
}
int64_t Kib(unsigned long long bytes) {
  return static_cast<int64_t>(bytes / 1024);
}

// libnvidia-ml.so.1 opened and NVML initialised once (nvmlInit counts
// references, so the collector and the process reader each hold one).
class NvmlLibrary {
 public:
  NvmlLibrary() = default;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  ~NvmlLibrary() {
    if (initialised_) api_.shutdown();
    if (lib_ != nullptr) ::dlclose(lib_);
  }

  // Opens the library and initialises NVML once; false when unavailable.
  bool Load() {
    if (initialised_) return true;
    if (lib_ == nullptr) {
#ifdef EDGEMON_STATIC
      // A static executable cannot load the host's libnvidia-ml (it needs the
      // host's libc.so in the same process): discrete NVIDIA GPUs are read by
      // the packaged build. Jetson GPUs come from sysfs and are unaffected.
      return false;
#endif
      lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      if (lib_ == nullptr) return false;
      Bind(lib_, "nvmlInit_v2", api_.init);
      Bind(lib_, "nvmlShutdown", api_.shutdown);
      Bind(lib_, "nvmlDeviceGetCount_v2", api_.get_count);
      Bind(lib_, "nvmlDeviceGetHandleByIndex_v2", api_.get_handle);
      Bind(lib_, "nvmlDeviceGetName", api_.get_name);
      Bind(lib_, "nvmlDeviceGetPciInfo_v3", api_.get_pci);
      Bind(lib_, "nvmlDeviceGetUtilizationRates", api_.get_util);
      Bind(lib_, "nvmlDeviceGetPowerUsage", api_.get_power);
      Bind(lib_, "nvmlDeviceGetTemperature", api_.get_temp);
      Bind(lib_, "nvmlDeviceGetClockInfo", api_.get_clock);
      Bind(lib_, "nvmlDeviceGetMaxClockInfo", api_.get_max_clock);
      Bind(lib_, "nvmlDeviceGetMemoryInfo", api_.get_memory);
      Bind(lib_, "nvmlDeviceGetEnforcedPowerLimit", api_.get_power_limit);
      Bind(lib_, "nvmlDeviceGetComputeRunningProcesses_v3", api_.get_compute_procs);
      Bind(lib_, "nvmlDeviceGetGraphicsRunningProcesses_v3", api_.get_graphics_procs);
    }
    if (!api_.init || !api_.shutdown || !api_.get_count || !api_.get_handle) return false;
    initialised_ = api_.init() == kNvmlSuccess;
    return initialised_;
  }

  const NvmlApi& api() const {
    return api_;
  }

 private:
  void* lib_ = nullptr;
  bool initialised_ = false;
  NvmlApi api_;
};

class NvmlCollector final : public Collector {
 public:
  NvmlCollector() = default;
  NvmlCollector(const NvmlCollector&) = delete;
  NvmlCollector& operator=(const NvmlCollector&) = delete;

  std::string_view Name() const override { return "nvml"; }

  void Discover(DiscoverContext& ctx) override {
    devices_.clear();
    if (!lib_.Load()) return;
    unsigned int count = 0;
    if (api_.get_count(&count) != kNvmlSuccess) return;
    for (unsigned int i = 0; i < count; ++i) {
      NvmlDevice handle = nullptr;
      if (api_.get_handle(i, &handle) != kNvmlSuccess) continue;
      DiscoverDevice(ctx, i, handle);
    }
  }

  void Sample(SampleContext& ctx) override {
    for (const auto& d : devices_) SampleDevice(ctx, d);
  }

 private:
  struct Device {
    NvmlDevice handle = nullptr;
    std::optional<ChannelId> load, freq, freq_max, temp, power, used, total;
  };

  void DiscoverDevice(DiscoverContext& ctx, unsigned int index, NvmlDevice h) {
    Channel base;
    base.kind = Kind::kGpu;
    base.name = "nvml" + std::to_string(index);
    std::string product;
    char name[96] = {};
    if (api_.get_name && api_.get_name(h, name, sizeof name - 1) == kNvmlSuccess) product = name;
    NvmlPciInfo pci{};
    std::string bus_id;
    if (api_.get_pci && api_.get_pci(h, &pci) == kNvmlSuccess) {
      bus_id.assign(pci.bus_id, strnlen(pci.bus_id, sizeof pci.bus_id));
    }
    base.device = "nvml " + (!bus_id.empty() ? bus_id : !product.empty() ? product : base.name);
    if (!product.empty()) base.attrs.emplace_back("product", product);

    Device d;
    d.handle = h;
    unsigned int u = 0;
    NvmlUtilization util{};
    NvmlMemory mem{};
    if (api_.get_util && api_.get_util(h, &util) == kNvmlSuccess) {
      d.load = ctx.Add(WithField(base, Field::kLoad));
    }
    if (api_.get_clock && api_.get_clock(h, kNvmlClockGraphics, &u) == kNvmlSuccess) {
      d.freq = ctx.Add(WithField(base, Field::kFreq));
    }
    if (api_.get_max_clock && api_.get_max_clock(h, kNvmlClockGraphics, &u) == kNvmlSuccess) {
      d.freq_max = ctx.Add(WithField(base, Field::kFreqMax));
    }
    if (api_.get_temp && api_.get_temp(h, kNvmlTemperatureGpu, &u) == kNvmlSuccess) {
      d.temp = ctx.Add(WithField(base, Field::kTemp));
    }
    if (api_.get_power && api_.get_power(h, &u) == kNvmlSuccess) {
      Channel c = WithField(base, Field::kPower);
      if (api_.get_power_limit && api_.get_power_limit(h, &u) == kNvmlSuccess) c.max = u;
      d.power = ctx.Add(std::move(c));
    }
    if (api_.get_memory && api_.get_memory(h, &mem) == kNvmlSuccess) {
      d.used = ctx.Add(WithField(base, Field::kUsed));
      d.total = ctx.Add(WithField(base, Field::kTotal));
    }
    devices_.push_back(d);
  }

  void SampleDevice(SampleContext& ctx, const Device& d) {
    unsigned int u = 0;
    if (d.load) {
      NvmlUtilization util{};
      if (api_.get_util(d.handle, &util) != kNvmlSuccess) {
        ctx.Fail(*d.load, ReadError::kIo);
      } else if (util.gpu > 100) {
        ctx.Fail(*d.load, ReadError::kRange);
      } else {
        ctx.Set(*d.load, Permille(util.gpu));
      }
    }
    if (d.freq) {
      if (api_.get_clock(d.handle, kNvmlClockGraphics, &u) != kNvmlSuccess) {
        ctx.Fail(*d.freq, ReadError::kIo);
      } else {
        ctx.Set(*d.freq, Khz(u));
      }
    }
    if (d.freq_max) {
      if (api_.get_max_clock(d.handle, kNvmlClockGraphics, &u) != kNvmlSuccess) {
        ctx.Fail(*d.freq_max, ReadError::kIo);
      } else {
        ctx.Set(*d.freq_max, Khz(u));
      }
    }
    if (d.temp) {
      if (api_.get_temp(d.handle, kNvmlTemperatureGpu, &u) != kNvmlSuccess) {
        ctx.Fail(*d.temp, ReadError::kIo);
      } else {
        ctx.Set(*d.temp, MilliCelsius(u));
      }
    }
    if (d.power) {
      if (api_.get_power(d.handle, &u) != kNvmlSuccess) {
        ctx.Fail(*d.power, ReadError::kIo);
      } else {
        ctx.Set(*d.power, u);
      }
    }
    if (d.used && d.total) {
      NvmlMemory mem{};
      if (api_.get_memory(d.handle, &mem) != kNvmlSuccess) {
        ctx.Fail(*d.used, ReadError::kIo);
        ctx.Fail(*d.total, ReadError::kIo);
      } else {
        ctx.Set(*d.used, Kib(mem.used));
        ctx.Set(*d.total, Kib(mem.total));
      }
    }
  }

  NvmlLibrary lib_;
  const NvmlApi& api_ = lib_.api();
  std::vector<Device> devices_;
};

}  // namespace

std::unique_ptr<Collector> MakeNvmlCollector() {
  return std::make_unique<NvmlCollector>();
}

struct NvmlProcessMemory::Impl {
  NvmlLibrary lib;
};

NvmlProcessMemory::NvmlProcessMemory() : impl_(std::make_unique<Impl>()) {}
NvmlProcessMemory::~NvmlProcessMemory() = default;

std::optional<std::map<int, uint64_t>> NvmlProcessMemory::Read() {
  if (!impl_->lib.Load()) return std::nullopt;
  const NvmlApi& api = impl_->lib.api();
  if (!api.get_compute_procs && !api.get_graphics_procs) return std::nullopt;
  unsigned int count = 0;
  if (api.get_count(&count) != kNvmlSuccess || count == 0) return std::nullopt;
  std::map<int, uint64_t> kib;
  std::vector<NvmlProcessInfo> infos;
  for (unsigned int i = 0; i < count; ++i) {
    NvmlDevice h = nullptr;
    if (api.get_handle(i, &h) != kNvmlSuccess) continue;
    // A process with compute and graphics contexts on one device is listed
    // twice with the same memory: the larger figure counts once per device.
    std::map<int, uint64_t> device;
    for (auto query : {api.get_compute_procs, api.get_graphics_procs}) {
      if (!query) continue;
      unsigned int n = 0;
      NvmlReturn r = query(h, &n, nullptr);
      if (r != kNvmlSuccess && r != kNvmlInsufficientSize) continue;
      infos.assign(n + 8, NvmlProcessInfo{});  // room for processes started meanwhile
      n = static_cast<unsigned int>(infos.size());
      if (query(h, &n, infos.data()) != kNvmlSuccess) continue;
      for (unsigned int k = 0; k < n && k < infos.size(); ++k) {
        const NvmlProcessInfo& p = infos[k];
        if (p.pid == 0 || p.used_gpu_memory == kNvmlValueNotAvailable) continue;
        uint64_t& v = device[static_cast<int>(p.pid)];
        v = std::max<uint64_t>(v, p.used_gpu_memory / 1024);
      }
    }
    for (const auto& [pid, v] : device) kib[pid] += v;
  }
  return kib;
}

}  // namespace edgemon
