// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Length, Jacobian and Hessian of MuJoCo 2.2's spatial tendons (mj_tendon, mju_wrap), and the
// derivatives of tendon forces qfrc = J(q)' F(L, Ldot).
//
// Path (mj_tendon). A spatial tendon is a list of sites, wrap geoms (sphere, cylinder; optional
// side site) and pulleys. A pulley sets the divisor dv of the pieces after it. Each piece joins two
// sites s0 (body b0) and s1 (body b1), either straight or around a geom g (frame c, R, radius r,
// body bg) placed between them:
//   straight  l = |s1 - s0|
//   wrapped   l = G(p0, p1),  p_j = R' (s_j - c)  (the sites in the geom's frame)
//   L = sum_pieces l / dv
// MuJoCo's wrapped length |s0 - t1| + arc(t1, t2) + |t2 - s1| through the tangent points t1, t2
// is, in closed form (rho_j = |p_j|, ell_j = sqrt(rho_j^2 - r^2), alpha = angle(p0, p1)):
//   circle   h(p0, p1) = ell0 + ell1 + r (psi - acos(r / rho0) - acos(r / rho1)),
//            psi = alpha (the short way), 2 pi - alpha (the long way, a side site's choice) or
//            2 pi + alpha (the short way round, past the tangent points' crossing: a side site
//            next to the line between the sites)
//   sphere   G = h in 3D (the great circle through p0, p1)
//   cylinder G = sqrt(S^2 + dz^2), S = h of the xy projections (2D), dz = p1z - p0z (MuJoCo puts
//            the tangent points' heights in proportion of the 2D lengths: a straight line on the
//            unrolled cylinder)
// The branch is read off MuJoCo's tangent points in d->wrap_xpos: the arc psi - acos(r / rho0) -
// acos(r / rho1) is the angle between them or its complement to 2 pi. Only the sign of
// dpsi = +-dalpha enters the derivatives.
//
// Gradient and Hessian of h. grad rho = p^, H rho = P / rho (P = I - p^ p^'),
//   dh/drho = ell / rho,  d2h/drho2 = r^2 / (ell rho^2),  dh/dpsi = r (psi = +-alpha),
//   c = p0^ . p1^, alpha = acos(c), s = sin(alpha):
//     grad_p0 c = P0 p1^ / rho0,  grad_p1 c = P1 p0^ / rho1
//     H_00 c = -(c P0 + p0^ (P0 p1^)' + (P0 p1^) p0^') / rho0^2,  H_01 c = P0 P1 / (rho0 rho1)
//     H alpha = -H c / s - c / s^3 grad c grad c'
//   grad h = sum_j ell_j / rho_j grad rho_j +- r grad alpha,
//   H h = sum_j (r^2 / (ell_j rho_j^2) grad rho_j grad rho_j' + ell_j / rho_j^2 P_j) +- r H alpha
// (grad_p0 h = (p0 - t1) / ell0, the unit vector of the first straight part: the envelope theorem,
// as t1 minimises the length). Cylinder: grad G = (S grad S + dz grad dz) / G,
//   H G = (grad S grad S' + S H S + grad dz grad dz' - grad G grad G') / G.
// Straight piece: grad_s1 l = u = (s1 - s0) / l = -grad_s0 l,  H = [P, -P; -P, P] / l.
//
// Kinematics (cdof0_j = [a_j; l_j] about the world origin, spatial.h). A point x of body B has the
// Jacobian column J_B(x)_i = l_i + a_i x x (i in chain(B)), and as x moves with J_x,
//   d J_B(x)_i / dq_k = [k moves i] (cdof0_k x cdof0_i) at x + a_i x J_x,k           (*)
// (k moves i: spatial_movers). Each piece is a function l(y_0, y_1) of two world vectors
//   y_j = s_j - c  (wrapped: relative to the geom, seen in its rotating frame; straight: c = 0)
// with the world gradient g_j = R grad_pj l and world Hessian W = blkdiag(R) H blkdiag(R)'.
// The site s_j moves relative to the geom's body bg by D_j = J_bj(s_j) - J_bg(s_j) (J_0 = 0), so
//   J_i += sum_j g_j . D_j,i / dv
//   dg_j / dq_k = w_k x g_j + sum_l W_jl D_l,k          (w_k = a_k for k in chain(bg), else 0)
//   H_ik = d J_i / d q_k += sum_j [(w_k x g_j) . D_j,i + sum_l D_j,i' W_jl D_l,k
//                                  + g_j . d D_j,i / d q_k] / dv
// with d D_j,i / d q_k from (*) for B = bj and B = bg, both with J_x = J_bj(s_j) (the site is
// material on bj). MuJoCo's ten_J treats the tangent points as material points of bg, which gives
// the same J (the envelope theorem once more). H is d J_i / d q_k in the tangent dq: the
// derivative of J in q, not the symmetric second derivative where ball joints make them differ.
//
// Tendon forces. Coordinates x_a = L of tendon t_a (a < n <= 2), forces F_a(x, v) (v_a = Ldot_a =
// J_a qvel) acting as qfrc = sum_a J_a' F_a:
//   d qfrc / dq = sum_a [J_a' sum_b (F_a,xb J_b + F_a,vb qvel' H_b) + F_a H_a]
//   d qfrc / dv = sum_a J_a' sum_b F_a,vb J_b
// (d Ldot_b / dq_k = sum_i qvel_i H_b,ik).
//
// Inside wrap (mju_wrap's wrap_inside: on 2.2 the side site projects inside the circle, on 3.x it
// lies inside the radius: compat_wrapInside). The path touches the circle (sphere: the great
// circle in the plane of p0, p1) at one point t, where the two
// straight parts make equal angles with the radius: t makes S = |q0 - t| + |q1 - t| stationary
// over the surface (q_j = p_j, sphere; the xy projections, cylinder, then G = sqrt(S^2 + dz^2)).
// MuJoCo finds t by Newton's method to a tolerance of 1e-6; we refine it to rounding (Newton on
// the in-plane angle th from MuJoCo's t) and use the envelope theorem with the surface
// coordinates y = (th, and for the sphere the out-of-plane angle ph; t_th = n x t, t_ph = r n,
// t_yy = -t, t_thph = 0 at ph = 0, n the plane's normal; u_j = (q_j - t) / l_j, P_j = E - u_j u_j',
// E the identity of the plane (sphere: 3D)):
//   S_y = -sum_j u_j . t_y,  S_yy = sum_j (t_y' P_j t_y / l_j + u_j . t),  S_thph = 0
//   grad_qj S = u_j,  H_jk S = delta_jk P_j / l_j - sum_y (P_j t_y)(P_k t_y)' / (l_j l_k S_yy)
// (H = S_qq - S_qy S_yy^-1 S_yq). A t that Newton moves by more than 1e-4 rad (MuJoCo's fallback
// when it finds no touching point) is refused (-1).
// Not treated: degenerate wraps (sites at the geom's centre, p0 parallel to p1).

#include <math.h>
#include <string.h>

#include "compat.h"
#include "derivative.h"
#include "spatial.h"

//---------------------------------- local wrap functions ------------------------------------------

// h(p0, p1) in dimension n (2 or 3) with its gradient (2n) and Hessian (2n x 2n), psi = sgn alpha
// + off
static mjtNum circleLength(int n, const mjtNum* p0, const mjtNum* p1, mjtNum r, int sgn, mjtNum off,
                           mjtNum* grad, mjtNum* hess) {
  int N = 2 * n;
  const mjtNum* p[2] = {p0, p1};
  mjtNum rho[2], ell[2], e[2][3] = {{0}}, P[2][9] = {{0}};
  for (int j = 0; j < 2; j++) {
    rho[j] = 0;
    for (int i = 0; i < n; i++) rho[j] += p[j][i] * p[j][i];
    rho[j] = sqrt(rho[j]);
    ell[j] = sqrt(mju_max(0, rho[j] * rho[j] - r * r));
    for (int i = 0; i < n; i++) e[j][i] = p[j][i] / rho[j];
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++) P[j][n * a + b] = (a == b) - e[j][a] * e[j][b];
  }
  mjtNum c = 0;
  for (int i = 0; i < n; i++) c += e[0][i] * e[1][i];
  c = mju_clip(c, -1, 1);
  mjtNum alpha = acos(c), s = sqrt(mju_max(mjMINVAL, 1 - c * c));
  mjtNum psi = sgn * alpha + off;
  mjtNum h = ell[0] + ell[1] + r * (psi - acos(r / rho[0]) - acos(r / rho[1]));

  // grad c (2n): P0 e1 / rho0, P1 e0 / rho1
  mjtNum gc[6], Pe[2][3];
  for (int j = 0; j < 2; j++) {
    for (int a = 0; a < n; a++) {
      Pe[j][a] = 0;
      for (int b = 0; b < n; b++) Pe[j][a] += P[j][n * a + b] * e[1 - j][b];
      gc[n * j + a] = Pe[j][a] / rho[j];
    }
  }

  // grad h = sum ell/rho e_j + sgn r grad alpha,  grad alpha = -grad c / s
  for (int j = 0; j < 2; j++) {
    for (int a = 0; a < n; a++) {
      grad[n * j + a] = ell[j] / rho[j] * e[j][a] - sgn * r * gc[n * j + a] / s;
    }
  }
  if (!hess) return h;

  // H c
  mjtNum Hc[36];
  for (int j = 0; j < 2; j++) {
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        Hc[N * (n * j + a) + n * j + b] =
            -(c * P[j][n * a + b] + e[j][a] * Pe[j][b] + Pe[j][a] * e[j][b]) / (rho[j] * rho[j]);
        mjtNum pp = 0;
        for (int k = 0; k < n; k++) pp += P[j][n * a + k] * P[1 - j][n * k + b];
        Hc[N * (n * j + a) + n * (1 - j) + b] = pp / (rho[0] * rho[1]);
      }
    }
  }

  // H h
  for (int A = 0; A < N; A++) {
    for (int B = 0; B < N; B++) {
      mjtNum Halpha = -Hc[N * A + B] / s - c / (s * s * s) * gc[A] * gc[B];
      mjtNum v = sgn * r * Halpha;
      int ja = A / n, jb = B / n, a = A % n, b = B % n;
      if (ja == jb) {
        int j = ja;
        v += r * r / (ell[j] * rho[j] * rho[j]) * e[j][a] * e[j][b] +
             ell[j] / (rho[j] * rho[j]) * P[j][n * a + b];
      }
      hess[N * A + B] = v;
    }
  }
  return h;
}

// cylinder: the helix length G = sqrt(S^2 + dz^2) over the xy length S (gradient gS, Hessian HS
// in the two points, 6 and 6 x 6), dz = p1_z - p0_z: gradient grad (6) and Hessian hess (6 x 6)
//   dG = (S dS + dz ddz) / G,  d2G = (dS dS' + S d2S + ddz ddz' - dG dG') / G
static mjtNum helixLength(mjtNum S, const mjtNum gS[6], const mjtNum HS[36], const mjtNum p0[3],
                          const mjtNum p1[3], mjtNum grad[6], mjtNum hess[36]) {
  mjtNum dz = p1[2] - p0[2], gz[6] = {0, 0, -1, 0, 0, 1};
  mjtNum G = sqrt(S * S + dz * dz);
  for (int a = 0; a < 6; a++) grad[a] = (S * gS[a] + dz * gz[a]) / G;
  for (int a = 0; a < 6; a++) {
    for (int b = 0; b < 6; b++) {
      hess[6 * a + b] = (gS[a] * gS[b] + S * HS[6 * a + b] + gz[a] * gz[b] - grad[a] * grad[b]) / G;
    }
  }
  return G;
}

// G(p0, p1) of a sphere or cylinder (local frame): gradient (6) and Hessian (6 x 6)
static mjtNum wrapLength(int type, const mjtNum p0[3], const mjtNum p1[3], mjtNum r, int sgn,
                         mjtNum off, mjtNum grad[6], mjtNum hess[36]) {
  if (type == mjWRAP_SPHERE) return circleLength(3, p0, p1, r, sgn, off, grad, hess);

  // cylinder: S of the xy projections, G = sqrt(S^2 + dz^2)
  mjtNum gS2[4], HS2[16], gS[6] = {0}, HS[36] = {0};
  mjtNum S = circleLength(2, p0, p1, r, sgn, off, gS2, HS2);
  static const int idx[4] = {0, 1, 3, 4};
  for (int a = 0; a < 4; a++) {
    gS[idx[a]] = gS2[a];
    for (int b = 0; b < 4; b++) HS[6 * idx[a] + idx[b]] = HS2[4 * a + b];
  }
  return helixLength(S, gS, HS, p0, p1, grad, hess);
}

//---------------------------------- kinematics ----------------------------------------------------

typedef struct ctx_ {
  const mjModel* m;
  const mjtNum* cdof0;   // (nv x 6)
  unsigned char* mv;     // (nv x nv) mv[nv k + i]: dof k moves the axis of dof i
  unsigned char* chain;  // (2 x nv) dof masks of the chains of b_j, bg
  mjtNum* Jx;            // (2 x 3 x nv) J_bj(s_j)
  mjtNum* D;             // (2 x 3 x nv) D_j
  mjtNum* E;             // (2 x 3 x nv) sum_l W_jl D_l
  mjtNum* J;             // (nv) output
  mjtNum* H;             // (nv x nv) output, or NULL
} ctx;

static void chainMask(const mjModel* m, int b, unsigned char* mask) {
  memset(mask, 0, (size_t)m->nv);
  for (int j = b > 0 ? spatial_chainLastDof(m, b) : -1; j >= 0; j = m->dof_parentid[j]) {
    mask[j] = 1;
  }
}

// J_B(x) (3 x nv) of body B at the world point x
static void pointJac(const ctx* c, const unsigned char* mask, const mjtNum x[3], mjtNum* Jx) {
  int nv = c->m->nv;
  for (int i = 0; i < nv; i++) {
    mjtNum col[3] = {0, 0, 0};
    if (mask[i]) spatial_pointMotion(col, c->cdof0 + 6 * i, x);
    for (int r = 0; r < 3; r++) Jx[nv * r + i] = col[r];
  }
}

// (*): d J_B(x)_i / dq_k for B's chain mask, x moving with Jx (3 x nv)
static void pointJacDq(const ctx* c, const unsigned char* mask, const mjtNum x[3], const mjtNum* Jx,
                       int i, int k, mjtNum out[3]) {
  int nv = c->m->nv;
  mju_zero3(out);
  if (!mask[i]) return;
  const mjtNum* ci = c->cdof0 + 6 * i;
  mjtNum jk[3] = {Jx[k], Jx[nv + k], Jx[2 * nv + k]};
  mju_cross(out, ci, jk);
  if (c->mv[nv * k + i]) {
    mjtNum cr[6], p[3];
    spatial_crossMotion(cr, c->cdof0 + 6 * k, ci);
    spatial_pointMotion(p, cr, x);
    mju_addTo3(out, p);
  }
}

// one piece: sites s (2 x 3) on bodies b (2), relative to body bg (0: none), world gradient g
// (2 x 3) and world Hessian W (6 x 6), all already divided by the divisor
static void addPiece(ctx* c, const mjtNum s[6], const int b[2], int bg, const mjtNum g[6],
                     const mjtNum W[36]) {
  const mjModel* m = c->m;
  int nv = m->nv;
  unsigned char* cb = c->chain;
  unsigned char* cg = c->chain + nv;
  chainMask(m, bg, cg);
  for (int j = 0; j < 2; j++) {
    mjtNum* Jx = c->Jx + 3 * nv * j;
    mjtNum* D = c->D + 3 * nv * j;
    chainMask(m, b[j], cb);
    pointJac(c, cb, s + 3 * j, Jx);
    pointJac(c, cg, s + 3 * j, D);
    for (int i = 0; i < 3 * nv; i++) D[i] = Jx[i] - D[i];
    for (int i = 0; i < nv; i++) {
      c->J[i] += g[3 * j] * D[i] + g[3 * j + 1] * D[nv + i] + g[3 * j + 2] * D[2 * nv + i];
    }
  }
  if (!c->H) return;

  // E_j = sum_l W_jl D_l (3 x nv)
  for (int j = 0; j < 2; j++) {
    for (int r = 0; r < 3; r++) {
      for (int k = 0; k < nv; k++) {
        mjtNum v = 0;
        for (int l = 0; l < 2; l++) {
          const mjtNum* D = c->D + 3 * nv * l;
          for (int q = 0; q < 3; q++) v += W[6 * (3 * j + r) + 3 * l + q] * D[nv * q + k];
        }
        c->E[3 * nv * j + nv * r + k] = v;
      }
    }
  }

  // H_ik += sum_j (w_k x g_j) . D_j,i + D_j,i . E_j,k + g_j . dD_j,i/dq_k
  for (int j = 0; j < 2; j++) {
    const mjtNum* gj = g + 3 * j;
    const mjtNum* Jx = c->Jx + 3 * nv * j;
    const mjtNum* D = c->D + 3 * nv * j;
    const mjtNum* E = c->E + 3 * nv * j;
    chainMask(m, b[j], cb);
    if (!memcmp(cb, cg, (size_t)nv)) continue;  // the site moves with the geom (or the world)
    for (int i = 0; i < nv; i++) {
      if (!cb[i] && !cg[i]) continue;
      mjtNum Di[3] = {D[i], D[nv + i], D[2 * nv + i]};
      for (int k = 0; k < nv; k++) {
        mjtNum v = Di[0] * E[k] + Di[1] * E[nv + k] + Di[2] * E[2 * nv + k];
        if (cg[k]) {
          mjtNum wg[3];
          mju_cross(wg, c->cdof0 + 6 * k, gj);
          v += mju_dot3(wg, Di);
        }
        mjtNum d1[3], d2[3];
        pointJacDq(c, cb, s + 3 * j, Jx, i, k, d1);
        pointJacDq(c, cg, s + 3 * j, Jx, i, k, d2);
        v += gj[0] * (d1[0] - d2[0]) + gj[1] * (d1[1] - d2[1]) + gj[2] * (d1[2] - d2[2]);
        c->H[nv * i + k] += v;
      }
    }
  }
}

// straight piece between sites s (2 x 3): g, W divided by dv; returns its length
static mjtNum straightPiece(ctx* c, const mjtNum s[6], const int b[2], mjtNum dv) {
  mjtNum u[3], g[6], W[36];
  mju_sub3(u, s + 3, s);
  mjtNum l = mju_normalize3(u);
  if (l < mjMINVAL) return l;
  for (int r = 0; r < 3; r++) {
    g[r] = -u[r] / dv;
    g[3 + r] = u[r] / dv;
  }
  for (int a = 0; a < 3; a++) {
    for (int bb = 0; bb < 3; bb++) {
      mjtNum P = ((a == bb) - u[a] * u[bb]) / (l * dv);
      W[6 * a + bb] = W[6 * (3 + a) + 3 + bb] = P;
      W[6 * a + 3 + bb] = W[6 * (3 + a) + bb] = -P;
    }
  }
  addPiece(c, s, b, 0, g, W);
  return l;
}

// the wrap's branch psi = sgn alpha + *off (returns sgn) from the tangent points t (2 x 3, local)
static int wrapBranch(int type, const mjtNum p0[3], const mjtNum p1[3], const mjtNum t[6], mjtNum r,
                      mjtNum* off) {
  int n = type == mjWRAP_SPHERE ? 3 : 2;
  mjtNum rho0 = 0, rho1 = 0, c = 0, ct = 0, nt0 = 0, nt1 = 0;
  for (int i = 0; i < n; i++) {
    rho0 += p0[i] * p0[i];
    rho1 += p1[i] * p1[i];
    c += p0[i] * p1[i];
    ct += t[i] * t[3 + i];
    nt0 += t[i] * t[i];
    nt1 += t[3 + i] * t[3 + i];
  }
  rho0 = sqrt(rho0);
  rho1 = sqrt(rho1);
  mjtNum alpha = acos(mju_clip(c / (rho0 * rho1), -1, 1));
  mjtNum beta = acos(mju_clip(ct / sqrt(nt0 * nt1), -1, 1));
  mjtNum a01 = acos(mju_clip(r / rho0, -1, 1)) + acos(mju_clip(r / rho1, -1, 1));
  // candidate arcs in [0, 2 pi): sgn = 1: alpha - a01 (+ 2 pi if negative); sgn = -1:
  // 2 pi - alpha - a01; MuJoCo's arc is beta or 2 pi - beta
  mjtNum offPlus = alpha - a01 < 0 ? 2 * mjPI : 0;
  mjtNum arc[2] = {alpha - a01 + offPlus, 2 * mjPI - alpha - a01}, miss[2];
  for (int i = 0; i < 2; i++)
    miss[i] = mju_min(fabs(arc[i] - beta), fabs(arc[i] - 2 * mjPI + beta));
  *off = miss[0] <= miss[1] ? offPlus : 2 * mjPI;
  return miss[0] <= miss[1] ? 1 : -1;
}

// inside wrap: G(p0, p1) with gradient (6) and Hessian (6 x 6) from MuJoCo's touching point t
// (local); returns 0, or -1 if t is not (near) a stationary point
static int insideLength(int type, const mjtNum p0[3], const mjtNum p1[3], const mjtNum t0[3],
                        mjtNum r, mjtNum* len, mjtNum grad[6], mjtNum hess[36]) {
  int sphere = type == mjWRAP_SPHERE;
  mjtNum q[2][3], n[3] = {0, 0, 1}, t[3], E[9] = {1, 0, 0, 0, 1, 0, 0, 0, sphere};
  for (int i = 0; i < 3; i++) {
    q[0][i] = i < 2 || sphere ? p0[i] : 0;
    q[1][i] = i < 2 || sphere ? p1[i] : 0;
    t[i] = i < 2 || sphere ? t0[i] : 0;
  }
  if (sphere) {
    mju_cross(n, q[0], q[1]);
    if (mju_normalize3(n) < mjMINVAL) return -1;
    mju_addToScl3(t, n, -mju_dot3(t, n));  // into the plane
  }
  mju_scl3(t, t, r / mju_norm3(t));

  // Newton on the in-plane angle
  mjtNum u[2][3], l[2], tth[3], moved = 0, Sth = 0, Sthth = 1;
  for (int it = 0; it < 8; it++) {
    mju_cross(tth, n, t);
    Sth = 0;
    Sthth = 0;
    for (int j = 0; j < 2; j++) {
      mju_sub3(u[j], q[j], t);
      l[j] = mju_normalize3(u[j]);
      if (l[j] < mjMINVAL) return -1;
      mjtNum ut = mju_dot3(u[j], tth);
      Sth -= ut;
      Sthth += (mju_dot3(tth, tth) - ut * ut) / l[j] + mju_dot3(u[j], t);
    }
    if (Sthth <= 0) return -1;
    mjtNum dth = -Sth / Sthth;
    if (it == 7 || fabs(dth) < 1e-15) break;
    moved += dth;
    mjtNum tn[3];
    for (int i = 0; i < 3; i++) tn[i] = cos(dth) * t[i] + sin(dth) * tth[i];
    mju_copy3(t, tn);
  }
  if (fabs(moved) > 1e-4 || fabs(Sth) > 1e-10 * (l[0] + l[1])) return -1;

  // S, its gradient and Hessian in q (6)
  mjtNum S = l[0] + l[1], gS[6], HS[36], ty[2][3], Syy[2], P[2][9], Pt[2][2][3];
  int ny = sphere ? 2 : 1;
  mju_copy3(ty[0], tth);
  mju_scl3(ty[1], n, r);
  for (int j = 0; j < 2; j++) {
    for (int a = 0; a < 3; a++) {
      gS[3 * j + a] = u[j][a];
      for (int b = 0; b < 3; b++) P[j][3 * a + b] = E[3 * a + b] - u[j][a] * u[j][b];
    }
  }
  for (int y = 0; y < ny; y++) {
    Syy[y] = 0;
    for (int j = 0; j < 2; j++) {
      mju_mulMatVec(Pt[y][j], P[j], ty[y], 3, 3);
      Syy[y] += mju_dot3(ty[y], Pt[y][j]) / l[j] + mju_dot3(u[j], t);
    }
    if (Syy[y] <= 0) return -1;
  }
  for (int A = 0; A < 6; A++) {
    for (int B = 0; B < 6; B++) {
      int j = A / 3, a = A % 3, k = B / 3, b = B % 3;
      mjtNum v = j == k ? P[j][3 * a + b] / l[j] : 0;
      for (int y = 0; y < ny; y++) v -= Pt[y][j][a] * Pt[y][k][b] / (l[j] * l[k] * Syy[y]);
      HS[6 * A + B] = v;
    }
  }
  if (sphere) {
    *len = S;
    mju_copy(grad, gS, 6);
    mju_copy(hess, HS, 36);
    return 0;
  }

  // cylinder: G = sqrt(S^2 + dz^2)
  *len = helixLength(S, gS, HS, p0, p1, grad, hess);
  return 0;
}

// the sites s (2 x 3) around geom g with tangent points t (2 x 3, world); 0, or -1 for an
// inside wrap without a touching point; *len: the piece's length
static int wrapPiece(ctx* c, const mjData* d, const mjtNum s[6], const int b[2], int g, int type,
                     int side, const mjtNum t[6], mjtNum dv, mjtNum* len) {
  const mjModel* m = c->m;
  const mjtNum* xpos = d->geom_xpos + 3 * g;
  const mjtNum* R = d->geom_xmat + 9 * g;
  mjtNum r = m->geom_size[3 * g];
  mjtNum p[6], tl[6], tmp[3];
  for (int j = 0; j < 2; j++) {
    mju_sub3(tmp, s + 3 * j, xpos);
    mju_mulMatTVec(p + 3 * j, R, tmp, 3, 3);
    mju_sub3(tmp, t + 3 * j, xpos);
    mju_mulMatTVec(tl + 3 * j, R, tmp, 3, 3);
  }

  // inside wrap: the side site's projection inside the circle
  int inside = 0;
  if (side >= 0) {
    mjtNum sl[3], sd[2];
    mju_sub3(tmp, d->site_xpos + 3 * side, xpos);
    mju_mulMatTVec(sl, R, tmp, 3, 3);
    if (type == mjWRAP_SPHERE) {
      mjtNum a0[3], nrm[3], a1[3];
      mju_copy3(a0, p);
      mju_normalize3(a0);
      mju_cross(nrm, p, p + 3);
      mju_normalize3(nrm);
      mju_cross(a1, nrm, a0);
      mju_normalize3(a1);
      sd[0] = mju_dot3(sl, a0);
      sd[1] = mju_dot3(sl, a1);
    } else {
      sd[0] = sl[0];
      sd[1] = sl[1];
    }
    inside = compat_wrapInside(sl, sd, r);  // 2.2: |sd| < r; 3.x: |sl| < r
  }

  mjtNum gl[6], Hl[36], gw[6], W[36], RH[36];
  if (inside) {
    if (insideLength(type, p, p + 3, tl, r, len, gl, Hl)) return -1;
  } else {
    mjtNum off;
    int sgn = wrapBranch(type, p, p + 3, tl, r, &off);
    *len = wrapLength(type, p, p + 3, r, sgn, off, gl, Hl);
  }

  // world: g_j = R gl_j, W = blkdiag(R) Hl blkdiag(R)'
  for (int j = 0; j < 2; j++) {
    mju_mulMatVec(gw + 3 * j, R, gl + 3 * j, 3, 3);
    for (int i = 0; i < 3; i++) gw[3 * j + i] /= dv;
  }
  for (int A = 0; A < 6; A++) {
    for (int B = 0; B < 6; B++) {
      int ja = A / 3, a = A % 3;
      mjtNum v = 0;
      for (int q = 0; q < 3; q++) v += R[3 * a + q] * Hl[6 * (3 * ja + q) + B];
      RH[6 * A + B] = v;
    }
  }
  for (int A = 0; A < 6; A++) {
    for (int B = 0; B < 6; B++) {
      int jb = B / 3, bb = B % 3;
      mjtNum v = 0;
      for (int q = 0; q < 3; q++) v += RH[6 * A + 3 * jb + q] * R[3 * bb + q];
      W[6 * A + B] = v / dv;
    }
  }
  addPiece(c, s, b, m->geom_bodyid[g], gw, W);
  return 0;
}

//---------------------------------- public -------------------------------------------------------

int mjdiff_tendonSpatial(const mjModel* m, int t) {
  return m->tendon_num[t] > 0 && m->wrap_type[m->tendon_adr[t]] != mjWRAP_JOINT;
}

int mjdiff_tendonDerivative(const mjModel* m, mjData* d, int t, mjtNum* L, mjtNum* J, mjtNum* H) {
  int nv = m->nv, adr = m->tendon_adr[t], num = m->tendon_num[t];
  mjtNum len = 0;
  if (J) mju_zero(J, nv);
  if (H) mju_zero(H, nv * nv);
  if (!mjdiff_tendonSpatial(m, t)) {
    for (int j = 0; j < num; j++) {
      int jnt = m->wrap_objid[adr + j];
      len += m->wrap_prm[adr + j] * d->qpos[m->jnt_qposadr[jnt]];
      if (J) J[m->jnt_dofadr[jnt]] += m->wrap_prm[adr + j];
    }
    if (L) *L = len;
    return 0;
  }

  // scratch: cdof0, Jx, D, E (6 nv each), J, the movers' bytes, list, chain masks
  if (compat_stackSpace(d) < 26 * nv + nv * nv / 8 + nv / 2 + 8) return -2;
  mjdiffStackMark mark = compat_stackMark(d);
  ctx c;
  c.m = m;
  mjtNum* cdof0 = compat_stackAllocNum(d, 6 * nv);
  c.cdof0 = cdof0;
  c.mv = (unsigned char*)compat_stackAllocNum(d, nv * nv / 8 + 1);
  c.chain = (unsigned char*)compat_stackAllocNum(d, 2 * nv / 8 + 1);
  c.Jx = compat_stackAllocNum(d, 6 * nv);
  c.D = compat_stackAllocNum(d, 6 * nv);
  c.E = compat_stackAllocNum(d, 6 * nv);
  c.J = compat_stackAllocNum(d, nv);
  c.H = H;
  int* list = (int*)compat_stackAllocNum(d, nv / 2 + 1);
  mju_zero(c.J, nv);
  spatial_cdof0(m, d, cdof0);
  memset(c.mv, 0, (size_t)(nv * nv));
  for (int i = 0; i < nv; i++) {
    int n = spatial_movers(m, i, list);
    for (int q = 0; q < n; q++) c.mv[nv * list[q] + i] = 1;
  }

  // walk the path as mj_tendon does, with MuJoCo's wrap points (d->wrap_obj, d->wrap_xpos)
  int status = 0, wc = d->ten_wrapadr[t], j = 0;
  mjtNum dv = 1;
  while (j < num - 1) {
    int tp0 = m->wrap_type[adr + j], tp1 = m->wrap_type[adr + j + 1];
    int id0 = m->wrap_objid[adr + j], id1 = m->wrap_objid[adr + j + 1];
    if (tp0 == mjWRAP_PULLEY || tp1 == mjWRAP_PULLEY) {
      if (tp0 == mjWRAP_PULLEY) {
        dv = m->wrap_prm[adr + j];
        wc++;
      }
      j++;
      continue;
    }
    int g = -1, type = mjWRAP_NONE, side = -1;
    if (tp1 == mjWRAP_SPHERE || tp1 == mjWRAP_CYLINDER) {
      g = id1;
      type = tp1;
      side = (int)mju_round(m->wrap_prm[adr + j + 1]);
      id1 = m->wrap_objid[adr + j + 2];
    }
    mjtNum s[6];
    int b[2] = {m->site_bodyid[id0], m->site_bodyid[id1]};
    mju_copy3(s, d->site_xpos + 3 * id0);
    mju_copy3(s + 3, d->site_xpos + 3 * id1);
    int wrapped = g >= 0 && wc + 1 < 2 * m->nwrap && d->wrap_obj[wc + 1] == g;
    if (wrapped) {
      mjtNum l = 0;
      if (wrapPiece(&c, d, s, b, g, type, side, d->wrap_xpos + 3 * (wc + 1), dv, &l) < 0) {
        status = -1;
      }
      len += l / dv;
      wc += 3;
    } else {
      len += straightPiece(&c, s, b, dv) / dv;
      wc += 1;
    }
    j += g >= 0 ? 2 : 1;
    if (j == num - 1 || m->wrap_type[adr + j + 1] == mjWRAP_PULLEY) wc++;
  }
  if (L) *L = len;
  if (J) mju_copy(J, c.J, nv);
  compat_stackFree(d, mark);
  return status;
}

int mjdiff_tendonForceDerivative(const mjModel* m, mjData* d, int n, const int* tendon,
                                 const mjtNum* F, const mjtNum* dF, mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv, status = 0;
  if (compat_stackSpace(d) < 4 * nv + n * nv * nv) return -2;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* J = compat_stackAllocNum(d, 2 * nv);
  mjtNum* H = compat_stackAllocNum(d, n * nv * nv);
  mjtNum* vH = compat_stackAllocNum(d, 2 * nv);
  for (int a = 0; a < n; a++) {
    mjtNum* Ha = H + nv * nv * a;
    int st = mjdiff_tendonDerivative(m, d, tendon[a], NULL, J + nv * a, Ha);
    if (st && !status) status = st;
    // qvel' H_a
    for (int k = 0; k < nv; k++) {
      mjtNum v = 0;
      for (int i = 0; i < nv; i++) v += d->qvel[i] * Ha[nv * i + k];
      vH[nv * a + k] = v;
    }
  }
  for (int a = 0; a < n; a++) {
    const mjtNum* Ja = J + nv * a;
    const mjtNum* Ha = H + nv * nv * a;
    const mjtNum* dFa = dF + 2 * n * a;
    for (int i = 0; i < nv; i++) {
      if (DfDq) {
        for (int k = 0; k < nv; k++) DfDq[nv * i + k] += F[a] * Ha[nv * i + k];
      }
      if (Ja[i] == 0) continue;
      for (int k = 0; k < nv; k++) {
        mjtNum q = 0, v = 0;
        for (int bb = 0; bb < n; bb++) {
          q += dFa[bb] * J[nv * bb + k] + dFa[n + bb] * vH[nv * bb + k];
          v += dFa[n + bb] * J[nv * bb + k];
        }
        if (DfDq) DfDq[nv * i + k] += Ja[i] * q;
        if (DfDv) DfDv[nv * i + k] += Ja[i] * v;
      }
    }
  }
  compat_stackFree(d, mark);
  return status;
}

int mjdiff_tendonRates(const mjModel* m, mjData* d, int t, mjtNum* J, mjtNum* vH) {
  int nv = m->nv;
  if (vH) mju_zero(vH, nv);
  if (!vH || !mjdiff_tendonSpatial(m, t)) return mjdiff_tendonDerivative(m, d, t, NULL, J, NULL);
  if (compat_stackSpace(d) < nv * nv) {
    if (J) mju_zero(J, nv);
    return -2;
  }
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* H = compat_stackAllocNum(d, nv * nv);
  int status = mjdiff_tendonDerivative(m, d, t, NULL, J, H);
  for (int k = 0; k < nv; k++) {
    for (int i = 0; i < nv; i++) vH[k] += d->qvel[i] * H[nv * i + k];
  }
  compat_stackFree(d, mark);
  return status;
}
