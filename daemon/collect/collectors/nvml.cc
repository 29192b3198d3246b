// NVIDIA GPUs through NVML, loaded at run time: discrete GPUs, and Thor,
// whose GPU and codecs NVML reports (Orin's NVML answers NOT_SUPPORTED to
// every metric: sysfs is its source).
//
// libnvidia-ml.so.1 is opened with dlopen: no build dependency and no NVML
// header. The few types and functions used are declared below from NVML's
// documented ABI (nvmlReturn_t is an int, 0 = success; handles are opaque
// pointers).
//
// Channels per device: kind gpu, name "nvml0", "nvml1", ..., device
// "nvml <PCI bus id>" (or "nvml <name>"), fields load (utilisation % x 10),
// freq and freq_max (graphics clock, MHz -> kHz), temp (degC -> m degC),
// power (mW; max = the enforced power limit) and used/total (bytes -> KiB);
// and kind engine, fields load (permille), for the codecs NVML measures:
// NVENC, NVDEC, NVJPG and OFA (nvmlDeviceGet{Encoder,Decoder,Jpg,Ofa}-
// Utilization; named so on the first device, "NVENC.nvml1" on others).
//
// Each metric is chosen on its own: its answer at discovery decides whether
// it is a channel. A NOT_SUPPORTED answer is remembered per device and never
// asked again, not even by a rediscovery (Thor answers utilisation and
// processes but may answer NOT_SUPPORTED to memory). A metric that answered
// at discovery and fails later is absent for that tick, never 0.
//
// A driver that loads after edgemond: when nvmlInit fails (the library is
// there but, say, NVML_ERROR_DRIVER_NOT_LOADED), it is tried again every 5 s
// for the first minute, then once a minute. When it answers, the collector
// asks for a rediscovery, its channels join the inventory and the log says
// so once. Without the library at all nothing is retried.
//
// NVML is only used when CollectOptions::nvml is set (registry.cc), i.e. on
// the live system unless the configuration says "on". It is not a sysfs
// source: Sample() calls the library.
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/collect/collectors.h"
#include "edgemon/clock.h"

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
constexpr NvmlReturn kNvmlNotSupported = 3;                   // NVML_ERROR_NOT_SUPPORTED
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
  // (device, utilisation %, sampling period us): nvmlDeviceGet{Encoder,Decoder,Jpg,Ofa}Utilization
  using EngineQuery = NvmlReturn (*)(NvmlDevice, unsigned int*, unsigned int*);
  EngineQuery get_encoder = nullptr;
  EngineQuery get_decoder = nullptr;
  EngineQuery get_jpg = nullptr;
  EngineQuery get_ofa = nullptr;
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

constexpr NvmlReturn kNvmlFunctionNotFound = 13;  // NVML_ERROR_FUNCTION_NOT_FOUND
constexpr NvmlReturn kNvmlGpuIsLost = 15;         // NVML_ERROR_GPU_IS_LOST
constexpr int64_t kNsPerSec = 1'000'000'000;
// nvmlInit retried every 5 s during the first minute after it failed, then
// once a minute.
constexpr int64_t kRetryFastNs = 5 * kNsPerSec;
constexpr int64_t kRetryFastForNs = 60 * kNsPerSec;
constexpr int64_t kRetrySlowNs = 60 * kNsPerSec;

// libnvidia-ml.so.1 opened and NVML initialised (nvmlInit counts
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

  // Whether NVML is initialised. The first call tries at once; after a
  // failed nvmlInit a call tries again only when the retry schedule has come
  // round at `now_ns` (steady nanoseconds; < 0: the time is not known, no
  // retry). Without the library nothing is retried.
  bool Ready(int64_t now_ns) {
    if (initialised_) return true;
    if (missing_) return false;
    if (attempts_ > 0) {
      if (now_ns < 0) return false;
      if (first_failure_ns_ < 0) {  // failed when the time was not known
        first_failure_ns_ = now_ns;
        next_try_ns_ = now_ns + kRetryFastNs;
        return false;
      }
      if (now_ns < next_try_ns_) return false;
      next_try_ns_ =
          now_ns + (now_ns - first_failure_ns_ < kRetryFastForNs ? kRetryFastNs : kRetrySlowNs);
    } else if (now_ns >= 0) {
      first_failure_ns_ = now_ns;
      next_try_ns_ = now_ns + kRetryFastNs;
    }
    ++attempts_;
    return Init();
  }

  bool initialised() const { return initialised_; }
  // nvmlInit tried and failed, to be tried again.
  bool waiting() const { return attempts_ > 0 && !initialised_ && !missing_; }
  // What the first nvmlInit answered (0 when it succeeded or never ran).
  NvmlReturn first_error() const { return first_error_; }
  int attempts() const { return attempts_; }
  const NvmlApi& api() const { return api_; }

 private:
  bool Init() {
    if (lib_ == nullptr) {
#ifdef EDGEMON_STATIC
      // A static executable cannot load the host's libnvidia-ml (it needs the
      // host's libc.so in the same process): discrete NVIDIA GPUs are read by
      // the packaged build. Jetson GPUs come from sysfs and are unaffected.
      missing_ = true;
      return false;
#endif
      lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      if (lib_ == nullptr) {
        missing_ = true;
        return false;
      }
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
      Bind(lib_, "nvmlDeviceGetEncoderUtilization", api_.get_encoder);
      Bind(lib_, "nvmlDeviceGetDecoderUtilization", api_.get_decoder);
      Bind(lib_, "nvmlDeviceGetJpgUtilization", api_.get_jpg);
      Bind(lib_, "nvmlDeviceGetOfaUtilization", api_.get_ofa);
      if (!api_.init || !api_.shutdown || !api_.get_count || !api_.get_handle) {
        missing_ = true;
        return false;
      }
    }
    const NvmlReturn r = api_.init();
    if (attempts_ == 1) first_error_ = r;
    initialised_ = r == kNvmlSuccess;
    return initialised_;
  }

  void* lib_ = nullptr;
  bool missing_ = false;  // no library (or not NVML): never retried
  bool initialised_ = false;
  int attempts_ = 0;
  NvmlReturn first_error_ = kNvmlSuccess;
  int64_t first_failure_ns_ = -1;
  int64_t next_try_ns_ = 0;
  NvmlApi api_;
};

// The metrics asked of each device, each chosen on its own.
enum Metric : uint8_t {
  kUtil,
  kClock,
  kMaxClock,
  kTemp,
  kPower,
  kMemory,
  kEncoder,
  kDecoder,
  kJpg,
  kOfa,
  kMetricCount,
};

struct Reading {
  unsigned int u = 0;
  NvmlMemory mem{};
};

NvmlReturn Query(const NvmlApi& api, Metric m, NvmlDevice h, Reading& r) {
  unsigned int period_us = 0;
  auto engine = [&](NvmlApi::EngineQuery q) {
    return q ? q(h, &r.u, &period_us) : kNvmlFunctionNotFound;
  };
  switch (m) {
    case kUtil: {
      if (!api.get_util) return kNvmlFunctionNotFound;
      NvmlUtilization util{};
      const NvmlReturn rc = api.get_util(h, &util);
      r.u = util.gpu;
      return rc;
    }
    case kClock:
      return api.get_clock ? api.get_clock(h, kNvmlClockGraphics, &r.u) : kNvmlFunctionNotFound;
    case kMaxClock:
      return api.get_max_clock ? api.get_max_clock(h, kNvmlClockGraphics, &r.u)
                               : kNvmlFunctionNotFound;
    case kTemp:
      return api.get_temp ? api.get_temp(h, kNvmlTemperatureGpu, &r.u) : kNvmlFunctionNotFound;
    case kPower:
      return api.get_power ? api.get_power(h, &r.u) : kNvmlFunctionNotFound;
    case kMemory:
      return api.get_memory ? api.get_memory(h, &r.mem) : kNvmlFunctionNotFound;
    case kEncoder:
      return engine(api.get_encoder);
    case kDecoder:
      return engine(api.get_decoder);
    case kJpg:
      return engine(api.get_jpg);
    case kOfa:
      return engine(api.get_ofa);
    case kMetricCount:
      break;
  }
  return kNvmlFunctionNotFound;
}

// The engine a codec metric measures, as tegrastats and the debugfs clocks
// name it; "" for the GPU's own metrics.
std::string_view EngineName(Metric m) {
  switch (m) {
    case kEncoder:
      return "NVENC";
    case kDecoder:
      return "NVDEC";
    case kJpg:
      return "NVJPG";
    case kOfa:
      return "OFA";
    default:
      return {};
  }
}

// The GPU channel's field of one of the GPU's own metrics (kMemory: used).
Field GpuField(Metric m) {
  switch (m) {
    case kClock:
      return Field::kFreq;
    case kMaxClock:
      return Field::kFreqMax;
    case kTemp:
      return Field::kTemp;
    case kPower:
      return Field::kPower;
    case kMemory:
      return Field::kUsed;
    default:
      return Field::kLoad;
  }
}

// An answer that says the board cannot tell (remembered; never asked again).
bool CannotTell(NvmlReturn r) {
  return r == kNvmlNotSupported || r == kNvmlFunctionNotFound;
}

class NvmlCollector final : public Collector {
 public:
  NvmlCollector() = default;
  NvmlCollector(const NvmlCollector&) = delete;
  NvmlCollector& operator=(const NvmlCollector&) = delete;

  std::string_view Name() const override { return "nvml"; }

  void Discover(DiscoverContext& ctx) override {
    devices_.clear();
    skipped_ = false;
    retry_at_ns_.reset();
    if (!lib_.Ready(-1)) return;
    unsigned int count = 0;
    if (api_.get_count(&count) != kNvmlSuccess) return;
    size_t channels = 0;
    for (unsigned int i = 0; i < count; ++i) {
      NvmlDevice handle = nullptr;
      if (api_.get_handle(i, &handle) != kNvmlSuccess) continue;
      channels += DiscoverDevice(ctx, i, handle);
    }
    if (late_) {
      late_ = false;
      ctx.Warn("NVML answered after " + std::to_string(lib_.attempts() - 1) +
               " retries (nvmlInit first returned " + std::to_string(lib_.first_error()) +
               "): " + std::to_string(devices_.size()) + " device(s), " + std::to_string(channels) +
               " channel(s) added");
    }
  }

  bool Waiting() const override { return lib_.waiting() || skipped_; }

  void Sample(SampleContext& ctx) override {
    if (lib_.waiting() && lib_.Ready(ctx.boottime_ns())) {
      late_ = true;  // the driver answered: declare its channels
      ctx.RequestRediscovery();
      return;
    }
    if (skipped_) {
      if (!retry_at_ns_) {
        retry_at_ns_ = ctx.boottime_ns() + kRetryFastNs;
      } else if (ctx.boottime_ns() >= *retry_at_ns_) {
        retry_at_ns_.reset();
        ctx.RequestRediscovery();
      }
    }
    for (const auto& d : devices_) SampleDevice(ctx, d);
  }

 private:
  struct Device {
    NvmlDevice handle = nullptr;
    std::array<std::optional<ChannelId>, kMetricCount> channel;  // kMemory: used
    std::optional<ChannelId> total;
  };

  // Declares the device's channels; returns how many.
  size_t DiscoverDevice(DiscoverContext& ctx, unsigned int index, NvmlDevice h) {
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
    // What each metric answered is remembered by device (bus id, else index).
    auto& cannot = cannot_tell_[bus_id.empty() ? std::to_string(index) : bus_id];

    Device d;
    d.handle = h;
    size_t added = 0;
    for (int i = 0; i < kMetricCount; ++i) {
      const auto m = static_cast<Metric>(i);
      if (cannot[i]) continue;
      Reading r;
      const NvmlReturn rc = Query(api_, m, h, r);
      if (CannotTell(rc)) cannot[i] = true;
      if (rc != kNvmlSuccess) {
        // Any other error: asked again at a rediscovery a few seconds on
        // (Sample asks for it), so a metric failing just then comes back.
        skipped_ = skipped_ || !cannot[i];
        continue;
      }
      ++added;
      const std::string_view engine = EngineName(m);
      if (!engine.empty()) {
        Channel c = WithField(base, Field::kLoad);
        c.kind = Kind::kEngine;
        c.name = std::string(engine) + (index == 0 ? "" : ".nvml" + std::to_string(index));
        c.attrs.emplace_back("load_source", "nvml");
        d.channel[i] = ctx.Add(std::move(c));
        continue;
      }
      Channel c = WithField(base, GpuField(m));
      unsigned int limit = 0;
      if (m == kPower && api_.get_power_limit && api_.get_power_limit(h, &limit) == kNvmlSuccess) {
        c.max = limit;
      }
      d.channel[i] = ctx.Add(std::move(c));
      if (m == kMemory) {
        d.total = ctx.Add(WithField(base, Field::kTotal));
        ++added;
      }
    }
    devices_.push_back(d);
    return added;
  }

  void SampleDevice(SampleContext& ctx, const Device& d) {
    for (int i = 0; i < kMetricCount; ++i) {
      if (!d.channel[i]) continue;
      const ChannelId id = *d.channel[i];
      const auto m = static_cast<Metric>(i);
      Reading r;
      const NvmlReturn rc = Query(api_, m, d.handle, r);
      if (rc != kNvmlSuccess) {
        const ReadError e = rc == kNvmlGpuIsLost ? ReadError::kMissing : ReadError::kIo;
        ctx.Fail(id, e);
        if (m == kMemory && d.total) ctx.Fail(*d.total, e);
        continue;
      }
      switch (m) {
        case kClock:
        case kMaxClock:
          ctx.Set(id, Khz(r.u));
          break;
        case kTemp:
          ctx.Set(id, MilliCelsius(r.u));
          break;
        case kPower:
          ctx.Set(id, r.u);
          break;
        case kMemory:
          ctx.Set(id, Kib(r.mem.used));
          if (d.total) ctx.Set(*d.total, Kib(r.mem.total));
          break;
        default:  // utilisation of the GPU or an engine, percent
          if (r.u > 100) {
            ctx.Fail(id, ReadError::kRange);
          } else {
            ctx.Set(id, Permille(r.u));
          }
          break;
      }
    }
  }

  NvmlLibrary lib_;
  const NvmlApi& api_ = lib_.api();
  std::vector<Device> devices_;
  std::map<std::string, std::bitset<kMetricCount>> cannot_tell_;  // kept across discoveries
  bool late_ = false;  // nvmlInit answered after failing: announce the next discovery
  // A metric failed at the last discovery with an error that may pass: the
  // collector asks for a rediscovery every kRetryFastNs until none does.
  bool skipped_ = false;
  std::optional<int64_t> retry_at_ns_;
};

}  // namespace

std::unique_ptr<Collector> MakeNvmlCollector() {
  return std::make_unique<NvmlCollector>();
}

struct NvmlProcessMemory::Impl {
  NvmlLibrary lib;
  std::set<unsigned int> cannot_tell;  // devices whose process lists carry no memory
  std::string why;
};

NvmlProcessMemory::NvmlProcessMemory() : impl_(std::make_unique<Impl>()) {}
NvmlProcessMemory::~NvmlProcessMemory() = default;

const std::string& NvmlProcessMemory::why() const {
  return impl_->why;
}

std::optional<std::map<int, uint64_t>> NvmlProcessMemory::Read() {
  impl_->why.clear();
  if (!impl_->lib.Ready(SystemClock().MonotonicNs())) return std::nullopt;
  const NvmlApi& api = impl_->lib.api();
  unsigned int count = 0;
  if (api.get_count(&count) != kNvmlSuccess || count == 0) return std::nullopt;
  std::map<int, uint64_t> kib;
  std::vector<NvmlProcessInfo> infos;
  bool told = false;   // some device listed its processes with their memory
  std::string reason;  // why the others did not
  for (unsigned int i = 0; i < count; ++i) {
    if (impl_->cannot_tell.count(i) != 0) {
      reason = "NOT_SUPPORTED";
      continue;
    }
    NvmlDevice h = nullptr;
    if (api.get_handle(i, &h) != kNvmlSuccess) continue;
    // A process with compute and graphics contexts on one device is listed
    // twice with the same memory: the larger figure counts once per device.
    std::map<int, uint64_t> device;
    bool answered = false;
    bool unsupported = true;
    bool not_available = false;
    for (auto query : {api.get_compute_procs, api.get_graphics_procs}) {
      if (!query) continue;
      unsigned int n = 0;
      NvmlReturn r = query(h, &n, nullptr);
      if (!CannotTell(r)) unsupported = false;
      if (r != kNvmlSuccess && r != kNvmlInsufficientSize) continue;
      infos.assign(n + 8, NvmlProcessInfo{});  // room for processes started meanwhile
      n = static_cast<unsigned int>(infos.size());
      if (query(h, &n, infos.data()) != kNvmlSuccess) continue;
      answered = true;
      for (unsigned int k = 0; k < n && k < infos.size(); ++k) {
        const NvmlProcessInfo& p = infos[k];
        if (p.pid == 0) continue;
        if (p.used_gpu_memory == kNvmlValueNotAvailable) {
          not_available = true;
          continue;
        }
        uint64_t& v = device[static_cast<int>(p.pid)];
        v = std::max<uint64_t>(v, p.used_gpu_memory / 1024);
      }
    }
    if (unsupported) {
      impl_->cannot_tell.insert(i);
      reason = "NOT_SUPPORTED";
      continue;
    }
    if (!answered) continue;
    if (not_available) {
      // The device lists processes without their memory: it cannot tell
      // every process's figure, so it tells none.
      reason = "processes listed without their memory";
      continue;
    }
    told = true;
    for (const auto& [pid, v] : device) kib[pid] += v;
  }
  if (!told) {
    if (!reason.empty()) {
      impl_->why = "NVML does not report GPU memory per process on this board (" + reason + ")";
    }
    return std::nullopt;
  }
  return kib;
}

}  // namespace edgemon
