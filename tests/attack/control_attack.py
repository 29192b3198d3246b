#!/usr/bin/env python3
"""Attacks on edgemon-control, the root helper (needs root, as CI runs; exit 77
otherwise): the real helper on a real unix socket over a simulated Orin
(edgemon-sim), driven by the real edgemon command line, as root and as
`nobody` in the control group.

Checked:
  symlink_pwm     pwm1 replaced by a link to a file outside the root: a fan
                  request is refused, saying the file is a symbolic link, and
                  the file outside is unchanged (also for a link inside).
  fifo_pwm        pwm1 replaced by a FIFO: the fan request fails at once,
                  saying it is not a regular file; `control state` still
                  answers; a mode lease still expires; SIGTERM stops the helper
                  (it hung in open(2), holding the lock every call needs).
  other_uid       nobody (in the group) holds a fan lease, root then locks the
                  clocks (which also sets the fan): nobody's release of root's
                  lease is refused, and nobody's release of its own older
                  lease does not end root's; root's release ends both and
                  restores the board.
  log_escape      a 60 KB fan name full of escape sequences is logged escaped
                  and cut short.
  state_dir_of_others  a state directory others may write: refused at start.

  control_attack.py --control B --edgemon B --edgemond B --sim B --fixtures DIR
"""
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "daemon", "control"))
import control_e2e  # noqa: E402  (its Env: the simulated Orin, the helper, edgemond)
from control_e2e import GROUP, MAX0, MIN0, grp_gid, wait_for  # noqa: E402
from harness import expect  # noqa: E402

PWM_GLOB = "sys/devices/platform/pwm-fan/hwmon/hwmon*/pwm1"


class Env(control_e2e.Env):
    """control_e2e's board, helper and daemon; here each check starts its own
    helper and stops it with SIGTERM, seeing whether that stopped it."""

    def __init__(self, tmp):
        super().__init__(tmp)
        self.stop_helper()
        self.pwm = glob.glob(os.path.join(self.root, PWM_GLOB))[0]
        self.outside = os.path.join(tmp, "outside")
        with open(self.outside, "w") as f:
            f.write("keep\n")

    def start_helper(self, config=None):
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        super().start_helper(config)
        expect(self.helper.poll() is None, self.log())

    def stop_helper(self):
        """SIGTERM; a helper that does not stop is killed (and the check fails)."""
        if self.helper is None or self.helper.poll() is not None:
            return True
        self.helper.terminate()
        try:
            self.helper.wait(timeout=30)
            return True
        except subprocess.TimeoutExpired:
            self.helper.kill()
            self.helper.wait()
            return False

    def last_log(self):
        with open(self.helper_logs[-1], "rb") as f:
            return f.read()

    def control(self, *args, nobody=False, timeout=30):
        user = [f"--groups={grp_gid(GROUP)}"] if nobody else None
        try:
            return super().control(*args, user=user, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"edgemon {' '.join(args)} did not return (the helper hangs)")


def read(path):
    with open(path) as f:
        return f.read()


def replace_pwm(env, make):
    """Puts something else where pwm1 is (make(path)); returns the undo."""
    saved = env.pwm + ".saved"
    os.rename(env.pwm, saved)
    make(env.pwm)

    def undo():
        os.unlink(env.pwm)
        os.rename(saved, env.pwm)
    return undo


def names_pwm(env, text):
    """Whether an error names the fan's pwm1 (by its hwmon class path)."""
    return os.path.join(env.root, "sys/class/hwmon/") in text and "/pwm1" in text


def symlink_pwm(env):
    env.start_helper()
    try:
        for target in (env.outside, env.pwm + ".saved"):
            undo = replace_pwm(env, lambda p, t=target: os.symlink(t, p))
            try:
                before = read(target)
                r = env.control("fan", "50", "--for", "1h")
                expect(r.returncode != 0, f"fan request through a link served: {r.stdout}")
                expect("symbolic link" in r.stderr and names_pwm(env, r.stderr), r.stderr)
                expect(read(target) == before, f"{target} changed: {read(target)!r}")
            finally:
                undo()
        expect(read(env.outside) == "keep\n", read(env.outside))
    finally:
        expect(env.stop_helper(), "SIGTERM did not stop the helper")


def fifo_pwm(env):
    env.start_helper()
    undo = replace_pwm(env, lambda p: os.mkfifo(p, 0o600))
    try:
        r = env.control("fan", "50", "--for", "1h")
        expect(r.returncode != 0, r.stdout)
        expect("not a regular file" in r.stderr and names_pwm(env, r.stderr), r.stderr)
        r = env.control("state")
        expect(r.returncode == 0, r.stderr)
        # Another lease is granted and still expires (a mode: the board's
        # jetson_clocks would itself wait on the FIFO).
        r = env.control("mode", "1", "--for", "1s")
        expect(r.returncode == 0, r.stderr)
        wait_for(lambda: "its duration passed" in env.last_log().decode(), "the mode lease expired")
    finally:
        stopped = env.stop_helper()
        undo()
    expect(stopped, "SIGTERM did not stop the helper (killed with SIGKILL)")
    expect(env.helper.returncode == 0, env.helper.returncode)


def other_uid(env):
    env.start_helper()
    try:
        pwm_before = read(env.pwm)
        min_before = read(os.path.join(env.root, MIN0))
        r = env.control("fan", "30", "--for", "1h", nobody=True)
        expect(r.returncode == 0, r.stderr)
        r = env.control("clocks", "lock", "--for", "1h")
        expect(r.returncode == 0, r.stderr)
        state = env.control("state").stdout
        held = {l.split()[1]: l for l in state.splitlines() if l.startswith("lease ")}
        expect(len(held) == 2, state)
        root_id = [i for i, l in held.items() if "uid 0 " in l][0]
        nobody_id = [i for i, l in held.items() if "uid 65534 " in l][0]
        # Root's lease, by id and by kind: refused.
        for what in (root_id, "clocks"):
            r = env.control("release", what, nobody=True)
            expect(r.returncode != 0, f"nobody released root's lease ({what}): {r.stdout}")
        # Its own older lease: root's newer one stays, and so do the clocks.
        env.control("release", nobody_id, nobody=True)
        state = env.control("state").stdout
        expect(root_id in state, f"nobody's release ended root's lease:\n{state}")
        expect(read(os.path.join(env.root, MIN0)) == read(os.path.join(env.root, MAX0)),
               "the clocks were unlocked by nobody")
        # Root ends its own: both end, the board is as it was.
        r = env.control("release", root_id)
        expect(r.returncode == 0, r.stderr)
        wait_for(lambda: "lease " not in env.control("state").stdout, "every lease ended")
        expect(read(env.pwm) == pwm_before, (read(env.pwm), pwm_before))
        expect(read(os.path.join(env.root, MIN0)) == min_before, "clocks not restored")
    finally:
        expect(env.stop_helper(), "SIGTERM did not stop the helper")


def log_escape(env):
    env.start_helper()
    try:
        name = ("\x1b[2J\x1b]0;pwned\x07\x9b" + "A" * 100 + "\nfake log line\r") * 500
        expect(len(name.encode()) > 55000, len(name.encode()))
        r = env.control("fan", "50", "--fan", name, "--for", "10s")
        expect(r.returncode != 0, r.stdout)
        # The CLI's own output is the CLI's business; the helper's log is checked here.
        wait_for(lambda: b"refused" in env.last_log(), "the refusal is logged")
    finally:
        expect(env.stop_helper(), "SIGTERM did not stop the helper")
    raw = env.last_log()
    expect(b"\x1b" not in raw and b"\x07" not in raw and b"\xc2\x9b" not in raw and
           b"\r" not in raw, "raw control characters in the log")
    expect(b"fake log line" not in raw.replace(b"\\nfake log line", b""),
           "a newline in the name started a log line")
    expect(b"\\x1b[2J" in raw, raw[:2000])
    longest = max(len(line) for line in raw.splitlines())
    expect(longest < 4096, f"a log line of {longest} bytes")


def state_dir_of_others(env):
    """A state directory others may write (its leases are restored, and its
    tools run, as root): the helper refuses to start."""
    shared = os.path.join(env.tmp, "shared-state")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    r = subprocess.run([control_e2e.ARGS.control, "--config", env.config, "--root", env.root, "--listen",
                        "unix:" + os.path.join(env.tmp, "other.sock"), "--state-dir", shared],
                       capture_output=True, text=True, timeout=30)
    expect(r.returncode == 2, (r.returncode, r.stderr))
    expect(f"state directory {shared} must be a directory of uid 0" in r.stderr and
           "refusing to start" in r.stderr, r.stderr)


def main():
    fns = (symlink_pwm, fifo_pwm, other_uid, log_escape, state_dir_of_others)
    return control_e2e.run(Env, [(fn.__name__, fn) for fn in fns])


if __name__ == "__main__":
    sys.exit(main())
