#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# The README's main-job command: install packages, build (Release, build/), and run the smooth
# contact demo on a bundled model beside MuJoCo's native step.
#   scripts/demo.sh [MODEL.xml] [mjdiff-demo options...]     (default model: models/arm_box.xml)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
model="$root/models/arm_box.xml"
if [[ $# -gt 0 && $1 != -* ]]; then
  model=$1
  shift
fi
exec "$root/build/tools/mjdiff-demo" --native "$@" "$model"
