// push_bench: what pushing the history costs. A store holding `--hours` of
// 1 Hz frames of an AGX Orin-like inventory (~150 channels) is drained by
// the remote-write shipper (daemon/push) to a receiver in a child process on
// loopback that reads each request and answers 204. Prints the CPU per
// pushed sample and per frame (the draining thread: reading the store,
// encoding, snappy, HTTP), the drain's wall time, the resident set before
// and at its peak, and the bytes each cursor commit writes (the WAL's
// growth) with what that makes per day at the default interval.
//
//   push_bench [--hours 24] [--batch-samples 5000]
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "daemon/push/shipper.h"
#include "daemon/store/ring_store.h"
#include "tests/support/orin_inventory.h"

namespace {

using namespace edgemon;  // NOLINT: a benchmark's main

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z

int64_t ThreadCpuNs() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * kSec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int64_t StatusKib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + std::strlen(key));
  }
  return 0;
}

// Bytes this process handed to write(2) and friends (/proc/self/io wchar).
int64_t WrittenBytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  int64_t v = 0;
  while (in >> key >> v) {
    if (key == "wchar:") return v;
  }
  return 0;
}

// The receiver: a child process answering every POST with 204.
pid_t StartReceiver(int& port) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    httplib::Server server;
    server.Post("/api/v1/write",
                [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    int p = server.bind_to_any_port("127.0.0.1");
    if (write(fds[1], &p, sizeof p) != sizeof p) _exit(1);
    close(fds[1]);
    server.listen_after_bind();
    _exit(0);
  }
  close(fds[1]);
  if (read(fds[0], &port, sizeof port) != sizeof port) std::exit(1);
  close(fds[0]);
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  int hours = 24;
  size_t batch = 5000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--hours") hours = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--batch-samples") batch = std::strtoull(argv[i + 1], nullptr, 10);
  }
  // Fork before any thread starts.
  int port = 0;
  pid_t receiver = StartReceiver(port);

  auto dir =
      std::filesystem::temp_directory_path() / ("edgemon-push-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "e.db").string();
  store::RingStoreOptions so;
  so.max_bytes = 1LL << 30;
  auto opened = store::RingStore::Open(db, so);
  if (!opened.ok()) {
    std::fprintf(stderr, "store: %s\n", opened.status().message().c_str());
    return 1;
  }
  std::unique_ptr<store::RingStore> st = std::move(opened).value();
  Inventory inv = testing::OrinLikeInventory();
  st->SetInventory(inv);
  std::mt19937_64 rng(7);
  std::vector<int64_t> walk(inv.channels.size(), 1000);
  const int64_t frames = int64_t{hours} * 3600;
  auto fill_start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < frames; ++i) {
    Frame f;
    f.realtime_ns = kT0 + i * kSec;
    f.boottime_ns = 3600 * kSec + i * kSec;
    f.values.resize(inv.channels.size());
    for (size_t c = 0; c < walk.size(); ++c) {
      if (inv.channels[c].Has(kFlagCounter)) {
        walk[c] += 2000 + static_cast<int64_t>(rng() % 7000);  // energy, mJ
      } else {
        walk[c] = std::max<int64_t>(0, walk[c] + static_cast<int64_t>(rng() % 201) - 100);
      }
      f.values[c] = walk[c];
    }
    st->Append(std::move(f));
    if (i % 4096 == 0) (void)st->Flush();
  }
  (void)st->Flush();
  const double fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count();

  push::ShipperOptions o;
  o.url = *runtime::ParseUrl("http://127.0.0.1:" + std::to_string(port) + "/api/v1/write");
  o.batch_samples = batch;
  o.rate_limit = 0;  // the drain's own cost, unpaced
  o.windows = false;
  o.identity.host_name = "orin-bench";
  o.identity.board_model = "NVIDIA Jetson AGX Orin Developer Kit";
  push::Shipper shipper(*st, o);

  const int64_t rss_before = StatusKib("VmRSS:");
  int64_t rss_peak = rss_before;
  const int64_t cpu0 = ThreadCpuNs();
  auto t0 = std::chrono::steady_clock::now();
  size_t batches = 0;
  for (;;) {
    auto r = shipper.ShipOnce();
    if (r.step == push::Shipper::Step::kIdle) break;
    if (r.step != push::Shipper::Step::kSent) {
      std::fprintf(stderr, "push_bench: a batch was not acknowledged\n");
      return 1;
    }
    ++batches;
    if (batches % 16 == 0) rss_peak = std::max(rss_peak, StatusKib("VmRSS:"));
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu_s = static_cast<double>(ThreadCpuNs() - cpu0) / 1e9;
  rss_peak = std::max(rss_peak, StatusKib("VmRSS:"));
  const uint64_t samples = shipper.Health().samples_sent;

  // Cursor commits alone: the bytes written per commit (WAL frames, and
  // the checkpoints that copy them into the database).
  (void)st->Flush();
  const int n = 2000;
  const int64_t written0 = WrittenBytes();
  for (int i = 0; i < n; ++i) {
    if (!st->SetPushCursor("bench", {static_cast<uint64_t>(i + 1), kT0 + i * kSec}).ok()) return 1;
  }
  const double per_commit = static_cast<double>(WrittenBytes() - written0) / n;
  const double commits_per_day = 86400.0 / 30;  // once per interval (30 s) when caught up

  std::printf(
      "push_bench: %d h of 1 Hz frames, %zu channels (AGX Orin-like), store filled in %.1f s\n",
      hours, inv.channels.size(), fill_s);
  std::printf("  drained %llu samples (%lld frames) in %zu batches of <= %zu samples\n",
              static_cast<unsigned long long>(samples), static_cast<long long>(frames), batches,
              batch);
  std::printf("  wall %.2f s, CPU %.2f s: %.2f us per sample, %.0f us per frame, %.0f samples/s\n",
              wall_s, cpu_s, cpu_s * 1e6 / static_cast<double>(samples),
              cpu_s * 1e6 / static_cast<double>(frames), static_cast<double>(samples) / wall_s);
  std::printf("  RSS %lld KiB before the drain, %lld KiB at its peak (+%lld KiB)\n",
              static_cast<long long>(rss_before), static_cast<long long>(rss_peak),
              static_cast<long long>(rss_peak - rss_before));
  std::printf(
      "  cursor commit: %.0f bytes written each; at one per 30 s (caught up): %.1f MiB/day\n",
      per_commit, per_commit * commits_per_day / (1 << 20));
  (void)st->Close();
  kill(receiver, SIGTERM);
  waitpid(receiver, nullptr, 0);
  std::filesystem::remove_all(dir);
  return 0;
}
