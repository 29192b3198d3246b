#!/usr/bin/env bash
# Longer fuzzing than CI's smoke run: builds the libFuzzer targets with clang
# (ASan+UBSan) in build-fuzz and runs each for SECONDS (default 600), keeping
# its corpus in build-fuzz/tests/corpus/TARGET between runs.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    targets: parse_fuzz collect_fuzz config_fuzz api_fuzz metrics_fuzz timespec_fuzz
# A crash leaves crash-* / leak-* files in the current directory and stops the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse_fuzz collect_fuzz config_fuzz api_fuzz metrics_fuzz timespec_fuzz)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DEDGEMON_FUZZ=ON -DEDGEMON_BUILD_TESTS=OFF -DEDGEMON_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
for t in "${targets[@]}"; do
  corpus=build-fuzz/tests/corpus/$t
  mkdir -p "$corpus"
  echo "fuzz: $t for $seconds s"
  build-fuzz/tests/$t -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 "$corpus"
done
