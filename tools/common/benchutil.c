// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.

#define _POSIX_C_SOURCE 200809L

#include "benchutil.h"

#include "toolutil.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//---------------------------------- models --------------------------------------------------------

int tool_joinPath(char* out, size_t n, const char* a, const char* b) {
  int w = snprintf(out, n, "%s/%s", a, b);
  return w >= 0 && (size_t)w < n;
}

// whether dir holds the file probe
static int isModelDir(const char* dir, const char* probe) {
  char path[4096];
  return tool_joinPath(path, sizeof(path), dir, probe) && access(path, R_OK) == 0;
}

void tool_modelDir(const char* probe, char* dir, size_t n) {
  const char* env = getenv("MJDIFF_MODEL_DIR");
  if (env && *env && isModelDir(env, probe) && strlen(env) < n) {
    memcpy(dir, env, strlen(env) + 1);
    return;
  }

  // relative to the executable: installed (bin/ -> share/mjdiff/models), build tree (build/tools/)
  char exe[2048];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len > 0) {
    exe[len] = 0;
    char* slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    const char* rel[] = {"../share/mjdiff/models", "../../models", "../models"};
    for (int i = 0; i < 3; i++) {
      if (tool_joinPath(dir, n, exe, rel[i]) && isModelDir(dir, probe)) return;
    }
  }

  // the source tree the tools were compiled from (CMake passes absolute source paths)
  const char* src = __FILE__;
  const char* tail = strstr(src, "tools/common/benchutil.c");
  if (src[0] == '/' && tail) {
    int w = snprintf(dir, n, "%.*smodels", (int)(tail - src), src);
    if (w >= 0 && (size_t)w < n && isModelDir(dir, probe)) return;
  }
  dir[0] = 0;
}

void tool_bundledModels(const char* tool, const char* const* bundled, int nbundled, char** model,
                        int* nmodel) {
  char dir[4096];
  tool_modelDir(bundled[0], dir, sizeof(dir));
  if (!dir[0]) {
    fprintf(stderr, "%s: note: bundled models not found (set MJDIFF_MODEL_DIR)\n", tool);
  }
  for (int i = 0; i < nbundled && dir[0]; i++) {
    char path[4096];
    if (!tool_joinPath(path, sizeof(path), dir, bundled[i]) || access(path, R_OK) != 0) {
      fprintf(stderr, "%s: note: skipping missing bundled model %s\n", tool, path);
      continue;
    }
    model[*nmodel] = malloc(strlen(path) + 1);
    if (!model[*nmodel]) break;
    strcpy(model[(*nmodel)++], path);
  }
}

int tool_globPaths(const char* pattern, char*** list, int* n) {
  glob_t g;
  memset(&g, 0, sizeof(g));
  int rc = glob(pattern, 0, NULL, &g);
  if (rc == GLOB_NOMATCH) {
    globfree(&g);
    return 1;
  }
  if (rc != 0) {
    globfree(&g);
    return rc != GLOB_NOSPACE;
  }
  char** grown = realloc(*list, sizeof(char*) * ((size_t)*n + g.gl_pathc + 1));
  if (!grown) {
    globfree(&g);
    return 0;
  }
  *list = grown;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    char* p = malloc(strlen(g.gl_pathv[i]) + 1);
    if (!p) {
      globfree(&g);
      return 0;
    }
    strcpy(p, g.gl_pathv[i]);
    (*list)[(*n)++] = p;
  }
  globfree(&g);
  return 1;
}

void tool_baseName(const char* path, char* name, size_t n) {
  const char* b = strrchr(path, '/');
  b = b ? b + 1 : path;
  snprintf(name, n, "%s", b);
  char* dot = strrchr(name, '.');
  if (dot && dot != name) *dot = 0;
}

const char* tool_smoothStepText(const mjModel* m, const mjdiffModel* s, char* buf, size_t n) {
  if (!buf || !n) return buf;
  if (mjdiff_getOptions(s)->integrator == MJDIFF_INT_IMPLICIT) {
    snprintf(buf, n, "implicit smooth step (backward Euler on the smooth forces)");
  } else {
    int k = mjdiff_substepCount(s);
    snprintf(buf, n, "explicit smooth step, %d substep%s of %g s", k, k == 1 ? "" : "s",
             m->opt.timestep / k);
  }
  return buf;
}

const char* tool_integratorName(int integrator) {
  switch (integrator) {
    case mjINT_EULER:
      return "Euler";
    case mjINT_RK4:
      return "RK4";
#if mjVERSION_HEADER >= 3000000
    case mjINT_IMPLICITFAST:
      return "implicitfast";
#endif
    default:
      return "implicit";
  }
}

//---------------------------------- statistics ----------------------------------------------------

static int compareDouble(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

double tool_median(const double* x, int n) {
  if (n <= 0) return NAN;
  double* y = malloc(sizeof(double) * (size_t)n);
  if (!y) return NAN;
  memcpy(y, x, sizeof(double) * (size_t)n);
  qsort(y, (size_t)n, sizeof(double), compareDouble);
  double med = n % 2 ? y[n / 2] : 0.5 * (y[n / 2 - 1] + y[n / 2]);
  free(y);
  return med;
}

//---------------------------------- random numbers, controls, states ------------------------------

uint64_t tool_random64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double tool_uniform(uint64_t* state) {
  return (double)(tool_random64(state) >> 11) / 9007199254740992.0;
}

void tool_ctrlRange(const mjModel* m, int i, mjtNum* lo, mjtNum* hi) {
  *lo = -1;
  *hi = 1;
  if (m->actuator_ctrllimited[i]) {
    *lo = m->actuator_ctrlrange[2 * i];
    *hi = m->actuator_ctrlrange[2 * i + 1];
  }
}

void tool_randomCtrl(const mjModel* m, mjtNum* ctrl, uint64_t* rng) {
  for (int i = 0; i < m->nu; i++) {
    mjtNum lo, hi;
    tool_ctrlRange(m, i, &lo, &hi);
    ctrl[i] = lo + (hi - lo) * tool_uniform(rng);
  }
}

void tool_smoothCtrl(const mjModel* m, int T, uint64_t seed, mjtNum* ctrl) {
  int nu = m->nu;
  uint64_t rng = seed;
  for (int i = 0; i < nu; i++) {
    double phase = 6.283185307179586 * tool_uniform(&rng);
    mjtNum lo, hi;
    tool_ctrlRange(m, i, &lo, &hi);
    for (int t = 0; t < T; t++) {
      ctrl[(size_t)nu * t + i] = lo + (hi - lo) * (0.5 + 0.4 * sin(0.05 * t + phase));
    }
  }
}

int tool_badWarnings(const mjData* d) {
  return d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number +
         d->warning[mjWARN_BADQACC].number;
}

void tool_resetState(const mjModel* m, mjData* d) {
  if (m->nkey > 0) {
    mj_resetDataKeyframe(m, d, 0);
  } else {
    mj_resetData(m, d);
  }
}

int tool_ranAway(const mjModel* m, const mjData* d, char* msg, int msgsz) {
  for (int i = 0; i < m->nv; i++) {
    if (fabs(d->qvel[i]) > TOOL_RUNAWAY) {
      snprintf(msg, (size_t)msgsz, "ran away: |qvel[%d]| = %.3g > %g at t = %.4g s", i,
               fabs(d->qvel[i]), TOOL_RUNAWAY, d->time);
      return 1;
    }
  }
  return 0;
}

//---------------------------------- runs ----------------------------------------------------------

const char* tool_runStatus(int interrupted, int ok) {
  return interrupted ? "interrupted" : ok ? "ok" : "error";
}

int tool_exitCode(int interrupted, int ok) {
  if (interrupted) return TOOL_EXIT_INTERRUPTED;
  return ok ? TOOL_EXIT_OK : TOOL_EXIT_RUNTIME;
}

void tool_freeModels(char** model, int nmodel, int defaults, const char* keep) {
  if (defaults) {
    for (int i = 0; i < nmodel; i++) {
      if (model[i] != keep) free(model[i]);
    }
  }
  free(model);
}

void tool_jsonModelHead(FILE* f, int* first, const char* path, const char* name) {
  fprintf(f, "%s{\"model\":", *first ? "" : ",");
  *first = 0;
  tool_jsonString(f, path);
  fprintf(f, ",\"name\":");
  tool_jsonString(f, name);
}

void tool_jsonRoundHead(FILE* f, int* first, const char* name, int round, const char* firstName) {
  fprintf(f, "%s{\"model\":", *first ? "" : ",");
  *first = 0;
  tool_jsonString(f, name);
  fprintf(f, ",\"round\":%d,\"first\":\"%s\"", round, firstName);
}
