// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Analytic derivatives of the smooth step x' = f(x, u), x = (qpos, qvel, act), u = ctrl.
//
// State perturbations use mjd_transitionFD's layout: dx = (dq (nv), dv (nv), da (na)), where dq is a
// qpos perturbation in velocity space (qpos (+) dq = mj_integratePos(qpos, dq, 1): hinge and slide
// additive, ball and free rotations local-frame rotation vectors, free translations world-frame).
//   A = dx'/dx   ((2nv+na) x (2nv+na), row-major)
//   B = dx'/du   ((2nv+na) x nu, row-major)
// No finite differences: every derivative is hand-derived (see the top of each adjoint/ file).

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

// Make the workspace (the only allocation). Fails with MJDIFF_ERR_UNSUPPORTED naming the feature
// if the model holds something the derivatives do not cover: an integrator other than Euler or
// RK4; fluid forces; muscle or user actuator dynamics, gain or bias; actuator transmissions other
// than hinge/slide joints and fixed tendons; spatial tendons with stiffness, damping, limits,
// friction loss, equalities or actuators; contacts between geom types without a geometry Jacobian
// (ellipsoid, mesh, hfield, cylinder except against a plane); anisotropic pair friction.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_makeStepDeriv(const mjModel* m, const mjdiffModel* s,
                                             mjdiffStepDeriv** out, char* err, int errsz);

// Free the workspace. NULL is a no-op.
MJDIFF_API void mjdiff_freeStepDeriv(mjdiffStepDeriv* w);

// Full Jacobians of one smooth step at the state in d (qpos, qvel, act, ctrl, time).
// d's state is left bit for bit as it was; its derived quantities (kinematics, contacts, qacc,
// ...) are those of the smooth forward pass at that state (the documented scratch).
// Nullable: A, B, err.
MJDIFF_API mjdiffStatus mjdiff_stepJacobian(const mjModel* m, mjData* d, const mjdiffModel* s,
                                            mjdiffStepDeriv* w, mjtNum* A, mjtNum* B,
                                            char* err, int errsz);

// Vector-Jacobian product: given the adjoint of x' (adj_next, 2nv+na), the adjoints of x
// (adj_x = A' adj_next, 2nv+na) and of u (adj_ctrl = B' adj_next, nu). Same effect on d as
// mjdiff_stepJacobian.
// Nullable: adj_x, adj_ctrl, err.
MJDIFF_API mjdiffStatus mjdiff_stepVJP(const mjModel* m, mjData* d, const mjdiffModel* s,
                                       mjdiffStepDeriv* w, const mjtNum* adj_next, mjtNum* adj_x,
                                       mjtNum* adj_ctrl, char* err, int errsz);

// Jacobian-vector product: the tangent of x' (dx_next = A dx + B du, 2nv+na) for tangents of x
// (dx, 2nv+na) and u (du, nu). Same effect on d as mjdiff_stepJacobian.
// Nullable: dx, du (zero), err.
MJDIFF_API mjdiffStatus mjdiff_stepJVP(const mjModel* m, mjData* d, const mjdiffModel* s,
                                       mjdiffStepDeriv* w, const mjtNum* dx, const mjtNum* du,
                                       mjtNum* dx_next, char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_ADJOINT_H_
