#!/usr/bin/python3
"""Wall time of `edgemon record -- true` against a simulated board.

Starts edgemon-sim (orin-nano) and edgemond at the default 1 s frame period
and 100 Hz rail rate on a unix socket in a temp directory, then runs
`edgemon record -- true` N times and prints the wall time per run (p50, p90,
max) and whether every run reported energy. The window closes from the
daemon's live counters, so no run waits for a frame after the command.

  bench/record_bench.py --edgemon build/client/cli/edgemon \\
      --edgemond build/daemon/edgemond --sim build/daemon/sim/edgemon-sim \\
      --fixtures tests/fixtures [-n 50]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import edgemond_on, start_sim, stop_process  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--edgemon", "--edgemond", "--sim", "--fixtures"):
        ap.add_argument(flag, required=True)
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--energy-rate-hz", type=int, default=100)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="edgemon-record-bench-")
    sim = None
    try:
        root = os.path.join(tmp, "root")
        sock = os.path.join(tmp, "api.sock")
        log = open(os.path.join(tmp, "log"), "w")
        sim, _ = start_sim(args.sim, "orin-nano", root, args.fixtures, log)
        with edgemond_on(args.edgemond, args.edgemon, root, tmp, "unix:" + sock, log,
                         args.interval_ms, args.energy_rate_hz):
            bench(args, tmp, ["--connect", "unix:" + sock])
    finally:
        stop_process(sim)
        shutil.rmtree(tmp, ignore_errors=True)


def bench(args, tmp, target):
    def record(*extra):
        t0 = time.perf_counter()
        r = subprocess.run([args.edgemon, *target, "record", *extra, "--", "true"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"record failed: {r.stderr}")
        return (time.perf_counter() - t0) * 1000
    walls = sorted(record() for _ in range(args.n))
    # A few with the bundle, to check each reports energy on every rail.
    out, with_energy, checked = os.path.join(tmp, "run"), 0, min(args.n, 5)
    for _ in range(checked):
        record("--out", out)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        with_energy += bool(s["rails"]) and all(x["energy_j"] > 0 for x in s["rails"])
    print(f"edgemon record -- true, {args.n} runs, {args.interval_ms} ms frames, "
          f"{args.energy_rate_hz} Hz rails (orin-nano simulator, unix socket):")
    print(f"  wall p50 {walls[len(walls) // 2]:.1f} ms  p90 {walls[len(walls) * 9 // 10]:.1f} ms"
          f"  max {walls[-1]:.1f} ms")
    print(f"  {with_energy}/{checked} runs with --out reported energy on every rail")


if __name__ == "__main__":
    main()
