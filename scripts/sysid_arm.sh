#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# System identification end to end on the arm of models/arm_box.xml: simulate a recording with
# "true" link masses (links 2-7), joint damping and armature (joints 1-7), 20 parameters, under
# random motor torques (held 0.1 s) from the "ready" keyframe; add encoder noise (1e-3 rad on
# positions, 1e-2 rad/s on velocities; the box's pose 1 mm / 1e-3); fit the 20 parameters from the
# model's defaults with mjdiff-sysid (exact-gradient Levenberg-Marquardt); print truth, initial,
# fitted and standard error; plot. link1's mass is left out: its centre of mass lies on joint 1's
# axis, so it moves no joint.
#   scripts/sysid_arm.sh               build if needed, generate, fit, tabulate, plot
#   scripts/sysid_arm.sh --data-only   build if needed and write the recording and fit_args only
#                                      (used by scripts/bench_sysid.sh)
# Output in out/sysid_arm/: data.csv (the recording), fit_args (mjdiff-sysid's fit arguments, one a
# line), fit.json (report), fit.log (progress), calibrated.xml, table.txt, loss.png (loss per
# iteration), traj.png (joint positions: recording, simulation with initial and fitted values).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case=arm
model="$root/models/arm_box.xml"
out="$root/out/sysid_$case"
data_only=0
[[ ${1:-} == --data-only ]] && data_only=1

# true values (NAME=VALUE), the parameters fitted
truth=(
  body:link2:mass=1.8 body:link3:mass=1.0 body:link4:mass=1.2 body:link5:mass=0.7
  body:link6:mass=0.6 body:link7:mass=0.35
  joint:joint1:damping=2.5 joint:joint2:damping=1.6 joint:joint3:damping=1.3
  joint:joint4:damping=0.8 joint:joint5:damping=0.6 joint:joint6:damping=0.4
  joint:joint7:damping=0.25
  joint:joint1:armature=0.12 joint:joint2:armature=0.08 joint:joint3:armature=0.06
  joint:joint4:armature=0.04 joint:joint5:armature=0.06 joint:joint6:armature=0.07
  joint:joint7:armature=0.04
)
duration=2
noise=(--noise-qpos 1e-3 --noise-qvel 1e-2)
fitopt=(--sigma-qpos 1e-3 --sigma-qvel 1e-2)
# trajectory panels: CSV column and label
panels=(qpos:joint1 "joint 1 (rad)" qpos:joint2 "joint 2 (rad)" qpos:joint3 "joint 3 (rad)"
        qpos:joint4 "joint 4 (rad)" qpos:joint5 "joint 5 (rad)" qpos:joint6 "joint 6 (rad)"
        qpos:joint7 "joint 7 (rad)")

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

# recording: true values, random torques, noise
sets=()
params=()
for s in "${truth[@]}"; do
  sets+=(--set "$s")
  params+=(--param "${s%=*}")
done
"$sysid" --generate raw.csv "${sets[@]}" --duration "$duration" --ctrl random --seed 1 \
  "${noise[@]}" --quiet "$model"
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
