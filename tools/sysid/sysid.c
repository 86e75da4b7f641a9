// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid: calibrate an MJCF model's physical parameters from recorded trajectories.
//
//   fit       minimise 1/2 sum r^2 over the parameters (and the start states of the shooting
//             windows), r the weighted residuals of residual.h, with Levenberg-Marquardt on the
//             exact Jacobians of the step adjoint (or, as baselines, finite-difference
//             Levenberg-Marquardt and Nelder-Mead); report JSON; write the calibrated MJCF
//   generate  simulate the model with given parameter values and controls, write a noisy
//             recording in the same CSV format; --plant native steps MuJoCo's own mj_step (its
//             hard constraints and solver: a stand-in for a real system) instead of the smooth
//             model, after mj_setConst so that set masses act as a recompiled model's would
//   predict   open-loop prediction error of a model against recordings at chosen horizons
//             (predict.c)
// The fit's defaults (issue 18): windows by continuation (5 steps to 0.1 s); the block solver
// (the normal equations per window, a Schur complement on the parameters: linear in the
// recording's length); standard errors withheld unless the fit converged and is well
// conditioned; exit 0 converged, 3 not converged, 4 poorly conditioned.

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>

#include "guard.h"
#include "hybrid.h"
#include "mlpdyn.h"
#include "predict.h"
#include "residual.h"
#include "sysid.h"
#include "toolutil.h"

static const char* kTool = "mjdiff-sysid";

#define MAXLIST 256

// exit codes beyond toolutil.h's: the fit ran, but did not converge (3), or converged with
// standard errors that cannot be trusted (4: poorly conditioned or singular)
#define SYSID_EXIT_NOT_CONVERGED 3
#define SYSID_EXIT_UNRELIABLE 4

// largest recording --generate writes: numbers in all (time, controls, qpos, qvel, sensors)
#define GENERATE_MAX_VALUES 2e8

typedef struct args_ {
  const char* model;
  const char* data[MAXLIST];
  int ndata;
  const char* param[MAXLIST];  // NAME or NAME=LO:HI
  int nparam;
  const char* prior[MAXLIST];  // NAME=VALUE:SIGMA
  int nprior;
  const char* set[MAXLIST];    // NAME=VALUE (generate, or starting values)
  int nset;
  long window;
  sysidWeights weights;
  mjdiffLsqMethod method;
  long max_iter;
  int solver;                  // mjdiffLsqSolver
  double ftol, xtol;
  const char* out;
  const char* xml;
  int quiet;
  // generate
  const char* generate;
  double duration;
  const char* ctrl;            // random, chirp or a CSV file
  double noise_qpos, noise_qvel, noise_sensor;
  long seed;
  int native;                  // --plant native: MuJoCo's mj_step instead of the smooth step
  // predict
  int predict;
  double horizon[MAXLIST];     // seconds; 0: the whole recording
  int nhorizon;
  // mlp (mlpdyn.c)
  const char* mlp;             // network spec: train a pure network dynamics model
  const char* mlp_out;         // --weights
  long epochs;
  double lr;
  const char* mlp_weights;     // --predict with the network's stepper
  // residual (hybrid.c)
  const char* residual;        // network spec: fit physics + a residual force network
  const char* residual_weights;  // --predict with the hybrid's stepper
  const char* val[MAXLIST];    // --val: validation recordings of --residual (early stopping)
  int nval;
  double lr_param;
} args;

static void usage(void) {
  printf(
      "usage: %s [options] MODEL.xml DATA.csv...       fit parameters to recordings\n"
      "       %s --generate OUT.csv [options] MODEL.xml   write a simulated recording\n"
      "       %s --predict [--horizon S]... [--set NAME=VALUE]... MODEL.xml DATA.csv...\n"
      "                                     open-loop prediction error against recordings\n"
      "       %s --mlp SPEC --weights OUT.npz [options] MODEL.xml DATA.csv...\n"
      "                                     train a pure network model x' = x + f(x, u)\n"
      "       %s --residual SPEC --weights OUT.npz [--param NAME]... MODEL.xml DATA.csv...\n"
      "                                     fit physics + a neural residual force jointly\n\n"
      "Fit physical parameters of MODEL (MuJoCo names, patterns with '*') to recorded\n"
      "trajectories by Levenberg-Marquardt on exact gradients of the smooth model.\n\n"
      "fit options:\n"
      "  --param NAME[=LO:HI]   parameter to fit, e.g. body:box:mass, joint:*:damping (repeat);\n"
      "                         bounds optional (default: lower bound 0 for masses, inertias,\n"
      "                         damping, armature, friction loss, stiffness, friction and\n"
      "                         contact values; none else)\n"
      "  --prior NAME=V:SIGMA   prior: adds the residual (value - V) / SIGMA (repeat)\n"
      "  --set NAME=VALUE       starting value of a parameter (repeat; default: the model's)\n"
      "  --window N             steps per shooting window; window start states are fitted too\n"
      "                         (default: automatic, continuation from 5-step windows to 0.1 s,\n"
      "                         x4 per stage; 0: one window per recording, single shooting,\n"
      "                         which contact-rich or chaotic data rarely survives)\n"
      "  --sigma-qpos S         noise scale of positions, m or rad (default 1e-3)\n"
      "  --sigma-qvel S         noise scale of velocities (default 1e-2)\n"
      "  --sigma-sensor S       noise scale of sensor readings (default 1e-2)\n"
      "  --sigma-cont S         scale of the continuity between windows (default 1e-4)\n"
      "  --method M             lm (exact Jacobians), fd-lm (finite-difference Jacobians,\n"
      "                         one rollout per parameter), nelder-mead (default lm)\n"
      "  --max-iter N           iterations (default 100; nelder-mead: 200 per variable; 0: none,\n"
      "                         the report at the starting values)\n"
      "  --solver S             blocks (lm: normal equations per window, eliminated by a Schur\n"
      "                         complement on the parameters; time and memory linear in the\n"
      "                         recording's length; default) or dense (the m x n Jacobian)\n"
      "  --ftol F, --xtol X     stopping tolerances (default 1e-10, 1e-10)\n"
      "  --out FILE             JSON report to FILE (default: stdout)\n"
      "  --xml FILE             write the calibrated model as MJCF to FILE\n"
      "  --quiet                no progress lines on stderr\n\n"
      "generate options:\n"
      "  --generate OUT.csv     simulate and write a recording instead of fitting\n"
      "  --set NAME=VALUE       true parameter values (repeat)\n"
      "  --duration S           simulated time (default 2)\n"
      "  --ctrl C               random (held 0.1 s), chirp, or a CSV file with ctrl columns\n"
      "                         (default random)\n"
      "  --noise-qpos S, --noise-qvel S, --noise-sensor S\n"
      "                         Gaussian noise added to the recording (default 0)\n"
      "  --seed N               random seed (default 1)\n"
      "  --plant P              smooth (the smooth model's step, default) or native (MuJoCo's\n"
      "                         mj_step with its hard contacts, limits and solver)\n\n"
      "predict options:\n"
      "  --predict              simulate MODEL (a calibrated MJCF from --xml, or --set values)\n"
      "                         open loop from the recorded states under the recorded controls;\n"
      "                         per joint the RMS, end-of-horizon and largest position error\n"
      "                         (table on stdout, JSON with --out)\n"
      "  --horizon S            horizon in seconds, 0 for the whole recording (repeat; default\n"
      "                         0.1, 0.5 and the whole recording)\n"
      "  --mlp-weights W.npz    simulate the network of --mlp instead of MODEL's physics\n"
      "  --residual-weights W.npz  simulate MODEL plus the residual force of --residual\n\n",
      kTool, kTool, kTool, kTool, kTool);
  printf(
      "mlp options (hinge and slide joints only, no activation states):\n"
      "  --mlp SPEC             train x' = x + f(qpos, qvel, ctrl), x = (qpos, qvel), on the\n"
      "                         recordings' one-step differences; SPEC as mlp:64,64 or\n"
      "                         mlp:64,64:relu (tanh by default) or linear\n"
      "  --weights OUT.npz      the trained network (required; numpy.load reads it)\n"
      "  --epochs N             passes over the data, minibatches of 256 (default 300)\n"
      "  --lr LR                Adam's learning rate (default 1e-3)\n"
      "  --seed N               initial weights and minibatch order (default 1)\n\n"
      "residual options (a hybrid, <mjdiff/residual.h>: qfrc_applied = s .* NN(features of\n"
      "qpos, qvel, ctrl)):\n"
      "  --residual SPEC        fit the network (SPEC as --mlp) and the --param parameters\n"
      "                         (none: the network alone) by Adam on exact rollout gradients,\n"
      "                         over windows from the recorded states (--window N steps,\n"
      "                         default 0.2 s); --weights, --epochs (default 100), --lr, --seed\n"
      "                         as --mlp; --xml writes the fitted parameters' model\n"
      "  --lr-param LR          Adam's rate for the parameters, relative (default 1e-2)\n"
      "  --val DATA.csv         validation recording (repeat): its windows' loss after every\n"
      "                         epoch; the best epoch's network and parameters are kept\n\n"
      "  --help                 show this help and exit\n\n"
      "Data format (CSV, header of names): time; ctrl:ACTUATOR; qpos:JOINT and qvel:JOINT\n"
      "(components qpos:JOINT:K for ball and free joints); sensor:SENSOR (sensor:SENSOR:K).\n"
      "Exit codes: 0 converged with reliable standard errors, 3 not converged (report written,\n"
      "standard errors withheld), 4 converged but poorly conditioned (standard errors withheld),\n"
      "1 runtime error, 2 usage error, 130 interrupted (partial report).\n");
}

static double numberArg(int argc, char** argv, int* i, double lo) {
  const char* v = tool_optionValue(kTool, argc, argv, i);
  double x;
  if (!tool_parseDouble(v, &x) || x < lo) {
    tool_usageError(kTool, "%s must be a number >= %g, got '%s'", argv[*i - 1], lo, v);
  }
  return x;
}

static void parseArgs(int argc, char** argv, args* a) {
  memset(a, 0, sizeof(*a));
  a->weights = (sysidWeights){1e-3, 1e-2, 1e-2, 1e-4};
  a->method = MJDIFF_LSQ_LM;
  a->max_iter = -1;
  a->window = -1;
  a->ftol = 1e-10;
  a->xtol = 1e-10;
  a->duration = 2;
  a->ctrl = "random";
  a->seed = 1;
  a->epochs = 0;  // per mode: 300 (--mlp), 100 (--residual)
  a->lr = 1e-3;
  a->lr_param = 1e-2;
  for (int i = 1; i < argc; i++) {
    const char* s = argv[i];
    if (tool_isHelp(s)) {
      usage();
      exit(TOOL_EXIT_OK);
    } else if (!strcmp(s, "--param") || !strcmp(s, "--prior") || !strcmp(s, "--set")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      const char** list = s[2] == 'p' && s[3] == 'a' ? a->param : s[2] == 'p' ? a->prior : a->set;
      int* n = s[2] == 'p' && s[3] == 'a' ? &a->nparam : s[2] == 'p' ? &a->nprior : &a->nset;
      if (*n >= MAXLIST) tool_usageError(kTool, "too many %s options", s);
      list[(*n)++] = v;
    } else if (!strcmp(s, "--window")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!tool_parseInt(v, 0, 1000000000L, &a->window)) {
        tool_usageError(kTool, "--window must be an integer >= 0, got '%s'", v);
      }
    } else if (!strcmp(s, "--sigma-qpos")) {
      a->weights.sigma_qpos = numberArg(argc, argv, &i, 1e-300);
    } else if (!strcmp(s, "--sigma-qvel")) {
      a->weights.sigma_qvel = numberArg(argc, argv, &i, 1e-300);
    } else if (!strcmp(s, "--sigma-sensor")) {
      a->weights.sigma_sensor = numberArg(argc, argv, &i, 1e-300);
    } else if (!strcmp(s, "--sigma-cont")) {
      a->weights.sigma_cont = numberArg(argc, argv, &i, 1e-300);
    } else if (!strcmp(s, "--method")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!strcmp(v, "lm")) {
        a->method = MJDIFF_LSQ_LM;
      } else if (!strcmp(v, "fd-lm")) {
        a->method = MJDIFF_LSQ_LM_FD;
      } else if (!strcmp(v, "nelder-mead")) {
        a->method = MJDIFF_LSQ_NELDER_MEAD;
      } else {
        tool_usageError(kTool, "--method must be lm, fd-lm or nelder-mead, got '%s'", v);
      }
    } else if (!strcmp(s, "--solver")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!strcmp(v, "blocks")) {
        a->solver = MJDIFF_LSQ_AUTO;
      } else if (!strcmp(v, "dense")) {
        a->solver = MJDIFF_LSQ_DENSE;
      } else {
        tool_usageError(kTool, "--solver must be blocks or dense, got '%s'", v);
      }
    } else if (!strcmp(s, "--max-iter")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!tool_parseInt(v, 0, 100000000L, &a->max_iter)) {
        tool_usageError(kTool, "--max-iter must be an integer >= 0, got '%s'", v);
      }
    } else if (!strcmp(s, "--ftol")) {
      a->ftol = numberArg(argc, argv, &i, 0);
    } else if (!strcmp(s, "--xtol")) {
      a->xtol = numberArg(argc, argv, &i, 0);
    } else if (!strcmp(s, "--out")) {
      a->out = tool_outputOption(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--xml")) {
      a->xml = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--quiet")) {
      a->quiet = 1;
    } else if (!strcmp(s, "--predict")) {
      a->predict = 1;
    } else if (!strcmp(s, "--horizon")) {
      if (a->nhorizon >= MAXLIST) tool_usageError(kTool, "too many --horizon options");
      a->horizon[a->nhorizon++] = numberArg(argc, argv, &i, 0);
    } else if (!strcmp(s, "--generate")) {
      a->generate = tool_outputOption(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--duration")) {
      a->duration = numberArg(argc, argv, &i, 1e-9);
    } else if (!strcmp(s, "--ctrl")) {
      a->ctrl = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--noise-qpos")) {
      a->noise_qpos = numberArg(argc, argv, &i, 0);
    } else if (!strcmp(s, "--noise-qvel")) {
      a->noise_qvel = numberArg(argc, argv, &i, 0);
    } else if (!strcmp(s, "--noise-sensor")) {
      a->noise_sensor = numberArg(argc, argv, &i, 0);
    } else if (!strcmp(s, "--plant")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!strcmp(v, "smooth") || !strcmp(v, "native")) {
        a->native = !strcmp(v, "native");
      } else {
        tool_usageError(kTool, "--plant must be smooth or native, got '%s'", v);
      }
    } else if (!strcmp(s, "--seed")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!tool_parseInt(v, 0, 2147483647L, &a->seed)) {
        tool_usageError(kTool, "--seed must be an integer >= 0, got '%s'", v);
      }
    } else if (!strcmp(s, "--mlp")) {
      a->mlp = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--residual")) {
      a->residual = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--val")) {
      if (a->nval >= MAXLIST) tool_usageError(kTool, "too many --val files");
      a->val[a->nval++] = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--residual-weights")) {
      a->residual_weights = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--lr-param")) {
      a->lr_param = tool_doubleOption(kTool, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO,
                                      "a number > 0");
    } else if (!strcmp(s, "--weights")) {
      a->mlp_out = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--mlp-weights")) {
      a->mlp_weights = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--epochs")) {
      a->epochs = tool_intOption(kTool, argc, argv, &i, 1, 100000000L, "an integer >= 1");
    } else if (!strcmp(s, "--lr")) {
      a->lr = tool_doubleOption(kTool, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "a number > 0");
    } else if (s[0] == '-' && s[1]) {
      tool_usageError(kTool, "unknown option '%s'", s);
    } else if (!a->model) {
      a->model = s;
    } else {
      if (a->ndata >= MAXLIST) tool_usageError(kTool, "too many data files");
      a->data[a->ndata++] = s;
    }
  }
  if (!a->model) tool_usageError(kTool, "no model given");
  if (!a->generate && a->ndata == 0) tool_usageError(kTool, "no data file given");
  if (a->predict && a->generate) tool_usageError(kTool, "--predict and --generate exclude each other");
  if (!a->predict && a->nhorizon) tool_usageError(kTool, "--horizon is an option of --predict");
  if (a->mlp && a->nparam) tool_usageError(kTool, "--mlp and --param exclude each other");
  if (a->mlp && (a->predict || a->generate)) {
    tool_usageError(kTool, "--mlp trains; --predict --mlp-weights W.npz simulates the network");
  }
  if (a->mlp && a->residual) tool_usageError(kTool, "--mlp and --residual exclude each other");
  if (a->residual && (a->predict || a->generate)) {
    tool_usageError(kTool, "--residual fits; --predict --residual-weights W.npz simulates it");
  }
  if (a->mlp && !a->mlp_out) tool_usageError(kTool, "--mlp needs --weights OUT.npz");
  if (a->residual && !a->mlp_out) tool_usageError(kTool, "--residual needs --weights OUT.npz");
  if (a->nval && !a->residual) tool_usageError(kTool, "--val is an option of --residual");
  if (!a->mlp && !a->residual && a->mlp_out) {
    tool_usageError(kTool, "--weights is an option of --mlp and --residual");
  }
  if (a->residual_weights && !a->predict) {
    tool_usageError(kTool, "--residual-weights is an option of --predict");
  }
  if (a->residual_weights && a->mlp_weights) {
    tool_usageError(kTool, "--residual-weights and --mlp-weights exclude each other");
  }
  if (!a->epochs) a->epochs = a->residual ? 100 : 300;
  if (a->mlp_weights && !a->predict) {
    tool_usageError(kTool, "--mlp-weights is an option of --predict");
  }
  if (!a->generate && !a->predict && !a->mlp && !a->residual && a->nparam == 0) {
    tool_usageError(kTool, "no --param given");
  }
  if (!a->generate && a->native) tool_usageError(kTool, "--plant is an option of --generate");
}

//---------------------------------- parameters ---------------------------------------------------

// split "NAME=REST" (returns a copy of NAME in buf, REST or NULL)
static const char* splitName(const char* s, char* buf, size_t n) {
  const char* eq = strchr(s, '=');
  size_t len = eq ? (size_t)(eq - s) : strlen(s);
  if (len >= n) len = n - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  return eq ? eq + 1 : NULL;
}

// default lower bound 0 for fields that are physically nonnegative
static int positiveField(const char* name) {
  static const char* fields[] = {":mass", ":inertia", ":damping", ":armature", ":frictionloss",
                                 ":stiffness", ":friction", "contact_", "_speed", ":gear",
                                 "limit_", "eq_", ":dynprm"};
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    if (strstr(name, fields[i])) return 1;
  }
  return 0;
}

// apply NAME=VALUE settings to m, s; returns 0 or -1 (message printed)
static int applySettings(mjModel* m, mjdiffModel* s, const args* a) {
  for (int i = 0; i < a->nset; i++) {
    char name[256];
    const char* v = splitName(a->set[i], name, sizeof(name));
    double x;
    if (!v || !tool_parseDouble(v, &x)) {
      tool_usageError(kTool, "--set needs NAME=VALUE, got '%s'", a->set[i]);
    }
    char err[512];
    const char* names[1] = {name};
    mjdiffParams* p = NULL;
    if (mjdiff_makeParams(m, s, names, 1, &p, err, sizeof(err)) != MJDIFF_OK) {
      fprintf(stderr, "%s: error: --set %s: %s\n", kTool, a->set[i], err);
      return -1;
    }
    int n = mjdiff_paramCount(p);
    double* vals = (double*)malloc(sizeof(double) * (size_t)n);
    for (int k = 0; k < n; k++) vals[k] = x;
    int bad = mjdiff_setParamValues(m, s, p, vals, err, sizeof(err)) != MJDIFF_OK;
    free(vals);
    mjdiff_freeParams(p);
    if (bad) {
      fprintf(stderr, "%s: error: --set %s: %s\n", kTool, a->set[i], err);
      return -1;
    }
  }
  return 0;
}

//---------------------------------- generate -----------------------------------------------------

static unsigned long long gRng;

static double uniform(void) {
  unsigned long long z = (gRng += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double gaussian(void) {
  return sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform());
}

// native step: MuJoCo resets a diverging state itself (warning mjWARN_BADQACC) and carries on;
// a recording must not hide that
static int nativeFinite(const mjModel* m, const mjData* d) {
  if (d->warning[mjWARN_BADQACC].number || d->warning[mjWARN_BADQPOS].number ||
      d->warning[mjWARN_BADQVEL].number) {
    return 0;
  }
  for (int i = 0; i < m->nq; i++) if (!isfinite(d->qpos[i])) return 0;
  for (int i = 0; i < m->nv; i++) if (!isfinite(d->qvel[i])) return 0;
  return 1;
}

static int generate(mjModel* m, mjdiffModel* s, const args* a) {
  char err[1024];
  if (applySettings(m, s, a)) return TOOL_EXIT_RUNTIME;
  double h = m->opt.timestep;
  int nq = m->nq, nv = m->nv, nu = m->nu, ns = m->nsensordata;
  // steps: at most GENERATE_MAX_VALUES numbers in the recording (and an int)
  double steps = floor(a->duration / h + 1e-9);
  if (!(steps >= 1) || (steps + 1) * (double)(nq + nv + nu + ns + 1) > GENERATE_MAX_VALUES) {
    fprintf(stderr,
            "%s: error: --duration %g: %.3g steps of %g s (%d numbers each); a recording has 1 "
            "to %.3g numbers in all\n",
            kTool, a->duration, steps, h, nq + nv + nu + ns + 1, GENERATE_MAX_VALUES);
    return TOOL_EXIT_RUNTIME;
  }
  int T = (int)steps;
  double* ctrl = (double*)tool_callocArray((size_t)T, (size_t)(nu ? nu : 1), sizeof(double));
  double* qpos = (double*)tool_callocArray((size_t)T + 1, (size_t)nq, sizeof(double));
  double* qvel = (double*)tool_callocArray((size_t)T + 1, (size_t)nv, sizeof(double));
  double* sens = (double*)tool_callocArray((size_t)T + 1, (size_t)(ns ? ns : 1), sizeof(double));
  if (!ctrl || !qpos || !qvel || !sens) {
    free(ctrl);
    free(qpos);
    free(qvel);
    free(sens);
    tool_outOfMemory(kTool);
  }
  sysidRecording file;
  memset(&file, 0, sizeof(file));
  int code = TOOL_EXIT_OK;
  gRng = (unsigned long long)a->seed;

  // controls
  int hold = (int)fmax(1, round(0.1 / h));
  int fromFile = strcmp(a->ctrl, "random") && strcmp(a->ctrl, "chirp");
  if (fromFile && sysid_readRecording(m, a->ctrl, &file, err, sizeof(err))) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    code = TOOL_EXIT_RUNTIME;
    fromFile = 0;  // nothing to free
    goto done;
  }
  if (fromFile && sysid_checkControls(m, &file, err, sizeof(err))) {
    fprintf(stderr, "%s: error: --ctrl %s\n", kTool, err);
    code = TOOL_EXIT_RUNTIME;
    goto done;
  }
  for (int i = 0; i < nu; i++) {
    double lo = -1, hi = 1;
    if (m->actuator_ctrllimited[i]) {
      lo = m->actuator_ctrlrange[2 * i];
      hi = m->actuator_ctrlrange[2 * i + 1];
    }
    double u = 0, phase = 6.283185307179586 * uniform();
    for (int k = 0; k < T; k++) {
      if (fromFile) {
        int kk = k < file.T ? k : file.T - 1;
        u = kk >= 0 ? file.ctrl[(size_t)nu * kk + i] : 0;
      } else if (!strcmp(a->ctrl, "chirp")) {
        double t = k * h, f0 = 0.2, f1 = 3;
        double f = f0 + (f1 - f0) * t / (T * h);
        u = 0.5 * (lo + hi) + 0.45 * (hi - lo) * sin(6.283185307179586 * f * t + phase);
      } else if (k % hold == 0) {
        u = lo + (hi - lo) * (0.05 + 0.9 * uniform());
      }
      ctrl[(size_t)nu * k + i] = u;
    }
  }

  // simulate from the initial state (keyframe 0 if present)
  mjData* d = mj_makeData(m);
  // native: the constants a recompiled model would have (invweight0 from set masses, which
  // MuJoCo's constraint regularisation uses); m is this tool's own copy
  if (a->native) mj_setConst(m, d);
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  for (int k = 0; k <= T; k++) {
    if (k < T) mju_copy(d->ctrl, ctrl + (size_t)nu * k, nu);
    else if (T > 0) mju_copy(d->ctrl, ctrl + (size_t)nu * (T - 1), nu);
    if (a->native) {
      mj_forward(m, d);
      if (!nativeFinite(m, d)) {
        fprintf(stderr, "%s: error: native simulation at step %d: state not finite\n", kTool, k);
        code = TOOL_EXIT_RUNTIME;
        break;
      }
    } else if (mjdiff_forward(m, d, s, err, sizeof(err)) != MJDIFF_OK) {
      fprintf(stderr, "%s: error: simulation at step %d: %s\n", kTool, k, err);
      code = TOOL_EXIT_RUNTIME;
      break;
    }
    mju_copy(qpos + (size_t)nq * k, d->qpos, nq);
    mju_copy(qvel + (size_t)nv * k, d->qvel, nv);
    mju_copy(sens + (size_t)ns * k, d->sensordata, ns);
    if (k == T) break;
    if (a->native) {
      mj_step(m, d);
    } else if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) {
      fprintf(stderr, "%s: error: simulation at step %d: %s\n", kTool, k, err);
      code = TOOL_EXIT_RUNTIME;
      break;
    }
  }
  mj_deleteData(d);
  if (code == TOOL_EXIT_OK) {
    for (size_t i = 0; i < (size_t)(T + 1) * nq; i++) qpos[i] += a->noise_qpos * gaussian();
    for (size_t i = 0; i < (size_t)(T + 1) * nv; i++) qvel[i] += a->noise_qvel * gaussian();
    for (size_t i = 0; i < (size_t)(T + 1) * ns; i++) sens[i] += a->noise_sensor * gaussian();
    // noisy quaternions stay unit quaternions
    for (int k = 0; k <= T; k++) mj_normalizeQuat(m, qpos + (size_t)nq * k);
    if (sysid_writeRecording(m, a->generate, T, 0, ctrl, qpos, qvel, sens, err, sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
    } else if (!a->quiet) {
      fprintf(stderr, "%s: wrote %s (%d steps of %g s)\n", kTool, a->generate, T, h);
    }
  }

done:
  if (fromFile) sysid_freeRecording(&file);
  free(ctrl);
  free(qpos);
  free(qvel);
  free(sens);
  return code;
}

//---------------------------------- fit ----------------------------------------------------------

// a number in a fixed-width column, "-" if NaN
static void column(char* buf, int size, int width, const char* fmt, double x) {
  if (isnan(x)) {
    snprintf(buf, (size_t)size, "%*s", width, "-");
  } else {
    snprintf(buf, (size_t)size, fmt, width, x);
  }
}

// the optimiser's progress: one line per iteration on stderr (user: a line prefix, or NULL)
static void printProgress(void* user, const mjdiffLsqProgress* info) {
  const char* prefix = user ? (const char*)user : "";
  if (info->iter == 0) {
    fprintf(stderr, "%s%5s  %14s  %10s  %10s  %8s\n", prefix, "iter", "F", "|step|", "lambda",
            "evals");
  }
  char sF[40], sstep[40], slambda[40];
  column(sF, sizeof(sF), 14, "%*.7e", info->F);
  column(sstep, sizeof(sstep), 10, "%*.3e", info->step);
  column(slambda, sizeof(slambda), 10, "%*.3e", info->lambda);
  fprintf(stderr, "%s%5d  %s  %s  %s  %8d\n", prefix, info->iter, sF, sstep, slambda,
          info->evals);
}

static void jsonNumber(FILE* f, double x) {
  tool_jsonNumberDigits(f, x, 10);  // null if not finite (counted: tool_jsonNullNote)
}

// write the report (one JSON object) to path or stdout; to path.tmp then renamed
static int writeReport(const char* path, const args* a, const mjdiffParams* p, const double* z0,
                       const double* z, const mjdiffLsqResult* res, long rollouts, double wall,
                       int nres, const char* status, const char* xmlNote, const int* stages,
                       int nstage) {
  char tmp[1100];
  FILE* f = stdout;
  if (path) {
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f) {
      fprintf(stderr, "%s: error: cannot write '%s'\n", kTool, tmp);
      return -1;
    }
  }
  static const char* methods[] = {"lm", "fd-lm", "nelder-mead"};
  tool_jsonResetNulls();
  fprintf(f, "{\"tool\": \"%s\", \"version\": \"%s\", \"model\": ", kTool, mjdiff_versionString());
  tool_jsonString(f, a->model);
  fprintf(f, ", \"args\": {\"data\": [");
  for (int i = 0; i < a->ndata; i++) {
    if (i) fprintf(f, ", ");
    tool_jsonString(f, a->data[i]);
  }
  char win[32];
  snprintf(win, sizeof(win), a->window >= 0 ? "%ld" : "\"auto\"", a->window);
  fprintf(f, "], \"method\": \"%s\", \"window\": %s, \"sigma_qpos\": %g, \"sigma_qvel\": %g, "
             "\"sigma_sensor\": %g}, \"status\": ", methods[a->method], win,
          a->weights.sigma_qpos, a->weights.sigma_qvel, a->weights.sigma_sensor);
  tool_jsonString(f, status);
  int reliable = res && res->reliable;
  fprintf(f, ", \"converged\": %s, \"reliable\": %s, \"windows\": [",
          res && res->converged ? "true" : "false", reliable ? "true" : "false");
  for (int i = 0; i < nstage; i++) fprintf(f, "%s%d", i ? ", " : "", stages[i]);
  fprintf(f, "], \"metrics\": {\"conditioning\": ");
  jsonNumber(f, res ? res->cond : NAN);
  fprintf(f, ", \"loss_before\": ");
  jsonNumber(f, res ? res->F0 : NAN);
  fprintf(f, ", ");
  tool_jsonKey(f, "loss_after");
  jsonNumber(f, res ? res->F : NAN);
  fprintf(f, ", \"iterations\": %d, \"evaluations\": %d, \"jacobians\": %d, \"rollouts\": %ld, "
             "\"residuals\": %d, \"wall_s\": %.6g, \"xml\": ",
          res ? res->iterations : 0, res ? res->evaluations : 0, res ? res->jacobians : 0,
          rollouts, nres, wall);
  tool_jsonString(f, xmlNote);
  fprintf(f, ", \"parameters\": [");
  int np = mjdiff_paramCount(p);
  for (int i = 0; i < np; i++) {
    fprintf(f, "%s{\"name\": ", i ? ", " : "");
    tool_jsonString(f, mjdiff_paramName(p, i));
    fprintf(f, ", ");
    tool_jsonKey(f, "initial");
    jsonNumber(f, z0[i]);
    fprintf(f, ", ");
    tool_jsonKey(f, "fitted");
    jsonNumber(f, z[i]);
    fprintf(f, ", ");
    double se = res && res->stderr_z ? res->stderr_z[i] : NAN;
    if (reliable) {
      tool_jsonKey(f, "stderr");
      jsonNumber(f, se);
    } else {
      // withheld: an unconverged or poorly conditioned fit has no confident error bars
      fprintf(f, "\"stderr\": null, ");
      tool_jsonKey(f, "stderr_unreliable");
      jsonNumber(f, se);
    }
    fprintf(f, "}");
  }
  fprintf(f, "]}, \"series\": {}");
  tool_jsonNullNote(f);
  fprintf(f, "}\n");
  if (path) {
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
      remove(tmp);
      fprintf(stderr, "%s: error: cannot write '%s'\n", kTool, path);
      return -1;
    }
  }
  return 0;
}

// the smooth model's fitted values live in <custom> numerics: update those the model has
static int writeNumerics(mjModel* m, const mjdiffModel* s) {
  int missing = 0;
  for (int i = 0; i < m->nnumeric; i++) {
    const char* name = m->names + m->name_numericadr[i];
    if (strncmp(name, "mjdiff_", 7) || !strcmp(name, "mjdiff_enable")) continue;
    mjtNum v;
    if (mjdiff_getParam(s, name + 7, &v, NULL, 0) == MJDIFF_OK && m->numeric_size[i] == 1) {
      m->numeric_data[m->numeric_adr[i]] = v;
    } else {
      missing++;
    }
  }
  return missing;
}

// growing text buffer
typedef struct text_ {
  char* s;
  size_t len, cap;
  int bad;
} text;

static void textAppend(text* t, const char* s, size_t n) {
  if (t->bad) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = 2 * (t->len + n + 1);
    char* s2 = (char*)realloc(t->s, cap);
    if (!s2) {
      t->bad = 1;
      return;
    }
    t->s = s2;
    t->cap = cap;
  }
  memcpy(t->s + t->len, s, n);
  t->len += n;
  t->s[t->len] = 0;
}

// body id of a fitted body parameter ("body:NAME:mass", ":inertia[k]", ":ipos[k]"), or -1
static int paramBody(const mjModel* m, const char* pname) {
  if (strncmp(pname, "body:", 5)) return -1;
  const char* colon = strrchr(pname + 5, ':');
  if (!colon) return -1;
  char name[256];
  size_t len = (size_t)(colon - (pname + 5));
  if (len >= sizeof(name)) return -1;
  memcpy(name, pname + 5, len);
  name[len] = 0;
  return mj_name2id(m, mjOBJ_BODY, name);
}

// MuJoCo 2.2's mj_saveLastXML writes no <inertial> for bodies whose inertia came from their
// geoms, so fitted masses, inertias and centers of mass would be lost: give each fitted body an
// explicit <inertial> (replacing one that follows its opening tag) and turn inertiafromgeom="true"
// (which would ignore it) into "auto". Rewrites the file at path; returns 0 or -1.
static int writeInertials(const mjModel* m, const mjdiffParams* p, const char* path) {
  int np = mjdiff_paramCount(p), any = 0;
  for (int i = 0; i < np; i++) any |= paramBody(m, mjdiff_paramName(p, i)) > 0;
  if (!any) return 0;
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  text in = {0}, out = {0};
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof(buf), f)) > 0) textAppend(&in, buf, got);
  int bad = ferror(f) || in.bad || !in.s;
  fclose(f);
  const char* pos = in.s;
  while (!bad && *pos) {
    const char* tag = strstr(pos, "<body ");
    const char* end = tag ? strchr(tag, '>') : NULL;
    if (!tag || !end) {
      textAppend(&out, pos, strlen(pos));
      break;
    }
    // the body's name attribute, and whether one of its parameters was fitted
    int id = -1;
    const char* na = strstr(tag, " name=\"");
    if (na && na < end) {
      const char* q = strchr(na + 7, '"');
      char name[256];
      if (q && q < end && (size_t)(q - (na + 7)) < sizeof(name)) {
        memcpy(name, na + 7, (size_t)(q - (na + 7)));
        name[q - (na + 7)] = 0;
        int b = mj_name2id(m, mjOBJ_BODY, name);
        for (int i = 0; i < np && b > 0 && id < 0; i++) {
          if (paramBody(m, mjdiff_paramName(p, i)) == b) id = b;
        }
      }
    }
    int closed = end > tag && end[-1] == '/';
    textAppend(&out, pos, (size_t)(end - pos) - (id >= 0 && closed));
    textAppend(&out, ">", 1);
    pos = end + 1;
    if (id < 0) continue;
    // indentation: that of the body's line plus 2
    const char* line = tag;
    while (line > in.s && line[-1] != '\n') line--;
    char el[1024];
    int ind = (int)(tag - line) + 2;
    const double* ip = m->body_ipos + 3 * id;
    const double* iq = m->body_iquat + 4 * id;
    const double* in3 = m->body_inertia + 3 * id;
    snprintf(el, sizeof(el),
             "\n%*s<inertial pos=\"%.17g %.17g %.17g\" quat=\"%.17g %.17g %.17g %.17g\" "
             "mass=\"%.17g\" diaginertia=\"%.17g %.17g %.17g\"/>",
             ind, "", ip[0], ip[1], ip[2], iq[0], iq[1], iq[2], iq[3], m->body_mass[id], in3[0],
             in3[1], in3[2]);
    textAppend(&out, el, strlen(el));
    if (closed) {
      snprintf(el, sizeof(el), "\n%*s</body>", ind - 2, "");
      textAppend(&out, el, strlen(el));
      continue;
    }
    // drop an <inertial .../> the writer put first
    const char* next = pos;
    while (*next == ' ' || *next == '\n' || *next == '\r' || *next == '\t') next++;
    if (!strncmp(next, "<inertial", 9)) {
      const char* e2 = strstr(next, "/>");
      if (e2) pos = e2 + 2;
    }
  }
  bad |= out.bad || !out.s;
  if (!bad) {
    // inertiafromgeom="true" would override the explicit <inertial> elements
    char* ifg;
    while ((ifg = strstr(out.s, "inertiafromgeom=\"true\"")) != NULL) memcpy(ifg + 17, "auto", 4);
    f = fopen(path, "wb");
    bad = !f;
    if (f) {
      bad |= fwrite(out.s, 1, out.len, f) != out.len;
      bad |= fclose(f) != 0;
    }
  }
  free(in.s);
  free(out.s);
  return bad ? -1 : 0;
}

static int writeXml(mjModel* m, const mjdiffParams* p, const char* path, char* note, size_t n) {
  char tmp[1100], err[512] = "";
  snprintf(tmp, sizeof(tmp), "%s.tmp.xml", path);
  int bad = !mj_saveLastXML(tmp, m, err, sizeof(err));
  if (!bad && writeInertials(m, p, tmp)) {
    bad = 1;
    snprintf(err, sizeof(err), "cannot rewrite the body inertias");
  }
  if (bad || rename(tmp, path)) {
    remove(tmp);
    snprintf(note, n, "failed: %s", err[0] ? err : "cannot write");
    return -1;
  }
  snprintf(note, n, "%s", path);
  return 0;
}

// bounds of the selected parameters (lo, hi: np each): --param NAME=LO:HI, else a lower bound 0
// for the fields that must not be negative, else none
static void paramBounds(const args* a, const mjdiffParams* p, double* lo, double* hi) {
  int np = mjdiff_paramCount(p);
  for (int k = 0; k < np; k++) {
    lo[k] = -INFINITY;
    hi[k] = INFINITY;
    const char* pname = mjdiff_paramName(p, k);
    if (positiveField(pname)) lo[k] = 0;
    for (int i = 0; i < a->nparam; i++) {
      char name[256];
      const char* rest = splitName(a->param[i], name, sizeof(name));
      if (!rest) continue;
      double l, u;
      char lb[64] = "";
      const char* colon = strchr(rest, ':');
      if (colon && (size_t)(colon - rest) < sizeof(lb)) {
        memcpy(lb, rest, (size_t)(colon - rest));
        lb[colon - rest] = 0;
      }
      if (!colon || !tool_parseDouble(lb, &l) || !tool_parseDouble(colon + 1, &u) || l >= u) {
        tool_usageError(kTool, "--param bounds need NAME=LO:HI with LO < HI, got '%s'",
                        a->param[i]);
      }
      // apply to the parameters this option selected (same prefix)
      if (!strncmp(pname, name, strlen(name)) || strchr(name, '*')) {
        lo[k] = l;
        hi[k] = u;
      }
    }
  }
}

// the parameters of the --param options (their names without bounds); 0, or -1 (printed)
static int selectParams(const mjModel* m, const mjdiffModel* s, const args* a, mjdiffParams** p) {
  char names[MAXLIST][256], err[1024];
  const char* nameptr[MAXLIST];
  for (int i = 0; i < a->nparam; i++) {
    splitName(a->param[i], names[i], sizeof(names[i]));
    nameptr[i] = names[i];
  }
  if (mjdiff_makeParams(m, s, nameptr, a->nparam, p, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return -1;
  }
  return 0;
}

static int fit(mjModel* m, mjdiffModel* s, const args* a) {
  char err[1024];
  double t0 = tool_now();
  if (applySettings(m, s, a)) return TOOL_EXIT_RUNTIME;

  // parameters and bounds
  mjdiffParams* p = NULL;
  if (selectParams(m, s, a, &p)) return TOOL_EXIT_RUNTIME;
  int np = mjdiff_paramCount(p);

  // recordings
  sysidRecording rec[MAXLIST];
  memset(rec, 0, sizeof(rec));
  int code = TOOL_EXIT_OK, nrec = 0;
  sysidModel* sm = NULL;
  double *z = NULL, *z0 = NULL, *lo = NULL, *hi = NULL, *prior = NULL, *psig = NULL;
  for (int i = 0; i < a->ndata; i++, nrec++) {
    if (sysid_readRecording(m, a->data[i], rec + i, err, sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
      goto done;
    }
    if (sysid_checkControls(m, rec + i, err, sizeof(err))) {
      nrec++;  // read: freed below
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
      goto done;
    }
  }

  // priors
  if (a->nprior) {
    prior = (double*)calloc((size_t)np, sizeof(double));
    psig = (double*)calloc((size_t)np, sizeof(double));
    for (int i = 0; i < a->nprior; i++) {
      char name[256];
      const char* rest = splitName(a->prior[i], name, sizeof(name));
      const char* colon = rest ? strchr(rest, ':') : NULL;
      char vbuf[64] = "";
      double v, sg;
      if (colon && (size_t)(colon - rest) < sizeof(vbuf)) {
        memcpy(vbuf, rest, (size_t)(colon - rest));
        vbuf[colon - rest] = 0;
      }
      if (!colon || !tool_parseDouble(vbuf, &v) || !tool_parseDouble(colon + 1, &sg) || sg <= 0) {
        tool_usageError(kTool, "--prior needs NAME=VALUE:SIGMA with SIGMA > 0, got '%s'",
                        a->prior[i]);
      }
      int found = 0;
      for (int k = 0; k < np; k++) {
        if (!strcmp(mjdiff_paramName(p, k), name) ||
            !strncmp(mjdiff_paramName(p, k), name, strlen(name))) {
          prior[k] = v;
          psig[k] = sg;
          found = 1;
        }
      }
      if (!found) {
        fprintf(stderr, "%s: error: --prior %s: no fitted parameter named '%s'\n", kTool,
                a->prior[i], name);
        code = TOOL_EXIT_RUNTIME;
        goto done;
      }
    }
  }

  // windows: --window N, or automatic: continuation from short windows (5 steps, where a wrong
  // start is still near-linear) to 0.1 s, x4 per stage, each stage starting from the last's
  // parameters (and reference states simulated with them); the last stage's fit is reported
  int stages[16], nstage = 0, minT = rec[0].T;
  for (int i = 1; i < nrec; i++) minT = rec[i].T < minT ? rec[i].T : minT;
  if (a->window >= 0) {
    stages[nstage++] = (int)a->window;
  } else {
    int target = (int)fmax(1, round(0.1 / m->opt.timestep));
    if (target > minT && minT >= 1) target = minT;
    for (int L = 5; L < target && nstage < 14; L *= 4) stages[nstage++] = L;
    stages[nstage++] = target;
  }
  mjdiffLsqResult res;
  memset(&res, 0, sizeof(res));
  long total_rollouts = 0;
  int total_iter = 0, total_eval = 0, total_jac = 0, n = 0;
  double F0_first = NAN;
  for (int st = 0; st < nstage; st++) {
    int window = stages[st];
    if (st > 0) {
      // the previous stage's parameter values on the model
      if (mjdiff_setParamValues(m, s, p, z, err, sizeof(err)) != MJDIFF_OK) {
        fprintf(stderr, "%s: error: stage %d: %s\n", kTool, st + 1, err);
        code = TOOL_EXIT_RUNTIME;
        goto done;
      }
      total_rollouts += sysid_rollouts(sm);
      sysid_freeModel(sm);
      mjdiff_freeLsqResult(&res);
      free(z);
      free(lo);
      free(hi);
      z = lo = hi = NULL;
    }
    sm = sysid_makeModel(m, s, p, rec, nrec, window, &a->weights, prior, psig, err, sizeof(err));
    if (!sm) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
      mjdiff_freeLsqResult(&res);
      goto done;
    }
    n = sysid_nvar(sm);
    z = (double*)calloc((size_t)n, sizeof(double));
    lo = (double*)malloc(sizeof(double) * (size_t)n);
    hi = (double*)malloc(sizeof(double) * (size_t)n);
    if (!z || !lo || !hi) tool_outOfMemory(kTool);
    sysid_initialVariables(sm, z);
    if (st == 0) {
      z0 = (double*)calloc((size_t)np + 1, sizeof(double));
      memcpy(z0, z, sizeof(double) * (size_t)np);
    }
    for (int k = 0; k < n; k++) {
      lo[k] = -INFINITY;
      hi[k] = INFINITY;
    }
    paramBounds(a, p, lo, hi);

    char prefix[64] = "";
    if (nstage > 1) snprintf(prefix, sizeof(prefix), "[window %d] ", window);
    if (!a->quiet) {
      fprintf(stderr, "%s: %s%d parameters, %d recordings, %d windows of %d steps, %d variables, "
              "%d residuals\n", kTool, prefix, np, nrec, sysid_nwin(sm), window, n,
              sysid_nres(sm));
    }
    tool_catchInterrupt();
    mjdiffLsqProblem prob = {n,  sysid_nres(sm), lo,         hi, sysid_residual, sm,
                             np, sysid_nwin(sm), sysid_ndx(sm), sysid_normal};
    mjdiffLsqOptions opt;
    mjdiff_defaultLsqOptions(&opt);
    opt.method = a->method;
    opt.solver = a->solver;
    if (a->max_iter >= 0) opt.max_iter = (int)a->max_iter;
    opt.ftol = a->ftol;
    opt.xtol = a->xtol;
    opt.progress = a->quiet ? NULL : printProgress;
    opt.progress_user = prefix;
    opt.cancel = tool_interruptFlag();
    char lsq_err[500];
    mjdiffStatus lst = mjdiff_lsqSolve(&prob, &opt, z, &res, lsq_err, sizeof(lsq_err));
    if (lst == MJDIFF_ERR_NONFINITE) {
      const char* why = sysid_lastError(sm);
      fprintf(stderr, "%s: error: the residuals cannot be evaluated at the starting values%s%s\n",
              kTool, why[0] ? ": " : "", why);
      code = TOOL_EXIT_RUNTIME;
      goto done;
    } else if (lst != MJDIFF_OK) {
      fprintf(stderr, "%s: error: %s\n", kTool, lsq_err);
      code = TOOL_EXIT_RUNTIME;
      goto done;
    }
    if (st == 0) F0_first = res.F0;
    total_iter += res.iterations;
    total_eval += res.evaluations;
    total_jac += res.jacobians;
    if (!a->quiet && nstage > 1) {
      fprintf(stderr, "%s: %s%s after %d iterations, loss %.6g -> %.6g\n", kTool, prefix,
              res.status, res.iterations, res.F0, res.F);
    }
    if (tool_interrupted() || !strcmp(res.status, "interrupted")) break;
  }
  total_rollouts += sysid_rollouts(sm);
  res.F0 = F0_first;  // the loss before: the first stage's, at the starting values
  res.iterations = total_iter;
  res.evaluations = total_eval;
  res.jacobians = total_jac;
  int interrupted = tool_interrupted() || !strcmp(res.status, "interrupted");

  // calibrated model: fitted values on m (and the smooth model's numerics), then MJCF
  char xmlNote[1200] = "not requested";
  if (mjdiff_setParamValues(m, s, p, z, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: fitted values rejected: %s\n", kTool, err);
    code = TOOL_EXIT_RUNTIME;
  } else if (a->xml && !interrupted) {
    int missing = writeNumerics(m, s);
    if (writeXml(m, p, a->xml, xmlNote, sizeof(xmlNote))) {
      fprintf(stderr, "%s: error: writing %s: %s\n", kTool, a->xml, xmlNote);
      code = TOOL_EXIT_RUNTIME;
    } else if (missing) {
      fprintf(stderr, "%s: warning: %d smooth-model values are not in the MJCF's <custom>\n",
              kTool, missing);
    }
  }
  double wall = tool_now() - t0;
  if (writeReport(a->out, a, p, z0, z, &res, total_rollouts, wall, sysid_nres(sm),
                  interrupted ? "interrupted" : res.status, xmlNote, stages, nstage)) {
    code = TOOL_EXIT_RUNTIME;
  }
  if (!a->quiet) {
    fprintf(stderr, "%s: %s after %d iterations, loss %.6g -> %.6g, %ld rollouts, %.3f s\n", kTool,
            res.status, res.iterations, res.F0, res.F, total_rollouts, wall);
  }
  if (!res.reliable && !interrupted) {
    fprintf(stderr, "%s: warning: %s: standard errors withheld (report: stderr null, "
            "stderr_unreliable)\n", kTool,
            !res.converged ? "the fit has not converged"
            : isfinite(res.cond) && res.cond > 0 ? "the fit is poorly conditioned"
                                                 : "the Gauss-Newton Hessian is singular");
  }
  if (interrupted && code == TOOL_EXIT_OK) code = TOOL_EXIT_INTERRUPTED;
  if (code == TOOL_EXIT_OK && !res.converged) code = SYSID_EXIT_NOT_CONVERGED;
  if (code == TOOL_EXIT_OK && !res.reliable) code = SYSID_EXIT_UNRELIABLE;
  mjdiff_freeLsqResult(&res);

done:
  sysid_freeModel(sm);
  for (int i = 0; i < nrec; i++) sysid_freeRecording(rec + i);
  free(z);
  free(z0);
  free(lo);
  free(hi);
  free(prior);
  free(psig);
  mjdiff_freeParams(p);
  return code;
}

// read the recordings of the files path (n) into rec (*nrec read, to be freed by the caller), each
// with every control column and at least one step; TOOL_EXIT_OK or TOOL_EXIT_RUNTIME (printed)
static int readRecordings(const mjModel* m, const char* const* path, int n, sysidRecording* rec,
                          int* nrec) {
  char err[1024];
  memset(rec, 0, sizeof(sysidRecording) * MAXLIST);
  *nrec = 0;
  for (int i = 0; i < n; i++) {
    if (sysid_readRecording(m, path[i], rec + *nrec, err, sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      return TOOL_EXIT_RUNTIME;
    }
    (*nrec)++;
    if (sysid_checkControls(m, rec + *nrec - 1, err, sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      return TOOL_EXIT_RUNTIME;
    }
    if (rec[*nrec - 1].T < 1) {
      fprintf(stderr, "%s: error: %s: less than one timestep of samples\n", kTool, path[i]);
      return TOOL_EXIT_RUNTIME;
    }
  }
  return TOOL_EXIT_OK;
}

static int predict(mjModel* m, mjdiffModel* s, const args* a) {
  char err[1024];
  if (applySettings(m, s, a)) return TOOL_EXIT_RUNTIME;
  double hdef[3] = {0.1, 0.5, 0};
  const double* hz = a->nhorizon ? a->horizon : hdef;
  int nh = a->nhorizon ? a->nhorizon : 3;
  sysidRecording rec[MAXLIST];
  int nrec = 0;
  int code = readRecordings(m, a->data, a->ndata, rec, &nrec);
  char tmp[1100];
  FILE* f = NULL;
  if (code == TOOL_EXIT_OK && a->out) {
    snprintf(tmp, sizeof(tmp), "%s.tmp", a->out);
    f = fopen(tmp, "w");
    if (!f) {
      fprintf(stderr, "%s: error: cannot write '%s'\n", kTool, tmp);
      code = TOOL_EXIT_RUNTIME;
    }
  }
  if (code == TOOL_EXIT_OK) {
    if (f) {
      tool_jsonResetNulls();
      fprintf(f, "{\"tool\": \"%s\", \"version\": \"%s\", \"mode\": \"predict\", \"model\": ",
              kTool, mjdiff_versionString());
      tool_jsonString(f, a->model);
      fprintf(f, ", \"args\": {\"data\": [");
      for (int i = 0; i < a->ndata; i++) {
        if (i) fprintf(f, ", ");
        tool_jsonString(f, a->data[i]);
      }
      fprintf(f, "]}, \"status\": \"ok\", \"metrics\": {\"horizons\": ");
    }
    sysidStepper st = {NULL, NULL};
    if (a->mlp_weights && sysid_mlpMakeStepper(m, a->mlp_weights, &st, err, sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
    } else if (a->residual_weights &&
               sysid_hybridMakeStepper(m, s, a->residual_weights, &st, err, sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
    } else if (sysid_predict(m, s, rec, nrec, hz, nh, st.step ? &st : NULL, f, stdout, err,
                             sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
    }
    if (a->mlp_weights) sysid_mlpFreeStepper(&st);
    if (a->residual_weights) sysid_hybridFreeStepper(&st);
    if (f) {
      fprintf(f, "}, \"series\": {}");
      tool_jsonNullNote(f);
      fprintf(f, "}\n");
      int bad = ferror(f);
      bad |= fclose(f) != 0;
      if (code != TOOL_EXIT_OK || bad || rename(tmp, a->out)) {
        remove(tmp);
        if (code == TOOL_EXIT_OK) {
          fprintf(stderr, "%s: error: cannot write '%s'\n", kTool, a->out);
          code = TOOL_EXIT_RUNTIME;
        }
      }
    }
  }
  for (int i = 0; i < nrec; i++) sysid_freeRecording(rec + i);
  return code;
}

// --residual: the hybrid fit (hybrid.c), the fitted parameters on stdout (JSON with --out) and
// as MJCF with --xml
static int hybrid(mjModel* m, mjdiffModel* s, const args* a) {
  char err[1024];
  if (applySettings(m, s, a)) return TOOL_EXIT_RUNTIME;
  mjdiffParams* p = NULL;
  if (a->nparam && selectParams(m, s, a, &p)) return TOOL_EXIT_RUNTIME;
  int np = p ? mjdiff_paramCount(p) : 0;
  double* lo = (double*)calloc((size_t)np + 1, sizeof(double));
  double* hi = (double*)calloc((size_t)np + 1, sizeof(double));
  double* pv = (double*)calloc((size_t)np + 1, sizeof(double));
  double* pv0 = (double*)calloc((size_t)np + 1, sizeof(double));
  if (!lo || !hi || !pv || !pv0) tool_outOfMemory(kTool);
  if (p) {
    paramBounds(a, p, lo, hi);
    mjdiff_getParamValues(m, s, p, pv0);
  }
  sysidRecording rec[MAXLIST], val[MAXLIST];
  int nrec = 0, nval = 0;
  int code = readRecordings(m, a->data, a->ndata, rec, &nrec);
  if (code == TOOL_EXIT_OK) code = readRecordings(m, a->val, a->nval, val, &nval);
  sysidHybridOptions o;
  o.spec = a->residual;
  o.epochs = (int)a->epochs;
  o.window = a->window > 0 ? (int)a->window : (int)fmax(1, round(0.2 / m->opt.timestep));
  o.batch = 8;
  o.lr = a->lr;
  o.lr_param = a->lr_param;
  o.sigma_qpos = a->weights.sigma_qpos;
  o.sigma_qvel = a->weights.sigma_qvel;
  o.seed = (uint64_t)a->seed;
  o.progress = a->quiet ? NULL : stderr;
  double loss = NAN;
  int stopped = 0;
  if (code == TOOL_EXIT_OK) {
    tool_catchInterrupt();
    if (sysid_hybridFit(m, s, p, lo, hi, rec, nrec, val, nval, &o, a->mlp_out, pv, &loss,
                        &stopped, err, sizeof(err))) {
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
    }
  }
  if (code == TOOL_EXIT_OK) {
    printf("%-32s  %14s  %14s\n", "parameter", "start", "fitted");
    for (int j = 0; j < np; j++) {
      printf("%-32s  %14.6g  %14.6g\n", mjdiff_paramName(p, j), pv0[j], pv[j]);
    }
    printf("final %sloss %.6e (per measured coordinate, noise units), network -> %s\n",
           nval ? "validation " : "", loss, a->mlp_out);
    if (a->xml && p) {
      char note[600] = "";
      if (writeXml(m, p, a->xml, note, sizeof(note))) {
        fprintf(stderr, "%s: error: cannot write '%s'%s\n", kTool, a->xml, note);
        code = TOOL_EXIT_RUNTIME;
      }
    }
    if (code == TOOL_EXIT_OK && a->out) {
      char tmp[1100];
      snprintf(tmp, sizeof(tmp), "%s.tmp", a->out);
      FILE* f = fopen(tmp, "w");
      int bad = !f;
      if (f) {
        tool_jsonResetNulls();
        fprintf(f, "{\"tool\": \"%s\", \"version\": \"%s\", \"mode\": \"residual\", \"model\": ",
                kTool, mjdiff_versionString());
        tool_jsonString(f, a->model);
        fprintf(f, ", \"args\": {\"network\": ");
        tool_jsonString(f, a->residual);
        fprintf(f, ", \"weights\": ");
        tool_jsonString(f, a->mlp_out);
        fprintf(f, ", \"epochs\": %d, \"window\": %d}, \"status\": \"%s\", \"metrics\": {",
                o.epochs, o.window, stopped ? "interrupted" : "ok");
        tool_jsonField(f, "loss", loss);
        fprintf(f, ", \"params\": [");
        for (int j = 0; j < np; j++) {
          fprintf(f, "%s{\"name\": ", j ? ", " : "");
          tool_jsonString(f, mjdiff_paramName(p, j));
          fprintf(f, ", ");
          tool_jsonField(f, "start", pv0[j]);
          fprintf(f, ", ");
          tool_jsonField(f, "value", pv[j]);
          fprintf(f, "}");
        }
        fprintf(f, "]}, \"series\": {}");
        tool_jsonNullNote(f);
        fprintf(f, "}\n");
        bad = ferror(f);
        bad |= fclose(f) != 0;
      }
      if (bad || rename(tmp, a->out)) {
        remove(tmp);
        fprintf(stderr, "%s: error: cannot write '%s'\n", kTool, a->out);
        code = TOOL_EXIT_RUNTIME;
      }
    }
  }
  if (code == TOOL_EXIT_OK && stopped) code = TOOL_EXIT_INTERRUPTED;
  for (int i = 0; i < nrec; i++) sysid_freeRecording(rec + i);
  for (int i = 0; i < nval; i++) sysid_freeRecording(val + i);
  free(lo);
  free(hi);
  free(pv);
  free(pv0);
  mjdiff_freeParams(p);
  return code;
}

int main(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
  tool_catchWarnings(kTool);
  char err[1024] = "";
  mjModel* m = tool_loadModel(a.model, err, sizeof(err));
  if (!m) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    return TOOL_EXIT_RUNTIME;
  }
  mjdiffModel* s = NULL;
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s: %s\n", kTool, a.model, err);
    mj_deleteModel(m);
    return TOOL_EXIT_RUNTIME;
  }
  int code;
  if (a.residual) {
    code = hybrid(m, s, &a);
  } else if (a.mlp) {
    sysidMLPOptions mo = {a.mlp, (int)a.epochs, a.lr, (uint64_t)a.seed, a.quiet ? NULL : stderr};
    sysidRecording rec[MAXLIST];
    int nrec = 0;
    if (sysid_mlpCheckModel(m, err, sizeof(err))) {  // before the recordings, as training
      fprintf(stderr, "%s: error: %s\n", kTool, err);
      code = TOOL_EXIT_RUNTIME;
    } else {
      code = readRecordings(m, a.data, a.ndata, rec, &nrec);
      if (code == TOOL_EXIT_OK && sysid_mlpTrain(m, rec, nrec, &mo, a.mlp_out, err, sizeof(err))) {
        fprintf(stderr, "%s: error: %s\n", kTool, err);
        code = TOOL_EXIT_RUNTIME;
      }
    }
    for (int i = 0; i < nrec; i++) sysid_freeRecording(rec + i);
  } else {
    code = a.generate ? generate(m, s, &a) : a.predict ? predict(m, s, &a) : fit(m, s, &a);
  }
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return code;
}
