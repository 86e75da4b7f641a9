#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# mjdiff-sysid --mlp (tools/sysid/mlpdyn.c): a pure network dynamics model x' = x + f(x, u) of
# the reacher, trained briefly on four random-control recordings of 2 s and measured on a chirp
# recording by --predict --mlp-weights.
#   1. training writes the .npz (no .tmp left) with progress lines; numpy reads the documented
#      arrays (format, sizes 6 32 32 4, input_mean, input_std, layers.K.weight and bias) and the
#      file's network applied to a training recording gives its one-step differences (the output
#      normalisation folded into the last layer: relative RMS error < 0.3 per output).
#   2. --predict --mlp-weights: finite RMS errors at 0.1 s below 0.6 x those of the zero model
#      x' = x (the state never changes; computed here from the recording), at 0.5 s below them
#      (measured: 0.1 s 0.37 and 0.18 x, 0.5 s 0.52 and 0.16 x); a zero network written
#      by numpy gives exactly that zero-model error (the stepper and the loader of numpy files).
#   3. refused with exit 1 and a message naming the cause: a ball joint (training and predict), an
#      actuator with an activation state, weights of another shape (both shapes named), a
#      recording without a usable transition (no qvel columns); usage errors (exit 2): --mlp with
#      --param, --mlp without --weights, --mlp-weights without --predict.
# Usage (ctest): bash sysid_mlp.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: sysid_mlp.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: sysid_mlp.sh BUILD_DIR SOURCE_DIR}
NAME=sysid_mlp

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
SYSID="$BUILD_DIR/tools/mjdiff-sysid"
REACHER="$SOURCE_DIR/models/reacher.xml"
[[ -x "$SYSID" ]] || fail "missing $SYSID (build the project first)"
command -v python3 >/dev/null || fail "python3 not found (needed for the CSV and JSON checks)"
numpy_python
make_tmp mjdiff_sysid_mlp
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"

cat >"$TMP/py.py" <<'EOF'
import csv, json, math, sys
cmd, a = sys.argv[1], sys.argv[2:]
def rows(path):
    r = list(csv.reader(open(path)))
    return r[0], [[float(x) for x in row] for row in r[1:]]
if cmd == 'zero':  # zero REC H JOINT: RMS error at horizon H steps of x' = x, as sysid_predict
    h, r = rows(a[0])
    H, c = int(a[1]), h.index('qpos:' + a[2])
    q = [row[c] for row in r]
    T, s, n = len(q) - 1, 0.0, 0
    for k0 in range(0, T - H + 1, H):
        for k in range(k0 + 1, k0 + H + 1):
            s += (q[k] - q[k0]) ** 2
            n += 1
    print('%.9g' % math.sqrt(s / n))
elif cmd == 'rms':  # rms REPORT I JOINT: the predict report's RMS of a joint at horizon I
    rep = json.load(open(a[0]))
    j = [x for x in rep['metrics']['horizons'][int(a[1])]['joints'] if x['joint'] == a[2]]
    print('%.9g' % j[0]['rms'] if j and j[0]['rms'] is not None else 'nan')
elif cmd == 'less':  # less X Y [F]: exit 0 if X and Y are finite and X < F Y
    x, y, f = float(a[0]), float(a[1]), float(a[2]) if len(a) > 2 else 1.0
    sys.exit(0 if math.isfinite(x) and math.isfinite(y) and x < f * y else 1)
elif cmd == 'near':  # near X Y TOL: |X - Y| <= TOL |Y|
    x, y, t = float(a[0]), float(a[1]), float(a[2])
    sys.exit(0 if math.isfinite(x) and abs(x - y) <= t * abs(y) else 1)
elif cmd == 'noqvel':  # noqvel IN OUT: the recording without its qvel columns
    h, r = rows(a[0])
    keep = [i for i, n in enumerate(h) if not n.startswith('qvel:')]
    with open(a[1], 'w') as f:
        f.write(','.join(h[i] for i in keep) + '\n')
        for row in r:
            f.write(','.join(repr(row[i]) for i in keep) + '\n')
EOF
cat >"$TMP/np.py" <<'EOF'
import sys
import numpy as np
cmd, a = sys.argv[1], sys.argv[2:]
if cmd == 'check':  # check W.npz REC.csv: the documented arrays; the network gives x' - x
    z = np.load(a[0])
    need = ['format', 'spec', 'sizes', 'activations', 'input_mean', 'input_std']
    need += ['layers.%d.%s' % (k, p) for k in range(3) for p in ('weight', 'bias')]
    miss = [n for n in need if n not in z.files]
    assert not miss, 'missing arrays %s' % miss
    assert str(z['format']) == 'mjdiff.mlp.v1', z['format']
    assert list(z['sizes']) == [6, 32, 32, 4], z['sizes']
    assert list(z['activations']) == ['tanh', 'tanh'], z['activations']
    assert z['input_mean'].shape == (6,) and z['input_std'].shape == (6,)
    assert z['layers.0.weight'].shape == (32, 6) and z['layers.2.weight'].shape == (4, 32)
    assert z['layers.2.bias'].shape == (4,)
    r = np.genfromtxt(a[1], delimiter=',', names=True)
    X = np.stack([r['qposshoulder'], r['qposelbow'], r['qvelshoulder'], r['qvelelbow']], 1)
    U = np.stack([r['ctrlshoulder'], r['ctrlelbow']], 1)
    h = (np.concatenate([X[:-1], U[:-1]], 1) - z['input_mean']) / z['input_std']
    for k in range(3):
        h = h @ z['layers.%d.weight' % k].T + z['layers.%d.bias' % k]
        if k < 2:
            h = np.tanh(h)
    Y = X[1:] - X[:-1]
    rel = np.sqrt(((h - Y) ** 2).mean(0)) / Y.std(0)
    print('relative RMS error of x\' - x per output: %s' % np.array2string(rel, precision=3))
    assert np.all(rel < 0.3), rel
elif cmd == 'zero':  # zero W.npz OUT.npz: the same arrays, every weight and bias zero
    z = np.load(a[0])
    d = {k: (np.zeros_like(z[k]) if k.startswith('layers.') else z[k]) for k in z.files}
    np.savez(a[1], **d)
EOF
py() { python3 "$TMP/py.py" "$@"; }

# recordings of the reacher: four of random controls to train on, a chirp held out
for s in 1 2 3 4; do
  run "$SYSID" --generate "$TMP/train$s.csv" --duration 2 --seed "$s" "$REACHER"
  [[ $RC -eq 0 ]] || fail "generate train$s: exit $RC: $ERR"
done
run "$SYSID" --generate "$TMP/test.csv" --duration 2 --ctrl chirp --seed 7 "$REACHER"
[[ $RC -eq 0 ]] || fail "generate test: exit $RC: $ERR"

# 1. training
run "$SYSID" --mlp mlp:32,32 --weights "$TMP/w.npz" --epochs 200 --lr 3e-3 --seed 3 "$REACHER" \
  "$TMP"/train?.csv
[[ $RC -eq 0 ]] || fail "training: exit $RC: $ERR"
[[ -s "$TMP/w.npz" ]] || fail "training wrote no w.npz"
[[ ! -e "$TMP/w.npz.tmp" ]] || fail "training left w.npz.tmp behind"
grep -q "epoch *200/200 *train mse" <<<"$ERR" || fail "no progress line of the last epoch: $ERR"
run "$SYSID" --quiet --mlp mlp:32,32 --weights "$TMP/q.npz" --epochs 2 "$REACHER" "$TMP/train1.csv"
[[ $RC -eq 0 && -z "$ERR" ]] || fail "--quiet training: exit $RC, stderr '$ERR'"
"$PYNP" "$TMP/np.py" check "$TMP/w.npz" "$TMP/train1.csv" >&2 || fail "w.npz: numpy check (above)"

# 2. prediction against the zero model
run "$SYSID" --predict --mlp-weights "$TMP/w.npz" --horizon 0.1 --horizon 0.5 \
  --out "$TMP/pred.json" "$REACHER" "$TMP/test.csv"
[[ $RC -eq 0 ]] || fail "predict: exit $RC: $ERR"
for j in shoulder elbow; do
  e1=$(py rms "$TMP/pred.json" 0 $j)
  z1=$(py zero "$TMP/test.csv" 10 $j)
  e5=$(py rms "$TMP/pred.json" 1 $j)
  z5=$(py zero "$TMP/test.csv" 50 $j)
  note "$j: RMS error 0.1 s $e1 rad (zero model $z1), 0.5 s $e5 rad (zero model $z5)"
  py less "$e1" "$z1" 0.6 || fail "$j: 0.1 s error $e1 is not below 0.6 x the zero model's $z1"
  py less "$e5" "$z5" || fail "$j: 0.5 s error $e5 is not below the zero model's $z5"
done
"$PYNP" "$TMP/np.py" zero "$TMP/w.npz" "$TMP/zero.npz" || fail "cannot write zero.npz"
run "$SYSID" --predict --mlp-weights "$TMP/zero.npz" --horizon 0.5 --out "$TMP/zero.json" \
  "$REACHER" "$TMP/test.csv"
[[ $RC -eq 0 ]] || fail "predict with the zero network: exit $RC: $ERR"
for j in shoulder elbow; do
  e=$(py rms "$TMP/zero.json" 0 $j)
  z=$(py zero "$TMP/test.csv" 50 $j)
  py near "$e" "$z" 1e-6 || fail "$j: zero network's error $e differs from the zero model's $z"
done

# 3. refusals
cat >"$TMP/ball.xml" <<'EOF'
<mujoco>
  <worldbody>
    <body name="b" pos="0 0 1">
      <joint name="swing" type="ball"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>
EOF
run "$SYSID" --generate "$TMP/ball.csv" --duration 0.2 "$TMP/ball.xml"
[[ $RC -eq 0 ]] || fail "generate ball: exit $RC: $ERR"
run "$SYSID" --mlp mlp:8 --weights "$TMP/b.npz" "$TMP/ball.xml" "$TMP/ball.csv"
[[ $RC -eq 1 && "$ERR" == *"joint 'swing'"*"ball joint"* ]] || fail "ball training: exit $RC: $ERR"
[[ ! -e "$TMP/b.npz" ]] || fail "ball training wrote b.npz"
run "$SYSID" --predict --mlp-weights "$TMP/w.npz" "$TMP/ball.xml" "$TMP/ball.csv"
[[ $RC -eq 1 && "$ERR" == *"joint 'swing'"* ]] || fail "ball predict: exit $RC: $ERR"

cat >"$TMP/pend.xml" <<'EOF'
<mujoco>
  <worldbody>
    <body name="p" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="m" joint="hinge" ctrllimited="true" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
EOF
run "$SYSID" --generate "$TMP/pend.csv" --duration 0.5 "$TMP/pend.xml"
[[ $RC -eq 0 ]] || fail "generate pendulum: exit $RC: $ERR"
run "$SYSID" --predict --mlp-weights "$TMP/w.npz" "$TMP/pend.xml" "$TMP/pend.csv"
[[ $RC -eq 1 && "$ERR" == *"w.npz"*"6 inputs and 4 outputs"*"3 inputs"*"2 outputs"* ]] ||
  fail "wrong-shape weights: exit $RC: $ERR"

FILTER='<general name="m" joint="hinge" dyntype="filter" dynprm="0.1"'
sed "s|<motor name=\"m\" joint=\"hinge\"|$FILTER|" "$TMP/pend.xml" >"$TMP/act.xml"
run "$SYSID" --mlp mlp:8 --weights "$TMP/a.npz" "$TMP/act.xml" "$TMP/pend.csv"
[[ $RC -eq 1 && "$ERR" == *"actuator 'm'"* ]] || fail "activation state: exit $RC: $ERR"

py noqvel "$TMP/train1.csv" "$TMP/noqvel.csv"
run "$SYSID" --mlp mlp:8 --weights "$TMP/n.npz" "$REACHER" "$TMP/noqvel.csv"
[[ $RC -eq 1 && "$ERR" == *"noqvel.csv: no usable transition"* ]] ||
  fail "recording without qvel: exit $RC: $ERR"

run "$SYSID" --mlp mlp:8 --weights "$TMP/x.npz" --param joint:*:damping "$REACHER" "$TMP/train1.csv"
[[ $RC -eq 2 && "$ERR" == *"--param"* ]] || fail "--mlp with --param: exit $RC: $ERR"
run "$SYSID" --mlp mlp:8 "$REACHER" "$TMP/train1.csv"
[[ $RC -eq 2 && "$ERR" == *"--weights"* ]] || fail "--mlp without --weights: exit $RC: $ERR"
run "$SYSID" --mlp-weights "$TMP/w.npz" --param joint:*:damping "$REACHER" "$TMP/train1.csv"
[[ $RC -eq 2 && "$ERR" == *"--predict"* ]] || fail "--mlp-weights without --predict: exit $RC: $ERR"

note "ok"
