#!/usr/bin/python3
"""How long and how much energy a measured second is reported as, against
edgemond on a simulated board (edgemon-sim), whose rails follow known
waveforms, so each figure is compared with the analytic truth.

  * N fresh Python processes, each `with client.measure("bench"):
    time.sleep(S)`: the window's duration, and its energy on every rail
    against the analytic integral over the window's own edges (the daemon's
    integration) and over the body as the process itself timed it (what the
    user wanted measured: edges and integration together);
  * N `edgemon record --out DIR -- sleep S`: the window's duration and its
    energy against the analytic integral over the window's edges.

Prints min/p50/p99/max of each, the share of measure() durations within
S .. S + 10 ms, and the load average before and after (the figures are only
as quiet as the machine). --no-stamp sends no caller stamps from measure()
(the daemon stamps each edge when its call arrives), for comparison.

  bench/measure_bench.py [--build build] [-n 50] [--sleep 1.0] [--board orin-nano]
      [--interval-ms 1000] [--energy-rate-hz 100] [--no-stamp]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import edgemond_on, simulated_board  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import analytic_energy_mj  # noqa: E402

# One fresh process: measure() around a sleep; prints the window and the body's own edges.
CHILD = r"""
import json, sys, time
import edgemon
from edgemon import _measure
if sys.argv[3] == "no-stamp":
    _measure.boottime_ns = lambda: None
c = edgemon.connect(sys.argv[1])
with c.measure("bench") as m:
    t0 = time.time_ns()
    time.sleep(float(sys.argv[2]))
    t1 = time.time_ns()
r = m.result
print(json.dumps({"from_ns": r.summary.from_ns, "to_ns": r.summary.to_ns,
                  "body": [t0, t1],
                  "energy_mj": {n: e * 1000 for n, e in r.energy_j.items()}}))
"""


def quantiles(xs):
    """min, p50, p99 and max (nearest rank)."""
    s = sorted(xs)
    def rank(q):
        return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))]
    return s[0], rank(0.5), rank(0.99), s[-1]


def row(name, xs, unit, scale=1.0, fmt="%.4f"):
    lo, p50, p99, hi = (x * scale for x in quantiles(xs))
    f = "  %-44s min " + fmt + "  p50 " + fmt + "  p99 " + fmt + "  max " + fmt + " %s"
    print(f % (name, lo, p50, p99, hi, unit))


def worst_error(sidecar, energy_mj, from_ns, to_ns):
    """The largest |reported - analytic| / analytic over the rails, in %."""
    worst = 0.0
    for rail, got in energy_mj.items():
        truth = analytic_energy_mj(sidecar, rail, from_ns, to_ns)
        if truth > 0:
            worst = max(worst, abs(got - truth) / truth * 100)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--sleep", type=float, default=1.0)
    ap.add_argument("--board", default="orin-nano")
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--energy-rate-hz", type=int, default=100)
    ap.add_argument("--sim-rate-hz", type=int, default=200)
    ap.add_argument("--no-stamp", action="store_true")
    ap.add_argument("--skip-record", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory(prefix="edgemon-measure-bench-") as tmp:
        log = open(os.path.join(tmp, "log"), "w")
        with simulated_board(build, args.board, tmp, log, args.sim_rate_hz) as root:
            with open(os.path.join(root, ".edgemon-sim.json")) as f:
                sidecar = json.load(f)
            target = "unix:" + os.path.join(tmp, "api.sock")
            cli = os.path.join(build, "client", "cli", "edgemon")
            with edgemond_on(os.path.join(build, "daemon", "edgemond"), cli, root, tmp, target,
                             log, args.interval_ms, args.energy_rate_hz):
                run(args, cli, tmp, target, dict(os.environ, PYTHONPATH=os.path.join(
                    build, "python")), sidecar)


def run(args, cli, tmp, target, env, sidecar):
    time.sleep(2 * args.interval_ms / 1000)  # a few frames before anything is measured
    load_before = os.getloadavg()

    durations, window_err, body_err, overhead = [], [], [], []
    for _ in range(args.n):
        r = subprocess.run([sys.executable, "-c", CHILD, target, str(args.sleep),
                            "no-stamp" if args.no_stamp else "stamp"],
                           capture_output=True, text=True, env=env, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("measure() failed: " + r.stderr)
        m = json.loads(r.stdout)
        durations.append((m["to_ns"] - m["from_ns"]) / 1e9)
        overhead.append((m["to_ns"] - m["from_ns"] - (m["body"][1] - m["body"][0])) / 1e6)
        window_err.append(worst_error(sidecar, m["energy_mj"], m["from_ns"], m["to_ns"]))
        body_err.append(worst_error(sidecar, m["energy_mj"], *m["body"]))

    rec_durations, rec_err = [], []
    out = os.path.join(tmp, "run")
    for _ in range(0 if args.skip_record else args.n):
        r = subprocess.run([cli, "--connect", target, "record", "--out", out, "--",
                            "sleep", "%g" % args.sleep], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            raise RuntimeError("record failed: " + r.stderr)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        w = s["window"]
        rec_durations.append((w["end_ns"] - w["start_ns"]) / 1e9)
        rec_err.append(worst_error(sidecar, {x["name"]: x["energy_j"] * 1000
                                             for x in s["rails"]},
                                   s["range"]["from_ns"], s["range"]["to_ns"]))
    load_after = os.getloadavg()

    print("%s simulator, %d ms frames, %d Hz rails, unix socket; %d runs of a %.3f s body%s"
          % (args.board, args.interval_ms, args.energy_rate_hz, args.n, args.sleep,
             " (measure() without caller stamps)" if args.no_stamp else ""))
    print("  load average before %.2f %.2f %.2f, after %.2f %.2f %.2f"
          % (load_before + load_after))
    print("measure() in a fresh Python process:")
    row("reported duration", durations, "s")
    row("window - body as the process timed it", overhead, "ms", fmt="%+.3f")
    row("energy error vs analytic, window edges", window_err, "% (worst rail)", fmt="%.3f")
    row("energy error vs analytic, body edges", body_err, "% (worst rail)", fmt="%.3f")
    inside = sum(args.sleep <= d <= args.sleep + 0.010 for d in durations)
    print("  %d/%d durations within %.3f-%.3f s; %d/%d energies within 2 %% of the body's"
          % (inside, len(durations), args.sleep, args.sleep + 0.010,
             sum(e <= 2.0 for e in body_err), len(body_err)))
    if rec_durations:
        print("edgemon record -- sleep %g:" % args.sleep)
        row("reported duration", rec_durations, "s")
        row("energy error vs analytic, window edges", rec_err, "% (worst rail)", fmt="%.3f")


if __name__ == "__main__":
    main()
