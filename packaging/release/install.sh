#!/bin/sh
# Installs this edgemon bundle (run it from the unpacked bundle, as root):
#
#   sudo ./install.sh [--prefix DIR] [--root DIR] [--no-start]
#
#   --prefix DIR   where the files go (default /opt/edgemon, links to the
#                  programs in /usr/local/bin); /usr or /usr/local put them
#                  in DIR/lib/edgemon with links in DIR/bin and DIR/share/man;
#                  other system directories are refused
#   --root DIR     install into the root file system at DIR (an image or a
#                  chroot) instead of /; nothing is started then
#   --no-start     do not enable or start edgemond
#
# Installs the programs, man pages, the systemd units edgemond.service and
# edgemon-control.service (ExecStart pointing at the installation), their
# sysusers.d and tmpfiles.d entries, the groups edgemon and edgemon-control,
# /var/lib/edgemon, /run/edgemon and /etc/edgemon/edgemond.toml (an edited
# one is kept; the new default goes beside it as .new). Then `systemctl
# enable --now edgemond` where systemd runs this machine; edgemon-control is
# installed but not enabled. Every file, link, directory and group it
# creates is listed in /var/lib/edgemon-install/manifest; no file of another
# package is replaced (the install stops before changing anything) and
# uninstall.sh removes exactly what the manifest lists. Running it again
# upgrades: what the new version no longer has is removed through the
# manifest. POSIX sh with GNU find, tar, xargs and coreutils: runs on any
# JetPack (Ubuntu 18.04 to 24.04) and Debian, also under qemu in an arm64
# root (a few dozen processes, however many files the bundle holds).
set -eu

me=install.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=packaging/release/install-common.sh
. "$here/install-common.sh"
prefix=/opt/edgemon
root=/
start=1
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
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
if [ ! -x "$here/bin/edgemond" ] || [ ! -f "$here/VERSION" ]; then
  warn "run it from the unpacked bundle (no bin/edgemond beside it)"
  exit 2
fi
version=$(cat "$here/VERSION")
place
if [ "$here" = "$root$tree" ]; then
  warn "run it from the unpacked bundle, not from the installation in $tree"
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/edgemon-install.XXXXXX")
old=$work/old new=$work/new plan=$work/plan
done_ok=0 changed=0
# On any failure the manifest still lists everything created so far (and
# what the previous installation had), so a rerun or uninstall.sh finds it.
finish() {
  if [ "$done_ok" -eq 0 ] && [ "$changed" -eq 1 ]; then
    awk -F '\t' 'NR == FNR { seen[$1 FS $3] = 1; next }
      $1 != "prefix" && $1 != "tree" && $1 != "version" && !(($1 FS $3) in seen)' "$new" "$old" >"$work/rest"
    cat "$work/rest" >>"$new"
    save_manifest "$new"
    warn "stopped; what was installed so far is listed in ${root}$manifest"
  fi
  rm -rf "$work"
}
trap finish EXIT
trap 'exit 1' INT TERM HUP

legacy=$tree
legacy_install "$legacy" || legacy=/opt/edgemon
read_manifest "$legacy" "$old"
printf 'prefix\t-\t%s\ntree\t-\t%s\nversion\t-\t%s\n' "$prefix" "$tree" "$version" >"$new"

record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$new"; }
# Writes manifest file $1 into the root (atomically).
save_manifest() {
  mkdir -p "$root${manifest%/*}"
  cp "$1" "$root$manifest.new"
  mv -f "$root$manifest.new" "$root$manifest"
}
# Creates directory $1 (inside the root) and its missing parents, recording each.
ensure_dir() {
  todo=
  dir=$1
  while [ "$dir" != / ] && [ ! -d "$root$dir" ]; do
    todo="$dir
$todo"
    dir=${dir%/*}
    [ -n "$dir" ] || dir=/
  done
  saved_ifs=$IFS
  IFS='
'
  for dir in $todo; do
    mkdir "$root$dir"
    record d - "$dir"
  done
  IFS=$saved_ifs
}

# --- 1. the plan: every file and link, and where it goes --------------------------
# Lines: KIND \t SOURCE (a file; for l the link's target) \t DESTINATION.
# $plan: the bundle's own tree (copied in one go); $extra: the few entries
# outside it (links to the programs and pages, units, sysusers.d, tmpfiles.d).
(cd "$here" && find . -mindepth 1 -printf '%y\t%l\t%P\n') | LC_ALL=C sort -t "$tab" -k 3 |
  awk -F '\t' -v here="$here" -v tree="$tree" '
    $1 == "d" { print "d\t-\t" tree "/" $3; next }
    $1 == "l" { print "l\t" $2 "\t" tree "/" $3; next }
    { print "f\t" here "/" $3 "\t" tree "/" $3 }' >"$plan"
extra=$work/extra
: >"$extra"
for p in $programs; do
  printf 'l\t%s\t%s\n' "$tree/bin/$p" "$bindir/$p" >>"$extra"
done
for page in "$here"/share/man/man*/*; do
  [ -f "$page" ] || continue
  section=${page%/*}
  section=${section##*/}
  printf 'l\t%s\t%s\n' "$tree/share/man/$section/${page##*/}" "$mandir/$section/${page##*/}" >>"$extra"
done
# The units run the installed programs.
for unit in $units; do
  [ -f "$here/lib/systemd/system/$unit" ] || continue
  sed -e "s|^ExecStart=[^ ]*/\\(edgemon[a-z-]*\\) |ExecStart=$tree/bin/\\1 |" \
      -e "s|/usr/share/doc/edgemon/examples/edgemond-nvml.conf|$tree/share/doc/edgemon/examples/edgemond-nvml.conf|" \
      "$here/lib/systemd/system/$unit" >"$work/$unit"
  printf 'f\t%s\t%s\n' "$work/$unit" "/etc/systemd/system/$unit" >>"$extra"
done
for g in $groups; do
  for kind in sysusers.d tmpfiles.d; do
    [ -f "$here/lib/$kind/$g.conf" ] && printf 'f\t%s\t%s\n' "$here/lib/$kind/$g.conf" "/etc/$kind/$g.conf" >>"$extra"
  done
done
# The Python packages (edgemon, jtop) for the system's python3, through a .pth
# file in its dist-packages; they use the host's grpcio and protobuf.
if [ -d "$here/lib/python3/dist-packages/edgemon" ] && [ -d "$root/usr/lib/python3/dist-packages" ]; then
  printf '%s\n' "$tree/lib/python3/dist-packages" >"$work/edgemon.pth"
  printf 'f\t%s\t%s\n' "$work/edgemon.pth" /usr/lib/python3/dist-packages/edgemon.pth >>"$extra"
fi

# --- 2. nothing of others is replaced: check before changing anything ---------------
# A destination that exists conflicts unless the previous installation made
# it: a directory where a file or link goes, or anything but a real
# directory where a directory goes.
cut -f 3 "$plan" "$extra" >"$work/dests"
inspect_paths "$work/dests" "$work/before"
conflicts=$(awk -F '\t' '
  FILENAME == ARGV[1] { if ($1 == "f" || $1 == "l") ours[$3] = 1; next }
  FILENAME == ARGV[2] { type[$3] = $1; next }
  !($3 in type) { next }
  $1 == "d" { if (type[$3] != "d") print $3; next }
  type[$3] == "d" || !($3 in ours) { print $3 }' "$old" "$work/before" "$plan" "$extra")
if [ -n "$conflicts" ]; then
  warn "these exist and are not edgemon's (not in ${root}$manifest); nothing was changed:"
  printf '%s\n' "$conflicts" | sed "s|^|$me:   ${root}|" >&2
  exit 1
fi

# --- 3. the groups (the sockets' groups) ----------------------------------------------
changed=1
for g in $groups; do
  if group_exists "$g"; then
    if entry_data g "$g" "$old" >/dev/null; then record g - "$g"; fi
  elif [ -f "$here/lib/sysusers.d/$g.conf" ]; then
    add_group "$g" "$here/lib/sysusers.d/$g.conf" || { warn "could not create group $g"; exit 1; }
    record g - "$g"
    say "group $g created (gid $(group_gid "$g")); add users with: usermod -aG $g USER"
  fi
done
gid=$(group_gid edgemon)
[ -n "$gid" ] || { warn "no group edgemon"; exit 1; }

# --- 4. files and links --------------------------------------------------------------
# The bundle's tree in one tar stream (owner root, no write for others);
# tar replaces an existing file by unlinking it first, so a running program
# keeps its old file until it restarts. Its directories that did not exist
# are listed first, so a failure midway still leaves them in the manifest.
ensure_dir "$tree"
awk -F '\t' 'FILENAME == ARGV[1] { seen[$3] = 1; next } $1 == "d" && !($3 in seen) { print "d\t-\t" $3 }' \
  "$work/before" "$plan" >>"$new"
(cd "$here" && tar -cf - --owner=0 --group=0 --numeric-owner --mode=u+w,go-w,a+rX .) |
  (cd "$root$tree" && tar -xf - --no-same-owner)
awk -F '\t' '$1 == "f" { print $3 }' "$plan" >"$work/files"
inspect_paths "$work/files" "$work/copied"
awk -F '\t' 'FILENAME == ARGV[1] { if ($1 == "f") sum[$3] = $2; next }
  $1 == "f" { print "f\t" (($3 in sum) ? sum[$3] : "?") "\t" $3; next }
  $1 == "l" { print }' "$work/copied" "$plan" >>"$new"
# The rest, each written beside and renamed over.
while IFS="$tab" read -r kind src dest; do
  p=$root$dest
  ensure_dir "${dest%/*}"
  case "$kind" in
    f)
      cp "$src" "$p.edgemon-new"
      chmod 0644 "$p.edgemon-new"
      mv -f "$p.edgemon-new" "$p"
      record f "$(hash_of "$p")" "$dest" ;;
    l)
      ln -sfn "$src" "$p"
      record l "$src" "$dest" ;;
  esac
done <"$extra"

# --- 5. history and socket directories (as tmpfiles.d/edgemon.conf says) ---------------
for entry in "s /var/lib/edgemon 0700" "r /run/edgemon 0750"; do
  # shellcheck disable=SC2086  # three words
  set -- $entry
  if [ ! -d "$root$2" ]; then
    ensure_dir "${2%/*}"
    mkdir "$root$2"
    record "$1" - "$2"
  elif entry_data "$1" "$2" "$old" >/dev/null; then
    record "$1" - "$2"
  fi
  chown "0:$gid" "$root$2"
  chmod "$3" "$root$2"
done

# --- 6. configuration: an edited (or someone else's) file is never replaced ----------
conf=/etc/edgemon/edgemond.toml
ensure_dir /etc/edgemon
was=$(entry_data c "$conf" "$old" || echo none)
if [ ! -e "$root$conf" ] || { [ -f "$root$conf" ] && [ "$(hash_of "$root$conf")" = "$was" ]; }; then
  # Absent, or ours and unedited: the new default.
  cp "$here/etc/edgemond.toml" "$root$conf.edgemon-new"
  chmod 0644 "$root$conf.edgemon-new"
  mv -f "$root$conf.edgemon-new" "$root$conf"
  record c "$(hash_of "$root$conf")" "$conf"
else
  [ "$was" = none ] || record c "$was" "$conf"
  if ! cmp -s "$here/etc/edgemond.toml" "$root$conf"; then
    if [ -e "$root$conf.new" ] && ! entry_data c "$conf.new" "$old" >/dev/null; then
      warn "kept your $conf; $conf.new is not edgemon's, so this version's default is not written"
    else
      cp "$here/etc/edgemond.toml" "$root$conf.new"
      chmod 0644 "$root$conf.new"
      record c "$(hash_of "$root$conf.new")" "$conf.new"
      say "kept your ${root}$conf; this version's default is in ${root}$conf.new"
    fi
  fi
fi

# --- 7. the manifest; what the previous installation had and this one has not goes --
# Directories the previous installation created that hold this one's files
# stay listed (they existed, so ensure_dir did not list them again).
awk -F '\t' '
  NR == FNR {
    if ($1 == "prefix" || $1 == "tree" || $1 == "version" || $1 == "g") next
    listed[$1 FS $3] = 1
    p = $3; anc[p] = 1
    while (sub(/\/[^\/]*$/, "", p) && p != "") anc[p] = 1
    next
  }
  $1 == "d" && ($3 in anc) && !(("d" FS $3) in listed) { print }' "$new" "$old" >"$work/carried"
while IFS="$tab" read -r kind _ path; do
  [ -d "$root$path" ] && [ ! -L "$root$path" ] && record d - "$path"
done <"$work/carried"
save_manifest "$new"
remove_entries "$old" "$new" upgrade >"$work/kept"
cat "$work/kept" >>"$new"
save_manifest "$new"
done_ok=1

# --- 8. start it where systemd runs this machine --------------------------------------
hint_control() {
  say "edgemon-control (power mode, clocks, fan) is installed but not enabled; to use it:"
  say "  set [control] enable = true in /etc/edgemon/edgemond.toml, then"
  say "  systemctl enable --now edgemon-control; usermod -aG edgemon-control USER"
}
if systemd_runs_here; then
  systemctl daemon-reload
  # An upgrade runs the new helper if it was enabled and running.
  systemctl try-restart edgemon-control.service >/dev/null 2>&1 || true
  if [ "$start" -eq 1 ]; then
    systemctl enable edgemond.service >/dev/null 2>&1
    # A reinstall or upgrade runs the new binary.
    systemctl restart edgemond.service
    say "edgemond $version installed in $tree and running (systemctl status edgemond)"
  else
    say "edgemond $version installed in $tree (start: systemctl enable --now edgemond)"
  fi
else
  say "edgemond $version installed in ${root}$tree; systemd is not running it here:"
  say "  start by hand: $tree/bin/edgemond --config /etc/edgemon/edgemond.toml"
fi
hint_control
say "what was installed is listed in ${root}$manifest (uninstall: $tree/uninstall.sh)"
