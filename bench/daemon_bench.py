#!/usr/bin/env python3
"""edgemond's cost on a simulated AGX Orin (edgemon-sim): CPU per stored frame
at 1 Hz, CPU share of one core at 100 Hz and 1 kHz energy rates, RSS after an
hour of history, and bytes on disk per frame. CPU comes from
/proc/PID/task/*/schedstat (nanoseconds on CPU, all threads), RSS from /proc/PID/status.

  bench/daemon_bench.py BUILD_DIR [--seconds 30] [--board agx-orin]
"""
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import board_args, cpu_over, rss_kib, simulated_board  # noqa: E402


def run(build, root, tmp, interval_ms, energy_hz, seconds, name):
    db = os.path.join(tmp, f"{name}.db")
    cfg = os.path.join(tmp, f"{name}.toml")
    with open(cfg, "w") as f:
        f.write("[store]\ncommit_interval_ms = 5000\n")
    p = subprocess.Popen([os.path.join(build, "daemon", "edgemond"), "--root", root, "--db", db,
                          "--config", cfg, "--interval-ms", str(interval_ms),
                          "--energy-rate-hz", str(energy_hz), "--log-level", "warn"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu, wall = cpu_over(p.pid, 2, seconds)
    rss = rss_kib(p.pid)
    p.terminate()
    p.wait(timeout=30)
    con = sqlite3.connect(db)
    frames = con.execute("SELECT count(*) FROM frames").fetchone()[0]
    con.close()
    size = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    share = cpu / (wall * 1e9)
    per_frame_us = cpu / 1e3 / (wall * 1000 / interval_ms)
    return share, per_frame_us, rss, frames, size


def main():
    a = board_args().parse_args()
    with tempfile.TemporaryDirectory(prefix="edgemon-bench-") as tmp, \
            simulated_board(a.build, a.board, tmp, log=None) as root:
        print(f"board {a.board} (simulated), {a.seconds:.0f} s per run, CPU from schedstat\n")
        print(f"{'run':42} {'core share':>10} {'CPU/frame':>11} {'RSS':>9}")
        for name, interval, energy in (("1 Hz frames, rails with frames", 1000, 0),
                                       ("1 Hz frames, energy at 100 Hz", 1000, 100),
                                       ("1 Hz frames, energy at 1 kHz", 1000, 1000)):
            share, per, rss, _, _ = run(a.build, root, tmp, interval, energy, a.seconds,
                                        name.split(",")[1].strip().replace(" ", "_"))
            print(f"{name:42} {share * 100:9.3f}% {per:8.1f} us {rss / 1024:6.1f} MiB")
        # An hour of 1 Hz history, written at 100 frames a second.
        share, per, rss, frames, size = run(a.build, root, tmp, 10, 0, 36, "hour")
        print(f"{'3600 frames (an hour of 1 Hz) at 100 Hz':42} {share * 100:9.3f}% "
              f"{per:8.1f} us {rss / 1024:6.1f} MiB")
        print(f"\nstore after that hour: {frames} frames, {size} bytes with WAL "
              f"= {size / max(frames, 1):.0f} B/frame (file not yet trimmed or vacuumed)")


if __name__ == "__main__":
    main()
