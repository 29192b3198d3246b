#!/usr/bin/python3
"""edgemond's CPU with 0, 1 and 10 live pages open.

Starts edgemon-sim and edgemond --metrics-listen on a loopback port, then
for each count of streams opens that many `GET /api/live` event streams
(plain sockets reading and counting frames, as a page's EventSource would)
and prints edgemond's CPU per second over --seconds (every thread, from
/proc/PID/task/*/schedstat), and the frames each stream received per second.

  bench/page_bench.py BUILD_DIR [--seconds 30] [--board agx-orin] [--interval-ms 1000]
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import board_args, cpu_over, simulated_board, stop_process  # noqa: E402
from harness import free_port  # noqa: E402


class Stream(threading.Thread):
    """One live page: reads the event stream and counts its frames."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(b"GET /api/live HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")
        self.frames = 0
        self.start()

    def run(self):
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return
                self.frames += data.count(b"event: frame")
        except OSError:
            return

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def main():
    ap = board_args(__doc__)
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--counts", default="0,1,10")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="edgemon-page-bench-")
    port = free_port()
    try:
        with simulated_board(args.build, args.board, tmp) as root:
            env = dict(os.environ)
            env.pop("NOTIFY_SOCKET", None)
            daemon = subprocess.Popen(
                [os.path.join(args.build, "daemon", "edgemond"), "--root", root, "--db",
                 os.path.join(tmp, "e.db"), "--listen", "unix:" + os.path.join(tmp, "api.sock"),
                 "--metrics-listen", str(port), "--interval-ms", str(args.interval_ms),
                 "--log-level", "warn"], env=env)
            try:
                deadline = time.time() + 20
                while True:
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
                        break
                    except OSError:
                        if daemon.poll() is not None or time.time() > deadline:
                            raise RuntimeError("edgemond did not serve /metrics")
                        time.sleep(0.1)
                print(f"edgemond on {args.board}, {args.interval_ms} ms frames, "
                      f"{args.seconds:g} s per count")
                print(f"{'streams':>8} {'CPU ms/s':>9} {'% core':>7} {'frames/s/stream':>16}")
                for n in [int(x) for x in args.counts.split(",")]:
                    streams = [Stream(port) for _ in range(n)]
                    time.sleep(1)
                    before = [s.frames for s in streams]
                    cpu, wall = cpu_over(daemon.pid, 2, args.seconds)
                    got = [s.frames - b for s, b in zip(streams, before)]
                    rate = f"{sum(got) / n / (wall + 2):.2f}" if n else "—"
                    print(f"{n:>8} {cpu / wall / 1e6:>9.3f} {cpu / wall / 1e7:>7.3f} {rate:>16}",
                          flush=True)
                    for s in streams:
                        s.close()
                    time.sleep(1)
            finally:
                stop_process(daemon)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
