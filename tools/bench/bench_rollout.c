// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-bench-rollout: time of a whole rollout's gradient (mjdiff_rolloutForward + loss +
// mjdiff_rolloutBackward) against the rollout alone and against finite differences of whole
// rollouts, and the memory of the rollout recording, on the same models, in one run.
//
//   x_0: keyframe 0, else qpos0, zero velocity, time 0
//   u_t,i = lo + (hi - lo) (0.5 + 0.4 sin(0.05 t + phase_i)), phase_i from --seed (smooth)
//   L = sum_{t=0}^{T} |x_t (-) x_ref|^2 / 2 + w_u sum_{t<T} |u_t|^2 / 2,
//       x_ref = (qpos of x_0, zero velocity and activation), (-) the tangent difference, w_u = 1e-3
//   gradient g = (dL/dp (np), dL/du (T nu), dL/dx_0 (2nv+na)): N = np + T nu + 2nv + na components
//   ops: rollout = T mjdiff_step calls from x_0;
//        gradient = mjdiff_rolloutForward (every state stored) + L and its gradients +
//                   mjdiff_rolloutBackward (grad_x0, grad_ctrl, grad_param);
//        fd = one forward-difference rollout and L, z + h e_c, for K random components c
//             (h = 1e-6, times max(1, |p_c|) for a parameter)
//   for round r = 0 .. R-1, ops in rotated order (op (r + j) mod 3 at position j):
//     t_op[r] = time of reps_op passes / reps_op (fd: also / K, the time of one component)
//     reps_op: passes per round, set once so that a round of op lasts >= --min-time
//   ms = median_r t_op[r];  ratio = gradient / rollout
//   fd_total = (N + 1) ms_fd: extrapolated from the K timed components to all N (+ the base)
//   speedup = fd_total / gradient
//   check (untimed): the K sampled components against centered differences of whole rollouts,
//     Richardson-extrapolated over (h, 2h), the better of h = 1e-6, 1e-8; relative differences
//     |fd - g| / (max(|fd|, |g|) + 1e-6 |g|_inf), worst over the sample (also for the timed
//     forward differences)
//   memory: mjdiff_rolloutMemory of rollouts of T = 1000, 10000 made with checkpoint 1 and 0
//     (made, not run); one T = 10000 run with checkpoint 0 (and 1, to compare) on cartpole

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "benchutil.h"
#include "toolutil.h"

#define TOOL "mjdiff-bench-rollout"
#define HUMANOID "/usr/share/mujoco/model/humanoid/humanoid.xml"
#define TARGET_GRAD_RATIO 5.0   // rollout + gradient <= 5x the rollout on every model
#define TARGET_FD_SPEEDUP 10.0  // >= 10x faster than finite differences on the humanoid
#define TARGET_NPARAM 20        // with >= 20 model parameters on the humanoid
#define FD_EPS 1e-6
// steps of the centered differences of the check: the stiffest rollouts (humanoid) need the
// small one, rounding limits the others
static const double kCheckEps[2] = {1e-6, 1e-8};
#define W_CTRL 1e-3
#define LONG_T 10000

// bundled models, found in the model directory
static const char* const kBundled[] = {"cartpole.xml", "hopper.xml", "cheetah.xml",
                                       "arm_box.xml", "quadruped.xml"};
#define NBUNDLED ((int)(sizeof(kBundled) / sizeof(kBundled[0])))
static char kHumanoid[] = HUMANOID;

// parameter patterns tried on every model; those that fail are skipped
static const char* kPattern[] = {"body:*:mass", "joint:*:damping", "geom:*:friction"};
#define NPATTERN ((int)(sizeof(kPattern) / sizeof(kPattern[0])))

// horizons of the memory table
static const int kMemT[2] = {1000, 10000};

enum { OP_ROLL = 0, OP_GRAD, OP_FD, NOP };
static const char* kOpName[NOP] = {"rollout", "gradient", "fd_component"};

typedef struct args_ {
  long horizon;
  long rounds;
  long fd_sample;
  long seed;
  double min_time;
  int json;
  const char* out;
  int nmodel;
  char** model;  // nmodel paths
  int defaults;  // models are the default list
} args;

// the T = 10000 checkpointed run
typedef struct longrun_ {
  int done;  // 1: ran (see error)
  char name[64];
  int horizon;
  double sqrt_s, all_s;      // forward + loss + backward, checkpoint 0 / 1
  size_t mem_sqrt, mem_all;  // mjdiff_rolloutMemory
  int stride;                // ceil(sqrt(T))
  int equal;                 // gradients bit for bit equal
  double gnorm;              // |g|
  char error[512];
} longrun;

// results of one model
typedef struct result_ {
  const char* path;
  char name[64];
  int nq, nv, nu, na, np, horizon;
  int ok;                       // model loaded and accepted
  char error[1024];             // why not
  int use[NPATTERN];            // patterns used
  char skipped[NPATTERN][256];  // why a pattern was skipped ("" if used)
  long ncomp;                   // gradient components
  int nsample;                  // components timed by finite differences
  int contact_steps;            // steps of the rollout with contacts
  int rounds;                   // rounds completed
  long reps[NOP];               // passes per round
  double* t[NOP];               // per-round ms per call (rounds)
  int* first;                   // op that ran first in each round
  double ms[NOP];               // medians
  double loss, gnorm_x0, gnorm_ctrl, gnorm_param;
  double fd_worst;     // worst relative difference of the timed forward differences
  double check_worst;  // ... of the check (centered, extrapolated differences)
  size_t mem[2][2];    // [T index][0: store all, 1: sqrt(T)], bytes
  long fail[NOP];
  char op_error[512];
  long warnings;
} result;

static void usage(void) {
  printf(
      "Usage: " TOOL
      " [options] [MODEL.xml ...]\n"
      "\n"
      "Time, per model, a rollout of T smooth steps (mjdiff_step) from the initial state\n"
      "(keyframe 0, else qpos0) under smooth deterministic controls, and the same rollout with\n"
      "the gradient of a quadratic state/control loss with respect to the start state, every\n"
      "control and model parameters (mjdiff_rolloutForward + mjdiff_rolloutBackward). Compare\n"
      "with finite differences of whole rollouts (one forward-difference rollout per gradient\n"
      "component: parameters, T x nu controls, 2nv+na start-state coordinates): K random\n"
      "components are timed and the cost is extrapolated to all of them. The ops are\n"
      "interleaved in rounds (rotated order); each figure is the median over rounds.\n"
      "Also report mjdiff_rolloutMemory for T = 1000 and 10000 with checkpoint 1 (every state)\n"
      "and 0 (every ceil(sqrt(T))-th state), one T = %d checkpointed forward + backward run on\n"
      "cartpole (else the first model), and the process's peak RSS.\n"
      "\n"
      "Options:\n"
      "  --horizon T     steps per rollout (default 200)\n"
      "  --rounds R      rounds per model; the median is taken over them (default 3)\n"
      "  --fd-sample K   finite-difference components timed per round (default 50)\n"
      "  --seed S        seed of the control phases and of the sample (default 1)\n"
      "  --min-time T    least time of one op in one round, in seconds (default 0.05)\n"
      "  --json          print the results as JSON on stdout instead of the table\n"
      "  --out FILE      also write the results as JSON to FILE (default: none)\n"
      "  --help          print this help and exit\n"
      "\n"
      "Models (default: the bundled %s, found in $MJDIFF_MODEL_DIR,\n"
      "the installed share/mjdiff/models or the source tree's models/, then " HUMANOID
      ").\n"
      "Parameters: the patterns %s, %s and %s, each where it exists and\n"
      "is differentiable in that model. Their current values are written back once at setup, so\n"
      "every timed rollout runs on the same model (general body path).\n"
      "Targets (reported, not enforced): rollout + gradient at most %gx the rollout on every\n"
      "model; at least %gx faster than finite differences on humanoid.xml, with >= %d parameters.\n"
      "\n"
      "JSON: one object {tool, version, model (array of paths), args, status, metrics, series};\n"
      "metrics.per_model holds the table, series one entry per model and round.\n"
      "Exit status: 0 done, 1 runtime error (a model not loaded, rejected or its rollout failed;\n"
      "the other models still run), 2 usage error, 130 interrupted (partial results written).\n",
      LONG_T, "cartpole, hopper, cheetah, arm_box, quadruped", kPattern[0], kPattern[1],
      kPattern[2], TARGET_GRAD_RATIO, TARGET_FD_SPEEDUP, TARGET_NPARAM);
}

//---------------------------------- arguments -----------------------------------------------------

static void parseArgs(int argc, char** argv, args* a) {
  a->horizon = 200;
  a->rounds = 3;
  a->fd_sample = 50;
  a->seed = 1;
  a->min_time = 0.05;
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
    } else if (!positional && !strcmp(o, "--horizon")) {
      a->horizon = tool_intOption(TOOL, argc, argv, &i, 1, 1000000, "an integer in [1, 1e6]");
    } else if (!positional && !strcmp(o, "--rounds")) {
      a->rounds = tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in [1, 1000]");
    } else if (!positional && !strcmp(o, "--fd-sample")) {
      a->fd_sample = tool_intOption(TOOL, argc, argv, &i, 1, 1000000, "an integer in [1, 1e6]");
    } else if (!positional && !strcmp(o, "--seed")) {
      a->seed = tool_intOption(TOOL, argc, argv, &i, 0, 2147483647L, "an integer in [0, 2^31 - 1]");
    } else if (!positional && !strcmp(o, "--min-time")) {
      a->min_time =
          tool_doubleOption(TOOL, argc, argv, &i, 0, 3600, 0, "a number of seconds in [0, 3600]");
    } else if (!positional && !strcmp(o, "--json")) {
      a->json = 1;
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

//---------------------------------- the problem ---------------------------------------------------

// one model's rollout problem and its buffers
typedef struct work_ {
  mjModel* m;
  mjdiffModel* s;
  const mjdiffParams* p;
  mjdiffRollout* r;
  mjData* d;
  int T, nu, ndx, nxs, np;
  mjtNum* x0;      // start state (nxs)
  mjtNum* xref;    // loss reference (nxs)
  mjtNum* ctrl;    // (T x nu)
  mjtNum* states;  // ((T+1) x nxs)
  mjtNum* dLdx;    // ((T+1) x ndx)
  mjtNum* dLdu;    // (T x nu)
  mjtNum* gx0;     // (ndx)
  mjtNum* gctrl;   // (T x nu)
  mjtNum* gparam;  // (np)
  mjtNum* pval;    // parameter values (np)
  mjtNum* dx;      // start-state perturbation (ndx)
  mjtNum* diff;    // (ndx)
  long ncomp;      // np + T nu + ndx
  long* sample;    // components timed by finite differences
  int nsample;
  long* fail;  // per op
  char* err;   // first error
  int errsz;
} work;

static void freeWork(work* w) {
  mjdiff_freeRollout(w->r);
  if (w->d) mj_deleteData(w->d);
  free(w->x0);
  free(w->sample);
  memset(w, 0, sizeof(*w));
}

// buffers, start state, controls and the rollout (checkpoint ckpt); 0 with err on failure
static int makeWork(work* w, mjModel* m, mjdiffModel* s, const mjdiffParams* p, int T, int ckpt,
                    uint64_t seed, char* err, int errsz) {
  memset(w, 0, sizeof(*w));
  w->m = m;
  w->s = s;
  w->p = p;
  w->T = T;
  w->nu = m->nu;
  w->ndx = 2 * m->nv + m->na;
  w->nxs = m->nq + m->nv + m->na;
  w->np = mjdiff_paramCount(p);
  w->ncomp = (long)w->np + (long)T * w->nu + w->ndx;
  size_t n = 2 * (size_t)w->nxs + (size_t)T * w->nu + (size_t)(T + 1) * w->nxs +
             (size_t)(T + 1) * w->ndx + (size_t)T * w->nu + (size_t)w->ndx + (size_t)T * w->nu +
             2 * (size_t)w->np + 2 * (size_t)w->ndx + 8;
  w->x0 = calloc(n, sizeof(mjtNum));
  w->d = mj_makeData(m);
  if (!w->x0 || !w->d) {
    snprintf(err, (size_t)errsz, "out of memory for a rollout of %d steps", T);
    freeWork(w);
    return 0;
  }
  w->xref = w->x0 + w->nxs;
  w->ctrl = w->xref + w->nxs;
  w->states = w->ctrl + (size_t)T * w->nu;
  w->dLdx = w->states + (size_t)(T + 1) * w->nxs;
  w->dLdu = w->dLdx + (size_t)(T + 1) * w->ndx;
  w->gx0 = w->dLdu + (size_t)T * w->nu;
  w->gctrl = w->gx0 + w->ndx;
  w->gparam = w->gctrl + (size_t)T * w->nu;
  w->pval = w->gparam + w->np;
  w->dx = w->pval + w->np;
  w->diff = w->dx + w->ndx;

  mjdiffRolloutOptions opt;
  mjdiff_defaultRolloutOptions(&opt);
  opt.checkpoint = ckpt;
  char msg[512] = "";
  mjdiffStatus st = mjdiff_makeRollout(m, s, p, T, &opt, &w->r, msg, sizeof(msg));
  if (st != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "mjdiff_makeRollout (T = %d): %s (%s)", T, msg,
             mjdiff_statusName(st));
    freeWork(w);
    return 0;
  }

  // start state: keyframe 0, else qpos0; loss reference: its qpos at rest
  mjData* d = w->d;
  tool_resetState(m, d);
  mju_copy(w->x0, d->qpos, m->nq);
  mju_copy(w->x0 + m->nq, d->qvel, m->nv);
  mju_copy(w->x0 + m->nq + m->nv, d->act, m->na);
  mju_copy(w->xref, d->qpos, m->nq);
  tool_smoothCtrl(m, T, seed, w->ctrl);
  mjdiff_getParamValues(m, s, p, w->pval);
  return 1;
}

// d at x_0 (+) dx (dx nullable), time 0
static void setStart(const work* w, const mjtNum* dx) {
  const mjModel* m = w->m;
  mjData* d = w->d;
  mju_copy(d->qpos, w->x0, m->nq);
  mju_copy(d->qvel, w->x0 + m->nq, m->nv);
  mju_copy(d->act, w->x0 + m->nq + m->nv, m->na);
  d->time = 0;
  if (dx) {
    mj_integratePos(m, d->qpos, dx, 1);
    for (int i = 0; i < m->nv; i++) d->qvel[i] += dx[m->nv + i];
    for (int i = 0; i < m->na; i++) d->act[i] += dx[2 * m->nv + i];
  }
}

// state loss |x (-) x_ref|^2 / 2 of x = (qpos, qvel, act); its gradient to g (nullable)
static double stateLoss(const work* w, const mjtNum* qpos, const mjtNum* qvel, const mjtNum* act,
                        mjtNum* g) {
  const mjModel* m = w->m;
  int nv = m->nv, na = m->na;
  mjtNum* diff = w->diff;
  mj_differentiatePos(m, diff, 1, w->xref, qpos);
  for (int i = 0; i < nv; i++) diff[nv + i] = qvel[i];
  for (int i = 0; i < na; i++) diff[2 * nv + i] = act[i];
  double L = 0;
  for (int i = 0; i < w->ndx; i++) L += 0.5 * diff[i] * diff[i];
  // for ball/free rotations the gradient of |log(ref^-1 x)|^2 / 2 in the local perturbation is
  // diff itself (the rotation axis is an eigenvector of the Jacobian)
  if (g) mju_copy(g, diff, w->ndx);
  return L;
}

static double ctrlLoss(const work* w, const mjtNum* ctrl, mjtNum* g) {
  double L = 0;
  for (long k = 0; k < (long)w->T * w->nu; k++) {
    L += 0.5 * W_CTRL * ctrl[k] * ctrl[k];
    if (g) g[k] = W_CTRL * ctrl[k];
  }
  return L;
}

static void recordError(work* w, int op, const char* msg) {
  if (!w->err[0]) snprintf(w->err, (size_t)w->errsz, "%s: %s", kOpName[op], msg);
  w->fail[op]++;
}

// T smooth steps from d's state with w->ctrl; counts steps with contacts (nullable); 0 on failure
static int plainRollout(work* w, int op, int* ncontact) {
  const mjModel* m = w->m;
  mjData* d = w->d;
  char err[512];
  for (int t = 0; t < w->T; t++) {
    mju_copy(d->ctrl, w->ctrl + (size_t)w->nu * t, w->nu);
    if (mjdiff_step(m, d, w->s, err, sizeof(err)) != MJDIFF_OK) {
      char msg[600];
      snprintf(msg, sizeof(msg), "step %d: %s", t, err);
      recordError(w, op, msg);
      return 0;
    }
    if (ncontact) *ncontact += d->ncon > 0;
  }
  return 1;
}

// loss of the rollout from d's state with w->ctrl; NaN on failure
static double rolloutLoss(work* w) {
  const mjModel* m = w->m;
  mjData* d = w->d;
  char err[512];
  double L = ctrlLoss(w, w->ctrl, NULL);
  for (int t = 0; t < w->T; t++) {
    L += stateLoss(w, d->qpos, d->qvel, d->act, NULL);
    mju_copy(d->ctrl, w->ctrl + (size_t)w->nu * t, w->nu);
    if (mjdiff_step(m, d, w->s, err, sizeof(err)) != MJDIFF_OK) {
      char msg[600];
      snprintf(msg, sizeof(msg), "step %d: %s", t, err);
      recordError(w, OP_FD, msg);
      return NAN;
    }
  }
  return L + stateLoss(w, d->qpos, d->qvel, d->act, NULL);
}

// forward rollout, loss and its gradients, backward sweep; the loss, NaN on failure
static double gradient(work* w, int op) {
  const mjModel* m = w->m;
  char err[512];
  setStart(w, NULL);
  mjdiffStatus st = mjdiff_rolloutForward(m, w->d, w->s, w->r, w->ctrl, NULL, NULL, w->states, NULL,
                                          err, sizeof(err));
  if (st != MJDIFF_OK) {
    recordError(w, op, err);
    return NAN;
  }
  double L = ctrlLoss(w, w->ctrl, w->dLdu);
  for (int t = 0; t <= w->T; t++) {
    const mjtNum* x = w->states + (size_t)w->nxs * t;
    L += stateLoss(w, x, x + m->nq, x + m->nq + m->nv, w->dLdx + (size_t)w->ndx * t);
  }
  st = mjdiff_rolloutBackward(m, w->d, w->s, w->r, w->dLdx, w->dLdu, NULL, w->gx0, w->gctrl, NULL,
                              w->np ? w->gparam : NULL, err, sizeof(err));
  if (st != MJDIFF_OK) {
    recordError(w, op, err);
    return NAN;
  }
  return L;
}

// finite-difference step eps of component c (relative for a parameter)
static double fdStep(const work* w, long c, double eps) {
  if (c < w->np) return eps * fmax(1, fabs(w->pval[c]));
  return eps;
}

// our gradient's component c
static double ourComponent(const work* w, long c) {
  if (c < w->np) return w->gparam[c];
  c -= w->np;
  if (c < (long)w->T * w->nu) return w->gctrl[c];
  return w->gx0[c - (long)w->T * w->nu];
}

// the loss of a rollout with component c perturbed by h; NaN on failure
static double fdComponent(work* w, long c, double h) {
  double L;
  if (c < w->np) {
    // a model parameter: set, roll out, restore
    char err[512];
    mjtNum v = w->pval[c];
    w->pval[c] = v + h;
    mjdiffStatus st = mjdiff_setParamValues(w->m, w->s, w->p, w->pval, err, sizeof(err));
    w->pval[c] = v;
    if (st != MJDIFF_OK) {
      recordError(w, OP_FD, err);
      return NAN;
    }
    setStart(w, NULL);
    L = rolloutLoss(w);
    st = mjdiff_setParamValues(w->m, w->s, w->p, w->pval, err, sizeof(err));
    if (st != MJDIFF_OK) recordError(w, OP_FD, err);
  } else if (c < w->np + (long)w->T * w->nu) {
    // a control
    mjtNum* u = w->ctrl + (c - w->np);
    mjtNum v = *u;
    *u = v + h;
    setStart(w, NULL);
    L = rolloutLoss(w);
    *u = v;
  } else {
    // a start-state coordinate
    long j = c - w->np - (long)w->T * w->nu;
    mju_zero(w->dx, w->ndx);
    w->dx[j] = h;
    setStart(w, w->dx);
    L = rolloutLoss(w);
  }
  return L;
}

// the derivative of the loss in component c by centered differences, Richardson-extrapolated over
// (h, 2h): error O(h^4); a parameter at 0 (damping) by one-sided second-order differences
static double checkComponent(work* w, long c, double L0, double eps) {
  double h = fdStep(w, c, eps);
  if (c < w->np && w->pval[c] < 2 * h) {
    return (-3 * L0 + 4 * fdComponent(w, c, h) - fdComponent(w, c, 2 * h)) / (2 * h);
  }
  double g1 = (fdComponent(w, c, h) - fdComponent(w, c, -h)) / (2 * h);
  double g2 = (fdComponent(w, c, 2 * h) - fdComponent(w, c, -2 * h)) / (4 * h);
  return (4 * g1 - g2) / 3;
}

// relative difference of a finite difference fd from our g; gmax: |our gradient|_inf
static double relDiff(double fd, double g, double gmax) {
  return fabs(fd - g) / (fmax(fabs(fd), fabs(g)) + 1e-6 * gmax + 1e-300);
}

// reps passes of op; seconds, or -1 if interrupted
static double runOp(work* w, int op, long reps) {
  double seconds = 0;
  for (long k = 0; k < reps; k++) {
    if (tool_interrupted()) return -1;
    double t0 = tool_now();
    switch (op) {
      case OP_ROLL:
        setStart(w, NULL);
        plainRollout(w, op, NULL);
        break;
      case OP_GRAD:
        gradient(w, op);
        break;
      default:
        for (int i = 0; i < w->nsample; i++) {
          if (tool_interrupted()) return -1;
          fdComponent(w, w->sample[i], fdStep(w, w->sample[i], FD_EPS));
        }
        break;
    }
    seconds += tool_now() - t0;
  }
  return seconds;
}

//---------------------------------- parameters ----------------------------------------------------

// the patterns of kPattern that exist in m and are differentiable; NULL selection if none
static int selectParams(mjModel* m, mjdiffModel* s, result* res, mjdiffParams** out, char* err,
                        int errsz) {
  const char* names[NPATTERN];
  int n = 0;
  *out = NULL;
  for (int k = 0; k < NPATTERN; k++) {
    names[n] = kPattern[k];
    mjdiffParams* p = NULL;
    mjdiffStepDeriv* w = NULL;
    char msg[512] = "";
    mjdiffStatus st = mjdiff_makeParams(m, s, names, n + 1, &p, msg, sizeof(msg));
    if (st == MJDIFF_OK) st = mjdiff_makeStepDeriv(m, s, p, &w, msg, sizeof(msg));
    mjdiff_freeStepDeriv(w);
    mjdiff_freeParams(p);
    if (st == MJDIFF_OK) {
      res->use[k] = 1;
      n++;
    } else {
      snprintf(res->skipped[k], sizeof(res->skipped[k]), "%s (%s)", msg, mjdiff_statusName(st));
      fprintf(stderr, TOOL ": %s: parameters %s skipped: %s\n", res->name, kPattern[k],
              res->skipped[k]);
    }
  }
  if (n == 0) return 1;
  mjdiffStatus st = mjdiff_makeParams(m, s, names, n, out, err, errsz);
  if (st != MJDIFF_OK) return 0;

  // write the current values back: setting a value drops MuJoCo's compile-time body shortcuts, so
  // every timed rollout (finite differences set values) runs the same code path
  int np = mjdiff_paramCount(*out);
  mjtNum* v = malloc(sizeof(mjtNum) * (size_t)(np + 1));
  if (!v) {
    snprintf(err, (size_t)errsz, "out of memory");
    return 0;
  }
  mjdiff_getParamValues(m, s, *out, v);
  st = mjdiff_setParamValues(m, s, *out, v, err, errsz);
  free(v);
  return st == MJDIFF_OK;
}

//---------------------------------- one model -----------------------------------------------------

// the T = 10000 forward + backward run with sqrt(T) checkpointing, and with every state stored
static void longRun(const args* a, mjModel* m, mjdiffModel* s, const mjdiffParams* p,
                    const char* name, longrun* lr) {
  lr->done = 1;
  lr->horizon = LONG_T;
  lr->stride = (int)ceil(sqrt((double)LONG_T));
  snprintf(lr->name, sizeof(lr->name), "%s", name);
  long fail[NOP] = {0};
  char err[512] = "";
  work w[2];
  // w[0]: checkpoint 0 (every ceil(sqrt(T)) steps), w[1]: every state stored
  if (!makeWork(w, m, s, p, LONG_T, 0, (uint64_t)a->seed, lr->error, (int)sizeof(lr->error))) {
    return;
  }
  if (!makeWork(w + 1, m, s, p, LONG_T, 1, (uint64_t)a->seed, lr->error, (int)sizeof(lr->error))) {
    freeWork(w);
    return;
  }
  int ok = 1;
  for (int k = 0; k < 2 && ok; k++) {
    w[k].fail = fail;
    w[k].err = err;
    w[k].errsz = (int)sizeof(err);
    if (tool_interrupted()) {
      snprintf(lr->error, sizeof(lr->error), "interrupted");
      ok = 0;
      break;
    }
    double t0 = tool_now();
    double L = gradient(w + k, OP_GRAD);
    double sec = tool_now() - t0;
    if (!isfinite(L)) {
      snprintf(lr->error, sizeof(lr->error), "%s", err);
      ok = 0;
    }
    *(k ? &lr->all_s : &lr->sqrt_s) = sec;
    *(k ? &lr->mem_all : &lr->mem_sqrt) = mjdiff_rolloutMemory(w[k].r);
  }
  if (!ok) {
    freeWork(w);
    freeWork(w + 1);
    return;
  }
  size_t ng = (size_t)w[0].ndx + (size_t)LONG_T * w[0].nu + (size_t)w[0].np;
  lr->equal = !memcmp(w[0].gx0, w[1].gx0, sizeof(mjtNum) * ng);  // gx0, gctrl, gparam adjacent
  double g2 = 0;
  for (size_t i = 0; i < ng; i++) g2 += w[0].gx0[i] * w[0].gx0[i];
  lr->gnorm = sqrt(g2);
  freeWork(w);
  freeWork(w + 1);
}

// benchmark one model; 0 on a runtime error (res->error set)
static int benchModel(const args* a, result* res, int dolong, longrun* lr) {
  char err[1024] = "";
  tool_baseName(res->path, res->name, sizeof(res->name));
  res->horizon = (int)a->horizon;
  mjModel* m = tool_loadModel(res->path, err, sizeof(err));
  if (!m) {
    snprintf(res->error, sizeof(res->error), "%s", err);
    return 0;
  }
  res->nq = m->nq;
  res->nv = m->nv;
  res->nu = m->nu;
  res->na = m->na;
  mjdiffModel* s = NULL;
  mjdiffParams* p = NULL;
  mjdiffStatus st = mjdiff_makeModel(m, NULL, &s, err, sizeof(err));
  if (st != MJDIFF_OK) {
    snprintf(res->error, sizeof(res->error), "%s: smooth model rejected: %s (%s)", res->path, err,
             mjdiff_statusName(st));
    mj_deleteModel(m);
    return 0;
  }
  if (!selectParams(m, s, res, &p, err, sizeof(err))) {
    snprintf(res->error, sizeof(res->error), "%s: parameters: %s", res->path, err);
    mjdiff_freeParams(p);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return 0;
  }
  res->np = mjdiff_paramCount(p);

  work w;
  if (!makeWork(&w, m, s, p, (int)a->horizon, 1, (uint64_t)a->seed, err, sizeof(err))) {
    snprintf(res->error, sizeof(res->error), "%s: %s", res->path, err);
    mjdiff_freeParams(p);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return 0;
  }
  w.fail = res->fail;
  w.err = res->op_error;
  w.errsz = (int)sizeof(res->op_error);
  res->ncomp = w.ncomp;
  res->first = calloc((size_t)a->rounds, sizeof(int));
  int okmem = res->first != NULL;
  for (int op = 0; op < NOP; op++) {
    res->t[op] = calloc((size_t)a->rounds, sizeof(double));
    okmem = okmem && res->t[op];
  }

  // the finite-difference sample: K distinct components (partial Fisher-Yates)
  w.nsample = (int)(a->fd_sample < w.ncomp ? a->fd_sample : w.ncomp);
  long* perm = okmem ? malloc(sizeof(long) * (size_t)w.ncomp) : NULL;
  w.sample = perm ? malloc(sizeof(long) * (size_t)(w.nsample + 1)) : NULL;
  if (!w.sample) {
    snprintf(res->error, sizeof(res->error), "%s: out of memory", res->path);
    free(perm);
    freeWork(&w);
    mjdiff_freeParams(p);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return 0;
  }
  uint64_t rng = (uint64_t)a->seed + 1000;
  for (long i = 0; i < w.ncomp; i++) perm[i] = i;
  for (int i = 0; i < w.nsample; i++) {
    long j = i + (long)(tool_random64(&rng) % (uint64_t)(w.ncomp - i));
    long tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
    w.sample[i] = perm[i];
  }
  free(perm);
  res->nsample = w.nsample;
  long warn0 = tool_warnings();

  // reference rollout: contacts, loss, our gradient and the sampled finite differences (untimed)
  setStart(&w, NULL);
  int okroll = plainRollout(&w, OP_ROLL, &res->contact_steps);
  res->loss = okroll ? gradient(&w, OP_GRAD) : NAN;
  if (!isfinite(res->loss)) {
    snprintf(res->error, sizeof(res->error), "%s: the rollout failed: %s", res->path,
             res->op_error);
  } else {
    res->ok = 1;
    res->gnorm_x0 = mju_norm(w.gx0, w.ndx);
    res->gnorm_ctrl = mju_norm(w.gctrl, w.T * w.nu);
    res->gnorm_param = w.np ? mju_norm(w.gparam, w.np) : 0;
    double gmax = 0;
    for (long c = 0; c < w.ncomp; c++) gmax = fmax(gmax, fabs(ourComponent(&w, c)));
    setStart(&w, NULL);
    double L0 = rolloutLoss(&w);
    res->fd_worst = res->check_worst = 0;
    for (int i = 0; i < w.nsample && !tool_interrupted(); i++) {
      long c = w.sample[i];
      double g = ourComponent(&w, c);
      double h = fdStep(&w, c, FD_EPS);
      double fd = (fdComponent(&w, c, h) - L0) / h;
      double rel = relDiff(fd, g, gmax);
      if (!(rel <= res->fd_worst)) res->fd_worst = rel;  // NaN propagates
      // the check: the better of centered differences at two steps
      double relc = relDiff(checkComponent(&w, c, L0, kCheckEps[0]), g, gmax);
      relc = fmin(relc, relDiff(checkComponent(&w, c, L0, kCheckEps[1]), g, gmax));
      if (!(relc <= res->check_worst)) res->check_worst = relc;
    }
  }

  // warm-up pass of each op, untimed by the rounds, sets the passes per round
  for (int op = 0; op < NOP && res->ok && !tool_interrupted(); op++) {
    double t = runOp(&w, op, 1);
    res->reps[op] = t > 0 ? (long)ceil(a->min_time / t) : 1;
    if (res->reps[op] < 1) res->reps[op] = 1;
  }

  // rounds, rotating which op goes first
  for (int r = 0; r < a->rounds && res->ok && !tool_interrupted(); r++) {
    double t[NOP];
    int done = 1;
    for (int j = 0; j < NOP && done; j++) {
      int op = (r + j) % NOP;
      double sec = runOp(&w, op, res->reps[op]);
      if (sec < 0) done = 0;
      t[op] = 1e3 * sec / (double)res->reps[op];
      if (op == OP_FD) t[op] /= w.nsample;
    }
    if (!done) break;  // interrupted: the round is incomplete
    for (int op = 0; op < NOP; op++) res->t[op][r] = t[op];
    res->first[r] = r % NOP;
    res->rounds = r + 1;
    fprintf(stderr, "%-10s round %3d/%-3ld  rollout %9.3f  gradient %9.3f  fd/component %9.3f ms\n",
            res->name, r + 1, a->rounds, t[OP_ROLL], t[OP_GRAD], t[OP_FD]);
  }
  for (int op = 0; op < NOP; op++) res->ms[op] = tool_median(res->t[op], res->rounds);

  // memory of the recording (made, not run)
  for (int i = 0; i < 2 && res->ok && !tool_interrupted(); i++) {
    for (int k = 0; k < 2; k++) {
      mjdiffRolloutOptions opt;
      mjdiff_defaultRolloutOptions(&opt);
      opt.checkpoint = k ? 0 : 1;
      mjdiffRollout* r = NULL;
      char msg[512];
      if (mjdiff_makeRollout(m, s, p, kMemT[i], &opt, &r, msg, sizeof(msg)) == MJDIFF_OK) {
        res->mem[i][k] = mjdiff_rolloutMemory(r);
      } else {
        fprintf(stderr, TOOL ": %s: rollout of T = %d not made: %s\n", res->name, kMemT[i], msg);
      }
      mjdiff_freeRollout(r);
    }
  }
  if (dolong && res->ok && !tool_interrupted()) {
    fprintf(stderr, TOOL ": %s: T = %d forward + backward with checkpoint 0 and 1\n", res->name,
            LONG_T);
    longRun(a, m, s, p, res->name, lr);
    if (lr->error[0]) fprintf(stderr, TOOL ": %s: long run: %s\n", res->name, lr->error);
  }

  res->warnings = tool_warnings() - warn0;
  long nfail = 0;
  for (int op = 0; op < NOP; op++) nfail += res->fail[op];
  if (nfail) {
    fprintf(stderr, TOOL ": %s: %ld failed calls; first: %s\n", res->name, nfail, res->op_error);
  }
  if (res->warnings) {
    fprintf(stderr, TOOL ": %s: %ld MuJoCo warnings\n", res->name, res->warnings);
  }

  freeWork(&w);
  mjdiff_freeParams(p);
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return res->ok;
}

//---------------------------------- output --------------------------------------------------------

static int isHumanoid(const result* r) {
  return !strcmp(r->name, "humanoid");
}

static int timed(const result* r) {
  return r->ok && r->rounds > 0;
}

static double gradRatio(const result* r) {
  return r->ms[OP_GRAD] / r->ms[OP_ROLL];
}

// extrapolated finite-difference time of the whole gradient, ms: N perturbed rollouts + the base
static double fdTotal(const result* r) {
  return r->ms[OP_FD] * (double)(r->ncomp + 1);
}

static double fdSpeedup(const result* r) {
  return fdTotal(r) / r->ms[OP_GRAD];
}

static int ratioMet(const result* r) {
  return gradRatio(r) <= TARGET_GRAD_RATIO;
}

static int speedupMet(const result* r) {
  return fdSpeedup(r) >= TARGET_FD_SPEEDUP && r->np >= TARGET_NPARAM;
}

static long peakRssKiB(void) {
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  return u.ru_maxrss;  // KiB on Linux
}

static void printTable(FILE* f, const args* a, const result* res, int n, const longrun* lr,
                       long rss) {
  fprintf(f,
          "rollout and its gradient, T = %ld steps (ms per call, median over rounds)\n"
          "%-10s %4s %4s %4s %8s %10s %10s %9s   %s\n",
          a->horizon, "model", "nv", "nu", "np", "contact", "rollout", "gradient", "grad/roll",
          "grad <= 5x rollout");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!timed(r)) continue;
    fprintf(f, "%-10s %4d %4d %4d %4d/%-3d %10.3f %10.3f %9.2f   %s\n", r->name, r->nv, r->nu,
            r->np, r->contact_steps, r->horizon, r->ms[OP_ROLL], r->ms[OP_GRAD], gradRatio(r),
            ratioMet(r) ? "ok" : "MISSED");
  }

  fprintf(f,
          "\nfinite differences of whole rollouts (forward, h = %g): K random components timed,\n"
          "EXTRAPOLATED to all N components + the base rollout\n"
          "%-10s %7s %5s %10s %12s %10s %9s %9s %9s   %s\n",
          FD_EPS, "model", "N", "K", "ms/comp", "fd_total_s*", "ours_ms", "speedup", "fd_err",
          "check", "humanoid >= 10x, np >= 20");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!timed(r)) continue;
    fprintf(f, "%-10s %7ld %5d %10.3f %12.2f %10.3f %9.1f %9.2g %9.2g   %s\n", r->name, r->ncomp,
            r->nsample, r->ms[OP_FD], 1e-3 * fdTotal(r), r->ms[OP_GRAD], fdSpeedup(r), r->fd_worst,
            r->check_worst, isHumanoid(r) ? (speedupMet(r) ? "ok" : "MISSED") : "-");
  }

  fprintf(f, "\nrecording memory, mjdiff_rolloutMemory (KiB; rollouts made, not run)\n");
  fprintf(f, "%-10s %13s %13s %13s %13s\n", "model", "T=1000 all", "T=1000 sqrt", "T=10000 all",
          "T=10000 sqrt");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!r->ok) continue;
    fprintf(f, "%-10s %13.1f %13.1f %13.1f %13.1f\n", r->name, r->mem[0][0] / 1024.0,
            r->mem[0][1] / 1024.0, r->mem[1][0] / 1024.0, r->mem[1][1] / 1024.0);
  }

  fprintf(f, "\nparameters (grad_param)\n");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!r->ok) continue;
    fprintf(f, "%-10s %4d:", r->name, r->np);
    int any = 0;
    for (int k = 0; k < NPATTERN; k++) {
      if (r->use[k]) fprintf(f, "%s %s", any++ ? "," : "", kPattern[k]);
    }
    for (int k = 0; k < NPATTERN; k++) {
      if (!r->use[k]) fprintf(f, "%s skipped %s", any++ ? "," : "", kPattern[k]);
    }
    fputc('\n', f);
  }

  if (lr->done) {
    fprintf(f, "\nlong rollout: %s, T = %d, forward + loss + backward\n", lr->name, lr->horizon);
    if (lr->error[0]) {
      fprintf(f, "  failed: %s\n", lr->error);
    } else {
      fprintf(f,
              "  checkpoint 0 (every %d steps): %8.3f s, recording %9.1f KiB\n"
              "  checkpoint 1 (every state):    %8.3f s, recording %9.1f KiB\n"
              "  gradients bit for bit equal: %s; |gradient| = %.4g\n",
              lr->stride, lr->sqrt_s, lr->mem_sqrt / 1024.0, lr->all_s, lr->mem_all / 1024.0,
              lr->equal ? "yes" : "NO", lr->gnorm);
    }
  }
  fprintf(f, "\npeak RSS of the process (getrusage ru_maxrss): %.1f MiB\n", rss / 1024.0);

  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    long nfail = r->fail[OP_ROLL] + r->fail[OP_GRAD] + r->fail[OP_FD];
    if (r->ok && nfail)
      fprintf(f, "%-10s failed calls: %ld (first: %s)\n", r->name, nfail, r->op_error);
    if (!r->ok) fprintf(f, "%-10s not benchmarked: %s\n", r->name, r->error);
  }
  fprintf(f,
          "\ncontact: steps of the rollout with contacts. rollout: T mjdiff_step calls. gradient:\n"
          "mjdiff_rolloutForward + the loss and its gradients + mjdiff_rolloutBackward (grad_x0,\n"
          "grad_ctrl, grad_param). N = np + T nu + 2nv + na gradient components; ms/comp: one\n"
          "perturbed rollout with its loss. * fd_total_s = (N + 1) ms/comp, extrapolated from the\n"
          "K timed components. fd_err: worst relative difference of those K forward differences\n"
          "from our gradient (their O(h) error: what the user gets for the time). check: the same\n"
          "for centered differences, Richardson-extrapolated over (h, 2h), the better of\n"
          "h = 1e-6 and 1e-8 per component (untimed).\n");
}

static void jsonBool(FILE* f, int known, int value) {
  fprintf(f, "%s", !known ? "null" : value ? "true" : "false");
}

static void printJson(FILE* f, const args* a, const result* res, int n, const longrun* lr, long rss,
                      const char* status) {
  tool_jsonHead(f, TOOL, a->model, a->nmodel);
  fprintf(f,
          ",\"args\":{\"horizon\":%ld,\"rounds\":%ld,\"fd_sample\":%ld,\"seed\":%ld,"
          "\"min_time_s\":%g,\"fd_eps\":%g,\"ctrl_weight\":%g,\"default_models\":%s,"
          "\"mujoco_version\":%d},",
          a->horizon, a->rounds, a->fd_sample, a->seed, a->min_time, FD_EPS, W_CTRL,
          a->defaults ? "true" : "false", mj_version());
  fprintf(f, "\"status\":");
  tool_jsonString(f, status);

  // metrics
  int ratioAll = 1, hum = -1, any = 0;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (!timed(r)) continue;
    any = 1;
    ratioAll &= ratioMet(r);
    if (isHumanoid(r)) hum = speedupMet(r);
  }
  fprintf(f,
          ",\"metrics\":{\"note\":\"fd_total_ms is extrapolated: (components + 1) x the median "
          "time of one forward-difference rollout, timed on fd_sampled random components\","
          "\"targets\":{\"gradient_max_rollout_ratio\":%g,\"humanoid_min_fd_speedup\":%g,"
          "\"humanoid_min_params\":%d,\"gradient_ratio_met_on_every_model\":",
          TARGET_GRAD_RATIO, TARGET_FD_SPEEDUP, TARGET_NPARAM);
  jsonBool(f, any, ratioAll);
  fprintf(f, ",\"humanoid_fd_speedup_met\":");
  jsonBool(f, hum >= 0, hum > 0);
  fprintf(f, "},\"peak_rss_kib\":%ld,\"long_run\":", rss);
  if (!lr->done) {
    fprintf(f, "null");
  } else {
    fprintf(f, "{\"model\":");
    tool_jsonString(f, lr->name);
    fprintf(f, ",\"horizon\":%d,\"error\":", lr->horizon);
    tool_jsonString(f, lr->error);
    if (!lr->error[0]) {
      fprintf(f,
              ",\"checkpoint_sqrt\":{\"stride\":%d,\"seconds\":%.6g,\"memory_bytes\":%zu},"
              "\"checkpoint_all\":{\"seconds\":%.6g,\"memory_bytes\":%zu},"
              "\"bitwise_equal\":%s,\"gradient_norm\":",
              lr->stride, lr->sqrt_s, lr->mem_sqrt, lr->all_s, lr->mem_all,
              lr->equal ? "true" : "false");
      tool_jsonNumber(f, lr->gnorm);
    }
    fputc('}', f);
  }
  fprintf(f, ",\"per_model\":[");
  int firstModel = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    tool_jsonModelHead(f, &firstModel, r->path, r->name);
    if (!r->ok) {
      fprintf(f, ",\"error\":");
      tool_jsonString(f, r->error);
      fputc('}', f);
      continue;
    }
    fprintf(f,
            ",\"nq\":%d,\"nv\":%d,\"nu\":%d,\"na\":%d,\"horizon\":%d,\"rounds\":%d,"
            "\"contact_steps\":%d,\"params\":{\"count\":%d,\"patterns\":[",
            r->nq, r->nv, r->nu, r->na, r->horizon, r->rounds, r->contact_steps, r->np);
    int first = 1;
    for (int k = 0; k < NPATTERN; k++) {
      if (!r->use[k]) continue;
      if (!first) fputc(',', f);
      first = 0;
      tool_jsonString(f, kPattern[k]);
    }
    fprintf(f, "],\"skipped\":{");
    first = 1;
    for (int k = 0; k < NPATTERN; k++) {
      if (r->use[k]) continue;
      if (!first) fputc(',', f);
      first = 0;
      tool_jsonString(f, kPattern[k]);
      fputc(':', f);
      tool_jsonString(f, r->skipped[k]);
    }
    fprintf(f, "}},\"reps\":");
    tool_jsonCounts(f, kOpName, r->reps, NOP);
    fprintf(f, ",\"ms_per_call\":");
    tool_jsonNumbers(f, kOpName, r->ms, NOP);
    fprintf(f, ",\"gradient_rollout_ratio\":");
    tool_jsonNumber(f, gradRatio(r));
    fprintf(f, ",\"fd\":{\"components\":%ld,\"sampled\":%d,\"extrapolated_total_ms\":", r->ncomp,
            r->nsample);
    tool_jsonNumber(f, fdTotal(r));
    fprintf(f, ",\"speedup\":");
    tool_jsonNumber(f, fdSpeedup(r));
    fprintf(f, ",\"forward_worst_rel_diff\":");
    tool_jsonNumber(f, r->fd_worst);
    fprintf(f, ",\"check_worst_rel_diff\":");
    tool_jsonNumber(f, r->check_worst);
    fprintf(f, "},\"memory_bytes\":{");
    for (int k = 0; k < 2; k++) {
      fprintf(f, "%s\"T%d\":{\"checkpoint_all\":%zu,\"checkpoint_sqrt\":%zu}", k ? "," : "",
              kMemT[k], r->mem[k][0], r->mem[k][1]);
    }
    fprintf(f, "},\"loss\":");
    tool_jsonNumber(f, r->loss);
    fprintf(f, ",\"gradient_norm\":{\"x0\":");
    tool_jsonNumber(f, r->gnorm_x0);
    fprintf(f, ",\"ctrl\":");
    tool_jsonNumber(f, r->gnorm_ctrl);
    fprintf(f, ",\"param\":");
    tool_jsonNumber(f, r->gnorm_param);
    fprintf(f, "},\"failed_calls\":");
    tool_jsonCounts(f, kOpName, r->fail, NOP);
    fprintf(f, ",\"first_error\":");
    tool_jsonString(f, r->op_error);
    fprintf(f, ",\"mujoco_warnings\":%ld,\"targets\":{\"gradient_ratio_met\":", r->warnings);
    jsonBool(f, r->rounds > 0, ratioMet(r));
    fprintf(f, ",\"fd_speedup_met\":");
    jsonBool(f, isHumanoid(r) && r->rounds > 0, speedupMet(r));
    fprintf(f, "}}");
  }
  fprintf(f, "]},\"series\":[");

  // series: one entry per model and round
  int first = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    for (int k = 0; k < r->rounds; k++) {
      tool_jsonRoundHead(f, &first, r->name, k, kOpName[r->first[k]]);
      double t[NOP];
      for (int op = 0; op < NOP; op++) t[op] = r->t[op][k];
      fprintf(f, ",\"ms_per_call\":");
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

  // the long run goes to cartpole, else to the first model
  int longModel = 0;
  for (int i = 0; i < a.nmodel; i++) {
    char name[64];
    tool_baseName(a.model[i], name, sizeof(name));
    if (!strcmp(name, "cartpole")) {
      longModel = i;
      break;
    }
  }
  longrun lr;
  memset(&lr, 0, sizeof(lr));

  int n = 0, ok = 1;
  for (int i = 0; i < a.nmodel && !tool_interrupted(); i++) {
    res[n].path = a.model[i];
    fprintf(stderr, TOOL ": %s: %ld rounds, T = %ld, %ld finite-difference components\n",
            a.model[i], a.rounds, a.horizon, a.fd_sample);
    if (!benchModel(&a, res + n, i == longModel, &lr)) {
      fprintf(stderr, TOOL ": error: %s\n", res[n].error);
      ok = 0;
    }
    n++;
  }
  if (lr.done && lr.error[0] && strcmp(lr.error, "interrupted")) ok = 0;
  int interrupted = tool_interrupted();
  const char* status = tool_runStatus(interrupted, ok);
  long rss = peakRssKiB();

  if (a.json) {
    printJson(stdout, &a, res, n, &lr, rss, status);
  } else if (n > 0) {
    printTable(stdout, &a, res, n, &lr, rss);
  }
  if (a.out) {
    FILE* f = tool_openOut(TOOL, a.out);
    if (f) printJson(f, &a, res, n, &lr, rss, status);
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
