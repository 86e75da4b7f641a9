// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Argument structs for the calls with many optional inputs and outputs (OSQP and Box2D style):
// fill a struct with its mjdiff_default*() function, set the fields you have and want, pass it.
// A NULL input is zero; a NULL output is not computed. Named fields cannot swap silently, which
// three adjacent mjtNum* outputs of a positional call can.
//
// The positional forms (mjdiff_stepJacobian, mjdiff_stepVJP, mjdiff_sensorJacobian,
// mjdiff_sensorVJP, mjdiff_rolloutBackward, mjdiff_rolloutBatch) stay, as the implementation
// these wrap (or, for mjdiff_rolloutBackward, as a thin wrapper of mjdiff_rolloutGradient): tools
// and tests are written against them and they remain the shortest form for one output. The
// rollout's own struct, mjdiffRolloutGrad, is in <mjdiff/rollout.h>.

#ifndef MJDIFF_ARGS_H_
#define MJDIFF_ARGS_H_

#include <mujoco/mujoco.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/base.h>
#include <mjdiff/rollout.h>
#include <mjdiff/smooth.h>

#ifdef __cplusplus
extern "C" {
#endif

// Outputs of mjdiff_stepDerivatives: the step's and the sensors' Jacobians at one state
// (row-major; shapes as <mjdiff/adjoint.h>: ndx = 2nv+na, ns = nsensordata, np the parameters of
// the workspace's selection).
typedef struct mjdiffStepJac_ {
  mjtNum* A;                   // (ndx x ndx) dx'/dx
  mjtNum* B;                   // (ndx x nu)  dx'/du
  mjtNum* P;                   // (ndx x np)  dx'/dp
  mjtNum* C;                   // (ns x ndx)  ds/dx (readings of the forward pass at x)
  mjtNum* D;                   // (ns x nu)   ds/du
  mjtNum* Q;                   // (ns x np)   ds/dp
} mjdiffStepJac;

// Every field NULL.
MJDIFF_API void mjdiff_defaultStepJac(mjdiffStepJac* jac);

// The requested Jacobians at the state in d (effect on d as mjdiff_stepJacobian). The sensor
// blocks need nsensordata x (ndx + nu + np) numbers of d's stack.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_stepDerivatives(const mjModel* m, mjData* d, const mjdiffModel* s,
                                               mjdiffStepDeriv* w, const mjdiffStepJac* jac,
                                               char* err, int errsz);

// Inputs and outputs of mjdiff_stepAdjoint: one step's vector-Jacobian product.
typedef struct mjdiffStepAdj_ {
  const mjtNum* adj_next;      // (ndx) adjoint of the next state x'
  const mjtNum* adj_sensor;    // (ns) adjoint of the readings at x
  mjtNum* adj_x;               // (ndx) outputs, overwritten: A' adj_next + C' adj_sensor
  mjtNum* adj_ctrl;            // (nu)  B' adj_next + D' adj_sensor
  mjtNum* adj_param;           // (np)  P' adj_next + Q' adj_sensor
  mjtNum* adj_qfrc;            // (nv)  the adjoint of d->qfrc_applied at x: the gradient of
                               // adj_next' x' + adj_sensor' s in a generalised force applied
                               // during the step (a learned residual force, a disturbance).
                               // Euler and the implicit step; RK4 fails (MJDIFF_ERR_UNSUPPORTED)
} mjdiffStepAdj;

// Every field NULL.
MJDIFF_API void mjdiff_defaultStepAdj(mjdiffStepAdj* adj);

// The products of adj at the state in d (effect on d as mjdiff_stepJacobian).
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_stepAdjoint(const mjModel* m, mjData* d, const mjdiffModel* s,
                                           mjdiffStepDeriv* w, const mjdiffStepAdj* adj,
                                           char* err, int errsz);

// A batch of rollouts (mjdiff_runBatch).
typedef struct mjdiffBatchDef_ {
  const mjdiffParams* params;  // nullable: model parameters differentiated (grad_param)
  int horizon;                 // T (required, >= 1)
  mjdiffRolloutOptions options;  // checkpointing (default: store every state)
  const mjdiffLoss* loss;      // nullable: the loss callback on each item's recorded arrays
  const mjdiffTerms* terms;    // nullable: loss terms (<mjdiff/loss.h>), evaluated in each
                               // item's sweep at their steps; their value adds to item.loss
  int nthread;                 // threads (default 1)
} mjdiffBatchDef;

// Defaults: no parameters, horizon 0 (set it), default rollout options, no loss or terms, 1
// thread.
MJDIFF_API void mjdiff_defaultBatchDef(mjdiffBatchDef* def);

// mjdiff_rolloutBatch with the arguments of def.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_runBatch(const mjModel* m, const mjdiffModel* s,
                                        const mjdiffBatchDef* def, mjdiffBatchItem* items,
                                        int nitem, char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_ARGS_H_
