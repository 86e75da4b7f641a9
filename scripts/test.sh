#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# The project's test command (CI runs exactly this):
#   scripts/test.sh [--fast]
# 1. installs the packages (scripts/setup.sh),
# 2. Release build with warnings as errors in build/, all tests,
# 3. AddressSanitizer + UBSan build in build-asan/ (RelWithDebInfo), all tests but the integration
#    ones (they preload the library into MuJoCo's uninstrumented viewer),
# 4. the fuzz targets (scripts/fuzz.sh: clang, libFuzzer, build-fuzz/), each for FUZZ_SECONDS
#    (default 30) with a fixed seed. --fast skips 3 and 4.
set -euo pipefail

usage() {
  cat <<USAGE
usage: scripts/test.sh [--fast]
  --fast      skip the sanitizer (ASan + UBSan) build and tests and the fuzz targets
  -h, --help  show this help
USAGE
}

fast=0
for arg in "$@"; do
  case "$arg" in
    --fast) fast=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "test.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)
start=$SECONDS

phase() { echo; echo "=== test.sh: $* ($((SECONDS - start)) s)"; }

phase "setup"
"$root/scripts/setup.sh"

# build and test one configuration: DIR BUILD_TYPE CTEST_ARGS... -- CMAKE_ARGS...
run_config() {
  local dir=$1 type=$2; shift 2
  local ctest_args=()
  while [[ $# -gt 0 && $1 != -- ]]; do ctest_args+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  phase "configure $dir ($type)"
  cmake -S "$root" -B "$root/$dir" -DCMAKE_BUILD_TYPE="$type" -DMJDIFF_WERROR=ON "$@"
  phase "build $dir"
  cmake --build "$root/$dir" -j "$jobs"
  phase "test $dir"
  (cd "$root/$dir" && ctest --output-on-failure -j2 "${ctest_args[@]}")
}

run_config build Release --no-tests=error --

if [[ $fast -eq 0 ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  run_config build-asan RelWithDebInfo -E integration -- -DMJDIFF_SANITIZE=ON
  phase "fuzz (${FUZZ_SECONDS:-30} s per target)"
  "$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-30}"
fi

phase "all tests passed"
