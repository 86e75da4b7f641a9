// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The library's least-squares optimisers (optim/lsq.c, <mjdiff/optim.h>; mjdiff-sysid's):
// Levenberg-Marquardt with exact and forward-difference Jacobians and Nelder-Mead, on problems with
// known answers.
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
//   one call with J), standard errors NaN when m <= n or J'J is singular, the progress callback,
//   determinism, invalid input.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <mjdiff/optim.h>
}

namespace {

const mjdiffLsqMethod kMethods[] = {MJDIFF_LSQ_LM, MJDIFF_LSQ_LM_FD, MJDIFF_LSQ_NELDER_MEAD};
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
  mjdiffLsqResult res;
  Result() {
    std::memset(&res, 0, sizeof(res));
  }
  ~Result() {
    mjdiff_freeLsqResult(&res);
  }
  mjdiffLsqResult* operator->() {
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

mjdiffLsqProblem expProblem(ExpFit* p, const double* lo = nullptr, const double* hi = nullptr) {
  mjdiffLsqProblem prob;
  std::memset(&prob, 0, sizeof(prob));
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

mjdiffLsqOptions options(mjdiffLsqMethod method) {
  mjdiffLsqOptions opt;
  mjdiff_defaultLsqOptions(&opt);
  opt.method = method;
  return opt;
}

//---------------------------------- tests --------------------------------------------------------

TEST(Lsq, DefaultOptions) {
  mjdiffLsqOptions opt;
  std::memset(&opt, 0xff, sizeof(opt));
  mjdiff_defaultLsqOptions(&opt);
  EXPECT_EQ(opt.method, MJDIFF_LSQ_LM);
  EXPECT_EQ(opt.max_iter, -1);  // the method's default: 100, Nelder-Mead 200 n
  EXPECT_EQ(opt.solver, MJDIFF_LSQ_AUTO);
  EXPECT_EQ(opt.cond_max, 1e10);
  EXPECT_EQ(opt.ftol, 1e-10);
  EXPECT_EQ(opt.xtol, 1e-10);
  EXPECT_EQ(opt.gtol, 1e-12);
  EXPECT_EQ(opt.fd_eps, 1e-6);
  EXPECT_EQ(opt.progress, nullptr);
  EXPECT_EQ(opt.cancel, nullptr);
  mjdiff_freeLsqResult(nullptr);  // NULL-safe
}

TEST(Lsq, Rosenbrock) {
  for (int k = 0; k < 3; k++) {
    Calls calls;
    mjdiffLsqProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls, 0, 0, 0, nullptr};
    mjdiffLsqOptions opt = options(kMethods[k]);
    double z[2] = {-1.2, 1};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK) << kMethodNames[k];
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

TEST(Lsq, ExponentialFit) {
  ExpFit data(12345);
  mjdiffLsqProblem prob = expProblem(&data);
  double z[3][3], se[3][3];
  for (int k = 0; k < 3; k++) {
    mjdiffLsqOptions opt = options(kMethods[k]);
    double zk[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, zk, &res.res, nullptr, 0), MJDIFF_OK);
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

TEST(Lsq, StandardErrorsMonteCarlo) {
  const int kDatasets = 200;
  double sum[3] = {0}, sum2[3] = {0}, sumse[3] = {0};
  for (int d = 0; d < kDatasets; d++) {
    ExpFit data(1000 + d);
    mjdiffLsqProblem prob = expProblem(&data);
    mjdiffLsqOptions opt = options(MJDIFF_LSQ_LM);
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
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
TEST(Lsq, Bounds) {
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
    mjdiffLsqProblem rprob = expProblem(&ref);
    mjdiffLsqOptions ropt = options(MJDIFF_LSQ_LM);
    double zr2[2] = {1, 1};
    Result rres;
    ASSERT_EQ(mjdiff_lsqSolve(&rprob, &ropt, zr2, &rres.res, nullptr, 0), MJDIFF_OK);
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
      mjdiffLsqProblem prob = expProblem(&data, lo, hi);
      mjdiffLsqOptions opt = options(kMethods[k]);
      double z[3] = {1, 1, 0};
      z[c.var] = c.start;
      Result res;
      ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
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
TEST(Lsq, FixedVariable) {
  ExpFit ref(777);
  ref.fixed = 2;
  ref.fixed_value = 0.4;
  mjdiffLsqProblem rprob = expProblem(&ref);
  mjdiffLsqOptions ropt = options(MJDIFF_LSQ_LM);
  double zr[2] = {1, 1};
  Result rres;
  ASSERT_EQ(mjdiff_lsqSolve(&rprob, &ropt, zr, &rres.res, nullptr, 0), MJDIFF_OK);

  double lo[3] = {-INFINITY, -INFINITY, 0.4}, hi[3] = {INFINITY, INFINITY, 0.4};
  for (int k = 0; k < 3; k++) {
    ExpFit data(777);
    mjdiffLsqProblem prob = expProblem(&data, lo, hi);
    mjdiffLsqOptions opt = options(kMethods[k]);
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
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

TEST(Lsq, FailingResidual) {
  for (int nan_mode = 0; nan_mode < 2; nan_mode++) {
    for (int k = 0; k < 3; k++) {
      LogProblem p;
      p.nan_mode = nan_mode;
      mjdiffLsqProblem prob = {2, 2, nullptr, nullptr, logResidual, &p, 0, 0, 0, nullptr};
      mjdiffLsqOptions opt = options(kMethods[k]);
      double z[2] = {10, 10};
      Result res;
      ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
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
    mjdiffLsqProblem prob = {2, 2, nullptr, nullptr, logResidual, &p, 0, 0, 0, nullptr};
    mjdiffLsqOptions opt = options(kMethods[k]);
    double z[2] = {-1, 1};
    Result res;
    char err[300] = "";
    EXPECT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, err, sizeof(err)), MJDIFF_ERR_NONFINITE);
    EXPECT_NE(std::string(err).find("start point"), std::string::npos) << err;
    EXPECT_STREQ(res->status, "failed");
    EXPECT_EQ(res->stderr_z, nullptr);
    EXPECT_EQ(z[0], -1);
    EXPECT_EQ(z[1], 1);
  }
}

TEST(Lsq, Cancel) {
  for (int k = 0; k < 3; k++) {
    // set during the run
    volatile int cancel = 0;
    ExpFit data(4);
    data.calls.cancel = &cancel;
    data.calls.cancel_after = 8;
    mjdiffLsqProblem prob = expProblem(&data);
    mjdiffLsqOptions opt = options(kMethods[k]);
    opt.cancel = &cancel;
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
    EXPECT_STREQ(res->status, "interrupted") << kMethodNames[k];
    EXPECT_LE(res->F, res->F0);
    EXPECT_LE(res->iterations, 8);
    EXPECT_GT(res->iterations, 0);

    // set before the start: no iteration
    ExpFit data2(4);
    mjdiffLsqProblem prob2 = expProblem(&data2);
    double z2[3] = {1, 1, 0};
    Result res2;
    ASSERT_EQ(mjdiff_lsqSolve(&prob2, &opt, z2, &res2.res, nullptr, 0), MJDIFF_OK);
    EXPECT_STREQ(res2->status, "interrupted");
    EXPECT_EQ(res2->iterations, 0);
    EXPECT_LE(res2->F, res2->F0);
    if (kMethods[k] != MJDIFF_LSQ_NELDER_MEAD) {  // (Nelder-Mead: the best vertex of its simplex)
      EXPECT_EQ(res2->F, res2->F0);
      EXPECT_EQ(z2[0], 1);
      EXPECT_EQ(z2[1], 1);
      EXPECT_EQ(z2[2], 0);
    }
  }
}

TEST(Lsq, MaxIterations) {
  for (int k = 0; k < 3; k++) {
    Calls calls;
    mjdiffLsqProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls, 0, 0, 0, nullptr};
    mjdiffLsqOptions opt = options(kMethods[k]);
    opt.max_iter = 3;
    double z[2] = {-1.2, 1};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
    EXPECT_STREQ(res->status, "max iterations");
    EXPECT_EQ(res->iterations, 3);
  }
}

TEST(Lsq, EvaluationCounts) {
  const int n = 3;
  for (int max_iter : {4, -1}) {
    // 4 iterations: every step accepted (the same path for exact and FD); -1: to convergence
    Result res[3];
    for (int k = 0; k < 3; k++) {
      ExpFit data(99);
      mjdiffLsqProblem prob = expProblem(&data);
      mjdiffLsqOptions opt = options(kMethods[k]);
      opt.max_iter = max_iter;
      double z[3] = {1, 1, 0};
      ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res[k].res, nullptr, 0), MJDIFF_OK);
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

TEST(Lsq, SingularStandardErrors) {
  for (int k = 0; k < 3; k++) {
    mjdiffLsqProblem prob = {2, 10, nullptr, nullptr, sumFit, nullptr, 0, 0, 0, nullptr};
    mjdiffLsqOptions opt = options(kMethods[k]);
    double z[2] = {0, 0};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
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

TEST(Lsq, GradientAtStart) {
  for (int k = 0; k < 2; k++) {
    Calls calls;
    mjdiffLsqProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls, 0, 0, 0, nullptr};
    mjdiffLsqOptions opt = options(kMethods[k]);
    double z[2] = {1, 1};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
    EXPECT_STREQ(res->status, "converged (gtol)");
    EXPECT_EQ(res->iterations, 0);
    EXPECT_EQ(res->F, 0);
  }
}

// the progress callback's reports
struct Reports {
  std::vector<mjdiffLsqProgress> list;
};

void collect(void* user, const mjdiffLsqProgress* info) {
  static_cast<Reports*>(user)->list.push_back(*info);
}

TEST(Lsq, Progress) {
  for (int k = 0; k < 3; k++) {
    ExpFit data(5);
    mjdiffLsqProblem prob = expProblem(&data);
    mjdiffLsqOptions opt = options(kMethods[k]);
    Reports rep;
    opt.progress = collect;
    opt.progress_user = &rep;
    double z[3] = {1, 1, 0};
    Result res;
    testing::internal::CaptureStderr();
    testing::internal::CaptureStdout();
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
    std::string out = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
    EXPECT_EQ(out, "") << "the library printed";
    // the start point, then one report per iteration, iterations counting up, F never rising
    ASSERT_EQ((int)rep.list.size(), res->iterations + 1) << kMethodNames[k];
    for (size_t i = 0; i < rep.list.size(); i++) {
      EXPECT_EQ(rep.list[i].iter, (int)i);
      if (i) {
        EXPECT_LE(rep.list[i].F, rep.list[i - 1].F);
        EXPECT_GE(rep.list[i].evals, rep.list[i - 1].evals);
      }
    }
    if (k < 2) {
      EXPECT_TRUE(std::isnan(rep.list[0].step));  // Nelder-Mead: the simplex's size
    }
    EXPECT_EQ(rep.list.back().F, res->F);
    EXPECT_EQ(std::isnan(rep.list.back().lambda), k == 2) << kMethodNames[k];
  }
}

// max_iter 0: no step, the start point's cost and standard errors, not converged, not reliable
TEST(Lsq, ZeroIterations) {
  for (int k = 0; k < 3; k++) {
    ExpFit data(8);
    mjdiffLsqProblem prob = expProblem(&data);
    mjdiffLsqOptions opt = options(kMethods[k]);
    opt.max_iter = 0;
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
    EXPECT_EQ(res->iterations, 0) << kMethodNames[k];
    EXPECT_STREQ(res->status, "max iterations");
    EXPECT_EQ(res->converged, 0);
    EXPECT_EQ(res->reliable, 0);
    EXPECT_EQ(res->F, res->F0);
    EXPECT_EQ(z[0], 1);
    EXPECT_EQ(z[1], 1);
    EXPECT_EQ(z[2], 0);
    EXPECT_TRUE(std::isfinite(res->stderr_z[0]));
  }
}

// a converged, well-posed fit is reliable with a moderate inflation factor; a singular one is not
TEST(Lsq, Reliability) {
  for (int k = 0; k < 3; k++) {
    ExpFit data(12);
    mjdiffLsqProblem prob = expProblem(&data);
    mjdiffLsqOptions opt = options(kMethods[k]);
    double z[3] = {1, 1, 0};
    Result res;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z, &res.res, nullptr, 0), MJDIFF_OK);
    EXPECT_EQ(res->converged, 1) << res->status;
    EXPECT_EQ(res->reliable, 1) << kMethodNames[k];
    EXPECT_GE(res->cond, 1.0);
    EXPECT_LT(res->cond, 1e3);
    // the same fit with cond_max below its inflation factor: converged but flagged
    opt.cond_max = res->cond / 2;
    double z2[3] = {1, 1, 0};
    Result res2;
    ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z2, &res2.res, nullptr, 0), MJDIFF_OK);
    EXPECT_EQ(res2->converged, 1);
    EXPECT_EQ(res2->reliable, 0);

    mjdiffLsqProblem sing = {2, 10, nullptr, nullptr, sumFit, nullptr, 0, 0, 0, nullptr};
    mjdiffLsqOptions o2 = options(kMethods[k]);
    double zs[2] = {0, 0};
    Result rs;
    ASSERT_EQ(mjdiff_lsqSolve(&sing, &o2, zs, &rs.res, nullptr, 0), MJDIFF_OK);
    EXPECT_EQ(rs->converged, 1);
    EXPECT_EQ(rs->reliable, 0) << kMethodNames[k];
    EXPECT_FALSE(rs->cond <= 1e10) << rs->cond;
  }
}

//---------------------------------- block structure ----------------------------------------------
//
// A multiple-shooting-like problem: p (np = 3: a decay rate, a gain, and a third held fixed or
// bounded), B blocks of bs = 3 "window start states" d_b. Block b's residuals depend on p and d_b
// (measurements of a nonlinear map of them), its continuity rows on p, d_b and d_{b+1}
// (phi(p, d_b) - d_{b+1}), a prior row on p. The dense Jacobian gives the dense solve; its blocks
// (extracted from J'J, with a guard that every entry outside them is zero) the block solve.
// They must agree: the same iterations, and points, costs and standard errors of p to rounding.

struct BlockFit {
  int np = 3, B, bs = 3, rows_per_block = 7;
  std::vector<double> data;
  int calls = 0;
  explicit BlockFit(int nblocks, unsigned long long seed) : B(nblocks) {
    data.resize((size_t)B * rows_per_block);
    for (double& x : data) x = 0.3 * gaussian(&seed);
  }
  int n() const { return np + B * bs; }
  int m() const { return B * rows_per_block + (B - 1) * bs + 1; }
};

// residuals and the dense Jacobian (J may be NULL)
int blockResidual(void* user, const double* z, double* r, double* J) {
  BlockFit* f = static_cast<BlockFit*>(user);
  f->calls++;
  int n = f->n(), row = 0;
  const double* p = z;
  if (J) std::memset(J, 0, sizeof(double) * (size_t)n * f->m());
  for (int b = 0; b < f->B; b++) {
    const double* d = z + f->np + b * f->bs;
    int o = f->np + b * f->bs;
    for (int i = 0; i < f->rows_per_block; i++, row++) {
      double t = 0.1 * (i + 1);
      double e = std::exp(-p[0] * t);
      double v = d[i % 3] * e + p[1] * std::sin(d[(i + 1) % 3] + t) + p[2] * t * d[(i + 2) % 3];
      r[row] = v - f->data[(size_t)b * f->rows_per_block + i];
      if (J) {
        double* Jr = J + (size_t)n * row;
        Jr[0] = -t * d[i % 3] * e;
        Jr[1] = std::sin(d[(i + 1) % 3] + t);
        Jr[2] = t * d[(i + 2) % 3];
        Jr[o + i % 3] += e;
        Jr[o + (i + 1) % 3] += p[1] * std::cos(d[(i + 1) % 3] + t);
        Jr[o + (i + 2) % 3] += p[2] * t;
      }
    }
    if (b + 1 < f->B) {
      // continuity: phi(p, d_b) - d_{b+1}, phi_i = d_i exp(-p0 0.8) + p1 0.1 d_{i+1}^2
      const double* dn = d + f->bs;
      for (int i = 0; i < f->bs; i++, row++) {
        double e = std::exp(-0.8 * p[0]);
        double dj = d[(i + 1) % 3];
        r[row] = 10 * (d[i] * e + 0.1 * p[1] * dj * dj - dn[i]);
        if (J) {
          double* Jr = J + (size_t)n * row;
          Jr[0] = 10 * (-0.8 * d[i] * e);
          Jr[1] = 10 * (0.1 * dj * dj);
          Jr[o + i] += 10 * e;
          Jr[o + (i + 1) % 3] += 10 * 0.2 * p[1] * dj;
          Jr[o + f->bs + i] = -10;
        }
      }
    }
  }
  r[row] = (p[0] - 1) / 2;  // prior
  if (J) J[(size_t)n * row] = 0.5;
  row++;
  return row == f->m() ? 0 : 1;
}

int outsideBlocks = 0;  // guard: J'J entries outside the block pattern that are nonzero

int blockNormal(void* user, const double* z, double* r, mjdiffLsqBlocks* H) {
  BlockFit* f = static_cast<BlockFit*>(user);
  if (!H) return blockResidual(user, z, r, nullptr);
  int n = f->n(), m = f->m(), np = f->np, bs = f->bs;
  std::vector<double> J((size_t)n * m);
  if (blockResidual(user, z, r, J.data())) return 1;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      double a = 0;
      for (int k = 0; k < m; k++) a += J[(size_t)k * n + i] * J[(size_t)k * n + j];
      int bi = i < np ? -1 : (i - np) / bs, bj = j < np ? -1 : (j - np) / bs;
      int ii = (i - np) % bs, jj = (j - np) % bs;
      if (bi < 0 && bj < 0) {
        H->Hpp[i * np + j] += a;
      } else if (bi >= 0 && bj < 0) {
        H->Hdp[(size_t)bi * bs * np + ii * np + j] += a;
      } else if (bi >= 0 && bi == bj) {
        H->Hdd[(size_t)bi * bs * bs + ii * bs + jj] += a;
      } else if (bi >= 0 && bj == bi + 1) {
        H->Hdo[(size_t)bi * bs * bs + ii * bs + jj] += a;
      } else if (!(bi < 0 || bj == bi - 1) && a != 0) {
        outsideBlocks++;
      }
    }
    double g = 0;
    for (int k = 0; k < m; k++) g += J[(size_t)k * n + i] * r[k];
    H->g[i] += g;
  }
  return 0;
}

TEST(Lsq, BlocksAgreeWithDense) {
  for (int variant = 0; variant < 3; variant++) {
    for (int B : {1, 2, 5, 12}) {
      BlockFit fd(B, 100 + B), fb(B, 100 + B);
      int n = fd.n();
      // variant 0: free; 1: p0 >= 0.1, p1 in [-2, 2]; 2: p2 fixed (lo = hi)
      std::vector<double> lo(n, -INFINITY), hi(n, INFINITY);
      if (variant == 1) {
        lo[0] = 0.1;
        lo[1] = -2;
        hi[1] = 2;
      } else if (variant == 2) {
        lo[2] = hi[2] = 0.25;
      }
      mjdiffLsqProblem dense = {n, fd.m(), lo.data(), hi.data(), blockResidual, &fd,
                                fd.np, B, fd.bs, nullptr};
      mjdiffLsqProblem blocks = {n, fb.m(), lo.data(), hi.data(), nullptr, &fb,
                                 fb.np, B, fb.bs, blockNormal};
      std::vector<double> zd(n), zb(n);
      for (int j = 0; j < n; j++) zd[j] = zb[j] = j < 3 ? (j == 2 ? 0.25 : 0.7) : 0.1 * (j % 5);
      mjdiffLsqOptions opt = options(MJDIFF_LSQ_LM);
      opt.ftol = opt.xtol = 1e-14;  // both to the same point, not stopped early by rounding
      opt.max_iter = 2000;
      mjdiffLsqOptions optb = opt;
      optb.solver = MJDIFF_LSQ_BLOCKS;
      Result rd, rb;
      outsideBlocks = 0;
      ASSERT_EQ(mjdiff_lsqSolve(&dense, &opt, zd.data(), &rd.res, nullptr, 0), MJDIFF_OK);
      ASSERT_EQ(mjdiff_lsqSolve(&blocks, &optb, zb.data(), &rb.res, nullptr, 0), MJDIFF_OK);
      EXPECT_EQ(outsideBlocks, 0) << "the problem is not block structured";
      SCOPED_TRACE("variant " + std::to_string(variant) + " B " + std::to_string(B));
      EXPECT_STREQ(rd->status, rb->status);
      EXPECT_EQ(rd->iterations, rb->iterations);
      EXPECT_GT(rd->iterations, 2);  // guard: a real solve, not the start point
      EXPECT_NEAR(rd->F, rb->F, 1e-10 * rd->F + 1e-14);
      EXPECT_GT(rd->F0, 2 * rd->F);
      // points within 1e-4 of a standard error (the dense fit's) of each other: the valley of
      // this problem is flat to rounding along some directions (inflation factors ~5e5)
      double dz = 0, moved = 0;
      for (int j = 0; j < n; j++) {
        if (rd->stderr_z[j] == 0) continue;
        ASSERT_TRUE(std::isfinite(rd->stderr_z[j]));
        dz = std::fmax(dz, std::fabs(zd[j] - zb[j]) / rd->stderr_z[j]);
        moved = std::fmax(moved, std::fabs(zd[j] - (j < 3 ? (j == 2 ? 0.25 : 0.7) : 0.1 * (j % 5))));
      }
      EXPECT_LT(dz, 1e-4) << "largest |z_dense - z_blocks| / stderr, " << rd->status << " "
                          << rd->iterations << " F " << rd->F << " cond " << rd->cond;
      EXPECT_GT(moved, 1e-3);
      for (int j = 0; j < 3; j++) {
        if (variant == 2 && j == 2) {
          EXPECT_EQ(rb->stderr_z[j], 0);
          continue;
        }
        EXPECT_TRUE(std::isfinite(rb->stderr_z[j]));
        EXPECT_NEAR(rd->stderr_z[j], rb->stderr_z[j], 1e-7 * rd->stderr_z[j]) << j;
      }
      for (int j = 3; j < n; j++) EXPECT_TRUE(std::isnan(rb->stderr_z[j]));
      EXPECT_TRUE(std::isfinite(rb->cond));
      EXPECT_EQ(rb->jacobians, rd->jacobians);
    }
  }
}

// block problems that cannot be solved as asked are rejected
TEST(Lsq, BlocksInvalid) {
  BlockFit f(3, 1);
  int n = f.n();
  std::vector<double> z(n, 0.1);
  mjdiffLsqOptions opt = options(MJDIFF_LSQ_LM);
  Result res;
  // sizes that do not add up
  mjdiffLsqProblem bad = {n, f.m(), nullptr, nullptr, nullptr, &f, f.np, 2, f.bs, blockNormal};
  char err[300] = "";
  EXPECT_EQ(mjdiff_lsqSolve(&bad, &opt, z.data(), &res.res, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("block structure"), std::string::npos) << err;
  // blocks asked without a normal function, or for Nelder-Mead
  mjdiffLsqProblem noNormal = {n, f.m(), nullptr, nullptr, blockResidual, &f, 0, 0, 0, nullptr};
  opt.solver = MJDIFF_LSQ_BLOCKS;
  EXPECT_EQ(mjdiff_lsqSolve(&noNormal, &opt, z.data(), &res.res, nullptr, 0), MJDIFF_ERR_VALUE);
  mjdiffLsqProblem onlyNormal = {n, f.m(), nullptr, nullptr, nullptr, &f, f.np, 3, f.bs, blockNormal};
  opt.method = MJDIFF_LSQ_NELDER_MEAD;
  opt.solver = MJDIFF_LSQ_AUTO;
  EXPECT_EQ(mjdiff_lsqSolve(&onlyNormal, &opt, z.data(), &res.res, err, sizeof(err)),
            MJDIFF_ERR_VALUE);  // NM needs residual
  EXPECT_NE(std::string(err).find("no residual"), std::string::npos) << err;
}

TEST(Lsq, Deterministic) {
  for (int k = 0; k < 3; k++) {
    double z[2][3];
    double F[2];
    for (int run = 0; run < 2; run++) {
      ExpFit data(31);
      mjdiffLsqProblem prob = expProblem(&data);
      mjdiffLsqOptions opt = options(kMethods[k]);
      z[run][0] = 1;
      z[run][1] = 1;
      z[run][2] = 0;
      Result res;
      ASSERT_EQ(mjdiff_lsqSolve(&prob, &opt, z[run], &res.res, nullptr, 0), MJDIFF_OK);
      F[run] = res->F;
    }
    EXPECT_EQ(std::memcmp(z[0], z[1], sizeof(z[0])), 0);
    EXPECT_EQ(F[0], F[1]);
  }
}

TEST(Lsq, InvalidInput) {
  Calls calls;
  mjdiffLsqOptions opt = options(MJDIFF_LSQ_LM);
  double z[2] = {-1.2, 1};
  Result res;
  mjdiffLsqProblem prob = {2, 2, nullptr, nullptr, rosenbrock, &calls, 0, 0, 0, nullptr};

  double lo[2] = {0, 0}, hi[2] = {1, -1};  // lo > hi
  mjdiffLsqProblem bad = prob;
  bad.lo = lo;
  bad.hi = hi;
  char err[300] = "";
  EXPECT_EQ(mjdiff_lsqSolve(&bad, &opt, z, &res.res, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("variable 1"), std::string::npos) << err;
  EXPECT_STREQ(res->status, "failed");
  bad = prob;
  bad.n = 0;
  EXPECT_EQ(mjdiff_lsqSolve(&bad, &opt, z, &res.res, nullptr, 0), MJDIFF_ERR_VALUE);
  bad = prob;
  bad.residual = nullptr;
  EXPECT_EQ(mjdiff_lsqSolve(&bad, &opt, z, &res.res, nullptr, 0), MJDIFF_ERR_VALUE);
  mjdiffLsqOptions badopt = opt;
  badopt.fd_eps = 0;
  EXPECT_EQ(mjdiff_lsqSolve(&prob, &badopt, z, &res.res, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("fd_eps"), std::string::npos) << err;
  badopt = opt;
  badopt.method = (mjdiffLsqMethod)7;
  EXPECT_EQ(mjdiff_lsqSolve(&prob, &badopt, z, &res.res, nullptr, 0), MJDIFF_ERR_VALUE);
  double znan[2] = {NAN, 1};
  EXPECT_EQ(mjdiff_lsqSolve(&prob, &opt, znan, &res.res, nullptr, 0), MJDIFF_ERR_VALUE);
  EXPECT_EQ(mjdiff_lsqSolve(&prob, &opt, z, nullptr, nullptr, 0), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(calls.plain + calls.withJ, 0);
  EXPECT_EQ(z[0], -1.2);
}

}  // namespace
