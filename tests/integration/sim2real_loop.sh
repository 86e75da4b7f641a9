#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# A tiny run of scripts/sim2real.sh (2 rounds, few iterations) on the reacher and its plant file:
# exit 0; every stage's output exists (weights, recordings, sysid report, calibrated model,
# predictions); rounds.csv has a header and 2 rows of 8 finite numbers; the plant-file eval
# rejects a plant naming an unknown parameter (exit 1, names the file and line). Then one tiny
# round on the contact task (--model pusher): its row of 8 numbers, the fitted puck friction
# (a name with a component index) read back against the plant's truth; an unknown --model is a
# usage error (exit 2).
# Usage (ctest): bash sim2real_loop.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: sim2real_loop.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: sim2real_loop.sh BUILD_DIR SOURCE_DIR}
NAME=sim2real_loop

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
[[ -x "$BUILD_DIR/tools/mjdiff-learn" && -x "$BUILD_DIR/tools/mjdiff-sysid" ]] || fail "build the project first"
make_tmp mjdiff_sim2real
trap 'rm -rf "$TMP"' EXIT
out=$TMP/out
MJDIFF_BIN=$BUILD_DIR/tools bash "$SOURCE_DIR/scripts/sim2real.sh" --rounds 2 --iters 10 --fine-iters 5 --out "$out" > "$TMP/log" 2>&1
rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/log" >&2; fail "sim2real.sh exit $rc"; }
for f in policy-1.npz policy-2.npz rec-1-0.csv rec-2-0.csv sysid-1.json sysid-2.json model-2.xml model-3.xml \
         predict-before-1.json predict-after-2.json rounds.csv; do
  [[ -s $out/$f ]] || fail "missing or empty $out/$f"
done
rows=$(awk -F, 'NR > 1 { for (i = 1; i <= 8; i++) if ($i !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) bad = 1; if (NF != 8) bad = 1; n++ } END { print bad ? -1 : n }' "$out/rounds.csv")
[[ $rows -eq 2 ]] || { cat "$out/rounds.csv" >&2; fail "rounds.csv: expected 2 rows of 8 numbers, got '$rows'"; }
head -1 "$out/rec-1-0.csv" | grep -q "qpos:elbow" || fail "recording without qpos:elbow"
# bad plant file
printf 'scale body:nosuch:mass 2\n' > "$TMP/bad.plant"
"$BUILD_DIR/tools/mjdiff-learn" eval "$SOURCE_DIR/models/reacher.xml" "$SOURCE_DIR/models/reacher.task" "$out/policy-1.npz" \
  --goal 0:0.05,0.15:0.05,0.15:0.01,0.01 --plant "$TMP/bad.plant" > /dev/null 2> "$TMP/err"
rc=$?
[[ $rc -eq 1 ]] || fail "bad plant: exit $rc, expected 1"
grep -q "bad.plant:1" "$TMP/err" || { cat "$TMP/err" >&2; fail "bad plant: message does not name the file and line"; }
# the contact task: one tiny round
MJDIFF_BIN=$BUILD_DIR/tools bash "$SOURCE_DIR/scripts/sim2real.sh" --model pusher --rounds 1 --iters 3 --fine-iters 2 --out "$TMP/push" > "$TMP/log" 2>&1
rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/log" >&2; fail "sim2real.sh --model pusher exit $rc"; }
rows=$(awk -F, 'NR > 1 { for (i = 1; i <= 8; i++) if ($i !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) bad = 1; if (NF != 8) bad = 1; n++ } END { print bad ? -1 : n }' "$TMP/push/rounds.csv")
[[ $rows -eq 1 ]] || { cat "$TMP/push/rounds.csv" >&2; fail "pusher rounds.csv: expected 1 row of 8 numbers, got '$rows'"; }
grep -q "geom:puck:friction\[0\]" "$TMP/push/sysid-1.json" || fail "pusher: the puck's friction was not fitted"
MJDIFF_BIN=$BUILD_DIR/tools bash "$SOURCE_DIR/scripts/sim2real.sh" --model nosuch --out "$TMP/x" > /dev/null 2> "$TMP/err"
rc=$?
[[ $rc -eq 2 ]] || fail "--model nosuch: exit $rc, expected 2"
grep -q "unknown model 'nosuch'" "$TMP/err" || { cat "$TMP/err" >&2; fail "--model nosuch: no message naming it"; }
note "ok"
