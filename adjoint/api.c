// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Argument structs (<mjdiff/args.h>) and parameter lookups by name (<mjdiff/params.h>): thin
// layers over the positional calls; no numerics of their own.

#include <string.h>

#include <mjdiff/args.h>
#include <mjdiff/params.h>

#include "compat.h"
#include "derivative.h"
#include "internal.h"

void mjdiff_defaultStepJac(mjdiffStepJac* jac) {
  memset(jac, 0, sizeof(*jac));
}

mjdiffStatus mjdiff_stepDerivatives(const mjModel* m, mjData* d, const mjdiffModel* s,
                                    mjdiffStepDeriv* w, const mjdiffStepJac* jac, char* err,
                                    int errsz) {
  if (!jac) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "jac is NULL");
  mjdiffStatus st = MJDIFF_OK;
  if (jac->A || jac->B || jac->P || !(jac->C || jac->D || jac->Q)) {
    st = mjdiff_stepJacobian(m, d, s, w, jac->A, jac->B, jac->P, err, errsz);
  }
  if (st == MJDIFF_OK && (jac->C || jac->D || jac->Q)) {
    st = mjdiff_sensorJacobian(m, d, s, w, jac->C, jac->D, jac->Q, err, errsz);
  }
  return st;
}

void mjdiff_defaultStepAdj(mjdiffStepAdj* adj) {
  memset(adj, 0, sizeof(*adj));
}

mjdiffStatus mjdiff_stepAdjoint(const mjModel* m, mjData* d, const mjdiffModel* s,
                                mjdiffStepDeriv* w, const mjdiffStepAdj* adj, char* err,
                                int errsz) {
  if (!adj) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "adj is NULL");
  if (!m || !d) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model or data is NULL");
  int ndx = 2 * m->nv + m->na;
  mjdiffStackMark mark = compat_stackMark(d);
  mjtNum* zero = NULL;
  const mjtNum* next = adj->adj_next;
  if (!next) {
    zero = compat_stackAllocNum(d, ndx + 1);
    mju_zero(zero, ndx + 1);
    next = zero;
  }
  mjdiffStatus st = mjdiff_stepVJP(m, d, s, w, next, adj->adj_x, adj->adj_ctrl, adj->adj_param,
                                   err, errsz);
  compat_stackFree(d, mark);
  if (st == MJDIFF_OK && adj->adj_qfrc && !mjdiff_stepForceAdjoint(w, adj->adj_qfrc)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "adj_qfrc: the adjoint of an applied force needs the Euler or the "
                        "implicit step, without MuJoCo's implicitfast block of a standalone "
                        "free body (the model's integrator is %s)",
                        m->opt.integrator == mjINT_RK4 ? "RK4" : "implicitfast with one");
  }
  if (st == MJDIFF_OK && adj->adj_sensor) {
    mjtNum* part = NULL;
    if (adj->adj_qfrc) {
      mark = compat_stackMark(d);
      part = compat_stackAllocNum(d, m->nv + 1);
    }
    st = mjdiff_sensorVJP(m, d, s, w, adj->adj_sensor, adj->adj_x, adj->adj_ctrl,
                          adj->adj_param, err, errsz);
    if (st == MJDIFF_OK && part && mjdiff_stepForceAdjoint(w, part)) {
      mju_addTo(adj->adj_qfrc, part, m->nv);
    }
    if (part) compat_stackFree(d, mark);
  }
  return st;
}

// nonzero if the expanded name e is name itself or one of its components (name "[k]")
static int nameMatches(const char* e, const char* name) {
  size_t n = strlen(name);
  if (strncmp(e, name, n)) return 0;
  return e[n] == 0 || (e[n] == '[' && !strchr(name, '['));
}

int mjdiff_paramIndex(const mjdiffParams* p, const char* name) {
  if (!p || !name) return -1;
  int np = mjdiff_paramCount(p);
  for (int i = 0; i < np; i++) {
    if (nameMatches(mjdiff_paramName(p, i), name)) return i;
  }
  return -1;
}

int mjdiff_paramNameCount(const mjdiffParams* p, const char* name) {
  if (!p || !name) return 0;
  int np = mjdiff_paramCount(p), n = 0;
  for (int i = 0; i < np; i++) n += nameMatches(mjdiff_paramName(p, i), name);
  return n;
}
