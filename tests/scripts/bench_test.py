#!/usr/bin/python3
"""bench/floor_bench.py (and bench_common.cpu_over, which the other benches
measure a daemon with) stop with an error when a process they measure exits
while measured, instead of reading its CPU as none: a daemon that died at
start would otherwise come out as costing nothing, within any bound.

  bench_test.py --source-dir REPO --build-dir BUILD

Each mode is run with a program in the daemon's place (or the baseline's)
that exits at once (/bin/false): interleaved, at once and one at a time.
And a --commit-interval-ms out of the daemon's range is refused at once.
And bench_common.pages_touched, which floor_bench prints for each process,
counts the pages a process rewrites in a loop (an anonymous map as "other",
the interpreter's own code as "program") and, once it sleeps, next to none of
the map it wrote before.
"""
import argparse
import os
import subprocess
import sys
import time

FAILURES = []


def expect(cond, what):
    if not cond:
        FAILURES.append(what)


# Writes a byte into every page of an 8 MiB anonymous map, then again and
# again ("loop") or sleeps ("once").
TOUCHER = """
import mmap, sys, time
m = mmap.mmap(-1, 8 << 20)
def touch():
    for i in range(0, len(m), mmap.PAGESIZE):
        m[i] = 1
touch()
print("ready", flush=True)
if sys.argv[1] == "once":
    time.sleep(600)
while True:
    touch()
"""


def settled(pid, thread_cpu_ns, timeout=20):
    """Waits until the process is asleep and stays so: none of its threads
    put on a CPU over 0.2 s (bench_common's thread_cpu_ns). A process just
    started is still loading its libraries, pages a broken clear would also
    show."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = {tid: n for tid, (_, _, n) in thread_cpu_ns(pid).items()}
        time.sleep(0.2)
        again = {tid: n for tid, (_, _, n) in thread_cpu_ns(pid).items()}
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if runs == again and state == "S":
            return True
    return False


def check_pages_touched(source_dir):
    sys.path.insert(0, os.path.join(source_dir, "bench"))
    from bench_common import pages_touched, thread_cpu_ns
    toucher, sleeper = (subprocess.Popen([sys.executable, "-c", TOUCHER, how],
                                         stdout=subprocess.PIPE, text=True)
                        for how in ("loop", "once"))
    try:
        for p in (toucher, sleeper):
            expect(p.stdout.readline().strip() == "ready", "a toucher did not start")
        busy = pages_touched(toucher.pid, 0.3)
        expect(settled(sleeper.pid, thread_cpu_ns), "the sleeping toucher did not settle")
        idle = pages_touched(sleeper.pid, 0.3)
    finally:
        for p in (toucher, sleeper):
            p.kill()
            p.wait()
    pages = (8 << 20) // os.sysconf("SC_PAGE_SIZE")
    # All of them but a few: the kernel's own page aging (reclaim under a
    # loaded machine's memory pressure) clears accessed bits too.
    expect(busy["other"] >= pages * 9 // 10,
           f"pages_touched: {busy} for a process rewriting {pages} pages of an anonymous map")
    expect(busy["program"] > 0, f"pages_touched: no program pages for a running Python: {busy}")
    # The map it wrote before it slept must have been cleared: without the
    # clear all its pages count. A file's pages are marked by any process's
    # reads of the file too (a linker reading libc, a program starting
    # reading the locale files it also maps), so the program, the libraries
    # and the files among "other" can count some dozens on a busy machine.
    expect(idle["other"] + idle["heap"] < pages // 16,
           f"pages_touched: {idle} for a process asleep since it wrote {pages} pages")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    a = ap.parse_args()
    bench = f"{a.source_dir}/bench/floor_bench.py"
    runs = (("interleaved, the daemon dead", ["--edgemond", "/bin/false"]),
            ("at once, the baseline dead", ["--together", "--baseline", "/bin/false"]),
            ("one at a time, the daemon dead", ["--one-at-a-time", "--edgemond", "/bin/false"]))
    for what, extra in runs:
        r = subprocess.run([sys.executable, bench, a.build_dir, "--seconds", "1", *extra],
                           capture_output=True, text=True, timeout=120)
        expect(r.returncode != 0, f"{what}: exit status {r.returncode}, expected a failure")
        expect("exited" in r.stderr and "while it was measured" in r.stderr,
               f"{what}: stderr does not say a process exited: {r.stderr[-400:]!r}")
        expect("within 1.3x" not in r.stdout and "within 1.5x" not in r.stdout,
               f"{what}: a ratio was printed for a process that was not running: "
               f"{r.stdout[-400:]!r}")
    # A commit interval the daemon would refuse is refused before any
    # process starts, with the key's range.
    bad_intervals = ("-5", "600001")
    for bad in bad_intervals:
        r = subprocess.run([sys.executable, bench, a.build_dir, "--commit-interval-ms", bad],
                           capture_output=True, text=True, timeout=60)
        expect(r.returncode == 2 and "between 0 and 600000" in r.stderr and not r.stdout,
               f"--commit-interval-ms {bad}: status {r.returncode}, stderr {r.stderr[-300:]!r}")
    check_pages_touched(a.source_dir)
    for f in FAILURES:
        print("FAIL:", f)
    print(f"bench_test: {len(runs) + len(bad_intervals) + 2} runs, {len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
