// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc: model predictive control on the smooth model.
//   mjdiff-mpc [options] MODEL.xml         one closed loop (optionally in the viewer)
//   mjdiff-mpc bench [options] [MODEL...]  tasks x planners x plants x seeds at equal budget:
//                                          markdown table, CSV, JSON and a gnuplot chart
// The planner plans on the smooth model; the plant is the smooth model itself or MuJoCo's native
// step on the plain model (hard contacts: the model mismatch a real robot would show).

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mjdiff/mjdiff.h>

#include "loop.h"
#include "mpc.h"
#include "planner_internal.h"
#include "benchutil.h"
#include "toolutil.h"

#define TOOL "mjdiff-mpc"
#define NPLANNER 5
#define NPLANT 2

static const char* kPlannerName[NPLANNER] = {"gradient", "ilqr", "sampling", "cem", "mppi"};
static const char* kPlantName[NPLANT] = {"smooth", "native"};
static const char* kPlannerColor[NPLANNER] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                              "#ff7f0e"};

// default tasks of the benchmark, found in the model directory
static const char* kBenchModels[] = {"cartpole", "acrobot", "arm_box", "hopper", "cheetah"};
#define NBENCHMODEL ((int)(sizeof(kBenchModels) / sizeof(kBenchModels[0])))

//---------------------------------- shared --------------------------------------------------------

static int parsePlanner(const char* s) {
  for (int i = 0; i < NPLANNER; i++) {
    if (!strcmp(s, kPlannerName[i])) return i;
  }
  return -1;
}

static int parsePlant(const char* s) {
  for (int i = 0; i < NPLANT; i++) {
    if (!strcmp(s, kPlantName[i])) return i;
  }
  return -1;
}

static void jsonNumber(FILE* f, double x) {
  tool_jsonNumberDigits(f, x, 9);  // null if not finite (counted: tool_jsonNullNote)
}

// MODEL.xml -> MODEL.task (any other name: MODEL + .task)
static char* taskPath(const char* model) {
  size_t n = strlen(model);
  char* p = malloc(n + 6);
  if (!p) return NULL;
  memcpy(p, model, n + 1);
  if (n > 4 && (!strcmp(p + n - 4, ".xml") || !strcmp(p + n - 4, ".mjb"))) p[n - 4] = 0;
  strcat(p, ".task");
  return p;
}

// common options of both modes
typedef struct common_ {
  double budget;
  double seconds;
  long shift;                  // 0: auto, 10 ms of plant steps
  long threads;
  long key;
  double init_noise;
  const char* out;
  int quiet;
} common;

static void defaultCommon(common* c, double seconds) {
  c->budget = 0.008;
  c->seconds = seconds;
  c->shift = 0;
  c->threads = 2;
  c->key = 0;
  c->init_noise = 0.01;
  c->out = NULL;
  c->quiet = 0;
}

// parse argv[*i] if it is a common option; 1 if it was
static int commonOption(common* c, int argc, char** argv, int* i) {
  const char* o = argv[*i];
  if (!strcmp(o, "--budget")) {
    const char* v = tool_optionValue(TOOL, argc, argv, i);
    if (!tool_parseDouble(v, &c->budget) || c->budget <= 0 || c->budget > 60) {
      tool_usageError(TOOL, "--budget must be a number of seconds in (0, 60], got '%s'", v);
    }
  } else if (!strcmp(o, "--seconds")) {
    const char* v = tool_optionValue(TOOL, argc, argv, i);
    if (!tool_parseDouble(v, &c->seconds) || c->seconds <= 0 || c->seconds > 1e5) {
      tool_usageError(TOOL, "--seconds must be a number in (0, 1e5], got '%s'", v);
    }
  } else if (!strcmp(o, "--shift")) {
    const char* v = tool_optionValue(TOOL, argc, argv, i);
    if (!tool_parseInt(v, 1, 100000, &c->shift)) {
      tool_usageError(TOOL, "--shift must be an integer in [1, 100000], got '%s'", v);
    }
  } else if (!strcmp(o, "--threads")) {
    const char* v = tool_optionValue(TOOL, argc, argv, i);
    if (!tool_parseInt(v, 1, 256, &c->threads)) {
      tool_usageError(TOOL, "--threads must be an integer in [1, 256], got '%s'", v);
    }
  } else if (!strcmp(o, "--key")) {
    const char* v = tool_optionValue(TOOL, argc, argv, i);
    if (!tool_parseInt(v, -1, 1000000, &c->key)) {
      tool_usageError(TOOL, "--key must be an integer >= -1, got '%s'", v);
    }
  } else if (!strcmp(o, "--init-noise")) {
    const char* v = tool_optionValue(TOOL, argc, argv, i);
    if (!tool_parseDouble(v, &c->init_noise) || c->init_noise < 0 || c->init_noise > 10) {
      tool_usageError(TOOL, "--init-noise must be a number in [0, 10], got '%s'", v);
    }
  } else if (!strcmp(o, "--out")) {
    c->out = tool_outputOption(TOOL, argc, argv, i);
  } else if (!strcmp(o, "--quiet")) {
    c->quiet = 1;
  } else {
    return 0;
  }
  return 1;
}

// the model, its smooth model and its task
typedef struct problem_ {
  mjModel* m;
  mjdiffModel* s;
  mjdiffTask* task;
} problem;

static void freeProblem(problem* p) {
  mjdiff_freeTask(p->task);
  mjdiff_freeModel(p->s);
  if (p->m) mj_deleteModel(p->m);
  memset(p, 0, sizeof(*p));
}

static int loadProblem(problem* p, const char* model, const char* task, char* err, int errsz) {
  memset(p, 0, sizeof(*p));
  p->m = tool_loadModel(model, err, errsz);
  if (!p->m) return 0;
  char msg[900];
  if (mjdiff_makeModel(p->m, NULL, &p->s, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "%s: %s", model, msg);
    freeProblem(p);
    return 0;
  }
  p->task = mjdiff_readTask(p->m, task, msg, sizeof(msg));
  if (!p->task) {
    snprintf(err, (size_t)errsz, "%s", msg);
    freeProblem(p);
    return 0;
  }
  return 1;
}

// plant steps per control step: --shift, or as many as fill 10 ms (at least 1)
static int shiftOf(const common* c, const mjModel* m) {
  if (c->shift > 0) return (int)c->shift;
  int n = (int)lround(0.01 / m->opt.timestep);
  return n > 1 ? n : 1;
}

// simulated time of a run: --seconds, or the task's duration, or 3 s
static double secondsOf(const common* c, const mjdiffTask* task) {
  if (c->seconds > 0) return c->seconds;
  return mjdiff_taskDuration(task) > 0 ? mjdiff_taskDuration(task) : 3;
}

static void loopOptions(const common* c, const mjModel* m, const mjdiffTask* task, int plant,
                        unsigned long long seed, mpcLoopOptions* o) {
  mpc_defaultLoopOptions(o);
  o->plant = plant ? MPC_PLANT_NATIVE : MPC_PLANT_SMOOTH;
  o->budget = c->budget;
  o->shift = shiftOf(c, m);
  o->seconds = secondsOf(c, task);
  o->key = (int)c->key;
  o->init_noise = c->init_noise;
  o->seed = seed;
}

//---------------------------------- run: one closed loop ------------------------------------------

typedef struct runArgs_ {
  common c;
  const char* model;
  const char* task;            // NULL: MODEL.task
  int planner;
  int plant;
  long seed;
  int json;
  int view;
  const char* screenshot;
  long screenshot_after;
  int reach;                   // gradient planner: the long-range contact term (--reach)
  mjdiffReachSchedule reach_schedule;
  const char* plant_file;      // --plant FILE: a plant of tools/common/plant.h (native step)
  const char* adapt;           // --adapt PARAMS
  const char* oracle;          // --oracle PARAMS
  mpcAdaptOptions adapt_opt;
  char* adapt_sensors;         // --adapt-sensors (split in place)
  const char* sensor_list[256];
  double score_after;          // --score-after S
  long iterations;             // --iterations N (0: by the budget)
} runArgs;

static void usageRun(void) {
  printf(
      "Usage: " TOOL " [options] MODEL.xml\n"
      "       " TOOL " bench [options] [MODEL.xml ...]   (see " TOOL " bench --help)\n"
      "\n"
      "Run model predictive control in closed loop: every control step the planner improves its\n"
      "plan on the smooth model from the plant's state for at most --budget seconds of wall time,\n"
      "then the plant applies the plan's first control for --shift steps. The plant is the\n"
      "smooth model (mjdiff_step) or MuJoCo's native step with its hard contacts (mj_step).\n"
      "Prints the final cost, success, the planning time and the real-time factor (simulated\n"
      "time / wall time).\n"
      "\n"
      "Options:\n"
      "  --task FILE            task (cost) file (default: MODEL with .xml replaced by .task)\n"
      "  --planner NAME         gradient, ilqr, sampling, cem or mppi (default ilqr)\n"
      "  --plant NAME|FILE      smooth, native, or a plant file (native step with hidden\n"
      "                         parameter changes, payload, noise, delay; tools/common/plant.h)\n"
      "                         (default smooth)\n"
      "  --adapt PARAMS         adapt these model parameters online (comma-separated names of\n"
      "                         <mjdiff/params.h>, e.g. body:link7:mass) by joint state and\n"
      "                         parameter estimation over windows of the plant's readings; needs\n"
      "                         a native plant\n"
      "  --adapt-window S       plant time per window, seconds (default 0.1)\n"
      "  --adapt-sigma S        reading noise std the fit assumes (default 0.01)\n"
      "  --adapt-drift R        random-walk std per window relative to |nominal| (default 0.05)\n"
      "  --adapt-prior R        initial prior std relative to |nominal| (default 0.5)\n"
      "  --adapt-sensors LIST   sensors the fit reads, comma-separated (default: all)\n"
      "  --oracle PARAMS        the planner's values of PARAMS follow the plant's (model = plant)\n"
      "  --score-after S        also report the mean running cost from S seconds on\n"
      "  --iterations N         exactly N planner iterations per control step, whatever the\n"
      "                         budget (reproducible runs on a loaded machine; default: by the\n"
      "                         budget)\n"
      "  --budget S             planning wall time per control step, seconds (default 0.008)\n"
      "  --seconds S            simulated time, seconds (default: the task's duration, else 3;\n"
      "                         the viewer pauses there)\n"
      "  --shift N              plant steps per control step (default: those of 10 ms, >= 1)\n"
      "  --threads N            threads the planner may use (default 2)\n"
      "  --seed N               seed of the planner and of the initial perturbation (default 1)\n"
      "  --key N                initial keyframe, -1 for qpos0 (default 0; qpos0 without keys)\n"
      "  --init-noise A         initial qpos perturbation, uniform in [-A, A] per dof (default "
      "0.01)\n"
      "  --reach A[:R[:DECAY]]  gradient planner: plan with the smooth model's long-range contact\n"
      "                         term, strength A N and width R m (default 0.1), annealed by\n"
      "                         DECAY per planner iteration (default 0.99) to 0 below 1%% of A\n"
      "                         (default: off; the plant never has it)\n"
      "  --json                 print the results as JSON on stdout instead of the summary\n"
      "  --out FILE             also write the results as JSON to FILE\n"
      "  --quiet                no progress lines on stderr\n"
      "  --view                 show the closed loop live in a window: the plan as a ghost,\n"
      "                         the smooth contact forces as arrows; space pause, right arrow\n"
      "                         single step, backspace reset, F1 help, Esc quit\n"
      "  --screenshot FILE      with --view: write a PNG of the view after --screenshot-after\n"
      "                         control steps, then exit (default: none)\n"
      "  --screenshot-after N   control steps before the screenshot (default 50)\n"
      "  --help                 print this help and exit\n"
      "\n"
      "Success: the task's success term stays below its threshold over the last quarter of the\n"
      "run. JSON: one object {tool, version, model, args, status, metrics, series}.\n"
      "Exit status: 0 done, 1 runtime error (model, task or planner rejected; the plant failed),\n"
      "2 usage error, 130 interrupted (partial results written).\n");
}

static void parseRun(int argc, char** argv, runArgs* a) {
  memset(a, 0, sizeof(*a));
  defaultCommon(&a->c, 0);
  a->planner = MPC_ILQR;
  a->plant = 0;
  a->seed = 1;
  a->screenshot_after = 50;
  mpc_defaultAdaptOptions(&a->adapt_opt);
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (tool_isHelp(o)) {
      usageRun();
      exit(TOOL_EXIT_OK);
    } else if (commonOption(&a->c, argc, argv, &i)) {
      continue;
    } else if (!strcmp(o, "--task")) {
      a->task = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--planner")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      a->planner = parsePlanner(v);
      if (a->planner < 0) {
        tool_usageError(TOOL, "--planner must be gradient, ilqr, sampling, cem or mppi, got '%s'",
                        v);
      }
    } else if (!strcmp(o, "--plant")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      a->plant = parsePlant(v);
      a->plant_file = NULL;
      if (a->plant < 0) {
        if (access(v, R_OK) != 0) {
          tool_usageError(TOOL, "--plant must be smooth, native or a readable plant file, got "
                          "'%s'", v);
        }
        a->plant = 1;
        a->plant_file = v;
      }
    } else if (!strcmp(o, "--adapt")) {
      a->adapt = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--oracle")) {
      a->oracle = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--adapt-window")) {
      a->adapt_opt.window = tool_doubleOption(TOOL, argc, argv, &i, 0, 100, TOOL_OPEN_LO, "a number of seconds in (0, 100]");
    } else if (!strcmp(o, "--adapt-sigma")) {
      a->adapt_opt.sigma_sensor = tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY,
                                                    TOOL_OPEN_LO, "a number > 0");
    } else if (!strcmp(o, "--adapt-drift")) {
      a->adapt_opt.drift_rel = tool_doubleOption(TOOL, argc, argv, &i, 0, 1e3, 0, "a number in [0, 1000]");
    } else if (!strcmp(o, "--adapt-prior")) {
      a->adapt_opt.prior_rel = tool_doubleOption(TOOL, argc, argv, &i, 0, 1e3,
                                                 TOOL_OPEN_LO, "a number in (0, 1000]");
    } else if (!strcmp(o, "--adapt-sensors")) {
      a->adapt_sensors = (char*)tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--iterations")) {
      a->iterations = tool_intOption(TOOL, argc, argv, &i, 1, 100000, "an integer in [1, 100000]");
    } else if (!strcmp(o, "--score-after")) {
      a->score_after = tool_doubleOption(TOOL, argc, argv, &i, 0, 1e5, 0, "a number of seconds >= 0");
    } else if (!strcmp(o, "--seed")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      if (!tool_parseInt(v, 0, 2147483647L, &a->seed)) {
        tool_usageError(TOOL, "--seed must be an integer in [0, 2^31 - 1], got '%s'", v);
      }
    } else if (!strcmp(o, "--reach")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      char why[300];
      mjdiff_defaultReachSchedule(&a->reach_schedule);
      a->reach_schedule.decay = 0.99;
      if (mjdiff_parseReach(v, &a->reach_schedule, why, sizeof(why)) != MJDIFF_OK) {
        tool_usageError(TOOL, "--reach: %s", why);
      }
      a->reach = 1;
    } else if (!strcmp(o, "--json")) {
      a->json = 1;
    } else if (!strcmp(o, "--view")) {
      a->view = 1;
    } else if (!strcmp(o, "--screenshot")) {
      a->screenshot = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--screenshot-after")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      if (!tool_parseInt(v, 0, 100000000, &a->screenshot_after)) {
        tool_usageError(TOOL, "--screenshot-after must be an integer >= 0, got '%s'", v);
      }
    } else if (o[0] == '-' && o[1]) {
      tool_usageError(TOOL, "unknown option '%s'", o);
    } else if (a->model) {
      tool_usageError(TOOL, "more than one model given ('%s' and '%s')", a->model, o);
    } else {
      a->model = o;
    }
  }
  if (!a->model) tool_usageError(TOOL, "no model given");
  if (a->screenshot && !a->view) tool_usageError(TOOL, "--screenshot needs --view");
  if (a->reach && a->planner != MPC_GRADIENT) {
    tool_usageError(TOOL, "--reach needs --planner gradient");
  }
  if ((a->adapt || a->oracle) && a->plant != 1) {
    tool_usageError(TOOL, "%s needs a native plant (--plant native or --plant FILE)",
                    a->adapt ? "--adapt" : "--oracle");
  }
  if (a->adapt && a->oracle) tool_usageError(TOOL, "--adapt and --oracle exclude each other");
  if (a->adapt_sensors) {
    int n = 0;
    for (char* t = strtok(a->adapt_sensors, ","); t && n < 256; t = strtok(NULL, ",")) {
      a->sensor_list[n++] = t;
    }
    a->adapt_opt.sensors = a->sensor_list;
    a->adapt_opt.nsensor = n;
  }
}

static void runJson(FILE* f, const runArgs* a, const char* task, const mpcLoop* loop,
                    int shift, const char* status) {
  tool_jsonResetNulls();
  fprintf(f, "{\"tool\": \"" TOOL "\", \"version\": ");
  tool_jsonString(f, mjdiff_versionString());
  fprintf(f, ", \"model\": ");
  tool_jsonString(f, a->model);
  fprintf(f, ", \"args\": {\"task\": ");
  tool_jsonString(f, task);
  fprintf(f,
          ", \"planner\": \"%s\", \"plant\": \"%s\", \"budget_s\": %g, \"seconds\": %g, "
          "\"shift\": %d, \"threads\": %ld, \"seed\": %ld, \"key\": %ld, \"init_noise\": %g}, ",
          kPlannerName[a->planner], kPlantName[a->plant], a->c.budget,
          loop ? loop->opt.seconds : a->c.seconds, shift,
          a->c.threads, a->seed, a->c.key, a->c.init_noise);
  fprintf(f, "\"status\": \"%s\", \"metrics\": {", status);
  if (loop) {
    tool_jsonKey(f, "final_cost");
    jsonNumber(f, loop->cost);
    fprintf(f, ", ");
    tool_jsonKey(f, "mean_cost");
    jsonNumber(f, mpc_loopMeanCost(loop));
    fprintf(f, ", \"success\": %s, \"success_fraction\": ",
            mpc_loopSuccess(loop) ? "true" : "false");
    jsonNumber(f, mpc_loopSuccessFraction(loop));
    fprintf(f, ", ");
    tool_jsonKey(f, "plan_ms_mean");
    jsonNumber(f, 1e3 * mpc_loopMeanPlan(loop));
    fprintf(f, ", ");
    tool_jsonKey(f, "plan_ms_max");
    jsonNumber(f, 1e3 * mpc_loopMaxPlan(loop));
    fprintf(f, ", ");
    tool_jsonKey(f, "realtime_factor");
    jsonNumber(f, mpc_loopRealtime(loop));
    fprintf(f, ", ");
    tool_jsonKey(f, "sim_time_s");
    jsonNumber(f, mpc_loopTime(loop));
    fprintf(f, ", ");
    tool_jsonKey(f, "wall_s");
    jsonNumber(f, loop->wall);
    fprintf(f, ", ");
    tool_jsonKey(f, "mean_cost_after");
    jsonNumber(f, mpc_loopMeanCostFrom(loop, a->score_after));
    fprintf(f, ", \"score_after_s\": %g", a->score_after);
    fprintf(f, ", \"control_steps\": %d, \"mujoco_warnings\": %ld, \"error\": ", loop->nrec,
            tool_warnings());
    tool_jsonString(f, loop->err);
  }
  fprintf(f, "}, \"series\": {");
  if (loop) {
    const char* key[5] = {"t_s", "cost", "plan_cost", "plan_ms", "success"};
    for (int j = 0; j < 5; j++) {
      fprintf(f, "%s", j ? ", " : "");
      tool_jsonKey(f, key[j]);
      fprintf(f, "[");
      for (int k = 0; k < loop->nrec; k++) {
        const mpcLoopRecord* r = loop->rec + k;
        if (k) fprintf(f, ", ");
        if (j == 0) jsonNumber(f, r->time - loop->time0);
        if (j == 1) jsonNumber(f, r->cost);
        if (j == 2) jsonNumber(f, r->plan_cost);
        if (j == 3) jsonNumber(f, 1e3 * r->plan_s);
        if (j == 4) fprintf(f, "%d", r->success);
      }
      fprintf(f, "]");
    }
  }
  fprintf(f, "}");
  if (loop && loop->adapt) {
    // the adaptation log: per fitted window, the estimate and the plant's value
    const mjdiffParams* sel = mpc_adaptParams(loop->adapt);
    int np = loop->nlogp;
    fprintf(f, ", \"adapt\": {\"params\": [");
    for (int i = 0; i < np; i++) {
      if (i) fprintf(f, ", ");
      tool_jsonString(f, mjdiff_paramName(sel, i));
    }
    fprintf(f, "], \"windows\": %d, \"failed\": %d, \"fit_ms\": ",
            mpc_adaptUpdates(loop->adapt), mpc_adaptFailures(loop->adapt));
    jsonNumber(f, 1e3 * mpc_adaptMeanFit(loop->adapt));
    fprintf(f, ", \"t_s\": [");
    for (int k = 0; k < loop->nlog; k++) {
      if (k) fprintf(f, ", ");
      jsonNumber(f, loop->log_t[k]);
    }
    const char* key[2] = {"estimate", "plant"};
    for (int j = 0; j < 2; j++) {
      const double* v = j ? loop->log_true : loop->log_est;
      fprintf(f, "], \"%s\": [", key[j]);
      for (int k = 0; k < loop->nlog; k++) {
        fprintf(f, "%s[", k ? ", " : "");
        for (int i = 0; i < np; i++) {
          if (i) fprintf(f, ", ");
          jsonNumber(f, v[(size_t)k * np + i]);
        }
        fprintf(f, "]");
      }
    }
    fprintf(f, "]}");
  }
  tool_jsonNullNote(f);
  fprintf(f, "}\n");
}

static int mainRun(int argc, char** argv) {
  runArgs a;
  parseRun(argc, argv, &a);
  tool_catchInterrupt();
  tool_catchWarnings(TOOL);

  char* defaultTask = a.task ? NULL : taskPath(a.model);
  const char* task = a.task ? a.task : defaultTask;
  char err[1024] = "";
  problem p;
  if (!task || !loadProblem(&p, a.model, task, err, sizeof(err))) {
    fprintf(stderr, TOOL ": error: %s\n", task ? err : "out of memory");
    free(defaultTask);
    return TOOL_EXIT_RUNTIME;
  }
  mpcPlanner* planner = mpc_makePlanner((mpcPlannerType)a.planner, p.m, p.s, p.task,
                                        (int)a.c.threads, (unsigned long long)a.seed, err,
                                        sizeof(err));
  if (!planner) {
    fprintf(stderr, TOOL ": error: planner %s: %s\n", kPlannerName[a.planner], err);
    freeProblem(&p);
    free(defaultTask);
    return TOOL_EXIT_RUNTIME;
  }
  if (a.reach && !mpc_plannerSetReach(planner, &a.reach_schedule, err, sizeof(err))) {
    fprintf(stderr, TOOL ": error: --reach: %s\n", err);
    mpc_freePlanner(planner);
    freeProblem(&p);
    free(defaultTask);
    return TOOL_EXIT_RUNTIME;
  }
  if (a.iterations > 0) mpc_plannerSetIterations(planner, (int)a.iterations, 0);
  mpcLoopOptions lo;
  loopOptions(&a.c, p.m, p.task, a.plant, (unsigned long long)a.seed, &lo);
  mpcLoop* loop = mpc_makeLoop(p.m, p.s, p.task, planner, &lo, err, sizeof(err));
  if (!loop) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    mpc_freePlanner(planner);
    freeProblem(&p);
    free(defaultTask);
    return TOOL_EXIT_RUNTIME;
  }

  // the plant file, adaptation, oracle
  toolPlant* plant = NULL;
  mpcAdapt* adapt = NULL;
  mjdiffParams* oracle = NULL;
  if (a.plant_file || a.adapt || a.oracle) {
    plant = a.plant_file ? tool_readPlant(p.m, a.plant_file, err, sizeof(err))
                         : tool_nominalPlant(p.m, err, sizeof(err));
    if (!plant || !tool_plantCheck(plant, lo.seconds, err, sizeof(err))) {
      fprintf(stderr, TOOL ": error: %s\n", err);
      tool_freePlant(plant);
      mpc_freeLoop(loop);
      mpc_freePlanner(planner);
      freeProblem(&p);
      free(defaultTask);
      return TOOL_EXIT_USAGE;
    }
    mpc_loopSetPlant(loop, plant);
  }
  if (a.adapt) {
    adapt = mpc_makeAdapt(p.m, p.s, a.adapt, &a.adapt_opt, err, sizeof(err));
    if (!adapt || !mpc_loopSetAdapt(loop, adapt, err, sizeof(err))) {
      fprintf(stderr, TOOL ": error: %s\n", err);
      mpc_freeAdapt(adapt);
      tool_freePlant(plant);
      mpc_freeLoop(loop);
      mpc_freePlanner(planner);
      freeProblem(&p);
      free(defaultTask);
      return TOOL_EXIT_USAGE;
    }
  }
  if (a.oracle) {
    oracle = mpc_paramList(p.m, p.s, a.oracle, "--oracle", err, sizeof(err));
    if (!oracle || !mpc_loopSetOracle(loop, oracle, err, sizeof(err))) {
      fprintf(stderr, TOOL ": error: %s\n", err);
      mjdiff_freeParams(oracle);
      tool_freePlant(plant);
      mpc_freeLoop(loop);
      mpc_freePlanner(planner);
      freeProblem(&p);
      free(defaultTask);
      return TOOL_EXIT_USAGE;
    }
  }

  if (!a.json) {
    char step[128];
    printf(TOOL " %s: %s (nq=%d nv=%d nu=%d, timestep %g s; %s), task %s\n",
           mjdiff_versionString(), a.model, (int)p.m->nq, (int)p.m->nv, (int)p.m->nu,
           p.m->opt.timestep, tool_smoothStepText(p.m, p.s, step, sizeof(step)), task);
    printf("planner %s on the smooth model, plant %s, budget %g ms per control step of %d "
           "plant step(s), horizon %g s, %g s simulated\n",
           kPlannerName[a.planner], kPlantName[a.plant], 1e3 * a.c.budget, lo.shift,
           mjdiff_taskHorizon(p.task), lo.seconds);
    if (a.plant_file) {
      printf("plant file %s: %d parameter change(s), delay %d step(s), %s readings\n",
             a.plant_file, tool_plantChanges(plant), tool_plantDelaySteps(plant),
             tool_plantNoisy(plant) ? "noisy" : "exact");
    }
    if (adapt) {
      printf("adapting %d parameter(s) online (windows of %g s)\n", mpc_adaptCount(adapt),
             a.adapt_opt.window);
    }
    if (oracle) printf("oracle: %d parameter(s) follow the plant\n", mjdiff_paramCount(oracle));
    fflush(stdout);
  }

  int code = TOOL_EXIT_OK;
  if (a.view) {
    mpcViewOptions vo;
    char title[512];
    char base[256];
    tool_baseName(a.model, base, sizeof(base));
    snprintf(title, sizeof(title), TOOL ": %s, planner %s, plant %s", base,
             kPlannerName[a.planner], kPlantName[a.plant]);
    vo.title = title;
    vo.screenshot = a.screenshot;
    vo.screenshot_after = (int)a.screenshot_after;
    vo.width = 1200;
    vo.height = 800;
    code = mpc_view(loop, &vo, err, sizeof(err));
    if (code != TOOL_EXIT_OK) fprintf(stderr, TOOL ": error: %s\n", err);
  } else {
    mpc_runLoop(loop, a.c.quiet ? 0 : 0.25);
  }

  int interrupted = tool_interrupted();
  const char* status = loop->failed ? "error" : interrupted ? "interrupted" : "ok";
  if (loop->failed) {
    fprintf(stderr, TOOL ": error: %s\n", loop->err);
    if (code == TOOL_EXIT_OK) code = TOOL_EXIT_RUNTIME;
  }
  if (interrupted && code == TOOL_EXIT_OK) code = TOOL_EXIT_INTERRUPTED;

  if (a.json) {
    runJson(stdout, &a, task, loop, lo.shift, status);
  } else {
    printf("final cost %.6g (mean %.6g over %d control steps), success %s (flag on %.0f%% of "
           "steps)\n",
           loop->cost, mpc_loopMeanCost(loop), loop->nrec, mpc_loopSuccess(loop) ? "yes" : "no",
           100 * mpc_loopSuccessFraction(loop));
    printf("planning %.3f ms mean, %.3f ms max; %.3f s simulated in %.3f s wall: real-time factor "
           "%.3f\n",
           1e3 * mpc_loopMeanPlan(loop), 1e3 * mpc_loopMaxPlan(loop), mpc_loopTime(loop),
           loop->wall, mpc_loopRealtime(loop));
    if (a.score_after > 0) {
      printf("mean cost from %g s on: %.6g\n", a.score_after,
             mpc_loopMeanCostFrom(loop, a.score_after));
    }
    if (adapt) {
      int np = mpc_adaptCount(adapt);
      printf("adaptation: %d window(s) fitted, %d failed, %.2f ms per fit\n",
             mpc_adaptUpdates(adapt), mpc_adaptFailures(adapt), 1e3 * mpc_adaptMeanFit(adapt));
      for (int i = 0; i < np; i++) {
        const char* name = mjdiff_paramName(mpc_adaptParams(adapt), i);
        printf("  %-32s nominal %-10.5g estimate %-10.5g +- %-9.3g plant %.5g\n", name,
               mpc_adaptNominal(adapt)[i], mpc_adaptValues(adapt)[i], mpc_adaptSd(adapt)[i],
               plant ? tool_plantParam(plant, name) : NAN);
      }
    }
    if (loop->failed) printf("FAILED: %s\n", loop->err);
  }
  if (a.c.out) {
    FILE* f = tool_openOut(TOOL, a.c.out);
    if (f) runJson(f, &a, task, loop, lo.shift, status);
    if (!tool_closeOut(TOOL, a.c.out, f)) code = TOOL_EXIT_RUNTIME;
  }

  mpc_freeLoop(loop);
  mpc_freeAdapt(adapt);
  mjdiff_freeParams(oracle);
  tool_freePlant(plant);
  mpc_freePlanner(planner);
  freeProblem(&p);
  free(defaultTask);
  return code;
}

//---------------------------------- bench ---------------------------------------------------------

typedef struct benchArgs_ {
  common c;
  int planners[NPLANNER];
  int nplanner;
  int plants[NPLANT];
  int nplant;
  long seeds;
  const char* csv;
  const char* png;
  int nmodel;
  char** model;
  int defaults;
} benchArgs;

// one closed-loop run
typedef struct benchRun_ {
  int task;                    // index into the models
  int planner, plant;
  long seed;
  int done;                    // it ran (to the end, or the plant failed)
  char status[16];             // ok, failed (plant or cost), error (not run), interrupted
  char error[512];
  double final_cost, mean_cost, success_fraction, plan_ms, plan_ms_max, rtf, sim_s, wall_s;
  int success, steps;
  int shift;                   // plant steps per control step
  double* t;                   // series (steps): time (s), cost
  double* cost;
} benchRun;

static void usageBench(void) {
  printf(
      "Usage: " TOOL " bench [options] [MODEL.xml ...]\n"
      "\n"
      "Benchmark the planners in closed loop at equal planning budget: every task (a model with\n"
      "its .task file beside it) x planner x plant x seed runs once. Prints a markdown table\n"
      "(mean over seeds) on stdout; writes one CSV row and one JSON series per run and a chart\n"
      "of the cost over time per planner and task (gnuplot).\n"
      "\n"
      "Options:\n"
      "  --planners LIST        comma-separated planners\n"
      "                         (default gradient,ilqr,sampling,cem,mppi)\n"
      "  --plants LIST          comma-separated plants, smooth and/or native (default "
      "smooth,native)\n"
      "  --seeds N              seeds 1..N per task, planner and plant (default 3)\n"
      "  --budget S             planning wall time per control step, seconds (default 0.008)\n"
      "  --seconds S            simulated time per run, seconds (default: each task's\n"
      "                         duration, else 3)\n"
      "  --shift N              plant steps per control step (default: those of 10 ms, >= 1)\n"
      "  --threads N            threads a planner may use (default 2)\n"
      "  --key N                initial keyframe, -1 for qpos0 (default 0; qpos0 without keys)\n"
      "  --init-noise A         initial qpos perturbation per dof, seeded (default 0.01)\n"
      "  --csv FILE             write one row per run (default: none)\n"
      "  --out FILE             write the results as JSON (default: none)\n"
      "  --png FILE             draw the cost over time with gnuplot (default: none)\n"
      "  --quiet                no progress lines on stderr\n"
      "  --help                 print this help and exit\n"
      "\n"
      "Models (default: cartpole, acrobot, arm_box, hopper and cheetah from $MJDIFF_MODEL_DIR,\n"
      "the installed share/mjdiff/models or the source tree's models/; those without a .task\n"
      "file are skipped).\n"
      "CSV columns: task,planner,plant,seed,status,final_cost,mean_cost,success,\n"
      "success_fraction,plan_ms,plan_ms_max,realtime_factor,sim_time_s,wall_s,control_steps.\n"
      "Exit status: 0 done, 1 runtime error (a model, task or planner rejected; the other runs\n"
      "still run), 2 usage error, 130 interrupted (partial results written).\n");
}

// parse a comma-separated list of names; count, or -1 on an unknown name
static int parseList(const char* v, int (*parse)(const char*), int* out, int max) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", v);
  int n = 0;
  char* save = NULL;
  for (char* tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int k = parse(tok);
    if (k < 0) return -1;
    int dup = 0;
    for (int j = 0; j < n; j++) dup |= out[j] == k;
    if (!dup && n < max) out[n++] = k;
  }
  return n;
}

static void parseBench(int argc, char** argv, benchArgs* a) {
  memset(a, 0, sizeof(*a));
  defaultCommon(&a->c, 0);
  for (int i = 0; i < NPLANNER; i++) a->planners[i] = i;
  a->nplanner = NPLANNER;
  a->plants[0] = 0;
  a->plants[1] = 1;
  a->nplant = 2;
  a->seeds = 3;
  a->model = calloc((size_t)argc + NBENCHMODEL + 1, sizeof(char*));
  if (!a->model) tool_outOfMemory(TOOL);
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (tool_isHelp(o)) {
      usageBench();
      exit(TOOL_EXIT_OK);
    } else if (commonOption(&a->c, argc, argv, &i)) {
      continue;
    } else if (!strcmp(o, "--planners")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      a->nplanner = parseList(v, parsePlanner, a->planners, NPLANNER);
      if (a->nplanner <= 0) {
        tool_usageError(TOOL, "--planners must list gradient, ilqr, sampling, cem, mppi, got '%s'",
                        v);
      }
    } else if (!strcmp(o, "--plants")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      a->nplant = parseList(v, parsePlant, a->plants, NPLANT);
      if (a->nplant <= 0) tool_usageError(TOOL, "--plants must list smooth, native, got '%s'", v);
    } else if (!strcmp(o, "--seeds")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      if (!tool_parseInt(v, 1, 1000, &a->seeds)) {
        tool_usageError(TOOL, "--seeds must be an integer in [1, 1000], got '%s'", v);
      }
    } else if (!strcmp(o, "--csv")) {
      a->csv = tool_outputOption(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--png")) {
      a->png = tool_outputOption(TOOL, argc, argv, &i);
    } else if (o[0] == '-' && o[1]) {
      tool_usageError(TOOL, "unknown option '%s'", o);
    } else {
      a->model[a->nmodel++] = argv[i];
    }
  }
  if (a->nmodel == 0) {
    a->defaults = 1;
    char dir[4096];
    tool_modelDir("cartpole.xml", dir, sizeof(dir));
    if (!dir[0]) fprintf(stderr, TOOL ": note: bundled models not found (set MJDIFF_MODEL_DIR)\n");
    for (int i = 0; i < NBENCHMODEL && dir[0]; i++) {
      char path[4096], task[4096];
      char name[300];
      snprintf(name, sizeof(name), "%s.xml", kBenchModels[i]);
      if (!tool_joinPath(path, sizeof(path), dir, name)) continue;
      snprintf(name, sizeof(name), "%s.task", kBenchModels[i]);
      if (!tool_joinPath(task, sizeof(task), dir, name)) continue;
      if (access(path, R_OK) != 0 || access(task, R_OK) != 0) {
        fprintf(stderr, TOOL ": note: skipping %s (no model or no .task file)\n", kBenchModels[i]);
        continue;
      }
      a->model[a->nmodel] = malloc(strlen(path) + 1);
      if (!a->model[a->nmodel]) break;
      strcpy(a->model[a->nmodel++], path);
    }
    if (a->nmodel == 0) {
      fprintf(stderr, TOOL ": error: no default task found (a model with a .task file)\n");
      exit(TOOL_EXIT_RUNTIME);
    }
  }
}

static void runOne(const benchArgs* a, const problem* p, benchRun* r) {
  char err[1024] = "";
  mpcPlanner* planner = mpc_makePlanner((mpcPlannerType)r->planner, p->m, p->s, p->task,
                                        (int)a->c.threads, (unsigned long long)r->seed, err,
                                        sizeof(err));
  if (!planner) {
    snprintf(r->status, sizeof(r->status), "error");
    snprintf(r->error, sizeof(r->error), "planner %s: %s", kPlannerName[r->planner], err);
    return;
  }
  mpcLoopOptions lo;
  loopOptions(&a->c, p->m, p->task, r->plant, (unsigned long long)r->seed, &lo);
  mpcLoop* loop = mpc_makeLoop(p->m, p->s, p->task, planner, &lo, err, sizeof(err));
  if (!loop) {
    snprintf(r->status, sizeof(r->status), "error");
    snprintf(r->error, sizeof(r->error), "%s", err);
    mpc_freePlanner(planner);
    return;
  }
  mpc_runLoop(loop, 0);
  r->done = 1;
  r->shift = lo.shift;
  snprintf(r->status, sizeof(r->status), "%s",
           loop->failed ? "failed" : tool_interrupted() ? "interrupted" : "ok");
  snprintf(r->error, sizeof(r->error), "%s", loop->err);
  r->final_cost = loop->cost;
  r->mean_cost = mpc_loopMeanCost(loop);
  r->success = mpc_loopSuccess(loop);
  r->success_fraction = mpc_loopSuccessFraction(loop);
  r->plan_ms = 1e3 * mpc_loopMeanPlan(loop);
  r->plan_ms_max = 1e3 * mpc_loopMaxPlan(loop);
  r->rtf = mpc_loopRealtime(loop);
  r->sim_s = mpc_loopTime(loop);
  r->wall_s = loop->wall;
  r->steps = loop->nrec;
  r->t = malloc(sizeof(double) * (size_t)(loop->nrec + 1));
  r->cost = malloc(sizeof(double) * (size_t)(loop->nrec + 1));
  if (r->t && r->cost) {
    for (int k = 0; k < loop->nrec; k++) {
      r->t[k] = loop->rec[k].time - loop->time0;
      r->cost[k] = loop->rec[k].cost;
    }
  } else {
    r->steps = 0;
  }
  mpc_freeLoop(loop);
  mpc_freePlanner(planner);
}

static void writeCsv(FILE* f, char names[][64], const benchRun* run, int n) {
  fprintf(f, "task,planner,plant,seed,status,final_cost,mean_cost,success,success_fraction,"
             "plan_ms,plan_ms_max,realtime_factor,sim_time_s,wall_s,control_steps\n");
  for (int i = 0; i < n; i++) {
    const benchRun* r = run + i;
    if (!r->status[0]) continue;  // not run (interrupted, or its model did not load)
    fprintf(f, "%s,%s,%s,%ld,%s", names[r->task], kPlannerName[r->planner],
            kPlantName[r->plant], r->seed, r->status);
    if (r->done) {
      fprintf(f, ",%.9g,%.9g,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%d\n", r->final_cost, r->mean_cost,
              r->success, r->success_fraction, r->plan_ms, r->plan_ms_max, r->rtf, r->sim_s,
              r->wall_s, r->steps);
    } else {
      fprintf(f, ",,,,,,,,,,\n");
    }
  }
}

// aggregate over seeds of (task, planner, plant)
typedef struct aggregate_ {
  int n, nsuccess, nfailed;
  double cost_mean, cost_sd, mean_cost, plan_ms, rtf;
} aggregate;

static void aggregateRuns(const benchRun* run, int n, int task, int planner, int plant,
                          aggregate* g) {
  memset(g, 0, sizeof(*g));
  double s = 0, s2 = 0;
  for (int i = 0; i < n; i++) {
    const benchRun* r = run + i;
    if (!r->done || r->task != task || r->planner != planner || r->plant != plant) continue;
    g->n++;
    g->nsuccess += r->success;
    g->nfailed += !strcmp(r->status, "failed");
    s += r->final_cost;
    s2 += r->final_cost * r->final_cost;
    g->mean_cost += r->mean_cost;
    g->plan_ms += r->plan_ms;
    g->rtf += r->rtf;
  }
  if (g->n) {
    g->cost_mean = s / g->n;
    g->cost_sd = g->n > 1 ? sqrt(fmax(0, (s2 - g->n * g->cost_mean * g->cost_mean) / (g->n - 1)))
                          : 0;
    g->mean_cost /= g->n;
    g->plan_ms /= g->n;
    g->rtf /= g->n;
  }
}

static void printTable(const benchArgs* a, char names[][64], int ntask, const benchRun* run,
                       int n) {
  char period[64];
  if (a->c.shift > 0) {
    snprintf(period, sizeof(period), "%ld plant step(s)", a->c.shift);
  } else {
    snprintf(period, sizeof(period), "10 ms");
  }
  char simulated[64];
  if (a->c.seconds > 0) {
    snprintf(simulated, sizeof(simulated), "%g s", a->c.seconds);
  } else {
    snprintf(simulated, sizeof(simulated), "each task's duration");
  }
  printf("\nClosed-loop MPC, budget %g ms per control step of %s, %s simulated, %ld seed(s), "
         "%ld thread(s); mean over seeds\n\n",
         1e3 * a->c.budget, period, simulated, a->seeds, a->c.threads);
  printf("| task | planner | plant | final cost | mean cost | success | plan ms | real-time "
         "factor |\n");
  printf("|---|---|---|---:|---:|---:|---:|---:|\n");
  for (int t = 0; t < ntask; t++) {
    for (int i = 0; i < a->nplanner; i++) {
      for (int j = 0; j < a->nplant; j++) {
        aggregate g;
        aggregateRuns(run, n, t, a->planners[i], a->plants[j], &g);
        if (!g.n) continue;
        char fail[32] = "";
        if (g.nfailed) snprintf(fail, sizeof(fail), " (%d failed)", g.nfailed);
        printf("| %s | %s | %s | %.4g ± %.2g | %.4g | %d/%d%s | %.2f | %.3f |\n", names[t],
               kPlannerName[a->planners[i]], kPlantName[a->plants[j]], g.cost_mean, g.cost_sd,
               g.mean_cost, g.nsuccess, g.n, fail, g.plan_ms, g.rtf);
      }
    }
  }

  // the comparison: the better of gradient and iLQR against predictive sampling and MPPI
  // on the mean closed-loop cost; and the slowest planner's real-time factor
  printf("\n| task | plant | best of gradient, iLQR | best of sampling, MPPI | gradient-based lower "
         "| lowest real-time factor |\n");
  printf("|---|---|---:|---:|---|---:|\n");
  for (int t = 0; t < ntask; t++) {
    for (int j = 0; j < a->nplant; j++) {
      double grad = INFINITY, samp = INFINITY, rtf = INFINITY;
      for (int i = 0; i < a->nplanner; i++) {
        aggregate g;
        int pl = a->planners[i];
        aggregateRuns(run, n, t, pl, a->plants[j], &g);
        if (!g.n) continue;
        if (pl == MPC_GRADIENT || pl == MPC_ILQR) grad = fmin(grad, g.mean_cost);
        if (pl == MPC_SAMPLING || pl == MPC_MPPI) samp = fmin(samp, g.mean_cost);
        rtf = fmin(rtf, g.rtf);
      }
      if (!isfinite(rtf)) continue;
      const char* verdict = isfinite(grad) && isfinite(samp) ? (grad < samp ? "yes" : "no") : "-";
      printf("| %s | %s | %.4g | %.4g | %s | %.3f |\n", names[t], kPlantName[a->plants[j]], grad,
             samp, verdict, rtf);
    }
  }
  fflush(stdout);
}

static void benchJson(FILE* f, const benchArgs* a, char names[][64], const benchRun* run, int n,
                      const char* status) {
  tool_jsonResetNulls();
  fprintf(f, "{\"tool\": \"" TOOL "\", \"version\": ");
  tool_jsonString(f, mjdiff_versionString());
  fprintf(f, ", \"model\": [");
  for (int i = 0; i < a->nmodel; i++) {
    if (i) fprintf(f, ", ");
    tool_jsonString(f, a->model[i]);
  }
  fprintf(f, "], \"args\": {\"mode\": \"bench\", \"planners\": [");
  for (int i = 0; i < a->nplanner; i++) {
    fprintf(f, "%s\"%s\"", i ? ", " : "", kPlannerName[a->planners[i]]);
  }
  fprintf(f, "], \"plants\": [");
  for (int i = 0; i < a->nplant; i++) {
    fprintf(f, "%s\"%s\"", i ? ", " : "", kPlantName[a->plants[i]]);
  }
  fprintf(f,
          "], \"seeds\": %ld, \"budget_s\": %g, \"seconds\": ", a->seeds, a->c.budget);
  if (a->c.seconds > 0) {
    jsonNumber(f, a->c.seconds);
  } else {
    fprintf(f, "null");  // each task's duration (the runs' sim_time_s)
  }
  fprintf(f,
          ", \"shift\": %ld, \"threads\": %ld, \"key\": %ld, \"init_noise\": %g}, \"status\": \"%s\", "
          "\"metrics\": {\"runs\": [",
          a->c.shift, a->c.threads, a->c.key, a->c.init_noise, status);
  int first = 1;
  for (int i = 0; i < n; i++) {
    const benchRun* r = run + i;
    if (!r->status[0]) continue;
    fprintf(f, "%s{\"task\": ", first ? "" : ", ");
    first = 0;
    tool_jsonString(f, names[r->task]);
    fprintf(f, ", \"planner\": \"%s\", \"plant\": \"%s\", \"seed\": %ld, \"status\": \"%s\", "
               "\"error\": ",
            kPlannerName[r->planner], kPlantName[r->plant], r->seed, r->status);
    tool_jsonString(f, r->error);
    fprintf(f, ", ");
    tool_jsonKey(f, "final_cost");
    jsonNumber(f, r->final_cost);
    fprintf(f, ", ");
    tool_jsonKey(f, "mean_cost");
    jsonNumber(f, r->mean_cost);
    fprintf(f, ", \"success\": %s, \"success_fraction\": ", r->success ? "true" : "false");
    jsonNumber(f, r->success_fraction);
    fprintf(f, ", ");
    tool_jsonKey(f, "plan_ms");
    jsonNumber(f, r->plan_ms);
    fprintf(f, ", ");
    tool_jsonKey(f, "plan_ms_max");
    jsonNumber(f, r->plan_ms_max);
    fprintf(f, ", ");
    tool_jsonKey(f, "realtime_factor");
    jsonNumber(f, r->rtf);
    fprintf(f, ", ");
    tool_jsonKey(f, "sim_time_s");
    jsonNumber(f, r->sim_s);
    fprintf(f, ", ");
    tool_jsonKey(f, "wall_s");
    jsonNumber(f, r->wall_s);
    fprintf(f, ", \"control_steps\": %d, \"shift\": %d}", r->steps, r->shift);
  }
  fprintf(f, "]}, \"series\": [");
  first = 1;
  for (int i = 0; i < n; i++) {
    const benchRun* r = run + i;
    if (!r->done) continue;
    fprintf(f, "%s{\"task\": ", first ? "" : ", ");
    first = 0;
    tool_jsonString(f, names[r->task]);
    fprintf(f, ", \"planner\": \"%s\", \"plant\": \"%s\", \"seed\": %ld, \"t_s\": [",
            kPlannerName[r->planner], kPlantName[r->plant], r->seed);
    for (int k = 0; k < r->steps; k++) {
      if (k) fprintf(f, ", ");
      jsonNumber(f, r->t[k]);
    }
    fprintf(f, "], \"cost\": [");
    for (int k = 0; k < r->steps; k++) {
      if (k) fprintf(f, ", ");
      jsonNumber(f, r->cost[k]);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "]");
  tool_jsonNullNote(f);
  fprintf(f, "}\n");
}

// gnuplot string literal (single quotes, a quote doubled)
static void gnuplotString(FILE* f, const char* s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputc('\'', f);
    fputc(*s, f);
  }
  fputc('\'', f);
}

// cost over time, mean over seeds: one panel per task, one colour per planner, solid smooth plant,
// dashed native plant; 0 on failure
static int drawChart(const benchArgs* a, char names[][64], int ntask, const benchRun* run, int n,
                     char* err, int errsz) {
  FILE* g = popen("gnuplot", "w");
  if (!g) {
    snprintf(err, (size_t)errsz, "cannot start gnuplot");
    return 0;
  }
  int cols = ntask <= 1 ? 1 : ntask <= 4 ? 2 : 3;
  int rows = (ntask + cols - 1) / cols;
  int width = 680 * cols < 900 ? 900 : 680 * cols;
  fprintf(g, "set terminal pngcairo size %d,%d font 'sans,10'\nset output ", width,
          400 * rows + 40);
  gnuplotString(g, a->png);
  fprintf(g, "\nset multiplot layout %d,%d title \"mjdiff-mpc: cost over time, mean over %ld "
             "seed(s), budget %g ms\\nsolid: smooth plant, dashed: native plant\"\n",
          rows, cols, a->seeds, 1e3 * a->c.budget);
  fprintf(g, "set termoption noenhanced\nset key outside right top font ',8'\nset grid\n"
             "set xlabel 'time (s)'\nset ylabel 'cost'\n");

  // data blocks $Dt_i_j: time, mean cost
  char* hasData = calloc((size_t)(ntask * a->nplanner * a->nplant), 1);
  if (!hasData) {
    pclose(g);
    snprintf(err, (size_t)errsz, "out of memory");
    return 0;
  }
  for (int t = 0; t < ntask; t++) {
    for (int i = 0; i < a->nplanner; i++) {
      for (int j = 0; j < a->nplant; j++) {
        int len = 0;
        for (int r = 0; r < n; r++) {
          const benchRun* x = run + r;
          if (x->done && x->task == t && x->planner == a->planners[i] &&
              x->plant == a->plants[j] && x->steps > len) {
            len = x->steps;
          }
        }
        fprintf(g, "$D%d_%d_%d << EOD\n", t, i, j);
        for (int k = 0; k < len; k++) {
          double sum = 0, tk = 0;
          int cnt = 0;
          for (int r = 0; r < n; r++) {
            const benchRun* x = run + r;
            if (x->done && x->task == t && x->planner == a->planners[i] &&
                x->plant == a->plants[j] && k < x->steps && isfinite(x->cost[k])) {
              sum += x->cost[k];
              tk = x->t[k];
              cnt++;
            }
          }
          if (cnt) {
            fprintf(g, "%.6g %.9g\n", tk, sum / cnt);
            hasData[(t * a->nplanner + i) * a->nplant + j] = 1;
          }
        }
        if (len == 0) fprintf(g, "0 NaN\n");
        fprintf(g, "EOD\n");
      }
    }
  }
  for (int t = 0; t < ntask; t++) {
    // log scale when every cost of the task is positive
    int positive = 1, any = 0;
    for (int r = 0; r < n; r++) {
      const benchRun* x = run + r;
      if (!x->done || x->task != t) continue;
      for (int k = 0; k < x->steps; k++) {
        if (isfinite(x->cost[k])) {
          any = 1;
          positive &= x->cost[k] > 0;
        }
      }
    }
    fprintf(g, "%s\nset title ", positive && any ? "set logscale y" : "unset logscale y");
    gnuplotString(g, names[t]);
    fprintf(g, "\n");
    int nline = 0;
    for (int i = 0; i < a->nplanner; i++) {
      for (int j = 0; j < a->nplant; j++) {
        if (!hasData[(t * a->nplanner + i) * a->nplant + j]) continue;
        fprintf(g, "%s$D%d_%d_%d using 1:2 with lines lw 1.5 lc rgb '%s' dt %d title '%s %s'",
                nline++ ? ", " : "plot ", t, i, j, kPlannerColor[a->planners[i]],
                a->plants[j] ? 2 : 1,
                kPlannerName[a->planners[i]], kPlantName[a->plants[j]]);
      }
    }
    if (!nline) {
      fprintf(g, "set label 1 'no runs' at graph 0.5, 0.5 center\nplot [0:1] [0:1] -1 notitle\n"
                 "unset label 1");
    }
    fprintf(g, "\n");
  }
  fprintf(g, "unset multiplot\nset output\n");
  free(hasData);
  int status = pclose(g);
  if (status != 0) {
    snprintf(err, (size_t)errsz, "gnuplot failed (status %d)", status);
    return 0;
  }
  if (access(a->png, R_OK) != 0) {
    snprintf(err, (size_t)errsz, "gnuplot wrote no '%s'", a->png);
    return 0;
  }
  return 1;
}

static int mainBench(int argc, char** argv) {
  benchArgs a;
  parseBench(argc, argv, &a);
  tool_catchInterrupt();
  tool_catchWarnings(TOOL);

  int ntask = a.nmodel;
  int per = a.nplanner * a.nplant * (int)a.seeds;
  int n = ntask * per;
  benchRun* run = calloc((size_t)n, sizeof(benchRun));
  char(*names)[64] = calloc((size_t)ntask, sizeof(*names));
  if (!run || !names) tool_outOfMemory(TOOL);
  int ok = 1;
  int k = 0;
  double t0 = tool_now();
  for (int t = 0; t < ntask && !tool_interrupted(); t++) {
    tool_baseName(a.model[t], names[t], sizeof(names[t]));
    char* task = taskPath(a.model[t]);
    char err[1024] = "";
    problem p;
    if (!task || !loadProblem(&p, a.model[t], task, err, sizeof(err))) {
      fprintf(stderr, TOOL ": error: %s\n", task ? err : "out of memory");
      free(task);
      ok = 0;
      k += per;
      continue;
    }
    free(task);
    for (int i = 0; i < a.nplanner; i++) {
      for (int j = 0; j < a.nplant; j++) {
        for (long seed = 1; seed <= a.seeds; seed++) {
          benchRun* r = run + k++;
          r->task = t;
          r->planner = a.planners[i];
          r->plant = a.plants[j];
          r->seed = seed;
          if (tool_interrupted()) continue;
          runOne(&a, &p, r);
          if (!strcmp(r->status, "error")) {
            ok = 0;
            fprintf(stderr, TOOL ": error: %s %s: %s\n", names[t], kPlannerName[r->planner],
                    r->error);
          }
          if (!a.c.quiet && !r->done) {
            fprintf(stderr, "[%3d/%3d %6.0f s] %-9s %-8s %-6s seed %ld: %s\n", k, n,
                    tool_now() - t0, names[t], kPlannerName[r->planner], kPlantName[r->plant],
                    seed, r->status);
          } else if (!a.c.quiet) {
            fprintf(stderr,
                    "[%3d/%3d %6.0f s] %-9s %-8s %-6s seed %ld: %-6s final cost %11.5g  success "
                    "%d  plan %7.2f ms  rtf %6.3f%s%s\n",
                    k, n, tool_now() - t0, names[t], kPlannerName[r->planner],
                    kPlantName[r->plant], seed, r->status, r->final_cost, r->success, r->plan_ms,
                    r->rtf, r->error[0] ? "  " : "", r->error);
          }
        }
      }
    }
    freeProblem(&p);
  }
  int interrupted = tool_interrupted();
  const char* status = interrupted ? "interrupted" : ok ? "ok" : "error";
  int code = interrupted ? TOOL_EXIT_INTERRUPTED : ok ? TOOL_EXIT_OK : TOOL_EXIT_RUNTIME;

  printTable(&a, names, ntask, run, n);
  if (a.csv) {
    FILE* f = tool_openOut(TOOL, a.csv);
    if (f) writeCsv(f, names, run, n);
    if (!tool_closeOut(TOOL, a.csv, f)) code = code ? code : TOOL_EXIT_RUNTIME;
  }
  if (a.c.out) {
    FILE* f = tool_openOut(TOOL, a.c.out);
    if (f) benchJson(f, &a, names, run, n, status);
    if (!tool_closeOut(TOOL, a.c.out, f)) code = code ? code : TOOL_EXIT_RUNTIME;
  }
  if (a.png) {
    char err[256];
    if (!drawChart(&a, names, ntask, run, n, err, sizeof(err))) {
      fprintf(stderr, TOOL ": error: chart: %s\n", err);
      code = code ? code : TOOL_EXIT_RUNTIME;
    }
  }

  for (int i = 0; i < n; i++) {
    free(run[i].t);
    free(run[i].cost);
  }
  free(run);
  free(names);
  if (a.defaults) {
    for (int i = 0; i < a.nmodel; i++) free(a.model[i]);
  }
  free(a.model);
  return code;
}

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "bench")) return mainBench(argc - 1, argv + 1);
  return mainRun(argc, argv);
}
