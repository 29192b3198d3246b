#!/usr/bin/python3
"""A damaged store against a running edgemond: a real SQLite file truncated
under the daemon, and a frame row whose data blob is malformed (it passes
quick_check). Health, /metrics, the log, the exit status, Query, Summarize
and `edgemon query` are checked through real processes and a real socket.

  damaged_store_test.py --edgemond B --edgemon C --protoc P --plugin G \
      --proto-dir proto --fixtures F

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

import interop_test  # stub generation, shared with the interop test
from harness import Checks, expect, frame_count, free_port

ARGS = None
STORE_HEALTH = "edgemon.store"


class Daemon:
    def __init__(self, tmp, db, extra=()):
        import grpc
        self.sock = os.path.join(tmp, "api.sock")
        self.log_path = os.path.join(tmp, f"edgemond-{time.time_ns()}.log")
        self.log = open(self.log_path, "w")
        self.metrics_port = free_port()
        cfg = os.path.join(tmp, "edgemond.toml")
        with open(cfg, "w") as f:
            f.write("[store]\ncommit_interval_ms = 50\n")
        cmd = [ARGS.edgemond, "--root", os.path.join(ARGS.fixtures, "agx-orin"), "--db", db,
               "--listen", "unix:" + self.sock, "--interval-ms", "20", "--energy-rate-hz", "0",
               "--metrics-listen", f"127.0.0.1:{self.metrics_port}", "--config", cfg, *extra]
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        env.pop("JOURNAL_STREAM", None)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 20
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"edgemond did not start:\n{self.output()}")
            time.sleep(0.02)
        self.channel = grpc.insecure_channel("unix:" + self.sock)
        grpc.channel_ready_future(self.channel).result(timeout=10)

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def metrics(self):
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = value
        return values

    def stop(self):
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        return self.proc.returncode


def store_health(m, daemon, service):
    h = m["health_pb2"]
    stub = m["health_pb2_grpc"].HealthStub(daemon.channel)
    return stub.Check(h.HealthCheckRequest(service=service), timeout=5).status


def truncated_while_running(m, tmp):
    """The file cut to a third under a running daemon: logged once with the
    path, the store's health NOT_SERVING, edgemon_store_damaged 1 with the
    store's other series still there, live frames go on, and SIGTERM does
    not report a clean stop (exit 3)."""
    import grpc
    h = m["health_pb2"]
    pb, rpc = m["edgemon_pb2"], m["edgemon_pb2_grpc"]
    db = os.path.join(tmp, "cut.db")
    d = Daemon(tmp, db)
    try:
        stub = rpc.TelemetryStub(d.channel)
        deadline = time.time() + 20
        while frame_count(db) < 150 and time.time() < deadline:
            time.sleep(0.1)
        expect(store_health(m, d, STORE_HEALTH) == h.HealthCheckResponse.SERVING,
               "store health before the damage")
        before = d.metrics()
        expect(before.get("edgemon_store_damaged") == "0", f"damaged gauge before: {before}")
        # Everything into the main file, then cut it to a third.
        con = sqlite3.connect(db, timeout=10)
        con.execute("PRAGMA wal_checkpoint(PASSIVE)")
        con.close()
        size = os.path.getsize(db)
        expect(size > 64 * 1024, f"a {size}-byte store is too small to cut")
        os.truncate(db, size // 3)
        started = time.time_ns()
        # Reads meet the damage (the writer meets it at its next commit).
        try:
            for _ in stub.Query(pb.QueryRequest(from_ns=0, to_ns=started + 10**9), timeout=10):
                pass
        except grpc.RpcError as e:
            expect(e.code() in (grpc.StatusCode.DATA_LOSS, grpc.StatusCode.INTERNAL),
                   f"query on the damaged store: {e.code()} {e.details()}")
        deadline = time.time() + 15
        status = None
        while time.time() < deadline:
            status = store_health(m, d, STORE_HEALTH)
            if status == h.HealthCheckResponse.NOT_SERVING:
                break
            time.sleep(0.2)
        expect(status == h.HealthCheckResponse.NOT_SERVING,
               f"store health after the damage: {status}; log:\n{d.output()}")
        # The daemon still serves live data: overall health and the API.
        expect(store_health(m, d, "") == h.HealthCheckResponse.SERVING, "overall health")
        asked = time.time_ns()
        live = stub.Watch(pb.WatchRequest(interval_ms=20), timeout=10)
        newest = max(next(live).realtime_ns for _ in range(5))
        live.cancel()
        expect(newest > asked, "Watch delivered no live frame after the damage")
        after = d.metrics()
        expect(after.get("edgemon_store_damaged") == "1", f"damaged gauge: {after}")
        for name in ("edgemon_store_bytes", "edgemon_store_dropped_frames_total",
                     "edgemon_store_failed_commits_total"):
            expect(name in after, f"{name} vanished from /metrics after the damage")
        expect(after.get("edgemon_store_frames", "x") != "0", "an unknown frame count shown as 0")
        n1 = float(after["edgemon_samples_total"])
        time.sleep(0.5)
        expect(float(d.metrics()["edgemon_samples_total"]) > n1, "sampling stopped")
        log = d.output()
        damaged = [line for line in log.splitlines() if "is damaged" in line]
        expect(len(damaged) == 1, f"want one line about the damage, got:\n{log}")
        expect(db in damaged[0] and "error" in damaged[0].lower(),
               f"the line names the file, at error level: {damaged[0]}")
        expect("batches dropped" not in log, f"damage reported as a write failure too:\n{log}")
    finally:
        rc = d.stop()
    log = d.output()
    expect(rc == 3, f"SIGTERM after the damage exited {rc}, want 3:\n{log}")
    expect("damaged store" in log and "--recreate-bad-db" in log,
           f"the stop does not say the store is damaged:\n{log}")


def bad_frame_blob(m, tmp):
    """One frame row's blob replaced by bytes that do not decode (quick_check
    passes): Query (raw and downsampled) and Summarize over the range succeed
    with the frame reported, and `edgemon query` warns on stderr."""
    pb, rpc = m["edgemon_pb2"], m["edgemon_pb2_grpc"]
    db = os.path.join(tmp, "blob.db")
    d = Daemon(tmp, db)
    try:
        deadline = time.time() + 20
        while frame_count(db) < 60 and time.time() < deadline:
            time.sleep(0.1)
    finally:
        expect(d.stop() == 0, f"clean stop:\n{d.output()}")
    con = sqlite3.connect(db, timeout=10)
    with con:
        seq, t_bad = con.execute(
            "SELECT seq, realtime_ns FROM frames ORDER BY seq LIMIT 1 OFFSET 30").fetchone()
        con.execute("UPDATE frames SET data = x'01ff' WHERE seq = ?", (seq,))
    expect(con.execute("PRAGMA quick_check").fetchone()[0] == "ok", "quick_check sees it")
    t0, t1 = con.execute("SELECT min(realtime_ns), max(realtime_ns) FROM frames").fetchone()
    n = con.execute("SELECT count(*) FROM frames WHERE realtime_ns <= ?", (t1,)).fetchone()[0]
    con.close()
    d = Daemon(tmp, db)
    try:
        stub = rpc.TelemetryStub(d.channel)
        frames, bad = [], 0
        for chunk in stub.Query(pb.QueryRequest(from_ns=t0, to_ns=t1 + 1), timeout=20):
            frames.extend(chunk.frames)
            bad += chunk.bad_frames
        expect(bad == 1, f"Query reported {bad} bad frames, want 1")
        expect(len(frames) == n - 1, f"{len(frames)} frames, want {n - 1}")
        expect(all(f.seq != seq for f in frames), "the bad frame was returned")
        bad = 0
        for chunk in stub.Query(pb.QueryRequest(from_ns=t0, to_ns=t1 + 1, step_ns=10**8),
                                timeout=20):
            bad += chunk.bad_frames
        expect(bad == 1, f"downsampled Query reported {bad} bad frames, want 1")
        s = stub.Summarize(pb.SummarizeRequest(time=pb.TimeRange(from_ns=t0, to_ns=t1 + 1)),
                           timeout=20)
        expect(s.bad_frames == 1, f"Summarize reported {s.bad_frames} bad frames")
        expect("could not be decoded" in s.note, f"note: {s.note!r}")
        expect(s.samples >= n - 1, f"Summarize counted {s.samples} frames")
        cli = subprocess.run(
            [ARGS.edgemon, "--connect", "unix:" + d.sock, "query", "--since", str(t0 // 10**9),
             "--until", str(t1 // 10**9 + 1), "--format", "csv", "--channels", "cpu/*"],
            capture_output=True, text=True, timeout=30)
        expect(cli.returncode == 0, f"edgemon query: {cli.returncode} {cli.stderr}")
        expect("1 stored frame(s)" in cli.stderr and "left out" in cli.stderr,
               f"edgemon query's stderr: {cli.stderr!r}")
        cli = subprocess.run(
            [ARGS.edgemon, "--connect", "unix:" + d.sock, "query", "--since", str(t0 // 10**9),
             "--until", str(t1 // 10**9 + 1), "--format", "json", "--channels", "cpu/*"],
            capture_output=True, text=True, timeout=30)
        expect(cli.returncode == 0, f"edgemon query --format json: {cli.returncode} {cli.stderr}")
        expect(json.loads(cli.stdout).get("bad_frames") == 1, "bad_frames in the JSON output")
    finally:
        expect(d.stop() == 0, f"clean stop:\n{d.output()}")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--edgemon", "--protoc", "--plugin", "--proto-dir", "--fixtures"):
        ap.add_argument(a, required=True)
    ARGS = ap.parse_args()
    interop_test.ARGS = ARGS
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="edgemon-damaged-") as tmp:
        m = interop_test.generate_stubs(os.path.join(tmp, "stubs"))
        for name, fn in (("truncated_while_running", truncated_while_running),
                         ("bad_frame_blob", bad_frame_blob)):
            work = os.path.join(tmp, name)
            os.mkdir(work)
            checks.run(name, fn, m, work)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
