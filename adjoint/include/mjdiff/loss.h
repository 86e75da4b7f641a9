// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Loss terms on rollouts: the common costs as one vocabulary with mjdiff-mpc's task files
// (tools/mpc/mpc.h: position, control, ...), evaluated at chosen steps only, with their gradients
// in the rollout's layouts (<mjdiff/state.h>).
//
//   L = sum_terms sum_{t in steps} w n(r(x_t, u_t))
//   r    position   scale .* (pos(object) - target)      (3; world frame; m)
//                     body:NAME: the body frame's origin (xpos); site:NAME: the site (site_xpos)
//        sensor     scale .* (sensordata[adr ..] - target) (sensor_dim; the sensor's units)
//                     readings of the smooth forward pass at x_t (at x_T too: see below)
//        state      scale .* (x_t (-) target)            (2nv+na; mjdiff_stateDiff's difference)
//        control    scale .* (u_t - target)              (nu; steps 0..T-1 only)
//   n    quadratic  |r|^2 / 2               dn/dr = r
//        smoothabs  sqrt(|r|^2 + p^2) - p   dn/dr = r / sqrt(|r|^2 + p^2)
//        linear     sum_k r_k               dn/dr = 1   (a coordinate itself: scale selects it)
// Gradients (tangent layout):
//   position   dl/ddq = J_p' (w dn/dr .* scale), J_p = mj_jac at the point (3 x nv)
//   sensor     dl/ds  = w dn/dr .* scale, then the sensor VJP (C' dl/ds into x, D' into u)
//   state      dl/ddx = w dn/dr .* scale, except a ball or free rotation's 3 rows, where
//              r = log(target^-1 q) moves by J_r^-1(r) dw: dl/dw = J_r^-1(r)' (w dn/dr .* scale)
//   control    dl/du  = w dn/dr .* scale
// At x_T the forward pass (kinematics, sensors) runs with the controls held at u_{T-1} (what
// mj_forward on the rollout's final mjData computes); a control-dependent sensor there (an
// actuator force) sends its control derivative to u_{T-1}.

#ifndef MJDIFF_LOSS_H_
#define MJDIFF_LOSS_H_

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>
#include <mjdiff/smooth.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mjdiffTermType_ {
  MJDIFF_TERM_POSITION = 0,    // object "body:NAME" or "site:NAME"; r has 3 components
  MJDIFF_TERM_SENSOR,          // object "sensor:NAME" (or "NAME"); sensor_dim components
  MJDIFF_TERM_STATE,           // 2nv+na components; target a state (nq+nv+na)
  MJDIFF_TERM_CONTROL          // nu components
} mjdiffTermType;

typedef enum mjdiffNorm_ {
  MJDIFF_NORM_QUADRATIC = 0,   // |r|^2 / 2
  MJDIFF_NORM_SMOOTHABS,       // sqrt(|r|^2 + p^2) - p, p = norm_param > 0
  MJDIFF_NORM_LINEAR           // sum_k r_k
} mjdiffNorm;

// One term. Arrays are copied by mjdiff_makeTerms.
typedef struct mjdiffTerm_ {
  int type;                    // mjdiffTermType
  const char* object;          // position, sensor: the object's name (see the types)
  const mjtNum* target;        // nullable: position (3), sensor (sensor_dim), control (nu): zero;
                               // state (nq+nv+na): qpos0, zero velocity and activation
  const mjtNum* scale;         // nullable (all 1): per-component factor of r (3, sensor_dim,
                               // 2nv+na, nu); 0 drops a component
  mjtNum weight;               // w (default 1)
  int norm;                    // mjdiffNorm (default quadratic)
  mjtNum norm_param;           // p of smoothabs, in the units of r (default 0.01)
  const int* steps;            // steps the term applies at, 0..T; negative counts from the end
                               // (-1: x_T, -2: x_{T-1}); NULL: every step (control: 0..T-1)
  int nstep;                   // number of steps (with steps)
} mjdiffTerm;

// Fill term with the defaults: position, no object, zero target, scale 1, weight 1, quadratic,
// p = 0.01, every step.
MJDIFF_API void mjdiff_defaultTerm(mjdiffTerm* term);

// A set of terms made for one mjModel. Opaque; read-only once made (threads may share it).
typedef struct mjdiffTerms_ mjdiffTerms;

// Make a set of n terms of m; use it with m (or a copy of it: mj_copyModel, a batch's copies).
// Fails with MJDIFF_ERR_NAME for an unknown object (err names the term and object),
// MJDIFF_ERR_VALUE for a bad type, norm, weight or p, and MJDIFF_ERR_UNSUPPORTED for a sensor
// without a derivative (mjdiff_sensorSupported).
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_makeTerms(const mjModel* m, const mjdiffTerm* terms, int n,
                                         mjdiffTerms** out, char* err, int errsz);

// Free a set. NULL is a no-op.
MJDIFF_API void mjdiff_freeTerms(mjdiffTerms* terms);

// Nonzero if a term of the set applies at step t of a rollout of T steps.
MJDIFF_API int mjdiff_termsActive(const mjdiffTerms* terms, int t, int T);

// Value of the terms at step t of a rollout of T steps, at the state in d after the smooth forward
// pass (mjdiff_forward: kinematics, sensors) with controls d->ctrl. ADDS the gradients:
// dldx (2nv+na) in the state, dldu (nu; ignored at t = T) in the controls and dlds
// (nsensordata) in the sensor readings (turn these into state and control gradients with
// mjdiff_sensorVJP; mjdiff_rolloutGradient does). Uses d's stack (3 max(3, sensor_dim, 2nv+na,
// nu) + 4nv + nq + na numbers); NaN, with no gradient added, if it is too small.
// Nullable: dldx, dldu, dlds.
MJDIFF_API mjtNum mjdiff_evalTerms(const mjModel* m, mjData* d, const mjdiffTerms* terms, int t,
                                   int T, mjtNum* dldx, mjtNum* dldu, mjtNum* dlds);

// Value of the terms along a recorded trajectory (states ((T+1) x (nq+nv+na)) and ctrl (T x nu),
// as mjdiff_rolloutForward writes them), evaluating only the steps where a term applies (a
// smooth forward pass each, on d, whose state is left at x_T; time starts at d->time). For a line
// search, or for dense gradients: ADDS dLdx ((T+1) x (2nv+na)), dLdu (T x nu), dLds
// ((T+1) x nsensordata: row T the readings at x_T, which mjdiff_rolloutBackward's dLds does not
// take; use mjdiffRolloutGrad.dLds_T).
// Nullable: dLdx, dLdu, dLds, err.
MJDIFF_API mjdiffStatus mjdiff_trajectoryLoss(const mjModel* m, mjData* d, const mjdiffModel* s,
                                              const mjdiffTerms* terms, int T,
                                              const mjtNum* states, const mjtNum* ctrl,
                                              mjtNum* loss, mjtNum* dLdx, mjtNum* dLdu,
                                              mjtNum* dLds, char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_LOSS_H_
