#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Build the libFuzzer targets of fuzz/ with clang (AddressSanitizer + UBSan, in build-fuzz/) and
# run each for SECONDS (default 30) from its seed corpus fuzz/corpus/<target>/ with a fixed seed
# (-seed=1), so that a failure reproduces:
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# New inputs go to build-fuzz/corpus/<target>/ (the repository's corpus is only read); a crash is
# written to build-fuzz/crash-<target>-*, and the script exits 1 naming it. Reproduce one with
#   build-fuzz/fuzz/<target> build-fuzz/crash-<target>-...
set -euo pipefail

usage() {
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: fuzz_csv fuzz_task fuzz_mjcf fuzz_cli)"
}

seconds=30
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
elif [[ $# -gt 0 && ( $1 == -h || $1 == --help ) ]]; then
  usage
  exit 0
fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_csv fuzz_task fuzz_mjcf fuzz_cli)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-fuzz
command -v clang >/dev/null || { echo "fuzz.sh: clang not found (scripts/setup.sh installs it)" >&2; exit 1; }

flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DMJDIFF_FUZZ=ON -DMJDIFF_BUILD_TESTS=OFF -DMJDIFF_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  mkdir -p "$corpus"
  echo "fuzz.sh: $t for $seconds s (seed 1)"
  if ! "$build/fuzz/$t" -seed=1 -max_total_time="$seconds" -max_len=4096 -timeout=10 \
       -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
       -artifact_prefix="$build/crash-$t-" "$corpus" "$root/fuzz/corpus/$t" \
       >"$build/$t.log" 2>&1; then
    failed+=("$t")
    echo "fuzz.sh: $t FAILED (log $build/$t.log):" >&2
    grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$build/$t.log" | head -20 >&2 || true
  else
    grep -E "stat::number_of_executed_runs|cov:" "$build/$t.log" | tail -2 || true
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets, $seconds s each: no crash"
