#!/usr/bin/env python3
"""CPU of edgemond beside two floors, both bench/floor_sampler, which wakes on
absolute deadlines and preads the distinct files the collectors read: one
does nothing else (pread only), the other also turns each file's text into
numbers (strtoll/strtod over every token into a reused array: pread and
parse, the floor as the performance target defines it). Two settings, each on
the same simulated AGX Orin tree (edgemon-sim):
  * 100 Hz frames (sampling, storing, publishing to the watch hub and
    /metrics), rails only with frames;
  * 1 Hz frames with the rails at 100 Hz (the energy path between frames),
    the daemon's default shape; the floor reads the rail files every tick
    and the rest once a second.
CPU comes from /proc/PID/task/*/schedstat, as microseconds of CPU per 10 ms
tick. By default the processes are measured interleaved: all start, then
each in turn runs alone (the others stopped with SIGSTOP) for 1 s slices,
after 0.3 s to settle, the slices rotating, until each has run --seconds.
Each is measured with the machine to itself (on this 2-core VM, processes
waking at once slow each other by how their deadlines happen to line up) and
over the same stretch of time (so the ratios do not follow the VM's drift).
A second pread-and-parse floor runs as a control: its ratio to the first is
what two identical processes differ by, the bench's own noise.
--together runs them all at once over one window instead (rounds alternate
which starts first); --one-at-a-time, each in turn over a whole window.
Interleaved, it also prints the pages each process touches in a tick or two
(the accessed bits cleared, then counted; by where they lie: the program,
the heap, the libraries, the rest), the working set each wake-up brings
back into the caches.
--with-collectors adds a third reference, the daemon's own collectors on the
same bare loop (floor_sampler --collect): what sampling alone costs, apart
from storing, publishing and the daemon's threads. The target: the daemon
within 1.3x the pread-and-parse floor measured alone (interleaved or one at
a time), 1.5x measured at once; each round's ratio is printed against it,
and over rounds, how many held. --edgemond measures another build of the
daemon (an older one) against the same floors; --baseline measures a second
build in the same run, interleaved with the rest, and prints the first
daemon's cost over the second's: a change to the daemon against the build
before it, slice by slice on the same machine, which separate runs cannot
resolve below the VM's drift. A process that exits while measured stops the
bench with an error (its CPU would read as none). The daemons run at their
own store settings, as installed (the automatic commit interval: beside the
flight recorder, a commit every 512 frames at 100 Hz); --commit-interval-ms
pins store.commit_interval_ms instead (1000: a commit in every slice).

  bench/floor_bench.py BUILD_DIR [--seconds 30] [--board agx-orin] [--edgemond PATH]
                       [--baseline PATH] [--rounds N] [--together | --one-at-a-time]
                       [--with-collectors] [--commit-interval-ms MS]
"""
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (board_args, cpu_ns, cpu_over, pages_touched,  # noqa: E402
                          simulated_board, thread_cpu_ns)
from harness import free_port  # noqa: E402

RATE_HZ = 100
WARMUP_S = 2
# Interleaved: each slice of a process alone is measured for SLICE_S after
# SETTLE_S (a stopped process's missed deadlines, the store's work on what
# was queued before the stop). Whole seconds: each slice holds one 1 Hz
# frame (and, under --commit-interval-ms 1000, one commit).
SLICE_S = 1
SETTLE_S = 0.3
CONTROL = "the control floor"

BASELINE = "the baseline"


def still_running(procs, cmds):
    """Stops the bench when a process measured has exited: its CPU would
    read as nothing, and a dead daemon as one within any bound."""
    for p, cmd in zip(procs, cmds):
        if p.poll() is not None:
            sys.exit(f"floor_bench: {cmd[0]} exited (status {p.returncode}) while it was "
                     f"measured: {' '.join(cmd)}")


def measure(cmd, seconds):
    """CPU ns per 1/RATE_HZ tick of a process over `seconds` after a warm-up."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cpu, wall = cpu_over(p.pid, WARMUP_S, seconds)  # raises if it exited
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
        still_running(procs, cmds)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    return [(b - a) / (wall * RATE_HZ) for a, b in zip(c0, c1)]


def measure_interleaved(cmds, seconds, by_thread, touched):
    """CPU ns per 1/RATE_HZ tick of each of `cmds`: all start, then each in
    turn runs alone (the others stopped) for SLICE_S slices, rotating, until
    each has run `seconds`. `by_thread` gets the first command's CPU ns per
    tick and runs per second by thread name; `touched` each command's pages
    touched in 1.5 ticks (at least one whole tick; the next touches the same
    pages), by where they lie (bench_common's pages_touched; the median over
    its slices), counted after each slice's CPU window (clearing the accessed
    bits flushes the process's TLB)."""
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for c in cmds]
    cpu, wall = [0] * len(procs), [0.0] * len(procs)
    threads = {}
    windows = [[] for _ in procs]
    try:
        time.sleep(WARMUP_S)
        for p in procs:
            os.kill(p.pid, signal.SIGSTOP)
        for n in range(max(1, math.ceil(seconds / SLICE_S))):
            for i in ((n + k) % len(procs) for k in range(len(procs))):
                pid = procs[i].pid
                os.kill(pid, signal.SIGCONT)
                time.sleep(SETTLE_S)
                before, t0 = thread_cpu_ns(pid), time.monotonic()
                time.sleep(SLICE_S)
                after = thread_cpu_ns(pid)
                wall[i] += time.monotonic() - t0
                try:
                    windows[i].append(pages_touched(pid, 1.5 / RATE_HZ))
                except OSError:
                    pass  # it exited: still_running below says so
                os.kill(pid, signal.SIGSTOP)
                still_running([procs[i]], [cmds[i]])
                for tid, (name, ns, runs) in after.items():
                    _, ns0, runs0 = before.get(tid, (name, 0, 0))
                    cpu[i] += ns - ns0
                    if i == 0:
                        ns_sum, runs_sum = threads.get(name, (0, 0))
                        threads[name] = (ns_sum + ns - ns0, runs_sum + runs - runs0)
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.terminate()
        for p in procs:
            p.wait(timeout=30)
    by_thread.update({name: (ns / (wall[0] * RATE_HZ), runs / wall[0])
                      for name, (ns, runs) in threads.items()})
    touched.extend({where: statistics.median(w[where] for w in ws) for where in ws[0]}
                   for ws in windows if ws)
    return [c / (w * RATE_HZ) for c, w in zip(cpu, wall)]


def main():
    ap = board_args()
    ap.add_argument("--edgemond", help="the daemon to measure (default: BUILD_DIR's)")
    ap.add_argument("--baseline", metavar="PATH",
                    help="a second edgemond (the build before a change) measured in the same "
                         "run, interleaved with the rest: prints the daemon's cost over the "
                         "baseline's")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure each setting this many times, alternating, and print the "
                         "median ratio (each round's figures too)")
    ap.add_argument("--with-collectors", action="store_true",
                    help="also run the daemon's own collectors on the bare loop "
                         "(floor_sampler --collect) and print the daemon's ratio to them")
    ap.add_argument("--commit-interval-ms", type=int, metavar="MS",
                    help="the daemons' store.commit_interval_ms (default: the daemon's own, "
                         "automatic); 1000 measures a commit in every 1 s slice")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--together", action="store_true",
                     help="run the daemon and the floors all at once over one window "
                          "(default: interleaved, each alone in turn in 1 s slices)")
    how.add_argument("--one-at-a-time", action="store_true",
                     help="measure the daemon, then each floor, in turn over a whole window")
    a = ap.parse_args()
    if a.commit_interval_ms is not None and not (a.commit_interval_ms == -1 or
                                                 0 <= a.commit_interval_ms <= 600_000):
        ap.error("--commit-interval-ms: between 0 and 600000, or -1 (automatic)")
    edgemond = a.edgemond or os.path.join(a.build, "daemon", "edgemond")
    load = os.getloadavg()
    # The runtime directory (the API socket, the flight recorder's ring
    # beside it) on tmpfs, as systemd's RuntimeDirectory (/run/edgemon) has
    # it: on a disk file system every frame's record would dirty the disk's
    # pages, a cost the installed daemon never pays.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="edgemon-floor-") as tmp, \
            tempfile.TemporaryDirectory(prefix="edgemon-floor-run-", dir=shm) as run, \
            simulated_board(a.build, a.board, tmp) as root:
        # The daemon as installed: its own store settings (the automatic
        # commit interval: 512-frame batches beside the flight recorder),
        # unless --commit-interval-ms pins one.
        cfg = os.path.join(tmp, "edgemond.toml")
        with open(cfg, "w") as f:
            if a.commit_interval_ms is not None:
                f.write(f"[store]\ncommit_interval_ms = {a.commit_interval_ms}\n")
        how = ("each in turn" if a.one_at_a_time else
               "the daemon and the floors at once" if a.together else
               f"interleaved ({SLICE_S} s slices of each alone, after {SETTLE_S} s to settle)")
        print(f"board {a.board} (simulated), {a.seconds:.0f} s each, {how}, CPU from schedstat, "
              f"load average {load[0]:.2f} at the start")
        print(f"edgemond: {edgemond}, store commits: " +
              ("its own (automatic)" if a.commit_interval_ms is None
               else f"store.commit_interval_ms = {a.commit_interval_ms}"))
        # The target: 1.3x the pread-and-parse floor measured alone (interleaved,
        # or each in turn), 1.5x measured at once, where the processes share the
        # machine's two cores and slow each other.
        bound = 1.5 if a.together else 1.3
        settings = (("100 Hz frames", 1000 // RATE_HZ, 0, 1),
                    ("1 Hz frames, rails at 100 Hz", 1000, RATE_HZ, RATE_HZ))
        refs = ("pread only", "pread and parse") + (("collectors",) if a.with_collectors else ())
        others = (CONTROL,) + ((BASELINE,) if a.baseline else ())
        ratios = {(label, what): [] for label, *_ in settings for what in refs + others}
        # Long enough for every mode: interleaved, each process waits while
        # the others run their slices.
        floor_seconds = (WARMUP_S + 5 + (len(refs) + 3) * math.ceil(a.seconds / SLICE_S) *
                         (SLICE_S + SETTLE_S + 0.5))
        for rnd in range(1, a.rounds + 1):
            for label, interval_ms, energy_hz, frame_every in settings:
                def daemon_cmd(path, name):
                    return [path, "--root", root,
                            "--db", os.path.join(tmp, f"{name}-{interval_ms}-{rnd}.db"),
                            "--config", cfg,
                            "--listen", "unix:" + os.path.join(run, f"{name}.sock"),
                            "--metrics-listen", f"127.0.0.1:{free_port()}",
                            "--interval-ms", str(interval_ms),
                            "--energy-rate-hz", str(energy_hz),
                            "--log-level", "warn"]
                floor_cmds = [(what, [os.path.join(a.build, "bench", "floor_sampler"),
                                      "--root", root, "--rate-hz", str(RATE_HZ),
                                      "--frame-every", str(frame_every),
                                      "--seconds", str(floor_seconds), *extra])
                              for what, extra in (("pread only", []),
                                                  ("pread and parse", ["--parse"]),
                                                  ("collectors", ["--collect"]),
                                                  (CONTROL, ["--parse"]))
                              if what != "collectors" or a.with_collectors]
                if a.baseline:
                    floor_cmds.append((BASELINE, daemon_cmd(a.baseline, "baseline")))
                by_thread, touched = {}, []
                if a.one_at_a_time:
                    daemon = measure(daemon_cmd(edgemond, "floor"), a.seconds)
                    floors = [(what, measure(cmd, a.seconds)) for what, cmd in floor_cmds]
                else:
                    cmds = [daemon_cmd(edgemond, "floor")] + [cmd for _, cmd in floor_cmds]
                    daemon, *costs = (measure_together(cmds, a.seconds, reverse=rnd % 2 == 0)
                                      if a.together else
                                      measure_interleaved(cmds, a.seconds, by_thread, touched))
                    floors = [(what, cost) for (what, _), cost in zip(floor_cmds, costs)]
                control = dict(floors).pop(CONTROL)
                baseline = dict(floors).get(BASELINE)
                floors = [(what, cost) for what, cost in floors if what not in others]
                print(f"{label}" + (f" (round {rnd}, load {os.getloadavg()[0]:.2f})"
                                    if a.rounds > 1 else "") + ":")
                print(f"  edgemond              {daemon / 1e3:8.1f} us CPU per 10 ms tick")
                if by_thread:
                    print("    by thread (us a tick, times run a second): " + ", ".join(
                        f"{name} {ns / 1e3:.1f} ({runs:.1f}/s)" for name, (ns, runs) in
                        sorted(by_thread.items(), key=lambda kv: -kv[1][0]) if ns >= 50))
                for what, floor in floors:
                    print(f"  floor, {what:15} {floor / 1e3:8.1f} us CPU per 10 ms tick "
                          f"(absolute deadline)")
                for what, floor in floors:
                    ratios[(label, what)].append(daemon / floor)
                    goal = (f"target: within {bound}x" if what == "pread and parse" else
                            "for reference")
                    print(f"  ratio to {what:13} {daemon / floor:8.2f}x ({goal})")
                parse = dict(floors)["pread and parse"]
                ratios[(label, CONTROL)].append(control / parse)
                print(f"  control: a second pread-and-parse floor, {control / 1e3:.1f} us, "
                      f"{control / parse:.2f}x the first (what identical processes differ by)")
                if touched:
                    print(f"  pages touched in {1.5e3 / RATE_HZ:.0f} ms, a tick or two (median of "
                          "slices; program, heap, libraries, other): " + "; ".join(
                              f"{what} {sum(t.values()):.0f} ({t['program']:.0f}, "
                              f"{t['heap']:.0f}, {t['libraries']:.0f}, {t['other']:.0f})"
                              for what, t in zip(["edgemond"] + [w for w, _ in floor_cmds],
                                                 touched)))
                if baseline:
                    ratios[(label, BASELINE)].append(daemon / baseline)
                    print(f"  the baseline ({a.baseline}): {baseline / 1e3:.1f} us, "
                          f"{baseline / parse:.2f}x the floor; edgemond is "
                          f"{daemon / baseline:.3f}x its cost")
        if a.rounds > 1:
            print(f"over {a.rounds} rounds:")
            for (label, what), rs in ratios.items():
                within = ("" if what != "pread and parse" else
                          f"; within {bound}x in {sum(r <= bound for r in rs)} of {len(rs)}")
                whose = ("the control floor to pread and parse" if what == CONTROL else
                         "edgemond to the baseline" if what == BASELINE else f"to {what}")
                print(f"  {label}, {whose}: median {statistics.median(rs):.2f}x "
                      f"({min(rs):.2f}-{max(rs):.2f}x{within})")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
