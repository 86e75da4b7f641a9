#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Smoke test of mjdiff-mpc:
#   1. --help exits 0 and lists its options; an unknown option and a bad number exit 2;
#   2. a short closed loop (--seconds 0.5 --planner ilqr models/cartpole.xml --json) exits 0 and
#      prints valid JSON with the summary metrics and the per-step series;
#   3. the viewer under Xvfb (Mesa llvmpipe): --view --screenshot out.png --screenshot-after 50
#      --planner sampling models/cartpole.xml writes a PNG that is not blank (> 50 distinct
#      colours) and has the size of the window.
# Usage (ctest): bash mpc_view.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: mpc_view.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: mpc_view.sh BUILD_DIR SOURCE_DIR}
NAME=mpc_view
VIEW_TIMEOUT_S=${MJDIFF_TEST_WAIT_S:-120}   # longest run of the viewer

fail() {
  echo "$NAME: FAIL: $*" >&2
  exit 1
}
note() {
  echo "$NAME: $*" >&2
}

BUILD_DIR=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || fail "no build directory $1"
SOURCE_DIR=$(cd "$SOURCE_DIR" 2>/dev/null && pwd) || fail "no source directory $2"
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

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mjdiff_mpc_view.XXXXXX") || fail "cannot make a temp directory"
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"   # MuJoCo may write MUJOCO_LOG.TXT to the working directory

# run CMD...: sets RC, OUT (stdout) and ERR (stderr)
run() {
  "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

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

note "PASS"
exit 0
