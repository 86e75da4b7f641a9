// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Continuation of the smooth model's long-range contact term (options reach_strength and
// reach_width, plugin/reach.h): optimisers that need "gradients before contact" (the MPC
// planner, later the learner and design tools) start with a weak repulsive force that acts across
// gaps of up to the width R and anneal its strength to zero over their outer iterations, so that
// the last iterations optimise the true model:
//
//   a_k = a_0 decay^k         while a_0 decay^k >= cutoff a_0
//         0                   afterwards (exactly: the term is then off, bit for bit)
//
// One schedule serves every tool: mjdiff_reachApply sets the smooth model's two options for outer
// iteration k; mjdiff_parseReach reads the command-line spelling STRENGTH[:WIDTH[:DECAY]].

#ifndef MJDIFF_REACH_H_
#define MJDIFF_REACH_H_

#include <mjdiff/base.h>
#include <mjdiff/smooth.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mjdiffReachSchedule_ {
  mjtNum strength;             // a_0 (N), >= 0; 0: the term stays off
  mjtNum width;                // R (m), > 0
  mjtNum decay;                // factor per outer iteration, in (0, 1]; 1: constant strength
  mjtNum cutoff;               // the term is switched off once a_k < cutoff a_0; in [0, 1)
} mjdiffReachSchedule;

// Defaults: strength 0 (off), width 0.1 m, decay 0.8, cutoff 0.01 (off after 21 iterations).
MJDIFF_API void mjdiff_defaultReachSchedule(mjdiffReachSchedule* sched);

// Check the fields of sched; err names the first bad one. Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_validateReachSchedule(const mjdiffReachSchedule* sched, char* err,
                                                     int errsz);

// The strength a_k at outer iteration iter >= 0 (0 for a NULL schedule).
MJDIFF_API mjtNum mjdiff_reachStrength(const mjdiffReachSchedule* sched, int iter);

// Set s's reach_strength to a_iter and its reach_width to the schedule's width. Not thread-safe
// against a concurrent step of s (call it between iterations). Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_reachApply(mjdiffModel* s, const mjdiffReachSchedule* sched,
                                          int iter, char* err, int errsz);

// Parse "STRENGTH[:WIDTH[:DECAY]]" (N, m, per iteration) into sched; fields not given keep their
// values in sched (start from mjdiff_defaultReachSchedule). Fails with MJDIFF_ERR_VALUE naming
// the part that is not a number or out of range. Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_parseReach(const char* text, mjdiffReachSchedule* sched, char* err,
                                          int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_REACH_H_
