// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Loss terms (<mjdiff/loss.h>).
//
//   l = w n(r),  r = scale .* (y - target),  y = pos(object) | sensor | x (-) target | u
//   n: quadratic |r|^2/2 (dn/dr = r), smoothabs sqrt(|r|^2 + p^2) - p (dn/dr = r / sqrt(.)),
//      linear sum r (dn/dr = 1)
//   g = w dn/dr .* scale = dl/dy, then
//   position   y = p(q), dp = J_p dq (mj_jac at the point: the translational rows of the
//              velocity Jacobian, which is the derivative along mj_integratePos):
//              dl/ddq += J_p' g
//   sensor     dl/ds += g (the caller applies the sensor VJP)
//   state      y_k = (x (-) target)_k: hinge, slide, translation, qvel, act rows dy/ddx = I;
//              a ball or free rotation phi = log(target^-1 q), q' = q exp(dw/2):
//              phi' = log(target^-1 q exp(dw/2)) = phi + J_r^-1(phi) dw + O(dw^2):
//              dl/ddw = J_r^-1(phi)' g_rot
//   control    dl/du += g
//
// Direct parameter dependence (mjdiff_termsParamDirect): a position term reads p(q; theta) with
// theta the geometry that places the point in its chain (body:B:pos of B or an ancestor, a hinge
// or ball anchor joint:J:pos there, site:S:pos of the term's site, body:B:scale above it); at the
// fixed state
//   dl/dtheta_i = g . dp/dtheta_i,
// taken whole by centred differences of the terms' value on a model copy with theta_i +- h_i,
// h_i = 1e-6 max(|theta_i|, 0.1), after mj_kinematics (the map is smooth in theta: truncation
// O(h^2) ~ 1e-12 relative, rounding ~ eps |p| / h ~ 1e-10). The other terms read the same state,
// readings and controls on both sides and cancel exactly. Not analytic: a joint anchor's effect on
// the chain (xpos += (R_before - R_after) jnt_pos per hinge or ball) would need each joint's
// frames again.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/adjoint.h>
#include <mjdiff/loss.h>
#include <mjdiff/state.h>

#include "compat.h"
#include "internal.h"
#include "loss_internal.h"
#include "params_internal.h"
#include "spatial.h"

typedef struct term_ {
  int type, norm, objtype, id;  // objtype mjOBJ_BODY / mjOBJ_SITE (position)
  int n;                        // components of r
  int adr;                      // sensor address
  mjtNum weight, p;
  mjtNum* target;               // (n; state: nq+nv+na)
  mjtNum* scale;                // (n)
  int* steps;                   // (nstep), NULL: every step
  int nstep;
} term;

struct mjdiffTerms_ {
  const mjModel* m;
  int nterm, nq, nv, na, nu, nsensordata, nbody, nsite;
  term* terms;
  int maxn;                     // largest n
};

void mjdiff_defaultTerm(mjdiffTerm* t) {
  memset(t, 0, sizeof(*t));
  t->type = MJDIFF_TERM_POSITION;
  t->weight = 1;
  t->norm = MJDIFF_NORM_QUADRATIC;
  t->norm_param = 0.01;
}

void mjdiff_freeTerms(mjdiffTerms* ts) {
  if (!ts) return;
  for (int i = 0; i < ts->nterm; i++) {
    free(ts->terms[i].target);
    free(ts->terms[i].scale);
    free(ts->terms[i].steps);
  }
  free(ts->terms);
  free(ts);
}

static const char* typeName(int type) {
  switch (type) {
    case MJDIFF_TERM_POSITION: return "position";
    case MJDIFF_TERM_SENSOR: return "sensor";
    case MJDIFF_TERM_STATE: return "state";
    default: return "control";
  }
}

// resolve a term's object and sizes
static mjdiffStatus resolve(const mjModel* m, const mjdiffTerm* in, int i, term* t, char* err,
                            int errsz) {
  const char* obj = in->object ? in->object : "";
  t->id = -1;
  switch (in->type) {
    case MJDIFF_TERM_POSITION:
      if (!strncmp(obj, "body:", 5)) {
        t->objtype = mjOBJ_BODY;
        t->id = mj_name2id(m, mjOBJ_BODY, obj + 5);
      } else if (!strncmp(obj, "site:", 5)) {
        t->objtype = mjOBJ_SITE;
        t->id = mj_name2id(m, mjOBJ_SITE, obj + 5);
      }
      if (t->id < 0) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_NAME,
                            "term %d (position): '%s' names no body or site (body:NAME, site:NAME)",
                            i, obj);
      }
      t->n = 3;
      return MJDIFF_OK;
    case MJDIFF_TERM_SENSOR:
      t->id = mj_name2id(m, mjOBJ_SENSOR, strncmp(obj, "sensor:", 7) ? obj : obj + 7);
      if (t->id < 0) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "term %d (sensor): no sensor named '%s'",
                            i, obj);
      }
      if (!mjdiff_sensorSupported(m, t->id)) {
        return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                            "term %d: sensor '%s' (type %d) has no derivative", i, obj,
                            m->sensor_type[t->id]);
      }
      t->n = m->sensor_dim[t->id];
      t->adr = m->sensor_adr[t->id];
      return MJDIFF_OK;
    case MJDIFF_TERM_STATE:
      t->n = 2 * m->nv + m->na;
      return MJDIFF_OK;
    case MJDIFF_TERM_CONTROL:
      t->n = m->nu;
      return MJDIFF_OK;
    default:
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "term %d: type must be a mjdiffTermType (0..3), got %d", i, in->type);
  }
}

mjdiffStatus mjdiff_makeTerms(const mjModel* m, const mjdiffTerm* terms, int n, mjdiffTerms** out,
                              char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (!m || (n > 0 && !terms) || n < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "makeTerms needs m, terms and n >= 0");
  }
  mjdiffTerms* ts = (mjdiffTerms*)calloc(1, sizeof(mjdiffTerms));
  if (!ts) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the terms");
  ts->terms = (term*)calloc(n > 0 ? n : 1, sizeof(term));
  if (!ts->terms) {
    free(ts);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the terms");
  }
  ts->m = m;
  ts->nq = m->nq;
  ts->nv = m->nv;
  ts->na = m->na;
  ts->nu = m->nu;
  ts->nsensordata = m->nsensordata;
  ts->nbody = m->nbody;
  ts->nsite = m->nsite;
  mjdiffStatus st = MJDIFF_OK;
  for (int i = 0; i < n && st == MJDIFF_OK; i++) {
    const mjdiffTerm* in = terms + i;
    term* t = ts->terms + i;
    ts->nterm = i + 1;
    st = resolve(m, in, i, t, err, errsz);
    if (st != MJDIFF_OK) break;
    t->type = in->type;
    t->norm = in->norm;
    t->weight = in->weight;
    t->p = in->norm_param;
    if (in->norm < MJDIFF_NORM_QUADRATIC || in->norm > MJDIFF_NORM_LINEAR) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "term %d (%s): norm must be 0..2, got %d", i,
                        typeName(t->type), in->norm);
      break;
    }
    if (!isfinite(in->weight)) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "term %d (%s): weight must be finite, got %g",
                        i, typeName(t->type), in->weight);
      break;
    }
    if (in->norm == MJDIFF_NORM_SMOOTHABS && !(in->norm_param > 0 && isfinite(in->norm_param))) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "term %d (%s): smoothabs norm_param must be > 0, got %g", i,
                        typeName(t->type), in->norm_param);
      break;
    }
    if (in->steps && in->nstep < 1) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "term %d (%s): steps given with nstep %d",
                        i, typeName(t->type), in->nstep);
      break;
    }
    int ntarget = t->type == MJDIFF_TERM_STATE ? m->nq + m->nv + m->na : t->n;
    t->target = (mjtNum*)calloc(ntarget + 1, sizeof(mjtNum));
    t->scale = (mjtNum*)calloc(t->n + 1, sizeof(mjtNum));
    t->nstep = in->steps ? in->nstep : 0;
    t->steps = in->steps ? (int*)malloc(sizeof(int) * in->nstep) : NULL;
    if (!t->target || !t->scale || (in->steps && !t->steps)) {
      st = mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the terms");
      break;
    }
    if (in->target) {
      mju_copy(t->target, in->target, ntarget);
    } else if (t->type == MJDIFF_TERM_STATE) {
      mju_copy(t->target, m->qpos0, m->nq);
    }
    for (int k = 0; k < t->n; k++) t->scale[k] = in->scale ? in->scale[k] : 1;
    if (in->steps) memcpy(t->steps, in->steps, sizeof(int) * in->nstep);
    if (t->n > ts->maxn) ts->maxn = t->n;
  }
  if (st != MJDIFF_OK) {
    mjdiff_freeTerms(ts);
    return st;
  }
  *out = ts;
  return MJDIFF_OK;
}

// nonzero if term t applies at step k of T
static int applies(const term* t, int k, int T) {
  if (t->type == MJDIFF_TERM_CONTROL && k >= T) return 0;
  if (!t->steps) return 1;
  for (int i = 0; i < t->nstep; i++) {
    int s = t->steps[i] < 0 ? T + 1 + t->steps[i] : t->steps[i];
    if (s == k) return 1;
  }
  return 0;
}

int mjdiff_termsActive(const mjdiffTerms* ts, int k, int T) {
  if (!ts) return 0;
  for (int i = 0; i < ts->nterm; i++) {
    if (applies(ts->terms + i, k, T)) return 1;
  }
  return 0;
}

// value of the norm of r (n) times w; g = w dn/dr .* scale
static mjtNum norm(const term* t, const mjtNum* r, int n, mjtNum* g) {
  mjtNum v = 0;
  if (t->norm == MJDIFF_NORM_LINEAR) {
    for (int k = 0; k < n; k++) {
      v += r[k];
      g[k] = t->weight * t->scale[k];
    }
    return t->weight * v;
  }
  mjtNum rr = mju_dot(r, r, n);
  mjtNum f = 1;
  if (t->norm == MJDIFF_NORM_SMOOTHABS) {
    mjtNum q = sqrt(rr + t->p * t->p);
    v = q - t->p;
    f = 1 / q;
  } else {
    v = 0.5 * rr;
  }
  for (int k = 0; k < n; k++) g[k] = t->weight * f * r[k] * t->scale[k];
  return t->weight * v;
}

mjtNum mjdiff_evalTerms(const mjModel* m, mjData* d, const mjdiffTerms* ts, int k, int T,
                        mjtNum* dldx, mjtNum* dldu, mjtNum* dlds) {
  if (!m || !d || !ts) return 0;
  int nv = m->nv, nq = m->nq, na = m->na;
  mjdiffStackMark mark = compat_stackMark(d);
  int nbuf = 3 * ts->maxn + 3 * nv + nq + nv + na + 8;
  if (compat_stackSpace(d) < nbuf) return NAN;
  mjtNum* r = compat_stackAllocNum(d, nbuf);
  mjtNum* g = r + ts->maxn;
  mjtNum* y = g + ts->maxn;
  mjtNum* jac = y + ts->maxn + (nq + nv + na);
  mjtNum L = 0;
  for (int i = 0; i < ts->nterm; i++) {
    const term* t = ts->terms + i;
    if (!applies(t, k, T)) continue;
    int n = t->n;
    switch (t->type) {
      case MJDIFF_TERM_POSITION: {
        const mjtNum* p = t->objtype == mjOBJ_BODY ? d->xpos + 3 * t->id : d->site_xpos + 3 * t->id;
        for (int c = 0; c < 3; c++) r[c] = t->scale[c] * (p[c] - t->target[c]);
        L += norm(t, r, 3, g);
        if (dldx && nv) {
          int body = t->objtype == mjOBJ_BODY ? t->id : m->site_bodyid[t->id];
          mj_jac(m, d, jac, NULL, p, body);
          // dl/ddq += J' g
          for (int c = 0; c < 3; c++) {
            for (int j = 0; j < nv; j++) dldx[j] += jac[(size_t)nv * c + j] * g[c];
          }
        }
        break;
      }
      case MJDIFF_TERM_SENSOR: {
        const mjtNum* s = d->sensordata + t->adr;
        for (int c = 0; c < n; c++) r[c] = t->scale[c] * (s[c] - t->target[c]);
        L += norm(t, r, n, g);
        if (dlds) mju_addTo(dlds + t->adr, g, n);
        break;
      }
      case MJDIFF_TERM_STATE: {
        mjdiff_getState(m, d, y);
        mjtNum* dx = y + nq + nv + na;  // (2nv+na) after the state: the buffer holds maxn >= n
        mjdiff_stateDiff(m, t->target, y, dx);
        for (int c = 0; c < n; c++) r[c] = t->scale[c] * dx[c];
        L += norm(t, r, n, g);
        if (dldx) {
          // rotations: dl/ddw = J_r^-1(phi)' g_rot; every other row g
          for (int j = 0; j < m->njnt; j++) {
            int type = m->jnt_type[j];
            if (type != mjJNT_BALL && type != mjJNT_FREE) continue;
            int a = m->jnt_dofadr[j] + (type == mjJNT_FREE ? 3 : 0);
            mjtNum Jinv[9], gr[3];
            spatial_rightJacobianInverse(dx + a, Jinv);
            mju_mulMatTVec(gr, Jinv, g + a, 3, 3);
            mju_copy3(g + a, gr);
          }
          mju_addTo(dldx, g, n);
        }
        break;
      }
      default: {  // control
        for (int c = 0; c < n; c++) r[c] = t->scale[c] * (d->ctrl[c] - t->target[c]);
        L += norm(t, r, n, g);
        if (dldu) mju_addTo(dldu, g, n);
      }
    }
  }
  compat_stackFree(d, mark);
  return L;
}

mjdiffStatus mjdiff_checkTerms(const mjdiffTerms* ts, const mjModel* m, char* err, int errsz) {
  if (ts->m == m) return MJDIFF_OK;
  if (ts->nq != m->nq || ts->nv != m->nv || ts->na != m->na || ts->nu != m->nu ||
      ts->nsensordata != m->nsensordata || ts->nbody != m->nbody || ts->nsite != m->nsite) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "loss terms were made for another model (sizes differ)");
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_trajectoryLoss(const mjModel* m, mjData* d, const mjdiffModel* s,
                                   const mjdiffTerms* ts, int T, const mjtNum* states,
                                   const mjtNum* ctrl, mjtNum* loss, mjtNum* dLdx, mjtNum* dLdu,
                                   mjtNum* dLds, char* err, int errsz) {
  if (!m || !d || !s || !ts || !states || (!ctrl && m->nu) || T < 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "trajectoryLoss needs m, d, s, terms, states, ctrl and T >= 1");
  }
  mjdiffStatus st0 = mjdiff_checkTerms(ts, m, err, errsz);
  if (st0 != MJDIFF_OK) return st0;
  int nx = m->nq + m->nv + m->na, ndx = 2 * m->nv + m->na, nu = m->nu, ns = m->nsensordata;
  mjtNum t0 = d->time, L = 0;
  for (int k = 0; k <= T; k++) {
    if (!mjdiff_termsActive(ts, k, T)) continue;
    mjdiff_setState(m, d, states + (size_t)nx * k);
    // x_T: controls held at u_{T-1}
    if (nu) mju_copy(d->ctrl, ctrl + (size_t)nu * (k < T ? k : T - 1), nu);
    d->time = t0 + k * m->opt.timestep;
    mjdiffStatus st = mjdiff_forward(m, d, s, err, errsz);
    if (st != MJDIFF_OK) return st;
    L += mjdiff_evalTerms(m, d, ts, k, T, dLdx ? dLdx + (size_t)ndx * k : NULL,
                          dLdu && k < T ? dLdu + (size_t)nu * k : NULL,
                          dLds ? dLds + (size_t)ns * k : NULL);
  }
  mjdiff_setState(m, d, states + (size_t)nx * T);
  if (nu) mju_copy(d->ctrl, ctrl + (size_t)nu * (T - 1), nu);
  d->time = t0 + T * m->opt.timestep;
  if (loss) *loss = L;
  return MJDIFF_OK;
}

//---------------------------------- direct parameter dependence -----------------------------------

int mjdiff_termsHavePosition(const mjdiffTerms* ts) {
  if (!ts) return 0;
  for (int i = 0; i < ts->nterm; i++) {
    if (ts->terms[i].type == MJDIFF_TERM_POSITION) return 1;
  }
  return 0;
}

// 1 for the geometry kinds that move bodies' origins or sites
static int movesPoints(int kind) {
  return kind == PK_BODY_POS || kind == PK_JNT_POS || kind == PK_SITE_POS ||
         kind == PK_BODY_SCALE;
}

int mjdiff_termsParamDirect(const mjModel* m, const mjData* d, const mjdiffTerms* ts, int t,
                            int T, const mjdiffParams* p, mjModel* mc, mjData* dc,
                            mjtNum* scratch, mjtNum* gp) {
  if (!mc || !dc) return -1;
  if (!ts || !p || !p->design || !mjdiff_termsHavePosition(ts) ||
      !mjdiff_termsActive(ts, t, T)) {
    return 0;
  }
  int np = p->n;
  mjtNum* vals = scratch;
  mjtNum* apply = scratch + np;
  int copied = 0;
  for (int i = 0; i < np; i++) {
    if (!movesPoints(p->entry[i].kind)) continue;
    if (!copied) {
      mj_copyModel(mc, m);
      mju_copy(dc->qpos, d->qpos, m->nq);
      mju_copy(dc->qvel, d->qvel, m->nv);
      mju_copy(dc->act, d->act, m->na);
      mjdiff_copyInputs(m, d, dc);
      mju_copy(dc->sensordata, d->sensordata, m->nsensordata);
      copied = 1;
    }
    mjdiff_getParamValues(m, NULL, p, vals);
    mjtNum v0 = vals[i], h = 1e-6 * mju_max(fabs(v0), 0.1), l[2];
    for (int side = 0; side < 2; side++) {
      vals[i] = v0 + (side ? -h : h);
      mjdiff_designApply(mc, p, vals, apply, 1);
      mj_kinematics(mc, dc);
      l[side] = mjdiff_evalTerms(mc, dc, ts, t, T, NULL, NULL, NULL);
    }
    gp[i] += (l[0] - l[1]) / (2 * h);
  }
  return 0;
}
