#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# mjdiff-mpc with a plant file (tools/common/plant.h) and --adapt, end to end on the
# cart-pole (short runs):
#   1. bad plant files exit 2 with a message naming the file and line: an unknown parameter, an
#      unknown sensor, a delay not shorter than the run; --adapt naming an unknown parameter exits
#      2 naming it; --adapt with the smooth plant is a usage error (2)
#   2. a plant file with a payload, noise and a delay runs (exit 0), and --adapt of the payload's
#      mass writes its tracking log to the JSON (windows fitted, none failed)
# Usage (ctest): bash mpc_plant.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: mpc_plant.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: mpc_plant.sh BUILD_DIR SOURCE_DIR}
NAME=mpc_plant

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
MPC="$BUILD_DIR/tools/mjdiff-mpc"
CART="$SOURCE_DIR/models/cartpole.xml"
[[ -x "$MPC" ]] || fail "missing $MPC (build the project first)"
make_tmp mjdiff-mpc-plant
trap 'rm -rf "$TMP"' EXIT
BODY=$(grep -o '<body name="[a-z_]*"' "$CART" | tail -1 | sed 's/.*name="\([a-z_]*\)"/\1/')
[[ -n $BODY ]] || fail "no named body in $CART"

printf '# comment\nset body:nosuch:mass 2\n' > "$TMP/a.plant"
run "$MPC" "$CART" --plant "$TMP/a.plant" --seconds 0.1 --quiet
[[ $RC == 2 ]] || fail "unknown parameter: exit $RC, want 2 ($ERR)"
[[ $ERR == *"a.plant:2: parameter 'body:nosuch:mass'"* ]] || fail "unknown parameter message: $ERR"

printf 'noise nosensor 0.1\n' > "$TMP/b.plant"
run "$MPC" "$CART" --plant "$TMP/b.plant" --seconds 0.1 --quiet
[[ $RC == 2 && $ERR == *"b.plant:1: unknown sensor 'nosensor'"* ]] || fail "unknown sensor: $RC $ERR"

printf '\ndelay 0.5\n' > "$TMP/c.plant"
run "$MPC" "$CART" --plant "$TMP/c.plant" --seconds 0.2 --quiet
[[ $RC == 2 && $ERR == *"c.plant:2: delay 0.5 s is not shorter than the run (0.2 s)"* ]] ||
  fail "delay: $RC $ERR"

run "$MPC" "$CART" --plant native --adapt body:nosuch:mass --seconds 0.1 --quiet
[[ $RC == 2 && $ERR == *"nosuch"* ]] || fail "--adapt unknown name: $RC $ERR"
run "$MPC" "$CART" --adapt "body:$BODY:mass" --seconds 0.1 --quiet
[[ $RC == 2 && $ERR == *"needs a native plant"* ]] || fail "--adapt with the smooth plant: $RC $ERR"

printf 'payload %s 0.5 at 0.25\nnoise * 0.001\ndelay 0.02\n' "$BODY" > "$TMP/ok.plant"
run "$MPC" "$CART" --plant "$TMP/ok.plant" --adapt "body:$BODY:mass" --seconds 0.5 --iterations 1 \
  --quiet --out "$TMP/run.json"
[[ $RC == 0 ]] || fail "plant run: exit $RC ($ERR)"
[[ $OUT == *"plant file"*"1 parameter change(s), delay 2 step(s), noisy readings"* ]] ||
  fail "plant summary: $OUT"
python3 - "$TMP/run.json" <<'PY' || fail "JSON adaptation log"
import json, sys
j = json.load(open(sys.argv[1]))
a = j["adapt"]
assert a["windows"] >= 3 and a["failed"] == 0, a
assert len(a["t_s"]) == len(a["estimate"]) == len(a["plant"]) >= 3
assert a["plant"][-1][0] > a["plant"][0][0]  # the payload arrived
PY
note "ok"
