#!/bin/sh
# Removes an edgemon installed by install.sh (as root):
#
#   sudo /opt/edgemon/uninstall.sh [--root DIR] [--purge]
#
#   --prefix DIR   the installation's --prefix (optional: the manifest says
#                  where it is; given and different, nothing is done)
#   --root DIR     act on the root file system at DIR instead of /
#   --purge        also remove the history (/var/lib/edgemon), the
#                  configuration (/etc/edgemon/edgemond.toml) and the groups
#                  edgemon and edgemon-control, where install.sh made them
#
# Removes exactly what /var/lib/edgemon-install/manifest lists: each file
# and link only while it is still what was installed (a changed one is left,
# and named), each directory only when empty. Stops and disables edgemond
# and edgemon-control where systemd runs this machine. Without --purge the
# history, the configuration and the groups stay for a later install (the
# manifest then lists only them). Running it again does nothing more. An
# installation made by an install.sh without a manifest (in --prefix, the
# directory holding this script, or /opt/edgemon) is recognized and removed
# the same way.
set -eu

me=uninstall.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=packaging/release/install-common.sh
. "$here/install-common.sh"
prefix=/opt/edgemon
root=/
purge=0
while [ $# -gt 0 ]; do
  take_location_option "$@"
  if [ "$taken" -gt 0 ]; then shift "$taken"; continue; fi
  case "$1" in
    --purge) purge=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "uninstall.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
check_location "$@"

work=$(mktemp -d "${TMPDIR:-/tmp}/edgemon-uninstall.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP
old=$work/old
if [ -f "$root$manifest" ]; then
  recorded=$(manifest_value prefix)
  if [ "$prefix_given" -eq 1 ] && [ "$prefix" != "$recorded" ]; then
    warn "edgemon is installed with --prefix $recorded, not $prefix (${root}$manifest); nothing was changed"
    exit 2
  fi
  read_manifest "" "$old"
else
  # No manifest: an older install.sh's installation, if any.
  legacy=$prefix
  if [ "$prefix_given" -eq 0 ]; then
    case "$here" in "$root"/*) legacy_install "${here#"$root"}" && legacy=${here#"$root"} ;; esac
  fi
  read_manifest "$legacy" "$old"
fi
if ! grep -q "^[a-z]$tab" "$old"; then
  say "nothing of edgemon's is installed${root:+ in $root}"
  exit 0
fi
tree=$(awk -F '\t' '$1 == "tree" { print $3; exit }' "$old")

if systemd_runs_here; then
  systemctl disable --now edgemon-control.service edgemond.service >/dev/null 2>&1 || true
fi
mode=uninstall
[ "$purge" -eq 0 ] || mode=purge
remove_entries "$old" /dev/null "$mode" >"$work/rest"
if [ -z "$root" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi

# What stays: the history, configuration and groups (without --purge), and
# whatever could not go. Only directories left: the manifest goes, then they.
if grep -qv "^d$tab" "$work/rest"; then
  { grep '^prefix\|^tree\|^version' "$old"; cat "$work/rest"; } >"$work/manifest"
  cp "$work/manifest" "$root$manifest.new"
  mv -f "$root$manifest.new" "$root$manifest"
else
  rm -f "$root$manifest"
  rmdir "$root${manifest%/*}" 2>/dev/null || true
  remove_entries "$work/rest" /dev/null "$mode" >"$work/left"
  while IFS="$tab" read -r _ _ path; do
    warn "left $path: it holds files that are not edgemon's"
  done <"$work/left"
fi

kept=$(awk -F '\t' '
  $1 == "s" { s = s " " $3 } $1 == "c" { c = c " " $3 } $1 == "g" { g = g " " $3 }
  END { if (s != "") out = "history" s; if (c != "") out = out (out != "" ? ", " : "") "configuration" c
        if (g != "") out = out (out != "" ? ", " : "") "groups" g; print out }' "$work/rest")
if [ "$purge" -eq 1 ]; then
  if [ -n "$kept" ]; then
    warn "edgemon removed from ${root}$tree, but not its $kept (see above)"
    exit 1
  fi
  say "edgemon removed from ${root}$tree, with its history, configuration and groups"
elif [ -n "$kept" ]; then
  say "edgemon removed from ${root}$tree; kept (--purge removes them): $kept"
else
  say "edgemon removed from ${root}$tree"
fi
