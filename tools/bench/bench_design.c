// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-bench-design: the cost of a rollout gradient in geometry parameters (geom sizes and
// positions, body positions and scales) with DrDp's geometry columns analytic (params_d.c: contacts through
// the size and pose Jacobians, inertials through the compile map's Jacobian, a body's position as
// a translation of its subtree through rne_d.c) against the same columns by
// centred differences of the residual on a model copy (design_d.c, the method before), on the
// same models and rollouts, in one run; and how far the two gradients differ.
//
//   x_0: 20 steps from keyframe 0 (else qpos0) under the first control row (a keyframe may hold a
//        body exactly flush on another, where differences straddle a switch of the contact set);
//        then T steps of smooth controls (benchutil's tool_smoothCtrl, seed 1)
//   L = sum_t |qpos_t - qpos_0|^2 / 2 (positions only, so that every step weighs the geometry)
//   op = mjdiff_rolloutForward + mjdiff_rolloutBackward with grad_param, once with the analytic
//        columns and once differenced (mjdiff_designSetDifferenced), alternated over R rounds;
//   ms = median over rounds; ratio = differenced / analytic;
//   difference = max_i |g_a,i - g_d,i| / max_i |g_d,i| (the differenced columns are accurate to
//        ~1e-6 of a column where the principal axes are refined, design_d.c)
// Models and parameters (default): arm_box (the fingertip's size and position, link7's position),
// hopper (the foot's size and position, the torso's size, the foot's and leg's body positions),
// arm_gripper (the palm's size and position, link6's size; not the free box's, which MuJoCo 3
// compiles as a simple body and refuses), hopper again (the three leg scales: the design example's
// parameters). --model FILE --param NAME ... replaces them with one model.

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "derivative.h"
#include "toolutil.h"

#define TOOL "mjdiff-bench-design"
#define MAXP 32

typedef struct {
  const char* file;
  const char* param[MAXP];
  int nparam;
} benchCase;

static const benchCase kCases[] = {
    {"arm_box.xml", {"geom:fingertip:size", "geom:fingertip:pos", "body:link7:pos"}, 3},
    {"hopper.xml", {"geom:foot_geom:size", "geom:foot_geom:pos", "geom:torso_geom:size",
                    "body:foot:pos", "body:leg:pos"}, 5},
    {"arm_gripper.xml", {"geom:palm:size", "geom:palm:pos", "geom:link6_geom:size"}, 3},
    {"hopper.xml", {"body:thigh:scale", "body:leg:scale", "body:foot:scale"}, 3},
};
#define NCASE ((int)(sizeof(kCases) / sizeof(kCases[0])))

static void usage(FILE* f) {
  fprintf(f,
          "usage: " TOOL " [--model FILE --param NAME ...] [--steps T] [--rounds R]\n"
          "Time of a rollout gradient in geometry parameters with the analytic geometry\n"
          "columns against the same columns by differences (the method before), in one run;\n"
          "prints the ratio differenced / analytic and the two gradients' relative difference.\n"
          "  --model FILE   one model instead of the bundled cases (with --param)\n"
          "  --param NAME   a geometry parameter (repeat)\n"
          "  --steps T      rollout length (default 200)\n"
          "  --rounds R     timed rounds per method, alternated (default 5)\n"
          "Exit codes: 0 done, 1 runtime error, 2 usage error.\n");
}

// one rollout gradient; returns its time, -1 on failure
static double gradient(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffRollout* r,
                       const mjtNum* x0, const mjtNum* ctrl, int T, mjtNum* states,
                       mjtNum* dLdx, mjtNum* grad, char* err, int errsz) {
  int nq = m->nq, nv = m->nv, na = m->na, nx = nq + nv + na, ndx = 2 * nv + na;
  double t0 = tool_now();
  mju_copy(d->qpos, x0, nq);
  mju_copy(d->qvel, x0 + nq, nv);
  mju_copy(d->act, x0 + nq + nv, na);
  d->time = 0;
  if (mjdiff_rolloutForward(m, d, s, r, ctrl, NULL, NULL, states, NULL, err, errsz)) return -1;
  memset(dLdx, 0, sizeof(mjtNum) * (size_t)(T + 1) * ndx);
  for (int t = 0; t <= T; t++) {
    mjtNum dq[64];
    if (nv > 64) return -1;
    mj_differentiatePos(m, dq, 1, x0, states + (size_t)nx * t);
    mju_copy(dLdx + (size_t)ndx * t, dq, nv);
  }
  if (mjdiff_rolloutBackward(m, d, s, r, dLdx, NULL, NULL, NULL, NULL, NULL, grad, err, errsz)) {
    return -1;
  }
  return tool_now() - t0;
}

static int runCase(const char* path, const char* const* names, int nname, int T, int R) {
  char err[1000];
  mjModel* m = tool_loadModel(path, err, sizeof(err));
  if (!m) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    return 1;
  }
  mjdiffModel* s = NULL;
  mjdiffParams* p = NULL;
  mjdiffRollout* r = NULL;
  mjData* d = mj_makeData(m);
  int nx = m->nq + m->nv + m->na, ndx = 2 * m->nv + m->na, status = 1;
  mjtNum* buf = NULL;
  if (!d || mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) ||
      mjdiff_makeParams(m, s, names, nname, &p, err, sizeof(err)) ||
      mjdiff_makeRollout(m, s, p, T, NULL, &r, err, sizeof(err))) {
    fprintf(stderr, TOOL ": error: %s: %s\n", path, d ? err : "out of memory");
    goto done;
  }
  int np = mjdiff_paramCount(p);
  size_t n = (size_t)nx + (size_t)T * m->nu + (size_t)(T + 1) * (nx + ndx) + 2 * (size_t)np;
  buf = (mjtNum*)calloc(n, sizeof(mjtNum));
  if (!buf) tool_outOfMemory(TOOL);
  mjtNum *x0 = buf, *ctrl = x0 + nx, *states = ctrl + (size_t)T * m->nu;
  mjtNum *dLdx = states + (size_t)(T + 1) * nx, *ga = dLdx + (size_t)(T + 1) * ndx, *gd = ga + np;
  tool_resetState(m, d);
  // 20 steps of the first control row first: a keyframe may hold bodies exactly flush (arm
  // gripper's box on the table at dist 0), where a difference straddles the box-box face case's
  // switch of contacts (issue 10) and measures that jump, not a derivative
  tool_smoothCtrl(m, 1, 1, d->ctrl);
  for (int t = 0; t < 20; t++) {
    if (mjdiff_step(m, d, s, err, sizeof(err))) {
      fprintf(stderr, TOOL ": error: %s: %s\n", path, err);
      goto done;
    }
  }
  mju_copy(x0, d->qpos, m->nq);
  mju_copy(x0 + m->nq, d->qvel, m->nv);
  mju_copy(x0 + m->nq + m->nv, d->act, m->na);
  tool_smoothCtrl(m, T, 1, ctrl);

  double ta[64], td[64];
  for (int k = 0; k < R; k++) {
    for (int j = 0; j < 2; j++) {
      int diff = (k + j) % 2;  // alternate which goes first
      mjdiff_designSetDifferenced(p, diff);
      double t = gradient(m, d, s, r, x0, ctrl, T, states, dLdx, diff ? gd : ga, err,
                          sizeof(err));
      if (t < 0) {
        fprintf(stderr, TOOL ": error: %s: %s\n", path, err);
        goto done;
      }
      (diff ? td : ta)[k] = t;
    }
  }
  double gmax = 0, emax = 0;
  for (int i = 0; i < np; i++) {
    gmax = fmax(gmax, fabs(gd[i]));
    emax = fmax(emax, fabs(ga[i] - gd[i]));
  }
  double ma = tool_median(ta, R) * 1e3, md = tool_median(td, R) * 1e3;
  char name[256];
  tool_baseName(path, name, sizeof(name));
  printf("%-14s %3d %5d %12.1f %14.1f %8.2f %12.2g\n", name, np, T, ma, md, md / ma,
         gmax > 0 ? emax / gmax : emax);
  status = 0;

done:
  free(buf);
  mjdiff_freeRollout(r);
  mjdiff_freeParams(p);
  mjdiff_freeModel(s);
  if (d) mj_deleteData(d);
  mj_deleteModel(m);
  return status;
}

int main(int argc, char** argv) {
  const char* model = NULL;
  const char* names[MAXP];
  int nname = 0, T = 200, R = 5;
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (tool_isHelp(o)) {
      usage(stdout);
      return 0;
    } else if (!strcmp(o, "--model")) {
      model = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--param")) {
      if (nname == MAXP) tool_usageError(TOOL, "more than %d --param", MAXP);
      names[nname++] = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(o, "--steps")) {
      T = (int)tool_intOption(TOOL, argc, argv, &i, 1, 100000, "in [1, 1e5]");
    } else if (!strcmp(o, "--rounds")) {
      R = (int)tool_intOption(TOOL, argc, argv, &i, 1, 64, "in [1, 64]");
    } else {
      tool_usageError(TOOL, "unknown option '%s'", o);
    }
  }
  if ((model != NULL) != (nname > 0)) tool_usageError(TOOL, "--model and --param go together");
  printf("%-14s %3s %5s %12s %14s %8s %12s\n", "model", "np", "T", "analytic_ms",
         "differenced_ms", "ratio", "grad_diff");
  if (model) return runCase(model, names, nname, T, R);
  char dir[1024], path[1200];
  tool_modelDir(kCases[0].file, dir, sizeof(dir));
  int status = 0;
  for (int c = 0; c < NCASE; c++) {
    if (!tool_joinPath(path, sizeof(path), dir, kCases[c].file)) return 1;
    status |= runCase(path, kCases[c].param, kCases[c].nparam, T, R);
  }
  return status;
}
