#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Smoke test of mjdiff-bench-fidelity:
#   1. --help exits 0; an unknown option, a bad number and a model file as the report's path
#      (--json model.xml, which replaced the model) are usage errors (exit 2), the model untouched;
#   2. a short run on models/hopper.xml (--rest 1.5 --rounds 1 --steps 100 --json FILE) exits 0,
#      prints the table and writes JSON that python3 -m json.tool parses, with the per-model
#      fields for native, written and defaults (the hopper has 7 mjdiff_* numerics to strip) and
#      finite numbers for the hopper's penetrations, force difference, deviations, drifts and cost;
#   3. a sphere with a far too stiff written contact (mjdiff_contact_stiffness 1e8 on 1 kg at
#      10 ms) diverges as written: the JSON says diverged with the step's message and holds no
#      NaN, while the smooth defaults run (stripped numerics), and the table says "diverged";
#      a missing model in the same run is listed as skipped with its reason.
# Usage (ctest): bash bench_fidelity.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: bench_fidelity.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: bench_fidelity.sh BUILD_DIR SOURCE_DIR}
NAME=bench_fidelity

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

absolute_dirs
BENCH="$BUILD_DIR/tools/mjdiff-bench-fidelity"
MODEL="$SOURCE_DIR/models/hopper.xml"
[[ -x "$BENCH" ]] || fail "missing $BENCH (build the project first)"
[[ -f "$MODEL" ]] || fail "missing $MODEL"
command -v python3 >/dev/null || fail "python3 not found (needed to validate JSON)"

make_tmp mjdiff_bench_fidelity
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"   # MuJoCo may write MUJOCO_LOG.TXT to the working directory

# 1. usage
run "$BENCH" --help
[[ $RC -eq 0 ]] || fail "--help exited $RC"
grep -q -- "--json FILE" <<<"$OUT" || fail "--help does not list --json FILE"
run "$BENCH" --bogus "$MODEL"
[[ $RC -eq 2 ]] || fail "--bogus exited $RC, expected 2"
run "$BENCH" --rounds x "$MODEL"
[[ $RC -eq 2 ]] || fail "--rounds x exited $RC, expected 2"
# a model given where the report's path goes ("--json model.xml": the file was replaced by the
# report, and the default models run) is a usage error that leaves the model as it was
cp "$MODEL" "$TMP/model.xml"
run "$BENCH" --json "$TMP/model.xml" "$MODEL"
[[ $RC -eq 2 ]] || fail "--json model.xml exited $RC, expected 2"
grep -q "would replace that model file" <<<"$ERR" || fail "--json model.xml: no message: $ERR"
cmp -s "$MODEL" "$TMP/model.xml" || fail "--json model.xml changed the model file"

# 2. the hopper
run "$BENCH" --rest 1.5 --rounds 1 --steps 100 --json "$TMP/hopper.json" "$MODEL"
[[ $RC -eq 0 ]] || fail "run on hopper exited $RC: $ERR"
grep -q '^hopper  *written' <<<"$OUT" || fail "no 'hopper written' row in the table: $OUT"
grep -q '\[1/1\] hopper' <<<"$ERR" || fail "no progress line on stderr: $ERR"
python3 -m json.tool "$TMP/hopper.json" >/dev/null || fail "hopper JSON does not parse"
python3 - "$TMP/hopper.json" <<'PY' || fail "hopper JSON lacks fields or values"
import json, math, sys
j = json.load(open(sys.argv[1]))
for k in ("tool", "version", "model", "args", "status", "metrics", "series"):
    assert k in j, k
assert j["tool"] == "mjdiff-bench-fidelity" and j["status"] == "ok"
pm = j["metrics"]["per_model"]
assert len(pm) == 1 and pm[0]["name"] == "hopper", pm
r = pm[0]
assert r["stripped_numerics"] == 7 and r["defaults_same_as_written"] is False, r
common = ("ran", "diverged", "error", "rest_penetration_mm", "rest_mean_ncon", "energy_drift",
          "mean_normal_force_N", "us_per_step", "rest_tail_max_qvel")
smooth = ("normal_force_rms_diff_N", "body_deviation_mm_0_1s", "body_deviation_mm_0_5s",
          "step_cost_ratio")
for mode in ("native", "written", "defaults"):
    m = r[mode]
    keys = common + (smooth if mode != "native" else ())
    for k in keys:
        assert k in m, (mode, k)
    assert m["ran"] and not m["diverged"], (mode, m["error"])
    for k in keys[3:]:
        assert isinstance(m[k], (int, float)) and math.isfinite(m[k]), (mode, k, m[k])
    assert m["rest_penetration_mm"] > -5 and m["rest_penetration_mm"] < 50, (mode, m)
    assert m["rest_tail_max_qvel"] >= 0, (mode, m)
for mode in ("written", "defaults"):
    m = r[mode]
    assert m["step_cost_ratio"] > 0 and m["body_deviation_mm_0_5s"] >= 0, (mode, m)
assert len(j["series"]) == 1 and j["series"][0]["model"] == "hopper"
PY

# 3. divergence as written, the defaults running, a skipped model
cat >"$TMP/stiff.xml" <<'XML'
<mujoco model="stiff">
  <option timestep="0.01"/>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="1e8"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="ball" pos="0 0 0.2">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" mass="1"/>
    </body>
  </worldbody>
</mujoco>
XML
run "$BENCH" --rest 1 --rounds 1 --steps 50 --json "$TMP/stiff.json" "$TMP/stiff.xml" \
  "$TMP/missing.xml"
[[ $RC -eq 0 ]] || fail "run on stiff.xml exited $RC: $ERR"
grep -q '^stiff  *written  *diverged: ' <<<"$OUT" || fail "table does not say diverged: $OUT"
grep -q "^skipped: $TMP/missing.xml: does not load" <<<"$OUT" || fail "missing model not skipped: $OUT"
grep -qi 'nan' "$TMP/stiff.json" && fail "NaN in the JSON of a diverged run"
python3 -m json.tool "$TMP/stiff.json" >/dev/null || fail "stiff JSON does not parse"
python3 - "$TMP/stiff.json" <<'PY' || fail "stiff JSON wrong"
import json, sys
j = json.load(open(sys.argv[1]))
r = j["metrics"]["per_model"][0]
w, d = r["written"], r["defaults"]
assert w["diverged"] is True and w["error"], w
assert w["body_deviation_mm_0_5s"] is None and w["step_cost_ratio"] is None, w
assert d["diverged"] is False and r["stripped_numerics"] == 1, d
assert d["rest_penetration_mm"] is not None and d["step_cost_ratio"] is not None, d
sk = j["metrics"]["skipped"]
assert len(sk) == 1 and sk[0]["model"].endswith("missing.xml") and sk[0]["reason"], sk
PY
note "hopper: $(grep '^hopper' <<<"$OUT" | tr -s ' ')"
note "PASS"
exit 0
