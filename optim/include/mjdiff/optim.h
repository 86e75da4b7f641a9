// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Shared optimisers: least squares (Levenberg-Marquardt, Nelder-Mead; below, optim/lsq.c), CMA-ES
// (derivative-free, with box bounds; below, optim/cmaes.c) and Adam with gradient-norm clipping and a learning-rate schedule, one for every
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
  MJDIFF_OPTIM_CONVERGED = 0,  // Adam: |g| <= gtol; CMA-ES: tol_x or tol_fun met
  MJDIFF_OPTIM_MAXITER,        // maxiter steps taken
  MJDIFF_OPTIM_CANCELLED,      // the callback returned nonzero
  MJDIFF_OPTIM_TARGET,         // CMA-ES: an objective value <= ftarget was found
  MJDIFF_OPTIM_MAXEVALS,       // CMA-ES: another generation would exceed max_evals
  MJDIFF_OPTIM_STALLED         // CMA-ES: the covariance's condition number exceeds 1e14, or a
                               // step of 0.2 sigma sqrt(C_ii) no longer changes a mean m_i
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


//---------------------------------- least squares ------------------------------------------------
//
// minimise  F(z) = 1/2 |r(z)|^2  over z in R^n, r in R^m (optim/lsq.c: its header comment has the
// equations), with optional bounds per variable handled by reparameterisation:
// z = lo + (hi - lo) (1 + sin y) / 2 (both), lo + exp(y) (lower only), hi - exp(y) (upper only),
// z = y (none), z = lo (lo = hi: fixed). Methods: Levenberg-Marquardt with the residual's own
// Jacobian or forward differences, and Nelder-Mead. Nothing is printed: progress goes to the
// caller's callback.
//
// Block structure (optional, Levenberg-Marquardt with exact Jacobians): z = (p, d_0, ..., d_{B-1}),
// p the np "border" variables (physical parameters) and d_b blocks of bs variables (multiple
// shooting: a window's start state) such that every residual depends on p and at most two
// consecutive blocks d_b, d_{b+1}. J'J is then block tridiagonal in d with a dense border in p;
// the caller accumulates it block by block (mjdiffLsqNormal) and the solver eliminates the blocks
// (a block Cholesky of the tridiagonal part, then the Schur complement on p), so that time and
// memory grow linearly with B and no m x n Jacobian is ever stored.

// the residual function: fill r (m) and, when J is not NULL, its Jacobian J (m x n, row-major)
// at z; return 0, or nonzero if the point cannot be evaluated (the optimiser backs off)
typedef int (*mjdiffLsqResidual)(void* user, const double* z, double* r, double* J);

// J'J and J'r of a block-structured problem (all in z's coordinates, zeroed by the solver before
// each call; the callee adds its rows' contributions)
typedef struct mjdiffLsqBlocks_ {
  double* Hpp;                 // (np x np)          J_p'J_p
  double* Hdp;                 // (B x bs x np)      block b: J_{d_b}'J_p
  double* Hdd;                 // (B x bs x bs)      block b: J_{d_b}'J_{d_b}
  double* Hdo;                 // ((B-1) x bs x bs)  block b: J_{d_b}'J_{d_{b+1}}
  double* g;                   // (n)                J'r
} mjdiffLsqBlocks;

// the block-structured residual function: fill r (m) and, when H is not NULL, add the normal
// equations' blocks of J at z to H; 0, or nonzero if z cannot be evaluated
typedef int (*mjdiffLsqNormal)(void* user, const double* z, double* r, mjdiffLsqBlocks* H);

typedef struct mjdiffLsqProblem_ {
  int n, m;                    // variables, residuals
  const double* lo;            // (n) lower bounds (-INFINITY: none); nullable
  const double* hi;            // (n) upper bounds (INFINITY: none); nullable
  mjdiffLsqResidual residual;  // dense residual and Jacobian (nullable if normal is given and
                               // the method is MJDIFF_LSQ_LM)
  void* user;
  // block structure (all zero/NULL: none); n = np + nblock bs
  int np, nblock, bs;
  mjdiffLsqNormal normal;      // nullable
} mjdiffLsqProblem;

typedef enum mjdiffLsqMethod_ {
  MJDIFF_LSQ_LM = 0,           // Levenberg-Marquardt with the residual's own Jacobian
  MJDIFF_LSQ_LM_FD,            // Levenberg-Marquardt with forward-difference Jacobians
  MJDIFF_LSQ_NELDER_MEAD       // derivative-free
} mjdiffLsqMethod;

typedef enum mjdiffLsqSolver_ {
  MJDIFF_LSQ_AUTO = 0,         // blocks when the problem has them (and the method is LM)
  MJDIFF_LSQ_DENSE,            // the dense m x n Jacobian (residual)
  MJDIFF_LSQ_BLOCKS            // the block normal equations (normal)
} mjdiffLsqSolver;

// one progress report: after the start point (iter 0) and after each iteration
typedef struct mjdiffLsqProgress_ {
  int iter;
  double F;                    // current (best) cost
  double step;                 // |h| (LM: the trial step's; Nelder-Mead: the simplex's size); NaN at 0
  double lambda;               // LM damping the step used (NaN for Nelder-Mead)
  int evals;                   // residual calls so far
} mjdiffLsqProgress;

typedef void (*mjdiffLsqProgressFn)(void* user, const mjdiffLsqProgress* info);

typedef struct mjdiffLsqOptions_ {
  int method;                  // mjdiffLsqMethod (default MJDIFF_LSQ_LM)
  int solver;                  // mjdiffLsqSolver (default MJDIFF_LSQ_AUTO)
  int max_iter;                // iterations; < 0: the method's default (100; Nelder-Mead 200 n);
                               // 0: none (the start point is evaluated, with standard errors)
  double ftol;                 // stop when the relative decrease of F is below ftol (1e-10)
  double xtol;                 // stop when the relative step is below xtol (1e-10)
  double gtol;                 // stop when the gradient's max norm is below gtol (1e-12)
  double fd_eps;               // relative step of finite-difference Jacobians (1e-6)
  double cond_max;             // above: the fit is poorly conditioned (1e10; see result.cond)
  mjdiffLsqProgressFn progress;  // nullable
  void* progress_user;
  volatile int* cancel;        // nullable: set nonzero to stop (then status "interrupted")
} mjdiffLsqOptions;

typedef struct mjdiffLsqResult_ {
  double F0, F;                // cost at start and end
  int iterations;
  int evaluations;             // residual evaluations (without Jacobian)
  int jacobians;               // residual evaluations with Jacobian (or normal equations)
  const char* status;          // "converged (ftol)", "converged (xtol)", "converged (gtol)",
                               // "max iterations", "interrupted", "failed"
  int converged;               // 1 if status starts with "converged"
  double cond;                 // condition number of the Gauss-Newton Hessian J'J (scaled to a
                               // unit diagonal) over the reported variables: all free ones
                               // (dense), p (blocks: its Schur complement); inf if singular
  int reliable;                // converged, cond <= cond_max and every reported stderr finite
  double* stderr_z;            // (n) standard errors from the Gauss-Newton Hessian
                               // sqrt(diag((J'J)^-1) * 2F / (m - n)); NaN if singular; blocks:
                               // p only, the d entries NaN
} mjdiffLsqResult;

// Fill opt with the defaults above.
MJDIFF_API void mjdiff_defaultLsqOptions(mjdiffLsqOptions* opt);

// Minimise from z (n, updated in place). result->stderr_z is allocated (free with
// mjdiff_freeLsqResult). Returns MJDIFF_OK (whatever result->status: an unconverged fit is a
// result), else, with err naming the cause: MJDIFF_ERR_ARGUMENT (NULL), MJDIFF_ERR_VALUE (the
// problem or options: the field and value), MJDIFF_ERR_MEMORY, MJDIFF_ERR_NONFINITE (the start
// point cannot be evaluated). Nullable: opt (defaults), err.
MJDIFF_API mjdiffStatus mjdiff_lsqSolve(const mjdiffLsqProblem* prob, const mjdiffLsqOptions* opt,
                                        double* z, mjdiffLsqResult* result, char* err,
                                        int errsz);
MJDIFF_API void mjdiff_freeLsqResult(mjdiffLsqResult* result);


//---------------------------------- CMA-ES -------------------------------------------------------
//
// minimise f(x) over x in R^n, lo <= x <= hi (optional), without derivatives: the covariance
// matrix adaptation evolution strategy of Hansen's tutorial (arXiv:1604.00772; optim/cmaes.c
// has the equations), with default population lambda = 4 + floor(3 ln n), mu = lambda / 2
// log-weighted parents, cumulative step-size adaptation and rank-one plus rank-mu covariance
// updates. Samples outside the box are projected onto it; the projected points are evaluated and
// used for the update, ranked by f plus a penalty on the squared projection distance. Meant for
// small n (the covariance is n x n and its eigendecomposition O(n^3)); variables with lo = hi are
// held fixed and left out of the search. Deterministic for a seed (<mjdiff/random.h>).
//
// Use through ask and tell (the caller evaluates the lambda candidates, for example in parallel,
// and may stop at any time), or mjdiff_cmaesMinimize with a callback.

typedef struct mjdiffCmaesOptions_ {
  int lambda;                  // population size, >= 2; 0: 4 + floor(3 ln n) (default 0)
  double sigma0;               // initial step size in x's units, > 0 (default 0.3); Hansen's
                               // advice: about a quarter of the range where the optimum may lie
  long max_evals;              // objective evaluations, >= lambda (default 100000)
  double ftarget;              // stop once a value <= ftarget was found; -INFINITY: never
                               // (default -INFINITY)
  double tol_x;                // stop when sigma sqrt(C_ii) and sigma |p_c,i| are below tol_x
                               // for every variable i, >= 0 (0: off; default 1e-11)
  double tol_fun;              // stop when the best values of the last 10 + ceil(30 n / lambda)
                               // generations and all values of the last one span less than
                               // tol_fun, >= 0 (0: off; default 1e-12)
  unsigned long long seed;     // random seed, any value (default 1)
} mjdiffCmaesOptions;

// State of a CMA-ES run (mjdiff_cmaesDone) or its outcome (mjdiff_cmaesMinimize).
typedef struct mjdiffCmaesInfo_ {
  int status;                  // mjdiffOptimStatus once a stop criterion holds, else -1
  long evals;                  // objective values told
  double fbest;                // best value told so far (INFINITY before the first)
  double sigma;                // current step size
  int generations;             // tells so far
} mjdiffCmaesInfo;

// Fill opt with the defaults above.
MJDIFF_API void mjdiff_defaultCmaesOptions(mjdiffCmaesOptions* opt);

// CMA-ES's state: options (copied), mean, step size, covariance and its eigendecomposition,
// evolution paths, the pending candidates and the best point. Opaque; one per run and thread.
typedef struct mjdiffCmaes_ mjdiffCmaes;

// Make CMA-ES for n >= 1 variables with mean x0 (n) and bounds lo, hi (n each; -INFINITY /
// INFINITY entries: unbounded on that side). Fails with MJDIFF_ERR_ARGUMENT for a NULL out or x0,
// MJDIFF_ERR_VALUE for n < 1, a bound that is NaN, lo_i > hi_i, x0_i outside [lo_i, hi_i],
// every variable fixed (lo = hi) or an option out of range (the message names it),
// MJDIFF_ERR_NONFINITE for a NaN or infinite x0_i, MJDIFF_ERR_MEMORY. Nullable: lo, hi (no
// bound), opt (defaults), err.
MJDIFF_API mjdiffStatus mjdiff_makeCmaes(int n, const double* x0, const double* lo,
                                         const double* hi, const mjdiffCmaesOptions* opt,
                                         mjdiffCmaes** out, char* err, int errsz);

// Free; NULL is a no-op.
MJDIFF_API void mjdiff_freeCmaes(mjdiffCmaes* c);

// The population size lambda in use (rows of ask's X and entries of tell's f).
MJDIFF_API int mjdiff_cmaesLambda(const mjdiffCmaes* c);

// Sample the next generation into X (lambda x n, row-major): every row inside the bounds.
// Precondition: the previous ask was followed by its tell; else MJDIFF_ERR_ARGUMENT and nothing
// changes. Allocates nothing.
MJDIFF_API mjdiffStatus mjdiff_cmaesAsk(mjdiffCmaes* c, double* X);

// Tell the objective values f (lambda) of the candidates of the last ask, in its order, and
// update the distribution. A NaN or infinite value marks a rejected candidate (ranked as +inf).
// Precondition: an ask is pending; else MJDIFF_ERR_ARGUMENT and nothing changes. Allocates
// nothing.
MJDIFF_API mjdiffStatus mjdiff_cmaesTell(mjdiffCmaes* c, const double* f);

// The best point told so far into x (n; x0 before the first tell) and its value into f
// (INFINITY before the first tell). Nullable: x, f.
MJDIFF_API void mjdiff_cmaesBest(const mjdiffCmaes* c, double* x, double* f);

// Whether a stop criterion holds (1, with info->status its mjdiffOptimStatus) or not (0,
// info->status -1); fills info either way. Asking on after a stop is allowed. Nullable: info.
MJDIFF_API int mjdiff_cmaesDone(const mjdiffCmaes* c, mjdiffCmaesInfo* info);

// The objective at x (n): a NaN or infinite value rejects the point (counted as +inf).
typedef double (*mjdiffCmaesObjective)(void* user, const double* x);

// Minimise fun from the mean x (n; on return the best point found, inside the bounds) by ask and
// tell until a stop criterion holds (info->status: converged, target, max evals or stalled;
// never more than max_evals evaluations). Errors: MJDIFF_ERR_ARGUMENT for a NULL x or fun, else
// as mjdiff_makeCmaes (fun is then never called). Nullable: lo, hi, opt, info, err.
MJDIFF_API mjdiffStatus mjdiff_cmaesMinimize(int n, double* x, const double* lo,
                                             const double* hi, mjdiffCmaesObjective fun,
                                             void* user, const mjdiffCmaesOptions* opt,
                                             mjdiffCmaesInfo* info, char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_OPTIM_H_
