#!/usr/bin/python3
"""edgemond's OTLP requests read by decoders that are not edgemon's.

For fixture boards, edgemon-otlp-encode samples a few frames (some values
dropped, as failed reads) and writes the frames' request, a windows request
and the frames as JSON. Then:

  1. the .proto files' fields are the published OTLP v1 ones (the table
     FIELDS below: package, message, field name, number and type), so the
     wire is OTLP's and not only edgemon's;
  2. `protoc --decode=...ExportMetricsServiceRequest` reads both requests
     with no unknown field (no numeric tag in its text);
  3. python3-protobuf, from the same .proto files compiled by protoc
     --python_out, reads them field by field: resource and scope, metric
     names, units, gauge or cumulative monotonic sum, one Metric per name,
     every point at its frame's realtime_ns with the value scaled as the
     documented unit says, and absent values left out (no point, never 0).

With --upstream DIR (a folder holding opentelemetry-proto's own .proto
files), steps 2 and 3 decode with those instead of edgemon's.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

REQUEST = "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"
SERVICE_PROTO = "opentelemetry/proto/collector/metrics/v1/metrics_service.proto"
PROTOS = [
    "opentelemetry/proto/common/v1/common.proto",
    "opentelemetry/proto/resource/v1/resource.proto",
    "opentelemetry/proto/metrics/v1/metrics.proto",
    SERVICE_PROTO,
]

# The published OTLP v1 fields edgemond sends (opentelemetry-proto v1.x):
# message -> {field: (number, type, repeated)}.
FIELDS = {
    "opentelemetry.proto.common.v1.AnyValue": {
        "string_value": (1, "string", False),
        "bool_value": (2, "bool", False),
        "int_value": (3, "int64", False),
        "double_value": (4, "double", False),
    },
    "opentelemetry.proto.common.v1.KeyValue": {
        "key": (1, "string", False),
        "value": (2, "opentelemetry.proto.common.v1.AnyValue", False),
    },
    "opentelemetry.proto.common.v1.InstrumentationScope": {
        "name": (1, "string", False),
        "version": (2, "string", False),
    },
    "opentelemetry.proto.resource.v1.Resource": {
        "attributes": (1, "opentelemetry.proto.common.v1.KeyValue", True),
    },
    "opentelemetry.proto.metrics.v1.ResourceMetrics": {
        "resource": (1, "opentelemetry.proto.resource.v1.Resource", False),
        "scope_metrics": (2, "opentelemetry.proto.metrics.v1.ScopeMetrics", True),
    },
    "opentelemetry.proto.metrics.v1.ScopeMetrics": {
        "scope": (1, "opentelemetry.proto.common.v1.InstrumentationScope", False),
        "metrics": (2, "opentelemetry.proto.metrics.v1.Metric", True),
        "schema_url": (3, "string", False),
    },
    "opentelemetry.proto.metrics.v1.Metric": {
        "name": (1, "string", False),
        "description": (2, "string", False),
        "unit": (3, "string", False),
        "gauge": (5, "opentelemetry.proto.metrics.v1.Gauge", False),
        "sum": (7, "opentelemetry.proto.metrics.v1.Sum", False),
    },
    "opentelemetry.proto.metrics.v1.Gauge": {
        "data_points": (1, "opentelemetry.proto.metrics.v1.NumberDataPoint", True),
    },
    "opentelemetry.proto.metrics.v1.Sum": {
        "data_points": (1, "opentelemetry.proto.metrics.v1.NumberDataPoint", True),
        "aggregation_temporality": (2, "opentelemetry.proto.metrics.v1.AggregationTemporality",
                                    False),
        "is_monotonic": (3, "bool", False),
    },
    "opentelemetry.proto.metrics.v1.NumberDataPoint": {
        "attributes": (7, "opentelemetry.proto.common.v1.KeyValue", True),
        "start_time_unix_nano": (2, "fixed64", False),
        "time_unix_nano": (3, "fixed64", False),
        "as_double": (4, "double", False),
        "as_int": (6, "sfixed64", False),
    },
    "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest": {
        "resource_metrics": (1, "opentelemetry.proto.metrics.v1.ResourceMetrics", True),
    },
    "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse": {
        "partial_success": (1, "opentelemetry.proto.collector.metrics.v1.ExportMetricsPartialSuccess",
                            False),
    },
    "opentelemetry.proto.collector.metrics.v1.ExportMetricsPartialSuccess": {
        "rejected_data_points": (1, "int64", False),
        "error_message": (2, "string", False),
    },
}
TEMPORALITY = {"AGGREGATION_TEMPORALITY_UNSPECIFIED": 0, "AGGREGATION_TEMPORALITY_DELTA": 1,
               "AGGREGATION_TEMPORALITY_CUMULATIVE": 2}
ONEOFS = {("opentelemetry.proto.metrics.v1.Metric", "data"): {"gauge", "sum"},
          ("opentelemetry.proto.metrics.v1.NumberDataPoint", "value"): {"as_double", "as_int"},
          ("opentelemetry.proto.common.v1.AnyValue", "value"):
              {"string_value", "bool_value", "int_value", "double_value"}}

BOARDS = ["xavier-nx", "x86-laptop", "agx-orin", "jetson-nano"]
LABELS = [("site", "lab-2"), ("host.name", "cam-3")]  # a configured name replaces a built-in

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


# --- what docs/otlp.md promises, written out independently of encode.cc ---

FIELD_PLAN = {  # field -> (suffix, unit, scale)
    "load": ("load", "1", "milli"), "freq": ("frequency", "Hz", "kilo"),
    "freq_min": ("frequency_min", "Hz", "kilo"), "freq_max": ("frequency_max", "Hz", "kilo"),
    "online": ("online", "", "one"), "temp": ("temperature", "Cel", "milli"),
    "power": ("power", "W", "milli"), "voltage": ("voltage", "V", "milli"),
    "current": ("current", "A", "milli"), "energy": ("energy", "J", "milli"),
    "duty": ("duty", "1", "milli"), "speed": ("speed", "rpm", "one"),
    "state": ("state", "", "one"), "lfb_blocks": ("lfb_blocks", "", "one"),
    "lfb_size": ("lfb_block", "By", "kibi"), "devices": ("devices", "", "one"),
    "mode": ("mode", "", "one"), "events": ("events", "", "one"),
    "time": ("seconds", "s", "milli"),
}
COUNTERS = {"energy", "events", "time"}  # cumulative monotonic sums
MEMORY_FIELDS = {"total", "used", "free", "available", "buffers", "cached", "shared"}
KIND_LABEL = {"cpu": "cpu", "gpu": "gpu", "emc": "emc", "memory": "memory", "swap": "swap",
              "thermal": "zone", "rail": "rail", "fan": "fan", "engine": "engine",
              "devfreq": "devfreq", "board": None}


def rail_type(name):
    """The semantic conventions' hw.type of what a rail feeds: the first of
    GPU, CPU, memory its name names, else power_supply."""
    words = {"GPU": "gpu", "CPU": "cpu", "DDR": "memory", "DRAM": "memory", "VDDQ": "memory",
             "MEM": "memory"}
    found = sorted((name.upper().find(w), t) for w, t in words.items() if w in name.upper())
    return found[0][1] if found else "power_supply"


def rail_attrs(name, parent, hw_type):
    a = {"hw.id": "rail/" + name, "hw.name": name, "edgemon.rail": name}
    if hw_type:  # the hw.host.* metrics have no hw.type
        a["hw.type"] = hw_type
    if parent:
        a["hw.parent"] = "rail/" + parent
    return a


def expect(ch):
    """(name, unit, is_sum, scale, attributes) of a channel's points."""
    kind, field, name = ch["kind"], ch["field"], ch["name"]
    if field in MEMORY_FIELDS:
        suffix = field if kind in ("memory", "swap") else "memory_" + field
        unit, scale = "By", "kibi"
    else:
        suffix, unit, scale = FIELD_PLAN[field]
        if field == "state" and kind == "engine":
            suffix = "enabled"
    is_sum = field in COUNTERS
    hw = lambda t: {"hw.id": kind + "/" + name, "hw.type": t, "hw.name": name}
    if kind == "rail":  # every rail field carries the rail's hw.* attributes
        metric = {"power": "hw.host.power" if ch["input"] else "hw.power",
                  "energy": "hw.host.energy" if ch["input"] else "hw.energy",
                  "voltage": "hw.voltage"}.get(field, "edgemon.rail." + suffix)
        host = ch["input"] and field in ("power", "energy")
        attrs = rail_attrs(name, ch["parent"], "voltage" if field == "voltage" else
                           None if host else rail_type(name))
        if ch["input"]:
            attrs["edgemon.rail.input"] = True
    elif kind == "thermal" and field == "temp":
        metric, attrs = "hw.temperature", hw("temperature")
    elif kind == "fan" and field == "speed":
        metric, attrs = "hw.fan.speed", hw("fan")
    elif kind == "gpu" and field == "load":
        metric, attrs = "hw.gpu.utilization", dict(hw("gpu"), **{"hw.gpu.task": "general"})
    elif kind == "engine" and field == "load" and name.startswith(("NVENC", "MSENC", "NVDEC")):
        task = "decoder" if name.startswith("NVDEC") else "encoder"
        metric, attrs = "hw.gpu.utilization", dict(hw("gpu"), **{"hw.gpu.task": task})
    else:
        prefix = re.sub(r"[^a-zA-Z0-9]", "_", name) if kind == "board" else kind
        metric = "edgemon.%s.%s" % (prefix, suffix)
        label = KIND_LABEL.get(kind, kind)
        attrs = {label: name} if label else {}
    if ch["device"] and ch["device"] != name:
        attrs["device"] = ch["device"]
    return metric, unit, is_sum, scale, attrs


def scaled(scale, v):
    return {"one": ("as_int", v), "milli": ("as_double", v / 1000),
            "kilo": ("as_int", v * 1000), "kibi": ("as_int", v * 1024)}[scale]


# --- decoding ---

def attrs_of(kvs):
    out = {}
    for kv in kvs:
        which = kv.value.WhichOneof("value")
        check(kv.key not in out, "attribute %s twice" % kv.key)
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


def protoc_decode(protoc, include, path):
    with open(path, "rb") as f:
        run = subprocess.run([protoc, "--decode=" + REQUEST, "-I", include, SERVICE_PROTO],
                             stdin=f, capture_output=True, text=True)
    check(run.returncode == 0, "protoc --decode %s: %s" % (path, run.stderr.strip()))
    unknown = [line for line in run.stdout.splitlines() if re.match(r"^\s*\d+\s*[:{]", line)]
    check(not unknown, "protoc --decode %s: unknown fields %s" % (path, unknown[:3]))
    return run.stdout


def check_schema(exact):
    """The .proto files' messages and fields against FIELDS (exact: no other
    field either, as in edgemon's own files; upstream's have more)."""
    from google.protobuf import descriptor_pool
    from google.protobuf.descriptor import FieldDescriptor as FD
    pool = descriptor_pool.Default()
    type_names = {v: k[5:].lower() for k, v in vars(FD).items()
                  if k.startswith("TYPE_") and isinstance(v, int)}
    for message, fields in FIELDS.items():
        d = pool.FindMessageTypeByName(message)
        for name, (number, typ, repeated) in fields.items():
            f = d.fields_by_name.get(name)
            if not check(f is not None, "%s.%s missing" % (message, name)):
                continue
            check(f.number == number, "%s.%s is field %d, OTLP has %d" %
                  (message, name, f.number, number))
            got = (f.message_type.full_name if f.type == FD.TYPE_MESSAGE else
                   f.enum_type.full_name if f.type == FD.TYPE_ENUM else type_names[f.type])
            check(got == typ, "%s.%s is %s, OTLP has %s" % (message, name, got, typ))
            check((f.label == FD.LABEL_REPEATED) == repeated,
                  "%s.%s repeated=%s" % (message, name, not repeated))
        for f in d.fields if exact else []:
            check(f.name in fields, "%s.%s is not in the OTLP table" % (message, f.name))
    for (message, oneof), members in ONEOFS.items():
        d = pool.FindMessageTypeByName(message)
        got = {f.name for f in d.oneofs_by_name[oneof].fields}
        check(got == members if exact else members <= got,
              "%s oneof %s: %s" % (message, oneof, sorted(got)))
    enum = pool.FindEnumTypeByName("opentelemetry.proto.metrics.v1.AggregationTemporality")
    check({v.name: v.number for v in enum.values} == TEMPORALITY, "AggregationTemporality")
    check(pool.FindEnumTypeByName("opentelemetry.proto.metrics.v1.AggregationTemporality") is
          pool.FindMessageTypeByName("opentelemetry.proto.metrics.v1.Sum")
          .fields_by_name["aggregation_temporality"].enum_type, "Sum's temporality type")
    svc = pool.FindServiceByName("opentelemetry.proto.collector.metrics.v1.MetricsService")
    export = svc.methods_by_name["Export"]
    check(export.input_type.full_name == REQUEST and export.output_type.full_name ==
          "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse",
          "MetricsService/Export")


def check_resource(rm, data, board):
    ident = data["identity"]
    attrs = attrs_of(rm.resource.attributes)
    want = {"service.name": "edgemond", "service.instance.id": ident["host_name"],
            "host.name": "cam-3", "host.id": ident["host_id"], "site": "lab-2"}
    for key, src in (("edgemon.board.model", "board_model"), ("edgemon.board.soc", "soc"),
                     ("edgemon.board.l4t", "l4t")):
        if ident[src]:
            want[key] = ident[src]
    for k, v in want.items():
        check(attrs.get(k) == v, "%s: resource %s = %r, want %r" % (board, k, attrs.get(k), v))
    check(isinstance(attrs.get("service.version"), str) and attrs["service.version"],
          "%s: service.version" % board)
    extra = set(attrs) - set(want) - {"service.version"}
    check(not extra, "%s: resource attributes not asked for: %s" % (board, extra))
    check(len(rm.scope_metrics) == 1, "%s: one ScopeMetrics" % board)
    scope = rm.scope_metrics[0].scope
    check(scope.name == "edgemon" and scope.version == attrs.get("service.version"),
          "%s: scope %s %s" % (board, scope.name, scope.version))
    check(rm.scope_metrics[0].schema_url == "https://opentelemetry.io/schemas/1.44.0",
          "%s: schema_url %r" % (board, rm.scope_metrics[0].schema_url))


def check_frames(req, data, board):
    check(len(req.resource_metrics) == 1, "%s: one ResourceMetrics" % board)
    rm = req.resource_metrics[0]
    check_resource(rm, data, board)
    metrics = rm.scope_metrics[0].metrics
    names = [m.name for m in metrics]
    check(len(names) == len(set(names)), "%s: a metric name twice: %s" % (board, names))

    want_points = {}  # (metric, attrs, time) -> (oneof, value)
    want_meta = {}  # metric -> (unit, is_sum)
    energy_metrics = {expect(c)[0] for c in data["channels"] if c["field"] == "energy"}
    absent = 0
    for ch in data["channels"]:
        if ch["constant"]:
            continue
        metric, unit, is_sum, scale, attrs = expect(ch)
        check(want_meta.setdefault(metric, (unit, is_sum)) == (unit, is_sum),
              "%s: %s planned with two units" % (board, metric))
        key_attrs = tuple(sorted(attrs.items()))
        for frame in data["frames"]:
            v = frame["values"][ch["id"]]
            if v is None:
                absent += 1
                continue
            key = (metric, key_attrs, frame["realtime_ns"])
            check(key not in want_points, "%s: two channels on one series %s" % (board, key))
            want_points[key] = scaled(scale, v)
    check(absent > 0, "%s: the fixture run has no absent value to leave out" % board)

    got_points = {}
    for m in metrics:
        which = m.WhichOneof("data")
        if not check(m.name in want_meta, "%s: unexpected metric %s" % (board, m.name)):
            continue
        unit, is_sum = want_meta[m.name]
        check(m.unit == unit, "%s: %s unit %r, want %r" % (board, m.name, m.unit, unit))
        check(m.description != "", "%s: %s has no description" % (board, m.name))
        check(which == ("sum" if is_sum else "gauge"), "%s: %s is a %s" % (board, m.name, which))
        if which == "sum":
            check(m.sum.aggregation_temporality == TEMPORALITY["AGGREGATION_TEMPORALITY_CUMULATIVE"]
                  and m.sum.is_monotonic, "%s: %s not a cumulative monotonic sum" % (board, m.name))
        points = m.sum.data_points if which == "sum" else m.gauge.data_points
        check(len(points) > 0, "%s: %s has no point" % (board, m.name))
        for p in points:
            attrs = attrs_of(p.attributes)
            if which == "sum":  # energy from the counters' start; other counters unknown
                start = data["counter_start_ns"] if m.name in energy_metrics else 0
                check(p.start_time_unix_nano == start,
                      "%s: %s start %d" % (board, m.name, p.start_time_unix_nano))
            else:
                check(p.start_time_unix_nano == 0, "%s: gauge %s has a start" % (board, m.name))
            key = (m.name, tuple(sorted(attrs.items())), p.time_unix_nano)
            check(key not in got_points, "%s: point twice %s" % (board, key))
            kind = p.WhichOneof("value")
            got_points[key] = (kind, getattr(p, kind) if kind else None)
    missing = set(want_points) - set(got_points)
    extra = set(got_points) - set(want_points)
    check(not missing, "%s: %d points missing, e.g. %s" % (board, len(missing), sorted(missing)[:2]))
    check(not extra, "%s: %d points not in the frames (an absent value sent?), e.g. %s" %
          (board, len(extra), sorted(extra)[:2]))
    wrong = [(k, want_points[k], got_points[k]) for k in want_points.keys() & got_points.keys()
             if want_points[k] != got_points[k]]
    check(not wrong, "%s: %d values differ, e.g. %s" % (board, len(wrong), wrong[:2]))
    frame_times = {f["realtime_ns"] for f in data["frames"]}
    check({k[2] for k in got_points} <= frame_times, "%s: a point off the frames' times" % board)
    return len(got_points), names


def check_windows(req, data, board):
    rm = req.resource_metrics[0]
    check_resource(rm, data, board)
    want = {}
    for w in data["windows"]:
        if w["end_ns"] is None:
            continue
        for r in w["rails"]:
            if r["energy_mj"] is None:
                continue
            metric = "edgemon.window.host.energy" if r["input"] else "edgemon.window.energy"
            attrs = rail_attrs(r["name"], r["parent"], None if r["input"] else rail_type(r["name"]))
            if r["input"]:
                attrs["edgemon.rail.input"] = True
            attrs.update({"edgemon.window.label": w["label"], "edgemon.window.id": w["id"]})
            if w["abandoned"]:
                attrs["edgemon.window.abandoned"] = True
            want[(metric, w["id"], r["name"])] = (attrs, w["start_ns"], w["end_ns"],
                                                  r["energy_mj"] / 1000)
    got = {}
    for m in rm.scope_metrics[0].metrics:
        check(m.unit == "J" and m.WhichOneof("data") == "gauge",
              "%s: %s is %s in %r" % (board, m.name, m.WhichOneof("data"), m.unit))
        for p in m.gauge.data_points:
            attrs = attrs_of(p.attributes)
            attrs.pop("device", None)
            got[(m.name, attrs["edgemon.window.id"], attrs["hw.name"])] = (
                attrs, p.start_time_unix_nano, p.time_unix_nano, p.as_double)
    check(want == got, "%s: window points differ:\n want %s\n got  %s" % (board, want, got))
    check(len(want) > 0, "%s: no window point to check" % board)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder", required=True)
    ap.add_argument("--protoc", required=True)
    ap.add_argument("--proto-dir", required=True, help="edgemon's OTLP .proto root")
    ap.add_argument("--upstream", help="opentelemetry-proto's .proto root, to decode with")
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        include = args.upstream or args.proto_dir
        py_out = os.path.join(tmp, "py")
        os.mkdir(py_out)
        subprocess.run([args.protoc, "-I", include, "--python_out=" + py_out] + PROTOS,
                       check=True)
        sys.path.insert(0, py_out)
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as svc
        check_schema(exact=not args.upstream)

        total = 0
        for board in BOARDS:
            base = os.path.join(tmp, board)
            cmd = [args.encoder, "--root", os.path.join(args.fixtures, board), "--frames", "4",
                   "--absent-every", "5", "--out", base + ".bin", "--windows-out",
                   base + "-windows.bin", "--json", base + ".json"]
            for k, v in LABELS:
                cmd += ["--label", "%s=%s" % (k, v)]
            subprocess.run(cmd, check=True)
            with open(base + ".json") as f:
                data = json.load(f)
            text = protoc_decode(args.protoc, include, base + ".bin")
            check("time_unix_nano: %d" % data["frames"][0]["realtime_ns"] in text,
                  "%s: protoc's text lacks the first frame's time" % board)
            protoc_decode(args.protoc, include, base + "-windows.bin")

            req = svc.ExportMetricsServiceRequest()
            with open(base + ".bin", "rb") as f:
                req.ParseFromString(f.read())
            n, names = check_frames(req, data, board)
            total += n
            wreq = svc.ExportMetricsServiceRequest()
            with open(base + "-windows.bin", "rb") as f:
                wreq.ParseFromString(f.read())
            check_windows(wreq, data, board)
            print("%s: %d points in %d metrics (%s)" % (board, n, len(names), ", ".join(names)))

    for f in failures:
        print("FAIL:", f)
    print("otlp_wire: %s" % ("FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
