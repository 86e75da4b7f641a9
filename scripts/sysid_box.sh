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

sysid_build
# recording: true values, the servo's torques, noise
echo "sysid_$case: servo pushing the box (re-simulated every 10 steps)"
sysid_servo "$SYSID_SERVO_PUSH"
sysid_record --ctrl ctrl.csv
((data_only)) && exit 0
sysid_fit_and_plot
