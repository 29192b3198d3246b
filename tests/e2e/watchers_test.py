#!/usr/bin/env python3
"""200 concurrent Watch streams against a running edgemond, a quarter of
which never read: the daemon's memory stays bounded and the sampler misses
no deadline (read from the STATUS= line it sends to its notify socket).

  watchers_test.py --edgemond B --protoc P --plugin G --proto-dir proto --fixtures F
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

import interop_test  # stub generation, shared with the interop test
from harness import read_stream, rss_kib

STREAMS = 200
SILENT = 50          # streams that never read a single frame
FRAME_MS = 100


def main():
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--protoc", "--plugin", "--proto-dir", "--fixtures"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    interop_test.ARGS = args
    failures = []
    with tempfile.TemporaryDirectory(prefix="edgemon-watchers-") as tmp:
        m = interop_test.generate_stubs(os.path.join(tmp, "stubs"))
        import grpc
        pb, rpc = m["edgemon_pb2"], m["edgemon_pb2_grpc"]
        notify_path = os.path.join(tmp, "notify.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(0.2)
        sock = os.path.join(tmp, "api.sock")
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        log = open(os.path.join(tmp, "edgemond.log"), "w")
        daemon = subprocess.Popen(
            [args.edgemond, "--root", os.path.join(args.fixtures, "agx-orin"),
             "--db", os.path.join(tmp, "e.db"), "--listen", "unix:" + sock,
             "--interval-ms", str(FRAME_MS), "--energy-rate-hz", "0"],
            stdout=subprocess.DEVNULL, stderr=log, env=env)
        statuses = []

        def drain(seconds):
            end = time.time() + seconds
            while time.time() < end:
                try:
                    msg = notify.recv(4096).decode()
                except socket.timeout:
                    continue
                statuses.extend(l[7:] for l in msg.splitlines() if l.startswith("STATUS="))

        try:
            deadline = time.time() + 20
            while not os.path.exists(sock) and time.time() < deadline:
                time.sleep(0.05)
            channels = [grpc.insecure_channel("unix:" + sock) for _ in range(4)]
            stop = threading.Event()
            received = [0] * STREAMS
            calls = []

            threads = []
            for i in range(STREAMS):
                stub = rpc.TelemetryStub(channels[i % len(channels)])
                silent = i < SILENT
                req = pb.WatchRequest(interval_ms=0 if silent else 300,
                                      channels=[] if silent else ["rail/*", "thermal/*"])
                call = stub.Watch(req)
                calls.append(call)
                if not silent:
                    t = threading.Thread(target=read_stream, args=(call, received, i, stop),
                                         daemon=True)
                    t.start()
                    threads.append(t)
            drain(6)
            rss_early = rss_kib(daemon.pid)
            drain(12)
            rss_late = rss_kib(daemon.pid)
            stop.set()
            for c in calls:
                c.cancel()
            for ch in channels:
                ch.close()
            drain(1)
            readers_ok = sum(1 for n in received[SILENT:] if n >= 20)
            print(f"{STREAMS} streams ({SILENT} never read): readers with >= 20 frames: "
                  f"{readers_ok}/{STREAMS - SILENT}; daemon RSS {rss_early} KiB at 6 s, "
                  f"{rss_late} KiB at 18 s")
            if readers_ok != STREAMS - SILENT:
                failures.append(f"only {readers_ok} readers received >= 20 frames")
            if rss_late - rss_early > 4096:
                failures.append(f"daemon RSS grew {rss_late - rss_early} KiB in 12 s")
            if daemon.poll() is not None:
                failures.append("edgemond exited")
        finally:
            daemon.terminate()
            rc = daemon.wait(timeout=30)
            drain(0.5)
            log.close()
        missed = [int(x) for s in statuses for x in re.findall(r"\((\d+) missed deadlines\)", s)]
        print(f"STATUS lines: {statuses[-1] if statuses else None}")
        if not missed:
            failures.append("no STATUS line with the deadline count arrived")
        elif max(missed) != 0:
            failures.append(f"the sampler missed {max(missed)} deadlines")
        if rc != 0:
            failures.append(f"edgemond exit status {rc}")
    for f in failures:
        print("FAIL", f)
    print(f"{1 if not failures else 0} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
