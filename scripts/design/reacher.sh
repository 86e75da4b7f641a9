#!/bin/sh
# Link lengths of a two-link reacher (scripts/design/reacher2.xml) co-designed with its open-loop
# torques for reaching (0.15, 0.2) in 0.5 s (reacher2.task), then the Nelder-Mead and CMA-ES
# baselines on the same objective and variables (2 scales + 50 x 2 controls), stopped at the
# objective value the gradient method reached after 100 iterations; and both on the design alone (controls fixed to
# the co-designed ones). Usage: scripts/design/reacher.sh BUILD_DIR OUT_DIR
set -e
B=${1:-build}; O=${2:-/tmp/design_reacher}; D=$(dirname "$0")
mkdir -p "$O"
T="$B/tools/mjdiff-design"
P="--param body:upper:scale --param body:lower:scale --bounds body:upper:scale=0.5:2 --bounds body:lower:scale=0.5:2"
$T "$D/reacher2.xml" "$D/reacher2.task" $P --codesign --iters 100 --lr 0.02 --out "$O/adam" --quiet
# shellcheck source=lib.sh
. "$D/lib.sh"
J=$(jtarget "$O/adam.json")
echo "projected Adam, co-design: J = $J"
$T "$D/reacher2.xml" "$D/reacher2.task" $P --codesign --iters 100 --lr 0.02 --target "$J" --out "$O/adam_t" --quiet
$T "$D/reacher2.xml" "$D/reacher2.task" $P --codesign --method nm --iters 1000000 --max-rollouts 20000 --target "$J" --out "$O/nm" --quiet
$T "$D/reacher2.xml" "$D/reacher2.task" $P --codesign --method cmaes --iters 1000000 --max-rollouts 20000 --target "$J" --out "$O/cmaes" --quiet
# design alone, controls fixed: start from the co-designed controls on the original links
$T "$D/reacher2.xml" "$D/reacher2.task" $P --controls "$O/adam_ctrl.txt" --iters 60 --lr 0.02 --out "$O/adam_design" --quiet
J2=$(jbest "$O/adam_design.json")
$T "$D/reacher2.xml" "$D/reacher2.task" $P --controls "$O/adam_ctrl.txt" --iters 60 --lr 0.02 --target "$J2" --out "$O/adam_design_t" --quiet
$T "$D/reacher2.xml" "$D/reacher2.task" $P --controls "$O/adam_ctrl.txt" --method nm --iters 100000 --max-rollouts 5000 --target "$J2" --out "$O/nm_design" --quiet
$T "$D/reacher2.xml" "$D/reacher2.task" $P --controls "$O/adam_ctrl.txt" --method cmaes --iters 100000 --max-rollouts 5000 --target "$J2" --out "$O/cmaes_design" --quiet
for r in adam_t nm cmaes adam_design_t nm_design cmaes_design; do
  printf '%-14s ' "$r"; sed -n 's/.*"rollouts":\([0-9]*\),"seconds": *\([0-9.e+-]*\),"J_initial": *\([-0-9.e+]*\),"J_best": *\([-0-9.e+]*\).*"target_rollouts":\([-0-9]*\),"target_seconds": *\([-0-9.e+a-z]*\).*/rollouts \1 seconds \2 J0 \3 J \4 target_rollouts \5 target_seconds \6/p' "$O/$r.json"
done
gnuplot -e "set terminal pngcairo size 800,500; set output '$O/reacher_baseline.png'; set datafile separator ','; set logscale xy; set xlabel 'rollouts'; set ylabel 'objective J'; set grid; plot '$O/adam.csv' using 2:4 with lines lw 2 title 'projected Adam (co-design)', '$O/nm.csv' using 2:4 with lines lw 2 title 'Nelder-Mead (co-design)', '$O/cmaes.csv' using 2:4 with lines lw 2 title 'CMA-ES (co-design)', '$O/adam_design.csv' using 2:4 with lines title 'projected Adam (design only)', '$O/nm_design.csv' using 2:4 with lines title 'Nelder-Mead (design only)', '$O/cmaes_design.csv' using 2:4 with lines title 'CMA-ES (design only)'" 2>/dev/null || true
