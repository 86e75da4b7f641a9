// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Checks of a set of loss terms (loss.c) for the rollout sweep (rollout.c), and the terms' direct
// dependence on geometry parameters.

#ifndef MJDIFF_LOSS_INTERNAL_H_
#define MJDIFF_LOSS_INTERNAL_H_

#include <mjdiff/loss.h>

// MJDIFF_OK if terms were made for m (or a model of the same sizes); else fills err
mjdiffStatus mjdiff_checkTerms(const mjdiffTerms* terms, const mjModel* m, char* err, int errsz);

// 1 if the set has a position term (a body's or site's world position)
int mjdiff_termsHavePosition(const mjdiffTerms* terms);

// The terms' direct dependence on the geometry entries of p that move points (body:B:pos,
// joint:J:pos, site:S:pos, body:B:scale) at the state, controls and mocap poses of d, at step t of
// T: ADDS d l_t / dp_i (kinematics at fixed q) to gp (np) for those entries, by centred differences
// of the terms' value on the copy mc, dc (mc is overwritten with m and the moved values; scratch:
// np + mjdiff_designApplyScratch(p) numbers). Returns 0, -1 if mc or dc is NULL.
struct mjdiffParams_;
int mjdiff_termsParamDirect(const mjModel* m, const mjData* d, const mjdiffTerms* terms, int t,
                            int T, const struct mjdiffParams_* p, mjModel* mc, mjData* dc,
                            mjtNum* scratch, mjtNum* gp);

#endif  // MJDIFF_LOSS_INTERNAL_H_
