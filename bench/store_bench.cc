// The ring store's costs for an AGX-Orin-sized frame (~145 channels):
//   - CPU time per stored frame (Append + the writer thread's encode, insert
//     and commit; process CPU time), without and with the ring cap trimming,
//   - bytes on disk per frame (counter bytes_per_frame),
//   - reading 24 h of 1 Hz history of one channel downsampled to 1000 points
//     (from the rollup tier, as Tier::kAuto does, and forced from raw frames),
//     and a few other reads.
//
//   build/bench/store_bench [--benchmark_filter=Downsample]
//
// Files go to a scratch directory under $TMPDIR (default /tmp), removed at exit.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "daemon/store/ring_store.h"
#include "tests/support/orin_inventory.h"

namespace {

using edgemon::Channel;
using edgemon::ChannelId;
using edgemon::Field;
using edgemon::Frame;
using edgemon::Inventory;
using edgemon::Kind;
using edgemon::Value;
namespace store = edgemon::store;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 28'333'333 * 60 * kSec;

class Scratch {
 public:
  Scratch() {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/edgemon-store-bench-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data())) dir_ = buf.data();
  }
  ~Scratch() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

// Realistic magnitudes and movement: loads jump, frequencies step among OPPs,
// temperatures drift, power is noisy, energy accumulates, memory is large.
class FrameMaker {
 public:
  explicit FrameMaker(const Inventory& inv) : inv_(inv), rng_(42), state_(inv.channels.size()) {
    for (size_t i = 0; i < state_.size(); ++i) state_[i] = Initial(inv.channels[i].field);
  }

  Frame Next(int64_t realtime_ns) {
    Frame f;
    f.realtime_ns = realtime_ns;
    f.boottime_ns = realtime_ns - kT0 + 3600 * kSec;
    f.values.resize(inv_.channels.size());
    for (size_t i = 0; i < state_.size(); ++i) {
      const auto& c = inv_.channels[i];
      int64_t& s = state_[i];
      switch (c.field) {
        case Field::kLoad:
          s = R(0, 1000);
          break;
        case Field::kFreq:
          s = kOpps[R(0, 7)];
          break;
        case Field::kTemp:
          s = std::clamp<int64_t>(s + R(-250, 250), 30000, 90000);
          break;
        case Field::kPower:
          s = std::clamp<int64_t>(s + R(-300, 300), 100, 30000);
          break;
        case Field::kVoltage:
          s = 5000 + R(-24, 24);
          break;
        case Field::kCurrent:
          s = std::clamp<int64_t>(s + R(-60, 60), 10, 6000);
          break;
        case Field::kEnergy:
          s += R(2000, 9000);
          break;  // 2-9 W over one second
        case Field::kUsed:
          s = std::clamp<int64_t>(s + R(-20000, 20000), 1'000'000, 60'000'000);
          break;
        case Field::kFree:
        case Field::kAvailable:
        case Field::kCached:
        case Field::kBuffers:
        case Field::kShared:
          s = std::clamp<int64_t>(s + R(-5000, 5000), 0, 60'000'000);
          break;
        case Field::kLfbBlocks:
          s = R(0, 400);
          break;
        case Field::kSpeed:
          s = std::clamp<int64_t>(s + R(-40, 40), 0, 6000);
          break;
        case Field::kDuty:
          s = std::clamp<int64_t>(s + R(-3, 3), 0, 1000);
          break;
        case Field::kState:
          s = R(0, 9) == 0 ? 1 - s : s;
          break;
        default:
          break;  // limits, totals, online, mode: constant
      }
      f.values[c.id] = s;
    }
    return f;
  }

 private:
  static constexpr int64_t kOpps[8] = {115200,  422400,  729600,  1036800,
                                       1344000, 1651200, 1958400, 2201600};
  int64_t R(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }
  static int64_t Initial(Field f) {
    switch (f) {
      case Field::kFreqMin:
        return 115200;
      case Field::kFreqMax:
        return 2201600;
      case Field::kOnline:
        return 1;
      case Field::kTemp:
        return 48000;
      case Field::kPower:
        return 3000;
      case Field::kCurrent:
        return 600;
      case Field::kEnergy:
        return 12'345'678;
      case Field::kTotal:
        return 63'000'000;
      case Field::kUsed:
        return 9'000'000;
      case Field::kFree:
      case Field::kAvailable:
        return 50'000'000;
      case Field::kCached:
        return 4'000'000;
      case Field::kBuffers:
        return 200'000;
      case Field::kShared:
        return 700'000;
      case Field::kLfbSize:
        return 4096;
      case Field::kSpeed:
        return 2500;
      case Field::kDuty:
        return 300;
      default:
        return 0;
    }
  }
  const Inventory& inv_;
  std::mt19937_64 rng_;
  std::vector<int64_t> state_;
};

// Bytes each table (with its indexes) takes in the file, from the dbstat
// virtual table (Debian builds SQLite with it).
std::map<std::string, double> TableBytes(const std::string& path) {
  std::map<std::string, double> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT s.name, sum(s.pgsize), m.tbl_name FROM dbstat s "
                           "JOIN sqlite_schema m ON m.name = s.name GROUP BY s.name",
                           -1, &st, nullptr) == SQLITE_OK) {
      while (sqlite3_step(st) == SQLITE_ROW) {
        out[reinterpret_cast<const char*>(sqlite3_column_text(st, 2))] +=
            static_cast<double>(sqlite3_column_int64(st, 1));
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::unique_ptr<store::RingStore> Open(const std::string& path, store::RingStoreOptions o) {
  auto r = store::RingStore::Open(path, std::move(o));
  if (!r.ok()) {
    std::fprintf(stderr, "open %s: %s\n", path.c_str(), r.status().message().c_str());
    return nullptr;
  }
  return std::move(r.value());
}

// CPU per stored frame (process CPU: the caller's Append and the writer's
// encode/insert/commit) and bytes on disk per frame. Arg: max_bytes in MiB
// (0 = no cap; with a cap the store is filled to it first so every batch
// trims).
void BM_StoreFrames(benchmark::State& state) {
  const int64_t cap = state.range(0) << 20;
  const std::string path = scratch().File("append-" + std::to_string(state.range(0)) + ".db");
  std::filesystem::remove(path);
  store::RingStoreOptions o;
  o.max_bytes = cap;
  o.raw_retention_ns = 30 * 86400 * kSec;
  auto s = Open(path, o);
  if (!s) {
    state.SkipWithError("open failed");
    return;
  }
  Inventory inv = edgemon::testing::OrinLikeInventory();
  s->SetInventory(inv);
  FrameMaker maker(inv);
  int64_t t = kT0;
  if (cap > 0) {  // fill to the cap
    for (int i = 0; i < 20 * static_cast<int>(state.range(0)) * 1000 / 8; ++i) {
      s->Append(maker.Next(t += kSec));
    }
    (void)s->Flush();
  }
  auto before = s->Stats();
  // The benchmark's own timer stops with the loop, before the writer has
  // caught up: cpu_us_per_frame also counts the final Flush.
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) s->Append(maker.Next(t += kSec));
  if (auto fs = s->Flush(); !fs.ok()) state.SkipWithError(fs.message().c_str());
  state.counters["cpu_us_per_frame"] =
      (ProcessCpuSeconds() - cpu0) * 1e6 / static_cast<double>(state.iterations());
  auto st = s->Stats();
  state.SetItemsProcessed(state.iterations());
  state.counters["channels"] = static_cast<double>(inv.channels.size());
  if (st.ok() && before.ok()) {
    state.counters["trimmed_frames"] =
        static_cast<double>(st->trimmed_frames - before->trimmed_frames);
    state.counters["dropped_frames"] = static_cast<double>(st->dropped_frames);
  }
  (void)s->Close();
  s = Open(path, o);  // after a checkpoint: the main file holds everything
  if (!s) return;
  st = s->Stats();
  if (st.ok() && st->frames > 0) {
    auto tables = TableBytes(path);
    // Raw tier: the frames table and its time index, per frame.
    state.counters["bytes_per_frame"] = tables["frames"] / static_cast<double>(st->frames);
    if (st->rollup_rows > 0) {
      state.counters["bytes_per_rollup_row"] =
          tables["rollup"] / static_cast<double>(st->rollup_rows);
    }
    state.counters["db_MiB"] = static_cast<double>(FileBytes(path)) / (1 << 20);
    state.counters["frames_kept"] = static_cast<double>(st->frames);
  }
}
BENCHMARK(BM_StoreFrames)
    ->Arg(0)
    ->Arg(16)
    ->Iterations(50000)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMicrosecond);

// 24 h of 1 Hz frames, written once.
struct Day {
  std::string path;
  std::unique_ptr<store::RingStore> store;
  double seconds_to_write = 0;
};

Day& day() {
  static Day d = [] {
    Day r;
    r.path = scratch().File("day.db");
    store::RingStoreOptions o;
    o.raw_retention_ns = 2 * 86400 * kSec;
    auto start = std::chrono::steady_clock::now();
    {
      auto s = Open(r.path, o);
      if (!s) return r;
      Inventory inv = edgemon::testing::OrinLikeInventory();
      s->SetInventory(inv);
      FrameMaker maker(inv);
      for (int i = 0; i < 86400; ++i) s->Append(maker.Next(kT0 + i * kSec));
      (void)s->Close();
    }
    r.seconds_to_write =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.store = Open(r.path, o);
    return r;
  }();
  return d;
}

void Downsample24h(benchmark::State& state, store::Tier tier) {
  auto& d = day();
  if (!d.store) {
    state.SkipWithError("no day store");
    return;
  }
  const int64_t step = 86400 * kSec / 1000;
  size_t points = 0;
  for (auto _ : state) {
    auto r = d.store->Downsample("thermal/tj-thermal/temp", kT0, kT0 + 86400 * kSec, step, tier);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    points = r->size();
    benchmark::DoNotOptimize(r->data());
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["day_write_s"] = d.seconds_to_write;
  state.counters["day_db_MiB"] = static_cast<double>(FileBytes(d.path)) / (1 << 20);
}
BENCHMARK_CAPTURE(Downsample24h, auto_rollup, store::Tier::kAuto)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Downsample24h, raw_frames, store::Tier::kRaw)->Unit(benchmark::kMillisecond);

void BM_Range1h5Channels(benchmark::State& state) {
  auto& d = day();
  if (!d.store) return state.SkipWithError("no day store");
  const std::vector<std::string> keys = {"rail/VDD_GPU_SOC/power", "rail/VDD_CPU_CV/power",
                                         "gpu/gpu/load", "emc/emc/load", "cpu/cpu/load"};
  size_t frames = 0;
  for (auto _ : state) {
    auto r = d.store->Range(kT0 + 43200 * kSec, kT0 + 46800 * kSec, keys, 0);
    if (!r.ok()) return state.SkipWithError(r.status().message().c_str());
    frames = r->frames.size();
  }
  state.counters["frames"] = static_cast<double>(frames);
}
BENCHMARK(BM_Range1h5Channels)->Unit(benchmark::kMillisecond);

void BM_EnergyBetween(benchmark::State& state) {
  auto& d = day();
  if (!d.store) return state.SkipWithError("no day store");
  for (auto _ : state) {
    auto r = d.store->EnergyBetween("rail/VDD_GPU_SOC/energy", kT0 + 1000 * kSec + kSec / 3,
                                    kT0 + 80000 * kSec + kSec / 7);
    if (!r.ok() || !r->has_value()) return state.SkipWithError("no energy");
    benchmark::DoNotOptimize(**r);
  }
}
BENCHMARK(BM_EnergyBetween)->Unit(benchmark::kMicrosecond);

void BM_Latest(benchmark::State& state) {
  auto& d = day();
  if (!d.store) return state.SkipWithError("no day store");
  for (auto _ : state) {
    auto r = d.store->Latest();
    if (!r.ok()) return state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r->frames.data());
  }
}
BENCHMARK(BM_Latest)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
