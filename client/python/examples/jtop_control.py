#!/usr/bin/env python3
"""jtop's control example: jetson_clocks, the power mode and the fan speed,
set through edgemon-control when the caller may (root or group edgemon-control).
The changes are leases: they are restored when the jtop closes.

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock; the changes go
to edgemon-control at $EDGEMON_CONTROL, else at its packaged socket
unix:/run/edgemon-control/edgemon-control.sock."""
import sys

from jtop import jtop, JtopException

if __name__ == "__main__":
    with jtop() as jetson:
        try:
            jetson.jetson_clocks = True
            print("jetson_clocks on")
            jetson.nvpmodel = int(sys.argv[1]) if len(sys.argv) > 1 else 0
            print("nvpmodel set")
            jetson.fan.speed = 100
            print("fan speed set")
        except JtopException as e:
            print("control refused: %s" % e)
            sys.exit(1)
    print("restored")
