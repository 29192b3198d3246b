#!/usr/bin/python3
"""The README's path without root, run as a user created for the test.

  nonroot_test.py --source-dir REPO --build-dir BUILD

As root (CI), a throwaway user (`useradd`, removed at the end) runs, with a
`sudo` on its PATH that records any call and fails:
  - scripts/install-deps.sh --build: where the packages are there it exits 0
    and never asks for sudo;
  - scripts/quickstart.sh --no-install --sim orin-nano, without a terminal, in
    a copy of the tree's scripts and fixtures whose build/ holds the programs
    already built (a stand-in `cmake` does nothing: the build is reused):
    edgemond runs as that user on the simulated board, and `edgemon now
    --json` reads it;
  - python3 -m venv --system-site-packages, then pip install --no-index of
    client/python (a copy the user owns), and the venv's `edgemon` package
    reads the same daemon.
Not as root, the same steps run as the caller (already an ordinary user).
"""
import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAILURES = []


def expect(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what, flush=True)


PROGRAMS = ["daemon/edgemond", "daemon/edgemon-probe", "daemon/sim/edgemon-sim",
            "client/cli/edgemon", "tui/edgetop"]


def tree_for(user_dir, source_dir, build_dir):
    """scripts/, tests/fixtures, client/python and client/report (pip's
    sources), proto and build/ (links to the built programs) in a folder the
    user owns."""
    src = os.path.join(user_dir, "src")
    shutil.copytree(os.path.join(source_dir, "scripts"), os.path.join(src, "scripts"))
    os.makedirs(os.path.join(src, "tests"))
    os.symlink(os.path.join(source_dir, "tests", "fixtures"),
               os.path.join(src, "tests", "fixtures"))
    shutil.copytree(os.path.join(source_dir, "client", "python"),
                    os.path.join(src, "client", "python"),
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    shutil.copytree(os.path.join(source_dir, "client", "report"),
                    os.path.join(src, "client", "report"))
    shutil.copytree(os.path.join(source_dir, "proto"), os.path.join(src, "proto"))
    for rel in PROGRAMS:
        dst = os.path.join(src, "build", rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.symlink(os.path.join(build_dir, rel), dst)
    open(os.path.join(src, "build", "CMakeCache.txt"), "w").close()
    return src


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    a = ap.parse_args()
    source_dir, build_dir = os.path.abspath(a.source_dir), os.path.abspath(a.build_dir)

    user = None
    if os.getuid() == 0:
        user = "edgemon-t%d" % os.getpid()
        subprocess.run(["useradd", "--create-home", "--home-dir", "/tmp/" + user,
                        "--shell", "/bin/sh", user], check=True)
    home = pwd.getpwnam(user).pw_dir if user else tempfile.mkdtemp(prefix="edgemon-nonroot-")
    quick = None
    try:
        uid = pwd.getpwnam(user).pw_uid if user else os.getuid()
        gid = pwd.getpwnam(user).pw_gid if user else os.getgid()
        work = os.path.join(home, "work")
        os.makedirs(work)
        src = tree_for(work, source_dir, build_dir)
        stubs = os.path.join(work, "bin")
        os.makedirs(stubs)
        log = os.path.join(work, "stub.log")
        for name, body in (("sudo", 'echo "sudo $*" >>"%s"; exit 99' % log),
                           ("cmake", 'echo "cmake $*" >>"%s"' % log)):
            with open(os.path.join(stubs, name), "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(os.path.join(stubs, name), 0o755)
        open(log, "w").close()
        if user:
            subprocess.run(["chown", "-R", "-h", f"{uid}:{gid}", home], check=True)
        env = {"PATH": stubs + ":/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": user or "",
               "LANG": "C.UTF-8", "TMPDIR": work}
        as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups"] if user else []

        def run(cmd, **kw):
            return subprocess.run(as_user + cmd, env=env, cwd=src, capture_output=True,
                                  text=True, stdin=subprocess.DEVNULL, **kw)

        r = run(["id", "-u"], timeout=30)
        expect(r.stdout.strip() != "0", f"the steps run as root: {r.stdout!r}")
        # 1. The install step, where the packages are there: no sudo.
        r = run(["scripts/install-deps.sh", "--build"], timeout=60)
        expect(r.returncode == 0 and "already installed" in r.stdout,
               f"install-deps.sh --build as a user: exit {r.returncode} {r.stdout} {r.stderr}")
        # 2. The quick start without the install step, no terminal: edgemond
        # in the foreground on the simulated board.
        quick = subprocess.Popen(as_user + ["scripts/quickstart.sh", "--no-install", "--sim",
                                            "orin-nano"],
                                 env=env, cwd=src, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        sock = os.path.join(src, "build", "edgemond-orin-nano.sock")
        deadline = time.time() + 60
        while not os.path.exists(sock) and quick.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        expect(os.path.exists(sock), "quickstart.sh --no-install: no daemon socket")
        target = "unix:" + sock
        now = None
        deadline = time.time() + 30
        while time.time() < deadline:
            r = run(["build/client/cli/edgemon", "--connect", target, "now", "--json"], timeout=30)
            if r.returncode == 0:
                now = json.loads(r.stdout)
                break
            time.sleep(0.3)
        expect(now is not None and "rail/VDD_IN/power" in now["values"],
               f"edgemon now as the user: {r.returncode} {r.stderr}")
        # 3. The Python packages into a venv, with pip, from the tree, offline.
        venv = os.path.join(work, "venv")
        r = run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], timeout=120)
        expect(r.returncode == 0, f"python3 -m venv: {r.stderr[-500:]}")
        r = run([venv + "/bin/pip", "install", "--no-index", "client/python"], timeout=300)
        expect(r.returncode == 0, f"pip install client/python: {r.stdout[-800:]} {r.stderr[-800:]}")
        r = run([venv + "/bin/python", "-c",
                 "import edgemon, sys; print(edgemon.__file__); "
                 "print(edgemon.connect(sys.argv[1]).latest().get('rail/VDD_IN/power'))", target],
                timeout=60)
        lines = r.stdout.split()
        expect(r.returncode == 0 and len(lines) == 2 and lines[0].startswith(venv)
               and float(lines[1]) > 0,
               f"the venv's edgemon package: {r.returncode} {r.stdout!r} {r.stderr[-500:]}")
        with open(log) as f:
            calls = f.read().splitlines()
        expect(not any(c.startswith("sudo") for c in calls), f"sudo was asked for: {calls}")
    finally:
        if quick is not None:
            try:
                os.killpg(quick.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                out, _ = quick.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(quick.pid, signal.SIGKILL)
                out, _ = quick.communicate()
            if FAILURES:
                print("quickstart output:\n" + (out or "")[-2000:])
        if user:
            subprocess.run(["userdel", "--remove", user], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
    if FAILURES:
        print(f"nonroot_test: {len(FAILURES)} failures")
        return 1
    print("nonroot_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
