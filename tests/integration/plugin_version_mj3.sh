#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# The load-time version check of the MuJoCo 3 engine plugin (plugin/adapter_mj3.c): loaded into a
# process whose MuJoCo reports a version outside the build's range, libmjdiff_plugin.so does not
# register mjdiff.smooth and says why, naming both versions; a model declaring the plugin then
# fails to load with MuJoCo's own error, not a crash. The other version comes from a preloaded
# library defining mj_version() (3.13.0, then 3.11.0): the dynamic linker binds the plugin's
# mj_version to it, while the rest of libmujoco is the real 3.12. With the real mj_version the
# same program registers the plugin and loads the model (the control).
#   1. real version: "registered mjdiff.smooth", the model loads;
#   2. fake 3013000 and 3011000: "mjdiff.smooth not registered: libmjdiff_plugin was built for
#      MuJoCo 3012000 to 3012999, this process runs MuJoCo <fake>", the model is refused.
# MuJoCo 3 hosts only (tests/CMakeLists.txt). Usage (ctest): bash plugin_version_mj3.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: plugin_version_mj3.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: plugin_version_mj3.sh BUILD_DIR SOURCE_DIR}
NAME=plugin_version_mj3

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
mjdir=$(sed -n 's/^mujoco_DIR:PATH=//p' "$BUILD_DIR/CMakeCache.txt")
[[ -n "$mjdir" ]] || fail "no mujoco_DIR in $BUILD_DIR/CMakeCache.txt"
PREFIX=$(cd "$mjdir/../../.." 2>/dev/null && pwd) || fail "no MuJoCo prefix above $mjdir"
[[ -f "$PREFIX/include/mujoco/mujoco.h" ]] || fail "no MuJoCo headers under $PREFIX"
PLUGIN=$BUILD_DIR/libmjdiff_plugin.so
[[ -f "$PLUGIN" ]] || fail "missing $PLUGIN (build the project first)"
MODEL=$SOURCE_DIR/models/mj3/box_plugin.xml
[[ -f "$MODEL" ]] || fail "missing $MODEL"

make_tmp mjdiff_plugin_version
trap 'rm -rf "$TMP"' EXIT

# the loader: warnings to stdout, then the registry and a model load
cat >"$TMP/load.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <mujoco/mujoco.h>
static void warn(const char* msg) { printf("warning: %s\n", msg); }
int main(int argc, char** argv) {
  mju_user_warning = warn;
  mj_loadPluginLibrary(argv[1]);
  int found = 0;
  for (int i = 0; i < mjp_pluginCount(); i++) {
    const mjpPlugin* p = mjp_getPluginAtSlot(i);
    if (p && p->name && !strcmp(p->name, "mjdiff.smooth")) found = 1;
  }
  printf(found ? "registered mjdiff.smooth\n" : "mjdiff.smooth absent\n");
  char err[1000] = "";
  mjModel* m = mj_loadXML(argv[2], NULL, err, sizeof(err));
  printf(m ? "model loaded\n" : "model refused: %s\n", err);
  if (m) mj_deleteModel(m);
  return 0;
}
EOF
run cc -o "$TMP/load" "$TMP/load.c" -I"$PREFIX/include" -L"$PREFIX/lib" -lmujoco \
  -Wl,-rpath,"$PREFIX/lib" -Wl,-rpath,"$BUILD_DIR"
[[ $RC -eq 0 ]] || fail "cannot compile the loader: $ERR"

run "$TMP/load" "$PLUGIN" "$MODEL"
[[ $RC -eq 0 ]] || fail "the loader crashed with the real MuJoCo (exit $RC): $ERR"
grep -q "^registered mjdiff.smooth$" <<<"$OUT" || fail "not registered with the real MuJoCo: $OUT"
grep -q "^model loaded$" <<<"$OUT" || fail "the model did not load with the real MuJoCo: $OUT"
note "real MuJoCo: registered, model loaded"

for v in 3013000 3011000; do
  printf 'int mj_version(void) { return %s; }\n' "$v" >"$TMP/fake$v.c"
  run cc -shared -fPIC -o "$TMP/fake$v.so" "$TMP/fake$v.c"
  [[ $RC -eq 0 ]] || fail "cannot compile the fake version library: $ERR"
  run env LD_PRELOAD="$TMP/fake$v.so" "$TMP/load" "$PLUGIN" "$MODEL"
  [[ $RC -eq 0 ]] || fail "MuJoCo $v: the loader crashed (exit $RC): $ERR"
  want="mjdiff.smooth not registered: libmjdiff_plugin was built for MuJoCo 3012000 to 3012999, this process runs MuJoCo $v"
  grep -qF "$want" <<<"$OUT" || fail "MuJoCo $v: no version message: $OUT"
  grep -q "^mjdiff.smooth absent$" <<<"$OUT" || fail "MuJoCo $v: the plugin registered: $OUT"
  grep -q "^model refused: .*mjdiff.smooth" <<<"$OUT" ||
    fail "MuJoCo $v: the model was not refused naming the plugin: $OUT"
  note "MuJoCo $v: $(grep -o 'not registered.*' <<<"$OUT" | head -1); $(grep '^model refused' <<<"$OUT")"
done
note "PASS"
