#!/usr/bin/python3
"""Attack: escape sequences in sysfs names, printed by edgemon on a terminal.

Whoever can name a thermal zone, an hwmon chip or a sensor label (a driver,
a device tree, an out-of-tree module, a container's bind-mounted /sys) once
reached the terminal of whoever ran `edgemon now`: an OSC sequence retitled
the window, a CSI cleared the screen. This copies a fixture board into a
scratch root, writes names with ESC, BEL, the C1 CSI (U+009B, "\\xc2\\x9b"
in UTF-8) and a 10 KB name into it, starts a real edgemond on that root,
runs the real `edgemon now`, `sensors`, `watch`, `query` (table, long and
downsampled), `tegrastats`, an error that echoes a hostile channel pattern,
and `edgemond --print`, and checks that no ESC, BEL or C1 CSI byte reaches
stdout or stderr while the escaped form ("\\x1b") does. JSON and CSV stay
data: their names are encoded (JSON \\u001b, CSV quoted), not rewritten.

It also checks two start-up refusals: --root on a missing directory (once
ran with 0 channels) and store.max_size one byte over 1 TiB, while exactly
"1TiB" (the documented maximum, once refused) is accepted.

  escape_attack.py --edgemond build/daemon/edgemond \\
      --edgemon build/client/cli/edgemon --fixtures tests/fixtures

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import Checks, expect, stop_process  # noqa: E402

ARGS = None
ESC, BEL, CSI = b"\x1b", b"\x07", b"\xc2\x9b"
TITLE = b"\x1b]0;pwned\x07\x1b[2J"  # retitle the window, then clear the screen
LONG_NAME = b"long\x1b[2J" + b"A" * 10_000


def write(path, data):
    if os.path.lexists(path):  # a copied file may be read-only
        os.remove(path)
    with open(path, "wb") as f:
        f.write(data + b"\n")


def hostile_root(tmp):
    """x86-laptop with hostile names in a thermal zone, an hwmon chip, an
    hwmon label, a RAPL domain and the DMI product name."""
    root = os.path.join(tmp, "root")
    shutil.copytree(os.path.join(ARGS.fixtures, "x86-laptop"), root, symlinks=True)
    sys_ = os.path.join(root, "sys", "devices")
    write(os.path.join(sys_, "virtual/thermal/thermal_zone1/type"), b"zone" + TITLE)
    nvme = os.path.join(sys_, "pci0000:00/0000:00:06.0/0000:04:00.0/nvme/nvme0/hwmon2")
    write(os.path.join(nvme, "name"), b"nv\xc2\x9b2Jme")
    coretemp = os.path.join(sys_, "platform/coretemp.0/hwmon/hwmon5")
    for label in sorted(f for f in os.listdir(coretemp) if f.endswith("_label"))[:1]:
        write(os.path.join(coretemp, label), b"Core\x1b[31m red")
    rapl = os.path.join(sys_, "virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0")
    if os.path.isdir(rapl):
        write(os.path.join(rapl, "name"), LONG_NAME)
    write(os.path.join(sys_, "virtual/dmi/id/product_name"), b"Think\x1b]0;owned\x07Pad")
    return root


def raw_bytes(out, what):
    """Fails when a control byte that drives a terminal is in `out`."""
    for bad, name in ((ESC, "ESC"), (BEL, "BEL"), (CSI, "C1 CSI")):
        i = out.find(bad)
        expect(i < 0, f"{what}: raw {name} at byte {i}: {out[max(0, i - 40):i + 40]!r}")


class Attack:
    def __init__(self, tmp):
        self.tmp = tmp
        self.root = hostile_root(tmp)
        self.sock = os.path.join(tmp, "d.sock")
        self.log_path = os.path.join(tmp, "d.log")
        self.log = open(self.log_path, "wb")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.proc = subprocess.Popen(
            [ARGS.edgemond, "--root", self.root, "--db", os.path.join(tmp, "d.db"),
             "--listen", "unix:" + self.sock, "--interval-ms", "100"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 20
        while True:  # up once `edgemon now` answers
            r = self.edgemon("now", check=False)
            if r.returncode == 0:
                break
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"edgemond did not answer:\n{self.output()}")
            time.sleep(0.1)

    def output(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read()[-4000:].decode(errors="replace")

    def stop(self):
        rc = stop_process(self.proc)
        self.log.close()
        return rc

    def edgemon(self, *args, check=True, timeout=60):
        r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + self.sock, *args],
                           capture_output=True, timeout=timeout)
        if check:
            expect(r.returncode == 0, f"edgemon {' '.join(args)}: exit {r.returncode}: "
                                      f"{r.stderr[-2000:]!r}")
        return r

    def terminal_text(self, what, *args, escaped=(b"\\x1b",)):
        r = self.edgemon(*args)
        out = r.stdout + r.stderr
        raw_bytes(out, what)
        for form in escaped:
            expect(form in out, f"{what}: no {form!r} in the output: {out[:3000]!r}")
        return out

    # 1. One snapshot: names, the board, labels; the C1 CSI shown as \u009b.
    def now(self):
        out = self.terminal_text("edgemon now", "now", escaped=(b"\\x1b]0;pwned\\x07\\x1b[2J",
                                                                b"\\u009b", b"Think\\x1b]0;owned"))
        expect(b"long\\x1b[2J" in out, "edgemon now: the 10 KB RAPL name is not shown escaped")

    # 2. The inventory: keys, devices, limits.
    def sensors(self):
        self.terminal_text("edgemon sensors", "sensors",
                           escaped=(b"zone\\x1b]0;pwned", b"\\u009b", b"Core\\x1b[31m red"))

    # 3. A line per frame, two frames.
    def watch(self):
        self.terminal_text("edgemon watch", "watch", "--count", "2",
                           escaped=(b"zone\\x1b]0;pwned",))
        self.terminal_text("edgemon watch --channels", "watch", "--count", "2",
                           "--channels", "thermal/*,rail/*")

    # 4. History: the wide table, the long table and the downsampled table.
    def query(self):
        time.sleep(0.5)  # a few stored frames
        self.terminal_text("edgemon query (wide)", "query", "--last", "1m",
                           "--channels", "thermal/*")
        self.terminal_text("edgemon query (long)", "query", "--last", "1m")
        self.terminal_text("edgemon query --step", "query", "--last", "1m", "--step", "1s")

    # 5. Data formats stay data: JSON encodes the bytes, CSV quotes nothing
    # away; the names round-trip exactly.
    def json_and_csv_stay_data(self):
        r = self.edgemon("sensors", "--json")
        names = {c["name"] for c in json.loads(r.stdout)["channels"]}
        expect(any(n.startswith("zone" + TITLE.decode()) for n in names),
               f"sensors --json lost the zone's exact name: {sorted(names)[:20]}")
        expect(ESC not in r.stdout, "sensors --json: a raw ESC (JSON must encode it as \\u001b)")
        r = self.edgemon("query", "--last", "1m", "--channels", "thermal/*", "--format", "csv")
        header = r.stdout.split(b"\n", 1)[0]
        expect(TITLE in header, f"query --format csv: the exact name is not in the header: "
                                f"{header[:300]!r}")

    # 6. tegrastats' own format (a word per name) was already safe: still is.
    def tegrastats(self):
        r = self.edgemon("tegrastats", "--count", "1", "--interval", "100")
        raw_bytes(r.stdout + r.stderr, "edgemon tegrastats")

    # 7. An error that echoes the user's pattern, and one that names the channel.
    def errors(self):
        pattern = "thermal/\x1b]0;pwned\x07\x1b[2J/temp"
        r = self.edgemon("now", "--channels", pattern, check=False)
        expect(r.returncode != 0, f"a pattern that matches nothing: exit {r.returncode}")
        raw_bytes(r.stdout + r.stderr, "edgemon now --channels <hostile>")
        expect(b"\\x1b]0;pwned" in r.stderr, f"the error does not echo it escaped: {r.stderr!r}")

    # 8. edgemond --print, the daemon's own line per frame.
    def daemon_print(self):
        tmp = os.path.join(self.tmp, "print")
        os.mkdir(tmp)
        p = subprocess.Popen([ARGS.edgemond, "--root", self.root, "--db",
                              os.path.join(tmp, "p.db"), "--listen",
                              "unix:" + os.path.join(tmp, "p.sock"), "--interval-ms", "100",
                              "--print"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lines = []
        try:
            while len(lines) < 2:
                line = p.stdout.readline()
                if not line:
                    break
                lines.append(line)
        finally:
            stop_process(p)
        out = b"".join(lines) + p.stdout.read() + p.stderr.read()
        expect(len(lines) >= 2, f"edgemond --print printed {len(lines)} lines: {out[-2000:]!r}")
        raw_bytes(out, "edgemond --print")
        expect(b"zone\\x1b]0;pwned" in out, f"edgemond --print: no escaped name: {out[:2000]!r}")

    def alive(self):
        expect(self.proc.poll() is None, f"edgemond exited:\n{self.output()}")


def start_refused(tmp, args, want):
    """edgemond with `args` exits non-zero at once, with `want` on stderr."""
    try:
        r = subprocess.run([ARGS.edgemond, "--db", os.path.join(tmp, "r.db"),
                            "--listen", "unix:" + os.path.join(tmp, "r.sock"), *args],
                           capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"edgemond {args}: started and ran instead of refusing") from None
    expect(r.returncode != 0, f"edgemond {args}: exit 0")
    expect(want in r.stderr, f"edgemond {args}: {r.stderr!r} does not say {want!r}")
    expect(len(r.stderr.strip().splitlines()) == 1, f"edgemond {args}: not one line: {r.stderr!r}")


def missing_root(tmp):
    missing = os.path.join(tmp, "no-such-root")
    start_refused(tmp, ["--root", missing], f"--root {missing}: no such directory")
    a_file = os.path.join(tmp, "a-file")
    open(a_file, "w").close()
    start_refused(tmp, ["--root", a_file], f"--root {a_file}: not a directory")


def max_size_1tib(tmp):
    root = os.path.join(ARGS.fixtures, "x86-laptop")
    over = os.path.join(tmp, "over.toml")
    with open(over, "w") as f:
        f.write('[store]\nmax_size = "1099511627777B"\n')
    start_refused(tmp, ["--config", over, "--root", root], "store.max_size")
    at = os.path.join(tmp, "at.toml")
    with open(at, "w") as f:
        f.write('[store]\nmax_size = "1TiB"\n')
    d = os.path.join(tmp, "tib")
    os.mkdir(d)
    sock = os.path.join(d, "t.sock")
    p = subprocess.Popen([ARGS.edgemond, "--config", at, "--root", root, "--db",
                          os.path.join(d, "t.db"), "--listen", "unix:" + sock],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    r = None
    try:
        deadline = time.time() + 20
        while p.poll() is None and time.time() < deadline:
            r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + sock, "sensors"],
                               capture_output=True, timeout=30)
            if r.returncode == 0:
                break
            time.sleep(0.1)
        alive = p.poll() is None
    finally:
        stop_process(p)
    expect(alive, f'max_size = "1TiB": edgemond exited {p.returncode}: {p.stderr.read()!r}')
    expect(r is not None and r.returncode == 0,
           f'max_size = "1TiB": edgemond did not answer: {r and r.stderr!r}')


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgemond", required=True)
    ap.add_argument("--edgemon", required=True)
    ap.add_argument("--fixtures", required=True)
    ARGS = ap.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="edgemon-escape-") as tmp:
        attack = None
        try:
            attack = Attack(tmp)
            for name in ("now", "sensors", "watch", "query", "json_and_csv_stay_data",
                         "tegrastats", "errors", "daemon_print", "alive"):
                checks.run(name, getattr(attack, name))
        except Exception as e:  # noqa: BLE001 - the daemon did not start
            checks.failed.append("start")
            print(f"FAIL start: {e}", flush=True)
        finally:
            if attack is not None:
                attack.stop()
        checks.run("missing_root", missing_root, tmp)
        checks.run("max_size_1tib", max_size_1tib, tmp)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
