// Factories of every collector, and facts shared between collectors.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/collect/collector.h"

namespace edgemon {

// No upper bound on a value read (ReadScaled's `hi`).
inline constexpr int64_t kNoUpperBound = std::numeric_limits<int64_t>::max();
// An INA3221's bus voltage register: 13 bits x 8 mV plus sign (the drivers
// sign-extend it).
inline constexpr int64_t kInaMaxBusMv = 32768;
// Temperatures (m°C): the value a power-gated sensor reads, and absolute zero.
inline constexpr int64_t kGatedMc = -256000;
inline constexpr int64_t kAbsoluteZeroMc = -273150;

std::unique_ptr<Collector> MakeBoardCollector();        // collectors/board.cc
std::unique_ptr<Collector> MakeCpuCollector();          // collectors/cpu.cc
std::unique_ptr<Collector> MakeMemoryCollector();       // collectors/memory.cc
std::unique_ptr<Collector> MakeThermalCollector();      // collectors/thermal.cc
std::unique_ptr<Collector> MakeHwmonCollector();        // collectors/hwmon.cc
std::unique_ptr<Collector> MakeIna3221Collector();      // collectors/power_ina3221.cc
std::unique_ptr<Collector> MakeIna3221IioCollector();   // collectors/power_ina3221_iio.cc
std::unique_ptr<Collector> MakePowerSupplyCollector();  // collectors/power_supply.cc
std::unique_ptr<Collector> MakeRaplCollector();         // collectors/rapl.cc
std::unique_ptr<Collector> MakeGpuDevfreqCollector();   // collectors/gpu_devfreq.cc
std::unique_ptr<Collector> MakeAmdgpuCollector();       // collectors/amdgpu.cc
std::unique_ptr<Collector> MakeNvmlCollector();         // collectors/nvml.cc
std::unique_ptr<Collector> MakeEmcCollector();          // collectors/emc.cc
std::unique_ptr<Collector> MakeFanCollector();          // collectors/fan.cc
std::unique_ptr<Collector> MakeEngineCollector();       // collectors/engines.cc
std::unique_ptr<Collector> MakeEventCollector();        // collectors/events.cc

// GPU memory per process on every NVML device (discrete GPUs, Thor), from
// nvmlDeviceGetCompute/GraphicsRunningProcesses (collectors/nvml.cc): KiB by
// pid, summed over devices. Read() is nullopt when NVML cannot be loaded, has
// no device, or no device lists its processes with their memory (Orin answers
// NOT_SUPPORTED). nvmlInit failing is retried on NVML's schedule (nvml.cc).
// Not thread-safe: one caller at a time.
class NvmlProcessMemory {
 public:
  NvmlProcessMemory();
  ~NvmlProcessMemory();
  NvmlProcessMemory(const NvmlProcessMemory&) = delete;
  NvmlProcessMemory& operator=(const NvmlProcessMemory&) = delete;
  std::optional<std::map<int, uint64_t>> Read();
  // Why the last Read() was nullopt where NVML has devices that cannot tell
  // ("" otherwise).
  const std::string& why() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An INA3221 device directory, reached through its class and through its
// driver's directory and kept once, by canonical path. Lists of them are
// sorted by bus address, then canonical path.
struct InaDeviceDir {
  std::string dir;       // the logical directory (hwmonN, iio:deviceN)
  std::string resolved;  // canonical path (dedup key, sort key)
  std::string bus_addr;  // "1-0040"
};
// The upstream hwmon driver's chips (collectors/power_ina3221.cc).
std::vector<InaDeviceDir> FindIna3221Chips(SysFs& fs);
// NVIDIA's ina3221x iio devices (collectors/power_ina3221_iio.cc).
std::vector<InaDeviceDir> FindIna3221IioDevices(SysFs& fs);
// Adds `dir` to `dirs` unless it is not a directory or its canonical path is
// already there; returns the new entry (bus_addr left to the caller) or null.
InaDeviceDir* AddInaDeviceDir(SysFs& fs, std::vector<InaDeviceDir>& dirs, const std::string& dir);
// Sorts by bus address, then canonical path.
void SortInaDeviceDirs(std::vector<InaDeviceDir>& dirs);

// A RAPL zone: a powercap directory with an energy_uj (collectors/rapl.cc).
struct RaplZone {
  std::string entry;      // "intel-rapl:0:1"
  std::string type;       // the control type, "intel-rapl"
  std::string parent;     // "intel-rapl:0" for a subzone, "" for a top zone
  std::string zone_name;  // the `name` file ("core"), else the entry
  std::string rail;       // the rail's channel name ("package-0/core")
};

// The RAPL zones under /sys/class/powercap in listing order, named as the RAPL
// collector names their rails: a top zone by its `name` ("package-0"),
// prefixed "<type>:" outside intel-rapl; a subzone "<package>/<name>".
std::vector<RaplZone> FindRaplZones(SysFs& fs);

// Every collector, in a fixed order (collectors/registry.cc).
std::vector<std::unique_ptr<Collector>> MakeDefaultCollectors(const CollectOptions& options);

// hwmon chips read by a dedicated collector; the generic hwmon collector
// leaves them alone.
bool IsDedicatedHwmonChip(std::string_view name);

// Rail names that measure a whole board's input power.
bool IsBoardInputRail(std::string_view name);

// Marks input rails and makes the other rails of the same family (INA power
// monitors) their sub-rails, so no consumer adds them up twice.
void AssignRailHierarchy(std::vector<Channel>& channels);

}  // namespace edgemon
