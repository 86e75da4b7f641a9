// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Derivatives of MuJoCo 2.2.2's sensor readings (engine_sensor.c) at the state of the smooth
// forward pass (sensors computed on the model with hard constraints off):
//   ds = DsDx [dq dv da du] + DsDacc dqacc.
//
// Notation (about the fixed world origin, as in forces_d.c): c_j = cdof0_j, "k moves j" as in
// rne_d.c (k an ancestor dof of j or in j's ball / free-rotation group), J_b the body Jacobian,
// V_b = [w; v0] = J_b v, p a point fixed to body b, Jp = J_lin - [p]x J_ang its motion,
// dth = J_ang dq the body's rotation, R the xmat of a frame (readings in a frame are R' y).
//   d c_j / dq_k = c_k x c_j              (k moves j)
//   d (R' y) = R' dy + R' (y x dth)       (frame rotating by dth)
//   v_p = v0 + w x p:  dv_p/dq = dv0 + dw x p + w x Jp dq,  dv_p/dv = Jp
//
// Readings s and their nonzero partials, per sensor type (r: reference frame refid, if any;
// without one p_r = 0, R_r = I, w_r = 0; o: the object, of type body, xbody, geom, site or a
// camera in fixed mode):
//   jointpos      s = qpos[jnt]  (hinge, slide)              ds/dq = e_dof
//   jointvel      s = qvel[dof]                              ds/dv = e_dof
//   actuatorpos   s = L = gear q_jnt or gear ten_length      ds/dq = moment (constant for a
//                 hinge/slide joint or a fixed tendon; gear J(q) for a spatial tendon)
//   actuatorvel   s = moment . v                             ds/dv = moment
//                 (spatial tendon: ds/dq = gear qvel' H, H = dJ/dq of tendon_d.c)
//   tendonpos     s = L                                      ds/dq = J
//   tendonvel     s = J v                                    ds/dv = J, ds/dq = qvel' H
//   actuatorfrc   s = clamp(g(L, V) in + b(L, V)), in = clamp(ctrl) or act (stateful), g, b
//                 fixed or affine:  ds = (g_L in + b_L) moment dq + (g_V in + b_V) moment dv
//                 + g din (din = dctrl inside ctrlrange, 0 outside); 0 while the force clamps
//                 (spatial tendon: + (g_V in + b_V) gear qvel' H dq)
//   framepos      s = R_r' y, y = p_o - p_r    ds/dq = R_r'(Jp_o - Jp_r + [y]x dth_r)
//   framequat     s = conj(q_r) q_o            ds = 1/2 conj(q_r) [0; dth_o - dth_r] q_o
//   framelinvel   s = R_r'(v_po - v_pr + (p_o - p_r) x w_r)  (mj_objectVelocity, relative)
//                 dy/dq = dv_po - dv_pr + (Jp_o - Jp_r) x w_r + (p_o - p_r) x dw_r
//                 dy/dv = Jp_o - Jp_r + (p_o - p_r) x J_ang,r
//   frameangvel   s = R_r'(w_o - w_r)
//   subtreecom    s = sum_i m_i xipos_i / M                  ds/dq = sum_i m_i Jp(xipos_i) / M
//   velocimeter   s = R_s' v_p  (site s on body b)
//   gyro          s = R_s' w
//   accelerometer s = R_s'(a0 + alpha x p + w x v_p),  [alpha; a0] = A_b (cacc about the origin)
//                 dy = dA_lin + dA_ang x p + alpha x dp + dw x v_p + w x dv_p,  ds/dqacc = R_s' Jp
//   force         s = R_s' f,  torque  s = R_s'(tau0 - p x f),  [tau0; f] = W_b (cfrc_int)
//   touch         s = sum_c fn_c over the contacts MuJoCo's rule counts (mjdiff_smoothTouch; the
//                 count is locally constant)   ds/dq = sum_c dfn_c/dq, ds/dv = sum_c dfn_c/dv
//                 (mjdiff_contactNormalDerivative: fn through dist and vn = n.v)
// and the cutoff: a REAL reading at +-cutoff, a POSITIVE (touch) one at +cutoff is clamped, its
// row is 0.
//
// Acceleration stage (mj_rnePostConstraint) in MuJoCo's dof order, by groups (hinge/slide: one
// dof; ball, free rotation: three; free translation: three with cdof_dot = 0):
//   A_world = [0; -gravity],  A_b = A_parent + sum_{j in b} (Vx_j x c_j) v_j + c_j qacc_j
//   (Vx_j: the velocity before j's group, MuJoCo's cdof_dot = Vx_j x c_j)
//   dA/dqacc = J_b
//   dA/dv_k  = sum_j (dVx_j/dv_k x c_j) v_j + (Vx_j x c_j) [k = j]
//   dA/dq_k  = sum_j (dVx_j/dq_k x c_j + Vx_j x (c_k x c_j)) v_j + (c_k x c_j) qacc_j
//   F_b = I_b A_b + V_b x* (I_b V_b) - ext_b,   W_b = sum_{c in subtree(b)} F_c
//   I_b X = [Ic w + p x m (v0 + w x p); m (v0 + w x p)], p = xipos, Ic = R diag(inertia) R'; along
//   the body's rigid motion xi = (dth, dx) = J_b dq:
//   dp = dx + dth x p, dIc = [dth]x Ic - Ic [dth]x
//   ext_b = [tau + xipos x f; f] (xfrc_applied),  d ext_b = [dxipos x f; 0]
//   dF = dI A + I dA + dV x* (I V) + V x* (dI V + I dV)
//
// Quirks, reproduced as MuJoCo computes them: under the smooth model there are no constraint rows,
// so mj_rnePostConstraint adds no contact or equality wrench to cfrc_ext (the smooth forces live in
// qfrc_passive): force and torque sensors ignore contact and equality wrenches on the subtree
// (they read the inertial and xfrc_applied balance only); touch reads the smooth normal forces
// (plugin/step.c replaces MuJoCo's reading, which would be 0).
// mj_rnePostConstraint sums the world's children's cfrc_int, each about its own tree's com c_t, as
// if about c_0 = subtree_com[0]: a torque sensor on a world site reads
// tau0 - p x f + sum_t (c_0 - c_t) x f_t, differentiated as such (dc from the subtree com
// Jacobians). Sensor noise (mjENBL_SENSORNOISE) is a random term: REAL readings and touch get the
// derivative of the noise-free reading; a framequat with noise is unsupported.
//
// Calling: Nullable: DsDx, DsDacc (each skipped). Rows of unsupported sensors stay 0 and the call
// returns -1 - i for the first of them; so do touch sensors whose counted contacts lack a geometry
// Jacobian (or when s is NULL). Scratch on d's stack: about 6 nv nbody times 1, 2, 4 or 7
// numbers (by the most demanding sensor: Jacobians, velocities, accelerations, cfrc_int); if d's
// stack is too small, nothing is computed and the call returns -1 - i for the first sensor needing
// it (MuJoCo 2.2 aborts on a stack overflow).

#include <string.h>

#include "compat.h"
#include "derivative.h"
#include "internal.h"
#include "spatial.h"

#define DISABLED(m, flag) ((m)->opt.disableflags & (flag))
#define ENABLED(m, flag) ((m)->opt.enableflags & (flag))

//---------------------------------- spatial algebra -----------------------------------------------

// column k of rows r0..r0+n-1 of a matrix with ld columns
static void getCol(const mjtNum* M, int ld, int k, int n, mjtNum* out) {
  for (int r = 0; r < n; r++) out[r] = M[(size_t)ld * r + k];
}

static void addCol(mjtNum* M, int ld, int k, int n, const mjtNum* x, mjtNum scl) {
  for (int r = 0; r < n; r++) M[(size_t)ld * r + k] += scl * x[r];
}

// spatial inertia of body b about the origin
typedef struct inertia_ {
  mjtNum mass;
  const mjtNum* p;  // xipos
  mjtNum Ic[9];     // rotational inertia about the com, world frame
} inertia;

static void makeInertia(const mjModel* m, const mjData* d, int b, inertia* I) {
  const mjtNum* R = d->ximat + 9 * b;
  const mjtNum* diag = m->body_inertia + 3 * b;
  I->mass = m->body_mass[b];
  I->p = d->xipos + 3 * b;
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      I->Ic[3 * i + j] = R[3 * i] * diag[0] * R[3 * j] + R[3 * i + 1] * diag[1] * R[3 * j + 1] +
                         R[3 * i + 2] * diag[2] * R[3 * j + 2];
    }
  }
}

// res = I X: lin = m (v0 + w x p), ang = Ic w + p x lin
static void inertMul(mjtNum res[6], const inertia* I, const mjtNum X[6]) {
  mjtNum t[3];
  mju_cross(t, X, I->p);
  for (int i = 0; i < 3; i++) res[3 + i] = I->mass * (X[3 + i] + t[i]);
  mju_mulMatVec(res, I->Ic, X, 3, 3);
  mju_cross(t, I->p, res + 3);
  mju_addTo3(res, t);
}

// res = (dI X) along the rigid motion xi = (dth, dx) of the body
static void inertMulD(mjtNum res[6], const inertia* I, const mjtNum xi[6], const mjtNum X[6]) {
  mjtNum dp[3], t[3], lin[3], Icw[3], u[3];

  // dp = dx + dth x p;  lin = m (v0 + w x p);  lin' = m w x dp
  mju_cross(t, xi, I->p);
  mju_add3(dp, xi + 3, t);
  mju_cross(t, X, I->p);
  for (int i = 0; i < 3; i++) lin[i] = I->mass * (X[3 + i] + t[i]);
  mju_cross(t, X, dp);
  mju_scl3(res + 3, t, I->mass);

  // ang' = dth x (Ic w) - Ic (dth x w) + dp x lin + p x lin'
  mju_mulMatVec(Icw, I->Ic, X, 3, 3);
  mju_cross(res, xi, Icw);
  mju_cross(u, xi, X);
  mju_mulMatVec(t, I->Ic, u, 3, 3);
  mju_subFrom3(res, t);
  mju_cross(t, dp, lin);
  mju_addTo3(res, t);
  mju_cross(t, I->p, res + 3);
  mju_addTo3(res, t);
}

//---------------------------------- objects -------------------------------------------------------

// body, position and orientation of a frame object (mjOBJ_BODY: inertial frame)
static int objFrame(const mjModel* m, const mjData* d, int type, int id, const mjtNum** pos,
                    const mjtNum** mat) {
  switch (type) {
    case mjOBJ_BODY:
      *pos = d->xipos + 3 * id;
      *mat = d->ximat + 9 * id;
      return id;
    case mjOBJ_XBODY:
      *pos = d->xpos + 3 * id;
      *mat = d->xmat + 9 * id;
      return id;
    case mjOBJ_GEOM:
      *pos = d->geom_xpos + 3 * id;
      *mat = d->geom_xmat + 9 * id;
      return m->geom_bodyid[id];
    case mjOBJ_SITE:
      *pos = d->site_xpos + 3 * id;
      *mat = d->site_xmat + 9 * id;
      return m->site_bodyid[id];
    default:  // mjOBJ_CAMERA
      *pos = d->cam_xpos + 3 * id;
      *mat = d->cam_xmat + 9 * id;
      return m->cam_bodyid[id];
  }
}

// world orientation quaternion of a frame object, as engine_sensor.c forms it
static void objQuat(const mjModel* m, const mjData* d, int type, int id, mjtNum q[4]) {
  switch (type) {
    case mjOBJ_XBODY:
      mju_copy4(q, d->xquat + 4 * id);
      break;
    case mjOBJ_BODY:
      mju_mulQuat(q, d->xquat + 4 * id, m->body_iquat + 4 * id);
      break;
    case mjOBJ_GEOM:
      mju_mulQuat(q, d->xquat + 4 * m->geom_bodyid[id], m->geom_quat + 4 * id);
      break;
    case mjOBJ_SITE:
      mju_mulQuat(q, d->xquat + 4 * m->site_bodyid[id], m->site_quat + 4 * id);
      break;
    default:  // mjOBJ_CAMERA
      mju_mulQuat(q, d->xquat + 4 * m->cam_bodyid[id], m->cam_quat + 4 * id);
      break;
  }
}

// a frame object rigidly attached to its body
static int frameObjectSupported(const mjModel* m, int type, int id) {
  switch (type) {
    case mjOBJ_BODY:
    case mjOBJ_XBODY:
      return id >= 0 && id < m->nbody;
    case mjOBJ_GEOM:
      return id >= 0 && id < m->ngeom;
    case mjOBJ_SITE:
      return id >= 0 && id < m->nsite;
    case mjOBJ_CAMERA:
      return id >= 0 && id < m->ncam && m->cam_mode[id] == mjCAMLIGHT_FIXED;
    default:
      return 0;
  }
}

// actuator transmission with a derivative: hinge/slide joint or tendon (spatial: tendonRows)
static int constantMoment(const mjModel* m, int i) {
  int id = m->actuator_trnid[2 * i];
  switch (m->actuator_trntype[i]) {
    case mjTRN_JOINT:
    case mjTRN_JOINTINPARENT:
      return m->jnt_type[id] == mjJNT_HINGE || m->jnt_type[id] == mjJNT_SLIDE;
    case mjTRN_TENDON:
      return 1;  // fixed: constant; spatial: through tendon_d.c
    default:
      return 0;
  }
}

int mjdiff_sensorSupported(const mjModel* m, int i) {
  if (!m || i < 0 || i >= m->nsensor) return 0;
  int id = m->sensor_objid[i], refid = m->sensor_refid[i];
  switch (m->sensor_type[i]) {
    case mjSENS_JOINTPOS:
    case mjSENS_JOINTVEL:
      return m->jnt_type[id] == mjJNT_HINGE || m->jnt_type[id] == mjJNT_SLIDE;
    case mjSENS_TENDONPOS:
    case mjSENS_TENDONVEL:
      return 1;
    case mjSENS_ACTUATORPOS:
    case mjSENS_ACTUATORVEL:
      return constantMoment(m, id);
    case mjSENS_ACTUATORFRC:
      return constantMoment(m, id) &&
             (m->actuator_gaintype[id] == mjGAIN_FIXED ||
              m->actuator_gaintype[id] == mjGAIN_AFFINE) &&
             (m->actuator_biastype[id] == mjBIAS_NONE || m->actuator_biastype[id] == mjBIAS_AFFINE);
    case mjSENS_FRAMEQUAT:
      if (compat_sensorNoise(m) && m->sensor_noise[i] > 0) return 0;
      // fall through
    case mjSENS_FRAMEPOS:
    case mjSENS_FRAMELINVEL:
    case mjSENS_FRAMEANGVEL:
      return frameObjectSupported(m, m->sensor_objtype[i], id) &&
             (refid < 0 || frameObjectSupported(m, m->sensor_reftype[i], refid));
    case mjSENS_SUBTREECOM:
    case mjSENS_VELOCIMETER:
    case mjSENS_GYRO:
    case mjSENS_ACCELEROMETER:
    case mjSENS_FORCE:
    case mjSENS_TORQUE:
    case mjSENS_TOUCH:
      return 1;
    default:  // user, rangefinder, ...
      return 0;
  }
}

//---------------------------------- body quantities -----------------------------------------------

// what a sensor needs: 0 nothing per body, 1 Jacobians, 2 velocities, 3 accelerations, 4 cfrc_int
static int sensorLevel(int type) {
  switch (type) {
    case mjSENS_FRAMEPOS:
    case mjSENS_FRAMEQUAT:
    case mjSENS_SUBTREECOM:
      return 1;
    case mjSENS_FRAMELINVEL:
    case mjSENS_FRAMEANGVEL:
    case mjSENS_VELOCIMETER:
    case mjSENS_GYRO:
      return 2;
    case mjSENS_ACCELEROMETER:
      return 3;
    case mjSENS_FORCE:
    case mjSENS_TORQUE:
      return 4;
    default:
      return 0;
  }
}

// scratch on d's stack; per-body matrices are 6 x nv (row-major), DF is 6 x 3nv ([q v acc])
typedef struct work_ {
  int nv;
  mjtNum* cdof0;  // (nv x 6)
  mjtNum* J;      // (nbody x 6 x nv)   J_b
  mjtNum* V;      // (nbody x 6)        V_b                        level >= 2
  mjtNum* DVq;    // (nbody x 6 x nv)   dV_b/dq                    level >= 2
  mjtNum* A;      // (nbody x 6)        A_b                        level >= 3
  mjtNum* DAq;    // (nbody x 6 x nv)   dA_b/dq                    level >= 3
  mjtNum* DAv;    // (nbody x 6 x nv)   dA_b/dv                    level >= 3
  mjtNum* F;      // (nbody x 6)        W_b (subtree sums)         level 4
  mjtNum* DF;     // (nbody x 6 x 3nv)  dW_b/d[q v qacc]           level 4
  mjtNum* Jc;     // (2 x 3 x nv)       subtree com Jacobians                      level 4
  mjtNum* Y;      // (3 x 3nv)          world-frame partials of one 3-vector reading
  int* list;      // (nv)
} work;

static size_t workSize(const mjModel* m, int level) {
  size_t nv = (size_t)m->nv, nb = (size_t)m->nbody, n = 0;
  if (level >= 1) n += 6 * nv + 6 * nv * nb + 9 * nv + nv / 2 + 1;
  if (level >= 2) n += 6 * nb + 6 * nv * nb;
  if (level >= 3) n += 6 * nb + 12 * nv * nb;
  if (level >= 4) n += 6 * nb + 18 * nv * nb + 6 * nv;
  return n;
}

static mjtNum* stackNum(mjData* d, size_t n) {
  return n ? compat_stackAllocNum(d, (int)n) : NULL;
}

// A += (V x c_j) v_j + c_j qacc_j and its partials, V = the running velocity before j's group
// (nodot: a free translation, whose cdof_dot MuJoCo sets to 0)
static void accTerm(const mjModel* m, const mjData* d, work* w, int j, int nodot, const mjtNum V[6],
                    const mjtNum* DVq, const mjtNum* J, mjtNum A[6], mjtNum* DAq, mjtNum* DAv) {
  int nv = w->nv;
  const mjtNum* c = w->cdof0 + 6 * j;
  mjtNum vj = d->qvel[j], aj = d->qacc[j], t[6], dc[6], col[6];
  for (int r = 0; r < 6; r++) A[r] += c[r] * aj;

  // dA/dq_k += (c_k x c_j) qacc_j + (V x (c_k x c_j)) v_j
  int n = spatial_movers(m, j, w->list);
  for (int i = 0; i < n; i++) {
    int k = w->list[i];
    spatial_crossMotion(dc, w->cdof0 + 6 * k, c);
    addCol(DAq, nv, k, 6, dc, aj);
    if (!nodot && vj != 0) {
      spatial_crossMotion(t, V, dc);
      addCol(DAq, nv, k, 6, t, vj);
    }
  }
  if (nodot) return;

  // cdof_dot term
  spatial_crossMotion(t, V, c);
  for (int r = 0; r < 6; r++) A[r] += t[r] * vj;
  addCol(DAv, nv, j, 6, t, 1);
  if (vj == 0) return;
  for (int k = 0; k < nv; k++) {
    getCol(DVq, nv, k, 6, col);
    spatial_crossMotion(t, col, c);
    addCol(DAq, nv, k, 6, t, vj);
    getCol(J, nv, k, 6, col);
    spatial_crossMotion(t, col, c);
    addCol(DAv, nv, k, 6, t, vj);
  }
}

// V += c_j v_j, J(:, j) = c_j, dV/dq_k += (c_k x c_j) v_j
static void velTerm(const mjModel* m, const mjData* d, work* w, int j, int level, mjtNum* V,
                    mjtNum* DVq, mjtNum* J) {
  int nv = w->nv;
  const mjtNum* c = w->cdof0 + 6 * j;
  for (int r = 0; r < 6; r++) J[nv * r + j] = c[r];
  if (level < 2) return;
  mjtNum vj = d->qvel[j], dc[6];
  for (int r = 0; r < 6; r++) V[r] += c[r] * vj;
  if (vj == 0) return;
  int n = spatial_movers(m, j, w->list);
  for (int i = 0; i < n; i++) {
    int k = w->list[i];
    spatial_crossMotion(dc, w->cdof0 + 6 * k, c);
    addCol(DVq, nv, k, 6, dc, vj);
  }
}

// forward pass over bodies: J, and by level V, A and their partials
static void bodyPass(const mjModel* m, const mjData* d, work* w, int level) {
  int nv = w->nv;
  mju_zero(w->J, 6 * nv);
  if (level >= 2) {
    mju_zero(w->V, 6);
    mju_zero(w->DVq, 6 * nv);
  }
  if (level >= 3) {
    mju_zero(w->A, 6);
    if (!DISABLED(m, mjDSBL_GRAVITY)) mju_scl3(w->A + 3, m->opt.gravity, -1);
    mju_zero(w->DAq, 6 * nv);
    mju_zero(w->DAv, 6 * nv);
  }
  for (int b = 1; b < m->nbody; b++) {
    int p = m->body_parentid[b];
    size_t o = (size_t)6 * nv * b, op = (size_t)6 * nv * p;
    mjtNum *J = w->J + o, *V = NULL, *DVq = NULL, *A = NULL, *DAq = NULL, *DAv = NULL;
    mju_copy(J, w->J + op, 6 * nv);
    if (level >= 2) {
      V = w->V + 6 * b;
      DVq = w->DVq + o;
      mju_copy(V, w->V + 6 * p, 6);
      mju_copy(DVq, w->DVq + op, 6 * nv);
    }
    if (level >= 3) {
      A = w->A + 6 * b;
      DAq = w->DAq + o;
      DAv = w->DAv + o;
      mju_copy(A, w->A + 6 * p, 6);
      mju_copy(DAq, w->DAq + op, 6 * nv);
      mju_copy(DAv, w->DAv + op, 6 * nv);
    }

    // dof groups in MuJoCo's order: acceleration terms with the velocity before the group
    int j = m->body_dofadr[b], end = j + m->body_dofnum[b];
    while (j < end) {
      int type = m->jnt_type[m->dof_jntid[j]];
      if (type == mjJNT_FREE) {
        for (int i = 0; i < 3; i++) {
          if (level >= 3) accTerm(m, d, w, j + i, 1, V, DVq, J, A, DAq, DAv);
        }
        for (int i = 0; i < 3; i++) velTerm(m, d, w, j + i, level, V, DVq, J);
        j += 3;
      }
      int n = (type == mjJNT_FREE || type == mjJNT_BALL) ? 3 : 1;
      if (level >= 3) {
        for (int i = 0; i < n; i++) accTerm(m, d, w, j + i, 0, V, DVq, J, A, DAq, DAv);
      }
      for (int i = 0; i < n; i++) velTerm(m, d, w, j + i, level, V, DVq, J);
      j += n;
    }
  }
}

// cfrc_int about the origin and its partials, summed over subtrees
static void forcePass(const mjModel* m, const mjData* d, work* w) {
  int nv = w->nv, ld = 3 * nv;
  mju_zero(w->F, 6 * m->nbody);
  mju_zero(w->DF, (size_t)6 * ld * m->nbody);
  for (int b = 1; b < m->nbody; b++) {
    size_t o = (size_t)6 * nv * b;
    const mjtNum *V = w->V + 6 * b, *A = w->A + 6 * b;
    mjtNum *F = w->F + 6 * b, *DF = w->DF + (size_t)6 * ld * b;
    inertia I;
    makeInertia(m, d, b, &I);

    // F = I A + V x* (I V) - ext
    mjtNum h[6], t[6], u[6], xi[6], col[6], acc[6];
    inertMul(h, &I, V);
    inertMul(F, &I, A);
    spatial_crossForce(t, V, h);
    mju_addTo(F, t, 6);
    const mjtNum* xfrc = d->xfrc_applied + 6 * b;
    int ext = !mju_isZero((mjtNum*)xfrc, 6);
    if (ext) {
      mju_subFrom3(F, xfrc + 3);
      mju_cross(t, I.p, xfrc);
      mju_subFrom3(F, t);
      mju_subFrom3(F + 3, xfrc);
    }

    for (int k = 0; k < nv; k++) {
      getCol(w->J + o, nv, k, 6, xi);
      // q: dI A + I dA + dV x* h + V x* (dI V + I dV) - d ext
      inertMulD(acc, &I, xi, A);
      getCol(w->DAq + o, nv, k, 6, col);
      inertMul(t, &I, col);
      mju_addTo(acc, t, 6);
      getCol(w->DVq + o, nv, k, 6, col);
      spatial_crossForce(t, col, h);
      mju_addTo(acc, t, 6);
      inertMulD(u, &I, xi, V);
      inertMul(t, &I, col);
      mju_addTo(u, t, 6);
      spatial_crossForce(t, V, u);
      mju_addTo(acc, t, 6);
      if (ext) {
        // dxipos = dx + dth x p; d tau0 = dxipos x f
        mjtNum dp[3];
        mju_cross(dp, xi, I.p);
        mju_addTo3(dp, xi + 3);
        mju_cross(t, dp, xfrc);
        mju_subFrom3(acc, t);
      }
      addCol(DF, ld, k, 6, acc, 1);

      // v: I dA/dv + J x* h + V x* (I J)
      getCol(w->DAv + o, nv, k, 6, col);
      inertMul(acc, &I, col);
      spatial_crossForce(t, xi, h);
      mju_addTo(acc, t, 6);
      inertMul(u, &I, xi);
      spatial_crossForce(t, V, u);
      mju_addTo(acc, t, 6);
      addCol(DF, ld, nv + k, 6, acc, 1);

      // qacc: I J
      addCol(DF, ld, 2 * nv + k, 6, u, 1);
    }
  }

  // subtree sums, into the world too (as mj_rnePostConstraint)
  for (int b = m->nbody - 1; b > 0; b--) {
    int p = m->body_parentid[b];
    mju_addTo(w->F + 6 * p, w->F + 6 * b, 6);
    mju_addTo(w->DF + (size_t)6 * ld * p, w->DF + (size_t)6 * ld * b, 6 * ld);
  }
}

//---------------------------------- per-body columns ----------------------------------------------

// Jp(:, k) = J_lin(:, k) + J_ang(:, k) x p for a point p of body b
static void jpCol(const work* w, int b, const mjtNum p[3], int k, mjtNum out[3]) {
  spatial_pointJacobianCol(w->J + (size_t)6 * w->nv * b, w->nv, k, p, out);
}

// velocity of the point p of body b: v0 + w x p
static void pointVel(const work* w, int b, const mjtNum p[3], mjtNum out[3]) {
  spatial_pointMotion(out, w->V + 6 * b, p);
}

// d v_p / dq_k = dv0 + dw x p + w x Jp
static void pointVelDq(const work* w, int b, const mjtNum p[3], int k, mjtNum out[3]) {
  mjtNum c[6], jp[3];
  getCol(w->DVq + (size_t)6 * w->nv * b, w->nv, k, 6, c);
  jpCol(w, b, p, k, jp);
  spatial_pointVelDq(out, c, w->V + 6 * b, p, jp);
}

//---------------------------------- output --------------------------------------------------------

typedef struct output_ {
  mjtNum* DsDx;    // (nsensordata x ncol)
  mjtNum* DsDacc;  // (nsensordata x nv)
  int ncol;
} output;

// rows adr..adr+2 of s = R' y from y and its world-frame partials w->Y (3 x [q v acc]); R of a
// frame attached to body rb (NULL: the world frame)
static void emit3(const work* w, output* out, int adr, const mjtNum y[3], const mjtNum* R, int rb) {
  int nv = w->nv, ld = 3 * nv;
  static const mjtNum eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  if (!R) R = eye;
  const mjtNum* Jr = R != eye && rb > 0 ? w->J + (size_t)6 * nv * rb : NULL;
  for (int c = 0; c < ld; c++) {
    mjtNum dy[3];
    getCol(w->Y, ld, c, 3, dy);
    if (Jr && c < nv) {
      // rotating frame: + y x dth
      mjtNum dth[3], t[3];
      getCol(Jr, nv, c, 3, dth);
      mju_cross(t, y, dth);
      mju_addTo3(dy, t);
    }
    for (int r = 0; r < 3; r++) {
      mjtNum v = R[r] * dy[0] + R[3 + r] * dy[1] + R[6 + r] * dy[2];
      if (c < 2 * nv) {
        if (out->DsDx) out->DsDx[(size_t)out->ncol * (adr + r) + c] = v;
      } else if (out->DsDacc) {
        out->DsDacc[(size_t)nv * (adr + r) + c - 2 * nv] = v;
      }
    }
  }
}

static void setX(output* out, int row, int col, mjtNum v) {
  if (out->DsDx) out->DsDx[(size_t)out->ncol * row + col] = v;
}

// tendon t's rates into one row: q columns += sq J + sv qvel' H, v columns += vJ J (tendon_d.c);
// returns 0, or nonzero if d's stack is too small or the tendon has no derivative
static int tendonRow(const mjModel* m, mjData* d, output* out, int t, int row, mjtNum sq, mjtNum sv,
                     mjtNum vJ) {
  int nv = m->nv;
  if (!out->DsDx) return 0;
  if (compat_stackSpace(d) < 2 * nv) return -1;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* J = compat_stackAllocNum(d, 2 * nv);
  int st = mjdiff_tendonRates(m, d, t, J, sv != 0 ? J + nv : NULL);
  mjtNum* r = out->DsDx + (size_t)out->ncol * row;
  for (int k = 0; k < nv && !st; k++) {
    r[k] += sq * J[k] + (sv != 0 ? sv * J[nv + k] : 0);
    r[nv + k] += vJ * J[k];
  }
  compat_stackFree(d, mark);
  return st;
}

//---------------------------------- sensors -------------------------------------------------------

// actuator force and its partials (rows: one)
static int actuatorForce(const mjModel* m, mjData* d, output* out, int i, int row) {
  int nv = m->nv, nu = m->nu, na = m->na;
  if (DISABLED(m, mjDSBL_ACTUATION)) return 0;
  const mjtNum* gain = m->actuator_gainprm + mjNGAIN * i;
  const mjtNum* bias = m->actuator_biasprm + mjNBIAS * i;
  COMPAT_MOMENT_BUF(mbuf, nv);
  const mjtNum* moment = compat_actuatorMoment(m, d, i, mbuf);
  int stateful = m->actuator_dyntype[i] != mjDYN_NONE, ia = i - (nu - na);

  // clamped force: zero derivative
  if (m->actuator_forcelimited[i]) {
    const mjtNum* fr = m->actuator_forcerange + 2 * i;
    if (d->actuator_force[i] <= fr[0] || d->actuator_force[i] >= fr[1]) return 0;
  }

  // input: clamped control (slope 1 inside the range) or activation
  int clamp = !DISABLED(m, mjDSBL_CLAMPCTRL) && m->actuator_ctrllimited[i];
  mjtNum in, din = 1;
  if (stateful) {
    in = d->act[ia];
  } else {
    const mjtNum* cr = m->actuator_ctrlrange + 2 * i;
    in = clamp ? mju_clip(d->ctrl[i], cr[0], cr[1]) : d->ctrl[i];
    if (clamp && (d->ctrl[i] < cr[0] || d->ctrl[i] > cr[1])) din = 0;
  }

  // force = g(L, V) in + b(L, V)
  mjtNum g = gain[0], fL = 0, fV = 0;
  if (m->actuator_gaintype[i] == mjGAIN_AFFINE) {
    g += gain[1] * d->actuator_length[i] + gain[2] * d->actuator_velocity[i];
    fL = gain[1] * in;
    fV = gain[2] * in;
  }
  if (m->actuator_biastype[i] == mjBIAS_AFFINE) {
    fL += bias[1];
    fV += bias[2];
  }
  for (int k = 0; k < nv; k++) {
    setX(out, row, k, fL * moment[k]);
    setX(out, row, nv + k, fV * moment[k]);
  }
  if (stateful) {
    setX(out, row, 2 * nv + ia, g);
  } else {
    setX(out, row, 2 * nv + na + i, g * din);
  }
  int t = m->actuator_trnid[2 * i];
  if (m->actuator_trntype[i] == mjTRN_TENDON && mjdiff_tendonSpatial(m, t) && fV != 0) {
    return tendonRow(m, d, out, t, row, 0, fV * m->actuator_gear[6 * i], 0);
  }
  return 0;
}

// framequat: ds = 1/2 conj(q_r) [0; dth_o - dth_r] q_o
static void frameQuat(const mjModel* m, const mjData* d, const work* w, output* out, int i) {
  int nv = w->nv, adr = m->sensor_adr[i], refid = m->sensor_refid[i];
  const mjtNum *pos, *mat;
  mjtNum qo[4], qr[4] = {1, 0, 0, 0};
  int bo = objFrame(m, d, m->sensor_objtype[i], m->sensor_objid[i], &pos, &mat), br = 0;
  objQuat(m, d, m->sensor_objtype[i], m->sensor_objid[i], qo);
  if (refid >= 0) {
    br = objFrame(m, d, m->sensor_reftype[i], refid, &pos, &mat);
    objQuat(m, d, m->sensor_reftype[i], refid, qr);
  }
  mju_negQuat(qr, qr);
  const mjtNum *Jo = w->J + (size_t)6 * nv * bo, *Jr = w->J + (size_t)6 * nv * br;
  for (int k = 0; k < nv; k++) {
    mjtNum u[4] = {0}, t[4], ds[4], a[3], b[3];
    getCol(Jo, nv, k, 3, a);
    getCol(Jr, nv, k, 3, b);
    for (int r = 0; r < 3; r++) u[1 + r] = 0.5 * (a[r] - b[r]);
    mju_mulQuat(t, u, qo);
    mju_mulQuat(ds, qr, t);
    for (int r = 0; r < 4; r++) setX(out, adr + r, k, ds[r]);
  }
}

// Jacobian of subtree_com[root] (3 x nv, leading dimension ld, added to Jc): sum_i m_i Jp_i / M
static void comJacobian(const mjModel* m, const mjData* d, const work* w, int root, mjtNum* Jc,
                        int ld) {
  int nv = w->nv;
  mjtNum mass = 0;
  for (int b = root; b < m->nbody; b++) {
    int in = 0;
    for (int a = b; a >= 0 && !in; a = a ? m->body_parentid[a] : -1) in = a == root;
    if (in) mass += m->body_mass[b];
  }
  for (int b = root; b < m->nbody; b++) {
    int in = 0;
    for (int a = b; a >= 0 && !in; a = a ? m->body_parentid[a] : -1) in = a == root;
    mjtNum wgt = mass < mjMINVAL ? (b == root) : m->body_mass[b] / mass;
    if (!in || wgt == 0) continue;
    for (int k = 0; k < nv; k++) {
      mjtNum jp[3];
      jpCol(w, b, d->xipos + 3 * b, k, jp);
      addCol(Jc, ld, k, 3, jp, wgt);
    }
  }
}

// subtreecom: ds/dq = sum_i m_i Jp(xipos_i) / M over the subtree
static void subtreeCom(const mjModel* m, const mjData* d, const work* w, output* out, int i) {
  mju_zero(w->Y, 9 * w->nv);
  comJacobian(m, d, w, m->sensor_objid[i], w->Y, 3 * w->nv);
  mjtNum y[3] = {0};
  emit3(w, out, m->sensor_adr[i], y, NULL, 0);
}

// torque at a world site: mj_rnePostConstraint sums the cfrc_int of the world's children, each
// about its own tree's com c_t, as if about c_0 = subtree_com[0]; relative to the sum about one
// point this adds  y += sum_t (c_0 - c_t) x f_t,  dy = (dc_0 - dc_t) x f_t + (c_0 - c_t) x df_t
static void worldTorque(const mjModel* m, const mjData* d, work* w, mjtNum y[3]) {
  int nv = w->nv, ld = 3 * nv;
  mjtNum* Jc0 = w->Jc;
  mjtNum* Jct = w->Jc + 3 * nv;
  mju_zero(Jc0, 3 * nv);
  comJacobian(m, d, w, 0, Jc0, nv);
  for (int t = 1; t < m->nbody; t++) {
    if (m->body_parentid[t] != 0) continue;
    const mjtNum* f = w->F + 6 * t + 3;
    const mjtNum* DW = w->DF + (size_t)6 * ld * t;
    mjtNum dc[3], tmp[3], col[3], a[3], b[3];
    mju_sub3(dc, d->subtree_com, d->subtree_com + 3 * t);
    mju_cross(tmp, dc, f);
    mju_addTo3(y, tmp);
    mju_zero(Jct, 3 * nv);
    comJacobian(m, d, w, t, Jct, nv);
    for (int c = 0; c < ld; c++) {
      getCol(DW + 3 * ld, ld, c, 3, col);
      mju_cross(tmp, dc, col);
      if (c < nv) {
        getCol(Jc0, nv, c, 3, a);
        getCol(Jct, nv, c, 3, b);
        mju_subFrom3(a, b);
        mju_cross(b, a, f);
        mju_addTo3(tmp, b);
      }
      addCol(w->Y, ld, c, 3, tmp, 1);
    }
  }
}

// every 3-vector sensor of level >= 1 but subtreecom: y and w->Y, then emit3
static void vectorSensor(const mjModel* m, const mjData* d, work* w, output* out, int i) {
  int nv = w->nv, ld = 3 * nv, type = m->sensor_type[i], adr = m->sensor_adr[i];
  int refid = m->sensor_refid[i];
  mjtNum* Y = w->Y;
  mju_zero(Y, 3 * ld);
  const mjtNum *p, *R, *pr = NULL, *Rr = NULL;
  // frame sensors: any frame object and a reference; the others: a site
  int frame = type == mjSENS_FRAMEPOS || type == mjSENS_FRAMELINVEL || type == mjSENS_FRAMEANGVEL;
  int objtype = frame ? m->sensor_objtype[i] : mjOBJ_SITE, br = 0;
  int b = objFrame(m, d, objtype, m->sensor_objid[i], &p, &R);
  if (frame && refid >= 0) br = objFrame(m, d, m->sensor_reftype[i], refid, &pr, &Rr);
  static const mjtNum zero[3] = {0, 0, 0};
  if (!pr) pr = zero;
  const mjtNum* Jo = w->J + (size_t)6 * nv * b;
  const mjtNum* Jr = w->J + (size_t)6 * nv * br;
  mjtNum y[3], a[3], c[3], t[3], rel[3];
  mju_sub3(rel, p, pr);

  switch (type) {
    case mjSENS_FRAMEPOS:
      // y = p - p_r
      mju_copy3(y, rel);
      for (int k = 0; k < nv; k++) {
        jpCol(w, b, p, k, a);
        jpCol(w, br, pr, k, c);
        mju_subFrom3(a, c);
        addCol(Y, ld, k, 3, a, 1);
      }
      emit3(w, out, adr, y, Rr, br);
      break;

    case mjSENS_FRAMELINVEL: {
      // y = v_p - v_pr + (p - p_r) x w_r
      const mjtNum* wr = w->V + 6 * br;
      const mjtNum* DVr = w->DVq + (size_t)6 * nv * br;
      pointVel(w, b, p, y);
      pointVel(w, br, pr, a);
      mju_subFrom3(y, a);
      mju_cross(t, rel, wr);
      mju_addTo3(y, t);
      for (int k = 0; k < nv; k++) {
        mjtNum jo[3], jr[3], dw[3];
        pointVelDq(w, b, p, k, a);
        pointVelDq(w, br, pr, k, c);
        mju_subFrom3(a, c);
        jpCol(w, b, p, k, jo);
        jpCol(w, br, pr, k, jr);
        mju_sub3(c, jo, jr);
        mju_cross(t, c, wr);
        mju_addTo3(a, t);
        getCol(DVr, nv, k, 3, dw);
        mju_cross(t, rel, dw);
        mju_addTo3(a, t);
        addCol(Y, ld, k, 3, a, 1);
        // v: Jp_o - Jp_r + (p - p_r) x J_ang,r
        getCol(Jr, nv, k, 3, dw);
        mju_cross(t, rel, dw);
        mju_addTo3(c, t);
        addCol(Y, ld, nv + k, 3, c, 1);
      }
      emit3(w, out, adr, y, Rr, br);
      break;
    }

    case mjSENS_FRAMEANGVEL:
    case mjSENS_GYRO: {
      // y = w_o - w_r
      mju_sub3(y, w->V + 6 * b, w->V + 6 * br);
      const mjtNum *DVo = w->DVq + (size_t)6 * nv * b, *DVr = w->DVq + (size_t)6 * nv * br;
      for (int k = 0; k < nv; k++) {
        getCol(DVo, nv, k, 3, a);
        getCol(DVr, nv, k, 3, c);
        mju_subFrom3(a, c);
        addCol(Y, ld, k, 3, a, 1);
        getCol(Jo, nv, k, 3, a);
        getCol(Jr, nv, k, 3, c);
        mju_subFrom3(a, c);
        addCol(Y, ld, nv + k, 3, a, 1);
      }
      if (type == mjSENS_GYRO) {
        emit3(w, out, adr, y, R, b);
      } else {
        emit3(w, out, adr, y, Rr, br);
      }
      break;
    }

    case mjSENS_VELOCIMETER:
      pointVel(w, b, p, y);
      for (int k = 0; k < nv; k++) {
        pointVelDq(w, b, p, k, a);
        addCol(Y, ld, k, 3, a, 1);
        jpCol(w, b, p, k, a);
        addCol(Y, ld, nv + k, 3, a, 1);
      }
      emit3(w, out, adr, y, R, b);
      break;

    case mjSENS_ACCELEROMETER: {
      // y = a0 + alpha x p + w x v_p
      const mjtNum *A = w->A + 6 * b, *V = w->V + 6 * b;
      const mjtNum *DAq = w->DAq + (size_t)6 * nv * b, *DAv = w->DAv + (size_t)6 * nv * b;
      const mjtNum* DVq = w->DVq + (size_t)6 * nv * b;
      mjtNum vp[3];
      pointVel(w, b, p, vp);
      spatial_pointMotion(y, A, p);
      mju_cross(t, V, vp);
      mju_addTo3(y, t);
      for (int k = 0; k < nv; k++) {
        mjtNum col[6], jp[3], dvp[3], dw[3];
        jpCol(w, b, p, k, jp);
        // q: dA_lin + dA_ang x p + alpha x Jp + dw x v_p + w x dv_p
        getCol(DAq, nv, k, 6, col);
        spatial_pointMotion(a, col, p);
        mju_cross(t, A, jp);
        mju_addTo3(a, t);
        getCol(DVq, nv, k, 3, dw);
        mju_cross(t, dw, vp);
        mju_addTo3(a, t);
        pointVelDq(w, b, p, k, dvp);
        mju_cross(t, V, dvp);
        mju_addTo3(a, t);
        addCol(Y, ld, k, 3, a, 1);
        // v: dA_lin + dA_ang x p + J_ang x v_p + w x Jp
        getCol(DAv, nv, k, 6, col);
        spatial_pointMotion(a, col, p);
        getCol(Jo, nv, k, 3, dw);
        mju_cross(t, dw, vp);
        mju_addTo3(a, t);
        mju_cross(t, V, jp);
        mju_addTo3(a, t);
        addCol(Y, ld, nv + k, 3, a, 1);
        // qacc: Jp
        addCol(Y, ld, 2 * nv + k, 3, jp, 1);
      }
      emit3(w, out, adr, y, R, b);
      break;
    }

    case mjSENS_FORCE:
    case mjSENS_TORQUE: {
      // force: y = f;  torque: y = tau0 - p x f
      const mjtNum* W = w->F + 6 * b;
      const mjtNum* DW = w->DF + (size_t)6 * ld * b;
      int torque = type == mjSENS_TORQUE;
      if (torque) {
        mju_cross(t, p, W + 3);
        mju_sub3(y, W, t);
      } else {
        mju_copy3(y, W + 3);
      }
      for (int c2 = 0; c2 < ld; c2++) {
        mjtNum col[6];
        getCol(DW, ld, c2, 6, col);
        if (!torque) {
          addCol(Y, ld, c2, 3, col + 3, 1);
          continue;
        }
        mju_cross(t, p, col + 3);
        mju_sub3(a, col, t);
        if (c2 < nv) {
          mjtNum jp[3];
          jpCol(w, b, p, c2, jp);
          mju_cross(t, jp, W + 3);
          mju_subFrom3(a, t);
        }
        addCol(Y, ld, c2, 3, a, 1);
      }
      if (torque && b == 0) worldTorque(m, d, w, y);
      emit3(w, out, adr, y, R, b);
      break;
    }

    default:
      break;
  }
}

// touch: ds/d[q v] = sum of dfn/d[q v] over the contacts the sensor counts (mu: the model as its
// user configured it); returns 0, or -1 if a counted contact has no derivative
static int touchSensor(const mjModel* mu, mjData* d, const mjdiffModel* s, output* out, int i) {
  int nv = mu->nv, adr = mu->sensor_adr[i], status = 0;
  if (DISABLED(mu, mjDSBL_CONSTRAINT | mjDSBL_CONTACT) || compat_passiveOff(mu) || !out->DsDx || !nv) {
    return 0;
  }
  if (compat_stackSpace(d) < 2 * nv) return -1;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* g = compat_stackAllocNum(d, 2 * nv);
  mjtNum* row = out->DsDx + (size_t)out->ncol * adr;
  for (int j = 0; j < d->ncon; j++) {
    const mjContact* con = d->contact + j;
    if (mjdiff_touchForce(mu, d, s, i, con) <= 0) continue;
    if (mjdiff_contactNormalDerivative(mu, d, s, con, g, g + nv)) {
      status = -1;
      continue;
    }
    mju_addTo(row, g, 2 * nv);
  }
  compat_stackFree(d, mark);
  if (status) mju_zero(row, 2 * nv);
  return status;
}

int mjdiff_sensorDerivative(const mjModel* m, mjData* d, const struct mjdiffModel_* s, mjtNum* DsDx,
                            mjtNum* DsDacc) {
  int nv = m->nv, ncol = 2 * nv + m->na + m->nu, nsd = m->nsensordata;
  if (DsDx) mju_zero(DsDx, (size_t)nsd * ncol);
  if (DsDacc) mju_zero(DsDacc, (size_t)nsd * nv);
  if (DISABLED(m, mjDSBL_SENSOR)) return 0;  // readings not updated: constant

  // first unsupported sensor, and what the supported ones need per body
  int status = 0, level = 0, first = -1;
  for (int i = 0; i < m->nsensor; i++) {
    if (!mjdiff_sensorSupported(m, i)) {
      if (!status) status = -1 - i;
      continue;
    }
    int l = sensorLevel(m->sensor_type[i]);
    if (l > level) level = l;
    if (l && first < 0) first = i;
  }

  // scratch: no room on d's stack (MuJoCo 2.2 would abort) -> report the first sensor needing it
  mjdiffStackMark mark = compat_stackMark(d);
  work w;
  memset(&w, 0, sizeof(w));
  w.nv = nv;
  if (level) {
    if (workSize(m, level) > (size_t)compat_stackSpace(d)) {
      compat_stackFree(d, mark);  // 3.x: the frame itself must be popped
      return -1 - first;
    }
    size_t nb = (size_t)m->nbody;
    w.cdof0 = stackNum(d, 6 * (size_t)nv);
    w.J = stackNum(d, 6 * (size_t)nv * nb);
    w.Y = stackNum(d, 9 * (size_t)nv);
    w.list = (int*)stackNum(d, (size_t)nv / 2 + 1);
    if (level >= 2) {
      w.V = stackNum(d, 6 * nb);
      w.DVq = stackNum(d, 6 * (size_t)nv * nb);
    }
    if (level >= 3) {
      w.A = stackNum(d, 6 * nb);
      w.DAq = stackNum(d, 6 * (size_t)nv * nb);
      w.DAv = stackNum(d, 6 * (size_t)nv * nb);
    }
    if (level >= 4) {
      w.F = stackNum(d, 6 * nb);
      w.DF = stackNum(d, 18 * (size_t)nv * nb);
      w.Jc = stackNum(d, 6 * (size_t)nv);
    }
    if (nv) spatial_cdof0(m, d, w.cdof0);
    bodyPass(m, d, &w, level);
    if (level >= 4) forcePass(m, d, &w);
  }

  output out = {DsDx, DsDacc, ncol};
  for (int i = 0; i < m->nsensor; i++) {
    if (!mjdiff_sensorSupported(m, i)) continue;
    int id = m->sensor_objid[i], adr = m->sensor_adr[i];
    switch (m->sensor_type[i]) {
      case mjSENS_JOINTPOS:
        setX(&out, adr, m->jnt_dofadr[id], 1);
        break;
      case mjSENS_JOINTVEL:
        setX(&out, adr, nv + m->jnt_dofadr[id], 1);
        break;
      case mjSENS_ACTUATORPOS:
      case mjSENS_ACTUATORVEL: {
        int off = m->sensor_type[i] == mjSENS_ACTUATORVEL ? nv : 0;
        COMPAT_MOMENT_BUF(mbuf, nv);
        const mjtNum* moment = compat_actuatorMoment(m, d, id, mbuf);
        for (int k = 0; k < nv; k++) setX(&out, adr, off + k, moment[k]);
        int t = m->actuator_trnid[2 * id];
        if (off && m->actuator_trntype[id] == mjTRN_TENDON && mjdiff_tendonSpatial(m, t) &&
            tendonRow(m, d, &out, t, adr, 0, m->actuator_gear[6 * id], 0) && !status) {
          status = -1 - i;
        }
        break;
      }
      case mjSENS_ACTUATORFRC:
        if (actuatorForce(m, d, &out, id, adr) && !status) status = -1 - i;
        break;
      case mjSENS_TENDONPOS:
      case mjSENS_TENDONVEL: {
        int vel = m->sensor_type[i] == mjSENS_TENDONVEL;
        if (tendonRow(m, d, &out, id, adr, !vel, vel, vel) && !status) status = -1 - i;
        break;
      }
      case mjSENS_FRAMEQUAT:
        frameQuat(m, d, &w, &out, i);
        break;
      case mjSENS_SUBTREECOM:
        subtreeCom(m, d, &w, &out, i);
        break;
      case mjSENS_TOUCH: {
        mjModel view;
        const mjModel* mu = s ? mjdiff_userModel(m, s, &view) : m;
        if ((!s || touchSensor(mu, d, s, &out, i)) && !status) status = -1 - i;
        break;
      }
      default:
        vectorSensor(m, d, &w, &out, i);
        break;
    }

    // cutoff: a clamped REAL or POSITIVE reading has zero derivative
    mjtNum cutoff = m->sensor_cutoff[i];
    int real = m->sensor_datatype[i] == mjDATATYPE_REAL;
    if (cutoff > 0 && (real || m->sensor_datatype[i] == mjDATATYPE_POSITIVE)) {
      for (int r = adr; r < adr + m->sensor_dim[i]; r++) {
        if ((!real || d->sensordata[r] > -cutoff) && d->sensordata[r] < cutoff) continue;
        if (DsDx) mju_zero(DsDx + (size_t)ncol * r, ncol);
        if (DsDacc) mju_zero(DsDacc + (size_t)nv * r, nv);
      }
    }
  }
  compat_stackFree(d, mark);
  return status;
}
