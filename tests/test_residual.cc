// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Applied-force adjoints and neural residual forces (<mjdiff/residual.h>):
//   - the step adjoint's adj_qfrc (<mjdiff/args.h>) against centred finite differences of the
//     step in d->qfrc_applied, explicit and implicit, with and without contacts;
//   - a rollout with a residual network attached (mjdiff_rolloutSetForce): the gradient in the
//     network's weights, the start state and the controls against Richardson-extrapolated finite
//     differences of the whole rollout loss, through contacts, explicit and implicit;
//   - checkpointed sweeps equal to storing every state, bit for bit;
//   - refusals: weights of another model's shape, RK4, missing gradient output.
// Tolerances: as test_rollout.cc, 1e-5 relative to the directional derivative (1e-6 for one
// step), which rounding (~1e-10) and truncation after extrapolation stay far below.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <mjdiff/mjdiff.h>

#include "shim.h"
#include "testutil.h"

extern "C" {
#include "../adjoint/derivative.h"
}

namespace {

using testutil::uniform;

// a residual network with weights large enough that the force matters (a new residual starts
// at zero output), on the model of sim
mjdiffResidual* makeNet(const mjModel* m, unsigned long long seed, double gain) {
  mjdiffMLPDef def;
  mjdiff_defaultMLPDef(&def);
  def.nhidden = 2;
  def.width[0] = 16;
  def.width[1] = 16;
  mjdiffResidual* r = nullptr;
  char err[300];
  if (mjdiff_makeResidual(m, &def, seed, &r, err, sizeof(err)) != MJDIFF_OK) return nullptr;
  mjdiffMLP* net = mjdiff_residualNet(r);
  if (mjdiff_initMLP(net, MJDIFF_INIT_XAVIER_UNIFORM, seed, gain, err, sizeof(err)) != MJDIFF_OK) {
    mjdiff_freeResidual(r);
    return nullptr;
  }
  return r;
}

//---------------------------------- one step: adj_qfrc ------------------------------------------

// lambda' x'(qfrc_applied) by centred differences in direction e
void checkStepForceAdjoint(const char* model, bool implicit, int warm, bool contacts,
                           int substeps = 0) {
  std::string path = shim_modelPath(model);
  testutil::Sim S(nullptr, path.c_str());
  ASSERT_TRUE(S.ok) << S.sim.err;
  const mjModel* m = S.sim.m;
  mjData* d = S.sim.d;
  char err[500];
  if (implicit) {
    ASSERT_EQ(mjdiff_setParam(S.sim.s, "integrator", 1, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_setParam(S.sim.s, "implicit_tol", 1e-12, err, sizeof(err)), MJDIFF_OK);
  }
  if (substeps) {
    ASSERT_EQ(mjdiff_setParam(S.sim.s, "substeps", substeps, err, sizeof(err)), MJDIFF_OK) << err;
  }
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  unsigned long long seed = 3;
  int nv = m->nv, ndx = 2 * nv + m->na;
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, S.sim.s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  int touching = 0;
  for (int trial = 0; trial < 6; trial++) {
    for (int i = 0; i < (trial ? warm : 5 * warm); i++) {
      shim_randomCtrl(m, d, &seed);
      ASSERT_EQ(mjdiff_step(m, d, S.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    }
    // with contacts wanted: on to a state that touches (the hopper hops)
    for (int i = 0; contacts && d->ncon == 0 && i < 400; i++) {
      shim_randomCtrl(m, d, &seed);
      ASSERT_EQ(mjdiff_step(m, d, S.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    }
    for (int i = 0; i < nv; i++) d->qfrc_applied[i] = 0.3 * (uniform(&seed) - 0.5);
    touching += d->ncon > 0;
    std::vector<mjtNum> state = testutil::getState(m, d), lam(ndx), aq(nv), e(nv);
    for (auto& v : lam) v = uniform(&seed) - 0.5;
    for (auto& v : e) v = uniform(&seed) - 0.5;
    std::vector<mjtNum> au(m->nu + 1);
    mjdiffStepAdj adj;
    mjdiff_defaultStepAdj(&adj);
    adj.adj_next = lam.data();
    adj.adj_qfrc = aq.data();
    adj.adj_ctrl = au.data();
    ASSERT_EQ(mjdiff_stepAdjoint(m, d, S.sim.s, w, &adj, err, sizeof(err)), MJDIFF_OK) << err;
    // a motor's control acts as the generalised force gear * u on its joint: its adjoint is
    // exactly gear * adj_qfrc there (no finite differences; the models' actuators are motors
    // inside their ctrlrange)
    for (int k = 0; k < m->nu; k++) {
      if (m->actuator_trntype[k] != mjTRN_JOINT || m->actuator_gaintype[k] != mjGAIN_FIXED ||
          m->actuator_biastype[k] != mjBIAS_NONE || m->actuator_dyntype[k] != mjDYN_NONE) {
        continue;
      }
      int dof = m->jnt_dofadr[m->actuator_trnid[2 * k]];
      mjtNum expect = m->actuator_gear[6 * k] * m->actuator_gainprm[mjNGAIN * k] * aq[dof];
      EXPECT_NEAR(au[k], expect, 1e-9 * (std::fabs(expect) + 1e-12)) << model << " actuator " << k;
    }
    double analytic = mju_dot(aq.data(), e.data(), nv);
    std::vector<mjtNum> qf(d->qfrc_applied, d->qfrc_applied + nv), next[2], diff(ndx);
    auto at = [&](double h, int side) {
      shim_setState(m, d, state.data());
      for (int i = 0; i < nv; i++) d->qfrc_applied[i] = qf[i] + h * e[i];
      std::vector<mjtNum> x(m->nq + m->nv + m->na);
      EXPECT_EQ(mjdiff_step(m, d, S.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
      testutil::getPosVelAct(m, d, x.data());
      next[side] = x;
    };
    auto fd = [&](double h) {
      at(h, 0);
      at(-h, 1);
      testutil::tangentDiff(m, next[1], next[0], 2 * h, diff.data());
      return mju_dot(lam.data(), diff.data(), ndx);
    };
    double num = testutil::richardson(fd(1e-6), fd(2e-6));
    shim_setState(m, d, state.data());
    mju_copy(d->qfrc_applied, qf.data(), nv);
    // contacts (stiff, third derivatives large) and Newton's error (implicit_tol 1e-12 relative
    // over the difference step 1e-6) leave ~1e-6 in the differences: 1e-5, as test_rollout
    double tol = implicit || contacts ? 1e-5 : 1e-6;
    EXPECT_NEAR(analytic, num, tol * std::fmax(std::fabs(num), 1e-6))
        << model << (implicit ? " implicit" : " explicit") << " trial " << trial;
  }
  if (contacts) {
    EXPECT_GE(touching, 5) << model << ": most trials should touch";
  }
  mjdiff_freeStepDeriv(w);
}

TEST(ForceAdjoint, StepReacher) {
  checkStepForceAdjoint("reacher.xml", false, 20, false);
}

TEST(ForceAdjoint, StepHopperContacts) {
  checkStepForceAdjoint("hopper.xml", false, 40, true);
}

// held over three substeps: the adjoint summed over them
TEST(ForceAdjoint, StepHopperSubsteps) {
  checkStepForceAdjoint("hopper.xml", false, 40, true, 3);
}

TEST(ForceAdjoint, StepArmBoxImplicit) {
  checkStepForceAdjoint("arm_box.xml", true, 30, true);
}

TEST(ForceAdjoint, StepHopperImplicit) {
  checkStepForceAdjoint("hopper.xml", true, 40, true);
}

// a call that fails forms no applied-force adjoint, wherever it fails: after a VJP that formed
// one, a VJP refused for a non-finite adjoint (an input check) and one whose step diverges (inside
// the derivatives' forward pass) each leave mjdiff_stepForceAdjoint at 0
TEST(ForceAdjoint, NoneAfterAFailedCall) {
  testutil::Sim S(nullptr, shim_modelPath("hopper.xml"));
  ASSERT_TRUE(S.ok) << S.sim.err;
  const mjModel* m = S.sim.m;
  mjData* d = S.sim.d;
  char err[500] = "";
  int nv = m->nv, ndx = 2 * nv + m->na;
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, S.sim.s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> lam(ndx, 0.1), ax(ndx), aq(nv);
  ASSERT_EQ(mjdiff_stepVJP(m, d, S.sim.s, w, lam.data(), ax.data(), nullptr, nullptr, err,
                           sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_stepForceAdjoint(w, aq.data()), 1);
  lam[0] = NAN;
  EXPECT_EQ(mjdiff_stepVJP(m, d, S.sim.s, w, lam.data(), ax.data(), nullptr, nullptr, err,
                           sizeof(err)), MJDIFF_ERR_NONFINITE);
  EXPECT_EQ(mjdiff_stepForceAdjoint(w, aq.data()), 0);
  lam[0] = 0.1;
  ASSERT_EQ(mjdiff_stepVJP(m, d, S.sim.s, w, lam.data(), ax.data(), nullptr, nullptr, err,
                           sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_stepForceAdjoint(w, aq.data()), 1);
  d->qvel[0] = NAN;
  EXPECT_NE(mjdiff_stepVJP(m, d, S.sim.s, w, lam.data(), ax.data(), nullptr, nullptr, err,
                           sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(mjdiff_stepForceAdjoint(w, aq.data()), 0);
  mjdiff_freeStepDeriv(w);
}

//---------------------------------- rollouts with a residual -------------------------------------

struct Hybrid : testutil::Sim {
  int T, nx, ndx, nu, nth;
  std::vector<mjtNum> x0, ctrl, xref;
  mjdiffResidual* res = nullptr;
  mjdiffRollout* r = nullptr;
  std::vector<mjtNum> theta0;

  Hybrid(const char* model, int horizon, int warm, bool implicit, int checkpoint = 1)
      : testutil::Sim(nullptr, shim_modelPath(model)), T(horizon) {
    if (!ok) return;
    const mjModel* m = sim.m;
    mjData* d = sim.d;
    char err[300];
    if (implicit) {
      ok = mjdiff_setParam(sim.s, "integrator", 1, err, sizeof(err)) == MJDIFF_OK &&
           mjdiff_setParam(sim.s, "implicit_tol", 1e-12, err, sizeof(err)) == MJDIFF_OK;
    }
    nx = m->nq + m->nv + m->na;
    ndx = 2 * m->nv + m->na;
    nu = m->nu;
    if (m->nkey) mj_resetDataKeyframe(m, d, 0);
    for (int i = 0; i < warm; i++) mjdiff_step(m, d, sim.s, err, sizeof(err));
    x0.resize(nx);
    testutil::getPosVelAct(m, d, x0.data());
    unsigned long long seed = 11;
    ctrl.resize((size_t)T * nu);
    for (int t = 0; t < T; t++) {
      for (int i = 0; i < nu; i++) {
        double lo, hi;
        testutil::ctrlRange(m, i, &lo, &hi);
        ctrl[(size_t)t * nu + i] = lo + (hi - lo) * (0.5 + 0.3 * std::sin(0.07 * t + i));
      }
    }
    xref = x0;
    for (int i = m->nq; i < nx; i++) xref[i] += 0.1 * (uniform(&seed) - 0.5);
    res = makeNet(m, 5, 0.5);
    ok = ok && res;
    if (!ok) return;
    nth = mjdiff_mlpParamCount(mjdiff_residualNet(res));
    theta0.assign(mjdiff_mlpParams(mjdiff_residualNet(res)),
                  mjdiff_mlpParams(mjdiff_residualNet(res)) + nth);
    mjdiffRolloutOptions opt;
    mjdiff_defaultRolloutOptions(&opt);
    opt.checkpoint = checkpoint;
    ok = mjdiff_makeRollout(m, sim.s, nullptr, T, &opt, &r, err, sizeof(err)) == MJDIFF_OK &&
         mjdiff_rolloutSetForce(r, mjdiff_residualForceModel(res),
                                mjdiff_mlpParams(mjdiff_residualNet(res)), err,
                                sizeof(err)) == MJDIFF_OK;
  }
  ~Hybrid() {
    mjdiff_freeRollout(r);
    mjdiff_freeResidual(res);
  }

  void start(mjData* d, const mjtNum* dx) const {
    const mjModel* m = sim.m;
    mj_resetData(m, d);
    mju_copy(d->qpos, x0.data(), m->nq);
    mju_copy(d->qvel, x0.data() + m->nq, m->nv);
    mju_copy(d->act, x0.data() + m->nq + m->nv, m->na);
    if (dx) testutil::perturbState(m, d, dx);
  }

  // L = sum_t |x_t (-) x_ref|^2 / 2 and its state gradients (tangent layout)
  double loss(const std::vector<mjtNum>& states, mjtNum* dLdx) const {
    const mjModel* m = sim.m;
    double L = 0;
    std::vector<mjtNum> diff(ndx);
    for (int t = 0; t <= T; t++) {
      const mjtNum* x = states.data() + (size_t)nx * t;
      mj_differentiatePos(m, diff.data(), 1, xref.data(), x);
      for (int i = 0; i < m->nv + m->na; i++) diff[m->nv + i] = x[m->nq + i] - xref[m->nq + i];
      for (int i = 0; i < ndx; i++) {
        L += 0.5 * diff[i] * diff[i];
        if (dLdx) dLdx[(size_t)ndx * t + i] = diff[i];
      }
    }
    return L;
  }

  // the loss of a rollout from x0 (+) dx, controls u, weights theta (forward only)
  double rolloutLoss(const mjtNum* dx, const mjtNum* u, const mjtNum* theta) {
    mjData* d = sim.d;
    mjtNum* w = mjdiff_mlpParams(mjdiff_residualNet(res));
    mju_copy(w, theta, nth);
    start(d, dx);
    std::vector<mjtNum> states((size_t)(T + 1) * nx);
    char err[300];
    EXPECT_EQ(mjdiff_rolloutForward(sim.m, d, sim.s, r, u, nullptr, nullptr, states.data(),
                                    nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    mju_copy(w, theta0.data(), nth);
    return loss(states, nullptr);
  }

  // gradients in x0, ctrl, theta; number of steps in contact
  int gradient(std::vector<mjtNum>* gx, std::vector<mjtNum>* gu, std::vector<mjtNum>* gth) {
    mjData* d = sim.d;
    char err[500];
    start(d, nullptr);
    std::vector<mjtNum> states((size_t)(T + 1) * nx), dLdx((size_t)(T + 1) * ndx);
    EXPECT_EQ(mjdiff_rolloutForward(sim.m, d, sim.s, r, ctrl.data(), nullptr, nullptr,
                                    states.data(), nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    loss(states, dLdx.data());
    gx->assign(ndx, 0);
    gu->assign((size_t)T * nu, 0);
    gth->assign(nth, 0);
    mjdiffRolloutGrad g;
    mjdiff_defaultRolloutGrad(&g);
    g.dLdx = dLdx.data();
    g.grad_x0 = gx->data();
    g.grad_ctrl = gu->data();
    g.grad_force = gth->data();
    EXPECT_EQ(mjdiff_rolloutGradient(sim.m, d, sim.s, r, &g, err, sizeof(err)), MJDIFF_OK)
        << err;
    EXPECT_EQ(mjdiff_residualStatus(res, err, sizeof(err)), MJDIFF_OK) << err;
    int touching = 0;
    start(d, nullptr);
    for (int t = 0; t < T; t++) {
      mju_copy(d->ctrl, ctrl.data() + (size_t)nu * t, nu);
      mjdiff_residualForce(res, sim.m, d, d->qfrc_applied, err, sizeof(err));
      mjdiff_step(sim.m, d, sim.s, err, sizeof(err));
      touching += d->ncon > 0;
    }
    return touching;
  }
};

void checkHybrid(const char* model, int T, int warm, bool implicit, bool contacts) {
  Hybrid H(model, T, warm, implicit);
  ASSERT_TRUE(H.ok) << H.sim.err;
  std::vector<mjtNum> gx, gu, gth;
  int touching = H.gradient(&gx, &gu, &gth);
  if (contacts) {
    EXPECT_GT(touching, T / 5) << model << ": the rollout should be in contact";
  }
  double gnorm = std::sqrt(mju_dot(gth.data(), gth.data(), H.nth));
  EXPECT_GT(gnorm, 0) << "the weights' gradient must not vanish";
  unsigned long long seed = 21;
  for (int trial = 0; trial < 6; trial++) {
    std::vector<mjtNum> dx(H.ndx, 0), du(H.ctrl.size(), 0), dth(H.nth, 0);
    if (trial < 4) {
      for (auto& v : dth) v = uniform(&seed) - 0.5;
    } else if (trial == 4) {
      for (auto& v : dx) v = uniform(&seed) - 0.5;
    } else {
      for (auto& v : du) v = uniform(&seed) - 0.5;
    }
    double analytic = mju_dot(gx.data(), dx.data(), H.ndx) +
                      mju_dot(gu.data(), du.data(), (int)du.size()) +
                      mju_dot(gth.data(), dth.data(), H.nth);
    auto at = [&](double h) {
      std::vector<mjtNum> x(dx), u(H.ctrl), th(H.theta0);
      for (auto& v : x) v *= h;
      for (size_t k = 0; k < u.size(); k++) u[k] += h * du[k];
      for (int k = 0; k < H.nth; k++) th[k] += h * dth[k];
      return H.rolloutLoss(x.data(), u.data(), th.data());
    };
    auto fd = [&](double h) { return (at(h) - at(-h)) / (2 * h); };
    double num = testutil::richardson(fd(1e-6), fd(2e-6));
    EXPECT_NEAR(analytic, num, 1e-5 * std::fmax(std::fabs(num), 1e-8))
        << model << (implicit ? " implicit" : " explicit") << " trial " << trial;
  }
}

TEST(Residual, RolloutGradientReacher) {
  checkHybrid("reacher.xml", 100, 0, false, false);
}

TEST(Residual, RolloutGradientHopperContacts) {
  checkHybrid("hopper.xml", 100, 30, false, true);
}

TEST(Residual, RolloutGradientArmBoxImplicitContacts) {
  checkHybrid("arm_box.xml", 80, 20, true, true);
}

TEST(Residual, CheckpointingIsBitForBit) {
  std::vector<mjtNum> g1[3], g2[3];
  {
    Hybrid H("hopper.xml", 60, 30, false, 1);
    ASSERT_TRUE(H.ok) << H.sim.err;
    H.gradient(&g1[0], &g1[1], &g1[2]);
  }
  {
    Hybrid H("hopper.xml", 60, 30, false, 7);
    ASSERT_TRUE(H.ok) << H.sim.err;
    H.gradient(&g2[0], &g2[1], &g2[2]);
  }
  for (int k = 0; k < 3; k++) {
    ASSERT_EQ(g1[k].size(), g2[k].size());
    for (size_t i = 0; i < g1[k].size(); i++) ASSERT_EQ(g1[k][i], g2[k][i]) << k << " " << i;
  }
}

//---------------------------------- refusals ------------------------------------------------------

TEST(Residual, NeedsItsGradientOutput) {
  Hybrid H("reacher.xml", 10, 0, false);
  ASSERT_TRUE(H.ok) << H.sim.err;
  mjData* d = H.sim.d;
  char err[300];
  H.start(d, nullptr);
  ASSERT_EQ(mjdiff_rolloutForward(H.sim.m, d, H.sim.s, H.r, H.ctrl.data(), nullptr, nullptr,
                                  nullptr, nullptr, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  EXPECT_EQ(mjdiff_rolloutGradient(H.sim.m, d, H.sim.s, H.r, &g, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("grad_force"), std::string::npos) << err;
}

TEST(Residual, RefusesRK4) {
  testutil::Sim S(nullptr, shim_modelPath("reacher.xml"));
  ASSERT_TRUE(S.ok) << S.sim.err;
  S.sim.m->opt.integrator = mjINT_RK4;
  mjdiffResidual* res = makeNet(S.sim.m, 1, 1);
  ASSERT_NE(res, nullptr);
  mjdiffRollout* r = nullptr;
  char err[300];
  ASSERT_EQ(mjdiff_makeRollout(S.sim.m, S.sim.s, nullptr, 5, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_rolloutSetForce(r, mjdiff_residualForceModel(res),
                                   mjdiff_mlpParams(mjdiff_residualNet(res)), err, sizeof(err)),
            MJDIFF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("RK4"), std::string::npos) << err;
  // the step adjoint's adj_qfrc likewise
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(S.sim.m, S.sim.s, nullptr, &w, err, sizeof(err)), MJDIFF_OK);
  std::vector<mjtNum> lam(2 * S.sim.m->nv + S.sim.m->na, 1), aq(S.sim.m->nv);
  mjdiffStepAdj adj;
  mjdiff_defaultStepAdj(&adj);
  adj.adj_next = lam.data();
  adj.adj_qfrc = aq.data();
  EXPECT_EQ(mjdiff_stepAdjoint(S.sim.m, S.sim.d, S.sim.s, w, &adj, err, sizeof(err)),
            MJDIFF_ERR_UNSUPPORTED);
  mjdiff_freeStepDeriv(w);
  mjdiff_freeRollout(r);
  mjdiff_freeResidual(res);
}

TEST(Residual, SaveLoadAndWrongModel) {
  testutil::Sim A(nullptr, shim_modelPath("reacher.xml"));
  testutil::Sim B(nullptr, shim_modelPath("hopper.xml"));
  ASSERT_TRUE(A.ok && B.ok);
  mjdiffResidual* res = makeNet(A.sim.m, 2, 1);
  ASSERT_NE(res, nullptr);
  std::string path = testing::TempDir() + "residual_reacher.npz";
  char err[600];
  ASSERT_EQ(mjdiff_saveMLP(mjdiff_residualNet(res), path.c_str(), err, sizeof(err)), MJDIFF_OK);
  mjdiffResidual* back = nullptr;
  ASSERT_EQ(mjdiff_loadResidual(A.sim.m, path.c_str(), &back, err, sizeof(err)), MJDIFF_OK)
      << err;
  // same force at a random state
  mjData* d = A.sim.d;
  unsigned long long seed = 4;
  for (int i = 0; i < A.sim.m->nv; i++) d->qvel[i] = uniform(&seed) - 0.5;
  shim_randomCtrl(A.sim.m, d, &seed);
  std::vector<mjtNum> f1(A.sim.m->nv), f2(A.sim.m->nv);
  ASSERT_EQ(mjdiff_residualForce(res, A.sim.m, d, f1.data(), err, sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_residualForce(back, A.sim.m, d, f2.data(), err, sizeof(err)), MJDIFF_OK);
  for (int i = 0; i < A.sim.m->nv; i++) EXPECT_EQ(f1[i], f2[i]);
  EXPECT_GT(std::fabs(f1[0]) + std::fabs(f1[1]), 0);
  mjdiffResidual* wrong = nullptr;
  EXPECT_EQ(mjdiff_loadResidual(B.sim.m, path.c_str(), &wrong, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_EQ(wrong, nullptr);
  EXPECT_NE(std::string(err).find(path), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("another model"), std::string::npos) << err;
  // a residual for one model used on another: a named error, a zero force
  std::vector<mjtNum> fb(B.sim.m->nv, 1);
  EXPECT_EQ(mjdiff_residualForce(res, B.sim.m, B.sim.d, fb.data(), err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  for (mjtNum v : fb) EXPECT_EQ(v, 0);
  mjdiff_freeResidual(back);
  mjdiff_freeResidual(res);
  std::remove(path.c_str());
}

TEST(Residual, NewNetworkIsThePhysics) {
  testutil::Sim S(nullptr, shim_modelPath("hopper.xml"));
  ASSERT_TRUE(S.ok);
  mjdiffResidual* res = nullptr;
  char err[300];
  ASSERT_EQ(mjdiff_makeResidual(S.sim.m, nullptr, 1, &res, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> f(S.sim.m->nv, 1);
  ASSERT_EQ(mjdiff_residualForce(res, S.sim.m, S.sim.d, f.data(), err, sizeof(err)), MJDIFF_OK);
  for (mjtNum v : f) EXPECT_EQ(v, 0);
  // features: rootx (horizontal root slide) dropped, rootz kept, rooty (unlimited hinge) as
  // sin and cos, the three limited hinges kept; then qvel (6) and ctrl (3)
  EXPECT_EQ(mjdiff_residualInputSize(res), 1 + 2 + 3 + 6 + 3);
  std::vector<mjtNum> z(mjdiff_residualInputSize(res));
  S.sim.d->qpos[2] = 0.7;
  mjdiff_residualInput(res, S.sim.m, S.sim.d, z.data());
  EXPECT_EQ(z[0], S.sim.d->qpos[1]);
  EXPECT_DOUBLE_EQ(z[1], std::sin(0.7));
  EXPECT_DOUBLE_EQ(z[2], std::cos(0.7));
  const mjtNum* s = mjdiff_residualScale(res);
  for (int i = 0; i < S.sim.m->nv; i++) {
    EXPECT_TRUE(std::isfinite(s[i]) && s[i] >= 1e-6) << i << " " << s[i];
  }
  mjdiff_freeResidual(res);
}

}  // namespace
