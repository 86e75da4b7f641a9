// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Analytical derivatives of recursive Newton-Euler inverse dynamics (after Carpentier & Mansard,
// "Analytical Derivatives of Rigid Body Dynamics Algorithms", RSS 2018) for MuJoCo 2.2's mj_rne.
//
// Notation. Spatial motion m = (w; v), force f = (n; f), both about one point fixed in the world:
//   m1 x m2 = (w1 x w2; w1 x v2 + v1 x w2)    motion cross product (a Lie bracket: Jacobi holds)
//   m x* f  = (w x n + v x f; w x f)          force cross product, (m x* f).y = -f.(m x y)
//   I_b = cinert of body b, S_j = cdof_j, v_j = qvel_j, acc_j the given acceleration.
// MuJoCo expresses each tree about its root's subtree com, which moves with q. tau is a pairing of
// motion with force, independent of the point, so we differentiate as if the point stayed where it
// is now, and use cdof and cinert as they are.
//
// Groups. S_j is rigidly attached to the frame after j's group: a hinge or slide (itself), the 3
// dofs of a ball, each translation of a free joint, the 3 rotations of a free joint (MuJoCo forbids
// rotations after a ball in a body; a free joint is alone in a top-level body). D_k = the dofs
// whose group is k's or comes after it on a path through k. The tangent dq_k moves the frames after
// k's group, and so k's body and its subtree, with spatial velocity S_k (hinge: about its anchor;
// ball, free rotation: local axes at the anchor; slide, free translation: world translation):
//   dS_j/dq_k = S_k x S_j (j in D_k),   dI_b/dq_k = S_k x* I_b - I_b S_k x (b in k's subtree).
//
// Forward equations (mj_comVel, mj_rne) along the groups G from the world to body b:
//   v-_G, a-_G    velocity, acceleration before G;  v-, a- of the world: 0, (0; -gravity)
//   w_G = v-_G + sum_{l in G} S_l v_l (the v- of the next group),  v_b = w of b's last group
//   Sdot_j = w_G x S_j   (MuJoCo's cdof_dot is v-_G x S_j for a ball; both give the same
//                         sum_{j in G} Sdot_j v_j, all that mj_rne uses, as (S v) x (S v) = 0)
//   a_b = a-_world + sum_j (Sdot_j v_j + S_j acc_j)
//   f_b = I_b a_b + v_b x* (I_b v_b),  F_b = sum_{c in subtree(b)} f_c,  tau_j = S_j . F_b(j)
//   ID = M(q) acc + qfrc_bias = tau + armature .* acc   (armature: constant)
//
// Along q_k (T = S_k, v- = v-_k, a- = a-_k; b in k's subtree). Jacobi gives, for j in D_k,
//   dSdot_j = (T x (w_j - v-)) x S_j + w_j x (T x S_j) = T x Sdot_j - (T x v-) x S_j, so
//   dv_b = T x v_b - u,                u = T x v-
//   da_b = T x a_b - beta - u x v_b,   beta = T x a- - u x v-
//   df_b = T x* f_b - I_b beta - Idot_b u - u x* h_b,   h_b = I_b v_b,
//          Idot_b = v_b x* I_b - I_b v_b x  (symmetric: the rate of I_b)
//   dF_b = T x* F_b - R_b,   R_b = Ic_b beta + Bc_b u + u x* Hc_b,
//          Ic, Bc, Hc = subtree sums of I, Idot, h.
// With (T x S_j).F + S_j.(T x* F) = 0:
//   j in D_k:                dtau_j/dq_k = -S_j . R_b(j) = -g1_j . beta_k + g2_j . u_k,
//                            g1_j = Ic_b S_j,  g2_j = S_j x* Hc_b - Bc_b S_j  (b = b(j))
//   j above k (not in D_k):  dtau_j/dq_k = S_j . P_k,  P_k = S_k x* F_b - R_b  (b = b(k))
//   j in k's group, j < k:   dtau_j/dq_k = S_j . P_k + (S_k x S_j) . F_b(k)
//
// Along v_k (k's body and subtree; Sdot_k and the Sdot_j of D_k change):
//   dv_b = S_k,   da_b = S_k x v_b + gamma_k,   gamma_k = (w_k + v-_k) x S_k,
//   df_b = I_b gamma_k + Idot_b S_k + S_k x* h_b
//   b(j) in b(k)'s subtree:  dtau_j/dv_k = g1_j . gamma_k - g2_j . S_k
//   b(j) above b(k):         dtau_j/dv_k = S_j . Q_k,  Q_k = Ic_b gamma_k + Bc_b S_k + S_k x* Hc_b
//   (the two agree when b(j) = b(k)).
//
// Unrelated pairs (neither dof above the other) give 0. Walking dof_parentid from each dof meets
// every related pair once: O(nv * depth), after O(nbody) forward and backward passes.
//
// A translation of body B's subtree (mjdiff_rneTranslationColumn: a geometry parameter that moves
// B's origin along a world direction e, as body:B:pos does, at fixed q, v, acc) is a virtual slide
// dof k at B's root with T = (0; e), q_k = 0, v_k = acc_k = 0: the formulas above with v-, a- of
// B's parent (v-_k = v_parent, a-_k = a_parent) and D_k = the dofs of B and its subtree give its
// column (no group shares it). Inserted before B's dof `first` instead (a joint anchor: the joint's
// axis and all after it move), v-, a- are those after B's groups before it (the forward pass's
// running values) and D_k = B's dofs from `first` on and the subtree's; B's dofs before it count
// as above:
//   u = T x v-, beta = T x a- - u x v-   (T x (w; v) = (0; e x w): only angular parts enter)
//   j in D_k:        dID_j = -g1_j . beta + g2_j . u
//   j above B:       dID_j = S_j . P,  P = T x* F_B - Ic_B beta - Bc_B u - u x* Hc_B
//   others:          0.

#include <math.h>
#include <mujoco/mujoco.h>

#include "compat.h"
#include "derivative.h"
#include "spatial.h"

//---------------------------------- spatial algebra -----------------------------------------------

// res = A m for a 6x6 row-major A
static void mul66(mjtNum res[6], const mjtNum A[36], const mjtNum m[6]) {
  for (int r = 0; r < 6; r++) {
    const mjtNum* row = A + 6 * r;
    res[r] = row[0] * m[0] + row[1] * m[1] + row[2] * m[2] + row[3] * m[3] + row[4] * m[4] +
             row[5] * m[5];
  }
}

static mjtNum dot6(const mjtNum a[6], const mjtNum b[6]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

// A += Idot = X + X^T with X = v x* I (6x6 row-major), the rate of an inertia moving with v
static void addInertRate(mjtNum A[36], const mjtNum I[10], const mjtNum v[6]) {
  mjtNum X[36], e[6] = {0}, col[6], xcol[6];
  for (int c = 0; c < 6; c++) {
    // column c of X = v x* (I e_c)
    e[c] = 1;
    spatial_mulInert(col, I, e);
    spatial_crossForce(xcol, v, col);
    e[c] = 0;
    for (int r = 0; r < 6; r++) {
      X[6 * r + c] = xcol[r];
    }
  }
  for (int r = 0; r < 6; r++) {
    for (int c = 0; c < 6; c++) {
      A[6 * r + c] += X[6 * r + c] + X[6 * c + r];
    }
  }
}

// number of dofs in the group starting at dof j (ball: 3, free: 3 rotations, else 1)
static int groupSize(const mjModel* m, int j) {
  int jnt = m->dof_jntid[j];
  int type = m->jnt_type[jnt];
  if (type == mjJNT_BALL) {
    return 3;
  }
  if (type == mjJNT_FREE && j - m->jnt_dofadr[jnt] >= 3) {
    return 3;
  }
  return 1;
}

// first dof of dof j's group
static int groupStart(const mjModel* m, int j) {
  int jnt = m->dof_jntid[j];
  int type = m->jnt_type[jnt];
  int adr = m->jnt_dofadr[jnt];
  if (type == mjJNT_BALL) {
    return adr;
  }
  if (type == mjJNT_FREE && j - adr >= 3) {
    return adr + 3;
  }
  return j;
}

//---------------------------------- derivative ----------------------------------------------------

// the passes' arrays: per body v, a, F, Ic, Hc, Bc; per dof u, beta, gamma
typedef struct rneWork_ {
  mjtNum *cv, *ca, *F, *Ic, *Hc, *Bc, *u, *beta, *gam;
} rneWork;

// scratch numbers of the passes
static int rneScratch(const mjModel* m) {
  return m->nbody * (6 + 6 + 6 + 10 + 6 + 36) + m->nv * 3 * 6;
}

// the passes' arrays on d's stack (rneScratch numbers, checked by the caller)
static void rneAlloc(const mjModel* m, mjData* d, rneWork* w) {
  int nbody = m->nbody, nv = m->nv;
  w->cv = compat_stackAllocNum(d, 6 * nbody);
  w->ca = compat_stackAllocNum(d, 6 * nbody);
  w->F = compat_stackAllocNum(d, 6 * nbody);
  w->Ic = compat_stackAllocNum(d, 10 * nbody);
  w->Hc = compat_stackAllocNum(d, 6 * nbody);
  w->Bc = compat_stackAllocNum(d, 36 * nbody);
  w->u = compat_stackAllocNum(d, 6 * nv);
  w->beta = compat_stackAllocNum(d, 6 * nv);
  w->gam = compat_stackAllocNum(d, 6 * nv);
}

// the forward pass (v_b, a_b of every body; u, beta, gamma of every dof) and the backward pass
// (subtree sums F, Ic, Hc, Bc) of the header, at the state in d with acceleration acc
static void rnePasses(const mjModel* m, const mjData* d, const mjtNum* acc, const rneWork* rw) {
  mjtNum *cv = rw->cv, *ca = rw->ca, *F = rw->F, *Ic = rw->Ic, *Hc = rw->Hc, *Bc = rw->Bc;
  mjtNum *u = rw->u, *beta = rw->beta, *gam = rw->gam;
  int nbody = m->nbody;
  const mjtNum* S = d->cdof;
  const mjtNum* qvel = d->qvel;

  // world: v = 0, a = (0; -gravity)
  mju_zero(cv, 6);
  mju_zero(ca, 6);
  if (!(m->opt.disableflags & mjDSBL_GRAVITY)) {
    mju_scl3(ca + 3, m->opt.gravity, -1);
  }

  // forward pass over bodies and their dof groups: v-, a-, u, beta, gamma; v_b, a_b
  for (int b = 1; b < nbody; b++) {
    mjtNum v[6], a[6], w[6], tmp[6], tmp2[6];
    mju_copy(v, cv + 6 * m->body_parentid[b], 6);
    mju_copy(a, ca + 6 * m->body_parentid[b], 6);
    int j = m->body_dofadr[b], end = j + m->body_dofnum[b];
    while (j < end) {
      int n = groupSize(m, j);

      // w = v- + sum_G S_l v_l
      mju_copy(w, v, 6);
      for (int l = j; l < j + n; l++) {
        mju_addToScl(w, S + 6 * l, qvel[l], 6);
      }

      // per dof of the group (v, a still hold v-, a-)
      for (int l = j; l < j + n; l++) {
        const mjtNum* Sl = S + 6 * l;

        // u = S x v-,  beta = S x a- - u x v-
        spatial_crossMotion(u + 6 * l, Sl, v);
        spatial_crossMotion(beta + 6 * l, Sl, a);
        spatial_crossMotion(tmp, u + 6 * l, v);
        mju_subFrom(beta + 6 * l, tmp, 6);

        // gamma = (w + v-) x S
        mju_add(tmp, w, v, 6);
        spatial_crossMotion(gam + 6 * l, tmp, Sl);
      }

      // a += sum_G (w x S_l) v_l + S_l acc_l;  v = w
      for (int l = j; l < j + n; l++) {
        spatial_crossMotion(tmp2, w, S + 6 * l);
        mju_addToScl(a, tmp2, qvel[l], 6);
        mju_addToScl(a, S + 6 * l, acc[l], 6);
      }
      mju_copy(v, w, 6);
      j += n;
    }
    mju_copy(cv + 6 * b, v, 6);
    mju_copy(ca + 6 * b, a, 6);

    // f = I a + v x* (I v),  h = I v,  Idot
    const mjtNum* I = d->cinert + 10 * b;
    spatial_mulInert(Hc + 6 * b, I, v);
    spatial_mulInert(F + 6 * b, I, a);
    spatial_crossForce(tmp, v, Hc + 6 * b);
    mju_addTo(F + 6 * b, tmp, 6);
    mju_copy(Ic + 10 * b, I, 10);
    mju_zero(Bc + 36 * b, 36);
    addInertRate(Bc + 36 * b, I, v);
  }

  // backward pass: subtree sums F, Ic, Hc, Bc
  for (int b = nbody - 1; b > 0; b--) {
    int p = m->body_parentid[b];
    if (p > 0) {
      mju_addTo(F + 6 * p, F + 6 * b, 6);
      mju_addTo(Ic + 10 * p, Ic + 10 * b, 10);
      mju_addTo(Hc + 6 * p, Hc + 6 * b, 6);
      mju_addTo(Bc + 36 * p, Bc + 36 * b, 36);
    }
  }
}

void mjdiff_rneDerivative(const mjModel* m, mjData* d, const mjtNum* acc, mjtNum* DidDq,
                          mjtNum* DidDv) {
  int nv = m->nv;
  if ((!DidDq && !DidDv) || nv == 0) {
    return;
  }

  // scratch: per body v, a, F, Ic, Hc, Bc; per dof u, beta, gamma, g1, g2, P, Q
  int need = rneScratch(m) + nv * 4 * 6;
  if (compat_stackSpace(d) < need) {
    // no room: report through the outputs rather than MuJoCo's fatal stack error
    for (int i = 0; i < nv * nv; i++) {
      if (DidDq) {
        DidDq[i] = NAN;
      }
      if (DidDv) {
        DidDv[i] = NAN;
      }
    }
    return;
  }
  mjdiffStackMark mark = compat_stackMark(d);
  rneWork rw;
  rneAlloc(m, d, &rw);
  mjtNum *F = rw.F, *Ic = rw.Ic, *Hc = rw.Hc, *Bc = rw.Bc, *u = rw.u, *beta = rw.beta;
  mjtNum* gam = rw.gam;
  mjtNum* g1 = compat_stackAllocNum(d, 6 * nv);
  mjtNum* g2 = compat_stackAllocNum(d, 6 * nv);
  mjtNum* P = compat_stackAllocNum(d, 6 * nv);
  mjtNum* Q = compat_stackAllocNum(d, 6 * nv);
  const mjtNum* S = d->cdof;
  rnePasses(m, d, acc, &rw);

  // per dof: g1 = Ic S,  g2 = S x* Hc - Bc S,  P = S x* F - R,  Q = Ic gamma + Bc S + S x* Hc
  for (int j = 0; j < nv; j++) {
    int b = m->dof_bodyid[j];
    const mjtNum* Sj = S + 6 * j;
    const mjtNum* Icb = Ic + 10 * b;
    const mjtNum* Bcb = Bc + 36 * b;
    const mjtNum* Hcb = Hc + 6 * b;
    mjtNum BS[6], SxH[6], tmp[6];
    mul66(BS, Bcb, Sj);
    spatial_crossForce(SxH, Sj, Hcb);
    spatial_mulInert(g1 + 6 * j, Icb, Sj);
    mju_sub(g2 + 6 * j, SxH, BS, 6);

    if (DidDq) {
      // P = S x* F - Ic beta - Bc u - u x* Hc
      spatial_crossForce(P + 6 * j, Sj, F + 6 * b);
      spatial_mulInert(tmp, Icb, beta + 6 * j);
      mju_subFrom(P + 6 * j, tmp, 6);
      mul66(tmp, Bcb, u + 6 * j);
      mju_subFrom(P + 6 * j, tmp, 6);
      spatial_crossForce(tmp, u + 6 * j, Hcb);
      mju_subFrom(P + 6 * j, tmp, 6);
    }
    if (DidDv) {
      // Q = Ic gamma + Bc S + S x* Hc
      spatial_mulInert(Q + 6 * j, Icb, gam + 6 * j);
      mju_addTo(Q + 6 * j, BS, 6);
      mju_addTo(Q + 6 * j, SxH, 6);
    }
  }

  // assemble: each dof hi with itself and the dofs lo above it (dof_parentid chain)
  if (DidDq) {
    mju_zero(DidDq, nv * nv);
  }
  if (DidDv) {
    mju_zero(DidDv, nv * nv);
  }
  for (int hi = 0; hi < nv; hi++) {
    const mjtNum* Shi = S + 6 * hi;
    if (DidDq) {
      DidDq[hi * nv + hi] = dot6(Shi, P + 6 * hi);
    }
    if (DidDv) {
      DidDv[hi * nv + hi] = dot6(Shi, Q + 6 * hi);
    }
    int ghi = groupStart(m, hi);
    for (int lo = m->dof_parentid[hi]; lo >= 0; lo = m->dof_parentid[lo]) {
      const mjtNum* Slo = S + 6 * lo;
      if (DidDq) {
        // hi in D_lo;  lo above hi, or in hi's group
        DidDq[hi * nv + lo] = dot6(g2 + 6 * hi, u + 6 * lo) - dot6(g1 + 6 * hi, beta + 6 * lo);
        mjtNum val = dot6(Slo, P + 6 * hi);
        if (groupStart(m, lo) == ghi) {
          mjtNum SxS[6];
          spatial_crossMotion(SxS, Shi, Slo);
          val += dot6(SxS, F + 6 * m->dof_bodyid[hi]);
        }
        DidDq[lo * nv + hi] = val;
      }
      if (DidDv) {
        DidDv[hi * nv + lo] = dot6(g1 + 6 * hi, gam + 6 * lo) - dot6(g2 + 6 * hi, Slo);
        DidDv[lo * nv + hi] = dot6(Slo, Q + 6 * hi);
      }
    }
  }

  compat_stackFree(d, mark);
}

//---------------------------------- translation of a subtree --------------------------------------

int mjdiff_rneTranslationColumn(const mjModel* m, mjData* d, const mjtNum* acc, int body,
                                int first, const mjtNum e[3], mjtNum* col) {
  int nv = m->nv, nbody = m->nbody;
  if (nv == 0 || body <= 0 || body >= nbody) return 0;
  int adr = m->body_dofadr[body], num = m->body_dofnum[body];
  if (first < 0 || num == 0) first = adr;
  if (first < adr || first > adr + num) return -1;
  if (first < adr + num && groupStart(m, first) != first) return -1;  // inside a ball's group
  if (compat_stackSpace(d) < rneScratch(m)) return -1;
  mjdiffStackMark mark = compat_stackMark(d);
  rneWork rw;
  rneAlloc(m, d, &rw);
  mjtNum *cv = rw.cv, *ca = rw.ca, *F = rw.F, *Ic = rw.Ic, *Hc = rw.Hc, *Bc = rw.Bc;
  const mjtNum* S = d->cdof;
  rnePasses(m, d, acc, &rw);

  // v-, a- at the insertion: B's parent's, then B's groups before `first` (the forward pass)
  int par = m->body_parentid[body];
  mjtNum v[6], a[6], w[6], tmp[6];
  mju_copy(v, cv + 6 * par, 6);
  mju_copy(a, ca + 6 * par, 6);
  for (int j = adr; j < first;) {
    int n = groupSize(m, j);
    mju_copy(w, v, 6);
    for (int l = j; l < j + n; l++) mju_addToScl(w, S + 6 * l, d->qvel[l], 6);
    for (int l = j; l < j + n; l++) {
      spatial_crossMotion(tmp, w, S + 6 * l);
      mju_addToScl(a, tmp, d->qvel[l], 6);
      mju_addToScl(a, S + 6 * l, acc[l], 6);
    }
    mju_copy(v, w, 6);
    j += n;
  }

  // the virtual slide: T = (0; e)
  mjtNum T[6] = {0, 0, 0, e[0], e[1], e[2]}, uk[6], bk[6];
  spatial_crossMotion(uk, T, v);
  spatial_crossMotion(bk, T, a);
  spatial_crossMotion(tmp, uk, v);
  mju_subFrom(bk, tmp, 6);

  // D: B's dofs from `first` on and the subtree's: -g1 . beta + g2 . u, g1 = Ic S,
  // g2 = S x* Hc - Bc S (at b(j))
  for (int j = 0; j < nv; j++) {
    int b = m->dof_bodyid[j], in = 0;
    for (int q = b; q > 0; q = m->body_parentid[q]) {
      if (q == body) {
        in = 1;
        break;
      }
    }
    if (!in || (b == body && j < first)) continue;
    const mjtNum* Sj = S + 6 * j;
    mjtNum g1[6], g2[6], BS[6];
    spatial_mulInert(g1, Ic + 10 * b, Sj);
    spatial_crossForce(g2, Sj, Hc + 6 * b);
    mul66(BS, Bc + 36 * b, Sj);
    mju_subFrom(g2, BS, 6);
    col[j] -= dot6(g2, uk) - dot6(g1, bk);
  }

  // dofs above B: S_j . P, P = T x* F_B - Ic_B beta - Bc_B u - u x* Hc_B
  mjtNum P[6];
  spatial_crossForce(P, T, F + 6 * body);
  spatial_mulInert(tmp, Ic + 10 * body, bk);
  mju_subFrom(P, tmp, 6);
  mul66(tmp, Bc + 36 * body, uk);
  mju_subFrom(P, tmp, 6);
  spatial_crossForce(tmp, uk, Hc + 6 * body);
  mju_subFrom(P, tmp, 6);
  // above: B's dofs before `first`, then the parents' chain
  int last = first > adr ? first - 1 : -1;
  for (int q = par; q > 0 && last < 0; q = m->body_parentid[q]) {
    if (m->body_dofnum[q]) last = m->body_dofadr[q] + m->body_dofnum[q] - 1;
  }
  for (int j = last; j >= 0; j = m->dof_parentid[j]) col[j] -= dot6(S + 6 * j, P);
  compat_stackFree(d, mark);
  return 0;
}
