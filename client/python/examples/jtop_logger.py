#!/usr/bin/env python3
"""Logs jetson.stats to a CSV file, one row per sample (jtop API; runs on
jetson-stats and on edgemon's jtop package alike).

Connects to edgemond at $EDGEMON_CONNECT (unix:/path, /path or host:port),
else at its packaged socket unix:/run/edgemon/edgemond.sock. Runs until
--samples rows are written or until Ctrl-C, which closes the file and exits
with status 0."""
import argparse
import csv

from jtop import jtop, JtopException

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Simple jtop logger (Ctrl-C stops it)")
    parser.add_argument("--file", default="log.csv", help="CSV file to write")
    parser.add_argument("--samples", type=int, default=0, help="stop after N rows (0: never)")
    args = parser.parse_args()
    print("Simple jtop logger, saving to {file}".format(file=args.file))
    try:
        with jtop() as jetson:
            with open(args.file, "w", newline="") as csvfile:
                stats = jetson.stats
                writer = csv.DictWriter(csvfile, fieldnames=stats.keys())
                writer.writeheader()
                writer.writerow(stats)
                rows = 1
                while jetson.ok() and (args.samples == 0 or rows < args.samples):
                    stats = jetson.stats
                    writer.writerow(stats)
                    rows += 1
                    print("Log at {time}".format(time=stats["time"]))
    except JtopException as e:
        print(e)
    except KeyboardInterrupt:
        print("Closed with CTRL-C")
