"""record_e2e's checks of the cross-run pieces, on its orin-nano daemon:
`edgemon runs` (what is stored with each window when it ends), `edgemon
compare` (labels of repeated runs, window ids, bundles; Welch's verdict;
compare.html) and the MLPerf energy report (`--mlperf-energy`, the bundle's
mlperf_energy.json, `edgemon mlperf-energy`), every report checked against the
draft schema and its nine rules (mlperf_rules.py)."""
import json
import math
import os
import re
import time

import mlperf_rules
from harness import expect

LLM_FIELDS = ["--mlperf", "scenario=singlestream", "--mlperf", "batch_size=1",
              "--mlperf", "input_sequence_length=128", "--mlperf", "output_sequence_length=64",
              "--mlperf", "software_runtime_versions.tensorrt=10.3"]
LLM_COMMAND = ["sh", "-c",
               "edgemon mark begin prefill; sleep 0.3; edgemon mark end prefill; "
               "edgemon mark begin generation; sleep 0.6; echo 'generated tokens: 64'; "
               "edgemon mark end generation"]


def load(path):
    with open(path) as f:
        return json.load(f)


def runs_json(board, *args):
    r = board.edgemon("runs", "--json", *args)
    expect(r.returncode == 0, f"runs: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def runs_and_compare(board):
    """Two labels of three runs each, one failing run; runs lists them with what was stored
    when each ended; compare prints both labels with the difference and Welch's verdict."""
    for label, secs in (("fp16", "0.5"), ("int8", "0.3")):
        for _ in range(3):
            r = board.edgemon("record", "--label", label, "--items", "100", "--", "sleep", secs)
            expect(r.returncode == 0, f"record {label}: {r.stderr}")
    r = board.edgemon("record", "--label", "failing", "--", "sh", "-c", "sleep 0.2; exit 3")
    expect(r.returncode == 3, f"failing run: exit {r.returncode}")

    fp16 = runs_json(board, "--label", "fp*")
    expect([x["label"] for x in fp16] == ["fp16"] * 3, f"--label fp*: {fp16}")
    for x in fp16:
        expect(x["items"] == 100 and x["exit_status"] == 0 and x["input_rail"] == "VDD_IN", x)
        truth = board.energy_mj("VDD_IN", x["start_ns"], x["end_ns"]) / 1000
        expect(abs(x["energy_j"] - truth) <= 0.01 * truth + 0.002,
               f"stored energy {x['energy_j']} J, analytic {truth} J")
        expect(abs(x["avg_power_w"] - x["energy_j"] / x["duration_s"]) < 1e-9, x)
        expect(0.5 <= x["duration_s"] < 0.8, x)
    everything = runs_json(board)
    failing = [x for x in everything if x["label"] == "failing"]
    expect(len(failing) == 1 and failing[0]["exit_status"] == 3 and failing[0]["items"] is None,
           f"the failing run: {failing}")
    expect(not any(re.match(r"^[0-9]+:", x["label"]) for x in everything), "marks listed as runs")
    later = runs_json(board, "--since", "@%d.%09d" % divmod(fp16[-1]["start_ns"], 10**9))
    expect(later[0]["id"] == fp16[-1]["id"] and all(x["label"] != "fp16" for x in later[1:]),
           f"--since: {[x['id'] for x in later]}")
    text = board.edgemon("runs", "--label", "failing")
    expect(text.returncode == 0 and "failing" in text.stdout and "\u2014" in text.stdout,
           f"runs table: {text.stdout}")
    r = board.edgemon("runs", "--since", "yesterday-ish")
    expect(r.returncode == 2 and "--since" in r.stderr, f"bad --since: {r.returncode} {r.stderr}")

    # compare of two labels: both sides, the difference, Welch's verdict.
    r = board.edgemon("compare", "fp16", "int8")
    expect(r.returncode == 0, f"compare: {r.stderr}")
    expect("A = fp16 (3 runs)" in r.stdout and "B = int8 (3 runs)" in r.stdout, r.stdout)
    expect(re.search(r"duration \(s\).*-[0-9.]+ %, beyond the spread \(Welch p=", r.stdout),
           r.stdout)
    out = os.path.join(board.tmp, "compare")
    r = board.edgemon("compare", "fp16", "int8", "--json", "--out", out)
    expect(r.returncode == 0, r.stderr)
    data = json.loads(r.stdout)
    rows = {x["figure"]: x for x in data["rows"]}
    dur = rows["duration"]
    mean_a = sum(x["duration_s"] for x in fp16) / 3
    expect(abs(dur["values"][0]["mean"] - mean_a) < 1e-6, f"{dur} vs {mean_a}")
    want_pct = (dur["values"][1]["mean"] - mean_a) / mean_a * 100
    expect(abs(dur["diff"][1]["pct"] - want_pct) < 1e-6 and want_pct < -25, dur)
    expect(dur["diff"][1]["p"] < 0.05 and dur["diff"][1]["verdict"] == "beyond the spread", dur)
    energy = rows["energy VDD_IN"]["values"][0]
    stored = [x["energy_j"] for x in fp16]
    expect(abs(energy["mean"] - sum(stored) / 3) <= 0.01 * energy["mean"], f"{energy} vs {stored}")
    expect(rows["energy per item"]["values"][0]["n"] == 3, rows["energy per item"])
    with open(os.path.join(out, "compare.html")) as f:
        html = f.read()
    m = re.search(r'<script type="application/json" id="edgemon-data">(.*?)</script>', html, re.S)
    expect(m and json.loads(m.group(1)) == data, "compare.html does not hold the comparison")

    # Single runs (window ids; a bundle): no spread to judge by.
    bundle = os.path.join(board.tmp, "int8-bundle")
    r = board.edgemon("record", "--label", "int8-once", "--out", bundle, "--", "sleep", "0.3")
    expect(r.returncode == 0, r.stderr)
    r = board.edgemon("compare", "--json", str(fp16[0]["id"]), bundle)
    expect(r.returncode == 0, r.stderr)
    d = json.loads(r.stdout)
    expect([s["n"] for s in d["sides"]] == [1, 1], d["sides"])
    expect(all(x["diff"][1]["verdict"] in ("single runs: no spread", "missing on one side")
               and x["diff"][1]["p"] is None for x in d["rows"]), d["rows"])
    r = board.edgemon("compare", "fp16", "no-such-label")
    expect(r.returncode != 0 and "no recorded run labelled 'no-such-label'" in r.stderr,
           f"{r.returncode} {r.stderr}")
    r = board.edgemon("compare", "fp16")
    expect(r.returncode == 2, f"one side: {r.returncode}")


def idle_watts(board):
    """The input rail's mean power over the quietest second held: measured by the daemon
    (attach), at the simulator's trough, as `--baseline` would take it before a run."""
    now = board.sidecar["start_realtime_ns"]
    best = None
    for k in range(40):
        t0 = now + int(1.5e9) + k * int(0.25e9)
        truth = board.energy_mj("VDD_IN", t0, t0 + int(1e9))
        if best is None or truth < best[1]:
            best = (t0, truth)
    r = board.edgemon("attach", "--json", "--from", "@%.9f" % (best[0] / 1e9),
                      "--to", "@%.9f" % ((best[0] + 1e9) / 1e9))
    expect(r.returncode == 0, r.stderr)
    s = json.loads(r.stdout)
    return s["total_energy_j"] / s["range"]["duration_s"]


def wait_for_crest(board, rail="VDD_IN", lead_s=0.45):
    """Sleeps until the simulated rail is about to peak: the simulator has no idle of its
    own, so a run at the crest of its sine is the 'load' above a baseline at its trough."""
    p, period = board.sidecar["rails"][rail], board.sidecar["period_s"]
    w = 2 * math.pi / period
    top = math.pi / 2 if p["amplitude"] >= 0 else 3 * math.pi / 2
    t = board.t(time.time_ns()) + lead_s
    k = math.ceil((w * t + p["phase"] - top) / (2 * math.pi))
    time.sleep((top + 2 * math.pi * k - p["phase"]) / w - t)


def mlperf_report(board):
    """An LLM-shaped run: prefill and generation marks, tokens from the output; the report
    passes every rule but the method enum once the run has its idle baseline."""
    out = os.path.join(board.tmp, "llm")
    file = os.path.join(board.tmp, "llm-mlperf.json")
    wait_for_crest(board)
    r = board.edgemon("record", "--label", "llm", "--out", out,
                      "--items-from", r"generated tokens: ([0-9]+)",
                      "--prefill-phase", "prefill", "--generation-phase", "generation",
                      "--mlperf-energy", file, *LLM_FIELDS, "--", *LLM_COMMAND)
    expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    s = load(os.path.join(out, "summary.json"))
    m = load(file)
    expect(m == load(os.path.join(out, "mlperf_energy.json")), "the bundle's copy differs")
    phases = {p["name"]: p for p in s["phases"]}
    expect(m["task_type"] == "llm" and m["scenario"] == "singlestream", m)
    expect(m["total_energy_joules"] == s["total_energy_j"], m)
    expect(m["prefill_energy_joules"] == phases["prefill"]["total_energy_j"], m)
    expect(m["generation_energy_joules"] == phases["generation"]["total_energy_j"], m)
    expect(m["output_token_count"] == 64, m)
    expect(abs(m["energy_per_token_joules"]["mean"] - m["generation_energy_joules"] / 64) < 1e-12,
           m)
    expect(m["measurement_method"] == "onboard_ina", m["measurement_method"])
    expect(m["batch_size"] == 1 and m["input_sequence_length"] == 128, m)
    expect(m["software_runtime_versions"] == {"tensorrt": "10.3"}, m)
    expect(abs(m["inference_active_power_watts"]["mean"] -
               s["total_energy_j"] / s["range"]["duration_s"]) < 1e-9, m)
    expect(m["sampling_rate_hz"] >= 1, m)
    # Without --baseline the run cannot know its idle power: said, and the rules say so too.
    expect("static_power_baseline_watts is missing" in r.stderr, r.stderr)
    rules = {rule for rule, _ in mlperf_rules.failures(m)}
    expect(rules == {"schema", "01", "06"}, mlperf_rules.failures(m))

    # The same run with its idle baseline in summary.json (as --baseline writes it).
    watts = idle_watts(board)
    s["baseline"] = {"seconds": 1.0, "rails": [{"name": "VDD_IN", "power_w": watts}]}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(s, f)
    r = board.edgemon("mlperf-energy", out, "--prefill-phase", "prefill",
                      "--generation-phase", "generation", *LLM_FIELDS)
    expect(r.returncode == 0 and r.stderr == "", f"exit {r.returncode}: {r.stderr}")
    m = load(os.path.join(out, "mlperf_energy.json"))
    expect(m["static_power_baseline_watts"] == watts, m)
    fails = mlperf_rules.failures(m)
    expect(all(rule in ("schema", "06") for rule, _ in fails) and
           all("measurement_method" in msg for _, msg in fails) and fails, fails)

    # The record's own --baseline (a second of history with no window in it) and per-item
    # figures over the generation phase: the report takes the input rail's baseline power as
    # summary.json holds it. (The simulator has no idle: a baseline right before a run is no
    # lower than the run, so rule 04 is not asked of this one.)
    time.sleep(1.2)
    out_b = os.path.join(board.tmp, "llm-baseline")
    r = board.edgemon("record", "--label", "llm", "--out", out_b, "--baseline", "1s",
                      "--items-from", r"generated tokens: ([0-9]+)", "--items-phase", "generation",
                      "--prefill-phase", "prefill", "--generation-phase", "generation",
                      *LLM_FIELDS, "--", *LLM_COMMAND)
    expect(r.returncode == 0 and "is missing" not in r.stderr, f"exit {r.returncode}: {r.stderr}")
    s = load(os.path.join(out_b, "summary.json"))
    m = load(os.path.join(out_b, "mlperf_energy.json"))
    want = [x["power_w"] for x in s["baseline"]["rails"] if x["name"] == "VDD_IN"]
    expect(want and m["static_power_baseline_watts"] == want[0], (m, s["baseline"]))
    expect(s["items"]["phase"] == "generation" and m["output_token_count"] == 64, s["items"])
    fails = mlperf_rules.failures(m)
    expect(all(rule in ("schema", "04", "06") for rule, _ in fails) and
           all("measurement_method" in msg for rule, msg in fails if rule == "schema"), fails)
    r = board.edgemon("mlperf-energy", out_b, "--mlperf", "static_power_baseline_watts=4")
    expect(r.returncode != 0 and "measured by --baseline" in r.stderr, r.stderr)

    # What a run cannot know is checked against the schema's types, before the command runs.
    marker = os.path.join(board.tmp, "ran")
    for bad, why in (("batch_size=0", "batch_size=0: an integer, at least 1"),
                     ("scenario=fast", "one of offline, server, singlestream"),
                     ("total_energy_joules=3", "measured by the run"),
                     ("colour=red", "not a field the run cannot know")):
        r = board.edgemon("record", "--mlperf", bad, "--", "touch", marker)
        expect(r.returncode == 2 and why in r.stderr and not os.path.exists(marker),
               f"--mlperf {bad}: {r.returncode} {r.stderr}")
    r = board.edgemon("mlperf-energy", out, "--generation-phase", "decode")
    expect(r.returncode != 0 and "no phase (mark) named 'decode'" in r.stderr, r.stderr)
    # A run with items but no MLPerf flags still gets its report (task_type other).
    r = board.edgemon("record", "--items", "10", "--out", os.path.join(board.tmp, "plain"), "--",
                      "sleep", "0.2")
    m = load(os.path.join(board.tmp, "plain", "mlperf_energy.json"))
    expect(m["task_type"] == "other" and "prefill_energy_joules" not in m, m)
    expect({rule for rule, _ in mlperf_rules.failures(m)} == {"schema", "01", "06"},
           mlperf_rules.failures(m))
