#!/usr/bin/env python3
"""Processes on the GPU, once (jtop API).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock."""
from jtop import jtop

if __name__ == "__main__":
    with jtop() as jetson:
        if jetson.ok():
            print("%d processes on the GPU" % len(jetson.processes))
            for p in jetson.processes:
                pid, user, gpu, ptype, prio, state, cpu, mem, gpu_mem, name = p
                # cpu is None until a second reading, mem where it was not read.
                cpu_s = "-" if cpu is None else "%.1f%%" % cpu
                mem_s = "-" if mem is None else "%d kB" % mem
                print("%d %s %s %s CPU %s RAM %d kB GPU" % (pid, user, name, cpu_s, mem_s, gpu_mem))
