// Streams that never read, on a real clock: 8 Watch streams whose client
// announces a 16 KiB window and never reads, against the service on the AGX
// Orin fixture sampling at 200 Hz. Prints what the unit test
// (ServiceTest.NeverReadingClientsDoNotHurtSampling, on fake time) cannot
// assert: the frames sampled, sent and coalesced, the process's RSS growth
// while the streams are stuck, the sampler's missed deadlines and how long
// shutting down with stuck streams takes.
//
//   build/bench/stuck_streams_bench [FIXTURE_ROOT] [SECONDS]
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/sampler.h"
#include "daemon/service/server.h"
#include "daemon/service/service.h"
#include "daemon/service/watch_hub.h"
#include "daemon/store/ring_store.h"
#include "edgemon/clock.h"
#include "edgemon/v1/edgemon.grpc.pb.h"

namespace {

// Resident set of this process in KiB.
long long RssKib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace edgemon;
  const std::string root = argc > 1 ? argv[1] : std::string(EDGEMON_FIXTURES_DIR) + "/agx-orin";
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 3;
  constexpr size_t kStreams = 8;
  char tmpl[] = "/tmp/edgemon-stuck-bench-XXXXXX";
  const std::string tmp = mkdtemp(tmpl);

  RootedSysFs fs(root);
  CollectOptions co;
  Collection collection(fs, MakeDefaultCollectors(co), co, [](const std::string&) {});
  collection.Discover();
  auto store = store::RingStore::Open(tmp + "/e.db", {});
  if (!store.ok()) {
    std::fprintf(stderr, "stuck_streams_bench: %s\n", store.status().message().c_str());
    return 1;
  }
  service::WatchHub hub(kStreams);
  SystemClock clock;
  SamplerOptions so;
  so.frame_period_ns = 5'000'000;  // 200 Hz
  so.energy_period_ns = 0;
  Sampler sampler(collection, clock, so);
  sampler.AddSink(&hub);
  sampler.TickOnce();
  service::ServiceOptions opts;
  opts.daemon_version = "bench";
  service::TelemetryService svc(hub, **store, clock, &sampler, &fs, opts);
  auto server = std::make_unique<service::ApiServer>(svc);
  service::ServerOptions sopts;
  sopts.unix_path = tmp + "/api.sock";
  if (auto s = server->Start(sopts); !s.ok()) {
    std::fprintf(stderr, "stuck_streams_bench: %s\n", s.message().c_str());
    return 1;
  }
  std::thread sampling([&] { sampler.Run(); });

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 * 1024);
  auto stuck = v1::Telemetry::NewStub(grpc::CreateCustomChannel(
      "unix:" + sopts.unix_path, grpc::InsecureChannelCredentials(), args));
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::Frame>>> readers;
  for (size_t i = 0; i < kStreams; ++i) {
    ctxs.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stuck->Watch(ctxs.back().get(), v1::WatchRequest{}));
  }
  while (hub.watchers() < kStreams) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the streams are stuck by now
  const uint64_t frames0 = sampler.frames(), misses0 = sampler.deadline_misses();
  const long long rss0 = RssKib();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const long long rss1 = RssKib();
  const uint64_t frames = sampler.frames() - frames0;
  const uint64_t misses = sampler.deadline_misses() - misses0;
  const uint64_t sent = hub.frames_sent(), coalesced = hub.frames_coalesced();

  auto t0 = std::chrono::steady_clock::now();
  sampler.Stop();
  sampling.join();
  server->Shutdown();
  server.reset();
  const double shutdown_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%zu never-reading streams, 200 Hz frames, %d s: %llu frames sampled (%llu missed "
      "deadlines); %llu sent, %llu coalesced in all; RSS %lld -> %lld KiB (%+lld KiB); "
      "shutdown with the streams stuck %.1f ms; streams left %zu\n",
      kStreams, seconds, static_cast<unsigned long long>(frames),
      static_cast<unsigned long long>(misses), static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(coalesced), rss0, rss1, rss1 - rss0, shutdown_ms,
      hub.active_streams());
  for (auto& ctx : ctxs) ctx->TryCancel();
  for (auto& r : readers) (void)r->Finish();
  svc.Stop();
  (void)(*store)->Close();
  std::filesystem::remove_all(tmp);
  return 0;
}
