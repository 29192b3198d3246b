#!/bin/sh
# Removes an edgemon installed by install.sh (as root):
#
#   sudo /opt/edgemon/uninstall.sh [--prefix DIR] [--root DIR] [--purge]
#
#   --prefix DIR   the installation (default: the directory holding this
#                  script when it is one, else /opt/edgemon)
#   --root DIR     act on the root file system at DIR instead of /
#   --purge        also remove the history (/var/lib/edgemon), the
#                  configuration (/etc/edgemon) and the edgemon group
#
# Stops and disables the service where systemd runs this machine. Without
# --purge the history and the configuration stay for a later install.
# Running it again does nothing more.
set -eu

me=uninstall.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=packaging/release/install-common.sh
. "$here/install-common.sh"
prefix=/opt/edgemon
[ -x "$here/bin/edgemond" ] && [ -f "$here/VERSION" ] && prefix=$here
root=/
purge=0
while [ $# -gt 0 ]; do
  take_location_option "$@"
  if [ "$taken" -gt 0 ]; then shift "$taken"; continue; fi
  case "$1" in
    --purge) purge=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "uninstall.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
check_location "$@"
# With --root, a prefix found from this script's own location is inside the root.
case "$prefix" in "$root"/*) [ -z "$root" ] || prefix=${prefix#"$root"} ;; esac
[ "$prefix" != / ] || { echo "uninstall.sh: refusing prefix /" >&2; exit 2; }

if systemd_runs_here; then
  systemctl disable --now edgemond.service >/dev/null 2>&1 || true
fi

for p in $programs; do
  link=$root/usr/local/bin/$p
  # Only links into this installation.
  if [ -L "$link" ] && [ "$(readlink "$link")" = "$prefix/bin/$p" ]; then rm -f "$link"; fi
done
for link in "$root"/usr/local/share/man/man*/*; do
  [ -L "$link" ] || continue
  case "$(readlink "$link")" in "$prefix"/share/man/*) rm -f "$link" ;; esac
done
pth=$root/usr/lib/python3/dist-packages/edgemon.pth
if [ -f "$pth" ] && [ "$(cat "$pth")" = "$prefix/lib/python3/dist-packages" ]; then rm -f "$pth"; fi
rm -f "$root/etc/systemd/system/edgemond.service" "$root/etc/sysusers.d/edgemon.conf" \
      "$root/etc/tmpfiles.d/edgemon.conf"
rm -rf "$root/run/edgemon"
if [ -e "$root$prefix/bin/edgemond" ] || [ -e "$root$prefix/VERSION" ]; then
  rm -rf -- "$root$prefix"
fi
if [ -z "$root" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi

if [ "$purge" -eq 1 ]; then
  rm -rf "$root/var/lib/edgemon" "$root/etc/edgemon"
  if grep -q '^edgemon:' "$root/etc/group" 2>/dev/null; then
    if [ -z "$root" ] && command -v groupdel >/dev/null 2>&1; then
      groupdel edgemon
    elif [ -n "$root" ] && [ -x "$root/usr/sbin/groupdel" ]; then
      chroot "$root" /usr/sbin/groupdel edgemon
    fi
  fi
  echo "uninstall.sh: edgemon removed, with its history, configuration and group"
else
  echo "uninstall.sh: edgemon removed; history kept in ${root}/var/lib/edgemon," \
    "configuration in ${root}/etc/edgemon (--purge removes them)"
fi
