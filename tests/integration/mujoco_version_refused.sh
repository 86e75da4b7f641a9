#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# A MuJoCo older or newer than the versions mjdiff is tested with (2.2.x, 3.12.x) is refused at
# configure time with a message naming the version: fake MuJoCo packages (a CMake config only,
# claiming compatibility) of versions 3.11.0 and 3.13.0 given as MJDIFF_MUJOCO_DIR make the
# configure fail with "MuJoCo <version> (...): mjdiff is tested with 2.2.x (Debian) ...". (The
# load-time check, mj_version() against the build's range in libmjdiff_plugin's registration and
# in the plugin's init, is plugin/adapter_mj3.c's.)
# Usage (ctest): bash mujoco_version_refused.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: mujoco_version_refused.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: mujoco_version_refused.sh BUILD_DIR SOURCE_DIR}
NAME=mujoco_version_refused

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
make_tmp mjdiff_version
trap 'rm -rf "$TMP"' EXIT

for v in 3.11.0 3.13.0; do
  pkg=$TMP/mujoco-$v/lib/cmake/mujoco
  mkdir -p "$pkg"
  cat >"$pkg/mujocoConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$v")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
set(PACKAGE_VERSION_EXACT FALSE)
EOF
  cat >"$pkg/mujocoConfig.cmake" <<EOF
add_library(mujoco::mujoco INTERFACE IMPORTED)
EOF
  run cmake -S "$SOURCE_DIR" -B "$TMP/build-$v" -DMJDIFF_MUJOCO_DIR="$TMP/mujoco-$v"
  [[ $RC -ne 0 ]] || fail "configure against a fake MuJoCo $v succeeded"
  msg=$(tr -s ' \n' ' ' <<<"$OUT $ERR")   # CMake wraps its messages
  grep -q "MuJoCo $v (.*): mjdiff is tested with 2.2.x (Debian) and 3.12.x only" <<<"$msg" ||
    fail "MuJoCo $v refused without the version message: $(tail -n 5 <<<"$ERR")"
  note "refused: $(grep -o "MuJoCo $v (.*only" <<<"$msg")"
done
note "PASS"
exit 0
