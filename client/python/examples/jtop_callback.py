#!/usr/bin/env python3
"""A callback attached to jtop, called at every sample (jtop API).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock. Runs until Ctrl-C,
or until N callbacks with `jtop_callback.py N`; either way it prints the number
of callbacks and exits with status 0."""
import sys

from jtop import jtop

calls = 0
LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 0


def read_stats(jetson):
    global calls
    calls += 1
    print(jetson.stats)
    if LIMIT and calls >= LIMIT:
        jetson.close()


if __name__ == "__main__":
    jetson = jtop()
    jetson.attach(read_stats)
    try:
        jetson.loop_for_ever()  # Ctrl-C ends it and closes the connection
    except KeyboardInterrupt:  # one that came while it was closing
        jetson.close()
    print("callbacks: %d" % calls)
