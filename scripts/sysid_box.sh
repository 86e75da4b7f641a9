#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# System identification end to end on the box of models/arm_box.xml: the arm pushes the box about
# 30 cm across the table; identify the box's mass and its sliding friction on the table from that
# push. A joint servo (gravity compensation + PD at 50 Hz) moves the fingertip behind the box and
# pushes along -y; it runs on the "true" system (re-simulated chunk by chunk), so the recording
# holds the torques it sent. Noise 1e-3 rad / 1 mm on positions (motion capture for the box), 1e-2
# on velocities. Fit from the model's defaults with mjdiff-sysid (exact-gradient
# Levenberg-Marquardt); print truth, initial, fitted and standard error; plot.
# Friction: MuJoCo gives a contact the larger of its two geoms' values, and the box's corner
# spheres and the table both carry 0.6, so the pair's coefficient is the table geom's value when
# that is larger. The truth, 0.8, is fitted as geom:table:friction[0] from the tie at 0.6 (where
# its derivative is half the one-sided one). A truth below 0.6 would be invisible.
#   scripts/sysid_box.sh               build if needed, generate, fit, tabulate, plot
#   scripts/sysid_box.sh --data-only   build if needed and write the recording and fit_args only
#                                      (used by scripts/bench_sysid.sh)
# Output in out/sysid_box/: data.csv (the recording), ctrl.csv (the servo's torques), fit_args
# (mjdiff-sysid's fit arguments, one a line), fit.json (report), fit.log (progress),
# calibrated.xml, table.txt, loss.png (loss per iteration), traj.png (box x, y, heading and joint 1:
# recording, simulation with initial and fitted values).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case=box
model="$root/models/arm_box.xml"
out="$root/out/sysid_$case"
data_only=0
[[ ${1:-} == --data-only ]] && data_only=1

# true values (NAME=VALUE), the parameters fitted
truth=(body:box:mass=0.5 "geom:table:friction[0]=0.8")
duration=2
noise=(--noise-qpos 1e-3 --noise-qvel 1e-2)
fitopt=(--sigma-qpos 1e-3 --sigma-qvel 1e-2)
# trajectory panels: CSV column (yaw:JOINT: heading of a free joint) and label
panels=(qpos:box_free:0 "box x (m)" qpos:box_free:1 "box y (m)" yaw:box_free "box heading (rad)"
        qpos:joint1 "joint 1 (rad)")

# the pushing servo: python3 -c "$SERVO" SYSID MODEL OUT.csv DURATION [generate options...]
read -r -d '' SERVO <<'EOF' || true
import csv, math, os, subprocess, sys
sysid, model, out, D, extra = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
h, chunk = 0.002, 10                        # model timestep; servo period 10 steps (50 Hz)
T = int(round(D / h))
gear = [40, 60, 30, 40, 15, 15, 5]
kp = [100, 150, 60, 80, 20, 20, 3]          # N m / rad
kd = [10, 15, 6, 8, 1, 1, 0.2]              # N m s / rad
BASE, SHOULDER = (0.1, 0.0), 0.65           # joint 1 axis (x, y), joint 2 height (m)
LA, LB, LC = 0.4, 0.38, 0.18                # shoulder-elbow, elbow-wrist, wrist-fingertip (m)
# the arm in its vertical plane (joints 3, 5, 7 at 0), per body: pitch joint (index or None),
# length, [(mass, centre of mass along the body)]
CHAIN = [(1, 0.2, [(1.5, 0.1)]), (None, 0.2, [(1.2, 0.1)]), (3, 0.2, [(1.0, 0.1)]),
         (None, 0.18, [(0.8, 0.09)]), (5, 0.08, [(0.5, 0.04)]), (None, 0, [(0.2, 0.04), (0.1, 0.1)])]
def potential(q):
    z, phi, V = SHOULDER, 0.0, 0.0
    for j, length, masses in CHAIN:
        phi += q[j] if j is not None else 0
        V += sum(m * 9.81 * (z + s * math.cos(phi)) for m, s in masses)
        z += length * math.cos(phi)
    return V
def gravity(q):                             # torques that hold the arm: dV/dq
    g = [0.0] * 7
    for j in (1, 3, 5):
        qp, qm = list(q), list(q)
        qp[j] += 1e-6
        qm[j] -= 1e-6
        g[j] = (potential(qp) - potential(qm)) / 2e-6
    return g
def ik(x, y, z):                            # joint angles: fingertip centre at (x, y, z), pointing down
    wr, wz = math.hypot(x - BASE[0], y - BASE[1]), z + LC - SHOULDER
    e = math.acos(max(-1, min(1, (wr * wr + wz * wz - LA * LA - LB * LB) / (2 * LA * LB))))
    a = math.atan2(wr, wz) - math.atan2(LB * math.sin(e), LA + LB * math.cos(e))
    return [math.atan2(y - BASE[1], x - BASE[0]), a, 0, e, 0, math.pi - a - e, 0]
def fingertip(t):                           # keyframe point -> behind the box -> along -y
    p0 = (0.1 + 0.4064 * math.cos(0.66), 0.4064 * math.sin(0.66))
    p1, p2 = (0.45, 0.21), (0.45, -0.15)
    if t < 0.4:
        s, a, b = 0.5 - 0.5 * math.cos(math.pi * t / 0.4), p0, p1
    else:
        s, a, b = min(1, (t - 0.4) / (D - 0.5)), p1, p2
        s = s * s * (3 - 2 * s)
    return a[0] + (b[0] - a[0]) * s, a[1] + (b[1] - a[1]) * s
Q = [ik(*fingertip(k * h), 0.422) for k in range(T + 2)]
U = []
def state(n):                               # joint positions and velocities after n steps of U
    with open(out, 'w') as f:
        f.write('time,' + ','.join(f'ctrl:motor{i + 1}' for i in range(7)) + '\n')
        for k in range(n):
            f.write(f'{k * h:.4f},' + ','.join(f'{x:.6f}' for x in U[k]) + '\n')
    subprocess.run([sysid, '--generate', out + '.sim.csv', '--ctrl', out, '--duration',
                    f'{n * h:.6f}', '--quiet'] + extra + [model], check=True)
    rows = list(csv.reader(open(out + '.sim.csv')))
    last = dict(zip(rows[0], map(float, rows[n + 1])))
    return ([last[f'qpos:joint{i + 1}'] for i in range(7)],
            [last[f'qvel:joint{i + 1}'] for i in range(7)])
for k in range(0, T, chunk):
    q, v = state(k) if k else (Q[0], [0.0] * 7)
    g = gravity(Q[k])
    u = [max(-1, min(1, (g[j] + kp[j] * (Q[k][j] - q[j]) +
                         kd[j] * ((Q[k + 1][j] - Q[k][j]) / h - v[j])) / gear[j])) for j in range(7)]
    U += [u] * min(chunk, T - k)
state(T)
os.remove(out + '.sim.csv')
EOF

# helpers: py strip IN OUT | loss LOG OUT | table JSON NAME=TRUTH... | sets JSON | traj OUT REC
# INIT FIT COL...
read -r -d '' PY <<'EOF' || true
import csv, json, math, re, sys
cmd, a = sys.argv[1], sys.argv[2:]
def read(path):
    rows = list(csv.reader(open(path)))
    return rows[0], [[float(x) for x in r] for r in rows[1:]]
def column(head, rows, name):
    if name.startswith('yaw:'):  # heading of a free joint's quaternion w x y z
        j = name[4:]
        w, x, y, z = (column(head, rows, f'qpos:{j}:{k}') for k in range(3, 7))
        return [math.atan2(2 * (a * d + b * c), 1 - 2 * (c * c + d * d))
                for a, b, c, d in zip(w, x, y, z)]
    i = head.index(name)
    return [r[i] for r in rows]
if cmd == 'strip':  # drop sensor columns: the recording holds joint positions and velocities
    rows = list(csv.reader(open(a[0])))
    keep = [i for i, c in enumerate(rows[0]) if not c.startswith('sensor:')]
    with open(a[1], 'w') as f:
        csv.writer(f, lineterminator='\n').writerows([r[i] for i in keep] for r in rows)
elif cmd == 'loss':  # progress lines " iter  F  |step|  lambda  evals" -> iter F evals
    with open(a[1], 'w') as f:
        f.write('# iter F evals\n')
        for line in open(a[0]):
            m = re.match(r'\s*(\d+)\s+([-+0-9.eE]+)\s+\S+\s+\S+\s+(\d+)\s*$', line)
            if m: f.write(f'{m[1]} {m[2]} {m[3]}\n')
elif cmd == 'table':
    r = json.load(open(a[0])); mt = r['metrics']
    truth = dict(s.rsplit('=', 1) for s in a[1:])
    fmt = '{:<26} {:>11} {:>11} {:>11} {:>10} {:>8}'
    print(fmt.format('parameter', 'truth', 'initial', 'fitted', 'stderr', 'error'))
    g = lambda x: '-' if x is None else f'{x:.5g}'
    for p in mt['parameters']:
        t = float(truth[p['name']]) if p['name'] in truth else None
        err = f"{100 * (p['fitted'] - t) / t:+.2f}%" if t else '-'
        print(fmt.format(p['name'], g(t), g(p['initial']), g(p['fitted']), g(p['stderr']), err))
    print(f"status {r['status']}; loss {mt['loss_before']:.6g} -> {mt['loss_after']:.6g} "
          f"({mt['residuals']} residuals); {mt['iterations']} iterations, "
          f"{mt['rollouts']} rollouts, {mt['wall_s']:.2f} s")
elif cmd == 'sets':  # --set NAME=FITTED, one a line
    for p in json.load(open(a[0]))['metrics']['parameters']:
        print('--set'); print(f"{p['name']}={p['fitted']!r}")
elif cmd == 'traj':  # t, then per column: recording, initial, fitted
    sets = [read(f) for f in a[1:4]]
    cols = [[column(h, rows, c) for h, rows in sets] for c in a[4:]]
    t = column(*sets[0], 'time')
    n = min(len(t), *(len(s[1]) for s in sets))
    with open(a[0], 'w') as f:
        for k in range(n):
            f.write(f'{t[k]:.4f} ' + ' '.join(f'{v[k]:.6g}' for c in cols for v in c) + '\n')
EOF
py() { python3 -c "$PY" "$@"; }

# build (Release, build/), like scripts/demo.sh
"$root/scripts/setup.sh" >/dev/null
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" --target mjdiff-sysid >/dev/null
sysid="$root/build/tools/mjdiff-sysid"
mkdir -p "$out"
cd "$out"

# recording: true values, the servo's torques, noise
sets=()
params=()
for s in "${truth[@]}"; do
  sets+=(--set "$s")
  params+=(--param "${s%=*}")
done
echo "sysid_$case: servo pushing the box (re-simulated every 10 steps)"
python3 -c "$SERVO" "$sysid" "$model" ctrl.csv "$duration" "${sets[@]}"
"$sysid" --generate raw.csv "${sets[@]}" --duration "$duration" --ctrl ctrl.csv "${noise[@]}" \
  --quiet "$model"
py strip raw.csv data.csv
rm -f raw.csv
printf '%s\n' "${params[@]}" "${fitopt[@]}" "$model" "$out/data.csv" >fit_args
printf '%s\n' "${truth[@]}" >truth
echo "sysid_$case: recording $out/data.csv ($duration s)"
((data_only)) && exit 0

# fit from the model's defaults (progress on stderr, kept in fit.log)
mapfile -t fitargs <fit_args
"$sysid" "${fitargs[@]}" --out fit.json --xml calibrated.xml 2>&1 >/dev/null | tee fit.log >&2
py table fit.json "${truth[@]}" | tee table.txt

# simulations with initial and fitted values under the recorded controls
mapfile -t fitted < <(py sets fit.json)
"$sysid" --generate sim_initial.csv --duration "$duration" --ctrl data.csv --quiet "$model"
"$sysid" --generate sim_fitted.csv "${fitted[@]}" --duration "$duration" --ctrl data.csv \
  --quiet "$model"

# plots
cols=()
labels=()
for ((i = 0; i < ${#panels[@]}; i += 2)); do
  cols+=("${panels[i]}")
  labels+=("${panels[i + 1]}")
done
py loss fit.log loss.dat
py traj traj.dat data.csv sim_initial.csv sim_fitted.csv "${cols[@]}"
n=${#cols[@]}
gnuplot <<EOF
set terminal pngcairo size 900,600 noenhanced
set output 'loss.png'
set title 'sysid $case: loss per iteration (exact-gradient LM)'
set xlabel 'iteration'
set ylabel 'loss F = 1/2 |r|^2'
set logscale y
set grid
plot 'loss.dat' using 1:2 with linespoints pointtype 7 pointsize 0.6 title 'F'
EOF
{
  echo "set terminal pngcairo size 1200,$((250 * ((n + 1) / 2) + 60)) noenhanced"
  echo "set output 'traj.png'"
  echo "set multiplot layout $(((n + 1) / 2)),2 title 'sysid $case: recording (dots) vs simulation with initial (red, dashed) and fitted (blue) parameters'"
  echo "set grid"
  echo "unset key"
  for ((i = 0; i < n; i++)); do
    c=$((3 * i + 2))
    echo "set title '${labels[i]}'"
    [[ $i -ge $((n - 2)) ]] && echo "set xlabel 'time (s)'"
    echo "plot 'traj.dat' every 10 using 1:$c with points pointtype 7 pointsize 0.4 lc rgb 'black' title 'recording', \
      '' using 1:$((c + 1)) with lines dt 2 lw 1.5 lc rgb 'red' title 'initial', \
      '' using 1:$((c + 2)) with lines lw 1.5 lc rgb 'blue' title 'fitted'"
  done
  echo "unset multiplot"
} | gnuplot
echo "sysid_$case: wrote $out/{table.txt,fit.json,calibrated.xml,loss.png,traj.png}"
