// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc: shared definitions of its parts.
//   tasks/      tasks (the library layer <mjdiff/task.h>): a cost file kept with each model;
//               residuals and their derivatives
//   planner.c   planners behind one interface: gradient (Adam on the rollout adjoint), iLQR on the
//               analytic step Jacobians, and sampling baselines (predictive sampling, CEM, MPPI)
//   loop.c      closed loop: plan on the smooth model, act on the smooth or the native plant
//   mpc.c       the command line tool (run, bench), viewer.c the GLFW viewer
//
// Cost of a trajectory x_0..x_H under controls u_0..u_{H-1} (all terms of the task):
//   J = sum_{t=0}^{H-1} l(x_t, u_t) + l_H(x_H),  l = sum_i w_i n_i(r_i(x, u)),  l_H = terminal
//   weight times the state terms. Norms n: quadratic 1/2 |r|^2, smoothabs sqrt(|r|^2 + p^2) - p.

#ifndef MJDIFF_TOOLS_MPC_H_
#define MJDIFF_TOOLS_MPC_H_

#include <stdio.h>

#include <mjdiff/mjdiff.h>
#include <mjdiff/task.h>

//---------------------------------- tasks (<mjdiff/task.h>) -------------------------------------
//
// The task costs live in the library layer tasks/ (tasks/task.c, the static library
// mjdiff_tasks), shared by every tool; the file format is described in <mjdiff/task.h>. The mpc_
// names below are that API under the names this tool's tests and fuzz targets use.

typedef mjdiffTask mpcTask;

static inline mpcTask* mpc_readTask(const mjModel* m, const char* path, char* err, int errsz) {
  return mjdiff_readTask(m, path, err, errsz);
}
static inline mpcTask* mpc_readTaskFile(const mjModel* m, FILE* f, const char* path, char* err,
                                        int errsz) {
  return mjdiff_readTaskFile(m, f, path, err, errsz);
}
static inline void mpc_freeTask(mpcTask* task) { mjdiff_freeTask(task); }
static inline double mpc_taskHorizon(const mpcTask* task) { return mjdiff_taskHorizon(task); }
static inline double mpc_taskTimestep(const mpcTask* task) { return mjdiff_taskTimestep(task); }
static inline double mpc_taskDuration(const mpcTask* task) { return mjdiff_taskDuration(task); }
static inline double mpc_cost(const mpcTask* task, const mjModel* m, mjData* d, int terminal,
                              double* dldx, double* dldu) {
  return mjdiff_taskCost(task, m, d, terminal, dldx, dldu);
}
static inline void mpc_costHessian(const mpcTask* task, const mjModel* m, mjData* d, int terminal,
                                   double* lxx, double* luu) {
  mjdiff_taskCostHessian(task, m, d, terminal, lxx, luu);
}
static inline int mpc_success(const mpcTask* task, const mjModel* m, mjData* d) {
  return mjdiff_taskSuccess(task, m, d);
}

//---------------------------------- planners (planner.c) -----------------------------------------

typedef enum mpcPlannerType_ {
  MPC_GRADIENT = 0,            // Adam on raw controls with the rollout adjoint
  MPC_ILQR,                    // iLQR (Gauss-Newton DDP) on the analytic step Jacobians
  MPC_SAMPLING,                // predictive sampling (MJPC)
  MPC_CEM,                     // cross-entropy method
  MPC_MPPI                     // model predictive path integral
} mpcPlannerType;

typedef struct mpcPlanner_ mpcPlanner;

// A planner for model m with smooth model s and task. It plans on m, or, when the task gives a
// planning timestep, on its own copy of m and s with that timestep; H = round(horizon / planning
// timestep) steps. nthread: threads it may use (a pool made here: rollouts, derivatives and line
// search candidates are spread over them). m and s must outlive the planner.
mpcPlanner* mpc_makePlanner(mpcPlannerType type, const mjModel* m, const mjdiffModel* s,
                            const mjdiffTask* task, int nthread, unsigned long long seed, char* err,
                            int errsz);
void mpc_freePlanner(mpcPlanner* p);
const char* mpc_plannerName(mpcPlannerType type);

// Improve the plan from the state in d (qpos, qvel, act, time; d is not changed) while the next
// iteration is expected to end within budget seconds of wall time (at least one iteration, which
// may overrun a budget shorter than itself); the plan is warm-started from the previous call's,
// shifted by `shift` steps of m (iLQR: its feedback policy around the shifted plan). Writes the
// first control (nu) to ctrl; returns the plan's cost.
double mpc_plan(mpcPlanner* p, const mjData* d, double budget, int shift, double* ctrl);

// Gradient planner: plan with the smooth model's long-range contact term (<mjdiff/reach.h>) at
// the schedule's strength a_k of its k-th iteration, k counted over every mpc_plan call from this
// one on, on a smooth model of its own (the caller's, which the plant may use, is not changed).
// 0 with a message in err if p is not a gradient planner or the schedule is invalid.
int mpc_plannerSetReach(mpcPlanner* p, const mjdiffReachSchedule* sched, char* err, int errsz);

// Set parameter values (prm: a selection of <mjdiff/params.h> made on a model of the planner's
// sizes) on the planning model and its smooth model: the planner's copy, or the caller's m and s
// when it plans on them (they change). 0 with a message (a value out of range: nothing changed).
int mpc_plannerSetParamValues(mpcPlanner* p, const mjdiffParams* prm, const double* values,
                              char* err, int errsz);

// the current plan: controls (H x nu) and its predicted states (H+1 x (nq+nv+na)); sizes in H
const double* mpc_planControls(const mpcPlanner* p, int* H);
const double* mpc_planStates(const mpcPlanner* p, int* H);

#endif  // MJDIFF_TOOLS_MPC_H_
