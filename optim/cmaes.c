// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// CMA-ES, following Hansen, "The CMA Evolution Strategy: A Tutorial" (arXiv:1604.00772, its
// Table 1 and Appendix A), over the N free variables (those with lo < hi).
//   parameters  lambda = 4 + floor(3 ln N), mu = floor(lambda / 2),
//               w_i = ln((lambda + 1) / 2) - ln i, i = 1..mu, normalised to sum 1,
//               mueff = 1 / sum w_i^2,
//               c_s = (mueff + 2) / (N + mueff + 5),
//               d_s = 1 + 2 max(0, sqrt((mueff - 1) / (N + 1)) - 1) + c_s,
//               c_c = (4 + mueff / N) / (N + 4 + 2 mueff / N),
//               c_1 = 2 / ((N + 1.3)^2 + mueff),
//               c_mu = min(1 - c_1, 2 (mueff - 2 + 1 / mueff) / ((N + 2)^2 + mueff)),
//               chiN = E|N(0, I)| ~ sqrt(N) (1 - 1 / (4 N) + 1 / (21 N^2))
//   sample      z_k ~ N(0, I), y_k = B D z_k, x_k = m + sigma y_k       (C = B D^2 B')
//   repair      xr_k = P(x_k) (projection onto [lo, hi]), evaluated: f_k = f(xr_k);
//               the update uses y_k = (xr_k - m) / sigma, scaled down to
//               |C^-1/2 y_k| <= sqrt(N) + 2 N / (N + 2) when it was repaired (Hansen, "Injecting
//               external solutions into CMA-ES", 2011), and ranks by the penalised value
//               f_k + (max f - min f) |x_k - xr_k|^2 / (sigma^2 tr C)  (finite f of this
//               generation; a point whose outside part is as long as a typical step pays the
//               generation's spread of f); non-finite f_k are +inf (rejected, ranked last),
//               ties go to the smaller penalty, then to the earlier candidate
//   recombine   y_w = sum_i w_i y_{i:lambda},  m <- m + sigma y_w
//   CSA         p_s <- (1 - c_s) p_s + sqrt(c_s (2 - c_s) mueff) C^-1/2 y_w,  C^-1/2 = B D^-1 B'
//               sigma <- sigma exp(min(1, (c_s / d_s) (|p_s| / chiN - 1)))
//   h_s         1 if |p_s| / sqrt(1 - (1 - c_s)^(2 (g + 1))) < (1.4 + 2 / (N + 1)) chiN, else 0
//   path        p_c <- (1 - c_c) p_c + h_s sqrt(c_c (2 - c_c) mueff) y_w
//   covariance  C <- (1 - c_1 - c_mu) C + c_1 (p_c p_c' + (1 - h_s) c_c (2 - c_c) C)
//                    + c_mu sum_i w_i y_{i:lambda} y_{i:lambda}'
//   eigen       C = B D^2 B' by cyclic Jacobi rotations, recomputed once more than
//               lambda / ((c_1 + c_mu) N 10) evaluations have passed since the last one
// Stop (mjdiff_cmaesDone): best f <= ftarget; tol_fun: the best values of the last
// 10 + ceil(30 N / lambda) generations and all of the last one span < tol_fun; tol_x:
// sigma sqrt(C_ii) < tol_x and sigma |p_c,i| < tol_x for all i; stalled: cond(C) > 1e14 or
// m_i + 0.2 sigma sqrt(C_ii) == m_i for some i; another generation would pass max_evals.
// Nothing here is differentiated.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/optim.h>
#include <mjdiff/random.h>

#include "internal.h"

struct mjdiffCmaes_ {
  int n, N;                    // variables, free variables
  int lambda, mu;
  mjdiffCmaesOptions opt;
  int* free;                   // (N) index in x of each free variable
  double* xfix;                // (n) x0: the fixed variables' values
  double *lo, *hi;             // (N) bounds of the free variables
  double* w;                   // (mu) recombination weights
  double mueff, cs, ds, cc, c1, cmu, chiN;
  double sigma;
  double* mean;                // (N)
  double *ps, *pc;             // (N) evolution paths
  double* C;                   // (N x N) covariance
  double* B;                   // (N x N) eigenvectors (columns)
  double* D;                   // (N) square roots of the eigenvalues
  double* A;                   // (N x N) Jacobi's scratch
  double* Y;                   // (lambda x N) steps of the pending candidates
  double* X;                   // (lambda x N) the repaired candidates
  double* pen;                 // (lambda) squared projection distances
  double* fit;                 // (lambda) penalised values
  double* fval;                // (lambda) values as told (non-finite: inf)
  int* idx;                    // (lambda) ranking
  double *t1, *t2;             // (N) scratch
  double* hist;                // (nhist) best value of each of the last generations (ring)
  int histlen, nhist, hpos;
  double genmin, genmax;       // range of the last generation's values
  double* xbest;               // (n)
  double fbest;
  long evals, eigeneval;
  int gen, pending, illcond;
  mjdiffRng rng;
};

void mjdiff_defaultCmaesOptions(mjdiffCmaesOptions* opt) {
  if (!opt) return;
  memset(opt, 0, sizeof(*opt));
  opt->lambda = 0;
  opt->sigma0 = 0.3;
  opt->max_evals = 100000;
  opt->ftarget = -INFINITY;
  opt->tol_x = 1e-11;
  opt->tol_fun = 1e-12;
  opt->seed = 1;
}

// eigendecomposition of the symmetric A (N x N, destroyed) by cyclic Jacobi sweeps:
// A <- J' A J with J the rotation in (p, q) that zeroes A_pq, t = tan(phi) the smaller root of
// t^2 + 2 theta t - 1 = 0, theta = (A_qq - A_pp) / (2 A_pq); V <- V J. Eigenvalues into e.
static void jacobi(int N, double* A, double* V, double* e) {
  for (int i = 0; i < N * N; i++) V[i] = 0;
  for (int i = 0; i < N; i++) V[N * i + i] = 1;
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0, diag = 0;
    for (int p = 0; p < N; p++) {
      diag += A[N * p + p] * A[N * p + p];
      for (int q = p + 1; q < N; q++) off += A[N * p + q] * A[N * p + q];
    }
    if (off <= 1e-32 * diag || off == 0) break;
    for (int p = 0; p < N; p++) {
      for (int q = p + 1; q < N; q++) {
        double apq = A[N * p + q];
        if (apq == 0) continue;
        double theta = (A[N * q + q] - A[N * p + p]) / (2 * apq);
        double t = fabs(theta) > 1e150 ? 0.5 / theta
                                        : (theta >= 0 ? 1 : -1) / (fabs(theta) +
                                                                   sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        // columns: A <- A J
        for (int k = 0; k < N; k++) {
          double akp = A[N * k + p], akq = A[N * k + q];
          A[N * k + p] = c * akp - s * akq;
          A[N * k + q] = s * akp + c * akq;
        }
        // rows: A <- J' A
        for (int k = 0; k < N; k++) {
          double apk = A[N * p + k], aqk = A[N * q + k];
          A[N * p + k] = c * apk - s * aqk;
          A[N * q + k] = s * apk + c * aqk;
        }
        A[N * p + q] = A[N * q + p] = 0;
        // V <- V J
        for (int k = 0; k < N; k++) {
          double vkp = V[N * k + p], vkq = V[N * k + q];
          V[N * k + p] = c * vkp - s * vkq;
          V[N * k + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  for (int i = 0; i < N; i++) e[i] = A[N * i + i];
}

// B, D from C; flags an ill-conditioned C (cond > 1e14 or an eigenvalue <= 0, clamped)
static void decompose(mjdiffCmaes* c) {
  int N = c->N;
  memcpy(c->A, c->C, sizeof(double) * (size_t)(N * N));
  jacobi(N, c->A, c->B, c->D);
  double emax = 0, emin = INFINITY;
  for (int i = 0; i < N; i++) {
    emax = fmax(emax, c->D[i]);
    emin = fmin(emin, c->D[i]);
  }
  if (!(emax > 0) || !(emin > 0) || emax > 1e14 * emin) c->illcond = 1;
  double floor = emax > 0 ? 1e-20 * emax : 1e-300;
  for (int i = 0; i < N; i++) c->D[i] = sqrt(fmax(c->D[i], floor));
  c->eigeneval = c->evals;
}

// out = C^-1/2 v = B D^-1 B' v (t is scratch, N)
static void invSqrtC(const mjdiffCmaes* c, const double* v, double* out, double* t) {
  int N = c->N;
  for (int j = 0; j < N; j++) {
    double s = 0;
    for (int i = 0; i < N; i++) s += c->B[N * i + j] * v[i];
    t[j] = s / c->D[j];
  }
  for (int i = 0; i < N; i++) {
    double s = 0;
    for (int j = 0; j < N; j++) s += c->B[N * i + j] * t[j];
    out[i] = s;
  }
}

static mjdiffStatus checkOptions(const mjdiffCmaesOptions* o, int lambda, char* err, int errsz) {
  if (o->lambda < 0 || o->lambda == 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "lambda must be >= 2 (0: default), got %d",
                        o->lambda);
  }
  if (!(o->sigma0 > 0) || !isfinite(o->sigma0)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "sigma0 must be > 0 and finite, got %g",
                        o->sigma0);
  }
  if (o->max_evals < lambda) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "max_evals must be >= lambda = %d, got %ld", lambda, o->max_evals);
  }
  if (isnan(o->ftarget)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "ftarget must be a number (-inf: none), got nan");
  }
  if (!(o->tol_x >= 0) || !isfinite(o->tol_x)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "tol_x must be >= 0 and finite, got %g",
                        o->tol_x);
  }
  if (!(o->tol_fun >= 0) || !isfinite(o->tol_fun)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "tol_fun must be >= 0 and finite, got %g",
                        o->tol_fun);
  }
  return MJDIFF_OK;
}

void mjdiff_freeCmaes(mjdiffCmaes* c) {
  if (!c) return;
  free(c->free);
  free(c->xfix);
  free(c->lo);
  free(c->hi);
  free(c->w);
  free(c->mean);
  free(c->ps);
  free(c->pc);
  free(c->C);
  free(c->B);
  free(c->D);
  free(c->A);
  free(c->Y);
  free(c->X);
  free(c->pen);
  free(c->fit);
  free(c->fval);
  free(c->idx);
  free(c->t1);
  free(c->t2);
  free(c->hist);
  free(c->xbest);
  free(c);
}

mjdiffStatus mjdiff_makeCmaes(int n, const double* x0, const double* lo, const double* hi,
                              const mjdiffCmaesOptions* opt, mjdiffCmaes** out, char* err,
                              int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (n < 1) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "n must be >= 1, got %d", n);
  if (!x0) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "x0 is NULL");
  int N = 0;
  for (int i = 0; i < n; i++) {
    double l = lo ? lo[i] : -INFINITY, h = hi ? hi[i] : INFINITY;
    if (!isfinite(x0[i])) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE, "x0[%d] must be finite, got %g", i,
                          x0[i]);
    }
    if (isnan(l) || isnan(h)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "bounds of x[%d] must not be NaN", i);
    }
    if (l > h) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "lo[%d] = %g must be <= hi[%d] = %g", i,
                          l, i, h);
    }
    if (x0[i] < l || x0[i] > h) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "x0[%d] = %g lies outside [%g, %g]", i,
                          x0[i], l, h);
    }
    if (l < h) N++;
  }
  if (N == 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "every variable is fixed (lo = hi)");
  }
  mjdiffCmaesOptions o;
  if (opt) {
    o = *opt;
  } else {
    mjdiff_defaultCmaesOptions(&o);
  }
  int lambda = o.lambda > 0 ? o.lambda : 4 + (int)floor(3 * log((double)N));
  mjdiffStatus st = checkOptions(&o, lambda, err, errsz);
  if (st != MJDIFF_OK) return st;

  mjdiffCmaes* c = (mjdiffCmaes*)calloc(1, sizeof(mjdiffCmaes));
  int mu = lambda / 2;
  int histlen = 10 + (30 * N + lambda - 1) / lambda;
  size_t sN = (size_t)N, sL = (size_t)lambda, sd = sizeof(double);
  if (c) {
    c->free = (int*)calloc(sN, sizeof(int));
    c->xfix = (double*)calloc((size_t)n, sd);
    c->lo = (double*)calloc(sN, sd);
    c->hi = (double*)calloc(sN, sd);
    c->w = (double*)calloc((size_t)mu, sd);
    c->mean = (double*)calloc(sN, sd);
    c->ps = (double*)calloc(sN, sd);
    c->pc = (double*)calloc(sN, sd);
    c->C = (double*)calloc(sN * sN, sd);
    c->B = (double*)calloc(sN * sN, sd);
    c->D = (double*)calloc(sN, sd);
    c->A = (double*)calloc(sN * sN, sd);
    c->Y = (double*)calloc(sL * sN, sd);
    c->X = (double*)calloc(sL * sN, sd);
    c->pen = (double*)calloc(sL, sd);
    c->fit = (double*)calloc(sL, sd);
    c->fval = (double*)calloc(sL, sd);
    c->idx = (int*)calloc(sL, sizeof(int));
    c->t1 = (double*)calloc(sN, sd);
    c->t2 = (double*)calloc(sN, sd);
    c->hist = (double*)calloc((size_t)histlen, sd);
    c->xbest = (double*)calloc((size_t)n, sd);
  }
  if (!c || !c->free || !c->xfix || !c->lo || !c->hi || !c->w || !c->mean || !c->ps || !c->pc ||
      !c->C || !c->B || !c->D || !c->A || !c->Y || !c->X || !c->pen || !c->fit || !c->fval ||
      !c->idx || !c->t1 || !c->t2 || !c->hist || !c->xbest) {
    mjdiff_freeCmaes(c);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "CMA-ES for %d variables: out of memory",
                        n);
  }
  c->n = n;
  c->N = N;
  c->lambda = lambda;
  c->mu = mu;
  c->opt = o;
  c->opt.lambda = lambda;
  memcpy(c->xfix, x0, sd * (size_t)n);
  memcpy(c->xbest, x0, sd * (size_t)n);
  c->fbest = INFINITY;
  for (int i = 0, k = 0; i < n; i++) {
    double l = lo ? lo[i] : -INFINITY, h = hi ? hi[i] : INFINITY;
    if (l < h) {
      c->free[k] = i;
      c->lo[k] = l;
      c->hi[k] = h;
      c->mean[k] = x0[i];
      k++;
    }
  }

  // strategy parameters (Table 1)
  double sw = 0, sw2 = 0;
  for (int i = 0; i < mu; i++) {
    c->w[i] = log((lambda + 1) / 2.0) - log(i + 1.0);
    sw += c->w[i];
  }
  for (int i = 0; i < mu; i++) {
    c->w[i] /= sw;
    sw2 += c->w[i] * c->w[i];
  }
  double mueff = 1 / sw2, dN = N;
  c->mueff = mueff;
  c->cs = (mueff + 2) / (dN + mueff + 5);
  c->ds = 1 + 2 * fmax(0, sqrt((mueff - 1) / (dN + 1)) - 1) + c->cs;
  c->cc = (4 + mueff / dN) / (dN + 4 + 2 * mueff / dN);
  c->c1 = 2 / ((dN + 1.3) * (dN + 1.3) + mueff);
  c->cmu = fmin(1 - c->c1, 2 * (mueff - 2 + 1 / mueff) / ((dN + 2) * (dN + 2) + mueff));
  c->chiN = sqrt(dN) * (1 - 1 / (4 * dN) + 1 / (21 * dN * dN));
  c->sigma = o.sigma0;
  for (int i = 0; i < N; i++) {
    c->C[N * i + i] = 1;
    c->B[N * i + i] = 1;
    c->D[i] = 1;
  }
  c->histlen = histlen;
  mjdiff_rngSeed(&c->rng, (uint64_t)o.seed);
  *out = c;
  return MJDIFF_OK;
}

int mjdiff_cmaesLambda(const mjdiffCmaes* c) {
  return c ? c->lambda : 0;
}

mjdiffStatus mjdiff_cmaesAsk(mjdiffCmaes* c, double* X) {
  if (!c || !X || c->pending) return MJDIFF_ERR_ARGUMENT;
  int N = c->N, n = c->n;
  double ymax = sqrt((double)N) + 2.0 * N / (N + 2.0);
  for (int k = 0; k < c->lambda; k++) {
    double* y = c->Y + (size_t)N * k;
    double* xr = c->X + (size_t)N * k;
    // y = B D z
    for (int j = 0; j < N; j++) c->t1[j] = c->D[j] * mjdiff_rngNormal(&c->rng);
    for (int i = 0; i < N; i++) {
      double s = 0;
      for (int j = 0; j < N; j++) s += c->B[N * i + j] * c->t1[j];
      y[i] = s;
    }
    // x = m + sigma y, projected
    double pen = 0;
    for (int i = 0; i < N; i++) {
      double x = c->mean[i] + c->sigma * y[i];
      xr[i] = fmin(fmax(x, c->lo[i]), c->hi[i]);
      pen += (x - xr[i]) * (x - xr[i]);
    }
    c->pen[k] = pen;
    if (pen > 0) {
      // the repaired step, its Mahalanobis length capped
      for (int i = 0; i < N; i++) y[i] = (xr[i] - c->mean[i]) / c->sigma;
      invSqrtC(c, y, c->t2, c->t1);
      double len = 0;
      for (int i = 0; i < N; i++) len += c->t2[i] * c->t2[i];
      len = sqrt(len);
      if (len > ymax) {
        for (int i = 0; i < N; i++) y[i] *= ymax / len;
      }
    }
    double* row = X + (size_t)n * k;
    memcpy(row, c->xfix, sizeof(double) * (size_t)n);
    for (int i = 0; i < N; i++) row[c->free[i]] = xr[i];
  }
  c->pending = 1;
  return MJDIFF_OK;
}

// ranking order: penalised value, then penalty, then candidate index
static int before(const mjdiffCmaes* c, int a, int b) {
  if (c->fit[a] != c->fit[b]) return c->fit[a] < c->fit[b];
  if (c->pen[a] != c->pen[b]) return c->pen[a] < c->pen[b];
  return a < b;
}

mjdiffStatus mjdiff_cmaesTell(mjdiffCmaes* c, const double* f) {
  if (!c || !f || !c->pending) return MJDIFF_ERR_ARGUMENT;
  int N = c->N, L = c->lambda, mu = c->mu;
  c->pending = 0;

  // values, best point, range
  double fmn = INFINITY, fmx = -INFINITY;
  int nonfinite = 0;
  for (int k = 0; k < L; k++) {
    double v = isfinite(f[k]) ? f[k] : INFINITY;
    c->fval[k] = v;
    if (isfinite(v)) {
      fmn = fmin(fmn, v);
      fmx = fmax(fmx, v);
    } else {
      nonfinite = 1;
    }
    if (v < c->fbest) {
      c->fbest = v;
      for (int i = 0; i < N; i++) c->xbest[c->free[i]] = c->X[(size_t)N * k + i];
    }
  }
  c->evals += L;
  c->genmin = fmn;
  c->genmax = nonfinite ? INFINITY : fmx;

  // penalised ranking
  double trC = 0;
  for (int i = 0; i < N; i++) trC += c->C[N * i + i];
  double alpha = fmx > fmn ? (fmx - fmn) / (c->sigma * c->sigma * trC) : 0;
  for (int k = 0; k < L; k++) {
    c->fit[k] = c->fval[k] + (c->pen[k] > 0 ? alpha * c->pen[k] : 0);
    int j = k;
    c->idx[j] = k;
    while (j > 0 && before(c, c->idx[j], c->idx[j - 1])) {
      int t = c->idx[j];
      c->idx[j] = c->idx[j - 1];
      c->idx[j - 1] = t;
      j--;
    }
  }

  // recombination: y_w into t1, m <- m + sigma y_w
  double* yw = c->t1;
  for (int i = 0; i < N; i++) yw[i] = 0;
  for (int r = 0; r < mu; r++) {
    const double* y = c->Y + (size_t)N * c->idx[r];
    for (int i = 0; i < N; i++) yw[i] += c->w[r] * y[i];
  }
  for (int i = 0; i < N; i++) c->mean[i] += c->sigma * yw[i];

  // step-size path: p_s <- (1 - c_s) p_s + sqrt(c_s (2 - c_s) mueff) C^-1/2 y_w
  double* ciy = c->t2;
  double* tmp = c->A;  // scratch (N), Jacobi's matrix is not in use here
  invSqrtC(c, yw, ciy, tmp);
  double a = sqrt(c->cs * (2 - c->cs) * c->mueff), psn = 0;
  for (int i = 0; i < N; i++) {
    c->ps[i] = (1 - c->cs) * c->ps[i] + a * ciy[i];
    psn += c->ps[i] * c->ps[i];
  }
  psn = sqrt(psn);
  c->gen++;
  double hden = sqrt(1 - pow(1 - c->cs, 2.0 * c->gen));
  int hs = psn / hden < (1.4 + 2 / (N + 1.0)) * c->chiN;

  // covariance path and update
  double b = hs * sqrt(c->cc * (2 - c->cc) * c->mueff);
  for (int i = 0; i < N; i++) c->pc[i] = (1 - c->cc) * c->pc[i] + b * yw[i];
  double dh = (1 - hs) * c->cc * (2 - c->cc);
  double keep = 1 - c->c1 - c->cmu + c->c1 * dh;
  for (int i = 0; i < N; i++) {
    for (int j = i; j < N; j++) {
      double rmu = 0;
      for (int r = 0; r < mu; r++) {
        const double* y = c->Y + (size_t)N * c->idx[r];
        rmu += c->w[r] * y[i] * y[j];
      }
      double v = keep * c->C[N * i + j] + c->c1 * c->pc[i] * c->pc[j] + c->cmu * rmu;
      c->C[N * i + j] = c->C[N * j + i] = v;
    }
  }

  // step size
  c->sigma *= exp(fmin(1, (c->cs / c->ds) * (psn / c->chiN - 1)));

  // history of the best values
  c->hist[c->hpos] = fmn;
  c->hpos = (c->hpos + 1) % c->histlen;
  if (c->nhist < c->histlen) c->nhist++;

  // eigendecomposition
  if ((double)(c->evals - c->eigeneval) > L / ((c->c1 + c->cmu) * N * 10)) decompose(c);
  return MJDIFF_OK;
}

void mjdiff_cmaesBest(const mjdiffCmaes* c, double* x, double* f) {
  if (!c) return;
  if (x) memcpy(x, c->xbest, sizeof(double) * (size_t)c->n);
  if (f) *f = c->fbest;
}

int mjdiff_cmaesDone(const mjdiffCmaes* c, mjdiffCmaesInfo* info) {
  if (!c) return 0;
  int N = c->N, status = -1;
  if (c->fbest <= c->opt.ftarget) {
    status = MJDIFF_OPTIM_TARGET;
  }
  if (status < 0 && c->gen > 0 && c->nhist >= c->histlen) {
    double lo = c->genmin, hi = c->genmax;
    for (int i = 0; i < c->nhist; i++) {
      lo = fmin(lo, c->hist[i]);
      hi = fmax(hi, c->hist[i]);
    }
    if (hi - lo < c->opt.tol_fun) status = MJDIFF_OPTIM_CONVERGED;
  }
  if (status < 0 && c->gen > 0) {
    int small = 1;
    for (int i = 0; i < N && small; i++) {
      small = c->sigma * sqrt(c->C[N * i + i]) < c->opt.tol_x &&
              c->sigma * fabs(c->pc[i]) < c->opt.tol_x;
    }
    if (small) status = MJDIFF_OPTIM_CONVERGED;
  }
  if (status < 0) {
    int noeffect = c->illcond || !isfinite(c->sigma);
    for (int i = 0; i < N && !noeffect; i++) {
      noeffect = c->mean[i] + 0.2 * c->sigma * sqrt(c->C[N * i + i]) == c->mean[i];
    }
    if (noeffect) status = MJDIFF_OPTIM_STALLED;
  }
  if (status < 0 && c->evals + c->lambda > c->opt.max_evals) status = MJDIFF_OPTIM_MAXEVALS;
  if (info) {
    info->status = status;
    info->evals = c->evals;
    info->fbest = c->fbest;
    info->sigma = c->sigma;
    info->generations = c->gen;
  }
  return status >= 0;
}

mjdiffStatus mjdiff_cmaesMinimize(int n, double* x, const double* lo, const double* hi,
                                  mjdiffCmaesObjective fun, void* user,
                                  const mjdiffCmaesOptions* opt, mjdiffCmaesInfo* info, char* err,
                                  int errsz) {
  if (!x) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "x is NULL");
  if (!fun) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "fun is NULL");
  mjdiffCmaes* c = NULL;
  mjdiffStatus st = mjdiff_makeCmaes(n, x, lo, hi, opt, &c, err, errsz);
  if (st != MJDIFF_OK) return st;
  int L = c->lambda;
  double* X = (double*)calloc((size_t)L * (size_t)n, sizeof(double));
  double* f = (double*)calloc((size_t)L, sizeof(double));
  if (!X || !f) {
    free(X);
    free(f);
    mjdiff_freeCmaes(c);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "CMA-ES for %d variables: out of memory",
                        n);
  }
  while (!mjdiff_cmaesDone(c, NULL)) {
    mjdiff_cmaesAsk(c, X);
    for (int k = 0; k < L; k++) f[k] = fun(user, X + (size_t)n * k);
    mjdiff_cmaesTell(c, f);
  }
  mjdiff_cmaesDone(c, info);
  mjdiff_cmaesBest(c, x, NULL);
  free(X);
  free(f);
  mjdiff_freeCmaes(c);
  return MJDIFF_OK;
}
