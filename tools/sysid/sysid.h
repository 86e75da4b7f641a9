// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid: shared definitions of its parts.
//   recordings: tools/common/recording.c (CSV reading and writing, alignment to the model
//               timestep), shared with mjdiff-estimate
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

//---------------------------------- recordings (tools/common/recording.h) ---------------------

#include "recording.h"

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
