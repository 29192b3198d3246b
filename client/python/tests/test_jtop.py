"""The jtop compatibility package: shapes from jetson-stats' documentation
(4.2 and later), its documented kind of scripts run unchanged, and the parts
where edgemon does better (true average, named total, own interval)."""
import ast
import csv
import datetime
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import edgemon
from jtop import JtopException, jtop

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
NUM = (int, float)


class Opt(object):
    """A value of these types, or None (edgemon does not know it)."""

    def __init__(self, *types):
        self.types = types


# The properties as jetson-stats documents them (keys, nesting, types, units:
# kHz, kB, mW, mV, mA, C, %). "*": any name; "key?": may be absent.
SCHEMA = {
    "board": {
        "platform": {"Machine": str, "System": str, "Distribution": str, "Release": str,
                     "Python": str},
        "hardware": {"Model": str, "699-level Part Number": str, "P-Number": str,
                     "Module": str, "SoC": str, "CUDA Arch BIN": str, "Serial Number": str,
                     "L4T": str, "Jetpack": str},
        "libraries": {"CUDA": str, "OpenCV": str, "OpenCV-Cuda": bool, "cuDNN": str,
                      "TensorRT": str, "VPI": str, "Vulkan": str},
    },
    "cpu": {
        "total": {"user": Opt(float), "nice": Opt(float), "system": Opt(float),
                  "idle": Opt(float)},
        "cpu": [{"online": bool, "governor": str,
                 "freq": {"min": Opt(int), "max": Opt(int), "cur": Opt(int)},
                 "info_freq": {"min": Opt(int), "max": Opt(int), "cur": Opt(int)},
                 "idle_state": dict, "model": str, "user": Opt(float), "nice": Opt(float),
                 "system": Opt(float), "idle": Opt(float)}],
    },
    "memory": {
        "RAM?": {"tot": int, "used": int, "free": int, "buffers": int, "cached": int,
                 "shared": Opt(int), "lfb": Opt(int)},
        "SWAP?": {"tot": int, "used": int, "cached": Opt(int), "table": dict},
        "EMC?": {"online": bool, "val": Opt(int), "cur": Opt(int), "max": Opt(int),
                 "min": Opt(int)},
    },
    "gpu": {"*": {"type": str,
                  "status": {"railgate": Opt(bool), "tpc_pg_mask": Opt(bool),
                             "3d_scaling": Opt(bool), "load": Opt(float)},
                  "freq": {"governor": str, "cur": Opt(int), "max": Opt(int), "min": Opt(int),
                           "GPC": list},
                  "power_control": str}},
    "engine": {"*": {"*": {"online": bool, "cur": Opt(int), "min?": int, "max?": int,
                           "load": Opt(float)}}},
    "fan": {"*": {"speed": [float], "rpm": [int], "profile": str, "governor": str,
                  "control": str}},
    "temperature": {"*": {"online": bool, "temp": Opt(float)}},
    "power": {
        "rail": {"*": {"online": bool, "type": str, "status": str, "volt": Opt(int),
                       "curr": Opt(int), "power": Opt(int), "avg": Opt(int), "warn?": int,
                       "crit?": int}},
        "tot": {"online": bool, "power": Opt(int), "avg": Opt(int), "name": str,
                "type?": str, "status?": str, "volt?": Opt(int), "curr?": Opt(int),
                "warn?": int, "crit?": int},
    },
    "processes": [[int, str, str, str, Opt(int), Opt(str), Opt(float), Opt(int), int, str]],
    "disk": {"total": float, "used": float, "available": float, "available_no_root": float,
             "unit": str},
    "local_interfaces": {"hostname": str, "interfaces": {"*": str}},
    "uptime": datetime.timedelta,
    "interval": float,
}


def check(value, schema, path):
    if isinstance(schema, Opt):
        assert value is None or isinstance(value, schema.types), (path, value)
    elif isinstance(schema, type):
        ok = isinstance(value, schema) and not (schema is int and isinstance(value, bool))
        if schema is float:
            ok = isinstance(value, NUM) and not isinstance(value, bool)
        assert ok, "%s: %r is not %s" % (path, value, schema.__name__)
    elif isinstance(schema, list):
        assert isinstance(value, list), (path, value)
        if len(schema) == 1:
            for i, v in enumerate(value):
                check(v, schema[0], "%s[%d]" % (path, i))
        else:  # a row of fixed fields
            for row_i, row in []:
                pass
            assert len(value) == len(schema), (path, value)
            for i, (v, s) in enumerate(zip(value, schema)):
                check(v, s, "%s[%d]" % (path, i))
    elif isinstance(schema, dict):
        assert isinstance(value, dict), (path, value)
        if "*" in schema:
            for k, v in value.items():
                assert isinstance(k, str)
                check(v, schema["*"], "%s[%r]" % (path, k))
            return
        required = {k for k in schema if not k.endswith("?")}
        allowed = {k.rstrip("?") for k in schema}
        assert required <= set(value), "%s: missing %s" % (path, required - set(value))
        assert set(value) <= allowed, "%s: unknown %s" % (path, set(value) - allowed)
        for k, v in value.items():
            s = schema[k] if k in schema else schema[k + "?"]
            check(v, s, "%s[%r]" % (path, k))


def test_every_property_has_jtops_documented_shape(board, monkeypatch):
    monkeypatch.setenv("EDGEMON_CONNECT", board.target)
    with jtop(interval=0.2) as jetson:
        assert jetson.ok()
        for name, schema in SCHEMA.items():
            if name == "processes":
                check([p for p in jetson.processes], [schema[0]], name)
                continue
            check(getattr(jetson, name), schema, name)
        assert jetson.interval == 0.2
        s = jetson.stats
        assert isinstance(s["time"], datetime.datetime)
        assert isinstance(s["uptime"], datetime.timedelta)
        snap = edgemon.connect(board.target).latest()
        for i, c in enumerate(snap.cpus):
            assert "CPU%d" % (i + 1) in s
        for k, v in s.items():
            if k.startswith("Temp "):
                assert isinstance(v, float) and -40 < v < 150
            if k.startswith("Power "):
                assert isinstance(v, int)
        # Offline stays offline in jtop's way, never -256 or 0.
        for name, t in jetson.temperature.items():
            assert t["temp"] is None if not t["online"] else t["temp"] != -256
        if snap.nvpmodel_id is not None:
            assert s["nvp model"] == str(jetson.nvpmodel)
            assert jetson.nvpmodel.id == snap.nvpmodel_id


def stats_from_the_properties(jetson):
    """jtop's stats as jetson-stats builds it: the properties flattened (RAM
    and SWAP as fractions of the sample's bytes)."""
    s = jetson._snap
    out = {"uptime": jetson.uptime}
    for i, c in enumerate(jetson.cpu["cpu"]):
        out["CPU%d" % (i + 1)] = int(round(c["user"])) if c["online"] and c["user"] is not None \
            else "OFF"
    m, sw = s.memory, s.swap.get("swap")
    if m is not None and m.total_bytes and m.used_bytes is not None:
        out["RAM"] = m.used_bytes / m.total_bytes
    if sw is not None and sw.total_bytes and sw.used_bytes is not None:
        out["SWAP"] = sw.used_bytes / sw.total_bytes
    emc = jetson.memory.get("EMC")
    if emc is not None and emc["val"] is not None:
        out["EMC"] = emc["val"]
    gpus = jetson.gpu
    for name, g in gpus.items():
        if g["status"]["load"] is not None:
            out["GPU" if len(gpus) == 1 else "GPU " + name] = g["status"]["load"]
    for group in jetson.engine.values():
        for name, d in group.items():
            if d["cur"] is None and "min" not in d and "max" not in d and d["load"] is not None:
                continue  # known by its load alone (NVML's codecs): stats lists clocks
            out[name] = d["cur"] if d["online"] and d["cur"] is not None else "OFF"
    for name, f in jetson.fan.items():
        for i, sp in enumerate(f["speed"]):
            out["Fan %s%d" % (name, i)] = sp
    for name, t in jetson.temperature.items():
        if t["online"]:
            out["Temp %s" % name] = t["temp"]
    p = jetson.power
    for name, r in p["rail"].items():
        if r["online"]:
            out["Power %s" % name] = r["power"]
    if p["tot"].get("power") is not None:
        out["Power TOT"] = p["tot"]["power"]
    if jetson.jetson_clocks is not None:
        out["jetson_clocks"] = "ON" if jetson.jetson_clocks else "OFF"
    if jetson.nvpmodel is not None:
        out["nvp model"] = jetson.nvpmodel.name
    return out


def test_stats_is_the_properties_flattened(board, monkeypatch):
    """stats (read from the frame without decoding it into views) holds what
    the properties of the same sample say, in the same order."""
    monkeypatch.setenv("EDGEMON_CONNECT", board.target)
    pairs = []

    def observer(jetson):  # on the sampling thread: the sample cannot change meanwhile
        got = jetson.stats
        pairs.append(([(k, v) for k, v in got.items() if k != "time"],
                      list(stats_from_the_properties(jetson).items())))
    with jtop(interval=0.1) as jetson:
        jetson.attach(observer)
        while len(pairs) < 3:
            assert jetson.ok()
    for got, want in pairs:
        assert got == want
        assert any(k.startswith("CPU") for k, _ in got)


def test_power_avg_is_the_time_average_and_tot_names_its_rail(nano, monkeypatch):
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    c = edgemon.connect(nano.target)
    with jtop(interval=0.25) as jetson:
        start = jetson._first.realtime_ns
        for _ in range(8):
            assert jetson.ok()
        power = jetson.power
        end = jetson._snap.realtime_ns
        assert power["tot"]["name"] == "VDD_IN"
        assert power["tot"]["power"] == power["rail"]["VDD_IN"]["power"]
        # Truth: the simulator's analytic energy over the client's life.
        want = nano.energy_mj("VDD_IN", start, end) / ((end - start) / 1e9)
        got = power["rail"]["VDD_IN"]["avg"]
        assert abs(got - want) <= 0.01 * want + 1, (got, want)
        s = c.summarize(from_ns=start, to_ns=end)
        vdd = [r for r in s.rails if r.name == "VDD_IN"][0]
        assert abs(got - vdd.avg_power_mw) <= 0.01 * vdd.avg_power_mw + 1


def test_each_client_has_its_own_interval(nano, monkeypatch):
    """Two clients in one process sample on their own schedules: neither ever
    samples sooner than its own interval allows (the k-th sample comes k
    intervals or more after start: the sampler's absolute deadlines, exact
    however loaded the machine), and the fast one is not held to the slow
    one's interval (it takes more samples than a 0.5 s interval could in the
    same time). Counting samples inside a wall-clock second instead is not
    a property of the clients: a sample taken before the count starts, one
    that ends after it and a late one followed by an on-time one put 5 of a
    0.5 s client into one loaded second."""
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    fast, slow = jtop(interval=0.1), jtop(interval=0.5)
    taken = {fast: [], slow: []}  # monotonic time of each sample after start
    for j in (fast, slow):
        j.attach(lambda jetson: taken[jetson].append(time.monotonic()))
    begin = time.monotonic()
    with fast, slow:
        while len(taken[slow]) < 6:
            assert slow.ok()
        n_fast = len(taken[fast])
        end = time.monotonic()
    assert fast.interval == 0.1 and slow.interval == 0.5
    for j in (fast, slow):
        for k, t in enumerate(taken[j], 1):
            assert t >= begin + k * j.interval, (j.interval, k, t - begin)
    assert n_fast > (end - begin) / slow.interval, (n_fast, end - begin)


def test_setters_raise_jtop_exception_at_once(nano, monkeypatch, tmp_path):
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    monkeypatch.setenv("EDGEMON_CONTROL", "unix:" + str(tmp_path / "no-control.sock"))
    with jtop(interval=0.5) as jetson:
        t0 = time.monotonic()
        with pytest.raises(JtopException, match="edgemon-control is off unless"):
            jetson.jetson_clocks = True
        with pytest.raises(JtopException, match="nvpmodel"):
            jetson.nvpmodel = 0
        with pytest.raises(JtopException, match="fan speed"):
            jetson.fan.speed = 100
        with pytest.raises(JtopException):
            jetson.nvpmodel.set_nvpmodel_id(1)
        with pytest.raises(AttributeError):
            jetson.stats = {}
        assert time.monotonic() - t0 < 1.0
        assert jetson.ok()


def test_no_daemon_is_a_jtop_exception(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEMON_CONNECT", "unix:" + str(tmp_path / "none.sock"))
    with pytest.raises(JtopException, match="UNAVAILABLE") as e:
        with jtop():
            pass
    # One line: what happened and what to do next.
    text = str(e.value)
    assert "\n" not in text
    assert "no socket there" in text and "start edgemond" in text, text
    assert "EDGEMON_CONNECT" in text, text


def run_example(board, name, *args):
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60, env=board.env(),
                       cwd=board.tmp)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    return r.stdout


def test_the_logger_script_runs_unchanged_and_power_tot_is_the_input_rail(board, tmp_path):
    out = str(tmp_path / ("log-%s.csv" % board.name))
    run_example(board, "jtop_logger.py", "--file", out, "--samples", "3")
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3
    snap = edgemon.connect(board.target).latest()
    assert "CPU1" in rows[0] and "time" in rows[0] and "uptime" in rows[0]
    inputs = [r for r in snap.rails.values() if r.input]
    if len(inputs) == 1:
        col = "Power " + inputs[0].name
        for row in rows:
            assert row["Power TOT"] == row[col]
    for name, rail in snap.rails.items():
        if rail.power_w is not None:
            assert "Power " + name in rows[0]


def test_the_documented_kind_of_scripts_run_unchanged(board):
    out = run_example(board, "jtop_callback.py", "3")
    assert out.count("'time':") == 3 and "callbacks: 3" in out
    out = run_example(board, "jtop_properties.py")
    for part in ("board", "cpu", "memory", "gpu", "engine", "fan", "temperature", "power",
                 "processes", "disk", "local interfaces"):
        assert "*** %s ***" % part in out
    snap = edgemon.connect(board.target).latest()
    out = run_example(board, "jtop_cpu.py")
    assert out.count("CPU") == len(snap.cpus)
    out = run_example(board, "jtop_memory.py")
    assert ("RAM:" in out) == (snap.memory is not None)
    out = run_example(board, "jtop_engine.py")
    for name in snap.engines:
        assert "/%s:" % name in out
    out = run_example(board, "jtop_fan.py")
    for name in snap.fans:
        assert name + ":" in out
    if snap.fans:
        assert "cannot set the fan speed" in out
    out = run_example(board, "jtop_processes.py")
    assert "processes on the GPU" in out


def start_example(board, name, *args):
    """The example running (unbuffered output), killed after 60 s at the latest."""
    p = subprocess.Popen([sys.executable, "-u", os.path.join(EXAMPLES, name)] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, env=board.env(), cwd=board.tmp)
    guard = threading.Timer(60, p.kill)
    guard.start()
    return p, guard


def interrupt_after(p, guard, marker, count):
    """Sends SIGINT (Ctrl-C) once ``count`` lines holding ``marker`` came out;
    (return code, stdout after those lines, stderr)."""
    seen = 0
    while seen < count:
        line = p.stdout.readline()
        assert line, "the example ended early: %s" % p.stderr.read()
        seen += marker in line
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        guard.cancel()
    return p.returncode, out, err


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".py")))
def test_every_example_says_where_it_connects(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        doc = ast.get_docstring(ast.parse(f.read()))
    assert doc and "$EDGEMON_CONNECT" in doc, doc


def test_the_long_running_examples_stop_cleanly_on_ctrl_c(nano, tmp_path):
    out_csv = str(tmp_path / "ctrl-c.csv")
    p, guard = start_example(nano, "jtop_logger.py", "--file", out_csv)
    rc, out, err = interrupt_after(p, guard, "Log at", 2)
    assert rc == 0 and "Traceback" not in err, err
    assert "Closed with CTRL-C" in out
    with open(out_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 3 and all(r["time"] for r in rows)  # every row whole
    p, guard = start_example(nano, "jtop_callback.py")
    rc, out, err = interrupt_after(p, guard, "'time':", 2)
    assert rc == 0 and "Traceback" not in err, err
    assert int(out.split("callbacks: ")[1]) >= 2
    for name in ("jtop_logger.py", "jtop_callback.py"):
        with open(os.path.join(EXAMPLES, name)) as f:
            assert "Ctrl-C" in ast.get_docstring(ast.parse(f.read()))


def test_the_three_line_energy_example(nano):
    out = run_example(nano, "energy_per_inference.py")
    assert out.strip().endswith("J per inference")
    assert float(out.split()[0]) > 0


def count_calls(monkeypatch, owner, name):
    """A list that grows by one at each call of owner.name (patched for the test)."""
    calls = []
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(owner, name, counted)
    return calls


def test_samples_come_from_one_feed_and_are_decoded_when_read(nano, monkeypatch):
    """Over the unix socket a jtop reads one frame feed (no GetLatest per
    sample), and a sample nobody reads is never decoded: the properties read
    in the 4th observer call decode that sample and the first (the power
    averages') only."""
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    latest = count_calls(monkeypatch, edgemon.Client, "latest")
    decoded = count_calls(monkeypatch, edgemon.Snapshot, "__init__")
    seen = []  # decodes before each observer call, and after the 4th's reads

    def observer(jetson):
        seen.append(len(decoded))
        if len(seen) == 4:
            jetson.stats, jetson.cpu, jetson.power, jetson.memory
            seen.append(len(decoded))
    with jtop(interval=0.1) as jetson:
        jetson.attach(observer)
        while len(seen) < 5:
            assert jetson.ok()
    assert seen[:5] == [0, 0, 0, 0, 2], seen
    assert latest == []


def test_after_a_slow_observer_the_next_sample_is_fresh(nano, monkeypatch):
    """Frames the stream brought while an observer was busy are old once it
    returns: the next sample is a frame sampled after it returned."""
    from edgemon._measure import boottime_ns
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    stamps, returned = [], []

    def slow(jetson):
        stamps.append(jetson._snap.boottime_ns)
        if not returned:
            time.sleep(1.0)  # ten intervals
        returned.append(boottime_ns())
    with jtop(interval=0.1) as jetson:
        jetson.attach(slow)
        while len(stamps) < 3:
            assert jetson.ok()
    assert stamps[1] >= returned[0], (stamps, returned)
    assert stamps[2] > stamps[1]  # and sampling goes on


def test_close_ends_sampling_at_once_whatever_the_interval(nano, monkeypatch):
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    jetson = jtop(interval=60)
    jetson.start()
    t0 = time.monotonic()
    jetson.close()
    assert time.monotonic() - t0 < 5 and not jetson.is_alive()


def test_without_the_daemons_clock_each_sample_is_the_newest_frame(nano, monkeypatch):
    """Where the daemon's CLOCK_BOOTTIME is not this process's (TCP, another
    machine), a jtop asks for the newest frame at each sample's time."""
    from edgemon import _measure
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    monkeypatch.setattr(sys.modules["jtop.jtop"], "boottime_ns",
                        lambda: _measure.boottime_ns() + 3600 * 10**9)
    latest = count_calls(monkeypatch, edgemon.Client, "latest")
    taken = []
    with jtop(interval=0.1) as jetson:
        jetson.attach(lambda j: taken.append(time.monotonic()))
        while len(taken) < 3:
            assert jetson.ok()
        assert jetson._watch is None and isinstance(jetson.stats["time"], datetime.datetime)
    assert len(latest) >= 4  # the first sample's and one per sample


def test_a_daemon_that_stops_sending_is_an_error_not_an_endless_wait(nano, monkeypatch):
    """A stream that stays open but brings nothing (a hung daemon): ok()
    raises after the stall limit instead of waiting for ever."""
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    monkeypatch.setattr(sys.modules["jtop.jtop"], "_STALL_S", 1.0)
    release = threading.Event()
    jetson = jtop(interval=0.1)
    jetson.start()
    try:
        assert jetson.ok()
        jetson._next_frame = lambda: (release.wait(30), None)[1]
        t0 = time.monotonic()
        with pytest.raises(JtopException, match="no sample from edgemond"):
            while jetson.ok():
                pass
        assert time.monotonic() - t0 < 10
        assert not jetson.ok()  # raised once, then False
    finally:
        release.set()
        jetson.close()
