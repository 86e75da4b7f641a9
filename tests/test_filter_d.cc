// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The differentiable filter (estimate/filter_d.c, mjdiff_filterNLL): the EKF's innovation
// negative log-likelihood and its gradient in the log noise scales (a, b): Q = e^a Q0,
// R = e^b R0.
//   - linear slide joint (the system of test_estimate.cc, with process noise): the run equals the
//     library's EKF with the scaled sigmas (final mean and covariance); the gradient equals
//     central differences of the whole run's NLL (exact there: A and C constant) at 4 points;
//   - cartpole swinging (nonlinear): the gradient against central differences, with the
//     second derivatives of the step neglected (curvature 0) and by differences of the exact
//     Jacobians (curvature 1); the guard: dropping the curvature terms is measurably worse;
//   - fitting (a, b) on a simulated slide recording by Newton steps on the exact gradient
//     recovers the simulated scales.

#include <gtest/gtest.h>
#include <mjdiff/estimate.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/state.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "shim.h"
#include "testutil.h"

namespace {


const double kMass = 2, kK = 10, kB = 0.5, kH = 0.01;
const double kSigQ = 1e-4, kSigV = 3e-3;      // Q0 std (dq, dv rows)
const double kSigPos = 0.01, kSigVel = 0.05;  // R0 std

double gauss(unsigned long long* rng) {
  return std::sqrt(-2 * std::log(shim_uniform(rng) + 1e-300)) *
         std::cos(6.283185307179586 * shim_uniform(rng));
}

// a recording of the slide joint (MuJoCo's Euler step with implicit damping) with process noise
// of std e^(a/2) (kSigQ, kSigV) and reading noise e^(b/2) (kSigPos, kSigVel)
void recordSlide(int T, double a, double b, unsigned long long seed, std::vector<double>* ctrl,
                 std::vector<double>* y, double damp = kB) {
  double mh = kMass + kH * damp;
  double A[4] = {1 - kH * kH * kK / mh, kH - kH * kH * damp / mh, -kH * kK / mh,
                 1 - kH * damp / mh};
  double B[2] = {kH * kH / mh, kH / mh};
  double qs = std::exp(a / 2), rs = std::exp(b / 2);
  double x[2] = {0.2, -0.3};
  unsigned long long rng = seed;
  ctrl->assign(T, 0);
  y->assign(2 * (T + 1), 0);
  for (int t = 0; t <= T; t++) {
    (*y)[2 * t] = x[0] + rs * kSigPos * gauss(&rng);
    (*y)[2 * t + 1] = x[1] + rs * kSigVel * gauss(&rng);
    if (t == T) break;
    double u = 4 * (shim_uniform(&rng) - 0.5);
    (*ctrl)[t] = u;
    double n0 = A[0] * x[0] + A[1] * x[1] + B[0] * u + qs * kSigQ * gauss(&rng);
    double n1 = A[2] * x[0] + A[3] * x[1] + B[1] * u + qs * kSigV * gauss(&rng);
    x[0] = n0;
    x[1] = n1;
  }
}

struct SlideSetup {
  mjdiffFilterDef def;
  const char* names[2] = {"pos", "vel"};
  double sig[2] = {kSigPos, kSigVel};
  double x0[2] = {0.2, -0.3};
  double P0[4] = {1e-4, 0, 0, 1e-4};
  SlideSetup() {
    mjdiff_defaultFilterDef(&def);
    def.sensors = names;
    def.nsensor = 2;
    def.sensor_sigma = sig;
    def.sigma_qpos = kSigQ;
    def.sigma_qvel = kSigV;
  }
};

TEST(FilterGrad, SlideRunEqualsLibraryEkf) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  int T = 150;
  std::vector<double> ctrl, y;
  recordSlide(T, 0, 0, 3, &ctrl, &y);
  SlideSetup su;
  double a = 0.7, b = -0.4;
  char err[512];
  double nll, xo[2], Po[4];
  ASSERT_EQ(mjdiff_filterNLL(m, sim.sim.s, &su.def, nullptr, a, b, 0, 0, T, 0, ctrl.data(), y.data(),
                             su.x0, su.P0, &nll, nullptr, xo, Po, err, sizeof(err)),
            MJDIFF_OK)
      << err;
  // the library's EKF with scaled sigmas, and its NIS summed
  mjdiffFilterDef def = su.def;
  double sig[2] = {kSigPos * std::exp(b / 2), kSigVel * std::exp(b / 2)};
  def.sensor_sigma = sig;
  def.sigma_qpos = kSigQ * std::exp(a / 2);
  def.sigma_qvel = kSigV * std::exp(a / 2);
  mjdiffFilter* f = nullptr;
  ASSERT_EQ(mjdiff_makeFilter(m, sim.sim.s, &def, &f, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_filterReset(f, su.x0, su.P0, 0, err, sizeof(err)), MJDIFF_OK) << err;
  for (int t = 0; t <= T; t++) {
    double u = ctrl[t < T ? t : T - 1];
    ASSERT_EQ(mjdiff_filterUpdate(f, &u, &y[2 * t], err, sizeof(err)), MJDIFF_OK) << err;
    if (t < T) {
      ASSERT_EQ(mjdiff_filterPredict(f, &u, err, sizeof(err)), MJDIFF_OK) << err;
    }
  }
  double x[2], P[4];
  mjdiff_filterGet(f, x, P, nullptr, nullptr);
  mjdiff_freeFilter(f);
  double worst = 0;
  for (int i = 0; i < 2; i++) worst = std::fmax(worst, std::fabs(x[i] - xo[i]) / 1e-2);
  for (int i = 0; i < 4; i++)
    worst = std::fmax(worst, std::fabs(P[i] - Po[i]) / (std::fabs(P[0]) + std::fabs(P[3])));
  printf("slide: NLL %.6g, final mean/cov vs the library EKF: %.3g\n", nll, worst);
  EXPECT_LT(worst, 1e-10);
  EXPECT_TRUE(std::isfinite(nll));
}

// central difference of the NLL in parameter j (step e): the log scales (j = 0, 1) or model
// parameter j - 2 of par
double fdGrad(mjModel* m, mjdiffModel* s, const mjdiffFilterDef* def, double a, double b, int j,
              double e, int T, const double* ctrl, const double* y, const double* x0,
              const double* P0, const mjdiffParams* par = nullptr) {
  double L[2] = {0, 0};
  char err[256];
  int np = mjdiff_paramCount(par);
  std::vector<double> p0(np), pv(np);
  if (np) mjdiff_getParamValues(m, s, par, p0.data());
  for (int side = 0; side < 2; side++) {
    double sg = side ? -1 : 1;
    double ap = a + (j == 0 ? sg * e : 0), bp = b + (j == 1 ? sg * e : 0);
    if (j >= 2) {
      pv = p0;
      pv[j - 2] += sg * e;
      EXPECT_EQ(mjdiff_setParamValues(m, s, par, pv.data(), err, sizeof(err)), MJDIFF_OK) << err;
    }
    EXPECT_EQ(mjdiff_filterNLL(m, s, def, par, ap, bp, 0, 0, T, 0, ctrl, y, x0, P0, &L[side],
                               nullptr, nullptr, nullptr, err, sizeof(err)),
              MJDIFF_OK)
        << err;
    if (j >= 2) mjdiff_setParamValues(m, s, par, p0.data(), err, sizeof(err));
  }
  return (L[0] - L[1]) / (2 * e);
}

TEST(FilterGrad, SlideGradientMatchesFiniteDifferences) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  int T = 200;
  std::vector<double> ctrl, y;
  recordSlide(T, std::log(4.0), std::log(0.5), 11, &ctrl, &y);
  SlideSetup su;
  double pts[4][2] = {{0, 0}, {1.2, -0.5}, {-1, 0.8}, {2.5, -1.5}};
  double worst = 0, gmin = 1e300;
  char err[512];
  for (auto& pt : pts) {
    for (int curv = 0; curv < 2; curv++) {
      double g[2];
      ASSERT_EQ(mjdiff_filterNLL(m, sim.sim.s, &su.def, nullptr, pt[0], pt[1], curv, 1e-6, T, 0,
                                 ctrl.data(), y.data(), su.x0, su.P0, nullptr, g, nullptr,
                                 nullptr, err, sizeof(err)),
                MJDIFF_OK)
          << err;
      for (int j = 0; j < 2; j++) {
        double fd = fdGrad(m, sim.sim.s, &su.def, pt[0], pt[1], j, 1e-4, T, ctrl.data(),
                           y.data(), su.x0, su.P0);
        double rel = std::fabs(g[j] - fd) / (std::fabs(fd) + 1e-3);
        worst = std::fmax(worst, rel);
        gmin = std::fmin(gmin, std::fabs(fd));
        EXPECT_LT(rel, 1e-6) << "point (" << pt[0] << ", " << pt[1] << ") param " << j
                             << " curvature " << curv << ": " << g[j] << " vs " << fd;
      }
    }
  }
  printf("slide: worst relative gradient error vs central FD %.3g (smallest |dNLL| %.3g)\n",
         worst, gmin);
  EXPECT_GT(gmin, 0.1);  // guard: the gradients are far from zero (measured 0.28)
}

TEST(FilterGrad, CartpoleGradientAgainstFiniteDifferences) {
  testutil::Sim sim(nullptr, MJDIFF_MODEL_DIR "/cartpole.xml");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int nx = mjdiff_stateSize(m), ndx = mjdiff_tangentSize(m), ns = m->nsensordata;
  int T = 150;
  char err[512];
  // truth: the smooth step from a swinging start, readings with noise
  std::vector<double> x0(nx, 0), ctrl(T * m->nu), y((T + 1) * ns);
  mju_copy(x0.data(), m->qpos0, m->nq);
  x0[1] += 0.6;
  x0[m->nq + 1] = 1.0;
  unsigned long long rng = 5;
  mjdiff_setState(m, d, x0.data());
  const double sig = 0.02;
  for (int t = 0; t <= T; t++) {
    for (int i = 0; i < m->nu; i++) d->ctrl[i] = t < T ? 0.8 * std::sin(0.05 * t) : 0;
    if (t == T && T > 0)
      for (int i = 0; i < m->nu; i++) d->ctrl[i] = ctrl[(T - 1) * m->nu + i];
    ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    for (int i = 0; i < ns; i++) y[t * ns + i] = d->sensordata[i] + sig * gauss(&rng);
    if (t == T) break;
    for (int i = 0; i < m->nu; i++) ctrl[t * m->nu + i] = d->ctrl[i];
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  }
  mjdiffFilterDef def;
  mjdiff_defaultFilterDef(&def);
  const char* names[] = {"cart_pos", "pole_angle"};
  def.sensors = names;
  def.nsensor = 2;
  def.sigma_sensor = sig;
  def.sigma_qpos = 1e-3;
  def.sigma_qvel = 2e-2;
  std::vector<double> xg(x0), P0(ndx * ndx, 0);
  xg[1] -= 0.1;  // a guess 0.1 rad off
  for (int i = 0; i < ndx; i++) P0[i * ndx + i] = i < m->nv ? 0.04 : 0.25;
  double pts[3][2] = {{0, 0}, {1.5, -0.7}, {-1, 1}};
  double worst[2] = {0, 0}, sum[2] = {0, 0};
  int ncase = 0;
  for (auto& pt : pts) {
    double g[2][2];
    for (int curv = 0; curv < 2; curv++) {
      ASSERT_EQ(mjdiff_filterNLL(m, sim.sim.s, &def, nullptr, pt[0], pt[1], curv, 1e-5, T, 0,
                                 ctrl.data(), y.data(), xg.data(), P0.data(), nullptr, g[curv],
                                 nullptr, nullptr, err, sizeof(err)),
                MJDIFF_OK)
          << err;
    }
    for (int j = 0; j < 2; j++) {
      double fd = fdGrad(m, sim.sim.s, &def, pt[0], pt[1], j, 1e-4, T, ctrl.data(), y.data(),
                         xg.data(), P0.data());
      for (int curv = 0; curv < 2; curv++) {
        double rel = std::fabs(g[curv][j] - fd) / (std::fabs(fd) + 1e-3);
        worst[curv] = std::fmax(worst[curv], rel);
        sum[curv] += rel;
      }
      ncase++;
      printf("cartpole (%g, %g) param %d: FD %.8g, curvature 0 %.8g, curvature 1 %.8g\n", pt[0],
             pt[1], j, fd, g[0][j], g[1][j]);
    }
  }
  printf("cartpole: worst relative gradient error, curvature neglected %.3g, by differences of "
         "the exact Jacobians %.3g (means %.3g, %.3g over %d)\n",
         worst[0], worst[1], sum[0] / ncase, sum[1] / ncase, ncase);
  EXPECT_LT(worst[1], 1e-4);
  EXPECT_LT(worst[0], 0.2);
  EXPECT_GT(worst[0], 10 * worst[1]);  // guard: dropping the curvature terms is measurably worse
  // a model parameter through the nonlinear physics: the pole's mass
  const char* pn[] = {"body:pole:mass"};
  mjdiffParams* par = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, sim.sim.s, pn, 1, &par, err, sizeof(err)), MJDIFF_OK) << err;
  double wp[2] = {0, 0}, gp_min = 1e300;
  for (auto& pt : pts) {
    double g[2][3];
    for (int curv = 0; curv < 2; curv++) {
      ASSERT_EQ(mjdiff_filterNLL(m, sim.sim.s, &def, par, pt[0], pt[1], curv, 1e-5, T, 0,
                                 ctrl.data(), y.data(), xg.data(), P0.data(), nullptr, g[curv],
                                 nullptr, nullptr, err, sizeof(err)),
                MJDIFF_OK)
          << err;
    }
    double fd = fdGrad(m, sim.sim.s, &def, pt[0], pt[1], 2, 1e-5, T, ctrl.data(), y.data(),
                       xg.data(), P0.data(), par);
    gp_min = std::fmin(gp_min, std::fabs(fd));
    for (int curv = 0; curv < 2; curv++)
      wp[curv] = std::fmax(wp[curv], std::fabs(g[curv][2] - fd) / (std::fabs(fd) + 1e-3));
    printf("cartpole (%g, %g) pole mass: FD %.8g, curvature 0 %.8g, curvature 1 %.8g\n", pt[0],
           pt[1], fd, g[0][2], g[1][2]);
  }
  printf("cartpole pole mass: worst relative gradient error, curvature neglected %.3g, by "
         "differences %.3g (smallest |dNLL/dmass| %.3g)\n",
         wp[0], wp[1], gp_min);
  EXPECT_LT(wp[1], 1e-4);
  EXPECT_GT(wp[0], 10 * wp[1]);  // guard, as above
  EXPECT_GT(gp_min, 0.1);
  mjdiff_freeParams(par);
}

TEST(FilterGrad, SlideDampingGradientMatchesFiniteDifferences) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  char err[512];
  const char* pn[] = {"joint:slide:damping"};
  mjdiffParams* par = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, sim.sim.s, pn, 1, &par, err, sizeof(err)), MJDIFF_OK) << err;
  int T = 200;
  std::vector<double> ctrl, y;
  recordSlide(T, 0, 0, 13, &ctrl, &y, 0.5);
  SlideSetup su;
  double damps[3] = {0.5, 1.5, 0.1}, pts[3][2] = {{0, 0}, {0.8, -0.3}, {-0.5, 0.5}};
  double worst = 0, gmin = 1e300;
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(mjdiff_setParamValues(m, sim.sim.s, par, &damps[i], err, sizeof(err)), MJDIFF_OK);
    for (int curv = 0; curv < 2; curv++) {
      double g[3];
      ASSERT_EQ(mjdiff_filterNLL(m, sim.sim.s, &su.def, par, pts[i][0], pts[i][1], curv, 1e-6, T,
                                 0, ctrl.data(), y.data(), su.x0, su.P0, nullptr, g, nullptr,
                                 nullptr, err, sizeof(err)),
                MJDIFF_OK)
          << err;
      double now;
      mjdiff_getParamValues(m, sim.sim.s, par, &now);
      EXPECT_EQ(now, damps[i]);  // restored bit for bit
      for (int j = 0; j < 3; j++) {
        double fd = fdGrad(m, sim.sim.s, &su.def, pts[i][0], pts[i][1], j, 1e-4, T, ctrl.data(),
                           y.data(), su.x0, su.P0, par);
        double rel = std::fabs(g[j] - fd) / (std::fabs(fd) + 1e-3);
        worst = std::fmax(worst, rel);
        if (j == 2) gmin = std::fmin(gmin, std::fabs(fd));
        EXPECT_LT(rel, 1e-5) << "damping " << damps[i] << " param " << j << " curvature " << curv
                             << ": " << g[j] << " vs " << fd;
      }
    }
  }
  printf("slide with damping: worst relative gradient error vs central FD %.3g (smallest "
         "|dNLL/ddamping| %.3g)\n",
         worst, gmin);
  EXPECT_GT(gmin, 0.1);
  mjdiff_freeParams(par);
}

// solve the symmetric positive definite H x = -g (n <= 3) by Cholesky; false if not definite
bool newtonStep(int n, const double* H, const double* g, double* x) {
  double L[9] = {0};
  for (int j = 0; j < n; j++) {
    double d = H[j * n + j];
    for (int k = 0; k < j; k++) d -= L[j * 3 + k] * L[j * 3 + k];
    if (!(d > 0)) return false;
    L[j * 3 + j] = std::sqrt(d);
    for (int i = j + 1; i < n; i++) {
      double v = 0.5 * (H[i * n + j] + H[j * n + i]);
      for (int k = 0; k < j; k++) v -= L[i * 3 + k] * L[j * 3 + k];
      L[i * 3 + j] = v / L[j * 3 + j];
    }
  }
  double z[3];
  for (int i = 0; i < n; i++) {
    double v = -g[i];
    for (int k = 0; k < i; k++) v -= L[i * 3 + k] * z[k];
    z[i] = v / L[i * 3 + i];
  }
  for (int i = n - 1; i >= 0; i--) {
    double v = z[i];
    for (int k = i + 1; k < n; k++) v -= L[k * 3 + i] * x[k];
    x[i] = v / L[i * 3 + i];
  }
  return true;
}

// fit the log noise scales, and with_damping the slide's damping, to a simulated recording by
// Newton steps on the exact gradient (the Hessian by central differences of the gradient) with
// backtracking
void fitSlide(bool with_damping) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  char err[512];
  mjdiffParams* par = nullptr;
  const char* pn[] = {"joint:slide:damping"};
  if (with_damping) {
    ASSERT_EQ(mjdiff_makeParams(m, sim.sim.s, pn, 1, &par, err, sizeof(err)), MJDIFF_OK) << err;
  }
  int n = with_damping ? 3 : 2;
  int T = 2000;
  const double a_true = std::log(4.0), b_true = std::log(0.25), d_true = 0.5;
  std::vector<double> ctrl, y;
  recordSlide(T, a_true, b_true, 21, &ctrl, &y, d_true);
  SlideSetup su;
  double th[3] = {0, 0, 1.0}, nll0 = 0, nll = 0;  // start: scales 1, damping 1 (truth 0.5)
  auto eval = [&](const double* p, double* L, double* g) {
    if (with_damping) {
      mjdiffStatus st = mjdiff_setParamValues(m, sim.sim.s, par, p + 2, err, sizeof(err));
      if (st != MJDIFF_OK) return st;
    }
    return mjdiff_filterNLL(m, sim.sim.s, &su.def, par, p[0], p[1], 0, 0, T, 0, ctrl.data(),
                            y.data(), su.x0, su.P0, L, g, nullptr, nullptr, err, sizeof(err));
  };
  double g[3];
  ASSERT_EQ(eval(th, &nll0, g), MJDIFF_OK) << err;
  nll = nll0;
  int it = 0;
  auto gnorm = [&](const double* v) {
    double q = 0;
    for (int i = 0; i < n; i++) q += v[i] * v[i];
    return std::sqrt(q);
  };
  for (; it < 20 && gnorm(g) > 1e-6 * T; it++) {
    double Hm[9], gp[3], gm[3], e = 1e-4;
    for (int j = 0; j < n; j++) {
      double p[3] = {th[0], th[1], th[2]}, q[3] = {th[0], th[1], th[2]};
      p[j] += e;
      q[j] -= e;
      ASSERT_EQ(eval(p, nullptr, gp), MJDIFF_OK) << err;
      ASSERT_EQ(eval(q, nullptr, gm), MJDIFF_OK) << err;
      for (int i = 0; i < n; i++) Hm[i * n + j] = (gp[i] - gm[i]) / (2 * e);
    }
    double step[3];
    if (!newtonStep(n, Hm, g, step))
      for (int i = 0; i < n; i++) step[i] = -g[i] / T;
    double nrm = gnorm(step);
    if (nrm > 0.5)
      for (int i = 0; i < n; i++) step[i] *= 0.5 / nrm;
    double t = 1, Ln = 0, gn[3];
    bool moved = false;
    for (int k = 0; k < 20 && !moved; k++, t /= 2) {
      double p[3] = {th[0], th[1], th[2]};
      for (int i = 0; i < n; i++) p[i] += t * step[i];
      if (with_damping && !(p[2] > 0)) continue;
      ASSERT_EQ(eval(p, &Ln, gn), MJDIFF_OK) << err;
      if (Ln < nll) {
        std::memcpy(th, p, sizeof(th));
        std::memcpy(g, gn, sizeof(g));
        nll = Ln;
        moved = true;
      }
    }
    if (!moved) break;
  }
  // the standard deviations of the estimate: sqrt of diag(H^-1) at the optimum (the NLL's
  // Hessian is the observed information)
  double sd[3] = {0, 0, 0};
  {
    double Hm[9], gp[3], gm[3], e = 1e-4;
    for (int j = 0; j < n; j++) {
      double p[3] = {th[0], th[1], th[2]}, q[3] = {th[0], th[1], th[2]};
      p[j] += e;
      q[j] -= e;
      ASSERT_EQ(eval(p, nullptr, gp), MJDIFF_OK) << err;
      ASSERT_EQ(eval(q, nullptr, gm), MJDIFF_OK) << err;
      for (int i = 0; i < n; i++) Hm[i * n + j] = (gp[i] - gm[i]) / (2 * e);
    }
    for (int j = 0; j < n; j++) {
      double ej[3] = {0, 0, 0}, col[3];
      ej[j] = -1;
      ASSERT_TRUE(newtonStep(n, Hm, ej, col));
      sd[j] = std::sqrt(col[j]);
    }
  }
  double qs = std::exp(th[0]), rs = std::exp(th[1]);
  printf("fit%s: std of log Q scale %.3g, log R scale %.3g, damping %.3g\n",
         with_damping ? " with damping" : "", sd[0], sd[1], sd[2]);
  printf("fit%s: %d Newton steps, NLL %.6g -> %.6g, Q scale %.4g (truth 4), R scale %.4g (truth "
         "0.25), damping %.4g (truth 0.5%s), |grad| %.3g\n",
         with_damping ? " with damping" : "", it, nll0, nll, qs, rs, th[2],
         with_damping ? "" : ", not fitted", gnorm(g));
  EXPECT_LT(nll, nll0);
  EXPECT_LT(std::fabs(rs / 0.25 - 1), 0.1);
  EXPECT_LT(std::fabs(qs / 4 - 1), 0.3);
  if (with_damping) {
    EXPECT_LT(std::fabs(th[2] / d_true - 1), 0.3);
    EXPECT_LT(std::fabs(th[2] - d_true), 3 * sd[2]);
  }
  EXPECT_LT(std::fabs(th[0] - a_true), 3 * sd[0]);
  EXPECT_LT(std::fabs(th[1] - b_true), 3 * sd[1]);
  EXPECT_LT(gnorm(g), 1e-3 * T);
  mjdiff_freeParams(par);
}

TEST(FilterGrad, FitNoiseScalesOnSlide) {
  fitSlide(false);
}

TEST(FilterGrad, FitNoiseScalesAndDampingOnSlide) {
  fitSlide(true);
}

TEST(FilterGrad, ErrorPaths) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  SlideSetup su;
  std::vector<double> ctrl, y;
  recordSlide(10, 0, 0, 1, &ctrl, &y);
  char err[512];
  double nll, g[2];
  mjdiffFilterDef def = su.def;
  def.method = MJDIFF_FILTER_UKF;
  EXPECT_EQ(mjdiff_filterNLL(m, sim.sim.s, &def, nullptr, 0, 0, 0, 0, 10, 0, ctrl.data(),
                             y.data(), su.x0, su.P0, &nll, g, nullptr, nullptr, err, sizeof(err)),
            MJDIFF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("EKF"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_filterNLL(m, sim.sim.s, &su.def, nullptr, 0, 0, 1, -1, 10, 0, ctrl.data(),
                             y.data(), su.x0, su.P0, &nll, g, nullptr, nullptr, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  const char* bad[] = {"nope"};
  def = su.def;
  def.sensors = bad;
  def.nsensor = 1;
  EXPECT_EQ(mjdiff_filterNLL(m, sim.sim.s, &def, nullptr, 0, 0, 0, 0, 10, 0, ctrl.data(),
                             y.data(), su.x0, su.P0, &nll, g, nullptr, nullptr, err, sizeof(err)),
            MJDIFF_ERR_NAME);
  EXPECT_NE(std::string(err).find("nope"), std::string::npos) << err;
  // a negative R scale that makes S indefinite cannot be given (e^b > 0); an indefinite P0 with
  // zero R can: log_rscale -inf is refused as not finite
  EXPECT_EQ(mjdiff_filterNLL(m, sim.sim.s, &su.def, nullptr, 0, -INFINITY, 0, 0, 10, 0,
                             ctrl.data(), y.data(), su.x0, su.P0, &nll, g, nullptr, nullptr, err,
                             sizeof(err)),
            MJDIFF_ERR_VALUE);
  double Pbad[4] = {-1, 0, 0, -1};
  EXPECT_EQ(mjdiff_filterNLL(m, sim.sim.s, &su.def, nullptr, 0, -60, 0, 0, 10, 0, ctrl.data(),
                             y.data(), su.x0, Pbad, &nll, g, nullptr, nullptr, err, sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::string(err).find("step 0"), std::string::npos) << err;
}

}  // namespace
