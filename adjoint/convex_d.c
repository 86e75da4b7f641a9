// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Derivative of the exact convex-pair contact geometry (plugin/convex.c): the Jacobian of
// y = (dist, n, pos) in the rigid motions z = (dx1, dth1, dx2, dth2) of the two geoms and in their
// sizes s = (s1[0..2], s2[0..2]) (the geom_size rows).
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
//
// Sizes. A size entry s_i[k] moves geom i's feature at fixed support direction and coordinates:
// x_i = c_i(dir_i; s_i) + E_i(s_i) a_i, so the same system with the right-hand sides
//   dF1/ds = m2 - m1,  m_i = dc_i/ds + (dE_i/ds) a_i   (the witness motion at fixed (u, a)),
//   dF2/ds = (dE1/ds)' u,  dF3/ds = (dE2/ds)' u,  dF4/ds = 0
// (zero for every feature here, the flat directions scale but do not turn; kept for the form), and
//   ddist = u.(m2 - m1)   (envelope: dh_i/ds = dir_i.dc_i/ds)
//   dx1 = m1 + H1 du + E1 da1,  dx2 = m2 - H2 du + E2 da2,  dn = du,  dpos = (dx1 + dx2)/2.
// Per primitive (world frame; l = R' dir, x, y, z the geom's axes, e_k unit vectors, mode as in
// convex.c; d/dr etc. below are dc/ds and dE/ds, with the witness motion m = dc/ds + dE/ds a):
//   sphere (r = s[0])         c = p + r dir:                      dc/dr = dir
//   capsule (r, h = s[0..1])  c = p + r dir + mode h z, E = h z:  dc/dr = dir, dc/dh = mode z
//                             (end caps), dE/dh = z (segment: m = a0 z)
//   ellipsoid (S = diag(s))   c = p + R S q, q = S l/|S l|:
//                             dc/ds_k = R (e_k q_k + S (I - q q') e_k l_k/|S l|)
//                             (check: dir.dc/ds_k = l_k q_k = dh/ds_k, h = |S l|)
//   cylinder (r, h)           cap face c = p +- h z, E = r (x, y): dc/dh = +-z, dE/dr = (x, y);
//                             side line and rim c = p + r rho + mode h z (E = h z on the side):
//                             dc/dr = rho, dc/dh = mode z, dE/dh = z (side)
//   box (s[0..2])             c = p + sum_{mode_j != 0} mode_j s_j x_j, E columns s_j x_j on the
//                             flat axes: dc/ds_j = mode_j x_j, or dE/ds_j = x_j (m = a x_j)
//   mesh, height field        none: MuJoCo collides a mesh's vertices (geom_size only describes
//                             the compiled mesh) and a field's hfield_size; zero columns
// Degenerate features (face-face, edge-face, parallel edges: A = [-E1 E2] (3 x k, k = k1 + k2)
// rank deficient) keep the forward's choice a = A^+ b (minimum norm in the extent-scaled
// coordinates, b = -(c2 - c1 - phi u); convex.c). M y = B by the pseudo-inverse gives the part of
// da in the row space of A; a size scales E, so the choice also moves in A's null space. With
// N = I - A^+ A and a = A' w, w = (A')^+ a (in the range of A), the row-space condition
// N_new (a + da) = 0 and d(A^+ A) = A^+ dA N + N dA' (A^+)' give
//   N da = N dA' w,    dA = [-dE1/ds  dE2/ds],
// added to the solve's da (it moves the witness inside the degenerate set only: du, dphi stay).
// Zero where A has full column rank (N = 0). (The pose columns omit this term: a rotation breaks
// the degeneracy and the distance has a kink there, while a size change keeps faces parallel.)
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
// The size columns (geom 2's sizes; the field's are zero) take the same mean there.

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "compat.h"
#include "convex.h"
#include "derivative.h"

// per column of z: the witness motions at fixed (u, a) and the motions of the flat directions
typedef struct {
  mjtNum m1[3], m2[3];    // dc_i/dz + (dE_i/dz) a_i
  mjtNum dE1[6], dE2[6];  // dE_i/dz (columns as in cvxFeature.E)
} colMotion;

// N dA' w for one column: the minimum-norm witness choice moving in A's null space (header)
static void nullShift(const cvxResult* r, const mjtNum* Nmat, const mjtNum w[3], const colMotion* c,
                      mjtNum* da) {
  int k1 = r->f1.k, k = k1 + r->f2.k;
  mjtNum v[4];
  for (int j = 0; j < k1; j++) v[j] = -mju_dot3(c->dE1 + 3 * j, w);
  for (int j = k1; j < k; j++) v[j] = mju_dot3(c->dE2 + 3 * (j - k1), w);
  for (int i = 0; i < k; i++) {
    da[i] = 0;
    for (int j = 0; j < k; j++) da[i] += Nmat[k * i + j] * v[j];
  }
}

// the implicit-function-theorem solve for nc <= 12 columns: M y = -dF/dz, then y -> (dist, n, pos)
// as J (7 x nc); minnorm: add the null-space term of the degenerate witness choice (size columns)
static void solveColumns(const cvxResult* r, int nc, const colMotion* col, int minnorm, mjtNum* J) {
  mjtNum M[64], B[8 * 12];
  int n = mjdiff_convexSystem(r, M), k1 = r->f1.k, k2 = r->f2.k, k = k1 + k2;
  mju_zero(J, 7 * nc);
  mju_zero(B, 8 * 12);
  for (int c = 0; c < nc; c++) {
    // B = -dF/dz: F1 = x2 - x1 - phi u, F2 = E1' u, F3 = E2' u
    for (int i = 0; i < 3; i++) B[nc * i + c] = -(col[c].m2[i] - col[c].m1[i]);
    for (int j = 0; j < k1; j++) B[nc * (3 + j) + c] = -mju_dot3(col[c].dE1 + 3 * j, r->u);
    for (int j = 0; j < k2; j++) B[nc * (3 + k1 + j) + c] = -mju_dot3(col[c].dE2 + 3 * j, r->u);
  }
  mjdiff_convexSolve(M, n, B, nc);

  // the degenerate witness choice: N = I - A^+ A, w = (A')^+ a
  mjtNum Nmat[16], w[3] = {0, 0, 0};
  int shift = 0;
  if (minnorm && k > 0) {
    mjtNum A[12], At[12], X[16], a[4];
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < k1; j++) A[k * i + j] = -r->f1.E[3 * j + i];
      for (int j = k1; j < k; j++) A[k * i + j] = r->f2.E[3 * (j - k1) + i];
    }
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < k; j++) At[3 * j + i] = A[k * i + j];
    }
    for (int j = 0; j < k1; j++) a[j] = r->f1.a[j];
    for (int j = k1; j < k; j++) a[j] = r->f2.a[j - k1];
    mjdiff_convexPinv(A, 3, k, A, k, X);
    mjdiff_convexPinv(At, k, 3, a, 1, w);
    mjtNum nmax = 0;
    for (int i = 0; i < k; i++) {
      for (int j = 0; j < k; j++) {
        Nmat[k * i + j] = (i == j) - X[k * i + j];
        nmax = mju_max(nmax, fabs(Nmat[k * i + j]));
      }
    }
    shift = nmax > 1e-6;  // full column rank: N is roundoff
  }

  for (int c = 0; c < nc; c++) {
    mjtNum du[3] = {B[c], B[nc + c], B[2 * nc + c]}, h1[3], h2[3], da[4];
    for (int j = 0; j < k; j++) da[j] = B[nc * (3 + j) + c];
    if (shift) {
      mjtNum dn[4];
      nullShift(r, Nmat, w, col + c, dn);
      for (int j = 0; j < k; j++) da[j] += dn[j];
    }
    mju_mulMatVec(h1, r->f1.H, du, 3, 3);
    mju_mulMatVec(h2, r->f2.H, du, 3, 3);
    // ddist: envelope
    mjtNum dd = 0;
    for (int i = 0; i < 3; i++) dd += r->u[i] * (col[c].m2[i] - col[c].m1[i]);
    J[c] = dd;
    for (int i = 0; i < 3; i++) {
      J[nc * (1 + i) + c] = du[i];
      mjtNum dx1 = col[c].m1[i] + h1[i], dx2 = col[c].m2[i] - h2[i];
      for (int j = 0; j < k1; j++) dx1 += r->f1.E[3 * j + i] * da[j];
      for (int j = 0; j < k2; j++) dx2 += r->f2.E[3 * j + i] * da[k1 + j];
      J[nc * (4 + i) + c] = 0.5 * (dx1 + dx2);
    }
  }
}

// pose columns: a rigid motion of geom i moves its witness by dx + dth x (x - p) -+ H (dth x u)
// at fixed (u, a) and turns its flat directions by dth x E
static void jacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r, mjtNum J[7 * 12]) {
  colMotion col[12];
  mjtNum r1[3], r2[3];
  mju_sub3(r1, r->x1, g1->pos);
  mju_sub3(r2, r->x2, g2->pos);
  memset(col, 0, sizeof(col));
  for (int c = 0; c < 12; c++) {
    mjtNum e[3] = {0, 0, 0}, t[3], hu[3], dth_u[3];
    e[c % 3] = 1;
    int geom = c / 6, rot = (c / 3) % 2;
    mjtNum* mm = geom ? col[c].m2 : col[c].m1;
    mjtNum* dE = geom ? col[c].dE2 : col[c].dE1;
    const cvxFeature* f = geom ? &r->f2 : &r->f1;
    if (!rot) {
      mju_copy3(mm, e);
      continue;
    }
    // dth x (x - p) -+ H (dth x u)
    mju_cross(t, e, geom ? r2 : r1);
    mju_cross(dth_u, e, r->u);
    mju_mulMatVec(hu, f->H, dth_u, 3, 3);
    for (int i = 0; i < 3; i++) mm[i] = t[i] + (geom ? 1 : -1) * hu[i];
    for (int j = 0; j < f->k; j++) mju_cross(dE + 3 * j, e, f->E + 3 * j);
  }
  solveColumns(r, 12, col, 0, J);
}

// size motions of geom g's feature f at the support direction dir: per size entry k the witness
// motion at fixed a, m[k] = dc/ds_k + (dE/ds_k) a, and dE[k] = dE/ds_k (derivation in the header)
static void sizeMotion(const cvxGeom* g, const cvxFeature* f, const mjtNum dir[3], mjtNum m[3][3],
                       mjtNum dE[3][6]) {
  mjtNum ax[3][3];
  memset(m, 0, 9 * sizeof(mjtNum));
  memset(dE, 0, 18 * sizeof(mjtNum));
  for (int j = 0; j < 3; j++) {
    for (int i = 0; i < 3; i++) ax[j][i] = g->mat[3 * i + j];
  }
  const mjtNum* z = ax[2];
  const mjtNum* sz = g->size;
  switch (g->type) {
    case mjGEOM_SPHERE:
      mju_copy3(m[0], dir);
      return;
    case mjGEOM_CAPSULE:
      mju_copy3(m[0], dir);
      if (f->mode[0] == 0) {
        mju_copy3(dE[1], z);
        mju_scl3(m[1], z, f->a[0]);
      } else {
        mju_scl3(m[1], z, f->mode[0]);
      }
      return;
    case mjGEOM_ELLIPSOID: {
      mjtNum l[3];
      mju_rotVecMatT(l, dir, g->mat);
      mjtNum q[3] = {sz[0] * l[0], sz[1] * l[1], sz[2] * l[2]}, nq = mju_norm3(q);
      mju_scl3(q, q, 1 / nq);
      for (int k = 0; k < 3; k++) {
        // e_k q_k + S (e_k - q q_k) l_k / |S l|
        mjtNum dl[3];
        for (int i = 0; i < 3; i++) {
          dl[i] = (i == k) * q[k] + sz[i] * ((i == k) - q[i] * q[k]) * l[k] / nq;
        }
        mju_rotVecMat(m[k], dl, g->mat);
      }
      return;
    }
    case mjGEOM_CYLINDER: {
      int md = f->mode[0];
      if (md == 2 || md == -2) {
        mju_scl3(m[1], z, md > 0 ? 1 : -1);
        mju_copy3(dE[0], ax[0]);
        mju_copy3(dE[0] + 3, ax[1]);
        mju_scl3(m[0], ax[0], f->a[0]);
        mju_addToScl3(m[0], ax[1], f->a[1]);
        return;
      }
      mjtNum rho[3];
      mju_addScl3(rho, dir, z, -mju_dot3(dir, z));
      mju_normalize3(rho);
      mju_copy3(m[0], rho);
      if (md == 0) {
        mju_copy3(dE[1], z);
        mju_scl3(m[1], z, f->a[0]);
      } else {
        mju_scl3(m[1], z, md);
      }
      return;
    }
    case mjGEOM_BOX: {
      int j = 0;
      for (int i = 0; i < 3; i++) {
        if (f->mode[i]) {
          mju_scl3(m[i], ax[i], f->mode[i]);
        } else if (j < 2) {
          mju_copy3(dE[i] + 3 * j, ax[i]);
          mju_scl3(m[i], ax[i], f->a[j]);
          j++;
        }
      }
      return;
    }
    default:
      return;  // mesh, height-field prism: no size
  }
}

// size columns s = (s1[0..2], s2[0..2])
static void sizeJacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r,
                         mjtNum Js[7 * 6]) {
  colMotion col[6];
  mjtNum m1[3][3], m2[3][3], dE1[3][6], dE2[3][6], mu[3];
  mju_scl3(mu, r->u, -1);
  sizeMotion(g1, &r->f1, r->u, m1, dE1);
  sizeMotion(g2, &r->f2, mu, m2, dE2);
  memset(col, 0, sizeof(col));
  for (int k = 0; k < 3; k++) {
    mju_copy3(col[k].m1, m1[k]);
    mju_copy(col[k].dE1, dE1[k], 6);
    mju_copy3(col[3 + k].m2, m2[k]);
    mju_copy(col[3 + k].dE2, dE2[k], 6);
  }
  solveColumns(r, 6, col, 1, Js);
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

void mjdiff_convexSizeJacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r,
                               mjtNum Js[7 * 6]) {
  cvxResult rf, re;
  if (!prismKink(g1, g2, r, &rf, &re)) {
    sizeJacobian(g1, g2, r, Js);
    return;
  }
  // the symmetric derivative at the kink, as for the poses
  mjtNum Je[7 * 6];
  sizeJacobian(g1, g2, &rf, Js);
  sizeJacobian(g1, g2, &re, Je);
  for (int i = 0; i < 7 * 6; i++) Js[i] = 0.5 * (Js[i] + Je[i]);
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

// the two geoms (a height field's prism that produced con) and their solution at d's poses, which
// must be con (mjdiff_collide wrote it there); 0, or -1
static int contactSolution(const mjModel* m, const mjData* d, const mjContact* con, cvxGeom* pa,
                           cvxGeom* pb, cvxResult* pr) {
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  if (g1 < 0 || g2 < 0 || g1 >= m->ngeom || g2 >= m->ngeom) return -1;
  int kind = mjdiff_convexPair(m->geom_type[g1], m->geom_type[g2]);
  if (!kind) return -1;
  cvxGeom a, b;
  cvxResult r;
  memset(&a, 0, sizeof(a));
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
        mjdiff_convexHFieldSelect(m, d, g1, g2, margin, end - start, idx, NULL) != end - start) {
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
  *pa = a;
  *pb = b;
  *pr = r;
  return 0;
}

int mjdiff_convexGeomJacobian(const mjModel* m, const mjData* d, const mjContact* con,
                              mjtNum J[7 * 12]) {
  cvxGeom a, b;
  cvxResult r;
  mju_zero(J, 7 * 12);
  if (contactSolution(m, d, con, &a, &b, &r)) return -1;
  mjdiff_convexJacobian(&a, &b, &r, J);
  return 0;
}

int mjdiff_convexGeomSizeJacobian(const mjModel* m, const mjData* d, const mjContact* con,
                                  mjtNum Js[7 * 6]) {
  cvxGeom a, b;
  cvxResult r;
  mju_zero(Js, 7 * 6);
  if (contactSolution(m, d, con, &a, &b, &r)) return -1;
  mjdiff_convexSizeJacobian(&a, &b, &r, Js);
  return 0;
}
