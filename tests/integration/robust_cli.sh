#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Bad input to the tools (issue 14), one input per failure that was found: each must end with exit
# 1 (runtime) or 2 (usage), a message on stderr naming the file (and line and column) or the
# option, nothing on stdout that is not valid JSON, no MUJOCO_LOG.TXT, and any report the user
# already had left as it was.
#   sysid  --window 0 on one row (was SIGFPE), --generate --duration 1e300 (was a segfault), a file
#          without newlines (bounded), /dev/zero, no measurement columns (was "converged", exit 0),
#          a number cut off at the end of the file, a NUL byte, a span shorter than a timestep, a
#          single 1e300
#   mpc    a task with NUL bytes and /dev/zero (hung), a UTF-8 BOM (refused), a terminal weight that
#          makes every plan cost infinite (ended "ok"), a planning timestep longer than the horizon
#          (accepted), a horizon shorter than the model's timestep
#   demo   a run that diverges slowly (energy 1e30, reported "ok"), valid JSON with no NaN, a huge
#          --seconds (ran 0 steps, "ok")
#   check  a model with no dofs or activations (printed "(null)" as its worst block)
#   every tool accepts -h (mjdiff-bench-smooth did not); MuJoCo warnings go to stderr
# Usage (ctest): bash robust_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: robust_cli.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: robust_cli.sh BUILD_DIR SOURCE_DIR}
NAME=robust_cli

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
T=$BUILD_DIR/tools
SYSID=$T/mjdiff-sysid
MPC=$T/mjdiff-mpc
DEMO=$T/mjdiff-demo
ARM=$SOURCE_DIR/models/arm_box.xml
CART=$SOURCE_DIR/models/cartpole.xml
make_tmp mjdiff_robust_cli
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"
nfail=0

# expect CODE PATTERN CMD...: exit status CODE, PATTERN (grep -E) in stderr, stdout empty or JSON
expect() {
  local code=$1 pattern=$2
  shift 2
  timeout 120 "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
  if [[ $RC -ne $code ]]; then
    note "FAIL: exit $RC, expected $code: $*"
    note "  stderr: ${ERR:0:400}"
    nfail=$((nfail + 1))
  elif [[ -n $pattern ]] && ! grep -Eq -- "$pattern" "$TMP/err"; then
    note "FAIL: stderr lacks /$pattern/: $*"
    note "  stderr: ${ERR:0:400}"
    nfail=$((nfail + 1))
  elif [[ -n $OUT && ${OUT:0:1} == "{" ]] && ! python3 -c 'import json,sys; json.load(sys.stdin)' \
       <"$TMP/out" 2>/dev/null; then
    note "FAIL: stdout is not valid JSON: $*"
    nfail=$((nfail + 1))
  elif [[ -e $TMP/MUJOCO_LOG.TXT ]]; then
    note "FAIL: MUJOCO_LOG.TXT written: $*"
    nfail=$((nfail + 1))
  fi
}

# a good recording of the arm (0.2 s) to cut up
"$SYSID" --generate good.csv --duration 0.2 "$ARM" 2>/dev/null || fail "cannot generate a recording"
FIT=(--param body:box:mass --quiet)
echo '{"kept": true}' >report.json
cp report.json report.orig

#---------------------------------- sysid ----------------------------------------------------------
head -2 good.csv >one.csv
expect 1 "one.csv: 1 sample spanning less than one timestep" \
  "$SYSID" "${FIT[@]}" --window 0 --out report.json "$ARM" one.csv
cmp -s report.json report.orig || { note "FAIL: report.json overwritten on failure"; nfail=$((nfail + 1)); }
expect 1 "--duration 1e\\+300: .* steps of 0.002 s" "$SYSID" --generate big.csv --duration 1e300 "$ARM"
[[ -e big.csv || -e big.csv.tmp ]] && { note "FAIL: --generate left a file"; nfail=$((nfail + 1)); }
head -c 20000000 /dev/zero | tr '\0' 'x' >nonl.csv
expect 1 "nonl.csv: line 1: longer than 16777216 bytes" "$SYSID" "${FIT[@]}" "$ARM" nonl.csv
expect 1 "/dev/zero: line 1, column 1: NUL byte" "$SYSID" "${FIT[@]}" "$ARM" /dev/zero
cut -d, -f1-8 good.csv >nomeas.csv
expect 1 "nomeas.csv: measures nothing to fit" "$SYSID" "${FIT[@]}" "$ARM" nomeas.csv
head -c -1 good.csv >cut.csv  # the last row without its line end: it may be cut off
expect 1 "cut.csv: line 102: the last row has no line end" "$SYSID" "${FIT[@]}" "$ARM" cut.csv
python3 - <<'EOF'
rows = open("good.csv").read().split("\n")
r = rows[3]; open("nul.csv", "w").write("\n".join(rows[:3] + [r[:12] + "\0" + r[13:]] + rows[4:]))
f = rows[3].split(","); f[9] = "1e300"
open("huge.csv", "w").write("\n".join(rows[:3] + [",".join(f)] + rows[4:]))
f = rows[2].split(","); f[0] = "0.0005"
open("short.csv", "w").write("\n".join(rows[:2] + [",".join(f)]) + "\n")
EOF
expect 1 "nul.csv: line 4, column 13: NUL byte" "$SYSID" "${FIT[@]}" "$ARM" nul.csv
expect 1 "huge.csv: line 4: qpos:joint2: '1e300' is out of range" "$SYSID" "${FIT[@]}" "$ARM" huge.csv
expect 1 "short.csv: 2 samples spanning less than one timestep" "$SYSID" "${FIT[@]}" "$ARM" short.csv
expect 2 "--window must be an integer >= 0" "$SYSID" "${FIT[@]}" --window -1 "$ARM" good.csv

#---------------------------------- mpc ------------------------------------------------------------
MPCRUN=(--seconds 0.2 --quiet --json)
{ cat "$SOURCE_DIR/models/cartpole.task"; printf 'joint\0 cart_slide 0 1\n'; } >nul.task
expect 1 "nul.task: line 19, column 6: NUL byte" "$MPC" --task nul.task "${MPCRUN[@]}" "$CART"
expect 1 "/dev/zero: line 1, column 1: NUL byte" "$MPC" --task /dev/zero "${MPCRUN[@]}" "$CART"
{ printf '\xEF\xBB\xBF'; cat "$SOURCE_DIR/models/cartpole.task"; } >bom.task
expect 0 "" "$MPC" --task bom.task --seconds 0.05 --quiet --json "$CART"
python3 -c 'import json,sys; assert json.load(sys.stdin)["status"] == "ok"' <"$TMP/out" ||
  { note "FAIL: BOM task: status not ok"; nfail=$((nfail + 1)); }
{ grep -v '^terminal' "$SOURCE_DIR/models/cartpole.task"; echo 'terminal 1e308'; } >inf.task
cp report.orig report.json
expect 1 "planner's cost was not finite at 10 control steps in a row" \
  "$MPC" --task inf.task "${MPCRUN[@]}" "$CART"
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "error", d["status"]
assert d["nonfinite"]["count"] > 0 and d["nonfinite"]["first"] == "plan_cost", d["nonfinite"]
' <"$TMP/out" || { note "FAIL: infinite plan costs: status or nonfinite note"; nfail=$((nfail + 1)); }
{ grep -v '^horizon' "$SOURCE_DIR/models/cartpole.task"; echo 'horizon 0.1'; echo 'timestep 0.2'; } >ts.task
expect 1 "ts.task:19: timestep 0.2 s is longer than the horizon 0.1 s" \
  "$MPC" --task ts.task "${MPCRUN[@]}" "$CART"
{ grep -v '^horizon' "$SOURCE_DIR/models/cartpole.task"; echo 'horizon 0.004'; } >short.task
expect 1 "planning timestep 0.01 s is longer than the horizon 0.004 s" \
  "$MPC" --task short.task "${MPCRUN[@]}" "$CART"

#---------------------------------- demo -----------------------------------------------------------
# a 10 g link on a hinge spring that explicit Euler amplifies about 2x per step, too slowly for
# the smooth step's own divergence test (no smooth force is involved)
cat >slow.xml <<'EOF'
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body>
      <joint name="h" type="hinge" stiffness="1.5" springref="1"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.01"/>
    </body>
  </worldbody>
</mujoco>
EOF
expect 1 "error: diverged at time 0.37: energy .* J \(bound 1e\+10\)" "$DEMO" --json --seconds 1 slow.xml
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "diverged", d["status"]
assert d["metrics"]["smooth"]["diverged"] is True
' <"$TMP/out" || { note "FAIL: diverged demo: JSON status"; nfail=$((nfail + 1)); }
grep -qi nan "$TMP/out" && { note "FAIL: nan in the demo's JSON"; nfail=$((nfail + 1)); }
expect 1 "error: native: diverged at time" "$DEMO" --json --native --seconds 1 slow.xml
# --out is written whole (FILE.tmp renamed): a valid report of the failed run, no FILE.tmp left
cp report.orig report.json
expect 1 "error: diverged" "$DEMO" --out report.json --seconds 1 slow.xml
python3 -c 'import json; assert json.load(open("report.json"))["status"] == "diverged"' ||
  { note "FAIL: demo --out: not the diverged report"; nfail=$((nfail + 1)); }
[[ -e report.json.tmp ]] && { note "FAIL: demo --out left report.json.tmp"; nfail=$((nfail + 1)); }
expect 1 "cannot write nodir/report.json" "$DEMO" --out nodir/report.json --seconds 0.1 slow.xml
expect 1 "--seconds 1e\\+300: .* steps of 0.01 s, more than 1e\\+09" "$DEMO" --seconds 1e300 slow.xml
expect 2 "--seconds must be a positive number" "$DEMO" --seconds nan slow.xml
# MuJoCo's warnings: on stderr, never in the JSON on stdout, and no MUJOCO_LOG.TXT
sed 's/stiffness="1.5"/stiffness="1e5"/' slow.xml >fast.xml
expect 1 "mjdiff-demo: MuJoCo warning: Nan, Inf or huge value in QACC" "$DEMO" --json --native fast.xml

#---------------------------------- check ----------------------------------------------------------
# a model with nothing to differentiate (no dofs or activations; MuJoCo 3's plugin scene samples):
# a plain PASS saying so, no "(null)" block name in the progress lines
printf '<mujoco><worldbody><geom type="plane" size="1 1 0.1"/></worldbody></mujoco>' >empty.xml
expect 0 "" "$T/mjdiff-check" --states 2 empty.xml
grep -q "nothing to compare: \[A B\] has no rows" "$TMP/out" ||
  { note "FAIL: check on a model without dofs: ${OUT:0:300}"; nfail=$((nfail + 1)); }
grep -q "(null)" "$TMP/out" "$TMP/err" && { note "FAIL: check printed (null)"; nfail=$((nfail + 1)); }

#---------------------------------- -h -------------------------------------------------------------
for tool in "$T"/mjdiff-*; do
  "$tool" -h >"$TMP/out" 2>"$TMP/err"
  rc=$?
  if [[ $rc -ne 0 ]] || ! grep -qi usage "$TMP/out"; then
    note "FAIL: $(basename "$tool") -h: exit $rc"
    nfail=$((nfail + 1))
  fi
done

[[ $nfail -eq 0 ]] || fail "$nfail checks failed"
note "all checks passed"
