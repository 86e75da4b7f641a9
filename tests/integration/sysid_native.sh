#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# mjdiff-sysid --generate --plant native: recordings of MuJoCo's own mj_step (hard constraints and
# its solver), the stand-in for a real system in scripts/calibrate_native.sh.
#   1. a pendulum without contacts, limits or other constraints: the smooth model has nothing to
#      replace, so native and smooth recordings (random controls, noise) agree to 1e-9.
#   2. arm_box pushed along by joint 1: native and smooth recordings differ (guard), and the box
#      rests as MuJoCo's solver holds it, within 0.05 mm of the table top, while the smooth model
#      (its soft numerics) sinks it more than 0.1 mm.
#   3. --set reaches the native plant: --set geom:table:friction[0]=0.8 gives byte for byte the
#      recording of an MJCF with the table's friction 0.8, and differs from the one without it;
#      --set body:box:mass=0.5 changes the native recording.
#   4. usage: --plant other, or --plant without --generate, exit 2 naming the option.
# Usage (ctest): bash sysid_native.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: sysid_native.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: sysid_native.sh BUILD_DIR SOURCE_DIR}
NAME=sysid_native

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
SYSID="$BUILD_DIR/tools/mjdiff-sysid"
ARM="$SOURCE_DIR/models/arm_box.xml"
[[ -x "$SYSID" ]] || fail "missing $SYSID (build the project first)"
command -v python3 >/dev/null || fail "python3 not found (needed for the CSV checks)"
make_tmp mjdiff_sysid_native
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"

cat >"$TMP/py.py" <<'EOF'
import csv, sys
cmd, a = sys.argv[1], sys.argv[2:]
def rows(path):
    r = list(csv.reader(open(path)))
    return r[0], [[float(x) for x in row] for row in r[1:]]
if cmd == 'diff':  # diff A B: the largest difference of two recordings with the same columns
    ha, ra = rows(a[0])
    hb, rb = rows(a[1])
    if ha != hb or len(ra) != len(rb):
        print('columns or length differ')
        sys.exit(1)
    print('%.3g' % max(abs(x - y) for p, q in zip(ra, rb) for x, y in zip(p, q)))
elif cmd == 'col':  # col REC NAME ROW: one value (ROW -1: the last)
    h, r = rows(a[0])
    print('%.9g' % r[int(a[2])][h.index(a[1])])
elif cmd == 'push':  # push OUT: arm_box held against gravity, joint 1 sweeping (the box slides)
    with open(a[0], 'w') as f:
        f.write('time,' + ','.join('ctrl:motor%d' % i for i in range(1, 8)) + '\n')
        for k in range(151):
            t = k * 0.01
            f.write('%.4f,%g,-0.195,0,-0.053,0,0,0\n' % (t, -0.06 if t >= 0.1 else 0))
EOF
py() { python3 "$TMP/py.py" "$@"; }
generate() {
  local name=$1
  shift
  run "$SYSID" --quiet --generate "$TMP/$name.csv" "$@"
  [[ $RC -eq 0 && -s "$TMP/$name.csv" ]] || fail "$name: --generate exit $RC: $ERR"
}
# below X LIMIT: X <= LIMIT (numbers)
below() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

#---------------------------------- 1. no constraints ----------------------------------------------
cat >"$TMP/pendulum.xml" <<'EOF'
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="hinge" gear="1" ctrllimited="true" ctrlrange="-1 1"/></actuator>
</mujoco>
EOF
NOISE=(--noise-qpos 1e-3 --noise-qvel 1e-2 --seed 3 --duration 1)
generate pend_native --plant native "${NOISE[@]}" "$TMP/pendulum.xml"
generate pend_smooth "${NOISE[@]}" "$TMP/pendulum.xml"
d=$(py diff pend_native.csv pend_smooth.csv) || fail "1. pendulum recordings: $d"
note "1. pendulum, native vs smooth: largest difference $d"
below "$d" 1e-9 || fail "1. native and smooth differ by $d on a model without constraints"

#---------------------------------- 2. arm_box: hard contacts --------------------------------------
py push "$TMP/push.csv" || fail "cannot write push.csv"
generate box_native --plant native --ctrl "$TMP/push.csv" --duration 1.5 "$ARM"
generate box_smooth --ctrl "$TMP/push.csv" --duration 1.5 "$ARM"
d=$(py diff box_native.csv box_smooth.csv) || fail "2. arm_box recordings: $d"
zn=$(py col box_native.csv qpos:box_free:2 40)   # at rest at 0.08 s, before the push reaches it
zs=$(py col box_smooth.csv qpos:box_free:2 40)
depth_n=$(python3 -c "print(f'{(0.425 - $zn) * 1e3:.4f}')")
depth_s=$(python3 -c "print(f'{(0.425 - $zs) * 1e3:.4f}')")
note "2. arm_box: native vs smooth differ by up to $d; box rest depth native $depth_n mm, smooth $depth_s mm"
below 1e-4 "$d" || fail "2. native and smooth recordings agree ($d): is --plant native ignored?"
below "${depth_n#-}" 0.05 || fail "2. native box rests $depth_n mm deep (MuJoCo's solver: < 0.05)"
below 0.1 "$depth_s" || fail "2. smooth box rests only $depth_s mm deep (guard: expected > 0.1)"

#---------------------------------- 3. --set on the native plant -----------------------------------
python3 - "$ARM" "$TMP/arm_table08.xml" <<'PY' || fail "3. cannot write the variant"
import re, sys
x, n = re.subn(r'(<geom name="table"[^>]*?friction=")0\.6 ', r'\g<1>0.8 ', open(sys.argv[1]).read())
assert n == 1
open(sys.argv[2], 'w').write(x)
PY
generate set_native --plant native --set 'geom:table:friction[0]=0.8' --ctrl "$TMP/push.csv" \
  --duration 1.5 "$ARM"
generate var_native --plant native --ctrl "$TMP/push.csv" --duration 1.5 "$TMP/arm_table08.xml"
cmp -s set_native.csv var_native.csv || fail "3. --set friction and the MJCF variant differ: $(py diff set_native.csv var_native.csv)"
d=$(py diff set_native.csv box_native.csv) || fail "3. $d"
below 1e-4 "$d" || fail "3. --set friction did not change the native recording ($d)"
generate mass_native --plant native --set body:box:mass=0.5 --ctrl "$TMP/push.csv" \
  --duration 1.5 "$ARM"
dm=$(py diff mass_native.csv box_native.csv) || fail "3. $dm"
below 1e-4 "$dm" || fail "3. --set mass did not change the native recording ($dm)"
note "3. --set friction = MJCF variant byte for byte (changes the recording by $d); mass changes it by $dm"

#---------------------------------- 4. usage -------------------------------------------------------
run "$SYSID" --generate "$TMP/x.csv" --plant hard "$ARM"
if [[ $RC -ne 2 ]] || ! grep -q -- "--plant" <<<"$ERR"; then fail "4. --plant hard: exit $RC: $ERR"; fi
run "$SYSID" --plant native --param body:box:mass "$ARM" box_native.csv
if [[ $RC -ne 2 ]] || ! grep -q -- "--plant" <<<"$ERR"; then fail "4. --plant in a fit: exit $RC: $ERR"; fi
[[ -e "$TMP/x.csv" ]] && fail "4. a usage error left x.csv"
note "4. usage errors name --plant"
note "PASS"
