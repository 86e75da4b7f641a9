// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The implicit smooth step: backward Euler on the smooth forces, solved by Newton's method.
//
// At the state x = (q, v, a) after the smooth forward pass, split the generalised force into the
// smooth model's forces f_s (contacts, limits, friction loss, equalities; smooth.c) and the rest
//   F_e = qfrc_smooth - f_s(q, v)    (MuJoCo's springs, dampers, fluid, actuators, applied, -bias)
// which keeps MuJoCo's Euler treatment (explicit at (q, v), dof damping implicit). The step
//   H (v' - v) = h (F_e + f_s(q', v')),   q' = q (+) h v',   H = M(q) + h B   (B = diag(dof_damping)
//                                                                              if any, as mj_Euler)
// (under MuJoCo 3's implicitfast H also holds h G_b, each standalone free body's block at the start
// state: plugin/step.c, "implicitfast: standalone free bodies")
//   a' = clip(a + h adot(a, u)),  t' = t + h
// is the residual equation g(v') = 0,
//   g(v') = H (v' - v) - h F_e - h f_s(q (+) h v', v').
// Its Jacobian, with Dq = d f_s/dq (tangent dq at q'), Dv = d f_s/dv (forces_d.c, smooth part):
//   N = dg/dv' = H - h Dv - h^2 Dq Psi(h v')   (Psi the right Jacobian of the position update;
//                                                the forward's Newton matrix takes Psi = I)
// Newton: v'_{k+1} = v'_k - N^-1 g(v'_k), from v'_0 = v with N_0 from the Jacobians at (q, v), so
// that the first step is the linearly implicit one (f_s(q (+) h v', v') ~ f_s + Dq h v' +
// Dv (v' - v) gives N_0 (v'_1 - v) = h (F_e + f_s(q, v) + h Dq v) ~ -g(v)), line-searched too.
// Each iterate evaluates f_s at (q (+) h v'_k, v'_k): kinematics, collision, velocities, smooth
// forces (no mass matrix, no bias forces). N is kept (a chord method) while the corrections
// shrink at least 10x per iteration and rebuilt at the iterate otherwise. Globalisation, on the
// merit phi = g' W g, W = diag(1/M_ii):
//  - a trust region: a correction moves v' by at most 1 + |v'_k|_inf;
//  - a transition-aware cap (after TAMSI, Castro et al. 2019; mjdiff_frictionCap below): a
//    sliding contact's slip that the step would carry through zero stops at its closest
//    approach to zero, inside the stiction region (the flat regularised law's linearisation
//    overshoots it); a step capped so, and not cut by the line search, counts as a full one for
//    the damping below unless the trust region bound it too;
//  - a backtracking line search (halving, sufficient decrease 1e-4 alpha);
//  - a cut step damps N towards M (N + lam M, lam 1e-2, x2 per cut, x0.3 per full step: x10 and
//    x0.1 fell into two-cycles between two values of lam, the merit creeping down);
//  - where even that direction does not decrease phi at all (N unsymmetric from the contacts'
//    geometric terms, so -(N + lam M)^-1 g need not descend), the damped Gauss-Newton step
//    -(N' W N + lam D)^-1 N' W g, which always descends, until lam returns to 0.
// The step is accepted at the first iterate whose exact Newton correction (lam = 0)
// |N^-1 g|_inf <= tol (1 + |v'_k|_inf) (opt.implicit_tol), with that
// last correction applied (its error then ~ tol^2); d's kinematics, contacts and body velocities
// are those of the last evaluated iterate, within tol of (q', v'), while its mass matrix, bias
// forces, accelerations and sensors stay those of the start state, as after mj_step.
// Continuation (mjdiff_implicitSolve, from v' = v only): where that Newton fails, the same equation
// with the timestep h_j = h / 2^j, g_j(v') = H_j (v' - v) - h_j F_e - h_j f_s(q (+) h_j v', v')
// (F_e of the start state, H_j = M + h_j B), is solved from v for j = 1, 2, .. up to
// opt.implicit_continuation, until one converges (the forces act for less time: the root is nearer
// v); then g_{j-1}, .., g_0 = g from the last root each. The result is a root of g itself, so the
// step and its derivatives are defined as without the continuation: it only finds the root.
//
// The step's derivatives (adjoint/step_d.c) follow from the implicit function theorem at the
// converged v': N dv' = d(h F_e) + h (Dq Phi dq + ...) -- derived there.
//
// Dense LU with partial pivoting (row-major, in place): P A = L U, piv[i] the row swapped into i.

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <mjdiff/adjoint.h>

#include "../adjoint/derivative.h"
#include "compat.h"
#include "internal.h"

int mjdiff_luFactor(int n, mjtNum* A, int* piv) {
  for (int k = 0; k < n; k++) {
    int p = k;
    mjtNum best = fabs(A[n * k + k]);
    for (int i = k + 1; i < n; i++) {
      if (fabs(A[n * i + k]) > best) {
        best = fabs(A[n * i + k]);
        p = i;
      }
    }
    piv[k] = p;
    if (!(best > 0) || !isfinite(best)) return -1;
    if (p != k) {
      for (int j = 0; j < n; j++) {
        mjtNum t = A[n * k + j];
        A[n * k + j] = A[n * p + j];
        A[n * p + j] = t;
      }
    }
    mjtNum inv = 1 / A[n * k + k];
    for (int i = k + 1; i < n; i++) {
      mjtNum l = A[n * i + k] * inv;
      A[n * i + k] = l;
      if (l == 0) continue;
      for (int j = k + 1; j < n; j++) A[n * i + j] -= l * A[n * k + j];
    }
  }
  return 0;
}

void mjdiff_luSolve(int n, const mjtNum* LU, const int* piv, mjtNum* x) {
  for (int k = 0; k < n; k++) {
    if (piv[k] != k) {
      mjtNum t = x[k];
      x[k] = x[piv[k]];
      x[piv[k]] = t;
    }
  }
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) x[i] -= LU[n * i + j] * x[j];
  }
  for (int i = n - 1; i >= 0; i--) {
    for (int j = i + 1; j < n; j++) x[i] -= LU[n * i + j] * x[j];
    x[i] /= LU[n * i + i];
  }
}

// x = A^-T x: A' = U' L' P, so solve U' y = x, L' z = y, then undo the swaps in reverse
void mjdiff_luSolveT(int n, const mjtNum* LU, const int* piv, mjtNum* x) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) x[i] -= LU[n * j + i] * x[j];
    x[i] /= LU[n * i + i];
  }
  for (int i = n - 1; i >= 0; i--) {
    for (int j = i + 1; j < n; j++) x[i] -= LU[n * j + i] * x[j];
  }
  for (int k = n - 1; k >= 0; k--) {
    if (piv[k] != k) {
      mjtNum t = x[k];
      x[k] = x[piv[k]];
      x[piv[k]] = t;
    }
  }
}

// d's stack the implicit step needs (mjtNums): one Newton solve's arrays and the force
// derivative's scratch on top of them (without that, a spatial tendon's derivative was skipped for
// want of stack and the Newton matrix lost its terms: hammock's pinned grid, Newton linear, 100
// iterations at step 0); the step's: that and the continuation's start state
static size_t newtonNeed(const mjModel* m) {
  size_t nv = (size_t)m->nv;
  return 6 * nv * nv + 22 * nv + (size_t)m->nq + 200 + mjdiff_forceDerivativeStack(m);
}

static size_t stackNeed(const mjModel* m) {
  // step.c: mjdiff_step's start state and its splits' start states
  size_t split = (MJDIFF_MAX_SPLIT + 1) * ((size_t)(m->nq + m->nv + m->na) + 10);
  return newtonNeed(m) + 4 * (size_t)m->nv + (size_t)m->nq + 20 + split;
}

// the implicit step's need holds the force derivative's, the deepest user of the stack
size_t mjdiff_stackNeed(const mjModel* m) {
  return m ? stackNeed(m) : 0;
}

// the smooth forces' Jacobians at the state in d; a derivative that is unavailable fails the step
// by name (a contact whose geometry Jacobian cannot reproduce it, a tendon), rather than leaving
// its terms out of the Newton matrix
static mjdiffStatus newtonJacobians(const mjModel* m, const mjModel* mu, mjData* d,
                                    const mjdiffModel* s, mjtNum* Dq, mjtNum* Dv, char* err,
                                    int errsz) {
  int bad = mjdiff_forceDerivativeParts(mu, d, s, MJDIFF_FORCES_SMOOTH, Dq, Dv, NULL, NULL, NULL,
                                        NULL);
  if (!bad) return MJDIFF_OK;
  int i = -1 - bad;
  if (i < d->ncon) {
    const mjContact* con = d->contact + i;
    int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
    const char* n1 = mj_id2name(m, mjOBJ_GEOM, g1);
    const char* n2 = mj_id2name(m, mjOBJ_GEOM, g2);
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "the implicit step's Newton matrix at time %g: no geometry Jacobian for "
                        "contact %d between geoms %d '%s' and %d '%s'", d->time, i, g1,
                        n1 ? n1 : "", g2, n2 ? n2 : "");
  }
  int t = i - d->ncon;
  const char* name = t < m->ntendon ? mj_id2name(m, mjOBJ_TENDON, t) : NULL;
  return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                      "the implicit step's Newton matrix at time %g: no derivative for tendon %d "
                      "'%s'", d->time, t, name ? name : "");
}

void mjdiff_evalSmooth(const mjModel* mu, mjData* d, const mjdiffModel* s, mjtNum* fs) {
  mj_kinematics(mu, d);
  mj_comPos(mu, d);
  mj_tendon(mu, d);
  mjdiff_collide(mu, d, s);
  for (int t = 0; t < mu->ntendon; t++) {
    mjtNum* row = fs;  // scratch: fs is written below
    compat_tendonRow(mu, d, t, row);
    d->ten_velocity[t] = mju_dot(row, d->qvel, mu->nv);
  }
  mj_comVel(mu, d);
  mju_zero(fs, mu->nv);
  mjdiff_addForces(mu, d, s, fs);
}

// out = H x = M x + hdamp B x + h G x (M of the start state in d, B its mjdiff_dampB, G the
// implicitfast blocks of standalone free bodies at the start state by rows, Gr NULL if none)
static void mulH(const mjModel* m, const mjData* d, mjtNum hdamp, const mjtNum* B,
                 const mjtNum* Gr, const int* badr, const mjtNum* x, mjtNum* out) {
  mj_mulM(m, d, out, x);
  if (hdamp > 0) {
    for (int i = 0; i < m->nv; i++) out[i] += hdamp * B[i] * x[i];
  }
  if (Gr) mjdiff_freeBlockMul(m->nv, Gr, badr, m->opt.timestep, x, out);
}

// N = Mdense + hdamp B - h Dv - h^2 Dq Psi(h v), the exact Newton matrix (lam = 0), in one of
// two damped forms for lam > 0:
//   Newton       N + lam M: Levenberg-Marquardt damping of the Newton matrix towards M, the step
//                -(N + lam M)^-1 g (a near-singular or indefinite N, from the geometric terms of
//                large contact forces);
//   Gauss-Newton N_lm = N' W N + lam D, D = diag(M_ii), on the merit phi = g' W g
//                (W = diag(1/M_ii)), the step -N_lm^-1 N' W g, with NtW = N' W kept for that
//                right-hand side.
// The first is Newton's direction bent towards M^-1 g, which need not descend on phi when the
// contact terms make N unsymmetric; the second descends for every lam > 0
// (grad phi = 2 N' W g), tends to Newton's as lam -> 0, and is slower where the first works.
// B: mjdiff_dampB at the start state, Gr and badr its free bodies' blocks (mulH). Factored in
// place; tmp (nv x nv) and delta (nv) scratch; 0, or -1 if singular.
static int newtonMatrix(const mjModel* m, const mjtNum* Mdense, mjtNum hdamp, const mjtNum* B,
                        const mjtNum* Gr, const int* badr, mjtNum lam, int gauss,
                        const mjtNum* Dq, const mjtNum* Dv, const mjtNum* v, mjtNum* tmp,
                        mjtNum* delta, mjtNum* N, mjtNum* NtW, int* piv) {
  int nv = m->nv;
  mjtNum h = m->opt.timestep;
  for (int i = 0; i < nv; i++) delta[i] = h * v[i];
  mjdiff_mulIntegrateRight(m, delta, Dq, nv, 1, tmp);  // Dq Psi
  mjtNum lamN = gauss ? 0 : lam;
  for (int i = 0; i < nv * nv; i++) N[i] = (1 + lamN) * Mdense[i] - h * Dv[i] - h * h * tmp[i];
  for (int i = 0; i < nv; i++) N[nv * i + i] += hdamp * B[i];
  if (Gr) mjdiff_freeBlockAddDense(nv, Gr, badr, h, N);
  if (gauss && lam > 0) {
    for (int i = 0; i < nv; i++) {  // NtW = N' W
      for (int j = 0; j < nv; j++) NtW[nv * i + j] = N[nv * j + i] / Mdense[nv * j + j];
    }
    mju_mulMatMat(tmp, NtW, N, nv, nv, nv);  // N' W N
    for (int i = 0; i < nv; i++) tmp[nv * i + i] += lam * Mdense[nv * i + i];
    mju_copy(N, tmp, nv * nv);
  }
  return mjdiff_luFactor(nv, N, piv);
}

static mjtNum normInf(const mjtNum* x, int n) {
  mjtNum r = 0;
  for (int i = 0; i < n; i++) r = mju_max(r, fabs(x[i]));
  return r;
}

// d's state set to the Newton iterate: qpos = q0 (+) h v, qvel = v
static void setIterate(const mjModel* m, mjData* d, const mjtNum* q0, const mjtNum* v) {
  mju_copy(d->qpos, q0, m->nq);
  mj_integratePos(m, d->qpos, v, m->opt.timestep);
  mju_copy(d->qvel, v, m->nv);
}

// g = H (v - v0) - h (F_e + f_s(q0 (+) h v, v)) and phi = sum g_i^2 / M_ii (M_ii from Mdense, the
// start state's M), with d's state set
// to (q0 (+) h v, v) and evaluated there; fails on a non-finite iterate or residual
static mjdiffStatus evalResidual(const mjModel* m, const mjModel* mu, mjData* d,
                                 const mjdiffModel* s, const mjtNum* q0, const mjtNum* v0,
                                 const mjtNum* Fe, mjtNum hdamp, const mjtNum* B,
                                 const mjtNum* Gr, const int* badr, const mjtNum* v, mjtNum* fs,
                                 const mjtNum* Mdense, mjtNum* tmp, mjtNum* g, mjtNum* phi,
                                 char* err, int errsz) {
  int nv = m->nv;
  mjtNum h = m->opt.timestep;
  setIterate(m, d, q0, v);
  mjdiff_evalSmooth(mu, d, s, fs);
  mju_sub(tmp, v, v0, nv);
  mulH(m, d, hdamp, B, Gr, badr, tmp, g);
  *phi = 0;
  for (int i = 0; i < nv; i++) {
    g[i] -= h * (Fe[i] + fs[i]);
    *phi += g[i] * g[i] / Mdense[(size_t)nv * i + i];
  }
  if (!isfinite(*phi)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "the implicit step diverged at time %g: a Newton iterate's residual is "
                        "not finite", d->time);
  }
  return MJDIFF_OK;
}

// Transition-aware cap on the step length along dv at the iterate v (d holds its kinematics,
// velocities and contacts), after TAMSI (Castro et al. 2019). The regularised friction r(vt / v_e)
// is flat once a contact slides (|vt| >> v_e), so Newton's linearisation there sends a contact
// that should stop far past zero slip, to slide the other way. Per contact with sliding friction
// (regularisation speed v_e), its slip vt (the law's own, mjdiff_contactSlip) and the slip's
// change along dv, linear in the step:
//   dvt = J_t dv,  vt(alpha) = vt + alpha dvt
// (J_t: the tangent rows t1, t2 of the relative point velocity's Jacobian at the contact point,
// geom2's body minus geom1's, at the iterate). A sliding contact (|vt| > v_e) whose slip the step
// turns back (vt . dvt < 0) caps alpha where
//  - the line passes within v_e of zero (|vt x dvt| < v_e |dvt|): at its closest approach,
//      alpha_c = -vt . dvt / |dvt|^2,
//    inside the stiction region, the stop the flat law's linearisation overshot;
//  - otherwise: where the slip's component along vt reaches zero, its direction turned by 90
//    degrees (the friction force's with it), alpha_90 = |vt|^2 / (-vt . dvt) (>= alpha_c).
// A sticking contact's steep law linearises well and is not capped. Measured (mean Newton
// iterations under random controls on the humanoid, quadruped, dog and cheetah): TAMSI's own
// bound of 60 degrees on any turn changed them by under 1%, 30 degrees took up to 7.5% more;
// capping every turned-back slip at its closest approach up to 10% more (the humanoid: about as
// many as without any cap). Returns the smallest cap, 1 if none binds, never below 1e-3 (a cap must
// not stall Newton). Where Newton converges with and without it, to the same root, the step and its
// derivatives are unchanged: the cap changes the path to the root (and so which steps need the
// continuation or the split). Scratch: jac (6 nv).
mjtNum mjdiff_frictionCap(const mjModel* m, const mjData* d, const mjdiffModel* s,
                          const mjtNum* v, const mjtNum* dv, mjtNum* jac) {
  (void)v;  // (the slip at v is the law's, from d's velocities: d holds the iterate v)
  int nv = m->nv;
  mjtNum cap = 1;
  mjtNum* jp1 = jac;
  mjtNum* jp2 = jac + 3 * nv;
  for (int i = 0; i < d->ncon; i++) {
    const mjContact* con = d->contact + i;
    mjtNum vt[2], ve;
    if (!mjdiff_contactSlip(m, d, s, con, vt, &ve)) continue;
    mjtNum speed2 = vt[0] * vt[0] + vt[1] * vt[1];
    if (!(speed2 > ve * ve)) continue;
    int b1 = m->geom_bodyid[compat_contactGeom1(con)];
    int b2 = m->geom_bodyid[compat_contactGeom2(con)];
    mj_jac(m, d, jp1, NULL, con->pos, b1);
    mj_jac(m, d, jp2, NULL, con->pos, b2);
    mjtNum dvt[2] = {0, 0};
    for (int j = 0; j < nv; j++) {
      if (dv[j] == 0) continue;
      mjtNum rel[3] = {jp2[j] - jp1[j], jp2[nv + j] - jp1[nv + j],
                       jp2[2 * nv + j] - jp1[2 * nv + j]};
      for (int r = 0; r < 2; r++) dvt[r] += mju_dot3(con->frame + 3 * (r + 1), rel) * dv[j];
    }
    mjtNum dd = dvt[0] * dvt[0] + dvt[1] * dvt[1];
    mjtNum dot = vt[0] * dvt[0] + vt[1] * dvt[1];
    if (!(dot < 0)) continue;
    mjtNum cross = vt[0] * dvt[1] - vt[1] * dvt[0];
    cap = mju_min(cap, cross * cross < ve * ve * dd ? -dot / dd : -speed2 / dot);
  }
  return mju_max(cap, 1e-3);
}

// Newton on the step of m's timestep from the start state (q0, v0 in d; Fe, nv: F_e of the start
// state), from vstart or v' = v0 (header)
static mjdiffStatus newtonSolve(const mjModel* m, mjData* d, const mjdiffModel* s,
                                const mjtNum* vstart, const mjtNum* Fe, int* iters,
                                mjtNum* correction, char* err, int errsz) {
  int nq = m->nq, nv = m->nv;
  mjtNum h = m->opt.timestep;
  mjModel user;
  const mjModel* mu = mjdiff_userModel(m, s, &user);
  mjtNum hdamp = mjdiff_hasDampB(m) ? h : 0;
  mjtNum tol = s->opt.implicit_tol;
  int maxiter = (int)s->opt.implicit_maxiter;
  *iters = 0;
  *correction = 0;
  // (the caller returned for nv = 0 and checked d's stack: stackNeed)

  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* q0 = compat_stackAllocNum(d, nq);
  mjtNum* v0 = compat_stackAllocNum(d, nv);
  mjtNum* fs = compat_stackAllocNum(d, nv);
  mjtNum* g = compat_stackAllocNum(d, nv);
  mjtNum* dv = compat_stackAllocNum(d, nv);
  mjtNum* vk = compat_stackAllocNum(d, nv);
  mjtNum* vprev = compat_stackAllocNum(d, nv);
  mjtNum* tmp = compat_stackAllocNum(d, nv);
  mjtNum* Mdense = compat_stackAllocNum(d, nv * nv);
  mjtNum* N = compat_stackAllocNum(d, nv * nv);
  mjtNum* Dq = compat_stackAllocNum(d, nv * nv);
  mjtNum* Dv = compat_stackAllocNum(d, nv * nv);
  mjtNum* Mtmp = compat_stackAllocNum(d, nv * nv);
  mjtNum* NtW = compat_stackAllocNum(d, nv * nv);
  int* piv = (int*)compat_stackAllocNum(d, nv);
  mjtNum* jac = compat_stackAllocNum(d, 6 * nv);
  mjtNum* B = compat_stackAllocNum(d, nv);
  mjtNum* Gr = compat_stackAllocNum(d, 3 * nv);
  int* badr = (int*)compat_stackAllocNum(d, nv);
  mju_copy(q0, d->qpos, nq);
  mju_copy(v0, d->qvel, nv);
  compat_fullM(m, d, Mdense);
  mjdiff_dampB(m, d, B);  // (the start state's actuator forces: constant over the iterates)
  if (!mjdiff_freeBlockRows(m, d, Gr, badr)) Gr = NULL;  // (implicitfast's free bodies)

  // the Newton matrix at the start state
  mjdiffStatus st = MJDIFF_OK;
  mjtNum lam = 0;  // Levenberg-Marquardt damping (0: Newton)
  int gauss = 0;   // the damping's form: 0 Newton's, 1 Gauss-Newton's (newtonMatrix)
  mju_copy(vk, vstart ? vstart : v0, nv);
  if (!vstart) {  // N_0 at v' = v, from the start state's Jacobians
    st = newtonJacobians(m, mu, d, s, Dq, Dv, err, errsz);
    if (st == MJDIFF_OK &&
        newtonMatrix(m, Mdense, hdamp, B, Gr, badr, lam, gauss, Dq, Dv, vk, Mtmp, tmp, N, NtW,
                     piv)) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "the implicit step's Newton matrix is singular at time %g", d->time);
    }
  }

  // Newton from v'_0 = v: its first step, N_0 (v'_1 - v) = -g(v) ~ h (F_e + f_s + h Dq v), is the
  // linearly implicit step, line-searched like every other

  // Newton with a backtracking line search on the merit phi = sum_i g_i^2 / M_ii
  mjtNum* vtry = vprev;
  mjtNum* gtry = compat_stackAllocNum(d, nv);
  mjtNum phi = 0, phi0 = 0, corr_prev = INFINITY;
  int keep = 0, k = 0;  // keep: N serves the next iterate too (a chord step)
  if (st == MJDIFF_OK) {
    st = evalResidual(m, mu, d, s, q0, v0, Fe, hdamp, B, Gr, badr, vk, fs, Mdense, tmp, g, &phi,
                      err, errsz);
    phi0 = phi;
  }
  while (st == MJDIFF_OK) {
    k++;
    if (!keep && (k > 1 || vstart)) {  // at vk (d holds its kinematics): rebuild N
      st = newtonJacobians(m, mu, d, s, Dq, Dv, err, errsz);
      if (st != MJDIFF_OK) break;
      if (newtonMatrix(m, Mdense, hdamp, B, Gr, badr, lam, gauss, Dq, Dv, vk, Mtmp, tmp, N, NtW,
                     piv)) {
        st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                          "the implicit step's Newton matrix is singular at time %g", d->time);
        break;
      }
    }
    if (gauss && lam > 0) {  // the damped Gauss-Newton step: dv = -N_lm^-1 N' W g
      mju_mulMatVec(dv, NtW, g, nv, nv);
      mju_scl(dv, dv, -1, nv);
    } else {
      mju_scl(dv, g, -1, nv);
    }
    mjdiff_luSolve(nv, N, piv, dv);
    mjtNum corr = normInf(dv, nv) / (1 + normInf(vk, nv));
    compat_solverStat(d, k - 1, sqrt(phi), corr);
    *iters = k;
    *correction = corr;
    if (corr <= tol && lam > 0) {
      // a damped step's size says nothing of convergence: the exact Newton correction at this
      // iterate decides (N rebuilt undamped)
      lam = 0;
      gauss = 0;
      keep = 0;
      continue;
    }
    if (corr <= tol) {
      // take the last correction too: the step's error falls to about corr^2, so that v' is a
      // smooth function of the inputs to far below the tolerance (finite differences of the
      // step); d's kinematics stay those of the evaluated iterate, within tol of (q', v')
      mju_addTo(vk, dv, nv);
      setIterate(m, d, q0, vk);
      break;
    }
    if (k >= maxiter) {
      int worst = 0;
      for (int i = 1; i < nv; i++) {
        if (fabs(dv[i]) > fabs(dv[worst])) worst = i;
      }
      int jnt = m->dof_jntid[worst];
      const char* name = mj_id2name(m, mjOBJ_JOINT, jnt);
      // (a damped step's correction can be tiny where the residual is not: both are reported)
      st = mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "the implicit step did not converge at time %g: velocity correction %.3g "
                        "after %d Newton iterations (implicit_tol %g; %s), residual |g|_W %.3g "
                        "(%.3g at the first iterate), largest at dof %d (joint %d '%s') with %d "
                        "contacts",
                        d->time, corr, k, tol, lam > 0 ? "a damped step" : "Newton's step",
                        sqrt(phi), sqrt(phi0), worst, jnt, name ? name : "", d->ncon);
      break;
    }

    // line search: full step (at most a velocity change of 1 + |v'_k| per iteration: a trust
    // region against a near-singular N; at most the transition-aware cap of the friction),
    // halved while phi does not decrease enough
    mjtNum trust = mju_min(1, (1 + normInf(vk, nv)) / normInf(dv, nv));
    mjtNum fcap = mjdiff_frictionCap(mu, d, s, vk, dv, jac);
    mjtNum alpha = mju_min(trust, fcap), alpha0 = alpha, phitry = INFINITY;
    for (;;) {
      for (int i = 0; i < nv; i++) vtry[i] = vk[i] + alpha * dv[i];
      st = evalResidual(m, mu, d, s, q0, v0, Fe, hdamp, B, Gr, badr, vtry, fs, Mdense, tmp,
                        gtry, &phitry, err, errsz);
      if (st != MJDIFF_OK || phitry <= (1 - 1e-4 * alpha) * phi || alpha < 1e-6) break;
      alpha *= 0.5;
    }
    if (st != MJDIFF_OK) break;
    // a step that needed backtracking or contracted slowly: rebuild N at the next iterate
    keep = alpha == 1 && corr <= 0.1 * corr_prev;  // (a capped step rebuilds N too)
    // a step that had to be cut: damp N; relax the damping while full steps succeed. A damped
    // Newton direction along which phi does not decrease at all is no descent direction: from
    // there on, the Gauss-Newton form (which always descends), afresh
    if (!(phitry <= (1 - 1e-4 * alpha) * phi) && !gauss) {
      gauss = 1;
      lam = 1e-2;
      keep = 0;
    } else if (alpha < alpha0 || trust < 1) {  // backtracked, or against the trust region
      lam = lam > 0 ? mju_min(2 * lam, 1e6) : 1e-2;
    } else if (lam > 0) {
      lam = lam < 1e-6 ? 0 : 0.3 * lam;
      keep = 0;
    }
    if (lam == 0) gauss = 0;
    corr_prev = corr;
    mju_copy(vk, vtry, nv);
    mju_copy(g, gtry, nv);
    phi = phitry;
  }
  compat_solverIter(d, *iters);
  if (st != MJDIFF_OK) {
    mju_copy(d->qpos, q0, nq);
    mju_copy(d->qvel, v0, nv);
  }
  compat_stackFree(d, mark);
  return st;
}

mjdiffStatus mjdiff_implicitSize(const mjModel* m, char* err, int errsz) {
  if (m->nv <= MJDIFF_IMPLICIT_MAX_NV) return MJDIFF_OK;
  return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                      "the implicit step solves a dense Newton system: nv = %d is above its limit "
                      "of %d (an LU of %d x %d, %.1f GFLOP per Newton iteration); use the "
                      "explicit step (integrator 0)", (int)m->nv, MJDIFF_IMPLICIT_MAX_NV,
                      (int)m->nv, (int)m->nv, 2.0 * m->nv * m->nv * m->nv / 3e9);
}

mjdiffStatus mjdiff_implicitSolve(const mjModel* m, mjData* d, const mjdiffModel* s,
                                  const mjtNum* vstart, int* iters, mjtNum* correction, char* err,
                                  int errsz) {
  int nq = m->nq, nv = m->nv;
  *iters = 0;
  *correction = 0;
  if (nv == 0) return MJDIFF_OK;
  if ((size_t)compat_stackSpace(d) < stackNeed(m)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY,
                        "mjData stack too small for the implicit step (%zu numbers needed, %d "
                        "free): raise the model's <size nstack>", stackNeed(m),
                        compat_stackSpace(d));
  }

  // the start state and its F_e = qfrc_smooth - f_s(q, v) (d after the smooth forward pass), kept
  // over every solve
  mjModel user;
  const mjModel* mu = mjdiff_userModel(m, s, &user);
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* q0 = compat_stackAllocNum(d, nq);
  mjtNum* v0 = compat_stackAllocNum(d, nv);
  mjtNum* Fe = compat_stackAllocNum(d, nv);
  mjtNum* vc = compat_stackAllocNum(d, nv);
  mju_copy(q0, d->qpos, nq);
  mju_copy(v0, d->qvel, nv);
  mju_zero(vc, nv);
  mjdiff_addForces(mu, d, s, vc);
  mju_sub(Fe, d->qfrc_smooth, vc, nv);

  mjdiffStatus st = newtonSolve(m, d, s, vstart, Fe, iters, correction, err, errsz);
  int levels = (int)s->opt.implicit_continuation;
  if (st == MJDIFF_ERR_NONFINITE && levels > 0 && !vstart) {
    // continuation in the timestep: the same equation at h / 2^j has a root nearer v0 (the
    // forces act for less time); find the largest such h that Newton solves from v0, then walk
    // back to h, each solve starting from the last root. The step's root is the equation's at h
    // (its derivatives follow from the implicit function theorem there, as without the walk)
    mjModel view = *mu;  // (the user's flags, where m is attached to MuJoCo's step)
    mjtNum h = m->opt.timestep;
    int j = 1, it, reached = 0;  // reached: the level whose equation Newton solved from v0
    mjdiffStatus sj = st;
    for (; j <= levels && sj != MJDIFF_OK; j++) {
      view.opt.timestep = h / (1 << j);
      sj = newtonSolve(&view, d, s, v0, Fe, &it, correction, NULL, 0);
      *iters += it;
      if (sj == MJDIFF_OK) reached = j;
    }
    for (j = reached - 1; j >= 0 && sj == MJDIFF_OK; j--) {
      mju_copy(vc, d->qvel, nv);
      mju_copy(d->qpos, q0, nq);
      mju_copy(d->qvel, v0, nv);
      view.opt.timestep = h / (1 << j);
      sj = newtonSolve(j ? &view : m, d, s, vc, Fe, &it, correction, NULL, 0);
      *iters += it;
    }
    if (sj == MJDIFF_OK) {
      st = MJDIFF_OK;
    } else {
      // (d's solver statistics and *correction are the last continuation solve's)
      mju_copy(d->qpos, q0, nq);
      mju_copy(d->qvel, v0, nv);
      int len = err && errsz > 0 ? (int)strlen(err) : 0;
      if (err && len + 1 < errsz && reached) {
        snprintf(err + len, (size_t)(errsz - len), " (the continuation solved it at timestep %g "
                 "but not, from that root, at %g)", h / (1 << reached), h / (1 << (j + 1)));
      } else if (err && len + 1 < errsz) {
        snprintf(err + len, (size_t)(errsz - len), " (nor at timestep %g .. %g: continuation)",
                 h / 2, h / (1 << levels));
      }
    }
  }
  compat_stackFree(d, mark);
  return st;
}

int mjdiff_implicitStats(const mjData* d, mjtNum* correction, mjtNum* residual) {
  int n = compat_getSolverIter(d);
  if (correction) *correction = n > 0 ? compat_getSolverStat(d, n - 1, 1) : 0;
  if (residual) *residual = n > 0 ? compat_getSolverStat(d, n - 1, 0) : 0;
  return n;
}
