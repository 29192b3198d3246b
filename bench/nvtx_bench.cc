// The cost of an NVTX push/pop pair to the annotated application with
// edgemon's injection library attached (what `edgemon record --nvtx` adds
// per range), beside the same calls with no tool attached.
//
//   nvtx_bench [--pairs N] [--threads T] [--library build/client/nvtx/libedgemon_nvtx.so]
//
// Prints ns per pair (the median of 5 rounds of N pairs on each of T
// threads), with no tool (a child process that never sets
// NVTX_INJECTION64_PATH) and with the library (ranges flushed to a file in
// $TMPDIR, removed after). The library must be given (or found beside the
// bench in the build tree).
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

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

double RoundNsPerPair(long pairs, int threads) {
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
  return ns / static_cast<double>(pairs);  // per pair on each thread (threads run in parallel)
}

double Median(long pairs, int threads) {
  RoundNsPerPair(pairs / 10 + 1, threads);  // warm-up: loads the tool, grows the buffers
  std::vector<double> r;
  for (int i = 0; i < 5; ++i) r.push_back(RoundNsPerPair(pairs, threads));
  std::sort(r.begin(), r.end());
  return r[2];
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
    std::printf("no tool:            %8.1f ns per push/pop pair (%ld pairs x %d threads)\n",
                Median(pairs, threads), pairs, threads);
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
  double with = Median(pairs, threads);
  std::printf("libedgemon_nvtx:    %8.1f ns per push/pop pair (%ld pairs x %d threads)\n", with,
              pairs, threads);
  std::error_code ec;
  std::printf("ranges file:        %.1f MB (removed)\n",
              static_cast<double>(fs::file_size(out, ec)) / 1e6);
  fs::remove(out, ec);
  return 0;
}
