#!/usr/bin/env python3
"""/metrics under slow clients: scrapes per second, p50 and p99 latency of
normal scrapes while 0, 4 and 50 connections trickle one request byte a
second (slowloris), against a real edgemond on the fixture AGX Orin tree.

  bench/metrics_slowloris.py BUILD_DIR [--seconds 10] [--scrapers 4]
"""
import argparse
import http.client
import os
import socket
import subprocess
import tempfile
import threading
import time

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape_loop(port, stop, latencies, failures):
    conn = None
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError(r.status)
            latencies.append(time.monotonic() - t0)
        except Exception:  # noqa: BLE001 - a failed scrape is counted, not fatal
            failures.append(time.monotonic() - t0)
            conn = None


def trickle(port, n, stop):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        socks.append(s)
    head = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 4096
    i = 0
    while not stop.is_set():
        for k, s in enumerate(socks):
            try:
                s.send(head[i:i + 1])
            except OSError:  # cut by the server: reconnect, as an attacker would
                socks[k] = socket.create_connection(("127.0.0.1", port))
        i = (i + 1) % len(head)
        stop.wait(1.0)
    for s in socks:
        s.close()


def measure(port, slow, seconds, scrapers):
    stop = threading.Event()
    t = threading.Thread(target=trickle, args=(port, slow, stop))
    t.start()
    time.sleep(1.0)
    latencies, failures = [], []
    threads = [threading.Thread(target=scrape_loop, args=(port, stop, latencies, failures))
               for _ in range(scrapers)]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    time.sleep(seconds)
    stop.set()
    for th in threads + [t]:
        th.join()
    elapsed = time.monotonic() - t0
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e3 \
        if latencies else float("nan")
    return len(latencies) / elapsed, pick(0.5), pick(0.99), len(failures)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--scrapers", type=int, default=4)
    a = ap.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.Popen([os.path.join(a.build, "daemon", "edgemond"), "--root",
                              os.path.join(FIXTURES, "agx-orin"), "--db",
                              os.path.join(tmp, "e.db"), "--listen",
                              "unix:" + os.path.join(tmp, "api.sock"), "--metrics-listen",
                              str(port), "--log-level", "warn"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.5)
            print(f"{'slow connections':>16} {'scrapes/s':>10} {'p50 ms':>8} {'p99 ms':>8} "
                  f"{'failed':>7}")
            for slow in (0, 4, 50):
                rate, p50, p99, failed = measure(port, slow, a.seconds, a.scrapers)
                print(f"{slow:>16} {rate:>10.0f} {p50:>8.2f} {p99:>8.2f} {failed:>7}")
        finally:
            p.terminate()
            p.wait(timeout=30)


if __name__ == "__main__":
    main()
