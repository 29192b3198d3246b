#!/usr/bin/python3
"""edgetop in a real terminal: tmux runs edgetop against edgemond on a
simulated AGX Orin (edgemon-sim). capture-pane checks that rails,
temperatures and CPU bars show the values the sensors give (read at the same
time by edgemon-probe on the same simulated tree), that a resize to 80x24
keeps the layout, that help opens, that the screen says when the daemon is
gone and reconnects when it is back, that NO_COLOR and --ascii give a
monochrome ASCII screen (and colours otherwise), and that q, SIGTERM and a crash
(SIGSEGV) all leave the terminal restored (alternate screen left, cursor
visible, exit status as expected).

  edgetop_e2e.py --edgetop build/tui/edgetop --edgemond build/daemon/edgemond \
      --sim build/daemon/sim/edgemon-sim --probe build/daemon/edgemon-probe

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ARGS = None
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


class Tmux:
    def __init__(self, tmp):
        self.env = dict(os.environ, TMUX_TMPDIR=tmp)
        self.env.pop("TMUX", None)
        self.sock = f"edgetop-e2e-{os.getpid()}"

    def __call__(self, *args, check=True):
        r = subprocess.run([ARGS.tmux, "-L", self.sock, *args], env=self.env,
                           capture_output=True, text=True, timeout=20)
        if check and r.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def capture(self, target):
        return self("capture-pane", "-p", "-t", target).split("\n")

    def fmt(self, target, f):
        return self("display-message", "-p", "-t", target, f).strip()

    def wait_for(self, target, pred, timeout=15, what=""):
        deadline = time.time() + timeout
        lines = []
        while time.time() < deadline:
            lines = self.capture(target)
            if pred(lines):
                return lines
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}:\n" + "\n".join(lines))

    def kill(self):
        self("kill-server", check=False)


class Daemon:
    def __init__(self, tmp, root):
        self.tmp = tmp
        self.root = root
        self.sock = os.path.join(tmp, "edgemond.sock")
        self.proc = None

    def start(self):
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.log = open(os.path.join(self.tmp, "edgemond.log"), "a")
        self.proc = subprocess.Popen(
            [ARGS.edgemond, "--root", self.root, "--db", os.path.join(self.tmp, "d.db"),
             "--listen", "unix:" + self.sock, "--interval-ms", "200"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 15
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("edgemond did not start; see edgemond.log")
            time.sleep(0.05)

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=25)
        self.log.close()


def probe(root):
    out = subprocess.run([ARGS.probe, "--root", root, "--json", "--warmup-ms", "500"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return json.loads(out)["values"]


def watts(mw):
    w = mw / 1000.0
    return w


def cells_after(line, label):
    """Whitespace tokens after `label`'s bar ("]") or after the label."""
    rest = line[line.index(label) + len(label):]
    if "]" in rest[:40]:
        rest = rest[rest.index("]") + 1:]
    return rest.split()


def check_values(tmux, target, root):
    """Rails, temperatures and CPU bars against edgemon-probe on the same tree."""
    lines = tmux.wait_for(target, lambda ls: any("VDD_GPU_SOC" in l for l in ls)
                          and "connected" in ls[0], what="rails on screen")
    time.sleep(1.2)  # one more refresh so the screen and the probe are close in time
    values = probe(root)
    lines = tmux.capture(target)
    text = "\n".join(lines)
    with open(os.path.join(FIXTURES, "expected", "agx-orin.json")) as f:
        expected = json.load(f)
    expect(expected["board"]["hostname"] in lines[0], f"hostname not in header: {lines[0]}")
    expect("L4T " + expected["board"]["l4t"] in lines[1], f"L4T not in header: {lines[1]}")
    rails = sorted({k.split("/")[1] for k in expected["values"] if k.startswith("rail/")
                    and k.endswith("/power")})
    expect(len(rails) >= 3, f"fixture rails: {rails}")
    for rail in rails:
        line = next((l for l in lines if re.search(rf"\b{rail}\b", l)), None)
        expect(line is not None, f"rail {rail} not on screen:\n{text}")
        now = float(cells_after(line, rail)[0])
        ref = watts(values[f"rail/{rail}/power"])
        expect(abs(now - ref) <= 0.05 * ref + 0.02,
               f"{rail}: edgetop {now} W, probe {ref:.3f} W\n{line}")
    temps = [k for k in values if k.startswith("thermal/") and values[k] is not None]
    expect(temps, "no temperatures from the probe")
    compared = 0
    for key in temps:
        name = key.split("/")[1]
        line = next((l for l in lines if re.search(rf"\b{re.escape(name)}\s", l)), None)
        if line is None:
            continue  # the 80x24 overview may clip the last zones
        compared += 1
        m = re.search(rf"{re.escape(name)}\s+(-?[0-9.]+)\S*C", line)
        expect(m, f"{name}: no value in {line!r}")
        expect(abs(float(m.group(1)) - values[key] / 1000.0) <= 0.6,
               f"{name}: edgetop {m.group(1)}, probe {values[key] / 1000.0}")
    expect(compared >= len(temps) - 2, f"only {compared} of {len(temps)} temperatures compared")
    gated = [k for k in expected["absent"] if k.startswith("thermal/")]
    for key in gated:
        name = key.split("/")[1]
        m = re.search(rf"{re.escape(name)}\s+(\S+)", text)
        expect(m and m.group(1) == "-", f"{name} is gated but shows {m and m.group(1)}")
    cores = sorted(int(k.split("/")[1][3:]) for k in values
                   if re.fullmatch(r"cpu/cpu\d+/online", k) and values[k] == 1)
    freq_ok = 0
    for n in cores:
        label = f"CPU{n} "
        line = next((l for l in lines if label in l), None)
        expect(line is not None, f"no bar for {label}:\n{text}")
        pct, mhz = cells_after(line, label)[:2]
        load = values.get(f"cpu/cpu{n}/load")
        if load is not None:
            expect(abs(int(pct.rstrip("%")) - load / 10.0) <= 12,
                   f"cpu{n}: edgetop {pct}, probe {load / 10.0}%")
        ref_mhz = (values[f"cpu/cpu{n}/freq"] + 500) // 1000
        freq_ok += mhz == f"{ref_mhz}MHz"
    expect(freq_ok >= len(cores) - 2, f"only {freq_ok} of {len(cores)} CPU frequencies match")
    return lines


def check_layout_80x24(tmux, target):
    tmux("resize-window", "-t", target, "-x", "80", "-y", "24")
    lines = tmux.wait_for(target, lambda ls: len([l for l in ls if l]) > 0 and
                          all(len(l) <= 80 for l in ls) and "Rail (W)" in "\n".join(ls)
                          and len(ls[0].rstrip()) <= 80 and ls[0].rstrip().endswith("connected"),
                          what="an 80x24 layout")
    expect(len(lines) == 24 or (len(lines) == 25 and lines[-1] == ""), f"{len(lines)} lines")
    expect(all(len(l) <= 80 for l in lines), "a line is longer than 80")
    expect(lines[0].startswith(" edgetop"), f"header: {lines[0]}")
    expect("1 Overview" in lines[2] and "q quit" in lines[2], f"tabs: {lines[2]}")
    # The lower block: rails at column 1, temperatures at column 41, same row.
    row = next(i for i, l in enumerate(lines) if "Rail (W)" in l)
    expect(lines[row].index("Rail (W)") == 1 and lines[row].find("Temperature") == 41,
           f"rails/temperatures columns: {lines[row]!r}")
    expect(any("CPU11 " in l for l in lines), "CPU11 missing at 80x24")
    expect(any(l.lstrip().startswith("Total ") for l in lines), "total power missing at 80x24")


def check_help(tmux, target):
    tmux("send-keys", "-t", target, "h")
    tmux.wait_for(target, lambda ls: any("edgetop keys" in l for l in ls), what="help")
    tmux("send-keys", "-t", target, "Escape")
    tmux.wait_for(target, lambda ls: any("Rail (W)" in l for l in ls), what="help closed")
    tmux("send-keys", "-t", target, "2")
    tmux.wait_for(target, lambda ls: any("PID" in l and "COMMAND" in l for l in ls[3:5]),
                  what="process page")
    tmux("send-keys", "-t", target, "1")


def check_diagnostics(tmux, target):
    """The Power page's diagnostics: the simulator's over-current burst on the
    AGX Orin fixture's oc3 (27, + 2 per burst) and the rails' headroom."""
    tmux("send-keys", "-t", target, "3")
    pat = re.compile(r"^\s+oc3 (\d+) events")
    lines = tmux.wait_for(target, lambda ls: any((m := pat.match(l)) and int(m.group(1)) >= 29
                                                 for l in ls), what="oc3 after a burst")
    expect(any(l.strip() == "Diagnostics" for l in lines), "no Diagnostics title")
    expect(any(re.search(r"VDD_GPU_SOC current [0-9.]+ A +\d+% of max 12.000 A +\d+% of crit "
                         r"16.000 A", l) for l in lines), "no headroom row for VDD_GPU_SOC")
    tmux("send-keys", "-t", target, "1")
    tmux.wait_for(target, lambda ls: any("Rail (W)" in l for l in ls), what="overview again")


def check_reconnect(tmux, target, daemon):
    daemon.kill(signal.SIGKILL)
    lines = tmux.wait_for(target, lambda ls: "DISCONNECTED" in ls[0], what="DISCONNECTED")
    expect("unreachable" in lines[1], f"reason line: {lines[1]}")
    expect(any("VDD_GPU_SOC" in l for l in lines), "last values should stay on screen")
    time.sleep(6)  # a long outage: every backoff has grown to its maximum
    daemon.start()  # returns once the socket is there
    t0 = time.monotonic()
    tmux.wait_for(target, lambda ls: ls[0].rstrip().endswith("connected") and
                  "DISCONNECTED" not in ls[0] and "L4T" in ls[1], timeout=20,
                  what="reconnected")
    took = time.monotonic() - t0
    print(f"    reconnected {took:.2f} s after the daemon was back")
    expect(took <= 2.0, f"reconnecting took {took:.2f} s; the README promises at most 2 s")


def start_edgetop(tmux, name, sock, x, y, env="", flags=""):
    cmd = (f"env LANG=C.UTF-8 TERM=screen-256color {env} {ARGS.edgetop} --connect unix:{sock} "
           f"--interval 500ms {flags}; echo EDGETOP_EXIT=$?; exec sleep 600")
    tmux("new-session", "-d", "-s", name, "-x", str(x), "-y", str(y), cmd)
    tmux.wait_for(name, lambda ls: ls and ls[0].startswith(" edgetop"), what="edgetop started")
    expect(tmux.fmt(name, "#{alternate_on}") == "1", "edgetop should use the alternate screen")


def edgetop_pid(tmux, name):
    shell = tmux.fmt(name, "#{pane_pid}")
    out = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
    expect(out, "edgetop's pid not found")
    return int(out[0])


def check_restored(tmux, name, status):
    lines = tmux.wait_for(name, lambda ls: any("EDGETOP_EXIT=" in l for l in ls),
                          what="edgetop exit")
    exit_line = next(l for l in lines if "EDGETOP_EXIT=" in l)
    expect(exit_line.strip() == f"EDGETOP_EXIT={status}", f"{exit_line!r}, want {status}")
    expect(tmux.fmt(name, "#{alternate_on}") == "0", "still on the alternate screen")
    expect(tmux.fmt(name, "#{cursor_flag}") == "1", "cursor left hidden")
    expect(not any("Rail (W)" in l for l in lines), "edgetop's screen left behind")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgetop", required=True)
    ap.add_argument("--edgemond", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--tmux", default=shutil.which("tmux") or "tmux")
    ap.add_argument("--keep", action="store_true")
    ARGS = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="edgetop-e2e-")
    root = os.path.join(tmp, "board")
    # A long period: values move slowly, so the probe and the screen agree.
    sim = subprocess.Popen([ARGS.sim, "--board", "agx-orin", "--out", root, "--rate-hz", "10",
                            "--period-s", "3600", "-q"])
    tmux = Tmux(tmp)
    daemon = Daemon(tmp, root)
    passed, failed = 0, []

    def run(name, fn, *a):
        nonlocal passed
        try:
            fn(*a)
            passed += 1
            print(f"PASS {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed.append(name)
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            if not isinstance(e, AssertionError):
                traceback.print_exc(limit=3)

    try:
        deadline = time.time() + 15
        while not os.path.exists(os.path.join(root, ".edgemon-sim.json")):
            if sim.poll() is not None or time.time() > deadline:
                raise RuntimeError("edgemon-sim did not start")
            time.sleep(0.05)
        daemon.start()
        start_edgetop(tmux, "main", daemon.sock, 120, 40)
        run("values_120x40", check_values, tmux, "main", root)
        run("diagnostics_120x40", check_diagnostics, tmux, "main")
        run("layout_80x24", check_layout_80x24, tmux, "main")
        run("values_80x24", check_values, tmux, "main", root)
        run("help_and_pages", check_help, tmux, "main")
        run("daemon_killed_and_back", check_reconnect, tmux, "main", daemon)
        run("values_after_reconnect", check_values, tmux, "main", root)

        def quit_with_q():
            tmux("send-keys", "-t", "main", "q")
            check_restored(tmux, "main", 0)
        run("q_restores_terminal", quit_with_q)

        def sigterm():
            start_edgetop(tmux, "term", daemon.sock, 80, 24)
            os.kill(edgetop_pid(tmux, "term"), signal.SIGTERM)
            check_restored(tmux, "term", 128 + signal.SIGTERM)
        run("sigterm_restores_terminal", sigterm)

        def crash():
            start_edgetop(tmux, "crash", daemon.sock, 80, 24)
            os.kill(edgetop_pid(tmux, "crash"), signal.SIGSEGV)
            check_restored(tmux, "crash", 128 + signal.SIGSEGV)
        run("crash_restores_terminal", crash)

        colour_sgr = re.compile(r"\x1b\[[0-9;]*(?:3[0-7]|38;5;[0-9]+|9[0-7])[;m]")

        def monochrome_and_ascii():
            start_edgetop(tmux, "mono", daemon.sock, 80, 24, env="NO_COLOR=1", flags="--ascii")
            tmux.wait_for("mono", lambda ls: any("VDD_GPU_SOC" in l for l in ls), what="data")
            raw = tmux("capture-pane", "-p", "-e", "-t", "mono")
            expect(not colour_sgr.search(raw), "colour escape sequences with NO_COLOR set")
            plain = tmux("capture-pane", "-p", "-t", "mono")
            expect(all(ord(c) < 128 for c in plain), "non-ASCII output with --ascii")
            expect(re.search(r"CPU0\s+\[\|*\s*\]", plain), "ASCII CPU bar missing")
            tmux("send-keys", "-t", "mono", "q")
            check_restored(tmux, "mono", 0)
            start_edgetop(tmux, "colour", daemon.sock, 80, 24)
            tmux.wait_for("colour", lambda ls: any("VDD_GPU_SOC" in l for l in ls), what="data")
            expect(colour_sgr.search(tmux("capture-pane", "-p", "-e", "-t", "colour")),
                   "no colours on a colour terminal")
            tmux("send-keys", "-t", "colour", "q")
            check_restored(tmux, "colour", 0)
        run("no_color_and_ascii", monochrome_and_ascii)

        def bad_flags():
            # A bare number is seconds (top -d): 5 is valid, 0.05 is below the
            # smallest refresh and refused with it, never clamped.
            r = subprocess.run([ARGS.edgetop, "-d", "0.05"], capture_output=True, text=True)
            expect(r.returncode != 0 and "below edgetop's smallest refresh of 100ms" in r.stderr,
                   r.stderr)
            r = subprocess.run([ARGS.edgetop, "--interval", "61"], capture_output=True, text=True)
            expect(r.returncode != 0 and "above the largest interval, 60s" in r.stderr, r.stderr)
            r = subprocess.run([ARGS.edgetop, "--connect", ""], capture_output=True, text=True)
            expect(r.returncode == 2 and r.stderr.startswith("edgetop: "), r.stderr)
            r = subprocess.run([ARGS.edgetop, "--connect", "unix:" + daemon.sock],
                               capture_output=True, text=True, stdin=subprocess.DEVNULL)
            expect(r.returncode == 1 and "terminal" in r.stderr and r.stderr.count("\n") == 1,
                   r.stderr)
        run("bad_flags_and_no_terminal", bad_flags)

        def no_daemon_reason_whole():
            # No daemon at the address: the whole reason and what to do next
            # show on an 80x24 screen, not cut at the edge.
            nowhere = os.path.join(tmp, "nothing.sock")
            start_edgetop(tmux, "gone", nowhere, 80, 24)
            lines = tmux.wait_for("gone", lambda ls: any("unreachable" in l for l in ls),
                                  what="the reason")
            text = " ".join(l.strip() for l in lines[1:8])
            for part in ("no socket there", "sudo systemctl start edgemond",
                         "EDGEMON_CONNECT", "retrying"):
                expect(part in text, f"{part!r} not on the screen:\n" + "\n".join(lines))
            tmux("send-keys", "-t", "gone", "q")
            check_restored(tmux, "gone", 0)
        run("no_daemon_reason_whole", no_daemon_reason_whole)
    finally:
        tmux.kill()
        daemon.kill(signal.SIGTERM)
        sim.terminate()
        sim.wait(timeout=10)
        if ARGS.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
