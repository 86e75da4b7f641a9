// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-bench-estimate: the EKF on the analytic step and sensor Jacobians against the same EKF on
// MuJoCo's finite-difference mjd_transitionFD Jacobians (and the UKF), in one run, per model:
// time per filter step (update + predict) and RMSE of the estimate to the truth.
//
//   truth     x_0 = keyframe 0 (or qpos0), x_{k+1} = mjdiff_step(x_k, u_k), u: tool_smoothCtrl
//   readings  y_k = h(x_k, u_k) + N(0, sigma_y^2) per row, every sensor with a derivative (a model
//             with none gets encoders, jointpos of every hinge and slide joint, and the pose and
//             angular velocity of its first free body: framepos, framequat, frameangvel)
//   filters   start at x_0 (+) e_0, e_0 = (+-sigma0_q per dq row, +-sigma0_v per dv row), with
//             P_0 = diag(e_0^2); per step k: update(u_k, y_k), predict(u_k)
//   time      t_filter = (wall time of the whole run) / (T + 1), the best of --rounds runs with
//             the filters' order rotated each round; ratio = t_fd / t_analytic
//   RMSE      over k = 0..T of the filtered estimate (after the update) against x_k:
//             rmse_q = sqrt(mean over k and dq rows of (x_k (-) xhat_k)^2), rmse_v likewise (dv)
// The FD EKF differentiates the plain mj_step of a copy of the model with the smooth model
// attached (the same dynamics); with RK4 mjd_transitionFD differences an Euler-type step in
// MuJoCo 2.2.2 (shared NOTES), so its A is off for RK4 models (acrobot).

#include <math.h>
#include <mjdiff/estimate.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/state.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "toolutil.h"

#define TOOL "mjdiff-bench-estimate"
#define HUMANOID "/usr/share/mujoco/model/humanoid/humanoid.xml"
#define TARGET_SPEEDUP 5.0

static const char* const kBundled[] = {"cartpole.xml", "acrobot.xml", "hopper.xml",
                                       "cheetah.xml",  "arm_box.xml", "quadruped.xml"};
#define NBUNDLED ((int)(sizeof(kBundled) / sizeof(kBundled[0])))
static char kHumanoid[] = HUMANOID;

enum { F_EKF = 0, F_FD, F_UKF, NFILTER };
static const char* kFilterName[NFILTER] = {"ekf", "ekf_fd", "ukf"};

typedef struct args_ {
  char** model;
  int nmodel, defaults;
  int steps;
  long seed;
  double sigma_y, sigma0_q, sigma0_v, fd_eps;
  int ukf;
  int rounds;
  const char* out;
} args;

typedef struct result_ {
  char name[64];
  int nv, ndx, ny;
  int ok[NFILTER];
  double t[NFILTER];  // s per filter step
  double rmse_q[NFILTER], rmse_v[NFILTER];
  char error[NFILTER][600];
  int rounds_done;         // rounds completed before the current one
} result;

static void usage(void) {
  printf(
      "usage: %s [options] [MODEL.xml ...]\n\n"
      "The EKF on mjdiff's analytic step and sensor Jacobians against the same EKF on MuJoCo's\n"
      "mjd_transitionFD Jacobians and the UKF, in one run: time per filter step (update +\n"
      "predict), the ratio FD / analytic, and the RMSE of each estimate to the simulated truth.\n"
      "Default models: the bundled %s ... and %s (with encoders and the torso's pose and\n"
      "angular velocity as sensors; target: analytic >= %gx faster than FD).\n\n"
      "options:\n"
      "  --steps T       filter steps (default 200)\n"
      "  --seed N        controls and noise (default 1)\n"
      "  --sigma-y S     reading noise std, every row (default 0.01)\n"
      "  --sigma0-q S    initial error and std per dq row (default 0.01)\n"
      "  --sigma0-v S    initial error and std per dv row (default 0.05)\n"
      "  --fd-eps E      step of mjd_transitionFD (default 1e-6, forward differences)\n"
      "  --rounds N      runs of each filter, order rotated; the best time is kept (default 3)\n"
      "  --no-ukf        skip the UKF\n"
      "  --out FILE      JSON report to FILE\n"
      "  --help          show this help and exit\n\n"
      "Exit status: 0 done, 1 runtime error, 2 usage error, 130 interrupted.\n",
      TOOL, kBundled[0], HUMANOID, TARGET_SPEEDUP);
}

static void parseArgs(int argc, char** argv, args* a) {
  memset(a, 0, sizeof(*a));
  a->steps = 200;
  a->seed = 1;
  a->sigma_y = 0.01;
  a->sigma0_q = 0.01;
  a->sigma0_v = 0.05;
  a->fd_eps = 1e-6;
  a->ukf = 1;
  a->rounds = 3;
  a->model = calloc((size_t)argc + NBUNDLED + 1, sizeof(char*));
  if (!a->model) tool_outOfMemory(TOOL);
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (tool_isHelp(o)) {
      usage();
      exit(TOOL_EXIT_OK);
    } else if (!strcmp(o, "--steps")) {
      a->steps = (int)tool_intOption(TOOL, argc, argv, &i, 1, 1000000, "an integer in [1, 1e6]");
    } else if (!strcmp(o, "--seed")) {
      a->seed = tool_intOption(TOOL, argc, argv, &i, 0, 2147483647L, "an integer >= 0");
    } else if (!strcmp(o, "--sigma-y")) {
      a->sigma_y = tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "> 0");
    } else if (!strcmp(o, "--sigma0-q")) {
      a->sigma0_q = tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "> 0");
    } else if (!strcmp(o, "--sigma0-v")) {
      a->sigma0_v = tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "> 0");
    } else if (!strcmp(o, "--fd-eps")) {
      a->fd_eps = tool_doubleOption(TOOL, argc, argv, &i, 0, 1, TOOL_OPEN_LO, "in (0, 1]");
    } else if (!strcmp(o, "--rounds")) {
      a->rounds = (int)tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in [1, 1000]");
    } else if (!strcmp(o, "--no-ukf")) {
      a->ukf = 0;
    } else if (!strcmp(o, "--out")) {
      a->out = tool_outputOption(TOOL, argc, argv, &i);
    } else if (o[0] == '-' && o[1]) {
      tool_usageError(TOOL, "unknown option '%s'", o);
    } else {
      a->model[a->nmodel++] = argv[i];
    }
  }
  if (a->nmodel == 0) {
    a->defaults = 1;
    tool_bundledModels(TOOL, kBundled, NBUNDLED, a->model, &a->nmodel);
    a->model[a->nmodel++] = kHumanoid;
  }
}

// the model, with sensors added if it has none with a derivative
static mjModel* loadWithSensors(const char* path, char* err, int errsz) {
  mjModel* m = tool_loadModel(path, err, errsz);
  if (!m) return NULL;
  int nsup = 0;
  for (int i = 0; i < m->nsensor; i++) nsup += mjdiff_sensorSupported(m, i);
  if (nsup) return m;
  long size = 0;
  char* text = tool_readFile(path, &size, err, errsz);
  if (!text) {
    mj_deleteModel(m);
    return NULL;
  }
  size_t cap = (size_t)size + 256 * (size_t)(m->njnt + 4);
  char* xml = malloc(cap);
  char* end = strstr(text, "</mujoco>");
  if (!xml || !end) {
    snprintf(err, (size_t)errsz, "%s: no </mujoco> to add sensors before", path);
    free(xml);
    free(text);
    mj_deleteModel(m);
    return NULL;
  }
  size_t n = (size_t)(end - text);
  memcpy(xml, text, n);
  n += (size_t)snprintf(xml + n, cap - n, "<sensor>\n");
  for (int j = 0; j < m->njnt; j++) {
    const char* nm = mj_id2name(m, mjOBJ_JOINT, j);
    int type = m->jnt_type[j];
    if (nm && (type == mjJNT_HINGE || type == mjJNT_SLIDE)) {
      n += (size_t)snprintf(xml + n, cap - n, "<jointpos name=\"enc_%s\" joint=\"%s\"/>\n", nm, nm);
    }
    if (type == mjJNT_FREE) {
      const char* bn = mj_id2name(m, mjOBJ_BODY, m->jnt_bodyid[j]);
      if (bn) {
        n += (size_t)snprintf(xml + n, cap - n,
                              "<framepos name=\"pose_pos\" objtype=\"body\" objname=\"%s\"/>\n"
                              "<framequat name=\"pose_quat\" objtype=\"body\" objname=\"%s\"/>\n"
                              "<frameangvel name=\"gyro\" objtype=\"body\" objname=\"%s\"/>\n",
                              bn, bn, bn);
      }
    }
  }
  n += (size_t)snprintf(xml + n, cap - n, "</sensor>\n%s", end);
  mj_deleteModel(m);
  m = tool_loadXMLText(path, xml, (long)n, err, errsz);
  free(xml);
  free(text);
  return m;
}

static double gaussian(uint64_t* rng) {
  double u1 = tool_uniform(rng), u2 = tool_uniform(rng);
  return sqrt(-2 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2);
}

// one filter run; 0 on failure (error set)
static int runFilter(const args* a, const mjModel* m, const mjdiffModel* s, int kind,
                     const mjtNum* X, const mjtNum* U, const mjtNum* Y, result* r) {
  int T = a->steps, nx = mjdiff_stateSize(m), ndx = mjdiff_tangentSize(m), nv = m->nv;
  int nu = m->nu, ns = m->nsensordata;
  mjdiffFilterDef def;
  mjdiff_defaultFilterDef(&def);
  def.method = kind == F_UKF ? MJDIFF_FILTER_UKF : MJDIFF_FILTER_EKF;
  def.jacobian = kind == F_FD ? MJDIFF_JAC_FD : MJDIFF_JAC_ANALYTIC;
  def.fd_eps = a->fd_eps;
  def.sigma_sensor = a->sigma_y;
  // only the sensors with a derivative
  const char** names = calloc((size_t)m->nsensor + 1, sizeof(char*));
  int nn = 0;
  for (int i = 0; i < m->nsensor; i++) {
    const char* nm = mj_id2name(m, mjOBJ_SENSOR, i);
    if (nm && mjdiff_sensorSupported(m, i)) names[nn++] = nm;
  }
  def.sensors = names;
  def.nsensor = nn;
  mjdiffFilter* f = NULL;
  char err[512];
  mjtNum* x = calloc((size_t)nx, sizeof(mjtNum));
  mjtNum* e = calloc((size_t)ndx, sizeof(mjtNum));
  mjtNum* P = calloc((size_t)ndx * ndx, sizeof(mjtNum));
  if (!names || !x || !e || !P) tool_outOfMemory(TOOL);
  int ok = 0;
  if (mjdiff_makeFilter(m, s, &def, &f, err, sizeof(err)) != MJDIFF_OK) goto done;
  for (int i = 0; i < ndx; i++) {
    double sd = i < nv ? a->sigma0_q : a->sigma0_v;
    e[i] = (i % 2 ? sd : -sd);
    P[(size_t)i * ndx + i] = sd * sd;
  }
  mjdiff_stateIntegrate(m, X, e, 1, x);
  if (mjdiff_filterReset(f, x, P, 0, err, sizeof(err)) != MJDIFF_OK) goto done;
  double sq = 0, sv = 0;
  double t0 = tool_now();
  for (int k = 0; k <= T; k++) {
    const mjtNum* u = nu ? U + (size_t)nu * (k < T ? k : T - 1) : NULL;
    if (mjdiff_filterUpdate(f, u, Y + (size_t)ns * k, err, sizeof(err)) != MJDIFF_OK) goto done;
    mjdiff_filterGet(f, x, NULL, NULL, NULL);
    mjdiff_stateDiff(m, X + (size_t)nx * k, x, e);
    for (int i = 0; i < nv; i++) sq += e[i] * e[i];
    for (int i = 0; i < nv; i++) sv += e[nv + i] * e[nv + i];
    if (k == T) break;
    if (mjdiff_filterPredict(f, u, err, sizeof(err)) != MJDIFF_OK) goto done;
    if (tool_interrupted()) {
      snprintf(err, sizeof(err), "interrupted");
      goto done;
    }
  }
  double tk = (tool_now() - t0) / (T + 1);
  if (!r->ok[kind] || tk < r->t[kind]) r->t[kind] = tk;  // best of the rounds
  r->rmse_q[kind] = sqrt(sq / ((double)(T + 1) * nv));
  r->rmse_v[kind] = sqrt(sv / ((double)(T + 1) * nv));
  ok = 1;
done:
  if (!ok) snprintf(r->error[kind], sizeof(r->error[kind]), "%s", err);
  r->ok[kind] = ok && (r->ok[kind] || r->rounds_done == 0);
  r->ny = nn;
  mjdiff_freeFilter(f);
  free(names);
  free(x);
  free(e);
  free(P);
  return ok;
}

static int benchModel(const args* a, const char* path, result* r) {
  char err[1024];
  memset(r, 0, sizeof(*r));
  tool_baseName(path, r->name, sizeof(r->name));
  mjModel* m = loadWithSensors(path, err, sizeof(err));
  if (!m) {
    fprintf(stderr, "%s: error: %s\n", TOOL, err);
    return 0;
  }
  mjdiffModel* s = NULL;
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s: %s\n", TOOL, path, err);
    mj_deleteModel(m);
    return 0;
  }
  int T = a->steps, nx = mjdiff_stateSize(m), nu = m->nu, ns = m->nsensordata;
  r->nv = m->nv;
  r->ndx = mjdiff_tangentSize(m);
  mjtNum* X = calloc((size_t)(T + 1) * nx, sizeof(mjtNum));
  mjtNum* U = calloc((size_t)T * (nu ? nu : 1), sizeof(mjtNum));
  mjtNum* Y = calloc((size_t)(T + 1) * (ns ? ns : 1), sizeof(mjtNum));
  mjData* d = mj_makeData(m);
  if (!X || !U || !Y || !d) tool_outOfMemory(TOOL);
  tool_smoothCtrl(m, T, (uint64_t)a->seed, U);
  tool_resetState(m, d);
  d->time = 0;
  uint64_t rng = (uint64_t)a->seed + 17;
  int ok = 1;
  for (int k = 0; k <= T && ok; k++) {
    if (nu) mju_copy(d->ctrl, U + (size_t)nu * (k < T ? k : T - 1), nu);
    if (mjdiff_forward(m, d, s, err, sizeof(err)) != MJDIFF_OK) ok = 0;
    mjdiff_getState(m, d, X + (size_t)nx * k);
    for (int i = 0; i < ns; i++)
      Y[(size_t)ns * k + i] = d->sensordata[i] + a->sigma_y * gaussian(&rng);
    if (k < T && ok && mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "%s: error: %s: simulating the truth: %s\n", TOOL, path, err);
  } else {
    // rounds of the three filters, the order rotated each round; the best time of each is kept
    for (int round = 0; round < a->rounds && !tool_interrupted(); round++) {
      r->rounds_done = round;
      for (int j = 0; j < NFILTER; j++) {
        int kind = (round + j) % NFILTER;
        if (kind == F_UKF && !a->ukf) continue;
        if (round > 0 && !r->ok[kind]) continue;
        if (!runFilter(a, m, s, kind, X, U, Y, r)) {
          fprintf(stderr, "%s: %s: %s failed: %s\n", TOOL, r->name, kFilterName[kind],
                  r->error[kind]);
        }
      }
    }
  }
  mj_deleteData(d);
  free(X);
  free(U);
  free(Y);
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return ok;
}

static void printTable(FILE* f, const args* a, const result* res, int n) {
  fprintf(f, "EKF per filter step (update + predict), %d steps, reading noise %g:\n", a->steps,
          a->sigma_y);
  fprintf(f, "%-11s %4s %4s %10s %10s %7s %10s | %-23s %-23s %-23s\n", "model", "ndx", "ny",
          "ekf_us", "ekf_fd_us", "fd/ekf", "ukf_us", "rmse_q ekf/fd/ukf", "", "rmse_v ekf/fd/ukf");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    double ratio = r->ok[F_EKF] && r->ok[F_FD] ? r->t[F_FD] / r->t[F_EKF] : NAN;
    fprintf(f, "%-11s %4d %4d %10.1f %10.1f %7.2f %10.1f | %.2e %.2e %.2e   %.2e %.2e %.2e\n",
            r->name, r->ndx, r->ny, r->ok[F_EKF] ? 1e6 * r->t[F_EKF] : NAN,
            r->ok[F_FD] ? 1e6 * r->t[F_FD] : NAN, ratio, r->ok[F_UKF] ? 1e6 * r->t[F_UKF] : NAN,
            r->ok[F_EKF] ? r->rmse_q[F_EKF] : NAN, r->ok[F_FD] ? r->rmse_q[F_FD] : NAN,
            r->ok[F_UKF] ? r->rmse_q[F_UKF] : NAN, r->ok[F_EKF] ? r->rmse_v[F_EKF] : NAN,
            r->ok[F_FD] ? r->rmse_v[F_FD] : NAN, r->ok[F_UKF] ? r->rmse_v[F_UKF] : NAN);
  }
}

static void writeJson(FILE* f, const args* a, const result* res, int n, int status) {
  tool_jsonHead(f, TOOL, a->model, a->nmodel);
  fprintf(f,
          ",\"args\":{\"rounds\":%d,\"steps\":%d,\"seed\":%ld,\"sigma_y\":%g,\"sigma0_q\":%g,"
          "\"sigma0_v\":%g,\"fd_eps\":%g}",
          a->rounds, a->steps, a->seed, a->sigma_y, a->sigma0_q, a->sigma0_v, a->fd_eps);
  fprintf(f, ",\"status\":\"%s\",\"metrics\":[", status ? "ok" : "error");
  for (int i = 0; i < n; i++) {
    const result* r = res + i;
    fprintf(f, "%s{\"model\":", i ? "," : "");
    tool_jsonString(f, r->name);
    fprintf(f, ",\"ndx\":%d,\"nsensor\":%d", r->ndx, r->ny);
    for (int k = 0; k < NFILTER; k++) {
      fprintf(f, ",\"%s\":{\"ok\":%s", kFilterName[k], r->ok[k] ? "true" : "false");
      tool_jsonField(f, "us_per_step", r->ok[k] ? 1e6 * r->t[k] : NAN);
      fprintf(f, ",");
      tool_jsonField(f, "rmse_q", r->ok[k] ? r->rmse_q[k] : NAN);
      fprintf(f, ",");
      tool_jsonField(f, "rmse_v", r->ok[k] ? r->rmse_v[k] : NAN);
      if (!r->ok[k] && r->error[k][0]) {
        fprintf(f, ",\"error\":");
        tool_jsonString(f, r->error[k]);
      }
      fprintf(f, "}");
    }
    fprintf(f, ",");
    tool_jsonField(f, "fd_over_ekf", r->ok[F_EKF] && r->ok[F_FD] ? r->t[F_FD] / r->t[F_EKF] : NAN);
    fprintf(f, "}");
  }
  fprintf(f, "]");
  tool_jsonNullNote(f);
  fprintf(f, "}\n");
}

int main(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
  tool_catchWarnings(TOOL);
  tool_catchInterrupt();
  result* res = calloc((size_t)a.nmodel + 1, sizeof(result));
  if (!res) tool_outOfMemory(TOOL);
  int n = 0, allok = 1;
  for (int i = 0; i < a.nmodel && !tool_interrupted(); i++) {
    fprintf(stderr, "%s: %s\n", TOOL, a.model[i]);
    if (benchModel(&a, a.model[i], res + n)) {
      n++;
    } else {
      allok = 0;
    }
  }
  printTable(stdout, &a, res, n);
  if (a.out) {
    FILE* f = tool_openOut(TOOL, a.out);
    if (f) {
      writeJson(f, &a, res, n, allok);
      if (!tool_closeOut(TOOL, a.out, f)) allok = 0;
    } else {
      allok = 0;
    }
  }
  int code = tool_exitCode(tool_interrupted(), allok);
  free(res);
  tool_freeModels(a.model, a.nmodel, a.defaults, kHumanoid);
  return code;
}
