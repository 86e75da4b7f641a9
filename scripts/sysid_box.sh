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
# shellcheck source=sysid_lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/sysid_lib.sh"
sysid_init box "$root/models/arm_box.xml" "$@"

# true values (NAME=VALUE), the parameters fitted
truth=(body:box:mass=0.5 "geom:table:friction[0]=0.8")
duration=2
noise=(--noise-qpos 1e-3 --noise-qvel 1e-2)
fitopt=(--sigma-qpos 1e-3 --sigma-qvel 1e-2)
# trajectory panels: CSV column (yaw:JOINT: heading of a free joint) and label
panels=(qpos:box_free:0 "box x (m)" qpos:box_free:1 "box y (m)" yaw:box_free "box heading (rad)"
        qpos:joint1 "joint 1 (rad)")

# the pushing servo: python3 -c "$SERVO" SYSID MODEL OUT.csv DURATION [generate options...]
# the pushing servo (the controller of sysid_lib.sh's servo harness)
read -r -d '' SERVO <<'EOF' || true
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
sysid_build
# recording: true values, the servo's torques, noise
echo "sysid_$case: servo pushing the box (re-simulated every 10 steps)"
sysid_servo "$SERVO"
sysid_record --ctrl ctrl.csv
((data_only)) && exit 0
sysid_fit_and_plot
