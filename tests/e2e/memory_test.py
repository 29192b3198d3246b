#!/usr/bin/python3
"""Memory returns after load: a real edgemond on the fixture AGX Orin with
history in its store takes a burst of concurrent raw Queries, then a flood of
Watch streams (more than max_streams); after each, its RSS comes back within
10 % of the idle figure measured before the loads (after a warm-up with one
small Query and one Watch, which pages in their code). RSS is polled until it
is back or a generous deadline passes (no timing is asserted). Before the
heap was trimmed after load, RSS stayed at twice idle after the Queries.

  memory_test.py --edgemond B --protoc P --plugin G --proto-dir proto --fixtures F
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import memory_load as ml
from harness import stop_process

HISTORY_FRAMES = 1500
QUERIES = 30
STREAMS = 300
HOLD_S = 8
WITHIN = 0.10
DEADLINE_S = int(os.environ.get("MEMORY_TEST_DEADLINE_S", "120"))


def main():
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--protoc", "--plugin", "--proto-dir", "--fixtures"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="edgemon-memory-") as tmp:
        grpc, pb, rpc = ml.stubs(os.path.join(tmp, "stubs"), args.protoc, args.plugin,
                                 args.proto_dir)
        root = os.path.join(args.fixtures, "agx-orin")
        db = os.path.join(tmp, "e.db")
        n = ml.history(args.edgemond, root, db, tmp, frames=HISTORY_FRAMES)
        if n < HISTORY_FRAMES:
            print(f"FAIL only {n} frames of history were stored")
            return 1
        sock = os.path.join(tmp, "api.sock")
        log = open(os.path.join(tmp, "edgemond.log"), "w")
        d = subprocess.Popen([args.edgemond, "--root", root, "--db", db, "--listen",
                              "unix:" + sock, "--log-level", "debug"],
                             stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.time() + 20
            while not os.path.exists(sock) and time.time() < deadline:
                time.sleep(0.05)
            target = "unix:" + sock
            # Warm-up: first frames, and one small Query and one Watch, so that
            # the code they run is paged in before the idle figure (a one-time
            # cost of any client, not memory a load leaves behind).
            ml.query_burst(grpc, pb, rpc, target, 1, seconds=5)
            ml.stream_burst(grpc, pb, rpc, target, 1, 2)
            time.sleep(12)  # a heap-trim tick after the warm-up
            idle = ml.rss_kib(d.pid)  # both loads are held to this figure
            for name in ("queries", "streams"):
                peak = ml.Peak(d.pid)
                if name == "queries":
                    frames, failed = ml.query_burst(grpc, pb, rpc, target, QUERIES)
                    what = f"{QUERIES} concurrent Queries: {frames} frames, {failed} failed"
                    if failed or frames < QUERIES * HISTORY_FRAMES:
                        failures.append(what)
                else:
                    ok, refused = ml.stream_burst(grpc, pb, rpc, target, STREAMS, HOLD_S)
                    what = f"{STREAMS} Watch streams: {ok} received frames, {refused} refused"
                    if ok == 0:
                        failures.append(what)
                top = peak.stop()
                after, waited = ml.settle(d.pid, idle, WITHIN, DEADLINE_S)
                print(f"{what}; RSS idle {idle} KiB, peak {top} KiB, {after} KiB "
                      f"{waited:.0f} s after the load", flush=True)
                if top < idle * (1 + 2 * WITHIN):
                    print(f"note: the {name} load raised RSS by less than {2 * WITHIN:.0%}")
                if after > idle * (1 + WITHIN):
                    failures.append(f"after the {name}: RSS {after} KiB is more than "
                                    f"{WITHIN:.0%} over idle ({idle} KiB) after {waited:.0f} s")
            if d.poll() is not None:
                failures.append(f"edgemond exited with {d.returncode}")
        finally:
            rc = stop_process(d)
            log.close()
        if rc != 0:
            failures.append(f"edgemond exit status {rc}")
        if failures:
            with open(os.path.join(tmp, "edgemond.log")) as f:
                print(f.read()[-3000:])
    for f in failures:
        print("FAIL", f)
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
