#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Evaluation of mjdiff-estimate (issue 16 item 6): RMSE to truth and time per step of each method
# (ekf, ukf, batch, mhe) on three scenarios, with recordings from the smooth model itself and from
# MuJoCo's native step (hard contacts: a plant the estimator's model does not match).
#   hopper     models/hopper.xml, 1 s from its start pose under random controls (held 0.1 s): it
#              lands on the floor; every sensor of the model (encoders, joint velocities, the
#              torso's position and velocity, the centre of mass, the foot's touch)
#   arm_box    models/arm_box.xml, 1.5 s of sysid_box.sh's servo (SYSID_SERVO_PUSH, run on each
#              plant) pushing the box; every sensor (encoders, joint velocities, fingertip and box
#              frames, the box's velocity, the touch sensor)
#   humanoid   MuJoCo's sample humanoid (/usr/share/mujoco/model/humanoid/humanoid.xml, included
#              unchanged by a wrapper that adds sensors), 0.5 s from its start under random
#              controls, falling: encoders (jointpos of the 21 hinges) and an IMU on the torso
#              (framelinacc and frameangvel of the torso body: the sample has no site for an
#              accelerometer), nothing else
# Readings get Gaussian noise 0.01 (mjdiff-sysid --generate --noise-sensor; qpos and qvel are
# kept clean as the truth). Every method starts from the model's start pose at rest (--x0 model)
# with its default priors; mhe with a window of 10 steps. Process noise: the tool's defaults
# (1e-4 per step on positions, 1e-3 on velocities) on the smooth model's own data; on native data,
# where the model does not match the plant, 1e-3 and 1e-1 (what a user would raise it to).
#   scripts/estimate_eval.sh [--methods "ekf ukf batch mhe"] [CASE...]
# The estimators run the bundled model as it is (the explicit smooth step with its mjdiff_*
# values) and, on native data, also its implicit variant (sysid_implicit_variant: the implicit
# step with its derived defaults, as firm as MuJoCo's contacts; implicit.xml in the case folder).
# Output in out/estimate_eval/CASE/: data_PLANT.csv, METHOD_PLANT_STEP.json (and .csv);
# out/estimate_eval/table.md (the README's table). Progress lines on stderr.
set -euo pipefail
# shellcheck source=sysid_lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/sysid_lib.sh"

methods="ekf ukf batch mhe"
cases=()
while (($#)); do
  case $1 in
    --methods) methods=$2; shift 2 ;;
    -h|--help) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    hopper|arm_box|humanoid) cases+=("$1"); shift ;;
    *) echo "estimate_eval.sh: unknown argument '$1' (cases: hopper arm_box humanoid)" >&2; exit 2 ;;
  esac
done
((${#cases[@]})) || cases=(hopper arm_box humanoid)

"$root/scripts/setup.sh" >/dev/null
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" --target mjdiff-sysid \
  mjdiff-estimate >/dev/null
sysid=$root/build/tools/mjdiff-sysid
estimate=$root/build/tools/mjdiff-estimate
top=$root/out/estimate_eval
mkdir -p "$top"
start=$SECONDS
log() { echo "estimate_eval [$((SECONDS - start)) s]: $*" >&2; }

humanoid_sample=/usr/share/mujoco/model/humanoid/humanoid.xml
humanoid_wrapper() {  # $1: the wrapper to write, beside a copy of the sample (an include's path
  local joints       # is relative to the including file's folder)
  cp "$humanoid_sample" "$(dirname "$1")/humanoid.xml"
  joints=$(grep -o '<joint name="[^"]*"' "$humanoid_sample" | sed 's/<joint name="\(.*\)"/\1/')
  {
    echo '<mujoco model="humanoid with encoders and a torso IMU">'
    echo '  <include file="humanoid.xml"/>'
    echo '  <sensor>'
    for j in $joints; do echo "    <jointpos name=\"${j}_pos\" joint=\"$j\"/>"; done
    echo '    <framelinacc name="torso_acc" objtype="body" objname="torso"/>'
    echo '    <frameangvel name="torso_gyro" objtype="body" objname="torso"/>'
    echo '  </sensor>'
    echo '</mujoco>'
  } >"$1"
}

rows=()
for case in "${cases[@]}"; do
  out=$top/$case
  mkdir -p "$out"
  cd "$out"
  ctrl=(--ctrl random)
  case $case in
    hopper) model=$root/models/hopper.xml; duration=1 ;;
    arm_box) model=$root/models/arm_box.xml; duration=1.5 ;;
    humanoid)
      [[ -f $humanoid_sample ]] || { echo "estimate_eval.sh: no $humanoid_sample (libmujoco-samples)" >&2; exit 1; }
      model=$out/humanoid_imu.xml
      humanoid_wrapper "$model"
      duration=0.5 ;;
  esac
  for plant in smooth native; do
    if [[ $case == arm_box ]]; then
      log "$case: the push servo on the $plant plant"
      python3 -c "$SYSID_SERVO_HEAD"$'\n'"$SYSID_SERVO_PUSH"$'\n'"$SYSID_SERVO_TAIL" "$sysid" \
        "$model" "ctrl_$plant.csv" "$duration" --plant "$plant"
      ctrl=(--ctrl "ctrl_$plant.csv")
    fi
    log "$case: recording on the $plant plant ($duration s)"
    "$sysid" --generate "data_$plant.csv" --plant "$plant" --duration "$duration" "${ctrl[@]}" \
      --noise-sensor 0.01 --quiet "$model"
    steps=(explicit)
    [[ $plant == native ]] && steps+=(implicit)
    for step in "${steps[@]}"; do
    emodel=$model
    if [[ $step == implicit ]]; then
      emodel=$out/implicit.xml
      sysid_implicit_variant "$model" "$emodel"
    fi
    for method in $methods; do
      extra=()
      [[ $method == mhe ]] && extra=(--window 10)
      [[ $plant == native ]] && extra+=(--sigma-qpos 1e-3 --sigma-qvel 1e-1)
      tag=${method}_${plant}_$step
      log "$case: $method on the $plant recording, $step step"
      if "$estimate" --method "$method" "${extra[@]}" --quiet --out "$tag.json" \
        --csv "$tag.csv" "$emodel" "data_$plant.csv" 2>"$tag.err"; then
        rows+=("$(python3 - "$case" "$plant" "$step" "$method" "$tag.json" <<'EOF'
import json, sys
case, plant, step, method, path = sys.argv[1:]
m = json.load(open(path))['metrics']
def f(x): return '-' if x is None else f'{x:.2g}'
print(f"| {case} | {plant} | {step} | {method} | {f(m.get('rmse_qpos'))} | "
      f"{f(m.get('rmse_qvel'))} | {m.get('us_per_step', 0):.0f} |")
EOF
)")
      else
        msg=$(tail -n 1 "$tag.err" | cut -c1-90)
        rows+=("| $case | $plant | $step | $method | failed: $msg | | |")
      fi
    done
    done
  done
done

{
  echo '| scenario | data | step | method | RMSE qpos | RMSE qvel | us per step |'
  echo '|---|---|---|---|---|---|---|'
  printf '%s\n' "${rows[@]}"
} | tee "$top/table.md"
log "wrote $top/table.md"
