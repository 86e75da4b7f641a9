// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Extended and unscented Kalman filters on the smooth step (<mjdiff/estimate.h>).
//
// Model: x_{k+1} = f(x_k, u_k) (+) w_k, w_k ~ N(0, Q);  y_k = h(x_k, u_k) + v_k, v_k ~ N(0, R),
// R = diag(sigma_i^2) over the selected readings. The estimate is a mean xhat (a point of the
// state space, nq+nv+na) and a covariance P of the error e = x (-) xhat in the tangent layout
// (ndx = 2nv+na), so that x = xhat (+) e.
//
// EKF (first order in e):
//   predict   xhat' = f(xhat, u)                                  (mjdiff_step)
//             e' = A e + w,  A = df/dx at xhat (tangent in, tangent out: mjdiff_stepJacobian or
//             mjd_transitionFD, both in this layout)
//             P' = A P A' + Q
//   update    readings i in the selection with y_i finite (the others skipped and counted):
//             r = y - h(xhat),  H = dh/dx at xhat (rows of mjdiff_sensorJacobian's C)
//             S = H P H' + R,   K = P H' S^-1  (S = L L' by Cholesky; K' = S^-1 H P, P = P')
//             xhat+ = xhat (+) K r
//             P+ = (I - K H) P (I - K H)' + K R K'   (Joseph form: symmetric and positive
//             semidefinite for any K, unlike (I - K H) P under rounding)
//   The error of xhat+ is measured in the tangent space at xhat+, not xhat: for a quaternion the
//   two frames differ by a rotation of |K r|, a second-order effect that is neglected (as in
//   MuJoCo MPC's and most multiplicative EKFs without the reset Jacobian).
//   Divergence: P' and P+ are checked by Cholesky; a pivot that is not positive (or a non-finite
//   entry) stops the filter with an error naming the step k and the row.
//
// UKF (Julier and Uhlmann; Wan and van der Merwe's scaled weights), with n = ndx:
//   lambda = alpha^2 (n + kappa) - n;  L L' = (n + lambda) P
//   sigma points X_0 = xhat, X_i = xhat (+) L_i, X_{n+i} = xhat (+) (-L_i)   (L_i: column i)
//   weights Wm_0 = lambda / (n + lambda), Wc_0 = Wm_0 + 1 - alpha^2 + beta,
//           Wm_i = Wc_i = 1 / (2 (n + lambda))
//   predict   Y_i = f(X_i, u); Z_i = Y_i (-) Y_0; zbar = sum Wm_i Z_i; xhat' = Y_0 (+) zbar
//             P' = sum Wc_i (Z_i - zbar)(Z_i - zbar)' + Q
//   update    Y_i = h(X_i, u) over the finite selected rows; ybar = sum Wm_i Y_i
//             Pyy = sum Wc_i (Y_i - ybar)(Y_i - ybar)' + R
//             Pxy = sum Wc_i D_i (Y_i - ybar)'  (D_i = +-L_i, D_0 = 0: their weighted mean is 0)
//             K = Pxy Pyy^-1;  xhat+ = xhat (+) K (y - ybar);  P+ = P - K Pyy K'
//   For a linear f and h every sigma-point sum is exact: the UKF is then the Kalman filter,
//   whatever alpha, beta, kappa (the property tests/test_estimate.cc checks).

#include <math.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/estimate.h>
#include <mjdiff/state.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "est_internal.h"
#include "internal.h"

struct mjdiffFilter_ {
  const mjModel* m;
  const mjdiffModel* s;
  int method, jacobian, centered;
  mjtNum fd_eps, alpha, beta, kappa;
  int nx, ndx, nu, ns, ny;
  int* rows;     // (ny) sensordata index of each selected reading
  mjtNum* rstd;  // (ny) its std
  mjData* d;     // the smooth step and sensors
  mjdiffStepDeriv* w;
  mjModel* mfd;  // MJDIFF_JAC_FD: a private copy with the smooth model attached
  mjdiffModel* sfd;
  mjData* dfd;
  // estimate
  mjtNum* x;  // (nx) mean
  mjtNum* P;  // (ndx^2) covariance
  mjtNum time;
  mjdiffFilterInfo info;
  // scratch
  mjtNum* Q;                // (ndx^2)
  mjtNum *A, *T1, *T2, *L;  // (ndx^2) each
  mjtNum* C;                // (ns x ndx) all readings' Jacobian
  mjtNum* H;                // (ny x ndx) the used rows
  mjtNum* S;                // (ny^2)
  mjtNum* K;                // (ndx x ny), then K' (ny x ndx)
  mjtNum *r, *rv;           // (ny) innovation, variances of the used rows
  int* use;                 // (ny) indices of the used rows
  mjtNum *xs, *dx;          // (nx), (ndx)
  mjtNum* ctrl;             // (nu)
  // UKF
  mjtNum* X;   // ((2n+1) x nx) sigma points
  mjtNum* Z;   // ((2n+1) x ndx) tangent offsets
  mjtNum* Yh;  // ((2n+1) x ny) readings
};

void mjdiff_defaultFilterDef(mjdiffFilterDef* def) {
  memset(def, 0, sizeof(*def));
  def->method = MJDIFF_FILTER_EKF;
  def->jacobian = MJDIFF_JAC_ANALYTIC;
  def->sigma_sensor = 1e-2;
  def->sigma_qpos = 1e-4;
  def->sigma_qvel = 1e-3;
  def->sigma_act = 1e-3;
  def->fd_eps = 1e-6;
  def->ukf_alpha = 1;
  def->ukf_beta = 2;
  def->ukf_kappa = 0;
}

void mjdiff_freeFilter(mjdiffFilter* f) {
  if (!f) return;
  if (f->mfd) {
    mjdiffModel* sfd = mjdiff_detach(f->mfd);
    mjdiff_freeModel(sfd ? sfd : f->sfd);
    mj_deleteModel(f->mfd);
  } else {
    mjdiff_freeModel(f->sfd);
  }
  if (f->dfd) mj_deleteData(f->dfd);
  if (f->d) mj_deleteData(f->d);
  mjdiff_freeStepDeriv(f->w);
  free(f->rows);
  free(f->rstd);
  free(f->x);
  free(f->P);
  free(f->Q);
  free(f->A);
  free(f->T1);
  free(f->T2);
  free(f->L);
  free(f->C);
  free(f->H);
  free(f->S);
  free(f->K);
  free(f->r);
  free(f->rv);
  free(f->use);
  free(f->xs);
  free(f->dx);
  free(f->ctrl);
  free(f->X);
  free(f->Z);
  free(f->Yh);
  free(f);
}

static mjtNum* numbers(size_t n) {
  return (mjtNum*)calloc(n ? n : 1, sizeof(mjtNum));
}

static int badSigma(mjtNum v) {
  return !(v >= 0) || !isfinite(v);
}

mjdiffStatus mjdiff_makeFilter(const mjModel* m, const mjdiffModel* s, const mjdiffFilterDef* def,
                               mjdiffFilter** out, char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (!m || !s) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "m or s is NULL");
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiffFilterDef dd;
  mjdiff_defaultFilterDef(&dd);
  if (def) dd = *def;
  if (dd.method != MJDIFF_FILTER_EKF && dd.method != MJDIFF_FILTER_UKF) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "method must be EKF (0) or UKF (1), got %d",
                        dd.method);
  }
  if (dd.jacobian != MJDIFF_JAC_ANALYTIC && dd.jacobian != MJDIFF_JAC_FD) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "jacobian must be ANALYTIC (0) or FD (1), got %d", dd.jacobian);
  }
  if (badSigma(dd.sigma_qpos) || badSigma(dd.sigma_qvel) || badSigma(dd.sigma_act)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "sigma_qpos, sigma_qvel, sigma_act must be >= 0, got %g, %g, %g",
                        dd.sigma_qpos, dd.sigma_qvel, dd.sigma_act);
  }
  if (!(dd.fd_eps > 0) || !isfinite(dd.fd_eps)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "fd_eps must be > 0, got %g", dd.fd_eps);
  }
  int ndx = mjdiff_tangentSize(m);
  if (!(dd.ukf_alpha > 0 && dd.ukf_alpha <= 1) || !(dd.ukf_beta >= 0) ||
      !(ndx + dd.ukf_kappa > 0)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "ukf_alpha must be in (0, 1], ukf_beta >= 0, ndx + ukf_kappa > 0; got "
                        "%g, %g, %g",
                        dd.ukf_alpha, dd.ukf_beta, dd.ukf_kappa);
  }
  if (dd.Q) {
    for (int i = 0; i < ndx * ndx; i++) {
      if (!isfinite(dd.Q[i])) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "Q[%d] is not finite", i);
      }
    }
  }

  mjdiffFilter* f = (mjdiffFilter*)calloc(1, sizeof(mjdiffFilter));
  if (!f) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  f->m = m;
  f->s = s;
  f->method = dd.method;
  f->jacobian = dd.jacobian;
  f->centered = dd.fd_centered != 0;
  f->fd_eps = dd.fd_eps;
  f->alpha = dd.ukf_alpha;
  f->beta = dd.ukf_beta;
  f->kappa = dd.ukf_kappa;
  f->nx = mjdiff_stateSize(m);
  f->ndx = ndx;
  f->nu = m->nu;
  f->ns = m->nsensordata;
  int needDeriv = dd.method == MJDIFF_FILTER_EKF && dd.jacobian == MJDIFF_JAC_ANALYTIC;
  st = mjdiff_estSelectSensors(m, dd.sensors, dd.nsensor, dd.sigma_sensor, dd.sensor_sigma,
                               needDeriv, &f->rows, &f->rstd, &f->ny, err, errsz);
  if (st != MJDIFF_OK) {
    mjdiff_freeFilter(f);
    return st;
  }
  int n = ndx, ny = f->ny;
  size_t n2 = (size_t)n * n;
  f->d = mj_makeData(m);
  f->x = numbers((size_t)f->nx);
  f->P = numbers(n2);
  f->Q = numbers(n2);
  f->A = numbers(n2);
  f->T1 = numbers(n2 > (size_t)n * ny ? n2 : (size_t)n * ny);
  f->T2 = numbers(n2 > (size_t)n * ny ? n2 : (size_t)n * ny);
  f->L = numbers(n2);
  f->C = numbers((size_t)f->ns * n);
  f->H = numbers((size_t)ny * n);
  f->S = numbers((size_t)ny * ny);
  f->K = numbers((size_t)ny * n);
  f->r = numbers((size_t)ny);
  f->rv = numbers((size_t)ny);
  f->use = (int*)calloc((size_t)ny, sizeof(int));
  f->xs = numbers((size_t)f->nx);
  f->dx = numbers((size_t)n);
  f->ctrl = numbers((size_t)f->nu);
  int fail = !f->d || !f->x || !f->P || !f->Q || !f->A || !f->T1 || !f->T2 || !f->L || !f->C ||
             !f->H || !f->S || !f->K || !f->r || !f->rv || !f->use || !f->xs || !f->dx || !f->ctrl;
  if (dd.method == MJDIFF_FILTER_UKF) {
    size_t np = 2 * (size_t)n + 1;
    f->X = numbers(np * f->nx);
    f->Z = numbers(np * n);
    f->Yh = numbers(np * ny);
    fail |= !f->X || !f->Z || !f->Yh;
  }
  if (fail) {
    mjdiff_freeFilter(f);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  }
  if (dd.method == MJDIFF_FILTER_EKF && dd.jacobian == MJDIFF_JAC_ANALYTIC) {
    st = mjdiff_makeStepDeriv(m, s, NULL, &f->w, err, errsz);
    if (st != MJDIFF_OK) {
      mjdiff_freeFilter(f);
      return st;
    }
  }
  if (dd.method == MJDIFF_FILTER_EKF && dd.jacobian == MJDIFF_JAC_FD &&
      mjdiff_substepCount(s) > 1) {
    // MuJoCo's mj_step takes one step of the timestep, the smooth step n substeps: the attached
    // copy below would linearise another step than the filter predicts with
    int nsub = mjdiff_substepCount(s);
    mjdiff_freeFilter(f);
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "finite-difference Jacobians (MJDIFF_JAC_FD) difference MuJoCo's mj_step, "
                        "one step of the timestep, while the smooth step takes %d substeps: use "
                        "the analytic Jacobians, or set mjdiff_substeps to 1",
                        nsub);
  }
  if (dd.method == MJDIFF_FILTER_EKF && dd.jacobian == MJDIFF_JAC_FD) {
    // mjd_transitionFD differences mj_step: the plain step of a copy with the smooth model
    // attached is the smooth step (one step: checked above)
    f->mfd = mj_copyModel(NULL, m);
    if (!f->mfd) {
      mjdiff_freeFilter(f);
      return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
    }
    st = mjdiff_copyModel(s, f->mfd, &f->sfd, err, errsz);
    if (st == MJDIFF_OK) st = mjdiff_attach(f->mfd, f->sfd, err, errsz);
    if (st != MJDIFF_OK) {
      mjdiff_freeFilter(f);
      return st;
    }
    f->dfd = mj_makeData(f->mfd);
    if (!f->dfd) {
      mjdiff_freeFilter(f);
      return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
    }
  }
  // process noise
  if (dd.Q) {
    memcpy(f->Q, dd.Q, sizeof(mjtNum) * n2);
    mjdiff_estSymmetrize(f->Q, n);
  } else {
    int nv = m->nv;
    for (int i = 0; i < n; i++) {
      mjtNum sd = i < nv ? dd.sigma_qpos : i < 2 * nv ? dd.sigma_qvel : dd.sigma_act;
      f->Q[(size_t)i * n + i] = sd * sd;
    }
  }
  // start: qpos0, zero velocity and activation, zero covariance
  mju_copy(f->x, m->qpos0, m->nq);
  f->info.nmeas = ny;
  *out = f;
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_filterReset(mjdiffFilter* f, const mjtNum* x, const mjtNum* P, mjtNum time,
                                char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (!f || !x || !P) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "f, x or P is NULL");
  int n = f->ndx;
  for (int i = 0; i < f->nx; i++) {
    if (!isfinite(x[i]))
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "x[%d] is not finite", i);
  }
  if (!isfinite(time)) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "time is not finite");
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      mjtNum a = P[(size_t)i * n + j], b = P[(size_t)j * n + i];
      if (!isfinite(a) || fabs(a - b) > 1e-9 * (fabs(a) + fabs(b))) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                            "P is not finite and symmetric at (%d, %d): %g vs %g", i, j, a, b);
      }
    }
  }
  memcpy(f->L, P, sizeof(mjtNum) * (size_t)n * n);
  int piv = mjdiff_cholesky(f->L, n, 0);
  if (piv) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "P is not positive definite (Cholesky pivot %d fails)", piv - 1);
  }
  mju_copy(f->x, x, f->nx);
  memcpy(f->P, P, sizeof(mjtNum) * (size_t)n * n);
  f->time = time;
  memset(&f->info, 0, sizeof(f->info));
  f->info.nmeas = f->ny;
  return MJDIFF_OK;
}

void mjdiff_filterGet(const mjdiffFilter* f, mjtNum* x, mjtNum* P, mjtNum* time,
                      mjdiffFilterInfo* info) {
  if (!f) return;
  if (x) mju_copy(x, f->x, f->nx);
  if (P) memcpy(P, f->P, sizeof(mjtNum) * (size_t)f->ndx * f->ndx);
  if (time) *time = f->time;
  if (info) *info = f->info;
}

// load x, ctrl and time into d
static void load(const mjdiffFilter* f, const mjModel* m, mjData* d, const mjtNum* x) {
  mjdiff_setState(m, d, x);
  mju_copy(d->ctrl, f->ctrl, f->nu);
  d->time = f->time;
}

static void setCtrl(mjdiffFilter* f, const mjtNum* ctrl) {
  if (ctrl)
    mju_copy(f->ctrl, ctrl, f->nu);
  else
    mju_zero(f->ctrl, f->nu);
}

// 0 if the covariance P (n x n) is positive definite (scratch L), else the failing row + 1
static int checkPD(mjdiffFilter* f, const mjtNum* P) {
  memcpy(f->L, P, sizeof(mjtNum) * (size_t)f->ndx * f->ndx);
  return mjdiff_cholesky(f->L, f->ndx, 0);
}

// a name for tangent row i, for messages
static void rowName(const mjModel* m, int i, char* buf, int n) {
  int nv = m->nv;
  const char* part = i < nv ? "dq" : i < 2 * nv ? "dv" : "da";
  int k = i < nv ? i : i < 2 * nv ? i - nv : i - 2 * nv;
  const char* nm = NULL;
  if (i < 2 * nv) nm = mj_id2name(m, mjOBJ_JOINT, m->dof_jntid[k]);
  snprintf(buf, (size_t)n, "%s row %d (%s %s)", part, i, i < 2 * nv ? "joint" : "actuator state",
           nm ? nm : "unnamed");
}

static mjdiffStatus diverged(mjdiffFilter* f, int piv, const char* what, char* err, int errsz) {
  char row[160];
  rowName(f->m, piv - 1, row, sizeof(row));
  return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                      "filter diverged at step %d: %s covariance not positive definite "
                      "(Cholesky fails at %s)",
                      f->info.step, what, row);
}

//---------------------------------- EKF ----------------------------------------------------------

static mjdiffStatus ekfPredict(mjdiffFilter* f, char* err, int errsz) {
  const mjModel* m = f->m;
  int n = f->ndx;
  size_t n2 = (size_t)n * n;
  mjdiffStatus st;
  if (f->jacobian == MJDIFF_JAC_ANALYTIC) {
    load(f, m, f->d, f->x);
    st = mjdiff_stepJacobian(m, f->d, f->s, f->w, f->A, NULL, NULL, err, errsz);
    if (st != MJDIFF_OK) return st;
  } else {
    load(f, f->mfd, f->dfd, f->x);
    mjd_transitionFD(f->mfd, f->dfd, f->fd_eps, (mjtByte)f->centered, f->A, NULL, NULL, NULL);
    load(f, m, f->d, f->x);
  }
  // mean: the smooth step
  load(f, m, f->d, f->x);
  st = mjdiff_step(m, f->d, f->s, err, errsz);
  if (st != MJDIFF_OK) return st;
  // P' = A P A' + Q
  mjdiff_gemm(0, 0, n, n, n, 1, f->A, f->P, 0, f->T1);
  memcpy(f->T2, f->Q, sizeof(mjtNum) * n2);
  mjdiff_gemm(0, 1, n, n, n, 1, f->T1, f->A, 1, f->T2);
  mjdiff_estSymmetrize(f->T2, n);
  int piv = checkPD(f, f->T2);
  if (piv) return diverged(f, piv, "predicted", err, errsz);
  mjdiff_getState(m, f->d, f->x);
  memcpy(f->P, f->T2, sizeof(mjtNum) * n2);
  return MJDIFF_OK;
}

// the used rows: finite selected readings of y; returns their number
static int usedRows(mjdiffFilter* f, const mjtNum* y) {
  int k = 0;
  for (int i = 0; i < f->ny; i++) {
    mjtNum v = y[f->rows[i]];
    if (isfinite(v)) {
      f->use[k++] = i;
    } else {
      f->info.nskipped++;
    }
  }
  return k;
}

// with K' (my x n) in f->K, H (my x n), variances rv (my): P+ = (I - KH) P (I - KH)' + K R K'
// into T2; the correction dx = K r applied to x
static mjdiffStatus josephUpdate(mjdiffFilter* f, int my, char* err, int errsz) {
  const mjModel* m = f->m;
  int n = f->ndx;
  size_t n2 = (size_t)n * n;
  mjtNum* IKH = f->A;  // scratch
  // IKH = I - K H = I - (K')' H
  mjdiff_gemm(1, 0, n, n, my, -1, f->K, f->H, 0, IKH);
  for (int i = 0; i < n; i++) IKH[(size_t)i * n + i] += 1;
  mjdiff_gemm(0, 0, n, n, n, 1, IKH, f->P, 0, f->T1);
  mjdiff_gemm(0, 1, n, n, n, 1, f->T1, IKH, 0, f->T2);
  // + K R K' = (K')' (R K'): R K' into H (no longer needed)
  for (int j = 0; j < my; j++) {
    const mjtNum* kj = f->K + (size_t)j * n;
    mjtNum* wj = f->H + (size_t)j * n;
    for (int b = 0; b < n; b++) wj[b] = f->rv[j] * kj[b];
  }
  mjdiff_gemm(1, 0, n, n, my, 1, f->K, f->H, 1, f->T2);
  mjdiff_estSymmetrize(f->T2, n);
  int piv = checkPD(f, f->T2);
  if (piv) return diverged(f, piv, "updated", err, errsz);
  // dx = K r = (K')' r
  mju_zero(f->dx, n);
  for (int j = 0; j < my; j++) mju_addToScl(f->dx, f->K + (size_t)j * n, f->r[j], n);
  mjdiff_stateIntegrate(m, f->x, f->dx, 1, f->x);
  memcpy(f->P, f->T2, sizeof(mjtNum) * n2);
  return MJDIFF_OK;
}

// S (my x my) in f->S (Cholesky factor on return); nis; 0 or the failing pivot
static int factorInnovation(mjdiffFilter* f, int my) {
  int piv = mjdiff_cholesky(f->S, my, 0);
  if (piv) return piv;
  // nis = r' S^-1 r = |z|^2, L z = r
  mjtNum nis = 0;
  {
    // forward substitution into T1's first my numbers
    mjtNum* z = f->T1;
    for (int i = 0; i < my; i++) {
      mjtNum sum = f->r[i];
      for (int k = 0; k < i; k++) sum -= f->S[(size_t)i * my + k] * z[k];
      z[i] = sum / f->S[(size_t)i * my + i];
      nis += z[i] * z[i];
    }
  }
  f->info.nis = nis;
  return 0;
}

static mjdiffStatus innovationFail(mjdiffFilter* f, int piv, char* err, int errsz) {
  int sd = f->rows[f->use[piv - 1]];
  int sid = 0;
  while (sid + 1 < f->m->nsensor && f->m->sensor_adr[sid + 1] <= sd) sid++;
  const char* nm = mj_id2name(f->m, mjOBJ_SENSOR, sid);
  return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                      "filter diverged at step %d: innovation covariance not positive definite "
                      "(Cholesky fails at reading %d, sensor '%s')",
                      f->info.step, sd, nm ? nm : "");
}

static mjdiffStatus ekfUpdate(mjdiffFilter* f, const mjtNum* y, char* err, int errsz) {
  const mjModel* m = f->m;
  int n = f->ndx;
  int my = usedRows(f, y);
  if (my == 0) return MJDIFF_OK;
  mjdiffStatus st;
  load(f, m, f->d, f->x);
  if (f->jacobian == MJDIFF_JAC_ANALYTIC) {
    // C and the readings h(x) of the smooth forward pass at x (left in d->sensordata)
    st = mjdiff_sensorJacobian(m, f->d, f->s, f->w, f->C, NULL, NULL, err, errsz);
    if (st != MJDIFF_OK) return st;
  } else {
    load(f, f->mfd, f->dfd, f->x);
    mjd_transitionFD(f->mfd, f->dfd, f->fd_eps, (mjtByte)f->centered, NULL, NULL, f->C, NULL);
    st = mjdiff_forward(m, f->d, f->s, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  // H, r, R of the used rows
  for (int j = 0; j < my; j++) {
    int i = f->use[j], sd = f->rows[i];
    memcpy(f->H + (size_t)j * n, f->C + (size_t)sd * n, sizeof(mjtNum) * n);
    f->r[j] = y[sd] - f->d->sensordata[sd];
    f->rv[j] = f->rstd[i] * f->rstd[i];
  }
  // HP = H P (my x n) into K; S = HP H' + R
  mjdiff_gemm(0, 0, my, n, n, 1, f->H, f->P, 0, f->K);
  mjdiff_gemm(0, 1, my, my, n, 1, f->K, f->H, 0, f->S);
  for (int j = 0; j < my; j++) f->S[(size_t)j * my + j] += f->rv[j];
  mjdiff_estSymmetrize(f->S, my);
  int piv = factorInnovation(f, my);
  if (piv) return innovationFail(f, piv, err, errsz);
  // K' = S^-1 H P
  mjdiff_cholSolve(f->S, my, f->K, n);
  st = josephUpdate(f, my, err, errsz);
  if (st != MJDIFF_OK) return st;
  f->info.nupdate++;
  f->info.nmeasured += my;
  return MJDIFF_OK;
}

//---------------------------------- UKF ----------------------------------------------------------

// sigma points of (x, P) into f->X, their offsets into f->Z; 0 or the failing pivot
static int sigmaPoints(mjdiffFilter* f, mjtNum* lambda) {
  int n = f->ndx, nx = f->nx;
  *lambda = f->alpha * f->alpha * (n + f->kappa) - n;
  mjtNum c = n + *lambda;
  memcpy(f->L, f->P, sizeof(mjtNum) * (size_t)n * n);
  for (size_t i = 0; i < (size_t)n * n; i++) f->L[i] *= c;
  int piv = mjdiff_cholesky(f->L, n, 0);
  if (piv) return piv;
  mju_copy(f->X, f->x, nx);
  mju_zero(f->Z, n);
  for (int i = 0; i < n; i++) {
    mjtNum* zp = f->Z + (size_t)(1 + i) * n;
    mjtNum* zm = f->Z + (size_t)(1 + n + i) * n;
    for (int k = 0; k < n; k++) {
      zp[k] = f->L[(size_t)k * n + i];
      zm[k] = -zp[k];
    }
    mjdiff_stateIntegrate(f->m, f->x, zp, 1, f->X + (size_t)(1 + i) * nx);
    mjdiff_stateIntegrate(f->m, f->x, zm, 1, f->X + (size_t)(1 + n + i) * nx);
  }
  return 0;
}

static void weights(const mjdiffFilter* f, mjtNum lambda, mjtNum* wm0, mjtNum* wc0, mjtNum* wi) {
  int n = f->ndx;
  *wm0 = lambda / (n + lambda);
  *wc0 = *wm0 + 1 - f->alpha * f->alpha + f->beta;
  *wi = 1 / (2 * (n + lambda));
}

static mjdiffStatus ukfPredict(mjdiffFilter* f, char* err, int errsz) {
  const mjModel* m = f->m;
  int n = f->ndx, nx = f->nx, np = 2 * n + 1;
  size_t n2 = (size_t)n * n;
  mjtNum lambda, wm0, wc0, wi;
  int piv = sigmaPoints(f, &lambda);
  if (piv) return diverged(f, piv, "current", err, errsz);
  weights(f, lambda, &wm0, &wc0, &wi);
  // propagate
  for (int i = 0; i < np; i++) {
    mjtNum* Xi = f->X + (size_t)i * nx;
    load(f, m, f->d, Xi);
    mjdiffStatus st = mjdiff_step(m, f->d, f->s, err, errsz);
    if (st != MJDIFF_OK) return st;
    mjdiff_getState(m, f->d, Xi);
  }
  // offsets from Y_0 and their weighted mean
  mjtNum* zbar = f->dx;
  mju_zero(zbar, n);
  for (int i = 0; i < np; i++) {
    mjtNum* Zi = f->Z + (size_t)i * n;
    mjdiff_stateDiff(m, f->X, f->X + (size_t)i * nx, Zi);
    mju_addToScl(zbar, Zi, i ? wi : wm0, n);
  }
  // P' = sum Wc (Z - zbar)(Z - zbar)' + Q
  memcpy(f->T2, f->Q, sizeof(mjtNum) * n2);
  for (int i = 0; i < np; i++) {
    mjtNum* Zi = f->Z + (size_t)i * n;
    mju_subFrom(Zi, zbar, n);
    mjtNum w = i ? wi : wc0;
    for (int a = 0; a < n; a++) {
      mjtNum c = w * Zi[a];
      if (c == 0) continue;
      mjtNum* row = f->T2 + (size_t)a * n;
      for (int b = 0; b < n; b++) row[b] += c * Zi[b];
    }
  }
  mjdiff_estSymmetrize(f->T2, n);
  piv = checkPD(f, f->T2);
  if (piv) return diverged(f, piv, "predicted", err, errsz);
  mjdiff_stateIntegrate(m, f->X, zbar, 1, f->x);
  memcpy(f->P, f->T2, sizeof(mjtNum) * n2);
  return MJDIFF_OK;
}

static mjdiffStatus ukfUpdate(mjdiffFilter* f, const mjtNum* y, char* err, int errsz) {
  const mjModel* m = f->m;
  int n = f->ndx, nx = f->nx, np = 2 * n + 1;
  int my = usedRows(f, y);
  if (my == 0) return MJDIFF_OK;
  mjtNum lambda, wm0, wc0, wi;
  int piv = sigmaPoints(f, &lambda);
  if (piv) return diverged(f, piv, "current", err, errsz);
  weights(f, lambda, &wm0, &wc0, &wi);
  // readings of the sigma points
  mjtNum* ybar = f->r;
  mju_zero(ybar, my);
  for (int i = 0; i < np; i++) {
    load(f, m, f->d, f->X + (size_t)i * nx);
    mjdiffStatus st = mjdiff_forward(m, f->d, f->s, err, errsz);
    if (st != MJDIFF_OK) return st;
    mjtNum* Yi = f->Yh + (size_t)i * my;
    for (int j = 0; j < my; j++) Yi[j] = f->d->sensordata[f->rows[f->use[j]]];
    mju_addToScl(ybar, Yi, i ? wi : wm0, my);
  }
  // Pyy (S), Pxy' (my x n, into K)
  memset(f->S, 0, sizeof(mjtNum) * (size_t)my * my);
  memset(f->K, 0, sizeof(mjtNum) * (size_t)my * n);
  for (int i = 0; i < np; i++) {
    mjtNum* Yi = f->Yh + (size_t)i * my;
    mju_subFrom(Yi, ybar, my);
    mjtNum w = i ? wi : wc0;
    const mjtNum* Zi = f->Z + (size_t)i * n;
    for (int a = 0; a < my; a++) {
      mjtNum c = w * Yi[a];
      if (c == 0) continue;
      mjtNum* srow = f->S + (size_t)a * my;
      for (int b = 0; b < my; b++) srow[b] += c * Yi[b];
      if (i) {
        mjtNum* krow = f->K + (size_t)a * n;
        for (int b = 0; b < n; b++) krow[b] += c * Zi[b];
      }
    }
  }
  for (int j = 0; j < my; j++) {
    f->rv[j] = f->rstd[f->use[j]] * f->rstd[f->use[j]];
    f->S[(size_t)j * my + j] += f->rv[j];
  }
  mjdiff_estSymmetrize(f->S, my);
  // innovation r = y - ybar (ybar was in f->r)
  for (int j = 0; j < my; j++) f->r[j] = y[f->rows[f->use[j]]] - ybar[j];
  // keep Pxy' for P+ = P - K Pyy K' = P - Pxy K'
  mjtNum* Pxyt = f->H;
  memcpy(Pxyt, f->K, sizeof(mjtNum) * (size_t)my * n);
  piv = factorInnovation(f, my);
  if (piv) return innovationFail(f, piv, err, errsz);
  // K' = Pyy^-1 Pxy'
  mjdiff_cholSolve(f->S, my, f->K, n);
  // P+ = P - (Pxy')' K'
  size_t n2 = (size_t)n * n;
  memcpy(f->T2, f->P, sizeof(mjtNum) * n2);
  mjdiff_gemm(1, 0, n, n, my, -1, Pxyt, f->K, 1, f->T2);
  mjdiff_estSymmetrize(f->T2, n);
  piv = checkPD(f, f->T2);
  if (piv) return diverged(f, piv, "updated", err, errsz);
  mju_zero(f->dx, n);
  for (int j = 0; j < my; j++) mju_addToScl(f->dx, f->K + (size_t)j * n, f->r[j], n);
  mjdiff_stateIntegrate(m, f->x, f->dx, 1, f->x);
  memcpy(f->P, f->T2, sizeof(mjtNum) * n2);
  f->info.nupdate++;
  f->info.nmeasured += my;
  return MJDIFF_OK;
}

//---------------------------------- public steps -------------------------------------------------

mjdiffStatus mjdiff_filterUpdate(mjdiffFilter* f, const mjtNum* ctrl, const mjtNum* y, char* err,
                                 int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (!f || !y) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "f or y is NULL");
  setCtrl(f, ctrl);
  if (f->method == MJDIFF_FILTER_UKF) return ukfUpdate(f, y, err, errsz);
  return ekfUpdate(f, y, err, errsz);
}

mjdiffStatus mjdiff_filterPredict(mjdiffFilter* f, const mjtNum* ctrl, char* err, int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (!f) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "f is NULL");
  setCtrl(f, ctrl);
  mjtNum time = f->time;
  mjdiffStatus st =
      f->method == MJDIFF_FILTER_UKF ? ukfPredict(f, err, errsz) : ekfPredict(f, err, errsz);
  if (st != MJDIFF_OK) {
    f->time = time;
    if (st != MJDIFF_ERR_NONFINITE || !strstr(err ? err : "", "diverged")) {
      // a failing step or derivative: name the step
      char msg[512];
      snprintf(msg, sizeof(msg), "%s", err ? err : "");
      mjdiff_error(err, errsz, st, "filter step %d: %s", f->info.step, msg);
    }
    return st;
  }
  f->time = time + f->m->opt.timestep;
  f->info.step++;
  return MJDIFF_OK;
}
