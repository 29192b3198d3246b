#!/usr/bin/python3
"""The source tree's floors: who may include whom.

  layering.py --source-dir REPO

common/ and include/edgemon are the floor (the model, clocks, Status, the
time syntax, text, rendering): they include nothing from daemon/, client/,
tui/ or proto/. daemon/ is the server: it includes nothing from client/ or
tui/. daemon/runtime/ (the process plumbing: config, logging, signals, sockets,
peers...) includes nothing of the telemetry pipeline (store, sampler, summary,
service, metrics, web, push, sim), of control, client, tui or proto; and
daemon/control/ (the privileged helper) nothing of service, store, sampler,
summary, push, metrics or web. Every #include "dir/..." of a C++ file is checked; any violation is
listed with its file and line and fails the test.

And one root seam: outside common/paths.cc no product source (common/,
include/, daemon/, client/, tui/) spells out "/sys" or "/proc" in a string
literal. Paths into those trees are built with SysPath/ProcPath (read
through a SysFs, under --root) or HostProcPath (include/edgemon/paths.h).
Comments may name them.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM_TREE = re.compile(r'"/(sys|proc)(/|")')
SEAM = os.path.join("common", "paths.cc")
PRODUCT = ("common", "include", "daemon", "client", "tui")
# Directory (as in the tree) -> top-level directories its files may not include from.
FORBIDDEN = {
    "common": ("daemon/", "client/", "tui/", "proto/"),
    "include": ("daemon/", "client/", "tui/", "proto/"),
    "daemon": ("client/", "tui/"),
    # The process plumbing (edgemond's and edgemon-control's) knows nothing of
    # the telemetry pipeline, so the privileged helper links none of it.
    "daemon/runtime": ("daemon/store/", "daemon/sampler", "daemon/summary/", "daemon/service/",
                       "daemon/metrics/", "daemon/web/", "daemon/push/", "daemon/control/",
                       "daemon/sim/", "client/", "tui/", "proto/"),
    # The privileged helper: its board writes, its gRPC service and the runtime.
    "daemon/control": ("daemon/service/", "daemon/store/", "daemon/sampler", "daemon/summary/",
                       "daemon/push/", "daemon/metrics/", "daemon/web/", "daemon/windows/"),
    # The window lifecycle is the model's and the store's, not the transport's.
    "daemon/windows": ("daemon/service/", "daemon/metrics/", "daemon/web/", "daemon/push/",
                       "daemon/control/", "client/", "tui/", "proto/"),
}


def violations(source_dir):
    found = []
    for top, forbidden in FORBIDDEN.items():
        for dirpath, _, files in os.walk(os.path.join(source_dir, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".hpp", ".cpp")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1).startswith(forbidden):
                            found.append(f"{os.path.relpath(path, source_dir)}:{number}: includes {m.group(1)}")
    return found


def code_of(line):
    """The line without a trailing // comment (one outside a string literal)."""
    quoted = False
    for i, c in enumerate(line):
        if c == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i]
    return line


def literal_trees(source_dir):
    found = []
    for top in PRODUCT:
        for dirpath, _, files in os.walk(os.path.join(source_dir, top)):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, source_dir)
                if not name.endswith((".h", ".cc", ".hpp", ".cpp")) or rel == SEAM:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = SYSTEM_TREE.search(code_of(line))
                        if m:
                            found.append(f"{rel}:{number}: names /{m.group(1)} outside {SEAM}")
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    checked = [t for t in FORBIDDEN if os.path.isdir(os.path.join(args.source_dir, t))]
    if len(checked) != len(FORBIDDEN):
        print(f"missing floors: {sorted(set(FORBIDDEN) - set(checked))}")
        return 1
    found = violations(args.source_dir)
    literals = literal_trees(args.source_dir)
    for v in found + literals:
        print(v)
    print(f"{len(found)} includes across floors ({', '.join(checked)} checked)")
    print(f"{len(literals)} literal /sys or /proc paths outside {SEAM}")
    return 1 if found or literals else 0


if __name__ == "__main__":
    sys.exit(main())
