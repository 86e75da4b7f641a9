// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Internal building blocks of the step adjoint, shared by the files of adjoint/.
//
// Conventions (every file of adjoint/):
//   dq (nv x 1)   a qpos perturbation in MuJoCo's velocity space: qpos' = mj_integratePos(qpos, dq, 1)
//                 (hinge/slide: additive; ball: local-frame rotation vector, q' = q * exp(dq/2);
//                 free: world-frame translation then local-frame rotation), the layout of
//                 mjd_transitionFD.
//   body motion   a rigid perturbation of a body or geom: translation dx (3, world) of its frame
//                 origin and rotation dth (3, world): R' = (I + [dth]x) R to first order. A point p
//                 fixed to body b moves by J_p(b, p) dq; the body rotates by J_r(b) dq (mj_jac).
//   matrices      dense, row-major; D<y>D<x> has one row per component of y, one column per
//                 tangent component of x (MuJoCo's derivative naming).
// Functions here assume the smooth forward pass has run on d (mjdiff_forward) and use d's stack
// for scratch.

#ifndef MJDIFF_ADJOINT_DERIVATIVE_H_
#define MJDIFF_ADJOINT_DERIVATIVE_H_

#include <mjdiff/base.h>
#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------- contact geometry (geom_d.c) ----------------------------------
//
// For one contact reported by MuJoCo's collision detection between geoms g1 = con->geom1 and
// g2 = con->geom2: the Jacobian of its signed distance, normal and position
//   y = (dist (1), n (3) = con->frame[0..2], pos (3))
// with respect to rigid perturbations of the two geoms
//   z = (dx1 (3), dth1 (3), dx2 (3), dth2 (3))
// as J (7 x 12, row-major). Returns 0 on success, -1 if the geom pair type is not supported or
// the contact cannot be reproduced from the geoms' poses (the caller reports it). Valid where
// the contact set is locally stable (no contact switching).
MJDIFF_API int mjdiff_contactGeomJacobian(const mjModel* m, const mjData* d, const mjContact* con,
                                          mjtNum J[7 * 12]);

// The same for a run of n contacts of one geom pair (con[0 .. n - 1], as MuJoCo writes a pair's
// contacts consecutively): J (n x 7 x 12), status[i] 0 or -1 per contact as above. The pair
// function's candidates are generated and tracked once per 8 contacts instead of once per contact
// (box-box, box-plane: up to 8 contacts). Returns -1 if the contacts are not of one pair.
MJDIFF_API int mjdiff_contactGeomJacobianRun(const mjModel* m, const mjData* d,
                                             const mjContact* con, int n, mjtNum* J,
                                             int* status);

// Nonzero if contacts between geom types t1 <= t2 (mjtGeom) have a geometry Jacobian.
MJDIFF_API int mjdiff_contactPairSupported(int t1, int t2);

// The same contact's Jacobian in the two geoms' sizes (m->geom_size rows of g1 and g2)
//   s = (size1[0..2], size2[0..2])
// as Js (7 x 6, row-major), poses held fixed (geom_xpos, geom_xmat as in d). Entries a geom type
// does not use (a sphere's size[1..2], a plane's sizes) are zero. For a mesh the size is not a
// collision parameter (MuJoCo collides its vertices; geom_size only describes the compiled mesh):
// its columns are zero. geom_rbound (bounding spheres for the broad phase and plane-mesh's
// vertex spacing threshold) is held fixed. Returns 0, or -1 as mjdiff_contactGeomJacobian (same
// matching; pairs: every pair of mjdiff_contactPairSupported: the closed-form ones and
// plane-ellipsoid, plane-mesh of geom_d.c, the convex and height-field pairs of convex_d.c, where
// a height field's size, like a mesh's, is no collision parameter: zero columns).
MJDIFF_API int mjdiff_contactGeomSizeJacobian(const mjModel* m, const mjData* d,
                                              const mjContact* con, mjtNum Js[7 * 6]);

// The smooth law of one contact at the state in d (forces_d.c): its world force F and torque T
// (on geom2's body, at con->pos), their partials DF, DT (3 x 10, row-major) in
// y = (dist, n (3), v (3), w (3)) (v, w: geom2's velocity relative to geom1's at con->pos), and
// w. The contact's share (plugin/smooth.c, "Contact shares") is in F, T, DF, DT; sh (nullable)
// receives its gradient and the law's force before it (sh->varies 0: the share is constant).
// Returns 0 (outputs unset, sh->varies 0) if the contact exerts no force.
struct mjdiffModel_;
struct mjdiffShare_;
MJDIFF_API int mjdiff_contactLawY(const mjModel* m, const mjData* d,
                                  const struct mjdiffModel_* s, const mjContact* con, mjtNum F[3],
                                  mjtNum T[3], mjtNum DF[30], mjtNum DT[30], mjtNum w[3],
                                  struct mjdiffShare_* sh);

// The change of contact i's share (sh from mjdiff_contactLawY, sh->varies) with the two geoms'
// rigid motion z (size 0: mjdiff_contactGeomJacobian's z, geff 12) or sizes (size 1:
// mjdiff_contactGeomSizeJacobian's, geff 6): geff = sum over the pair's contacts j of
// dshare/ddist_j G_j[dist row] + dshare/dpos_j G_j[pos rows] (Gi, nullable: contact i's own
// Jacobian of that kind; the others computed here). Returns 0, or -1 if a contact's Jacobian is
// unavailable.
MJDIFF_API int mjdiff_shareGeometry(const mjModel* m, const mjData* d,
                                    const struct mjdiffShare_* sh, int i, const mjtNum* Gi,
                                    int size, mjtNum* geff);

// ---------------------------------- rigid-body dynamics (rne_d.c) --------------------------------
//
// Derivatives of the inverse dynamics ID(q, v, a) = M(q) a + c(q, v), with c = qfrc_bias as mj_rne
// computes it (gravity, Coriolis and centrifugal; M includes armature), at the state in d and the
// acceleration acc (nv x 1):
//   DidDq (nv x nv) = dID/dq (tangent dq),  DidDv (nv x nv) = dc/dv.
// Nullable: DidDq, DidDv.
MJDIFF_API void mjdiff_rneDerivative(const mjModel* m, mjData* d, const mjtNum* acc, mjtNum* DidDq,
                                     mjtNum* DidDv);

// The change of -ID(q, v, acc) when what follows a point of body's chain translates along the
// world direction e at fixed q, v, acc (a virtual slide dof, rne_d.c's header): at body's root
// (first = -1: the whole subtree), or before body's dof first (a group's first dof, or one past
// body's last: its joints from there on and the subtree): col (nv) += -dID/ddelta. Returns 0, or
// -1 if d's stack cannot hold the scratch or first is not one of body's (col unchanged).
MJDIFF_API int mjdiff_rneTranslationColumn(const mjModel* m, mjData* d, const mjtNum* acc,
                                           int body, int first, const mjtNum e[3], mjtNum* col);

// ---------------------------------- applied forces (forces_d.c) ---------------------------------
//
// Derivatives of the applied generalised force f = qfrc_passive (MuJoCo's springs and dampers plus
// every smooth force of s) + qfrc_actuator + J' xfrc_applied, and of act_dot, at the state in d
// after the smooth forward pass:
//   DfDq, DfDv (nv x nv), DfDa (nv x na), DfDu (nv x nu), DadotDa (na x na), DadotDu (na x nu).
// m is the model as its user configured it (mjdiff_userModel). Uses d's stack. Returns 0, or
// -1 - i if contact i has no geometry Jacobian (its force derivative is then missing).
struct mjdiffModel_;
MJDIFF_API int mjdiff_forceDerivative(const mjModel* m, mjData* d, const struct mjdiffModel_* s,
                                       mjtNum* DfDq, mjtNum* DfDv, mjtNum* DfDa, mjtNum* DfDu,
                                       mjtNum* DadotDa, mjtNum* DadotDu);

// Gradient of the smooth normal force fn of one contact (mjdiff_contactForce's force[0]) in the
// state: DfnDq, DfnDv (nv each; tangent dq), through dist and the geometry Jacobian and through
// vn = n.v. m is the model as its user configured it. Zero for an inactive contact. Uses d's
// stack (about (37 + 6 nbody) nv numbers). Returns 0, -1 if the contact has no geometry Jacobian,
// -2 if d's stack is too small (outputs zero on failure). Nullable: DfnDq, DfnDv.
MJDIFF_API int mjdiff_contactNormalDerivative(const mjModel* m, mjData* d,
                                              const struct mjdiffModel_* s, const mjContact* con,
                                              mjtNum* DfnDq, mjtNum* DfnDv);

// The same for a part of the forces (parts: a mask of the flags below): MJDIFF_FORCES_SMOOTH the
// smooth model's forces alone (contacts, limits, friction loss, equalities; DfDa, DfDu and the
// activation derivatives are then zero), MJDIFF_FORCES_OTHER all the others (MuJoCo's passive
// and fluid forces, actuators, xfrc_applied). The implicit step treats the two differently.
// mjdiff_forceDerivativeParts needs at most mjdiff_forceDerivativeStack(m) numbers of d's stack
// (with less, a spatial tendon's derivative is skipped and reported as that tendon's failure).
MJDIFF_API size_t mjdiff_forceDerivativeStack(const mjModel* m);
#define MJDIFF_FORCES_SMOOTH 1
#define MJDIFF_FORCES_OTHER 2
#define MJDIFF_FORCES_ALL 3
MJDIFF_API int mjdiff_forceDerivativeParts(const mjModel* m, mjData* d,
                                           const struct mjdiffModel_* s, int parts, mjtNum* DfDq,
                                           mjtNum* DfDv, mjtNum* DfDa, mjtNum* DfDu,
                                           mjtNum* DadotDa, mjtNum* DadotDu);

// ---------------------------------- fluid forces (fluid_d.c) -----------------------------------
//
// MuJoCo 2.2.2's fluid forces (mj_passive: the inertia-box model per body, the ellipsoid model per
// geom of bodies with fluidshape="ellipsoid" geoms), nothing if opt.density and opt.viscosity are
// both <= 0 or passive forces are disabled, at the state in d after the forward pass (kinematics,
// com quantities and cvel):
//   mjdiff_fluidForce       qfrc (nv) = the generalised fluid force (what mj_passive adds)
//   mjdiff_fluidDerivative  DfDq += d qfrc/dq (tangent dq), DfDv += d qfrc/dv (nv x nv each)
// mjdiff_fluidDerivative uses d's stack (about 34 nv + 6 nbody numbers).
MJDIFF_API void mjdiff_fluidForce(const mjModel* m, mjData* d, mjtNum* qfrc);
MJDIFF_API void mjdiff_fluidDerivative(const mjModel* m, mjData* d, mjtNum* DfDq, mjtNum* DfDv);
// ---------------------------------- tendons (tendon_d.c) ----------------------------------------
//
// Length L, Jacobian J (nv; dL/dq in the tangent dq) and H (nv x nv; H[nv i + k] = dJ_i/dq_k) of
// tendon t at the state in d (positions computed, mj_tendon run: spatial tendons read MuJoCo's
// wrap points). Fixed tendons: H = 0. Uses d's stack. Returns 0, -1 if an inside wrap of the
// tendon (side site inside the geom) has no touching point (MuJoCo's fallback; outputs then
// incomplete), or -2 if d's stack is too small (outputs zero).
// Nullable: L, J, H. mjdiff_tendonSpatial: nonzero if tendon t is spatial.
MJDIFF_API int mjdiff_tendonDerivative(const mjModel* m, mjData* d, int t, mjtNum* L, mjtNum* J,
                                       mjtNum* H);
MJDIFF_API int mjdiff_tendonSpatial(const mjModel* m, int t);

// Rates of tendon t for sensors: J (nv) = dL/dq, vH (nv) = d Ldot/dq = qvel' H (0 for a fixed
// tendon). Returns as mjdiff_tendonDerivative. Nullable: J, vH.
MJDIFF_API int mjdiff_tendonRates(const mjModel* m, mjData* d, int t, mjtNum* J, mjtNum* vH);

// Derivatives of the generalised force qfrc = sum_a J_a' F_a of forces F (n) on the lengths of
// tendons tendon (n, n <= 2), with partials dF (n x 2n: row a = dF_a/d(L_1..L_n, Ldot_1..Ldot_n)):
// DfDq += d qfrc/dq (through F, Ldot = J qvel and J(q)), DfDv += d qfrc/dv. Uses d's stack.
// Returns 0, -1 if an inside wrap has no touching point, -2 if d's stack is too small (nothing
// added).
// Nullable: DfDq, DfDv.
MJDIFF_API int mjdiff_tendonForceDerivative(const mjModel* m, mjData* d, int n, const int* tendon,
                                            const mjtNum* F, const mjtNum* dF, mjtNum* DfDq,
                                            mjtNum* DfDv);

// ---------------------------------- model parameters (params_d.c) -------------------------------
//
// Derivatives of the continuous dynamics in the selected model parameters p (mjdiffParams, see
// <mjdiff/params.h>), at the state in d after the smooth forward pass and the acceleration acc
// (nv) the step uses:
//   DrDp (nv x np)     d/dp [ f(q, v, act, u; p) - ID(q, v, acc; p) - hdamp B(p) acc ]
//                      (f: every applied force of forces_d.c; ID = M a + c of rne_d.c; hdamp:
//                      the timestep if the step treats dof damping implicitly (Euler), else 0)
//   DadotDp (na x np)  d act_dot / dp
// so that H dacc = DrDp dp. Nullable: DadotDp. Returns 0, or -1 - i if contact i has no geometry
// Jacobian.
struct mjdiffParams_;
MJDIFF_API int mjdiff_paramDerivative(const mjModel* m, mjData* d, const struct mjdiffModel_* s,
                                      const struct mjdiffParams_* p, const mjtNum* acc,
                                      mjtNum hdamp, mjtNum* DrDp, mjtNum* DadotDp);

// The same for the parameters that act through a part of the forces (MJDIFF_FORCES_SMOOTH: friction
// loss, geom friction, the smooth model's values; MJDIFF_FORCES_OTHER: all others); the columns
// of the other parameters are zero.
MJDIFF_API int mjdiff_paramDerivativeParts(const mjModel* m, mjData* d,
                                           const struct mjdiffModel_* s,
                                           const struct mjdiffParams_* p, int parts,
                                           const mjtNum* acc, mjtNum hdamp, mjtNum* DrDp,
                                           mjtNum* DadotDp);

// The compile map of geometry parameters (design_d.c) for body b: J (10 x np, row-major) =
// d(body_mass, body_ipos[3], T[xx yy zz xy xz yz]) / dp, T the inertia tensor about the com in the
// body frame (R(iquat) diag(inertia) R(iquat)'), exact (forward-mode through MuJoCo's formulas);
// columns of parameters that do not move b's geoms are zero. Returns 0, -1 if b's inertials do
// not follow its geoms or p has no geometry parameters (J zero then, if p is not NULL), or -2 if b
// has more than 64 geoms (J incomplete).
MJDIFF_API int mjdiff_designInertialJacobian(const mjModel* m, const struct mjdiffParams_* p,
                                             int b, mjtNum* J);

// DrDp's columns of geom sizes and positions are analytic (params_d.c) where their conditions hold
// (no fluid forces, no spatial tendon wrapping the geom), else differenced with the other geometry
// parameters (design_d.c). on = 1 differences them all (for tests that compare the two); 0
// restores the default. No effect without geometry parameters.
MJDIFF_API void mjdiff_designSetDifferenced(struct mjdiffParams_* p, int on);

// ---------------------------------- sensors (sensor_d.c) -----------------------------------------
//
// Derivatives of d->sensordata at the state in d after the smooth forward pass (sensors computed):
//   DsDx (nsensordata x (2nv + na + nu))  partials in [dq dv da du] at fixed acceleration
//   DsDacc (nsensordata x nv)             partials in qacc (acceleration-stage sensors)
// so that ds = DsDx dx + DsDacc dacc. Returns 0, or -1 - i if sensor i has no derivative.
// mjdiff_sensorSupported: nonzero if sensor i of m has a derivative.
MJDIFF_API int mjdiff_sensorDerivative(const mjModel* m, mjData* d, const struct mjdiffModel_* s,
                                       mjtNum* DsDx, mjtNum* DsDacc);
MJDIFF_API int mjdiff_sensorSupported(const mjModel* m, int i);

// out (nv x ncol) = Phi(delta) X + Psi(delta) Y: the Jacobian of q' = q (+) delta in q (Phi) and in
// delta (Psi), joint by joint, applied to X, Y (nv x ncol each, row-major; either may be NULL)
void mjdiff_integrateJacobian(const mjModel* m, const mjtNum* delta, const mjtNum* X,
                              const mjtNum* Y, int ncol, mjtNum* out);

// out = A Psi(delta) (psi 1) or A Phi(delta) (psi 0) for A of nrow rows of nv (row-major): Phi
// and Psi (above) are block diagonal, the identity but on the rotational dofs of ball and free
// joints, whose 3 x 3 blocks are R' and so3's right Jacobian J, so only those columns change
// (nrow x 9 per joint, not the nrow x nv x nv of a product); out may be A
void mjdiff_mulIntegrateRight(const mjModel* m, const mjtNum* delta, const mjtNum* A, int nrow,
                              int psi, mjtNum* out);

// mjdiff_saveState, mjdiff_loadState: plugin/internal.h

// the implicit step's next derivative call (the next mjdiff_step* on w only) starts Newton from
// qvel_next (nv), the next state's known velocity, instead of v' = v: the rollout adjoint's
// backward pass, whose forward pass stored it. NULL clears the hint. No effect on other steps.
struct mjdiffStepDeriv_;
MJDIFF_API void mjdiff_stepDerivHint(struct mjdiffStepDeriv_* w, const mjtNum* qvel_next);

// after mjdiff_stepVJP or mjdiff_sensorVJP on w: the adjoint of d->qfrc_applied at the state of
// that product (nv; the gradient of adj_next' x' or adj_sensor' s in a generalised force applied
// at x). Returns 1, or 0 (adj_qfrc untouched) if the last product did not form it: an RK4 step,
// a model with MuJoCo's implicitfast block of a standalone free body, or a call that failed.
struct mjdiffStepDeriv_;
MJDIFF_API int mjdiff_stepForceAdjoint(const struct mjdiffStepDeriv_* w, mjtNum* adj_qfrc);

// bytes held by a step-derivative workspace
struct mjdiffStepDeriv_;
size_t mjdiff_stepDerivMemory(const struct mjdiffStepDeriv_* w);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_ADJOINT_DERIVATIVE_H_
