// The floor of a periodic sampler: wakes on absolute deadlines and preads the
// files edgemon's collectors read on a board (found by running the same
// discovery once; each distinct file once, as a bare loop would: cores of
// one cpufreq policy share its files), and does nothing else: no store, no
// clients, and no parsing unless --parse is given. With --parse, each file's
// text is also turned into numbers as a bare loop would: strtoll (strtod for
// a token with a fraction) over each whitespace- or colon-separated token,
// into one reused array. With --frame-every N, only the rail power files
// (the collectors the daemon also runs between frames) are read every tick
// and the rest every Nth tick: the floor of 1 Hz frames with rails at
// 100 Hz is --rate-hz 100 --frame-every 100.
// With --collect, the loop runs the daemon's own collectors instead
// (Collection::Sample, SampleFast between frames) and nothing else of the
// daemon: the share of the daemon's cost that is sampling alone.
// bench/floor_bench.py runs it beside edgemond and prints both CPU costs.
//
//   build/bench/floor_sampler --root DIR [--rate-hz 100] [--frame-every 1] [--seconds 30]
//                             [--parse | --collect]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"

namespace {

int64_t Ns(const timespec& t) {
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

int64_t CpuNs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1'000'000'000 +
         (int64_t{u.ru_utime.tv_usec} + u.ru_stime.tv_usec) * 1000;
}

// The distinct files (by device and inode) `collectors` keep open after a
// discovery, opened again here; `seen` holds what earlier calls opened.
std::vector<int> OpenedBy(const std::string& root,
                          std::vector<std::unique_ptr<edgemon::Collector>> collectors,
                          std::set<std::pair<dev_t, ino_t>>& seen) {
  std::vector<int> fds;
  edgemon::RootedSysFs fs(root);
  edgemon::Collection collection(fs, std::move(collectors), {}, nullptr);
  collection.Discover();
  for (const auto& p : fs.OpenPaths()) {
    int fd = ::open((fs.root() + p).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) {
      ::close(fd);
      continue;
    }
    fds.push_back(fd);
  }
  return fds;
}

bool IsSeparator(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == ':';
}

// The numbers in `text` (NUL-terminated) into `out`, which keeps its room.
void ParseNumbers(const char* text, std::vector<double>& out) {
  out.clear();
  const char* p = text;
  while (*p != 0) {
    while (IsSeparator(*p)) ++p;
    if (*p == 0) break;
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end != p && *end == '.') {
      out.push_back(std::strtod(p, &end));
    } else if (end != p) {
      out.push_back(static_cast<double>(v));
    }
    p = end != p ? end : p + 1;
    while (*p != 0 && !IsSeparator(*p)) ++p;  // the rest of a token that is not a number
  }
}

// One pread of `fd` into `buf`, parsed into `numbers` when `parse`.
void ReadFile(int fd, std::vector<char>& buf, bool parse, std::vector<double>& numbers) {
  const ssize_t n = ::pread(fd, buf.data(), buf.size() - 1, 0);
  buf[n < 0 ? 0 : static_cast<size_t>(n)] = 0;
  if (parse) ParseNumbers(buf.data(), numbers);
}

struct Loop {
  long ticks = 0;
  double us_per_tick = 0;  // CPU
};

// Calls tick(n) on absolute deadlines 1/rate_hz apart for `seconds`, n
// being the deadline's number (0, 1, ...; a missed deadline's number is
// skipped); the CPU it took per tick.
template <typename Tick>
Loop OnDeadlines(double rate_hz, double seconds, Tick&& tick) {
  const int64_t period = static_cast<int64_t>(1e9 / rate_hz);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t start = Ns(now);
  const int64_t end = start + static_cast<int64_t>(seconds * 1e9);
  const int64_t cpu0 = CpuNs();
  Loop loop;
  for (int64_t next = start + period; next < end; next += period) {
    timespec at{static_cast<time_t>(next / 1'000'000'000), static_cast<long>(next % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) != 0) {
    }
    tick((next - start) / period - 1);
    ++loop.ticks;
    // Late (a preempted or stopped process): skip the deadlines already
    // missed rather than run them back to back, as the daemon does.
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (Ns(now) >= next + period) next += (Ns(now) - next) / period * period;
  }
  loop.us_per_tick =
      static_cast<double>(CpuNs() - cpu0) / 1e3 / static_cast<double>(std::max(1L, loop.ticks));
  return loop;
}

// --collect: the daemon's own collectors (Collection::Sample, SampleFast
// between frames) on the same absolute-deadline loop, with nothing else of
// the daemon: no store, sinks, threads or clients.
int CollectLoop(const std::string& root, double rate_hz, double seconds, long frame_every) {
  edgemon::RootedSysFs fs(root);
  edgemon::Collection collection(fs, edgemon::MakeDefaultCollectors({}), {}, nullptr);
  collection.Discover();
  edgemon::Frame frame;
  const Loop loop = OnDeadlines(rate_hz, seconds, [&](long n) {
    timespec now{};
    clock_gettime(CLOCK_BOOTTIME, &now);
    if (n % frame_every == 0) {
      collection.Sample(Ns(now), frame);
    } else {
      collection.SampleFast(Ns(now));
    }
  });
  std::printf(
      "floor: the daemon's collectors, frames every %ld, %ld ticks at %.0f Hz, %.1f us CPU "
      "per tick\n",
      frame_every, loop.ticks, rate_hz, loop.us_per_tick);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root;
  double rate_hz = 100, seconds = 30;
  long frame_every = 1;
  bool parse = false, collect = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--parse" || a == "--collect") {
      (a == "--parse" ? parse : collect) = true;
      continue;
    }
    if (i + 1 == argc) break;
    if (a == "--root") root = argv[i + 1];
    if (a == "--rate-hz") rate_hz = std::atof(argv[i + 1]);
    if (a == "--frame-every") frame_every = std::atol(argv[i + 1]);
    if (a == "--seconds") seconds = std::atof(argv[i + 1]);
    ++i;
  }
  if (root.empty() || rate_hz <= 0 || seconds <= 0 || frame_every < 1) {
    std::fprintf(stderr,
                 "usage: floor_sampler --root DIR [--rate-hz 100] [--frame-every 1] "
                 "[--seconds 30] [--parse | --collect]\n");
    return 2;
  }
  if (collect) return CollectLoop(root, rate_hz, seconds, frame_every);
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<std::unique_ptr<edgemon::Collector>> fast, rest;
  for (auto& c : edgemon::MakeDefaultCollectors({})) {
    (c->FastPath() ? fast : rest).push_back(std::move(c));
  }
  const std::vector<int> rails = OpenedBy(root, std::move(fast), seen);
  const std::vector<int> others = OpenedBy(root, std::move(rest), seen);
  std::vector<char> buf(4096);
  std::vector<double> numbers;
  numbers.reserve(512);
  const Loop loop = OnDeadlines(rate_hz, seconds, [&](long n) {
    for (int fd : rails) ReadFile(fd, buf, parse, numbers);
    if (n % frame_every == 0) {
      for (int fd : others) ReadFile(fd, buf, parse, numbers);
    }
  });
  std::printf(
      "floor: %zu rail files every tick, %zu others every %ld, %s, %ld ticks at %.0f Hz, "
      "%.1f us CPU per tick\n",
      rails.size(), others.size(), frame_every, parse ? "pread and parse" : "pread only",
      loop.ticks, rate_hz, loop.us_per_tick);
  for (int fd : rails) ::close(fd);
  for (int fd : others) ::close(fd);
  return 0;
}
