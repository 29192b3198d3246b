#!/usr/bin/env python3
"""Request budgets against a real edgemond at 100 Hz frames with its HTTP
listener on, each attack of which once worked:

  flood      32 clients (a second uid) loop the heaviest /api/history and
             Query requests for 15 s while a third uid holds 300 feeds: at
             least 90 % of the frames of those 15 s are stored (of what the
             same daemon stores unloaded just before), the daemon's
             RSS stays within 128 MiB of its start, root's `edgemon query
             --since -5s` and `edgemon now` succeed throughout, the feed
             holder gets no more than its share of the stream slots, and every
             refusal is a clear one (503 with Retry-After, RESOURCE_EXHAUSTED);
             the request that once built 9 MB answers (5000 steps x 64
             channels) is refused naming the cap;
  HTTP       a GET carrying a body is answered once and its body never served
             as a second request; a repeated query parameter is a 400 naming it.

Under a sanitizer (--sanitizer, as the build was configured) the daemon runs
several times slower: the stored-frame floor is then 70 % and the RSS bound
256 MiB (ASan's shadow and quarantine); every other assertion is the same.
The daemon runs at the packaged unit's Nice (-5); as root outside the unit
its sampler runs 10 nice levels above it (real-time only with
daemon.realtime = true; daemon/runtime/thread_priority.h).

Runs as root (setpriv to nobody and daemon with group edgemon); prints
PASS/FAIL per check and "N passed, N failed"."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from daemon_attack import parse_args, prepare  # noqa: E402
from harness import (Checks, expect, free_port, rss_kib, sampler_counts,  # noqa: E402
                     stop_process)

ARGS = None
SKIP = 77
PERIOD_MS = 10
CONTROL_SECONDS = 4

# One looping client: argv kind target stubs seconds request.
# kind "http": GET `request` (a path) on 127.0.0.1:target, keep-alive.
# kind "grpc": Query on the unix socket `target`, `request` "raw" or "series".
# Prints its counts as JSON.
LOAD = r"""
import http.client, json, sys, time
kind, target, stubs, seconds, request = sys.argv[1:6]
end = time.time() + float(seconds)
out = {"ok": 0, "busy": 0, "late": 0, "retry_after": 0, "other": 0, "errors": []}
def other(what):
    out["other"] += 1
    if len(out["errors"]) < 3:
        out["errors"].append(what)
if kind == "http":
    conn = None
    while time.time() < end:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", int(target), timeout=15)
            conn.request("GET", request)
            r = conn.getresponse()
            body = r.read()
            if r.status == 200:
                out["ok"] += 1
            elif r.status == 503:
                out["busy"] += 1
                out["retry_after"] += r.getheader("Retry-After") is not None
            else:
                other("HTTP %d %s" % (r.status, body[:200]))
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            conn = None  # a kept-alive connection ended (idle or used up): a new one
            time.sleep(0.05)
else:
    import grpc
    sys.path.insert(0, stubs)
    from edgemon.v1 import edgemon_pb2 as pb, edgemon_pb2_grpc as rpc
    stub = rpc.TelemetryStub(grpc.insecure_channel("unix:" + target))
    while time.time() < end:
        try:
            now = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=15).now_ns
            req = pb.QueryRequest(from_ns=now - 3600 * 10**9, to_ns=now + 10**9, limit=100000)
            if request == "series":
                req.step_ns = 10**7
            for _ in stub.Query(req, timeout=15):
                pass
            out["ok"] += 1
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                out["busy"] += 1
                time.sleep(0.05)
            elif e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                out["late"] += 1  # its own deadline: the daemon stops its work
            else:
                other("%s %s" % (e.code().name, e.details()))
print(json.dumps(out))
"""

# Holds `n` feeds (argv: path n stubs): sends each the empty request, reads
# its first message (a frame, or the error that refused it), prints the
# counts as JSON, then holds every connection, reading nothing more, until
# stdin closes.
FEEDS = r"""
import json, socket, sys
path, n, stubs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, stubs)
from edgemon.v1 import edgemon_pb2 as pb
held, out = [], {"fed": 0, "refused": 0, "other": []}
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    s.send(b"")
    m = pb.FeedMessage.FromString(s.recv(1 << 20))
    if m.HasField("frame"):
        out["fed"] += 1
    elif m.error.code == 8:
        out["refused"] += 1
        out["message"] = m.error.message
    else:
        out["other"].append(m.error.message)
    held.append(s)
print(json.dumps(out), flush=True)
sys.stdin.read()
"""


def as_user(user, group, *cmd, **kw):
    return subprocess.Popen(["setpriv", f"--reuid={user}", f"--regid={group}", "--groups=edgemon",
                             *cmd], **kw)


def cli(sock, *args, timeout=60):
    return subprocess.run([ARGS.edgemon, "--connect", "unix:" + sock, *args], capture_output=True,
                          text=True, timeout=timeout)


class Daemon:
    """edgemond at 100 Hz with its HTTP listener, under the packaged unit's
    Nice (-5), as the unit runs it."""

    def __init__(self, tmp, root):
        self.sock = os.path.join(tmp, "budget.sock")
        self.db = os.path.join(tmp, "budget.db")
        self.port = free_port()
        self.log_path = os.path.join(tmp, "budget.log")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        # ASan's quarantine would hold freed answers for a while: keep it small.
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                ["nice", "-n", "-5", ARGS.edgemond, "--root", root, "--db", self.db,
                 "--listen", "unix:" + self.sock, "--interval-ms", str(PERIOD_MS),
                 "--metrics-listen", f"127.0.0.1:{self.port}"],
                stdout=subprocess.DEVNULL, stderr=log, env=env)
        deadline = time.time() + 30
        while not os.path.exists(self.sock) or not self.http_ok():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"edgemond did not start:\n{self.output()}")
            time.sleep(0.1)

    def http_ok(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def output(self):
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def stop(self):
        return stop_process(self.proc, 25)


def raw_http(port, data, wait=2.0):
    """Sends `data` on one connection; returns every byte answered until the
    daemon closes it or `wait` passes."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        got = b""
        end = time.time() + wait
        while time.time() < end:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                got += b"<reset>"
                break
            if not b:
                break
            got += b
        return got


def strict_http(d, m):
    port = d.port
    # A GET whose body is itself a request: answered once (413), never twice.
    inner = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    got = raw_http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                   % len(inner) + inner)
    answers = got.count(b"HTTP/1.1 ")
    expect(answers == 1, f"a GET with a body was answered {answers} times: {got[:300]!r}")
    expect(got.startswith(b"HTTP/1.1 413"), f"a GET with a body: {got[:200]!r}")
    expect(b"edgemon_samples" not in got, "the body of a GET was served as a request")
    # The same with a chunked body.
    chunk = b"%x\r\n%s\r\n0\r\n\r\n" % (len(inner), inner)
    got = raw_http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   + chunk)
    expect(got.count(b"HTTP/1.1 ") == 1 and got.startswith(b"HTTP/1.1 413"),
           f"a GET with a chunked body: {got[:300]!r}")
    # Without a body, keep-alive still serves two requests on one connection.
    got = raw_http(port, inner + inner, wait=1.0)
    expect(got.count(b"HTTP/1.1 200") == 2, f"two pipelined GETs: {got.count(b'HTTP/1.1 ')}")
    # A repeated parameter: 400 naming it, on every route.
    for path in ("/api/history?from=-1h&from=-2h", "/api/energy?from=-1m&to=now&to=-5s",
                 "/metrics?x=1&x=2"):
        got = raw_http(port, b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                       % path.encode())
        name = path.split("?")[1].split("&")[-1].split("=")[0].encode()
        expect(got.startswith(b"HTTP/1.1 400") and b"more than once: " + name in got,
               f"{path}: {got[:300]!r}")


def stored_share(d, stub, pb, r0, r1):
    """Frames the store holds with a time in [r0, r1) (committed, or queued
    for its batched writer: a Query reads both, and no read commits), and
    the frames due then."""
    key = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=10).channels[0].key
    held = sum(len(chunk.frames) for chunk in stub.Query(
        pb.QueryRequest(from_ns=r0, to_ns=r1, channels=[key]), timeout=60))
    return held, (r1 - r0) // (PERIOD_MS * 10**6)


def flood(d, m, stubs):
    import grpc
    pb = m["edgemon_pb2"]
    stub = m["edgemon_pb2_grpc"].TelemetryStub(grpc.insecure_channel("unix:" + d.sock))
    info = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=10)
    keys = [c.key for c in info.channels]
    expect(len(keys) >= 64, f"the board has {len(keys)} channels, the flood wants 64")
    many = ",".join(keys[:64])
    # What once built 9 MB answers is refused before any work, naming the cap.
    import urllib.error
    import urllib.request
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{d.port}/api/history?from=-50s&step=10ms"
                               f"&channels={many}", timeout=10)
        raise AssertionError("5000 steps x 64 channels were answered")
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        expect(e.code == 400 and "40000" in body, f"5000 steps x 64 channels: {e.code} {body}")
    time.sleep(5)  # some history to read (500 frames; committed every 5 s)
    script = os.path.join(os.path.dirname(stubs), "load.py")
    feeds_script = os.path.join(os.path.dirname(stubs), "feeds.py")
    # The second uid takes the feeds first; its first messages say how many it got.
    holder = as_user("nobody", "nogroup", "/usr/bin/python3", feeds_script, d.sock + ".feed",
                     "300", stubs, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    held = json.loads(holder.stdout.readline() or "{}")
    share = 256 // 4
    expect(held.get("fed") == share and held.get("refused") == 300 - share,
           f"300 feeds of one uid: {held} (its share is {share})")
    expect("per user" in held.get("message", ""), f"the feed's refusal: {held}")
    # A control: the frames this daemon stores on this machine, unloaded.
    c0 = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=10).now_ns
    time.sleep(CONTROL_SECONDS)
    c1 = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=10).now_ns
    rss0 = rss_kib(d.proc.pid)
    sampled0, misses0 = sampler_counts(d.port)
    r0 = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=10).now_ns
    loaders = []
    for i in range(32):
        if i % 2 == 0:
            path = (f"/api/history?from=-1h&step=6s&channels={many}" if i % 4 == 0 else
                    "/api/history?from=-50s&step=10ms&channels=" + ",".join(keys[:8]))
            args = ("http", str(d.port), stubs, str(ARGS.seconds), path)
        else:
            args = ("grpc", d.sock, stubs, str(ARGS.seconds), "raw" if i % 4 == 1 else "series")
        loaders.append(as_user("daemon", "daemon", "/usr/bin/python3", script, *args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    peak = [rss0]
    failures = []
    root_calls = [0]
    stop = threading.Event()

    def watch_rss():
        while not stop.wait(0.25):
            peak[0] = max(peak[0], rss_kib(d.proc.pid))

    def root_asks():
        while not stop.is_set():
            for args in (("query", "--since", "-5s", "--format", "csv"), ("now",)):
                t = time.time()
                r = cli(d.sock, *args)
                root_calls[0] += 1
                if r.returncode != 0 or not r.stdout:
                    failures.append(f"{' '.join(args)}: exit {r.returncode} after "
                                    f"{time.time() - t:.1f} s: {r.stderr[-300:]}")
            stop.wait(0.5)

    threads = [threading.Thread(target=watch_rss), threading.Thread(target=root_asks)]
    for t in threads:
        t.start()
    results = []
    try:
        for p in loaders:
            out, err = p.communicate(timeout=ARGS.seconds + 60)
            try:
                results.append(json.loads(out.strip().splitlines()[-1]))
            except (IndexError, json.JSONDecodeError):
                raise AssertionError(f"a load client: {out[-300:]!r} {err[-500:]!r}")
    finally:
        stop.set()
        for t in threads:
            t.join()
        holder.stdin.close()
        holder.wait(timeout=30)
    r1 = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=10).now_ns
    sampled, missed = (a - b for a, b in zip(sampler_counts(d.port), (sampled0, misses0)))
    stored, want = stored_share(d, stub, pb, r0, r1)
    control, control_want = stored_share(d, stub, pb, c0, c1)
    share, control_share = stored / max(want, 1), control / max(control_want, 1)
    ok = sum(r["ok"] for r in results)
    busy = sum(r["busy"] for r in results)
    others = [e for r in results for e in r["errors"]]
    http_busy = sum(r["busy"] for r in results[0::2])
    retry = sum(r["retry_after"] for r in results[0::2])
    grew = (peak[0] - rss0) // 1024
    sanitized = bool(ARGS.sanitizer)
    late = sum(r["late"] for r in results)
    print(f"  flood: {sampled} frames sampled, {missed} deadlines missed; "
          f"{stored} of {want} frames stored ({100.0 * share:.2f} %; unloaded just before: "
          f"{control} of {control_want}, {100.0 * control_share:.2f} %), "
          f"RSS {rss0 // 1024} MiB -> peak {peak[0] // 1024} MiB; {ok} answers, {busy} busy, "
          f"{late} past their own deadline, "
          f"{sum(r['other'] for r in results)} other {others[:3]}; "
          f"root asked {root_calls[0]} times", flush=True)
    # At least 99 % of the frames the same daemon stores unloaded on this
    # machine (where nothing else runs, all of them: a shared machine's own
    # load is not the flood's). 94.3 % was seen here before the request
    # threads stopped being lowered under a real-time sampler: the sampler
    # waited on an allocator lock (glibc's arena locks know no priority
    # inheritance) held by a lowered request thread that waited behind every
    # busy client (docs/daemon.md). 99.77 to 100 % since, on the 2-core build
    # machine, also beside two busy loops.
    floor = 0.70 if sanitized else 0.99
    expect(share >= floor * min(1.0, control_share),
           f"{stored} of {want} frames stored under the flood ({100.0 * share:.2f} %; "
           f"unloaded: {100.0 * control_share:.2f} %)")
    expect(grew <= (256 if sanitized else 128), f"RSS grew by {grew} MiB under the flood")
    expect(not failures, f"root was refused under the flood: {failures[:3]}")
    expect(root_calls[0] >= 4, f"root asked only {root_calls[0]} times")
    expect(ok > 0, "no client was answered")
    expect(not others, f"answers other than data or a clear refusal: {others[:5]}")
    expect(retry == http_busy, f"{http_busy - retry} of {http_busy} HTTP 503s lack Retry-After")


def main():
    global ARGS
    ARGS = parse_args(("--sanitizer", {"default": ""}),
                      ("--seconds", {"type": float, "default": 15, "help": "the flood's length"}))
    if os.geteuid() != 0:
        print("budget_attack: needs root (setpriv, nice)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="edgemon-budget-")
    checks = Checks()
    d = None
    try:
        m, stubs, root = prepare(tmp, ARGS.fixtures, {"load.py": LOAD, "feeds.py": FEEDS})
        d = Daemon(tmp, root)
        for name, fn, args in (
                ("HTTP: a GET's body is never a request; repeated parameters are refused",
                 strict_http, (d, m)),
                ("a flood of heavy requests and held feeds costs no frames", flood,
                 (d, m, stubs))):
            if ARGS.k in name:
                checks.run(name, fn, *args)
        expect(d.proc.poll() is None, "edgemond died:\n" + d.output())
    finally:
        if d is not None and d.stop() != 0:
            checks.failed.append("edgemond stopped cleanly")
            print("FAIL edgemond stopped cleanly:\n" + d.output())
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed or checks.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
