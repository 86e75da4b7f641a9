// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The differentiable filter (<mjdiff/estimate.h>, mjdiff_filterNLL): the innovations' negative
// log-likelihood of an EKF run over a recording and its gradient in the log noise scales.
//
// Parameters theta = (a, b): Q = e^a Q0, R = e^b R0 (Q0, R0: the filter definition's process and
// measurement noise), so dQ/da = Q, dR/db = R, all other parameter derivatives zero.
//
// Errors: an innovation covariance that is not positive definite stops the run with
// MJDIFF_ERR_NONFINITE naming the step (the covariances P are not checked: the NLL of a run
// whose P loses definiteness is not meaningful, and its S shows it).
//
// Forward (the EKF of estimate/filter.c, same timing: update(u_t, y_t), then predict(u_t) for
// t < T; the readings at x_T use u_{T-1}):
//   update   r = y - h(x),  H = dh/dx(x),  S = H P H' + R,  K = P H' S^-1
//            NLL += 1/2 (r' S^-1 r + log det S)   (the constant my/2 log 2 pi left out)
//            x+ = x (+) K r,  M = I - K H,  P+ = M P M' + K R K'   (Joseph)
//   predict  x' = f(x),  A = df/dx(x),  P' = A P A' + Q
//
// Method: forward-mode (tangent) propagation of (x, P) for the 2 parameters. For each parameter
// with tangents (dx, dP) (dx in the tangent layout at x):
//   update   dr = -H dx
//            dS = dH P H' + H dP H' + H P dH' + dR
//            dNLL = r' S^-1 dr - 1/2 a' dS a + 1/2 tr(S^-1 dS),  a = S^-1 r
//            dK = (dP H' + P dH') S^-1 - K dS S^-1
//            dx+ = dx + dK r + K dr
//            dM = -(dK H + K dH)
//            dP+ = dM P M' + M P dM' + M dP M' + dK R K' + K R dK' + K dR K'
//   predict  dx' = A dx,  dP' = dA P A' + A P dA' + A dP A' + dQ
// where dA = (d/dx A)[dx] and dH = (d/dx H)[dx] are second derivatives of the step and the
// sensors along the state's tangent. With curvature = 0 they are neglected (dA = dH = 0); with
// curvature = 1 they are central differences of the exact (analytic) Jacobians,
//   dA ~ (A(x (+) eps dx) - A(x (-) eps dx)) / (2 eps),  eps = curv_eps / |dx|
// (error O(eps^2 |dx|^2) times the third derivative, plus rounding of A over eps).
// Model parameters p_k (params): the same tangents with dQ = dR = 0 and the explicit terms
//   update   dr = -(H dx + dh/dp_k)        (mjdiff_sensorJacobian's Q)
//   predict  dx' = A dx + df/dp_k          (mjdiff_stepJacobian's P)
// and dA, dH the derivatives of the Jacobians along (dx, e_k): the mixed second derivative
// d^2 f/dx dp_k is not optional (A depends on a damping or a mass directly), so it is always
// taken by central differences of the exact Jacobians with p_k moved by +-eps (along dx too with
// curvature 1, along e_k alone with curvature 0).
// Why tangents and an EKF, not a sigma-point filter with the VJP: there are few parameters (2
// scales and a handful of model parameters), so forward mode costs one tangent pass per
// parameter through small dense algebra, needs no tape of the
// filter run, and is exact for the noise scales on a linear model (A and H constant: dA = dH =
// 0 is then the truth, not an approximation). On a nonlinear model the linearisation point moves
// with x, whose tangent is propagated exactly; only the curvature of f and h along it needs the
// second derivatives that the library does not have analytically. A UKF would need just the step
// JVP, but its gradient goes through a Cholesky factor of P at every step (and 2n+1 JVPs per
// step and parameter); that is left for later.
// The tangent transport of x (+) dx across a quaternion's correction is neglected as in the EKF
// itself (exact for hinge and slide joints, as on the models tested here).

#include <math.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/estimate.h>
#include <mjdiff/state.h>
#include <stdlib.h>
#include <string.h>

#include "est_internal.h"
#include "internal.h"

typedef struct {
  mjModel* m;
  mjdiffModel* s;
  const mjdiffParams* par;
  int np;
  mjtNum *p0, *pv;  // (np) the parameters' values, scratch
  mjData* d;
  mjdiffStepDeriv* w;
  int nx, n, ns, ny;
  mjtNum* xs;  // (nx) scratch state
  mjtNum* Cp;  // (ns x n) scratch sensor Jacobian
  mjtNum* Cm;  // (ns x n)
} Ctx;

static void loadState(Ctx* c, const mjtNum* x, const mjtNum* u, mjtNum time) {
  mjdiff_setState(c->m, c->d, x);
  if (u)
    mju_copy(c->d->ctrl, u, c->m->nu);
  else
    mju_zero(c->d->ctrl, c->m->nu);
  c->d->time = time;
}

// the step Jacobian (A) or sensor Jacobian (C) at x (+) eps dir and parameter k moved by eps
// (k < 0: none) into out; the parameters restored
static mjdiffStatus jacAt(Ctx* c, int sensor, const mjtNum* x, const mjtNum* dir, int k,
                          mjtNum eps, const mjtNum* u, mjtNum time, mjtNum* out, char* err,
                          int errsz) {
  mjdiffStatus st;
  if (k >= 0) {
    mju_copy(c->pv, c->p0, c->np);
    c->pv[k] += eps;
    st = mjdiff_setParamValues(c->m, c->s, c->par, c->pv, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  if (dir)
    mjdiff_stateIntegrate(c->m, x, dir, eps, c->xs);
  else
    mju_copy(c->xs, x, c->nx);
  loadState(c, c->xs, u, time);
  if (sensor)
    st = mjdiff_sensorJacobian(c->m, c->d, c->s, c->w, out, NULL, NULL, err, errsz);
  else
    st = mjdiff_stepJacobian(c->m, c->d, c->s, c->w, out, NULL, NULL, err, errsz);
  if (k >= 0) {
    mjdiffStatus st2 = mjdiff_setParamValues(c->m, c->s, c->par, c->p0, NULL, 0);
    if (st == MJDIFF_OK) st = st2;
  }
  return st;
}

// dJ = directional derivative of the Jacobian (rows x n, A: sensor 0, C: sensor 1) along dir by
// central differences of the exact Jacobians; zero if dir is zero
// (dir NULL: zero); with parameter k (>= 0) moved by 1 along
static mjdiffStatus jacDir(Ctx* c, int sensor, const mjtNum* x, const mjtNum* dir, int k,
                           mjtNum curv_eps, const mjtNum* u, mjtNum time, mjtNum* dJ, char* err,
                           int errsz) {
  int n = c->n, rows = sensor ? c->ns : n;
  mjtNum nrm = dir ? mju_norm(dir, n) : 0;
  if (k >= 0) nrm = sqrt(nrm * nrm + 1);
  if (nrm == 0) {
    mju_zero(dJ, rows * n);
    return MJDIFF_OK;
  }
  mjtNum eps = curv_eps / nrm;
  mjdiffStatus st = jacAt(c, sensor, x, dir, k, eps, u, time, c->Cp, err, errsz);
  if (st == MJDIFF_OK) st = jacAt(c, sensor, x, dir, k, -eps, u, time, c->Cm, err, errsz);
  if (st != MJDIFF_OK) return st;
  for (int i = 0; i < rows * n; i++) dJ[i] = (c->Cp[i] - c->Cm[i]) / (2 * eps);
  return MJDIFF_OK;
}

// out = X P Y' (X, Y: r x n; P: n x n), with tmp (r x n)
static void sandwich(int r, int n, const mjtNum* X, const mjtNum* P, const mjtNum* Y,
                     mjtNum beta, mjtNum* out, mjtNum* tmp) {
  mjdiff_gemm(0, 0, r, n, n, 1, X, P, 0, tmp);
  mjdiff_gemm(0, 1, r, r, n, 1, tmp, Y, beta, out);
}

// out += T + T' (n x n)
static void addSym(int n, const mjtNum* T, mjtNum* out) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) out[i * n + j] += T[i * n + j] + T[j * n + i];
}

mjdiffStatus mjdiff_filterNLL(mjModel* m, mjdiffModel* s, const mjdiffFilterDef* def,
                              const mjdiffParams* params, mjtNum log_qscale, mjtNum log_rscale, int curvature,
                              mjtNum curv_eps, int T, mjtNum t0, const mjtNum* ctrl,
                              const mjtNum* y, const mjtNum* x0, const mjtNum* P0, mjtNum* nll,
                              mjtNum* grad, mjtNum* x_out, mjtNum* P_out, char* err,
                              int errsz) {
  if (err && errsz > 0) err[0] = 0;
  if (!m || !s || !y || !x0 || !P0)
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "m, s, y, x0 or P0 is NULL");
  if (T < 0) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "T must be >= 0, got %d", T);
  if (!isfinite(log_qscale) || !isfinite(log_rscale))
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "log noise scales must be finite");
  if (curv_eps == 0) curv_eps = 1e-6;
  if (!(curv_eps > 0) || !isfinite(curv_eps))
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "curv_eps must be > 0 (0: 1e-6), got %g",
                        curv_eps);
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiffFilterDef dd;
  mjdiff_defaultFilterDef(&dd);
  if (def) dd = *def;
  if (dd.method != MJDIFF_FILTER_EKF || dd.jacobian != MJDIFF_JAC_ANALYTIC)
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "mjdiff_filterNLL runs the analytic EKF only (method 0, jacobian 0)");

  Ctx c;
  memset(&c, 0, sizeof(c));
  c.m = m;
  c.s = s;
  c.par = params;
  c.np = mjdiff_paramCount(params);
  int np = c.np, npar = 2 + np;
  c.nx = mjdiff_stateSize(m);
  c.n = mjdiff_tangentSize(m);
  c.ns = m->nsensordata;
  int n = c.n, nx = c.nx, ns = c.ns, nv = m->nv;
  int* rows = NULL;
  mjtNum* rstd = NULL;
  st = mjdiff_estSelectSensors(m, dd.sensors, dd.nsensor, dd.sigma_sensor, dd.sensor_sigma, 1,
                               &rows, &rstd, &c.ny, err, errsz);
  if (st != MJDIFF_OK) return st;
  int ny = c.ny;
  size_t n2 = (size_t)n * n, big = n2 > (size_t)n * ny ? n2 : (size_t)n * ny;
  // one allocation for every array
  size_t total = (size_t)nx * 2 + (size_t)ns * n * 3 + n2 * 10 + big * 6 + (size_t)ny * ny * 4 +
                 (size_t)ny * 6 + (size_t)npar * ((size_t)n + n2 + (size_t)ns * n + n2) +
                 (size_t)np * (2 + n + ns) + (size_t)npar;
  mjtNum* mem = (mjtNum*)calloc(total ? total : 1, sizeof(mjtNum));
  int* use = (int*)calloc((size_t)(ny ? ny : 1), sizeof(int));
  mjtNum** ptr = (mjtNum**)calloc((size_t)npar * 4, sizeof(mjtNum*));
  c.d = mj_makeData(m);
  if (!mem || !use || !ptr || !c.d) {
    st = mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
    goto done;
  }
  st = mjdiff_makeStepDeriv(m, s, params, &c.w, err, errsz);
  if (st != MJDIFF_OK) goto done;
  mjtNum* p = mem;
#define TAKE(k) (p += (k), p - (k))
  mjtNum* x = TAKE(nx);
  c.xs = TAKE(nx);
  mjtNum* C = TAKE((size_t)ns * n);
  c.Cp = TAKE((size_t)ns * n);
  c.Cm = TAKE((size_t)ns * n);
  mjtNum *P = TAKE(n2), *Q = TAKE(n2), *A = TAKE(n2), *M = TAKE(n2), *Pn = TAKE(n2);
  mjtNum *T1 = TAKE(big), *T2 = TAKE(n2), *dHb = TAKE(big), *dM = TAKE(n2), *dPn = TAKE(n2);
  mjtNum *H = TAKE(big), *PHt = TAKE(big), *K = TAKE(big), *dK = TAKE(big);
  mjtNum *S = TAKE((size_t)ny * ny), *Si = TAKE((size_t)ny * ny), *dS = TAKE((size_t)ny * ny);
  mjtNum* W = TAKE((size_t)ny * ny);
  mjtNum *r = TAKE(ny), *rv = TAKE(ny), *a = TAKE(ny), *dr = TAKE(ny), *v1 = TAKE(ny);

  mjtNum **dx = ptr, **dP = ptr + npar, **dJ = ptr + 2 * npar, **dA = ptr + 3 * npar;
  c.p0 = TAKE(np);
  c.pv = TAKE(np);
  mjtNum* Fp = TAKE((size_t)n * np);   // df/dp (n x np)
  mjtNum* Hq = TAKE((size_t)ns * np);  // dh/dp (ns x np)
  mjtNum* g = TAKE(npar);              // the gradient
  if (np) mjdiff_getParamValues(m, s, params, c.p0);
  for (int j = 0; j < npar; j++) {
    dx[j] = TAKE(n);
    dP[j] = TAKE(n2);
    dJ[j] = TAKE((size_t)ns * n);
    dA[j] = TAKE(n2);
  }
#undef TAKE

  // Q = e^a Q0
  mjtNum qs = exp(log_qscale), rs = exp(log_rscale);
  if (dd.Q) {
    for (size_t i = 0; i < n2; i++) Q[i] = qs * dd.Q[i];
    mjdiff_estSymmetrize(Q, n);
  } else {
    for (int i = 0; i < n; i++) {
      mjtNum sd = i < nv ? dd.sigma_qpos : i < 2 * nv ? dd.sigma_qvel : dd.sigma_act;
      Q[(size_t)i * n + i] = qs * sd * sd;
    }
  }
  mju_copy(x, x0, nx);
  memcpy(P, P0, sizeof(mjtNum) * n2);
  mjtNum L = 0;
  mjtNum h = m->opt.timestep;
  for (int t = 0; t <= T; t++) {
    const mjtNum* u = !ctrl || T == 0 ? NULL : ctrl + (size_t)(t < T ? t : T - 1) * m->nu;
    mjtNum time = t0 + t * h;
    const mjtNum* yt = y + (size_t)t * ns;
    // ---- update
    int my = 0;
    for (int i = 0; i < ny; i++)
      if (isfinite(yt[rows[i]])) use[my++] = i;
    if (my) {
      loadState(&c, x, u, time);
      st = mjdiff_sensorJacobian(m, c.d, s, c.w, C, NULL, np ? Hq : NULL, err, errsz);
      if (st != MJDIFF_OK) goto done;
      for (int k = 0; k < my; k++) {
        int sd = rows[use[k]];
        memcpy(H + (size_t)k * n, C + (size_t)sd * n, sizeof(mjtNum) * n);
        r[k] = yt[sd] - c.d->sensordata[sd];
        rv[k] = rs * rstd[use[k]] * rstd[use[k]];
      }
      for (int j = 0; grad && j < npar; j++) {
        if (curvature || j >= 2) {
          st = jacDir(&c, 1, x, curvature ? dx[j] : NULL, j - 2, curv_eps, u, time, dJ[j], err,
                      errsz);
          if (st != MJDIFF_OK) goto done;
        }
      }
      // S = H P H' + R; Si = S^-1 (Cholesky)
      sandwich(my, n, H, P, H, 0, S, T1);
      for (int k = 0; k < my; k++) S[k * my + k] += rv[k];
      mjdiff_estSymmetrize(S, my);
      memcpy(W, S, sizeof(mjtNum) * my * my);
      if (mjdiff_cholesky(W, my, 0)) {
        st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                          "filter diverged at step %d: innovation covariance not positive "
                          "definite",
                          t);
        goto done;
      }
      mjtNum logdet = 0;
      for (int k = 0; k < my; k++) logdet += 2 * log(W[k * my + k]);
      memset(Si, 0, sizeof(mjtNum) * my * my);
      for (int k = 0; k < my; k++) Si[k * my + k] = 1;
      mjdiff_cholSolve(W, my, Si, my);
      mjdiff_estSymmetrize(Si, my);
      mjdiff_gemm(0, 0, my, 1, my, 1, Si, r, 0, a);
      L += 0.5 * (mju_dot(r, a, my) + logdet);
      // K = P H' Si (n x my)
      mjdiff_gemm(0, 1, n, my, n, 1, P, H, 0, PHt);
      mjdiff_gemm(0, 0, n, my, my, 1, PHt, Si, 0, K);
      // M = I - K H
      mjdiff_gemm(0, 0, n, n, my, -1, K, H, 0, M);
      for (int i = 0; i < n; i++) M[i * n + i] += 1;
      // tangents
      if (grad) {
        for (int j = 0; j < npar; j++) {
          int curv = curvature || j >= 2;
          mjtNum* dH = dHb;  // (my x n) rows of dJ, or zero
          for (int k = 0; k < my; k++) {
            if (curv)
              memcpy(dH + (size_t)k * n, dJ[j] + (size_t)rows[use[k]] * n, sizeof(mjtNum) * n);
            else
              mju_zero(dH + (size_t)k * n, n);
          }
          // dr = -H dx
          mjdiff_gemm(0, 0, my, 1, n, -1, H, dx[j], 0, dr);
          if (j >= 2)
            for (int k = 0; k < my; k++) dr[k] -= Hq[(size_t)rows[use[k]] * np + (j - 2)];
          // dS = H dP H' + (dH P H' + its transpose) + dR
          sandwich(my, n, H, dP[j], H, 0, dS, T1);
          if (curv) {
            sandwich(my, n, dH, P, H, 0, W, T1);
            addSym(my, W, dS);
          }
          if (j == 1)
            for (int k = 0; k < my; k++) dS[k * my + k] += rv[k];
          // dNLL = a' dr - 1/2 a' dS a + 1/2 tr(Si dS)
          mjdiff_gemm(0, 0, my, 1, my, 1, dS, a, 0, v1);
          mjtNum tr = 0;
          for (int k = 0; k < my; k++)
            for (int l = 0; l < my; l++) tr += Si[k * my + l] * dS[l * my + k];
          g[j] += mju_dot(a, dr, my) - 0.5 * mju_dot(a, v1, my) + 0.5 * tr;
          // dK = (dP H' + P dH') Si - K dS Si
          mjdiff_gemm(0, 1, n, my, n, 1, dP[j], H, 0, PHt);
          if (curv) mjdiff_gemm(0, 1, n, my, n, 1, P, dH, 1, PHt);
          mjdiff_gemm(0, 0, n, my, my, -1, K, dS, 1, PHt);  // PHt - K dS
          mjdiff_gemm(0, 0, n, my, my, 1, PHt, Si, 0, dK);
          // dx+ = dx + dK r + K dr
          mjdiff_gemm(0, 0, n, 1, my, 1, dK, r, 1, dx[j]);
          mjdiff_gemm(0, 0, n, 1, my, 1, K, dr, 1, dx[j]);
          // dM = -(dK H + K dH)
          mjdiff_gemm(0, 0, n, n, my, -1, dK, H, 0, dM);
          if (curv) mjdiff_gemm(0, 0, n, n, my, -1, K, dH, 1, dM);
          // dP+ = M dP M' + (dM P M' + T') + (dK R K' + T') + K dR K'
          sandwich(n, n, M, dP[j], M, 0, dPn, T1);
          sandwich(n, n, dM, P, M, 0, A, T1);
          addSym(n, A, dPn);
          for (int i = 0; i < n; i++)
            for (int k = 0; k < my; k++) T1[i * my + k] = dK[i * my + k] * rv[k];
          mjdiff_gemm(0, 1, n, n, my, 1, T1, K, 0, A);
          addSym(n, A, dPn);
          if (j == 1) {
            for (int i = 0; i < n; i++)
              for (int k = 0; k < my; k++) T1[i * my + k] = K[i * my + k] * rv[k];
            mjdiff_gemm(0, 1, n, n, my, 1, T1, K, 1, dPn);
          }
          mjdiff_estSymmetrize(dPn, n);
          memcpy(dP[j], dPn, sizeof(mjtNum) * n2);
        }
      }
      // P+ = M P M' + K R K';  x+ = x (+) K r
      sandwich(n, n, M, P, M, 0, Pn, T1);
      for (int i = 0; i < n; i++)
        for (int k = 0; k < my; k++) T1[i * my + k] = K[i * my + k] * rv[k];
      mjdiff_gemm(0, 1, n, n, my, 1, T1, K, 1, Pn);
      mjdiff_estSymmetrize(Pn, n);
      memcpy(P, Pn, sizeof(mjtNum) * n2);
      mjdiff_gemm(0, 0, n, 1, my, 1, K, r, 0, T2);
      mjdiff_stateIntegrate(m, x, T2, 1, x);
    }
    if (t == T) break;
    // ---- predict
    loadState(&c, x, u, time);
    st = mjdiff_stepJacobian(m, c.d, s, c.w, A, NULL, np ? Fp : NULL, err, errsz);
    if (st != MJDIFF_OK) goto done;
    for (int j = 0; grad && j < npar; j++) {
      if (curvature || j >= 2) {
        st = jacDir(&c, 0, x, curvature ? dx[j] : NULL, j - 2, curv_eps, u, time, dA[j], err,
                    errsz);
        if (st != MJDIFF_OK) goto done;
      }
    }
    if (grad) {
      for (int j = 0; j < npar; j++) {
        sandwich(n, n, A, dP[j], A, 0, dPn, T1);
        if (curvature || j >= 2) {
          sandwich(n, n, dA[j], P, A, 0, M, T1);
          addSym(n, M, dPn);
        }
        if (j == 0)
          for (size_t i = 0; i < n2; i++) dPn[i] += Q[i];
        memcpy(dP[j], dPn, sizeof(mjtNum) * n2);
        mjdiff_gemm(0, 0, n, 1, n, 1, A, dx[j], 0, T2);
        if (j >= 2)
          for (int i = 0; i < n; i++) T2[i] += Fp[(size_t)i * np + (j - 2)];
        mju_copy(dx[j], T2, n);
      }
    }
    sandwich(n, n, A, P, A, 0, Pn, T1);
    for (size_t i = 0; i < n2; i++) Pn[i] += Q[i];
    mjdiff_estSymmetrize(Pn, n);
    memcpy(P, Pn, sizeof(mjtNum) * n2);
    loadState(&c, x, u, time);
    st = mjdiff_step(m, c.d, s, err, errsz);
    if (st != MJDIFF_OK) goto done;
    mjdiff_getState(m, c.d, x);
  }
  if (nll) *nll = L;
  if (grad) mju_copy(grad, g, npar);
  if (x_out) mju_copy(x_out, x, nx);
  if (P_out) memcpy(P_out, P, sizeof(mjtNum) * n2);
done:
  mjdiff_freeStepDeriv(c.w);
  if (c.d) mj_deleteData(c.d);
  free(mem);
  free(use);
  free(ptr);
  free(rows);
  free(rstd);
  return st;
}
