#!/bin/sh
# Design under a learned policy (mjdiff-design --policy): the reacher's two link lengths
# (models/reacher.xml, body:link1:scale and body:link2:scale) for the mean closed-loop cost of
# a policy trained by mjdiff-learn, over 8 sampled starts and goals (the policy's own training
# distribution: goals in a 10 cm square, start noise 0.1 rad). The policy is trained first (60
# APG iterations at batch 8, fixed seed; it is then held fixed). Projected Adam on the exact
# closed-loop gradient (through the policy's state VJP), then CMA-ES and Nelder-Mead on the same
# objective and bounds, stopped at the value Adam reached or at their caps.
# Usage: scripts/design/reacher_policy.sh BUILD_DIR OUT_DIR [ADAM_ITERS]
set -e
B=${1:-build}; O=${2:-/tmp/design_reacher_policy}; N=${3:-40}; D=$(dirname "$0")
M="$D/../../models/reacher.xml"; K="$D/../../models/reacher.task"
mkdir -p "$O"
G="--goal 0:0.05,0.15:0.05,0.15:0.01,0.01 --start-noise 0.1"
echo "training the policy (60 APG iterations, batch 8)"
"$B/tools/mjdiff-learn" policy "$M" "$K" $G --batch 8 --iters 60 --seed 1 --out "$O/policy" \
  2>"$O/learn.log"
T="$B/tools/mjdiff-design"
P="--param body:link1:scale --param body:link2:scale"
P="$P --bounds body:link1:scale=0.5:1.5 --bounds body:link2:scale=0.5:1.5"
C="--policy $O/policy.npz $G --policy-starts 8"
# shellcheck source=lib.sh
. "$D/lib.sh"
$T "$M" "$K" $P $C --iters "$N" --lr 0.02 --out "$O/adam" --quiet
J=$(jtarget "$O/adam.json")
echo "projected Adam: J = $J"
$T "$M" "$K" $P $C --method cmaes --iters 100000 --max-rollouts 2000 --target "$J" \
  --out "$O/cmaes" --quiet
$T "$M" "$K" $P $C --method nm --iters 100000 --max-rollouts 2000 --target "$J" \
  --out "$O/nm" --quiet
echo "to Adam's J <= $J (a rollout: $(sed -n 's/.*"policy_starts": *\([0-9]*\).*/\1/p' \
  "$O/adam.json") closed-loop runs; -1: not reached):"
for r in adam cmaes nm; do report "$r" "$O/$r" "$J"; done
for r in adam cmaes nm; do
  printf '%-6s ' "$r"; sed -n 's/.*"params":\(.*\)}$/\1/p' "$O/$r.json"
done
gnuplot -e "set terminal pngcairo size 800,500; set output '$O/reacher_policy.png'; set datafile separator ','; set logscale x; set xlabel 'rollouts'; set ylabel 'objective J (mean closed-loop cost)'; set grid; set title 'reacher link lengths under a fixed learned policy'; plot '$O/adam.csv' using 2:4 with lines lw 2 title 'projected Adam', '$O/cmaes.csv' using 2:4 with lines lw 2 title 'CMA-ES', '$O/nm.csv' using 2:4 with lines lw 2 title 'Nelder-Mead'" 2>/dev/null || true
