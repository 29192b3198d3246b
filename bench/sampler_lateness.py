#!/usr/bin/env python3
"""How late frames come beside busy processes, with the sampler lifted 10 nice
levels (the default) and real-time (daemon.realtime = true): edgemond at
100 Hz frames on a simulated board, at the packaged unit's Nice (-5), beside
N busy loops at nice 0 (each a shell spinning on one CPU) for --seconds.
Prints, per run, the frames sampled and the deadlines missed (/metrics), and
the intervals between stored frames' stamps (median, 99th and 99.9th
percentile, largest): an interval of 10 ms + x holds a frame up to x ms late.
Runs alternate between the two settings. Needs root (the nice and the
real-time class); as another user both settings run at the daemon's
priority, which the output says.

  bench/sampler_lateness.py BUILD_DIR [--seconds 20] [--board agx-orin]
                            [--hogs 4,8] [--rounds 2]
"""
import csv
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import board_args, edgemond_on, simulated_board  # noqa: E402
from harness import free_port, sampler_counts  # noqa: E402

PERIOD_MS = 10


def frame_stamps(edgemon, target, seconds):
    """The realtime stamps (ms) of the frames of the last `seconds`."""
    q = subprocess.run([edgemon, "--connect", target, "query", "--last", f"{seconds}s",
                        "--channels", "rail/*", "--format", "csv"],
                       capture_output=True, text=True, check=True)
    rows = list(csv.reader(io.StringIO(q.stdout)))
    col = rows[0].index("realtime_ns")
    return [int(r[col]) / 1e6 for r in rows[1:] if r and r[col]]


def one_run(a, root, tmp, realtime, hogs):
    run_dir = tempfile.mkdtemp(prefix="edgemon-late-", dir="/dev/shm" if os.path.isdir(
        "/dev/shm") else None)
    store_dir = tempfile.mkdtemp(dir=tmp)
    cfg = os.path.join(store_dir, "edgemond.toml")
    with open(cfg, "w") as f:
        f.write(f"[daemon]\nrealtime = {'true' if realtime else 'false'}\n"
                "[store]\ncommit_interval_ms = 1000\n")
    port, target = free_port(), "unix:" + os.path.join(run_dir, "e.sock")
    edgemon = os.path.join(a.build, "client", "cli", "edgemon")
    log = os.path.join(store_dir, "edgemond.log")
    busy = []
    try:
        with open(log, "w") as lf, edgemond_on(
                os.path.join(a.build, "daemon", "edgemond"), edgemon, root, store_dir, target, lf,
                interval_ms=PERIOD_MS, log_level="info",
                extra=["--config", cfg, "--metrics-listen", f"127.0.0.1:{port}"],
                prefix=["nice", "-n", "-5"] if os.geteuid() == 0 else []):
            time.sleep(1)
            s0, m0 = sampler_counts(port)
            busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(hogs)]
            time.sleep(a.seconds)
            s1, m1 = sampler_counts(port)
            for b in busy:
                b.kill()
                b.wait()
            busy = []
            stamps = frame_stamps(edgemon, target, int(a.seconds))
    finally:
        for b in busy:
            b.kill()
            b.wait()
        shutil.rmtree(run_dir, ignore_errors=True)
    with open(log) as f:
        how = [line.split("sampler: ", 1)[1].strip() for line in f if "sampler: " in line]
    gaps = sorted(b - c for c, b in zip(stamps, stamps[1:]))
    if not gaps:
        raise RuntimeError("no frames stored")

    def pct(p):
        return gaps[min(len(gaps) - 1, int(p * len(gaps)))]

    print(f"  {'real-time' if realtime else 'lifted   '}, {hogs} busy: {s1 - s0} frames, "
          f"{m1 - m0} deadlines missed; intervals median {statistics.median(gaps):.2f} ms, "
          f"p99 {pct(0.99):.2f}, p99.9 {pct(0.999):.2f}, largest {gaps[-1]:.2f} ms "
          f"({how[-1] if how else 'no priority line'})", flush=True)
    return m1 - m0, gaps[-1]


def main():
    ap = board_args()
    ap.set_defaults(seconds=20)
    ap.add_argument("--hogs", default="4,8", help="busy loops beside the daemon, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    hogs = [int(h) for h in a.hogs.split(",")]
    print(f"board {a.board} (simulated), 100 Hz frames, {a.seconds:.0f} s per run, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start"
          + ("" if os.geteuid() == 0 else "; not root: neither lifted nor real-time"))
    worst = {}
    with tempfile.TemporaryDirectory(prefix="edgemon-late-") as tmp, \
            simulated_board(a.build, a.board, tmp) as root:
        for n in hogs:
            for rnd in range(a.rounds):
                for realtime in ((False, True) if rnd % 2 == 0 else (True, False)):
                    missed, largest = one_run(a, root, tmp, realtime, n)
                    m, g = worst.get((n, realtime), (0, 0.0))
                    worst[(n, realtime)] = (m + missed, max(g, largest))
    print("over all runs:")
    for (n, realtime), (missed, largest) in sorted(worst.items()):
        print(f"  {'real-time' if realtime else 'lifted   '}, {n} busy: {missed} deadlines "
              f"missed, largest interval {largest:.2f} ms")


if __name__ == "__main__":
    main()
