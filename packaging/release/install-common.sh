# shellcheck shell=sh
# What install.sh and uninstall.sh share (sourced by both; POSIX sh; shipped
# beside them in the bundle and in the installation): the programs a bundle
# holds, the --prefix/--root options and where a prefix puts things, the
# manifest, removing what a manifest lists, the groups, and whether systemd
# runs this machine. `me` names the script in messages.
#
# The manifest, /var/lib/edgemon-install/manifest (inside --root), lists what
# install.sh created and nothing else, one entry a line, TAB-separated:
#
#   prefix  -       PREFIX       the --prefix given (header lines: prefix,
#   tree    -       DIR          tree, version)
#   version -       VERSION
#   d       -       PATH         a directory it created (removed when empty)
#   f       SHA256  PATH         a file (removed if it still has that content)
#   l       TARGET  PATH         a symbolic link (removed if it still points there)
#   c       SHA256  PATH         configuration: kept by uninstall, removed by --purge
#   s       -       PATH         the history (/var/lib/edgemon): kept, --purge removes it
#   r       -       PATH         the socket directory (/run/edgemon)
#   g       -       GROUP        a group it created: kept, --purge removes it
#
# Paths are as seen inside the root. A directory is never removed with its
# contents unless it is one of the s or r entries, which hold edgemon's own
# data only.
#
# The manifest is trusted only where only root can write it: the file and
# every directory above it (up to /) belong to root, none is a link, and
# none is writable by group or others (a sticky directory, /tmp, excepted);
# otherwise both scripts stop before changing anything. Even then an entry
# is honoured only where install.sh puts that kind of entry (the tree and
# the directories above it, the links in BINDIR and MANDIR, the units,
# sysusers.d, tmpfiles.d and .pth files, /etc/edgemon's configuration,
# /var/lib/edgemon, /run/edgemon, the groups edgemon and edgemon-control),
# a file or link only while its identity is what was installed (type and
# SHA-256, or type and target), and nothing through a directory that is a
# link now (a directory replaced by a link after install is not followed).
# What does not match is reported and left.
#
# Where the files go (one rule for both scripts): a prefix of its own
# (default /opt/edgemon, or any directory that does not exist yet, is empty,
# or holds an edgemon installation) receives the whole bundle, with links in
# /usr/local/bin and /usr/local/share/man. The shared prefixes /usr and
# /usr/local receive the bundle in PREFIX/lib/edgemon and links in PREFIX/bin
# and PREFIX/share/man; nothing of others is replaced. Any other existing
# directory, and every system directory (/, /etc, /opt, /usr/lib, ...), is
# refused.

# shellcheck disable=SC2034  # used by the scripts that source this
: "${me:?set me before sourcing install-common.sh}"

programs="edgemond edgemon-control edgemon edgetop edgemon-probe edgemon-sim"
groups="edgemon edgemon-control"
units="edgemond.service edgemon-control.service"
manifest=/var/lib/edgemon-install/manifest
tab=$(printf '\t')
prefix_given=0
umask 022

say() { echo "$me: $*"; }
warn() { echo "$me: $*" >&2; }

# Takes a --prefix or --root option off the front of "$@": sets prefix or
# root, and `taken` to the number of arguments used (0: not one of them).
take_location_option() {
  taken=0
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; prefix_given=1; taken=2 ;;
    --prefix=*) prefix=${1#--prefix=}; prefix_given=1; taken=1 ;;
    --root) root=${2:?--root needs a directory}; taken=2 ;;
    --root=*) root=${1#--root=}; taken=1 ;;
  esac
}

# An absolute, plain prefix (no . or .. parts; repeated and trailing slashes
# dropped), run as root; root loses its trailing slash ("" for /).
check_location() {
  case "$prefix" in /*) ;; *) warn "--prefix must be an absolute path"; exit 2 ;; esac
  case "/$prefix/" in */./*|*/../*) warn "--prefix must not contain . or .. ($prefix)"; exit 2 ;; esac
  prefix=$(printf '%s\n' "$prefix" | sed -e 's|//*|/|g' -e 's|\(.\)/$|\1|')
  if [ "$(id -u)" -ne 0 ]; then
    warn "must run as root (try: sudo $0 $*)"
    exit 1
  fi
  root=${root%/}
  [ -z "$root" ] || [ -d "$root" ] || { warn "--root $root is not a directory"; exit 2; }
  if [ -n "$root" ]; then
    root=$(cd "$root" && pwd -P)
    [ "$root" != / ] || root=
  fi
}

# Sets `tree` (where the bundle's files go) and `bindir`/`mandir` (where the
# links to the programs and man pages go) for $prefix, or refuses it.
place() {
  case "$prefix" in
    /usr|/usr/local)
      tree=$prefix/lib/edgemon bindir=$prefix/bin mandir=$prefix/share/man
      return 0 ;;
    /|/bin|/bin/*|/boot|/boot/*|/dev|/dev/*|/etc|/etc/*|/home|/lib|/lib/*|/lib32|/lib64|/libx32|/media|/mnt|\
    /opt|/proc|/proc/*|/root|/run|/run/*|/sbin|/sbin/*|/srv|/sys|/sys/*|/tmp|/usr/*|/var|/var/*)
      warn "--prefix $prefix is a system directory; use /opt/edgemon (the default),"
      warn "  /usr/local or /usr (the files go into PREFIX/lib/edgemon, links into PREFIX/bin),"
      warn "  or a directory of edgemon's own"
      exit 2 ;;
  esac
  tree=$prefix bindir=/usr/local/bin mandir=/usr/local/share/man
  # A directory of its own: absent, empty, or an edgemon installation.
  d=$root$prefix
  if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then
    warn "--prefix $prefix exists and is not a directory"; exit 2
  fi
  if [ -d "$d" ] && [ -n "$(ls -A "$d")" ] && [ "$(manifest_value tree)" != "$prefix" ] &&
     ! legacy_install "$prefix"; then
    warn "--prefix $prefix holds files that are not edgemon's; give a new or empty"
    warn "  directory, /opt/edgemon (the default), /usr/local or /usr"
    exit 2
  fi
}

# A header value (prefix, tree, version) of the manifest in the root, or "".
manifest_value() {
  [ -f "$root$manifest" ] || return 0
  awk -F '\t' -v k="$1" '$1 == k { print $3; exit }' "$root$manifest"
}

# True when DIR (inside the root) holds an installation made by an
# install.sh that kept no manifest.
legacy_install() {
  [ ! -f "$root$manifest" ] && [ -f "$root$1/VERSION" ] && [ -x "$root$1/bin/edgemond" ] &&
    [ -f "$root$1/uninstall.sh" ]
}

hash_of() { sha256sum <"$1" | cut -d ' ' -f 1; }

# Writes to file $2, for each path in file $1 (paths inside the root, one a
# line) that exists, a line TYPE \t DATA \t PATH: TYPE as find's %y (f a
# file, d a directory, l a link, ...), DATA the SHA-256 of a file, the target
# of a link, "-" otherwise (a file that could not be hashed gets "?"). Links
# are not followed. A handful of processes however many paths there are:
# one find and one sha256sum per xargs batch, not one per file (a bundle
# holds thousands, and under qemu every process costs tens of milliseconds).
inspect_paths() {
  awk -v r="$root" '{ print r $0 }' "$1" | tr '\n' '\000' |
    xargs -0 -r sh -c 'find -P "$@" -maxdepth 0 -printf "%y\t%l\t%p\n" 2>/dev/null; :' sh >"$2.y"
  awk -F '\t' '$1 == "f" { print $3 }' "$2.y" | tr '\n' '\000' |
    xargs -0 -r sh -c 'sha256sum -- "$@" 2>/dev/null; :' sh >"$2.h"
  # sha256sum: 64 hex digits, two characters, the name (a line starting
  # with a backslash has an escaped name: left as "?").
  awk -F '\t' -v r="$root" -v h="$2.h" '
    FILENAME == h { if (substr($0, 1, 1) != "\\") sum[substr($0, 67)] = substr($0, 1, 64); next }
    { data = "-"
      if ($1 == "l") data = $2
      else if ($1 == "f") data = ($3 in sum) ? sum[$3] : "?"
      print $1 "\t" data "\t" substr($3, length(r) + 1) }' "$2.h" "$2.y" >"$2"
  rm -f "$2.y" "$2.h"
}

# Writes to stdout the manifest an install.sh without manifests would have
# kept for the installation in $1 (inside the root; $2 names scratch files):
# everything in that directory, the links to it, the units, sysusers.d and
# tmpfiles.d entries, the history, the configuration and group edgemon.
legacy_manifest() {
  lp=$1
  printf 'prefix\t-\t%s\ntree\t-\t%s\nversion\t-\t%s\n' "$lp" "$lp" "$(cat "$root$lp/VERSION")"
  printf 'd\t-\t%s\n' "$lp"
  (cd "$root$lp" && find . -mindepth 1 -printf '%P\n') | LC_ALL=C sort |
    awk -v lp="$lp" '{ print lp "/" $0 }' >"$2.paths"
  inspect_paths "$2.paths" "$2.now"
  awk -F '\t' '$1 == "d" || $1 == "l" || $1 == "f"' "$2.now"
  rm -f "$2.paths" "$2.now"
  for link in "$root"/usr/local/bin/edgemon* "$root"/usr/local/bin/edgetop "$root"/usr/local/share/man/man*/*; do
    [ -L "$link" ] || continue
    case "$(readlink "$link")" in
      "$lp"/*)
        printf 'l\t%s\t%s\n' "$(readlink "$link")" "${link#"$root"}"
        # Its man section directory may be the old installer's too: removed only when empty.
        case "$link" in */share/man/*) dir=${link%/*}; printf 'd\t-\t%s\n' "${dir#"$root"}" ;; esac ;;
    esac
  done
  for p in /etc/systemd/system/edgemond.service /etc/sysusers.d/edgemon.conf /etc/tmpfiles.d/edgemon.conf; do
    [ -f "$root$p" ] && printf 'f\t%s\t%s\n' "$(hash_of "$root$p")" "$p"
  done
  pth=/usr/lib/python3/dist-packages/edgemon.pth
  if [ -f "$root$pth" ] && [ "$(cat "$root$pth")" = "$lp/lib/python3/dist-packages" ]; then
    printf 'f\t%s\t%s\n' "$(hash_of "$root$pth")" "$pth"
  fi
  [ -d "$root/etc/edgemon" ] && printf 'd\t-\t/etc/edgemon\n'
  # Whether the configuration was edited is unknown: "-" keeps it as edited.
  [ -f "$root/etc/edgemon/edgemond.toml" ] && printf 'c\t-\t/etc/edgemon/edgemond.toml\n'
  [ -f "$root/etc/edgemon/edgemond.toml.new" ] &&
    printf 'c\t%s\t/etc/edgemon/edgemond.toml.new\n' "$(hash_of "$root/etc/edgemon/edgemond.toml.new")"
  [ -d "$root/var/lib/edgemon" ] && printf 's\t-\t/var/lib/edgemon\n'
  [ -d "$root/run/edgemon" ] && printf 'r\t-\t/run/edgemon\n'
  grep -q '^edgemon:' "$root/etc/group" 2>/dev/null && printf 'g\t-\tedgemon\n'
  return 0
}

# Exits (1) unless the manifest in the root, and every directory above it,
# belongs to root, is no link and is not writable by group or others (a
# sticky directory excepted): an entry it lists is removed as root's.
check_manifest_trusted() {
  p=$root$manifest
  while [ -n "$p" ]; do
    why=
    if [ -L "$p" ]; then
      why="is a link"
    else
      # shellcheck disable=SC2046  # three words
      set -- $(stat -c '%u %a %F' -- "$p" 2>/dev/null || echo x)
      if [ "$1" = x ]; then
        why="cannot be inspected"
      elif [ "$1" -ne 0 ]; then
        why="belongs to uid $1, not root"
      elif [ $((0$2 & 022)) -ne 0 ] && { [ "$3" != directory ] || [ $((0$2 & 01000)) -eq 0 ]; }; then
        why="is writable by group or others (mode $2)"
      elif [ "$p" = "$root$manifest" ] && [ "$3 ${4:-}" != "regular file" ]; then
        why="is not a regular file"
      fi
    fi
    if [ -n "$why" ]; then
      warn "$p $why: only root may write the manifest ${root}$manifest and the directories"
      warn "  above it; nothing was changed"
      exit 1
    fi
    [ "$p" != / ] || break
    p=${p%/*}
    [ -n "$p" ] || p=/
  done
}

# Copies the manifest of what is installed (or the one a legacy installation
# in $1 implies) to the file $2; empty when nothing is installed.
read_manifest() {
  if [ -f "$root$manifest" ] || [ -L "$root$manifest" ]; then
    check_manifest_trusted
    cat "$root$manifest" >"$2"
  elif [ -n "$1" ] && legacy_install "$1"; then
    legacy_manifest "$1" "$2.legacy" >"$2"
  else
    : >"$2"
  fi
}

# The data field of entry KIND PATH in manifest file $3 (exit 1: none).
entry_data() {
  awk -F '\t' -v k="$1" -v p="$2" '$1 == k && $3 == p { print $2; found = 1; exit }
    END { exit !found }' "$3"
}

# Removes what the entries of manifest file $1 list, except those also in
# manifest file $2 (the new installation's, on an upgrade; /dev/null
# otherwise). $3 is upgrade, uninstall or purge: uninstall keeps c, s and g
# entries, purge removes them too, upgrade removes a c entry only while
# unchanged. Files and links go only while they are still what was
# installed; directories only when empty, deepest first, after the files.
# What stays is written to stdout as manifest entries. Decided in one pass
# over the entries and the paths' state (inspect_paths), removed in batches.
# An entry where install.sh never puts its kind (see the top of this file),
# and one below a directory that is a link now, is reported and left.
remove_entries() {
  awk -F '\t' 'FILENAME == ARGV[1] { keep[$1 FS $3] = 1; next }
    $1 == "prefix" || $1 == "tree" || $1 == "version" || (($1 FS $3) in keep) { next }
    { print }' "$2" "$1" >"$1.todo"
  cut -f 3 "$1.todo" >"$1.paths"
  inspect_paths "$1.paths" "$1.now"
  # The directories the entries are in, as given and as resolved: a
  # difference is a link on the way.
  awk -F '\t' -v r="$root" '$1 != "g" { d = $3; sub(/\/[^\/]*$/, "", d); print (d == "" ? (r == "" ? "/" : r) : r d) }' \
    "$1.todo" | LC_ALL=C sort -u >"$1.dirs"
  tr '\n' '\000' <"$1.dirs" | xargs -0 -r realpath -m -- >"$1.real"
  paste "$1.dirs" "$1.real" | awk -F '\t' -v r="$root" '$1 != $2 { print substr($1, length(r) + 1) }' >"$1.linked"
  mtree=$(awk -F '\t' '$1 == "tree" { print $3; exit }' "$1")
  mprefix=$(awk -F '\t' '$1 == "prefix" { print $3; exit }' "$1")
  # One action a line: rm PATH, rmrf PATH, rmdir PATH, warn PATH, group PATH,
  # stray KIND PATH, linked PATH, or keep KIND DATA PATH.
  awk -F '\t' -v mode="$3" -v tree="$mtree" -v prefix="$mprefix" -v programs="$programs" -v groups="$groups" '
    function under(p, d) { return p == d || index(p, d "/") == 1 }
    function dir_of(p) { sub(/\/[^\/]*$/, "", p); return p == "" ? "/" : p }
    function base_of(p) { sub(/^.*\//, "", p); return p }
    # Where install.sh puts an entry of kind k (see the top of this file).
    function allowed(k, p,   d) {
      if (k == "g") return (p in group)
      if (k == "s") return p == "/var/lib/edgemon"
      if (k == "r") return p == "/run/edgemon"
      if (k == "c") return p == "/etc/edgemon/edgemond.toml" || p == "/etc/edgemon/edgemond.toml.new"
      if (tree != "" && tree != "/" && under(p, tree)) return 1
      if (k == "l") return (dir_of(p) == bindir && (base_of(p) in program)) ||
                           (dir_of(dir_of(p)) == mandir && base_of(dir_of(p)) ~ /^man[0-9]$/)
      if (k == "f") return p ~ /^\/etc\/systemd\/system\/edgemon(d|-control)\.service$/ ||
                           p ~ /^\/etc\/(sysusers|tmpfiles)\.d\/edgemon(-control)?\.conf$/ ||
                           p == "/usr/lib/python3/dist-packages/edgemon.pth"
      if (k == "d") {
        if (dir_of(p) == mandir && base_of(p) ~ /^man[0-9]$/) return 1
        for (d in place) if (p == "/" || under(d, p)) return 1
      }
      return 0
    }
    BEGIN {
      split(programs, a, " "); for (i in a) program[a[i]] = 1
      split(groups, a, " "); for (i in a) group[a[i]] = 1
      if (prefix == "/usr" || prefix == "/usr/local") { bindir = prefix "/bin"; mandir = prefix "/share/man" }
      else { bindir = "/usr/local/bin"; mandir = "/usr/local/share/man" }
      # The directories install.sh makes (with their parents) for its files.
      split(bindir " " mandir " /etc/systemd/system /etc/sysusers.d /etc/tmpfiles.d " \
            "/usr/lib/python3/dist-packages /etc/edgemon /var/lib/edgemon /run/edgemon", a, " ")
      for (i in a) place[a[i]] = 1
      if (tree != "" && tree != "/") place[tree] = 1
    }
    FILENAME == ARGV[1] { linked[$0] = 1; next }
    FILENAME == ARGV[2] { type[$3] = $1; data[$3] = $2; next }
    { k = $1; p = $3; t = (p in type) ? type[p] : ""; same = (t != "" && data[p] == $2)
      keep = "keep\t" $0
      if (!allowed(k, p)) { print "stray\t" k "\t" p; next }
      if (k != "g" && (dir_of(p) in linked)) { if (t != "") print "linked\t" p; next }
      if (k == "f") { if (t == "f" && same) print "rm\t" p; else if (t != "" && t != "l") print "warn\t" p }
      else if (k == "l") { if (t == "l" && same) print "rm\t" p; else if (t != "") print "warn\t" p }
      else if (k == "c") {
        if (t != "f") next
        if (mode == "purge" || (mode == "upgrade" && same)) print "rm\t" p; else print keep
      }
      else if (k == "s") { if (t != "d") next; if (mode == "purge") print "rmrf\t" p; else print keep }
      else if (k == "r") { if (t == "d") print "rmrf\t" p }
      else if (k == "g") print "group\t" p
      else if (k == "d") { if (t == "d") print "rmdir\t" p }
    }' "$1.linked" "$1.now" "$1.todo" >"$1.act"
  awk -F '\t' -v r="$root" '$1 == "rm" { print r $2 }' "$1.act" | tr '\n' '\000' | xargs -0 -r rm -f --
  while IFS="$tab" read -r act a b c; do
    case "$act" in
      warn) warn "left $a: changed since it was installed" ;;
      linked) warn "left $a: a directory on its way is a link now (not followed)" ;;
      stray) warn "left $b: the manifest lists it as '$a', but edgemon never installs that there" ;;
      keep) printf '%s\t%s\t%s\n' "$a" "$b" "$c" ;;
      rmrf) rm -rf -- "$root$a" ;;
      group)
        if [ "$3" = purge ]; then delete_group "$a"
        elif group_exists "$a"; then printf 'g\t-\t%s\n' "$a"
        fi ;;
    esac
  done <"$1.act"
  awk -F '\t' -v r="$root" '$1 == "rmdir" { print length($2) "\t" r $2 }' "$1.act" | sort -rn | cut -f 2- |
    tr '\n' '\000' | xargs -0 -r sh -c 'rmdir -- "$@" 2>/dev/null; :' sh
  while IFS="$tab" read -r act a b c; do
    if [ "$act" = rmdir ] && [ -d "$root$a" ]; then printf 'd\t-\t%s\n' "$a"; fi
  done <"$1.act"
  rm -f "$1.todo" "$1.paths" "$1.now" "$1.act" "$1.dirs" "$1.real" "$1.linked"
}

# --- groups -----------------------------------------------------------------------
group_exists() { grep -q "^$1:" "$root/etc/group" 2>/dev/null; }
group_gid() { sed -n "s/^$1:[^:]*:\([0-9]*\):.*/\1/p" "$root/etc/group" 2>/dev/null | head -n 1; }

# Creates group $1 as sysusers.d file $2 says (systemd-sysusers, else groupadd).
add_group() {
  if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers --root="${root:-/}" "$2" >/dev/null 2>&1 || true
  fi
  group_exists "$1" && return 0
  if [ -z "$root" ] && command -v groupadd >/dev/null 2>&1; then
    groupadd --system "$1"
  elif [ -n "$root" ] && [ -x "$root/usr/sbin/groupadd" ]; then
    chroot "$root" /usr/sbin/groupadd --system "$1"
  elif command -v groupadd >/dev/null 2>&1; then
    groupadd --root "$root" --system "$1"
  fi
  group_exists "$1"
}

# Drops the line of group $2 from the root's file $1 (mode and owner kept).
drop_group_line() {
  [ -f "$1" ] && grep -q "^$2:" "$1" || return 0
  cp -p "$1" "$1.edgemon-new"
  grep -v "^$2:" "$1" >"$1.edgemon-new" || true
  mv -f "$1.edgemon-new" "$1"
}

# Deletes group $1 (created by install.sh) unless a user has it as the
# primary group; says what happened, truthfully.
delete_group() {
  group_exists "$1" || return 0
  gid=$(group_gid "$1")
  user=$(awk -F : -v g="$gid" '$4 == g { print $1; exit }' "$root/etc/passwd" 2>/dev/null)
  if [ -n "$gid" ] && [ -n "$user" ]; then
    warn "kept group $1: it is the primary group of user $user"
    printf 'g\t-\t%s\n' "$1"
    return 0
  fi
  if [ -z "$root" ] && command -v groupdel >/dev/null 2>&1; then
    groupdel "$1" >/dev/null 2>&1 || true
  fi
  if group_exists "$1"; then
    drop_group_line "$root/etc/group" "$1"
    drop_group_line "$root/etc/gshadow" "$1"
  fi
  if group_exists "$1"; then
    warn "could not remove group $1"
    printf 'g\t-\t%s\n' "$1"
  else
    say "removed group $1" >&2
  fi
}

# True when acting on this machine's own root and systemd runs it.
systemd_runs_here() {
  [ -z "$root" ] && [ -d /run/systemd/system ] && [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]
}
