#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# mjdiff-sysid's scaling with the recording's length (issue 18 item 5): the arm of
# models/arm_box.xml at its 500 Hz step, random torques, noise 1e-3 / 1e-2, 13 parameters (masses
# of links 2-7, damping of joints 1-7) from the model's values; 0.1 s windows (--window 50) and a
# fixed number of Levenberg-Marquardt iterations (--max-iter, default 2) so that every length
# does the same work per step. Per length: wall time and peak resident memory (GNU time) of the
# fit with the block solver (default), and of the dense solver up to DENSE_MAX seconds of data
# (its Jacobians are m x n with m and n both growing with the length: 10 s already needs more
# than 8 GB). Writes out/sysid_scaling/scaling.csv and scaling.png (gnuplot).
#   scripts/bench_sysid_scaling.sh [DURATION_S...]     (default 1 2 10 30 60 180 600)
# Environment: ITERS (2; 0: one evaluation with the normal equations and the standard errors,
# the same work at every length), DENSE_MAX (2), BUILD (build), NAME (scaling: NAME.csv,
# NAME.png), APPEND=1 (add to NAME.csv), PLOT_ONLY=1 (plot NAME.csv again).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$root/build}
sysid=$build/tools/mjdiff-sysid
[[ -x $sysid ]] || { echo "missing $sysid: build mjdiff-sysid first" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "GNU time (/usr/bin/time) needed" >&2; exit 1; }
out=$root/out/sysid_scaling
mkdir -p "$out"
durations=("$@")
((${#durations[@]})) || durations=(1 2 10 30 60 180 600)
iters=${ITERS:-2}
dense_max=${DENSE_MAX:-2}
model=$root/models/arm_box.xml
truth=(body:link2:mass=1.8 body:link3:mass=1.0 body:link4:mass=1.2 body:link5:mass=0.7
       body:link6:mass=0.6 body:link7:mass=0.35 joint:joint1:damping=2.5 joint:joint2:damping=1.6
       joint:joint3:damping=1.3 joint:joint4:damping=0.8 joint:joint5:damping=0.6
       joint:joint6:damping=0.4 joint:joint7:damping=0.25)
sets=() params=()
for t in "${truth[@]}"; do sets+=(--set "$t"); params+=(--param "${t%%=*}"); done
name=${NAME:-scaling}
csv=$out/$name.csv
[[ ${PLOT_ONLY:-0} == 1 ]] && durations=()
[[ ( ${APPEND:-0} == 1 || ${PLOT_ONLY:-0} == 1 ) && -s $csv ]] || echo "duration_s,steps,solver,wall_s,cpu_s,peak_mb,residuals,jacobians,evaluations,status" >"$csv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for dur in "${durations[@]+"${durations[@]}"}"; do
  rec=$tmp/arm_$dur.csv
  "$sysid" --quiet --generate "$rec" "${sets[@]}" --duration "$dur" --noise-qpos 1e-3 \
    --noise-qvel 1e-2 --seed 3 "$model"
  solvers=(blocks)
  if awk -v d="$dur" -v m="$dense_max" 'BEGIN { exit !(d <= m) }'; then solvers+=(dense); fi
  for solver in "${solvers[@]}"; do
    rc=0
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$sysid" --quiet --solver "$solver" --window 50 \
      --max-iter "$iters" "${params[@]}" --out "$tmp/r.json" "$model" "$rec" 2>"$tmp/err" || rc=$?
    read -r wall usr sys kb < <(tail -1 "$tmp/time")
    cpu=$(awk -v u="$usr" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    if [[ -s $tmp/r.json && ( $rc -eq 0 || $rc -eq 3 || $rc -eq 4 ) ]]; then
      python3 - "$tmp/r.json" "$dur" "$solver" "$wall" "$cpu" "$kb" >>"$csv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r['metrics']
print('%s,%d,%s,%s,%s,%.1f,%d,%d,%d,%s' % (sys.argv[2], round(float(sys.argv[2]) / 0.002),
      sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]) / 1024, m['residuals'],
      m['jacobians'], m['evaluations'], r['status']))
PY
    else
      echo "$dur,$(awk -v d="$dur" 'BEGIN{printf "%d", d/0.002}'),$solver,$wall,$cpu,$((kb / 1024)),,,,failed (exit $rc): $(tr '\n,' '  ' <"$tmp/err" | cut -c1-120)" >>"$csv"
    fi
    tail -1 "$csv"
  done
  rm -f "$rec"
done
if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 900,420 font ",10"
set output "$out/$name.png"
set datafile separator ","
set multiplot layout 1,2 title "mjdiff-sysid on the arm at 500 Hz, 13 parameters, 0.1 s windows, --max-iter $iters"
set logscale xy
set xlabel "recording (s)"
set grid
set key top left
set ylabel "time (s)"
plot "< grep ',blocks,' $csv | grep -v failed" using 1:4 with linespoints lw 2 title "blocks (Schur), wall", \
     "< grep ',blocks,' $csv | grep -v failed" using 1:5 with linespoints lw 2 dt 2 title "blocks, CPU", \
     "< grep ',dense,' $csv | grep -v failed" using 1:4 with points pt 7 ps 1.5 title "dense, wall", \
     x with lines lc rgb "gray" dt 3 title "1 s per s of data"
set ylabel "peak memory (MB)"
plot "< grep ',blocks,' $csv | grep -v failed" using 1:6 with linespoints lw 2 title "blocks (Schur)", \
     "< grep ',dense,' $csv | grep -v failed" using 1:6 with points pt 7 ps 1.5 title "dense", \
     2048 with lines dt 2 title "2 GB"
unset multiplot
GP
  echo "wrote $out/$name.png"
fi
echo "wrote $csv"
