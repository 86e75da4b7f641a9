#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# The README's main-job command: install packages, build (Release, build/), then a short
# sim-to-real loop on the reacher (scripts/sim2real.sh, 4 rounds): train a policy in the smooth
# model, deploy it on a mismatched plant (hidden link mass, damping and gear offsets, sensor
# noise) and record, calibrate with mjdiff-sysid, retrain on the calibrated model and deploy
# again. Prints the before-and-after table (plant cost and success, prediction error, parameter
# error) and writes demo-out/rounds.png (gnuplot).
#   scripts/demo.sh [--out DIR]                          the loop (default demo-out)
#   scripts/demo.sh --contact [MODEL.xml] [mjdiff-demo options...]
#                                     the smooth contact demo beside MuJoCo's native step
#                                     (default model: models/arm_box.xml)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
if [[ ${1:-} == --contact ]]; then
  shift
  model="$root/models/arm_box.xml"
  if [[ $# -gt 0 && $1 != -* ]]; then
    model=$1
    shift
  fi
  exec "$root/build/tools/mjdiff-demo" --native "$@" "$model"
fi
out=demo-out
if [[ ${1:-} == --out ]]; then out=${2:?--out DIR}; fi
exec "$root/scripts/sim2real.sh" --rounds 4 --out "$out"
