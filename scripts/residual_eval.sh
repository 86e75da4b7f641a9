#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Neural residual forces against physics-only sysid and a pure network (issue 15 item 5).
# The plant: MuJoCo's native step (hard limits and contacts, its own solver) of a model with a
# hidden joint friction profile (friction loss and damping the user's model does not have).
# Cases: reacher (no contacts; friction loss 0.02, damping 0.03 for 0.01) and hopper (the foot's
# hard contacts with the floor; friction loss 2 and damping 1.5 for 0.5 on the leg's hinges).
# Training: 4 recordings of 4 s under random controls held 0.1 s, with sensor noise, and a fifth
# for the hybrid's early stopping (--val); held out: 2 recordings under chirp controls (controls
# unlike the training data). Three models, fitted on
# the same data:
#   (a) physics: mjdiff-sysid (Levenberg-Marquardt) on the joint dampings
#   (b) hybrid:  mjdiff-sysid --residual, the dampings and a residual force network jointly,
#                from (a)'s model
#   (c) network: mjdiff-sysid --mlp, x' = x + f(x, u)
# and their open-loop prediction errors on the held-out recordings (mjdiff-sysid --predict, the
# same windows and errors for all three), at 0.1 s, 0.5 s and the whole 4 s. The networks' errors
# depend on their initial weights: (b) and (c) are trained with --seeds N seeds (default 3) and
# reported as the median (min and max in errors.csv).
# Output in OUT (default residual-out): errors.csv, errors.png (gnuplot, if installed).
#   scripts/residual_eval.sh [--case reacher|hopper] [--epochs N] [--spec SPEC] [--seeds N]
#                            [--out DIR]
# Needs a build in build/ (scripts/setup.sh + cmake).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${MJDIFF_BIN:-$root/build/tools}
case=reacher epochs= spec= seeds=3 out=residual-out
while [[ $# -gt 0 ]]; do
  case $1 in
    --case) case=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n 3,25p "$0"; exit 0 ;;
    *) echo "residual_eval.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
sysid=$bin/mjdiff-sysid
case $case in
  reacher)
    model=$root/models/reacher.xml
    hidden=(--set "joint:*:frictionloss=0.02" --set "joint:*:damping=0.03")
    fitp=(--param "joint:*:damping")
    lm=() ; epochs=${epochs:-200} spec=${spec:-mlp:32,32} ;;
  hopper)
    model=$root/models/hopper.xml
    hidden=() fitp=()
    for j in thigh_joint leg_joint foot_joint; do
      hidden+=(--set "joint:$j:frictionloss=2" --set "joint:$j:damping=1.5")
      fitp+=(--param "joint:$j:damping")
    done
    lm=(--max-iter 50) ; epochs=${epochs:-100} spec=${spec:-mlp:64,64} ;;
  *) echo "residual_eval.sh: --case must be reacher or hopper, got '$case'" >&2; exit 2 ;;
esac
train=() test=()
for i in 1 2 3 4; do
  "$sysid" --generate "$out/train$i.csv" --plant native --duration 4 --seed $i "${hidden[@]}" \
    --noise-qpos 0.0005 --noise-qvel 0.005 "$model" >/dev/null
  train+=("$out/train$i.csv")
done
# validation (early stopping of the hybrid): one more recording of random controls
"$sysid" --generate "$out/val5.csv" --plant native --duration 4 --seed 5 "${hidden[@]}" \
  --noise-qpos 0.0005 --noise-qvel 0.005 "$model" >/dev/null
for i in 11 12; do
  "$sysid" --generate "$out/test$i.csv" --plant native --ctrl chirp --duration 4 --seed $i \
    "${hidden[@]}" "$model" >/dev/null
  test+=("$out/test$i.csv")
done
echo "residual_eval: recordings in $out (hidden: ${hidden[*]})" >&2

t0=$(date +%s.%N)
rc=0
"$sysid" --quiet "${fitp[@]}" "${lm[@]}" --xml "$out/physics.xml" --out "$out/physics.json" \
  "$model" "${train[@]}" >/dev/null || rc=$?
[[ $rc -eq 0 || $rc -eq 3 || $rc -eq 4 ]] || { echo "residual_eval: physics fit failed" >&2; exit 1; }
t1=$(date +%s.%N)
echo "residual_eval: (a) physics fitted" >&2
for k in $(seq "$seeds"); do
  "$sysid" --residual "$spec" --epochs "$epochs" --seed "$k" --val "$out/val5.csv" \
    --weights "$out/hybrid$k.npz" \
    "${fitp[@]}" --xml "$out/hybrid$k.xml" --out "$out/hybrid$k.json" \
    "$out/physics.xml" "${train[@]}" >"$out/hybrid$k.txt"
  echo "residual_eval: (b) hybrid fitted, seed $k" >&2
done
t2=$(date +%s.%N)
for k in $(seq "$seeds"); do
  "$sysid" --quiet --mlp mlp:64,64 --seed "$k" --weights "$out/network$k.npz" "$model" \
    "${train[@]}"
  echo "residual_eval: (c) network trained, seed $k" >&2
done
t3=$(date +%s.%N)

predict() {  # name, then the model and options
  local name=$1
  shift
  "$sysid" --predict --horizon 0.1 --horizon 0.5 --horizon 0 --out "$out/$name.predict.json" \
    "$@" "${test[@]}" >/dev/null
}
predict physics "$out/physics.xml"
for k in $(seq "$seeds"); do
  predict hybrid$k --residual-weights "$out/hybrid$k.npz" "$out/hybrid$k.xml"
  predict network$k --mlp-weights "$out/network$k.npz" "$model"
done

# errors.csv: model, horizon, joint, median rms over the seeds (m or rad), min, max, fit time per
# seed (s)
python3 - "$out" "$seeds" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, math, statistics, sys
out, seeds, t = sys.argv[1], int(sys.argv[2]), [float(x) for x in sys.argv[3:]]
times = {"physics": t[1] - t[0], "hybrid": (t[2] - t[1]) / seeds, "network": (t[3] - t[2]) / seeds}
def errors(path):
    rep = json.load(open(path))
    res = []
    for h in rep["metrics"]["horizons"]:
        hz = "whole" if h["whole"] else f"{h['horizon_s']:g} s"
        # a null (non-finite) error stays NaN here and an empty field in the CSV
        res += [((hz, j["joint"]), math.nan if j["rms"] is None else j["rms"])
                for j in h["joints"]]
    return res
rows = []
for name in ("physics", "hybrid", "network"):
    files = [f"{out}/physics.predict.json"] if name == "physics" else \
            [f"{out}/{name}{k}.predict.json" for k in range(1, seeds + 1)]
    runs = [errors(f) for f in files]
    for i, (key, _) in enumerate(runs[0]):
        v = [r[i][1] for r in runs]
        if any(math.isnan(x) for x in v):
            med = lo = hi = math.nan
        else:
            med, lo, hi = statistics.median(v), min(v), max(v)
        rows.append((name, key[0], key[1], med, lo, hi, times[name]))
def field(x):
    return "" if not math.isfinite(x) else "%.6e" % x
with open(f"{out}/errors.csv", "w") as f:
    f.write("model,horizon,joint,rms,rms_min,rms_max,fit_s\n")
    for r in rows:
        f.write(",".join(list(r[:3]) + [field(x) for x in r[3:6]] + ["%.2f" % r[6]]) + "\n")
print("%-9s %-8s %-12s %12s %12s %12s" % ("model", "horizon", "joint", "median rms", "min", "max"))
for r in rows:
    print("%-9s %-8s %-12s %12.4e %12.4e %12.4e" % r[:6])
print("fit time per seed: " + ", ".join("%s %.1f s" % (k, v) for k, v in times.items()))
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
val = {(r["model"], r["horizon"], r["joint"]): r["rms"] or "NaN" for r in rows}  # NaN: missing
with open(f"{out}/errors.dat", "w") as f:
    for h, j in keys:
        f.write('"%s %s" %s %s %s\n' % (h, j, val[("physics", h, j)], val[("hybrid", h, j)],
                                     val[("network", h, j)]))
PY
  gnuplot <<GP
set terminal pngcairo size 900,450 noenhanced
set output "$out/errors.png"
set title "$case: open-loop error on held-out chirps (native plant, hidden friction; networks: median of $seeds seeds)"
set style data histograms
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel "RMS position error (rad or m)"
set key top left Left reverse
set xtics rotate by -30 font ",9"
plot "$out/errors.dat" using 2:xtic(1) title "(a) physics sysid", \
     "" using 3 title "(b) hybrid: physics + residual network", \
     "" using 4 title "(c) pure network"
GP
  echo "residual_eval: $out/errors.png" >&2
fi
