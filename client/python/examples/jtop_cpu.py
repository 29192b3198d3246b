#!/usr/bin/env python3
"""Per-core CPU load and frequency, once (jtop API).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock."""
from jtop import jtop

if __name__ == "__main__":
    with jtop() as jetson:
        if jetson.ok():
            total = jetson.cpu["total"]
            print("total: idle %s %%" % total["idle"])
            for idx, cpu in enumerate(jetson.cpu["cpu"]):
                if not cpu["online"]:
                    print("CPU%d: OFF" % (idx + 1))
                    continue
                print("CPU%d: %s %% busy, %s kHz (%s), governor %s" % (
                    idx + 1, 100 - cpu["idle"], cpu["freq"]["cur"], cpu["model"],
                    cpu["governor"]))
