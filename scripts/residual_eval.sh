#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Neural residual forces against physics-only sysid and a pure network (issue 15 item 5).
# The plant: MuJoCo's native step (hard limits, its own solver) of a model with a hidden joint
# friction profile (friction loss and damping the user's model does not have). Training: 4
# recordings of 4 s under random controls held 0.1 s, with sensor noise; held out: 2 recordings
# under chirp controls (controls unlike the training data). Three models, fitted on the same data:
#   (a) physics: mjdiff-sysid (Levenberg-Marquardt) on the joint dampings
#   (b) hybrid:  mjdiff-sysid --residual, the dampings and a residual force network jointly,
#                from (a)'s model
#   (c) network: mjdiff-sysid --mlp, x' = x + f(x, u)
# and their open-loop prediction errors on the held-out recordings (mjdiff-sysid --predict, the
# same windows and errors for all three), at 0.1 s, 0.5 s and the whole 4 s.
# Output in OUT (default residual-out): errors.csv, errors.png (gnuplot, if installed).
#   scripts/residual_eval.sh [--model FILE] [--epochs N] [--spec SPEC] [--out DIR]
# Needs a build in build/ (scripts/setup.sh + cmake).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${MJDIFF_BIN:-$root/build/tools}
model=$root/models/reacher.xml epochs=200 spec=mlp:32,32 out=residual-out
while [[ $# -gt 0 ]]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n 3,18p "$0"; exit 0 ;;
    *) echo "residual_eval.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
sysid=$bin/mjdiff-sysid
hidden=(--set "joint:*:frictionloss=0.02" --set "joint:*:damping=0.03")
train=() test=()
for i in 1 2 3 4; do
  "$sysid" --generate "$out/train$i.csv" --plant native --duration 4 --seed $i "${hidden[@]}" \
    --noise-qpos 0.0005 --noise-qvel 0.005 "$model" >/dev/null
  train+=("$out/train$i.csv")
done
for i in 11 12; do
  "$sysid" --generate "$out/test$i.csv" --plant native --ctrl chirp --duration 4 --seed $i \
    "${hidden[@]}" "$model" >/dev/null
  test+=("$out/test$i.csv")
done
echo "residual_eval: recordings in $out (hidden: ${hidden[*]})" >&2

t0=$(date +%s.%N)
"$sysid" --quiet --param "joint:*:damping" --xml "$out/physics.xml" --out "$out/physics.json" \
  "$model" "${train[@]}" >/dev/null || [[ $? -eq 4 ]]
t1=$(date +%s.%N)
echo "residual_eval: (a) physics fitted" >&2
"$sysid" --residual "$spec" --epochs "$epochs" --weights "$out/hybrid.npz" \
  --param "joint:*:damping" --xml "$out/hybrid.xml" --out "$out/hybrid.json" \
  "$out/physics.xml" "${train[@]}" >"$out/hybrid.txt"
t2=$(date +%s.%N)
echo "residual_eval: (b) hybrid fitted" >&2
"$sysid" --quiet --mlp mlp:64,64 --weights "$out/network.npz" "$model" "${train[@]}"
t3=$(date +%s.%N)
echo "residual_eval: (c) network trained" >&2

predict() {  # name, then the model and options
  local name=$1
  shift
  "$sysid" --predict --horizon 0.1 --horizon 0.5 --horizon 0 --out "$out/$name.predict.json" \
    "$@" "${test[@]}" >/dev/null
}
predict physics "$out/physics.xml"
predict hybrid --residual-weights "$out/hybrid.npz" "$out/hybrid.xml"
predict network --mlp-weights "$out/network.npz" "$model"

# errors.csv: model, horizon, joint, rms (rad), fit time (s)
python3 - "$out" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, sys
out, t = sys.argv[1], [float(x) for x in sys.argv[2:]]
times = {"physics": t[1] - t[0], "hybrid": t[2] - t[1], "network": t[3] - t[2]}
rows = []
for name in ("physics", "hybrid", "network"):
    rep = json.load(open(f"{out}/{name}.predict.json"))
    for h in rep["metrics"]["horizons"]:
        hz = "whole" if h["whole"] else f"{h['horizon_s']:g} s"
        for j in h["joints"]:
            rows.append((name, hz, j["joint"], j["rms"], times[name]))
with open(f"{out}/errors.csv", "w") as f:
    f.write("model,horizon,joint,rms,fit_s\n")
    for r in rows:
        f.write("%s,%s,%s,%.6e,%.2f\n" % r)
print("%-9s %-8s %-10s %12s" % ("model", "horizon", "joint", "rms (rad)"))
for r in rows:
    print("%-9s %-8s %-10s %12.4e" % r[:4])
print("fit time: " + ", ".join("%s %.1f s" % (k, v) for k, v in times.items()))
PY

if command -v gnuplot >/dev/null; then
  # one bar group per (horizon, joint), one bar per model
  python3 - "$out" <<'PY'
import csv, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/errors.csv")))
keys = []
for r in rows:
    k = (r["horizon"], r["joint"])
    if k not in keys:
        keys.append(k)
val = {(r["model"], r["horizon"], r["joint"]): r["rms"] for r in rows}
with open(f"{out}/errors.dat", "w") as f:
    for h, j in keys:
        f.write('"%s %s" %s %s %s\n' % (h, j, val[("physics", h, j)], val[("hybrid", h, j)],
                                     val[("network", h, j)]))
PY
  gnuplot <<GP
set terminal pngcairo size 900,450 noenhanced
set output "$out/errors.png"
set title "Open-loop prediction error on held-out chirp recordings (native plant, hidden friction)"
set style data histograms
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel "RMS position error (rad)"
set key top left Left reverse
set xtics rotate by -20
plot "$out/errors.dat" using 2:xtic(1) title "(a) physics sysid", \
     "" using 3 title "(b) hybrid: physics + residual network", \
     "" using 4 title "(c) pure network"
GP
  echo "residual_eval: $out/errors.png" >&2
fi
