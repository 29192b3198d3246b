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

here=$(cd "$(dirname "$0")" && pwd)
prefix=/opt/edgemon
[ -x "$here/bin/edgemond" ] && [ -f "$here/VERSION" ] && prefix=$here
root=/
purge=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    --root=*) root=${1#--root=}; shift ;;
    --purge) purge=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "uninstall.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) echo "uninstall.sh: --prefix must be an absolute path" >&2; exit 2 ;; esac
if [ "$(id -u)" -ne 0 ]; then
  echo "uninstall.sh: must run as root (try: sudo $0 $*)" >&2
  exit 1
fi
root=${root%/}
# With --root, a prefix found from this script's own location is inside the root.
case "$prefix" in "$root"/*) [ -z "$root" ] || prefix=${prefix#"$root"} ;; esac
[ "$prefix" != / ] || { echo "uninstall.sh: refusing prefix /" >&2; exit 2; }

if [ -z "$root" ] && [ -d /run/systemd/system ] && [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
  systemctl disable --now edgemond.service >/dev/null 2>&1 || true
fi

for p in edgemond edgemon-control edgemon edgetop edgemon-probe edgemon-sim; do
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
