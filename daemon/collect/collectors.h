// Factories of every collector, and facts shared between collectors.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "collector.h"

namespace edgemon {

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
