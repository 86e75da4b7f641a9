# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Shared steps of the system identification scripts (scripts/sysid_arm.sh, sysid_box.sh,
# sysid_hopper.sh, calibrate_native.sh); sourced, not run. Sourcing sets root (the repository). A case script then sets
# its configuration and calls, in order:
#   sysid_init CASE MODEL "$@"   sets case, model, out (out/sysid_CASE), data_only (--data-only)
#   sysid_build                  builds mjdiff-sysid (sets sysid), makes and enters $out, sets
#                                sets (--set NAME=VALUE...) and params (--param NAME...) from truth
#   sysid_servo CONTROLLER       optional: a servo run on the true system writes ctrl.csv
#                                (controllers: SYSID_SERVO_PUSH, SYSID_SERVO_HOP, below)
#   sysid_record CTRL...         the recording data.csv, fit_args and truth (CTRL: --ctrl options)
#   sysid_fit                    fit.json, fit.log, calibrated.xml; prints and saves table.txt
#   sysid_simulate               sim_initial.csv, sim_fitted.csv under the recorded controls
#   sysid_plot                   loss.png, traj.png (gnuplot)
#   sysid_fit_and_plot           the last three, then lists what it wrote
# and, for any script: sysid_implicit_variant IN OUT writes the model IN with its mjdiff_*
# numerics removed and the implicit smooth step on (mjdiff_integrator 1: its derived defaults).
# Configuration read from the caller: truth (NAME=VALUE..., the parameters fitted), duration (s),
# noise (generate options), fitopt (fit options), panels (trajectory panels: CSV column, label...;
# a column yaw:JOINT is the heading of a free joint), plant (generate options of the true system
# for the servo and the recording; default none: the smooth model; (--plant native): MuJoCo's
# native step, as scripts/calibrate_native.sh records).
# shellcheck shell=bash
# shellcheck disable=SC2154  # truth, duration, noise, fitopt, panels: set by the case script
# shellcheck disable=SC2034  # case, data_only: read by the case script

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
plant=()

# sysid_implicit_variant IN OUT
sysid_implicit_variant() {
  python3 - "$1" "$2" <<'EOF'
import re, sys
src, out = sys.argv[1:]
x = open(src).read()
x = re.sub(r'[ \t]*<numeric\s+name="mjdiff_[^"]*"[^>]*/>[ \t]*\n?', '', x)
new = '<numeric name="mjdiff_integrator" data="1"/>'
if '<custom>' in x:
    x = x.replace('<custom>', '<custom>\n    ' + new, 1)
else:
    x = re.sub(r'(<mujoco[^>]*>)', r'\1\n  <custom>' + new + '</custom>', x, count=1)
x = re.sub(r'<custom>\s*</custom>', '', x)
open(out, 'w').write(x)
EOF
}

# sysid_init CASE MODEL [--data-only]
sysid_init() {
  case=$1
  model=$2
  out="$root/out/sysid_$case"
  data_only=0
  [[ ${3:-} == --data-only ]] && data_only=1
  return 0
}

# helpers: sysid_py strip IN OUT | loss LOG OUT | table JSON NAME=TRUTH... | sets JSON | traj OUT
# REC INIT FIT COL...
read -r -d '' SYSID_PY <<'EOF' || true
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
            m = re.match(r'(?:\[window \d+\] )?\s*(\d+)\s+([-+0-9.eE]+)\s+\S+\s+\S+\s+(\d+)\s*$', line)
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
sysid_py() { python3 -c "$SYSID_PY" "$@"; }

# build (Release, build/), like scripts/demo.sh; sets sysid, enters $out
sysid_build() {
  "$root/scripts/setup.sh" >/dev/null
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" --target mjdiff-sysid >/dev/null
  sysid="$root/build/tools/mjdiff-sysid"
  mkdir -p "$out"
  cd "$out" || exit
  # --set NAME=VALUE and --param NAME per true value
  sets=()
  params=()
  local s
  for s in "${truth[@]}"; do
    sets+=(--set "$s")
    params+=(--param "${s%=*}")
  done
}

# The servo harness: a controller runs on the true system, re-simulated chunk by chunk.
#   python3 -c PROGRAM SYSID MODEL OUT.csv DURATION [generate options...]
# PROGRAM is SYSID_SERVO_HEAD, the controller, SYSID_SERVO_TAIL. The controller defines h (model
# timestep), chunk (servo period in steps), T (steps), CTRL (the ctrl:ACTUATOR columns) and
# control(k, s) -> the controls (in [-1, 1]) held from step k, where s maps the columns of the
# simulation (qpos:JOINT, qvel:JOINT, ...) to their values after k steps ({} at k = 0).
read -r -d '' SYSID_SERVO_HEAD <<'EOF' || true
import csv, math, os, subprocess, sys
sysid, model, out, D, extra = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
EOF
read -r -d '' SYSID_SERVO_TAIL <<'EOF' || true
U = []
def state(n):                               # the columns after n steps of U (by column name)
    with open(out, 'w') as f:
        f.write('time,' + ','.join(CTRL) + '\n')
        for k in range(n):
            f.write(f'{k * h:.4f},' + ','.join(f'{x:.6f}' for x in U[k]) + '\n')
    subprocess.run([sysid, '--generate', out + '.sim.csv', '--ctrl', out, '--duration',
                    f'{n * h:.6f}', '--quiet'] + extra + [model], check=True)
    rows = list(csv.reader(open(out + '.sim.csv')))
    return dict(zip(rows[0], map(float, rows[n + 1])))
for k in range(0, T, chunk):
    U += [control(k, state(k) if k else {})] * min(chunk, T - k)
state(T)
os.remove(out + '.sim.csv')
EOF

# SYSID_SERVO_PUSH: the arm of models/arm_box.xml pushes the box along -y (sysid_box.sh; gravity
# compensation + PD on the joints at 50 Hz to a fingertip path behind the box, then along -y)
read -r -d '' SYSID_SERVO_PUSH <<'EOF' || true
h, chunk = 0.002, 10                        # model timestep; servo period 10 steps (50 Hz)
T = int(round(D / h))
CTRL = [f'ctrl:motor{i + 1}' for i in range(7)]
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
def control(k, s):                          # gravity compensation + PD on the joints
    if s:
        q = [s[f'qpos:joint{i + 1}'] for i in range(7)]
        v = [s[f'qvel:joint{i + 1}'] for i in range(7)]
    else:
        q, v = Q[0], [0.0] * 7
    g = gravity(Q[k])
    return [max(-1, min(1, (g[j] + kp[j] * (Q[k][j] - q[j]) +
                            kd[j] * ((Q[k + 1][j] - Q[k][j]) / h - v[j])) / gear[j])) for j in range(7)]
EOF

# SYSID_SERVO_HOP: models/hopper.xml hops (sysid_hopper.sh; PD on the leg joints at 100 Hz:
# crouch for 0.3 s, extend for 0.2 s; the hip also holds the torso upright)
read -r -d '' SYSID_SERVO_HOP <<'EOF' || true
h, chunk, period = 0.002, 5, 0.5            # model timestep; servo period 5 steps; hop period (s)
T = int(round(D / h))
CTRL = ['ctrl:thigh_motor', 'ctrl:leg_motor', 'ctrl:foot_motor']
gear = [100, 100, 40]
def control(k, s):                          # PD on the leg joints to crouch / extend targets
    x = lambda c: s.get(c, 0.0)
    crouch = (k * h) % period < 0.6 * period
    target = [-0.6, 1.0, 0.0] if crouch else [0.0, 0.0, 0.0]   # hip, knee, ankle (rad)
    tau = [300 * (target[0] - x('qpos:thigh_joint')) - 20 * x('qvel:thigh_joint'),
           300 * (target[1] - x('qpos:leg_joint')) - 20 * x('qvel:leg_joint'),
           50 * (target[2] - x('qpos:foot_joint')) - 4 * x('qvel:foot_joint')]
    tau[0] += 400 * x('qpos:rooty') + 40 * x('qvel:rooty')     # torso upright
    return [max(-1, min(1, tau[j] / gear[j])) for j in range(3)]
EOF

# sysid_servo CONTROLLER: run the servo with the true values, write ctrl.csv
sysid_servo() {
  python3 -c "$SYSID_SERVO_HEAD"$'\n'"$1"$'\n'"$SYSID_SERVO_TAIL" "$sysid" "$model" ctrl.csv \
    "$duration" "${sets[@]}" "${plant[@]}"
}

# sysid_record CTRL...: recording with the true values, the controls CTRL (--ctrl options) and
# noise; write data.csv (sensor columns dropped), fit_args (one a line) and truth
sysid_record() {
  "$sysid" --generate raw.csv "${sets[@]}" "${plant[@]}" --duration "$duration" "$@" \
    "${noise[@]}" --quiet "$model"
  sysid_py strip raw.csv data.csv
  rm -f raw.csv
  printf '%s\n' "${params[@]}" "${fitopt[@]}" "$model" "$out/data.csv" >fit_args
  printf '%s\n' "${truth[@]}" >truth
  echo "sysid_$case: recording $out/data.csv ($duration s)"
}

# fit from the model's defaults (progress on stderr, kept in fit.log); print and save the table
sysid_fit() {
  local fitargs
  mapfile -t fitargs <fit_args
  # exit 3 (not converged) and 4 (poorly conditioned) still write the report
  { "$sysid" "${fitargs[@]}" --out fit.json --xml calibrated.xml 2>&1 >/dev/null ||
      { c=$?; [[ $c -eq 3 || $c -eq 4 ]]; }; } | tee fit.log >&2
  sysid_py table fit.json "${truth[@]}" | tee table.txt
}

# simulations with initial and fitted values under the recorded controls
sysid_simulate() {
  local fitted
  mapfile -t fitted < <(sysid_py sets fit.json)
  "$sysid" --generate sim_initial.csv --duration "$duration" --ctrl data.csv --quiet "$model"
  "$sysid" --generate sim_fitted.csv "${fitted[@]}" --duration "$duration" --ctrl data.csv \
    --quiet "$model"
}

# plots: loss.png (loss per iteration), traj.png (the panels: recording, initial, fitted)
sysid_plot() {
  local cols=() labels=() i c n
  for ((i = 0; i < ${#panels[@]}; i += 2)); do
    cols+=("${panels[i]}")
    labels+=("${panels[i + 1]}")
  done
  sysid_py loss fit.log loss.dat
  sysid_py traj traj.dat data.csv sim_initial.csv sim_fitted.csv "${cols[@]}"
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
}

# everything after the recording: fit, table, simulations, plots
sysid_fit_and_plot() {
  sysid_fit
  sysid_simulate
  sysid_plot
  echo "sysid_$case: wrote $out/{table.txt,fit.json,calibrated.xml,loss.png,traj.png}"
}
