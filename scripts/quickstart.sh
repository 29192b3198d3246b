#!/usr/bin/env bash
# Installs the dependencies, builds edgemon, and starts monitoring.
#   scripts/quickstart.sh                 this machine
#   scripts/quickstart.sh --sim BOARD     a Jetson fixture board (agx-orin, orin-nano, xavier-nx,
#                                         tx2, jetson-nano, x86-laptop, no-sensors)
set -euo pipefail
cd "$(dirname "$0")/.."

root=/
if [ "${1:-}" = "--sim" ]; then
  board="${2:-orin-nano}"
  root="tests/fixtures/$board"
  [ -d "$root" ] || { echo "quickstart: no fixture board '$board' under tests/fixtures" >&2; exit 2; }
  shift 2 || shift $#
fi

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
build/daemon/edgemon-probe --root "$root"
echo
echo "quickstart: watching (Ctrl-C to stop)"
exec build/daemon/edgemon-probe --root "$root" --watch "$@"
