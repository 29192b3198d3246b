#!/usr/bin/env bash
# Makes (once) a minimal Debian root filesystem for ARCH (amd64|arm64) under
# DIR: by default Debian 11 (glibc 2.31, as on JetPack 5), with none of
# edgemon's dependencies.
# Usage: tests/release/make-root.sh ARCH DIR [SUITE]
set -euo pipefail
arch=$1 dir=$2 suite=${3:-bullseye}
if [ -x "$dir/bin/true" ] && [ -e "$dir/.edgemon-root-ok" ]; then
  echo "make-root: $dir already there"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
if [ "$arch" = arm64 ] && [ "$(dpkg --print-architecture)" != arm64 ]; then
  # Foreign root: debootstrap runs the second stage through qemu-user.
  ensure_binfmt() {
    [ -n "$(ls -A /proc/sys/fs/binfmt_misc 2>/dev/null)" ] ||
      mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { echo "make-root: no qemu-aarch64 binfmt" >&2; exit 1; }
  }
  ensure_binfmt
fi
debootstrap --arch="$arch" --variant=minbase "$suite" "$dir" http://deb.debian.org/debian >"$dir.log" 2>&1 ||
  { tail -20 "$dir.log" >&2; exit 1; }
touch "$dir/.edgemon-root-ok"
echo "make-root: $arch $suite root in $dir"
