#!/bin/sh
# The two-link reacher's link lengths (scripts/design/reacher2.xml, body:upper:scale and
# body:lower:scale) for reaching a set of targets with little torque (reacher2.task's term 0 set to
# each point of reacher2_targets.txt: the mean cost over the 4 targets, each reached by its own
# 50 x 2 open-loop torques, the design shared: mjdiff-design --targets), co-designed by projected
# Adam; then CMA-ES and Nelder-Mead on the same objective and 402 variables, stopped at the value
# Adam reached or at their caps (4000 rollouts each; a rollout here is one target's run).
# Usage: scripts/design/reacher_targets.sh BUILD_DIR OUT_DIR [ADAM_ITERS]
set -e
B=${1:-build}; O=${2:-/tmp/design_reacher_targets}; N=${3:-100}; D=$(dirname "$0")
mkdir -p "$O"
T="$B/tools/mjdiff-design"
X="$D/reacher2.xml $D/reacher2.task"
P="--param body:upper:scale --param body:lower:scale"
P="$P --bounds body:upper:scale=0.5:2 --bounds body:lower:scale=0.5:2"
P="$P --codesign --targets 0:$D/reacher2_targets.txt"
# shellcheck source=lib.sh
. "$D/lib.sh"
$T $X $P --iters "$N" --lr 0.02 --out "$O/adam" --quiet
J=$(jtarget "$O/adam.json")
echo "projected Adam: J = $J"
$T $X $P --method cmaes --iters 1000000 --max-rollouts 4000 --target "$J" --out "$O/cmaes" --quiet
$T $X $P --method nm --iters 1000000 --max-rollouts 4000 --target "$J" --out "$O/nm" --quiet
JC=$(jbest "$O/cmaes.json")
echo "to Adam's J <= $J (rollouts, seconds; -1: not reached):"
for r in adam cmaes nm; do
  printf '%-6s J_best %s  first %s  links' "$r" "$(jbest "$O/$r.json")" "$(first "$O/$r.csv" "$J")"
  grep -o '"final": *[-0-9.e+]*' "$O/$r.json" | sed 's/"final": */ /' | tr -d '\n'
  echo
done
echo "to CMA-ES's best J <= $JC: Adam $(first "$O/adam.csv" "$JC")"
gnuplot -e "set terminal pngcairo size 800,500; set output '$O/reacher_targets.png'; set datafile separator ','; set logscale xy; set xlabel 'rollouts (one target each)'; set ylabel 'objective J (mean over 4 targets)'; set grid; set title 'reacher2 link lengths + 4 x 50 x 2 torques for 4 targets'; plot '$O/adam.csv' using 2:4 with lines lw 2 title 'projected Adam', '$O/cmaes.csv' using 2:4 with lines lw 2 title 'CMA-ES', '$O/nm.csv' using 2:4 with lines lw 2 title 'Nelder-Mead'" 2>/dev/null || true
