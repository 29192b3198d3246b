#!/usr/bin/env python3
"""Energy per inference in three lines (the body here: a stand-in workload).

edgemon.connect() connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path
or host:port), else at its packaged socket unix:/run/edgemon/edgemond.sock."""
import time

import edgemon


def infer(n):
    for _ in range(n):
        time.sleep(0.002)   # your model here: trtexec, PyTorch, ...


if __name__ == "__main__":
    with edgemon.connect().measure("model-fp16", rate_hz=200) as m:
        infer(200)
    print("%.4f J per inference" % m.result.per_item(200).energy_j)
