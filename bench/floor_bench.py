#!/usr/bin/env python3
"""CPU per frame of edgemond at 100 Hz (sampling, storing, publishing to the
watch hub and /metrics) beside the floor: bench/floor_sampler, which wakes on
absolute deadlines at the same rate and preads the same files the collectors
read, and nothing else. Both run on the same simulated AGX Orin tree
(edgemon-sim), one after the other; CPU comes from /proc/PID/task/*/schedstat
over the same steady-state window.

  bench/floor_bench.py BUILD_DIR [--seconds 30] [--board agx-orin]
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
    a = board_args().parse_args()
    with tempfile.TemporaryDirectory(prefix="edgemon-floor-") as tmp, \
            simulated_board(a.build, a.board, tmp) as root:
        cfg = os.path.join(tmp, "edgemond.toml")
        with open(cfg, "w") as f:
            f.write("[store]\ncommit_interval_ms = 1000\n")
        daemon = measure([os.path.join(a.build, "daemon", "edgemond"), "--root", root,
                          "--db", os.path.join(tmp, "floor.db"), "--config", cfg,
                          "--listen", "unix:" + os.path.join(tmp, "e.sock"),
                          "--metrics-listen", f"127.0.0.1:{free_port()}",
                          "--interval-ms", str(1000 // RATE_HZ), "--energy-rate-hz", "0",
                          "--log-level", "warn"], a.seconds)
        floor = measure([os.path.join(a.build, "bench", "floor_sampler"), "--root", root,
                         "--rate-hz", str(RATE_HZ),
                         "--seconds", str(a.seconds + WARMUP_S + 5)], a.seconds)
    print(f"board {a.board} (simulated), {RATE_HZ} Hz, {a.seconds:.0f} s each, "
          f"CPU from schedstat")
    print(f"edgemond  {daemon / 1e3:8.1f} us CPU per frame (sample, store, publish)")
    print(f"floor     {floor / 1e3:8.1f} us CPU per tick (absolute deadline, pread only)")
    print(f"ratio     {daemon / floor:8.2f}x (target: within 1.5x)")


if __name__ == "__main__":
    main()
