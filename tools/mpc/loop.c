// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc: the closed loop. Per control step k, from the plant state x_k at time t_k:
//   u_k     = mpc_plan(planner, x_k, budget, s_k)        s_k = plant steps since the last plan
//   l_k     = l(x_k, u_k)                                 mjdiff_taskCost after mjdiff_forward, on
//                                                         a copy
//   x_{k+1} = plant^shift(x_k, u_k)                       mjdiff_step or mj_step
// With a plant of plant.h (mpc_loopSetPlant) the native plant is that plant's model and data
// (hidden parameter changes, delay, noise): per plant step its readings y_k at x_k go to the
// adaptation (adapt.c) with x_k and u_k; a fitted window's estimate is set on the planner's model
// before the next plan. The oracle sets the planner's values to the plant's at every control step.
// The cost is evaluated on a copy, so that the plant's own data (the native solver's warm start,
// its contacts) is left as its step made it; both plants are measured with the same evaluation.

#define _POSIX_C_SOURCE 200809L

#include "loop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolutil.h"

// control steps in a row with a non-finite plan cost that fail a run
#define MAX_BADPLAN 10

void mpc_defaultLoopOptions(mpcLoopOptions* opt) {
  opt->plant = MPC_PLANT_SMOOTH;
  opt->budget = 0.01;
  opt->shift = 1;
  opt->seconds = 3;
  opt->key = 0;
  opt->init_noise = 0.01;
  opt->seed = 1;
}

const char* mpc_plantName(mpcPlant plant) {
  return plant == MPC_PLANT_NATIVE ? "native" : "smooth";
}

// splitmix64 in [0, 1)
static double uniform(unsigned long long* state) {
  unsigned long long z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return (double)(z >> 11) / 9007199254740992.0;
}

// control steps a run of opt->seconds takes (a few spare)
static int maxRecords(const mjModel* m, const mpcLoopOptions* opt) {
  double n = ceil(opt->seconds / (m->opt.timestep * opt->shift));
  return (int)fmin(n, 1e8) + 2;
}

mpcLoop* mpc_makeLoop(const mjModel* m, const mjdiffModel* s, const mjdiffTask* task,
                      mpcPlanner* planner, const mpcLoopOptions* opt, char* err, int errsz) {
  if (!m || !s || !task || !planner || !opt) {
    snprintf(err, (size_t)errsz, "closed loop: model, smooth model, task and planner are needed");
    return NULL;
  }
  if (!(opt->budget > 0) || opt->shift < 1 || !(opt->seconds > 0) || !(opt->init_noise >= 0)) {
    snprintf(err, (size_t)errsz, "closed loop: bad options (budget %g, shift %d, seconds %g)",
             opt->budget, opt->shift, opt->seconds);
    return NULL;
  }
  if (opt->key > 0 && opt->key >= m->nkey) {
    snprintf(err, (size_t)errsz, "keyframe %d does not exist (the model has %d)", opt->key,
             (int)m->nkey);
    return NULL;
  }
  mpcLoop* loop = calloc(1, sizeof(mpcLoop));
  if (!loop) {
    snprintf(err, (size_t)errsz, "out of memory");
    return NULL;
  }
  loop->m = m;
  loop->s = s;
  loop->task = task;
  loop->planner = planner;
  loop->opt = *opt;
  loop->maxrec = maxRecords(m, opt);
  loop->d = mj_makeData(m);
  loop->dc = mj_makeData(m);
  loop->ctrl = calloc((size_t)(m->nu > 0 ? m->nu : 1), sizeof(double));
  loop->rec = malloc(sizeof(mpcLoopRecord) * (size_t)loop->maxrec);
  if (!loop->d || !loop->dc || !loop->ctrl || !loop->rec) {
    snprintf(err, (size_t)errsz, "out of memory");
    mpc_freeLoop(loop);
    return NULL;
  }
  mpc_resetLoop(loop);
  return loop;
}

void mpc_freeLoop(mpcLoop* loop) {
  if (!loop) return;
  if (loop->d) mj_deleteData(loop->d);
  if (loop->dc) mj_deleteData(loop->dc);
  free(loop->ctrl);
  free(loop->rec);
  free(loop->y);
  free(loop->x);
  free(loop->pv);
  free(loop->log_t);
  free(loop->log_est);
  free(loop->log_true);
  free(loop);
}

// the copy: plant state, mjdiff_forward, cost and success at the current control
static int evaluate(mpcLoop* loop) {
  const mjModel* m = loop->m;
  mjData* d = loop->d;
  mjData* dc = loop->dc;
  dc->time = d->time;
  mju_copy(dc->qpos, d->qpos, m->nq);
  mju_copy(dc->qvel, d->qvel, m->nv);
  mju_copy(dc->act, d->act, m->na);
  mju_copy(dc->mocap_pos, d->mocap_pos, 3 * m->nmocap);
  mju_copy(dc->mocap_quat, d->mocap_quat, 4 * m->nmocap);
  mju_copy(dc->qfrc_applied, d->qfrc_applied, m->nv);
  mju_copy(dc->xfrc_applied, d->xfrc_applied, 6 * m->nbody);
  for (int i = 0; i < m->nu; i++) dc->ctrl[i] = loop->ctrl[i];
  char err[400];
  if (mjdiff_forward(m, dc, loop->s, err, sizeof(err)) != MJDIFF_OK) {
    snprintf(loop->err, sizeof(loop->err), "cost evaluation at t = %.4f s: %s", d->time, err);
    loop->failed = 1;
    return 0;
  }
  loop->cost = mjdiff_taskCost(loop->task, m, dc, 0, NULL, NULL);
  loop->success = mjdiff_taskSuccess(loop->task, m, dc);
  if (!isfinite(loop->cost)) {
    snprintf(loop->err, sizeof(loop->err), "cost at t = %.4f s is not finite", d->time);
    loop->failed = 1;
    return 0;
  }
  return 1;
}

// the planner's values of the oracle's parameters := the plant's
static void setOracle(mpcLoop* loop) {
  mjdiff_getParamValues(tool_plantModel(loop->plant), NULL, loop->oracle, loop->pv);
  mpc_plannerSetParamValues(loop->planner, loop->oracle, loop->pv, NULL, 0);
}

// one row of the adaptation log; dropped when out of memory
static void logAdapt(mpcLoop* loop) {
  int np = loop->nlogp;
  if (loop->nlog == loop->maxlog) {
    int cap = loop->maxlog ? 2 * loop->maxlog : 256;
    double* t = realloc(loop->log_t, sizeof(double) * (size_t)cap);
    if (t) loop->log_t = t;
    double* e = realloc(loop->log_est, sizeof(double) * (size_t)cap * (size_t)np);
    if (e) loop->log_est = e;
    double* v = realloc(loop->log_true, sizeof(double) * (size_t)cap * (size_t)np);
    if (v) loop->log_true = v;
    if (!t || !e || !v) return;
    loop->maxlog = cap;
  }
  int k = loop->nlog++;
  loop->log_t[k] = mpc_loopTime(loop);
  mju_copy(loop->log_est + (size_t)k * np, mpc_adaptValues(loop->adapt), np);
  mjdiff_getParamValues(tool_plantModel(loop->plant), NULL, mpc_adaptParams(loop->adapt),
                        loop->log_true + (size_t)k * np);
}

void mpc_resetLoop(mpcLoop* loop) {
  const mjModel* m = loop->m;
  mjData* d = loop->d;
  if (loop->opt.key >= 0 && loop->opt.key < m->nkey) {
    mj_resetDataKeyframe(m, d, loop->opt.key);
  } else {
    mj_resetData(m, d);
  }

  // qpos <- qpos (+) dq, dq uniform in [-a, a]^nv (quaternions stay unit)
  if (loop->opt.init_noise > 0 && m->nv > 0) {
    unsigned long long rng = loop->opt.seed;
    mjtNum* dq = calloc((size_t)m->nv, sizeof(mjtNum));
    if (dq) {
      for (int i = 0; i < m->nv; i++) dq[i] = loop->opt.init_noise * (2 * uniform(&rng) - 1);
      mj_integratePos(m, d->qpos, dq, 1);
      free(dq);
    }
  }
  for (int i = 0; i < m->nu; i++) loop->ctrl[i] = d->ctrl[i];
  mj_forward(m, d);
  loop->time0 = d->time;
  loop->nrec = 0;
  loop->pending = 0;
  loop->wall = 0;
  loop->failed = 0;
  loop->badplan = 0;
  loop->err[0] = 0;
  loop->nlog = 0;
  if (loop->plant) tool_plantReset(loop->plant, d);
  if (loop->adapt) {
    mpc_adaptReset(loop->adapt);
    mpc_plannerSetParamValues(loop->planner, mpc_adaptParams(loop->adapt),
                              mpc_adaptNominal(loop->adapt), NULL, 0);
  }
  if (loop->oracle) setOracle(loop);
  evaluate(loop);
}

void mpc_loopSetPlant(mpcLoop* loop, toolPlant* plant) {
  loop->plant = plant;
  mpc_resetLoop(loop);
}

// room for np values in loop->pv; 0 if out of memory
static int valueRoom(mpcLoop* loop, int np) {
  double* v = realloc(loop->pv, sizeof(double) * (size_t)(np > 0 ? np : 1));
  if (!v) return 0;
  loop->pv = v;
  return 1;
}

int mpc_loopSetAdapt(mpcLoop* loop, mpcAdapt* a, char* err, int errsz) {
  if (a && !loop->plant) {
    snprintf(err, (size_t)errsz, "adaptation needs a plant of its own (--plant native or FILE)");
    return 0;
  }
  if (a) {
    int ns = loop->m->nsensordata > 0 ? loop->m->nsensordata : 1;
    loop->y = realloc(loop->y, sizeof(double) * (size_t)ns);
    loop->x = realloc(loop->x, sizeof(double) * (size_t)mjdiff_stateSize(loop->m));
    if (!loop->y || !loop->x || !valueRoom(loop, mpc_adaptCount(a))) {
      snprintf(err, (size_t)errsz, "out of memory");
      return 0;
    }
    loop->nlogp = mpc_adaptCount(a);
  }
  loop->adapt = a;
  mpc_resetLoop(loop);
  return 1;
}

int mpc_loopSetOracle(mpcLoop* loop, const mjdiffParams* prm, char* err, int errsz) {
  if (prm && !loop->plant) {
    snprintf(err, (size_t)errsz, "the oracle needs a plant of its own (--plant native or FILE)");
    return 0;
  }
  if (prm && !valueRoom(loop, mjdiff_paramCount(prm))) {
    snprintf(err, (size_t)errsz, "out of memory");
    return 0;
  }
  loop->oracle = prm;
  mpc_resetLoop(loop);
  return 1;
}

double mpc_loopTime(const mpcLoop* loop) {
  return loop->d->time - loop->time0;
}

int mpc_loopStep(mpcLoop* loop) {
  if (loop->failed) return 0;
  const mjModel* m = loop->m;
  mjData* d = loop->d;
  double t0 = tool_now();

  // plan from the plant state
  double plan_cost = mpc_plan(loop->planner, d, loop->opt.budget, loop->pending, loop->ctrl);
  double t1 = tool_now();
  loop->pending = 0;

  // a planner whose cost is never finite plans nothing: fail after MAX_BADPLAN such steps in a row
  loop->badplan = isfinite(plan_cost) ? 0 : loop->badplan + 1;
  if (loop->badplan >= MAX_BADPLAN) {
    snprintf(loop->err, sizeof(loop->err),
             "the planner's cost was not finite at %d control steps in a row (to t = %.4f s): its "
             "rollouts diverge or its weights overflow (a smaller planning timestep, a shorter "
             "horizon or smaller weights?)",
             loop->badplan, d->time);
    loop->failed = 1;
    loop->wall += tool_now() - t0;
    return 0;
  }

  // cost and success at (x_k, u_k)
  if (!evaluate(loop)) {
    loop->wall += tool_now() - t0;
    return 0;
  }
  if (loop->nrec == loop->maxrec) {
    // a run past opt.seconds (the viewer): grow the records
    int grow = loop->maxrec < 1000000000 ? loop->maxrec : 0;
    mpcLoopRecord* rec = grow ? realloc(loop->rec, sizeof(mpcLoopRecord) *
                                                       ((size_t)loop->maxrec + (size_t)grow))
                              : NULL;
    if (rec) {
      loop->rec = rec;
      loop->maxrec += grow;
    }
  }
  if (loop->nrec < loop->maxrec) {
    mpcLoopRecord* r = loop->rec + loop->nrec++;
    r->time = d->time;
    r->cost = loop->cost;
    r->plan_cost = plan_cost;
    r->plan_s = t1 - t0;
    r->success = loop->success;
  }

  // act
  for (int i = 0; i < m->nu; i++) d->ctrl[i] = loop->ctrl[i];
  int fit = 0;
  for (int k = 0; k < loop->opt.shift; k++) {
    if (loop->plant && loop->opt.plant == MPC_PLANT_NATIVE) {
      char err[400];
      mjData* dp = tool_plantData(loop->plant);
      if (loop->adapt) {
        tool_plantSense(loop->plant, loop->y);
        mju_copy(loop->x, dp->qpos, m->nq);
        mju_copy(loop->x + m->nq, dp->qvel, m->nv);
        mju_copy(loop->x + m->nq + m->nv, dp->act, m->na);
        fit |= mpc_adaptPush(loop->adapt, dp->time, loop->x, loop->ctrl, loop->y);
      }
      if (!tool_plantStep(loop->plant, loop->ctrl, err, sizeof(err))) {
        snprintf(loop->err, sizeof(loop->err), "%s", err);
        loop->failed = 1;
        break;
      }
    } else if (loop->opt.plant == MPC_PLANT_SMOOTH) {
      char err[400];
      if (mjdiff_step(m, d, loop->s, err, sizeof(err)) != MJDIFF_OK) {
        snprintf(loop->err, sizeof(loop->err), "smooth plant at t = %.4f s: %s", d->time, err);
        loop->failed = 1;
        break;
      }
    } else {
      // mj_step resets the data when the accelerations blow up and raises a warning
      int bad = d->warning[mjWARN_BADQACC].number;
      double t = d->time;
      mj_step(m, d);
      if (d->warning[mjWARN_BADQACC].number != bad) {
        snprintf(loop->err, sizeof(loop->err), "native plant at t = %.4f s: bad accelerations",
                 t);
        loop->failed = 1;
        break;
      }
    }
    loop->pending++;
  }
  if (loop->plant && loop->opt.plant == MPC_PLANT_NATIVE) {
    // the plant's state is what the loop sees
    const mjData* dp = tool_plantData(loop->plant);
    d->time = dp->time;
    mju_copy(d->qpos, dp->qpos, m->nq);
    mju_copy(d->qvel, dp->qvel, m->nv);
    mju_copy(d->act, dp->act, m->na);
  }
  if (fit && !loop->failed) {
    char err[400];
    if (mpc_adaptUpdate(loop->adapt, err, sizeof(err))) {
      mpc_plannerSetParamValues(loop->planner, mpc_adaptParams(loop->adapt),
                                mpc_adaptValues(loop->adapt), NULL, 0);
    }
    logAdapt(loop);
  }
  if (loop->oracle && !loop->failed) setOracle(loop);

  // cost at the new state (the control is held)
  if (!loop->failed) evaluate(loop);
  loop->wall += tool_now() - t0;
  return !loop->failed;
}

int mpc_runLoop(mpcLoop* loop, double progress) {
  const mjModel* m = loop->m;
  double next = 0;
  double half = 0.5 * m->opt.timestep * loop->opt.shift;
  if (progress > 0) {
    fprintf(stderr, "%9s %13s %13s %9s %8s\n", "t_s", "cost", "plan_cost", "plan_ms", "success");
  }
  while (mpc_loopTime(loop) + half < loop->opt.seconds) {
    if (tool_interrupted()) return 0;
    if (!mpc_loopStep(loop)) return 0;
    if (progress > 0 && loop->nrec > 0 && mpc_loopTime(loop) + 1e-9 >= next) {
      const mpcLoopRecord* r = loop->rec + loop->nrec - 1;
      fprintf(stderr, "%9.3f %13.6g %13.6g %9.3f %8d\n", mpc_loopTime(loop), loop->cost,
              r->plan_cost, 1e3 * r->plan_s, loop->success);
      next += progress;
    }
  }
  if (loop->nrec > 0 && loop->badplan == loop->nrec) {
    snprintf(loop->err, sizeof(loop->err),
             "the planner's cost was not finite at any of the %d control steps", loop->nrec);
    loop->failed = 1;
    return 0;
  }
  return 1;
}

double mpc_loopRealtime(const mpcLoop* loop) {
  return loop->wall > 0 ? mpc_loopTime(loop) / loop->wall : 0;
}

double mpc_loopMeanPlan(const mpcLoop* loop) {
  double sum = 0;
  for (int k = 0; k < loop->nrec; k++) sum += loop->rec[k].plan_s;
  return loop->nrec ? sum / loop->nrec : 0;
}

double mpc_loopMaxPlan(const mpcLoop* loop) {
  double mx = 0;
  for (int k = 0; k < loop->nrec; k++) mx = fmax(mx, loop->rec[k].plan_s);
  return mx;
}

double mpc_loopMeanCost(const mpcLoop* loop) {
  double sum = 0;
  for (int k = 0; k < loop->nrec; k++) sum += loop->rec[k].cost;
  return loop->nrec ? sum / loop->nrec : loop->cost;
}

double mpc_loopMeanCostFrom(const mpcLoop* loop, double from) {
  double sum = 0;
  int n = 0;
  for (int k = 0; k < loop->nrec; k++) {
    if (loop->rec[k].time - loop->time0 + 1e-9 >= from) {
      sum += loop->rec[k].cost;
      n++;
    }
  }
  return n ? sum / n : NAN;
}

int mpc_loopSuccess(const mpcLoop* loop) {
  if (loop->failed || !loop->success) return 0;
  if (loop->nrec == 0) return loop->success;
  double t0 = loop->rec[0].time;
  double t1 = loop->d->time;
  double from = t1 - 0.25 * (t1 - t0);
  for (int k = 0; k < loop->nrec; k++) {
    if (loop->rec[k].time >= from && !loop->rec[k].success) return 0;
  }
  return 1;
}

double mpc_loopSuccessFraction(const mpcLoop* loop) {
  int n = 0;
  for (int k = 0; k < loop->nrec; k++) n += loop->rec[k].success;
  return loop->nrec ? (double)n / loop->nrec : 0;
}
