// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The one place that knows which MuJoCo version we build against. Everything that differs between
// MuJoCo 2.2 and 3.x (scratch stack, disable flags, mjContact fields, tendon Jacobian storage, mass
// matrix storage) is reached through these helpers, so that supporting MuJoCo 3 touches this file
// (and adds an mjpPlugin adapter beside adapter_mj22.c).

#ifndef MJDIFF_COMPAT_H_
#define MJDIFF_COMPAT_H_

#include <math.h>
#include <string.h>

#include <mujoco/mujoco.h>

#if !defined(mjVERSION_HEADER)
#error "mujoco.h does not define mjVERSION_HEADER"
#endif
// 2.2.x reports 22x; 3.x reports major * 1000000 + minor * 1000 + patch (3.12.1: 3012001)
#define MJDIFF_MUJOCO_2_2 (mjVERSION_HEADER >= 220 && mjVERSION_HEADER < 230)
#define MJDIFF_MUJOCO_3 (mjVERSION_HEADER >= 3012000 && mjVERSION_HEADER < 3013000)
#if !MJDIFF_MUJOCO_2_2 && !MJDIFF_MUJOCO_3
#error "mjdiff supports MuJoCo 2.2.x and 3.12.x only (mujoco.h reports mjVERSION_HEADER)"
#endif

// the MuJoCo version range a build of mjdiff works with, for the load-time check (mj_version())
#if MJDIFF_MUJOCO_3
#define COMPAT_VERSION_MIN 3012000
#define COMPAT_VERSION_MAX 3012999
#else
#define COMPAT_VERSION_MIN 220
#define COMPAT_VERSION_MAX 229
#endif

// ---------------------------------- renamed utilities ---------------------------------------------
// 3.x dropped mju_rotVecMat(res, vec, mat) and mju_rotVecMatT for mju_mulMatVec3(res, mat, vec) and
// mju_mulMatTVec3, and gave mju_rayGeom a trailing normal output (Nullable). The 2.2 spellings are
// kept for our sources on 3.x (a function-like macro does not expand itself).
#if MJDIFF_MUJOCO_3
#define mju_rotVecMat(res, vec, mat) mju_mulMatVec3(res, mat, vec)
#define mju_rotVecMatT(res, vec, mat) mju_mulMatTVec3(res, mat, vec)
#define mju_rayGeom(pos, mat, size, pnt, vec, type) (mju_rayGeom)(pos, mat, size, pnt, vec, type, NULL)
// viewer utilities (tools): mjv_moveCamera lost its scene argument, mjv_makeConnector became
// mjv_connector with point arrays
#define mjv_moveCamera(m, action, reldx, reldy, scn, cam) (mjv_moveCamera)(m, action, reldx, reldy, cam)
static inline void compat_makeConnector(mjvGeom* geom, int type, mjtNum width, mjtNum a0,
                                        mjtNum a1, mjtNum a2, mjtNum b0, mjtNum b1, mjtNum b2) {
  mjtNum from[3] = {a0, a1, a2}, to[3] = {b0, b1, b2};
  mjv_connector(geom, type, width, from, to);
}
#define mjv_makeConnector compat_makeConnector
#endif

// ---------------------------------- virtual file system -------------------------------------------
// add a file named name holding n bytes of buf to vfs (made by mj_defaultVFS); 0 on success.
// 2.2: mj_makeEmptyFileVFS, then copy into vfs->filedata. 3.x: mj_addBufferVFS (opaque mjVFS).
static inline int compat_vfsAddBuffer(mjVFS* vfs, const char* name, const void* buf, int n) {
#if MJDIFF_MUJOCO_3
  return mj_addBufferVFS(vfs, name, buf, n);
#else
  if (mj_makeEmptyFileVFS(vfs, name, n)) return -1;
  int i = mj_findFileVFS(vfs, name);
  if (i < 0) return -1;
  memcpy(vfs->filedata[i], buf, (size_t)n);
  return 0;
#endif
}

// ---------------------------------- scratch stack -------------------------------------------------
// 2.2: d->pstack counts mjtNums used of d->nstack; mj_stackAlloc(d, n) returns mjtNum*; a mark is
//      the old pstack. 3.x: nested frames (mj_markStack / mj_freeStack, strictly LIFO, as every
//      caller here uses them), mj_stackAllocNum, the stack shares d->arena (narena bytes) with
//      the contacts and constraint rows (parena bytes from the bottom, pstack bytes from the top).

typedef int mjdiffStackMark;

#if MJDIFF_MUJOCO_3
static inline mjdiffStackMark compat_stackMark(mjData* d) {
  mj_markStack(d);
  return 0;
}

static inline void compat_stackFree(mjData* d, mjdiffStackMark mark) {
  (void)mark;
  mj_freeStack(d);
}

// space left on the stack, in mjtNums (a frame's bookkeeping takes a few bytes: 8 numbers kept)
static inline int compat_stackSpace(const mjData* d) {
  size_t used = d->pstack + d->parena, n = (size_t)d->narena;
  size_t left = used < n ? (n - used) / sizeof(mjtNum) : 0;
  left = left > 8 ? left - 8 : 0;
  return left > 0x7fffffff ? 0x7fffffff : (int)left;
}

static inline mjtNum* compat_stackAllocNum(mjData* d, int n) {
  return mj_stackAllocNum(d, (size_t)n);
}
#else
static inline mjdiffStackMark compat_stackMark(mjData* d) {
  return d->pstack;
}

static inline void compat_stackFree(mjData* d, mjdiffStackMark mark) {
  d->pstack = mark;
}

// space left on the stack, in mjtNums
static inline int compat_stackSpace(const mjData* d) {
  return d->nstack - d->pstack;
}

static inline mjtNum* compat_stackAllocNum(mjData* d, int n) {
  return mj_stackAlloc(d, n);
}
#endif

// ---------------------------------- disable flags -------------------------------------------------
// the hard constraints the smooth model replaces (3.x keeps these names)
#define COMPAT_DSBL_HARD (mjDSBL_CONTACT | mjDSBL_EQUALITY | mjDSBL_FRICTIONLOSS | mjDSBL_LIMIT)

// flags that also stop contact detection
#define COMPAT_DSBL_DETECT (mjDSBL_CONSTRAINT | mjDSBL_CONTACT)

// passive forces off (the smooth forces are passive forces and go with them). 2.2: mjDSBL_PASSIVE.
// 3.x: mjDSBL_PASSIVE split into mjDSBL_SPRING and mjDSBL_DAMPER; MuJoCo skips every passive
// force, plugins' included, only when both are set (since 3.3.6).
#if MJDIFF_MUJOCO_3
#define COMPAT_DSBL_SPRING mjDSBL_SPRING
#define COMPAT_DSBL_DAMPER mjDSBL_DAMPER
static inline int compat_passiveOff(const mjModel* m) {
  return (m->opt.disableflags & (mjDSBL_SPRING | mjDSBL_DAMPER)) == (mjDSBL_SPRING | mjDSBL_DAMPER);
}
#else
#define COMPAT_DSBL_SPRING mjDSBL_PASSIVE
#define COMPAT_DSBL_DAMPER mjDSBL_PASSIVE
static inline int compat_passiveOff(const mjModel* m) {
  return (m->opt.disableflags & mjDSBL_PASSIVE) != 0;
}
#endif

// MuJoCo 3's gravity compensation of body b (mj_gravcomp: the force -gravcomp m g at xipos, in
// qfrc_passive, or in qfrc_actuator for joints with actuatorgravcomp: the same sum, as actuator
// force limits are refused): the factor gravcomp, 0 where it is off (2.2: always; passive forces
// off, gravity disabled or zero)
static inline mjtNum compat_gravcomp(const mjModel* m, int b) {
#if MJDIFF_MUJOCO_3
  if (!m->flg_gravcomp || (m->opt.disableflags & mjDSBL_GRAVITY) ||
      mju_norm3(m->opt.gravity) == 0 || compat_passiveOff(m)) {
    return 0;
  }
  return m->body_gravcomp[b];
#else
  (void)m;
  (void)b;
  return 0;
#endif
}

// the force applied at body b's com: xfrc_applied's force part, plus MuJoCo 3's gravity
// compensation -gravcomp m g
static inline void compat_comForce(const mjModel* m, const mjData* d, int b, mjtNum f[3]) {
  mju_copy3(f, d->xfrc_applied + 6 * b);
  mjtNum gc = compat_gravcomp(m, b);
  if (gc != 0) mju_addToScl3(f, m->opt.gravity, -gc * m->body_mass[b]);
}

// the flags that turn every passive force off
#if MJDIFF_MUJOCO_3
#define COMPAT_DSBL_PASSIVE_ALL (mjDSBL_SPRING | mjDSBL_DAMPER)
#else
#define COMPAT_DSBL_PASSIVE_ALL mjDSBL_PASSIVE
#endif

// joint springs (stiffness) off, joint dampers off
static inline int compat_springOff(const mjModel* m) {
  return (m->opt.disableflags & COMPAT_DSBL_SPRING) != 0;
}
static inline int compat_damperOff(const mjModel* m) {
  return (m->opt.disableflags & COMPAT_DSBL_DAMPER) != 0;
}

// ---------------------------------- sensor noise --------------------------------------------------
// 2.2: mj_sensor* add N(0, sensor_noise) to readings when mjENBL_SENSORNOISE is set. 3.x: the
// engine never adds noise (sensor_noise is metadata for the user); the flag is gone.
static inline int compat_sensorNoise(const mjModel* m) {
#if MJDIFF_MUJOCO_3
  (void)m;
  return 0;
#else
  return (m->opt.enableflags & mjENBL_SENSORNOISE) != 0;
#endif
}

// acceleration-stage sensors. 2.2: mj_sensorAcc calls mj_rnePostConstraint for every accelerometer,
// force and torque sensor. 3.x: it calls it only while d->flg_rnepost is 0, a flag that mj_forward
// and mj_step2 clear first (and mj_rnePostConstraint sets), so a direct call after a new
// acceleration must clear it, else cacc / cfrc_int are the previous step's.
static inline void compat_sensorAcc(const mjModel* m, mjData* d) {
#if MJDIFF_MUJOCO_3
  d->flg_rnepost = 0;
#endif
  mj_sensorAcc(m, d);
}

// ---------------------------------- contact margins -----------------------------------------------
// a dynamic geom pair's detection margin and gap: 2.2 the larger of the two geoms' values, 3.x
// their sum (an explicit <pair> has its own on both hosts)
#if MJDIFF_MUJOCO_3
#define COMPAT_MARGIN_SUM 1
#else
#define COMPAT_MARGIN_SUM 0
#endif
static inline mjtNum compat_pairCombine(mjtNum a, mjtNum b) {
#if MJDIFF_MUJOCO_3
  return a + b;
#else
  return a > b ? a : b;
#endif
}

// the distance within which MuJoCo's own detection reports a contact of geoms g1, g2 (pair: the
// <pair> index or -1), with opt.o_margin under the override flag: 2.2 the margin (the larger
// geom value); 3.x margin plus gap (the sums), the gap's contacts marked excluded but reported
static inline mjtNum compat_nativeReportMargin(const mjModel* m, int g1, int g2, int pair) {
  mjtNum margin = pair >= 0 ? m->pair_margin[pair]
                            : compat_pairCombine(m->geom_margin[g1], m->geom_margin[g2]);
  if (m->opt.enableflags & mjENBL_OVERRIDE) margin = m->opt.o_margin;
#if MJDIFF_MUJOCO_3
  margin += pair >= 0 ? m->pair_gap[pair] : m->geom_gap[g1] + m->geom_gap[g2];
#endif
  return margin;
}

// the per-geom margins M (n geoms) to give the engine so that a dynamic pair is detected within
// max(M_1, M_2), 2.2's rule: unchanged on 2.2; on 3.x (sums) M/2 when all are equal (exact), else
// unchanged (sum >= max) and 1 returned: the caller drops the pair's contacts beyond max(M_1, M_2)
static inline int compat_pairMargins(mjtNum* M, int n) {
#if MJDIFF_MUJOCO_3
  for (int g = 1; g < n; g++) {
    if (M[g] != M[0]) return 1;
  }
  for (int g = 0; g < n; g++) M[g] *= 0.5;
#else
  (void)M;
  (void)n;
#endif
  return 0;
}

// 3.x prunes the inner levels of its bounding-volume trees by m->body_margin (each body's largest
// compiled geom margin + gap): a collision view with larger geom margins M (ngeom) needs them
// there too, else pairs just inside the new margins (e.g. touching, dist = 0) are pruned.
// body_margin: nbody numbers of scratch the view points to. 2.2 has no trees: nothing to do.
static inline void compat_viewBodyMargins(mjModel* view, const mjtNum* M, mjtNum* body_margin) {
#if MJDIFF_MUJOCO_3
  for (int b = 0; b < view->nbody; b++) body_margin[b] = view->body_margin[b];
  for (int g = 0; g < view->ngeom; g++) {
    mjtNum mg = M[g] + view->geom_gap[g];
    int b = view->geom_bodyid[g];
    if (mg > body_margin[b]) body_margin[b] = mg;
  }
  view->body_margin = body_margin;
#else
  (void)view;
  (void)M;
  (void)body_margin;
#endif
}

// ---------------------------------- tendon wrapping -----------------------------------------------
// does mju_wrap take the inside wrap (wrap_inside) for side site sl (the wrap geom's frame) with
// projection sd onto the wrap plane, radius r? 2.2: the projection is inside the circle,
// |sd| < r. 3.x: the side site itself is inside the geom's radius, |sl| < r (3D; the projection
// is only used, rescaled to r, for the outside wrap).
static inline int compat_wrapInside(const mjtNum sl[3], const mjtNum sd[2], mjtNum r) {
#if MJDIFF_MUJOCO_3
  (void)sd;
  return mju_norm3(sl) < r;
#else
  (void)sl;
  return sqrt(sd[0] * sd[0] + sd[1] * sd[1]) < r;
#endif
}

// ---------------------------------- collision pairs -----------------------------------------------
// 2.2: opt.collision chooses the MJCF <pair> list, the dynamic (contype/conaffinity) pairs or both.
// 3.x: both, always (the option was removed).
static inline int compat_collidesPairs(const mjModel* m) {
#if MJDIFF_MUJOCO_3
  (void)m;
  return 1;
#else
  return m->opt.collision != mjCOL_DYNAMIC;
#endif
}

static inline int compat_collidesDynamic(const mjModel* m) {
#if MJDIFF_MUJOCO_3
  (void)m;
  return 1;
#else
  return m->opt.collision != mjCOL_PAIR;
#endif
}

// ---------------------------------- contacts ------------------------------------------------------
// 2.2: geom ids in geom1/geom2; normal in frame[0..2]; friction[5]; dim. 3.x: geom[2] (geom1/geom2
// deprecated), -1 for a flex side (models with flexes are refused: compat_unsupported).

#if MJDIFF_MUJOCO_3
static inline int compat_contactGeom1(const mjContact* c) {
  return c->geom[0];
}

static inline int compat_contactGeom2(const mjContact* c) {
  return c->geom[1];
}
#else
static inline int compat_contactGeom1(const mjContact* c) {
  return c->geom1;
}

static inline int compat_contactGeom2(const mjContact* c) {
  return c->geom2;
}
#endif

// ---------------------------------- tendon Jacobian -----------------------------------------------
// 2.2: d->ten_J, dense (ntendon x nv) or row-sparse (d->ten_J_rownnz, rowadr, colind) when
// mj_isSparse(m). 3.x: always row-sparse, the structure in the model (m->ten_J_rownnz, ...).

// res += f * J_ten(i, :)^T  (nv x 1)
static inline void compat_addTendonForce(const mjModel* m, const mjData* d, int i, mjtNum f,
                                         mjtNum* res) {
#if MJDIFF_MUJOCO_3
  int adr = m->ten_J_rowadr[i], nnz = m->ten_J_rownnz[i];
  for (int k = 0; k < nnz; k++) {
    res[m->ten_J_colind[adr + k]] += f * d->ten_J[adr + k];
  }
#else
  if (mj_isSparse(m)) {
    int adr = d->ten_J_rowadr[i], nnz = d->ten_J_rownnz[i];
    for (int k = 0; k < nnz; k++) {
      res[d->ten_J_colind[adr + k]] += f * d->ten_J[adr + k];
    }
  } else {
    const mjtNum* row = d->ten_J + (size_t)i * m->nv;
    for (int j = 0; j < m->nv; j++) {
      res[j] += f * row[j];
    }
  }
#endif
}

// dense row i of the tendon Jacobian (nv x 1)
static inline void compat_tendonRow(const mjModel* m, const mjData* d, int i, mjtNum* row) {
  mju_zero(row, m->nv);
  compat_addTendonForce(m, d, i, 1, row);
}

// ---------------------------------- mass matrix ---------------------------------------------------
// The joint-space inertia M and the factor of M + h B (Euler's implicit damping, adjoint/step_d.c),
// each in the host's own sparse layout; both are lower triangles whose row i holds the diagonal and
// the dof ancestors of i (dof_parentid chain).
//   2.2: d->qM, m->nM numbers, MuJoCo's "Madr" layout: row i starts at m->dof_Madr[i] with the
//        diagonal, then the ancestors from the nearest up.
//   3.x: d->M, m->nC numbers, CSR (m->M_rownnz, M_rowadr, M_colind): row i holds its ancestors in
//        ascending order, the diagonal last; a "simple" dof (dof_simplenum, off-diagonals
//        structurally zero) keeps only its diagonal. Every row i that appears in row k is a prefix
//        of row k (the ancestors of an ancestor), which makes the in-place factor below work.
// Factor H = L' D L (L unit lower triangular, the layout of H), in place: for k = nv-1 down to 0,
// with a_ki = H_ki / H_kk for each i in row k:  H_ij -= a_ki H_kj (j in row i), then H_ki = a_ki.
// Solve x = H^-1 x:  x_j -= L_ij x_i (i = nv-1..0, j < i in row i);  x_i /= D_i;
//                    x_i -= L_ij x_j (i = 0..nv-1).

// numbers in the mass matrix storage
static inline int compat_massSize(const mjModel* m) {
#if MJDIFF_MUJOCO_3
  return (int)m->nC;
#else
  return m->nM;
#endif
}

// dst = M in the host's layout (compat_massSize numbers)
static inline void compat_massCopy(const mjModel* m, const mjData* d, mjtNum* dst) {
#if MJDIFF_MUJOCO_3
  mju_copy(dst, d->M, (int)m->nC);
#else
  mju_copy(dst, d->qM, m->nM);
#endif
}

// address of the diagonal of row i in the layout
static inline int compat_massDiagAdr(const mjModel* m, int i) {
#if MJDIFF_MUJOCO_3
  return m->M_rowadr[i] + m->M_rownnz[i] - 1;
#else
  return m->dof_Madr[i];
#endif
}

static inline mjtNum* compat_massDiag(const mjModel* m, mjtNum* M, int i) {
  return M + compat_massDiagAdr(m, i);
}

// H = L' D L in place (H positive definite, in the layout of M)
static inline void compat_massFactor(const mjModel* m, mjtNum* H) {
#if MJDIFF_MUJOCO_3
  for (int k = m->nv - 1; k >= 0; k--) {
    int start = m->M_rowadr[k], diag = start + m->M_rownnz[k] - 1;
    for (int adr = diag - 1; adr >= start; adr--) {
      int i = m->M_colind[adr];
      mjtNum a = H[adr] / H[diag];
      // row i is the prefix of row k up to column i
      int ai = m->M_rowadr[i], n = m->M_rownnz[i];
      for (int j = 0; j < n; j++) H[ai + j] -= a * H[start + j];
      H[adr] = a;
    }
  }
#else
  for (int k = m->nv - 1; k >= 0; k--) {
    int ak = m->dof_Madr[k] + 1;
    for (int i = m->dof_parentid[k]; i >= 0; i = m->dof_parentid[i], ak++) {
      mjtNum a = H[ak] / H[m->dof_Madr[k]];
      // H_ij -= a H_kj for j = i and its ancestors (H_kj at ak, ak+1, ...)
      int aj = m->dof_Madr[i], bk = ak;
      for (int j = i; j >= 0; j = m->dof_parentid[j], aj++, bk++) H[aj] -= a * H[bk];
      H[ak] = a;
    }
  }
#endif
}

// X = H^-1 X for the n columns of X (nv x n, row-major: row i holds dof i of every column), H
// factored by compat_massFactor: the sweeps L'^-1, D^-1, L^-1, each an axpy over a whole row, so
// that the tree's index walk is paid once for all n columns (the step Jacobian's
// H^-1 [DfDq DfDv DfDa DfDu]; n = 1: one vector, compat_massSolve)
static inline void compat_massSolveRows(const mjModel* m, const mjtNum* H, mjtNum* X, int n) {
  int nv = m->nv;
#if MJDIFF_MUJOCO_3
  for (int i = nv - 1; i >= 0; i--) {  // L'^-1
    int start = m->M_rowadr[i], diag = start + m->M_rownnz[i] - 1;
    const mjtNum* xi = X + (size_t)n * i;
    for (int a = start; a < diag; a++) {
      mjtNum* xj = X + (size_t)n * m->M_colind[a];
      for (int c = 0; c < n; c++) xj[c] -= H[a] * xi[c];
    }
  }
  for (int i = 0; i < nv; i++) {
    mjtNum dii = H[m->M_rowadr[i] + m->M_rownnz[i] - 1];
    mjtNum* xi = X + (size_t)n * i;
    for (int c = 0; c < n; c++) xi[c] /= dii;
  }
  for (int i = 0; i < nv; i++) {  // L^-1
    int start = m->M_rowadr[i], diag = start + m->M_rownnz[i] - 1;
    mjtNum* xi = X + (size_t)n * i;
    for (int a = start; a < diag; a++) {
      const mjtNum* xj = X + (size_t)n * m->M_colind[a];
      for (int c = 0; c < n; c++) xi[c] -= H[a] * xj[c];
    }
  }
#else
  for (int i = nv - 1; i >= 0; i--) {  // L'^-1
    int a = m->dof_Madr[i] + 1;
    const mjtNum* xi = X + (size_t)n * i;
    for (int j = m->dof_parentid[i]; j >= 0; j = m->dof_parentid[j], a++) {
      mjtNum* xj = X + (size_t)n * j;
      for (int c = 0; c < n; c++) xj[c] -= H[a] * xi[c];
    }
  }
  for (int i = 0; i < nv; i++) {
    mjtNum dii = H[m->dof_Madr[i]];
    mjtNum* xi = X + (size_t)n * i;
    for (int c = 0; c < n; c++) xi[c] /= dii;
  }
  for (int i = 0; i < nv; i++) {  // L^-1
    int a = m->dof_Madr[i] + 1;
    mjtNum* xi = X + (size_t)n * i;
    for (int j = m->dof_parentid[i]; j >= 0; j = m->dof_parentid[j], a++) {
      const mjtNum* xj = X + (size_t)n * j;
      for (int c = 0; c < n; c++) xi[c] -= H[a] * xj[c];
    }
  }
#endif
}

// x = H^-1 x for n vectors (rows of x, nv each), H factored by compat_massFactor: each vector a
// one-column compat_massSolveRows
static inline void compat_massSolve(const mjModel* m, const mjtNum* H, mjtNum* x, int n) {
  for (int r = 0; r < n; r++) compat_massSolveRows(m, H, x + (size_t)m->nv * r, 1);
}

// the joint-space inertia of d's configuration (after mj_kinematics and mj_comPos), as
// mj_setConst makes it for invweight0: 3.x adds the tendons' armature to the composite rigid
// bodies' inertia (mj_makeM), 2.2 has none
static inline void compat_makeM(const mjModel* m, mjData* d) {
#if MJDIFF_MUJOCO_3
  mj_makeM(m, d);
#else
  mj_crb(m, d);
#endif
}

// ---------------------------------- solver statistics --------------------------------------------
// The implicit smooth step reports its Newton iterations where MuJoCo reports its solver's.
// 2.2: d->solver_iter, d->solver[mjNSOLVER]; 3.x: per island, d->solver_niter[0] and
// d->solver[0 .. mjNSOLVER) for island 0.

// iteration k's statistics: improvement = residual norm, gradient = relative velocity correction
static inline void compat_solverStat(mjData* d, int k, mjtNum residual, mjtNum correction) {
  if (k < 0 || k >= mjNSOLVER) return;
  d->solver[k].improvement = residual;
  d->solver[k].gradient = correction;
}

static inline void compat_solverIter(mjData* d, int n) {
#if MJDIFF_MUJOCO_3
  d->solver_niter[0] = n;
#else
  d->solver_iter = n;
#endif
}

static inline int compat_getSolverIter(const mjData* d) {
#if MJDIFF_MUJOCO_3
  return d->solver_niter[0];
#else
  return d->solver_iter;
#endif
}

// the last recorded statistic of iteration k: 0 the residual norm, 1 the correction
static inline mjtNum compat_getSolverStat(const mjData* d, int k, int which) {
  if (k < 0) return 0;
  if (k >= mjNSOLVER) k = mjNSOLVER - 1;
  return which ? d->solver[k].gradient : d->solver[k].improvement;
}

// dense M (nv x nv). 2.2: mj_fullM(m, dst, d->qM); 3.10+: mj_fullM(m, d, dst)
static inline void compat_fullM(const mjModel* m, const mjData* d, mjtNum* dst) {
#if MJDIFF_MUJOCO_3
  mj_fullM(m, d, dst);
#else
  mj_fullM(m, dst, d->qM);
#endif
}

// whether mj_Euler integrates damping implicitly (M + h B): 2.2 as soon as one dof has damping;
// 3.x also unless mjDSBL_EULERDAMP or mjDSBL_DAMPER is set (dampingpoly and actuator damping,
// which would join B there, are refused by compat_unsupported)
static inline int compat_eulerImplicit(const mjModel* m) {
#if MJDIFF_MUJOCO_3
  if (m->opt.disableflags & (mjDSBL_EULERDAMP | mjDSBL_DAMPER)) return 0;
#endif
  for (int i = 0; i < m->nv; i++) {
    if (m->dof_damping[i] > 0) return 1;
  }
  return 0;
}

// MuJoCo 3's implicitfast integrator (2.2 has none: -1 matches no integrator), and the flag that
// turns mj_Euler's implicit damping off (2.2 has none: never needed there)
#if MJDIFF_MUJOCO_3
#define COMPAT_INT_IMPLICITFAST mjINT_IMPLICITFAST
#define COMPAT_DSBL_EULERDAMP mjDSBL_EULERDAMP
#else
#define COMPAT_INT_IMPLICITFAST (-1)
#define COMPAT_DSBL_EULERDAMP 0
#endif

// 1 if actuator i is off: actuation disabled, or (3.x) its group in opt.disableactuator
static inline int compat_actuatorOff(const mjModel* m, int i) {
  if (m->opt.disableflags & mjDSBL_ACTUATION) return 1;
#if MJDIFF_MUJOCO_3
  int g = m->actuator_group[i];
  if (g >= 0 && g < 31 && (m->opt.disableactuator & (1 << g))) return 1;
#else
  (void)i;
#endif
  return 0;
}

// ---------------------------------- equality data ------------------------------------------------
// 2.2 and 3.x (body semantics): connect anchors at eq_data[0..2] (body1) and [3..5] (body2); weld
// anchors [3..5] on body1 and [0..2] on body2, relative pose quaternion [6..9], torquescale [10].
// 2.2: eq_active in the model; 3.x: d->eq_active (m->eq_active0 its initial value), and site
// semantics (eq_objtype mjOBJ_SITE: compat_eqGeometry turns them into body semantics).

static inline int compat_eqActive(const mjModel* m, const mjData* d, int i) {
#if MJDIFF_MUJOCO_3
  (void)m;
  return d->eq_active[i];
#else
  (void)d;
  return m->eq_active[i];
#endif
}

// a connect or weld in body semantics: its bodies, the anchors in their frames, the weld's
// relative pose (q_b1 relpose = q_b2 at rest) and torquescale
typedef struct compatEq_ {
  int b[2];
  mjtNum anchor[2][3];
  mjtNum relpose[4];
  mjtNum torquescale;
  int weld;
} compatEq;

// body j (0, 1) of connect or weld i: obj1/obj2, or (3.x site semantics) the site's body
static inline int compat_eqBody(const mjModel* m, int i, int j) {
  int obj = j ? m->eq_obj2id[i] : m->eq_obj1id[i];
#if MJDIFF_MUJOCO_3
  if (m->eq_objtype[i] == mjOBJ_SITE) return m->site_bodyid[obj];
#endif
  return obj;
}

// connect or weld i as body semantics. Site semantics (3.x, eq_objtype mjOBJ_SITE): the anchors
// are the sites (their positions in their bodies' frames) and the weld holds the two site frames
// together, q_b1 q_s1 = q_b2 q_s2, i.e. relpose = q_s1 q_s2^-1
static inline void compat_eqGeometry(const mjModel* m, int i, compatEq* e) {
  const mjtNum* data = m->eq_data + mjNEQDATA * i;
  e->weld = m->eq_type[i] == mjEQ_WELD;
  e->b[0] = compat_eqBody(m, i, 0);
  e->b[1] = compat_eqBody(m, i, 1);
  e->torquescale = e->weld ? data[10] : 0;
#if MJDIFF_MUJOCO_3
  if (m->eq_objtype[i] == mjOBJ_SITE) {
    int s1 = m->eq_obj1id[i], s2 = m->eq_obj2id[i];
    mju_copy3(e->anchor[0], m->site_pos + 3 * s1);
    mju_copy3(e->anchor[1], m->site_pos + 3 * s2);
    mjtNum inv[4];
    mju_negQuat(inv, m->site_quat + 4 * s2);
    mju_mulQuat(e->relpose, m->site_quat + 4 * s1, inv);
    return;
  }
#endif
  mju_copy3(e->anchor[0], e->weld ? data + 3 : data);
  mju_copy3(e->anchor[1], e->weld ? data : data + 3);
  if (e->weld) {
    mju_copy4(e->relpose, data + 6);
  } else {
    e->relpose[0] = 1;
    e->relpose[1] = e->relpose[2] = e->relpose[3] = 0;
  }
}

// ---------------------------------- actuator moments ----------------------------------------------
// 2.2: d->actuator_moment dense (nu x nv). 3.x: row-sparse (d->moment_rownnz, moment_rowadr,
// moment_colind), one row per force output (m->nout; actuators with more than one output, or an
// output address other than their index, are refused by compat_unsupported).

// res += f * moment(i, :)^T  (nv x 1)
static inline void compat_addActuatorForce(const mjModel* m, const mjData* d, int i, mjtNum f,
                                           mjtNum* res) {
#if MJDIFF_MUJOCO_3
  (void)m;
  int adr = d->moment_rowadr[i], nnz = d->moment_rownnz[i];
  for (int k = 0; k < nnz; k++) res[d->moment_colind[adr + k]] += f * d->actuator_moment[adr + k];
#else
  mju_addToScl(res, d->actuator_moment + (size_t)m->nv * i, f, m->nv);
#endif
}

// MuJoCo 3's joint actuator force limits (jnt_actfrclimited: qfrc_actuator at the joint's first
// dof clipped to jnt_actfrcrange after moment' force): the dofs where the clip is active (the
// unclipped sum strictly outside the range) written to dofs; returns their number. There every
// actuator term of qfrc_actuator has zero derivative. 2.2: none.
static inline int compat_clippedActuatorDofs(const mjModel* m, const mjData* d, int* dofs) {
  int n = 0;
#if MJDIFF_MUJOCO_3
  if (m->opt.disableflags & mjDSBL_ACTUATION) return 0;
  for (int j = 0; j < m->njnt; j++) {
    if (!m->jnt_actfrclimited[j]) continue;
    int r = m->jnt_dofadr[j];
    mjtNum sum = 0;
    for (int i = 0; i < m->nu; i++) {
      int adr = d->moment_rowadr[i], nnz = d->moment_rownnz[i];
      for (int k = 0; k < nnz; k++) {
        if (d->moment_colind[adr + k] == r) sum += d->actuator_moment[adr + k] * d->actuator_force[i];
      }
    }
    const mjtNum* range = m->jnt_actfrcrange + 2 * j;
    if (sum < range[0] || sum > range[1]) dofs[n++] = r;
  }
#else
  (void)m;
  (void)d;
  (void)dofs;
#endif
  return n;
}

// a dense row buffer for compat_actuatorMoment: on 3.x nv numbers on the C stack (a VLA), on 2.2
// none (the rows are read in place)
#if MJDIFF_MUJOCO_3
#define COMPAT_MOMENT_BUF(name, nv) mjtNum name[(nv) > 0 ? (nv) : 1]
#else
#define COMPAT_MOMENT_BUF(name, nv) mjtNum* name = NULL
#endif

// dense row i of the actuator moment (nv x 1): in place (2.2) or expanded into buf (3.x)
static inline const mjtNum* compat_actuatorMoment(const mjModel* m, const mjData* d, int i,
                                                  mjtNum* buf) {
#if MJDIFF_MUJOCO_3
  mju_zero(buf, (int)m->nv);
  compat_addActuatorForce(m, d, i, 1, buf);
  return buf;
#else
  (void)buf;
  return d->actuator_moment + (size_t)m->nv * i;
#endif
}

// set row i of the actuator moment to the dense row (nv x 1); 0 if 3.x's sparse storage
// (m->nJmom numbers) cannot hold it. 3.x packs the rows one after the other (rowadr[i + 1] =
// rowadr[i] + rownnz[i]): the rows after i move by the change of row i's nonzeros.
static inline int compat_setActuatorMoment(const mjModel* m, mjData* d, int i, const mjtNum* row) {
#if MJDIFF_MUJOCO_3
  int nv = (int)m->nv, nout = (int)m->nu, nnz = 0;
  for (int c = 0; c < nv; c++) nnz += row[c] != 0;
  int adr = d->moment_rowadr[i], old = d->moment_rownnz[i];
  int end = d->moment_rowadr[nout - 1] + d->moment_rownnz[nout - 1];  // used numbers
  if (end - old + nnz > (int)m->nJmom) return 0;
  int tail = end - (adr + old);
  if (nnz != old && tail > 0) {
    memmove(d->actuator_moment + adr + nnz, d->actuator_moment + adr + old,
            sizeof(mjtNum) * (size_t)tail);
    memmove(d->moment_colind + adr + nnz, d->moment_colind + adr + old, sizeof(int) * (size_t)tail);
  }
  for (int k = i + 1; k < nout; k++) d->moment_rowadr[k] += nnz - old;
  d->moment_rownnz[i] = nnz;
  for (int c = 0, k = 0; c < nv; c++) {
    if (row[c] == 0) continue;
    d->actuator_moment[adr + k] = row[c];
    d->moment_colind[adr + k] = c;
    k++;
  }
  return 1;
#else
  mju_copy(d->actuator_moment + (size_t)m->nv * i, row, m->nv);
  return 1;
#endif
}

// ---------------------------------- tendon spring -------------------------------------------------
// 2.2: tendon_lengthspring (ntendon x 1). 3.x: a range (ntendon x 2), no force inside it; ranges
// with lo < hi are refused (compat_unsupported), so the rest length is the first entry.
static inline mjtNum compat_tendonLengthSpring(const mjModel* m, int t) {
#if MJDIFF_MUJOCO_3
  return m->tendon_lengthspring[2 * t];
#else
  return m->tendon_lengthspring[t];
#endif
}

// ---------------------------------- features without a smooth counterpart ------------------------
// 3.x features the smooth model and its derivatives do not cover: the name of the first one the
// model uses (with the element's id in *id and its mjtObj in *type, or -1 and mjOBJ_UNKNOWN for a
// model-wide one), or NULL. 2.2: none.
static inline const char* compat_unsupported(const mjModel* m, int* id, int* type) {
  *id = -1;
  *type = mjOBJ_UNKNOWN;
#if MJDIFF_MUJOCO_3
  if (m->nflex) return "flex (deformable) objects";
  if (m->opt.enableflags & mjENBL_SLEEP) {
    return "sleeping bodies (<flag sleep=\"enable\"/>: the smooth model steps every body; "
           "disable the flag)";
  }
  // contact adhesion (3.x: geom and pair adhesion, a constant pull along adhesive contacts'
  // normals in qfrc_passive, and tether rows in the gap): MuJoCo's passive stage would apply it
  // on the smooth contacts, counted by the smooth model's wider margins, and it has no derivative
  for (int g = 0; m->flg_adhesion && g < m->ngeom; g++) {
    if (m->geom_adhesion[g] != 0) {
      *id = g;
      *type = mjOBJ_GEOM;
      return "a geom with contact adhesion (adhesion=: the adhesion actuator, a body "
             "transmission, is covered)";
    }
  }
  for (int i = 0; m->flg_adhesion && i < m->npair; i++) {
    if (m->pair_adhesion[i] != 0) {
      *id = i;
      *type = mjOBJ_PAIR;
      return "an MJCF <pair> with contact adhesion (adhesion=)";
    }
  }
  for (int g = 0; m->flg_surfacevel && g < m->ngeom; g++) {
    for (int k = 0; k < 6; k++) {
      if (m->geom_surfacevel[6 * g + k] != 0) {
        *id = g;
        *type = mjOBJ_GEOM;
        return "a geom with a surface velocity (surfacevel: conveyor belts, treadmills)";
      }
    }
  }
  for (int i = 0; i < m->nv; i++) {
    for (int k = 0; k < mjNPOLY; k++) {
      if (m->dof_dampingpoly[mjNPOLY * i + k] != 0) {
        *id = m->dof_jntid[i];  // (dofs have no names: their joint's)
        *type = mjOBJ_JOINT;
        return "a dof with polynomial damping (dampingpoly)";
      }
    }
  }
  for (int j = 0; j < m->njnt; j++) {
    for (int k = 0; k < mjNPOLY; k++) {
      if (m->jnt_stiffnesspoly[mjNPOLY * j + k] != 0) {
        *id = j;
        *type = mjOBJ_JOINT;
        return "a joint with polynomial stiffness (stiffnesspoly)";
      }
    }
  }
  for (int i = 0; i < m->ntendon; i++) {
    for (int k = 0; k < mjNPOLY; k++) {
      if (m->tendon_stiffnesspoly[mjNPOLY * i + k] != 0 ||
          m->tendon_dampingpoly[mjNPOLY * i + k] != 0) {
        *id = i;
        *type = mjOBJ_TENDON;
        return "a tendon with polynomial stiffness or damping";
      }
    }
  }
  for (int i = 0; i < m->nu; i++) {
    int poly = 0;
    for (int k = 0; k < mjNPOLY; k++) poly |= m->actuator_dampingpoly[mjNPOLY * i + k] != 0;
    if (poly || m->actuator_damping[i] != 0 || m->actuator_armature[i] != 0) {
      *id = i;
      *type = mjOBJ_ACTUATOR;
      return "an actuator with damping or armature";
    }
  }
  for (int i = 0; i < m->ntendon; i++) {
    if (m->tendon_armature[i] != 0) {
      *id = i;
      *type = mjOBJ_TENDON;
      return "a tendon with armature";
    }
  }
  for (int i = 0; i < m->ntendon; i++) {
    if (m->tendon_lengthspring[2 * i] != m->tendon_lengthspring[2 * i + 1] &&
        m->tendon_stiffness[i] != 0) {
      *id = i;
      *type = mjOBJ_TENDON;
      return "a tendon spring with a dead band (springlength range)";
    }
    if (m->tendon_actfrclimited[i]) {
      *id = i;
      *type = mjOBJ_TENDON;
      return "a tendon with actuator force limits (actuatorfrcrange)";
    }
  }
  for (int j = 0; j < m->njnt; j++) {
    if (m->jnt_actfrclimited[j] && m->jnt_actgravcomp[j]) {
      *id = j;
      *type = mjOBJ_JOINT;
      return "a joint with both actuator force limits (actuatorfrcrange) and actuatorgravcomp";
    }
  }
  for (int i = 0; i < m->nu; i++) {
    if (m->actuator_actearly[i]) {
      *id = i;
      *type = mjOBJ_ACTUATOR;
      return "an actuator with actearly";
    }
    if (m->actuator_plugin[i] >= 0) {
      *id = i;
      *type = mjOBJ_ACTUATOR;
      return "a plugin actuator";
    }
  }
  if (m->nout != m->nu) return "an actuator with more than one force output";
  for (int i = 0; i < m->nu; i++) {
    if (m->actuator_outadr[i] != i || m->actuator_outnum[i] != 1) {
      *id = i;
      *type = mjOBJ_ACTUATOR;
      return "an actuator with more than one force output";
    }
  }
#else
  (void)m;
#endif
  return NULL;
}

// ---------------------------------- engine plugin (3.x) -------------------------------------------
// 3.x: a model's <extension><plugin plugin="NAME"><instance> blocks are plugin instances (m->nplugin,
// registry slot m->plugin[i]), each with its <config key value> strings. 2.2: none.

#define COMPAT_PLUGIN_NAME "mjdiff.smooth"

// a view of m whose mjData carries no plugin instances (3.x: mj_makeData runs every instance's
// init, and the smooth model's own instance would make a smooth model again: recursion); for
// scratch data that only runs kinematics and the mass matrix
static inline void compat_viewWithoutPlugins(mjModel* view) {
#if MJDIFF_MUJOCO_3
  view->nplugin = 0;
  view->npluginstate = 0;
#else
  (void)view;
#endif
}

// number of instances of the plugin named name in m; the first one's index in *first (-1: none)
static inline int compat_pluginInstances(const mjModel* m, const char* name, int* first) {
  int n = 0;
  *first = -1;
#if MJDIFF_MUJOCO_3
  for (int i = 0; i < m->nplugin; i++) {
    const mjpPlugin* p = mjp_getPluginAtSlot(m->plugin[i]);
    if (p && p->name && !strcmp(p->name, name)) {
      if (!n++) *first = i;
    }
  }
#else
  (void)m;
  (void)name;
#endif
  return n;
}

// the first plugin instance of m that is not the smooth model's own (its name in *name), or -1:
// MuJoCo runs such a plugin's forces, contact geometry (SDF) or sensors in the smooth model's
// forward pass, and no derivative covers them. 2.2: none.
static inline int compat_foreignPlugin(const mjModel* m, const char** name) {
  *name = NULL;
#if MJDIFF_MUJOCO_3
  for (int i = 0; i < m->nplugin; i++) {
    const mjpPlugin* p = mjp_getPluginAtSlot(m->plugin[i]);
    if (!p || !p->name || strcmp(p->name, COMPAT_PLUGIN_NAME)) {
      *name = p && p->name ? p->name : "(unregistered)";
      return i;
    }
  }
#else
  (void)m;
#endif
  return -1;
}

// the value of config key in plugin instance i, or NULL when the instance does not set it
static inline const char* compat_pluginConfig(const mjModel* m, int i, const char* key) {
#if MJDIFF_MUJOCO_3
  const char* v = mj_getPluginConfig(m, i, key);
  return v && *v ? v : NULL;
#else
  (void)m;
  (void)i;
  (void)key;
  return NULL;
#endif
}

#endif  // MJDIFF_COMPAT_H_
