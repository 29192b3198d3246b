#!/usr/bin/env python3
"""A callback attached to jtop, called at every sample (jtop API)."""
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
    jetson.loop_for_ever()
    print("callbacks: %d" % calls)
