// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-estimate: state estimation on a recording (the CSV format of mjdiff-sysid,
// tools/common/recording.h) with the smooth model: EKF, UKF, batch or moving-horizon
// estimation (<mjdiff/estimate.h>).
//
//   readings    the recording's sensor:* columns (the selected sensors; empty or NaN fields are
//               missing readings: skipped and counted)
//   truth       its qpos:* and qvel:* columns, where complete (mjdiff-sysid --generate with
//               --noise-qpos 0 --noise-qvel 0 writes the true states there)
//   filters     x_0 guess = keyframe 0 (or qpos0) with zero velocity, or --x0 truth; P_0 =
//               diag(p0_qpos^2 (dq rows), p0_qvel^2 (dv rows), p0_qvel^2 (da rows)); per step k:
//               update(u_k, y_k), then predict(u_k); the state written is the filtered one
//   batch       the initial state (and --param values) by Gauss-Newton with a prior of the same
//               P_0 on the guess; states x_t = the rollout from the estimate, their covariance
//               G_t cov G_t', G_t = [Phi_t Psi_t], G_{t+1} = A_t G_t + [0 P_t] (step Jacobians)
//   mhe         mjdiff_mheEstimate with window --window and --max-iter iterations per window;
//               real-time factor = simulated time / wall time
//   RMSE        over the steps with truth: sqrt(mean (x_t (-) xhat_t)^2) over the dq rows (and
//               the dv rows)
//   observability  rank of the Gauss-Newton matrix of the first min(T, 50) steps' readings in
//               the initial state (mjdiff_batchEstimate with max_iter 0): < 2nv+na warns

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/estimate.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>
#include <mjdiff/state.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recording.h"
#include "toolutil.h"

static const char* kTool = "mjdiff-estimate";

#define MAXLIST 256
#define MAXPLOT 6

typedef struct args_ {
  const char* model;
  const char* data;
  const char* method;
  int fd;
  const char* sensor[MAXLIST];
  int nsensor;
  const char* param[MAXLIST];
  int nparam;
  double sigma_sensor, sigma_qpos, sigma_qvel, p0_qpos, p0_qvel;
  int x0_truth;
  int max_iter;
  int window;
  const char* csv;
  const char* png;
  const char* out;
  int quiet;
} args;

static void usage(void) {
  printf(
      "usage: %s [options] MODEL.xml DATA.csv\n\n"
      "Estimate the states of a recording (mjdiff-sysid's CSV format) with the smooth model:\n"
      "an extended Kalman filter on exact step and sensor Jacobians (or on MuJoCo's\n"
      "finite-difference mjd_transitionFD), an unscented Kalman filter, a batch fit of the\n"
      "initial state (and parameters) by Gauss-Newton through the rollout, or moving-horizon\n"
      "estimation (batch fits of the last N steps with an EKF's arrival cost).\n\n"
      "options:\n"
      "  --method M          ekf, ukf, batch or mhe (moving horizon) (default ekf)\n"
      "  --jacobian J        ekf: analytic or fd (default analytic)\n"
      "  --sensor NAME       a measured sensor (repeat; default every sensor with a column in\n"
      "                      DATA)\n"
      "  --sigma-sensor S    reading noise std (default 0.01)\n"
      "  --sigma-qpos S      process noise std per step, dq rows (default 1e-4)\n"
      "  --sigma-qvel S      process noise std per step, dv and activation rows (default 1e-3)\n"
      "  --p0-qpos S         initial std of the dq rows (default 0.1)\n"
      "  --p0-qvel S         initial std of the dv and activation rows (default 1)\n"
      "  --x0 G              initial guess: model (keyframe 0 or qpos0, zero velocity) or truth\n"
      "                      (the recording's first qpos and qvel row) (default model)\n"
      "  --param NAME        batch: also fit this model parameter (mjdiff-sysid's names; repeat)\n"
      "  --max-iter N        batch: Gauss-Newton iterations (default 50); mhe: per window\n"
      "                      (default 3)\n"
      "  --window N          mhe: steps per window (default 20)\n"
      "  --csv FILE          estimated states: time_s, qpos:*, qvel:*, act:*, then std_dq:*,\n"
      "                      std_dv:*, std_da:* (the tangent rows' standard deviations; empty\n"
      "                      where undefined)\n"
      "  --png FILE          plot (gnuplot) of up to %d positions against truth with 2-sigma "
      "bands\n"
      "  --out FILE          JSON summary to FILE (default: stdout)\n"
      "  --quiet             no progress on stderr\n"
      "  --help              show this help and exit\n\n"
      "Recordings with chosen sensors and noise: mjdiff-sysid --generate OUT.csv --noise-sensor S\n"
      "--noise-qpos 0 --noise-qvel 0 MODEL.xml (the qpos and qvel columns are then the truth).\n"
      "Exit codes: 0 done, 1 runtime error (diverged filter, bad data), 2 usage error.\n",
      kTool, MAXPLOT);
}

static double positive(int argc, char** argv, int* i) {
  return tool_doubleOption(kTool, argc, argv, i, 0, INFINITY, TOOL_OPEN_LO, "a number > 0");
}

static void parseArgs(int argc, char** argv, args* a) {
  memset(a, 0, sizeof(*a));
  a->method = "ekf";
  a->sigma_sensor = 0.01;
  a->sigma_qpos = 1e-4;
  a->sigma_qvel = 1e-3;
  a->p0_qpos = 0.1;
  a->p0_qvel = 1;
  a->max_iter = -1;  // batch 50, mhe 3
  a->window = 20;
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char* s = argv[i];
    if (tool_isHelp(s)) {
      usage();
      exit(TOOL_EXIT_OK);
    } else if (!strcmp(s, "--method")) {
      a->method = tool_optionValue(kTool, argc, argv, &i);
      if (strcmp(a->method, "ekf") && strcmp(a->method, "ukf") && strcmp(a->method, "batch") &&
          strcmp(a->method, "mhe")) {
        tool_usageError(kTool, "--method must be ekf, ukf, batch or mhe, got '%s'", a->method);
      }
    } else if (!strcmp(s, "--jacobian")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!strcmp(v, "analytic"))
        a->fd = 0;
      else if (!strcmp(v, "fd"))
        a->fd = 1;
      else
        tool_usageError(kTool, "--jacobian must be analytic or fd, got '%s'", v);
    } else if (!strcmp(s, "--sensor")) {
      if (a->nsensor >= MAXLIST) tool_usageError(kTool, "too many --sensor options");
      a->sensor[a->nsensor++] = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--param")) {
      if (a->nparam >= MAXLIST) tool_usageError(kTool, "too many --param options");
      a->param[a->nparam++] = tool_optionValue(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--sigma-sensor")) {
      a->sigma_sensor = positive(argc, argv, &i);
    } else if (!strcmp(s, "--sigma-qpos")) {
      a->sigma_qpos = tool_doubleOption(kTool, argc, argv, &i, 0, INFINITY, 0, "a number >= 0");
    } else if (!strcmp(s, "--sigma-qvel")) {
      a->sigma_qvel = tool_doubleOption(kTool, argc, argv, &i, 0, INFINITY, 0, "a number >= 0");
    } else if (!strcmp(s, "--p0-qpos")) {
      a->p0_qpos = positive(argc, argv, &i);
    } else if (!strcmp(s, "--p0-qvel")) {
      a->p0_qvel = positive(argc, argv, &i);
    } else if (!strcmp(s, "--x0")) {
      const char* v = tool_optionValue(kTool, argc, argv, &i);
      if (!strcmp(v, "model"))
        a->x0_truth = 0;
      else if (!strcmp(v, "truth"))
        a->x0_truth = 1;
      else
        tool_usageError(kTool, "--x0 must be model or truth, got '%s'", v);
    } else if (!strcmp(s, "--max-iter")) {
      a->max_iter = (int)tool_intOption(kTool, argc, argv, &i, 0, 100000, "an integer in [0, 1e5]");
    } else if (!strcmp(s, "--window")) {
      a->window = (int)tool_intOption(kTool, argc, argv, &i, 1, 100000, "an integer in [1, 1e5]");
    } else if (!strcmp(s, "--csv")) {
      a->csv = tool_outputOption(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--png")) {
      a->png = tool_outputOption(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--out")) {
      a->out = tool_outputOption(kTool, argc, argv, &i);
    } else if (!strcmp(s, "--quiet")) {
      a->quiet = 1;
    } else if (s[0] == '-' && s[1]) {
      tool_usageError(kTool, "unknown option '%s'", s);
    } else if (npos == 0) {
      a->model = s;
      npos++;
    } else if (npos == 1) {
      a->data = s;
      npos++;
    } else {
      tool_usageError(kTool, "one MODEL.xml and one DATA.csv, got '%s' too", s);
    }
  }
  if (!a->model || !a->data) tool_usageError(kTool, "MODEL.xml and DATA.csv are required");
  if (a->max_iter < 0) a->max_iter = strcmp(a->method, "mhe") ? 50 : 3;
  if (a->nparam && strcmp(a->method, "batch")) {
    tool_usageError(kTool, "--param is an option of --method batch");
  }
}

// the name of tangent row i ("slide", "root:3") into buf
static void tangentName(const mjModel* m, int i, char* buf, size_t n) {
  int nv = m->nv;
  if (i >= 2 * nv) {
    int k = i - 2 * nv, act = -1;
    for (int a = 0; a < m->nu; a++) {
      if (mjdiff_actuatorTangentRow(m, a) == i) act = a;
    }
    const char* nm = act >= 0 ? mj_id2name(m, mjOBJ_ACTUATOR, act) : NULL;
    if (nm)
      snprintf(buf, n, "%s", nm);
    else
      snprintf(buf, n, "%d", k);
    return;
  }
  int dof = i % nv, j = m->dof_jntid[dof];
  const char* nm = mj_id2name(m, mjOBJ_JOINT, j);
  int first = 0, cnt = mjdiff_jointTangentRows(m, j, &first, NULL);
  if (cnt > 1)
    snprintf(buf, n, "%s:%d", nm ? nm : "joint", dof - first);
  else
    snprintf(buf, n, "%s", nm ? nm : "joint");
}

typedef struct run_ {
  int T, nx, ndx;
  double* X;  // ((T+1) x nx) estimates
  double* S;  // ((T+1) x ndx) standard deviations
  int* have;  // (T+1) estimate written
  double seconds;
  // batch
  mjdiffBatchEstInfo binfo;
  double* cov;   // (nz^2)
  double* pval;  // (np)
  mjdiffFilterInfo finfo;
  mjdiffMheInfo minfo;
} run;

static int failMsg(const char* what, const char* err) {
  fprintf(stderr, "%s: error: %s: %s\n", kTool, what, err);
  return TOOL_EXIT_RUNTIME;
}

static int runFilter(const args* a, const mjModel* m, const mjdiffModel* s,
                     const sysidRecording* rec, const char* const* names, int nn, const double* x0,
                     const double* P0, run* r) {
  mjdiffFilterDef def;
  mjdiff_defaultFilterDef(&def);
  def.method = strcmp(a->method, "ukf") ? MJDIFF_FILTER_EKF : MJDIFF_FILTER_UKF;
  def.jacobian = a->fd ? MJDIFF_JAC_FD : MJDIFF_JAC_ANALYTIC;
  def.sensors = names;
  def.nsensor = nn;
  def.sigma_sensor = a->sigma_sensor;
  def.sigma_qpos = a->sigma_qpos;
  def.sigma_qvel = a->sigma_qvel;
  def.sigma_act = a->sigma_qvel;
  mjdiffFilter* f = NULL;
  char err[1024];
  if (mjdiff_makeFilter(m, s, &def, &f, err, sizeof(err)) != MJDIFF_OK) {
    return failMsg("filter", err);
  }
  int T = rec->T, nu = m->nu, ns = m->nsensordata, ndx = r->ndx;
  double* P = calloc((size_t)ndx * ndx, sizeof(double));
  if (!P) tool_outOfMemory(kTool);
  int code = TOOL_EXIT_OK;
  if (mjdiff_filterReset(f, x0, P0, rec->t0, err, sizeof(err)) != MJDIFF_OK) {
    code = failMsg("filter", err);
  }
  double t0 = tool_now();
  for (int k = 0; k <= T && code == TOOL_EXIT_OK; k++) {
    const double* u = nu && T > 0 ? rec->ctrl + (size_t)nu * (k < T ? k : T - 1) : NULL;
    if (mjdiff_filterUpdate(f, u, rec->sensor + (size_t)ns * k, err, sizeof(err)) != MJDIFF_OK) {
      code = failMsg("update", err);
      break;
    }
    mjdiff_filterGet(f, r->X + (size_t)r->nx * k, P, NULL, NULL);
    for (int i = 0; i < ndx; i++) r->S[(size_t)ndx * k + i] = sqrt(fmax(0, P[(size_t)i * ndx + i]));
    r->have[k] = 1;
    if (k == T) break;
    if (mjdiff_filterPredict(f, u, err, sizeof(err)) != MJDIFF_OK) {
      code = failMsg("predict", err);
      break;
    }
    if (!a->quiet && (k + 1) % 500 == 0) fprintf(stderr, "%s: step %d of %d\n", kTool, k + 1, T);
  }
  r->seconds = tool_now() - t0;
  mjdiff_filterGet(f, NULL, NULL, NULL, &r->finfo);
  mjdiff_freeFilter(f);
  free(P);
  return code;
}

static int runBatch(const args* a, mjModel* m, mjdiffModel* s, const sysidRecording* rec,
                    const char* const* names, int nn, const mjdiffParams* p, const double* x0,
                    const double* P0, run* r) {
  int T = rec->T, ndx = r->ndx, nx = r->nx, np = mjdiff_paramCount(p), nz = ndx + np;
  char err[1024];
  if (T < 1) return failMsg("batch", "the recording covers no step");
  mjdiffBatchEstDef def;
  mjdiff_defaultBatchEstDef(&def);
  def.sensors = names;
  def.nsensor = nn;
  def.sigma_sensor = a->sigma_sensor;
  def.params = p;
  def.max_iter = a->max_iter;
  double* prior = calloc((size_t)ndx, sizeof(double));
  double* x = calloc((size_t)nx, sizeof(double));
  r->cov = calloc((size_t)nz * nz, sizeof(double));
  r->pval = calloc((size_t)(np ? np : 1), sizeof(double));
  if (!prior || !x || !r->cov || !r->pval) tool_outOfMemory(kTool);
  for (int i = 0; i < ndx; i++) prior[i] = sqrt(P0[(size_t)i * ndx + i]);
  def.prior_sigma = prior;
  mju_copy(x, x0, nx);
  if (np) mjdiff_getParamValues(m, s, p, r->pval);
  double t0 = tool_now();
  mjdiffStatus st = mjdiff_batchEstimate(m, s, &def, T, rec->t0, rec->ctrl, rec->sensor, x,
                                         np ? r->pval : NULL, r->cov, &r->binfo, err, sizeof(err));
  int code = TOOL_EXIT_OK;
  if (st != MJDIFF_OK) {
    code = failMsg("batch", err);
  } else {
    // the rollout from the estimate with the fitted parameters, and G_t cov G_t'
    double* porig = calloc((size_t)(np ? np : 1), sizeof(double));
    double* G = calloc((size_t)ndx * nz, sizeof(double));
    double* G2 = calloc((size_t)ndx * nz, sizeof(double));
    double* A = calloc((size_t)ndx * ndx, sizeof(double));
    double* Pp = calloc((size_t)ndx * (np ? np : 1), sizeof(double));
    if (!porig || !G || !G2 || !A || !Pp) tool_outOfMemory(kTool);
    if (np) {
      mjdiff_getParamValues(m, s, p, porig);
      mjdiff_setParamValues(m, s, p, r->pval, NULL, 0);
    }
    mjdiffStepDeriv* w = NULL;
    mjData* d = mj_makeData(m);
    if (mjdiff_makeStepDeriv(m, s, p, &w, err, sizeof(err)) != MJDIFF_OK || !d) {
      code = failMsg("batch", err);
    }
    for (int i = 0; i < ndx; i++) G[(size_t)i * nz + i] = 1;
    if (code == TOOL_EXIT_OK) {
      mjdiff_setState(m, d, x);
      d->time = rec->t0;
    }
    for (int t = 0; t <= T && code == TOOL_EXIT_OK; t++) {
      mjdiff_getState(m, d, r->X + (size_t)nx * t);
      r->have[t] = 1;
      // std: diag(G cov G')
      for (int i = 0; i < ndx; i++) {
        const double* gi = G + (size_t)i * nz;
        double v = 0;
        for (int k = 0; k < nz; k++) {
          double c = 0;
          for (int l = 0; l < nz; l++) c += r->cov[(size_t)k * nz + l] * gi[l];
          v += gi[k] * c;
        }
        r->S[(size_t)ndx * t + i] = isfinite(v) ? sqrt(fmax(0, v)) : NAN;
      }
      if (t == T) break;
      mju_copy(d->ctrl, rec->ctrl + (size_t)m->nu * t, m->nu);
      if (mjdiff_stepJacobian(m, d, s, w, A, NULL, np ? Pp : NULL, err, sizeof(err)) != MJDIFF_OK ||
          mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) {
        code = failMsg("batch rollout", err);
        break;
      }
      // G <- A G + [0 P]
      for (int i = 0; i < ndx; i++) {
        for (int k = 0; k < nz; k++) {
          double v = k >= ndx ? Pp[(size_t)i * np + (k - ndx)] : 0;
          for (int l = 0; l < ndx; l++) v += A[(size_t)i * ndx + l] * G[(size_t)l * nz + k];
          G2[(size_t)i * nz + k] = v;
        }
      }
      memcpy(G, G2, sizeof(double) * (size_t)ndx * nz);
    }
    if (np) mjdiff_setParamValues(m, s, p, porig, NULL, 0);
    mjdiff_freeStepDeriv(w);
    if (d) mj_deleteData(d);
    free(porig);
    free(G);
    free(G2);
    free(A);
    free(Pp);
  }
  r->seconds = tool_now() - t0;
  free(prior);
  free(x);
  return code;
}

static int runMhe(const args* a, mjModel* m, mjdiffModel* s, const sysidRecording* rec,
                  const char* const* names, int nn, const double* x0, const double* P0, run* r) {
  if (rec->T < 1) return failMsg("mhe", "the recording covers no step");
  mjdiffMheDef def;
  mjdiff_defaultMheDef(&def);
  def.batch.sensors = names;
  def.batch.nsensor = nn;
  def.batch.sigma_sensor = a->sigma_sensor;
  def.batch.max_iter = a->max_iter;
  def.window = a->window;
  def.sigma_qpos = a->sigma_qpos;
  def.sigma_qvel = a->sigma_qvel;
  def.sigma_act = a->sigma_qvel;
  char err[1024];
  double t0 = tool_now();
  mjdiffStatus st = mjdiff_mheEstimate(m, s, &def, rec->T, rec->t0, rec->ctrl, rec->sensor, x0,
                                       P0, r->X, r->S, &r->minfo, err, sizeof(err));
  r->seconds = tool_now() - t0;
  for (int t = 0; t <= r->minfo.steps && t <= rec->T; t++) r->have[t] = r->minfo.steps > 0;
  return st == MJDIFF_OK ? TOOL_EXIT_OK : failMsg("mhe", err);
}

// 1 if row t of the recording has complete truth (every qpos and qvel finite)
static int truthAt(const mjModel* m, const sysidRecording* rec, int t) {
  for (int i = 0; i < m->nq; i++)
    if (!isfinite(rec->qpos[(size_t)m->nq * t + i])) return 0;
  for (int i = 0; i < m->nv; i++)
    if (!isfinite(rec->qvel[(size_t)m->nv * t + i])) return 0;
  return 1;
}

static void truthState(const mjModel* m, const sysidRecording* rec, int t, double* x) {
  mju_copy(x, rec->qpos + (size_t)m->nq * t, m->nq);
  mju_copy(x + m->nq, rec->qvel + (size_t)m->nv * t, m->nv);
  mju_zero(x + m->nq + m->nv, m->na);
}

// ",x", or "," alone where x is not finite (an undefined standard deviation)
static void csvValue(FILE* f, int digits, double x) {
  fputc(',', f);
  tool_csvNumber(f, digits, x);
}

static int writeCsv(const args* a, const mjModel* m, const sysidRecording* rec, const run* r) {
  char tmp[1100];
  snprintf(tmp, sizeof(tmp), "%s.tmp", a->csv);
  FILE* f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "%s: error: cannot write %s\n", kTool, a->csv);
    return 0;
  }
  int nu = m->nu, nq = m->nq, nv = m->nv;
  char name[300];
  fprintf(f, "time_s");
  for (int i = 0; i < nq + nv; i++) {
    if (sysid_columnName(m, 1 + nu + i, name, sizeof(name))) snprintf(name, sizeof(name), "x%d", i);
    fprintf(f, ",%s", name);
  }
  for (int i = 0; i < m->na; i++) fprintf(f, ",act:%d", i);
  for (int i = 0; i < r->ndx; i++) {
    tangentName(m, i, name, sizeof(name));
    fprintf(f, ",%s:%s", i < nv ? "std_dq" : i < 2 * nv ? "std_dv" : "std_da", name);
  }
  fprintf(f, "\n");
  double h = m->opt.timestep;
  for (int t = 0; t <= r->T; t++) {
    if (!r->have[t]) continue;
    fprintf(f, "%.9g", rec->t0 + t * h);
    for (int i = 0; i < r->nx; i++) csvValue(f, 9, r->X[(size_t)r->nx * t + i]);
    for (int i = 0; i < r->ndx; i++) csvValue(f, 6, r->S[(size_t)r->ndx * t + i]);
    fprintf(f, "\n");
  }
  int ok = !ferror(f);
  ok &= fclose(f) == 0;
  if (ok) ok = rename(tmp, a->csv) == 0;
  if (!ok) {
    remove(tmp);
    fprintf(stderr, "%s: error: cannot write %s\n", kTool, a->csv);
  }
  return ok;
}

// up to MAXPLOT scalar positions (hinge, slide, free translations): dof rows and qpos indices
static int plotRows(const mjModel* m, int* dof, int* qadr) {
  int n = 0;
  for (int j = 0; j < m->njnt && n < MAXPLOT; j++) {
    int type = m->jnt_type[j];
    int cnt = type == mjJNT_FREE ? 3 : (type == mjJNT_HINGE || type == mjJNT_SLIDE) ? 1 : 0;
    for (int k = 0; k < cnt && n < MAXPLOT; k++) {
      dof[n] = m->jnt_dofadr[j] + k;
      qadr[n] = m->jnt_qposadr[j] + k;
      n++;
    }
  }
  return n;
}

static int writePng(const args* a, const mjModel* m, const sysidRecording* rec, const run* r) {
  int dof[MAXPLOT], qadr[MAXPLOT];
  int n = plotRows(m, dof, qadr);
  if (n == 0) {
    fprintf(stderr, "%s: note: no hinge, slide or free joint to plot; %s not written\n", kTool,
            a->png);
    return 1;
  }
  char dat[1100];
  snprintf(dat, sizeof(dat), "%s.dat", a->png);
  FILE* f = fopen(dat, "w");
  if (!f) {
    fprintf(stderr, "%s: error: cannot write %s\n", kTool, dat);
    return 0;
  }
  double h = m->opt.timestep;
  for (int t = 0; t <= r->T; t++) {
    if (!r->have[t]) continue;
    fprintf(f, "%.9g", rec->t0 + t * h);
    for (int p = 0; p < n; p++) {
      double est = r->X[(size_t)r->nx * t + qadr[p]];
      double sd = r->S[(size_t)r->ndx * t + dof[p]];
      double tru = rec->qpos[(size_t)m->nq * t + qadr[p]];
      fprintf(f, " %.9g %.9g %.9g %.9g", est, est - 2 * sd, est + 2 * sd, tru);
    }
    fprintf(f, "\n");
  }
  fclose(f);
  FILE* g = popen("gnuplot", "w");
  if (!g) {
    fprintf(stderr, "%s: error: cannot run gnuplot\n", kTool);
    remove(dat);
    return 0;
  }
  // per row: estimate, its band and the truth (left); error to truth and the band (right)
  fprintf(g, "set terminal pngcairo size 1300,%d\nset output '%s'\nset termoption noenhanced\n",
          230 * n + 40, a->png);
  fprintf(g, "set multiplot layout %d,2 title '%s: %s estimate with its 2-sigma band, truth'\n", n,
          a->data, a->method);
  fprintf(g, "set key top right font ',8'\nset xlabel 't (s)'\n");
  for (int p = 0; p < n; p++) {
    char name[300];
    tangentName(m, dof[p], name, sizeof(name));
    int c = 2 + 4 * p;
    int jt = m->jnt_type[m->dof_jntid[dof[p]]];
    const char* unit = jt == mjJNT_HINGE ? "rad" : "m";
    fprintf(g, "set ylabel '%s (%s)'\n", name, unit);
    fprintf(g,
            "plot '%s' u 1:%d:%d w filledcurves lc rgb '#9ecae1' t '2 sigma', "
            "'' u 1:%d w l lc rgb '#08519c' t 'estimate', "
            "'' u 1:%d w l dt 2 lc rgb '#d62728' t 'truth'\n",
            dat, c + 1, c + 2, c, c + 3);
    fprintf(g, "set ylabel 'error %s (%s)'\n", name, unit);
    fprintf(g,
            "plot '%s' u 1:(($%d)-($%d)):(($%d)-($%d)) w filledcurves lc rgb '#9ecae1' "
            "t '+-2 sigma', '' u 1:(($%d)-($%d)) w l lc rgb '#08519c' t 'estimate - truth'\n",
            dat, c + 1, c, c + 2, c, c, c + 3);
  }
  fprintf(g, "unset multiplot\n");
  int rc = pclose(g);
  remove(dat);
  if (rc != 0) {
    fprintf(stderr, "%s: error: gnuplot failed writing %s\n", kTool, a->png);
    return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
  tool_catchWarnings(kTool);
  char err[2048];
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
  sysidRecording rec;
  memset(&rec, 0, sizeof(rec));
  FILE* fin = fopen(a.data, "rb");
  int rd = -1;
  if (!fin) {
    snprintf(err, sizeof(err), "%s: cannot open", a.data);
  } else {
    rd = sysid_readRecordingMissing(m, fin, a.data, 1, &rec, err, sizeof(err));
    fclose(fin);
  }
  if (rd) {
    fprintf(stderr, "%s: error: %s\n", kTool, err);
    mjdiff_freeModel(s);
    mj_deleteModel(m);
    return TOOL_EXIT_RUNTIME;
  }
  int code = TOOL_EXIT_OK;
  int T = rec.T, nx = mjdiff_stateSize(m), ndx = mjdiff_tangentSize(m), ns = m->nsensordata;
  int batch = !strcmp(a.method, "batch"), mhe = !strcmp(a.method, "mhe");
  int needDeriv = batch || mhe || (!strcmp(a.method, "ekf") && !a.fd);

  // the measured sensors: named, or every one with readings in the recording
  const char* names[MAXLIST];
  int nn = 0;
  if (a.nsensor) {
    for (int i = 0; i < a.nsensor; i++) {
      int id = mj_name2id(m, mjOBJ_SENSOR, a.sensor[i]);
      if (id < 0) {
        fprintf(stderr, "%s: error: --sensor '%s': the model has no sensor of that name\n", kTool,
                a.sensor[i]);
        code = TOOL_EXIT_RUNTIME;
        break;
      }
      int any = 0;
      for (int t = 0; t <= T && !any; t++) {
        for (int c = 0; c < m->sensor_dim[id]; c++) {
          any |= isfinite(rec.sensor[(size_t)ns * t + m->sensor_adr[id] + c]);
        }
      }
      if (!any) {
        fprintf(stderr, "%s: error: --sensor '%s': %s has no sensor:%s column (or no readings)\n",
                kTool, a.sensor[i], a.data, a.sensor[i]);
        code = TOOL_EXIT_RUNTIME;
        break;
      }
      names[nn++] = a.sensor[i];
    }
  } else {
    for (int id = 0; id < m->nsensor && nn < MAXLIST; id++) {
      const char* nm = mj_id2name(m, mjOBJ_SENSOR, id);
      int any = 0;
      for (int t = 0; t <= T && !any; t++) {
        for (int c = 0; c < m->sensor_dim[id]; c++) {
          any |= isfinite(rec.sensor[(size_t)ns * t + m->sensor_adr[id] + c]);
        }
      }
      if (!nm || !any) continue;
      if (needDeriv && !mjdiff_sensorSupported(m, id)) {
        if (!a.quiet) {
          fprintf(stderr, "%s: note: sensor '%s' has no derivative: not used\n", kTool, nm);
        }
        continue;
      }
      names[nn++] = nm;
    }
    if (code == TOOL_EXIT_OK && nn == 0) {
      fprintf(stderr, "%s: error: %s has no sensor:* columns of the model's sensors\n", kTool,
              a.data);
      code = TOOL_EXIT_RUNTIME;
    }
  }

  // the guess and its covariance
  double* x0 = calloc((size_t)nx, sizeof(double));
  double* P0 = calloc((size_t)ndx * ndx, sizeof(double));
  double* xt = calloc((size_t)nx, sizeof(double));
  double* e = calloc((size_t)ndx, sizeof(double));
  run r;
  memset(&r, 0, sizeof(r));
  r.T = T;
  r.nx = nx;
  r.ndx = ndx;
  r.X = calloc((size_t)(T + 1) * nx, sizeof(double));
  r.S = calloc((size_t)(T + 1) * ndx, sizeof(double));
  r.have = calloc((size_t)T + 1, sizeof(int));
  if (!x0 || !P0 || !xt || !e || !r.X || !r.S || !r.have) tool_outOfMemory(kTool);
  int hasTruth = truthAt(m, &rec, 0);
  if (a.x0_truth && !hasTruth) {
    fprintf(stderr, "%s: error: --x0 truth: %s has no complete qpos and qvel row at step 0\n",
            kTool, a.data);
    code = TOOL_EXIT_RUNTIME;
  }
  if (a.x0_truth && hasTruth) {
    truthState(m, &rec, 0, x0);
  } else {
    mjData* d = mj_makeData(m);
    if (m->nkey) mj_resetDataKeyframe(m, d, 0);
    mju_copy(x0, d->qpos, m->nq);  // zero velocity and activation
    mj_deleteData(d);
  }
  for (int i = 0; i < ndx; i++) {
    double sd = i < m->nv ? a.p0_qpos : a.p0_qvel;
    P0[(size_t)i * ndx + i] = sd * sd;
  }

  // parameters (batch)
  mjdiffParams* p = NULL;
  if (code == TOOL_EXIT_OK && a.nparam &&
      mjdiff_makeParams(m, s, a.param, a.nparam, &p, err, sizeof(err)) != MJDIFF_OK) {
    code = failMsg("--param", err);
  }

  // observability of the initial state from the first steps
  int rank = -1, window = T < 50 ? T : 50;
  if (code == TOOL_EXIT_OK && needDeriv && window >= 1) {
    mjdiffBatchEstDef od;
    mjdiff_defaultBatchEstDef(&od);
    od.sensors = names;
    od.nsensor = nn;
    od.sigma_sensor = a.sigma_sensor;
    od.max_iter = 0;
    mjdiffBatchEstInfo oi;
    double* xo = calloc((size_t)nx, sizeof(double));
    if (!xo) tool_outOfMemory(kTool);
    mju_copy(xo, x0, nx);
    if (mjdiff_batchEstimate(m, s, &od, window, rec.t0, rec.ctrl, rec.sensor, xo, NULL, NULL, &oi,
                             err, sizeof(err)) == MJDIFF_OK) {
      rank = oi.rank;
      if (rank < ndx) {
        fprintf(stderr,
                "%s: warning: the sensors cannot observe the whole state: the observability "
                "matrix of the first %d steps has rank %d of %d\n",
                kTool, window, rank, ndx);
      }
    }
    free(xo);
  }

  if (code == TOOL_EXIT_OK) {
    if (batch) {
      code = runBatch(&a, m, s, &rec, names, nn, p, x0, P0, &r);
    } else if (mhe) {
      code = runMhe(&a, m, s, &rec, names, nn, x0, P0, &r);
    } else {
      code = runFilter(&a, m, s, &rec, names, nn, x0, P0, &r);
    }
  }

  // RMSE to truth
  double sq = 0, sv = 0;
  long nt = 0;
  for (int t = 0; t <= T; t++) {
    if (!r.have[t] || !truthAt(m, &rec, t)) continue;
    truthState(m, &rec, t, xt);
    double* xe = r.X + (size_t)nx * t;
    mju_copy(xt + m->nq + m->nv, xe + m->nq + m->nv, m->na);
    mjdiff_stateDiff(m, xt, xe, e);
    for (int i = 0; i < m->nv; i++) sq += e[i] * e[i];
    for (int i = 0; i < m->nv; i++) sv += e[m->nv + i] * e[m->nv + i];
    nt++;
  }
  int nwritten = 0;
  for (int t = 0; t <= T; t++) nwritten += r.have[t];

  if (nwritten && a.csv && !writeCsv(&a, m, &rec, &r)) code = TOOL_EXIT_RUNTIME;
  if (nwritten && a.png && !writePng(&a, m, &rec, &r)) code = TOOL_EXIT_RUNTIME;

  // JSON summary
  FILE* out = a.out ? tool_openOut(kTool, a.out) : stdout;
  if (out) {
    char* model[1] = {(char*)a.model};
    tool_jsonHead(out, kTool, model, 1);
    fprintf(out, ",\"args\":{\"data\":");
    tool_jsonString(out, a.data);
    fprintf(out, ",\"method\":\"%s\",\"jacobian\":\"%s\",\"sensors\":[", a.method,
            a.fd ? "fd" : "analytic");
    for (int i = 0; i < nn; i++) {
      if (i) fprintf(out, ",");
      tool_jsonString(out, names[i]);
    }
    fprintf(out,
            "],\"sigma_sensor\":%g,\"sigma_qpos\":%g,\"sigma_qvel\":%g,\"p0_qpos\":%g,"
            "\"p0_qvel\":%g,\"x0\":\"%s\"}",
            a.sigma_sensor, a.sigma_qpos, a.sigma_qvel, a.p0_qpos, a.p0_qvel,
            a.x0_truth ? "truth" : "model");
    fprintf(out, ",\"status\":\"%s\",\"metrics\":{\"steps\":%d,\"estimates\":%d",
            code == TOOL_EXIT_OK ? "ok" : "error", T, nwritten);
    fprintf(out, ",\"observability_rank\":%d,\"tangent_size\":%d", rank, ndx);
    fprintf(out, ",");
    tool_jsonField(out, "us_per_step", nwritten ? 1e6 * r.seconds / nwritten : NAN);
    if (nt) {
      fprintf(out, ",\"truth_steps\":%ld,", nt);
      tool_jsonField(out, "rmse_qpos", sqrt(sq / ((double)nt * m->nv)));
      fprintf(out, ",");
      tool_jsonField(out, "rmse_qvel", sqrt(sv / ((double)nt * m->nv)));
    }
    if (batch) {
      fprintf(out, ",\"batch\":{\"status\":\"%s\",\"iterations\":%d,",
              r.binfo.status == MJDIFF_BATCH_CONVERGED ? "converged"
              : r.binfo.status == MJDIFF_BATCH_STALLED ? "stalled"
                                                       : "max iterations",
              r.binfo.iterations);
      tool_jsonField(out, "cost0", r.binfo.cost0);
      fprintf(out, ",");
      tool_jsonField(out, "cost", r.binfo.cost);
      fprintf(out, ",\"readings\":%ld,\"skipped\":%ld,\"rank\":%d,\"nvar\":%d", r.binfo.nresidual,
              r.binfo.nskipped, r.binfo.rank, r.binfo.nvar);
      int np = mjdiff_paramCount(p);
      if (np && r.cov) {
        fprintf(out, ",\"params\":[");
        for (int i = 0; i < np; i++) {
          fprintf(out, "%s{\"name\":", i ? "," : "");
          tool_jsonString(out, mjdiff_paramName(p, i));
          fprintf(out, ",");
          tool_jsonField(out, "value", r.pval[i]);
          fprintf(out, ",");
          int k = ndx + i, nz = ndx + np;
          tool_jsonField(out, "stderr", sqrt(r.cov[(size_t)k * nz + k]));
          fprintf(out, "}");
        }
        fprintf(out, "]");
      }
      fprintf(out, "}");
    } else if (mhe) {
      double sim = rec.T * m->opt.timestep;
      fprintf(out, ",\"mhe\":{\"window\":%d,\"windows\":%d,\"iterations\":%ld,", a.window,
              r.minfo.steps, r.minfo.iterations);
      tool_jsonField(out, "real_time_factor", r.seconds > 0 ? sim / r.seconds : NAN);
      fprintf(out, "}");
    } else {
      fprintf(out, ",\"filter\":{\"updates\":%d,\"readings\":%ld,\"skipped\":%ld,", r.finfo.nupdate,
              r.finfo.nmeasured, r.finfo.nskipped);
      tool_jsonField(out, "last_nis", r.finfo.nis);
      fprintf(out, ",\"rows_selected\":%d}", r.finfo.nmeas);
    }
    fprintf(out, "}");
    tool_jsonNullNote(out);
    fprintf(out, "}\n");
    if (a.out) {
      if (!tool_closeOut(kTool, a.out, out)) code = TOOL_EXIT_RUNTIME;
    }
  } else {
    code = TOOL_EXIT_RUNTIME;
  }
  if (!a.quiet && code == TOOL_EXIT_OK) {
    fprintf(stderr, "%s: %s on %d steps", kTool, a.method, T);
    if (nt) {
      fprintf(stderr, ", RMSE to truth: qpos %.3g, qvel %.3g", sqrt(sq / ((double)nt * m->nv)),
              sqrt(sv / ((double)nt * m->nv)));
    }
    fprintf(stderr, "\n");
  }
  mjdiff_freeParams(p);
  free(x0);
  free(P0);
  free(xt);
  free(e);
  free(r.X);
  free(r.S);
  free(r.have);
  free(r.cov);
  free(r.pval);
  sysid_freeRecording(&rec);
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return code;
}
