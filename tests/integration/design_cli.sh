#!/bin/bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# mjdiff-design end to end on the reacher example (scripts/design/): projected Adam co-design
# lowers the objective; the written MJCF differs from the input only in the optimised attribute
# values and recompiles to the optimised model (report's recompiled_worst_rel <= 1e-9); ties make
# two parameters one value; Nelder-Mead runs; CMA-ES co-design halves the objective and repeats
# for a seed; bad input fails with a message naming it (a bound
# that excludes the current value, a mesh or world-body parameter, a missing --param);
# --targets (a set of goals) reduces to one goal given twice; mjdiff-bench-design's two geometry
# gradients agree.
NAME=design_cli
BUILD_DIR=$1
SOURCE_DIR=$2
source "$(dirname "$0")/lib.sh"
absolute_dirs
make_tmp design_cli
trap 'rm -rf "$TMP"' EXIT
T=$BUILD_DIR/tools/mjdiff-design
X=$SOURCE_DIR/scripts/design/reacher2.xml
K=$SOURCE_DIR/scripts/design/reacher2.task
P="--param body:upper:scale --param body:lower:scale"

run "$T" "$X" "$K" $P --codesign --iters 40 --lr 0.02 --out "$TMP/a" --no-plot --quiet
[ "$RC" = 0 ] || fail "co-design run: rc $RC: $ERR"
J0=$(sed -n 's/.*"J_initial": *\([-0-9.e+]*\).*/\1/p' "$TMP/a.json")
J=$(sed -n 's/.*"J_best": *\([-0-9.e+]*\).*/\1/p' "$TMP/a.json")
R=$(sed -n 's/.*"recompiled_worst_rel": *\([-0-9.e+]*\).*/\1/p' "$TMP/a.json")
awk -v a="$J" -v b="$J0" 'BEGIN { exit !(a < 0.5 * b) }' || fail "objective $J0 -> $J did not halve"
awk -v r="$R" 'BEGIN { exit !(r <= 1e-9) }' || fail "recompiled MJCF differs by $R"
grep -q '"status": *"done"' "$TMP/a.json" || fail "no status done in the report"
# only the lines with the scaled attributes changed: the two fromto, the lower body's pos, the site
CH=$(diff "$X" "$TMP/a.xml" | grep -c '^>')
[ "$CH" = 4 ] || fail "expected 4 changed lines, got $CH: $(diff "$X" "$TMP/a.xml")"
grep -q 'gear="0.02"' "$TMP/a.xml" || fail "other attributes were rewritten"
[ -s "$TMP/a.csv" ] && [ -s "$TMP/a_ctrl.txt" ] || fail "no history or controls written"

# ties: lower follows upper
run "$T" "$X" "$K" $P --tie body:upper:scale=body:lower:scale --codesign --iters 10 --out "$TMP/t" --no-plot --quiet
[ "$RC" = 0 ] || fail "tied run: rc $RC: $ERR"
U=$(grep -o '"name":"body:upper:scale","initial": [^,]*,"final": [^,]*' "$TMP/t.json" | sed 's/.*"final": //')
L=$(grep -o '"name":"body:lower:scale","initial": [^,]*,"final": [^,]*' "$TMP/t.json" | sed 's/.*"final": //')
[ -n "$U" ] && [ "$U" = "$L" ] || fail "tied values differ: $U $L"

# Nelder-Mead baseline
run "$T" "$X" "$K" $P --method nm --iters 30 --out "$TMP/n" --no-plot --quiet
[ "$RC" = 0 ] || fail "nm run: rc $RC: $ERR"

# CMA-ES baseline: co-design lowers the objective, the report names the method, a seed repeats
run "$T" "$X" "$K" $P --codesign --method cmaes --iters 30 --out "$TMP/c" --no-plot --quiet
[ "$RC" = 0 ] || fail "cmaes run: rc $RC: $ERR"
grep -q '"method": *"CMA-ES"' "$TMP/c.json" || fail "the report does not name CMA-ES"
JC=$(sed -n 's/.*"J_best": *\([-0-9.e+]*\).*/\1/p' "$TMP/c.json")
awk -v a="$JC" -v b="$J0" 'BEGIN { exit !(a < 0.5 * b) }' || fail "cmaes: objective $J0 -> $JC did not halve"
run "$T" "$X" "$K" $P --codesign --method cmaes --iters 30 --out "$TMP/c2" --no-plot --quiet
[ "$(cut -d, -f1,2,4- "$TMP/c.csv")" = "$(cut -d, -f1,2,4- "$TMP/c2.csv")" ] || fail "cmaes: same seed, different history"

# bad input
run "$T" "$X" "$K" $P --bounds body:upper:scale=1.2:2 --out "$TMP/b" --no-plot --quiet
[ "$RC" = 2 ] || fail "a bound excluding the value: rc $RC"
echo "$ERR" | grep -q "body:upper:scale = 1 lies outside" || fail "bound message: $ERR"
run "$T" "$X" "$K" --param body:world:pos --out "$TMP/b" --no-plot --quiet
[ "$RC" = 2 ] || fail "world body: rc $RC"
echo "$ERR" | grep -q "body:world:pos.*world body" || fail "world body message: $ERR"
run "$T" "$X" "$K" --out "$TMP/b" --quiet
[ "$RC" = 2 ] || fail "no --param: rc $RC"
# --policy: a fixed closed-loop controller trained by mjdiff-learn (a few iterations), the reacher's
# link scales optimised under it over 3 sampled starts and goals; the report names the policy;
# --policy with --codesign is a usage error naming both; weights of another shape exit 1 naming
# the file
RX=$SOURCE_DIR/models/reacher.xml
RK=$SOURCE_DIR/models/reacher.task
GOAL="--goal 0:0.05,0.15:0.05,0.15:0.01,0.01"
run "$BUILD_DIR/tools/mjdiff-learn" policy "$RX" "$RK" $GOAL --batch 4 --iters 3 --net mlp:16 \
    --eval-batch 4 --out "$TMP/pol"
[ "$RC" = 0 ] && [ -s "$TMP/pol.npz" ] || fail "mjdiff-learn for the policy: rc $RC: $ERR"
RP="--param body:link1:scale --param body:link2:scale"
for M in adam cmaes; do
  run "$T" "$RX" "$RK" $RP --policy "$TMP/pol.npz" $GOAL --policy-starts 3 --method $M --iters 5 \
      --out "$TMP/p$M" --no-plot --quiet
  [ "$RC" = 0 ] || fail "--policy --method $M: rc $RC: $ERR"
  grep -q '"controller":"policy"' "$TMP/p$M.json" || fail "$M: the report does not say policy"
  grep -q '"policy_starts":3' "$TMP/p$M.json" || fail "$M: no policy_starts 3 in the report"
  grep -q "\"policy\":\"$TMP/pol.npz\"" "$TMP/p$M.json" || fail "$M: the report does not name the weights"
done
PJ0=$(sed -n 's/.*"J_initial": *\([-0-9.e+]*\).*/\1/p' "$TMP/padam.json")
PJ=$(sed -n 's/.*"J_best": *\([-0-9.e+]*\).*/\1/p' "$TMP/padam.json")
awk -v a="$PJ" -v b="$PJ0" 'BEGIN { exit !(a < b) }' || fail "--policy adam: objective $PJ0 -> $PJ did not fall"
run "$T" "$RX" "$RK" $RP --policy "$TMP/pol.npz" $GOAL --codesign --out "$TMP/b" --no-plot --quiet
[ "$RC" = 2 ] || fail "--policy with --codesign: rc $RC"
echo "$ERR" | grep -q -- "--policy excludes --controls and --codesign" || fail "--policy --codesign message: $ERR"
run "$T" "$RX" "$RK" $RP --policy "$TMP/pol.npz" --out "$TMP/b" --no-plot --quiet
[ "$RC" = 1 ] || fail "--policy without its --goal (another observation size): rc $RC"
echo "$ERR" | grep -q "pol.npz: the network maps" || fail "wrong-shape weights message: $ERR"

# --targets: the mean over a set of goals, each with its own controls. The task's own goal listed
# twice must give the single-goal run exactly (the mean of two equal rollouts, each block of
# controls moving as the one block does); the report counts the targets, the controls file holds
# one block per target; bad input is named
printf '0.15 0.2 0.01\n# a comment\n\n0.15 0.2 0.01\n' > "$TMP/twice.txt"
run "$T" "$X" "$K" $P --codesign --iters 15 --out "$TMP/one" --no-plot --quiet
[ "$RC" = 0 ] || fail "single-goal run: rc $RC: $ERR"
run "$T" "$X" "$K" $P --codesign --iters 15 --targets "0:$TMP/twice.txt" --out "$TMP/two" --no-plot --quiet
[ "$RC" = 0 ] || fail "--targets run: rc $RC: $ERR"
J1=$(sed -n 's/.*"J_best": *\([-0-9.e+]*\).*/\1/p' "$TMP/one.json")
J2=$(sed -n 's/.*"J_best": *\([-0-9.e+]*\).*/\1/p' "$TMP/two.json")
F1=$(grep -o '"final": *[-0-9.e+]*' "$TMP/one.json" | tr -d '\n')
F2=$(grep -o '"final": *[-0-9.e+]*' "$TMP/two.json" | tr -d '\n')
[ "$J1" = "$J2" ] && [ "$F1" = "$F2" ] || fail "--targets with the goal twice: J $J2 ($F2), one goal: J $J1 ($F1)"
grep -q '"targets":2,"target_term":0' "$TMP/two.json" || fail "--targets: the report does not count 2 targets"
NL=$(wc -l < "$TMP/two_ctrl.txt")
[ "$NL" = 101 ] || fail "--targets: expected 2 blocks of 50 rows and a blank line, got $NL lines"
run "$T" "$X" "$K" $P --codesign --targets "$TMP/twice.txt" --out "$TMP/b" --no-plot --quiet
[ "$RC" = 2 ] || fail "--targets without TERM: rc $RC"
echo "$ERR" | grep -q -- "--targets must be TERM:FILE" || fail "--targets usage message: $ERR"
run "$T" "$X" "$K" $P --codesign --targets "1:$TMP/twice.txt" --out "$TMP/b" --no-plot --quiet
[ "$RC" = 2 ] || fail "--targets on the control term: rc $RC"
echo "$ERR" | grep -q "task term 1 is not a position term" || fail "--targets term message: $ERR"
printf '0.1 0.2 0.01\n0.1 nope 0.01\n' > "$TMP/bad.txt"
run "$T" "$X" "$K" $P --codesign --targets "0:$TMP/bad.txt" --out "$TMP/b" --no-plot --quiet
[ "$RC" = 1 ] || fail "--targets with a bad line: rc $RC"
echo "$ERR" | grep -q "bad.txt:2: expected three finite numbers" || fail "--targets file message: $ERR"

# mjdiff-bench-design: the analytic and differenced geometry gradients agree (the timing is not
# checked: a benchmark prints ratios measured in one run); options go together
B=$BUILD_DIR/tools/mjdiff-bench-design
run "$B" --model "$SOURCE_DIR/models/arm_box.xml" --param geom:fingertip:size \
  --param geom:fingertip:pos --steps 30 --rounds 1
[ "$RC" = 0 ] || fail "bench-design: rc $RC: $ERR"
GD=$(echo "$OUT" | awk '$1 == "arm_box" { print $7 }')
awk -v g="$GD" 'BEGIN { exit !(g != "" && g + 0 <= 1e-6) }' || fail "bench-design: gradients differ by '$GD': $OUT"
run "$B" --model "$SOURCE_DIR/models/arm_box.xml"
[ "$RC" = 2 ] || fail "bench-design --model without --param: rc $RC"
echo "$ERR" | grep -q -- "--model and --param go together" || fail "bench-design usage message: $ERR"
echo "design_cli: ok (J $J0 -> $J, CMA-ES $JC, recompiled $R; policy $PJ0 -> $PJ; bench gradients $GD)"
