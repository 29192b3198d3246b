#!/usr/bin/env python3
"""RAM, swap and EMC, once (jtop API).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock."""
from jtop import jtop

if __name__ == "__main__":
    with jtop() as jetson:
        if jetson.ok():
            mem = jetson.memory
            ram = mem["RAM"]
            print("RAM: %d / %d kB used, lfb %s" % (ram["used"], ram["tot"], ram["lfb"]))
            if "SWAP" in mem:
                print("SWAP: %d / %d kB used" % (mem["SWAP"]["used"], mem["SWAP"]["tot"]))
            if "EMC" in mem:
                emc = mem["EMC"]
                print("EMC: %s %% at %s kHz (max %s)" % (emc["val"], emc["cur"], emc["max"]))
