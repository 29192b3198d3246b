#!/usr/bin/env python3
"""Hardware engines, once (jtop API).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock."""
from jtop import jtop

if __name__ == "__main__":
    with jtop() as jetson:
        if jetson.ok():
            for group, engines in jetson.engine.items():
                for name, engine in engines.items():
                    state = "%s kHz" % engine["cur"] if engine["online"] else "OFF"
                    print("%s/%s: %s" % (group, name, state))
