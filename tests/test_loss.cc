// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Loss terms (<mjdiff/loss.h>) and mjdiffRolloutGrad (<mjdiff/rollout.h>):
// - each term's gradient at single states against centered, Richardson-extrapolated differences
//   of its value along random tangents (position of a body and a site, a state cost with the free
//   box's rotation, a velocity sensor through the sensor VJP, a control cost), 10 states each;
// - the first program: the box's final x (and y) position's gradient in every control,
//   the box mass and the table friction (three components, each tied with the box corners' and
//   the fingertip's values: half the one-sided derivative from above, none from below) against
//   finite differences of whole rollouts; a sensor at x_T (the box's velocity);
// - the sparse paths against the dense one: dLdx_T against a dense dLdx with one row (bit for
//   bit), terms against mjdiff_trajectoryLoss's dense gradients, a step callback called at its
//   active steps only;
// - the second program: gradient descent with a backtracking line search on the controls pushes
//   the box further;
// - the hard cases of the sweep: RK4 (acrobot) and a free torso in contact (quadruped) with sqrt(T)
//   checkpoints, state, control and position terms against differences of whole rollouts;
// - names: mjdiff_paramIndex, mjdiff_paramNameCount, the geom:G:field spelling in setParam;
//   argument structs equal to the positional calls (bit for bit); errors name the term.
// Tolerances: whole-rollout differences at eps 1e-6 carry ~1e-9 relative rounding and
// truncation near contact switches; 1e-5 relative to max(|fd|, 1e-3 |g|) is the rollout tests'
// bound.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mjdiff/mjdiff.h>

#include "shim.h"
#include "testutil.h"

namespace {

using testutil::uniform;

// arm_box from keyframe "ready" after 450 steps of joint 1's motor at -0.1 (the fingertip then
// pushes the box along -y), then smooth controls around that for T steps
struct Arm : testutil::Sim {
  int T, nx, ndx, nu, ns;
  std::vector<mjtNum> x0, ctrl;
  explicit Arm(int horizon) : testutil::Sim(nullptr, shim_modelPath("arm_box.xml")), T(horizon) {
    if (!ok) return;
    const mjModel* m = sim.m;
    if (m->nkey) mj_resetDataKeyframe(m, sim.d, 0);
    char err[300];
    sim.d->ctrl[0] = -0.1;
    for (int i = 0; i < 450; i++) mjdiff_step(m, sim.d, sim.s, err, sizeof(err));
    nx = mjdiff_stateSize(m);
    ndx = mjdiff_tangentSize(m);
    nu = m->nu;
    ns = m->nsensordata;
    x0.resize(nx);
    mjdiff_getState(m, sim.d, x0.data());
    ctrl.resize((size_t)T * nu);
    unsigned long long seed = 7;
    for (int i = 0; i < nu; i++) {
      double phase = 6.28 * uniform(&seed);
      for (int t = 0; t < T; t++) {
        ctrl[(size_t)t * nu + i] = (i == 0 ? -0.1 : 0) + 0.05 * std::sin(0.05 * t + phase);
      }
    }
  }
  // steps of a rollout from x0 with ctrl in which the fingertip touches the box
  int boxContacts() {
    start();
    int n = 0, tip = mj_name2id(sim.m, mjOBJ_GEOM, "fingertip");
    int box = mj_name2id(sim.m, mjOBJ_GEOM, "box");
    char err[300];
    for (int t = 0; t < T; t++) {
      mju_copy(sim.d->ctrl, ctrl.data() + (size_t)nu * t, nu);
      mjdiff_step(sim.m, sim.d, sim.s, err, sizeof(err));
      for (int i = 0; i < sim.d->ncon; i++) {
        const mjContact* c = sim.d->contact + i;
        if ((c->geom1 == tip && c->geom2 == box) || (c->geom1 == box && c->geom2 == tip)) {
          if (c->dist < 0.001) {  // within the contact width: a force
            n++;
            break;
          }
        }
      }
    }
    return n;
  }
  void start() {
    mj_resetData(sim.m, sim.d);
    mjdiff_setState(sim.m, sim.d, x0.data());
  }
  // loss of the terms over a rollout from x0 (+) dx with controls u (forward + trajectoryLoss)
  double rolloutLoss(const mjdiffTerms* terms, const mjtNum* dx, const mjtNum* u) {
    start();
    if (dx) {
      std::vector<mjtNum> x(nx);
      mjdiff_stateIntegrate(sim.m, x0.data(), dx, 1, x.data());
      mjdiff_setState(sim.m, sim.d, x.data());
    }
    std::vector<mjtNum> states((size_t)(T + 1) * nx);
    char err[300];
    mjdiffRollout* r = nullptr;
    EXPECT_EQ(mjdiff_makeRollout(sim.m, sim.s, nullptr, T, nullptr, &r, err, sizeof(err)),
              MJDIFF_OK) << err;
    EXPECT_EQ(mjdiff_rolloutForward(sim.m, sim.d, sim.s, r, u, nullptr, nullptr, states.data(),
                                    nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    mjdiff_freeRollout(r);
    mjtNum L = NAN;
    mj_resetData(sim.m, sim.d);
    EXPECT_EQ(mjdiff_trajectoryLoss(sim.m, sim.d, sim.s, terms, T, states.data(), u, &L, nullptr,
                                    nullptr, nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    return L;
  }
};

double richardsonFD(const std::function<double(double)>& at, double eps) {
  double g1 = (at(eps) - at(-eps)) / (2 * eps), g2 = (at(2 * eps) - at(-2 * eps)) / (4 * eps);
  return testutil::richardson(g1, g2);
}

mjdiffTerms* makeTerms(const mjModel* m, const std::vector<mjdiffTerm>& t) {
  mjdiffTerms* terms = nullptr;
  char err[300] = "";
  EXPECT_EQ(mjdiff_makeTerms(m, t.data(), (int)t.size(), &terms, err, sizeof(err)), MJDIFF_OK)
      << err;
  return terms;
}

// every term type at single states against differences of its value along random tangents
TEST(Loss, TermGradientsAtStates) {
  Arm A(1);
  ASSERT_TRUE(A.ok) << A.sim.err;
  const mjModel* m = A.sim.m;
  mjData* d = A.sim.d;
  std::vector<mjtNum> target(3, 0.3), xref(A.x0), scale(A.ndx, 1), vtarget = {0.01, -0.02, 0};
  for (int i = 0; i < A.nx; i++) xref[i] += 0.05 * std::sin(3.0 * i);  // a rotated box too
  mju_normalize4(xref.data() + m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "box_free")] + 3);
  for (int i = 0; i < A.ndx; i++) scale[i] = 0.5 + 0.1 * (i % 7);  // anisotropic on rotations
  std::vector<mjdiffTerm> t(5);
  for (auto& x : t) mjdiff_defaultTerm(&x);
  t[0].object = "body:box";
  t[0].target = target.data();
  t[1].object = "site:ee";
  t[1].norm = MJDIFF_NORM_SMOOTHABS;
  t[1].norm_param = 0.05;
  t[1].weight = 3;
  t[2].type = MJDIFF_TERM_STATE;
  t[2].target = xref.data();
  t[2].scale = scale.data();
  t[3].type = MJDIFF_TERM_SENSOR;
  t[3].object = "sensor:box_vel";
  t[3].target = vtarget.data();
  t[4].type = MJDIFF_TERM_CONTROL;
  t[4].weight = 0.1;
  t[4].norm = MJDIFF_NORM_LINEAR;
  char err[300];
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, A.sim.s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  unsigned long long seed = 21;
  for (size_t k = 0; k < t.size(); k++) {
    mjdiffTerms* terms = makeTerms(m, {t[k]});
    ASSERT_NE(terms, nullptr);
    double worst = 0, gnorm = 0;
    for (int trial = 0; trial < 10; trial++) {
      // a state along the rollout, velocities perturbed
      A.start();
      for (int i = 0; i < 10 * trial; i++) mjdiff_step(m, d, A.sim.s, err, sizeof(err));
      testutil::perturbVelocities(m, d, &seed, 0.2, 0.2);
      std::vector<mjtNum> x(A.nx), y(A.nx), u(A.nu), dx(A.ndx), du(A.nu);
      mjdiff_getState(m, d, x.data());
      for (int i = 0; i < A.nu; i++) u[i] = 0.5 * (uniform(&seed) - 0.5);
      for (auto& v : dx) v = uniform(&seed) - 0.5;
      for (auto& v : du) v = uniform(&seed) - 0.5;
      mju_copy(d->ctrl, u.data(), A.nu);
      std::vector<mjtNum> gx(A.ndx, 0), gu(A.nu, 0), gs(A.ns, 0);
      ASSERT_EQ(mjdiff_forward(m, d, A.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
      mjdiff_evalTerms(m, d, terms, 0, 1, gx.data(), gu.data(), gs.data());
      // sensor gradients to the state and controls
      ASSERT_EQ(mjdiff_sensorVJP(m, d, A.sim.s, w, gs.data(), gx.data(), gu.data(), nullptr, err,
                                 sizeof(err)), MJDIFF_OK) << err;
      double an = mju_dot(gx.data(), dx.data(), A.ndx) + mju_dot(gu.data(), du.data(), A.nu);
      auto at = [&](double h) {
        mjdiff_stateIntegrate(m, x.data(), dx.data(), h, y.data());
        mjdiff_setState(m, d, y.data());
        for (int i = 0; i < A.nu; i++) d->ctrl[i] = u[i] + h * du[i];
        mjdiff_forward(m, d, A.sim.s, err, sizeof(err));
        return mjdiff_evalTerms(m, d, terms, 0, 1, nullptr, nullptr, nullptr);
      };
      double fd = richardsonFD(at, 1e-6);
      double rel = std::fabs(an - fd) / std::fmax(std::fabs(fd), 1e-8);
      worst = std::fmax(worst, rel);
      gnorm = std::fmax(gnorm, std::fabs(fd));
      EXPECT_LE(rel, 1e-6) << "term " << k << " trial " << trial << ": " << an << " vs " << fd;
    }
    EXPECT_GT(gnorm, 1e-3) << "term " << k << ": the directional derivatives should not vanish";
    std::cout << "term " << k << ": worst relative error " << worst << "\n";
    mjdiff_freeTerms(terms);
  }
  mjdiff_freeStepDeriv(w);
}

// the program 1: d x_box(T) / d (every control, box mass, table friction)
TEST(Loss, FinalBoxPositionGradient) {
  Arm A(120);
  ASSERT_TRUE(A.ok) << A.sim.err;
  const mjModel* m = A.sim.m;
  mjModel* mm = A.sim.m;
  const char* names[] = {"body:box:mass", "geom:table:friction"};
  mjdiffParams* p = nullptr;
  char err[300];
  ASSERT_EQ(mjdiff_makeParams(m, A.sim.s, names, 2, &p, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_paramCount(p), 4);
  EXPECT_EQ(mjdiff_paramIndex(p, "geom:table:friction"), 1);
  EXPECT_EQ(mjdiff_paramNameCount(p, "geom:table:friction"), 3);
  EXPECT_EQ(mjdiff_paramIndex(p, "geom:table:friction[2]"), 3);
  EXPECT_EQ(mjdiff_paramNameCount(p, "geom:table:friction[2]"), 1);
  EXPECT_EQ(mjdiff_paramIndex(p, "body:box:mass"), 0);
  EXPECT_EQ(mjdiff_paramIndex(p, "body:box"), -1);
  EXPECT_EQ(mjdiff_paramNameCount(p, "geom:floor:friction"), 0);
  int np = mjdiff_paramCount(p);
  int ntouch = A.boxContacts();
  EXPECT_GT(ntouch, A.T / 2) << "the fingertip should push the box for most of the rollout";

  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, A.sim.s, p, A.T, nullptr, &r, err, sizeof(err)), MJDIFF_OK);
  int nx, ndx, nu, ns, npr;
  EXPECT_EQ(mjdiff_rolloutSizes(r, &nx, &ndx, &nu, &ns, &npr), A.T);
  EXPECT_EQ(mjdiff_rolloutHorizon(r), A.T);
  EXPECT_EQ(nx, A.nx);
  EXPECT_EQ(ndx, A.ndx);
  EXPECT_EQ(npr, np);
  EXPECT_EQ(ns, A.ns);

  for (int comp = 0; comp < 2; comp++) {
    std::vector<mjtNum> sel(3, 0);
    sel[comp] = 1;
    mjdiffTerm term;
    mjdiff_defaultTerm(&term);
    term.object = "body:box";
    term.norm = MJDIFF_NORM_LINEAR;
    term.scale = sel.data();
    int last = -1;
    term.steps = &last;
    term.nstep = 1;
    mjdiffTerms* terms = makeTerms(m, {term});
    A.start();
    ASSERT_EQ(mjdiff_rolloutForward(m, A.sim.d, A.sim.s, r, A.ctrl.data(), nullptr, nullptr,
                                    nullptr, nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_forward(m, A.sim.d, A.sim.s, err, sizeof(err)), MJDIFF_OK);  // at x_T
    double xT = A.sim.d->xpos[3 * mj_name2id(m, mjOBJ_BODY, "box") + comp];
    std::vector<mjtNum> gx0(A.ndx), gu((size_t)A.T * A.nu), gp(np);
    mjtNum L = NAN;
    mjdiffRolloutGrad g;
    mjdiff_defaultRolloutGrad(&g);
    g.terms = terms;
    g.loss = &L;
    g.grad_x0 = gx0.data();
    g.grad_ctrl = gu.data();
    g.grad_param = gp.data();
    ASSERT_EQ(mjdiff_rolloutGradient(m, A.sim.d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK)
        << err;
    EXPECT_NEAR(L, xT, 1e-12) << "the loss value is the box's final coordinate";

    // controls and start state along random directions
    unsigned long long seed = 31 + comp;
    double worst = 0;
    for (int trial = 0; trial < 4; trial++) {
      std::vector<mjtNum> dx(A.ndx, 0), du(A.ctrl.size(), 0);
      for (auto& v : (trial < 2 ? du : dx)) v = uniform(&seed) - 0.5;
      double an = mju_dot(gx0.data(), dx.data(), A.ndx) +
                  mju_dot(gu.data(), du.data(), (int)du.size());
      auto at = [&](double h) {
        std::vector<mjtNum> x(dx), u(A.ctrl);
        for (auto& v : x) v *= h;
        for (size_t k = 0; k < u.size(); k++) u[k] += h * du[k];
        return A.rolloutLoss(terms, x.data(), u.data());
      };
      double fd = richardsonFD(at, 1e-6);
      double rel = std::fabs(an - fd) / std::fmax(std::fabs(fd), 1e-8);
      worst = std::fmax(worst, rel);
      EXPECT_LE(rel, 1e-5) << "component " << comp << " trial " << trial << ": " << an << " vs "
                           << fd;
    }
    // box mass and the three table friction components
    std::vector<mjtNum> v0(np);
    mjdiff_getParamValues(m, A.sim.s, p, v0.data());
    double gmax = 0;
    for (int k = 0; k < np; k++) gmax = std::fmax(gmax, std::fabs(gp[k]));
    EXPECT_GT(gmax, 1e-4) << "the box's position should depend on its mass or the friction";
    for (int k = 0; k < np; k++) {
      auto at = [&](double h) {
        std::vector<mjtNum> v(v0);
        v[k] += h;
        EXPECT_EQ(mjdiff_setParamValues(mm, A.sim.s, p, v.data(), err, sizeof(err)), MJDIFF_OK);
        double val = A.rolloutLoss(terms, nullptr, A.ctrl.data());
        mjdiff_setParamValues(mm, A.sim.s, p, v0.data(), err, sizeof(err));
        return val;
      };
      double fd;
      if (k == 0) {
        fd = richardsonFD(at, 1e-6);
      } else {
        // the table's friction ties with the box corners' and the fingertip's (0.6, 0.005,
        // 0.0001 each): MuJoCo uses the maximum, so from below nothing changes, and the
        // derivative is half the one-sided one from above (forward differences, extrapolated)
        double h = 1e-6, f0 = at(0);
        EXPECT_EQ(at(-h), f0) << mjdiff_paramName(p, k)
                              << ": below the tie the partner's value is used";
        double g1 = (at(h) - f0) / h, g2 = (at(2 * h) - f0) / (2 * h);
        fd = 0.5 * (2 * g1 - g2);
      }
      double rel = std::fabs(gp[k] - fd) / std::fmax(std::fabs(fd), 1e-3 * gmax);
      worst = std::fmax(worst, rel);
      EXPECT_LE(rel, 1e-5) << mjdiff_paramName(p, k) << ": " << gp[k] << " vs " << fd;
    }
    std::cout << "box final " << "xyz"[comp] << " (" << ntouch << " of " << A.T
              << " steps pushed)" << " = " << xT << ": d/d mass " << gp[0]
              << ", d/d table friction " << gp[1] << " " << gp[2] << " " << gp[3]
              << "; worst relative error " << worst << "\n";
    mjdiff_freeTerms(terms);
  }
  mjdiff_freeRollout(r);
  mjdiff_freeParams(p);
}

// a sensor at x_T (the box's velocity, a framelinvel) through dLds_T and through a term
TEST(Loss, SensorAtFinalState) {
  Arm A(60);
  ASSERT_TRUE(A.ok) << A.sim.err;
  const mjModel* m = A.sim.m;
  char err[300];
  int sid = mj_name2id(m, mjOBJ_SENSOR, "box_vel"), adr = m->sensor_adr[sid];
  std::vector<mjtNum> wts = {1.0, -2.0, 0.5};
  mjdiffTerm term;
  mjdiff_defaultTerm(&term);
  term.type = MJDIFF_TERM_SENSOR;
  term.object = "box_vel";
  term.norm = MJDIFF_NORM_LINEAR;
  term.scale = wts.data();
  int last = -1;
  term.steps = &last;
  term.nstep = 1;
  mjdiffTerms* terms = makeTerms(m, {term});
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, A.sim.s, nullptr, A.T, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK);
  A.start();
  ASSERT_EQ(mjdiff_rolloutForward(m, A.sim.d, A.sim.s, r, A.ctrl.data(), nullptr, nullptr,
                                  nullptr, nullptr, err, sizeof(err)), MJDIFF_OK);
  std::vector<mjtNum> gx0a(A.ndx), gua((size_t)A.T * A.nu), gx0b(A.ndx), gub(gua.size());
  std::vector<mjtNum> dLdsT(A.ns, 0);
  for (int k = 0; k < 3; k++) dLdsT[adr + k] = wts[k];
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.dLds_T = dLdsT.data();
  g.grad_x0 = gx0a.data();
  g.grad_ctrl = gua.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, A.sim.d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK)
      << err;
  mjdiff_defaultRolloutGrad(&g);
  g.terms = terms;
  g.grad_x0 = gx0b.data();
  g.grad_ctrl = gub.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, A.sim.d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK)
      << err;
  EXPECT_EQ(gx0a, gx0b) << "dLds_T and a sensor term at x_T are one computation";
  EXPECT_EQ(gua, gub);
  unsigned long long seed = 41;
  double worst = 0;
  for (int trial = 0; trial < 4; trial++) {
    std::vector<mjtNum> dx(A.ndx, 0), du(A.ctrl.size(), 0);
    for (auto& v : (trial < 2 ? du : dx)) v = uniform(&seed) - 0.5;
    if (trial == 1) {  // only the last control: the x_T reading's control path
      std::fill(du.begin(), du.end(), 0);
      for (int i = 0; i < A.nu; i++) du[(size_t)(A.T - 1) * A.nu + i] = uniform(&seed) - 0.5;
    }
    double an = mju_dot(gx0a.data(), dx.data(), A.ndx) +
                mju_dot(gua.data(), du.data(), (int)du.size());
    auto at = [&](double h) {
      std::vector<mjtNum> x(dx), u(A.ctrl);
      for (auto& v : x) v *= h;
      for (size_t k = 0; k < u.size(); k++) u[k] += h * du[k];
      return A.rolloutLoss(terms, x.data(), u.data());
    };
    double fd = richardsonFD(at, 1e-6);
    double rel = std::fabs(an - fd) / std::fmax(std::fabs(fd), 1e-8);
    worst = std::fmax(worst, rel);
    EXPECT_LE(rel, 1e-5) << "trial " << trial << ": " << an << " vs " << fd;
  }
  std::cout << "sensor box_vel at x_T: worst relative error " << worst << "\n";
  mjdiff_freeTerms(terms);
  mjdiff_freeRollout(r);
}

struct CallbackLoss {
  int calls = 0;
  int bodyId = 0;
};

// l_t = xpos_box . (1, 2, 3) at steps 10 and T; a hand-written term for the callback
mjtNum callbackEval(const mjModel* m, const mjData* d, int, int, void* user, mjtNum* dldx,
                    mjtNum*, mjtNum*) {
  CallbackLoss* c = static_cast<CallbackLoss*>(user);
  c->calls++;
  const mjtNum* p = d->xpos + 3 * c->bodyId;
  std::vector<mjtNum> jac(3 * m->nv);
  mj_jac(m, d, jac.data(), nullptr, p, c->bodyId);
  const mjtNum wv[3] = {1, 2, 3};
  for (int j = 0; j < m->nv; j++) {
    for (int k = 0; k < 3; k++) dldx[j] += wv[k] * jac[(size_t)k * m->nv + j];
  }
  return wv[0] * p[0] + wv[1] * p[1] + wv[2] * p[2];
}

int callbackActive(int t, int T, void*) {
  return t == 10 || t == T;
}

// the sparse paths against the dense one
TEST(Loss, SparseInputsMatchDense) {
  Arm A(50);
  ASSERT_TRUE(A.ok) << A.sim.err;
  const mjModel* m = A.sim.m;
  mjData* d = A.sim.d;
  char err[300];
  mjdiffRollout* r = nullptr;
  mjdiffRolloutOptions opt;
  mjdiff_defaultRolloutOptions(&opt);
  opt.checkpoint = 0;  // sqrt(T) checkpoints: x_T is recomputed
  ASSERT_EQ(mjdiff_makeRollout(m, A.sim.s, nullptr, A.T, &opt, &r, err, sizeof(err)), MJDIFF_OK);
  std::vector<mjtNum> states((size_t)(A.T + 1) * A.nx);
  A.start();
  ASSERT_EQ(mjdiff_rolloutForward(m, d, A.sim.s, r, A.ctrl.data(), nullptr, nullptr,
                                  states.data(), nullptr, err, sizeof(err)), MJDIFF_OK);

  // terminal: dLdx_T against a dense array with one nonzero row
  std::vector<mjtNum> row(A.ndx), dense((size_t)(A.T + 1) * A.ndx, 0);
  unsigned long long seed = 5;
  for (auto& v : row) v = uniform(&seed) - 0.5;
  mju_copy(dense.data() + (size_t)A.T * A.ndx, row.data(), A.ndx);
  std::vector<mjtNum> g1(A.ndx), g2(A.ndx), u1((size_t)A.T * A.nu), u2(u1.size());
  ASSERT_EQ(mjdiff_rolloutBackward(m, d, A.sim.s, r, dense.data(), nullptr, nullptr, g1.data(),
                                   u1.data(), nullptr, nullptr, err, sizeof(err)), MJDIFF_OK);
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.dLdx_T = row.data();
  g.grad_x0 = g2.data();
  g.grad_ctrl = u2.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(g1, g2);
  EXPECT_EQ(u1, u2);

  // terms of every kind at a few steps against mjdiff_trajectoryLoss's dense gradients
  std::vector<mjtNum> tgt = {0.5, 0.0, 0.45}, wsens = {1, 1, 1};
  std::vector<mjdiffTerm> t(4);
  for (auto& x : t) mjdiff_defaultTerm(&x);
  int steps0[] = {0, 25, -1}, steps1[] = {-1}, steps3[] = {3, 49};
  t[0].object = "site:ee";
  t[0].target = tgt.data();
  t[0].steps = steps0;
  t[0].nstep = 3;
  t[1].type = MJDIFF_TERM_STATE;
  t[1].steps = steps1;
  t[1].nstep = 1;
  t[1].weight = 0.1;
  t[2].type = MJDIFF_TERM_CONTROL;
  t[2].weight = 1e-3;
  t[3].type = MJDIFF_TERM_SENSOR;
  t[3].object = "ee_pos";
  t[3].steps = steps3;
  t[3].nstep = 2;
  t[3].norm = MJDIFF_NORM_SMOOTHABS;
  mjdiffTerms* terms = makeTerms(m, t);
  EXPECT_TRUE(mjdiff_termsActive(terms, 7, A.T));  // the control term: every step
  std::vector<mjtNum> dLdx((size_t)(A.T + 1) * A.ndx, 0), dLdu((size_t)A.T * A.nu, 0);
  std::vector<mjtNum> dLds((size_t)(A.T + 1) * A.ns, 0);
  mjtNum Ld = NAN, Ls = NAN;
  ASSERT_EQ(mjdiff_trajectoryLoss(m, d, A.sim.s, terms, A.T, states.data(), A.ctrl.data(), &Ld,
                                  dLdx.data(), dLdu.data(), dLds.data(), err, sizeof(err)),
            MJDIFF_OK) << err;
  mjdiff_defaultRolloutGrad(&g);
  g.dLdx = dLdx.data();
  g.dLdu = dLdu.data();
  g.dLds = dLds.data();
  g.dLds_T = dLds.data() + (size_t)A.T * A.ns;
  g.grad_x0 = g1.data();
  g.grad_ctrl = u1.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiff_defaultRolloutGrad(&g);
  g.terms = terms;
  g.loss = &Ls;
  g.grad_x0 = g2.data();
  g.grad_ctrl = u2.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_NEAR(Ld, Ls, 1e-12 * std::fabs(Ld));
  EXPECT_GT(std::fabs(Ld), 1e-3);
  EXPECT_LE(testutil::relError(g2, g1, 1e-12), 1e-10);
  EXPECT_LE(testutil::relError(u2, u1, 1e-12), 1e-10);
  EXPECT_GT(mju_norm(g1.data(), A.ndx), 1e-3);

  // a step callback runs at its active steps only and equals the same loss written densely
  CallbackLoss cl;
  cl.bodyId = mj_name2id(m, mjOBJ_BODY, "box");
  mjdiffStepLoss sl = {&cl, callbackEval, callbackActive};
  mjdiff_defaultRolloutGrad(&g);
  g.step_loss = &sl;
  g.loss = &Ls;
  g.grad_x0 = g2.data();
  g.grad_ctrl = u2.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(cl.calls, 2);
  std::vector<mjtNum> w3 = {1, 2, 3};
  mjdiffTerm pt;
  mjdiff_defaultTerm(&pt);
  pt.object = "body:box";
  pt.norm = MJDIFF_NORM_LINEAR;
  pt.scale = w3.data();
  int st2[] = {10, -1};
  pt.steps = st2;
  pt.nstep = 2;
  mjdiffTerms* pterms = makeTerms(m, {pt});
  mjtNum Lp = NAN;
  mjdiff_defaultRolloutGrad(&g);
  g.terms = pterms;
  g.loss = &Lp;
  g.grad_x0 = g1.data();
  g.grad_ctrl = u1.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_NEAR(Ls, Lp, 1e-12);
  EXPECT_LE(testutil::relError(g2, g1, 1e-12), 1e-12);
  EXPECT_LE(testutil::relError(u2, u1, 1e-12), 1e-12);
  mjdiff_freeTerms(pterms);
  mjdiff_freeTerms(terms);
  mjdiff_freeRollout(r);
}

// the program 2: gradient descent with a backtracking line search pushes the box further
TEST(Loss, DescentPushesTheBoxFurther) {
  Arm A(150);
  ASSERT_TRUE(A.ok) << A.sim.err;
  const mjModel* m = A.sim.m;
  mjData* d = A.sim.d;
  char err[300];
  std::vector<mjtNum> minusx = {0, 1, 0};  // minimise the box's final y: push it further
  std::vector<mjdiffTerm> t(2);
  mjdiff_defaultTerm(&t[0]);
  mjdiff_defaultTerm(&t[1]);
  int last = -1;
  t[0].object = "body:box";
  t[0].norm = MJDIFF_NORM_LINEAR;
  t[0].scale = minusx.data();
  t[0].steps = &last;
  t[0].nstep = 1;
  t[1].type = MJDIFF_TERM_CONTROL;
  t[1].weight = 1e-4;
  mjdiffTerms* terms = makeTerms(m, t);
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, A.sim.s, nullptr, A.T, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK);
  std::vector<mjtNum> u(A.ctrl), gu(u.size()), trial(u.size());
  auto clip = [&](std::vector<mjtNum>& v) {
    for (int t2 = 0; t2 < A.T; t2++) {
      for (int i = 0; i < A.nu; i++) {
        double lo, hi;
        testutil::ctrlRange(m, i, &lo, &hi);
        mjtNum& x = v[(size_t)t2 * A.nu + i];
        x = std::fmin(std::fmax(x, lo), hi);
      }
    }
  };
  double L0 = A.rolloutLoss(terms, nullptr, u.data()), L = L0, step = 1.0;
  int accepted = 0;
  for (int it = 0; it < 10; it++) {
    A.start();
    ASSERT_EQ(mjdiff_rolloutForward(m, d, A.sim.s, r, u.data(), nullptr, nullptr, nullptr,
                                    nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    mjtNum Lg = NAN;
    mjdiffRolloutGrad g;
    mjdiff_defaultRolloutGrad(&g);
    g.terms = terms;
    g.loss = &Lg;
    g.grad_ctrl = gu.data();
    ASSERT_EQ(mjdiff_rolloutGradient(m, d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_NEAR(Lg, L, 1e-12);
    // backtracking (Armijo) on the clipped step
    double g2 = mju_dot(gu.data(), gu.data(), (int)gu.size());
    bool ok = false;
    for (int ls = 0; ls < 20 && !ok; ls++, step *= 0.5) {
      for (size_t k = 0; k < u.size(); k++) trial[k] = u[k] - step * gu[k];
      clip(trial);
      double Lt = A.rolloutLoss(terms, nullptr, trial.data());
      if (Lt < L - 1e-4 * step * g2) {
        u = trial;
        L = Lt;
        ok = true;
        accepted++;
      }
    }
    step *= 4;  // try a longer step next time
  }
  EXPECT_GE(accepted, 5);
  EXPECT_LT(L, L0 - 1e-2) << "descent should push the box at least 1 cm further";
  std::cout << "descent: loss " << L0 << " -> " << L << " (" << accepted
            << " accepted steps)\n";
  mjdiff_freeTerms(terms);
  mjdiff_freeRollout(r);
}

// the hard cases of the sweep: RK4 (acrobot), sqrt(T) checkpoints, a free-joint state cost and
// the quadruped's torso, terms every step and at chosen steps
void checkTermsRollout(const char* model, int T, int warm, double eps_x) {
  testutil::Sim S(nullptr, shim_modelPath(model));
  ASSERT_TRUE(S.ok) << S.sim.err;
  const mjModel* m = S.sim.m;
  mjData* d = S.sim.d;
  char err[300];
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  for (int i = 0; i < warm; i++) mjdiff_step(m, d, S.sim.s, err, sizeof(err));
  int nx = mjdiff_stateSize(m), ndx = mjdiff_tangentSize(m), nu = m->nu;
  std::vector<mjtNum> x0(nx), xref(nx), ctrl((size_t)T * nu);
  mjdiff_getState(m, d, x0.data());
  unsigned long long seed = 77;
  std::vector<mjtNum> dref(ndx);
  for (auto& v : dref) v = 0.3 * (uniform(&seed) - 0.5);
  mjdiff_stateIntegrate(m, x0.data(), dref.data(), 1, xref.data());  // rotated free joints too
  for (int i = 0; i < nu; i++) {
    double lo, hi, phase = 6.28 * uniform(&seed);
    testutil::ctrlRange(m, i, &lo, &hi);
    for (int t = 0; t < T; t++) {
      ctrl[(size_t)t * nu + i] = lo + (hi - lo) * (0.5 + 0.3 * std::sin(0.07 * t + phase));
    }
  }
  std::vector<mjtNum> ptarget = {0.1, 0.2, 1.0};
  std::vector<mjdiffTerm> t(3);
  for (auto& x : t) mjdiff_defaultTerm(&x);
  int some[] = {T / 3, -1};
  t[0].type = MJDIFF_TERM_STATE;
  t[0].target = xref.data();
  t[1].type = MJDIFF_TERM_CONTROL;
  t[1].weight = 1e-2;
  t[2].object = !strcmp(model, "quadruped.xml") ? "body:torso" : "body:lower_link";
  t[2].target = ptarget.data();
  t[2].norm = MJDIFF_NORM_SMOOTHABS;
  t[2].steps = some;
  t[2].nstep = 2;
  mjdiffTerms* terms = makeTerms(m, t);
  ASSERT_NE(terms, nullptr);
  mjdiffRolloutOptions opt;
  mjdiff_defaultRolloutOptions(&opt);
  opt.checkpoint = 0;
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, S.sim.s, nullptr, T, &opt, &r, err, sizeof(err)), MJDIFF_OK);
  auto start = [&](const mjtNum* dx) {
    mj_resetData(m, d);
    std::vector<mjtNum> x(nx);
    mjdiff_stateIntegrate(m, x0.data(), dx, 1, x.data());
    mjdiff_setState(m, d, x.data());
  };
  std::vector<mjtNum> zero(ndx, 0), gx0(ndx), gu(ctrl.size()), states((size_t)(T + 1) * nx);
  start(zero.data());
  ASSERT_EQ(mjdiff_rolloutForward(m, d, S.sim.s, r, ctrl.data(), nullptr, nullptr, nullptr,
                                  nullptr, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.terms = terms;
  g.grad_x0 = gx0.data();
  g.grad_ctrl = gu.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, d, S.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
  auto lossAt = [&](const mjtNum* dx, const mjtNum* u) {
    start(dx);
    EXPECT_EQ(mjdiff_rolloutForward(m, d, S.sim.s, r, u, nullptr, nullptr, states.data(), nullptr,
                                    err, sizeof(err)), MJDIFF_OK) << err;
    mjtNum L = NAN;
    mj_resetData(m, d);
    EXPECT_EQ(mjdiff_trajectoryLoss(m, d, S.sim.s, terms, T, states.data(), u, &L, nullptr,
                                    nullptr, nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    return L;
  };
  double worst = 0;
  for (int trial = 0; trial < 4; trial++) {
    std::vector<mjtNum> dx(ndx, 0), du(ctrl.size(), 0);
    for (auto& v : (trial % 2 ? du : dx)) v = uniform(&seed) - 0.5;
    double an = mju_dot(gx0.data(), dx.data(), ndx) + mju_dot(gu.data(), du.data(), (int)du.size());
    auto at = [&](double h) {
      std::vector<mjtNum> x(dx), u(ctrl);
      for (auto& v : x) v *= h;
      for (size_t k = 0; k < u.size(); k++) u[k] += h * du[k];
      return lossAt(x.data(), u.data());
    };
    // start-state directions on the quadruped (feet in contact, a free torso) have large higher
    // derivatives: the extrapolated difference's truncation is 2e-4 at eps 1e-5, 7e-6 at 1e-6,
    // 7e-10 at 1e-7 (measured), hence eps_x; elsewhere rounding dominates below 1e-6
    double fd = richardsonFD(at, trial % 2 ? 1e-6 : eps_x);
    double rel = std::fabs(an - fd) / std::fmax(std::fabs(fd), 1e-8);
    worst = std::fmax(worst, rel);
    EXPECT_LE(rel, 1e-5) << model << " trial " << trial << ": " << an << " vs " << fd;
  }
  std::cout << model << " (" << T << " steps, sqrt(T) checkpoints): worst relative error " << worst
            << "\n";
  mjdiff_freeRollout(r);
  mjdiff_freeTerms(terms);
}

TEST(Loss, TermsOnRK4Rollout) {
  checkTermsRollout("acrobot.xml", 100, 0, 1e-6);
}

TEST(Loss, TermsOnFreeJointRollout) {
  checkTermsRollout("quadruped.xml", 100, 50, 1e-7);
}

TEST(Loss, ArgumentStructsMatchPositionalCalls) {
  Arm A(20);
  ASSERT_TRUE(A.ok) << A.sim.err;
  const mjModel* m = A.sim.m;
  mjData* d = A.sim.d;
  char err[300];
  const char* names[] = {"body:box:mass"};
  mjdiffParams* p = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, A.sim.s, names, 1, &p, err, sizeof(err)), MJDIFF_OK);
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, A.sim.s, p, &w, err, sizeof(err)), MJDIFF_OK) << err;
  A.start();
  mju_copy(d->ctrl, A.ctrl.data(), A.nu);
  int ndx = A.ndx, nu = A.nu, ns = A.ns;
  std::vector<mjtNum> Aj(ndx * ndx), B(ndx * nu), P(ndx), C(ns * ndx), D(ns * nu), Q(ns);
  std::vector<mjtNum> Aj2(Aj.size()), B2(B.size()), P2(P.size()), C2(C.size()), D2(D.size()),
      Q2(Q.size());
  ASSERT_EQ(mjdiff_stepJacobian(m, d, A.sim.s, w, Aj.data(), B.data(), P.data(), err,
                                sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_sensorJacobian(m, d, A.sim.s, w, C.data(), D.data(), Q.data(), err,
                                  sizeof(err)), MJDIFF_OK);
  mjdiffStepJac jac;
  mjdiff_defaultStepJac(&jac);
  jac.A = Aj2.data();
  jac.B = B2.data();
  jac.P = P2.data();
  jac.C = C2.data();
  jac.D = D2.data();
  jac.Q = Q2.data();
  ASSERT_EQ(mjdiff_stepDerivatives(m, d, A.sim.s, w, &jac, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(Aj, Aj2);
  EXPECT_EQ(B, B2);
  EXPECT_EQ(P, P2);
  EXPECT_EQ(C, C2);
  EXPECT_EQ(D, D2);
  EXPECT_EQ(Q, Q2);

  std::vector<mjtNum> an(ndx), as(ns), ax(ndx), au(nu), ap(1), ax2(ndx), au2(nu), ap2(1);
  unsigned long long seed = 9;
  for (auto& v : an) v = uniform(&seed) - 0.5;
  for (auto& v : as) v = uniform(&seed) - 0.5;
  as[m->sensor_adr[mj_name2id(m, mjOBJ_SENSOR, "target_pos")]] = 0;
  ASSERT_EQ(mjdiff_stepVJP(m, d, A.sim.s, w, an.data(), ax.data(), au.data(), ap.data(), err,
                           sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_sensorVJP(m, d, A.sim.s, w, as.data(), ax.data(), au.data(), ap.data(), err,
                             sizeof(err)), MJDIFF_OK) << err;
  mjdiffStepAdj adj;
  mjdiff_defaultStepAdj(&adj);
  adj.adj_next = an.data();
  adj.adj_sensor = as.data();
  adj.adj_x = ax2.data();
  adj.adj_ctrl = au2.data();
  adj.adj_param = ap2.data();
  ASSERT_EQ(mjdiff_stepAdjoint(m, d, A.sim.s, w, &adj, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(ax, ax2);
  EXPECT_EQ(au, au2);
  EXPECT_EQ(ap, ap2);
  EXPECT_GT(mju_norm(ax.data(), ndx), 0);

  // a batch through mjdiffBatchDef equals the positional call
  std::vector<mjdiffBatchItem> items(2), items2(2);
  std::vector<mjtNum> gx(2 * ndx), gx2(2 * ndx);
  mjdiffLoss loss = {nullptr,
                     [](const mjModel* mm, int, int T, const mjtNum* states, const mjtNum*,
                        const mjtNum*, void*, mjtNum* dLdx, mjtNum*, mjtNum*) -> mjtNum {
                       int nxs = mm->nq + mm->nv + mm->na, ndx2 = 2 * mm->nv + mm->na;
                       dLdx[(size_t)ndx2 * T + mm->nv] = 1;  // d/d qvel[0] at x_T
                       return states[(size_t)nxs * T + mm->nq];
                     }};
  for (int i = 0; i < 2; i++) {
    items[i] = mjdiffBatchItem{};
    items[i].x0 = A.x0.data();
    items[i].ctrl = A.ctrl.data();
    items[i].grad_x0 = gx.data() + ndx * i;
    items2[i] = items[i];
    items2[i].grad_x0 = gx2.data() + ndx * i;
  }
  ASSERT_EQ(mjdiff_rolloutBatch(m, A.sim.s, nullptr, A.T, nullptr, &loss, 2, items.data(), 2, err,
                                sizeof(err)), MJDIFF_OK) << err;
  mjdiffBatchDef def;
  mjdiff_defaultBatchDef(&def);
  def.horizon = A.T;
  def.loss = &loss;
  def.nthread = 2;
  ASSERT_EQ(mjdiff_runBatch(m, A.sim.s, &def, items2.data(), 2, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(gx, gx2);
  EXPECT_GT(mju_norm(gx.data(), ndx), 0);
  // terms in a batch: each item's loss and gradient equal the serial sweep with the terms
  std::vector<mjtNum> tgt = {0.4, 0.1, 0.45};
  mjdiffTerm term;
  mjdiff_defaultTerm(&term);
  term.object = "site:ee";
  term.target = tgt.data();
  mjdiffTerms* terms = makeTerms(m, {term});
  def.loss = nullptr;
  def.terms = terms;
  ASSERT_EQ(mjdiff_runBatch(m, A.sim.s, &def, items2.data(), 2, err, sizeof(err)), MJDIFF_OK);
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, A.sim.s, nullptr, A.T, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK);
  mj_resetData(m, d);
  mjdiff_setState(m, d, A.x0.data());
  ASSERT_EQ(mjdiff_rolloutForward(m, d, A.sim.s, r, A.ctrl.data(), nullptr, nullptr, nullptr,
                                  nullptr, err, sizeof(err)), MJDIFF_OK);
  mjtNum Ls = NAN;
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.terms = terms;
  g.loss = &Ls;
  g.grad_x0 = gx.data();
  ASSERT_EQ(mjdiff_rolloutGradient(m, d, A.sim.s, r, &g, err, sizeof(err)), MJDIFF_OK);
  for (int i = 0; i < 2; i++) {
    EXPECT_EQ(items2[i].loss, Ls);
    EXPECT_EQ(std::vector<mjtNum>(gx.begin(), gx.begin() + ndx),
              std::vector<mjtNum>(gx2.begin() + ndx * i, gx2.begin() + ndx * (i + 1)));
  }
  EXPECT_GT(Ls, 0);
  mjdiff_freeRollout(r);
  mjdiff_freeTerms(terms);
  def.horizon = 0;
  EXPECT_EQ(mjdiff_runBatch(m, A.sim.s, &def, items2.data(), 2, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_runBatch(m, A.sim.s, nullptr, items2.data(), 2, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  mjdiff_freeStepDeriv(w);
  mjdiff_freeParams(p);
}

TEST(Loss, NamesAndErrors) {
  Arm A(5);
  ASSERT_TRUE(A.ok) << A.sim.err;
  const mjModel* m = A.sim.m;
  char err[300] = "";
  // one spelling for a per-geom smooth value: params' geom:G:field works in setParam and getParam
  mjtNum v1 = 0, v2 = 0;
  ASSERT_EQ(mjdiff_setParam(A.sim.s, "geom:fingertip:contact_stiffness", 12345, err, sizeof(err)),
            MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_getParam(A.sim.s, "contact_stiffness:fingertip", &v1, err, sizeof(err)),
            MJDIFF_OK);
  ASSERT_EQ(mjdiff_getParam(A.sim.s, "geom:fingertip:contact_stiffness", &v2, err, sizeof(err)),
            MJDIFF_OK);
  EXPECT_EQ(v1, 12345);
  EXPECT_EQ(v2, 12345);
  ASSERT_EQ(mjdiff_setParam(A.sim.s, "mjdiff:contact_damping", 7, err, sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_getParam(A.sim.s, "contact_damping", &v1, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v1, 7);
  EXPECT_EQ(mjdiff_setParam(A.sim.s, "geom:nosuch:contact_stiffness", 1, err, sizeof(err)),
            MJDIFF_ERR_NAME);
  EXPECT_NE(std::string(err).find("nosuch"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_setParam(A.sim.s, "geom:fingertip:limit_stiffness", 1, err, sizeof(err)),
            MJDIFF_ERR_NAME);
  EXPECT_NE(std::string(err).find("limit_stiffness"), std::string::npos) << err;

  // terms: errors name the term and the object
  mjdiffTerm t;
  mjdiffTerms* terms = nullptr;
  mjdiff_defaultTerm(&t);
  t.object = "body:nosuch";
  EXPECT_EQ(mjdiff_makeTerms(m, &t, 1, &terms, err, sizeof(err)), MJDIFF_ERR_NAME);
  EXPECT_NE(std::string(err).find("nosuch"), std::string::npos) << err;
  EXPECT_EQ(terms, nullptr);
  t.object = "box";  // no kind prefix
  EXPECT_EQ(mjdiff_makeTerms(m, &t, 1, &terms, err, sizeof(err)), MJDIFF_ERR_NAME);
  t.type = MJDIFF_TERM_SENSOR;
  t.object = "sensor:nosuch";
  EXPECT_EQ(mjdiff_makeTerms(m, &t, 1, &terms, err, sizeof(err)), MJDIFF_ERR_NAME);
  t.type = 9;
  EXPECT_EQ(mjdiff_makeTerms(m, &t, 1, &terms, err, sizeof(err)), MJDIFF_ERR_VALUE);
  mjdiff_defaultTerm(&t);
  t.type = MJDIFF_TERM_CONTROL;
  t.norm = MJDIFF_NORM_SMOOTHABS;
  t.norm_param = 0;
  EXPECT_EQ(mjdiff_makeTerms(m, &t, 1, &terms, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("norm_param"), std::string::npos) << err;
  t.norm = 5;
  EXPECT_EQ(mjdiff_makeTerms(m, &t, 1, &terms, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_EQ(mjdiff_makeTerms(m, nullptr, 1, &terms, err, sizeof(err)), MJDIFF_ERR_ARGUMENT);
  mjdiff_freeTerms(nullptr);

  // the rollout gradient needs its struct and a recorded forward rollout
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, A.sim.s, nullptr, A.T, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK);
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  EXPECT_EQ(mjdiff_rolloutGradient(m, A.sim.d, A.sim.s, r, &g, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("forward"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_rolloutGradient(m, A.sim.d, A.sim.s, r, nullptr, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  // terms made for another model
  shimSim other;
  ASSERT_TRUE(shim_open(&other, nullptr, shim_modelPath("cartpole.xml"))) << other.err;
  mjdiff_defaultTerm(&t);
  t.type = MJDIFF_TERM_CONTROL;
  ASSERT_EQ(mjdiff_makeTerms(other.m, &t, 1, &terms, err, sizeof(err)), MJDIFF_OK);
  A.start();
  ASSERT_EQ(mjdiff_rolloutForward(m, A.sim.d, A.sim.s, r, A.ctrl.data(), nullptr, nullptr,
                                  nullptr, nullptr, err, sizeof(err)), MJDIFF_OK);
  g.terms = terms;
  EXPECT_EQ(mjdiff_rolloutGradient(m, A.sim.d, A.sim.s, r, &g, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("another model"), std::string::npos) << err;
  mjdiff_freeTerms(terms);
  shim_close(&other);
  EXPECT_EQ(mjdiff_rolloutHorizon(nullptr), 0);
  EXPECT_EQ(mjdiff_rolloutSizes(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), 0);
  EXPECT_EQ(mjdiff_paramIndex(nullptr, "x"), -1);
  EXPECT_EQ(mjdiff_paramNameCount(nullptr, "x"), 0);
  mjdiff_freeRollout(r);
}

}  // namespace
