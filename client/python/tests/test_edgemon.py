"""The edgemon package against a real edgemond on simulated boards."""
import ast
import collections
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

import edgemon
from edgemon import _versions

PKG = os.path.dirname(os.path.abspath(edgemon.__file__))
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def same_frame(board, client, tries=40):
    """`edgemon now --json` and client.latest() of the same frame (same seq)."""
    for _ in range(tries):
        j = board.now_json()
        s = client.latest()
        if s.seq == j["seq"]:
            return j, s
        time.sleep(0.01)
    pytest.fail("no common frame between the CLI and latest()")


def test_device_and_channels_agree_with_the_cli(board):
    c = edgemon.connect(board.target)
    d = c.device()
    j = board.now_json()
    assert d.board.model == j["board"]["model"]
    assert d.board.hostname == j["board"]["hostname"]
    assert d.interval_s == pytest.approx(0.1)
    assert d.api_version == 1
    keys = {ch["name"] and "%s/%s/%s" % (ch["kind"], ch["name"], ch["field"])
            for ch in j["channels"]}
    assert {ch.key for ch in c.channels()} == keys
    units = {"%s/%s/%s" % (ch["kind"], ch["name"], ch["field"]): ch["unit"]
             for ch in j["channels"]}
    for ch in c.channels():
        assert ch.unit == units[ch.key]
        assert ch.si_unit and ch.scale > 0


def test_latest_agrees_with_edgemon_now_json(board):
    c = edgemon.connect(board.target)
    j, s = same_frame(board, c)
    want = {k: v for k, v in j["values"].items() if v is not None}
    assert s.raw == want
    for key, v in j["values"].items():
        ch = c.device(refresh=False).by_key()[key]
        if v is None:
            assert s.get(key) is None      # missing is None, never 0
        else:
            assert s.get(key) == pytest.approx(v * ch.scale)


def test_typed_views_in_si_units(board):
    c = edgemon.connect(board.target)
    s = c.latest()
    def si(key, scale):
        raw = s.get_raw(key)
        return None if raw is None else pytest.approx(raw * scale)
    for name, r in s.rails.items():
        assert r.power_w == si("rail/%s/power" % name, 1e-3)
        assert s.get("rail/%s/power" % name) == r.power_w
    inputs = [r for r in s.rails.values() if r.input]
    assert (s.input_rail is not None) == (len(inputs) == 1)
    for name, t in s.temperatures.items():
        assert t == si("thermal/%s/temp" % name, 1e-3)
        short = name.replace("-thermal", "")
        assert s.temperatures[short] == t
    for i, cpu in enumerate(s.cpus):
        assert cpu.name == "cpu%d" % i or cpu.name.startswith("cpu")
        if cpu.load is not None:
            assert 0.0 <= cpu.load <= 1.0
            assert cpu.load == pytest.approx(s.get_raw("cpu/%s/load" % cpu.name) / 1000.0)
        if cpu.freq_hz is not None:
            assert cpu.freq_hz == s.get_raw("cpu/%s/freq" % cpu.name) * 1000
    if s.gpu is not None and s.gpu.freq_hz is not None:
        assert s.gpu.freq_hz == s.get_raw("gpu/%s/freq" % s.gpu.name) * 1000
    if s.memory is not None and s.memory.total_bytes is not None:
        assert s.memory.total_bytes == s.get_raw("memory/ram/total") * 1024
    for name, e in s.engines.items():
        raw = s.get_raw("engine/%s/load" % name)
        assert e.load == (None if raw is None else pytest.approx(raw / 1000.0))
    assert s.get("rail/NO_SUCH_RAIL/power") is None


def test_missing_values_are_none_never_zero(board):
    c = edgemon.connect(board.target)
    keys = [ch.key for ch in c.channels() if not ch.constant]
    one = keys[0]
    s = c.latest(channels=[one])
    assert set(s.raw) <= {one}
    for k in keys[1:]:
        assert s.get(k) is None
    assert all(v is None for k, v in s.to_dict()["values"].items() if k != one)


def test_watch_at_the_clients_own_rate(board):
    c = edgemon.connect(board.target)
    got = []
    w = c.watch(interval=0.25)
    for snap in w:
        got.append(snap)
        if len(got) == 4:
            break
    w.close()
    seqs = [s.seq for s in got]
    assert seqs == sorted(set(seqs))
    gaps = [(b.realtime_ns - a.realtime_ns) / 1e9 for a, b in zip(got, got[1:])]
    assert min(gaps) >= 0.15, gaps   # never every 100 ms frame at a 250 ms interval
    assert all(isinstance(s, edgemon.Snapshot) and s.raw for s in got)


def test_query_raw_and_downsampled(board):
    c = edgemon.connect(board.target)
    time.sleep(0.3)
    rows = c.query(-1.0)
    assert len(rows) >= 5
    assert all(isinstance(r, edgemon.Row) for r in rows)
    assert [r.seq for r in rows] == sorted(r.seq for r in rows)
    key = next(ch.key for ch in c.channels() if ch.kind == "cpu" and ch.field == "load")
    rows = c.query("-2s", channels=[key], step=0.5)
    assert rows and all(isinstance(r, edgemon.BucketRow) and r.key == key for r in rows)
    assert all(r.min <= r.avg <= r.max and 0 <= r.max <= 1 for r in rows)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            rows.to_pandas()
    else:
        assert len(rows.to_pandas()) == len(rows)


def timed_measure(client, seconds):
    """measure() around a sleep; the window covers the sleep and no more than the block."""
    t0 = time.monotonic()
    with client.measure("sleep-%gs" % seconds, rate_hz=200) as m:
        time.sleep(seconds)
    elapsed = time.monotonic() - t0
    r = m.result
    assert seconds - 0.01 <= r.duration_s <= elapsed + 0.01, (r.duration_s, elapsed)
    return r


def check_energy(board, result, tolerance, slack_mj=2.0):
    s = result.summary
    want = set(board.sidecar["rails"])
    assert set(result.energy_j) == want
    for name in want:
        truth = board.energy_mj(name, s.from_ns, s.to_ns)
        got = result.energy_j[name] * 1000
        assert abs(got - truth) <= tolerance * truth + slack_mj, \
            "%s: %.2f mJ, analytic %.2f mJ (%+.3f %%)" % (name, got, truth,
                                                           (got - truth) / truth * 100)


def test_measure_energy_within_1_percent_of_the_analytic_integral(board):
    if not board.sidecar.get("rails"):
        pytest.skip("%s has no rails" % board.name)
    r = timed_measure(edgemon.connect(board.target), 1.5)
    check_energy(board, r, 0.01)
    inputs = [x for x in r.rails.values() if x.input]
    if len(inputs) == 1:
        # The total is the input rail's, never the sum with its sub-rails.
        assert r.total_energy_j == r.energy_j[inputs[0].name]
        assert r.total_energy_j < sum(r.energy_j.values())
        assert r.avg_power_w == pytest.approx(r.total_energy_j / r.duration_s, rel=1e-3)
        assert r.peak_power_w >= r.avg_power_w
        per = r.per_item(300)
        assert per.energy_j == pytest.approx(r.total_energy_j / 300)
        assert per.items_per_j == pytest.approx(300 / r.total_energy_j)
    else:
        assert r.total_energy_j is None and r.avg_power_w is None
        with pytest.raises(edgemon.Error):
            r.per_item(10)
    assert r.temperatures and all(t.min_c <= t.max_c for t in r.temperatures.values())
    for name, shares in r.clock_residency.items():
        assert sum(shares.values()) == pytest.approx(1.0, abs=1e-6)
        assert all(hz >= 1e6 for hz in shares)   # Hz, not kHz
    # Loads: 0..1, the mean never above the peak; every GPU with a load
    # reading in the window is there.
    snap = edgemon.connect(board.target).latest()
    for name, g in snap.gpus.items():
        if g.load is not None:
            assert name in r.loads and r.loads[name].kind == "gpu"
    for name, ld in r.loads.items():
        assert 0 <= ld.mean <= ld.peak <= 1.0, (name, ld)


def test_a_50_ms_window(nano):
    r = timed_measure(edgemon.connect(nano.target), 0.05)
    print("50 ms window: %s" % ", ".join(
        "%s %.2f mJ vs %.2f" % (n, e * 1000, nano.energy_mj(n, r.summary.from_ns,
                                                              r.summary.to_ns))
        for n, e in sorted(r.energy_j.items())))
    check_energy(nano, r, 0.01, slack_mj=2.0)


def count_calls(client, monkeypatch):
    """The requests ``client`` sends from now on, by RPC name (every method
    of its stub wrapped)."""
    calls = collections.defaultdict(list)
    stub = client._stub

    def counted(name, method):
        def call(request, *args, **kwargs):
            calls[name].append(request)
            return method(request, *args, **kwargs)
        return call
    for name, method in list(vars(stub).items()):
        if callable(method):
            monkeypatch.setattr(stub, name, counted(name, method))
    return calls


def test_measure_waits_for_the_closing_frame_without_polling_summaries(nano, monkeypatch):
    """measure().result waits for a frame stored at or after the window's end
    with a targeted Query (then the Watch stream), never a Summarize of a
    time range; what it returns is what the daemon says of the window once
    later frames are stored."""
    c = edgemon.connect(nano.target)
    calls = count_calls(c, monkeypatch)
    r = timed_measure(c, 0.3)
    asked = calls["Summarize"]
    assert [q.WhichOneof("range") for q in asked] == ["window_id"], asked
    assert asked[0].window_id == r.window_id
    assert all(q.limit == 1 and len(q.channels) == 1 for q in calls["Query"]), calls["Query"]
    assert 1 <= len(calls["Query"]) <= 3 and len(calls["Watch"]) <= 1, dict(calls)
    check_energy(nano, r, 0.01, slack_mj=2.0)
    time.sleep(0.3)  # three frames later
    later = edgemon.connect(nano.target).summarize(window_id=r.window_id)
    assert r.samples == later.samples > 0
    assert r.energy_j == {x.name: x.energy_mj / 1000.0 for x in later.rails}

    # A frame still to come: the stream wakes the wait, one Query confirms it.
    calls.clear()
    t = c.daemon_now_ns() + 250 * 10**6
    assert c._wait_stored(t, time.monotonic() + 15)
    assert len(calls["Watch"]) == 1 and len(calls["Query"]) >= 2 and not calls["Summarize"]
    assert c.query("@%d.%09d" % divmod(t, 10**9), limit=1)
    # The deadline passing ends the wait without an error.
    assert not c._wait_stored(c.daemon_now_ns() + 3600 * 10**9, time.monotonic() + 0.3)
    # No daemon: Unavailable, as any call.
    gone = edgemon.connect("unix:/nonexistent/edgemond.sock", timeout=2)
    gone._device = c.device()
    with pytest.raises(edgemon.Unavailable):
        gone._wait_stored(t, time.monotonic() + 15)


def test_a_long_block_keeps_its_leased_window_and_a_dead_holders_closes(nano, monkeypatch):
    from edgemon import _measure
    monkeypatch.setattr(_measure, "_WINDOW_LEASE_S", 1.0)
    c = edgemon.connect(nano.target)
    with c.measure("long") as m:
        with c.mark("inner"):
            time.sleep(2.5)  # several leases: renewed in the background
    assert m.end_ns > m.window.start_ns
    ws = {w.id: w for w in c.windows()}
    assert not ws[m.window_id].abandoned
    assert not ws[m.marks[0].window.id].abandoned
    # A holder that stops renewing (killed) loses its window, as abandoned.
    dead = c.begin_window("dead", lease=0.2)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        w = [w for w in c.windows() if w.id == dead.id][0]
        if w.abandoned:
            break
        time.sleep(0.05)
    assert w.abandoned and w.end_ns >= dead.start_ns


def test_marks_decorator_and_the_record_bundle(nano, tmp_path):
    c = edgemon.connect(nano.target)
    with c.measure("phased", items=40) as m:
        with c.mark("warmup"):
            time.sleep(0.3)
        with c.mark("run"):
            time.sleep(0.4)
    r = m.result
    assert [p.name for p in r.phases] == ["warmup", "run"]
    for p in r.phases:
        assert p.summary is not None and p.end_ns > p.start_ns
        assert p.summary.total_energy_j < r.total_energy_j
    out = str(tmp_path / "py")
    r.save(out)
    # The same window through `edgemon attach --window ID --out`: the same bundle.
    ref = str(tmp_path / "cli")
    nano.cli("attach", "--window", str(r.window_id), "--items", "40", "--out", ref)
    a = json.load(open(os.path.join(out, "summary.json")))
    b = json.load(open(os.path.join(ref, "summary.json")))
    assert set(a) == set(b)
    for key in ("format", "version", "rails", "rail_tree", "total_energy_j", "total_rail",
                "temps", "residency", "clocks_below_max", "thermal_trips", "throttled",
                "samples", "gaps",
                "range", "window", "board", "interval_ms", "energy_rate_hz"):
        assert a[key] == b[key], key
    assert [p["name"] for p in a["phases"]] == [p["name"] for p in b["phases"]]
    for pa, pb in zip(a["phases"], b["phases"]):
        assert pa == pb
    assert a["items"]["energy_j_per_item"] == b["items"]["energy_j_per_item"]
    with open(os.path.join(out, "samples.csv")) as f1, \
            open(os.path.join(ref, "samples.csv")) as f2:
        assert f1.read() == f2.read()
    ta = json.load(open(os.path.join(out, "trace.json")))
    tb = json.load(open(os.path.join(ref, "trace.json")))
    counters = [e for e in ta["traceEvents"] if e["ph"] == "C"]
    assert counters == [e for e in tb["traceEvents"] if e["ph"] == "C"]
    slices = {e["name"] for e in ta["traceEvents"] if e["ph"] == "X"}
    assert {"phased", "warmup", "run"} <= slices

    done = []

    @edgemon.measured("decorated", client=c)
    def work():
        time.sleep(0.2)
        return 7
    assert work() == 7
    res = work.last_result()
    assert res.label == "decorated" and 0.19 <= res.duration_s < 0.5
    assert res.total_energy_j > 0
    done.append(res)


def test_baseline_items_phase_and_stats(nano, tmp_path):
    c = edgemon.connect(nano.target)
    ran = []
    with pytest.raises(edgemon.Error, match="holds only"):
        with c.measure("too-long", baseline="100h"):
            ran.append(1)
    time.sleep(1.2)  # idle history with no window in it
    results = []
    for i in range(3):
        with c.measure("rep", items=50, items_phase="timed",
                       baseline="1s" if i == 0 else None) as m:
            with c.mark("warmup"):
                time.sleep(0.1)
            with c.mark("timed"):
                time.sleep(0.3)
        results.append(m.result)
    with pytest.raises(edgemon.Error, match="overlaps"):
        with c.measure("busy", baseline=1.0):
            ran.append(1)
    assert not ran, "a refused baseline ran the body"
    r = results[0]
    b = r.baseline
    assert abs(b.seconds - 1.0) < 0.01 and set(b.power_w) == set(r.rails)
    for name, w in b.power_w.items():
        truth = nano.energy_mj(name, b.from_ns, b.to_ns) / 1000 / b.seconds
        assert abs(w - truth) <= 0.01 * truth, name
        assert abs(r.energy_above_baseline_j[name] + w * r.duration_s
                   - r.energy_j[name]) < 1e-9, name
    timed = [p for p in r.phases if p.name == "timed"][0].summary
    pi = r.per_item()
    assert pi.phase == "timed"
    assert abs(pi.per_s - 50 / timed.duration_s) < 1e-9
    assert abs(pi.energy_j - timed.total_energy_j / 50) < 1e-12
    assert abs(pi.above_baseline_j * 50 + b.power_w[r.input_rail] * timed.duration_s
               - timed.total_energy_j) < 1e-9
    assert results[1].baseline is None and results[1].per_item().above_baseline_j is None
    st = edgemon.stats(results)
    assert st["n"] == 3
    durations = [x.duration_s for x in results]
    mean = sum(durations) / 3
    sd = (sum((d - mean) ** 2 for d in durations) / 2) ** 0.5
    d = st["duration_s"]
    assert d.n == 3 and abs(d.mean - mean) < 1e-12 and abs(d.std - sd) < 1e-12
    assert abs(d.ci95 - 4.303 * sd / 3 ** 0.5) < 1e-12
    assert st["j_per_item"].n == 3 and st["items_per_s"].n == 3
    assert abs(st["j_per_item"].mean - sum(x.per_item().energy_j for x in results) / 3) < 1e-12
    with pytest.raises(edgemon.InvalidArgument):
        edgemon.stats([1.0])
    # The bundle carries the same figures as `edgemon record`'s summary.json.
    out = str(tmp_path / "b")
    r.save(out)
    j = json.load(open(os.path.join(out, "summary.json")))
    assert j["baseline"]["rails"] and j["items"]["phase"] == "timed"
    assert abs(j["items"]["per_s"] - pi.per_s) < 1e-9
    assert j["energy_above_baseline_j"] == r.total_energy_above_baseline_j


def test_errors_are_typed_with_the_daemons_message(nano, tmp_path):
    with pytest.raises(edgemon.InvalidArgument):
        edgemon.connect("no-port-here")
    gone = edgemon.connect("unix:" + str(tmp_path / "nothing.sock"), timeout=2)
    with pytest.raises(edgemon.Unavailable) as e:
        gone.latest()
    assert e.value.__cause__ is None and e.value.__suppress_context__
    assert str(e.value).startswith("edgemon: latest at unix:")
    # What happened and what to do next, in one line.
    assert "no socket there" in str(e.value) and "start edgemond" in str(e.value)
    assert "sudo systemctl start edgemond" in str(e.value) and "\n" not in str(e.value)
    plain = tmp_path / "not-a-socket"
    plain.write_text("x")
    with pytest.raises(edgemon.Unavailable, match="not a socket"):
        edgemon.connect("unix:" + str(plain), timeout=2).latest()
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(edgemon.Unavailable, match="nothing listens on that host and port"):
        edgemon.connect("127.0.0.1:%d" % closed, timeout=2).latest()
    c = edgemon.connect(nano.target)
    with pytest.raises(edgemon.InvalidArgument) as e:
        c.boost(0)
    assert "UNAVAILABLE" not in str(e.value) and isinstance(e.value, edgemon.Error)
    with pytest.raises(edgemon.Error) as e:
        c.latest(channels=["no/such/channel"])
    assert "no/such/channel" in str(e.value)
    with pytest.raises(edgemon.InvalidArgument):
        c.watch(interval=-1)
    with pytest.raises(edgemon.InvalidArgument):
        c.query("yesterday-ish")
    with pytest.raises(edgemon.InvalidArgument):
        edgemon.connect(nano.target, token_file=str(tmp_path / "no-token"))
    with pytest.raises(edgemon.InvalidArgument):
        edgemon.connect(nano.target, tls=True)


def test_token_files_others_could_read_or_swap_are_refused(tmp_path):
    # The rule of edgemon's C++ programs: no link, a regular file of root or
    # the caller, no group or other bits. Refused in connect(), naming the file.
    d = tmp_path / "tokens"
    d.mkdir(mode=0o700)
    good = d / "good"
    good.write_text(" s3cret-token-0123456789 \nsecond\n")
    os.chmod(str(good), 0o600)
    c = edgemon.connect("127.0.0.1:1", token_file=str(good))
    assert c._metadata == [("authorization", "Bearer s3cret-token-0123456789")]
    link = d / "link"
    os.symlink(str(good), str(link))
    group = d / "group"
    group.write_text("s3cret-token-0123456789\n")
    os.chmod(str(group), 0o640)
    fifo = d / "fifo"
    os.mkfifo(str(fifo), 0o600)
    for path, rule in ((link, "is a symbolic link"),
                       (group, "is open to group or others (mode 0640"),
                       (fifo, "is not a regular file"),
                       (d / "missing", "does not exist")):
        with pytest.raises(edgemon.InvalidArgument) as e:
            edgemon.connect("127.0.0.1:1", token_file=str(path))
        assert ("edgemon: secret file %s: " % path) in str(e.value), str(e.value)
        assert rule in str(e.value), str(e.value)
    os.chmod(str(d), 0o777)  # anyone could swap the file now
    with pytest.raises(edgemon.InvalidArgument) as e:
        edgemon.connect("127.0.0.1:1", token_file=str(good))
    assert "directory %s is writable by group or others" % d in str(e.value), str(e.value)


def test_query_step_on_a_daemon_younger_than_the_range(nano):
    """query(step=) over a range longer than the daemon's life: steps at the
    asked step from its raw frames, none dated before its first frame."""
    from conftest import INTERVAL_MS
    while time.time_ns() - nano.started_ns < 3e9:  # a few steps of history
        time.sleep(0.1)
    rows = edgemon.connect(nano.target).query("-30m", channels=["rail/VDD_IN/power"], step=1.0)
    assert len(rows) >= 2
    assert all(r.t_ns >= nano.started_ns for r in rows), [r.t_ns for r in rows[:3]]
    per_step = 1000 // INTERVAL_MS
    assert all(1 <= r.count <= per_step + 1 for r in rows), [r.count for r in rows]
    assert all(0 < b.t_ns - a.t_ns < 2e9 for a, b in zip(rows, rows[1:]))


def test_wrong_token_is_permission_denied(tmp_path):
    from conftest import tool
    import socket
    token = tmp_path / "token"
    token.write_text("right-token-0123456789\n")
    os.chmod(str(token), 0o600)
    wrong = tmp_path / "wrong"
    wrong.write_text("wrong-token-0123456789\n")
    os.chmod(str(wrong), 0o600)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = tmp_path / "token.toml"
    cfg.write_text('[daemon]\ntcp_listen = "127.0.0.1:%d"\ntcp_token_file = "%s"\n'
                   % (port, token))
    d = subprocess.Popen([tool("edgemond"), "--root",
                          os.path.join(tool("fixtures"), "agx-orin"), "--db",
                          str(tmp_path / "e.db"), "--listen", "unix:" + str(tmp_path / "s"),
                          "--config", str(cfg)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        good = edgemon.connect("127.0.0.1:%d" % port, token_file=str(token), timeout=2)
        deadline = time.time() + 20
        while True:
            try:
                good.device()
                break
            except edgemon.Unavailable:
                assert time.time() < deadline, "edgemond does not listen on TCP"
                time.sleep(0.2)
        bad = edgemon.connect("127.0.0.1:%d" % port, token_file=str(wrong))
        with pytest.raises(edgemon.PermissionDenied) as e:
            bad.latest()
        assert "UNAUTHENTICATED" in str(e.value)
        assert "refused the bearer token" in str(e.value) and "token_file=" in str(e.value)
        with pytest.raises(edgemon.PermissionDenied, match="wants a bearer token"):
            edgemon.connect("127.0.0.1:%d" % port).device()
    finally:
        d.terminate()
        d.wait(timeout=30)


def test_default_address_rule(monkeypatch):
    monkeypatch.delenv("EDGEMON_CONNECT", raising=False)
    assert edgemon.connect().target == "unix:/run/edgemon/edgemond.sock"
    monkeypatch.setenv("EDGEMON_CONNECT", "/tmp/x.sock")
    assert edgemon.connect().target == "unix:/tmp/x.sock"
    assert edgemon.connect("localhost:7070").target == "localhost:7070"


def test_old_grpcio_or_protobuf_fail_on_first_use_with_one_line(monkeypatch):
    import grpc
    from edgemon import _lazy
    monkeypatch.setattr(grpc, "__version__", "1.10.0")
    with pytest.raises(ImportError) as e:
        _versions.check()
    msg = str(e.value)
    assert "\n" not in msg and "grpcio >= 1.24" in msg and "1.10.0" in msg
    # The package's first use of grpc or a generated module checks first.
    monkeypatch.setattr(_lazy, "_checked", False)
    with pytest.raises(ImportError) as e:
        _lazy.Module(".v1.edgemon_pb2").Frame
    assert str(e.value) == msg


def test_import_edgemon_leaves_grpc_and_protobuf_for_the_first_client():
    """`import edgemon` (and the jtop drop-in) imports neither grpc nor
    protobuf nor the generated modules: a client made imports them. Every
    public name is there all the same, the errors are the same classes; a
    Python without grpcio fails at import, in one line."""
    code = ("import sys, edgemon, jtop\n"
            "for name in edgemon.__all__: getattr(edgemon, name)\n"
            "e = edgemon.InvalidArgument('x')\n"
            "assert isinstance(e, edgemon.Error) and isinstance(e, ValueError)\n"
            "def loaded(): return sorted(m for m in sys.modules if m.split('.')[0] == 'grpc'"
            " or m.startswith(('google.protobuf', 'edgemon.v1.')))\n"
            "print(loaded())\n"
            "edgemon.connect('unix:/nonexistent')\n"
            "print(all(m in loaded() for m in ('grpc', 'google.protobuf', "
            "'edgemon.v1.edgemon_pb2_grpc')))\n")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True)
    assert out.returncode == 0 and out.stdout.splitlines() == ["[]", "True"], out.stdout
    out = subprocess.run([sys.executable, "-c", "import sys; sys.modules['grpc'] = None\n"
                          "import edgemon"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    last = out.stderr.strip().splitlines()[-1]
    assert out.returncode == 1 and last.startswith("ImportError: edgemon needs grpcio >= 1.24") \
        and "no module named 'grpc'" in last, out.stderr


def sources():
    for base in (PKG, os.path.join(os.path.dirname(PKG), "jtop")):
        for root, _, files in os.walk(base):
            for f in files:
                if f.endswith(".py"):
                    yield os.path.join(root, f)


def test_sources_parse_as_python_3_6():
    files = list(sources())
    assert len(files) >= 10
    for path in files:
        with open(path) as f:
            ast.parse(f.read(), path, feature_version=(3, 6))


def test_pip_install_offline_in_a_venv_with_system_packages(tmp_path):
    import shutil
    if shutil.which("protoc") is None or shutil.which("grpc_python_plugin") is None:
        pytest.skip("protoc or grpc_python_plugin missing")
    venv = str(tmp_path / "venv")
    subprocess.check_call([sys.executable, "-m", "venv", "--system-site-packages", venv])
    src = str(tmp_path / "src")
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                             "__pycache__"))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["EDGEMON_PROTO_DIR"] = os.path.join(SRC, "..", "..", "proto")
    r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", src],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout
    r = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                        "import edgemon, jtop, edgemon.v1.edgemon_pb2_grpc; "
                        "print(edgemon.__file__)"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0 and venv in r.stdout, r.stdout


def test_an_open_window_has_no_end_and_a_closed_one_has(nano):
    c = edgemon.connect(nano.target)
    w = c.begin_window("presence")
    assert not w.HasField("end_ns")  # open: no end, never 0
    assert not [x for x in c.windows() if x.id == w.id][0].HasField("end_ns")
    e = c.end_window(w.id)
    assert e.HasField("end_ns") and e.end_ns >= w.start_ns


def test_unmeasured_is_none_and_a_measured_zero_is_zero():
    from edgemon import _bundle
    from edgemon.v1 import edgemon_pb2 as pb
    idle = pb.RailSummary(name="VDD_IN", input=True, energy_mj=0.0, avg_power_mw=0.0)
    unread = pb.RailSummary(name="VDD_SOC", parent="VDD_IN")
    assert idle.HasField("energy_mj")  # a 0 sent is a 0 received
    assert _bundle.total_energy_mj([idle, unread]) == 0.0
    assert _bundle.total_energy_mj([pb.RailSummary(name="VDD_IN", input=True)]) is None
    rails = _bundle._rails_json([idle, unread])
    assert rails[0]["energy_j"] == 0.0 and rails[0]["avg_power_w"] == 0.0
    assert rails[1]["energy_j"] is None and rails[1]["avg_power_w"] is None
    tree = _bundle.rail_tree([idle, unread], 2.0)
    assert [r["remainder"] for r in tree] == [False, False, True]
    assert tree[2]["energy_mj"] is None  # parent minus an unmeasured sub-rail: unknown
    assert _bundle.residual_warnings([idle, unread]) == []


def test_event_note_as_edgemon_record_writes_it():
    """The same note as the C++ report (tests/common/diagnostics_test.cc) from
    the event channels' ranges; None/"" when nothing moved."""
    from edgemon import _bundle

    class Ch:
        def __init__(self, id_, name, field, source):
            self.id, self.kind, self.name, self.field = id_, "event", name, field
            self.attrs = {"source": source}

    class Dev:
        channels = [Ch(5, "oc3", "events", "over-current"), Ch(6, "VDD_IN:crit", "events", "alarm"),
                    Ch(8, "cpufreq-cpu0", "time", "throttle"), Ch(9, "pwmfan:stuck", "state", "fan")]

    class F:
        def __init__(self, vals):
            self.ids, self.values = list(vals), list(vals.values())

    frames = [F({5: 27, 6: 0, 8: 1000, 9: 0}), F({5: 28, 6: None, 8: 2000}),
              F({5: 29, 6: 1, 8: 4100, 9: 0})]
    ranges = _bundle.event_ranges(frames, Dev())
    assert ranges == {5: (27, 29), 6: (0, 1), 8: (1000, 4100), 9: (0, 0)}
    assert _bundle.event_note(Dev(), ranges) == (
        "2 over-current events (oc3), 1 current/power alert (VDD_IN:crit) and 3.1 s of "
        "thermal throttling (cpufreq-cpu0) during this run")
    assert _bundle.throttle_summary(Dev(), ranges) == "3.1 s (cpufreq-cpu0)"
    still = {5: (29, 29), 6: (1, 1), 8: (4100, 4100), 9: (0, 1)}
    assert _bundle.event_note(Dev(), still) == "the fan pwmfan stuck (PWM on, 0 rpm) during this run"
    assert _bundle.throttle_summary(Dev(), still) is None
    assert _bundle.event_note(Dev(), {}) == ""


def test_a_daemon_slow_to_answer_is_waited_for(nano, tmp_path):
    """A daemon that takes a while to answer a new connection (a busy board)
    is slow, not unreachable: the first call waits for it within its
    timeout. Connection attempts were given 100 ms, and such a daemon read
    as Unavailable ("timed out before receiving SETTINGS frame")."""
    front = str(tmp_path / "slow.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(front)
    listener.listen(8)
    done = threading.Event()

    def pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def relay(conn):
        time.sleep(0.6)  # busy: the daemon's side starts late
        up = socket.socket(socket.AF_UNIX)
        up.connect(nano.sock)
        threading.Thread(target=pipe, args=(conn, up), daemon=True).start()
        pipe(up, conn)

    def accept():
        listener.settimeout(0.1)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            threading.Thread(target=relay, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        c = edgemon.connect("unix:" + front, timeout=10)
        t0 = time.monotonic()
        d = c.device()
        assert time.monotonic() - t0 >= 0.6
        assert d.api_version == 1
        c.close()
    finally:
        done.set()
        acceptor.join()
        listener.close()


def test_runs_list_what_each_window_stored_when_it_ended(nano):
    """measure() sends its items when it ends the window; runs() lists the run with the
    input rail's energy the daemon stored, None where nothing was sent (never 0)."""
    c = edgemon.connect(nano.target)
    with c.measure("runs-py", items=40) as m:
        time.sleep(0.3)
    with c.measure("runs-py-bare"):
        time.sleep(0.1)
    w = c.begin_window("runs-py-exit")
    c.end_window(w.id, items=0, exit_status=3)
    bad = c.begin_window("runs-py-bad")
    with pytest.raises(edgemon.InvalidArgument):
        c.end_window(bad.id, exit_status=256)  # refused before the daemon: left open
    # The daemon's own check, past the client's: INVALID_ARGUMENT, the window left open.
    from edgemon.v1 import edgemon_pb2 as pb
    for req in (pb.EndWindowRequest(id=bad.id, exit_status=300),
                pb.EndWindowRequest(id=bad.id, items=float("nan")),
                pb.EndWindowRequest(id=bad.id, items=-1)):
        with pytest.raises(edgemon.InvalidArgument):
            c._call("end window", c._stub.EndWindow, req)
    c.end_window(bad.id, exit_status=255)
    runs = {r.label: r for r in c.runs(label="runs-py*")}
    assert sorted(runs) == ["runs-py", "runs-py-bad", "runs-py-bare", "runs-py-exit"], runs
    r = runs["runs-py"]
    assert r.id == m.window.id and r.items == 40 and r.exit_status is None
    assert r.input_rail == "VDD_IN"
    assert r.energy_j == pytest.approx(m.result.total_energy_j, rel=0.01)
    assert r.avg_power_w == pytest.approx(r.energy_j / r.duration_s)
    assert runs["runs-py-bare"].items is None
    assert runs["runs-py-exit"].items == 0 and runs["runs-py-exit"].exit_status == 3
    assert runs["runs-py-bad"].exit_status == 255
    assert [x.id for x in c.runs(since="@%.9f" % (r.start_ns / 1e9 + 1e-6), label="runs-py*")] \
        == [runs["runs-py-bare"].id, runs["runs-py-exit"].id, runs["runs-py-bad"].id]


def test_measure_keeps_the_rail_samples_at_the_boosted_rate(nano, tmp_path):
    """measure(rate_hz=500): result.rail_samples holds the samples taken at
    500 Hz, and Result.save() writes them as `edgemon attach --window` does."""
    c = edgemon.connect(nano.target)
    with c.measure("kept", rate_hz=500) as m:
        time.sleep(1.0)
    r = m.result
    rs = r.rail_samples
    inp = next(x.name for x in r.rails.values() if x.input)
    watts = [v for v in rs.power_w[inp] if v is not None]
    assert len(watts) >= 400, "%d %s samples for 1 s at 500 Hz" % (len(watts), inp)
    assert rs.t_ns == sorted(rs.t_ns) and r.summary.from_ns <= rs.t_ns[0]
    assert rs.t_ns[-1] <= r.summary.to_ns
    out = str(tmp_path / "py")
    r.save(out)
    ref = str(tmp_path / "cli")
    nano.cli("attach", "--window", str(r.window_id), "--out", ref)
    with open(os.path.join(out, "samples.csv")) as f1, \
            open(os.path.join(ref, "samples.csv")) as f2:
        a, b = f1.read(), f2.read()
    assert a == b
    rows = [line.split(",") for line in a.splitlines()]
    assert sum(1 for row in rows[1:] if row[1] == "") >= 300  # rows between the frames
