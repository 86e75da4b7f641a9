// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Derivatives of the applied generalised forces f(q, v, act, u) of the smooth model: MuJoCo's
// passive forces, actuators, and every smooth force of plugin/smooth.c.
//
// Spatial notation (all about the fixed world origin, so that nothing moves with q but the bodies):
//   cdof0_j = [a_j; l_j]         motion axis of dof j (MuJoCo's cdof moved from the tree's com)
//   J_b = sum_{j in chain(b)} cdof0_j e_j'        (6 x nv) body Jacobian, V_b = J_b v = [w_b; v0_b]
//   d cdof0_j / d q_k = cdof0_k x cdof0_j         for k that moves j (an ancestor dof of j, or a
//                                                 rotational dof of the same ball or free joint)
//   dV_b/dq: column k = sum_{j in chain(b), k moves j} (cdof0_k x cdof0_j) v_j
//   point p fixed to b: velocity v0_b + w_b x p, Jacobian J_p = J_lin - [p]x J_ang
//
// Applied forces at a body's com (xfrc_applied; MuJoCo 3's gravity compensation, the constant
// force -gravcomp m g): W = [tau + xipos x f; f], dW/dq = [J_p(xipos) x f; 0] per column.
// Forces through wrenches (contacts, connect, weld): a wrench W = [T + p x F; F] about the origin
// acting on body b contributes  f = J_b' W, so
//   df = (dJ_b' W) + J_b' dW,   (dJ_b' W)_jk = (cdof0_k x cdof0_j) . Wsub_body(j)  for k moves j
//   (Wsub: the wrenches of body(j)'s subtree summed), dW = [dT + dp x F + p x dF; dF].
//
// Contact c (smooth.c) with y = (dist, n, v, w) (v, w relative velocities of geom2 to geom1 at p):
//   x = w_c - (dist - o), g = k s(x), vn = n.v, e = -c_d s'(x) vn, fn = D(g, e)   (law.h; o the
//   contact's includemargin, mjdiff_contactOffset, a constant: dx = -ddist)
//   dfn = -(D_g k s' - D_e c_d s'' vn) ddist - D_e c_d s' (v dn + n dv)
//   vt = (I - n n') v, u = vt / v_e, r = u / sqrt(1 + |u|^2), ft = -mu fn r,
//   v_e = v_s + h A_t mu fn (law.h law_frictionSpeed; A_t the pair's invweight0)
//   dft = -mu r dfn - mu fn R_u (dvt - u dv_e) / v_e,  R_u = q (I - r r'), q = 1 / sqrt(1 + |u|^2),
//   dv_e = h A_t mu dfn, R_u u = q^3 u
//   dvt = (I - n n') dv - (vn I + n v') dn
//   torsion  tn = -mu3 fn rho(n.w / w_e), w_e = w_s + h A_r mu3 fn:
//            dtn = -mu3 rho dfn - mu3 fn q^3 / w_e (n dw + w dn - u h A_r mu3 dfn)
//   rolling  like sliding on wt = (I - n n') w with w_s, A_r, mu4
//   F = fn n + ft,  T = tn n + tr
//   long range (plugin/reach.h, reach_strength > 0): F += f_r(dist) n,
//   dF += n f_r'(dist) ddist + f_r dn; it acts beyond the width too (x <= 0)
//   (d dist, dn, dp) = G [P1; P2] dq with G the contact geometry Jacobian (geom_d.c) and P_i the
//   rigid motion of geom i: [J_p(b_i, x_gi); J_ang(b_i)]
//   dv = dV2 at p - dV1 at p + (w2 - w1) x dp  (q), (J_p2(p) - J_p1(p)) dv_state  (v)
//   normal force alone (touch sensors): dfn/dq = dfn/dy dy/dq, dfn/dv = dfn/dy dy/dv
//   share sigma (plugin/smooth.c, "Contact shares"; F, T, fn above are the law's, before it):
//   F_c = sigma F, dF_c = sigma dF + F dsigma, likewise T and fn; sigma moves with the distances
//   and points of its pair's contacts j, whose geoms are the contact's own, so
//   dsigma/dq = g_eff [P1; P2],  g_eff = sum_j (dsigma/ddist_j G_j[dist] + dsigma/dp_j G_j[pos])
//   (1 x 12; G_j the geometry Jacobian of contact j); no v-derivative
//
// Scalar forces act on one coordinate x (joint qpos, tendon length) with its velocity:
//   limits, friction loss (smooth.c), joint/tendon equality, joint/tendon springs and dampers:
//   df = f_x dx + f_v dv along the coordinate's (constant) Jacobian.
// MuJoCo 3's joint actuator force limits clip qfrc_actuator at a joint's first dof: where the
// clip is active the row has no actuator terms of any transmission (their sum is constant there).
// Actuators (hinge/slide joint or fixed-tendon transmission: constant moment G, length G q):
//   force = clamp(gain(L, V) in + bias(L, V)), in = clamp(ctrl) or act
//   df = G' (force_L G dq + force_V G dv + force_in din)
// Site transmission (no reference site; MuJoCo's length 0): a wrench at the site, the gear in the
// site's frame R at p: W_u = [tau + p x f; f] (about the origin), f = R g_f, tau = R g_t, so
// moment = J_b' W_u and velocity V = W_u . V_b (V_b = J_b v). With F = force(in, V):
//   f_act = F J_b' W_u;  df = J_b' (F dW_u + W_u force_V dV) + (dJ_b' F W_u) + J_b' W_u force_in din
//   dW_u/dq_k = [a_k x tau + dp_k x f + p x (a_k x f); a_k x f]   (a_k, dp_k: column k of the
//   site body's angular and point (at p) Jacobians: R and p move with the body)
//   dV/dq_k = dW_u/dq_k . V_b + W_u . dV_b/dq_k,   dV/dv = moment'
// Slider-crank (mj_transmission): a = the slider site's z axis, v = p_crank - p_slider, r the
// crank length, c = a . v, det = c^2 + r^2 - v . v:
//   L = g (c - sqrt(det))  (det > 0; else L = g c),  moment M_k = g (L_a . Ja_k + L_v . Jv_k)
//   Ja_k = w_k x a (the slider body's dofs), Jv_k = J_crank(p_c)_k - J_slider(p_s)_k
//   s = sqrt(det), u = 1 - c/s:  L_a = u v,  L_v = u a + v / s
//   u_a = v (c^2 - s^2) / s^3,  u_v = -a / s + c (c a - v) / s^3
//   L_aa = v u_a',  L_av = u I + v u_v' (= L_va'),  L_vv = a u_v' + I / s - v (c a - v)' / s^3
//   (det <= 0: L_a = v, L_v = a, L_av = I, the rest 0)
//   H_kl = dM_k/dq_l = g [Ja_k' L_aa Ja_l + Ja_k' L_av Jv_l + Jv_k' L_va Ja_l + Jv_k' L_vv Jv_l
//          + L_a . dJa_k/dq_l + L_v . dJv_k/dq_l]
//   dJa_k/dq_l = [l moves k] (w_l x w_k) x a + w_k x Ja_l;  for a point x of body B,
//   dJ_B(x)_k/dq_l = [l moves k] (cdof0_l x cdof0_k) at x + w_k x J_B(x)_l
//   qfrc = M F(L, V), V = M . qvel:  df/dq = F H + M (F_L M + F_V qvel' H)',  df/dv = M F_V M'
// Muscles (MuJoCo's mju_muscleGain, mju_muscleBias, mju_muscleDynamics; prm = gainprm):
//   F0 = prm[2], or prm[3] / acc0 if negative;  L0 = (lr1 - lr0) / (range1 - range0)
//   l = range0 + (len - lr0) / L0,  w = vel / (L0 vmax)
//   gain = -F0 FL(l) FV(w),  bias = -F0 fpmax FP(l);  d/dlen = d/dl / L0,  d/dvel = d/dw / (L0 vmax)
//   FL: piecewise quadratic (x^2/2 rising from lmin to a = (lmin+1)/2, 1 - x^2/2 to 1 and on to
//   b = (1+lmax)/2, x^2/2 falling to lmax), FL' = +-x / (piece width); below lmin MuJoCo 2.2 takes
//   the second piece's formula, 3.x zero
//   FV: 0 (w <= -1), (w+1)^2, fvmax - (y-w)^2/y (w <= y = fvmax-1), fvmax;  FV' = 2(w+1), 2(y-w)/y
//   FP: 0 (l <= 1), x^2/2 (x = (l-1)/(b-1)), 1/2 + (l-b)/(b-1);  FP' = x/(b-1), 1/(b-1)
//   adot = (c - a) / tau,  c = clip(u, 0, 1),  a_c = clip(a, 0, 1)
//   tau_act = t_a (1/2 + 3/2 a_c), tau_deact = t_d / (1/2 + 3/2 a_c)
//   tau = tau_act if c - a > 0 else tau_deact (3.x with smoothing width s > 0:
//   tau = tau_deact + (tau_act - tau_deact) S((c - a)/s + 1/2), S the quintic smoothstep)
//   d adot = (dc - da) / tau - (c - a) dtau / tau^2
// Spatial tendons (springs, dampers, limits, friction loss, equalities, actuator transmissions with
// moment gear J(q)): the same laws on the tendon length, through tendon_d.c, which adds the
// derivative of J(q)' F in q (the length's Hessian). Its failure (an inside wrap without a
// touching point, too small a stack) is reported as -1 - ncon - t.

#include <math.h>
#include <string.h>

#include "compat.h"
#include "convex.h"
#include "derivative.h"
#include "internal.h"
#include "law.h"
#include "reach.h"
#include "spatial.h"

#define DISABLED(m, flag) ((m)->opt.disableflags & (flag))

//---------------------------------- spatial helpers -----------------------------------------------

// dV_b/dq for every body (nbody x 6 x nv): recursion over the tree; list is scratch (nv ints)
static void bodyVelDq(const mjModel* m, const mjData* d, const mjtNum* cdof0, mjtNum* dV,
                      int* list) {
  int nv = m->nv;
  mju_zero(dV, 6 * nv);
  for (int b = 1; b < m->nbody; b++) {
    mjtNum* D = dV + 6 * nv * b;
    mju_copy(D, dV + 6 * nv * m->body_parentid[b], 6 * nv);
    int adr = m->body_dofadr[b], num = m->body_dofnum[b];
    if (num == 0) continue;

    // dofs of this body: for every dof k that moves one of them
    for (int j = adr; j < adr + num; j++) spatial_addVelDqDof(m, d, cdof0, j, D, list);
  }
}

//---------------------------------- workspace ----------------------------------------------------

// scratch for one evaluation, on d's stack
typedef struct scratch_ {
  mjtNum* cdof0;               // (nv x 6)
  mjtNum* dV;                  // (nbody x 6 x nv) dV_b/dq
  mjtNum* Wsub;                // (nbody x 6) wrenches, accumulated over subtrees at the end
  mjtNum* J1;                  // (6 x nv) body Jacobians
  mjtNum* J2;
  mjtNum* Y;                   // (32 x nv) per-force row blocks
  int* cols;                   // (nv) columns (dofs) the current force depends on
  int nc;                      // number of them
  int* all;                    // (nv) 0, 1, ..., nv-1
} scratch;

// dofs of the chain from body b to the root, in decreasing order; returns their number
static int chainDofs(const mjModel* m, int b, int* dofs) {
  int n = 0;
  for (int j = spatial_chainLastDof(m, b); j >= 0; j = m->dof_parentid[j]) dofs[n++] = j;
  return n;
}

// sc->cols = union of the chains of b1 and b2 (merge of two decreasing lists)
static void setChainColumns(const mjModel* m, scratch* sc, int b1, int b2, int* tmp) {
  int n1 = chainDofs(m, b1, sc->cols), n2 = chainDofs(m, b2, tmp);
  int* merged = tmp + n2;
  int i = 0, j = 0, n = 0;
  while (i < n1 || j < n2) {
    int a = i < n1 ? sc->cols[i] : -1, b = j < n2 ? tmp[j] : -1;
    int v = a > b ? a : b;
    merged[n++] = v;
    if (a == v) i++;
    if (b == v) j++;
  }
  memcpy(sc->cols, merged, sizeof(int) * (size_t)n);
  sc->nc = n;
}

static void setAllColumns(const mjModel* m, scratch* sc) {
  memcpy(sc->cols, sc->all, sizeof(int) * (size_t)m->nv);
  sc->nc = m->nv;
}

//---------------------------------- wrench forces ------------------------------------------------

// f += (J2 - J1)' W and its q- and v-derivatives from dW (6 x nv each, valid in the columns
// sc->cols): DfDq += (J2 - J1)' dWq, DfDv += (J2 - J1)' dWv; W accumulated into Wsub for the dJ'
// term
static void addWrenchDeriv(const mjModel* m, scratch* sc, int b1, int b2, const mjtNum W[6],
                           const mjtNum* dWq, const mjtNum* dWv, mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv;
  for (int i = 0; i < 6; i++) {
    if (b2) sc->Wsub[6 * b2 + i] += W[i];
    if (b1) sc->Wsub[6 * b1 + i] -= W[i];
  }
  for (int side = 0; side < 2; side++) {
    int b = side ? b2 : b1;
    if (!b) continue;
    mjtNum sign = side ? 1 : -1;
    for (int j = spatial_chainLastDof(m, b); j >= 0; j = m->dof_parentid[j]) {
      const mjtNum* c = sc->cdof0 + 6 * j;
      mjtNum* rq = DfDq + (size_t)nv * j;
      mjtNum* rv = DfDv + (size_t)nv * j;
      for (int ic = 0; ic < sc->nc; ic++) {
        int k = sc->cols[ic];
        if (dWq) {
          rq[k] += sign * (c[0] * dWq[k] + c[1] * dWq[nv + k] + c[2] * dWq[2 * nv + k] +
                           c[3] * dWq[3 * nv + k] + c[4] * dWq[4 * nv + k] +
                           c[5] * dWq[5 * nv + k]);
        }
        if (dWv) {
          rv[k] += sign * (c[0] * dWv[k] + c[1] * dWv[nv + k] + c[2] * dWv[2 * nv + k] +
                           c[3] * dWv[3 * nv + k] + c[4] * dWv[4 * nv + k] +
                           c[5] * dWv[5 * nv + k]);
        }
      }
    }
  }
}

//---------------------------------- contacts -----------------------------------------------------

// normal force fn of an active contact at activation depth x > 0 (mjdiff_contactDepth) and its
// gradient dfn (10) with respect to y = (dist, n (3), v (3), w (3))
static mjtNum normalLaw(const mjContact* con, const mjtNum prm[GP_COUNT], mjtNum x,
                        const mjtNum v[3], mjtNum dfn[10]) {
  const mjtNum* n = con->frame;
  mjtNum k = prm[GP_STIFFNESS], cd = prm[GP_DAMPING], wd = prm[GP_WIDTH];
  mjtNum ds, dds, sx = law_ramp(x, wd, &ds);
  dds = x <= wd ? x / (wd * wd) : (x <= 2 * wd ? (2 * wd - x) / (wd * wd) : 0);
  mjtNum vn = mju_dot3(n, v);
  mjtNum Dg, De, fn = law_damped(k * sx, -cd * ds * vn, &Dg, &De);
  mju_zero(dfn, 10);
  dfn[0] = -(Dg * k * ds - De * cd * dds * vn);
  for (int i = 0; i < 3; i++) {
    dfn[1 + i] = -De * cd * ds * v[i];
    dfn[4 + i] = -De * cd * ds * n[i];
  }
  return fn;
}

// partial derivatives of the world force F and torque T of one contact with respect to
// y = (dist, n (3), v (3), w (3)): DF, DT (3 x 10), at activation depth x (mjdiff_contactDepth);
// returns 0 if the contact is inactive
static int contactLaw(const mjContact* con, const mjtNum prm[GP_COUNT], mjtNum x, mjtNum hAt,
                      mjtNum hAr, const mjtNum v[3], const mjtNum w[3], mjtNum F[3], mjtNum T[3],
                      mjtNum DF[30], mjtNum DT[30]) {
  const mjtNum* n = con->frame;
  mju_zero(DF, 30);
  mju_zero(DT, 30);
  mju_zero3(F);
  mju_zero3(T);
  if (x <= 0) return 0;

  // normal force and its gradient dfn (10)
  mjtNum dfn[10];
  mjtNum fn = normalLaw(con, prm, x, v, dfn);

  // F = fn n: dF = n dfn + fn dn
  for (int r = 0; r < 3; r++) {
    F[r] = fn * n[r];
    for (int c = 0; c < 10; c++) DF[10 * r + c] += n[r] * dfn[c];
    DF[10 * r + 1 + r] += fn;
  }

  // regularised friction on a tangential vector (sliding: v; rolling: w): adds to D
  // t = (I - n n') a, u = t / se, out = -mu fn u / sqrt(1 + |u|^2), se = speed + hA mu fn
  for (int kind = 0; kind < 2; kind++) {
    if ((kind == 0 && con->dim < 3) || (kind == 1 && con->dim < 6)) continue;
    const mjtNum* a = kind ? w : v;
    mjtNum mu = con->friction[kind ? 3 : 0];
    mjtNum hA = kind ? hAr : hAt;
    mjtNum speed = law_frictionSpeed(kind ? prm[GP_SPIN_SPEED] : prm[GP_FRICTION_SPEED], 1, hA,
                                     mu, fn);
    int aoff = kind ? 7 : 4;  // column of a in y
    mjtNum* out = kind ? T : F;
    mjtNum* D = kind ? DT : DF;
    mjtNum an = mju_dot3(n, a), t[3], u[3], r[3];
    for (int i = 0; i < 3; i++) t[i] = a[i] - an * n[i];
    for (int i = 0; i < 3; i++) u[i] = t[i] / speed;
    mjtNum q = law_regular(r, u, 3);
    for (int i = 0; i < 3; i++) out[i] -= mu * fn * r[i];

    // dt/dy (3 x 10): (I - n n') da - (an I + n a') dn
    mjtNum dt[30] = {0};
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 3; j++) {
        dt[10 * i + aoff + j] = (i == j) - n[i] * n[j];
        dt[10 * i + 1 + j] = -(an * (i == j) + n[i] * a[j]);
      }
    }
    // d out = -mu r dfn - mu fn q (I - r r') (dt - u dse) / se,  dse = hA mu dfn, and
    // (I - r r') u = q^2 u
    mjtNum q3 = q * q * q;
    for (int i = 0; i < 3; i++) {
      for (int c = 0; c < 10; c++) {
        mjtNum Rdt = 0;
        for (int j = 0; j < 3; j++) Rdt += ((i == j) - r[i] * r[j]) * dt[10 * j + c];
        D[10 * i + c] += -mu * r[i] * dfn[c] - mu * fn * q * Rdt / speed +
                         mu * fn * q3 * u[i] * hA * mu * dfn[c] / speed;
      }
    }
  }

  // torsion: T += tn n, tn = -mu3 fn rho(wn / se), se = w_s + hA_r mu3 fn
  if (con->dim >= 4) {
    mjtNum mu = con->friction[2];
    mjtNum speed = law_frictionSpeed(prm[GP_SPIN_SPEED], 1, hAr, mu, fn);
    mjtNum wn = mju_dot3(n, w), u = wn / speed, rho;
    mjtNum q = law_regular(&rho, &u, 1);
    mjtNum tn = -mu * fn * rho;
    mjtNum dtn[10];
    mjtNum drho = q * q * q / speed;
    // d rho = drho (dwn - u dse), dse = hA_r mu dfn
    for (int c = 0; c < 10; c++) dtn[c] = -mu * rho * dfn[c] + mu * fn * drho * u * hAr * mu * dfn[c];
    for (int i = 0; i < 3; i++) {
      dtn[7 + i] += -mu * fn * drho * n[i];
      dtn[1 + i] += -mu * fn * drho * w[i];
    }
    for (int r = 0; r < 3; r++) {
      T[r] += tn * n[r];
      for (int c = 0; c < 10; c++) DT[10 * r + c] += n[r] * dtn[c];
      DT[10 * r + 1 + r] += tn;
    }
  }
  return 1;
}

// the long-range term (plugin/reach.h) on F = ... + f_r n and its partials DF (3 x 10) in
// y = (dist, n, v, w): dF/ddist += n df_r/ddist, dF/dn += f_r I
static void reachLaw(const mjtNum n[3], mjtNum fr, mjtNum dfr, mjtNum F[3], mjtNum DF[30]) {
  for (int r = 0; r < 3; r++) {
    F[r] += fr * n[r];
    DF[10 * r] += n[r] * dfr;
    DF[10 * r + 1 + r] += fr;
  }
}

// relative velocity of body b[1] with respect to body b[0] at the point p: linear v, angular w
static void contactVel(const mjModel* m, const mjData* d, const int b[2], const mjtNum p[3],
                       mjtNum v[3], mjtNum w[3]) {
  mjtNum V[2][6], t1[3], t2[3];
  for (int i = 0; i < 2; i++) spatial_bodyVel(m, d, b[i], V[i]);
  for (int i = 0; i < 3; i++) w[i] = V[1][i] - V[0][i];
  mju_cross(t1, V[1], p);
  mju_cross(t2, V[0], p);
  for (int i = 0; i < 3; i++) v[i] = V[1][3 + i] + t1[i] - V[0][3 + i] - t2[i];
}

// how the contact's y = (dist, n, v, w) and p move with the state, in the columns sc->cols (set
// here: the dofs of the two bodies' chains; sc->cdof0 and sc->dV ready):
//   sc->Y rows 0..12   dy/dq (rows dist, n(3), v(3), w(3)) and dp/dq (3)    (13 x nv)
//   sc->Y rows 13..18  dy/dv of (v(3), w(3))                                 (6 x nv)
//   dsig               g_eff [P1; P2], the share's dq (if geff, nullable, is given)  (nv)
// G: the contact's geometry Jacobian; w: the relative angular velocity
static void contactKinematics(const mjModel* m, const mjData* d, scratch* sc, const mjContact* con,
                              const int g[2], const int b[2], const mjtNum G[7 * 12],
                              const mjtNum w[3], const mjtNum* geff, mjtNum* dsig) {
  int nv = m->nv;
  const mjtNum* p = con->pos;

  // only the dofs of the two bodies' chains move the contact: work in those columns
  setChainColumns(m, sc, b[0], b[1], (int*)sc->Y);
  const int* cols = sc->cols;
  int nc = sc->nc;

  // dy/dq (10 x nv): rows dist, n, v, w;  dp/dq (3 x nv);  dy/dv (rows v, w)
  mjtNum* Yq = sc->Y;            // 13 x nv: dist, n(3), v(3), w(3), p(3)
  mjtNum* Yv = sc->Y + 13 * nv;  // 6 x nv: v(3), w(3)
  for (int r = 0; r < 13; r++) {
    for (int ic = 0; ic < nc; ic++) Yq[nv * r + cols[ic]] = 0;
  }
  for (int r = 0; r < 6; r++) {
    for (int ic = 0; ic < nc; ic++) Yv[nv * r + cols[ic]] = 0;
  }
  if (geff) {
    for (int ic = 0; ic < nc; ic++) dsig[cols[ic]] = 0;
  }

  // geometry: G times the geoms' rigid motion (12 x nv)
  for (int i = 0; i < 2; i++) {
    if (!b[i]) continue;
    spatial_bodyJacobian(m, sc->cdof0, b[i], sc->J1);
    spatial_pointJacobian(nv, sc->J1, d->geom_xpos + 3 * g[i], sc->J2);  // dx_g (3 x nv)
    for (int r = 0; r < 7; r++) {
      mjtNum* row = r == 0 ? Yq : (r < 4 ? Yq + nv * r : Yq + nv * (10 + r - 4));
      const mjtNum* Gr = G + 12 * r + 6 * i;
      for (int ic = 0; ic < nc; ic++) {
        int k = cols[ic];
        row[k] += Gr[0] * sc->J2[k] + Gr[1] * sc->J2[nv + k] + Gr[2] * sc->J2[2 * nv + k] +
                  Gr[3] * sc->J1[k] + Gr[4] * sc->J1[nv + k] + Gr[5] * sc->J1[2 * nv + k];
      }
    }
    if (geff) {
      const mjtNum* ge = geff + 6 * i;
      for (int ic = 0; ic < nc; ic++) {
        int k = cols[ic];
        dsig[k] += ge[0] * sc->J2[k] + ge[1] * sc->J2[nv + k] + ge[2] * sc->J2[2 * nv + k] +
                   ge[3] * sc->J1[k] + ge[4] * sc->J1[nv + k] + ge[5] * sc->J1[2 * nv + k];
      }
    }

    // velocities: v_i(p) = v0 + w x p;  q: dv0 + dw x p + w x dp;  v: J_p(p)
    mjtNum sign = i ? 1 : -1;
    const mjtNum* dVb = sc->dV + 6 * nv * b[i];
    for (int ic = 0; ic < nc; ic++) {
      int k = cols[ic];
      mjtNum dvp[3];
      spatial_pointJacobianCol(dVb, nv, k, p, dvp);
      for (int r = 0; r < 3; r++) {
        Yq[nv * (4 + r) + k] += sign * dvp[r];
        Yq[nv * (7 + r) + k] += sign * dVb[nv * r + k];
      }
    }
    spatial_pointJacobian(nv, sc->J1, p, sc->J2);
    for (int r = 0; r < 3; r++) {
      for (int ic = 0; ic < nc; ic++) {
        int k = cols[ic];
        Yv[nv * r + k] += sign * sc->J2[nv * r + k];
        Yv[nv * (3 + r) + k] += sign * sc->J1[nv * r + k];
      }
    }
  }
  // + (w2 - w1) x dp
  for (int ic = 0; ic < nc; ic++) {
    int k = cols[ic];
    mjtNum dp[3] = {Yq[nv * 10 + k], Yq[nv * 11 + k], Yq[nv * 12 + k]}, t[3];
    mju_cross(t, w, dp);
    for (int r = 0; r < 3; r++) Yq[nv * (4 + r) + k] += t[r];
  }
}

int mjdiff_contactLawY(const mjModel* m, const mjData* d, const mjdiffModel* s,
                       const mjContact* con, mjtNum F[3], mjtNum T[3], mjtNum DF[30],
                       mjtNum DT[30], mjtNum w[3], mjdiffShare* sh) {
  int g[2] = {compat_contactGeom1(con), compat_contactGeom2(con)};
  int b[2] = {m->geom_bodyid[g[0]], m->geom_bodyid[g[1]]};
  if (sh) sh->varies = 0;
  mjtNum prm[GP_COUNT];
  mjdiff_pairParams(s, g[0], g[1], prm);
  mjtNum dfr, fr = reach_force(m, s, con, &dfr);
  mjtNum x = mjdiff_contactDepth(m, con, prm[GP_WIDTH]);
  if (x <= 0 && fr == 0) return 0;

  // relative velocities at p
  mjtNum v[3];
  contactVel(m, d, b, con->pos, v, w);

  mjtNum At, Ar, h = mjdiff_timestep(m, s);
  mjdiff_contactInvweight(s, g[0], g[1], &At, &Ar);
  int on = contactLaw(con, prm, x, h * At, h * Ar, v, w, F, T, DF, DT);
  if (on) {  // the share scales the law's force, not the long-range term
    mjtNum share = mjdiff_contactShare(m, d, s, (int)(con - d->contact), sh);
    if (share != 1) {
      mju_scl3(F, F, share);
      mju_scl3(T, T, share);
      mju_scl(DF, DF, share, 30);
      mju_scl(DT, DT, share, 30);
    }
  }
  if (fr != 0) reachLaw(con->frame, fr, dfr, F, DF);
  return on || fr != 0;
}

int mjdiff_shareGeometry(const mjModel* m, const mjData* d, const mjdiffShare* sh, int i,
                         const mjtNum* Gi, int size, mjtNum* geff) {
  int nz = size ? 6 : 12;
  mju_zero(geff, nz);
  for (int k = 0; k < sh->count; k++) {
    const mjtNum* dp = sh->dpos + 3 * k;
    if (sh->ddist[k] == 0 && dp[0] == 0 && dp[1] == 0 && dp[2] == 0) continue;
    int j = sh->first + k;
    mjtNum Gj[7 * 12];
    const mjtNum* G = Gi;
    if (j != i || !G) {
      int bad = size ? mjdiff_contactGeomSizeJacobian(m, d, d->contact + j, Gj)
                     : mjdiff_contactGeomJacobian(m, d, d->contact + j, Gj);
      if (bad) return -1;
      G = Gj;
    }
    for (int c = 0; c < nz; c++) {
      geff[c] += sh->ddist[k] * G[c] + dp[0] * G[4 * nz + c] + dp[1] * G[5 * nz + c] +
                 dp[2] * G[6 * nz + c];
    }
  }
  return 0;
}

// the wrench of a force F and torque T (world frame, on body2, the opposite on body1) at contact
// con's point p, where F, T depend on the contact's y = (dist, n, v, w) by DF, DT (3 x 10), and its
// q- and v-derivatives through y, p and the bodies' motion (G: the contact's geometry Jacobian, w:
// the relative angular velocity); with geff (nullable, 12) also F and T's change Fs dsig, Ts dsig
// through the contact's share (dsig = geff [P1; P2]); returns 0, or -1 if G is unavailable
// (gstatus)
static int contactWrenchDeriv(const mjModel* m, const mjData* d, scratch* sc, const mjContact* con,
                              const mjtNum* G, int gstatus, const mjtNum F[3], const mjtNum T[3],
                              const mjtNum DF[30], const mjtNum DT[30], const mjtNum w[3],
                              const mjtNum* geff, const mjtNum* Fs, const mjtNum* Ts,
                              mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv;
  int g[2] = {compat_contactGeom1(con), compat_contactGeom2(con)};
  int b[2] = {m->geom_bodyid[g[0]], m->geom_bodyid[g[1]]};
  const mjtNum* p = con->pos;
  if (gstatus) return -1;
  mjtNum* dsig = sc->Y + 31 * nv;
  contactKinematics(m, d, sc, con, g, b, G, w, geff, dsig);
  const int* cols = sc->cols;
  int nc = sc->nc;
  const mjtNum* Yq = sc->Y;
  const mjtNum* Yv = sc->Y + 13 * nv;

  // W = [T + p x F; F];  dW = [dT + dp x F + p x dF; dF]
  mjtNum W[6], pf[3];
  mju_cross(pf, p, F);
  for (int i = 0; i < 3; i++) {
    W[i] = T[i] + pf[i];
    W[3 + i] = F[i];
  }
  mjtNum* dWq = sc->Y + 19 * nv;  // 6 x nv
  mjtNum* dWv = sc->Y + 25 * nv;  // 6 x nv
  for (int ic = 0; ic < nc; ic++) {
    int k = cols[ic];
    mjtNum yq[10], yv[10] = {0};
    for (int c = 0; c < 10; c++) yq[c] = Yq[nv * c + k];
    for (int c = 0; c < 6; c++) yv[4 + c] = Yv[nv * c + k];
    mjtNum dFq[3] = {0}, dTq[3] = {0}, dFv[3] = {0}, dTv[3] = {0};
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 10; c++) {
        dFq[r] += DF[10 * r + c] * yq[c];
        dTq[r] += DT[10 * r + c] * yq[c];
      }
      for (int c = 4; c < 10; c++) {  // yv's dist and n entries are 0
        dFv[r] += DF[10 * r + c] * yv[c];
        dTv[r] += DT[10 * r + c] * yv[c];
      }
    }
    if (geff) {
      for (int r = 0; r < 3; r++) {
        dFq[r] += Fs[r] * dsig[k];
        dTq[r] += Ts[r] * dsig[k];
      }
    }
    mjtNum dp[3] = {Yq[nv * 10 + k], Yq[nv * 11 + k], Yq[nv * 12 + k]}, t1[3], t2[3];
    mju_cross(t1, dp, F);
    mju_cross(t2, p, dFq);
    for (int r = 0; r < 3; r++) {
      dWq[nv * r + k] = dTq[r] + t1[r] + t2[r];
      dWq[nv * (3 + r) + k] = dFq[r];
    }
    mju_cross(t2, p, dFv);
    for (int r = 0; r < 3; r++) {
      dWv[nv * r + k] = dTv[r] + t2[r];
      dWv[nv * (3 + r) + k] = dFv[r];
    }
  }
  addWrenchDeriv(m, sc, b[0], b[1], W, dWq, dWv, DfDq, DfDv);
  return 0;
}

// returns 0, or -1 if the contact's geometry Jacobian is unavailable; Gin: the contact's geometry
// Jacobian computed with its pair's run (gstatus its status), NULL: computed here
static int contactDeriv(const mjModel* m, const mjData* d, const mjdiffModel* s, scratch* sc,
                        const mjContact* con, const mjtNum* Gin, int gstatus, mjtNum* DfDq,
                        mjtNum* DfDv) {
  mjtNum F[3], T[3], DF[30], DT[30], w[3];
  mjdiffShare sh;
  if (!mjdiff_contactLawY(m, d, s, con, F, T, DF, DT, w, &sh)) return 0;

  // geometry: G (7 x 12), the Jacobian of (dist, n, pos) in the geoms' rigid motion
  mjtNum Gown[7 * 12];
  const mjtNum* G = Gin;
  if (!G) {
    gstatus = mjdiff_contactGeomJacobian(m, d, con, Gown);
    G = Gown;
  }
  mjtNum geff[12];
  int i = (int)(con - d->contact);
  if (sh.varies && !gstatus && mjdiff_shareGeometry(m, d, &sh, i, G, 0, geff)) gstatus = -1;
  return contactWrenchDeriv(m, d, sc, con, G, gstatus, F, T, DF, DT, w, sh.varies ? geff : NULL,
                           sh.F, sh.T, DfDq, DfDv);
}

int mjdiff_contactNormalDerivative(const mjModel* m, mjData* d, const mjdiffModel* s,
                                   const mjContact* con, mjtNum* DfnDq, mjtNum* DfnDv) {
  int nv = m->nv, nbody = m->nbody;
  if (DfnDq) mju_zero(DfnDq, nv);
  if (DfnDv) mju_zero(DfnDv, nv);
  int g[2] = {compat_contactGeom1(con), compat_contactGeom2(con)};
  int b[2] = {m->geom_bodyid[g[0]], m->geom_bodyid[g[1]]};
  mjtNum prm[GP_COUNT];
  mjdiff_pairParams(s, g[0], g[1], prm);
  mjtNum x = mjdiff_contactDepth(m, con, prm[GP_WIDTH]);
  if (x <= 0 || nv == 0) return 0;
  mjtNum G[7 * 12];
  if (mjdiff_contactGeomJacobian(m, d, con, G)) return -1;

  // the share (smooth.c) and its geometry
  mjdiffShare sh;
  mjtNum share = mjdiff_contactShare(m, d, s, (int)(con - d->contact), &sh), geff[12];
  if (sh.varies && mjdiff_shareGeometry(m, d, &sh, (int)(con - d->contact), G, 0, geff)) return -1;

  // scratch: cdof0, dV, J1, J2, Y (20 rows), cols
  size_t need = (size_t)nv * (38 + 6 * (size_t)nbody) + (size_t)nv / 2 + 1;
  if (need > (size_t)compat_stackSpace(d)) return -2;
  mjdiffStackMark mark = compat_stackMark(d);
  scratch sc;
  memset(&sc, 0, sizeof(sc));
  sc.cdof0 = compat_stackAllocNum(d, 6 * nv);
  sc.dV = compat_stackAllocNum(d, 6 * nv * nbody);
  sc.J1 = compat_stackAllocNum(d, 6 * nv);
  sc.J2 = compat_stackAllocNum(d, 6 * nv);
  sc.Y = compat_stackAllocNum(d, 20 * nv);
  sc.cols = (int*)compat_stackAllocNum(d, nv / 2 + 1);
  spatial_cdof0(m, d, sc.cdof0);
  bodyVelDq(m, d, sc.cdof0, sc.dV, (int*)sc.J2);

  // d(sigma fn) = sigma dfn/dy (dy/dq dq + dy/dv dv) + fn dsigma
  mjtNum v[3], w[3], dfn[10];
  contactVel(m, d, b, con->pos, v, w);
  mjtNum fn = normalLaw(con, prm, x, v, dfn);
  mjtNum* dsig = sc.Y + 19 * nv;
  contactKinematics(m, d, &sc, con, g, b, G, w, sh.varies ? geff : NULL, dsig);
  const mjtNum* Yq = sc.Y;
  const mjtNum* Yv = sc.Y + 13 * nv;
  for (int ic = 0; ic < sc.nc; ic++) {
    int k = sc.cols[ic];
    mjtNum dq = 0, dv = 0;
    for (int c = 0; c < 10; c++) dq += dfn[c] * Yq[nv * c + k];
    for (int c = 0; c < 6; c++) dv += dfn[4 + c] * Yv[nv * c + k];
    dq *= share;
    if (sh.varies) dq += fn * dsig[k];
    if (DfnDq) DfnDq[k] = dq;
    if (DfnDv) DfnDv[k] = share * dv;
  }
  compat_stackFree(d, mark);
  return 0;
}

//---------------------------------- connect and weld ---------------------------------------------

// e = p1 - p2 (anchors fixed to the bodies), F1 = -k e - c de/dt on body1 at p1, -F1 on body2 at
// p2; weld: T1 = -ts (k r + c (w1 - w2)), r = axis-angle(q_b1 relpose q_b2^-1) (world),
// dr = J_l^-1(r) dth1 - J_r^-1(r) dth2 (J_l, J_r the left and right Jacobians of SO(3) at r;
// J_r^-1(r) = J_l^-1(-r))
static void bodyEqualityDeriv(const mjModel* m, const mjData* d, const mjdiffModel* s,
                              scratch* sc, int i, mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv;
  mjtNum k, c, kr, cr;
  mjdiff_eqParams(s, i, 0, &k, &c);
  mjdiff_eqParams(s, i, 1, &kr, &cr);
  compatEq eq;
  compat_eqGeometry(m, i, &eq);
  int b[2] = {eq.b[0], eq.b[1]};
  const mjtNum* anchor[2] = {eq.anchor[0], eq.anchor[1]};
  const mjtNum* relpose = eq.weld ? eq.relpose : NULL;
  mjtNum ts = eq.torquescale;
  mjtNum* dWq = sc->Y;
  mjtNum* dWv = sc->Y + 6 * nv;
  mjtNum* Jp = sc->Y + 12 * nv;    // 2 x (3 x nv) point Jacobians
  mjtNum* Ja = sc->Y + 18 * nv;    // 2 x (3 x nv) angular
  mjtNum* Dv = sc->Y + 24 * nv;    // 2 x (3 x nv) dq of point velocities (material)
  mjtNum pos[2][3], V[2][6], lin[2][3];
  mju_zero(Jp, 18 * nv);
  for (int j = 0; j < 2; j++) {
    mju_rotVecMat(pos[j], anchor[j], d->xmat + 9 * b[j]);
    mju_addTo3(pos[j], d->xpos + 3 * b[j]);
    spatial_bodyVel(m, d, b[j], V[j]);
    spatial_pointMotion(lin[j], V[j], pos[j]);
    if (!b[j]) continue;
    spatial_bodyJacobian(m, sc->cdof0, b[j], sc->J1);
    spatial_pointJacobian(nv, sc->J1, pos[j], Jp + 3 * nv * j);
    mju_copy(Ja + 3 * nv * j, sc->J1, 3 * nv);
    // material point velocity: d(v0 + w x p) = dv0 + dw x p + w x (J_p dq)
    const mjtNum* dVb = sc->dV + 6 * nv * b[j];
    for (int kk = 0; kk < nv; kk++) {
      mjtNum dV[6], dp[3], dvp[3];
      for (int r = 0; r < 6; r++) dV[r] = dVb[nv * r + kk];
      for (int r = 0; r < 3; r++) dp[r] = Jp[3 * nv * j + nv * r + kk];
      spatial_pointVelDq(dvp, dV, V[j], pos[j], dp);
      for (int r = 0; r < 3; r++) Dv[3 * nv * j + nv * r + kk] = dvp[r];
    }
  }

  // translation: one wrench per body, each at its own anchor (a material point)
  mjtNum F[3];
  for (int r = 0; r < 3; r++) F[r] = -k * (pos[0][r] - pos[1][r]) - c * (lin[0][r] - lin[1][r]);
  for (int side = 0; side < 2; side++) {  // body1 gets F at p1, body2 gets -F at p2
    mjtNum W[6], t[3];
    mju_cross(t, pos[side], F);
    for (int r = 0; r < 3; r++) {
      W[r] = t[r];
      W[3 + r] = F[r];
    }
    for (int kk = 0; kk < nv; kk++) {
      mjtNum dF[3], dFv[3], dp[3], t1[3], t2[3];
      for (int r = 0; r < 3; r++) {
        dF[r] = -k * (Jp[nv * r + kk] - Jp[3 * nv + nv * r + kk]) -
                c * (Dv[nv * r + kk] - Dv[3 * nv + nv * r + kk]);
        dFv[r] = -c * (Jp[nv * r + kk] - Jp[3 * nv + nv * r + kk]);
        dp[r] = Jp[3 * nv * side + nv * r + kk];
      }
      mju_cross(t1, dp, F);
      mju_cross(t2, pos[side], dF);
      for (int r = 0; r < 3; r++) {
        dWq[nv * r + kk] = t1[r] + t2[r];
        dWq[nv * (3 + r) + kk] = dF[r];
      }
      mju_cross(t2, pos[side], dFv);
      for (int r = 0; r < 3; r++) {
        dWv[nv * r + kk] = t2[r];
        dWv[nv * (3 + r) + kk] = dFv[r];
      }
    }
    // addWrenchDeriv applies +W to its second body and -W to its first
    if (side == 0) {
      addWrenchDeriv(m, sc, 0, b[0], W, dWq, dWv, DfDq, DfDv);
    } else {
      mju_scl(W, W, -1, 6);
      mju_scl(dWq, dWq, -1, 6 * nv);
      mju_scl(dWv, dWv, -1, 6 * nv);
      addWrenchDeriv(m, sc, 0, b[1], W, dWq, dWv, DfDq, DfDv);
    }
  }

  // rotation: a pure torque on both bodies
  if (m->eq_type[i] == mjEQ_WELD) {
    mjtNum q[4], qe[4], neg[4], r[3], Jinv[9], T[3];
    mju_mulQuat(q, d->xquat + 4 * b[0], relpose);
    mju_negQuat(neg, d->xquat + 4 * b[1]);
    mju_mulQuat(qe, q, neg);
    mju_quat2Vel(r, qe, 1);
    mjtNum Jrinv[9];
    spatial_leftJacobianInverse(r, Jinv);
    spatial_rightJacobianInverse(r, Jrinv);
    for (int j = 0; j < 3; j++) T[j] = -ts * (kr * r[j] + cr * (V[0][j] - V[1][j]));
    mjtNum W[6] = {T[0], T[1], T[2], 0, 0, 0};
    mju_zero(dWq, 6 * nv);
    mju_zero(dWv, 6 * nv);
    for (int kk = 0; kk < nv; kk++) {
      mjtNum dth[3], th1[3], th2[3], dr[3], dr2[3];
      for (int j = 0; j < 3; j++) {
        th1[j] = Ja[nv * j + kk];
        th2[j] = Ja[3 * nv + nv * j + kk];
        dth[j] = th1[j] - th2[j];
      }
      mju_mulMatVec(dr, Jinv, th1, 3, 3);
      mju_mulMatVec(dr2, Jrinv, th2, 3, 3);
      mju_subFrom3(dr, dr2);
      for (int j = 0; j < 3; j++) {
        const mjtNum* d0 = sc->dV + 6 * nv * b[0];
        const mjtNum* d1 = sc->dV + 6 * nv * b[1];
        dWq[nv * j + kk] = -ts * (kr * dr[j] + cr * (d0[nv * j + kk] - d1[nv * j + kk]));
        dWv[nv * j + kk] = -ts * cr * dth[j];
      }
    }
    addWrenchDeriv(m, sc, b[1], b[0], W, dWq, dWv, DfDq, DfDv);
  }
}

//---------------------------------- scalar coordinates -------------------------------------------

// the limit law on one coordinate (smooth.c limitForce): force and its partials
static mjtNum limitDeriv(const mjtNum law[EP_COUNT], mjtNum x, mjtNum v, mjtNum lo, mjtNum hi,
                         mjtNum* fx, mjtNum* fv) {
  mjtNum k = law[EP_STIFFNESS], w = law[EP_WIDTH], c = law[EP_DAMPING];
  mjtNum f = 0;
  *fx = *fv = 0;
  for (int side = 0; side < 2; side++) {
    mjtNum sgn = side ? -1 : 1;                    // lower pushes up, upper pushes down
    mjtNum xx = side ? w - (hi - x) : w - (x - lo);  // activation depth
    if (xx <= 0) continue;
    mjtNum ds, sx = law_ramp(xx, w, &ds);
    mjtNum dds = xx <= w ? xx / (w * w) : (xx <= 2 * w ? (2 * w - xx) / (w * w) : 0);
    mjtNum vs = sgn * v;                           // separating speed
    mjtNum Dg, De, fn = law_damped(k * sx, -c * ds * vs, &Dg, &De);
    // dxx/dx = -sgn
    mjtNum dfn_dxx = Dg * k * ds - De * c * dds * vs;
    f += sgn * fn;
    *fx += sgn * dfn_dxx * (-sgn);
    *fv += sgn * (-De * c * ds * sgn);
  }
  return f;
}

// friction loss -floss reg(v / speed): derivative in v
static mjtNum lossDeriv(mjtNum floss, mjtNum v, mjtNum speed) {
  mjtNum u = v / speed, r;
  mjtNum q = law_regular(&r, &u, 1);
  return -floss * q * q * q / speed;
}

// DfDq += fx a a', DfDv += fv a a' for a coordinate x = a . q (a dof's unit vector or a fixed
// tendon's Jacobian row); row is scratch (nv)
static void addScalarDeriv(const mjModel* m, const mjData* d, int tendon, int dof, mjtNum fx,
                           mjtNum fv, mjtNum* row, mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv;
  if (tendon < 0) {
    if (DfDq) DfDq[nv * dof + dof] += fx;
    if (DfDv) DfDv[nv * dof + dof] += fv;
    return;
  }
  compat_tendonRow(m, d, tendon, row);
  for (int i = 0; i < nv; i++) {
    if (row[i] == 0) continue;
    for (int j = 0; j < nv; j++) {
      if (row[j] == 0) continue;
      if (DfDq) DfDq[nv * i + j] += fx * row[i] * row[j];
      if (DfDv) DfDv[nv * i + j] += fv * row[i] * row[j];
    }
  }
}

static void ballLimitDeriv(const mjModel* m, const mjData* d, const mjtNum law[EP_COUNT],
                           int jnt, mjtNum* DfDq, mjtNum* DfDv) {
  // f_gen = -f(theta, thetadot) a, a = r / theta, r = axis-angle(q) (local), thetadot = a . w
  // dr = J_r^-1(r) dq (right perturbation), dtheta = a' dr, da = (I - a a') dr / theta
  int nv = m->nv, qa = m->jnt_qposadr[jnt], da = m->jnt_dofadr[jnt];
  const mjtNum* range = m->jnt_range + 2 * jnt;
  mjtNum r[3];
  mju_quat2Vel(r, d->qpos + qa, 1);
  mjtNum theta = mju_norm3(r);
  if (theta <= 0 || law[EP_WIDTH] - (range[1] - theta) <= 0) return;
  mjtNum a[3] = {r[0] / theta, r[1] / theta, r[2] / theta};
  const mjtNum* w = d->qvel + da;
  mjtNum thdot = mju_dot3(a, w);
  mjtNum fx, fv;
  mjtNum f = -limitDeriv(law, theta, thdot, -mjMAXVAL, range[1], &fx, &fv);
  fx = -fx;
  fv = -fv;

  mjtNum Jinv[9];
  spatial_rightJacobianInverse(r, Jinv);
  mjtNum P[9];  // (I - a a') / theta
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) P[3 * i + j] = ((i == j) - a[i] * a[j]) / theta;
  mjtNum PJ[9], aJ[3];
  mju_mulMatMat(PJ, P, Jinv, 3, 3, 3);
  mju_mulMatTVec(aJ, Jinv, a, 3, 3);  // dtheta/dq = a' Jinv

  // gen_i = -f a_i:  d gen_i/dq_j = -(f_th dtheta_j + f_v dthdot_j) a_i - f da_i/dq_j
  // thdot = a . w: dthdot/dq = w' PJ, dthdot/dw = a'
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      mjtNum dthdot = 0;
      for (int l = 0; l < 3; l++) dthdot += w[l] * PJ[3 * l + j];
      DfDq[nv * (da + i) + da + j] += -(fx * aJ[j] + fv * dthdot) * a[i] - f * PJ[3 * i + j];
      DfDv[nv * (da + i) + da + j] += -fv * a[j] * a[i];
    }
  }
}

// the force f(L, Ldot) on spatial tendon t with partials fx, fv, summed per tendon in tf
// (3 x ntendon: F, F_L, F_V) for one call of tendon_d.c per tendon at the end
static void spatialTendon(int t, mjtNum f, mjtNum fx, mjtNum fv, mjtNum* tf) {
  tf[3 * t] += f;
  tf[3 * t + 1] += fx;
  tf[3 * t + 2] += fv;
}

// the spatial tendons' terms of the summed scalar forces tf (F, F_L, F_V per tendon): d(J' F)/dq
// and dv, one Hessian per tendon (tendon_d.c); the first failure as -1 - ncon - t, else 0
static int tendonTerms(const mjModel* m, mjData* d, const mjtNum* tf, mjtNum* DfDq, mjtNum* DfDv) {
  int status = 0;
  for (int t = 0; t < m->ntendon; t++) {
    if (tf[3 * t] == 0 && tf[3 * t + 1] == 0 && tf[3 * t + 2] == 0) continue;
    if (mjdiff_tendonForceDerivative(m, d, 1, &t, tf + 3 * t, tf + 3 * t + 1, DfDq, DfDv) &&
        !status) {
      status = -1 - d->ncon - t;
    }
  }
  return status;
}

//---------------------------------- MuJoCo passive forces and actuators --------------------------

// joint springs and dof dampers (tendon springs and dampers through fixed tendons)
static void passiveDeriv(const mjModel* m, const mjData* d, mjtNum* row, mjtNum* DfDq,
                         mjtNum* DfDv, mjtNum* tf) {
  int nv = m->nv;
  if (compat_passiveOff(m)) return;
  mjtNum spring = compat_springOff(m) ? 0 : 1, damper = compat_damperOff(m) ? 0 : 1;
  for (int j = 0; j < m->njnt; j++) {
    mjtNum k = spring * m->jnt_stiffness[j];
    if (k == 0) continue;
    int da = m->jnt_dofadr[j], qa = m->jnt_qposadr[j], type = m->jnt_type[j];
    if (type == mjJNT_HINGE || type == mjJNT_SLIDE) {
      DfDq[nv * da + da] -= k;
      continue;
    }
    if (type == mjJNT_FREE) {
      for (int i = 0; i < 3; i++) DfDq[nv * (da + i) + da + i] -= k;
      da += 3;
      qa += 3;
    }
    // -k subQuat(q, q_spring) = -k log(q_s^-1 q): derivative -k J_r^-1(dif)
    mjtNum dif[3], Jinv[9];
    mju_subQuat(dif, d->qpos + qa, m->qpos_spring + qa);
    spatial_rightJacobianInverse(dif, Jinv);
    for (int i = 0; i < 3; i++)
      for (int l = 0; l < 3; l++) DfDq[nv * (da + i) + da + l] -= k * Jinv[3 * i + l];
  }
  for (int i = 0; i < nv; i++) DfDv[nv * i + i] -= damper * m->dof_damping[i];
  for (int t = 0; t < m->ntendon; t++) {
    mjtNum k = spring * m->tendon_stiffness[t], b = damper * m->tendon_damping[t];
    if (k == 0 && b == 0) continue;
    if (mjdiff_tendonSpatial(m, t)) {
      mjtNum f = -k * (d->ten_length[t] - compat_tendonLengthSpring(m, t)) - b * d->ten_velocity[t];
      spatialTendon(t, f, -k, -b, tf);
      continue;
    }
    addScalarDeriv(m, d, t, -1, -k, -b, row, DfDq, DfDv);
  }
}

// site transmission i (no reference site) with force F and force_V fV: its q- and v-derivatives
// through the wrench (see the top); sc->cdof0, sc->dV ready; sc->J1, sc->Y are scratch
static void siteActuatorDeriv(const mjModel* m, const mjData* d, scratch* sc, int i, mjtNum F,
                              mjtNum fV, mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv, site = m->actuator_trnid[2 * i], b = m->site_bodyid[site];
  if (b == 0) return;  // a world site: constant (zero) moment
  const mjtNum* gear = m->actuator_gear + 6 * i;
  const mjtNum* R = d->site_xmat + 9 * site;
  const mjtNum* p = d->site_xpos + 3 * site;
  mjtNum f[3], tau[3], pf[3], Wu[6], V[6];
  mju_rotVecMat(f, gear, R);
  mju_rotVecMat(tau, gear + 3, R);
  mju_cross(pf, p, f);
  for (int r = 0; r < 3; r++) {
    Wu[r] = tau[r] + pf[r];
    Wu[3 + r] = f[r];
  }
  spatial_bodyVel(m, d, b, V);
  setAllColumns(m, sc);
  spatial_bodyJacobian(m, sc->cdof0, b, sc->J1);
  const mjtNum* dVb = sc->dV + 6 * nv * b;
  mjtNum* dWq = sc->Y;
  mjtNum* dWv = sc->Y + 6 * nv;
  mju_zero(sc->Y, 12 * nv);
  for (int k = 0; k < nv; k++) {
    mjtNum a[3] = {sc->J1[k], sc->J1[nv + k], sc->J1[2 * nv + k]}, dp[3];
    spatial_pointJacobianCol(sc->J1, nv, k, p, dp);
    mjtNum af[3], at[3], t1[3], t2[3], dW[6];
    mju_cross(af, a, f);
    mju_cross(at, a, tau);
    mju_cross(t1, dp, f);
    mju_cross(t2, p, af);
    for (int r = 0; r < 3; r++) {
      dW[r] = at[r] + t1[r] + t2[r];
      dW[3 + r] = af[r];
    }
    mjtNum dvel = 0, mom = 0;
    for (int r = 0; r < 6; r++) {
      dvel += dW[r] * V[r] + Wu[r] * dVb[nv * r + k];
      mom += Wu[r] * sc->J1[nv * r + k];
    }
    for (int r = 0; r < 6; r++) {
      dWq[nv * r + k] = F * dW[r] + Wu[r] * fV * dvel;
      dWv[nv * r + k] = Wu[r] * fV * mom;
    }
  }
  mjtNum W[6];
  mju_scl(W, Wu, F, 6);
  addWrenchDeriv(m, sc, 0, b, W, dWq, fV != 0 ? dWv : NULL, DfDq, DfDv);
}

// slider-crank transmission i with force F and partials fL, fV: its q- and v-derivatives (see the
// top); sc->cdof0 ready, sc->J1, sc->J2 and sc->Y are scratch (Y: Ja, Jps, Jpc, M, qvel' H); H
// (nv x nv) on d's stack
static void sliderCrankDeriv(const mjModel* m, mjData* d, scratch* sc, int i, mjtNum F,
                             mjtNum fL, mjtNum fV, mjtNum* DfDq, mjtNum* DfDv) {
  int nv = m->nv;
  int crank = m->actuator_trnid[2 * i], slider = m->actuator_trnid[2 * i + 1];
  int bc = m->site_bodyid[crank], bs = m->site_bodyid[slider];
  mjtNum g = m->actuator_gear[6 * i], r = m->actuator_cranklength[i];
  const mjtNum* ps = d->site_xpos + 3 * slider;
  const mjtNum* pc = d->site_xpos + 3 * crank;
  const mjtNum* R = d->site_xmat + 9 * slider;
  mjtNum a[3] = {R[2], R[5], R[8]}, v[3];
  mju_sub3(v, pc, ps);
  mjtNum c = mju_dot3(a, v), det = c * c + r * r - mju_dot3(v, v);
  mjtNum La[3], Lv[3], Laa[9] = {0}, Lav[9] = {0}, Lvv[9] = {0};
  if (det > 0) {
    mjtNum sd = sqrt(det), s3 = sd * sd * sd, u = 1 - c / sd, ua[3], uv[3], w[3];
    for (int k = 0; k < 3; k++) {
      La[k] = u * v[k];
      Lv[k] = u * a[k] + v[k] / sd;
      ua[k] = v[k] * (c * c - det) / s3;
      w[k] = (c * a[k] - v[k]) / s3;
      uv[k] = -a[k] / sd + c * w[k];
    }
    for (int p = 0; p < 3; p++) {
      for (int q = 0; q < 3; q++) {
        Laa[3 * p + q] = v[p] * ua[q];
        Lav[3 * p + q] = (p == q ? u : 0) + v[p] * uv[q];
        Lvv[3 * p + q] = a[p] * uv[q] + (p == q ? 1 / sd : 0) - v[p] * w[q];
      }
    }
  } else {
    mju_copy3(La, v);
    mju_copy3(Lv, a);
    Lav[0] = Lav[4] = Lav[8] = 1;
  }

  // Jacobians: Ja, Jps, Jpc (3 x nv each) from the body Jacobians J1 (slider), J2 (crank)
  spatial_bodyJacobian(m, sc->cdof0, bs, sc->J1);
  spatial_bodyJacobian(m, sc->cdof0, bc, sc->J2);
  mjtNum* Ja = sc->Y;
  mjtNum* Jps = Ja + 3 * nv;
  mjtNum* Jpc = Jps + 3 * nv;
  mjtNum* M = Jpc + 3 * nv;      // nv
  mjtNum* Vh = M + nv;           // nv: qvel' H
  for (int k = 0; k < nv; k++) {
    mjtNum wk[3] = {sc->J1[k], sc->J1[nv + k], sc->J1[2 * nv + k]}, t[3], q1[3], q2[3];
    mju_cross(t, wk, a);
    spatial_pointJacobianCol(sc->J1, nv, k, ps, q1);
    spatial_pointJacobianCol(sc->J2, nv, k, pc, q2);
    for (int r3 = 0; r3 < 3; r3++) {
      Ja[nv * r3 + k] = t[r3];
      Jps[nv * r3 + k] = q1[r3];
      Jpc[nv * r3 + k] = q2[r3];
    }
    mjtNum m0 = 0;
    for (int r3 = 0; r3 < 3; r3++) m0 += La[r3] * t[r3] + Lv[r3] * (q2[r3] - q1[r3]);
    M[k] = g * m0;
  }
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* H = compat_stackAllocNum(d, nv * nv);
  int* list = (int*)compat_stackAllocNum(d, nv / 2 + 1);
  mju_zero(H, nv * nv);
  for (int k = 0; k < nv; k++) {
    mjtNum Jak[3], Jvk[3];
    for (int r3 = 0; r3 < 3; r3++) {
      Jak[r3] = Ja[nv * r3 + k];
      Jvk[r3] = Jpc[nv * r3 + k] - Jps[nv * r3 + k];
    }
    if (mju_isZero(Jak, 3) && mju_isZero(Jvk, 3)) continue;
    // first-order part: Ja_k' L_aa Ja_l + Ja_k' L_av Jv_l + Jv_k' L_va Ja_l + Jv_k' L_vv Jv_l
    mjtNum pa[3], pv[3];  // row vectors Ja_k' L_aa + Jv_k' L_va, Ja_k' L_av + Jv_k' L_vv
    for (int q = 0; q < 3; q++) {
      pa[q] = pv[q] = 0;
      for (int p = 0; p < 3; p++) {
        pa[q] += Jak[p] * Laa[3 * p + q] + Jvk[p] * Lav[3 * q + p];
        pv[q] += Jak[p] * Lav[3 * p + q] + Jvk[p] * Lvv[3 * p + q];
      }
    }
    // w_k, and whether dof k lies on the slider's and the crank's chains
    mjtNum wsk[3] = {sc->J1[k], sc->J1[nv + k], sc->J1[2 * nv + k]};
    mjtNum wck[3] = {sc->J2[k], sc->J2[nv + k], sc->J2[2 * nv + k]};
    int ins = 0, inc = 0;
    for (int r6 = 0; r6 < 6; r6++) {
      ins = ins || sc->J1[nv * r6 + k] != 0;
      inc = inc || sc->J2[nv * r6 + k] != 0;
    }
    for (int l = 0; l < nv; l++) {
      mjtNum h = 0, Jal[3], Jpsl[3], Jpcl[3], t[3];
      for (int r3 = 0; r3 < 3; r3++) {
        Jal[r3] = Ja[nv * r3 + l];
        Jpsl[r3] = Jps[nv * r3 + l];
        Jpcl[r3] = Jpc[nv * r3 + l];
        h += pa[r3] * Jal[r3] + pv[r3] * (Jpcl[r3] - Jpsl[r3]);
      }
      // the Jacobians' own motion: w_k x Ja_l, w_k x J(x)_l
      mju_cross(t, wsk, Jal);
      h += mju_dot3(La, t);
      mju_cross(t, wck, Jpcl);
      h += mju_dot3(Lv, t);
      mju_cross(t, wsk, Jpsl);
      h -= mju_dot3(Lv, t);
      H[nv * k + l] = h;
    }
    // [l moves k]: (w_l x w_k) x a on the slider, (cdof0_l x cdof0_k) at x on each point
    int n = spatial_movers(m, k, list);
    for (int e = 0; e < n; e++) {
      int l = list[e];
      mjtNum cm[6], t[3], pt[3];
      spatial_crossMotion(cm, sc->cdof0 + 6 * l, sc->cdof0 + 6 * k);
      mjtNum h = 0;
      if (ins) {
        mju_cross(t, cm, a);
        h += mju_dot3(La, t);
        spatial_pointMotion(pt, cm, ps);
        h -= mju_dot3(Lv, pt);
      }
      if (inc) {
        spatial_pointMotion(pt, cm, pc);
        h += mju_dot3(Lv, pt);
      }
      H[nv * k + l] += h;
    }
    for (int l = 0; l < nv; l++) H[nv * k + l] *= g;
  }
  for (int l = 0; l < nv; l++) {
    Vh[l] = 0;
    for (int j = 0; j < nv; j++) Vh[l] += d->qvel[j] * H[nv * j + l];
  }
  for (int k = 0; k < nv; k++) {
    for (int l = 0; l < nv; l++) {
      DfDq[nv * k + l] += F * H[nv * k + l] + M[k] * (fL * M[l] + fV * Vh[l]);
      DfDv[nv * k + l] += M[k] * fV * M[l];
    }
  }
  compat_stackFree(d, mark);
}

// the muscle length curve FL(l) and its slope (see the top; MuJoCo 2.2 and 3.x differ below lmin)
static mjtNum muscleFL(mjtNum l, mjtNum lmin, mjtNum lmax, mjtNum* dFL) {
  mjtNum a = 0.5 * (lmin + 1), b = 0.5 * (1 + lmax), w, x;
  *dFL = 0;
#if MJDIFF_MUJOCO_3
  if (!(lmin <= l && l <= lmax)) return 0;
  int rising = l <= a;
#else
  if (l > lmax) return 0;
  int rising = l >= lmin && l <= a;
#endif
  if (rising) {
    w = mju_max(mjMINVAL, a - lmin);
    x = (l - lmin) / w;
    *dFL = x / w;
    return 0.5 * x * x;
  } else if (l <= 1) {
    w = mju_max(mjMINVAL, 1 - a);
    x = (1 - l) / w;
    *dFL = x / w;
    return 1 - 0.5 * x * x;
  } else if (l <= b) {
    w = mju_max(mjMINVAL, b - 1);
    x = (l - 1) / w;
    *dFL = -x / w;
    return 1 - 0.5 * x * x;
  }
  w = mju_max(mjMINVAL, lmax - b);
  x = (lmax - l) / w;
  *dFL = -x / w;
  return 0.5 * x * x;
}

// muscle gain and bias of actuator i at its length and velocity, with their partials in length
// (gL, bL) and velocity (gV)
static void muscleForce(const mjModel* m, const mjData* d, int i, mjtNum* g, mjtNum* gL,
                        mjtNum* gV, mjtNum* bias, mjtNum* bL) {
  const mjtNum* lr = m->actuator_lengthrange + 2 * i;
  mjtNum acc0 = m->actuator_acc0[i], len = d->actuator_length[i], vel = d->actuator_velocity[i];
  if (g) {
    const mjtNum* prm = m->actuator_gainprm + mjNGAIN * i;
    mjtNum F0 = prm[2] < 0 ? prm[3] / mju_max(mjMINVAL, acc0) : prm[2];
    mjtNum L0 = mju_max(mjMINVAL, (lr[1] - lr[0]) / mju_max(mjMINVAL, prm[1] - prm[0]));
    mjtNum l = prm[0] + (len - lr[0]) / L0, vs = mju_max(mjMINVAL, L0 * prm[6]);
    mjtNum w = vel / vs, y = prm[8] - 1, dFL, FV, dFV;
    mjtNum FL = muscleFL(l, prm[4], prm[5], &dFL);
    if (w <= -1) {
      FV = dFV = 0;
    } else if (w <= 0) {
      FV = (w + 1) * (w + 1);
      dFV = 2 * (w + 1);
    } else if (w <= y) {
      FV = prm[8] - (y - w) * (y - w) / mju_max(mjMINVAL, y);
      dFV = 2 * (y - w) / mju_max(mjMINVAL, y);
    } else {
      FV = prm[8];
      dFV = 0;
    }
    *g = -F0 * FL * FV;
    *gL = -F0 * dFL * FV / L0;
    *gV = -F0 * FL * dFV / vs;
  }
  if (bias) {
    const mjtNum* prm = m->actuator_biasprm + mjNBIAS * i;
    mjtNum F0 = prm[2] < 0 ? prm[3] / mju_max(mjMINVAL, acc0) : prm[2];
    mjtNum L0 = mju_max(mjMINVAL, (lr[1] - lr[0]) / mju_max(mjMINVAL, prm[1] - prm[0]));
    mjtNum l = prm[0] + (len - lr[0]) / L0, b = 0.5 * (1 + prm[5]);
    mjtNum wb = mju_max(mjMINVAL, b - 1);
    if (l <= 1) {
      *bias = *bL = 0;
    } else if (l <= b) {
      mjtNum x = (l - 1) / wb;
      *bias = -F0 * prm[7] * 0.5 * x * x;
      *bL = -F0 * prm[7] * x / wb / L0;
    } else {
      *bias = -F0 * prm[7] * (0.5 + (l - b) / wb);
      *bL = -F0 * prm[7] / wb / L0;
    }
  }
}

// muscle activation dynamics: d adot / du (u the control after the range clamp) and d adot / da
static void muscleDynamics(const mjModel* m, int i, mjtNum u, mjtNum act, mjtNum* du,
                           mjtNum* da) {
  const mjtNum* prm = m->actuator_dynprm + mjNDYN * i;
  mjtNum c = mju_clip(u, 0, 1), dc = u > 0 && u < 1 ? 1 : 0;
  mjtNum ac = mju_clip(act, 0, 1), dac = act > 0 && act < 1 ? 1 : 0;
  mjtNum k = 0.5 + 1.5 * ac;
  mjtNum ta = prm[0] * k, dta = prm[0] * 1.5 * dac;
  mjtNum td = prm[1] / k, dtd = -prm[1] * 1.5 * dac / (k * k);
  mjtNum e = c - act, tau, tau_u = 0, tau_a;
#if MJDIFF_MUJOCO_3
  mjtNum width = prm[2];
#else
  mjtNum width = 0;
#endif
  if (width < mjMINVAL) {
    tau = e > 0 ? ta : td;
    tau_a = e > 0 ? dta : dtd;
  } else {
    mjtNum x = e / width + 0.5, S, dS;
    if (x <= 0 || x >= 1) {
      S = x <= 0 ? 0 : 1;
      dS = 0;
    } else {
      S = x * x * x * (3 * x * (2 * x - 5) + 10);
      dS = 30 * x * x * (x - 1) * (x - 1);
    }
    tau = td + (ta - td) * S;
    tau_u = (ta - td) * dS * dc / width;
    tau_a = dtd + (dta - dtd) * S - (ta - td) * dS / width;
  }
  if (tau < mjMINVAL) {  // MuJoCo divides by mjMINVAL there: no slope in tau
    *du = dc / mjMINVAL;
    *da = -1 / mjMINVAL;
    return;
  }
  *du = dc / tau - e * tau_u / (tau * tau);
  *da = -1 / tau - e * tau_a / (tau * tau);
}

// actuator forces through constant moments (hinge/slide joints, fixed tendons), spatial tendons
// (tendon_d.c, through tf) and sites (siteActuatorDeriv)
// A body transmission (adhesion; plugin/smooth.c, mjdiff_bodyTransmissions): the actuator force
// a pulls each of the N counted contacts' bodies together, F = -(a / N) n_c on body2 at p_c (the
// opposite on body1): a contact wrench whose force depends on y only through the normal,
// dF/dn = -(a / N) I. N is piecewise constant (zero derivative; the force jumps as a contact
// enters or leaves MuJoCo's margin). Its q-derivative moves with the contact's point and frame
// (the geometry Jacobian) and the bodies' Jacobians; the v-block has none (the actuator's
// velocity terms are refused: step_d.c). Returns 0, or -1 - c if contact c's geometry Jacobian
// is unavailable (the force derivative's status for a contact).
static int bodyActuatorDeriv(const mjModel* m, const mjData* d, scratch* sc, int i, mjtNum a,
                             mjtNum* DfDq, mjtNum* DfDv) {
  int b = m->actuator_trnid[2 * i], n = 0;
  for (int c = 0; c < d->ncon; c++) n += mjdiff_adhesionCounts(m, d->contact + c, b);
  if (!n || a == 0) return 0;
  for (int c = 0; c < d->ncon; c++) {
    const mjContact* con = d->contact + c;
    if (!mjdiff_adhesionCounts(m, con, b)) continue;
    mjtNum F[3], T[3] = {0, 0, 0}, DF[30] = {0}, DT[30] = {0}, v[3], w[3], G[7 * 12];
    int bb[2] = {m->geom_bodyid[compat_contactGeom1(con)], m->geom_bodyid[compat_contactGeom2(con)]};
    contactVel(m, d, bb, con->pos, v, w);
    mju_scl3(F, con->frame, -a / n);
    for (int r = 0; r < 3; r++) DF[10 * r + 1 + r] = -a / n;
    int gst = mjdiff_contactGeomJacobian(m, d, con, G);
    if (contactWrenchDeriv(m, d, sc, con, G, gst, F, T, DF, DT, w, NULL, NULL, NULL, DfDq, DfDv)) {
      return -1 - c;
    }
  }
  return 0;
}

// A ball joint's actuator (mjTRN_JOINT): MuJoCo's length = gear . r, r = log(q) the axis-angle
// vector of the joint's quaternion (mju_quat2Vel), moment = gear on the joint's three dofs. A
// tangent step dq moves q to q exp(dq) (mj_integratePos: the local frame), and
//   d log(q exp(dq)) / d dq = J_r^-1(r) = I + [r]x / 2 + c [r]x^2,
//   c = 1/theta^2 - (1 + cos theta) / (2 theta sin theta)   (-> 1/12 as theta -> 0),
// so dlength/d dq = gear' J_r^-1(r), and its transpose lg = (I - [r]x / 2 + c [r]x^2) gear
static void ballLengthGradient(const mjtNum quat[4], const mjtNum gear[3], mjtNum lg[3]) {
  mjtNum r[3];
  mju_quat2Vel(r, quat, 1);
  mjtNum theta = mju_norm3(r);
  mjtNum c = theta < 1e-4 ? 1.0 / 12 + theta * theta / 720
                          : 1 / (theta * theta) - (1 + cos(theta)) / (2 * theta * sin(theta));
  mjtNum rg[3], rrg[3];
  mju_cross(rg, r, gear);
  mju_cross(rrg, r, rg);
  for (int k = 0; k < 3; k++) lg[k] = gear[k] - 0.5 * rg[k] + c * rrg[k];
}

// returns 0, or the status of a body transmission's contact (bodyActuatorDeriv)
static int actuatorDeriv(const mjModel* m, const mjData* d, scratch* sc, mjtNum* DfDq,
                         mjtNum* DfDv, mjtNum* DfDa, mjtNum* DfDu, mjtNum* DadotDa,
                         mjtNum* DadotDu, mjtNum* tf) {
  int nv = m->nv, nu = m->nu, na = m->na, status = 0;
  if (nu == 0 || DISABLED(m, mjDSBL_ACTUATION)) return 0;
  int clamp = !DISABLED(m, mjDSBL_CLAMPCTRL);
  COMPAT_MOMENT_BUF(mbuf, nv);
  for (int i = 0; i < nu; i++) {
    const mjtNum* gain = m->actuator_gainprm + mjNGAIN * i;
    const mjtNum* bias = m->actuator_biasprm + mjNBIAS * i;
    const mjtNum* moment = compat_actuatorMoment(m, d, i, mbuf);
    int ia = i - (nu - na), stateful = m->actuator_dyntype[i] != mjDYN_NONE;

    // clamped control: derivative 1 inside the range, 0 outside
    mjtNum dctrl = 1;
    if (clamp && m->actuator_ctrllimited[i]) {
      const mjtNum* cr = m->actuator_ctrlrange + 2 * i;
      if (d->ctrl[i] < cr[0] || d->ctrl[i] > cr[1]) dctrl = 0;
    }
    mjtNum in = stateful ? d->act[ia] : mju_clip(d->ctrl[i], clamp && m->actuator_ctrllimited[i] ?
                                                   m->actuator_ctrlrange[2 * i] : -mjMAXVAL,
                                                 clamp && m->actuator_ctrllimited[i] ?
                                                   m->actuator_ctrlrange[2 * i + 1] : mjMAXVAL);

    // force = gain in + bias and its partials in length, velocity, input
    mjtNum g = gain[0], gL = 0, gV = 0;
    if (m->actuator_gaintype[i] == mjGAIN_AFFINE) {
      g += gain[1] * d->actuator_length[i] + gain[2] * d->actuator_velocity[i];
      gL = gain[1];
      gV = gain[2];
    } else if (m->actuator_gaintype[i] == mjGAIN_MUSCLE) {
      muscleForce(m, d, i, &g, &gL, &gV, NULL, NULL);
    }
    mjtNum fL = gL * in, fV = gV * in, fin = g;
    if (m->actuator_biastype[i] == mjBIAS_AFFINE) {
      fL += bias[1];
      fV += bias[2];
    } else if (m->actuator_biastype[i] == mjBIAS_MUSCLE) {
      mjtNum b, bL;
      muscleForce(m, d, i, NULL, NULL, NULL, &b, &bL);
      fL += bL;
    }

    // clamped force: derivative 0 outside the range
    if (m->actuator_forcelimited[i]) {
      const mjtNum* fr = m->actuator_forcerange + 2 * i;
      mjtNum force = d->actuator_force[i];
      if (force <= fr[0] || force >= fr[1]) fL = fV = fin = 0;
    }

    // spatial tendon: moment = gear J(q), the tendon force gear force (tendon_d.c)
    int spatial =
        m->actuator_trntype[i] == mjTRN_TENDON && mjdiff_tendonSpatial(m, m->actuator_trnid[2 * i]);
    if (spatial) {
      mjtNum gear = m->actuator_gear[6 * i];
      spatialTendon(m->actuator_trnid[2 * i], gear * d->actuator_force[i], gear * gear * fL,
                    gear * gear * fV, tf);
    }

    // a moment that moves with q: the q- and v-blocks of its own (site: through the wrench;
    // slider-crank: through the moment's derivative; spatial tendon: tendon_d.c above)
    int trn = m->actuator_trntype[i], moving = spatial;
    if (trn == mjTRN_SITE) {
      siteActuatorDeriv(m, d, sc, i, d->actuator_force[i], fV, DfDq, DfDv);
      moving = 1;
    } else if (trn == mjTRN_SLIDERCRANK) {
      sliderCrankDeriv(m, (mjData*)d, sc, i, d->actuator_force[i], fL, fV, DfDq, DfDv);
      moving = 1;
    } else if (trn == mjTRN_BODY) {
      int st = bodyActuatorDeriv(m, d, sc, i, d->actuator_force[i], DfDq, DfDv);
      if (st && !status) status = st;
      moving = 1;
    }

    // the length's gradient in the tangent dq: the moment for hinges, slides and fixed tendons;
    // for a ball joint (length = gear . log(q), moment = gear) gear' J_r^-1(log q) on its dofs,
    // lg = (I - [r]x / 2 + c [r]x^2) gear; a free joint's length is 0 (ballLengthGradient)
    int ballDof = -1, freeJoint = 0;
    mjtNum lg3[3] = {0, 0, 0};
    if (trn == mjTRN_JOINT) {
      int j = m->actuator_trnid[2 * i];
      if (m->jnt_type[j] == mjJNT_BALL) {
        ballDof = m->jnt_dofadr[j];
        ballLengthGradient(d->qpos + m->jnt_qposadr[j], m->actuator_gear + 6 * i, lg3);
      } else if (m->jnt_type[j] == mjJNT_FREE) {
        freeJoint = 1;
      }
    }

    // df = moment' (fL dlength + fV moment dv + fin din)
    for (int r = 0; r < nv; r++) {
      if (moment[r] == 0) continue;
      for (int c = 0; c < nv && !moving; c++) {
        if (moment[c] != 0) DfDv[nv * r + c] += moment[r] * fV * moment[c];
        // the length's gradient: on a ball's dofs also where the gear is zero
        mjtNum lgc = freeJoint                                      ? 0
                     : ballDof >= 0                                 ? (c >= ballDof && c < ballDof + 3 ? lg3[c - ballDof] : 0)
                                                                    : moment[c];
        if (lgc != 0) DfDq[nv * r + c] += moment[r] * fL * lgc;
      }
      if (stateful) {
        DfDa[na * r + ia] += moment[r] * fin;
      } else {
        DfDu[nu * r + i] += moment[r] * fin * dctrl;
      }
    }

    // activation dynamics
    if (stateful) {
      if (m->actuator_dyntype[i] == mjDYN_INTEGRATOR) {
        DadotDu[nu * ia + i] = dctrl;
      } else if (m->actuator_dyntype[i] == mjDYN_FILTER) {
        mjtNum tau = mju_max(mjMINVAL, m->actuator_dynprm[mjNDYN * i]);
        DadotDu[nu * ia + i] = dctrl / tau;
        DadotDa[na * ia + ia] = -1 / tau;
      } else if (m->actuator_dyntype[i] == mjDYN_MUSCLE) {
        mjtNum u = mju_clip(d->ctrl[i], clamp && m->actuator_ctrllimited[i] ?
                                          m->actuator_ctrlrange[2 * i] : -mjMAXVAL,
                            clamp && m->actuator_ctrllimited[i] ?
                                          m->actuator_ctrlrange[2 * i + 1] : mjMAXVAL);
        mjtNum du, da;
        muscleDynamics(m, i, u, d->act[ia], &du, &da);
        DadotDu[nu * ia + i] = dctrl * du;
        DadotDa[na * ia + ia] = da;
      }
    }
  }
  return status;
}

//---------------------------------- all forces ---------------------------------------------------

int mjdiff_forceDerivative(const mjModel* mu, mjData* d, const mjdiffModel* s, mjtNum* DfDq,
                           mjtNum* DfDv, mjtNum* DfDa, mjtNum* DfDu, mjtNum* DadotDa,
                           mjtNum* DadotDu) {
  return mjdiff_forceDerivativeParts(mu, d, s, MJDIFF_FORCES_ALL, DfDq, DfDv, DfDa, DfDu, DadotDa,
                                     DadotDu);
}

size_t mjdiff_forceDerivativeStack(const mjModel* m) {
  size_t nv = (size_t)m->nv, nbody = (size_t)m->nbody;
  // this function's scratch: cdof0, dV, Wsub, J1, J2, Y, cols, all, tendon forces
  size_t own = 50 * nv + 6 * nv * nbody + 6 * nbody + nv + 3 * (size_t)m->ntendon + 4 +
               // clipped actuator dofs (3.x): their list, the actuators' own matrices, the
               // wrenches set aside and the actuators' tendon forces
               (nv / 2 + 2) + 2 * nv * nv + 6 * nbody + 3 * (size_t)m->ntendon + 4;
  // the deepest callee: a spatial tendon's force derivative (a dense Hessian per tendon: two for
  // an equality between two tendons, J, vH) with mjdiff_tendonDerivative's scratch inside it; the
  // fluid derivative's is smaller
  size_t nhess = 1;
  for (int i = 0; i < m->neq; i++) {
    if (m->eq_type[i] == mjEQ_TENDON && m->eq_obj2id[i] >= 0) nhess = 2;
  }
  size_t tendon = 4 * nv + nhess * nv * nv + 26 * nv + nv * nv / 8 + nv / 2 + 8;
  size_t fluid = 36 * nv + 6 * nbody + 8;
  size_t crank = nv * nv + nv / 2 + 4;  // a slider-crank's moment derivative
  size_t callee = tendon > fluid ? tendon : fluid;
  return own + (callee > crank ? callee : crank);
}

int mjdiff_forceDerivativeParts(const mjModel* mu, mjData* d, const mjdiffModel* s, int parts,
                                mjtNum* DfDq, mjtNum* DfDv, mjtNum* DfDa, mjtNum* DfDu,
                                mjtNum* DadotDa, mjtNum* DadotDu) {
  int status = 0;
  const mjModel* m = mu;
  int nv = m->nv, nu = m->nu, na = m->na, nbody = m->nbody;
  mju_zero(DfDq, nv * nv);
  mju_zero(DfDv, nv * nv);
  if (na && DfDa) mju_zero(DfDa, nv * na);  // NULL only without MJDIFF_FORCES_OTHER
  if (nu && DfDu) mju_zero(DfDu, nv * nu);
  if (na && DadotDa) mju_zero(DadotDa, na * na);
  if (na && nu && DadotDu) mju_zero(DadotDu, na * nu);

  mjdiffStackMark mark = compat_stackMark(d);
  scratch sc;
  sc.cdof0 = compat_stackAllocNum(d, 6 * nv);
  sc.dV = compat_stackAllocNum(d, 6 * nv * nbody);
  sc.Wsub = compat_stackAllocNum(d, 6 * nbody);
  sc.J1 = compat_stackAllocNum(d, 6 * nv);
  sc.J2 = compat_stackAllocNum(d, 6 * nv);
  sc.Y = compat_stackAllocNum(d, 32 * nv);
  sc.cols = (int*)compat_stackAllocNum(d, nv / 2 + 1);
  sc.all = (int*)compat_stackAllocNum(d, nv / 2 + 1);
  for (int i = 0; i < nv; i++) sc.all[i] = i;
  setAllColumns(m, &sc);
  mju_zero(sc.Wsub, 6 * nbody);
  spatial_cdof0(m, d, sc.cdof0);
  bodyVelDq(m, d, sc.cdof0, sc.dV, (int*)sc.J2);

  mjtNum* tf = compat_stackAllocNum(d, 3 * m->ntendon + 1);  // spatial tendons' F, F_L, F_V
  mju_zero(tf, 3 * m->ntendon);
  if (parts & MJDIFF_FORCES_OTHER) {
    passiveDeriv(m, d, sc.J2, DfDq, DfDv, tf);
    mjdiff_fluidDerivative(m, d, DfDq, DfDv);  // fluid forces (fluid_d.c)
    // MuJoCo 3's joint actuator force limits: where a clip is active the dof's qfrc_actuator is
    // constant. The actuators' terms then go to matrices of their own first, complete (a site's
    // wrench Jacobian term, a spatial tendon's length Hessian), and enter without those rows.
    int* clip = (int*)compat_stackAllocNum(d, nv / 2 + 1);
    int nclip = compat_clippedActuatorDofs(m, d, clip);
    if (!nclip) {
      int st = actuatorDeriv(m, d, &sc, DfDq, DfDv, DfDa, DfDu, DadotDa, DadotDu, tf);
      if (st && !status) status = st;
    } else {
      mjtNum* Aq = compat_stackAllocNum(d, nv * nv);
      mjtNum* Av = compat_stackAllocNum(d, nv * nv);
      mjtNum* Wkeep = compat_stackAllocNum(d, 6 * nbody);
      mjtNum* ta = compat_stackAllocNum(d, 3 * m->ntendon + 1);
      mju_zero(Aq, nv * nv);
      mju_zero(Av, nv * nv);
      mju_zero(ta, 3 * m->ntendon);
      mju_copy(Wkeep, sc.Wsub, 6 * nbody);
      mju_zero(sc.Wsub, 6 * nbody);
      int st = actuatorDeriv(m, d, &sc, Aq, Av, DfDa, DfDu, DadotDa, DadotDu, ta);
      if (st && !status) status = st;
      st = tendonTerms(m, d, ta, Aq, Av);
      if (st && !status) status = st;
      spatial_addWrenchJacobianTerm(m, sc.cdof0, sc.Wsub, (int*)sc.J2, Aq);
      mju_copy(sc.Wsub, Wkeep, 6 * nbody);
      for (int c = 0; c < nclip; c++) {
        int r = clip[c];
        mju_zero(Aq + (size_t)nv * r, nv);
        mju_zero(Av + (size_t)nv * r, nv);
        if (na && DfDa) mju_zero(DfDa + (size_t)na * r, na);
        if (nu && DfDu) mju_zero(DfDu + (size_t)nu * r, nu);
      }
      mju_addTo(DfDq, Aq, nv * nv);
      mju_addTo(DfDv, Av, nv * nv);
    }
  }

  // smooth forces (plugin/smooth.c), under the same flags
  if ((parts & MJDIFF_FORCES_SMOOTH) && !DISABLED(m, mjDSBL_CONSTRAINT) && !compat_passiveOff(m)) {
    if (!DISABLED(m, mjDSBL_CONTACT)) {
      // a pair's consecutive contacts (up to 8) share one run of its pair function
      mjtNum Grun[8 * 7 * 12];
      int gst[8], run0 = 0, nrun = 0;
      for (int i = 0; i < d->ncon; i++) {
        const mjContact* con = d->contact + i;
        if (i >= run0 + nrun) {
          int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
          run0 = i;
          nrun = 1;
          while (nrun < 8 && i + nrun < d->ncon && compat_contactGeom1(con + nrun) == g1 &&
                 compat_contactGeom2(con + nrun) == g2) {
            nrun++;
          }
          // (convex and height-field pairs solve per contact anyway: computed when active)
          if (mjdiff_convexPair(m->geom_type[g1], m->geom_type[g2])) nrun = 1;
          if (nrun > 1 && mjdiff_contactGeomJacobianRun(m, d, con, nrun, Grun, gst)) nrun = 1;
        }
        const mjtNum* G = nrun > 1 ? Grun + 84 * (i - run0) : NULL;
        if (contactDeriv(m, d, s, &sc, con, G, G ? gst[i - run0] : 0, DfDq, DfDv) && !status) {
          status = -1 - i;
        }
      }
    }
    if (!DISABLED(m, mjDSBL_EQUALITY)) {
      for (int i = 0; i < m->neq; i++) {
        if (!compat_eqActive(m, d, i)) continue;
        int type = m->eq_type[i];
        if (type == mjEQ_CONNECT || type == mjEQ_WELD) {
          setAllColumns(m, &sc);
          bodyEqualityDeriv(m, d, s, &sc, i, DfDq, DfDv);
          continue;
        }
        // joint/tendon: r = x1 - x1_0 - poly(x2 - x2_0), f = -k r - c (v1 - poly' v2)
        int o1 = m->eq_obj1id[i], o2 = m->eq_obj2id[i], tendon = type == mjEQ_TENDON;
        const mjtNum* coef = m->eq_data + mjNEQDATA * i;
        mjtNum x2 = 0, v2 = 0;
        if (o2 >= 0) {
          x2 = tendon ? d->ten_length[o2] - m->tendon_length0[o2]
                      : d->qpos[m->jnt_qposadr[o2]] - m->qpos0[m->jnt_qposadr[o2]];
          v2 = tendon ? d->ten_velocity[o2] : d->qvel[m->jnt_dofadr[o2]];
        }
        mjtNum x1 = tendon ? d->ten_length[o1] - m->tendon_length0[o1]
                           : d->qpos[m->jnt_qposadr[o1]] - m->qpos0[m->jnt_qposadr[o1]];
        mjtNum v1 = tendon ? d->ten_velocity[o1] : d->qvel[m->jnt_dofadr[o1]];
        mjtNum dp = 0, ddp = 0, poly = coef[0];
        if (o2 >= 0) {
          dp = coef[1] + x2 * (2 * coef[2] + x2 * (3 * coef[3] + x2 * 4 * coef[4]));
          ddp = 2 * coef[2] + x2 * (6 * coef[3] + x2 * 12 * coef[4]);
          poly = coef[0] + x2 * (coef[1] + x2 * (coef[2] + x2 * (coef[3] + x2 * coef[4])));
        }
        mjtNum k, c;
        mjdiff_eqParams(s, i, 0, &k, &c);
        mjtNum f = -k * (x1 - poly) - c * (v1 - dp * v2);
        // f depends on x1 (df = -k), x2 (k dp + c ddp v2), v1 (-c), v2 (c dp);
        // generalised: +f along a1, -f dp along a2
        mjtNum f_x1 = -k, f_x2 = k * dp + c * ddp * v2, f_v1 = -c, f_v2 = c * dp;
        mjtNum g_x2 = -(f_x2 * dp + f * ddp), g_x1 = -f_x1 * dp, g_v1 = -f_v1 * dp,
               g_v2 = -f_v2 * dp;
        if (tendon && (mjdiff_tendonSpatial(m, o1) || (o2 >= 0 && mjdiff_tendonSpatial(m, o2)))) {
          int ts[2] = {o1, o2}, n = o2 >= 0 ? 2 : 1;
          mjtNum F[2] = {f, -f * dp}, dF2[8] = {f_x1, f_x2, f_v1, f_v2, g_x1, g_x2, g_v1, g_v2};
          mjtNum dF1[2] = {f_x1, f_v1};
          if (mjdiff_tendonForceDerivative(m, d, n, ts, F, n == 2 ? dF2 : dF1, DfDq, DfDv) &&
              !status) {
            status = -1 - d->ncon - o1;
          }
          continue;
        }
        // coordinate rows a1, a2: dof unit vectors or fixed-tendon Jacobian rows
        mjtNum* a1 = sc.J1;
        mjtNum* a2 = sc.J1 + nv;
        mju_zero(a1, 2 * nv);
        if (tendon) {
          compat_tendonRow(m, d, o1, a1);
          if (o2 >= 0) compat_tendonRow(m, d, o2, a2);
        } else {
          a1[m->jnt_dofadr[o1]] = 1;
          if (o2 >= 0) a2[m->jnt_dofadr[o2]] = 1;
        }
        for (int rr = 0; rr < nv; rr++) {
          if (a1[rr] == 0 && a2[rr] == 0) continue;
          for (int cc = 0; cc < nv; cc++) {
            if (a1[cc] == 0 && a2[cc] == 0) continue;
            DfDq[nv * rr + cc] += a1[rr] * (f_x1 * a1[cc] + f_x2 * a2[cc]) +
                                  a2[rr] * (g_x1 * a1[cc] + g_x2 * a2[cc]);
            DfDv[nv * rr + cc] += a1[rr] * (f_v1 * a1[cc] + f_v2 * a2[cc]) +
                                  a2[rr] * (g_v1 * a1[cc] + g_v2 * a2[cc]);
          }
        }
      }
    }
    if (!DISABLED(m, mjDSBL_LIMIT)) {
      for (int j = 0; j < m->njnt; j++) {
        if (!m->jnt_limited[j]) continue;
        int type = m->jnt_type[j], qa = m->jnt_qposadr[j], da = m->jnt_dofadr[j];
        mjtNum law[EP_COUNT];
        mjdiff_limitParams(s, 0, j, law);
        if (type == mjJNT_HINGE || type == mjJNT_SLIDE) {
          mjtNum fx, fv;
          const mjtNum* range = m->jnt_range + 2 * j;
          limitDeriv(law, d->qpos[qa], d->qvel[da], range[0], range[1], &fx, &fv);
          addScalarDeriv(m, d, -1, da, fx, fv, sc.J2, DfDq, DfDv);
        } else if (type == mjJNT_BALL) {
          ballLimitDeriv(m, d, law, j, DfDq, DfDv);
        }
      }
      for (int t = 0; t < m->ntendon; t++) {
        if (!m->tendon_limited[t]) continue;
        mjtNum fx, fv, law[EP_COUNT];
        const mjtNum* range = m->tendon_range + 2 * t;
        mjdiff_limitParams(s, 1, t, law);
        mjtNum f =
            limitDeriv(law, d->ten_length[t], d->ten_velocity[t], range[0], range[1], &fx, &fv);
        if (mjdiff_tendonSpatial(m, t)) {
          spatialTendon(t, f, fx, fv, tf);
          continue;
        }
        if (fx != 0 || fv != 0) addScalarDeriv(m, d, t, -1, fx, fv, sc.J2, DfDq, DfDv);
      }
    }
    if (!DISABLED(m, mjDSBL_FRICTIONLOSS)) {
      for (int j = 0; j < nv; j++) {
        if (m->dof_frictionloss[j] > 0) {
          DfDv[nv * j + j] +=
              lossDeriv(m->dof_frictionloss[j], d->qvel[j], mjdiff_lossSpeed(s, 0, j));
        }
      }
      for (int t = 0; t < m->ntendon; t++) {
        if (m->tendon_frictionloss[t] > 0) {
          mjtNum fv = lossDeriv(m->tendon_frictionloss[t], d->ten_velocity[t],
                                mjdiff_lossSpeed(s, 1, t));
          if (mjdiff_tendonSpatial(m, t)) {
            mjtNum u = d->ten_velocity[t] / mjdiff_lossSpeed(s, 1, t), r;
            law_regular(&r, &u, 1);
            spatialTendon(t, -m->tendon_frictionloss[t] * r, 0, fv, tf);
            continue;
          }
          addScalarDeriv(m, d, t, -1, 0, fv, sc.J2, NULL, DfDv);
        }
      }
    }
  }

  // xfrc_applied: W = [tau + xipos x f; f] on each body, xipos a material point; MuJoCo 3's
  // gravity compensation adds the constant force -gravcomp m g there
  for (int b = 1; b < nbody && (parts & MJDIFF_FORCES_OTHER); b++) {
    mjtNum x[6];
    compat_comForce(m, d, b, x);
    mju_copy3(x + 3, d->xfrc_applied + 6 * b + 3);
    if (mju_isZero(x, 6)) continue;
    mjtNum W[6], t[3];
    mju_cross(t, d->xipos + 3 * b, x);
    for (int i = 0; i < 3; i++) {
      W[i] = x[3 + i] + t[i];
      W[3 + i] = x[i];
    }
    mjtNum* dWq = sc.Y;
    mju_zero(dWq, 6 * nv);
    setAllColumns(m, &sc);
    spatial_bodyJacobian(m, sc.cdof0, b, sc.J1);
    spatial_pointJacobian(nv, sc.J1, d->xipos + 3 * b, sc.J2);
    for (int kk = 0; kk < nv; kk++) {
      mjtNum dp[3] = {sc.J2[kk], sc.J2[nv + kk], sc.J2[2 * nv + kk]}, t1[3];
      mju_cross(t1, dp, x);
      for (int r = 0; r < 3; r++) dWq[nv * r + kk] = t1[r];
    }
    addWrenchDeriv(m, &sc, 0, b, W, dWq, NULL, DfDq, DfDv);
  }

  // spatial tendons: d(J' F)/dq, dv of the summed scalar forces, one Hessian per tendon
  int st = tendonTerms(m, d, tf, DfDq, DfDv);
  if (st && !status) status = st;

  spatial_addWrenchJacobianTerm(m, sc.cdof0, sc.Wsub, (int*)sc.J2, DfDq);
  compat_stackFree(d, mark);
  return status;
}
