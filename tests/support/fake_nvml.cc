// A stand-in for NVIDIA's libnvidia-ml.so.1, built for tests only: the NVML
// entry points edgemond calls, with NVML's documented signatures and return
// codes, answering what a plain-text file says.
//
// The file is named by $EDGEMON_FAKE_NVML and re-read on every call, so a
// test changes the board's answers while edgemond runs. One "key value" a
// line ('#' starts a comment):
//
//   devices 1                 how many devices (default 1)
//   name Orin (nvgpu)         nvmlDeviceGetName
//   bus_id 00000000:01:00.0   nvmlDeviceGetPciInfo_v3's busId
//   init_after /path          nvmlInit_v2 answers NVML_ERROR_DRIVER_NOT_LOADED
//                             until /path exists (a driver that loads late)
//   calls /path               each call appends its function name there
//   <metric> <value>          the metric answers value
//   <metric> unsupported      NVML_ERROR_NOT_SUPPORTED (also: a metric not listed)
//   <metric> error <code>     that nvmlReturn_t
//
// Metrics: util (percent), clock and max_clock (MHz), temp (degC), power and
// power_limit (mW), memory "<total> <used> <free>" (bytes), encoder, decoder,
// jpg and ofa (percent), processes "<pid>:<bytes>|na ..." (the compute list;
// the graphics list answers the same way, empty).
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;                    // NVML_ERROR_UNINITIALIZED
constexpr int kInvalidArgument = 2;                  // NVML_ERROR_INVALID_ARGUMENT
constexpr int kNotSupported = 3;                     // NVML_ERROR_NOT_SUPPORTED
constexpr int kInsufficientSize = 7;                 // NVML_ERROR_INSUFFICIENT_SIZE
constexpr int kDriverNotLoaded = 9;                  // NVML_ERROR_DRIVER_NOT_LOADED
constexpr int kNotFound = 6;                         // NVML_ERROR_NOT_FOUND
constexpr unsigned long long kNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE

struct Memory {
  unsigned long long total, free, used;
};
struct PciInfo {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
struct Utilization {
  unsigned int gpu, memory;
};

int g_init = 0;          // nvmlInit_v2 reference count
int g_devices[16] = {};  // handles point here

std::map<std::string, std::string> Config() {
  std::map<std::string, std::string> out;
  const char* path = std::getenv("EDGEMON_FAKE_NVML");
  if (path == nullptr) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

void Called(const std::map<std::string, std::string>& c, const char* fn) {
  auto it = c.find("calls");
  if (it == c.end()) return;
  if (FILE* f = std::fopen(it->second.c_str(), "a")) {
    std::fprintf(f, "%s\n", fn);
    std::fclose(f);
  }
}

unsigned Count(const std::map<std::string, std::string>& c) {
  auto it = c.find("devices");
  return it == c.end() ? 1 : static_cast<unsigned>(std::strtoul(it->second.c_str(), nullptr, 10));
}

// The metric's answer: kSuccess with its words in `words`, or an error code.
int Answer(const std::map<std::string, std::string>& c, const char* fn, void* device,
           const std::string& metric, std::vector<std::string>* words) {
  Called(c, fn);
  if (g_init == 0) return kUninitialized;
  int* d = static_cast<int*>(device);
  if (d < g_devices || d >= g_devices + Count(c)) return kInvalidArgument;
  auto it = c.find(metric);
  if (it == c.end() || it->second == "unsupported") return kNotSupported;
  std::istringstream in(it->second);
  std::string w;
  std::vector<std::string> all;
  while (in >> w) all.push_back(w);
  if (!all.empty() && all[0] == "error") {
    return all.size() > 1 ? std::atoi(all[1].c_str()) : kNotSupported;
  }
  if (words) *words = std::move(all);
  return kSuccess;
}

int Unsigned(const char* fn, void* device, const std::string& metric, unsigned int* out) {
  auto c = Config();
  std::vector<std::string> w;
  int r = Answer(c, fn, device, metric, &w);
  if (r != kSuccess) return r;
  if (out == nullptr || w.empty()) return kInvalidArgument;
  *out = static_cast<unsigned>(std::strtoul(w[0].c_str(), nullptr, 10));
  return kSuccess;
}

int EngineUtil(const char* fn, void* device, const char* metric, unsigned int* util,
               unsigned int* period_us) {
  int r = Unsigned(fn, device, metric, util);
  if (r == kSuccess && period_us) *period_us = 167000;
  return r;
}

int Processes(const char* fn, void* device, unsigned int* count, ProcessInfo* infos,
              bool graphics) {
  auto c = Config();
  std::vector<std::string> w;
  int r = Answer(c, fn, device, "processes", &w);
  if (r != kSuccess) return r;
  if (graphics) w.clear();
  if (count == nullptr) return kInvalidArgument;
  if (infos == nullptr || *count < w.size()) {
    *count = static_cast<unsigned>(w.size());
    return w.empty() ? kSuccess : kInsufficientSize;
  }
  for (size_t i = 0; i < w.size(); ++i) {
    const size_t colon = w[i].find(':');
    infos[i] = ProcessInfo{};
    infos[i].pid = static_cast<unsigned>(std::strtoul(w[i].c_str(), nullptr, 10));
    const std::string mem = colon == std::string::npos ? "na" : w[i].substr(colon + 1);
    infos[i].used_gpu_memory =
        mem == "na" ? kNotAvailable : std::strtoull(mem.c_str(), nullptr, 10);
  }
  *count = static_cast<unsigned>(w.size());
  return kSuccess;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int nvmlInit_v2() {
  auto c = Config();
  Called(c, "nvmlInit_v2");
  auto it = c.find("init_after");
  struct stat st;
  if (it != c.end() && ::stat(it->second.c_str(), &st) != 0) return kDriverNotLoaded;
  ++g_init;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlShutdown() {
  if (g_init == 0) return kUninitialized;
  --g_init;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned int* count) {
  auto c = Config();
  Called(c, "nvmlDeviceGetCount_v2");
  if (g_init == 0) return kUninitialized;
  *count = Count(c);
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int i,
                                                                         void** device) {
  auto c = Config();
  if (g_init == 0) return kUninitialized;
  if (i >= Count(c) || i >= 16) return kNotFound;
  *device = &g_devices[i];
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetName(void* device, char* name,
                                                             unsigned int length) {
  auto c = Config();
  int r = Answer(c, "nvmlDeviceGetName", device, "name", nullptr);
  if (r != kSuccess) return r;
  std::snprintf(name, length, "%s", c["name"].c_str());
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* pci) {
  auto c = Config();
  int r = Answer(c, "nvmlDeviceGetPciInfo_v3", device, "bus_id", nullptr);
  if (r != kSuccess) return r;
  *pci = PciInfo{};
  std::snprintf(pci->bus_id, sizeof pci->bus_id, "%s", c["bus_id"].c_str());
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void* device,
                                                                         Utilization* u) {
  unsigned int gpu = 0;
  int r = Unsigned("nvmlDeviceGetUtilizationRates", device, "util", &gpu);
  if (r == kSuccess) *u = Utilization{gpu, 0};
  return r;
}

__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void* device, unsigned int* mw) {
  return Unsigned("nvmlDeviceGetPowerUsage", device, "power", mw);
}

__attribute__((visibility("default"))) int nvmlDeviceGetEnforcedPowerLimit(void* device,
                                                                           unsigned int* mw) {
  return Unsigned("nvmlDeviceGetEnforcedPowerLimit", device, "power_limit", mw);
}

__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void* device, unsigned int,
                                                                    unsigned int* c) {
  return Unsigned("nvmlDeviceGetTemperature", device, "temp", c);
}

__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(void* device, unsigned int,
                                                                  unsigned int* mhz) {
  return Unsigned("nvmlDeviceGetClockInfo", device, "clock", mhz);
}

__attribute__((visibility("default"))) int nvmlDeviceGetMaxClockInfo(void* device, unsigned int,
                                                                     unsigned int* mhz) {
  return Unsigned("nvmlDeviceGetMaxClockInfo", device, "max_clock", mhz);
}

__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* device, Memory* m) {
  auto c = Config();
  std::vector<std::string> w;
  int r = Answer(c, "nvmlDeviceGetMemoryInfo", device, "memory", &w);
  if (r != kSuccess) return r;
  if (w.size() < 3) return kInvalidArgument;
  m->total = std::strtoull(w[0].c_str(), nullptr, 10);
  m->used = std::strtoull(w[1].c_str(), nullptr, 10);
  m->free = std::strtoull(w[2].c_str(), nullptr, 10);
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetEncoderUtilization(void* device,
                                                                           unsigned int* util,
                                                                           unsigned int* period) {
  return EngineUtil("nvmlDeviceGetEncoderUtilization", device, "encoder", util, period);
}

__attribute__((visibility("default"))) int nvmlDeviceGetDecoderUtilization(void* device,
                                                                           unsigned int* util,
                                                                           unsigned int* period) {
  return EngineUtil("nvmlDeviceGetDecoderUtilization", device, "decoder", util, period);
}

__attribute__((visibility("default"))) int nvmlDeviceGetJpgUtilization(void* device,
                                                                       unsigned int* util,
                                                                       unsigned int* period) {
  return EngineUtil("nvmlDeviceGetJpgUtilization", device, "jpg", util, period);
}

__attribute__((visibility("default"))) int nvmlDeviceGetOfaUtilization(void* device,
                                                                       unsigned int* util,
                                                                       unsigned int* period) {
  return EngineUtil("nvmlDeviceGetOfaUtilization", device, "ofa", util, period);
}

__attribute__((visibility("default"))) int nvmlDeviceGetComputeRunningProcesses_v3(
    void* device, unsigned int* count, ProcessInfo* infos) {
  return Processes("nvmlDeviceGetComputeRunningProcesses_v3", device, count, infos, false);
}

__attribute__((visibility("default"))) int nvmlDeviceGetGraphicsRunningProcesses_v3(
    void* device, unsigned int* count, ProcessInfo* infos) {
  return Processes("nvmlDeviceGetGraphicsRunningProcesses_v3", device, count, infos, true);
}

}  // extern "C"
