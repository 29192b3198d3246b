#!/usr/bin/python3
"""The source tree's floors: who may include whom.

  layering.py --source-dir REPO

common/ and include/edgemon are the floor (the model, clocks, Status, the
time syntax, text, rendering): they include nothing from daemon/, client/,
tui/ or proto/. daemon/ is the server: it includes nothing from client/ or
tui/. Every #include "dir/..." of a C++ file is checked; any violation is
listed with its file and line and fails the test.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Directory (as in the tree) -> top-level directories its files may not include from.
FORBIDDEN = {
    "common": ("daemon/", "client/", "tui/", "proto/"),
    "include": ("daemon/", "client/", "tui/", "proto/"),
    "daemon": ("client/", "tui/"),
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    checked = [t for t in FORBIDDEN if os.path.isdir(os.path.join(args.source_dir, t))]
    if len(checked) != len(FORBIDDEN):
        print(f"missing floors: {sorted(set(FORBIDDEN) - set(checked))}")
        return 1
    found = violations(args.source_dir)
    for v in found:
        print(v)
    print(f"{len(found)} includes across floors ({', '.join(checked)} checked)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
