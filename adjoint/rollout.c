// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Rollout gradients: the adjoint sweep of <mjdiff/rollout.h> over the step adjoint of step_d.c.
//
//   forward   x_{t+1} = f(x_t, u_t; p), recording x_t every k steps (k = 1: all) and every u_t
//   backward  lambda_T = dl/dx_T;  for t = T-1 .. 0:
//               (a_x, a_u, a_p) = [A_t B_t P_t]' lambda_{t+1} + [C_t D_t Q_t]' dl/ds_t
//               g_u = a_u + dl/du_t;  policy: a_x += pi_x' g_u, g_theta += pi_theta' g_u
//               g_p += a_p;  lambda_t = a_x + dl/dx_t
//   decay a in (0, 1) (mjdiffRolloutGrad.decay): lambda_{t+1} <- a lambda_{t+1} before step t's
//               VJP, so that A_t, B_t, P_t (and the step's applied-force adjoint) act on the
//               scaled adjoint, while what depends on x_t directly is not scaled: the readings
//               at x_t (C_t, D_t, Q_t), the step-wise losses at t and the policy's VJP at x_t.
//               The exact adjoint of x_{t+1} = a f(x_t, u_t) + (1 - a) sg(f) (sg held constant),
//               whose values are f's; open loop, g_u_t = dl/du_t + sum_{k>t} a^(k-t) dl_k/du_t
//   x_T's readings s_T (forward pass at x_T with u_{T-1} held) and the step-wise losses l_T:
//               lambda_T += C_T' dl/ds_T + dl_T/dx_T,  g_u_{T-1} += D_T' dl/ds_T,
//               g_p += Q_T' dl/ds_T
//   step-wise losses (terms, callback) at step t add dl_t/dx_t, dl_t/du_t, dl_t/ds_t to the dense
//   inputs of that step; only their active steps run the extra forward pass; position terms on
//   points that geometry parameters move add their direct dependence g_p += dl_t/dp (loss.c)
//   a force model f_t = phi(x_t, u_t; theta_f) in qfrc_applied (mjdiff_rolloutSetForce): the
//   step's and the readings' adjoints of qfrc_applied, a_f, go through its VJP before the
//   policy's: a_x += phi_x' a_f, a_u += phi_u' a_f, g_theta_f += phi_theta' a_f; the forces are
//   recorded ((T + 1) x nv, f_T = phi(x_T, u_{T-1}) for the readings at x_T), so checkpointed
//   segments replay them
//   checkpointing recomputes the states of one segment (k steps) from its stored start with the
//   recorded controls: the smooth step is a deterministic function of (x, u, t), so the states,
//   and the gradients, are bit for bit those of storing everything.

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/args.h>
#include <mjdiff/loss.h>
#include <mjdiff/params.h>
#include <mjdiff/rollout.h>

#include "compat.h"
#include "derivative.h"
#include "internal.h"
#include "loss_internal.h"
#include "params_internal.h"

struct mjdiffRollout_ {
  const mjModel* m;            // model, smooth model and parameters this rollout was made for
  const mjdiffModel* s;
  const mjdiffParams* p;
  mjdiffStepDeriv* w;          // step-derivative workspace
  int T, nu, np, ndx, nx;      // nx = nq + nv + na + 1 (state with time)
  int stride;                  // states stored every `stride` steps
  int nstored;                 // T / stride + 1
  mjtNum* stored;              // (nstored x nx)
  mjtNum* segment;             // (stride x nx) states of one segment, recomputed
  mjtNum* ctrl;                // (T x nu) controls used
  const mjdiffPolicy* policy;  // of the last forward rollout, with its parameters
  const mjtNum* theta;
  int recorded;                // 1 after a successful forward rollout
  mjtNum* lambda;              // (ndx) adjoint of the state
  mjtNum* ax;                  // (ndx), (nu), (np), (nu) scratch
  mjtNum* au;
  mjtNum* ap;
  mjtNum* gu;
  mjtNum* lx;                  // (ndx), (nu), (ns): per-step loss gradients of terms and callback
  mjtNum* lu;
  mjtNum* ls;
  mjtNum* uT;                  // (nu): control gradient of the readings at x_T, for u_{T-1}
  const mjdiffForceModel* force;  // attached force model, its parameters, and its record
  const mjtNum* ftheta;
  mjtNum* qfrc;                // ((T + 1) x nv) forces of the last forward rollout, or NULL
  mjtNum* af;                  // (2 nv) scratch: adjoints of qfrc_applied
  mjModel* tm;                 // model and data copies for the loss terms' direct dependence on
  mjData* td;                  // geometry parameters (made at the first sweep that needs them)
  mjtNum* tscratch;            // (np + mjdiff_designApplyScratch(p))
  size_t bytes;
};

// longest rollout: its sizes, such as (T + 1) x (nq + nv + na), stay far from int and size_t limits
#define MAX_HORIZON 100000000

void mjdiff_defaultRolloutOptions(mjdiffRolloutOptions* opt) {
  opt->checkpoint = 1;
}

mjdiffStatus mjdiff_makeRollout(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p,
                                int horizon, const mjdiffRolloutOptions* opt, mjdiffRollout** out,
                                char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (horizon < 1 || horizon > MAX_HORIZON) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "horizon must be in [1, %d], got %d",
                        MAX_HORIZON, horizon);
  }
  mjdiffRolloutOptions o;
  mjdiff_defaultRolloutOptions(&o);
  if (opt) o = *opt;
  if (o.checkpoint < 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "checkpoint must be >= 0 (0: every ceil(sqrt(T)) steps), got %d",
                        o.checkpoint);
  }
  int stride = o.checkpoint ? o.checkpoint : (int)ceil(sqrt((double)horizon));
  if (stride > horizon) stride = horizon;

  mjdiffRollout* r = (mjdiffRollout*)calloc(1, sizeof(mjdiffRollout));
  if (!r) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the rollout");
  st = mjdiff_makeStepDeriv(m, s, p, &r->w, err, errsz);
  if (st != MJDIFF_OK) {
    free(r);
    return st;
  }
  r->m = m;
  r->s = s;
  r->p = p;
  r->T = horizon;
  r->nu = m->nu;
  r->np = p ? mjdiff_paramCount(p) : 0;
  r->ndx = 2 * m->nv + m->na;
  r->nx = m->nq + m->nv + m->na + 1;
  r->stride = stride;
  r->nstored = horizon / stride + 1;
  size_t n = (size_t)r->nstored * r->nx + (size_t)stride * r->nx + (size_t)horizon * r->nu +
             2 * (size_t)r->ndx + 2 * (size_t)r->nu + (size_t)r->np + 8 +
             (size_t)r->ndx + 2 * (size_t)r->nu + (size_t)m->nsensordata;
  mjtNum* buf = (mjtNum*)calloc(n, sizeof(mjtNum));
  if (!buf) {
    mjdiff_freeStepDeriv(r->w);
    free(r);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the rollout");
  }
  r->stored = buf;
  r->segment = r->stored + (size_t)r->nstored * r->nx;
  r->ctrl = r->segment + (size_t)stride * r->nx;
  r->lambda = r->ctrl + (size_t)horizon * r->nu;
  r->ax = r->lambda + r->ndx;
  r->au = r->ax + r->ndx;
  r->gu = r->au + r->nu;
  r->ap = r->gu + r->nu;
  r->lx = r->ap + r->np;
  r->lu = r->lx + r->ndx;
  r->uT = r->lu + r->nu;
  r->ls = r->uT + r->nu;
  r->bytes = sizeof(mjdiffRollout) + n * sizeof(mjtNum);
  *out = r;
  return MJDIFF_OK;
}

void mjdiff_freeRollout(mjdiffRollout* r) {
  if (!r) return;
  if (r->td) mj_deleteData(r->td);
  if (r->tm) mj_deleteModel(r->tm);
  free(r->tscratch);
  mjdiff_freeStepDeriv(r->w);
  free(r->stored);
  free(r->qfrc);
  free(r);
}

mjdiffStatus mjdiff_rolloutSetForce(mjdiffRollout* r, const mjdiffForceModel* force,
                                    const mjtNum* theta, char* err, int errsz) {
  if (!r) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "rollout is NULL");
  r->recorded = 0;
  if (!force) {
    r->force = NULL;
    r->ftheta = NULL;
    return MJDIFF_OK;
  }
  if (!force->force || !force->vjp || force->nparam < 0 || (force->nparam > 0 && !theta)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "force model needs force and vjp callbacks and its parameters");
  }
  if (r->m->opt.integrator == mjINT_RK4 && !mjdiff_implicit(r->s)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "a force model needs the Euler or the implicit step: the RK4 step's "
                        "adjoint has no applied-force part");
  }
  if (!r->qfrc) {
    int nv = r->m->nv;
    size_t n = (size_t)(r->T + 1) * nv + 2 * (size_t)nv + 1;
    r->qfrc = (mjtNum*)calloc(n, sizeof(mjtNum));
    if (!r->qfrc) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the force record");
    }
    r->af = r->qfrc + (size_t)(r->T + 1) * nv;
    r->bytes += n * sizeof(mjtNum);
  }
  r->force = force;
  r->ftheta = theta;
  return MJDIFF_OK;
}

// the inputs of step t on d: its controls and, with a force model, its recorded force (t = T:
// the controls of T - 1 and the force at x_T)
static void stepInputs(const mjModel* m, mjData* d, const mjdiffRollout* r, int t) {
  mju_copy(d->ctrl, r->ctrl + (size_t)r->nu * (t < r->T ? t : r->T - 1), r->nu);
  if (r->force) mju_copy(d->qfrc_applied, r->qfrc + (size_t)m->nv * t, m->nv);
}

// with a force model: f_t = phi(x_t, u_t) from d (controls set) into qfrc_applied and the record
static void applyForce(const mjModel* m, mjData* d, mjdiffRollout* r, int t) {
  if (!r->force) return;
  r->force->force(m, d, r->ftheta, r->force->user, d->qfrc_applied);
  mju_copy(r->qfrc + (size_t)m->nv * t, d->qfrc_applied, m->nv);
}

// with a force model, after a step or readings VJP at step t (d at x_t, inputs set): add the
// last product's adjoint of qfrc_applied to r->af (zeroed by the caller)
static mjdiffStatus forceAdjoint(mjdiffRollout* r, int nv, char* err, int errsz) {
  if (!r->force) return MJDIFF_OK;
  if (!mjdiff_stepForceAdjoint(r->w, r->af + nv)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                        "the step adjoint did not form the applied force's adjoint (RK4, "
                        "or a standalone free body under implicitfast)");
  }
  mju_addTo(r->af, r->af + nv, nv);
  return MJDIFF_OK;
}

size_t mjdiff_rolloutMemory(const mjdiffRollout* r) {
  return r ? r->bytes + mjdiff_stepDerivMemory(r->w) : 0;
}

int mjdiff_rolloutHorizon(const mjdiffRollout* r) {
  return r ? r->T : 0;
}

int mjdiff_rolloutSizes(const mjdiffRollout* r, int* nx, int* ndx, int* nu, int* ns, int* np) {
  if (!r) return 0;
  if (nx) *nx = r->nx - 1;
  if (ndx) *ndx = r->ndx;
  if (nu) *nu = r->nu;
  if (ns) *ns = r->m->nsensordata;
  if (np) *np = r->np;
  return r->T;
}

void mjdiff_defaultRolloutGrad(mjdiffRolloutGrad* g) {
  memset(g, 0, sizeof(*g));
}

static mjdiffStatus checkRollout(const mjModel* m, const mjData* d, const mjdiffModel* s,
                                 const mjdiffRollout* r, char* err, int errsz) {
  if (!r || !d) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "rollout or data is NULL");
  if (r->m != m || r->s != s) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "rollout was made for another model or smooth model");
  }
  return MJDIFF_OK;
}

// one step of the rollout at t from the state in d: controls, then the smooth step
static mjdiffStatus rolloutStep(const mjModel* m, mjData* d, const mjdiffModel* s,
                                mjdiffRollout* r, int t, const mjtNum* ctrl, char* err,
                                int errsz) {
  if (r->policy) {
    r->policy->act(m, d, r->theta, r->policy->user, d->ctrl);
  } else if (ctrl) {
    mju_copy(d->ctrl, ctrl + (size_t)r->nu * t, r->nu);
  }
  mju_copy(r->ctrl + (size_t)r->nu * t, d->ctrl, r->nu);
  applyForce(m, d, r, t);
  return mjdiff_step(m, d, s, err, errsz);
}

mjdiffStatus mjdiff_rolloutForward(const mjModel* m, mjData* d, const mjdiffModel* s,
                                   mjdiffRollout* r, const mjtNum* ctrl,
                                   const mjdiffPolicy* policy, const mjtNum* theta,
                                   mjtNum* states, mjtNum* sensordata, char* err, int errsz) {
  mjdiffStatus st = checkRollout(m, d, s, r, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (!policy && !ctrl && m->nu) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "neither controls nor a policy given");
  }
  if (policy && (!policy->act || !policy->vjp || (policy->nparam > 0 && !theta))) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "policy needs act and vjp callbacks and its parameters");
  }
  r->recorded = 0;
  r->policy = policy;
  r->theta = theta;
  int nq = m->nq, nv = m->nv, na = m->na, ns = m->nsensordata, nxs = nq + nv + na;
  for (int t = 0; t < r->T; t++) {
    if (t % r->stride == 0) mjdiff_saveState(m, d, r->stored + (size_t)r->nx * (t / r->stride));
    if (states) {
      mjdiff_saveState(m, d, r->segment);
      mju_copy(states + (size_t)nxs * t, r->segment, nxs);
    }
    char msg[400] = "";
    st = rolloutStep(m, d, s, r, t, ctrl, msg, sizeof(msg));
    if (st != MJDIFF_OK) {
      return mjdiff_error(err, errsz, st, "rollout step %d: %s", t, msg);
    }
    if (sensordata && ns) mju_copy(sensordata + (size_t)ns * t, d->sensordata, ns);
  }
  if (r->T % r->stride == 0) mjdiff_saveState(m, d, r->stored + (size_t)r->nx * (r->T / r->stride));
  applyForce(m, d, r, r->T);  // x_T with u_{T-1}: its readings
  if (states) {
    mju_copy(states + (size_t)nxs * r->T, d->qpos, nq);
    mju_copy(states + (size_t)nxs * r->T + nq, d->qvel, nv);
    mju_copy(states + (size_t)nxs * r->T + nq + nv, d->act, na);
  }
  r->recorded = 1;
  return MJDIFF_OK;
}

// fail if the sensor gradient dlds (nrow x ns) weights a sensor without a derivative
static mjdiffStatus checkSensorGrad(const mjModel* m, const mjtNum* dlds, int nrow, char* err,
                                    int errsz) {
  int ns = m->nsensordata;
  for (int i = 0; i < m->nsensor; i++) {
    if (mjdiff_sensorSupported(m, i)) continue;
    int adr = m->sensor_adr[i];
    for (int t = 0; t < nrow; t++) {
      for (int k = 0; k < m->sensor_dim[i]; k++) {
        if (dlds[(size_t)ns * t + adr + k] != 0) {
          const char* name = mj_id2name(m, mjOBJ_SENSOR, i);
          return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                              "the loss weights sensor %d ('%s', type %d), which has no "
                              "derivative", i, name ? name : "", m->sensor_type[i]);
        }
      }
    }
  }
  return MJDIFF_OK;
}

static int anyNonzero(const mjtNum* v, int n) {
  for (int i = 0; i < n; i++) {
    if (v[i] != 0) return 1;
  }
  return 0;
}

// the step-wise losses (terms, callback) at step t with d at x_t (controls set): value, and their
// gradients into r->lx, r->lu, r->ls (zeroed here); d's state is restored bit for bit
static mjdiffStatus stepLosses(const mjModel* m, mjData* d, const mjdiffModel* s,
                               mjdiffRollout* r, const mjdiffRolloutGrad* g, int t, mjtNum* value,
                               int* active, char* err, int errsz) {
  int T = r->T;
  const mjdiffStepLoss* cb = g->step_loss;
  int on_terms = g->terms && mjdiff_termsActive(g->terms, t, T);
  int on_cb = cb && cb->eval && (!cb->active || cb->active(t, T, cb->user));
  *active = on_terms || on_cb;
  if (!*active) return MJDIFF_OK;
  mju_zero(r->lx, r->ndx);
  mju_zero(r->lu, r->nu);
  mju_zero(r->ls, m->nsensordata);
  mjdiffStatus st = mjdiff_forward(m, d, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjtNum l = 0;
  if (on_terms) l += mjdiff_evalTerms(m, d, g->terms, t, T, r->lx, t < T ? r->lu : NULL, r->ls);
  // position terms on points the geometry parameters move: their direct dependence (loss.c)
  if (on_terms && g->grad_param && r->p && r->p->design &&
      mjdiff_termsHavePosition(g->terms)) {
    if (!r->tm) {
      r->tm = mj_copyModel(NULL, m);
      r->td = r->tm ? mj_makeData(r->tm) : NULL;
      r->tscratch = (mjtNum*)calloc((size_t)(r->np + mjdiff_designApplyScratch(r->p)) + 1,
                                    sizeof(mjtNum));
    }
    if (!r->td || !r->tscratch) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY,
                          "out of memory for the loss terms' parameter dependence");
    }
    mjdiff_termsParamDirect(m, d, g->terms, t, T, r->p, r->tm, r->td, r->tscratch,
                            g->grad_param);
  }
  if (on_cb) l += cb->eval(m, d, t, T, cb->user, r->lx, t < T ? r->lu : NULL, r->ls);
  if (!isfinite(l)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                        "the step-wise loss at step %d is not finite (%g)%s", t, l,
                        on_terms && compat_stackSpace(d) < 1000 ? ": mjData stack too small" : "");
  }
  *value += l;
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_rolloutGradient(const mjModel* m, mjData* d, const mjdiffModel* s,
                                    mjdiffRollout* r, const mjdiffRolloutGrad* g, char* err,
                                    int errsz) {
  mjdiffStatus st = checkRollout(m, d, s, r, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (!g) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "rollout gradient arguments are NULL");
  }
  if (!r->recorded) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "no forward rollout recorded: call mjdiff_rolloutForward first");
  }
  const mjtNum* dLdx = g->dLdx;
  const mjtNum* dLdu = g->dLdu;
  const mjtNum* dLds = g->dLds;
  mjtNum* grad_x0 = g->grad_x0;
  mjtNum* grad_ctrl = g->grad_ctrl;
  mjtNum* grad_theta = g->grad_theta;
  mjtNum* grad_param = g->grad_param;
  int T = r->T, nu = r->nu, np = r->np, ndx = r->ndx, nx = r->nx, ns = m->nsensordata;
  int ntheta = r->policy ? r->policy->nparam : 0;
  if (ntheta > 0 && !grad_theta) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "grad_theta is needed with a policy that has parameters");
  }
  if (!(g->decay >= 0 && g->decay <= 1)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "gradient decay %g is outside [0, 1] (0: none)", (double)g->decay);
  }
  mjtNum decay = g->decay > 0 ? g->decay : 1;
  int nforce = r->force ? r->force->nparam : 0, nv = m->nv;
  if (nforce > 0 && !g->grad_force) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "grad_force is needed with a force model that has parameters");
  }
  mjtNum* grad_force = g->grad_force;
  if (dLds) {
    st = checkSensorGrad(m, dLds, T, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  if (g->dLds_T) {
    st = checkSensorGrad(m, g->dLds_T, 1, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  if (g->terms) {
    st = mjdiff_checkTerms(g->terms, m, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  int stepwise = g->terms || (g->step_loss && g->step_loss->eval);
  mjtNum value = 0;

  if (grad_theta) mju_zero(grad_theta, ntheta);
  if (grad_force) mju_zero(grad_force, nforce);
  if (grad_param) mju_zero(grad_param, np);
  if (dLdx) {
    mju_copy(r->lambda, dLdx + (size_t)ndx * T, ndx);
  } else {
    mju_zero(r->lambda, ndx);
  }
  if (g->dLdx_T) mju_addTo(r->lambda, g->dLdx_T, ndx);
  mju_zero(r->uT, nu);

  // x_T: the step-wise losses and the readings there (controls held at u_{T-1})
  if (stepwise || g->dLds_T) {
    int last = T / r->stride;
    mjdiff_loadState(m, d, r->stored + (size_t)nx * last);
    for (int t = last * r->stride; t < T; t++) {
      stepInputs(m, d, r, t);
      st = mjdiff_step(m, d, s, err, errsz);
      if (st != MJDIFF_OK) return st;
    }
    stepInputs(m, d, r, T);
    mjdiff_saveState(m, d, r->segment);
    int active = 0;
    if (stepwise) {
      st = stepLosses(m, d, s, r, g, T, &value, &active, err, errsz);
      if (st != MJDIFF_OK) return st;
      mjdiff_loadState(m, d, r->segment);
      stepInputs(m, d, r, T);
    }
    if (active) {
      mju_addTo(r->lambda, r->lx, ndx);
    } else {
      mju_zero(r->ls, ns);
    }
    if (g->dLds_T) mju_addTo(r->ls, g->dLds_T, ns);
    if (ns && anyNonzero(r->ls, ns)) {
      st = checkSensorGrad(m, r->ls, 1, err, errsz);
      if (st != MJDIFF_OK) return st;
      mju_zero(r->ap, np);
      st = mjdiff_sensorVJP(m, d, s, r->w, r->ls, r->lambda, r->uT, r->ap, err, errsz);
      if (st != MJDIFF_OK) return st;
      if (grad_param) mju_addTo(grad_param, r->ap, np);
      if (r->force) {
        mju_zero(r->af, nv);
        st = forceAdjoint(r, nv, err, errsz);
        if (st != MJDIFF_OK) return st;
        r->force->vjp(m, d, r->ftheta, r->force->user, r->af, r->lambda, r->uT, grad_force);
      }
    }
  }

  // segments from the last: recompute their states from the stored start, then sweep back
  int nseg = (T + r->stride - 1) / r->stride;
  for (int seg = nseg - 1; seg >= 0; seg--) {
    int t0 = seg * r->stride, t1 = t0 + r->stride < T ? t0 + r->stride : T;
    mjdiff_loadState(m, d, r->stored + (size_t)nx * seg);
    mju_copy(r->segment, r->stored + (size_t)nx * seg, nx);
    for (int t = t0 + 1; t < t1; t++) {
      stepInputs(m, d, r, t - 1);
      st = mjdiff_step(m, d, s, err, errsz);
      if (st != MJDIFF_OK) return st;
      mjdiff_saveState(m, d, r->segment + (size_t)nx * (t - t0));
    }

    for (int t = t1 - 1; t >= t0; t--) {
      const mjtNum* xt = r->segment + (size_t)nx * (t - t0);
      mjdiff_loadState(m, d, xt);
      stepInputs(m, d, r, t);
      // the implicit step's Newton starts from the stored v_{t+1}: one iteration, on the
      // forward pass's own solution (mjdiff_stepDerivHint)
      const mjtNum* xnext = t + 1 < t1    ? r->segment + (size_t)nx * (t + 1 - t0)
                            : seg + 1 < nseg ? r->stored + (size_t)nx * (seg + 1)
                                             : NULL;
      mjdiff_stepDerivHint(r->w, xnext ? xnext + m->nq : NULL);
      if (decay != 1) mju_scl(r->lambda, r->lambda, decay, ndx);
      st = mjdiff_stepVJP(m, d, s, r->w, r->lambda, r->ax, r->au, r->ap, err, errsz);
      if (st != MJDIFF_OK) return st;
      if (r->force) {
        mju_zero(r->af, nv);
        st = forceAdjoint(r, nv, err, errsz);
        if (st != MJDIFF_OK) return st;
      }
      int active = 0;
      if (stepwise) {
        st = stepLosses(m, d, s, r, g, t, &value, &active, err, errsz);
        if (st != MJDIFF_OK) return st;
        mjdiff_loadState(m, d, xt);
        stepInputs(m, d, r, t);
      }
      const mjtNum* st_ls = NULL;
      if (active && ns && anyNonzero(r->ls, ns)) {
        if (dLds) mju_addTo(r->ls, dLds + (size_t)ns * t, ns);
        st = checkSensorGrad(m, r->ls, 1, err, errsz);
        if (st != MJDIFF_OK) return st;
        st_ls = r->ls;
      } else if (dLds) {
        st_ls = dLds + (size_t)ns * t;
      }
      if (st_ls) {
        st = mjdiff_sensorVJP(m, d, s, r->w, st_ls, r->ax, r->au, r->ap, err, errsz);
        if (st != MJDIFF_OK) return st;
        st = forceAdjoint(r, nv, err, errsz);
        if (st != MJDIFF_OK) return st;
      }
      if (r->force) {
        r->force->vjp(m, d, r->ftheta, r->force->user, r->af, r->ax, r->au, grad_force);
      }
      if (active) {
        mju_addTo(r->ax, r->lx, ndx);
        mju_addTo(r->au, r->lu, nu);
      }
      if (t == T - 1) mju_addTo(r->au, r->uT, nu);
      for (int i = 0; i < nu; i++) r->gu[i] = r->au[i] + (dLdu ? dLdu[(size_t)nu * t + i] : 0);
      if (r->policy) {
        r->policy->vjp(m, d, r->theta, r->policy->user, r->gu, r->ax, grad_theta);
      }
      if (grad_ctrl) mju_copy(grad_ctrl + (size_t)nu * t, r->gu, nu);
      if (grad_param) mju_addTo(grad_param, r->ap, np);
      for (int i = 0; i < ndx; i++) {
        r->lambda[i] = r->ax[i] + (dLdx ? dLdx[(size_t)ndx * t + i] : 0);
      }
    }
  }
  if (grad_x0) mju_copy(grad_x0, r->lambda, ndx);
  if (g->loss) *g->loss = value;

  // leave d at x_T
  int last = T / r->stride;
  mjdiff_loadState(m, d, r->stored + (size_t)nx * last);
  for (int t = last * r->stride; t < T; t++) {
    stepInputs(m, d, r, t);
    st = mjdiff_step(m, d, s, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  if (r->force) stepInputs(m, d, r, T);
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_rolloutBackward(const mjModel* m, mjData* d, const mjdiffModel* s,
                                    mjdiffRollout* r, const mjtNum* dLdx, const mjtNum* dLdu,
                                    const mjtNum* dLds, mjtNum* grad_x0, mjtNum* grad_ctrl,
                                    mjtNum* grad_theta, mjtNum* grad_param, char* err,
                                    int errsz) {
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.dLdx = dLdx;
  g.dLdu = dLdu;
  g.dLds = dLds;
  g.grad_x0 = grad_x0;
  g.grad_ctrl = grad_ctrl;
  g.grad_theta = grad_theta;
  g.grad_param = grad_param;
  return mjdiff_rolloutGradient(m, d, s, r, &g, err, errsz);
}

//---------------------------------- batches ------------------------------------------------------

typedef struct batchJob_ {
  const mjModel* m;
  const mjdiffModel* s;
  const mjdiffParams* p;
  int T;
  const mjdiffRolloutOptions* opt;
  const mjdiffLoss* loss;
  const mjdiffTerms* terms;    // nullable: loss terms (mjdiff_runBatch)
  mjdiffBatchItem* items;
  int nitem, nthread, thread;
} batchJob;

static mjdiffStatus runItem(const batchJob* job, const mjModel* m, const mjdiffModel* s,
                            mjData* d, mjdiffRollout* r, mjtNum* buf, mjdiffBatchItem* it) {
  int T = job->T, nu = m->nu, ns = m->nsensordata, ndx = 2 * m->nv + m->na;
  int nxs = m->nq + m->nv + m->na;
  mjtNum* states = buf;
  mjtNum* sens = states + (size_t)(T + 1) * nxs;
  mjtNum* dLdx = sens + (size_t)T * ns;
  mjtNum* dLdu = dLdx + (size_t)(T + 1) * ndx;
  mjtNum* dLds = dLdu + (size_t)T * nu;
  mj_resetData(m, d);
  mju_copy(d->qpos, it->x0, m->nq);
  mju_copy(d->qvel, it->x0 + m->nq, m->nv);
  mju_copy(d->act, it->x0 + m->nq + m->nv, m->na);
  mjdiffStatus st = mjdiff_rolloutForward(m, d, s, r, it->ctrl, NULL, NULL, states, sens, NULL, 0);
  if (st != MJDIFF_OK) return st;
  if (it->states) mju_copy(it->states, states, (size_t)(T + 1) * nxs);
  if (it->sensordata && ns) mju_copy(it->sensordata, sens, (size_t)T * ns);
  mju_zero(dLdx, (size_t)(T + 1) * ndx + (size_t)T * nu + (size_t)T * ns);
  it->loss = 0;
  if (job->loss && job->loss->grad) {
    int index = (int)(it - job->items);
    it->loss = job->loss->grad(m, index, T, states, r->ctrl, sens, job->loss->user, dLdx, dLdu,
                               ns ? dLds : NULL);
  }
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.dLdx = dLdx;
  g.dLdu = dLdu;
  g.dLds = ns ? dLds : NULL;
  g.terms = job->terms;
  mjtNum value = 0;
  g.loss = &value;
  g.grad_x0 = it->grad_x0;
  g.grad_ctrl = it->grad_ctrl;
  g.grad_param = it->grad_param;
  st = mjdiff_rolloutGradient(m, d, s, r, &g, NULL, 0);
  it->loss += value;
  return st;
}

static void* batchThread(void* arg) {
  batchJob* job = (batchJob*)arg;
  const mjModel* m0 = job->m;
  int T = job->T, ns = m0->nsensordata, ndx = 2 * m0->nv + m0->na;
  int nxs = m0->nq + m0->nv + m0->na;

  // items with their own parameter values run on this thread's copies of the model
  int copies = 0;
  for (int i = job->thread; i < job->nitem; i += job->nthread) {
    copies |= job->items[i].param_values != NULL;
  }
  mjModel* mc = copies ? mj_copyModel(NULL, m0) : NULL;
  mjdiffModel* sc = NULL;
  mjdiffStatus st = copies && !mc ? MJDIFF_ERR_MEMORY : MJDIFF_OK;
  if (mc && st == MJDIFF_OK) st = mjdiff_copyModel(job->s, mc, &sc, NULL, 0);
  const mjModel* m = mc ? mc : m0;
  const mjdiffModel* s = sc ? sc : job->s;

  mjData* d = mj_makeData(m);
  mjdiffRollout* r = NULL;
  size_t n = (size_t)(T + 1) * nxs + (size_t)T * ns + (size_t)(T + 1) * ndx + (size_t)T * m->nu +
             (size_t)T * ns + 1;
  mjtNum* buf = (mjtNum*)malloc(n * sizeof(mjtNum));
  if (st == MJDIFF_OK) {
    st = d && buf ? mjdiff_makeRollout(m, s, job->p, T, job->opt, &r, NULL, 0) : MJDIFF_ERR_MEMORY;
  }
  // items thread, thread + nthread, ...: a fixed assignment, so results do not depend on timing
  for (int i = job->thread; i < job->nitem; i += job->nthread) {
    mjdiffBatchItem* it = job->items + i;
    mjdiffStatus sti = st;
    if (sti == MJDIFF_OK && mc) {
      // the batch's own values, or this item's
      mj_copyModel(mc, m0);
      mjdiffModel* fresh = NULL;
      sti = mjdiff_copyModel(job->s, mc, &fresh, NULL, 0);
      if (sti == MJDIFF_OK) {
        mjdiff_freeModel(sc);
        sc = fresh;
        s = sc;
        mjdiff_freeRollout(r);
        r = NULL;
        sti = mjdiff_makeRollout(m, s, job->p, T, job->opt, &r, NULL, 0);
      }
      if (sti == MJDIFF_OK && it->param_values) {
        sti = mjdiff_setParamValues(mc, sc, job->p, it->param_values, NULL, 0);
      }
    }
    it->status = sti == MJDIFF_OK ? runItem(job, m, s, d, r, buf, it) : sti;
  }
  mjdiff_freeRollout(r);
  free(buf);
  if (d) mj_deleteData(d);
  mjdiff_freeModel(sc);
  if (mc) mj_deleteModel(mc);
  return NULL;
}

static mjdiffStatus runBatch(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p,
                             int horizon, const mjdiffRolloutOptions* opt, const mjdiffLoss* loss,
                             const mjdiffTerms* terms, int nthread, mjdiffBatchItem* items,
                             int nitem, char* err, int errsz) {
  mjdiffStatus st = mjdiff_checkPair(m, s, err, errsz);
  if (st != MJDIFF_OK) return st;
  if (!items || nitem < 0 || nthread < 1 || horizon < 1 || horizon > MAX_HORIZON) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "batch needs items, nitem >= 0, nthread >= 1 and horizon in [1, %d]",
                        MAX_HORIZON);
  }
  for (int i = 0; i < nitem; i++) {
    if (!items[i].x0 || (!items[i].ctrl && m->nu)) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "items[%d].%s is NULL", i,
                          items[i].x0 ? "ctrl" : "x0");
    }
  }
  if (nthread > nitem) nthread = nitem > 0 ? nitem : 1;
  batchJob jobs[64];
  pthread_t threads[64];
  if (nthread > 64) nthread = 64;
  int started[64] = {0};
  for (int t = 0; t < nthread; t++) {
    jobs[t] = (batchJob){m, s, p, horizon, opt, loss, terms, items, nitem, nthread, t};
  }
  for (int t = 1; t < nthread; t++) {
    started[t] = !pthread_create(threads + t, NULL, batchThread, jobs + t);
    if (!started[t]) jobs[t].nthread = 0;
  }
  batchThread(jobs);
  for (int t = 1; t < nthread; t++) {
    if (started[t]) pthread_join(threads[t], NULL);
  }
  // threads that could not start: their items run here, in the same order
  for (int t = 1; t < nthread; t++) {
    if (!started[t]) {
      jobs[t].nthread = nthread;
      batchThread(jobs + t);
    }
  }
  for (int i = 0; i < nitem; i++) {
    if (items[i].status != MJDIFF_OK) {
      return mjdiff_error(err, errsz, items[i].status, "batch item %d failed (%s)", i,
                          mjdiff_statusName(items[i].status));
    }
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_rolloutBatch(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p,
                                 int horizon, const mjdiffRolloutOptions* opt,
                                 const mjdiffLoss* loss, int nthread, mjdiffBatchItem* items,
                                 int nitem, char* err, int errsz) {
  return runBatch(m, s, p, horizon, opt, loss, NULL, nthread, items, nitem, err, errsz);
}

void mjdiff_defaultBatchDef(mjdiffBatchDef* def) {
  memset(def, 0, sizeof(*def));
  mjdiff_defaultRolloutOptions(&def->options);
  def->nthread = 1;
}

mjdiffStatus mjdiff_runBatch(const mjModel* m, const mjdiffModel* s, const mjdiffBatchDef* def,
                             mjdiffBatchItem* items, int nitem, char* err, int errsz) {
  if (!def) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "batch definition is NULL");
  return runBatch(m, s, def->params, def->horizon, &def->options, def->loss, def->terms,
                  def->nthread, items, nitem, err, errsz);
}
