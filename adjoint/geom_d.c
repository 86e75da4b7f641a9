// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Contact geometry derivative: for one contact reported by MuJoCo 2.2.2's collision detection,
// the Jacobian of y = (dist, n, pos) with respect to rigid motions (dx1, dth1, dx2, dth2) of its
// two geoms and to their sizes (ds1, ds2: the geom_size rows), for the pair functions of the
// collision table that have closed forms (engine_collision_primitive.c, engine_collision_box.c)
// and for mjc_PlaneConvex (engine_collision_convex.c: plane-ellipsoid, plane-mesh). The pairs
// MuJoCo sends to mjc_Convex (libccd MPR) and height fields (mjc_ConvexHField, per grid prism) get
// their exact geometry from plugin/convex.c and their pose and size Jacobians from convex_d.c.
//
// Method. The pair function is evaluated again at the current poses with the engine's case logic
// (which end, corner, edge or face produced a contact), every continuous quantity carrying its
// Jacobian with respect to z = (dx1, dth1, dx2, dth2, ds1, ds2) (a 1 x 18 gradient or a 3 x 18
// matrix; mjdiff_contactGeomJacobian returns the 12 pose columns, mjdiff_contactGeomSizeJacobian
// the 6 size columns: one evaluation, one code path). Of the candidate contacts
// the function produces (margin filters mostly ignored: extra candidates do no harm; the margin,
// includemargin + gap, is used where it changes the engine's choices), the one nearest to con in
// (pos, dist, n) is differentiated; if none agrees with con to 1e-6 (relative to the geoms' size)
// the call fails. Cases are frozen: this is the derivative where the contact set does not switch.
//
// Notation. p_i, R_i: position and orientation of geom i (d->geom_xpos, d->geom_xmat); s_i its
// size; x_i, y_i, z_i its axes (columns of R_i); e_k unit vectors. A point c and a direction a
// fixed to geom i move as
//   dc = dx_i + dth_i x (c - p_i),    da = dth_i x a;
// and coordinates in a frame F fixed to geom i, l = F'(v - p_i), as
//   dl = F'(dv - dx_i - dth_i x (v - p_i)).
// Sizes. Every size entry in the formulas below (r = s[0], h = s[1], a box's half sizes s[0..2],
// signed +-s[k] at corners, edges and faces, the ellipsoid's S) is a tracked input with
// d s_i[k] = ds_i[k]; poses do not move sizes and sizes do not move poses. The engine's case
// decisions (clamps, nearest feature, margin tests) are taken on values, as for poses: the size
// columns are the derivative within the frozen case. Entries a type does not read (a sphere's
// s[1..2], every plane size: the plane pair functions treat the plane as unbounded) get zero
// columns. A mesh geom's size is no collision parameter (mjc_PlaneConvex reads mesh_vert only):
// zero columns. geom_rbound (broad phase; plane-mesh's vertex spacing threshold) is held fixed.
// Elementary rules (applied to each formula below, in the order the engine evaluates it):
//   d(a.b) = da.b + a.db,  d(a x b) = da x b + a x db,  d(a/b) = (da - (a/b) db)/b,
//   d|v| = u.dv,  d(v/|v|) = (I - u u') dv/|v|  (u = v/|v|),  d|x| = sign(x) dx,
//   d clamp(x, lo, hi) = dx inside, 0 when clamped,  d min(a, b) = d of the smaller.
//
// ---- kernels
// sphere-sphere S(c1, r1, c2, r2):
//   L = |c2 - c1|,  n = (c2 - c1)/L,  dist = L - r1 - r2,  pos = c1 + (r1 + dist/2) n
//   ddist = n.(dc2 - dc1),  dn = (I - n n')(dc2 - dc1)/L,
//   dpos = dc1 + (r1 + dist/2) dn + n ddist/2
//   (coincident centres: n = z1 x z2 normalised, as the engine does; dist has no derivative)
// plane-point P(c, r), the plane = geom 1:
//   n = z1,  dist = n.(c - p1) - r,  pos = c - (r + dist/2) n
//   dn = dth1 x n,  ddist = dn.(c - p1) + n.(dc - dx1),  dpos = dc - (r + dist/2) dn - n ddist/2
//
// ---- pairs (geom1 has the lower mjtGeom type, as the engine orders them)
// plane-sphere     P(p2, r2)
// plane-capsule    P(p2 + h z2, r2) and P(p2 - h z2, r2), h = s2[1]; dc = dx2 + dth2 x (c - p2)
// plane-ellipsoid  mjc_PlaneConvex: the support point of geom 2 along -n (mjccd_support with
//                  margin 0), one contact P(x, 0):
//                    d = R2'(-n),  w = S d  (S = diag(s2)),  u = w/|w|,  x = p2 + R2 S u
//                    (x = p2 + R2 S^2 d/|S d|: the point of the surface |S^-1 R2'(x - p2)| = 1
//                    farthest along -n)
//                  dd = R2'((dth2 - dth1) x n)  [dn = dth1 x n, d(R2'v) = R2'(dv - dth2 x v)],
//                  dw = S dd + dS d,  du = (I - u u') dw/|w|,
//                  dx = dx2 + dth2 x (x - p2) + R2 (dS u + S du)
//                  (the surface normal at x is -n, so n.R2 S du = 0: du moves pos along the
//                  plane but not dist). Smooth everywhere: the ellipsoid is strictly convex.
// plane-mesh       mjc_PlaneConvex: P(c, 0) at vertices c = p2 + R2 v (v the float mesh_vert,
//                  fixed in geom 2's frame: dc = dx2 + dth2 x (c - p2)): the support vertex along
//                  -n (hill climb on the hull graph mesh_graph, or an exhaustive search without
//                  one) and at most 2 more (3 contacts in all), taken among the vertices with
//                  dist < margin in the graph's neighbour order of the support vertex (without a
//                  graph: all vertices in index order), skipping any nearer than 0.3 geom_rbound
//                  to the first contact's pos. con is matched by value over all mesh vertices
//                  (the vertex whose P(c, 0) is nearest to con); only that one is tracked.
// plane-box        P(c, 0) at each corner c = p2 + R2 (+-s2) with n.(c - p2) <= 0 (4 kept at most)
// plane-cylinder   a = +-z2 with n.a <= 0, w = (n.a) a - n, u = r w/|w| (towards the rim point
//                  nearest the plane; u = r x2 if |w| < mjMINVAL), h = s2[1], d0 = n.(p2 - p1):
//                    near rim    dist = d0 + h n.a + n.u,     pos = p2 + u + h a - n dist/2
//                    far rim     dist = d0 - h n.a + n.u,     pos = p2 + u - h a - n dist/2
//                    2 more      dist = d0 + h n.a - n.u/2,
//                                pos = p2 + h a - u/2 +- (sqrt(3)/2) r v - n dist/2,
//                                v = (u x a)/|u x a|
//                  dn = dth1 x n, da = dth2 x a, dw = (dn.a + n.da) a + (n.a) da - dn,
//                  du = r (I - w w'/|w|^2) dw/|w|, dv = (I - v v')(du x a + u x da)/|u x a|
//                  (|w| -> 0 as the disk lies flat: du grows as 1/|w|, the engine's u turns fast)
// sphere-sphere    S(p1, r1, p2, r2)
// sphere-capsule   S(p1, r1, c, r2), c = p2 + x A, A = s2[1] z2,
//                  x = clamp(A.(p1 - p2)/(A.A), -1, 1)
//                  dc = dx2 + x dA + A dx,  dA = dth2 x A,
//                  dx = (dA.(p1 - p2) + A.(dx1 - dx2))/(A.A) inside, 0 clipped
// capsule-capsule  c_i = p_i + x_i A_i, A_i = s_i[1] z_i;  S(c1, r1, c2, r2). With ma = A1.A1,
//                  mb = -A1.A2, mc = A2.A2, u = -A1.(p1 - p2), v = A2.(p1 - p2),
//                  det = ma mc - mb^2:
//                  x1 = (mc u - mb v)/det, x2 = (ma v - mb u)/det, then the engine's clipping: a
//                  clipped x_i = +-1 is constant and the other becomes its 1-D optimum
//                  x2 = (v - mb x1)/mc or x1 = (u - mb x2)/ma (clipped in turn). Parallel axes
//                  (|det| < mjMINVAL): each end of one segment against the clipped 1-D optimum on
//                  the other, up to 4 contacts. dA_i = dth_i x A_i, dma = dmc = 0,
//                  dmb = -(dA1.A2 + A1.dA2), du = -(dA1.(p1 - p2) + A1.(dx1 - dx2)), dv likewise.
// sphere-box       B(C, r) with C = p1, r = s1[0], the box = geom 2:
//                  l = R2'(C - p2), q = clamp(l, -s2, s2), t = q - l
//                  outside (|t| > mjMINVAL): n = R2 t/|t|, dist = |t| - r,
//                    pos = p2 + R2 (q + l + r t/|t|)/2, which is S(C, r, Q, 0) with Q = p2 + R2 q:
//                    dQ = dx2 + dth2 x (Q - p2) + R2 P R2' dC_rel, P = diag(1 on unclamped axes),
//                    dC_rel = dC - dx2 - dth2 x (C - p2)
//                  inside: the face (axis j, side sg) nearest to l (first in the engine's order),
//                    delta = s2[j] - sg l_j, n = -sg R2 e_j, dist = -r (!: whatever the depth,
//                    2.2.2; 3.12: dist = -delta - r, ddist = -ddelta), pos = C + n (r - delta)/2
//                    dn = dth2 x n, ddist = 0, ddelta = -sg (R2 e_j).dC_rel,
//                    dpos = dC + dn (r - delta)/2 - n ddelta/2
// capsule-box      B(C, r1) at C = p1 + t A1 (A1 = s1[1] z1) for t = b (the engine's
//                  bestsegmentpos) and t = b + c (its secondpos c, when it sets one). In the box
//                  frame l = R2'(p1 - p2), H = R2' A1. b = +-1 when a capsule end is nearest a
//                  face; otherwise b is x2 of the clipped segment-edge optimum (edge points
//                  k + x1 s2_j e_j, k a corner with k_j = 0): ma = s2_j^2, mb = -s2_j H_j,
//                  mc = s1[1]^2, u = -s2_j (k - l)_j, v = H.(k - l), solved and clipped as in
//                  capsule-capsule (x1 is the engine's bestboxpos). c is the min of the terms
//                  1 -+ b, 2 s2_k/|H_k|, s2_k (1 -+ x1)/|H_k|, (+-s2_k - (l -+ H)_k)/H_k that the
//                  engine's corner, edge or face case compares; d of the chosen term by the rules:
//                  dl = R2'(dx1 - dx2 - dth2 x (p1 - p2)), dH = R2'((dth1 - dth2) x A1),
//                  dC = dx1 + t dth1 x A1 + A1 dt
// box-box, face case (engine code < 12): reference box R (geom 1 or 2, the face owner), incident
//                  box I. Face frame F = R_R M' (M the engine's signed permutation putting the face
//                  normal on +z; f_x, f_y, f_z fixed to R), face half sizes lx, ly, hz. In face
//                  coordinates k = F'(p_I - p_R) - hz e_z and b_i = F' R_I e_i, so
//                  dk = F'(dx_I - dx_R - dth_R x (p_I - p_R)),
//                  db_i = F'((dth_I - dth_R) x R_I e_i).
//                  Lowest corner c0 = k + sum_i +-s_I[i] b_i; edges E_i = -+2 s_I[i] b_i for
//                  |b_i.e_z| < 1/2. A contact point W is
//                    a corner of I:              W = c0 (always), c0 + E_i (+ E_j) over the face
//                    an edge of I cut by a side: W = W0 + t E, t = (+-lx - W0_x)/E_x (or in y)
//                    a face corner over I:       W = (+-lx, +-ly, c0_z + u E1_z + v E2_z), (u, v)
//                                                solving c0_xy + u E1_xy + v E2_xy = (+-lx, +-ly)
//                  dist = W_z (the engine reports W_z/2; mjdiff_collide corrects it to the full
//                  depth, plugin/boxbox.c, so that the case switches to and from the edge case
//                  keep dist continuous), pos = p_R + F (W_x, W_y, W_z/2 + hz),
//                  n = +-f_z (+ when R = geom 1), d(F w) = dth_R x (F w) + F dw.
//                  The case (code) is the engine's own choice, recomputed with its arithmetic
//                  (mjdiff_boxBoxAxis). Flush stacks (equal boxes with coplanar side faces, and
//                  any parallel faces) sit on a tie of a face normal with an edge cross product:
//                  the engine takes the face case there and the edge case at tilts out of the
//                  tie; dist and pos agree between the two, but n follows the reference face in
//                  one and the edge cross product in the other, so differences across such a
//                  pose see the edge case's dn (tests/test_geom_d.cc, GeomJacobianBoxStack.*).
// box-box, edge case (code >= 12): N = (x_i1 x x_j2)/|x_i1 x x_j2| (edge i of box 1, edge j of
//                  box 2), sg = -1 if box 2 lies on the negative side of N, else 1; face frame F on
//                  the box-1 face the engine picks (as above, R = box 1, I = box 2), r = F'N. The
//                  face of box 2 holding its nearest edge has corners P0..P3 (face coordinates);
//                  Pr(U) = U - (U_z/r_z) r projects along N onto the face plane. Contacts:
//                    a box-2 face edge U = U0 + t E projecting across a side, Pr(U)_x = +-lx:
//                      t = (+-lx - Pr(U0)_x)/Pr(E)_x, dist = sg U_z/r_z, pos = (U + Pr(U))/2
//                    a corner Cf = (+-lx, +-ly, 0) of the box-1 face over the box-2 face: (u, v)
//                      with Pr(P0 + u (P1 - P0) + v (P2 - P0))_xy = Cf_xy, each clamped to [0, 1],
//                      T the point at the clamped (u, v): dist = sign(T_z) |Cf - T|,
//                      pos = (Cf + T)/2 (!: the engine's Cramer solve for (u, v) divides, from the
//                      corner after the first that passes the (u, v) test on, by |Cf - T|^2 of the
//                      last such corner instead of the determinant; differentiated as computed)
//                    a corner P of box 2: e = the part of Pr(P)_xy outside [-lx, lx] x [-ly, ly],
//                      dist = sign(P_z) sqrt(e'e + (P_z/r_z)^2), pos = (P + clamp(Pr(P)))/2
//                  n = sg N; positions map to the world as p1 + F (w + hz e_z).
// box-box on MuJoCo 3 (3.12 rewrote mjc_BoxBox; case from mjdiff_boxBoxAxis, plugin/boxbox.c):
//   face case, reference box R (face axis a, side sg = sign of (p_I - p_R).r_a), incident box I:
//                  in R's frame k = R_R'(p_I - p_R), b_c = R_R' r_Ic (dk, db_c as above). Incident
//                  face: axis m = argmax |b_c,a|, side t = -sign(sg b_m,a); its centre and half
//                  edges C = k + t s_I[m] b_m, U = s_I[u] b_u, V = s_I[v] b_v, taken in
//                  (x, y, z) = (component a+1, component a+2, sg component a - s_R[a]); corners
//                  C +- U +- V clipped by x <= +-s_R[a+1], y <= +-s_R[a+2]: a vertex cut on edge
//                  P -> Q of side d(.) = sg' P_coord - limit is W = P + t (Q - P),
//                  t = d(P) / (d(P) - d(Q)), dW = dP + dt (Q - P) + t (dQ - dP),
//                  dt = (dd(P) (d(P) - d(Q)) - d(P) (dd(P) - dd(Q))) / (d(P) - d(Q))^2;
//                  dist = W_z, pos = p_R + R_R w with w_a = sg (s_R[a] + W_z/2), w_a+1 = W_x,
//                  w_a+2 = W_y; n = +-sg r_Ra (+ when R is geom 1).
//   edge case (edge i of box 1, j of box 2): N = (r_1i x r_2j)/|.| oriented to p2 - p1; supporting
//                  edges c1 + s r_1i, c2 + t r_2j (corners by the signs of N's components; both
//                  signs tried where one is below 1e-9, the closest pair kept); b = r_1i.r_2j,
//                  e = c2 - c1, s = (r_1i.e - b r_2j.e)/(1 - b^2) clipped to +-s1[i],
//                  t = b s - r_2j.e clipped to +-s2[j], s = r_1i.e + b t clipped again (a clipped
//                  value is the tracked size); dist = (c2 + t r_2j - c1 - s r_1i).N,
//                  pos = the midpoint, n = N.
//
// Contact-set switches of plane-mesh (tests/test_geom_d.cc, GeomJacobianPlaneConvex.*; default
// smooth model: k = 1e4 N/m, width w = 2 mm, at rest). The Jacobian above is that of a frozen set;
// MuJoCo's set itself switches (its hard contacts jump the same way):
//   appearance: every contact (ellipsoid support point, support vertex, further vertices) appears
//     when its dist crosses the activation margin (mjdiff_collide raises geom_margin to
//     contact_width), where the smooth force is zero with two derivatives. Measured lowering in
//     1e-5 m steps (8 random orientations each of an ellipsoid, a box mesh, a 20-vertex
//     polyhedron): worst force at appearance 1.3e-8 N (the ramp's bound k h^3 / (6 w^2) is
//     4.2e-7 N), worst |dist - width| 3.1e-6 m; the cap swapped no vertex out while lowering.
//   cap: a box mesh (half sizes 0.3 0.2 0.1, rbound 0.374) 3 mm deep, flat: 4 corners carry 30 N
//     each, the engine keeps 3. Rotated by +-1 mrad through flat (10 urad steps), the support
//     vertex switches at theta = 0; where that changes the kept set the smooth torque jumps by one
//     corner's force times the distance between the swapped corners: |dT| = 21.65 N m (diagonal,
//     0.643 |F| rbound) with the hull graph, 18.03 N m (long edge, 0.535 |F| rbound) without one;
//     |dF| 0.035 N, no more than the step-to-step change (the corners carry equal force there).
//     About an axis where the graph keeps the same set there is no jump. Near flat the wrench
//     misses one corner's share (a quarter of the load) whichever side.
//   threshold: the box with its 4 bottom corners chamfered (twin vertices 0.085 m apart, under
//     0.3 rbound = 0.11 m): the support's twin is never a contact though it carries 36 N; where the
//     lower twin changes the twins trade places (36.2 N moved 0.085 m) together with a cap trade
//     (32.3 N at one corner for 29.5 N at another): |dF| 2.79 N (3% of |F|), |dT| 22.7 N m
//     (0.658 |F| rbound).
//
// All of this is evaluated by the tracked arithmetic below (value plus Jacobian, the rules above);
// nothing is allocated. The model and data are only read.

#include <math.h>
#include <string.h>

#include "boxbox.h"
#include "compat.h"
#include "convex.h"
#include "derivative.h"

#define NZ 18     // columns of z = (dx1, dth1, dx2, dth2, ds1, ds2)
#define NPOSE 12  // pose columns (dx1, dth1, dx2, dth2); sizes from column NPOSE on
#define GEOM_RUN 8  // contacts of one pair matched in one run of its pair function

//---------------------------------- tracked arithmetic --------------------------------------------

// loops over gradient rows (n = NZ or 3 NZ), inline so that the compiler sees the fixed length
static inline void gzero(mjtNum* r, int n) {
  for (int i = 0; i < n; i++) r[i] = 0;
}

static inline void gcopy(mjtNum* r, const mjtNum* a, int n) {
  for (int i = 0; i < n; i++) r[i] = a[i];
}

// r += a
static inline void gadd(mjtNum* r, const mjtNum* a, int n) {
  for (int i = 0; i < n; i++) r[i] += a[i];
}

// r -= a
static inline void gsub(mjtNum* r, const mjtNum* a, int n) {
  for (int i = 0; i < n; i++) r[i] -= a[i];
}

// r = c a
static inline void gscl(mjtNum* r, const mjtNum* a, mjtNum c, int n) {
  for (int i = 0; i < n; i++) r[i] = c * a[i];
}

// r += c a
static inline void gaddscl(mjtNum* r, const mjtNum* a, mjtNum c, int n) {
  for (int i = 0; i < n; i++) r[i] += c * a[i];
}

// scalar and its gradient (1 x NZ)
typedef struct {
  mjtNum v;
  mjtNum g[NZ];
} tnum;

// 3-vector and its Jacobian (3 x NZ, row-major)
typedef struct {
  mjtNum v[3];
  mjtNum J[3 * NZ];
} tvec;

static tnum tcon(mjtNum v) {
  tnum r;
  r.v = v;
  gzero(r.g, NZ);
  return r;
}

// a geom size entry: value v, gradient e_col
static tnum tsize(mjtNum v, int col) {
  tnum r = tcon(v);
  r.g[col] = 1;
  return r;
}

static tnum tadd(tnum a, tnum b) {
  a.v += b.v;
  gadd(a.g, b.g, NZ);
  return a;
}

static tnum tsub(tnum a, tnum b) {
  a.v -= b.v;
  gsub(a.g, b.g, NZ);
  return a;
}

// a + c, c constant
static tnum taddc(tnum a, mjtNum c) {
  a.v += c;
  return a;
}

// a * c, c constant
static tnum tscl(tnum a, mjtNum c) {
  a.v *= c;
  gscl(a.g, a.g, c, NZ);
  return a;
}

// a if positive, else -a (the engine's signed sizes)
static tnum tsgn(tnum a, int positive) {
  return positive ? a : tscl(a, -1);
}

static tnum tmul(tnum a, tnum b) {
  tnum r;
  r.v = a.v * b.v;
  gscl(r.g, a.g, b.v, NZ);
  gaddscl(r.g, b.g, a.v, NZ);
  return r;
}

// d(a/b) = (da - (a/b) db) / b
static tnum tdiv(tnum a, tnum b) {
  tnum r;
  r.v = a.v / b.v;
  gscl(r.g, b.g, -r.v, NZ);
  gadd(r.g, a.g, NZ);
  gscl(r.g, r.g, 1 / b.v, NZ);
  return r;
}

// d sqrt(a) = da / (2 sqrt(a)); no derivative at 0
static tnum tsqrt(tnum a) {
  tnum r;
  r.v = sqrt(a.v);
  if (r.v > 0) {
    gscl(r.g, a.g, 0.5 / r.v, NZ);
  } else {
    gzero(r.g, NZ);
  }
  return r;
}

static tnum tabs(tnum a) {
  return a.v < 0 ? tscl(a, -1) : a;
}

// clamp to [-1, 1]: constant when clamped
static tnum tclip1(tnum a) {
  if (a.v > 1) return tcon(1);
  if (a.v < -1) return tcon(-1);
  return a;
}

static tvec vcon(mjtNum x, mjtNum y, mjtNum z) {
  tvec r;
  r.v[0] = x;
  r.v[1] = y;
  r.v[2] = z;
  gzero(r.J, 3 * NZ);
  return r;
}

static void vset(tvec* a, int i, const tnum* s);

// (x, y, z) tracked
static tvec vmake(const tnum* x, const tnum* y, const tnum* z) {
  tvec r;
  vset(&r, 0, x);
  vset(&r, 1, y);
  vset(&r, 2, z);
  return r;
}

// rotation block of a point or direction fixed to a geom: -[w]x, w = c - p_i or the direction
static void rotBlock(tvec* r, int slot, const mjtNum w[3]) {
  int c = 6 * slot + 3;
  r->J[0 * NZ + c + 1] = w[2];
  r->J[0 * NZ + c + 2] = -w[1];
  r->J[1 * NZ + c + 0] = -w[2];
  r->J[1 * NZ + c + 2] = w[0];
  r->J[2 * NZ + c + 0] = w[1];
  r->J[2 * NZ + c + 1] = -w[0];
}

// point c fixed to geom slot (0 or 1) with origin org: dc = dx + dth x (c - org)
static tvec vpoint(int slot, const mjtNum c[3], const mjtNum org[3]) {
  tvec r = vcon(c[0], c[1], c[2]);
  mjtNum w[3];
  mju_sub3(w, c, org);
  for (int i = 0; i < 3; i++) r.J[i * NZ + 6 * slot + i] = 1;
  rotBlock(&r, slot, w);
  return r;
}

// direction a fixed to geom slot: da = dth x a
static tvec vdir(int slot, const mjtNum a[3]) {
  tvec r = vcon(a[0], a[1], a[2]);
  rotBlock(&r, slot, a);
  return r;
}

static tvec vadd(tvec a, const tvec* b) {
  mju_addTo3(a.v, b->v);
  gadd(a.J, b->J, 3 * NZ);
  return a;
}

static tvec vsub(tvec a, const tvec* b) {
  mju_subFrom3(a.v, b->v);
  gsub(a.J, b->J, 3 * NZ);
  return a;
}

// a * c, c constant
static tvec vsclc(tvec a, mjtNum c) {
  mju_scl3(a.v, a.v, c);
  gscl(a.J, a.J, c, 3 * NZ);
  return a;
}

// a * s: J = s J_a + a g_s'
static tvec vscl(tvec a, const tnum* s) {
  gscl(a.J, a.J, s->v, 3 * NZ);
  for (int i = 0; i < 3; i++) gaddscl(a.J + i * NZ, s->g, a.v[i], NZ);
  mju_scl3(a.v, a.v, s->v);
  return a;
}

// a + b * s
static tvec vaddscl(tvec a, const tvec* b, const tnum* s) {
  tvec t = vscl(*b, s);
  return vadd(a, &t);
}

// a + b * c, c constant
static tvec vaddsclc(tvec a, const tvec* b, mjtNum c) {
  mju_addToScl3(a.v, b->v, c);
  gaddscl(a.J, b->J, c, 3 * NZ);
  return a;
}

static tnum vdot(const tvec* a, const tvec* b) {
  tnum r;
  r.v = mju_dot3(a->v, b->v);
  gzero(r.g, NZ);
  for (int i = 0; i < 3; i++) {
    gaddscl(r.g, b->J + i * NZ, a->v[i], NZ);
    gaddscl(r.g, a->J + i * NZ, b->v[i], NZ);
  }
  return r;
}

// d(a x b) = da x b + a x db, column by column
static tvec vcross(const tvec* a, const tvec* b) {
  tvec r;
  mju_cross(r.v, a->v, b->v);
  for (int i = 0; i < 3; i++) {
    int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    const mjtNum *da1 = a->J + i1 * NZ, *da2 = a->J + i2 * NZ;
    const mjtNum *db1 = b->J + i1 * NZ, *db2 = b->J + i2 * NZ;
    mjtNum *ri = r.J + i * NZ, a1 = a->v[i1], a2 = a->v[i2], b1 = b->v[i1], b2 = b->v[i2];
    for (int k = 0; k < NZ; k++) {
      ri[k] = (da1[k] * b2 - da2[k] * b1) + (a1 * db2[k] - a2 * db1[k]);
    }
  }
  return r;
}

static tnum vget(const tvec* a, int i) {
  tnum r;
  r.v = a->v[i];
  gcopy(r.g, a->J + i * NZ, NZ);
  return r;
}

static void vset(tvec* a, int i, const tnum* s) {
  a->v[i] = s->v;
  gcopy(a->J + i * NZ, s->g, NZ);
}

// |a|; no derivative at 0
static tnum vnorm(const tvec* a) {
  return tsqrt(vdot(a, a));
}

// a / |a|, the norm in len; a is returned unchanged below mjMINVAL
static tvec vnormalize(const tvec* a, tnum* len) {
  *len = vnorm(a);
  if (len->v < mjMINVAL) return *a;
  tnum inv = tdiv(tcon(1), *len);
  return vscl(*a, &inv);
}

// coordinates of v in the frame with tracked axes f[0..2]: r_k = f_k . v,
// dr_k = sum_i (v_i df_k,i + f_k,i dv_i) (in place: the frame functions run once per contact
// and pair candidate, the hottest tracked code of the step derivative)
static tvec toLocal(const tvec f[3], const tvec* v) {
  tvec r;
  for (int k = 0; k < 3; k++) {
    mjtNum* row = r.J + k * NZ;
    r.v[k] = mju_dot3(f[k].v, v->v);
    gzero(row, NZ);
    for (int i = 0; i < 3; i++) {
      gaddscl(row, f[k].J + i * NZ, v->v[i], NZ);
      gaddscl(row, v->J + i * NZ, f[k].v[i], NZ);
    }
  }
  return r;
}

// org + sum_k f_k w_k: dr_i = dorg_i + sum_k (w_k df_k,i + f_k,i dw_k) (in place, as toLocal)
static tvec toWorld(const tvec f[3], const tvec* org, const tvec* w) {
  tvec r = *org;
  for (int i = 0; i < 3; i++) {
    mjtNum* row = r.J + i * NZ;
    for (int k = 0; k < 3; k++) {
      r.v[i] += f[k].v[i] * w->v[k];
      gaddscl(row, f[k].J + i * NZ, w->v[k], NZ);
      gaddscl(row, w->J + k * NZ, f[k].v[i], NZ);
    }
  }
  return r;
}

//---------------------------------- candidates ----------------------------------------------------

// one contact pair being differentiated: geom data in tracked form and the best candidate so far
typedef struct {
  const mjtNum* s1;  // sizes (values: the engine's case logic)
  const mjtNum* s2;
  tnum S1[3], S2[3];     // sizes tracked (columns NPOSE + 0..2, NPOSE + 3..5)
  tvec p1, p2;           // origins
  tvec a1[3], a2[3];     // axes (columns of geom_xmat)
  // the contacts to match: nt of the pair's run, each with its nearest candidate so far
  int nt;
  const mjContact* con[GEOM_RUN];
  mjtNum best[GEOM_RUN];  // squared mismatch of the best candidate
  tnum dist[GEOM_RUN];    // best candidate
  tvec n[GEOM_RUN], pos[GEOM_RUN];
} pairCtx;

// squared mismatch of a candidate's values to contact con in (pos, n, dist)
static mjtNum mismatchTo(const mjContact* con, mjtNum dist, const mjtNum n[3],
                         const mjtNum pos[3]) {
  mjtNum dp[3], dn[3];
  mju_sub3(dp, pos, con->pos);
  mju_sub3(dn, n, con->frame);
  mjtNum dd = dist - con->dist;
  return mju_dot3(dp, dp) + mju_dot3(dn, dn) + dd * dd;
}

// would a candidate with these values be nearer to one of the contacts than its best so far?
// (tested on values before a candidate is tracked)
static int improves(const pairCtx* x, mjtNum dist, const mjtNum n[3], const mjtNum pos[3]) {
  for (int t = 0; t < x->nt; t++) {
    if (mismatchTo(x->con[t], dist, n, pos) < x->best[t]) return 1;
  }
  return 0;
}

// origin + sum_k f_k w_k on values (to skip tracking a candidate that cannot be con)
static void worldValue(const tvec f[3], const mjtNum org[3], const mjtNum w[3], mjtNum r[3]) {
  mju_copy3(r, org);
  for (int k = 0; k < 3; k++) mju_addToScl3(r, f[k].v, w[k]);
}

// offer a candidate contact; keep it if it is nearer to con than the best so far
static void offer(pairCtx* x, const tnum* dist, const tvec* n, const tvec* pos) {
  for (int t = 0; t < x->nt; t++) {
    mjtNum e = mismatchTo(x->con[t], dist->v, n->v, pos->v);
    if (e < x->best[t]) {
      x->best[t] = e;
      x->dist[t] = *dist;
      x->n[t] = *n;
      x->pos[t] = *pos;
    }
  }
}

// sphere-sphere kernel S(c1, r1, c2, r2)
static void sphereSphere(pairCtx* x, const tvec* c1, const tnum* r1, const tvec* c2,
                         const tnum* r2) {
  tvec dv = vsub(*c2, c1);
  tnum len;
  tvec n = vnormalize(&dv, &len);
  tnum dist = tsub(tsub(len, *r1), *r2);

  // coincident centres: n = z1 x z2 normalised, else (1, 0, 0)
  if (len.v < mjMINVAL) {
    tvec zz = vcross(x->a1 + 2, x->a2 + 2);
    tnum zn;
    n = vnormalize(&zz, &zn);
    if (zn.v < mjMINVAL) n = vcon(1, 0, 0);
  }

  // pos = c1 + n (r1 + dist/2)
  tnum scl = tadd(tscl(dist, 0.5), *r1);
  tvec pos = vaddscl(*c1, &n, &scl);
  offer(x, &dist, &n, &pos);
}

// plane-point kernel P(c, r), plane = geom 1
static void planePoint(pairCtx* x, const tvec* c, const tnum* r) {
  const tvec* n = x->a1 + 2;
  tvec rel = vsub(*c, &x->p1);
  tnum dist = tsub(vdot(n, &rel), *r);
  tnum scl = tscl(tadd(tscl(dist, 0.5), *r), -1);
  tvec pos = vaddscl(*c, n, &scl);
  offer(x, &dist, n, &pos);
}

//---------------------------------- plane pairs ---------------------------------------------------

static void planeCapsule(pairCtx* x) {
  tvec A = vscl(x->a2[2], &x->S2[1]);
  tvec c = vadd(x->p2, &A);
  planePoint(x, &c, &x->S2[0]);
  c = vsub(x->p2, &A);
  planePoint(x, &c, &x->S2[0]);
}

static void planeBox(pairCtx* x) {
  // half-size axes s2[k] a2[k], tracked once
  tvec h[3];
  for (int k = 0; k < 3; k++) h[k] = vscl(x->a2[k], x->S2 + k);
  for (int i = 0; i < 8; i++) {
    // corner offset R2 (+-s2) and its height over the centre (values first: most corners are up)
    mjtNum ov[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) mju_addToScl3(ov, h[k].v, (i & (1 << k)) ? 1 : -1);
    if (mju_dot3(ov, x->a1[2].v) > 0) continue;
    tvec c = x->p2;
    for (int k = 0; k < 3; k++) c = (i & (1 << k)) ? vadd(c, h + k) : vsub(c, h + k);
    tnum zero = tcon(0);
    planePoint(x, &c, &zero);
  }
}

// candidate of plane-cylinder: pos = p2 + off - n dist/2, dist = d0 + hpa + kappa n.u
static void cylinderPoint(pairCtx* x, const tnum* d0, const tnum* hpa, const tnum* nu, mjtNum kappa,
                          const tvec* off) {
  const tvec* n = x->a1 + 2;
  tnum dist = tadd(tadd(*d0, *hpa), tscl(*nu, kappa));
  tnum half = tscl(dist, -0.5);
  tvec pos = vadd(x->p2, off);
  pos = vaddscl(pos, n, &half);
  offer(x, &dist, n, &pos);
}

static void planeCylinder(pairCtx* x) {
  const tvec* n = x->a1 + 2;
  const tnum *r = x->S2, *h = x->S2 + 1;

  // axis towards the plane
  tvec a = x->a2[2];
  tnum na = vdot(n, &a);
  if (na.v > 0) {
    a = vsclc(a, -1);
    na = tscl(na, -1);
  }
  tvec rel = vsub(x->p2, &x->p1);
  tnum d0 = vdot(n, &rel);

  // u: radius towards the plane, w = (n.a) a - n
  tvec w = vsub(vscl(a, &na), n);
  tnum len;
  tvec u = vnormalize(&w, &len);
  u = len.v >= mjMINVAL ? vscl(u, r) : vscl(x->a2[0], r);
  tnum nu = vdot(&u, n);
  tvec A = vscl(a, h);
  tnum hpa = tmul(na, *h);

  // rim points of the near and far disk
  tvec off = vadd(u, &A);
  cylinderPoint(x, &d0, &hpa, &nu, 1, &off);
  tnum mhpa = tscl(hpa, -1);
  off = vsub(u, &A);
  cylinderPoint(x, &d0, &mhpa, &nu, 1, &off);

  // two more points of the near disk, at +-120 degrees from u
  tvec ua = vcross(&u, &A);
  tnum ualen;
  tvec v = vnormalize(&ua, &ualen);
  tnum rv = tscl(*r, sqrt(3.0) / 2);
  v = vscl(v, &rv);
  tvec base = vaddsclc(A, &u, -0.5);
  off = vadd(base, &v);
  cylinderPoint(x, &d0, &hpa, &nu, -0.5, &off);
  off = vsub(base, &v);
  cylinderPoint(x, &d0, &hpa, &nu, -0.5, &off);
}

// plane-ellipsoid: the support point x = p2 + R2 S u, u = S d/|S d|, d = R2'(-n), S = diag(s2),
// as P(x, 0)
static void planeEllipsoid(pairCtx* x) {
  tvec mn = vsclc(x->a1[2], -1);
  tvec dl = toLocal(x->a2, &mn);
  tvec w, res;
  for (int k = 0; k < 3; k++) {
    tnum c = tmul(vget(&dl, k), x->S2[k]);
    vset(&w, k, &c);
  }
  tnum len;
  tvec u = vnormalize(&w, &len);
  for (int k = 0; k < 3; k++) {
    tnum c = tmul(vget(&u, k), x->S2[k]);
    vset(&res, k, &c);
  }
  tvec c = toWorld(x->a2, &x->p2, &res);
  tnum zero = tcon(0);
  planePoint(x, &c, &zero);
}

// plane-mesh: the vertex v (geom-2 frame, float as stored) whose contact P(p2 + R2 v, 0) is nearest
// to con, found on values; only that one is tracked
static void planeMesh(pairCtx* x, const mjModel* m, int g, const mjtNum* p2, const mjtNum* R2) {
  int id = m->geom_dataid[g];
  if (id < 0) return;
  const float* vert = m->mesh_vert + 3 * m->mesh_vertadr[id];
  const mjtNum* n = x->a1[2].v;
  for (int t = 0; t < x->nt; t++) {
    const mjContact* con = x->con[t];
    mjtNum best = mjMAXVAL, cbest[3] = {0, 0, 0};
    for (int i = 0; i < m->mesh_vertnum[id]; i++) {
      mjtNum v[3] = {vert[3 * i], vert[3 * i + 1], vert[3 * i + 2]}, c[3], dif[3], dp[3];
      mju_rotVecMat(c, v, R2);
      mju_addTo3(c, p2);
      mju_sub3(dif, c, x->p1.v);
      mjtNum dist = mju_dot3(n, dif);
      mju_addScl3(dp, c, n, -0.5 * dist);
      mju_subFrom3(dp, con->pos);
      mjtNum e = mju_dot3(dp, dp) + (dist - con->dist) * (dist - con->dist);
      if (e < best) {
        best = e;
        mju_copy3(cbest, c);
      }
    }
    if (best == mjMAXVAL) continue;
    tvec c = vpoint(1, cbest, p2);
    tnum zero = tcon(0);
    planePoint(x, &c, &zero);
  }
}

//---------------------------------- sphere and capsule pairs --------------------------------------

static void sphereCapsule(pairCtx* x) {
  tvec A = vscl(x->a2[2], &x->S2[1]);
  tvec rel = vsub(x->p1, &x->p2);
  tnum t = tclip1(tdiv(vdot(&A, &rel), vdot(&A, &A)));
  tvec c = vaddscl(x->p2, &A, &t);
  sphereSphere(x, &x->p1, &x->S1[0], &c, &x->S2[0]);
}

// capsule-capsule contact at segment parameters (x1, x2)
static void segmentPair(pairCtx* x, const tvec* A1, const tnum* x1, const tvec* A2,
                        const tnum* x2) {
  tvec c1 = vaddscl(x->p1, A1, x1);
  tvec c2 = vaddscl(x->p2, A2, x2);
  sphereSphere(x, &c1, &x->S1[0], &c2, &x->S2[0]);
}

// 1-D optimum (num + sg*mb)/den
static tnum optimum1(const tnum* num, const tnum* mb, mjtNum sg, const tnum* den) {
  return tdiv(tadd(*num, tscl(*mb, sg)), *den);
}

static void capsuleCapsule(pairCtx* x) {
  tvec A1 = vscl(x->a1[2], &x->S1[1]);
  tvec A2 = vscl(x->a2[2], &x->S2[1]);
  tvec dif = vsub(x->p1, &x->p2);
  tnum ma = vdot(&A1, &A1);
  tnum mb = tscl(vdot(&A1, &A2), -1);
  tnum mc = vdot(&A2, &A2);
  tnum u = tscl(vdot(&A1, &dif), -1);
  tnum v = vdot(&A2, &dif);
  tnum det = tsub(tmul(ma, mc), tmul(mb, mb));

  // general configuration: unconstrained optimum, then the engine's clipping
  if (fabs(det.v) >= mjMINVAL) {
    tnum x1 = tdiv(tsub(tmul(mc, u), tmul(mb, v)), det);
    tnum x2 = tdiv(tsub(tmul(ma, v), tmul(mb, u)), det);
    if (x1.v > 1) {
      x1 = tcon(1);
      x2 = optimum1(&v, &mb, -1, &mc);
    } else if (x1.v < -1) {
      x1 = tcon(-1);
      x2 = optimum1(&v, &mb, 1, &mc);
    }
    if (x2.v > 1) {
      x2 = tcon(1);
      x1 = tclip1(optimum1(&u, &mb, -1, &ma));
    } else if (x2.v < -1) {
      x2 = tcon(-1);
      x1 = tclip1(optimum1(&u, &mb, 1, &ma));
    }
    segmentPair(x, &A1, &x1, &A2, &x2);
    return;
  }

  // parallel axes: each end of one segment against the other
  for (int e = 0; e < 4; e++) {
    mjtNum sg = (e % 2) ? -1 : 1;  // end +1 or -1
    tnum xe = tcon(sg);
    if (e < 2) {
      tnum xo = tclip1(optimum1(&v, &mb, -sg, &mc));
      segmentPair(x, &A1, &xe, &A2, &xo);
    } else {
      tnum xo = tclip1(optimum1(&u, &mb, -sg, &ma));
      segmentPair(x, &A1, &xo, &A2, &xe);
    }
  }
}

//---------------------------------- box pairs -----------------------------------------------------

// sphere of radius r at C against box geom 2 (the engine's sphere-box, also used by capsule-box)
static void sphereBox(pairCtx* x, const tvec* C, const tnum* r) {
  const mjtNum* s = x->s2;
  const tnum* S = x->S2;
  tvec rel = vsub(*C, &x->p2);
  tvec l = toLocal(x->a2, &rel);

  // nearest box point q (local): clamped coordinates are constant
  tvec q = l;
  for (int k = 0; k < 3; k++) {
    if (l.v[k] < -s[k] || l.v[k] > s[k]) {
      tnum c = tsgn(S[k], l.v[k] >= -s[k]);
      vset(&q, k, &c);
    }
  }
  tvec t = vsub(q, &l);
  tnum len;
  tvec tn = vnormalize(&t, &len);
  tnum dist = tsub(len, *r);

  // centre outside: normal from C to the box, pos halfway between the box and the sphere surfaces
  if (len.v > mjMINVAL) {
    tvec deep = vaddscl(l, &tn, r);
    tvec posl = vsclc(vadd(q, &deep), 0.5);
    tvec zero = vcon(0, 0, 0);
    tvec n = toWorld(x->a2, &zero, &tn);
    tvec pos = toWorld(x->a2, &x->p2, &posl);
    offer(x, &dist, &n, &pos);
    return;
  }

  // centre inside: nearest face (first of the six in the engine's order), dist = -r (2.2.2) or
  // -delta - r (3.12)
  mjtNum closest = 2 * (s[0] + s[1] + s[2]);
  int face = 0;
  for (int i = 0; i < 6; i++) {
    mjtNum c = fabs((i % 2 ? 1 : -1) * s[i / 2] - l.v[i / 2]);
    if (closest > c) {
      closest = c;
      face = i;
    }
  }
  int j = face / 2;
  mjtNum sg = face % 2 ? 1 : -1;
  tnum lj = vget(&l, j);
  tnum delta = tabs(tadd(tscl(lj, -1), tscl(S[j], sg)));
  tvec n = vsclc(x->a2[j], -sg);
  tnum scl = tscl(tsub(*r, delta), 0.5);
  tvec pos = vaddscl(*C, &n, &scl);
#if MJDIFF_MUJOCO_3
  dist = tsub(tscl(delta, -1), *r);  // 3.12: the depth to the nearest face, plus r
#else
  dist = tscl(*r, -1);
#endif
  offer(x, &dist, &n, &pos);
}

// c / |h| as a value, to compare before tracking it (h may be 0)
static mjtNum overValue(mjtNum c, mjtNum h) {
  return c / fabs(h);
}

// 2 c / |h| tracked (c a tracked size)
static tnum overTracked(const tnum* c, const tnum* h) {
  return tdiv(tscl(*c, 2), tabs(*h));
}

static void capsuleBox(pairCtx* x, mjtNum margin) {
  const mjtNum* s = x->s2;
  const tnum* S = x->S2;
  mjtNum r = x->s1[0], hl = x->s1[1];
  const tnum *R = x->S1, *HL = x->S1 + 1;

  // capsule centre and half axis in the box frame
  tvec rel = vsub(x->p1, &x->p2);
  tvec pos = toLocal(x->a2, &rel);
  tvec axis = toLocal(x->a2, x->a1 + 2);
  tvec half = vscl(axis, HL);
  int axisdir = (half.v[0] > 0) + 2 * (half.v[1] > 0) + 4 * (half.v[2] > 0);

  // nearest feature: a capsule end against a face ...
  mjtNum bestdist = margin + 2 * (r + hl + s[0] + s[1] + s[2]);
  tnum best = tcon(0), boxpos = tcon(0);
  int cltype = -4, clface = -1, clcorner = 0, cledge = 0;
  for (int i = -1; i <= 1; i += 2) {
    int nclamp = 0, last = -1;
    mjtNum d2 = 0;
    for (int j = 0; j < 3; j++) {
      mjtNum e = pos.v[j] + i * half.v[j];
      if (e < -s[j] || e > s[j]) {
        mjtNum c = e < -s[j] ? -s[j] : s[j];
        nclamp++;
        last = j;
        d2 += (c - e) * (c - e);
      }
    }
    if (nclamp > 1) continue;
    if (d2 < bestdist) {
      bestdist = d2;
      best = tcon(i);
      cltype = -2 + i;
      clface = last;
    }
  }

  // ... or the segment against an edge (edge point k + x1 s_j e_j, segment point pos + x2 half)
  for (int j = 0; j < 3; j++) {
    for (int i = 0; i < 8; i++) {
      if (i & (1 << j)) continue;
      tnum k0 = tsgn(S[0], i & 1), k1 = tsgn(S[1], i & 2), k2 = tsgn(S[2], i & 4);
      tvec k = vmake(&k0, &k1, &k2);
      tnum zero = tcon(0);
      vset(&k, j, &zero);
      tvec dif = vsub(k, &pos);
      tnum ma = tmul(S[j], S[j]);
      tnum hj = vget(&half, j);
      tnum mb = tscl(tmul(hj, S[j]), -1);
      tnum mc = tmul(*HL, *HL);
      tnum u = tscl(tmul(vget(&dif, j), S[j]), -1);
      tnum v = vdot(&half, &dif);
      tnum det = tsub(tmul(ma, mc), tmul(mb, mb));
      if (fabs(det.v) < mjMINVAL) continue;
      tnum x1 = tdiv(tsub(tmul(mc, u), tmul(mb, v)), det);
      tnum x2 = tdiv(tsub(tmul(ma, v), tmul(mb, u)), det);
      int c1 = 1, c2 = 1;  // 0: clipped at -1, 1: inside, 2: clipped at +1
      if (x1.v > 1) {
        x1 = tcon(1);
        c1 = 2;
        x2 = optimum1(&v, &mb, -1, &mc);
      } else if (x1.v < -1) {
        x1 = tcon(-1);
        c1 = 0;
        x2 = optimum1(&v, &mb, 1, &mc);
      }
      if (x2.v > 1 || x2.v < -1) {
        mjtNum sg = x2.v > 1 ? 1 : -1;
        x2 = tcon(sg);
        c2 = x2.v > 0 ? 2 : 0;
        x1 = optimum1(&u, &mb, -sg, &ma);
        if (x1.v > 1) {
          x1 = tcon(1);
          c1 = 2;
        } else if (x1.v < -1) {
          x1 = tcon(-1);
          c1 = 0;
        }
      }
      mjtNum w[3];
      mju_addScl3(w, dif.v, half.v, -x2.v);
      w[j] += s[j] * x1.v;
      mjtNum d2 = mju_dot3(w, w);
      if (d2 < bestdist - mjMINVAL) {
        bestdist = d2;
        best = x2;
        boxpos = x1;
        int code = 3 * c1 + c2;
        clcorner = i + (1 << j) * (code / 6);
        cledge = j;
        cltype = code;
      }
    }
  }
  if (cltype == -4) return;

  // second point along the capsule: the engine's secondpos (a min of case-dependent terms)
  int have2 = 0;
  tnum second = tcon(0);
  if (cltype >= 0 && cltype / 3 != 1) {
    // nearest to a box corner
    int c = axisdir ^ clcorner;
    if (c != 0 && c != 7) {
      mjtNum mul = 1;
      tnum de, dp;
      if (c == 1 || c == 2 || c == 4) {
        de = taddc(tscl(best, -1), 1);
        dp = taddc(best, 1);
      } else {
        mul = -1;
        c = 7 - c;
        dp = taddc(tscl(best, -1), 1);
        de = taddc(best, 1);
      }
      int ax = c == 1 ? 0 : c == 2 ? 1 : 2, ax1 = (ax + 1) % 3, ax2 = (ax + 2) % 3;
      if (axis.v[ax] * axis.v[ax] > 0.5) {
        // along an edge of the box
        second = de;
        if (overValue(2 * s[ax], half.v[ax]) < second.v) {
          tnum h = vget(&half, ax);
          second = overTracked(S + ax, &h);
        }
        second = tscl(second, mul);
      } else {
        // along a face of the box
        second = dp;
        for (int a = 0; a < 2; a++) {
          int axa = a ? ax2 : ax1;
          if (overValue(2 * s[axa], half.v[axa]) < second.v) {
            tnum h = vget(&half, axa);
            second = overTracked(S + axa, &h);
          }
        }
        second = tscl(second, -mul);
      }
      have2 = 1;
    }
  } else if (cltype >= 0) {
    // nearest to the middle of a box edge
    int c = (axisdir ^ clcorner) & (7 - (1 << cledge));
    if (c == 1 || c == 2 || c == 4) {
      int ax = cledge, ax1 = (ax + 1) % 3, ax2 = (ax + 2) % 3;
      if (fabs(axis.v[ax1]) > fabs(axis.v[ax2])) ax1 = ax2;
      ax2 = 3 - ax - ax1;
      mjtNum mul = (c & (1 << ax2)) ? 1 : -1;
      second = taddc(tscl(best, -mul), 1);
      if (overValue(2 * s[ax2], half.v[ax2]) < second.v) {
        tnum h = vget(&half, ax2);
        second = overTracked(S + ax2, &h);
      }
      int same = ((axisdir & (1 << ax)) != 0) == ((c & (1 << ax2)) != 0);
      tnum e2 = taddc(tscl(boxpos, same ? -1 : 1), 1);
      if (s[ax] * e2.v / fabs(half.v[ax]) < second.v) {
        tnum h = vget(&half, ax);
        second = tdiv(tmul(e2, S[ax]), tabs(h));
      }
      second = tscl(second, mul);
      have2 = 1;
    }
  } else if (clface != -1) {
    // a capsule end nearest to a face: how far the other end stays over the box
    mjtNum mul = cltype == -3 ? 1 : -1;
    tvec other = vaddsclc(pos, &half, -mul);
    second = tcon(2);
    for (int i = 0; i < 3; i++) {
      if (i == clface) continue;
      for (int sd = 1; sd >= -1; sd -= 2) {
        mjtNum e = (sd * s[i] - other.v[i]) / half.v[i] * mul;
        if (e > 0 && e < second.v) {
          tnum oi = vget(&other, i), hi = vget(&half, i);
          second = tscl(tdiv(tadd(tscl(oi, -1), tscl(S[i], sd)), hi), mul);
        }
      }
    }
    second = tscl(second, mul);
    have2 = 1;
  }

  // sphere-box at the first point and, if set, at the second
  tvec A1 = vscl(x->a1[2], HL);
  tvec C = vaddscl(x->p1, &A1, &best);
  sphereBox(x, &C, R);
  if (have2 && second.v > -3) {
    tnum t = tadd(best, second);
    C = vaddscl(x->p1, &A1, &t);
    sphereBox(x, &C, R);
  }
}

#if !MJDIFF_MUJOCO_3  // 2.2.2's box-box
// face frames of a box: row c of the engine's permutation is sgn[c] e_idx[c]; face q = axis q % 3,
// side + for q < 3
static const int kFaceIdx[6][3] = {{2, 1, 0}, {0, 2, 1}, {0, 1, 2},
                                   {2, 1, 0}, {0, 2, 1}, {0, 1, 2}};
static const mjtNum kFaceSgn[6][3] = {{-1, 1, 1}, {1, -1, 1}, {1, 1, 1},
                                      {1, 1, -1}, {1, 1, -1}, {-1, 1, -1}};

// face frame f (tracked, fixed to the box with axes ax) and half sizes hs (values) and HS
// (tracked) of face q
static void faceFrame(int q, const tvec ax[3], const mjtNum* size, const tnum* S, tvec f[3],
                      mjtNum hs[3], tnum HS[3]) {
  for (int c = 0; c < 3; c++) {
    f[c] = vsclc(ax[kFaceIdx[q][c]], kFaceSgn[q][c]);
    hs[c] = size[kFaceIdx[q][c]];
    HS[c] = S[kFaceIdx[q][c]];
  }
}

// v_k -= a (tracked)
static void vsubAt(tvec* v, int k, const tnum* a) {
  tnum c = tsub(vget(v, k), *a);
  vset(v, k, &c);
}

// v_k += c a (tracked a)
static void vaddAt(tvec* v, int k, const tnum* a, mjtNum c) {
  tnum t = tadd(vget(v, k), tscl(*a, c));
  vset(v, k, &t);
}

// face-case contact at incident point W (face coordinates, z from the face): dist is the depth
// W_z as mjdiff_collide reports it (the engine reports W_z/2; plugin/boxbox.c), pos at W_z/2
static void faceContact(pairCtx* x, const tvec f[3], const tvec* pref, const tnum* hz, mjtNum nsg,
                        const tvec* W) {
  mjtNum wl[3] = {W->v[0], W->v[1], 0.5 * W->v[2] + hz->v}, pv[3], nv[3];
  worldValue(f, pref->v, wl, pv);
  mju_scl3(nv, f[2].v, nsg);
  if (!improves(x, W->v[2], nv, pv)) return;
  tnum dist = vget(W, 2);
  tvec posl = *W;
  tnum z = tadd(tscl(dist, 0.5), *hz);
  vset(&posl, 2, &z);
  tvec pos = toWorld(f, pref, &posl);
  tvec n = vsclc(f[2], nsg);
  offer(x, &dist, &n, &pos);
}

static void boxFace(pairCtx* x, int code) {
  int q1 = code % 6, ref2 = code / 6;
  const tvec* pref = ref2 ? &x->p2 : &x->p1;
  const tvec* pinc = ref2 ? &x->p1 : &x->p2;
  const tvec* aref = ref2 ? x->a2 : x->a1;
  const tvec* ainc = ref2 ? x->a1 : x->a2;
  const tnum* Sinc = ref2 ? x->S1 : x->S2;
  tvec f[3];
  mjtNum ss[3];
  tnum SS[3];
  faceFrame(q1, aref, ref2 ? x->s2 : x->s1, ref2 ? x->S2 : x->S1, f, ss, SS);
  mjtNum lx = ss[0], ly = ss[1], nsg = ref2 ? -1 : 1;
  const tnum* hz = SS + 2;

  // incident box in face coordinates
  tvec rel = vsub(*pinc, pref);
  tvec k = toLocal(f, &rel);
  vsubAt(&k, 2, hz);
  tvec b[3];
  for (int i = 0; i < 3; i++) b[i] = toLocal(f, ainc + i);

  // lowest corner, and edges from it that are not steep
  int corner = 0;
  for (int i = 0; i < 3; i++) corner += (b[i].v[2] < 0) << i;
  tvec pts[6];
  pts[0] = k;
  for (int i = 0; i < 3; i++) {
    tnum si = tsgn(Sinc[i], corner & (1 << i));
    pts[0] = vaddscl(pts[0], b + i, &si);
  }
  int m = 1;
  for (int i = 0; i < 3; i++) {
    if (fabs(b[i].v[2]) < 0.5) {
      tnum si = tscl(Sinc[i], (corner & (1 << i)) ? -2 : 2);
      pts[m++] = vscl(b[i], &si);
    }
  }
  if (m > 1) pts[3] = vadd(pts[0], pts + 1);
  if (m > 2) {
    pts[4] = vadd(pts[0], pts + 2);
    pts[5] = vadd(pts[3], pts + 2);
  }

  // incident edges cut by the sides x = +-lx, y = +-ly
  int nl = m > 2 ? 4 : m > 1 ? 1 : 0;
  const int start[4] = {0, 0, 3, 4}, dir[4] = {1, 2, 2, 1};
  for (int i = 0; i < nl; i++) {
    const tvec* st = pts + start[i];
    const tvec* dr = pts + dir[i];
    for (int q = 0; q < 2; q++) {
      mjtNum a = st->v[q], bq = dr->v[q], c = st->v[1 - q], dd = dr->v[1 - q];
      if (fabs(bq) <= mjMINVAL) continue;
      for (int j = -1; j <= 1; j += 2) {
        mjtNum l = ss[q] * j;
        mjtNum t = (l - a) * (1 / bq);
        if (t < 0 || t > 1 || fabs(c + dd * t) > ss[1 - q]) continue;
        tnum tt = tdiv(tadd(tscl(vget(st, q), -1), tscl(SS[q], j)), vget(dr, q));
        tvec W = vaddscl(*st, dr, &tt);
        faceContact(x, f, pref, hz, nsg, &W);
      }
    }
  }

  // corners of the reference face over the incident face
  if (m > 2) {
    tnum A = vget(pts + 1, 0), B = vget(pts + 2, 0), C = vget(pts + 1, 1), D = vget(pts + 2, 1);
    tnum det = tsub(tmul(A, D), tmul(B, C));
    for (int i = 0; i < 4; i++) {
      tnum llx = tsgn(SS[0], i / 2), lly = tsgn(SS[1], i % 2);
      tnum X = tadd(tscl(vget(pts, 0), -1), llx), Y = tadd(tscl(vget(pts, 1), -1), lly);
      tnum u = tdiv(tsub(tmul(X, D), tmul(Y, B)), det);
      tnum v = tdiv(tsub(tmul(Y, A), tmul(X, C)), det);
      if (u.v <= 0 || v.v <= 0 || u.v >= 1 || v.v >= 1) continue;
      tnum z = tadd(tadd(vget(pts, 2), tmul(u, vget(pts + 1, 2))), tmul(v, vget(pts + 2, 2)));
      tvec W = vmake(&llx, &lly, &z);
      faceContact(x, f, pref, hz, nsg, &W);
    }
  }

  // incident corners: the lowest always, the others when over the face
  for (int i = 0; i < (1 << (m - 1)); i++) {
    const tvec* W = pts + (i == 0 ? 0 : i + 2);
    if (i && (W->v[0] <= -lx || W->v[0] >= lx || W->v[1] <= -ly || W->v[1] >= ly)) continue;
    faceContact(x, f, pref, hz, nsg, W);
  }
}

// edge-case contact: position w (face coordinates) and distance
static void edgeContact(pairCtx* x, const tvec f[3], const tnum* hz, const tvec* N, mjtNum sg,
                        tvec w, const tnum* dist) {
  mjtNum wl[3] = {w.v[0], w.v[1], w.v[2] + hz->v}, pv[3], nv[3];
  worldValue(f, x->p1.v, wl, pv);
  mju_scl3(nv, N->v, sg);
  if (!improves(x, dist->v, nv, pv)) return;
  vaddAt(&w, 2, hz, 1);
  tvec pos = toWorld(f, &x->p1, &w);
  tvec n = vsclc(*N, sg);
  offer(x, dist, &n, &pos);
}

static void boxEdge(pairCtx* x, const mjdiffBoxAxis* sat, const mjtNum rot[9], mjtNum margin) {
  const tnum* S2 = x->S2;
  int q1 = (sat->code - 12) / 3, q2 = (sat->code - 12) % 3;

  // box-2 axes other than q2, the one most aligned with box-1 axis q1 first; likewise on box 1
  int ax1 = q2 == 0 ? 1 : q2 == 1 ? 0 : 1, ax2 = q2 == 0 ? 2 : q2 == 1 ? 2 : 0;
  int pax1 = q1 == 0 ? 1 : q1 == 1 ? 0 : 1, pax2 = q1 == 0 ? 2 : q1 == 1 ? 2 : 0;
  if (fabs(rot[3 * q1 + ax1]) < fabs(rot[3 * q1 + ax2])) {
    ax1 = ax2;
    ax2 = 3 - q2 - ax1;
  }
  if (fabs(rot[3 * pax1 + q2]) < fabs(rot[3 * pax2 + q2])) {
    pax1 = pax2;
    pax2 = 3 - q1 - pax1;
  }
  int clface = (sat->cle1 & (1 << pax2)) ? pax2 : pax2 + 3;

  // face frame on box 1, separating axis N (world) and r = F'N
  tvec f[3];
  mjtNum hs[3];
  tnum HS[3];
  faceFrame(clface, x->a1, x->s1, x->S1, f, hs, HS);
  mjtNum lx = hs[0], ly = hs[1], sg = sat->in ? -1 : 1;
  const tnum* hz = HS + 2;
  tvec cr = vcross(x->a1 + q1, x->a2 + q2);
  tnum crlen;
  tvec N = vnormalize(&cr, &crlen);
  tvec rn = toLocal(f, &N);
  if (fabs(rn.v[2]) < mjMINVAL) return;
  tnum rz = vget(&rn, 2);

  // box-2 face corners P0..P3 in face coordinates and their projections along N
  tvec rel = vsub(x->p2, &x->p1);
  tvec k = toLocal(f, &rel);
  vsubAt(&k, 2, hz);
  tvec b[3];
  for (int i = 0; i < 3; i++) b[i] = toLocal(f, x->a2 + i);
  mjtNum sg1 = (sat->cle2 & (1 << ax1)) ? 1 : -1, sg2 = (sat->cle2 & (1 << ax2)) ? 1 : -1;
  tvec P[4], Pr[4];
  for (int i = 0; i < 4; i++) {
    tnum c1 = tscl(S2[ax1], sg1 * (i < 2 ? 1 : -1)), c2 = tscl(S2[ax2], sg2);
    tnum c3 = tsgn(S2[q2], i % 2 == 0);
    P[i] = vaddscl(k, b + ax1, &c1);
    P[i] = vaddscl(P[i], b + ax2, &c2);
    P[i] = vaddscl(P[i], b + q2, &c3);
    tnum h = tscl(tdiv(vget(P + i, 2), rz), -1);
    Pr[i] = vaddscl(P[i], &rn, &h);
  }

  // the parallelogram's edges: projected (start, direction) and unprojected
  tvec e1 = vsub(Pr[1], Pr), e2 = vsub(Pr[2], Pr);
  tvec u1 = vsub(P[1], P), u2 = vsub(P[2], P);
  tvec ls[4] = {Pr[0], Pr[0], vadd(Pr[0], &e1), vadd(Pr[0], &e2)};
  tvec us[4] = {P[0], P[0], vadd(P[0], &u1), vadd(P[0], &u2)};
  const tvec* ld[4] = {&e1, &e2, &e2, &e1};
  const tvec* ud[4] = {&u1, &u2, &u2, &u1};

  // box-2 face edges whose projection crosses a side of the box-1 face (nl within the margin)
  int nl = 0;
  for (int i = 0; i < 4; i++) {
    for (int q = 0; q < 2; q++) {
      mjtNum a = ls[i].v[q], bq = ld[i]->v[q], c = ls[i].v[1 - q], dd = ld[i]->v[1 - q];
      if (fabs(bq) <= mjMINVAL) continue;
      for (int j = -1; j <= 1; j += 2) {
        mjtNum l = hs[q] * j;
        mjtNum t = (l - a) * (1 / bq);
        if (t < 0 || t > 1 || fabs(c + dd * t) > hs[1 - q]) continue;
        tnum tt = tdiv(tadd(tscl(vget(ls + i, q), -1), tscl(HS[q], j)), vget(ld[i], q));
        tnum c2 = tadd(vget(ls + i, 1 - q), tmul(vget(ld[i], 1 - q), tt));
        tvec U = vaddscl(us[i], ud[i], &tt);
        if ((us[i].v[2] + ud[i]->v[2] * t) * sg / rn.v[2] > margin) continue;
        nl++;
        tvec w = vsclc(U, 0.5);
        vaddAt(&w, q, HS + q, 0.5 * j);
        tnum wc = tadd(vget(&w, 1 - q), tscl(c2, 0.5));
        vset(&w, 1 - q, &wc);
        tnum dist = tscl(tdiv(vget(&U, 2), rz), sg);
        edgeContact(x, f, hz, &N, sg, w, &dist);
      }
    }
  }

  // corners of the box-1 face against the box-2 face point projecting onto them; the engine keeps
  // the determinant in a variable that each corner passing the (u, v) test overwrites with its
  // squared distance, which then divides the next corner's (u, v)
  tnum A = vget(&e1, 0), B = vget(&e2, 0), C = vget(&e1, 1), D = vget(&e2, 1);
  tnum den = tsub(tmul(A, D), tmul(B, C));
  int nf = 0;
  for (int i = 0; i < 4; i++) {
    tnum llx = tsgn(HS[0], i / 2), lly = tsgn(HS[1], i % 2), zero = tcon(0);
    tnum X = tadd(tscl(vget(Pr, 0), -1), llx), Y = tadd(tscl(vget(Pr, 1), -1), lly);
    tnum u = tdiv(tsub(tmul(X, D), tmul(Y, B)), den);
    tnum v = tdiv(tsub(tmul(Y, A), tmul(X, C)), den);
    int uout = u.v < 0 || u.v > 1, vout = v.v < 0 || v.v > 1;
    if (nl == 0 ? (uout && vout) : (uout || vout)) continue;
    if (uout) u = tcon(u.v < 0 ? 0 : 1);
    if (vout) v = tcon(v.v < 0 ? 0 : 1);
    tvec T = vaddscl(P[0], &u1, &u);
    T = vaddscl(T, &u2, &v);
    tvec Cf = vmake(&llx, &lly, &zero);
    tvec df = vsub(Cf, &T);
    den = vdot(&df, &df);
    if (T.v[2] > 0 && den.v > margin * margin) continue;
    nf++;
    tnum dist = tscl(tsqrt(den), T.v[2] < 0 ? -1 : 1);
    tvec w = vsclc(vadd(Cf, &T), 0.5);
    edgeContact(x, f, hz, &N, sg, w, &dist);
  }

  // box-2 corners against the clamped projection
  for (int i = 0; i < 4; i++) {
    mjtNum px = Pr[i].v[0], py = Pr[i].v[1];
    int xout = px < -lx || px > lx, yout = py < -ly || py > ly;
    if (nl ? (xout || yout) : (nf && xout && yout)) continue;
    tvec w = vsclc(P[i], 0.5);
    tnum c1 = tmul(tdiv(vget(P + i, 2), rz), tdiv(vget(P + i, 2), rz));
    for (int j = 0; j < 2; j++) {
      tnum pj = vget(Pr + i, j);
      if (pj.v < -hs[j] || pj.v > hs[j]) {
        tnum lim = tsgn(HS[j], pj.v >= -hs[j]);
        tnum e = tsub(pj, lim);
        c1 = tadd(c1, tmul(e, e));
        vaddAt(&w, j, &lim, 0.5);
      } else {
        tnum wj = tadd(vget(&w, j), tscl(pj, 0.5));
        vset(&w, j, &wj);
      }
    }
    if (P[i].v[2] > 0 && c1.v > margin * margin) continue;
    tnum dist = tscl(tsqrt(c1), P[i].v[2] < 0 ? -1 : 1);
    edgeContact(x, f, hz, &N, sg, w, &dist);
  }
}

#endif  // !MJDIFF_MUJOCO_3 (2.2.2's box-box)

#if MJDIFF_MUJOCO_3
//---------------------------------- box-box on MuJoCo 3 -------------------------------------------
// 3.12's mjc_BoxBox (header: "box-box on MuJoCo 3"); the case is mjdiff_boxBoxAxis's (3.12's
// arithmetic), the contact points are tracked through the same construction.

#define BOXMAXVERT3 12

// Sutherland-Hodgman against sign v_coord <= limit: *cur (n vertices) kept when all are inside,
// else written to *spare and the buffers swapped; intersections V = P + t (Q - P),
// t = dP / (dP - dQ), dP = sign P_coord - limit
static int clipHalf3(int n, tvec** cur, tvec** spare, int coord, mjtNum sign, const tnum* limit) {
  tvec* in = *cur;
  tnum dd[BOXMAXVERT3];
  int inside = 1;
  for (int k = 0; k < n; k++) {
    dd[k] = tsub(tscl(vget(in + k, coord), sign), *limit);
    inside &= dd[k].v <= 0;
  }
  if (inside) return n;
  tvec* out = *spare;
  int nout = 0;
  for (int k = 0; k < n; k++) {
    int k1 = k + 1 == n ? 0 : k + 1;
    mjtNum dp = dd[k].v, dq = dd[k1].v;
    if (dp <= 0 && nout < BOXMAXVERT3) out[nout++] = in[k];
    if (((dp < 0 && dq > 0) || (dp > 0 && dq < 0)) && nout < BOXMAXVERT3) {
      tnum t = tdiv(dd[k], tsub(dd[k], dd[k1]));
      tvec e = vsub(in[k1], in + k);
      out[nout++] = vaddscl(in[k], &e, &t);
    }
  }
  *cur = out;
  *spare = in;
  return nout;
}

// face case: reference box code / 6 (0: geom 1), face axis a = code % 3
static void boxFace3(pairCtx* x, int code, mjtNum margin) {
  int ref2 = code / 6, a = code % 3;
  const tvec* pref = ref2 ? &x->p2 : &x->p1;
  const tvec* pinc = ref2 ? &x->p1 : &x->p2;
  const tvec* aref = ref2 ? x->a2 : x->a1;
  const tvec* ainc = ref2 ? x->a1 : x->a2;
  const tnum* Sref = ref2 ? x->S2 : x->S1;
  const tnum* Sinc = ref2 ? x->S1 : x->S2;
  const mjtNum* sref = ref2 ? x->s2 : x->s1;

  // incident centre and axes in the reference frame
  tvec rel = vsub(*pinc, pref);
  tvec po = toLocal(aref, &rel);
  tvec ri[3];
  for (int c = 0; c < 3; c++) ri[c] = toLocal(aref, ainc + c);
  mjtNum sgn = po.v[a] >= 0 ? 1 : -1;
  int binc = 0;
  for (int k = 1; k < 3; k++) {
    if (fabs(ri[k].v[a]) > fabs(ri[binc].v[a])) binc = k;
  }
  mjtNum tinc = sgn * ri[binc].v[a] > 0 ? -1 : 1;
  int ax = (a + 1) % 3, ay = (a + 2) % 3, bu = (binc + 1) % 3, bv = (binc + 2) % 3;

  // incident face: centre cx and half edges du, dv in (x, y, z above the reference face)
  tnum cx[3], du[3], dv[3];
  tnum hb = tscl(Sinc[binc], tinc);
  for (int r = 0; r < 3; r++) {
    int c = r == 0 ? ax : (r == 1 ? ay : a);
    cx[r] = tadd(vget(&po, c), tmul(hb, vget(ri + binc, c)));
    du[r] = tmul(Sinc[bu], vget(ri + bu, c));
    dv[r] = tmul(Sinc[bv], vget(ri + bv, c));
  }
  cx[2] = tsub(tscl(cx[2], sgn), Sref[a]);
  du[2] = tscl(du[2], sgn);
  dv[2] = tscl(dv[2], sgn);
  tvec C = vmake(cx, cx + 1, cx + 2), U = vmake(du, du + 1, du + 2), V = vmake(dv, dv + 1, dv + 2);
  static const mjtNum kCorner[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
  tvec poly[2][BOXMAXVERT3];
  for (int k = 0; k < 4; k++) {
    poly[0][k] = vaddsclc(C, &U, kCorner[k][0]);
    poly[0][k] = vaddsclc(poly[0][k], &V, kCorner[k][1]);
  }
  tvec *cur = poly[0], *spare = poly[1];
  int nv = 4;
  nv = clipHalf3(nv, &cur, &spare, 0, 1, Sref + ax);
  nv = clipHalf3(nv, &cur, &spare, 0, -1, Sref + ax);
  nv = clipHalf3(nv, &cur, &spare, 1, 1, Sref + ay);
  nv = clipHalf3(nv, &cur, &spare, 1, -1, Sref + ay);

  // vertices within the margin, near-duplicates (first kept) dropped
  mjtNum dupe2 = 1e-14 * (sref[ax] * sref[ax] + sref[ay] * sref[ay]);
  mjtNum kept[BOXMAXVERT3][2];
  int nk = 0;
  tvec n = vsclc(aref[a], ref2 ? -sgn : sgn);
  for (int k = 0; k < nv; k++) {
    const tvec* W = cur + k;
    if (W->v[2] > margin) continue;
    int dupe = 0;
    for (int q = 0; q < nk && !dupe; q++) {
      mjtNum ex = kept[q][0] - W->v[0], ey = kept[q][1] - W->v[1];
      dupe = ex * ex + ey * ey < dupe2;
    }
    if (dupe) continue;
    kept[nk][0] = W->v[0];
    kept[nk][1] = W->v[1];
    nk++;
    mjtNum wl[3], pv[3];
    wl[ax] = W->v[0];
    wl[ay] = W->v[1];
    wl[a] = sgn * (sref[a] + 0.5 * W->v[2]);
    worldValue(aref, pref->v, wl, pv);
    if (!improves(x, W->v[2], n.v, pv)) continue;
    tnum dist = vget(W, 2), wx = vget(W, 0), wy = vget(W, 1);
    tnum wz = tscl(tadd(Sref[a], tscl(dist, 0.5)), sgn);
    tvec w;
    vset(&w, ax, &wx);
    vset(&w, ay, &wy);
    vset(&w, a, &wz);
    tvec pos = toWorld(aref, pref, &w);
    offer(x, &dist, &n, &pos);
  }
}

// a size entry clipped to [-S, S] (tracked S when clipped)
static tnum clipSize3(const tnum* v, const tnum* S) {
  if (v->v < -S->v) return tscl(*S, -1);
  if (v->v > S->v) return *S;
  return *v;
}

// edge case: box-1 edge axis i, box-2 edge axis j
static void boxEdge3(pairCtx* x, int i, int j) {
  int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
  const tvec *d1 = x->a1 + i, *d2 = x->a2 + j;
  tvec cr = vcross(d1, d2);
  tnum len;
  tvec N = vnormalize(&cr, &len);
  tvec rel = vsub(x->p2, &x->p1);
  if (vdot(&N, &rel).v < 0) N = vsclc(N, -1);

  // N in both box frames (values: the supporting corners), ambiguous components
  mjtNum n1[3], n2[3];
  for (int k = 0; k < 3; k++) {
    n1[k] = mju_dot3(x->a1[k].v, N.v);
    n2[k] = mju_dot3(x->a2[k].v, N.v);
  }
  const mjtNum ambig = 1e-9;
  int amb1 = -1, amb2 = -1;
  if (fabs(n1[i1]) < ambig) {
    amb1 = i1;
  } else if (fabs(n1[i2]) < ambig) {
    amb1 = i2;
  }
  if (fabs(n2[j1]) < ambig) {
    amb2 = j1;
  } else if (fabs(n2[j2]) < ambig) {
    amb2 = j2;
  }
  tnum b = vdot(d1, d2);
  tnum denom = tsub(tcon(1), tmul(b, b));
  mjtNum best = mjMAXVAL;
  tvec w1 = x->p1, w2 = x->p2;
  for (int v1 = 0; v1 < (amb1 >= 0 ? 2 : 1); v1++) {
    for (int v2 = 0; v2 < (amb2 >= 0 ? 2 : 1); v2++) {
      tvec c1 = x->p1, c2 = x->p2;
      const int k1[2] = {i1, i2}, k2[2] = {j1, j2};
      for (int q = 0; q < 2; q++) {
        int k = k1[q];
        mjtNum sg = n1[k] >= 0 ? 1 : -1;
        if (k == amb1 && v1) sg = -sg;
        tnum c = tscl(x->S1[k], sg);
        c1 = vaddscl(c1, x->a1 + k, &c);
        k = k2[q];
        sg = n2[k] >= 0 ? -1 : 1;
        if (k == amb2 && v2) sg = -sg;
        c = tscl(x->S2[k], sg);
        c2 = vaddscl(c2, x->a2 + k, &c);
      }
      tvec e = vsub(c2, &c1);
      tnum d1e = vdot(d1, &e), d2e = vdot(d2, &e);
      tnum s = denom.v < mjMINVAL ? tcon(0) : tdiv(tsub(d1e, tmul(b, d2e)), denom);
      s = clipSize3(&s, x->S1 + i);
      tnum t = tsub(tmul(b, s), d2e);
      t = clipSize3(&t, x->S2 + j);
      s = tadd(d1e, tmul(b, t));
      s = clipSize3(&s, x->S1 + i);
      tvec q1 = vaddscl(c1, d1, &s), q2 = vaddscl(c2, d2, &t);
      tvec gap = vsub(q2, &q1);
      mjtNum g2 = mju_dot3(gap.v, gap.v);
      if (g2 < best) {
        best = g2;
        w1 = q1;
        w2 = q2;
      }
    }
  }
  tvec gap = vsub(w2, &w1);
  tnum dist = vdot(&gap, &N);
  tvec pos = vsclc(vadd(w1, &w2), 0.5);
  offer(x, &dist, &N, &pos);
}
#endif

static void boxBox(pairCtx* x, const mjtNum* p1, const mjtNum* R1, const mjtNum* p2,
                   const mjtNum* R2, mjtNum margin) {
  mjtNum rot[9];
  mjdiffBoxAxis sat = mjdiff_boxBoxAxis(p1, R1, x->s1, p2, R2, x->s2, margin, rot);
  if (sat.code < 0) return;
#if MJDIFF_MUJOCO_3
  if (sat.code < 12) {
    boxFace3(x, sat.code, margin);
  } else {
    boxEdge3(x, (sat.code - 12) / 3, (sat.code - 12) % 3);
  }
#else
  if (sat.code < 12) {
    boxFace(x, sat.code);
  } else {
    boxEdge(x, &sat, rot, margin);
  }
#endif
}

//---------------------------------- entry points --------------------------------------------------

int mjdiff_contactPairSupported(int t1, int t2) {
  if (t1 > t2) {
    int t = t1;
    t1 = t2;
    t2 = t;
  }
  if (mjdiff_convexPair(t1, t2)) return 1;  // exact convex geometry (convex_d.c)
  switch (t1) {
    case mjGEOM_PLANE:
      return t2 == mjGEOM_SPHERE || t2 == mjGEOM_CAPSULE || t2 == mjGEOM_CYLINDER ||
             t2 == mjGEOM_BOX || t2 == mjGEOM_ELLIPSOID || t2 == mjGEOM_MESH;
    case mjGEOM_SPHERE:
      return t2 == mjGEOM_SPHERE || t2 == mjGEOM_CAPSULE || t2 == mjGEOM_BOX;
    case mjGEOM_CAPSULE:
      return t2 == mjGEOM_CAPSULE || t2 == mjGEOM_BOX;
    case mjGEOM_BOX:
      return t2 == mjGEOM_BOX;
    default:
      return 0;
  }
}

// the contacts con[0 .. nt - 1] (nt <= GEOM_RUN) of geoms g1, g2 (a supported pair, t1 <= t2)
// tracked in z, from one run of the pair function's candidates: ok[t] 1 if a candidate
// reproduces contact t, else 0
static void trackPair(const mjModel* m, const mjData* d, const mjContact* const* con, int nt,
                      int g1, int g2, pairCtx* x, int* ok) {
  int t1 = m->geom_type[g1], t2 = m->geom_type[g2];

  // the two geoms in tracked form
  const mjtNum *p1 = d->geom_xpos + 3 * g1, *R1 = d->geom_xmat + 9 * g1;
  const mjtNum *p2 = d->geom_xpos + 3 * g2, *R2 = d->geom_xmat + 9 * g2;
  x->s1 = m->geom_size + 3 * g1;
  x->s2 = m->geom_size + 3 * g2;
  for (int k = 0; k < 3; k++) {
    x->S1[k] = tsize(x->s1[k], NPOSE + k);
    x->S2[k] = tsize(x->s2[k], NPOSE + 3 + k);
  }
  x->p1 = vpoint(0, p1, p1);
  x->p2 = vpoint(1, p2, p2);
  for (int k = 0; k < 3; k++) {
    mjtNum c1[3] = {R1[k], R1[3 + k], R1[6 + k]}, c2[3] = {R2[k], R2[3 + k], R2[6 + k]};
    x->a1[k] = vdir(0, c1);
    x->a2[k] = vdir(1, c2);
  }
  x->nt = nt;
  for (int t = 0; t < nt; t++) {
    x->con[t] = con[t];
    x->best[t] = mjMAXVAL;
  }

  // candidates of the engine's pair function
  if (t1 == mjGEOM_PLANE) {
    if (t2 == mjGEOM_SPHERE) planePoint(x, &x->p2, x->S2);
    if (t2 == mjGEOM_CAPSULE) planeCapsule(x);
    if (t2 == mjGEOM_ELLIPSOID) planeEllipsoid(x);
    if (t2 == mjGEOM_CYLINDER) planeCylinder(x);
    if (t2 == mjGEOM_BOX) planeBox(x);
    if (t2 == mjGEOM_MESH) planeMesh(x, m, g2, p2, R2);
  } else if (t1 == mjGEOM_SPHERE) {
    if (t2 == mjGEOM_SPHERE) sphereSphere(x, &x->p1, x->S1, &x->p2, x->S2);
    if (t2 == mjGEOM_CAPSULE) sphereCapsule(x);
    if (t2 == mjGEOM_BOX) sphereBox(x, &x->p1, x->S1);
  } else if (t1 == mjGEOM_CAPSULE) {
    if (t2 == mjGEOM_CAPSULE) capsuleCapsule(x);
    if (t2 == mjGEOM_BOX) capsuleBox(x, mjdiff_contactMargin(m, con[0]));
  } else if (t1 == mjGEOM_BOX && t2 == mjGEOM_BOX) {
    boxBox(x, p1, R1, p2, R2, mjdiff_contactMargin(m, con[0]));
  }

  // the nearest candidate must be the contact
  mjtNum tol = 1e-6 * (1 + m->geom_rbound[g1] + m->geom_rbound[g2]);
  for (int t = 0; t < nt; t++) ok[t] = x->best[t] <= tol * tol;
}

// columns c0 .. c0 + nc - 1 of contact t's tracked y = (dist, n, pos) into Y (7 x nc)
static void copyColumns(const pairCtx* x, int t, int c0, int nc, mjtNum* Y) {
  mju_copy(Y, x->dist[t].g + c0, nc);
  for (int i = 0; i < 3; i++) {
    mju_copy(Y + (1 + i) * nc, x->n[t].J + i * NZ + c0, nc);
    mju_copy(Y + (4 + i) * nc, x->pos[t].J + i * NZ + c0, nc);
  }
}

int mjdiff_contactGeomJacobian(const mjModel* m, const mjData* d, const mjContact* con,
                               mjtNum J[7 * 12]) {
  int status = -1;
  mjdiff_contactGeomJacobianRun(m, d, con, 1, J, &status);
  return status;
}

int mjdiff_contactGeomJacobianRun(const mjModel* m, const mjData* d, const mjContact* con, int n,
                                  mjtNum* J, int* status) {
  for (int i = 0; i < n; i++) status[i] = -1;
  if (n < 1) return 0;
  mju_zero(J, 7 * NPOSE * n);
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  if (g1 < 0 || g2 < 0 || g1 >= m->ngeom || g2 >= m->ngeom) return -1;
  for (int i = 1; i < n; i++) {
    if (compat_contactGeom1(con + i) != g1 || compat_contactGeom2(con + i) != g2) return -1;
  }
  int t1 = m->geom_type[g1], t2 = m->geom_type[g2];
  if (mjdiff_convexPair(t1, t2)) {  // solved per contact (convex_d.c)
    for (int i = 0; i < n; i++) status[i] = mjdiff_convexGeomJacobian(m, d, con + i, J + 84 * i);
    return 0;
  }
  if (t1 > t2 || !mjdiff_contactPairSupported(t1, t2)) return 0;
  for (int i0 = 0; i0 < n; i0 += GEOM_RUN) {
    int nt = n - i0 < GEOM_RUN ? n - i0 : GEOM_RUN, ok[GEOM_RUN];
    const mjContact* cs[GEOM_RUN];
    for (int t = 0; t < nt; t++) cs[t] = con + i0 + t;
    pairCtx x;
    trackPair(m, d, cs, nt, g1, g2, &x, ok);
    for (int t = 0; t < nt; t++) {
      if (ok[t]) copyColumns(&x, t, 0, NPOSE, J + 84 * (i0 + t));
      status[i0 + t] = ok[t] ? 0 : -1;
    }
  }
  return 0;
}

int mjdiff_contactGeomSizeJacobian(const mjModel* m, const mjData* d, const mjContact* con,
                                   mjtNum Js[7 * 6]) {
  mju_zero(Js, 7 * 6);
  int g1 = compat_contactGeom1(con), g2 = compat_contactGeom2(con);
  if (g1 < 0 || g2 < 0 || g1 >= m->ngeom || g2 >= m->ngeom) return -1;
  int t1 = m->geom_type[g1], t2 = m->geom_type[g2];
  if (mjdiff_convexPair(t1, t2)) return mjdiff_convexGeomSizeJacobian(m, d, con, Js);
  if (t1 > t2 || !mjdiff_contactPairSupported(t1, t2)) return -1;
  pairCtx x;
  int ok;
  trackPair(m, d, &con, 1, g1, g2, &x, &ok);
  if (!ok) return -1;
  copyColumns(&x, 0, NPOSE, 6, Js);
  return 0;
}
