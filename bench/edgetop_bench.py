#!/usr/bin/python3
"""edgetop's cost: runs edgetop in a tmux terminal (120x40 unless told) against
edgemond on a simulated AGX Orin (edgemon-sim) at a 1 s refresh for N seconds
and prints its CPU share of one core (utime + stime from /proc/PID/stat over
the measured span) and its RSS (VmRSS at the end, VmHWM peak).

  bench/edgetop_bench.py --build build [--seconds 60] [--interval-ms 1000] \
      [--page 1] [--daemon-interval-ms 100]

Targets (issue 6): under 0.5 % of a core and under 10 MiB. RSS counts the
clean pages of the shared libraries (libgrpc alone maps about 5 MiB of them),
so the private memory and PSS are printed beside it.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def rollup_kib(pid):
    """Pss and private (clean + dirty) memory from smaps_rollup, in KiB."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                out[parts[0][:-1]] = int(parts[1])
    return out.get("Pss", 0), out.get("Private_Clean", 0) + out.get("Private_Dirty", 0), \
        out.get("Shared_Clean", 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--daemon-interval-ms", type=int, default=100)
    ap.add_argument("--page", default="1", choices=["1", "2", "3"])
    ap.add_argument("--size", default="120x40")
    args = ap.parse_args()
    b = args.build
    edgetop = os.path.join(b, "tui", "edgetop")
    edgemond = os.path.join(b, "daemon", "edgemond")
    sim_bin = os.path.join(b, "daemon", "sim", "edgemon-sim")
    for p in (edgetop, edgemond, sim_bin):
        if not os.access(p, os.X_OK):
            sys.exit(f"edgetop_bench: {p} not built")
    tmux_bin = shutil.which("tmux")
    if tmux_bin is None:
        sys.exit("edgetop_bench: tmux not found")
    x, y = args.size.split("x")

    tmp = tempfile.mkdtemp(prefix="edgetop-bench-")
    env = dict(os.environ, TMUX_TMPDIR=tmp)
    env.pop("TMUX", None)
    env.pop("NOTIFY_SOCKET", None)
    tmux = [tmux_bin, "-L", f"edgetop-bench-{os.getpid()}"]
    root = os.path.join(tmp, "board")
    sock = os.path.join(tmp, "d.sock")
    sim = subprocess.Popen([sim_bin, "--board", "agx-orin", "--out", root, "--rate-hz", "20",
                            "-q"])
    daemon = None
    try:
        while not os.path.exists(os.path.join(root, ".edgemon-sim.json")):
            time.sleep(0.05)
        daemon = subprocess.Popen([edgemond, "--root", root, "--db", os.path.join(tmp, "d.db"),
                                   "--listen", "unix:" + sock, "--interval-ms",
                                   str(args.daemon_interval_ms)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        while not os.path.exists(sock):
            time.sleep(0.05)
        cmd = (f"env LANG=C.UTF-8 TERM=screen-256color {os.path.abspath(edgetop)} "
               f"--connect unix:{sock} --interval {args.interval_ms}ms; exec sleep 3600")
        subprocess.run(tmux + ["new-session", "-d", "-s", "b", "-x", x, "-y", y, cmd], env=env,
                       check=True)
        shell = subprocess.run(tmux + ["display-message", "-p", "-t", "b", "#{pane_pid}"],
                               env=env, capture_output=True, text=True).stdout.strip()
        pid = None
        for _ in range(100):
            out = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout
            if out.split():
                pid = int(out.split()[0])
                break
            time.sleep(0.05)
        if pid is None:
            sys.exit("edgetop_bench: edgetop did not start")
        subprocess.run(tmux + ["send-keys", "-t", "b", args.page], env=env, check=True)
        time.sleep(args.warmup)
        hz = os.sysconf("SC_CLK_TCK")
        t0, c0 = time.monotonic(), ticks(pid)
        time.sleep(args.seconds)
        t1, c1 = time.monotonic(), ticks(pid)
        rss = status_kib(pid, "VmRSS")
        hwm = status_kib(pid, "VmHWM")
        pss, private, shared_clean = rollup_kib(pid)
        screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", "b"], env=env,
                                capture_output=True, text=True).stdout
        if "connected" not in screen.split("\n")[0]:
            print("warning: edgetop was not connected at the end:\n" + screen, file=sys.stderr)
        cpu = (c1 - c0) / hz / (t1 - t0) * 100
        print(f"edgetop {args.size} page {args.page}, refresh {args.interval_ms} ms, "
              f"daemon {args.daemon_interval_ms} ms, simulated agx-orin, {t1 - t0:.0f} s")
        print(f"cpu_percent_of_one_core {cpu:.3f}  ({c1 - c0} ticks at {hz} Hz)")
        print(f"rss_mib {rss / 1024:.1f}  peak_rss_mib {hwm / 1024:.1f}  "
              f"(shared library pages {shared_clean / 1024:.1f}, private {private / 1024:.1f}, "
              f"pss {pss / 1024:.1f})")
        subprocess.run(tmux + ["send-keys", "-t", "b", "q"], env=env)
        time.sleep(0.3)
    finally:
        subprocess.run(tmux + ["kill-server"], env=env, capture_output=True)
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=25)
        sim.terminate()
        sim.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
