// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Shared optimisers. Adam with gradient-norm clipping and a learning-rate schedule, one for every
// tool (mjdiff-mpc's gradient planner, training of networks):
//   c   = min(1, clip / |g|)   (clip > 0; else c = 1)       g <- c g
//   m   = b1 m + (1 - b1) g     v = b2 v + (1 - b2) g .* g   t <- t + 1
//   d   = (m / (1 - b1^t)) ./ (sqrt(v / (1 - b2^t)) + eps)  (Adam's direction)
//   x  <- x - lr(t - 1) d
// Schedules of the rate lr(k), k = 0, 1, .. the number of steps taken before this one:
//   constant     lr(k) = lr
//   cosine       lr(k) = lr_min + (lr - lr_min) (1 + cos(pi min(k, T) / T)) / 2,  T = decay_steps
//   step         lr(k) = lr gamma^floor(k / T)
//   exponential  lr(k) = lr gamma^(k / T)
// times (k + 1) / W during a linear warm-up of W = warmup_steps steps (k < W).
// Shape (OSQP's): options with defaults, a workspace made once, an info struct; status
// (converged, max iterations, cancelled) apart from errors.

#ifndef MJDIFF_OPTIM_H_
#define MJDIFF_OPTIM_H_

#include <mjdiff/base.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mjdiffSchedule_ {
  MJDIFF_LR_CONSTANT = 0,
  MJDIFF_LR_COSINE,
  MJDIFF_LR_STEP,
  MJDIFF_LR_EXPONENTIAL
} mjdiffSchedule;

typedef struct mjdiffAdamOptions_ {
  double lr;                   // base learning rate (default 1e-3)
  double beta1;                // first-moment decay, in [0, 1) (default 0.9)
  double beta2;                // second-moment decay, in [0, 1) (default 0.999)
  double eps;                  // denominator guard, > 0 (default 1e-8)
  double clip_norm;            // > 0: the gradient's 2-norm is clipped to it; 0: off (default 0)
  int schedule;                // mjdiffSchedule (default constant)
  int decay_steps;             // T of the schedules, >= 1 (default 1000)
  double decay_gamma;          // gamma of step and exponential, in (0, 1] (default 0.1)
  double lr_min;               // cosine's floor, in [0, lr] (default 0)
  int warmup_steps;            // linear warm-up, >= 0 steps (default 0)
} mjdiffAdamOptions;

// Outcome of one step.
typedef struct mjdiffAdamInfo_ {
  int iter;                    // steps taken, this one included
  double lr;                   // the rate this step used
  double grad_norm;            // 2-norm of the gradient given (before clipping)
  double clip_scale;           // c: the factor clipping applied (1: none)
} mjdiffAdamInfo;

// Fill opt with the defaults above.
MJDIFF_API void mjdiff_defaultAdamOptions(mjdiffAdamOptions* opt);

// The rate of step k (0-based) under opt's schedule. Options are not validated (see makeAdam).
MJDIFF_API double mjdiff_adamRate(const mjdiffAdamOptions* opt, int k);

// Adam's state for n variables: options (copied), moments, step count. Opaque; one per
// optimisation (it is not shared between threads).
typedef struct mjdiffAdam_ mjdiffAdam;

// Make Adam for n >= 1 variables; moments start at zero. Fails with MJDIFF_ERR_VALUE naming the
// option for an out-of-range option. Nullable: opt (defaults), err.
MJDIFF_API mjdiffStatus mjdiff_makeAdam(int n, const mjdiffAdamOptions* opt, mjdiffAdam** out,
                                        char* err, int errsz);

// Free; NULL is a no-op.
MJDIFF_API void mjdiff_freeAdam(mjdiffAdam* adam);

// Zero the moments and the step count.
MJDIFF_API void mjdiff_resetAdam(mjdiffAdam* adam);

// Steps taken.
MJDIFF_API int mjdiff_adamIter(const mjdiffAdam* adam);

// One update of the moments with grad (n, clipped first) and Adam's direction d into dir (n);
// for callers that choose their own step (a line search on x - a d). A non-finite gradient gets
// MJDIFF_ERR_NONFINITE and leaves the state unchanged. Allocates nothing. Nullable: info.
MJDIFF_API mjdiffStatus mjdiff_adamDirection(mjdiffAdam* adam, const double* grad, double* dir,
                                             mjdiffAdamInfo* info);

// One Adam step in place: x <- x - lr(k) d (the direction as above, lr(k) from the schedule).
// A non-finite gradient gets MJDIFF_ERR_NONFINITE and changes nothing. Allocates nothing.
// Nullable: info.
MJDIFF_API mjdiffStatus mjdiff_adamStep(mjdiffAdam* adam, double* x, const double* grad,
                                        mjdiffAdamInfo* info);

// Outcome of mjdiff_adamMinimize (errors are reported apart, as mjdiffStatus).
typedef enum mjdiffOptimStatus_ {
  MJDIFF_OPTIM_CONVERGED = 0,  // |g| <= gtol
  MJDIFF_OPTIM_MAXITER,        // maxiter steps taken
  MJDIFF_OPTIM_CANCELLED       // the callback returned nonzero
} mjdiffOptimStatus;

// Objective and gradient at x (n): returns 0 to go on, nonzero to cancel; writes f and g (n).
typedef int (*mjdiffObjectiveGrad)(void* user, const double* x, double* f, double* g);

// Minimise by Adam steps from x (n, updated in place) until |g| <= gtol (gtol >= 0) or maxiter
// steps; grad is the caller's scratch (n). outcome: mjdiffOptimStatus; f: the last objective.
// Fails with MJDIFF_ERR_NONFINITE for a non-finite objective or gradient (x holds the last
// finite iterate). Nullable: outcome, f, info (the last step's).
MJDIFF_API mjdiffStatus mjdiff_adamMinimize(mjdiffAdam* adam, double* x, double* grad,
                                            mjdiffObjectiveGrad fg, void* user, int maxiter,
                                            double gtol, int* outcome, double* f,
                                            mjdiffAdamInfo* info);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_OPTIM_H_
