// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc --adapt (adapt.h): joint state-and-parameter estimation over consecutive windows,
// a recursive (iterated-EKF-like) estimator of the parameters p whose measurement update is the
// batch problem of one window.
//
// Window j: the N plant steps from x_s (the state the loop saw at its start), controls
// u_s..u_{s+N-1}, readings y_s..y_{s+N}. Unknowns z = (delta, dp): x_s' = x_s (+) delta,
// p = pbar + dp. Cost
//   F(z) = 1/2 sum_{t=s..s+N} |(h(x_t, p) - y_t) / sigma|^2          (readings; x_{t+1} =
//          + 1/2 |delta / sigma_state|^2                              f(x_t, u_t, p), the smooth
//          + 1/2 (p - pbar)' Pbar^-1 (p - pbar)                       step)
// The first two terms and their Gauss-Newton linearisation (cost, gradient g, H = J'J with the
// state prior on its diagonal) are mjdiff_batchLinearize's (estimate/batch.c, exact Jacobians
// through the rollout, the state prior centred on prior_x = x_s); the parameter prior is added
// here: H_pp += Pbar^-1, g_p += Pbar^-1 (p - pbar). Step: (H) dz = -g by Cholesky, backtracked
// (halved up to 4 times) until F decreases (a step to invalid values -- a mass <= 0 -- fails the
// linearisation and is halved too); `iterations` steps per window.
// Posterior: P_p = [H^-1]_pp (the marginal of the parameters, the Schur complement's inverse),
// at the last linearisation. Next window's prior (random walk, so that the estimate can follow a
// step change and does not forget when the readings carry no information):
//   pbar' = p,  Pbar' = P_p + diag(drift_rel * scale_i)^2,  scale_i = max(|nominal_i|, floor)
// Initial prior: pbar = nominal, Pbar = diag(prior_rel * scale_i)^2.
// A window without information on p leaves P_p = Pbar (+ drift): the estimate stays where it was
// (the covariance grows by the drift); a window with information shrinks it.

#define _POSIX_C_SOURCE 200809L

#include "adapt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/state.h>

#include "toolutil.h"

struct mpcAdapt_ {
  mpcAdaptOptions opt;
  mjModel* m;                  // the fit's copies
  mjdiffModel* s;
  mjdiffParams* prm;
  mjdiffBatchEstDef def;
  const char** sensors;        // copies of the names (opt.sensors)
  int np, nx, ndx, nu, ns, nz, N;
  double* nominal;             // np
  double* scale;               // np
  double* p;                   // current estimate (np)
  double* sd;                  // its std (np)
  double* Pbar;                // prior covariance of the next window (np x np)
  double* Ibar;                // its inverse
  double* x0;                  // window start state (nx), its guess
  double* xc;                  // current state iterate (nx)
  double* xt;                  // trial (nx)
  double* pc;                  // current parameter iterate (np)
  double* pt;                  // trial (np)
  double* U;                   // N x nu
  double* Y;                   // (N+1) x ns
  double* H;                   // nz x nz
  double* g;                   // nz
  double* L;                   // factor (nz x nz)
  double* dz;                  // nz
  double* col;                 // nz
  double* prior_sigma;         // ndx
  double t0;
  int count;                   // readings in the window
  int ready;
  double* px;                  // the next window's first step (x, u, y)
  double* pu;
  double* py;
  double pt0;
  int updates, failures;
  double fit_wall;
};

void mpc_defaultAdaptOptions(mpcAdaptOptions* opt) {
  memset(opt, 0, sizeof(*opt));
  opt->window = 0.1;
  opt->sigma_sensor = 0.01;
  opt->sigma_state = 0.01;
  opt->prior_rel = 0.5;
  opt->drift_rel = 0.05;
  opt->prior_floor = 0.1;
  opt->iterations = 2;
}

void mpc_freeAdapt(mpcAdapt* a) {
  if (!a) return;
  mjdiff_freeParams(a->prm);
  mjdiff_freeModel(a->s);
  if (a->m) mj_deleteModel(a->m);
  if (a->sensors) {
    for (int i = 0; i < a->opt.nsensor; i++) free((char*)a->sensors[i]);
    free(a->sensors);
  }
  double* bufs[] = {a->nominal, a->scale, a->p, a->sd, a->Pbar, a->Ibar, a->x0, a->xc,
                    a->xt, a->pc, a->pt, a->U, a->Y, a->H, a->g, a->L,
                    a->dz, a->col, a->prior_sigma, a->px, a->pu, a->py};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) free(bufs[i]);
  free(a);
}

static double* nums(size_t n, int* ok) {
  double* v = calloc(n ? n : 1, sizeof(double));
  if (!v) *ok = 0;
  return v;
}

mjdiffParams* mpc_paramList(const mjModel* m, const mjdiffModel* s, const char* names,
                            const char* what, char* err, int errsz) {
  size_t len = strlen(names);
  char* copy = malloc(len + 1);
  int cap = 1;
  for (const char* c = names; *c; c++) cap += *c == ',';
  const char** list = calloc((size_t)cap, sizeof(char*));
  if (!copy || !list) {
    free(copy);
    free(list);
    snprintf(err, (size_t)errsz, "out of memory");
    return NULL;
  }
  memcpy(copy, names, len + 1);
  int n = 0;  // the non-empty names between commas, in place
  for (char* t = copy;; t++) {
    char* e = strchr(t, ',');
    if (e) *e = 0;
    if (*t) list[n++] = t;
    if (!e) break;
    t = e;
  }
  mjdiffParams* p = NULL;
  char why[512];
  if (!n) {
    snprintf(err, (size_t)errsz, "%s: no parameter names in '%s'", what, names);
  } else if (mjdiff_makeParams(m, s, list, n, &p, why, sizeof(why)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "%s: %s", what, why);
    p = NULL;
  }
  free(list);
  free(copy);
  return p;
}

mpcAdapt* mpc_makeAdapt(const mjModel* m, const mjdiffModel* s, const char* names,
                        const mpcAdaptOptions* opt, char* err, int errsz) {
  mpcAdaptOptions o;
  if (opt) {
    o = *opt;
  } else {
    mpc_defaultAdaptOptions(&o);
  }
  if (!m || !s || !names) {
    snprintf(err, (size_t)errsz, "adapt: model, smooth model and parameter names are needed");
    return NULL;
  }
  if (!(o.window > 0) || !(o.sigma_sensor > 0) || !(o.sigma_state > 0) || !(o.prior_rel > 0) ||
      !(o.drift_rel >= 0) || !(o.prior_floor > 0) || o.iterations < 1) {
    snprintf(err, (size_t)errsz, "adapt: bad options (window %g s, sigmas %g %g, prior %g, "
             "drift %g, iterations %d)", o.window, o.sigma_sensor, o.sigma_state, o.prior_rel,
             o.drift_rel, o.iterations);
    return NULL;
  }
  int N = (int)lround(o.window / m->opt.timestep);
  if (N < 1) N = 1;
  mpcAdapt* a = calloc(1, sizeof(mpcAdapt));
  if (!a) {
    snprintf(err, (size_t)errsz, "out of memory");
    return NULL;
  }
  a->opt = o;
  a->opt.nsensor = 0;
  a->opt.sensors = NULL;
  a->m = mj_copyModel(NULL, m);
  if (!a->m || mjdiff_copyModel(s, a->m, &a->s, err, errsz) != MJDIFF_OK) {
    if (!a->m) snprintf(err, (size_t)errsz, "out of memory");
    mpc_freeAdapt(a);
    return NULL;
  }
  a->prm = mpc_paramList(a->m, a->s, names, "--adapt", err, errsz);
  if (!a->prm) {
    mpc_freeAdapt(a);
    return NULL;
  }
  if (opt && opt->sensors && opt->nsensor > 0) {
    a->sensors = calloc((size_t)opt->nsensor, sizeof(char*));
    if (!a->sensors) {
      snprintf(err, (size_t)errsz, "out of memory");
      mpc_freeAdapt(a);
      return NULL;
    }
    for (int i = 0; i < opt->nsensor; i++) {
      size_t len = strlen(opt->sensors[i]);
      char* w = malloc(len + 1);
      if (w) memcpy(w, opt->sensors[i], len + 1);
      a->sensors[i] = w;
      a->opt.nsensor = i + 1;
    }
    a->opt.sensors = a->sensors;
  }
  a->np = mjdiff_paramCount(a->prm);
  a->nx = mjdiff_stateSize(m);
  a->ndx = mjdiff_tangentSize(m);
  a->nu = m->nu;
  a->ns = m->nsensordata;
  a->nz = a->ndx + a->np;
  a->N = N;
  int ok = 1, np = a->np, nz = a->nz;
  size_t nzz = (size_t)nz * nz;
  a->nominal = nums((size_t)np, &ok);
  a->scale = nums((size_t)np, &ok);
  a->p = nums((size_t)np, &ok);
  a->sd = nums((size_t)np, &ok);
  a->Pbar = nums((size_t)np * np, &ok);
  a->Ibar = nums((size_t)np * np, &ok);
  a->x0 = nums((size_t)a->nx, &ok);
  a->xc = nums((size_t)a->nx, &ok);
  a->xt = nums((size_t)a->nx, &ok);
  a->pc = nums((size_t)np, &ok);
  a->pt = nums((size_t)np, &ok);
  a->U = nums((size_t)N * a->nu, &ok);
  a->Y = nums((size_t)(N + 1) * a->ns, &ok);
  a->H = nums(nzz, &ok);
  a->g = nums((size_t)nz, &ok);
  a->L = nums(nzz, &ok);
  a->dz = nums((size_t)nz, &ok);
  a->col = nums((size_t)nz, &ok);
  a->prior_sigma = nums((size_t)a->ndx, &ok);
  a->px = nums((size_t)a->nx, &ok);
  a->pu = nums((size_t)a->nu, &ok);
  a->py = nums((size_t)a->ns, &ok);
  if (!ok) {
    snprintf(err, (size_t)errsz, "out of memory");
    mpc_freeAdapt(a);
    return NULL;
  }
  mjdiff_getParamValues(a->m, a->s, a->prm, a->nominal);
  for (int i = 0; i < np; i++) a->scale[i] = fmax(fabs(a->nominal[i]), o.prior_floor);
  for (int i = 0; i < a->ndx; i++) a->prior_sigma[i] = o.sigma_state;
  mjdiff_defaultBatchEstDef(&a->def);
  a->def.sensors = a->opt.sensors;
  a->def.nsensor = a->opt.nsensor;
  a->def.sigma_sensor = o.sigma_sensor;
  a->def.params = a->prm;
  a->def.prior_sigma = a->prior_sigma;
  a->def.prior_x = a->x0;

  // the sensors and parameters have derivatives: one linearisation of a one-step window at qpos0
  mjData* d = mj_makeData(a->m);
  if (!d) {
    snprintf(err, (size_t)errsz, "out of memory");
    mpc_freeAdapt(a);
    return NULL;
  }
  mj_forward(a->m, d);
  mju_copy(a->x0, d->qpos, a->m->nq);
  mju_zero(a->x0 + a->m->nq, a->nx - a->m->nq);
  mj_deleteData(d);
  for (int r = 0; r < 2; r++) mju_zero(a->Y + (size_t)r * a->ns, a->ns);
  mjdiffBatchEstDef d1 = a->def;
  char why[512];
  if (mjdiff_batchLinearize(a->m, a->s, &d1, 1, 0, a->U, a->Y, a->x0, NULL, NULL, a->g, a->H,
                            why, sizeof(why)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "--adapt: %s", why);
    mpc_freeAdapt(a);
    return NULL;
  }
  mpc_adaptReset(a);
  return a;
}

void mpc_adaptReset(mpcAdapt* a) {
  int np = a->np;
  mju_copy(a->p, a->nominal, np);
  mju_zero(a->Pbar, (size_t)np * np);
  for (int i = 0; i < np; i++) {
    double sd = a->opt.prior_rel * a->scale[i];
    a->Pbar[i * np + i] = sd * sd;
    a->sd[i] = sd;
  }
  a->count = 0;
  a->ready = 0;
  a->updates = a->failures = 0;
  a->fit_wall = 0;
}

void mpc_adaptDropWindow(mpcAdapt* a) {
  a->count = 0;
  a->ready = 0;
}

int mpc_adaptPush(mpcAdapt* a, double time, const double* x, const double* u, const double* y) {
  if (a->ready) return 1;
  if (a->count == a->N) {
    mju_copy(a->Y + (size_t)a->N * a->ns, y, a->ns);
    mju_copy(a->px, x, a->nx);
    mju_copy(a->pu, u, a->nu);
    mju_copy(a->py, y, a->ns);
    a->pt0 = time;
    a->ready = 1;
    return 1;
  }
  if (a->count == 0) {
    mju_copy(a->x0, x, a->nx);
    a->t0 = time;
  }
  mju_copy(a->Y + (size_t)a->count * a->ns, y, a->ns);
  mju_copy(a->U + (size_t)a->count * a->nu, u, a->nu);
  a->count++;
  return 0;
}

// F(x, p) + the parameter prior; 0 if the linearisation fails. With grad/H: also those (the
// prior added).
static int total(mpcAdapt* a, const double* x, const double* p, double* F, double* g, double* H) {
  char why[256];
  double f = 0;
  if (mjdiff_batchLinearize(a->m, a->s, &a->def, a->N, a->t0, a->U, a->Y, x, p, &f, g, H, why,
                            sizeof(why)) != MJDIFF_OK) {
    return 0;
  }
  int np = a->np, ndx = a->ndx, nz = a->nz;
  double* r = a->col;  // p - pbar, then Ibar (p - pbar)
  for (int i = 0; i < np; i++) r[i] = p[i] - a->p[i];
  double q = 0;
  for (int i = 0; i < np; i++) {
    double Ir = 0;
    for (int j = 0; j < np; j++) Ir += a->Ibar[i * np + j] * r[j];
    q += r[i] * Ir;
    if (g) g[ndx + i] += Ir;
  }
  if (H) {
    for (int i = 0; i < np; i++) {
      for (int j = 0; j < np; j++) H[(size_t)(ndx + i) * nz + ndx + j] += a->Ibar[i * np + j];
    }
  }
  *F = f + 0.5 * q;
  return isfinite(*F);
}

// the inverse of an SPD matrix (n x n) in place, by Cholesky; 0 if not positive definite
static int invertSPD(double* A, int n, double* L, double* e, double* c) {
  mju_copy(L, A, (size_t)n * n);
  if (mju_cholFactor(L, n, 0) < n) return 0;
  for (int j = 0; j < n; j++) {
    mju_zero(e, n);
    e[j] = 1;
    mju_cholSolve(c, L, e, n);
    for (int i = 0; i < n; i++) A[i * n + j] = c[i];
  }
  return 1;
}

int mpc_adaptUpdate(mpcAdapt* a, char* err, int errsz) {
  if (!a->ready) return 1;
  double wall0 = tool_now();
  int np = a->np, ndx = a->ndx, nz = a->nz, ok = 1;

  // prior information
  mju_copy(a->Ibar, a->Pbar, (size_t)np * np);
  double* e = a->dz;
  double* c = a->g;
  if (!invertSPD(a->Ibar, np, a->L, e, c)) {
    snprintf(err, (size_t)errsz, "adapt: the prior covariance is not positive definite");
    ok = 0;
  }

  mju_copy(a->xc, a->x0, a->nx);
  mju_copy(a->pc, a->p, np);
  double F = 0;
  int have_H = 0;
  for (int it = 0; ok && it < a->opt.iterations; it++) {
    if (!total(a, a->xc, a->pc, &F, a->g, a->H)) {
      snprintf(err, (size_t)errsz, "adapt: the window from t = %.4f s did not linearise",
               a->t0);
      ok = 0;
      break;
    }
    have_H = 1;
    mju_copy(a->L, a->H, (size_t)nz * nz);
    for (int i = 0; i < nz; i++) a->L[i * nz + i] += 1e-12 * (1 + a->H[i * nz + i]);
    if (mju_cholFactor(a->L, nz, 0) < nz) {
      snprintf(err, (size_t)errsz, "adapt: the window's normal equations are singular");
      ok = 0;
      break;
    }
    mju_scl(a->col, a->g, -1, nz);
    mju_cholSolve(a->dz, a->L, a->col, nz);
    double step = 1;
    int accepted = 0;
    for (int h = 0; h < 5 && !accepted; h++, step *= 0.5) {
      mjdiff_stateIntegrate(a->m, a->xc, a->dz, step, a->xt);
      for (int i = 0; i < np; i++) a->pt[i] = a->pc[i] + step * a->dz[ndx + i];
      double Ft;
      if (total(a, a->xt, a->pt, &Ft, NULL, NULL) && Ft < F) {
        mju_copy(a->xc, a->xt, a->nx);
        mju_copy(a->pc, a->pt, np);
        accepted = 1;
      }
    }
    if (!accepted) break;
  }

  if (ok && have_H) {
    // posterior of p: [H^-1]_pp from the last linearisation (factor in L)
    double* Pp = a->Pbar;
    for (int j = 0; j < np; j++) {
      mju_zero(a->col, nz);
      a->col[ndx + j] = 1;
      mju_cholSolve(a->dz, a->L, a->col, nz);
      for (int i = 0; i < np; i++) Pp[i * np + j] = a->dz[ndx + i];
    }
    for (int i = 0; i < np; i++) {
      for (int j = 0; j < i; j++) {
        double s = 0.5 * (Pp[i * np + j] + Pp[j * np + i]);
        Pp[i * np + j] = Pp[j * np + i] = s;
      }
    }
    mju_copy(a->p, a->pc, np);
    a->updates++;
  } else {
    a->failures++;
  }
  // random walk to the next window
  for (int i = 0; i < np; i++) {
    double q = a->opt.drift_rel * a->scale[i];
    a->Pbar[i * np + i] += q * q;
    a->sd[i] = sqrt(fmax(a->Pbar[i * np + i], 0));
  }

  // the next window starts with the step that completed this one
  a->ready = 0;
  a->count = 0;
  mpc_adaptPush(a, a->pt0, a->px, a->pu, a->py);
  a->fit_wall += tool_now() - wall0;
  return ok;
}

const mjdiffParams* mpc_adaptParams(const mpcAdapt* a) { return a->prm; }
int mpc_adaptCount(const mpcAdapt* a) { return a->np; }
const double* mpc_adaptValues(const mpcAdapt* a) { return a->p; }
const double* mpc_adaptSd(const mpcAdapt* a) { return a->sd; }
const double* mpc_adaptNominal(const mpcAdapt* a) { return a->nominal; }
int mpc_adaptUpdates(const mpcAdapt* a) { return a->updates; }
int mpc_adaptFailures(const mpcAdapt* a) { return a->failures; }
double mpc_adaptMeanFit(const mpcAdapt* a) {
  int n = a->updates + a->failures;
  return n ? a->fit_wall / n : 0;
}
