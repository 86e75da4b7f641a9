// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-design: optimise geometry (and other) parameters of an MJCF model for a task.
//
// Objective of a design p and open-loop controls u_0..u_{T-1} (T = duration / timestep):
//   J(p, u) = sum_{t<T} l(x_t, u_t) + l_T(x_T)   (the task file's cost, tasks/task.h)
//             - w_d (qpos_j(x_T) - qpos_j(x_0))  (--distance JOINT[:W]: reward progress)
// from the model's initial state (keyframe 0, else qpos0). Gradients: the rollout adjoint in the
// selected parameters (grad_param; geometry parameters: adjoint/design_d.c) and in the controls,
// plus the cost's direct dependence on the parameters at fixed states (a task term on a site that
// a parameter moves: the rollout adjoint differentiates the states only), by centred differences
// of each step's cost on a model copy (directCost).
//
// Variables. Ties (--tie A=B: B takes A's value) merge parameters into one variable; variable k is
// scaled, y_k = x_k / s_k with s_k = max(|x_k(0)|, 0.05), so one learning rate fits lengths,
// scales and masses; controls (--codesign) enter unscaled. Bounds (--bounds NAME=LO:HI, default
// [0.2 v, 5 v] for sizes and scales, none else; controls: their ctrlrange) are kept by projection
// after each step: projected Adam, x <- P(x - lr d). With --method nm: Nelder-Mead on the same
// variables (design, and controls with --codesign), vertices projected onto the bounds: the
// baseline, without gradients. With --method cmaes: CMA-ES (optim/cmaes.c) on the same variables,
// bounds and objective as Nelder-Mead (samples projected onto the bounds, a failed rollout +inf),
// from the initial values with step --sigma on the scaled variables; one iteration is one
// generation of lambda = 4 + floor(3 ln n) rollouts, ended early by --target or --max-rollouts;
// the run ends when CMA-ES's own stop criteria hold (tol_x, tol_fun, stalled).
// --target J stops any method once J <= target (rollout counts to a common value; Nelder-Mead and
// CMA-ES: the rollout of the first value <= J for CMA-ES, the end of its iteration for NM).
//
// Outputs (PREFIX from --out, default "design"): PREFIX.xml the MJCF text with only the changed
// attribute values rewritten (pos, size, fromto of the affected elements), checked by recompiling
// it (worst relative difference in masses, inertia tensors, com and positions in the report);
// PREFIX.json the report; PREFIX.csv the history (iteration, rollouts, seconds, J, |g|, values);
// PREFIX.png the objective plot (gnuplot, if installed); PREFIX_ctrl.txt the controls (T rows;
// with --targets one block of T rows per target, blank lines between).
// The outputs are written for the best design found also when the run stops early; the JSON's
// "status" says why ("done", "interrupted", "failed: ..."). Exit codes: 0 done, 1 a failed run
// (the objective or its gradient could not be evaluated) or a runtime error, 2 usage, 130
// interrupted (Ctrl-C).

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/learn.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/nn.h>
#include <mjdiff/optim.h>
#include <mjdiff/params.h>
#include <mjdiff/rollout.h>
#include <mjdiff/task.h>

#include "policyargs.h"
#include "toolutil.h"

static const char* kTool = "mjdiff-design";

#define MAXLIST 64

typedef struct args_ {
  const char* model;
  const char* task;
  const char* param[MAXLIST];
  int nparam;
  const char* bounds[MAXLIST];
  int nbounds;
  const char* tie[MAXLIST];
  int ntie;
  const char* controls;
  int codesign;
  double duration;             // 0: the task's, else 2 s
  long iters;
  double lr;
  double target;               // NAN: none
  long max_rollouts;
  const char* method;          // adam, nm, cmaes
  double sigma;                // CMA-ES's initial step
  long seed;                   // CMA-ES's seed
  const char* distance;        // JOINT[:W]
  const char* out;
  int quiet, noplot;
  const char* targets;         // --targets TERM:FILE (goal points, each with its controls)
  const char* policy;          // --policy W.npz (mjdiff-learn's weights)
  long policy_starts;
  toolPolicyArgs pol;          // --goal, --no-relative, --key, --start-noise, --vel-noise
} args;

static void usage(void) {
  printf(
      "usage: %s MODEL.xml TASK [options]\n\n"
      "Optimise design parameters of MODEL (geometry: body:B:pos, body:B:scale, geom:G:size,\n"
      "geom:G:pos, site:S:pos, joint:J:pos; or any parameter of <mjdiff/params.h>) for the cost of\n"
      "TASK (a task file, tasks/task.h) over an open-loop rollout from the initial state.\n\n"
      "options:\n"
      "  --param NAME         a parameter (repeat; patterns with '*')\n"
      "  --bounds NAME=LO:HI  bounds of a parameter (all its components); the current value\n"
      "                       must lie inside (default: [0.2 v, 5 v] for sizes and scales)\n"
      "  --tie A=B            B takes A's value and follows it (repeat)\n"
      "  --controls FILE      open-loop controls, T rows of nu numbers (fewer rows: the last\n"
      "                       is held; default zeros)\n"
      "  --codesign           optimise the controls jointly (starting from --controls)\n"
      "  --targets T:FILE     a set of goals for task term T (a position term with a fixed\n"
      "                       point): FILE has one \"x y z\" a line; the objective is the mean\n"
      "                       cost over them, each goal with its own controls (all from\n"
      "                       --controls at the start), the design shared\n"
      "  --policy W.npz       closed loop: a policy trained by mjdiff-learn as the fixed\n"
      "                       controller (excludes --controls and --codesign); the options\n"
      "                       below must be those it was trained with\n"
      "  --policy-starts N    mean cost over N rollouts (default 1: the initial state and the\n"
      "                       goal box's centre; N > 1: mjdiff-learn's sampled starts and goals,\n"
      "                       seed 1)\n"
      "  --goal T:X0,X1:Y0,Y1:Z0,Z1  as mjdiff-learn: the goal box of task term T\n"
      "  --no-relative        as mjdiff-learn: the policy observes the goal only\n"
      "  --trig               as mjdiff-learn: unlimited hinges observed as (cos q, sin q)\n"
      "  --hide-joints J1,J2  as mjdiff-learn: joints whose position the policy does not see\n"
      "  --start-noise A      as mjdiff-learn (default 0.05; N > 1 only)\n"
      "  --vel-noise A        as mjdiff-learn (default 0; N > 1 only)\n"
      "  --noise-joints J1,J2 as mjdiff-learn (default: every hinge and slide)\n"
      "  --key N              as mjdiff-learn (default 0)\n"
      "  --duration S         rollout length in seconds (default: the task's duration, else 2)\n"
      "  --distance JOINT[:W] add -W (qpos_JOINT(T) - qpos_JOINT(0)) to the cost (default W 1)\n"
      "  --method adam|nm|cmaes  projected Adam (default), Nelder-Mead or CMA-ES (the\n"
      "                       derivative-free baselines; CMA-ES: an iteration is a generation)\n"
      "  --sigma X            CMA-ES's initial step on the scaled variables (default 0.1)\n"
      "  --seed N             CMA-ES's random seed (default 1)\n"
      "  --iters N            iterations (default 100)\n"
      "  --lr X               Adam's rate on the scaled variables (default 0.02)\n"
      "  --target J           stop once the objective is <= J\n"
      "  --max-rollouts N     stop after N rollouts (default 100000)\n"
      "  --out PREFIX         outputs PREFIX.xml .json .csv .png _ctrl.txt (default design)\n"
      "  --no-plot            no gnuplot figure\n"
      "  --quiet              no progress lines\n"
      "Exit codes: 0 done, 1 failed run or runtime error, 2 usage error, 130 interrupted.\n",
      kTool);
}

static void parseArgs(int argc, char** argv, args* a) {
  memset(a, 0, sizeof(*a));
  a->iters = 100;
  a->lr = 0.02;
  a->target = NAN;
  a->max_rollouts = 100000;
  a->method = "adam";
  a->sigma = 0.1;
  a->seed = 1;
  a->out = "design";
  a->policy_starts = 1;
  tool_defaultPolicyArgs(&a->pol);
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (tool_isHelp(o)) {
      usage();
      exit(0);
    } else if (!strcmp(o, "--param") || !strcmp(o, "--bounds") || !strcmp(o, "--tie")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      const char** list = o[2] == 'p' ? a->param : o[2] == 'b' ? a->bounds : a->tie;
      int* n = o[2] == 'p' ? &a->nparam : o[2] == 'b' ? &a->nbounds : &a->ntie;
      if (*n >= MAXLIST) tool_usageError(kTool, "at most %d %s options", MAXLIST, o);
      list[(*n)++] = v;
    } else if (!strcmp(o, "--controls")) {
      a->controls = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(o, "--codesign")) {
      a->codesign = 1;
    } else if (!strcmp(o, "--targets")) {
      a->targets = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(o, "--policy")) {
      a->policy = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(o, "--policy-starts")) {
      a->policy_starts = tool_intOption(kTool, argc, argv, &i, 1, 100000, "in [1, 1e5]");
    } else if (tool_policyOption(kTool, argc, argv, &i, &a->pol)) {
      // --goal, --no-relative, --key, --start-noise, --vel-noise (policyargs.h)
    } else if (!strcmp(o, "--duration")) {
      a->duration = tool_doubleOption(kTool, argc, argv, &i, 0, 600, TOOL_OPEN_LO, "in (0, 600] s");
    } else if (!strcmp(o, "--distance")) {
      a->distance = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(o, "--method")) {
      a->method = tool_optionValue(kTool, argc, argv, &i);
      if (strcmp(a->method, "adam") && strcmp(a->method, "nm") && strcmp(a->method, "cmaes")) {
        tool_usageError(kTool, "--method must be adam, nm or cmaes, got '%s'", a->method);
      }
    } else if (!strcmp(o, "--sigma")) {
      a->sigma = tool_doubleOption(kTool, argc, argv, &i, 0, 100, TOOL_OPEN_LO, "in (0, 100]");
    } else if (!strcmp(o, "--seed")) {
      a->seed = tool_intOption(kTool, argc, argv, &i, 0, 2147483647L, "in [0, 2^31 - 1]");
    } else if (!strcmp(o, "--iters")) {
      a->iters = tool_intOption(kTool, argc, argv, &i, 0, 1000000, "in [0, 1e6]");
    } else if (!strcmp(o, "--lr")) {
      a->lr = tool_doubleOption(kTool, argc, argv, &i, 0, 10, TOOL_OPEN_LO, "in (0, 10]");
    } else if (!strcmp(o, "--target")) {
      a->target = tool_doubleOption(kTool, argc, argv, &i, -INFINITY, INFINITY, 0, "a number");
    } else if (!strcmp(o, "--max-rollouts")) {
      a->max_rollouts = tool_intOption(kTool, argc, argv, &i, 1, 100000000, ">= 1");
    } else if (!strcmp(o, "--out")) {
      a->out = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(o, "--no-plot")) {
      a->noplot = 1;
    } else if (!strcmp(o, "--quiet")) {
      a->quiet = 1;
    } else if (o[0] == '-' && o[1]) {
      tool_usageError(kTool, "unknown option '%s'", o);
    } else if (npos == 0) {
      a->model = o;
      npos++;
    } else if (npos == 1) {
      a->task = o;
      npos++;
    } else {
      tool_usageError(kTool, "unexpected argument '%s'", o);
    }
  }
  if (!a->model || !a->task) tool_usageError(kTool, "MODEL.xml and TASK are required");
  if (!a->nparam) tool_usageError(kTool, "no --param given");
  if (a->policy && (a->controls || a->codesign)) {
    tool_usageError(kTool, "--policy excludes --controls and --codesign");
  }
  if (a->policy && a->targets) tool_usageError(kTool, "--policy excludes --targets");
}

//---------------------------------- the problem ---------------------------------------------------

typedef struct problem_ {
  mjModel* m;
  mjdiffModel* s;
  mjData* d;
  mjdiffTask* task;
  mjdiffParams* p;
  mjdiffRollout* r;
  int np, T, nu, nvar, ndes;   // parameters, steps, controls, variables (design + controls)
  int* group;                  // (np) variable of each parameter
  double* scale;               // (ndes) variable scales
  double *lo, *hi;             // (nvar) bounds of the scaled variables and controls
  double* ctrl;                // (K T nu) the controls in use (K targets, else 1 block)
  double* vals;                // (np)
  double* gp;                  // (np)
  double* gu;                  // (K T nu)
  double* x0;                  // initial state (nq + nv + na)
  int djoint;                  // --distance joint, or -1
  double dweight;
  long rollouts;
  int failed;
  // the cost's direct dependence on the parameters (a task term on a moved site): scratch copy
  mjModel* mc;
  mjData* dc;
  double* gdir;                // (np) accumulated over the steps of one backward sweep
  double* vtmp;                // (np)
  int direct;                  // accumulate gdir in this sweep
  // --policy: the fixed closed-loop controller and its starts
  mjdiffLearnPolicy* pol;
  mjdiffPolicy policy;
  int nstart, goal_term;
  double* starts;              // (nstart x (nq + nv + na))
  double* goals;               // (nstart x 3)
  double* gsum;                // (np)
  // --targets: K goal points of task term target_term, each with its block of controls
  int ntarget, target_term;
  double* targets;             // (K x 3)
} problem;

// gdir += d l_t / dp at the fixed state in d: centred differences of the task cost on a copy of
// the model with one parameter moved (kinematics and com velocities recomputed: what the terms
// read); the rollout adjoint has the state dependence. The copy is made once per sweep (P->mc,
// rolloutObjective): setting every parameter from the values makes it m at those values.
static void directCost(problem* P, const mjModel* m, const mjData* d, int terminal) {
  mjModel* mc = P->mc;
  mjData* dc = P->dc;
  for (int i = 0; i < P->np; i++) {
    double h = 1e-6 * fmax(fabs(P->vals[i]), 0.1), c[2];
    for (int side = 0; side < 2; side++) {
      memcpy(P->vtmp, P->vals, sizeof(double) * (size_t)P->np);
      P->vtmp[i] += side ? -h : h;
      if (mjdiff_setParamValues(mc, P->s, P->p, P->vtmp, NULL, 0) != MJDIFF_OK) return;
      mju_copy(dc->qpos, d->qpos, m->nq);
      mju_copy(dc->qvel, d->qvel, m->nv);
      mju_copy(dc->act, d->act, m->na);
      mju_copy(dc->ctrl, d->ctrl, m->nu);
      mj_kinematics(mc, dc);
      mj_comPos(mc, dc);
      mj_comVel(mc, dc);
      c[side] = mjdiff_taskCost(P->task, mc, dc, terminal, NULL, NULL);
    }
    P->gdir[i] += (c[0] - c[1]) / (2 * h);
  }
}

static double stepCost(const mjModel* m, const mjData* d, int t, int T, void* user,
                       mjtNum* dldx, mjtNum* dldu, mjtNum* dlds) {
  (void)dlds;
  problem* P = (problem*)user;
  int ndx = 2 * m->nv + m->na;
  double gx[1024], gu[256];
  double* bx = ndx <= 1024 ? gx : (double*)calloc((size_t)ndx, sizeof(double));
  double c = mjdiff_taskCost(P->task, m, (mjData*)d, t == T, bx, t == T ? NULL : gu);
  for (int i = 0; i < ndx; i++) dldx[i] += bx[i];
  if (t < T && dldu) {
    for (int i = 0; i < m->nu; i++) dldu[i] += gu[i];
  }
  if (bx != gx) free(bx);
  if (P->direct) directCost(P, m, d, t == T);
  return c;
}

// x (nvar: scaled design variables, then controls) -> parameter values and controls
static void unpack(problem* P, const double* x) {
  for (int i = 0; i < P->np; i++) P->vals[i] = x[P->group[i]] * P->scale[P->group[i]];
  if (P->nvar > P->ndes) memcpy(P->ctrl, x + P->ndes, sizeof(double) * (size_t)(P->nvar - P->ndes));
}

// one rollout from x0 under controls ctrl (T x nu; with --policy: goal g set in the task and the
// policy, ctrl unused): its objective, and (want) its parameter gradient in P->gp and control
// gradient in gu (T x nu)
static double rolloutObjective(problem* P, const double* x0, const double* goal, int want,
                               const double* ctrl, double* gu) {
  char err[1000];
  mjModel* m = P->m;
  mjData* d = P->d;
  int nq = m->nq, nv = m->nv, na = m->na, ndx = 2 * nv + na;
  if (P->pol) {
    if (P->goal_term >= 0) mjdiff_taskSetPoint(P->task, P->goal_term, goal);
    mjdiff_learnPolicySetGoal(P->pol, goal);
  }
  mju_copy(d->qpos, x0, nq);
  mju_copy(d->qvel, x0 + nq, nv);
  mju_copy(d->act, x0 + nq + nv, na);
  d->time = 0;
  if (mjdiff_rolloutForward(m, d, P->s, P->r, P->pol ? NULL : ctrl,
                            P->pol ? &P->policy : NULL, NULL, NULL, NULL, err,
                            sizeof(err)) != MJDIFF_OK) {
    return NAN;  // a diverging design: the caller backs off
  }
  if (P->pol && mjdiff_learnPolicyStatus(P->pol, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: --policy: %s\n", kTool, err);
    P->failed = 1;
    return NAN;
  }
  double dist = 0;
  double* dLdx_T = (double*)calloc((size_t)ndx, sizeof(double));
  if (P->djoint >= 0) {
    int qa = m->jnt_qposadr[P->djoint], da = m->jnt_dofadr[P->djoint];
    dist = d->qpos[qa] - x0[qa];
    dLdx_T[da] = -P->dweight;
  }
  mjdiffStepLoss sl = {P, stepCost, NULL};
  mjdiffRolloutGrad rg;
  mjdiff_defaultRolloutGrad(&rg);
  double loss = 0;
  rg.step_loss = &sl;
  rg.dLdx_T = dLdx_T;
  rg.loss = &loss;
  rg.grad_param = want ? P->gp : NULL;
  rg.grad_ctrl = want && P->nvar > P->ndes ? gu : NULL;
  P->direct = want;
  if (want) {
    memset(P->gdir, 0, sizeof(double) * (size_t)P->np);
    mj_copyModel(P->mc, m);
  }
  mjdiffStatus st = mjdiff_rolloutGradient(m, d, P->s, P->r, &rg, err, sizeof(err));
  P->direct = 0;
  free(dLdx_T);
  if (want) {
    for (int i = 0; i < P->np; i++) P->gp[i] += P->gdir[i];
  }
  if (st != MJDIFF_OK) return NAN;
  return loss - P->dweight * dist;
}

// objective at x and (g non-NULL) its gradient in x; with --policy the mean over the starts
static double objective(problem* P, const double* x, double* g) {
  char err[1000];
  unpack(P, x);
  P->rollouts += P->pol ? P->nstart : P->ntarget ? P->ntarget : 1;
  if (mjdiff_setParamValues(P->m, P->s, P->p, P->vals, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    P->failed = 1;
    return NAN;
  }
  double J = 0;
  if (P->ntarget) {
    // the mean over the targets, each with its own controls block
    size_t Tn = (size_t)P->T * P->nu;
    int K = P->ntarget;
    memset(P->gsum, 0, sizeof(double) * (size_t)P->np);
    for (int k = 0; k < K; k++) {
      mjdiff_taskSetPoint(P->task, P->target_term, P->targets + 3 * k);
      double Jk = rolloutObjective(P, P->x0, NULL, g != NULL, P->ctrl + Tn * k, P->gu + Tn * k);
      if (!isfinite(Jk)) return NAN;
      J += Jk / K;
      for (int i = 0; g && i < P->np; i++) P->gsum[i] += P->gp[i] / K;
      for (size_t i = 0; g && P->nvar > P->ndes && i < Tn; i++) P->gu[Tn * k + i] /= K;
    }
    if (g) memcpy(P->gp, P->gsum, sizeof(double) * (size_t)P->np);
  } else if (!P->pol) {
    J = rolloutObjective(P, P->x0, NULL, g != NULL, P->ctrl, P->gu);
  } else {
    int nx = P->m->nq + P->m->nv + P->m->na;
    memset(P->gsum, 0, sizeof(double) * (size_t)P->np);
    for (int b = 0; b < P->nstart; b++) {
      double Jb = rolloutObjective(P, P->starts + (size_t)b * nx, P->goals + 3 * b, g != NULL,
                                   NULL, NULL);
      if (!isfinite(Jb)) return NAN;
      J += Jb / P->nstart;
      for (int i = 0; g && i < P->np; i++) P->gsum[i] += P->gp[i] / P->nstart;
    }
    if (g) memcpy(P->gp, P->gsum, sizeof(double) * (size_t)P->np);
  }
  if (!isfinite(J)) return NAN;
  if (g) {
    memset(g, 0, sizeof(double) * (size_t)P->nvar);
    for (int i = 0; i < P->np; i++) g[P->group[i]] += P->gp[i] * P->scale[P->group[i]];
    if (P->nvar > P->ndes) memcpy(g + P->ndes, P->gu, sizeof(double) * (size_t)(P->nvar - P->ndes));
  }
  return J;
}

static const char* methodName(const char* method) {
  if (!strcmp(method, "adam")) return "projected Adam";
  return !strcmp(method, "cmaes") ? "CMA-ES" : "Nelder-Mead";
}

static void project(const problem* P, double* x) {
  for (int k = 0; k < P->nvar; k++) x[k] = fmin(fmax(x[k], P->lo[k]), P->hi[k]);
}

// the derivative-free methods' objective (Nelder-Mead, CMA-ES): projected first, a failed
// rollout is +inf
static double nmEval(problem* P, double* x) {
  project(P, x);
  double f = objective(P, x, NULL);
  return isfinite(f) ? f : INFINITY;
}

//---------------------------------- MJCF text -----------------------------------------------------

typedef struct text_ {
  char* s;
  size_t n;
} text;

// the start tag <tag ... name="name" ...> : [*b, *e) (e after '>'); 0 if none
static int findTag(const text* t, const char* tag, const char* name, size_t* b, size_t* e) {
  size_t lt = strlen(tag);
  char want[600];
  snprintf(want, sizeof(want), "name=\"%s\"", name);
  for (const char* c = strchr(t->s, '<'); c; c = strchr(c + 1, '<')) {
    if (strncmp(c + 1, tag, lt) || !strchr(" \t\r\n/>", c[1 + lt])) continue;
    const char* end = strchr(c, '>');
    if (!end) return 0;
    const char* hit = strstr(c, want);
    if (hit && hit < end && strchr(" \t\r\n", hit[-1])) {
      *b = (size_t)(c - t->s);
      *e = (size_t)(end + 1 - t->s);
      return 1;
    }
  }
  return 0;
}

// 1 if the tag [b, e) has attribute attr
static int hasAttr(const text* t, size_t b, size_t e, const char* attr, size_t* vb, size_t* ve) {
  char want[64];
  snprintf(want, sizeof(want), "%s=\"", attr);
  size_t lw = strlen(want);
  for (size_t i = b; i + lw < e; i++) {
    if (!strncmp(t->s + i, want, lw) && strchr(" \t\r\n", t->s[i - 1])) {
      *vb = i + lw;
      const char* q = strchr(t->s + *vb, '"');
      if (!q) return 0;
      *ve = (size_t)(q - t->s);
      return 1;
    }
  }
  return 0;
}

// set attribute attr of the tag [b, e) to value (replacing or inserting after the tag name)
static int setAttr(text* t, size_t b, size_t e, const char* attr, const char* value) {
  size_t vb, ve, at, cut;
  char ins[600];
  if (hasAttr(t, b, e, attr, &vb, &ve)) {
    at = vb;
    cut = ve - vb;
    snprintf(ins, sizeof(ins), "%s", value);
  } else {
    at = b + 1;
    while (at < e && !strchr(" \t\r\n/>", t->s[at])) at++;
    cut = 0;
    snprintf(ins, sizeof(ins), " %s=\"%s\"", attr, value);
  }
  size_t li = strlen(ins), n = t->n - cut + li;
  char* s = (char*)malloc(n + 1);
  if (!s) return 0;
  memcpy(s, t->s, at);
  memcpy(s + at, ins, li);
  memcpy(s + at + li, t->s + at + cut, t->n - at - cut + 1);
  free(t->s);
  t->s = s;
  t->n = n;
  return 1;
}

static void fmtVec(char* buf, size_t size, const double* v, int n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < n && k < size; i++) {
    k += (size_t)snprintf(buf + k, size - k, "%s%.12g", i ? " " : "", fabs(v[i]) < 1e-15 ? 0.0 : v[i]);
  }
}

static int changed(const double* a, const double* b, int n) {
  for (int i = 0; i < n; i++) {
    if (fabs(a[i] - b[i]) > 1e-14 * (1 + fabs(b[i]))) return 1;
  }
  return 0;
}

// write element kind (body, geom, site, joint) id of m into the text where it differs from m0
static int writeElement(text* t, const mjModel* m, const mjModel* m0, int obj, int id,
                        char* err, int errsz) {
  const char* tag = obj == mjOBJ_BODY ? "body" : obj == mjOBJ_GEOM ? "geom" :
                    obj == mjOBJ_SITE ? "site" : "joint";
  const double *pos, *pos0, *size = NULL, *size0 = NULL, *quat = NULL;
  int type = -1;
  if (obj == mjOBJ_BODY) {
    pos = m->body_pos + 3 * id;
    pos0 = m0->body_pos + 3 * id;
  } else if (obj == mjOBJ_GEOM) {
    pos = m->geom_pos + 3 * id;
    pos0 = m0->geom_pos + 3 * id;
    size = m->geom_size + 3 * id;
    size0 = m0->geom_size + 3 * id;
    quat = m->geom_quat + 4 * id;
    type = m->geom_type[id];
  } else if (obj == mjOBJ_SITE) {
    pos = m->site_pos + 3 * id;
    pos0 = m0->site_pos + 3 * id;
    size = m->site_size + 3 * id;
    size0 = m0->site_size + 3 * id;
    quat = m->site_quat + 4 * id;
    type = m->site_type[id];
  } else {
    pos = m->jnt_pos + 3 * id;
    pos0 = m0->jnt_pos + 3 * id;
  }
  int dp = changed(pos, pos0, 3), ds = size && changed(size, size0, 3);
  if (!dp && !ds) return 1;
  const char* name = mj_id2name(m, obj, id);
  size_t b, e, vb, ve;
  if (!name || !name[0] || !findTag(t, tag, name, &b, &e)) {
    snprintf(err, (size_t)errsz, "cannot find the %s %s%s%s (id %d) in the MJCF text to write its "
             "new values%s", tag, name ? "'" : "", name ? name : "", name ? "'" : "", id,
             name ? "" : ": name it");
    return 0;
  }
  char buf[300];
  int nsize = type == mjGEOM_SPHERE ? 1 : type == mjGEOM_CAPSULE || type == mjGEOM_CYLINDER ? 2 : 3;
  if (size && hasAttr(t, b, e, "fromto", &vb, &ve)) {
    // fromto = pos +- h z, z = the frame's z-axis (the compiler's z2quat of from - to)
    double R[9], z[3], ft[6], h = (type == mjGEOM_BOX || type == mjGEOM_ELLIPSOID) ? size[2] : size[1];
    mju_quat2Mat(R, quat);
    for (int k = 0; k < 3; k++) z[k] = R[3 * k + 2];
    for (int k = 0; k < 3; k++) {
      ft[k] = pos[k] + h * z[k];
      ft[3 + k] = pos[k] - h * z[k];
    }
    fmtVec(buf, sizeof(buf), ft, 6);
    if (!setAttr(t, b, e, "fromto", buf)) return 0;
    if (ds && size[0] != size0[0]) {
      findTag(t, tag, name, &b, &e);
      double s2[2] = {size[0], size[1]};
      fmtVec(buf, sizeof(buf), s2, type == mjGEOM_BOX || type == mjGEOM_ELLIPSOID ? 2 : 1);
      if (!setAttr(t, b, e, "size", buf)) return 0;
    }
    return 1;
  }
  if (dp) {
    fmtVec(buf, sizeof(buf), pos, 3);
    if (!setAttr(t, b, e, "pos", buf)) return 0;
    findTag(t, tag, name, &b, &e);
  }
  if (ds) {
    fmtVec(buf, sizeof(buf), size, obj == mjOBJ_SITE ? 3 : nsize);
    if (!setAttr(t, b, e, "size", buf)) return 0;
  }
  return 1;
}

// worst relative difference of the compiled quantities of two models
static double compareModels(const mjModel* a, const mjModel* b) {
  double worst = 0;
  for (int i = 1; i < a->nbody; i++) {
    double Ta[9], Tb[9], Ra[9], Rb[9], tr = 0;
    mju_quat2Mat(Ra, a->body_iquat + 4 * i);
    mju_quat2Mat(Rb, b->body_iquat + 4 * i);
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++) {
        Ta[3 * r + c] = Tb[3 * r + c] = 0;
        for (int k = 0; k < 3; k++) {
          Ta[3 * r + c] += Ra[3 * r + k] * a->body_inertia[3 * i + k] * Ra[3 * c + k];
          Tb[3 * r + c] += Rb[3 * r + k] * b->body_inertia[3 * i + k] * Rb[3 * c + k];
        }
      }
      tr += Tb[4 * r];
    }
    for (int k = 0; k < 9; k++) worst = fmax(worst, fabs(Ta[k] - Tb[k]) / fmax(tr, 1e-300));
    worst = fmax(worst, fabs(a->body_mass[i] - b->body_mass[i]) / fmax(b->body_mass[i], 1e-300));
    for (int k = 0; k < 3; k++) {
      double L = fmax(0.01, mju_norm3(b->body_pos + 3 * i));
      worst = fmax(worst, fabs(a->body_ipos[3 * i + k] - b->body_ipos[3 * i + k]) / L);
      worst = fmax(worst, fabs(a->body_pos[3 * i + k] - b->body_pos[3 * i + k]) / L);
    }
  }
  for (int g = 0; g < a->ngeom; g++) {
    double L = fmax(0.01, b->geom_rbound[g]);
    for (int k = 0; k < 3; k++) {
      worst = fmax(worst, fabs(a->geom_size[3 * g + k] - b->geom_size[3 * g + k]) / L);
      worst = fmax(worst, fabs(a->geom_pos[3 * g + k] - b->geom_pos[3 * g + k]) / L);
    }
  }
  for (int i = 0; i < a->nsite; i++) {
    for (int k = 0; k < 3; k++) {
      worst = fmax(worst, fabs(a->site_pos[3 * i + k] - b->site_pos[3 * i + k]) / 0.01);
    }
  }
  return worst;
}

// the geoms whose MJCF start tag gives mass=: their mass is held (mjdiff_designFixMass)
static int fixMasses(const char* xml, const mjModel* m, mjdiffParams* p, int* count) {
  text t = {(char*)xml, strlen(xml)};
  *count = 0;
  for (int g = 0; g < m->ngeom; g++) {
    const char* name = mj_id2name(m, mjOBJ_GEOM, g);
    size_t b, e, vb, ve;
    if (!name || !findTag(&t, "geom", name, &b, &e)) continue;
    if (hasAttr(&t, b, e, "mass", &vb, &ve)) {
      if (mjdiff_designFixMass(p, m, name, NULL, 0) != MJDIFF_OK) return 0;
      (*count)++;
    }
  }
  return 1;
}

//---------------------------------- main ----------------------------------------------------------

static int isPositive(const char* name) {
  return strstr(name, ":size") != NULL || strstr(name, ":scale") != NULL ||
         strstr(name, ":mass") != NULL;
}

static int readControls(const char* path, double* ctrl, int T, int nu, char* err, int errsz) {
  FILE* f = fopen(path, "r");
  if (!f) {
    snprintf(err, (size_t)errsz, "cannot read %s", path);
    return 0;
  }
  int rows = 0;
  for (; rows < T; rows++) {
    int k = 0;
    for (; k < nu; k++) {
      if (fscanf(f, "%lf", ctrl + nu * rows + k) != 1) break;
    }
    if (k == 0) break;
    if (k < nu) {
      snprintf(err, (size_t)errsz, "%s: row %d has %d of %d controls", path, rows + 1, k, nu);
      fclose(f);
      return 0;
    }
  }
  fclose(f);
  if (!rows) {
    snprintf(err, (size_t)errsz, "%s: no controls", path);
    return 0;
  }
  for (int t = rows; t < T; t++) memcpy(ctrl + nu * t, ctrl + nu * (rows - 1), sizeof(double) * (size_t)nu);
  return 1;
}

int main(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
  tool_catchWarnings(kTool);
  char err[2000] = "";
  long xmlsize = 0;
  char* xml = tool_readFile(a.model, &xmlsize, err, sizeof(err));
  if (!xml) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return TOOL_EXIT_RUNTIME;
  }
  if (strstr(xml, "coordinate=\"global\"")) {
    fprintf(stderr, "%s: error: %s: global coordinates are not supported\n", kTool, a.model);
    return TOOL_EXIT_RUNTIME;
  }
  problem P;
  memset(&P, 0, sizeof(P));
  P.m = tool_loadXMLText(a.model, xml, xmlsize, err, sizeof(err));
  mjModel* m0 = P.m ? mj_copyModel(NULL, P.m) : NULL;
  if (!P.m || !m0 || mjdiff_makeModel(P.m, NULL, &P.s, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return TOOL_EXIT_RUNTIME;
  }
  mjModel* m = P.m;
  P.task = mjdiff_readTask(m, a.task, err, sizeof(err));
  if (!P.task) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return TOOL_EXIT_RUNTIME;
  }
  // a policy runs at the timestep it was trained at (mjdiff-learn: the task's)
  if (a.policy && mjdiff_taskTimestep(P.task) > 0) m->opt.timestep = mjdiff_taskTimestep(P.task);
  if (mjdiff_makeParams(m, P.s, a.param, a.nparam, &P.p, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return TOOL_EXIT_USAGE;
  }
  int nfixed = 0;
  if (!fixMasses(xml, m, P.p, &nfixed)) {
    fprintf(stderr, "%s: error: out of memory\n", kTool);
    return TOOL_EXIT_RUNTIME;
  }
  double duration = a.duration > 0 ? a.duration : mjdiff_taskDuration(P.task) > 0
                                                       ? mjdiff_taskDuration(P.task) : 2;
  P.T = (int)lround(duration / m->opt.timestep);
  if (P.T < 1) P.T = 1;
  P.np = mjdiff_paramCount(P.p);
  P.nu = m->nu;
  P.d = mj_makeData(m);
  P.djoint = -1;
  if (a.distance) {
    char jn[300];
    snprintf(jn, sizeof(jn), "%s", a.distance);
    char* colon = strchr(jn, ':');
    P.dweight = 1;
    if (colon) {
      *colon = 0;
      if (!tool_parseDouble(colon + 1, &P.dweight)) {
        tool_usageError(kTool, "--distance weight must be a number, got '%s'", colon + 1);
      }
    }
    P.djoint = mj_name2id(m, mjOBJ_JOINT, jn);
    if (P.djoint < 0 || (m->jnt_type[P.djoint] != mjJNT_SLIDE && m->jnt_type[P.djoint] != mjJNT_HINGE)) {
      tool_usageError(kTool, "--distance: no hinge or slide joint named '%s'", jn);
    }
  }

  // variables: ties merge parameters
  int np = P.np;
  P.group = (int*)calloc((size_t)np, sizeof(int));
  double* v0 = (double*)calloc((size_t)np, sizeof(double));
  mjdiff_getParamValues(m, P.s, P.p, v0);
  for (int i = 0; i < np; i++) P.group[i] = -1;
  int* follows = (int*)calloc((size_t)np, sizeof(int));
  for (int i = 0; i < np; i++) follows[i] = -1;
  for (int k = 0; k < a.ntie; k++) {
    char buf[600];
    snprintf(buf, sizeof(buf), "%s", a.tie[k]);
    char* eq = strchr(buf, '=');
    if (!eq) tool_usageError(kTool, "--tie must be A=B, got '%s'", a.tie[k]);
    *eq = 0;
    int ia = mjdiff_paramIndex(P.p, buf), ib = mjdiff_paramIndex(P.p, eq + 1);
    int na = mjdiff_paramNameCount(P.p, buf), nb = mjdiff_paramNameCount(P.p, eq + 1);
    if (ia < 0 || ib < 0 || na != nb) {
      tool_usageError(kTool, "--tie %s: both must be selected parameters of equal size", a.tie[k]);
    }
    for (int c = 0; c < na; c++) {
      follows[ib + c] = ia + c;
      v0[ib + c] = v0[ia + c];
    }
  }
  P.ndes = 0;
  for (int i = 0; i < np; i++) {
    if (follows[i] < 0) P.group[i] = P.ndes++;
  }
  for (int i = 0; i < np; i++) {
    int j = i;
    while (follows[j] >= 0) j = follows[j];
    P.group[i] = P.group[j];
  }
  // --targets T:FILE: the goal points (one "x y z" a line) of task term T
  if (a.targets) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", a.targets);
    char* colon = strchr(buf, ':');
    long term = -1;
    if (!colon || (*colon = 0, !tool_parseInt(buf, 0, 1000000, &term))) {
      tool_usageError(kTool, "--targets must be TERM:FILE, got '%s'", a.targets);
    }
    double probe[3];
    if (mjdiff_taskGetPoint(P.task, (int)term, probe)) {
      tool_usageError(kTool, "--targets: task term %ld is not a position term with a fixed point",
                      term);
    }
    P.target_term = (int)term;
    FILE* tf = fopen(colon + 1, "r");
    if (!tf) {
      fprintf(stderr, "%s: error: cannot read --targets file %s\n", kTool, colon + 1);
      return TOOL_EXIT_RUNTIME;
    }
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof(line), tf)) {
      lineno++;
      char* h = strchr(line, '#');
      if (h) *h = 0;
      double t3[3];
      char extra;
      int n = sscanf(line, "%lf %lf %lf %c", t3, t3 + 1, t3 + 2, &extra);
      if (n <= 0) continue;  // blank or comment
      if (n != 3 || !isfinite(t3[0]) || !isfinite(t3[1]) || !isfinite(t3[2])) {
        fprintf(stderr, "%s: error: %s:%d: expected three finite numbers \"x y z\"\n", kTool,
                colon + 1, lineno);
        fclose(tf);
        return TOOL_EXIT_RUNTIME;
      }
      double* grown = (double*)realloc(P.targets, sizeof(double) * 3 * (size_t)(P.ntarget + 1));
      if (!grown) tool_outOfMemory(kTool);
      P.targets = grown;
      memcpy(P.targets + 3 * P.ntarget++, t3, sizeof(t3));
    }
    fclose(tf);
    if (!P.ntarget) {
      fprintf(stderr, "%s: error: %s: no targets\n", kTool, colon + 1);
      return TOOL_EXIT_RUNTIME;
    }
  }
  int nblock = P.ntarget ? P.ntarget : 1;  // controls blocks
  P.nvar = P.ndes + (a.codesign ? nblock * P.T * P.nu : 0);
  P.scale = (double*)calloc((size_t)P.ndes + 1, sizeof(double));
  P.lo = (double*)calloc((size_t)P.nvar, sizeof(double));
  P.hi = (double*)calloc((size_t)P.nvar, sizeof(double));
  double* x = (double*)calloc((size_t)P.nvar, sizeof(double));
  double* g = (double*)calloc((size_t)P.nvar, sizeof(double));
  double* best = (double*)calloc((size_t)P.nvar, sizeof(double));
  P.vals = (double*)calloc((size_t)np, sizeof(double));
  P.gp = (double*)calloc((size_t)np, sizeof(double));
  P.ctrl = (double*)calloc((size_t)nblock * (size_t)(P.T * P.nu) + 1, sizeof(double));
  P.gu = (double*)calloc((size_t)nblock * (size_t)(P.T * P.nu) + 1, sizeof(double));
  if (P.ntarget) P.gsum = (double*)calloc((size_t)np + 1, sizeof(double));
  P.x0 = (double*)calloc((size_t)(m->nq + m->nv + m->na), sizeof(double));
  P.gdir = (double*)calloc((size_t)np, sizeof(double));
  P.vtmp = (double*)calloc((size_t)np, sizeof(double));
  P.mc = mj_copyModel(NULL, m);
  P.dc = mj_makeData(P.mc);
  for (int i = 0; i < np; i++) {
    int k = P.group[i];
    if (follows[i] >= 0) continue;
    P.scale[k] = fmax(fabs(v0[i]), 0.05);
    x[k] = v0[i] / P.scale[k];
    double lo = -INFINITY, hi = INFINITY;
    if (isPositive(mjdiff_paramName(P.p, i))) {
      lo = 0.2 * v0[i];
      hi = 5 * v0[i];
    }
    P.lo[k] = lo / P.scale[k];
    P.hi[k] = hi / P.scale[k];
  }
  for (int k = 0; k < a.nbounds; k++) {
    char buf[600];
    snprintf(buf, sizeof(buf), "%s", a.bounds[k]);
    char* eq = strrchr(buf, '=');
    char* colon = eq ? strchr(eq, ':') : NULL;
    double lo, hi;
    if (!eq || !colon) tool_usageError(kTool, "--bounds must be NAME=LO:HI, got '%s'", a.bounds[k]);
    *eq = 0;
    *colon = 0;
    if (!tool_parseDouble(eq + 1, &lo) || !tool_parseDouble(colon + 1, &hi) || !(lo <= hi)) {
      tool_usageError(kTool, "--bounds %s: LO and HI must be numbers with LO <= HI", a.bounds[k]);
    }
    int i0 = mjdiff_paramIndex(P.p, buf), n = mjdiff_paramNameCount(P.p, buf);
    if (i0 < 0) tool_usageError(kTool, "--bounds: '%s' is not a selected parameter", buf);
    for (int i = i0; i < i0 + n; i++) {
      if (v0[i] < lo || v0[i] > hi) {
        fprintf(stderr, "%s: error: --bounds %s: the current value %s = %.9g lies outside [%g, %g]\n",
                kTool, a.bounds[k], mjdiff_paramName(P.p, i), v0[i], lo, hi);
        return TOOL_EXIT_USAGE;
      }
      int v = P.group[i];
      P.lo[v] = lo / P.scale[v];
      P.hi[v] = hi / P.scale[v];
    }
  }
  if (a.controls && !readControls(a.controls, P.ctrl, P.T, P.nu, err, sizeof(err))) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return TOOL_EXIT_USAGE;
  }
  // every target's block starts from the same controls
  for (int b = 1; b < nblock; b++) {
    memcpy(P.ctrl + (size_t)b * P.T * P.nu, P.ctrl, sizeof(double) * (size_t)(P.T * P.nu));
  }
  for (int t = 0; a.codesign && t < nblock * P.T; t++) {
    for (int i = 0; i < P.nu; i++) {
      int k = P.ndes + P.nu * t + i;
      x[k] = P.ctrl[P.nu * t + i];
      P.lo[k] = m->actuator_ctrllimited[i] ? m->actuator_ctrlrange[2 * i] : -INFINITY;
      P.hi[k] = m->actuator_ctrllimited[i] ? m->actuator_ctrlrange[2 * i + 1] : INFINITY;
    }
  }
  mj_resetData(m, P.d);
  if (m->nkey) mj_resetDataKeyframe(m, P.d, 0);
  mju_copy(P.x0, P.d->qpos, m->nq);
  mju_copy(P.x0 + m->nq, P.d->qvel, m->nv);
  mju_copy(P.x0 + m->nq + m->nv, P.d->act, m->na);
  if (mjdiff_makeRollout(m, P.s, P.p, P.T, NULL, &P.r, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return TOOL_EXIT_RUNTIME;
  }
  mjdiffLearner* learner = NULL;
  mjdiffMLP* net = NULL;
  mjModel* mpol = NULL;
  P.goal_term = -1;
  if (a.policy) {
    // the learner on a copy of the initial design: the policy's kinematic observation keeps
    // the model it was trained for (<mjdiff/learn.h>), so u depends on the state and goal only.
    // It only hosts the policy and samples starts (the rollouts are P.r's): horizon 1, so that
    // its own rollout recording is the smallest there is.
    mjdiffLearnOptions lo;
    tool_policyLearnOptions(&a.pol, m, &lo);
    lo.horizon = 1;
    P.goal_term = lo.goal_term;
    mpol = mj_copyModel(NULL, m);
    if (!mpol) {
      fprintf(stderr, "%s: error: out of memory\n", kTool);
      return TOOL_EXIT_RUNTIME;
    }
    net = tool_loadPolicyWeights(kTool, a.policy, mjdiff_learnObsSize(mpol, &lo), (int)m->nu);
    if (!net) return TOOL_EXIT_RUNTIME;
    if (mjdiff_makeLearner(mpol, P.s, NULL, P.task, &lo, net, 1, &learner, err, sizeof(err)) !=
            MJDIFF_OK ||
        mjdiff_makeLearnPolicy(learner, net, &P.pol, err, sizeof(err)) != MJDIFF_OK) {
      fprintf(stderr, "%s: error: --policy %s: %s\n", kTool, a.policy, err);
      return TOOL_EXIT_RUNTIME;
    }
    mjdiff_learnPolicy(P.pol, &P.policy);
    P.policy.nparam = 0;  // no weight gradient: the policy is fixed
    int nx = m->nq + m->nv + m->na;
    P.nstart = (int)a.policy_starts;
    P.starts = (double*)calloc((size_t)P.nstart * (size_t)nx, sizeof(double));
    P.goals = (double*)calloc((size_t)P.nstart * 3, sizeof(double));
    P.gsum = (double*)calloc((size_t)np + 1, sizeof(double));
    if (!P.starts || !P.goals || !P.gsum) {
      fprintf(stderr, "%s: error: out of memory\n", kTool);
      return TOOL_EXIT_RUNTIME;
    }
    if (P.nstart == 1) {
      memcpy(P.starts, P.x0, sizeof(double) * (size_t)nx);
      for (int k = 0; k < 3; k++) P.goals[k] = 0.5 * (lo.goal_lo[k] + lo.goal_hi[k]);
    } else {
      for (int b = 0; b < P.nstart; b++) {
        mjdiff_learnSample(learner, 1, b, P.starts + (size_t)b * nx, P.goals + 3 * b);
      }
    }
  }

  // history
  char path[1200];
  snprintf(path, sizeof(path), "%s.csv", a.out);
  FILE* hist = fopen(path, "w");
  if (!hist) {
    fprintf(stderr, "%s: error: cannot write %s\n", kTool, path);
    return TOOL_EXIT_RUNTIME;
  }
  fprintf(hist, "iter,rollouts,seconds,J,grad_norm");
  for (int i = 0; i < np; i++) fprintf(hist, ",%s", mjdiff_paramName(P.p, i));
  fprintf(hist, "\n");

  double t0 = tool_now(), J0 = objective(&P, x, g), J = J0, Jbest = J0, gnorm = 0;
  long reached = -1;
  double reachedTime = NAN;
  memcpy(best, x, sizeof(double) * (size_t)P.nvar);
  if (!isfinite(J0)) {
    fprintf(stderr, "%s: error: the initial rollout fails or its objective is not finite\n", kTool);
    return TOOL_EXIT_RUNTIME;
  }
  int iter = 0;
  const char* status = "done";  // or why the loop stopped early: the JSON's status, the exit code
  tool_catchInterrupt();
#define LOG_ITER(JV, GN)                                                                        \
  do {                                                                                          \
    fprintf(hist, "%d,%ld,%.6f,", iter, P.rollouts, tool_now() - t0);                          \
    tool_csvNumber(hist, 12, JV); /* a failed objective: an empty field, never nan text */     \
    fputc(',', hist);                                                                           \
    tool_csvNumber(hist, 6, GN);                                                                \
    for (int i_ = 0; i_ < np; i_++) fprintf(hist, ",%.12g", P.vals[i_]);                        \
    fprintf(hist, "\n");                                                                        \
    if (!a.quiet) {                                                                             \
      printf("iter %4d  rollouts %6ld  %7.2fs  J %.6g  |g| %.3g ", iter, P.rollouts,            \
             tool_now() - t0, JV, GN);                                                          \
      for (int k_ = 0; k_ < P.ndes && k_ < 6; k_++) printf(" %.5g", best[k_] * P.scale[k_]);     \
      printf("\n");                                                                             \
      fflush(stdout);                                                                           \
    }                                                                                           \
  } while (0)
  if (isfinite(a.target) && J0 <= a.target) {
    reached = P.rollouts;
    reachedTime = 0;
  }
  if (!strcmp(a.method, "adam")) {
    mjdiffAdamOptions ao;
    mjdiff_defaultAdamOptions(&ao);
    ao.lr = a.lr;
    mjdiffAdam* adam = NULL;
    if (mjdiff_makeAdam(P.nvar, &ao, &adam, err, sizeof(err)) != MJDIFF_OK) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      return TOOL_EXIT_RUNTIME;
    }
    gnorm = 0;
    for (int k = 0; k < P.nvar; k++) gnorm += g[k] * g[k];
    gnorm = sqrt(gnorm);
    LOG_ITER(J, gnorm);
    double* xprev = (double*)calloc((size_t)P.nvar, sizeof(double));
    for (iter = 1; iter <= a.iters && reached < 0 && P.rollouts < a.max_rollouts; iter++) {
      if (tool_interrupted()) {
        status = "interrupted";
        break;
      }
      memcpy(xprev, x, sizeof(double) * (size_t)P.nvar);
      if (mjdiff_adamStep(adam, x, g, NULL) != MJDIFF_OK) {
        fprintf(stderr, "%s: error: iteration %d: the gradient is not finite\n", kTool, iter);
        status = "failed: non-finite gradient";
        break;
      }
      project(&P, x);
      double Jn = objective(&P, x, g);
      if (P.failed) {
        status = "failed: the objective could not be evaluated";
        break;
      }
      if (!isfinite(Jn)) {  // a diverging design: halfway back, keep the old gradient
        for (int k = 0; k < P.nvar; k++) x[k] = 0.5 * (x[k] + xprev[k]);
        Jn = objective(&P, x, g);
        if (!isfinite(Jn)) {
          memcpy(x, xprev, sizeof(double) * (size_t)P.nvar);
          Jn = objective(&P, x, g);
        }
      }
      J = Jn;
      gnorm = 0;
      for (int k = 0; k < P.nvar; k++) gnorm += g[k] * g[k];
      gnorm = sqrt(gnorm);
      if (J < Jbest) {
        Jbest = J;
        memcpy(best, x, sizeof(double) * (size_t)P.nvar);
      }
      if (isfinite(a.target) && J <= a.target) {
        reached = P.rollouts;
        reachedTime = tool_now() - t0;
      }
      LOG_ITER(J, gnorm);
    }
    free(xprev);
    mjdiff_freeAdam(adam);
  } else if (!strcmp(a.method, "cmaes")) {
    // CMA-ES by ask and tell on the scaled variables within their bounds, each candidate
    // evaluated as Nelder-Mead's; a generation cut short (target, rollout budget) is not told
    int n = P.nvar;
    mjdiffCmaesOptions co;
    mjdiff_defaultCmaesOptions(&co);
    co.sigma0 = a.sigma;
    co.seed = (unsigned long long)a.seed;
    co.max_evals = 2000000000L;  // the rollouts are counted here
    mjdiffCmaes* cm = NULL;
    if (mjdiff_makeCmaes(n, x, P.lo, P.hi, &co, &cm, err, sizeof(err)) != MJDIFF_OK) {
      fprintf(stderr, "%s: error: CMA-ES: %s\n", kTool, err);
      return TOOL_EXIT_RUNTIME;
    }
    int L = mjdiff_cmaesLambda(cm);
    double* X = (double*)calloc((size_t)L * (size_t)n, sizeof(double));
    double* F = (double*)calloc((size_t)L, sizeof(double));
    LOG_ITER(J, 0.0);
    for (iter = 1; iter <= a.iters && reached < 0 && P.rollouts < a.max_rollouts; iter++) {
      if (tool_interrupted()) {
        status = "interrupted";
        break;
      }
      if (mjdiff_cmaesDone(cm, NULL)) break;  // converged or stalled
      mjdiff_cmaesAsk(cm, X);
      int k = 0;
      for (; k < L && !P.failed && P.rollouts < a.max_rollouts; k++) {
        F[k] = nmEval(&P, X + (size_t)n * k);
        if (F[k] < Jbest) {
          Jbest = F[k];
          memcpy(best, X + (size_t)n * k, sizeof(double) * (size_t)n);
        }
        if (isfinite(a.target) && F[k] <= a.target) {
          reached = P.rollouts;
          reachedTime = tool_now() - t0;
          break;
        }
      }
      if (P.failed) {
        status = "failed: the objective could not be evaluated";
        break;
      }
      if (k == L) mjdiff_cmaesTell(cm, F);
      J = Jbest;
      unpack(&P, best);
      LOG_ITER(J, 0.0);
    }
    free(X);
    free(F);
    mjdiff_freeCmaes(cm);
  } else {
    // Nelder-Mead (reflection 1, expansion 2, contraction 1/2, shrink 1/2) on the design
    // variables, the initial simplex x0 + 0.1 e_k (10% of each variable's scale), projected
    int n = P.nvar;
    double* S = (double*)calloc((size_t)(n + 1) * (size_t)n, sizeof(double));
    double* F = (double*)calloc((size_t)n + 1, sizeof(double));
    double *c = (double*)calloc((size_t)n, sizeof(double)), *xr = (double*)calloc((size_t)n, sizeof(double));
    double* xe = (double*)calloc((size_t)n, sizeof(double));
    for (int i = 0; i <= n; i++) {
      memcpy(S + n * i, x, sizeof(double) * (size_t)n);
      if (i) S[n * i + i - 1] += S[n * i + i - 1] + 0.1 <= P.hi[i - 1] ? 0.1 : -0.1;
      project(&P, S + n * i);
      F[i] = i ? objective(&P, S + n * i, NULL) : J0;
      if (!isfinite(F[i])) F[i] = INFINITY;
    }
    for (iter = 1; iter <= a.iters && reached < 0 && P.rollouts < a.max_rollouts; iter++) {
      if (tool_interrupted()) {
        status = "interrupted";
        break;
      }
      if (P.failed) {
        status = "failed: the objective could not be evaluated";
        break;
      }
      // order
      for (int i = 1; i <= n; i++) {
        for (int j = i; j > 0 && F[j] < F[j - 1]; j--) {
          double tf = F[j];
          F[j] = F[j - 1];
          F[j - 1] = tf;
          for (int k = 0; k < n; k++) {
            double tx = S[n * j + k];
            S[n * j + k] = S[n * (j - 1) + k];
            S[n * (j - 1) + k] = tx;
          }
        }
      }
      for (int k = 0; k < n; k++) {
        c[k] = 0;
        for (int i = 0; i < n; i++) c[k] += S[n * i + k] / n;
      }
      double* w = S + n * n;
      for (int k = 0; k < n; k++) xr[k] = c[k] + (c[k] - w[k]);
      double fr = nmEval(&P, xr);
      if (fr < F[0]) {
        for (int k = 0; k < n; k++) xe[k] = c[k] + 2 * (c[k] - w[k]);
        double fe = nmEval(&P, xe);
        memcpy(w, fe < fr ? xe : xr, sizeof(double) * (size_t)n);
        F[n] = fmin(fe, fr);
      } else if (fr < F[n - 1]) {
        memcpy(w, xr, sizeof(double) * (size_t)n);
        F[n] = fr;
      } else {
        int outside = fr < F[n];
        for (int k = 0; k < n; k++) xe[k] = outside ? c[k] + 0.5 * (xr[k] - c[k]) : c[k] + 0.5 * (w[k] - c[k]);
        double fc = nmEval(&P, xe);
        if (fc < (outside ? fr : F[n])) {
          memcpy(w, xe, sizeof(double) * (size_t)n);
          F[n] = fc;
        } else {
          for (int i = 1; i <= n; i++) {
            for (int k = 0; k < n; k++) S[n * i + k] = S[k] + 0.5 * (S[n * i + k] - S[k]);
            F[i] = nmEval(&P, S + n * i);
          }
        }
      }
      int ib = 0;
      for (int i = 1; i <= n; i++) {
        if (F[i] < F[ib]) ib = i;
      }
      if (F[ib] < Jbest) {
        Jbest = F[ib];
        memcpy(best, S + n * ib, sizeof(double) * (size_t)n);
      }
      J = Jbest;
      if (isfinite(a.target) && J <= a.target) {
        reached = P.rollouts;
        reachedTime = tool_now() - t0;
      }
      unpack(&P, best);
      LOG_ITER(J, 0.0);
    }
    free(S);
    free(F);
    free(c);
    free(xr);
    free(xe);
  }
  double seconds = tool_now() - t0;
  fclose(hist);

  // the best design, written back into the MJCF text and recompiled
  double Jfinal = objective(&P, best, NULL);
  unpack(&P, best);
  mjdiff_setParamValues(m, P.s, P.p, P.vals, err, sizeof(err));
  text t = {xml, (size_t)xmlsize};
  int ok = 1;
  for (int b = 1; b < m->nbody && ok; b++) ok = writeElement(&t, m, m0, mjOBJ_BODY, b, err, sizeof(err));
  for (int i = 0; i < m->ngeom && ok; i++) ok = writeElement(&t, m, m0, mjOBJ_GEOM, i, err, sizeof(err));
  for (int i = 0; i < m->nsite && ok; i++) ok = writeElement(&t, m, m0, mjOBJ_SITE, i, err, sizeof(err));
  for (int i = 0; i < m->njnt && ok; i++) ok = writeElement(&t, m, m0, mjOBJ_JOINT, i, err, sizeof(err));
  double recompiled = NAN;
  if (!ok) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
  } else {
    snprintf(path, sizeof(path), "%s.xml", a.out);
    FILE* f = fopen(path, "w");
    if (!f || fwrite(t.s, 1, t.n, f) != t.n) {
      fprintf(stderr, "%s: error: cannot write %s\n", kTool, path);
      ok = 0;
    }
    if (f) fclose(f);
    mjModel* r = tool_loadXMLText(a.model, t.s, (long)t.n, err, sizeof(err));
    if (!r) {
      fprintf(stderr, "%s: error: the written MJCF does not compile: %s\n", kTool, err);
      ok = 0;
    } else {
      recompiled = compareModels(m, r);
      mj_deleteModel(r);
    }
  }
  if (a.codesign || a.controls) {
    snprintf(path, sizeof(path), "%s_ctrl.txt", a.out);
    FILE* f = fopen(path, "w");
    for (int k = 0; f && k < nblock * P.T; k++) {
      if (k && k % P.T == 0) fprintf(f, "\n");  // a blank line between the targets' blocks
      for (int i = 0; i < P.nu; i++) fprintf(f, "%s%.9g", i ? " " : "", P.ctrl[P.nu * k + i]);
      fprintf(f, "\n");
    }
    if (f) fclose(f);
  }

  // report
  snprintf(path, sizeof(path), "%s.json", a.out);
  FILE* f = tool_openOut(kTool, path);
  if (f) {
    char* models[1] = {(char*)a.model};
    tool_jsonHead(f, kTool, models, 1);
    fprintf(f, ",\"task\":");
    tool_jsonString(f, a.task);
    fprintf(f, ",\"method\":");
    tool_jsonString(f, methodName(a.method));
    fprintf(f, ",\"status\":");
    tool_jsonString(f, status);
    fprintf(f, ",\"codesign\":%s,\"steps\":%d,", a.codesign ? "true" : "false", P.T);
    fprintf(f, "\"controller\":");
    tool_jsonString(f, a.policy ? "policy" : "open-loop");
    if (a.policy) {
      fprintf(f, ",\"policy\":");
      tool_jsonString(f, a.policy);
      fprintf(f, ",\"policy_starts\":%d", P.nstart);
    }
    if (P.ntarget) fprintf(f, ",\"targets\":%d,\"target_term\":%d", P.ntarget, P.target_term);
    fprintf(f, ",");
    tool_jsonField(f, "duration", duration);
    fprintf(f, ",\"iterations\":%d,\"rollouts\":%ld,", iter - 1, P.rollouts);
    tool_jsonField(f, "seconds", seconds);
    fprintf(f, ",");
    tool_jsonField(f, "J_initial", J0);
    fprintf(f, ",");
    tool_jsonField(f, "J_best", Jfinal);
    if (isfinite(a.target)) {
      fprintf(f, ",");
      tool_jsonField(f, "target", a.target);
      fprintf(f, ",\"target_rollouts\":%ld,", reached);
      tool_jsonField(f, "target_seconds", reachedTime);
    }
    fprintf(f, ",\"fixed_mass_geoms\":%d,", nfixed);
    tool_jsonField(f, "recompiled_worst_rel", recompiled);
    fprintf(f, ",\"params\":[");
    for (int i = 0; i < np; i++) {
      int k = P.group[i];
      fprintf(f, "%s{\"name\":", i ? "," : "");
      tool_jsonString(f, mjdiff_paramName(P.p, i));
      fprintf(f, ",");
      tool_jsonField(f, "initial", v0[i]);
      fprintf(f, ",");
      tool_jsonField(f, "final", P.vals[i]);
      fprintf(f, ",");
      tool_jsonField(f, "lo", P.lo[k] * P.scale[k]);
      fprintf(f, ",");
      tool_jsonField(f, "hi", P.hi[k] * P.scale[k]);
      if (follows[i] >= 0) {
        fprintf(f, ",\"tied_to\":");
        tool_jsonString(f, mjdiff_paramName(P.p, follows[i]));
      }
      fprintf(f, "}");
    }
    fprintf(f, "]");
    tool_jsonNullNote(f);
    fprintf(f, "}\n");
    tool_closeOut(kTool, path, f);
  }
  if (!a.noplot) {
    char cmd[4000];
    snprintf(cmd, sizeof(cmd),
             "gnuplot -e \"set terminal pngcairo size 800,500; set output '%s.png'; "
             "set datafile separator ','; set key autotitle columnhead; set xlabel 'rollouts'; "
             "set ylabel 'objective J'; set grid; plot '%s.csv' using 2:4 with linespoints "
             "title '%s'\" 2>/dev/null",
             a.out, a.out, methodName(a.method));
    if (system(cmd) != 0 && !a.quiet) fprintf(stderr, "%s: note: no plot (gnuplot failed)\n", kTool);
  }
  if (!a.quiet) {
    printf("J %.6g -> %.6g in %d iterations, %ld rollouts, %.2f s; written MJCF recompiles to %.2g\n",
           J0, Jfinal, iter - 1, P.rollouts, seconds, recompiled);
  }
  mjdiff_freeLearnPolicy(P.pol);
  mjdiff_freeLearner(learner);
  mjdiff_freeMLP(net);
  if (mpol) mj_deleteModel(mpol);
  free(P.starts);
  free(P.goals);
  free(P.targets);
  free(P.gsum);
  mjdiff_freeRollout(P.r);
  mjdiff_freeParams(P.p);
  mjdiff_freeTask(P.task);
  mj_deleteData(P.d);
  mjdiff_freeModel(P.s);
  mj_deleteModel(m);
  mj_deleteModel(m0);
  mj_deleteData(P.dc);
  mj_deleteModel(P.mc);
  free(t.s);
  if (!strcmp(status, "interrupted")) return TOOL_EXIT_INTERRUPTED;
  return ok && !strcmp(status, "done") ? TOOL_EXIT_OK : TOOL_EXIT_RUNTIME;
}
