"""edgemon.torch: power inside a torch.profiler trace (Debian's python3-torch,
CPU). The clock of PyTorch's ts is established here, not assumed."""
import glob
import json
import os
import subprocess
import time

import pytest

import edgemon
from conftest import tool

torch = pytest.importorskip("torch", reason="python3-torch is not installed "
                            "(scripts/install-deps.sh installs it)")
from edgemon import torch as etorch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402


def events_named(trace, name):
    return [e for e in trace["traceEvents"] if e.get("name") == name and e.get("ph") == "X"]


def test_which_clock_torch_profiler_ts_is_on(tmp_path):
    """A known 0.3 s sleep between two wall-clock readings. Debian's PyTorch
    (no Kineto) writes a bare list with ts in us from the profiler's start,
    whose Unix time trace_start_ns() gives; a Kineto build writes ts in us on
    the Unix epoch (or from baseTimeNanoseconds). Either way the range lands
    between the two readings."""
    before = time.time_ns()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("known-sleep"):
            time.sleep(0.3)
    after = time.time_ns()
    path = str(tmp_path / "clock.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    if isinstance(trace, list):
        assert not torch.autograd.kineto_available()
        trace, base = {"traceEvents": trace}, etorch.trace_start_ns(prof)
        assert before <= base <= after
    else:
        base = trace.get("baseTimeNanoseconds", 0)
    [e] = events_named(trace, "known-sleep")
    start, end = base + e["ts"] * 1000, base + (e["ts"] + e["dur"]) * 1000
    assert before <= start and end <= after, (before, start, end, after)
    assert 0.3e6 <= e["dur"] < 0.3e6 + (after - before - 0.3e9) / 1000 + 1
    # Not CLOCK_MONOTONIC nor CLOCK_BOOTTIME: those are far from the epoch.
    assert abs(start - time.monotonic_ns()) > 10**15


def model_run(directory, client):
    """A CPU model profiled with two record_function ranges and a schedule
    (ProfilerStep#N), merged by the on_trace_ready handler."""
    net = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 10))
    x = torch.randn(64, 256)
    sched = torch.profiler.schedule(wait=0, warmup=0, active=1, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched,
                 on_trace_ready=etorch.on_trace_ready(directory, client=client)) as prof:
        with record_function("preprocess"):
            y = (x * 2).relu()
            time.sleep(0.4)
        with record_function("infer"):
            end = time.time() + 0.6
            while time.time() < end:
                net(y)
        prof.step()


def test_merge_adds_counter_tracks_and_energy_per_range(nano, tmp_path):
    client = edgemon.connect(nano.target)
    model_run(str(tmp_path), client)
    [merged] = glob.glob(str(tmp_path / "trace_*.edgemon.json"))
    source = merged.replace(".edgemon.json", ".json")
    with open(merged) as f:
        trace = json.load(f)
    with open(source) as f:
        original = json.load(f)
    if isinstance(original, list):
        original = {"traceEvents": original}
    timed = [e for e in original["traceEvents"] if isinstance(e.get("ts"), (int, float))
             and e.get("ph") != "M"]
    lo = min(e["ts"] for e in timed)
    hi = max(e["ts"] + e.get("dur", 0) for e in timed)
    # The input rail's counter track, inside the trace's span, on its clock.
    vdd_in = [e for e in trace["traceEvents"] if e.get("ph") == "C" and e["name"] == "VDD_IN"]
    assert len(vdd_in) >= 5, len(vdd_in)
    assert all(lo <= e["ts"] <= hi for e in vdd_in)
    base = trace["otherData"]["edgemon"]["from_ns"] - lo * 1000  # ts 0 in Unix ns
    for e in vdd_in:
        # The analytic power: mJ over 1 ms is W.
        t = int(base + e["ts"] * 1000)
        truth = nano.energy_mj("VDD_IN", t - 500000, t + 500000)
        assert abs(e["args"]["W"] - truth) / truth < 0.05, (e, truth)
    pids = {e["pid"] for e in trace["traceEvents"] if e.get("ph") == "C"}
    assert pids and not pids & {e.get("pid") for e in timed}
    # energy_j on both ranges and the step, as `edgemon attach` over the same range.
    names = ["preprocess", "infer", "ProfilerStep#0"]
    base = trace["otherData"]["edgemon"]["from_ns"] - lo * 1000  # ts 0 in Unix ns
    for name in names:
        [e] = events_named(trace, name)
        start = base + e["ts"] * 1000
        end = base + (e["ts"] + e["dur"]) * 1000
        r = subprocess.run([tool("cli"), "--connect", nano.target, "attach", "--json",
                            "--from", "@%.6f" % (start / 1e9), "--to", "@%.6f" % (end / 1e9)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        assert r.returncode == 0, r.stderr
        want = json.loads(r.stdout)["total_energy_j"]
        got = e["args"]["energy_j"]
        assert want > 0 and abs(got - want) <= 0.01 * want, (name, got, want)
        assert e["args"]["energy_j_by_rail"]["VDD_IN"] == got
    assert trace["otherData"]["edgemon"]["notes"] == []
    # `edgemon trace merge` writes the same figures (--start: ts 0 of a list trace).
    cli_out = str(tmp_path / "cli.json")
    args = [tool("cli"), "--connect", nano.target, "trace", "merge", source, "--out", cli_out]
    if isinstance(json.load(open(source)), list):
        args += ["--start", "@%d.%09d" % divmod(int(round(base)), 10**9)]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with open(cli_out) as f:
        merged_cli = json.load(f)
    for name in names:
        [a] = events_named(merged_cli, name)
        [b] = events_named(trace, name)
        assert abs(a["args"]["energy_j"] - b["args"]["energy_j"]) <= 1e-6 * b["args"]["energy_j"]
    assert len([e for e in merged_cli["traceEvents"] if e.get("ph") == "C"]) == \
        len([e for e in trace["traceEvents"] if e.get("ph") == "C"])


def test_merge_refuses_what_is_not_a_profiler_trace(nano, tmp_path):
    client = edgemon.connect(nano.target)
    bad = tmp_path / "bad.json"
    for text in ("not json", '{"traceEvents": 3}', '{"traceEvents": []}', "[]",
                 '[{"ph": "X", "ts": 5, "dur": 1, "name": "a"}]',
                 '{"traceEvents": [{"ph": "X", "ts": 5e13, "dur": 1, "name": "a"}]}'):
        bad.write_text(text)
        with pytest.raises(edgemon.InvalidArgument):
            etorch.merge(str(bad), client=client)
        r = subprocess.run([tool("cli"), "--connect", nano.target, "trace", "merge", str(bad)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        assert r.returncode == 65 and "edgemon trace merge: " in r.stderr, (text, r.stderr)
    assert not os.path.exists(str(tmp_path / "bad.edgemon.json"))
