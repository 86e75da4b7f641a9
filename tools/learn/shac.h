// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// SHAC of mjdiff-learn (tools/learn/shac.c): analytic policy gradients through short rollouts
// that continue one another, with a learned value as the terminal cost (Xu et al. 2022).
#ifndef MJDIFF_TOOLS_LEARN_SHAC_H_
#define MJDIFF_TOOLS_LEARN_SHAC_H_

#include <stdint.h>

#include <mujoco/mujoco.h>
#include <mjdiff/learn.h>
#include <mjdiff/nn.h>

typedef struct shacState_ shacState;

typedef struct shacOptions_ {
  int batch;                   // parallel episodes (rollouts per iteration)
  int horizon;                 // T: steps of a short rollout (the learner's horizon)
  int episode;                 // steps of an episode (then reset to a fresh start and goal)
  double gamma;                // discount per step
  double lambda;               // TD(lambda) of the critic's targets
  double critic_lr;            // the critic's Adam rate
  int critic_iters;            // passes over an iteration's samples
  int critic_batches;          // minibatches per pass
  double target_alpha;         // target critic: theta' <- alpha theta' + (1 - alpha) theta
  uint64_t seed;
} shacOptions;

void shac_defaultOptions(shacOptions* o);

// SHAC for the policy net of learner L (short horizon: the learner's, model m). The critic has
// the policy's hidden layers and input normalisation. NULL with err on failure.
shacState* shac_make(mjdiffLearner* L, const mjModel* m, const mjdiffMLP* net,
                     const shacOptions* opt, char* err, int errsz);
void shac_free(shacState* s);

// One iteration: the short objective of net from the episodes' states (terminal value: the target
// critic), its gradient in grad (the caller steps the policy), then the critic fitted to TD(lambda)
// targets of the recorded costs, the target critic's soft update, and the episodes advanced
// (reset at their end and where a rollout failed). J: the objective; stats: its batch's;
// vloss: the critic's last mean squared error (in units of (1 - gamma) V, squared).
mjdiffStatus shac_iteration(shacState* s, const mjdiffMLP* net, uint64_t seed, double* grad,
                            double* J, double* vloss, mjdiffLearnStats* stats, char* err,
                            int errsz);

#endif  // MJDIFF_TOOLS_LEARN_SHAC_H_
