#!/usr/bin/env python3
"""Soak test of edgemond (not run in CI): a simulated board, rails sampled at
100 Hz for energy, 20 `edgemon watch` clients, one `edgemon record` every
minute, and a Prometheus-style scrape of /metrics every second, for a
configurable duration. Prints the daemon's RSS, open descriptors, database
size and missed deadlines at the start, once a minute, and at the end, and
exits 1 when memory or descriptors grew, a deadline was missed, or a
recording or scrape failed.

  bench/soak.py --build build [--board agx-orin] [--minutes 30] [--watchers 20]
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


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
    ap.add_argument("--fixtures", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                          "fixtures"))
    args = ap.parse_args()
    b = os.path.abspath(args.build)
    edgemond = os.path.join(b, "daemon", "edgemond")
    sim = os.path.join(b, "daemon", "sim", "edgemon-sim")
    edgemon = os.path.join(b, "client", "cli", "edgemon")

    tmp = tempfile.mkdtemp(prefix="edgemon-soak-")
    procs, problems = [], []
    try:
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
        env = dict(os.environ, NOTIFY_SOCKET=os.path.join(tmp, "notify.sock"))
        log = open(os.path.join(tmp, "edgemond.log"), "w")
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
        for _ in range(args.watchers):
            procs.append(subprocess.Popen([edgemon] + connect + ["watch", "--json"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        scrapes = {"ok": 0, "failed": 0}
        recordings = {"ok": 0, "failed": 0}
        stop = threading.Event()

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
                r = subprocess.run([edgemon] + connect + ["record", "--label", f"soak-{n}",
                                                          "--out", out, "--", "sleep", "5"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                ok = r.returncode == 0 and os.path.exists(os.path.join(out, "summary.json"))
                recordings["ok" if ok else "failed"] += 1
                if not ok:
                    problems.append(f"recording {n}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                shutil.rmtree(out, ignore_errors=True)

        threads = [threading.Thread(target=scraper), threading.Thread(target=recorder)]
        for t in threads:
            t.start()

        def line(label, t0):
            notify.drain()
            return (f"{label:>6} {time.time() - t0:7.0f} s  RSS {rss_kib(daemon.pid):6d} KiB  "
                    f"fds {fds(daemon.pid):3d}  db {db_bytes(db) / 1048576:7.2f} MiB  "
                    f"missed {notify.missed()}  scrapes {scrapes['ok']}/{scrapes['failed']} "
                    f"recordings {recordings['ok']}/{recordings['failed']}")

        t0 = time.time()
        time.sleep(30)  # warm-up: caches, first recording, every watcher connected
        first_rss, first_fds = rss_kib(daemon.pid), fds(daemon.pid)
        print(line("start", t0), flush=True)
        end = t0 + args.minutes * 60
        next_report = time.time() + 60
        peak_rss = first_rss
        while time.time() < end:
            time.sleep(min(5, max(0.1, end - time.time())))
            notify.drain()
            if daemon.poll() is not None:
                problems.append(f"edgemond exited with {daemon.returncode}")
                break
            peak_rss = max(peak_rss, rss_kib(daemon.pid))
            if time.time() >= next_report:
                print(line("", t0), flush=True)
                next_report += 60
        last_rss, last_fds = rss_kib(daemon.pid), fds(daemon.pid)
        print(line("end", t0), flush=True)
        stop.set()
        for t in threads:
            t.join()
        missed = notify.missed()
        print(f"soak: {args.minutes:g} min on {args.board}, energy {args.energy_rate_hz} Hz, "
              f"{args.watchers} watchers: RSS {first_rss} -> {last_rss} KiB (peak {peak_rss}), "
              f"fds {first_fds} -> {last_fds}, missed deadlines {missed}, "
              f"scrapes {scrapes['ok']} ok / {scrapes['failed']} failed, "
              f"recordings {recordings['ok']} ok / {recordings['failed']} failed")
        if missed is None or missed != 0:
            problems.append(f"missed deadlines: {missed}")
        if last_rss - first_rss > 2048:
            problems.append(f"RSS grew by {last_rss - first_rss} KiB")
        if last_fds > first_fds + 2:
            problems.append(f"descriptors grew from {first_fds} to {last_fds}")
        if scrapes["failed"] or recordings["failed"]:
            problems.append("failed scrapes or recordings")
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
