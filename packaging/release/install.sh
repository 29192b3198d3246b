#!/bin/sh
# Installs this edgemon bundle (run it from the unpacked bundle, as root):
#
#   sudo ./install.sh [--prefix DIR] [--root DIR] [--no-start]
#
#   --prefix DIR   where the programs go (default /opt/edgemon); links to
#                  them are made in /usr/local/bin
#   --root DIR     install into the root file system at DIR (an image or a
#                  chroot) instead of /; nothing is started then
#   --no-start     do not enable or start the service
#
# Installs the programs, man pages, the systemd unit (ExecStart pointing at
# the prefix), the edgemon group (systemd-sysusers, else groupadd), the
# state and socket directories and /etc/edgemon/edgemond.toml (an existing
# one is never overwritten; the new default goes beside it as .new). Then
# `systemctl enable --now edgemond` when systemd runs this machine. Running
# it again upgrades or repairs the installation. POSIX sh: runs on any
# JetPack (Ubuntu 18.04 to 24.04) and on Debian.
set -eu

me=install.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=packaging/release/install-common.sh
. "$here/install-common.sh"
prefix=/opt/edgemon
root=/
start=1
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  take_location_option "$@"
  if [ "$taken" -gt 0 ]; then shift "$taken"; continue; fi
  case "$1" in
    --no-start) start=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
check_location "$@"
[ -z "$root" ] || [ -d "$root" ] || { echo "install.sh: --root $root is not a directory" >&2; exit 2; }
if [ ! -x "$here/bin/edgemond" ] || [ ! -f "$here/VERSION" ]; then
  echo "install.sh: run it from the unpacked bundle (no bin/edgemond beside it)" >&2
  exit 2
fi
version=$(cat "$here/VERSION")
dest=$root$prefix
say() { echo "install.sh: $*"; }

# --- programs and data: copied beside, then renamed over (a running daemon
# keeps its old file until it restarts) ---
mkdir -p "$dest/bin" "$dest/share" "$dest/etc"
for p in $programs; do
  cp "$here/bin/$p" "$dest/bin/.$p.new"
  chmod 0755 "$dest/bin/.$p.new"
  mv -f "$dest/bin/.$p.new" "$dest/bin/$p"
done
if [ "$here" != "$dest" ]; then
  rm -rf "$dest/share.new"
  cp -R "$here/share" "$dest/share.new"
  rm -rf "$dest/share"
  mv "$dest/share.new" "$dest/share"
  rm -rf "${dest:?}/lib"
  cp -R "$here/lib" "$dest/lib"
  cp "$here/etc/edgemond.toml" "$dest/etc/edgemond.toml"
  cp "$here/install.sh" "$here/uninstall.sh" "$here/install-common.sh" "$here/VERSION" "$dest/"
fi
chmod 0755 "$dest/install.sh" "$dest/uninstall.sh"
chmod 0644 "$dest/install-common.sh"

mkdir -p "$root/usr/local/bin"
for p in $programs; do
  ln -sfn "$prefix/bin/$p" "$root/usr/local/bin/$p"
done
for page in "$dest"/share/man/man*/*; do
  [ -f "$page" ] || continue
  section=$(basename "$(dirname "$page")")
  mkdir -p "$root/usr/local/share/man/$section"
  ln -sfn "$prefix/share/man/$section/$(basename "$page")" \
    "$root/usr/local/share/man/$section/$(basename "$page")"
done

# The Python packages (edgemon, jtop) for the system's python3, through a .pth
# file in its dist-packages; they use the host's grpcio and protobuf.
if [ -d "$dest/lib/python3/dist-packages/edgemon" ] && [ -d "$root/usr/lib/python3/dist-packages" ]; then
  printf '%s\n' "$prefix/lib/python3/dist-packages" >"$root/usr/lib/python3/dist-packages/edgemon.pth"
fi

# --- systemd unit, sysusers.d and tmpfiles.d entries ---
mkdir -p "$root/etc/systemd/system" "$root/etc/sysusers.d" "$root/etc/tmpfiles.d"
sed -e "s|^ExecStart=[^ ]*/edgemond |ExecStart=$prefix/bin/edgemond |" \
    -e "s|/usr/share/doc/edgemon/examples/edgemond-nvml.conf|$prefix/share/doc/edgemon/examples/edgemond-nvml.conf|" \
    "$dest/lib/systemd/system/edgemond.service" >"$root/etc/systemd/system/edgemond.service.new"
mv -f "$root/etc/systemd/system/edgemond.service.new" "$root/etc/systemd/system/edgemond.service"
cp "$dest/lib/sysusers.d/edgemon.conf" "$root/etc/sysusers.d/edgemon.conf"
cp "$dest/lib/tmpfiles.d/edgemon.conf" "$root/etc/tmpfiles.d/edgemon.conf"

# --- the edgemon group (the socket's group) ---
group_gid() { sed -n 's/^edgemon:[^:]*:\([0-9]*\):.*/\1/p' "$root/etc/group" 2>/dev/null | head -n 1; }
if [ -z "$(group_gid)" ]; then
  if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers --root="${root:-/}" "$root/etc/sysusers.d/edgemon.conf" || true
  fi
  if [ -z "$(group_gid)" ]; then
    if [ -z "$root" ] && command -v groupadd >/dev/null 2>&1; then
      groupadd --system edgemon
    elif [ -n "$root" ] && [ -x "$root/usr/sbin/groupadd" ]; then
      chroot "$root" /usr/sbin/groupadd --system edgemon
    elif command -v groupadd >/dev/null 2>&1; then
      groupadd --root "$root" --system edgemon
    fi
  fi
  [ -n "$(group_gid)" ] || { echo "install.sh: could not create group edgemon" >&2; exit 1; }
  say "group edgemon created (gid $(group_gid)); add users with: usermod -aG edgemon USER"
fi
gid=$(group_gid)

# --- state and socket directories (as tmpfiles.d/edgemon.conf says) ---
mkdir -p "$root/var/lib/edgemon" "$root/run/edgemon"
chown "0:$gid" "$root/var/lib/edgemon" "$root/run/edgemon"
chmod 0700 "$root/var/lib/edgemon"
chmod 0750 "$root/run/edgemon"

# --- configuration: never overwrite an existing (possibly edited) file ---
mkdir -p "$root/etc/edgemon"
conf=$root/etc/edgemon/edgemond.toml
if [ ! -e "$conf" ]; then
  cp "$dest/etc/edgemond.toml" "$conf"
  chmod 0644 "$conf"
elif ! cmp -s "$dest/etc/edgemond.toml" "$conf"; then
  cp "$dest/etc/edgemond.toml" "$conf.new"
  say "kept your $conf; this version's default is in $conf.new"
else
  rm -f "$conf.new"
fi

# --- start it where systemd runs this machine ---
if systemd_runs_here; then
  systemctl daemon-reload
  if [ "$start" -eq 1 ]; then
    systemctl enable edgemond.service >/dev/null 2>&1
    # A reinstall or upgrade runs the new binary.
    systemctl restart edgemond.service
    say "edgemond $version installed in $prefix and running (systemctl status edgemond)"
  else
    say "edgemond $version installed in $prefix (start: systemctl enable --now edgemond)"
  fi
else
  say "edgemond $version installed in ${root:-}$prefix; systemd is not running it here:"
  say "  start by hand: $prefix/bin/edgemond --config /etc/edgemon/edgemond.toml"
fi
