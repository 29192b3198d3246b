#!/usr/bin/env python3
"""One run, side by side on the same fixture trees: edgemon's full sample
(collect_bench) and a scrape of Debian's prometheus-node-exporter restricted
to the collectors that read the same files (hwmon, thermal_zone, cpufreq,
rapl, powersupplyclass, meminfo, stat).

  bench/side_by_side.py build/bench/collect_bench [board ...]
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures")
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_exporter_scrape_us(root, n=200):
    port = free_port()
    proc = subprocess.Popen(
        [NODE_EXPORTER, "--collector.disable-defaults", "--collector.hwmon",
         "--collector.thermal_zone", "--collector.cpufreq", "--collector.rapl",
         "--collector.powersupplyclass", "--collector.meminfo", "--collector.stat",
         f"--path.sysfs={root}/sys", f"--path.procfs={root}/proc", f"--path.rootfs={root}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(0.05)
        times = []
        cpu0 = _cpu_ns(proc.pid)
        for _ in range(n):
            t0 = time.perf_counter_ns()
            urllib.request.urlopen(url, timeout=5).read()
            times.append((time.perf_counter_ns() - t0) / 1000)
        cpu_us = (_cpu_ns(proc.pid) - cpu0) / 1000 / n
    finally:
        proc.terminate()
        proc.wait()
    return statistics.median(times), cpu_us


def _cpu_ns(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks * 1e9 / os.sysconf("SC_CLK_TCK")


def main():
    bench = sys.argv[1]
    boards = sys.argv[2:] or ["agx-orin", "orin-nano", "x86-laptop", "node_exporter/node_exporter"]
    out = subprocess.run([bench, "--benchmark_format=json", "--benchmark_min_time=0.5",
                          "--benchmark_filter=" + "|".join(f"/{b}$" for b in boards)],
                         check=True, capture_output=True, text=True).stdout
    ours = {b["name"]: b["cpu_time"] / 1000 for b in json.loads(out)["benchmarks"]}
    print(f"{'board':30} {'edgemon sample':>15} {'pread floor':>12} {'ratio':>6} "
          f"{'node_exporter scrape':>21} {'(its CPU)':>10}")
    for b in boards:
        s, f = ours[f"sample/{b}"], ours[f"floor_pread/{b}"]
        wall, cpu = node_exporter_scrape_us(os.path.join(FIXTURES, b))
        print(f"{b:30} {s:12.1f} us {f:9.1f} us {s / f:6.2f} {wall:18.0f} us {cpu:7.0f} us")


if __name__ == "__main__":
    main()
