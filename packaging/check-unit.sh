#!/usr/bin/env bash
# CI check of edgemon's systemd integration. Works without systemd as PID 1.
#
#   packaging/check-unit.sh BUILD_DIR
#
# 1. `systemd-analyze verify` of edgemond.service, alone and with the NVML
#    drop-in, with ExecStart pointed at a program built in BUILD_DIR
#    (daemon/edgemond, else daemon/edgemon-probe) and the man pages of
#    Documentation= made visible through MANPATH. systemd 252 only WARNS
#    about an unknown key or a bad value and still returns 0, so ANY output
#    fails the check; a self-test first proves that a planted typo is
#    reported on this systemd.
# 2. `systemd-analyze security --offline=true`: fails when the overall
#    exposure is above EDGEMON_MAX_EXPOSURE (default 1.8, what the unit measures
#    on systemd 252: it must not get worse) or, with the NVML drop-in, above
#    EDGEMON_MAX_EXPOSURE_NVML (default 2.0, as measured).
# 3. sysusers.d and tmpfiles.d files applied to a scratch root: group
#    edgemon exists, /run/edgemon is 0750 root:edgemon, /var/lib/edgemon is
#    0700 root:edgemon, and the unit's RuntimeDirectoryMode/StateDirectoryMode
#    agree with them. (Needs root for the chown; skipped otherwise.)
# 4. The man pages format without a single warning (man --warnings).
# 5. RestartPreventExitStatus= lists exactly the exit statuses edgemond(8)
#    says the unit does not restart after (a bad configuration, a bad store):
#    restarting cannot fix them, and systemd would loop.
# 6. The same for edgemon-control.service (the control helper): verify, its
#    exposure (EDGEMON_MAX_EXPOSURE_CONTROL, default 1.1 as measured on
#    systemd 252), its sysusers.d group and tmpfiles.d directory. Both units'
#    exposure tables are printed.
#
# Needs: systemd (systemd-analyze, systemd-sysusers, systemd-tmpfiles), man-db.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
pkg_dir=$(cd "$(dirname "$0")" && pwd)
max_exposure=${EDGEMON_MAX_EXPOSURE:-1.8}
max_exposure_nvml=${EDGEMON_MAX_EXPOSURE_NVML:-2.0}
max_exposure_control=${EDGEMON_MAX_EXPOSURE_CONTROL:-1.1}

failures=0
fail() {
  echo "check-unit: FAIL: $*" >&2
  failures=$((failures + 1))
}
pass() { echo "check-unit: ok: $*"; }

for tool in systemd-analyze systemd-sysusers systemd-tmpfiles man; do
  command -v "$tool" >/dev/null || { echo "check-unit: $tool not found" >&2; exit 2; }
done

exe=""
for candidate in "$build_dir/daemon/edgemond" "$build_dir/daemon/edgemon-probe"; do
  if [ -x "$candidate" ]; then
    exe=$candidate
    break
  fi
done
if [ -z "$exe" ]; then
  echo "check-unit: neither daemon/edgemond nor daemon/edgemon-probe is built in $build_dir" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- the unit under test -------------------------------------------------------
unit_src="$pkg_dir/systemd/edgemond.service"
mkdir -p "$tmp/plain" "$tmp/nvml/edgemond.service.d" "$tmp/typo"
sed "s#^ExecStart=/usr/bin/edgemond #ExecStart=$exe #" "$unit_src" >"$tmp/plain/edgemond.service"
if ! grep -q "^ExecStart=$exe " "$tmp/plain/edgemond.service"; then
  echo "check-unit: no 'ExecStart=/usr/bin/edgemond ' line in $unit_src" >&2
  exit 2
fi
cp "$tmp/plain/edgemond.service" "$tmp/nvml/edgemond.service"
cp "$pkg_dir/systemd/edgemond-nvml.conf" "$tmp/nvml/edgemond.service.d/nvml.conf"
# The self-test: a misspelt key that systemd must complain about.
sed 's/^WatchdogSec=/WatchdogSecs=/' "$tmp/plain/edgemond.service" >"$tmp/typo/edgemond.service"

# Documentation=man:edgemond(8) is checked by running man(1): serve ours.
mkdir -p "$tmp/man/man1" "$tmp/man/man8"
for page in "$pkg_dir"/man/*.[18]; do
  cp "$page" "$tmp/man/man${page##*.}/"
done
system_manpath=$(manpath 2>/dev/null || true)
export MANPATH="$tmp/man:$system_manpath"

# --- 1. verify ---------------------------------------------------------------------
verify() {  # DIR [UNIT]: prints systemd-analyze's output; returns its status
  (cd "$1" && systemd-analyze verify "./${2:-edgemond.service}" 2>&1)
}

if out=$(verify "$tmp/typo") && [ -z "$out" ]; then
  fail "self-test: systemd-analyze verify stayed silent about 'WatchdogSecs=': the check below would prove nothing"
else
  pass "self-test: a planted typo is reported ($(echo "$out" | head -n1))"
fi

for variant in plain nvml; do
  rc=0
  out=$(verify "$tmp/$variant") || rc=$?
  if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    fail "systemd-analyze verify ($variant, rc=$rc) printed:"
    printf '    %s\n' "$out" >&2
  else
    pass "systemd-analyze verify ($variant): silent, rc=0 (ExecStart=$exe)"
  fi
done

# --- 2. security exposure -------------------------------------------------------------
security() {  # DIR MAX [UNIT]
  local dir=$1 max=$2 unit=${3:-edgemond.service} out level
  out=$(cd "$dir" && systemd-analyze security --offline=true --no-pager "./$unit" 2>&1) || true
  echo "$out"
  level=$(echo "$out" | sed -n "s/.*Overall exposure level for $unit: \([0-9.]*\).*/\1/p")
  if [ -z "$level" ]; then
    fail "no 'Overall exposure level' line from systemd-analyze security ($dir)"
    return
  fi
  # Compare in tenths, as systemd-analyze's --threshold does.
  if [ "$(awk -v a="$level" -v b="$max" 'BEGIN { print (a * 10 <= b * 10 + 0.001) ? 1 : 0 }')" = 1 ]; then
    pass "exposure $level <= $max ($(basename "$dir"))"
  else
    fail "exposure $level > $max ($(basename "$dir")): a setting was weakened"
  fi
}
security "$tmp/plain" "$max_exposure"
# The drop-in's table differs in two lines only: show the verdict.
security "$tmp/nvml" "$max_exposure_nvml" >"$tmp/nvml-security.txt"
grep -E 'check-unit|Overall' "$tmp/nvml-security.txt" || true

# --- 3. sysusers.d / tmpfiles.d ------------------------------------------------------------
root="$tmp/root"
mkdir -p "$root/etc"
rc=0
out=$(systemd-sysusers --root="$root" "$pkg_dir/sysusers.d/edgemon.conf" 2>&1) || rc=$?
if [ "$rc" -ne 0 ] || echo "$out" | grep -qv '^Creating group'; then
  fail "systemd-sysusers (rc=$rc): $out"
fi
gid=$(awk -F: '$1 == "edgemon" { print $3 }' "$root/etc/group" 2>/dev/null || true)
if [ -z "$gid" ]; then
  fail "sysusers.d/edgemon.conf did not create group edgemon"
else
  pass "sysusers.d: group edgemon (gid $gid in the scratch root)"
fi

mode_of() {  # KEY: the value of KEY= in the unit
  sed -n "s/^$1=//p" "$unit_src" | tail -n1
}
if [ "$(id -u)" -ne 0 ]; then
  echo "check-unit: skip: applying tmpfiles.d needs root (chown)"
elif [ -n "$gid" ]; then
  rc=0
  out=$(systemd-tmpfiles --root="$root" --create "$pkg_dir/tmpfiles.d/edgemon.conf" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    fail "systemd-tmpfiles (rc=$rc): $out"
  fi
  for spec in "run/edgemon:$(mode_of RuntimeDirectoryMode)" \
              "var/lib/edgemon:$(mode_of StateDirectoryMode)"; do
    path=${spec%%:*}
    want_mode=${spec#*:}
    want_mode=${want_mode#0}
    got=$(stat -c '%a %u %g' "$root/$path" 2>/dev/null || echo missing)
    if [ "$got" = "$want_mode 0 $gid" ]; then
      pass "tmpfiles.d: /$path is $want_mode root:edgemon, as the unit declares"
    else
      fail "tmpfiles.d: /$path is '$got', the unit wants mode $want_mode owner 0 group $gid"
    fi
  done
fi

# --- 4. man pages --------------------------------------------------------------------------
for page in "$pkg_dir"/man/*.[18]; do
  out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || true
  if [ -n "$out" ]; then
    fail "man --warnings $(basename "$page"):"
    printf '    %s\n' "$out" >&2
  else
    pass "man --warnings $(basename "$page"): no warnings"
  fi
done

# --- 5. exit statuses that are not restarted ------------------------------------------------
documented=$(awk '/^\.SH EXIT STATUS/ { on = 1; next } /^\.SH/ { on = 0 }
                  on && /^\.B [0-9]+$/ { status = $2 }
                  on && /does not restart/ { print status }' "$pkg_dir/man/edgemond.8" |
             sort -n | tr '\n' ' ')
listed=$(mode_of RestartPreventExitStatus | tr ' ' '\n' | sort -n | tr '\n' ' ')
if [ -z "$documented" ]; then
  fail "edgemond(8) EXIT STATUS names no status the unit does not restart after"
elif [ "$documented" != "$listed" ]; then
  fail "RestartPreventExitStatus is '$listed', edgemond(8) documents '$documented'"
else
  pass "RestartPreventExitStatus=${listed% } as edgemond(8) documents"
fi

# --- 6. edgemon-control.service ---------------------------------------------------------------
control_src="$pkg_dir/systemd/edgemon-control.service"
control_exe="$build_dir/daemon/control/edgemon-control"
[ -x "$control_exe" ] || control_exe=$exe  # verify needs an executable; any will do
mkdir -p "$tmp/control" "$tmp/control-typo"
sed "s#^ExecStart=/usr/bin/edgemon-control #ExecStart=$control_exe #" "$control_src" \
  >"$tmp/control/edgemon-control.service"
if ! grep -q "^ExecStart=$control_exe " "$tmp/control/edgemon-control.service"; then
  fail "no 'ExecStart=/usr/bin/edgemon-control ' line in $control_src"
fi
sed 's/^RestartSec=/RestartSecs=/' "$tmp/control/edgemon-control.service" \
  >"$tmp/control-typo/edgemon-control.service"
if out=$(verify "$tmp/control-typo" edgemon-control.service) && [ -z "$out" ]; then
  fail "self-test (control): a planted typo went unreported"
fi
rc=0
out=$(verify "$tmp/control" edgemon-control.service) || rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
  fail "systemd-analyze verify (edgemon-control, rc=$rc) printed:"
  printf '    %s\n' "$out" >&2
else
  pass "systemd-analyze verify (edgemon-control): silent, rc=0 (ExecStart=$control_exe)"
fi
security "$tmp/control" "$max_exposure_control" edgemon-control.service
if [ "$(sed -n 's/^ExecStart=.*edgemond .*/x/p' "$control_src")" = x ]; then
  fail "edgemon-control.service runs edgemond"
fi
rc=0
out=$(systemd-sysusers --root="$root" "$pkg_dir/sysusers.d/edgemon-control.conf" 2>&1) || rc=$?
cgid=$(awk -F: '$1 == "edgemon-control" { print $3 }' "$root/etc/group" 2>/dev/null || true)
if [ "$rc" -ne 0 ] || [ -z "$cgid" ]; then
  fail "sysusers.d/edgemon-control.conf did not create group edgemon-control (rc=$rc): $out"
elif [ "$cgid" = "$gid" ]; then
  fail "groups edgemon and edgemon-control share gid $gid"
else
  pass "sysusers.d: group edgemon-control (gid $cgid), distinct from edgemon"
fi
if [ "$(id -u)" -eq 0 ] && [ -n "$cgid" ]; then
  rc=0
  out=$(systemd-tmpfiles --root="$root" --create "$pkg_dir/tmpfiles.d/edgemon-control.conf" 2>&1) || rc=$?
  want_mode=$(sed -n 's/^RuntimeDirectoryMode=0*//p' "$control_src")
  got=$(stat -c '%a %u %g' "$root/run/edgemon-control" 2>/dev/null || echo missing)
  if [ "$rc" -ne 0 ] || [ "$got" != "$want_mode 0 $cgid" ]; then
    fail "tmpfiles.d: /run/edgemon-control is '$got' (rc=$rc $out), the unit wants $want_mode root:edgemon-control"
  else
    pass "tmpfiles.d: /run/edgemon-control is $want_mode root:edgemon-control, as the unit declares"
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "check-unit: $failures check(s) failed" >&2
  exit 1
fi
echo "check-unit: all checks passed"
