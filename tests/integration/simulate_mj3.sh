#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# MuJoCo 3.12's own viewer (simulate) with the engine plugin, headless (Xvfb, Mesa llvmpipe), as a
# user installs it (README, "MuJoCo 3"): simulate copied into a folder whose mujoco_plugin/ holds
# libmjdiff_plugin.so and libmjdiff.so*; it opens models/mj3/box_plugin.xml, which declares
# mjdiff.smooth (and does not load without it).
#   1. its output says the library registered "mjdiff.smooth", and no load error;
#   2. a screenshot after the model is drawn is not blank (> 50 colours) and shows the orange box;
#   3. simulate is still running (the plugin's compute ran without a crash).
# MuJoCo 3 hosts only (tests/CMakeLists.txt). simulate and libmujoco come from the MuJoCo the
# build was configured with (mujoco_DIR in BUILD_DIR/CMakeCache.txt: PREFIX/lib/cmake/mujoco).
# Usage (ctest): bash simulate_mj3.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: simulate_mj3.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: simulate_mj3.sh BUILD_DIR SOURCE_DIR}
NAME=simulate_mj3
WAIT_S=${MJDIFF_TEST_WAIT_S:-60}   # longest wait for the viewer to load and draw the model

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs

for tool in xvfb-run import convert setsid; do
  command -v "$tool" >/dev/null ||
    fail "$tool not found: run scripts/setup.sh (needs packages xvfb and imagemagick)"
done
mjdir=$(sed -n 's/^mujoco_DIR:PATH=//p' "$BUILD_DIR/CMakeCache.txt")
[[ -n "$mjdir" ]] || fail "no mujoco_DIR in $BUILD_DIR/CMakeCache.txt"
PREFIX=$(cd "$mjdir/../../.." 2>/dev/null && pwd) || fail "no MuJoCo prefix above $mjdir"
SIMULATE=$PREFIX/bin/simulate
[[ -x "$SIMULATE" ]] || fail "no $SIMULATE (MuJoCo 3.12 built without its viewer?)"
PLUGIN=$BUILD_DIR/libmjdiff_plugin.so
[[ -f "$PLUGIN" ]] || fail "missing $PLUGIN (build the project first)"
MODEL=$SOURCE_DIR/models/mj3/box_plugin.xml
[[ -f "$MODEL" ]] || fail "missing $MODEL"

make_tmp mjdiff_simulate_mj3
RUNPID=
cleanup() {
  if [[ -n "$RUNPID" ]] && kill -0 "$RUNPID" 2>/dev/null; then
    kill -TERM -- "-$RUNPID" 2>/dev/null
    sleep 1
    kill -KILL -- "-$RUNPID" 2>/dev/null
  fi
  if [[ -n "${MJDIFF_TEST_KEEP:-}" ]]; then
    note "kept $TMP"
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT

# the user's layout: simulate beside mujoco_plugin/ with the plugin and the library it needs
mkdir -p "$TMP/bin/mujoco_plugin"
cp "$SIMULATE" "$TMP/bin/simulate" || fail "cannot copy $SIMULATE"
cp "$PLUGIN" "$TMP/bin/mujoco_plugin/" || fail "cannot copy $PLUGIN"
cp -P "$BUILD_DIR"/libmjdiff.so* "$TMP/bin/mujoco_plugin/" || fail "cannot copy libmjdiff.so*"

# the driver, under xvfb-run: start simulate, wait until the box (orange) is drawn, screenshot
cat >"$TMP/driver.sh" <<'EOF'
set -u
sim=$1 model=$2 shot=$3 out=$4 wait_s=$5
cd "$(dirname "$out")" || exit 1
stdbuf -oL -eL "$sim" "$model" </dev/null >"$out" 2>&1 &  # line-buffered: the log survives the kill
pid=$!
fraction() {  # fraction of screen pixels near the box's colour (0 if no screenshot)
  import -window root "$shot" 2>/dev/null || { echo 0; return; }
  convert "$shot" -fuzz 15% -fill black +opaque '#cc8033' -fill white -opaque '#cc8033' \
    -format '%[fx:mean]' info: 2>/dev/null || echo 0
}
ready=0
start=$SECONDS
while (( SECONDS - start < wait_s )); do
  kill -0 "$pid" 2>/dev/null || { echo "driver: simulate exited early" >&2; break; }
  awk -v f="$(fraction)" 'BEGIN { exit !(f > 0.0003) }' && { ready=1; break; }
  sleep 1
done
echo "driver: ready=$ready after $((SECONDS - start)) s" >&2
if (( ready )); then
  sleep 3   # a few more seconds of stepping with the plugin
  import -window root "$shot" || echo "driver: screenshot failed" >&2
fi
alive=0
kill -0 "$pid" 2>/dev/null && alive=1
kill -TERM "$pid" 2>/dev/null
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
echo "driver: simulate alive at the end: $alive" >&2
(( ready && alive ))
EOF

OUT=$TMP/simulate.out
SHOT=$TMP/shot.png
note "running MuJoCo 3.12's simulate on $MODEL with the plugin in its mujoco_plugin folder"
LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  setsid xvfb-run -a -s '-screen 0 1280x800x24' \
  bash "$TMP/driver.sh" "$TMP/bin/simulate" "$MODEL" "$SHOT" "$OUT" "$WAIT_S" \
  >"$TMP/xvfb.log" 2>&1 &
RUNPID=$!
wait "$RUNPID"
rc=$?
RUNPID=
dump() {
  echo "---- driver and X:" >&2
  cat "$TMP/xvfb.log" >&2
  echo "---- simulate output:" >&2
  tail -n 30 "$OUT" >&2
}
[[ $rc -eq 0 ]] || { dump; fail "simulate did not draw the model within ${WAIT_S} s, or died"; }

# 1. the plugin registered from the plugin folder, the model loaded
# (simulate names the file only; the only copy is the one in mujoco_plugin/)
grep -q "^Plugins registered by library 'libmjdiff_plugin.so':" "$OUT" ||
  { dump; fail "simulate did not report loading libmjdiff_plugin.so from mujoco_plugin/"; }
grep -A1 "^Plugins registered by library 'libmjdiff_plugin.so':" "$OUT" |
  grep -q '^ *mjdiff\.smooth$' ||
  { dump; fail "no 'mjdiff.smooth' among the plugins the library registered"; }
grep -qiE 'error|not registered' "$OUT" && { dump; fail "simulate's output has an error"; }
note "$(grep -A1 "libmjdiff_plugin.so" "$OUT" | tr -s ' \n' ' ')"

# 2. the screenshot
[[ -s "$SHOT" ]] || fail "no screenshot"
ncolors=$(convert "$SHOT" -format '%k' info:)
box=$(convert "$SHOT" -fuzz 15% -fill black +opaque '#cc8033' -fill white -opaque '#cc8033' \
  -format '%[fx:mean]' info:)
note "screenshot: $ncolors distinct colours, the box covers a fraction $box of the screen"
[[ "$ncolors" -gt 50 ]] || fail "screenshot looks blank ($ncolors distinct colours)"
awk -v f="$box" 'BEGIN { exit !(f > 0.0003) }' || fail "the box is not visible in the screenshot"
[[ -n "${MJDIFF_TEST_SHOT:-}" ]] && cp "$SHOT" "$MJDIFF_TEST_SHOT"

note "PASS"
exit 0
