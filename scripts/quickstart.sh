#!/usr/bin/env bash
# Installs what building edgemon needs, builds its programs, and starts monitoring:
#   scripts/quickstart.sh                this machine
#   scripts/quickstart.sh --sim BOARD    a simulated board whose values move (agx-orin, orin-nano,
#                                        xavier-nx, tx2, jetson-nano, x86-laptop, no-sensors)
#   scripts/quickstart.sh --no-install [--sim BOARD]
#                                        the same without the install step, as an
#                                        ordinary user where the packages are there
# Only the install step needs root (install-deps.sh asks sudo for it, and only
# when a package is missing); the build, edgemond and edgetop run as you.
# Only the build dependencies are installed (scripts/install-deps.sh --build:
# the compiler, CMake, Ninja and the libraries' -dev packages; no service is
# among them, and none is started or enabled), and only the programs are
# built into build/ (edgemond, edgemon, edgetop, edgemon-sim, edgemon-probe
# and the Python package), not the tests and benchmarks: scripts/test.sh
# installs their tools, builds everything and runs the tests.
# edgemond runs in the background (history in build/edgemon*.db, API on
# build/edgemond*.sock) and edgetop shows it in this terminal; q quits and
# stops everything. Without a terminal, edgemond runs in the foreground and
# prints one line per second instead (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."

install=1
board=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-install) install=0; shift ;;
    --sim)
      board="${2:-orin-nano}"
      [ -d "tests/fixtures/$board" ] || { echo "quickstart: no board '$board' in tests/fixtures" >&2; exit 2; }
      shift 2 || shift $# ;;
    *) echo "quickstart: unknown argument '$1' (--sim BOARD, --no-install)" >&2; exit 2 ;;
  esac
done

if [ "$install" = 1 ]; then
  scripts/install-deps.sh --build
fi
# A new build/ is configured for the programs alone: Release (no debug
# information: a quarter less compile time than RelWithDebInfo), without the
# tests and benchmarks. One already there keeps its configuration (the one
# scripts/test.sh makes, say), so nothing is rebuilt for a change of flags.
fresh=()
if [ ! -f build/CMakeCache.txt ]; then
  fresh=(-DCMAKE_BUILD_TYPE=Release -DEDGEMON_BUILD_TESTS=OFF -DEDGEMON_BUILD_BENCH=OFF)
fi
cmake -S . -B build -G Ninja "${fresh[@]}" >/dev/null
cmake --build build -j"$(nproc)" --target edgemond edgemon edgetop edgemon-sim edgemon-probe \
  edgemon_python

root=/
db=build/edgemon.db
if [ -n "$board" ]; then
  root="$(mktemp -d /tmp/edgemon-sim.XXXXXX)/$board"
  db="build/edgemon-$board.db"
  build/daemon/sim/edgemon-sim --board "$board" --out "$root" --rate-hz 20 -q &
  sim=$!
  trap 'kill $sim 2>/dev/null; wait $sim 2>/dev/null; rm -rf "$(dirname "$root")"' EXIT
  for _ in $(seq 50); do [ -f "$root/.edgemon-sim.json" ] && break; sleep 0.1; done
fi

sock="$PWD/build/edgemond${board:+-$board}.sock"
build/daemon/edgemon-probe --root "$root" --nvml off --warmup-ms 500
echo
echo "quickstart: edgemond on $root, API on unix:$sock; from another terminal:"
echo "  build/client/cli/edgemon --connect unix:$sock now"
echo "  build/client/cli/edgemon --connect unix:$sock record -- sleep 3"
echo "  build/tui/edgetop --connect unix:$sock"
if [ ! -t 0 ] || [ ! -t 1 ]; then
  build/daemon/edgemond --root "$root" --db "$db" --listen "unix:$sock" --print \
    --energy-rate-hz 50
  exit
fi
build/daemon/edgemond --root "$root" --db "$db" --listen "unix:$sock" --energy-rate-hz 50 \
  2>build/edgemond.log &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; [ -z "${sim:-}" ] || { kill $sim 2>/dev/null; wait $sim 2>/dev/null; rm -rf "$(dirname "$root")"; }' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
sleep 2
build/tui/edgetop --connect "unix:$sock"
