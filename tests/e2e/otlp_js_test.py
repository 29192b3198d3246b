#!/usr/bin/python3
"""edgemond's OTLP against the OpenTelemetry JS SDK, read by a decoder that
neither wrote.

One loopback sink takes two OTLP/HTTP requests: the first batch edgemond
pushes from a simulated AGX Orin, and the export of the official JS SDK
(@opentelemetry/sdk-metrics with @opentelemetry/exporter-metrics-otlp-proto,
installed from npm by scripts/install-otel-js.sh) given the same gauge
(hw.temperature) and cumulative sum (hw.energy): the same resource, scope,
names, units, descriptions, value types, attributes and values. Both bodies
are decoded with a plain protobuf wire decoder that knows only
opentelemetry-proto's published field numbers, and compared field by field:
the path and content type, every field number present at every level, wire
types, resource attributes (the SDK adds only telemetry.sdk.*), the scope
and its schema_url, each metric's name, unit, description, data kind,
temporality and monotonicity, and each point's attributes, value field
(as_int or as_double) and value. The differences the data model allows are
named: time_unix_nano is each sender's own time (present in both), and
start_time_unix_nano is optional on gauges and left out by edgemond on a sum
whose counting start it does not know (docs/otlp.md).

  otlp_js_test.py --edgemond B --sim S --fixtures F --node N --modules DIR
"""
import argparse
import http.server
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Checks, expect, serve_http, start_sim, stop_process, varint  # noqa: E402

# opentelemetry-proto v1, as published: message -> {field: (name, kind)};
# kind is a message name, or string, bool, varint, sint (zigzag), fixed64,
# double, sfixed64.
SCHEMA = {
    "Request": {1: ("resource_metrics", "ResourceMetrics")},
    "ResourceMetrics": {1: ("resource", "Resource"), 2: ("scope_metrics", "ScopeMetrics"),
                        3: ("schema_url", "string")},
    "Resource": {1: ("attributes", "KeyValue"), 2: ("dropped_attributes_count", "varint")},
    "ScopeMetrics": {1: ("scope", "Scope"), 2: ("metrics", "Metric"), 3: ("schema_url", "string")},
    "Scope": {1: ("name", "string"), 2: ("version", "string"), 3: ("attributes", "KeyValue"),
              4: ("dropped_attributes_count", "varint")},
    "KeyValue": {1: ("key", "string"), 2: ("value", "AnyValue")},
    "AnyValue": {1: ("string_value", "string"), 2: ("bool_value", "bool"),
                 3: ("int_value", "varint"), 4: ("double_value", "double")},
    "Metric": {1: ("name", "string"), 2: ("description", "string"), 3: ("unit", "string"),
               5: ("gauge", "Gauge"), 7: ("sum", "Sum"), 9: ("histogram", "Histogram"),
               12: ("metadata", "KeyValue")},
    "Gauge": {1: ("data_points", "NumberDataPoint")},
    "Sum": {1: ("data_points", "NumberDataPoint"), 2: ("aggregation_temporality", "varint"),
            3: ("is_monotonic", "bool")},
    "Histogram": {},
    "NumberDataPoint": {7: ("attributes", "KeyValue"), 2: ("start_time_unix_nano", "fixed64"),
                        3: ("time_unix_nano", "fixed64"), 4: ("as_double", "double"),
                        6: ("as_int", "sfixed64"), 5: ("exemplars", "Exemplar"),
                        8: ("flags", "varint")},
    "Exemplar": {},
}
WIRE = {"string": 2, "bool": 0, "varint": 0, "fixed64": 1, "double": 1, "sfixed64": 1}


def decode(b, message):
    """{field name: [values]} of one message; raises on a field number or
    wire type the published schema does not give."""
    out = {}
    i = 0
    fields = SCHEMA[message]
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        expect(num in fields, f"{message}: field {num} is not in opentelemetry-proto")
        name, kind = fields[num]
        want_wt = WIRE.get(kind, 2)
        expect(wt == want_wt, f"{message}.{name}: wire type {wt}, the schema says {want_wt}")
        if wt == 0:
            v, i = varint(b, i)
            if kind == "bool":
                v = bool(v)
            elif kind == "varint" and v >= 1 << 63:
                v -= 1 << 64  # int64 in two's complement
        elif wt == 1:
            raw = b[i:i + 8]
            i += 8
            v = struct.unpack("<d" if kind == "double" else "<q" if kind == "sfixed64" else "<Q",
                              raw)[0]
        else:
            ln, i = varint(b, i)
            raw = b[i:i + ln]
            i += ln
            v = raw.decode() if kind == "string" else decode(raw, kind)
        out.setdefault(name, []).append(v)
    return out


def one(msg, name, default=None):
    v = msg.get(name)
    return v[0] if v else default


def attrs(kvs):
    """{key: (value kind, value)} of a KeyValue list."""
    out = {}
    for kv in kvs or []:
        value = one(kv, "value", {})
        expect(len(value) == 1, f"attribute {one(kv, 'key')}: {value}")
        (kind, v), = value.items()
        out[one(kv, "key")] = (kind, v[0])
    return out


class Sink:
    """Keeps every POST: (path, content type, body)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = b""  # the JS exporter streams its body in chunks
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        body += self.rfile.read(size)
                        self.rfile.readline()
                        if size == 0:
                            break
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with owner.lock:
                    owner.requests.append((self.path, self.headers.get("Content-Type"),
                                           self.headers.get("User-Agent", ""), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = serve_http(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/metrics"

    def taken(self):
        with self.lock:
            return list(self.requests)


def metric(req, name):
    rm = one(req, "resource_metrics")
    for sm in rm.get("scope_metrics", []):
        for m in sm.get("metrics", []):
            if one(m, "name") == name:
                return m
    return None


def points(m):
    data = one(m, "sum") or one(m, "gauge")
    return data.get("data_points", [])


def main():
    p = argparse.ArgumentParser()
    for a in ("--edgemond", "--sim", "--fixtures", "--node", "--modules"):
        p.add_argument(a, required=True)
    args = p.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="edgemon-otlp-js-") as tmp:
        root = os.path.join(tmp, "board")
        log = open(os.path.join(tmp, "sim.log"), "w")
        sim, _ = start_sim(args.sim, "agx-orin", root, args.fixtures, log, extra=("--rate-hz", "20"))
        sink = Sink()
        cfg = os.path.join(tmp, "edgemond.toml")
        with open(cfg, "w") as f:
            f.write(f'[daemon]\ninterval_ms = 100\nenergy_rate_hz = 0\n'
                    f'[[push]]\nurl = "{sink.url}"\nprotocol = "otlp"\nsend = ["frames"]\n'
                    f'interval = "200ms"\nlabels = {{ site = "lab-2" }}\n')
        dlog = open(os.path.join(tmp, "edgemond.log"), "w")
        d = subprocess.Popen([args.edgemond, "--root", root, "--db", os.path.join(tmp, "e.db"),
                              "--config", cfg, "--listen",
                              "unix:" + os.path.join(tmp, "e.sock")],
                             stdout=subprocess.DEVNULL, stderr=dlog)
        try:
            deadline = time.time() + 30
            while not sink.taken():
                expect(d.poll() is None and time.time() < deadline, "edgemond pushed nothing")
                time.sleep(0.1)
        finally:
            stop_process(d)
            stop_process(sim)
        path_e, type_e, _, body_e = sink.taken()[0]
        ours = decode(body_e, "Request")

        # The same gauge and sum, handed to the JS SDK: each series' first point.
        rm = one(ours, "resource_metrics")
        sm = one(rm, "scope_metrics")
        scope = one(sm, "scope")
        spec_metrics = []
        for name in ("hw.temperature", "hw.energy"):
            m = metric(ours, name)
            expect(m is not None, f"edgemond sent no {name}")
            first = {}
            for dp in points(m):
                key = tuple(sorted(attrs(dp.get("attributes")).items()))
                first.setdefault(key, dp)
            pts = list(first.values())
            is_int = "as_int" in pts[0]
            spec_metrics.append({
                "name": name, "unit": one(m, "unit", ""), "description": one(m, "description", ""),
                "sum": "sum" in m, "int": is_int,
                "points": [{"attributes": {k: v for k, (_, v) in attrs(dp.get("attributes")).items()},
                            "value": one(dp, "as_int" if is_int else "as_double")} for dp in pts]})
        spec = {"url": sink.url,
                "resource": {k: v for k, (_, v) in attrs(one(rm, "resource").get("attributes")).items()},
                "scope": {"name": one(scope, "name"), "version": one(scope, "version"),
                          "schema_url": one(sm, "schema_url", "")},
                "metrics": spec_metrics}
        spec_path = os.path.join(tmp, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        n_before = len(sink.taken())
        env = dict(os.environ, NODE_PATH=args.modules)
        js = subprocess.run([args.node, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "otlp_js_export.js"), spec_path],
                            env=env, capture_output=True, text=True, timeout=60)
        expect(js.returncode == 0, f"the JS exporter failed: {js.stderr[-2000:]}")
        js_requests = [r for r in sink.taken()[n_before:] if "OTel-OTLP-Exporter" in r[2]]
        expect(len(js_requests) == 1, f"{len(js_requests)} requests from the JS exporter")
        path_j, type_j, _, body_j = js_requests[0]
        theirs = decode(body_j, "Request")

        def transport():
            expect(path_e == path_j == "/v1/metrics", f"paths {path_e} {path_j}")
            expect(type_e == type_j == "application/x-protobuf", f"types {type_e} {type_j}")

        def resource():
            e = attrs(one(one(ours, "resource_metrics"), "resource").get("attributes"))
            j = attrs(one(one(theirs, "resource_metrics"), "resource").get("attributes"))
            for k, v in e.items():
                expect(j.get(k) == v, f"resource {k}: edgemond {v}, JS {j.get(k)}")
            extra = [k for k in j if k not in e and not k.startswith("telemetry.sdk.")]
            expect(not extra, f"resource attributes only JS sent: {extra}")
            expect(e["service.name"] == ("string_value", "edgemond"), f"service.name {e}")
            expect(e["site"] == ("string_value", "lab-2"), "the configured label")

        def scope_fields():
            e_sm = one(one(ours, "resource_metrics"), "scope_metrics")
            j_sm = one(one(theirs, "resource_metrics"), "scope_metrics")
            expect(one(e_sm, "scope") == one(j_sm, "scope"),
                   f"scope {one(e_sm, 'scope')} vs {one(j_sm, 'scope')}")
            expect(one(e_sm, "schema_url") == one(j_sm, "schema_url") ==
                   "https://opentelemetry.io/schemas/1.44.0", "schema_url")
            expect(len(j_sm["metrics"]) == 2, f"JS sent {len(j_sm['metrics'])} metrics")

        def metrics_fields():
            for want in spec_metrics:
                name = want["name"]
                e, j = metric(ours, name), metric(theirs, name)
                expect(j is not None, f"JS sent no {name}")
                for field in ("name", "unit", "description"):
                    expect(one(e, field) == one(j, field),
                           f"{name}.{field}: {one(e, field)!r} vs {one(j, field)!r}")
                expect(set(e) == set(j), f"{name}: fields {sorted(e)} vs {sorted(j)}")
                kind = "sum" if want["sum"] else "gauge"
                expect(kind in e, f"{name}: edgemond sent no {kind}")
                if want["sum"]:
                    for field in ("aggregation_temporality", "is_monotonic"):
                        expect(one(one(e, "sum"), field) == one(one(j, "sum"), field),
                               f"{name}.{field}: {one(one(e, 'sum'), field)} vs "
                               f"{one(one(j, 'sum'), field)}")
                    expect(one(one(e, "sum"), "aggregation_temporality") == 2 and
                           one(one(e, "sum"), "is_monotonic") is True, f"{name}: not cumulative")
                by_attrs = {}
                for dp in points(e):
                    by_attrs.setdefault(tuple(sorted(attrs(dp.get("attributes")).items())), dp)
                jp = {tuple(sorted(attrs(dp.get("attributes")).items())): dp for dp in points(j)}
                expect(set(jp) == set(by_attrs), f"{name}: series differ: {set(jp) ^ set(by_attrs)}")
                for key, dp in by_attrs.items():
                    other = jp[key]
                    # start_time_unix_nano: optional (see the header).
                    fe, fj = set(dp) - {"start_time_unix_nano"}, set(other) - {"start_time_unix_nano"}
                    expect(fe == fj, f"{name} {dict(key)}: point fields {sorted(fe)} vs {sorted(fj)}")
                    vf = "as_int" if "as_int" in dp else "as_double"
                    expect(one(dp, vf) == one(other, vf),
                           f"{name} {dict(key)}: {vf} {one(dp, vf)} vs {one(other, vf)}")
                    expect(one(dp, "time_unix_nano", 0) > 0 and one(other, "time_unix_nano", 0) > 0,
                           f"{name}: time_unix_nano")

        checks.run("both requests on /v1/metrics as application/x-protobuf", transport)
        checks.run("the resource attributes match the SDK's", resource)
        checks.run("scope and schema_url match", scope_fields)
        checks.run("the gauge and the cumulative sum match field by field", metrics_fields)
        if checks.failed:
            with open(os.path.join(tmp, "edgemond.log")) as f:
                print(f.read()[-2000:])
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
