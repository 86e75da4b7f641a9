// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Exact contact geometry for the geom pairs MuJoCo 2.2.2 collides with mjc_Convex (libccd MPR,
// whose depth and direction are approximate): sphere, capsule, ellipsoid, cylinder, box and mesh
// (its convex hull, m->mesh_graph) against each other as the collision table sends them, and
// height fields against all of these (mjc_ConvexHField).
//
// Problem. h_i(u) = max_{x in G_i} u.x the support function of geom i (world), s_i(u) its
// maximiser (support point). The signed distance
//   phi = max_{|u| = 1} sigma(u),   sigma(u) = -h1(u) - h2(-u)
// is the distance when the geoms are apart and minus the penetration depth (minimum translation)
// when they overlap. At the optimum the witness points x1 = s1(u), x2 = s2(-u) satisfy
//   x2 - x1 = phi u                                                            (1)
// u is the contact normal (from geom 1 to geom 2), pos = (x1 + x2)/2 (MuJoCo's convention).
//
// Global stage. D = G2 - G1 (Minkowski difference, support s_D(v) = s2(v) - s1(-v)). GJK gives the
// point of D nearest the origin when they are apart (u0 = v/|v|); when the origin is inside D, EPA
// expands a polytope inside D towards its boundary and gives the face nearest the origin, normal n
// (u0 = -n). Both are exact in finitely many steps for polytopes and approximate (stopped after a
// fixed number of iterations) for curved geoms; they choose the right basin. Spheres and capsules
// enter this stage as their cores (centre, segment), exact polytopes: h_i = h_core,i + r_i, so
// sigma = sigma_core - r1 - r2 has the same maximiser. A caller with a cut (a margin beyond which
// the pair is discarded) stops as soon as GJK's lower bound v.w/|v| exceeds it.
//
// Local stage (exact). Near its witness point each geom is described by a feature:
//   x_i = c_i(dir_i) + E_i a_i,   dir_1 = u, dir_2 = -u
// c_i smooth in the support direction with Jacobian H_i = dc_i/ddir (symmetric, H_i dir = 0), E_i
// (3 x k_i) the feature's flat directions (scaled by its extent), a_i within the feature's bounds:
//   sphere       c = p + r dir, H = r (I - dir dir'), k = 0
//   ellipsoid    c = p + R S q / |S v| ... : v = R' dir, c = p + R S^2 v/|S v|,
//                H = R S (I - q q') S R' / |S v|, q = S v/|S v|, k = 0
//   capsule      segment (|dir.z| small): c = p + r dir, E = h z; end cap: c = p +- h z + r dir;
//                H = r (I - dir dir')
//   cylinder     cap face: c = p +- h z, E = r (x, y), H = 0; side line: c = p + r rho, E = h z;
//                rim: c = p +- h z + r rho; rho = P dir/|P dir|, P = I - z z',
//                H = r (P - rho rho')/|P dir|
//   box          per axis: flat (E column s_j x_j) or at the side sign(dir.x_j) s_j; H = 0
//   mesh hull    the hull vertices within tolerance of the support value: a vertex, an edge
//                (c its midpoint, E half its length along it) or a face polygon (c the vertex mean,
//                E an orthonormal pair times the polygon's radius); H = 0
// With the features fixed, (1) and the normal conditions form the square system in
// y = (u (3), a1 (k1), a2 (k2), phi):
//   F1 = c2(-u) + E2 a2 - c1(u) - E1 a1 - phi u = 0     (3)
//   F2 = E1' u = 0 (k1),  F3 = E2' u = 0 (k2),  F4 = (u'u - 1)/2 = 0
// with Jacobian (the matrix of mjdiff_convexSystem)
//   M = [ -(H1 + H2 + phi I)  -E1  E2  -u ]
//       [  E1'                 0    0   0 ]
//       [  E2'                 0    0   0 ]
//       [  u'                  0    0   0 ]
// solved by Newton (u renormalised after each step). An active set keeps the features right: a
// witness outside its feature's bounds moves to the bounding feature (box axis to its side,
// capsule segment to its end, cylinder cap disk to the rim, side line to a rim, mesh face to the
// nearest boundary edge or vertex, mesh edge to its end), and a feature that is no longer the
// support at the new u (u.x1 < h1(u)) is identified again. Features are identified at u0 with a
// ladder of tolerances (1e-10 .. 1e-2 of the geoms' size); the first candidate that converges,
// verifies with the true support functions (|sigma(u) - phi|, |x2 - x1 - phi u|, the witnesses in
// their support sets, all within 1e-9 of the size; mesh faces within their float rounding) and
// does not fall below the global estimate sigma(u0) is the solution.
//
// Degenerate features (face-face or edge-face parallel, parallel edges: the witness points are not
// unique, M is singular in a): the minimum-norm solution in the extent-scaled a of
// E2 a2 - E1 a1 = -(c2 - c1 - phi u) (one-sided Jacobi SVD, singular values under 1e-10 of the
// largest dropped; the Newton steps use the same least squares on M) is the choice; it puts the
// witness near the centre of the smaller feature (a box resting on a large mesh face touches under
// the box's face centre). Documented, deterministic, and differentiated the same way.
//
// Height fields: mjc_ConvexHField collides each triangular prism of the grid under the geom with
// MPR. The prism is a polytope (6 vertices fixed to the field's frame: a mesh-like feature set), so
// the same solver applies per prism; the candidate prisms are MuJoCo's (mjdiff_convexPrisms), and
// the pair's contacts become the exact solutions of the candidates with phi < margin (at most as
// many as MuJoCo made, the deepest: mjdiff_convexHFieldSelect, in MuJoCo's prism order), dropping
// a prism whose witness on the field lies within half a grid spacing of a deeper kept one: prisms
// sharing an edge or a cell's diagonal touch the geom at nearly the same place, and a penalty
// force per prism would count one surface twice (double the stiffness near every edge, energy
// injected as a geom slides across cells; measured on hopper_terrain before this rule: energy x22
// over a 2 s rest run). MuJoCo keeps both (its solver shares the load). At the merge the kept
// contact switches between prisms whose solutions agree there (continuous force, a kink in its
// derivative). The Jacobian finds a contact's prism by its place in the pair's run of contacts
// (contact j of n is prism j of the selection of n), never by value.
//
// Nothing is allocated; MuJoCo's mesh hull (mesh_graph) is read from the model.

#include "convex.h"

#include <math.h>
#include <string.h>

#include "compat.h"
#include "internal.h"

#define GJK_ITER 48
#define EPA_ITER 24
#define GJK_TOL 1e-9  // relative gaps at which GJK and EPA stop (the local stage is exact; EPA on
#define EPA_TOL 1e-9  // curved geoms converges slowly and only has to find the basin)
#define EPA_MAXV (EPA_ITER + 8)
#define EPA_MAXF (2 * EPA_MAXV + 8)
#define NEWTON_ITER 60
#define ACTIVE_ITER 10

//---------------------------------- small helpers -------------------------------------------------

static mjtNum sgn(mjtNum x) {
  return x >= 0 ? 1 : -1;
}

// column j of R (axis j of the geom in the world)
static void axis(const mjtNum* R, int j, mjtNum a[3]) {
  a[0] = R[j];
  a[1] = R[3 + j];
  a[2] = R[6 + j];
}

// H += s a b'
static void addOuter(mjtNum H[9], const mjtNum a[3], const mjtNum b[3], mjtNum s) {
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) H[3 * i + j] += s * a[i] * b[j];
  }
}

static void meshVert(const cvxGeom* g, int i, mjtNum v[3]) {
  mjtNum l[3];
  if (g->type == mjGEOM_HFIELD) {
    mju_copy3(l, g->pv[i]);
  } else {
    const float* p = g->vert + 3 * (g->vid ? g->vid[i] : i);
    l[0] = p[0];
    l[1] = p[1];
    l[2] = p[2];
  }
  mju_rotVecMat(v, l, g->mat);
  mju_addTo3(v, g->pos);
}

//---------------------------------- geoms and support maps ----------------------------------------

int mjdiff_convexPair(int t1, int t2) {
  if (t1 > t2) {
    int t = t1;
    t1 = t2;
    t2 = t;
  }
  if (t1 == mjGEOM_HFIELD) return t2 >= mjGEOM_SPHERE && t2 <= mjGEOM_MESH ? 2 : 0;
  switch (t1) {
    case mjGEOM_SPHERE:
    case mjGEOM_CAPSULE:
      return t2 == mjGEOM_ELLIPSOID || t2 == mjGEOM_CYLINDER || t2 == mjGEOM_MESH;
    case mjGEOM_ELLIPSOID:
    case mjGEOM_CYLINDER:
      return t2 == mjGEOM_ELLIPSOID || t2 == mjGEOM_CYLINDER || t2 == mjGEOM_BOX ||
             t2 == mjGEOM_MESH;
    case mjGEOM_BOX:
    case mjGEOM_MESH:
      return t2 == mjGEOM_MESH;
    default:
      return 0;
  }
}

int mjdiff_convexGeom(const mjModel* m, const mjData* d, int g, cvxGeom* geom) {
  memset(geom, 0, sizeof(*geom));
  int type = m->geom_type[g];
  if (type != mjGEOM_SPHERE && type != mjGEOM_CAPSULE && type != mjGEOM_ELLIPSOID &&
      type != mjGEOM_CYLINDER && type != mjGEOM_BOX && type != mjGEOM_MESH) {
    return -1;
  }
  geom->type = type;
  mju_copy3(geom->pos, d->geom_xpos + 3 * g);
  mju_copy(geom->mat, d->geom_xmat + 9 * g, 9);
  mju_copy3(geom->size, m->geom_size + 3 * g);
  if (type == mjGEOM_MESH) {
    int id = m->geom_dataid[g];
    if (id < 0) return -1;
    geom->vert = m->mesh_vert + 3 * m->mesh_vertadr[id];
    int adr = m->mesh_graphadr[id];
    if (adr >= 0) {
      geom->nvert = m->mesh_graph[adr];
      geom->vid = m->mesh_graph + adr + 2 + geom->nvert;
    } else {
      geom->nvert = m->mesh_vertnum[id];
    }
    if (geom->nvert < 1) return -1;
  }
  geom->scale = m->geom_rbound[g] > 0
                    ? m->geom_rbound[g]
                    : mju_max(geom->size[0], mju_max(geom->size[1], geom->size[2]));
  return 0;
}

void mjdiff_convexSupport(const cvxGeom* g, const mjtNum dir[3], mjtNum s[3]) {
  mjtNum l[3], r[3] = {0, 0, 0};
  const mjtNum* sz = g->size;
  mju_rotVecMatT(l, dir, g->mat);
  switch (g->type) {
    case mjGEOM_SPHERE:
      mju_scl3(r, l, sz[0]);
      break;
    case mjGEOM_CAPSULE:
      mju_scl3(r, l, sz[0]);
      r[2] += sgn(l[2]) * sz[1];
      break;
    case mjGEOM_ELLIPSOID: {
      mjtNum q[3] = {l[0] * sz[0], l[1] * sz[1], l[2] * sz[2]};
      mjtNum nq = mju_norm3(q);
      for (int i = 0; i < 3; i++) r[i] = sz[i] * q[i] / nq;
      break;
    }
    case mjGEOM_CYLINDER: {
      mjtNum t = sqrt(l[0] * l[0] + l[1] * l[1]);
      if (t > 0) {
        r[0] = sz[0] * l[0] / t;
        r[1] = sz[0] * l[1] / t;
      }
      r[2] = sgn(l[2]) * sz[1];
      break;
    }
    case mjGEOM_BOX:
      for (int i = 0; i < 3; i++) r[i] = sgn(l[i]) * sz[i];
      break;
    case mjGEOM_HFIELD: {
      mjtNum best = -mjMAXVAL;
      for (int i = 0; i < 6; i++) {
        mjtNum v = mju_dot3(l, g->pv[i]);
        if (v > best) {
          best = v;
          mju_copy3(r, g->pv[i]);
        }
      }
      break;
    }
    case mjGEOM_MESH: {
      mjtNum best = -mjMAXVAL;
      for (int i = 0; i < g->nvert; i++) {
        const float* p = g->vert + 3 * (g->vid ? g->vid[i] : i);
        mjtNum v = l[0] * p[0] + l[1] * p[1] + l[2] * p[2];
        if (v > best) {
          best = v;
          r[0] = p[0];
          r[1] = p[1];
          r[2] = p[2];
        }
      }
      break;
    }
    default:
      break;
  }
  mju_rotVecMat(s, r, g->mat);
  mju_addTo3(s, g->pos);
}

// support of D = G2 - G1 in direction v: s2(v) - s1(-v)
static void supportD(const cvxGeom* g1, const cvxGeom* g2, const mjtNum v[3], mjtNum w[3]) {
  mjtNum n[3], s1[3], s2[3], vn[3];
  mju_copy3(vn, v);
  mju_normalize3(vn);
  mju_scl3(n, vn, -1);
  mjdiff_convexSupport(g2, vn, s2);
  mjdiff_convexSupport(g1, n, s1);
  mju_sub3(w, s2, s1);
}

// sigma(u) = -h1(u) - h2(-u)
static mjtNum sigmaOf(const cvxGeom* g1, const cvxGeom* g2, const mjtNum u[3]) {
  mjtNum n[3], s1[3], s2[3];
  mju_scl3(n, u, -1);
  mjdiff_convexSupport(g1, u, s1);
  mjdiff_convexSupport(g2, n, s2);
  return mju_dot3(u, s2) - mju_dot3(u, s1);
}

//---------------------------------- GJK -----------------------------------------------------------

// nearest point to the origin of the hull of P[0..n-1] by enumeration of the faces: the affine
// projection of every subset with positive barycentric coordinates, nearest kept (the hull's
// nearest point is such a projection). Keeps the subset in P; returns its size, v the point.
static int nearestSimplex(mjtNum P[4][3], int n, mjtNum v[3]) {
  mjtNum best = mjMAXVAL, bv[3] = {0, 0, 0};
  int bmask = 1;
  for (int mask = 1; mask < (1 << n); mask++) {
    int idx[4], k = 0;
    for (int i = 0; i < n; i++) {
      if (mask & (1 << i)) idx[k++] = i;
    }
    // v = P0 + sum_j mu_j (P_j - P0): G mu = -D' P0
    mjtNum Dm[3][3], G[9], rhs[3], mu[3] = {0, 0, 0};
    const mjtNum* P0 = P[idx[0]];
    for (int j = 1; j < k; j++) mju_sub3(Dm[j - 1], P[idx[j]], P0);
    int ok = 1;
    if (k > 1) {
      int q = k - 1;
      for (int a = 0; a < q; a++) {
        rhs[a] = -mju_dot3(Dm[a], P0);
        for (int b = 0; b < q; b++) G[q * a + b] = mju_dot3(Dm[a], Dm[b]);
      }
      // Gaussian elimination with partial pivoting
      mjtNum scale = 0;
      for (int a = 0; a < q; a++) scale = mju_max(scale, G[q * a + a]);
      for (int c = 0; c < q && ok; c++) {
        int piv = c;
        for (int r = c + 1; r < q; r++) {
          if (fabs(G[q * r + c]) > fabs(G[q * piv + c])) piv = r;
        }
        if (fabs(G[q * piv + c]) <= 1e-13 * scale) {
          ok = 0;
          break;
        }
        if (piv != c) {
          for (int b = 0; b < q; b++) {
            mjtNum t = G[q * c + b];
            G[q * c + b] = G[q * piv + b];
            G[q * piv + b] = t;
          }
          mjtNum t = rhs[c];
          rhs[c] = rhs[piv];
          rhs[piv] = t;
        }
        for (int r = c + 1; r < q; r++) {
          mjtNum f = G[q * r + c] / G[q * c + c];
          for (int b = c; b < q; b++) G[q * r + b] -= f * G[q * c + b];
          rhs[r] -= f * rhs[c];
        }
      }
      if (!ok) continue;
      for (int c = q - 1; c >= 0; c--) {
        mjtNum s = rhs[c];
        for (int b = c + 1; b < q; b++) s -= G[q * c + b] * mu[b];
        mu[c] = s / G[q * c + c];
      }
      mjtNum l0 = 1;
      for (int a = 0; a < q; a++) {
        l0 -= mu[a];
        if (mu[a] <= 0) ok = 0;
      }
      if (l0 <= 0) ok = 0;
      if (!ok) continue;
    }
    mjtNum x[3];
    mju_copy3(x, P0);
    for (int j = 0; j < k - 1; j++) mju_addToScl3(x, Dm[j], mu[j]);
    mjtNum d2 = mju_dot3(x, x);
    if (d2 < best) {
      best = d2;
      mju_copy3(bv, x);
      bmask = mask;
    }
  }
  mjtNum Q[4][3];
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (bmask & (1 << i)) mju_copy3(Q[k++], P[i]);
  }
  for (int i = 0; i < k; i++) mju_copy3(P[i], Q[i]);
  mju_copy3(v, bv);
  return k;
}

// GJK: 1 with u0 (unit, geom 1 to geom 2) if apart, 0 if the origin is in D (P, *n the simplex),
// 2 with *lb the lower bound once the distance is proven above cut (the caller's margin: for any
// direction v, dist >= -h_D(-v/|v|) = v.w/|v|, w = s_D(-v))
static int gjk(const cvxGeom* g1, const cvxGeom* g2, mjtNum L, mjtNum cut, mjtNum u0[3],
               mjtNum P[4][3], int* n, mjtNum* lb) {
  mjtNum v[3];
  mju_sub3(v, g2->pos, g1->pos);
  if (mju_norm3(v) < 1e-12 * L) v[0] = 1;
  supportD(g1, g2, v, P[0]);
  int k = 1;
  mju_copy3(v, P[0]);
  for (int it = 0; it < GJK_ITER; it++) {
    mjtNum nv = mju_norm3(v);
    if (nv <= 1e-12 * L) break;
    mjtNum w[3], mv[3];
    mju_scl3(mv, v, -1);
    supportD(g1, g2, mv, w);
    // dist in [v.w/|v|, |v|]
    mjtNum low = mju_dot3(v, w) / nv;
    if (low > cut) {
      mju_scl3(u0, v, 1 / nv);
      *n = k;
      *lb = low;
      return 2;
    }
    if (nv - low <= GJK_TOL * L) {
      mju_scl3(u0, v, 1 / nv);
      *n = k;
      return 1;
    }
    int dup = 0;
    for (int i = 0; i < k; i++) dup = dup || mju_dist3(w, P[i]) <= 1e-14 * L;
    if (dup) {
      mju_scl3(u0, v, 1 / nv);
      *n = k;
      return 1;
    }
    mju_copy3(P[k++], w);
    k = nearestSimplex(P, k, v);
    if (k == 4) break;
  }
  mjtNum nv = mju_norm3(v);
  *n = k;
  if (k < 4 && nv > 1e-12 * L) {
    mju_scl3(u0, v, 1 / nv);
    return 1;
  }
  return 0;
}

//---------------------------------- EPA -----------------------------------------------------------

typedef struct {
  int v[3];
  mjtNum n[3];
  mjtNum dist;
  int alive;
} epaFace;

// face (a, b, c) with outward normal (away from the interior point o)
static void epaMake(epaFace* f, mjtNum V[][3], int a, int b, int c, const mjtNum o[3]) {
  mjtNum e1[3], e2[3], n[3];
  mju_sub3(e1, V[b], V[a]);
  mju_sub3(e2, V[c], V[a]);
  mju_cross(n, e1, e2);
  mjtNum len = mju_norm3(n), off[3];
  f->alive = 1;
  f->v[0] = a;
  f->v[1] = b;
  f->v[2] = c;
  if (len <= 0) {
    mju_zero3(f->n);
    f->dist = mjMAXVAL;
    return;
  }
  mju_scl3(n, n, 1 / len);
  mju_sub3(off, V[a], o);
  if (mju_dot3(n, off) < 0) {
    mju_scl3(n, n, -1);
    f->v[1] = c;
    f->v[2] = b;
  }
  mju_copy3(f->n, n);
  f->dist = mju_dot3(n, V[a]);
}

// complete the simplex to a tetrahedron around the origin; 0 if D is flat
static int epaStart(const cvxGeom* g1, const cvxGeom* g2, mjtNum L, mjtNum P[4][3], int n) {
  static const mjtNum ax[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  while (n < 4) {
    int added = 0;
    if (n == 1) {
      for (int k = 0; k < 6 && !added; k++) {
        mjtNum dir[3], w[3];
        mju_scl3(dir, ax[k / 2], k % 2 ? -1 : 1);
        supportD(g1, g2, dir, w);
        if (mju_dist3(w, P[0]) > 1e-9 * L) {
          mju_copy3(P[n++], w);
          added = 1;
        }
      }
    } else if (n == 2) {
      mjtNum e[3];
      mju_sub3(e, P[1], P[0]);
      mju_normalize3(e);
      for (int k = 0; k < 6 && !added; k++) {
        mjtNum dir[3], w[3], r[3];
        mju_cross(dir, e, ax[k / 2]);
        if (mju_norm3(dir) < 0.1) continue;
        mju_scl3(dir, dir, k % 2 ? -1 : 1);
        supportD(g1, g2, dir, w);
        mju_sub3(r, w, P[0]);
        mju_addToScl3(r, e, -mju_dot3(r, e));
        if (mju_norm3(r) > 1e-9 * L) {
          mju_copy3(P[n++], w);
          added = 1;
        }
      }
    } else {
      mjtNum e1[3], e2[3], nr[3];
      mju_sub3(e1, P[1], P[0]);
      mju_sub3(e2, P[2], P[0]);
      mju_cross(nr, e1, e2);
      mju_normalize3(nr);
      mjtNum s = -mju_dot3(nr, P[0]) >= 0 ? 1 : -1;
      for (int k = 0; k < 2 && !added; k++) {
        mjtNum dir[3], w[3], r[3];
        mju_scl3(dir, nr, k ? -s : s);
        supportD(g1, g2, dir, w);
        mju_sub3(r, w, P[0]);
        if (fabs(mju_dot3(r, nr)) > 1e-9 * L) {
          mju_copy3(P[n++], w);
          added = 1;
        }
      }
    }
    if (!added) return 0;
  }
  return 1;
}

// EPA from the tetrahedron P: u0 = -n of the boundary face nearest the origin; 0 on failure
static int epa(const cvxGeom* g1, const cvxGeom* g2, mjtNum L, mjtNum P[4][3], mjtNum u0[3]) {
  mjtNum V[EPA_MAXV][3], o[3] = {0, 0, 0};
  epaFace F[EPA_MAXF];
  int nv = 4, nf = 0;
  for (int i = 0; i < 4; i++) {
    mju_copy3(V[i], P[i]);
    mju_addToScl3(o, P[i], 0.25);
  }
  epaMake(F + nf++, V, 0, 1, 2, o);
  epaMake(F + nf++, V, 0, 1, 3, o);
  epaMake(F + nf++, V, 0, 2, 3, o);
  epaMake(F + nf++, V, 1, 2, 3, o);
  int best = -1;
  for (int it = 0; it < EPA_ITER; it++) {
    best = -1;
    for (int i = 0; i < nf; i++) {
      if (F[i].alive && F[i].dist < mjMAXVAL && (best < 0 || F[i].dist < F[best].dist)) best = i;
    }
    if (best < 0) return 0;
    mjtNum w[3];
    supportD(g1, g2, F[best].n, w);
    if (mju_dot3(F[best].n, w) - F[best].dist <= EPA_TOL * L || nv >= EPA_MAXV) break;

    // remove the faces w sees; the horizon: their edges not shared by two removed faces
    int edges[3 * EPA_MAXF][2], ne = 0;
    for (int i = 0; i < nf; i++) {
      if (!F[i].alive) continue;
      mjtNum r[3];
      mju_sub3(r, w, V[F[i].v[0]]);
      if (F[i].dist < mjMAXVAL && mju_dot3(F[i].n, r) <= 1e-14 * L) continue;
      F[i].alive = 0;
      for (int e = 0; e < 3; e++) {
        int a = F[i].v[e], b = F[i].v[(e + 1) % 3], found = -1;
        for (int j = 0; j < ne; j++) {
          if (edges[j][0] == b && edges[j][1] == a) found = j;
        }
        if (found >= 0) {
          edges[found][0] = edges[ne - 1][0];
          edges[found][1] = edges[ne - 1][1];
          ne--;
        } else {
          edges[ne][0] = a;
          edges[ne][1] = b;
          ne++;
        }
      }
    }
    // compact the face list, then add the new faces
    int k = 0;
    for (int i = 0; i < nf; i++) {
      if (F[i].alive) F[k++] = F[i];
    }
    nf = k;
    if (nf + ne > EPA_MAXF) break;
    mju_copy3(V[nv], w);
    for (int j = 0; j < ne; j++) epaMake(F + nf++, V, edges[j][0], edges[j][1], nv, o);
    nv++;
  }
  best = -1;
  for (int i = 0; i < nf; i++) {
    if (F[i].alive && F[i].dist < mjMAXVAL && (best < 0 || F[i].dist < F[best].dist)) best = i;
  }
  if (best < 0) return 0;
  mju_scl3(u0, F[best].n, -1);
  return 1;
}

//---------------------------------- features ------------------------------------------------------

// mesh face: order the feature's vertices around their mean in the plane (e1, e2)
static void orderPolygon(const cvxGeom* g, const cvxFeature* f, int* ord, const mjtNum c[3],
                         const mjtNum e1[3], const mjtNum e2[3]) {
  mjtNum ang[CVX_MAXFACE];
  for (int i = 0; i < f->nv; i++) ord[i] = f->v[i];
  for (int i = 0; i < f->nv; i++) {
    mjtNum v[3];
    meshVert(g, ord[i], v);
    mju_subFrom3(v, c);
    ang[i] = atan2(mju_dot3(v, e2), mju_dot3(v, e1));
  }
  for (int i = 1; i < f->nv; i++) {
    for (int j = i; j > 0 && ang[j] < ang[j - 1]; j--) {
      mjtNum t = ang[j];
      ang[j] = ang[j - 1];
      ang[j - 1] = t;
      int s = ord[j];
      ord[j] = ord[j - 1];
      ord[j - 1] = s;
    }
  }
}

// identify the feature of g in the support direction dir with tolerance tol (support-value
// difference); 0 if the mesh face has too many vertices
static int identify(const cvxGeom* g, const mjtNum dir[3], mjtNum tol, cvxFeature* f) {
  memset(f, 0, sizeof(*f));
  mjtNum l[3];
  const mjtNum* sz = g->size;
  mju_rotVecMatT(l, dir, g->mat);
  switch (g->type) {
    case mjGEOM_CAPSULE:
      f->mode[0] = 2 * sz[1] * fabs(l[2]) <= tol ? 0 : (int)sgn(l[2]);
      break;
    case mjGEOM_CYLINDER: {
      mjtNum t = sqrt(l[0] * l[0] + l[1] * l[1]);
      if (2 * sz[0] * t <= tol) {
        f->mode[0] = 2 * (int)sgn(l[2]);
      } else if (2 * sz[1] * fabs(l[2]) <= tol) {
        f->mode[0] = 0;
      } else {
        f->mode[0] = (int)sgn(l[2]);
      }
      break;
    }
    case mjGEOM_BOX:
      for (int i = 0; i < 3; i++) f->mode[i] = 2 * sz[i] * fabs(l[i]) <= tol ? 0 : (int)sgn(l[i]);
      if (!f->mode[0] && !f->mode[1] && !f->mode[2]) return 0;
      break;
    case mjGEOM_MESH:
    case mjGEOM_HFIELD: {
      mjtNum h = -mjMAXVAL, v[3];
      for (int i = 0; i < g->nvert; i++) {
        meshVert(g, i, v);
        h = mju_max(h, mju_dot3(dir, v));
      }
      for (int i = 0; i < g->nvert; i++) {
        meshVert(g, i, v);
        if (mju_dot3(dir, v) >= h - tol) {
          if (f->nv >= CVX_MAXFACE) return 0;
          f->v[f->nv++] = i;
        }
      }
      break;
    }
    default:
      break;
  }
  return 1;
}

// mesh feature geometry: reduce the vertex set to its affine dimension (vertex, edge or face)
// and set c, E; 0 if degenerate
static int meshFeature(const cvxGeom* g, cvxFeature* f) {
  mjtNum c[3] = {0, 0, 0}, v[3], w[3];
  mjtNum tiny = 1e-9 * g->scale;
  f->k = 0;
  // vertices in ascending order: the basis E does not depend on the order they were found in
  for (int i = 1; i < f->nv; i++) {
    for (int j = i; j > 0 && f->v[j] < f->v[j - 1]; j--) {
      int t = f->v[j];
      f->v[j] = f->v[j - 1];
      f->v[j - 1] = t;
    }
  }
  if (f->nv == 1) {
    meshVert(g, f->v[0], f->c);
    return 1;
  }
  // the farthest pair: the edge direction
  int ia = 0, ib = 0;
  mjtNum dmax = 0;
  for (int i = 0; i < f->nv; i++) {
    meshVert(g, f->v[i], v);
    for (int j = i + 1; j < f->nv; j++) {
      meshVert(g, f->v[j], w);
      mjtNum dd = mju_dist3(v, w);
      if (dd > dmax) {
        dmax = dd;
        ia = i;
        ib = j;
      }
    }
  }
  if (dmax <= tiny) {
    f->nv = 1;
    meshVert(g, f->v[0], f->c);
    return 1;
  }
  mjtNum A[3], B[3], e1[3], e2[3];
  meshVert(g, f->v[ia], A);
  meshVert(g, f->v[ib], B);
  mju_sub3(e1, B, A);
  mju_normalize3(e1);
  mjtNum off = 0;
  for (int i = 0; i < f->nv; i++) {
    meshVert(g, f->v[i], v);
    mju_subFrom3(v, A);
    mju_addToScl3(v, e1, -mju_dot3(v, e1));
    if (mju_norm3(v) > off) {
      off = mju_norm3(v);
      mju_copy3(e2, v);
    }
  }
  if (off <= tiny) {
    // edge: its two ends
    int a = f->v[ia], b = f->v[ib];
    f->nv = 2;
    f->v[0] = a;
    f->v[1] = b;
    mju_add3(f->c, A, B);
    mju_scl3(f->c, f->c, 0.5);
    f->k = 1;
    mju_scl3(f->E, e1, dmax / 2);
    return 1;
  }
  mju_normalize3(e2);
  for (int i = 0; i < f->nv; i++) {
    meshVert(g, f->v[i], v);
    mju_addToScl3(c, v, 1.0 / f->nv);
  }
  mjtNum ext = 0;
  for (int i = 0; i < f->nv; i++) {
    meshVert(g, f->v[i], v);
    ext = mju_max(ext, mju_dist3(v, c));
  }
  mju_copy3(f->c, c);
  f->k = 2;
  mju_scl3(f->E, e1, ext);
  mju_scl3(f->E + 3, e2, ext);
  return 1;
}

// c, H, E of the feature (its modes fixed) in the support direction dir
static int evalFeature(const cvxGeom* g, const mjtNum dir[3], cvxFeature* f) {
  const mjtNum* sz = g->size;
  const mjtNum* p = g->pos;
  mjtNum z[3], l[3];
  mju_zero(f->H, 9);
  f->k = 0;
  axis(g->mat, 2, z);
  mju_rotVecMatT(l, dir, g->mat);
  switch (g->type) {
    case mjGEOM_SPHERE:
    case mjGEOM_CAPSULE: {
      mjtNum I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
      mju_copy(f->H, I, 9);
      addOuter(f->H, dir, dir, -1);
      mju_scl(f->H, f->H, sz[0], 9);
      mju_addScl3(f->c, p, dir, sz[0]);
      if (g->type == mjGEOM_CAPSULE) {
        if (f->mode[0] == 0) {
          f->k = 1;
          mju_scl3(f->E, z, sz[1]);
        } else {
          mju_addToScl3(f->c, z, f->mode[0] * sz[1]);
        }
      }
      return 1;
    }
    case mjGEOM_ELLIPSOID: {
      mjtNum q[3] = {sz[0] * l[0], sz[1] * l[1], sz[2] * l[2]}, nq = mju_norm3(q);
      mju_scl3(q, q, 1 / nq);
      mjtNum cl[3] = {sz[0] * q[0], sz[1] * q[1], sz[2] * q[2]}, Hl[9], T[9];
      mju_rotVecMat(f->c, cl, g->mat);
      mju_addTo3(f->c, p);
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) Hl[3 * i + j] = sz[i] * ((i == j) - q[i] * q[j]) * sz[j] / nq;
      }
      mju_mulMatMat(T, g->mat, Hl, 3, 3, 3);
      mju_mulMatMatT(f->H, T, g->mat, 3, 3, 3);
      return 1;
    }
    case mjGEOM_CYLINDER: {
      int md = f->mode[0];
      mju_copy3(f->c, p);
      if (md == 2 || md == -2) {
        mjtNum x[3], y[3];
        axis(g->mat, 0, x);
        axis(g->mat, 1, y);
        mju_addToScl3(f->c, z, (md > 0 ? 1 : -1) * sz[1]);
        f->k = 2;
        mju_scl3(f->E, x, sz[0]);
        mju_scl3(f->E + 3, y, sz[0]);
        return 1;
      }
      mjtNum pd[3];
      mju_addScl3(pd, dir, z, -mju_dot3(dir, z));
      mjtNum t = mju_norm3(pd);
      if (t <= 1e-14) return 0;
      mjtNum rho[3];
      mju_scl3(rho, pd, 1 / t);
      mju_addToScl3(f->c, rho, sz[0]);
      mjtNum I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
      mju_copy(f->H, I, 9);
      addOuter(f->H, z, z, -1);
      addOuter(f->H, rho, rho, -1);
      mju_scl(f->H, f->H, sz[0] / t, 9);
      if (md == 0) {
        f->k = 1;
        mju_scl3(f->E, z, sz[1]);
      } else {
        mju_addToScl3(f->c, z, md * sz[1]);
      }
      return 1;
    }
    case mjGEOM_BOX:
      mju_copy3(f->c, p);
      for (int i = 0; i < 3; i++) {
        mjtNum a[3];
        axis(g->mat, i, a);
        if (f->mode[i]) {
          mju_addToScl3(f->c, a, f->mode[i] * sz[i]);
        } else if (f->k < 2) {
          mju_scl3(f->E + 3 * f->k++, a, sz[i]);
        } else {
          return 0;
        }
      }
      return 1;
    case mjGEOM_MESH:
    case mjGEOM_HFIELD:
      return meshFeature(g, f);
    default:
      return 0;
  }
}

int mjdiff_convexFeature(const cvxGeom* g, const mjtNum dir[3], cvxFeature* f) {
  return evalFeature(g, dir, f);
}

// nearest point of the segment [A, B] to X: parameter in [0, 1]
static mjtNum segParam(const mjtNum A[2], const mjtNum B[2], const mjtNum X[2]) {
  mjtNum e[2] = {B[0] - A[0], B[1] - A[1]}, r[2] = {X[0] - A[0], X[1] - A[1]};
  mjtNum ee = e[0] * e[0] + e[1] * e[1];
  mjtNum t = ee > 0 ? (e[0] * r[0] + e[1] * r[1]) / ee : 0;
  return t < 0 ? 0 : (t > 1 ? 1 : t);
}

// witness within the feature's bounds? If not, move the feature to the bounding one (1 returned;
// *tilt set if the support direction must leave an exact axis first)
static int adjustFeature(const cvxGeom* g, cvxFeature* f, mjtNum tilt[3]) {
  const mjtNum lim = 1 + 1e-9;
  mju_zero3(tilt);
  switch (g->type) {
    case mjGEOM_CAPSULE:
      if (f->mode[0] == 0 && fabs(f->a[0]) > lim) {
        f->mode[0] = (int)sgn(f->a[0]);
        return 1;
      }
      return 0;
    case mjGEOM_CYLINDER:
      if (f->mode[0] == 0 && fabs(f->a[0]) > lim) {
        f->mode[0] = (int)sgn(f->a[0]);
        return 1;
      }
      if ((f->mode[0] == 2 || f->mode[0] == -2) &&
          f->a[0] * f->a[0] + f->a[1] * f->a[1] > lim * lim) {
        // to the rim in the direction of the witness: tilt the support direction towards it
        mjtNum na = sqrt(f->a[0] * f->a[0] + f->a[1] * f->a[1]);
        for (int i = 0; i < 3; i++) {
          tilt[i] = (f->E[i] * f->a[0] + f->E[3 + i] * f->a[1]) / (na * g->size[0]);
        }
        f->mode[0] /= 2;
        return 1;
      }
      return 0;
    case mjGEOM_BOX: {
      int j = 0, changed = 0;
      for (int i = 0; i < 3; i++) {
        if (f->mode[i]) continue;
        if (fabs(f->a[j]) > lim) {
          f->mode[i] = (int)sgn(f->a[j]);
          changed = 1;
        }
        j++;
      }
      return changed;
    }
    case mjGEOM_MESH:
    case mjGEOM_HFIELD:
      if (f->nv == 2 && fabs(f->a[0]) > lim) {
        f->v[0] = f->a[0] > 0 ? f->v[1] : f->v[0];
        f->nv = 1;
        return 1;
      }
      if (f->nv >= 3) {
        // polygon in the coordinates a (E columns scaled by the extent)
        mjtNum Q[CVX_MAXFACE][2], X[2] = {f->a[0], f->a[1]};
        mjtNum e1[3], e2[3];
        mju_copy3(e1, f->E);
        mju_copy3(e2, f->E + 3);
        mjtNum n1 = mju_normalize3(e1);
        mju_normalize3(e2);
        int inside = 1, ord[CVX_MAXFACE];
        orderPolygon(g, f, ord, f->c, e1, e2);
        for (int i = 0; i < f->nv; i++) {
          mjtNum v[3];
          meshVert(g, ord[i], v);
          mju_subFrom3(v, f->c);
          Q[i][0] = mju_dot3(v, e1) / n1;
          Q[i][1] = mju_dot3(v, e2) / n1;
        }
        for (int i = 0; i < f->nv; i++) {
          const mjtNum *A = Q[i], *B = Q[(i + 1) % f->nv];
          mjtNum cr = (B[0] - A[0]) * (X[1] - A[1]) - (B[1] - A[1]) * (X[0] - A[0]);
          mjtNum len = sqrt((B[0] - A[0]) * (B[0] - A[0]) + (B[1] - A[1]) * (B[1] - A[1]));
          if (cr < -1e-9 * len) inside = 0;
        }
        if (inside) return 0;
        // nearest boundary point: an edge interior or a vertex
        mjtNum best = mjMAXVAL, bt = 0;
        int bi = 0;
        for (int i = 0; i < f->nv; i++) {
          const mjtNum *A = Q[i], *B = Q[(i + 1) % f->nv];
          mjtNum t = segParam(A, B, X);
          mjtNum P[2] = {A[0] + t * (B[0] - A[0]) - X[0], A[1] + t * (B[1] - A[1]) - X[1]};
          mjtNum d2 = P[0] * P[0] + P[1] * P[1];
          if (d2 < best) {
            best = d2;
            bi = i;
            bt = t;
          }
        }
        int a = ord[bi], b = ord[(bi + 1) % f->nv];
        if (bt <= 0 || bt >= 1) {
          f->v[0] = bt <= 0 ? a : b;
          f->nv = 1;
        } else {
          f->v[0] = a;
          f->v[1] = b;
          f->nv = 2;
        }
        return 1;
      }
      return 0;
    default:
      return 0;
  }
}

//---------------------------------- the optimality system -----------------------------------------

int mjdiff_convexSystem(const cvxResult* r, mjtNum* M) {
  int k1 = r->f1.k, k2 = r->f2.k, n = 4 + k1 + k2;
  mju_zero(M, n * n);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      M[n * i + j] = -(r->f1.H[3 * i + j] + r->f2.H[3 * i + j]) - (i == j) * r->phi;
    }
    for (int j = 0; j < k1; j++) {
      M[n * i + 3 + j] = -r->f1.E[3 * j + i];
      M[n * (3 + j) + i] = r->f1.E[3 * j + i];
    }
    for (int j = 0; j < k2; j++) {
      M[n * i + 3 + k1 + j] = r->f2.E[3 * j + i];
      M[n * (3 + k1 + j) + i] = r->f2.E[3 * j + i];
    }
    M[n * i + n - 1] = -r->u[i];
    M[n * (n - 1) + i] = r->u[i];
  }
  return n;
}

// minimum-norm least squares x = A^+ b, A (m x n, m, n <= 8, row-major), b (m x nrhs), x (n x
// nrhs), nrhs <= 12: one-sided Jacobi SVD (Hestenes: rotate column pairs of A V until orthogonal;
// singular values are the column norms), singular values under 1e-10 of the largest dropped
static void pinvSolve(const mjtNum* A, int m, int n, const mjtNum* b, int nrhs, mjtNum* x) {
  mjtNum U[64], V[64], sv[8];
  mju_copy(U, A, m * n);
  mju_zero(V, n * n);
  for (int i = 0; i < n; i++) V[n * i + i] = 1;
  for (int sweep = 0; sweep < 60; sweep++) {
    int rotated = 0;
    for (int p = 0; p < n; p++) {
      for (int q = p + 1; q < n; q++) {
        mjtNum al = 0, be = 0, ga = 0;
        for (int i = 0; i < m; i++) {
          al += U[n * i + p] * U[n * i + p];
          be += U[n * i + q] * U[n * i + q];
          ga += U[n * i + p] * U[n * i + q];
        }
        if (ga == 0 || fabs(ga) <= 1e-15 * sqrt(al * be)) continue;
        rotated = 1;
        mjtNum zeta = (be - al) / (2 * ga);
        mjtNum t = sgn(zeta) / (fabs(zeta) + sqrt(1 + zeta * zeta));
        mjtNum c = 1 / sqrt(1 + t * t), s = c * t;
        for (int i = 0; i < m; i++) {
          mjtNum up = U[n * i + p], uq = U[n * i + q];
          U[n * i + p] = c * up - s * uq;
          U[n * i + q] = s * up + c * uq;
        }
        for (int i = 0; i < n; i++) {
          mjtNum vp = V[n * i + p], vq = V[n * i + q];
          V[n * i + p] = c * vp - s * vq;
          V[n * i + q] = s * vp + c * vq;
        }
      }
    }
    if (!rotated) break;
  }
  mjtNum smax = 0;
  for (int j = 0; j < n; j++) {
    mjtNum s2 = 0;
    for (int i = 0; i < m; i++) s2 += U[n * i + j] * U[n * i + j];
    sv[j] = sqrt(s2);
    smax = mju_max(smax, sv[j]);
  }
  mju_zero(x, n * nrhs);
  for (int j = 0; j < n; j++) {
    if (!(sv[j] > 1e-10 * smax)) continue;
    for (int c = 0; c < nrhs; c++) {
      // (U_j' b) / s_j^2, U_j the unnormalised column
      mjtNum ub = 0;
      for (int i = 0; i < m; i++) ub += U[n * i + j] * b[nrhs * i + c];
      ub /= sv[j] * sv[j];
      for (int i = 0; i < n; i++) x[nrhs * i + c] += V[n * i + j] * ub;
    }
  }
}

void mjdiff_convexPinv(const mjtNum* A, int m, int n, const mjtNum* b, int nrhs, mjtNum* x) {
  pinvSolve(A, m, n, b, nrhs, x);
}

// M y = b by the dense LU of the implicit step (mjdiff_luFactor, partial pivoting; M n x n,
// n <= 8, b n x nrhs overwritten); returns 0 without touching b when a pivot falls under 1e-8 of
// M's largest entry
static int luSolve(const mjtNum* M, int n, mjtNum* b, int nrhs) {
  mjtNum A[64], col[8], amax = 0;
  int piv[8];
  mju_copy(A, M, n * n);
  for (int i = 0; i < n * n; i++) amax = mju_max(amax, fabs(A[i]));
  if (mjdiff_luFactor(n, A, piv)) return 0;
  for (int i = 0; i < n; i++) {
    if (!(fabs(A[n * i + i]) > 1e-8 * amax)) return 0;
  }
  for (int c = 0; c < nrhs; c++) {
    for (int i = 0; i < n; i++) col[i] = b[nrhs * i + c];
    mjdiff_luSolve(n, A, piv, col);
    for (int i = 0; i < n; i++) b[nrhs * i + c] = col[i];
  }
  return 1;
}

// a regular M (every pivot above 1e-8 of its largest entry) is solved directly, where the
// minimum-norm solution is the plain one; a near-singular M (degenerate features) by the SVD
void mjdiff_convexSolve(const mjtNum* M, int n, mjtNum* b, int nrhs) {
  if (luSolve(M, n, b, nrhs)) return;
  mjtNum x[8 * 12];
  pinvSolve(M, n, n, b, nrhs, x);
  mju_copy(b, x, n * nrhs);
}

//---------------------------------- local solve ---------------------------------------------------

// witness points from the features: x_i = c_i + E_i a_i
static void witnesses(cvxResult* r) {
  mju_copy3(r->x1, r->f1.c);
  mju_copy3(r->x2, r->f2.c);
  for (int j = 0; j < r->f1.k; j++) mju_addToScl3(r->x1, r->f1.E + 3 * j, r->f1.a[j]);
  for (int j = 0; j < r->f2.k; j++) mju_addToScl3(r->x2, r->f2.E + 3 * j, r->f2.a[j]);
}

// Newton on the system with the features' modes fixed; 0 if a feature cannot be evaluated
static int newton(const cvxGeom* g1, const cvxGeom* g2, cvxResult* r, mjtNum L) {
  mjtNum prev = mjMAXVAL;
  for (int it = 0; it < NEWTON_ITER; it++) {
    mjtNum mu[3];
    mju_scl3(mu, r->u, -1);
    if (!evalFeature(g1, r->u, &r->f1) || !evalFeature(g2, mu, &r->f2)) return 0;
    if (it == 0) {
      r->f1.a[0] = r->f1.a[1] = r->f2.a[0] = r->f2.a[1] = 0;
      r->phi = mju_dot3(r->u, r->f2.c) - mju_dot3(r->u, r->f1.c);
    }
    witnesses(r);
    mjtNum M[64], y[8];
    int n = mjdiff_convexSystem(r, M), k1 = r->f1.k, k2 = r->f2.k;
    for (int i = 0; i < 3; i++) y[i] = -(r->x2[i] - r->x1[i] - r->phi * r->u[i]);
    for (int j = 0; j < k1; j++) y[3 + j] = -mju_dot3(r->f1.E + 3 * j, r->u);
    for (int j = 0; j < k2; j++) y[3 + k1 + j] = -mju_dot3(r->f2.E + 3 * j, r->u);
    y[n - 1] = 0;
    mjtNum res = 0;
    for (int i = 0; i < n; i++) res = mju_max(res, fabs(y[i]));
    r->residual = res;
    mjdiff_convexSolve(M, n, y, 1);
    mjtNum du = mju_norm3(y);
    mjtNum step = du > 0.3 ? 0.3 / du : 1;
    for (int i = 0; i < 3; i++) r->u[i] += step * y[i];
    mju_normalize3(r->u);
    for (int j = 0; j < k1; j++) r->f1.a[j] += step * y[3 + j];
    for (int j = 0; j < k2; j++) r->f2.a[j] += step * y[3 + k1 + j];
    r->phi += step * y[n - 1];
    // converged, or at the roundoff floor (the step no longer shrinks)
    if (du <= 1e-14 || res <= 1e-15 * L || (du <= 1e-10 && du > 0.5 * prev)) break;
    prev = du;
  }
  // final evaluation at the converged u
  mjtNum mu[3];
  mju_scl3(mu, r->u, -1);
  mjtNum a1[2] = {r->f1.a[0], r->f1.a[1]}, a2[2] = {r->f2.a[0], r->f2.a[1]};
  if (!evalFeature(g1, r->u, &r->f1) || !evalFeature(g2, mu, &r->f2)) return 0;
  r->f1.a[0] = a1[0];
  r->f1.a[1] = a1[1];
  r->f2.a[0] = a2[0];
  r->f2.a[1] = a2[1];
  witnesses(r);
  return 1;
}

// resolution of a geom's surface: mesh vertices are single precision, so a hull face is flat only
// to about its float rounding (4e-7 of the mesh's size is allowed); exact for the others
static mjtNum flatTol(const cvxGeom* g) {
  return g->type == mjGEOM_MESH ? 4e-7 * g->scale : 0;
}

// the witness coordinates as the minimum-norm solution of E2 a2 - E1 a1 = -(c2 - c1 - phi u) (the
// choice where the features are degenerate, independent of the Newton path; unique otherwise)
static void minNormWitness(cvxResult* r) {
  int k1 = r->f1.k, k = k1 + r->f2.k;
  if (k == 0) return;
  mjtNum A[3 * 4], b[3], a[4];
  for (int i = 0; i < 3; i++) {
    b[i] = -(r->f2.c[i] - r->f1.c[i] - r->phi * r->u[i]);
    for (int j = 0; j < k1; j++) A[k * i + j] = -r->f1.E[3 * j + i];
    for (int j = k1; j < k; j++) A[k * i + j] = r->f2.E[3 * (j - k1) + i];
  }
  pinvSolve(A, 3, k, b, 1, a);
  for (int j = 0; j < k1; j++) r->f1.a[j] = a[j];
  for (int j = k1; j < k; j++) r->f2.a[j - k1] = a[j];
  witnesses(r);
}

// does the solution verify with the true support functions?
static int verify(const cvxGeom* g1, const cvxGeom* g2, cvxResult* r, mjtNum L) {
  mjtNum mu[3], s1[3], s2[3], d[3];
  mju_scl3(mu, r->u, -1);
  mjdiff_convexSupport(g1, r->u, s1);
  mjdiff_convexSupport(g2, mu, s2);
  mjtNum h1 = mju_dot3(r->u, s1), h2 = -mju_dot3(r->u, s2);
  mju_sub3(d, r->x2, r->x1);
  mju_addToScl3(d, r->u, -r->phi);
  mjtNum res = mju_norm3(d);
  res = mju_max(res, fabs(r->phi + h1 + h2));
  res = mju_max(res, h1 - mju_dot3(r->u, r->x1));
  res = mju_max(res, h2 + mju_dot3(r->u, r->x2));
  r->residual = res;
  return res <= 1e-9 * L + flatTol(g1) + flatTol(g2);
}

// features of the solution still the support at u? (else identify them again at u)
static int stillSupport(const cvxGeom* g, const mjtNum dir[3], const mjtNum x[3], mjtNum L) {
  mjtNum s[3];
  mjdiff_convexSupport(g, dir, s);
  return mju_dot3(dir, s) - mju_dot3(dir, x) <= 1e-10 * L + flatTol(g);
}

// one candidate from u0 with identification tolerance tol; 1 if it verifies
static int polish(const cvxGeom* g1, const cvxGeom* g2, const mjtNum u0[3], mjtNum tol, mjtNum L,
                  cvxResult* r) {
  memset(r, 0, sizeof(*r));
  mju_copy3(r->u, u0);
  mjtNum mu[3];
  mju_scl3(mu, u0, -1);
  if (!identify(g1, u0, tol, &r->f1) || !identify(g2, mu, tol, &r->f2)) return 0;
  for (int outer = 0; outer < ACTIVE_ITER; outer++) {
    if (!newton(g1, g2, r, L)) return 0;
    mjtNum t1[3], t2[3];
    minNormWitness(r);
    int c1 = adjustFeature(g1, &r->f1, t1), c2 = adjustFeature(g2, &r->f2, t2);
    if (c1 || c2) {
      mju_addToScl3(r->u, t1, 1e-3);
      mju_addToScl3(r->u, t2, -1e-3);
      mju_normalize3(r->u);
      continue;
    }
    mju_scl3(mu, r->u, -1);
    int ok1 = stillSupport(g1, r->u, r->x1, L), ok2 = stillSupport(g2, mu, r->x2, L);
    if (ok1 && ok2) return verify(g1, g2, r, L);
    if (!ok1 && !identify(g1, r->u, tol, &r->f1)) return 0;
    if (!ok2 && !identify(g2, mu, tol, &r->f2)) return 0;
  }
  return 0;
}

// the core of a sphere (its centre) or a capsule (its segment): the geom with radius 0; returns
// the radius taken off (0 for the other types, whose copy is the geom itself)
static mjtNum coreGeom(const cvxGeom* g, cvxGeom* core) {
  *core = *g;
  if (g->type != mjGEOM_SPHERE && g->type != mjGEOM_CAPSULE) return 0;
  core->size[0] = 0;
  return g->size[0];
}

int mjdiff_convexDistanceCut(const cvxGeom* g1, const cvxGeom* g2, mjtNum cut, cvxResult* r) {
  mjtNum L = g1->scale + g2->scale, u0[3], P[4][3], lb = 0;

  // global stage on the cores: a sphere or capsule is its core (a point, a segment) swept by its
  // radius, h_i = h_core,i + r_i, so sigma = sigma_core - r1 - r2 with the same optimal u. Against
  // a polytope (box, mesh hull, prism) GJK and EPA then end exactly in a few iterations instead of
  // creeping toward a curved surface; the local stage below is on the geoms themselves
  cvxGeom c1, c2;
  mjtNum rad = coreGeom(g1, &c1) + coreGeom(g2, &c2);
  int n = 0, apart = gjk(&c1, &c2, L, cut + rad + 1e-9 * L, u0, P, &n, &lb);
  if (apart == 2) {  // proven beyond the cut: no local solve
    memset(r, 0, sizeof(*r));
    mju_copy3(r->u, u0);
    r->phi = lb - rad;
    r->residual = mjMAXVAL;
    return 1;
  }
  if (!apart) {
    if (!epaStart(&c1, &c2, L, P, n) || !epa(&c1, &c2, L, P, u0)) {
      mju_sub3(u0, g2->pos, g1->pos);
      if (mju_normalize3(u0) < mjMINVAL) u0[0] = 1;
    }
  }
  mjtNum phi0 = sigmaOf(g1, g2, u0);

  // candidates over a ladder of identification tolerances: the first that verifies (and does not
  // fall below the global estimate) is the solution
  static const mjtNum ladder[] = {1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2};
  for (int i = 0; i < (int)(sizeof(ladder) / sizeof(ladder[0])); i++) {
    if (polish(g1, g2, u0, ladder[i] * L, L, r) && r->phi >= phi0 - 1e-9 * L) return 0;
  }

  // not verified: the global estimate
  memset(r, 0, sizeof(*r));
  mju_copy3(r->u, u0);
  r->phi = phi0;
  mjtNum mu[3];
  mju_scl3(mu, u0, -1);
  mjdiff_convexSupport(g1, u0, r->x1);
  mjdiff_convexSupport(g2, mu, r->x2);
  r->residual = mjMAXVAL;
  return -1;
}

int mjdiff_convexDistance(const cvxGeom* g1, const cvxGeom* g2, cvxResult* r) {
  return mjdiff_convexDistanceCut(g1, g2, mjMAXVAL, r);
}

//---------------------------------- contacts ------------------------------------------------------

// the contact frame MuJoCo 2.2.2 builds from a normal n (mju_makeFrame with no tangent given, not
// exported by the library): t1 = e_y, or e_z if |n_y| >= 1/2, made orthogonal to n and normalised;
// t2 = n x t1
static void contactFrame(mjtNum frame[9], const mjtNum n[3]) {
  mju_zero(frame, 9);
  mju_copy3(frame, n);
  mju_normalize3(frame);
  if (frame[1] < 0.5 && frame[1] > -0.5) {
    frame[4] = 1;
  } else {
    frame[5] = 1;
  }
  mju_addToScl3(frame + 3, frame, -mju_dot3(frame, frame + 3));
  mju_normalize3(frame + 3);
  mju_cross(frame + 6, frame, frame + 3);
}

//---------------------------------- height fields -------------------------------------------------

mjtNum mjdiff_contactMargin(const mjModel* m, const mjContact* con) {
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  int pair = mjdiff_pairIndex(m, g1, g2);
  mjtNum gap =
      pair >= 0 ? m->pair_gap[pair] : compat_pairCombine(m->geom_gap[g1], m->geom_gap[g2]);
  return con->includemargin + gap;
}

mjtNum mjdiff_contactOffset(const mjModel* m, const mjContact* con) {
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  int pair = mjdiff_pairIndex(m, g1, g2);
  mjtNum margin = pair >= 0 ? m->pair_margin[pair]
                            : compat_pairCombine(m->geom_margin[g1], m->geom_margin[g2]);
  if (m->opt.enableflags & mjENBL_OVERRIDE) margin = m->opt.o_margin;
#if MJDIFF_MUJOCO_3
  return margin;  // 3.x: the gap widens the detection (margin + gap), the constraint acts at margin
#else
  mjtNum gap = pair >= 0 ? m->pair_gap[pair] : compat_pairCombine(m->geom_gap[g1], m->geom_gap[g2]);
  return margin - gap;  // 2.2: includemargin = margin - gap
#endif
}

mjtNum mjdiff_contactDepth(const mjModel* m, const mjContact* con, mjtNum w) {
  return w - con->dist + mjdiff_contactOffset(m, con);
}

// mjc_ConvexHField's prisms: per grid row r in [rmin, rmax) a triangle strip over the vertices
// j = 0, 1, ... (column cmin + j/2, row r + 1 for even j, r for odd j); prism k of the row has the
// vertices k - 2, k - 1, k with bottoms at -size[3] and tops at data size[2] (MuJoCo raises the
// tops by the margin for MPR; the exact geometry uses the field itself). A prism is a candidate
// unless its three tops raised by the margin are all below g2's lowest point.
int mjdiff_convexPrisms(const mjModel* m, const mjData* d, int g1, int g2, mjtNum margin, int start,
                        cvxGeom* prism, int max) {
  int hid = m->geom_dataid[g1];
  if (hid < 0) return 0;
  const mjtNum* sz = m->hfield_size + 4 * hid;
  int nrow = m->hfield_nrow[hid], ncol = m->hfield_ncol[hid];
  const float* data = m->hfield_data + m->hfield_adr[hid];
  const mjtNum *p1 = d->geom_xpos + 3 * g1, *R1 = d->geom_xmat + 9 * g1;
  cvxGeom b;
  if (mjdiff_convexGeom(m, d, g2, &b)) return 0;

  // extent of g2 in the field's frame (support maps along the field's axes)
  mjtNum lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    mjtNum a[3], na[3], s[3];
    axis(R1, k, a);
    mju_scl3(na, a, -1);
    mjdiff_convexSupport(&b, a, s);
    mju_subFrom3(s, p1);
    hi[k] = mju_dot3(a, s);
    mjdiff_convexSupport(&b, na, s);
    mju_subFrom3(s, p1);
    lo[k] = mju_dot3(a, s);
  }
  int cmin = (int)floor((lo[0] + sz[0]) / (2 * sz[0]) * (ncol - 1));
  int cmax = (int)ceil((hi[0] + sz[0]) / (2 * sz[0]) * (ncol - 1));
  int rmin = (int)floor((lo[1] + sz[1]) / (2 * sz[1]) * (nrow - 1));
  int rmax = (int)ceil((hi[1] + sz[1]) / (2 * sz[1]) * (nrow - 1));
  cmin = cmin < 0 ? 0 : cmin;
  cmax = cmax > ncol - 1 ? ncol - 1 : cmax;
  rmin = rmin < 0 ? 0 : rmin;
  rmax = rmax > nrow - 1 ? nrow - 1 : rmax;
  mjtNum dx = 2 * sz[0] / (ncol - 1), dy = 2 * sz[1] / (nrow - 1);
  int n = 0;
  for (int r = rmin; r < rmax; r++) {
    int nv = 2 * (cmax - cmin + 1);
    for (int k = 2; k < nv; k++) {
      mjtNum v[3][3];
      int below = 1;
      for (int j = 0; j < 3; j++) {
        int q = k - 2 + j, c = cmin + q / 2, row = r + (q % 2 == 0 ? 1 : 0);
        v[j][0] = dx * c - sz[0];
        v[j][1] = dy * row - sz[1];
        v[j][2] = data[row * ncol + c] * sz[2];
        below = below && v[j][2] + margin < lo[2];
      }
      if (below) continue;

      // separation along the prism's top normal n (field frame): a lower bound of the distance;
      // past the margin the prism cannot touch (exact culling: no solve for it)
      mjtNum e1[3], e2[3], tn[3], nw[3], sw[3], sf[3];
      mju_sub3(e1, v[1], v[0]);
      mju_sub3(e2, v[2], v[0]);
      mju_cross(tn, e1, e2);
      if (tn[2] < 0) mju_scl3(tn, tn, -1);
      if (mju_normalize3(tn) > mjMINVAL) {
        mju_mulMatVec(nw, R1, tn, 3, 3);
        mju_scl3(nw, nw, -1);
        mjdiff_convexSupport(&b, nw, sw);
        mju_subFrom3(sw, p1);
        mju_mulMatTVec(sf, R1, sw, 3, 3);
        if (mju_dot3(tn, sf) - mju_dot3(tn, v[0]) > margin) continue;
      }
      if (n >= start && n < start + max) {
        cvxGeom* g = prism + (n - start);
        memset(g, 0, sizeof(*g));
        g->type = mjGEOM_HFIELD;
        mju_copy3(g->pos, p1);
        mju_copy(g->mat, R1, 9);
        g->nvert = 6;
        for (int j = 0; j < 3; j++) {
          mju_copy3(g->pv[j], v[j]);
          g->pv[j][2] = -sz[3];
          mju_copy3(g->pv[3 + j], v[j]);
        }
        mjtNum ext = 0;
        for (int a = 0; a < 6; a++) {
          for (int c = a + 1; c < 6; c++) ext = mju_max(ext, mju_dist3(g->pv[a], g->pv[c]));
        }
        g->scale = ext;
      }
      n++;
    }
  }
  return n;
}

int mjdiff_convexHFieldSelect(const mjModel* m, const mjData* d, int g1, int g2, mjtNum margin,
                              int max, int* idx, mjtNum* sol) {
  cvxGeom b, batch[16];
  if (max > mjMAXCONPAIR) max = mjMAXCONPAIR;
  if (mjdiff_convexGeom(m, d, g2, &b)) return -1;

  // merge radius: half the smaller grid spacing
  int hid = m->geom_dataid[g1];
  const mjtNum* sz = m->hfield_size + 4 * hid;
  int nrow = m->hfield_nrow[hid], ncol = m->hfield_ncol[hid];
  mjtNum dx = 2 * sz[0] / (ncol > 1 ? ncol - 1 : 1), dy = 2 * sz[1] / (nrow > 1 ? nrow - 1 : 1);
  mjtNum R = 0.5 * mju_min(dx, dy);

  // every candidate prism within the margin: index and solution (phi, u, x1 the witness on the
  // field, x2)
  enum { NCAND = 256 };
  mjtNum csol[NCAND][10];
  int cid[NCAND], nc = 0;
  int total = mjdiff_convexPrisms(m, d, g1, g2, margin, 0, batch, 0);
  for (int s0 = 0; s0 < total; s0 += 16) {
    int cnt = total - s0 < 16 ? total - s0 : 16;
    mjdiff_convexPrisms(m, d, g1, g2, margin, s0, batch, cnt);
    for (int q = 0; q < cnt; q++) {
      cvxResult r;
      if (mjdiff_convexDistanceCut(batch + q, &b, margin, &r) || r.phi >= margin) continue;
      int slot = nc < NCAND ? nc++ : -1;
      if (slot < 0) {  // full: replace the shallowest
        slot = 0;
        for (int j = 1; j < nc; j++) slot = csol[j][0] > csol[slot][0] ? j : slot;
        if (r.phi >= csol[slot][0]) continue;
      }
      cid[slot] = s0 + q;
      csol[slot][0] = r.phi;
      mju_copy3(csol[slot] + 1, r.u);
      mju_copy3(csol[slot] + 4, r.x1);
      mju_copy3(csol[slot] + 7, r.x2);
    }
  }

  // deepest first, dropping a prism whose witness lies within R of a kept one (prisms sharing an
  // edge or a cell's diagonal touch the geom at the same place: one surface, one contact)
  int keep[mjMAXCONPAIR], nk = 0;
  unsigned char used[NCAND];
  memset(used, 0, sizeof(used));
  while (nk < max) {
    int best = -1;
    for (int j = 0; j < nc; j++) {
      if (!used[j] && (best < 0 || csol[j][0] < csol[best][0] ||
                       (csol[j][0] == csol[best][0] && cid[j] < cid[best]))) {
        best = j;
      }
    }
    if (best < 0) break;
    used[best] = 1;
    int near = 0;
    for (int j = 0; j < nk && !near; j++) {
      mjtNum dif[3];
      mju_sub3(dif, csol[best] + 4, csol[keep[j]] + 4);
      near = mju_norm3(dif) < R;
    }
    if (!near) keep[nk++] = best;
  }

  // in prism order
  for (int i = 1; i < nk; i++) {
    for (int j = i; j > 0 && cid[keep[j - 1]] > cid[keep[j]]; j--) {
      int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  }
  for (int i = 0; i < nk; i++) {
    idx[i] = cid[keep[i]];
    if (sol) mju_copy(sol + 10 * i, csol[keep[i]], 10);
  }
  return nk;
}

// the contacts MuJoCo made for height field g1 and geom g2 (nm of them, from con on): the exact
// solutions of the prisms mjdiff_convexHFieldSelect keeps, in MuJoCo's prism order; returns how
// many were written at out, -1 if g2 has no support map
static int hfieldContacts(const mjModel* m, mjData* d, const mjContact* con, int nm,
                          mjContact* out) {
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  mjtNum margin = mjdiff_contactMargin(m, con);
  mjContact tmpl = *con;
  int idx[mjMAXCONPAIR];
  mjtNum sol[10 * mjMAXCONPAIR];
  int nb = mjdiff_convexHFieldSelect(m, d, g1, g2, margin, nm, idx, sol);
  if (nb < 0) return -1;
  for (int j = 0; j < nb; j++) {
    const mjtNum* r = sol + 10 * j;  // phi, u, x1, x2
    out[j] = tmpl;
    out[j].dist = r[0];
    for (int i = 0; i < 3; i++) out[j].pos[i] = 0.5 * (r[4 + i] + r[7 + i]);
    contactFrame(out[j].frame, r + 1);
    out[j].exclude = out[j].dist < out[j].includemargin ? 0 : 1;
  }
  return nb;
}

void mjdiff_convexContacts(const mjModel* m, mjData* d) {
  int k = 0;
  for (int i = 0; i < d->ncon; i++) {
    mjContact* con = d->contact + i;
    int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
    int convex = mjdiff_convexPair(m->geom_type[g1], m->geom_type[g2]);

    // height field: the pair's run of contacts replaced by the exact prism contacts
    if (convex == 2) {
      int nm = 1;
      while (i + nm < d->ncon && compat_contactGeom1(d->contact + i + nm) == g1 &&
             compat_contactGeom2(d->contact + i + nm) == g2) {
        nm++;
      }
      mjContact out[mjMAXCONPAIR];
      int nout = hfieldContacts(m, d, con, nm, out);
      if (nout < 0) {  // keep MuJoCo's
        for (int j = 0; j < nm; j++) d->contact[k++] = d->contact[i + j];
      } else {
        for (int j = 0; j < nout; j++) d->contact[k++] = out[j];
      }
      i += nm - 1;
      continue;
    }

    // one contact per convex pair: drop multi-CCD extras (same pair as the previous kept)
    if (convex && k > 0) {
      const mjContact* prev = d->contact + k - 1;
      if (compat_contactGeom1(prev) == g1 && compat_contactGeom2(prev) == g2) continue;
    }
    if (convex) {
      cvxGeom a, b;
      cvxResult r;
      if (!mjdiff_convexGeom(m, d, g1, &a) && !mjdiff_convexGeom(m, d, g2, &b) &&
          !mjdiff_convexDistance(&a, &b, &r)) {
        con->dist = r.phi;
        for (int j = 0; j < 3; j++) con->pos[j] = 0.5 * (r.x1[j] + r.x2[j]);
        contactFrame(con->frame, r.u);
        con->exclude = con->dist < con->includemargin ? 0 : 1;
      }
    }
    if (k != i) d->contact[k] = *con;
    k++;
  }
  d->ncon = k;
}
