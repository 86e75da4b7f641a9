#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Smoke test of the step-derivative tools:
#   1. mjdiff-check --states 5 on models/arm_box.xml passes (exit 0) and its --json is valid;
#      with --columns 12 (of its 33) each state draws 8 + 8 + 7 columns (the q, v and ctrl
#      groups' minimum of 8, ctrl has 7), and the JSON counts them;
#   2. mjdiff-check on a tilted ellipsoid dropped off-centre onto a flat height field (exact prism
#      contacts, convex.c / convex_d.c; the shared-edge kink is test_convex's
#      GeomOverSharedPrismEdge) passes (exit 0) with contacts at every state; on a model the step derivatives do not cover (a muscle actuator)
#      exits 1 with the library's message naming the actuator and the missing derivative; on an
#      implicit-integrator model exits 1 naming the integrator; on a run that runs away before
#      its states exits 1 saying so (not as derivative errors);
#   3. mjdiff-check --bogus and a missing model are usage errors (exit 2); --help exits 0;
#   4. mjdiff-bench-step --rounds 1 models/cartpole.xml --json prints valid JSON with the
#      step, VJP, JVP, Jacobian and mjd_transitionFD times;
#   5. mjdiff-bench-rollout --rounds 1 --horizon 20 --fd-sample 3 models/cartpole.xml --json prints
#      valid JSON with the rollout, gradient and finite-difference times, the memory figures and
#      the T = 10000 checkpointed run; --bogus exits 2, --help 0.
# Usage (ctest): bash tools_step.sh BUILD_DIR SOURCE_DIR
set -uo pipefail

BUILD_DIR=${1:?usage: tools_step.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: tools_step.sh BUILD_DIR SOURCE_DIR}
NAME=tools_step

fail() {
  echo "$NAME: FAIL: $*" >&2
  exit 1
}
note() {
  echo "$NAME: $*" >&2
}

BUILD_DIR=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || fail "no build directory $1"
SOURCE_DIR=$(cd "$SOURCE_DIR" 2>/dev/null && pwd) || fail "no source directory $2"
CHECK="$BUILD_DIR/tools/mjdiff-check"
BENCH="$BUILD_DIR/tools/mjdiff-bench-step"
ROLLOUT="$BUILD_DIR/tools/mjdiff-bench-rollout"
[[ -x "$CHECK" ]] || fail "missing $CHECK (build the project first)"
[[ -x "$BENCH" ]] || fail "missing $BENCH (build the project first)"
[[ -x "$ROLLOUT" ]] || fail "missing $ROLLOUT (build the project first)"
command -v python3 >/dev/null || fail "python3 not found (needed to validate JSON)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mjdiff_tools_step.XXXXXX") || fail "cannot make a temp directory"
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || fail "cannot enter $TMP"   # MuJoCo may write MUJOCO_LOG.TXT to the working directory

# run CMD...: sets RC, OUT (stdout) and ERR (stderr)
run() {
  "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

# 1. a supported model with contacts passes
run "$CHECK" --states 5 "$SOURCE_DIR/models/arm_box.xml"
[[ $RC -eq 0 ]] || fail "mjdiff-check arm_box.xml: exit $RC, expected 0; stdout: $OUT; stderr: $ERR"
grep -q "A_vq" <<<"$OUT" || fail "mjdiff-check arm_box.xml: no A_vq row in the table: $OUT"
grep -q "result: PASS" <<<"$OUT" || fail "mjdiff-check arm_box.xml: no PASS line: $OUT"
run "$CHECK" --states 2 --quiet --json "$SOURCE_DIR/models/arm_box.xml"
[[ $RC -eq 0 ]] || fail "mjdiff-check --json arm_box.xml: exit $RC; stderr: $ERR"
python3 -m json.tool "$TMP/out" >/dev/null || fail "mjdiff-check --json: invalid JSON: $OUT"
python3 - "$TMP/out" <<'EOF' || fail "mjdiff-check --json: unexpected content: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["tool"] == "mjdiff-check" and j["status"] == "ok", j["status"]
for key in ("version", "model", "args", "metrics", "series"):
    assert key in j, key
assert set(j["metrics"]["worst"]) == {"A_qq", "A_qv", "A_vq", "A_vv", "B_q", "B_v"}
assert len(j["series"]) == 2
EOF
run "$CHECK" --states 2 --quiet --json --columns 12 "$SOURCE_DIR/models/arm_box.xml"
[[ $RC -eq 0 ]] || fail "mjdiff-check --columns 12 arm_box.xml: exit $RC; stderr: $ERR"
python3 - "$TMP/out" <<'EOF' || fail "mjdiff-check --columns 12: unexpected content: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
mt = j["metrics"]
assert j["args"]["columns"] == 12 and mt["columns"] == 33, (j["args"], mt["columns"])
# 13 q, 13 v, 7 ctrl columns: shares 5, 5, 3 -> at least 8 of each: 8 + 8 + 7 = 23 per state
assert mt["columns_drawn"] == 2 * 23, mt["columns_drawn"]
assert 0 < mt["columns_compared"] <= mt["columns_drawn"]
assert all(s["columns"] == 23 for s in j["series"]), [s["columns"] for s in j["series"]]
EOF
note "mjdiff-check arm_box.xml: ok"

# 2. an ellipsoid on a height field (exact prism contacts) passes; unsupported features: the
#    library's message, exit 1
cat >"$TMP/ellipsoid.xml" <<'EOF'
<mujoco>
  <asset>
    <hfield name="terrain" nrow="4" ncol="4" size="2 2 0.1 0.1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="hfield" hfield="terrain"/>
    <body pos="0.23 -0.17 0.3" euler="10 20 30">
      <freejoint/>
      <geom name="egg" type="ellipsoid" size="0.1 0.15 0.2" mass="1"/>
    </body>
  </worldbody>
</mujoco>
EOF
run "$CHECK" --states 5 "$TMP/ellipsoid.xml"
[[ $RC -eq 0 ]] ||
  fail "mjdiff-check on an ellipsoid on a height field: exit $RC, expected 0; stdout: $OUT; stderr: $ERR"
grep -q "result: PASS" <<<"$OUT" || fail "ellipsoid: no PASS line: $OUT"
grep -q "contacts: 5 of 5 states, 5 of 5 compared states" <<<"$OUT" ||
  fail "ellipsoid: not every state compared with contacts: $OUT"
note "mjdiff-check on an ellipsoid on a height field: ok"

cat >"$TMP/muscle.xml" <<'EOF'
<mujoco>
  <worldbody>
    <body name="arm">
      <joint name="elbow" type="hinge" axis="0 1 0" limited="true" range="-1 1"/>
      <geom name="link" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <muscle name="biceps" joint="elbow"/>
  </actuator>
</mujoco>
EOF
run "$CHECK" --states 5 "$TMP/muscle.xml"
[[ $RC -eq 0 ]] || fail "mjdiff-check on a muscle actuator: exit $RC, expected 0; $ERR"
grep -q "result: PASS" <<<"$OUT" || fail "muscle: no PASS line: $OUT"
note "mjdiff-check on a muscle actuator: ok"

# a user gain (MuJoCo's callback) has no derivative: refused by name
sed -e 's|<muscle name="biceps" joint="elbow"/>|<general name="biceps" joint="elbow" gaintype="user"/>|' \
    "$TMP/muscle.xml" >"$TMP/user.xml"
run "$CHECK" --states 5 "$TMP/user.xml"
[[ $RC -eq 1 ]] || fail "mjdiff-check on a user-gain actuator: exit $RC, expected 1; $ERR"
grep -q "MJDIFF_ERR_UNSUPPORTED" <<<"$ERR" || fail "user gain: no MJDIFF_ERR_UNSUPPORTED: $ERR"
grep -q "'biceps'" <<<"$ERR" || fail "user gain: the message does not name the actuator: $ERR"
grep -q "has no derivative" <<<"$ERR" ||
  fail "user gain: the message does not name the missing derivative: $ERR"
note "mjdiff-check on a user-gain actuator: exit 1, $ERR"

sed -e 's|<worldbody>|<option integrator="implicit"/>\n  <worldbody>|' \
    -e 's|type="ellipsoid" size="0.1 0.15 0.2"|type="sphere" size="0.1"|' \
    -e 's|type="hfield" hfield="terrain"|type="plane" size="2 2 0.1"|' \
    "$TMP/ellipsoid.xml" >"$TMP/implicit.xml"
run "$CHECK" --states 5 "$TMP/implicit.xml"
[[ $RC -eq 1 ]] || fail "mjdiff-check on an implicit-integrator model: exit $RC, expected 1; $ERR"
grep -q "implicit" <<<"$ERR" || fail "implicit: the message does not name the integrator: $ERR"
note "mjdiff-check on an implicit-integrator model: exit 1, $ERR"

# a run that diverges before the states are taken (a limit law past its stable timestep,
# 5e4 N/m at 10 ms): named as the forward's failure (the Jacobians of a run-away state say
# nothing), not as derivative errors
cat >"$TMP/runaway.xml" <<'EOF2'
<mujoco>
  <option timestep="0.01"/>
  <custom>
    <numeric name="mjdiff_limit_stiffness" data="5e4"/>
    <numeric name="mjdiff_limit_damping" data="0"/>
  </custom>
  <worldbody>
    <body name="cart">
      <joint name="slide" type="slide" axis="1 0 0" limited="true" range="-0.1 0.1"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor joint="slide" gear="10" ctrllimited="true" ctrlrange="0.5 1"/></actuator>
</mujoco>
EOF2
run "$CHECK" --states 3 "$TMP/runaway.xml"
[[ $RC -eq 1 ]] || fail "mjdiff-check on a run-away model: exit $RC, expected 1; $ERR"
grep -q "ran away: |qvel\[0\]|" <<<"$ERR" || fail "runaway: the message does not say it ran away: $ERR"
grep -q "energy gained .* the actuators' work" <<<"$ERR" || fail "runaway: no energy account: $ERR"
grep -q "FAILED: block" <<<"$ERR$OUT" && fail "runaway: reported as derivative errors: $ERR"
note "mjdiff-check on a run-away model: exit 1, $ERR"

# a run that runs away under its actuators (a free cart pushed by a 1e4 N motor: their work is
# the energy gained) is not the smooth model's divergence: the states are taken earlier, pass
cat >"$TMP/driven.xml" <<'EOF2'
<mujoco>
  <worldbody>
    <body name="cart">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor joint="slide" gear="1e4" ctrllimited="true" ctrlrange="0.5 1"/></actuator>
</mujoco>
EOF2
run "$CHECK" --states 3 "$TMP/driven.xml"
[[ $RC -eq 0 ]] || fail "mjdiff-check on an actuator-driven runaway: exit $RC, expected 0; $ERR"
grep -q "result: PASS" <<<"$OUT" || fail "driven: no PASS: $OUT"
note "mjdiff-check on an actuator-driven runaway: states taken before it, PASS"

# 3. usage
run "$CHECK" --bogus
[[ $RC -eq 2 ]] || fail "mjdiff-check --bogus: exit $RC, expected 2"
run "$CHECK" --states x "$SOURCE_DIR/models/arm_box.xml"
[[ $RC -eq 2 ]] || fail "mjdiff-check --states x: exit $RC, expected 2"
run "$CHECK"
[[ $RC -eq 2 ]] || fail "mjdiff-check without a model: exit $RC, expected 2"
run "$CHECK" --help
[[ $RC -eq 0 ]] || fail "mjdiff-check --help: exit $RC, expected 0"
grep -q -- "--tol" <<<"$OUT" || fail "mjdiff-check --help does not list --tol"
run "$BENCH" --bogus
[[ $RC -eq 2 ]] || fail "mjdiff-bench-step --bogus: exit $RC, expected 2"
run "$BENCH" --help
[[ $RC -eq 0 ]] || fail "mjdiff-bench-step --help: exit $RC, expected 0"
note "usage errors and --help: ok"

# 4. the benchmark's JSON
run "$BENCH" --rounds 1 "$SOURCE_DIR/models/cartpole.xml" --json
[[ $RC -eq 0 ]] || fail "mjdiff-bench-step cartpole.xml: exit $RC, expected 0; stderr: $ERR"
python3 -m json.tool "$TMP/out" >/dev/null || fail "mjdiff-bench-step --json: invalid JSON: $OUT"
python3 - "$TMP/out" <<'EOF' || fail "mjdiff-bench-step --json: unexpected content: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["tool"] == "mjdiff-bench-step" and j["status"] == "ok", j["status"]
(m,) = j["metrics"]["per_model"]
assert m["name"] == "cartpole" and m["rounds"] == 1
for op in ("step", "vjp", "jvp", "jacobian", "fd_forward", "fd_centered"):
    assert m["us_per_call"][op] > 0, op
    assert m["failed_calls"][op] == 0, op
assert len(j["series"]) == 1
EOF
note "mjdiff-bench-step --json cartpole.xml: ok"

# 5. the rollout benchmark's JSON
run "$ROLLOUT" --rounds 1 --horizon 20 --fd-sample 3 "$SOURCE_DIR/models/cartpole.xml" --json
[[ $RC -eq 0 ]] || fail "mjdiff-bench-rollout cartpole.xml: exit $RC, expected 0; stderr: $ERR"
python3 -m json.tool "$TMP/out" >/dev/null || fail "mjdiff-bench-rollout --json: invalid JSON: $OUT"
python3 - "$TMP/out" <<'EOF' || fail "mjdiff-bench-rollout --json: unexpected content: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["tool"] == "mjdiff-bench-rollout" and j["status"] == "ok", j["status"]
for key in ("version", "model", "args", "metrics", "series"):
    assert key in j, key
(m,) = j["metrics"]["per_model"]
assert m["name"] == "cartpole" and m["rounds"] == 1 and m["horizon"] == 20
for op in ("rollout", "gradient", "fd_component"):
    assert m["ms_per_call"][op] > 0, op
    assert m["failed_calls"][op] == 0, op
assert m["params"]["count"] > 0 and m["fd"]["sampled"] == 3
for T in ("T1000", "T10000"):
    mem = m["memory_bytes"][T]
    assert 0 < mem["checkpoint_sqrt"] < mem["checkpoint_all"], T
lr = j["metrics"]["long_run"]
assert lr["model"] == "cartpole" and lr["error"] == "" and lr["bitwise_equal"], lr
assert j["metrics"]["peak_rss_kib"] > 0
assert len(j["series"]) == 1
EOF
run "$ROLLOUT" --bogus
[[ $RC -eq 2 ]] || fail "mjdiff-bench-rollout --bogus: exit $RC, expected 2"
run "$ROLLOUT" --help
[[ $RC -eq 0 ]] || fail "mjdiff-bench-rollout --help: exit $RC, expected 0"
grep -q -- "--fd-sample" <<<"$OUT" || fail "mjdiff-bench-rollout --help does not list --fd-sample"
note "mjdiff-bench-rollout --json cartpole.xml: ok"

note "PASS"
exit 0
