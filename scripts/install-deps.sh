#!/usr/bin/env bash
# Installs what edgemon needs, from Debian 12 packages only, and starts or
# enables no service. Idempotent and non-interactive.
#   scripts/install-deps.sh --build    only what building and running the programs
#                                      needs (scripts/quickstart.sh; a packager's
#                                      machine): no test tool, no service
#   scripts/install-deps.sh            the whole list below: also every tool of the
#                                      tests, benchmarks and release checks
#                                      (scripts/test.sh, CI)
#   scripts/install-deps.sh PKG...     only these (scripts/build-release.sh)
#   scripts/install-deps.sh --list [--build]   prints the list, one a line
#
# Services: some test tools come in packages that start their service and
# enable it at boot (prometheus, prometheus-node-exporter, podman's socket and
# timers, binfmt-support); the tests only run their programs. So while
# apt-get installs, /usr/sbin/policy-rc.d refuses every start (invoke-rc.d and
# deb-systemd-invoke ask it; one that was there is put back afterwards), and
# then every boot link the install created is undone on the files themselves
# (so it works in a chroot where systemd does not run): links under
# /etc/systemd/{system,user} (*.wants, *.requires, aliases) are removed, as
# `systemctl disable` does, and SysV start links /etc/rc?.d/S* become K links,
# as `update-rc.d NAME disable` does, so a later upgrade of the package keeps
# them off. Links that were there before, and masks, are left as they are.
# `systemctl enable NAME` turns one on where wanted.
# EDGEMON_DEPS_ROOT (for tests/scripts) prefixes those /etc and /usr/sbin paths.
set -euo pipefail
args=("$@")

# Building edgemond, edgemon, edgetop, edgemon-sim, edgemon-probe,
# edgemon-control and the Python packages (with Ninja, as the scripts build,
# or make).
build_packages=(
  g++ make ninja-build cmake pkg-config
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
  libsystemd-dev libsqlite3-dev zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libncurses-dev libcpp-httplib-dev libsnappy-dev
)

packages=(
  "${build_packages[@]}"
  git sqlite3 systemd
  grpc-proto python3-grpcio python3-protobuf openssl
  man-db dpkg-dev file                  # packaging checks: man page lint, CPack's shlibdeps
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev            # libFuzzer targets
  prometheus-node-exporter curl python3 # side-by-side checks against node_exporter
  tmux                                  # edgetop's real-terminal test
  prometheus                            # the real Prometheus server test
  victoria-metrics                      # the push shipper's second engine (tests/e2e/push_test.py)
  python3-pytest python3-setuptools python3-venv  # the Python packages: tests, pip install
  python3-jsonschema                    # mlperf_energy.json checked against its schema (tests/client/cli)
  python3-torch                         # edgemon.torch: torch.profiler traces merged (CPU build)
  qemu-user-static binfmt-support debootstrap podman runc  # release bundle checks (tests/release)
  faketime                              # wall-clock jumps under a real edgemond (libfaketime)
  clang-format flake8                   # scripts/lint.sh: C++ format and pyflakes, CI's first stage
  chromium                              # report.html drawn headless, network blocked (tests/e2e/report_test.py)
  nodejs npm                            # the OpenTelemetry JS SDK exporter, from npm (tests/e2e/otlp_js_test.py)
)

list_only=0
if [ "${1:-}" = --list ]; then
  list_only=1
  shift
fi
if [ "${1:-}" = --build ]; then
  [ $# -eq 1 ] || { echo "install-deps: --build takes no package names" >&2; exit 2; }
  packages=("${build_packages[@]}")
elif [ $# -gt 0 ]; then
  packages=("$@")
fi
if [ "$list_only" = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

root=${EDGEMON_DEPS_ROOT:-}
policy=$root/usr/sbin/policy-rc.d
saved=$policy.edgemon-saved
marker="scripts/install-deps.sh of edgemon"
# A run that was killed left its policy in place, and the machine's own
# aside: put things back first.
if [ -n "$root" ] || [ "$(id -u)" -eq 0 ]; then
  if grep -qsF "$marker" "$policy"; then rm -f "$policy"; fi
  if [ -e "$saved" ] || [ -L "$saved" ]; then mv -f "$saved" "$policy"; fi
fi

# Names that an installed package provides count as installed: NodeSource's
# nodejs, for one, ships npm, provides it and conflicts with Debian's npm, so
# asking apt-get for npm there would fail.
provided=$(dpkg-query -W -f='${db:Status-Abbrev}|${Provides}\n' 2>/dev/null |
  awk -F'|' '$1 ~ /^ii/ { n = split($2, a, ","); for (i = 1; i <= n; i++) {
    sub(/^ +/, "", a[i]); sub(/ .*/, "", a[i]); if (a[i] != "") print a[i] } }') || true
missing=()
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then continue; fi
  if grep -qxF -- "$p" <<<"$provided"; then continue; fi
  missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
if [ -z "$root" ] && [ "$(id -u)" -ne 0 ]; then
  exec sudo -- "$0" "${args[@]}"
fi

# Every boot link (not masks) under the init systems' folders, one a line, sorted.
boot_links() {
  local dirs=() d
  for d in "$root"/etc/systemd/system "$root"/etc/systemd/user "$root"/etc/rc[0-6S].d; do
    if [ -d "$d" ]; then dirs+=("$d"); fi
  done
  [ "${#dirs[@]}" -gt 0 ] || return 0
  find "${dirs[@]}" -type l ! -lname /dev/null | LC_ALL=C sort
}

# Undoes the boot links that appeared since `before` and names what they enabled.
disable_new_links() {
  local link dir base disabled=()
  while IFS= read -r link; do
    [ -n "$link" ] || continue
    dir=$(dirname "$link")
    base=$(basename "$link")
    case "$dir" in
      */etc/rc?.d)
        case "$base" in
          S[0-9][0-9]?*)
            if [ -e "$dir/K${base#S}" ] || [ -L "$dir/K${base#S}" ]; then
              rm -f "$link"
            else
              mv "$link" "$dir/K${base#S}"
            fi
            disabled+=("${base:3}") ;;
        esac ;;
      *)
        rm -f "$link"
        disabled+=("$base") ;;
    esac
  done < <(LC_ALL=C comm -13 <(printf '%s\n' "$before") <(boot_links))
  [ "${#disabled[@]}" -gt 0 ] || return 0
  echo "install-deps: not enabled at boot, as before the install (their packages enable them;" \
       "edgemon only runs their programs): $(printf '%s\n' "${disabled[@]}" | LC_ALL=C sort -u | xargs)"
}

before=$(boot_links)
finish() {
  disable_new_links
  rm -f "$policy"
  if [ -e "$saved" ] || [ -L "$saved" ]; then mv -f "$saved" "$policy"; fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -e "$policy" ] || [ -L "$policy" ]; then mv -f "$policy" "$saved"; fi
mkdir -p "$(dirname "$policy")"
printf '#!/bin/sh\n# %s, while apt-get installs: start nothing.\nexit 101\n' "$marker" >"$policy"
chmod 0755 "$policy"

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
