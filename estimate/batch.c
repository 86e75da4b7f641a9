// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Batch estimation of a recording's initial state and model parameters (<mjdiff/estimate.h>).
//
// Unknowns: the initial state x0 and parameters p (np). Around the current estimate (xc, pc) the
// variables are z = (delta (ndx), dp (np)): x0 = xc (+) delta, p = pc + dp.
// Rollout: x_{t+1} = f(x_t, u_t; p), t = 0 .. T-1 (controls at t = T: u_{T-1}).
// Residuals over the finite selected readings j of y_t:
//   e_tj = (h_j(x_t, u_t; p) - y_tj) / sigma_j
//   prior (rows i with prior_sigma_i > 0): e_i = (x0 (-) xprior)_i / sigma_i, xprior = prior_x or
//   the guess; or, with an information matrix I (prior_info), 1/2 d' I d, d = x0 (-) xprior
// Cost F = 1/2 |e|^2.
// Exact Jacobians by forward sensitivities through the rollout (step Jacobians A_t = dx_{t+1}/dx_t,
// P_t = dx_{t+1}/dp, sensor Jacobians C_t = dh/dx, Q_t = dh/dp of mjdiff_stepDerivatives):
//   Phi_0 = I, Psi_0 = 0;  Phi_{t+1} = A_t Phi_t,  Psi_{t+1} = A_t Psi_t + P_t
//   de_t/dz = [C_t Phi_t | C_t Psi_t + Q_t] / sigma   (used rows)
//   prior: de_i/d delta = e_i' / sigma_i (the chart's derivative at delta = 0 taken as the
//   identity: exact for hinge, slide, velocity and activation rows, first order for rotations)
// (the transposed product, J' e, is what the rollout adjoint computes in one backward sweep:
// tests/test_estimate.cc checks the two agree.)
// Gauss-Newton with Levenberg-Marquardt damping: with H = J'J, g = J'e,
//   (H + mu diag(H) + mu eps I) dz = -g;  accept if F decreases (mu /= 3), else mu *= 4 and retry
//   until mu > 1e12 (stalled). Stop when the decrease of F is below tol F or |dz| below
//   tol (1 + |z|); the Jacobian is then re-evaluated at the estimate for the covariance
//   cov = H^-1 (the Gaussian approximation of the posterior when sigma is the noise's std).
// Cost per iteration: T step and sensor Jacobians and O(T ndx^2 (ndx + np)) for the sensitivities.

#include <math.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/args.h>
#include <mjdiff/estimate.h>
#include <mjdiff/state.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "est_internal.h"
#include "internal.h"

void mjdiff_defaultBatchEstDef(mjdiffBatchEstDef* def) {
  memset(def, 0, sizeof(*def));
  def->sigma_sensor = 1e-2;
  def->max_iter = 50;
  def->tol = 1e-10;
}

typedef struct batch_ {
  mjModel* m;
  mjdiffModel* s;
  const mjdiffParams* p;
  const mjdiffBatchEstDef* def;
  int T, nx, ndx, np, nz, nu, ns, ny;
  mjtNum t0;
  const mjtNum* ctrl;
  const mjtNum* y;
  int* rows;
  mjtNum* rstd;
  mjData* d;
  mjdiffStepDeriv* w;
  const mjtNum* xprior;
  // scratch
  mjtNum *A, *P, *C, *Q;    // ndx^2, ndx x np, ns x ndx, ns x np
  mjtNum *Phi, *Tmp;        // ndx x nz: (Phi | Psi) and scratch
  mjtNum* J;                // (ny x nz) rows of one step
  mjtNum* e;                // (ny)
  mjtNum *H, *g, *Hd, *dz;  // nz^2, nz, nz^2, nz
  mjtNum *xtry, *ptry, *dxp;
  mjtNum *porig, *pc;  // (np) the model's parameter values, the current estimate
  long nres, nskip;    // finite and missing selected readings
} batch;

static mjdiffStatus setParams(batch* b, const mjtNum* p, char* err, int errsz) {
  if (!b->np) return MJDIFF_OK;
  return mjdiff_setParamValues(b->m, b->s, b->p, p, err, errsz);
}

static mjtNum priorCost(const batch* b, const mjtNum* x0) {
  if (!b->def->prior_sigma && !b->def->prior_info) return 0;
  mjdiff_stateDiff(b->m, b->xprior, x0, b->dxp);
  mjtNum c = 0;
  if (b->def->prior_info) {
    // 1/2 d' I d
    const mjtNum* I = b->def->prior_info;
    for (int i = 0; i < b->ndx; i++) {
      c += 0.5 * b->dxp[i] * mju_dot(I + (size_t)i * b->ndx, b->dxp, b->ndx);
    }
    return c;
  }
  for (int i = 0; i < b->ndx; i++) {
    mjtNum sd = b->def->prior_sigma[i];
    if (sd > 0) c += 0.5 * (b->dxp[i] / sd) * (b->dxp[i] / sd);
  }
  return c;
}

// the cost at (x0, p); with jac, H and g (normal equations) too
static mjdiffStatus evaluate(batch* b, const mjtNum* x0, const mjtNum* p, int jac, mjtNum* cost,
                             char* err, int errsz) {
  mjdiffStatus st = setParams(b, p, err, errsz);
  if (st != MJDIFF_OK) return st;
  int n = b->ndx, nz = b->nz, np = b->np;
  mjtNum F = 0;
  if (jac) {
    memset(b->H, 0, sizeof(mjtNum) * (size_t)nz * nz);
    memset(b->g, 0, sizeof(mjtNum) * (size_t)nz);
    memset(b->Phi, 0, sizeof(mjtNum) * (size_t)n * nz);
    for (int i = 0; i < n; i++) b->Phi[(size_t)i * nz + i] = 1;
  }
  mjdiff_setState(b->m, b->d, x0);
  b->d->time = b->t0;
  for (int t = 0; t <= b->T; t++) {
    mjtNum time = b->d->time;
    // the state of step t stays in d; ctrl of step t
    int k = t < b->T ? t : b->T - 1;
    if (b->ctrl && k >= 0)
      mju_copy(b->d->ctrl, b->ctrl + (size_t)b->nu * k, b->nu);
    else
      mju_zero(b->d->ctrl, b->nu);
    if (jac) {
      mjdiffStepJac sj;
      mjdiff_defaultStepJac(&sj);
      sj.C = b->C;
      sj.Q = np ? b->Q : NULL;
      if (t < b->T) {
        sj.A = b->A;
        sj.P = np ? b->P : NULL;
      }
      st = mjdiff_stepDerivatives(b->m, b->d, b->s, b->w, &sj, err, errsz);
      if (st != MJDIFF_OK) return st;
    } else {
      st = mjdiff_forward(b->m, b->d, b->s, err, errsz);
      if (st != MJDIFF_OK) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", err ? err : "");
        return mjdiff_error(err, errsz, st, "rollout at step %d: %s", t, msg);
      }
    }
    // residuals of step t
    const mjtNum* yt = b->y + (size_t)b->ns * t;
    int my = 0;
    for (int i = 0; i < b->ny; i++) {
      int sd = b->rows[i];
      if (!isfinite(yt[sd])) continue;
      mjtNum e = (b->d->sensordata[sd] - yt[sd]) / b->rstd[i];
      F += 0.5 * e * e;
      if (jac) {
        b->e[my] = e;
        // J row = (C_sd Phi | C_sd Psi + Q_sd) / sigma
        mjtNum* Jr = b->J + (size_t)my * nz;
        mjdiff_gemm(0, 0, 1, nz, n, 1 / b->rstd[i], b->C + (size_t)sd * n, b->Phi, 0, Jr);
        for (int j = 0; j < np; j++) Jr[n + j] += b->Q[(size_t)sd * np + j] / b->rstd[i];
      }
      my++;
    }
    if (jac && my) {
      mjdiff_gemm(1, 0, nz, nz, my, 1, b->J, b->J, 1, b->H);
      mjdiff_gemm(1, 0, nz, 1, my, 1, b->J, b->e, 1, b->g);
    }
    if (t == b->T) break;
    if (jac) {
      // (Phi | Psi) <- A (Phi | Psi) + (0 | P)
      mjdiff_gemm(0, 0, n, nz, n, 1, b->A, b->Phi, 0, b->Tmp);
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < np; j++) b->Tmp[(size_t)i * nz + n + j] += b->P[(size_t)i * np + j];
      }
      memcpy(b->Phi, b->Tmp, sizeof(mjtNum) * (size_t)n * nz);
    }
    b->d->time = time;
    st = mjdiff_step(b->m, b->d, b->s, err, errsz);
    if (st != MJDIFF_OK) {
      char msg[512];
      snprintf(msg, sizeof(msg), "%s", err ? err : "");
      return mjdiff_error(err, errsz, st, "rollout at step %d: %s", t, msg);
    }
  }
  // prior
  F += priorCost(b, x0);
  if (jac && b->def->prior_info) {
    // H += I, g += I d
    const mjtNum* I = b->def->prior_info;
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) b->H[(size_t)i * nz + j] += I[(size_t)i * n + j];
      b->g[i] += mju_dot(I + (size_t)i * n, b->dxp, n);
    }
  } else if (jac && b->def->prior_sigma) {
    for (int i = 0; i < n; i++) {
      mjtNum sd = b->def->prior_sigma[i];
      if (!(sd > 0)) continue;
      b->H[(size_t)i * nz + i] += 1 / (sd * sd);
      b->g[i] += b->dxp[i] / (sd * sd);
    }
  }
  if (!isfinite(F)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE, "the cost is not finite");
  }
  *cost = F;
  return MJDIFF_OK;
}

static void freeBatch(batch* b) {
  if (b->d) mj_deleteData(b->d);
  mjdiff_freeStepDeriv(b->w);
  free(b->rows);
  free(b->rstd);
  free(b->A);
  free(b->P);
  free(b->C);
  free(b->Q);
  free(b->Phi);
  free(b->Tmp);
  free(b->J);
  free(b->e);
  free(b->H);
  free(b->g);
  free(b->Hd);
  free(b->dz);
  free(b->xtry);
  free(b->ptry);
  free(b->dxp);
  free(b->porig);
  free(b->pc);
  free((void*)b->xprior);
}

static mjtNum* nums(size_t n) {
  return (mjtNum*)calloc(n ? n : 1, sizeof(mjtNum));
}

// validate the inputs and make the workspace of b (dd: the definition with defaults, kept by
// the caller); porig, pc: the model's parameter values and the start values
static mjdiffStatus setup(batch* b, mjdiffBatchEstDef* dd, mjModel* m, mjdiffModel* s,
                          const mjdiffBatchEstDef* def, int T, mjtNum t0, const mjtNum* ctrl,
                          const mjtNum* y, const mjtNum* x0, const mjtNum* param, char* err,
                          int errsz) {
  memset(b, 0, sizeof(*b));
  if (!m || !s || !y || !x0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "m, s, y or x0 is NULL");
  }
  if (T < 1) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "T must be >= 1, got %d", T);
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiff_defaultBatchEstDef(dd);
  if (def) *dd = *def;
  if (dd->max_iter < 0 || !(dd->tol >= 0)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "max_iter must be >= 0 and tol >= 0, got %d, %g", dd->max_iter, dd->tol);
  }
  b->m = m;
  b->s = s;
  b->p = dd->params;
  b->def = dd;
  b->T = T;
  b->t0 = t0;
  b->ctrl = ctrl;
  b->y = y;
  b->nx = mjdiff_stateSize(m);
  b->ndx = mjdiff_tangentSize(m);
  b->np = mjdiff_paramCount(dd->params);
  b->nz = b->ndx + b->np;
  b->nu = m->nu;
  b->ns = m->nsensordata;
  st = mjdiff_estSelectSensors(m, dd->sensors, dd->nsensor, dd->sigma_sensor, dd->sensor_sigma, 1,
                               &b->rows, &b->rstd, &b->ny, err, errsz);
  if (st != MJDIFF_OK) return st;
  for (int i = 0; i < b->nx; i++) {
    if (!isfinite(x0[i]))
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "x0[%d] is not finite", i);
  }
  // counts of the readings
  for (int t = 0; t <= T; t++) {
    for (int i = 0; i < b->ny; i++) {
      if (isfinite(y[(size_t)b->ns * t + b->rows[i]]))
        b->nres++;
      else
        b->nskip++;
    }
  }
  if (b->nres == 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "no finite reading of the selected sensors in %d steps", T + 1);
  }
  int n = b->ndx, nz = b->nz, np = b->np;
  b->d = mj_makeData(m);
  b->A = nums((size_t)n * n);
  b->P = nums((size_t)n * np);
  b->C = nums((size_t)b->ns * n);
  b->Q = nums((size_t)b->ns * np);
  b->Phi = nums((size_t)n * nz);
  b->Tmp = nums((size_t)n * nz);
  b->J = nums((size_t)b->ny * nz);
  b->e = nums((size_t)b->ny);
  b->H = nums((size_t)nz * nz);
  b->g = nums((size_t)nz);
  b->Hd = nums((size_t)nz * nz);
  b->dz = nums((size_t)nz);
  b->xtry = nums((size_t)b->nx);
  b->ptry = nums((size_t)np);
  b->dxp = nums((size_t)n);
  mjtNum* xp = nums((size_t)b->nx);
  b->porig = nums((size_t)np);
  b->pc = nums((size_t)np);
  b->xprior = xp;
  if (!b->d || !b->A || !b->P || !b->C || !b->Q || !b->Phi || !b->Tmp || !b->J || !b->e || !b->H ||
      !b->g || !b->Hd || !b->dz || !b->xtry || !b->ptry || !b->dxp || !xp || !b->porig || !b->pc) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  }
  mju_copy(xp, dd->prior_x ? dd->prior_x : x0, b->nx);
  st = mjdiff_makeStepDeriv(m, s, dd->params, &b->w, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (np) {
    mjdiff_getParamValues(m, s, dd->params, b->porig);
    if (param)
      mju_copy(b->pc, param, np);
    else
      mju_copy(b->pc, b->porig, np);
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_batchLinearize(mjModel* m, mjdiffModel* s, const mjdiffBatchEstDef* def, int T,
                                   mjtNum t0, const mjtNum* ctrl, const mjtNum* y, const mjtNum* x0,
                                   const mjtNum* param, mjtNum* cost, mjtNum* grad, mjtNum* H,
                                   char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  batch b;
  mjdiffBatchEstDef dd;
  mjdiffStatus st = setup(&b, &dd, m, s, def, T, t0, ctrl, y, x0, param, err, errsz);
  mjtNum F = 0;
  if (st == MJDIFF_OK) st = evaluate(&b, x0, b.pc, grad || H, &F, err, errsz);
  if (st == MJDIFF_OK) {
    if (cost) *cost = F;
    if (grad) mju_copy(grad, b.g, b.nz);
    if (H) mju_copy(H, b.H, (size_t)b.nz * b.nz);
  }
  if (b.np && b.porig) mjdiff_setParamValues(m, s, dd.params, b.porig, NULL, 0);
  freeBatch(&b);
  return st;
}

mjdiffStatus mjdiff_batchEstimate(mjModel* m, mjdiffModel* s, const mjdiffBatchEstDef* def, int T,
                                  mjtNum t0, const mjtNum* ctrl, const mjtNum* y, mjtNum* x0,
                                  mjtNum* param, mjtNum* cov, mjdiffBatchEstInfo* info, char* err,
                                  int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (info) memset(info, 0, sizeof(*info));
  batch b;
  mjdiffBatchEstDef dd;
  mjdiffStatus st = setup(&b, &dd, m, s, def, T, t0, ctrl, y, x0, param, err, errsz);
  if (st != MJDIFF_OK) {
    freeBatch(&b);
    return st;
  }
  int n = b.ndx, nz = b.nz, np = b.np;
  mjtNum* pc = b.pc;
  long nres = b.nres, nskip = b.nskip;
  mjdiffBatchEstInfo inf;
  memset(&inf, 0, sizeof(inf));
  inf.nresidual = nres;
  inf.nskipped = nskip;
  inf.nvar = nz;
  inf.status = MJDIFF_BATCH_MAXITER;
  mjtNum* xc = x0;  // the estimate, in place
  mjtNum F = 0;
  st = evaluate(&b, xc, pc, 0, &F, err, errsz);
  inf.cost0 = F;
  mjtNum mu = 1e-6;
  int done = 0;
  for (int it = 0; st == MJDIFF_OK; it++) {
    st = evaluate(&b, xc, pc, 1, &F, err, errsz);
    if (st != MJDIFF_OK || done || it >= dd.max_iter) break;
    // damped steps until one lowers the cost
    int accepted = 0;
    while (!accepted) {
      memcpy(b.Hd, b.H, sizeof(mjtNum) * (size_t)nz * nz);
      for (int i = 0; i < nz; i++) b.Hd[(size_t)i * nz + i] *= 1 + mu;
      for (int i = 0; i < nz; i++) b.Hd[(size_t)i * nz + i] += mu * 1e-9;
      for (int i = 0; i < nz; i++) b.dz[i] = -b.g[i];
      if (mjdiff_cholesky(b.Hd, nz, 0) == 0) {
        mjdiff_cholSolve(b.Hd, nz, b.dz, 1);
        mjdiff_stateIntegrate(m, xc, b.dz, 1, b.xtry);
        for (int j = 0; j < np; j++) b.ptry[j] = pc[j] + b.dz[n + j];
        mjtNum Fn = INFINITY;
        char e2[256];
        mjdiffStatus st2 = evaluate(&b, b.xtry, b.ptry, 0, &Fn, e2, sizeof(e2));
        if (st2 == MJDIFF_OK && Fn < F) {
          mjtNum nzn = 0, nzc = 0;
          for (int i = 0; i < nz; i++) nzn += b.dz[i] * b.dz[i];
          for (int i = 0; i < b.nx; i++) nzc += xc[i] * xc[i];
          for (int j = 0; j < np; j++) nzc += pc[j] * pc[j];
          if (F - Fn <= dd.tol * F || sqrt(nzn) <= dd.tol * (1 + sqrt(nzc))) done = 1;
          mju_copy(xc, b.xtry, b.nx);
          if (np) mju_copy(pc, b.ptry, np);
          mu = fmax(mu / 3, 1e-12);
          accepted = 1;
          inf.iterations = it + 1;
          break;
        }
      }
      mu *= 4;
      if (mu > 1e12) break;
    }
    if (!accepted) {
      inf.status = MJDIFF_BATCH_STALLED;
      // H at xc is current: keep it for the covariance
      done = 0;
      inf.iterations = it;
      break;
    }
    if (done) inf.status = MJDIFF_BATCH_CONVERGED;
  }
  inf.cost = F;
  if (st == MJDIFF_OK) {
    inf.rank = mjdiff_estRank(b.H, nz, b.Hd);
    if (cov) {
      if (inf.rank == nz) {
        memcpy(b.Hd, b.H, sizeof(mjtNum) * (size_t)nz * nz);
        if (mjdiff_cholesky(b.Hd, nz, 0) == 0) {
          memset(cov, 0, sizeof(mjtNum) * (size_t)nz * nz);
          for (int i = 0; i < nz; i++) cov[(size_t)i * nz + i] = 1;
          mjdiff_cholSolve(b.Hd, nz, cov, nz);
          mjdiff_estSymmetrize(cov, nz);
        } else {
          for (size_t i = 0; i < (size_t)nz * nz; i++) cov[i] = NAN;
        }
      } else {
        for (size_t i = 0; i < (size_t)nz * nz; i++) cov[i] = NAN;
      }
    }
    if (param && np) mju_copy(param, pc, np);
  }
  // the model's own values back
  if (np) mjdiff_setParamValues(m, s, dd.params, b.porig, NULL, 0);
  if (info) *info = inf;
  freeBatch(&b);
  return st;
}
