#!/usr/bin/env python3
"""edgemon-control end to end (needs root, as CI runs; exit 77 otherwise): the
real helper on a real unix socket over a simulated Orin (edgemon-sim, with its
simulated nvpmodel and jetson_clocks), driven by the real edgemon command line.

Checked: `edgemon record --lock-clocks --mode 0 -- CMD` runs CMD with the clocks
locked in mode 0 and leaves every file the control touches as it was (also when
the command fails or is interrupted); an unknown mode; a mode that needs a
reboot; an unknown fan; a caller outside the control group (refused) and one in
it (served, logged with its uid); the control disabled (refused, saying how to
enable it); the client killed mid-lease (restored); the helper killed -9
mid-lease and restarted (restored); two clients asking for different modes (the
second refused, naming the holder); a write the kernel refuses (reported,
nothing half-applied) with and without jetson_clocks.

  control_e2e.py --control B --edgemon B --edgemond B --sim B --fixtures DIR
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from harness import Checks, expect, free_port, start_sim, stop_process  # noqa: E402

SKIP = 77
GROUP = "edgemon-ctl-test"
ARGS = None


def touched_files(root):
    """Every file the control may write, by path under the root, with its bytes."""
    patterns = [
        "sys/devices/system/cpu/cpufreq/policy*/scaling_min_freq",
        "sys/devices/system/cpu/cpufreq/policy*/scaling_max_freq",
        "sys/devices/system/cpu/cpufreq/policy*/scaling_governor",
        "sys/devices/system/cpu/cpu*/online",
        "sys/devices/platform/*/devfreq/*/min_freq",
        "sys/devices/platform/*/devfreq/*/max_freq",
        "sys/devices/platform/*/devfreq/*/governor",
        "sys/devices/platform/*/hwmon/hwmon*/pwm*",
        "sys/kernel/debug/bpmp/debug/clk/emc/mrq_rate_locked",
        "var/lib/nvpmodel/status",
    ]
    out = {}
    for p in patterns:
        for f in glob.glob(os.path.join(root, p)):
            with open(f, "rb") as fh:
                out[os.path.relpath(f, root)] = fh.read()
    assert len(out) > 20, out
    return out


def diff(a, b):
    keys = sorted(set(a) | set(b))
    return {k: (a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)}


class Env:
    def __init__(self, tmp):
        self.tmp = tmp
        self.root = os.path.join(tmp, "board")
        self.sim_log = open(os.path.join(tmp, "sim.log"), "w")
        self.sim, _ = start_sim(ARGS.sim, "agx-orin", self.root, ARGS.fixtures, self.sim_log)
        self.sock = os.path.join(tmp, "control.sock")
        self.target = "unix:" + self.sock
        self.config = os.path.join(tmp, "edgemond.toml")
        with open(self.config, "w") as f:
            f.write(f'[control]\nenable = true\ngroup = "{GROUP}"\n')
        self.helper = None
        self.helper_logs = []
        # The board starts in mode 2, so that --mode 0 is a real change.
        self.tool("usr/sbin/nvpmodel", "-m", "2")
        self.start_helper()
        self.daemon_sock = os.path.join(tmp, "edgemond.sock")
        self.daemon_log = open(os.path.join(tmp, "edgemond.log"), "w")
        self.metrics_port = free_port()
        self.daemon = subprocess.Popen(
            [ARGS.edgemond, "--root", self.root, "--db", os.path.join(tmp, "e.db"), "--listen",
             "unix:" + self.daemon_sock, "--interval-ms", "100", "--metrics-listen",
             str(self.metrics_port)],
            stdout=subprocess.DEVNULL, stderr=self.daemon_log)
        wait_for(lambda: os.path.exists(self.daemon_sock), "edgemond listens")

    def tool(self, rel, *args):
        subprocess.run([os.path.join(self.root, rel), *args], check=True,
                       stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def start_helper(self, config=None):
        log = os.path.join(self.tmp, f"helper{len(self.helper_logs)}.log")
        self.helper_logs.append(log)
        self.helper = subprocess.Popen(
            [ARGS.control, "--config", config or self.config, "--root", self.root, "--listen",
             self.target], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        wait_for(lambda: os.path.exists(self.sock) or self.helper.poll() is not None,
                 "the helper listens")
        return self.helper

    def log(self):
        text = ""
        for p in self.helper_logs:
            with open(p, errors="replace") as f:
                text += f.read()
        return text

    def edgemon(self, *args, user=None, timeout=60):
        cmd = [ARGS.edgemon, *args]
        if user is not None:
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", *user, *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    def control(self, *args, **kw):
        return self.edgemon("control", "--control", self.target, *args, **kw)

    def stop(self):
        stop_process(self.helper)
        stop_process(self.daemon)
        stop_process(self.sim)


def wait_for(cond, what, timeout=20):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError("timed out waiting until " + what)
        time.sleep(0.02)


def read(env, rel):
    with open(os.path.join(env.root, rel)) as f:
        return f.read().strip()


MIN0 = "sys/devices/system/cpu/cpufreq/policy0/scaling_min_freq"
MAX0 = "sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq"
STATUS = "var/lib/nvpmodel/status"


def record_locked(env):
    """The Done-when: record --lock-clocks --mode 0 runs CMD locked in mode 0, then
    every touched file is as it was."""
    before = touched_files(env.root)
    expect(read(env, STATUS) == "pmode:0002", read(env, STATUS))
    out = os.path.join(env.tmp, "bundle")
    probe = (f"cat {env.root}/{MIN0} {env.root}/{MAX0} {env.root}/{STATUS}")
    r = env.edgemon("--connect", "unix:" + env.daemon_sock, "record", "--lock-clocks", "--mode",
                    "0", "--control", env.target, "--out", out, "--", "sh", "-c", probe)
    expect(r.returncode == 0, r.stderr)
    lo, hi, status = r.stdout.split()
    expect(lo == hi == "2201600", f"clocks during the run: min {lo} max {hi} (mode 0 max 2201600)")
    expect(status == "pmode:0000", status)
    expect("power mode 0 (MAXN), clocks locked" in r.stderr, r.stderr)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    expect(summary["power_mode"] == {"id": 0, "name": "MAXN"}, summary["power_mode"])
    expect(summary["clocks_locked"] is True, summary["clocks_locked"])
    after = touched_files(env.root)
    expect(before == after, f"left changed: {diff(before, after)}")


def record_failing_command(env):
    """A failing command: its exit status passes through, the board is restored."""
    before = touched_files(env.root)
    r = env.edgemon("--connect", "unix:" + env.daemon_sock, "record", "--lock-clocks",
                    "--control", env.target, "--", "sh", "-c", "exit 3")
    expect(r.returncode == 3, (r.returncode, r.stderr))
    expect(before == touched_files(env.root), diff(before, touched_files(env.root)))


def record_interrupted(env):
    """SIGINT to edgemon record mid-run: forwarded, then the board is restored."""
    before = touched_files(env.root)
    p = subprocess.Popen([ARGS.edgemon, "--connect", "unix:" + env.daemon_sock, "record",
                          "--lock-clocks", "--mode", "0", "--control", env.target, "--",
                          "sleep", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    wait_for(lambda: read(env, MIN0) == read(env, MAX0), "the clocks are locked")
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    expect(p.returncode == 128 + signal.SIGINT, (p.returncode, err))
    expect(before == touched_files(env.root), diff(before, touched_files(env.root)))


def record_refused(env):
    """The helper refuses --mode: the command never starts, nothing changes."""
    before = touched_files(env.root)
    marker = os.path.join(env.tmp, "ran")
    r = env.edgemon("--connect", "unix:" + env.daemon_sock, "record", "--lock-clocks", "--mode",
                    "9", "--control", env.target, "--", "touch", marker)
    expect(r.returncode == 2, (r.returncode, r.stderr))
    expect("not starting the command" in r.stderr and "unknown power mode 9" in r.stderr, r.stderr)
    expect(not os.path.exists(marker), "the command ran")
    expect(before == touched_files(env.root), diff(before, touched_files(env.root)))


def unknown_mode(env):
    r = env.control("mode", "9", "--for", "10s")
    expect(r.returncode == 2, (r.returncode, r.stderr))
    expect("unknown power mode 9" in r.stderr and "0 MAXN" in r.stderr, r.stderr)


def reboot_mode(env):
    """A mode whose TPC_PG_MASK differs from the current one's needs a reboot:
    refused, nothing changed, never rebooted."""
    conf = os.path.join(env.root, "etc/nvpmodel.conf")
    with open(conf) as f:
        saved = f.read()
    with open(conf, "a") as f:
        f.write("\n< POWER_MODEL ID=7 NAME=MODE_TPC_GATED >\nTPC_POWER_GATING TPC_PG_MASK 254\n"
                "CPU_A78_0 MAX_FREQ 1113600\n")
    try:
        before = touched_files(env.root)
        r = env.control("mode", "7", "--for", "10s")
        expect(r.returncode == 1, (r.returncode, r.stderr))
        expect("needs a reboot" in r.stderr and "never reboots" in r.stderr, r.stderr)
        expect(before == touched_files(env.root), diff(before, touched_files(env.root)))
    finally:
        with open(conf, "w") as f:
            f.write(saved)


def unknown_fan(env):
    r = env.control("fan", "50", "--fan", "nope", "--for", "10s")
    expect(r.returncode == 2, (r.returncode, r.stderr))
    expect("no fan 'nope' (fans: pwmfan)" in r.stderr, r.stderr)


def outside_group(env):
    """nobody without the group: refused (exit 77, saying who may); with it: served,
    and the change is logged with uid 65534."""
    r = env.control("state", user=["--clear-groups"])
    expect(r.returncode == 77, (r.returncode, r.stdout, r.stderr))
    expect("permission denied" in r.stderr and f"group {GROUP} may" in r.stderr, r.stderr)
    gid = str(grp_gid(GROUP))
    before = touched_files(env.root)
    r = env.control("fan", "100", "--for", "1s", user=["--groups=" + gid])
    expect(r.returncode == 0, (r.returncode, r.stderr))
    expect("fan all at 100%" in r.stdout, r.stdout)
    wait_for(lambda: touched_files(env.root) == before, "the fan lease expired and was restored")
    expect("granted to uid 65534 pid" in env.log(), env.log()[-2000:])


def grp_gid(name):
    import grp
    return grp.getgrnam(name).gr_gid


def disabled(env):
    cfg = os.path.join(env.tmp, "disabled.toml")
    with open(cfg, "w") as f:
        f.write("[daemon]\nlog_level = \"info\"\n")
    sock = os.path.join(env.tmp, "disabled.sock")
    r = subprocess.run([ARGS.control, "--config", cfg, "--root", env.root, "--listen",
                        "unix:" + sock], capture_output=True, text=True, timeout=30)
    expect(r.returncode == 2, (r.returncode, r.stderr))
    expect("control is disabled" in r.stderr and "enable = true" in r.stderr, r.stderr)
    expect(not os.path.exists(sock), "a disabled helper created its socket")
    r = env.edgemon("control", "--control", "unix:" + sock, "state")
    expect(r.returncode == 69 and "enable = true" in r.stderr, (r.returncode, r.stderr))


def client_killed(env):
    before = touched_files(env.root)
    p = subprocess.Popen([ARGS.edgemon, "control", "--control", env.target, "clocks", "lock"],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    expect("held" in line, line)
    expect(read(env, MIN0) == read(env, MAX0), "clocks not locked while held")
    p.kill()
    p.wait()
    wait_for(lambda: touched_files(env.root) == before, "the helper restored the clocks")
    # The log line follows the restore.
    wait_for(lambda: "its client went away; restored" in env.log(), "the end is logged")


def helper_killed(env):
    """The helper killed -9 holding two leases; its successor restores both."""
    before = touched_files(env.root)
    for args in (("mode", "1", "--for", "1h"), ("clocks", "lock", "--for", "1h")):
        r = env.control(*args)
        expect(r.returncode == 0, (args, r.stderr))
    expect(read(env, STATUS) == "pmode:0001", read(env, STATUS))
    expect(read(env, MIN0) == read(env, MAX0), "clocks not locked")
    env.helper.kill()
    env.helper.wait()
    time.sleep(0.3)
    expect(touched_files(env.root) != before, "nothing was changed before the kill")
    os.unlink(env.sock)  # a killed helper leaves its socket
    env.start_helper()
    after = touched_files(env.root)
    expect(after == before, f"not restored after the restart: {diff(before, after)}")
    expect(env.log().count("left by a previous run") == 2, env.log()[-2000:])


def malformed_state(env):
    """A state file that is garbage, or whose entries are: the helper starts,
    says so, restores nothing and serves."""
    stop_process(env.helper)
    state = os.path.join(env.root, "run/edgemon-control/state.json")
    before = touched_files(env.root)
    for text in ("{not json", json.dumps({"leases": [
            5, {"seq": "x", "id": "a", "plan": {"type": "writes", "writes": [{"path": 1}]}},
            {"seq": 1, "plan": {"type": "mode"}}]})):
        with open(state, "w") as f:
            f.write(text)
        env.start_helper()
        expect(env.helper.poll() is None, "the helper died on a bad state file")
        r = env.control("state")
        expect(r.returncode == 0, r.stderr)
        stop_process(env.helper)
    expect("is unreadable; nothing restored" in env.log(), env.log()[-2000:])
    expect("a lease entry is malformed" in env.log(), env.log()[-2000:])
    expect(touched_files(env.root) == before, diff(before, touched_files(env.root)))
    env.start_helper()


def counted_in_metrics(env):
    """edgemond's /metrics counts the helper's changes (from its state file),
    as `edgemon control state` does."""
    import urllib.request
    state = env.control("state")
    expect(state.returncode == 0, state.stderr)
    changes = int(state.stdout.split("changes")[1].split()[0])
    expect(changes >= 1, state.stdout)
    with urllib.request.urlopen(f"http://127.0.0.1:{env.metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    lines = {l.split()[0]: l.split()[1] for l in text.splitlines()
             if l.startswith("edgemon_control_")}
    expect(lines.get("edgemon_control_changes_total") == str(changes), lines)
    expect(lines.get("edgemon_control_leases") == "0", lines)


def two_clients(env):
    first = subprocess.Popen([ARGS.edgemon, "control", "--control", env.target, "mode", "1"],
                             stdout=subprocess.PIPE, text=True)
    line = first.stdout.readline()
    expect("held" in line, line)
    r = env.control("mode", "3", "--for", "10s")
    expect(r.returncode == 1, (r.returncode, r.stderr))
    expect("the power mode is held by lease" in r.stderr and f"pid {first.pid}" in r.stderr,
           r.stderr)
    expect(read(env, STATUS) == "pmode:0001", read(env, STATUS))
    first.send_signal(signal.SIGINT)
    out, _ = first.communicate(timeout=30)
    expect(first.returncode == 0 and "restored" in out, (first.returncode, out))
    expect(read(env, STATUS) == "pmode:0002", read(env, STATUS))


def kernel_refuses(env, with_tool):
    """A devfreq write the kernel refuses: the request fails, saying so, and
    every other file is as before. For jetson_clocks (the board's tool, which
    follows links) the file is a link to a read-only sysctl (EACCES); for the
    helper's own writes, which never follow a link at a value file, it is an
    immutable file (EPERM, chattr +i)."""
    tool = os.path.join(env.root, "usr/bin/jetson_clocks")
    aside = tool + ".aside"
    if not with_tool:
        os.rename(tool, aside)
    target = glob.glob(os.path.join(env.root, "sys/devices/platform/*/devfreq/*/min_freq"))[0]
    saved = target + ".saved"
    if with_tool:
        os.rename(target, saved)
        os.symlink("/proc/sys/kernel/cap_last_cap", target)
    else:
        shutil.copy(target, saved)
        r = subprocess.run(["chattr", "+i", target], capture_output=True, text=True)
        expect(r.returncode == 0, f"chattr +i (needed to make the kernel refuse a write): {r.stderr}")
    try:
        before = touched_files(env.root)
        r = env.control("clocks", "lock", "--for", "10s")
        expect(r.returncode == 1, (r.returncode, r.stdout, r.stderr))
        expect("ABORTED" in r.stderr, r.stderr)
        if with_tool:
            expect("jetson_clocks" in r.stderr and "Permission denied" in r.stderr, r.stderr)
        else:
            expect("was refused: Operation not permitted" in r.stderr and "rolled back" in r.stderr,
                   r.stderr)
        after = touched_files(env.root)
        expect(after == before, f"half-applied: {diff(before, after)}")
        s = env.control("state")
        held = [l for l in s.stdout.splitlines() if l.startswith("lease ")]
        expect("clocks      not locked" in s.stdout and not held, s.stdout)
    finally:
        if not with_tool:
            subprocess.run(["chattr", "-i", target], check=False)
        os.unlink(target)
        os.rename(saved, target)
        if not with_tool:
            os.rename(aside, tool)


def run(env_class, checks_to_run):
    """Parses the arguments, prepares the board (env_class(tmp)), runs each
    (name, fn, *args) of checks_to_run as fn(env, *args), and returns the exit
    status: 0, 1 when a check failed, SKIP without root or setpriv."""
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("--control", "--edgemon", "--edgemond", "--sim", "--fixtures"):
        ap.add_argument(a, required=True)
    ARGS = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("SKIP: needs root and setpriv")
        return SKIP
    if subprocess.run(["getent", "group", GROUP], capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "--system", GROUP], check=True)
    tmp = tempfile.mkdtemp(prefix="edgemon-control-")
    os.chmod(tmp, 0o755)  # nobody reaches the socket through it
    # The binaries where nobody can run them, wherever the build tree sits.
    for name in ("edgemon",):
        dst = os.path.join(tmp, name)
        shutil.copy(getattr(ARGS, name), dst)
        os.chmod(dst, 0o755)
        setattr(ARGS, name, dst)
    env = env_class(tmp)
    checks = Checks()
    try:
        for name, fn, *args in checks_to_run:
            checks.run(name, fn, env, *args)
    finally:
        env.stop()
    if checks.failed:
        print("helper log:\n" + env.log()[-4000:])
    print(f"{checks.passed} passed, {len(checks.failed)} failed: {checks.failed}")
    if not checks.failed:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if checks.failed else 0


def main():
    fns = (record_locked, record_failing_command, record_interrupted, record_refused,
           unknown_mode, reboot_mode, unknown_fan, outside_group, disabled, client_killed,
           helper_killed, malformed_state, two_clients, counted_in_metrics)
    return run(Env, [(fn.__name__, fn) for fn in fns] +
               [("kernel_refuses_direct", kernel_refuses, False),
                ("kernel_refuses_jetson_clocks", kernel_refuses, True)])


if __name__ == "__main__":
    sys.exit(main())
