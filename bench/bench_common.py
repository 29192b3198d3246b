"""What the benchmark scripts share: their usual arguments (a build
directory, seconds per run, a simulated board), a simulated board and edgemond
on it that run for the length of a `with`, and the CPU a process spends (from
/proc/PID/task/*/schedstat: nanoseconds on CPU, every thread). The process
helpers themselves are the e2e harness's (tests/e2e/harness.py)."""
import argparse
import contextlib
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
# rss_kib and start_sim: for the scripts.
from harness import rss_kib, start_sim, stop_process  # noqa: E402,F401


def board_args(description=None):
    """BUILD_DIR [--seconds 30] [--board agx-orin]; the caller may add more."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--board", default="agx-orin")
    return ap


@contextlib.contextmanager
def simulated_board(build, board, tmp, log=subprocess.DEVNULL, rate_hz=20):
    """edgemon-sim for `board` under tmp/board at `rate_hz`; yields the root,
    stops the simulator on the way out."""
    root = os.path.join(tmp, board)
    sim, _ = start_sim(os.path.join(build, "daemon", "sim", "edgemon-sim"), board, root,
                       os.path.join(HERE, "..", "tests", "fixtures"), log,
                       extra=["--rate-hz", str(rate_hz)])
    try:
        yield root
    finally:
        stop_process(sim)


@contextlib.contextmanager
def edgemond_on(edgemond, edgemon, root, tmp, target, log, interval_ms=1000, energy_rate_hz=100,
                extra=(), log_level="warn", prefix=()):
    """edgemond on the board under `root` (its store tmp/e.db, listening on
    `target`, `extra` flags more, its log at `log_level` to `log`, run under
    `prefix`, such as nice); yields the process once `edgemon now` answers,
    stops it on the way out."""
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    daemon = subprocess.Popen(
        [*prefix, edgemond, "--root", root, "--db", os.path.join(tmp, "e.db"), "--listen", target,
         "--interval-ms", str(interval_ms), "--energy-rate-hz", str(energy_rate_hz),
         "--log-level", log_level, *extra], stdout=log, stderr=log, env=env)
    try:
        deadline = time.time() + 20
        while subprocess.run([edgemon, "--connect", target, "now"],
                             capture_output=True).returncode:
            if daemon.poll() is not None or time.time() > deadline:
                raise RuntimeError("edgemond did not come up")
            time.sleep(0.1)
        yield daemon
    finally:
        stop_process(daemon)


def thread_cpu_ns(pid):
    """{thread id: (its name, its ns on CPU, the times it was put on a CPU)}
    for each thread of a process (schedstat's first and third fields: a
    thread that sleeps between runs is put on a CPU once a wake-up, or more
    when it is preempted)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                fields = f.read().split()
            out[tid] = (name, int(fields[0]), int(fields[2]))
        except OSError:  # the thread ended
            pass
    return out


def pages_touched(pid, seconds):
    """The pages a process touches over `seconds`, by where they lie:
    {"program": its executable's mappings, "heap": [heap], "libraries": the
    shared libraries' mappings, "other": the rest (thread stacks, anonymous
    maps, files it maps such as the flight ring)}. Clears the accessed bits
    of every page (/proc/PID/clear_refs), waits, then counts the pages
    marked since (smaps' Referenced): where a process's working set lies,
    which a CPU's caches and TLB must hold on each wake-up. A file's pages
    (the program, the libraries, files among "other") are also marked by
    other processes' reads of the same file, so on a busy machine they can
    count pages the process did not touch; its heap and anonymous maps are
    its own."""
    exe = os.path.realpath(f"/proc/{pid}/exe")
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("1")
    time.sleep(seconds)
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    pages = {"program": 0, "heap": 0, "libraries": 0, "other": 0}
    where = "other"
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            # A mapping's first line: range, permissions, offset, device,
            # inode, then the path (which may hold spaces), if any.
            head = line.rstrip("\n").split(maxsplit=5)
            if len(head) >= 5 and "-" in head[0] and ":" in head[3]:
                path = head[5].strip() if len(head) > 5 else ""
                where = ("program" if path == exe else "heap" if path == "[heap]" else
                         "libraries" if path.startswith("/") and ".so" in path else "other")
            elif head and head[0] == "Referenced:":
                pages[where] += int(head[1]) // page_kib
    return pages


def cpu_ns(pid):
    # Every thread's time on CPU (the process's own schedstat is its main thread only).
    return sum(ns for _, ns, _ in thread_cpu_ns(pid).values())


def running(pid):
    """Whether the process runs: not gone, not a zombie waiting to be reaped
    (whose CPU would read as a frozen figure, as if it cost nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def cpu_over(pid, warmup, seconds):
    """Waits `warmup` seconds (start-up is not steady state), then returns the
    process's CPU ns over the next `seconds` and the wall seconds they took.
    Raises when the process exited before the end: no figure for it."""
    time.sleep(warmup)
    c0, t0 = cpu_ns(pid), time.monotonic()
    time.sleep(seconds)
    c1, wall = cpu_ns(pid), time.monotonic() - t0
    if not running(pid):
        raise RuntimeError(f"process {pid} exited while it was measured")
    return c1 - c0, wall
