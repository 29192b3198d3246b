#!/usr/bin/python3
"""End-to-end test of edgemon's reading subcommands (now, sensors, watch,
tegrastats, query) against real programs: edgemon-sim materialises a moving
fixture board, edgemond samples it into a real SQLite store and serves it on
a unix socket and on loopback TCP, and the edgemon binary is run as a user
would run it. Expected values come from the fixture files (MemTotal, the
board's rails) and the simulator's sidecar (each rail's waveform bounds),
never from edgemon's own output.

  cli_e2e.py --edgemon build/client/cli/edgemon --edgemond build/daemon/edgemond \
      --sim build/daemon/sim/edgemon-sim --fixtures tests/fixtures

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import csv
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from harness import Checks, expect, free_port, start_sim, stop_process  # noqa: E402 (shared by the e2e scripts)

ARGS = None

# tegrastats' published format, as public tegrastats parsers match it (the
# patterns of jetson-stats' tegra_parse and the exporters derived from it).
RAM_RE = re.compile(r"RAM (\d+)/(\d+)(\w)B( ?)\(lfb (\d+)x(\d+)(\w)B\)")
SWAP_RE = re.compile(r"SWAP (\d+)/(\d+)(\w)B( ?)\(cached (\d+)(\w)B\)")
CPU_RE = re.compile(r"CPU \[(.*?)\]")
CORE_RE = re.compile(r"^(\d+)%@(\d+)$")
EMC_RE = re.compile(r"EMC_FREQ (\d+)%(@(\d+))?")
# Thor prints its GPC clocks without a load: "GR3D_FREQ @[314,314,314]".
GR3D_RE = re.compile(r"GR3D_FREQ (?:(\d+)%)?(@\[?(\d+))?")
TEMP_RE = re.compile(r"\b(\w+)@(-?[0-9.]+)C\b")
RAIL_MW_RE = re.compile(r"\b(\w+) (\d+)mW/(\d+)mW\b")
RAIL_OLD_RE = re.compile(r"\b(\w+) ([0-9.]+)/([0-9.]+)\b")
TIME_RE = re.compile(r"^\d\d-\d\d-\d{4} \d\d:\d\d:\d\d ")


def fixture_meminfo_kib(board, key):
    with open(os.path.join(ARGS.fixtures, board, "proc", "meminfo")) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(f"{key} not in the {board} fixture's meminfo")


def fixture_cores(board):
    base = os.path.join(ARGS.fixtures, board, "sys", "devices", "system", "cpu")
    return sorted(int(n[3:]) for n in os.listdir(base) if re.fullmatch(r"cpu\d+", n))


class Board:
    """edgemon-sim on a fixture + edgemond on a unix socket and loopback TCP."""

    def __init__(self, tmp, board):
        self.board = board
        self.dir = os.path.join(tmp, board)
        os.makedirs(self.dir)
        root = os.path.join(self.dir, "root")
        self.sim_log = open(os.path.join(self.dir, "sim.log"), "w")
        self.sim, self.sidecar = start_sim(ARGS.sim, board, root, ARGS.fixtures, self.sim_log,
                                           ["--rate-hz", "20", "--period-s", "10"])
        self.port = free_port()
        config = os.path.join(self.dir, "edgemond.toml")
        with open(config, "w") as f:
            f.write(f'[daemon]\ntcp_listen = "127.0.0.1:{self.port}"\n'
                    # 2 s rollup periods: rollup rows exist within seconds,
                    # as after a minute on a daemon of the default period.
                    "[store]\ncommit_interval_ms = 200\nrollup_period = \"2s\"\n")
        self.sock = os.path.join(self.dir, "edgemond.sock")
        self.log_path = os.path.join(self.dir, "edgemond.log")
        self.log = open(self.log_path, "w")
        self.cmd = [ARGS.edgemond, "--config", config, "--root", root, "--db",
                    os.path.join(self.dir, "edgemon.db"), "--listen", "unix:" + self.sock,
                    "--interval-ms", "200"]
        self.started_ns = time.time_ns()  # before edgemond's first frame
        self.start_daemon()
        # Let a few frames (with CPU loads) reach the store.
        time.sleep(1.5)

    def start_daemon(self):
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.daemon = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=self.log,
                                       env=env)
        deadline = time.time() + 20
        while not os.path.exists(self.sock):
            if self.daemon.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"edgemond did not start:\n{self.output()}")
            time.sleep(0.05)

    def stop_daemon(self):
        self.daemon.terminate()
        self.daemon.wait(timeout=25)
        deadline = time.time() + 5
        while os.path.exists(self.sock) and time.time() < deadline:
            time.sleep(0.05)

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def edgemon(self, *args, connect=None, timeout=30, check=True):
        target = connect or ("unix:" + self.sock)
        r = subprocess.run([ARGS.edgemon, "--connect", target, *args], capture_output=True,
                           text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"edgemon {' '.join(args)}: exit {r.returncode}: {r.stderr}")
        return r

    def rails(self):
        return sorted(self.sidecar["rails"].keys())

    def rail_bounds(self, name):
        r = self.sidecar["rails"][name]
        base, amp = r["base_mw"], abs(r["amplitude"])
        slack = max(5.0, 0.01 * base)  # V x I rounding of the simulated files
        return base * (1 - amp) - slack, base * (1 + amp) + slack

    def stop(self):
        for p in (self.daemon, self.sim):
            stop_process(p)
        self.log.close()
        self.sim_log.close()


# ------------------------------------------------------------------ checks
def check_now_json(b):
    out = json.loads(b.edgemon("now", "--json").stdout)
    values = out["values"]
    expect(values.get("memory/ram/total") == fixture_meminfo_kib(b.board, "MemTotal"),
           f"memory/ram/total {values.get('memory/ram/total')} != fixture MemTotal")
    for rail in b.rails():
        key = f"rail/{rail}/power"
        expect(key in values, f"{key} missing from now --json")
        lo, hi = b.rail_bounds(rail)
        expect(values[key] is not None and lo <= values[key] <= hi,
               f"{key} = {values[key]} outside the waveform's [{lo:.0f}, {hi:.0f}] mW")
    expect(out["board"]["model"], "no board model")


def check_now_table(b):
    out = b.edgemon("now").stdout
    expect("[rail]" in out and "[memory]" in out, "now: no [rail]/[memory] groups")
    for rail in b.rails():
        expect(re.search(rf"^\s+{re.escape(rail)}\b.*power=\d+\.\d+ W", out, re.M),
               f"now: no power in watts for {rail}")
    only = b.edgemon("now", "--channels", "rail/*").stdout
    expect("[rail]" in only and "[memory]" not in only, "now --channels rail/* kept other kinds")


def fixture_oc_count(board):
    """The last ocN_event_cnt of the fixture's soctherm_oc chip: (N, count), or None."""
    base = os.path.join(ARGS.fixtures, board, "sys", "class", "hwmon")
    for h in sorted(os.listdir(base)):
        d = os.path.join(base, h)
        with open(os.path.join(d, "name")) as f:
            if f.read().strip() != "soctherm_oc":
                continue
        ns = sorted(int(m.group(1)) for m in
                    (re.fullmatch(r"oc(\d+)_event_cnt", x) for x in os.listdir(d)) if m)
        with open(os.path.join(d, "oc%d_event_cnt" % ns[-1])) as f:
            return ns[-1], int(f.read())
    return None


class CountingProxy:
    """A gRPC proxy on loopback TCP that forwards every call, as bytes, to
    `target` and records each call's method name: what a client costs the
    daemon, counted on the wire."""
    STREAMING = {"Watch", "Query"}  # the server-streaming methods of edgemon.v1.Telemetry

    def __init__(self, target):
        import grpc
        from concurrent import futures
        self.calls = []
        self.channel = grpc.insecure_channel(target)
        proxy = self

        def forward(method, streaming):
            call = (proxy.channel.unary_stream if streaming else proxy.channel.unary_unary)(method)
            return lambda request, ctx: call(request, metadata=ctx.invocation_metadata())

        class Handler(grpc.GenericRpcHandler):
            def service(self, details):
                name = details.method.rsplit("/", 1)[-1]
                proxy.calls.append(name)
                if name in CountingProxy.STREAMING:
                    return grpc.unary_stream_rpc_method_handler(forward(details.method, True))
                return grpc.unary_unary_rpc_method_handler(forward(details.method, False))

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((Handler(),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def close(self):
        self.server.stop(None)
        self.channel.close()


def check_events(b):
    """The simulator's over-current burst (+2 at 1 s) reaches `now --json` as the
    counter event/ocN/events; the diagnostics list the rails' headroom."""
    n, base = fixture_oc_count(b.board)
    key = f"event/oc{n}/events"
    deadline = time.time() + 15
    while True:
        out = json.loads(b.edgemon("now", "--json").stdout)
        v = out["values"].get(key)
        if v is not None and v >= base + 2 or time.time() > deadline:
            break
        time.sleep(0.2)
    expect(v is not None and v >= base + 2 and (v - base) % 2 == 0,
           f"{key} = {v}, want the fixture's {base} + 2 per burst")
    chan = next(c for c in out["channels"] if c["kind"] == "event" and c["name"] == f"oc{n}"
                and c["field"] == "events")
    expect("counter" in chan["flags"] and chan["unit"] == "count", f"{key}: {chan}")
    d = out["diagnostics"]
    crit = [h for h in d["headroom"] if h["limit"] == "crit" and h["key"].endswith("/current")]
    expect(crit and all(h["headroom"] == h["limit_value"] - h["value"] for h in crit),
           f"headroom rows: {d['headroom']}")
    expect(d["active"] == [], f"nothing is active on the fixture: {d['active']}")
    last = {e["key"]: e["realtime_ns"] for e in d["last_events"]}
    expect(key in last and 0 <= time.time_ns() - last[key] < 60e9,
           f"the burst's time is not {key}'s last event: {d['last_events']}")
    text = b.edgemon("now").stdout
    expect("[event]" in text and f"oc{n}" in text, "now: no [event] group")
    expect(re.search(r"^\[diagnostics\]$", text, re.M) and " crit " in text,
           "now: no [diagnostics] with the rails' headroom")
    expect(re.search(rf"^  last event: oc{n} at \d{{4}}-", text, re.M), "now: no last event")
    # The whole snapshot with its last events in at most two calls: DeviceInfo,
    # then the frame with the daemon's own answer of when each counter rose.
    proxy = CountingProxy("unix:" + b.sock)
    try:
        for args in (("now", "--json"), ("now",)):
            proxy.calls.clear()
            out = b.edgemon(*args, connect=f"127.0.0.1:{proxy.port}").stdout
            expect(len(proxy.calls) <= 2, f"edgemon {' '.join(args)} made {len(proxy.calls)} "
                                          f"calls: {proxy.calls}")
            if args[-1] == "--json":
                got = {e["key"]: e["realtime_ns"]
                       for e in json.loads(out)["diagnostics"]["last_events"]}
                expect(got.get(key) is not None and got[key] >= last[key],
                       f"through the proxy: last events {got}, directly {last}")
    finally:
        proxy.close()


def check_sensors(b):
    out = b.edgemon("sensors").stdout
    for rail in b.rails():
        expect(re.search(rf"rail/{re.escape(rail)}/power\s+mW\b", out),
               f"sensors: rail/{rail}/power with unit mW missing")
    j = json.loads(b.edgemon("sensors", "--json").stdout)
    by_key = {c["key"]: c for c in j["channels"]}
    expect(by_key["memory/ram/total"]["unit"] == "KiB", "ram total unit is not KiB")
    for rail in b.rails():
        expect(by_key[f"rail/{rail}/power"]["unit"] == "mW", f"{rail} power unit")
    expect(all("value" not in c for c in j["channels"]), "sensors --json carries values")


def check_watch(b):
    r = b.edgemon("watch", "--count", "3", "--json", "--interval", "200ms")
    lines = r.stdout.strip().splitlines()
    expect(len(lines) == 3, f"watch --count 3 printed {len(lines)} lines")
    frames = [json.loads(line) for line in lines]
    seqs = [f["seq"] for f in frames]
    expect(seqs == sorted(seqs) and len(set(seqs)) == 3, f"seqs not increasing: {seqs}")
    for f in frames:
        total = f["values"].get("memory/ram/total")
        expect(total == fixture_meminfo_kib(b.board, "MemTotal"), f"watch ram total {total}")
    r = b.edgemon("watch", "--count", "2", "--json", "--channels", "rail/*,thermal/*")
    for line in r.stdout.strip().splitlines():
        keys = json.loads(line)["values"].keys()
        expect(keys and all(k.startswith(("rail/", "thermal/")) for k in keys),
               f"filter leaked: {sorted(keys)[:5]}")
        for rail in b.rails():
            expect(f"rail/{rail}/power" in keys, f"rail/{rail}/power not in the filtered watch")
    text = b.edgemon("watch", "--count", "2").stdout.strip().splitlines()
    expect(len(text) == 2, "watch text: not 2 lines")
    for rail in b.rails():
        expect(re.search(rf"\b{re.escape(rail)}=\d+\.\d+W", text[0]), f"watch text: no {rail}=W")


def parse_tegrastats(line):
    p = {"timestamp": bool(TIME_RE.search(line))}
    m = RAM_RE.search(line)
    p["ram"] = (int(m.group(1)), int(m.group(2))) if m else None
    m = CPU_RE.search(line)
    p["cpus"] = None
    if m:
        cores = []
        for item in m.group(1).split(","):
            if item == "off":
                cores.append(None)
            else:
                c = CORE_RE.match(item)
                expect(c, f"CPU entry {item!r} does not parse")
                cores.append((int(c.group(1)), int(c.group(2))))
        p["cpus"] = cores
    p["temps"] = dict((n, float(v)) for n, v in TEMP_RE.findall(line))
    rails = RAIL_MW_RE.findall(line)
    p["units"] = bool(rails)
    if not rails:
        rails = RAIL_OLD_RE.findall(line)
    p["rails"] = {n: (int(c), int(a)) for n, c, a in rails}
    p["gr3d"] = GR3D_RE.search(line)
    p["emc"] = EMC_RE.search(line)
    return p


def check_tegrastats(b, connect=None):
    r = b.edgemon("tegrastats", "--interval", "200", "--count", "4", connect=connect)
    lines = r.stdout.strip().splitlines()
    expect(len(lines) == 4, f"tegrastats --count 4 printed {len(lines)} lines")
    jetpack4 = b.board == "jetson-nano"
    mem_total_mb = (fixture_meminfo_kib(b.board, "MemTotal") + 512) // 1024  # nearest MB
    cores = fixture_cores(b.board)
    sums = {}
    for i, line in enumerate(lines):
        p = parse_tegrastats(line)
        expect(p["timestamp"] != jetpack4, f"timestamp present={p['timestamp']} on {b.board}")
        expect(p["units"] != jetpack4, f"rail mW units={p['units']} on {b.board}: {line}")
        expect(p["ram"] and p["ram"][1] == mem_total_mb,
               f"RAM total {p['ram']} != fixture MemTotal {mem_total_mb} MB")
        expect(p["cpus"] is not None and len(p["cpus"]) == len(cores),
               f"CPU block {p['cpus']} vs {len(cores)} cores")
        expect(p["gr3d"] is not None, "no GR3D_FREQ")
        expect(p["emc"] is not None, "no EMC_FREQ")
        expect(set(p["rails"]) == set(b.rails()),
               f"rails {sorted(p['rails'])} != the board's {b.rails()}")
        expect(all(t > -100 for t in p["temps"].values()), f"a -256C crept in: {p['temps']}")
        expect(p["temps"], "no temperatures")
        for name, (cur, avg) in p["rails"].items():
            lo, hi = b.rail_bounds(name)
            expect(lo <= cur <= hi, f"{name} {cur} mW outside [{lo:.0f}, {hi:.0f}]")
            sums[name] = sums.get(name, 0) + cur
            expect(abs(avg - sums[name] / (i + 1)) <= 1,
                   f"{name} avg {avg} is not the mean of the readings so far")


def check_tegrastats_logfile(b):
    log = os.path.join(b.dir, "tegrastats.log")
    with open(log, "w") as f:
        f.write("kept line\n")
    p = subprocess.Popen([ARGS.edgemon, "--connect", "unix:" + b.sock, "tegrastats",
                          "--interval", "200", "--logfile", log],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log) as f:
            if len(f.read().splitlines()) >= 4:
                break
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    expect(p.returncode == 0, f"SIGINT: exit {p.returncode}: {err}")
    expect(out == "", "logfile mode printed to stdout")
    with open(log) as f:
        lines = f.read().splitlines()
    expect(lines[0] == "kept line", "the logfile was not appended to")
    expect(len(lines) >= 4, f"only {len(lines)} lines in the log")
    for line in lines[1:]:
        expect(parse_tegrastats(line)["ram"], f"log line does not parse: {line!r}")
    # SIGTERM too.
    p = subprocess.Popen([ARGS.edgemon, "--connect", "unix:" + b.sock, "tegrastats",
                          "--interval", "200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # The first line shows the stream (and its signal handling) is up; a
    # fixed sleep raced a slow start.
    first = p.stdout.readline()
    expect(first != b"", "tegrastats printed nothing before SIGTERM")
    p.terminate()
    p.communicate(timeout=10)
    expect(p.returncode == 0, f"SIGTERM: exit {p.returncode}")


def check_query_csv(b, connect=None):
    r = b.edgemon("query", "--last", "5s", "--format", "csv", "--channels", "rail/*/power",
                  connect=connect)
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    expect(len(rows) >= 5, f"query --last 5s: {len(rows)} rows at a 200 ms interval")
    now_ns = time.time_ns()
    for row in rows:
        t = int(row["realtime_ns"])
        expect(now_ns - 8e9 <= t <= now_ns + 1e9, f"row at {t} outside the last 5 s")
        for rail in b.rails():
            v = row.get(f"rail/{rail}/power (mW)")  # the unit in the header
            expect(v not in (None, ""), f"no {rail} in a row")
            lo, hi = b.rail_bounds(rail)
            expect(lo <= int(v) <= hi, f"{rail} {v} outside [{lo:.0f}, {hi:.0f}]")
    r = b.edgemon("query", "--last", "5s", "--step", "1s", "--format", "json",
                  "--channels", "memory/ram/total", connect=connect)
    j = json.loads(r.stdout)
    expect(j["series"] and j["series"][0]["channel"] == "memory/ram/total", "no ram series")
    total = fixture_meminfo_kib(b.board, "MemTotal")
    for bucket in j["series"][0]["buckets"]:
        expect(bucket["min"] == bucket["max"] == total, f"ram bucket {bucket} != {total}")
    table = b.edgemon("query", "--last", "3s", "--channels", "memory/ram/total").stdout
    expect(re.search(r"GiB|MiB", table), "query table without units")
    # --step: one unit per row, named in the UNIT column; min/avg/max bare numbers in it.
    table = b.edgemon("query", "--last", "3s", "--step", "1s", "--channels", "rail/*/power",
                      connect=connect).stdout
    lines = table.splitlines()
    expect(lines and lines[0].split()[:6] == ["TIME", "CHANNEL", "UNIT", "MIN", "AVG", "MAX"],
           f"step header {lines[:1]}")
    for line in lines[1:]:
        cells = line.split()
        expect(cells[-5] == "W" and all(re.fullmatch(r"-?[0-9]+\.[0-9]{3}", x) for x in cells[-4:-1]),
               f"step row mixes units: {line!r}")


def check_query_step_on_a_young_daemon(b):
    """A daemon younger than the range: buckets at the asked step from its raw
    frames, none dated before its first frame (not a rollup row per minute)."""
    r = b.edgemon("query", "--since", "-3m", "--step", "1s", "--format", "json",
                  "--channels", f"rail/{b.rails()[0]}/power")
    buckets = json.loads(r.stdout)["series"][0]["buckets"]
    times = [x["t_ns"] for x in buckets]
    expect(len(buckets) >= 2, f"{len(buckets)} buckets")
    expect(all(t >= b.started_ns for t in times),
           f"buckets dated before the daemon started ({b.started_ns}): {times[:3]}")
    expect(all(1 <= x["count"] <= 6 for x in buckets),
           f"1 s buckets of 200 ms frames hold 5 values: {[x['count'] for x in buckets]}")
    # Each dated at its start or its first frame: about 1 s apart, not a minute.
    expect(all(0 < t2 - t1 < 2_000_000_000 for t1, t2 in zip(times, times[1:])),
           f"buckets not at the 1 s step: {times}")


def check_intervals_faster_than_frames(b):
    """A second edgemond on the same board at 1000 ms frames: `tegrastats
    --interval 500` prints a line every 500 ms (a live-rate lease), and
    `watch --interval 500` frames are 500 ms apart, never closer."""
    d = os.path.join(b.dir, "slow")
    os.makedirs(d, exist_ok=True)
    sock = os.path.join(d, "edgemond.sock")
    config = os.path.join(d, "edgemond.toml")
    with open(config, "w") as f:
        f.write("[store]\ncommit_interval_ms = 200\n")
    root = b.cmd[b.cmd.index("--root") + 1]
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    with open(os.path.join(d, "edgemond.log"), "w") as log:
        daemon = subprocess.Popen([ARGS.edgemond, "--config", config, "--root", root, "--db",
                                   os.path.join(d, "edgemon.db"), "--listen", "unix:" + sock,
                                   "--interval-ms", "1000"],
                                  stdout=subprocess.DEVNULL, stderr=log, env=env)
        try:
            deadline = time.time() + 20
            while not os.path.exists(sock):
                expect(daemon.poll() is None and time.time() < deadline, "edgemond did not start")
                time.sleep(0.05)
            time.sleep(1.2)  # a stored frame or two
            # tegrastats: the arrival times of 9 lines.
            p = subprocess.Popen([ARGS.edgemon, "--connect", "unix:" + sock, "tegrastats",
                                  "--interval", "500", "--count", "9"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            arrivals = []
            for line in p.stdout:
                expect(parse_tegrastats(line.rstrip("\n"))["ram"], f"bad line {line!r}")
                arrivals.append(time.monotonic())
            p.wait(timeout=30)
            expect(len(arrivals) == 9, f"tegrastats --count 9 printed {len(arrivals)} lines")
            gaps = sorted(b2 - a for a, b2 in zip(arrivals[1:], arrivals[2:]))
            # 500 ms lines, not the 1000 ms frames: the median gap is nearer 500.
            median = gaps[len(gaps) // 2]
            expect(median < 0.75, f"tegrastats --interval 500 on 1000 ms frames: median gap "
                   f"{median * 1000:.0f} ms (gaps {[round(g * 1000) for g in gaps]})")
            # watch --json: the frames' own times are 500 ms apart, never closer
            # (less a wake-up's lateness), never a frame period further.
            r = b.edgemon("watch", "--json", "--interval", "500ms", "--count", "8",
                          connect="unix:" + sock)
            times = [json.loads(line)["boottime_ns"] for line in r.stdout.strip().splitlines()]
            expect(len(times) == 8, f"watch --count 8 printed {len(times)} lines")
            dts = [(b2 - a) / 1e6 for a, b2 in zip(times[1:], times[2:])]
            expect(all(450 <= dt < 1000 for dt in dts), f"watch --interval 500 gaps (ms): {dts}")
            expect(sorted(dts)[len(dts) // 2] < 750, f"watch --interval 500 gaps (ms): {dts}")
        finally:
            stop_process(daemon)


def stored_frames(db):
    """(frames in the store's committed state, the newest one's realtime_ns)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("SELECT count(*), max(realtime_ns) FROM frames").fetchone()
    finally:
        con.close()


def check_query_reads_queued_frames_without_a_commit(b):
    """A daemon at its default commit interval (five minutes beside the
    flight recorder): `query` and a summary (`attach`) answer with the frames
    sampled since the last commit, read from the writer's memory, and commit
    nothing for it (a client polling every few seconds used to cost a commit
    each)."""
    d = os.path.join(b.dir, "queued")
    os.makedirs(d, exist_ok=True)
    sock, db = os.path.join(d, "edgemond.sock"), os.path.join(d, "edgemon.db")
    root = b.cmd[b.cmd.index("--root") + 1]
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    with open(os.path.join(d, "edgemond.log"), "w") as log:
        daemon = subprocess.Popen([ARGS.edgemond, "--root", root, "--db", db, "--listen",
                                   "unix:" + sock, "--interval-ms", "200"],
                                  stdout=subprocess.DEVNULL, stderr=log, env=env)
        try:
            deadline = time.time() + 20
            while not os.path.exists(sock) or not os.path.exists(db):
                expect(daemon.poll() is None and time.time() < deadline, "edgemond did not start")
                time.sleep(0.05)
            while stored_frames(db)[0] == 0:  # the channels and first frame, at start
                expect(time.time() < deadline, "no frame committed at start")
                time.sleep(0.05)
            for poll in range(3):
                time.sleep(1.5)
                before, newest = stored_frames(db)
                r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + sock, "query", "--last",
                                    "1m", "--format", "csv"], capture_output=True, text=True,
                                   timeout=30)
                expect(r.returncode == 0, f"query: {r.stderr}")
                rows = list(csv.DictReader(io.StringIO(r.stdout)))
                after = stored_frames(db)[0]
                expect(after == before, f"poll {poll}: the query committed "
                       f"{after - before} frames")
                times = [int(row["realtime_ns"]) for row in rows]
                expect(times == sorted(set(times)), f"poll {poll}: times out of order or twice")
                queued = [t for t in times if t > newest]
                # 1.5 s at 200 ms frames since the last poll's check.
                expect(len(queued) >= 5 * (poll + 1),
                       f"poll {poll}: {len(queued)} frames newer than the committed "
                       f"{newest} of {len(rows)}")
                # The daemon is younger than the minute: every committed frame too.
                expect(len(rows) == before + len(queued),
                       f"poll {poll}: {len(rows)} rows for {before} committed frames and "
                       f"{len(queued)} newer")
                total = str(fixture_meminfo_kib(b.board, "MemTotal"))
                expect(all(row.get("memory/ram/total (KiB)") == total for row in rows[-5:]),
                       f"queued frames without their values: {rows[-1]}")
                # A series: its last second's step holds queued frames.
                r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + sock, "query", "--last",
                                    "1m", "--step", "1s", "--channels", "memory/ram/total",
                                    "--format", "json"], capture_output=True, text=True,
                                   timeout=30)
                expect(r.returncode == 0, f"query --step: {r.stderr}")
                buckets = json.loads(r.stdout)["series"][0]["buckets"]
                expect(stored_frames(db)[0] == before, f"poll {poll}: query --step committed")
                steps = [int(bk["t_ns"]) for bk in buckets]
                expect(steps and steps[-1] > newest,
                       f"poll {poll}: no step after the committed {newest}: {steps[-3:]}")
                # A summary ("energy so far"): every frame of the minute counted
                # (the committed ones and those since), nothing committed.
                r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + sock, "attach",
                                    "--last", "1m", "--json"], capture_output=True, text=True,
                                   timeout=30)
                expect(r.returncode == 0, f"attach: {r.stderr}")
                samples = json.loads(r.stdout)["samples"]
                expect(stored_frames(db)[0] == before, f"poll {poll}: attach committed")
                expect(samples >= len(rows),
                       f"poll {poll}: the summary counted {samples} frames, the query "
                       f"read {len(rows)}")
        finally:
            daemon.terminate()
            daemon.wait(timeout=25)


def check_errors(b):
    nowhere = os.path.join(b.dir, "nothing.sock")
    for cmd in (["now"], ["sensors"], ["watch", "--count", "1"], ["tegrastats", "--count", "1"],
                ["query", "--last", "1m"]):
        r = b.edgemon(*cmd, connect="unix:" + nowhere, check=False, timeout=20)
        expect(r.returncode == 69, f"{cmd}: unreachable daemon: exit {r.returncode}")
        lines = r.stderr.strip().splitlines()
        expect(len(lines) == 1 and "cannot reach the daemon" in lines[0] and nowhere in lines[0],
               f"{cmd}: message {r.stderr!r}")
        expect(r.stdout == "", f"{cmd}: printed output without a daemon")
    check_first_contact(b, nowhere)


def check_first_contact(b, nowhere):
    """Each first-contact failure in one line: what happened, what to do next."""
    def one_line(connect, code, *parts):
        r = b.edgemon("now", connect=connect, check=False, timeout=20)
        lines = r.stderr.strip().splitlines()
        expect(r.returncode == code and len(lines) == 1 and all(p in lines[0] for p in parts),
               f"edgemon --connect {connect} now: exit {r.returncode}, {r.stderr!r}, want "
               f"{code} and {parts}")
    # No daemon: no socket at the path.
    one_line("unix:" + nowhere, 69, "no socket there", "start edgemond",
             "sudo systemctl start edgemond", "EDGEMON_CONNECT")
    # A path that is no socket.
    plain = os.path.join(b.dir, "not-a-socket")
    with open(plain, "w") as f:
        f.write("x")
    one_line("unix:" + plain, 69, "not a socket", "EDGEMON_CONNECT")
    # A socket nothing listens on (a daemon that died).
    import socket
    stale = os.path.join(b.dir, "stale.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(stale)
    srv.close()
    one_line("unix:" + stale, 69, "nothing listens on that socket", "start edgemond")
    # A wrong TCP address.
    one_line(f"127.0.0.1:{free_port()}", 69, "nothing listens on that host and port",
             "EDGEMON_CONNECT")
    # An older daemon: a gRPC server that implements none of the calls.
    try:
        import grpc
    except ImportError:
        grpc = None
    expect(grpc is not None, "python3-grpcio is needed for the old-daemon check")
    from concurrent import futures
    old = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    old_sock = os.path.join(b.dir, "old.sock")
    old.add_insecure_port("unix:" + old_sock)
    old.start()
    try:
        one_line("unix:" + old_sock, 1, "older than this client", "upgrade edgemond")
    finally:
        old.stop(0)


def check_bad_flags(b):
    port = free_port()
    r = b.edgemon("now", connect=f"127.0.0.1:{port}", check=False)
    expect(r.returncode == 69, f"closed TCP port: exit {r.returncode}")
    for cmd in (["now", "--bogus"], ["watch", "--interval", "abc"], ["query", "--format", "xml"],
                ["query", "--last", "5m", "--since", "-1h"], ["frobnicate"]):
        r = b.edgemon(*cmd, check=False)
        expect(r.returncode == 2, f"{cmd}: exit {r.returncode}, want 2")
        expect(r.stderr.strip(), f"{cmd}: no message")
    r = b.edgemon("watch", "--channels", "gpu/nosuch/*", "--count", "1", check=False)
    expect(r.returncode == 2 and "gpu/nosuch/*" in r.stderr, f"unknown channel: {r.returncode}")
    # A bare --interval is seconds, as in watch(1): 0.4 is 400 ms, not 0.4 ms
    # (the first line is the newest frame at once; the interval runs from it).
    r = b.edgemon("watch", "--json", "--interval", "0.4", "--count", "4")
    times = [json.loads(line)["boottime_ns"] for line in r.stdout.strip().splitlines()]
    expect(len(times) == 4 and all(t2 - t1 >= 300_000_000 for t1, t2 in zip(times[1:], times[2:])),
           f"watch --interval 0.4 frame times {times}")
    # Below the daemon's floor: refused with the floor, never clamped in silence.
    for value in ("5ms", "0.005"):
        r = b.edgemon("watch", "--interval", value, "--count", "1", check=False)
        expect(r.returncode == 2 and "below the daemon's floor of 10ms" in r.stderr,
               f"watch --interval {value}: exit {r.returncode} {r.stderr!r}")
    r = b.edgemon("tegrastats", "--interval", "5", "--count", "1", check=False)
    expect(r.returncode == 2 and "below the daemon's floor of 10ms" in r.stderr
           and "milliseconds" in r.stderr, f"tegrastats --interval 5: {r.stderr!r}")
    r = b.edgemon("query", "--since", "yesterday-ish", check=False)
    expect(r.returncode == 65 and "bad time" in r.stderr, f"bad --since: {r.returncode}")
    # A time without a zone is UTC whatever TZ says (here 5 hours east of UTC,
    # printed back in local time), in both spellings.
    for spelling in ("2023-11-14 22:13:05", "2023-11-14 22:13:5"):
        r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + b.sock, "query", "--since",
                            spelling, "--until", "2023-11-14T22:13:20Z"], capture_output=True,
                           text=True, timeout=30, env=dict(os.environ, TZ="XXX-5"))
        expect("no data between 2023-11-15T03:13:05.000 and 2023-11-15T03:13:20.000"
               in r.stderr, f"--since '{spelling}': {r.returncode} {r.stderr}")


def check_watch_survives_restart(b):
    """watch keeps going across a daemon restart, saying so on stderr."""
    out_path = os.path.join(b.dir, "watch.out")
    with open(out_path, "w") as out:
        p = subprocess.Popen([ARGS.edgemon, "--connect", "unix:" + b.sock, "watch", "--json",
                              "--channels", "memory/*"],
                             stdout=out, stderr=subprocess.PIPE, text=True)

        def lines():
            with open(out_path) as f:
                return [json.loads(x) for x in f.read().splitlines()]

        def wait_lines(n):
            deadline = time.time() + 15
            while len(lines()) < n and time.time() < deadline:
                time.sleep(0.1)
            return len(lines())

        try:
            expect(wait_lines(2) >= 2, "no lines before the restart")
            b.stop_daemon()
            before = len(lines())
            time.sleep(0.5)
            b.start_daemon()
            expect(wait_lines(before + 3) >= before + 3, "no lines after the daemon came back")
        finally:
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=10)
    expect(p.returncode == 0, f"watch exit {p.returncode}: {err}")
    expect("lost the daemon" in err and "reconnected" in err, f"stderr: {err!r}")
    total = fixture_meminfo_kib(b.board, "MemTotal")
    expect(all(x["values"]["memory/ram/total"] == total for x in lines()), "ram total changed")


def check_tcp(b):
    target = f"127.0.0.1:{b.port}"
    out = json.loads(b.edgemon("now", "--json", connect=target).stdout)
    expect(out["values"]["memory/ram/total"] == fixture_meminfo_kib(b.board, "MemTotal"),
           "TCP now: ram total")
    check_tegrastats(b, connect=target)
    check_query_csv(b, connect=target)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgemon", required=True)
    ap.add_argument("--edgemond", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--fixtures", required=True)
    ARGS = ap.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="edgemon-cli-") as tmp:
        for board in ("agx-orin", "jetson-nano", "agx-orin-r39", "agx-thor-r38"):
            try:
                b = Board(tmp, board)
            except Exception as e:  # noqa: BLE001
                checks.failed.append(f"{board} start")
                print(f"FAIL {board} start: {e}", flush=True)
                continue
            try:
                checks.run(f"{board} now --json", check_now_json, b)
                checks.run(f"{board} now table", check_now_table, b)
                checks.run(f"{board} sensors", check_sensors, b)
                if fixture_oc_count(board):
                    checks.run(f"{board} events and diagnostics", check_events, b)
                checks.run(f"{board} watch", check_watch, b)
                checks.run(f"{board} tegrastats", check_tegrastats, b)
                checks.run(f"{board} tegrastats --logfile + signals", check_tegrastats_logfile, b)
                checks.run(f"{board} intervals faster than frames",
                           check_intervals_faster_than_frames, b)
                checks.run(f"{board} query", check_query_csv, b)
                if board == "agx-orin":
                    checks.run(f"{board} query and summary read queued frames without a commit",
                               check_query_reads_queued_frames_without_a_commit, b)
                checks.run(f"{board} errors and exit codes", check_errors, b)
                checks.run(f"{board} bad flags", check_bad_flags, b)
                checks.run(f"{board} query --step on a young daemon",
                           check_query_step_on_a_young_daemon, b)
                checks.run(f"{board} over loopback TCP", check_tcp, b)
                checks.run(f"{board} watch across a daemon restart",
                           check_watch_survives_restart, b)
            finally:
                b.stop()
    print(f"{checks.passed} passed, {len(checks.failed)} failed", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
