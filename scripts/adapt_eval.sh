#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Evaluation of mjdiff-mpc --adapt (issue 18 item 2): closed-loop cost after a change in the plant
# and parameter tracking, for three models of the planner:
#   fixed     the nominal model (never told of the change)
#   oracle    --oracle PARAMS: the planner's values follow the plant's (model = plant)
#   adapting  --adapt PARAMS: estimated online from the plant's noisy readings
# Scenarios (native plant, a plant file of tools/common/plant.h):
#   arm      models/arm_box.xml with tools/mpc/arm_box_hold.task (hold the fingertip in the
#            air) and tools/mpc/arm_box_payload.plant: a 3 kg payload on the wrist (link7,
#            0.3 kg) at 1 s, readings with noise 0.002; adapts body:link7:mass from the joint
#            encoders and velocities; 3 s, scored from 1 s (the change) on
#   hopper   models/hopper.xml with its task and tools/mpc/hopper_ice.plant: the floor's (and the
#            foot's) sliding friction 0.9 -> 0.2 at 1.5 s; adapts both from every joint
#            encoder and velocity; 4 s, scored from 1.5 s on
#   cheetah  models/cheetah.xml (its floor has contact priority: its friction is the contact's)
#            with tools/mpc/cheetah_stop.task (walk to a mark 1 m ahead, stand there level) and
#            tools/mpc/cheetah_ice.plant: the floor turns to ice on the way (0.4 -> 0.05 at
#            0.5 s); adapts geom:floor:friction[0] from every joint encoder and velocity; 4 s,
#            scored from 0.5 s on
# Every run: iLQR, 2 iterations per control step (--iterations: reproducible on a loaded machine,
# whatever the wall time), seed 1 (or $SEED: SEED=2 scripts/adapt_eval.sh cheetah).
#   scripts/adapt_eval.sh [BUILD_DIR] [CASE...]       (default build, arm hopper cheetah)
# Output in out/adapt_eval/: CASE_MODEL.json (mjdiff-mpc --out), table.md (the README's table),
# track_CASE.dat, cost_CASE.dat and adapt.png (parameter tracking and running cost).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
cases=()
for a in "$@"; do
  case $a in
    arm|hopper|cheetah) cases+=("$a") ;;
    -h|--help) sed -n '3,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) if [[ -d $a ]]; then build="$(cd "$a" && pwd)"; else
         echo "adapt_eval.sh: unknown argument '$a' (cases: arm hopper cheetah, or a build directory)" >&2
         exit 2
       fi ;;
  esac
done
((${#cases[@]})) || cases=(arm hopper cheetah)
mpc="$build/tools/mjdiff-mpc"
[[ -x $mpc ]] || { echo "adapt_eval.sh: $mpc not built" >&2; exit 1; }
out="$root/out/adapt_eval"
mkdir -p "$out"

arm_sensors=$(printf 'joint%d_pos,' 1 2 3 4 5 6 7; printf 'joint%d_vel,' 1 2 3 4 5 6 7)
joint_sensors() {  # JOINT...: the encoder and velocity sensors of each joint, comma-separated
  local j
  for j in "$@"; do printf '%s_pos,%s_vel,' "$j" "$j"; done
}
hop_sensors=$(joint_sensors rootx rootz rooty thigh leg foot)
chee_sensors=$(joint_sensors rootx rootz rooty bthigh bshin bfoot fthigh fshin ffoot)

for c in "${cases[@]}"; do
  if [[ $c == arm ]]; then
    args=("$root/models/arm_box.xml" --task "$root/tools/mpc/arm_box_hold.task"
          --plant "$root/tools/mpc/arm_box_payload.plant" --seconds 3 --score-after 1)
    params="body:link7:mass"
    adapt=(--adapt-sensors "${arm_sensors%,}" --adapt-sigma 0.002)
  elif [[ $c == cheetah ]]; then
    args=("$root/models/cheetah.xml" --task "$root/tools/mpc/cheetah_stop.task"
          --plant "$root/tools/mpc/cheetah_ice.plant" --seconds 4 --score-after 0.5)
    params="geom:floor:friction[0]"
    adapt=(--adapt-sensors "${chee_sensors%,}" --adapt-sigma 0.002)
  else
    args=("$root/models/hopper.xml" --plant "$root/tools/mpc/hopper_ice.plant" --seconds 4
          --score-after 1.5)
    params="geom:floor:friction[0],geom:foot_geom:friction[0]"
    adapt=(--adapt-sensors "${hop_sensors%,}" --adapt-sigma 0.002)
  fi
  common=(--planner ilqr --iterations 2 --seed "${SEED:-1}" --quiet)
  echo "adapt_eval: $c fixed" >&2
  "$mpc" "${args[@]}" "${common[@]}" --out "$out/${c}_fixed.json" > "$out/${c}_fixed.txt" || true
  echo "adapt_eval: $c oracle" >&2
  "$mpc" "${args[@]}" "${common[@]}" --oracle "$params" --out "$out/${c}_oracle.json" \
    > "$out/${c}_oracle.txt" || true
  echo "adapt_eval: $c adapting" >&2
  "$mpc" "${args[@]}" "${common[@]}" --adapt "$params" "${adapt[@]}" \
    --out "$out/${c}_adapt.json" > "$out/${c}_adapt.txt" || true
done

# the table and the plot data
python3 - "$out" "${cases[@]}" <<'EOF'
import json, sys, os, statistics
out, cases = sys.argv[1], sys.argv[2:]
rows = ["| scenario | cost after the change: fixed | oracle | adapting | adapting / oracle "
        "| fixed / oracle | parameter: nominal -> plant | estimate at the end | windows to "
        "within 10% | median estimate after the change | fit ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
for c in cases:
    r = {k: json.load(open(os.path.join(out, f"{c}_{k}.json"))) for k in ("fixed", "oracle", "adapt")}
    cost = {k: r[k]["metrics"].get("mean_cost_after") for k in r}
    status = {k: r[k]["status"] for k in r}
    a = r["adapt"].get("adapt", {})
    names, t, est, tru = a.get("params", []), a.get("t_s", []), a.get("estimate", []), a.get("plant", [])
    after = r["adapt"]["metrics"]["score_after_s"]
    for k in r:
        s = r[k]["series"]
        with open(os.path.join(out, f"cost_{c}.dat"), "w" if k == "fixed" else "a") as f:
            f.write(f"# {k}\n")
            for ti, ci in zip(s["t_s"], s["cost"]):
                f.write(f"{ti} {ci}\n")
            f.write("\n\n")
    with open(os.path.join(out, f"track_{c}.dat"), "w") as f:
        f.write("# t_s " + " ".join(f"est_{n} plant_{n}" for n in names) + "\n")
        for k in range(len(t)):
            f.write(f"{t[k]} " + " ".join(f"{est[k][i]} {tru[k][i]}" for i in range(len(names))) + "\n")
    # windows after the change until every estimate is within 10% of the plant's value (and stays)
    settle = "never"
    idx = [k for k in range(len(t)) if t[k] >= after]
    for j, k0 in enumerate(idx):
        if all(all(abs(est[k][i] - tru[k][i]) <= 0.1 * abs(tru[k][i]) for i in range(len(names)))
               for k in idx[j:]):
            settle = str(j + 1)
            break
    # the median estimate over the windows after the change (noisy estimates: the typical value)
    med = "n/a"
    if idx:
        med = "; ".join(f"{statistics.median(est[k][i] for k in idx):.3g}" for i in range(len(names)))
    fmt = lambda x: "n/a" if x is None else f"{x:.4g}"
    ratio = lambda x, y: "n/a" if x is None or y is None or y == 0 else f"{x / y:.2f}"
    fails = ", ".join(f"{k} {status[k]}" for k in status if status[k] != "ok")
    params = "; ".join(f"{n}: {tru[0][i]:.3g} -> {tru[-1][i]:.3g}" for i, n in enumerate(names)) if t else "n/a"
    final = "; ".join(f"{est[-1][i]:.3g}" for i in range(len(names))) if t else "n/a"
    rows.append(f"| {c}{' (' + fails + ')' if fails else ''} | {fmt(cost['fixed'])} | {fmt(cost['oracle'])} | "
                f"{fmt(cost['adapt'])} | {ratio(cost['adapt'], cost['oracle'])} | "
                f"{ratio(cost['fixed'], cost['oracle'])} | {params} | {final} | {settle} | {med} | "
                f"{fmt(a.get('fit_ms'))} |")
open(os.path.join(out, "table.md"), "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
EOF

# the plot: per case, the estimate against the plant's value, and the running cost of the three
{
  echo "set terminal pngcairo size 1200,$((420 * ${#cases[@]})) font ',10'"
  echo "set output '$out/adapt.png'"
  echo "set multiplot layout ${#cases[@]},2"
  echo "set grid; set key top left"
  for c in "${cases[@]}"; do
    n=$(head -1 "$out/track_$c.dat" | wc -w); n=$(((n - 2) / 2))
    echo "set title '$c: parameter estimate (adapting) and the plant''s value'; set xlabel 't (s)'; set logscale y; set ylabel 'value'"
    plot="plot"
    for ((i = 0; i < n; i++)); do
      e=$((2 + 2 * i)); p=$((3 + 2 * i))
      plot+=" '$out/track_$c.dat' u 1:$e w lp pt 7 ps 0.5 t 'estimate $((i + 1))', '' u 1:$p w l dt 2 lw 2 t 'plant $((i + 1))',"
    done
    echo "${plot%,}"
    echo "unset logscale y; set logscale y; set title '$c: running cost'; set ylabel 'cost'"
    echo "plot '$out/cost_$c.dat' i 0 u 1:2 w l t 'fixed', '' i 1 u 1:2 w l t 'oracle', '' i 2 u 1:2 w l t 'adapting'"
    echo "unset logscale y"
  done
  echo "unset multiplot"
} > "$out/adapt.gp"
gnuplot "$out/adapt.gp" && echo "adapt_eval: wrote $out/table.md and $out/adapt.png" >&2
