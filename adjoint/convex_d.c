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
// frame) that produced the contact: contact j of the pair's run of n contacts in d->contact is the
// solution of prism j of mjdiff_convexHFieldSelect(n) (the forward's selection, convex.c). Not by
// matching values: a geom whose lowest point is over an edge shared by two prisms touches both at
// the same point with the same depth and normal (to roundoff), and matching took the first prism
// for both contacts.
// Top-edge kink. There each prism's contact is not differentiable: with the witness of geom 2 on
// the far side of the edge it is the edge solution (u turns as geom 2 moves; f1 the edge, k1 = 1),
// on the near side the face solution (u = n the face normal, f1 the top face, k1 = 2); exactly at
// the edge both solve F1 .. F4 with the same (u, phi, x1, x2), and roundoff decides which the
// forward returns. The neighbour prism has the same two branches swapped (on a flat field the same
// plane and the same edge line), so the sum of the two contacts is smooth across the edge while
// either one-sided choice per prism can double or drop a branch. At the kink
//   u . n >= 1 - 1e-6,  k2 = 0,  x2 = s2(-n) within 1e-9 (L1 + L2) of the interior of a top edge
// (the same test at the same point for both prisms) the Jacobian is the symmetric derivative, the
// mean of the two branches: J = (J(face) + J(edge))/2, each from the system above with f1 replaced
// (a1 the witness x1's coordinates on that feature). Each contact's J is then its central
// difference, and the pair's sum the sum's derivative. (Over a grid vertex, where more branches
// meet, the sum is not differentiable: left as the solve returns it.)

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "compat.h"
#include "convex.h"
#include "derivative.h"

static void jacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r, mjtNum J[7 * 12]) {
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

// feature f of geom g with vertex set v[0 .. nv - 1] at the solution r (support direction dir):
// c, E, and the witness x's coordinates a = argmin |c + E a - x| (x lies on the feature); 0 if
// degenerate
static int featureAt(const cvxGeom* g, const mjtNum dir[3], const int* v, int nv, const mjtNum x[3],
                     cvxFeature* f) {
  memset(f, 0, sizeof(*f));
  f->nv = nv;
  for (int i = 0; i < nv; i++) f->v[i] = v[i];
  if (!mjdiff_convexFeature(g, dir, f) || f->nv != nv) return 0;
  mjtNum d[3], G[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  mju_sub3(d, x, f->c);
  for (int i = 0; i < f->k; i++) {
    b[i] = mju_dot3(f->E + 3 * i, d);
    for (int j = 0; j < f->k; j++) G[2 * i + j] = mju_dot3(f->E + 3 * i, f->E + 3 * j);
  }
  if (f->k == 1) {
    f->a[0] = b[0] / G[0];
  } else if (f->k == 2) {
    mjtNum det = G[0] * G[3] - G[1] * G[2];
    f->a[0] = (G[3] * b[0] - G[1] * b[1]) / det;
    f->a[1] = (G[0] * b[1] - G[2] * b[0]) / det;
  }
  return 1;
}

// height-field prism g1 at a top-edge kink: the witness of the top-face solution (normal n of the
// top triangle, geom 2's support point in -n) within band of the interior of one of its edges, with
// u = n and geom 2 at a single point (k2 = 0). Then the face branch rf (f1 the top face) and the
// edge branch re (f1 that edge) are both solutions at r; 1 if so.
static int prismKink(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r, cvxResult* rf,
                     cvxResult* re) {
  if (g1->type != mjGEOM_HFIELD || r->f2.k != 0) return 0;
  mjtNum T[3][3], e1[3], e2[3], n[3], up[3] = {g1->mat[2], g1->mat[5], g1->mat[8]};
  for (int j = 0; j < 3; j++) {
    mju_rotVecMat(T[j], g1->pv[3 + j], g1->mat);
    mju_addTo3(T[j], g1->pos);
  }
  mju_sub3(e1, T[1], T[0]);
  mju_sub3(e2, T[2], T[0]);
  mju_cross(n, e1, e2);
  if (mju_normalize3(n) < mjMINVAL) return 0;
  if (mju_dot3(n, up) < 0) mju_scl3(n, n, -1);
  if (mju_dot3(n, r->u) < 1 - 1e-6) return 0;
  mjtNum band = 1e-9 * (g1->scale + g2->scale), mn[3], x[3];
  mju_scl3(mn, n, -1);
  mjdiff_convexSupport(g2, mn, x);
  int best = -1;
  mjtNum bs = mjMAXVAL;
  for (int j = 0; j < 3; j++) {
    const mjtNum *A = T[j], *B = T[(j + 1) % 3], *C = T[(j + 2) % 3];
    mjtNum e[3], w[3], ac[3], ax[3];
    mju_sub3(e, B, A);
    mjtNum len = mju_norm3(e);
    mju_cross(w, n, e);
    mju_normalize3(w);
    mju_sub3(ac, C, A);
    if (mju_dot3(w, ac) < 0) mju_scl3(w, w, -1);
    mju_sub3(ax, x, A);
    mjtNum sd = fabs(mju_dot3(w, ax)), t = mju_dot3(e, ax) / (len * len);
    if (sd < bs && t > band / len && t < 1 - band / len) {
      bs = sd;
      best = j;
    }
  }
  if (best < 0 || bs > band) return 0;
  int face[3] = {3, 4, 5}, edge[2] = {3 + best, 3 + (best + 1) % 3};
  *rf = *r;
  *re = *r;
  return featureAt(g1, r->u, face, 3, r->x1, &rf->f1) &&
         featureAt(g1, r->u, edge, 2, r->x1, &re->f1);
}

void mjdiff_convexJacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r,
                           mjtNum J[7 * 12]) {
  cvxResult rf, re;
  if (!prismKink(g1, g2, r, &rf, &re)) {
    jacobian(g1, g2, r, J);
    return;
  }
  // the symmetric derivative at the kink: the mean of the face and edge branches
  mjtNum Je[7 * 12];
  jacobian(g1, g2, &rf, J);
  jacobian(g1, g2, &re, Je);
  for (int i = 0; i < 7 * 12; i++) J[i] = 0.5 * (J[i] + Je[i]);
}

static int samePair(const mjContact* con, int g1, int g2) {
  return compat_contactGeom1(con) == g1 && compat_contactGeom2(con) == g2;
}

// the index of con in d->contact: con's own if it points into the array, else the first entry
// equal to it (geoms, dist, pos, frame); -1 if none
static int contactIndex(const mjData* d, const mjContact* con) {
  uintptr_t p = (uintptr_t)con, p0 = (uintptr_t)d->contact;
  if (p >= p0 && p < p0 + (uintptr_t)d->ncon * sizeof(mjContact) &&
      (p - p0) % sizeof(mjContact) == 0) {
    return (int)((p - p0) / sizeof(mjContact));
  }
  for (int i = 0; i < d->ncon; i++) {
    const mjContact* c = d->contact + i;
    if (samePair(c, compat_contactGeom1(con), compat_contactGeom2(con)) && c->dist == con->dist &&
        !memcmp(c->pos, con->pos, sizeof(c->pos)) &&
        !memcmp(c->frame, con->frame, 3 * sizeof(mjtNum))) {
      return i;
    }
  }
  return -1;
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
    // height field: the prism that produced con, by con's place in the pair's run of contacts
    int i = contactIndex(d, con);
    if (i < 0 || mjdiff_convexGeom(m, d, g2, &b)) return -1;
    int start = i, end = i + 1;
    while (start > 0 && samePair(d->contact + start - 1, g1, g2)) start--;
    while (end < d->ncon && samePair(d->contact + end, g1, g2)) end++;
    mjtNum margin = mjdiff_contactMargin(m, con);
    int idx[mjMAXCONPAIR];
    if (end - start > mjMAXCONPAIR ||
        mjdiff_convexHFieldSelect(m, d, g1, g2, margin, end - start, idx, NULL) !=
            end - start) {
      return -1;
    }
    mjdiff_convexPrisms(m, d, g1, g2, margin, idx[i - start], &a, 1);
  } else if (mjdiff_convexGeom(m, d, g1, &a) || mjdiff_convexGeom(m, d, g2, &b)) {
    return -1;
  }
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
