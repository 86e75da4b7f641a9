#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# End-to-end test of mjdiff-estimate on recordings written by mjdiff-sysid --generate (cartpole,
# 2 s, sensor noise 0.01, true qpos and qvel columns):
#   1. ekf, ukf, batch and mhe each write a CSV (one row per step, a std column per tangent row, all
#      std > 0), a JSON summary with the position RMSE to truth below 0.003 (0.3x the reading
#      noise),
#      and (ekf) a PNG; ekf and ukf agree on the RMSE within 20%; --jacobian fd too.
#   2. a recording with a sensor's readings blanked in half its rows: skipped and counted in the
#      JSON (filter.skipped).
#   3. bad inputs: an unknown --sensor names it and exits 1; an unknown option or method exits 2;
#      --help exits 0.
# Usage (ctest): bash estimate_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: estimate_cli.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: estimate_cli.sh BUILD_DIR SOURCE_DIR}
NAME=estimate_cli

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
SYSID="$BUILD_DIR/tools/mjdiff-sysid"
EST="$BUILD_DIR/tools/mjdiff-estimate"
CART="$SOURCE_DIR/models/cartpole.xml"
[[ -x "$SYSID" ]] || fail "missing $SYSID (build the project first)"
[[ -x "$EST" ]] || fail "missing $EST (build the project first)"
command -v python3 >/dev/null || fail "python3 not found (needed for the CSV and JSON checks)"

make_tmp mjdiff_estimate_cli
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"

run "$SYSID" --quiet --generate data.csv --duration 2 --noise-sensor 0.01 "$CART"
[[ $RC == 0 ]] || fail "generate: exit $RC: $ERR"

cat >"$TMP/check.py" <<'PY'
import csv, json, math, sys
cmd, a = sys.argv[1], sys.argv[2:]
if cmd == "csv":
    rows = list(csv.reader(open(a[0])))
    head, body = rows[0], rows[1:]
    assert len(body) == int(a[1]), (len(body), a[1])
    std = [i for i, h in enumerate(head) if h.startswith("std_")]
    assert len(std) == 4, head
    assert all(float(r[i]) > 0 for r in body for i in std), "std <= 0"
elif cmd == "rmse":
    j = json.load(open(a[0]))
    assert j["status"] == "ok", j["status"]
    q = j["metrics"]["rmse_qpos"]
    assert q < float(a[1]), q
    print(q)
elif cmd == "skipped":
    j = json.load(open(a[0]))
    assert j["metrics"]["filter"]["skipped"] == int(a[1]), j["metrics"]["filter"]
elif cmd == "blank":
    rows = list(csv.reader(open(a[0])))
    col = rows[0].index(a[2])
    for k, r in enumerate(rows[1:]):
        if k % 2 == 0:
            r[col] = "nan"
    csv.writer(open(a[1], "w", newline="")).writerows(rows)
PY
py() { python3 "$TMP/check.py" "$@"; }

# 1. methods
declare -A rmse
for m in ekf ukf batch mhe; do
  extra=()
  [[ $m == ekf ]] && extra=(--png ekf.png)
  run "$EST" --quiet --method $m --csv $m.csv --out $m.json "${extra[@]}" "$CART" data.csv
  [[ $RC == 0 ]] || fail "$m: exit $RC: $ERR"
  py csv $m.csv 201 || fail "$m: CSV"
  rmse[$m]=$(py rmse $m.json 0.003) || fail "$m: RMSE"
done
[[ -s ekf.png ]] || fail "ekf: no PNG"
python3 -c "import sys; a, b = map(float, sys.argv[1:3]); sys.exit(abs(a - b) > 0.2 * a)" \
  "${rmse[ekf]}" "${rmse[ukf]}" || fail "ekf and ukf RMSE differ: ${rmse[ekf]} vs ${rmse[ukf]}"
run "$EST" --quiet --method ekf --jacobian fd --out fd.json "$CART" data.csv
[[ $RC == 0 ]] || fail "fd: exit $RC: $ERR"
py rmse fd.json 0.003 >/dev/null || fail "fd: RMSE"

# 2. NaN readings: sensor:cart_pos blank in rows 0, 2, 4, ... (101 of 201 steps)
py blank data.csv holes.csv sensor:cart_pos || fail "blanking"
run "$EST" --quiet --method ekf --sensor cart_pos --sensor pole_angle --out holes.json \
  "$CART" holes.csv
[[ $RC == 0 ]] || fail "holes: exit $RC: $ERR"
py skipped holes.json 101 || fail "holes: skipped count"

# 3. bad inputs
run "$EST" --sensor lidar "$CART" data.csv
[[ $RC == 1 && $ERR == *"'lidar'"* ]] || fail "unknown sensor: exit $RC: $ERR"
run "$EST" --frobnicate "$CART" data.csv
[[ $RC == 2 ]] || fail "unknown option: exit $RC"
run "$EST" --method kalman "$CART" data.csv
[[ $RC == 2 && $ERR == *"kalman"* ]] || fail "bad method: exit $RC: $ERR"
run "$EST" --help
[[ $RC == 0 && $OUT == *"--method"* ]] || fail "--help: exit $RC"
note "ok (rmse_qpos ekf ${rmse[ekf]}, ukf ${rmse[ukf]}, batch ${rmse[batch]}, mhe ${rmse[mhe]})"
