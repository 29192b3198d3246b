// edgemon-sim: a simulated board for demos and end-to-end tests. Copies a
// fixture board into DIR and keeps changing its values along known waveforms
// until killed (SIGINT/SIGTERM: exit 0) or --duration elapses:
//
//   edgemon-sim --board orin-nano --out /tmp/board --rate-hz 50 &
//   edgemon-probe --root /tmp/board --watch
//
// DIR/.edgemon-sim.json (written once the first values are in place) holds
// the start time and every waveform, so a test can compute the exact energy
// of any window (see daemon/sim/simulator.h).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "daemon/sim/simulator.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;  // set by SIGINT/SIGTERM only
void OnSignal(int) {
  g_stop = 1;
}

// The fixture directories searched for a board name, in order.
std::vector<std::string> FixtureDirs(const std::string& flag) {
  std::vector<std::string> dirs;
  if (!flag.empty()) return {flag};
  if (const char* env = std::getenv("EDGEMON_FIXTURES_DIR"); env != nullptr && *env != '\0') {
    dirs.emplace_back(env);
  }
  dirs.emplace_back(EDGEMON_SIM_SOURCE_FIXTURES);
  dirs.emplace_back(EDGEMON_SIM_INSTALLED_FIXTURES);
  return dirs;
}

// A Jetson board (one with an nvpmodel.conf) gets the simulated nvpmodel and
// jetson_clocks (daemon/sim/board_tools: they act on the files of the root
// they sit in) as <root>/usr/sbin/nvpmodel and <root>/usr/bin/jetson_clocks,
// unless the fixture brings its own. UNAVAILABLE when a copy fails.
edgemon::Status InstallBoardTools(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(root / "etc/nvpmodel.conf", ec)) return edgemon::Status::Ok();
  for (const char* dir : {EDGEMON_SIM_SOURCE_TOOLS, EDGEMON_SIM_INSTALLED_TOOLS}) {
    if (!fs::exists(fs::path(dir) / "nvpmodel", ec)) continue;
    for (auto [name, to] :
         {std::pair{"nvpmodel", "usr/sbin"}, std::pair{"jetson_clocks", "usr/bin"}}) {
      fs::path dst = root / to / name;
      if (fs::exists(dst, ec)) continue;
      fs::create_directories(dst.parent_path(), ec);
      fs::copy_file(fs::path(dir) / name, dst, ec);
      if (ec) {
        return edgemon::Status::Unavailable("cannot install " + dst.string() + ": " + ec.message());
      }
    }
    return edgemon::Status::Ok();
  }
  return edgemon::Status::Ok();
}

bool IsBoard(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir / "sys", ec) ||
         std::filesystem::is_directory(dir / "proc", ec);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edgemon-sim: a fixture board whose sensor values change along known waveforms"};
  std::string board;
  std::string out;
  std::string fixtures;
  double rate_hz = 20;
  double duration_s = 0;
  double period_s = 10;
  uint64_t seed = 1;
  bool list = false;
  bool quiet = false;
  app.add_option("--board", board,
                 "Fixture board name (agx-orin, orin-nano, xavier-nx, tx2, jetson-nano, "
                 "x86-laptop, no-sensors) or a path to a board directory");
  app.add_option("--out", out,
                 "Directory to materialise the board into (absent, empty, or an earlier "
                 "edgemon-sim output)");
  app.add_option("--rate-hz", rate_hz, "Value updates per second")->check(CLI::Range(0.1, 1000.0));
  app.add_option("--seed", seed, "Seed of the waveforms' amplitudes and phases");
  app.add_option("--duration", duration_s, "Stop after this many seconds (0: run until killed)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--period-s", period_s, "Period of the power and load waveforms (seconds)")
      ->check(CLI::Range(0.01, 86400.0));
  app.add_option("--fixtures", fixtures,
                 "Directory of fixture boards (default: $EDGEMON_FIXTURES_DIR, then the "
                 "source tree's tests/fixtures, then the installed data directory)");
  app.add_flag("--list-boards", list, "List the fixture boards found and exit");
  app.add_flag("-q,--quiet", quiet, "Print nothing but errors");
  CLI11_PARSE(app, argc, argv);

  namespace fs = std::filesystem;
  if (list) {
    for (const auto& dir : FixtureDirs(fixtures)) {
      std::error_code ec;
      std::vector<std::string> names;
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (IsBoard(e.path())) names.push_back(e.path().filename().string());
      }
      if (names.empty()) continue;
      std::sort(names.begin(), names.end());
      std::printf("%s:\n", dir.c_str());
      for (const auto& n : names) std::printf("  %s\n", n.c_str());
      return 0;
    }
    std::fprintf(stderr, "edgemon-sim: no fixture boards found\n");
    return 1;
  }
  if (board.empty() || out.empty()) {
    std::fprintf(stderr, "edgemon-sim: --board and --out are required\n%s", app.help().c_str());
    return 2;
  }

  std::string source;
  if (board.find('/') != std::string::npos) {
    source = board;
  } else {
    for (const auto& dir : FixtureDirs(fixtures)) {
      if (IsBoard(fs::path(dir) / board)) {
        source = (fs::path(dir) / board).string();
        break;
      }
    }
  }
  if (source.empty() || !IsBoard(source)) {
    std::fprintf(stderr, "edgemon-sim: no fixture board '%s' (try --list-boards)\n", board.c_str());
    return 2;
  }

  if (edgemon::Status made = edgemon::sim::Simulator::Materialise(source, out); !made.ok()) {
    std::fprintf(stderr, "edgemon-sim: %s\n", made.message().c_str());
    return 1;
  }
  if (edgemon::Status tools = InstallBoardTools(out); !tools.ok()) {
    std::fprintf(stderr, "edgemon-sim: %s\n", tools.message().c_str());
    return 1;
  }
  edgemon::sim::Simulator::Options options;
  options.board = fs::path(source).filename().string();
  options.seed = seed;
  options.period_s = period_s;
  auto opened = edgemon::sim::Simulator::Open(out, options);
  if (!opened.ok()) {
    std::fprintf(stderr, "edgemon-sim: %s\n", opened.status().message().c_str());
    return 1;
  }
  std::unique_ptr<edgemon::sim::Simulator> sim = std::move(opened).value();

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the sleep returns EINTR at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  edgemon::sim::Simulator::RunOptions run;
  run.rate_hz = rate_hz;
  run.duration_s = duration_s;
  run.on_ready = [&] {
    if (quiet) return;
    const auto& m = sim->model();
    std::printf(
        "edgemon-sim: %s in %s at %g Hz: %zu rails, %zu cores, %zu temperatures, %zu files; "
        "sidecar %s\n",
        options.board.c_str(), sim->root().c_str(), rate_hz, m.rails.size(), m.cpus.size(),
        m.temps.size(), sim->open_files(), sim->SidecarPath().c_str());
    std::fflush(stdout);
  };
  edgemon::sim::Simulator::RunStats stats;
  if (edgemon::Status ran = sim->Run(run, &g_stop, &stats); !ran.ok()) {
    std::fprintf(stderr, "edgemon-sim: %s\n", ran.message().c_str());
    return 1;
  }
  if (!quiet) {
    std::printf("edgemon-sim: %llu ticks, %llu overruns, %llu write errors\n",
                static_cast<unsigned long long>(stats.ticks),
                static_cast<unsigned long long>(stats.overruns),
                static_cast<unsigned long long>(sim->write_errors()));
  }
  return sim->write_errors() == 0 ? 0 : 1;
}
