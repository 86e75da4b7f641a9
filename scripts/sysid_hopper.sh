#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# System identification end to end on models/hopper.xml: identify the foot's sliding friction and
# the contact stiffness (mjdiff:contact_stiffness, the smooth model's model-wide value) from hops.
# A hop servo (PD on the leg joints at 100 Hz: crouch for 0.3 s, extend for 0.2 s; the hip also
# holds the torso upright) drops the hopper from its initial pose and hops it twice before it
# stumbles backwards; it runs on the "true" system (re-simulated chunk by chunk), so the recording
# holds the torques it sent. Noise 1 mm / 1e-3 rad on positions, 1e-2 on velocities. Fit from the
# model's defaults with mjdiff-sysid (exact-gradient Levenberg-Marquardt); print truth, initial,
# fitted and standard error; plot.
# Friction: MuJoCo gives a contact the larger of its two geoms' values; foot and floor both carry
# 0.9, so the foot's own value shows only above 0.9: the truth is 1.2 (a rubber sole), fitted from
# the tie at 0.9 (where its derivative is half the one-sided one).
#   scripts/sysid_hopper.sh               build if needed, generate, fit, tabulate, plot
#   scripts/sysid_hopper.sh --data-only   build if needed and write the recording and fit_args
#                                         only (used by scripts/bench_sysid.sh)
# Output in out/sysid_hopper/: data.csv (the recording), ctrl.csv (the servo's torques), fit_args
# (mjdiff-sysid's fit arguments, one a line), fit.json (report), fit.log (progress),
# calibrated.xml, table.txt, loss.png (loss per iteration), traj.png (joint positions: recording,
# simulation with initial and fitted values).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case=hopper
model="$root/models/hopper.xml"
out="$root/out/sysid_$case"
data_only=0
[[ ${1:-} == --data-only ]] && data_only=1

# true values (NAME=VALUE), the parameters fitted
truth=("geom:foot_geom:friction[0]=1.2" mjdiff:contact_stiffness=30000)
duration=1.5
noise=(--noise-qpos 1e-3 --noise-qvel 1e-2)
fitopt=(--sigma-qpos 1e-3 --sigma-qvel 1e-2)
# trajectory panels: CSV column and label
panels=(qpos:rootx "torso x (m)" qpos:rootz "torso z (m, from its start)" qpos:rooty
        "torso pitch (rad)" qpos:thigh_joint "hip (rad)" qpos:leg_joint "knee (rad)"
        qpos:foot_joint "ankle (rad)")

# the hop servo: python3 -c "$SERVO" SYSID MODEL OUT.csv DURATION [generate options...]
read -r -d '' SERVO <<'EOF' || true
import csv, os, subprocess, sys
sysid, model, out, D, extra = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
h, chunk, period = 0.002, 5, 0.5            # model timestep; servo period 5 steps; hop period (s)
T = int(round(D / h))
gear = [100, 100, 40]
names = ['thigh_joint', 'leg_joint', 'foot_joint']
U = []
def state(n):                               # qpos, qvel after n steps of U (by column name)
    with open(out, 'w') as f:
        f.write('time,ctrl:thigh_motor,ctrl:leg_motor,ctrl:foot_motor\n')
        for k in range(n):
            f.write(f'{k * h:.4f},' + ','.join(f'{x:.6f}' for x in U[k]) + '\n')
    subprocess.run([sysid, '--generate', out + '.sim.csv', '--ctrl', out, '--duration',
                    f'{n * h:.6f}', '--quiet'] + extra + [model], check=True)
    rows = list(csv.reader(open(out + '.sim.csv')))
    return dict(zip(rows[0], map(float, rows[n + 1])))
for k in range(0, T, chunk):
    s = state(k) if k else {}
    x = lambda c: s.get(c, 0.0)
    crouch = (k * h) % period < 0.6 * period
    target = [-0.6, 1.0, 0.0] if crouch else [0.0, 0.0, 0.0]   # hip, knee, ankle (rad)
    tau = [300 * (target[0] - x('qpos:thigh_joint')) - 20 * x('qvel:thigh_joint'),
           300 * (target[1] - x('qpos:leg_joint')) - 20 * x('qvel:leg_joint'),
           50 * (target[2] - x('qpos:foot_joint')) - 4 * x('qvel:foot_joint')]
    tau[0] += 400 * x('qpos:rooty') + 40 * x('qvel:rooty')     # torso upright
    U += [[max(-1, min(1, tau[j] / gear[j])) for j in range(3)]] * min(chunk, T - k)
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
echo "sysid_$case: servo hopping (re-simulated every 5 steps)"
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
