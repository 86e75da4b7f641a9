// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid --predict: open-loop prediction error against recordings (predict.c has the
// definitions).

#ifndef MJDIFF_TOOLS_SYSID_PREDICT_H_
#define MJDIFF_TOOLS_SYSID_PREDICT_H_

#include <stdio.h>

#include <mjdiff/mjdiff.h>

#include "recording.h"

// One open-loop step of a model that is not the plain smooth step (the hybrid of --residual, the
// pure network of --mlp): advance d (qpos, qvel, act, time) by one step under d->ctrl. Returns 0,
// or -1 with err.
typedef struct sysidStepper_ {
  void* user;
  int (*step)(void* user, const mjModel* m, mjData* d, char* err, int errsz);
} sysidStepper;

// Simulate m (smooth model s, or the stepper when given) open loop against the recordings rec (nrec) at the horizons (nh,
// seconds; <= 0: the whole recording), per joint: a table to `table` and a JSON array (one object
// per horizon) to `json` (both nullable). Returns 0, or -1 with err naming the recording (one
// shorter than a horizon, a step that fails).
int sysid_predict(const mjModel* m, const mjdiffModel* s, const sysidRecording* rec, int nrec,
                  const double* horizons, int nh, const sysidStepper* stepper, FILE* json,
                  FILE* table, char* err, int errsz);

#endif  // MJDIFF_TOOLS_SYSID_PREDICT_H_
