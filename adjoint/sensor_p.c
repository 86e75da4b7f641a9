// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The readings' parameter columns that sensor_d.c's state derivative does not give: the direct
// dependence of a reading on a model parameter at the fixed state.
//
// Forward. A reading of the smooth forward pass at the state x (qpos, qvel, act) and controls u is
//   s = h(x, u, qacc(x, u; p); p),
// and its parameter column is
//   ds/dp = dh/dqacc dqacc/dp + dh/dp|(x, u, qacc).
// step_d.c forms the first term exactly (DsDacc times the step's own dqacc/dp). The second is not
// zero for every parameter:
//   body:B:mass, :inertia, :ipos   subtreecom (the masses weigh the coms), framepos of a body
//                                  (xipos), force and torque (mj_rnePostConstraint's cinert)
//   actuator:A:gear                actuatorpos, actuatorvel (the transmission's length)
//   actuator:A:gainprm, :biasprm   actuatorfrc
//   option:gravity                 accelerometer, force, torque (cacc of the world is -g)
//   geometry (design_d.c kinds)    every frame and site sensor, subtreecom, force and torque
//                                  (moved kinematics and inertials), touch (moved contacts)
//   mjdiff:contact_*, per-geom     touch (the smooth normal force)
// For these kinds (direct()) the whole column is taken by centred differences of the forward
// pass's readings at the fixed state on a model copy, with p_i +- h_i, h_i = 1e-5 max(|p_i|, 0.1):
//   Q_i = (h(x, u; p + h_i e_i) - h(x, u; p - h_i e_i)) / (2 h_i)   (both terms at once),
// truncation O(h^2 s''') ~ 1e-10 relative away from contact, and rounding O(eps F / h) with F the
// size of the terms a reading sums: ~1e-10 for kinematic readings, ~1e-8 for force and torque
// readings of a free body or the world (sums of forces of the model's weight that cancel); in a
// stiff contact the truncation grows (a column of 4e3 known to ~1e-4 relative). The tests ask
// 1e-5 of a column, floored at 1e-4 of the reading and 1e-3 M g for force readings. Where
// p_i - h_i is out of range (a smooth-model value at 0): the one-sided difference from above.
// Columns of the other kinds stay analytic.
//
// Transpose. A VJP needs adj_s' Q_i for the direct columns: one difference per column, each two
// forward passes on the copy (the cost is 2 n_direct forward passes per call: only the sensor VJP
// and Jacobian pay it, and only for a selection with such kinds).
//
// The copy: m is copied afresh for every evaluation (the caller may have changed its parameters
// since the last call); the smooth model once per call when the selection has smooth-model
// entries (their values live in s, which the caller owns and may share).

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "derivative.h"
#include "params_internal.h"

struct mjdiffSensorParamScratch_ {
  mjModel* m;                  // model copy
  mjData* d;
  int* direct;                 // (np) 1: the column is differenced here
  int ndirect;
  int smooth;                  // 1 if an entry is a smooth-model field (copy s too)
  mjtNum* v0;                  // (np) values
  mjtNum* v;                   // (np) moved values
  mjtNum* sp;                  // (nsensordata) readings at +h, -h
  mjtNum* sm;
  mjtNum* state;               // (nq + nv + na + 1)
  mjtNum* apply;               // (mjdiff_designApplyScratch(p)) for mjdiff_designApply
};

static int hasSensor(const mjModel* m, int type) {
  for (int i = 0; i < m->nsensor; i++) {
    if (m->sensor_type[i] == type) return 1;
  }
  return 0;
}

// 1 if a reading of m may depend on entry e at the fixed state and acceleration
static int direct(const mjModel* m, const paramEntry* e) {
  if (PK_IS_DESIGN(e->kind)) return 1;
  switch (e->kind) {
    case PK_BODY_MASS:
    case PK_BODY_INERTIA:
    case PK_BODY_IPOS:
    case PK_ACT_GEAR:
    case PK_ACT_GAINPRM:
    case PK_ACT_BIASPRM:
    case PK_GRAVITY:
      return 1;
    case PK_SMOOTH:
    case PK_GEOM_SMOOTH:
      return hasSensor(m, mjSENS_TOUCH);
    default:
      return 0;
  }
}

mjdiffSensorParamScratch* mjdiff_makeSensorParamScratch(const mjModel* m,
                                                        const mjdiffParams* p, int* fail) {
  *fail = 0;
  if (!p || !p->n || !m->nsensordata) return NULL;
  int nd = 0, smooth = 0;
  for (int i = 0; i < p->n; i++) {
    if (!direct(m, p->entry + i)) continue;
    nd++;
  }
  for (int i = 0; i < p->n; i++) {
    smooth |= p->entry[i].kind == PK_SMOOTH || p->entry[i].kind == PK_GEOM_SMOOTH;
  }
  if (!nd) return NULL;
  mjdiffSensorParamScratch* w =
      (mjdiffSensorParamScratch*)calloc(1, sizeof(mjdiffSensorParamScratch));
  size_t n = (size_t)(2 * p->n + 2 * m->nsensordata + m->nq + m->nv + m->na + 1 +
                      mjdiff_designApplyScratch(p));
  if (w) {
    w->m = mj_copyModel(NULL, m);
    w->d = w->m ? mj_makeData(w->m) : NULL;
    w->direct = (int*)calloc((size_t)p->n, sizeof(int));
    w->v0 = (mjtNum*)calloc(n, sizeof(mjtNum));
  }
  if (!w || !w->d || !w->direct || !w->v0) {
    mjdiff_freeSensorParamScratch(w);
    *fail = 1;
    return NULL;
  }
  for (int i = 0; i < p->n; i++) w->direct[i] = direct(m, p->entry + i);
  w->ndirect = nd;
  w->smooth = smooth;
  w->v = w->v0 + p->n;
  w->sp = w->v + p->n;
  w->sm = w->sp + m->nsensordata;
  w->state = w->sm + m->nsensordata;
  w->apply = w->state + m->nq + m->nv + m->na + 1;
  return w;
}

void mjdiff_freeSensorParamScratch(mjdiffSensorParamScratch* w) {
  if (!w) return;
  if (w->d) mj_deleteData(w->d);
  if (w->m) mj_deleteModel(w->m);
  free(w->direct);
  free(w->v0);
  free(w);
}

int mjdiff_sensorParamDirect(const mjdiffSensorParamScratch* w, int i) {
  return w && w->direct[i];
}

// readings of the forward pass on the copy with values w->v, at the state and inputs of d
// (sc: the smooth model's copy if p has smooth-model entries, which it sets). The copy holds m
// (copied once per call): setting every entry of p from the values makes it m at those values.
// Geometry is applied again with its principal axes finished to rounding (design_d.c's
// refineEig): mju_eig3's axes are a step function of the geometry at ~1e-6 rad, which a
// difference at this step would read as a derivative.
static int readings(mjdiffSensorParamScratch* w, const mjModel* m, const mjData* d,
                    const mjdiffModel* s, mjdiffModel* sc, const mjdiffParams* p,
                    mjtNum* out) {
  mjModel* mc = w->m;
  mjData* dc = w->d;
  int bad = mjdiff_setParamValues(mc, sc, p, w->v, NULL, 0) != MJDIFF_OK;
  if (!bad && p->design) mjdiff_designApply(mc, p, w->v, w->apply, 1);
  if (!bad) {
    mjdiff_loadState(mc, dc, w->state);
    mjdiff_copyInputs(m, d, dc);
    bad = mjdiff_forward(mc, dc, sc ? sc : s, NULL, 0) != MJDIFF_OK;
  }
  if (!bad) mju_copy(out, dc->sensordata, m->nsensordata);
  return bad ? -1 : 0;
}

int mjdiff_sensorParamColumns(mjdiffSensorParamScratch* w, const mjModel* m, const mjData* d,
                              const mjdiffModel* s, const mjdiffParams* p, mjtNum* Q) {
  if (!w) return 0;
  int np = p->n, ns = m->nsensordata;
  mjdiff_saveState(m, d, w->state);
  mjdiff_getParamValues(m, s, p, w->v0);
  mjdiffModel* sc = NULL;
  if (w->smooth && mjdiff_copyModel(s, m, &sc, NULL, 0) != MJDIFF_OK) return -1;
  mj_copyModel(w->m, m);
  int bad = 0;
  for (int i = 0; i < np; i++) {
    if (!w->direct[i]) continue;
    mjtNum h = 1e-5 * mju_max(fabs(w->v0[i]), 0.1);
    mju_copy(w->v, w->v0, np);
    w->v[i] = w->v0[i] + h;
    bad = readings(w, m, d, s, sc, p, w->sp);
    if (bad) break;
    // below a value's bound (mjdiff_paramCheck: a smooth-model value at 0, a size at its floor):
    // the one-sided second-order difference from above, (-3 s(v) + 4 s(v + h) - s(v + 2h)) / 2h;
    // a failed forward pass at v - h within the bounds is an error, not a reason to switch
    if (mjdiff_paramOutside(m, s, p, i, w->v0[i] - h)) {
      for (int r = 0; r < ns; r++) Q[(size_t)np * r + i] = 4 * w->sp[r];
      w->v[i] = w->v0[i] + 2 * h;
      bad = readings(w, m, d, s, sc, p, w->sm);
      if (bad) break;
      for (int r = 0; r < ns; r++) Q[(size_t)np * r + i] -= w->sm[r];
      w->v[i] = w->v0[i];
      bad = readings(w, m, d, s, sc, p, w->sm);
      if (bad) break;
      for (int r = 0; r < ns; r++) {
        Q[(size_t)np * r + i] = (Q[(size_t)np * r + i] - 3 * w->sm[r]) / (2 * h);
      }
      continue;
    }
    w->v[i] = w->v0[i] - h;
    bad = readings(w, m, d, s, sc, p, w->sm);
    if (bad) break;
    for (int r = 0; r < ns; r++) Q[(size_t)np * r + i] = (w->sp[r] - w->sm[r]) / (2 * h);
  }
  mjdiff_freeModel(sc);
  return bad ? -1 : 0;
}
