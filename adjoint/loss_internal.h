// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Checks of a set of loss terms (loss.c) for the rollout sweep (rollout.c).

#ifndef MJDIFF_LOSS_INTERNAL_H_
#define MJDIFF_LOSS_INTERNAL_H_

#include <mjdiff/loss.h>

// MJDIFF_OK if terms were made for m (or a model of the same sizes); else fills err
mjdiffStatus mjdiff_checkTerms(const mjdiffTerms* terms, const mjModel* m, char* err, int errsz);

#endif  // MJDIFF_LOSS_INTERNAL_H_
