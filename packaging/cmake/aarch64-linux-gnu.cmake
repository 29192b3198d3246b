# Cross-compiling for 64-bit Arm (Jetson) on a Debian 12 amd64 machine with
# Debian multiarch: g++-aarch64-linux-gnu and the :arm64 -dev packages
# installed beside the native ones (scripts/build-release.sh --arch arm64).
# protoc and grpc_cpp_plugin are the native (amd64) programs.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch puts the arm64 libraries and CMake/pkg-config files under
# /usr/lib/aarch64-linux-gnu, headers stay shared under /usr/include.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_PREFIX_PATH /usr/lib/aarch64-linux-gnu/cmake)

set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# Programs run at build time are the native ones.
set(Protobuf_PROTOC_EXECUTABLE /usr/bin/protoc CACHE FILEPATH "native protoc")
set(CMAKE_CROSSCOMPILING_EMULATOR "" CACHE STRING "")

set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64 CACHE STRING "")
