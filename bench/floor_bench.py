#!/usr/bin/env python3
"""CPU of edgemond beside two floors, both bench/floor_sampler, which wakes on
absolute deadlines and preads the distinct files the collectors read: one
does nothing else (pread only), the other also turns each file's text into
numbers (strtoll/strtod over every token into a reused array: pread and
parse, the floor as the performance target defines it). Two settings, each on the same simulated AGX Orin tree
(edgemon-sim), daemon then floor:
  * 100 Hz frames (sampling, storing, publishing to the watch hub and
    /metrics), rails only with frames;
  * 1 Hz frames with the rails at 100 Hz (the energy path between frames),
    the daemon's default shape; the floor reads the rail files every tick
    and the rest once a second.
CPU comes from /proc/PID/task/*/schedstat over the same steady-state window,
as microseconds of CPU per 10 ms tick. --edgemond measures another build of
the daemon (an older one, side by side) against the same floors.

  bench/floor_bench.py BUILD_DIR [--seconds 30] [--board agx-orin] [--edgemond PATH]
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import board_args, cpu_over, simulated_board  # noqa: E402
from harness import free_port  # noqa: E402

RATE_HZ = 100
WARMUP_S = 2


def measure(cmd, seconds):
    """CPU ns per 1/RATE_HZ tick of a process over `seconds` after a warm-up."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cpu, wall = cpu_over(p.pid, WARMUP_S, seconds)
    finally:
        p.terminate()
        p.wait(timeout=30)
    return cpu / (wall * RATE_HZ)


def main():
    ap = board_args()
    ap.add_argument("--edgemond", help="the daemon to measure (default: BUILD_DIR's)")
    a = ap.parse_args()
    edgemond = a.edgemond or os.path.join(a.build, "daemon", "edgemond")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="edgemon-floor-") as tmp, \
            simulated_board(a.build, a.board, tmp) as root:
        cfg = os.path.join(tmp, "edgemond.toml")
        with open(cfg, "w") as f:
            f.write("[store]\ncommit_interval_ms = 1000\n")
        print(f"board {a.board} (simulated), {a.seconds:.0f} s each, CPU from schedstat, "
              f"load average {load[0]:.2f} at the start")
        print(f"edgemond: {edgemond}")
        for label, interval_ms, energy_hz, frame_every in (
                ("100 Hz frames", 1000 // RATE_HZ, 0, 1),
                ("1 Hz frames, rails at 100 Hz", 1000, RATE_HZ, RATE_HZ)):
            db = os.path.join(tmp, f"floor-{interval_ms}.db")
            daemon = measure([edgemond, "--root", root,
                              "--db", db, "--config", cfg,
                              "--listen", "unix:" + os.path.join(tmp, "e.sock"),
                              "--metrics-listen", f"127.0.0.1:{free_port()}",
                              "--interval-ms", str(interval_ms),
                              "--energy-rate-hz", str(energy_hz),
                              "--log-level", "warn"], a.seconds)
            floors = [(what, measure([os.path.join(a.build, "bench", "floor_sampler"),
                                      "--root", root, "--rate-hz", str(RATE_HZ),
                                      "--frame-every", str(frame_every),
                                      "--seconds", str(a.seconds + WARMUP_S + 5), *extra],
                                     a.seconds))
                      for what, extra in (("pread only", []), ("pread and parse", ["--parse"]))]
            print(f"{label}:")
            print(f"  edgemond              {daemon / 1e3:8.1f} us CPU per 10 ms tick")
            for what, floor in floors:
                print(f"  floor, {what:15} {floor / 1e3:8.1f} us CPU per 10 ms tick "
                      f"(absolute deadline)")
            for what, floor in floors:
                print(f"  ratio to {what:13} {daemon / floor:8.2f}x (target: within 1.5x)")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
