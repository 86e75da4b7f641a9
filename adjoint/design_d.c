// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Geometry parameters (<mjdiff/params.h>): body, geom, site and joint-anchor positions, geom sizes
// and a body's scale, with the compile-time consequences MuJoCo 2.2.2's compiler draws from them
// (src/user/user_objects.cc: mjCGeom::GetVolume, mjCGeom::SetInertia, mjCBody::GeomFrame,
// mjCGeom::GetRBound), and their columns of DrDp.
//
// ---- compile-time map (per body b with geoms g; sizes s = geom_size, positions p_g, orientations
//      R_g = geom_quat in the body frame)
// Volume V(s):   sphere 4/3 pi r^3; capsule pi r^2 (2h) + 4/3 pi r^3; cylinder pi r^2 (2h);
//                ellipsoid 4/3 pi s0 s1 s2; box 8 s0 s1 s2   (r = s0, h = s1).
// Mass:          m_g = rho_g V(s_g) (density basis, MuJoCo's default) or m_g fixed (an explicit MJCF
//                mass=: mjdiff_designFixMass); rho_g = m_g / V at the reference (the selection's
//                model), so the reference reproduces itself.
// Diagonal inertia in the geom frame (SetInertia):
//   sphere     2/5 m r^2 (each)
//   cylinder   m (3 r^2 + H^2)/12 (x, y), m r^2/2 (z),    H = 2h
//   capsule    cylinder part m_c = m - m_s with m_s = m 4r/(4r + 3H), plus two hemispheres:
//              x, y += 2/5 m_s r^2 + m_s H (3r + 2H)/8,  z += 2/5 m_s r^2
//   ellipsoid  m (s1^2 + s2^2)/5, m (s0^2 + s2^2)/5, m (s0^2 + s1^2)/5
//   box        m (s1^2 + s2^2)/3, ...
// Body (GeomFrame): one geom: mass = m_g, ipos = p_g, iquat = geom quat, inertia = the diagonal
//   (no sorting). Several: M = sum m_g, c = sum m_g p_g / M,
//   T = sum_g R_g diag(I_g) R_g' + m_g (|d_g|^2 E - d_g d_g'), d_g = p_g - c   (parallel axes),
//   then (inertia, iquat) = the eigendecomposition of T by mju_eig3 (the compiler's own routine,
//   so a recompiled MJCF agrees to rounding).
// Bounding radius (GetRBound): sphere r; capsule r + h; cylinder sqrt(r^2 + h^2); ellipsoid
//   max s_k; box |s|.
// Which bodies follow: at selection time each body with only primitive geoms is checked against
//   the map with uniform density (rho = M / sum V), and if that fails with the geom masses that
//   reproduce the compiled mass M, com c and origin tensor T_o = T + M (|c|^2 E - c c') =
//   sum_g m_g (R_g J_g R_g' + |p_g|^2 E - p_g p_g') (10 linear equations in the m_g, least squares,
//   at most 10 geoms): where the compiled mass, ipos and inertia tensor R(iquat) diag(inertia)
//   R(iquat)' agree (1e-6 relative), the body's inertials were inferred from its geoms and follow
//   them; otherwise (an explicit <inertial>, meshes, planes) they stay fixed.
// Scale (body:B:scale, value c, 1 at the reference): every position in B's frame becomes c times
//   its reference -- the child bodies' pos, B's geoms' and sites' pos and capsule/cylinder
//   half-lengths (size[1]), B's joints' anchors --, sizes other than half-lengths are kept. Its
//   value is read back from the model as the projection of the first of those quantities with a
//   nonzero reference (c = x.x0 / x0.x0). Explicit pos and size parameters are applied after the
//   scales.
//
// ---- derivative
// A geometry parameter moves the kinematics of every body below (body, joint pos), the contact
// geometry (geom pos, size: the pair functions' size Jacobians of geom_d.c describe the same
// motion), the tendon wraps and transmissions at sites, and the inertials above. Its column of
//   DrDp = d/dp [ f(q, v, act, u; p) - M(q; p) acc - c(q, v; p) ]     (hdamp B acc: independent of p)
// is analytic (params_d.c) for geom sizes and positions (contacts and inertials), body positions
// (a translation of the subtree), hinge and ball anchors (two translations), scales (the sum of
// what they move), sites nothing reads and slide anchors (zero), each where its conditions hold
// (no fluid force, tendon, connect or weld equality reading what moves; params_d.c's header).
// For the others (sites on tendons) and those where the conditions fail, it is taken here by
// central differences
// of that residual at the fixed state, on a copy of the model with the parameter set through
// mjdiff_designApply (the same compile-time map, its principal axes finished to rounding:
// refineEig):
//   col = (r(p + h e_i) - r(p - h e_i)) / 2h,   h = 1e-6 max(|p_i|, 0.1)
// (r = qfrc_smooth - M acc from mjdiff_forward on the copy; the smooth forces' part by
// mjdiff_addForces on the copy for the split the implicit step needs). Truncation O(h^2 r''')
// ~ 1e-12 relative; rounding ~ eps |r| / h ~ 1e-10 relative to the column's scale |r| / L.
// Within a step the contact set is the one the copy finds at p +- h (the smooth law has no jump at
// a contact's appearance: the force ramps from zero over the contact width).
// The differenced columns difference the compile-time map together with the rest (the map is
// smooth; eigenvalue crossings of T are harmless since the dynamics read T, not its eigenvectors).
// The map alone has an exact Jacobian (mjdiff_designInertialJacobian, at the end of this file).
// Sensors that read a moved site or geom directly get that dependence from sensor_p.c; loss terms
// (<mjdiff/loss.h>) do not (their state dependence is exact).

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "derivative.h"
#include "params_internal.h"

struct designInfo_ {
  int nbody, ngeom, nsite, njnt;
  int maxgeom;                 // the most geoms on one body
  signed char* inferred;       // (nbody) inertials follow the geoms
  mjtNum* rho;                 // (ngeom) density, or -1: fixed mass gmass
  mjtNum* gmass;               // (ngeom) mass at the reference
  mjtNum* body_pos0;           // references for scales (3 nbody, 3 ngeom, 3 ngeom, 3 nsite, ...)
  mjtNum* geom_pos0;
  mjtNum* geom_size0;
  mjtNum* site_pos0;
  mjtNum* jnt_pos0;
  mjtNum* site_size1;          // (nsite) half-lengths of capsule and cylinder sites
  int differenced;             // 1: geom size and position columns by differences too (tests)
};

//---------------------------------- primitives ----------------------------------------------------

static int primitive(int type) {
  return type == mjGEOM_SPHERE || type == mjGEOM_CAPSULE || type == mjGEOM_CYLINDER ||
         type == mjGEOM_ELLIPSOID || type == mjGEOM_BOX;
}

static mjtNum volume(int type, const mjtNum* s) {
  switch (type) {
    case mjGEOM_SPHERE: return 4 * mjPI * s[0] * s[0] * s[0] / 3;
    case mjGEOM_CAPSULE: return mjPI * (s[0] * s[0] * 2 * s[1] + 4 * s[0] * s[0] * s[0] / 3);
    case mjGEOM_CYLINDER: return mjPI * s[0] * s[0] * 2 * s[1];
    case mjGEOM_ELLIPSOID: return 4 * mjPI * s[0] * s[1] * s[2] / 3;
    case mjGEOM_BOX: return 8 * s[0] * s[1] * s[2];
    default: return 0;
  }
}

static void diagInertia(int type, const mjtNum* s, mjtNum m, mjtNum I[3]) {
  mjtNum r = s[0], H = 2 * s[1];
  switch (type) {
    case mjGEOM_SPHERE:
      I[0] = I[1] = I[2] = 2 * m * r * r / 5;
      return;
    case mjGEOM_CAPSULE: {
      mjtNum ms = m * 4 * r / (4 * r + 3 * H), mc = m - ms, si = 2 * ms * r * r / 5;
      I[0] = I[1] = mc * (3 * r * r + H * H) / 12 + si + ms * H * (3 * r + 2 * H) / 8;
      I[2] = mc * r * r / 2 + si;
      return;
    }
    case mjGEOM_CYLINDER:
      I[0] = I[1] = m * (3 * r * r + H * H) / 12;
      I[2] = m * r * r / 2;
      return;
    case mjGEOM_ELLIPSOID:
      I[0] = m * (s[1] * s[1] + s[2] * s[2]) / 5;
      I[1] = m * (s[0] * s[0] + s[2] * s[2]) / 5;
      I[2] = m * (s[0] * s[0] + s[1] * s[1]) / 5;
      return;
    case mjGEOM_BOX:
      I[0] = m * (s[1] * s[1] + s[2] * s[2]) / 3;
      I[1] = m * (s[0] * s[0] + s[2] * s[2]) / 3;
      I[2] = m * (s[0] * s[0] + s[1] * s[1]) / 3;
      return;
    default:
      I[0] = I[1] = I[2] = 0;
  }
}

static mjtNum rbound(int type, const mjtNum* s) {
  switch (type) {
    case mjGEOM_SPHERE: return s[0];
    case mjGEOM_CAPSULE: return s[0] + s[1];
    case mjGEOM_CYLINDER: return sqrt(s[0] * s[0] + s[1] * s[1]);
    case mjGEOM_ELLIPSOID: return mju_max(mju_max(s[0], s[1]), s[2]);
    case mjGEOM_BOX: return sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    default: return -1;
  }
}

// T (3x3) += R diag(I) R' + m (|d|^2 E - d d')
static void addGeomTensor(mjtNum T[9], const mjtNum quat[4], const mjtNum I[3], mjtNum m,
                          const mjtNum dpos[3]) {
  mjtNum R[9];
  mju_quat2Mat(R, quat);
  mjtNum dd = mju_dot3(dpos, dpos);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      mjtNum v = 0;
      for (int k = 0; k < 3; k++) v += R[3 * i + k] * I[k] * R[3 * j + k];
      T[3 * i + j] += v + m * ((i == j ? dd : 0) - dpos[i] * dpos[j]);
    }
  }
}

// mju_eig3 stops once its next Jacobi rotation's cosine is within 1e-12 of 1 (an angle below
// ~1.4e-6 rad), so its axes, and the tensor R diag R' they rebuild, are a step function of T at
// ~1e-6 relative: differencing them at a step of 1e-7 gives columns off by O(1). For differences
// (exact = 1 below), the decomposition is finished by cyclic Jacobi rotations on V (the columns of
// R(iquat)) until D = V' T V is diagonal to rounding, taking only rotations below 1e-5 rad (what
// mju_eig3 leaves; a larger one means two nearly equal moments, whose axes stay mju_eig3's); the
// compiled model (exact = 0) keeps mju_eig3's result, which is what MuJoCo's compiler writes.
//   Rotation in the plane (a, b) of D: tau = (D_bb - D_aa) / (2 D_ab),
//   t = sign(tau) / (|tau| + sqrt(1 + tau^2)), c = 1 / sqrt(1 + t^2), s = t c,
//   v_a <- c v_a - s v_b,  v_b <- s v_a + c v_b   (zeroes D_ab; det V stays +1).
static void refineEig(const mjtNum T[9], mjtNum inertia[3], mjtNum iquat[4]) {
  mjtNum V[9], D[9], tmp[9];
  mju_quat2Mat(V, iquat);
  for (int sweep = 0; sweep < 8; sweep++) {
    mju_mulMatTMat(tmp, V, T, 3, 3, 3);
    mju_mulMatMat(D, tmp, V, 3, 3, 3);
    mjtNum off = fabs(D[1]) + fabs(D[2]) + fabs(D[5]);
    mjtNum diag = fabs(D[0]) + fabs(D[4]) + fabs(D[8]);
    if (off <= 1e-15 * diag) break;
    for (int pr = 0; pr < 3; pr++) {
      int a = pr == 2 ? 1 : 0, b = pr == 0 ? 1 : 2;
      mju_mulMatTMat(tmp, V, T, 3, 3, 3);
      mju_mulMatMat(D, tmp, V, 3, 3, 3);
      mjtNum dab = D[3 * a + b];
      // at rounding level nothing is left to rotate: with two equal moments a rotation on noise
      // would turn the axes in their plane by an arbitrary angle, differently at p + h and p - h
      // (harmless for T, not for what reads the axes: the fluid force)
      if (fabs(dab) <= 1e-15 * (fabs(D[4 * a]) + fabs(D[4 * b]))) continue;
      mjtNum tau = (D[4 * b] - D[4 * a]) / (2 * dab);
      mjtNum t = (tau >= 0 ? 1 : -1) / (fabs(tau) + sqrt(1 + tau * tau));
      // only what mju_eig3 left (rotations below its stopping angle, ~1.4e-6 rad): a larger one
      // is a pair of (nearly) equal moments, whose axes mju_eig3 fixes by its own path and the
      // compiled model keeps; turning them to T's exact eigenvectors there would put the copy's
      // axes elsewhere than the model's (review: a fluid body with two equal moments)
      if (fabs(t) > 1e-5) continue;
      mjtNum c = 1 / sqrt(1 + t * t), sn = t * c;
      for (int r = 0; r < 3; r++) {
        mjtNum va = V[3 * r + a], vb = V[3 * r + b];
        V[3 * r + a] = c * va - sn * vb;
        V[3 * r + b] = sn * va + c * vb;
      }
    }
  }
  mju_mulMatTMat(tmp, V, T, 3, 3, 3);
  mju_mulMatMat(D, tmp, V, 3, 3, 3);
  for (int k = 0; k < 3; k++) inertia[k] = D[4 * k];
  mju_mat2Quat(iquat, V);
}

// the compile-time map of body b with geom masses gm (ngeom): mass, ipos, iquat, inertia; and T
// (3x3, the tensor about the com in the body frame); 0, or -1 if the body has no geom or zero mass.
// exact: the eigendecomposition finished to rounding (refineEig)
static int bodyInertial(const mjModel* m, int b, const mjtNum* gm, mjtNum* mass, mjtNum ipos[3],
                        mjtNum iquat[4], mjtNum inertia[3], mjtNum T[9], int exact) {
  int g0 = m->body_geomadr[b], n = m->body_geomnum[b];
  if (g0 < 0 || n == 0) return -1;
  mjtNum I[3];
  mju_zero(T, 9);
  if (n == 1) {
    *mass = gm[g0];
    mju_copy3(ipos, m->geom_pos + 3 * g0);
    mju_copy4(iquat, m->geom_quat + 4 * g0);
    diagInertia(m->geom_type[g0], m->geom_size + 3 * g0, gm[g0], inertia);
    mjtNum zero[3] = {0, 0, 0};
    addGeomTensor(T, iquat, inertia, 0, zero);
    return *mass > 0 ? 0 : -1;
  }
  mjtNum M = 0, c[3] = {0, 0, 0};
  for (int g = g0; g < g0 + n; g++) {
    M += gm[g];
    mju_addToScl3(c, m->geom_pos + 3 * g, gm[g]);
  }
  if (M < mjMINVAL) return -1;
  mju_scl3(c, c, 1 / M);
  for (int g = g0; g < g0 + n; g++) {
    mjtNum d[3];
    mju_sub3(d, m->geom_pos + 3 * g, c);
    diagInertia(m->geom_type[g], m->geom_size + 3 * g, gm[g], I);
    addGeomTensor(T, m->geom_quat + 4 * g, I, gm[g], d);
  }
  *mass = M;
  mju_copy3(ipos, c);
  mjtNum vec[9], full[9];
  mju_copy(full, T, 9);
  mju_eig3(inertia, vec, iquat, full);
  if (exact) refineEig(T, inertia, iquat);
  return 0;
}

//---------------------------------- selection -----------------------------------------------------

// 1 if p selects component comp of kind's object id
static int selectedComp(const mjdiffParams* p, int kind, int id, int comp) {
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    if (e->kind == kind && e->id == id && e->comp == comp) return 1;
  }
  return 0;
}

// 1 if p (nullable) selects any component of kind's object id
static int selectedAny(const mjdiffParams* p, int kind, int id) {
  for (int i = 0; p && i < p->n; i++) {
    if (p->entry[i].kind == kind && p->entry[i].id == id) return 1;
  }
  return 0;
}

// the first quantity with a nonzero reference that body b's scale moves and that p (nullable)
// does not set explicitly (an explicit value overrides the scale there, so it could not read the
// scale back): its address in m and reference (3 numbers, or 1 for a half-length); 0 if none
static int scaleRef(const mjModel* m, const struct designInfo_* di, const mjdiffParams* p, int b,
                    mjtNum** cur, const mjtNum** ref, int* n) {
  for (int c = b + 1; c < m->nbody; c++) {
    if (m->body_parentid[c] != b || selectedAny(p, PK_BODY_POS, c)) continue;
    const mjtNum* r = di ? di->body_pos0 + 3 * c : m->body_pos + 3 * c;
    if (mju_norm3(r) > 0) {
      *cur = m->body_pos + 3 * c;
      *ref = r;
      *n = 3;
      return 1;
    }
  }
  for (int g = m->body_geomadr[b]; g >= 0 && g < m->body_geomadr[b] + m->body_geomnum[b]; g++) {
    const mjtNum* r = di ? di->geom_pos0 + 3 * g : m->geom_pos + 3 * g;
    if (mju_norm3(r) > 0 && !selectedAny(p, PK_GEOM_POS, g)) {
      *cur = m->geom_pos + 3 * g;
      *ref = r;
      *n = 3;
      return 1;
    }
    int t = m->geom_type[g];
    if ((t == mjGEOM_CAPSULE || t == mjGEOM_CYLINDER) && !selectedAny(p, PK_GEOM_SIZE, g)) {
      *cur = m->geom_size + 3 * g + 1;
      *ref = di ? di->geom_size0 + 3 * g + 1 : m->geom_size + 3 * g + 1;
      *n = 1;
      return 1;
    }
  }
  return 0;
}

const char* mjdiff_designNotApplicable(const mjModel* m, int pk, int id) {
#if MJDIFF_MUJOCO_3
  // 3.x stores M in CSR with the rows of "simple" dofs reduced to their diagonal (dof_M0, fixed
  // at compile time): geometry that moves such a body's inertia has no room there
  int b = pk == PK_BODY_POS || pk == PK_BODY_SCALE ? id :
          pk == PK_GEOM_POS || pk == PK_GEOM_SIZE ? m->geom_bodyid[id] :
          pk == PK_SITE_POS ? m->site_bodyid[id] : m->jnt_bodyid[id];
  for (int k = 1; k < m->nbody; k++) {
    int a = k;
    while (a > 0 && a != b) a = m->body_parentid[a];
    if (a != b) continue;
    for (int j = m->body_dofadr[k]; j >= 0 && j < m->body_dofadr[k] + m->body_dofnum[k]; j++) {
      if (m->dof_simplenum[j]) {
        return "MuJoCo 3 compiled the body or one below it as simple (a diagonal mass matrix "
               "fixed at compile time, which moved geometry would change)";
      }
    }
  }
#endif
  switch (pk) {
    case PK_BODY_POS:
      if (id == 0) return "the world body's frame is the world frame: it has no position to move";
      if (m->body_jntnum[id] > 0 && m->jnt_type[m->body_jntadr[id]] == mjJNT_FREE) {
        return "the body has a free joint: its position is the joint's qpos (the state), not a "
               "model parameter";
      }
      return NULL;
    case PK_JNT_POS:
      return m->jnt_type[id] == mjJNT_FREE ? "a free joint has no anchor (it moves the whole body)"
                                           : NULL;
    case PK_BODY_SCALE: {
      if (id == 0) return "the world body cannot be scaled";
      mjtNum* cur;
      const mjtNum* ref;
      int n;
      return scaleRef(m, NULL, NULL, id, &cur, &ref, &n)
                 ? NULL
                 : "the body has no child body, geom position or capsule/cylinder length to scale";
    }
    case PK_GEOM_SIZE:
      if (m->geom_type[id] == mjGEOM_MESH) {
        return "a mesh geom's size comes from its mesh file (scale the mesh asset instead)";
      }
      if (m->geom_type[id] == mjGEOM_HFIELD) return "a height field's size comes from its asset";
      if (m->geom_type[id] == mjGEOM_PLANE) {
        return "a plane's size is for rendering only (collisions treat it as unbounded)";
      }
      return NULL;
    case PK_GEOM_POS:
      if (m->geom_type[id] == mjGEOM_MESH || m->geom_type[id] == mjGEOM_HFIELD) {
        return "a mesh or height-field geom's position includes its asset's compiled offset";
      }
      return NULL;
    default:
      return NULL;
  }
}

static int matches(const mjtNum* a, const mjtNum* b, int n, mjtNum scale, mjtNum tol) {
  for (int i = 0; i < n; i++) {
    if (fabs(a[i] - b[i]) > tol * scale) return 0;
  }
  return 1;
}

// 1 if the geom masses gm reproduce body b's compiled inertials
static int reproduces(const mjModel* m, int b, const mjtNum* gm) {
  int g0 = m->body_geomadr[b], n = m->body_geomnum[b];
  mjtNum mass, ipos[3], iquat[4], inertia[3], T[9], T0[9], R[9];
  for (int g = g0; g < g0 + n; g++) {
    if (!(gm[g] > 0)) return 0;
  }
  if (bodyInertial(m, b, gm, &mass, ipos, iquat, inertia, T, 0)) return 0;
  mju_quat2Mat(R, m->body_iquat + 4 * b);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      mjtNum v = 0;
      for (int k = 0; k < 3; k++) v += R[3 * i + k] * m->body_inertia[3 * b + k] * R[3 * j + k];
      T0[3 * i + j] = v;
    }
  }
  mjtNum len = 0, tr = T0[0] + T0[4] + T0[8];
  for (int g = g0; g < g0 + n; g++) {
    len = mju_max(len, rbound(m->geom_type[g], m->geom_size + 3 * g) + mju_norm3(m->geom_pos + 3 * g));
  }
  return fabs(mass - m->body_mass[b]) <= 1e-6 * m->body_mass[b] &&
         matches(ipos, m->body_ipos + 3 * b, 3, len, 1e-6) && matches(T, T0, 9, tr, 1e-6);
}

// geom masses gm (n <= 10) that reproduce body b's mass, com and inertia tensor about the body
// origin, T_o = T0 + M (|c|^2 E - c c') = sum_g m_g (R_g J_g R_g' + |p_g|^2 E - p_g p_g')
// (J_g: the diagonal inertia per unit mass), by least squares on the 10 rows (mass, M c, T_o's 6
// entries; scaled by 1, 1/L, 1/L^2); 0 if singular
static int solveMasses(const mjModel* m, int b, mjtNum* gm) {
  int g0 = m->body_geomadr[b], n = m->body_geomnum[b];
  if (n > 10) return 0;
  mjtNum A[10 * 10] = {0}, rhs[10], N[100] = {0}, y[10] = {0}, R[9], J[3], L = 0;
  for (int g = g0; g < g0 + n; g++) {
    L = mju_max(L, rbound(m->geom_type[g], m->geom_size + 3 * g) + mju_norm3(m->geom_pos + 3 * g));
  }
  if (L <= 0) return 0;
  const int iu[6] = {0, 1, 2, 0, 0, 1}, ju[6] = {0, 1, 2, 1, 2, 2};
  mjtNum M = m->body_mass[b], c[3], T0[9];
  mju_copy3(c, m->body_ipos + 3 * b);
  mju_quat2Mat(R, m->body_iquat + 4 * b);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      mjtNum v = 0;
      for (int k = 0; k < 3; k++) v += R[3 * i + k] * m->body_inertia[3 * b + k] * R[3 * j + k];
      T0[3 * i + j] = v + M * ((i == j ? mju_dot3(c, c) : 0) - c[i] * c[j]);
    }
  }
  rhs[0] = M;
  for (int k = 0; k < 3; k++) rhs[1 + k] = M * c[k] / L;
  for (int k = 0; k < 6; k++) rhs[4 + k] = T0[3 * iu[k] + ju[k]] / (L * L);
  for (int g = 0; g < n; g++) {
    const mjtNum* p = m->geom_pos + 3 * (g0 + g);
    mjtNum Tg[9] = {0};
    diagInertia(m->geom_type[g0 + g], m->geom_size + 3 * (g0 + g), 1, J);
    addGeomTensor(Tg, m->geom_quat + 4 * (g0 + g), J, 1, p);
    A[n * 0 + g] = 1;
    for (int k = 0; k < 3; k++) A[n * (1 + k) + g] = p[k] / L;
    for (int k = 0; k < 6; k++) A[n * (4 + k) + g] = Tg[3 * iu[k] + ju[k]] / (L * L);
  }
  // normal equations N y = A' rhs, by LU with partial pivoting (plugin/implicit.c's); a pivot
  // below 1e-12 |N_00| leaves the masses undetermined
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      for (int r = 0; r < 10; r++) N[n * i + j] += A[n * r + i] * A[n * r + j];
    }
    for (int r = 0; r < 10; r++) y[i] += A[n * r + i] * rhs[r];
  }
  int piv[10];
  mjtNum scale = fabs(N[0]);
  if (mjdiff_luFactor(n, N, piv)) return 0;
  for (int k = 0; k < n; k++) {
    if (fabs(N[n * k + k]) < 1e-12 * scale) return 0;
  }
  mjdiff_luSolve(n, N, piv, y);
  mju_copy(gm + g0, y, n);
  return 1;
}

// 1 if body b's compiled inertials are the geom map of its primitive geoms (gm filled then): with
// one density for all (MuJoCo's default), else with the masses that reproduce them
static int inferredBody(const mjModel* m, int b, mjtNum* gm) {
  int g0 = m->body_geomadr[b], n = m->body_geomnum[b];
  if (b == 0 || g0 < 0 || n == 0) return 0;
  mjtNum V = 0;
  for (int g = g0; g < g0 + n; g++) {
    if (!primitive(m->geom_type[g])) return 0;
    V += volume(m->geom_type[g], m->geom_size + 3 * g);
  }
  if (V <= 0) return 0;
  mjtNum M = m->body_mass[b];
  for (int g = g0; g < g0 + n; g++) gm[g] = M * volume(m->geom_type[g], m->geom_size + 3 * g) / V;
  if (reproduces(m, b, gm)) return 1;
  return n > 1 && solveMasses(m, b, gm) && reproduces(m, b, gm);
}

// 0 done, -1 out of memory, i + 1: entry i (a scale) is refused (see mjdiff_makeParams)
int mjdiff_designPrepare(const mjModel* m, mjdiffParams* p) {
  int any = 0;
  for (int i = 0; i < p->n; i++) any |= PK_IS_DESIGN(p->entry[i].kind);
  if (!any) return 0;
  struct designInfo_* di = (struct designInfo_*)calloc(1, sizeof(struct designInfo_));
  if (!di) return -1;
  p->design = di;
  int nb = m->nbody, ng = m->ngeom, ns = m->nsite, nj = m->njnt;
  di->nbody = nb;
  di->ngeom = ng;
  di->nsite = ns;
  di->njnt = nj;
  for (int b = 0; b < nb; b++) {
    if (m->body_geomnum[b] > di->maxgeom) di->maxgeom = m->body_geomnum[b];
  }
  di->inferred = (signed char*)calloc((size_t)nb, 1);
  size_t nnum = (size_t)(2 * ng + 3 * nb + 6 * ng + 4 * ns + 3 * nj) + 1;
  mjtNum* buf = (mjtNum*)calloc(nnum, sizeof(mjtNum));
  if (!di->inferred || !buf) {
    free(buf);
    return -1;
  }
  di->rho = buf;
  di->gmass = di->rho + ng;
  di->body_pos0 = di->gmass + ng;
  di->geom_pos0 = di->body_pos0 + 3 * nb;
  di->geom_size0 = di->geom_pos0 + 3 * ng;
  di->site_pos0 = di->geom_size0 + 3 * ng;
  di->jnt_pos0 = di->site_pos0 + 3 * ns;
  di->site_size1 = di->jnt_pos0 + 3 * nj;
  for (int s = 0; s < ns; s++) di->site_size1[s] = m->site_size[3 * s + 1];
  mju_copy(di->body_pos0, m->body_pos, 3 * nb);
  mju_copy(di->geom_pos0, m->geom_pos, 3 * ng);
  mju_copy(di->geom_size0, m->geom_size, 3 * ng);
  mju_copy(di->site_pos0, m->site_pos, 3 * ns);
  mju_copy(di->jnt_pos0, m->jnt_pos, 3 * nj);
  for (int g = 0; g < ng; g++) di->rho[g] = -1;
  for (int b = 1; b < nb; b++) {
    // explicit inertial parameters (body:B:mass, inertia, ipos) win: the body's inertials no
    // longer follow its geoms, so that those parameters keep their values and columns
    if (selectedAny(p, PK_BODY_MASS, b) || selectedAny(p, PK_BODY_INERTIA, b) ||
        selectedAny(p, PK_BODY_IPOS, b)) {
      continue;
    }
    if (!inferredBody(m, b, di->gmass)) continue;
    di->inferred[b] = 1;
    for (int g = m->body_geomadr[b]; g < m->body_geomadr[b] + m->body_geomnum[b]; g++) {
      di->rho[g] = di->gmass[g] / volume(m->geom_type[g], m->geom_size + 3 * g);
    }
  }
  // a scale needs a quantity it moves that no explicit parameter sets, to be read back
  for (int i = 0; i < p->n; i++) {
    mjtNum* cur;
    const mjtNum* ref;
    int n;
    if (p->entry[i].kind == PK_BODY_SCALE && !scaleRef(m, di, p, p->entry[i].id, &cur, &ref, &n)) {
      return i + 1;
    }
  }
  return 0;
}

void mjdiff_designFree(mjdiffParams* p) {
  if (!p || !p->design) return;
  free(p->design->inferred);
  free(p->design->rho);
  free(p->design);
  p->design = NULL;
}

mjdiffStatus mjdiff_designFixMass(mjdiffParams* p, const mjModel* m, const char* geom,
                                  char* err, int errsz) {
  if (!p || !m || !geom) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "NULL argument");
  int g = mj_name2id(m, mjOBJ_GEOM, geom);
  if (g < 0) return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "no geom named '%s'", geom);
  if (p->design && p->design->rho[g] > 0) p->design->rho[g] = -1;  // gmass holds its mass
  return MJDIFF_OK;
}

//---------------------------------- values --------------------------------------------------------

static mjtNum* designAddress(const mjModel* m, const paramEntry* e) {
  switch (e->kind) {
    case PK_BODY_POS: return m->body_pos + 3 * e->id + e->comp;
    case PK_GEOM_POS: return m->geom_pos + 3 * e->id + e->comp;
    case PK_GEOM_SIZE: return m->geom_size + 3 * e->id + e->comp;
    case PK_SITE_POS: return m->site_pos + 3 * e->id + e->comp;
    case PK_JNT_POS: return m->jnt_pos + 3 * e->id + e->comp;
    default: return NULL;
  }
}

mjtNum mjdiff_designValue(const mjModel* m, const mjdiffParams* p, const paramEntry* e) {
  if (e->kind != PK_BODY_SCALE) return *designAddress(m, e);
  mjtNum* cur;
  const mjtNum* ref;
  int n;
  if (!p->design || !scaleRef(m, p->design, p, e->id, &cur, &ref, &n)) return NAN;
  return mju_dot(cur, ref, n) / mju_dot(ref, ref, n);
}

const char* mjdiff_designCheck(const mjModel* m, const paramEntry* e, mjtNum v) {
  if (e->kind == PK_BODY_SCALE && !(v > 0)) return "a scale must be > 0";
  if (e->kind == PK_GEOM_SIZE && !(v > 0)) return "a geom size must be > 0";
  (void)m;
  return NULL;
}

int mjdiff_designApplyScratch(const mjdiffParams* p) {
  return p && p->design ? p->design->nbody + p->design->maxgeom : 0;
}

void mjdiff_designApply(mjModel* m, const mjdiffParams* p, const mjtNum* values,
                        mjtNum* scratch, int exact) {
  const struct designInfo_* di = p->design;
  if (!di) return;
  int nb = m->nbody;
  mjtNum* tb = scratch;         // (nbody) 1 where a body's geometry moved
  mjtNum* gm = scratch + nb;    // (maxgeom) one body's geom masses
  mju_zero(tb, nb);

  // scales first
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    if (e->kind != PK_BODY_SCALE) continue;
    int b = e->id;
    mjtNum c = values[i];
    tb[b] = 1;
    for (int k = b + 1; k < nb; k++) {
      if (m->body_parentid[k] == b) mju_scl3(m->body_pos + 3 * k, di->body_pos0 + 3 * k, c);
    }
    for (int g = m->body_geomadr[b]; g >= 0 && g < m->body_geomadr[b] + m->body_geomnum[b]; g++) {
      mju_scl3(m->geom_pos + 3 * g, di->geom_pos0 + 3 * g, c);
      int t = m->geom_type[g];
      if (t == mjGEOM_CAPSULE || t == mjGEOM_CYLINDER) {
        m->geom_size[3 * g + 1] = c * di->geom_size0[3 * g + 1];
      }
    }
    for (int s = 0; s < m->nsite; s++) {
      if (m->site_bodyid[s] != b) continue;
      mju_scl3(m->site_pos + 3 * s, di->site_pos0 + 3 * s, c);
      if (m->site_type[s] == mjGEOM_CAPSULE || m->site_type[s] == mjGEOM_CYLINDER) {
        m->site_size[3 * s + 1] = c * di->site_size1[s];
      }
    }
    for (int j = m->body_jntadr[b]; j >= 0 && j < m->body_jntadr[b] + m->body_jntnum[b]; j++) {
      mju_scl3(m->jnt_pos + 3 * j, di->jnt_pos0 + 3 * j, c);
    }
  }

  // explicit values
  for (int i = 0; i < p->n; i++) {
    const paramEntry* e = p->entry + i;
    if (!PK_IS_DESIGN(e->kind) || e->kind == PK_BODY_SCALE) continue;
    *designAddress(m, e) = values[i];
    int b = e->kind == PK_BODY_POS ? e->id :
            e->kind == PK_GEOM_POS || e->kind == PK_GEOM_SIZE ? m->geom_bodyid[e->id] :
            e->kind == PK_SITE_POS ? m->site_bodyid[e->id] : m->jnt_bodyid[e->id];
    tb[b] = 1;
  }

  // compile-time consequences in the touched bodies: geom masses and bounding radii, inertials
  int mass = 0;
  for (int b = 1; b < nb; b++) {
    if (!tb[b]) continue;
    int g0 = m->body_geomadr[b], n = m->body_geomnum[b];
    for (int g = g0; g >= 0 && g < g0 + n; g++) {
      mjtNum r = rbound(m->geom_type[g], m->geom_size + 3 * g);
      if (r >= 0) m->geom_rbound[g] = r;
#if MJDIFF_MUJOCO_3
      // MuJoCo 3's broad phase also reads the local bounding box (centre, half sizes)
      if (r >= 0) {
        const mjtNum* s = m->geom_size + 3 * g;
        mjtNum* box = m->geom_aabb + 6 * g;
        int t = m->geom_type[g];
        mju_zero3(box);
        box[3] = s[0];
        box[4] = t == mjGEOM_SPHERE || t == mjGEOM_CAPSULE || t == mjGEOM_CYLINDER ? s[0] : s[1];
        box[5] = t == mjGEOM_SPHERE ? s[0] : t == mjGEOM_CAPSULE ? s[0] + s[1] :
                 t == mjGEOM_CYLINDER ? s[1] : s[2];
      }
#endif
      m->geom_sameframe[g] = 0;
    }
    for (int s = 0; s < m->nsite; s++) {
      if (m->site_bodyid[s] == b) m->site_sameframe[s] = 0;
    }
    if (!di->inferred[b]) continue;
    mjtNum* all = gm - g0;  // indexed by geom id
    for (int g = g0; g < g0 + n; g++) {
      all[g] = di->rho[g] > 0 ? di->rho[g] * volume(m->geom_type[g], m->geom_size + 3 * g)
                              : di->gmass[g];
    }
    mjtNum T[9];
    bodyInertial(m, b, all, m->body_mass + b, m->body_ipos + 3 * b, m->body_iquat + 4 * b,
                 m->body_inertia + 3 * b, T, exact);
    mass = 1;
  }

#if MJDIFF_MUJOCO_3
  // 3.x's midphase tests a body's geoms against bounding boxes compiled in its inertial frame
  // (bvh_aabb), which moved geometry and moved inertials leave stale: contacts would be lost
  // (found by review: a grown sphere in a two-geom body, ncon 0 with the midphase, 1 without).
  // The midphase only prunes pairs, so turning it off changes no result, only cost.
  for (int b = 1; b < nb; b++) {
    if (tb[b]) m->opt.disableflags |= mjDSBL_MIDPHASE;
  }
#endif

  // MuJoCo's compile-time shortcuts hold for the compiled geometry only: every body takes the
  // general path (inertial frame apart from the body frame, no diagonal mass-matrix copy)
  for (int b = 0; b < nb; b++) {
    m->body_sameframe[b] = 0;
#if !MJDIFF_MUJOCO_3  // 3.x: the sparse structure stays; the moved bodies are not simple there
    m->body_simple[b] = 0;
#endif
  }
#if !MJDIFF_MUJOCO_3
  for (int j = 0; j < m->nv; j++) m->dof_simplenum[j] = 0;
#endif
  if (mass) {
    mju_zero(m->body_subtreemass, nb);
    for (int b = nb - 1; b >= 0; b--) {
      m->body_subtreemass[b] += m->body_mass[b];
      if (b) m->body_subtreemass[m->body_parentid[b]] += m->body_subtreemass[b];
    }
  }
}

//---------------------------------- derivative columns --------------------------------------------

void mjdiff_copyInputs(const mjModel* m, const mjData* d, mjData* dc) {
  mju_copy(dc->ctrl, d->ctrl, m->nu);
  mju_copy(dc->qfrc_applied, d->qfrc_applied, m->nv);
  mju_copy(dc->xfrc_applied, d->xfrc_applied, 6 * m->nbody);
  mju_copy(dc->mocap_pos, d->mocap_pos, 3 * m->nmocap);
  mju_copy(dc->mocap_quat, d->mocap_quat, 4 * m->nmocap);
#if MJDIFF_MUJOCO_3
  memcpy(dc->eq_active, d->eq_active, sizeof(*dc->eq_active) * (size_t)m->neq);
#endif
}

const mjtNum* mjdiff_designRef(const mjdiffParams* p, int kind, int id) {
  if (!p || !p->design) return NULL;
  const struct designInfo_* di = p->design;
  switch (kind) {
    case PK_BODY_POS: return di->body_pos0 + 3 * id;
    case PK_GEOM_POS: return di->geom_pos0 + 3 * id;
    case PK_GEOM_SIZE: return di->geom_size0 + 3 * id;
    case PK_JNT_POS: return di->jnt_pos0 + 3 * id;
    default: return NULL;
  }
}

int mjdiff_designSelected(const mjdiffParams* p, int kind, int id, int comp) {
  return p && selectedComp(p, kind, id, comp);
}

int mjdiff_designDifferenced(const mjdiffParams* p) {
  return p && p->design && p->design->differenced;
}

void mjdiff_designSetDifferenced(mjdiffParams* p, int on) {
  if (p && p->design) p->design->differenced = on != 0;
}

struct mjdiffDesignScratch_ {
  mjModel* m;
  mjData* d;
  mjtNum* vals;                // (np)
  mjtNum* r;                   // (4 nv): all and smooth parts at +h, then at -h
  mjtNum* state;               // (nq + nv + na + 1)
  mjtNum* apply;               // (mjdiff_designApplyScratch) for mjdiff_designApply
};

mjdiffDesignScratch* mjdiff_makeDesignScratch(const mjModel* m, const mjdiffParams* p) {
  if (!p || !p->design) return NULL;
  mjdiffDesignScratch* w = (mjdiffDesignScratch*)calloc(1, sizeof(mjdiffDesignScratch));
  if (!w) return NULL;
  w->m = mj_copyModel(NULL, m);
  w->d = w->m ? mj_makeData(w->m) : NULL;
  size_t n = (size_t)(p->n + 4 * m->nv + m->nq + m->nv + m->na + 1 +
                      mjdiff_designApplyScratch(p)) + 1;
  w->vals = (mjtNum*)calloc(n, sizeof(mjtNum));
  if (!w->d || !w->vals) {
    mjdiff_freeDesignScratch(w);
    return NULL;
  }
  w->r = w->vals + p->n;
  w->state = w->r + 4 * m->nv;
  w->apply = w->state + m->nq + m->nv + m->na + 1;
  return w;
}

void mjdiff_freeDesignScratch(mjdiffDesignScratch* w) {
  if (!w) return;
  if (w->d) mj_deleteData(w->d);
  if (w->m) mj_deleteModel(w->m);
  free(w->vals);
  free(w);
}

// r (nv) = qfrc_smooth - M acc and sm (nv) = the smooth forces, on the copy with values vals
static int residual(mjdiffDesignScratch* w, const mjModel* m, const mjData* d,
                    const mjdiffModel* s, const mjdiffParams* p, const mjtNum* acc, mjtNum* r,
                    mjtNum* sm) {
  mjModel* mc = w->m;
  mjData* dc = w->d;
  int nv = m->nv;
  mjdiff_designApply(mc, p, w->vals, w->apply, 1);  // mc: m, copied once per call
  mjdiff_loadState(mc, dc, w->state);
  mjdiff_copyInputs(m, d, dc);
  if (mjdiff_forward(mc, dc, s, NULL, 0) != MJDIFF_OK) return -1;
  mj_mulM(mc, dc, r, acc);
  for (int i = 0; i < nv; i++) r[i] = dc->qfrc_smooth[i] - r[i];
  mju_zero(sm, nv);
  mjdiff_addForces(mc, dc, s, sm);
  return 0;
}

int mjdiff_designColumns(mjdiffDesignScratch* w, const mjModel* m, mjData* d,
                         const mjdiffModel* s, const mjdiffParams* p, int parts,
                         const mjtNum* acc, const mjtNum* skip, mjtNum* DrDp) {
  if (!p->design) return 0;
  mjdiffDesignScratch* own = NULL;
  if (!w) {
    w = own = mjdiff_makeDesignScratch(m, p);
    if (!w) return -1;
  }
  int nv = m->nv, np = p->n, bad = 0;
  mjdiff_saveState(m, d, w->state);
  // one copy per call: designApply sets every geometry entry from the values and recomputes what
  // they imply, so each evaluation's model is m with those values (the copy's other fields stay m's)
  mj_copyModel(w->m, m);
  for (int i = 0; i < np && !bad; i++) {
    const paramEntry* e = p->entry + i;
    if (!PK_IS_DESIGN(e->kind) || (skip && skip[i])) continue;
    mjdiff_getParamValues(m, NULL, p, w->vals);
    mjtNum v0 = w->vals[i], h = 1e-6 * mju_max(fabs(v0), 0.1);
    mjtNum *rp = w->r, *sp = w->r + nv, *rm = w->r + 2 * nv, *smn = w->r + 3 * nv;
    w->vals[i] = v0 + h;
    bad = residual(w, m, d, s, p, acc, rp, sp);
    w->vals[i] = v0 - h;
    if (!bad) bad = residual(w, m, d, s, p, acc, rm, smn);
    for (int r = 0; r < nv; r++) {
      mjtNum all = (rp[r] - rm[r]) / (2 * h), smooth = (sp[r] - smn[r]) / (2 * h);
      mjtNum v = ((parts & MJDIFF_FORCES_SMOOTH) ? smooth : 0) +
                 ((parts & MJDIFF_FORCES_OTHER) ? all - smooth : 0);
      DrDp[(size_t)np * r + i] = bad ? NAN : v;
    }
  }
  mjdiff_freeDesignScratch(own);
  return bad;
}

//---------------------------------- the compile map's Jacobian ------------------------------------
//
// Forward-mode (dual numbers: a value and its derivative along one parameter, exact) through the
// map above: for parameter i the seeds are d p_g = e_k (geom pos), d s_g = e_k (geom size), and for
// a scale of body B: d p_g = p_g0, d s_g[1] = s_g0[1] (capsules, cylinders) for B's geoms (not
// for components the selection sets explicitly: those override the scale); then
//   dm_g = rho_g dV (density basis; 0 for a fixed mass), dV, dI_g by the same formulas,
//   dM = sum dm_g,  dc = (sum dm_g p_g + m_g dp_g - dM c) / M,
//   dT = sum R_g diag(dI_g) R_g' + dm_g (|d|^2 E - d d') + m_g (2 d.dd E - dd d' - d dd'),
//   dd_g = dp_g - dc   (R_g fixed: no parameter turns a geom).
// The function returns dM, dc and dT only. The principal moments' derivatives follow from dT,
// where T's eigenvalues are distinct, as d lambda_k = v_k' dT v_k (v_k the columns of R(iquat);
// the caller forms them, as tests/test_design.cc does); the axes' derivative is not formed (the
// dynamics read T = R diag R').

typedef struct dual_ {
  mjtNum v, d;
} dual;

static dual dmul(dual a, dual b) { return (dual){a.v * b.v, a.d * b.v + a.v * b.d}; }
static dual dadd(dual a, dual b) { return (dual){a.v + b.v, a.d + b.d}; }
static dual dsub(dual a, dual b) { return (dual){a.v - b.v, a.d - b.d}; }
static dual ddiv(dual a, dual b) { return (dual){a.v / b.v, (a.d - a.v / b.v * b.d) / b.v}; }
static dual dscl(dual a, mjtNum k) { return (dual){k * a.v, k * a.d}; }

static dual volumeD(int type, const dual* s) {
  switch (type) {
    case mjGEOM_SPHERE: return dscl(dmul(dmul(s[0], s[0]), s[0]), 4 * mjPI / 3);
    case mjGEOM_CAPSULE:
      return dscl(dadd(dscl(dmul(dmul(s[0], s[0]), s[1]), 2),
                       dscl(dmul(dmul(s[0], s[0]), s[0]), 4.0 / 3)), mjPI);
    case mjGEOM_CYLINDER: return dscl(dmul(dmul(s[0], s[0]), s[1]), 2 * mjPI);
    case mjGEOM_ELLIPSOID: return dscl(dmul(dmul(s[0], s[1]), s[2]), 4 * mjPI / 3);
    case mjGEOM_BOX: return dscl(dmul(dmul(s[0], s[1]), s[2]), 8);
    default: return (dual){0, 0};
  }
}

static void inertiaD(int type, const dual* s, dual m, dual I[3]) {
  dual r = s[0], H = dscl(s[1], 2), r2 = dmul(r, r);
  switch (type) {
    case mjGEOM_SPHERE:
      I[0] = I[1] = I[2] = dscl(dmul(m, r2), 0.4);
      return;
    case mjGEOM_CAPSULE: {
      dual ms = ddiv(dmul(m, dscl(r, 4)), dadd(dscl(r, 4), dscl(H, 3))), mc = dsub(m, ms);
      dual si = dscl(dmul(ms, r2), 0.4);
      dual lat = dscl(dmul(mc, dadd(dscl(r2, 3), dmul(H, H))), 1.0 / 12);
      dual cap = dscl(dmul(dmul(ms, H), dadd(dscl(r, 3), dscl(H, 2))), 1.0 / 8);
      I[0] = I[1] = dadd(dadd(lat, si), cap);
      I[2] = dadd(dscl(dmul(mc, r2), 0.5), si);
      return;
    }
    case mjGEOM_CYLINDER:
      I[0] = I[1] = dscl(dmul(m, dadd(dscl(r2, 3), dmul(H, H))), 1.0 / 12);
      I[2] = dscl(dmul(m, r2), 0.5);
      return;
    case mjGEOM_ELLIPSOID:
    case mjGEOM_BOX: {
      mjtNum k = type == mjGEOM_BOX ? 1.0 / 3 : 0.2;
      for (int a = 0; a < 3; a++) {
        dual u = s[(a + 1) % 3], w = s[(a + 2) % 3];
        I[a] = dscl(dmul(m, dadd(dmul(u, u), dmul(w, w))), k);
      }
      return;
    }
    default:
      I[0] = I[1] = I[2] = (dual){0, 0};
  }
}

int mjdiff_designInertialJacobian(const mjModel* m, const mjdiffParams* p, int b, mjtNum* J) {
  int np = p ? p->n : 0;
  if (p) mju_zero(J, 10 * np);
  if (!p || !p->design || b <= 0 || b >= m->nbody) return -1;
  const struct designInfo_* di = p->design;
  if (!di->inferred[b]) return -1;
  int g0 = m->body_geomadr[b], n = m->body_geomnum[b];
  for (int i = 0; i < np; i++) {
    const paramEntry* e = p->entry + i;
    if (!PK_IS_DESIGN(e->kind)) continue;
    dual M = {0, 0}, c[3] = {{0, 0}, {0, 0}, {0, 0}}, T[9], mg[64], pg[64][3], Ig[64][3];
    if (n > 64) return -2;
    int any = 0;
    for (int g = g0; g < g0 + n; g++) {
      int k = g - g0;
      dual s[3];
      for (int a = 0; a < 3; a++) {
        s[a] = (dual){m->geom_size[3 * g + a], 0};
        pg[k][a] = (dual){m->geom_pos[3 * g + a], 0};
      }
      if (e->kind == PK_GEOM_POS && e->id == g) pg[k][e->comp].d = 1;
      if (e->kind == PK_GEOM_SIZE && e->id == g) s[e->comp].d = 1;
      if (e->kind == PK_BODY_SCALE && e->id == b) {  // explicit values override the scale
        for (int a = 0; a < 3; a++) {
          if (!selectedComp(p, PK_GEOM_POS, g, a)) pg[k][a].d = di->geom_pos0[3 * g + a];
        }
        if ((m->geom_type[g] == mjGEOM_CAPSULE || m->geom_type[g] == mjGEOM_CYLINDER) &&
            !selectedComp(p, PK_GEOM_SIZE, g, 1)) {
          s[1].d = di->geom_size0[3 * g + 1];
        }
      }
      any |= s[0].d != 0 || s[1].d != 0 || s[2].d != 0 || pg[k][0].d != 0 || pg[k][1].d != 0 ||
             pg[k][2].d != 0;
      mg[k] = di->rho[g] > 0 ? dscl(volumeD(m->geom_type[g], s), di->rho[g])
                             : (dual){di->gmass[g], 0};
      inertiaD(m->geom_type[g], s, mg[k], Ig[k]);
    }
    if (!any) continue;
    if (n == 1) {
      M = mg[0];
      for (int a = 0; a < 3; a++) c[a] = pg[0][a];
    } else {
      for (int k = 0; k < n; k++) {
        M = dadd(M, mg[k]);
        for (int a = 0; a < 3; a++) c[a] = dadd(c[a], dmul(mg[k], pg[k][a]));
      }
      for (int a = 0; a < 3; a++) c[a] = ddiv(c[a], M);
    }
    for (int a = 0; a < 9; a++) T[a] = (dual){0, 0};
    for (int k = 0; k < n; k++) {
      mjtNum R[9];
      mju_quat2Mat(R, m->geom_quat + 4 * (g0 + k));
      dual d[3], dd = {0, 0};
      for (int a = 0; a < 3; a++) d[a] = n == 1 ? (dual){0, 0} : dsub(pg[k][a], c[a]);
      for (int a = 0; a < 3; a++) dd = dadd(dd, dmul(d[a], d[a]));
      for (int r = 0; r < 3; r++) {
        for (int q = 0; q < 3; q++) {
          dual v = {0, 0};
          for (int a = 0; a < 3; a++) v = dadd(v, dscl(Ig[k][a], R[3 * r + a] * R[3 * q + a]));
          dual off = dsub(r == q ? dd : (dual){0, 0}, dmul(d[r], d[q]));
          T[3 * r + q] = dadd(T[3 * r + q], dadd(v, dmul(mg[k], off)));
        }
      }
    }
    J[np * 0 + i] = M.d;
    for (int a = 0; a < 3; a++) J[np * (1 + a) + i] = c[a].d;
    const int iu[6] = {0, 1, 2, 0, 0, 1}, ju[6] = {0, 1, 2, 1, 2, 2};
    for (int a = 0; a < 6; a++) J[np * (4 + a) + i] = T[3 * iu[a] + ju[a]].d;
  }
  return 0;
}
