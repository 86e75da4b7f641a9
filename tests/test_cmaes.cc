// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// CMA-ES (optim/cmaes.c, <mjdiff/optim.h>) on problems with known answers.
//
//   Sphere f = |x|^2 in 10-D from x0 = 1 (sigma0 0.5): below 1e-8 within 10000 evaluations
//   (converged by tol_fun/tol_x, or by ftarget 1e-10).
//   Rosenbrock f = sum 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 in 4-D from 0: below 1e-8, at 1 (seed
//   1; 4-D Rosenbrock has a local minimum near (-0.78, 0.61, 0.38, 0.14), f 3.7, where 1 in 20
//   seeds end; measured: 1752 evaluations, sphere 2360 to 1.8e-15).
//   Bounds: f = sum (x_i - 2)^2 in [-1, 1]^3 (optimum outside the box): ends on x = 1 (within 1e-6),
//   and no candidate ever leaves the box; a variable with lo = hi stays at its value.
//   Determinism: the same seed gives bit-identical points and values; another seed another path.
//   Rejected samples: an objective that is NaN or inf on a half-space still converges to the
//   feasible optimum; an objective that is never finite ends by max evals without a crash.
//   Ask/tell order, option and argument errors with their status.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

extern "C" {
#include <mjdiff/optim.h>
}

namespace {

struct Calls {
  int n = 0;
  long count = 0;
  long outside = 0;
  const double* lo = nullptr;
  const double* hi = nullptr;
  std::vector<double> trace;  // every point and value, in order

  void record(const double* x, double f) {
    count++;
    for (int i = 0; i < n; i++) {
      if ((lo && x[i] < lo[i]) || (hi && x[i] > hi[i])) outside++;
      trace.push_back(x[i]);
    }
    trace.push_back(f);
  }
};

double sphere(void* user, const double* x) {
  Calls* c = static_cast<Calls*>(user);
  double f = 0;
  for (int i = 0; i < c->n; i++) f += x[i] * x[i];
  c->record(x, f);
  return f;
}

double rosenbrock(void* user, const double* x) {
  Calls* c = static_cast<Calls*>(user);
  double f = 0;
  for (int i = 0; i + 1 < c->n; i++) {
    double a = x[i + 1] - x[i] * x[i], b = 1 - x[i];
    f += 100 * a * a + b * b;
  }
  c->record(x, f);
  return f;
}

double shifted(void* user, const double* x) {  // optimum at 2, outside [-1, 1]
  Calls* c = static_cast<Calls*>(user);
  double f = 0;
  for (int i = 0; i < c->n; i++) f += (x[i] - 2) * (x[i] - 2);
  c->record(x, f);
  return f;
}

// (x - 0.5)^2 summed, undefined (NaN, or inf on alternate calls) where x_0 < 0.3: the optimum
// 0.5 is feasible, the start 1 too
double holed(void* user, const double* x) {
  Calls* c = static_cast<Calls*>(user);
  double f = 0;
  for (int i = 0; i < c->n; i++) f += (x[i] - 0.5) * (x[i] - 0.5);
  if (x[0] < 0.3) f = (c->count % 2) ? NAN : INFINITY;
  c->record(x, f);
  return f;
}

double never(void* user, const double* x) {
  Calls* c = static_cast<Calls*>(user);
  c->record(x, NAN);
  return NAN;
}

TEST(Cmaes, Defaults) {
  mjdiffCmaesOptions o;
  mjdiff_defaultCmaesOptions(&o);
  EXPECT_EQ(o.lambda, 0);
  EXPECT_EQ(o.sigma0, 0.3);
  EXPECT_TRUE(std::isinf(o.ftarget) && o.ftarget < 0);
  mjdiffCmaes* c = nullptr;
  std::vector<double> x0(10, 1.0);
  ASSERT_EQ(mjdiff_makeCmaes(10, x0.data(), nullptr, nullptr, &o, &c, nullptr, 0), MJDIFF_OK);
  EXPECT_EQ(mjdiff_cmaesLambda(c), 4 + (int)std::floor(3 * std::log(10.0)));  // 10
  mjdiff_freeCmaes(c);
  mjdiff_freeCmaes(nullptr);
}

TEST(Cmaes, Sphere10) {
  const int n = 10;
  std::vector<double> x(n, 1.0);
  mjdiffCmaesOptions o;
  mjdiff_defaultCmaesOptions(&o);
  o.sigma0 = 0.5;
  o.max_evals = 10000;
  Calls calls;
  calls.n = n;
  mjdiffCmaesInfo info;
  char err[200] = "";
  ASSERT_EQ(mjdiff_cmaesMinimize(n, x.data(), nullptr, nullptr, sphere, &calls, &o, &info, err,
                                 sizeof(err)),
            MJDIFF_OK)
      << err;
  double f = 0;
  for (double v : x) f += v * v;
  EXPECT_EQ(info.status, MJDIFF_OPTIM_CONVERGED);
  EXPECT_LT(info.fbest, 1e-8);
  EXPECT_EQ(f, info.fbest);  // x is the best point
  EXPECT_LE(info.evals, 10000);
  EXPECT_EQ(info.evals, calls.count);
  EXPECT_EQ(info.evals, (long)info.generations * 10);
  EXPECT_GT(info.sigma, 0);

  // the same, stopped by ftarget: sooner
  o.ftarget = 1e-10;
  std::vector<double> y(n, 1.0);
  Calls c2;
  c2.n = n;
  ASSERT_EQ(mjdiff_cmaesMinimize(n, y.data(), nullptr, nullptr, sphere, &c2, &o, &info, nullptr, 0),
            MJDIFF_OK);
  EXPECT_EQ(info.status, MJDIFF_OPTIM_TARGET);
  EXPECT_LE(info.fbest, 1e-10);
  EXPECT_LT(info.evals, calls.count);
}

TEST(Cmaes, Rosenbrock4) {
  const int n = 4;
  std::vector<double> x(n, 0.0);
  mjdiffCmaesOptions o;
  mjdiff_defaultCmaesOptions(&o);
  o.sigma0 = 0.5;
  o.max_evals = 20000;
  Calls calls;
  calls.n = n;
  mjdiffCmaesInfo info;
  ASSERT_EQ(mjdiff_cmaesMinimize(n, x.data(), nullptr, nullptr, rosenbrock, &calls, &o, &info,
                                 nullptr, 0),
            MJDIFF_OK);
  EXPECT_EQ(info.status, MJDIFF_OPTIM_CONVERGED);
  EXPECT_LT(info.fbest, 1e-8);
  for (int i = 0; i < n; i++) EXPECT_NEAR(x[i], 1, 1e-3) << i;
}

TEST(Cmaes, OptimumOutsideBox) {
  const int n = 3;
  double lo[n] = {-1, -1, -1}, hi[n] = {1, 1, 1};
  std::vector<double> x(n, 0.0);
  mjdiffCmaesOptions o;
  mjdiff_defaultCmaesOptions(&o);
  o.sigma0 = 0.5;
  o.max_evals = 5000;
  Calls calls;
  calls.n = n;
  calls.lo = lo;
  calls.hi = hi;
  mjdiffCmaesInfo info;
  ASSERT_EQ(mjdiff_cmaesMinimize(n, x.data(), lo, hi, shifted, &calls, &o, &info, nullptr, 0),
            MJDIFF_OK);
  EXPECT_EQ(calls.outside, 0);
  EXPECT_NE(info.status, MJDIFF_OPTIM_MAXEVALS);
  for (int i = 0; i < n; i++) {
    EXPECT_LE(x[i], 1);
    EXPECT_NEAR(x[i], 1, 1e-6) << i;
  }
  EXPECT_NEAR(info.fbest, 3, 1e-5);

  // the middle variable fixed at 0.25 (lo = hi), the others as before
  double lo2[n] = {-1, 0.25, -1}, hi2[n] = {1, 0.25, 1};
  std::vector<double> y = {0, 0.25, 0};
  Calls c2;
  c2.n = n;
  c2.lo = lo2;
  c2.hi = hi2;
  ASSERT_EQ(mjdiff_cmaesMinimize(n, y.data(), lo2, hi2, shifted, &c2, &o, &info, nullptr, 0),
            MJDIFF_OK);
  EXPECT_EQ(c2.outside, 0);
  EXPECT_EQ(y[1], 0.25);
  EXPECT_NEAR(y[0], 1, 1e-6);
  EXPECT_NEAR(y[2], 1, 1e-6);
}

TEST(Cmaes, Deterministic) {
  const int n = 5;
  mjdiffCmaesOptions o;
  mjdiff_defaultCmaesOptions(&o);
  o.max_evals = 600;
  o.seed = 42;
  double lo[n] = {-2, -2, -2, -2, -2}, hi[n] = {2, 2, 2, 2, 2};
  auto run = [&](unsigned long long seed, std::vector<double>* x, mjdiffCmaesInfo* info) {
    o.seed = seed;
    x->assign(n, 0.5);
    Calls c;
    c.n = n;
    EXPECT_EQ(mjdiff_cmaesMinimize(n, x->data(), lo, hi, rosenbrock, &c, &o, info, nullptr, 0),
              MJDIFF_OK);
    return c.trace;
  };
  std::vector<double> x1, x2, x3;
  mjdiffCmaesInfo i1, i2, i3;
  std::vector<double> t1 = run(42, &x1, &i1), t2 = run(42, &x2, &i2), t3 = run(43, &x3, &i3);
  ASSERT_EQ(t1.size(), t2.size());
  EXPECT_EQ(std::memcmp(t1.data(), t2.data(), t1.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(x1.data(), x2.data(), n * sizeof(double)), 0);
  EXPECT_EQ(i1.fbest, i2.fbest);
  EXPECT_EQ(i1.sigma, i2.sigma);
  EXPECT_EQ(i1.evals, i2.evals);
  ASSERT_GT(t3.size(), (size_t)n);
  EXPECT_NE(std::memcmp(t1.data(), t3.data(), n * sizeof(double)), 0);  // first candidate
  EXPECT_NE(i1.fbest, i3.fbest);
}

TEST(Cmaes, NonFiniteValues) {
  const int n = 3;
  std::vector<double> x(n, 1.0);
  mjdiffCmaesOptions o;
  mjdiff_defaultCmaesOptions(&o);
  o.sigma0 = 0.5;
  o.max_evals = 5000;
  Calls calls;
  calls.n = n;
  mjdiffCmaesInfo info;
  ASSERT_EQ(mjdiff_cmaesMinimize(n, x.data(), nullptr, nullptr, holed, &calls, &o, &info,
                                 nullptr, 0),
            MJDIFF_OK);
  EXPECT_TRUE(std::isfinite(info.fbest));
  EXPECT_LT(info.fbest, 1e-8);
  for (int i = 0; i < n; i++) EXPECT_NEAR(x[i], 0.5, 1e-3);

  // nothing ever finite: runs to max evals, the best stays inf and x stays x0
  std::vector<double> y(n, 1.0);
  Calls c2;
  c2.n = n;
  o.max_evals = 300;
  ASSERT_EQ(mjdiff_cmaesMinimize(n, y.data(), nullptr, nullptr, never, &c2, &o, &info, nullptr, 0),
            MJDIFF_OK);
  EXPECT_EQ(info.status, MJDIFF_OPTIM_MAXEVALS);
  EXPECT_LE(info.evals, 300);
  EXPECT_GT(info.evals, 300 - 7);  // lambda = 4 + floor(3 ln 3) = 7
  EXPECT_TRUE(std::isinf(info.fbest) && info.fbest > 0);
  for (int i = 0; i < n; i++) EXPECT_EQ(y[i], 1.0);
}

TEST(Cmaes, AskTell) {
  const int n = 2;
  double x0[n] = {0.5, -0.5}, lo[n] = {0, -1}, hi[n] = {1, 0};
  mjdiffCmaes* c = nullptr;
  mjdiffCmaesOptions o;
  mjdiff_defaultCmaesOptions(&o);
  o.lambda = 7;
  ASSERT_EQ(mjdiff_makeCmaes(n, x0, lo, hi, &o, &c, nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_cmaesLambda(c), 7);
  std::vector<double> X(7 * n), f(7);
  double xb[n], fb;
  mjdiff_cmaesBest(c, xb, &fb);
  EXPECT_EQ(xb[0], 0.5);
  EXPECT_TRUE(std::isinf(fb));
  mjdiffCmaesInfo info;
  EXPECT_EQ(mjdiff_cmaesDone(c, &info), 0);
  EXPECT_EQ(info.status, -1);
  EXPECT_EQ(mjdiff_cmaesTell(c, f.data()), MJDIFF_ERR_ARGUMENT);  // tell before ask
  ASSERT_EQ(mjdiff_cmaesAsk(c, X.data()), MJDIFF_OK);
  EXPECT_EQ(mjdiff_cmaesAsk(c, X.data()), MJDIFF_ERR_ARGUMENT);  // ask twice
  for (int k = 0; k < 7; k++) {
    EXPECT_GE(X[n * k], 0);
    EXPECT_LE(X[n * k], 1);
    EXPECT_GE(X[n * k + 1], -1);
    EXPECT_LE(X[n * k + 1], 0);
    f[k] = k;  // the first the best
  }
  ASSERT_EQ(mjdiff_cmaesTell(c, f.data()), MJDIFF_OK);
  EXPECT_EQ(mjdiff_cmaesTell(c, f.data()), MJDIFF_ERR_ARGUMENT);  // tell twice
  mjdiff_cmaesBest(c, xb, &fb);
  EXPECT_EQ(fb, 0);
  EXPECT_EQ(xb[0], X[0]);
  EXPECT_EQ(xb[1], X[1]);
  mjdiff_cmaesDone(c, &info);
  EXPECT_EQ(info.evals, 7);
  EXPECT_EQ(info.generations, 1);
  mjdiff_freeCmaes(c);
}

TEST(Cmaes, InvalidInput) {
  double x0[2] = {0, 0}, lo[2] = {-1, -1}, hi[2] = {1, 1};
  mjdiffCmaes* c = nullptr;
  char err[200];
  EXPECT_EQ(mjdiff_makeCmaes(0, x0, nullptr, nullptr, nullptr, &c, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::strstr(err, "n must be >= 1"), nullptr) << err;
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(mjdiff_makeCmaes(-3, x0, nullptr, nullptr, nullptr, &c, nullptr, 0), MJDIFF_ERR_VALUE);
  EXPECT_EQ(mjdiff_makeCmaes(2, nullptr, nullptr, nullptr, nullptr, &c, nullptr, 0),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_makeCmaes(2, x0, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
            MJDIFF_ERR_ARGUMENT);

  double badlo[2] = {-1, 0.5}, badhi[2] = {1, 0.2};
  EXPECT_EQ(mjdiff_makeCmaes(2, x0, badlo, badhi, nullptr, &c, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::strstr(err, "lo[1] = 0.5 must be <= hi[1] = 0.2"), nullptr) << err;

  double out[2] = {0, 2};
  EXPECT_EQ(mjdiff_makeCmaes(2, out, lo, hi, nullptr, &c, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::strstr(err, "x0[1] = 2 lies outside [-1, 1]"), nullptr) << err;

  double nanx[2] = {0, NAN};
  EXPECT_EQ(mjdiff_makeCmaes(2, nanx, lo, hi, nullptr, &c, err, sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::strstr(err, "x0[1]"), nullptr) << err;
  double infx[2] = {INFINITY, 0};
  EXPECT_EQ(mjdiff_makeCmaes(2, infx, nullptr, nullptr, nullptr, &c, nullptr, 0),
            MJDIFF_ERR_NONFINITE);

  double nanlo[2] = {NAN, -1};
  EXPECT_EQ(mjdiff_makeCmaes(2, x0, nanlo, hi, nullptr, &c, nullptr, 0), MJDIFF_ERR_VALUE);
  double fixlo[2] = {0, 0}, fixhi[2] = {0, 0};
  EXPECT_EQ(mjdiff_makeCmaes(2, x0, fixlo, fixhi, nullptr, &c, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::strstr(err, "fixed"), nullptr) << err;

  mjdiffCmaesOptions o;
  struct Bad {
    void (*set)(mjdiffCmaesOptions*);
    const char* word;
  } bad[] = {
      {[](mjdiffCmaesOptions* p) { p->lambda = 1; }, "lambda"},
      {[](mjdiffCmaesOptions* p) { p->lambda = -2; }, "lambda"},
      {[](mjdiffCmaesOptions* p) { p->sigma0 = 0; }, "sigma0"},
      {[](mjdiffCmaesOptions* p) { p->sigma0 = NAN; }, "sigma0"},
      {[](mjdiffCmaesOptions* p) { p->max_evals = 3; }, "max_evals"},
      {[](mjdiffCmaesOptions* p) { p->ftarget = NAN; }, "ftarget"},
      {[](mjdiffCmaesOptions* p) { p->tol_x = -1; }, "tol_x"},
      {[](mjdiffCmaesOptions* p) { p->tol_fun = INFINITY; }, "tol_fun"},
  };
  for (const Bad& b : bad) {
    mjdiff_defaultCmaesOptions(&o);
    b.set(&o);
    EXPECT_EQ(mjdiff_makeCmaes(2, x0, lo, hi, &o, &c, err, sizeof(err)), MJDIFF_ERR_VALUE)
        << b.word;
    EXPECT_NE(std::strstr(err, b.word), nullptr) << err;
    EXPECT_EQ(c, nullptr);
  }

  // the driver: NULL fun or x, and the same validation
  Calls calls;
  calls.n = 2;
  EXPECT_EQ(mjdiff_cmaesMinimize(2, x0, lo, hi, nullptr, &calls, nullptr, nullptr, nullptr, 0),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_cmaesMinimize(2, nullptr, lo, hi, sphere, &calls, nullptr, nullptr, nullptr, 0),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_cmaesMinimize(2, out, lo, hi, sphere, &calls, nullptr, nullptr, nullptr, 0),
            MJDIFF_ERR_VALUE);
  EXPECT_EQ(calls.count, 0);
  EXPECT_EQ(mjdiff_cmaesAsk(nullptr, x0), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_cmaesTell(nullptr, x0), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_cmaesDone(nullptr, nullptr), 0);
}

}  // namespace
