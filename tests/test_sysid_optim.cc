// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid's least-squares optimisers (tools/sysid/optim.c): Levenberg-Marquardt with exact
// and forward-difference Jacobians and Nelder-Mead, on problems with known answers.
//
//   Rosenbrock as residuals r = (10 (x2 - x1^2), 1 - x1) from (-1.2, 1): every method reaches
//   (1, 1) within 1e-8.
//   Exponential decay y = a exp(-b t) + c + noise (sigma 0.02, 60 samples on [0, 4]): LM exact and
//   FD agree; the true values lie within 3 standard errors; the standard-error formula
//   sqrt(diag((J'J)^-1) 2F/(m-n)) matches the spread of the estimates over 200 noisy datasets
//   within 20% (the sample standard deviation of 200 draws is itself uncertain by ~5%).
//   Bounds: each kind (both, lower only, upper only) with the optimum at its bound; the solution
//   is at the bound, the other variables match a fit with that variable removed, and no
//   evaluation ever leaves the bounds. A variable with lo = hi stays put (standard error 0).
//   Failures: a residual undefined for z <= 0 (returning nonzero, or NaN) is overshot by the
//   first Gauss-Newton step; the optimiser backs off and converges. A start point that fails
//   returns -1.
//   Cancel flag, iteration limit, evaluation counts (FD: n evaluations per Jacobian in place of
//   one call with J), standard errors NaN when m <= n or J'J is singular, verbose output,
//   determinism, invalid input.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "sysid.h"
}

namespace {

const sysidMethod kMethods[] = {SYSID_LM_EXACT, SYSID_LM_FD, SYSID_NELDER_MEAD};
const char* kMethodNames[] = {"LM exact", "LM FD", "Nelder-Mead"};

// counts of residual calls, bound checks and a cancel trigger, shared by the test problems
struct Calls {
  int plain = 0;    // calls without J
  int withJ = 0;    // calls with J
  int outside = 0;  // calls with z outside [lo, hi]
  const double* lo = nullptr;
  const double* hi = nullptr;
  int n = 0;
  volatile int* cancel = nullptr;
  int cancel_after = -1;  // set *cancel after this many calls

  void record(const double* z, const double* J) {
    (J ? withJ : plain)++;
    for (int j = 0; j < n; j++) {
      if ((lo && z[j] < lo[j]) || (hi && z[j] > hi[j])) outside++;
    }
    if (cancel && cancel_after >= 0 && plain + withJ >= cancel_after) *cancel = 1;
  }
};

struct Result {
  sysidResult res;
  Result() {
    std::memset(&res, 0, sizeof(res));
  }
  ~Result() {
    sysid_freeResult(&res);
  }
  sysidResult* operator->() {
    return &res;
  }
};

//---------------------------------- problems -----------------------------------------------------

int rosenbrock(void* user, const double* z, double* r, double* J) {
  static_cast<Calls*>(user)->record(z, J);
  r[0] = 10 * (z[1] - z[0] * z[0]);
  r[1] = 1 - z[0];
  if (J) {
    J[0] = -20 * z[0];
    J[1] = 10;
    J[2] = -1;
    J[3] = 0;
  }
  return 0;
}

double uniform(unsigned long long* s) {
  unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

double gaussian(unsigned long long* s) {
  double u1 = uniform(s), u2 = uniform(s);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

const double kTrue[3] = {2.0, 1.3, 0.5};  // a, b, c
const double kSigma = 0.02;

// y = a exp(-b t) + c + noise; fixed >= 0 removes that variable (held at fixed_value)
struct ExpFit {
  std::vector<double> t, y;
  Calls calls;
  int fixed = -1;
  double fixed_value = 0;

  explicit ExpFit(unsigned long long seed, int samples = 60) {
    for (int i = 0; i < samples; i++) {
      double ti = 4.0 * i / (samples - 1);
      t.push_back(ti);
      y.push_back(kTrue[0] * std::exp(-kTrue[1] * ti) + kTrue[2] + kSigma * gaussian(&seed));
    }
  }
  int m() const {
    return (int)t.size();
  }
};

int expFit(void* user, const double* zin, double* r, double* J) {
  ExpFit* p = static_cast<ExpFit*>(user);
  p->calls.record(zin, J);
  double z[3];
  int n = p->fixed >= 0 ? 2 : 3;
  for (int j = 0, k = 0; j < 3; j++) z[j] = j == p->fixed ? p->fixed_value : zin[k++];
  for (int i = 0; i < p->m(); i++) {
    double e = std::exp(-z[1] * p->t[i]);
    r[i] = z[0] * e + z[2] - p->y[i];
    if (J) {
      double row[3] = {e, -z[0] * p->t[i] * e, 1};
      for (int j = 0, k = 0; j < 3; j++) {
        if (j != p->fixed) J[i * n + k++] = row[j];
      }
    }
  }
  return 0;
}

sysidProblem expProblem(ExpFit* p, const double* lo = nullptr, const double* hi = nullptr) {
  sysidProblem prob;
  prob.n = p->fixed >= 0 ? 2 : 3;
  prob.m = p->m();
  prob.lo = lo;
  prob.hi = hi;
  prob.residual = expFit;
  prob.user = p;
  p->calls.lo = lo;
  p->calls.hi = hi;
  p->calls.n = prob.n;
  return prob;
}

sysidOptions options(sysidMethod method) {
  sysidOptions opt;
  sysid_defaultOptions(&opt);
  opt.method = method;
  return opt;
}

//---------------------------------- tests --------------------------------------------------------

TEST(SysidOptim, DefaultOptions) {
  sysidOptions opt;
  std::memset(&opt, 0xff, sizeof(opt));
  sysid_defaultOptions(&opt);
  EXPECT_EQ(opt.method, SYSID_LM_EXACT);
  EXPECT_EQ(opt.max_iter, 0);  // the method's default: 100, Nelder-Mead 200 n
  EXPECT_EQ(opt.ftol, 1e-10);
  EXPECT_EQ(opt.xtol, 1e-10);
  EXPECT_EQ(opt.gtol, 1e-12);
  EXPECT_EQ(opt.fd_eps, 1e-6);
  EXPECT_EQ(opt.verbose, 0);
  EXPECT_EQ(opt.cancel, nullptr);
  sysid_freeResult(nullptr);  // NULL-safe
}

TEST(SysidOptim, Rosenbrock) {
  for (int k = 0; k < 3; k++) {
    Calls calls;
    sysidProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls};
    sysidOptions opt = options(kMethods[k]);
    double z[2] = {-1.2, 1};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0) << kMethodNames[k];
    std::printf(
        "[ rosenbrock ] %-11s %-18s iterations %3d evaluations %4d jacobians %3d "
        "|z - 1| %.1e F %.1e\n",
        kMethodNames[k], res->status, res->iterations, res->evaluations, res->jacobians,
        std::fmax(std::fabs(z[0] - 1), std::fabs(z[1] - 1)), res->F);
    EXPECT_EQ(std::string(res->status).rfind("converged", 0), 0u) << res->status;
    EXPECT_NEAR(z[0], 1, 1e-8) << kMethodNames[k];
    EXPECT_NEAR(z[1], 1, 1e-8) << kMethodNames[k];
    EXPECT_DOUBLE_EQ(res->F0, 0.5 * (4.4 * 4.4 + 2.2 * 2.2));
    EXPECT_LT(res->F, 1e-16);
    // m = n: no standard errors
    ASSERT_NE(res->stderr_z, nullptr);
    EXPECT_TRUE(std::isnan(res->stderr_z[0]) && std::isnan(res->stderr_z[1]));
    // the counts are the calls made
    EXPECT_EQ(res->evaluations, calls.plain);
    EXPECT_EQ(res->jacobians, calls.withJ);
  }
}

TEST(SysidOptim, ExponentialFit) {
  ExpFit data(12345);
  sysidProblem prob = expProblem(&data);
  double z[3][3], se[3][3];
  for (int k = 0; k < 3; k++) {
    sysidOptions opt = options(kMethods[k]);
    double zk[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, zk, &res.res), 0);
    std::printf(
        "[ exp fit    ] %-11s %-18s iterations %3d evaluations %4d jacobians %3d "
        "F %.6e z (%.6f %.6f %.6f) stderr (%.5f %.5f %.5f)\n",
        kMethodNames[k], res->status, res->iterations, res->evaluations, res->jacobians, res->F,
        zk[0], zk[1], zk[2], res->stderr_z[0], res->stderr_z[1], res->stderr_z[2]);
    EXPECT_EQ(std::string(res->status).rfind("converged", 0), 0u) << res->status;
    for (int j = 0; j < 3; j++) {
      z[k][j] = zk[j];
      se[k][j] = res->stderr_z[j];
      ASSERT_TRUE(std::isfinite(se[k][j]) && se[k][j] > 0);
      // the true values within 3 standard errors
      EXPECT_LT(std::fabs(zk[j] - kTrue[j]), 3 * se[k][j]) << kMethodNames[k] << " " << j;
    }
  }
  for (int j = 0; j < 3; j++) {
    // exact and FD agree (both converge to the same minimum; FD Jacobian errors ~1e-8)
    EXPECT_NEAR(z[1][j], z[0][j], 1e-7 * (1 + std::fabs(z[0][j])));
    EXPECT_NEAR(se[1][j], se[0][j], 1e-4 * se[0][j]);
    // Nelder-Mead: a small fraction of a standard error
    EXPECT_NEAR(z[2][j], z[0][j], 1e-3 * se[0][j]);
    EXPECT_NEAR(se[2][j], se[0][j], 1e-3 * se[0][j]);
  }
}

TEST(SysidOptim, StandardErrorsMonteCarlo) {
  const int kDatasets = 200;
  double sum[3] = {0}, sum2[3] = {0}, sumse[3] = {0};
  for (int d = 0; d < kDatasets; d++) {
    ExpFit data(1000 + d);
    sysidProblem prob = expProblem(&data);
    sysidOptions opt = options(SYSID_LM_EXACT);
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
    ASSERT_EQ(std::string(res->status).rfind("converged", 0), 0u) << res->status;
    for (int j = 0; j < 3; j++) {
      sum[j] += z[j];
      sum2[j] += z[j] * z[j];
      sumse[j] += res->stderr_z[j];
    }
  }
  for (int j = 0; j < 3; j++) {
    double mean = sum[j] / kDatasets;
    double sd = std::sqrt((sum2[j] - kDatasets * mean * mean) / (kDatasets - 1));
    double se = sumse[j] / kDatasets;
    std::printf(
        "[ monte carlo] %c: mean %.5f (true %.2f) sd of estimates %.5f, mean stderr %.5f, "
        "ratio %.3f\n",
        "abc"[j], mean, kTrue[j], sd, se, se / sd);
    EXPECT_NEAR(se / sd, 1, 0.2) << "abc"[j];
    EXPECT_NEAR(mean, kTrue[j], 4 * sd / std::sqrt((double)kDatasets));
  }
}

// each kind of bound with the optimum at the bound
TEST(SysidOptim, Bounds) {
  struct Case {
    int var;
    double lo, hi, bound, start;
  };
  const Case cases[] = {
      {2, 0, 0.3, 0.3, 0},          // c in [0, 0.3], starting at the lower bound
      {1, 1.5, INFINITY, 1.5, 2},   // b >= 1.5
      {0, -INFINITY, 1.8, 1.8, 1},  // a <= 1.8
  };
  for (const Case& c : cases) {
    // reference: the fit with the variable held at its bound, and its gradient pushing outward
    ExpFit ref(777);
    ref.fixed = c.var;
    ref.fixed_value = c.bound;
    sysidProblem rprob = expProblem(&ref);
    sysidOptions ropt = options(SYSID_LM_EXACT);
    double zr2[2] = {1, 1};
    Result rres;
    ASSERT_EQ(sysid_solve(&rprob, &ropt, zr2, &rres.res), 0);
    double zr[3];
    for (int j = 0, k = 0; j < 3; j++) zr[j] = j == c.var ? c.bound : zr2[k++];
    {
      ExpFit full(777);
      std::vector<double> r(full.m()), J(full.m() * 3);
      expFit(&full, zr, r.data(), J.data());
      double g = 0;  // dF/dz_var
      for (int i = 0; i < full.m(); i++) g += J[i * 3 + c.var] * r[i];
      EXPECT_TRUE(std::isfinite(c.hi) ? g < 0 : g > 0) << "the bound is not active: " << g;
    }

    double lo[3] = {-INFINITY, -INFINITY, -INFINITY}, hi[3] = {INFINITY, INFINITY, INFINITY};
    lo[c.var] = c.lo;
    hi[c.var] = c.hi;
    for (int k = 0; k < 3; k++) {
      ExpFit data(777);
      sysidProblem prob = expProblem(&data, lo, hi);
      sysidOptions opt = options(kMethods[k]);
      double z[3] = {1, 1, 0};
      z[c.var] = c.start;
      Result res;
      ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
      std::printf(
          "[ bounds     ] var %c in [%g, %g] %-11s %-18s iterations %3d z (%.8f %.8f "
          "%.8f) ref (%.8f %.8f %.8f)\n",
          "abc"[c.var], c.lo, c.hi, kMethodNames[k], res->status, res->iterations, z[0], z[1], z[2],
          zr[0], zr[1], zr[2]);
      EXPECT_EQ(std::string(res->status).rfind("converged", 0), 0u) << res->status;
      EXPECT_EQ(data.calls.outside, 0) << kMethodNames[k];
      EXPECT_GE(z[c.var], c.lo);
      EXPECT_LE(z[c.var], c.hi);
      double tol = k == 2 ? 1e-5 : 1e-6;
      EXPECT_NEAR(z[c.var], c.bound, tol) << kMethodNames[k];
      for (int j = 0; j < 3; j++) EXPECT_NEAR(z[j], zr[j], 10 * tol) << kMethodNames[k] << j;
    }
  }
}

// lo = hi: the variable stays put, the others fit as if it were removed; its standard error is
// 0, the others' come from the remaining columns with m - (n - 1) degrees of freedom
TEST(SysidOptim, FixedVariable) {
  ExpFit ref(777);
  ref.fixed = 2;
  ref.fixed_value = 0.4;
  sysidProblem rprob = expProblem(&ref);
  sysidOptions ropt = options(SYSID_LM_EXACT);
  double zr[2] = {1, 1};
  Result rres;
  ASSERT_EQ(sysid_solve(&rprob, &ropt, zr, &rres.res), 0);

  double lo[3] = {-INFINITY, -INFINITY, 0.4}, hi[3] = {INFINITY, INFINITY, 0.4};
  for (int k = 0; k < 3; k++) {
    ExpFit data(777);
    sysidProblem prob = expProblem(&data, lo, hi);
    sysidOptions opt = options(kMethods[k]);
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
    EXPECT_EQ(std::string(res->status).rfind("converged", 0), 0u) << res->status;
    EXPECT_EQ(z[2], 0.4);
    EXPECT_EQ(data.calls.outside, 0);
    double tol = k == 2 ? 1e-4 : 1e-5;
    EXPECT_NEAR(z[0], zr[0], tol) << kMethodNames[k];
    EXPECT_NEAR(z[1], zr[1], tol) << kMethodNames[k];
    EXPECT_EQ(res->stderr_z[2], 0);
    EXPECT_NEAR(res->stderr_z[0], rres->stderr_z[0], 1e-2 * rres->stderr_z[0]);
    EXPECT_NEAR(res->stderr_z[1], rres->stderr_z[1], 1e-2 * rres->stderr_z[1]);
  }
}

// r = (log z1 - 0.7, log z2 + 0.3), undefined for z <= 0
struct LogProblem {
  Calls calls;
  int nan_mode = 0;  // 0: return 1 where undefined; 1: return NaN residuals
  int failures = 0;
};

int logResidual(void* user, const double* z, double* r, double* J) {
  LogProblem* p = static_cast<LogProblem*>(user);
  p->calls.record(z, J);
  if (z[0] <= 0 || z[1] <= 0) {
    p->failures++;
    if (!p->nan_mode) return 1;
  }
  r[0] = std::log(z[0]) - 0.7;
  r[1] = std::log(z[1]) + 0.3;
  if (J) {
    J[0] = 1 / z[0];
    J[1] = 0;
    J[2] = 0;
    J[3] = 1 / z[1];
  }
  return 0;
}

TEST(SysidOptim, FailingResidual) {
  for (int nan_mode = 0; nan_mode < 2; nan_mode++) {
    for (int k = 0; k < 3; k++) {
      LogProblem p;
      p.nan_mode = nan_mode;
      sysidProblem prob = {2, 2, nullptr, nullptr, logResidual, &p};
      sysidOptions opt = options(kMethods[k]);
      double z[2] = {10, 10};
      Result res;
      ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
      std::printf("[ failing    ] %s %-11s %-18s iterations %3d failed calls %d\n",
                  nan_mode ? "NaN     " : "nonzero ", kMethodNames[k], res->status, res->iterations,
                  p.failures);
      EXPECT_EQ(std::string(res->status).rfind("converged", 0), 0u) << res->status;
      EXPECT_NEAR(z[0], std::exp(0.7), 1e-8) << kMethodNames[k];
      EXPECT_NEAR(z[1], std::exp(-0.3), 1e-8) << kMethodNames[k];
      // the first Gauss-Newton step (z -> z - z log(z / z*)) leaves the domain
      if (k < 2) {
        EXPECT_GT(p.failures, 0);
      }
    }
  }

  // a start point that cannot be evaluated
  for (int k = 0; k < 3; k++) {
    LogProblem p;
    sysidProblem prob = {2, 2, nullptr, nullptr, logResidual, &p};
    sysidOptions opt = options(kMethods[k]);
    double z[2] = {-1, 1};
    Result res;
    EXPECT_EQ(sysid_solve(&prob, &opt, z, &res.res), -1);
    EXPECT_STREQ(res->status, "failed");
    EXPECT_EQ(res->stderr_z, nullptr);
    EXPECT_EQ(z[0], -1);
    EXPECT_EQ(z[1], 1);
  }
}

TEST(SysidOptim, Cancel) {
  for (int k = 0; k < 3; k++) {
    // set during the run
    volatile int cancel = 0;
    ExpFit data(4);
    data.calls.cancel = &cancel;
    data.calls.cancel_after = 8;
    sysidProblem prob = expProblem(&data);
    sysidOptions opt = options(kMethods[k]);
    opt.cancel = &cancel;
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
    EXPECT_STREQ(res->status, "interrupted") << kMethodNames[k];
    EXPECT_LE(res->F, res->F0);
    EXPECT_LE(res->iterations, 8);
    EXPECT_GT(res->iterations, 0);

    // set before the start: no iteration
    ExpFit data2(4);
    sysidProblem prob2 = expProblem(&data2);
    double z2[3] = {1, 1, 0};
    Result res2;
    ASSERT_EQ(sysid_solve(&prob2, &opt, z2, &res2.res), 0);
    EXPECT_STREQ(res2->status, "interrupted");
    EXPECT_EQ(res2->iterations, 0);
    EXPECT_LE(res2->F, res2->F0);
    if (kMethods[k] != SYSID_NELDER_MEAD) {  // (Nelder-Mead: the best vertex of its simplex)
      EXPECT_EQ(res2->F, res2->F0);
      EXPECT_EQ(z2[0], 1);
      EXPECT_EQ(z2[1], 1);
      EXPECT_EQ(z2[2], 0);
    }
  }
}

TEST(SysidOptim, MaxIterations) {
  for (int k = 0; k < 3; k++) {
    Calls calls;
    sysidProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls};
    sysidOptions opt = options(kMethods[k]);
    opt.max_iter = 3;
    double z[2] = {-1.2, 1};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
    EXPECT_STREQ(res->status, "max iterations");
    EXPECT_EQ(res->iterations, 3);
  }
}

TEST(SysidOptim, EvaluationCounts) {
  const int n = 3;
  for (int max_iter : {4, 0}) {
    // 4 iterations: every step accepted (the same path for exact and FD); 0: to convergence
    Result res[3];
    for (int k = 0; k < 3; k++) {
      ExpFit data(99);
      sysidProblem prob = expProblem(&data);
      sysidOptions opt = options(kMethods[k]);
      opt.max_iter = max_iter;
      double z[3] = {1, 1, 0};
      ASSERT_EQ(sysid_solve(&prob, &opt, z, &res[k].res), 0);
      // the counts are the calls made
      EXPECT_EQ(res[k]->evaluations, data.calls.plain) << kMethodNames[k];
      EXPECT_EQ(res[k]->jacobians, data.calls.withJ) << kMethodNames[k];
    }
    std::printf(
        "[ counts     ] max_iter %d: exact %d iterations, %d evaluations, %d jacobians; "
        "FD %d iterations, %d evaluations; Nelder-Mead %d iterations, %d evaluations\n",
        max_iter, res[0]->iterations, res[0]->evaluations, res[0]->jacobians, res[1]->iterations,
        res[1]->evaluations, res[2]->iterations, res[2]->evaluations);
    // exact: one evaluation per trial step, one call with J at the start and per accepted step
    EXPECT_EQ(res[0]->evaluations, res[0]->iterations);
    EXPECT_EQ(res[1]->jacobians, 0);
    EXPECT_EQ(res[2]->jacobians, 0);
    if (max_iter == 4) {
      EXPECT_STREQ(res[0]->status, "max iterations");
      EXPECT_EQ(res[0]->jacobians, 1 + 4);
      // FD: n evaluations in place of each call with J, plus the start point and the Jacobian
      // in z for the standard errors
      EXPECT_EQ(res[1]->iterations, 4);
      EXPECT_EQ(res[1]->evaluations, res[0]->evaluations + n * res[0]->jacobians + 1 + n);
    } else {
      // FD: 1 + iterations + n (1 + accepted) + n, accepted <= iterations
      int rest = res[1]->evaluations - 1 - res[1]->iterations - 2 * n;
      EXPECT_EQ(rest % n, 0);
      EXPECT_GE(rest / n, 1);
      EXPECT_LE(rest / n, res[1]->iterations);
      // Nelder-Mead: n + 1 for the simplex, 1 to 2 per iteration or n more for a shrink, n + 1
      // for the final residual and Jacobian
      EXPECT_GE(res[2]->evaluations, 2 * n + 2 + res[2]->iterations);
    }
  }
}

// r_i = (a + b) t_i - y_i: J'J singular; LM still converges; standard errors NaN
int sumFit(void* user, const double* z, double* r, double* J) {
  (void)user;
  for (int i = 0; i < 10; i++) {
    double t = 0.1 * i;
    r[i] = (z[0] + z[1]) * t - (3 * t + 0.01 * std::sin(7.0 * i));
    if (J) J[2 * i] = J[2 * i + 1] = t;
  }
  return 0;
}

TEST(SysidOptim, SingularStandardErrors) {
  for (int k = 0; k < 3; k++) {
    sysidProblem prob = {2, 10, nullptr, nullptr, sumFit, nullptr};
    sysidOptions opt = options(kMethods[k]);
    double z[2] = {0, 0};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
    EXPECT_EQ(std::string(res->status).rfind("converged", 0), 0u) << res->status;
    double sum = 0, st = 0, tt = 0;
    for (int i = 0; i < 10; i++) {
      double t = 0.1 * i;
      st += t * (3 * t + 0.01 * std::sin(7.0 * i));
      tt += t * t;
    }
    sum = st / tt;
    EXPECT_NEAR(z[0] + z[1], sum, 1e-6) << kMethodNames[k];
    EXPECT_TRUE(std::isnan(res->stderr_z[0]) && std::isnan(res->stderr_z[1]))
        << kMethodNames[k] << " " << res->stderr_z[0];
  }
}

TEST(SysidOptim, GradientAtStart) {
  for (int k = 0; k < 2; k++) {
    Calls calls;
    sysidProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls};
    sysidOptions opt = options(kMethods[k]);
    double z[2] = {1, 1};
    Result res;
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
    EXPECT_STREQ(res->status, "converged (gtol)");
    EXPECT_EQ(res->iterations, 0);
    EXPECT_EQ(res->F, 0);
  }
}

TEST(SysidOptim, Verbose) {
  for (int k = 0; k < 3; k++) {
    ExpFit data(5);
    sysidProblem prob = expProblem(&data);
    sysidOptions opt = options(kMethods[k]);
    opt.verbose = 1;
    double z[3] = {1, 1, 0};
    Result res;
    testing::internal::CaptureStderr();
    ASSERT_EQ(sysid_solve(&prob, &opt, z, &res.res), 0);
    std::string out = testing::internal::GetCapturedStderr();
    std::vector<std::string> lines;
    for (size_t a = 0, b; a < out.size(); a = b + 1) {
      b = out.find('\n', a);
      ASSERT_NE(b, std::string::npos);
      lines.push_back(out.substr(a, b - a));
    }
    // a header, iteration 0, one line per iteration, all of one width
    ASSERT_EQ((int)lines.size(), res->iterations + 2) << out;
    EXPECT_NE(lines[0].find("lambda"), std::string::npos);
    for (const std::string& l : lines) EXPECT_EQ(l.size(), lines[0].size()) << l;
    if (k == 0) std::printf("%s", out.c_str());
  }
}

TEST(SysidOptim, Deterministic) {
  for (int k = 0; k < 3; k++) {
    double z[2][3];
    double F[2];
    for (int run = 0; run < 2; run++) {
      ExpFit data(31);
      sysidProblem prob = expProblem(&data);
      sysidOptions opt = options(kMethods[k]);
      z[run][0] = 1;
      z[run][1] = 1;
      z[run][2] = 0;
      Result res;
      ASSERT_EQ(sysid_solve(&prob, &opt, z[run], &res.res), 0);
      F[run] = res->F;
    }
    EXPECT_EQ(std::memcmp(z[0], z[1], sizeof(z[0])), 0);
    EXPECT_EQ(F[0], F[1]);
  }
}

TEST(SysidOptim, InvalidInput) {
  Calls calls;
  sysidOptions opt = options(SYSID_LM_EXACT);
  double z[2] = {-1.2, 1};
  Result res;
  sysidProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls};

  double lo[2] = {0, 0}, hi[2] = {1, -1};  // lo > hi
  sysidProblem bad = prob;
  bad.lo = lo;
  bad.hi = hi;
  EXPECT_EQ(sysid_solve(&bad, &opt, z, &res.res), -1);
  EXPECT_STREQ(res->status, "failed");
  bad = prob;
  bad.n = 0;
  EXPECT_EQ(sysid_solve(&bad, &opt, z, &res.res), -1);
  bad = prob;
  bad.residual = nullptr;
  EXPECT_EQ(sysid_solve(&bad, &opt, z, &res.res), -1);
  sysidOptions badopt = opt;
  badopt.fd_eps = 0;
  EXPECT_EQ(sysid_solve(&prob, &badopt, z, &res.res), -1);
  badopt = opt;
  badopt.method = (sysidMethod)7;
  EXPECT_EQ(sysid_solve(&prob, &badopt, z, &res.res), -1);
  double znan[2] = {NAN, 1};
  EXPECT_EQ(sysid_solve(&prob, &opt, znan, &res.res), -1);
  EXPECT_EQ(sysid_solve(&prob, &opt, z, nullptr), -1);
  EXPECT_EQ(calls.plain + calls.withJ, 0);
  EXPECT_EQ(z[0], -1.2);
}

}  // namespace
