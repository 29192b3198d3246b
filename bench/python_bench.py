#!/usr/bin/python3
"""The Python client's costs, against edgemond on a simulated Orin Nano
(edgemon-sim), with the packages from the build tree (build/python):

  * `import edgemon` time (fresh interpreters, median of 7, less the
    interpreter's own start: bench/python_import.py);
  * latest() round trip (median and p99 of 300 calls over the unix socket);
  * watch(interval=0.01) at 100 Hz for 5 s: the client's CPU share of one core;
  * measure() overhead on a 0-second body (enter + exit: BeginWindow and
    EndWindow, plus Boost with rate_hz; the summary is fetched later, on use);
  * the jtop shim at 1 Hz: CPU per sample and RSS of a process that only
    reads jetson.stats once a second for 10 s (counted from its first
    sample off the stream, so over as many seconds as samples, as the
    reference: the sample after start() can take up to two intervals),
    where its frames came from (the daemon's local feed, or the Watch
    stream), and its CPU and the times each thread ran by thread
    (/proc/self/task/*/schedstat: the caller's ok() and stats, the sampling
    thread, any gRPC thread);
    beside it, measured in the same run, a bare gRPC client that asks for
    the newest frame once a second and decodes nothing (the floor of any
    client polling at 1 Hz on this machine at this load), and jetson-stats'
    own client as its figures were published (not measured here: it needs a
    Jetson).

The load average is printed before and after: the figures are CPU time, but a
busy machine makes every wake-up costlier.

  bench/python_bench.py --build build [--seconds 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import start_sim, stop_process  # noqa: E402
from python_import import CONTROL, import_times, load  # noqa: E402 (bench/python_import.py)

JTOP_CHILD = r"""
import glob, os, resource, sys, time
from jtop import jtop

def per_thread(caller_last):
    # (name, CPU ns, times on a CPU) by thread id. The caller's own is read
    # last at the start and first at the end: the reading is not counted.
    own = "/proc/self/task/%d" % os.getpid()
    tasks = [t for t in glob.glob("/proc/self/task/*") if t != own]
    out = {}
    for task in tasks + [own] if caller_last else [own] + tasks:
        try:
            with open(task + "/schedstat") as f:
                ns, _, runs = f.read().split()
            with open(task + "/comm") as f:
                out[int(os.path.basename(task))] = (f.read().strip(), int(ns), int(runs))
        except OSError:
            pass  # ended meanwhile
    return out

n = int(sys.argv[1])
with jtop(interval=1.0) as jetson:
    jetson.ok()  # the sample start() took
    jetson.ok()  # the stream's first: counted from here, n samples in n seconds
    t0, c0 = per_thread(True), time.process_time()
    for _ in range(n):
        jetson.ok()
        s = jetson.stats
    c1, t1 = time.process_time(), per_thread(False)
    source = type(jetson._watch).__name__
    sampler = jetson.native_id
rss = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            rss = int(line.split()[1])
threads = {}
for tid, (name, ns, runs) in t1.items():
    name = "caller" if tid == os.getpid() else "sampling" if tid == sampler else name
    _, ns0, runs0 = t0.get(tid, (name, 0, 0))
    ns_sum, runs_sum = threads.get(name, (0, 0))
    threads[name] = (ns_sum + ns - ns0, runs_sum + runs - runs0)
print((c1 - c0) / n * 1000, rss / 1024.0, {"Feed": "feed", "_Watch": "Watch"}.get(source, source),
      " ".join("%s=%.3f/%.1f" % (k, ns / n / 1e6, runs / n)
               for k, (ns, runs) in sorted(threads.items())))
"""

# The floor of a 1 Hz client: GetLatest once a second, nothing decoded.
BARE_CHILD = r"""
import sys, time
import grpc
from edgemon.v1 import edgemon_pb2 as pb, edgemon_pb2_grpc as pb_grpc
n = int(sys.argv[1])
stub = pb_grpc.TelemetryStub(grpc.insecure_channel(sys.argv[2]))
stub.GetLatest(pb.GetLatestRequest(), timeout=10)
due = time.monotonic() + 1.0
c0 = time.process_time()
for _ in range(n):
    time.sleep(max(0.0, due - time.monotonic()))
    due += 1.0
    stub.GetLatest(pb.GetLatestRequest(), timeout=10)
print((time.process_time() - c0) / n * 1000)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--jtop-samples", type=int, default=10)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    pypath = os.path.join(build, "python")
    sys.path.insert(0, pypath)
    env = dict(os.environ, PYTHONPATH=pypath)
    fixtures = os.path.join(HERE, "..", "tests", "fixtures")
    with tempfile.TemporaryDirectory(prefix="edgemon-pybench-") as tmp:
        log = open(os.path.join(tmp, "log"), "w")
        sim, _ = start_sim(os.path.join(build, "daemon", "sim", "edgemon-sim"), "orin-nano",
                           os.path.join(tmp, "root"), fixtures, log, ["--rate-hz", "200"])
        sock = os.path.join(tmp, "s.sock")
        daemon = subprocess.Popen(
            [os.path.join(build, "daemon", "edgemond"), "--root", os.path.join(tmp, "root"),
             "--db", os.path.join(tmp, "db"), "--listen", "unix:" + sock,
             "--interval-ms", "10"], stdout=subprocess.DEVNULL, stderr=log)
        try:
            while not os.path.exists(sock):
                time.sleep(0.02)
            time.sleep(0.5)
            print("load average (1, 5, 15 min) before: %s, %d CPUs" % (load(), os.cpu_count()))
            run(args, env, "unix:" + sock)
            print("load average after:  %s" % load())
        finally:
            stop_process(daemon)
            stop_process(sim)


def run(args, env, target):
    # 1. import time (bench/python_import.py has it beside `import grpc`)
    times = import_times(sys.executable, env, [CONTROL, "import edgemon"], 7)
    print("import edgemon:                 %.1f ms (median of 7 fresh interpreters, less "
          "that of `python3 -c pass`)" % (statistics.median(times["import edgemon"]) -
                                          statistics.median(times[CONTROL])))

    import edgemon
    c = edgemon.connect(target)
    c.device()
    c.latest()
    # 2. latest()
    lat = []
    for _ in range(300):
        t = time.perf_counter()
        c.latest()
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    print("latest() round trip:            %.3f ms median, %.3f ms p99 (300 calls, %d channels)"
          % (statistics.median(lat), lat[int(len(lat) * 0.99)], len(c.channels())))

    # 3. watch at 100 Hz
    w = c.watch(interval=0.01)
    next(w)
    n, c0, t0 = 0, time.process_time(), time.monotonic()
    for snap in w:
        n += 1
        snap.get("rail/VDD_IN/power")
        if time.monotonic() - t0 >= args.seconds:
            break
    cpu, wall = time.process_time() - c0, time.monotonic() - t0
    w.close()
    print("watch(interval=0.01):           %.1f snapshots/s, client CPU %.1f %% of a core "
          "(%.3f ms per snapshot)" % (n / wall, cpu / wall * 100, cpu / n * 1000))

    # 4. measure() overhead on an empty body
    for rate in (None, 200):
        over = []
        for _ in range(50):
            t = time.perf_counter()
            with c.measure("empty", rate_hz=rate):
                pass
            over.append((time.perf_counter() - t) * 1000)
        over.sort()
        print("measure(rate_hz=%-4s) overhead:  %.2f ms median, %.2f ms max (0-second body, 50 runs)"
              % (rate, statistics.median(over), over[-1]))

    # 5. the jtop shim at 1 Hz
    envj = dict(env, EDGEMON_CONNECT=target)
    out = subprocess.check_output([sys.executable, "-c", JTOP_CHILD, str(args.jtop_samples)],
                                  env=envj, universal_newlines=True).split()
    print("jtop shim at 1 Hz:              %.2f ms CPU per sample, %.1f MiB RSS (peak; "
          "jetson-stats' client: 0.55 ms, 29 MB), frames from the %s"
          % (float(out[0]), float(out[1]), out[2]))
    print("  by thread, per sample:        %s (ms of CPU/times run)" % " ".join(out[3:]))
    bare = subprocess.check_output([sys.executable, "-c", BARE_CHILD, str(args.jtop_samples),
                                    target], env=env, universal_newlines=True)
    print("  reference, same run:          %.2f ms CPU per sample: a bare gRPC client "
          "(GetLatest once a second, nothing decoded)" % float(bare))


if __name__ == "__main__":
    main()
