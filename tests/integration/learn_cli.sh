#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# End-to-end test of mjdiff-learn on models/reacher.xml (short runs):
#   1. apg, es, ppo and shac each train 3 iterations: one line per iteration on stderr (cost, success,
#      grad, steps, wall), a CSV with a header and 4 rows, an .npz the eval command loads, and
#      success lines for both plants;
#   2. the same seed gives the same CSV costs and weights at 1 and 2 threads (apg, shac);
#   3. --pos-scale 1: the position features' input std (the .npz read with numpy) is 1 where their
#      spread over the start states is below it, the velocity and goal features' as without it;
#   4. SIGINT during a long run: exit 130 and the weights file written;
#   5. bad input: a malformed --net spec (exit 2, names the spec), weights of the wrong shape
#      (exit 1, names the file and the sizes), a task with an unknown term or joint (exit 1, names
#      the file and line), a goal term that is not a fixed point (exit 1), an unknown
#      --noise-joints or --hide-joints joint (exit 1, named), a bad --randomize range (2) or
#      parameter (1, named), a --pos-scale out of range or with weights to load (2), an unknown
#      option (2).
# Usage (ctest): bash learn_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: learn_cli.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: learn_cli.sh BUILD_DIR SOURCE_DIR}
NAME=learn_cli

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
LEARN="$BUILD_DIR/tools/mjdiff-learn"
M="$SOURCE_DIR/models/reacher.xml"
T="$SOURCE_DIR/models/reacher.task"
[[ -x "$LEARN" ]] || fail "missing $LEARN (build the project first)"
make_tmp mjdiff_learn_cli
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"
GOAL="--goal 0:0.05,0.15:0.05,0.15:0.01,0.01"
COMMON="--iters 3 --batch 4 --eval-batch 4 --eval-every 1 --seconds 0.3 --net mlp:16,16"

for method in apg es ppo shac; do
  run "$LEARN" policy "$M" "$T" $GOAL $COMMON --method $method --es-dirs 2 --short 8 --out "$method"
  [[ $RC == 0 ]] || fail "$method: exit $RC: $ERR"
  n=$(grep -c '^iter [1-9].*cost .* success .* grad .* steps .* wall ' "$TMP/err")
  [[ $n == 3 ]] || fail "$method: $n progress lines, expected 3: $ERR"
  [[ $(wc -l < "$method.csv") == 5 ]] || fail "$method: CSV rows: $(cat "$method.csv")"
  head -n 1 "$method.csv" | grep -q '^method,iter,sim_steps,wall_s,cost,success,grad_norm,eval_cost,eval_success$' \
    || fail "$method: CSV header"
  [[ -s "$method.npz" ]] || fail "$method: no weights"
  grep -q '^plant smooth .*success [0-9]*/4' <<<"$OUT" || fail "$method: no smooth plant line: $OUT"
  grep -q '^plant native .*success [0-9]*/4' <<<"$OUT" || fail "$method: no native plant line: $OUT"
done
run "$LEARN" eval "$M" "$T" apg.npz $GOAL --eval-batch 4 --seconds 0.3
[[ $RC == 0 ]] || fail "eval: exit $RC: $ERR"
grep -q '^plant native' <<<"$OUT" || fail "eval: $OUT"

# determinism across thread counts
run "$LEARN" policy "$M" "$T" $GOAL $COMMON --threads 1 --out t1
[[ $RC == 0 ]] || fail "threads 1: exit $RC: $ERR"
run "$LEARN" policy "$M" "$T" $GOAL $COMMON --threads 2 --out t2
[[ $RC == 0 ]] || fail "threads 2: exit $RC: $ERR"
diff <(cut -d, -f1-3,5-9 t1.csv) <(cut -d, -f1-3,5-9 t2.csv) > /dev/null || fail "1 and 2 threads differ"
cmp -s t1.npz t2.npz || fail "weights differ at 1 and 2 threads"
SHAC="--method shac --short 8 --iters 4"
run "$LEARN" policy "$M" "$T" $GOAL $COMMON $SHAC --threads 1 --out s1
[[ $RC == 0 ]] || fail "shac threads 1: exit $RC: $ERR"
grep -q '^iter 4: critic loss [0-9]' "$TMP/err" || fail "shac: no critic loss line: $ERR"
run "$LEARN" policy "$M" "$T" $GOAL $COMMON $SHAC --threads 2 --out s2
[[ $RC == 0 ]] || fail "shac threads 2: exit $RC: $ERR"
diff <(cut -d, -f1-3,5-9 s1.csv) <(cut -d, -f1-3,5-9 s2.csv) > /dev/null || fail "shac: 1 and 2 threads differ"
cmp -s s1.npz s2.npz || fail "shac: weights differ at 1 and 2 threads"
# 4 iterations of 4 rollouts of 8 steps
grep -q '^shac,4,128,' s1.csv || fail "shac: simulated steps: $(tail -n 1 s1.csv)"

# --pos-scale: the reacher's observation is (qpos 2, qvel 2, goal 3, goal - fingertip 3)
numpy_python
run "$LEARN" policy "$M" "$T" $GOAL $COMMON --iters 1 --pos-scale 1 --out ps
[[ $RC == 0 ]] || fail "--pos-scale: exit $RC: $ERR"
"$PYNP" - apg.npz ps.npz <<'PY' || fail "--pos-scale: input std wrong"
import sys
import numpy as np
a, b = (np.load(f)['input_std'] for f in sys.argv[1:3])
assert a.shape == (10,) and b.shape == (10,), (a.shape, b.shape)
assert (a[:2] < 0.1).all(), a  # start noise 0.05: spread 0.03
assert (b[:2] == 1).all(), b
assert (a[2:] == b[2:]).all() and (a[2:4] == 1).all(), (a, b)
PY

# SIGINT: last weights, exit 130
"$LEARN" policy "$M" "$T" $GOAL --iters 100000 --batch 4 --eval-every 1000 --out intr > /dev/null 2> intr.err &
pid=$!
sleep 2
kill -INT $pid
wait $pid
rc=$?
[[ $rc == 130 ]] || fail "SIGINT: exit $rc, expected 130: $(tail -n 3 intr.err)"
[[ -s intr.npz ]] || fail "SIGINT: no weights written"

# bad input
run "$LEARN" policy "$M" "$T" --net mlp:16,,8
[[ $RC == 2 ]] || fail "bad spec: exit $RC"
grep -q "mlp:16,,8" <<<"$ERR" || fail "bad spec not named: $ERR"
run "$LEARN" policy "$M" "$T" --init apg.npz --iters 1
[[ $RC == 1 ]] || fail "wrong-shape weights: exit $RC: $ERR"
grep -q "apg.npz.*inputs" <<<"$ERR" || fail "wrong-shape weights not named: $ERR"
printf 'position site:fingertip 0 0 0 1\njoint no_such_joint 0 1\n' > bad.task
run "$LEARN" policy "$M" bad.task
[[ $RC == 1 ]] || fail "unknown joint: exit $RC: $ERR"
grep -q "bad.task.*2.*no_such_joint" <<<"$ERR" || fail "unknown joint not named: $ERR"
printf 'position site:fingertip 0 0 0 1\nfly 1\n' > bad2.task
run "$LEARN" policy "$M" bad2.task
[[ $RC == 1 ]] || fail "unknown term: exit $RC: $ERR"
grep -q "bad2.task.*fly" <<<"$ERR" || fail "unknown term not named: $ERR"
run "$LEARN" policy "$M" "$T" --goal 3:0,0:0,0:0,0 --iters 1
[[ $RC == 1 ]] || fail "goal term: exit $RC: $ERR"
grep -q "goal term 3" <<<"$ERR" || fail "goal term not named: $ERR"
run "$LEARN" policy "$M" "$T" --noise-joints shoulder,no_such_joint --iters 1
[[ $RC == 1 ]] || fail "unknown noise joint: exit $RC: $ERR"
grep -q "noise_joints: no joint 'no_such_joint'" <<<"$ERR" || fail "noise joint not named: $ERR"
run "$LEARN" policy "$M" "$T" --hide-joints shoulder,no_such_joint --iters 1
[[ $RC == 1 ]] || fail "unknown hidden joint: exit $RC: $ERR"
grep -q "hide_joints: no joint 'no_such_joint'" <<<"$ERR" || fail "hidden joint not named: $ERR"
run "$LEARN" policy "$M" "$T" --randomize body:link2:mass=0,2
[[ $RC == 2 ]] || fail "bad --randomize range: exit $RC"
grep -q "body:link2:mass=0,2" <<<"$ERR" || fail "bad --randomize not named: $ERR"
run "$LEARN" policy "$M" "$T" --randomize body:no_such_body:mass=0.5,2 --iters 1
[[ $RC == 1 ]] || fail "unknown --randomize parameter: exit $RC: $ERR"
grep -q "no_such_body" <<<"$ERR" || fail "unknown --randomize parameter not named: $ERR"
run "$LEARN" policy "$M" "$T" --pos-scale -1
[[ $RC == 2 ]] || fail "bad --pos-scale: exit $RC"
grep -q -- "--pos-scale" <<<"$ERR" || fail "bad --pos-scale not named: $ERR"
run "$LEARN" eval "$M" "$T" apg.npz --pos-scale 1
[[ $RC == 2 ]] || fail "--pos-scale with weights: exit $RC"
grep -q -- "--pos-scale.*apg.npz" <<<"$ERR" || fail "--pos-scale with weights not named: $ERR"
run "$LEARN" policy "$M" "$T" --frobnicate
[[ $RC == 2 ]] || fail "unknown option: exit $RC"
note "ok"
