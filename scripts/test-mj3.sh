#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# The test suite against MuJoCo 3.12 (issue 12):
#   scripts/test-mj3.sh [ctest arguments...]
# 1. MuJoCo 3.12: MJDIFF_MUJOCO3_DIR if set (an install or release tarball holding
#    lib/cmake/mujoco), else the cache MJDIFF_MUJOCO3_CACHE (default ~/.cache/mjdiff/mujoco-3.12.1),
#    built there offline from ../shared/mujoco3/ (MJDIFF_MUJOCO3_BUNDLE: the bundle's folder) when
#    absent: 2 to 4 minutes on 2 cores, once;
# 2. Release build with warnings as errors in build-mj3/ against it;
# 3. ctest there (arguments passed on, e.g. -R StepDeriv). The headless-viewer test of Debian's
#    2.2 simulate with the preload library is not built on 3.x (tests/CMakeLists.txt).
# Run by scripts/test.sh after the 2.2.2 Release suite (its step 3); alone for a 3.12-only check.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
start=$SECONDS
phase() { echo; echo "=== test-mj3.sh: $* ($((SECONDS - start)) s)"; }

prefix=${MJDIFF_MUJOCO3_DIR:-}
if [[ -z $prefix ]]; then
  prefix=${MJDIFF_MUJOCO3_CACHE:-$HOME/.cache/mjdiff/mujoco-3.12.1}
  if [[ ! -e $prefix/lib/libmujoco.so.3.12.1 ]]; then
    bundle=${MJDIFF_MUJOCO3_BUNDLE:-$root/../shared/mujoco3}
    [[ -d $bundle ]] || bundle=/work/shared/mujoco3
    tarball=$bundle/mujoco-3.12.1-offline.tar.xz
    if [[ ! -f $tarball || ! -f $bundle/build-mujoco3.sh ]]; then
      echo "test-mj3.sh: error: no MuJoCo 3.12 at $prefix and no offline bundle at $bundle" \
           "(set MJDIFF_MUJOCO3_DIR to an install, or MJDIFF_MUJOCO3_BUNDLE)" >&2
      exit 1
    fi
    phase "build MuJoCo 3.12 into $prefix"
    JOBS=$jobs bash "$bundle/build-mujoco3.sh" "$tarball" "$prefix"
  fi
fi
[[ -d $prefix/lib/cmake/mujoco ]] || { echo "test-mj3.sh: error: $prefix has no lib/cmake/mujoco" >&2; exit 1; }

phase "configure build-mj3 (MuJoCo from $prefix)"
cmake -S "$root" -B "$root/build-mj3" -DCMAKE_BUILD_TYPE=Release -DMJDIFF_WERROR=ON \
      -DMJDIFF_MUJOCO_DIR="$prefix"
phase "build build-mj3"
cmake --build "$root/build-mj3" -j "$jobs"
phase "test build-mj3"
cd "$root/build-mj3"
ctest --output-on-failure -j2 --no-tests=error "$@"
phase "done"
