#!/usr/bin/env bash
# Builds the self-contained release bundle (and the Debian package) for one
# architecture, on a Debian 12 amd64 machine:
#
#   scripts/build-release.sh --arch arm64|amd64 [--no-deb] [--jobs N]
#
#   dist/edgemon-<version>-linux-aarch64.tar.gz   (or -x86_64.tar.gz)
#   dist/edgemon_<version>_<arch>.deb
#
# The bundle's programs are linked fully static from Debian's own static
# archives (glibc, libstdc++, gRPC, protobuf, abseil, re2, c-ares, OpenSSL,
# zlib, SQLite, ncursesw): they start on any Linux of that architecture with
# kernel 4.9 or newer and nothing installed. arm64 is cross-compiled with
# Debian multiarch (packaging/cmake/aarch64-linux-gnu.cmake). Everything it
# needs comes from Debian packages, installed here with apt-get (idempotent,
# non-interactive). Work directories: build-release/<arch>/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

arch="" deb=1 jobs=2
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=${2:-}; shift 2 ;;
    --arch=*) arch=${1#--arch=}; shift ;;
    --no-deb) deb=0; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-release: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$arch" in
  amd64) machine=x86_64 ;;
  arm64) machine=aarch64 ;;
  *) echo "build-release: --arch amd64 or --arch arm64" >&2; exit 2 ;;
esac
[ "$(dpkg --print-architecture)" = amd64 ] || { echo "build-release: runs on Debian 12 amd64" >&2; exit 2; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
version=$(sed -n 's/^project(edgemon VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
work=$repo/build-release/$arch
mkdir -p "$work" dist

# --- 1. Debian packages ------------------------------------------------------------
native=(build-essential cmake ninja-build pkg-config dpkg-dev file binutils
        libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
        libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
        libsqlite3-dev libncurses-dev ncurses-base ncurses-term libcpp-httplib-dev libsnappy-dev libc-bin)
libs=(libgrpc++-dev libgrpc-dev libprotobuf-dev libabsl-dev libre2-dev libc-ares-dev libssl-dev
      zlib1g-dev libsqlite3-dev libncurses-dev libfmt-dev libspdlog-dev libcpp-httplib-dev libtomlplusplus-dev
      libsnappy-dev)
want=("${native[@]}")
if [ "$arch" = arm64 ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  want+=(g++-aarch64-linux-gnu)
  for p in "${libs[@]}"; do want+=("$p:arm64"); done
fi
scripts/install-deps.sh "${want[@]}"

# --- 2. cpp-httplib's header-only form --------------------------------------------
# Debian builds cpp-httplib as a shared library only; the static link uses the
# upstream single header from Debian's source package of the installed version.
src=$repo/build-release/src
httplib_version=$(dpkg-query -W -f='${source:Version}\n' libcpp-httplib-dev | head -n 1)
httplib_dir=$src/cpp-httplib-$httplib_version
if [ ! -f "$httplib_dir/httplib.h" ]; then
  mkdir -p "$src/apt/lists/partial"
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main\n' \
    >"$src/apt/sources.list"
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main\n' \
    >>"$src/apt/sources.list"
  aptsrc=(-o "Dir::Etc::SourceList=$src/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$src/apt/lists" -o APT::Sandbox::User=root)
  apt-get "${aptsrc[@]}" update -q >/dev/null
  (cd "$src" && apt-get "${aptsrc[@]}" source --download-only "cpp-httplib=$httplib_version" >/dev/null)
  rm -rf "$httplib_dir.tmp"
  dpkg-source --no-check -x "$src"/cpp-httplib_"${httplib_version#*:}".dsc "$httplib_dir.tmp" >/dev/null
  mv "$httplib_dir.tmp" "$httplib_dir"
fi

# --- 3. the static build -----------------------------------------------------------
# shellcheck disable=SC2054  # commas inside -Wl,... flags
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/opt/edgemon
            "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG -ffunction-sections -fdata-sections"
            -DCMAKE_EXE_LINKER_FLAGS=-Wl,--gc-sections
            -DEDGEMON_BUILD_TESTS=OFF -DEDGEMON_BUILD_BENCH=OFF -DBUILD_TESTING=OFF)
if [ "$arch" = arm64 ]; then
  cmake_args+=("-DCMAKE_TOOLCHAIN_FILE=$repo/packaging/cmake/aarch64-linux-gnu.cmake")
  strip=aarch64-linux-gnu-strip
else
  strip=/usr/bin/strip
fi
command -v ccache >/dev/null && cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
programs=(edgemond edgemon-control edgemon edgetop edgemon-probe edgemon-sim)
cmake -S . -B "$work/static" "${cmake_args[@]}" -DEDGEMON_STATIC=ON \
  "-DEDGEMON_HTTPLIB_SOURCE_DIR=$httplib_dir" >"$work/static-configure.log" ||
  { cat "$work/static-configure.log" >&2; exit 1; }
# The Python packages (edgemon, jtop) ride along in lib/python3/dist-packages.
cmake --build "$work/static" -j"$jobs" --target "${programs[@]}" edgemon_man edgemon_python

# --- 4. the bundle -------------------------------------------------------------------
name=edgemon-$version-linux-$machine
stage=$work/stage
rm -rf "$stage"
DESTDIR=$stage cmake --install "$work/static" >/dev/null
bundle=$work/$name
rm -rf "$bundle"
mv "$stage/opt/edgemon" "$bundle"
mkdir -p "$bundle/etc"
mv "$stage/etc/edgemon/edgemond.toml" "$bundle/etc/edgemond.toml"
for p in "${programs[@]}"; do
  file "$bundle/bin/$p" | grep -q "statically linked" || { echo "build-release: $p is not static" >&2; exit 1; }
  $strip --strip-all "$bundle/bin/$p"
done
# The terminal descriptions edgetop may meet, for hosts without a terminfo
# database (ncursesw looks in the host's first, then here).
for t in xterm xterm-256color xterm-color screen screen-256color tmux tmux-256color linux vt100 vt220 \
         rxvt rxvt-unicode rxvt-unicode-256color putty putty-256color ansi dumb st-256color foot alacritty; do
  for d in /usr/share/terminfo /lib/terminfo; do
    f=$d/${t:0:1}/$t
    if [ -e "$f" ]; then
      mkdir -p "$bundle/share/terminfo/${t:0:1}"
      cp -L "$f" "$bundle/share/terminfo/${t:0:1}/$t"
      break
    fi
  done
done
# C.UTF-8 for hosts whose locales this C library cannot load (edgetop only).
mkdir -p "$bundle/share/locale"
cp -a /usr/lib/locale/C.utf8 "$bundle/share/locale/C.UTF-8"
install -m 0755 packaging/release/install.sh packaging/release/uninstall.sh "$bundle/"
install -m 0644 packaging/release/install-common.sh "$bundle/"
printf '%s\n' "$version" >"$bundle/VERSION"
tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "dist/$name.tar.gz" "$name"
echo "build-release: dist/$name.tar.gz ($(du -k "dist/$name.tar.gz" | cut -f1) KiB)"

# --- 5. the Debian package (dynamic, as the normal build) ----------------------------
if [ "$deb" -eq 1 ]; then
  # Release (-O2, no -g): the package is stripped anyway, and the build is shorter.
  cmake -S . -B "$work/deb" "${cmake_args[@]}" -DCMAKE_INSTALL_PREFIX=/usr \
    >"$work/deb-configure.log" ||
    { cat "$work/deb-configure.log" >&2; exit 1; }
  cmake --build "$work/deb" -j"$jobs" --target "${programs[@]}" edgemon_man edgemon_python
  # dpkg-shlibdeps reads the :arm64 libraries' symbols files for a cross build.
  (cd "$work/deb" && DEB_HOST_ARCH=$arch cpack -G DEB >cpack.log) ||
    { cat "$work/deb/cpack.log" >&2; exit 1; }
  cp "$work/deb/edgemon_${version}_${arch}.deb" dist/
  echo "build-release: dist/edgemon_${version}_${arch}.deb"
fi
