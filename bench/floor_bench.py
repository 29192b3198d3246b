#!/usr/bin/env python3
"""CPU of edgemond beside two floors, both bench/floor_sampler, which wakes on
absolute deadlines and preads the distinct files the collectors read: one
does nothing else (pread only), the other also turns each file's text into
numbers (strtoll/strtod over every token into a reused array: pread and
parse, the floor as the performance target defines it). Two settings, each on
the same simulated AGX Orin tree (edgemon-sim), the daemon and both floors
running at once over the same window (so that the ratios do not follow this
VM's drift from one window to the next; --one-at-a-time measures them in turn):
  * 100 Hz frames (sampling, storing, publishing to the watch hub and
    /metrics), rails only with frames;
  * 1 Hz frames with the rails at 100 Hz (the energy path between frames),
    the daemon's default shape; the floor reads the rail files every tick
    and the rest once a second.
CPU comes from /proc/PID/task/*/schedstat over a steady-state window, as
microseconds of CPU per 10 ms tick. Rounds alternate which process starts
first (on this VM the order alone moved identical floors by up to 30 %).
--with-collectors adds a third reference, the daemon's own collectors on the
same bare loop (floor_sampler --collect): what sampling alone costs, apart
from storing, publishing and the daemon's threads. --edgemond measures
another build of the daemon (an older one, side by side) against the same
floors.

  bench/floor_bench.py BUILD_DIR [--seconds 30] [--board agx-orin] [--edgemond PATH]
                       [--rounds N] [--one-at-a-time] [--with-collectors]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import board_args, cpu_ns, cpu_over, simulated_board  # noqa: E402
from harness import free_port  # noqa: E402

RATE_HZ = 100
WARMUP_S = 2


def measure(cmd, seconds):
    """CPU ns per 1/RATE_HZ tick of a process over `seconds` after a warm-up."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cpu, wall = cpu_over(p.pid, WARMUP_S, seconds)
    finally:
        p.terminate()
        p.wait(timeout=30)
    return cpu / (wall * RATE_HZ)


def measure_together(cmds, seconds, reverse=False):
    """CPU ns per 1/RATE_HZ tick of each of `cmds`, all running at once, over
    the same `seconds` after a warm-up: each sees the same machine, so their
    ratio does not follow the VM's drift from one window to the next.
    `reverse` starts them last to first (the figures keep `cmds`' order)."""
    order = list(reversed(range(len(cmds)))) if reverse else list(range(len(cmds)))
    started = {i: subprocess.Popen(cmds[i], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) for i in order}
    procs = [started[i] for i in range(len(cmds))]
    try:
        time.sleep(WARMUP_S)
        c0, t0 = [cpu_ns(p.pid) for p in procs], time.monotonic()
        time.sleep(seconds)
        c1, wall = [cpu_ns(p.pid) for p in procs], time.monotonic() - t0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    return [(b - a) / (wall * RATE_HZ) for a, b in zip(c0, c1)]


def main():
    ap = board_args()
    ap.add_argument("--edgemond", help="the daemon to measure (default: BUILD_DIR's)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure each setting this many times, alternating, and print the "
                         "median ratio (each round's figures too)")
    ap.add_argument("--with-collectors", action="store_true",
                    help="also run the daemon's own collectors on the bare loop "
                         "(floor_sampler --collect) and print the daemon's ratio to them")
    ap.add_argument("--one-at-a-time", action="store_true",
                    help="measure the daemon, then each floor, in turn (default: all "
                         "at once, over the same window)")
    a = ap.parse_args()
    edgemond = a.edgemond or os.path.join(a.build, "daemon", "edgemond")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="edgemon-floor-") as tmp, \
            simulated_board(a.build, a.board, tmp) as root:
        cfg = os.path.join(tmp, "edgemond.toml")
        with open(cfg, "w") as f:
            f.write("[store]\ncommit_interval_ms = 1000\n")
        how = "each in turn" if a.one_at_a_time else "the daemon and the floors at once"
        print(f"board {a.board} (simulated), {a.seconds:.0f} s, {how}, CPU from schedstat, "
              f"load average {load[0]:.2f} at the start")
        print(f"edgemond: {edgemond}")
        settings = (("100 Hz frames", 1000 // RATE_HZ, 0, 1),
                    ("1 Hz frames, rails at 100 Hz", 1000, RATE_HZ, RATE_HZ))
        refs = ("pread only", "pread and parse") + (("collectors",) if a.with_collectors else ())
        ratios = {(label, what): [] for label, *_ in settings for what in refs}
        for rnd in range(1, a.rounds + 1):
            for label, interval_ms, energy_hz, frame_every in settings:
                db = os.path.join(tmp, f"floor-{interval_ms}-{rnd}.db")
                daemon_cmd = [edgemond, "--root", root,
                              "--db", db, "--config", cfg,
                              "--listen", "unix:" + os.path.join(tmp, "e.sock"),
                              "--metrics-listen", f"127.0.0.1:{free_port()}",
                              "--interval-ms", str(interval_ms),
                              "--energy-rate-hz", str(energy_hz),
                              "--log-level", "warn"]
                floor_cmds = [(what, [os.path.join(a.build, "bench", "floor_sampler"),
                                      "--root", root, "--rate-hz", str(RATE_HZ),
                                      "--frame-every", str(frame_every),
                                      "--seconds", str(a.seconds + WARMUP_S + 5), *extra])
                              for what, extra in (("pread only", []),
                                                  ("pread and parse", ["--parse"]),
                                                  ("collectors", ["--collect"]))
                              if what != "collectors" or a.with_collectors]
                if a.one_at_a_time:
                    daemon = measure(daemon_cmd, a.seconds)
                    floors = [(what, measure(cmd, a.seconds)) for what, cmd in floor_cmds]
                else:
                    daemon, *costs = measure_together(
                        [daemon_cmd] + [cmd for _, cmd in floor_cmds], a.seconds,
                        reverse=rnd % 2 == 0)
                    floors = [(what, cost) for (what, _), cost in zip(floor_cmds, costs)]
                print(f"{label}" + (f" (round {rnd}, load {os.getloadavg()[0]:.2f})"
                                    if a.rounds > 1 else "") + ":")
                print(f"  edgemond              {daemon / 1e3:8.1f} us CPU per 10 ms tick")
                for what, floor in floors:
                    print(f"  floor, {what:15} {floor / 1e3:8.1f} us CPU per 10 ms tick "
                          f"(absolute deadline)")
                for what, floor in floors:
                    ratios[(label, what)].append(daemon / floor)
                    goal = "for reference" if what == "collectors" else "target: within 1.5x"
                    print(f"  ratio to {what:13} {daemon / floor:8.2f}x ({goal})")
        if a.rounds > 1:
            print(f"over {a.rounds} rounds:")
            for (label, what), rs in ratios.items():
                within = ("" if what == "collectors" else
                          f"; within 1.5x in {sum(r <= 1.5 for r in rs)} of {len(rs)}")
                print(f"  {label}, to {what}: median {statistics.median(rs):.2f}x "
                      f"({min(rs):.2f}-{max(rs):.2f}x{within})")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
