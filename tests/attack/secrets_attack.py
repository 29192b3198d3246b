#!/usr/bin/env python3
"""Attacks on the files edgemon trusts for secrets and for signals, each of
which once worked:

  token files   a bearer token file (daemon.tcp_token_file,
                daemon.metrics_token_file, a push's bearer_token_file, and
                edgemon's --token-file) that is a symlink (the push token
                once sent the line of whatever file the link named to the
                push destination), readable by the group, or owned by
                another uid: each is refused with one line naming the file
                and the rule, and nothing starts with it;
  pid files     `edgemon tegrastats --stop` with a pid file naming another
                program of the same user at its true start time (the sleep
                stays alive), and with a FIFO as the pid file (refused at
                once, never waited on).

Runs as root (chown to nobody); prints PASS/FAIL per check and
"N passed, N failed"."""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from harness import Checks, expect, free_port, stop_process  # noqa: E402

ARGS = None
SKIP = 77
TOKEN = "s3cret-token-0123456789\n"
NOBODY = 65534


def write_token(path, mode=0o600):
    with open(path, "w") as f:
        f.write(TOKEN)
    os.chmod(path, mode)
    return path


def bad_tokens(tmp):
    """(what, path, the rule's words) for each kind of untrusted token file."""
    d = os.path.join(tmp, "tokens")
    os.makedirs(d, mode=0o700, exist_ok=True)
    good = write_token(os.path.join(d, "good"))
    link = os.path.join(d, "link")
    if not os.path.lexists(link):
        os.symlink(good, link)  # to a file that would itself be accepted
    group = write_token(os.path.join(d, "group-readable"), 0o640)
    foreign = write_token(os.path.join(d, "foreign"))
    os.chown(foreign, NOBODY, NOBODY)
    return good, [("a symlink", link, "is a symbolic link"),
                  ("a group-readable file", group, "is open to group or others (mode 0640"),
                  ("a file of another uid", foreign, f"belongs to uid {NOBODY}")]


def start_daemon(tmp, root, name, config_text):
    cfg = os.path.join(tmp, name + ".toml")
    with open(cfg, "w") as f:
        f.write(config_text)
    log = open(os.path.join(tmp, name + ".log"), "w+")
    e = dict(os.environ)
    e.pop("NOTIFY_SOCKET", None)
    proc = subprocess.Popen([ARGS.edgemond, "--root", root, "--db", os.path.join(tmp, name + ".db"),
                             "--listen", "unix:" + os.path.join(tmp, name + ".sock"),
                             "--interval-ms", "100", "--config", cfg],
                            stdout=subprocess.DEVNULL, stderr=log, env=e)
    return proc, log


def daemon_refuses_untrusted_tokens(tmp, root):
    _, bad = bad_tokens(tmp)
    port = free_port()
    keys = (("daemon.tcp_token_file",
             lambda p: f'[daemon]\ntcp_listen = "127.0.0.1:{port}"\ntcp_token_file = "{p}"\n'),
            ("daemon.metrics_token_file",
             lambda p: f'[daemon]\nmetrics_listen = "127.0.0.1:{port}"\n'
                       f'metrics_token_file = "{p}"\n'),
            ("a push's bearer_token_file",
             lambda p: f'[[push]]\nurl = "http://127.0.0.1:{port}/write"\n'
                       f'bearer_token_file = "{p}"\n'))
    for key, config in keys:
        for what, path, rule in bad:
            name = "refuse-%d" % abs(hash((key, path)))
            proc, log = start_daemon(tmp, root, name, config(path))
            try:
                rc = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                stop_process(proc, 10)
                rc = None
            log.seek(0)
            out = log.read()
            log.close()
            expect(rc not in (None, 0), f"{key} as {what}: edgemond started (exit {rc})")
            line = f"secret file {path}: {rule}"
            expect(line in out, f"{key} as {what}: no line naming it and the rule "
                                f"({line!r}) in:\n{out[-2000:]}")


def good_token_serves_and_client_refuses_bad(tmp, root):
    good, bad = bad_tokens(tmp)
    port = free_port()
    proc, log = start_daemon(tmp, root, "good",
                             f'[daemon]\ntcp_listen = "127.0.0.1:{port}"\n'
                             f'tcp_token_file = "{good}"\n')
    try:
        cli = [ARGS.edgemon, "--connect", f"127.0.0.1:{port}"]
        deadline = time.time() + 20
        while True:
            r = subprocess.run(cli + ["--token-file", good, "sensors", "--json"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0 or time.time() > deadline or proc.poll() is not None:
                break
            time.sleep(0.2)
        expect(r.returncode == 0 and "VDD_CPU_CV" in r.stdout,
               f"the good token was not served: exit {r.returncode} {r.stderr.strip()}")
        for what, path, rule in bad:
            r = subprocess.run(cli + ["--token-file", path, "sensors", "--json"],
                               capture_output=True, text=True, timeout=30)
            line = f"secret file {path}: {rule}"
            expect(r.returncode != 0 and line in r.stderr and not r.stdout,
                   f"edgemon --token-file {what}: exit {r.returncode} {r.stderr.strip()}")
    finally:
        stop_process(proc, 25)
        log.close()


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    return int(text[text.rindex(")") + 2:].split()[19])  # field 22


def stop_leaves_other_programs_alone(tmp, root):
    xdg = os.path.join(tmp, "xdg")
    os.makedirs(xdg, mode=0o700, exist_ok=True)
    pid_file = os.path.join(xdg, "edgemon-tegrastats.pid")
    env = dict(os.environ, XDG_RUNTIME_DIR=xdg)
    cmd = [ARGS.edgemon, "tegrastats", "--stop"]
    victim = subprocess.Popen(["sleep", "60"])
    try:
        with open(pid_file, "w") as f:
            f.write(f"{victim.pid} {start_time(victim.pid)}\n")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
        time.sleep(0.2)
        expect(victim.poll() is None,
               f"--stop signalled a sleep of the same user: it ended ({victim.returncode})")
        expect("not signalled" in r.stderr,
               f"--stop did not say the pid runs another program: {r.stderr.strip()}")
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
    for kind, make in (("a FIFO", lambda: os.mkfifo(pid_file, 0o600)),
                       ("a symlink", lambda: os.symlink("/dev/null", pid_file))):
        if os.path.lexists(pid_file):
            os.unlink(pid_file)
        make()
        t0 = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10, env=env)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"--stop hung on {kind} as its pid file")
        took = time.monotonic() - t0
        expect(r.returncode != 0 and pid_file in r.stderr and "refusing" in r.stderr,
               f"--stop on {kind}: exit {r.returncode} {r.stderr.strip()}")
        expect(took < 5, f"--stop on {kind} took {took:.1f} s")
        expect(os.path.lexists(pid_file), f"--stop removed {kind} it refused")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--edgemon", "--fixtures"):
        ap.add_argument(a, required=True)
    ap.add_argument("-k", default="")
    ARGS = ap.parse_args()
    if os.geteuid() != 0:
        print("secrets_attack: needs root (chown to another uid)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="edgemon-secrets-")
    checks = Checks()
    try:
        root = os.path.join(tmp, "board")
        shutil.copytree(os.path.join(ARGS.fixtures, "agx-orin"), root, symlinks=True)
        for name, fn in (
                ("edgemond refuses token files that are links, group-readable or foreign",
                 daemon_refuses_untrusted_tokens),
                ("a good token is served; edgemon --token-file refuses the same bad files",
                 good_token_serves_and_client_refuses_bad),
                ("tegrastats --stop signals only its own program; a FIFO pid file at once",
                 stop_leaves_other_programs_alone)):
            if ARGS.k in name:
                checks.run(name, fn, tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed or checks.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
