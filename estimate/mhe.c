// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Moving-horizon estimation over a recording (<mjdiff/estimate.h>): at each step k the batch
// problem of batch.c on the window of the last N steps [s, k], s = max(0, k - N), with an
// arrival cost on the window's first state, warm-started from the previous window.
//
//   window k    min over x_s  1/2 sum_{t=s..k} |(h(x_t) - y_t) / sigma|^2 + 1/2 d' Pbar_s^-1 d,
//               d = x_s (-) xbar_s, x_{t+1} = f(x_t, u_t) (no process noise inside the window:
//               the dynamics are a constraint, the arrival cost carries the past)
//               solved by mjdiff_batchEstimate (Gauss-Newton, exact Jacobians), max_iter
//               iterations from the guess x_s^0; cov_s = H^-1 of its last linearisation
//   estimate    xhat_k = the rollout of the solution to k; its covariance G cov_s G' with
//               G = A_{k-1} ... A_s (step Jacobians along the rollout)
//   arrival     the filtering arrival cost: an EKF (filter.c, the same readings and sigmas,
//               process noise Q from sigma_*) started at (x0, P0) runs N steps behind; when the
//               window slides from s to s+1 it takes the readings y_s (update) and steps to s+1
//               (predict): (xbar_{s+1}, Pbar_{s+1}) = its mean and covariance, the information
//               of y_0 .. y_s only (the window's own readings are not counted twice). For a
//               linear system with Q = 0 the window's solution is then the posterior given
//               y_0 .. y_k, and xhat_k the Kalman filter's estimate (tests/test_estimate.cc).
//   warm start  the next window's guess is the current solution's state at its start (rolled
//               one step on when the window slides)
// Cost per step: max_iter + 1 linearisations of N steps (N step and sensor Jacobians each),
// N step Jacobians for the covariance, and one EKF step.

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/adjoint.h>
#include <mjdiff/estimate.h>
#include <mjdiff/state.h>

#include "est_internal.h"
#include "internal.h"

void mjdiff_defaultMheDef(mjdiffMheDef* def) {
  memset(def, 0, sizeof(*def));
  mjdiff_defaultBatchEstDef(&def->batch);
  def->batch.max_iter = 3;
  def->window = 20;
  def->sigma_qpos = 1e-4;
  def->sigma_qvel = 1e-3;
  def->sigma_act = 1e-3;
}

mjdiffStatus mjdiff_mheEstimate(mjModel* m, mjdiffModel* s, const mjdiffMheDef* def, int T,
                                mjtNum t0, const mjtNum* ctrl, const mjtNum* y, const mjtNum* x0,
                                const mjtNum* P0, mjtNum* states, mjtNum* sd,
                                mjdiffMheInfo* info, char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (info) memset(info, 0, sizeof(*info));
  if (!m || !s || !def || !y || !x0 || !P0 || !states) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "m, s, def, y, x0, P0 or states is NULL");
  }
  if (T < 1 || def->window < 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "T and window must be >= 1, got %d, %d",
                        T, def->window);
  }
  if (def->batch.params) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "moving-horizon estimation fits states only: params must be NULL");
  }
  int nx = mjdiff_stateSize(m), n = mjdiff_tangentSize(m), nu = m->nu, ns = m->nsensordata;
  size_t n2 = (size_t)n * n;
  mjtNum* xs = calloc((size_t)nx, sizeof(mjtNum));      // guess / solution of the window start
  mjtNum* xbar = calloc((size_t)nx, sizeof(mjtNum));    // arrival mean
  mjtNum* Pbar = calloc(n2, sizeof(mjtNum));            // arrival covariance
  mjtNum* info_m = calloc(n2, sizeof(mjtNum));          // its inverse
  mjtNum* cov = calloc(n2, sizeof(mjtNum));             // the window's covariance of x_s
  mjtNum* G = calloc(n2, sizeof(mjtNum));
  mjtNum* G2 = calloc(n2, sizeof(mjtNum));
  mjtNum* A = calloc(n2, sizeof(mjtNum));
  mjtNum* L = calloc(n2, sizeof(mjtNum));
  mjtNum* x1 = calloc((size_t)nx, sizeof(mjtNum));      // f(xhat_s): the next window's start
  mjData* d = mj_makeData(m);
  mjdiffStepDeriv* w = NULL;
  mjdiffFilter* ekf = NULL;
  mjdiffStatus st = MJDIFF_OK;
  if (!xs || !xbar || !Pbar || !info_m || !cov || !G || !G2 || !A || !L || !x1 || !d) {
    st = mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  }
  if (st == MJDIFF_OK) st = mjdiff_makeStepDeriv(m, s, NULL, &w, err, errsz);
  if (st == MJDIFF_OK) {
    mjdiffFilterDef fd;
    mjdiff_defaultFilterDef(&fd);
    fd.sensors = def->batch.sensors;
    fd.nsensor = def->batch.nsensor;
    fd.sigma_sensor = def->batch.sigma_sensor;
    fd.sensor_sigma = def->batch.sensor_sigma;
    fd.sigma_qpos = def->sigma_qpos;
    fd.sigma_qvel = def->sigma_qvel;
    fd.sigma_act = def->sigma_act;
    st = mjdiff_makeFilter(m, s, &fd, &ekf, err, errsz);
  }
  if (st == MJDIFF_OK) st = mjdiff_filterReset(ekf, x0, P0, t0, err, errsz);
  if (st == MJDIFF_OK) {
    mju_copy(xs, x0, nx);
    mju_copy(xbar, x0, nx);
    memcpy(Pbar, P0, sizeof(mjtNum) * n2);
  }
  mjdiffBatchEstDef bd = def->batch;
  bd.prior_sigma = NULL;
  bd.prior_x = xbar;
  bd.prior_info = info_m;
  int start = 0;
  long iters = 0;
  for (int k = 1; k <= T && st == MJDIFF_OK; k++) {
    int s0 = k - def->window > 0 ? k - def->window : 0;
    if (s0 > start) {
      // slide by one: the lagging EKF takes y_start and steps to start + 1
      const mjtNum* u = ctrl ? ctrl + (size_t)nu * start : NULL;
      char e2[1024];
      st = mjdiff_filterUpdate(ekf, u, y + (size_t)ns * start, e2, sizeof(e2));
      if (st == MJDIFF_OK) st = mjdiff_filterPredict(ekf, u, e2, sizeof(e2));
      if (st != MJDIFF_OK) {
        mjdiff_error(err, errsz, st, "moving horizon at step %d, arrival cost: %s", k, e2);
        break;
      }
      mjdiff_filterGet(ekf, xbar, Pbar, NULL, NULL);
      mju_copy(xs, x1, nx);
      start = s0;
    }
    // information of the arrival cost
    memcpy(L, Pbar, sizeof(mjtNum) * n2);
    int piv = mjdiff_cholesky(L, n, 0);
    if (piv) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "moving horizon diverged at step %d: arrival covariance not positive "
                        "definite (Cholesky fails at tangent row %d)",
                        k, piv - 1);
      break;
    }
    memset(info_m, 0, sizeof(mjtNum) * n2);
    for (int i = 0; i < n; i++) info_m[(size_t)i * n + i] = 1;
    mjdiff_cholSolve(L, n, info_m, n);
    mjdiff_estSymmetrize(info_m, n);
    // the window [start, k]
    mjdiffBatchEstInfo bi;
    char e2[1024];
    st = mjdiff_batchEstimate(m, s, &bd, k - start, t0 + start * m->opt.timestep,
                              ctrl ? ctrl + (size_t)nu * start : NULL, y + (size_t)ns * start, xs,
                              NULL, cov, &bi, e2, sizeof(e2));
    if (st != MJDIFF_OK) {
      mjdiff_error(err, errsz, st, "moving horizon at step %d: %s", k, e2);
      break;
    }
    iters += bi.iterations;
    if (bi.rank < n) {
      // an unobservable direction: the covariance of the solve is NaN; keep the arrival's
      memcpy(cov, Pbar, sizeof(mjtNum) * n2);
    }
    // the rollout from xhat_start to k, G = A_{k-1} .. A_start
    memset(G, 0, sizeof(mjtNum) * n2);
    for (int i = 0; i < n; i++) G[(size_t)i * n + i] = 1;
    mjdiff_setState(m, d, xs);
    d->time = t0 + start * m->opt.timestep;
    for (int t = start; t < k && st == MJDIFF_OK; t++) {
      if (ctrl) mju_copy(d->ctrl, ctrl + (size_t)nu * t, nu);
      else mju_zero(d->ctrl, nu);
      st = mjdiff_stepJacobian(m, d, s, w, A, NULL, NULL, err, errsz);
      if (st == MJDIFF_OK) st = mjdiff_step(m, d, s, err, errsz);
      if (st != MJDIFF_OK) break;
      if (t == start) mjdiff_getState(m, d, x1);
      mjdiff_gemm(0, 0, n, n, n, 1, A, G, 0, G2);
      memcpy(G, G2, sizeof(mjtNum) * n2);
    }
    if (st != MJDIFF_OK) break;
    mjdiff_getState(m, d, states + (size_t)nx * k);
    if (k == 1) mju_copy(states, xs, nx);
    if (sd) {
      // diag(G cov G')
      mjdiff_gemm(0, 0, n, n, n, 1, G, cov, 0, G2);
      for (int i = 0; i < n; i++) {
        mjtNum v = mju_dot(G2 + (size_t)i * n, G + (size_t)i * n, n);
        sd[(size_t)n * k + i] = sqrt(fmax(0, v));
        if (k == 1) sd[i] = sqrt(fmax(0, cov[(size_t)i * n + i]));
      }
    }
    if (info) {
      info->steps = k;
      info->iterations = iters;
    }
  }
  mjdiff_freeStepDeriv(w);
  mjdiff_freeFilter(ekf);
  if (d) mj_deleteData(d);
  free(xs);
  free(xbar);
  free(Pbar);
  free(info_m);
  free(cov);
  free(G);
  free(G2);
  free(A);
  free(L);
  free(x1);
  return st;
}
