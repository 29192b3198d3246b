// edgemon-probe: discovers every source under a root, samples it, and
// prints what it found. A debugging aid for the collectors and the quickest
// way to see what edgemon reads on a board:
//
//   edgemon-probe                          this machine, one table
//   edgemon-probe --root tests/fixtures/agx-orin --json
//   edgemon-probe --watch --interval-ms 500
#include <time.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "edgemon/render.h"

namespace {

int64_t Now(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void SleepUntil(int64_t deadline_ns) {
  timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000),
              static_cast<long>(deadline_ns % 1'000'000'000)};
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

volatile std::sig_atomic_t g_stop = 0;  // set by SIGINT/SIGTERM only
void OnSignal(int) {
  g_stop = 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edgemon-probe: discover and sample every sensor edgemon can read"};
  std::string root = "/";
  bool json = false;
  bool watch = false;
  int interval_ms = 1000;
  int warmup_ms = 250;
  int64_t count = 0;
  std::string nvml = "auto";
  app.add_option("--root", root,
                 "Root of the monitored system (prefixes /sys, /proc, /etc, /var/lib)")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--json", json, "Print JSON (one object; one line per frame with --watch)");
  app.add_flag("--watch", watch, "Keep sampling and print one line per interval");
  app.add_option("--interval-ms", interval_ms, "Sampling interval for --watch")
      ->check(CLI::Range(10, 3'600'000));
  app.add_option("--warmup-ms", warmup_ms,
                 "Delay between the two samples of a one-shot probe (CPU load needs two)")
      ->check(CLI::Range(0, 60'000));
  app.add_option("--count", count, "Stop --watch after this many frames (0: run until Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--nvml", nvml,
                 "Load NVIDIA NVML for discrete GPUs: auto (only for --root /), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  CLI11_PARSE(app, argc, argv);

  edgemon::RootedSysFs fs(root);
  edgemon::CollectOptions options;
  options.nvml = nvml == "on" || (nvml == "auto" && fs.root().empty());
  edgemon::Collection collection(
      fs, edgemon::MakeDefaultCollectors(options), options,
      [](const std::string& msg) { std::fprintf(stderr, "edgemon-probe: %s\n", msg.c_str()); });
  collection.Discover();

  edgemon::Frame frame;
  auto sample = [&](uint64_t seq) {
    frame.seq = seq;
    frame.boottime_ns = Now(CLOCK_BOOTTIME);
    frame.realtime_ns = Now(CLOCK_REALTIME);
    collection.Sample(frame.boottime_ns, frame);
  };

  if (!watch) {
    sample(0);
    if (warmup_ms > 0) {
      SleepUntil(Now(CLOCK_MONOTONIC) + int64_t{warmup_ms} * 1'000'000);
      sample(1);
    }
    if (json) {
      std::cout << edgemon::ToJson(collection.inventory(), frame, collection.error_counts()).dump(2)
                << "\n";
    } else {
      std::cout << edgemon::RenderTable(collection.inventory(), frame, collection.error_counts());
    }
    return 0;
  }

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const int64_t period = int64_t{interval_ms} * 1'000'000;
  int64_t next = Now(CLOCK_MONOTONIC);
  for (uint64_t seq = 0; !g_stop && (count == 0 || seq < static_cast<uint64_t>(count)); ++seq) {
    sample(seq);
    if (json) {
      std::cout << edgemon::ToJson(collection.inventory(), frame, collection.error_counts()).dump()
                << std::endl;
    } else {
      std::cout << edgemon::RenderLine(collection.inventory(), frame) << std::endl;
    }
    if (seq % 10 == 9) collection.CheckTopology();
    next += period;  // absolute deadlines: no drift, missed ticks are skipped
    int64_t now = Now(CLOCK_MONOTONIC);
    while (next <= now) next += period;
    SleepUntil(next);
  }
  return 0;
}
