#!/usr/bin/env bash
# Installs everything edgemon needs to build, test and benchmark, from
# Debian 12 packages only. Idempotent and non-interactive.
#   scripts/install-deps.sh            the whole list below
#   scripts/install-deps.sh --build    only what building the programs needs
#                                      (a packager's machine; the tests and
#                                      benchmarks are then left out)
#   scripts/install-deps.sh PKG...     only these (scripts/build-release.sh)
set -euo pipefail

# Building edgemond, edgemon, edgetop, edgemon-control and the Python packages.
build_packages=(
  build-essential cmake pkg-config
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
  libsystemd-dev libsqlite3-dev zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libncurses-dev libcpp-httplib-dev
)

packages=(
  "${build_packages[@]}"
  ninja-build git sqlite3 systemd
  grpc-proto python3-grpcio python3-protobuf openssl
  man-db dpkg-dev file                  # packaging checks: man page lint, CPack's shlibdeps
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev            # libFuzzer targets
  prometheus-node-exporter curl python3 # side-by-side checks against node_exporter
  tmux                                  # edgetop's real-terminal test
  prometheus                            # the real Prometheus server test
  python3-pytest python3-setuptools python3-venv  # the Python packages: tests, pip install
  qemu-user-static binfmt-support debootstrap podman runc  # release bundle checks (tests/release)
  faketime                              # wall-clock jumps under a real edgemond (libfaketime)
)

if [ "${1:-}" = --build ]; then
  packages=("${build_packages[@]}")
elif [ $# -gt 0 ]; then
  packages=("$@")
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# The node_exporter package starts a service where systemd runs; edgemon only
# uses its binary, so keep it from starting anything during the install.
$SUDO env RUNLEVEL=1 apt-get install -y -q --no-install-recommends "${missing[@]}"
