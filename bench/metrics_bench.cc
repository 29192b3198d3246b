// The cost of a Prometheus scrape: rendering the exposition of an AGX
// Orin-like inventory (~150 channels) from memory, in both formats, and the
// HTTP round trip of GET /metrics on loopback through the real listener
// (cpp-httplib), on a kept-alive connection and on a new one per scrape.
#include <benchmark/benchmark.h>
#include <httplib.h>

#include "daemon/metrics/exposition.h"
#include "daemon/metrics/listener.h"
#include "tests/support/orin_inventory.h"

namespace edgemon::metrics {
namespace {

struct OrinBoard {
  Inventory inv = edgemon::testing::OrinLikeInventory();
  Frame frame;
  std::vector<uint64_t> errors;
  Health health;
  OrinBoard() {
    inv.board.model = "NVIDIA Jetson AGX Orin Developer Kit";
    inv.board.l4t = "36.4.3";
    inv.board.nvpmodel = "MAXN";
    for (const auto& c : inv.channels) frame.values.push_back(1000 + 37 * c.id);
    frame.realtime_ns = 1'700'000'000'000'000'000;
    errors.assign(inv.channels.size(), 0);
    health.version = "bench";
    health.frames = 123456;
    health.deadline_misses = 0;
    health.read_errors = errors;
    health.store = StoreHealth{.bytes = 100 << 20, .max_bytes = 512 << 20, .frames = 86400};
  }
};

void BM_RenderPrometheus(benchmark::State& state) {
  OrinBoard b;
  Exposition plan(b.inv);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string s = plan.Render(&b.frame, b.health, Format::kPrometheus);
    bytes = s.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["channels"] = static_cast<double>(b.inv.channels.size());
}
BENCHMARK(BM_RenderPrometheus)->Unit(benchmark::kMicrosecond);

void BM_RenderOpenMetrics(benchmark::State& state) {
  OrinBoard b;
  Exposition plan(b.inv);
  for (auto _ : state) {
    std::string s = plan.Render(&b.frame, b.health, Format::kOpenMetrics);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_RenderOpenMetrics)->Unit(benchmark::kMicrosecond);

// Building the plan happens once per inventory generation.
void BM_BuildPlan(benchmark::State& state) {
  OrinBoard b;
  for (auto _ : state) {
    Exposition plan(b.inv);
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_BuildPlan)->Unit(benchmark::kMicrosecond);

void HttpScrape(benchmark::State& state, bool keep_alive) {
  OrinBoard b;
  Exposition plan(b.inv);
  MetricsListener l([&](Format f) { return plan.Render(&b.frame, b.health, f); });
  if (edgemon::Status s = l.Start({.host = "127.0.0.1", .port = 0}); !s.ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  httplib::Client c("127.0.0.1", l.port());
  c.set_keep_alive(keep_alive);
  for (auto _ : state) {
    auto r = c.Get("/metrics");
    if (!r || r->status != 200) {
      state.SkipWithError("scrape failed");
      break;
    }
    benchmark::DoNotOptimize(r->body);
  }
}
void BM_HttpScrapeKeepAlive(benchmark::State& state) {
  HttpScrape(state, true);
}
void BM_HttpScrapeNewConnection(benchmark::State& state) {
  HttpScrape(state, false);
}
BENCHMARK(BM_HttpScrapeKeepAlive)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_HttpScrapeNewConnection)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace edgemon::metrics

BENCHMARK_MAIN();
