#!/bin/sh
# The hopper's thigh, leg and foot lengths (body:*:scale of models/hopper.xml) co-designed with
# its open-loop motor commands (1000 steps of 2 ms) for the forward distance in 2 s:
#   J = sum_t [0.01/2 rooty^2 + 0.002/2 |u|^2] - 10 (rootx(2 s) - rootx(0))   (hopper_design.task)
# Thigh and leg are bounded to <= 1.04 (longer legs start the foot inside the floor). Then the same
# from the original lengths with the controls alone (the design held), for comparison.
# Usage: scripts/design/hopper.sh BUILD_DIR OUT_DIR [ITERS [LR]]
set -e
B=${1:-build}; O=${2:-/tmp/design_hopper}; N=${3:-60}; LR=${4:-0.02}; D=$(dirname "$0"); M="$D/../../models/hopper.xml"
mkdir -p "$O"
T="$B/tools/mjdiff-design"
$T "$M" "$D/hopper_design.task" --param body:thigh:scale --param body:leg:scale --param body:foot:scale \
  --bounds body:thigh:scale=0.7:1.04 --bounds body:leg:scale=0.7:1.04 --bounds body:foot:scale=0.5:1.6 \
  --codesign --distance rootx:10 --iters "$N" --lr "$LR" --out "$O/codesign" --quiet
$T "$M" "$D/hopper_design.task" --param body:thigh:scale --bounds body:thigh:scale=1:1 \
  --codesign --distance rootx:10 --iters "$N" --lr "$LR" --out "$O/controls_only" --quiet
gnuplot -e "set terminal pngcairo size 800,500; set output '$O/hopper_codesign.png'; set datafile separator ','; set xlabel 'iteration'; set ylabel 'objective J'; set grid; plot '$O/codesign.csv' using 1:4 with lines lw 2 title 'lengths + controls', '$O/controls_only.csv' using 1:4 with lines lw 2 title 'controls only'" 2>/dev/null || true
