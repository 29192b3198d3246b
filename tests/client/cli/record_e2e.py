#!/usr/bin/python3
"""End-to-end test of `edgemon record`, `edgemon attach` and `edgemon mark`.

Starts edgemon-sim (a simulated Jetson whose rail power follows analytic
sines, written to a JSON sidecar) and edgemond on a unix socket in a temp
directory, for two boards: agx-orin (no board input rail) and orin-nano
(VDD_IN with sub-rails). Then runs the real edgemon binary and checks its
output against the simulator's analytic energy, not against itself:

  * each rail's energy over the window is within 1 % of the exact integral;
  * the window's edges are within one rail sampling period of the command's
    own start and exit stamps;
  * trace.json is valid JSON with one counter track per rail whose values
    follow the analytic power, and trace.perfetto-trace, decoded with protoc
    against proto/perfetto/trace.proto, holds the same values on REALTIME;
  * --nvtx: a C program's NVTX ranges with counts, times and energies;
  * exit codes: 7 propagated, 127 not found, 126 not executable, 128+signal,
    2 for unknown flags, 69 (and the command not run) without a daemon;
  * marks from inside the command show up as phases with their own energy;
  * --items N and --items-from REGEX give energy per item;
  * attach --window gives the record's energies again;
  * edgemond killed and restarted mid-recording: the stored data is still
    summarized, with a note;
  * runs, compare and the MLPerf energy report (runs_checks.py).

  record_e2e.py --edgemon build/client/cli/edgemon --edgemond build/daemon/edgemond \
      --sim build/daemon/sim/edgemon-sim --fixtures tests/fixtures

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from harness import Checks, analytic_energy_mj, expect, start_sim, stop_process, wait_until  # noqa: E402 (shared by the e2e scripts)
import runs_checks  # noqa: E402 (runs, compare, the MLPerf energy report)

ARGS = None
INTERVAL_MS = 100      # edgemond frame period
ENERGY_RATE_HZ = 50    # edgemond rail integration rate: the sample period is 20 ms
SIM_RATE_HZ = 200      # simulator value updates


class Board:
    """edgemon-sim + edgemond for one fixture board."""

    def __init__(self, tmp, board, tcp=False):
        self.tmp = os.path.join(tmp, board)
        os.makedirs(self.tmp)
        self.root = os.path.join(self.tmp, "root")
        self.sock = os.path.join(self.tmp, "edgemond.sock")
        self.target = "unix:" + self.sock
        if tcp:  # a "remote" board: plain TCP on loopback, as from another host
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
            self.target = f"127.0.0.1:{self.port}"
        self.db = os.path.join(self.tmp, "store.db")
        self.sim_log = open(os.path.join(self.tmp, "sim.log"), "w")
        self.sim, self.sidecar = start_sim(ARGS.sim, board, self.root, ARGS.fixtures,
                                           self.sim_log, ["--rate-hz", str(SIM_RATE_HZ)])
        self.daemon = None
        self.start_daemon()

    def start_daemon(self):
        self.log = open(os.path.join(self.tmp, "edgemond.log"), "a")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.daemon = subprocess.Popen(
            [ARGS.edgemond, "--root", self.root, "--db", self.db, "--listen", self.target,
             "--interval-ms", str(INTERVAL_MS), "--energy-rate-hz", str(ENERGY_RATE_HZ)],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 15
        while not self.listening():
            if self.daemon.poll() is not None or time.time() > deadline:
                raise RuntimeError("edgemond does not listen:\n" + self.daemon_log())
            time.sleep(0.02)
        time.sleep(0.5)  # a few frames before anything is measured

    def listening(self):
        if self.target.startswith("unix:"):
            return os.path.exists(self.sock)
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def kill_daemon(self):
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        self.log.close()
        try:
            os.unlink(self.sock)
        except FileNotFoundError:
            pass

    def daemon_log(self):
        with open(os.path.join(self.tmp, "edgemond.log")) as f:
            return f.read()[-3000:]

    def stop(self):
        for p in (self.daemon, self.sim):
            stop_process(p)

    # The simulator's truth (daemon/sim/waveform.h).
    def t(self, realtime_ns):
        return (realtime_ns - self.sidecar["start_realtime_ns"]) / 1e9

    def energy_mj(self, rail, from_ns, to_ns):
        return analytic_energy_mj(self.sidecar, rail, from_ns, to_ns)

    def power_mw(self, rail, realtime_ns):
        p = self.sidecar["rails"][rail]
        w = 2 * math.pi / self.sidecar["period_s"]
        return p["base_mw"] * (1 + p["amplitude"] * math.sin(w * self.t(realtime_ns) + p["phase"]))

    def edgemon(self, *args, env=None, timeout=60):
        e = dict(os.environ)
        e["PATH"] = os.path.dirname(ARGS.edgemon) + ":" + e.get("PATH", "/usr/bin:/bin")
        if env:
            e.update(env)
        return subprocess.run([ARGS.edgemon, "--connect", self.target, *args],
                              capture_output=True, text=True, timeout=timeout, env=e,
                              cwd=self.tmp)


def load(path):
    with open(path) as f:
        return json.load(f)


def check_rail_energies(board, summary, tolerance=0.01):
    rails = {r["name"]: r for r in summary["rails"]}
    want = set(board.sidecar["rails"])
    expect(set(rails) == want, f"rails {sorted(rails)}, simulator has {sorted(want)}")
    lines = []
    for name in sorted(want):
        truth = board.energy_mj(name, summary["range"]["from_ns"], summary["range"]["to_ns"])
        got = rails[name]["energy_j"] * 1000
        err = (got - truth) / truth if truth else 0
        lines.append(f"{name} {got:.1f} mJ vs {truth:.1f} ({err * 100:+.3f} %)")
        expect(abs(got - truth) <= tolerance * truth + 2,
               f"{name}: {got:.1f} mJ, analytic {truth:.1f} mJ ({err * 100:+.2f} %)")
    print("    " + "; ".join(lines))


# ---- The checks ----

def record_sleep(board):
    """record -- sleep 3: energies vs the analytic integral, edges vs the command's stamps."""
    out = os.path.join(board.tmp, "sleep3")
    stamps = os.path.join(board.tmp, "stamps")
    before = time.time_ns()
    r = board.edgemon("record", "--out", out, "--", "sh", "-c",
                      f"date +%s%N > {stamps}.start; sleep 3; date +%s%N > {stamps}.end")
    after = time.time_ns()
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    s = load(os.path.join(out, "summary.json"))
    check_rail_energies(board, s)
    record_perfetto(board, out, s)
    w = s["window"]
    with open(stamps + ".start") as f:
        cmd_start = int(f.read())
    with open(stamps + ".end") as f:
        cmd_end = int(f.read())
    period_ns = 1e9 / ENERGY_RATE_HZ
    print(f"    window start {(w['start_ns'] - cmd_start) / 1e6:+.2f} ms from the command's start,"
          f" end {(w['end_ns'] - cmd_end) / 1e6:+.2f} ms from its exit")
    expect(before <= w["start_ns"] <= cmd_start, "window starts after the command's first stamp")
    expect(cmd_end <= w["end_ns"] <= after, "window ends before the command's last stamp")
    expect(cmd_start - w["start_ns"] <= period_ns,
           f"start {(cmd_start - w['start_ns']) / 1e6:.1f} ms before the command, over one period")
    expect(w["end_ns"] - cmd_end <= period_ns,
           f"end {(w['end_ns'] - cmd_end) / 1e6:.1f} ms after the command, over one period")
    expect(3.0 <= s["run"]["duration_s"] < 3.0 + 2 * period_ns / 1e9 + 0.2, s["run"])
    expect(s["exit_code"] == 0 and s["samples"] >= 25, f"samples {s['samples']}")
    # The summary on stderr: the tree and the total (or the lack of one).
    if any(r["input"] for r in s["rails"]):
        expect(s["total_energy_j"] == next(x for x in s["rails"] if x["input"])["energy_j"],
               "total is not the input rail's energy")
        expect("other (VDD_IN - sub-rails)" in r.stderr, r.stderr)
        rest = [x for x in s["rail_tree"] if x["remainder"]][0]["energy_j"]
        subs = sum(x["energy_j"] for x in s["rails"] if x["parent"] == "VDD_IN")
        expect(abs(rest - (s["total_energy_j"] - subs)) < 1e-9, "remainder != input - sub-rails")
    else:
        expect(s["total_energy_j"] is None, "a total without an input rail")
        expect("not a total" in r.stderr, r.stderr)
    board.last_record = s

    # trace.json: valid, one counter track per rail, values on the analytic power.
    trace = load(os.path.join(out, "trace.json"))
    tracks = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "C" and e["pid"] == 1:
            tracks.setdefault(e["name"], []).append(e)
    expect(sorted(tracks) == sorted(x["name"] for x in s["rails"]),
           f"counter tracks {sorted(tracks)}")
    worst = 0
    for name, events in tracks.items():
        expect(len(events) >= 25, f"{name}: {len(events)} counter events")
        for e in events:
            truth = board.power_mw(name, int(e["ts"] * 1000)) / 1000
            worst = max(worst, abs(e["args"]["W"] - truth) / truth)
    print(f"    trace: {len(tracks)} rail tracks, worst deviation from P(t) {worst * 100:.2f} %")
    # Units (W, not mW) and time base (us since the epoch): a sample-time skew
    # under load moves a value by a few per cent at most.
    expect(worst < 0.05, f"a counter value {worst * 100:.1f} % off the analytic power")
    run = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 4]
    expect(len(run) == 1 and abs(run[0]["dur"] - s["run"]["duration_s"] * 1e6) < 1, run)
    # samples.csv: a row per frame in the range, a column per rail power.
    with open(os.path.join(out, "samples.csv")) as f:
        rows = f.read().splitlines()
    expect(len(rows) - 1 == s["samples"], f"{len(rows) - 1} CSV rows, {s['samples']} samples")
    for name in tracks:
        expect(f"rail/{name}/power[mW]" in rows[0].split(","), f"no column for {name}")


def decode_perfetto(path):
    """protoc --decode of a bundle's native Perfetto trace with the project's
    subset, as one dict per packet of the fields the checks read."""
    with open(path, "rb") as f:
        r = subprocess.run([ARGS.protoc, "--proto_path=" + ARGS.proto_dir,
                            "--decode=perfetto.protos.Trace",
                            os.path.join(ARGS.proto_dir, "perfetto", "trace.proto")],
                           stdin=f, capture_output=True, text=True, timeout=60)
    expect(r.returncode == 0, f"protoc --decode: {r.stderr}")
    packets = []
    for block in r.stdout.split("packet {")[1:]:
        block = re.sub(r"debug_annotations \{[^}]*\}", "", block)  # their names are not the event's
        p = {}
        for key in ("timestamp", "timestamp_clock_id", "track_uuid", "uuid", "parent_uuid"):
            m = re.search(r"(?<![a-z_])%s: (\d+)" % key, block)
            if m:
                p[key] = int(m.group(1))
        for key in ("name", "type"):
            m = re.search(r"(?<![a-z_])%s: \"?([^\"\n]*)" % key, block)
            if m:
                p[key] = m.group(1)
        m = re.search(r"double_counter_value: ([-0-9.e+]+)", block)
        if m:
            p["value"] = float(m.group(1))
        p["clocks"] = [(int(a), int(b)) for a, b in
                       re.findall(r"clock_id: (\d+)\s*timestamp: (\d+)", block)]
        p["descriptor"] = "track_descriptor {" in block
        p["counter"] = "counter {" in block
        packets.append(p)
    return packets


def record_perfetto(board, out, s):
    """trace.perfetto-trace: a REALTIME/BOOTTIME clock snapshot, every event on
    REALTIME, a counter track per rail whose values are trace.json's, the run."""
    packets = decode_perfetto(os.path.join(out, "trace.perfetto-trace"))
    clocks = dict(packets[0]["clocks"])
    expect(set(clocks) == {1, 6}, f"clock snapshot {packets[0]}")
    expect(abs(clocks[1] - time.time_ns()) < 600e9, "the snapshot's realtime is not now")
    events = [p for p in packets if "type" in p]
    expect(events and all(p.get("timestamp_clock_id") == 1 and
                          s["range"]["from_ns"] <= p["timestamp"] <= s["range"]["to_ns"]
                          for p in events), "an event outside the range or not on REALTIME")
    tracks = {p["uuid"]: p["name"] for p in packets
              if p["descriptor"] and p["counter"] and p.get("parent_uuid") == 1}
    expect(sorted(tracks.values()) == sorted(x["name"] for x in s["rails"]), tracks)
    trace = load(os.path.join(out, "trace.json"))
    want = {(e["name"], round(e["ts"])): e["args"]["W"] for e in trace["traceEvents"]
            if e["ph"] == "C" and e["pid"] == 1}
    got = {(tracks[p["track_uuid"]], round(p["timestamp"] / 1000)): p["value"] for p in events
           if p["type"] == "TYPE_COUNTER" and p["track_uuid"] in tracks}
    expect(set(got) == set(want) and all(abs(got[k] - want[k]) < 0.001 for k in want),
           f"counter values: {len(got)} in Perfetto's, {len(want)} in trace.json")
    expect(any(p["type"] == "TYPE_SLICE_BEGIN" and p.get("name") == s["label"] for p in events),
           "no run slice")
    # perfetto_manifest.json: version 1, the REALTIME timeline, the bundle's own trace.
    manifest = load(os.path.join(out, "perfetto_manifest.json"))["perfetto_manifest"]
    expect(manifest["version"] == 1 and manifest["trace_time_clock"] == "REALTIME", manifest)
    expect([f["path"] for f in manifest["files"]] == ["trace.perfetto-trace"], manifest)
    print(f"    trace.perfetto-trace: {len(events)} events on REALTIME, {len(tracks)} rail tracks")


def record_events(board):
    """An over-current counter raised during the run (the fixture's oc1, which
    the simulator leaves alone, by 5) is the run's note on events."""
    hwmon = os.path.join(board.root, "sys", "class", "hwmon")
    oc = next(os.path.join(hwmon, h) for h in sorted(os.listdir(hwmon))
              if open(os.path.join(hwmon, h, "name")).read().strip() == "soctherm_oc")
    path = os.path.join(oc, "oc1_event_cnt")
    base = int(open(path).read())
    out = os.path.join(board.tmp, "events")
    r = board.edgemon("record", "--out", out, "--", "sh", "-c",
                      f"sleep 1.2; echo {base + 5} > {path}; sleep 1.5")
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    notes = [n for n in load(os.path.join(out, "summary.json"))["notes"]
             if "over-current event" in n]
    expect(len(notes) == 1, f"no note on over-current events: {r.stderr}")
    m = re.match(r"(\d+) over-current events \(([^)]*)\)", notes[0])
    expect(m and "oc1" in m.group(2).split(", ") and int(m.group(1)) >= 5, notes[0])
    expect(notes[0].endswith("during this run") and "Note: " + notes[0] in r.stderr, r.stderr)
    html = open(os.path.join(out, "report.html")).read()
    expect("over-current event" in html, "report.html lacks the events note")


def attach_window(board):
    """attach --window ID (and the same range by time) gives the record's energies."""
    s = board.last_record
    r = board.edgemon("attach", "--window", str(s["window"]["id"]), "--json",
                      "--out", os.path.join(board.tmp, "attach"))
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    a = json.loads(r.stdout)
    want = {x["name"]: x["energy_j"] for x in s["rails"]}
    got = {x["name"]: x["energy_j"] for x in a["rails"]}
    expect(set(got) == set(want), f"{got} vs {want}")
    for k in want:
        expect(abs(got[k] - want[k]) <= 1e-9 * max(1, want[k]), f"{k}: {got[k]} vs {want[k]}")
    expect(os.path.exists(os.path.join(board.tmp, "attach", "trace.json")), "no attach bundle")
    w = s["window"]
    r = board.edgemon("attach", "--from", f"@{w['start_ns'] // 10**9}.{w['start_ns'] % 10**9:09d}",
                      "--to", f"@{w['end_ns'] // 10**9}.{w['end_ns'] % 10**9:09d}", "--json")
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    t = json.loads(r.stdout)
    for x in t["rails"]:
        expect(abs(x["energy_j"] - want[x["name"]]) <= 1e-9 * max(1, want[x["name"]]),
               f"--from/--to {x['name']}: {x['energy_j']} vs {want[x['name']]}")
    r = board.edgemon("attach", "--last", "2s")
    expect(r.returncode == 0 and "Energy" in r.stdout, f"--last: {r.returncode} {r.stderr}")
    # A range reaching now has its energy (live counters past the newest frame).
    r = board.edgemon("attach", "--last", "2s", "--json")
    expect(r.returncode == 0, f"--last --json: {r.returncode} {r.stderr}")
    last = json.loads(r.stdout)
    expect(last["rails"] and all(x["energy_j"] > 0 for x in last["rails"]),
           f"--last 2s: {last['rails']}")
    for x in last["rails"]:
        expect(abs(x["avg_power_w"] - x["energy_j"] / last["run"]["duration_s"]) < 1e-6,
               f"--last 2s: average is not energy / duration: {x}")


def attach_times_without_zone(board):
    """A time without a zone is UTC whatever TZ says, in every spelling of it."""
    outputs = {}
    for spelling in ("2023-11-14 22:13:05", "2023-11-14 22:13:5", "2023-11-14T22:13:05Z",
                     "2023-11-15T03:13:05+05:00", "@1699999985"):
        # A local zone 5 hours east of UTC (POSIX form: needs no tzdata).
        r = board.edgemon("attach", "--from", spelling, "--to", "-1s", env={"TZ": "XXX-5"})
        expect(r.returncode == 0, f"attach --from '{spelling}': exit {r.returncode}: {r.stderr}")
        clipped = [line for line in r.stdout.splitlines() if "before the oldest data" in line]
        expect(len(clipped) == 1, f"'{spelling}': no clipping note in {r.stdout}")
        outputs[spelling] = clipped[0]
    expect(len(set(outputs.values())) == 1, f"the same instant read differently: {outputs}")


def record_true(board):
    """record -- true: energy at once from the live counters; no peak without a sample."""
    out = os.path.join(board.tmp, "true")
    r = board.edgemon("record", "--out", out, "--", "true")
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    s = load(os.path.join(out, "summary.json"))
    expect(s["rails"], f"no rails: {r.stderr}")
    for x in s["rails"]:
        expect(x["energy_j"] > 0, f"{x['name']}: {x['energy_j']} J")
        expect(x.get("peak_power_w", 1) != 0, f"{x['name']}: a peak of 0 W")
        if "peak_power_w" in x:
            expect(x["peak_power_w"] > 0, f"{x['name']}: peak {x['peak_power_w']}")
    expect(s["run"]["duration_s"] < 1.0, f"duration {s['run']['duration_s']}")


def command_flags_pass_through(board):
    """record's options end at the command's first word: without `--` the
    command keeps its own flags (--out, -c), record keeps the ones before it."""
    out = os.path.join(board.tmp, "no-dashdash")
    got = os.path.join(board.tmp, "no-dashdash.args")
    r = board.edgemon("record", "--no-wait-descendants", "--out", out, "sh", "-c",
                      'printf "%s|" "$@" > "$0"', got,
                      "--out", "x", "-c", "y", "--label", "z")
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    with open(got) as f:
        expect(f.read() == "--out|x|-c|y|--label|z|", "the command's flags were not its own")
    expect(os.path.exists(os.path.join(out, "summary.json")), "record's own --out was lost")
    expect(not os.path.exists(os.path.join(board.tmp, "x")), "record took the command's --out")
    # `--` stays accepted, and the help says where record's options end.
    r = board.edgemon("record", "--", "sh", "-c", "exit 3")
    expect(r.returncode == 3, f"record -- sh -c 'exit 3': {r.returncode} {r.stderr}")
    r = board.edgemon("record", "--help")
    expect("record's options end at CMD" in r.stdout, r.stdout)


def exit_codes(board):
    r = board.edgemon("record", "--", "sh", "-c", "exit 7")
    expect(r.returncode == 7, f"exit 7 -> {r.returncode}: {r.stderr}")
    expect("exit 7" in r.stderr and "Energy" in r.stderr, "no summary for a failing command")
    r = board.edgemon("record", "--", "no-such-command-edgemon-test", "x")
    expect(r.returncode == 127, f"not found -> {r.returncode}")
    expect("command not found" in r.stderr, r.stderr)
    script = os.path.join(board.tmp, "not-executable.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(script, 0o644)
    r = board.edgemon("record", "--", script)
    expect(r.returncode == 126 and "cannot execute" in r.stderr, f"{r.returncode} {r.stderr}")
    # A crash: the summary still comes, the exit status is 128 + the signal.
    out = os.path.join(board.tmp, "crash")
    r = board.edgemon("record", "--out", out, "--", "sh", "-c", "sleep 0.5; kill -SEGV $$")
    expect(r.returncode == 128 + signal.SIGSEGV, f"SIGSEGV -> {r.returncode}: {r.stderr}")
    expect("killed by signal 11" in r.stderr, r.stderr)
    expect(load(os.path.join(out, "summary.json"))["signal"] == 11, "signal not in summary.json")


def bad_input(board):
    r = board.edgemon("record", "--no-such-flag", "--", "true")
    expect(r.returncode == 2, f"unknown flag -> {r.returncode}")
    r = board.edgemon("attach")
    expect(r.returncode == 2 and "--window" in r.stderr, f"attach without a range -> {r.returncode}")
    r = board.edgemon("attach", "--from", "yesterday")
    expect(r.returncode == 65 and "bad time" in r.stderr, f"bad time -> {r.returncode} {r.stderr}")
    for args in (["attach", "--last", "5x"], ["record", "--pre", "5x", "--", "true"],
                 ["record", "--post", "1 fortnight", "--", "true"]):
        r = board.edgemon(*args)
        expect(r.returncode == 65 and "bad duration" in r.stderr,
               f"{args} -> {r.returncode} {r.stderr}")
    r = board.edgemon("record", "--items-from", "([", "--", "true")
    expect(r.returncode == 65, f"bad regex -> {r.returncode}")
    # No daemon: refuse to start the command.
    marker = os.path.join(board.tmp, "ran")
    r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + os.path.join(board.tmp, "nothing"),
                        "record", "--", "touch", marker], capture_output=True, text=True,
                       timeout=30)
    expect(r.returncode == 69, f"no daemon -> {r.returncode}")
    expect("cannot reach the daemon" in r.stderr and "not starting" in r.stderr, r.stderr)
    expect(not os.path.exists(marker), "the command ran without a daemon")


def marks(board):
    out = os.path.join(board.tmp, "marks")
    r = board.edgemon("record", "--label", "phased", "--out", out, "--", "sh", "-c",
                      "sleep 0.3; edgemon mark begin warm; sleep 1; edgemon mark end warm; "
                      "edgemon mark begin timed; sleep 0.7; edgemon mark end timed")
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    s = load(os.path.join(out, "summary.json"))
    phases = {p["name"]: p for p in s["phases"]}
    expect(sorted(phases) == ["timed", "warm"], f"phases {sorted(phases)}")
    for name, dur in (("warm", 1.0), ("timed", 0.7)):
        p = phases[name]
        expect(dur <= p["duration_s"] < dur + 0.5, f"{name}: {p['duration_s']} s")
        expect(s["window"]["start_ns"] <= p["start_ns"] < p["end_ns"] <= s["window"]["end_ns"],
               f"{name} outside the run")
        for x in p["rails"]:
            truth = board.energy_mj(x["name"], p["start_ns"], p["end_ns"])
            expect(abs(x["energy_j"] * 1000 - truth) <= 0.01 * truth + 2,
                   f"{name}/{x['name']}: {x['energy_j'] * 1000:.1f} mJ vs {truth:.1f}")
    expect("warm" in r.stderr and "timed" in r.stderr, "phases not in the printed summary")
    trace = load(os.path.join(out, "trace.json"))
    names = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"]
    expect(sorted(names) == ["phased", "timed", "warm"], f"slices {names}")
    r = board.edgemon("mark", "end", "never-begun", env={"EDGEMON_WINDOW": "1"})
    expect(r.returncode == 1 and "no open mark" in r.stderr, f"{r.returncode} {r.stderr}")


def remote_mark(board):
    """--connect host:port: the command runs here, the board is measured there; the
    command's `edgemon mark` reaches the same daemon through EDGEMON_CONNECT."""
    expect(not board.target.startswith("unix:"), board.target)
    out = os.path.join(board.tmp, "remote")
    r = board.edgemon("record", "--out", out, "--", "sh", "-c",
                      'test "$EDGEMON_CONNECT" = "' + board.target + '" || exit 9; '
                      "edgemon mark begin inner; sleep 0.6; edgemon mark end inner")
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    s = load(os.path.join(out, "summary.json"))
    expect([p["name"] for p in s["phases"]] == ["inner"], s["phases"])
    p = s["phases"][0]
    for x in p["rails"]:
        truth = board.energy_mj(x["name"], p["start_ns"], p["end_ns"])
        expect(abs(x["energy_j"] * 1000 - truth) <= 0.01 * truth + 2,
               f"inner/{x['name']}: {x['energy_j'] * 1000:.1f} mJ vs {truth:.1f}")
    check_rail_energies(board, s)


def items(board):
    out = os.path.join(board.tmp, "items")
    r = board.edgemon("record", "--items", "100", "--out", out, "--", "sleep", "1")
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    for x in s["rails"]:
        per = s["items"]["energy_j_per_item_by_rail"][x["name"]]
        expect(abs(per - x["energy_j"] / 100) < 1e-12, f"{x['name']}: {per}")
    if s["total_energy_j"] is not None:
        expect(abs(s["items"]["energy_j_per_item"] - s["total_energy_j"] / 100) < 1e-12,
               s["items"])
        expect(abs(s["items"]["items_per_j"] * s["total_energy_j"] - 100) < 1e-6, s["items"])
        expect("mJ/item" in r.stderr and "items/J" in r.stderr, r.stderr)
    # --items-from over the command's output, which passes through unchanged.
    text = "warmup: 10 images\nthroughput 1,234 images in 1 s\ndone\n"
    out2 = os.path.join(board.tmp, "items2")
    r = board.edgemon("record", "--items-from", r"([0-9,]+) images", "--out", out2, "--",
                      "printf", text.replace("%", "%%"))
    expect(r.returncode == 0, r.stderr)
    expect(r.stdout == text, f"stdout changed: {r.stdout!r}")
    s = load(os.path.join(out2, "summary.json"))
    expect(s["items"]["count"] == 1234, s["items"])


def within(got, want, rel, what):
    expect(got is not None and abs(got - want) <= rel * abs(want), f"{what}: {got} vs {want}")


def items_phase(board):
    """--items-phase: per-item figures over one phase; without it over the run,
    never --pre/--post; items/s beside J/item."""
    out = os.path.join(board.tmp, "items-phase")
    r = board.edgemon("record", "--items-from", r"processed ([0-9]+) images", "--items-phase",
                      "timed", "--out", out, "--", "sh", "-c",
                      "edgemon mark begin warmup; sleep 0.5; edgemon mark end warmup; "
                      "edgemon mark begin timed; sleep 1; echo processed 100 images; "
                      "edgemon mark end timed")
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    timed = {p["name"]: p for p in s["phases"]}["timed"]
    it = s["items"]
    expect(it["phase"] == "timed" and it["count"] == 100, it)
    within(it["per_s"], 100 / timed["duration_s"], 0.01, "items/s")
    within(it["energy_j_per_item"], timed["total_energy_j"] / 100, 0.01, "J/item")
    # The phase's energy is the simulator's over the phase, not the run's.
    truth = board.energy_mj("VDD_IN", timed["start_ns"], timed["end_ns"]) / 1000
    within(it["energy_j_per_item"] * 100, truth, 0.01, "timed energy vs analytic")
    expect("items/s" in r.stderr and "phase timed" in r.stderr, r.stderr)
    # An unknown phase: the figures are missing (null), never the run's.
    r = board.edgemon("record", "--items", "10", "--items-phase", "nosuch", "--out", out, "--",
                      "true")
    s = load(os.path.join(out, "summary.json"))
    expect(r.returncode == 0 and s["items"]["energy_j_per_item"] is None
           and s["items"]["per_s"] is None and "nosuch" in s["items"]["why"], s["items"])
    r = board.edgemon("record", "--items-phase", "timed", "--", "true")
    expect(r.returncode == 2 and "--items-phase needs" in r.stderr, r.stderr)
    # Without --items-phase: the run alone, not the --pre/--post around it.
    out2 = os.path.join(board.tmp, "items-pre-post")
    r = board.edgemon("record", "--items", "50", "--pre", "1", "--post", "1", "--out", out2,
                      "--", "sleep", "0.5")
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out2, "summary.json"))
    run = s["run"]
    truth = board.energy_mj("VDD_IN", run["start_ns"], run["end_ns"]) / 1000
    within(s["items"]["energy_j_per_item"] * 50, truth, 0.01, "run energy per item")
    within(s["items"]["per_s"], 50 / run["duration_s"], 0.01, "items/s over the run")
    expect(s["items"]["phase"] is None, s["items"])
    expect(s["total_energy_j"] > 1.5 * truth, "the summary still covers --pre/--post")


def baseline(board):
    """--baseline: refused over a record or past the store; else each rail's
    mean power before the run, and energies above it that add up."""
    marker = os.path.join(board.tmp, "baseline-ran")
    r = board.edgemon("record", "--baseline", "5s", "--", "touch", marker)
    expect(r.returncode == 65 and "overlaps" in r.stderr and not os.path.exists(marker),
           f"{r.returncode} {r.stderr}")
    r = board.edgemon("record", "--baseline", "10h", "--", "touch", marker)
    expect(r.returncode == 65 and "holds only" in r.stderr and not os.path.exists(marker),
           f"{r.returncode} {r.stderr}")
    time.sleep(5.2)  # idle history with no window in it
    out = os.path.join(board.tmp, "baseline")
    r = board.edgemon("record", "--baseline", "5s", "--items", "10", "--out", out, "--", "sh",
                      "-c", "edgemon mark begin work; sleep 1; edgemon mark end work")
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    b = s["baseline"]
    within(b["seconds"], 5.0, 0.01, "baseline seconds")
    power = {x["name"]: x["power_w"] for x in b["rails"]}
    expect(set(power) == set(board.sidecar["rails"]), power)
    for name, w in power.items():
        truth = board.energy_mj(name, b["from_ns"], b["to_ns"]) / 1000 / 5.0
        within(w, truth, 0.01, f"baseline {name}")
    dur = s["range"]["duration_s"]
    for x in s["rails"]:
        within(x["energy_above_baseline_j"] + power[x["name"]] * dur, x["energy_j"], 1e-9,
               f"run {x['name']}")
    within(s["energy_above_baseline_j"] + power["VDD_IN"] * dur, s["total_energy_j"], 1e-9,
           "run total")
    p = s["phases"][0]
    for x in p["rails"]:
        within(x["energy_above_baseline_j"] + power[x["name"]] * p["duration_s"], x["energy_j"],
               1e-9, f"phase {x['name']}")
    within(s["items"]["energy_above_baseline_j_per_item"] * 10, s["energy_above_baseline_j"],
           1e-9, "per item above the baseline")
    expect("above J" in r.stderr and "idle W" in r.stderr, r.stderr)


def repeat(board):
    """--repeat 3 --warmup-runs 1: four windows with one label, statistics over three."""
    out = os.path.join(board.tmp, "repeat")
    r = board.edgemon("record", "--repeat", "3", "--warmup-runs", "1", "--cooldown", "100ms",
                      "--items", "20", "--label", "rep", "--out", out, "--", "sleep", "0.3")
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    runs = s["runs"]
    expect(len(runs) == 4 and [x["warmup"] for x in runs] == [True, False, False, False],
           [x.get("warmup") for x in runs])
    expect(len({x["window"]["id"] for x in runs}) == 4 and {x["label"] for x in runs} == {"rep"},
           "one window per run, one label")
    agg = s["aggregate"]
    expect(agg["n"] == 3, agg)
    for key, of in (("duration_s", lambda x: x["run"]["duration_s"]),
                    ("energy_j", lambda x: x["total_energy_j"]),
                    ("j_per_item", lambda x: x["items"]["energy_j_per_item"]),
                    ("items_per_s", lambda x: x["items"]["per_s"])):
        v = [of(x) for x in runs[1:]]
        a = agg[key]
        expect(a["n"] == 3, (key, a))
        within(a["mean"], statistics.mean(v), 1e-9, key + " mean")
        within(a["std"], statistics.stdev(v), 1e-9, key + " std")
        within(a["ci95"], 4.303 * statistics.stdev(v) / math.sqrt(3), 1e-9, key + " ci95")
    within(agg["avg_power_w"]["mean"],
           statistics.mean(x["total_energy_j"] / x["range"]["duration_s"] for x in runs[1:]),
           1e-9, "avg power")
    expect(r.stderr.count("run ") >= 3 and "warm-up 1 of 1" in r.stderr and "± " in r.stderr,
           r.stderr)
    # A failing run ends the series with its status.
    r = board.edgemon("record", "--repeat", "3", "--", "sh", "-c", "exit 3")
    expect(r.returncode == 3 and "no further runs" in r.stderr, f"{r.returncode} {r.stderr}")


def descendants(board):
    # A command that daemonises its worker: the shell exits at once, the worker
    # (reparented to edgemon, its subreaper) runs 1.5 s more and is measured.
    daemonise = "(sleep 1.5 &) ; exit 0"
    out = os.path.join(board.tmp, "desc")
    r = board.edgemon("record", "--out", out, "--", "sh", "-c", daemonise)
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    expect(1.4 <= s["run"]["duration_s"] < 3, s["run"])
    expect(any("1 process started by the command outlived it" in n for n in s["notes"]),
           f"no note of the descendant: {s['notes']}")
    # --no-wait-descendants: the command's own exit ends the run, no note.
    out = os.path.join(board.tmp, "desc-nowait")
    r = board.edgemon("record", "--no-wait-descendants", "--out", out, "--", "sh", "-c", daemonise)
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    expect(s["run"]["duration_s"] < 1.0, s["run"])
    expect(not any("outlived" in n for n in s["notes"]), s["notes"])
    # Through the --items-from pipe: the worker's output is read and counted too.
    out = os.path.join(board.tmp, "desc-items")
    r = board.edgemon("record", "--items-from", r"([0-9]+) items", "--out", out, "--",
                      "sh", "-c", "(sleep 1; echo 5 items) & exit 0")
    expect(r.returncode == 0, r.stderr)
    expect(r.stdout == "5 items\n", f"stdout {r.stdout!r}")
    s = load(os.path.join(out, "summary.json"))
    expect(s["items"]["count"] == 5 and s["run"]["duration_s"] >= 0.9, (s["items"], s["run"]))


def escaped_label(board):
    # An escape sequence in a label reaches the terminal escaped, not executed:
    # in record's summary, in attach's and in mark's messages.
    evil = "\x1b[2J\x1b[Hevil"
    r = board.edgemon("record", "--label", evil, "--", "true")
    expect(r.returncode == 0, r.stderr)
    expect("\x1b" not in r.stderr and "\\x1b[2J\\x1b[Hevil" in r.stderr, repr(r.stderr[:200]))
    r = board.edgemon("attach", "--last", "2s", "--label", evil)
    expect("\x1b" not in r.stdout + r.stderr and "\\x1b[2J" in r.stdout, repr(r.stdout[:200]))
    r = board.edgemon("mark", "end", evil)
    expect(r.returncode != 0 and "\x1b" not in r.stderr and "\\x1b[2J" in r.stderr,
           repr(r.stderr))
    # Bytes that are not UTF-8 in a label: U+FFFD in the JSON and the bundle.
    out = os.path.join(board.tmp, "not-utf8")
    r = board.edgemon("attach", "--last", "2s", "--json", "--out", out, "--label", b"run \xff")
    expect(r.returncode == 0, f"label not UTF-8: exit {r.returncode}: {r.stderr[-300:]}")
    expect(json.loads(r.stdout)["label"] == "run \ufffd", r.stdout[:300])
    expect(load(os.path.join(out, "summary.json"))["label"] == "run \ufffd", "summary.json")
    load(os.path.join(out, "trace.json"))


def rate_boost(board):
    out = os.path.join(board.tmp, "boost")
    r = board.edgemon("record", "--rate", "200", "--pre", "0.5s", "--post", "0.5s", "--out", out,
                      "--", "sleep", "1.5")
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    expect(s["boost_rate_hz"] == 200, f"boost {s['boost_rate_hz']}")
    rng = s["range"]
    expect(abs((s["window"]["start_ns"] - rng["from_ns"]) / 1e9 - 0.5) < 1e-6 and
           abs((rng["to_ns"] - s["window"]["end_ns"]) / 1e9 - 0.5) < 1e-6, rng)
    check_rail_energies(board, s)


def rail_columns(path):
    """samples.csv as (header, rows of cells)."""
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def kept_samples(board):
    """record --rate 500: the rail samples taken at 500 Hz are kept with the
    window and written into samples.csv (rows without a seq between the
    frames) and trace.json; attach --window gives the same samples later."""
    out = os.path.join(board.tmp, "kept")
    r = board.edgemon("record", "--rate", "500", "--out", out, "--", "sleep", "2")
    expect(r.returncode == 0, r.stderr)
    s = load(os.path.join(out, "summary.json"))
    inp = next(x["name"] for x in s["rails"] if x["input"])
    head, rows = rail_columns(os.path.join(out, "samples.csv"))
    col = head.index(f"rail/{inp}/power[mW]")
    points = [(int(row[0]), int(row[col])) for row in rows if row[col] != ""]
    rail_rows = [row for row in rows if row[1] == ""]
    print(f"    samples.csv: {len(points)} {inp} samples, {len(rail_rows)} rows between"
          f" {len(rows) - len(rail_rows)} frames")
    expect(len(points) >= 800, f"{len(points)} {inp} samples in samples.csv for 2 s at 500 Hz")
    times = [t for t, _ in points]
    expect(times == sorted(times) and len(set(times)) == len(times), "rows out of time order")
    # Each sample on the simulator's power at its own time.
    worst = max(abs(v - board.power_mw(inp, t)) / board.power_mw(inp, t) for t, v in points)
    expect(worst < 0.05, f"a sample {worst * 100:.1f} % off the analytic power")
    # A rail sample row holds rails only: the frame-rate channels stay blank.
    temp = next(i for i, h in enumerate(head) if h.startswith("thermal/"))
    expect(all(row[temp] == "" for row in rail_rows), "a temperature in a rail sample row")
    trace = load(os.path.join(out, "trace.json"))
    events = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == inp]
    expect(len(events) == len(points), f"{len(events)} {inp} counter events, {len(points)} in CSV")
    # attach of the window, afterwards: the same samples.
    again = os.path.join(board.tmp, "kept-attach")
    r = board.edgemon("attach", "--window", str(s["window"]["id"]), "--out", again)
    expect(r.returncode == 0, r.stderr)
    head2, rows2 = rail_columns(os.path.join(again, "samples.csv"))
    col2 = head2.index(f"rail/{inp}/power[mW]")
    points2 = [(int(row[0]), int(row[col2])) for row in rows2 if row[col2] != ""]
    # record's range is the window's (no --pre/--post): the same points.
    expect(points2 == points, f"attach: {len(points2)} samples, record: {len(points)}")
    with open(os.path.join(out, "report.html")) as f:
        data = json.loads(re.search(r'id="edgemon-data">(.*?)</script>', f.read(), re.S).group(1))
    power = next(g for g in data["series"]["groups"] if g["id"] == "power")
    line = next(ln for ln in power["lines"] if ln["name"] == inp)
    drawn = [v for v in line["values"] if v is not None]
    expect(len(power.get("t_s", [])) == len(line["values"]) and len(drawn) == len(points),
           f"report.html: {len(drawn)} {inp} points, {len(points)} samples")


def announced(board, name, seconds):
    """A command that touches a file as it starts, then sleeps: the path and
    the command. Waiting for the file (wait_started) times what follows from
    the command's start, however long edgemon took to get there."""
    path = os.path.join(board.tmp, name + ".started")
    return path, ["sh", "-c", f'touch "$0"; exec sleep {seconds}', path]


def wait_started(path, proc=None):
    def started():
        expect(proc is None or proc.poll() is None,
               f"exited ({proc and proc.returncode}) before its command started")
        return os.path.exists(path)
    wait_until(f"the command's start ({path})", started)


def concurrent_rates(board):
    """Two records at once, --rate 1000 and --rate 5: each holds its own lease,
    so the first keeps 1000 Hz throughout, and each report states the rates
    that held (the daemon's log), not the one it asked for."""
    fast_out = os.path.join(board.tmp, "rate-fast")
    slow_out = os.path.join(board.tmp, "rate-slow")
    started, cmd = announced(board, "rate-fast", 2.5)
    fast = subprocess.Popen([ARGS.edgemon, "--connect", board.target, "record", "--rate", "1000",
                             "--out", fast_out, "--"] + cmd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_started(started, fast)  # its lease is held from before its command starts
    time.sleep(0.2)
    r = board.edgemon("record", "--rate", "5", "--out", slow_out, "--", "sleep", "0.3")
    expect(r.returncode == 0, r.stderr)
    _, err = fast.communicate(timeout=60)
    expect(fast.returncode == 0, err)
    s = load(os.path.join(fast_out, "summary.json"))
    expect(s["rail_rate_hz"] == {"min": 1000, "max": 1000},
           f"--rate 1000 beside --rate 5: rates held {s['rail_rate_hz']}")
    expect("rails integrated at 1000 Hz," in err, err)
    # The slow run lay inside the fast one: 1000 Hz held for it too.
    s = load(os.path.join(slow_out, "summary.json"))
    expect(s["rail_rate_hz"] == {"min": 1000, "max": 1000}, s["rail_rate_hz"])
    # With the leases gone, the configured rate holds again and is what a report says.
    time.sleep(0.3)
    plain = os.path.join(board.tmp, "rate-none")
    r = board.edgemon("record", "--out", plain, "--", "sleep", "0.3")
    s = load(os.path.join(plain, "summary.json"))
    expect(s["rail_rate_hz"] == {"min": ENERGY_RATE_HZ, "max": ENERGY_RATE_HZ}, s["rail_rate_hz"])


def signal_forwarding(board):
    """SIGTERM sent to edgemon reaches the command; edgemon exits 128+15 with a summary."""
    e = dict(os.environ)
    started, cmd = announced(board, "term", 30)
    p = subprocess.Popen([ARGS.edgemon, "--connect", board.target, "record", "--out",
                          os.path.join(board.tmp, "term"), "--"] + cmd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    wait_started(started, p)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    expect(p.returncode == 128 + signal.SIGTERM, f"exit {p.returncode}: {err}")
    expect("killed by signal 15" in err, err)


def terminal_ctrl_c(board):
    """Ctrl-C in a real terminal (tmux): the command gets SIGINT from the terminal,
    edgemon survives it, prints the summary and exits 130."""
    tmux = shutil.which("tmux")
    expect(tmux is not None, "tmux is not installed (scripts/install-deps.sh installs it)")
    out = os.path.join(board.tmp, "ctrl-c")
    sock = os.path.join(board.tmp, "tmux.sock")
    t = [tmux, "-S", sock, "-f", "/dev/null"]
    # bash reports the exit status itself: tmux 3.3a sometimes marks a pane
    # dead (its pty closed) without recording the status. bash waits out a
    # terminal SIGINT that its foreground child handles, so it keeps going.
    started = os.path.join(board.tmp, "ctrl-c.started")
    cmd = (f"bash -c '{ARGS.edgemon} --connect {board.target} record --out {out} --"
           f" sh -c \"touch {started}; exec sleep 30\"; echo EDGEMON_EXIT=$?'")
    subprocess.run(t + ["new-session", "-d", "-s", "rec", "-x", "160", "-y", "60", cmd],
                   check=True)
    try:
        subprocess.run(t + ["set-option", "-t", "rec", "remain-on-exit", "on"], check=True)
        wait_started(started)
        time.sleep(1.5)
        subprocess.run(t + ["send-keys", "-t", "rec", "C-c"], check=True)
        deadline = time.time() + 30
        state = ""
        while time.time() < deadline:
            state = subprocess.run(t + ["display-message", "-p", "-t", "rec",
                                        "#{pane_dead} #{pane_dead_status} #{pane_dead_signal}"],
                                   capture_output=True, text=True).stdout.split()
            if state and state[0] == "1":
                break
            time.sleep(0.1)
        screen = subprocess.run(t + ["capture-pane", "-p", "-t", "rec", "-S", "-100"],
                                capture_output=True, text=True).stdout
        expect(state[:1] == ["1"] and "EDGEMON_EXIT=130" in screen,
               f"pane state {state}:\n{screen}")
        expect("killed by signal 2" in screen and "Energy" in screen, screen)
        s = load(os.path.join(out, "summary.json"))
        expect(s["signal"] == 2 and 1.0 < s["run"]["duration_s"] < 10, s["run"])
        expect(not any("forwarded" in n for n in s["notes"]),
               f"the terminal's SIGINT was forwarded again: {s['notes']}")
    finally:
        subprocess.run(t + ["kill-server"], capture_output=True)


def killed_recorder(board):
    """A recorder killed with SIGKILL stops renewing its window's lease: the
    daemon closes the window, and the mark inside it, as abandoned."""
    p = subprocess.Popen([ARGS.edgemon, "--connect", board.target, "record", "--label",
                          "killed-run", "--", "sh", "-c", "edgemon mark begin inner; sleep 60"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True,
                         env=dict(os.environ, PATH=os.path.dirname(ARGS.edgemon) + ":" +
                                  os.environ.get("PATH", "/usr/bin:/bin")))
    # Begun, the mark too (its row is there), and renewed at least once (the
    # first renewal is 2.5 s after the window began).
    def marked():
        expect(p.poll() is None, f"edgemon record exited ({p.returncode})")
        db = sqlite3.connect(f"file:{board.db}?mode=ro", uri=True, timeout=5)
        rows = db.execute("SELECT 1 FROM windows WHERE label LIKE '%:inner'").fetchall()
        db.close()
        return rows
    wait_until("the mark inside the recorded command", marked)
    time.sleep(3.0)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    rows = []
    deadline = time.time() + 40  # the lease is 10 s
    while time.time() < deadline:
        db = sqlite3.connect(f"file:{board.db}?mode=ro", uri=True, timeout=5)
        rows = db.execute("SELECT label, start_ns, end_ns, abandoned FROM windows "
                          "WHERE label = 'killed-run' OR label LIKE '%:inner'").fetchall()
        db.close()
        if len(rows) == 2 and all(r[3] == 1 for r in rows):
            break
        time.sleep(0.5)
    expect(len(rows) == 2, f"windows {rows}")
    for label, start, end, abandoned in rows:
        expect(abandoned == 1 and end is not None and end >= start,
               f"{label}: end {end}, abandoned {abandoned}")
        # Ended at the last renewal: after the start, before the kill's lease ran out.
        expect(end - start >= 1_000_000_000, f"{label}: ended {(end - start) / 1e9:.1f} s in")


def daemon_restart(board):
    """edgemond killed (SIGKILL) and restarted mid-recording: the stored data is summarized."""
    out = os.path.join(board.tmp, "restart")
    e = dict(os.environ)
    p = subprocess.Popen([ARGS.edgemon, "--connect", board.target, "record", "--out", out,
                          "--", "sleep", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=e)
    time.sleep(1.0)
    board.kill_daemon()
    time.sleep(2.0)
    board.start_daemon()
    _, err = p.communicate(timeout=60)
    expect(p.returncode == 0, f"exit {p.returncode}: {err}")
    s = load(os.path.join(out, "summary.json"))
    print("    notes: " + " | ".join(s["notes"]))
    expect(any("unreachable" in n for n in s["notes"]), f"no note of the outage: {s['notes']}")
    expect("unreachable" in err, "the outage is not in the printed summary")
    # 2 s of 5 s were not sampled: fewer frames than the period implies, and it says so.
    expected = s["range"]["duration_s"] * 1000 / INTERVAL_MS
    expect(0 < s["samples"] < 0.8 * expected, f"samples {s['samples']} of ~{expected:.0f}")
    expect(any("not sampled or not stored" in n for n in s["uncertainty"]), s["uncertainty"])
    expect(abs(s["run"]["duration_s"] - 5) < 0.5, s["run"])
    for x in s["rails"]:
        whole = board.energy_mj(x["name"], s["range"]["from_ns"], s["range"]["to_ns"])
        expect(0 < x["energy_j"] * 1000 < whole,
               f"{x['name']}: {x['energy_j'] * 1000:.0f} mJ, the whole window is {whole:.0f}")


def record_nvtx(board):
    """record --nvtx: a C program's NVTX ranges (preprocess once, infer three
    times, inside a range of the domain "app"; a start/end range on another
    thread) in summary.json with counts, times within 5 ms of the program's
    own stamps and energies within 1 % of the analytic integral over them."""
    out = os.path.join(board.tmp, "nvtx")
    r = board.edgemon("record", "--nvtx", "--rate", "1000", "--out", out, "--", ARGS.nvtx_program)
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    stamps = {}
    for line in r.stdout.splitlines():
        name, start, end = line.split()
        stamps.setdefault(name, []).append((int(start), int(end)))
    s = load(os.path.join(out, "summary.json"))
    got = {(x["domain"], x["name"]): x for x in s["nvtx"]}
    expect(sorted(got, key=str) == sorted([(None, "load"), (None, "preprocess"), (None, "infer"),
                                           ("app", "model")], key=str), f"ranges {list(got)}")
    expect("inclusive" in s["nvtx_attribution"], s["nvtx_attribution"])
    lines = []
    for (domain, name), x in got.items():
        own = stamps[name]
        expect(x["count"] == len(own) == {"infer": 3}.get(name, 1), f"{name}: count {x['count']}")
        own_s = sum(e - b for b, e in own) / 1e9
        # The library's stamps lie inside the program's own, a few us apart.
        expect(own_s - 0.005 <= x["total_s"] <= own_s, f"{name}: {x['total_s']} s vs {own_s} s")
        rails = {y["name"]: y for y in x["rails"]}
        expect(set(rails) == set(board.sidecar["rails"]), f"{name}: rails {sorted(rails)}")
        for rail, y in rails.items():
            truth = sum(board.energy_mj(rail, b, e) for b, e in own)
            err = (y["energy_j"] * 1000 - truth) / truth
            # Within 1 % (and 2 mJ, as check_rail_energies allows a rail).
            expect(abs(y["energy_j"] * 1000 - truth) <= 0.01 * truth + 2,
                   f"{name} {rail}: {y['energy_j'] * 1000:.2f} mJ, analytic {truth:.2f} mJ "
                   f"({err * 100:+.2f} %)")
            if y["input"]:
                expect(x["energy_j"] == y["energy_j"], f"{name}: total is not {rail}'s")
                expect(abs(x["avg_w"] - y["energy_j"] / x["total_s"]) < 1e-9, x)
                lines.append(f"{name} {y['energy_j'] * 1000:.1f} mJ ({err * 100:+.3f} %)")
    print("    " + "; ".join(lines))
    # Inclusive: the outer range holds the energy of those nested in it.
    inner = got[(None, "preprocess")]["energy_j"] + got[(None, "infer")]["energy_j"]
    expect(got[("app", "model")]["energy_j"] > inner, "model's energy is not inclusive")
    expect("NVTX ranges" in r.stderr and "infer" in r.stderr, r.stderr)
    trace = load(os.path.join(out, "trace.json"))
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 5]
    expect(sorted(e["name"] for e in slices) ==
           ["infer", "infer", "infer", "load", "model", "preprocess"], slices)
    expect(all(e["args"]["energy_j"] > 0 for e in slices), slices)
    expect(len({e["tid"] for e in slices}) == 2, "ranges of two threads on one track")
    html = open(os.path.join(out, "report.html")).read()
    expect('"name":"preprocess"' in html, "report.html's data lacks the NVTX ranges")
    # trace.perfetto-trace: the NVTX slices, with their energy, in Perfetto's format.
    packets = decode_perfetto(os.path.join(out, "trace.perfetto-trace"))
    names = [p.get("name") for p in packets if p.get("type") == "TYPE_SLICE_BEGIN"]
    expect(sorted(n for n in names if n in ("infer", "preprocess", "load", "model")) ==
           ["infer", "infer", "infer", "load", "model", "preprocess"], names)
    expect(any(p["descriptor"] and p.get("name") == "NVTX ranges" for p in packets),
           "no NVTX group track")
    # No library: refused before the command runs.
    marker = os.path.join(board.tmp, "nvtx-ran")
    r = board.edgemon("record", "--nvtx", "--", "touch", marker,
                      env={"EDGEMON_NVTX_LIBRARY": os.path.join(board.tmp, "none.so")})
    expect(r.returncode == 2 and "libedgemon_nvtx.so" in r.stderr, f"{r.returncode} {r.stderr}")
    expect(not os.path.exists(marker), "the command ran without the NVTX library")


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--edgemon", required=True)
    p.add_argument("--edgemond", required=True)
    p.add_argument("--sim", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--keep", action="store_true", help="keep the temp dir")
    p.add_argument("--nvtx-program", help="nvtx_ranges (built where the NVTX headers are)")
    p.add_argument("--protoc", required=True, help="decodes the bundle's trace.perfetto-trace")
    p.add_argument("--proto-dir", required=True, help="the source tree's proto/")
    ARGS = p.parse_args()
    for k in ("edgemon", "edgemond", "sim", "fixtures", "nvtx_program", "proto_dir"):
        if getattr(ARGS, k):
            setattr(ARGS, k, os.path.abspath(getattr(ARGS, k)))

    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="edgemon-record-")
    boards = []
    try:
        for name in ("orin-nano", "agx-orin"):
            b = Board(tmp, name, tcp=(name == "agx-orin"))
            boards.append(b)
            b.last_record = None
            checks.run(f"{name}: record -- sleep 3 (energy vs analytic, edges)", record_sleep, b)
            if b.last_record:
                checks.run(f"{name}: attach --window / --from --to", attach_window, b)
        checks.run("agx-orin over TCP: a local command measured remotely, with a mark",
                   remote_mark, boards[1])
        nano = boards[0]
        checks.run("record -- true (live counters, no peak of 0)", record_true, nano)
        checks.run("over-current events in the run's notes", record_events, nano)
        checks.run("attach --from without a zone is UTC", attach_times_without_zone, nano)
        checks.run("exit codes (7, 127, 126, SIGSEGV)", exit_codes, nano)
        checks.run("record CMD --flags without --: the command's flags", command_flags_pass_through,
                   nano)
        checks.run("bad input (flags, range, time, regex, no daemon)", bad_input, nano)
        checks.run("mark begin/end from inside the command", marks, nano)
        checks.run("--items and --items-from", items, nano)
        checks.run("--items-phase, items/s, per item without --pre/--post", items_phase, nano)
        checks.run("--baseline: refusals, idle power, energy above it", baseline, nano)
        checks.run("--repeat with warm-up runs: runs and aggregate", repeat, nano)
        if ARGS.nvtx_program:
            checks.run("record --nvtx: energy per NVTX range", record_nvtx, nano)
        checks.run("daemonised descendants waited for (subreaper), --no-wait-descendants",
                   descendants, nano)
        checks.run("labels with escape sequences are printed escaped", escaped_label, nano)
        checks.run("--rate --pre --post", rate_boost, nano)
        checks.run("two records at once with their own --rate", concurrent_rates, nano)
        checks.run("record --rate 500: rail samples kept, attach gives them", kept_samples, nano)
        checks.run("SIGTERM forwarded to the command", signal_forwarding, nano)
        checks.run("Ctrl-C in a terminal (tmux)", terminal_ctrl_c, nano)
        checks.run("edgemond killed and restarted mid-recording", daemon_restart, nano)
        checks.run("a SIGKILLed recorder's window closes as abandoned", killed_recorder, nano)
        checks.run("runs lists repeated runs; compare prints two labels with the difference",
                   runs_checks.runs_and_compare, nano)
        checks.run("mlperf_energy.json of an LLM-shaped run passes every rule but the method",
                   runs_checks.mlperf_report, nano)
    except Exception as e:  # noqa: BLE001
        checks.failed.append(f"setup: {e}")
        traceback.print_exc()
    finally:
        for b in boards:
            if checks.failed:
                print(f"--- edgemond log tail ({b.tmp}) ---\n" + b.daemon_log())
            b.stop()
        if ARGS.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in checks.failed:
        print(f"failed: {f}")
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed or checks.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
