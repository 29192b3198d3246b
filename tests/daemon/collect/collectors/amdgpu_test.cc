// The amdgpu collector on the node_exporter procfs fixture and on scratch
// trees (values and bad input).
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FaultySysFs;
using testing::Harness;
using testing::TempTree;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Amdgpu, NodeExporterProcfsFixture) {
  const std::string root = testing::Fixture("node_exporter/procfs");
  const std::string dev = root + "/sys/class/drm/card0/device/";
  // Expectations from the fixture's own files.
  int64_t busy = std::stoll(ReadFile(dev + "gpu_busy_percent"));
  int64_t used = std::stoll(ReadFile(dev + "mem_info_vram_used"));
  int64_t total = std::stoll(ReadFile(dev + "mem_info_vram_total"));
  int64_t sclk_mhz = -1;
  std::istringstream table(ReadFile(dev + "pp_dpm_sclk"));
  for (std::string line; std::getline(table, line);) {
    if (line.find('*') == std::string::npos) continue;
    sclk_mhz = std::stoll(line.substr(line.find(':') + 1));  // "0: 852Mhz *"
  }
  ASSERT_GE(sclk_mhz, 0);

  RootedSysFs fs(root);
  Harness h(fs, MakeAmdgpuCollector());
  h.Sample();
  const Channel* load = h.Find(Kind::kGpu, "card0", Field::kLoad);
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->device, "amdgpu 0000:09:00.0");
  EXPECT_EQ(h.Get(Kind::kGpu, "card0", Field::kLoad), busy * 10);
  EXPECT_EQ(h.Get(Kind::kGpu, "card0", Field::kFreq), sclk_mhz * 1000);
  EXPECT_EQ(h.Get(Kind::kGpu, "card0", Field::kUsed), used / 1024);
  EXPECT_EQ(h.Get(Kind::kGpu, "card0", Field::kTotal), total / 1024);
  EXPECT_EQ(h.Find(Kind::kGpu, "card0", Field::kTotal)->unit, Unit::kKib);
  // card1 is an i915 (no gpu_busy_percent); its connectors are not cards.
  EXPECT_EQ(h.inventory().channels.size(), 4u);
  EXPECT_EQ(h.collection().total_errors(), 0u);
}

void AddAmdCard(TempTree& t, const std::string& card, const std::string& pci) {
  const std::string dev = "/sys/devices/pci0000:00/0000:00:01.1/" + pci;
  t.Write(dev + "/gpu_busy_percent", "37\n");
  t.Write(dev + "/pp_dpm_sclk", "0: 500Mhz \n1: 1200Mhz *\n2: 2100Mhz \n");
  t.Write(dev + "/mem_info_vram_used", "1073741824\n");
  t.Write(dev + "/mem_info_vram_total", "17163091968\n");
  t.Write(dev + "/uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=" + pci + "\n");
  const std::string drm = dev + "/drm/" + card;
  t.LinkRelative(drm + "/device", dev);
  t.LinkRelative("/sys/class/drm/" + card, drm);
  // A connector and a render node beside the card.
  t.Write(drm + "/" + card + "-DP-1/status", "connected\n");
  t.LinkRelative("/sys/class/drm/" + card + "-DP-1", drm + "/" + card + "-DP-1");
  t.Write(dev + "/drm/renderD128/dev", "226:128\n");
  t.LinkRelative("/sys/class/drm/renderD128", dev + "/drm/renderD128");
}

TEST(Amdgpu, ScratchTreeValuesAndBadInput) {
  TempTree t;
  AddAmdCard(t, "card1", "0000:03:00.0");
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness h(fs, MakeAmdgpuCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kLoad), 370);
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kFreq), 1200000);
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kUsed), 1048576);
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kTotal), 16760832);
  EXPECT_EQ(h.Find(Kind::kGpu, "card1", Field::kLoad)->device, "amdgpu 0000:03:00.0");
  EXPECT_EQ(h.inventory().channels.size(), 4u);

  // The current level moves.
  const std::string dev = "/sys/devices/pci0000:00/0000:00:01.1/0000:03:00.0";
  t.Write(dev + "/pp_dpm_sclk", "0: 500Mhz \n1: 1200Mhz \n2: 2100Mhz *\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kFreq), 2100000);

  fs.Replace(dev + "/gpu_busy_percent", "101\n");
  fs.Replace(dev + "/pp_dpm_sclk", "0: 500Mhz \n1: 1200Mhz \n");  // no starred level
  fs.Replace(dev + "/mem_info_vram_used", "lots\n");
  fs.FailWith(dev + "/mem_info_vram_total", EIO);
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kLoad), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kFreq), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kUsed), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kTotal), std::nullopt);
  EXPECT_EQ(h.collection().total_errors(), 4u);

  fs.Replace(dev + "/pp_dpm_sclk", "");
  fs.Replace(dev + "/gpu_busy_percent", "-1\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kFreq), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kGpu, "card1", Field::kLoad), std::nullopt);
}

}  // namespace
}  // namespace edgemon
