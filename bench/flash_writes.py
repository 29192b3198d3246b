#!/usr/bin/env python3
"""Bytes edgemond writes to storage per day at 1 Hz frames (write_bytes of
/proc/PID/io, extrapolated), with the store on disk and the runtime
directory (socket, flight recorder) on tmpfs as under systemd, and how
much the store's pages in use grow per day over the same time. Give two builds to
compare them side by side in one run, and commit intervals
(store.commit_interval_ms) to compare those for each build. With
--aged-days N the daemon starts on a store that already holds N days (the
newest day as 1 Hz frames, the rest as rollups: written by the first build's
api_bench --year), as a daemon that has run for weeks does; without it, on an
empty store.

  bench/flash_writes.py BUILD_DIR [OTHER_BUILD_DIR ...] [--seconds 60]
                        [--commit-interval-ms 5000,60000] [--aged-days 14]
                        [--store-key rollup_write_frames=3600 ...]

--store-key KEY=VALUE adds a [store] key (TOML value) to every daemon's
configuration.
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


def aged_store(build, days, into):
    """Writes a store holding `days` days (one of 1 Hz frames) to `into`."""
    subprocess.run([os.path.join(build, "bench", "api_bench"),
                    os.path.join(build, "daemon", "edgemond"), "--year", "--year-days",
                    str(days), "--raw-days", "1", "--store-only", into],
                   check=True, stdout=subprocess.DEVNULL)


def measure(build, seconds, commit_interval_ms=None, seed=None, keys=()):
    """(bytes written per day, store bytes grown per day)"""
    disk = tempfile.mkdtemp(prefix="edgemon-flash-", dir="/var/tmp")
    run = tempfile.mkdtemp(prefix="edgemon-flash-", dir="/dev/shm")
    try:
        lines = []
        if commit_interval_ms is not None:
            lines.append(f"commit_interval_ms = {commit_interval_ms}")
        if seed:
            # As api_bench --year keeps it: rollups past the default retention.
            shutil.copyfile(seed, os.path.join(disk, "edgemon.db"))
            lines += ['retention = "1d"', 'rollup_retention = "400d"', 'max_size = "8GiB"']
        lines += keys
        config = []
        if lines:
            path = os.path.join(disk, "edgemond.toml")
            with open(path, "w") as f:
                f.write("[store]\n" + "".join(line + "\n" for line in lines))
            config = ["--config", path]
        p = subprocess.Popen([os.path.join(build, "daemon", "edgemond")] + config + ["--root",
                              os.path.join(FIXTURES, "agx-orin"), "--db",
                              os.path.join(disk, "edgemon.db"), "--listen",
                              "unix:" + os.path.join(run, "edgemond.sock"), "--interval-ms",
                              "1000", "--log-level", "warn"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = os.path.join(run, "edgemond.sock")
        deadline = time.monotonic() + 180  # opening an aged store checks it first
        while not os.path.exists(sock) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.2)
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
    ap.add_argument("--aged-days", type=int, default=0,
                    help="start on a store holding this many days (default: an empty store)")
    ap.add_argument("--store-key", action="append", default=[], metavar="KEY=VALUE",
                    help="a [store] key for every daemon, its value in TOML (repeatable)")
    a = ap.parse_args()
    keys = []
    for kv in a.store_key:
        key, eq, value = kv.partition("=")
        if not eq or not key.strip() or not value.strip():
            ap.error(f"--store-key {kv!r}: expected KEY=VALUE")
        keys.append(f"{key.strip()} = {value.strip()}")
    intervals = [int(v) for v in a.commit_interval_ms.split(",") if v] or [None]
    seed = None
    if a.aged_days > 0:
        seed_dir = tempfile.mkdtemp(prefix="edgemon-flash-seed-", dir="/var/tmp")
        seed = os.path.join(seed_dir, "aged.db")
        aged_store(a.builds[0], a.aged_days, seed)
        print(f"store aged {a.aged_days} days: {os.path.getsize(seed) / (1 << 20):.0f} MiB")
    if keys:
        print("[store] " + ", ".join(keys))
    print(f"{'build':<32} {'commit every':>12} {'MiB written per day':>20} "
          f"{'store MiB per day':>18}")
    for b in a.builds:
        for ms in intervals:
            written, grown = measure(b, a.seconds, ms, seed, keys)
            every = "default" if ms is None else f"{ms / 1000:g} s"
            print(f"{b:<32} {every:>12} {written / (1 << 20):>20.1f} {grown / (1 << 20):>18.1f}",
                  flush=True)
    if seed:
        shutil.rmtree(os.path.dirname(seed), ignore_errors=True)


if __name__ == "__main__":
    main()
