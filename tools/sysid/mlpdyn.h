// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid --mlp: a pure network dynamics model x' = x + f(x, u), x = (qpos, qvel), trained
// on the one-step differences of recordings, and its open-loop stepper for --predict
// --mlp-weights (mlpdyn.c has the equations and the definitions).

#ifndef MJDIFF_TOOLS_SYSID_MLPDYN_H_
#define MJDIFF_TOOLS_SYSID_MLPDYN_H_

#include <stdint.h>
#include <stdio.h>

#include <mjdiff/mjdiff.h>

#include "predict.h"
#include "recording.h"

typedef struct sysidMLPOptions_ {
  const char* spec;            // network spec of <mjdiff/nn.h> ("mlp:64,64")
  int epochs;                  // passes over the data (>= 1)
  double lr;                   // Adam's learning rate (> 0)
  uint64_t seed;               // initial weights and minibatch order
  FILE* progress;              // progress lines (nullable: none)
} sysidMLPOptions;

// 0 if m can be modelled (every joint a hinge or slide, so nq == nv, and no activation state),
// else -1 with err naming the first ball or free joint, or the first actuator with an activation.
int sysid_mlpCheckModel(const mjModel* m, char* err, int errsz);

// Train on the recordings rec (nrec, read for m) and write the network to out (through out.tmp
// and a rename). The saved network gives y = x' - x directly (its output normalisation folded
// into the last layer). Returns 0, or -1 with err (a model that cannot be modelled, a recording
// without a usable transition, a spec, a write failure).
int sysid_mlpTrain(const mjModel* m, const sysidRecording* rec, int nrec,
                   const sysidMLPOptions* opt, const char* out, char* err, int errsz);

// Load the network at path as a stepper of m for sysid_predict: one step sets
// (qpos, qvel) += f(qpos, qvel, ctrl) and time += the model's timestep. Fails with err naming the
// file for weights of another shape (both shapes given) or a model that cannot be modelled.
// Free with sysid_mlpFreeStepper (NULL-safe in st->user).
int sysid_mlpMakeStepper(const mjModel* m, const char* path, sysidStepper* st, char* err,
                         int errsz);
void sysid_mlpFreeStepper(sysidStepper* st);

#endif  // MJDIFF_TOOLS_SYSID_MLPDYN_H_
