#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# MuJoCo's own viewer with the preload library, headless (Xvfb, Mesa llvmpipe):
#   1. a sphere on a plane with mjdiff_* numerics: the log says the model was attached, then
#      "smooth steps=N contacts=M" with N > 0 and M > 0; a screenshot shows the (yellow) sphere;
#   2. the same scene without mjdiff_* numerics: the model is rendered (cyan sphere) and runs for a
#      while, and the log has no "attached" line and no smooth steps.
# Usage (ctest): bash simulate_headless.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: simulate_headless.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: simulate_headless.sh BUILD_DIR SOURCE_DIR}
NAME=simulate_headless
WAIT_S=${MJDIFF_TEST_WAIT_S:-40}   # longest wait for the viewer to load and step a model

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs

# requirements: nothing is skipped
for tool in xvfb-run import convert; do
  command -v "$tool" >/dev/null ||
    fail "$tool not found: run scripts/setup.sh (needs packages xvfb and imagemagick)"
done
SIMULATE_SH="$SOURCE_DIR/scripts/simulate.sh"
PRELOAD="$BUILD_DIR/libmjdiff_preload.so"
[[ -f "$SIMULATE_SH" ]] || fail "missing $SIMULATE_SH"
[[ -f "$PRELOAD" ]] || fail "missing $PRELOAD (build the project first)"
command -v mujoco-simulate >/dev/null || [[ -x /usr/bin/mujoco-simulate ]] ||
  fail "mujoco-simulate not found: run scripts/setup.sh (needs package libmujoco-samples)"

make_tmp mjdiff_simulate
cd "$TMP" || fail "cannot enter $TMP"   # MuJoCo writes MUJOCO_LOG.TXT to the working directory
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

# the scene: a sphere dropped on a plane (color and custom block filled in below)
scene() {  # scene RGBA CUSTOM
  cat <<EOF
<mujoco model="sphere_on_plane">
  <option timestep="0.002"/>
  $2
  <visual><headlight ambient="0.6 0.6 0.6" diffuse="0.4 0.4 0.4"/></visual>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
    <geom name="floor" type="plane" size="2 2 0.1" rgba="0.5 0.5 0.5 1"/>
    <body name="ball" pos="0 0 0.2">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" rgba="$1"/>
    </body>
  </worldbody>
</mujoco>
EOF
}
scene "1 1 0 1" '<custom><numeric name="mjdiff_contact_stiffness" data="1e4"/></custom>' \
  >"$TMP/smooth.xml"
scene "0 1 1 1" "" >"$TMP/native.xml"

# the driver, run under xvfb-run: start the viewer, wait for the condition of MODE, take a
# screenshot, stop the viewer
#   MODE smooth: the log shows smooth steps and contacts;  MODE native: the sphere (COLOR) is drawn,
#   then HOLD more seconds
cat >"$TMP/driver.sh" <<'EOF'
set -u
sim=$1 model=$2 log=$3 shot=$4 mode=$5 color=$6 wait_s=$7 hold_s=$8 out=$9
"$sim" "$model" </dev/null >"$out" 2>&1 &
pid=$!
fraction() {  # fraction of screen pixels near COLOR (0 if no screenshot)
  import -window root "$shot" 2>/dev/null || { echo 0; return; }
  convert "$shot" -fuzz 25% -fill black +opaque "$color" -fill white -opaque "$color" \
    -format '%[fx:mean]' info: 2>/dev/null || echo 0
}
ready=0
start=$SECONDS
while (( SECONDS - start < wait_s )); do
  kill -0 "$pid" 2>/dev/null || { echo "driver: viewer exited early" >&2; break; }
  if [[ $mode == smooth ]]; then
    grep -qE 'smooth steps=[1-9][0-9]* contacts=[1-9]' "$log" 2>/dev/null && { ready=1; break; }
  else
    awk -v f="$(fraction)" 'BEGIN { exit !(f > 0.001) }' && { ready=1; break; }
  fi
  sleep 0.5
done
echo "driver: ready=$ready after $((SECONDS - start)) s" >&2
if (( ready )); then
  sleep "$hold_s"
  import -window root "$shot" || echo "driver: screenshot failed" >&2
fi
alive=0
kill -0 "$pid" 2>/dev/null && alive=1
kill -TERM "$pid" 2>/dev/null
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
echo "driver: viewer alive at the end: $alive" >&2
(( ready && alive ))
EOF

# run the driver in its own process group under a fresh X server
run() {  # run MODEL LOG SHOT MODE COLOR HOLD_S
  local tag
  tag=$(basename "$1" .xml)
  rm -f "$2"
  MJDIFF_PRELOAD="$PRELOAD" MJDIFF_LOG="$2" setsid xvfb-run -a -s '-screen 0 1280x800x24' \
    bash "$TMP/driver.sh" "$SIMULATE_SH" "$1" "$2" "$3" "$4" "$5" "$WAIT_S" "$6" \
    "$TMP/$tag.out" >"$TMP/$tag.xvfb" 2>&1 &
  RUNPID=$!
  wait "$RUNPID"
  local rc=$?
  RUNPID=
  return $rc
}

dump() {  # dump TAG LOG: show what happened, for a failure message
  echo "---- driver and X ($1):" >&2
  cat "$TMP/$1.xvfb" >&2 2>/dev/null
  echo "---- viewer output ($1):" >&2
  tail -n 20 "$TMP/$1.out" >&2 2>/dev/null
  echo "---- MJDIFF_LOG ($1):" >&2
  cat "$2" >&2 2>/dev/null
}

# 1. smooth model
LOG1="$TMP/smooth.log"
SHOT1="$TMP/smooth.png"
t0=$SECONDS
note "running the viewer on a sphere-on-plane model with mjdiff numerics"
run "$TMP/smooth.xml" "$LOG1" "$SHOT1" smooth '#ffff00' 2 || {
  dump smooth "$LOG1"
  fail "the viewer did not report smooth steps with contacts within ${WAIT_S} s, or died"
}
grep -q '^mjdiff: preloaded' "$LOG1" || { dump smooth "$LOG1"; fail "preload library not loaded"; }
grep -q '^mjdiff: error' "$LOG1" &&
  { dump smooth "$LOG1"; fail "the preload library logged an error"; }
grep -q '^mjdiff: attached model (nv=6, ngeom=2)' "$LOG1" ||
  { dump smooth "$LOG1"; fail "no 'attached model (nv=6, ngeom=2)' line"; }
last=$(grep -E '^mjdiff: smooth steps=[0-9]+ contacts=[0-9]+$' "$LOG1" | tail -n 1)
steps=$(sed -E 's/.*steps=([0-9]+).*/\1/' <<<"$last")
contacts=$(sed -E 's/.*contacts=([0-9]+).*/\1/' <<<"$last")
[[ -n "$steps" && "$steps" -gt 0 ]] ||
  { dump smooth "$LOG1"; fail "smooth steps not > 0: '$last'"; }
[[ -n "$contacts" && "$contacts" -gt 0 ]] ||
  { dump smooth "$LOG1"; fail "smooth contacts not > 0: '$last'"; }
note "attached; last totals: steps=$steps contacts=$contacts"

# the screenshot is not blank and shows the sphere
[[ -s "$SHOT1" ]] || fail "no screenshot"
ncolors=$(convert "$SHOT1" -format '%k' info:)
yellow=$(convert "$SHOT1" -fuzz 25% -fill black +opaque '#ffff00' -fill white -opaque '#ffff00' \
  -format '%[fx:mean]' info:)
note "screenshot: $ncolors distinct colors, sphere covers a fraction $yellow of the screen"
[[ "$ncolors" -gt 50 ]] || fail "screenshot looks blank ($ncolors distinct colors)"
awk -v f="$yellow" 'BEGIN { exit !(f > 0.001) }' ||
  fail "the sphere is not visible in the screenshot"

# 2. the same scene without mjdiff numerics: run at least as long as the first run took to load
# and step, so that an attach would have been logged
hold=$(( SECONDS - t0 ))
(( hold < 3 )) && hold=3
LOG2="$TMP/native.log"
note "running the viewer on the same model without mjdiff numerics (${hold} s after it is drawn)"
run "$TMP/native.xml" "$LOG2" "$TMP/native.png" native '#00ffff' "$hold" || {
  dump native "$LOG2"
  fail "the viewer did not draw the model without mjdiff numerics within ${WAIT_S} s, or died"
}
grep -q '^mjdiff: preloaded' "$LOG2" || { dump native "$LOG2"; fail "preload library not loaded"; }
grep -q 'attached' "$LOG2" &&
  { dump native "$LOG2"; fail "a model without mjdiff numerics was attached"; }
grep -q '^mjdiff: error' "$LOG2" &&
  { dump native "$LOG2"; fail "the preload library logged an error"; }
grep -E '^mjdiff: smooth steps=' "$LOG2" | grep -vq 'steps=0 contacts=0$' &&
  { dump native "$LOG2"; fail "smooth steps were counted for a model without mjdiff numerics"; }

note "PASS"
exit 0
