// A realistic inventory without a fixture tree: shared by the store's tests
// and its benchmark.
#pragma once

#include <string>
#include <utility>

#include "edgemon/channel.h"
#include "tests/support/inventory.h"

namespace edgemon::testing {

// The channels of an AGX Orin (~150) as edgemon's collectors declare them,
// for store tests and benchmarks that need a realistically wide frame.
inline Inventory OrinLikeInventory() {
  Inventory inv;
  auto add = [&](Kind k, std::string name, Field f, uint32_t flags = 0) {
    Channel& c = AddChannel(inv, k, std::move(name), f);
    c.unit = UnitOf(f);
    c.flags = flags;
  };
  for (int c = -1; c < 12; ++c) {
    std::string n = c < 0 ? "cpu" : "cpu" + std::to_string(c);
    for (Field f : {Field::kLoad, Field::kFreq, Field::kFreqMin, Field::kFreqMax, Field::kOnline}) {
      add(Kind::kCpu, n, f);
    }
  }
  for (Field f : {Field::kLoad, Field::kFreq, Field::kFreqMin, Field::kFreqMax, Field::kState}) {
    add(Kind::kGpu, "gpu", f);
  }
  for (Field f : {Field::kFreq, Field::kFreqMin, Field::kFreqMax, Field::kLoad}) {
    add(Kind::kEmc, "emc", f);
  }
  for (Field f : {Field::kTotal, Field::kUsed, Field::kFree, Field::kAvailable, Field::kBuffers,
                  Field::kCached, Field::kShared, Field::kLfbBlocks, Field::kLfbSize}) {
    add(Kind::kMemory, "ram", f);
  }
  for (Field f : {Field::kTotal, Field::kUsed, Field::kCached}) add(Kind::kSwap, "swap", f);
  for (const char* z :
       {"cpu-thermal", "gpu-thermal", "cv0-thermal", "cv1-thermal", "cv2-thermal", "soc0-thermal",
        "soc1-thermal", "soc2-thermal", "tj-thermal", "tboard", "tdiode"}) {
    add(Kind::kThermal, z, Field::kTemp);
  }
  for (const char* r : {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}) {
    add(Kind::kRail, r, Field::kPower);
    add(Kind::kRail, r, Field::kVoltage);
    add(Kind::kRail, r, Field::kCurrent);
    add(Kind::kRail, r, Field::kEnergy, kFlagCounter | kFlagDerived);
  }
  for (const char* e :
       {"NVENC", "NVDEC", "NVJPG", "NVJPG1", "VIC", "DLA0", "DLA1", "PVA0", "OFA", "APE", "SE"}) {
    add(Kind::kEngine, e, Field::kState);
    add(Kind::kEngine, e, Field::kFreq);
  }
  add(Kind::kFan, "pwmfan", Field::kDuty);
  add(Kind::kFan, "pwmfan", Field::kSpeed);
  add(Kind::kBoard, "nvpmodel", Field::kMode);
  for (Field f : {Field::kFreq, Field::kFreqMin, Field::kFreqMax}) {
    add(Kind::kDevfreq, "15340000.vic", f);
    add(Kind::kDevfreq, "15480000.nvdec", f);
  }
  return inv;
}

}  // namespace edgemon::testing
