#!/usr/bin/env python3
"""The sampler under the heaviest request mix: edgemond at 100 Hz frames with
its HTTP listener on, 32 clients of one uid looping the largest accepted
/api/history and Query requests while another uid holds 300 local feeds, and
root asking `edgemon query --since -5s` and `edgemon now` throughout. Prints
the frame deadlines the sampler missed, the frames stored of those due, the
daemon's RSS before and at its peak, and the answers and refusals. It is the
flood of the attack_budget test (tests/attack/budget_attack.py), run for as
long as asked. Needs root (setpriv).

  bench/request_flood.py BUILD_DIR [--seconds 15]
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=15)
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    protoc = subprocess.run(["which", "protoc"], capture_output=True, text=True).stdout.strip()
    return subprocess.call([
        "/usr/bin/python3", os.path.join(SRC, "tests", "attack", "budget_attack.py"),
        "--edgemond", os.path.join(b, "daemon", "edgemond"),
        "--edgemon", os.path.join(b, "client", "cli", "edgemon"),
        "--protoc", protoc or "/usr/bin/protoc", "--plugin", "/usr/bin/grpc_python_plugin",
        "--proto-dir", os.path.join(SRC, "proto"),
        "--fixtures", os.path.join(SRC, "tests", "fixtures"),
        "--seconds", str(a.seconds), "-k", "flood"])


if __name__ == "__main__":
    sys.exit(main())
