"""result.save(dir): summary.json, samples.csv, trace.json and report.html in
the formats ``edgemon record --out`` writes (client/cli/record_report.cc and
record_bundle.cc), so the same tools read both. report.html is the one
template client/report/report.html (shipped in this package as report.html)
with the data of report_data() in it."""
import json
import math
import os
from typing import Any, Dict, List, Optional, Tuple

# Chrome trace processes, as the edgemon command numbers them.
_PROCESS_NAMES = ["", "power rails (W)", "temperatures (C)", "clocks (MHz)", "edgemon run"]


def fixed(value: float, decimals: int) -> str:
    """printf("%.*f") without a "-0" (record_report's Fixed)."""
    if not math.isfinite(value):
        return "nan"
    s = "%.*f" % (decimals, value)
    if s.startswith("-0") and s.strip("-0.") == "":
        s = s[1:]
    return s


def _dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def micros(ns: int) -> str:
    """Microseconds since the epoch with the ns kept: "1732363200123456.789"."""
    neg = ns < 0
    a = -ns if neg else ns
    return "%s%d.%03d" % ("-" if neg else "", a // 1000, a % 1000)


def present(msg: Any, field: str, per: float = 1.0) -> Optional[float]:
    """A field the daemon sent (0 included) divided by ``per``; None when it
    was not measured: missing is never 0."""
    return getattr(msg, field) / per if msg.HasField(field) else None


def total_energy_mj(rails: List[Any]) -> Optional[float]:
    total = None
    seen = False
    for r in rails:
        if not r.input:
            continue
        if seen:
            return None  # two inputs: not one board total
        seen = True
        total = present(r, "energy_mj")  # None when the input rail was not measured
    return total


def _div(v: Optional[float], per: float) -> Optional[float]:
    return v / per if v is not None else None


def rail_tree(rails: List[Any], duration_s: float) -> List[Dict[str, Any]]:
    names = set(r.name for r in rails)
    out = []  # type: List[Dict[str, Any]]
    done = set()  # type: set

    def avg(mj: Optional[float]) -> Optional[float]:
        return mj / duration_s if mj is not None and duration_s > 0 else None

    def visit(r: Any, depth: int) -> None:
        if r.name in done:
            return
        done.add(r.name)
        out.append({"name": r.name, "depth": depth, "input": r.input, "remainder": False,
                    "energy_mj": present(r, "energy_mj"),
                    "avg_power_mw": present(r, "avg_power_mw")})
        children, n = 0.0, 0  # type: Tuple[Optional[float], int]
        for c in rails:
            if c.parent != r.name or c.name == r.name or c.name in done:
                continue
            e = present(c, "energy_mj")
            children = children + e if children is not None and e is not None else None
            n += 1
            visit(c, depth + 1)
        if n > 0:
            own = present(r, "energy_mj")
            rest = own - children if own is not None and children is not None else None
            out.append({"name": "other (%s - sub-rails)" % r.name, "depth": depth + 1,
                        "input": False, "remainder": True, "energy_mj": rest,
                        "avg_power_mw": avg(rest)})

    def top(r: Any) -> bool:
        return not r.parent or r.parent == r.name or r.parent not in names

    for r in rails:
        if top(r) and r.input:
            visit(r, 0)
    for r in rails:
        if top(r):
            visit(r, 0)
    for r in rails:
        visit(r, 0)
    return out


def _join_names(names: List[str]) -> str:
    if len(names) == 1:
        return names[0]

    def split(n: str) -> Optional[Tuple[str, int]]:
        i = len(n)
        while i > 0 and n[i - 1].isdigit():
            i -= 1
        if i == len(n) or i == 0 or len(n) - i > 6:
            return None
        return n[:i], int(n[i:])

    first = split(names[0])
    run = first is not None
    for k, n in enumerate(names):
        if not run:
            break
        p = split(n)
        run = p is not None and first is not None and p[0] == first[0] and p[1] == first[1] + k
    if run and first is not None:
        return "%s-%d" % (names[0], first[1] + len(names) - 1)
    return ",".join(names)


def _find(device: Any, field: str, name: str, kinds: Tuple[str, ...]) -> Any:
    for c in device.channels:
        if c.field == field and c.name == name and c.kind in kinds:
            return c
    return None


def group_residency(residency: List[Any], device: Any) -> List[Dict[str, Any]]:
    out = []  # type: List[Dict[str, Any]]
    members = []  # type: List[List[str]]
    for r in residency:
        shares = sorted((int(k), v) for k, v in r.khz_share.items())
        max_khz = 0
        c = _find(device, "freq", r.name, ("cpu", "gpu", "emc"))
        if c is not None and c.max is not None:
            max_khz = c.raw_limit("max")
        for khz, _ in shares:
            max_khz = max(max_khz, khz)
        below = sum((share for khz, share in shares if khz < max_khz), 0.0)
        for i, g in enumerate(out):
            if g["khz_share"] == shares and g["max_khz"] == max_khz:
                members[i].append(r.name)
                break
        else:
            out.append({"khz_share": shares, "max_khz": max_khz, "below_max_share": below})
            members.append([r.name])
    for g, m in zip(out, members):
        g["names"] = _join_names(m)
    return out


def thermal_trips(temps: List[Any], device: Any) -> List[str]:
    out = []
    for t in temps:
        c = _find(device, "temp", t.name, ("thermal",))
        if c is None or c.max is None or t.max_mc < c.raw_limit("max"):
            continue
        out.append("%s %s C >= trip %s C" % (t.name, fixed(t.max_mc / 1000.0, 1),
                                               fixed(c.raw_limit("max") / 1000.0, 1)))
    return out


def event_ranges(frames: List[Any], device: Any) -> Dict[int, Tuple[int, int]]:
    """Each event channel's lowest and highest value over the frames (a counter's
    edges: stored counters never decrease)."""
    ids = {c.id for c in device.channels if c.kind == "event"}
    out = {}  # type: Dict[int, Tuple[int, int]]
    for f in frames:
        for i, v in zip(f.ids, f.values):
            if i in ids and v is not None:
                lo, hi = out.get(i, (v, v))
                out[i] = (min(lo, v), max(hi, v))
    return out


def _longest_throttle(device: Any, ranges: Dict[int, Tuple[int, int]]) -> Tuple[int, str]:
    most, name = 0, ""
    for c in device.channels:
        if c.kind == "event" and c.field == "time" and c.id in ranges:
            lo, hi = ranges[c.id]
            if hi - lo > most:
                most, name = hi - lo, c.name
    return most, name


def throttle_summary(device: Any, ranges: Dict[int, Tuple[int, int]]) -> Optional[str]:
    """"4.0 s (cpufreq-cpu0)": the longest any cooling device throttled; None when none did."""
    ms, name = _longest_throttle(device, ranges)
    return "%s s (%s)" % (fixed(ms / 1000.0, 1), name) if ms > 0 else None


def event_note(device: Any, ranges: Dict[int, Tuple[int, int]]) -> str:
    """The run's note on events, as edgemon record writes it ("" when nothing happened)."""
    over, alerts, oc_names, alert_names, stuck = 0, 0, [], [], []
    for c in device.channels:
        if c.kind != "event" or c.id not in ranges:
            continue
        lo, hi = ranges[c.id]
        source = c.attrs.get("source")
        if c.field == "events" and hi > lo:
            if source == "over-current":
                over += hi - lo
                oc_names.append(c.name)
            else:
                alerts += hi - lo
                alert_names.append(c.name)
        elif c.field == "state" and source == "fan" and hi != 0:
            stuck.append(c.name.rsplit(":", 1)[0])
    parts = []
    if over:
        parts.append("%d over-current event%s (%s)" % (over, "" if over == 1 else "s",
                                                      ", ".join(oc_names)))
    if alerts:
        parts.append("%d current/power alert%s (%s)" % (alerts, "" if alerts == 1 else "s",
                                                       ", ".join(alert_names)))
    ms, name = _longest_throttle(device, ranges)
    if ms > 0:
        parts.append("%s s of thermal throttling (%s)" % (fixed(ms / 1000.0, 1), name))
    parts += ["the fan %s stuck (PWM on, 0 rpm)" % f for f in stuck]
    if not parts:
        return ""
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return text + " during this run"


def uncertainty_notes(s: Any, interval_ms: int, energy_rate_hz: int) -> List[str]:
    out = []
    if s.note:
        out.append(s.note)
    period_s = 1.0 / energy_rate_hz if energy_rate_hz > 0 else interval_ms / 1000.0
    if period_s > 0 and s.duration_s < 50 * period_s:
        out.append("short run: %s s is %s rail sampling periods (%s ms); energy edges and peaks "
                   "are uncertain below 50 periods (use --rate or a longer run)" %
                   (fixed(s.duration_s, 3), fixed(s.duration_s / period_s, 1),
                    fixed(period_s * 1000, 1)))
    if s.gaps > 0:
        out.append("%d frames missing in the range: energy is not bridged over gaps longer "
                   "than the daemon's limit" % s.gaps)
    if interval_ms > 0 and s.duration_s >= 1.0 and s.duration_s * 1000 >= 5.0 * interval_ms:
        expected = s.duration_s * 1000.0 / interval_ms
        if s.samples < 0.8 * expected:
            out.append("the store holds %d frames for this %s s range, about %s expected at %d "
                       "ms: part of it was not sampled or not stored (daemon stopped?); the "
                       "energy covers the stored part only" %
                       (s.samples, fixed(s.duration_s, 3), fixed(expected, 0), interval_ms))
    if s.HasField("requested_from_ns"):
        out.append("the range was clipped: it starts %s s before the oldest data the daemon "
                   "holds; measured from there" % fixed((s.from_ns - s.requested_from_ns) / 1e9, 3))
    if s.HasField("requested_to_ns"):
        out.append("the range was clipped: it ends %s s in the future; measured up to now" %
                   fixed((s.requested_to_ns - s.to_ns) / 1e9, 3))
    out.extend(residual_warnings(list(s.rails)))
    if not s.rails:
        out.append("no rail energy in this range (no power rails stored)")
    return out


RAIL_TOLERANCE = 0.02  # the INA3221 rails' combined error, as the edgemon command uses


def residual_warnings(rails: List[Any]) -> List[str]:
    """A line for each rail whose sub-rails read more than the rail itself."""
    out = []
    for parent in rails:
        parent_mj = present(parent, "energy_mj")
        subs = [present(c, "energy_mj") for c in rails
                if c.parent == parent.name and c.name != parent.name]
        if parent_mj is None or any(e is None for e in subs):
            continue  # not measured: nothing to compare
        children = float(sum(e for e in subs if e is not None))
        excess = children - parent_mj
        if not subs or excess <= 0:
            continue
        tolerance = RAIL_TOLERANCE * max(parent_mj, children)
        share = fixed(100.0 * excess / parent_mj if parent_mj > 0 else 100.0, 1) + " %"
        limit = fixed(RAIL_TOLERANCE * 100, 0) + " %"
        if excess <= tolerance:
            out.append("sub-rails of %s read %s J (%s) more than %s: within the sensors' "
                       "tolerance (%s), so the negative \"other\" row is measurement error" %
                       (parent.name, fixed(excess / 1000.0, 3), share, parent.name, limit))
        else:
            out.append("Warning: sub-rails of %s sum to %s J, %s J (%s) more than %s itself "
                       "(%s J), beyond the sensors' tolerance (%s): a rail is miscalibrated or "
                       "mislabelled; its \"other\" row is not meaningful" %
                       (parent.name, fixed(children / 1000.0, 3), fixed(excess / 1000.0, 3),
                        share, parent.name, fixed(parent_mj / 1000.0, 3), limit))
    return out


def held_rail_rates(s: Any) -> Optional[Dict[str, float]]:
    """The lowest and highest rail sampling rates that held over the range."""
    if not (s.HasField("min_rail_rate_hz") and s.HasField("max_rail_rate_hz")):
        return None
    return {"min": s.min_rail_rate_hz, "max": s.max_rail_rate_hz}


def _rails_json(rails: List[Any],
                above: Optional[Dict[str, Optional[float]]] = None) -> List[Dict[str, Any]]:
    """The rails of a summary; with ``above`` (a Result's
    energy_above_baseline_j, when it has a baseline) each carries its energy
    above the baseline."""
    out = []
    for r in rails:
        j = {"name": r.name, "parent": r.parent, "input": r.input,
             "energy_j": present(r, "energy_mj", 1000.0),
             "avg_power_w": present(r, "avg_power_mw", 1000.0)}  # type: Dict[str, Any]
        if r.HasField("peak_power_mw"):  # no sample in the range: no peak, never 0
            j["peak_power_w"] = r.peak_power_mw / 1000.0
        if above is not None:
            j["energy_above_baseline_j"] = above.get(r.name)
        out.append(j)
    return out


# The sentence summary.json states beside "nvtx" (record_nvtx.h, kNvtxAttribution).
NVTX_ATTRIBUTION = ("inclusive: a range's energy includes the ranges nested in it, and ranges "
                    "open at the same time on several threads each count the board's energy over "
                    "their span")


def _items_json(result: Any) -> Dict[str, Any]:
    """summary.json's "items" of a Result with an item count."""
    items = float(result.items)
    ij = {"count": items, "source": "items=",
          "phase": result.items_phase or None}  # type: Dict[str, Any]
    try:
        span = result.items_span()
    except Exception as e:  # noqa: BLE001 - no such phase: the figures are missing
        span = None
        ij["why"] = str(e)
    ij["duration_s"] = span.duration_s if span is not None else None
    ij["per_s"] = (items / span.duration_s
                   if span is not None and items > 0 and span.duration_s > 0 else None)
    rails = list(span.summary.rails) if span is not None else []
    ij["energy_j_per_item_by_rail"] = {
        r.name: (present(r, "energy_mj", 1000.0 * items) if items > 0 else None) for r in rails}
    total = total_energy_mj(rails) if span is not None else None
    ij["energy_j"] = total / 1000.0 if total is not None else None
    if total is not None and items > 0:
        ij["energy_j_per_item"] = total / 1000.0 / items
        ij["items_per_j"] = items / (total / 1000.0) if total > 0 else None
    else:
        ij["energy_j_per_item"] = None
        ij["items_per_j"] = None
    if result.baseline is not None:
        above = span.total_energy_above_baseline_j if span is not None else None
        ij["energy_above_baseline_j"] = above
        ij["energy_above_baseline_j_per_item"] = (above / items if above is not None and items > 0
                                                  else None)
    return ij


def summary_json(result: Any, device: Any, target: str, notes: List[str],
                 throttled: Optional[str] = None) -> Dict[str, Any]:
    s = result.summary
    j = {}  # type: Dict[str, Any]
    j["format"] = "edgemon-record"
    j["version"] = 1
    j["mode"] = "record"
    j["label"] = result.label
    j["command"] = []
    j["exit_code"] = None
    j["signal"] = None
    j["target"] = target
    j["board"] = device.board.model
    j["daemon_version"] = device.daemon_version
    interval_ms = int(round(device.interval_s * 1000))
    j["interval_ms"] = interval_ms
    j["energy_rate_hz"] = device.energy_rate_hz
    j["boost_rate_hz"] = result.boost_rate_hz
    b = device.board
    j["power_mode"] = ({"id": b.nvpmodel_id, "name": b.nvpmodel}
                       if b is not None and b.nvpmodel_id is not None else None)
    j["clocks_locked"] = None  # unknown here: `edgemon record --lock-clocks` states it
    j["rail_rate_hz"] = held_rail_rates(s)
    j["window"] = ({"id": result.window_id, "start_ns": result.start_ns,
                    "end_ns": result.end_ns} if result.window_id else None)
    j["run"] = {"start_ns": result.start_ns, "end_ns": result.end_ns,
                "duration_s": (result.end_ns - result.start_ns) / 1e9}
    j["range"] = {"from_ns": s.from_ns, "to_ns": s.to_ns, "duration_s": s.duration_s,
                  "pre_s": 0.0, "post_s": 0.0}
    b = result.baseline
    j["baseline"] = ({"seconds": b.seconds, "from_ns": b.from_ns, "to_ns": b.to_ns,
                      "rails": [{"name": n, "power_w": w} for n, w in b.power_w.items()]}
                     if b is not None else None)
    j["rails"] = _rails_json(list(s.rails), result.energy_above_baseline_j if b else None)
    j["rail_tree"] = rail_tree_json(list(s.rails), s.duration_s)
    total = total_energy_mj(list(s.rails))
    j["total_energy_j"] = total / 1000.0 if total is not None else None
    inputs = [r.name for r in s.rails if r.input]
    j["total_rail"] = inputs[-1] if total is not None else None
    # Where the total is read (an INA sensor, RAPL, ...): the MLPerf report's method.
    j["total_rail_device"] = next(
        (c.device for c in device.channels
         if total is not None and c.kind == "rail" and c.name == inputs[-1] and c.device), None)
    if b is not None:
        j["energy_above_baseline_j"] = result.total_energy_above_baseline_j
    j["temps"] = [{"name": t.name, "start_c": present(t, "start_mc", 1000.0),
                   "min_c": t.min_mc / 1000.0,
                   "max_c": t.max_mc / 1000.0} for t in s.temps]
    j["residency"] = [{"name": r.name,
                       "khz_share": [[int(k), v] for k, v in sorted(r.khz_share.items())]}
                      for r in s.residency]
    j["loads"] = [{"kind": ld.kind, "name": ld.name, "mean_percent": ld.mean_permille / 10.0,
                   "peak_percent": ld.peak_permille / 10.0} for ld in s.loads]
    j["clocks_below_max"] = [{"names": g["names"], "max_khz": g["max_khz"],
                              "below_max_share": g["below_max_share"]}
                             for g in group_residency(list(s.residency), device)]
    j["thermal_trips"] = thermal_trips(list(s.temps), device)
    j["throttled"] = throttled
    j["samples"] = s.samples
    j["gaps"] = s.gaps
    held = held_rail_rates(s)
    rate = (max(1, int(held["min"])) if held is not None
            else max(result.boost_rate_hz, device.energy_rate_hz))
    j["uncertainty"] = uncertainty_notes(s, interval_ms, rate)
    j["notes"] = notes
    phases = []
    for p in result.phases:
        pj = {"name": p.name, "window_id": p.window_id, "start_ns": p.start_ns,
              "end_ns": p.end_ns}  # type: Dict[str, Any]
        if p.summary is not None:
            ps = p.summary.summary
            pj["duration_s"] = ps.duration_s
            pj["rails"] = _rails_json(list(ps.rails), p.summary.energy_above_baseline_j
                                      if b is not None else None)
            pt = total_energy_mj(list(ps.rails))
            pj["total_energy_j"] = pt / 1000.0 if pt is not None else None
            if b is not None:
                pj["energy_above_baseline_j"] = p.summary.total_energy_above_baseline_j
            pj["samples"] = ps.samples
        phases.append(pj)
    j["phases"] = phases
    # measure(nvtx=True): energy per NVTX range name (record_nvtx.h, NvtxJson).
    nvtx = getattr(result, "nvtx", None)
    j["nvtx"] = nvtx
    if nvtx is not None:
        j["nvtx_attribution"] = NVTX_ATTRIBUTION
    if result.items is not None:
        j["items"] = _items_json(result)
    else:
        j["items"] = None
    return j


def rail_tree_json(rails: List[Any], duration_s: float) -> List[Dict[str, Any]]:
    """summary.json's "rail_tree": the rail tree in J and W, None where not measured."""
    return [{"name": r["name"], "depth": r["depth"], "input": r["input"],
             "remainder": r["remainder"], "energy_j": _div(r["energy_mj"], 1000.0),
             "avg_power_w": _div(r["avg_power_mw"], 1000.0)}
            for r in rail_tree(rails, duration_s)]


def _columns(frames: List[Any], device: Any) -> List[Any]:
    present = set()
    for f in frames:
        present.update(f.ids)
    return [c for c in device.channels if c.name and not c.constant and c.id in present]


def _csv_cell(s: str) -> str:
    if not any(ch in s for ch in ",\"\n\r"):
        return s
    return '"' + s.replace('"', '""') + '"'


def merged_series(frames: List[Any], channel: Any, rails: Any) -> List[Tuple[int, int]]:
    """One channel's (time, value) points: the frames' and, for a rail in
    ``rails`` (RailSamples), the rail samples between them (a sample at a
    frame's own time is that frame's reading), ascending; absent values left
    out (MergedSeries of the edgemon command)."""
    col = rails.raw.get(channel.key) if rails is not None else None
    if col is None:
        out = []
        for f in frames:
            v = dict(zip(f.ids, f.values)).get(channel.id)
            if v is not None:
                out.append((f.realtime_ns, v))
        return out
    frame_times = {f.realtime_ns for f in frames}
    points = [(t, v) for t, v in zip(rails.t_ns, col) if v is not None and t not in frame_times]
    for f in frames:
        v = dict(zip(f.ids, f.values)).get(channel.id)
        if v is not None:
            points.append((f.realtime_ns, v))
    points.sort(key=lambda p: p[0])
    return points


def samples_csv(frames: List[Any], device: Any, rails: Any = None) -> str:
    """One row per frame; with ``rails`` (RailSamples), each rail sample
    between the frames is a row of its own with an empty seq and only its
    rails' cells (SamplesCsv of the edgemon command)."""
    cols = _columns(frames, device)
    raw = rails.raw if rails is not None else {}
    have = {c.key for c in cols}
    for c in device.channels:  # a rail with samples but no frame value
        if (c.name and not c.constant and c.key not in have and
                any(v is not None for v in raw.get(c.key, ()))):
            cols.append(c)
    cols.sort(key=lambda c: c.id)
    lines = ["realtime_ns,seq" + "".join("," + _csv_cell("%s[%s]" % (c.key, c.unit))
                                         for c in cols)]
    rows = []  # type: List[Tuple[int, int, str]]
    for k, f in enumerate(frames):
        vals = dict(zip(f.ids, f.values))
        row = "%d,%d" % (f.realtime_ns, f.seq)
        for c in cols:
            v = vals.get(c.id)
            row += "," + ("" if v is None else str(v))
        rows.append((f.realtime_ns, k, row))
    if rails is not None:
        frame_times = {f.realtime_ns for f in frames}
        for i, t in enumerate(rails.t_ns):
            if t in frame_times:
                continue  # the frame's own reading
            row = "%d," % t
            for c in cols:
                v = raw[c.key][i] if c.key in raw else None
                row += "," + ("" if v is None else str(v))
            rows.append((t, -1, row))
    rows.sort(key=lambda r: (r[0], r[1]))
    lines.extend(r[2] for r in rows)
    return "\n".join(lines) + "\n"


def _tracks(device: Any) -> List[Tuple[int, int, str, str, float]]:
    out = []
    seen = {}  # type: Dict[str, int]
    for c in device.channels:
        if not c.name or c.constant:
            continue
        if c.kind == "rail" and c.field == "power":
            pid, unit = 1, "W"
        elif c.kind == "thermal" and c.field == "temp":
            pid, unit = 2, "C"
        elif c.field == "freq" and c.kind in ("cpu", "gpu", "emc"):
            pid, unit = 3, "MHz"
        else:
            continue
        name = c.name
        k = "%d/%s" % (pid, name)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > 1:
            name += " (%s)" % c.device
        out.append((c.id, pid, name, unit, 1e-3))
    return out


def _energy_args(s: Any) -> Dict[str, Optional[float]]:
    return {r.name: present(r, "energy_mj", 1000.0) for r in s.rails}


def trace_json(result: Any, frames: List[Any], device: Any, rails: Any = None) -> str:
    events = []  # type: List[str]
    head = ('{"displayTimeUnit":"ms","otherData":{"generator":"edgemon record",'
            '"clock":"realtime (Unix epoch), ts in microseconds","board":%s},"traceEvents":['
            % _dump(device.board.model))
    for pid in range(1, 5):
        events.append('{"ph":"M","pid":%d,"tid":0,"name":"process_name","args":{"name":%s}}'
                      % (pid, _dump(_PROCESS_NAMES[pid])))
        events.append('{"ph":"M","pid":%d,"tid":0,"name":"process_sort_index",'
                      '"args":{"sort_index":%d}}' % (pid, pid))
    by_id = {c.id: c for c in device.channels}
    for cid, pid, name, unit, scale in _tracks(device):
        for t, v in merged_series(frames, by_id[cid], rails):
            events.append('{"ph":"C","pid":%d,"name":%s,"ts":%s,"args":{"%s":%s}}' %
                          (pid, _dump(name), micros(t), unit, fixed(v * scale, 3)))

    def args_dump(a: Dict[str, Any]) -> str:
        return json.dumps(a, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    def slice_(tid: int, name: str, start: int, end: int, args: Dict[str, Any]) -> None:
        events.append('{"ph":"X","pid":4,"tid":%d,"name":%s,"ts":%s,"dur":%s,"args":%s}' %
                      (tid, _dump(name), micros(start), micros(max(end - start, 0)),
                       args_dump(args)))

    def thread(tid: int, name: str) -> None:
        events.append('{"ph":"M","pid":4,"tid":%d,"name":"thread_name","args":{"name":%s}}'
                      % (tid, _dump(name)))

    thread(1, "run")
    s = result.summary
    if s.from_ns < result.start_ns or s.to_ns > result.end_ns:
        slice_(1, "measured range", s.from_ns, s.to_ns,
               {"duration_s": s.duration_s, "energy_j": _energy_args(s)})
    run_args = {"label": result.label, "window_id": result.window_id}  # type: Dict[str, Any]
    if s.from_ns == result.start_ns and s.to_ns == result.end_ns:
        run_args["energy_j"] = _energy_args(s)
    slice_(1, result.label or "record", result.start_ns, result.end_ns, run_args)
    tids = {}  # type: Dict[str, int]
    for p in result.phases:
        if p.name not in tids:
            tids[p.name] = len(tids) + 2
            thread(tids[p.name], "mark " + p.name)
        a = {"window_id": p.window_id}  # type: Dict[str, Any]
        if p.summary is not None:
            a["energy_j"] = _energy_args(p.summary.summary)
        if not p.end_ns:
            a["ended"] = False
        slice_(tids[p.name], p.name, p.start_ns, p.end_ns or result.end_ns, a)
    return head + "".join(("\n" if i == 0 else ",\n") + e for i, e in enumerate(events)) + \
        "\n]}\n"


# report.html's charts, by trace process: (id, title, unit).
_CHARTS = {1: ("power", "Power per rail", "W"), 2: ("temp", "Temperatures", "\u00b0C"),
           3: ("clock", "Clocks", "MHz")}


def report_data(result: Any, frames: List[Any], device: Any,
                summary: Dict[str, Any], rails: Any = None) -> Dict[str, Any]:
    """The data of report.html, in the shape ReportData of
    client/cli/record_bundle.h gives: the summary, each phase's rail tree and
    one line per rail power, thermal zone and clock, a None where a frame
    has no value (a gap, never 0)."""
    from_ns = result.summary.from_ns
    values = [dict(zip(f.ids, f.values)) for f in frames]
    groups = []
    tracks = _tracks(device)
    for pid in (1, 2, 3):
        gid, title, unit = _CHARTS[pid]
        lines = [{"name": name, "values": [v.get(cid) for v in values]}
                 for cid, tpid, name, _, _ in tracks if tpid == pid]
        group = {"id": gid, "title": title, "unit": unit, "scale": 1e-3,
                 "lines": lines}  # type: Dict[str, Any]
        if pid == 1 and rails is not None and rails.t_ns:
            # Power at the rail samples' times too: its own t_s.
            by_id = {c.id: c for c in device.channels}
            series = [dict(merged_series(frames, by_id[cid], rails))
                      for cid, tpid, _, _, _ in tracks if tpid == 1]
            times = sorted(set(f.realtime_ns for f in frames).union(*series))
            for line, points in zip(lines, series):
                line["values"] = [points.get(t) for t in times]
            group["t_s"] = [((t - from_ns) // 1000) / 1e6 for t in times]
        groups.append(group)
    # Drawn beside power (report.html only): GPU and CPU load in %, memory in MiB.
    extras = (("load", "GPU and CPU load", "%", 0.1,
               lambda c: c.field == "load" and (c.kind == "gpu" or
                                                (c.kind == "cpu" and c.name == "cpu"))),
              ("memory", "Memory in use", "MiB", 1.0 / 1024,
               lambda c: c.kind == "memory" and c.field == "used"))
    for gid, title, unit, scale, pick in extras:
        lines = [{"name": c.name or c.kind, "values": [v.get(c.id) for v in values]}
                 for c in device.channels if not c.constant and pick(c)]
        groups.append({"id": gid, "title": title, "unit": unit, "scale": scale, "lines": lines})
    trees = []  # type: List[Any]
    for p in result.phases:
        if p.summary is None:
            trees.append(None)
        else:
            ps = p.summary.summary
            trees.append(rail_tree_json(list(ps.rails), ps.duration_s))
    return {"format": "edgemon-report", "version": 1, "summary": summary,
            "phase_rail_trees": trees,
            "series": {"t_s": [((f.realtime_ns - from_ns) // 1000) / 1e6 for f in frames],
                       "groups": groups}}


def script_safe_json(data: Any) -> str:
    """JSON text that cannot end or comment out the <script> element it sits
    in: '<', '>' and '&' (only ever inside strings) and U+2028/U+2029 as
    \\u escapes (ScriptSafeJson of the edgemon command)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


_SLOT = "@EDGEMON_DATA@"


def report_template() -> str:
    """client/report/report.html: this package's copy, or the source tree's."""
    from . import _errors
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "report.html"),
                 os.path.join(here, "..", "..", "report", "report.html")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise _errors.Error("edgemon: report.html is missing from the edgemon package (%s)" % here)


def report_html(data: Any) -> str:
    t = report_template()
    return t.replace(_SLOT, script_safe_json(data), 1)


def frames_between(client: Any, from_ns: int, to_ns: int) -> Tuple[List[Any], str]:
    """Raw frames of [from, to] in chunks (as the edgemon command reads them)."""
    import grpc
    from .v1 import edgemon_pb2 as pb
    out = []  # type: List[Any]
    at = from_ns
    for _ in range(100):
        if at > to_ns:
            break
        got, truncated = [], False
        try:
            for ch in client._stub.Query(pb.QueryRequest(from_ns=at, to_ns=to_ns + 1,
                                                         limit=100000),
                                         timeout=client.timeout, metadata=client._metadata):
                got.extend(ch.frames)
                truncated = truncated or ch.truncated
        except grpc.RpcError as e:
            return out, "%s: %s" % (e.code().name, e.details())
        out.extend(got)
        if not truncated or not got:
            break
        at = out[-1].realtime_ns + 1
    return out, ""


def save(result: Any, directory: str) -> None:
    from . import _errors
    client, device = result._client, result._device
    if client is None or device is None:
        raise _errors.Error("edgemon: this result has no client to read its samples from")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise _errors.Error("edgemon: cannot create the output directory %s: %s" %
                            (directory, e.strerror)) from None
    frames, err = frames_between(client, result.summary.from_ns, result.summary.to_ns)
    notes = ["samples not read: " + err] if err else []
    ranges = event_ranges(frames, device)
    note = event_note(device, ranges)
    if note:
        notes.append(note)
    notes.extend(getattr(result, "nvtx_notes", []))
    rails = None
    try:
        rails = result.rail_samples
        if rails is not None and rails.truncated:
            notes.append("rail samples: only the first 2000000 of the range were read")
    except _errors.Error as e:
        notes.append("rail samples not read: %s" % e)
    summary = summary_json(result, device, client.target, notes, throttle_summary(device, ranges))
    files = {
        "summary.json": json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        "samples.csv": samples_csv(frames, device, rails),
        "trace.json": trace_json(result, frames, device, rails),
        "report.html": report_html(report_data(result, frames, device, summary, rails)),
    }
    for name, text in files.items():
        path = os.path.join(directory, name)
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise _errors.Error("edgemon: cannot write %s: %s" % (path, e.strerror)) from None
