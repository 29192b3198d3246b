// How long one full sample of a board takes, next to the floor: the same
// value files read with bare pread and no parsing, and next to reopening
// every file per read (what node_exporter does on each scrape); and what
// the flight recorder adds to each frame on the sampler's thread.
//
//   build/bench/collect_bench [--benchmark_filter=agx-orin]
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/flight_recorder.h"

#ifndef EDGEMON_FIXTURES_DIR
#error "EDGEMON_FIXTURES_DIR must name tests/fixtures"
#endif

namespace {

const char* const kBoards[] = {
    "agx-orin",    "orin-nano",  "xavier-nx",  "tx2",
    "jetson-nano", "x86-laptop", "no-sensors", "node_exporter/node_exporter"};

std::string Root(const char* board) {
  return std::string(EDGEMON_FIXTURES_DIR) + "/" + board;
}

struct Board {
  explicit Board(const char* name)
      : fs(Root(name)), collection(fs, edgemon::MakeDefaultCollectors({}), {}, nullptr) {
    collection.Discover();
  }
  edgemon::RootedSysFs fs;
  edgemon::Collection collection;
};

void FullSample(benchmark::State& state, const char* name) {
  Board b(name);
  edgemon::Frame frame;
  int64_t t = 1'000'000'000;
  for (auto _ : state) {
    b.collection.Sample(t, frame);
    t += 1'000'000;
    benchmark::DoNotOptimize(frame.values.data());
  }
  state.counters["channels"] = static_cast<double>(b.collection.inventory().channels.size());
  state.counters["files"] = static_cast<double>(b.fs.OpenPaths().size());
}

// The floor: the files a sample reads, with fds kept open, pread and nothing else.
void PreadFloor(benchmark::State& state, const char* name) {
  Board b(name);
  std::vector<int> fds;
  for (const auto& p : b.fs.OpenPaths()) {
    int fd = ::open((b.fs.root() + p).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) fds.push_back(fd);
  }
  std::vector<char> buf(1 << 16);
  for (auto _ : state) {
    for (int fd : fds) benchmark::DoNotOptimize(::pread(fd, buf.data(), buf.size(), 0));
  }
  for (int fd : fds) ::close(fd);
  state.counters["files"] = static_cast<double>(fds.size());
}

// Reopening every file per read, node_exporter's way.
void ReopenEach(benchmark::State& state, const char* name) {
  Board b(name);
  std::vector<std::string> paths;
  for (const auto& p : b.fs.OpenPaths()) paths.push_back(b.fs.root() + p);
  std::vector<char> buf(1 << 16);
  for (auto _ : state) {
    for (const auto& p : paths) {
      int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      benchmark::DoNotOptimize(::read(fd, buf.data(), buf.size()));
      ::close(fd);
    }
  }
  state.counters["files"] = static_cast<double>(paths.size());
}

// One frame into the flight recorder, as the sampler hands it each frame:
// the ring on tmpfs (/dev/shm, as the unit's /run) where there is one, the
// store committing 64 frames behind.
void FlightRecord(benchmark::State& state, const char* name) {
  Board b(name);
  edgemon::Frame frame;
  b.collection.Sample(1'000'000'000, frame);
  const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  const std::string path = std::string(dir) + "/edgemon-bench-" + std::to_string(::getpid());
  const auto& inv = b.collection.inventory();
  auto opened =
      edgemon::FlightRecorder::Open(path, edgemon::FlightRingBytes(inv.channels.size(), 2048));
  if (!opened.ok()) {
    state.SkipWithError(opened.status().message().c_str());
    return;
  }
  auto recorder = std::move(opened).value();
  uint64_t seq = 1;
  recorder->FollowCommits([&seq] { return seq > 64 ? seq - 64 : 0; });
  for (auto _ : state) {
    frame.seq = seq++;
    recorder->OnFrame(inv, b.collection.generation(), frame);
  }
  recorder.reset();
  ::unlink(path.c_str());
  state.counters["channels"] = static_cast<double>(inv.channels.size());
}

int Register() {
  for (const char* board : kBoards) {
    benchmark::RegisterBenchmark((std::string("sample/") + board).c_str(), FullSample, board);
    benchmark::RegisterBenchmark((std::string("floor_pread/") + board).c_str(), PreadFloor, board);
    benchmark::RegisterBenchmark((std::string("reopen_each/") + board).c_str(), ReopenEach, board);
    benchmark::RegisterBenchmark((std::string("flight_record/") + board).c_str(), FlightRecord,
                                 board);
  }
  return 0;
}
const int kRegistered = Register();

}  // namespace

BENCHMARK_MAIN();
