// The NVML collector and the process reader against the stand-in library
// (tests/support/fake_nvml.cc), which this binary finds through its RUNPATH:
// each metric chosen by its answer at discovery and NOT_SUPPORTED remembered
// (Orin), Thor's utilisation, codec load and per-process memory, a metric
// failing later, and a driver that loads after the daemon started.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/gpu_processes.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::kSecond;
using testing::TempTree;

// The stand-in's configuration file and its log of calls, in a scratch tree.
class FakeNvml {
 public:
  explicit FakeNvml(const std::string& config) {
    Write(config);
    ::setenv("EDGEMON_FAKE_NVML", ConfigPath().c_str(), 1);
  }
  ~FakeNvml() { ::unsetenv("EDGEMON_FAKE_NVML"); }

  void Write(const std::string& config) {
    std::ofstream(ConfigPath()) << "calls " << CallsPath() << "\n" << config;
  }
  std::string Path(const std::string& name) const { return tree_.root() + "/" + name; }
  // How many times `fn` was called.
  int Calls(const std::string& fn) const {
    std::ifstream in(CallsPath());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line == fn ? 1 : 0;
    return n;
  }
  TempTree& tree() { return tree_; }

 private:
  std::string ConfigPath() const { return tree_.root() + "/nvml.conf"; }
  std::string CallsPath() const { return tree_.root() + "/calls"; }
  TempTree tree_;
};

// The NVML collector through a Collection, at the boottimes a test gives,
// with the log lines it wrote.
struct NvmlRun {
  explicit NvmlRun(SysFs& fs)
      : collection(fs, testing::One(MakeNvmlCollector()), CollectOptions{.nvml = true},
                   [this](const std::string& m) { log.push_back(m); }) {
    collection.Discover();
  }
  void At(int64_t s) { collection.Sample(s * kSecond, frame); }
  const Channel* Find(Kind kind, std::string_view name, Field field) const {
    return collection.inventory().Find(kind, name, field);
  }
  Value Get(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    return c ? frame.Get(c->id) : std::nullopt;
  }
  Collection collection;
  Frame frame;
  std::vector<std::string> log;
};

constexpr char kOrin[] = "name Orin (nvgpu)\nbus_id 00000000:00:00.0\n";
constexpr char kThor[] =
    "name NVIDIA Thor\nbus_id 00000000:01:00.0\nutil 37\nclock 1575\nencoder 12\n"
    "decoder 40\njpg unsupported\nofa 0\nmemory unsupported\nprocesses 4242:1048576 77:2097152\n";

TEST(NvmlPerMetric, OrinAnswersNotSupportedToEverythingAndIsNotAskedAgain) {
  FakeNvml nvml(kOrin);
  RootedSysFs fs(nvml.tree().root());
  NvmlRun run(fs);
  EXPECT_TRUE(run.collection.inventory().channels.empty());
  for (int s = 1; s <= 5; ++s) run.At(s);
  run.collection.Discover();  // a rediscovery (another collector's hardware changed)
  run.At(6);
  EXPECT_TRUE(run.collection.inventory().channels.empty());
  EXPECT_EQ(run.collection.total_errors(), 0u);
  // Asked once each, at the first discovery: the answers are remembered.
  EXPECT_EQ(nvml.Calls("nvmlDeviceGetUtilizationRates"), 1);
  EXPECT_EQ(nvml.Calls("nvmlDeviceGetEncoderUtilization"), 1);
  EXPECT_EQ(nvml.Calls("nvmlDeviceGetMemoryInfo"), 1);
  EXPECT_EQ(nvml.Calls("nvmlDeviceGetCount_v2"), 2);  // the device list is read again
}

TEST(NvmlPerMetric, OrinProcessMemoryIsNotAvailableRatherThanZero) {
  FakeNvml nvml(kOrin);
  nvml.tree().Write("/proc/meminfo", "MemTotal: 1000 kB\n");  // no NvMapMemUsed
  RootedSysFs fs(nvml.tree().root());
  GpuProcessReader reader(fs, /*nvml=*/true, /*ttl_ns=*/0);
  auto gpu = reader.Read();
  EXPECT_FALSE(gpu->available);
  EXPECT_TRUE(gpu->kib.empty());
  EXPECT_NE(gpu->unavailable.find("NVML does not report GPU memory per process"), std::string::npos)
      << gpu->unavailable;
  EXPECT_NE(gpu->unavailable.find("NOT_SUPPORTED"), std::string::npos) << gpu->unavailable;
  reader.Read();
  EXPECT_EQ(nvml.Calls("nvmlDeviceGetComputeRunningProcesses_v3"), 1);  // remembered
}

TEST(NvmlPerMetric, OrinWithNvmapUnreadableGivesBothReasons) {
  FakeNvml nvml(kOrin);
  nvml.tree().Write("/proc/meminfo", "MemTotal: 1000 kB\nNvMapMemUsed: 4 kB\n");
  RootedSysFs fs(nvml.tree().root());
  GpuProcessReader reader(fs, /*nvml=*/true, /*ttl_ns=*/0);
  auto gpu = reader.Read();
  EXPECT_FALSE(gpu->available);
  EXPECT_NE(gpu->unavailable.find("nvmap"), std::string::npos) << gpu->unavailable;
  EXPECT_NE(gpu->unavailable.find("NOT_SUPPORTED"), std::string::npos) << gpu->unavailable;
}

TEST(NvmlPerMetric, ThorGivesUtilisationCodecLoadAndProcessMemory) {
  FakeNvml nvml(kThor);
  RootedSysFs fs(nvml.tree().root());
  NvmlRun run(fs);
  run.At(1);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kLoad), 370);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kFreq), 1575000);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), 120);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVDEC", Field::kLoad), 400);
  EXPECT_EQ(run.Get(Kind::kEngine, "OFA", Field::kLoad), 0);  // measured idle
  const Channel* nvenc = run.Find(Kind::kEngine, "NVENC", Field::kLoad);
  ASSERT_NE(nvenc, nullptr);
  EXPECT_EQ(nvenc->unit, Unit::kPermille);
  EXPECT_EQ(nvenc->device, "nvml 00000000:01:00.0");
  // What it cannot tell is no channel: no JPG load, no memory.used/total.
  EXPECT_EQ(run.Find(Kind::kEngine, "NVJPG", Field::kLoad), nullptr);
  EXPECT_EQ(run.Find(Kind::kGpu, "nvml0", Field::kUsed), nullptr);
  EXPECT_EQ(run.Find(Kind::kGpu, "nvml0", Field::kTotal), nullptr);

  GpuProcessReader reader(fs, /*nvml=*/true, /*ttl_ns=*/0);
  auto gpu = reader.Read();
  EXPECT_TRUE(gpu->available);
  EXPECT_EQ(gpu->source, "nvml");
  EXPECT_EQ(gpu->kib.at(4242), 1024u);
  EXPECT_EQ(gpu->kib.at(77), 2048u);
  EXPECT_TRUE(gpu->unavailable.empty());
}

TEST(NvmlPerMetric, ADiscreteGpuAnswersEveryMetric) {
  FakeNvml nvml(
      "name NVIDIA RTX A2000\nbus_id 00000000:65:00.0\nutil 80\nclock 1800\nmax_clock 2100\n"
      "temp 61\npower 75000\npower_limit 250000\nmemory 8589934592 1073741824 7516192768\n");
  RootedSysFs fs(nvml.tree().root());
  NvmlRun run(fs);
  run.At(1);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kLoad), 800);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kFreq), 1800000);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kFreqMax), 2100000);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kTemp), 61000);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kPower), 75000);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kUsed), 1048576);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kTotal), 8388608);
  const Channel* power = run.Find(Kind::kGpu, "nvml0", Field::kPower);
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(power->max, 250000);
  EXPECT_EQ(power->device, "nvml 00000000:65:00.0");
  EXPECT_EQ(run.Find(Kind::kEngine, "NVENC", Field::kLoad), nullptr);  // not listed: unsupported
}

TEST(NvmlPerMetric, ProcessesListedWithoutMemoryAreNotAvailable) {
  FakeNvml nvml(std::string(kThor) + "processes 4242:na\n");
  RootedSysFs fs(nvml.tree().root());
  GpuProcessReader reader(fs, /*nvml=*/true, /*ttl_ns=*/0);
  auto gpu = reader.Read();
  EXPECT_FALSE(gpu->available);
  EXPECT_NE(gpu->unavailable.find("without their memory"), std::string::npos) << gpu->unavailable;
}

TEST(NvmlPerMetric, AMetricFailingLaterIsAbsentThatTickNeverZero) {
  FakeNvml nvml(kThor);
  RootedSysFs fs(nvml.tree().root());
  NvmlRun run(fs);
  run.At(1);
  ASSERT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), 120);
  nvml.Write(std::string(kThor) + "encoder error 15\nutil error 999\n");  // GPU lost, unknown
  run.At(2);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), std::nullopt);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kLoad), std::nullopt);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVDEC", Field::kLoad), 400);
  EXPECT_EQ(run.collection.total_errors(), 2u);
  nvml.Write(std::string(kThor) + "encoder 101\n");  // out of range: absent too
  run.At(3);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), std::nullopt);
  nvml.Write(kThor);
  run.At(4);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), 120);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kLoad), 370);
}

// A metric still failing when the failure's rediscovery runs is left out of
// that inventory; once it answers again, it comes back (a rediscovery is
// asked for every five seconds while one is left out), not never.
TEST(NvmlPerMetric, AMetricFailingAtARediscoveryComesBackWhenItAnswers) {
  FakeNvml nvml(kThor);
  RootedSysFs fs(nvml.tree().root());
  NvmlRun run(fs);
  run.At(1);
  ASSERT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), 120);
  nvml.Write(std::string(kThor) + "encoder error 15\n");  // GPU lost
  for (int s = 2; s <= 4; ++s) run.At(s);
  const uint64_t failed_at = run.collection.generation();
  ASSERT_GT(failed_at, 0u);
  ASSERT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), std::nullopt);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVDEC", Field::kLoad), 400);
  nvml.Write(kThor);
  for (int s = 5; s <= 12; ++s) run.At(s);
  EXPECT_GT(run.collection.generation(), failed_at);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), 120);
  // Nothing left out: no more rediscoveries.
  const uint64_t settled = run.collection.generation();
  for (int s = 13; s <= 30; ++s) run.At(s);
  EXPECT_EQ(run.collection.generation(), settled);
}

TEST(NvmlLate, ADriverLoadingAfterStartJoinsTheInventoryAndIsAnnouncedOnce) {
  FakeNvml nvml("");
  const std::string driver = nvml.Path("driver-loaded");
  nvml.Write(std::string(kThor) + "init_after " + driver + "\n");
  RootedSysFs fs(nvml.tree().root());
  NvmlRun run(fs);
  EXPECT_TRUE(run.collection.inventory().channels.empty());
  const uint64_t generation = run.collection.generation();
  run.At(1);  // the schedule starts: next try at 6 s
  run.At(3);
  std::ofstream(driver) << "";
  run.At(4);
  run.At(5);
  EXPECT_EQ(nvml.Calls("nvmlInit_v2"), 1);  // not retried every tick
  EXPECT_EQ(run.Find(Kind::kEngine, "NVENC", Field::kLoad), nullptr);
  run.At(6);  // retried: it answers, a rediscovery is asked for
  EXPECT_EQ(nvml.Calls("nvmlInit_v2"), 2);
  run.At(7);
  EXPECT_GT(run.collection.generation(), generation);
  EXPECT_EQ(run.Get(Kind::kEngine, "NVENC", Field::kLoad), 120);
  EXPECT_EQ(run.Get(Kind::kGpu, "nvml0", Field::kLoad), 370);
  ASSERT_EQ(run.log.size(), 1u);
  EXPECT_NE(run.log[0].find("NVML answered after 1 retries (nvmlInit first returned 9)"),
            std::string::npos)
      << run.log[0];
  EXPECT_NE(run.log[0].find("1 device(s), 5 channel(s) added"), std::string::npos) << run.log[0];
  run.collection.Discover();
  run.At(8);
  EXPECT_EQ(run.log.size(), 1u);  // said once
  EXPECT_EQ(nvml.Calls("nvmlInit_v2"), 2);
}

TEST(NvmlLate, RetriesEveryFiveSecondsForAMinuteThenEveryMinute) {
  FakeNvml nvml("");
  nvml.Write(std::string(kThor) + "init_after " + nvml.Path("never") + "\n");
  RootedSysFs fs(nvml.tree().root());
  NvmlRun run(fs);
  for (int s = 1; s <= 200; ++s) run.At(s);
  // At discovery; at 6, 11, ..., 61 s (12); at 121 and 181 s.
  EXPECT_EQ(nvml.Calls("nvmlInit_v2"), 15);
  EXPECT_TRUE(run.collection.inventory().channels.empty());
  EXPECT_TRUE(run.log.empty());
}

TEST(NvmlLate, ProcessMemoryWaitsForTheDriverToo) {
  FakeNvml nvml("");
  const std::string driver = nvml.Path("driver-loaded");
  nvml.Write(std::string(kThor) + "init_after " + driver + "\n");
  RootedSysFs fs(nvml.tree().root());
  GpuProcessReader reader(fs, /*nvml=*/true, /*ttl_ns=*/0);
  auto gpu = reader.Read();
  EXPECT_FALSE(gpu->available);
  EXPECT_TRUE(gpu->unavailable.empty());  // no NVML yet: nothing to say
  std::ofstream(driver) << "";
  reader.Read();  // within 5 s of the failure: not retried
  EXPECT_EQ(nvml.Calls("nvmlInit_v2"), 1);
}

}  // namespace
}  // namespace edgemon
