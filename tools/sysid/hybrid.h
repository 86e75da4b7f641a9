// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid --residual: a hybrid model, the smooth model plus a neural residual force
// (<mjdiff/residual.h>), its physical parameters and network fitted jointly to recordings by
// Adam on exact rollout gradients; and its open-loop stepper for --predict --residual-weights
// (hybrid.c has the equations).

#ifndef MJDIFF_TOOLS_SYSID_HYBRID_H_
#define MJDIFF_TOOLS_SYSID_HYBRID_H_

#include <stdint.h>
#include <stdio.h>

#include <mjdiff/mjdiff.h>

#include "predict.h"
#include "recording.h"

typedef struct sysidHybridOptions_ {
  const char* spec;            // network spec of <mjdiff/nn.h> ("mlp:64,64")
  int epochs;                  // passes over the windows (>= 1)
  int window;                  // steps per window (>= 1)
  int batch;                   // windows per Adam step (>= 1)
  double lr;                   // Adam's rate for the network's weights
  double lr_param;             // Adam's rate for the parameters, relative to their start values
  double sigma_qpos, sigma_qvel;  // noise scales of the errors
  uint64_t seed;               // initial weights and window order
  FILE* progress;              // progress lines (nullable: none)
} sysidHybridOptions;

// Fit the residual network (and the parameters p, nullable, bounded by lo, hi) to the
// recordings rec (nrec) of m with the smooth model s. With validation recordings (val, nval > 0)
// the loss on their windows is measured after every epoch and the weights and parameters of the
// best epoch are kept (early stopping); m and s end with the fitted parameter
// values; the network goes to out (through out.tmp and a rename). Final values of p in
// p_out (np, nullable) and the final loss in *loss (nullable). Returns 0, or -1 with err (a
// recording shorter than one window, a failing rollout, the network, the file); *stopped is set
// to 1 if an interrupt (tool guard) ended training early (weights written all the same).
int sysid_hybridFit(mjModel* m, mjdiffModel* s, const mjdiffParams* p, const double* lo,
                    const double* hi, const sysidRecording* rec, int nrec,
                    const sysidRecording* val, int nval, const sysidHybridOptions* opt, const char* out, double* p_out, double* loss,
                    int* stopped, char* err, int errsz);

// The hybrid's open-loop stepper for sysid_predict: f = residual(x, u) into qfrc_applied, then
// the smooth step of s. Fails for weights of another model's shape (err names the file). Free
// with sysid_hybridFreeStepper (NULL-safe in st->user).
int sysid_hybridMakeStepper(const mjModel* m, const mjdiffModel* s, const char* path,
                            sysidStepper* st, char* err, int errsz);
void sysid_hybridFreeStepper(sysidStepper* st);

#endif  // MJDIFF_TOOLS_SYSID_HYBRID_H_
