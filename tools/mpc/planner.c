// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc planners: one interface, five methods, all minimising the task cost of a rollout of
// the smooth step from the current state,
//   J(u) = sum_{t=0}^{H-1} l(x_t, u_t) + l_H(x_H),  x_{t+1} = f(x_t, u_t),  lo <= u_t <= hi.
//
// Knot planners parametrise the controls by nknot knots z_j, one every K steps (about 15 knots),
// linearly interpolated: u_t = (1 - f) z_j + f z_{j+1}, j = floor(t / K), f = (t mod K) / K
// (a convex combination: knots within the bounds give controls within the bounds).
//   gradient   dJ/dz_j = sum_t dJ/du_t du_t/dz_j (rollout adjoint for dJ/du); Adam's direction
//              d = m^ / (sqrt(v^) + eps) (moments kept across calls); a parallel line search on
//              z_i = clamp(z - a_i lr 0.02 (hi - lo) .* d, lo, hi), a_i = 2, 1/2, 1/8, ..
//              (a candidate per thread): the lowest below J(z) is the plan,
//              lr <- min(a_i lr, 2); none: lr <- lr / 8
//   sampling   predictive sampling (MJPC): z_i = clamp(z + sigma eps_i), sigma = 0.1 (hi-lo)/2,
//              eps_i ~ N(0, I); z = argmin over the nominal and the samples
//   CEM        z_i = clamp(mu + sigma .* eps_i) (z_0 = mu); elites E: the N/8 best;
//              mu = mean_E z_i, sigma = max(std_E z_i, 0.02 (hi-lo)/2), sigma_0 = 0.3 (hi-lo)/2
//   MPPI       z_i = clamp(z + sigma eps_i) (z_0 = z), sigma = 0.2 (hi-lo)/2;
//              c_i = (J_i - min J) / (max J - min J), w_i = exp(-c_i / lambda), lambda = 0.1;
//              z = sum_i w_i z_i / sum_i w_i
//   (CEM and MPPI keep the best evaluated plan as the plan; their mean moves on.)
// iLQR (Gauss-Newton DDP) on every step's control, tangent layout dx = x (-) xbar:
//   Q_x = l_x + A' V_x          Q_u = l_u + B' V_x
//   Q_xx = l_xx + A' V_xx A     Q_uu = l_uu + B' V_xx B     Q_ux = B' V_xx A
//   k = -(Q_uu + mu I)^-1 Q_u,  K = -(Q_uu + mu I)^-1 Q_ux;  k clamped so that ubar + k lies in
//   the bounds, rows of K zeroed where it was clamped (box-DDP simplified)
//   V_x = Q_x + K' Q_uu k + K' Q_u + Q_ux' k,  V_xx = Q_xx + K' Q_uu K + K' Q_ux + Q_ux' K
//   forward: u_t = clamp(ubar_t + alpha k_t + K_t (x_t (-) xbar_t)), alpha = 1, 1/2, ..., 1/512,
//   the first alpha that lowers J is accepted (mu /= 4); none: mu *= 10 (Levenberg) and the
//   backward pass again on the same derivatives. mu starts at 1e-6 on every call.
//
// Planning model: the caller's, or a copy with the task's planning timestep (the plant keeps its
// own); H = round(horizon / planning timestep).
//
// Warm start: the previous plan shifted by `shift` plant steps, the last control held; iLQR rolls
// out its previous feedback policy around the shifted plan, u_t = ubar_t + K_t (x_t (-) xbar_t),
// so that a state off the plan (the plant's model mismatch, an unstable system) starts from a
// corrected plan. Rollouts run on the planner's own mjData (one per worker), never on the
// caller's. Sampling noise is drawn on the calling thread in a fixed order and item i always runs
// on worker i mod nt, so results depend on the seed only, not on thread timing (the number of
// iterations within a wall-clock budget does).

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mjdiff/linalg.h>
#include <mjdiff/optim.h>
#include <mjdiff/random.h>

#include "mpc.h"
#include "planner_internal.h"

#define MAX_THREAD 64    // threads a planner uses at most
#define NSAMPLE 32       // samples per iteration (sampling planners), at most
#define MIN_SAMPLE 2     // samples per iteration, at least
#define NKNOT_TARGET 15  // knot intervals over the horizon
#define NALPHA 10        // iLQR line search: alpha = 2^-i, i < NALPHA

static const double kNoiseSampling = 0.1;  // noise std, fractions of half the control range
static const double kNoiseCEM = 0.3;
static const double kStdMinCEM = 0.02;
static const double kNoiseMPPI = 0.2;
static const double kTemperatureMPPI = 0.1;  // on costs normalised to [0, 1]
static const double kLearningRate = 0.02;    // Adam step, fraction of the control range
static const double kMaxLr = 2;              // largest step: kMaxLr kLearningRate of the range
static const double kMuMin = 1e-6;           // iLQR regularisation bounds
static const double kMuMax = 1e10;

typedef struct pool_ pool;  // persistent threads (see runParallel)

// per-thread workspace
typedef struct worker_ {
  mjData* d;
  mjdiffStepDeriv* deriv;  // iLQR
  double* ctrl;            // controls (H x nu)
  double* states;          // states ((H+1) x nx)
  double* x;               // state and time (nx + 1)
  double* xn;              // next state and time (nx + 1)
  double* dx;              // tangent state difference (ndx)
  double* best_states;     // sampling: states of this worker's best sample of an iteration
  double best_cost;
} worker;

struct mpcPlanner_ {
  mpcPlannerType type;
  const mjModel* m;      // the planning model: the caller's, or mown
  const mjdiffModel* s;  // its smooth model: the caller's, or sown
  mjModel* mown;         // a copy of the caller's model with the task's planning timestep
  mjdiffModel* sown;
  mjdiffReachSchedule reach;  // gradient planner: the long-range contact term's schedule, its
  int reach_on, reach_iter;   // iterations counted over every mpc_plan call (mpc_plannerSetReach)
  double dt_plant;       // the caller's model's timestep (s): the unit of mpc_plan's shift
  const mjdiffTask* task;
  int nthread;
  double deadline;       // wall-clock end of the current mpc_plan call
  int H, nu, nq, nv, na, nx, ndx;
  int K, nknot, nz;  // steps per knot, knots, knot variables (nknot x nu)
  double* lo;        // control bounds (nu; +-inf if not ctrllimited)
  double* hi;
  double* half;  // half the control range (nu; 1 if not ctrllimited)

  // the start state
  double* x0;  // qpos, qvel, act (nx)
  double time0;
  double* mocap;  // mocap_pos, mocap_quat (7 nmocap)

  // the plan
  double* z;       // knots (nz)
  double* ctrl;    // controls (H x nu)
  double* states;  // predicted states ((H+1) x nx)
  double cost;
  int has_plan;

  // random numbers: xoshiro256**, Box-Muller
  mjdiffRng rng;
  int has_gauss;
  double gauss;

  // iteration control
  int maxiter, nsample_fixed;  // testing: fixed iterations and samples (0: by the budget)
  int last_iter, last_nsample;
  double warm_cost;  // cost of the last call's warm start (NAN: gradient planner)

  worker* w;   // nthread workers
  pool* pool;  // nthread - 1 threads, NULL with one thread

  // sampling planners
  double* samples;  // NSAMPLE x nz
  double* scost;    // NSAMPLE
  int* order;       // NSAMPLE
  double* center;   // nz: CEM mean, MPPI nominal
  double* sigma;    // nz: CEM std
  double* ztmp;     // nz

  // gradient planner
  mjdiffRollout* r;
  double* gstates;       // (H+1) x nx
  double* dLdx;          // (H+1) x ndx
  double* dLdu;          // H x nu
  double* gctrl;         // H x nu
  double* gz;            // nz: gradient
  mjdiffAdam* adam;      // Adam's moments and step count (kept across calls; <mjdiff/optim.h>)
  double *dir;           // nz: Adam's direction
  double* tcost;         // H+1: cost of each step of the rollout
  double lr;             // step size, multiple of kLearningRate (kept across calls)

  // iLQR
  double mu;
  double* A;          // H x ndx x ndx
  double* B;          // H x ndx x nu
  double *lx, *lxx;   // (H+1) x ndx, (H+1) x ndx x ndx
  double *lu, *luu;   // H x nu, H x nu x nu
  double *kff, *Kfb;  // H x nu, H x nu x ndx
  int* dstat;         // H+1: status of each step's derivatives
  double *Vx, *Vxx, *Qx, *Qu, *Qxx, *Quu, *QuuR, *Qux, *VA, *VB, *tn, *tu;
  int* clamped;                // nu
  double* Kpol;                // H x nu x ndx: the gains of the last accepted step (the policy
                               // u_t = ubar_t + K_t (x_t (-) xbar_t) around the plan)
  int has_gains;               // Kpol is set
  double* xq;                  // nv: position difference (warm start)
  int ls_base;                 // line search: alpha index of the batch's first item
  double ls_cost[MAX_THREAD];  // line search: cost of each item of the batch
};

//---------------------------------- small helpers ------------------------------------------------

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// uniform in (0, 1), from the library's generator (<mjdiff/random.h>)
static double uniform(mpcPlanner* p) {
  return mjdiff_rngUniformOpen(&p->rng);
}

// standard normal (Box-Muller, both values used)
static double gaussian(mpcPlanner* p) {
  if (p->has_gauss) {
    p->has_gauss = 0;
    return p->gauss;
  }
  double r = sqrt(-2 * log(uniform(p))), a = 2 * mjPI * uniform(p);
  p->gauss = r * sin(a);
  p->has_gauss = 1;
  return r * cos(a);
}

static double clampValue(double v, double lo, double hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// clamp n rows of nu controls (or knots) to the bounds
static void clampRows(const mpcPlanner* p, double* u, int n) {
  for (int t = 0; t < n; t++) {
    for (int i = 0; i < p->nu; i++) {
      u[t * p->nu + i] = clampValue(u[t * p->nu + i], p->lo[i], p->hi[i]);
    }
  }
}

// controls from knots: u_t = (1 - f) z_j + f z_{j+1}
static void knotsToCtrl(const mpcPlanner* p, const double* z, double* ctrl) {
  int nu = p->nu;
  for (int t = 0; t < p->H; t++) {
    int j = t / p->K;
    double f = (double)(t % p->K) / p->K;
    for (int i = 0; i < nu; i++) {
      ctrl[t * nu + i] = (1 - f) * z[j * nu + i] + f * z[(j + 1) * nu + i];
    }
  }
}

// dJ/dz from dJ/du: gz_j += (1 - f) g_t, gz_{j+1} += f g_t
static void ctrlGradToKnots(const mpcPlanner* p, const double* gctrl, double* gz) {
  int nu = p->nu;
  mju_zero(gz, p->nz);
  for (int t = 0; t < p->H; t++) {
    int j = t / p->K;
    double f = (double)(t % p->K) / p->K;
    for (int i = 0; i < nu; i++) {
      gz[j * nu + i] += (1 - f) * gctrl[t * nu + i];
      gz[(j + 1) * nu + i] += f * gctrl[t * nu + i];
    }
  }
}

// the control of knots z at (real) step t, the last knot held beyond the end
static void knotsAt(const mpcPlanner* p, const double* z, double t, double* u) {
  double s = t / p->K;
  int j = (int)floor(s);
  double f = s - j;
  if (j >= p->nknot - 1) {
    j = p->nknot - 2;
    f = 1;
  }
  for (int i = 0; i < p->nu; i++) u[i] = (1 - f) * z[j * p->nu + i] + f * z[(j + 1) * p->nu + i];
}

//---------------------------------- states and rollouts ------------------------------------------

// d at the start state: qpos, qvel, act, time, mocap; no warm start or leftover controls
static void loadStart(const mpcPlanner* p, mjData* d) {
  const mjModel* m = p->m;
  mju_copy(d->qpos, p->x0, p->nq);
  mju_copy(d->qvel, p->x0 + p->nq, p->nv);
  if (p->na) mju_copy(d->act, p->x0 + p->nq + p->nv, p->na);
  d->time = p->time0;
  if (m->nmocap) {
    mju_copy(d->mocap_pos, p->mocap, 3 * m->nmocap);
    mju_copy(d->mocap_quat, p->mocap + 3 * m->nmocap, 4 * m->nmocap);
  }
  mju_zero(d->qacc_warmstart, p->nv);
  if (p->nu) mju_zero(d->ctrl, p->nu);
}

// x = (qpos, qvel, act)
static void getState(const mpcPlanner* p, const mjData* d, double* x) {
  mju_copy(x, d->qpos, p->nq);
  mju_copy(x + p->nq, d->qvel, p->nv);
  if (p->na) mju_copy(x + p->nq + p->nv, d->act, p->na);
}

static void setState(const mpcPlanner* p, mjData* d, const double* x) {
  mju_copy(d->qpos, x, p->nq);
  mju_copy(d->qvel, x + p->nq, p->nv);
  if (p->na) mju_copy(d->act, x + p->nq + p->nv, p->na);
}

// feedback of an iLQR forward pass: u_t = clamp(ubar_t + alpha k_t + K_t (x_t (-) xbar_t))
typedef struct feedback_ {
  const double* xbar;  // (H+1) x nx
  const double* kff;   // H x nu
  const double* Kfb;   // H x nu x ndx
  double alpha;
} feedback;

// Roll out controls ctrl (H x nu) from the start on worker w, or, with fb, the feedback law around
// them. The running cost needs the kinematics at x_t: with Euler, the step's own forward pass
// leaves them at x_t (MuJoCo integrates qpos, qvel and act only), so x_t is swapped back in for the
// cost; otherwise (RK4, the implicit smooth step, substeps) an extra forward pass. Writes the
// controls used (uout) and states; returns J,
// INFINITY if a step fails. Nullable: fb, uout, states.
static double rollout(const mpcPlanner* p, worker* w, const double* ctrl, const feedback* fb,
                      double* uout, double* states) {
  const mjModel* m = p->m;
  mjData* d = w->d;
  int nu = p->nu, nx = p->nx, H = p->H;
  // the implicit smooth step leaves d's kinematics at its last Newton iterate (the next state):
  // before, the planners took its running costs there, one step late (models/pusher.xml: the
  // rollout's cost 3e-5 off the reference, the plan's 2.6%)
  mjtNum implicit = 0;
  mjdiff_getParam(p->s, "integrator", &implicit, NULL, 0);
  // substeps leave them at the last substep's start
  int euler = m->opt.integrator == mjINT_EULER && implicit == 0 && mjdiff_substepCount(p->s) == 1;
  loadStart(p, d);
  double J = 0;
  for (int t = 0; t < H; t++) {
    double* x = states ? states + (size_t)t * nx : w->x;
    getState(p, d, x);
    double time = d->time;

    // controls
    if (fb) {
      const double* xb = fb->xbar + (size_t)t * nx;
      mj_differentiatePos(m, w->dx, 1, xb, d->qpos);
      for (int i = 0; i < p->nv + p->na; i++) w->dx[p->nv + i] = x[p->nq + i] - xb[p->nq + i];
      for (int i = 0; i < nu; i++) {
        double u = ctrl[t * nu + i] + fb->alpha * fb->kff[t * nu + i];
        u += mju_dot(fb->Kfb + ((size_t)t * nu + i) * p->ndx, w->dx, p->ndx);
        d->ctrl[i] = clampValue(u, p->lo[i], p->hi[i]);
      }
    } else {
      for (int i = 0; i < nu; i++) d->ctrl[i] = clampValue(ctrl[t * nu + i], p->lo[i], p->hi[i]);
    }
    if (uout) mju_copy(uout + t * nu, d->ctrl, nu);

    // running cost and step
    if (!euler) {
      if (mjdiff_forward(m, d, p->s, NULL, 0) != MJDIFF_OK) return INFINITY;
      J += mjdiff_taskCost(p->task, m, d, 0, NULL, NULL);
    }
    if (mjdiff_step(m, d, p->s, NULL, 0) != MJDIFF_OK) return INFINITY;
    if (euler) {
      getState(p, d, w->xn);
      double tnext = d->time;
      setState(p, d, x);
      d->time = time;
      J += mjdiff_taskCost(p->task, m, d, 0, NULL, NULL);
      setState(p, d, w->xn);
      d->time = tnext;
    }
  }

  // terminal cost
  if (states) getState(p, d, states + (size_t)H * nx);
  if (mjdiff_forward(m, d, p->s, NULL, 0) != MJDIFF_OK) return INFINITY;
  J += mjdiff_taskCost(p->task, m, d, 1, NULL, NULL);
  return isfinite(J) ? J : INFINITY;
}

//---------------------------------- threads ------------------------------------------------------
//
// A pool of nthread - 1 threads made with the planner, kept until it is freed. runParallel posts
// a job (a new generation), the caller runs share 0, pool thread i runs share i; share i is items
// i, i + nt, i + 2 nt, .. on worker i (nt = min(nthread, nitem)), so an item always runs on the
// same worker whatever thread picks it up.

typedef void (*itemFn)(mpcPlanner* p, worker* w, int item);

struct pool_ {
  pthread_mutex_t mutex;
  pthread_cond_t start, done;
  int nthread;                 // pool threads running (ids 1..nthread)
  unsigned long generation;    // job counter
  int pending;                 // pool threads still busy with the current job
  int quit;
  mpcPlanner* p;               // the job
  itemFn fn;
  int nitem, nt;
  pthread_t th[MAX_THREAD];
  struct poolArg_ {
    pool* pl;
    int id;
  } arg[MAX_THREAD];
};

static void runShare(mpcPlanner* p, itemFn fn, int id, int nt, int nitem) {
  for (int i = id; i < nitem; i += nt) fn(p, p->w + id, i);
}

static void* poolThread(void* arg) {
  pool* pl = ((struct poolArg_*)arg)->pl;
  int id = ((struct poolArg_*)arg)->id;
  unsigned long seen = 0;
  pthread_mutex_lock(&pl->mutex);
  for (;;) {
    while (!pl->quit && pl->generation == seen) pthread_cond_wait(&pl->start, &pl->mutex);
    if (pl->quit) break;
    seen = pl->generation;
    mpcPlanner* p = pl->p;
    itemFn fn = pl->fn;
    int nt = pl->nt, nitem = pl->nitem;
    pthread_mutex_unlock(&pl->mutex);
    if (id < nt) runShare(p, fn, id, nt, nitem);
    pthread_mutex_lock(&pl->mutex);
    if (--pl->pending == 0) pthread_cond_signal(&pl->done);
  }
  pthread_mutex_unlock(&pl->mutex);
  return NULL;
}

// stop and join the threads (none made: only the teardown); NULL is a no-op
static void freePool(pool* pl) {
  if (!pl) return;
  pthread_mutex_lock(&pl->mutex);
  pl->quit = 1;
  pthread_cond_broadcast(&pl->start);
  pthread_mutex_unlock(&pl->mutex);
  for (int i = 1; i <= pl->nthread; i++) pthread_join(pl->th[i], NULL);
  pthread_cond_destroy(&pl->done);
  pthread_cond_destroy(&pl->start);
  pthread_mutex_destroy(&pl->mutex);
  free(pl);
}

// a pool of up to nextra threads; NULL if none could be made (the caller then runs alone)
static pool* makePool(int nextra) {
  if (nextra < 1) return NULL;
  pool* pl = (pool*)calloc(1, sizeof(pool));
  if (!pl) return NULL;
  pthread_mutex_init(&pl->mutex, NULL);
  pthread_cond_init(&pl->start, NULL);
  pthread_cond_init(&pl->done, NULL);
  for (int i = 1; i <= nextra && i < MAX_THREAD; i++) {
    pl->arg[i].pl = pl;
    pl->arg[i].id = i;
    if (pthread_create(pl->th + i, NULL, poolThread, pl->arg + i) != 0) break;
    pl->nthread = i;
  }
  if (pl->nthread == 0) {
    freePool(pl);
    return NULL;
  }
  return pl;
}

// fn on items 0 .. nitem-1 (see above)
static void runParallel(mpcPlanner* p, itemFn fn, int nitem) {
  int nt = p->nthread < nitem ? p->nthread : nitem;
  if (nt < 1) return;
  pool* pl = p->pool;
  if (nt == 1 || !pl) {
    for (int id = 0; id < nt; id++) runShare(p, fn, id, nt, nitem);
    return;
  }
  pthread_mutex_lock(&pl->mutex);
  pl->p = p;
  pl->fn = fn;
  pl->nitem = nitem;
  pl->nt = nt;
  pl->pending = pl->nthread;
  pl->generation++;
  pthread_cond_broadcast(&pl->start);
  pthread_mutex_unlock(&pl->mutex);
  runShare(p, fn, 0, nt, nitem);
  pthread_mutex_lock(&pl->mutex);
  while (pl->pending > 0) pthread_cond_wait(&pl->done, &pl->mutex);
  pthread_mutex_unlock(&pl->mutex);
}

//---------------------------------- sampling planners --------------------------------------------

// sample i; the worker keeps the states of its best sample (items in increasing order: the
// lowest index among equal costs)
static void sampleItem(mpcPlanner* p, worker* w, int i) {
  knotsToCtrl(p, p->samples + (size_t)i * p->nz, w->ctrl);
  p->scost[i] = rollout(p, w, w->ctrl, NULL, NULL, w->states);
  if (p->scost[i] < w->best_cost) {
    w->best_cost = p->scost[i];
    double* tmp = w->best_states;
    w->best_states = w->states;
    w->states = tmp;
  }
}

// order of the samples by (cost, index)
static void sortSamples(const double* cost, int* order, int n) {
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = 1; i < n; i++) {
    int v = order[i], j = i - 1;
    while (j >= 0 && (cost[order[j]] > cost[v] || (cost[order[j]] == cost[v] && order[j] > v))) {
      order[j + 1] = order[j];
      j--;
    }
    order[j + 1] = v;
  }
}

// Roll out the n knot vectors in p->samples in parallel (costs in p->scost); the lowest, if below
// the plan's cost, becomes the plan (knots, states, cost). Returns its index, or -1.
static int evaluateSamples(mpcPlanner* p, int n) {
  for (int i = 0; i < p->nthread; i++) p->w[i].best_cost = INFINITY;
  runParallel(p, sampleItem, n);
  int best = 0;
  for (int i = 1; i < n; i++) {
    if (p->scost[i] < p->scost[best]) best = i;
  }
  if (!(p->scost[best] < p->cost)) return -1;

  // sample i ran on worker i mod min(nthread, n), which kept the states of its best sample
  int nt = p->nthread < n ? p->nthread : n;
  p->cost = p->scost[best];
  mju_copy(p->z, p->samples + (size_t)best * p->nz, p->nz);
  mju_copy(p->states, p->w[best % nt].best_states, (size_t)(p->H + 1) * p->nx);
  return best;
}

// one iteration of predictive sampling, CEM or MPPI with n samples
static void samplingIteration(mpcPlanner* p, int n) {
  int nz = p->nz, nu = p->nu;
  const double* c = p->type == MPC_SAMPLING ? p->z : p->center;
  double scale = p->type == MPC_SAMPLING ? kNoiseSampling : kNoiseMPPI;

  // samples: the centre (CEM, MPPI), then perturbations drawn in a fixed order
  for (int i = 0; i < n; i++) {
    double* zi = p->samples + (size_t)i * nz;
    for (int k = 0; k < nz; k++) {
      if (i == 0 && p->type != MPC_SAMPLING) {
        zi[k] = c[k];
        continue;
      }
      double sd = p->type == MPC_CEM ? p->sigma[k] : scale * p->half[k % nu];
      zi[k] = clampValue(c[k] + sd * gaussian(p), p->lo[k % nu], p->hi[k % nu]);
    }
  }
  evaluateSamples(p, n);

  if (p->type == MPC_CEM) {
    // elites: mean and standard deviation
    sortSamples(p->scost, p->order, n);
    int ne = n / 8 > 2 ? n / 8 : 2;
    if (ne > n) ne = n;
    int nfinite = 0;
    for (int e = 0; e < ne; e++) nfinite += isfinite(p->scost[p->order[e]]);
    if (nfinite == 0) return;
    ne = nfinite;
    for (int k = 0; k < nz; k++) {
      double mean = 0, var = 0;
      for (int e = 0; e < ne; e++) mean += p->samples[(size_t)p->order[e] * nz + k];
      mean /= ne;
      for (int e = 0; e < ne; e++) {
        double dv = p->samples[(size_t)p->order[e] * nz + k] - mean;
        var += dv * dv;
      }
      var /= ne;
      p->center[k] = clampValue(mean, p->lo[k % nu], p->hi[k % nu]);
      double smin = kStdMinCEM * p->half[k % nu];
      p->sigma[k] = sqrt(var) > smin ? sqrt(var) : smin;
    }
  } else if (p->type == MPC_MPPI) {
    // softmin weights on normalised costs
    double cmin = INFINITY, cmax = -INFINITY;
    for (int i = 0; i < n; i++) {
      if (!isfinite(p->scost[i])) continue;
      if (p->scost[i] < cmin) cmin = p->scost[i];
      if (p->scost[i] > cmax) cmax = p->scost[i];
    }
    if (!isfinite(cmin)) return;
    double range = cmax > cmin ? cmax - cmin : 1, wsum = 0;
    mju_zero(p->ztmp, nz);
    for (int i = 0; i < n; i++) {
      if (!isfinite(p->scost[i])) continue;
      double wi = exp(-(p->scost[i] - cmin) / range / kTemperatureMPPI);
      wsum += wi;
      mju_addToScl(p->ztmp, p->samples + (size_t)i * nz, wi, nz);
    }
    for (int k = 0; k < nz; k++) {
      p->center[k] = clampValue(p->ztmp[k] / wsum, p->lo[k % nu], p->hi[k % nu]);
    }
  }
}

//---------------------------------- gradient planner ---------------------------------------------

// the cost at step t of the recorded rollout (p->gstates, worker 0's controls) with its gradients
static void costItem(mpcPlanner* p, worker* w, int t) {
  const mjModel* m = p->m;
  mjData* d = w->d;
  int H = p->H, nu = p->nu;
  loadStart(p, d);
  setState(p, d, p->gstates + (size_t)t * p->nx);
  d->time = p->time0 + t * m->opt.timestep;
  if (t < H) mju_copy(d->ctrl, p->w[0].ctrl + t * nu, nu);
  if (mjdiff_forward(m, d, p->s, NULL, 0) != MJDIFF_OK) {
    p->tcost[t] = INFINITY;
    return;
  }
  p->tcost[t] = mjdiff_taskCost(p->task, m, d, t == H, p->dLdx + (size_t)t * p->ndx,
                                t < H ? p->dLdu + (size_t)t * nu : NULL);
}

// J(z) and dJ/dz on worker 0 (the start already loaded in p), the costs along the rollout on all
// threads; INFINITY if the rollout fails
static double objective(mpcPlanner* p, const double* z, double* gz) {
  const mjModel* m = p->m;
  worker* w = p->w;
  mjData* d = w->d;
  int H = p->H;
  knotsToCtrl(p, z, w->ctrl);
  clampRows(p, w->ctrl, H);
  loadStart(p, d);
  if (mjdiff_rolloutForward(m, d, p->s, p->r, w->ctrl, NULL, NULL, p->gstates, NULL, NULL, 0) !=
      MJDIFF_OK) {
    return INFINITY;
  }

  // loss and its gradients at each state: l(x_t, u_t), l_H(x_H), summed in order
  runParallel(p, costItem, H + 1);
  double J = 0;
  for (int t = 0; t <= H; t++) J += p->tcost[t];
  if (!isfinite(J)) return INFINITY;
  if (!gz) return J;

  // adjoint sweep, then the chain rule to the knots
  if (mjdiff_rolloutBackward(m, d, p->s, p->r, p->dLdx, p->dLdu, NULL, NULL, p->gctrl, NULL, NULL,
                             NULL, 0) != MJDIFF_OK) {
    return INFINITY;
  }
  ctrlGradToKnots(p, p->gctrl, gz);
  return J;
}

// One iteration: J and dJ/dz at the plan z, Adam's direction d from its moments, then a line
// search on the step, z_i = clamp(z - a_i lr kLearningRate (hi - lo) .* d), a_i = 2, 1/2, 1/8, ..
// (one candidate per thread, at least two), evaluated in parallel; the lowest cost below J is
// the new plan and its a_i lr the next lr; none: lr /= 8. 0 when there is nothing more to do
// (the rollout failed, or lr fell below 1e-6).
static int gradientIteration(mpcPlanner* p) {
  int nz = p->nz, nu = p->nu;
  double J = objective(p, p->z, p->gz);
  if (!isfinite(J)) return 0;
  p->cost = J;  // the plan's cost and states (mpc_plan leaves them to the first iteration)
  mju_copy(p->states, p->gstates, (size_t)(p->H + 1) * p->nx);

  // Adam's direction (b1 0.9, b2 0.999, eps 1e-12, no clipping: see mpc_makePlanner)
  if (mjdiff_adamDirection(p->adam, p->gz, p->dir, NULL) != MJDIFF_OK) return 0;

  // line search on the step, one candidate per thread
  int n = p->nthread > 2 ? (p->nthread < NSAMPLE ? p->nthread : NSAMPLE) : 2;
  for (int i = 0; i < n; i++) {
    double a = 2 * ldexp(1.0, -2 * i) * p->lr * kLearningRate;
    double* zi = p->samples + (size_t)i * nz;
    for (int k = 0; k < nz; k++) {
      double step = a * 2 * p->half[k % nu];
      zi[k] = clampValue(p->z[k] - step * p->dir[k], p->lo[k % nu], p->hi[k % nu]);
    }
  }
  int best = evaluateSamples(p, n);
  if (best >= 0) {
    p->lr = fmin(2 * ldexp(1.0, -2 * best) * p->lr, kMaxLr);
  } else {
    p->lr /= 8;
  }
  return p->lr > 1e-6;
}

//---------------------------------- iLQR ---------------------------------------------------------

// derivatives at step t of the nominal (p->states, p->ctrl): A, B, l_x, l_u, l_xx, l_uu; t = H:
// the terminal cost's
static void derivItem(mpcPlanner* p, worker* w, int t) {
  const mjModel* m = p->m;
  mjData* d = w->d;
  int nu = p->nu, ndx = p->ndx, H = p->H;
  loadStart(p, d);
  setState(p, d, p->states + (size_t)t * p->nx);
  d->time = p->time0 + t * m->opt.timestep;
  size_t n2 = (size_t)ndx * ndx;
  if (t < H) {
    mju_copy(d->ctrl, p->ctrl + t * nu, nu);
    // the step Jacobian leaves d's derived quantities at the forward pass of x_t
    mjdiffStatus st = mjdiff_stepJacobian(m, d, p->s, w->deriv, p->A + n2 * t,
                                          p->B + (size_t)ndx * nu * t, NULL, NULL, 0);
    p->dstat[t] = st;
    if (st != MJDIFF_OK) return;
    mjdiff_taskCost(p->task, m, d, 0, p->lx + (size_t)ndx * t, p->lu + (size_t)nu * t);
    mjdiff_taskCostHessian(p->task, m, d, 0, p->lxx + n2 * t, p->luu + (size_t)nu * nu * t);
  } else {
    mjdiffStatus st = mjdiff_forward(m, d, p->s, NULL, 0);
    p->dstat[t] = st;
    if (st != MJDIFF_OK) return;
    mjdiff_taskCost(p->task, m, d, 1, p->lx + (size_t)ndx * t, NULL);
    mjdiff_taskCostHessian(p->task, m, d, 1, p->lxx + n2 * t, NULL);
  }
}

// Riccati sweep with regularisation p->mu; 0 if some Q_uu + mu I is not positive definite
static int backwardPass(mpcPlanner* p) {
  int n = p->ndx, nu = p->nu, H = p->H;
  size_t n2 = (size_t)n * n;
  mju_copy(p->Vx, p->lx + (size_t)n * H, n);
  mju_copy(p->Vxx, p->lxx + n2 * H, n2);
  for (int t = H - 1; t >= 0; t--) {
    const double* A = p->A + n2 * t;
    const double* B = p->B + (size_t)n * nu * t;
    const double* ubar = p->ctrl + t * nu;
    double* k = p->kff + t * nu;
    double* K = p->Kfb + (size_t)nu * n * t;

    // Q_x = l_x + A' V_x, Q_u = l_u + B' V_x
    mju_mulMatTVec(p->Qx, A, p->Vx, n, n);
    mju_addTo(p->Qx, p->lx + (size_t)n * t, n);
    if (nu) {
      mju_mulMatTVec(p->Qu, B, p->Vx, n, nu);
      mju_addTo(p->Qu, p->lu + (size_t)nu * t, nu);
    }

    // Q_xx = l_xx + A' V_xx A, Q_ux = B' V_xx A, Q_uu = l_uu + B' V_xx B
    mjdiff_gemm(0, 0, n, n, n, 1, p->Vxx, A, 0, p->VA);  // V_xx A
    mju_copy(p->Qxx, p->lxx + n2 * t, n2);
    mjdiff_gemm(1, 0, n, n, n, 1, A, p->VA, 1, p->Qxx);
    if (nu) {
      mjdiff_gemm(1, 0, nu, n, n, 1, B, p->VA, 0, p->Qux);
      mjdiff_gemm(0, 0, n, nu, n, 1, p->Vxx, B, 0, p->VB);  // V_xx B
      mju_copy(p->Quu, p->luu + (size_t)nu * nu * t, (size_t)nu * nu);
      mjdiff_gemm(1, 0, nu, nu, n, 1, B, p->VB, 1, p->Quu);
      for (int i = 0; i < nu; i++) {
        for (int j = 0; j < i; j++) {
          double v = 0.5 * (p->Quu[i * nu + j] + p->Quu[j * nu + i]);
          p->Quu[i * nu + j] = p->Quu[j * nu + i] = v;
        }
      }

      // k = -(Q_uu + mu I)^-1 Q_u, K = -(Q_uu + mu I)^-1 Q_ux
      mju_copy(p->QuuR, p->Quu, (size_t)nu * nu);
      for (int i = 0; i < nu; i++) p->QuuR[i * nu + i] += p->mu;
      if (mjdiff_cholesky(p->QuuR, nu, 0)) return 0;
      mju_copy(k, p->Qu, nu);
      mjdiff_cholSolve(p->QuuR, nu, k, 1);
      mju_scl(k, k, -1, nu);
      mju_copy(K, p->Qux, (size_t)nu * n);
      mjdiff_cholSolve(p->QuuR, nu, K, n);
      mju_scl(K, K, -1, (size_t)nu * n);

      // bounds: clamp ubar + k, no feedback on clamped controls
      for (int i = 0; i < nu; i++) {
        double u = ubar[i] + k[i], uc = clampValue(u, p->lo[i], p->hi[i]);
        p->clamped[i] = uc != u;
        if (p->clamped[i]) {
          k[i] = uc - ubar[i];
          mju_zero(K + i * n, n);
        }
      }
    }

    // V_x = Q_x + K' Q_uu k + K' Q_u + Q_ux' k
    mju_copy(p->Vx, p->Qx, n);
    mju_copy(p->Vxx, p->Qxx, n2);
    if (nu) {
      mju_mulMatVec(p->tu, p->Quu, k, nu, nu);
      mju_addTo(p->tu, p->Qu, nu);
      mju_mulMatTVec(p->tn, K, p->tu, nu, n);
      mju_addTo(p->Vx, p->tn, n);
      mju_mulMatTVec(p->tn, p->Qux, k, nu, n);
      mju_addTo(p->Vx, p->tn, n);

      // V_xx = Q_xx + K' (Q_uu K + Q_ux) + Q_ux' K
      mju_copy(p->VA, p->Qux, (size_t)nu * n);
      mjdiff_gemm(0, 0, nu, n, nu, 1, p->Quu, K, 1, p->VA);
      mjdiff_gemm(1, 0, n, n, nu, 1, K, p->VA, 1, p->Vxx);
      mjdiff_gemm(1, 0, n, n, nu, 1, p->Qux, K, 1, p->Vxx);
    }
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < i; j++) {
        double v = 0.5 * (p->Vxx[i * n + j] + p->Vxx[j * n + i]);
        p->Vxx[i * n + j] = p->Vxx[j * n + i] = v;
      }
    }
  }
  return 1;
}

// line search item i: alpha = 2^-(base + i) on worker i (a batch has at most nthread items)
static void lineSearchItem(mpcPlanner* p, worker* w, int i) {
  feedback fb = {p->states, p->kff, p->Kfb, ldexp(1.0, -(p->ls_base + i))};
  p->ls_cost[i] = rollout(p, w, p->ctrl, &fb, w->ctrl, w->states);
}

// One iLQR iteration: the derivatives along the plan, then backward and forward passes until a
// step lowers J: the backward pass raises mu until every Q_uu + mu I is positive definite; the
// forward passes try alpha = 1, 1/2, .. (nthread at a time) and take the first that lowers J
// (mu /= 4); none: mu *= 10 and again, without new derivatives. 0 when there is nothing more to do
// (derivatives failed, mu past its bound) or the deadline passed.
static int ilqrIteration(mpcPlanner* p) {
  int H = p->H, nu = p->nu, nx = p->nx;
  runParallel(p, derivItem, H + 1);
  for (int t = 0; t <= H; t++) {
    if (p->dstat[t] != MJDIFF_OK) return 0;
  }
  for (;;) {
    while (!backwardPass(p)) {
      p->mu = p->mu * 10 > kMuMin ? p->mu * 10 : kMuMin;
      if (p->mu > kMuMax) return 0;
    }
    for (p->ls_base = 0; p->ls_base < NALPHA; p->ls_base += p->nthread) {
      int nitem = NALPHA - p->ls_base < p->nthread ? NALPHA - p->ls_base : p->nthread;
      runParallel(p, lineSearchItem, nitem);
      for (int i = 0; i < nitem; i++) {
        if (p->ls_cost[i] < p->cost) {
          p->cost = p->ls_cost[i];
          mju_copy(p->ctrl, p->w[i].ctrl, (size_t)H * nu);
          mju_copy(p->states, p->w[i].states, (size_t)(H + 1) * nx);
          p->mu = p->mu / 4 > kMuMin ? p->mu / 4 : kMuMin;
          mju_copy(p->Kpol, p->Kfb, (size_t)H * nu * p->ndx);
          p->has_gains = 1;
          return 1;
        }
      }
      if (now() > p->deadline) return 0;
    }
    p->mu *= 10;
    if (p->mu > kMuMax) return 0;
  }
}

//---------------------------------- the interface ------------------------------------------------

const char* mpc_plannerName(mpcPlannerType type) {
  switch (type) {
    case MPC_GRADIENT:
      return "gradient";
    case MPC_ILQR:
      return "ilqr";
    case MPC_SAMPLING:
      return "sampling";
    case MPC_CEM:
      return "cem";
    case MPC_MPPI:
      return "mppi";
  }
  return "unknown";
}

static double* allocNum(size_t n, int* ok) {
  double* v = (double*)calloc(n ? n : 1, sizeof(double));
  if (!v) *ok = 0;
  return v;
}

static int* allocInt(size_t n, int* ok) {
  int* v = (int*)calloc(n ? n : 1, sizeof(int));
  if (!v) *ok = 0;
  return v;
}

mpcPlanner* mpc_makePlanner(mpcPlannerType type, const mjModel* m, const mjdiffModel* s,
                            const mjdiffTask* task, int nthread, unsigned long long seed, char* err,
                            int errsz) {
  char dummy[1];
  if (!err || errsz <= 0) {
    err = dummy;
    errsz = 1;
  }
  err[0] = 0;
  if (!m || !s || !task) {
    snprintf(err, (size_t)errsz, "model, smooth model or task is NULL");
    return NULL;
  }
  if ((int)type < MPC_GRADIENT || (int)type > MPC_MPPI) {
    snprintf(err, (size_t)errsz, "planner type must be 0 to 4, got %d", (int)type);
    return NULL;
  }
  if (nthread < 1) {
    snprintf(err, (size_t)errsz, "nthread must be >= 1, got %d", nthread);
    return NULL;
  }
  double horizon = mjdiff_taskHorizon(task);
  double dt = mjdiff_taskTimestep(task) > 0 ? mjdiff_taskTimestep(task) : m->opt.timestep;
  if (!(horizon > 0) || !(dt > 0)) {
    snprintf(err, (size_t)errsz, "horizon must be > 0 s, got %g (timestep %g s)", horizon, dt);
    return NULL;
  }
  double steps = horizon / dt;
  if (steps < 1 - 1e-9) {
    snprintf(err, (size_t)errsz,
             "planning timestep %g s is longer than the horizon %g s (a plan needs one step)", dt,
             horizon);
    return NULL;
  }
  if (steps > 1e6) {
    snprintf(err, (size_t)errsz, "horizon must be at most 1e6 steps, got %g s / %g s", horizon,
             dt);
    return NULL;
  }

  mpcPlanner* p = (mpcPlanner*)calloc(1, sizeof(mpcPlanner));
  if (!p) {
    snprintf(err, (size_t)errsz, "out of memory making the planner");
    return NULL;
  }
  p->type = type;
  p->m = m;
  p->s = s;
  p->dt_plant = m->opt.timestep;
  if (dt != m->opt.timestep) {
    // the planning model: a copy with the task's timestep
    p->mown = mj_copyModel(NULL, m);
    if (!p->mown) {
      snprintf(err, (size_t)errsz, "out of memory copying the model for the planning timestep");
      mpc_freePlanner(p);
      return NULL;
    }
    p->mown->opt.timestep = dt;
    if (mjdiff_copyModel(s, p->mown, &p->sown, err, errsz) != MJDIFF_OK) {
      mpc_freePlanner(p);
      return NULL;
    }
    p->m = m = p->mown;
    p->s = s = p->sown;
  }
  p->task = task;
  p->nthread = nthread < MAX_THREAD ? nthread : MAX_THREAD;
  p->lr = 1;
  p->H = (int)lround(steps) > 1 ? (int)lround(steps) : 1;
  p->nu = m->nu;
  p->nq = m->nq;
  p->nv = m->nv;
  p->na = m->na;
  p->nx = m->nq + m->nv + m->na;
  p->ndx = 2 * m->nv + m->na;
  p->K =
      (int)lround((double)p->H / NKNOT_TARGET) > 1 ? (int)lround((double)p->H / NKNOT_TARGET) : 1;
  p->nknot = (p->H + p->K - 1) / p->K + 1;
  p->nz = p->nknot * p->nu;
  p->mu = kMuMin;
  mjdiff_rngSeed(&p->rng, seed);

  int H = p->H, nu = p->nu, nx = p->nx, ndx = p->ndx, nz = p->nz, ok = 1;
  size_t n2 = (size_t)ndx * ndx;
  p->lo = allocNum(nu, &ok);
  p->hi = allocNum(nu, &ok);
  p->half = allocNum(nu, &ok);
  p->x0 = allocNum(nx, &ok);
  p->mocap = allocNum(7 * (size_t)m->nmocap, &ok);
  p->z = allocNum(nz, &ok);
  p->ctrl = allocNum((size_t)H * nu, &ok);
  p->states = allocNum((size_t)(H + 1) * nx, &ok);
  p->ztmp = allocNum(nz, &ok);
  p->w = (worker*)calloc((size_t)p->nthread, sizeof(worker));
  if (!p->w) ok = 0;
  for (int i = 0; ok && i < p->nthread; i++) {
    worker* w = p->w + i;
    w->d = mj_makeData(m);
    if (!w->d) ok = 0;
    w->ctrl = allocNum((size_t)H * nu, &ok);
    w->states = allocNum((size_t)(H + 1) * nx, &ok);
    w->x = allocNum(nx + 1, &ok);
    w->xn = allocNum(nx + 1, &ok);
    w->dx = allocNum(ndx, &ok);
    if (type != MPC_ILQR) w->best_states = allocNum((size_t)(H + 1) * nx, &ok);
  }
  if (type != MPC_ILQR) {
    // sampling planners: samples; gradient planner: line search candidates
    p->samples = allocNum((size_t)NSAMPLE * nz, &ok);
    p->scost = allocNum(NSAMPLE, &ok);
  }
  if (type == MPC_SAMPLING || type == MPC_CEM || type == MPC_MPPI) {
    p->order = allocInt(NSAMPLE, &ok);
    p->center = allocNum(nz, &ok);
    p->sigma = allocNum(nz, &ok);
  }
  if (type == MPC_GRADIENT) {
    p->gstates = allocNum((size_t)(H + 1) * nx, &ok);
    p->dLdx = allocNum((size_t)(H + 1) * ndx, &ok);
    p->dLdu = allocNum((size_t)H * nu, &ok);
    p->gctrl = allocNum((size_t)H * nu, &ok);
    p->gz = allocNum(nz, &ok);
    mjdiffAdamOptions aopt;
    mjdiff_defaultAdamOptions(&aopt);
    aopt.eps = 1e-12;
    if (mjdiff_makeAdam(nz > 0 ? nz : 1, &aopt, &p->adam, NULL, 0) != MJDIFF_OK) ok = 0;
    p->dir = allocNum(nz, &ok);
    p->tcost = allocNum((size_t)H + 1, &ok);
  }
  if (type == MPC_ILQR) {
    p->A = allocNum(n2 * H, &ok);
    p->B = allocNum((size_t)ndx * nu * H, &ok);
    p->lx = allocNum((size_t)ndx * (H + 1), &ok);
    p->lxx = allocNum(n2 * (H + 1), &ok);
    p->lu = allocNum((size_t)nu * H, &ok);
    p->luu = allocNum((size_t)nu * nu * H, &ok);
    p->kff = allocNum((size_t)nu * H, &ok);
    p->Kfb = allocNum((size_t)nu * ndx * H, &ok);
    p->Kpol = allocNum((size_t)nu * ndx * H, &ok);
    p->dstat = allocInt((size_t)H + 1, &ok);
    p->Vx = allocNum(ndx, &ok);
    p->Vxx = allocNum(n2, &ok);
    p->Qx = allocNum(ndx, &ok);
    p->Qu = allocNum(nu, &ok);
    p->Qxx = allocNum(n2, &ok);
    p->Quu = allocNum((size_t)nu * nu, &ok);
    p->QuuR = allocNum((size_t)nu * nu, &ok);
    p->Qux = allocNum((size_t)nu * ndx, &ok);
    p->VA = allocNum(n2, &ok);
    p->VB = allocNum((size_t)ndx * nu, &ok);
    p->tn = allocNum(ndx, &ok);
    p->tu = allocNum(2 * (size_t)nu, &ok);
    p->clamped = allocInt(nu, &ok);
    p->xq = allocNum(p->nv, &ok);
  }
  if (!ok) {
    mpc_freePlanner(p);
    snprintf(err, (size_t)errsz, "out of memory making the planner (horizon %d steps)", H);
    return NULL;
  }

  // derivative workspaces
  if (type == MPC_GRADIENT) {
    mjdiffStatus st = mjdiff_makeRollout(m, s, NULL, H, NULL, &p->r, err, errsz);
    if (st != MJDIFF_OK) {
      char msg[512];
      snprintf(msg, sizeof(msg), "%s", err);
      snprintf(err, (size_t)errsz, "gradient planner: %s", msg);
      mpc_freePlanner(p);
      return NULL;
    }
  }
  if (type == MPC_ILQR) {
    for (int i = 0; i < p->nthread; i++) {
      mjdiffStatus st = mjdiff_makeStepDeriv(m, s, NULL, &p->w[i].deriv, err, errsz);
      if (st != MJDIFF_OK) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", err);
        snprintf(err, (size_t)errsz, "ilqr planner: %s", msg);
        mpc_freePlanner(p);
        return NULL;
      }
    }
  }

  // bounds; the initial plan: zero controls clamped to the bounds
  for (int i = 0; i < nu; i++) {
    int limited = m->actuator_ctrllimited[i] &&
                  m->actuator_ctrlrange[2 * i] < m->actuator_ctrlrange[2 * i + 1];
    p->lo[i] = limited ? m->actuator_ctrlrange[2 * i] : -INFINITY;
    p->hi[i] = limited ? m->actuator_ctrlrange[2 * i + 1] : INFINITY;
    p->half[i] = limited ? 0.5 * (p->hi[i] - p->lo[i]) : 1;
  }
  clampRows(p, p->z, p->nknot);
  clampRows(p, p->ctrl, H);

  // the threads (none made: the calling thread runs every share)
  p->pool = makePool(p->nthread - 1);
  return p;
}

void mpc_freePlanner(mpcPlanner* p) {
  if (!p) return;
  freePool(p->pool);
  if (p->w) {
    for (int i = 0; i < p->nthread; i++) {
      worker* w = p->w + i;
      if (w->d) mj_deleteData(w->d);
      mjdiff_freeStepDeriv(w->deriv);
      free(w->ctrl);
      free(w->states);
      free(w->x);
      free(w->xn);
      free(w->dx);
      free(w->best_states);
    }
    free(p->w);
  }
  mjdiff_freeRollout(p->r);
  mjdiff_freeAdam(p->adam);
  mjdiff_freeModel(p->sown);
  if (p->mown) mj_deleteModel(p->mown);
  double* arrays[] = {p->lo,     p->hi,   p->half,    p->x0,    p->mocap,  p->z,     p->ctrl,
                      p->states, p->ztmp, p->samples, p->scost, p->center, p->sigma, p->gstates,
                      p->dLdx,   p->dLdu, p->gctrl,   p->gz,    p->dir, p->A,
                      p->B,      p->lx,   p->lxx,     p->lu,    p->luu,    p->kff,   p->Kfb,
                      p->Vx,     p->Vxx,  p->Qx,      p->Qu,    p->Qxx,    p->Quu,   p->QuuR,
                      p->Qux,    p->VA,   p->VB,      p->tn,    p->tu,      p->xq,
                      p->tcost,   p->Kpol};
  for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) free(arrays[i]);
  free(p->order);
  free(p->dstat);
  free(p->clamped);
  free(p);
}

// the start state from d
static void setStart(mpcPlanner* p, const mjData* d) {
  const mjModel* m = p->m;
  getState(p, d, p->x0);
  p->time0 = d->time;
  if (m->nmocap) {
    mju_copy(p->mocap, d->mocap_pos, 3 * m->nmocap);
    mju_copy(p->mocap + 3 * m->nmocap, d->mocap_quat, 4 * m->nmocap);
  }
}

// real step st in a sequence of n rows as rows j, j1 and weight f: row(st) = (1 - f) row j +
// f row j1, st = j + f, j1 = j + 1 (j1 = j when f = 0); the last row held beyond the end
static void shiftIndex(double st, int n, int* j, int* j1, double* f) {
  *j = (int)floor(st);
  *f = st - *j;
  if (*j >= n - 1) {
    *j = n - 1;
    *f = 0;
  }
  *j1 = *f > 0 ? *j + 1 : *j;
}

// Warm start: the previous plan shifted by shift plant steps (ds = shift dt_plant / dt planning
// steps), linearly interpolated, the last value held. Knot planners shift their knots; iLQR its
// controls and, when it has them, its nominal states and feedback gains (interpolated in the
// tangent space: xbar_t = xbar_j (+) f (xbar_{j+1} (-) xbar_j)). Rows are shifted in place in
// increasing t: row t reads rows j, j+1 >= t only.
static void warmStart(mpcPlanner* p, int shift) {
  int H = p->H, nu = p->nu, nq = p->nq, nx = p->nx, ndx = p->ndx;
  if (!p->has_plan || shift <= 0) return;
  double ds = shift * p->dt_plant / p->m->opt.timestep;
  if (p->type != MPC_ILQR) {
    mju_copy(p->ztmp, p->z, p->nz);
    for (int j = 0; j < p->nknot; j++) {
      knotsAt(p, p->ztmp, (double)j * p->K + ds, p->z + j * nu);
    }
    return;
  }
  for (int t = 0; t < H; t++) {
    int j, j1;
    double f;
    shiftIndex(t + ds, H, &j, &j1, &f);
    for (int i = 0; i < nu; i++) {
      p->ctrl[t * nu + i] = (1 - f) * p->ctrl[j * nu + i] + f * p->ctrl[j1 * nu + i];
    }
    if (p->has_gains) {
      double* K = p->Kpol + (size_t)nu * ndx * t;
      const double* K0 = p->Kpol + (size_t)nu * ndx * j;
      const double* K1 = p->Kpol + (size_t)nu * ndx * j1;
      for (size_t k = 0; k < (size_t)nu * ndx; k++) K[k] = (1 - f) * K0[k] + f * K1[k];
    }
  }
  if (p->has_gains) {
    for (int t = 0; t <= H; t++) {
      int j, j1;
      double f;
      shiftIndex(t + ds, H + 1, &j, &j1, &f);
      double* x = p->states + (size_t)t * nx;
      const double* x0 = p->states + (size_t)j * nx;
      const double* x1 = p->states + (size_t)j1 * nx;
      mj_differentiatePos(p->m, p->xq, 1, x0, x1);
      mju_copy(x, x0, nq);
      mj_integratePos(p->m, x, p->xq, f);
      for (int i = nq; i < nx; i++) x[i] = (1 - f) * x0[i] + f * x1[i];
    }
  }
}

double mpc_plan(mpcPlanner* p, const mjData* d, double budget, int shift, double* ctrl) {
  if (!p || !d) return NAN;
  double start = now();
  int H = p->H, nu = p->nu, nz = p->nz;
  p->deadline = p->maxiter > 0 ? INFINITY : start + budget;
  setStart(p, d);
  warmStart(p, shift);
  p->has_plan = 1;

  // the warm start's cost and states from the new state (its time: the sample count's estimate)
  if (p->type != MPC_ILQR) {
    clampRows(p, p->z, p->nknot);
    knotsToCtrl(p, p->z, p->ctrl);
  }
  clampRows(p, p->ctrl, H);
  if (p->type == MPC_ILQR && p->has_gains && shift > 0) {
    // the previous feedback policy around the shifted plan: u_t = ubar_t + K_t (x_t (-) xbar_t)
    feedback fb = {p->states, p->kff, p->Kpol, 0};
    p->cost = rollout(p, p->w, p->ctrl, &fb, p->w->ctrl, p->w->states);
    mju_copy(p->ctrl, p->w->ctrl, (size_t)H * nu);
    mju_copy(p->states, p->w->states, (size_t)(H + 1) * p->nx);
  } else if (p->type != MPC_GRADIENT) {
    p->cost = rollout(p, p->w, p->ctrl, NULL, NULL, p->states);
  } else {
    p->cost = INFINITY;  // set by the first iteration's objective
  }
  p->warm_cost = p->type == MPC_GRADIENT ? NAN : p->cost;
  double troll = now() - start;

  // samples per iteration: as many as fit in 80% of the rest of the budget, at most NSAMPLE
  int nsample = 0;
  if (p->type == MPC_SAMPLING || p->type == MPC_CEM || p->type == MPC_MPPI) {
    double fit = 0.8 * (budget - troll) * p->nthread / (troll > 1e-9 ? troll : 1e-9);
    nsample = fit < NSAMPLE ? (int)fit : NSAMPLE;
    if (nsample < MIN_SAMPLE) nsample = MIN_SAMPLE;
    if (p->nsample_fixed > 0) nsample = p->nsample_fixed;
    for (int k = 0; k < nz; k++) {
      p->center[k] = p->z[k];
      p->sigma[k] = kNoiseCEM * p->half[k % nu];
    }
  }
  p->mu = kMuMin;
  if (p->lr < 0.05) p->lr = 0.05;

  // iterations while the next is expected to end within the budget (at least one)
  int iter = 0;
  for (;;) {
    double t0 = now();
    int more = 1;
    switch (p->type) {
      case MPC_GRADIENT:
        if (p->reach_on) mjdiff_reachApply(p->sown, &p->reach, p->reach_iter++, NULL, 0);
        more = gradientIteration(p);
        break;
      case MPC_ILQR:
        more = ilqrIteration(p);
        break;
      default:
        samplingIteration(p, nsample);
        break;
    }
    iter++;
    double t1 = now();
    if (!more) break;
    if (p->maxiter > 0) {
      if (iter >= p->maxiter) break;
    } else if (t1 + (t1 - t0) > p->deadline) {
      break;
    }
  }
  p->last_iter = iter;
  p->last_nsample = nsample;

  // the plan's controls (its states and cost were recorded when it was evaluated)
  if (p->type != MPC_ILQR) {
    knotsToCtrl(p, p->z, p->ctrl);
    clampRows(p, p->ctrl, H);
  }
  if (ctrl) mju_copy(ctrl, p->ctrl, nu);
  return p->cost;
}

int mpc_plannerSetParamValues(mpcPlanner* p, const mjdiffParams* prm, const double* values,
                              char* err, int errsz) {
  return mjdiff_setParamValues((mjModel*)p->m, (mjdiffModel*)p->s, prm, values, err, errsz) ==
         MJDIFF_OK;
}

int mpc_plannerSetReach(mpcPlanner* p, const mjdiffReachSchedule* sched, char* err, int errsz) {
  if (!p || p->type != MPC_GRADIENT) {
    snprintf(err, (size_t)errsz, "the long-range contact term is for the gradient planner");
    return 0;
  }
  if (mjdiff_validateReachSchedule(sched, err, errsz) != MJDIFF_OK) return 0;
  if (!p->sown) {
    // a smooth model of its own (the plant keeps the caller's, term off), and its rollout
    mjdiffRollout* r = NULL;
    if (mjdiff_copyModel(p->s, p->m, &p->sown, err, errsz) != MJDIFF_OK) return 0;
    if (mjdiff_makeRollout(p->m, p->sown, NULL, p->H, NULL, &r, err, errsz) != MJDIFF_OK) {
      mjdiff_freeModel(p->sown);
      p->sown = NULL;
      return 0;
    }
    mjdiff_freeRollout(p->r);
    p->r = r;
    p->s = p->sown;
  }
  p->reach = *sched;
  p->reach_on = 1;
  p->reach_iter = 0;
  return mjdiff_reachApply(p->sown, sched, 0, err, errsz) == MJDIFF_OK;
}

const double* mpc_planControls(const mpcPlanner* p, int* H) {
  if (H) *H = p ? p->H : 0;
  return p ? p->ctrl : NULL;
}

const double* mpc_planStates(const mpcPlanner* p, int* H) {
  if (H) *H = p ? p->H : 0;
  return p ? p->states : NULL;
}

//---------------------------------- testing hooks ------------------------------------------------

int mpc_plannerKnots(const mpcPlanner* p, int* steps_per_knot) {
  int knot = p && p->type != MPC_ILQR;
  if (steps_per_knot) *steps_per_knot = knot ? p->K : 0;
  return knot ? p->nknot : 0;
}

double mpc_plannerObjective(mpcPlanner* p, const mjData* d, const double* knots, double* grad) {
  if (!p || !d || !knots || p->type != MPC_GRADIENT) return NAN;
  setStart(p, d);
  return objective(p, knots, grad);
}

double mpc_plannerRolloutCost(mpcPlanner* p, const mjData* d, const double* ctrl, double* states) {
  if (!p || !d || !ctrl) return NAN;
  setStart(p, d);
  return rollout(p, p->w, ctrl, NULL, NULL, states);
}

void mpc_plannerSetIterations(mpcPlanner* p, int maxiter, int nsample) {
  if (!p) return;
  p->maxiter = maxiter > 0 ? maxiter : 0;
  p->nsample_fixed = nsample > 0 ? (nsample < NSAMPLE ? nsample : NSAMPLE) : 0;
}

double mpc_plannerWarmCost(const mpcPlanner* p) {
  return p ? p->warm_cost : NAN;
}

int mpc_plannerIterations(const mpcPlanner* p, int* nsample) {
  if (nsample) *nsample = p ? p->last_nsample : 0;
  return p ? p->last_iter : 0;
}
