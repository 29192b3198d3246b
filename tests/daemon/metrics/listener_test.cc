// The /metrics HTTP listener on real sockets (cpp-httplib client and raw
// sockets), the MetricsSource on a real fixture board, and the
// daemon.metrics_listen address parser.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "daemon/metrics/listener.h"
#include "daemon/metrics/source.h"
#include "daemon/runtime/config.h"
#include "daemon/sampler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/temp_tree.h"

namespace edgemon::metrics {
namespace {

using namespace std::chrono_literals;

std::string Body(Format f) {
  return f == Format::kOpenMetrics ? "m 1\n# EOF\n" : "m 1\n";
}

int ConnectRaw(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Whether the server closes `fd`. The limit is only there so that a
// connection the server never drops fails the test rather than hanging it:
// it lies far past every timeout the tests set, so the machine's speed
// decides nothing (how soon connections are cut is measured by
// bench/metrics_slowloris.py).
bool ServerCloses(int fd) {
  constexpr std::chrono::milliseconds limit = 60s;
  auto start = std::chrono::steady_clock::now();
  char buf[256];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    auto left = limit - std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start);
    if (left <= 0ms) return false;
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return true;  // closed (a 4xx/408 body before the close is read and skipped)
  }
}

TEST(MetricsListenerTest, ServesMetricsOnlyAndTheRightMethods) {
  MetricsListener l(Body);
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0}).ok());
  ASSERT_GT(l.port(), 0);
  httplib::Client c("127.0.0.1", l.port());

  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "m 1\n");
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");

  r = c.Get("/metrics",
            {{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "m 1\n# EOF\n");
  EXPECT_EQ(r->get_header_value("Content-Type"),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");

  for (const char* path : {"/", "/metricsx", "/metrics/x", "/api/v1/query", "/../etc/passwd"}) {
    r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
  }
  r = c.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  r = c.Delete("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  r = c.Head("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");

  // Too many header fields.
  httplib::Headers many;
  for (int i = 0; i < 100; ++i) many.emplace("X-H" + std::to_string(i), "v");
  r = c.Get("/metrics", many);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);

  EXPECT_EQ(l.scrapes(), 3u);  // two GETs and the HEAD
  EXPECT_GE(l.refused(), 8u);
  l.Stop();
  l.Stop();  // idempotent
  EXPECT_FALSE(c.Get("/metrics"));
}

// Everything the server sends on `fd` until it closes it.
std::string ReadUntilClosed(int fd) {
  std::string got;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 60'000) <= 0) return got + "<no close>";
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A GET whose body is a request (smuggled behind a proxy) is answered once,
// refused, and the connection ends; a request without one is served.
TEST(MetricsListenerTest, AGetsBodyIsNeverServedAsARequest) {
  std::atomic<int> renders{0};
  MetricsListener l([&](Format f) {
    ++renders;
    return Body(f);
  });
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0}).ok());
  const std::string inner = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (const std::string& head :
       {"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(inner.size()) +
            "\r\n\r\n",
        std::string("GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")}) {
    int fd = ConnectRaw(l.port());
    const std::string all = head + inner;
    ASSERT_EQ(::write(fd, all.data(), all.size()), static_cast<ssize_t>(all.size()));
    const std::string got = ReadUntilClosed(fd);
    ::close(fd);
    EXPECT_EQ(Count(got, "HTTP/1.1 "), 1u) << got;
    EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got;
  }
  EXPECT_EQ(renders.load(), 0);
  int fd = ConnectRaw(l.port());
  ASSERT_EQ(::write(fd, inner.data(), inner.size()), static_cast<ssize_t>(inner.size()));
  EXPECT_EQ(ReadUntilClosed(fd).rfind("HTTP/1.1 200", 0), 0u);
  ::close(fd);
  EXPECT_EQ(renders.load(), 1);
}

TEST(MetricsListenerTest, RepeatedParametersAreRefusedByName) {
  MetricsListener l(Body);
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0}).ok());
  httplib::Client c("127.0.0.1", l.port());
  auto r = c.Get("/metrics?a=1&from=-1h&b=2&from=-2h&a=3");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->body, "parameter given more than once: a, from\n");
  r = c.Get("/metrics?a=1&from=-1h");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(MetricsListenerTest, SilentAndSlowClientsAreDroppedWhileOthersAreServed) {
  MetricsListener l(Body);
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0, .threads = 2, .timeout_ms = 300}).ok());
  int silent = ConnectRaw(l.port());
  int partial = ConnectRaw(l.port());
  const char head[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";  // never finished
  ASSERT_EQ(::write(partial, head, sizeof head - 1), static_cast<ssize_t>(sizeof head - 1));
  std::this_thread::sleep_for(50ms);

  // Both workers may be held by the two slow clients for at most the
  // timeout; a scrape still gets through.
  httplib::Client c("127.0.0.1", l.port());
  c.set_read_timeout(5, 0);
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);

  EXPECT_TRUE(ServerCloses(silent));
  EXPECT_TRUE(ServerCloses(partial));
  ::close(silent);
  ::close(partial);
}

TEST(MetricsListenerTest, TricklingClientsNeitherStarveScrapesNorKeepTheirWorkers) {
  // Slowloris: 50 connections each send one byte a second, inside the
  // per-read timeout. With the defaults a scrape is still served at once, and
  // each trickling connection is cut when its request's time is up. (Four
  // such clients used to hold every worker: a scrape timed out at 30 s.)
  MetricsListener l(Body);
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0}).ok());
  const ListenerOptions defaults;
  std::vector<int> slow;
  for (int i = 0; i < 50; ++i) slow.push_back(ConnectRaw(l.port()));
  std::atomic<bool> done{false}, trickled_all{false};
  std::thread trickle([&] {
    const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: ";
    for (size_t k = 0; k < head.size() && !done; ++k) {
      for (int fd : slow) (void)::send(fd, &head[k], 1, MSG_NOSIGNAL);
      for (int t = 0; t < 10 && !done; ++t) std::this_thread::sleep_for(100ms);
    }
    trickled_all = !done;
  });
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 5; ++i) {
    httplib::Client c("127.0.0.1", l.port());
    c.set_read_timeout(10, 0);
    auto r = c.Get("/metrics");
    ASSERT_TRUE(r) << "scrape " << i << " starved by trickling clients";
    EXPECT_EQ(r->status, 200);
  }
  // Cut while each still trickles (the trickle lasts 32 s, ten times the
  // request timeout), not by a read timeout after the trickle stops.
  ASSERT_GT(32 * 1000, 10 * defaults.request_timeout_ms);
  for (int fd : slow) EXPECT_TRUE(ServerCloses(fd));
  EXPECT_FALSE(trickled_all) << "the trickling connections outlived their requests' time";
  done = true;
  trickle.join();
  for (int fd : slow) ::close(fd);
}

size_t ThreadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(MetricsListenerTest, WorkersStartedForABurstRetireWhenIdle) {
  // 20 connections at once start 20 workers; once they are served and idle,
  // the workers exit (they used to stay for the daemon's life: 50 slowloris
  // connections left about 1.5 MiB of thread stacks and buffers behind).
  MetricsListener l(Body);
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0, .idle_worker_ms = 300}).ok());
  const size_t before = ThreadCount();
  std::vector<int> conns;
  for (int i = 0; i < 20; ++i) conns.push_back(ConnectRaw(l.port()));
  for (int fd : conns) (void)::send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
  size_t busy = 0;
  for (int i = 0; i < 100 && busy < before + 10; ++i) {
    busy = ThreadCount();
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_GE(busy, before + 10) << "the burst did not start workers";
  for (int fd : conns) ::close(fd);
  size_t after = ThreadCount();
  for (int i = 0; i < 200 && after > before; ++i) {  // polled up to 20 s
    std::this_thread::sleep_for(100ms);
    after = ThreadCount();
  }
  EXPECT_LE(after, before) << "workers stayed after the burst";
  // And the listener still serves after its workers retired.
  httplib::Client c("127.0.0.1", l.port());
  c.set_read_timeout(10, 0);
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(MetricsListenerTest, ConcurrencyIsBoundedAndEveryClientIsServed) {
  std::atomic<int> active{0}, peak{0};
  MetricsListener l([&](Format f) {
    int now = ++active;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    std::this_thread::sleep_for(2ms);
    --active;
    return Body(f);
  });
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0, .threads = 3, .max_queued = 4}).ok());
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 40; ++i) {
    clients.emplace_back([&] {
      for (int k = 0; k < 5; ++k) {
        httplib::Client c("127.0.0.1", l.port());
        c.set_connection_timeout(10, 0);
        c.set_read_timeout(10, 0);
        auto r = c.Get("/metrics");
        (r && r->status == 200 ? ok : failed)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 200);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_LE(peak.load(), 3);
  EXPECT_EQ(l.scrapes(), 200u);
}

// Stop does not wait for an idle keep-alive connection to time out: with an
// hour's keep-alive, waiting for it would hang here (caught by the test's
// timeout), so returning at all is the assertion.
TEST(MetricsListenerTest, StopsPromptlyWithAnIdleKeepAliveConnection) {
  MetricsListener l(Body);
  ASSERT_TRUE(l.Start({.host = "127.0.0.1", .port = 0, .keep_alive_s = 3600}).ok());
  httplib::Client c("127.0.0.1", l.port());
  c.set_keep_alive(true);
  ASSERT_TRUE(c.Get("/metrics"));
  l.Stop();
  EXPECT_FALSE(c.Get("/metrics"));
}

TEST(MetricsListenerTest, BindErrorsAreOneLine) {
  MetricsListener a(Body);
  ASSERT_TRUE(a.Start({.host = "127.0.0.1", .port = 0}).ok());
  MetricsListener b(Body);
  Status s = b.Start({.host = "127.0.0.1", .port = a.port()});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  std::string err = s.message();
  EXPECT_EQ(err.rfind("cannot listen on 127.0.0.1:" + std::to_string(a.port()), 0), 0u) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);
  MetricsListener c(Body);
  err = c.Start({.host = "192.0.2.1", .port = 9})
            .message();  // TEST-NET-1: not an address of this host
  EXPECT_EQ(err.rfind("cannot listen on 192.0.2.1:9", 0), 0u) << err;
}

TEST(MetricsSourceTest, RendersTheLatestFrameOfARealFixtureBoard) {
  std::string root = edgemon::testing::Fixture("agx-orin");
  std::ifstream in(edgemon::testing::FixturesDir() + "/expected/agx-orin.json");
  auto expected = nlohmann::json::parse(in);

  RootedSysFs fs(root);
  CollectOptions opts;
  Collection collection(fs, MakeDefaultCollectors(opts), opts, [](const std::string&) {});
  collection.Discover();
  edgemon::testing::FakeClock clock;
  SamplerOptions so;
  so.frame_period_ns = 1'000'000'000;
  Sampler sampler(collection, clock, so);
  GpuProcessReader gpu(fs, /*nvml=*/false);
  MetricsSource source(collection, &sampler, nullptr,
                       {.version = "test", .gpu_processes = &gpu, .top_gpu_processes = 2});

  // Before the first frame: health and board info only.
  std::string before = source.Render(Format::kPrometheus);
  EXPECT_EQ(before.find("edgemon_rail_power_watts"), std::string::npos);

  sampler.AddSink(&source);
  sampler.TickOnce();
  std::string text = source.Render(Format::kPrometheus);

  int64_t gpu_soc_mw = expected["values"]["rail/VDD_GPU_SOC/power"].get<int64_t>();
  std::string want =
      "edgemon_rail_power_watts{rail=\"VDD_GPU_SOC\",device=\"ina3221 1-0040\","
      "input=\"false\",parent=\"\"} " +
      FormatMilli(gpu_soc_mw) + "\n";
  EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  int64_t tj = expected["values"]["thermal/tj-therm/temp"].get<int64_t>();
  EXPECT_NE(text.find("edgemon_temperature_celsius{zone=\"tj-therm\",device=\"thermal_zone10\"} " +
                      FormatMilli(tj) + "\n"),
            std::string::npos);
  for (const auto& key : expected["absent"]) {
    std::string zone = key.get<std::string>();  // thermal/<zone>/temp
    zone = zone.substr(8, zone.size() - 13);
    EXPECT_EQ(text.find("zone=\"" + zone + "\""), std::string::npos) << zone;
  }
  EXPECT_NE(text.find("edgemon_samples_total 1\n"), std::string::npos);
  EXPECT_NE(text.find("edgemon_deadline_misses_total 0\n"), std::string::npos);
  EXPECT_NE(text.find("edgemon_build_info{version=\"test\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("nvpmodel=\"" + expected["board"]["nvpmodel"].get<std::string>() + "\""),
            std::string::npos);
  EXPECT_EQ(text.find("edgemon_store_bytes"), std::string::npos);  // no store given
  // The top 2 processes by GPU memory from the fixture's nvmap table.
  EXPECT_NE(text.find("edgemon_process_gpu_memory_bytes{pid=\"4242\",process=\"fake-bench\"} " +
                      std::to_string((196608 + 4096) * 1024) + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("edgemon_process_gpu_memory_bytes{pid=\"1878\",process=\"gnome-shell\"} " +
                      std::to_string(29736 * 1024) + "\n"),
            std::string::npos);
  EXPECT_EQ(text.find("nvargus-daemon"), std::string::npos);  // third: not in the top 2
}

// The store's statistics are cached for store_stats_ttl_ns of the clock
// in Options::clock: a fake clock that the test moves decides when a scrape
// reads them again.
TEST(MetricsSourceTest, StoreStatisticsAreCachedOnTheInjectedClock) {
  RootedSysFs fs(edgemon::testing::Fixture("agx-orin"));
  CollectOptions opts;
  Collection collection(fs, MakeDefaultCollectors(opts), opts, [](const std::string&) {});
  collection.Discover();
  edgemon::testing::TempTree dir;
  auto opened = store::RingStore::Open(dir.root() + "/edgemon.db", store::RingStoreOptions{});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  store::RingStore& st = **opened;
  edgemon::testing::FakeClock clock(edgemon::testing::FakeClock::Mode::kPaced);
  MetricsSource source(collection, nullptr, &st,
                       {.version = "test", .store_stats_ttl_ns = 5'000'000'000, .clock = &clock});
  EXPECT_NE(source.Render(Format::kPrometheus).find("\nedgemon_store_frames 0\n"),
            std::string::npos);

  st.SetInventory(collection.inventory());
  for (uint64_t i = 1; i <= 3; ++i) {
    Frame f;
    f.boottime_ns = static_cast<int64_t>(i) * 1'000'000'000;
    f.realtime_ns = 1'700'000'000'000'000'000 + f.boottime_ns;
    f.values.resize(collection.inventory().channels.size());
    st.Append(std::move(f));
  }
  ASSERT_TRUE(st.Flush().ok());
  clock.Advance(4'999'999'999);  // within the TTL: the cached statistics
  EXPECT_NE(source.Render(Format::kPrometheus).find("\nedgemon_store_frames 0\n"),
            std::string::npos);
  clock.Advance(1);  // the TTL has passed on the source's clock: read again
  std::string text = source.Render(Format::kPrometheus);
  EXPECT_NE(text.find("\nedgemon_store_frames 3\n"), std::string::npos) << text;
}

TEST(MetricsConfigTest, ParsesListenAddresses) {
  auto a = runtime::ParseHostPort("127.0.0.1:9469");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9469);
  EXPECT_TRUE(a->loopback);
  a = runtime::ParseHostPort("9469");  // a port alone: loopback
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_TRUE(a->loopback);
  a = runtime::ParseHostPort(":9469");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  a = runtime::ParseHostPort("[::1]:9469");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_TRUE(a->loopback);
  a = runtime::ParseHostPort("localhost:1");
  ASSERT_TRUE(a.ok() && a->loopback);
  a = runtime::ParseHostPort("0.0.0.0:9469");  // explicit: served off the machine
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->loopback);
  a = runtime::ParseHostPort("[::]:9469");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->loopback);
  for (const char* bad :
       {"", "host", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x", "::1:9469",
        "[::1:9469", "example.com:9469", "127.0.0.1:94 69", "unix:/tmp/x"}) {
    auto r = runtime::ParseHostPort(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_FALSE(r.status().message().empty()) << bad;
  }
  runtime::Config c;
  c.metrics_listen = "127.0.0.1:99999";
  EXPECT_EQ(runtime::Validate(c).message().rfind("key daemon.metrics_listen: ", 0), 0u)
      << runtime::Validate(c).message();
  runtime::Config t;
  EXPECT_EQ(
      runtime::ApplyToml("[daemon]\nmetrics_listen = \"[::1]:9469\"\n", "t.toml", t).message(), "");
  EXPECT_EQ(t.metrics_listen, "[::1]:9469");
  EXPECT_EQ(runtime::Validate(t).message(), "");
  EXPECT_EQ(runtime::Config{}.metrics_listen, "");  // off by default
}

}  // namespace
}  // namespace edgemon::metrics
