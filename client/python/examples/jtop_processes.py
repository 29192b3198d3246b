#!/usr/bin/env python3
"""Processes on the GPU (jtop API)."""
from jtop import jtop

if __name__ == "__main__":
    with jtop() as jetson:
        if jetson.ok():
            print("%d processes on the GPU" % len(jetson.processes))
            for p in jetson.processes:
                pid, user, gpu, ptype, prio, state, cpu, mem, gpu_mem, name = p
                print("%d %s %s %.1f%% CPU %d kB RAM %d kB GPU" % (pid, user, name, cpu, mem,
                                                                 gpu_mem))
