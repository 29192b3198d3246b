#!/usr/bin/env python3
"""Bytes edgemond writes to storage per day at 1 Hz frames (write_bytes of
/proc/PID/io, extrapolated), with the store on disk and the runtime
directory (socket, flight recorder) on tmpfs as under systemd, and how
much the store's pages in use grow per day over the same time. Give two builds to
compare them side by side in one run, and commit intervals
(store.commit_interval_ms) to compare those for each build.

  bench/flash_writes.py BUILD_DIR [OTHER_BUILD_DIR ...] [--seconds 60]
                        [--commit-interval-ms 5000,60000]
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def write_bytes(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


def store_bytes(disk):
    """Bytes of the store's pages in use, WAL included (page_count minus the
    free list, read through SQLite beside the daemon: the file itself grows
    only at checkpoints)."""
    db = sqlite3.connect(f"file:{os.path.join(disk, 'edgemon.db')}?mode=ro", uri=True)
    try:
        page = db.execute("PRAGMA page_size").fetchone()[0]
        used = db.execute("PRAGMA page_count").fetchone()[0] - \
            db.execute("PRAGMA freelist_count").fetchone()[0]
        return used * page
    finally:
        db.close()


def measure(build, seconds, commit_interval_ms=None):
    """(bytes written per day, store bytes grown per day)"""
    disk = tempfile.mkdtemp(prefix="edgemon-flash-", dir="/var/tmp")
    run = tempfile.mkdtemp(prefix="edgemon-flash-", dir="/dev/shm")
    try:
        config = []
        if commit_interval_ms is not None:
            path = os.path.join(disk, "edgemond.toml")
            with open(path, "w") as f:
                f.write(f"[store]\ncommit_interval_ms = {commit_interval_ms}\n")
            config = ["--config", path]
        p = subprocess.Popen([os.path.join(build, "daemon", "edgemond")] + config + ["--root",
                              os.path.join(FIXTURES, "agx-orin"), "--db",
                              os.path.join(disk, "edgemon.db"), "--listen",
                              "unix:" + os.path.join(run, "edgemond.sock"), "--interval-ms",
                              "1000", "--log-level", "warn"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(6)  # past start-up and the first commit
        w0, t0, s0 = write_bytes(p.pid), time.monotonic(), store_bytes(disk)
        time.sleep(seconds)
        w1, t1, s1 = write_bytes(p.pid), time.monotonic(), store_bytes(disk)
        p.terminate()
        p.wait(timeout=30)
        return (w1 - w0) / (t1 - t0) * 86400, (s1 - s0) / (t1 - t0) * 86400
    finally:
        shutil.rmtree(disk, ignore_errors=True)
        shutil.rmtree(run, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--commit-interval-ms", default="",
                    help="comma-separated store.commit_interval_ms values (default: the daemon's)")
    a = ap.parse_args()
    intervals = [int(v) for v in a.commit_interval_ms.split(",") if v] or [None]
    print(f"{'build':<32} {'commit every':>12} {'MiB written per day':>20} "
          f"{'store MiB per day':>18}")
    for b in a.builds:
        for ms in intervals:
            written, grown = measure(b, a.seconds, ms)
            every = "default" if ms is None else f"{ms / 1000:g} s"
            print(f"{b:<32} {every:>12} {written / (1 << 20):>20.1f} {grown / (1 << 20):>18.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
