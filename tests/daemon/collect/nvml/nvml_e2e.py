#!/usr/bin/env python3
"""edgemond with a stand-in NVML (tests/support/fake_nvml.cc) on the Thor
fixture: NVML's driver is not loaded when the daemon starts, loads a moment
later, and its channels (GPU utilisation, NVENC/NVDEC/OFA load) join the
inventory without a restart; the log says so once; the codec load reaches
`edgemon now`, `edgemon sensors` and /metrics; a metric that starts failing
reads missing, never 0. A second edgemond whose NVML answers as Orin's
does (NOT_SUPPORTED to everything) lists processes whose GPU memory is "not
available" (ListProcesses' gpu_mem_unavailable), never 0 KiB.

  nvml_e2e.py --edgemon build/client/cli/edgemon --edgemond build/daemon/edgemond \\
      --fake-nvml-dir build/tests/fake_nvml --fixtures tests/fixtures \\
      --python-dir build/python
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../e2e"))
from harness import Checks, expect, free_port, stop_process  # noqa: E402

ORIN = "name Orin (nvgpu)\nbus_id 00000000:00:00.0\n"
THOR = ("name NVIDIA Thor\nbus_id 00000000:01:00.0\nutil 37\nclock 1575\nencoder 12\n"
        "decoder 40\njpg unsupported\nofa 0\nmemory unsupported\nprocesses 4242:1048576\n")


class Daemon:
    def __init__(self, args, tmp, nvml=THOR, late=True, root=None):
        self.args = args
        self.tmp = tmp
        self.driver = os.path.join(tmp, "driver-loaded")
        self.config = os.path.join(tmp, "nvml.conf")
        self.write(nvml, late)
        self.port = free_port()
        toml = os.path.join(tmp, "edgemond.toml")
        with open(toml, "w") as f:
            f.write(f'[daemon]\nnvml = "on"\nmetrics_listen = "127.0.0.1:{self.port}"\n')
        self.sock = os.path.join(tmp, "edgemond.sock")
        self.log_path = os.path.join(tmp, "edgemond.log")
        self.log = open(self.log_path, "w")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        env["LD_LIBRARY_PATH"] = args.fake_nvml_dir
        env["EDGEMON_FAKE_NVML"] = self.config
        self.proc = subprocess.Popen(
            [args.edgemond, "--config", toml, "--root",
             root or os.path.join(args.fixtures, "agx-thor-r38"),
             "--db", os.path.join(tmp, "edgemon.db"),
             "--listen", "unix:" + self.sock, "--interval-ms", "200"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 20
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("edgemond did not start:\n" + self.output())
            time.sleep(0.05)

    def write(self, text, late=True):
        with open(self.config, "w") as f:
            f.write(text + (f"init_after {self.driver}\n" if late else ""))

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def edgemon(self, *args):
        r = subprocess.run([self.args.edgemon, "--connect", "unix:" + self.sock, *args],
                           capture_output=True, text=True, timeout=30)
        expect(r.returncode == 0, f"edgemon {' '.join(args)}: {r.returncode} {r.stderr}")
        return r.stdout

    def now(self):
        return json.loads(self.edgemon("now", "--json"))

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return r.read().decode()


def wait_for(fn, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgemon", required=True)
    ap.add_argument("--edgemond", required=True)
    ap.add_argument("--fake-nvml-dir", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--python-dir", help="the built Python package (edgemon.v1), for gRPC")
    args = ap.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(args, tmp)
        try:
            def before_the_driver():
                time.sleep(1.0)
                s = d.now()
                expect("engine/NVENC/load" not in s.get("values", {}), f"values {s.get('values')}")
                expect("engine/NVENC/load" not in d.edgemon("sensors"), "NVENC load listed early")
                expect("NVML answered" not in d.output(), d.output())

            def the_driver_loads_and_its_channels_join():
                open(d.driver, "w").close()
                s = wait_for(lambda: (lambda v: v if v.get("values", {}).get(
                    "engine/NVENC/load") == 120 else None)(d.now()), "engine/NVENC/load")
                v = s["values"]
                expect(v.get("engine/NVDEC/load") == 400, f"NVDEC {v.get('engine/NVDEC/load')}")
                expect(v.get("engine/OFA/load") == 0, f"OFA {v.get('engine/OFA/load')}")
                expect(v.get("gpu/nvml0/load") == 370, f"gpu {v.get('gpu/nvml0/load')}")
                expect("engine/NVJPG/load" not in v, "NVJPG answered NOT_SUPPORTED")
                expect("gpu/nvml0/used" not in v, "memory answered NOT_SUPPORTED")
                sensors = d.edgemon("sensors")
                expect("NVENC" in sensors and "nvml 00000000:01:00.0" in sensors, sensors)
                log = d.output()
                expect(log.count("NVML answered after") == 1, log)
                expect("5 channel(s) added" in log, log)

            def metrics_name_the_engine_load():
                text = d.metrics()
                line = [ln for ln in text.splitlines()
                        if ln.startswith("edgemon_engine_load_ratio") and 'engine="NVENC"' in ln]
                expect(line and float(line[0].split()[-1]) == 0.12, f"{line}")

            def codec_load_in_record_and_the_jtop_engine_dict():
                # `record`: the run's mean and peak load per engine (its
                # summary goes to stderr, the command's output to stdout).
                r = subprocess.run([args.edgemon, "--connect", "unix:" + d.sock, "record", "--",
                                    "sleep", "1"], capture_output=True, text=True, timeout=30)
                expect(r.returncode == 0, f"record: {r.returncode} {r.stderr}")
                out = r.stderr
                rows = {ln.split()[0]: ln.split()[1:] for ln in
                        out.split("Load (%)", 1)[-1].splitlines()[1:] if ln.startswith("  ")}
                expect(rows.get("NVENC") == ["12.0", "12.0"], f"record's load rows {rows}\n{out}")
                expect(rows.get("NVDEC") == ["40.0", "40.0"], f"record's load rows {rows}")
                if not args.python_dir:
                    return
                # The jtop shim's engine dict: the codecs NVML gives a load for.
                script = ("import json\nfrom jtop import jtop\nwith jtop() as j:\n"
                          "    j.ok()\n    print(json.dumps(j.engine))\n")
                env = dict(os.environ, PYTHONPATH=args.python_dir,
                           EDGEMON_CONNECT="unix:" + d.sock)
                r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                   timeout=60, env=env)
                expect(r.returncode == 0, r.stderr)
                engines = {n: e for group in json.loads(r.stdout).values() for n, e in group.items()}
                expect(engines.get("NVENC") == {"online": True, "cur": None, "load": 12.0},
                       f"NVENC {engines.get('NVENC')}")
                expect(engines.get("OFA") == {"online": False, "cur": None, "load": 0.0},
                       f"OFA {engines.get('OFA')}")
                expect("NVJPG" not in engines, "NVJPG answered NOT_SUPPORTED")

            def a_failing_metric_reads_missing_never_zero():
                d.write(THOR.replace("encoder 12", "encoder error 15"), late=False)
                seen = []

                def missing():
                    v = d.now().get("values", {})
                    seen.append(v.get("engine/NVENC/load"))
                    return "engine/NVENC/load" not in v or v["engine/NVENC/load"] is None
                wait_for(missing, "NVENC load to go missing")
                expect(0 not in seen, f"NVENC read 0: {seen}")
                v = d.now()["values"]
                expect(v.get("engine/NVDEC/load") == 400, f"NVDEC {v.get('engine/NVDEC/load')}")
                d.write(THOR, late=False)
                wait_for(lambda: d.now().get("values", {}).get("engine/NVENC/load") == 120,
                         "NVENC load back")

            def orin_process_memory_is_not_available():
                if not args.python_dir:
                    return
                sys.path.insert(0, args.python_dir)
                from edgemon.v1 import edgemon_pb2 as pb
                from edgemon.v1 import edgemon_pb2_grpc as pb_grpc
                import grpc
                orin_dir = os.path.join(tmp, "orin")
                root = os.path.join(orin_dir, "root")
                shutil.copytree(os.path.join(args.fixtures, "agx-thor-r38"), root, symlinks=True)
                pdir = os.path.join(root, "proc", "4242")  # a process on the GPU, maybe
                os.makedirs(pdir)
                with open(os.path.join(pdir, "stat"), "w") as f:
                    f.write("4242 (bench) S 1 4242 4242 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 1000 "
                            "0 0 0\n")
                o = Daemon(args, orin_dir, ORIN, late=False, root=root)
                try:
                    with grpc.insecure_channel("unix:" + o.sock) as ch:
                        r = pb_grpc.TelemetryStub(ch).ListProcesses(
                            pb.ListProcessesRequest(sort="gpu"), timeout=10)
                    expect(len(r.processes) > 0, "no processes")
                    expect(not any(p.has_gpu_mem for p in r.processes),
                           [p.gpu_mem_kib for p in r.processes if p.has_gpu_mem][:5])
                    expect("NVML does not report GPU memory per process on this board "
                           "(NOT_SUPPORTED)" in r.gpu_mem_unavailable, r.gpu_mem_unavailable)
                    expect("gpu/nvml0/load" not in o.now().get("values", {}), "Orin's NVML load")
                finally:
                    stop_process(o.proc)

            checks.run("before_the_driver", before_the_driver)
            checks.run("the_driver_loads_and_its_channels_join",
                       the_driver_loads_and_its_channels_join)
            checks.run("metrics_name_the_engine_load", metrics_name_the_engine_load)
            checks.run("codec_load_in_record_and_the_jtop_engine_dict",
                       codec_load_in_record_and_the_jtop_engine_dict)
            checks.run("a_failing_metric_reads_missing_never_zero",
                       a_failing_metric_reads_missing_never_zero)
            checks.run("orin_process_memory_is_not_available",
                       orin_process_memory_is_not_available)
        finally:
            rc = stop_process(d.proc)
            if checks.failed:
                print(d.output()[-3000:])
        checks.run("edgemond_exits_cleanly", lambda: expect(rc == 0, f"exit {rc}"))
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
