// The API's cost, measured against a real edgemond on the AGX Orin fixture
// over its unix socket: sample-to-client latency (p50/p99), CPU per watcher
// at 10 Hz, Query times over 1 h and 24 h of 1 Hz history (written into
// the store first), and BeginWindow/EndWindow latency while 8 clients loop
// 24 h Summaries. With --week: a store holding a week of 1 Hz frames (the
// default raw retention at the default frame rate) and a daemon at its
// default 1 s frames; a 1-minute Query and BeginWindow/EndWindow timed while
// clients loop one-week Summaries, and the Summaries themselves; before
// that, one-day and one-week Summaries one at a time on an idle daemon, with
// the load average. --days N writes N days instead of 7 (a quicker run; the
// "week" Summaries then cover what is held).
//
// With --year: a year of history as a daemon keeps it (store.retention
// --raw-days, default 7, of 1 Hz frames; before them only rollup rows, left
// by frames one rollup period apart that the retention retires as they are
// written; store.rollup_retention 400d, store.max_size 8GiB) and one-day,
// one-week, 30-day and one-year Summaries: first in this process on the
// store (the time and the rows SQLite returned per call, and the energies
// and peaks against the same summary read from every frame), then through
// the daemon one call at a time. --year-days N writes N days instead of 365;
// --store-only DB writes that store to DB and stops (bench/flash_writes.py
// --aged-days starts edgemond on it); --summaries-only DB runs the
// Summaries, in process and through edgemond, on a store written so, without
// writing one (their ranges end now: a store written a while ago has no
// frames at their end; the daemon adds its own).
//
//   build/bench/api_bench build/daemon/edgemond [FIXTURE_ROOT] [--windows-only | --week]
//                         [--days N] | --year [--year-days N] [--raw-days N]
//                         [--store-only DB | --summaries-only DB]
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/edgemon_client.h"
#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/store/ring_store.h"
#include "daemon/summary/summarize.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kSec = 1'000'000'000;

int64_t NowRealtime() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * kSec + ts.tv_nsec;
}

// Nanoseconds on CPU of every thread of `pid`.
int64_t CpuNs(pid_t pid) {
  int64_t total = 0;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(e.path() / "schedstat");
    int64_t ns = 0;
    in >> ns;
    total += ns;
  }
  return total;
}

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// A year's rollup retention (and a little more).
constexpr int64_t kYearRetentionNs = 400 * 86400 * kSec;

// The store's options for a year of history: raw frames kept `raw_days`.
edgemon::store::RingStoreOptions YearOptions(int raw_days) {
  edgemon::store::RingStoreOptions o;
  o.rollup_retention_ns = kYearRetentionNs;
  o.raw_retention_ns = int64_t{raw_days} * 86400 * kSec;
  return o;
}

// Writes `frames` frames of the board's inventory at 1 s spacing, ending now;
// before them `sparse` frames one rollup period (60 s) apart, which the raw
// retention of `options` retires as they are written.
void WriteHistory(const std::string& root, const std::string& db, int frames, int sparse = 0,
                  const edgemon::store::RingStoreOptions& options = {}) {
  edgemon::RootedSysFs fs(root);
  edgemon::Collection c(fs, edgemon::MakeDefaultCollectors({}), {}, nullptr);
  c.Discover();
  edgemon::Frame f;
  c.Sample(kSec, f);
  auto st = edgemon::store::RingStore::Open(db, options);
  if (!st.ok()) {
    std::fprintf(stderr, "api_bench: %s\n", st.status().message().c_str());
    std::exit(1);
  }
  (*st)->SetInventory(c.inventory());
  const int64_t period = (*st)->rollup_period_ns();
  const int64_t dense_start = NowRealtime() - int64_t{frames} * kSec;
  const int64_t start = dense_start - int64_t{sparse} * period;
  for (int i = 0; i < sparse + frames; ++i) {
    const int64_t offset =
        i < sparse ? int64_t{i} * period : int64_t{sparse} * period + int64_t{i - sparse} * kSec;
    f.seq = static_cast<uint64_t>(i);
    f.realtime_ns = start + offset;
    f.boottime_ns = offset;
    for (auto& v : f.values) {
      if (v) *v += (i % 7) - 3;
    }
    // Append drops a frame when the writer's queue is full: wait for the
    // writer then, so the store holds every frame.
    while ((*st)->Append(f) == 0) {
      if (auto s = (*st)->Flush(); !s.ok()) {
        std::fprintf(stderr, "api_bench: %s\n", s.message().c_str());
        std::exit(1);
      }
    }
  }
  (void)(*st)->Flush();
  if (auto stats = (*st)->Stats(); stats.ok()) {
    std::printf("the store holds %llu frames\n", static_cast<unsigned long long>(stats->frames));
  }
  (void)(*st)->Close();
}

struct Latencies {
  std::vector<double> ms;
  void Print(const char* what) {
    std::sort(ms.begin(), ms.end());
    std::printf("  %-40s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%zu calls)\n", what,
                ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back(), ms.size());
  }
};

// BeginWindow and EndWindow, `n` pairs: latency of each call and how far the
// daemon's timestamp lies after the moment the call was sent.
void TimeWindows(edgemon::client::Client& c, int n, Latencies& begin, Latencies& end,
                 Latencies& stamp) {
  for (int i = 0; i < n; ++i) {
    int64_t sent = NowRealtime();
    auto t0 = Clock::now();
    auto w = c.BeginWindow("bench");
    auto t1 = Clock::now();
    if (!w.ok()) continue;
    stamp.ms.push_back(static_cast<double>(w->start_ns - sent) / 1e6);
    auto e = c.EndWindow(w->id);
    auto t2 = Clock::now();
    if (!e.ok()) continue;
    begin.ms.push_back(Ms(t1 - t0));
    end.ms.push_back(Ms(t2 - t1));
  }
}

// Window latency alone, then while 8 clients loop Summarize over 24 h.
void WindowsUnderLoad(const std::string& target, edgemon::client::Client& c) {
  std::printf("\nBeginWindow / EndWindow latency (24 h of history in the store):\n");
  {
    Latencies b, e, s;
    TimeWindows(c, 200, b, e, s);
    std::printf(" idle daemon:\n");
    b.Print("BeginWindow");
    e.Print("EndWindow");
    s.Print("start stamp after the call was sent");
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> summaries{0};
  std::atomic<int64_t> summary_ns{0};
  std::vector<std::thread> load;
  for (int i = 0; i < 8; ++i) {
    load.emplace_back([&] {
      auto cl = edgemon::client::Client::Connect(target);
      if (!cl.ok()) return;
      while (!stop) {
        int64_t now = NowRealtime();
        auto t0 = Clock::now();
        auto r = (*cl)->Summarize(now - 86400 * kSec, now);
        if (r.ok()) {
          summaries.fetch_add(1);
          summary_ns.fetch_add(
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the load is under way
  Latencies b, e, s;
  auto t0 = Clock::now();
  // For 10 s at least, so the windows meet Summaries at every stage.
  while (Clock::now() - t0 < std::chrono::seconds(10)) {
    TimeWindows(c, 20, b, e, s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : load) t.join();
  uint64_t n = summaries.load();
  std::printf(
      " while 8 clients loop Summarize over 24 h (%llu summaries in %.1f s, %.0f ms each, queueing "
      "included):\n",
      static_cast<unsigned long long>(n), secs + 2,
      n ? static_cast<double>(summary_ns.load()) / 1e6 / static_cast<double>(n) : 0.0);
  b.Print("BeginWindow");
  e.Print("EndWindow");
  s.Print("start stamp after the call was sent");
}

// The client library's Watcher on a real clock: the gaps between its
// reconnect attempts against an absent socket (initial backoff 20 ms, cap
// 80 ms: 20, 40, 80, 80 ...), and how long an external stop takes to end a
// stream blocked on a 1 h interval.
void WatcherTimings(const std::string& dir, edgemon::client::Client& c) {
  using edgemon::client::ConnectionState;
  auto absent = edgemon::client::Client::Connect("unix:" + dir + "/absent.sock");
  if (!absent.ok()) return;
  std::mutex mu;
  std::vector<Clock::time_point> tries;  // guarded by mu
  edgemon::client::WatchOptions o;
  o.initial_backoff = std::chrono::milliseconds(20);
  o.max_backoff = std::chrono::milliseconds(80);
  auto w = (*absent)->Watch(
      o, [](const edgemon::client::LiveFrame&) {},
      [&](ConnectionState st, const edgemon::Status&) {
        if (st != ConnectionState::kConnecting) return;
        std::lock_guard lock(mu);
        tries.push_back(Clock::now());
      });
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard lock(mu);
    if (tries.size() >= 10) break;
  }
  w->Stop();
  std::printf("\nWatcher reconnect gaps, backoff 20 ms doubling to 80 ms (absent socket):");
  for (size_t i = 1; i < tries.size(); ++i) std::printf(" %.1f", Ms(tries[i] - tries[i - 1]));
  std::printf(" ms\n");

  std::stop_source source;
  std::atomic<int> frames{0};
  edgemon::client::WatchOptions slow;
  slow.interval_ms = 3'600'000;
  auto blocked = c.Watch(
      slow, [&](const edgemon::client::LiveFrame&) { ++frames; }, {}, source.get_token());
  while (frames == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto t0 = Clock::now();
  source.request_stop();
  while (blocked->running()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  std::printf("Watcher stopped by its stop token while waiting for a frame 1 h away: %.2f ms\n",
              Ms(Clock::now() - t0));
}

void PrintLoad(const char* when) {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    std::printf(" load average %s: %.2f %.2f %.2f\n", when, load[0], load[1], load[2]);
  }
}

// Summaries of the newest `ranges` days ending now, one call at a time (no
// other client): `n` of each, under `heading`.
void SummaryLatency(edgemon::client::Client& c, int n, const std::vector<int64_t>& ranges,
                    const char* heading) {
  std::printf("\n%s:\n", heading);
  PrintLoad("before");
  for (int64_t days : ranges) {
    Latencies l;
    uint64_t samples = 0;
    for (int i = 0; i < n; ++i) {
      int64_t now = NowRealtime();
      auto t0 = Clock::now();
      auto r = c.Summarize(now - days * 86400 * kSec, now);
      double ms = Ms(Clock::now() - t0);
      if (!r.ok()) {
        std::fprintf(stderr, "api_bench: Summarize: %s\n", r.status().message().c_str());
        continue;
      }
      samples = r->samples;
      l.ms.push_back(ms);
    }
    if (l.ms.empty()) continue;
    std::string what =
        "Summarize " + std::to_string(days) + " day(s), " + std::to_string(samples) + " frames";
    l.Print(what.c_str());
  }
  PrintLoad("after");
}

// A 1-minute Query (all channels, raw frames) and BeginWindow/EndWindow,
// alone and while `clients` clients loop Summarize over the whole week.
void WeekSummaryUnderLoad(const std::string& target, edgemon::client::Client& c, int clients) {
  auto time_calls = [&](Latencies& query, Latencies& begin, Latencies& end, Latencies& stamp,
                        int n) {
    for (int i = 0; i < n; ++i) {
      int64_t now = NowRealtime();
      auto t0 = Clock::now();
      auto q = c.Query(now - 180 * kSec, now - 120 * kSec, {});
      if (q.ok()) query.ms.push_back(Ms(Clock::now() - t0));
      TimeWindows(c, 1, begin, end, stamp);
    }
  };
  std::printf("\n1-minute Query and BeginWindow / EndWindow (a week of history in the store):\n");
  {
    Latencies q, b, e, s;
    time_calls(q, b, e, s, 100);
    std::printf(" idle daemon:\n");
    q.Print("Query 1 min, all channels, raw");
    b.Print("BeginWindow");
    e.Print("EndWindow");
  }
  std::atomic<bool> stop{false};
  std::mutex mu;
  Latencies summaries;  // guarded by mu
  std::atomic<uint64_t> samples{0};
  std::atomic<double> span_h{0};
  std::vector<std::thread> load;
  for (int i = 0; i < clients; ++i) {
    load.emplace_back([&] {
      auto cl = edgemon::client::Client::Connect(target);
      if (!cl.ok()) return;
      (*cl)->set_timeout(std::chrono::minutes(10));
      while (!stop) {
        int64_t now = NowRealtime();
        auto t0 = Clock::now();
        auto r = (*cl)->Summarize(now - 7 * 86400 * kSec, now);
        double ms = Ms(Clock::now() - t0);
        if (!r.ok()) {
          std::fprintf(stderr, "api_bench: week Summarize: %s\n", r.status().message().c_str());
          continue;
        }
        samples = r->samples;
        span_h = static_cast<double>(r->to_ns - r->from_ns) / 3600e9;
        std::lock_guard lock(mu);
        summaries.ms.push_back(ms);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the load is under way
  Latencies q, b, e, s;
  auto t0 = Clock::now();
  // For 30 s at least and until 3 Summaries completed, so the calls meet
  // Summaries at every stage.
  for (;;) {
    time_calls(q, b, e, s, 5);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard lock(mu);
    if (Clock::now() - t0 > std::chrono::seconds(30) && summaries.ms.size() >= 3) break;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : load) t.join();
  std::printf(
      " while %d client(s) loop Summarize over the week (%.1f s; each Summary: %llu frames read, "
      "%.1f h):\n",
      clients, secs + 1, static_cast<unsigned long long>(samples.load()), span_h.load());
  q.Print("Query 1 min, all channels, raw");
  b.Print("BeginWindow");
  e.Print("EndWindow");
  s.Print("start stamp after the call was sent");
  summaries.Print("Summarize 1 week (queueing included)");
}

// One day, one week, 30 days and one year: those `history_days` covers.
std::vector<int64_t> RangesHeld(int history_days) {
  std::vector<int64_t> out;
  for (int64_t days : {1, 7, 30, 365}) {
    if (days <= history_days) out.push_back(days);
  }
  return out;
}

// The Summaries of RangesHeld() in this process on the store: the time and
// rows per call, and whether energies and peaks equal those read from every
// frame.
void SummaryRows(const std::string& db, int history_days, int raw_days) {
  auto st = edgemon::store::RingStore::Open(db, YearOptions(raw_days));
  if (!st.ok()) {
    std::fprintf(stderr, "api_bench: %s\n", st.status().message().c_str());
    std::exit(1);
  }
  auto& s = **st;
  std::printf("\nSummarize in this process on the store (no daemon running):\n");
  PrintLoad("before");
  for (int64_t days : RangesHeld(history_days)) {
    Latencies l;
    uint64_t rows = 0, frames = 0;
    constexpr int kCalls = 20;
    edgemon::summary::SummaryOptions fast;
    for (int i = 0; i < kCalls; ++i) {
      const int64_t now = NowRealtime();
      const uint64_t r0 = s.rows_read();
      auto t0 = Clock::now();
      auto r = edgemon::summary::Summarize(s, fast, now - days * 86400 * kSec, now, now);
      l.ms.push_back(Ms(Clock::now() - t0));
      rows += s.rows_read() - r0;
      if (!r.ok()) {
        std::fprintf(stderr, "api_bench: Summarize: %s\n", r.status().message().c_str());
        std::exit(1);
      }
      frames = r->samples;
    }
    // The same range read from every frame (and the rollup rows where frames
    // were retired): energies and peaks must be equal.
    const int64_t now = NowRealtime();
    edgemon::summary::SummaryOptions every = fast;
    every.raw_frames = true;
    auto a = edgemon::summary::Summarize(s, fast, now - days * 86400 * kSec, now, now);
    auto b = edgemon::summary::Summarize(s, every, now - days * 86400 * kSec, now, now);
    bool same = a.ok() && b.ok() && a->rails.size() == b->rails.size();
    for (size_t i = 0; same && i < a->rails.size(); ++i) {
      same = a->rails[i].energy_mj == b->rails[i].energy_mj &&
             a->rails[i].peak_power_mw == b->rails[i].peak_power_mw;
    }
    std::string what =
        "Summarize " + std::to_string(days) + " day(s), " + std::to_string(frames) + " frames";
    l.Print(what.c_str());
    std::printf("    %llu rows read per call; energies and peaks %s those of every frame\n",
                static_cast<unsigned long long>(rows / kCalls), same ? "equal" : "DIFFER FROM");
  }
  PrintLoad("after");
  (void)s.Close();
}

// The newest frame's seq in the store at `db` (0 for none or an error),
// read beside whoever writes it.
int64_t NewestSeq(const std::string& db) {
  sqlite3* c = nullptr;
  int64_t seq = 0;
  if (sqlite3_open_v2(db.c_str(), &c, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(c, "SELECT coalesce(max(seq), 0) FROM frames", -1, &st, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      seq = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(c);
  return seq;
}

// The CPU time process `pid` has used, in clock ticks (-1 unreadable).
long CpuTicks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return -1;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::atol(field.c_str());  // utime, stime
  }
  return ticks;
}

// Waits (up to `wait`) until a daemon started on `db` has committed a frame
// past `seq` (its first commit, which expires what the retention no longer
// holds and writes what start-up found) and then used at most a tick of CPU
// in half a second (the checkpoint after such a commit is done), so the
// calls that follow meet an idle daemon.
void WaitUntilIdle(const std::string& db, int64_t seq, pid_t pid, std::chrono::seconds wait) {
  const auto deadline = Clock::now() + wait;
  while (NewestSeq(db) <= seq && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (long before = CpuTicks(pid); Clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const long now = CpuTicks(pid);
    if (now >= 0 && now - before <= 1) break;
    before = now;
  }
}

// Starts edgemond with `args` and waits up to `wait` for its API on `sock`.
// Null (the daemon stopped again) when it did not answer.
std::unique_ptr<edgemon::client::Client> StartDaemon(const std::string& edgemond,
                                                     std::vector<std::string> args,
                                                     const std::string& sock,
                                                     std::chrono::milliseconds wait, pid_t& pid) {
  args.insert(args.begin(), edgemond);
  pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(edgemond.c_str(), argv.data());
    _exit(127);
  }
  auto client = edgemon::client::Client::Connect("unix:" + sock);
  const auto deadline = Clock::now() + wait;
  while (client.ok() && !(*client)->DeviceInfo().ok() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!client.ok() || !(*client)->DeviceInfo().ok()) {
    std::fprintf(stderr, "api_bench: daemon not reachable\n");
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    return nullptr;
  }
  return std::move(client.value());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: api_bench EDGEMOND [FIXTURE_ROOT] [--windows-only | --week] [--days N]\n"
                 "       api_bench EDGEMOND [FIXTURE_ROOT] --year [--year-days N] [--raw-days N]\n"
                 "                 [--store-only DB | --summaries-only DB]\n");
    return 2;
  }
  const std::string edgemond = argv[1];
  bool windows_only = false, week = false, year = false;
  int days = 7, year_days = 365, raw_days = 7;
  std::string store_only, summaries_only;
  std::string root = std::string(EDGEMON_FIXTURES_DIR) + "/agx-orin";
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--windows-only") {
      windows_only = true;
    } else if (std::string(argv[i]) == "--week") {
      week = true;
    } else if (std::string(argv[i]) == "--days" && i + 1 < argc) {
      days = std::max(1, std::atoi(argv[++i]));
    } else if (std::string(argv[i]) == "--year") {
      year = true;
    } else if (std::string(argv[i]) == "--year-days" && i + 1 < argc) {
      year_days = std::clamp(std::atoi(argv[++i]), 1, 399);
    } else if (std::string(argv[i]) == "--raw-days" && i + 1 < argc) {
      raw_days = std::clamp(std::atoi(argv[++i]), 1, 7);
    } else if (std::string(argv[i]) == "--store-only" && i + 1 < argc) {
      store_only = argv[++i];
    } else if (std::string(argv[i]) == "--summaries-only" && i + 1 < argc) {
      summaries_only = argv[++i];
    } else {
      root = argv[i];
    }
  }
  char tmpl[] = "/tmp/edgemon-api-bench-XXXXXX";
  const std::string tmp = mkdtemp(tmpl);
  const std::string sock = tmp + "/api.sock";
  const std::string db = store_only.empty() ? tmp + "/e.db" : store_only;
  if (year) {
    raw_days = std::min(raw_days, year_days);
    if (summaries_only.empty()) {
      const int sparse = (year_days - raw_days) * 1440;
      std::printf(
          "writing %d day(s) of history: %d day(s) of 1 Hz frames after %d frames a minute "
          "apart ...\n",
          year_days, raw_days, sparse);
      auto w0 = Clock::now();
      WriteHistory(root, db, raw_days * 86400, sparse, YearOptions(raw_days));
      std::printf("written in %.0f s\n", Ms(Clock::now() - w0) / 1000);
    }
    if (!store_only.empty()) {
      std::filesystem::remove_all(tmp);
      return 0;
    }
    const std::string& store = summaries_only.empty() ? db : summaries_only;
    SummaryRows(store, year_days, raw_days);
    const std::string config = tmp + "/edgemond.toml";
    // A year of rollups is about 2.3 GiB on this board: above the default cap.
    std::ofstream(config) << "[store]\nrollup_retention = \"400d\"\nmax_size = \"8GiB\"\n"
                          << "retention = \"" << raw_days << "d\"\n";
    const int64_t seq = NewestSeq(store);
    pid_t pid = 0;
    // Opening a store of gigabytes (its quick_check) takes a while.
    auto client =
        StartDaemon(edgemond,
                    {"--config", config, "--root", root, "--db", store, "--listen", "unix:" + sock,
                     "--interval-ms", "1000", "--energy-rate-hz", "0", "--log-level", "warn"},
                    sock, std::chrono::minutes(3), pid);
    if (!client) return 1;
    WaitUntilIdle(store, seq, pid, std::chrono::seconds(60));
    SummaryLatency(*client, 20, RangesHeld(year_days),
                   "Summarize through edgemond, one call at a time on an idle daemon");
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    std::filesystem::remove_all(tmp);
    return 0;
  }
  // A week: the store's default raw retention (7 days) at the daemon's
  // default 1 s frames, so a one-week Summarize reads raw frames.
  const int frames = week ? days * 86400 : 86400;
  std::printf("writing %d day(s) of 1 Hz history (%d frames) ...\n", week ? days : 1, frames);
  auto w0 = Clock::now();
  WriteHistory(root, db, frames);
  std::printf("written in %.0f s\n", Ms(Clock::now() - w0) / 1000);

  pid_t pid = 0;
  auto client =
      StartDaemon(edgemond,
                  {"--root", root, "--db", db, "--listen", "unix:" + sock, "--interval-ms",
                   week ? "1000" : "10", "--energy-rate-hz", "0", "--log-level", "warn"},
                  sock, std::chrono::seconds(10), pid);
  if (!client) return 1;
  auto& c = *client;
  auto info = c.DeviceInfo();
  if (!info.ok()) {
    std::fprintf(stderr, "api_bench: %s\n", info.status().message().c_str());
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    return 1;
  }
  std::printf("edgemond: %s frames, %zu channels\n\n", week ? "1 Hz" : "100 Hz",
              info->inventory.channels.size());
  if (windows_only || week) {
    if (week) {
      SummaryLatency(c, 20, {1, 7}, "Summarize, one call at a time on an idle daemon");
      WeekSummaryUnderLoad("unix:" + sock, c, 1);
      WeekSummaryUnderLoad("unix:" + sock, c, 4);
    } else {
      WindowsUnderLoad("unix:" + sock, c);
    }
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    std::filesystem::remove_all(tmp);
    return 0;
  }

  // Sample-to-client latency: frame timestamp (taken as the tick starts) to receipt.
  {
    std::vector<double> lat;
    std::atomic<bool> done{false};
    auto w = c.Watch({}, [&](const edgemon::client::LiveFrame& f) {
      if (lat.size() < 2000) {
        lat.push_back(static_cast<double>(NowRealtime() - f.frame.realtime_ns) / 1e6);
      } else {
        done = true;
      }
    });
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w->Stop();
    lat.erase(lat.begin(), lat.begin() + 100);  // warm-up
    std::sort(lat.begin(), lat.end());
    std::printf(
        "sample-to-client latency, unix socket, all channels: p50 %.3f ms  p99 %.3f ms "
        "(%zu frames)\n",
        lat[lat.size() / 2], lat[lat.size() * 99 / 100], lat.size());
  }

  // CPU per watcher at 10 Hz: the daemon's CPU with 50 watchers minus without.
  {
    auto cpu_over = [&](double seconds) {
      int64_t a = CpuNs(pid);
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      return static_cast<double>(CpuNs(pid) - a) / (seconds * 1e9);
    };
    double idle = cpu_over(5);
    std::vector<std::unique_ptr<edgemon::client::Watcher>> ws;
    std::atomic<uint64_t> got{0};
    edgemon::client::WatchOptions o;
    o.interval_ms = 100;
    for (int i = 0; i < 50; ++i) ws.push_back(c.Watch(o, [&](const auto&) { ++got; }));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    double busy = cpu_over(5);
    ws.clear();
    std::printf(
        "CPU per watcher at 10 Hz (all channels): %.4f %% of a core "
        "(daemon %.2f %% idle, %.2f %% with 50 watchers; %llu frames delivered)\n",
        (busy - idle) * 100 / 50, idle * 100, busy * 100,
        static_cast<unsigned long long>(got.load()));
  }

  // Query over the written history.
  {
    int64_t now = NowRealtime();
    auto time_query = [&](const char* what, int64_t from, int64_t to,
                          std::vector<std::string> channels, int64_t step, uint32_t limit) {
      auto t0 = Clock::now();
      auto r = c.Query(from, to, channels, step, limit);
      auto t1 = Clock::now();
      if (!r.ok()) {
        std::printf("%-48s failed: %s\n", what, r.status().message().c_str());
        return;
      }
      size_t values = 0;
      for (const auto& f : r->frames) {
        for (const auto& v : f.values) values += v.has_value();
      }
      for (const auto& s : r->series) values += s.buckets.size();
      std::printf("%-48s %8.1f ms  (%zu frames, %zu series, %zu values, %zu chunks)\n", what,
                  Ms(t1 - t0), r->frames.size(), r->series.size(), values, r->chunks);
    };
    int64_t hour_from = now - 3 * 3600 * kSec, hour_to = hour_from + 3600 * kSec;
    time_query("Query 1 h, all channels, raw frames", hour_from, hour_to, {}, 0, 100000);
    time_query("Query 24 h, one channel, raw frames", now - 86400 * kSec, now,
               {"rail/VDD_GPU_SOC/power"}, 0, 100000);
    time_query("Query 24 h, all channels, 1000 steps", now - 86400 * kSec, now, {},
               86400 * kSec / 1000, 100000);
  }

  WatcherTimings(tmp, c);
  WindowsUnderLoad("unix:" + sock, c);

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  std::filesystem::remove_all(tmp);
  return 0;
}
