// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Model parameters by name (<mjdiff/params.h>): selection, names, errors, get/set, and the
// parameter derivatives of the continuous dynamics (mjdiff_paramDerivative) against finite
// differences of the smooth forward pass.
//
// Derivative check: at random states near simulated trajectories, the analytic column
// dqacc/dp = M^-1 DrDp (hdamp = 0, the acceleration of mjdiff_forward) is compared with centered
// differences of d->qacc (and d->act_dot against DadotDp) from mjdiff_forward with the parameter
// set through mjdiff_setParamValues, Richardson-extrapolated over (h, 2h) (the h^2 term cancels).
// h = 1e-5 |p| (1e-5 if p = 0); where p - 4h leaves the parameter's range (a non-negative value
// at 0) the 3-point forward difference takes the place of the centered one. Tolerance rationale
// as in test_step_d.cc: rounding in the differences is ~1e-16 |qacc| / h, so each column is
// compared relative to max(|column|, 1e-4 (1 + |qacc|) / |p|), and a sample is skipped where the
// extrapolations over (h, 2h) and (2h, 4h) disagree by more than the tolerance (a law's piece
// boundary within reach). At least 80% of the columns must be compared.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <mjdiff/params.h>

#include "../adjoint/derivative.h"
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::Sim;
using testutil::uniform;

struct Params {
  mjdiffParams* p = nullptr;
  ~Params() { mjdiff_freeParams(p); }
};

// a random state near a simulated trajectory (random controls, then perturbed velocities),
// controls strictly inside their ranges, an applied wrench on the last body
void randomState(const mjModel* m, mjData* d, const mjdiffModel* s, unsigned long long* seed,
                 int nstep) {
  testutil::simulateRandom(m, d, s, seed, nstep);
  testutil::perturbVelocities(m, d, seed, 0.3, 0.1);
  shim_randomCtrl(m, d, seed);
  testutil::ctrlInsideRange(m, d);
  mju_zero(d->xfrc_applied, 6 * m->nbody);
  if (m->nbody > 1) {
    for (int i = 0; i < 6; i++) d->xfrc_applied[6 * (m->nbody - 1) + i] = uniform(seed) - 0.5;
  }
  char err[500];
  mjdiff_forward(m, d, s, err, sizeof(err));  // normalises quaternions
}

// qacc and act_dot of the smooth forward pass at state with the parameter values vals
bool evalAcc(mjModel* m, mjData* d, mjdiffModel* s, const mjdiffParams* p,
             const std::vector<mjtNum>& state, const std::vector<mjtNum>& vals,
             std::vector<mjtNum>* out) {
  char err[500];
  if (mjdiff_setParamValues(m, s, p, vals.data(), err, sizeof(err)) != MJDIFF_OK) return false;
  shim_setState(m, d, state.data());
  EXPECT_EQ(mjdiff_forward(m, d, s, err, sizeof(err)), MJDIFF_OK) << err;
  out->assign(m->nv + m->na, 0);
  mju_copy(out->data(), d->qacc, m->nv);
  mju_copy(out->data() + m->nv, d->act_dot, m->na);
  return true;
}

// derivative of [qacc; act_dot] in parameter i with step h: centered, or 3-point forward where
// the centered one would leave the parameter's range (nothing if neither is possible)
bool fdColumn(mjModel* m, mjData* d, mjdiffModel* s, const mjdiffParams* p,
              const std::vector<mjtNum>& state, const std::vector<mjtNum>& v0, int i, double h,
              bool centered, std::vector<mjtNum>* col) {
  std::vector<mjtNum> v = v0, a, b, c;
  int n = m->nv + m->na;
  col->assign(n, 0);
  if (centered) {
    v[i] = v0[i] + h;
    if (!evalAcc(m, d, s, p, state, v, &a)) return false;
    v[i] = v0[i] - h;
    if (!evalAcc(m, d, s, p, state, v, &b)) return false;
    for (int r = 0; r < n; r++) (*col)[r] = (a[r] - b[r]) / (2 * h);
    return true;
  }
  if (!evalAcc(m, d, s, p, state, v0, &a)) return false;
  v[i] = v0[i] + h;
  if (!evalAcc(m, d, s, p, state, v, &b)) return false;
  v[i] = v0[i] + 2 * h;
  if (!evalAcc(m, d, s, p, state, v, &c)) return false;
  for (int r = 0; r < n; r++) (*col)[r] = (-3 * a[r] + 4 * b[r] - c[r]) / (2 * h);
  return true;
}

// "kind:object:field[k]" -> "kind:field" (the group a worst error is reported for)
std::string fieldOf(const std::string& name) {
  size_t a = name.find(':'), b = name.rfind(':');
  std::string field = name.substr(b + 1);
  size_t br = field.find('[');
  if (br != std::string::npos) field = field.substr(0, br);
  return name.substr(0, a) + ":" + field;
}

struct CheckResult {
  int compared = 0, total = 0, withContact = 0;
  std::map<std::string, double> worst;  // per field
};

// analytic against finite differences for the parameters named by names, at nsample states
// model-wide fields the names select that the model derives per element get explicit values (the
// former fixed defaults), as an MJCF that sets mjdiff_<field> would: only explicit model-wide
// values are parameters
void makeWideExplicit(mjdiffModel* s, const std::vector<const char*>& names) {
  const struct {
    const char* field;
    double value;
  } kWide[] = {{"contact_stiffness", 1e4}, {"contact_damping", 50},   {"contact_width", 2e-3},
               {"friction_speed", 0.05},   {"limit_stiffness", 1e3}, {"limit_damping", 1},
               {"limit_width", 0.01},      {"frictionloss_speed", 0.1}, {"eq_stiffness", 1e4},
               {"eq_damping", 100}};
  for (const char* name : names) {
    for (const auto& w : kWide) {
      if (std::string(name) != std::string("mjdiff:") + w.field) continue;
      mjtNum v = 0;
      ASSERT_EQ(mjdiff_getParam(s, w.field, &v, nullptr, 0), MJDIFF_OK);
      if (v == MJDIFF_DERIVED) {
        ASSERT_EQ(mjdiff_setParam(s, w.field, w.value, nullptr, 0), MJDIFF_OK);
      }
    }
  }
}

CheckResult checkParams(const char* xml, const char* path, const std::vector<const char*>& names,
                        int nsample, int nwarm, double tol) {
  CheckResult res;
  Sim sim(xml, path);
  EXPECT_TRUE(sim.ok) << sim.sim.err;
  if (!sim.ok) return res;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  makeWideExplicit(s, names);
  Params P;
  char err[1000];
  EXPECT_EQ(mjdiff_makeParams(m, s, names.data(), (int)names.size(), &P.p, err, sizeof(err)),
            MJDIFF_OK) << err;
  if (!P.p) return res;
  int np = mjdiff_paramCount(P.p), nv = m->nv, na = m->na;
  EXPECT_GT(np, 0);

  // write the current values back: per-geom smooth values become explicit, as the derivative
  // assumes
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, P.p, v0.data());
  EXPECT_EQ(mjdiff_setParamValues(m, s, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;

  unsigned long long seed = 777;
  for (int k = 0; k < nsample; k++) {
    randomState(m, d, s, &seed, nwarm + 7 * k);
    std::vector<mjtNum> state = testutil::getState(m, d);
    int ncon = d->ncon;
    res.withContact += ncon > 0;

    // analytic: M^-1 DrDp, DadotDp
    std::vector<mjtNum> acc(d->qacc, d->qacc + nv), DrDp(nv * np), DadotDp(na * np + 1);
    std::vector<mjtNum> qacc0 = acc;
    EXPECT_EQ(mjdiff_paramDerivative(m, d, s, P.p, acc.data(), 0, DrDp.data(), DadotDp.data()),
              0);
    std::vector<mjtNum> cols = testutil::accParamColumns(m, d, DrDp, np);  // column-major

    double qscale = 1;
    for (int r = 0; r < nv; r++) qscale = std::fmax(qscale, 1 + std::fabs(qacc0[r]));
    for (int i = 0; i < np; i++) {
      res.total++;
      double pscale = v0[i] != 0 ? std::fabs(v0[i]) : 1, h = 1e-4 * pscale;
      // centered if p - 4h is a valid value
      std::vector<mjtNum> probe = v0;
      probe[i] = v0[i] - 4 * h;
      bool centered = mjdiff_setParamValues(m, s, P.p, probe.data(), nullptr, 0) == MJDIFF_OK;
      std::vector<mjtNum> D1, D2, D4;
      bool ok = fdColumn(m, d, s, P.p, state, v0, i, h, centered, &D1) &&
                fdColumn(m, d, s, P.p, state, v0, i, 2 * h, centered, &D2) &&
                fdColumn(m, d, s, P.p, state, v0, i, 4 * h, centered, &D4);
      EXPECT_EQ(mjdiff_setParamValues(m, s, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
      EXPECT_TRUE(ok) << mjdiff_paramName(P.p, i);
      if (!ok) continue;
      int n = nv + na;
      std::vector<mjtNum> R1(n), R2(n), J(n);
      for (int r = 0; r < n; r++) {
        R1[r] = testutil::richardson(D1[r], D2[r]);
        R2[r] = testutil::richardson(D2[r], D4[r]);
        J[r] = r < nv ? cols[nv * i + r] : DadotDp[np * (r - nv) + i];
      }
      double scale = 1e-4 * qscale / pscale, noise = 0, e = 0;
      for (int r = 0; r < n; r++) scale = std::fmax(scale, std::fabs(R1[r]));
      for (int r = 0; r < n; r++) {
        noise = std::fmax(noise, std::fabs(R1[r] - R2[r]) / scale);
        e = std::fmax(e, std::fabs(J[r] - R1[r]) / scale);
      }
      if (noise > tol) {
        std::cout << "sample " << k << " " << mjdiff_paramName(P.p, i)
                  << " skipped: finite differences disagree by " << noise << "\n";
        continue;
      }
      res.compared++;
      std::string f = fieldOf(mjdiff_paramName(P.p, i));
      res.worst[f] = std::fmax(res.worst[f], e);
      EXPECT_LE(e, tol) << "sample " << k << " " << mjdiff_paramName(P.p, i) << " (ncon " << ncon
                        << ")";
      if (e > tol && getenv("PARAM_DEBUG")) {
        for (int r = 0; r < n; r++) {
          std::cout << "  " << J[r] << " " << R1[r] << " qacc " << (r < nv ? qacc0[r] : 0)
                    << " DrDp " << (r < nv ? DrDp[np * r + i] : 0) << "\n";
        }
      }
    }

    // restored: the parameters and the qacc of the state
    std::vector<mjtNum> now(np);
    mjdiff_getParamValues(m, s, P.p, now.data());
    EXPECT_EQ(0, std::memcmp(now.data(), v0.data(), sizeof(mjtNum) * np));
  }
  std::cout << (path ? path : "inline") << ": compared " << res.compared << "/" << res.total
            << " columns (" << res.withContact << " states with contacts)\n";
  for (const auto& w : res.worst) std::cout << "  " << w.first << ": worst " << w.second << "\n";
  EXPECT_GE(res.compared, (int)(0.8 * res.total));
  return res;
}

// joints of every type, springs, dampers, armature, friction loss, limits (hinge, ball,
// tendon), equalities, rotated inertial frames and every supported actuator kind
const char* kMixed = R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <custom>
    <numeric name="mjdiff_eq_stiffness" data="500"/>
    <numeric name="mjdiff_eq_damping" data="5"/>
    <numeric name="mjdiff_limit_stiffness" data="500"/>
    <numeric name="mjdiff_limit_damping" data="2"/>
    <numeric name="mjdiff_limit_width" data="0.05"/>
  </custom>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="a1" type="hinge" axis="0 1 0" limited="true" range="-0.3 0.3"
             frictionloss="0.2" damping="0.3" armature="0.05"/>
      <joint name="a2" type="hinge" axis="1 0 0" stiffness="3" springref="0.1" armature="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <inertial pos="0.15 0.01 -0.02" quat="0.9 0.1 0.3 0.2" mass="0.5"
                diaginertia="0.004 0.005 0.002"/>
      <body name="b" pos="0.3 0 0">
        <joint name="b1" type="ball" limited="true" range="0 0.4" damping="0.02" stiffness="0.5"
               armature="0.01" frictionloss="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <inertial pos="0.12 -0.02 0.01" quat="0.7 0.2 -0.4 0.1" mass="0.4"
                  diaginertia="0.003 0.0035 0.001"/>
      </body>
    </body>
    <body name="c" pos="0.6 0.2 1">
      <freejoint name="cfree"/>
      <geom type="box" size="0.1 0.1 0.1"/>
      <inertial pos="0.01 0.02 -0.01" quat="0.8 -0.3 0.2 0.1" mass="1"
                diaginertia="0.007 0.006 0.005"/>
    </body>
    <body name="e" pos="0 0.5 1">
      <joint name="e1" type="slide" axis="0 0 1" damping="0.5" stiffness="2" springref="-0.05"/>
      <joint name="e2" type="hinge" axis="0 0 1" armature="0.2"/>
      <geom type="sphere" size="0.05" mass="0.2"/>
      <body name="f" pos="0.1 0 0">
        <joint name="f1" type="hinge" axis="0 1 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
        <inertial pos="0.1 0.005 0" mass="0.15" diaginertia="0.001 0.0012 0.0003"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect body1="c" body2="b" anchor="0 -0.1 0"/>
    <weld body1="e" body2="a" torquescale="0.3"/>
    <joint joint1="e2" joint2="a2" polycoef="0 0.5 0.2 0 0"/>
  </equality>
  <tendon>
    <fixed name="t" limited="true" range="-0.2 0.2" frictionloss="0.1" stiffness="4"
           damping="0.3" springlength="0.02">
      <joint joint="a1" coef="1"/>
      <joint joint="e1" coef="-0.5"/>
    </fixed>
  </tendon>
  <actuator>
    <motor name="tm" tendon="t" gear="2" ctrlrange="-1 1" ctrllimited="true"/>
    <position name="pos" joint="e1" kp="20" ctrlrange="-0.5 0.5" ctrllimited="true"/>
    <velocity name="vel" joint="f1" kv="0.5" gear="1.5"/>
    <motor name="mot" joint="a2" gear="0.7"/>
    <general name="aff" joint="e2" gaintype="affine" gainprm="2 0.5 0.3" biastype="affine"
             biasprm="0.1 -0.4 -0.2" gear="1.2"/>
    <general name="filt" joint="f1" dyntype="filter" dynprm="0.1" gaintype="affine"
             gainprm="3 0.2 0.1" biastype="affine" biasprm="0.05 -0.3 -0.1" ctrlrange="-1 1"
             ctrllimited="true" gear="0.8"/>
  </actuator>
</mujoco>)";

// contacts: a sphere (condim 6, explicit contact values), a box with a higher friction priority,
// a capsule touching the floor through an explicit <pair>, ties in torsional friction
const char* kContacts = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="3000"/>
    <numeric name="mjdiff_contact_damping" data="20"/>
    <numeric name="mjdiff_contact_width" data="0.004"/>
    <numeric name="mjdiff_friction_speed" data="0.1"/>
    <numeric name="mjdiff_contact_stiffness:ball" data="5000"/>
    <numeric name="mjdiff_contact_damping:ball" data="30"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" friction="0.8 0.02 0.001"/>
    <body name="ball" pos="0 0 0.1">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" mass="1" condim="6" friction="1 0.02 0.002"/>
    </body>
    <body name="box" pos="0.5 0 0.05">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="0.5" condim="4" priority="1"
            friction="0.5 0.01 0.001"/>
    </body>
    <body name="rod" pos="-0.5 0 0.03">
      <freejoint/>
      <geom name="rod" type="capsule" fromto="-0.1 0 0 0.1 0 0" size="0.03" mass="0.3"
            contype="2" conaffinity="2"/>
    </body>
  </worldbody>
  <contact>
    <pair geom1="rod" geom2="floor" friction="0.7 0.7 0.01 0.001 0.001" condim="3"/>
  </contact>
</mujoco>)";

//---------------------------------- derivatives ------------------------------------------------

TEST(ParamDeriv, MixedJointsActuatorsEqualities) {
  checkParams(kMixed, nullptr,
              {"body:*:mass", "body:*:inertia", "body:*:ipos", "joint:*:damping",
               "joint:*:armature", "joint:*:frictionloss", "joint:*:stiffness",
               "joint:*:springref", "tendon:t:stiffness", "tendon:t:damping",
               "tendon:t:frictionloss", "actuator:*:gear", "actuator:*:gainprm",
               "actuator:*:biasprm", "actuator:filt:dynprm", "option:gravity",
               "mjdiff:limit_stiffness", "mjdiff:limit_damping", "mjdiff:limit_width",
               "mjdiff:frictionloss_speed", "mjdiff:eq_stiffness", "mjdiff:eq_damping"},
              12, 60, 1e-6);
}

#if mjVERSION_HEADER >= 3000000
// MuJoCo 3's gravity compensation (-gravcomp m g at the com): the masses, com offsets and gravity
// act through it too
TEST(ParamDeriv, GravityCompensation) {
  const char* xml = R"(
<mujoco>
  <option timestep="0.002" gravity="0.5 -1 -9.81"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1" gravcomp="1">
      <joint name="ball" type="ball" damping="0.2"/>
      <inertial pos="0.15 0.02 0" mass="1" diaginertia="0.01 0.01 0.002"/>
      <geom type="capsule" fromto="0 0 0 0.3 0.05 0" size="0.03"/>
      <body name="b" pos="0.3 0.05 0" gravcomp="0.6">
        <joint name="h" type="hinge" axis="0 1 0.2" damping="0.1" actuatorgravcomp="true"/>
        <inertial pos="0.12 0 -0.02" mass="0.7" diaginertia="0.005 0.005 0.001"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 -0.05" size="0.025"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="h" gear="1" ctrlrange="-1 1" ctrllimited="true"/></actuator>
</mujoco>)";
  checkParams(xml, nullptr, {"body:*:mass", "body:*:ipos", "option:gravity"}, 12, 40, 1e-6);
}

// MuJoCo 3's joint actuator force limits: the actuators' parameter columns vanish on a clipped dof
TEST(ParamDeriv, ActuatorForceRange) {
  const char* xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h" type="hinge" axis="0 1 0" damping="0.1" actuatorfrcrange="-0.4 0.3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <body name="b" pos="0.3 0 0">
        <joint name="s" type="slide" axis="1 0 0.2" damping="0.5" actuatorfrcrange="-1 1"/>
        <geom type="box" size="0.05 0.05 0.05" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m1" joint="h" gear="1" ctrlrange="-1 1" ctrllimited="true"/>
    <motor name="m2" joint="h" gear="0.5" ctrlrange="-1 1" ctrllimited="true"/>
    <position name="p" joint="s" kp="20" ctrlrange="-0.2 0.2" ctrllimited="true"/>
  </actuator>
</mujoco>)";
  checkParams(xml, nullptr, {"actuator:*:gear", "actuator:*:gainprm", "actuator:*:biasprm"}, 12, 40, 1e-6);
}
#endif

#if mjVERSION_HEADER >= 3000000
// MuJoCo 3's implicitfast: a servo's gear and kv (biasprm[2]) also enter the integrator's implicit
// term B (mjdiff_dampB: -gear^2 biasprm[2] on its hinge), so their columns carry -h dB/dp acc
// (params_d.c); a servo clamped by its forcerange adds nothing to B
TEST(ParamDeriv, ImplicitFastServos) {
  const char* xml = R"(
<mujoco>
  <compiler autolimits="true" angle="radian"/>
  <option timestep="0.002" integrator="implicitfast"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h" type="hinge" axis="0 1 0" damping="0.3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <body name="b" pos="0.3 0 0">
        <joint name="s" type="slide" axis="1 0 0.2" damping="0.5"/>
        <geom type="box" size="0.05 0.05 0.05" mass="0.3"/>
        <body name="fa" pos="0.05 0.03 0">
          <joint name="fa" type="slide" axis="0 1 0" damping="0.1"/>
          <geom type="box" size="0.01 0.005 0.01" mass="0.02"/>
        </body>
        <body name="fb" pos="0.05 -0.03 0">
          <joint name="fb" type="slide" axis="0 -1 0" damping="0.1"/>
          <geom type="box" size="0.01 0.005 0.01" mass="0.02"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="p1" joint="h" kp="200" kv="20" gear="1.5" ctrlrange="-1 1" forcerange="-40 40"/>
    <position name="p2" joint="s" kp="100" kv="10" ctrlrange="-0.2 0.2"/>
    <motor name="m" joint="h" gear="0.5" ctrlrange="-1 1"/>
    <position name="g" tendon="split" kp="20" kv="2" gear="1.5" ctrlrange="-0.01 0.02"/>
  </actuator>
  <tendon><fixed name="split"><joint joint="fa" coef="0.5"/><joint joint="fb" coef="0.7"/></fixed></tendon>
</mujoco>)";
  checkParams(xml, nullptr, {"actuator:*:gear", "actuator:*:biasprm", "joint:*:damping"}, 12, 40,
              1e-6);

  // the step's parameter columns (mjdiff_stepJacobian's P, where B enters) against central
  // differences of mjdiff_step, Richardson-extrapolated
  // (as written, and with the damper off: B then holds no dof damping, nor its column -h acc)
  for (const char* flag : {"", "<flag damper=\"disable\"/>"}) {
  std::string text = xml, option = "<option timestep=\"0.002\" integrator=\"implicitfast\"/>";
  text.replace(text.find(option), option.size(),
               option.substr(0, option.size() - 2) + ">" + flag + "</option>");
  Sim sim(text.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  const char* names[] = {"actuator:*:gear", "actuator:*:biasprm", "joint:*:damping"};
  Params P;
  char err[1000];
  ASSERT_EQ(mjdiff_makeParams(m, s, names, 3, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, s, P.p, &w, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(P.p), nv = m->nv, ndx = 2 * nv, nu = m->nu;
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, P.p, v0.data());
  unsigned long long seed = 99;
  double worst = 0;
  for (int k = 0; k < 8; k++) {
    randomState(m, d, s, &seed, 30 + 7 * k);
    std::vector<mjtNum> state = testutil::getState(m, d);
    std::vector<mjtNum> A(ndx * ndx), B(ndx * nu), J(ndx * np);
    ASSERT_EQ(mjdiff_stepJacobian(m, d, s, w, A.data(), B.data(), J.data(), err, sizeof(err)),
              MJDIFF_OK) << err;
    for (int i = 0; i < np; i++) {
      double h = 1e-4 * (v0[i] != 0 ? std::fabs(v0[i]) : 1);
      std::vector<mjtNum> R;
      ASSERT_TRUE(testutil::fdStepParamColumn(m, d, s, P.p, state, v0, i, h, &R))
          << mjdiff_paramName(P.p, i);
      double scale = 1e-6, e = 0;
      for (int r = 0; r < ndx; r++) scale = std::fmax(scale, std::fabs(R[r]));
      for (int r = 0; r < ndx; r++) e = std::fmax(e, std::fabs(J[np * r + i] - R[r]) / scale);
      worst = std::fmax(worst, e);
      EXPECT_LE(e, 1e-6) << mjdiff_paramName(P.p, i) << " sample " << k;
    }
    shim_setState(m, d, state.data());
  }
  std::cout << "implicitfast servos" << (flag[0] ? ", damper disabled" : "") << ", step P: worst relative error " << worst << "\n";
  mjdiff_freeStepDeriv(w);
  }
}
#endif

// spatial tendons (sphere wrap with a side site, cylinder wrap, a pulley): their stiffness,
// damping, friction loss, and the gear, gain and bias of actuators on them
TEST(ParamDeriv, SpatialTendons) {
  const char* xml = R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/><site size="0.01"/>
    <joint damping="0.05" armature="0.01"/></default>
  <custom><numeric name="mjdiff_limit_stiffness" data="300"/>
    <numeric name="mjdiff_limit_width" data="0.05"/></custom>
  <worldbody>
    <site name="w0" pos="0 0 1.5"/>
    <body name="a" pos="0 0 1">
      <joint name="ha" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <site name="a0" pos="0.1 0.05 0"/>
      <site name="a1" pos="0.3 0 0.08"/>
      <body name="b" pos="0.3 0 0">
        <joint name="bb" type="ball"/>
        <geom name="sph" type="sphere" size="0.06" pos="0.15 0 0" mass="0.3"/>
        <site name="b0" pos="0.3 0.02 0.01"/>
        <site name="bside" pos="0.15 0 0.5"/>
        <body name="c" pos="0.3 0 0">
          <joint name="hc" type="hinge" axis="0 0 1"/>
          <geom name="cyl" type="cylinder" size="0.05 0.1" pos="0.1 0 0" euler="1.5707963 0 0"
                mass="0.2"/>
          <site name="c0" pos="0.25 0.03 0.02"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="sphere" stiffness="20" damping="0.5" frictionloss="0.2">
      <site site="a0"/><geom geom="sph" sidesite="bside"/><site site="c0"/>
    </spatial>
    <spatial name="cylinder" limited="true" range="0.2 0.5" stiffness="5" damping="0.1">
      <site site="b0"/><geom geom="cyl"/><site site="w0"/>
    </spatial>
    <spatial name="pulley" frictionloss="0.1">
      <site site="w0"/><site site="a0"/><site site="b0"/>
      <pulley divisor="2"/>
      <site site="a1"/><site site="c0"/>
    </spatial>
  </tendon>
  <actuator>
    <motor name="m" tendon="cylinder" gear="2" ctrlrange="-1 1" ctrllimited="true"/>
    <position name="p" tendon="pulley" kp="10" ctrlrange="0 1" ctrllimited="true"/>
    <general name="g" tendon="sphere" gainprm="2 1 0.5" gaintype="affine" biastype="affine"
             biasprm="0.1 -3 -0.2" ctrlrange="-1 1" ctrllimited="true"/>
  </actuator>
</mujoco>)";
  CheckResult r = checkParams(xml, nullptr,
                              {"tendon:*:stiffness", "tendon:*:damping", "tendon:*:frictionloss",
                               "actuator:*:gear", "actuator:*:gainprm", "actuator:*:biasprm"},
                              12, 40, 1e-6);
  EXPECT_GT(r.compared, 0);
}

TEST(ParamDeriv, Contacts) {
  CheckResult r = checkParams(
      kContacts, nullptr,
      {"geom:*:friction", "geom:*:contact_stiffness", "geom:*:contact_damping",
       "geom:*:contact_width", "geom:*:friction_speed", "geom:*:spin_speed", "body:*:mass",
       "body:*:inertia", "body:*:ipos", "option:gravity"},
      12, 100, 1e-6);
  EXPECT_GT(r.withContact, 8);
}

// three substeps per step: the parameter columns chained over the substeps (P = A_k P + P_k)
TEST(ParamDeriv, ContactsSubsteps) {
  std::string xml =
      testutil::withNumerics(kContacts, "<numeric name=\"mjdiff_substeps\" data=\"3\"/>");
  CheckResult r = checkParams(
      xml.c_str(), nullptr,
      {"geom:*:friction", "geom:*:contact_stiffness", "geom:*:contact_damping", "body:*:mass",
       "option:gravity"},
      12, 100, 1e-6);
  EXPECT_GT(r.withContact, 8);
}

// The ball's and box's centre of mass: MuJoCo 3 compiles those free bodies (centre of mass at the
// body origin, principal axes along it) as simple, their mass-matrix rows reduced to the diagonal
// in its CSR structure, which a centre-of-mass offset's coupling has no room in: 3.12 refuses
// ipos there by name (body:*:ipos above then selects only the rod's); 2.2.2 (the legacy qM) takes it
TEST(ParamDeriv, IposOfSimpleBody) {
  Sim sim(kContacts);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  Params P;
  char err[500] = "";
  const char* names[] = {"body:ball:ipos"};
  mjdiffStatus st = mjdiff_makeParams(sim.sim.m, sim.sim.s, names, 1, &P.p, err, sizeof(err));
#if MJDIFF_MUJOCO_3
  EXPECT_EQ(st, MJDIFF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("parameter 'body:ball:ipos': MuJoCo 3 compiled the body as simple"),
            std::string::npos)
      << err;
  const char* rod[] = {"body:rod:ipos"};
  EXPECT_EQ(mjdiff_makeParams(sim.sim.m, sim.sim.s, rod, 1, &P.p, err, sizeof(err)), MJDIFF_OK)
      << err;
#else
  EXPECT_EQ(st, MJDIFF_OK) << err;
#endif
}

// model-wide contact values: they reach the pairs where neither geom has an explicit value (the
// box and the rod on the floor; the ball's stiffness and damping are explicit)
TEST(ParamDeriv, ContactsModelWide) {
  CheckResult r = checkParams(
      kContacts, nullptr,
      {"mjdiff:contact_stiffness", "mjdiff:contact_damping", "mjdiff:contact_width",
       "mjdiff:friction_speed", "mjdiff:spin_speed"},
      12, 100, 1e-6);
  EXPECT_GT(r.withContact, 8);
}

class ParamDerivModels : public ::testing::TestWithParam<const char*> {};

TEST_P(ParamDerivModels, MatchesFiniteDifferences) {
  std::string path = GetParam();
  if (path.find('/') == std::string::npos) path = shim_modelPath(path.c_str());
  std::vector<const char*> names = {
      "body:*:mass",      "body:*:inertia",    "body:*:ipos",        "joint:*:damping",
      "joint:*:armature", "joint:*:stiffness", "geom:*:friction",    "actuator:*:gear",
      "actuator:*:gainprm[0]", "option:gravity", "mjdiff:contact_stiffness",
      "mjdiff:contact_damping", "mjdiff:contact_width", "mjdiff:friction_speed",
      "mjdiff:limit_stiffness", "mjdiff:limit_damping", "mjdiff:limit_width"};
  if (path.find("humanoid") != std::string::npos) names.push_back("joint:*:springref");
  if (path.find("arm_box") != std::string::npos) {
    names.push_back("geom:fingertip:contact_stiffness");
    names.push_back("geom:box_corner_*:contact_damping");
    names.push_back("mjdiff:spin_speed");
  }
  CheckResult r = checkParams(nullptr, path.c_str(), names, 10, 150, 1e-6);
  EXPECT_GT(r.withContact, 0);
}

// the humanoid with its derived contact values (no mjdiff numerics): per-geom contact fields of
// the moving geoms (the static floor's are infinite and skipped) and friction, with the friction
// speed scaled by the load (law.h)
TEST(ParamDeriv, DerivedContactValues) {
  CheckResult r = checkParams(nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml",
                              {"geom:*:contact_stiffness", "geom:*:contact_damping",
                               "geom:*:friction_speed", "geom:*:friction", "body:*:mass"},
                              10, 150, 1e-6);
  EXPECT_GT(r.withContact, 0);
}

INSTANTIATE_TEST_SUITE_P(All, ParamDerivModels,
                         ::testing::Values("arm_box.xml", "hopper.xml",
                                           "/usr/share/mujoco/model/humanoid/humanoid.xml"));

// Euler's implicit damping: the damping column gains -hdamp acc_j, nothing else changes
TEST(ParamDeriv, ImplicitDampingTerm) {
  Sim sim(kMixed);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  Params P;
  char err[500];
  const char* names[] = {"joint:*:damping", "body:a:mass"};
  ASSERT_EQ(mjdiff_makeParams(m, sim.sim.s, names, 2, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  unsigned long long seed = 5;
  randomState(m, d, sim.sim.s, &seed, 40);
  int np = mjdiff_paramCount(P.p), nv = m->nv;
  std::vector<mjtNum> acc(d->qacc, d->qacc + nv), A(nv * np), B(nv * np);
  std::vector<mjtNum> state = testutil::getState(m, d);
  mjdiff_paramDerivative(m, d, sim.sim.s, P.p, acc.data(), 0, A.data(), nullptr);
  mjdiff_paramDerivative(m, d, sim.sim.s, P.p, acc.data(), 0.01, B.data(), nullptr);
  std::vector<mjtNum> after = testutil::getState(m, d);
  EXPECT_EQ(0, std::memcmp(state.data(), after.data(), sizeof(mjtNum) * state.size()));
  for (int i = 0; i < np; i++) {
    std::string name = mjdiff_paramName(P.p, i);
    int dof = -1;
    if (name.rfind("joint:", 0) == 0) {
      // the dof of this entry: the column's single nonzero row at hdamp = 0 is -v_dof
      for (int r = 0; r < nv; r++) {
        if (A[np * r + i] != 0) dof = r;
      }
    }
    for (int r = 0; r < nv; r++) {
      double expect = A[np * r + i] - (r == dof ? 0.01 * acc[r] : 0);
      EXPECT_DOUBLE_EQ(B[np * r + i], expect) << name << " row " << r;
    }
  }
  // deterministic
  std::vector<mjtNum> C(nv * np);
  mjdiff_paramDerivative(m, d, sim.sim.s, P.p, acc.data(), 0.01, C.data(), nullptr);
  EXPECT_EQ(0, std::memcmp(B.data(), C.data(), sizeof(mjtNum) * B.size()));
}

// filter actuators: gain and bias act through the activation only (DadotDp = 0); the time
// constant moves act_dot
TEST(ParamDeriv, FilterActuatorActivation) {
  Sim sim(kMixed);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  Params P;
  char err[500];
  const char* names[] = {"actuator:filt:gainprm", "actuator:filt:biasprm",
                         "actuator:filt:dynprm"};
  ASSERT_EQ(mjdiff_makeParams(m, sim.sim.s, names, 3, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_paramCount(P.p), 7);
  EXPECT_STREQ(mjdiff_paramName(P.p, 6), "actuator:filt:dynprm");
  unsigned long long seed = 9;
  randomState(m, d, sim.sim.s, &seed, 40);
  int np = 7, nv = m->nv, na = m->na;
  ASSERT_EQ(na, 1);
  std::vector<mjtNum> acc(d->qacc, d->qacc + nv), DrDp(nv * np), DadotDp(na * np);
  mjdiff_paramDerivative(m, d, sim.sim.s, P.p, acc.data(), 0, DrDp.data(), DadotDp.data());
  for (int i = 0; i < 6; i++) EXPECT_EQ(DadotDp[i], 0) << mjdiff_paramName(P.p, i);
  double gainnorm = 0;
  for (int r = 0; r < nv; r++) gainnorm += std::fabs(DrDp[np * r + 0]);
  EXPECT_GT(gainnorm, 0);
  for (int r = 0; r < nv; r++) EXPECT_EQ(DrDp[np * r + 6], 0);

  // dadot/dtau = -(ctrl - act) / tau^2, against a centered difference
  double tau = m->actuator_dynprm[mjNDYN * 5], h = 1e-6;
  std::vector<mjtNum> state = testutil::getState(m, d), v(np), a, b;
  mjdiff_getParamValues(m, sim.sim.s, P.p, v.data());
  EXPECT_EQ(v[6], tau);
  v[6] = tau + h;
  ASSERT_TRUE(evalAcc(m, d, sim.sim.s, P.p, state, v, &a));
  v[6] = tau - h;
  ASSERT_TRUE(evalAcc(m, d, sim.sim.s, P.p, state, v, &b));
  EXPECT_NEAR(DadotDp[6], (a[nv] - b[nv]) / (2 * h), 1e-6 * std::fabs(DadotDp[6]) + 1e-9);
  EXPECT_NE(DadotDp[6], 0);
}

//---------------------------------- names and errors -------------------------------------------

struct ParamNames : public ::testing::Test {
  Sim sim{nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml"};
  void SetUp() override { makeWideExplicit(sim.sim.s, {"mjdiff:contact_stiffness"}); }
  mjdiffStatus make(std::vector<const char*> names, Params* P, std::string* msg = nullptr) {
    char err[1000] = "";
    mjdiffStatus st = mjdiff_makeParams(sim.sim.m, sim.sim.s, names.data(), (int)names.size(),
                                        &P->p, err, sizeof(err));
    if (msg) *msg = err;
    if (st != MJDIFF_OK) {
      EXPECT_EQ(P->p, nullptr);
    }
    return st;
  }
};

TEST_F(ParamNames, ExpandedNames) {
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  Params P;
  ASSERT_EQ(make({"body:torso:mass", "body:torso:inertia", "joint:root:damping",
                  "joint:right_knee:armature", "geom:floor:friction[1]", "option:gravity",
                  "mjdiff:contact_stiffness", "actuator:*knee:gainprm[0]"},
                 &P),
            MJDIFF_OK);
  std::vector<std::string> expect = {
      "body:torso:mass", "body:torso:inertia[0]", "body:torso:inertia[1]",
      "body:torso:inertia[2]", "joint:root:damping[0]", "joint:root:damping[1]",
      "joint:root:damping[2]", "joint:root:damping[3]", "joint:root:damping[4]",
      "joint:root:damping[5]", "joint:right_knee:armature", "geom:floor:friction[1]",
      "option:gravity[0]", "option:gravity[1]", "option:gravity[2]", "mjdiff:contact_stiffness",
      "actuator:right_knee:gainprm[0]", "actuator:left_knee:gainprm[0]"};
  ASSERT_EQ(mjdiff_paramCount(P.p), (int)expect.size());
  for (int i = 0; i < (int)expect.size(); i++) EXPECT_EQ(expect[i], mjdiff_paramName(P.p, i));
  EXPECT_EQ(mjdiff_paramName(P.p, -1), nullptr);
  EXPECT_EQ(mjdiff_paramName(P.p, (int)expect.size()), nullptr);

  // the expanded names select the same parameters
  std::vector<const char*> again;
  for (const auto& e : expect) again.push_back(e.c_str());
  Params Q;
  ASSERT_EQ(make(again, &Q), MJDIFF_OK);
  ASSERT_EQ(mjdiff_paramCount(Q.p), (int)expect.size());
  for (int i = 0; i < (int)expect.size(); i++) EXPECT_EQ(expect[i], mjdiff_paramName(Q.p, i));
}

// each field's class: what setting it changes (the learner's randomisation refuses the last two)
TEST_F(ParamNames, Classes) {
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  Params P;
  std::string msg;
  ASSERT_EQ(make({"body:torso:mass", "joint:root:damping[0]", "geom:floor:friction[0]",
                  "option:gravity[2]", "option:density", "actuator:right_knee:gear",
                  "mjdiff:contact_stiffness", "geom:torso:contact_damping", "geom:torso:size[0]",
                  "body:lower_waist:pos[2]", "body:pelvis:scale",
                  "joint:right_knee:pos[0]", "geom:head:pos[1]",
                  "body:torso:ipos[0]"},
                 &P, &msg),
            MJDIFF_OK) << msg;
  int n = mjdiff_paramCount(P.p);
  ASSERT_GE(n, 14);
  for (int i = 0; i < n; i++) {
    std::string name = mjdiff_paramName(P.p, i);
    int expect = MJDIFF_PARAM_PHYSICAL;
    if (name.rfind("mjdiff:", 0) == 0) {
      expect = MJDIFF_PARAM_SMOOTH;
    } else if (name.find(":contact_") != std::string::npos) {
      expect = MJDIFF_PARAM_SMOOTH_GEOM;
    } else if (name.find(":size") != std::string::npos || name.find(":pos") != std::string::npos ||
               name.find(":scale") != std::string::npos) {
      expect = MJDIFF_PARAM_GEOMETRY;
    }
    EXPECT_EQ(mjdiff_paramClass(P.p, i), expect) << name;
  }
  EXPECT_EQ(mjdiff_paramClass(P.p, -1), -1);
  EXPECT_EQ(mjdiff_paramClass(P.p, n), -1);
  EXPECT_EQ(mjdiff_paramClass(nullptr, 0), -1);
}

TEST_F(ParamNames, PatternsAndDuplicates) {
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  Params P;
  // torso first, then the others once each; the world body is skipped
  ASSERT_EQ(make({"body:torso:mass", "body:*:mass"}, &P), MJDIFF_OK);
  EXPECT_EQ(mjdiff_paramCount(P.p), m->nbody - 1);
  EXPECT_STREQ(mjdiff_paramName(P.p, 0), "body:torso:mass");
  for (int i = 1; i < mjdiff_paramCount(P.p); i++) {
    EXPECT_STRNE(mjdiff_paramName(P.p, i), "body:torso:mass");
  }
  // springref: the free root is skipped by a pattern
  Params S;
  ASSERT_EQ(make({"joint:*:springref"}, &S), MJDIFF_OK);
  EXPECT_EQ(mjdiff_paramCount(S.p), m->njnt - 1);
  // a pattern inside a name: the right leg's hinges
  Params R;
  ASSERT_EQ(make({"joint:right_*:damping"}, &R), MJDIFF_OK);
  int nright = 0;
  for (int j = 0; j < m->njnt; j++) {
    const char* name = mj_id2name(m, mjOBJ_JOINT, j);
    nright += name && !std::strncmp(name, "right_", 6);
  }
  EXPECT_EQ(mjdiff_paramCount(R.p), nright);
  for (int i = 0; i < nright; i++) {
    EXPECT_EQ(std::string(mjdiff_paramName(R.p, i)).rfind("joint:right_", 0), 0u);
  }
}

TEST_F(ParamNames, Errors) {
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  struct Case {
    const char* name;
    mjdiffStatus status;
    const char* mention;
  } cases[] = {
      {"foo:torso:mass", MJDIFF_ERR_NAME, "foo"},
      {"body:torso:weight", MJDIFF_ERR_NAME, "weight"},
      {"body:nobody:mass", MJDIFF_ERR_NAME, "nobody"},
      {"body:zz*:mass", MJDIFF_ERR_NAME, "zz*"},
      {"body:mass", MJDIFF_ERR_NAME, "body:mass"},
      {"body::mass", MJDIFF_ERR_NAME, "body::mass"},
      {"torso", MJDIFF_ERR_NAME, "torso"},
      {"body:torso:inertia[3]", MJDIFF_ERR_NAME, "inertia[3]"},
      {"body:torso:inertia[x]", MJDIFF_ERR_NAME, "inertia[x]"},
      {"joint:right_knee:damping[1]", MJDIFF_ERR_NAME, "damping[1]"},
      {"mjdiff:contact_hardness", MJDIFF_ERR_NAME, "contact_hardness"},
      {"option:magnetism", MJDIFF_ERR_NAME, "magnetism"},
      {"body:world:pos", MJDIFF_ERR_UNSUPPORTED, "world body"},  // geometry: test_design.cc
      {"geom:floor:size", MJDIFF_ERR_UNSUPPORTED, "geom:floor:size"},
      {"body:world:mass", MJDIFF_ERR_UNSUPPORTED, "world"},
      {"joint:root:springref", MJDIFF_ERR_UNSUPPORTED, "joint:root:springref"},
      {"actuator:right_knee:dynprm", MJDIFF_ERR_UNSUPPORTED, "filter"},
      {"option:timestep", MJDIFF_ERR_UNSUPPORTED, "timestep"},
      // derived per element (the fixture makes only contact_stiffness explicit)
      {"mjdiff:limit_damping", MJDIFF_ERR_UNSUPPORTED, "mjdiff_limit_damping"},
      {"mjdiff:contact_width", MJDIFF_ERR_UNSUPPORTED, "derives contact_width"},
      // the static floor's derived contact damping is infinite
      {"geom:floor:contact_damping", MJDIFF_ERR_UNSUPPORTED, "cannot move"},
  };
  for (const Case& c : cases) {
    Params P;
    std::string msg;
    EXPECT_EQ(make({"body:torso:mass", c.name}, &P, &msg), c.status) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.mention), std::string::npos) << c.name << ": " << msg;
  }

  // smooth-model fields need the smooth model
  char err[500];
  mjdiffParams* p = nullptr;
  const char* wide[] = {"mjdiff:contact_stiffness"};
  EXPECT_EQ(mjdiff_makeParams(sim.sim.m, nullptr, wide, 1, &p, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  const char* plain[] = {"body:torso:mass"};
  ASSERT_EQ(mjdiff_makeParams(sim.sim.m, nullptr, plain, 1, &p, err, sizeof(err)), MJDIFF_OK);
  mjdiff_freeParams(p);
  EXPECT_EQ(mjdiff_makeParams(sim.sim.m, sim.sim.s, nullptr, 1, &p, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_makeParams(sim.sim.m, sim.sim.s, plain, 1, nullptr, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  mjdiff_freeParams(nullptr);
  EXPECT_EQ(mjdiff_paramCount(nullptr), 0);
  EXPECT_EQ(mjdiff_paramName(nullptr, 0), nullptr);
}

// every kind read and written back bit for bit; bad values rejected with nothing changed
TEST(Params, GetSetRoundTripAndValidation) {
  Sim sim(kMixed);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjdiffModel* s = sim.sim.s;
  const char* names[] = {
      "body:*:mass", "body:*:inertia", "body:*:ipos", "joint:*:damping", "joint:*:armature",
      "joint:*:frictionloss", "joint:*:stiffness", "joint:*:springref", "tendon:t:stiffness",
      "tendon:t:damping", "tendon:t:frictionloss", "actuator:*:gear", "actuator:*:gainprm",
      "actuator:*:biasprm", "actuator:filt:dynprm", "option:gravity", "mjdiff:limit_width",
      "mjdiff:eq_damping"};
  Params P;
  char err[1000];
  int n = (int)(sizeof(names) / sizeof(names[0]));
  ASSERT_EQ(mjdiff_makeParams(m, s, names, n, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(P.p);
  std::vector<mjtNum> v0(np), v(np), back(np);
  mjdiff_getParamValues(m, s, P.p, v0.data());
  for (int i = 0; i < np; i++) EXPECT_TRUE(std::isfinite(v0[i])) << mjdiff_paramName(P.p, i);

  // the model's arrays as they are
  mjModel* copy = mj_copyModel(nullptr, m);
  mjdiffOptions opt = *mjdiff_getOptions(s);
  auto unchanged = [&]() {
    EXPECT_EQ(0, std::memcmp(copy->body_mass, m->body_mass, sizeof(mjtNum) * m->nbody));
    EXPECT_EQ(0, std::memcmp(copy->body_subtreemass, m->body_subtreemass,
                             sizeof(mjtNum) * m->nbody));
    EXPECT_EQ(0, std::memcmp(copy->body_inertia, m->body_inertia, sizeof(mjtNum) * 3 * m->nbody));
    EXPECT_EQ(0, std::memcmp(copy->dof_damping, m->dof_damping, sizeof(mjtNum) * m->nv));
    EXPECT_EQ(0, std::memcmp(copy->actuator_gainprm, m->actuator_gainprm,
                             sizeof(mjtNum) * mjNGAIN * m->nu));
    EXPECT_EQ(0, std::memcmp(copy->opt.gravity, m->opt.gravity, sizeof(mjtNum) * 3));
    EXPECT_EQ(0, std::memcmp(&opt, mjdiff_getOptions(s), sizeof(opt)));
  };

  // new values, read back exactly
  for (int i = 0; i < np; i++) v[i] = v0[i] * 1.25 + (v0[i] == 0 ? 0.01 : 0);
  ASSERT_EQ(mjdiff_setParamValues(m, s, P.p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
  mjdiff_getParamValues(m, s, P.p, back.data());
  EXPECT_EQ(0, std::memcmp(v.data(), back.data(), sizeof(mjtNum) * np));
  // subtree masses follow
  EXPECT_NEAR(m->body_subtreemass[0], 1.25 * copy->body_subtreemass[0], 1e-12);
  ASSERT_EQ(mjdiff_setParamValues(m, s, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
  mjdiff_getParamValues(m, s, P.p, back.data());
  EXPECT_EQ(0, std::memcmp(v0.data(), back.data(), sizeof(mjtNum) * np));
  EXPECT_NEAR(m->body_subtreemass[0], copy->body_subtreemass[0], 1e-12);

  // bad values: the message names the parameter and the value; nothing changes, even for the
  // valid values before the bad one
  struct Bad {
    const char* param;
    mjtNum value;
    const char* mention;
  } bad[] = {
      {"body:a:mass", -1, "body:a:mass"},         {"body:a:mass", 0, "> 0"},
      {"body:b:inertia[2]", 0, "body:b:inertia[2]"},
      {"joint:a1:damping", -0.5, "joint:a1:damping"},
      {"joint:b1:armature[1]", -1, "joint:b1:armature[1]"},
      {"joint:a1:frictionloss", -1, "-1"},        {"joint:a2:stiffness", -2, "-2"},
      {"tendon:t:damping", -1, "tendon:t:damping"},
      {"actuator:filt:dynprm", 0, "actuator:filt:dynprm"},
      {"option:gravity[2]", NAN, "option:gravity[2]"},
      {"body:a:ipos[0]", INFINITY, "body:a:ipos[0]"},
      {"mjdiff:eq_damping", -3, "eq_damping"},
      {"mjdiff:limit_width", 0.3, "limit_width"},  // ball range 0.4 < 2 * width
  };
  for (const Bad& b : bad) {
    int i = -1;
    for (int k = 0; k < np; k++) {
      if (!std::strcmp(mjdiff_paramName(P.p, k), b.param)) i = k;
    }
    ASSERT_GE(i, 0) << b.param;
    v = v0;
    for (int k = 0; k < np; k++) v[k] = v0[k] * 1.1 + 0.001;  // valid changes everywhere else
    v[i] = b.value;
    err[0] = 0;
    EXPECT_EQ(mjdiff_setParamValues(m, s, P.p, v.data(), err, sizeof(err)), MJDIFF_ERR_VALUE)
        << b.param;
    EXPECT_NE(std::string(err).find(b.mention), std::string::npos) << b.param << ": " << err;
    mjdiff_getParamValues(m, s, P.p, back.data());
    EXPECT_EQ(0, std::memcmp(v0.data(), back.data(), sizeof(mjtNum) * np)) << b.param;
    unchanged();
  }

  // geom values of the smooth model: set marks them explicit
  Sim csim(kContacts);
  ASSERT_TRUE(csim.ok) << csim.sim.err;
  Params G;
  const char* gnames[] = {"geom:box:contact_stiffness", "geom:floor:friction",
                          "mjdiff:contact_stiffness"};
  ASSERT_EQ(mjdiff_makeParams(csim.sim.m, csim.sim.s, gnames, 3, &G.p, err, sizeof(err)),
            MJDIFF_OK) << err;
  std::vector<mjtNum> g(5), gb(5);
  mjdiff_getParamValues(csim.sim.m, csim.sim.s, G.p, g.data());
  EXPECT_EQ(g[0], 3000);  // the model-wide value, followed
  EXPECT_EQ(g[4], 3000);
  g[4] = 4000;  // the box follows the model-wide value ...
  ASSERT_EQ(mjdiff_setParamValues(csim.sim.m, csim.sim.s, G.p, g.data(), err, sizeof(err)),
            MJDIFF_OK) << err;
  mjdiff_getParamValues(csim.sim.m, csim.sim.s, G.p, gb.data());
  EXPECT_EQ(gb[0], 3000);  // ... no longer: it was set (explicit) in the same call
  mjtNum box;
  ASSERT_EQ(mjdiff_getParam(csim.sim.s, "contact_stiffness:box", &box, err, sizeof(err)),
            MJDIFF_OK);
  EXPECT_EQ(box, 3000);
  g[1] = -0.1;
  EXPECT_EQ(mjdiff_setParamValues(csim.sim.m, csim.sim.s, G.p, g.data(), err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("geom:floor:friction[0]"), std::string::npos) << err;
  g[1] = 0.8;
  g[0] = 0;
  EXPECT_EQ(mjdiff_setParamValues(csim.sim.m, csim.sim.s, G.p, g.data(), err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("geom:box:contact_stiffness"), std::string::npos) << err;

  // a smooth-model field without the smooth model
  EXPECT_EQ(mjdiff_setParamValues(csim.sim.m, nullptr, G.p, gb.data(), err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  mj_deleteModel(copy);
}

}  // namespace
