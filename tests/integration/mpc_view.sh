#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Smoke test of mjdiff-mpc:
#   1. --help exits 0 and lists its options; an unknown option and a bad number exit 2;
#   2. a short closed loop (--seconds 0.5 --planner ilqr models/cartpole.xml --json) exits 0 and
#      prints valid JSON with the summary metrics and the per-step series;
#   3. the viewer under Xvfb (Mesa llvmpipe): --view --screenshot out.png --screenshot-after 50
#      --planner sampling models/cartpole.xml writes a PNG that is not blank (> 50 distinct
#      colours) and has the size of the window;
#   4. the viewer's input under Xvfb, with real X events from xdotool (XTEST) and the viewer's
#      event log (MJDIFF_VIEW_LOG, one line per handled event with the state it left): F1 toggles
#      the help; space pauses and the simulated time then stands still; right arrow while paused
#      takes exactly one control step; backspace resets the time to 0; a left drag of 100 pixels
#      turns the camera's azimuth by 100 / 800 * 180 degrees; scrolling zooms; Esc closes the
#      window and the tool exits 0. Skipped only when Xvfb or xdotool is missing.
# Usage (ctest): bash mpc_view.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: mpc_view.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: mpc_view.sh BUILD_DIR SOURCE_DIR}
NAME=mpc_view
VIEW_TIMEOUT_S=${MJDIFF_TEST_WAIT_S:-120}   # longest run of the viewer

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
MPC="$BUILD_DIR/tools/mjdiff-mpc"
MODEL="$SOURCE_DIR/models/cartpole.xml"
[[ -x "$MPC" ]] || fail "missing $MPC (build the project first)"
[[ -f "$MODEL" ]] || fail "missing $MODEL"
[[ -f "${MODEL%.xml}.task" ]] || fail "missing ${MODEL%.xml}.task (the cartpole task)"
command -v python3 >/dev/null || fail "python3 not found (needed to validate JSON)"
for tool in xvfb-run identify timeout; do
  command -v "$tool" >/dev/null ||
    fail "$tool not found: run scripts/setup.sh (needs packages xvfb, imagemagick, coreutils)"
done

make_tmp mjdiff_mpc_view
XVFB_PID=
VIEW_PID=
cleanup() {
  [[ -n "$VIEW_PID" ]] && kill "$VIEW_PID" 2>/dev/null
  [[ -n "$XVFB_PID" ]] && kill "$XVFB_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP" || fail "cannot enter $TMP"   # MuJoCo may write MUJOCO_LOG.TXT to the working directory

# 1. usage
run "$MPC" --help
[[ $RC -eq 0 ]] || fail "--help: exit $RC, expected 0"
for opt in --task --planner --plant --budget --seconds --threads --seed --json --out --view \
  --screenshot --screenshot-after; do
  grep -q -- "$opt" <<<"$OUT" || fail "--help does not list $opt"
done
run "$MPC" bench --help
[[ $RC -eq 0 ]] || fail "bench --help: exit $RC, expected 0"
grep -q -- "--csv" <<<"$OUT" || fail "bench --help does not list --csv"
run "$MPC" --bogus "$MODEL"
[[ $RC -eq 2 ]] || fail "--bogus: exit $RC, expected 2; stderr: $ERR"
grep -q "unknown option" <<<"$ERR" || fail "--bogus: no 'unknown option' message: $ERR"
run "$MPC" --budget fast "$MODEL"
[[ $RC -eq 2 ]] || fail "--budget fast: exit $RC, expected 2"
run "$MPC" --planner simplex "$MODEL"
[[ $RC -eq 2 ]] || fail "--planner simplex: exit $RC, expected 2"
run "$MPC" bench --seeds 0
[[ $RC -eq 2 ]] || fail "bench --seeds 0: exit $RC, expected 2"
run "$MPC"
[[ $RC -eq 2 ]] || fail "no model: exit $RC, expected 2"
note "usage: ok"

# 2. a short closed loop, JSON
run timeout 120 "$MPC" --seconds 0.5 --planner ilqr "$MODEL" --json
[[ $RC -eq 0 ]] || fail "--seconds 0.5 --planner ilqr --json: exit $RC, expected 0; stderr: $ERR"
python3 -m json.tool "$TMP/out" >/dev/null || fail "--json: invalid JSON: $OUT"
python3 - "$TMP/out" <<'EOF' || fail "--json: unexpected content: $OUT"
import json, math, sys
j = json.load(open(sys.argv[1]))
assert j["tool"] == "mjdiff-mpc" and j["status"] == "ok", j["status"]
for key in ("version", "model", "args", "metrics", "series"):
    assert key in j, key
assert j["args"]["planner"] == "ilqr" and j["args"]["plant"] == "smooth"
m = j["metrics"]
for key in ("final_cost", "mean_cost", "plan_ms_mean", "realtime_factor", "sim_time_s"):
    assert isinstance(m[key], (int, float)) and math.isfinite(m[key]), key
assert isinstance(m["success"], bool)
assert abs(m["sim_time_s"] - 0.5) < 0.02, m["sim_time_s"]
assert m["realtime_factor"] > 0 and m["plan_ms_mean"] > 0
n = m["control_steps"]
assert n >= 45, n
for key in ("t_s", "cost", "plan_cost", "plan_ms", "success"):
    assert len(j["series"][key]) == n, key
EOF
note "closed loop --json: ok"

# 3. the viewer, headless: a screenshot after 50 control steps
SHOT="$TMP/out.png"
run timeout -k 10 "$VIEW_TIMEOUT_S" xvfb-run -a -s '-screen 0 1280x800x24' \
  "$MPC" --view --screenshot "$SHOT" --screenshot-after 50 --planner sampling "$MODEL"
[[ $RC -eq 0 ]] || fail "--view --screenshot: exit $RC, expected 0; stdout: $OUT; stderr: $ERR"
[[ -s "$SHOT" ]] || fail "no screenshot written; stderr: $ERR"
identify "$SHOT" >/dev/null 2>&1 || fail "the screenshot is not a valid image"
size=$(identify -format '%wx%h' "$SHOT")
ncolors=$(identify -format '%k' "$SHOT")
note "screenshot: $size, $ncolors distinct colours"
[[ "$size" == "1200x800" ]] || fail "screenshot size $size, expected the window's 1200x800"
[[ "$ncolors" -gt 50 ]] || fail "the screenshot looks blank ($ncolors distinct colours)"
grep -q "after 50 control steps" <<<"$ERR" || fail "the viewer did not report 50 steps: $ERR"

# 4. the viewer's keyboard and mouse: X input events, reactions read from the event log
EVENT_WAIT_S=${MJDIFF_TEST_EVENT_WAIT_S:-20}   # longest wait for one reaction
missing=()
for tool in Xvfb xdotool; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  note "4. input events: SKIPPED (${missing[*]} not found: run scripts/setup.sh, which installs"
  note "   the packages xvfb and xdotool)"
  note "PASS"
  exit 0
fi
LOG="$TMP/view.log"
VIEW_ERR="$TMP/view.err"

# a display of its own: Xvfb writes the number it chose to fd 3 once it accepts clients
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$TMP/display" 2>"$TMP/xvfb.err" &
XVFB_PID=$!
deadline=$((SECONDS + EVENT_WAIT_S))
until [[ -s "$TMP/display" ]]; do
  kill -0 "$XVFB_PID" 2>/dev/null || fail "Xvfb exited: $(cat "$TMP/xvfb.err")"
  ((SECONDS < deadline)) || fail "Xvfb did not start within $EVENT_WAIT_S s"
  sleep 0.05
done
display=$(head -n 1 "$TMP/display")
[[ "$display" =~ ^[0-9]+$ ]] || fail "Xvfb reported display '$display', expected a number"
export DISPLAY=":$display"

# --seconds 600: the run does not reach its end (where the viewer pauses by itself) in the test
MJDIFF_VIEW_LOG="$LOG" timeout -k 10 "$VIEW_TIMEOUT_S" "$MPC" --view --planner sampling \
  --budget 0.002 --seconds 600 "$MODEL" >"$TMP/view.out" 2>"$VIEW_ERR" &
VIEW_PID=$!

# waitEvent NAME: wait for the first log line after line SEEN with event=NAME; sets LINE to it and
# SEEN to its number
SEEN=0
LINE=
waitEvent() {
  local deadline=$((SECONDS + EVENT_WAIT_S)) n exited=0
  while :; do
    n=$(awk -v from="$SEEN" -v ev="event=$1" 'NR > from && $1 == ev { print NR; exit }' \
      "$LOG" 2>/dev/null)
    if [[ -n "$n" ]]; then
      SEEN=$n
      LINE=$(sed -n "${n}p" "$LOG")
      return 0
    fi
    # the log is read once more after the viewer is gone: it may have written the line last
    ((exited)) && fail "the viewer exited before logging event=$1; stderr: $(cat "$VIEW_ERR")"
    kill -0 "$VIEW_PID" 2>/dev/null || exited=1
    ((SECONDS < deadline)) ||
      fail "no event=$1 in the log within $EVENT_WAIT_S s; log: $(cat "$LOG" 2>/dev/null)"
    sleep 0.05
  done
}
# field NAME: the value of NAME=... in LINE
field() {
  sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$LINE"
}
# check AWK_CONDITION MESSAGE: fail with MESSAGE and the line unless the condition holds
check() {
  awk "BEGIN { exit !($1) }" || fail "$2: $LINE"
}
# key KEYSYM: a key press and release through XTEST, to the focused window
key() {
  timeout 10 xdotool key "$1" || fail "xdotool key $1 failed"
}

waitEvent start
check "$(field paused) == 0 && $(field time) == 0 && $(field steps) == 0 && $(field help) == 0" \
  "the viewer does not start running at time 0 without help"
WID=$(timeout "$EVENT_WAIT_S" xdotool search --sync --onlyvisible --name '^mjdiff-mpc' | head -n 1)
[[ -n "$WID" ]] || fail "no visible window named mjdiff-mpc on $DISPLAY"
# no window manager: point into the window and give it the input focus
timeout 10 xdotool mousemove --window "$WID" 600 400 || fail "xdotool mousemove failed"
timeout 10 xdotool windowfocus --sync "$WID" || fail "cannot focus the viewer's window"

# F1 toggles the help; pressed until the simulated time has advanced (running)
help=0
for ((i = 0; ; i++)); do
  key F1
  waitEvent help
  check "$(field help) == 1 - $help" "F1 did not toggle the help (was $help)"
  help=$(field help)
  check "$(field paused) == 0" "paused before space"
  awk "BEGIN { exit !($(field time) >= 0.2) }" && break
  ((i < 100)) || fail "the simulated time does not advance while running"
  sleep 0.2
done
note "4. F1 toggles the help; running: t = $(field time) s after $(field steps) control steps"

# space pauses; the time then stands still (checked at a later event, many frames later)
key space
waitEvent pause
check "$(field paused) == 1" "space did not pause"
t_pause=$(field time)
n_pause=$(field steps)
check "$n_pause > 0 && $t_pause > 0" "no control step before the pause"
sleep 0.5
key F1
waitEvent help
check "$(field help) == 1 - $help" "F1 did not toggle the help (was $help)"
check "$(field paused) == 1 && $(field time) == $t_pause && $(field steps) == $n_pause" \
  "the simulated time advanced while paused (paused at t = $t_pause s, $n_pause steps)"
note "4. space pauses at t = $t_pause s; 0.5 s later still t = $(field time) s"

# right arrow while paused: exactly one control step, twice
dt=$(awk "BEGIN { printf \"%.9f\", $t_pause / $n_pause }")   # control step (s)
for k in 1 2; do
  key Right
  waitEvent step
  check "$(field paused) == 1 && $(field steps) == $n_pause + $k" \
    "right arrow #$k did not take exactly one control step (paused at $n_pause steps)"
  check "($(field time) - $t_pause - $k * $dt)^2 < 1e-10" \
    "right arrow #$k: time is not the pause time + $k control steps of $dt s"
done
note "4. right arrow: one control step of $dt s each, t = $(field time) s"

# backspace: back to time 0, still paused
key BackSpace
waitEvent reset
check "$(field time) == 0 && $(field steps) == 0 && $(field paused) == 1" \
  "backspace did not reset to time 0 (paused)"
note "4. backspace resets to t = 0"

# a left drag of 100 pixels to the right: azimuth -= 100 / 800 (window height) * 180 degrees;
# each step waits for its reaction, as the viewer reads the pointer's position on a button press
azimuth=$(field azimuth)
elevation=$(field elevation)
timeout 10 xdotool mousedown 1 || fail "xdotool mousedown failed"
waitEvent button
timeout 10 xdotool mousemove --window "$WID" 700 400 || fail "xdotool mousemove failed"
waitEvent rotate
timeout 10 xdotool mouseup 1 || fail "xdotool mouseup failed"
waitEvent button
check "($(field azimuth) - ($azimuth - 22.5))^2 < 0.01" \
  "a 100-pixel left drag did not turn the azimuth from $azimuth by -22.5 degrees"
check "($(field elevation) - $elevation)^2 < 0.01" \
  "a horizontal drag changed the elevation from $elevation"
note "4. left drag: azimuth $azimuth -> $(field azimuth) degrees"

# scroll (button 4): the distance changes, the angles do not
distance=$(field distance)
azimuth=$(field azimuth)
timeout 10 xdotool click 4 || fail "xdotool click 4 failed"
waitEvent zoom
check "($(field distance) - $distance)^2 > (0.01 * $distance)^2" \
  "scrolling did not change the distance $distance"
check "$(field azimuth) == $azimuth && $(field elevation) == $elevation" \
  "scrolling changed the camera's angles"
note "4. scroll: distance $distance -> $(field distance)"

# Esc: the window closes, the tool exits 0
key Escape
waitEvent quit
deadline=$((SECONDS + EVENT_WAIT_S))
while kill -0 "$VIEW_PID" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "the viewer is still running $EVENT_WAIT_S s after Esc"
  sleep 0.05
done
wait "$VIEW_PID"
RC=$?
VIEW_PID=
[[ $RC -eq 0 ]] || fail "after Esc: exit $RC, expected 0; stderr: $(cat "$VIEW_ERR")"
note "4. Esc closes the viewer, exit 0"

note "PASS"
exit 0
