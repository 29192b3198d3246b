#!/usr/bin/env python3
"""Bytes edgemond writes to storage per day at 1 Hz frames (write_bytes of
/proc/PID/io, extrapolated), with the store on disk and the runtime
directory (socket, flight recorder) on tmpfs as under systemd, and how
much the store's pages in use grow per day over the same time. Give two builds to
compare them side by side in one run (every daemon at once, for the same
window), and commit intervals (store.commit_interval_ms) to compare those
for each build. With
--aged-days N the daemon starts on a store that already holds N days (the
newest day as 1 Hz frames, the rest as rollups: written by the first build's
api_bench --year), as a daemon that has run for weeks does; without it, on an
empty store.

  bench/flash_writes.py BUILD_DIR [OTHER_BUILD_DIR ...] [--seconds 60]
                        [--commit-interval-ms 5000,60000] [--aged-days 14]
                        [--store-key rollup_write_frames=3600 ...]
                        [--start-minute M] [--sim] [--poll-seconds 5]
                        [--poll-what query|page|summary] [--push]

--store-key KEY=VALUE adds a [store] key (TOML value) to every daemon's
configuration. --sim runs the board under edgemon-sim (the first build's),
its values moving as a loaded board's do, instead of the fixture's still
files: frames are written against their bases (the store's I17), so how
much they take depends on how the values move. The simulated tree is on
tmpfs (/dev/shm), as sysfs is not on the disk: on a disk filesystem, the
atime updates of its files, rewritten many times a second, are charged to
the daemon's write_bytes. The last column is the
bytes a frame's row data took, as written in the run. --push gives every
daemon a remote-write destination (its default interval, 30 s) on a
receiver of the bench's that takes every request, as a fleet's board has.

After the table, where each daemon's window went: the WAL frames it wrote
in the window (those after the window's first checkpoint) by the table or
index their page belongs to at the window's end (dbstat), each with how
many distinct pages they were: what a checkpoint copies.
"ptrmap" pages are the pointer map's (auto_vacuum, in stores made before
the store went without one), and "free" pages
belong to no table at the end (on the free list: emptied in the window).

The first column is what the block device under the store was sent:
each daemon's store directory is an ext4 filesystem of its own, on a loop
device (as root, where losetup and mkfs.ext4 work; else "-"), synced at the
window's start and end, so the count holds the daemon's WAL, the window's
checkpoint and the journal's metadata, each written block once: what the
flash sees. write_bytes is what the kernel charges the daemon (and the
checkpoint) for the page-cache pages it dirties, and on kernels whose ext4
caches files in large folios (6.16 on) a 4 KiB write into a folio read in
by readahead charges the whole folio (up to hundreds of KiB), while
writeback sends only the dirty blocks: there write_bytes overstates the
flash writes, most of all the checkpoint's, whose pages are scattered
through a database file that reads have cached.

--start-minute M waits after start-up until the wall clock's next minute M
at least six minutes on (past each daemon's first commit, so that an hourly
expiry of a whole hour of frames falls inside an hour's window) before the
window opens. edgemond writes its closed rollup periods with
the first commit after each hour (five-minute commits): a window of 3600 s
that opens at :07 holds one such write of a whole hour's periods, where a
window that opens at start-up holds a write of only the periods since.
"""
import argparse
import concurrent.futures
import contextlib
import os
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
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures")


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
    # The board named, not the fixtures' path built into api_bench: a
    # build's tree may have moved since.
    subprocess.run([os.path.join(build, "bench", "api_bench"),
                    os.path.join(build, "daemon", "edgemond"), "--year", "--year-days",
                    str(days), "--raw-days", "1", "--store-only", into,
                    os.path.join(FIXTURES, "agx-orin")],
                   check=True, stdout=subprocess.DEVNULL)


def frame_bytes(disk, after_seq):
    """The average length of the frames' data written after `after_seq`."""
    db = sqlite3.connect(f"file:{os.path.join(disk, 'edgemon.db')}?mode=ro", uri=True)
    try:
        return db.execute("SELECT avg(length(data)) FROM frames WHERE seq > ?",
                          (after_seq,)).fetchone()[0] or 0.0
    finally:
        db.close()


def newest_seq(disk):
    db = sqlite3.connect(f"file:{os.path.join(disk, 'edgemon.db')}?mode=ro", uri=True)
    try:
        return db.execute("SELECT coalesce(max(seq), 0) FROM frames").fetchone()[0]
    finally:
        db.close()


def wal_frames(disk):
    """(the WAL's salt, the page size, the page numbers of its frames of that
    salt in order: those since it last started afresh)."""
    try:
        with open(os.path.join(disk, "edgemon.db-wal"), "rb") as f:
            wal = f.read()
    except FileNotFoundError:
        return b"", 0, []
    if len(wal) < 32:
        return b"", 0, []
    page = int.from_bytes(wal[8:12], "big")
    frames = []
    at = 32
    while page and at + 24 + page <= len(wal):
        if wal[at + 8:at + 16] == wal[16:24]:
            frames.append(int.from_bytes(wal[at:at + 4], "big"))
        at += 24 + page
    return wal[16:24], page, frames


def wal_by_table(disk, start):
    """{table: (WAL frames, distinct pages)} written since `start`, what
    wal_frames returned then: the frames of a new salt (the WAL started
    afresh), else those past the ones it had."""
    path = os.path.join(disk, "edgemon.db")
    salt, page, frames = wal_frames(disk)
    if salt == start[0]:
        frames = frames[len(start[2]):]
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        owner = {p: n for n, p in db.execute("SELECT name, pageno FROM dbstat")}
        pointer_map = db.execute("PRAGMA auto_vacuum").fetchone()[0] != 0
    finally:
        db.close()
    # With auto_vacuum, page 2 and every (page / 5 + 1)th page after it.
    ptrmap_every = page // 5 + 1
    writes, pages = {}, {}
    for p in frames:
        in_map = pointer_map and p >= 2 and (p - 2) % ptrmap_every == 0
        name = owner.get(p, "ptrmap" if in_map else "free")
        writes[name] = writes.get(name, 0) + 1
        pages.setdefault(name, set()).add(p)
    return {n: (writes[n], len(pages[n])) for n in writes}


@contextlib.contextmanager
def store_filesystem(parent, size_mib):
    """A directory for one daemon's store, and the stat file of the block
    device under it (None where there is none of its own): an ext4
    filesystem made in a sparse image of `size_mib` MiB under `parent`,
    mounted through a loop device. Without root, losetup or mkfs.ext4, a
    plain directory under `parent`."""
    top = tempfile.mkdtemp(prefix="edgemon-flash-", dir=parent)
    image, disk = os.path.join(top, "fs.img"), os.path.join(top, "mnt")
    os.mkdir(disk)
    device = None
    try:
        if os.geteuid() == 0 and shutil.which("losetup") and shutil.which("mkfs.ext4"):
            with open(image, "wb") as f:
                f.truncate(size_mib << 20)
            # Inode tables and journal zeroed now, not by the kernel's lazy
            # init in the background of the window.
            made = subprocess.run(["mkfs.ext4", "-q", "-F", "-E",
                                   "lazy_itable_init=0,lazy_journal_init=0", image],
                                  capture_output=True)
            if made.returncode == 0:
                loop = subprocess.run(["losetup", "--find", "--show", image],
                                      capture_output=True, text=True)
                if loop.returncode == 0:
                    device = loop.stdout.strip()
                    if subprocess.run(["mount", device, disk],
                                      capture_output=True).returncode != 0:
                        subprocess.run(["losetup", "-d", device], capture_output=True)
                        device = None
        if device is None:
            print("note: no filesystem of its own for a store (root, losetup, mkfs.ext4): "
                  "the device column is left out", file=sys.stderr, flush=True)
        yield disk, device and f"/sys/block/{os.path.basename(device)}/stat"
    finally:
        if device:
            subprocess.run(["umount", disk], capture_output=True)
            subprocess.run(["losetup", "-d", device], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def device_bytes(disk, stat):
    """Bytes sent to the block device under `disk` so far, after writing back
    what its filesystem holds dirty (syncfs); None without a device."""
    if stat is None:
        return None
    subprocess.run(["sync", "-f", disk], check=True)
    with open(stat) as f:
        return int(f.read().split()[6]) * 512  # sectors written


CHECKPOINT_LOCK = threading.Lock()


def checkpoint_bytes(disk):
    """Bytes a checkpoint of the store's WAL writes into the database file
    now: the pages the WAL holds, each once, as edgemond's own checkpoint
    would copy them. Run in a child process, reaped with wait4 so that its
    write_bytes are its own (ru_oublock of the children reaped so far would
    also count a daemon another thread stops meanwhile: an hour's writes of
    one daemon charged to another's checkpoint). A PASSIVE
    checkpoint stops at the oldest snapshot a reader of the daemon's holds:
    the child tries again until every frame of the WAL is in the database
    file, else what the window's start left behind would be counted at its
    end."""
    code = ("import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1])\n"
            "for _ in range(300):\n"
            "    busy, log, done = c.execute('PRAGMA wal_checkpoint(PASSIVE)').fetchone()\n"
            "    if log == done:\n"
            "        sys.exit(0)\n"
            "    time.sleep(0.1)\n"
            "sys.exit(f'the checkpoint stopped at frame {done} of {log}')\n")
    with CHECKPOINT_LOCK:
        child = subprocess.Popen([sys.executable, "-c", code, os.path.join(disk, "edgemon.db")])
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise subprocess.CalledProcessError(child.returncode, child.args)
        return usage.ru_oublock * 512


# The window opens this long after the daemons start at the earliest: past
# their first commit (512 frames at 1 Hz, 8.5 minutes, at the automatic
# interval), with which a daemon that expires frames once an hour runs its
# first expiry (of only the frames the store's copy aged meanwhile); its
# next, of a whole hour of frames, then falls inside an hour's window.
FIRST_COMMIT_S = 560


def next_minute(minute, not_before):
    """The wall clock's first minute `minute` (0 to 59) at or after the
    time `not_before`."""
    hour = not_before - not_before % 3600
    at = hour + minute * 60
    return at if at >= not_before else at + 3600


def measure(build, seconds, commit_interval_ms=None, seed=None, keys=(), root=None,
            opens_at=None, poll=None, push_url=None):
    """((bytes sent to the store's device per day, of them by checkpointing
    the window's WAL) or None without a device of its own, bytes written per
    day (write_bytes), of them by checkpointing the window's WAL, store bytes
    grown per day, bytes a frame, the window's WAL by table)"""
    size_mib = 512 + 2 * (os.path.getsize(seed) >> 20 if seed else 0)
    with store_filesystem("/var/tmp", size_mib) as (disk, stat):
        return measure_in(disk, stat, build, seconds, commit_interval_ms, seed, keys, root,
                          opens_at, poll, push_url)


def push_receiver():
    """A remote-write receiver on a free port that takes every request
    (204), counting them; serves on a thread of its own until shutdown()."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the library's name)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.server.requests += 1
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests = 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_polling(seconds, sock, poll, port):
    """Waits `seconds`; with `poll` (seconds, client, what), a client asks
    the daemon every `poll` seconds meanwhile, as a script or a dashboard
    that polls does: for the last minute's frames (what "query": `edgemon
    query --last 1m`), for the live page's history of the last five
    minutes (what "page": GET /api/history on `port`, as an open page
    refreshes it), or for the last minute's summary (what "summary":
    `edgemon attach --last 1m --json`, a script's "energy so far")."""
    end = time.monotonic() + seconds
    if not poll:
        time.sleep(seconds)
        return
    every, client, what = poll
    while time.monotonic() < end:
        if what == "page":
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/history?from=-5m&to=now",
                                        timeout=30) as r:
                r.read()
        elif what == "summary":
            subprocess.run([client, "--connect", "unix:" + sock, "attach", "--last", "1m",
                            "--json"], check=True, stdout=subprocess.DEVNULL)
        else:
            subprocess.run([client, "--connect", "unix:" + sock, "query", "--last", "1m",
                            "--format", "csv"], check=True, stdout=subprocess.DEVNULL)
        time.sleep(max(0.0, min(every, end - time.monotonic())))


def measure_in(disk, stat, build, seconds, commit_interval_ms, seed, keys, root, opens_at,
               poll, push_url):
    run = tempfile.mkdtemp(prefix="edgemon-flash-", dir="/dev/shm")
    p = None
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
        port = free_port() if poll and poll[2] == "page" else None
        if lines or port or push_url:
            path = os.path.join(disk, "edgemond.toml")
            with open(path, "w") as f:
                if port:
                    f.write(f'[daemon]\nmetrics_listen = "127.0.0.1:{port}"\n')
                f.write("[store]\n" + "".join(line + "\n" for line in lines))
                if push_url:
                    f.write(f'[[push]]\nurl = "{push_url}"\n')
            config = ["--config", path]
        p = subprocess.Popen([os.path.join(build, "daemon", "edgemond")] + config + ["--root",
                              root or os.path.join(FIXTURES, "agx-orin"), "--db",
                              os.path.join(disk, "edgemon.db"), "--listen",
                              "unix:" + os.path.join(run, "edgemond.sock"), "--interval-ms",
                              "1000", "--log-level", "warn"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = os.path.join(run, "edgemond.sock")
        deadline = time.monotonic() + 180  # opening an aged store checks it first
        while not os.path.exists(sock) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.2)
        time.sleep(6)  # past start-up and the first commit
        if opens_at is not None:
            time.sleep(max(0.0, opens_at - time.time()))
        checkpoint_bytes(disk)  # what start-up left in the WAL is not the window's
        wal0 = wal_frames(disk)
        d0 = device_bytes(disk, stat)
        w0, t0, s0 = write_bytes(p.pid), time.monotonic(), store_bytes(disk)
        seq0 = newest_seq(disk)
        wait_polling(seconds, sock, poll, port)
        w1, t1, s1 = write_bytes(p.pid), time.monotonic(), store_bytes(disk)
        by_table = wal_by_table(disk, wal0)
        # The window's WAL pages go into the database file once, at the
        # daemon's next checkpoint (every 8192 pages): counted here, so a
        # window without one is not flattered.
        d_wal = device_bytes(disk, stat)
        ck = checkpoint_bytes(disk)
        d1 = device_bytes(disk, stat)
        p.terminate()
        p.wait(timeout=30)
        day = 86400 / (t1 - t0)
        sent = None if d0 is None else ((d1 - d0) * day, (d1 - d_wal) * day)
        return (sent, (w1 - w0 + ck) * day, ck * day, (s1 - s0) * day, frame_bytes(disk, seq0),
                by_table)
    finally:
        # A daemon left running (the bench failed) would keep its
        # filesystem from being unmounted.
        if p is not None and p.poll() is None:
            p.kill()
            p.wait(timeout=30)
        shutil.rmtree(run, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--commit-interval-ms", default="",
                    help="comma-separated store.commit_interval_ms values (default: the daemon's)")
    ap.add_argument("--aged-days", type=int, default=0,
                    help="start on a store holding this many days (default: an empty store)")
    ap.add_argument("--seed-each", action="store_true",
                    help="with --aged-days, each build's own api_bench writes its aged store "
                    "(default: the first build's, copied for every daemon), for builds that "
                    "make their stores differently")
    ap.add_argument("--store-key", action="append", default=[], metavar="KEY=VALUE",
                    help="a [store] key for every daemon, its value in TOML (repeatable)")
    ap.add_argument("--start-minute", type=int, choices=range(60), metavar="M",
                    help="open the window at the wall clock's next minute M (default: at once)")
    ap.add_argument("--poll-seconds", type=float, default=0,
                    help="a client asks each daemon for the last minute's frames this often "
                    "(default: no client)")
    ap.add_argument("--poll-what", choices=("query", "page", "summary"), default="query",
                    help="what the polling client asks for: the last minute's frames (query), "
                    "the live page's history (page) or the last minute's summary (summary)")
    ap.add_argument("--push", action="store_true",
                    help="every daemon pushes its frames (remote-write, the default interval) "
                    "to a receiver of the bench's that answers 204")
    ap.add_argument("--sim", action="store_true",
                    help="the board under edgemon-sim, its values moving (default: still files)")
    a = ap.parse_args()
    with contextlib.ExitStack() as stack:
        root = None
        if a.sim:
            sys.path.insert(0, HERE)
            from bench_common import simulated_board
            # On tmpfs, as sysfs is: the simulator rewrites its files many
            # times a second, and on a disk filesystem each read after a
            # write updates the file's atime, whose inode block the kernel
            # charges to the reader's write_bytes (about 23 MiB a day here),
            # a write no board's /sys makes.
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="edgemon-flash-sim-",
                                                                  dir="/dev/shm"))
            root = stack.enter_context(simulated_board(a.builds[0], "agx-orin", tmp))
        run(a, root)


def run(a, root):
    keys = []
    for kv in a.store_key:
        key, eq, value = kv.partition("=")
        if not eq or not key.strip() or not value.strip():
            sys.exit(f"--store-key {kv!r}: expected KEY=VALUE")
        keys.append(f"{key.strip()} = {value.strip()}")
    intervals = [int(v) for v in a.commit_interval_ms.split(",") if v] or [None]
    poll = None
    if a.poll_seconds > 0:
        # Any build's client speaks to every daemon: the first that has one.
        clients = [os.path.join(b, "client", "cli", "edgemon") for b in a.builds]
        client = next((c for c in clients if os.access(c, os.X_OK)), None)
        if client is None:
            sys.exit("--poll-seconds: no build has client/cli/edgemon")
        poll = (a.poll_seconds, client, a.poll_what)
        asks = {"query": "the last minute", "page": "the live page's history",
                "summary": "the last minute's summary"}[a.poll_what]
        print(f"a client asks each daemon for {asks} every {a.poll_seconds:g} s")
    seeds = {}  # build -> its aged store
    seed_dir = None
    if a.aged_days > 0:
        seed_dir = tempfile.mkdtemp(prefix="edgemon-flash-seed-", dir="/var/tmp")
        for i, b in enumerate(a.builds if a.seed_each else a.builds[:1]):
            seed = os.path.join(seed_dir, f"aged{i}.db")
            aged_store(b, a.aged_days, seed)
            print(f"store aged {a.aged_days} days" + (f", written by {b}" if a.seed_each else "") +
                  f": {os.path.getsize(seed) / (1 << 20):.0f} MiB")
            seeds[b] = seed
    if keys:
        print("[store] " + ", ".join(keys))
    print("board: " + ("agx-orin under edgemon-sim" if root else "agx-orin fixture (still)"))
    print(f"{'build':<32} {'commit every':>12} {'MiB to the device per day':>26} "
          f"{'of it checkpoint':>17} {'write_bytes MiB per day':>24} "
          f"{'of it checkpoint':>17} {'store MiB per day':>18} {'B a frame':>10}")
    # Every daemon at once, for the same window: what a daemon writes
    # depends on when it falls (the hourly writes, the kernel's writeback).
    runs = [(b, ms) for b in a.builds for ms in intervals]
    opens_at = None
    if a.start_minute is not None:
        opens_at = next_minute(a.start_minute, time.time() + FIRST_COMMIT_S)
        print("the window opens at " + time.strftime("%H:%M", time.localtime(opens_at)))
    push_url = None
    if a.push:
        receiver = push_receiver()
        push_url = f"http://127.0.0.1:{receiver.server_address[1]}/api/v1/write"
        print("every daemon pushes to a receiver on " + push_url)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(runs)) as pool:
        results = list(pool.map(lambda r: measure(r[0], a.seconds, r[1],
                                                  seeds.get(r[0], seeds.get(a.builds[0])),
                                                  keys, root,
                                                  opens_at, poll, push_url), runs))
    if a.push:
        print(f"the receiver took {receiver.requests} requests")
        receiver.shutdown()
    for (b, ms), (sent, written, checkpoint, grown, per_frame, _) in zip(runs, results):
        every = "default" if ms is None or ms < 0 else f"{ms / 1000:g} s"
        device = ("-", "-") if sent is None else tuple(f"{v / (1 << 20):.1f}" for v in sent)
        print(f"{b:<32} {every:>12} {device[0]:>26} {device[1]:>17} "
              f"{written / (1 << 20):>24.1f} "
              f"{checkpoint / (1 << 20):>17.1f} {grown / (1 << 20):>18.1f} "
              f"{per_frame:>10.0f}", flush=True)
    print("\nthe window's WAL frames by table (distinct pages):")
    for (b, ms), result in zip(runs, results):
        every = "" if ms is None else " at the default" if ms < 0 else f" at {ms / 1000:g} s"
        parts = sorted(result[5].items(), key=lambda kv: -kv[1][0])
        total = sum(w for w, _ in result[5].values())
        print(f"  {b}{every}: {total} frames: " +
              ", ".join(f"{n} {w} ({d})" for n, (w, d) in parts), flush=True)
    if seed_dir:
        shutil.rmtree(seed_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
