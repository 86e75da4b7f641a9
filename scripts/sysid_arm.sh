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
# shellcheck source=sysid_lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/sysid_lib.sh"
sysid_init arm "$root/models/arm_box.xml" "$@"

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

sysid_build
# recording: true values, random torques, noise
sysid_record --ctrl random --seed 1
((data_only)) && exit 0
sysid_fit_and_plot
