// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The continuation schedule of the long-range contact term (<mjdiff/reach.h>; the force law is in
// reach.h):  a_k = a_0 decay^k while a_0 decay^k >= cutoff a_0, then 0.

#include <mjdiff/reach.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void mjdiff_defaultReachSchedule(mjdiffReachSchedule* sched) {
  if (!sched) return;
  sched->strength = 0;
  sched->width = 0.1;
  sched->decay = 0.8;
  sched->cutoff = 0.01;
}

mjdiffStatus mjdiff_validateReachSchedule(const mjdiffReachSchedule* sched, char* err,
                                          int errsz) {
  if (!sched) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "reach schedule is NULL");
  if (!isfinite(sched->strength) || sched->strength < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "reach strength must be finite and >= 0 (N), got %g", sched->strength);
  }
  if (!isfinite(sched->width) || !(sched->width > 0)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "reach width must be finite and > 0 (m), got %g", sched->width);
  }
  if (!(sched->decay > 0 && sched->decay <= 1)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "reach decay must be in (0, 1], got %g",
                        sched->decay);
  }
  if (!(sched->cutoff >= 0 && sched->cutoff < 1)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "reach cutoff must be in [0, 1), got %g",
                        sched->cutoff);
  }
  return MJDIFF_OK;
}

mjtNum mjdiff_reachStrength(const mjdiffReachSchedule* sched, int iter) {
  if (!sched || !(sched->strength > 0)) return 0;
  mjtNum f = pow(sched->decay, iter < 0 ? 0 : iter);
  return f < sched->cutoff ? 0 : sched->strength * f;
}

mjdiffStatus mjdiff_reachApply(mjdiffModel* s, const mjdiffReachSchedule* sched, int iter,
                               char* err, int errsz) {
  if (!s) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "smooth model is NULL");
  mjdiffStatus st = mjdiff_validateReachSchedule(sched, err, errsz);
  if (st == MJDIFF_OK) st = mjdiff_setParam(s, "reach_width", sched->width, err, errsz);
  if (st == MJDIFF_OK) {
    st = mjdiff_setParam(s, "reach_strength", mjdiff_reachStrength(sched, iter), err, errsz);
  }
  return st;
}

// one number of the spec at *text, up to the next ':' or the end (left at *text); 0 if it is
// not a number
static int parseField(const char** text, mjtNum* value) {
  char* end = NULL;
  double v = strtod(*text, &end);
  if (end == *text || (*end && *end != ':')) return 0;
  *value = (mjtNum)v;
  *text = end;
  return 1;
}

mjdiffStatus mjdiff_parseReach(const char* text, mjdiffReachSchedule* sched, char* err,
                               int errsz) {
  if (!text || !sched) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "reach spec or schedule is NULL");
  }
  static const char* kField[3] = {"strength", "width", "decay"};
  mjdiffReachSchedule out = *sched;
  mjtNum* field[3] = {&out.strength, &out.width, &out.decay};
  const char* p = text;
  for (int i = 0;; i++) {
    if (i == 3) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "reach spec '%s': more than 3 fields (STRENGTH[:WIDTH[:DECAY]])", text);
    }
    if (!parseField(&p, field[i])) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "reach spec '%s': %s is not a number (STRENGTH[:WIDTH[:DECAY]])", text,
                          kField[i]);
    }
    if (!*p) break;
    p++;  // the ':'
  }
  char why[200];
  mjdiffStatus st = mjdiff_validateReachSchedule(&out, why, sizeof(why));
  if (st != MJDIFF_OK) return mjdiff_error(err, errsz, st, "reach spec '%s': %s", text, why);
  *sched = out;
  return MJDIFF_OK;
}
