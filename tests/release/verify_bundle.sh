#!/usr/bin/env bash
# CI check of the release bundles built by scripts/build-release.sh: each one
# in a Debian 11 root of its architecture (arm64 through qemu-user), then the
# container image where podman can build and run it here.
#
#   tests/release/verify_bundle.sh [amd64] [arm64]     (default: both)
#
# The root file systems are made once per checkout under build-release/roots
# (tests/release/make-root.sh) and reused by later steps of the same run.
set -euo pipefail
cd "$(dirname "$0")/../.."
arches=("$@")
[ "${#arches[@]}" -gt 0 ] || arches=(amd64 arm64)
version=$(sed -n 's/^project(edgemon VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
status=0
for arch in "${arches[@]}"; do
  case "$arch" in amd64) machine=x86_64 ;; arm64) machine=aarch64 ;; *) echo "unknown arch $arch" >&2; exit 2 ;; esac
  tarball=dist/edgemon-$version-linux-$machine.tar.gz
  [ -f "$tarball" ] || { echo "verify_bundle: $tarball missing (scripts/build-release.sh --arch $arch)" >&2; exit 1; }
  root=build-release/roots/bullseye-$arch
  tests/release/make-root.sh "$arch" "$root"
  /usr/bin/python3 tests/release/verify_bundle.py --tarball "$tarball" --root "$root" || status=1
done
if [ -x tests/release/container_check.sh ] && printf '%s\n' "${arches[@]}" | grep -qx amd64; then
  tests/release/container_check.sh "dist/edgemon-$version-linux-x86_64.tar.gz" || status=1
fi
exit $status
