#!/usr/bin/env bash
# Builds packaging/container/Containerfile from a release bundle with podman
# and runs it against a simulated board mounted as the host root:
#
#   tests/release/container_check.sh dist/edgemon-VERSION-linux-x86_64.tar.gz
#
# Checks that the image (FROM scratch) serves on the bind-mounted socket
# directory, that a client outside the container reads the simulated board,
# and that the socket comes back in the same directory after a restart.
# On these CI machines: vfs storage, chroot build isolation, runc (crun 1.8
# refuses this machine's hybrid cgroup layout), no network, and explicit
# ulimits (podman's defaults exceed what the machine lets it raise).
set -euo pipefail
tarball=$(readlink -f "$1")
cd "$(dirname "$0")/../.."
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  echo "container_check: podman and runc are needed (scripts/install-deps.sh)" >&2
  exit 1
fi
pm=(podman --storage-driver vfs --runtime runc)
tmp=$(mktemp -d /tmp/edgemon-container-XXXXXX)
name=edgemon-ci-$$
sim=""
cleanup() {
  "${pm[@]}" rm -f "$name" >/dev/null 2>&1 || true
  [ -z "${image:-}" ] || "${pm[@]}" rmi -f "$image" >/dev/null 2>&1 || true
  [ -z "$sim" ] || kill "$sim" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
tar -xzf "$tarball" -C "$tmp"
bundle=$(ls -d "$tmp"/edgemon-*)
version=$(cat "$bundle/VERSION")
image=localhost/edgemon:$version
"${pm[@]}" build --isolation chroot -q -f packaging/container/Containerfile -t "$image" "$bundle" >/dev/null
echo "container_check: built $image ($("${pm[@]}" image inspect --format '{{.Size}}' "$image") bytes, FROM scratch)"

"$bundle/bin/edgemon-sim" --board agx-orin --out "$tmp/host" --fixtures "$bundle/share/edgemon/fixtures" -q &
sim=$!
for _ in $(seq 100); do [ -e "$tmp/host/.edgemon-sim.json" ] && break; sleep 0.1; done
mkdir -p "$tmp/run" "$tmp/state"
"${pm[@]}" run -d --name "$name" --pid=host --network none \
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  -v "$tmp/host:/host:ro" -v "$tmp/run:/run/edgemon" -v "$tmp/state:/var/lib/edgemon" "$image" >/dev/null

now_model() {
  for _ in $(seq 60); do
    if out=$("$bundle/bin/edgemon" --connect "unix:$tmp/run/edgemond.sock" now --json 2>/dev/null); then
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["board"]["model"])' <<<"$out"
      return 0
    fi
    sleep 0.5
  done
  echo "container_check: no answer on $tmp/run/edgemond.sock" >&2
  "${pm[@]}" logs "$name" >&2 || true
  return 1
}
model=$(now_model)
[[ "$model" == *"AGX Orin"* ]] || { echo "container_check: model '$model'" >&2; exit 1; }
echo "container_check: edgemond in the container serves $model on the bind-mounted /run/edgemon"
"${pm[@]}" restart "$name" >/dev/null
model=$(now_model)
[[ "$model" == *"AGX Orin"* ]] || { echo "container_check: after restart, model '$model'" >&2; exit 1; }
[ -e "$tmp/state/edgemon.db" ] || { echo "container_check: no store in the state volume" >&2; exit 1; }
echo "container_check: after a restart the client reaches it again through the same directory"
