// The devfreq GPU collector: Jetson GPUs of every generation (found by the
// device-tree node's name, else the devfreq entry's), other devfreq devices
// (frequencies only), Thor's GPC clock, limits and bad values.
#include <gtest/gtest.h>

#include <cerrno>
#include <ostream>
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

std::string Nul(const std::string& s) {
  return s + std::string(1, '\0');
}

// One devfreq device as the kernel lays it out.
struct DevfreqSpec {
  std::string device_dir;  // "/sys/devices/platform/bus@0/17000000.gpu"
  std::string entry;       // "17000000.gpu"
  std::string node_dir;    // device-tree node, "" for none
  std::string node_name;   // content of the node's `name` (written NUL-terminated)
};

struct DevfreqValues {
  int64_t cur_hz = 0;
  int64_t min_hz = 0;
  int64_t max_hz = 0;
};

std::string FreqDir(const DevfreqSpec& s) {
  return s.device_dir + "/devfreq/" + s.entry;
}

void AddDevfreq(TempTree& t, const DevfreqSpec& s, const DevfreqValues& v,
                const std::string& available = "") {
  const std::string df = FreqDir(s);
  t.Write(df + "/cur_freq", std::to_string(v.cur_hz) + "\n");
  t.Write(df + "/min_freq", std::to_string(v.min_hz) + "\n");
  t.Write(df + "/max_freq", std::to_string(v.max_hz) + "\n");
  t.Write(df + "/governor", "nvhost_podgov\n");
  if (!available.empty()) t.Write(df + "/available_frequencies", available);
  t.LinkRelative(df + "/device", s.device_dir);
  t.LinkRelative("/sys/class/devfreq/" + s.entry, df);
  if (!s.node_dir.empty()) {
    t.Write(s.node_dir + "/name", Nul(s.node_name));
    t.Write(s.node_dir + "/compatible", Nul("nvidia,gpu"));
    t.LinkRelative(s.device_dir + "/of_node", s.node_dir);
  }
}

void AddGpuStatus(TempTree& t, const DevfreqSpec& s, int64_t load, int64_t railgate) {
  t.Write(s.device_dir + "/load", std::to_string(load) + "\n");
  t.Write(s.device_dir + "/railgate_enable", std::to_string(railgate) + "\n");
}

const DevfreqSpec kOrinJp6 = {"/sys/devices/platform/bus@0/17000000.gpu", "17000000.gpu",
                              "/sys/firmware/devicetree/base/bus@0/gpu@17000000", "gpu"};

TEST(GpuDevfreq, OrinJp6ValuesInFixedUnits) {
  TempTree t;
  AddDevfreq(t, kOrinJp6, {624750000, 306000000, 1300500000},
             "306000000 408000000 510000000 612000000 714000000 816000000 918000000 "
             "1020000000 1122000000 1224000000 1300500000\n");
  AddGpuStatus(t, kOrinJp6, 532, 1);
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();

  const Channel* freq = h.Find(Kind::kGpu, "gpu", Field::kFreq);
  ASSERT_NE(freq, nullptr);
  EXPECT_EQ(freq->device, "devfreq 17000000.gpu");
  EXPECT_EQ(freq->unit, Unit::kKhz);
  ASSERT_NE(freq->Attr("governor"), nullptr);
  EXPECT_EQ(*freq->Attr("governor"), "nvhost_podgov");
  ASSERT_NE(freq->Attr("available_frequencies_count"), nullptr);
  EXPECT_EQ(*freq->Attr("available_frequencies_count"), "11");
  EXPECT_EQ(freq->min, 306000);  // lowest available frequency, kHz
  EXPECT_EQ(freq->max, 1300500);

  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 624750);  // Hz -> kHz
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMin), 306000);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMax), 1300500);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), 532);  // permille as read
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu", Field::kLoad)->unit, Unit::kPermille);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kState), 1);
  EXPECT_EQ(h.inventory().channels.size(), 5u);
  EXPECT_EQ(h.collection().total_errors(), 0u);
}

struct Generation {
  const char* label;
  DevfreqSpec spec;
};
void PrintTo(const Generation& g, std::ostream* os) {
  *os << g.label;
}

class GpuGenerations : public ::testing::TestWithParam<Generation> {};

TEST_P(GpuGenerations, FoundByOfNodeName) {
  const DevfreqSpec& s = GetParam().spec;
  TempTree t;
  AddDevfreq(t, s, {76800000, 76800000, 921600000});
  AddGpuStatus(t, s, 87, 0);
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  const Channel* load = h.Find(Kind::kGpu, "gpu", Field::kLoad);
  ASSERT_NE(load, nullptr) << GetParam().label;
  EXPECT_EQ(load->device, "devfreq " + s.entry);
  ASSERT_NE(load->Attr("of_node"), nullptr);
  EXPECT_EQ(*load->Attr("of_node"), s.node_name);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), 87);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 76800);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMax), 921600);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kState), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Jetson, GpuGenerations,
    ::testing::Values(Generation{"T210",
                                 {"/sys/devices/57000000.gpu", "57000000.gpu",
                                  "/sys/firmware/devicetree/base/gpu@57000000", "gpu"}},
                      Generation{"T186",
                                 {"/sys/devices/17000000.gp10b", "17000000.gp10b",
                                  "/sys/firmware/devicetree/base/gp10b@17000000", "gp10b"}},
                      Generation{"T194",
                                 {"/sys/devices/platform/17000000.gv11b", "17000000.gv11b",
                                  "/sys/firmware/devicetree/base/gv11b@17000000", "gv11b"}},
                      Generation{"T234Jp5",
                                 {"/sys/devices/platform/17000000.ga10b", "17000000.ga10b",
                                  "/sys/firmware/devicetree/base/ga10b@17000000", "ga10b"}},
                      Generation{"T234Jp6", kOrinJp6}),
    [](const ::testing::TestParamInfo<Generation>& p) { return std::string(p.param.label); });

TEST(GpuDevfreq, OfNodeNameDecidesOverEntryName) {
  TempTree t;
  // A GPU whose entry name says nothing, and a ".gv11b"-named entry whose node is not a GPU.
  DevfreqSpec mali = {"/sys/devices/platform/ff9a0000.graphics", "ff9a0000.graphics",
                      "/sys/firmware/devicetree/base/gpu@ff9a0000", "gpu"};
  DevfreqSpec odd = {"/sys/devices/platform/17000000.gv11b", "17000000.gv11b",
                     "/sys/firmware/devicetree/base/vic@17000000", "vic"};
  AddDevfreq(t, mali, {200000000, 200000000, 800000000});
  AddDevfreq(t, odd, {300000000, 100000000, 900000000});
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  const Channel* gpu = h.Find(Kind::kGpu, "gpu", Field::kFreq);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->device, "devfreq ff9a0000.graphics");
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu1", Field::kFreq), nullptr);
  EXPECT_EQ(h.Get(Kind::kDevfreq, "17000000.gv11b", Field::kFreq), 300000);
  // A Mali-style GPU has no nvgpu status files: no load/state declared.
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu", Field::kLoad), nullptr);
}

TEST(GpuDevfreq, WithoutOfNodeTheEntryNameDecides) {
  TempTree t;
  DevfreqSpec gpu = {"/sys/devices/platform/17000000.ga10b", "17000000.ga10b", "", ""};
  DevfreqSpec vic = {"/sys/devices/platform/15340000.vic", "15340000.vic", "", ""};
  AddDevfreq(t, gpu, {1300500000, 306000000, 1300500000});
  AddGpuStatus(t, gpu, 999, 1);
  AddDevfreq(t, vic, {115200000, 115200000, 1036800000});
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 1300500);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), 999);
  EXPECT_EQ(h.Get(Kind::kDevfreq, "15340000.vic", Field::kFreq), 115200);
  EXPECT_EQ(h.Get(Kind::kDevfreq, "15340000.vic", Field::kFreqMax), 1036800);
}

TEST(GpuDevfreq, OtherDevfreqDevicesGetFrequenciesOnly) {
  TempTree t;
  DevfreqSpec gpu = {"/sys/devices/platform/17000000.gv11b", "17000000.gv11b",
                     "/sys/firmware/devicetree/base/gv11b@17000000", "gv11b"};
  DevfreqSpec nvenc = {"/sys/devices/platform/154c0000.nvenc", "154c0000.nvenc",
                       "/sys/firmware/devicetree/base/nvenc@154c0000", "nvenc"};
  AddDevfreq(t, gpu, {1377000000, 114750000, 1377000000});
  AddGpuStatus(t, gpu, 120, 1);
  AddDevfreq(t, nvenc, {1075200000, 115200000, 1075200000});
  // A load file next to a non-GPU device is not a GPU load.
  t.Write(nvenc.device_dir + "/load", "500\n");
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  const Channel* c = h.Find(Kind::kDevfreq, "154c0000.nvenc", Field::kFreq);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->device, "devfreq 154c0000.nvenc");
  EXPECT_EQ(h.Get(Kind::kDevfreq, "154c0000.nvenc", Field::kFreq), 1075200);
  EXPECT_EQ(h.Get(Kind::kDevfreq, "154c0000.nvenc", Field::kFreqMin), 115200);
  EXPECT_EQ(h.Find(Kind::kDevfreq, "154c0000.nvenc", Field::kLoad), nullptr);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), 120);
  EXPECT_EQ(h.inventory().channels.size(), 5u + 3u);
}

TEST(GpuDevfreq, ThorGpcIsTheGpuWithoutLoadAndBwmgrIsLeftToEmc) {
  TempTree t;
  DevfreqSpec gpc = {"/sys/devices/platform/bus@0/gpu-gpc-0", "gpu-gpc-0", "", ""};
  DevfreqSpec nvd = {"/sys/devices/platform/bus@0/gpu-nvd-0", "gpu-nvd-0", "", ""};
  DevfreqSpec bwmgr = {"/sys/devices/platform/bwmgr", "bwmgr", "", ""};
  AddDevfreq(t, gpc, {1575000000, 300000000, 1575000000});
  AddDevfreq(t, nvd, {1000000000, 300000000, 1300000000});
  AddDevfreq(t, bwmgr, {4266000000, 665600000, 4266000000});
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 1575000);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMin), 300000);
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu", Field::kLoad), nullptr);  // Thor: no load file
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu", Field::kState), nullptr);
  EXPECT_EQ(h.Get(Kind::kDevfreq, "gpu-nvd-0", Field::kFreq), 1000000);
  for (const auto& c : h.inventory().channels) EXPECT_NE(c.name, "bwmgr");
  EXPECT_EQ(h.inventory().channels.size(), 6u);
}

TEST(GpuDevfreq, SecondGpuIsGpu1) {
  TempTree t;
  DevfreqSpec a = {"/sys/devices/platform/17000000.gpu", "17000000.gpu",
                   "/sys/firmware/devicetree/base/gpu@17000000", "gpu"};
  DevfreqSpec b = {"/sys/devices/platform/18000000.gpu", "18000000.gpu",
                   "/sys/firmware/devicetree/base/gpu@18000000", "gpu"};
  AddDevfreq(t, a, {100000000, 100000000, 100000000});
  AddDevfreq(t, b, {200000000, 200000000, 200000000});
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 100000);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu1", Field::kFreq), 200000);
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu1", Field::kFreq)->device, "devfreq 18000000.gpu");
}

TEST(GpuDevfreq, LoadAndRailgateOutOfRangeAreAbsent) {
  TempTree t;
  AddDevfreq(t, kOrinJp6, {624750000, 306000000, 1300500000});
  AddGpuStatus(t, kOrinJp6, 1001, 2);
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  ASSERT_NE(h.Find(Kind::kGpu, "gpu", Field::kLoad), nullptr);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kState), std::nullopt);
  EXPECT_EQ(h.Errors(Kind::kGpu, "gpu", Field::kLoad), 1u);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 624750);  // the rest is unaffected

  t.Write(kOrinJp6.device_dir + "/load", "-1\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), std::nullopt);

  t.Write(kOrinJp6.device_dir + "/load", "1000\n");
  t.Write(kOrinJp6.device_dir + "/railgate_enable", "0\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), 1000);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kState), 0);
}

TEST(GpuDevfreq, LimitsAreReReadEveryTick) {
  TempTree t;
  AddDevfreq(t, kOrinJp6, {624750000, 306000000, 1300500000});
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMax), 1300500);
  // nvpmodel switches to a 15 W mode.
  t.Write(FreqDir(kOrinJp6) + "/max_freq", "612000000\n");
  t.Write(FreqDir(kOrinJp6) + "/cur_freq", "408000000\n");
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMax), 612000);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 408000);
}

TEST(GpuDevfreq, BadValuesAreAbsentWithoutCrash) {
  TempTree t;
  AddDevfreq(t, kOrinJp6, {624750000, 306000000, 1300500000});
  AddGpuStatus(t, kOrinJp6, 532, 1);
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  Harness h(fs, MakeGpuDevfreqCollector());
  const std::string cur = FreqDir(kOrinJp6) + "/cur_freq";
  const std::string load = kOrinJp6.device_dir + "/load";

  fs.FailWith(cur, EIO);
  fs.FailWith(load, EAGAIN);
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), std::nullopt);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMax), 1300500);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kState), 1);

  for (const char* bad : {"", "\n", "garbage\n", "12abc\n", "99999999999999999999\n", "-5\n"}) {
    fs.Replace(cur, bad);
    fs.Replace(load, bad);
    h.Sample();
    EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), std::nullopt) << "'" << bad << "'";
    EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), std::nullopt) << "'" << bad << "'";
    EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreqMin), 306000);
  }
  EXPECT_EQ(h.Errors(Kind::kGpu, "gpu", Field::kFreq), 7u);

  fs.ClearAll();
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 624750);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), 532);
}

TEST(GpuDevfreq, UnreadableStatusFilesAreNotDeclared) {
  TempTree t;
  AddDevfreq(t, kOrinJp6, {624750000, 306000000, 1300500000});
  AddGpuStatus(t, kOrinJp6, 532, 1);
  RootedSysFs real(t.root());
  FaultySysFs fs(real);
  fs.Hide(kOrinJp6.device_dir + "/load");
  Harness h(fs, MakeGpuDevfreqCollector());
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu", Field::kLoad), nullptr);
  EXPECT_NE(h.Find(Kind::kGpu, "gpu", Field::kState), nullptr);
}

TEST(GpuDevfreq, GpuAppearingLaterIsFoundByCheckTopology) {
  TempTree t;
  t.MakeDir("/sys/class/devfreq");
  DevfreqSpec vic = {"/sys/devices/platform/15340000.vic", "15340000.vic", "", ""};
  AddDevfreq(t, vic, {115200000, 115200000, 1036800000});
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  EXPECT_EQ(h.Find(Kind::kGpu, "gpu", Field::kLoad), nullptr);
  ChannelId vic_id = h.Find(Kind::kDevfreq, "15340000.vic", Field::kFreq)->id;
  EXPECT_FALSE(h.collection().CheckTopology());

  // The nvgpu driver finishes probing after the daemon started (jtop #425).
  AddDevfreq(t, kOrinJp6, {624750000, 306000000, 1300500000});
  AddGpuStatus(t, kOrinJp6, 250, 1);
  EXPECT_TRUE(h.collection().CheckTopology());
  h.Sample();
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kLoad), 250);
  EXPECT_EQ(h.Get(Kind::kGpu, "gpu", Field::kFreq), 624750);
  EXPECT_EQ(h.Find(Kind::kDevfreq, "15340000.vic", Field::kFreq)->id, vic_id);
  EXPECT_EQ(h.Get(Kind::kDevfreq, "15340000.vic", Field::kFreq), 115200);
}

TEST(GpuDevfreq, NoDevfreqNoChannels) {
  TempTree t;
  RootedSysFs fs(t.root());
  Harness h(fs, MakeGpuDevfreqCollector());
  h.Sample();
  EXPECT_TRUE(h.inventory().channels.empty());
}

}  // namespace
}  // namespace edgemon
