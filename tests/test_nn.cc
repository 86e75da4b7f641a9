// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Neural networks (<mjdiff/nn.h>) and Adam (<mjdiff/optim.h>):
// - the forward pass against a plain reference implementation here (loops, no BLIS);
// - the VJP against central differences of the forward pass, in the inputs and in every weight,
//   for each activation, at random points with random normalisation and biases (two and three
//   hidden layers, mixed activations, inputs wide enough to saturate); relu and elu points keep
//   every pre-activation at least 1e-3 from the kink (the difference at eps 1e-6 straddles none),
//   and the kink's convention (z = 0 exactly) is tested apart;
//   the batch VJP equals the sum of per-row VJPs and accumulates into adj_params;
// - forward and VJP allocate nothing after setup: malloc, calloc, realloc and the aligned
//   allocators of this executable count calls while a flag is set (glibc resolves every shared
//   library's calls to them here: BLIS's and libmjdiff's too), with a guard that the counter sees
//   an allocation; the workspace's size against its formula;
// - initialisers: deterministic for a seed, bounds and variances of each scheme;
// - Adam: the planner's former formula bit for bit, a quadratic to 1e-6, clipping (the moments see
//   the clipped gradient), the schedules' rates and the steps that use them, bad options;
// - save and load: C to C bit for bit, C to numpy (numpy's forward pass against C's), numpy to C
//   (numpy.savez of float64 and float32 arrays; C's forward against numpy's), wrong shapes, names
//   and architectures, compressed entries, every truncation of a file and corrupted bytes;
// - spec strings: good and malformed (the message names the spec and the position).
// Tolerances: forward against the reference 1e-13 relative (BLIS sums in another order); the VJP
// against differences at eps 1e-6: 1e-7 relative to max(1, |g|) (truncation ~eps^2 |f'''|,
// rounding ~1e-16 / eps); numpy against C 1e-12.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <mjdiff/nn.h>
#include <mjdiff/random.h>
#include <mjdiff/optim.h>

#include "testutil.h"

#include "alloc_count.h"

namespace {

using testutil::uniform;

double gauss(unsigned long long* s) {
  double u1 = 1 - uniform(s), u2 = uniform(s);
  return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

//---------------------------------- helpers ------------------------------------------------------

struct Net {
  mjdiffMLP* net = nullptr;
  mjdiffMLPWork* work = nullptr;
  ~Net() {
    mjdiff_freeMLPWork(work);
    mjdiff_freeMLP(net);
  }
};

mjdiffMLPDef makeDef(int nin, std::vector<int> widths, std::vector<int> acts, int nout) {
  mjdiffMLPDef d;
  mjdiff_defaultMLPDef(&d);
  d.nin = nin;
  d.nout = nout;
  d.nhidden = (int)widths.size();
  for (size_t i = 0; i < widths.size(); i++) {
    d.width[i] = widths[i];
    d.act[i] = acts[i];
  }
  return d;
}

double actRef(int a, double z) {
  switch (a) {
    case MJDIFF_ACT_TANH:
      return std::tanh(z);
    case MJDIFF_ACT_RELU:
      return z > 0 ? z : 0;
    case MJDIFF_ACT_ELU:
      return z > 0 ? z : std::exp(z) - 1;
    default:
      return std::log1p(std::exp(-std::fabs(z))) + std::max(z, 0.0);
  }
}

// reference forward pass of one row (plain loops); min |z| over the hidden layers into zmin
std::vector<double> refForward(const mjdiffMLP* net, const double* x, double* zmin) {
  const mjdiffMLPDef* d = mjdiff_mlpDef(net);
  const double* p = mjdiff_mlpParams(const_cast<mjdiffMLP*>(net));
  std::vector<int> dims = {d->nin};
  for (int i = 0; i < d->nhidden; i++) dims.push_back(d->width[i]);
  dims.push_back(d->nout);
  std::vector<double> h(d->nin);
  for (int i = 0; i < d->nin; i++) h[i] = (x[i] - mjdiff_mlpMean(net)[i]) / mjdiff_mlpStd(net)[i];
  if (zmin) *zmin = INFINITY;
  for (int k = 0; k <= d->nhidden; k++) {
    const double* W = p + mjdiff_mlpWeightOffset(net, k);
    const double* b = p + mjdiff_mlpBiasOffset(net, k);
    std::vector<double> z(dims[k + 1]);
    for (int r = 0; r < dims[k + 1]; r++) {
      double s = b[r];
      for (int c = 0; c < dims[k]; c++) s += W[r * dims[k] + c] * h[c];
      z[r] = s;
      if (k < d->nhidden) {
        if (zmin) *zmin = std::min(*zmin, std::fabs(s));
        z[r] = actRef(d->act[k], s);
      }
    }
    h = z;
  }
  return h;
}

std::string tempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/mjdiff_test_nn_" + std::to_string(getpid()) +
         "_" + name;
}

std::vector<unsigned char> readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(f)),
                                    std::istreambuf_iterator<char>());
}

void writeBytes(const std::string& path, const unsigned char* p, size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write((const char*)p, (std::streamsize)n);
}

void writeCsv(const std::string& path, const std::vector<double>& v, int cols) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  for (size_t i = 0; i < v.size(); i++) {
    std::fprintf(f, "%.17g%c", v[i], (int)(i % cols) == cols - 1 ? '\n' : ',');
  }
  std::fclose(f);
}

std::vector<double> readCsv(const std::string& path) {
  std::ifstream f(path);
  std::vector<double> v;
  std::string line;
  while (std::getline(f, line)) {
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) v.push_back(std::strtod(cell.c_str(), nullptr));
  }
  return v;
}

// output of a command (stdout and stderr), and its exit status
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  return pclose(p);
}

// a random network of def, initialised and with a random normalisation
void randomNet(Net* n, const mjdiffMLPDef& def, unsigned long long seed, int maxbatch) {
  char err[300] = "";
  ASSERT_EQ(mjdiff_makeMLP(&def, &n->net, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_initMLP(n->net, MJDIFF_INIT_XAVIER_NORMAL, seed, 1.0, err, sizeof(err)),
            MJDIFF_OK)
      << err;
  unsigned long long s = seed * 7 + 1;
  std::vector<double> mean(def.nin), sd(def.nin);
  for (int i = 0; i < def.nin; i++) {
    mean[i] = gauss(&s) * 0.3;
    sd[i] = 0.5 + uniform(&s);
  }
  // random biases too (init leaves them at zero)
  double* p = mjdiff_mlpParams(n->net);
  for (int k = 0; k <= def.nhidden; k++) {
    int nb = k < def.nhidden ? def.width[k] : def.nout;
    for (int i = 0; i < nb; i++) p[mjdiff_mlpBiasOffset(n->net, k) + i] = 0.2 * gauss(&s);
  }
  ASSERT_EQ(mjdiff_setMLPNormalization(n->net, mean.data(), sd.data(), err, sizeof(err)),
            MJDIFF_OK)
      << err;
  ASSERT_EQ(mjdiff_makeMLPWork(n->net, maxbatch, &n->work, err, sizeof(err)), MJDIFF_OK) << err;
}

const char* kActNames[] = {"tanh", "relu", "elu", "softplus"};

//---------------------------------- forward and VJP ----------------------------------------------

TEST(Nn, ForwardMatchesReference) {
  for (int act = 0; act < MJDIFF_ACT_COUNT; act++) {
    SCOPED_TRACE(kActNames[act]);
    Net n;
    randomNet(&n, makeDef(4, {7, 5}, {act, act}, 3), 11 + act, 8);
    unsigned long long s = 99;
    std::vector<double> x(8 * 4), y(8 * 3);
    for (double& v : x) v = gauss(&s);
    char err[300] = "";
    ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), 8, y.data(), err, sizeof(err)),
              MJDIFF_OK)
        << err;
    double worst = 0, scale = 0;
    for (int b = 0; b < 8; b++) {
      std::vector<double> r = refForward(n.net, x.data() + 4 * b, nullptr);
      for (int j = 0; j < 3; j++) {
        worst = std::max(worst, std::fabs(r[j] - y[3 * b + j]));
        scale = std::max(scale, std::fabs(r[j]));
      }
    }
    EXPECT_GT(scale, 0.1);
    EXPECT_LE(worst, 1e-13 * scale) << "worst " << worst;
  }
}

// dL/dx and dL/dtheta of L = sum_b w_b . y_b against central differences
TEST(Nn, VjpMatchesFiniteDifferences) {
  const int B = 3, nin = 4, nout = 3;
  const double eps = 1e-6;
  for (int act = 0; act < MJDIFF_ACT_COUNT; act++) {
    double worst_x = 0, worst_p = 0;
    int points = 0, resampled = 0;
    for (int trial = 0; trial < 6; trial++) {
      SCOPED_TRACE(std::string(kActNames[act]) + " trial " + std::to_string(trial));
      Net n;
      int other = (act + 1 + trial) % MJDIFF_ACT_COUNT;  // a second activation in the last layer
      // trial 5: three hidden layers; trials 4, 5: inputs 4x wider (saturated tanh, elu and
      // softplus far in their flat tails)
      mjdiffMLPDef def = trial == 5 ? makeDef(nin, {6, 5, 4}, {act, other, act}, nout)
                                    : makeDef(nin, {6, 5}, {act, trial % 2 ? other : act}, nout);
      randomNet(&n, def, 100 * act + trial, B);
      double xscale = trial >= 4 ? 4 : 1;
      unsigned long long s = 1000 + 17 * act + trial;
      std::vector<double> x(B * nin), w(B * nout);
      // points away from the kinks of relu and elu: min |z| >= 1e-3
      for (int attempt = 0;; attempt++) {
        ASSERT_LT(attempt, 1000);
        for (double& v : x) v = xscale * gauss(&s);
        double zmin = INFINITY;
        for (int b = 0; b < B; b++) {
          double zb;
          refForward(n.net, x.data() + nin * b, &zb);
          zmin = std::min(zmin, zb);
        }
        bool kinked = false;
        for (int i = 0; i < def.nhidden; i++) {
          kinked |= def.act[i] == MJDIFF_ACT_RELU || def.act[i] == MJDIFF_ACT_ELU;
        }
        if (zmin >= 1e-3 || !kinked) break;
        resampled++;
      }
      for (double& v : w) v = gauss(&s);
      auto loss = [&](const std::vector<double>& xx) {
        std::vector<double> y(B * nout);
        EXPECT_EQ(mjdiff_mlpForward(n.net, n.work, xx.data(), B, y.data(), nullptr, 0), MJDIFF_OK);
        double L = 0;
        for (int i = 0; i < B * nout; i++) L += w[i] * y[i];
        return L;
      };

      // the VJP
      char err[300] = "";
      int np = mjdiff_mlpParamCount(n.net);
      std::vector<double> y(B * nout), gx(B * nin, NAN), gp(np, 0.0);
      ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), B, y.data(), err, sizeof(err)),
                MJDIFF_OK)
          << err;
      ASSERT_EQ(mjdiff_mlpVJP(n.net, n.work, w.data(), B, gx.data(), gp.data(), err, sizeof(err)),
                MJDIFF_OK)
          << err;

      // inputs
      double gnorm = 0;
      for (int i = 0; i < B * nin; i++) {
        std::vector<double> xp = x, xm = x;
        xp[i] += eps;
        xm[i] -= eps;
        double fd = (loss(xp) - loss(xm)) / (2 * eps);
        double e = std::fabs(fd - gx[i]) / std::max(1.0, std::fabs(gx[i]));
        worst_x = std::max(worst_x, e);
        gnorm += gx[i] * gx[i];
        EXPECT_LE(e, 1e-7) << "dL/dx[" << i << "] " << gx[i] << " fd " << fd;
      }
      EXPECT_GT(std::sqrt(gnorm), 1e-2) << "a vanishing input gradient tests nothing";

      // weights
      double* p = mjdiff_mlpParams(n.net);
      double pnorm = 0;
      for (int i = 0; i < np; i++) {
        double p0 = p[i];
        p[i] = p0 + eps;
        double Lp = loss(x);
        p[i] = p0 - eps;
        double Lm = loss(x);
        p[i] = p0;
        double fd = (Lp - Lm) / (2 * eps);
        double e = std::fabs(fd - gp[i]) / std::max(1.0, std::fabs(gp[i]));
        worst_p = std::max(worst_p, e);
        pnorm += gp[i] * gp[i];
        EXPECT_LE(e, 1e-7) << "dL/dtheta[" << i << "] " << gp[i] << " fd " << fd;
      }
      EXPECT_GT(std::sqrt(pnorm), 1e-2);
      points++;
    }
    std::printf("[ vjp      ] %-8s %d points (%d resampled near a kink): worst dL/dx %.2e, "
                "dL/dtheta %.2e\n",
                kActNames[act], points, resampled, worst_x, worst_p);
  }
}

TEST(Nn, VjpOfABatchIsTheSumOfRows) {
  const int B = 5;
  Net n;
  randomNet(&n, makeDef(3, {8, 8, 4}, {MJDIFF_ACT_TANH, MJDIFF_ACT_SOFTPLUS, MJDIFF_ACT_ELU}, 2),
            5, B);
  int np = mjdiff_mlpParamCount(n.net);
  unsigned long long s = 3;
  std::vector<double> x(B * 3), w(B * 2), gx(B * 3), gp(np, 0.0), y(B * 2);
  for (double& v : x) v = gauss(&s);
  for (double& v : w) v = gauss(&s);
  ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), B, y.data(), nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_mlpVJP(n.net, n.work, w.data(), B, gx.data(), gp.data(), nullptr, 0),
            MJDIFF_OK);
  std::vector<double> sum(np, 0.0), gx1(3);
  double worst_x = 0;
  for (int b = 0; b < B; b++) {
    ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data() + 3 * b, 1, nullptr, nullptr, 0),
              MJDIFF_OK);
    ASSERT_EQ(mjdiff_mlpVJP(n.net, n.work, w.data() + 2 * b, 1, gx1.data(), sum.data(), nullptr,
                            0),
              MJDIFF_OK);
    for (int i = 0; i < 3; i++) worst_x = std::max(worst_x, std::fabs(gx1[i] - gx[3 * b + i]));
  }
  double worst_p = 0, scale = 0;
  for (int i = 0; i < np; i++) {
    worst_p = std::max(worst_p, std::fabs(sum[i] - gp[i]));
    scale = std::max(scale, std::fabs(gp[i]));
  }
  EXPECT_EQ(worst_x, 0.0);
  EXPECT_LE(worst_p, 1e-14 * scale);
  EXPECT_GT(scale, 0.01);

  // adj_params accumulates: a second VJP doubles it; NULL outputs are skipped
  std::vector<double> twice = gp;
  ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), B, nullptr, nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_mlpVJP(n.net, n.work, w.data(), B, nullptr, twice.data(), nullptr, 0),
            MJDIFF_OK);
  for (int i = 0; i < np; i++) EXPECT_DOUBLE_EQ(twice[i], 2 * gp[i]);
  std::vector<double> gx2(B * 3);
  ASSERT_EQ(mjdiff_mlpVJP(n.net, n.work, w.data(), B, gx2.data(), nullptr, nullptr, 0),
            MJDIFF_OK);
  EXPECT_EQ(gx2, gx);
}

// at z = 0 exactly: relu's derivative is 0 (the subgradient taken), elu's 1, tanh's 1, softplus's
// 1/2; forward and VJP leave their inputs as they were
TEST(Nn, KinkConventionsAndUnchangedInputs) {
  const double slope[] = {1.0, 0.0, 1.0, 0.5};
  for (int act = 0; act < MJDIFF_ACT_COUNT; act++) {
    SCOPED_TRACE(kActNames[act]);
    mjdiffMLPDef def = makeDef(1, {1}, {act}, 1);
    Net n;
    ASSERT_EQ(mjdiff_makeMLP(&def, &n.net, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_makeMLPWork(n.net, 2, &n.work, nullptr, 0), MJDIFF_OK);
    double* p = mjdiff_mlpParams(n.net);  // W_0 = 2, b_0 = 0, W_1 = 3, b_1 = 0: z = 2 x
    p[mjdiff_mlpWeightOffset(n.net, 0)] = 2;
    p[mjdiff_mlpWeightOffset(n.net, 1)] = 3;
    std::vector<double> x = {0.0, 0.0}, g = {1.0, -1.0}, y(2), gx(2), gp(4, 0.0);
    const std::vector<double> x0 = x, g0 = g;
    ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), 2, y.data(), nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_mlpVJP(n.net, n.work, g.data(), 2, gx.data(), gp.data(), nullptr, 0),
              MJDIFF_OK);
    EXPECT_EQ(x, x0);
    EXPECT_EQ(g, g0);
    EXPECT_DOUBLE_EQ(gx[0], 6 * slope[act]);
    EXPECT_DOUBLE_EQ(gx[1], -6 * slope[act]);
  }
}

TEST(Nn, WorkspaceErrors) {
  Net n, m;
  randomNet(&n, makeDef(3, {4}, {MJDIFF_ACT_TANH}, 2), 1, 4);
  randomNet(&m, makeDef(3, {5}, {MJDIFF_ACT_TANH}, 2), 2, 4);
  std::vector<double> x(5 * 3, 0.1), y(5 * 2), g(5 * 2, 1.0), gx(5 * 3);
  char err[300] = "";
  EXPECT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), 5, y.data(), err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("maxbatch"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), 0, y.data(), err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_mlpVJP(n.net, n.work, g.data(), 2, gx.data(), nullptr, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT)
      << "VJP before a forward pass";
  EXPECT_NE(std::string(err).find("forward pass"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_mlpForward(m.net, n.work, x.data(), 2, y.data(), err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("architecture"), std::string::npos) << err;
  ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), 2, y.data(), err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(mjdiff_mlpVJP(n.net, n.work, g.data(), 3, gx.data(), nullptr, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT)
      << "VJP of another batch";
  EXPECT_EQ(mjdiff_mlpVJP(m.net, n.work, g.data(), 2, gx.data(), nullptr, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT)
      << "VJP with another network";
  EXPECT_EQ(mjdiff_mlpVJP(n.net, n.work, g.data(), 2, gx.data(), nullptr, err, sizeof(err)),
            MJDIFF_OK);

  // bad definitions and normalisation
  mjdiffMLP* bad = nullptr;
  mjdiffMLPDef d = makeDef(3, {4}, {MJDIFF_ACT_TANH}, 0);
  EXPECT_EQ(mjdiff_makeMLP(&d, &bad, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("nout"), std::string::npos) << err;
  d = makeDef(3, {4, 0}, {MJDIFF_ACT_TANH, MJDIFF_ACT_TANH}, 1);
  EXPECT_EQ(mjdiff_makeMLP(&d, &bad, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("width[1]"), std::string::npos) << err;
  d = makeDef(3, {4}, {7}, 1);
  EXPECT_EQ(mjdiff_makeMLP(&d, &bad, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("act[0]"), std::string::npos) << err;
  EXPECT_EQ(bad, nullptr);
  double sd[3] = {1, 0, 1};
  EXPECT_EQ(mjdiff_setMLPNormalization(n.net, nullptr, sd, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("std[1]"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_initMLP(n.net, 9, 1, 1.0, err, sizeof(err)), MJDIFF_ERR_VALUE);
  mjdiffMLPWork* w = nullptr;
  EXPECT_EQ(mjdiff_makeMLPWork(n.net, 0, &w, err, sizeof(err)), MJDIFF_ERR_VALUE);
  mjdiff_freeMLP(nullptr);
  mjdiff_freeMLPWork(nullptr);
}

TEST(Nn, FitNormalization) {
  Net n;
  randomNet(&n, makeDef(3, {4}, {MJDIFF_ACT_TANH}, 1), 1, 1);
  std::vector<double> data = {1, 5, 2, 3, 5, 2, 5, 5, 2, 7, 5, 2};  // 4 rows; columns 2, 3 constant
  data[2] = 2.5;  // column 2: 2.5, 2, 2, 2
  ASSERT_EQ(mjdiff_fitMLPNormalization(n.net, data.data(), 4, 1e-9, nullptr, 0), MJDIFF_OK);
  const double* mu = mjdiff_mlpMean(n.net);
  const double* sd = mjdiff_mlpStd(n.net);
  EXPECT_DOUBLE_EQ(mu[0], 4.0);
  EXPECT_DOUBLE_EQ(sd[0], std::sqrt(5.0));  // deviations -3 -1 1 3: variance 20 / 4
  EXPECT_DOUBLE_EQ(mu[1], 5.0);
  EXPECT_EQ(sd[1], 1.0) << "a constant feature is centred, not scaled";
  EXPECT_DOUBLE_EQ(mu[2], 2.125);
  EXPECT_NEAR(sd[2], std::sqrt((0.375 * 0.375 + 3 * 0.125 * 0.125) / 4), 1e-15);
  data[5] = NAN;
  char err[300] = "";
  EXPECT_EQ(mjdiff_fitMLPNormalization(n.net, data.data(), 4, 0, err, sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::string(err).find("data[1][2]"), std::string::npos) << err;
}

TEST(Nn, ForwardAndVjpAllocateNothing) {
  // the counter counts (guard)
  gAllocs = 0;
  gCounting = 1;
  void* volatile probe = std::malloc(16);
  gCounting = 0;
  std::free(probe);
  ASSERT_EQ(gAllocs.load(), 1) << "the allocation counter does not see malloc";

  const int maxbatch = 64;
  for (int act = 0; act < MJDIFF_ACT_COUNT; act++) {
    SCOPED_TRACE(kActNames[act]);
    Net n;
    mjdiffMLPDef def = makeDef(10, {64, 64}, {act, act}, 6);
    randomNet(&n, def, 3, maxbatch);
    // the workspace: maxbatch (nin + sum widths + 2 max width) doubles
    EXPECT_EQ(mjdiff_mlpWorkSize(&def, maxbatch), (long)maxbatch * (10 + 128 + 2 * 64));
    int np = mjdiff_mlpParamCount(n.net);
    EXPECT_EQ(np, 10 * 64 + 64 + 64 * 64 + 64 + 64 * 6 + 6);
    std::vector<double> x(maxbatch * 10, 0.3), y(maxbatch * 6), g(maxbatch * 6, 1.0),
        gx(maxbatch * 10), gp(np, 0.0);
    long total = 0;
    gAllocs = 0;
    gCounting = 1;
    for (int batch : {1, 7, maxbatch}) {
      for (int rep = 0; rep < 3; rep++) {
        mjdiff_mlpForward(n.net, n.work, x.data(), batch, y.data(), nullptr, 0);
        mjdiff_mlpVJP(n.net, n.work, g.data(), batch, gx.data(), gp.data(), nullptr, 0);
      }
    }
    gCounting = 0;
    total = gAllocs.load();
    EXPECT_EQ(total, 0) << "allocations in forward and VJP";
    EXPECT_TRUE(std::isfinite(y[0]) && std::isfinite(gp[0]));
  }
}

TEST(Nn, ThreadsShareTheNetwork) {
  Net n;
  randomNet(&n, makeDef(5, {32, 32}, {MJDIFF_ACT_TANH, MJDIFF_ACT_RELU}, 3), 8, 16);
  int np = mjdiff_mlpParamCount(n.net);
  unsigned long long s = 4;
  std::vector<double> x(16 * 5), g(16 * 3);
  for (double& v : x) v = gauss(&s);
  for (double& v : g) v = gauss(&s);
  auto job = [&](mjdiffMLPWork* w, std::vector<double>* y, std::vector<double>* gp) {
    y->assign(16 * 3, 0);
    gp->assign(np, 0);
    for (int rep = 0; rep < 50; rep++) {
      mjdiff_mlpForward(n.net, w, x.data(), 16, y->data(), nullptr, 0);
      mjdiff_mlpVJP(n.net, w, g.data(), 16, nullptr, gp->data(), nullptr, 0);
    }
  };
  std::vector<double> y0, gp0;
  job(n.work, &y0, &gp0);
  mjdiffMLPWork* w[4];
  std::vector<double> y[4], gp[4];
  std::vector<std::thread> th;
  for (int t = 0; t < 4; t++) {
    ASSERT_EQ(mjdiff_makeMLPWork(n.net, 16, &w[t], nullptr, 0), MJDIFF_OK);
  }
  for (int t = 0; t < 4; t++) th.emplace_back(job, w[t], &y[t], &gp[t]);
  for (auto& t : th) t.join();
  for (int t = 0; t < 4; t++) {
    EXPECT_EQ(y[t], y0);
    EXPECT_EQ(gp[t], gp0);
    mjdiff_freeMLPWork(w[t]);
  }
}

//---------------------------------- initialisers -------------------------------------------------

TEST(Nn, InitialisersAreDeterministicAndScaled) {
  mjdiffMLPDef def = makeDef(200, {300}, {MJDIFF_ACT_RELU}, 100);
  for (int scheme = 0; scheme < 4; scheme++) {
    SCOPED_TRACE(scheme);
    mjdiffMLP *a = nullptr, *b = nullptr, *c = nullptr;
    ASSERT_EQ(mjdiff_makeMLP(&def, &a, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_makeMLP(&def, &b, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_makeMLP(&def, &c, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_initMLP(a, scheme, 42, 0.5, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_initMLP(b, scheme, 42, 0.5, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_initMLP(c, scheme, 43, 0.5, nullptr, 0), MJDIFF_OK);
    int np = mjdiff_mlpParamCount(a);
    EXPECT_EQ(std::memcmp(mjdiff_mlpParams(a), mjdiff_mlpParams(b), sizeof(double) * np), 0);
    EXPECT_NE(std::memcmp(mjdiff_mlpParams(a), mjdiff_mlpParams(c), sizeof(double) * np), 0);
    // per layer: mean ~ 0, variance against the scheme's, uniform bounds, zero biases
    for (int k = 0; k < 2; k++) {
      int fin = k == 0 ? 200 : 300, fout = k == 0 ? 300 : 100, n = fin * fout;
      double gain = k == 1 ? 0.5 : 1;
      bool xavier = scheme <= 1, normal = scheme == 1 || scheme == 3;
      double var = gain * gain * (xavier ? 2.0 / (fin + fout) : 2.0 / fin);
      const double* W = mjdiff_mlpParams(a) + mjdiff_mlpWeightOffset(a, k);
      double s = 0, s2 = 0, mx = 0;
      for (int i = 0; i < n; i++) {
        s += W[i];
        s2 += W[i] * W[i];
        mx = std::max(mx, std::fabs(W[i]));
      }
      double mean = s / n, v = s2 / n - mean * mean;
      EXPECT_LE(std::fabs(mean), 4 * std::sqrt(var / n));
      EXPECT_NEAR(v / var, 1.0, 0.03) << "layer " << k;
      if (!normal) {
        double bound = std::sqrt(3 * var);  // U(-a, a): variance a^2 / 3
        EXPECT_LE(mx, bound);
        EXPECT_GT(mx, 0.99 * bound);
      } else {
        EXPECT_GT(mx, 3.5 * std::sqrt(var)) << "normal tails";
      }
      const double* bias = mjdiff_mlpParams(a) + mjdiff_mlpBiasOffset(a, k);
      for (int i = 0; i < fout; i++) EXPECT_EQ(bias[i], 0.0);
    }
    mjdiff_freeMLP(a);
    mjdiff_freeMLP(b);
    mjdiff_freeMLP(c);
  }
}

//---------------------------------- Adam ---------------------------------------------------------

TEST(Adam, DirectionIsThePlannersFormulaBitForBit) {
  const int n = 13;
  mjdiffAdamOptions opt;
  mjdiff_defaultAdamOptions(&opt);
  opt.eps = 1e-12;
  mjdiffAdam* a = nullptr;
  ASSERT_EQ(mjdiff_makeAdam(n, &opt, &a, nullptr, 0), MJDIFF_OK);
  // mjdiff-mpc's former private Adam
  std::vector<double> am(n, 0), av(n, 0), ref(n), dir(n), g(n);
  int step = 0;
  unsigned long long s = 77;
  for (int it = 0; it < 40; it++) {
    for (double& v : g) v = gauss(&s) * std::pow(10.0, (int)(uniform(&s) * 6) - 3);
    const double b1 = 0.9, b2 = 0.999, eps = 1e-12;
    step++;
    double c1 = 1 - std::pow(b1, step), c2 = 1 - std::pow(b2, step);
    for (int k = 0; k < n; k++) {
      am[k] = b1 * am[k] + (1 - b1) * g[k];
      av[k] = b2 * av[k] + (1 - b2) * g[k] * g[k];
      ref[k] = (am[k] / c1) / (std::sqrt(av[k] / c2) + eps);
    }
    ASSERT_EQ(mjdiff_adamDirection(a, g.data(), dir.data(), nullptr), MJDIFF_OK);
    ASSERT_EQ(std::memcmp(dir.data(), ref.data(), sizeof(double) * n), 0) << "iteration " << it;
  }
  EXPECT_EQ(mjdiff_adamIter(a), 40);
  // a non-finite gradient changes nothing
  g[3] = NAN;
  EXPECT_EQ(mjdiff_adamDirection(a, g.data(), dir.data(), nullptr), MJDIFF_ERR_NONFINITE);
  EXPECT_EQ(mjdiff_adamIter(a), 40);
  mjdiff_freeAdam(a);
}

struct Quadratic {
  std::vector<double> h, c;
  int calls = 0;
};

int quadratic(void* user, const double* x, double* f, double* g) {
  Quadratic* q = (Quadratic*)user;
  q->calls++;
  *f = 0;
  for (size_t i = 0; i < q->h.size(); i++) {
    double e = x[i] - q->c[i];
    *f += 0.5 * q->h[i] * e * e;
    g[i] = q->h[i] * e;
  }
  return 0;
}

TEST(Adam, MinimisesAQuadratic) {
  const int n = 8;
  Quadratic q;
  unsigned long long s = 5;
  for (int i = 0; i < n; i++) {
    q.h.push_back(std::pow(10.0, 3 * uniform(&s) - 1));  // condition number up to 1e3
    q.c.push_back(gauss(&s));
  }
  for (int sched = MJDIFF_LR_CONSTANT; sched <= MJDIFF_LR_EXPONENTIAL; sched++) {
    SCOPED_TRACE(sched);
    mjdiffAdamOptions opt;
    mjdiff_defaultAdamOptions(&opt);
    opt.lr = 0.05;
    opt.schedule = sched;
    opt.decay_steps = 500;
    opt.decay_gamma = 0.5;
    opt.lr_min = 1e-4;
    opt.clip_norm = 10;
    mjdiffAdam* a = nullptr;
    ASSERT_EQ(mjdiff_makeAdam(n, &opt, &a, nullptr, 0), MJDIFF_OK);
    std::vector<double> x(n, 3.0), g(n);
    int outcome = -1;
    double f = NAN;
    mjdiffAdamInfo info;
    ASSERT_EQ(mjdiff_adamMinimize(a, x.data(), g.data(), quadratic, &q, 20000, 1e-8, &outcome, &f,
                                  &info),
              MJDIFF_OK);
    EXPECT_EQ(outcome, MJDIFF_OPTIM_CONVERGED) << "after " << mjdiff_adamIter(a) << " steps";
    double err = 0;
    for (int i = 0; i < n; i++) err = std::max(err, std::fabs(x[i] - q.c[i]));
    EXPECT_LE(err, 1e-6);
    std::printf("[ adam     ] schedule %d: |x - x*| %.1e after %d steps\n", sched, err,
                mjdiff_adamIter(a));
    mjdiff_freeAdam(a);
  }
  // maxiter and cancel
  mjdiffAdam* a = nullptr;
  ASSERT_EQ(mjdiff_makeAdam(n, nullptr, &a, nullptr, 0), MJDIFF_OK);
  std::vector<double> x(n, 3.0), g(n);
  int outcome = -1;
  ASSERT_EQ(mjdiff_adamMinimize(a, x.data(), g.data(), quadratic, &q, 5, 0, &outcome, nullptr,
                                nullptr),
            MJDIFF_OK);
  EXPECT_EQ(outcome, MJDIFF_OPTIM_MAXITER);
  EXPECT_EQ(mjdiff_adamIter(a), 5);
  auto cancel = [](void*, const double*, double* f, double*) -> int {
    *f = 0;
    return 1;
  };
  ASSERT_EQ(mjdiff_adamMinimize(a, x.data(), g.data(), cancel, nullptr, 5, 0, &outcome, nullptr,
                                nullptr),
            MJDIFF_OK);
  EXPECT_EQ(outcome, MJDIFF_OPTIM_CANCELLED);
  mjdiff_freeAdam(a);
}

TEST(Adam, ClippingScalesTheGradientTheMomentsSee) {
  const int n = 4;
  std::vector<double> g1 = {30, -40, 0, 0}, g2 = {0.3, 0.1, -0.2, 0.05};  // |g1| 50, |g2| < 1
  mjdiffAdamOptions opt;
  mjdiff_defaultAdamOptions(&opt);
  opt.clip_norm = 1;
  mjdiffAdam *clip = nullptr, *ref = nullptr, *raw = nullptr;
  ASSERT_EQ(mjdiff_makeAdam(n, &opt, &clip, nullptr, 0), MJDIFF_OK);
  opt.clip_norm = 0;
  ASSERT_EQ(mjdiff_makeAdam(n, &opt, &ref, nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_makeAdam(n, &opt, &raw, nullptr, 0), MJDIFF_OK);
  std::vector<double> d(n), dr(n), draw(n), g1s(n);
  for (int i = 0; i < n; i++) g1s[i] = g1[i] / 50;
  mjdiffAdamInfo info;
  ASSERT_EQ(mjdiff_adamDirection(clip, g1.data(), d.data(), &info), MJDIFF_OK);
  EXPECT_DOUBLE_EQ(info.grad_norm, 50);
  EXPECT_DOUBLE_EQ(info.clip_scale, 1.0 / 50);
  ASSERT_EQ(mjdiff_adamDirection(clip, g2.data(), d.data(), &info), MJDIFF_OK);
  EXPECT_EQ(info.clip_scale, 1.0) << "below the bound: no clipping";
  ASSERT_EQ(mjdiff_adamDirection(ref, g1s.data(), dr.data(), nullptr), MJDIFF_OK);
  ASSERT_EQ(mjdiff_adamDirection(ref, g2.data(), dr.data(), nullptr), MJDIFF_OK);
  ASSERT_EQ(mjdiff_adamDirection(raw, g1.data(), draw.data(), nullptr), MJDIFF_OK);
  ASSERT_EQ(mjdiff_adamDirection(raw, g2.data(), draw.data(), nullptr), MJDIFF_OK);
  double diff = 0, guard = 0;
  for (int i = 0; i < n; i++) {
    diff = std::max(diff, std::fabs(d[i] - dr[i]));
    guard = std::max(guard, std::fabs(d[i] - draw[i]));
  }
  EXPECT_LE(diff, 1e-15) << "clipped Adam = Adam on the clipped gradients";
  EXPECT_GT(guard, 0.1) << "clipping changed nothing";
  mjdiff_freeAdam(clip);
  mjdiff_freeAdam(ref);
  mjdiff_freeAdam(raw);
}

TEST(Adam, SchedulesGiveTheirRates) {
  mjdiffAdamOptions o;
  mjdiff_defaultAdamOptions(&o);
  o.lr = 0.1;
  o.decay_steps = 10;
  o.decay_gamma = 0.5;
  o.lr_min = 0.01;
  EXPECT_EQ(mjdiff_adamRate(&o, 0), 0.1);
  EXPECT_EQ(mjdiff_adamRate(&o, 12345), 0.1);
  o.schedule = MJDIFF_LR_COSINE;
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 0), 0.1);
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 5), 0.055);
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 10), 0.01);
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 100), 0.01);
  o.schedule = MJDIFF_LR_STEP;
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 9), 0.1);
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 10), 0.05);
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 25), 0.025);
  o.schedule = MJDIFF_LR_EXPONENTIAL;
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 5), 0.1 * std::sqrt(0.5));
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 20), 0.025);
  o.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 0), 0.1 * 0.25);
  EXPECT_DOUBLE_EQ(mjdiff_adamRate(&o, 3), 0.1 * std::pow(0.5, 0.3));

  // adamStep moves x by lr(k) times the direction, k the steps before
  o.warmup_steps = 0;
  o.schedule = MJDIFF_LR_STEP;
  const int n = 3;
  mjdiffAdam *a = nullptr, *b = nullptr;
  ASSERT_EQ(mjdiff_makeAdam(n, &o, &a, nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_makeAdam(n, &o, &b, nullptr, 0), MJDIFF_OK);
  std::vector<double> x = {1, -2, 3}, g(n), d(n);
  unsigned long long s = 9;
  for (int k = 0; k < 25; k++) {
    for (double& v : g) v = gauss(&s);
    std::vector<double> x0 = x;
    mjdiffAdamInfo info;
    ASSERT_EQ(mjdiff_adamStep(a, x.data(), g.data(), &info), MJDIFF_OK);
    ASSERT_EQ(mjdiff_adamDirection(b, g.data(), d.data(), nullptr), MJDIFF_OK);
    EXPECT_EQ(info.lr, mjdiff_adamRate(&o, k));
    EXPECT_EQ(info.iter, k + 1);
    for (int i = 0; i < n; i++) EXPECT_EQ(x[i], x0[i] - info.lr * d[i]);
  }
  mjdiff_freeAdam(a);
  mjdiff_freeAdam(b);
}

TEST(Adam, BadOptions) {
  struct Case {
    const char* field;
    void (*set)(mjdiffAdamOptions*);
  } cases[] = {
      {"lr", [](mjdiffAdamOptions* o) { o->lr = 0; }},
      {"beta1", [](mjdiffAdamOptions* o) { o->beta1 = 1; }},
      {"beta2", [](mjdiffAdamOptions* o) { o->beta2 = -0.1; }},
      {"eps", [](mjdiffAdamOptions* o) { o->eps = 0; }},
      {"clip_norm", [](mjdiffAdamOptions* o) { o->clip_norm = -1; }},
      {"schedule", [](mjdiffAdamOptions* o) { o->schedule = 7; }},
      {"decay_steps", [](mjdiffAdamOptions* o) { o->decay_steps = 0; }},
      {"decay_gamma", [](mjdiffAdamOptions* o) { o->decay_gamma = 1.5; }},
      {"lr_min", [](mjdiffAdamOptions* o) { o->lr_min = 1; }},
      {"warmup_steps", [](mjdiffAdamOptions* o) { o->warmup_steps = -1; }},
  };
  for (const Case& c : cases) {
    mjdiffAdamOptions o;
    mjdiff_defaultAdamOptions(&o);
    c.set(&o);
    mjdiffAdam* a = nullptr;
    char err[300] = "";
    EXPECT_EQ(mjdiff_makeAdam(4, &o, &a, err, sizeof(err)), MJDIFF_ERR_VALUE) << c.field;
    EXPECT_EQ(std::string(err).rfind(c.field, 0), 0u) << err;
    EXPECT_EQ(a, nullptr);
  }
  mjdiffAdam* a = nullptr;
  EXPECT_EQ(mjdiff_makeAdam(0, nullptr, &a, nullptr, 0), MJDIFF_ERR_VALUE);
  mjdiff_freeAdam(nullptr);
}

//---------------------------------- spec strings -------------------------------------------------

TEST(NnSpec, ParsesAndFormats) {
  struct Good {
    const char* spec;
    std::vector<int> widths, acts;
    const char* canonical;
  } good[] = {
      {"mlp:64,64", {64, 64}, {0, 0}, "mlp:64,64:tanh,tanh"},
      {"mlp:64,64:tanh", {64, 64}, {0, 0}, "mlp:64,64:tanh,tanh"},
      {"mlp:32:relu", {32}, {1}, "mlp:32:relu"},
      {"mlp:128,64,8:elu,softplus,relu", {128, 64, 8}, {2, 3, 1}, "mlp:128,64,8:elu,softplus,relu"},
      {"linear", {}, {}, "linear"},
  };
  for (const Good& g : good) {
    SCOPED_TRACE(g.spec);
    mjdiffMLPDef d;
    mjdiff_defaultMLPDef(&d);
    char err[300] = "";
    ASSERT_EQ(mjdiff_parseMLPSpec(g.spec, &d, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(d.nhidden, (int)g.widths.size());
    for (int i = 0; i < d.nhidden; i++) {
      EXPECT_EQ(d.width[i], g.widths[i]);
      EXPECT_EQ(d.act[i], g.acts[i]);
    }
    char buf[200];
    EXPECT_EQ(mjdiff_formatMLPSpec(&d, buf, sizeof(buf)), (int)std::strlen(g.canonical));
    EXPECT_STREQ(buf, g.canonical);
  }
}

TEST(NnSpec, MalformedSpecsNameThePosition) {
  struct Bad {
    const char* spec;
    int pos;
    const char* what;
  } bad[] = {
      {"", 0, "expected \"mlp:\""},
      {"mpl:64", 0, "expected \"mlp:\""},
      {"mlp:", 4, "layer width"},
      {"mlp:64,", 7, "layer width"},
      {"mlp:64,,32", 7, "layer width"},
      {"mlp:-4", 4, "layer width"},
      {"mlp:0,4", 4, "must be in [1, 65536]"},
      {"mlp:64,999999", 7, "must be in [1, 65536]"},
      {"mlp:64x", 6, "expected ',', ':' or the end"},
      {"mlp:64 ,64", 6, "expected ',', ':' or the end"},
      {"mlp:64,64:", 10, "expected an activation"},
      {"mlp:64,64:tanhh", 10, "expected an activation"},
      {"mlp:64,64:tanh,", 15, "expected an activation"},
      {"mlp:64,64:relu,relu,relu", 20, "more activations"},
      {"mlp:64,64,64:relu,elu", 21, "2 activations for 3 hidden layers"},
      {"mlp:1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", 36, "more than 16 hidden layers"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.spec);
    mjdiffMLPDef d;
    mjdiff_defaultMLPDef(&d);
    mjdiffMLPDef before = d;
    char err[300] = "";
    EXPECT_EQ(mjdiff_parseMLPSpec(b.spec, &d, err, sizeof(err)), MJDIFF_ERR_VALUE);
    std::string e = err;
    EXPECT_NE(e.find(std::string("\"") + b.spec + "\""), std::string::npos) << e;
    EXPECT_NE(e.find("position " + std::to_string(b.pos) + " "), std::string::npos) << e;
    EXPECT_NE(e.find(b.what), std::string::npos) << e;
    EXPECT_EQ(std::memcmp(&d, &before, sizeof(d)), 0) << "def changed";
  }
}

//---------------------------------- save and load ------------------------------------------------

TEST(NnSave, RoundTripBitForBit) {
  Net n;
  randomNet(&n, makeDef(5, {9, 4}, {MJDIFF_ACT_SOFTPLUS, MJDIFF_ACT_ELU}, 3), 21, 4);
  std::string path = tempPath("roundtrip.npz");
  char err[300] = "";
  ASSERT_EQ(mjdiff_saveMLP(n.net, path.c_str(), err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffMLP* m = nullptr;
  ASSERT_EQ(mjdiff_loadMLP(path.c_str(), &m, err, sizeof(err)), MJDIFF_OK) << err;
  const mjdiffMLPDef *a = mjdiff_mlpDef(n.net), *b = mjdiff_mlpDef(m);
  EXPECT_EQ(std::memcmp(a, b, sizeof(*a)), 0);
  int np = mjdiff_mlpParamCount(n.net);
  ASSERT_EQ(mjdiff_mlpParamCount(m), np);
  EXPECT_EQ(std::memcmp(mjdiff_mlpParams(n.net), mjdiff_mlpParams(m), sizeof(double) * np), 0);
  EXPECT_EQ(std::memcmp(mjdiff_mlpMean(n.net), mjdiff_mlpMean(m), sizeof(double) * 5), 0);
  EXPECT_EQ(std::memcmp(mjdiff_mlpStd(n.net), mjdiff_mlpStd(m), sizeof(double) * 5), 0);

  // loadMLPWeights into a network of the same architecture; another architecture is refused
  Net same, other;
  randomNet(&same, makeDef(5, {9, 4}, {MJDIFF_ACT_SOFTPLUS, MJDIFF_ACT_ELU}, 3), 99, 4);
  randomNet(&other, makeDef(5, {9, 4}, {MJDIFF_ACT_SOFTPLUS, MJDIFF_ACT_TANH}, 3), 99, 4);
  ASSERT_EQ(mjdiff_loadMLPWeights(same.net, path.c_str(), err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(std::memcmp(mjdiff_mlpParams(n.net), mjdiff_mlpParams(same.net), sizeof(double) * np),
            0);
  std::vector<double> before(mjdiff_mlpParams(other.net), mjdiff_mlpParams(other.net) + np);
  EXPECT_EQ(mjdiff_loadMLPWeights(other.net, path.c_str(), err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("mlp:9,4:softplus,elu"), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("mlp:9,4:softplus,tanh"), std::string::npos) << err;
  EXPECT_EQ(std::vector<double>(mjdiff_mlpParams(other.net), mjdiff_mlpParams(other.net) + np),
            before)
      << "a failed load changed the network";

  // saving is deterministic (fixed zip timestamps)
  std::string path2 = tempPath("roundtrip2.npz");
  ASSERT_EQ(mjdiff_saveMLP(m, path2.c_str(), err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(readBytes(path), readBytes(path2));

  // an affine network (no hidden layer) too
  Net lin;
  randomNet(&lin, makeDef(3, {}, {}, 2), 4, 1);
  ASSERT_EQ(mjdiff_saveMLP(lin.net, path2.c_str(), err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffMLP* l2 = nullptr;
  ASSERT_EQ(mjdiff_loadMLP(path2.c_str(), &l2, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(std::memcmp(mjdiff_mlpParams(lin.net), mjdiff_mlpParams(l2), sizeof(double) * 8), 0);
  mjdiff_freeMLP(l2);

  // a path that cannot be written, a file that does not exist
  EXPECT_EQ(mjdiff_saveMLP(m, "/nonexistent-dir/x.npz", err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("/nonexistent-dir/x.npz"), std::string::npos) << err;
  mjdiffMLP* none = nullptr;
  EXPECT_EQ(mjdiff_loadMLP("/nonexistent-dir/x.npz", &none, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("cannot open /nonexistent-dir/x.npz"), std::string::npos) << err;
  mjdiff_freeMLP(m);
  std::remove(path.c_str());
  std::remove(path2.c_str());
}

TEST(NnSave, TruncatedAndCorruptFilesGetErrors) {
  Net n;
  randomNet(&n, makeDef(3, {4}, {MJDIFF_ACT_TANH}, 2), 6, 1);
  std::string path = tempPath("good.npz"), bad = tempPath("bad.npz");
  ASSERT_EQ(mjdiff_saveMLP(n.net, path.c_str(), nullptr, 0), MJDIFF_OK);
  std::vector<unsigned char> bytes = readBytes(path);
  ASSERT_GT(bytes.size(), 1000u);

  // every truncation
  int errors = 0;
  for (size_t len = 0; len < bytes.size(); len++) {
    writeBytes(bad, bytes.data(), len);
    mjdiffMLP* m = nullptr;
    char err[300] = "";
    mjdiffStatus st = mjdiff_loadMLP(bad.c_str(), &m, err, sizeof(err));
    EXPECT_NE(st, MJDIFF_OK) << "truncated to " << len << " bytes";
    EXPECT_EQ(m, nullptr);
    EXPECT_GT(std::strlen(err), 10u);
    errors += st != MJDIFF_OK;
    mjdiff_freeMLP(m);
  }
  EXPECT_EQ(errors, (int)bytes.size());

  // every byte flipped: an error, or (a byte no reader checks: a timestamp, a version, flags,
  // file attributes) the same network; never a different one. Flips in an entry's name or its
  // .npy bytes (CRC-32) are always errors.
  std::vector<char> guarded(bytes.size(), 0);
  for (size_t pos = 0; pos + 30 <= bytes.size();) {
    auto get16 = [&](size_t at) { return (size_t)bytes[at] | ((size_t)bytes[at + 1] << 8); };
    if (bytes[pos] != 'P' || bytes[pos + 1] != 'K' || bytes[pos + 2] != 3 || bytes[pos + 3] != 4) {
      break;  // the central directory
    }
    size_t size = get16(pos + 18) | (get16(pos + 20) << 16), nl = get16(pos + 26);
    size_t xl = get16(pos + 28), end = pos + 30 + nl + xl + size;
    for (size_t i = pos + 30; i < end; i++) guarded[i] = 1;
    pos = end;
  }
  int flipped_ok = 0, flipped_err = 0, nguarded = 0;
  std::vector<double> ref(mjdiff_mlpParams(n.net),
                          mjdiff_mlpParams(n.net) + mjdiff_mlpParamCount(n.net));
  for (size_t i = 0; i < bytes.size(); i++) {
    std::vector<unsigned char> c = bytes;
    c[i] ^= 0x5a;
    writeBytes(bad, c.data(), c.size());
    mjdiffMLP* m = nullptr;
    mjdiffStatus st = mjdiff_loadMLP(bad.c_str(), &m, nullptr, 0);
    nguarded += guarded[i];
    EXPECT_TRUE(st != MJDIFF_OK || !guarded[i]) << "byte " << i << " (a name or .npy byte)";
    if (st == MJDIFF_OK) {
      flipped_ok++;
      ASSERT_EQ(mjdiff_mlpParamCount(m), (int)ref.size()) << "byte " << i;
      EXPECT_EQ(std::vector<double>(mjdiff_mlpParams(m), mjdiff_mlpParams(m) + ref.size()), ref)
          << "byte " << i << " changed the weights without an error";
    } else {
      flipped_err++;
    }
    mjdiff_freeMLP(m);
  }
  std::printf("[ corrupt  ] %zu truncations: all errors; %zu flipped bytes: %d errors (all %d in "
              "names and .npy bytes), %d harmless\n",
              bytes.size(), bytes.size(), flipped_err, nguarded, flipped_ok);
  EXPECT_GT(nguarded, (int)(0.6 * bytes.size()));

  // not a zip at all
  const unsigned char junk[] = "this is not an npz file, just text long enough for an end record";
  writeBytes(bad, junk, sizeof(junk));
  char err[300] = "";
  mjdiffMLP* m = nullptr;
  EXPECT_EQ(mjdiff_loadMLP(bad.c_str(), &m, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("no zip end record"), std::string::npos) << err;
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

// the interpreter with numpy found at configure time (tests/CMakeLists.txt)
#ifndef MJDIFF_NUMPY_PYTHON
#define MJDIFF_NUMPY_PYTHON ""
#endif

const char* kPyForward = R"(
import numpy as np
def forward(z, x):
    sizes = [int(s) for s in z['sizes']]
    acts = [str(a) for a in z['activations']]
    h = (x - z['input_mean']) / z['input_std']
    f = {'tanh': np.tanh, 'relu': lambda a: np.maximum(a, 0),
         'elu': lambda a: np.where(a > 0, a, np.expm1(np.minimum(a, 0))),
         'softplus': lambda a: np.logaddexp(0, a)}
    L = len(sizes) - 1
    for k in range(L):
        h = h @ np.asarray(z['layers.%d.weight' % k], dtype=np.float64).T + z['layers.%d.bias' % k]
        if k < L - 1:
            h = f[acts[k]](h)
    return h
)";

std::string writeScript(const std::string& name, const std::string& body) {
  std::string path = tempPath(name);
  std::ofstream f(path);
  f << kPyForward << body;
  return path;
}

TEST(NnSave, NumpyReadsWhatCWrites) {
  std::string py = MJDIFF_NUMPY_PYTHON;
  ASSERT_FALSE(py.empty()) << "no python3 with numpy was found at configure time: install "
                              "python3-numpy (scripts/setup.sh) and re-run cmake";
  for (int act = 0; act < MJDIFF_ACT_COUNT; act++) {
    SCOPED_TRACE(kActNames[act]);
    Net n;
    const int B = 6;
    randomNet(&n, makeDef(4, {16, 8}, {act, (act + 2) % MJDIFF_ACT_COUNT}, 3), 31 + act, B);
    std::string npz = tempPath("c.npz"), xcsv = tempPath("x.csv"), ycsv = tempPath("y.csv");
    ASSERT_EQ(mjdiff_saveMLP(n.net, npz.c_str(), nullptr, 0), MJDIFF_OK);
    unsigned long long s = 8 + act;
    std::vector<double> x(B * 4), y(B * 3);
    for (double& v : x) v = 2 * gauss(&s);
    ASSERT_EQ(mjdiff_mlpForward(n.net, n.work, x.data(), B, y.data(), nullptr, 0), MJDIFF_OK);
    writeCsv(xcsv, x, 4);
    writeCsv(ycsv, y, 3);
    std::string script = writeScript("c2np.py", R"(
import sys
z = np.load(sys.argv[1])  # allow_pickle=False: plain arrays only
x = np.loadtxt(sys.argv[2], delimiter=',', ndmin=2)
y = np.loadtxt(sys.argv[3], delimiter=',', ndmin=2)
assert str(z['format']) == 'mjdiff.mlp.v1', z['format']
assert z['layers.0.weight'].dtype == np.float64 and z['sizes'].dtype == np.int64
print('spec', str(z['spec']))
print('files', ' '.join(sorted(z.files)))
print('maxdiff %.3e scale %.3e' % (np.max(np.abs(forward(z, x) - y)), np.max(np.abs(y))))
)");
    std::string out;
    int rc = run(py + " " + script + " " + npz + " " + xcsv + " " + ycsv, &out);
    ASSERT_EQ(rc, 0) << out;
    std::string spec = std::string("spec mlp:16,8:") + kActNames[act] + "," +
                       kActNames[(act + 2) % MJDIFF_ACT_COUNT];
    EXPECT_NE(out.find(spec), std::string::npos) << out;
    EXPECT_NE(out.find("files activations format input_mean input_std layers.0.bias "
                       "layers.0.weight layers.1.bias layers.1.weight layers.2.bias "
                       "layers.2.weight sizes spec"),
              std::string::npos)
        << out;
    double diff = NAN, scale = NAN;
    size_t at = out.find("maxdiff");
    ASSERT_NE(at, std::string::npos) << out;
    ASSERT_EQ(std::sscanf(out.c_str() + at, "maxdiff %lf scale %lf", &diff, &scale), 2) << out;
    EXPECT_GT(scale, 0.1);
    EXPECT_LE(diff, 1e-12 * scale) << out;
    std::printf("[ numpy    ] C -> numpy %-8s forward |numpy - C| %.1e (scale %.2f)\n",
                kActNames[act], diff, scale);
    for (const std::string& f : {npz, xcsv, ycsv, script}) std::remove(f.c_str());
  }
}

TEST(NnSave, CReadsWhatNumpyWrites) {
  std::string py = MJDIFF_NUMPY_PYTHON;
  ASSERT_FALSE(py.empty()) << "no python3 with numpy was found at configure time: install "
                              "python3-numpy (scripts/setup.sh) and re-run cmake";
  std::string base = tempPath("np");
  std::string script = writeScript("np2c.py", R"(
import sys
base = sys.argv[1]
rng = np.random.default_rng(5)
sizes = [3, 7, 5, 2]
d = {'format': np.array('mjdiff.mlp.v1'), 'sizes': np.array(sizes, dtype=np.int64),
     'activations': np.array(['relu', 'softplus']),
     'input_mean': rng.normal(size=3), 'input_std': rng.uniform(0.5, 2, size=3)}
for k in range(3):
    d['layers.%d.weight' % k] = rng.normal(size=(sizes[k + 1], sizes[k]))
    d['layers.%d.bias' % k] = rng.normal(size=sizes[k + 1])
np.savez(base + '_good.npz', **d)
x = rng.normal(size=(5, 3))
np.savetxt(base + '_x.csv', x, delimiter=',', fmt='%.17g')
np.savetxt(base + '_y.csv', forward(d, x), delimiter=',', fmt='%.17g')
# float32 weights and int32 sizes (PyTorch's defaults), no format or normalisation arrays
f = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in d.items()
     if k not in ('format', 'input_mean', 'input_std')}
f['sizes'] = f['sizes'].astype(np.int32)
np.savez(base + '_f32.npz', **f)
np.savetxt(base + '_y32.csv', forward(dict(f, input_mean=0.0, input_std=1.0), x),
           delimiter=',', fmt='%.17g')
# wrong shape, missing array, extra array, bad activation, compressed
w = dict(d); w['layers.1.weight'] = rng.normal(size=(7, 5)); np.savez(base + '_shape.npz', **w)
w = dict(d); del w['layers.2.bias']; np.savez(base + '_missing.npz', **w)
w = dict(d); w['layers.3.weight'] = np.zeros((2, 2)); np.savez(base + '_extra.npz', **w)
w = dict(d); w['activations'] = np.array(['relu', 'swish']); np.savez(base + '_act.npz', **w)
w = dict(d); w['layers.0.weight'] = np.asfortranarray(d['layers.0.weight'])
np.savez(base + '_fortran.npz', **w)
np.savez_compressed(base + '_compressed.npz', **d)
print('ok')
)");
  std::string out;
  ASSERT_EQ(run(py + " " + script + " " + base, &out), 0) << out;

  // the good file: C's forward pass against numpy's
  std::vector<double> x = readCsv(base + "_x.csv"), y = readCsv(base + "_y.csv"),
                      y32 = readCsv(base + "_y32.csv");
  ASSERT_EQ(x.size(), 15u);
  ASSERT_EQ(y.size(), 10u);
  const char* files[] = {"_good.npz", "_f32.npz"};
  for (int f = 0; f < 2; f++) {
    SCOPED_TRACE(files[f]);
    mjdiffMLP* m = nullptr;
    char err[300] = "";
    ASSERT_EQ(mjdiff_loadMLP((base + files[f]).c_str(), &m, err, sizeof(err)), MJDIFF_OK) << err;
    const mjdiffMLPDef* d = mjdiff_mlpDef(m);
    EXPECT_EQ(d->nin, 3);
    EXPECT_EQ(d->nout, 2);
    ASSERT_EQ(d->nhidden, 2);
    EXPECT_EQ(d->act[0], MJDIFF_ACT_RELU);
    EXPECT_EQ(d->act[1], MJDIFF_ACT_SOFTPLUS);
    mjdiffMLPWork* w = nullptr;
    ASSERT_EQ(mjdiff_makeMLPWork(m, 5, &w, nullptr, 0), MJDIFF_OK);
    std::vector<double> yc(10);
    ASSERT_EQ(mjdiff_mlpForward(m, w, x.data(), 5, yc.data(), nullptr, 0), MJDIFF_OK);
    const std::vector<double>& yr = f == 0 ? y : y32;
    double diff = 0, scale = 0;
    for (int i = 0; i < 10; i++) {
      diff = std::max(diff, std::fabs(yc[i] - yr[i]));
      scale = std::max(scale, std::fabs(yr[i]));
    }
    EXPECT_GT(scale, 0.1);
    EXPECT_LE(diff, 1e-12 * scale);
    std::printf("[ numpy    ] numpy -> C %-12s forward |C - numpy| %.1e (scale %.2f)\n",
                files[f], diff, scale);
    mjdiff_freeMLPWork(w);
    mjdiff_freeMLP(m);
  }

  // bad files: the message names the array and the shapes
  struct Bad {
    const char* file;
    std::vector<std::string> words;
  } bad[] = {
      {"_shape.npz", {"layers.1.weight", "expected shape (5, 7), got (7, 5)"}},
      {"_missing.npz", {"layers.2.bias", "(2,)", "missing"}},
      {"_extra.npz", {"unexpected array layers.3.weight"}},
      {"_act.npz", {"activations", "'swish'"}},
      {"_fortran.npz", {"layers.0.weight", "Fortran"}},
      {"_compressed.npz", {"compressed", "savez_compressed"}},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.file);
    mjdiffMLP* m = nullptr;
    char err[300] = "";
    EXPECT_EQ(mjdiff_loadMLP((base + b.file).c_str(), &m, err, sizeof(err)), MJDIFF_ERR_VALUE);
    EXPECT_EQ(m, nullptr);
    for (const std::string& word : b.words) {
      EXPECT_NE(std::string(err).find(word), std::string::npos) << err;
    }
    EXPECT_NE(std::string(err).find(base + b.file), std::string::npos) << "names the file: " << err;
  }
  for (const char* f : {"_good.npz", "_f32.npz", "_x.csv", "_y.csv", "_y32.csv", "_shape.npz",
                        "_missing.npz", "_extra.npz", "_act.npz", "_fortran.npz",
                        "_compressed.npz"}) {
    std::remove((base + f).c_str());
  }
  std::remove(script.c_str());
}

//---------------------------------- training determinism -----------------------------------------

// a few Adam steps of least squares on a batch: the same seed gives the same weights, bit for bit
std::vector<double> train(uint64_t seed) {
  Net n;
  mjdiffMLPDef def = makeDef(2, {16, 16}, {MJDIFF_ACT_TANH, MJDIFF_ACT_ELU}, 1);
  EXPECT_EQ(mjdiff_makeMLP(&def, &n.net, nullptr, 0), MJDIFF_OK);
  EXPECT_EQ(mjdiff_initMLP(n.net, MJDIFF_INIT_HE_UNIFORM, seed, 1.0, nullptr, 0), MJDIFF_OK);
  EXPECT_EQ(mjdiff_makeMLPWork(n.net, 32, &n.work, nullptr, 0), MJDIFF_OK);
  int np = mjdiff_mlpParamCount(n.net);
  mjdiffAdamOptions o;
  mjdiff_defaultAdamOptions(&o);
  o.lr = 1e-2;
  o.clip_norm = 1;
  o.schedule = MJDIFF_LR_COSINE;
  o.decay_steps = 200;
  mjdiffAdam* a = nullptr;
  EXPECT_EQ(mjdiff_makeAdam(np, &o, &a, nullptr, 0), MJDIFF_OK);
  unsigned long long s = seed;
  std::vector<double> x(64), t(32), y(32), g(32), gp(np);
  for (int i = 0; i < 32; i++) {
    x[2 * i] = 2 * uniform(&s) - 1;
    x[2 * i + 1] = 2 * uniform(&s) - 1;
    t[i] = std::sin(3 * x[2 * i]) * x[2 * i + 1];
  }
  double L0 = 0, L = 0;
  for (int it = 0; it < 200; it++) {
    mjdiff_mlpForward(n.net, n.work, x.data(), 32, y.data(), nullptr, 0);
    L = 0;
    for (int i = 0; i < 32; i++) {
      g[i] = (y[i] - t[i]) / 32;
      L += 0.5 * (y[i] - t[i]) * (y[i] - t[i]) / 32;
    }
    if (it == 0) L0 = L;
    std::fill(gp.begin(), gp.end(), 0.0);
    mjdiff_mlpVJP(n.net, n.work, g.data(), 32, nullptr, gp.data(), nullptr, 0);
    mjdiff_adamStep(a, mjdiff_mlpParams(n.net), gp.data(), nullptr);
  }
  EXPECT_LT(L, 0.3 * L0) << "training does not lower the loss";
  mjdiff_freeAdam(a);
  return std::vector<double>(mjdiff_mlpParams(n.net), mjdiff_mlpParams(n.net) + np);
}

TEST(Nn, TrainingIsDeterministicForASeed) {
  std::vector<double> a = train(12), b = train(12), c = train(13);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace

//---------------------------------- the library's random numbers --------------------------------

// splitmix64's published first output for seed 0 (Vigna's reference splitmix64.c) seeds the
// state; streams repeat per seed and differ between seeds; the two uniforms keep their ranges
TEST(Random, SeedingStreamsAndRanges) {
  mjdiffRng a, b, c;
  mjdiff_rngSeed(&a, 0);
  EXPECT_EQ(a.s[0], 0xE220A8397B1DCDAFULL);
  mjdiff_rngSeed(&a, 42);
  mjdiff_rngSeed(&b, 42);
  mjdiff_rngSeed(&c, 43);
  int differ = 0;
  double lo = 1, hi = 0, mean = 0;
  const int n = 100000;
  for (int i = 0; i < n; i++) {
    uint64_t x = mjdiff_rngNext(&a);
    EXPECT_EQ(x, mjdiff_rngNext(&b));
    differ += x != mjdiff_rngNext(&c);
    double u = mjdiff_rngUniform(&a), o = mjdiff_rngUniformOpen(&b);
    mjdiff_rngUniform(&b);  // (keep b in step with a)
    mjdiff_rngUniformOpen(&a);
    ASSERT_GE(u, 0);
    ASSERT_LT(u, 1);
    ASSERT_GT(o, 0);
    ASSERT_LT(o, 1);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    mean += u / n;
  }
  EXPECT_GT(differ, n - 10);
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1 - 1e-3);
  EXPECT_NEAR(mean, 0.5, 0.01);  // sd of the mean 1e-3
}

// mjdiff_rngNormal: the documented Box-Muller branch on the generator's own uniforms, and the
// moments of N(0, 1) (sd of the mean 0.0032, of the variance 0.0045, of the 4th moment 0.031)
TEST(Random, Normal) {
  mjdiffRng a, b;
  mjdiff_rngSeed(&a, 7);
  mjdiff_rngSeed(&b, 7);
  const int n = 100000;
  double m1 = 0, m2 = 0, m4 = 0;
  for (int i = 0; i < n; i++) {
    double z = mjdiff_rngNormal(&a);
    double u1 = mjdiff_rngUniformOpen(&b), u2 = mjdiff_rngUniform(&b);
    ASSERT_EQ(z, std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    m1 += z / n;
    m2 += z * z / n;
    m4 += z * z * z * z / n;
  }
  EXPECT_NEAR(m1, 0, 0.02);
  EXPECT_NEAR(m2, 1, 0.03);
  EXPECT_NEAR(m4, 3, 0.2);
}
