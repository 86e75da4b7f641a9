// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// SHAC (Xu et al., "Accelerated Policy Learning with Parallel Differentiable Simulation", ICLR
// 2022) as mjdiff-learn's short-horizon analytic policy gradient.
//
// B episodes run side by side. Iteration k rolls each on from its current state x^b for T steps
// under the policy and minimises (mjdiff_learnObjectiveShort, exact gradient by BPTT)
//   J = (1/B) sum_b (1/T) [ sum_{t<T} gamma^t l(x_t, u_t) + gamma^T V'(x_T) ]
// with V' the target critic, V(x) = s MLP_V(o(x)), s = 1 / (1 - gamma) (so that MLP_V is of the
// order of one step's cost). The truncation keeps the gradient's variance down (BPTT through long
// contact-rich rollouts explodes), the value keeps the horizon from being myopic.
// Critic targets, TD(lambda) over the recorded costs c_t and the target critic's values
// v_t = V'(x_t), per episode b, backwards from G_T = v_T:
//   G_t = c_t + gamma [ (1 - lambda) v_{t+1} + lambda G_{t+1} ]
// Critic loss over the samples (b, t < T): (1/N) sum (MLP_V(o_t) - G_t / s)^2 / 2 by Adam,
// critic_iters passes of critic_batches shuffled minibatches; then the target's soft update
// theta' <- alpha theta' + (1 - alpha) theta. Episodes continue from x_T; one that reaches its
// length, or whose rollout failed (skip_failed), restarts from a fresh start and goal.
// Determinism: every draw comes from the seeds; the learner's results do not depend on threads.

#include "shac.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/optim.h>
#include <mjdiff/random.h>

void shac_defaultOptions(shacOptions* o) {
  memset(o, 0, sizeof(*o));
  o->batch = 32;
  o->horizon = 32;
  o->episode = 1000;
  o->gamma = 0.99;
  o->lambda = 0.95;
  o->critic_lr = 1e-3;
  o->critic_iters = 16;
  o->critic_batches = 4;
  o->target_alpha = 0.2;
  o->seed = 1;
}

struct shacState_ {
  mjdiffLearner* L;
  shacOptions o;
  int nx, nobs;
  mjdiffMLP* critic;
  mjdiffMLP* target;
  mjdiffMLPWork* work;         // critic, batch up to B (T+1)
  mjdiffAdam* adam;
  int ncp;                     // critic weights
  double scale;                // s = 1 / (1 - gamma)
  double* x;                   // B nx: the episodes' states
  double* goal;                // B 3
  int* step;                   // B: steps into the episode
  double* xend;                // B nx
  double* obs;                 // B (T+1) nobs
  double* cost;                // B T
  double* per;                 // B
  double* v;                   // B (T+1): target values
  double* G;                   // B T: targets / s
  int* idx;                    // B T: valid samples
  double* in;                  // mb nobs
  double* out;                 // mb
  double* cg;                  // ncp
  long resets;                 // episodes started (their seeds)
  mjdiffRng rng;
};

void shac_free(shacState* s) {
  if (!s) return;
  mjdiff_freeMLP(s->critic);
  mjdiff_freeMLP(s->target);
  mjdiff_freeMLPWork(s->work);
  mjdiff_freeAdam(s->adam);
  free(s->x);
  free(s->goal);
  free(s->step);
  free(s->xend);
  free(s->obs);
  free(s->cost);
  free(s->per);
  free(s->v);
  free(s->G);
  free(s->idx);
  free(s->in);
  free(s->out);
  free(s->cg);
  free(s);
}

// a fresh episode for slot b (start and goal from the episode counter's seed)
static void resetEpisode(shacState* s, int b) {
  mjdiff_learnSample(s->L, mjdiff_learnItemSeed(s->o.seed ^ 0x5ACULL, (int)(s->resets++ & 0x7fffffff)),
                     0, s->x + (size_t)b * s->nx, s->goal + 3 * (size_t)b);
  s->step[b] = 0;
}

shacState* shac_make(mjdiffLearner* L, const mjModel* m, const mjdiffMLP* net,
                     const shacOptions* opt, char* err, int errsz) {
  shacState* s = (shacState*)calloc(1, sizeof(shacState));
  if (!s) return NULL;
  s->L = L;
  s->o = *opt;
  int B = opt->batch, T = opt->horizon;
  s->nx = (int)(m->nq + m->nv + m->na);
  const mjdiffMLPDef* def = mjdiff_mlpDef(net);
  s->nobs = def->nin;
  s->scale = 1 / (1 - opt->gamma);
  mjdiffMLPDef cdef = *def;
  cdef.nout = 1;
  if (mjdiff_makeMLP(&cdef, &s->critic, err, errsz) != MJDIFF_OK ||
      mjdiff_initMLP(s->critic, MJDIFF_INIT_XAVIER_UNIFORM, opt->seed + 29, 1.0, err, errsz) != MJDIFF_OK ||
      mjdiff_setMLPNormalization(s->critic, mjdiff_mlpMean(net), mjdiff_mlpStd(net), err, errsz) != MJDIFF_OK) {
    shac_free(s);
    return NULL;
  }
  // the output layer starts at zero: an untrained critic says nothing (V = 0) rather than a
  // random O(s) terminal cost that would steer the first policy updates
  {
    double* w = mjdiff_mlpParams(s->critic);
    int o0 = mjdiff_mlpWeightOffset(s->critic, def->nhidden);
    memset(w + o0, 0, sizeof(double) * (size_t)(mjdiff_mlpParamCount(s->critic) - o0));
  }
  s->target = mjdiff_copyMLP(s->critic);
  s->ncp = mjdiff_mlpParamCount(s->critic);
  size_t nb = (size_t)B, n1 = nb * (size_t)(T + 1), nT = nb * (size_t)T;
  s->x = (double*)malloc(sizeof(double) * nb * (size_t)s->nx);
  s->goal = (double*)calloc(3 * nb, sizeof(double));
  s->step = (int*)calloc(nb, sizeof(int));
  s->xend = (double*)malloc(sizeof(double) * nb * (size_t)s->nx);
  s->obs = (double*)malloc(sizeof(double) * n1 * (size_t)s->nobs);
  s->cost = (double*)malloc(sizeof(double) * nT);
  s->per = (double*)malloc(sizeof(double) * nb);
  s->v = (double*)malloc(sizeof(double) * n1);
  s->G = (double*)malloc(sizeof(double) * nT);
  s->idx = (int*)malloc(sizeof(int) * nT);
  s->in = (double*)malloc(sizeof(double) * n1 * (size_t)s->nobs);
  s->out = (double*)malloc(sizeof(double) * n1);
  s->cg = (double*)malloc(sizeof(double) * (size_t)s->ncp);
  mjdiffAdamOptions ao;
  mjdiff_defaultAdamOptions(&ao);
  ao.lr = opt->critic_lr;
  if (!s->target || !s->x || !s->goal || !s->step || !s->xend || !s->obs || !s->cost || !s->per ||
      !s->v || !s->G || !s->idx || !s->in || !s->out || !s->cg ||
      mjdiff_makeMLPWork(s->critic, (int)n1, &s->work, err, errsz) != MJDIFF_OK ||
      mjdiff_makeAdam(s->ncp, &ao, &s->adam, err, errsz) != MJDIFF_OK) {
    shac_free(s);
    return NULL;
  }
  mjdiff_rngSeed(&s->rng, opt->seed ^ 0xC217ULL);
  for (int b = 0; b < B; b++) resetEpisode(s, b);
  return s;
}

mjdiffStatus shac_iteration(shacState* s, const mjdiffMLP* net, uint64_t seed, double* grad,
                            double* J, double* vloss, mjdiffLearnStats* stats, char* err,
                            int errsz) {
  int B = s->o.batch, T = s->o.horizon, nobs = s->nobs;
  double gamma = s->o.gamma, lambda = s->o.lambda;
  mjdiffLearnShort sh = {s->x, s->goal, s->target, s->scale, gamma, s->xend, s->obs, s->cost};
  mjdiffStatus st = mjdiff_learnObjectiveShort(s->L, net, seed, B, &sh, J, grad, s->per, stats,
                                               err, errsz);
  if (st != MJDIFF_OK) return st;

  // target values of every recorded observation, TD(lambda) targets of the valid episodes
  int n1 = B * (T + 1);
  st = mjdiff_mlpForward(s->target, s->work, s->obs, n1, s->v, err, errsz);
  if (st != MJDIFF_OK) return st;
  int N = 0;
  for (int b = 0; b < B; b++) {
    if (!isfinite(s->per[b])) continue;
    double* v = s->v + (size_t)b * (T + 1);
    const double* c = s->cost + (size_t)b * T;
    double Gn = s->scale * v[T];
    for (int t = T - 1; t >= 0; t--) {
      double G = c[t] + gamma * ((1 - lambda) * s->scale * v[t + 1] + lambda * Gn);
      s->G[(size_t)b * T + t] = G / s->scale;
      s->idx[N++] = b * T + t;
      Gn = G;
    }
  }

  // critic regression: passes of shuffled minibatches
  double* theta = mjdiff_mlpParams(s->critic);
  int nmb = s->o.critic_batches < N ? s->o.critic_batches : N;
  double last = NAN;
  for (int it = 0; it < s->o.critic_iters && N > 0; it++) {
    for (int j = N - 1; j > 0; j--) {
      int k = (int)(mjdiff_rngUniform(&s->rng) * (j + 1));
      int tmp = s->idx[j];
      s->idx[j] = s->idx[k];
      s->idx[k] = tmp;
    }
    double sse = 0;
    for (int q = 0; q < nmb; q++) {
      int j0 = (int)((long)N * q / nmb), j1 = (int)((long)N * (q + 1) / nmb), mb = j1 - j0;
      for (int k = 0; k < mb; k++) {
        int sample = s->idx[j0 + k], b = sample / T, t = sample % T;
        memcpy(s->in + (size_t)k * nobs, s->obs + ((size_t)b * (T + 1) + t) * nobs,
               sizeof(double) * (size_t)nobs);
      }
      st = mjdiff_mlpForward(s->critic, s->work, s->in, mb, s->out, err, errsz);
      if (st != MJDIFF_OK) return st;
      for (int k = 0; k < mb; k++) {
        double e = s->out[k] - s->G[s->idx[j0 + k]];
        sse += e * e;
        s->out[k] = e / mb;
      }
      memset(s->cg, 0, sizeof(double) * (size_t)s->ncp);
      st = mjdiff_mlpVJP(s->critic, s->work, s->out, mb, NULL, s->cg, err, errsz);
      if (st != MJDIFF_OK) return st;
      if (mjdiff_adamStep(s->adam, theta, s->cg, NULL) != MJDIFF_OK) {
        if (err && errsz > 0) snprintf(err, (size_t)errsz, "critic: non-finite gradient");
        return MJDIFF_ERR_NONFINITE;
      }
    }
    last = sse / N;
  }
  if (vloss) *vloss = last;
  double* tt = mjdiff_mlpParams(s->target);
  for (int i = 0; i < s->ncp; i++) {
    tt[i] = s->o.target_alpha * tt[i] + (1 - s->o.target_alpha) * theta[i];
  }

  // episodes: continue, or restart at their end and after a failure
  for (int b = 0; b < B; b++) {
    if (!isfinite(s->per[b])) {
      resetEpisode(s, b);
      continue;
    }
    memcpy(s->x + (size_t)b * s->nx, s->xend + (size_t)b * s->nx, sizeof(double) * (size_t)s->nx);
    s->step[b] += T;
    if (s->step[b] >= s->o.episode) resetEpisode(s, b);
  }
  return MJDIFF_OK;
}
