#!/usr/bin/env python3
"""Soak test of edgemond (not run in CI): a simulated board, rails sampled at
100 Hz for energy, 20 `edgemon watch` clients, one `edgemon record` every
minute, and a Prometheus-style scrape of /metrics every second, for a
configurable duration. The daemon runs under libfaketime (Debian's faketime)
and, after the warm-up, goes through these phases, each followed by a minute
of steady load:

  clock +8 d      the wall clock steps 8 days ahead for 5 s, then back
  clock -30 d     30 days behind for 5 s, then back
  window flood    BeginWindow as fast as 4 clients can for 15 s (leased 3 s)
  300 streams     300 Watch streams (more than max_streams) for 20 s
  slowloris       50 connections trickling a byte a second on /metrics for
                  20 s while the scrapes go on

Prints the daemon's RSS, open descriptors, database size, frames lost (gaps
in the stored sequence), missed deadlines and the store's integrity at the
start, after each phase, once a minute, and at the end, and exits 1 when
memory or descriptors grew, a frame was lost, a deadline was missed, the
store is damaged, or a recording or scrape failed.

  bench/soak.py --build build [--board agx-orin] [--minutes 30] [--watchers 20]
                [--no-phases]
"""
import argparse
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import memory_load  # noqa: E402 (Watch streams, gRPC stubs)
from harness import faketime_lib, rss_kib  # noqa: E402
from metrics_slowloris import trickle  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Clock:
    """The daemon's wall-clock offset under libfaketime, changed at run time
    through FAKETIME_TIMESTAMP_FILE (monotonic and boot time stay real, as a
    clock step leaves them)."""

    def __init__(self, tmp):
        self.lib = faketime_lib()
        self.rc = os.path.join(tmp, "faketime.rc")
        self.set("+0")

    def env(self):
        if self.lib is None:
            return {}
        return {"LD_PRELOAD": self.lib, "FAKETIME_TIMESTAMP_FILE": self.rc,
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}

    def set(self, spec):
        with open(self.rc + ".new", "w") as f:
            f.write(spec + "\n")
        os.replace(self.rc + ".new", self.rc)


def store_state(db):
    """(frames stored, frames missing from the stored sequence, integrity):
    read beside the running daemon (WAL readers do not block it)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        n, lo, hi = con.execute("SELECT count(*), min(seq), max(seq) FROM frames").fetchone()
        check = con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()
    return n, (hi - lo + 1 - n) if n else 0, check


def window_flood(grpc, pb, rpc, target, seconds, clients=4, lease_ms=3000):
    """BeginWindow from `clients` threads as fast as they can for `seconds`,
    each window leased (closed as abandoned when the lease runs out).
    Returns (opened, refused with RESOURCE_EXHAUSTED, other errors)."""
    counts = {"opened": 0, "refused": 0, "errors": 0}
    lock = threading.Lock()
    end = time.time() + seconds

    def client(k):
        ch = grpc.insecure_channel(target)
        stub = rpc.TelemetryStub(ch)
        n = 0
        while time.time() < end:
            n += 1
            try:
                stub.BeginWindow(pb.BeginWindowRequest(label=f"flood-{k}-{n}", lease_ms=lease_ms),
                                 timeout=10)
                key = "opened"
            except grpc.RpcError as e:
                key = "refused" if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED else "errors"
            with lock:
                counts[key] += 1
        ch.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts["opened"], counts["refused"], counts["errors"]


def db_bytes(db):
    return sum(os.path.getsize(p) for p in (db, db + "-wal", db + "-shm") if os.path.exists(p))


class Notify:
    """A NOTIFY_SOCKET receiver: edgemond's STATUS lines carry its counters."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.05)
        self.last = ""

    def drain(self):
        while True:
            try:
                msg = self.sock.recv(65536).decode(errors="replace")
            except (socket.timeout, BlockingIOError):
                return
            for line in msg.splitlines():
                if line.startswith("STATUS="):
                    self.last = line[7:]

    def missed(self):
        m = re.search(r"\((\d+) missed deadlines\)", self.last)
        return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--board", default="agx-orin")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--watchers", type=int, default=20)
    ap.add_argument("--energy-rate-hz", type=int, default=100)
    ap.add_argument("--settle", type=float, default=60,
                    help="seconds of steady load after each phase")
    ap.add_argument("--no-phases", action="store_true",
                    help="steady load only: no clock jumps, no floods")
    ap.add_argument("--fixtures", default=os.path.join(HERE, "..", "tests", "fixtures"))
    args = ap.parse_args()
    b = os.path.abspath(args.build)
    edgemond = os.path.join(b, "daemon", "edgemond")
    sim = os.path.join(b, "daemon", "sim", "edgemon-sim")
    edgemon = os.path.join(b, "client", "cli", "edgemon")

    tmp = tempfile.mkdtemp(prefix="edgemon-soak-")
    procs, problems = [], []
    try:
        grpc, pb, rpc = memory_load.stubs(os.path.join(tmp, "stubs"), shutil.which("protoc"),
                                          shutil.which("grpc_python_plugin"),
                                          os.path.join(HERE, "..", "proto"))
        clock = Clock(tmp)
        if clock.lib is None and not args.no_phases:
            print("soak: libfaketime is not installed (scripts/install-deps.sh): "
                  "no clock jumps", flush=True)
        root = os.path.join(tmp, args.board)
        simp = subprocess.Popen([sim, "--board", args.board, "--out", root, "--rate-hz", "20",
                                 "-q"])
        procs.append(simp)
        for _ in range(100):
            if os.path.exists(os.path.join(root, ".edgemon-sim.json")):
                break
            time.sleep(0.1)
        sock = os.path.join(tmp, "api.sock")
        db = os.path.join(tmp, "edgemon.db")
        port = free_port()
        notify = Notify(os.path.join(tmp, "notify.sock"))
        env = dict(os.environ, NOTIFY_SOCKET=os.path.join(tmp, "notify.sock"), **clock.env())
        log_path = os.path.join(tmp, "edgemond.log")
        log = open(log_path, "w")
        daemon = subprocess.Popen([edgemond, "--root", root, "--db", db, "--listen", "unix:" + sock,
                                   "--energy-rate-hz", str(args.energy_rate_hz),
                                   "--metrics-listen", f"127.0.0.1:{port}"],
                                  stdout=subprocess.DEVNULL, stderr=log, env=env)
        procs.append(daemon)
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        connect = ["--connect", "unix:" + sock]
        target = "unix:" + sock
        for _ in range(args.watchers):
            procs.append(subprocess.Popen([edgemon] + connect + ["watch", "--json"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        scrapes = {"ok": 0, "failed": 0}
        recordings = {"ok": 0, "failed": 0}
        stop = threading.Event()
        # Recordings wait while a flood runs (a window flood fills the open
        # window cap on purpose); scrapes go on through every phase.
        flooding = threading.Lock()

        def scraper():
            url = f"http://127.0.0.1:{port}/metrics"
            while not stop.wait(1.0):
                try:
                    with urllib.request.urlopen(url, timeout=5) as r:
                        body = r.read()
                    scrapes["ok" if r.status == 200 and body else "failed"] += 1
                except OSError:
                    scrapes["failed"] += 1

        def recorder():
            n = 0
            while not stop.wait(0 if n == 0 else 60.0):
                n += 1
                out = os.path.join(tmp, f"rec-{n}")
                with flooding:
                    r = subprocess.run([edgemon] + connect + ["record", "--label", f"soak-{n}",
                                                              "--out", out, "--", "sleep", "5"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
                ok = r.returncode == 0 and os.path.exists(os.path.join(out, "summary.json"))
                recordings["ok" if ok else "failed"] += 1
                if not ok:
                    problems.append(f"recording {n}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                shutil.rmtree(out, ignore_errors=True)

        threads = [threading.Thread(target=scraper), threading.Thread(target=recorder)]
        for t in threads:
            t.start()

        rows = []

        def line(label, t0):
            notify.drain()
            stored, lost, check = store_state(db)
            row = {"label": label, "t": time.time() - t0, "rss": rss_kib(daemon.pid),
                   "fds": fds(daemon.pid), "db": db_bytes(db) / 1048576, "stored": stored,
                   "lost": lost, "check": check, "missed": notify.missed()}
            rows.append(row)
            return (f"{label:>14} {row['t']:6.0f} s  RSS {row['rss']:6d} KiB  fds {row['fds']:3d}  "
                    f"db {row['db']:6.2f} MiB  frames {stored} (lost {lost})  "
                    f"integrity {check}  missed {row['missed']}  "
                    f"scrapes {scrapes['ok']}/{scrapes['failed']} "
                    f"recordings {recordings['ok']}/{recordings['failed']}")

        def jump(spec, seconds):
            clock.set(spec)
            time.sleep(seconds)
            clock.set("+0")
            return f"wall clock {spec} for {seconds} s, then back"

        def window_phase():
            with flooding:
                opened, refused, errors = window_flood(grpc, pb, rpc, target, 15)
            if errors:
                problems.append(f"window flood: {errors} calls failed otherwise than "
                                "RESOURCE_EXHAUSTED")
            return f"{opened} windows opened (leased 3 s), {refused} refused"

        def stream_phase():
            with flooding:
                ok, refused = memory_load.stream_burst(grpc, pb, rpc, target, 300, 20)
            return f"{ok} streams received frames, {refused} refused"

        def slowloris_phase():
            halt = threading.Event()
            t = threading.Thread(target=trickle, args=(port, 50, halt))
            t.start()
            before = dict(scrapes)
            time.sleep(20)
            halt.set()
            t.join()
            return (f"{scrapes['ok'] - before['ok']} scrapes ok, "
                    f"{scrapes['failed'] - before['failed']} failed meanwhile")

        phases = []
        if not args.no_phases:
            if clock.lib is not None:
                phases += [("clock +8 d", lambda: jump("+8d", 5)),
                           ("clock -30 d", lambda: jump("-30d", 5))]
            phases += [("window flood", window_phase), ("300 streams", stream_phase),
                       ("slowloris x50", slowloris_phase)]

        t0 = time.time()
        time.sleep(30)  # warm-up: caches, first recording, every watcher connected
        first_rss, first_fds = rss_kib(daemon.pid), fds(daemon.pid)
        print(line("start", t0), flush=True)
        peak_rss = first_rss
        for name, run in phases:
            peak = memory_load.Peak(daemon.pid)
            what = run()
            peak_rss = max(peak_rss, peak.stop())
            print(f"{'':>14} {time.time() - t0:6.0f} s  {name}: {what}", flush=True)
            time.sleep(args.settle)
            if daemon.poll() is not None:
                problems.append(f"edgemond exited with {daemon.returncode} after {name}")
                break
            print(line(name, t0), flush=True)
        end = t0 + args.minutes * 60
        next_report = time.time() + 60
        while time.time() < end and daemon.poll() is None:
            time.sleep(min(5, max(0.1, end - time.time())))
            notify.drain()
            peak_rss = max(peak_rss, rss_kib(daemon.pid))
            if time.time() >= next_report:
                print(line("", t0), flush=True)
                next_report += 60
        if daemon.poll() is not None:
            problems.append(f"edgemond exited with {daemon.returncode}")
        last_rss, last_fds = rss_kib(daemon.pid), fds(daemon.pid)
        print(line("end", t0), flush=True)
        stop.set()
        for t in threads:
            t.join()
        missed = notify.missed()
        # Every frame sampled is in the store once the daemon has stopped.
        daemon.terminate()
        rc = daemon.wait(timeout=30)
        log.close()
        with open(log_path) as f:
            m = re.findall(r"stopped after (\d+) frames", f.read())
        sampled = int(m[-1]) if m else None
        stored, gaps, check = store_state(db)
        print(f"soak: {args.minutes:g} min on {args.board}, energy {args.energy_rate_hz} Hz, "
              f"{args.watchers} watchers, {len(phases)} phases: RSS {first_rss} -> {last_rss} KiB "
              f"(peak {peak_rss}), fds {first_fds} -> {last_fds}, missed deadlines {missed}, "
              f"frames sampled {sampled}, stored {stored} (gaps {gaps}), integrity {check}, "
              f"exit {rc}, scrapes {scrapes['ok']} ok / {scrapes['failed']} failed, "
              f"recordings {recordings['ok']} ok / {recordings['failed']} failed")
        if missed is None or missed != 0:
            problems.append(f"missed deadlines: {missed}")
        if last_rss > first_rss * 1.10:
            problems.append(f"RSS grew from {first_rss} to {last_rss} KiB (more than 10 %)")
        if last_fds > first_fds + 2:
            problems.append(f"descriptors grew from {first_fds} to {last_fds}")
        if scrapes["failed"] or recordings["failed"]:
            problems.append("failed scrapes or recordings")
        if sampled is None or stored != sampled or gaps:
            problems.append(f"frames lost: sampled {sampled}, stored {stored}, gaps {gaps}")
        if check != "ok" or any(r["check"] != "ok" for r in rows):
            problems.append(f"store integrity: {check}")
        if rc != 0:
            problems.append(f"edgemond exit status {rc}")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print("soak: PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
