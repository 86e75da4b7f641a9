// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-bench-step: time of the step derivatives (VJP, JVP, full Jacobians) against one smooth
// step and against MuJoCo's finite-difference mjd_transitionFD, on the same models, in one run.
//
//   states: a short trajectory of the smooth step from the initial state (keyframe 0, else
//     qpos0) under pseudo-random controls (uniform in ctrlrange, new every 20 steps): W warm-up
//     steps, then one state every K steps, N states
//   ops: step = mjdiff_step, vjp = mjdiff_stepVJP, jvp = mjdiff_stepJVP,
//     jacobian = mjdiff_stepJacobian (A and B), fd_forward / fd_centered = mjd_transitionFD
//     (eps 1e-6, A and B) on the native model, i.e. differences of MuJoCo's own step
//   for round r = 0 .. R-1, ops in rotated order (op (r + j) mod 6 at position j):
//     t_op[r] = time of reps_op passes over the N states (load the state, call op) / (reps_op N)
//     reps_op: passes per round, set once so that a round of op lasts >= --min-time
//   us = median_r t_op[r];  ratios of medians

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mjdiff/mjdiff.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "toolutil.h"

#define TOOL "mjdiff-bench-step"
#define HUMANOID "/usr/share/mujoco/model/humanoid/humanoid.xml"
#define TARGET_VJP_RATIO 4.0   // VJP <= 4x step on every model
#define TARGET_FD_SPEEDUP 5.0  // analytic A, B >= 5x faster than forward FD on the humanoid

// bundled models, found in the model directory
static const char* const kBundled[] = {"cartpole.xml", "acrobot.xml", "hopper.xml",
                                       "cheetah.xml",  "arm_box.xml", "quadruped.xml"};
#define NBUNDLED ((int)(sizeof(kBundled) / sizeof(kBundled[0])))
static char kHumanoid[] = HUMANOID;

enum { OP_STEP = 0, OP_VJP, OP_JVP, OP_JAC, OP_FDF, OP_FDC, NOP };
static const char* kOpName[NOP] = {"step", "vjp", "jvp", "jacobian", "fd_forward", "fd_centered"};

typedef struct args_ {
  long rounds;
  long states;
  long stride;
  long warmup;
  long seed;
  double min_time;
  double fd_eps;
  int json;
  int implicit;  // --implicit: the implicit smooth step (mjdiff_integrator = 1)
  const char* out;
  int nmodel;
  char** model;  // nmodel paths
  int defaults;  // models are the default list
} args;

// results of one model
typedef struct result_ {
  const char* path;
  char name[64];
  int nv, nu, na, integrator;
  double timestep;
  int ok;            // model loaded and accepted
  char error[1024];  // why not
  int nstate;
  int rounds;      // rounds completed
  long reps[NOP];  // passes over the states per round
  double* t[NOP];  // per-round us per call (rounds)
  int* first;      // op that ran first in each round
  double us[NOP];  // medians
  double ncon_smooth, ncon_native;
  long fail[NOP];       // failed calls
  char op_error[1024];  // first failed call
  long warnings;
} result;

static void usage(void) {
  printf(
      "Usage: " TOOL
      " [options] [MODEL.xml ...]\n"
      "\n"
      "Time, per model and over the same states (a short trajectory of the smooth step), one\n"
      "smooth step (mjdiff_step), one VJP (mjdiff_stepVJP), one JVP (mjdiff_stepJVP), the full\n"
      "Jacobians A, B (mjdiff_stepJacobian) and MuJoCo's finite-difference A, B\n"
      "(mjd_transitionFD, forward and centered). The ops are interleaved in rounds (rotated\n"
      "order); each figure is the median over rounds, in microseconds per call.\n"
      "\n"
      "Note: mjd_transitionFD runs on the native model, i.e. it differences MuJoCo's own step\n"
      "(hard constraints, its solver), not the smooth step: it is MuJoCo's speed baseline for\n"
      "A, B, not the same function. With RK4 it differences an Euler-type step.\n"
      "\n"
      "Options:\n"
      "  --rounds R      rounds per model; the median is taken over them (default 5)\n"
      "  --states N      states on the trajectory (default 20)\n"
      "  --stride K      smooth steps between two states (default 10)\n"
      "  --warmup W      smooth steps before the first state (default 200)\n"
      "  --seed S        seed of the control sequence (default 1)\n"
      "  --min-time T    least time of one op in one round, in seconds (default 0.05)\n"
      "  --fd-eps E      step of mjd_transitionFD (default 1e-6)\n"
      "  --implicit      time the implicit smooth step (mjdiff_integrator = 1) and its\n"
      "                  derivatives instead of the explicit one\n"
      "  --json          print the results as JSON on stdout instead of the table\n"
      "  --out FILE      also write the results as JSON to FILE (default: none)\n"
      "  --help          print this help and exit\n"
      "\n"
      "Models (default: the bundled %s, found in $MJDIFF_MODEL_DIR,\n"
      "the installed share/mjdiff/models or the source tree's models/, then " HUMANOID
      ").\n"
      "Models without mjdiff_* numerics get the default smooth parameters.\n"
      "Targets (reported, not enforced): VJP at most %gx a smooth step on every model; analytic\n"
      "A, B at least %gx faster than forward-difference mjd_transitionFD on humanoid.xml.\n"
      "\n"
      "JSON: one object {tool, version, model (array of paths), args, status, metrics, series};\n"
      "metrics.per_model holds the table, series one entry per model and round.\n"
      "Exit status: 0 done, 1 runtime error (a model not loaded or rejected; the other models\n"
      "still run), 2 usage error, 130 interrupted (partial results written).\n",
      "cartpole, acrobot, hopper, cheetah, arm_box, quadruped", TARGET_VJP_RATIO,
      TARGET_FD_SPEEDUP);
}

//---------------------------------- arguments -----------------------------------------------------

static void parseArgs(int argc, char** argv, args* a) {
  a->rounds = 5;
  a->states = 20;
  a->stride = 10;
  a->warmup = 200;
  a->seed = 1;
  a->min_time = 0.05;
  a->fd_eps = 1e-6;
  a->json = 0;
  a->out = NULL;
  a->nmodel = 0;
  a->model = calloc((size_t)argc + NBUNDLED + 1, sizeof(char*));
  if (!a->model) tool_outOfMemory(TOOL);
  int positional = 0;
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (!positional && tool_isHelp(o)) {
      usage();
      exit(TOOL_EXIT_OK);
    } else if (!positional && !strcmp(o, "--rounds")) {
      a->rounds = tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in [1, 1000]");
    } else if (!positional && !strcmp(o, "--states")) {
      a->states = tool_intOption(TOOL, argc, argv, &i, 1, 100000, "an integer in [1, 1e5]");
    } else if (!positional && !strcmp(o, "--stride")) {
      a->stride = tool_intOption(TOOL, argc, argv, &i, 1, 1000000, "an integer in [1, 1e6]");
    } else if (!positional && !strcmp(o, "--warmup")) {
      a->warmup = tool_intOption(TOOL, argc, argv, &i, 0, 100000000, "an integer in [0, 1e8]");
    } else if (!positional && !strcmp(o, "--seed")) {
      a->seed = tool_intOption(TOOL, argc, argv, &i, 0, 2147483647L, "an integer in [0, 2^31 - 1]");
    } else if (!positional && !strcmp(o, "--min-time")) {
      a->min_time =
          tool_doubleOption(TOOL, argc, argv, &i, 0, 3600, 0, "a number of seconds in [0, 3600]");
    } else if (!positional && !strcmp(o, "--fd-eps")) {
      a->fd_eps = tool_doubleOption(TOOL, argc, argv, &i, 0, 1, TOOL_OPEN_LO, "a number in (0, 1]");
    } else if (!positional && !strcmp(o, "--json")) {
      a->json = 1;
    } else if (!positional && !strcmp(o, "--implicit")) {
      a->implicit = 1;
    } else if (!positional && !strcmp(o, "--out")) {
      a->out = tool_outputOption(TOOL, argc, argv, &i);
    } else if (!positional && !strcmp(o, "--")) {
      positional = 1;
    } else if (!positional && o[0] == '-' && o[1]) {
      tool_usageError(TOOL, "unknown option '%s'", o);
    } else {
      a->model[a->nmodel++] = argv[i];
    }
  }

  // default models
  if (a->nmodel == 0) {
    a->defaults = 1;
    tool_bundledModels(TOOL, kBundled, NBUNDLED, a->model, &a->nmodel);
    a->model[a->nmodel++] = kHumanoid;
  }
}

//---------------------------------- states --------------------------------------------------------

// one stored state: qpos (nq), qvel (nv), act (na), ctrl (nu), native qacc_warmstart (nv)
static int stateSize(const mjModel* m) {
  return m->nq + 2 * m->nv + m->na + m->nu;
}

static void getState(const mjModel* m, const mjData* d, mjtNum* x) {
  mju_copy(x, d->qpos, m->nq);
  mju_copy(x + m->nq, d->qvel, m->nv);
  mju_copy(x + m->nq + m->nv, d->act, m->na);
  mju_copy(x + m->nq + m->nv + m->na, d->ctrl, m->nu);
}

static void setState(const mjModel* m, mjData* d, const mjtNum* x, int warmstart) {
  mju_copy(d->qpos, x, m->nq);
  mju_copy(d->qvel, x + m->nq, m->nv);
  mju_copy(d->act, x + m->nq + m->nv, m->na);
  mju_copy(d->ctrl, x + m->nq + m->nv + m->na, m->nu);
  if (warmstart) mju_copy(d->qacc_warmstart, x + m->nq + m->nv + m->na + m->nu, m->nv);
  d->time = 0;
}

// the trajectory (nstate x stateSize); returns the smooth steps that failed (state reset)
static long makeStates(const args* a, const mjModel* m, const mjdiffModel* s, mjData* ds,
                       mjData* dn, mjtNum* X, double* ncon_s, double* ncon_n, char* err,
                       int errsz) {
  uint64_t rng = (uint64_t)a->seed;
  long fail = 0;
  int n = stateSize(m);
  *ncon_s = *ncon_n = 0;
  tool_resetState(m, ds);
  long nstep = a->warmup + a->states * a->stride;
  int k = 0;
  for (long i = 1; i <= nstep; i++) {
    if ((i - 1) % 20 == 0) tool_randomCtrl(m, ds->ctrl, &rng);
    if (mjdiff_step(m, ds, s, err, errsz) != MJDIFF_OK) {
      fail++;
      tool_resetState(m, ds);
    }
    if (i > a->warmup && (i - a->warmup) % a->stride == 0 && k < a->states) {
      mjtNum* x = X + (size_t)n * k++;
      getState(m, ds, x);
      mjdiff_forward(m, ds, s, err, errsz);  // contacts at the state
      *ncon_s += ds->ncon;

      // the native model's warm start at that state: its own forward accelerations
      setState(m, dn, x, 0);
      mju_zero(dn->qacc_warmstart, m->nv);
      mj_forward(m, dn);
      mju_copy(x + m->nq + m->nv + m->na + m->nu, dn->qacc, m->nv);
      *ncon_n += dn->ncon;
    }
  }
  *ncon_s /= a->states;
  *ncon_n /= a->states;
  return fail;
}

//---------------------------------- the ops -------------------------------------------------------

typedef struct opwork_ {
  const mjModel* m;
  const mjdiffModel* s;
  mjdiffStepDeriv* w;
  mjData* ds;       // smooth
  mjData* dn;       // native
  const mjtNum* X;  // states
  int nstate;
  double fd_eps;
  mjtNum *A, *B;  // Jacobians
  mjtNum *adj_next, *adj_x, *adj_ctrl;
  mjtNum *dx, *du, *dx_next;
  long* fail;  // per op
  char* err;   // first error
  int errsz;
} opwork;

// reps passes of op over the states; seconds, or -1 if interrupted
static double runOp(opwork* o, int op, long reps) {
  const mjModel* m = o->m;
  int n = stateSize(m);
  char err[512];
  double seconds = 0;
  for (long r = 0; r < reps; r++) {
    if (tool_interrupted()) return -1;
    double t0 = tool_now();
    for (int k = 0; k < o->nstate; k++) {
      const mjtNum* x = o->X + (size_t)n * k;
      mjdiffStatus st = MJDIFF_OK;
      switch (op) {
        case OP_STEP:
          setState(m, o->ds, x, 0);
          st = mjdiff_step(m, o->ds, o->s, err, sizeof(err));
          break;
        case OP_VJP:
          setState(m, o->ds, x, 0);
          st = mjdiff_stepVJP(m, o->ds, o->s, o->w, o->adj_next, o->adj_x, o->adj_ctrl, NULL, err,
                              sizeof(err));
          break;
        case OP_JVP:
          setState(m, o->ds, x, 0);
          st = mjdiff_stepJVP(m, o->ds, o->s, o->w, o->dx, o->du, NULL, o->dx_next, err,
                              sizeof(err));
          break;
        case OP_JAC:
          setState(m, o->ds, x, 0);
          st = mjdiff_stepJacobian(m, o->ds, o->s, o->w, o->A, o->B, NULL, err, sizeof(err));
          break;
        default: {
          // mjd_transitionFD advances d->time per evaluation: setState resets it. With RK4,
          // 2.2.2's differences an Euler-type step and 3.12's refuses (an mju_error): both are
          // given the Euler step explicitly
          mjModel mv = *m;
          if (mv.opt.integrator == mjINT_RK4) mv.opt.integrator = mjINT_EULER;
          setState(m, o->dn, x, 1);
          mjd_transitionFD(&mv, o->dn, o->fd_eps, op == OP_FDC, o->A, m->nu ? o->B : NULL, NULL,
                           NULL);
          break;
        }
      }
      if (st != MJDIFF_OK) {
        if (!o->err[0]) snprintf(o->err, (size_t)o->errsz, "%s: %s", kOpName[op], err);
        o->fail[op]++;
      }
    }
    seconds += tool_now() - t0;
  }
  return seconds;
}

// benchmark one model; 0 on a runtime error (res->error set)
static int benchModel(const args* a, result* res) {
  char err[1024] = "";
  tool_baseName(res->path, res->name, sizeof(res->name));
  mjModel* m = tool_loadModel(res->path, err, sizeof(err));
  if (!m) {
    snprintf(res->error, sizeof(res->error), "%s", err);
    return 0;
  }
  res->nv = m->nv;
  res->nu = m->nu;
  res->na = m->na;
  res->integrator = m->opt.integrator;
  res->timestep = m->opt.timestep;
  mjdiffModel* s = NULL;
  mjdiffStepDeriv* w = NULL;
  mjdiffStatus st = mjdiff_makeModel(m, NULL, &s, err, sizeof(err));
  if (st == MJDIFF_OK && a->implicit) {
    st = mjdiff_setParam(s, "integrator", MJDIFF_INT_IMPLICIT, err, sizeof(err));
  }
  if (st != MJDIFF_OK) {
    snprintf(res->error, sizeof(res->error), "%s: smooth model rejected: %s (%s)", res->path, err,
             mjdiff_statusName(st));
    mj_deleteModel(m);
    return 0;
  }
  st = mjdiff_makeStepDeriv(m, s, NULL, &w, err, sizeof(err));
  if (st != MJDIFF_OK) {
    snprintf(res->error, sizeof(res->error), "%s: step derivatives rejected: %s (%s)", res->path,
             err, mjdiff_statusName(st));
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return 0;
  }

  int nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na;
  size_t nX = (size_t)a->states * (size_t)stateSize(m);
  size_t nbuf = nX + (size_t)ndx * ndx + (size_t)ndx * nu + 4 * (size_t)ndx + 2 * (size_t)nu + 8;
  mjtNum* buf = calloc(nbuf, sizeof(mjtNum));
  mjData* ds = mj_makeData(m);
  mjData* dn = mj_makeData(m);
  res->first = calloc((size_t)a->rounds, sizeof(int));
  int okmem = buf && ds && dn && res->first;
  for (int op = 0; op < NOP; op++) {
    res->t[op] = calloc((size_t)a->rounds, sizeof(double));
    okmem = okmem && res->t[op];
  }
  if (!okmem) {
    snprintf(res->error, sizeof(res->error), "%s: out of memory", res->path);
    free(buf);
    if (ds) mj_deleteData(ds);
    if (dn) mj_deleteData(dn);
    mjdiff_freeStepDeriv(w);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return 0;
  }
  res->ok = 1;
  long warn0 = tool_warnings();

  opwork o;
  memset(&o, 0, sizeof(o));
  o.m = m;
  o.s = s;
  o.w = w;
  o.ds = ds;
  o.dn = dn;
  o.X = buf;
  o.nstate = (int)a->states;
  o.fd_eps = a->fd_eps;
  o.A = buf + nX;
  o.B = o.A + (size_t)ndx * ndx;
  o.adj_next = o.B + (size_t)ndx * nu + 1;
  o.adj_x = o.adj_next + ndx;
  o.dx = o.adj_x + ndx;
  o.dx_next = o.dx + ndx;
  o.adj_ctrl = o.dx_next + ndx;
  o.du = o.adj_ctrl + nu + 1;
  o.fail = res->fail;
  o.err = res->op_error;
  o.errsz = (int)sizeof(res->op_error);

  // the states and fixed random vectors
  long sfail =
      makeStates(a, m, s, ds, dn, buf, &res->ncon_smooth, &res->ncon_native, err, sizeof(err));
  if (sfail) {
    fprintf(stderr,
            TOOL ": %s: %ld failed smooth steps on the trajectory (state reset); last: %s\n",
            res->name, sfail, err);
  }
  res->nstate = (int)a->states;
  uint64_t rng = (uint64_t)a->seed + 1000;
  for (int i = 0; i < ndx; i++) {
    o.adj_next[i] = tool_uniform(&rng) - 0.5;
    o.dx[i] = tool_uniform(&rng) - 0.5;
  }
  for (int i = 0; i < nu; i++) o.du[i] = tool_uniform(&rng) - 0.5;

  // warm-up pass of each op, untimed by the rounds, sets the passes per round
  for (int op = 0; op < NOP && !tool_interrupted(); op++) {
    double t = runOp(&o, op, 1);
    res->reps[op] = t > 0 ? (long)ceil(a->min_time / t) : 1;
    if (res->reps[op] < 1) res->reps[op] = 1;
  }

  // rounds, rotating which op goes first
  for (int r = 0; r < a->rounds && !tool_interrupted(); r++) {
    double t[NOP];
    int done = 1;
    for (int j = 0; j < NOP && done; j++) {
      int op = (r + j) % NOP;
      double sec = runOp(&o, op, res->reps[op]);
      if (sec < 0) done = 0;
      t[op] = 1e6 * sec / ((double)res->reps[op] * (double)o.nstate);
    }
    if (!done) break;  // interrupted: the round is incomplete
    for (int op = 0; op < NOP; op++) res->t[op][r] = t[op];
    res->first[r] = r % NOP;
    res->rounds = r + 1;
    fprintf(stderr,
            "%-10s round %3d/%-3ld  step %9.2f  vjp %9.2f  jvp %9.2f  jac %9.2f  fd %10.2f  "
            "fd-c %10.2f us\n",
            res->name, r + 1, a->rounds, t[OP_STEP], t[OP_VJP], t[OP_JVP], t[OP_JAC], t[OP_FDF],
            t[OP_FDC]);
  }
  for (int op = 0; op < NOP; op++) res->us[op] = tool_median(res->t[op], res->rounds);
  res->warnings = tool_warnings() - warn0;
  long nfail = 0;
  for (int op = 0; op < NOP; op++) nfail += res->fail[op];
  if (nfail) {
    fprintf(stderr, TOOL ": %s: %ld failed calls; first: %s\n", res->name, nfail, res->op_error);
  }
  if (res->warnings) {
    fprintf(stderr, TOOL ": %s: %ld MuJoCo warnings\n", res->name, res->warnings);
  }

  free(buf);
  mj_deleteData(ds);
  mj_deleteData(dn);
  mjdiff_freeStepDeriv(w);
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return 1;
}

//---------------------------------- output --------------------------------------------------------

static int isHumanoid(const result* r) {
  return !strcmp(r->name, "humanoid");
}

static double ratio(const result* r, int num, int den) {
  return r->us[num] / r->us[den];
}

static int vjpMet(const result* r) {
  return ratio(r, OP_VJP, OP_STEP) <= TARGET_VJP_RATIO;
}

static int fdMet(const result* r) {
  return ratio(r, OP_FDF, OP_JAC) >= TARGET_FD_SPEEDUP;
}

static void printTable(FILE* f, const result* res, int n) {
  fprintf(f, "times (us per call, median over rounds; same states per model)\n");
  fprintf(f, "%-10s %4s %4s %3s %-6s %6s %6s %10s %10s %10s %10s %11s %11s\n", "model", "nv", "nu",
          "na", "integr", "ncon_s", "ncon_n", "step", "vjp", "jvp", "jacobian", "fd_fwd*",
          "fd_cent*");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!r->ok || r->rounds == 0) continue;
    fprintf(f, "%-10s %4d %4d %3d %-6s %6.1f %6.1f %10.2f %10.2f %10.2f %10.2f %11.2f %11.2f\n",
            r->name, r->nv, r->nu, r->na, tool_integratorName(r->integrator), r->ncon_smooth,
            r->ncon_native, r->us[OP_STEP], r->us[OP_VJP], r->us[OP_JVP], r->us[OP_JAC],
            r->us[OP_FDF], r->us[OP_FDC]);
  }
  fprintf(f, "\nratios%52s\n", "targets (reported, not enforced)");
  fprintf(f, "%-10s %9s %9s %9s %12s %12s   %-16s %s\n", "model", "vjp/step", "jvp/step",
          "jac/step", "fd_fwd/jac", "fd_cent/jac", "vjp <= 4x step",
          "jac >= 5x faster than fd_fwd");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!r->ok || r->rounds == 0) continue;
    fprintf(f, "%-10s %9.2f %9.2f %9.2f %12.2f %12.2f   %-16s %s\n", r->name,
            ratio(r, OP_VJP, OP_STEP), ratio(r, OP_JVP, OP_STEP), ratio(r, OP_JAC, OP_STEP),
            ratio(r, OP_FDF, OP_JAC), ratio(r, OP_FDC, OP_JAC), vjpMet(r) ? "ok" : "MISSED",
            isHumanoid(r) ? (fdMet(r) ? "ok" : "MISSED") : "-");
  }
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    long nfail = 0;
    for (int op = 0; op < NOP; op++) nfail += r->fail[op];
    if (r->ok && nfail)
      fprintf(f, "%-10s failed calls: %ld (first: %s)\n", r->name, nfail, r->op_error);
    if (!r->ok) fprintf(f, "%-10s not benchmarked: %s\n", r->name, r->error);
  }
  fprintf(
      f,
      "\nncon_s / ncon_n: mean contacts at the states, smooth model (within the activation\n"
      "distance) / native model.\n"
      "* fd_fwd, fd_cent: MuJoCo's mjd_transitionFD (eps as set, A and B) on the native model:\n"
      "  it differences MuJoCo's own step (hard constraints, its solver), not the smooth step,\n"
      "  so it is a speed baseline, not the same function (with RK4 it differences an\n"
      "  Euler-type step).\n");
}

static void printJson(FILE* f, const args* a, const result* res, int n, const char* status) {
  tool_jsonHead(f, TOOL, a->model, a->nmodel);
  fprintf(f,
          ",\"args\":{\"rounds\":%ld,\"states\":%ld,\"stride\":%ld,\"warmup\":%ld,\"seed\":%ld,"
          "\"min_time_s\":%g,\"fd_eps\":%g,\"default_models\":%s,\"implicit\":%s,"
          "\"mujoco_version\":%d},",
          a->rounds, a->states, a->stride, a->warmup, a->seed, a->min_time, a->fd_eps,
          a->defaults ? "true" : "false", a->implicit ? "true" : "false", mj_version());
  fprintf(f, "\"status\":");
  tool_jsonString(f, status);

  // metrics
  int vjpAll = 1, fdHum = -1, any = 0;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!r->ok || r->rounds == 0) continue;
    any = 1;
    vjpAll &= vjpMet(r);
    if (isHumanoid(r)) fdHum = fdMet(r);
  }
  fprintf(f,
          ",\"metrics\":{\"note\":\"fd_forward and fd_centered are MuJoCo's mjd_transitionFD on "
          "the native model: they difference MuJoCo's native step, not the smooth step\","
          "\"targets\":{\"vjp_max_step_ratio\":%g,\"humanoid_min_fd_forward_speedup\":%g,"
          "\"vjp_met_on_every_model\":%s,\"humanoid_fd_speedup_met\":%s},\"per_model\":[",
          TARGET_VJP_RATIO, TARGET_FD_SPEEDUP, any ? (vjpAll ? "true" : "false") : "null",
          fdHum < 0 ? "null"
          : fdHum   ? "true"
                    : "false");
  int first = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    tool_jsonModelHead(f, &first, r->path, r->name);
    if (!r->ok) {
      fprintf(f, ",\"error\":");
      tool_jsonString(f, r->error);
      fputc('}', f);
      continue;
    }
    fprintf(f,
            ",\"nv\":%d,\"nu\":%d,\"na\":%d,\"integrator\":\"%s\",\"timestep_s\":%g,"
            "\"states\":%d,\"rounds\":%d,\"smooth_mean_ncon\":",
            r->nv, r->nu, r->na, tool_integratorName(r->integrator), r->timestep, r->nstate,
            r->rounds);
    tool_jsonNumber(f, r->ncon_smooth);
    fprintf(f, ",\"native_mean_ncon\":");
    tool_jsonNumber(f, r->ncon_native);
    fprintf(f, ",\"reps\":");
    tool_jsonCounts(f, kOpName, r->reps, NOP);
    fprintf(f, ",\"us_per_call\":");
    tool_jsonNumbers(f, kOpName, r->us, NOP);
    fprintf(f, ",\"ratios\":{\"vjp_step\":");
    tool_jsonNumber(f, ratio(r, OP_VJP, OP_STEP));
    fprintf(f, ",\"jvp_step\":");
    tool_jsonNumber(f, ratio(r, OP_JVP, OP_STEP));
    fprintf(f, ",\"jacobian_step\":");
    tool_jsonNumber(f, ratio(r, OP_JAC, OP_STEP));
    fprintf(f, ",\"fd_forward_jacobian\":");
    tool_jsonNumber(f, ratio(r, OP_FDF, OP_JAC));
    fprintf(f, ",\"fd_centered_jacobian\":");
    tool_jsonNumber(f, ratio(r, OP_FDC, OP_JAC));
    fprintf(f, "},\"failed_calls\":");
    tool_jsonCounts(f, kOpName, r->fail, NOP);
    fprintf(f, ",\"first_error\":");
    tool_jsonString(f, r->op_error);
    fprintf(f, ",\"mujoco_warnings\":%ld,\"targets\":{\"vjp_met\":", r->warnings);
    if (r->rounds) {
      fprintf(f, "%s", vjpMet(r) ? "true" : "false");
    } else {
      fprintf(f, "null");
    }
    fprintf(f, ",\"fd_speedup_met\":");
    if (isHumanoid(r) && r->rounds) {
      fprintf(f, "%s", fdMet(r) ? "true" : "false");
    } else {
      fprintf(f, "null");
    }
    fprintf(f, "}}");
  }
  fprintf(f, "]},\"series\":[");

  // series: one entry per model and round
  first = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    for (int k = 0; k < r->rounds; k++) {
      tool_jsonRoundHead(f, &first, r->name, k, kOpName[r->first[k]]);
      double t[NOP];
      for (int op = 0; op < NOP; op++) t[op] = r->t[op][k];
      fprintf(f, ",\"us_per_call\":");
      tool_jsonNumbers(f, kOpName, t, NOP);
      fputc('}', f);
    }
  }
  fprintf(f, "]}\n");
}

//---------------------------------- main ----------------------------------------------------------

int main(int argc, char** argv) {
  args a;
  memset(&a, 0, sizeof(a));
  parseArgs(argc, argv, &a);
  tool_catchInterrupt();
  tool_catchWarnings(TOOL);

  result* res = calloc((size_t)a.nmodel, sizeof(result));
  if (!res) tool_outOfMemory(TOOL);
  int n = 0, ok = 1;
  for (int i = 0; i < a.nmodel && !tool_interrupted(); i++) {
    res[n].path = a.model[i];
    fprintf(stderr, TOOL ": %s: %ld rounds over %ld states\n", a.model[i], a.rounds, a.states);
    if (!benchModel(&a, res + n)) {
      fprintf(stderr, TOOL ": error: %s\n", res[n].error);
      ok = 0;
    }
    n++;
  }
  int interrupted = tool_interrupted();
  const char* status = tool_runStatus(interrupted, ok);

  if (a.json) {
    printJson(stdout, &a, res, n, status);
  } else if (n > 0) {
    printTable(stdout, res, n);
  }
  if (a.out) {
    FILE* f = tool_openOut(TOOL, a.out);
    if (f) printJson(f, &a, res, n, status);
    if (!tool_closeOut(TOOL, a.out, f)) ok = 0;
  }

  for (int i = 0; i < n; i++) {
    for (int op = 0; op < NOP; op++) free(res[i].t[op]);
    free(res[i].first);
  }
  free(res);
  tool_freeModels(a.model, a.nmodel, a.defaults, kHumanoid);
  return tool_exitCode(interrupted, ok);
}
