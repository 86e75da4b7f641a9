// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Derivative of the exact convex-pair contact geometry (plugin/convex.c): the Jacobian of
// y = (dist, n, pos) in the rigid motions z = (dx1, dth1, dx2, dth2) of the two geoms.
//
// Forward (convex.c): phi = max_{|u|=1} -h1(u) - h2(-u), witnesses x_i = c_i(dir_i) + E_i a_i on
// the active features (dir_1 = u, dir_2 = -u), solving
//   F1 = c2(-u) + E2 a2 - c1(u) - E1 a1 - phi u = 0,  F2 = E1' u = 0,  F3 = E2' u = 0,
//   F4 = (u'u - 1)/2 = 0.
// A rigid motion of geom i moves a point fixed to it by dx_i + dth_i x (x - p_i), turns its
// directions by dth_i x e, and turns the support direction seen in its frame by -dth_i x dir_i, so
// at fixed (u, a):
//   d c1 = dx1 + dth1 x (c1 - p1) - H1 (dth1 x u),   d c2 = dx2 + dth2 x (c2 - p2) + H2 (dth2 x u)
//   d E_i = dth_i x E_i
//   dF1/dz = dx2 + dth2 x (x2 - p2) + H2 (dth2 x u) - dx1 - dth1 x (x1 - p1) + H1 (dth1 x u)
//   dF2/dz = -E1' (dth1 x u),   dF3/dz = -E2' (dth2 x u),   dF4/dz = 0
// Implicit function theorem: M (du, da1, da2, dphi) = -dF/dz with M of mjdiff_convexSystem
// (solved by the same minimum-norm least squares, so that degenerate features, where the witness
// is not unique, are differentiated as the forward chooses them). Outputs:
//   ddist = u.(dx2 + dth2 x (x2 - p2)) - u.(dx1 + dth1 x (x1 - p1))      (envelope theorem; equals
//           dphi of the system where the features are not degenerate)
//   dn    = du
//   dx1   = dx1 + dth1 x (x1 - p1) - H1 (dth1 x u) + H1 du + E1 da1
//   dx2   = dx2 + dth2 x (x2 - p2) + H2 (dth2 x u) - H2 du + E2 da2
//   dpos  = (dx1 + dx2)/2
// Valid where the active features do not switch (the contact set is locally stable). Case by
// case this covers smooth-smooth (k1 = k2 = 0: the support Hessians), vertex-face, face-vertex,
// edge-edge (H = 0, k1 + k2 = 2), the mixed smooth-polytope cases (capsule segment, cylinder side
// line and rim, box or mesh features against sphere, ellipsoid or cylinder rim) and separated
// vertex-vertex / vertex-edge pairs (k1 + k2 < 2 with H = 0: M stays regular through -phi I).
// Height fields: geom 1 is the triangular prism of the grid (a polytope fixed to the field's
// frame) that produced the contact, found again among mjc_ConvexHField's candidates.

#include <math.h>
#include <string.h>

#include "compat.h"
#include "convex.h"
#include "derivative.h"

void mjdiff_convexJacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r,
                           mjtNum J[7 * 12]) {
  mjtNum M[64], B[8 * 12];
  int n = mjdiff_convexSystem(r, M), k1 = r->f1.k, k2 = r->f2.k;
  mjtNum r1[3], r2[3];
  mju_sub3(r1, r->x1, g1->pos);
  mju_sub3(r2, r->x2, g2->pos);
  mju_zero(J, 7 * 12);
  mju_zero(B, 8 * 12);

  // motion of each witness at fixed (u, a), per column of z: m1, m2 (3 x 12); B = -dF/dz
  mjtNum m1[3 * 12], m2[3 * 12];
  mju_zero(m1, 36);
  mju_zero(m2, 36);
  for (int c = 0; c < 12; c++) {
    mjtNum e[3] = {0, 0, 0}, t[3], hu[3], dth_u[3];
    e[c % 3] = 1;
    int geom = c / 6, rot = (c / 3) % 2;
    mjtNum* mm = geom ? m2 : m1;
    const cvxFeature* f = geom ? &r->f2 : &r->f1;
    mjtNum dF[8] = {0};
    if (!rot) {
      for (int i = 0; i < 3; i++) mm[12 * i + c] = e[i];
    } else {
      // dth x (x - p) -+ H (dth x u)
      mju_cross(t, e, geom ? r2 : r1);
      mju_cross(dth_u, e, r->u);
      mju_mulMatVec(hu, f->H, dth_u, 3, 3);
      for (int i = 0; i < 3; i++) mm[12 * i + c] = t[i] + (geom ? 1 : -1) * hu[i];
      // the normal conditions: -E' (dth x u)
      int off = geom ? 3 + k1 : 3;
      for (int j = 0; j < f->k; j++) dF[off + j] = -mju_dot3(f->E + 3 * j, dth_u);
    }
    for (int i = 0; i < 3; i++) dF[i] = m2[12 * i + c] - m1[12 * i + c];
    for (int i = 0; i < n; i++) B[12 * i + c] = -dF[i];
  }
  mjdiff_convexSolve(M, n, B, 12);

  for (int c = 0; c < 12; c++) {
    mjtNum du[3] = {B[c], B[12 + c], B[24 + c]}, h1[3], h2[3];
    mju_mulMatVec(h1, r->f1.H, du, 3, 3);
    mju_mulMatVec(h2, r->f2.H, du, 3, 3);
    // ddist: envelope
    mjtNum dd = 0;
    for (int i = 0; i < 3; i++) {
      // the rigid part of the witness motion (without the H terms, which are normal to u)
      dd += r->u[i] * (m2[12 * i + c] - m1[12 * i + c]);
    }
    J[c] = dd;
    for (int i = 0; i < 3; i++) {
      J[12 * (1 + i) + c] = du[i];
      mjtNum dx1 = m1[12 * i + c] + h1[i], dx2 = m2[12 * i + c] - h2[i];
      for (int j = 0; j < k1; j++) dx1 += r->f1.E[3 * j + i] * B[12 * (3 + j) + c];
      for (int j = 0; j < k2; j++) dx2 += r->f2.E[3 * j + i] * B[12 * (3 + k1 + j) + c];
      J[12 * (4 + i) + c] = 0.5 * (dx1 + dx2);
    }
  }
}

int mjdiff_convexGeomJacobian(const mjModel* m, const mjData* d, const mjContact* con,
                              mjtNum J[7 * 12]) {
  mju_zero(J, 7 * 12);
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  if (g1 < 0 || g2 < 0 || g1 >= m->ngeom || g2 >= m->ngeom) return -1;
  int kind = mjdiff_convexPair(m->geom_type[g1], m->geom_type[g2]);
  if (!kind) return -1;
  cvxGeom a, b;
  cvxResult r;
  if (kind == 2) {
    // height field: the candidate prism whose exact solution is con
    if (mjdiff_convexGeom(m, d, g2, &b)) return -1;
    mjtNum margin = mjdiff_convexMargin(m, con);
    int total = mjdiff_convexPrisms(m, d, g1, g2, margin, 0, &a, 0);
    for (int q = 0; q < total; q++) {
      mjdiff_convexPrisms(m, d, g1, g2, margin, q, &a, 1);
      if (mjdiff_convexDistance(&a, &b, &r)) continue;
      mjtNum tol = 1e-9 * (a.scale + b.scale), pos[3];
      for (int i = 0; i < 3; i++) pos[i] = 0.5 * (r.x1[i] + r.x2[i]);
      if (fabs(r.phi - con->dist) <= tol && mju_dist3(pos, con->pos) <= tol &&
          mju_dist3(r.u, con->frame) <= 1e-9) {
        mjdiff_convexJacobian(&a, &b, &r, J);
        return 0;
      }
    }
    return -1;
  }
  if (mjdiff_convexGeom(m, d, g1, &a) || mjdiff_convexGeom(m, d, g2, &b)) return -1;
  if (mjdiff_convexDistance(&a, &b, &r)) return -1;

  // con must be this solution (mjdiff_collide wrote it at these poses)
  mjtNum tol = 1e-9 * (a.scale + b.scale), pos[3];
  for (int i = 0; i < 3; i++) pos[i] = 0.5 * (r.x1[i] + r.x2[i]);
  if (fabs(r.phi - con->dist) > tol || mju_dist3(pos, con->pos) > tol ||
      mju_dist3(r.u, con->frame) > 1e-9) {
    return -1;
  }
  mjdiff_convexJacobian(&a, &b, &r, J);
  return 0;
}
