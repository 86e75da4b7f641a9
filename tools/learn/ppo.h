// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// PPO baseline of mjdiff-learn (tools/learn/ppo.c): a Gaussian policy whose mean is the learner's
// MLP (before the control squashing), a learned log-std per control, a value MLP, GAE and the
// clipped surrogate; gradients through nn's VJP, steps by optim's Adam.
#ifndef MJDIFF_TOOLS_LEARN_PPO_H_
#define MJDIFF_TOOLS_LEARN_PPO_H_

#include <stdint.h>

#include <mujoco/mujoco.h>
#include <mjdiff/learn.h>
#include <mjdiff/nn.h>

typedef struct ppoState_ ppoState;

// PPO for the policy net (updated in place) of learner L on model m: batch rollouts of T steps
// per iteration, Adam rate lr (policy and value), clip: gradient-norm clipping (0 off), epochs
// over minibatches of minibatch samples per iteration; iters > 0: the run's iterations, over
// which the rate is annealed (cosine to lr / 10; 0: constant). NULL with err on failure.
ppoState* ppo_make(mjdiffLearner* L, const mjModel* m, mjdiffMLP* net, int batch, int T,
                   double lr, double clip, int epochs, int minibatch, long iters, uint64_t seed,
                   char* err, int errsz);
void ppo_free(ppoState* p);

// One iteration: sample, advantages, epochs of minibatch updates. stats: the sampled rollouts'
// (their cost, successes, steps); gnorm: the last policy gradient's norm.
mjdiffStatus ppo_iteration(ppoState* p, uint64_t seed, mjdiffLearnStats* stats, double* gnorm,
                           char* err, int errsz);

// The pieces of an iteration, for tests: sample a batch and its advantages and old
// log-probabilities (ppo_iteration's first half); the clipped surrogate
//   L = -(1/m) sum_k min(rho_k A_k, clip(rho_k, 1 - e, 1 + e) A_k)
// over the samples idx[0 .. m) (m <= the minibatch size; sample j = b T + t) at the policy's
// current weights and log-stds, its gradient in (weights, log-stds) left in ppo_gradient(p)
// (np + nu); NaN with err on failure. ppo_logstd: the log-stds (nu), writable.
mjdiffStatus ppo_sample(ppoState* p, uint64_t seed, mjdiffLearnStats* stats, char* err,
                        int errsz);
double ppo_surrogate(ppoState* p, const int* idx, int m, char* err, int errsz);
double* ppo_logstd(ppoState* p);
const double* ppo_gradient(const ppoState* p);

#endif  // MJDIFF_TOOLS_LEARN_PPO_H_
