#!/usr/bin/env python3
"""Bytes edgemond writes to storage per day at 1 Hz frames (write_bytes of
/proc/PID/io, extrapolated), with the store on disk and the runtime
directory (socket, flight recorder) on tmpfs as under systemd. Give two
builds to compare them side by side in one run.

  bench/flash_writes.py BUILD_DIR [OTHER_BUILD_DIR ...] [--seconds 60]
"""
import argparse
import os
import shutil
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


def measure(build, seconds):
    disk = tempfile.mkdtemp(prefix="edgemon-flash-", dir="/var/tmp")
    run = tempfile.mkdtemp(prefix="edgemon-flash-", dir="/dev/shm")
    try:
        p = subprocess.Popen([os.path.join(build, "daemon", "edgemond"), "--root",
                              os.path.join(FIXTURES, "agx-orin"), "--db",
                              os.path.join(disk, "edgemon.db"), "--listen",
                              "unix:" + os.path.join(run, "edgemond.sock"), "--interval-ms",
                              "1000", "--log-level", "warn"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(6)  # past start-up and the first commit
        w0, t0 = write_bytes(p.pid), time.monotonic()
        time.sleep(seconds)
        w1, t1 = write_bytes(p.pid), time.monotonic()
        p.terminate()
        p.wait(timeout=30)
        return (w1 - w0) / (t1 - t0) * 86400
    finally:
        shutil.rmtree(disk, ignore_errors=True)
        shutil.rmtree(run, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    print(f"{'build':<40} {'MiB written per day at 1 Hz':>28}")
    for b in a.builds:
        print(f"{b:<40} {measure(b, a.seconds) / (1 << 20):>28.1f}")


if __name__ == "__main__":
    main()
