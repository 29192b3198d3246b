"""The checks of an MLPerf energy report (mlperf_energy.json): the draft v6.1
schema (docs/schemas/mlperf_energy_schema_v6.json) with python3-jsonschema,
and the draft's nine checker rules written as code.

failures(report) returns [(rule, message)], rule "schema" or "01".."09";
an empty list is a report that passes.
"""
import json
import os

import jsonschema

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                           "docs", "schemas", "mlperf_energy_schema_v6.json")
REQUIRED = ["task_type", "total_energy_joules", "static_power_baseline_watts",
            "inference_active_power_watts", "measurement_method", "sampling_rate_hz",
            "thermal_stabilization_seconds", "scenario", "accelerator_count"]
REQUIRED_BY_TASK = {
    "llm": ["prefill_energy_joules", "generation_energy_joules", "output_token_count",
            "batch_size", "input_sequence_length", "output_sequence_length",
            "energy_per_token_joules"],
    "cv": ["energy_per_query_joules"],
    "other": [],
}
METHODS = ["nvml", "dcgm", "rocm_smi", "rapl", "external_analyzer"]


def schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def failures(report):
    out = []
    validator = jsonschema.Draft202012Validator(schema())
    for e in sorted(validator.iter_errors(report), key=lambda e: list(e.path)):
        out.append(("schema", "/".join(map(str, e.path)) + ": " + e.message))
    r = report
    # 01: required fields present and non-null.
    for k in REQUIRED:
        if r.get(k) is None:
            out.append(("01", f"{k} missing"))
    # 02: the task type's own fields.
    for k in REQUIRED_BY_TASK.get(r.get("task_type"), []):
        if r.get(k) is None:
            out.append(("02", f"{k} missing for task_type {r.get('task_type')}"))
    llm = r.get("task_type") == "llm"
    # 03: LLM: total >= prefill + generation.
    if llm and all(_num(r.get(k)) for k in ("total_energy_joules", "prefill_energy_joules",
                                            "generation_energy_joules")):
        if r["total_energy_joules"] < r["prefill_energy_joules"] + r["generation_energy_joules"]:
            out.append(("03", "total below prefill + generation"))
    # 04: the idle baseline is below the active mean.
    active = (r.get("inference_active_power_watts") or {}).get("mean")
    if _num(r.get("static_power_baseline_watts")) and _num(active):
        if not r["static_power_baseline_watts"] < active:
            out.append(("04", f"baseline {r['static_power_baseline_watts']} W >= active {active} W"))
    # 05: at least 1 Hz.
    if not (_num(r.get("sampling_rate_hz")) and r["sampling_rate_hz"] >= 1):
        out.append(("05", f"sampling_rate_hz {r.get('sampling_rate_hz')}"))
    # 06: a method the draft lists.
    if r.get("measurement_method") not in METHODS:
        out.append(("06", f"measurement_method {r.get('measurement_method')!r} not in {METHODS}"))
    # 07: LLM: J/token agrees with generation / tokens within 5 %.
    per = (r.get("energy_per_token_joules") or {}).get("mean")
    if llm and _num(per) and per > 0 and _num(r.get("generation_energy_joules")) \
            and _num(r.get("output_token_count")) and r["output_token_count"] > 0:
        want = r["generation_energy_joules"] / r["output_token_count"]
        if abs(per - want) / per > 0.05:
            out.append(("07", f"energy_per_token {per} vs generation/tokens {want}"))
    # 08: tokens > 0.
    if llm and not (_num(r.get("output_token_count")) and r["output_token_count"] > 0):
        out.append(("08", f"output_token_count {r.get('output_token_count')}"))
    # 09: several accelerators: the figures are aggregates over all of them
    # (one total, no per-accelerator list in its place).
    n = r.get("accelerator_count")
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        out.append(("09", f"accelerator_count {n!r}"))
    elif n > 1 and isinstance(r.get("total_energy_joules"), list):
        out.append(("09", "per-accelerator energies where an aggregate belongs"))
    return out
