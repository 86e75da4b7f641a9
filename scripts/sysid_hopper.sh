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
# shellcheck source=sysid_lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/sysid_lib.sh"
sysid_init hopper "$root/models/hopper.xml" "$@"

# true values (NAME=VALUE), the parameters fitted
truth=("geom:foot_geom:friction[0]=1.2" mjdiff:contact_stiffness=30000)
duration=1.5
noise=(--noise-qpos 1e-3 --noise-qvel 1e-2)
fitopt=(--sigma-qpos 1e-3 --sigma-qvel 1e-2)
# trajectory panels: CSV column and label
panels=(qpos:rootx "torso x (m)" qpos:rootz "torso z (m, from its start)" qpos:rooty
        "torso pitch (rad)" qpos:thigh_joint "hip (rad)" qpos:leg_joint "knee (rad)"
        qpos:foot_joint "ankle (rad)")

sysid_build
# recording: true values, the servo's torques, noise
echo "sysid_$case: servo hopping (re-simulated every 5 steps)"
sysid_servo "$SYSID_SERVO_HOP"
sysid_record --ctrl ctrl.csv
((data_only)) && exit 0
sysid_fit_and_plot
