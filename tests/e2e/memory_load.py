"""Loads that leave memory behind in edgemond, and the daemon's RSS around
them: shared by tests/e2e/memory_test.py, bench/memory_after_load.py and
bench/soak.py.

  * history(): an hour of 1 Hz history, written at 100 frames a second into
    a store by edgemond itself (3600 frames in ~40 s);
  * query_burst(): N concurrent Queries over the last hour, every chunk read;
  * stream_burst(): N concurrent Watch streams held open, then cancelled;
  * settle(): RSS polled after a load until it is back within a bound of the
    idle figure, or a deadline passes.

The gRPC stubs are generated at run time from proto/ (interop_test.py)."""
import os
import sqlite3
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interop_test  # noqa: E402 (stub generation)
from harness import read_stream, rss_kib  # noqa: E402,F401 (callers use memory_load.rss_kib too)

NS = 1_000_000_000


def stubs(out, protoc, plugin, proto_dir):
    """Generates and imports the Python stubs; returns (grpc, pb2, pb2_grpc)."""
    class A:  # what interop_test.generate_stubs reads
        pass
    a = A()
    a.protoc, a.plugin, a.proto_dir = protoc, plugin, proto_dir
    interop_test.ARGS = a
    m = interop_test.generate_stubs(out)
    import grpc
    return grpc, m["edgemon_pb2"], m["edgemon_pb2_grpc"]


def stored_frames(db):
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute("SELECT count(*) FROM frames").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def history(edgemond, root, db, tmp, frames=3600, timeout=180):
    """Runs edgemond at 10 ms frames on `root` until `db` holds `frames`
    frames, then stops it. Returns the number stored."""
    cfg = os.path.join(tmp, "history.toml")
    with open(cfg, "w") as f:
        f.write("[store]\ncommit_interval_ms = 200\n")
    p = subprocess.Popen([edgemond, "--root", root, "--db", db, "--config", cfg,
                          "--listen", "unix:" + os.path.join(tmp, "history.sock"),
                          "--interval-ms", "10", "--energy-rate-hz", "0", "--log-level", "warn"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + timeout
        while stored_frames(db) < frames and time.time() < deadline and p.poll() is None:
            time.sleep(0.5)
    finally:
        p.terminate()
        p.wait(timeout=30)
    return stored_frames(db)


def query_burst(grpc, pb, rpc, target, n, seconds=3600, rounds=1):
    """`rounds` times, `n` concurrent raw Queries over the last `seconds`, all
    channels, every chunk read. Returns (frames received, failed calls)."""
    got, failed = [0] * n, [0]
    lock = threading.Lock()

    def one(i, ch):
        stub = rpc.TelemetryStub(ch)
        now = time.time_ns()
        try:
            for chunk in stub.Query(pb.QueryRequest(from_ns=now - seconds * NS, to_ns=now),
                                    timeout=300):
                got[i] += len(chunk.frames)
        except grpc.RpcError:
            with lock:
                failed[0] += 1

    chans = [grpc.insecure_channel(target) for _ in range(4)]
    try:
        for _ in range(rounds):
            threads = [threading.Thread(target=one, args=(i, chans[i % len(chans)]))
                       for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        for ch in chans:
            ch.close()
    return sum(got), failed[0]


def stream_burst(grpc, pb, rpc, target, n, hold_s, on_peak=None):
    """`n` concurrent Watch streams (all channels, every frame) held for
    `hold_s` seconds while each reads, then cancelled. `on_peak` is called
    every half second while they are open. Returns (streams that received a
    frame, streams refused)."""
    received, refused = [0] * n, [0]
    lock = threading.Lock()
    stop = threading.Event()
    chans = [grpc.insecure_channel(target) for _ in range(4)]
    calls = []

    def reader(i, call):
        err = read_stream(call, received, i, stop)
        if err is not None and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
            with lock:
                refused[0] += 1

    threads = []
    for i in range(n):
        call = rpc.TelemetryStub(chans[i % len(chans)]).Watch(pb.WatchRequest(interval_ms=0))
        calls.append(call)
        t = threading.Thread(target=reader, args=(i, call), daemon=True)
        t.start()
        threads.append(t)
    end = time.time() + hold_s
    while time.time() < end:
        if on_peak:
            on_peak()
        time.sleep(0.5)
    stop.set()
    for c in calls:
        c.cancel()
    for t in threads:
        t.join(timeout=10)
    for ch in chans:
        ch.close()
    return sum(1 for r in received if r > 0), refused[0]


class Peak:
    """The highest RSS seen by a sampler thread while a load runs."""

    def __init__(self, pid, period=0.2):
        self.pid, self.period, self.kib = pid, period, rss_kib(pid)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.wait(self.period):
            try:
                self.kib = max(self.kib, rss_kib(self.pid))
            except OSError:
                return

    def stop(self):
        self._stop.set()
        self._t.join()
        return self.kib


def settle(pid, idle_kib, within=0.10, deadline_s=60, poll_s=2.0, until_deadline=False):
    """Polls RSS after a load. Returns (RSS at the end, seconds waited): the
    end is the first poll within `within` of `idle_kib`, or `deadline_s`
    (always `deadline_s` with until_deadline, for a figure one minute on)."""
    t0 = time.time()
    while True:
        kib = rss_kib(pid)
        waited = time.time() - t0
        if waited >= deadline_s or (not until_deadline and kib <= idle_kib * (1 + within)):
            return kib, waited
        time.sleep(min(poll_s, max(0.05, deadline_s - waited)))
