#!/usr/bin/env bash
# A packager's build, checked for real: in a fresh Debian 12 root holding only
# the build dependencies (scripts/install-deps.sh --build: no GoogleTest, no
# Python, no Prometheus, tmux or node_exporter), the tracked tree is built
# with exactly
#   cmake -S . -B b -DCMAKE_BUILD_TYPE=Release && cmake --build b
# (GCC 12, warnings as errors as in every build type). Prints the configure
# line naming what was left out, the number of compiler warnings, and the
# time the build took.
# Usage: scripts/check-packager-build.sh [ROOT]   (root made once, reused)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-build-release/roots/bookworm-amd64-build}
arch=$(dpkg --print-architecture)

tests/release/make-root.sh "$arch" "$root" bookworm
cleanup() { umount "$root/proc" 2>/dev/null || true; }
trap cleanup EXIT
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
install -m 0755 scripts/install-deps.sh "$root/usr/local/bin/edgemon-install-deps"
chroot "$root" /usr/local/bin/edgemon-install-deps --build

# The tracked files as they are in the working tree (a clean clone's content).
rm -rf "$root/src"
mkdir -p "$root/src"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$root/src"

t=$(date +%s)
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" sh -ec \
  'cd /src && cmake -S . -B b -DCMAKE_BUILD_TYPE=Release >configure.log 2>&1 ||
     { cat configure.log; exit 1; }
   grep -A3 "tests left out" configure.log | tr -s " \n" " " | sed "s/^/packager-build: /"; echo
   cmake --build b >build.log 2>&1 || { tail -50 build.log; exit 1; }
   echo "packager-build: $(grep -c "warning:" build.log) compiler warnings"
   for p in edgemond edgemon edgetop edgemon-control edgemon-probe; do
     f=$(find b -type f -name "$p" -perm -u+x | head -n 1)
     [ -n "$f" ] || { echo "packager-build: $p was not built" >&2; exit 1; }
   done'
echo "packager-build: Release build of the programs in a Debian 12 root with only the build" \
     "dependencies: ok in $(( $(date +%s) - t )) s"
