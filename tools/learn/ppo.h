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

#endif  // MJDIFF_TOOLS_LEARN_PPO_H_
