#!/usr/bin/python3
"""Interoperability test of edgemon's gRPC API with a client that is not ours:
Debian's python3-grpcio and python3-protobuf, with stubs generated at test time
by protoc + grpc_python_plugin from the same .proto. It starts edgemond on a
copy of a fixture board (plus a fake process), calls every RPC of
edgemon.v1.Telemetry, the standard health service and server reflection, and
checks real content against the fixture's values. A second, short daemon on
the real root checks that ListProcesses sees the daemon itself.

  interop_test.py --edgemond build/daemon/edgemond --fixtures tests/fixtures \
      --proto-dir proto [--protoc protoc] [--plugin /usr/bin/grpc_python_plugin]

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from harness import Checks, expect  # noqa: E402 (shared by the e2e scripts)

ARGS = None
GRPC_PROTO = "/usr/share/grpc-proto"

# The fixture's VDD_GPU_SOC channel (agx-orin ina3221 1-0040 channel 1).
GPU_SOC_MV = 4984
GPU_SOC_MA = 460
GPU_SOC_KEY = "rail/VDD_GPU_SOC/power"
FAKE_PID = 4242


def generate_stubs(out):
    """protoc --python_out/--grpc_out into `out`; returns the imported modules."""
    # health.proto and reflection.proto are compiled from copies outside a
    # grpc/ directory so that their modules do not shadow the grpc package.
    # Their proto package (grpc.health.v1, ...) is unchanged.
    extra = os.path.join(out, "extra")
    os.makedirs(extra)
    shutil.copy(os.path.join(GRPC_PROTO, "grpc/health/v1/health.proto"),
                os.path.join(extra, "health.proto"))
    shutil.copy(os.path.join(GRPC_PROTO, "grpc/reflection/v1alpha/reflection.proto"),
                os.path.join(extra, "reflection.proto"))
    if not os.access(ARGS.plugin, os.X_OK):
        raise SystemExit(f"grpc_python_plugin not found at {ARGS.plugin} "
                         "(it ships with protobuf-compiler-grpc)")
    for inc, proto in ((ARGS.proto_dir, "edgemon/v1/edgemon.proto"),
                       (extra, "health.proto"), (extra, "reflection.proto")):
        subprocess.run([ARGS.protoc, f"--python_out={out}", f"--grpc_out={out}",
                        f"--plugin=protoc-gen-grpc={ARGS.plugin}", "-I", inc,
                        os.path.join(inc, proto)], check=True)
    sys.path.insert(0, out)
    mods = {}
    for name in ("edgemon.v1.edgemon_pb2", "edgemon.v1.edgemon_pb2_grpc", "health_pb2",
                 "health_pb2_grpc", "reflection_pb2", "reflection_pb2_grpc"):
        mods[name.split(".")[-1]] = importlib.import_module(name)
    return mods


class Daemon:
    def __init__(self, tmp, name, root, interval_ms=100):
        import grpc
        self.sock = os.path.join(tmp, f"{name}.sock")
        self.log_path = os.path.join(tmp, f"{name}.log")
        self.log = open(self.log_path, "w")
        cmd = [ARGS.edgemond, "--root", root, "--db", os.path.join(tmp, f"{name}.db"),
               "--listen", "unix:" + self.sock, "--interval-ms", str(interval_ms)]
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 15
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"edgemond did not create {self.sock}:\n{self.output()}")
            time.sleep(0.02)
        self.channel = grpc.insecure_channel("unix:" + self.sock)
        grpc.channel_ready_future(self.channel).result(timeout=10)

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def stop(self):
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def expect_code(fn, codes, what):
    import grpc
    try:
        fn()
    except grpc.RpcError as e:
        expect(e.code() in codes, f"{what}: got {e.code()} ({e.details()}), want {codes}")
        expect(e.details(), f"{what}: no message says what was wrong")
        return
    raise AssertionError(f"{what}: succeeded, want {codes}")


class Interop:
    def __init__(self, m, daemon, started_ns):
        self.m = m
        self.pb = m["edgemon_pb2"]
        self.daemon = daemon
        self.stub = m["edgemon_pb2_grpc"].TelemetryStub(daemon.channel)
        self.started_ns = started_ns
        self.info = None
        self.ids = {}

    # --- GetDeviceInfo
    def device_info(self):
        info = self.stub.GetDeviceInfo(self.pb.GetDeviceInfoRequest(), timeout=5)
        self.info = info
        expect(info.api_version == 1, f"api_version {info.api_version}")
        expect(info.interval_ms == 100, f"interval_ms {info.interval_ms}, started with 100")
        expect("Orin" in info.board.model, f"board model {info.board.model!r}")
        expect(info.daemon_version, "empty daemon_version")
        ids = [c.id for c in info.channels]
        expect(len(ids) == len(set(ids)) and len(ids) > 20, f"{len(ids)} channels, ids unique?")
        for c in info.channels:
            self.ids[c.key] = c.id
            expect(c.key == f"{c.kind}/{c.name}/{c.field}", f"key {c.key!r} of {c.name}")
        gpu = [c for c in info.channels if c.kind == "rail" and c.name == "VDD_GPU_SOC"]
        fields = {c.field: c for c in gpu}
        expect("power" in fields, f"VDD_GPU_SOC power missing; has {sorted(fields)}")
        expect(fields["power"].unit == "mW", f"power unit {fields['power'].unit!r}")
        expect(fields["voltage"].unit == "mV", f"voltage unit {fields['voltage'].unit!r}")
        expect(fields["current"].unit == "mA", f"current unit {fields['current'].unit!r}")
        expect("ina3221" in fields["power"].device, f"device {fields['power'].device!r}")
        temps = [c for c in info.channels if c.kind == "thermal" and c.field == "temp"]
        expect(temps and all(c.unit == "mC" for c in temps), "thermal temp channels in mC")

    # --- GetLatest
    def latest(self):
        f = self.stub.GetLatest(self.pb.GetLatestRequest(), timeout=5)
        expect(len(f.ids) == len(f.values) and len(f.ids) > 20, f"{len(f.ids)} ids")
        vals = dict(zip(f.ids, f.values))
        pid, vid, cid = (self.ids[f"rail/VDD_GPU_SOC/{x}"] for x in ("power", "voltage", "current"))
        expect(vals.get(vid) == GPU_SOC_MV, f"voltage {vals.get(vid)}, fixture {GPU_SOC_MV}")
        expect(vals.get(cid) == GPU_SOC_MA, f"current {vals.get(cid)}, fixture {GPU_SOC_MA}")
        want = GPU_SOC_MV * GPU_SOC_MA / 1000
        expect(vals.get(pid) is not None and abs(vals[pid] - want) <= 1,
               f"power {vals.get(pid)}, want {want:.1f} mW")
        expect(abs(f.realtime_ns - time.time_ns()) < 5e9, "realtime_ns is not now")
        expect(f.generation == self.info.generation, "generation differs from DeviceInfo")
        one = self.stub.GetLatest(self.pb.GetLatestRequest(channels=[GPU_SOC_KEY]), timeout=5)
        expect(list(one.ids) == [pid], f"subset ids {list(one.ids)}, want [{pid}]")
        expect(abs(one.values[0] - want) <= 1, f"subset value {list(one.values)}")

    # --- Watch
    def watch(self):
        req = self.pb.WatchRequest(interval_ms=300, channels=[GPU_SOC_KEY, "thermal/*"])
        allowed = {self.ids[GPU_SOC_KEY]} | {c.id for c in self.info.channels
                                             if c.kind == "thermal"}
        frames = []
        call = self.stub.Watch(req, timeout=15)
        for f in call:
            frames.append(f)
            if len(frames) == 7:
                call.cancel()
                break
        expect(len(frames) == 7, f"{len(frames)} frames")
        for f in frames:
            expect(set(f.ids) <= allowed, f"unrequested ids {set(f.ids) - allowed}")
            expect(self.ids[GPU_SOC_KEY] in f.ids, "VDD_GPU_SOC power missing in a frame")
        gaps = [(b.realtime_ns - a.realtime_ns) / 1e6 for a, b in zip(frames, frames[1:])]
        med = statistics.median(gaps[1:])  # the first frame may be the newest already made
        expect(250 <= med <= 400, f"median gap {med:.0f} ms, want ~300 (gaps {gaps})")
        expect(min(gaps[1:]) >= 190, f"a gap under the interval: {gaps}")
        seqs = [f.seq for f in frames]
        expect(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"seq {seqs}")
        # interval 0: every frame (100 ms apart)
        call = self.stub.Watch(self.pb.WatchRequest(channels=[GPU_SOC_KEY]), timeout=15)
        fast = []
        for f in call:
            fast.append(f)
            if len(fast) == 6:
                call.cancel()
                break
        gaps = [(b.realtime_ns - a.realtime_ns) / 1e6 for a, b in zip(fast, fast[1:])]
        expect(statistics.median(gaps) < 200, f"interval 0 gaps {gaps}")

    # --- Query
    def query(self):
        now = time.time_ns()
        pid = self.ids[GPU_SOC_KEY]
        frames = []
        deadline = time.time() + 12  # the store commits in batches
        while time.time() < deadline:
            chunks = list(self.stub.Query(self.pb.QueryRequest(
                from_ns=self.started_ns, to_ns=now, channels=[GPU_SOC_KEY]), timeout=10))
            frames = [f for c in chunks for f in c.frames]
            if len(frames) >= 5:
                break
            time.sleep(0.5)
        expect(len(frames) >= 5, f"{len(frames)} stored frames")
        for f in frames:
            expect(self.started_ns <= f.realtime_ns < now, "frame outside the range")
            expect(list(f.ids) == [pid], f"ids {list(f.ids)}")
            expect(abs(f.values[0] - GPU_SOC_MV * GPU_SOC_MA / 1000) <= 1, f"{f.values}")
        ts = [f.realtime_ns for f in frames]
        expect(ts == sorted(ts), "frames out of order")
        # limit
        chunks = list(self.stub.Query(self.pb.QueryRequest(
            from_ns=self.started_ns, to_ns=now, channels=[GPU_SOC_KEY], limit=3), timeout=10))
        lim = [f for c in chunks for f in c.frames]
        expect(len(lim) == 3, f"limit 3 gave {len(lim)} frames")
        expect(chunks[-1].truncated, "limited result not marked truncated")
        # downsampled
        chunks = list(self.stub.Query(self.pb.QueryRequest(
            from_ns=self.started_ns, to_ns=now, channels=[GPU_SOC_KEY, "rail/VDD_GPU_SOC/voltage"],
            step_ns=1_000_000_000), timeout=10))
        series = {}  # a channel's buckets may continue over several chunks
        for c in chunks:
            for x in c.series:
                series.setdefault(x.id, []).extend(x.buckets)
        expect(set(series) == {pid, self.ids["rail/VDD_GPU_SOC/voltage"]},
               f"series ids {sorted(series)}")
        for sid, buckets in series.items():
            expect(buckets, f"no buckets for {sid}")
            ts = [b.t_ns for b in buckets]
            expect(ts == sorted(ts) and len(set(ts)) == len(ts), f"bucket times {ts}")
            for b in buckets:
                expect(b.min <= b.avg <= b.max and b.count > 0, f"bucket {b}")
                expect(b.count <= 11, f"{b.count} samples in a 1 s bucket at 100 ms")
                if sid != pid:
                    expect(b.min == b.max == GPU_SOC_MV, f"voltage bucket {b}")

    # --- windows + Summarize
    def windows(self):
        w = self.stub.BeginWindow(self.pb.BeginWindowRequest(label="interop-run"), timeout=5)
        expect(w.id > 0 and w.label == "interop-run" and not w.HasField("end_ns"),
               f"begin {w} (an open window has no end, never 0)")
        expect(abs(w.start_ns - time.time_ns()) < 2e9, "start_ns is not now")
        time.sleep(1.5)
        e = self.stub.EndWindow(self.pb.EndWindowRequest(id=w.id), timeout=5)
        expect(e.id == w.id and e.start_ns == w.start_ns and e.HasField("end_ns"), f"end {e}")
        dur = (e.end_ns - e.start_ns) / 1e9
        expect(1.3 <= dur <= 3.0, f"window lasted {dur:.2f} s, slept 1.5")
        lst = self.stub.ListWindows(self.pb.ListWindowsRequest(
            from_ns=self.started_ns, to_ns=time.time_ns() + 10**9), timeout=5)
        expect(any(x.id == w.id and x.label == "interop-run" and x.end_ns == e.end_ns
                   for x in lst.windows), f"window {w.id} not listed: {lst}")
        s = None
        deadline = time.time() + 12
        while time.time() < deadline:  # the window's frames may still be uncommitted
            s = self.stub.Summarize(self.pb.SummarizeRequest(window_id=w.id), timeout=10)
            if s.samples >= 10 and any(r.energy_mj > 0 for r in s.rails):
                break
            time.sleep(0.5)
        expect(abs(s.duration_s - dur) < 0.05, f"summary duration {s.duration_s}, window {dur}")
        expect(10 <= s.samples <= 40, f"{s.samples} samples in {dur:.2f} s at 100 ms")
        rails = {r.name: r for r in s.rails}
        expect("VDD_GPU_SOC" in rails, f"rails {sorted(rails)}")
        r = rails["VDD_GPU_SOC"]
        want_mw = GPU_SOC_MV * GPU_SOC_MA / 1000
        expect(abs(r.avg_power_mw - want_mw) < 5, f"avg power {r.avg_power_mw}, want {want_mw}")
        expect(abs(r.peak_power_mw - want_mw) <= 1, f"peak {r.peak_power_mw}")
        expect(abs(r.energy_mj - want_mw * dur) < 0.1 * want_mw * dur,
               f"energy {r.energy_mj} mJ, want ~{want_mw * dur:.0f}")
        expect(s.temps and all(t.HasField("min_mc") and t.HasField("max_mc") for t in s.temps),
               "temps without min/max")
        expect(all(t.min_mc <= t.start_mc <= t.max_mc for t in s.temps if t.HasField("start_mc")),
               "temps")
        # the same range by time
        t = self.stub.Summarize(self.pb.SummarizeRequest(
            time=self.pb.TimeRange(from_ns=e.start_ns, to_ns=e.end_ns)), timeout=10)
        rt = {x.name: x for x in t.rails}
        expect("VDD_GPU_SOC" in rt and abs(rt["VDD_GPU_SOC"].energy_mj - r.energy_mj) < 1,
               f"time-range summary differs: {rt.get('VDD_GPU_SOC')}")

    # --- Boost
    def boost(self):
        before = time.time_ns()
        b = self.stub.Boost(self.pb.BoostRequest(rate_hz=50, duration_ms=2000), timeout=5)
        expect(1 <= b.rate_hz <= 1000, f"effective rate {b.rate_hz}")
        expect(before + 1.5e9 <= b.until_ns <= time.time_ns() + 2.5e9,
               f"until_ns {b.until_ns - before} ns after the request, want ~2 s")
        # Each call is its own lease; its id renews that one.
        expect(b.lease_id != 0, "no lease_id")
        again = self.stub.Boost(self.pb.BoostRequest(rate_hz=50, duration_ms=1,
                                                     lease_id=b.lease_id), timeout=5)
        expect(again.lease_id == b.lease_id, f"renewal gave lease {again.lease_id}, "
               f"not {b.lease_id}")

    # --- ListProcesses on the fixture's /proc (a fake process)
    def processes(self):
        r = self.stub.ListProcesses(self.pb.ListProcessesRequest(sort="pid"), timeout=5)
        procs = {p.pid: p for p in r.processes}
        expect(FAKE_PID in procs, f"fake pid {FAKE_PID} missing: {sorted(procs)}")
        p = procs[FAKE_PID]
        expect(p.name == "fake-bench", f"name {p.name!r}")
        expect(p.command == "fake-bench --run 1", f"command {p.command!r}")
        expect(p.HasField("rss_kib") and p.rss_kib == 5120, f"rss {p.rss_kib}")
        # A process whose status cannot be read: no resident set and no user,
        # absent on the wire (never 0 KiB, never root).
        q = procs.get(FAKE_PID + 1)
        expect(q is not None and q.name == "no status", f"pid {FAKE_PID + 1}: {q}")
        expect(q is None or not q.HasField("rss_kib"), f"unread rss sent as {q and q.rss_kib}")
        expect(q is None or q.user == "", f"unread user {q and q.user!r}")
        expect(p.user == "bench", f"user {p.user!r}")
        # GPU memory from the fixture's nvmap table (two clients of one process).
        expect(p.has_gpu_mem and p.gpu_mem_kib == 196608 + 4096,
               f"gpu memory {p.has_gpu_mem} {p.gpu_mem_kib}")
        expect(r.gpu_mem_unavailable == "", f"gpu_mem_unavailable {r.gpu_mem_unavailable!r}")
        g = self.stub.ListProcesses(self.pb.ListProcessesRequest(sort="gpu"), timeout=5)
        expect(g.processes[0].pid == FAKE_PID, f"sort=gpu first {g.processes[0].pid}")
        expect(abs(r.realtime_ns - time.time_ns()) < 5e9, "realtime_ns")
        pids = [p.pid for p in r.processes]
        expect(pids == sorted(pids), "sort=pid not sorted")

    # --- health
    def health(self):
        h = self.m["health_pb2"]
        stub = self.m["health_pb2_grpc"].HealthStub(self.daemon.channel)
        serving = h.HealthCheckResponse.SERVING
        r = stub.Check(h.HealthCheckRequest(service=""), timeout=5)
        expect(r.status == serving, f"overall health {r.status}")
        r = stub.Check(h.HealthCheckRequest(service="edgemon.v1.Telemetry"), timeout=5)
        expect(r.status == serving, f"edgemon.v1.Telemetry health {r.status}")
        import grpc
        expect_code(lambda: stub.Check(h.HealthCheckRequest(service="no.such.Service"), timeout=5),
                    {grpc.StatusCode.NOT_FOUND}, "health of an unknown service")

    # --- reflection
    def reflection(self):
        rp = self.m["reflection_pb2"]
        stub = self.m["reflection_pb2_grpc"].ServerReflectionStub(self.daemon.channel)
        reqs = [rp.ServerReflectionRequest(list_services=""),
                rp.ServerReflectionRequest(file_containing_symbol="edgemon.v1.Telemetry")]
        resps = list(stub.ServerReflectionInfo(iter(reqs), timeout=5))
        names = {s.name for s in resps[0].list_services_response.service}
        expect({"edgemon.v1.Telemetry", "grpc.health.v1.Health"} <= names, f"services {names}")
        from google.protobuf import descriptor_pb2
        files = resps[1].file_descriptor_response.file_descriptor_proto
        expect(files, "no descriptor for edgemon.v1.Telemetry")
        fd = descriptor_pb2.FileDescriptorProto.FromString(files[0])
        methods = {m.name for s in fd.service for m in s.method}
        want = {"GetDeviceInfo", "GetLatest", "Watch", "Query", "BeginWindow", "EndWindow",
                "ListWindows", "Summarize", "Boost", "ListProcesses", "ReadRailSamples"}
        expect(fd.package == "edgemon.v1" and want <= methods, f"{fd.package} {methods}")

    # --- bad input
    def bad_input(self):
        import grpc
        pb, s = self.pb, self.stub
        inval, nf = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
        cases = [
            ("GetLatest unknown channel",
             lambda: s.GetLatest(pb.GetLatestRequest(channels=["rail/NO_SUCH/power"]), timeout=5),
             {inval, nf}),
            ("GetLatest garbage channel",
             lambda: s.GetLatest(pb.GetLatestRequest(channels=["\x01//"]), timeout=5), {inval, nf}),
            ("Watch absurd interval",
             lambda: next(iter(s.Watch(pb.WatchRequest(interval_ms=4_000_000_000), timeout=5))),
             {inval}),
            ("Watch unknown channel",
             lambda: next(iter(s.Watch(pb.WatchRequest(channels=["nope/x/y"]), timeout=5))),
             {inval, nf}),
            ("Query reversed range",
             lambda: list(s.Query(pb.QueryRequest(from_ns=2 * 10**18, to_ns=10**18), timeout=5)),
             {inval}),
            ("Query negative step",
             lambda: list(s.Query(pb.QueryRequest(from_ns=0, to_ns=10**18, step_ns=-5), timeout=5)),
             {inval}),
            ("Query huge limit",
             lambda: list(s.Query(pb.QueryRequest(from_ns=0, to_ns=10**18, limit=4_000_000_000),
                                  timeout=5)), {inval}),
            ("Query too many steps",
             lambda: list(s.Query(pb.QueryRequest(from_ns=0, to_ns=10**18, step_ns=1_000_000,
                                                  channels=[GPU_SOC_KEY]), timeout=5)), {inval}),
            ("EndWindow unknown id",
             lambda: s.EndWindow(pb.EndWindowRequest(id=987654321), timeout=5), {nf}),
            ("Summarize unknown window",
             lambda: s.Summarize(pb.SummarizeRequest(window_id=987654321), timeout=5), {nf}),
            ("Summarize without a range",
             lambda: s.Summarize(pb.SummarizeRequest(), timeout=5), {inval}),
            ("Summarize reversed range",
             lambda: s.Summarize(pb.SummarizeRequest(time=pb.TimeRange(from_ns=10, to_ns=5)),
                                 timeout=5), {inval}),
            ("ListWindows reversed range",
             lambda: s.ListWindows(pb.ListWindowsRequest(from_ns=10**18, to_ns=5), timeout=5),
             {inval}),
            ("Boost rate 0", lambda: s.Boost(pb.BoostRequest(rate_hz=0, duration_ms=1000),
                                             timeout=5), {inval}),
            ("Boost duration 0", lambda: s.Boost(pb.BoostRequest(rate_hz=10, duration_ms=0),
                                                 timeout=5), {inval}),
            ("ListProcesses bad sort",
             lambda: s.ListProcesses(pb.ListProcessesRequest(sort="bogus"), timeout=5), {inval}),
            ("ReadRailSamples reversed range",
             lambda: s.ReadRailSamples(pb.ReadRailSamplesRequest(from_ns=10, to_ns=5),
                                       timeout=5), {inval}),
            ("ReadRailSamples limit above 100000",
             lambda: s.ReadRailSamples(pb.ReadRailSamplesRequest(window_id=1, limit=100001),
                                       timeout=5), {inval}),
            ("ReadRailSamples negative window",
             lambda: s.ReadRailSamples(pb.ReadRailSamplesRequest(window_id=-3), timeout=5),
             {inval}),
            ("ReadRailSamples unknown window",
             lambda: s.ReadRailSamples(pb.ReadRailSamplesRequest(window_id=987654321),
                                       timeout=5), {nf}),
        ]
        bad = []
        for what, fn, codes in cases:
            try:
                expect_code(fn, codes, what)
            except AssertionError as e:
                bad.append(str(e))
        # Out-of-range boosts are refused, never silently clamped.
        for rate, ms in ((5000, 1000), (1001, 1000), (10, 3_600_001),
                         (4_000_000_000, 4_000_000_000)):
            try:
                b = s.Boost(pb.BoostRequest(rate_hz=rate, duration_ms=ms), timeout=5)
                bad.append(f"Boost({rate}, {ms}) was accepted (rate {b.rate_hz}): "
                           "expected INVALID_ARGUMENT")
            except grpc.RpcError as e:
                if e.code() != inval:
                    bad.append(f"Boost({rate}, {ms}): {e.code()}")
        expect(self.daemon.proc.poll() is None, "edgemond died on bad input")
        # nothing was written: the unknown window still does not exist
        lst = self.stub.ListWindows(pb.ListWindowsRequest(from_ns=0, to_ns=time.time_ns()),
                                    timeout=5)
        expect(all(w.id != 987654321 for w in lst.windows), "a window appeared")
        expect(not bad, "; ".join(bad))


def own_pid_listed(m, tmp):
    """ListProcesses with --root / lists the daemon's own process."""
    d = Daemon(tmp, "real", "/", interval_ms=500)
    try:
        stub = m["edgemon_pb2_grpc"].TelemetryStub(d.channel)
        r = stub.ListProcesses(m["edgemon_pb2"].ListProcessesRequest(sort="pid", limit=10000),
                               timeout=10)
        procs = {p.pid: p for p in r.processes}
        expect(d.proc.pid in procs, f"daemon pid {d.proc.pid} missing ({len(procs)} listed)")
        p = procs[d.proc.pid]
        expect(p.name.startswith("edgemond"), f"name {p.name!r}")
        expect(p.rss_kib > 1000, f"rss {p.rss_kib} KiB")
        expect(ARGS.edgemond in p.command or "edgemond" in p.command, f"command {p.command!r}")
        # The first request has nothing to compare with: no CPU share (absent,
        # never 0); the next one measures it for every process seen twice.
        expect(not p.HasField("cpu_permille"), f"first call cpu_permille {p.cpu_permille}")
        time.sleep(0.2)
        again = stub.ListProcesses(m["edgemon_pb2"].ListProcessesRequest(sort="pid", limit=10000),
                                   timeout=10)
        q = {x.pid: x for x in again.processes}.get(d.proc.pid)
        expect(q is not None and q.HasField("cpu_permille"), "second call has no cpu_permille")
    finally:
        d.stop()


def make_root(tmp):
    """A copy of the fixture board with one fake process in its /proc."""
    root = os.path.join(tmp, "root")
    shutil.copytree(os.path.join(ARGS.fixtures, "agx-orin"), root, symlinks=True)
    pdir = os.path.join(root, "proc", str(FAKE_PID))
    os.makedirs(pdir)
    with open(os.path.join(pdir, "stat"), "w") as f:
        f.write(f"{FAKE_PID} (fake-bench) S 1 {FAKE_PID} {FAKE_PID} 0 -1 4194560 100 0 0 0 "
                "250 50 0 0 20 0 1 0 1000 10485760 1280 18446744073709551615\n")
    with open(os.path.join(pdir, "status"), "w") as f:
        f.write("Name:\tfake-bench\nState:\tS (sleeping)\nPid:\t4242\n"
                "Uid:\t1234\t1234\t1234\t1234\nVmRSS:\t    5120 kB\n")
    with open(os.path.join(pdir, "cmdline"), "wb") as f:
        f.write(b"fake-bench\0--run\x001\0")
    # A second process whose status cannot be read (stat only).
    qdir = os.path.join(root, "proc", str(FAKE_PID + 1))
    os.makedirs(qdir)
    with open(os.path.join(qdir, "stat"), "w") as f:
        f.write(f"{FAKE_PID + 1} (no status) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1000 0 0 0\n")
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    with open(os.path.join(root, "etc", "passwd"), "a") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nbench:x:1234:1234::/home/bench:/bin/sh\n")
    return root


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--edgemond", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--proto-dir", required=True)
    p.add_argument("--protoc", default=shutil.which("protoc") or "/usr/bin/protoc")
    p.add_argument("--plugin", default="/usr/bin/grpc_python_plugin")
    p.add_argument("--keep", action="store_true", help="keep the temp dir")
    ARGS = p.parse_args()
    ARGS.edgemond = os.path.abspath(ARGS.edgemond)

    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="edgemon-interop-")
    daemon = None
    try:
        m = generate_stubs(os.path.join(tmp, "stubs"))
        started_ns = time.time_ns()
        daemon = Daemon(tmp, "sim", make_root(tmp))
        t = Interop(m, daemon, started_ns)
        time.sleep(0.5)  # a few frames
        checks.run("GetDeviceInfo", t.device_info)
        if t.info is None:
            raise RuntimeError("no inventory; the remaining checks need it")
        for name, fn in (("GetLatest", t.latest), ("Watch", t.watch), ("Query", t.query),
                         ("BeginWindow/EndWindow/ListWindows/Summarize", t.windows),
                         ("Boost", t.boost), ("ListProcesses (fixture /proc)", t.processes),
                         ("grpc.health.v1 Check", t.health),
                         ("reflection v1alpha", t.reflection), ("bad input", t.bad_input)):
            checks.run(name, fn)
        rc = daemon.stop()
        daemon = None
        checks.run("clean exit after SIGTERM", lambda: expect(rc == 0, f"exit status {rc}"))
        checks.run("ListProcesses lists the daemon itself (--root /)", own_pid_listed, m, tmp)
    except Exception as e:  # noqa: BLE001
        checks.failed.append(f"setup: {e}")
        traceback.print_exc()
    finally:
        if daemon is not None:
            if checks.failed:
                print("--- edgemond log tail ---\n" + daemon.output())
            daemon.stop()
        if ARGS.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in checks.failed:
        print(f"failed: {f}")
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed or checks.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
