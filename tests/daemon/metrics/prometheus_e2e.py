#!/usr/bin/python3
"""A real Prometheus server scrapes edgemond's /metrics on three simulated boards.

Three edgemon-sim boards (agx-orin, orin-nano, x86-laptop), each with its own
edgemond (--metrics-listen 127.0.0.1:PORT, gRPC on a unix socket in a temp
dir), and Debian's `prometheus` on loopback scraping the three every second.
Checks, against truths that do not come from the exposition:

  * rail power and temperatures in Prometheus match the simulator's analytic
    waveforms (the .edgemon-sim.json sidecar) at the time of the frame each
    scrape carried (edgemon_last_frame_timestamp_seconds from the same scrape);
  * increase(edgemon_rail_energy_joules_total[W]) matches the daemon's own
    Summarize (gRPC, python3-grpcio) of the same window within 2 %, and the
    simulator's exact energy integral within 2 %. The window is aligned to two
    scrapes (see energy_check), so increase() does not extrapolate;
  * promtool check metrics accepts a scraped body; unknown paths get 404,
    POST gets 405;
  * 50 threads scraping as fast as they can for 5 s leave the daemons'
    edgemon_deadline_misses_total unchanged.

  prometheus_e2e.py --edgemond B/daemon/edgemond --sim B/daemon/sim/edgemon-sim \
      --prometheus /usr/bin/prometheus --promtool /usr/bin/promtool \
      --protoc protoc --plugin /usr/bin/grpc_python_plugin --proto-dir proto \
      --fixtures tests/fixtures

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import importlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from harness import Checks, expect, free_port, start_sim, stop_process  # noqa: E402 (shared by the e2e scripts)

ARGS = None
BOARDS = ["agx-orin", "orin-nano", "x86-laptop"]
INTERVAL_MS = 100
SIM_RATE_HZ = 20
SIM_PERIOD_S = 10


def http(url, method="GET", headers=None, timeout=5):
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def generate_stubs(out):
    os.makedirs(out)
    subprocess.run([ARGS.protoc, f"--python_out={out}", f"--grpc_out={out}",
                    f"--plugin=protoc-gen-grpc={ARGS.plugin}", "-I", ARGS.proto_dir,
                    os.path.join(ARGS.proto_dir, "edgemon/v1/edgemon.proto")], check=True)
    sys.path.insert(0, out)
    return (importlib.import_module("edgemon.v1.edgemon_pb2"),
            importlib.import_module("edgemon.v1.edgemon_pb2_grpc"))


class Board:
    """One edgemon-sim process and the edgemond that monitors its tree."""

    def __init__(self, tmp, name, seed, pb, pb_grpc):
        import grpc
        self.name = name
        self.root = os.path.join(tmp, name)
        self.port = free_port()
        self.log = open(os.path.join(tmp, f"{name}.log"), "w")
        self.sim, self.model = start_sim(
            ARGS.sim, name, self.root, ARGS.fixtures, self.log,
            ["--rate-hz", str(SIM_RATE_HZ), "--period-s", str(SIM_PERIOD_S), "--seed", str(seed)])
        self.sock = os.path.join(tmp, f"{name}.sock")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.daemon = subprocess.Popen(
            [ARGS.edgemond, "--root", self.root, "--db", os.path.join(tmp, f"{name}.db"),
             "--listen", "unix:" + self.sock, "--interval-ms", str(INTERVAL_MS),
             "--metrics-listen", f"127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 20
        while True:
            try:
                if http(self.url())[0] == 200:
                    break
            except OSError:
                pass
            if self.daemon.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"edgemond for {name} did not serve /metrics")
            time.sleep(0.05)
        self.channel = grpc.insecure_channel("unix:" + self.sock)
        self.stub = pb_grpc.TelemetryStub(self.channel)
        self.pb = pb

    def url(self, path="/metrics"):
        return f"http://127.0.0.1:{self.port}{path}"

    def target(self):
        return f"127.0.0.1:{self.port}"

    def summarize(self, from_ns, to_ns):
        req = self.pb.SummarizeRequest(time=self.pb.TimeRange(from_ns=from_ns, to_ns=to_ns))
        return self.stub.Summarize(req, timeout=10)

    # The simulator's truth (waveform.h), with t in seconds since its start.
    def t_of(self, realtime_s):
        return realtime_s - self.model["start_realtime_ns"] / 1e9

    def rail_power_mw(self, rail, t):
        r = self.model["rails"][rail]
        w = 2 * math.pi / self.model["period_s"]
        return r["base_mw"] * (1 + r["amplitude"] * math.sin(w * t + r["phase"]))

    def rail_energy_mj(self, rail, t0, t1):
        r = self.model["rails"][rail]
        p = self.model["period_s"]
        w = 2 * math.pi / p
        return r["base_mw"] * ((t1 - t0) - r["amplitude"] * p / (2 * math.pi) *
                               (math.cos(w * t1 + r["phase"]) - math.cos(w * t0 + r["phase"])))

    def deadline_misses(self):
        for line in http(self.url())[2].splitlines():
            if line.startswith("edgemon_deadline_misses_total "):
                return int(line.split()[1])
        raise AssertionError("no edgemon_deadline_misses_total in the exposition")

    def stop(self):
        for p in (self.daemon, self.sim):
            stop_process(p)
        self.channel.close()
        self.log.close()
        return self.daemon.returncode


class Prometheus:
    def __init__(self, tmp, boards):
        self.port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 800ms\n"
                    "scrape_configs:\n")
            for b in boards:
                f.write(f"  - job_name: edgemon-{b.name}\n"
                        f"    static_configs:\n"
                        f"      - targets: ['{b.target()}']\n"
                        f"        labels: {{board: '{b.name}'}}\n")
        self.log = open(os.path.join(tmp, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [ARGS.prometheus, f"--config.file={cfg}",
             f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=self.log)
        deadline = time.time() + 60
        while True:
            try:
                if http(f"http://127.0.0.1:{self.port}/-/ready")[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("prometheus did not become ready")
            time.sleep(0.2)

    def query(self, q, at=None):
        params = {"query": q}
        if at is not None:
            params["time"] = f"{at:.3f}"
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(params)
        status, _, body = http(url, timeout=10)
        doc = json.loads(body)
        if status != 200 or doc.get("status") != "success":
            raise AssertionError(f"query {q!r}: HTTP {status}: {body[:300]}")
        return doc["data"]["result"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def frame_times(prom, board, at, window="15s"):
    """scrape timestamp -> frame realtime (s) of every scrape in the window."""
    res = prom.query(f'edgemon_last_frame_timestamp_seconds{{board="{board.name}"}}[{window}]', at)
    expect(len(res) == 1, f"{board.name}: {len(res)} frame timestamp series")
    return {round(float(ts), 3): float(v) for ts, v in res[0]["values"]}


def within_truth(board, fn, frame_s, tol_abs, tol_rel):
    """fn(t) over the interval in which the frame's value was written: the
    simulator steps at SIM_RATE_HZ, and a rail's value may be up to one step
    old when the daemon reads it (RAPL power is the counter's slope over one
    frame)."""
    t = board.t_of(frame_s)
    span = INTERVAL_MS / 1000 + 2 / SIM_RATE_HZ
    vals = [fn(t - span + span * k / 20) for k in range(21)] + [fn(t + 0.01)]
    lo, hi = min(vals), max(vals)
    return lo - tol_abs - tol_rel * abs(lo), hi + tol_abs + tol_rel * abs(hi)


def check_rails(prom, board, at):
    frames = frame_times(prom, board, at)
    res = prom.query(f'edgemon_rail_power_watts{{board="{board.name}"}}[15s]', at)
    rails = {r["metric"]["rail"]: r["values"] for r in res}
    # Every simulated rail that has a power channel is there.
    want = set(board.model["rails"])
    expect(want & set(rails), f"{board.name}: none of the simulated rails {sorted(want)} "
                              f"in Prometheus ({sorted(rails)})")
    checked = 0
    late = []  # RAPL frames whose counter saw one simulator step more or less
    for rail, values in rails.items():
        if rail not in board.model["rails"]:
            continue
        rapl = board.model["rails"][rail].get("source") == "rapl"
        for ts, v in values:
            frame_s = frames.get(round(float(ts), 3))
            expect(frame_s is not None, f"{board.name}/{rail}: no frame time for scrape {ts}")
            # RAPL power is the slope of a counter the simulator bumps at
            # SIM_RATE_HZ, over one frame: allow 5 % for that quantisation.
            rel = 0.05 if rapl else 0.01
            lo, hi = within_truth(board, lambda t: board.rail_power_mw(rail, t), frame_s, 2, rel)
            mw = float(v) * 1000
            where = f"{board.name}/{rail}: {mw:.1f} mW at frame {frame_s:.3f}"
            checked += 1
            if lo <= mw <= hi:
                continue
            # A simulator running late on a loaded machine puts one step of
            # energy more or less into a frame (a frame spans a few steps):
            # allowed for a few frames, never more than one step's worth.
            step = (1000 / SIM_RATE_HZ) / INTERVAL_MS
            lo2, hi2 = within_truth(board, lambda t: board.rail_power_mw(rail, t), frame_s, 2,
                                    rel + step)
            expect(rapl and lo2 <= mw <= hi2,
                   f"{where} outside the waveform's [{lo:.1f}, {hi:.1f}]")
            late.append(where)
    expect(checked >= 10, f"{board.name}: only {checked} rail samples checked")
    expect(len(late) * 10 <= checked,
           f"{board.name}: {len(late)} of {checked} RAPL samples off by a simulator step: {late}")
    if late:
        print(f"  {board.name}: {len(late)} RAPL samples off by one simulator step: {late}")
    print(f"  {board.name}: {checked} rail power samples match the waveforms "
          f"({sorted(set(rails) & want)})")


def check_temps(prom, board, at):
    frames = frame_times(prom, board, at)
    res = prom.query(f'edgemon_temperature_celsius{{board="{board.name}"}}[15s]', at)
    zones = {r["metric"]["zone"]: r["values"] for r in res}
    sims = {w["name"]: w for w in board.model["temps_mc"].values()}
    expect(sims, f"{board.name}: the simulator moves no temperature")
    missing = set(sims) - set(zones)
    expect(not missing, f"{board.name}: simulated zones missing in Prometheus: {sorted(missing)}")
    checked = 0
    for zone, w in sims.items():
        def temp_mc(t, w=w):
            return w["mean"] + w["amplitude"] * math.sin(2 * math.pi * t / w["period_s"] +
                                                         w["phase"])
        for ts, v in zones[zone]:
            frame_s = frames[round(float(ts), 3)]
            lo, hi = within_truth(board, temp_mc, frame_s, 2, 0)
            mc = float(v) * 1000
            expect(lo <= mc <= hi, f"{board.name}/{zone}: {mc:.0f} m°C at frame {frame_s:.3f} "
                                   f"outside [{lo:.0f}, {hi:.0f}]")
            checked += 1
    print(f"  {board.name}: {checked} temperature samples match ({len(sims)} zones)")


def energy_check(prom, board, at, report):
    """increase() over a window whose edges are two scrapes vs Summarize.

    Prometheus 2.x range selectors include both edges, and increase()
    extrapolates only the distance between the first/last sample and the
    range's edges; with the range [t_first, t_last] that distance is 0, so
    increase() is exactly v_last - v_first, the energy between the two frames
    those scrapes carried. The daemon's Summarize of [frame_first, frame_last]
    interpolates its stored counter at exactly those frame times.
    """
    res = prom.query(f'edgemon_rail_energy_joules_total{{board="{board.name}"}}[25s]', at)
    expect(res, f"{board.name}: no energy counter in Prometheus")
    # The board's input rail if it has one, else the simulated rail with the most power.
    res.sort(key=lambda r: (r["metric"].get("input") != "true",
                            -board.model["rails"].get(r["metric"]["rail"], {}).get("base_mw", 0)))
    series = res[0]
    rail = series["metric"]["rail"]
    values = series["values"]
    expect(len(values) >= 15, f"{board.name}/{rail}: {len(values)} scrapes in 25 s")
    frames = frame_times(prom, board, at, "25s")
    ts0, v0 = float(values[0][0]), float(values[0][1])
    ts1, v1 = float(values[-1][0]), float(values[-1][1])
    width_ms = round((ts1 - ts0) * 1000)
    sel = f'edgemon_rail_energy_joules_total{{board="{board.name}",rail="{rail}"}}'
    inc = prom.query(f"increase({sel}[{width_ms}ms])", ts1)
    expect(len(inc) == 1, f"increase() returned {len(inc)} series")
    inc_j = float(inc[0]["value"][1])
    f0, f1 = frames[round(ts0, 3)], frames[round(ts1, 3)]
    summary = board.summarize(int(f0 * 1e9), int(f1 * 1e9))
    mj = {r.name: r.energy_mj for r in summary.rails}
    expect(rail in mj, f"Summarize has no rail {rail}: {sorted(mj)}")
    daemon_j = mj[rail] / 1000
    rel = abs(inc_j - daemon_j) / daemon_j
    expect(rel < 0.02, f"{board.name}/{rail}: increase() {inc_j:.4f} J vs Summarize "
                       f"{daemon_j:.4f} J ({rel:.2%})")
    line = (f"  {board.name}/{rail}: increase over {width_ms} ms = {inc_j:.4f} J, "
            f"counter difference {v1 - v0:.4f} J, Summarize {daemon_j:.4f} J ({rel:.3%})")
    if rail in board.model["rails"]:
        truth_j = board.rail_energy_mj(rail, board.t_of(f0), board.t_of(f1)) / 1000
        rel_truth = abs(inc_j - truth_j) / truth_j
        line += f", simulator {truth_j:.4f} J ({rel_truth:.3%})"
        expect(rel_truth < 0.02, f"{board.name}/{rail}: increase() {inc_j:.4f} J vs the "
                                 f"simulator's {truth_j:.4f} J ({rel_truth:.2%})")
    # For the record: a plain increase(x[20s]) at an unaligned time vs the
    # same wall-clock window (extrapolated at both edges, frames lag scrapes).
    plain = prom.query(f"increase({sel}[20s])", at)
    if plain:
        s = board.summarize(int((at - 20) * 1e9), int(at * 1e9))
        plain_mj = {r.name: r.energy_mj for r in s.rails}.get(rail)
        if plain_mj:
            line += (f"; unaligned increase([20s]) {float(plain[0]['value'][1]):.4f} J vs "
                     f"{plain_mj / 1000:.4f} J "
                     f"({abs(float(plain[0]['value'][1]) - plain_mj / 1000) / (plain_mj / 1000):.2%})")
    print(line)
    report.append(line)


def check_promtool(board):
    status, headers, body = http(board.url())
    expect(status == 200, f"HTTP {status}")
    expect(headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
           f"Content-Type {headers.get('Content-Type')}")
    r = subprocess.run([ARGS.promtool, "check", "metrics"], input=body, capture_output=True,
                       text=True)
    expect(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
           f"promtool check metrics: rc {r.returncode}: {r.stdout}{r.stderr}")
    status, headers, body = http(board.url(), headers={
        "Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"})
    expect(status == 200 and body.endswith("# EOF\n"), "OpenMetrics body does not end in # EOF")
    expect(headers.get("Content-Type", "").startswith("application/openmetrics-text"),
           f"OpenMetrics Content-Type {headers.get('Content-Type')}")


def check_bad_requests(board):
    # "/" is the live page (docs/live.md); everything else unknown is 404.
    for path in ("/metric", "/metrics/extra", "/api/v1/query", "/live.js/extra", "/index.html"):
        status, _, _ = http(board.url(path))
        expect(status == 404, f"GET {path}: HTTP {status}, want 404")
    status, headers, _ = http(board.url(), method="POST")
    expect(status == 405, f"POST /metrics: HTTP {status}, want 405")


def check_prometheus_sees_all(prom, boards):
    up = prom.query('up')
    ups = {r["metric"]["board"]: r["value"][1] for r in up}
    for b in boards:
        expect(ups.get(b.name) == "1", f"up{{board={b.name}}} = {ups.get(b.name)}")
    info = prom.query("edgemon_board_info")
    models = {r["metric"]["board"]: r["metric"].get("model") for r in info}
    for b in boards:
        expect(models.get(b.name), f"no edgemon_board_info for {b.name}")
    # The fleet view: hottest zone per board, total input power.
    hottest = prom.query("max by (board) (edgemon_temperature_celsius)")
    expect(len(hottest) == len(boards), f"hottest zone per board: {hottest}")


def check_dashboards(prom, boards):
    """Every PromQL expression of the Grafana dashboards runs on the real
    server (Grafana's variables substituted) and the main panels get data."""
    want_data = {"Rail power", "Temperatures", "Clocks", "Memory", "Total input power per board",
                 "Hottest zone per board", "Energy rate (from the energy counters)"}
    seen = 0
    for name in ("edgemon-board.json", "edgemon-fleet.json"):
        with open(os.path.join(ARGS.dashboards, name)) as f:
            dash = json.load(f)
        names = {v["name"] for v in dash["templating"]["list"]}
        expect("datasource" in names, f"{name}: no datasource variable")
        for panel in dash["panels"]:
            for t in panel["targets"]:
                expr = (t["expr"].replace("$__rate_interval", "4s").replace("$__range", "20s")
                        .replace("$instance", boards[0].target()))
                res = prom.query(expr)
                if panel["title"] in want_data:
                    expect(res, f"{name}: panel {panel['title']!r}: no data for {expr}")
                seen += 1
    print(f"  {seen} dashboard queries ran")


def check_many_scrapers(prom, boards, report):
    before = {b.name: b.deadline_misses() for b in boards}
    stop = time.time() + 5
    lat = []
    errors = []
    lock = threading.Lock()

    def worker(i):
        b = boards[i % len(boards)]
        mine = []
        while time.time() < stop:
            t0 = time.perf_counter()
            try:
                status, _, body = http(b.url(), timeout=10)
                if status != 200 or "edgemon_board_info" not in body:
                    with lock:
                        errors.append(f"HTTP {status}")
            except OSError as e:
                with lock:
                    errors.append(str(e))
            mine.append(time.perf_counter() - t0)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(0.5)
    after = {b.name: b.deadline_misses() for b in boards}
    lat.sort()
    line = (f"  50 scrapers x 5 s: {len(lat)} scrapes ({len(lat) / 5:.0f}/s), latency p50 "
            f"{statistics.median(lat) * 1e3:.2f} ms, p99 {lat[int(len(lat) * 0.99)] * 1e3:.2f} ms; "
            f"deadline misses before {before}, after {after}; errors {len(errors)}")
    print(line)
    report.append(line)
    expect(not errors, f"{len(errors)} failed scrapes, e.g. {errors[:3]}")
    expect(before == after, f"deadline misses changed under load: {before} -> {after}")
    # Prometheus kept scraping meanwhile.
    up = prom.query("min_over_time(up[10s])")
    expect(all(r["value"][1] == "1" for r in up), f"a target went down under load: {up}")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("edgemond", "sim", "prometheus", "promtool", "protoc", "plugin", "proto_dir",
              "fixtures", "dashboards"):
        ap.add_argument("--" + a.replace("_", "-"), required=a not in ("plugin",),
                        default="/usr/bin/grpc_python_plugin" if a == "plugin" else None)
    ARGS = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="edgemon-prom-")
    checks = Checks()
    report = []
    boards = []
    prom = None
    try:
        pb, pb_grpc = generate_stubs(os.path.join(tmp, "stubs"))
        for i, name in enumerate(BOARDS):
            boards.append(Board(tmp, name, i + 1, pb, pb_grpc))
        prom = Prometheus(tmp, boards)
        for b in boards:
            checks.run(f"promtool check metrics ({b.name})", check_promtool, b)
        checks.run("unknown paths get 404, POST 405", check_bad_requests, boards[0])
        # Let Prometheus collect ~27 scrapes of every board.
        time.sleep(28)
        at = time.time() - 0.5
        checks.run("prometheus scrapes the three boards", check_prometheus_sees_all, prom, boards)
        for b in boards:
            checks.run(f"rail power matches the simulator ({b.name})", check_rails, prom, b, at)
            checks.run(f"temperatures match the simulator ({b.name})", check_temps, prom, b, at)
            checks.run(f"increase() of energy vs Summarize ({b.name})", energy_check, prom, b,
                       at, report)
        checks.run("the Grafana dashboards' queries run", check_dashboards, prom, boards)
        checks.run("50 concurrent scrapers leave sampling alone", check_many_scrapers, prom,
                   boards, report)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        checks.failed.append("setup")
    finally:
        if prom:
            prom.stop()
        for b in boards:
            rc = b.stop()
            if rc != 0:
                checks.failed.append(f"edgemond {b.name} exit status {rc}")
        if checks.failed:
            for name in os.listdir(tmp):
                if name.endswith(".log"):
                    with open(os.path.join(tmp, name)) as f:
                        print(f"--- {name}\n{f.read()[-3000:]}")
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
