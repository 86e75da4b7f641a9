// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Tasks: a cost file kept with each model, its residuals and their derivatives (tasks/task.c).
// A library piece every tool can use (mjdiff-mpc's planners, mjdiff-bench-reach, and the
// estimation and design tools); the static library mjdiff_tasks. Like the rest of the library it
// never prints or exits: errors come back in err, naming the file, the line and the field.
//
// Cost of a trajectory x_0..x_H under controls u_0..u_{H-1} (all terms of the task):
//   J = sum_{t=0}^{H-1} l(x_t, u_t) + l_H(x_H),  l = sum_i w_i n_i(r_i(x, u)),  l_H = terminal
//   weight times the state terms. Norms n: quadratic 1/2 |r|^2, smoothabs sqrt(|r|^2 + p^2) - p.
//
// Cost file format (one term per line, '#' starts a comment; numbers in SI units):
//   horizon SECONDS                       planning horizon (default 0.5)
//   timestep SECONDS                      timestep of the planning model (default: the model's);
//                                         the plant keeps the model's own
//   duration SECONDS                      simulated time of a closed-loop run (default: the
//                                         tool's, 3 s)
//   terminal WEIGHT                       weight of the state terms at the horizon's end
//                                         (default 1)
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

#ifndef MJDIFF_TASK_H_
#define MJDIFF_TASK_H_

#include <stdio.h>

#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mjdiffTask_ mjdiffTask;

// Read a task for model m; NULL with a message naming the file and line on error.
mjdiffTask* mjdiff_readTask(const mjModel* m, const char* path, char* err, int errsz);

// the same from an open file f (not closed), named path in messages
mjdiffTask* mjdiff_readTaskFile(const mjModel* m, FILE* f, const char* path, char* err,
                                int errsz);
void mjdiff_freeTask(mjdiffTask* task);

double mjdiff_taskHorizon(const mjdiffTask* task);
double mjdiff_taskTimestep(const mjdiffTask* task);  // 0: the model's
double mjdiff_taskDuration(const mjdiffTask* task);  // 0: none given

// running cost l(x, u) at the state in d (kinematics and velocities computed: after
// mjdiff_forward or mj_forward), with its gradients in the tangent layout: dldx (2nv+na), dldu
// (nu); terminal: the state terms times the terminal weight, u ignored. Nullable: dldx, dldu.
double mjdiff_taskCost(const mjdiffTask* task, const mjModel* m, mjData* d, int terminal,
                       double* dldx, double* dldu);

// Gauss-Newton second derivatives of the cost: lxx (ndx x ndx), luu (nu x nu) (from the
// residual Jacobians; quadratic norms exact, smoothabs its Gauss-Newton part). Nullable.
void mjdiff_taskCostHessian(const mjdiffTask* task, const mjModel* m, mjData* d, int terminal,
                            double* lxx, double* luu);

// 1 if the task's success term is below its threshold at the state in d
int mjdiff_taskSuccess(const mjdiffTask* task, const mjModel* m, mjData* d);

// A copy of task (its own terms; the model it was read for is the same); NULL if out of memory.
mjdiffTask* mjdiff_copyTask(const mjdiffTask* task);

// Number of terms.
int mjdiff_taskTermCount(const mjdiffTask* task);

// The fixed target point of position term `term` (a goal that a learner randomises): read into
// p or set from p (3, m). Returns 0, or -1 if term is out of range or not a position term whose
// target is a fixed point "x y z".
int mjdiff_taskGetPoint(const mjdiffTask* task, int term, double p[3]);
int mjdiff_taskSetPoint(mjdiffTask* task, int term, const double p[3]);

// The moving object of position term `term`: *type mjOBJ_BODY or mjOBJ_SITE and *id, or
// mjOBJ_UNKNOWN for a fixed point. Returns 0, or -1 if term is out of range or not a position term.
int mjdiff_taskGetObject(const mjdiffTask* task, int term, int* type, int* id);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_TASK_H_
