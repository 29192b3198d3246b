#!/usr/bin/python3
"""edgemond's memory after a load ends: a simulated AGX Orin (edgemon-sim), an
hour of 1 Hz history in the store (3600 frames written at 100 Hz), then a
daemon at the default 1 s frames, started afresh for each load:

  (a) 50 concurrent one-hour Queries (raw frames, all channels);
  (b) 300 concurrent Watch streams (every frame, all channels) for 20 s
      (the daemon takes 256, max_streams, and refuses the rest).

Prints RSS idle (after a warm-up), at the peak of the load, and one minute
after it ended, and when RSS first came back within 10 % of idle.

  bench/memory_after_load.py --build build [--queries 50] [--streams 300]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import memory_load as ml  # noqa: E402
from harness import start_sim, stop_process  # noqa: E402


def daemon(edgemond, root, db, sock):
    p = subprocess.Popen([edgemond, "--root", root, "--db", db, "--listen", "unix:" + sock,
                          "--log-level", "warn"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return p


def after(pid, idle, t_end):
    """RSS one minute after t_end, and when it was first within 10 % of idle."""
    back = None
    while time.time() < t_end + 60:
        kib = ml.rss_kib(pid)
        if back is None and kib <= idle * 1.10:
            back = time.time() - t_end
        time.sleep(1)
    return ml.rss_kib(pid), back


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--streams", type=int, default=300)
    ap.add_argument("--hold", type=float, default=20, help="seconds the streams stay open")
    ap.add_argument("--warmup", type=float, default=20)
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    edgemond = os.path.join(b, "daemon", "edgemond")
    fixtures = os.path.join(HERE, "..", "tests", "fixtures")
    tmp = tempfile.mkdtemp(prefix="edgemon-memory-")
    sim = None
    try:
        grpc, pb, rpc = ml.stubs(os.path.join(tmp, "stubs"), shutil.which("protoc"),
                                 shutil.which("grpc_python_plugin"),
                                 os.path.join(HERE, "..", "proto"))
        root = os.path.join(tmp, "agx-orin")
        sim, _ = start_sim(os.path.join(b, "daemon", "sim", "edgemon-sim"), "agx-orin", root,
                           fixtures, subprocess.DEVNULL, extra=["--rate-hz", "20"])
        db = os.path.join(tmp, "edgemon.db")
        n = ml.history(edgemond, root, db, tmp)
        print(f"store: {n} frames (an hour of 1 Hz history, written at 100 Hz)")
        print(f"{'load':44} {'idle':>9} {'peak':>9} {'after 60 s':>11} {'back within 10 %':>17}")
        sock = os.path.join(tmp, "api.sock")
        target = "unix:" + sock
        for name in ("queries", "streams"):
            d = daemon(edgemond, root, db, sock)
            try:
                time.sleep(a.warmup)
                idle = ml.rss_kib(d.pid)
                peak = ml.Peak(d.pid)
                if name == "queries":
                    frames, failed = ml.query_burst(grpc, pb, rpc, target, a.queries)
                    label = f"{a.queries} concurrent 1 h Queries"
                    detail = f"{frames} frames received, {failed} calls failed"
                else:
                    ok, refused = ml.stream_burst(grpc, pb, rpc, target, a.streams, a.hold)
                    label = f"{a.streams} Watch streams for {a.hold:g} s"
                    detail = f"{ok} streams received frames, {refused} refused"
                t_end = time.time()
                top = peak.stop()
                rss60, back = after(d.pid, idle, t_end)
                back_s = f"{back:.0f} s" if back is not None else "no"
                print(f"{label:44} {idle / 1024:5.1f} MiB {top / 1024:5.1f} MiB "
                      f"{rss60 / 1024:7.1f} MiB {back_s:>17}   ({detail}; "
                      f"after/idle {rss60 / idle:.2f})", flush=True)
            finally:
                stop_process(d)
            for s in (sock,):
                if os.path.exists(s):
                    os.unlink(s)
    finally:
        stop_process(sim)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
