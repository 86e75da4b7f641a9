// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Neural residual forces: a hybrid model in which a network learns the generalised forces the
// physics does not model (unmodelled friction, drag, the hard-contact effects a smooth model
// misses), added to the smooth model's at every step.
//
//   z   = (phi(qpos), qvel, ctrl)       (mjdiff_residualInputSize; ctrl as d holds it)
//   f   = s .* NN(z; theta)             (nv), written into d->qfrc_applied
//   phi: per joint, the position features the physics can depend on. An unlimited hinge gives
//         (sin q, cos q), since the angle is periodic. A slide of a body attached to the world,
//         unlimited, horizontal (perpendicular to gravity) and after no rotation on its body, is
//         dropped: the world is the same under horizontal translation on a flat floor. Every
//         other coordinate is kept as it is, ball and free quaternions included.
//   s_i = sum_k |gear_k| max|ctrlrange_k| |moment_ki|   at qpos0 (the actuators' authority on
//         dof i: the network's outputs are in units of the actuators' full force), or, for a dof
//         no actuator drives, M_ii(qpos0) * 10 (m/s^2 or rad/s^2), at least 1e-6
// VJP, given a_f (the step adjoint's adjoint of qfrc_applied, <mjdiff/args.h> adj_qfrc):
//   a_y = s .* a_f;  (a_z, a_theta) = NN's VJP (<mjdiff/nn.h>)
//   a_qpos = Dphi' a_z[phi]   (angle: a_q = a_sin cos q - a_cos sin q; a dropped slide: 0)
//   a_x += (G(x)' a_qpos, a_z[qvel], 0)   (G: qpos in the tangent layout, a quaternion's four
//                                             partials to its rotation vector;
//                                             mjdiff_stateGradToTangent)
//   a_u += a_z[ctrl]
// mjdiff_residualForceModel gives these as an mjdiffForceModel for mjdiff_rolloutSetForce, so a
// rollout's gradient reaches theta (mjdiffRolloutGrad.grad_force, in the network's weight
// layout) through contacts, limits and every other force of the smooth step.
//
// A residual holds its network (weights, input normalisation) and one network workspace: one per
// thread. The network starts at zero output (zero last layer), so a new hybrid is the physics
// model itself.

#ifndef MJDIFF_RESIDUAL_H_
#define MJDIFF_RESIDUAL_H_

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>
#include <mjdiff/nn.h>
#include <mjdiff/rollout.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mjdiffResidual_ mjdiffResidual;

// A residual force for m with hidden layers of def (nin, nout are set here: the input size above,
// nv),
// weights initialised from seed (Xavier, zero output layer), identity normalisation.
// Nullable: def (two hidden layers of 64 tanh units), err.
MJDIFF_API mjdiffStatus mjdiff_makeResidual(const mjModel* m, const mjdiffMLPDef* def,
                                            uint64_t seed, mjdiffResidual** out, char* err,
                                            int errsz);

// A residual force for m with the network saved at path (mjdiff_saveMLP of
// mjdiff_residualNet). Fails with MJDIFF_ERR_VALUE if the file does not load or its network has
// the wrong shape for m (err names the file, both shapes and the model's sizes).
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_loadResidual(const mjModel* m, const char* path,
                                            mjdiffResidual** out, char* err, int errsz);

// Free a residual; NULL is a no-op.
MJDIFF_API void mjdiff_freeResidual(mjdiffResidual* r);

// The network (weights buffer: mjdiff_mlpParams; save: mjdiff_saveMLP; normalisation:
// mjdiff_fitMLPNormalization on rows z of data). Owned by r.
MJDIFF_API mjdiffMLP* mjdiff_residualNet(mjdiffResidual* r);

// The output scale s (nv).
MJDIFF_API const mjtNum* mjdiff_residualScale(const mjdiffResidual* r);

// The size of the network input z (position features, nv, nu).
MJDIFF_API int mjdiff_residualInputSize(const mjdiffResidual* r);

// The network input z (mjdiff_residualInputSize) of the state and controls in d.
MJDIFF_API void mjdiff_residualInput(const mjdiffResidual* r, const mjModel* m, const mjData* d,
                                     mjtNum* z);

// f (nv) at the state and controls in d. Fails (MJDIFF_ERR_ARGUMENT) for a model of another size
// and (MJDIFF_ERR_NONFINITE) for a non-finite force.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_residualForce(mjdiffResidual* r, const mjModel* m,
                                             const mjData* d, mjtNum* qfrc, char* err,
                                             int errsz);

// The residual as a rollout force model (user = r; theta must be mjdiff_mlpParams of its
// network). The callbacks cannot report errors: a network failure inside them writes a zero
// force or adjoint and is returned, once, by mjdiff_residualStatus.
MJDIFF_API const mjdiffForceModel* mjdiff_residualForceModel(mjdiffResidual* r);

// MJDIFF_OK, or the first failure inside the force model's callbacks since the last call (which
// clears it), with err naming it. Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_residualStatus(mjdiffResidual* r, char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_RESIDUAL_H_
