#!/usr/bin/python3
"""edgemond's resident memory over a long run with a client watching, and
where it goes at the end.

A release bundle's edgemond (or any edgemond) runs on a simulated AGX Orin
at 1 Hz frames with energy at 100 Hz, one `edgemon watch` follows every frame,
and the daemon's RSS is printed every --every seconds. At the end the
resident pages are split by what they belong to, from /proc/PID/smaps:

  text      the program's own file (code and read-only data, static libraries included)
  libs      shared libraries (a dynamically linked build)
  heap      anonymous memory: malloc's heap and arenas, minus the stacks below
  stacks    thread stacks (anonymous mappings with a guard page below them)
  store     the store's files (SQLite's memory-mapped reads, WAL index)
  flight    the flight recorder's ring (<socket>.flight on the runtime tmpfs)
  other     anything else

  bench/rss_watch.py dist/edgemon-V-linux-x86_64.tar.gz [--minutes 60] [--every 300]
  bench/rss_watch.py --build build [--minutes 5]        (the normal build instead)
"""
import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import rss_kib, stop_process  # noqa: E402


def breakdown(pid, program):
    """KiB resident per class (see the module's text), and the thread count."""
    classes = dict.fromkeys(("text", "libs", "heap", "stacks", "store", "flight", "other"), 0)
    prog = os.path.realpath(program)
    maps = []
    cur = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                cur = {"lo": lo, "hi": hi, "perms": head[1], "path": head[5] if len(head) > 5 else "",
                       "rss": 0}
                maps.append(cur)
            elif head[0] == "Rss:" and cur is not None:
                cur["rss"] = int(head[1])
    # A thread stack: an anonymous rw mapping right above a ---p guard page.
    guard_ends = {m["hi"] for m in maps if m["perms"].startswith("---") and not m["path"]}
    for m in maps:
        path = m["path"]
        if path == prog:
            cls = "text"
        elif path.startswith("/") and re.search(r"\.so(\.[0-9.]+)?$", path):
            cls = "libs"
        elif path.endswith(".flight"):
            cls = "flight"
        elif path in ("[heap]",) or (not path and m["lo"] not in guard_ends):
            cls = "heap"
        elif path == "[stack]" or (not path and m["lo"] in guard_ends):
            cls = "stacks"
        elif path.startswith("/"):
            cls = "store"
        else:
            cls = "other"
        classes[cls] += m["rss"]
    threads = len(os.listdir(f"/proc/{pid}/task"))
    return classes, threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tarball", nargs="?", help="a release bundle (its edgemond, edgemon and edgemon-sim)")
    ap.add_argument("--build", help="a normal build directory instead of a bundle")
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--every", type=float, default=300, help="seconds between RSS lines")
    a = ap.parse_args()
    if not a.tarball and not a.build:
        ap.error("give a release bundle or --build")

    with tempfile.TemporaryDirectory(prefix="edgemon-rss-watch-") as tmp:
        if a.tarball:
            with tarfile.open(a.tarball) as t:
                top = t.getnames()[0].split("/")[0]
                t.extractall(tmp)
            # As on an installed system, the program's file is on disk, not
            # dirty pages of a fresh write (the kernel cannot page those out).
            os.sync()
            bin_dir = os.path.join(tmp, top, "bin")
            edgemond, edgemon, sim = (os.path.join(bin_dir, p) for p in ("edgemond", "edgemon", "edgemon-sim"))
            fixtures = os.path.join(tmp, top, "share", "edgemon", "fixtures")
            what = os.path.basename(a.tarball)
        else:
            edgemond = os.path.join(a.build, "daemon", "edgemond")
            edgemon = os.path.join(a.build, "client", "cli", "edgemon")
            sim = os.path.join(a.build, "daemon", "sim", "edgemon-sim")
            fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
            what = f"the build in {a.build}"
        root = os.path.join(tmp, "agx-orin")
        sock = os.path.join(tmp, "e.sock")
        procs = []
        try:
            procs.append(subprocess.Popen([sim, "--board", "agx-orin", "--out", root, "--fixtures", fixtures,
                                           "--rate-hz", "20", "-q"]))
            while not os.path.exists(os.path.join(root, ".edgemon-sim.json")):
                time.sleep(0.05)
            daemon = subprocess.Popen([edgemond, "--root", root, "--db", os.path.join(tmp, "e.db"),
                                       "--listen", "unix:" + sock, "--interval-ms", "1000",
                                       "--energy-rate-hz", "100", "--log-level", "warn"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(daemon)
            deadline = time.time() + 20
            while subprocess.run([edgemon, "--connect", "unix:" + sock, "now"], capture_output=True).returncode:
                if daemon.poll() is not None or time.time() > deadline:
                    sys.exit("rss_watch: edgemond did not come up")
                time.sleep(0.1)
            procs.append(subprocess.Popen([edgemon, "--connect", "unix:" + sock, "watch", "--json"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            print(f"edgemond of {what} on a simulated AGX Orin, 1 Hz frames, energy at 100 Hz, "
                  f"one `edgemon watch`, {a.minutes:g} min; load {os.getloadavg()[0]:.2f}")
            print(f"{'minute':>7} {'RSS':>10}")
            start = time.monotonic()
            end = start + a.minutes * 60
            while True:
                print(f"{(time.monotonic() - start) / 60:7.1f} {rss_kib(daemon.pid) / 1024:6.2f} MiB", flush=True)
                if time.monotonic() >= end:
                    break
                time.sleep(max(0.0, min(a.every, end - time.monotonic())))
            if daemon.poll() is not None:
                sys.exit("rss_watch: edgemond exited during the run")
            classes, threads = breakdown(daemon.pid, edgemond)
            print(f"\nresident at the end, by what it belongs to ({threads} threads; load "
                  f"{os.getloadavg()[0]:.2f})")
            for k, v in classes.items():
                print(f"  {k:7} {v / 1024:6.2f} MiB")
            print(f"  {'total':7} {sum(classes.values()) / 1024:6.2f} MiB")
        finally:
            for p in reversed(procs):
                stop_process(p)


if __name__ == "__main__":
    main()
