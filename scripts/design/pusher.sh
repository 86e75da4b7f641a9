#!/bin/sh
# The arm's pusher (models/arm_box.xml: the fingertip sphere's radius, geom:fingertip:size, and
# link7's length, body:link7:scale, which carries the fingertip) co-designed with the 300 x 7
# open-loop motor commands for pushing the box 8 cm in 0.6 s (pusher.task), by projected Adam;
# then CMA-ES and Nelder-Mead on the same objective and 2102 variables, stopped at the value Adam
# reached (capped: see below); and all three on the design alone (controls fixed to Adam's).
# The controls start at the gravity torques of keyframe "ready" over the gears (MuJoCo 2.2.2's
# qfrc_bias at rest; one row, held for every step). No long-range contact term is needed: the
# task's fingertip-to-box term gives a gradient before contact.
# Caps: CMA-ES stops at 330 rollouts, before its first eigendecomposition of the 2102 x 2102
# covariance (cyclic Jacobi, due after ~340 evaluations; it took 700 s here), Nelder-Mead at
# 2400 (its initial simplex alone is 2103 rollouts).
# Usage: scripts/design/pusher.sh BUILD_DIR OUT_DIR
set -e
B=${1:-build}; O=${2:-/tmp/design_pusher}; D=$(dirname "$0"); M="$D/../../models/arm_box.xml"
mkdir -p "$O"
T="$B/tools/mjdiff-design"
printf '0 -0.204292531 0 -0.0606763628 0 1.65170818e-05 0\n' > "$O/gravity.txt"
P="--param geom:fingertip:size --param body:link7:scale"
P="$P --bounds geom:fingertip:size=0.01:0.04 --bounds body:link7:scale=0.8:1.2"
C="--controls $O/gravity.txt --codesign"
# shellcheck source=lib.sh
. "$D/lib.sh"
$T "$M" "$D/pusher.task" $P $C --iters 100 --lr 0.005 --out "$O/adam" --quiet
J=$(jtarget "$O/adam.json")
echo "projected Adam, co-design: J = $J"
$T "$M" "$D/pusher.task" $P $C --method cmaes --iters 1000000 --max-rollouts 330 --target "$J" \
  --out "$O/cmaes" --quiet
$T "$M" "$D/pusher.task" $P $C --method nm --iters 1000000 --max-rollouts 2400 --target "$J" \
  --out "$O/nm" --quiet
# design alone: Adam's co-designed controls on the original pusher
F="--controls $O/adam_ctrl.txt"
$T "$M" "$D/pusher.task" $P $F --iters 40 --lr 0.005 --out "$O/adam_design" --quiet
J2=$(jtarget "$O/adam_design.json")
$T "$M" "$D/pusher.task" $P $F --method nm --iters 100000 --max-rollouts 400 --target "$J2" \
  --out "$O/nm_design" --quiet
$T "$M" "$D/pusher.task" $P $F --method cmaes --iters 100000 --max-rollouts 400 --target "$J2" \
  --out "$O/cmaes_design" --quiet
echo "co-design, to J <= $J:"
for r in adam cmaes nm; do report "$r" "$O/$r" "$J"; done
JC=$(jtarget "$O/cmaes.json")
echo "co-design, to CMA-ES's best J <= $JC:"
for r in adam cmaes; do report "$r" "$O/$r" "$JC"; done
echo "design alone, to J <= $J2:"
for r in adam_design nm_design cmaes_design; do report "$r" "$O/$r" "$J2"; done
sed -n 's/.*"params":\(.*\)}$/\1/p' "$O/adam.json"
gnuplot -e "set terminal pngcairo size 800,500; set output '$O/pusher.png'; set datafile separator ','; set logscale x; set xlabel 'rollouts'; set ylabel 'objective J'; set grid; set title 'arm_box pusher (fingertip radius, link7 length) + 300 x 7 controls'; plot '$O/adam.csv' using 2:4 with lines lw 2 title 'projected Adam (co-design)', '$O/cmaes.csv' using 2:4 with lines lw 2 title 'CMA-ES (co-design)', '$O/nm.csv' using 2:4 with lines lw 2 title 'Nelder-Mead (co-design)', '$O/adam_design.csv' using 2:4 with lines title 'projected Adam (design only)', '$O/nm_design.csv' using 2:4 with lines title 'Nelder-Mead (design only)', '$O/cmaes_design.csv' using 2:4 with lines title 'CMA-ES (design only)'" 2>/dev/null || true
