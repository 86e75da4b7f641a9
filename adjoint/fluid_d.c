// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Derivatives of MuJoCo 2.2.2's fluid forces (mj_passive, engine_core_smooth.c: "body-level
// viscosity, lift and drag") in the state (q, v) and in the parameters density, viscosity, wind and
// the inertia-box bodies' mass, inertia and com.
//
// Forward (MuJoCo 2.2.2), when opt.density > 0 or opt.viscosity > 0 and passive forces are on, for
// every body b > 0 with body_mass >= mjMINVAL: if one of b's geoms has geom_fluid[0] > 0
// (fluidshape="ellipsoid") the ellipsoid model runs on each of b's geoms with interaction
// coefficient geom_fluid[0] != 0, else the inertia-box model runs once on b. Each such fluid
// element e has a frame fixed to b: point p and rotation R (box: xipos, ximat; ellipsoid:
// geom_xpos, geom_xmat). With V_b = [w_b; v0_b] b's velocity about the world origin:
//   u = v0_b + w_b x p - wind                        velocity of p relative to the wind (world)
//   y = [w; v] = [R' w_b; R' u]                      local velocity (mj_objectVelocity with
//                                                    flg_local; the wind is a pure translation, so
//                                                    mju_transformSpatial only rotates it)
//   l = [t; f] = L_e(y; rho, mu)                     local torque and force (laws below)
//   T = R t, F = R f  applied at p:  qfrc += J_b' W, W = [T + p x F; F]  (mj_applyFT)
//
// Inertia-box law (per component i, (i, j, k) a cyclic permutation, box from the principal
// inertia: box_i = sqrt(6 max(mjMINVAL, I_j + I_k - I_i) / mass), dm = (box_0 + box_1 + box_2)/3):
//   t_i = -[mu > 0] pi dm^3 mu w_i - [rho > 0] rho box_i (box_j^4 + box_k^4) / 64 |w_i| w_i
//   f_i = -[mu > 0] 3 pi dm mu v_i - [rho > 0] rho box_j box_k / 2 |v_i| v_i
//   dL/dy = diag(-(a_i + 2 beta_i |y_i|))  (a: the linear coefficient, beta: the quadratic one)
//
// Ellipsoid law (mj_addedMassForces without accelerations, mj_viscousForces; semiaxes s from
// mju_geomSemiAxes, coefficients ci, cb, cs, ca, ck, cm, virtual mass vm (3) and inertia vi (3)
// from geom_fluid), all scaled by ci at the end:
//   added mass:  P = rho vm o v, H = rho vi o w:  f += P x w,  t += P x v + H x w
//   Magnus:      f += cm rho vol (w x v),  vol = 4/3 pi s0 s1 s2
//   Kutta:       alpha_i = (s_j s_k)^2, n = alpha o v, N = n . v, D = n . n,
//                A = pi sqrt(D / max(mjMINVAL, N)), c = N / max(mjMINVAL, |v| D), g = c A,
//                f += ck rho g (n x v) x v = ck rho g K,  K = N v - |v|^2 n
//   linear drag: f -= cl v,  cl = mu 3 pi De + rho |v| (cs Amax + (cb - cs) A),
//                De = 2/3 (s0 + s1 + s2), Amax = pi dmax dmid
//   angular drag: t -= ca' w, ca' = mu pi De^3 + rho |m|, m_i = w_i Kw_i,
//                Kw_i = ca II_i + cs (Imax - II_i), II_i = 8/15 pi s_i max(s_j, s_k)^4,
//                Imax = 8/15 pi dmid dmax^4
// and its Jacobian dL/dy (a x b: d = -[b]x da + [a]x db):
//   added mass:  df = -[w]x rho diag(vm) dv + [P]x dw
//                dt = (-[v]x rho diag(vm) + [P]x) dv + (-[w]x rho diag(vi) + [H]x) dw
//   Magnus:      df = cm rho vol (-[v]x dw + [w]x dv)
//   Kutta (N, |v| D >= mjMINVAL; the force is O(|v|^2) and its derivative is dropped below):
//                grad g = g (n / N - v / |v|^2 - alpha o n / D),
//                dK = (2 v n' + N I - 2 n v' - |v|^2 diag(alpha)) dv,
//                df = ck rho (K grad g' + g dK/dv) dv
//   linear drag: df = -(cl I + v grad cl') dv,
//                grad cl = rho ((cs Amax + (cb - cs) A) v / |v| + |v| (cb - cs) grad A),
//                grad A = A (alpha o n / D - n / N)
//   angular drag: dt = -(ca' I + w (rho Kw o m / |m|)') dw
// Both laws are linear in (rho, mu) (the box's gates aside): dL/drho = L(y; 1, 0),
// dL/dmu = L(y; 0, 1) -- at rho = 0 or mu = 0 the one-sided derivative from above.
//
// Derivatives in the state (tangent dq, see derivative.h; rigid motion of the frame: dp = J_p dq,
// dth = J_r dq, dR = [dth]x R; cdof0, dV_b/dq as in forces_d.c):
//   dw_b, dv0_b = dV_b/dq dq,  du = dv0_b + dw_b x p + w_b x dp
//   dy = [R' (dw_b + w_b x dth); R' (du + u x dth)]          (d(R' a) = R' (da - dth x a))
//   dl = dL/dy dy,  dT = R dt + dth x T,  dF = R df + dth x F
//   dW = [dT + dp x F + p x dF; dF],  DfDq += J_b' dW + (dJ_b' W)
//   (dJ_b' W)_jk = (cdof0_k x cdof0_j) . Wsub_body(j)  for k that moves j (forces_d.c)
// Velocity: dy = [R' J_r; R' J_p] dv, dW_v = [R dt + p x R df; R df], DfDv += J_b' dW_v.
//
// Parameters (at a fixed state, wrenches about b's tree com o as in params_d.c: the column is
// J_b' dW with dW = [dT + (p - o) x dF + dp x F; dF]):
//   density, viscosity: dl = dL/drho, dL/dmu (above), dT = R dt, dF = R df
//   wind_k: dy = [0; -R' e_k], dl = dL/dy dy
//   box bodies' mass and inertia: dl = dL/dbox dbox with
//     dbox_i/dmass = -box_i / (2 mass),  dbox_i/dI_k = 3 s_ik / (mass box_i)  (s_ik = -1 for k = i,
//     +1 else; 0 where the max clamps),
//     dt_i/dbox_m = -pi dm^2 mu w_i - rho |w_i| w_i d(box_i (box_j^4 + box_k^4))/dbox_m / 64,
//     df_i/dbox_m = -pi mu v_i - rho |v_i| v_i d(box_j box_k)/dbox_m / 2   (ddm/dbox_m = 1/3)
//   box bodies' com ipos_k: dp = xmat e_k, R fixed: dy = [0; R' (w_b x dp)], dl = dL/dy dy,
//     and the wrench's point moves: dW += [dp x F; 0]
//   (ellipsoid elements do not depend on the body's inertial parameters.)

#include <math.h>
#include <string.h>

#include "compat.h"
#include "derivative.h"
#include "params_internal.h"
#include "spatial.h"

#define DISABLED(m, flag) ((m)->opt.disableflags & (flag))

//---------------------------------- which elements ------------------------------------------------

static int fluidActive(const mjModel* m) {
  return (m->opt.density > 0 || m->opt.viscosity > 0) && !compat_passiveOff(m);
}

// 1 if body b uses the ellipsoid model (one of its geoms has geom_fluid[0] > 0)
static int usesEllipsoid(const mjModel* m, int b) {
  for (int j = 0; j < m->body_geomnum[b]; j++) {
    if (m->geom_fluid[mjNFLUID * (m->body_geomadr[b] + j)] > 0) return 1;
  }
  return 0;
}

// the fluid elements of body b: n = elementCount(m, b) slots (0: no fluid force on b), slot e holds
// the geom elementGeom(m, b, e) (-1: the body's one inertia-box element), or -2 for an unused slot
// (an ellipsoid-model geom with interaction coefficient 0)
static int elementCount(const mjModel* m, int b) {
  if (b <= 0 || m->body_mass[b] < mjMINVAL) return 0;
  return usesEllipsoid(m, b) ? m->body_geomnum[b] : 1;
}

static int elementGeom(const mjModel* m, int b, int e) {
  if (!usesEllipsoid(m, b)) return -1;
  int g = m->body_geomadr[b] + e;
  return m->geom_fluid[mjNFLUID * g] != 0 ? g : -2;
}

// frame (p, R) of an element (geom -1: b's inertial frame)
static void elementFrame(const mjData* d, int b, int geom, const mjtNum** p, const mjtNum** R) {
  *p = geom < 0 ? d->xipos + 3 * b : d->geom_xpos + 3 * geom;
  *R = geom < 0 ? d->ximat + 9 * b : d->geom_xmat + 9 * geom;
}

//---------------------------------- laws ----------------------------------------------------------

// inertia box of body b
static void boxSize(const mjModel* m, int b, mjtNum box[3], int clamped[3]) {
  const mjtNum* I = m->body_inertia + 3 * b;
  for (int i = 0; i < 3; i++) {
    mjtNum s = I[(i + 1) % 3] + I[(i + 2) % 3] - I[i];
    clamped[i] = s < mjMINVAL;
    box[i] = mju_sqrt(mju_max(mjMINVAL, s) / m->body_mass[b] * 6.0);
  }
}

// inertia-box law: l = L(y), D = dL/dy (6 x 6, nullable), Db = dL/dbox (6 x 3, nullable);
// gate: apply MuJoCo's rho > 0, mu > 0 switches
static void boxLaw(const mjtNum box[3], mjtNum rho, mjtNum mu, int gate, const mjtNum y[6],
                   mjtNum l[6], mjtNum* D, mjtNum* Db) {
  int visc = !gate || mu > 0, dens = !gate || rho > 0;
  mjtNum dm = (box[0] + box[1] + box[2]) / 3.0;
  mju_zero(l, 6);
  if (D) mju_zero(D, 36);
  if (Db) mju_zero(Db, 18);
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    mjtNum bj4 = box[j] * box[j] * box[j] * box[j], bk4 = box[k] * box[k] * box[k] * box[k];
    mjtNum a = visc ? mjPI * dm * dm * dm * mu : 0, c = visc ? 3.0 * mjPI * dm * mu : 0;
    mjtNum beta = dens ? rho * box[i] * (bj4 + bk4) / 64.0 : 0;
    mjtNum gamma = dens ? 0.5 * rho * box[j] * box[k] : 0;
    mjtNum w = y[i], v = y[3 + i];
    l[i] = -a * w - beta * mju_abs(w) * w;
    l[3 + i] = -c * v - gamma * mju_abs(v) * v;
    if (D) {
      D[6 * i + i] = -(a + 2 * beta * mju_abs(w));
      D[6 * (3 + i) + 3 + i] = -(c + 2 * gamma * mju_abs(v));
    }
    if (Db) {
      // d(a, c)/dbox_m = (pi dm^2 mu, pi mu) (ddm/dbox_m = 1/3)
      mjtNum da = visc ? mjPI * dm * dm * mu : 0, dc = visc ? mjPI * mu : 0;
      mjtNum ww = dens ? rho * mju_abs(w) * w : 0, vv = dens ? rho * mju_abs(v) * v : 0;
      for (int mm = 0; mm < 3; mm++) {
        Db[3 * i + mm] = -da * w;
        Db[3 * (3 + i) + mm] = -dc * v;
      }
      // box_i (box_j^4 + box_k^4) / 64 and box_j box_k / 2
      Db[3 * i + i] -= ww * (bj4 + bk4) / 64.0;
      Db[3 * i + j] -= ww * 4 * box[i] * box[j] * box[j] * box[j] / 64.0;
      Db[3 * i + k] -= ww * 4 * box[i] * box[k] * box[k] * box[k] / 64.0;
      Db[3 * (3 + i) + j] -= vv * box[k] / 2;
      Db[3 * (3 + i) + k] -= vv * box[j] / 2;
    }
  }
}

// D(rows r0.., cols c0..) += s [a]x (3 x 3 block of a 6 x 6)
static void addCross(mjtNum* D, int r0, int c0, mjtNum s, const mjtNum a[3]) {
  D[6 * (r0 + 0) + c0 + 1] -= s * a[2];
  D[6 * (r0 + 0) + c0 + 2] += s * a[1];
  D[6 * (r0 + 1) + c0 + 0] += s * a[2];
  D[6 * (r0 + 1) + c0 + 2] -= s * a[0];
  D[6 * (r0 + 2) + c0 + 0] -= s * a[1];
  D[6 * (r0 + 2) + c0 + 1] += s * a[0];
}

// D block += s [a]x diag(b)
static void addCrossDiag(mjtNum* D, int r0, int c0, mjtNum s, const mjtNum a[3],
                         const mjtNum b[3]) {
  mjtNum K[9] = {0, -a[2], a[1], a[2], 0, -a[0], -a[1], a[0], 0};
  for (int r = 0; r < 3; r++) {
    for (int c = 0; c < 3; c++) D[6 * (r0 + r) + c0 + c] += s * K[3 * r + c] * b[c];
  }
}

static mjtNum pow4(mjtNum x) {
  return (x * x) * (x * x);
}

// semiaxes of the ellipsoid that stands for geom g (MuJoCo 2.2.2's mju_geomSemiAxes, not in its
// public API): sphere (r, r, r), capsule (r, r, h + r), cylinder (r, r, h), else size
static void semiAxes(const mjModel* m, int g, mjtNum s[3]) {
  const mjtNum* size = m->geom_size + 3 * g;
  switch (m->geom_type[g]) {
    case mjGEOM_SPHERE:
      s[0] = s[1] = s[2] = size[0];
      break;
    case mjGEOM_CAPSULE:
      s[0] = s[1] = size[0];
      s[2] = size[1] + size[0];
      break;
    case mjGEOM_CYLINDER:
      s[0] = s[1] = size[0];
      s[2] = size[1];
      break;
    default:
      s[0] = size[0];
      s[1] = size[1];
      s[2] = size[2];
  }
}

// ellipsoid law of geom g: l = L(y), D = dL/dy (6 x 6, nullable)
static void ellipsoidLaw(const mjModel* m, int g, mjtNum rho, mjtNum mu, const mjtNum y[6],
                         mjtNum l[6], mjtNum* D) {
  const mjtNum* fl = m->geom_fluid + mjNFLUID * g;
  mjtNum ci = fl[0], cb = fl[1], cs = fl[2], ca = fl[3], ck = fl[4], cm = fl[5];
  const mjtNum* vm = fl + 6;
  const mjtNum* vi = fl + 9;
  mjtNum s[3];
  semiAxes(m, g, s);
  const mjtNum* w = y;
  const mjtNum* v = y + 3;
  mjtNum* t = l;
  mjtNum* f = l + 3;
  mju_zero(l, 6);
  if (D) mju_zero(D, 36);

  // added mass
  mjtNum P[3], H[3], rvm[3], rvi[3], c1[3];
  for (int i = 0; i < 3; i++) {
    rvm[i] = rho * vm[i];
    rvi[i] = rho * vi[i];
    P[i] = rvm[i] * v[i];
    H[i] = rvi[i] * w[i];
  }
  mju_cross(c1, P, w);
  mju_addTo3(f, c1);
  mju_cross(c1, P, v);
  mju_addTo3(t, c1);
  mju_cross(c1, H, w);
  mju_addTo3(t, c1);
  if (D) {
    addCrossDiag(D, 3, 3, -1, w, rvm);
    addCross(D, 3, 0, 1, P);
    addCrossDiag(D, 0, 3, -1, v, rvm);
    addCross(D, 0, 3, 1, P);
    addCrossDiag(D, 0, 0, -1, w, rvi);
    addCross(D, 0, 0, 1, H);
  }

  // Magnus
  mjtNum vol = 4.0 / 3.0 * mjPI * s[0] * s[1] * s[2];
  mjtNum cmag = cm * rho * vol;
  mju_cross(c1, w, v);
  for (int i = 0; i < 3; i++) f[i] += cmag * c1[i];
  if (D) {
    addCross(D, 3, 0, -cmag, v);
    addCross(D, 3, 3, cmag, w);
  }

  // Kutta lift
  mjtNum alpha[3], n[3], an[3];
  for (int i = 0; i < 3; i++) {
    mjtNum a = s[(i + 1) % 3] * s[(i + 2) % 3];
    alpha[i] = a * a;
    n[i] = alpha[i] * v[i];
    an[i] = alpha[i] * n[i];
  }
  mjtNum N = mju_dot3(n, v), Dd = mju_dot3(n, n), speed = mju_norm3(v);
  mjtNum A = mjPI * mju_sqrt(Dd / mju_max(mjMINVAL, N));
  mjtNum cosa = N / mju_max(mjMINVAL, speed * Dd);
  mjtNum circ[3], kf[3];
  mju_cross(c1, n, v);
  for (int i = 0; i < 3; i++) circ[i] = ck * rho * cosa * A * c1[i];
  mju_cross(kf, circ, v);
  mju_addTo3(f, kf);
  int smooth = N >= mjMINVAL && speed * Dd >= mjMINVAL && speed > 0;
  mjtNum gradA[3] = {0, 0, 0};
  if (smooth) {
    for (int i = 0; i < 3; i++) gradA[i] = A * (an[i] / Dd - n[i] / N);
  }
  if (D && smooth && ck * rho != 0) {
    mjtNum gk = cosa * A, v2 = speed * speed, K[3], gg[3];
    for (int i = 0; i < 3; i++) {
      K[i] = N * v[i] - v2 * n[i];
      gg[i] = gk * (n[i] / N - v[i] / v2 - an[i] / Dd);
    }
    mjtNum sc = ck * rho;
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++) {
        mjtNum dK = 2 * v[r] * n[c] + (r == c) * (N - v2 * alpha[c]) - 2 * n[r] * v[c];
        D[6 * (3 + r) + 3 + c] += sc * (K[r] * gg[c] + gk * dK);
      }
    }
  }

  // linear drag
  mjtNum dmax = mju_max(mju_max(s[0], s[1]), s[2]), dmin = mju_min(mju_min(s[0], s[1]), s[2]);
  mjtNum dmid = s[0] + s[1] + s[2] - dmax - dmin;
  mjtNum Amax = mjPI * dmax * dmid;
  mjtNum De = 2.0 / 3.0 * (s[0] + s[1] + s[2]);
  mjtNum shape = A * cb + cs * (Amax - A);
  mjtNum cl = mu * 3.0 * mjPI * De + rho * speed * shape;
  for (int i = 0; i < 3; i++) f[i] -= cl * v[i];
  if (D) {
    mjtNum gcl[3] = {0, 0, 0};
    if (speed > 0) {
      for (int i = 0; i < 3; i++) {
        gcl[i] = rho * (shape * v[i] / speed + speed * (cb - cs) * gradA[i]);
      }
    }
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++) D[6 * (3 + r) + 3 + c] -= (r == c) * cl + v[r] * gcl[c];
    }
  }

  // angular drag
  mjtNum Imax = 8.0 / 15.0 * mjPI * dmid * pow4(dmax), Kw[3], mv[3];
  for (int i = 0; i < 3; i++) {
    mjtNum II = 8.0 / 15.0 * mjPI * s[i] * pow4(mju_max(s[(i + 1) % 3], s[(i + 2) % 3]));
    Kw[i] = ca * II + cs * (Imax - II);
    mv[i] = w[i] * Kw[i];
  }
  mjtNum nm = mju_norm3(mv);
  mjtNum cang = mu * mjPI * De * De * De + rho * nm;
  for (int i = 0; i < 3; i++) t[i] -= cang * w[i];
  if (D) {
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++) {
        mjtNum gm = nm > 0 ? rho * Kw[c] * mv[c] / nm : 0;
        D[6 * r + c] -= (r == c) * cang + w[r] * gm;
      }
    }
  }

  // interaction coefficient
  mju_scl(l, l, ci, 6);
  if (D) mju_scl(D, D, ci, 36);
}

// the law of an element at the model's density and viscosity
static void elementLaw(const mjModel* m, int b, int geom, mjtNum rho, mjtNum mu, int gate,
                       const mjtNum y[6], mjtNum l[6], mjtNum* D) {
  if (geom < 0) {
    mjtNum box[3];
    int clamped[3];
    boxSize(m, b, box, clamped);
    boxLaw(box, rho, mu, gate, y, l, D, NULL);
  } else {
    ellipsoidLaw(m, geom, rho, mu, y, l, D);
  }
}

//---------------------------------- kinematics ----------------------------------------------------

// u = v0 + w x p - wind and the local velocity y = [R' w; R' u]
static void localVel(const mjModel* m, const mjtNum V[6], const mjtNum p[3], const mjtNum R[9],
                     mjtNum u[3], mjtNum y[6]) {
  spatial_pointMotion(u, V, p);
  mju_subFrom3(u, m->opt.wind);
  mju_mulMatTVec(y, R, V, 3, 3);
  mju_mulMatTVec(y + 3, R, u, 3, 3);
}

//---------------------------------- force --------------------------------------------------------

void mjdiff_fluidForce(const mjModel* m, mjData* d, mjtNum* qfrc) {
  mju_zero(qfrc, m->nv);
  if (!fluidActive(m)) return;
  for (int b = 1; b < m->nbody; b++) {
    int ne = elementCount(m, b);
    for (int e = 0; e < ne; e++) {
      int geom = elementGeom(m, b, e);
      if (geom == -2) continue;
      const mjtNum *p, *R;
      elementFrame(d, b, geom, &p, &R);
      mjtNum V[6], u[3], y[6], l[6], F[3], T[3];
      spatial_bodyVel(m, d, b, V);
      localVel(m, V, p, R, u, y);
      elementLaw(m, b, geom, m->opt.density, m->opt.viscosity, 1, y, l, NULL);
      mju_mulMatVec(T, R, l, 3, 3);
      mju_mulMatVec(F, R, l + 3, 3, 3);
      mj_applyFT(m, d, F, T, p, b, qfrc);
    }
  }
}

//---------------------------------- state derivative ---------------------------------------------

// dV_b/dq (6 x nv) of one body: column k = sum_{j in chain(b), k moves j} (cdof0_k x cdof0_j) v_j;
// list is scratch (nv ints)
static void bodyVelDq(const mjModel* m, const mjData* d, const mjtNum* cdof0, int b, mjtNum* dV,
                      int* list) {
  int nv = m->nv;
  mju_zero(dV, 6 * nv);
  for (int j = spatial_chainLastDof(m, b); j >= 0; j = m->dof_parentid[j]) {
    spatial_addVelDqDof(m, d, cdof0, j, dV, list);
  }
}

// r = a x b, r += a (inline: the per-column loop below calls them a few times per dof)
static inline void cross3(mjtNum r[3], const mjtNum a[3], const mjtNum b[3]) {
  r[0] = a[1] * b[2] - a[2] * b[1];
  r[1] = a[2] * b[0] - a[0] * b[2];
  r[2] = a[0] * b[1] - a[1] * b[0];
}

static inline void add3(mjtNum r[3], const mjtNum a[3]) {
  r[0] += a[0];
  r[1] += a[1];
  r[2] += a[2];
}

// (t, f) = G (a, b), G 6 x 6 row-major
static inline void mulG(const mjtNum G[36], const mjtNum a[3], const mjtNum b[3], mjtNum t[3],
                        mjtNum f[3]) {
  for (int r = 0; r < 6; r++) {
    const mjtNum* g = G + 6 * r;
    mjtNum x = g[0] * a[0] + g[1] * a[1] + g[2] * a[2] + g[3] * b[0] + g[4] * b[1] + g[5] * b[2];
    if (r < 3) {
      t[r] = x;
    } else {
      f[r - 3] = x;
    }
  }
}

void mjdiff_fluidDerivative(const mjModel* m, mjData* d, mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv, nbody = m->nbody;
  if (!fluidActive(m) || nv == 0) return;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* cdof0 = compat_stackAllocNum(d, 6 * nv);
  mjtNum* J = compat_stackAllocNum(d, 6 * nv);
  mjtNum* Jp = compat_stackAllocNum(d, 3 * nv);
  mjtNum* dV = compat_stackAllocNum(d, 6 * nv);
  mjtNum* dWq = compat_stackAllocNum(d, 6 * nv);
  mjtNum* dWv = compat_stackAllocNum(d, 6 * nv);
  mjtNum* Wsub = compat_stackAllocNum(d, 6 * nbody);
  int* chain = (int*)compat_stackAllocNum(d, nv / 2 + 1);
  int* list = (int*)compat_stackAllocNum(d, nv / 2 + 1);
  mju_zero(Wsub, 6 * nbody);
  spatial_cdof0(m, d, cdof0);

  for (int b = 1; b < nbody; b++) {
    int ne = elementCount(m, b);
    if (ne == 0) continue;
    int nc = 0;
    for (int j = spatial_chainLastDof(m, b); j >= 0; j = m->dof_parentid[j]) chain[nc++] = j;
    if (nc == 0) continue;
    mjtNum V[6];
    spatial_bodyVel(m, d, b, V);
    spatial_bodyJacobian(m, cdof0, b, J);
    bodyVelDq(m, d, cdof0, b, dV, list);

    for (int e = 0; e < ne; e++) {
      int geom = elementGeom(m, b, e);
      if (geom == -2) continue;
      const mjtNum *p, *R;
      elementFrame(d, b, geom, &p, &R);
      mjtNum u[3], y[6], l[6], D[36], T[3], F[3], W[6], t1[3];
      localVel(m, V, p, R, u, y);
      elementLaw(m, b, geom, m->opt.density, m->opt.viscosity, 1, y, l, D);
      mju_mulMatVec(T, R, l, 3, 3);
      mju_mulMatVec(F, R, l + 3, 3, 3);
      mju_cross(t1, p, F);
      for (int i = 0; i < 3; i++) {
        W[i] = T[i] + t1[i];
        W[3 + i] = F[i];
        Wsub[6 * b + i] += W[i];
        Wsub[6 * b + 3 + i] += W[3 + i];
      }
      spatial_pointJacobian(nv, J, p, Jp);

      // the law's Jacobian in the world frame, G = diag(R, R) D diag(R', R'): a world change
      // (dw, du) of the element's velocities changes (T, F) by G (dw, du)
      mjtNum G[36], DR[36];
      for (int r = 0; r < 6; r++) {  // DR = D diag(R', R')
        for (int c = 0; c < 6; c++) {
          int cb = c / 3 * 3, cc = c % 3;
          DR[6 * r + c] = D[6 * r + cb] * R[3 * cc] + D[6 * r + cb + 1] * R[3 * cc + 1] +
                          D[6 * r + cb + 2] * R[3 * cc + 2];
        }
      }
      for (int r = 0; r < 6; r++) {  // G = diag(R, R) DR
        int rb = r / 3 * 3, rr = r % 3;
        for (int c = 0; c < 6; c++) {
          G[6 * r + c] = R[3 * rr] * DR[6 * rb + c] + R[3 * rr + 1] * DR[6 * (rb + 1) + c] +
                         R[3 * rr + 2] * DR[6 * (rb + 2) + c];
        }
      }

      // dW/dq and dW/dv, column by column (only the chain's dofs move the frame)
      for (int ic = 0; ic < nc; ic++) {
        int k = chain[ic];
        mjtNum dth[3], dp[3], dVk[6], du[3], a[3], b3[3];
        for (int r = 0; r < 3; r++) {
          dth[r] = J[nv * r + k];
          dp[r] = Jp[nv * r + k];
        }
        for (int r = 0; r < 6; r++) dVk[r] = dV[nv * r + k];
        spatial_pointVelDq(du, dVk, V, p, dp);

        // q: dy = [R' (dw + w x dth); R' (du + u x dth)], (dT, dF) = R D dy = G (a, b3)
        cross3(a, V, dth);
        add3(a, dVk);
        cross3(b3, u, dth);
        add3(b3, du);
        mjtNum dT[3], dF[3], c1[3], c2[3];
        mulG(G, a, b3, dT, dF);
        cross3(c1, dth, T);
        add3(dT, c1);
        cross3(c1, dth, F);
        add3(dF, c1);
        cross3(c1, dp, F);
        cross3(c2, p, dF);
        for (int r = 0; r < 3; r++) {
          dWq[nv * r + k] = dT[r] + c1[r] + c2[r];
          dWq[nv * (3 + r) + k] = dF[r];
        }

        // v: dy = [R' J_r; R' J_p]
        mulG(G, dth, dp, dT, dF);
        cross3(c2, p, dF);
        for (int r = 0; r < 3; r++) {
          dWv[nv * r + k] = dT[r] + c2[r];
          dWv[nv * (3 + r) + k] = dF[r];
        }
      }

      // DfDq += J_b' dWq, DfDv += J_b' dWv
      for (int ir = 0; ir < nc; ir++) {
        int j = chain[ir];
        const mjtNum* c = cdof0 + 6 * j;
        for (int ic = 0; ic < nc; ic++) {
          int k = chain[ic];
          mjtNum sq = 0, sv = 0;
          for (int r = 0; r < 6; r++) {
            sq += c[r] * dWq[nv * r + k];
            sv += c[r] * dWv[nv * r + k];
          }
          DfDq[nv * j + k] += sq;
          DfDv[nv * j + k] += sv;
        }
      }
    }
  }

  // (dJ' W): subtree sums of the wrenches, DfDq_jk += (cdof0_k x cdof0_j) . Wsub(body(j))
  spatial_addWrenchJacobianTerm(m, cdof0, Wsub, list, DfDq);
  compat_stackFree(d, mark);
}

//---------------------------------- parameter derivative -----------------------------------------

// col += J_b' [dT + (p - o) x dF + dp x F; dF] with dT = R dl_t, dF = R dl_f (dp, F nullable)
static void addParamWrench(const mjModel* m, const mjData* d, int b, const mjtNum p[3],
                           const mjtNum R[9], const mjtNum dl[6], const mjtNum* dp, const mjtNum* F,
                           mjtNum* col) {
  mjtNum dT[3], dF[3], r[3], c1[3], W[6];
  mju_mulMatVec(dT, R, dl, 3, 3);
  mju_mulMatVec(dF, R, dl + 3, 3, 3);
  mju_sub3(r, p, d->subtree_com + 3 * m->body_rootid[b]);
  mju_cross(c1, r, dF);
  for (int i = 0; i < 3; i++) {
    W[i] = dT[i] + c1[i];
    W[3 + i] = dF[i];
  }
  if (dp && F) {
    mju_cross(c1, dp, F);
    mju_addTo3(W, c1);
  }
  for (int j = spatial_chainLastDof(m, b); j >= 0; j = m->dof_parentid[j]) {
    col[j] += mju_dot(d->cdof + 6 * j, W, 6);
  }
}

void mjdiff_fluidParamColumn(const mjModel* m, const mjData* d, const paramEntry* pe, mjtNum* col) {
  int kind = pe->kind;
  int inertial = kind == PK_BODY_MASS || kind == PK_BODY_INERTIA || kind == PK_BODY_IPOS;
  if (kind != PK_DENSITY && kind != PK_VISCOSITY && kind != PK_WIND && !inertial) return;
  if (compat_passiveOff(m)) return;
  // density and viscosity: the derivative from above at 0 (the force switches on there)
  int on = m->opt.density > 0 || m->opt.viscosity > 0;
  if (!on && kind != PK_DENSITY && kind != PK_VISCOSITY) return;

  for (int b = 1; b < m->nbody; b++) {
    if (inertial && b != pe->id) continue;
    int ne = elementCount(m, b);
    for (int e = 0; e < ne; e++) {
      int geom = elementGeom(m, b, e);
      if (geom == -2 || (inertial && geom >= 0)) continue;  // ellipsoids: no inertia dependence
      const mjtNum *p, *R;
      elementFrame(d, b, geom, &p, &R);
      mjtNum V[6], u[3], y[6], l[6], D[36], dl[6], dy[6] = {0};
      spatial_bodyVel(m, d, b, V);
      localVel(m, V, p, R, u, y);
      if (kind == PK_DENSITY || kind == PK_VISCOSITY) {
        int dens = kind == PK_DENSITY;
        elementLaw(m, b, geom, dens ? 1 : 0, dens ? 0 : 1, 0, y, dl, NULL);
        addParamWrench(m, d, b, p, R, dl, NULL, NULL, col);
        continue;
      }
      elementLaw(m, b, geom, m->opt.density, m->opt.viscosity, 1, y, l, D);
      if (kind == PK_WIND) {
        // dy = [0; -R' e_k]
        for (int i = 0; i < 3; i++) dy[3 + i] = -R[3 * pe->comp + i];
        mju_mulMatVec(dl, D, dy, 6, 6);
        addParamWrench(m, d, b, p, R, dl, NULL, NULL, col);
      } else if (kind == PK_BODY_IPOS) {
        // dp = xmat e_k: dy = [0; R' (w x dp)], and the point of F moves
        const mjtNum* X = d->xmat + 9 * b;
        mjtNum dp[3] = {X[pe->comp], X[3 + pe->comp], X[6 + pe->comp]}, wdp[3], F[3];
        mju_cross(wdp, V, dp);
        mju_mulMatTVec(dy + 3, R, wdp, 3, 3);
        mju_mulMatVec(dl, D, dy, 6, 6);
        mju_mulMatVec(F, R, l + 3, 3, 3);
        addParamWrench(m, d, b, p, R, dl, dp, F, col);
      } else {
        // mass, inertia: through the box
        mjtNum box[3], Db[18], dbox[3];
        int clamped[3];
        boxSize(m, b, box, clamped);
        boxLaw(box, m->opt.density, m->opt.viscosity, 1, y, l, NULL, Db);
        mjtNum mass = m->body_mass[b];
        for (int i = 0; i < 3; i++) {
          if (kind == PK_BODY_MASS) {
            dbox[i] = -box[i] / (2 * mass);
          } else {
            dbox[i] = clamped[i] ? 0 : 3.0 * (pe->comp == i ? -1 : 1) / (mass * box[i]);
          }
        }
        mju_mulMatVec(dl, Db, dbox, 6, 3);
        addParamWrench(m, d, b, p, R, dl, NULL, NULL, col);
      }
    }
  }
}
