#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# mjdiff-sysid's defaults that must not mislead (issue 18 items 4-6), on short arm recordings
# (models/arm_box.xml, 500 Hz):
#   1. blocks = dense: the Schur-complement solver (default) and the dense Jacobian (--solver
#      dense) reach the same fit (values within 1e-7 relative, standard errors within 1e-5, the
#      same iterations) on a small fit with noise, 4 parameters, 0.1 s windows.
#   2. exit codes: a converged, well-posed fit exits 0 with reliable standard errors; --max-iter 0
#      takes no step (iterations 0, fitted = initial), exits 3 and withholds its standard errors
#      (stderr null, stderr_unreliable given); --max-iter 1 from far away exits 3 the same way.
#   3. an unmeasured box (its columns dropped) beside the measured arm: the arm's masses and
#      damping are recovered within 1% and 3 standard errors (the start states of the box are
#      fitted per window, the arm's come from the recording).
#   4. automatic windows: the report lists the continuation's stages (5, 20, 50 steps).
#   5. --predict: a table on stdout and JSON per horizon and joint; the true values predict better
#      than the bundled ones at every horizon; a recording shorter than a horizon, or than an
#      explicit --window, is named (exit 1).
# Usage (ctest): bash sysid_defaults.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: sysid_defaults.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: sysid_defaults.sh BUILD_DIR SOURCE_DIR}
NAME=sysid_defaults

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
SYSID="$BUILD_DIR/tools/mjdiff-sysid"
ARM="$SOURCE_DIR/models/arm_box.xml"
[[ -x "$SYSID" ]] || fail "missing $SYSID (build the project first)"
command -v python3 >/dev/null || fail "python3 not found (needed for the JSON checks)"
make_tmp mjdiff_sysid_defaults
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"

TRUTH=(body:link3:mass=1.0 body:link5:mass=0.7 joint:joint2:damping=1.6 joint:joint4:damping=0.8)
SETS=() PARAMS=()
for t in "${TRUTH[@]}"; do SETS+=(--set "$t"); PARAMS+=(--param "${t%%=*}"); done

run "$SYSID" --quiet --generate rec.csv "${SETS[@]}" --duration 0.6 --noise-qpos 1e-3 \
  --noise-qvel 1e-2 --seed 4 "$ARM"
[[ $RC -eq 0 ]] || fail "--generate exit $RC: $ERR"

# 1. blocks = dense
run "$SYSID" --quiet --window 50 "${PARAMS[@]}" --out blocks.json "$ARM" rec.csv
[[ $RC -eq 0 ]] || fail "blocks fit: exit $RC: $ERR"
run "$SYSID" --quiet --window 50 --solver dense "${PARAMS[@]}" --out dense.json "$ARM" rec.csv
[[ $RC -eq 0 ]] || fail "dense fit: exit $RC: $ERR"
python3 - blocks.json dense.json <<'EOF' || fail "blocks and dense fits differ"
import json, sys
b, d = (json.load(open(p)) for p in sys.argv[1:3])
bad = []
if b['metrics']['iterations'] != d['metrics']['iterations']:
    bad.append('iterations %d vs %d' % (b['metrics']['iterations'], d['metrics']['iterations']))
if not b['metrics']['iterations'] >= 2:
    bad.append('no real fit (%d iterations)' % b['metrics']['iterations'])
for pb, pd in zip(b['metrics']['parameters'], d['metrics']['parameters']):
    rel = abs(pb['fitted'] - pd['fitted']) / abs(pd['fitted'])
    srel = abs(pb['stderr'] - pd['stderr']) / pd['stderr']
    print('  %s: blocks %.10g dense %.10g (%.1e), stderr %.4g %.4g (%.1e)'
          % (pb['name'], pb['fitted'], pd['fitted'], rel, pb['stderr'], pd['stderr'], srel))
    if not rel <= 1e-7: bad.append('%s value differs by %.2g' % (pb['name'], rel))
    if not srel <= 1e-5: bad.append('%s stderr differs by %.2g' % (pb['name'], srel))
    if pb['fitted'] == pb['initial']: bad.append('%s did not move' % pb['name'])
if bad:
    print('FAILED: ' + '; '.join(bad))
    sys.exit(1)
EOF
note "1. blocks = dense"

# 2. exit codes and withheld standard errors
python3 - blocks.json <<'EOF' || fail "a converged fit is not reported as reliable"
import json, sys
r = json.load(open(sys.argv[1]))
ok = r['converged'] and r['reliable'] and all(p['stderr'] and p['stderr'] > 0 for p in r['metrics']['parameters'])
sys.exit(0 if ok else 1)
EOF
for it in 0 1; do
  run "$SYSID" --quiet --window 50 --max-iter $it "${PARAMS[@]}" --out it$it.json "$ARM" rec.csv
  [[ $RC -eq 3 ]] || fail "--max-iter $it: exit $RC, expected 3 (not converged); $ERR"
  python3 - it$it.json $it <<'EOF' || fail "--max-iter $it: report"
import json, sys
r, it = json.load(open(sys.argv[1])), int(sys.argv[2])
m = r['metrics']
bad = []
if r['converged'] or r['reliable']: bad.append('converged %s reliable %s' % (r['converged'], r['reliable']))
if m['iterations'] != it: bad.append('%d iterations' % m['iterations'])
for p in m['parameters']:
    if p.get('stderr') is not None: bad.append('%s: stderr given' % p['name'])
    if 'stderr_unreliable' not in p: bad.append('%s: no stderr_unreliable' % p['name'])
    if it == 0 and p['fitted'] != p['initial']: bad.append('%s moved' % p['name'])
print('  --max-iter %d: status %r, %d iterations' % (it, r['status'], m['iterations']))
if bad:
    print('FAILED: ' + '; '.join(bad))
    sys.exit(1)
EOF
done
note "2. exit codes"

# 3. the box unmeasured
python3 - rec.csv nobox.csv <<'EOF' || fail "cannot drop the box columns"
import csv, sys
r = list(csv.reader(open(sys.argv[1])))
keep = [i for i, h in enumerate(r[0]) if 'box' not in h]
assert len(keep) < len(r[0])
w = csv.writer(open(sys.argv[2], 'w'))
for row in r: w.writerow([row[i] for i in keep])
EOF
run "$SYSID" --quiet "${PARAMS[@]}" --out nobox.json "$ARM" nobox.csv
[[ $RC -eq 0 ]] || fail "box unmeasured: exit $RC: $ERR"
python3 - nobox.json "${TRUTH[@]}" <<'EOF' || fail "box unmeasured: wrong fit"
import json, sys
r = json.load(open(sys.argv[1]))
truth = dict(s.split('=') for s in sys.argv[2:])
bad = []
for p in r['metrics']['parameters']:
    t = float(truth[p['name']])
    e = (p['fitted'] - t) / t
    print('  %s: true %g fitted %.6g (%+.3f%%, %.2f se)' % (p['name'], t, p['fitted'], 100 * e,
          (p['fitted'] - t) / p['stderr']))
    if not abs(e) <= 0.01 or not abs(p['fitted'] - t) <= 3 * p['stderr']:
        bad.append(p['name'])
# 4. automatic windows
print('  windows', r['windows'])
if r['windows'] != [5, 20, 50]: bad.append('windows %s' % r['windows'])
if bad:
    print('FAILED: ' + ', '.join(bad))
    sys.exit(1)
EOF
note "3-4. box unmeasured, automatic windows"

# 5. predict
run "$SYSID" --predict --out pred0.json "$ARM" rec.csv
[[ $RC -eq 0 ]] || fail "--predict: exit $RC: $ERR"
grep -q "joint3" <<<"$OUT" || fail "--predict: no table on stdout: $OUT"
run "$SYSID" --predict "${SETS[@]}" --out pred1.json "$ARM" rec.csv
[[ $RC -eq 0 ]] || fail "--predict --set: exit $RC: $ERR"
python3 - pred0.json pred1.json <<'EOF' || fail "--predict: the true values do not predict better"
import json, sys
a, b = (json.load(open(p))['metrics']['horizons'] for p in sys.argv[1:3])
bad = []
if len(a) != 3 or not a[2]['whole']: bad.append('horizons %s' % [h['horizon_s'] for h in a])
for ha, hb in zip(a, b):
    ea = sum(j['rms'] ** 2 for j in ha['joints'] if j['joint'].startswith('joint'))
    eb = sum(j['rms'] ** 2 for j in hb['joints'] if j['joint'].startswith('joint'))
    print('  horizon %s: arm rms error %.3g (bundled) %.3g (true)' % (ha['horizon_s'], ea ** .5, eb ** .5))
    if not eb < ea: bad.append('horizon %s' % ha['horizon_s'])
if bad:
    print('FAILED: ' + '; '.join(bad))
    sys.exit(1)
EOF
run "$SYSID" --predict --horizon 5 "$ARM" rec.csv
[[ $RC -eq 1 ]] && grep -q "rec.csv.*shorter than the horizon" <<<"$ERR" || fail "--horizon 5: exit $RC: $ERR"
run "$SYSID" --quiet --window 1000 "${PARAMS[@]}" "$ARM" rec.csv
[[ $RC -eq 1 ]] && grep -q "rec.csv.*shorter than one shooting window" <<<"$ERR" ||
  fail "--window 1000: exit $RC: $ERR"
note "5. predict, too-short recordings"
note "PASS"
