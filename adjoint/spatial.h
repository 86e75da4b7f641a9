// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Spatial algebra shared by the files of adjoint/ (static inline: no symbols of their own).
//
// Motion m = [w; v], force f = [n; f], both about one point fixed in the world:
//   m1 x m2  = [w1 x w2; w1 x v2 + v1 x w2]                  motion cross product
//   m x* f   = [w x n + v x f; w x f]                        force cross product
//   I m      = [Irot w + c x v; mass v - c x w]              10-number inertia (Ixx Iyy Izz Ixy
//                                                            Ixz Iyz, c = mass (com - point), mass)
//   m at p   = v + w x p                                     velocity of the point p
//   about 0  = [w; v - w x c]                                a motion about c moved to the origin
// About the world origin (so that nothing moves with q but the bodies):
//   cdof0_j  = cdof_j moved from its tree's subtree com to the origin
//   J_b      = sum_{j in chain(b)} cdof0_j e_j'              (6 x nv) body Jacobian
//   J_p      = J_lin - [p]x J_ang                            (3 x nv) Jacobian of a point p of b
//   dv_p/dq  = dv0 + dw x p + w x J_p                        material point velocity, along dq
//   d cdof0_j / d q_k = cdof0_k x cdof0_j                    for k that moves j (spatial_movers)
//   V_b      = sum_{j in chain(b)} cdof0_j qvel_j            body velocity about the origin, so
//   dV_b/dq_k = sum_{j in chain(b), k moves j} (cdof0_k x cdof0_j) qvel_j
//   f = J' W: d(J_j' W)/dq_k = (cdof0_k x cdof0_j) . Wsub(body(j))   the dJ' W term, with Wsub(b)
//                                                            the sum of the wrenches W (about
//                                                            the origin) on the subtree of b
// SO(3) at the rotation vector r, th = |r|, K = [r]x:
//   J_l^-1(r) = I - K / 2 + c2 K^2,  c2 = (1 - th sin(th) / (2 (1 - cos(th)))) / th^2
//               (1/12 + th^2/720 for th < 1e-4);   J_r^-1(r) = J_l^-1(-r)

#ifndef MJDIFF_ADJOINT_SPATIAL_H_
#define MJDIFF_ADJOINT_SPATIAL_H_

#include <math.h>
#include <mujoco/mujoco.h>

//---------------------------------- spatial vectors -----------------------------------------------

// res = a x b (motion cross motion)
static inline void spatial_crossMotion(mjtNum res[6], const mjtNum a[6], const mjtNum b[6]) {
  res[0] = a[1] * b[2] - a[2] * b[1];
  res[1] = a[2] * b[0] - a[0] * b[2];
  res[2] = a[0] * b[1] - a[1] * b[0];
  res[3] = (a[1] * b[5] - a[2] * b[4]) + (a[4] * b[2] - a[5] * b[1]);
  res[4] = (a[2] * b[3] - a[0] * b[5]) + (a[5] * b[0] - a[3] * b[2]);
  res[5] = (a[0] * b[4] - a[1] * b[3]) + (a[3] * b[1] - a[4] * b[0]);
}

// res = a x* f (motion cross force)
static inline void spatial_crossForce(mjtNum res[6], const mjtNum a[6], const mjtNum f[6]) {
  res[0] = (a[1] * f[2] - a[2] * f[1]) + (a[4] * f[5] - a[5] * f[4]);
  res[1] = (a[2] * f[0] - a[0] * f[2]) + (a[5] * f[3] - a[3] * f[5]);
  res[2] = (a[0] * f[1] - a[1] * f[0]) + (a[3] * f[4] - a[4] * f[3]);
  res[3] = a[1] * f[5] - a[2] * f[4];
  res[4] = a[2] * f[3] - a[0] * f[5];
  res[5] = a[0] * f[4] - a[1] * f[3];
}

// res = I m for a 10-number inertia (Ixx Iyy Izz Ixy Ixz Iyz, c = mass * (com - point), mass):
// (Irot w + c x v; mass v - c x w)
static inline void spatial_mulInert(mjtNum res[6], const mjtNum I[10], const mjtNum m[6]) {
  const mjtNum* c = I + 6;
  res[0] = I[0] * m[0] + I[3] * m[1] + I[4] * m[2] + c[1] * m[5] - c[2] * m[4];
  res[1] = I[3] * m[0] + I[1] * m[1] + I[5] * m[2] + c[2] * m[3] - c[0] * m[5];
  res[2] = I[4] * m[0] + I[5] * m[1] + I[2] * m[2] + c[0] * m[4] - c[1] * m[3];
  res[3] = I[9] * m[3] - c[1] * m[2] + c[2] * m[1];
  res[4] = I[9] * m[4] - c[2] * m[0] + c[0] * m[2];
  res[5] = I[9] * m[5] - c[0] * m[1] + c[1] * m[0];
}

// res = v + w x p: the motion m = [w; v] at the point p (velocity of a point fixed to a body)
static inline void spatial_pointMotion(mjtNum res[3], const mjtNum m[6], const mjtNum p[3]) {
  mjtNum t[3];
  mju_cross(t, m, p);
  mju_add3(res, m + 3, t);
}

// res = [w; v - w x c]: the motion m = [w; v] about the point c, moved to the origin
static inline void spatial_toOrigin(mjtNum res[6], const mjtNum m[6], const mjtNum c[3]) {
  mjtNum t[3];
  mju_cross(t, m, c);
  mju_copy(res, m, 6);
  mju_subFrom3(res + 3, t);
}

//---------------------------------- the kinematic tree --------------------------------------------

// MuJoCo's cdof moved to the world origin (nv x 6)
static inline void spatial_cdof0(const mjModel* m, const mjData* d, mjtNum* cdof0) {
  for (int j = 0; j < m->nv; j++) {
    const mjtNum* c = d->subtree_com + 3 * m->body_rootid[m->dof_bodyid[j]];
    spatial_toOrigin(cdof0 + 6 * j, d->cdof + 6 * j, c);
  }
}

// the dofs k that move the axis of dof j: the later dofs of its rotation group (the three of a
// ball, the three rotations of a free joint), then its ancestors; returns their number
static inline int spatial_movers(const mjModel* m, int j, int* list) {
  int n = 0, jt = m->dof_jntid[j], type = m->jnt_type[jt], adr = m->jnt_dofadr[jt], end = -1;
  if (type == mjJNT_BALL) end = adr + 3;
  if (type == mjJNT_FREE && j >= adr + 3) end = adr + 6;
  for (int k = j + 1; k < end; k++) list[n++] = k;
  for (int p = m->dof_parentid[j]; p >= 0; p = m->dof_parentid[p]) list[n++] = p;
  return n;
}

// the last dof of the chain from body b to the root (of the nearest body with dofs), or -1; the
// chain continues along dof_parentid
static inline int spatial_chainLastDof(const mjModel* m, int b) {
  int j = -1;
  for (int bb = b; bb > 0 && j < 0; bb = m->body_parentid[bb]) {
    if (m->body_dofnum[bb]) j = m->body_dofadr[bb] + m->body_dofnum[bb] - 1;
  }
  return j;
}

// body velocity about the origin V_b = [w; v0] (cvel moved from the tree's com)
static inline void spatial_bodyVel(const mjModel* m, const mjData* d, int b, mjtNum V[6]) {
  spatial_toOrigin(V, d->cvel + 6 * b, d->subtree_com + 3 * m->body_rootid[b]);
}

// dof j's share of a body velocity's derivative: dV[:, k] += (cdof0_k x cdof0_j) qvel_j for the
// dofs k that move j (dV 6 x nv, row-major; list is scratch, nv ints)
static inline void spatial_addVelDqDof(const mjModel* m, const mjData* d, const mjtNum* cdof0,
                                       int j, mjtNum* dV, int* list) {
  int nv = m->nv;
  if (d->qvel[j] == 0) return;
  int n = spatial_movers(m, j, list);
  for (int i = 0; i < n; i++) {
    int k = list[i];
    mjtNum c[6];
    spatial_crossMotion(c, cdof0 + 6 * k, cdof0 + 6 * j);
    for (int r = 0; r < 6; r++) dV[nv * r + k] += c[r] * d->qvel[j];
  }
}

// the dJ' W term of the wrenches Wsub (nbody x 6, about the origin, one per body; summed over
// subtrees in place): DfDq_jk += (cdof0_k x cdof0_j) . Wsub(body(j)); list is scratch (nv ints)
static inline void spatial_addWrenchJacobianTerm(const mjModel* m, const mjtNum* cdof0,
                                                 mjtNum* Wsub, int* list, mjtNum* DfDq) {
  int nv = m->nv;
  for (int b = m->nbody - 1; b > 0; b--) {
    int parent = m->body_parentid[b];
    if (parent > 0) {
      for (int i = 0; i < 6; i++) Wsub[6 * parent + i] += Wsub[6 * b + i];
    }
  }
  for (int j = 0; j < nv; j++) {
    const mjtNum* W = Wsub + 6 * m->dof_bodyid[j];
    if (mju_isZero((mjtNum*)W, 6)) continue;
    int n = spatial_movers(m, j, list);
    for (int i = 0; i < n; i++) {
      int k = list[i];
      mjtNum c[6];
      spatial_crossMotion(c, cdof0 + 6 * k, cdof0 + 6 * j);
      DfDq[nv * j + k] += mju_dot(c, W, 6);
    }
  }
}

// J_b (6 x nv) of body b about the origin, from cdof0 (nv x 6)
static inline void spatial_bodyJacobian(const mjModel* m, const mjtNum* cdof0, int b, mjtNum* J) {
  int nv = m->nv;
  mju_zero(J, 6 * nv);
  for (int j = spatial_chainLastDof(m, b); j >= 0; j = m->dof_parentid[j]) {
    for (int r = 0; r < 6; r++) J[nv * r + j] = cdof0[6 * j + r];
  }
}

// column k of the point Jacobian J_p = J_lin - [p]x J_ang (3) from a body Jacobian J (6 x nv)
static inline void spatial_pointJacobianCol(const mjtNum* J, int nv, int k, const mjtNum p[3],
                                            mjtNum out[3]) {
  mjtNum c[6];
  for (int r = 0; r < 6; r++) c[r] = J[nv * r + k];
  spatial_pointMotion(out, c, p);
}

// the point Jacobian J_p = J_lin - [p]x J_ang (3 x nv) from a body Jacobian J (6 x nv)
static inline void spatial_pointJacobian(int nv, const mjtNum* J, const mjtNum p[3], mjtNum* Jp) {
  for (int k = 0; k < nv; k++) {
    mjtNum col[3];
    spatial_pointJacobianCol(J, nv, k, p, col);
    for (int r = 0; r < 3; r++) Jp[nv * r + k] = col[r];
  }
}

// one column of the material point velocity's derivative: out = dv0 + dw x p + w x jp, from the
// body velocity's derivative dV = [dw; dv0] (6) and velocity V = [w; v0] (6), the point p and the
// column jp (3) of its point Jacobian
static inline void spatial_pointVelDq(mjtNum out[3], const mjtNum dV[6], const mjtNum V[6],
                                      const mjtNum p[3], const mjtNum jp[3]) {
  mjtNum t[3];
  spatial_pointMotion(out, dV, p);
  mju_cross(t, V, jp);
  mju_addTo3(out, t);
}

//---------------------------------- SO(3) ---------------------------------------------------------

// inverse of the left Jacobian of SO(3) at the rotation vector r (3 x 3, row-major)
static inline void spatial_leftJacobianInverse(const mjtNum r[3], mjtNum Jinv[9]) {
  mjtNum th = mju_norm3(r), K[9] = {0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0}, K2[9];
  mju_mulMatMat(K2, K, K, 3, 3, 3);
  mjtNum c2;
  if (th < 1e-4) {
    c2 = 1.0 / 12 + th * th / 720;
  } else {
    c2 = (1 - th * sin(th) / (2 * (1 - cos(th)))) / (th * th);
  }
  for (int i = 0; i < 9; i++) Jinv[i] = (i % 4 == 0) - 0.5 * K[i] + c2 * K2[i];
}

// inverse of the right Jacobian of SO(3) at r: J_r^-1(r) = J_l^-1(-r)
static inline void spatial_rightJacobianInverse(const mjtNum r[3], mjtNum Jinv[9]) {
  mjtNum nr[3] = {-r[0], -r[1], -r[2]};
  spatial_leftJacobianInverse(nr, Jinv);
}

#endif  // MJDIFF_ADJOINT_SPATIAL_H_
