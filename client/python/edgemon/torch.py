"""Power inside a PyTorch profiler trace.

``merge(trace, out)`` reads a Chrome trace written by ``torch.profiler``
(``prof.export_chrome_trace(path)``) and writes it again with edgemond's
history over the trace's span added on the trace's own clock:

* counter tracks (``"ph": "C"``): power per rail (W), temperature per
  thermal zone (C) and the CPU/GPU/EMC clocks (MHz), one process each
  ("edgemon power rails (W)", ...);
* ``energy_j`` in the ``args`` of every ``record_function`` range and every
  ``ProfilerStep#N``: the board input rail's energy over the range (None
  without exactly one input rail), with ``energy_j_by_rail`` beside it. Each
  is the daemon's summary of the range, the figure ``edgemon attach --from
  --to`` gives; nested ranges are counted inclusively. A record_function
  range is an event of category ``user_annotation`` or, in a trace without
  categories (PyTorch built without Kineto, as Debian's), one whose name has
  no ``::`` (operators are ``aten::...``).

The trace's clock (client/python/tests/test_torch.py establishes it with a
known sleep between two readings of the wall clock): PyTorch built with
Kineto writes ``ts`` in microseconds on the Unix epoch clock (or counted from
``baseTimeNanoseconds``); built without it (Debian's 1.13) it writes ``ts``
counted from the profiler's start, whose Unix time is
``trace_start_ns(prof)`` and is not in the file: pass it as ``start_ns``.
``on_trace_ready(directory)``, a handler for ``torch.profiler.profile``,
exports each trace and merges it with the right start.

The daemon must hold the trace's span (its ring store keeps the recent
history): merge right after profiling, on the profiled board.
"""
import json
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _bundle, _errors

# The counter tracks' processes in the merged trace: numbers no real process
# id reaches (Linux's pid_max is at most 2**22).
_PIDS = {1: 2**30 + 1, 2: 2**30 + 2, 3: 2**30 + 3}
_PROCESS_NAMES = {1: "edgemon power rails (W)", 2: "edgemon temperatures (C)",
                  3: "edgemon clocks (MHz)"}
# A trace's span must be on the Unix epoch clock: after 2001-09-09 (1e9 s)
# and not more than a day ahead of now.
_EPOCH_FLOOR_NS = 10**18


# ts below this many us are counted from the profiler's start (about 11.6
# days), not from the Unix epoch.
_RELATIVE_US = 10**12


def _annotated(e: Dict[str, Any]) -> bool:
    """A record_function range or a profiler step."""
    name = e.get("name")
    if e.get("ph") != "X" or not isinstance(name, str):
        return False
    if name.startswith("ProfilerStep#"):
        return True
    return e["cat"] == "user_annotation" if "cat" in e else "::" not in name


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v \
        and abs(v) != float("inf")


def _span(events: List[Any]) -> Tuple[float, float]:
    """The trace's span in its own us."""
    lo, hi = None, None
    for e in events:
        if not isinstance(e, dict) or not _number(e.get("ts")) or e.get("ph") == "M":
            continue
        t0 = e["ts"]
        t1 = t0 + (e["dur"] if _number(e.get("dur")) and e["dur"] > 0 else 0)
        lo = t0 if lo is None else min(lo, t0)
        hi = t1 if hi is None else max(hi, t1)
    if lo is None:
        raise _errors.InvalidArgument("edgemon: the trace has no timed event")
    return lo, hi


def _base(doc: Dict[str, Any], lo: float, start_ns: Optional[int]) -> int:
    """The Unix ns of the trace's ts 0."""
    base = doc.get("baseTimeNanoseconds")
    if base is not None:
        if not isinstance(base, int) or isinstance(base, bool) or base < 0:
            raise _errors.InvalidArgument("edgemon: baseTimeNanoseconds is not a count of ns")
        return base
    if lo >= _RELATIVE_US:
        return 0  # ts on the Unix epoch
    if start_ns is None:
        raise _errors.InvalidArgument(
            "edgemon: the trace's ts count from the profiler's start (PyTorch without Kineto): "
            "give start_ns=edgemon.torch.trace_start_ns(prof), or merge with on_trace_ready")
    if isinstance(start_ns, bool) or not isinstance(start_ns, int) or start_ns < _EPOCH_FLOOR_NS:
        raise _errors.InvalidArgument("edgemon: start_ns is not a Unix time in ns")
    return start_ns


def trace_start_ns(prof: Any) -> int:
    """The Unix time (ns) a torch.profiler.profile's trace starts at: its
    ts 0 when PyTorch has no Kineto."""
    return int(prof.profiler.kineto_results.trace_start_us()) * 1000


def _energy(summary: Any) -> Tuple[Optional[float], Dict[str, Optional[float]]]:
    total = _bundle.total_energy_mj(summary.rails)
    return (None if total is None else total / 1000.0,
            {r.name: _bundle.present(r, "energy_mj", 1000.0) for r in summary.rails})


def merge(trace: str, out: Optional[str] = None, client: Any = None,
          start_ns: Optional[int] = None) -> Dict[str, Any]:
    """Adds edgemond's counter tracks and energy per range to the Chrome
    trace at ``trace`` and writes it to ``out`` (default: beside it, with
    ``.edgemon.json`` for ``.json``). Returns {"out", "from_ns", "to_ns",
    "counters", "ranges", "notes"}. ``client``: an :func:`edgemon.connect`
    client (default: a new one to the local daemon). ``start_ns``: the Unix
    time of ts 0 for a trace whose ts count from the profiler's start
    (:func:`trace_start_ns`)."""
    with open(trace, "rb") as f:
        try:
            doc = json.load(f)
        except ValueError as e:
            raise _errors.InvalidArgument("edgemon: %s is not JSON: %s" % (trace, e))
    if isinstance(doc, list):
        doc = {"traceEvents": doc}  # PyTorch without Kineto writes the bare list
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise _errors.InvalidArgument("edgemon: %s has no traceEvents list" % trace)
    lo, hi = _span(events)
    base_ns = _base(doc, lo, start_ns)
    from_ns, to_ns = base_ns + int(round(lo * 1000)), base_ns + int(round(hi * 1000))
    from ._client import now_ns
    if from_ns < _EPOCH_FLOOR_NS or to_ns > now_ns() + 86400 * 10**9:
        raise _errors.InvalidArgument(
            "edgemon: the trace's span (%r .. %r us) is not on the Unix epoch clock: not a "
            "torch.profiler trace of this machine?" % (lo, hi))
    if client is None:
        from ._client import connect
        client = connect()
    device = client.device()
    frames, failed = _bundle.frames_between(client, from_ns, to_ns)
    notes = []  # type: List[str]
    if failed:
        notes.append("samples not read: " + failed)
    if not frames:
        notes.append("the daemon holds no frame in the trace's span")

    def ts(ns: int) -> float:
        return (ns - base_ns) / 1000.0

    added = []  # type: List[Dict[str, Any]]
    for kind, pid in _PIDS.items():
        added.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_name",
                      "args": {"name": _PROCESS_NAMES[kind]}})
    values = [dict(zip(f.ids, f.values)) for f in frames]
    counters = 0
    for cid, kind, name, unit, scale in _bundle._tracks(device):
        for f, vals in zip(frames, values):
            v = vals.get(cid)
            if v is None:
                continue  # missing: no point, never 0
            added.append({"ph": "C", "pid": _PIDS[kind], "name": name, "ts": ts(f.realtime_ns),
                          "args": {unit: round(v * scale, 3)}})
            counters += 1
    ranges = 0
    for e in events:
        if not isinstance(e, dict) or not _annotated(e) or not _number(e.get("ts")):
            continue
        start = base_ns + int(round(e["ts"] * 1000))
        dur = e.get("dur") if _number(e.get("dur")) and e.get("dur") > 0 else 0
        end = max(start + int(round(dur * 1000)), start + 1)
        try:
            s = client.summarize(from_ns=start, to_ns=end)
        except _errors.Error as err:
            notes.append("%s: not summarized: %s" % (e.get("name"), err))
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        args["energy_j"], args["energy_j_by_rail"] = _energy(s)
        e["args"] = args
        ranges += 1
    doc["traceEvents"] = events + added
    other = doc.get("otherData") if isinstance(doc.get("otherData"), dict) else {}
    other["edgemon"] = {"board": device.board.model, "from_ns": from_ns, "to_ns": to_ns,
                        "energy": "the board input rail's energy over each range, inclusive of "
                                  "nested ranges", "notes": notes}
    doc["otherData"] = other
    if out is None:
        root, ext = os.path.splitext(trace)
        out = root + ".edgemon" + (ext or ".json")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, out)
    return {"out": out, "from_ns": from_ns, "to_ns": to_ns, "counters": counters,
            "ranges": ranges, "notes": notes}


def on_trace_ready(directory: str, client: Any = None) -> Callable[[Any], None]:
    """A ``torch.profiler.profile(on_trace_ready=...)`` handler: exports each
    trace to ``directory/trace_<step>.json`` (``prof.step_num`` when the trace
    is ready) and merges it into ``trace_<step>.edgemon.json``."""
    os.makedirs(directory, exist_ok=True)

    def handler(prof: Any) -> None:
        step = getattr(prof, "step_num", 0)
        path = os.path.join(directory, "trace_%d.json" % step)
        prof.export_chrome_trace(path)
        merge(path, client=client, start_ns=trace_start_ns(prof))

    return handler
