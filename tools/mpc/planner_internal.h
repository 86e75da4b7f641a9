// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc, private: hooks into the planners (planner.c) for the tests.
//
// Knot planners (gradient, sampling, CEM, MPPI) parametrise the H x nu controls by nknot knots,
// one every K steps, linearly interpolated:
//   u_t = (1 - f) z_j + f z_{j+1},  j = floor(t / K),  f = (t mod K) / K
// iLQR plans every step's control directly.

#ifndef MJDIFF_TOOLS_MPC_PLANNER_INTERNAL_H_
#define MJDIFF_TOOLS_MPC_PLANNER_INTERNAL_H_

#include "mpc.h"

#ifdef __cplusplus
extern "C" {
#endif

// Number of knots of a knot planner (0 for iLQR); steps per knot in steps_per_knot.
// Nullable: steps_per_knot.
int mpc_plannerKnots(const mpcPlanner* p, int* steps_per_knot);

// The gradient planner's objective J(z) for knots z (nknot x nu) from the state in d (not
// changed), and its gradient dJ/dz (nknot x nu) through the rollout adjoint. INFINITY if the
// rollout fails, NAN if p is not a gradient planner. Nullable: grad.
double mpc_plannerObjective(mpcPlanner* p, const mjData* d, const double* knots, double* grad);

// Cost J of the controls ctrl (H x nu) from the state in d (not changed), as every planner
// evaluates a rollout; its states ((H+1) x (nq+nv+na)). INFINITY if the rollout fails.
// Nullable: states.
double mpc_plannerRolloutCost(mpcPlanner* p, const mjData* d, const double* ctrl, double* states);

// Testing: run exactly maxiter iterations per mpc_plan call, whatever the budget (0: by the
// budget), with nsample samples per iteration for the sampling planners (0: sized to the budget).
void mpc_plannerSetIterations(mpcPlanner* p, int maxiter, int nsample);

// Cost of the last mpc_plan call's warm start, before its iterations (NAN for the gradient
// planner, whose first iteration evaluates it).
double mpc_plannerWarmCost(const mpcPlanner* p);

// Iterations run by the last mpc_plan call, and the samples per iteration it used (sampling
// planners; 0 otherwise). Nullable: nsample.
int mpc_plannerIterations(const mpcPlanner* p, int* nsample);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_TOOLS_MPC_PLANNER_INTERNAL_H_
