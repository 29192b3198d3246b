# shellcheck shell=sh
# What install.sh and uninstall.sh share (sourced by both; POSIX sh; shipped
# beside them in the bundle and in the prefix): the programs a bundle holds,
# the --prefix/--root options, the checks made before anything is touched,
# and whether systemd runs this machine. `me` names the script in messages.

# shellcheck disable=SC2034  # used by the scripts that source this
: "${me:?set me before sourcing install-common.sh}"

programs="edgemond edgemon-control edgemon edgetop edgemon-probe edgemon-sim"

# Takes a --prefix or --root option off the front of "$@": sets prefix or
# root, and `taken` to the number of arguments used (0: not one of them).
take_location_option() {
  taken=0
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; taken=2 ;;
    --prefix=*) prefix=${1#--prefix=}; taken=1 ;;
    --root) root=${2:?--root needs a directory}; taken=2 ;;
    --root=*) root=${1#--root=}; taken=1 ;;
  esac
}

# An absolute prefix, run as root; root loses its trailing slash ("" for /).
check_location() {
  case "$prefix" in /*) ;; *) echo "$me: --prefix must be an absolute path" >&2; exit 2 ;; esac
  if [ "$(id -u)" -ne 0 ]; then
    echo "$me: must run as root (try: sudo $0 $*)" >&2
    exit 1
  fi
  root=${root%/}
}

# True when acting on this machine's own root and systemd runs it.
systemd_runs_here() {
  [ -z "$root" ] && [ -d /run/systemd/system ] && [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]
}
