#!/usr/bin/python3
"""The release bundle beside the normal (Debian package) build, in one run:
bundle size per architecture (compressed and unpacked), edgemond's RSS and
CPU per frame on a simulated AGX Orin (1 Hz frames, energy at 100 Hz), and
the latency of `edgemon now` (a whole client process: start, connect, one
call, print). The bundle runs natively, so give the host's architecture's
tarball first.

  bench/release_bench.py --build build dist/edgemon-V-linux-x86_64.tar.gz [more tarballs]
      [--seconds 20] [--runs 30]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import cpu_over, rss_kib  # noqa: E402 (one way to read CPU and RSS)


def sizes(tarball):
    with tarfile.open(tarball) as t:
        unpacked = sum(m.size for m in t.getmembers() if m.isfile())
    return os.path.getsize(tarball), unpacked


def daemon_cost(edgemond, root, tmp, name, seconds):
    sock = os.path.join(tmp, f"{name}.sock")
    p = subprocess.Popen([edgemond, "--root", root, "--db", os.path.join(tmp, f"{name}.db"),
                          "--listen", "unix:" + sock, "--interval-ms", "1000",
                          "--energy-rate-hz", "100", "--log-level", "warn"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu, wall = cpu_over(p.pid, 3, seconds)
    rss = rss_kib(p.pid)
    return p, sock, cpu / 1e3 / wall, rss  # us of CPU per 1 s frame


def now_latency_ms(edgemon, sock, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([edgemon, "--connect", "unix:" + sock, "now"], check=True,
                       stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tarballs", nargs="+")
    ap.add_argument("--build", required=True, help="the normal build (daemon/edgemond, client/cli/edgemon)")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()

    print(f"{'bundle':44} {'compressed':>11} {'unpacked':>10}")
    for t in a.tarballs:
        c, u = sizes(t)
        print(f"{os.path.basename(t):44} {c / 2**20:8.2f} MiB {u / 2**20:7.2f} MiB")

    with tempfile.TemporaryDirectory(prefix="edgemon-release-bench-") as tmp:
        with tarfile.open(a.tarballs[0]) as t:
            top = t.getnames()[0].split("/")[0]
            t.extractall(tmp)
        bundle = os.path.join(tmp, top, "bin")
        root = os.path.join(tmp, "agx-orin")
        sim = subprocess.Popen([os.path.join(bundle, "edgemon-sim"), "--board", "agx-orin", "--out", root,
                                "--fixtures", os.path.join(tmp, top, "share", "edgemon", "fixtures"),
                                "--rate-hz", "20", "-q"])
        try:
            while not os.path.exists(os.path.join(root, ".edgemon-sim.json")):
                time.sleep(0.05)
            print(f"\nedgemond on a simulated AGX Orin, 1 Hz frames, energy at 100 Hz, {a.seconds:.0f} s each")
            print(f"{'build':34} {'CPU/frame':>11} {'RSS':>9} {'now (median)':>13} {'now (min)':>10}")
            for name, edgemond, edgemon in (
                    ("release bundle (static)", os.path.join(bundle, "edgemond"), os.path.join(bundle, "edgemon")),
                    ("Debian package build (shared)", os.path.join(a.build, "daemon", "edgemond"),
                     os.path.join(a.build, "client", "cli", "edgemon"))):
                p, sock, per_frame_us, rss = daemon_cost(edgemond, root, tmp, name.split()[0], a.seconds)
                try:
                    med, best = now_latency_ms(edgemon, sock, a.runs)
                finally:
                    p.terminate()
                    p.wait(timeout=40)
                print(f"{name:34} {per_frame_us:8.0f} us {rss / 1024:6.1f} MiB {med:10.1f} ms {best:7.1f} ms")
        finally:
            sim.terminate()
            sim.wait()


if __name__ == "__main__":
    main()
