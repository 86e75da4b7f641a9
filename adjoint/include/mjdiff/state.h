// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The two state layouts of mjdiff, their sizes and indices, and the conversions between them
// (in the spirit of MuJoCo 3's mj_stateSize / mj_getState).
//
//   layout    size         rows                                   used by
//   state     nq+nv+na     qpos (nq) | qvel (nv) | act (na)       mjdiff_rolloutForward's states,
//                                                                 mjdiffBatchItem.x0, loss targets
//   tangent   2nv+na       dq (nv)   | dv (nv)   | da (na)        dLdx, grad_x0, adj_x, rows of
//                                                                 A, B, P, mjdiffPolicy's adj_x,
//                                                                 loss gradients
//
// dq is a qpos perturbation in MuJoCo's velocity space, qpos (+) dq = mj_integratePos(qpos, dq, 1)
// (mjd_transitionFD's layout):
//
//   joint    qpos entries (jnt_qposadr)        dq rows (jnt_dofadr)
//   hinge    1 angle (rad)                     1: the angle (rad)
//   slide    1 position (m)                    1: the position (m)
//   ball     4 quaternion (w x y z)            3: rotation vector in the joint's local frame (rad)
//   free     3 position (m, world) + 4 quat    3 translation (m, world) + 3 rotation vector in the
//                                              body's local frame (rad)
//
// dv and da are plain differences of qvel and act. Only for hinge and slide joints do the qpos
// and dq rows of a joint hold the same quantity; their addresses differ as soon as a ball or free
// joint precedes them (a free joint's first rows coincide, which hides a mix-up on a one-body
// model). Convert with mjdiff_stateDiff / mjdiff_stateIntegrate (differences) and
// mjdiff_stateGradToTangent (gradients written in the state layout).

#ifndef MJDIFF_STATE_H_
#define MJDIFF_STATE_H_

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>

#ifdef __cplusplus
extern "C" {
#endif

// Size of the state layout: nq + nv + na.
MJDIFF_API int mjdiff_stateSize(const mjModel* m);

// Size of the tangent layout: 2 nv + na.
MJDIFF_API int mjdiff_tangentSize(const mjModel* m);

// Copy d's qpos, qvel, act into x (nq+nv+na), and back. Time and ctrl are not part of the state.
MJDIFF_API void mjdiff_getState(const mjModel* m, const mjData* d, mjtNum* x);
MJDIFF_API void mjdiff_setState(const mjModel* m, mjData* d, const mjtNum* x);

// Tangent rows of joint j: its dq rows start at *dq, its dv rows at *dv (= nv + *dq); returns
// the number of its dofs (hinge, slide 1; ball 3; free 6), or -1 (outputs untouched) if j is out
// of range.
// Nullable: dq, dv.
MJDIFF_API int mjdiff_jointTangentRows(const mjModel* m, int j, int* dq, int* dv);

// State rows of joint j: qpos entries start at *qpos, qvel entries at *qvel (= nq + jnt_dofadr);
// returns the number of its qpos entries (hinge, slide 1; ball 4; free 7), or -1 if j is out of
// range.
// Nullable: qpos, qvel.
MJDIFF_API int mjdiff_jointStateRows(const mjModel* m, int j, int* qpos, int* qvel);

// Tangent rows of body b's own joints (body_dofadr, body_dofnum: for a free body, its 6 dofs):
// returns their number (0 for a body welded to its parent: then *dq, *dv are -1), or -1 if b is
// out of range. The dofs of the body's ancestors move it too; they are not included.
// Nullable: dq, dv.
MJDIFF_API int mjdiff_bodyTangentRows(const mjModel* m, int b, int* dq, int* dv);

// Tangent row (2nv + k) of the activation of actuator i, or -1 if it has none (dyntype none) or
// i is out of range.
MJDIFF_API int mjdiff_actuatorTangentRow(const mjModel* m, int i);

// Difference of two states in the tangent layout: x2 = x1 (+) dx, i.e. dq by
// mj_differentiatePos(qpos1, qpos2), dv = qvel2 - qvel1, da = act2 - act1.
// x1, x2 (nq+nv+na); dx (2nv+na).
MJDIFF_API void mjdiff_stateDiff(const mjModel* m, const mjtNum* x1, const mjtNum* x2, mjtNum* dx);

// Move a state along a tangent: out = x (+) scale dx (mj_integratePos for qpos; quaternions stay
// unit). x, out (nq+nv+na; may be the same array); dx (2nv+na).
MJDIFF_API void mjdiff_stateIntegrate(const mjModel* m, const mjtNum* x, const mjtNum* dx,
                                      mjtNum scale, mjtNum* out);

// Gradient of a function written in the state layout, moved to the tangent layout at x:
// grad_dx = (d x(+)dx / d dx at dx = 0)' grad_x. Hinge, slide, translations, qvel and act rows
// are copied; a quaternion's 4 partials give the 3 rows of its local rotation vector,
// g_k = grad_q . (q * (0, e_k / 2)). x, grad_x (nq+nv+na); grad_dx (2nv+na). A loss written
// with mjdiff_stateDiff (or the quantities of mjData) needs no conversion.
MJDIFF_API void mjdiff_stateGradToTangent(const mjModel* m, const mjtNum* x,
                                          const mjtNum* grad_x, mjtNum* grad_dx);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_STATE_H_
