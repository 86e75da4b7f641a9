// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-bench-smooth: time of one smooth step (mjdiff_step) against MuJoCo's native mj_step on the
// same models, in one run.
//
//   for each model, for round r = 0 .. R-1:
//     run native and smooth (native first in even rounds, smooth first in odd ones), each for
//     N steps from the same initial state x0 (keyframe 0, else qpos0), reset to x0 every K steps,
//     with the same control sequence u_k (deterministic pseudo-random, uniform in ctrlrange)
//     t_mode[r] = (time inside the step loops) / N
//   us/step = median_r t_mode[r];  ratio = median smooth / median native
//   mean contacts = mean over steps of d->ncon after each step (contacts found at its forward pass)
//   Newton = mean over smooth steps of mjdiff_implicitStats (the implicit step's Newton iterations;
//            "-" under the explicit step): the last solve's, so a step that needed the
//            continuation or the split counts only its last solve, and a failed step (state reset)
//            what the reset left

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/mjdiff.h>

#include "benchutil.h"
#include "toolutil.h"

#define TOOL "mjdiff-bench-smooth"
#define TARGET_RATIO 1.3
#define HUMANOID "/usr/share/mujoco/model/humanoid/humanoid.xml"

// bundled models with contacts, found in the model directory
static const char* const kBundled[] = {"arm_box.xml", "hopper.xml", "cheetah.xml",
                                       "quadruped.xml"};
#define NBUNDLED ((int)(sizeof(kBundled) / sizeof(kBundled[0])))
static char kHumanoid[] = HUMANOID;

typedef struct args_ {
  long steps;
  long rounds;
  long reset;
  long seed;
  long warmup;
  int json;
  const char* out;
  int nmodel;
  char** model;                // nmodel paths
  int defaults;                // models are the default list
} args;

// results of one model
typedef struct result_ {
  const char* path;
  char name[64];
  int nv, nu, ngeom, integrator;
  double timestep;
  int target;                  // a model with a speed target
  int rounds;                  // rounds completed
  double* t_native;            // per-round us/step (rounds)
  double* t_smooth;
  double* first_native;        // 1: native ran first in that round
  double native_us, smooth_us, ratio, paired_ratio;
  double native_ncon, smooth_ncon;
  double newton;               // mean Newton iterations per implicit smooth step (NAN: explicit)
  long native_fail, smooth_fail;
  long warnings;               // MuJoCo warnings while benchmarking this model
  char smooth_error[256];      // first failed smooth step
} result;

static void usage(void) {
  printf(
      "Usage: " TOOL " [options] [MODEL.xml ...]\n"
      "\n"
      "Time MuJoCo's native mj_step and the smooth mjdiff_step on the same models, interleaving\n"
      "the two in rounds (native first in even rounds, smooth first in odd ones) and reporting\n"
      "the median time per step of each, their ratio (smooth / native) and the mean number of\n"
      "contacts each sees (d->ncon), and under the implicit smooth step its mean Newton\n"
      "iterations per step. Both start from the same state (keyframe 0, else qpos0) with\n"
      "the same pseudo-random controls (uniform in ctrlrange, else in [-1, 1]).\n"
      "\n"
      "Options:\n"
      "  --steps N     steps per mode and round (default 3000)\n"
      "  --rounds R    rounds per model; the median is taken over them (default 5)\n"
      "  --reset K     reset to the initial state every K steps (default 1000)\n"
      "  --warmup W    untimed steps per mode before the first round (default 500)\n"
      "  --seed S      seed of the control sequence (default 1)\n"
      "  --json        print the results as JSON on stdout instead of the table\n"
      "  --out FILE    also write the results as JSON to FILE (default: none)\n"
      "  --help        print this help and exit\n"
      "\n"
      "Models (default: the bundled models with contacts, %s, found in\n"
      "$MJDIFF_MODEL_DIR, the installed share/mjdiff/models or the source tree's models/,\n"
      "then " HUMANOID ").\n"
      "Models without mjdiff_* numerics get the default smooth parameters. Target (reported, not\n"
      "enforced): smooth at most %.1fx native on humanoid.xml and arm_box.xml.\n"
      "\n"
      "JSON: one object {tool, version, model (array of paths), args, status, metrics, series};\n"
      "metrics.per_model holds the table, series one entry per model and round.\n"
      "Exit status: 0 done, 1 runtime error (model not loaded, smooth model rejected),\n"
      "2 usage error, 130 interrupted (partial results written).\n",
      "arm_box, hopper, cheetah, quadruped", TARGET_RATIO);
}

//---------------------------------- arguments -----------------------------------------------------

static void parseArgs(int argc, char** argv, args* a) {
  a->steps = 3000;
  a->rounds = 5;
  a->reset = 1000;
  a->warmup = 500;
  a->seed = 1;
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
    } else if (!positional && !strcmp(o, "--steps")) {
      a->steps = tool_intOption(TOOL, argc, argv, &i, 1, 100000000, "an integer in [1, 1e8]");
    } else if (!positional && !strcmp(o, "--rounds")) {
      a->rounds = tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in [1, 1000]");
    } else if (!positional && !strcmp(o, "--reset")) {
      a->reset = tool_intOption(TOOL, argc, argv, &i, 1, 100000000, "an integer in [1, 1e8]");
    } else if (!positional && !strcmp(o, "--warmup")) {
      a->warmup = tool_intOption(TOOL, argc, argv, &i, 0, 100000000, "an integer in [0, 1e8]");
    } else if (!positional && !strcmp(o, "--seed")) {
      a->seed = tool_intOption(TOOL, argc, argv, &i, 0, 2147483647L, "an integer in [0, 2^31 - 1]");
    } else if (!positional && !strcmp(o, "--json")) {
      a->json = 1;
    } else if (!positional && !strcmp(o, "--out")) {
      a->out = tool_outputOption(TOOL, argc, argv, &i);
    } else if (!positional && !strcmp(o, "--")) {
      positional = 1;
    } else if (!positional && o[0] == '-' && o[1]) {
      tool_usageError(TOOL, "unknown option %s", o);
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

//---------------------------------- the runs ------------------------------------------------------

// controls for one reset period (reset x nu), uniform in ctrlrange (or [-1, 1] if unlimited)
static mjtNum* makeControls(const mjModel* m, long reset, long seed) {
  size_t n = (size_t)reset * (size_t)(m->nu > 0 ? m->nu : 1);
  mjtNum* u = malloc(sizeof(mjtNum) * n);
  if (!u) return NULL;
  uint64_t state = (uint64_t)seed;
  for (long k = 0; k < reset; k++) tool_randomCtrl(m, u + (size_t)k * (size_t)m->nu, &state);
  return u;
}

typedef struct run_ {
  double seconds;              // time inside the step loops
  double ncon;                 // sum of d->ncon over steps
  double newton;               // sum of the implicit step's Newton iterations over steps
  long fail;                   // failed smooth steps (state reset) or native instability resets
  long steps;                  // steps done
} run;

// nsteps steps of one mode from the initial state; smooth if s is not NULL
static run runMode(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* u, long nsteps,
                   long reset, char* firsterr, int firsterrsz) {
  run r = {0, 0, 0, 0, 0};
  char err[256] = "";
  int nu = m->nu;
  long k = 0;
  while (k < nsteps && !tool_interrupted()) {
    tool_resetState(m, d);
    int warn0 = tool_badWarnings(d);
    long n = mjMIN(reset, nsteps - k);
    double ncon = 0, newton = 0;
    long fail = 0;
    double t0 = tool_now();
    if (s) {
      for (long j = 0; j < n; j++) {
        memcpy(d->ctrl, u + (size_t)j * (size_t)nu, sizeof(mjtNum) * (size_t)nu);
        if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) {
          if (firsterr && !firsterr[0]) snprintf(firsterr, (size_t)firsterrsz, "%s", err);
          fail++;
          tool_resetState(m, d);
        }
        ncon += d->ncon;
        newton += mjdiff_implicitStats(d, NULL, NULL);
      }
    } else {
      for (long j = 0; j < n; j++) {
        memcpy(d->ctrl, u + (size_t)j * (size_t)nu, sizeof(mjtNum) * (size_t)nu);
        mj_step(m, d);
        ncon += d->ncon;
      }
    }
    r.seconds += tool_now() - t0;
    if (!s) fail = tool_badWarnings(d) - warn0;
    r.ncon += ncon;
    r.newton += newton;
    r.fail += fail;
    r.steps += n;
    k += n;
  }
  return r;
}

// benchmark one model; 0 on a runtime error (message printed)
static int benchModel(const args* a, result* res) {
  char err[1024] = "";
  mjModel* m = tool_loadModel(res->path, err, sizeof(err));
  if (!m) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    return 0;
  }
  mjdiffModel* s = NULL;
  mjdiffStatus st = mjdiff_makeModel(m, NULL, &s, err, sizeof(err));
  if (st != MJDIFF_OK) {
    fprintf(stderr, TOOL ": error: %s: smooth model rejected: %s (%s)\n", res->path, err,
            mjdiff_statusName(st));
    mj_deleteModel(m);
    return 0;
  }
  mjData* dn = mj_makeData(m);
  mjData* ds = mj_makeData(m);
  mjtNum* u = makeControls(m, a->reset, a->seed);
  res->t_native = calloc((size_t)a->rounds, sizeof(double));
  res->t_smooth = calloc((size_t)a->rounds, sizeof(double));
  res->first_native = calloc((size_t)a->rounds, sizeof(double));
  if (!dn || !ds || !u || !res->t_native || !res->t_smooth || !res->first_native) {
    fprintf(stderr, TOOL ": error: %s: out of memory\n", res->path);
    free(u);
    mj_deleteData(dn);
    mj_deleteData(ds);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return 0;
  }

  tool_baseName(res->path, res->name, sizeof(res->name));
  res->nv = m->nv;
  res->nu = m->nu;
  res->ngeom = m->ngeom;
  res->integrator = m->opt.integrator;
  res->timestep = m->opt.timestep;
  res->target = !strcmp(res->name, "humanoid") || !strcmp(res->name, "arm_box");

  const int E = (int)sizeof(res->smooth_error);
  long warn0 = tool_warnings();

  // warm-up, untimed
  if (a->warmup > 0) {
    runMode(m, dn, NULL, u, a->warmup, a->reset, NULL, 0);
    runMode(m, ds, s, u, a->warmup, a->reset, res->smooth_error, E);
  }

  // rounds, alternating which mode goes first
  double ncon_n = 0, ncon_s = 0, newton = 0;
  long steps_n = 0, steps_s = 0;
  for (int r = 0; r < a->rounds && !tool_interrupted(); r++) {
    run rn, rs;
    if (r % 2 == 0) {
      rn = runMode(m, dn, NULL, u, a->steps, a->reset, NULL, 0);
      rs = runMode(m, ds, s, u, a->steps, a->reset, res->smooth_error, E);
    } else {
      rs = runMode(m, ds, s, u, a->steps, a->reset, res->smooth_error, E);
      rn = runMode(m, dn, NULL, u, a->steps, a->reset, NULL, 0);
    }
    if (rn.steps < a->steps || rs.steps < a->steps) break;  // interrupted
    res->t_native[r] = 1e6 * rn.seconds / (double)rn.steps;
    res->t_smooth[r] = 1e6 * rs.seconds / (double)rs.steps;
    res->first_native[r] = r % 2 == 0;
    ncon_n += rn.ncon;
    ncon_s += rs.ncon;
    newton += rs.newton;
    steps_n += rn.steps;
    steps_s += rs.steps;
    res->native_fail += rn.fail;
    res->smooth_fail += rs.fail;
    res->rounds = r + 1;
    fprintf(stderr,
            "%-14s round %3d/%-3ld  native %9.2f us/step  smooth %9.2f us/step  ratio %6.3f\n",
            res->name, r + 1, a->rounds, res->t_native[r], res->t_smooth[r],
            res->t_smooth[r] / res->t_native[r]);
  }

  // medians
  res->native_us = tool_median(res->t_native, res->rounds);
  res->smooth_us = tool_median(res->t_smooth, res->rounds);
  res->ratio = res->smooth_us / res->native_us;
  double* paired = malloc(sizeof(double) * (size_t)(res->rounds > 0 ? res->rounds : 1));
  if (paired) {
    for (int r = 0; r < res->rounds; r++) paired[r] = res->t_smooth[r] / res->t_native[r];
    res->paired_ratio = tool_median(paired, res->rounds);
    free(paired);
  } else {
    res->paired_ratio = NAN;
  }
  res->native_ncon = steps_n ? ncon_n / (double)steps_n : NAN;
  res->warnings = tool_warnings() - warn0;
  if (res->smooth_fail) {
    fprintf(stderr, TOOL ": %s: %ld failed smooth steps (state reset); first: %s\n", res->name,
            res->smooth_fail, res->smooth_error);
  }
  if (res->warnings) {
    fprintf(stderr, TOOL ": %s: %ld MuJoCo warnings\n", res->name, res->warnings);
  }
  res->smooth_ncon = steps_s ? ncon_s / (double)steps_s : NAN;
  int implicit = mjdiff_getOptions(s)->integrator == MJDIFF_INT_IMPLICIT;
  res->newton = implicit && steps_s ? newton / (double)steps_s : NAN;

  free(u);
  mj_deleteData(dn);
  mj_deleteData(ds);
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return 1;
}

//---------------------------------- output --------------------------------------------------------

static void printTable(FILE* f, const result* res, int n) {
  fprintf(f, "%-14s %4s %5s %-8s %12s %12s %8s %10s %10s %7s  %s\n", "model", "nv", "ngeom",
          "integr.", "native us", "smooth us", "ratio", "ncon nat.", "ncon smo.", "Newton",
          "target");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (r->rounds == 0) continue;
    const char* target = "-";
    if (r->target) target = r->ratio <= TARGET_RATIO ? "ok (<= 1.3)" : "MISSED (> 1.3)";
    char newton[16] = "-";
    if (isfinite(r->newton)) snprintf(newton, sizeof(newton), "%.2f", r->newton);
    fprintf(f, "%-14s %4d %5d %-8s %12.2f %12.2f %8.3f %10.2f %10.2f %7s  %s\n", r->name, r->nv,
            r->ngeom, tool_integratorName(r->integrator), r->native_us, r->smooth_us, r->ratio,
            r->native_ncon, r->smooth_ncon, newton, target);
    if (r->native_fail || r->smooth_fail) {
      fprintf(f, "%-14s   failures: native %ld (instability resets), smooth %ld (non-finite steps)\n",
              "", r->native_fail, r->smooth_fail);
    }
  }
}

static void printJson(FILE* f, const args* a, const result* res, int n, const char* status) {
  tool_jsonHead(f, TOOL, a->model, a->nmodel);
  fprintf(f, ",\"args\":{\"steps\":%ld,\"rounds\":%ld,\"reset\":%ld,\"warmup\":%ld,\"seed\":%ld,"
             "\"default_models\":%s,\"mujoco_version\":%d},",
          a->steps, a->rounds, a->reset, a->warmup, a->seed, a->defaults ? "true" : "false",
          mj_version());
  fprintf(f, "\"status\":");
  tool_jsonString(f, status);

  // metrics
  double maxratio = 0;
  int met = 1;
  for (int i = 0; i < n; i++) {
    if (res[i].rounds == 0) continue;
    if (res[i].ratio > maxratio) maxratio = res[i].ratio;
    if (res[i].target && !(res[i].ratio <= TARGET_RATIO)) met = 0;
  }
  fprintf(f, ",\"metrics\":{\"target_ratio\":%g,\"targets_met\":%s,\"max_ratio\":", TARGET_RATIO,
          met ? "true" : "false");
  tool_jsonNumber(f, maxratio);
  fprintf(f, ",\"per_model\":[");
  int first = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    if (r->rounds == 0) continue;
    tool_jsonModelHead(f, &first, r->path, r->name);
    fprintf(f, ",\"nv\":%d,\"nu\":%d,\"ngeom\":%d,\"integrator\":\"%s\",\"timestep_s\":%g,"
               "\"rounds\":%d,\"native_us_per_step\":",
            r->nv, r->nu, r->ngeom, tool_integratorName(r->integrator), r->timestep, r->rounds);
    tool_jsonNumber(f, r->native_us);
    fprintf(f, ",\"smooth_us_per_step\":");
    tool_jsonNumber(f, r->smooth_us);
    fprintf(f, ",\"ratio\":");
    tool_jsonNumber(f, r->ratio);
    fprintf(f, ",\"paired_ratio\":");
    tool_jsonNumber(f, r->paired_ratio);
    fprintf(f, ",\"native_mean_ncon\":");
    tool_jsonNumber(f, r->native_ncon);
    fprintf(f, ",\"smooth_mean_ncon\":");
    tool_jsonNumber(f, r->smooth_ncon);
    fprintf(f, ",\"smooth_mean_newton_iterations\":");
    if (isnan(r->newton)) {
      fprintf(f, "null");  // the explicit step (not a non-finite result)
    } else {
      tool_jsonNumber(f, r->newton);
    }
    fprintf(f, ",\"native_failures\":%ld,\"smooth_failures\":%ld,\"smooth_first_error\":",
            r->native_fail, r->smooth_fail);
    tool_jsonString(f, r->smooth_error);
    fprintf(f, ",\"mujoco_warnings\":%ld,\"target\":", r->warnings);
    if (r->target) {
      fprintf(f, "{\"max_ratio\":%g,\"met\":%s}", TARGET_RATIO,
              r->ratio <= TARGET_RATIO ? "true" : "false");
    } else {
      fprintf(f, "null");
    }
    fputc('}', f);
  }
  fprintf(f, "]},\"series\":[");

  // series: one entry per model and round
  first = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    for (int k = 0; k < r->rounds; k++) {
      tool_jsonRoundHead(f, &first, r->name, k, r->first_native[k] ? "native" : "smooth");
      fprintf(f, ",\"native_us_per_step\":");
      tool_jsonNumber(f, r->t_native[k]);
      fprintf(f, ",\"smooth_us_per_step\":");
      tool_jsonNumber(f, r->t_smooth[k]);
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
    fprintf(stderr, TOOL ": %s: %ld rounds of %ld steps per mode\n", a.model[i], a.rounds,
            a.steps);
    if (!benchModel(&a, res + n)) {
      ok = 0;
      break;
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

  for (int i = 0; i < a.nmodel; i++) {
    free(res[i].t_native);
    free(res[i].t_smooth);
    free(res[i].first_native);
  }
  free(res);
  tool_freeModels(a.model, a.nmodel, a.defaults, kHumanoid);
  return tool_exitCode(interrupted, ok);
}
