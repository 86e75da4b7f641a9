// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Gradients of whole rollouts of the smooth step.
//
//   x_{t+1} = f(x_t, u_t; p),  u_t = ctrl[t] or pi(x_t, t; theta),  t = 0 .. T-1
//   L = sum_{t=0}^{T} l_t(x_t) + sum_{t=0}^{T-1} l_t(u_t) + sum_{t=0}^{T-1} l_t(s_t)
//   (s_t: the sensor readings of the forward pass of step t, at x_t)
// Backward (adjoint) sweep, lambda_t = dL/dx_t:
//   lambda_T = dl_T/dx_T
//   (a_x, a_u, a_p) = VJP of step t with lambda_{t+1},  plus the sensor VJP with dl_t/ds_t
//   g_u_t = a_u + dl_t/du_t;  policy: a_x += (du/dx)' g_u_t, g_theta += (du/dtheta)' g_u_t
//   g_p += a_p;  lambda_t = a_x + dl_t/dx_t;  dL/dx_0 = lambda_0
// State gradients use the step adjoint's tangent layout (<mjdiff/state.h>: sizes, rows of a
// joint or body, conversions from qpos differences and qpos gradients); states are rows of
// (qpos, qvel, act). A loss on a few steps (a terminal loss, a sensor at x_T, positions at chosen
// steps) needs no dense arrays: mjdiffRolloutGrad's dLdx_T, dLds_T, terms (<mjdiff/loss.h>) or
// step_loss. Gradients are in the units of L per unit of the variable; controls are clamped to
// ctrlrange with the derivative of <mjdiff/adjoint.h> (zero beyond a bound, interior at it).

#ifndef MJDIFF_ROLLOUT_H_
#define MJDIFF_ROLLOUT_H_

#include <mujoco/mujoco.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/base.h>
#include <mjdiff/smooth.h>

#ifdef __cplusplus
extern "C" {
#endif

// How a rollout records what the backward sweep needs.
typedef struct mjdiffRolloutOptions_ {
  int checkpoint;              // 1: store every state (default); k > 1: store every k-th state and
                               // recompute the others in the backward sweep; 0: k = ceil(sqrt(T))
} mjdiffRolloutOptions;

MJDIFF_API void mjdiff_defaultRolloutOptions(mjdiffRolloutOptions* opt);

// A control policy u = pi(x, t; theta) with nparam parameters theta, and its own VJP.
typedef struct mjdiffPolicy_ {
  int nparam;                  // number of policy parameters
  void* user;                  // passed to both callbacks
  // write the controls (nu) for the state in d (qpos, qvel, act, time; kinematics not computed)
  void (*act)(const mjModel* m, const mjData* d, const mjtNum* theta, void* user, mjtNum* ctrl);
  // given adj_ctrl (nu), add (du/dx)' adj_ctrl to adj_x (2nv+na, tangent layout) and
  // (du/dtheta)' adj_ctrl to adj_theta (nparam); d holds the state the controls were made at
  void (*vjp)(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
              const mjtNum* adj_ctrl, mjtNum* adj_x, mjtNum* adj_theta);
} mjdiffPolicy;

// A generalised force the rollout applies at every step: a learned residual force (the hybrid
// model of <mjdiff/residual.h>), a disturbance model. f_t = phi(x_t, u_t; theta) (nv) is written
// into d->qfrc_applied (replacing it) after the step's controls and before the step, and stays
// there while the step and its readings are evaluated; its VJP sits in the backward sweep:
//   a_f = adjoint of qfrc_applied of step t (the step's and the readings' parts)
//   a_x += phi_x' a_f,  a_u += phi_u' a_f,  g_theta_f += phi_theta' a_f
typedef struct mjdiffForceModel_ {
  int nparam;                  // number of its parameters theta
  void* user;                  // passed to both callbacks
  // write the force (nv) for the state and controls in d (qpos, qvel, act, ctrl, time;
  // kinematics not computed)
  void (*force)(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
                mjtNum* qfrc);
  // given adj_qfrc (nv), ADD (dphi/dx)' adj_qfrc to adj_x (2nv+na, tangent layout at d's qpos),
  // (dphi/du)' adj_qfrc to adj_ctrl (nu) and (dphi/dtheta)' adj_qfrc to adj_theta (nparam); d
  // holds the state and controls the force was made at
  void (*vjp)(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
              const mjtNum* adj_qfrc, mjtNum* adj_x, mjtNum* adj_ctrl, mjtNum* adj_theta);
} mjdiffForceModel;

// A rollout's recording and workspace (one per thread). Opaque.
typedef struct mjdiffRollout_ mjdiffRollout;

// Make a rollout of `horizon` steps of m with the smooth model s, differentiable in the model
// parameters p (nullable). The only allocation.
// Nullable: opt (defaults), p, err.
MJDIFF_API mjdiffStatus mjdiff_makeRollout(const mjModel* m, const mjdiffModel* s,
                                           const mjdiffParams* p, int horizon,
                                           const mjdiffRolloutOptions* opt, mjdiffRollout** out,
                                           char* err, int errsz);

// Attach a force model with its parameters theta (both kept alive by the caller) to the following
// forward rollouts and sweeps of r; NULL detaches it. The first attach allocates the record of
// the forces ((T + 1) x nv). Fails with MJDIFF_ERR_UNSUPPORTED under RK4 (its step adjoint has no
// applied-force part), MJDIFF_ERR_ARGUMENT without callbacks or theta, MJDIFF_ERR_MEMORY.
// After a forward rollout with a force model, d ends at x_T with qfrc_applied = phi(x_T,
// u_{T-1}), so that its readings there are those the sweep differentiates.
// Nullable: force, theta (with nparam 0), err.
MJDIFF_API mjdiffStatus mjdiff_rolloutSetForce(mjdiffRollout* r, const mjdiffForceModel* force,
                                               const mjtNum* theta, char* err, int errsz);

// Free a rollout. NULL is a no-op.
MJDIFF_API void mjdiff_freeRollout(mjdiffRollout* r);

// Bytes held by the rollout's recording and workspaces (for memory benchmarks).
MJDIFF_API size_t mjdiff_rolloutMemory(const mjdiffRollout* r);

// Simulate T steps from the state in d (qpos, qvel, act, time) with controls ctrl (T x nu), or
// with the policy (then ctrl is ignored), recording for the backward sweep. d ends at x_T.
// Optional outputs: states ((T+1) x (nq+nv+na)), sensordata (T x nsensordata: the readings of
// step t's forward pass, at x_t; the readings at x_T come from mjdiff_forward on d afterwards,
// controls held at u_{T-1}, and their gradient goes in mjdiffRolloutGrad.dLds_T). On failure (a
// non-finite state) nothing is recorded and err names the step. The policy and theta are used
// again by the backward sweep (mjdiff_rolloutGradient, mjdiff_rolloutBackward): keep them alive.
// Nullable: ctrl (with a policy), policy, theta (without a policy), states, sensordata, err.
MJDIFF_API mjdiffStatus mjdiff_rolloutForward(const mjModel* m, mjData* d, const mjdiffModel* s,
                                              mjdiffRollout* r, const mjtNum* ctrl,
                                              const mjdiffPolicy* policy, const mjtNum* theta,
                                              mjtNum* states, mjtNum* sensordata, char* err,
                                              int errsz);

// Horizon T of a rollout (0 for NULL).
MJDIFF_API int mjdiff_rolloutHorizon(const mjdiffRollout* r);

// Sizes of a rollout's arrays (any output may be NULL): nx = nq+nv+na (a row of states), ndx =
// 2nv+na (a row of dLdx, grad_x0), nu (a row of ctrl, dLdu, grad_ctrl), ns = nsensordata (a row
// of sensordata, dLds), np (grad_param; 0 without parameters). Returns T (0 for NULL).
MJDIFF_API int mjdiff_rolloutSizes(const mjdiffRollout* r, int* nx, int* ndx, int* nu, int* ns,
                                   int* np);

// A loss evaluated step by step in the backward sweep, so that a loss on a few steps costs nothing
// for the others. At each step t = T, T-1, .., 0 where active(t) is nonzero (every step without
// active), eval runs with d at x_t after the smooth forward pass (kinematics, sensors; controls
// u_t, held at u_{T-1} for t = T), returns l_t and ADDS dl_t/dx_t to dldx (2nv+na, tangent
// layout), dl_t/du_t to dldu (nu; NULL at t = T) and dl_t/ds_t to dlds (nsensordata; the sweep
// applies the sensor VJP). eval must not change d's state.
typedef struct mjdiffStepLoss_ {
  void* user;
  mjtNum (*eval)(const mjModel* m, const mjData* d, int t, int T, void* user, mjtNum* dldx,
                 mjtNum* dldu, mjtNum* dlds);
  int (*active)(int t, int T, void* user);  // nullable: every step
} mjdiffStepLoss;

// Loss terms (<mjdiff/loss.h>).
typedef struct mjdiffTerms_ mjdiffTerms;

// Inputs and outputs of mjdiff_rolloutGradient. Fill with mjdiff_defaultRolloutGrad (every
// pointer NULL, decay 0), then set what you have and what you want: a NULL input is zero, a NULL
// output is not computed. The loss is the sum of every input given.
typedef struct mjdiffRolloutGrad_ {
  // loss inputs (T: the rollout's horizon)
  const mjtNum* dLdx;          // ((T+1) x (2nv+na)) dense state gradients, tangent layout
  const mjtNum* dLdu;          // (T x nu) control gradients
  const mjtNum* dLds;          // (T x nsensordata) gradients in the readings at x_0 .. x_{T-1}
  const mjtNum* dLdx_T;        // (2nv+na) terminal state gradient, added to row T of dLdx
  const mjtNum* dLds_T;        // (nsensordata) gradient in the readings at x_T (controls held at
                               // u_{T-1}; their control derivative goes to u_{T-1})
  const mjdiffTerms* terms;    // loss terms, evaluated at their steps only
  const mjdiffStepLoss* step_loss;  // a loss callback, at its active steps only
  // outputs
  mjtNum* loss;                // (1) value of terms + step_loss (the dense inputs carry no value)
  mjtNum* grad_x0;             // (2nv+na) dL/dx_0, tangent layout
  mjtNum* grad_ctrl;           // (T x nu) dL/du_t (with a policy: the total through x)
  mjtNum* grad_theta;          // (nparam) policy parameters; required with a policy that has them
  mjtNum* grad_param;          // (np) model parameters of the rollout's selection
  mjtNum* grad_force;          // (nparam) parameters of the attached force model
                               // (mjdiff_rolloutSetForce); required with one that has them
  // option (last, so that the pointers above keep their offsets)
  mjtNum decay;                // 0 (or 1): the exact gradient. In (0, 1): the adjoint carried
                               // back through each step is scaled by decay, the gradient of the
                               // rollout with x_{t+1} = decay f(x_t, u_t) + (1 - decay) sg(f)
                               // (sg: held constant), so that a loss at step t reaches inputs k
                               // steps earlier weighted by decay^k. Not the loss's derivative
                               // (biased towards short-term effects); it tames the gradients of
                               // long rollouts through chaotic dynamics. Outside [0, 1]: refused
} mjdiffRolloutGrad;

// Every pointer NULL, decay 0 (the exact gradient).
MJDIFF_API void mjdiff_defaultRolloutGrad(mjdiffRolloutGrad* g);

// Backward sweep of the last forward rollout with the inputs and outputs in g. d is scratch; its
// state is left at x_T. Fails (MJDIFF_ERR_ARGUMENT) if g is NULL, no forward rollout was recorded,
// the terms were made for another model or decay is outside [0, 1] (or NaN),
// (MJDIFF_ERR_UNSUPPORTED) if a sensor gradient weights a sensor without a derivative, and
// (MJDIFF_ERR_NONFINITE) if a step-wise loss is not finite (err names the step). Units: a gradient
// of L is in the units of L per unit of the variable (per m, rad, m/s, control unit, kg of a mass
// ...).
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_rolloutGradient(const mjModel* m, mjData* d, const mjdiffModel* s,
                                               mjdiffRollout* r, const mjdiffRolloutGrad* g,
                                               char* err, int errsz);

// Positional form of mjdiff_rolloutGradient, kept as a thin wrapper for the code written against
// it (tools, tests): the same sweep with terms, step_loss, dLdx_T, dLds_T and loss unset. New code
// should prefer mjdiffRolloutGrad: its named fields cannot swap silently.
// Backward sweep of the last forward rollout, given loss gradients: dLdx ((T+1) x (2nv+na),
// tangent layout), dLdu (T x nu), dLds (T x nsensordata). Outputs: grad_x0 (2nv+na), grad_ctrl
// (T x nu: dL/du_t, through the policy's parameters when there is one), grad_theta (nparam),
// grad_param (np). d is scratch; its state is left at x_T. Fails (MJDIFF_ERR_ARGUMENT) if no
// forward rollout was recorded, and (MJDIFF_ERR_UNSUPPORTED) if dLds weights a sensor without a
// derivative.
// Nullable: dLdx, dLdu, dLds (zero), every output, err.
MJDIFF_API mjdiffStatus mjdiff_rolloutBackward(const mjModel* m, mjData* d, const mjdiffModel* s,
                                               mjdiffRollout* r, const mjtNum* dLdx,
                                               const mjtNum* dLdu, const mjtNum* dLds,
                                               mjtNum* grad_x0, mjtNum* grad_ctrl,
                                               mjtNum* grad_theta, mjtNum* grad_param,
                                               char* err, int errsz);

// A loss on a rollout, for batches: after the forward rollout of an item, fill its gradients
// (arrays zeroed by the caller; layouts as mjdiff_rolloutBackward) and return its value.
typedef struct mjdiffLoss_ {
  void* user;
  mjtNum (*grad)(const mjModel* m, int item, int horizon, const mjtNum* states,
                 const mjtNum* ctrl, const mjtNum* sensordata, void* user, mjtNum* dLdx,
                 mjtNum* dLdu, mjtNum* dLds);
} mjdiffLoss;

// One item of a batch: a start state and controls in; loss and gradients out.
typedef struct mjdiffBatchItem_ {
  const mjtNum* x0;            // start state (nq + nv + na), at time 0
  const mjtNum* ctrl;          // (T x nu)
  const mjtNum* param_values;  // nullable: values of the batch's parameters p for this item
  mjtNum* states;              // nullable outputs, as mjdiff_rolloutForward
  mjtNum* sensordata;
  mjtNum loss;                 // outputs: the loss value and gradients (nullable arrays)
  mjtNum* grad_x0;
  mjtNum* grad_ctrl;
  mjtNum* grad_param;
  mjdiffStatus status;         // set by mjdiff_rolloutBatch
} mjdiffBatchItem;

// Forward rollout, loss and backward sweep of many independent items on nthread threads, each
// thread with its own mjData and rollout; results identical to running the items one by one.
// Items with param_values run on the thread's own copies of m and s with those values set; m and
// s are not changed.
// Returns the first failing item's error (each item also records its own status). The loss
// callback is called from several threads at once.
// Nullable: opt, p, err.
MJDIFF_API mjdiffStatus mjdiff_rolloutBatch(const mjModel* m, const mjdiffModel* s,
                                            const mjdiffParams* p, int horizon,
                                            const mjdiffRolloutOptions* opt,
                                            const mjdiffLoss* loss, int nthread,
                                            mjdiffBatchItem* items, int nitem, char* err,
                                            int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_ROLLOUT_H_
