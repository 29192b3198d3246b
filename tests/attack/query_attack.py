#!/usr/bin/python3
"""Attack: time ranges and steps at the ends of int64 against a real edgemond.

Any member of the socket's group may send a Query, Summarize or ListWindows
with any int64 bounds. A range whose width exceeds int64 (1678 to 2262, or
INT64_MIN to INT64_MAX) once made the store compute (t - from) / step in
int64, wrap, and index its step accumulator out of bounds: SIGSEGV or heap
corruption in edgemond. This starts edgemond on a fixture board, sends those
ranges through the real `edgemon query` command and through raw gRPC (stubs
generated with protoc and grpc_python_plugin), and checks that each is
answered (with buckets at the right times) or refused with INVALID_ARGUMENT,
and that the daemon is still alive and answers GetLatest afterwards.

  query_attack.py --edgemond build/daemon/edgemond --edgemon build/client/cli/edgemon \
      --protoc protoc --plugin /usr/bin/grpc_python_plugin --proto-dir proto \
      --fixtures tests/fixtures

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import calendar
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import interop_test  # noqa: E402 (stub generation and the Daemon helper)
from harness import Checks, expect  # noqa: E402

ARGS = None
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
DAY_NS = 86_400 * 10**9


def utc_ns(y, m, d):
    return calendar.timegm((y, m, d, 0, 0, 0)) * 10**9


class Attack:
    def __init__(self, m, daemon):
        self.pb = m["edgemon_pb2"]
        self.d = daemon
        self.stub = m["edgemon_pb2_grpc"].TelemetryStub(daemon.channel)

    def alive(self, after):
        """edgemond still runs and answers GetLatest."""
        rc = self.d.proc.poll()
        expect(rc is None, f"edgemond exited ({rc}) after {after}:\n{self.d.output()}")
        f = self.stub.GetLatest(self.pb.GetLatestRequest(), timeout=10)
        expect(f.seq > 0, f"GetLatest after {after}: seq {f.seq}")
        return f

    def query(self, **fields):
        """The whole Query stream: (grpc code, chunks)."""
        import grpc
        chunks = []
        try:
            for c in self.stub.Query(self.pb.QueryRequest(**fields), timeout=60):
                chunks.append(c)
        except grpc.RpcError as e:
            return e.code(), chunks, e.details()
        return grpc.StatusCode.OK, chunks, ""

    # 1. The reported command, three times: each answered with the one bucket
    # of the 3000-day steps from --since that holds now.
    def cli_1678_to_2262(self):
        since, step = utc_ns(1678, 1, 1), 3000 * DAY_NS
        for run in range(3):
            now = time.time_ns()
            r = subprocess.run([ARGS.edgemon, "--connect", "unix:" + self.d.sock, "query",
                                "--since", "1678-01-01", "--until", "2262-01-01",
                                "--step", "3000d", "--channels", "rail/VDD_GPU_SOC/power",
                                "--format", "csv"],
                               capture_output=True, text=True, timeout=60)
            self.alive(f"edgemon query run {run + 1}")
            expect(r.returncode == 0, f"run {run + 1}: exit {r.returncode}: {r.stderr.strip()}")
            rows = [line.split(",") for line in r.stdout.splitlines()[1:] if line]
            expect(len(rows) == 1, f"run {run + 1}: {len(rows)} buckets, want 1:\n{r.stdout}")
            # A bucket is dated at its step's start, or at its first value when
            # that is later (never before the data it holds).
            t_ns = int(rows[0][1])
            grid = since + (t_ns - since) // step * step
            expect(grid <= now < grid + step, f"bucket at {t_ns} is not the step holding now ({now})")
            expect(t_ns <= now, f"bucket at {t_ns} is dated after now ({now})")
            expect(int(rows[0][7]) > 0, f"bucket count {rows[0][7]}")

    # 2. The same through gRPC at the very ends of int64.
    def raw_int64_ends(self):
        import grpc
        now = time.time_ns()
        for step, want_t in ((2**62, 0), (INT64_MAX, -1)):
            # INT64_MIN + 2 * 2^62 = 0 and INT64_MIN + INT64_MAX = -1 start the
            # bucket that holds now (now < 2^62).
            code, chunks, details = self.query(from_ns=INT64_MIN, to_ns=INT64_MAX, step_ns=step)
            self.alive(f"Query INT64_MIN..INT64_MAX step {step}")
            expect(code == grpc.StatusCode.OK, f"step {step}: {code} {details}")
            buckets = [b for c in chunks for s in c.series for b in s.buckets]
            expect(buckets, f"step {step}: no bucket")
            for b in buckets:
                # The step starting at want_t holds now; the bucket is dated at
                # its first value inside it.
                expect(want_t <= b.t_ns <= time.time_ns(),
                       f"step {step}: bucket t_ns {b.t_ns}, want the step from {want_t}")
                expect(b.count > 0 and b.min <= b.avg <= b.max, f"step {step}: bucket {b}")
        expect(now < 2**62, "the test's arithmetic assumes now < 2^62")

    # 3. More extreme requests, each answered or refused, never a crash.
    def other_extremes(self):
        import grpc
        ok_or_invalid = (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT)
        cases = [
            dict(from_ns=INT64_MIN, to_ns=INT64_MAX, step_ns=1_000_000),  # 1.8e13 steps
            dict(from_ns=INT64_MIN, to_ns=INT64_MAX, step_ns=INT64_MIN),
            dict(from_ns=INT64_MIN, to_ns=INT64_MAX),                      # raw frames
            dict(from_ns=INT64_MIN, to_ns=INT64_MAX, step_ns=2**62, limit=1),
            dict(from_ns=INT64_MAX - 1, to_ns=INT64_MAX, step_ns=INT64_MAX),
            dict(from_ns=INT64_MIN, to_ns=INT64_MIN + 1, step_ns=1_000_000),
            dict(from_ns=-1, to_ns=INT64_MAX, step_ns=2**62 + 1),
            dict(from_ns=INT64_MAX, to_ns=INT64_MIN, step_ns=2**62),
        ]
        for fields in cases:
            code, _, details = self.query(**fields)
            self.alive(f"Query {fields}")
            expect(code in ok_or_invalid, f"Query {fields}: {code} {details}")
        code, _, _ = self.query(from_ns=INT64_MIN, to_ns=INT64_MAX, step_ns=1_000_000)
        expect(code == grpc.StatusCode.INVALID_ARGUMENT, f"1.8e13 steps: {code}, want refused")
        for lo, hi in ((INT64_MIN, INT64_MAX), (INT64_MIN, INT64_MIN + 1), (-1, INT64_MAX)):
            req = self.pb.SummarizeRequest(time=self.pb.TimeRange(from_ns=lo, to_ns=hi))
            try:
                s = self.stub.Summarize(req, timeout=60)
                expect(s.from_ns <= s.to_ns, f"Summarize {lo}..{hi}: {s.from_ns}..{s.to_ns}")
            except grpc.RpcError as e:
                expect(e.code() in ok_or_invalid, f"Summarize {lo}..{hi}: {e.code()}")
            self.alive(f"Summarize {lo}..{hi}")
            for token in ("", f"{INT64_MAX}:{INT64_MAX}", f"{INT64_MIN}:{INT64_MIN}"):
                try:
                    self.stub.ListWindows(self.pb.ListWindowsRequest(
                        from_ns=lo, to_ns=hi, page_token=token), timeout=10)
                except grpc.RpcError as e:
                    expect(e.code() in ok_or_invalid, f"ListWindows {lo}..{hi}: {e.code()}")
                self.alive(f"ListWindows {lo}..{hi} token {token!r}")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--edgemon", "--protoc", "--plugin", "--proto-dir", "--fixtures"):
        ap.add_argument(a, required=True)
    ARGS = ap.parse_args()
    interop_test.ARGS = ARGS
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="edgemon-query-attack-") as tmp:
        m = interop_test.generate_stubs(os.path.join(tmp, "stubs"))
        # One daemon per attack: a crash is charged to the attack that caused it.
        for name, attack in (("cli_query_1678_to_2262_step_3000d", Attack.cli_1678_to_2262),
                             ("raw_query_int64_min_to_max", Attack.raw_int64_ends),
                             ("other_extreme_ranges", Attack.other_extremes)):
            d = interop_test.Daemon(tmp, name, os.path.join(ARGS.fixtures, "agx-orin"))
            try:
                a = Attack(m, d)
                deadline = time.time() + 10
                while a.stub.GetLatest(a.pb.GetLatestRequest(), timeout=5).seq < 3:
                    expect(time.time() < deadline, "fewer than 3 frames sampled in 10 s")
                    time.sleep(0.1)
                checks.run(name, attack, a)
            finally:
                log = d.output()
                rc = d.stop()
            if rc != 0:
                checks.failed.append(name + "_clean_stop")
                print(f"FAIL {name}_clean_stop: edgemond exited {rc}:\n{log}", flush=True)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
