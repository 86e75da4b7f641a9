// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Analytic derivatives of the smooth step x' = f(x, u), x = (qpos, qvel, act), u = ctrl.
//
// State perturbations use mjd_transitionFD's layout: dx = (dq (nv), dv (nv), da (na)), where dq is a
// qpos perturbation in velocity space (qpos (+) dq = mj_integratePos(qpos, dq, 1): hinge and slide
// additive, ball and free rotations local-frame rotation vectors, free translations world-frame).
//   A = dx'/dx   ((2nv+na) x (2nv+na), row-major)
//   B = dx'/du   ((2nv+na) x nu, row-major)
//   P = dx'/dp   ((2nv+na) x np, row-major) for model parameters p selected by name
//                (<mjdiff/params.h>)
// No finite differences: every derivative is hand-derived (see the top of each adjoint/ file).
// Sizes and indices of the layouts, and conversions: <mjdiff/state.h>.
//
// Units: rows and columns carry the units of their variables (dq in m or rad per joint type, dv
// in m/s or rad/s, act in the actuator's units, u in the actuator's control units: N, N m, or
// the servo's target); A is dimensionless per pair of like rows.
//
// Controls outside ctrlrange: MuJoCo clamps ctrl to actuator_ctrlrange (ctrllimited actuators,
// unless mjDSBL_CLAMPCTRL) before the actuator force. The derivative in u is that of the clamp
// taken one-sided from inside: at a bound (ctrl equal to lo or hi) the interior derivative; beyond
// it (ctrl < lo or ctrl > hi) zero, so B's column of that actuator is zero and gradient descent
// on raw controls stalls once a control leaves its range -- clip the controls to ctrlrange in the
// optimiser. An actuator force at or beyond its forcerange (forcelimited) likewise has zero
// derivative in its input, length and velocity. Filter and integrator dynamics clamp the same
// way.

#ifndef MJDIFF_ADJOINT_H_
#define MJDIFF_ADJOINT_H_

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>
#include <mjdiff/smooth.h>

#ifdef __cplusplus
extern "C" {
#endif

// Workspace of the step derivatives for one (mjModel, mjdiffModel) pair; one per thread, like
// mjData. Opaque.
typedef struct mjdiffStepDeriv_ mjdiffStepDeriv;

// Model parameters selected by name (<mjdiff/params.h>).
typedef struct mjdiffParams_ mjdiffParams;

// Make the workspace (the only allocation). Fails with MJDIFF_ERR_UNSUPPORTED naming the feature
// if the model holds something the derivatives do not cover, naming it: an integrator other than
// Euler, RK4 or the implicit smooth step; user actuator dynamics, gain or bias; a jointinparent
// transmission on a ball or free joint, a site transmission with a reference site (3.x), a body
// transmission whose force depends on its velocity; anisotropic pair friction (the README's
// "The step adjoint" lists the rest). With p, the derivatives also cover those model parameters
// (p must outlive the workspace).
// Nullable: p, err.
MJDIFF_API mjdiffStatus mjdiff_makeStepDeriv(const mjModel* m, const mjdiffModel* s,
                                             const mjdiffParams* p, mjdiffStepDeriv** out,
                                             char* err, int errsz);

// Free the workspace. NULL is a no-op.
MJDIFF_API void mjdiff_freeStepDeriv(mjdiffStepDeriv* w);

// Full Jacobians of one smooth step at the state in d (qpos, qvel, act, ctrl, time).
// d's state is left bit for bit as it was; its derived quantities (kinematics, contacts, qacc,
// ...) are those of the smooth forward pass at that state (the documented scratch).
// Fails with MJDIFF_ERR_UNSUPPORTED at a state where a tendon's inside wrap (side site inside the
// wrapping geom) has no touching point (MuJoCo's fallback) or d's stack is too small for a
// tendon's derivative.
// Nullable: A, B, P, err.
MJDIFF_API mjdiffStatus mjdiff_stepJacobian(const mjModel* m, mjData* d, const mjdiffModel* s,
                                            mjdiffStepDeriv* w, mjtNum* A, mjtNum* B, mjtNum* P,
                                            char* err, int errsz);

// Vector-Jacobian product: given the adjoint of x' (adj_next, 2nv+na), the adjoints of x
// (adj_x = A' adj_next, 2nv+na), of u (adj_ctrl = B' adj_next, nu) and of the parameters
// (adj_param = P' adj_next, np). Same effect on d as mjdiff_stepJacobian.
// Nullable: adj_x, adj_ctrl, adj_param, err.
MJDIFF_API mjdiffStatus mjdiff_stepVJP(const mjModel* m, mjData* d, const mjdiffModel* s,
                                       mjdiffStepDeriv* w, const mjtNum* adj_next, mjtNum* adj_x,
                                       mjtNum* adj_ctrl, mjtNum* adj_param, char* err,
                                       int errsz);

// Jacobian-vector product: the tangent of x' (dx_next = A dx + B du + P dp, 2nv+na) for tangents
// of x (dx, 2nv+na), u (du, nu) and the parameters (dp, np). Same effect on d as
// mjdiff_stepJacobian.
// Nullable: dx, du, dp (zero), err.
MJDIFF_API mjdiffStatus mjdiff_stepJVP(const mjModel* m, mjData* d, const mjdiffModel* s,
                                       mjdiffStepDeriv* w, const mjtNum* dx, const mjtNum* du,
                                       const mjtNum* dp, mjtNum* dx_next, char* err, int errsz);

// Sensor VJP at the state in d: ADDS C' adj_sensor to adj_x, D' adj_sensor to adj_ctrl and
// Q' adj_sensor to adj_param, where C, D, Q are the derivatives of d->sensordata (as the smooth
// forward pass computes it at this state) in x, u and the parameters (acceleration-stage sensors
// through qacc). Fails (MJDIFF_ERR_UNSUPPORTED) if adj_sensor weights a sensor without a
// derivative.
// Same effect on d as mjdiff_stepJacobian.
// Nullable: adj_x, adj_ctrl, adj_param, err.
MJDIFF_API mjdiffStatus mjdiff_sensorVJP(const mjModel* m, mjData* d, const mjdiffModel* s,
                                         mjdiffStepDeriv* w, const mjtNum* adj_sensor,
                                         mjtNum* adj_x, mjtNum* adj_ctrl, mjtNum* adj_param,
                                         char* err, int errsz);

// Nonzero if sensor i of m has a derivative (jointpos, jointvel, tendonpos, tendonvel,
// actuatorpos, actuatorvel, actuatorfrc, framepos, framequat, framelinvel, frameangvel, subtreecom, velocimeter, gyro,
// accelerometer, force, torque, touch; with the restrictions of adjoint/sensor_d.c).
MJDIFF_API int mjdiff_sensorSupported(const mjModel* m, int i);

// Sensor Jacobians at the state in d: C = ds/dx (nsensordata x (2nv+na)), D = ds/du
// (nsensordata x nu), Q = ds/dp (nsensordata x np), for d->sensordata as the smooth forward pass
// computes it at this state. Rows of sensors without a derivative are NaN. Uses d's stack for
// (nsensordata x (2nv+na+nu+np)) numbers. Same effect on d as mjdiff_stepJacobian.
// Nullable: C, D, Q, err.
MJDIFF_API mjdiffStatus mjdiff_sensorJacobian(const mjModel* m, mjData* d, const mjdiffModel* s,
                                              mjdiffStepDeriv* w, mjtNum* C, mjtNum* D,
                                              mjtNum* Q, char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_ADJOINT_H_
