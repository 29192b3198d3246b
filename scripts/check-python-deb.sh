#!/usr/bin/env bash
# Installs the python3-edgemon .deb on this machine (root; its dependencies
# python3-grpcio and python3-protobuf already installed), checks that its
# postinst byte-compiled every module and that purging it (its prerm
# removing the compiled modules) leaves nothing,
# and prints how long `import edgemon` takes a user who cannot write below
# /usr: with the byte-compiled modules, and without them (each import
# compiling them again, as before the postinst did it).
# Usage: scripts/check-python-deb.sh PATH/python3-edgemon_VER_all.deb
set -euo pipefail
deb=$1
pkg=$(dpkg-deb -f "$deb" Package)
dir=/usr/lib/python3/dist-packages/edgemon
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
  echo "check-python-deb: $pkg is installed already; not touching it" >&2
  exit 1
fi
trap 'dpkg -P "$pkg" >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >/dev/null
# The cumulative microseconds of `import edgemon`, median of five fresh
# interpreters run as nobody (bytecode writes allowed, and refused by the
# file modes).
import_us() {
  for _ in 1 2 3 4 5; do
    runuser -u nobody -- env -u PYTHONDONTWRITEBYTECODE -u PYTHONPATH /usr/bin/python3 \
      -X importtime -c 'import edgemon' 2>&1 | awk -F'|' '$3 ~ / edgemon$/ {print $2 + 0}'
  done | sort -n | sed -n 3p
}
missing=0
while IFS= read -r py; do
  name=$(basename "$py" .py)
  if ! ls "$(dirname "$py")/__pycache__/$name".cpython-*.pyc >/dev/null 2>&1; then
    echo "check-python-deb: $py was not byte-compiled" >&2
    missing=$((missing + 1))
  fi
done < <(find "$dir" -name '*.py')
[ "$missing" -eq 0 ] || exit 1
compiled=$(import_us)
py3clean -p "$pkg"
if find "$dir" -name '*.pyc' | grep -q .; then
  echo "check-python-deb: py3clean left byte-compiled modules" >&2
  exit 1
fi
source_only=$(import_us)
# Compiled again, so that the purge below finds them: its prerm must remove
# them, else dpkg leaves the directories behind.
py3compile -p "$pkg"
dpkg -P "$pkg" >/dev/null
trap - EXIT
if [ -e "$dir" ]; then
  echo "check-python-deb: $dir is left after purging $pkg" >&2
  exit 1
fi
echo "check-python-deb: $pkg byte-compiled at install, nothing left after purge;" \
     "import edgemon as nobody: $((compiled / 1000)) ms, $((source_only / 1000)) ms without the" \
     "byte-compiled modules"
