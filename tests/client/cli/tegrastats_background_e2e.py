#!/usr/bin/python3
"""End-to-end test of `edgemon tegrastats --start` and `--stop` against real
programs: edgemon-sim materialises a simulated AGX Orin, edgemond samples it
and serves it on a unix socket, and the edgemon binary is run as a user runs
tegrastats in scripts (`--start --logfile F`, the work, `--stop`).

Each run has a runtime directory (XDG_RUNTIME_DIR) and a state directory
(XDG_STATE_HOME) of its own, so the pid file is the test's alone. Nothing is
timed: every wait polls with a generous deadline.

  tegrastats_background_e2e.py --edgemon build/client/cli/edgemon \
      --edgemond build/daemon/edgemond --sim build/daemon/sim/edgemon-sim \
      --fixtures tests/fixtures

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from harness import expect, run_on, start_sim, stop_process, wait_until  # noqa: E402

ARGS = None
DEADLINE_S = 60
BOARD = "agx-orin"
RAM_RE = re.compile(r"RAM (\d+)/(\d+)MB \(lfb (\d+)x(\d+)(\w)B\)")
PID_FILE = "edgemon-tegrastats.pid"


def proc_stat(pid):
    """(state, session id, start time) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[3]), int(fields[19])  # fields 3, 6 and 22


def ended(pid):
    st = proc_stat(pid)
    return st is None or st[0] in "ZXx"


def lines_of(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class Board:
    """edgemon-sim on a fixture + edgemond on a unix socket."""

    def __init__(self, tmp):
        self.dir = tmp
        root = os.path.join(tmp, "root")
        self.sim_log = open(os.path.join(tmp, "sim.log"), "w")
        self.sim, _ = start_sim(ARGS.sim, BOARD, root, ARGS.fixtures, self.sim_log,
                                ["--rate-hz", "20", "--period-s", "10"])
        self.sock = os.path.join(tmp, "edgemond.sock")
        self.log = open(os.path.join(tmp, "edgemond.log"), "w")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.daemon = subprocess.Popen(
            [ARGS.edgemond, "--root", root, "--db", os.path.join(tmp, "edgemon.db"),
             "--listen", "unix:" + self.sock, "--interval-ms", "200"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        wait_until("edgemond's socket", lambda: os.path.exists(self.sock) or
                   self.daemon.poll() is not None)
        expect(self.daemon.poll() is None, "edgemond exited at start")
        # The test's own runtime and state directories.
        self.run_dir = os.path.join(tmp, "run")
        os.mkdir(self.run_dir, 0o700)
        self.state_dir = os.path.join(tmp, "state")
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.run_dir, XDG_STATE_HOME=self.state_dir)
        self.pid_file = os.path.join(self.run_dir, PID_FILE)
        self.started = []  # pids of background instances, stopped at the end

    def edgemon(self, *args, connect=None, program=None):
        r = subprocess.run([program or ARGS.edgemon, "--connect", connect or "unix:" + self.sock,
                            "tegrastats", *args], capture_output=True, text=True,
                           timeout=DEADLINE_S, env=self.env, stdin=subprocess.DEVNULL)
        return r

    def record(self):
        with open(self.pid_file) as f:
            text = f.read()
        m = re.fullmatch(r"(\d+) (\d+)\n", text)
        expect(m, f"pid file holds {text!r}, not 'PID STARTTIME'")
        return int(m.group(1)), int(m.group(2))

    def start(self, *args, program=None):
        r = self.edgemon("--start", "--interval", "200", *args, program=program)
        expect(r.returncode == 0, f"--start: exit {r.returncode}: {r.stderr}")
        expect(r.stdout == "", f"--start printed on stdout: {r.stdout!r}")
        pid, start_time = self.record()
        self.started.append(pid)
        return pid, start_time

    def stop(self):
        for pid in self.started:
            if not ended(pid):
                os.kill(pid, signal.SIGKILL)
        stop_process(self.daemon)
        stop_process(self.sim)
        self.log.close()
        self.sim_log.close()


def check_start_stop(b):
    log = os.path.join(b.dir, "t.log")
    pid, start_time = b.start("--logfile", log)
    st = proc_stat(pid)
    expect(st is not None and st[2] == start_time,
           f"the pid file's start time {start_time} is not pid {pid}'s ({st})")
    # Detached: a session of its own, stdin and stdout on /dev/null.
    expect(st[1] != os.getsid(0), "the background instance is in the caller's session")
    for fd in (0, 1, 2):
        expect(os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null",
               f"the background instance's fd {fd} is not /dev/null")
    lines = wait_until("3 lines in the logfile", lambda: len(lines_of(log)) >= 3 and lines_of(log))
    for line in lines:
        m = RAM_RE.search(line)
        expect(m, f"not a tegrastats line: {line!r}")
    # A second --start is refused while the first runs, and changes nothing.
    r = b.edgemon("--start", "--logfile", os.path.join(b.dir, "second.log"))
    expect(r.returncode == 1, f"second --start: exit {r.returncode}, not 1: {r.stderr}")
    expect("already running" in r.stderr and str(pid) in r.stderr,
           f"second --start said {r.stderr!r}")
    expect(b.record() == (pid, start_time), "the second --start changed the pid file")
    expect(not ended(pid), "the second --start ended the first")
    expect(not os.path.exists(os.path.join(b.dir, "second.log")) or
           lines_of(os.path.join(b.dir, "second.log")) == [],
           "the refused --start wrote lines")
    # --stop ends it (SIGTERM, a clean exit) and the pid file goes with it.
    r = b.edgemon("--stop")
    expect(r.returncode == 0, f"--stop: exit {r.returncode}: {r.stderr}")
    expect(ended(pid), f"pid {pid} still runs after --stop returned")
    expect(not os.path.exists(b.pid_file), "the pid file is still there after --stop")
    # Nothing running: --stop says so and exits 0, as scripts call it first.
    r = b.edgemon("--stop")
    expect(r.returncode == 0, f"--stop with nothing running: exit {r.returncode}")
    expect("no background instance" in r.stderr, f"--stop with nothing running: {r.stderr!r}")


def check_stale_pid_is_not_signalled(b):
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        st = proc_stat(sleeper.pid)
        expect(st is not None, "sleep did not start")
        with open(b.pid_file, "w") as f:
            f.write(f"{sleeper.pid} {st[2] + 1}\n")  # its pid, another start time
        r = b.edgemon("--stop")
        expect(r.returncode == 0, f"--stop on a stale pid file: exit {r.returncode}: {r.stderr}")
        expect("not signalled" in r.stderr, f"--stop on a stale pid file said {r.stderr!r}")
        time.sleep(0.2)  # a SIGTERM, had one been sent, has landed by now
        expect(sleeper.poll() is None, f"--stop killed an unrelated process: {sleeper.returncode}")
        expect(not os.path.exists(b.pid_file), "the stale pid file was not removed")
        # A stale file does not block --start either.
        with open(b.pid_file, "w") as f:
            f.write(f"{sleeper.pid} {st[2] + 1}\n")
        pid, _ = b.start("--logfile", os.path.join(b.dir, "after-stale.log"))
        expect(pid != sleeper.pid, "--start kept the stale record")
        r = b.edgemon("--stop")
        expect(r.returncode == 0 and ended(pid), f"--stop: exit {r.returncode}: {r.stderr}")
        expect(sleeper.poll() is None, "the unrelated process died")
    finally:
        sleeper.kill()
        sleeper.wait()


def check_another_executables_instance_is_not_signalled(b):
    # An instance of another edgemon file (as after an upgrade replaced the
    # binary): its pid and start time match, its executable does not.
    copy = os.path.join(b.dir, "edgemon-copy")
    shutil.copy2(ARGS.edgemon, copy)
    pid, _ = b.start("--logfile", os.path.join(b.dir, "copy.log"), program=copy)
    r = b.edgemon("--stop")
    expect(r.returncode == 1 and f"pid {pid} holds the pid file but does not run this edgemon's"
           in r.stderr, f"--stop of another executable's instance: exit {r.returncode}: "
           f"{r.stderr!r}")
    time.sleep(0.2)  # a SIGTERM, had one been sent, has landed by now
    expect(not ended(pid), "--stop signalled an instance of another executable")
    expect(b.record()[0] == pid, "--stop removed the pid file of a live instance")
    r = b.edgemon("--stop", program=copy)
    expect(r.returncode == 0 and ended(pid), f"the copy's own --stop: exit {r.returncode}: "
           f"{r.stderr!r}")


def check_unreachable_daemon_reported_before_detaching(b):
    r = b.edgemon("--start", "--logfile", os.path.join(b.dir, "never.log"),
                  connect="unix:" + os.path.join(b.dir, "no-daemon.sock"))
    expect(r.returncode == 69, f"--start without a daemon: exit {r.returncode}, not 69")
    expect("cannot reach the daemon" in r.stderr, f"--start without a daemon said {r.stderr!r}")
    expect(not os.path.exists(b.pid_file), "a pid file was left by a --start that failed")
    r = b.edgemon("--stop")
    expect(r.returncode == 0 and "no background instance" in r.stderr,
           f"--stop after a failed --start: {r.returncode} {r.stderr!r}")


def check_default_logfile_and_count(b):
    # Without --logfile: $XDG_STATE_HOME/edgemon/tegrastats.log. With
    # --count, the instance ends by itself and removes its pid file.
    pid, _ = b.start("--count", "3")
    log = os.path.join(b.state_dir, "edgemon", "tegrastats.log")
    wait_until("the instance ends after --count 3", lambda: ended(pid))
    lines = lines_of(log)
    expect(len(lines) == 3, f"--count 3 wrote {len(lines)} lines to {log}")
    expect(all(RAM_RE.search(x) for x in lines), f"not tegrastats lines: {lines}")
    expect(not os.path.exists(b.pid_file), "the pid file outlived the instance")


def check_sigterm_to_the_instance(b):
    log = os.path.join(b.dir, "term.log")
    pid, _ = b.start("--logfile", log)
    wait_until("a line in the logfile", lambda: lines_of(log))
    os.kill(pid, signal.SIGTERM)
    wait_until("the instance ends on SIGTERM", lambda: ended(pid))
    wait_until("the pid file goes", lambda: not os.path.exists(b.pid_file))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgemon", required=True)
    ap.add_argument("--edgemond", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--fixtures", required=True)
    ARGS = ap.parse_args()
    return run_on("edgemon-tegrastats-bg-", Board, [
        ("--start, lines, a second --start refused, --stop", check_start_stop),
        ("a stale pid file's pid is not signalled", check_stale_pid_is_not_signalled),
        ("another executable's instance is not signalled",
         check_another_executables_instance_is_not_signalled),
        ("an unreachable daemon is reported before detaching",
         check_unreachable_daemon_reported_before_detaching),
        ("the default logfile, --count", check_default_logfile_and_count),
        ("SIGTERM to the instance", check_sigterm_to_the_instance),
    ])


if __name__ == "__main__":
    sys.exit(main())
