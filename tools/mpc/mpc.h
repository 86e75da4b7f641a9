// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc: shared definitions of its parts.
//   task.c      tasks: a cost file kept with each model; residuals and their derivatives
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

//---------------------------------- tasks (task.c) -----------------------------------------------
//
// Cost file format (one term per line, '#' starts a comment; numbers in SI units):
//   horizon SECONDS                       planning horizon (default 0.5)
//   timestep SECONDS                      timestep of the planning model (default: the model's);
//                                         the plant keeps the model's own
//   duration SECONDS                      simulated time of a closed-loop run (default: the
//                                         tool's, 3 s)
//   terminal WEIGHT                       weight of the state terms at the horizon's end (default 1)
//   success TERM THRESHOLD                the task succeeds when |r| of term index TERM (0-based)
//                                         stays below THRESHOLD (for the benchmark)
//   position OBJ TARGET WEIGHT [NORM P]   r = pos(OBJ) - pos(TARGET); OBJ, TARGET: body:NAME,
//                                         site:NAME or a point "x y z"
//   upright OBJ WEIGHT [NORM P]           r = 1 - z-axis(OBJ) . world z (OBJ: body:/site:)
//   joint NAME TARGET WEIGHT [NORM P]     r = qpos(NAME) - TARGET (hinge/slide)
//   jointvel NAME TARGET WEIGHT [NORM P]  r = qvel(NAME) - TARGET
//   velocity OBJ VX VY VZ WEIGHT [NORM P] r = linear velocity(OBJ) - (VX VY VZ) (world frame;
//                                         "nan" components are not penalised)
//   control WEIGHT [NORM P]               r = ctrl (all actuators)
// NORM: quadratic (default) or smoothabs with parameter P (m or rad).

typedef struct mpcTask_ mpcTask;

// Read a task for model m; NULL with a message naming the file and line on error.
mpcTask* mpc_readTask(const mjModel* m, const char* path, char* err, int errsz);

// the same from an open file f (not closed), named path in messages
mpcTask* mpc_readTaskFile(const mjModel* m, FILE* f, const char* path, char* err, int errsz);
void mpc_freeTask(mpcTask* task);

double mpc_taskHorizon(const mpcTask* task);
double mpc_taskTimestep(const mpcTask* task);  // 0: the model's
double mpc_taskDuration(const mpcTask* task);  // 0: none given

// running cost l(x, u) at the state in d (kinematics and velocities computed: after
// mjdiff_forward or mj_forward), with its gradients in the tangent layout: dldx (2nv+na), dldu
// (nu); terminal: the state terms times the terminal weight, u ignored. Nullable: dldx, dldu.
double mpc_cost(const mpcTask* task, const mjModel* m, mjData* d, int terminal, double* dldx,
                double* dldu);

// Gauss-Newton second derivatives of the cost: lxx (ndx x ndx), luu (nu x nu) (from the
// residual Jacobians; quadratic norms exact, smoothabs its Gauss-Newton part). Nullable.
void mpc_costHessian(const mpcTask* task, const mjModel* m, mjData* d, int terminal, double* lxx,
                     double* luu);

// 1 if the task's success term is below its threshold at the state in d
int mpc_success(const mpcTask* task, const mjModel* m, mjData* d);

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
                            const mpcTask* task, int nthread, unsigned long long seed, char* err,
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

// the current plan: controls (H x nu) and its predicted states (H+1 x (nq+nv+na)); sizes in H
const double* mpc_planControls(const mpcPlanner* p, int* H);
const double* mpc_planStates(const mpcPlanner* p, int* H);

#endif  // MJDIFF_TOOLS_MPC_H_
