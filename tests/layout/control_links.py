#!/usr/bin/python3
"""What the privileged helper carries: edgemon-control runs as root, so every
line it links is attack surface. It must hold none of the telemetry daemon.

  control_links.py EDGEMON_CONTROL

Fails when the binary defines a symbol of the store, the summary, the
telemetry gRPC service, the push shipper, the metrics endpoint or the live
page (edgemon::store::, edgemon::summary::, edgemon::service::,
edgemon::push::, edgemon::metrics::, edgemon::web::, the generated
edgemon::v1::Telemetry service), or of SQLite (sqlite3_*), or when a
dynamically linked build needs libsqlite3. It also checks that its own code
is there (edgemon::control::), so an unreadable or stripped binary fails
rather than passing for want of symbols.
"""
import re
import subprocess
import sys

FORBIDDEN = re.compile(
    r"\bedgemon::(store|summary|service|push|metrics|web)::"
    r"|\bedgemon::v1::Telemetry\b"
    r"|^sqlite3_")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    nm = subprocess.run(["nm", "-C", "--defined-only", binary], capture_output=True, text=True)
    if nm.returncode != 0:
        print(f"nm {binary}: {nm.stderr.strip()}")
        return 1
    names = [line.split(" ", 2)[-1] for line in nm.stdout.splitlines() if line.count(" ") >= 2]
    own = [n for n in names if "edgemon::control::" in n]
    bad = sorted({n for n in names if FORBIDDEN.search(n)})
    needed = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
    sqlite = [line.strip() for line in needed.splitlines() if "NEEDED" in line and "sqlite" in line]
    for n in bad[:40]:
        print(f"links {n}")
    if len(bad) > 40:
        print(f"... and {len(bad) - 40} more")
    for line in sqlite:
        print(f"needs {line}")
    print(f"{len(names)} symbols, {len(own)} of edgemon::control, {len(bad)} of the telemetry "
          f"daemon or SQLite, {len(sqlite)} SQLite libraries needed")
    if not own:
        print("no edgemon::control symbol found: not the helper, or stripped")
        return 1
    return 1 if bad or sqlite else 0


if __name__ == "__main__":
    sys.exit(main())
