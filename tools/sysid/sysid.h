// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid: shared definitions of its parts.
//   data.c      recordings: CSV reading and writing, alignment to the model timestep
//   optim.c     least-squares optimisers: Levenberg-Marquardt (exact or finite-difference
//               Jacobians), Nelder-Mead; bounds by reparameterisation; standard errors
//   residual.c  residuals of a model against recordings (multiple shooting) and their exact
//               Jacobians from the step adjoint
//   sysid.c     the command line tool

#ifndef MJDIFF_TOOLS_SYSID_H_
#define MJDIFF_TOOLS_SYSID_H_

#include <stdio.h>

#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>

//---------------------------------- recordings (data.c) ------------------------------------------
//
// CSV format: a header row of column names, then one row of numbers per sample, time increasing.
//   time                  time of the sample (s), required, strictly increasing
//   ctrl:ACTUATOR         control of an actuator (held from its sample to the next: zero-order hold)
//   qpos:JOINT            position of a hinge or slide joint (rad or m); ball/free joints:
//                         qpos:JOINT:K, K = 0..3 (ball quaternion w x y z) or 0..6 (free: x y z,
//                         then the quaternion)
//   qvel:JOINT            velocity (rad/s or m/s); ball/free: qvel:JOINT:K, K = 0..2 or 0..5
//   sensor:SENSOR         a 1-dimensional sensor's reading; sensor:SENSOR:K for component K
// Columns may come in any order; any subset of qpos, qvel and sensor columns may be present.
// Measurements are aligned to the model's step times by linear interpolation between samples;
// controls by zero-order hold. Steps outside the recording's time span are not measured.

// what a recording measures, aligned to the model's steps
typedef struct sysidRecording_ {
  char path[512];
  int T;                       // number of steps covered (measurements at steps 0..T)
  double t0;                   // time of step 0 (the first sample)
  double* ctrl;                // (T x nu) controls, zero where an actuator has no column
  int* has_ctrl;               // (nu) 1 if the actuator has a column
  double* qpos;                // ((T+1) x nq) measured positions (NaN: not measured)
  double* qvel;                // ((T+1) x nv)
  double* sensor;              // ((T+1) x nsensordata)
  int nrow;                    // samples in the file
} sysidRecording;

// Read a CSV recording for model m. Returns 0, or -1 with a message naming the file, row and
// column in err (unknown column name, unparsable number, NaN, a value beyond 1e10, time not
// increasing, two samples more than 1000 timesteps apart, missing time column, no data rows, a
// NUL byte, a line longer than 16 MiB, a last row without its line end).
int sysid_readRecording(const mjModel* m, const char* path, sysidRecording* rec, char* err,
                        int errsz);

// the same from an open file f (not closed), named path in messages
int sysid_readRecordingFile(const mjModel* m, FILE* f, const char* path, sysidRecording* rec,
                            char* err, int errsz);
void sysid_freeRecording(sysidRecording* rec);

// Write a CSV recording: header from the model's names, one row per step t = 0..T: time, every
// actuator's control (the last row repeats the last control), every joint's qpos and qvel, every
// sensor's reading. Writes to path.tmp and renames, so a failed write leaves no file that looks
// complete. Returns 0 or -1 (err).
int sysid_writeRecording(const mjModel* m, const char* path, int T, double t0,
                         const double* ctrl, const double* qpos, const double* qvel,
                         const double* sensor, char* err, int errsz);

// Columns of a full recording of m: time, then ctrl (nu), qpos (nq), qvel (nv) and sensor
// (nsensordata) values in the order of those arrays; sysid_writeRecording writes them in this
// order, leaving out those of elements without a name and those of NULL or all-NaN arrays.
int sysid_columnCount(const mjModel* m);

// Name of column i (0 <= i < sysid_columnCount) into buf ("time", "ctrl:motor1", "qpos:box:3",
// "sensor:box_pos:0"). Returns 0, or -1 (buf "") if i is out of range, the element has no name
// or the name does not fit in bufsz.
int sysid_columnName(const mjModel* m, int i, char* buf, int bufsz);

//---------------------------------- least squares (optim.c) --------------------------------------
//
// minimise  F(z) = 1/2 |r(z)|^2  over z in R^n, r in R^m, with optional bounds per variable
// handled by reparameterisation: z = lo + (hi - lo) (1 + sin y) / 2 (both), lo + exp(y) (lower
// only, used for positive physical parameters), hi - exp(y) (upper only), z = y (none).

// the residual function: fill r (m) and, when J is not NULL, its Jacobian J (m x n, row-major)
// at z; return 0, or nonzero if the point cannot be evaluated (the optimiser backs off)
typedef int (*sysidResidualFn)(void* user, const double* z, double* r, double* J);

typedef struct sysidProblem_ {
  int n, m;                    // variables, residuals
  const double* lo;            // (n) lower bounds (-INFINITY: none); nullable
  const double* hi;            // (n) upper bounds (INFINITY: none); nullable
  sysidResidualFn residual;
  void* user;
} sysidProblem;

typedef enum sysidMethod_ {
  SYSID_LM_EXACT = 0,          // Levenberg-Marquardt with the residual's own Jacobian
  SYSID_LM_FD,                 // Levenberg-Marquardt with forward-difference Jacobians
  SYSID_NELDER_MEAD            // derivative-free
} sysidMethod;

typedef struct sysidOptions_ {
  sysidMethod method;
  int max_iter;                // iterations (default 100; Nelder-Mead: 200 n)
  double ftol;                 // stop when the relative decrease of F is below ftol (1e-10)
  double xtol;                 // stop when the relative step is below xtol (1e-10)
  double gtol;                 // stop when the gradient's max norm is below gtol (1e-12)
  double fd_eps;               // relative step of finite-difference Jacobians (1e-6)
  int verbose;                 // 1: one progress line per iteration on stderr
  volatile int* cancel;        // nullable: set nonzero to stop (then status "interrupted")
} sysidOptions;

typedef struct sysidResult_ {
  double F0, F;                // cost at start and end
  int iterations;
  int evaluations;             // residual evaluations (without Jacobian)
  int jacobians;               // residual evaluations with Jacobian
  const char* status;          // "converged (ftol)", "converged (xtol)", "converged (gtol)",
                               // "max iterations", "interrupted", "failed"
  double* stderr_z;            // (n) standard errors from the Gauss-Newton Hessian
                               // sqrt(diag((J'J)^-1) * 2F / (m - n)); NaN if singular
} sysidResult;

void sysid_defaultOptions(sysidOptions* opt);

// Minimise from z (n, updated in place). result->stderr_z is allocated (free with
// sysid_freeResult). Returns 0, or -1 if the start point cannot be evaluated.
int sysid_solve(const sysidProblem* prob, const sysidOptions* opt, double* z,
                sysidResult* result);
void sysid_freeResult(sysidResult* result);

#endif  // MJDIFF_TOOLS_SYSID_H_
