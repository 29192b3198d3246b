#!/usr/bin/env python3
"""What the key of the rollup rows costs in flash and in reads: for each
candidate layout, a SQLite file set up as the store sets up its own (4 KiB
pages, WAL, incremental auto-vacuum, a 512 KiB cache) holding DAYS of
one-minute rows for CHANNELS channels, written as edgemond writes them (HELD
held periods at a time: 15 at the default rollup_write_frames), then

  - the WAL pages one more write of HELD held periods adds (what a write of
    held periods costs in flash before its checkpoint), and
  - the time to read one channel's rows over one day and over the whole
    history (what a Query or a Summary's edge reads), and
  - the table's size in bytes per row (pages in use, after the writes).

Layouts: (channel, t) as the store keeps them today; (chunk, channel, t)
with chunks of 15 minutes and of an hour, read one chunk at a time; and
(t, channel), kept by time alone.

  bench/rollup_layouts.py [--channels 157] [--days 14] [--writes 8] [--held 15]
"""
import argparse
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import time

PERIOD = 60 * 10**9
WAL_FRAME = 24 + 4096


def chunked(minutes):
    length = minutes * PERIOD
    return {
        "ddl": "CREATE TABLE r(k INTEGER NOT NULL, channel INTEGER NOT NULL, t INTEGER NOT NULL, "
               "c INTEGER NOT NULL, mn INTEGER NOT NULL, mx INTEGER NOT NULL, s INTEGER NOT NULL, "
               "PRIMARY KEY(k, channel, t)) WITHOUT ROWID",
        "key": lambda ch, t: (t // length, ch, t),
        "read": ("WITH RECURSIVE g(k) AS (SELECT ?4 UNION ALL SELECT k + 1 FROM g WHERE k < ?5) "
                 "SELECT r.t, r.c, r.mn, r.mx, r.s FROM g JOIN r ON r.k = g.k AND r.channel = ?1 "
                 "WHERE r.t >= ?2 AND r.t < ?3 ORDER BY r.t"),
        "chunk": length,
    }


LAYOUTS = {
    "(channel, t)": {
        "ddl": "CREATE TABLE r(channel INTEGER NOT NULL, t INTEGER NOT NULL, c INTEGER NOT NULL, "
               "mn INTEGER NOT NULL, mx INTEGER NOT NULL, s INTEGER NOT NULL, "
               "PRIMARY KEY(channel, t)) WITHOUT ROWID",
        "key": lambda ch, t: (ch, t),
        "read": "SELECT t, c, mn, mx, s FROM r WHERE channel = ?1 AND t >= ?2 AND t < ?3 ORDER BY t",
    },
    "(15 min, channel, t)": chunked(15),
    "(hour, channel, t)": chunked(60),
    "(t, channel)": {
        "ddl": "CREATE TABLE r(t INTEGER NOT NULL, channel INTEGER NOT NULL, c INTEGER NOT NULL, "
               "mn INTEGER NOT NULL, mx INTEGER NOT NULL, s INTEGER NOT NULL, "
               "PRIMARY KEY(t, channel)) WITHOUT ROWID",
        "key": lambda ch, t: (t, ch),
        "read": "SELECT t, c, mn, mx, s FROM r WHERE channel = ?1 AND t >= ?2 AND t < ?3 ORDER BY t",
    },
}


def open_db(path):
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in ("page_size=4096", "auto_vacuum=INCREMENTAL", "journal_mode=WAL",
                   "synchronous=NORMAL", "cache_size=-512", "wal_autocheckpoint=0"):
        db.execute("PRAGMA " + pragma)
    return db


def write_periods(db, layout, channels, first, n, rng, t0):
    """One transaction of n periods from `first`, channel by channel."""
    width = len(layout["key"](0, 0)) + 4
    sql = "INSERT INTO r VALUES(" + ",".join("?" * width) + ")"
    db.execute("BEGIN")
    for ch in range(1, channels + 1):
        for p in range(first, first + n):
            t = t0 + p * PERIOD
            v = rng.randrange(0, 3_000_000)
            db.execute(sql, layout["key"](ch, t) + (60, v, v + rng.randrange(0, 1000),
                                                    v * 60 + rng.randrange(0, 60_000)))
    db.execute("COMMIT")


def read_ms(db, layout, channel, a, b):
    args = [channel, a, b]
    if "chunk" in layout:
        args += [a // layout["chunk"], (b - 1) // layout["chunk"]]
    start = time.perf_counter()
    rows = db.execute(layout["read"], args).fetchall()
    return (time.perf_counter() - start) * 1000, len(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--channels", type=int, default=157)  # the AGX Orin fixture's
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--writes", type=int, default=8)
    ap.add_argument("--held", type=int, default=15)  # periods per write
    a = ap.parse_args()
    if a.channels < 1 or a.days < 2 or a.writes < 1 or not 1 <= a.held <= 1440:
        ap.error("--channels >= 1, --days >= 2, --writes >= 1 and 1 <= --held <= 1440")
    t0 = 1_700_000_000 * 10**9 // PERIOD * PERIOD
    periods = a.days * 1440
    day = 86400 * 10**9
    print(f"{a.channels} channels, {a.days} days of one-minute rows, writes of {a.held} held periods")
    print(f"{'key':<22} {'WAL pages per write':>20} {'read 1 d':>11} "
          f"{'read ' + str(a.days - 1) + ' d':>12} {'bytes per row':>14}")
    work = tempfile.mkdtemp(prefix="edgemon-layouts-", dir="/var/tmp")
    try:
        for name, layout in LAYOUTS.items():
            path = os.path.join(work, "r.db")
            for f in (path, path + "-wal", path + "-shm"):
                if os.path.exists(f):
                    os.remove(f)
            rng = random.Random(1)
            db = open_db(path)
            db.execute(layout["ddl"])
            for first in range(0, periods, a.held):
                write_periods(db, layout, a.channels, first, min(a.held, periods - first), rng,
                              t0)
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = []
            for w in range(a.writes):
                before = os.path.getsize(path + "-wal")
                write_periods(db, layout, a.channels, periods + a.held * w, a.held, rng, t0)
                pages.append((os.path.getsize(path + "-wal") - before) // WAL_FRAME)
            channels = sorted({1, (a.channels + 1) // 2, a.channels})
            one = statistics.median(read_ms(db, layout, ch, t0 + day, t0 + 2 * day)[0]
                                    for ch in channels)
            whole = statistics.median(read_ms(db, layout, ch, t0 + day, t0 + a.days * day)[0]
                                      for ch in channels)
            used = db.execute("PRAGMA page_count").fetchone()[0] - \
                db.execute("PRAGMA freelist_count").fetchone()[0]
            rows = (periods + a.held * a.writes) * a.channels
            db.close()
            print(f"{name:<22} {statistics.mean(pages):>20.0f} {one:>8.2f} ms {whole:>9.2f} ms "
                  f"{used * 4096 / rows:>14.1f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
