// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-demo: simulate a model with the smooth contact model and print what happened: contacts,
// smooth normal and friction forces, penetration, energy; optionally beside MuJoCo's native step.

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/mjdiff.h>

#include "benchutil.h"
#include "toolutil.h"

static const char* kTool = "mjdiff-demo";

// a run has diverged when a state or the energy leaves this bound (MuJoCo's mjMAXVAL, beyond
// which its own mj_step resets the state), or is not finite
#define MAX_STATE 1e10

// most steps of a run
#define MAX_STEPS 1e9

typedef struct args_ {
  const char* model;
  double seconds;
  double every;
  long seed;
  int random;
  int native;
  int json;
  const char* out;
  const char* trajectory;
} args;

static void usage(void) {
  printf(
      "usage: %s [options] MODEL.xml\n"
      "Simulate MODEL with the smooth contact model and print contacts, forces and energy.\n\n"
      "options:\n"
      "  --seconds S    simulated time (default 3)\n"
      "  --every S      print a row every S seconds of simulated time (default 0.25)\n"
      "  --ctrl MODE    controls: zero or random (uniform in ctrlrange, held 0.1 s) (default random)\n"
      "  --seed N       random seed (default 1)\n"
      "  --native       also run MuJoCo's native step and print both summaries\n"
      "  --json         print the summary as one JSON object instead of text\n"
      "  --out FILE     write the JSON summary to FILE\n"
      "  --trajectory FILE  write the smooth run's state after every step to FILE: one line\n"
      "                 'time qpos... qvel... act...' after a line '# nq NQ nv NV na NA'\n"
      "                 (%%.17g; scripts/compare-hosts.sh compares the two MuJoCo hosts)\n"
      "  --help         show this help and exit\n",
      kTool);
}

static void parseArgs(int argc, char** argv, args* a) {
  memset(a, 0, sizeof(*a));
  a->seconds = 3;
  a->every = 0.25;
  a->seed = 1;
  a->random = 1;
  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    if (tool_isHelp(arg)) {
      usage();
      exit(TOOL_EXIT_OK);
    } else if (!strcmp(arg, "--seconds")) {
      a->seconds =
          tool_doubleOption(kTool, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "a positive number");
    } else if (!strcmp(arg, "--every")) {
      a->every =
          tool_doubleOption(kTool, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "a positive number");
    } else if (!strcmp(arg, "--ctrl")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!strcmp(v, "zero")) {
        a->random = 0;
      } else if (!strcmp(v, "random")) {
        a->random = 1;
      } else {
        tool_usageError(kTool, "--ctrl must be zero or random, got '%s'", v);
      }
    } else if (!strcmp(arg, "--seed")) {
      a->seed = tool_intOption(kTool, argc, argv, &i, 0, 2147483647L, "an integer >= 0");
    } else if (!strcmp(arg, "--native")) {
      a->native = 1;
    } else if (!strcmp(arg, "--json")) {
      a->json = 1;
    } else if (!strcmp(arg, "--out")) {
      a->out = tool_outputOption(kTool, argc, argv, &i);
    } else if (!strcmp(arg, "--trajectory")) {
      a->trajectory = tool_optionValue(kTool, argc, argv, &i);
    } else if (arg[0] == '-' && arg[1]) {
      tool_usageError(kTool, "unknown option '%s'", arg);
    } else if (a->model) {
      tool_usageError(kTool, "more than one model given ('%s' and '%s')", a->model, arg);
    } else {
      a->model = arg;
    }
  }
  if (!a->model) tool_usageError(kTool, "no model given");
}

// what happened in one run
typedef struct summary_ {
  long steps;
  double wall;
  double time;
  long contactSteps;           // steps with at least one active contact
  long activeSum;              // sum over steps of active contacts
  int activeMax;
  double fnMax;                // largest single normal force (N)
  double fnTotalMax;           // largest total normal force (N)
  double penMax;               // deepest penetration (m)
  double slipMax;              // largest friction force / normal force
  double energy0, energy1;     // MuJoCo energy (potential + kinetic) at start and end
  int failed;
  int diverged;                // a state or the energy not finite or beyond MAX_STATE
  char err[512];
} summary;

// index of the first entry of x (n) not finite or beyond MAX_STATE in magnitude, or -1
static int firstWild(const mjtNum* x, int n) {
  for (int i = 0; i < n; i++) {
    if (!(fabs(x[i]) <= MAX_STATE)) return i;
  }
  return -1;
}

// the run has diverged at the state in d (after a step): message in sum->err; 1 if so
static int checkDiverged(const mjModel* m, const mjData* d, summary* sum) {
  int iq = firstWild(d->qpos, m->nq), iv = firstWild(d->qvel, m->nv);
  double energy = d->energy[0] + d->energy[1];
  int reset = d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number +
              d->warning[mjWARN_BADQACC].number;
  if (iq >= 0) {
    snprintf(sum->err, sizeof(sum->err), "diverged at time %g: qpos[%d] = %g (bound %g)", d->time,
             iq, d->qpos[iq], MAX_STATE);
  } else if (iv >= 0) {
    snprintf(sum->err, sizeof(sum->err), "diverged at time %g: qvel[%d] = %g (bound %g)", d->time,
             iv, d->qvel[iv], MAX_STATE);
  } else if (!(fabs(energy) <= MAX_STATE)) {
    snprintf(sum->err, sizeof(sum->err), "diverged at time %g: energy %g J (bound %g)", d->time,
             energy, MAX_STATE);
  } else if (reset) {
    snprintf(sum->err, sizeof(sum->err),
             "diverged at time %g: MuJoCo reset the state (bad qpos, qvel or qacc warning)",
             d->time);
  } else {
    return 0;
  }
  sum->diverged = 1;
  return 1;
}

static void setControls(const mjModel* m, mjData* d, int random, uint64_t* rng) {
  if (random) {
    tool_randomCtrl(m, d->ctrl, rng);
  } else {
    mju_zero(d->ctrl, m->nu);
  }
}

// one line of the trajectory file: time, qpos, qvel, act
static void writeState(FILE* f, const mjModel* m, const mjData* d) {
  fprintf(f, "%.17g", d->time);
  for (int i = 0; i < m->nq; i++) fprintf(f, " %.17g", d->qpos[i]);
  for (int i = 0; i < m->nv; i++) fprintf(f, " %.17g", d->qvel[i]);
  for (int i = 0; i < m->na; i++) fprintf(f, " %.17g", d->act[i]);
  fprintf(f, "\n");
}

static void run(const mjModel* m, mjData* d, const mjdiffModel* s, const args* a, summary* sum,
                int print, FILE* traj) {
  memset(sum, 0, sizeof(*sum));
  uint64_t rng = (uint64_t)a->seed;
  tool_resetState(m, d);
  long nstep = (long)ceil(a->seconds / m->opt.timestep);  // <= MAX_STEPS (main checks)
  long every = (long)fmax(1, round(a->every / m->opt.timestep));
  long hold = (long)fmax(1, round(0.1 / m->opt.timestep));

  if (print) {
    printf("%8s %6s %8s %11s %11s %10s %12s\n", "t_s", "ncon", "active", "fn_total_N",
           "fn_max_N", "pen_mm", "energy_J");
  }
  double t0 = tool_now();
  for (long k = 0; k < nstep && !tool_interrupted(); k++) {
    if (k % hold == 0) setControls(m, d, a->random, &rng);
    if (s) {
      if (mjdiff_step(m, d, s, sum->err, sizeof(sum->err)) != MJDIFF_OK) {
        sum->failed = 1;
        break;
      }
    } else {
      mj_step(m, d);
    }
    if (k == 0) sum->energy0 = d->energy[0] + d->energy[1];
    sum->steps++;
    if (traj) writeState(traj, m, d);
    if (checkDiverged(m, d, sum)) break;

    // contacts of the forward pass of this step
    int active = 0;
    double fnTotal = 0, fnMax = 0, pen = 0;
    for (int i = 0; i < d->ncon; i++) {
      double fn = 0, ft = 0;
      if (s) {
        mjdiffContactForce cf;
        mjdiff_contactForce(m, d, s, i, &cf);
        fn = cf.force[0];
        ft = sqrt(cf.force[1] * cf.force[1] + cf.force[2] * cf.force[2]);
      } else {
        mjtNum f[6];
        mj_contactForce(m, d, i, f);
        fn = f[0];
        ft = sqrt(f[1] * f[1] + f[2] * f[2]);
      }
      if (fn <= 0) continue;
      active++;
      fnTotal += fn;
      fnMax = fmax(fnMax, fn);
      pen = fmax(pen, -d->contact[i].dist);
      if (fn > 1e-6) sum->slipMax = fmax(sum->slipMax, ft / fn);
    }
    sum->activeSum += active;
    sum->contactSteps += active > 0;
    if (active > sum->activeMax) sum->activeMax = active;
    sum->fnMax = fmax(sum->fnMax, fnMax);
    sum->fnTotalMax = fmax(sum->fnTotalMax, fnTotal);
    sum->penMax = fmax(sum->penMax, pen);

    if (print && (k + 1) % every == 0) {
      printf("%8.3f %6d %8d %11.3f %11.3f %10.3f %12.5f\n", d->time, d->ncon, active, fnTotal,
             fnMax, 1e3 * pen, d->energy[0] + d->energy[1]);
    }
  }
  sum->wall = tool_now() - t0;
  sum->time = d->time;
  sum->energy1 = d->energy[0] + d->energy[1];
}

static void printSummary(const char* label, const summary* s) {
  printf("%s: %ld steps, %.3f s simulated in %.3f s wall (%.0f steps/s)\n", label, s->steps,
         s->time, s->wall, s->wall > 0 ? s->steps / s->wall : 0.0);
  printf("  contacts: active in %ld of %ld steps, mean %.2f, max %d at once\n", s->contactSteps,
         s->steps, s->steps ? (double)s->activeSum / s->steps : 0.0, s->activeMax);
  printf("  forces: largest normal force %.3f N, largest total %.3f N, |friction|/normal <= %.3f\n",
         s->fnMax, s->fnTotalMax, s->slipMax);
  printf("  deepest penetration %.3f mm; energy %.5f J -> %.5f J\n", 1e3 * s->penMax, s->energy0,
         s->energy1);
  if (s->failed || s->diverged) printf("  FAILED: %s\n", s->err);
}

static void jsonSummary(FILE* f, const char* key, const summary* s) {
  fprintf(f, "\"%s\": {\"steps\": %ld, ", key, s->steps);
  tool_jsonField(f, "sim_time_s", s->time);
  fprintf(f, ", ");
  tool_jsonField(f, "wall_s", s->wall);
  fprintf(f, ", ");
  tool_jsonField(f, "steps_per_s", s->wall > 0 ? s->steps / s->wall : 0.0);
  fprintf(f, ", \"contact_steps\": %ld, ", s->contactSteps);
  tool_jsonField(f, "mean_active_contacts", s->steps ? (double)s->activeSum / s->steps : 0.0);
  fprintf(f, ", \"max_active_contacts\": %d, ", s->activeMax);
  tool_jsonField(f, "max_normal_force_N", s->fnMax);
  fprintf(f, ", ");
  tool_jsonField(f, "max_total_normal_force_N", s->fnTotalMax);
  fprintf(f, ", ");
  tool_jsonField(f, "max_friction_ratio", s->slipMax);
  fprintf(f, ", ");
  tool_jsonField(f, "max_penetration_m", s->penMax);
  fprintf(f, ", \"energy_start_J\": ");
  tool_jsonNumberDigits(f, s->energy0, 9);
  fprintf(f, ", \"energy_end_J\": ");
  tool_jsonNumberDigits(f, s->energy1, 9);
  fprintf(f, ", \"failed\": %s, \"diverged\": %s", s->failed ? "true" : "false",
          s->diverged ? "true" : "false");
  if (s->failed || s->diverged) {
    fprintf(f, ", \"error\": ");
    tool_jsonString(f, s->err);
  }
  fprintf(f, "}");
}

static void writeJson(FILE* f, const args* a, const summary* smooth, const summary* native,
                      const char* status) {
  tool_jsonResetNulls();
  fprintf(f, "{\"tool\": \"%s\", \"version\": \"%s\", \"model\": ", kTool,
          mjdiff_versionString());
  tool_jsonString(f, a->model);
  fprintf(f, ", \"args\": {");
  tool_jsonField(f, "seconds", a->seconds);
  fprintf(f, ", \"ctrl\": \"%s\", \"seed\": %ld, \"native\": %s}, \"status\": \"%s\", "
          "\"metrics\": {", a->random ? "random" : "zero", a->seed,
          a->native ? "true" : "false", status);
  jsonSummary(f, "smooth", smooth);
  if (native) {
    fprintf(f, ", ");
    jsonSummary(f, "native", native);
  }
  fprintf(f, "}, \"series\": {}");
  tool_jsonNullNote(f);
  fprintf(f, "}\n");
}

int main(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
  tool_catchInterrupt();
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
  if (a.seconds / m->opt.timestep > MAX_STEPS) {
    fprintf(stderr, "%s: error: --seconds %g: %.3g steps of %g s, more than %.0e\n", kTool,
            a.seconds, a.seconds / m->opt.timestep, m->opt.timestep, MAX_STEPS);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return TOOL_EXIT_RUNTIME;
  }
  m->opt.enableflags |= mjENBL_ENERGY;
  mjData* d = mj_makeData(m);

  const mjdiffOptions* o = mjdiff_getOptions(s);
  int text = !a.json;
  if (text) {
    char step[128];
    printf("%s %s: %s (nq=%d nv=%d nu=%d ngeom=%d, timestep %g s, %s; %s)\n", kTool,
           mjdiff_versionString(), a.model, (int)m->nq, (int)m->nv, (int)m->nu, (int)m->ngeom, m->opt.timestep,
           tool_integratorName(m->opt.integrator),
           tool_smoothStepText(m, s, step, sizeof(step)));
    const mjtNum v[4] = {o->contact_stiffness, o->contact_damping, o->contact_width,
                         o->friction_speed};
    const char* what[4] = {"contact stiffness", "damping", "width", "friction speed"};
    const char* unit[4] = {"N/m", "N s/m", "m", "m/s"};
    printf("smooth model:");
    for (int i = 0; i < 4; i++) {
      if (v[i] == MJDIFF_DERIVED) {
        printf("%s %s derived per pair", i ? "," : "", what[i]);
      } else {
        printf("%s %s %g %s", i ? "," : "", what[i], v[i], unit[i]);
      }
    }
    printf("\n\n");
  }

  summary smooth, native;
  memset(&native, 0, sizeof(native));
  FILE* traj = a.trajectory ? tool_openOut(kTool, a.trajectory) : NULL;
  if (a.trajectory && !traj) {
    mj_deleteData(d);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return TOOL_EXIT_RUNTIME;
  }
  if (traj) fprintf(traj, "# nq %d nv %d na %d\n", (int)m->nq, (int)m->nv, (int)m->na);
  run(m, d, s, &a, &smooth, text, traj);
  int trajBad = a.trajectory && !tool_closeOut(kTool, a.trajectory, traj);
  if (text) {
    printf("\n");
    printSummary("smooth", &smooth);
  }
  if (a.native && !tool_interrupted()) {
    run(m, d, NULL, &a, &native, 0, NULL);
    if (text) printSummary("native", &native);
  }

  int bad = smooth.failed || smooth.diverged || (a.native && native.diverged);
  const char* status = smooth.failed      ? "error"
                       : bad              ? "diverged"
                       : tool_interrupted() ? "interrupted"
                                            : "ok";
  if (a.json) writeJson(stdout, &a, &smooth, a.native ? &native : NULL, status);
  int code = bad || trajBad       ? TOOL_EXIT_RUNTIME
             : tool_interrupted() ? TOOL_EXIT_INTERRUPTED
                                  : TOOL_EXIT_OK;
  if (a.out) {
    FILE* f = tool_openOut(kTool, a.out);
    if (f) writeJson(f, &a, &smooth, a.native ? &native : NULL, status);
    if (!tool_closeOut(kTool, a.out, f)) code = TOOL_EXIT_RUNTIME;
  }
  if (smooth.failed || smooth.diverged) fprintf(stderr, "%s: error: %s\n", kTool, smooth.err);
  if (a.native && native.diverged) fprintf(stderr, "%s: error: native: %s\n", kTool, native.err);

  mj_deleteData(d);
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return code;
}
