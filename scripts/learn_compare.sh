#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# learn_compare.sh: analytic policy gradients against ES (antithetic random search) and PPO on the
# same network, task, batch seeds and evaluation set, with the baselines given 10x the simulated
# steps the gradient run used. Writes OUT/{apg,es,ppo}.csv (curves), OUT/all.csv, OUT/compare.png
# (cost against simulated steps and wall time, success against steps; gnuplot) and prints a table:
# the final evaluation success on the smooth and the native plant, and the simulated steps and
# wall time at which each method first reached the gradient run's final success rate.
#
# usage: scripts/learn_compare.sh OUT MODEL.xml TASK APG_ITERS [common mjdiff-learn options...]
# e.g.   scripts/learn_compare.sh /tmp/cmp models/reacher.xml models/reacher.task 150 \
#          --goal 0:-0.14,0.14:-0.14,0.14:0.01,0.01 --start-noise 0.5 --batch 32
# Environment: BUILD (default build), BUDGET_FACTOR (default 10), ES_ARGS, PPO_ARGS, APG_ARGS
# (extra options per method, after the common ones), REUSE=1 (keep a method's finished run),
# IMPLICIT=1 (every method trains and evaluates the model's implicit variant, OUT/implicit.xml:
# its mjdiff_* numerics removed and the implicit smooth step on, with its derived defaults, as
# scripts/sysid_lib.sh's sysid_implicit_variant writes it; the variant sits in OUT, so a model
# that names mesh or texture files by relative path needs its variant written beside it).
# PPO runs with --pos-scale 1 (its better input scale on the reacher, the pusher and the arm push:
# README, section "Input scale"; before 2026-12-07 it ran without; PPO_ARGS="--pos-scale 0" gives
# the old runs).
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n 3,22p "$0" >&2
  exit 2
fi
out=$1 model=$2 task=$3 iters=$4
shift 4
build=${BUILD:-build}
factor=${BUDGET_FACTOR:-10}
learn="$build/tools/mjdiff-learn"
mkdir -p "$out"
if [ "${IMPLICIT:-0}" = 1 ]; then
  # shellcheck source=scripts/sysid_lib.sh
  . "$(dirname "${BASH_SOURCE[0]}")/sysid_lib.sh"
  sysid_implicit_variant "$model" "$out/implicit.xml"
  model=$out/implicit.xml
fi

run() {  # NAME ARGS...
  local name=$1
  shift
  if [ "${REUSE:-0}" = 1 ] && [ -s "$out/$name.eval" ]; then
    echo "== $name: kept from an earlier run" >&2
    return
  fi
  echo "== $name: $learn policy $model $task $*" >&2
  "$learn" policy "$model" "$task" --out "$out/$name" --tag "$name" "$@" 2> "$out/$name.log" > "$out/$name.eval"
  tail -n 2 "$out/$name.log" >&2 || true
  cat "$out/$name.eval" >&2
}

run apg --method apg --iters "$iters" "$@" ${APG_ARGS:-}
steps=$(tail -n 1 "$out/apg.csv" | cut -d, -f3)
budget=$((steps * factor))
run es --method es --iters 100000000 --budget "$budget" "$@" ${ES_ARGS:-}
run ppo --method ppo --iters 100000000 --budget "$budget" --pos-scale 1 "$@" ${PPO_ARGS:-}

head -n 1 "$out/apg.csv" > "$out/all.csv"
for m in apg es ppo; do tail -n +2 "$out/$m.csv" >> "$out/all.csv"; done

# the gradient run's final evaluation success, and where each method first reached it
target=$(awk -F, 'NR > 1 && $9 != "" { s = $9 } END { print s }' "$out/apg.csv")
printf '| method | simulated steps | wall (s) | final eval cost | final eval success | smooth plant | native plant | steps to success >= %s | wall to it (s) |\n' "$target"
echo '|---|---|---|---|---|---|---|---|---|'
for m in apg es ppo; do
  awk -F, -v t="$target" -v m="$m" \
      -v sm="$(sed -n 's/^plant smooth.*success \([0-9]*\/[0-9]*\).*/\1/p' "$out/$m.eval")" \
      -v na="$(sed -n 's/^plant native.*success \([0-9]*\/[0-9]*\).*/\1/p' "$out/$m.eval")" '
    NR > 1 { steps = $3; wall = $4 }
    NR > 1 && $9 != "" { ec = $8; es = $9; if (!hit && $9 + 1e-9 >= t && t > 0) { hit = 1; hs = $3; hw = $4 } }
    END { printf "| %s | %d | %.1f | %.4g | %.2f | %s | %s | %s | %s |\n", m, steps, wall, ec, es, sm, na,
                 hit ? hs : "not reached", hit ? sprintf("%.1f", hw) : "-" }' "$out/$m.csv"
done

if command -v gnuplot > /dev/null 2>&1; then
  gnuplot -e "set terminal png size 1500,450; set output '$out/compare.png'; set datafile separator ',';
    set multiplot layout 1,3; set key top right;
    set logscale x; set xlabel 'simulated steps'; set ylabel 'evaluation cost';
    plot for [m in 'apg es ppo'] '$out/'.m.'.csv' every ::1 using 3:8 with linespoints title m;
    set ylabel 'evaluation success rate';
    plot for [m in 'apg es ppo'] '$out/'.m.'.csv' every ::1 using 3:9 with linespoints title m;
    unset logscale x; set xlabel 'wall time (s)'; set ylabel 'evaluation cost';
    plot for [m in 'apg es ppo'] '$out/'.m.'.csv' every ::1 using 4:8 with linespoints title m;
    unset multiplot" 2> /dev/null || echo "gnuplot failed; no compare.png" >&2
fi
