// The floor of a periodic sampler: wakes on absolute deadlines and preads the
// files edgemon's collectors read on a board (found by running the same
// discovery once), and does nothing else: no parsing, no store, no clients.
// bench/floor_bench.py runs it beside edgemond and prints both CPU costs.
//
//   build/bench/floor_sampler --root DIR [--rate-hz 100] [--seconds 30]
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
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

}  // namespace

int main(int argc, char** argv) {
  std::string root;
  double rate_hz = 100, seconds = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--root") root = argv[i + 1];
    if (a == "--rate-hz") rate_hz = std::atof(argv[i + 1]);
    if (a == "--seconds") seconds = std::atof(argv[i + 1]);
  }
  if (root.empty() || rate_hz <= 0 || seconds <= 0) {
    std::fprintf(stderr, "usage: floor_sampler --root DIR [--rate-hz 100] [--seconds 30]\n");
    return 2;
  }
  std::vector<int> fds;
  {
    edgemon::RootedSysFs fs(root);
    edgemon::Collection collection(fs, edgemon::MakeDefaultCollectors({}), {}, nullptr);
    collection.Discover();
    for (const auto& p : fs.OpenPaths()) {
      int fd = ::open((fs.root() + p).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) fds.push_back(fd);
    }
  }
  const int64_t period = static_cast<int64_t>(1e9 / rate_hz);
  std::vector<char> buf(4096);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t start = Ns(now);
  const int64_t end = start + static_cast<int64_t>(seconds * 1e9);
  const int64_t cpu0 = CpuNs();
  long ticks = 0;
  for (int64_t next = start + period; next < end; next += period) {
    timespec at{static_cast<time_t>(next / 1'000'000'000), static_cast<long>(next % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) != 0) {
    }
    for (int fd : fds) {
      if (::pread(fd, buf.data(), buf.size(), 0) < 0) buf[0] = 0;
    }
    ++ticks;
  }
  const int64_t cpu = CpuNs() - cpu0;
  std::printf("floor: %zu files, %ld ticks at %.0f Hz, %.1f us CPU per tick\n", fds.size(), ticks,
              rate_hz, static_cast<double>(cpu) / 1e3 / static_cast<double>(ticks));
  for (int fd : fds) ::close(fd);
  return 0;
}
