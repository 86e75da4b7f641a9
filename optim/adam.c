// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Adam (Kingma and Ba 2015) with gradient-norm clipping and a learning-rate schedule.
//   |g| = sqrt(sum_i g_i^2);  c = clip / |g| if clip > 0 and |g| > clip, else 1;  g <- c g
//   m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g g;  t <- t + 1
//   d = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)       (per component)
//   x <- x - lr(t - 1) d
// The expressions are evaluated in exactly this order (mjdiff-mpc's gradient planner keeps its
// figures bit for bit: b1 0.9, b2 0.999, eps 1e-12, no clipping).
// Schedules (k = steps taken before this one, T = decay_steps, W = warmup_steps):
//   constant lr;  cosine lr_min + (lr - lr_min) (1 + cos(pi min(k, T) / T)) / 2;
//   step lr gamma^floor(k / T);  exponential lr gamma^(k / T);  times (k + 1) / W for k < W.
// Nothing here is differentiated.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/optim.h>

#include "internal.h"

struct mjdiffAdam_ {
  int n;
  int t;                       // steps taken
  mjdiffAdamOptions opt;
  double* m;                   // n: first moment
  double* v;                   // n: second moment
};

void mjdiff_defaultAdamOptions(mjdiffAdamOptions* opt) {
  if (!opt) return;
  memset(opt, 0, sizeof(*opt));
  opt->lr = 1e-3;
  opt->beta1 = 0.9;
  opt->beta2 = 0.999;
  opt->eps = 1e-8;
  opt->clip_norm = 0;
  opt->schedule = MJDIFF_LR_CONSTANT;
  opt->decay_steps = 1000;
  opt->decay_gamma = 0.1;
  opt->lr_min = 0;
  opt->warmup_steps = 0;
}

double mjdiff_adamRate(const mjdiffAdamOptions* opt, int k) {
  if (!opt) return 0;
  if (k < 0) k = 0;
  double T = opt->decay_steps > 0 ? opt->decay_steps : 1;
  double lr = opt->lr;
  switch (opt->schedule) {
    case MJDIFF_LR_COSINE: {
      double s = k < T ? k / T : 1;
      lr = opt->lr_min + (opt->lr - opt->lr_min) * 0.5 * (1 + cos(3.14159265358979323846 * s));
      break;
    }
    case MJDIFF_LR_STEP:
      lr = opt->lr * pow(opt->decay_gamma, floor(k / T));
      break;
    case MJDIFF_LR_EXPONENTIAL:
      lr = opt->lr * pow(opt->decay_gamma, k / T);
      break;
    default:
      break;
  }
  if (k < opt->warmup_steps) lr *= (double)(k + 1) / opt->warmup_steps;
  return lr;
}

static mjdiffStatus checkOptions(const mjdiffAdamOptions* o, char* err, int errsz) {
  if (!(o->lr > 0) || !isfinite(o->lr)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "lr must be > 0 and finite, got %g", o->lr);
  }
  if (!(o->beta1 >= 0 && o->beta1 < 1)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "beta1 must be in [0, 1), got %g",
                        o->beta1);
  }
  if (!(o->beta2 >= 0 && o->beta2 < 1)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "beta2 must be in [0, 1), got %g",
                        o->beta2);
  }
  if (!(o->eps > 0) || !isfinite(o->eps)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "eps must be > 0 and finite, got %g",
                        o->eps);
  }
  if (!(o->clip_norm >= 0) || !isfinite(o->clip_norm)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "clip_norm must be >= 0 (0: off) and finite, got %g", o->clip_norm);
  }
  if (o->schedule < MJDIFF_LR_CONSTANT || o->schedule > MJDIFF_LR_EXPONENTIAL) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "schedule must be 0 (constant), 1 (cosine), 2 (step) or 3 (exponential), "
                        "got %d",
                        o->schedule);
  }
  if (o->decay_steps < 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "decay_steps must be >= 1, got %d",
                        o->decay_steps);
  }
  if (!(o->decay_gamma > 0 && o->decay_gamma <= 1)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "decay_gamma must be in (0, 1], got %g",
                        o->decay_gamma);
  }
  if (!(o->lr_min >= 0 && o->lr_min <= o->lr)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "lr_min must be in [0, lr = %g], got %g",
                        o->lr, o->lr_min);
  }
  if (o->warmup_steps < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "warmup_steps must be >= 0, got %d",
                        o->warmup_steps);
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_makeAdam(int n, const mjdiffAdamOptions* opt, mjdiffAdam** out, char* err,
                             int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (n < 1) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "n must be >= 1, got %d", n);
  mjdiffAdamOptions o;
  if (opt) {
    o = *opt;
  } else {
    mjdiff_defaultAdamOptions(&o);
  }
  mjdiffStatus st = checkOptions(&o, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiffAdam* a = (mjdiffAdam*)calloc(1, sizeof(mjdiffAdam));
  if (a) {
    a->m = (double*)calloc((size_t)n, sizeof(double));
    a->v = (double*)calloc((size_t)n, sizeof(double));
  }
  if (!a || !a->m || !a->v) {
    mjdiff_freeAdam(a);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "Adam for %d variables: out of memory", n);
  }
  a->n = n;
  a->opt = o;
  *out = a;
  return MJDIFF_OK;
}

void mjdiff_freeAdam(mjdiffAdam* adam) {
  if (!adam) return;
  free(adam->m);
  free(adam->v);
  free(adam);
}

void mjdiff_resetAdam(mjdiffAdam* adam) {
  if (!adam) return;
  memset(adam->m, 0, sizeof(double) * (size_t)adam->n);
  memset(adam->v, 0, sizeof(double) * (size_t)adam->n);
  adam->t = 0;
}

int mjdiff_adamIter(const mjdiffAdam* adam) {
  return adam ? adam->t : 0;
}

// the clipped gradient's factor c and |g|; 0 if g is not finite
static int clipScale(const mjdiffAdam* a, const double* g, double* norm, double* c) {
  double s = 0;
  for (int i = 0; i < a->n; i++) s += g[i] * g[i];
  if (!isfinite(s)) return 0;
  *norm = sqrt(s);
  *c = a->opt.clip_norm > 0 && *norm > a->opt.clip_norm ? a->opt.clip_norm / *norm : 1;
  return 1;
}

// moments and direction: the one update shared by adamDirection and adamStep (lr = 0: direction
// into dir; else x -= lr d)
static void update(mjdiffAdam* a, const double* grad, double c, double lr, double* dir,
                   double* x) {
  const double b1 = a->opt.beta1, b2 = a->opt.beta2, eps = a->opt.eps;
  a->t++;
  double c1 = 1 - pow(b1, a->t), c2 = 1 - pow(b2, a->t);
  for (int k = 0; k < a->n; k++) {
    double g = c == 1 ? grad[k] : c * grad[k];
    a->m[k] = b1 * a->m[k] + (1 - b1) * g;
    a->v[k] = b2 * a->v[k] + (1 - b2) * g * g;
    double d = (a->m[k] / c1) / (sqrt(a->v[k] / c2) + eps);
    if (dir) dir[k] = d;
    if (x) x[k] -= lr * d;
  }
}

mjdiffStatus mjdiff_adamDirection(mjdiffAdam* adam, const double* grad, double* dir,
                                  mjdiffAdamInfo* info) {
  if (!adam || !grad || !dir) return MJDIFF_ERR_ARGUMENT;
  double norm, c;
  if (!clipScale(adam, grad, &norm, &c)) return MJDIFF_ERR_NONFINITE;
  double lr = mjdiff_adamRate(&adam->opt, adam->t);
  update(adam, grad, c, 0, dir, NULL);
  if (info) {
    info->iter = adam->t;
    info->lr = lr;
    info->grad_norm = norm;
    info->clip_scale = c;
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_adamStep(mjdiffAdam* adam, double* x, const double* grad,
                             mjdiffAdamInfo* info) {
  if (!adam || !x || !grad) return MJDIFF_ERR_ARGUMENT;
  double norm, c;
  if (!clipScale(adam, grad, &norm, &c)) return MJDIFF_ERR_NONFINITE;
  double lr = mjdiff_adamRate(&adam->opt, adam->t);
  update(adam, grad, c, lr, NULL, x);
  if (info) {
    info->iter = adam->t;
    info->lr = lr;
    info->grad_norm = norm;
    info->clip_scale = c;
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_adamMinimize(mjdiffAdam* adam, double* x, double* grad,
                                 mjdiffObjectiveGrad fg, void* user, int maxiter, double gtol,
                                 int* outcome, double* f, mjdiffAdamInfo* info) {
  if (!adam || !x || !grad || !fg || maxiter < 0 || !(gtol >= 0)) return MJDIFF_ERR_ARGUMENT;
  mjdiffAdamInfo last = {adam->t, 0, 0, 1};
  int result = MJDIFF_OPTIM_MAXITER;
  double fx = 0;
  for (int it = 0;; it++) {
    if (fg(user, x, &fx, grad)) {
      result = MJDIFF_OPTIM_CANCELLED;
      break;
    }
    if (!isfinite(fx)) return MJDIFF_ERR_NONFINITE;
    double s = 0;
    for (int i = 0; i < adam->n; i++) s += grad[i] * grad[i];
    if (!isfinite(s)) return MJDIFF_ERR_NONFINITE;
    if (sqrt(s) <= gtol) {
      result = MJDIFF_OPTIM_CONVERGED;
      break;
    }
    if (it == maxiter) break;
    mjdiffStatus st = mjdiff_adamStep(adam, x, grad, &last);
    if (st != MJDIFF_OK) return st;
  }
  if (outcome) *outcome = result;
  if (f) *f = fx;
  if (info) *info = last;
  return MJDIFF_OK;
}
