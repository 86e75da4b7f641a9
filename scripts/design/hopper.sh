#!/bin/sh
# The hopper's thigh, leg and foot lengths (body:*:scale of models/hopper.xml) co-designed with
# its open-loop motor commands (1000 steps of 2 ms) for the forward distance in 2 s:
#   J = sum_t [0.01/2 rooty^2 + 0.002/2 |u|^2] - 10 (rootx(2 s) - rootx(0))   (hopper_design.task)
# Thigh and leg are bounded to <= 1.04 (longer legs start the foot inside the floor). Then the same
# from the original lengths with the controls alone (the design held), for comparison; then the
# CMA-ES and Nelder-Mead baselines on the co-design objective (capped; see below).
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
# baselines on the same co-design objective and 3003 variables, stopped at Adam's best or capped:
# CMA-ES at 330 rollouts (before its first eigendecomposition of the 3003 x 3003 covariance),
# Nelder-Mead at 4000 (its initial simplex alone is 3004 rollouts)
# shellcheck source=lib.sh
. "$D/lib.sh"
J=$(jtarget "$O/codesign.json")
P="--param body:thigh:scale --param body:leg:scale --param body:foot:scale"
P="$P --bounds body:thigh:scale=0.7:1.04 --bounds body:leg:scale=0.7:1.04"
P="$P --bounds body:foot:scale=0.5:1.6 --codesign --distance rootx:10"
$T "$M" "$D/hopper_design.task" $P --method cmaes --iters 1000000 --max-rollouts 330 \
  --target "$J" --out "$O/cmaes" --quiet
$T "$M" "$D/hopper_design.task" $P --method nm --iters 1000000 --max-rollouts 4000 \
  --target "$J" --out "$O/nm" --quiet
JC=$(jbest "$O/cmaes.json")
echo "co-design, to Adam's J <= $J (rollouts, seconds; -1: not reached):"
for r in codesign cmaes nm; do
  printf '%-9s J_best %s  first %s\n' "$r" "$(jbest "$O/$r.json")" "$(first "$O/$r.csv" "$J")"
done
echo "to CMA-ES's best J <= $JC: Adam $(first "$O/codesign.csv" "$JC")"
gnuplot -e "set terminal pngcairo size 800,500; set output '$O/hopper_codesign.png'; set datafile separator ','; set xlabel 'rollouts'; set ylabel 'objective J'; set logscale x; set grid; plot '$O/codesign.csv' using 2:4 with lines lw 2 title 'projected Adam: lengths + controls', '$O/controls_only.csv' using 2:4 with lines lw 2 title 'projected Adam: controls only', '$O/cmaes.csv' using 2:4 with lines lw 2 title 'CMA-ES: lengths + controls', '$O/nm.csv' using 2:4 with lines lw 2 title 'Nelder-Mead: lengths + controls'" 2>/dev/null || true
