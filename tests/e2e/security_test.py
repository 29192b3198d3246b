#!/usr/bin/env python3
"""Security checks of edgemond as a process (needs root, as CI runs):

1. the API socket is created mode 0660 with group `edgemon`; a client running
   as `nobody` without that group is refused, the same uid with the group is
   served (the group is created as the package's sysusers.d entry would);
2. with the default configuration the daemon listens on no TCP port at all;
   a configured TCP listener is bound to loopback only;
3. the daemon never writes under the monitored root: every file there keeps
   its bytes through discovery, sampling, a rate boost and windows, and every
   descriptor it keeps open under the root is read-only.

  security_test.py --edgemond B --protoc P --plugin G --proto-dir proto --fixtures F
"""
import argparse
import grp
import hashlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

import interop_test  # stub generation and the Daemon helper, shared with the interop test
from harness import free_port  # noqa: E402 (shared by the e2e scripts)

SKIP = 77  # ctest's SKIP_RETURN_CODE for this test: only when not root

CLIENT = r"""
import sys, grpc
sys.path.insert(0, sys.argv[1])
from edgemon.v1 import edgemon_pb2 as pb, edgemon_pb2_grpc as rpc
stub = rpc.TelemetryStub(grpc.insecure_channel("unix:" + sys.argv[2]))
try:
    frame = stub.GetLatest(pb.GetLatestRequest(), timeout=5)
    print("OK", len(frame.ids))
except grpc.RpcError as e:
    print(e.code().name, e.details())
"""


def tree_digest(root):
    digests = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                digests[path] = "link:" + os.readlink(path)
                continue
            with open(path, "rb") as f:
                digests[path] = hashlib.sha256(f.read()).hexdigest()
    return digests


def listening_tcp(pid):
    """(address, port) of the TCP sockets the process listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            next(f)
            for line in f:
                cols = line.split()
                local, state, inode = cols[1], cols[3], cols[9]
                if state != "0A" or inode not in inodes:  # 0A = LISTEN
                    continue
                addr_hex, port_hex = local.split(":")
                raw = bytes.fromhex(addr_hex)
                if v6:
                    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    addr = socket.inet_ntop(socket.AF_INET6, raw)
                else:
                    addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
                found.append((addr, int(port_hex, 16)))
    return found


def main():
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--edgemon", "--python-dir", "--protoc", "--plugin", "--proto-dir",
              "--fixtures"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    interop_test.ARGS = args
    if os.geteuid() != 0:
        print("security_test: needs root (to create the group and run a client as nobody)")
        return SKIP
    passed, failures = 0, []

    def check(cond, what):
        nonlocal passed
        if cond:
            passed += 1
        else:
            failures.append(what)

    try:
        grp.getgrnam("edgemon")
    except KeyError:
        # What packaging/sysusers.d/edgemon.conf does on install.
        subprocess.run(["groupadd", "--system", "edgemon"], check=True)
    gid = grp.getgrnam("edgemon").gr_gid

    tmp = tempfile.mkdtemp(prefix="edgemon-sec-")
    try:
        os.chmod(tmp, 0o755)  # nobody must be able to reach the socket's directory
        stubs = os.path.join(tmp, "stubs")
        m = interop_test.generate_stubs(stubs)
        pb, rpc = m["edgemon_pb2"], m["edgemon_pb2_grpc"]
        for dirpath, dirnames, filenames in os.walk(stubs):
            for n in dirnames + filenames:
                os.chmod(os.path.join(dirpath, n), 0o755)
        # The Python package, where nobody can read it (the build tree may
        # sit under a home directory nobody cannot enter).
        pydir = os.path.join(tmp, "python")
        shutil.copytree(args.python_dir, pydir,
                        ignore=shutil.ignore_patterns("__pycache__"))
        for dirpath, dirnames, filenames in os.walk(pydir):
            for n in dirnames + filenames:
                os.chmod(os.path.join(dirpath, n), 0o755)
        edgemon_cli = os.path.join(tmp, "edgemon")
        shutil.copy(args.edgemon, edgemon_cli)
        os.chmod(edgemon_cli, 0o755)
        client = os.path.join(tmp, "client.py")
        with open(client, "w") as f:
            f.write(CLIENT)
        os.chmod(client, 0o644)

        root = os.path.join(tmp, "board")
        shutil.copytree(os.path.join(args.fixtures, "agx-orin"), root, symlinks=True)
        before = tree_digest(root)

        # 1. The socket's mode and group; nobody without and with the group.
        d = interop_test.Daemon(tmp, "sec", root)
        try:
            st = os.stat(d.sock)
            check(stat.S_ISSOCK(st.st_mode), "the API path is not a socket")
            check(stat.S_IMODE(st.st_mode) == 0o660,
                  f"socket mode {oct(stat.S_IMODE(st.st_mode))}, want 0o660")
            check(st.st_gid == gid, f"socket group {st.st_gid}, want edgemon ({gid})")

            def as_nobody(groups):
                cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup"]
                cmd += ["--groups=" + ",".join(groups)] if groups else ["--clear-groups"]
                r = subprocess.run(cmd + ["/usr/bin/python3", client, stubs, d.sock],
                                   capture_output=True, text=True, timeout=60)
                return (r.stdout.strip() or r.stderr.strip()).splitlines()[-1]

            out = as_nobody([])
            check(out.startswith("UNAVAILABLE") and "ermission denied" in out,
                  f"nobody without the group: {out!r}, want a refusal (permission denied)")
            out = as_nobody(["edgemon"])
            check(out.startswith("OK") and int(out.split()[1]) > 100,
                  f"nobody in group edgemon: {out!r}, want a frame")
            # The edgemon command says so with its documented exit code (77).
            r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                edgemon_cli, "--connect", "unix:" + d.sock, "now", "--json"],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 77 and "refused" in r.stderr,
                  f"edgemon as nobody without the group: exit {r.returncode} {r.stderr!r}, "
                  "want 77 (refused)")
            # In one line, what to do next: join the socket's group, log in again.
            check(r.stderr.count("\n") == 1
                  and "only members of the `edgemon` group may connect" in r.stderr
                  and "sudo usermod -aG edgemon $USER" in r.stderr
                  and "log out and in again" in r.stderr,
                  f"edgemon as nobody without the group: {r.stderr!r}, want the remedy")
            # And the Python package raises its documented PermissionDenied.
            py = ("import edgemon, sys\n"
                  "try:\n"
                  "    edgemon.connect(sys.argv[1]).latest()\n"
                  "    print('served')\n"
                  "except edgemon.Error as e:\n"
                  "    print(type(e).__name__, e)\n")
            r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                "/usr/bin/python3", "-c", py, "unix:" + d.sock],
                               capture_output=True, text=True, timeout=60,
                               env={"PYTHONPATH": pydir, "PATH": "/usr/bin:/bin",
                                    "PYTHONDONTWRITEBYTECODE": "1"})
            check(r.stdout.startswith("PermissionDenied ")
                  and "only members of the `edgemon` group may connect" in r.stdout
                  and "log out and in again" in r.stdout,
                  f"the Python package as nobody: {r.stdout!r} {r.stderr[-300:]!r}, "
                  "want PermissionDenied")

            # 2. Default configuration: no TCP listener at all.
            check(listening_tcp(d.proc.pid) == [],
                  f"default config listens on TCP: {listening_tcp(d.proc.pid)}")

            # 3a. Boost and windows, then every descriptor under the root is read-only.
            stub = rpc.TelemetryStub(d.channel)
            stub.Boost(pb.BoostRequest(rate_hz=200, duration_ms=1500), timeout=5)
            w = stub.BeginWindow(pb.BeginWindowRequest(label="security"), timeout=5)
            time.sleep(1.0)
            stub.EndWindow(pb.EndWindowRequest(id=w.id), timeout=5)
            stub.ListProcesses(pb.ListProcessesRequest(), timeout=5)
            under_root, writable = 0, []
            for fd in os.listdir(f"/proc/{d.proc.pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{d.proc.pid}/fd/{fd}")
                    with open(f"/proc/{d.proc.pid}/fdinfo/{fd}") as f:
                        flags = int(f.read().split("flags:")[1].split()[0], 8)
                except (OSError, IndexError):
                    continue
                if not target.startswith(root + "/"):
                    continue
                under_root += 1
                if flags & os.O_ACCMODE != os.O_RDONLY:
                    writable.append(target)
            check(under_root > 50, f"only {under_root} descriptors under the root (expected the "
                  "kept-open value files)")
            check(not writable, f"descriptors open for writing under the root: {writable}")
        finally:
            rc = d.stop()
        with open(d.log_path) as f:
            check(rc == 0, f"edgemond exited {rc}: {f.read()[-2000:]}")
        after = tree_digest(root)
        changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        check(not changed, f"files under the root changed: {changed[:5]}")

        # 2b. A configured TCP listener is on loopback only.
        port = free_port()
        cfg = os.path.join(tmp, "tcp.toml")
        with open(cfg, "w") as f:
            f.write(f'[daemon]\ntcp_listen = "127.0.0.1:{port}"\n')
        log = open(os.path.join(tmp, "tcp.log"), "w")
        p = subprocess.Popen([args.edgemond, "--root", root, "--db", os.path.join(tmp, "t.db"),
                              "--listen", "unix:" + os.path.join(tmp, "t.sock"), "--config", cfg],
                             stdout=subprocess.DEVNULL, stderr=log)
        try:
            listening = []
            deadline = time.time() + 20
            while not listening and time.time() < deadline and p.poll() is None:
                time.sleep(0.1)
                listening = listening_tcp(p.pid)
            # gRPC may bind an IPv6 socket with the v4-mapped loopback address.
            loopback = [a.removeprefix("::ffff:") for a, _ in listening]
            check(listening and all(p_ == port for _, p_ in listening) and
                  all(a.startswith("127.") or a == "::1" for a in loopback),
                  f"tcp_listen 127.0.0.1:{port}: listening on {listening}")
        finally:
            p.terminate()
            p.wait(timeout=30)
            log.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for f in failures:
        print("FAIL", f)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
