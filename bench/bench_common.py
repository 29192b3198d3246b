"""What the benchmark scripts share: their usual arguments (a build
directory, seconds per run, a simulated board), a simulated board that runs for
the length of a `with`, and the CPU a process spends (from
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
from harness import rss_kib, start_sim, stop_process  # noqa: E402,F401 (rss_kib: for the scripts)


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


def cpu_ns(pid):
    # Every thread's time on CPU (the process's own schedstat is its main thread only).
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def cpu_over(pid, warmup, seconds):
    """Waits `warmup` seconds (start-up is not steady state), then returns the
    process's CPU ns over the next `seconds` and the wall seconds they took."""
    time.sleep(warmup)
    c0, t0 = cpu_ns(pid), time.monotonic()
    time.sleep(seconds)
    return cpu_ns(pid) - c0, time.monotonic() - t0
