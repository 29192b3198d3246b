// The cost of an NVTX push/pop pair to the annotated application with
// edgemon's injection library attached (what `edgemon record --nvtx` adds
// per range), beside the same calls with no tool attached.
//
//   nvtx_bench [--pairs N] [--threads T] [--library build/client/nvtx/libedgemon_nvtx.so]
//
// Prints the CPU time (the process's, per thread) and the wall time per
// pair (medians of 5 rounds of N pairs on each of T threads; CPU time is the
// figure on a busy machine), with no tool (a child process that never sets
// NVTX_INJECTION64_PATH) and with the library (ranges flushed to a file in
// $TMPDIR, removed after). The library must be given (or found beside the
// bench in the build tree).
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Cost {
  double wall_ns = 0, cpu_ns = 0;  // per pair on each thread
};

int64_t CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Wall time per pair, and the process's CPU time per pair and thread (what
// the application pays, also on a machine busy with other work).
Cost Round(long pairs, int threads) {
  const int64_t cpu0 = CpuNs();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([pairs] {
      for (long i = 0; i < pairs; ++i) {
        nvtxRangePushA("infer");
        nvtxRangePop();
      }
    });
  }
  for (auto& t : pool) t.join();
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(CpuNs() - cpu0);
  return {ns / static_cast<double>(pairs),
          cpu / static_cast<double>(pairs) / static_cast<double>(threads)};
}

// The medians of 5 rounds.
Cost Median(long pairs, int threads) {
  Round(pairs / 10 + 1, threads);  // warm-up: loads the tool, grows the buffers
  std::vector<double> wall, cpu;
  for (int i = 0; i < 5; ++i) {
    Cost c = Round(pairs, threads);
    wall.push_back(c.wall_ns);
    cpu.push_back(c.cpu_ns);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[2], cpu[2]};
}

void Print(const char* what, Cost c, long pairs, int threads) {
  std::printf("%-18s %8.1f ns CPU, %8.1f ns wall per push/pop pair (%ld pairs x %d threads)\n",
              what, c.cpu_ns, c.wall_ns, pairs, threads);
}

}  // namespace

int main(int argc, char** argv) {
  long pairs = 200'000;
  int threads = 1;
  std::string library;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--pairs") {
      pairs = std::max(1L, std::atol(argv[i + 1]));
    } else if (a == "--threads") {
      threads = std::clamp(std::atoi(argv[i + 1]), 1, 256);
    } else if (a == "--library") {
      library = argv[i + 1];
    } else {
      std::fprintf(stderr, "nvtx_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  namespace fs = std::filesystem;
  if (library.empty()) {
    std::error_code ec;
    library = (fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "client" /
               "nvtx" / "libedgemon_nvtx.so")
                  .string();
  }
  if (!fs::is_regular_file(library)) {
    std::fprintf(stderr, "nvtx_bench: no injection library at %s (--library PATH)\n",
                 library.c_str());
    return 2;
  }
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {  // no tool: NVTX's own no-op path
    unsetenv("NVTX_INJECTION64_PATH");
    Print("no tool:", Median(pairs, threads), pairs, threads);
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  const char* tmp = std::getenv("TMPDIR");
  std::string out =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/nvtx_bench." + std::to_string(getpid()) + ".tsv";
  setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
  setenv("EDGEMON_NVTX_OUT", out.c_str(), 1);
  Print("libedgemon_nvtx:", Median(pairs, threads), pairs, threads);
  std::error_code ec;
  std::printf("ranges file:        %.1f MB (removed)\n",
              static_cast<double>(fs::file_size(out, ec)) / 1e6);
  fs::remove(out, ec);
  return 0;
}
