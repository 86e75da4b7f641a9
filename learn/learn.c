// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Analytic policy gradients (<mjdiff/learn.h>): policy rollouts on the smooth model, their task
// cost and its gradient in the policy's weights by backpropagation through time.
//
// Forward, one rollout (x_0 from the item's generator, goal g set in the thread's task copy):
//   o_t = (qpos_t, qvel_t, act_t, g[, g - p(q_t)]),  y_t = MLP(o_t; theta),  u_t = c + r .* tanh(y_t)
//   (p: the goal term's object, by mj_kinematics and mj_comPos on a scratch mjData, so that the
//   rollout's own data is not touched; a_dq -= J_p' a_e with J_p from mj_jac there)
//   x_{t+1} = f(x_t, u_t)   (mjdiff_step through mjdiff_rolloutForward)
//   J = (1/T) sum_{t<T} l(x_t, u_t) + l_T(x_T)
// Backward (mjdiff_rolloutGradient with a step loss and the policy's VJP):
//   dJ/dx_t += (1/T) dl/dx_t,  dJ/du_t += (1/T) dl/du_t   (t < T);   dJ/dx_T += dl_T/dx_T
//   the sweep propagates lambda_t = dJ/dx_t back through the step VJP; at every step the policy
//   VJP gets g_u = dJ/du_t and adds
//     a_y = g_u .* r .* (1 - tanh(y)^2),  (a_o, a_theta) = MLP'(o_t) a_y,
//     a_x += T_x' a_o[0 .. nx),  g_theta += a_theta
//   where T_x' moves a state-layout gradient to the tangent layout (mjdiff_stateGradToTangent).
// The VJP recomputes the network's forward pass at o_t (its workspace holds only the last one):
// the rollout records states, not activations.
// Batches: item b's generator is seeded by splitmix64(seed, b) alone; items run on threads in any
// order, each writes its own row of costs and gradients, and the mean is summed in the order
// b = 0 .. B-1, so results do not depend on the thread count.
// Cost without a gradient (the derivative-free baselines, evaluation): the same loop with
// mjdiff_step; l(x_t, u_t) after mj_kinematics, mj_comPos, mj_comVel at x_t (all the task's
// residuals read: positions, frames, cdof, cvel; the same as after the smooth forward pass).

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/learn.h>
#include <mjdiff/params.h>
#include <mjdiff/random.h>
#include <mjdiff/rollout.h>
#include <mjdiff/state.h>

//---------------------------------- options -------------------------------------------------------

void mjdiff_defaultLearnOptions(mjdiffLearnOptions* opt) {
  memset(opt, 0, sizeof(*opt));
  opt->horizon = 100;
  opt->key = 0;
  opt->goal_term = -1;
}

// 1 if joint j is observed as (cos q, sin q): a hinge without a range, with trig_hinges
static int trigHinge(const mjModel* m, const mjdiffLearnOptions* opt, int j) {
  return opt && opt->trig_hinges && m->jnt_type[j] == mjJNT_HINGE && !m->jnt_limited[j];
}

int mjdiff_learnObsSize(const mjModel* m, const mjdiffLearnOptions* opt) {
  int goal = opt && opt->goal_term >= 0, ntrig = 0;
  for (int j = 0; j < m->njnt; j++) ntrig += trigHinge(m, opt, j);
  return (int)(m->nq + m->nv + m->na) + ntrig + (goal ? 3 : 0) +
         (goal && opt->goal_relative ? 3 : 0);
}

static uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t mjdiff_learnItemSeed(uint64_t seed, int b) {
  return splitmix(splitmix(seed) ^ (uint64_t)(uint32_t)b);
}

#define MAXTHREAD 256

static mjdiffStatus fail(char* err, int errsz, mjdiffStatus st, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static mjdiffStatus fail(char* err, int errsz, mjdiffStatus st, const char* fmt, ...) {
  if (err && errsz > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, (size_t)errsz, fmt, ap);
    va_end(ap);
  }
  return st;
}

//---------------------------------- learner -------------------------------------------------------

typedef struct worker_ worker;

struct mjdiffLearner_ {
  const mjModel* m;
  const mjdiffModel* s;
  const mjModel* native;
  mjdiffLearnOptions opt;
  int nobs, nu, nx, ndx, nparam;
  int nqo;                     // the observation's qpos part: nq + the trig hinges
  unsigned char* trigq;        // nq: 1 at the qpos of a hinge observed as (cos, sin)
  unsigned char* noisy;        // njnt: 1 at a joint the start noise moves
  unsigned char* hideq;        // nq: 1 at a qpos the policy does not see (hide_joints)
  int nrand;                   // domain randomisation: names (copied), factor ranges, the
  char** rand_names;           // number of values each name expands to, the training model's
  double* rand_lo;             // values (nrand_values)
  double* rand_hi;
  int* rand_count;
  int nrand_values;
  double* rand_nominal;
  double* ctr;                 // nu: ctrlrange centre and half-width (0: unlimited)
  double* half;
  double* key_qpos;            // nq: start qpos (keyframe or qpos0)
  double* key_qvel;            // nv
  double* key_act;             // na
  int obj_type, obj_id;        // goal_relative: the goal term's object
  int nthread;
  worker* workers;

  // the job of the current call
  const mjdiffMLP* const* nets;
  int nnet, B, njob;
  uint64_t seed;
  int want_grad;
  int plant;
  int steps_eval;              // evaluation steps
  const mjdiffLearnShort* sh;  // mjdiff_learnObjectiveShort's call (else NULL)
  double vscale;               // its value_scale (0 -> 1)
  const double* logstd;        // stochastic rollouts: exploration (nu), records
  double* rec_obs;
  double* rec_act;
  double* rec_cost;
  double* grad_rows;           // njob x nparam (gradients)
  int grad_cap;
  double* costs;               // njob
  int* success;                // njob
  mjdiffStatus* status;        // njob
  int status_cap;
};

struct worker_ {
  mjdiffLearner* L;
  int id;
  mjData* d;
  mjData* dn;                  // native plant's data
  mjData* dk;                  // scratch for the kinematics of goal_relative
  double* jac;                 // 3 x nv
  mjdiffTask* task;
  mjdiffRollout* r;
  mjdiffMLPWork* work;
  const mjdiffMLP* net;        // the item's network
  double goal[3];
  double* obs;                 // nobs
  double* y;                   // nu
  double* ay;                  // nu
  double* ao;                  // nobs
  double* gstate;              // nx: a_o's state part in the state layout
  double* gtan;                // ndx
  double* gx;                  // ndx: task cost gradients
  double* gu;                  // nu
  double* x0;                  // nx
  mjModel* mr;                 // domain randomisation: the worker's copy of the training model,
  mjdiffModel* sr;             // its smooth model, the randomised parameters and their values
  mjdiffParams* pr;
  double* rvals;
  mjdiffRollout* rr;           // the rollout for that copy
  mjdiffMLPWork* vwork;        // the value network's workspace (mjdiff_learnObjectiveShort)
  const mjdiffMLP* vwork_net;  // the network it was made for, and its weight count
  int vwork_np;
  int item;                    // the rollout in flight (its rows of the short call's records)
  int explore;                 // 1: this rollout adds the options' action noise (training)
  char err[512];
  int fail_item;
  int netfail;                 // the network's forward or VJP failed in a callback
};

static void freeWorkerPolicy(worker* w);

void mjdiff_freeLearner(mjdiffLearner* L) {
  if (!L) return;
  for (int i = 0; L->workers && i < L->nthread; i++) {
    worker* w = L->workers + i;
    if (w->d) mj_deleteData(w->d);
    if (w->dn) mj_deleteData(w->dn);
    mjdiff_freeTask(w->task);
    mjdiff_freeRollout(w->r);
    mjdiff_freeMLPWork(w->vwork);
    freeWorkerPolicy(w);
  }
  free(L->workers);
  free(L->trigq);
  free(L->noisy);
  free(L->hideq);
  for (int i = 0; L->rand_names && i < L->nrand; i++) free(L->rand_names[i]);
  free(L->rand_names);
  free(L->rand_lo);
  free(L->rand_count);
  free(L->rand_nominal);
  free(L->ctr);
  free(L->key_qpos);
  free(L->grad_rows);
  free(L->costs);
  free(L->success);
  free(L->status);
  free(L);
}

static mjdiffStatus failMem(mjdiffLearner* L, char* err, int errsz) {
  mjdiff_freeLearner(L);
  return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
}

// mask (njnt) of the joints named in the comma-separated list of option `what`, or, for an empty
// list, every hinge and slide when `all` (else none). Named joints must be hinges or slides, or
// free joints where `free_ok`.
static mjdiffStatus jointList(const mjModel* m, const char* what, const char* list, int all,
                              int free_ok, unsigned char* mask, char* err, int errsz) {
  for (int j = 0; j < m->njnt; j++) {
    int type = m->jnt_type[j];
    mask[j] = all && (!list || !*list) && (type == mjJNT_HINGE || type == mjJNT_SLIDE);
  }
  for (const char* p = list && *list ? list : NULL; p;) {
    const char* end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char name[256];
    if (len == 0 || len >= sizeof(name)) {
      return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: %s '%s': an empty or over-long joint "
                  "name", what, list);
    }
    memcpy(name, p, len);
    name[len] = 0;
    int j = mj_name2id(m, mjOBJ_JOINT, name);
    if (j < 0) return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: %s: no joint '%s'", what, name);
    int type = m->jnt_type[j];
    if (type != mjJNT_HINGE && type != mjJNT_SLIDE && !(free_ok && type == mjJNT_FREE)) {
      return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: %s: joint '%s' is a %s joint (%s)", what,
                  name, type == mjJNT_FREE ? "free" : "ball",
                  free_ok ? "hinges, slides and free joints' positions can be hidden"
                          : "the start noise moves hinges and slides");
    }
    mask[j] = 1;
    p = end ? end + 1 : NULL;
  }
  return MJDIFF_OK;
}

// domain randomisation (opt->nrandom > 0): the names copied, their factor ranges checked, and
// the number of values each expands to and the training model's values, from one selection per
// name and one of all (which must be their concatenation: no value named twice)
static mjdiffStatus randomised(mjdiffLearner* L, const mjModel* m, const mjdiffModel* s,
                               const mjdiffLearnOptions* opt, char* err, int errsz) {
  L->opt.random_names = NULL;  // (read here, not kept)
  L->opt.random_lo = L->opt.random_hi = NULL;
  int n = opt->nrandom;
  if (n <= 0) return MJDIFF_OK;
  if (!opt->random_names || !opt->random_lo || !opt->random_hi) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: nrandom %d without names or ranges", n);
  }
  // the per-thread copies are plain models: an attached one's copy would carry the disable flags
  // the adapter set (no contacts, limits, equalities)
  if (mjdiff_attached(m)) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: domain randomisation of a model "
                "attached to mj_step (mjdiff_attach): detach it first");
  }
  L->rand_names = (char**)calloc((size_t)n, sizeof(char*));
  L->rand_lo = (double*)calloc((size_t)(2 * n), sizeof(double));  // lo, then hi
  L->rand_count = (int*)calloc((size_t)n, sizeof(int));
  if (!L->rand_names || !L->rand_lo || !L->rand_count) {
    return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
  }
  L->rand_hi = L->rand_lo + n;
  L->nrand = n;
  for (int i = 0; i < n; i++) {
    const char* name = opt->random_names[i];
    double lo = opt->random_lo[i], hi = opt->random_hi[i];
    if (!name) return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: random name %d is NULL", i);
    if (!(lo > 0) || !(lo <= hi) || !isfinite(hi)) {
      return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: randomised '%s': factors %g..%g (need "
                  "0 < lo <= hi)", name, lo, hi);
    }
    L->rand_names[i] = (char*)malloc(strlen(name) + 1);
    if (!L->rand_names[i]) return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
    strcpy(L->rand_names[i], name);
    L->rand_lo[i] = lo;
    L->rand_hi[i] = hi;
    mjdiffParams* one = NULL;
    char why[600];
    if (mjdiff_makeParams(m, s, &name, 1, &one, why, sizeof(why)) != MJDIFF_OK) {
      return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: randomised '%s': %s", name, why);
    }
    // refused: a geom's smooth-model numerics (setting one, even to its own value, replaces its
    // pairs' combined law) and geometry (the observation's kinematics run on the training model)
    for (int k = 0; k < mjdiff_paramCount(one); k++) {
      int cls = mjdiff_paramClass(one, k);
      if (cls == MJDIFF_PARAM_SMOOTH_GEOM || cls == MJDIFF_PARAM_GEOMETRY) {
        int smooth = cls == MJDIFF_PARAM_SMOOTH_GEOM;
        mjdiff_freeParams(one);
        return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: randomised '%s': %s parameters "
                    "cannot be randomised (%s)", name, smooth ? "a geom's smooth-model" :
                    "geometry", smooth ? "a value set on one geom replaces its pairs' combined "
                    "law: a factor of 1 would change the model" :
                    "the policy observes the training model's kinematics");
      }
    }
    L->rand_count[i] = mjdiff_paramCount(one);
    L->nrand_values += L->rand_count[i];
    mjdiff_freeParams(one);
  }
  mjdiffParams* all = NULL;
  if (mjdiff_makeParams(m, s, (const char* const*)L->rand_names, n, &all, err, errsz) !=
      MJDIFF_OK) {
    return MJDIFF_ERR_VALUE;
  }
  int np = mjdiff_paramCount(all);
  L->rand_nominal = (double*)calloc((size_t)np + 1, sizeof(double));
  if (L->rand_nominal) mjdiff_getParamValues(m, s, all, L->rand_nominal);
  mjdiff_freeParams(all);
  if (!L->rand_nominal) return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
  if (np != L->nrand_values) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: the randomised names overlap (%d values "
                "named, %d distinct)", L->nrand_values, np);
  }
  return MJDIFF_OK;
}

// before a training call with domain randomisation: each worker's copy of the training model
// and its smooth model as they are now (the caller may have changed the smooth model's options
// between calls), its selection of the randomised parameters and a rollout made for the copy
static mjdiffStatus syncRandomised(mjdiffLearner* L, char* err, int errsz) {
  for (int i = 0; i < L->nthread; i++) {
    worker* w = L->workers + i;
    mjdiff_freeRollout(w->rr);
    w->rr = NULL;
    mjdiff_freeParams(w->pr);
    w->pr = NULL;
    mjdiff_freeModel(w->sr);
    w->sr = NULL;
    w->mr = mj_copyModel(w->mr, L->m);
    if (!w->rvals) w->rvals = (double*)calloc((size_t)L->nrand_values + 1, sizeof(double));
    if (!w->mr || !w->rvals) return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
    mjdiffStatus st = mjdiff_copyModel(L->s, w->mr, &w->sr, err, errsz);
    if (st == MJDIFF_OK) {
      st = mjdiff_makeParams(w->mr, w->sr, (const char* const*)L->rand_names, L->nrand, &w->pr,
                             err, errsz);
    }
    if (st == MJDIFF_OK) {
      st = mjdiff_makeRollout(w->mr, w->sr, NULL, L->opt.horizon, NULL, &w->rr, err, errsz);
    }
    if (st != MJDIFF_OK) return st;
  }
  return MJDIFF_OK;
}

// the model of item b's rollout: with domain randomisation in a training call the worker's copy
// with item b's draws set (a generator of its own, seeded from the item's seed), else the
// training model
static mjdiffStatus itemModel(worker* w, int b, const mjModel** m, const mjdiffModel** s,
                              mjdiffRollout** r) {
  mjdiffLearner* L = w->L;
  *m = L->m;
  *s = L->s;
  if (r) *r = w->r;
  if (!L->nrand || L->plant >= 0) return MJDIFF_OK;
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, mjdiff_learnItemSeed(L->seed, b) ^ 0x72616E646F6DULL);
  for (int i = 0, k = 0; i < L->nrand; i++) {
    double f = L->rand_lo[i] + (L->rand_hi[i] - L->rand_lo[i]) * mjdiff_rngUniform(&rng);
    for (int c = 0; c < L->rand_count[i]; c++, k++) w->rvals[k] = f * L->rand_nominal[k];
  }
  mjdiffStatus st = mjdiff_setParamValues(w->mr, w->sr, w->pr, w->rvals, w->err, sizeof(w->err));
  if (st != MJDIFF_OK) return st;
  *m = w->mr;
  *s = w->sr;
  if (r) *r = w->rr;
  return MJDIFF_OK;
}

// the policy's part of a worker: kinematics scratch, buffers, network workspace (freed by
// freeWorkerPolicy)
static mjdiffStatus workerPolicy(mjdiffLearner* L, worker* w, int id, const mjdiffMLP* net,
                                 char* err, int errsz) {
  const mjModel* m = L->m;
  w->L = L;
  w->id = id;
  w->dk = mj_makeData(m);
  w->jac = (double*)calloc((size_t)(3 * m->nv + 1), sizeof(double));
  size_t nd = (size_t)(3 * L->nobs + 3 * L->nu + L->nx * 2 + 2 * L->ndx + 8);
  w->obs = (double*)calloc(nd, sizeof(double));
  if (!w->dk || !w->jac || !w->obs) {
    return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
  }
  w->y = w->obs + L->nobs;
  w->ay = w->y + L->nu;
  w->ao = w->ay + L->nu;
  w->gstate = w->ao + L->nobs;
  w->gtan = w->gstate + L->nx;
  w->gx = w->gtan + L->ndx;
  w->gu = w->gx + L->ndx;
  w->x0 = w->gu + L->nu;
  return mjdiff_makeMLPWork(net, 1, &w->work, err, errsz);
}

static void freeWorkerPolicy(worker* w) {
  mjdiff_freeRollout(w->rr);
  mjdiff_freeParams(w->pr);
  mjdiff_freeModel(w->sr);
  if (w->mr) mj_deleteModel(w->mr);
  free(w->rvals);
  if (w->dk) mj_deleteData(w->dk);
  free(w->jac);
  mjdiff_freeMLPWork(w->work);
  free(w->obs);
}

mjdiffStatus mjdiff_makeLearner(const mjModel* m, const mjdiffModel* s, const mjModel* native,
                                const mjdiffTask* task, const mjdiffLearnOptions* opt,
                                const mjdiffMLP* net, int nthread, mjdiffLearner** out,
                                char* err, int errsz) {
  if (!out) return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: out is NULL");
  *out = NULL;
  if (!m || !s || !task || !opt || !net) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: NULL model, task, options or network");
  }
  if (opt->horizon < 1) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: horizon %d (must be >= 1)", opt->horizon);
  }
  if (nthread < 1 || nthread > MAXTHREAD) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: threads %d (must be 1..%d)", nthread,
                        MAXTHREAD);
  }
  if (opt->key < -1 || (opt->key >= m->nkey && !(opt->key == 0 && m->nkey == 0))) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: keyframe %d does not exist (the model has %d)",
                        opt->key, (int)m->nkey);
  }
  if (!(opt->start_noise >= 0) || !(opt->vel_noise >= 0)) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: start noise must be >= 0");
  }
  if (!(opt->grad_decay >= 0 && opt->grad_decay <= 1)) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: grad_decay %g is outside [0, 1]",
                opt->grad_decay);
  }
  if (opt->goal_term >= 0) {
    double p[3];
    if (mjdiff_taskGetPoint(task, opt->goal_term, p) != 0) {
      return fail(err, errsz, MJDIFF_ERR_VALUE,
                          "learner: goal term %d is not a position term with a fixed target point "
                          "(the task has %d terms)", opt->goal_term, mjdiff_taskTermCount(task));
    }
    for (int k = 0; k < 3; k++) {
      if (!(opt->goal_lo[k] <= opt->goal_hi[k]) || !isfinite(opt->goal_lo[k]) || !isfinite(opt->goal_hi[k])) {
        return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: goal box axis %d: lo %g > hi %g", k,
                            opt->goal_lo[k], opt->goal_hi[k]);
      }
    }
  }
  const mjdiffMLPDef* def = mjdiff_mlpDef(net);
  int nobs = mjdiff_learnObsSize(m, opt);
  if (def->nin != nobs || def->nout != m->nu) {
    return fail(err, errsz, MJDIFF_ERR_VALUE,
                        "learner: the network maps %d inputs to %d outputs; the policy needs %d "
                        "observations (qpos %d, qvel %d, act %d, goal %d) to %d controls",
                        def->nin, def->nout, nobs,
                        nobs - (int)(m->nv + m->na) -
                            (opt->goal_term >= 0 ? 3 + 3 * (opt->goal_relative != 0) : 0),
                        (int)m->nv, (int)m->na,
                        opt->goal_term >= 0 ? 3 + 3 * (opt->goal_relative != 0) : 0,
                        (int)m->nu);
  }
  if (native && (native->nq != m->nq || native->nv != m->nv || native->nu != m->nu ||
                 native->na != m->na)) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: the native model's sizes differ from the training model's");
  }

  mjdiffLearner* L = (mjdiffLearner*)calloc(1, sizeof(mjdiffLearner));
  if (!L) return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
  L->m = m;
  L->s = s;
  L->native = native;
  L->opt = *opt;
  L->nobs = nobs;
  L->nu = (int)m->nu;
  L->nx = (int)(m->nq + m->nv + m->na);
  L->nqo = (int)m->nq;
  L->trigq = (unsigned char*)calloc((size_t)m->nq + 1, 1);
  if (!L->trigq) {
    free(L);
    return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
  }
  for (int j = 0; j < m->njnt; j++) {
    if (trigHinge(m, opt, j)) {
      L->trigq[m->jnt_qposadr[j]] = 1;
      L->nqo++;
    }
  }
  L->opt.noise_joints = NULL;  // (read here, not kept)
  L->noisy = (unsigned char*)calloc((size_t)m->njnt + 1, 1);
  if (!L->noisy) return failMem(L, err, errsz);
  mjdiffStatus stj = jointList(m, "noise_joints", opt->noise_joints, 1, 0, L->noisy, err, errsz);
  // hidden joints: a hinge's or slide's qpos (both entries of a trig hinge), a free joint's
  // position (its 3 entries; the orientation stays observed)
  L->opt.hide_joints = NULL;  // (read here, not kept)
  L->hideq = (unsigned char*)calloc((size_t)m->nq + 1, 1);
  unsigned char* hidden = (unsigned char*)calloc((size_t)m->njnt + 1, 1);
  if (!L->hideq || !hidden) {
    free(hidden);
    return failMem(L, err, errsz);
  }
  if (stj == MJDIFF_OK) {
    stj = jointList(m, "hide_joints", opt->hide_joints, 0, 1, hidden, err, errsz);
  }
  for (int j = 0; j < m->njnt && stj == MJDIFF_OK; j++) {
    if (!hidden[j]) continue;
    int n = m->jnt_type[j] == mjJNT_FREE ? 3 : 1;
    memset(L->hideq + m->jnt_qposadr[j], 1, (size_t)n);
  }
  free(hidden);
  if (stj == MJDIFF_OK) stj = randomised(L, m, s, opt, err, errsz);
  if (stj != MJDIFF_OK) {
    mjdiff_freeLearner(L);
    return stj;
  }
  L->ndx = (int)(2 * m->nv + m->na);
  L->nparam = mjdiff_mlpParamCount(net);
  L->obj_type = mjOBJ_UNKNOWN;
  L->obj_id = -1;
  if (opt->goal_term >= 0 && opt->goal_relative) {
    mjdiff_taskGetObject(task, opt->goal_term, &L->obj_type, &L->obj_id);
    if (L->obj_type != mjOBJ_BODY && L->obj_type != mjOBJ_SITE) {
      mjdiff_freeLearner(L);
      return fail(err, errsz, MJDIFF_ERR_VALUE,
                  "learner: goal term %d: goal_relative needs a body or site as its object",
                  opt->goal_term);
    }
  }
  L->nthread = nthread;
  L->ctr = (double*)calloc((size_t)(2 * L->nu + 1), sizeof(double));
  L->key_qpos = (double*)calloc((size_t)(L->nx + 1), sizeof(double));
  L->workers = (worker*)calloc((size_t)nthread, sizeof(worker));
  if (!L->ctr || !L->key_qpos || !L->workers) return failMem(L, err, errsz);
  L->half = L->ctr + L->nu;
  L->key_qvel = L->key_qpos + m->nq;
  L->key_act = L->key_qvel + m->nv;
  for (int i = 0; i < L->nu; i++) {
    if (m->actuator_ctrllimited[i] && !(m->opt.disableflags & mjDSBL_CLAMPCTRL)) {
      const mjtNum* cr = m->actuator_ctrlrange + 2 * i;
      L->ctr[i] = 0.5 * (cr[0] + cr[1]);
      L->half[i] = 0.5 * (cr[1] - cr[0]);
    }
  }
  if (opt->key >= 0 && m->nkey > 0) {  // key 0 on a model without keys: qpos0
    mju_copy(L->key_qpos, m->key_qpos + opt->key * m->nq, (int)m->nq);
    mju_copy(L->key_qvel, m->key_qvel + opt->key * m->nv, (int)m->nv);
    if (m->na) mju_copy(L->key_act, m->key_act + opt->key * m->na, (int)m->na);
  } else {
    mju_copy(L->key_qpos, m->qpos0, (int)m->nq);
  }

  for (int i = 0; i < nthread; i++) {
    worker* w = L->workers + i;
    w->d = mj_makeData(m);
    w->dn = native ? mj_makeData(native) : NULL;
    w->task = mjdiff_copyTask(task);
    if (!w->d || (native && !w->dn) || !w->task) return failMem(L, err, errsz);
    mjdiffStatus st = workerPolicy(L, w, i, net, err, errsz);
    if (st == MJDIFF_OK) st = mjdiff_makeRollout(m, s, NULL, opt->horizon, NULL, &w->r, err, errsz);
    if (st != MJDIFF_OK) {
      mjdiff_freeLearner(L);
      return st;
    }
  }
  *out = L;
  return MJDIFF_OK;
}

//---------------------------------- sampling and observation --------------------------------------

void mjdiff_learnSample(const mjdiffLearner* L, uint64_t seed, int b, double* x0, double* goal) {
  const mjModel* m = L->m;
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, mjdiff_learnItemSeed(seed, b));
  mju_copy(x0, L->key_qpos, L->nx);
  // draws in a fixed order: per joint (qpos, qvel), then the goal
  for (int j = 0; j < m->njnt; j++) {
    double uq = mjdiff_rngUniform(&rng), uv = mjdiff_rngUniform(&rng);
    if (!L->noisy[j]) continue;
    x0[m->jnt_qposadr[j]] += L->opt.start_noise * (2 * uq - 1);
    x0[m->nq + m->jnt_dofadr[j]] += L->opt.vel_noise * (2 * uv - 1);
  }
  double g[3] = {0, 0, 0};
  if (L->opt.goal_term >= 0) {
    for (int k = 0; k < 3; k++) {
      double u = mjdiff_rngUniform(&rng);
      g[k] = L->opt.goal_lo[k] + (L->opt.goal_hi[k] - L->opt.goal_lo[k]) * u;
    }
  }
  if (goal) mju_copy3(goal, g);
}

// the goal term's object position at d's qpos, on the scratch dk (kinematics kept for mj_jac)
static void objectPosition(const mjdiffLearner* L, mjData* dk, const mjData* d, double p[3]) {
  const mjModel* m = L->m;
  mju_copy(dk->qpos, d->qpos, (int)m->nq);
  mj_kinematics(m, dk);
  mj_comPos(m, dk);
  if (L->obj_type == mjOBJ_SITE) mju_copy3(p, dk->site_xpos + 3 * L->obj_id);
  else mju_copy3(p, dk->xpos + 3 * L->obj_id);
}

static void observation(const mjdiffLearner* L, mjData* dk, const mjData* d, const double* goal,
                        double* obs) {
  const mjModel* m = L->m;
  int o = 0;
  for (int i = 0; i < m->nq; i++) {
    if (L->trigq[i]) {
      obs[o++] = L->hideq[i] ? 0 : cos(d->qpos[i]);
      obs[o++] = L->hideq[i] ? 0 : sin(d->qpos[i]);
    } else {
      obs[o++] = L->hideq[i] ? 0 : d->qpos[i];
    }
  }
  mju_copy(obs + o, d->qvel, (int)m->nv);
  if (m->na) mju_copy(obs + o + m->nv, d->act, (int)m->na);
  int g0 = L->nqo + (int)(m->nv + m->na);
  if (L->opt.goal_term >= 0) mju_copy3(obs + g0, goal);
  if (L->obj_id >= 0) {
    double p[3];
    objectPosition(L, dk, d, p);
    mju_sub3(obs + g0 + 3, goal, p);
  }
}

void mjdiff_learnObservation(const mjdiffLearner* L, const mjData* d, const double* goal,
                             double* obs) {
  observation(L, L->workers[0].dk, d, goal, obs);
}

void mjdiff_learnControls(const mjdiffLearner* L, const double* y, double* ctrl) {
  for (int i = 0; i < L->nu; i++) {
    ctrl[i] = L->half[i] > 0 ? L->ctr[i] + L->half[i] * tanh(y[i]) : y[i];
  }
}

// y += action_noise eps_t for a training rollout: eps_t from the item's seed and the step t
// (d->time / h; items start at time 0), so that the backward pass sees the forward's noise
static void addNoise(const worker* w, const mjModel* m, const mjData* d, double* y) {
  const mjdiffLearner* L = w->L;
  if (!w->explore || L->opt.action_noise <= 0) return;
  uint64_t t = (uint64_t)llround(d->time / m->opt.timestep);
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, splitmix(mjdiff_learnItemSeed(L->seed, w->item) ^ (0xACu + (t << 8))));
  for (int i = 0; i < L->nu; i++) y[i] += L->opt.action_noise * mjdiff_rngNormal(&rng);
}

// u = c + r tanh(y) (limited), y (unlimited); from the observation of d
static int policyControls(worker* w, const mjModel* m, const mjData* d, double* ctrl) {
  mjdiffLearner* L = w->L;
  observation(L, w->dk, d, w->goal, w->obs);
  if (mjdiff_mlpForward(w->net, w->work, w->obs, 1, w->y, NULL, 0) != MJDIFF_OK) return 0;
  addNoise(w, m, d, w->y);
  mjdiff_learnControls(L, w->y, ctrl);
  return 1;
}

static void policyAct(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
                      mjtNum* ctrl) {
  (void)m;
  (void)theta;
  worker* w = (worker*)user;
  if (!policyControls(w, m, d, ctrl)) {
    mju_zero(ctrl, (int)m->nu);
    w->netfail = 1;  // the caller reports it after the rollout (the callback cannot)
  }
}

// a network failure inside the policy callbacks, as a status naming it
static mjdiffStatus netStatus(worker* w) {
  if (!w->netfail) return MJDIFF_OK;
  w->netfail = 0;
  return fail(w->err, sizeof(w->err), MJDIFF_ERR_ARGUMENT,
              "the policy network's forward or VJP failed inside a rollout");
}

static void obsAdjoint(worker* w, const mjModel* m, const mjData* d, const double* ao,
                       mjtNum* adj_x);

static void policyVJP(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
                      const mjtNum* adj_ctrl, mjtNum* adj_x, mjtNum* adj_theta) {
  (void)theta;
  worker* w = (worker*)user;
  mjdiffLearner* L = w->L;
  observation(L, w->dk, d, w->goal, w->obs);
  if (mjdiff_mlpForward(w->net, w->work, w->obs, 1, w->y, NULL, 0) != MJDIFF_OK) {
    w->netfail = 1;
    return;
  }
  // the squashing's slope at the noisy y, as the forward pass used it (the noise itself does not
  // depend on the weights)
  addNoise(w, m, d, w->y);
  for (int i = 0; i < L->nu; i++) {
    if (L->half[i] > 0) {
      double th = tanh(w->y[i]);
      w->ay[i] = adj_ctrl[i] * L->half[i] * (1 - th * th);
    } else {
      w->ay[i] = adj_ctrl[i];
    }
  }
  if (mjdiff_mlpVJP(w->net, w->work, w->ay, 1, w->ao, adj_theta, NULL, 0) != MJDIFF_OK) {
    w->netfail = 1;
    return;
  }
  obsAdjoint(w, m, d, w->ao, adj_x);
}

// a_x += the state adjoint of the observation's adjoint a_o at d's state (w->dk holds the
// kinematics at d's qpos, from observation())
static void obsAdjoint(worker* w, const mjModel* m, const mjData* d, const double* ao,
                       mjtNum* adj_x) {
  mjdiffLearner* L = w->L;
  // state part of a_o (the trig hinges' pairs folded: a_q = -sin q a_cos + cos q a_sin), state
  // layout -> tangent layout at x (d's qpos)
  int o = 0;
  for (int i = 0; i < m->nq; i++) {
    if (L->trigq[i]) {
      w->gstate[i] = -sin(d->qpos[i]) * ao[o] + cos(d->qpos[i]) * ao[o + 1];
      o += 2;
    } else {
      w->gstate[i] = ao[o++];
    }
    if (L->hideq[i]) w->gstate[i] = 0;
  }
  mju_copy(w->gstate + m->nq, ao + o, (int)(m->nv + m->na));
  mjdiff_getState(m, d, w->x0);
  mjdiff_stateGradToTangent(m, w->x0, w->gstate, w->gtan);
  mju_addTo(adj_x, w->gtan, L->ndx);
  // e = g - p(q): a_dq -= J_p' a_e (dk holds the kinematics at d's qpos from observation())
  if (L->obj_id >= 0) {
    const double* ae = ao + L->nqo + m->nv + m->na + 3;
    int body = L->obj_type == mjOBJ_SITE ? m->site_bodyid[L->obj_id] : L->obj_id;
    const double* pt = L->obj_type == mjOBJ_SITE ? w->dk->site_xpos + 3 * L->obj_id
                                                 : w->dk->xpos + 3 * L->obj_id;
    mj_jac(m, w->dk, w->jac, NULL, pt, body);
    for (int k = 0; k < 3; k++) {
      if (ae[k] != 0) mju_addToScl(adj_x, w->jac + k * m->nv, -ae[k], (int)m->nv);
    }
  }
}

//---------------------------------- the policy for other rollouts --------------------------------

static mjdiffStatus checkNets(const mjdiffLearner* L, const mjdiffMLP* const* nets, int nnet,
                              int B, char* err, int errsz);

// a worker's policy part alone: the same callbacks (policyAct, policyVJP) on its own workspace
struct mjdiffLearnPolicy_ {
  worker w;
};

void mjdiff_freeLearnPolicy(mjdiffLearnPolicy* P) {
  if (!P) return;
  freeWorkerPolicy(&P->w);
  free(P);
}

mjdiffStatus mjdiff_makeLearnPolicy(const mjdiffLearner* L, const mjdiffMLP* net,
                                    mjdiffLearnPolicy** out, char* err, int errsz) {
  if (!out) return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner policy: out is NULL");
  *out = NULL;
  if (!L || !net) return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner policy: NULL learner or network");
  mjdiffStatus st = checkNets(L, &net, 1, 1, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiffLearnPolicy* P = (mjdiffLearnPolicy*)calloc(1, sizeof(mjdiffLearnPolicy));
  if (!P) return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner policy: out of memory");
  // the callbacks only read the learner (sizes, control ranges, options, the goal's object)
  st = workerPolicy((mjdiffLearner*)L, &P->w, 0, net, err, errsz);
  if (st != MJDIFF_OK) {
    mjdiff_freeLearnPolicy(P);
    return st;
  }
  P->w.net = net;
  *out = P;
  return MJDIFF_OK;
}

void mjdiff_learnPolicySetGoal(mjdiffLearnPolicy* P, const double* goal) {
  if (goal) mju_copy3(P->w.goal, goal);
  else mju_zero3(P->w.goal);
}

void mjdiff_learnPolicy(mjdiffLearnPolicy* P, mjdiffPolicy* out) {
  out->nparam = P->w.L->nparam;
  out->user = &P->w;
  out->act = policyAct;
  out->vjp = policyVJP;
}

mjdiffStatus mjdiff_learnPolicyStatus(mjdiffLearnPolicy* P, char* err, int errsz) {
  mjdiffStatus st = netStatus(&P->w);
  if (st != MJDIFF_OK) fail(err, errsz, st, "%s", P->w.err);
  return st;
}

// task cost at the state of d (kinematics and velocities computed); the gradients added, scaled
static double shortLoss(worker* w, const mjModel* m, const mjData* d, int t, int T, mjtNum* dldx,
                        mjtNum* dldu);

static double stepLoss(const mjModel* m, const mjData* d, int t, int T, void* user,
                       mjtNum* dldx, mjtNum* dldu, mjtNum* dlds) {
  (void)dlds;
  worker* w = (worker*)user;
  if (w->L->sh) return shortLoss(w, m, d, t, T, dldx, dldu);
  int terminal = t == T;
  double scale = terminal ? 1.0 : 1.0 / T;
  // mjdiff_taskCost uses d's stack for scratch only (state untouched): the const is kept in spirit
  double l = mjdiff_taskCost(w->task, m, (mjData*)d, terminal, w->gx, terminal ? NULL : w->gu);
  mju_addToScl(dldx, w->gx, scale, w->L->ndx);
  if (!terminal && dldu) mju_addToScl(dldu, w->gu, scale, w->L->nu);
  return scale * l;
}

// the short objective's terms: gamma^t / T l(x_t, u_t) for t < T; at T, gamma^T / T V(x_T), or
// gamma^T l_T(x_T) without a value network; records the costs and observations asked for
static double shortLoss(worker* w, const mjModel* m, const mjData* d, int t, int T, mjtNum* dldx,
                        mjtNum* dldu) {
  mjdiffLearner* L = w->L;
  const mjdiffLearnShort* sh = L->sh;
  double disc = pow(sh->gamma, t);
  size_t b = (size_t)w->item;
  if (sh->obs) observation(L, w->dk, d, w->goal, sh->obs + (b * (size_t)(T + 1) + (size_t)t) * L->nobs);
  if (t < T || !sh->value) {
    int terminal = t == T;
    double scale = terminal ? disc : disc / T;
    double l = mjdiff_taskCost(w->task, m, (mjData*)d, terminal, w->gx, terminal ? NULL : w->gu);
    mju_addToScl(dldx, w->gx, scale, L->ndx);
    if (!terminal && dldu) mju_addToScl(dldu, w->gu, scale, L->nu);
    if (!terminal && sh->cost) sh->cost[b * (size_t)T + (size_t)t] = l;
    return scale * l;
  }
  // V(x_T) = s MLP_V(o(x_T)); a_o = (gamma^T s / T) MLP_V'(o)' 1, then the observation's adjoint
  if (!sh->obs) observation(L, w->dk, d, w->goal, w->obs);
  else mju_copy(w->obs, sh->obs + (b * (size_t)(T + 1) + (size_t)T) * L->nobs, L->nobs);
  double v = 0, av = disc * L->vscale / T;
  if (mjdiff_mlpForward(sh->value, w->vwork, w->obs, 1, &v, NULL, 0) != MJDIFF_OK ||
      mjdiff_mlpVJP(sh->value, w->vwork, &av, 1, w->ao, NULL, NULL, 0) != MJDIFF_OK) {
    w->netfail = 1;
    return 0;
  }
  obsAdjoint(w, m, d, w->ao, dldx);
  return disc * L->vscale * v / T;
}

static void velocities(const mjModel* m, mjData* d) {
  mj_kinematics(m, d);
  mj_comPos(m, d);
  mj_comVel(m, d);
}

//---------------------------------- items ---------------------------------------------------------

// start of item b: state, time 0, goal in the task
static void startItem(worker* w, const mjModel* m, mjData* d, int b) {
  mjdiffLearner* L = w->L;
  if (L->sh && L->sh->x0) {
    mju_copy(w->x0, L->sh->x0 + (size_t)b * L->nx, L->nx);
    if (L->sh->goal) mju_copy3(w->goal, L->sh->goal + 3 * (size_t)b);
    else mju_zero3(w->goal);
  } else {
    mjdiff_learnSample(L, L->seed, b, w->x0, w->goal);
  }
  if (L->opt.goal_term >= 0) mjdiff_taskSetPoint(w->task, L->opt.goal_term, w->goal);
  mj_resetData(m, d);
  mjdiff_setState(m, d, w->x0);
  d->time = 0;
}

// rollout with gradient (training model)
static mjdiffStatus gradItem(worker* w, int b, double* J, int* succ, double* grad) {
  mjdiffLearner* L = w->L;
  const mjModel* m;
  const mjdiffModel* s;
  mjdiffRollout* r;
  mjdiffStatus st = itemModel(w, b, &m, &s, &r);
  if (st != MJDIFF_OK) return st;
  mjData* d = w->d;
  startItem(w, m, d, b);
  mjdiffPolicy pol = {L->nparam, w, policyAct, policyVJP};
  const mjtNum* theta = mjdiff_mlpParams((mjdiffMLP*)w->net);  // read only
  st = mjdiff_rolloutForward(m, d, s, r, NULL, &pol, theta, NULL, NULL, w->err,
                             sizeof(w->err));
  if (st == MJDIFF_OK) st = netStatus(w);
  if (st != MJDIFF_OK) return st;
  if (L->sh && L->sh->x_end) mjdiff_getState(m, d, L->sh->x_end + (size_t)b * L->nx);
  velocities(m, d);
  *succ = mjdiff_taskSuccess(w->task, m, d);
  mjdiffStepLoss sl = {w, stepLoss, NULL};
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  mjtNum loss = 0;
  g.step_loss = &sl;
  g.loss = &loss;
  g.grad_theta = grad;
  g.decay = L->opt.grad_decay;
  st = mjdiff_rolloutGradient(m, d, s, r, &g, w->err, sizeof(w->err));
  if (st == MJDIFF_OK) st = netStatus(w);
  *J = loss;
  return st;
}

// closed loop without gradient: n steps on the smooth (training model) or native plant
static mjdiffStatus forwardItem(worker* w, int b, int plant, int T, double* J, int* succ) {
  mjdiffLearner* L = w->L;
  const mjModel* m;
  const mjdiffModel* s;
  mjdiffStatus sr = itemModel(w, b, &m, &s, NULL);
  if (sr != MJDIFF_OK) return sr;
  if (plant == MJDIFF_PLANT_NATIVE) m = L->native;
  mjData* d = plant == MJDIFF_PLANT_NATIVE ? w->dn : w->d;
  startItem(w, m, d, b);
  double cost = 0;
  for (int t = 0; t < T; t++) {
    policyAct(m, d, NULL, w, d->ctrl);
    mjdiffStatus nst = netStatus(w);
    if (nst != MJDIFF_OK) return nst;
    velocities(m, d);
    cost += mjdiff_taskCost(w->task, m, d, 0, NULL, NULL) / T;
    if (plant == MJDIFF_PLANT_NATIVE) {
      mj_step(m, d);
      int bad = 0;
      for (int i = 0; i < m->nq && !bad; i++) bad = !isfinite(d->qpos[i]);
      for (int i = 0; i < m->nv && !bad; i++) bad = !isfinite(d->qvel[i]);
      if (bad) {
        *J = INFINITY;
        *succ = 0;
        return MJDIFF_OK;
      }
    } else {
      mjdiffStatus st = mjdiff_step(m, d, s, w->err, sizeof(w->err));
      if (st != MJDIFF_OK) return st;
    }
  }
  velocities(m, d);
  cost += mjdiff_taskCost(w->task, m, d, 1, NULL, NULL);
  *J = cost;
  *succ = mjdiff_taskSuccess(w->task, m, d);
  return MJDIFF_OK;
}


// stochastic rollout of item b on the smooth training model, recorded
static mjdiffStatus sampleItem(worker* w, int b, int* succ) {
  mjdiffLearner* L = w->L;
  const mjModel* m;
  const mjdiffModel* s;
  mjdiffStatus sr = itemModel(w, b, &m, &s, NULL);
  if (sr != MJDIFF_OK) return sr;
  mjData* d = w->d;
  int T = L->opt.horizon, nobs = L->nobs, nu = L->nu;
  startItem(w, m, d, b);
  // the exploration noise: a generator of its own, seeded from the item's seed
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, mjdiff_learnItemSeed(L->seed, b) ^ 0x6E6F697365ULL);
  double* obs = L->rec_obs + (size_t)b * (size_t)(T + 1) * (size_t)nobs;
  double* act = L->rec_act + (size_t)b * (size_t)T * (size_t)nu;
  double* cost = L->rec_cost + (size_t)b * (size_t)(T + 1);
  for (int t = 0; t < T; t++) {
    observation(L, w->dk, d, w->goal, obs + (size_t)t * nobs);
    if (mjdiff_mlpForward(w->net, w->work, obs + (size_t)t * nobs, 1, w->y, w->err,
                          sizeof(w->err)) != MJDIFF_OK) {
      return MJDIFF_ERR_ARGUMENT;
    }
    double* a = act + (size_t)t * nu;
    for (int i = 0; i < nu; i++) a[i] = w->y[i] + exp(L->logstd[i]) * mjdiff_rngNormal(&rng);
    mjdiff_learnControls(L, a, d->ctrl);
    velocities(m, d);
    cost[t] = mjdiff_taskCost(w->task, m, d, 0, NULL, NULL) / T;
    mjdiffStatus st = mjdiff_step(m, d, s, w->err, sizeof(w->err));
    if (st != MJDIFF_OK) return st;
  }
  observation(L, w->dk, d, w->goal, obs + (size_t)T * nobs);
  velocities(m, d);
  cost[T] = mjdiff_taskCost(w->task, m, d, 1, NULL, NULL);
  *succ = mjdiff_taskSuccess(w->task, m, d);
  return MJDIFF_OK;
}

static void* workerMain(void* arg) {
  worker* w = (worker*)arg;
  mjdiffLearner* L = w->L;
  w->fail_item = -1;
  for (int j = w->id; j < L->njob; j += L->nthread) {
    int k = j / L->B, b = j % L->B;
    w->net = L->nets[k];
    w->item = b;
    w->explore = L->plant < 0 && !L->logstd;  // the objectives' rollouts, not evaluation or PPO's
    mjdiffStatus st;
    if (L->logstd) {
      st = sampleItem(w, b, L->success + j);
    } else if (L->want_grad) {
      double* g = L->grad_rows + (size_t)j * (size_t)L->nparam;
      st = gradItem(w, b, L->costs + j, L->success + j, g);
    } else {
      int T = L->plant < 0 ? L->opt.horizon : L->steps_eval;
      st = forwardItem(w, b, L->plant < 0 ? MJDIFF_PLANT_SMOOTH : L->plant, T, L->costs + j,
                       L->success + j);
    }
    L->status[j] = st;
    if (st != MJDIFF_OK) {
      w->fail_item = j;
      if (!L->opt.skip_failed) break;
      L->costs[j] = NAN;
      L->success[j] = 0;
      if (L->want_grad) memset(L->grad_rows + (size_t)j * (size_t)L->nparam, 0, sizeof(double) * (size_t)L->nparam);
    }
  }
  w->explore = 0;
  return NULL;
}

static mjdiffStatus ensure(mjdiffLearner* L, int njob, int grad, char* err, int errsz) {
  if (njob > L->status_cap) {
    free(L->costs);
    free(L->success);
    free(L->status);
    L->costs = (double*)malloc(sizeof(double) * (size_t)njob);
    L->success = (int*)malloc(sizeof(int) * (size_t)njob);
    L->status = (mjdiffStatus*)malloc(sizeof(mjdiffStatus) * (size_t)njob);
    L->status_cap = njob;
    if (!L->costs || !L->success || !L->status) {
      L->status_cap = 0;
      return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
    }
  }
  if (grad && njob > L->grad_cap) {
    free(L->grad_rows);
    L->grad_rows = (double*)malloc(sizeof(double) * (size_t)njob * (size_t)L->nparam);
    L->grad_cap = L->grad_rows ? njob : 0;
    if (!L->grad_rows) return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: out of memory");
  }
  return MJDIFF_OK;
}

// run the current job on the threads; the first failing job's error
static mjdiffStatus runJobs(mjdiffLearner* L, char* err, int errsz) {
  if (L->nrand && L->plant < 0) {
    mjdiffStatus st = syncRandomised(L, err, errsz);
    if (st != MJDIFF_OK) return st;
  }
  for (int j = 0; j < L->njob; j++) L->status[j] = MJDIFF_OK;
  int nt = L->nthread < L->njob ? L->nthread : L->njob;
  pthread_t tid[MAXTHREAD];
  int started = 1, ok = 1;
  for (int i = 1; i < nt; i++) {
    if (pthread_create(tid + i, NULL, workerMain, L->workers + i) != 0) {
      ok = 0;
      break;
    }
    started++;
  }
  workerMain(L->workers);
  for (int i = 1; i < started; i++) pthread_join(tid[i], NULL);
  if (!ok) return fail(err, errsz, MJDIFF_ERR_MEMORY, "learner: cannot start %d threads", nt);
  int nok = 0;
  for (int j = 0; j < L->njob; j++) nok += L->status[j] == MJDIFF_OK;
  for (int j = 0; j < L->njob; j++) {
    if (L->status[j] != MJDIFF_OK && (!L->opt.skip_failed || nok == 0)) {
      for (int i = 0; i < L->nthread; i++) {
        if (L->workers[i].fail_item == j) {
          return fail(err, errsz, L->status[j], "rollout %d: %s", j % L->B, L->workers[i].err);
        }
      }
      return fail(err, errsz, L->status[j], "rollout %d failed", j % L->B);
    }
  }
  return MJDIFF_OK;
}

static mjdiffStatus checkNets(const mjdiffLearner* L, const mjdiffMLP* const* nets, int nnet,
                              int B, char* err, int errsz) {
  if (B < 1 || nnet < 1 || !nets) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: batch %d, networks %d (must be >= 1)", B, nnet);
  }
  if ((long)B * nnet > 100000000L) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: batch too large");
  }
  for (int k = 0; k < nnet; k++) {
    const mjdiffMLPDef* def = nets[k] ? mjdiff_mlpDef(nets[k]) : NULL;
    if (!def || def->nin != L->nobs || def->nout != L->nu || mjdiff_mlpParamCount(nets[k]) != L->nparam) {
      return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: network %d is not the learner's architecture", k);
    }
  }
  return MJDIFF_OK;
}

// the objective's batch (the plain one, or the short one with sh); the short one always runs
// the gradient path (its records come from the backward sweep)
static mjdiffStatus objective(mjdiffLearner* L, const mjdiffMLP* net, uint64_t seed, int B,
                              const mjdiffLearnShort* sh, double* J, double* grad,
                              double* per_item, mjdiffLearnStats* stats, char* err, int errsz) {
  mjdiffStatus st = checkNets(L, &net, 1, B, err, errsz);
  if (st != MJDIFF_OK) return st;
  int want_grad = grad != NULL || sh != NULL;
  st = ensure(L, B, want_grad, err, errsz);
  if (st != MJDIFF_OK) return st;
  L->nets = &net;
  L->nnet = 1;
  L->B = B;
  L->njob = B;
  L->seed = seed;
  L->want_grad = want_grad;
  L->plant = -1;
  L->logstd = NULL;
  L->sh = sh;
  st = runJobs(L, err, errsz);
  L->sh = NULL;
  if (st != MJDIFF_OK) return st;
  double sum = 0;
  int succ = 0, nok = 0;
  for (int b = 0; b < B; b++) {
    if (per_item) per_item[b] = L->status[b] == MJDIFF_OK ? L->costs[b] : NAN;
    if (L->status[b] != MJDIFF_OK) continue;
    sum += L->costs[b];
    succ += L->success[b];
    nok++;
  }
  *J = sum / nok;
  if (grad) {
    mju_zero(grad, L->nparam);
    for (int b = 0; b < B; b++) {
      if (L->status[b] == MJDIFF_OK) mju_addTo(grad, L->grad_rows + (size_t)b * (size_t)L->nparam, L->nparam);
    }
    mju_scl(grad, grad, 1.0 / nok, L->nparam);
  }
  if (stats) {
    stats->n = B;
    stats->cost = *J;
    stats->success = succ;
    stats->steps = (long)B * L->opt.horizon;
    stats->failed = B - nok;
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_learnObjective(mjdiffLearner* L, const mjdiffMLP* net, uint64_t seed, int B,
                                   double* J, double* grad, double* per_item,
                                   mjdiffLearnStats* stats, char* err, int errsz) {
  if (!L || !J) return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: NULL learner or J");
  return objective(L, net, seed, B, NULL, J, grad, per_item, stats, err, errsz);
}

mjdiffStatus mjdiff_learnObjectiveShort(mjdiffLearner* L, const mjdiffMLP* net, uint64_t seed,
                                        int B, const mjdiffLearnShort* sh, double* J,
                                        double* grad, double* per_item, mjdiffLearnStats* stats,
                                        char* err, int errsz) {
  if (!L || !J || !sh) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: NULL learner, J or short options");
  }
  if (!(sh->gamma > 0 && sh->gamma <= 1)) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: discount gamma %g (must be in (0, 1])",
                sh->gamma);
  }
  if (!isfinite(sh->value_scale)) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: value_scale %g is not finite",
                sh->value_scale);
  }
  if (sh->x0) {
    for (size_t i = 0; i < (size_t)B * (size_t)L->nx; i++) {
      if (!isfinite(sh->x0[i])) {
        return fail(err, errsz, MJDIFF_ERR_NONFINITE, "learner: start state %d, entry %d is %g",
                    (int)(i / (size_t)L->nx), (int)(i % (size_t)L->nx), sh->x0[i]);
      }
    }
  }
  if (sh->value) {
    const mjdiffMLPDef* def = mjdiff_mlpDef(sh->value);
    if (def->nin != L->nobs || def->nout != 1) {
      return fail(err, errsz, MJDIFF_ERR_ARGUMENT,
                  "learner: the value network maps %d inputs to %d outputs; it needs %d "
                  "observations to 1 value", def->nin, def->nout, L->nobs);
    }
    int np = mjdiff_mlpParamCount(sh->value);
    for (int i = 0; i < L->nthread; i++) {
      worker* w = L->workers + i;
      if (w->vwork && w->vwork_net == sh->value && w->vwork_np == np) continue;
      mjdiff_freeMLPWork(w->vwork);
      w->vwork = NULL;
      w->vwork_net = NULL;
      mjdiffStatus st = mjdiff_makeMLPWork(sh->value, 1, &w->vwork, err, errsz);
      if (st != MJDIFF_OK) return st;
      w->vwork_net = sh->value;
      w->vwork_np = np;
    }
  }
  L->vscale = sh->value_scale != 0 ? sh->value_scale : 1;
  return objective(L, net, seed, B, sh, J, grad, per_item, stats, err, errsz);
}

mjdiffStatus mjdiff_learnObjectiveMany(mjdiffLearner* L, const mjdiffMLP* const* nets, int nnet,
                                       uint64_t seed, int B, double* J, mjdiffLearnStats* stats,
                                       char* err, int errsz) {
  if (!L || !J) return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: NULL learner or J");
  mjdiffStatus st = checkNets(L, nets, nnet, B, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = ensure(L, nnet * B, 0, err, errsz);
  if (st != MJDIFF_OK) return st;
  L->nets = nets;
  L->nnet = nnet;
  L->B = B;
  L->njob = nnet * B;
  L->seed = seed;
  L->want_grad = 0;
  L->plant = -1;
  L->logstd = NULL;
  st = runJobs(L, err, errsz);
  if (st != MJDIFF_OK) return st;
  int succ = 0, nfail = 0;
  double all = 0;
  for (int k = 0; k < nnet; k++) {
    double sum = 0;
    int nok = 0;
    for (int b = 0; b < B; b++) {
      if (L->status[k * B + b] != MJDIFF_OK) continue;
      sum += L->costs[k * B + b];
      succ += L->success[k * B + b];
      nok++;
    }
    nfail += B - nok;
    J[k] = nok ? sum / nok : INFINITY;
    all += J[k];
  }
  if (stats) {
    stats->n = nnet * B;
    stats->cost = all / nnet;
    stats->success = succ;
    stats->steps = (long)nnet * B * L->opt.horizon;
    stats->failed = nfail;
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_learnEvaluate(mjdiffLearner* L, const mjdiffMLP* net, int plant,
                                  uint64_t seed, int n, double seconds, mjdiffLearnStats* stats,
                                  char* err, int errsz) {
  if (!L || !stats) return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: NULL learner or stats");
  if (plant != MJDIFF_PLANT_SMOOTH && plant != MJDIFF_PLANT_NATIVE) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: unknown plant %d", plant);
  }
  if (plant == MJDIFF_PLANT_NATIVE && !L->native) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: no native model for the native plant");
  }
  if (!(seconds > 0) || !isfinite(seconds)) {
    return fail(err, errsz, MJDIFF_ERR_VALUE, "learner: seconds %g (must be finite and > 0)",
                seconds);
  }
  mjdiffStatus st = checkNets(L, &net, 1, n, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = ensure(L, n, 0, err, errsz);
  if (st != MJDIFF_OK) return st;
  const mjModel* pm = plant == MJDIFF_PLANT_NATIVE ? L->native : L->m;
  if (seconds / pm->opt.timestep > 1e9) {
    return fail(err, errsz, MJDIFF_ERR_VALUE,
                "learner: seconds %g is more than 1e9 steps of the plant's timestep %g", seconds,
                pm->opt.timestep);
  }
  int T = (int)lround(seconds / pm->opt.timestep);
  if (T < 1) T = 1;
  L->nets = &net;
  L->nnet = 1;
  L->B = n;
  L->njob = n;
  L->seed = seed;
  L->want_grad = 0;
  L->plant = plant;
  L->steps_eval = T;
  L->logstd = NULL;
  st = runJobs(L, err, errsz);
  if (st != MJDIFF_OK) return st;
  double sum = 0;
  int nfinite = 0, succ = 0;
  for (int b = 0; b < n; b++) {
    if (L->status[b] == MJDIFF_OK && isfinite(L->costs[b])) {
      sum += L->costs[b];
      nfinite++;
    }
    succ += L->success[b];
  }
  stats->n = n;
  stats->failed = n - nfinite;
  stats->cost = nfinite ? sum / nfinite : INFINITY;
  stats->success = succ;
  stats->steps = (long)n * T;
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_learnSampleRollouts(mjdiffLearner* L, const mjdiffMLP* net, const double* logstd,
                                        uint64_t seed, int n, double* obs, double* act,
                                        double* cost, int* succ, mjdiffLearnStats* stats,
                                        char* err, int errsz) {
  if (!L || !logstd || !obs || !act || !cost) {
    return fail(err, errsz, MJDIFF_ERR_ARGUMENT, "learner: NULL learner, logstd or record");
  }
  mjdiffStatus st = checkNets(L, &net, 1, n, err, errsz);
  if (st != MJDIFF_OK) return st;
  st = ensure(L, n, 0, err, errsz);
  if (st != MJDIFF_OK) return st;
  L->nets = &net;
  L->nnet = 1;
  L->B = n;
  L->njob = n;
  L->seed = seed;
  L->want_grad = 0;
  L->plant = -1;
  L->logstd = logstd;
  L->rec_obs = obs;
  L->rec_act = act;
  L->rec_cost = cost;
  st = runJobs(L, err, errsz);
  L->logstd = NULL;
  if (st != MJDIFF_OK) return st;
  int T = L->opt.horizon, ns = 0;
  double sum = 0;
  int nfail = 0;
  for (int b = 0; b < n; b++) {
    if (L->status[b] != MJDIFF_OK) {
      // the records of a failed rollout are incomplete: no skipping here
      return fail(err, errsz, L->status[b], "rollout %d: the smooth step failed (stochastic rollouts do not skip)", b);
    }
    for (int t = 0; t <= T; t++) sum += cost[(size_t)b * (T + 1) + t];
    ns += L->success[b];
    if (succ) succ[b] = L->success[b];
  }
  if (stats) {
    stats->n = n;
    stats->cost = sum / (n - nfail);
    stats->success = ns;
    stats->steps = (long)n * T;
    stats->failed = nfail;
  }
  return MJDIFF_OK;
}
