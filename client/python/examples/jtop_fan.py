#!/usr/bin/env python3
"""Fans, and what setting the speed does (jtop API)."""
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
