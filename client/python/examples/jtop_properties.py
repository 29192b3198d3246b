#!/usr/bin/env python3
"""Prints every property of jtop once (jtop API).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock."""
from jtop import jtop

if __name__ == "__main__":
    with jtop() as jetson:
        if jetson.ok():
            print("*** board ***")
            print(jetson.board)
            print("*** uptime ***")
            print(jetson.uptime)
            print("*** interval ***")
            print(jetson.interval)
            print("*** nvpmodel ***")
            print(jetson.nvpmodel)
            print("*** jetson_clocks ***")
            print(jetson.jetson_clocks)
            print("*** cpu ***")
            print(jetson.cpu)
            print("*** memory ***")
            print(jetson.memory)
            print("*** gpu ***")
            print(jetson.gpu)
            print("*** engine ***")
            print(jetson.engine)
            print("*** fan ***")
            print(jetson.fan)
            print("*** temperature ***")
            print(jetson.temperature)
            print("*** power ***")
            print(jetson.power)
            print("*** processes ***")
            print(jetson.processes)
            print("*** disk ***")
            print(jetson.disk)
            print("*** local interfaces ***")
            print(jetson.local_interfaces)
