#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Install test: install BUILD_DIR into a fresh prefix, check the installed files, build and run a
# small consumer project against it with find_package(mjdiff), and run the installed tools and
# preload library without the build tree.
# usage: bash install_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "${1:?usage: install_consumer.sh BUILD_DIR SOURCE_DIR}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mjdiff-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_consumer: FAIL: $*" >&2; exit 1; }

# the build tree's libraries must not be found through the environment
unset LD_LIBRARY_PATH LD_PRELOAD

# install
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
libdir=${libdir:-lib}
# the host: MuJoCo 3 builds the engine plugin instead of the preload library, and the consumer
# must find the same MuJoCo (its prefix from the build's mujoco_DIR)
mj3=$(sed -n 's/^MJDIFF_HOST_MUJOCO3:INTERNAL=//p' "$build/CMakeCache.txt")
mjdir=$(sed -n 's/^mujoco_DIR:PATH=//p' "$build/CMakeCache.txt")
addon="$libdir/libmjdiff_preload.so" mjprefix=""
if [[ $mj3 == ON ]]; then addon="$libdir/libmjdiff_plugin.so" mjprefix=";$mjdir/../../.."; fi

# installed files
for f in include/mjdiff/mjdiff.h include/mjdiff/smooth.h include/mjdiff/base.h \
         "$libdir/libmjdiff.so" "$addon" \
         "$libdir/cmake/mjdiff/mjdiffConfig.cmake" "$libdir/cmake/mjdiff/mjdiffConfigVersion.cmake" \
         "$libdir/cmake/mjdiff/mjdiffTargets.cmake"; do
  [[ -e "$prefix/$f" ]] || fail "missing $f"
done
[[ -x "$prefix/bin/mjdiff-demo" ]] || fail "missing bin/mjdiff-demo"

# installed binaries resolve libmjdiff from the prefix, not from the build tree
for f in "$prefix/bin/mjdiff-demo" "$prefix/$addon"; do
  deps=$(ldd "$f") || fail "ldd $f"
  if grep -q "not found" <<<"$deps"; then echo "$deps" >&2; fail "unresolved libraries in $f"; fi
  grep -q "libmjdiff\.so.* => $prefix/" <<<"$deps" || { echo "$deps" >&2; fail "$f does not load libmjdiff from $prefix"; }
done

# installed tool runs
"$prefix/bin/mjdiff-demo" --help >"$work/help.txt" 2>&1 || { cat "$work/help.txt"; fail "mjdiff-demo --help exit $?"; }

# installed preload library loads and runs its constructor (MuJoCo 2.2)
if [[ $mj3 != ON ]]; then
  env LD_PRELOAD="$prefix/$libdir/libmjdiff_preload.so" MJDIFF_LOG="$work/preload.log" true
  grep -q "mjdiff: preloaded" "$work/preload.log" 2>/dev/null || fail "preload library did not load"
fi

# a consumer project
mkdir -p "$work/app"
cat >"$work/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(mjdiff_consumer LANGUAGES C)
find_package(mjdiff 0.1 REQUIRED)
message(STATUS "mjdiff_DIR=${mjdiff_DIR}")
add_executable(app app.c)
target_link_libraries(app mjdiff::mjdiff)
CMAKE
cat >"$work/app/app.c" <<'C'
// a sphere resting on a plane, stepped with the smooth model
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>
#include <mjdiff/mjdiff.h>

static const char kXml[] =
    "<mujoco>"
    "  <worldbody>"
    "    <geom type='plane' size='1 1 0.1'/>"
    "    <body pos='0 0 0.1'><freejoint/><geom type='sphere' size='0.1' mass='1'/></body>"
    "  </worldbody>"
    "</mujoco>";

int main(void) {
  char err[1000] = "";
  mjVFS* vfs = malloc(sizeof(mjVFS));
  if (!vfs) return 1;
  mj_defaultVFS(vfs);
#if mjVERSION_HEADER >= 3000000
  if (mj_addBufferVFS(vfs, "sphere.xml", kXml, (int)strlen(kXml))) return 1;
#else
  if (mj_makeEmptyFileVFS(vfs, "sphere.xml", (int)strlen(kXml))) return 1;
  memcpy(vfs->filedata[mj_findFileVFS(vfs, "sphere.xml")], kXml, strlen(kXml));
#endif
  mjModel* m = mj_loadXML("sphere.xml", vfs, err, sizeof(err));
  mj_deleteVFS(vfs);
  free(vfs);
  if (!m) {
    fprintf(stderr, "load: %s\n", err);
    return 1;
  }
  mjData* d = mj_makeData(m);
  mjdiffModel* s = NULL;
  mjdiffStatus status = mjdiff_makeModel(m, NULL, &s, err, sizeof(err));
  if (status != MJDIFF_OK) {
    fprintf(stderr, "mjdiff_makeModel: %s: %s\n", mjdiff_statusName(status), err);
    return 1;
  }
  for (int i = 0; i < 100; i++) {
    status = mjdiff_step(m, d, s, err, sizeof(err));
    if (status != MJDIFF_OK) {
      fprintf(stderr, "mjdiff_step %d: %s: %s\n", i, mjdiff_statusName(status), err);
      return 1;
    }
  }
  printf("header=%s library=%s ncon=%d z=%.4f\n", MJDIFF_VERSION_STRING, mjdiff_versionString(),
         d->ncon, d->qpos[2]);
  mjdiff_freeModel(s);
  mj_deleteData(d);
  mj_deleteModel(m);
  return 0;
}
C

cmake -S "$work/app" -B "$work/app/build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix$mjprefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
      >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "consumer configure"; }
grep -q "mjdiff_DIR=$prefix/" "$work/configure.log" || { cat "$work/configure.log"; fail "consumer did not find mjdiff in $prefix"; }
cmake --build "$work/app/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "consumer build"; }
out=$("$work/app/build/app") || fail "consumer run (output: $out)"
echo "consumer: $out"

# header and library agree, the sphere touches the plane and rests on it
[[ "$out" =~ header=([^ ]+)\ library=([^ ]+)\ ncon=([0-9]+)\ z=([-0-9.]+) ]] || fail "unexpected output"
[[ "${BASH_REMATCH[1]}" == "${BASH_REMATCH[2]}" ]] || fail "header and library versions differ"
(( BASH_REMATCH[3] >= 1 )) || fail "no contact between sphere and plane"
awk -v z="${BASH_REMATCH[4]}" 'BEGIN { exit !(z > 0.05 && z < 0.15) }' || fail "sphere not resting on the plane (z=${BASH_REMATCH[4]})"
echo "install_consumer: OK"
