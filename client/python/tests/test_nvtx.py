"""measure(nvtx=True): energy per NVTX range of the calling process, with
edgemon's injection library and an NVTX-annotated C library
(tests/client/cli/nvtx_ranges.c) called through ctypes, each in a fresh
interpreter (NVTX loads its tool once per process)."""
import json
import os
import subprocess
import sys

from conftest import tool

SCRIPT = r"""
import ctypes, json, sys
import edgemon
c = edgemon.connect(sys.argv[1])
ranges = ctypes.CDLL(sys.argv[2])
if sys.argv[3] == "early":
    ranges.nvtx_ranges_run()  # NVTX's first call, before measure() could set the tool
with c.measure("nvtx", rate_hz=1000, nvtx=True) as m:
    ranges.nvtx_ranges_run()
m.result.save(sys.argv[4])
print(json.dumps({"nvtx": m.result.nvtx, "notes": m.result.nvtx_notes}))
"""


def run(nano, when, bundle):
    env = dict(os.environ, EDGEMON_NVTX_LIBRARY=tool("nvtx_library"))
    env.pop("NVTX_INJECTION64_PATH", None)
    env.pop("EDGEMON_NVTX_OUT", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT, nano.target, tool("nvtx_ranges"), when,
                        bundle],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    *lines, last = r.stdout.strip().splitlines()
    stamps = {}
    for line in lines:
        name, start, end = line.split()
        stamps.setdefault(name, []).append((int(start), int(end)))
    return json.loads(last), stamps


def test_measure_nvtx_gives_energy_per_range(nano, tmp_path):
    out, stamps = run(nano, "inside", str(tmp_path))
    got = {(x["domain"], x["name"]): x for x in out["nvtx"]}
    assert sorted(got, key=str) == sorted([(None, "load"), (None, "preprocess"),
                                           (None, "infer"), ("app", "model")], key=str)
    for (_, name), x in got.items():
        own = stamps[name]
        assert x["count"] == len(own) == {"infer": 3}.get(name, 1)
        own_s = sum(e - b for b, e in own) / 1e9
        assert own_s - 0.005 <= x["total_s"] <= own_s, (name, x["total_s"], own_s)
        truth = sum(nano.energy_mj("VDD_IN", b, e) for b, e in own) / 1000
        assert abs(x["energy_j"] - truth) <= 0.01 * truth, (name, x["energy_j"], truth)
        assert abs(x["avg_w"] - x["energy_j"] / x["total_s"]) < 1e-9
        [vdd_in] = [r for r in x["rails"] if r["name"] == "VDD_IN"]
        assert vdd_in["input"] and vdd_in["energy_j"] == x["energy_j"]
    assert out["notes"] == []
    # Result.save(): summary.json holds the same entries, as edgemon record --nvtx writes them.
    with open(str(tmp_path / "summary.json")) as f:
        saved = json.load(f)
    assert saved["nvtx"] == out["nvtx"] and "inclusive" in saved["nvtx_attribution"]


def test_nvtx_called_before_measure_is_said_not_hidden(nano, tmp_path):
    out, stamps = run(nano, "early", str(tmp_path))
    assert len(stamps["infer"]) == 6  # the program ran twice
    assert out["nvtx"] == []
    assert any("before measure(nvtx=True)" in n for n in out["notes"]), out["notes"]
    with open(str(tmp_path / "summary.json")) as f:
        saved = json.load(f)
    assert saved["nvtx"] == [] and any("before measure(nvtx=True)" in n for n in saved["notes"])
