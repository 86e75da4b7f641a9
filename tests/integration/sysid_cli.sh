#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# End-to-end test of mjdiff-sysid: recordings written by its --generate mode with known "true"
# parameter values, fitted back from the model's own values.
#   1. arm (models/arm_box.xml): link masses, joint damping and armature, truths 20-25% from the
#      model's; noiseless: every value within 0.5%; noisy (1e-3 positions, 1e-2 velocities and
#      sensors, matching sigmas): within 3% and within 3 standard errors.
#   2. box: body:box:mass and the table's sliding friction (geom:table:friction[0]) from an arm
#      pushing the box (gravity-holding controls plus a joint-1 sweep torque; the box must move);
#      the box rests on the table through its corner spheres (friction 0.6, like the table), and a
#      contact takes the larger geom value, so the true table value is above 0.6 (0.75) and the fit
#      starts at the tie; noiseless: within 0.5%.
#   3. hopper (models/hopper.xml): the foot's sliding friction (geom:foot_geom:friction[0]) and
#      mjdiff:contact_stiffness from 0.5 s of small sinusoidal controls (landing, rocking, sliding);
#      the floor's friction is set to 0.5 in both generation and fit so that the foot's value is
#      the one contacts use (fits that start at the foot = floor tie of 0.9 end in a local minimum
#      below it); noiseless: within 0.5%.
#   4. humanoid (MuJoCo's /usr/share/mujoco/model/humanoid/humanoid.xml, skipped if absent): three
#      body masses and two joints' damping by name, 0.5 s of sinusoidal controls, noiseless: within
#      0.5% (full-range random controls whip its limbs to 50 rad/s and the fit fails).
#   5. --xml: the calibrated MJCF loads (mjdiff-demo), carries the fitted values (masses as
#      <inertial>, damping, armature; the hopper's friction and <custom> contact stiffness) and
#      regenerates the true recording.
#   6. bad inputs exit 1 (runtime) or 2 (usage) with a message naming the culprit, and leave no
#      report, no MJCF and no temporary file: no time column, a missing ctrl column, an unknown
#      column, an unknown parameter or field, an unparsable number, NaN, infinity, time going
#      backwards, parameters that cannot move (body:box:pos: a free body, geom:floor:size: a plane), bad options,
#      missing files; --help exits 0.
# Usage (ctest): bash sysid_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: sysid_cli.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: sysid_cli.sh BUILD_DIR SOURCE_DIR}
NAME=sysid_cli

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
SYSID="$BUILD_DIR/tools/mjdiff-sysid"
DEMO="$BUILD_DIR/tools/mjdiff-demo"
ARM="$SOURCE_DIR/models/arm_box.xml"
HOPPER="$SOURCE_DIR/models/hopper.xml"
HUMANOID=/usr/share/mujoco/model/humanoid/humanoid.xml
[[ -x "$SYSID" ]] || fail "missing $SYSID (build the project first)"
[[ -x "$DEMO" ]] || fail "missing $DEMO (build the project first)"
command -v python3 >/dev/null || fail "python3 not found (needed for the CSV and JSON checks)"

make_tmp mjdiff_sysid_cli
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"   # MuJoCo may write MUJOCO_LOG.TXT to the working directory
START=$SECONDS

# helpers: python3 py.py COMMAND ARGS...
cat >"$TMP/py.py" <<'EOF'
import csv, json, math, sys
import xml.etree.ElementTree as ET
cmd, a = sys.argv[1], sys.argv[2:]

def rows(path):
    r = list(csv.reader(open(path)))
    return r[0], [[float(x) for x in row] for row in r[1:]]

if cmd == 'check':  # check REPORT TOL NSE NAME=TRUE...: recovery within TOL (relative), and
                    # within NSE standard errors if NSE > 0; prints one line per parameter
    rep, tol, nse = json.load(open(a[0])), float(a[1]), float(a[2])
    truth = dict(s.rsplit('=', 1) for s in a[3:])
    ps = {p['name']: p for p in rep['metrics']['parameters']}
    bad = []
    if not rep['status'].startswith('converged'):
        bad.append('status %r' % rep['status'])
    for name, t in truth.items():
        t = float(t)
        if name not in ps:
            bad.append('%s missing from the report' % name)
            continue
        f, se = ps[name]['fitted'], ps[name]['stderr']
        err = (f - t) / t
        line = '%s: true %.6g fitted %.10g error %+.2g%%' % (name, t, f, 100 * err)
        if nse > 0:
            line += ' stderr %s' % ('%.3g (%+.2f se)' % (se, (f - t) / se) if se else se)
        print('  ' + line)
        if not abs(err) <= tol:
            bad.append('%s off by %.4g%% (limit %g%%)' % (name, 100 * err, 100 * tol))
        if nse > 0 and not (se is not None and se > 0 and abs(f - t) <= nse * se):
            bad.append('%s: |fitted - true| = %.3g exceeds %g standard errors (%s)'
                       % (name, abs(f - t), nse, se))
    m = rep['metrics']
    print('  status %s, %d iterations, loss %.4g -> %.4g, %.2f s'
          % (rep['status'], m['iterations'], m['loss_before'], m['loss_after'], m['wall_s']))
    if bad:
        print('FAILED: ' + '; '.join(bad))
        sys.exit(1)

elif cmd == 'boxmoves':  # boxmoves REC: the pushed box moves for a good part and stays on the table
    h, r = rows(a[0])
    c = {n: i for i, n in enumerate(h)}
    v = [math.hypot(x[c['qvel:box_free:0']], x[c['qvel:box_free:1']]) for x in r]
    frac = sum(1 for s in v if s > 1e-3) / len(v)
    disp = math.hypot(r[-1][c['qpos:box_free:0']] - r[0][c['qpos:box_free:0']],
                      r[-1][c['qpos:box_free:1']] - r[0][c['qpos:box_free:1']])
    zmin = min(x[c['qpos:box_free:2']] for x in r)
    print('  box moving in %.0f%% of samples, displaced %.1f mm, lowest z %.4f m'
          % (100 * frac, 1000 * disp, zmin))
    if frac < 0.3 or disp < 0.01 or zmin < 0.4:
        print('FAILED: the box is not pushed across the table')
        sys.exit(1)

elif cmd == 'hops':  # hops REC: the foot touches the floor for a good part and slides
    h, r = rows(a[0])
    c = {n: i for i, n in enumerate(h)}
    touch = sum(1 for x in r if x[c['sensor:foot_touch']] > 0) / len(r)
    slide = max(abs(x[c['qpos:rootx']]) for x in r)
    print('  foot on the floor in %.0f%% of samples, torso slides %.1f mm'
          % (100 * touch, 1000 * slide))
    if touch < 0.3 or slide < 0.01:
        print('FAILED: no ground contact with sliding in the recording')
        sys.exit(1)

elif cmd == 'same':  # same A B TOL: two recordings with the same columns agree within TOL
    ha, ra = rows(a[0])
    hb, rb = rows(a[1])
    if ha != hb or len(ra) != len(rb):
        print('FAILED: the recordings differ in columns or length')
        sys.exit(1)
    d = max(abs(x - y) for p, q in zip(ra, rb) for x, y in zip(p, q))
    print('  largest difference %.3g' % d)
    if not d <= float(a[2]):
        print('FAILED: the recordings differ by %.3g' % d)
        sys.exit(1)

elif cmd == 'xmlvalue':  # xmlvalue XML TAG NAME ATTR INDEX EXPECTED RTOL: an attribute's value
    # (TAG inertial: the <inertial> of body NAME; numeric: <custom><numeric name=NAME> data)
    root = ET.parse(a[0]).getroot()
    tag, name, attr, k, want, rtol = a[1], a[2], a[3], int(a[4]), float(a[5]), float(a[6])
    if tag == 'inertial':
        body = [b for b in root.iter('body') if b.get('name') == name]
        el = body[0].find('inertial') if body else None
    else:
        el = next((e for e in root.iter(tag) if e.get('name') == name), None)
    if el is None or el.get(attr) is None:
        print('FAILED: no %s %s with %s in %s' % (tag, name, attr, a[0]))
        sys.exit(1)
    got = float(el.get(attr).split()[k])
    print('  %s %s %s[%d] = %.10g' % (tag, name, attr, k, got))
    if not abs(got - want) <= rtol * abs(want):
        print('FAILED: %s %s %s is %.10g, expected %.10g' % (tag, name, attr, got, want))
        sys.exit(1)

elif cmd == 'ctrl':  # ctrl OUT DURATION DT MODE ARGS...: a ctrl CSV
    out, dur, dt, mode = a[0], float(a[1]), float(a[2]), a[3]
    n = int(round(dur / dt))
    with open(out, 'w') as f:
        if mode == 'push':  # arm_box: hold against gravity at the 'ready' keyframe, sweep joint 1
            f.write('time,' + ','.join('ctrl:motor%d' % i for i in range(1, 8)) + '\n')
            for k in range(n + 1):
                t = k * dt
                f.write('%.4f,%g,-0.195,0,-0.053,0,0,0\n' % (t, -0.06 if t >= 0.1 else 0))
        else:  # sine AMP HEADER_CSV: sinusoids for every ctrl column of HEADER_CSV
            amp = float(a[4])
            cols = [c for c in open(a[5]).readline().strip().split(',') if c.startswith('ctrl:')]
            f.write(','.join(['time'] + cols) + '\n')
            for k in range(n + 1):
                t = k * dt
                f.write(','.join(['%.4f' % t] + ['%.6f' % (amp * math.sin(
                    2 * math.pi * (1 + 0.37 * i) * t + i)) for i in range(len(cols))]) + '\n')

elif cmd == 'edit':  # edit IN OUT LINE COLUMN VALUE: set one field (LINE 1: the header); VALUE
                     # '-' on LINE 1 drops the column
    r = list(csv.reader(open(a[0])))
    line, col, val = int(a[2]), a[3], a[4]
    j = r[0].index(col)
    if line == 1 and val == '-':
        r = [x[:j] + x[j + 1:] for x in r]
    else:
        r[line - 1][j] = val
    with open(a[1], 'w') as f:
        csv.writer(f, lineterminator='\n').writerows(r)
EOF
py() { python3 "$TMP/py.py" "$@"; }

# fit NAME MODEL DATA [options...]: fit, report to NAME.json; fails on a nonzero exit
fit() {
  local name=$1
  shift
  run "$SYSID" --quiet --out "$TMP/$name.json" "$@"
  [[ $RC -eq 0 ]] || fail "$name: mjdiff-sysid exit $RC: $ERR"
  [[ -s "$TMP/$name.json" ]] || fail "$name: no report"
}
# generate NAME [options...] MODEL: write NAME.csv
generate() {
  local name=$1
  shift
  run "$SYSID" --quiet --generate "$TMP/$name.csv" "$@"
  [[ $RC -eq 0 && -s "$TMP/$name.csv" ]] || fail "$name: --generate exit $RC: $ERR"
}
# check NAME TOL NSE NAME=TRUE...
check() {
  local name=$1
  shift
  py check "$TMP/$name.json" "$@" >&2 || fail "$name: recovery failed (above)"
}

#---------------------------------- 1. arm ---------------------------------------------------------
# model values: link5 0.8 kg, link6 0.5 kg, joint2 damping 2, joint4 damping 1, joint1 armature 0.1
ARM_TRUE=(body:link5:mass=1.0 body:link6:mass=0.6 joint:joint2:damping=2.5
          joint:joint4:damping=1.25 joint:joint1:armature=0.12)
ARM_SET=()
ARM_PARAM=()
for s in "${ARM_TRUE[@]}"; do
  ARM_SET+=(--set "$s")
  ARM_PARAM+=(--param "${s%%=*}")
done
T0=$SECONDS
generate arm "${ARM_SET[@]}" --duration 1 --seed 1 "$ARM"
fit arm "${ARM_PARAM[@]}" --xml "$TMP/arm_cal.xml" "$ARM" "$TMP/arm.csv"
note "1. arm, noiseless ($((SECONDS - T0)) s):"
check arm 0.005 0 "${ARM_TRUE[@]}"

T0=$SECONDS
generate arm_noisy "${ARM_SET[@]}" --duration 1 --seed 1 --noise-qpos 1e-3 --noise-qvel 1e-2 \
  --noise-sensor 1e-2 "$ARM"
fit arm_noisy "${ARM_PARAM[@]}" --sigma-qpos 1e-3 --sigma-qvel 1e-2 --sigma-sensor 1e-2 "$ARM" \
  "$TMP/arm_noisy.csv"
note "1. arm, noisy ($((SECONDS - T0)) s):"
check arm_noisy 0.03 3 "${ARM_TRUE[@]}"

#---------------------------------- 2. box ---------------------------------------------------------
T0=$SECONDS
py ctrl "$TMP/push.csv" 1.5 0.01 push || fail "cannot write the push controls"
BOX_TRUE=(body:box:mass=0.5 "geom:table:friction[0]=0.75")
generate box --set "${BOX_TRUE[0]}" --set "${BOX_TRUE[1]}" --ctrl "$TMP/push.csv" --duration 1.5 \
  "$ARM"
note "2. box pushed by the arm:"
py boxmoves "$TMP/box.csv" >&2 || fail "box: recording (above)"
fit box --param body:box:mass --param "geom:table:friction[0]" "$ARM" "$TMP/box.csv"
note "2. box, noiseless ($((SECONDS - T0)) s):"
check box 0.005 0 "${BOX_TRUE[@]}"

#---------------------------------- 3. hopper ------------------------------------------------------
T0=$SECONDS
FLOOR="geom:floor:friction[0]=0.5"
HOP_TRUE=("geom:foot_geom:friction[0]=1.1" mjdiff:contact_stiffness=25000)
printf 'time,ctrl:thigh_motor,ctrl:leg_motor,ctrl:foot_motor\n' >"$TMP/hopper_head.csv"
py ctrl "$TMP/hop.csv" 0.5 0.01 sine 0.1 "$TMP/hopper_head.csv" || fail "cannot write hop controls"
generate hopper --set "$FLOOR" --set "${HOP_TRUE[0]}" --set "${HOP_TRUE[1]}" \
  --ctrl "$TMP/hop.csv" --duration 0.5 "$HOPPER"
note "3. hopper:"
py hops "$TMP/hopper.csv" >&2 || fail "hopper: recording (above)"
fit hopper --set "$FLOOR" --param "geom:foot_geom:friction[0]" --param mjdiff:contact_stiffness \
  --xml "$TMP/hopper_cal.xml" "$HOPPER" "$TMP/hopper.csv"
note "3. hopper, noiseless ($((SECONDS - T0)) s):"
check hopper 0.005 0 "${HOP_TRUE[@]}"

#---------------------------------- 4. humanoid ----------------------------------------------------
if [[ -f "$HUMANOID" ]]; then
  T0=$SECONDS
  # model values: right_thigh 4.75 kg, left_upper_arm 1.66 kg, head 3.05 kg, right_knee damping
  # 0.2, abdomen_y damping 5
  HUM_TRUE=(body:right_thigh:mass=5.7 body:left_upper_arm:mass=2.0 body:head:mass=3.6
            joint:right_knee:damping=0.25 joint:abdomen_y:damping=6)
  HUM_SET=()
  HUM_PARAM=()
  for s in "${HUM_TRUE[@]}"; do
    HUM_SET+=(--set "$s")
    HUM_PARAM+=(--param "${s%%=*}")
  done
  generate humanoid_head --duration 0.005 "$HUMANOID"   # its columns: the actuator names
  py ctrl "$TMP/hum_ctrl.csv" 0.5 0.005 sine 0.3 "$TMP/humanoid_head.csv" ||
    fail "cannot write the humanoid's controls"
  generate humanoid "${HUM_SET[@]}" --ctrl "$TMP/hum_ctrl.csv" --duration 0.5 "$HUMANOID"
  fit humanoid "${HUM_PARAM[@]}" "$HUMANOID" "$TMP/humanoid.csv"
  note "4. humanoid, noiseless ($((SECONDS - T0)) s):"
  check humanoid 0.005 0 "${HUM_TRUE[@]}"
else
  note "4. humanoid: SKIPPED ($HUMANOID not found)"
fi

#---------------------------------- 5. calibrated MJCF ---------------------------------------------
note "5. calibrated MJCF:"
[[ -s "$TMP/arm_cal.xml" ]] || fail "arm: --xml wrote no $TMP/arm_cal.xml"
run "$DEMO" --seconds 0.1 "$TMP/arm_cal.xml"
[[ $RC -eq 0 ]] || fail "mjdiff-demo cannot run the calibrated arm: exit $RC: $ERR"
X="$TMP/arm_cal.xml"
{ py xmlvalue "$X" inertial link5 mass 0 1.0 1e-6 && py xmlvalue "$X" inertial link6 mass 0 0.6 1e-6 &&
  py xmlvalue "$X" joint joint2 damping 0 2.5 1e-5 && py xmlvalue "$X" joint joint4 damping 0 1.25 1e-5 &&
  py xmlvalue "$X" joint joint1 armature 0 0.12 1e-5; } >&2 || fail "arm_cal.xml: fitted values (above)"
# the calibrated model (no --set) regenerates the recording made with the true values
generate arm_regen --duration 1 --seed 1 "$X"
py same "$TMP/arm.csv" "$TMP/arm_regen.csv" 1e-6 >&2 || fail "arm_cal.xml does not regenerate arm.csv"
X="$TMP/hopper_cal.xml"
run "$DEMO" --seconds 0.1 "$X"
[[ $RC -eq 0 ]] || fail "mjdiff-demo cannot run the calibrated hopper: exit $RC: $ERR"
{ py xmlvalue "$X" geom foot_geom friction 0 1.1 1e-5 &&
  py xmlvalue "$X" numeric mjdiff_contact_stiffness data 0 25000 1e-5; } >&2 ||
  fail "hopper_cal.xml: fitted values (above)"
generate hopper_regen --ctrl "$TMP/hop.csv" --duration 0.5 "$X"
py same "$TMP/hopper.csv" "$TMP/hopper_regen.csv" 1e-6 >&2 ||
  fail "hopper_cal.xml does not regenerate hopper.csv"
for f in "$TMP"/*.tmp*; do
  [[ -e $f ]] && fail "temporary file left behind: $f"
done

#---------------------------------- 6. bad inputs --------------------------------------------------
note "6. bad inputs:"
BAD="$TMP/bad"
mkdir -p "$BAD/out" || fail "cannot make $BAD"
REC="$TMP/arm.csv"
for e in "notime 1 time -" "noctrl 1 ctrl:motor3 -" "unkcol 1 qpos:joint3 qpos:jointX" \
         "badnum 5 qpos:joint2 1.2.3" "nan 6 qvel:joint4 nan" "inf 6 qvel:joint4 inf" \
         "back 7 time 0.001"; do
  read -r f line col val <<<"$e"
  py edit "$REC" "$BAD/$f.csv" "$line" "$col" "$val" || fail "cannot write $BAD/$f.csv"
done

# bad EXPECTED_RC PATTERN ARGS...: mjdiff-sysid ARGS (with --out and --xml into $BAD/out) exits
# EXPECTED_RC with PATTERN (extended regex) on stderr and leaves $BAD/out empty
bad() {
  local want=$1 pat=$2
  shift 2
  run "$SYSID" --quiet --out "$BAD/out/r.json" --xml "$BAD/out/r.xml" "$@"
  [[ $RC -eq $want ]] || fail "mjdiff-sysid $*: exit $RC, expected $want; stderr: $ERR"
  grep -Eq -- "$pat" <<<"$ERR" || fail "mjdiff-sysid $*: message does not name '$pat': $ERR"
  local left
  left=$(ls -A "$BAD/out")
  [[ -z $left ]] && return 0
  fail "mjdiff-sysid $*: left files behind: $left"
}
P=(--param body:link5:mass)
bad 1 "time" "${P[@]}" "$ARM" "$BAD/notime.csv"
bad 1 "ctrl:motor3" "${P[@]}" "$ARM" "$BAD/noctrl.csv"
bad 1 "jointX" "${P[@]}" "$ARM" "$BAD/unkcol.csv"
bad 1 "line 5.*1\.2\.3" "${P[@]}" "$ARM" "$BAD/badnum.csv"
bad 1 "qvel:joint4.*NaN" "${P[@]}" "$ARM" "$BAD/nan.csv"
bad 1 "qvel:joint4.*inf" "${P[@]}" "$ARM" "$BAD/inf.csv"
bad 1 "line 7.*time" "${P[@]}" "$ARM" "$BAD/back.csv"
bad 1 "nope" --param body:nope:mass "$ARM" "$REC"
bad 1 "masss" --param body:box:masss "$ARM" "$REC"
bad 1 "body:box:pos" --param body:box:pos "$ARM" "$REC"
bad 1 "geom:floor:size" --param geom:floor:size "$ARM" "$REC"
bad 1 "nope" "${P[@]}" --set body:nope:mass=1 "$ARM" "$REC"
bad 1 "missing\.csv" "${P[@]}" "$ARM" "$BAD/missing.csv"
bad 1 "missing\.xml" "${P[@]}" "$BAD/missing.xml" "$REC"
bad 2 "--bogus" --bogus "${P[@]}" "$ARM" "$REC"
bad 2 "--max-iter" --max-iter abc "${P[@]}" "$ARM" "$REC"
bad 2 "--sigma-qpos" --sigma-qpos 1e-3x "${P[@]}" "$ARM" "$REC"
bad 2 "--set" --set body:link5:mass=abc "${P[@]}" "$ARM" "$REC"
bad 2 "LO < HI" --param body:link5:mass=2:1 "$ARM" "$REC"
bad 2 "--param" "$ARM" "$REC"
bad 2 "data file" "${P[@]}" "$ARM"
# --generate failures leave no recording
for args in "--set body:nope:mass=1" "--ctrl $BAD/noctrl.csv" "--ctrl $BAD/missing.csv"; do
  # shellcheck disable=SC2086
  run "$SYSID" --quiet --generate "$BAD/out/g.csv" $args "$ARM"
  [[ $RC -eq 1 ]] || fail "--generate $args: exit $RC, expected 1; stderr: $ERR"
  [[ -z $(ls -A "$BAD/out") ]] || fail "--generate $args: left files behind: $(ls -A "$BAD/out")"
done
run "$SYSID" --help
[[ $RC -eq 0 ]] || fail "--help: exit $RC"
grep -q -- "--param" <<<"$OUT" || fail "--help does not list --param: $OUT"
grep -q -- "--xml" <<<"$OUT" || fail "--help does not list --xml: $OUT"
note "6. bad inputs: all rejected with their messages, no files left"

note "PASS ($((SECONDS - START)) s)"
