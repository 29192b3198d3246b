#!/usr/bin/env python3
"""Fans, and what setting the speed does, once (jtop API).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock."""
from jtop import jtop, JtopException

if __name__ == "__main__":
    with jtop() as jetson:
        if jetson.ok():
            for name, fan in jetson.fan.items():
                print("%s: speed %s %%, %s rpm, profile %r" % (
                    name, fan["speed"], fan["rpm"], fan["profile"]))
            try:
                jetson.fan.speed = 100
            except JtopException as e:
                print("fan.speed = 100: %s" % e)
