#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# The project's test command (CI runs exactly this):
#   scripts/test.sh [--fast]
# 1. installs the packages (scripts/setup.sh),
# 2. Release build with warnings as errors in build/ (Debian's MuJoCo 2.2.2), all tests,
# 3. the same against MuJoCo 3.12 in build-mj3/ (scripts/test-mj3.sh: MJDIFF_MUJOCO3_DIR, or MuJoCo
#    built once, offline, from ../shared/mujoco3 into ~/.cache/mjdiff/mujoco-3.12.1), all tests,
#    then the smooth model's trajectories on the two hosts compared (scripts/compare-hosts.sh),
# 4. AddressSanitizer + UBSan build in build-asan/ (-O1 -g, the library and the test programs; the
#    tools are off: their code the tests reach is compiled into the tests), all tests but the
#    integration ones (they run the tools and preload the library into MuJoCo's uninstrumented
#    viewer); 2.2.2 only,
# 5. the fuzz targets (scripts/fuzz.sh: clang, libFuzzer, build-fuzz/), each for FUZZ_SECONDS
#    (default 15, was 30 before step 3 joined: the 60 s saved pay for part of the 3.12 phase) with
#    a fixed seed. --fast skips 4 and 5, --no-mj3 skips 3.
# Budget: under 20 minutes with MuJoCo 3.12 cached. The last CI run before step 3 took 937 s
# (Release build 122 s + tests 84 s, ASan build 471 s + tests 78 s, fuzz 4 x 30 s + build ~60 s);
# step 3 adds about the Release figures again (its build and suite; on this shared machine under
# load 3.12's suite took 362 s, its full rebuild 552 s), the fuzz cut takes 60 s back. A cold run
# first builds MuJoCo 3.12 (../shared/mujoco3/README.md: 2 to 4 minutes on an idle 2-core machine).
# The run of 2026-12-02 took 1265 s, 552 s of it the ASan build (then RelWithDebInfo, -O2, with the
# tools); -O1 without the tools is the cut that brings it back under budget.
set -euo pipefail

usage() {
  cat <<USAGE
usage: scripts/test.sh [--fast] [--no-mj3]
  --fast      skip the sanitizer (ASan + UBSan) build and tests and the fuzz targets
  --no-mj3    skip the MuJoCo 3.12 build and suite (scripts/test-mj3.sh)
  -h, --help  show this help
USAGE
}

fast=0
mj3=1
for arg in "$@"; do
  case "$arg" in
    --fast) fast=1 ;;
    --no-mj3) mj3=0 ;;
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

if [[ $mj3 -eq 1 ]]; then
  phase "MuJoCo 3.12 (scripts/test-mj3.sh)"
  JOBS=$jobs "$root/scripts/test-mj3.sh"
  phase "trajectories on both hosts (scripts/compare-hosts.sh)"
  "$root/scripts/compare-hosts.sh" "$root/build" "$root/build-mj3"
fi

if [[ $fast -eq 0 ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  run_config build-asan RelWithDebInfo -E integration -- -DMJDIFF_SANITIZE=ON \
    -DMJDIFF_BUILD_TOOLS=OFF -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
  phase "fuzz (${FUZZ_SECONDS:-15} s per target)"
  "$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-15}"
fi

phase "all tests passed"
