// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Exact contact geometry of the geom pairs MuJoCo 2.2.2 collides with mjc_Convex (libccd MPR):
// signed distance, normal and witness points of two convex geoms from their support functions
// (plugin/convex.c), shared with the derivative (adjoint/convex_d.c). Internal header.

#ifndef MJDIFF_CONVEX_H_
#define MJDIFF_CONVEX_H_

#include <mjdiff/base.h>
#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CVX_MAXFACE 64  // vertices of a mesh-hull face feature kept (more: the face is refused)

// one geom in the world frame
typedef struct {
  int type;           // mjtGeom: sphere, capsule, ellipsoid, cylinder, box or mesh
  mjtNum pos[3];      // geom_xpos
  mjtNum mat[9];      // geom_xmat
  mjtNum size[3];     // geom_size
  const float* vert;  // mesh: vertices (mesh frame = geom frame), hull vertex i at vert + 3 vid[i]
  const int* vid;     // mesh: hull vertex ids (NULL: every vertex)
  int nvert;          // mesh: number of hull vertices
  mjtNum scale;       // length scale (bounding radius)
  mjtNum pv[6][3];    // height-field prism (type mjGEOM_HFIELD): vertices in the field's frame
} cvxGeom;

// the active feature of a geom at its witness point: x = c(dir) + E a, with c smooth in the
// support direction dir (dc/ddir = H, world frame), E (3 x k, columns scaled by the feature's
// extent) its flat directions and a in the feature's bounds
typedef struct {
  int mode[3];         // box: per axis -1, 0 (flat), +1; capsule/cylinder: see convex.c
  int nv;              // mesh: feature vertices (1 vertex, 2 edge, >= 3 face polygon)
  int v[CVX_MAXFACE];  // mesh: hull vertex indices (face: in polygon order)
  mjtNum c[3];         // reference point at the solution (world)
  mjtNum H[9];         // dc/ddir (world, symmetric)
  int k;               // flat directions (0..2)
  mjtNum E[6];         // flat directions: column j is E[3 j .. 3 j + 2] (world)
  mjtNum a[2];         // coordinates of the witness along E
} cvxFeature;

// solution: phi = max over unit u of -h1(u) - h2(-u); x2 - x1 = phi u
typedef struct {
  mjtNum phi;           // signed distance (< 0: minus the penetration depth)
  mjtNum u[3];          // unit normal from geom 1 to geom 2
  mjtNum x1[3], x2[3];  // witness points on geom 1 and geom 2
  cvxFeature f1, f2;    // active features (geom 1 at u, geom 2 at -u)
  mjtNum residual;      // optimality residual at the solution (length units)
} cvxResult;

// 1 if MuJoCo 2.2.2 collides geom types t1, t2 (any order) with mjc_Convex, 2 if with
// mjc_ConvexHField (a height field against sphere, capsule, ellipsoid, cylinder, box or mesh: per
// triangular prism of the grid), else 0
MJDIFF_API int mjdiff_convexPair(int t1, int t2);

// the candidate prisms of height field g1 against geom g2 as mjc_ConvexHField enumerates them
// (sub-grid under g2's extent, prisms whose top raised by the margin is not below g2), less those
// whose separation along their top normal exceeds the margin (it bounds the distance below), in
// its order: candidates start .. start + max - 1 into prism; returns the total number of candidates
MJDIFF_API int mjdiff_convexPrisms(const mjModel* m, const mjData* d, int g1, int g2, mjtNum margin,
                                   int start, cvxGeom* prism, int max);

// the prisms whose exact solutions become the contacts of height field g1 and geom g2: the
// candidates of mjdiff_convexPrisms with phi < margin, deepest first, less those whose witness lies
// within half a grid spacing of a kept one, at most max, in MuJoCo's prism order (candidate
// indices into idx); returns their number, -1 if g2 has no support map. The pair's contacts in
// d->contact are these prisms' solutions in this order, so contact j of the pair's run of n is the
// solution of prism idx[j] of the selection with max = n. sol (max x 10), if not NULL, receives
// each kept prism's solution (phi, u, x1, x2) in the same order.
MJDIFF_API int mjdiff_convexHFieldSelect(const mjModel* m, const mjData* d, int g1, int g2,
                                         mjtNum margin, int max, int* idx, mjtNum* sol);

// the margin any contact was detected with: includemargin + gap (the MJCF pair's gap, else the
// larger of the geoms'); used by every pair function that depends on the margin
MJDIFF_API mjtNum mjdiff_contactMargin(const mjModel* m, const mjContact* con);

// the distance at which MuJoCo's own constraint acts on contact con: its includemargin (2.2:
// margin - gap; 3.x: margin, the gap only widening the detection), from m's own values (the MJCF
// pair's, else the geoms' combined as the engine does; the override flag's o_margin), not from
// the raised activation margins con was detected with. The native step holds a body about that
// far out; the smooth laws measure the contact's depth from it (mjdiff_contactDepth)
MJDIFF_API mjtNum mjdiff_contactOffset(const mjModel* m, const mjContact* con);

// the activation depth of contact con's laws with width w, measured from its offset:
// x = w - (dist - offset), active where x > 0 (README, "The smooth model"); every law and its
// derivatives take it from here
MJDIFF_API mjtNum mjdiff_contactDepth(const mjModel* m, const mjContact* con, mjtNum w);

// geom g of (m, d) as a cvxGeom; returns 0, -1 if its type has no support map here
MJDIFF_API int mjdiff_convexGeom(const mjModel* m, const mjData* d, int g, cvxGeom* geom);

// support point of geom in the world direction dir (unit): s = argmax_{x in geom} dir.x
MJDIFF_API void mjdiff_convexSupport(const cvxGeom* geom, const mjtNum dir[3], mjtNum s[3]);

// exact signed distance: returns 0 on success, -1 if the solve did not verify (r then holds the
// best estimate). Deterministic; no allocation.
MJDIFF_API int mjdiff_convexDistance(const cvxGeom* g1, const cvxGeom* g2, cvxResult* r);

// the same, stopping early when the distance is proven above cut (GJK's lower bound exceeds it by
// 1e-9 of the geoms' size): returns 1 then, r->phi the lower bound, r->u its direction, no
// witnesses. Candidates that would be discarded beyond a margin cost a few GJK iterations.
MJDIFF_API int mjdiff_convexDistanceCut(const cvxGeom* g1, const cvxGeom* g2, mjtNum cut,
                                        cvxResult* r);

// c, H, E of feature f of g (its modes, or its mesh / prism vertex set f->v[0 .. nv - 1], given) in
// the support direction dir (unit, world); a is left alone. Returns 0 if it is degenerate.
int mjdiff_convexFeature(const cvxGeom* g, const mjtNum dir[3], cvxFeature* f);

// the optimality system at a solution (derivation in convex.c): M (n x n, n = 4 + k1 + k2,
// row-major) in the unknowns y = (du (3), a1 (k1), a2 (k2), dphi); returns n
int mjdiff_convexSystem(const cvxResult* r, mjtNum* M);

// least-squares minimum-norm solve of M y = b for nrhs right-hand sides (b: n x nrhs row-major,
// overwritten by y, nrhs <= 12): by elimination when every pivot is above 1e-8 of M's largest
// entry, else by the SVD with singular values under 1e-10 of the largest dropped
void mjdiff_convexSolve(const mjtNum* M, int n, mjtNum* b, int nrhs);

// the same minimum-norm least squares x = A^+ b for a rectangular A (m x n, m, n <= 8, row-major),
// b (m x nrhs), x (n x nrhs), nrhs <= 12: the forward's choice of degenerate witnesses
void mjdiff_convexPinv(const mjtNum* A, int m, int n, const mjtNum* b, int nrhs, mjtNum* x);

// overwrite every contact of d that MuJoCo sent to mjc_Convex with the exact geometry (dist, pos,
// frame; one contact per geom pair: extra multi-CCD contacts of the pair are removed)
void mjdiff_convexContacts(const mjModel* m, mjData* d);

// Jacobian of (dist, n, pos) of a convex-pair contact in z = (dx1, dth1, dx2, dth2) (7 x 12):
// adjoint/convex_d.c; returns 0, -1 if the contact is not the exact solution at d's poses
MJDIFF_API int mjdiff_convexGeomJacobian(const mjModel* m, const mjData* d, const mjContact* con,
                                         mjtNum J[7 * 12]);

// the same from two geoms and their solution
MJDIFF_API void mjdiff_convexJacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r,
                                      mjtNum J[7 * 12]);

// Jacobian of the same contact in the two geoms' sizes s = (size1[0..2], size2[0..2]) (7 x 6),
// poses fixed: adjoint/convex_d.c. Mesh and height-field sizes are no collision parameters (zero
// columns). Returns 0, -1 as mjdiff_convexGeomJacobian
MJDIFF_API int mjdiff_convexGeomSizeJacobian(const mjModel* m, const mjData* d,
                                             const mjContact* con, mjtNum Js[7 * 6]);

// the same from two geoms and their solution
MJDIFF_API void mjdiff_convexSizeJacobian(const cvxGeom* g1, const cvxGeom* g2, const cvxResult* r,
                                          mjtNum Js[7 * 6]);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_CONVEX_H_
