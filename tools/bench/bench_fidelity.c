// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-bench-fidelity: how closely the smooth step (mjdiff_step) follows MuJoCo's native mj_step
// on the same models, with the model's own mjdiff_* numerics ("written") and with the smooth
// model's defaults (the same MJCF text with every <numeric name="mjdiff_..."> removed, compiled
// through a VFS: "defaults"), and with those defaults under the implicit smooth step
// (mjdiff_integrator = 1, its own derived values: "implicit").
//
//   x0 = keyframe 0, else qpos0; h = the model's timestep; every run starts at x0.
//   rest run (--rest seconds, R steps; the controls held at x0's: keyframe 0's ctrl, zero without
//   a keyframe, so that position servos hold the keyframe's pose), per mode:
//     pen_k    = max_i -dist_i over the contacts of step k (the deepest penetration; negative
//                when the smooth model holds a body just above a surface, inside its width)
//     pen      = mean of pen_k over the last 20% of the steps that have contacts (mm)
//     vtail    = max_k max_i |qvel_i| over those last 20% (m/s or rad/s): whether the run has
//                settled, so that pen is a rest depth and not a moment of a bounce or a swing
//     E_k      = d->energy[0] + d->energy[1] at the forward pass of step k (mjENBL_ENERGY on)
//     drift    = (E_{R-1} - E_0) / |E_0|   (|E_0| below 1e-6 max_k |E_k|: max_k |E_k| instead)
//   control run (the same controls u_k for every mode: seeded smooth controls inside ctrlrange,
//   u_k,i = lo + (hi - lo) (0.5 + 0.4 sin(0.05 k + phase_i)), or zero; 0.5 s):
//     F_k      = sum_i fn_i, the normal forces of step k's contacts (native: mj_contactForce;
//                smooth: mjdiff_contactForce)
//     Fn rms   = sqrt(mean_k (F_k,smooth - F_k,native)^2) (N)
//     dev(t)   = max over bodies b >= 1 of |xpos_b,smooth(t) - xpos_b,native(t)| at t = 0.1, 0.5 s
//                (mm; positions from mj_kinematics on the state after round(t / h) steps)
//   step cost: rounds of N steps per mode, the modes interleaved (the first mode rotates with the
//     round), controls as in the control run (restarted from x0 every 0.5 s); N = --steps, fewer
//     (>= 50) where the native control run says a round of N steps would take over --budget s;
//     ratio = median_r t_smooth / median_r t_native.
//   A smooth run whose step fails (non-finite state, the step's own checks) is "diverged" with the
//   step's message; so is one that runs away (some |qvel_i| > 1000 m/s or rad/s, which a step
//   that stays finite can reach when a contact is far too stiff for the timestep); its metrics
//   are not reported. A native run with MuJoCo's instability warnings
//   (bad qpos, qvel, qacc: MuJoCo reset the state) is reported the same way.

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/mjdiff.h>

#include "benchutil.h"
#include "toolutil.h"

#define TOOL "mjdiff-bench-fidelity"
#define SAMPLES "/usr/share/mujoco/model/*/*.xml"
#define CONTROL_S 0.5
#define DEV_T1 0.1
#define DEV_T2 0.5
#define TAIL 0.2  // the resting penetration is averaged over this last fraction of the rest run

enum { NATIVE = 0, WRITTEN, DEFAULTS, IMPLICIT, NMODE };
static const char* const kModeName[NMODE] = {"native", "written", "defaults", "implicit"};

// whether mode i runs: defaults only where numerics were stripped (else it is written)
static int modeRuns(int stripped, int i) {
  return i != DEFAULTS || stripped;
}

typedef struct args_ {
  double rest_s;
  long rounds;
  long steps;
  long seed;
  double budget;               // seconds per mode and timing round, at most
  int zero;                    // zero controls in the control run
  int samples;                 // add MuJoCo's sample models to the default list
  const char* json;            // --json FILE (NULL: none; "-": stdout)
  int nmodel;
  char** model;                // nmodel paths (malloc'd if defaults)
  int defaults;
} args;

// one mode's results
typedef struct mode_ {
  int ran;                     // 0: not run (defaults identical to written, or an earlier failure)
  int diverged;
  char error[300];             // the failed step's message
  double pen_mm;               // resting penetration (NAN: no contact in the tail)
  double ncon_rest;            // mean contacts over the rest run's tail
  double vtail;                // largest |qvel_i| over the rest run's tail
  double drift;                // relative energy change of the rest run
  double fn_mean;              // mean total normal force of the control run (N)
  double fn_rms;               // vs native (smooth modes)
  double dev_mm[2];            // vs native at DEV_T1, DEV_T2 (smooth modes)
  double us;                   // median us per step
  double ratio;                // vs native (smooth modes)
  double* t_round;             // us per step per round (rounds)
  int substeps;                // smooth modes: mjdiff_substepCount (0: native)
  // the explicit smooth modes' control run: the worst exact stability ratio of one element and
  // of the elements together (mjdiff_stability), and the share of steps with either > 1
  // (NAN: not measured)
  double stab_one, stab_group, stab_over;
} mode;

typedef struct result_ {
  const char* path;
  char name[96];
  int nv, nbody, nu, integrator;
  double timestep;
  int stripped;                // mjdiff_* numerics removed for the defaults mode
  int rounds;                  // timing rounds completed
  long steps;                  // timed steps per mode and round
  mode md[NMODE];
} result;

typedef struct skipped_ {
  const char* path;
  char reason[600];
} skipped;

static void usage(void) {
  printf(
      "Usage: " TOOL " [options] [MODEL.xml ...]\n"
      "\n"
      "Compare the smooth step (mjdiff_step) with MuJoCo's native mj_step on the same models:\n"
      "the smooth model with the model's mjdiff_* numerics ('written') and with the smooth\n"
      "defaults (the MJCF text with its <numeric name=\"mjdiff_...\"> elements removed, loaded\n"
      "through a VFS: 'defaults'; identical to 'written' for models without such numerics), and\n"
      "those defaults under the implicit smooth step (mjdiff_integrator = 1: 'implicit').\n"
      "Per model and smooth mode:\n"
      "  pen        resting penetration: mean over the last 20%% of a rest run (the controls of\n"
      "             keyframe 0, zero without one) of the deepest contact's -dist (mm; negative:\n"
      "             held inside the smooth contact width), native and smooth ('-': no contact);\n"
      "             the JSON's rest_tail_max_qvel, the largest |qvel| over that tail, tells a\n"
      "             settled body from one still bouncing or swinging\n"
      "  Fn rms     RMS difference of the total contact normal force per step over a 0.5 s\n"
      "             control run (N; native from mj_contactForce), beside the native mean\n"
      "  dev        largest body-position difference after 0.1 s and 0.5 s of that run (mm)\n"
      "  drift      relative change of total energy (mjENBL_ENERGY) over the rest run\n"
      "  cost       step time smooth / native (median of interleaved timing rounds)\n"
      "  stab       explicit smooth step: the worst exact stability ratio of the smooth forces\n"
      "             over the control run, of the elements together (mjdiff_stability's\n"
      "             group_ratio) or alone; > 1: the linearised step amplifies there (the JSON\n"
      "             also has the worst single ratio and the share of steps above 1)\n"
      "A mode whose run fails is reported as diverged with the step's message (or when some\n"
      "|qvel| exceeds 1000: ran away).\n"
      "\n"
      "Options:\n"
      "  --rest S        length of the rest run, seconds (default 2)\n"
      "  --controls K    control run: smooth (seeded sinusoids inside ctrlrange) or zero\n"
      "                  (default smooth)\n"
      "  --seed N        seed of the controls' phases (default 1)\n"
      "  --rounds R      timing rounds per model (default 5)\n"
      "  --steps N       timed steps per mode and round (default 2000)\n"
      "  --budget S      fewer timed steps (at least 50) where N native steps would take longer\n"
      "                  than S seconds (default 0.25)\n"
      "  --no-samples    default list without MuJoCo's sample models\n"
      "  --json FILE     also write the results as JSON to FILE ('-': stdout, instead of the\n"
      "                  table)\n"
      "  --help          print this help and exit\n"
      "\n"
      "Models (default: every *.xml in the bundled model directory ($MJDIFF_MODEL_DIR, the\n"
      "installed share/mjdiff/models or the source tree's models/), then MuJoCo's samples\n"
      SAMPLES "). Models that do not load, or that the smooth\n"
      "model rejects, are skipped and named with the reason.\n"
      "\n"
      "JSON: one object {tool, version, model, args, status, metrics, series}: metrics.per_model\n"
      "(native and the smooth modes), metrics.skipped, series the timing rounds.\n"
      "Exit status: 0 done, 1 runtime error (no model could be run, output not written),\n"
      "2 usage error, 130 interrupted (partial results written).\n");
}

//---------------------------------- arguments -----------------------------------------------------

static void parseArgs(int argc, char** argv, args* a) {
  a->rest_s = 2;
  a->rounds = 5;
  a->steps = 2000;
  a->budget = 0.25;
  a->seed = 1;
  a->samples = 1;
  a->model = calloc((size_t)argc + 1, sizeof(char*));
  if (!a->model) tool_outOfMemory(TOOL);
  int positional = 0;
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (!positional && tool_isHelp(o)) {
      usage();
      exit(TOOL_EXIT_OK);
    } else if (!positional && !strcmp(o, "--rest")) {
      a->rest_s = tool_doubleOption(TOOL, argc, argv, &i, 0, 1000, TOOL_OPEN_LO,
                                    "a number in (0, 1000]");
    } else if (!positional && !strcmp(o, "--controls")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      if (!strcmp(v, "zero")) {
        a->zero = 1;
      } else if (!strcmp(v, "smooth")) {
        a->zero = 0;
      } else {
        tool_usageError(TOOL, "--controls must be smooth or zero, got '%s'", v);
      }
    } else if (!positional && !strcmp(o, "--seed")) {
      a->seed = tool_intOption(TOOL, argc, argv, &i, 0, 2147483647L, "an integer in [0, 2^31 - 1]");
    } else if (!positional && !strcmp(o, "--rounds")) {
      a->rounds = tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in [1, 1000]");
    } else if (!positional && !strcmp(o, "--steps")) {
      a->steps = tool_intOption(TOOL, argc, argv, &i, 1, 100000000, "an integer in [1, 1e8]");
    } else if (!positional && !strcmp(o, "--budget")) {
      a->budget = tool_doubleOption(TOOL, argc, argv, &i, 0, 1000, TOOL_OPEN_LO,
                                    "a number in (0, 1000]");
    } else if (!positional && !strcmp(o, "--no-samples")) {
      a->samples = 0;
    } else if (!positional && !strcmp(o, "--json")) {
      a->json = tool_outputOption(TOOL, argc, argv, &i);
    } else if (!positional && !strcmp(o, "--")) {
      positional = 1;
    } else if (!positional && o[0] == '-' && o[1]) {
      tool_usageError(TOOL, "unknown option %s", o);
    } else {
      a->model[a->nmodel++] = argv[i];
    }
  }
  if (a->nmodel > 0) return;

  // default models: the bundled directory, then MuJoCo's samples
  a->defaults = 1;
  free(a->model);
  a->model = NULL;
  char dir[4096], pattern[4200];
  tool_modelDir("hopper.xml", dir, sizeof(dir));
  int ok = 1;
  if (!dir[0]) {
    fprintf(stderr, TOOL ": note: bundled models not found (set MJDIFF_MODEL_DIR)\n");
  } else if (tool_joinPath(pattern, sizeof(pattern), dir, "*.xml")) {
    ok = tool_globPaths(pattern, &a->model, &a->nmodel);
  }
  if (ok && a->samples) ok = tool_globPaths(SAMPLES, &a->model, &a->nmodel);
  if (!ok) tool_outOfMemory(TOOL);
  if (a->nmodel == 0) {
    fprintf(stderr, TOOL ": error: no models found (give MODEL.xml or set MJDIFF_MODEL_DIR)\n");
    exit(TOOL_EXIT_RUNTIME);
  }
}

//---------------------------------- the smooth defaults -------------------------------------------

// whether the tag starting at p (at '<', ending before end) has name="mjdiff_..." (either quote)
static int isMjdiffNumeric(const char* p, const char* end) {
  for (const char* q = p; q + 6 < end; q++) {
    if (!strncmp(q, "name", 4)) {
      const char* r = q + 4;
      while (r < end && (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r')) r++;
      if (r >= end || *r != '=') continue;
      r++;
      while (r < end && (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r')) r++;
      if (r < end && (*r == '"' || *r == '\'')) r++;
      return end - r > 7 && !strncmp(r, "mjdiff_", 7);
    }
  }
  return 0;
}

// remove every <numeric name="mjdiff_..." .../> (or <numeric ...>...</numeric>) from text in
// place; returns how many were removed and updates *size
static int stripNumerics(char* text, long* size) {
  int removed = 0;
  char* p = text;
  while ((p = strstr(p, "<numeric")) != NULL) {
    char c = p[8];
    char* close = strchr(p, '>');
    if (!close || !(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/')) {
      p += 8;
      continue;
    }
    if (!isMjdiffNumeric(p, close)) {
      p = close;
      continue;
    }
    char* after = close + 1;
    if (close[-1] != '/') {  // <numeric ...> ... </numeric>
      char* endtag = strstr(after, "</numeric>");
      if (endtag) after = endtag + strlen("</numeric>");
    }
    memmove(p, after, strlen(after) + 1);
    removed++;
  }
  *size = (long)strlen(text);
  return removed;
}

//---------------------------------- runs ----------------------------------------------------------

static int stateFinite(const mjModel* m, const mjData* d) {
  for (int i = 0; i < m->nq; i++) {
    if (!isfinite(d->qpos[i])) return 0;
  }
  for (int i = 0; i < m->nv; i++) {
    if (!isfinite(d->qvel[i])) return 0;
  }
  for (int i = 0; i < m->na; i++) {
    if (!isfinite(d->act[i])) return 0;
  }
  return 1;
}

static int stepChecked(const mjModel* m, mjData* d, const mjdiffModel* s, char* err, int errsz);

// one step of a mode (s NULL: native); 0 with err filled if it failed or ran away
static int stepMode(const mjModel* m, mjData* d, const mjdiffModel* s, char* err, int errsz) {
  int ok = stepChecked(m, d, s, err, errsz);
  if (ok && tool_ranAway(m, d, err, errsz)) return 0;
  return ok;
}

// the step itself: its own error, a non-finite state, MuJoCo's instability warnings
static int stepChecked(const mjModel* m, mjData* d, const mjdiffModel* s, char* err, int errsz) {
  if (s) {
    char msg[300] = "";
    mjdiffStatus st = mjdiff_step(m, d, s, msg, sizeof(msg));
    if (st != MJDIFF_OK) {
      snprintf(err, (size_t)errsz, "step %ld (t = %.4g s): %s: %s",
               (long)llround(d->time / m->opt.timestep), d->time, mjdiff_statusName(st), msg);
      return 0;
    }
    if (!stateFinite(m, d)) {
      snprintf(err, (size_t)errsz, "state not finite at t = %.4g s", d->time);
      return 0;
    }
    return 1;
  }
  int w0 = tool_badWarnings(d);
  mjtNum t = d->time;
  mj_step(m, d);
  if (tool_badWarnings(d) != w0 || !stateFinite(m, d)) {
    snprintf(err, (size_t)errsz, "MuJoCo instability warning at t = %.4g s (state reset)", t);
    return 0;
  }
  return 1;
}

// sum of the contacts' normal forces at the last forward pass
static double totalNormalForce(const mjModel* m, const mjData* d, const mjdiffModel* s) {
  double sum = 0;
  for (int i = 0; i < d->ncon; i++) {
    if (s) {
      mjdiffContactForce f;
      if (mjdiff_contactForce(m, d, s, i, &f) == MJDIFF_OK) sum += f.force[0];
    } else {
      mjtNum f[6];
      mj_contactForce(m, d, i, f);
      sum += f[0];
    }
  }
  return sum;
}

// deepest penetration among d's contacts (-dist, negative for a gap); -INFINITY if there are none
static double deepest(const mjData* d) {
  double pen = -INFINITY;
  for (int i = 0; i < d->ncon; i++) {
    if (-d->contact[i].dist > pen) pen = -d->contact[i].dist;
  }
  return pen;
}

// the rest run: R steps with the controls of the initial state (keyframe 0's ctrl, else zero);
// fills pen_mm, ncon_rest, vtail, drift; 0 if it failed
static int restRun(const mjModel* m, mjData* d, const mjdiffModel* s, long R, mode* out) {
  tool_resetState(m, d);
  if (m->nkey == 0) mju_zero(d->ctrl, m->nu);
  long tail0 = R - (long)ceil(TAIL * (double)R);
  double pen = 0, ncon = 0, e0 = 0, elast = 0, emax = 0, vtail = 0;
  long npen = 0, ntail = 0;
  for (long k = 0; k < R; k++) {
    if (!stepMode(m, d, s, out->error, sizeof(out->error))) return 0;
    double e = d->energy[0] + d->energy[1];
    if (k == 0) e0 = e;
    elast = e;
    if (fabs(e) > emax) emax = fabs(e);
    if (k >= tail0) {
      double p = deepest(d);
      if (d->ncon > 0) {
        pen += p;
        npen++;
      }
      ncon += d->ncon;
      ntail++;
      for (int i = 0; i < m->nv; i++) vtail = fmax(vtail, fabs(d->qvel[i]));
    }
  }
  out->pen_mm = npen ? 1e3 * pen / (double)npen : NAN;
  out->ncon_rest = ntail ? ncon / (double)ntail : 0;
  out->vtail = vtail;
  double scale = fabs(e0) >= 1e-6 * emax ? fabs(e0) : emax;
  out->drift = scale > 0 ? (elast - e0) / scale : 0;
  return 1;
}

// the control run: ctrl (T x nu); F (T) the total normal force per step; xpos1, xpos2 (nbody x 3)
// the body positions after n1 and n2 steps (from kinematics on scratch data dk); 0 if it failed
static int controlRun(const mjModel* m, mjData* d, mjData* dk, const mjdiffModel* s, int stab,
                      const mjtNum* ctrl, long T, long n1, double* F, mjtNum* xpos1,
                      mjtNum* xpos2, mode* out) {
  tool_resetState(m, d);
  out->stab_one = out->stab_group = out->stab_over = stab ? 0 : NAN;
  for (long k = 0; k < T; k++) {
    mju_copy(d->ctrl, ctrl + (size_t)k * (size_t)m->nu, m->nu);
    if (!stepMode(m, d, s, out->error, sizeof(out->error))) return 0;
    F[k] = totalNormalForce(m, d, s);
    if (stab) {
      // at the step's last forward pass (its contacts and factor of M), as the step's own test
      mjdiffStability w;
      mjdiff_stability(m, d, s, 1, &w);
      out->stab_one = fmax(out->stab_one, w.ratio);
      out->stab_group = fmax(out->stab_group, fmax(w.group_ratio, w.ratio));
      out->stab_over += (w.group_ratio > 1 || w.ratio > 1) / (double)T;
    }
    if (k + 1 == n1 || k + 1 == T) {
      mju_copy(dk->qpos, d->qpos, m->nq);
      mj_kinematics(m, dk);
      mju_copy(k + 1 == n1 ? xpos1 : xpos2, dk->xpos, 3 * m->nbody);
      if (n1 == T) mju_copy(xpos2, dk->xpos, 3 * m->nbody);
    }
  }
  return 1;
}

// largest distance between corresponding bodies (>= 1) of a and b (nbody x 3)
static double maxBodyDistance(const mjtNum* a, const mjtNum* b, int nbody) {
  double dmax = 0;
  for (int i = 1; i < nbody; i++) {
    double dist = mju_dist3(a + 3 * i, b + 3 * i);
    if (dist > dmax) dmax = dist;
  }
  return dmax;
}

// timing: n steps of a mode from x0, the controls cycled (restart from x0 after T steps);
// failed steps restart from x0; seconds inside the loop
static double timeMode(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* ctrl,
                       long T, long n) {
  char err[300];
  tool_resetState(m, d);
  double t0 = tool_now();
  for (long k = 0, j = 0; k < n; k++, j++) {
    if (j == T) {
      tool_resetState(m, d);
      j = 0;
    }
    mju_copy(d->ctrl, ctrl + (size_t)j * (size_t)m->nu, m->nu);
    if (s) {
      if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) tool_resetState(m, d);
    } else {
      mj_step(m, d);
    }
  }
  return tool_now() - t0;
}

//---------------------------------- one model -----------------------------------------------------

typedef struct setup_ {
  mjModel* m[NMODE];           // native and written share m[0]; defaults its own (or m[0]);
                               // implicit shares the defaults'
  mjdiffModel* s[NMODE];       // NULL for native
  mjData* d[NMODE];
  mjData* dk;
  char* text;
} setup;

static void freeSetup(setup* u) {
  for (int i = 0; i < NMODE; i++) {
    mj_deleteData(u->d[i]);
    mjdiff_freeModel(u->s[i]);
  }
  if (u->m[DEFAULTS] && u->m[DEFAULTS] != u->m[NATIVE]) mj_deleteModel(u->m[DEFAULTS]);  // and IMPLICIT's
  if (u->m[NATIVE]) mj_deleteModel(u->m[NATIVE]);
  mj_deleteData(u->dk);
  free(u->text);
  memset(u, 0, sizeof(*u));
}

// load the model and its two smooth models; 0 with reason filled if it cannot be run
static int makeSetup(const char* path, setup* u, int* stripped, char* reason, int rsz) {
  char err[1000] = "";
  memset(u, 0, sizeof(*u));
  long size = 0;
  int isXml = strlen(path) > 4 && !strcmp(path + strlen(path) - 4, ".xml");
  u->m[NATIVE] = tool_loadModel(path, err, sizeof(err));
  if (!u->m[NATIVE]) {
    snprintf(reason, (size_t)rsz, "does not load: %s", err);
    return 0;
  }
  *stripped = 0;
  if (isXml) {
    u->text = tool_readFile(path, &size, err, sizeof(err));
    if (!u->text) {
      snprintf(reason, (size_t)rsz, "%s", err);
      freeSetup(u);
      return 0;
    }
    *stripped = stripNumerics(u->text, &size);
  }
  if (*stripped) {
    u->m[DEFAULTS] = tool_loadXMLText(path, u->text, size, err, sizeof(err));
    if (!u->m[DEFAULTS]) {
      snprintf(reason, (size_t)rsz, "without its mjdiff_* numerics it does not load: %s", err);
      freeSetup(u);
      return 0;
    }
    const mjModel *a = u->m[NATIVE], *b = u->m[DEFAULTS];
    if (a->nq != b->nq || a->nv != b->nv || a->nbody != b->nbody || a->nu != b->nu) {
      snprintf(reason, (size_t)rsz, "removing its mjdiff_* numerics changed its structure");
      freeSetup(u);
      return 0;
    }
  } else {
    u->m[DEFAULTS] = u->m[NATIVE];
  }
  u->m[WRITTEN] = u->m[NATIVE];
  u->m[IMPLICIT] = u->m[DEFAULTS];
  for (int i = 0; i < NMODE; i++) {
    u->m[i]->opt.enableflags |= mjENBL_ENERGY;  // before the smooth views
  }
  for (int i = WRITTEN; i < NMODE; i++) {
    mjdiffStatus st = mjdiff_makeModel(u->m[i], NULL, &u->s[i], err, sizeof(err));
    if (st != MJDIFF_OK) {
      snprintf(reason, (size_t)rsz, "smooth model rejected%s: %s (%s)",
               i == DEFAULTS && *stripped ? " with the defaults" : "", err,
               mjdiff_statusName(st));
      freeSetup(u);
      return 0;
    }
  }
  if (mjdiff_setParam(u->s[IMPLICIT], "integrator", MJDIFF_INT_IMPLICIT, err, sizeof(err)) !=
      MJDIFF_OK) {
    snprintf(reason, (size_t)rsz, "implicit step: %s", err);
    freeSetup(u);
    return 0;
  }
  for (int i = 0; i < NMODE; i++) u->d[i] = mj_makeData(u->m[i]);
  u->dk = mj_makeData(u->m[NATIVE]);
  if (!u->d[NATIVE] || !u->d[WRITTEN] || !u->d[DEFAULTS] || !u->d[IMPLICIT] || !u->dk) {
    snprintf(reason, (size_t)rsz, "out of memory");
    freeSetup(u);
    return 0;
  }
  return 1;
}

// run every measurement on one model; 0 with reason filled if it was skipped
static int benchModel(const args* a, result* res, char* reason, int rsz) {
  setup u;
  if (!makeSetup(res->path, &u, &res->stripped, reason, rsz)) return 0;
  const mjModel* m = u.m[NATIVE];
  res->nv = m->nv;
  res->nbody = m->nbody;
  res->nu = m->nu;
  res->integrator = m->opt.integrator;
  res->timestep = m->opt.timestep;
  for (int i = WRITTEN; i < NMODE; i++) res->md[i].substeps = mjdiff_substepCount(u.s[i]);
  double h = m->opt.timestep;
  long R = mjMAX(1, lround(a->rest_s / h));
  long T = mjMAX(1, lround(CONTROL_S / h));
  long n1 = mjMAX(1, mjMIN(T, lround(DEV_T1 / h)));

  size_t nu = (size_t)(m->nu > 0 ? m->nu : 1), nb = 3 * (size_t)m->nbody;
  mjtNum* ctrl = calloc((size_t)T * nu, sizeof(mjtNum));
  double* F = calloc((size_t)T * NMODE, sizeof(double));
  mjtNum* xp = calloc(nb * 2 * NMODE, sizeof(mjtNum));
  for (int i = 0; i < NMODE; i++) res->md[i].t_round = calloc((size_t)a->rounds, sizeof(double));
  int okAlloc = ctrl && F && xp;
  for (int i = 0; i < NMODE; i++) okAlloc = okAlloc && res->md[i].t_round;
  if (!okAlloc) {
    snprintf(reason, (size_t)rsz, "out of memory");
    free(ctrl);
    free(F);
    free(xp);
    freeSetup(&u);
    return 0;
  }
  if (!a->zero && m->nu > 0) tool_smoothCtrl(m, (int)T, (uint64_t)a->seed, ctrl);

  // fidelity runs (the native control run's wall time sets the timed steps)
  double native_s = 0;
  for (int i = 0; i < NMODE && !tool_interrupted(); i++) {
    if (!modeRuns(res->stripped, i)) continue;
    mode* md = res->md + i;
    md->ran = 1;
    double t0 = tool_now();
    if (!restRun(u.m[i], u.d[i], u.s[i], R, md) ||
        !controlRun(u.m[i], u.d[i], u.dk, u.s[i],
                    u.s[i] && mjdiff_getOptions(u.s[i])->integrator != MJDIFF_INT_IMPLICIT, ctrl,
                    T, n1, F + (size_t)i * T,
                    xp + nb * 2 * i, xp + nb * (2 * i + 1), md)) {
      md->diverged = 1;
      continue;
    }
    if (i == NATIVE) native_s = (tool_now() - t0) / (double)(R + T);
    double sum = 0;
    for (long k = 0; k < T; k++) sum += F[(size_t)i * T + k];
    md->fn_mean = sum / (double)T;
  }
  mode* nat = res->md + NATIVE;
  for (int i = WRITTEN; i < NMODE; i++) {
    mode* md = res->md + i;
    if (!md->ran || nat->diverged || md->diverged) continue;
    double ss = 0;
    for (long k = 0; k < T; k++) {
      double e = F[(size_t)i * T + k] - F[k];
      ss += e * e;
    }
    md->fn_rms = sqrt(ss / (double)T);
    md->dev_mm[0] = 1e3 * maxBodyDistance(xp + nb * 2 * i, xp, m->nbody);
    md->dev_mm[1] = 1e3 * maxBodyDistance(xp + nb * (2 * i + 1), xp + nb, m->nbody);
  }

  // timing rounds, the first mode rotating with the round
  long N = a->steps;
  if (native_s * (double)N > a->budget) N = mjMAX(50, (long)(a->budget / native_s));
  res->steps = N;
  for (int r = 0; r < a->rounds && !tool_interrupted(); r++) {
    for (int j = 0; j < NMODE; j++) {
      int i = (r + j) % NMODE;
      if (!res->md[i].ran || res->md[i].diverged) continue;
      double sec = timeMode(u.m[i], u.d[i], u.s[i], ctrl, T, N);
      res->md[i].t_round[r] = 1e6 * sec / (double)N;
    }
    if (!tool_interrupted()) res->rounds = r + 1;
  }
  for (int i = 0; i < NMODE; i++) {
    mode* md = res->md + i;
    if (!md->ran || md->diverged || res->rounds == 0) continue;
    md->us = tool_median(md->t_round, res->rounds);
    if (i != NATIVE && !nat->diverged) md->ratio = md->us / nat->us;
  }

  free(ctrl);
  free(F);
  free(xp);
  freeSetup(&u);
  return 1;
}

//---------------------------------- output --------------------------------------------------------

// a number in a column of width w (prec decimals), or "-" when not finite
static void cell(FILE* f, double x, int w, int prec) {
  if (isfinite(x)) {
    fprintf(f, " %*.*f", w, prec, x);
  } else {
    fprintf(f, " %*s", w, "-");
  }
}

static void cellg(FILE* f, double x, int w) {
  if (isfinite(x)) {
    fprintf(f, " %*.2e", w, x);
  } else {
    fprintf(f, " %*s", w, "-");
  }
}

static void printTable(FILE* f, const result* res, int n, const skipped* sk, int nsk) {
  fprintf(f, "%-26s %-8s %8s %8s %8s %8s %9s %9s %10s %10s %7s %6s\n", "model", "mode",
          "pen nat", "pen smo", "Fn rms", "Fn nat", "dev 0.1s", "dev 0.5s", "drift nat",
          "drift smo", "cost", "stab");
  fprintf(f, "%-26s %-8s %8s %8s %8s %8s %9s %9s %10s %10s %7s %6s\n", "", "", "(mm)", "(mm)",
          "(N)", "(N)", "(mm)", "(mm)", "", "", "(x)", "");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    const mode* nat = r->md + NATIVE;
    for (int j = WRITTEN; j < NMODE; j++) {
      const mode* md = r->md + j;
      const char* label = kModeName[j];
      fprintf(f, "%-26.26s %-8s", j == WRITTEN ? r->name : "", label);
      if (j == DEFAULTS && !r->stripped) {
        fprintf(f, " (same as written: no mjdiff_* numerics)\n");
        continue;
      }
      if (nat->diverged) {
        fprintf(f, " native diverged: %.90s\n", nat->error);
        continue;
      }
      if (!md->ran) {
        fprintf(f, " not run (interrupted)\n");
        continue;
      }
      if (md->diverged) {
        fprintf(f, " diverged: %.100s\n", md->error);
        continue;
      }
      cell(f, nat->pen_mm, 8, 3);
      cell(f, md->pen_mm, 8, 3);
      cell(f, md->fn_rms, 8, 2);
      cell(f, nat->fn_mean, 8, 2);
      cell(f, md->dev_mm[0], 9, 3);
      cell(f, md->dev_mm[1], 9, 2);
      cellg(f, nat->drift, 10);
      cellg(f, md->drift, 10);
      cell(f, r->rounds ? md->ratio : NAN, 7, 3);
      cell(f, md->stab_group, 6, 2);
      fputc('\n', f);
    }
  }
  for (int i = 0; i < nsk; i++) fprintf(f, "skipped: %s: %s\n", sk[i].path, sk[i].reason);
}

static void jsonNum(FILE* f, const char* key, double x) {
  fprintf(f, ",\"%s\":", key);
  tool_jsonNumber(f, x);
}

static void jsonMode(FILE* f, const result* r, int i) {
  const mode* md = r->md + i;
  const mode* nat = r->md + NATIVE;
  fprintf(f, "{\"mode\":\"%s\",\"ran\":%s,\"diverged\":%s,\"error\":", kModeName[i],
          md->ran ? "true" : "false", md->diverged ? "true" : "false");
  tool_jsonString(f, md->error);
  int ok = md->ran && !md->diverged;
  int cmp = ok && i != NATIVE && !nat->diverged;
  // a missing value is null, never NaN
  jsonNum(f, "rest_penetration_mm", ok ? md->pen_mm : NAN);
  jsonNum(f, "rest_mean_ncon", ok ? md->ncon_rest : NAN);
  jsonNum(f, "rest_tail_max_qvel", ok ? md->vtail : NAN);
  jsonNum(f, "energy_drift", ok ? md->drift : NAN);
  jsonNum(f, "mean_normal_force_N", ok ? md->fn_mean : NAN);
  jsonNum(f, "us_per_step", ok && r->rounds ? md->us : NAN);
  if (i != NATIVE) {
    fprintf(f, ",\"substeps\":%d", md->substeps);
    jsonNum(f, "normal_force_rms_diff_N", cmp ? md->fn_rms : NAN);
    jsonNum(f, "body_deviation_mm_0_1s", cmp ? md->dev_mm[0] : NAN);
    jsonNum(f, "body_deviation_mm_0_5s", cmp ? md->dev_mm[1] : NAN);
    jsonNum(f, "step_cost_ratio", cmp && r->rounds ? md->ratio : NAN);
    jsonNum(f, "stability_ratio_max", ok ? md->stab_one : NAN);
    jsonNum(f, "stability_group_ratio_max", ok ? md->stab_group : NAN);
    jsonNum(f, "stability_unstable_share", ok ? md->stab_over : NAN);
  }
  fputc('}', f);
}

static void printJson(FILE* f, const args* a, const result* res, int n, const skipped* sk,
                      int nsk, const char* status) {
  tool_jsonHead(f, TOOL, a->model, a->nmodel);
  fprintf(f, ",\"args\":{\"rest_s\":%g,\"control_s\":%g,\"controls\":\"%s\",\"seed\":%ld,"
             "\"rounds\":%ld,\"steps\":%ld,\"default_models\":%s,\"mujoco_version\":%d},",
          a->rest_s, CONTROL_S, a->zero ? "zero" : "smooth", a->seed, a->rounds, a->steps,
          a->defaults ? "true" : "false", mj_version());
  fprintf(f, "\"status\":");
  tool_jsonString(f, status);
  fprintf(f, ",\"metrics\":{\"per_model\":[");
  int firstModel = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    tool_jsonModelHead(f, &firstModel, r->path, r->name);
    fprintf(f, ",\"nv\":%d,\"nbody\":%d,\"nu\":%d,\"integrator\":\"%s\",\"timestep_s\":%g,"
               "\"stripped_numerics\":%d,\"timing_rounds\":%d,\"timing_steps\":%ld,"
               "\"native\":",
            r->nv, r->nbody, r->nu, tool_integratorName(r->integrator), r->timestep,
            r->stripped, r->rounds, r->steps);
    jsonMode(f, r, NATIVE);
    fprintf(f, ",\"written\":");
    jsonMode(f, r, WRITTEN);
    fprintf(f, ",\"defaults\":");
    jsonMode(f, r, r->stripped ? DEFAULTS : WRITTEN);
    fprintf(f, ",\"implicit\":");
    jsonMode(f, r, IMPLICIT);
    fprintf(f, ",\"defaults_same_as_written\":%s}", r->stripped ? "false" : "true");
  }
  fprintf(f, "],\"skipped\":[");
  for (int i = 0; i < nsk; i++) {
    fprintf(f, "%s{\"model\":", i ? "," : "");
    tool_jsonString(f, sk[i].path);
    fprintf(f, ",\"reason\":");
    tool_jsonString(f, sk[i].reason);
    fputc('}', f);
  }
  fprintf(f, "]},\"series\":[");
  int first = 1;
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    for (int k = 0; k < r->rounds; k++) {
      tool_jsonRoundHead(f, &first, r->name, k, kModeName[k % NMODE]);
      for (int j = 0; j < NMODE; j++) {
        if (!modeRuns(r->stripped, j)) continue;
        char key[40];
        snprintf(key, sizeof(key), "%s_us_per_step", kModeName[j]);
        jsonNum(f, key, r->md[j].diverged ? NAN : r->md[j].t_round[k]);
      }
      fputc('}', f);
    }
  }
  fprintf(f, "]}\n");
}

//---------------------------------- main ----------------------------------------------------------

// the model's file name without extension, or parent/name when another model has that name
static void displayName(const args* a, int i, char* name, size_t n) {
  tool_baseName(a->model[i], name, n);
  int clash = 0;
  for (int j = 0; j < a->nmodel && !clash; j++) {
    char other[256];
    tool_baseName(a->model[j], other, sizeof(other));
    clash = j != i && !strcmp(other, name);
  }
  if (!clash) return;
  const char* end = strrchr(a->model[i], '/');
  if (!end) return;
  const char* start = end;
  while (start > a->model[i] && start[-1] != '/') start--;
  char stem[256];
  snprintf(stem, sizeof(stem), "%s", name);
  int w = snprintf(name, n, "%.*s/", (int)(end - start), start);
  if (w >= 0 && (size_t)w < n) snprintf(name + w, n - (size_t)w, "%.*s", (int)(n - (size_t)w - 1), stem);
}

static void progress(int i, int n, const result* r, double sec) {
  fprintf(stderr, TOOL ": [%d/%d] %-26s", i + 1, n, r->name);
  const mode* nat = r->md + NATIVE;
  if (nat->diverged) {
    fprintf(stderr, " native diverged");
  } else {
    fprintf(stderr, " native ok");
  }
  for (int j = WRITTEN; j < NMODE; j++) {
    if (!modeRuns(r->stripped, j)) continue;
    const mode* md = r->md + j;
    if (md->diverged) {
      fprintf(stderr, " | %s diverged", kModeName[j]);
    } else if (!nat->diverged) {
      fprintf(stderr, " | %s dev0.5 %8.2f mm cost %5.2f", kModeName[j], md->dev_mm[1],
              isfinite(md->ratio) ? md->ratio : 0.0);
      if (md->substeps > 1) fprintf(stderr, " (%d substeps)", md->substeps);
    }
  }
  fprintf(stderr, "  (%.1f s)\n", sec);
}

int main(int argc, char** argv) {
  args a;
  memset(&a, 0, sizeof(a));
  parseArgs(argc, argv, &a);
  tool_catchInterrupt();
  tool_catchWarnings(TOOL);

  result* res = calloc((size_t)a.nmodel, sizeof(result));
  skipped* sk = calloc((size_t)a.nmodel, sizeof(skipped));
  if (!res || !sk) tool_outOfMemory(TOOL);
  int n = 0, nsk = 0;
  for (int i = 0; i < a.nmodel && !tool_interrupted(); i++) {
    memset(res + n, 0, sizeof(result));
    res[n].path = a.model[i];
    displayName(&a, i, res[n].name, sizeof(res[n].name));
    double t0 = tool_now();
    char reason[600] = "";
    if (!benchModel(&a, res + n, reason, sizeof(reason))) {
      for (int j = 0; j < NMODE; j++) free(res[n].md[j].t_round);
      sk[nsk].path = a.model[i];
      for (char* c = reason; *c; c++) {
        if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';  // MuJoCo's messages span lines
      }
      snprintf(sk[nsk].reason, sizeof(sk[nsk].reason), "%s", reason);
      fprintf(stderr, TOOL ": [%d/%d] skipped %s: %s\n", i + 1, a.nmodel, a.model[i], reason);
      nsk++;
      continue;
    }
    progress(i, a.nmodel, res + n, tool_now() - t0);
    n++;
  }
  int interrupted = tool_interrupted();
  int ok = n > 0;
  const char* status = tool_runStatus(interrupted, ok);

  int toStdout = a.json && !strcmp(a.json, "-");
  if (toStdout) {
    printJson(stdout, &a, res, n, sk, nsk, status);
  } else {
    printTable(stdout, res, n, sk, nsk);
    if (a.json) {
      FILE* f = tool_openOut(TOOL, a.json);
      if (f) printJson(f, &a, res, n, sk, nsk, status);
      if (!tool_closeOut(TOOL, a.json, f)) ok = 0;
    }
  }

  for (int i = 0; i < n; i++) {
    for (int j = 0; j < NMODE; j++) free(res[i].md[j].t_round);
  }
  free(res);
  free(sk);
  if (a.defaults) {
    for (int i = 0; i < a.nmodel; i++) free(a.model[i]);
  }
  free(a.model);
  return tool_exitCode(interrupted, ok);
}
