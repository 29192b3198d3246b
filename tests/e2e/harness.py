"""Pieces shared by the end-to-end test scripts: a check runner that reports
every failure and goes on, `expect`, a wait for a condition, a free loopback
port, a process's RSS, libfaketime's path, and the simulator's start and
stop."""
import socket
import time
import traceback
import zlib


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def run(self, name, fn, *args):
        try:
            fn(*args)
            self.passed += 1
            print(f"PASS {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            self.failed.append(name)
            # grpc.RpcError carries its message in details()
            detail = e.details() if hasattr(e, "details") and callable(e.details) else ""
            print(f"FAIL {name}: {type(e).__name__}: {e} {detail}".rstrip(), flush=True)
            if not isinstance(e, AssertionError):
                traceback.print_exc(limit=3)


def run_on(prefix, make, checks, artifacts=None):
    """Makes a scratch folder (tempfile prefix `prefix`), the fixture
    `make(tmp)` (an object with stop()), and runs each (name, fn) of `checks`
    as fn(fixture); stops the fixture, removes the folder unless a check
    failed, and returns the exit status."""
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix=prefix)
    results = Checks()
    fixture = None
    try:
        fixture = make(tmp)
        for name, fn in checks:
            results.run(name, fn, fixture)
    finally:
        if fixture is not None:
            fixture.stop()
    where = f"; artifacts in {artifacts}" if artifacts else ""
    print(f"{results.passed} passed, {len(results.failed)} failed{where}")
    if results.failed:
        print("kept for a look: " + tmp)
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def wait_until(what, cond, seconds=60, every=0.05):
    """Calls cond() every `every` seconds until it returns something true,
    and returns that; AssertionError naming `what` after `seconds`. cond may
    raise (an `expect` that the process waited on is still alive) to end the
    wait early."""
    deadline = time.time() + seconds
    while True:
        got = cond()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(every)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_http(handler, port=0):
    """Serves `handler` (a BaseHTTPRequestHandler class; its log lines are
    dropped) on 127.0.0.1:port (0: any free port) from daemon threads.
    Returns the server; shutdown() and server_close() end it."""
    import http.server
    import threading

    class Quiet(handler):
        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Quiet)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def frame_count(db):
    """Frames in an edgemond store, read while the daemon runs (WAL)."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("SELECT count(*) FROM frames").fetchone()[0]
    finally:
        con.close()


def sampler_counts(port):
    """The sampler's frames and missed frame deadlines since it started, from
    the daemon's /metrics on 127.0.0.1:port."""
    import urllib.request
    out = {}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            for name in ("edgemon_samples_total", "edgemon_deadline_misses_total"):
                if line.startswith(name + " "):
                    out[name] = int(float(line.split()[1]))
    expect(len(out) == 2, f"/metrics lacks the sampler's counters: {out}")
    return out["edgemon_samples_total"], out["edgemon_deadline_misses_total"]


def rss_kib(pid):
    """A process's resident set (VmRSS) in KiB, 0 when it has none."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def read_stream(call, counts, i, stop):
    """Counts the messages of one streaming call in counts[i] until it ends or
    `stop` is set. Returns the gRPC error that ended it, or None."""
    try:
        for _ in call:
            counts[i] += 1
            if stop.is_set():
                break
    except Exception as e:  # grpc.RpcError, without importing grpc here
        if not hasattr(e, "code"):
            raise
        return e
    return None


def faketime_lib():
    """Debian's libfaketime (package faketime), or None."""
    import os
    for d in ("/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime",
              "/usr/lib/faketime"):
        lib = os.path.join(d, "libfaketimeMT.so.1")
        if os.path.exists(lib):
            return lib
    return None


def start_sim(sim, board, out, fixtures, log, extra=(), timeout=20):
    """Starts edgemon-sim for `board` into `out`; waits for its sidecar.
    Returns (process, the sidecar's JSON: start time and every waveform)."""
    import json
    import os
    import subprocess
    import time
    proc = subprocess.Popen([sim, "--board", board, "--out", out, "--fixtures", fixtures, "-q",
                             *extra], stdout=log, stderr=subprocess.STDOUT)
    sidecar = os.path.join(out, ".edgemon-sim.json")
    deadline = time.time() + timeout
    while not os.path.exists(sidecar):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError(f"edgemon-sim wrote no sidecar for {board}")
        time.sleep(0.02)
    with open(sidecar) as f:
        return proc, json.load(f)


def stop_process(proc, timeout=20):
    """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit status."""
    import subprocess
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return None if proc is None else proc.returncode


def analytic_energy_mj(sidecar, rail, from_ns, to_ns):
    """The simulator's exact energy of `rail` over [from_ns, to_ns] in mJ: the
    integral of base * (1 + amplitude * sin(w t + phase)) (daemon/sim/waveform.h),
    from the sidecar edgemon-sim writes."""
    import math
    p = sidecar["rails"][rail]
    period = sidecar["period_s"]
    w = 2 * math.pi / period
    t0 = (from_ns - sidecar["start_realtime_ns"]) / 1e9
    t1 = (to_ns - sidecar["start_realtime_ns"]) / 1e9
    return p["base_mw"] * ((t1 - t0) - p["amplitude"] * period / (2 * math.pi) *
                           (math.cos(w * t1 + p["phase"]) - math.cos(w * t0 + p["phase"])))


def varint(b, i):
    """A protobuf base-128 varint of bytes `b` at `i`: (value, next index)."""
    shift = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _signed(u):
    """A zigzag varint's value; differences wrap as int64."""
    return (u >> 1) ^ -(u & 1)


def _block_frame(con, blob, cache):
    """The version-1 or -2 blob a block's frame (version 3 or 4) stands for:
    its place in the block its head's row holds, inflated once into `cache`."""
    head, i = varint(blob, 1)
    index = 0
    if blob[0] == 4:
        index, i = varint(blob, i)
    key = ("block", head)
    if key not in cache:
        if blob[0] == 3:
            data = blob
        else:
            row = con.execute("SELECT data FROM frames WHERE seq = ?", (head,)).fetchone()
            if row is None or not row[0] or row[0][0] != 3:
                raise ValueError(f"frame block {head} missing")
            data = row[0]
        own, j = varint(data, 1)
        n, j = varint(data, j)
        length, j = varint(data, j)
        raw = zlib.decompress(data[j:])
        if own != head or len(raw) != length:
            raise ValueError(f"frame block {head} damaged")
        frames, k = [], 0
        for _ in range(n):
            size, k = varint(raw, k)
            frames.append(raw[k:k + size])
            k += size
        cache[key] = frames
    frames = cache[key]
    if index >= len(frames):
        raise ValueError(f"frame {index} past block {head}")
    return frames[index]


def frame_values(con, blob, bases=None):
    """{store channel id: value} of a frames.data blob (daemon/store/frame_codec.h):
    version 1 (runs of values), version 2 (differences from a base in
    frame_bases, read through `con` and kept in the dict `bases`), or a
    frame of a block (versions 3 and 4: the block read from its head's row
    and kept in `bases` too)."""
    if not blob:
        return {}
    bases = {} if bases is None else bases
    if blob[0] in (3, 4):
        return frame_values(con, _block_frame(con, blob, bases), bases)
    if blob[0] == 1:
        out, i, nxt = {}, 1, 0
        while i < len(blob):
            gap, i = varint(blob, i)
            n, i = varint(blob, i)
            first = nxt + gap
            for k in range(n):
                z, i = varint(blob, i)
                out[first + k] = _signed(z)
            nxt = first + n
        return out
    if blob[0] != 2:
        raise ValueError(f"frame blob version {blob[0]}")
    base_id, i = varint(blob, 1)
    if base_id not in bases:
        row = con.execute("SELECT data FROM frame_bases WHERE id = ?", (base_id,)).fetchone()
        if row is None:
            raise ValueError(f"frame base {base_id} missing")
        bases[base_id] = frame_values(con, row[0])
    base = bases[base_id]
    bitmap, i = blob[i:i + (len(base) + 7) // 8], i + (len(base) + 7) // 8
    out = {}
    for k, (cid, v) in enumerate(sorted(base.items())):
        if bitmap[k // 8] >> (k % 8) & 1:
            z, i = varint(blob, i)
            v = (v + _signed(z) + 2**63) % 2**64 - 2**63
        out[cid] = v
    if i != len(blob):
        raise ValueError("frame blob longer than its differences")
    return out
