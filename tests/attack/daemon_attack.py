#!/usr/bin/env python3
"""Attacks on a real edgemond, each of which once worked:

  store identity   a second daemon on the same database through a symlink or a
                   hard link; ten daemons started at once on one socket; a
                   second daemon started on a live socket (it used to replay
                   and reset the first's flight recorder); a clean stop that
                   left frames for the next database at the socket to replay;
  ownership        another uid renewing (and so ending) a caller's 1 kHz
                   lease; another uid ending a caller's window; one uid taking
                   every rate lease or every window slot; leaked marks (400 of
                   a uid, 3000 of root) locking their holder's next record out
                   (before and after a restart);
  clock steps      record and attach right after a +8 d excursion, during a
                   -30 d clock and after a restart behind it (libfaketime);
  local feed       a uid outside the edgemon group connecting to the feed
                   socket; garbage, oversized, repeated and missing requests,
                   an interval under 10 ms, a pattern of escape bytes echoed
                   raw, streams that never read and a flood of silent
                   connections.

Runs as root (groupadd, setpriv to nobody); prints PASS/FAIL per check and
"N passed, N failed"."""
import argparse
import grp
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import interop_test  # noqa: E402  (stub generation)
from harness import Checks, expect, faketime_lib, stop_process  # noqa: E402

ARGS = None
SKIP = 77

# Runs as another uid: one action against the daemon, the result as JSON.
CLIENT = r"""
import json, sys, grpc
sys.path.insert(0, sys.argv[1])
from edgemon.v1 import edgemon_pb2 as pb, edgemon_pb2_grpc as rpc
stub = rpc.TelemetryStub(grpc.insecure_channel("unix:" + sys.argv[2]))
action, arg = sys.argv[3], int(sys.argv[4])
out = {"ok": 0, "code": "OK", "details": ""}
try:
    if action == "renew-boost":      # renew lease `arg` at 1 Hz for 1 ms
        stub.Boost(pb.BoostRequest(rate_hz=1, duration_ms=1, lease_id=arg), timeout=10)
        out["ok"] = 1
    elif action == "end-window":
        stub.EndWindow(pb.EndWindowRequest(id=arg), timeout=10)
        out["ok"] = 1
    elif action == "renew-window":
        stub.BeginWindow(pb.BeginWindowRequest(renew_id=arg), timeout=10)
        out["ok"] = 1
    elif action == "fill-boosts":    # up to `arg` one-hour leases
        for _ in range(arg):
            stub.Boost(pb.BoostRequest(rate_hz=10, duration_ms=3600000), timeout=10)
            out["ok"] += 1
    elif action == "fill-windows":   # up to `arg` unleased windows
        for _ in range(arg):
            stub.BeginWindow(pb.BeginWindowRequest(label="squat"), timeout=10)
            out["ok"] += 1
except grpc.RpcError as e:
    out["code"], out["details"] = e.code().name, e.details()
print(json.dumps(out))
"""


class Daemon:
    def __init__(self, tmp, name, root, db=None, sock=None, interval_ms=100, env=None,
                 config=None):
        self.sock = sock or os.path.join(tmp, name + ".sock")
        self.db = db or os.path.join(tmp, name + ".db")
        self.log_path = os.path.join(tmp, name + ".log")
        cmd = [ARGS.edgemond, "--root", root, "--db", self.db, "--listen", "unix:" + self.sock,
               "--interval-ms", str(interval_ms)]
        if config:
            cmd += ["--config", config]
        e = dict(os.environ)
        e.pop("NOTIFY_SOCKET", None)
        e.update(env or {})
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=e)

    def ready(self, timeout=15):
        import grpc
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"edgemond exited {self.proc.returncode}:\n{self.output()}")
            if os.path.exists(self.sock):
                ch = grpc.insecure_channel("unix:" + self.sock)
                try:
                    grpc.channel_ready_future(ch).result(timeout=2)
                    return self
                except grpc.FutureTimeoutError:
                    pass
                finally:
                    ch.close()
            time.sleep(0.05)
        raise RuntimeError(f"edgemond not ready:\n{self.output()}")

    def exited(self, timeout=15):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self):
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def stop(self):
        return stop_process(self.proc, 25)

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def stub_for(sock, m):
    import grpc
    return m["edgemon_pb2_grpc"].TelemetryStub(grpc.insecure_channel("unix:" + sock))


def seqs(db):
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return [r[0] for r in con.execute("SELECT seq FROM frames ORDER BY seq")]
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def wait_frames(db, n, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(seqs(db)) >= n:
            return True
        time.sleep(0.1)
    return False


def cli(sock, *args, env=None, timeout=60):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([ARGS.edgemon, "--connect", "unix:" + sock, *args], capture_output=True,
                          text=True, timeout=timeout, env=e)


# ---- Store identity ----

def same_store_through_links(tmp, root):
    first = Daemon(tmp, "first", root).ready()
    try:
        os.symlink(first.db, os.path.join(tmp, "via-symlink.db"))
        os.link(first.db, os.path.join(tmp, "via-hardlink.db"))
        for name in ("via-symlink", "via-hardlink"):
            second = Daemon(tmp, name, root, db=os.path.join(tmp, name + ".db"))
            rc = second.exited()
            if rc is None:
                second.kill()
            expect(rc == 2, f"a second daemon on the store {name}: exit {rc}, want 2:\n"
                            f"{second.output()}")
            expect("is in use" in second.output(), f"{name}: {second.output()}")
        expect(first.proc.poll() is None, "the first daemon died")
    finally:
        expect(first.stop() == 0, first.output())


def racing_starts_on_one_socket(tmp, root):
    sock = os.path.join(tmp, "race.sock")
    ds = [Daemon(tmp, f"race{i}", root, sock=sock) for i in range(10)]
    try:
        time.sleep(4)
        alive = [d for d in ds if d.proc.poll() is None]
        expect(len(alive) == 1, f"{len(alive)} of 10 daemons serve one socket")
        for d in ds:
            if d.proc.poll() is not None:
                expect(d.proc.returncode != 0, "a refused start exited 0")
                expect("in use" in d.output() or "serving on" in d.output(), d.output())
    finally:
        for d in ds:
            d.stop()


def second_daemon_leaves_the_flight_recorder(tmp, root):
    cfg = os.path.join(tmp, "slow-commit.toml")
    with open(cfg, "w") as f:
        f.write("[store]\ncommit_interval_ms = 4000\n")
    sock = os.path.join(tmp, "flight.sock")
    db = os.path.join(tmp, "flight.db")
    first = Daemon(tmp, "flight1", root, db=db, sock=sock, interval_ms=20, config=cfg).ready()
    time.sleep(1.5)
    intruder = Daemon(tmp, "intruder", root, sock=sock, interval_ms=20, config=cfg)
    rc = intruder.exited()
    if rc is None:
        intruder.kill()
    expect(rc not in (None, 0), f"a second daemon on a live socket: exit {rc}")
    expect(seqs(intruder.db) == [], f"the intruder stored {len(seqs(intruder.db))} frames of "
                                    "the first daemon's flight recorder")
    time.sleep(0.5)
    first.kill()  # frames since the last commit are only in the flight recorder
    again = Daemon(tmp, "flight2", root, db=db, sock=sock, interval_ms=20, config=cfg).ready()
    expect(again.stop() == 0, again.output())
    s = seqs(db)
    holes = [(a, b) for a, b in zip(s, s[1:]) if b != a + 1]
    expect(s and not holes, f"seq holes after kill -9 and replay: {holes[:5]}")
    expect("did not commit" in again.output(), "nothing replayed: " + again.output())
    # After that clean stop the ring holds nothing: a new store at the same
    # socket replays nothing.
    fresh = Daemon(tmp, "fresh", root, db=os.path.join(tmp, "fresh.db"), sock=sock).ready()
    expect(fresh.stop() == 0, fresh.output())
    expect("did not commit" not in fresh.output(),
           "a new store replayed another store's frames: " + fresh.output())


# ---- Ownership ----

def as_nobody(stubs, sock, action, arg):
    script = os.path.join(os.path.dirname(stubs), "client.py")
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=edgemon",
                        "/usr/bin/python3", script, stubs, sock, action, str(arg)],
                       capture_output=True, text=True, timeout=300)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise AssertionError(f"client as nobody: {r.stdout!r} {r.stderr[-500:]!r}")


def ownership(tmp, root, m, stubs):
    pb = m["edgemon_pb2"]
    d = Daemon(tmp, "owned", root).ready()
    try:
        stub = stub_for(d.sock, m)
        mine = stub.Boost(pb.BoostRequest(rate_hz=500, duration_ms=3600000), timeout=10)
        expect(mine.lease_id > 1000, f"lease ids are guessable: {mine.lease_id}")
        stolen = as_nobody(stubs, d.sock, "renew-boost", mine.lease_id)
        expect(stolen["code"] == "PERMISSION_DENIED",
               f"another uid renewed root's lease: {stolen}")
        # Root's lease still holds 500 Hz (the thief asked 1 Hz for 1 ms).
        time.sleep(0.2)
        again = stub.Boost(pb.BoostRequest(rate_hz=500, duration_ms=3600000,
                                           lease_id=mine.lease_id), timeout=10)
        expect(again.lease_id == mine.lease_id and again.rate_hz >= 500,
               f"root's lease was replaced: {again}")

        w = stub.BeginWindow(pb.BeginWindowRequest(label="root's run", lease_ms=60000),
                             timeout=10)
        for action in ("end-window", "renew-window"):
            r = as_nobody(stubs, d.sock, action, w.id)
            expect(r["code"] == "PERMISSION_DENIED", f"{action} of root's window: {r}")
        ended = stub.EndWindow(pb.EndWindowRequest(id=w.id), timeout=10)
        expect(not ended.abandoned, "root's window was ended by another")

        # Exhaustion: one uid gets its quota, then RESOURCE_EXHAUSTED; others
        # (root, and record through the CLI) are still served.
        r = as_nobody(stubs, d.sock, "fill-boosts", 5000)
        expect(r["code"] == "RESOURCE_EXHAUSTED" and r["ok"] <= 64,
               f"one uid took {r['ok']} rate leases: {r}")
        stub.Boost(pb.BoostRequest(rate_hz=100, duration_ms=1000), timeout=10)
        # Leaked marks: a uid past its quota of unleased windows loses its
        # own oldest (closed as abandoned), never its next one; it never
        # holds more than its quota.
        r = as_nobody(stubs, d.sock, "fill-windows", 400)
        expect(r["code"] == "OK" and r["ok"] == 400, f"a uid's 400 leaked marks: {r}")
        expect(open_windows(stub, pb) <= 256, f"one uid holds {open_windows(stub, pb)} windows")
        rec = cli(d.sock, "record", "--rate", "200", "--", "true")
        expect(rec.returncode == 0, f"record beside a squatter: {rec.returncode} {rec.stderr}")
        # Root, with no quota, leaks 3000 (the table holds 1024): its next
        # record runs.
        leak_windows(stub, pb, 3000)
        rec = cli(d.sock, "record", "--", "sleep", "1")
        expect(rec.returncode == 0, f"record after 3000 leaked marks: {rec.returncode} {rec.stderr}")
        abandoned = [w for w in list_windows(stub, pb) if w.abandoned and w.label == "leak"]
        expect(len(abandoned) >= 3000 - 1024, f"{len(abandoned)} leaked marks closed as abandoned")
    finally:
        expect(d.stop() == 0, d.output())
    # The same after a restart: the quotas hold, and neither holder is locked out.
    d = Daemon(tmp, "owned", root, db=d.db, sock=d.sock).ready()
    try:
        stub = stub_for(d.sock, m)
        rec = cli(d.sock, "record", "--", "sleep", "1")
        expect(rec.returncode == 0, f"record after a restart: {rec.returncode} {rec.stderr}")
        r = as_nobody(stubs, d.sock, "fill-windows", 10)
        expect(r["code"] == "OK" and r["ok"] == 10, f"the squatter after a restart: {r}")
        expect(open_windows(stub, pb) <= 1024, f"{open_windows(stub, pb)} windows open")
    finally:
        expect(d.stop() == 0, d.output())


def list_windows(stub, pb):
    out, token = [], ""
    while True:
        r = stub.ListWindows(pb.ListWindowsRequest(page_token=token), timeout=30)
        out += list(r.windows)
        token = r.next_page_token
        if not token:
            return out


def open_windows(stub, pb):
    return sum(not w.HasField("end_ns") for w in list_windows(stub, pb))


def leak_windows(stub, pb, n):
    """Begins `n` unleased windows ("leak"), 50 calls in flight at a time."""
    for start in range(0, n, 50):
        calls = [stub.BeginWindow.future(pb.BeginWindowRequest(label="leak"), timeout=60)
                 for _ in range(min(50, n - start))]
        for c in calls:
            c.result()


# ---- The local feed ----

# Connects to the feed as another uid; given the stubs' directory, sends the
# empty request (every frame) and reads one message: a frame's channel count.
FEED_CLIENT = r"""
import json, socket, sys
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(sys.argv[1])
    out = {"connected": True}
    if len(sys.argv) > 2:
        sys.path.insert(0, sys.argv[2])
        from edgemon.v1 import edgemon_pb2 as pb
        s.send(b"")
        msg = pb.FeedMessage.FromString(s.recv(1 << 20))
        out["frame_ids"] = len(msg.frame.ids)
        out["error"] = msg.error.message
    print(json.dumps(out))
except OSError as e:
    print(json.dumps({"connected": False, "errno": e.errno}))
"""


def feed_attacks(tmp, root, m, stubs):
    import errno
    import socket

    import grpc
    pb = m["edgemon_pb2"]
    d = Daemon(tmp, "feed", root, interval_ms=20).ready()
    feed = d.sock + ".feed"
    held = []
    try:
        st = os.stat(feed)
        expect(oct(st.st_mode & 0o777) == "0o660", f"feed socket mode {oct(st.st_mode)}")
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                            "/usr/bin/python3", "-c", FEED_CLIENT, feed],
                           capture_output=True, text=True, timeout=60)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        expect(not out["connected"] and out["errno"] == errno.EACCES,
               f"a uid outside the group reached the feed: {out}")

        def conn():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.settimeout(10)
            s.connect(feed)
            return s

        def error_of(s):
            while True:
                b = s.recv(1 << 20)
                if not b:
                    return None
                msg = pb.FeedMessage.FromString(b)
                if msg.HasField("error"):
                    return msg.error

        for what, payload in (("garbage", b"\xff" * 1000), ("oversized", b"\x08" * 70000)):
            s = conn()
            s.send(payload)
            err = error_of(s)
            expect(err is not None and err.code == 3, f"{what} request: {err}")
            s.close()
        # Below the 10 ms floor; a pattern full of escape bytes, sent back escaped.
        # (The first message: a feed taken at 5 ms would stream frames.)
        s = conn()
        s.send(pb.WatchRequest(interval_ms=5).SerializeToString())
        err = pb.FeedMessage.FromString(s.recv(1 << 20)).error
        expect(err.code == 3 and "interval_ms" in err.message, f"interval_ms 5: {err}")
        s.close()
        s = conn()
        s.send(pb.WatchRequest(channels=["\x1b]0;owned\x07\x1b[2J*zz"]).SerializeToString())
        err = pb.FeedMessage.FromString(s.recv(1 << 20)).error
        expect(err.code == 3, f"an escape-laden pattern: {err}")
        expect(not any(ord(ch) < 0x20 for ch in err.message) and "\\x1b" in err.message,
               f"the feed echoed raw control bytes: {err.message!r}")
        s.close()
        try:
            next(stub_for(d.sock, m).Watch(pb.WatchRequest(interval_ms=5), timeout=10))
            raise AssertionError("Watch took interval_ms 5")
        except grpc.RpcError as e:
            expect(e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"Watch at 5 ms: {e}")
        s = conn()
        s.send(pb.WatchRequest(interval_ms=20).SerializeToString())
        s.recv(1 << 20)
        s.send(b"\x08\x01")
        err = error_of(s)
        expect(err is not None and err.code == 3, f"a second request: {err}")
        s.close()
        # Streams that never read and 200 silent connections, held open:
        # past 4 waiting for their request, root's are ended at once.
        for _ in range(20):
            s = conn()
            s.send(pb.WatchRequest(interval_ms=0).SerializeToString())
            held.append(s)
        refused = 0
        for _ in range(200):
            s = conn()
            held.append(s)
            s.settimeout(0.5)
            try:
                b = s.recv(1 << 20)
                refused += bool(b) and pb.FeedMessage.FromString(b).error.code == 8
            except socket.timeout:
                pass
        expect(refused >= 190, f"only {refused} of 200 silent connections were refused")
        # Another uid in the group, the API and root once its silent ones
        # are gone, are all served.
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=edgemon",
                            "/usr/bin/python3", "-c", FEED_CLIENT, feed, stubs],
                           capture_output=True, text=True, timeout=60)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        expect(out.get("frame_ids", 0) > 0, f"another uid beside the flood: {out} {r.stderr}")
        now = cli(d.sock, "now", "--json")
        expect(now.returncode == 0, f"edgemon now beside the flood: {now.stderr}")
        for s in held:
            s.close()
        held.clear()
        s = conn()
        s.send(pb.WatchRequest(interval_ms=100).SerializeToString())
        msg = pb.FeedMessage.FromString(s.recv(1 << 20))
        expect(msg.HasField("frame") and len(msg.frame.ids) > 0, f"a feed after the flood: {msg}")
        s.close()
    finally:
        for s in held:
            s.close()
        expect(d.stop() == 0, d.output())
    expect(not os.path.exists(feed), "the feed socket outlived the daemon")


# ---- Clock steps ----

class FakeTime:
    def __init__(self, tmp):
        self.lib = faketime_lib()
        self.rc = os.path.join(tmp, "faketime.rc")
        self.set("+0")

    def set(self, spec):
        with open(self.rc + ".new", "w") as f:
            f.write(spec + "\n")
        os.replace(self.rc + ".new", self.rc)

    def env(self):
        return {"LD_PRELOAD": self.lib, "FAKETIME_TIMESTAMP_FILE": self.rc,
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def record_measures(sock, tmp, name, seconds=2):
    out = os.path.join(tmp, name)
    r = cli(sock, "record", "--out", out, "--", "sleep", str(seconds))
    expect(r.returncode == 0, f"{name}: record exit {r.returncode}: {r.stderr}")
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    energy = sum(x.get("energy_j") or 0 for x in s["rails"])
    expect(s["samples"] >= seconds * 10 * 0.8, f"{name}: {s['samples']} frames in {seconds} s")
    expect(energy > 0, f"{name}: {energy} J measured")
    return s


def attach_finds(sock, name, want_frames):
    r = cli(sock, "attach", "--last", "5s", "--json")
    expect(r.returncode == 0, f"{name}: attach exit {r.returncode}: {r.stderr}")
    s = json.loads(r.stdout)
    expect(s["samples"] >= want_frames, f"{name}: attach --last 5s found {s['samples']} frames")


def clock_steps(tmp, root):
    ft = FakeTime(tmp)
    if ft.lib is None:
        raise AssertionError("libfaketime is not installed (scripts/install-deps.sh)")
    cfg = os.path.join(tmp, "clock.toml")
    with open(cfg, "w") as f:
        f.write('[store]\ncommit_interval_ms = 20\n')
    d = Daemon(tmp, "clock", root, interval_ms=100, env=ft.env(), config=cfg).ready()
    try:
        time.sleep(1)
        # An RTC-less board syncing NTP: +8 days for 3 s, then back.
        ft.set("+8d")
        time.sleep(3)
        ft.set("+0")
        time.sleep(0.5)
        record_measures(d.sock, tmp, "after +8d and back")
        attach_finds(d.sock, "after +8d and back", 40)
        # A clock 30 days behind.
        ft.set("-30d")
        time.sleep(1)
        record_measures(d.sock, tmp, "during -30d")
        attach_finds(d.sock, "during -30d", 40)
        # A step inside a record that moves stored time (beyond the +8 d
        # it already went through): measured, and reported as such.
        out = os.path.join(tmp, "across")
        p = subprocess.Popen([ARGS.edgemon, "--connect", "unix:" + d.sock, "record", "--out", out,
                              "--", "sleep", "3"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        ft.set("+10d")
        _, err = p.communicate(timeout=60)
        expect(p.returncode == 0, f"record across a step: {p.returncode} {err}")
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        expect(s["samples"] >= 24, f"record across a step: {s['samples']} frames in 3 s")
        said = s["notes"] + s["uncertainty"]
        expect(any("stepped" in n for n in said), f"the step is not reported: {said}")
    finally:
        expect(d.stop() == 0, d.output())
    # Restarted while the clock is 30 days behind: a client with the right
    # time records and attaches as usual.
    ft.set("-30d")
    d = Daemon(tmp, "clock", root, db=d.db, sock=d.sock, interval_ms=100, env=ft.env(),
               config=cfg).ready()
    try:
        time.sleep(1)
        record_measures(d.sock, tmp, "after a restart behind")
        attach_finds(d.sock, "after a restart behind", 20)
    finally:
        expect(d.stop() == 0, d.output())


def parse_args(*extra):
    """The flags every attack on edgemond takes (the programs, protoc and its
    gRPC plugin, the protos, the fixtures), the (flag, options) pairs of
    `extra`, and -k (run only the checks whose name holds it)."""
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--edgemon", "--protoc", "--plugin", "--proto-dir", "--fixtures"):
        ap.add_argument(a, required=True)
    for flag, options in extra:
        ap.add_argument(flag, **options)
    ap.add_argument("-k", default="")
    args = ap.parse_args()
    interop_test.ARGS = args
    return args


def prepare(tmp, fixtures, scripts):
    """Group edgemon, and `tmp` made a scratch folder other uids can read:
    the gRPC stubs, `scripts` (file name -> text) and a copy of the AGX Orin
    fixture board. Returns the stubs' modules, their folder and the board."""
    try:
        grp.getgrnam("edgemon")
    except KeyError:
        subprocess.run(["groupadd", "--system", "edgemon"], check=True)
    os.chmod(tmp, 0o755)  # other uids must reach the sockets and scripts
    stubs = os.path.join(tmp, "stubs")
    m = interop_test.generate_stubs(stubs)
    for name, text in scripts.items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    for dirpath, dirnames, filenames in os.walk(tmp):
        for n in dirnames + filenames:
            os.chmod(os.path.join(dirpath, n), 0o755)
    root = os.path.join(tmp, "board")
    shutil.copytree(os.path.join(fixtures, "agx-orin"), root, symlinks=True)
    return m, stubs, root


def main():
    global ARGS
    ARGS = parse_args()
    if os.geteuid() != 0:
        print("daemon_attack: needs root (groupadd, setpriv)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="edgemon-attack-")
    checks = Checks()
    try:
        m, stubs, root = prepare(tmp, ARGS.fixtures, {"client.py": CLIENT})
        for name, fn, args in (
                ("same store through a symlink and a hard link", same_store_through_links,
                 (tmp, root)),
                ("ten daemons racing for one socket", racing_starts_on_one_socket, (tmp, root)),
                ("a second daemon leaves the flight recorder alone",
                 second_daemon_leaves_the_flight_recorder, (tmp, root)),
                ("leases and windows belong to their caller", ownership, (tmp, root, m, stubs)),
                ("record and attach across clock steps", clock_steps, (tmp, root)),
                ("the local feed refuses strangers and survives floods", feed_attacks,
                 (tmp, root, m, stubs))):
            if ARGS.k in name:
                checks.run(name, fn, *args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed or checks.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
