// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Rollout gradients against centered finite differences of whole rollouts; checkpointing against
// storing every state (bit for bit); batches against serial runs (bit for bit); a policy's VJP.
//
// Loss: L = sum_t w_x . (x_t (-) x_ref)^2 / 2 + w_u |u_t|^2 / 2 with a fixed random x_ref,
// gradients in the tangent layout. Tolerance rationale: over T = 200 steps, centered differences
// of the whole rollout at eps = 1e-6 carry rounding ~ ulp(L) / eps ~ 1e-10 relative to L and
// truncation ~ eps^2 L''' (contact transitions within the horizon make L''' large near them);
// Richardson extrapolation over (eps, 2 eps) and comparing against the gradient's norm, we require
// 1e-5 relative, the bound.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>
#include <mjdiff/rollout.h>

#include "../adjoint/derivative.h"
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::uniform;

// a rollout problem on a loaded model (sim, ok: testutil::Sim)
struct Problem : testutil::Sim {
  int T = 0, nx = 0, ndx = 0, nu = 0;
  std::vector<mjtNum> x0, ctrl, xref;
  double wu = 1e-3;

  // implicit: the implicit smooth step, converged to 1e-12 (testutil::kImplicitTight)
  Problem(const char* path, int horizon, int warm, unsigned long long seed, bool implicit = false)
      : testutil::Sim(nullptr, path), T(horizon) {
    if (!ok) return;
    const mjModel* m = sim.m;
    mjData* d = sim.d;
    if (implicit) {
      char e[300];
      ok = mjdiff_setParam(sim.s, "integrator", 1, e, sizeof(e)) == MJDIFF_OK &&
           mjdiff_setParam(sim.s, "implicit_tol", 1e-12, e, sizeof(e)) == MJDIFF_OK;
      if (!ok) return;
    }
    nx = m->nq + m->nv + m->na;
    ndx = 2 * m->nv + m->na;
    nu = m->nu;
    if (m->nkey) mj_resetDataKeyframe(m, d, 0);
    char err[300];
    for (int i = 0; i < warm; i++) mjdiff_step(m, d, sim.s, err, sizeof(err));
    x0.resize(nx);
    testutil::getPosVelAct(m, d, x0.data());
    ctrl.resize(T * nu);
    for (int t = 0; t < T; t++) {
      for (int i = 0; i < nu; i++) {
        double lo, hi;
        testutil::ctrlRange(m, i, &lo, &hi);
        // smooth controls, strictly inside the range
        double phase = 6.28 * uniform(&seed);
        ctrl[t * nu + i] = lo + (hi - lo) * (0.5 + 0.4 * std::sin(0.05 * t + phase));
      }
    }
    xref = x0;
    for (int i = m->nq; i < nx; i++) xref[i] += 0.1 * (uniform(&seed) - 0.5);
  }

  void setStart(mjData* d, const mjtNum* dx) const {
    const mjModel* m = sim.m;
    mj_resetData(m, d);
    mju_copy(d->qpos, x0.data(), m->nq);
    mju_copy(d->qvel, x0.data() + m->nq, m->nv);
    mju_copy(d->act, x0.data() + m->nq + m->nv, m->na);
    if (dx) testutil::perturbState(m, d, dx);
  }

  // loss of a rollout's states and controls, and its gradients (tangent layout)
  double loss(const std::vector<mjtNum>& states, const mjtNum* u, mjtNum* dLdx,
              mjtNum* dLdu) const {
    const mjModel* m = sim.m;
    double L = 0;
    std::vector<mjtNum> diff(ndx);
    for (int t = 0; t <= T; t++) {
      const mjtNum* x = states.data() + (size_t)nx * t;
      mj_differentiatePos(m, diff.data(), 1, xref.data(), x);
      for (int i = 0; i < m->nv; i++) diff[m->nv + i] = x[m->nq + i] - xref[m->nq + i];
      for (int i = 0; i < m->na; i++) diff[2 * m->nv + i] = x[m->nq + m->nv + i] - xref[m->nq + m->nv + i];
      for (int i = 0; i < ndx; i++) {
        L += 0.5 * diff[i] * diff[i];
        // for ball/free rotations the gradient of |log(ref^-1 x)|^2 / 2 in the right perturbation
        // is J_r^-1(diff)' diff = diff (the rotation axis is an eigenvector): exact
        if (dLdx) dLdx[(size_t)ndx * t + i] = diff[i];
      }
    }
    for (int k = 0; k < T * nu; k++) {
      L += 0.5 * wu * u[k] * u[k];
      if (dLdu) dLdu[k] = wu * u[k];
    }
    return L;
  }

  // loss of a rollout from x0 (+) dx with controls u
  double rolloutLoss(mjData* d, const mjtNum* dx, const mjtNum* u) const {
    setStart(d, dx);
    std::vector<mjtNum> states((size_t)(T + 1) * nx);
    char err[300];
    for (int t = 0; t < T; t++) {
      testutil::getPosVelAct(sim.m, d, states.data() + (size_t)nx * t);
      mju_copy(d->ctrl, u + (size_t)nu * t, nu);
      mjdiff_step(sim.m, d, sim.s, err, sizeof(err));
    }
    testutil::getPosVelAct(sim.m, d, states.data() + (size_t)nx * T);
    return loss(states, u, nullptr, nullptr);
  }
};

// gradient of the rollout loss through the rollout API
void analyticGradient(Problem& P, int checkpoint, std::vector<mjtNum>* gx0,
                      std::vector<mjtNum>* gu, int* ncontact) {
  const mjModel* m = P.sim.m;
  mjData* d = P.sim.d;
  mjdiffRolloutOptions opt;
  mjdiff_defaultRolloutOptions(&opt);
  opt.checkpoint = checkpoint;
  mjdiffRollout* r = nullptr;
  char err[500];
  ASSERT_EQ(mjdiff_makeRollout(m, P.sim.s, nullptr, P.T, &opt, &r, err, sizeof(err)), MJDIFF_OK)
      << err;
  P.setStart(d, nullptr);
  std::vector<mjtNum> states((size_t)(P.T + 1) * P.nx);
  ASSERT_EQ(mjdiff_rolloutForward(m, d, P.sim.s, r, P.ctrl.data(), nullptr, nullptr,
                                  states.data(), nullptr, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> dLdx((size_t)(P.T + 1) * P.ndx), dLdu((size_t)P.T * P.nu);
  P.loss(states, P.ctrl.data(), dLdx.data(), dLdu.data());
  gx0->assign(P.ndx, 0);
  gu->assign((size_t)P.T * P.nu, 0);
  ASSERT_EQ(mjdiff_rolloutBackward(m, d, P.sim.s, r, dLdx.data(), dLdu.data(), nullptr,
                                   gx0->data(), gu->data(), nullptr, nullptr, err, sizeof(err)),
            MJDIFF_OK) << err;
  if (ncontact) {
    // contacts along the trajectory
    *ncontact = 0;
    P.setStart(d, nullptr);
    for (int t = 0; t < P.T; t++) {
      mju_copy(d->ctrl, P.ctrl.data() + (size_t)P.nu * t, P.nu);
      mjdiff_step(m, d, P.sim.s, err, sizeof(err));
      *ncontact += d->ncon > 0;
    }
  }
  mjdiff_freeRollout(r);
}

// centered, Richardson-extrapolated finite difference of the rollout loss in one direction
double fdDirectional(Problem& P, const std::vector<mjtNum>& dx, const std::vector<mjtNum>& du,
                     double eps) {
  mjData* d = P.sim.d;
  auto at = [&](double h) {
    std::vector<mjtNum> x(dx), u(P.ctrl);
    for (auto& v : x) v *= h;
    for (size_t k = 0; k < u.size(); k++) u[k] += h * du[k];
    return P.rolloutLoss(d, x.data(), u.data());
  };
  double g1 = (at(eps) - at(-eps)) / (2 * eps);
  double g2 = (at(2 * eps) - at(-2 * eps)) / (4 * eps);
  return testutil::richardson(g1, g2);
}

void checkGradient(const char* model, int warm, bool needContacts, bool implicit = false) {
  Problem P(shim_modelPath(model), 200, warm, 7, implicit);
  ASSERT_TRUE(P.ok) << P.sim.err;
  std::vector<mjtNum> gx0, gu;
  int ncontact = 0;
  analyticGradient(P, 1, &gx0, &gu, &ncontact);
  if (needContacts) {
    EXPECT_GT(ncontact, 20) << "the trajectory should be in contact for a good part";
  }

  // random directions in the start state and the controls; also each start-state coordinate
  unsigned long long seed = 99;
  double worst = 0;
  for (int trial = 0; trial < 6; trial++) {
    std::vector<mjtNum> dx(P.ndx, 0), du(P.ctrl.size(), 0);
    if (trial < 3) {
      for (auto& v : dx) v = uniform(&seed) - 0.5;
    } else {
      for (auto& v : du) v = uniform(&seed) - 0.5;
    }
    double analytic = mju_dot(gx0.data(), dx.data(), P.ndx) +
                      mju_dot(gu.data(), du.data(), (int)du.size());
    double fd = fdDirectional(P, dx, du, 1e-6);
    double scale = std::fmax(std::fabs(fd), 1e-8);
    double rel = std::fabs(analytic - fd) / scale;
    worst = std::fmax(worst, rel);
    EXPECT_LE(rel, 1e-5) << model << " trial " << trial << ": analytic " << analytic
                         << " finite difference " << fd;
  }
  std::cout << model << (implicit ? " (implicit)" : "") << ": " << ncontact
            << " of 200 steps in contact, worst relative error "
            << worst << "\n";
}

TEST(Rollout, ArmPushingBoxGradient) {
  checkGradient("arm_box.xml", 100, true);
}

TEST(Rollout, HopperLandingGradient) {
  // the hopper starts above the floor and lands within the horizon
  checkGradient("hopper.xml", 0, true);
}

// the implicit step: the backward pass starts each step's Newton from the stored v_{t+1}
// (mjdiff_stepDerivHint), so it linearises on the forward pass's own solution
TEST(Rollout, ArmPushingBoxGradientImplicit) {
  checkGradient("arm_box.xml", 100, true, true);
}

TEST(Rollout, HopperLandingGradientImplicit) {
  checkGradient("hopper.xml", 0, true, true);
}

TEST(Rollout, CheckpointingIsBitwiseStoreAll) {
  Problem P(shim_modelPath("arm_box.xml"), 200, 100, 7);
  ASSERT_TRUE(P.ok) << P.sim.err;
  std::vector<mjtNum> gx0a, gua, gx0b, gub, gx0c, guc;
  analyticGradient(P, 1, &gx0a, &gua, nullptr);
  analyticGradient(P, 0, &gx0b, &gub, nullptr);   // ceil(sqrt(200)) = 15
  analyticGradient(P, 37, &gx0c, &guc, nullptr);  // a stride that does not divide T
  EXPECT_EQ(0, std::memcmp(gx0a.data(), gx0b.data(), gx0a.size() * sizeof(mjtNum)));
  EXPECT_EQ(0, std::memcmp(gua.data(), gub.data(), gua.size() * sizeof(mjtNum)));
  EXPECT_EQ(0, std::memcmp(gx0a.data(), gx0c.data(), gx0a.size() * sizeof(mjtNum)));
  EXPECT_EQ(0, std::memcmp(gua.data(), guc.data(), gua.size() * sizeof(mjtNum)));
  // and the gradient is not trivially zero
  EXPECT_GT(mju_norm(gx0a.data(), (int)gx0a.size()), 0);
}

TEST(Rollout, CheckpointingUsesLessMemory) {
  Problem P(shim_modelPath("arm_box.xml"), 1000, 0, 7);
  ASSERT_TRUE(P.ok) << P.sim.err;
  mjdiffRolloutOptions all, sqrtT;
  mjdiff_defaultRolloutOptions(&all);
  mjdiff_defaultRolloutOptions(&sqrtT);
  sqrtT.checkpoint = 0;
  mjdiffRollout *a = nullptr, *b = nullptr;
  char err[300];
  ASSERT_EQ(mjdiff_makeRollout(P.sim.m, P.sim.s, nullptr, 1000, &all, &a, err, sizeof(err)),
            MJDIFF_OK);
  ASSERT_EQ(mjdiff_makeRollout(P.sim.m, P.sim.s, nullptr, 1000, &sqrtT, &b, err, sizeof(err)),
            MJDIFF_OK);
  size_t state = sizeof(mjtNum) * (P.sim.m->nq + P.sim.m->nv + 1);
  // store-all holds 1001 states, sqrt(T) checkpointing about 2 sqrt(T)
  EXPECT_GT(mjdiff_rolloutMemory(a), mjdiff_rolloutMemory(b) + 900 * state);
  mjdiff_freeRollout(a);
  mjdiff_freeRollout(b);
}

// the loss of Problem as a batch loss
mjtNum batchLoss(const mjModel* m, int item, int horizon, const mjtNum* states,
                 const mjtNum* ctrl, const mjtNum* sensordata, void* user, mjtNum* dLdx,
                 mjtNum* dLdu, mjtNum* dLds) {
  (void)m, (void)item, (void)horizon, (void)sensordata, (void)dLds;
  const Problem* P = (const Problem*)user;
  std::vector<mjtNum> s(states, states + (size_t)(P->T + 1) * P->nx);
  return P->loss(s, ctrl, dLdx, dLdu);
}

TEST(Rollout, BatchMatchesSerial) {
  Problem P(shim_modelPath("arm_box.xml"), 100, 50, 3);
  ASSERT_TRUE(P.ok) << P.sim.err;
  const int n = 6;
  std::vector<std::vector<mjtNum>> x0(n, P.x0), ctrl(n, P.ctrl);
  unsigned long long seed = 5;
  for (int i = 0; i < n; i++) {
    for (int k = P.sim.m->nq; k < P.nx; k++) x0[i][k] += 0.05 * (uniform(&seed) - 0.5);
    for (auto& u : ctrl[i]) u *= 0.9 + 0.1 * uniform(&seed);
  }
  mjdiffLoss loss = {&P, batchLoss};
  auto run = [&](int nthread, std::vector<std::vector<mjtNum>>* gx, std::vector<double>* L) {
    std::vector<mjdiffBatchItem> items(n);
    gx->assign(n, std::vector<mjtNum>(P.ndx + P.T * P.nu));
    L->assign(n, 0);
    for (int i = 0; i < n; i++) {
      std::memset(&items[i], 0, sizeof(items[i]));
      items[i].x0 = x0[i].data();
      items[i].ctrl = ctrl[i].data();
      items[i].grad_x0 = (*gx)[i].data();
      items[i].grad_ctrl = (*gx)[i].data() + P.ndx;
    }
    char err[300];
    ASSERT_EQ(mjdiff_rolloutBatch(P.sim.m, P.sim.s, nullptr, P.T, nullptr, &loss, nthread,
                                  items.data(), n, err, sizeof(err)), MJDIFF_OK) << err;
    for (int i = 0; i < n; i++) (*L)[i] = items[i].loss;
  };
  std::vector<std::vector<mjtNum>> g1, g3;
  std::vector<double> L1, L3;
  run(1, &g1, &L1);
  run(3, &g3, &L3);
  for (int i = 0; i < n; i++) {
    EXPECT_EQ(L1[i], L3[i]);
    EXPECT_EQ(0, std::memcmp(g1[i].data(), g3[i].data(), g1[i].size() * sizeof(mjtNum)));
  }
  EXPECT_NE(L1[0], L1[1]);  // the items differ
}

TEST(Rollout, BatchParameterValuesMatchSerial) {
  Problem P(shim_modelPath("arm_box.xml"), 60, 50, 3);
  ASSERT_TRUE(P.ok) << P.sim.err;
  mjModel* m = P.sim.m;
  char err[300];
  const char* names[] = {"body:box:mass", "geom:table:friction"};
  mjdiffParams* params = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, P.sim.s, names, 2, &params, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(params);
  std::vector<mjtNum> p0(np);
  mjdiff_getParamValues(m, P.sim.s, params, p0.data());
  const int n = 4;
  std::vector<std::vector<mjtNum>> values(n, p0);
  for (int i = 0; i < n; i++) {
    for (auto& v : values[i]) v *= 1 + 0.1 * i;
  }
  mjdiffLoss loss = {&P, batchLoss};
  std::vector<mjdiffBatchItem> items(n);
  std::vector<std::vector<mjtNum>> gp(n, std::vector<mjtNum>(np));
  for (int i = 0; i < n; i++) {
    std::memset(&items[i], 0, sizeof(items[i]));
    items[i].x0 = P.x0.data();
    items[i].ctrl = P.ctrl.data();
    items[i].param_values = values[i].data();
    items[i].grad_param = gp[i].data();
  }
  ASSERT_EQ(mjdiff_rolloutBatch(m, P.sim.s, params, P.T, nullptr, &loss, 2, items.data(), n, err,
                                sizeof(err)), MJDIFF_OK) << err;
  // the caller's model is unchanged
  std::vector<mjtNum> after(np);
  mjdiff_getParamValues(m, P.sim.s, params, after.data());
  EXPECT_EQ(0, std::memcmp(p0.data(), after.data(), np * sizeof(mjtNum)));
  // serial: set each item's values on the model, run one item
  for (int i = 0; i < n; i++) {
    ASSERT_EQ(mjdiff_setParamValues(m, P.sim.s, params, values[i].data(), err, sizeof(err)),
              MJDIFF_OK) << err;
    mjdiffBatchItem one;
    std::memset(&one, 0, sizeof(one));
    std::vector<mjtNum> g(np);
    one.x0 = P.x0.data();
    one.ctrl = P.ctrl.data();
    one.grad_param = g.data();
    ASSERT_EQ(mjdiff_rolloutBatch(m, P.sim.s, params, P.T, nullptr, &loss, 1, &one, 1, err,
                                  sizeof(err)), MJDIFF_OK) << err;
    EXPECT_EQ(one.loss, items[i].loss) << "item " << i;
    EXPECT_EQ(0, std::memcmp(g.data(), gp[i].data(), np * sizeof(mjtNum))) << "item " << i;
  }
  EXPECT_NE(items[0].loss, items[3].loss);
  mjdiff_setParamValues(m, P.sim.s, params, p0.data(), err, sizeof(err));
  mjdiff_freeParams(params);
}

// a linear feedback policy u = K (x (-) x_ref) + k0, parameters (K, k0)
struct Linear {
  const Problem* P;
};

// the policy's error e = x (-) x_ref at d's state (2nv + na; the act part 0)
std::vector<mjtNum> policyError(const Problem* P, const mjModel* m, const mjData* d) {
  std::vector<mjtNum> x(P->nx), e(P->ndx);
  testutil::getPosVelAct(m, d, x.data());
  mj_differentiatePos(m, e.data(), 1, P->xref.data(), x.data());
  for (int i = 0; i < m->nv; i++) e[m->nv + i] = x[m->nq + i] - P->xref[m->nq + i];
  return e;
}

void linearAct(const mjModel* m, const mjData* d, const mjtNum* theta, void* user, mjtNum* ctrl) {
  const Problem* P = ((Linear*)user)->P;
  int ndx = P->ndx, nu = m->nu;
  std::vector<mjtNum> e = policyError(P, m, d);
  for (int i = 0; i < nu; i++) {
    ctrl[i] = theta[ndx * nu + i] + mju_dot(theta + ndx * i, e.data(), ndx);
  }
}

void linearVJP(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
               const mjtNum* adj_ctrl, mjtNum* adj_x, mjtNum* adj_theta) {
  const Problem* P = ((Linear*)user)->P;
  int ndx = P->ndx, nu = m->nu;
  std::vector<mjtNum> e = policyError(P, m, d);
  // hinge-only model (arm): de/dx = I
  for (int i = 0; i < nu; i++) {
    for (int j = 0; j < ndx; j++) {
      adj_x[j] += theta[ndx * i + j] * adj_ctrl[i];
      adj_theta[ndx * i + j] += e[j] * adj_ctrl[i];
    }
    adj_theta[ndx * nu + i] += adj_ctrl[i];
  }
}

TEST(Rollout, PolicyParameterGradient) {
  Problem P(shim_modelPath("arm_box.xml"), 100, 50, 11);
  ASSERT_TRUE(P.ok) << P.sim.err;
  const mjModel* m = P.sim.m;
  mjData* d = P.sim.d;
  int ntheta = P.ndx * P.nu + P.nu;
  std::vector<mjtNum> theta(ntheta, 0);
  unsigned long long seed = 3;
  for (auto& v : theta) v = 0.02 * (uniform(&seed) - 0.5);
  Linear lin = {&P};
  mjdiffPolicy policy = {ntheta, &lin, linearAct, linearVJP};

  auto lossOf = [&](const std::vector<mjtNum>& th, std::vector<mjtNum>* grad) {
    mjdiffRollout* r = nullptr;
    char err[300];
    EXPECT_EQ(mjdiff_makeRollout(m, P.sim.s, nullptr, P.T, nullptr, &r, err, sizeof(err)),
              MJDIFF_OK);
    P.setStart(d, nullptr);
    std::vector<mjtNum> states((size_t)(P.T + 1) * P.nx);
    EXPECT_EQ(mjdiff_rolloutForward(m, d, P.sim.s, r, nullptr, &policy, th.data(),
                                    states.data(), nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    // controls as the policy made them
    std::vector<mjtNum> u((size_t)P.T * P.nu), dLdx((size_t)(P.T + 1) * P.ndx), dLdu(u.size());
    P.setStart(d, nullptr);
    for (int t = 0; t < P.T; t++) {
      linearAct(m, d, th.data(), &lin, u.data() + (size_t)P.nu * t);
      mju_copy(d->ctrl, u.data() + (size_t)P.nu * t, P.nu);
      mjdiff_step(m, d, P.sim.s, err, sizeof(err));
    }
    double L = P.loss(states, u.data(), dLdx.data(), dLdu.data());
    if (grad) {
      grad->assign(ntheta, 0);
      EXPECT_EQ(mjdiff_rolloutBackward(m, d, P.sim.s, r, dLdx.data(), dLdu.data(), nullptr,
                                       nullptr, nullptr, grad->data(), nullptr, err, sizeof(err)),
                MJDIFF_OK) << err;
    }
    mjdiff_freeRollout(r);
    return L;
  };
  std::vector<mjtNum> grad;
  lossOf(theta, &grad);
  std::vector<mjtNum> dir(ntheta);
  for (auto& v : dir) v = uniform(&seed) - 0.5;
  auto at = [&](double h) {
    std::vector<mjtNum> th(theta);
    for (int i = 0; i < ntheta; i++) th[i] += h * dir[i];
    return lossOf(th, nullptr);
  };
  double eps = 1e-6;
  double g1 = (at(eps) - at(-eps)) / (2 * eps), g2 = (at(2 * eps) - at(-2 * eps)) / (4 * eps);
  double fd = (4 * g1 - g2) / 3, analytic = mju_dot(grad.data(), dir.data(), ntheta);
  EXPECT_NEAR(analytic, fd, 1e-5 * std::fabs(fd)) << "policy gradient";
}

// mjdiffRolloutGrad.decay a: the sweep's products equal the recursion written out with the step
// and sensor Jacobians, the step's products acting on the scaled adjoint and what depends on x_t
// directly (the readings at x_t, the policy) not scaled:
//   lambda_T = dl/dx_T + C_T' dl/ds_T,  g_u_{T-1} gets D_T' dl/ds_T,  g_p = Q_T' dl/ds_T
//   a_x = A_t' (a lambda_{t+1}) + C_t' dl/ds_t, a_u = B_t' (a lambda_{t+1}) + D_t' dl/ds_t,
//   a_p = P_t' (a lambda_{t+1}) + Q_t' dl/ds_t,  g_u_t = a_u + dl/du_t,  a_x += pi_x' g_u_t,
//   g_p += a_p,  lambda_t = a_x + dl/dx_t
// on the arm with a feedback policy, state, control and sensor losses and two model parameters,
// storing every state and checkpointing every 4th (bit for bit the same)
TEST(Rollout, GradientDecayIsTheScaledAdjointRecursion) {
  Problem P(shim_modelPath("arm_box.xml"), 40, 50, 11);
  ASSERT_TRUE(P.ok) << P.sim.err;
  const mjModel* m = P.sim.m;
  mjData* d = P.sim.d;
  int T = P.T, nx = P.nx, ndx = P.ndx, nu = P.nu, ns = m->nsensordata, ntheta = ndx * nu + nu;
  ASSERT_GT(ns, 0);
  std::vector<mjtNum> theta(ntheta);
  unsigned long long seed = 5;
  for (auto& v : theta) v = 0.02 * (uniform(&seed) - 0.5);
  Linear lin = {&P};
  mjdiffPolicy policy = {ntheta, &lin, linearAct, linearVJP};
  char err[300];
  const char* names[] = {"body:box:mass", "geom:table:friction[0]"};
  mjdiffParams* par = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, P.sim.s, names, 2, &par, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(par);

  // one recording per checkpoint stride
  std::vector<mjtNum> states((size_t)(T + 1) * nx), u((size_t)T * nu);
  auto record = [&](int stride) {
    mjdiffRolloutOptions ro;
    mjdiff_defaultRolloutOptions(&ro);
    ro.checkpoint = stride;
    mjdiffRollout* r = nullptr;
    EXPECT_EQ(mjdiff_makeRollout(m, P.sim.s, par, T, &ro, &r, err, sizeof(err)), MJDIFF_OK)
        << err;
    P.setStart(d, nullptr);
    EXPECT_EQ(mjdiff_rolloutForward(m, d, P.sim.s, r, nullptr, &policy, theta.data(),
                                    states.data(), nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    return r;
  };
  mjdiffRollout* r1 = record(1);
  mjdiffRollout* r4 = record(4);
  ASSERT_NE(r1, nullptr);
  ASSERT_NE(r4, nullptr);
  for (int t = 0; t < T; t++) {
    mjdiff_setState(m, d, states.data() + (size_t)nx * t);
    linearAct(m, d, theta.data(), &lin, u.data() + (size_t)nu * t);
  }
  std::vector<mjtNum> dLdx((size_t)(T + 1) * ndx), dLdu(u.size());
  P.loss(states, u.data(), dLdx.data(), dLdu.data());
  // sensor losses on the readings with a derivative
  std::vector<mjtNum> dLds((size_t)T * ns, 0), dLdsT(ns, 0);
  std::vector<int> rowok(ns, 0);
  for (int i = 0; i < m->nsensor; i++) {
    if (!mjdiff_sensorSupported(m, i)) continue;
    for (int k = 0; k < m->sensor_dim[i]; k++) rowok[m->sensor_adr[i] + k] = 1;
  }
  for (int j = 0; j < ns; j++) {
    if (!rowok[j]) continue;
    for (int t = 0; t < T; t++) dLds[(size_t)ns * t + j] = uniform(&seed) - 0.5;
    dLdsT[j] = uniform(&seed) - 0.5;
  }

  struct Out {
    std::vector<mjtNum> th, x0, gu, gp;
  };
  auto sweep = [&](mjdiffRollout* r, double a, Out* o) {
    o->th.assign(ntheta, 0);
    o->x0.assign(ndx, 0);
    o->gu.assign(u.size(), 0);
    o->gp.assign(np, 0);
    mjdiffRolloutGrad g;
    mjdiff_defaultRolloutGrad(&g);
    g.dLdx = dLdx.data();
    g.dLdu = dLdu.data();
    g.dLds = dLds.data();
    g.dLds_T = dLdsT.data();
    g.grad_theta = o->th.data();
    g.grad_x0 = o->x0.data();
    g.grad_ctrl = o->gu.data();
    g.grad_param = o->gp.data();
    g.decay = a;
    return mjdiff_rolloutGradient(m, d, P.sim.s, r, &g, err, sizeof(err));
  };
  const double a = 0.6;
  Out dec, dec4, ex1, ex0, bad;
  ASSERT_EQ(sweep(r1, a, &dec), MJDIFF_OK) << err;
  ASSERT_EQ(sweep(r4, a, &dec4), MJDIFF_OK) << err;

  // the recursion with the step and sensor Jacobians
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, P.sim.s, par, &w, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> A((size_t)ndx * ndx), B((size_t)ndx * nu), Pm((size_t)ndx * np);
  std::vector<mjtNum> C((size_t)ns * ndx), D((size_t)ns * nu), Q((size_t)ns * np);
  std::vector<mjtNum> lam(ndx), ax(ndx), au(nu), uT(nu, 0), rth(ntheta, 0), rgu(u.size());
  std::vector<mjtNum> rgp(np, 0);
  // readings at x_T, controls held at u_{T-1}
  auto sensorsAt = [&](int t, const mjtNum* ctrl) {
    mjdiff_setState(m, d, states.data() + (size_t)nx * t);
    mju_copy(d->ctrl, ctrl, nu);
    return mjdiff_sensorJacobian(m, d, P.sim.s, w, C.data(), D.data(), Q.data(), err,
                                 sizeof(err));
  };
  // v += M' y over the rows with a derivative (M: ns x n)
  auto addRowsT = [&](const std::vector<mjtNum>& M, int n, const mjtNum* y, mjtNum* v) {
    for (int j = 0; j < ns; j++) {
      if (!rowok[j]) continue;
      for (int k = 0; k < n; k++) v[k] += M[(size_t)n * j + k] * y[j];
    }
  };
  ASSERT_EQ(sensorsAt(T, u.data() + (size_t)nu * (T - 1)), MJDIFF_OK) << err;
  for (int i = 0; i < ndx; i++) lam[i] = dLdx[(size_t)ndx * T + i];
  addRowsT(C, ndx, dLdsT.data(), lam.data());
  addRowsT(D, nu, dLdsT.data(), uT.data());
  addRowsT(Q, np, dLdsT.data(), rgp.data());
  for (int t = T - 1; t >= 0; t--) {
    mjdiff_setState(m, d, states.data() + (size_t)nx * t);
    mju_copy(d->ctrl, u.data() + (size_t)nu * t, nu);
    ASSERT_EQ(mjdiff_stepJacobian(m, d, P.sim.s, w, A.data(), B.data(), Pm.data(), err,
                                  sizeof(err)), MJDIFF_OK) << err;
    for (int j = 0; j < ndx; j++) {
      ax[j] = 0;
      for (int i = 0; i < ndx; i++) ax[j] += A[(size_t)ndx * i + j] * a * lam[i];
    }
    for (int k = 0; k < nu; k++) {
      au[k] = 0;
      for (int i = 0; i < ndx; i++) au[k] += B[(size_t)nu * i + k] * a * lam[i];
    }
    for (int k = 0; k < np; k++) {
      for (int i = 0; i < ndx; i++) rgp[k] += Pm[(size_t)np * i + k] * a * lam[i];
    }
    ASSERT_EQ(sensorsAt(t, u.data() + (size_t)nu * t), MJDIFF_OK) << err;
    const mjtNum* ls = dLds.data() + (size_t)ns * t;
    addRowsT(C, ndx, ls, ax.data());
    addRowsT(D, nu, ls, au.data());
    addRowsT(Q, np, ls, rgp.data());
    for (int k = 0; k < nu; k++) {
      rgu[(size_t)nu * t + k] = au[k] + dLdu[(size_t)nu * t + k] + (t == T - 1 ? uT[k] : 0);
    }
    mjdiff_setState(m, d, states.data() + (size_t)nx * t);
    linearVJP(m, d, theta.data(), &lin, rgu.data() + (size_t)nu * t, ax.data(), rth.data());
    for (int i = 0; i < ndx; i++) lam[i] = ax[i] + dLdx[(size_t)ndx * t + i];
  }
  mjdiff_freeStepDeriv(w);
  auto relErr = [](const std::vector<mjtNum>& x, const std::vector<mjtNum>& y) {
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); i++) {
      num += (x[i] - y[i]) * (x[i] - y[i]);
      den += y[i] * y[i];
    }
    return std::sqrt(num / (den > 0 ? den : 1));
  };
  EXPECT_LT(relErr(dec.th, rth), 1e-8) << "grad_theta";
  EXPECT_LT(relErr(dec.x0, lam), 1e-8) << "grad_x0";
  EXPECT_LT(relErr(dec.gu, rgu), 1e-8) << "grad_ctrl";
  EXPECT_LT(relErr(dec.gp, rgp), 1e-8) << "grad_param";
  EXPECT_EQ(dec.th, dec4.th) << "checkpointing";
  EXPECT_EQ(dec.x0, dec4.x0);
  EXPECT_EQ(dec.gu, dec4.gu);
  EXPECT_EQ(dec.gp, dec4.gp);

  // 1 and 0 are the exact sweep, bit for bit; the decayed gradient differs from it
  ASSERT_EQ(sweep(r1, 1, &ex1), MJDIFF_OK) << err;
  ASSERT_EQ(sweep(r1, 0, &ex0), MJDIFF_OK) << err;
  EXPECT_EQ(ex1.th, ex0.th);
  EXPECT_EQ(ex1.x0, ex0.x0);
  EXPECT_EQ(ex1.gu, ex0.gu);
  EXPECT_EQ(ex1.gp, ex0.gp);
  EXPECT_GT(relErr(dec.th, ex0.th), 1e-2) << "the decay changed nothing";
  EXPECT_GT(relErr(dec.x0, ex0.x0), 1e-2) << "the decay changed nothing";
  EXPECT_GT(relErr(dec.gp, ex0.gp), 1e-2) << "the decay changed nothing";

  // outside [0, 1]: refused, by value
  for (double v : {-0.1, 1.5, std::nan("")}) {
    EXPECT_EQ(sweep(r1, v, &bad), MJDIFF_ERR_ARGUMENT) << v;
    EXPECT_NE(std::strstr(err, "decay"), nullptr) << err;
  }
  mjdiff_freeRollout(r1);
  mjdiff_freeRollout(r4);
  mjdiff_freeParams(par);
}

// gradient of the rollout loss in model parameters and, optionally, a sensor loss
struct ParamRun {
  double L = 0;
  std::vector<mjtNum> gp, gx0, gu;
};

// loss = Problem's state/control loss + ws * sum_t |s_t - sref|^2 / 2 over the sensors in mask
double sensorLoss(const Problem& P, const std::vector<mjtNum>& sens, const std::vector<int>& mask,
                  const std::vector<mjtNum>& sref, double ws, mjtNum* dLds) {
  int ns = P.sim.m->nsensordata;
  double L = 0;
  for (int t = 0; t < P.T; t++) {
    for (int i = 0; i < ns; i++) {
      if (!mask[i]) continue;
      double e = sens[(size_t)ns * t + i] - sref[i];
      L += 0.5 * ws * e * e;
      if (dLds) dLds[(size_t)ns * t + i] = ws * e;
    }
  }
  return L;
}

ParamRun paramRollout(Problem& P, const mjdiffParams* params, bool gradient,
                      const std::vector<int>* mask, const std::vector<mjtNum>* sref) {
  const mjModel* m = P.sim.m;
  mjData* d = P.sim.d;
  int ns = m->nsensordata;
  ParamRun out;
  mjdiffRollout* r = nullptr;
  char err[500];
  EXPECT_EQ(mjdiff_makeRollout(m, P.sim.s, params, P.T, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK) << err;
  P.setStart(d, nullptr);
  std::vector<mjtNum> states((size_t)(P.T + 1) * P.nx), sens((size_t)P.T * (ns ? ns : 1));
  EXPECT_EQ(mjdiff_rolloutForward(m, d, P.sim.s, r, P.ctrl.data(), nullptr, nullptr,
                                  states.data(), sens.data(), err, sizeof(err)), MJDIFF_OK)
      << err;
  std::vector<mjtNum> dLdx((size_t)(P.T + 1) * P.ndx), dLdu((size_t)P.T * P.nu),
      dLds(sens.size(), 0);
  out.L = P.loss(states, P.ctrl.data(), dLdx.data(), dLdu.data());
  if (mask) out.L += sensorLoss(P, sens, *mask, *sref, 10, dLds.data());
  if (gradient) {
    int np = params ? mjdiff_paramCount(params) : 0;
    out.gp.assign(np, 0);
    out.gx0.assign(P.ndx, 0);
    out.gu.assign((size_t)P.T * P.nu, 0);
    EXPECT_EQ(mjdiff_rolloutBackward(m, d, P.sim.s, r, dLdx.data(), dLdu.data(),
                                     mask ? dLds.data() : nullptr, out.gx0.data(),
                                     out.gu.data(), nullptr, out.gp.data(), err, sizeof(err)),
              MJDIFF_OK) << err;
  }
  mjdiff_freeRollout(r);
  return out;
}

// every parameter's gradient against Richardson finite differences of whole rollouts
void checkParams(const char* model, int warm, const std::vector<const char*>& names,
                 bool withSensors) {
  Problem P(shim_modelPath(model), 200, warm, 7);
  ASSERT_TRUE(P.ok) << P.sim.err;
  mjModel* m = P.sim.m;
  char err[500];
  // a contact's friction is the larger of its geoms' values: break ties, where the friction
  // derivative is one-sided (params.h), so that centered differences are meaningful
  for (int g = 0; g < m->ngeom; g++) m->geom_friction[3 * g] *= 1 + 0.01 * g;
  mjdiffParams* params = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, P.sim.s, names.data(), (int)names.size(), &params, err,
                              sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(params);
  std::vector<mjtNum> p0(np);
  mjdiff_getParamValues(m, P.sim.s, params, p0.data());
  // write the values back once: per-geom smooth values become explicit (see params.h)
  ASSERT_EQ(mjdiff_setParamValues(m, P.sim.s, params, p0.data(), err, sizeof(err)), MJDIFF_OK);

  std::vector<int> mask;
  std::vector<mjtNum> sref;
  if (withSensors) {
    mask.assign(m->nsensordata, 0);
    sref.assign(m->nsensordata, 0);
    int nweighted = 0;
    for (int i = 0; i < m->nsensor; i++) {
      if (!mjdiff_sensorSupported(m, i)) continue;
      for (int k = 0; k < m->sensor_dim[i]; k++) {
        mask[m->sensor_adr[i] + k] = 1;
        nweighted++;
      }
    }
    EXPECT_GT(nweighted, 0);
    // reference: the readings of the start state, shifted
    ParamRun base = paramRollout(P, params, false, nullptr, nullptr);
    (void)base;
    for (int i = 0; i < m->nsensordata; i++) sref[i] = 0.1 * (i % 3);
  }
  ParamRun g = paramRollout(P, params, true, withSensors ? &mask : nullptr,
                            withSensors ? &sref : nullptr);
  // centered Richardson differences; one-sided (forward) at a lower bound of 0 (damping,
  // friction loss), where the analytic derivative is the one from above
  std::vector<double> fd(np);
  double fdmax = 0;
  for (int k = 0; k < np; k++) {
    double h = 1e-5 * std::fmax(1, std::fabs(p0[k]));
    auto at = [&](double dh) {
      std::vector<mjtNum> p(p0);
      p[k] += dh;
      EXPECT_EQ(mjdiff_setParamValues(m, P.sim.s, params, p.data(), err, sizeof(err)), MJDIFF_OK)
          << err;
      double L = paramRollout(P, params, false, withSensors ? &mask : nullptr,
                              withSensors ? &sref : nullptr).L;
      mjdiff_setParamValues(m, P.sim.s, params, p0.data(), err, sizeof(err));
      return L;
    };
    if (p0[k] == 0) {
      double L0 = at(0), g1 = (at(h) - L0) / h, g2 = (at(2 * h) - L0) / (2 * h);
      fd[k] = 2 * g1 - g2;
    } else {
      double g1 = (at(h) - at(-h)) / (2 * h), g2 = (at(2 * h) - at(-2 * h)) / (4 * h);
      fd[k] = (4 * g1 - g2) / 3;
    }
    fdmax = std::fmax(fdmax, std::fabs(fd[k]));
  }
  // relative error, with entries below 1e-3 of the largest compared absolutely (a parameter with
  // no effect, such as the mass of a link on a vertical axis, has a derivative at the level of the
  // differences' rounding error, L ulp / h)
  double worst = 0;
  std::string worstName;
  for (int k = 0; k < np; k++) {
    double rel = std::fabs(g.gp[k] - fd[k]) / std::fmax(std::fabs(fd[k]), 1e-3 * fdmax);
    if (rel > worst) {
      worst = rel;
      worstName = mjdiff_paramName(params, k);
    }
    EXPECT_LE(rel, 1e-5) << mjdiff_paramName(params, k) << ": analytic " << g.gp[k]
                         << " finite difference " << fd[k];
  }
  // the sensor loss also reaches the start state
  if (withSensors) {
    std::vector<mjtNum> dx(P.ndx);
    unsigned long long seed = 17;
    for (auto& v : dx) v = uniform(&seed) - 0.5;
    auto at = [&](double hh) {
      std::vector<mjtNum> x(dx);
      for (auto& v : x) v *= hh;
      // rollout from the perturbed start: shift x0 temporarily
      std::vector<mjtNum> x0 = P.x0;
      P.setStart(P.sim.d, x.data());
      mju_copy(P.x0.data(), P.sim.d->qpos, m->nq);
      mju_copy(P.x0.data() + m->nq, P.sim.d->qvel, m->nv);
      mju_copy(P.x0.data() + m->nq + m->nv, P.sim.d->act, m->na);
      double L = paramRollout(P, params, false, &mask, &sref).L;
      P.x0 = x0;
      return L;
    };
    double eps = 1e-6;
    double g1 = (at(eps) - at(-eps)) / (2 * eps), g2 = (at(2 * eps) - at(-2 * eps)) / (4 * eps);
    double fd = (4 * g1 - g2) / 3, an = mju_dot(g.gx0.data(), dx.data(), P.ndx);
    EXPECT_NEAR(an, fd, 1e-5 * std::fabs(fd)) << "sensor loss, start state";
  }
  std::cout << model << ": " << np << " parameters" << (withSensors ? " (sensor loss)" : "")
            << ", worst relative error " << worst << " (" << worstName << ")\n";
  mjdiff_freeParams(params);
}

const std::vector<const char*> kArmParams = {
  "body:link*:mass", "body:box:mass", "body:box:inertia", "body:link3:ipos",
  "joint:joint*:damping", "joint:joint1:armature", "geom:table:friction",
  "geom:fingertip:friction", "mjdiff:contact_stiffness", "mjdiff:contact_damping",
  "actuator:*:gear", "option:gravity",
};

TEST(Rollout, ArmParameterGradients) {
  checkParams("arm_box.xml", 100, kArmParams, false);
}

TEST(Rollout, HopperParameterGradients) {
  checkParams("hopper.xml", 0,
              {"body:*:mass", "joint:*:damping", "geom:*:friction", "mjdiff:contact_stiffness",
               "mjdiff:contact_damping", "mjdiff:limit_stiffness", "actuator:*:gear",
               "option:gravity"},
              false);
}

TEST(Rollout, ArmSensorLossGradients) {
  checkParams("arm_box.xml", 100, {"body:box:mass", "geom:table:friction", "joint:joint2:damping"},
              true);
}

TEST(Rollout, Errors) {
  Problem P(shim_modelPath("cartpole.xml"), 10, 0, 1);
  ASSERT_TRUE(P.ok);
  char err[300] = "";
  mjdiffRollout* r = nullptr;
  EXPECT_EQ(mjdiff_makeRollout(P.sim.m, P.sim.s, nullptr, 0, nullptr, &r, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("horizon"), std::string::npos) << err;
  ASSERT_EQ(mjdiff_makeRollout(P.sim.m, P.sim.s, nullptr, 10, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK);
  // backward before forward
  EXPECT_EQ(mjdiff_rolloutBackward(P.sim.m, P.sim.d, P.sim.s, r, nullptr, nullptr, nullptr,
                                   nullptr, nullptr, nullptr, nullptr, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("forward"), std::string::npos) << err;
  // a NaN start state names the step and array
  P.setStart(P.sim.d, nullptr);
  P.sim.d->qvel[0] = NAN;
  EXPECT_EQ(mjdiff_rolloutForward(P.sim.m, P.sim.d, P.sim.s, r, P.ctrl.data(), nullptr, nullptr,
                                  nullptr, nullptr, err, sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::string(err).find("step 0"), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("qvel"), std::string::npos) << err;
  mjdiff_freeRollout(r);
  mjdiff_freeRollout(nullptr);
}

}  // namespace
