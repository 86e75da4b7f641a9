// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-bench-reach: does gradient descent on arm_box's open-loop controls reach and move the
// box from starts where the fingertip misses it, with and without the smooth model's long-range
// contact term (plugin/reach.h) annealed by <mjdiff/reach.h>'s schedule?
//
//   start i: keyframe "ready" with the 7 arm joints offset by U(-0.25, 0.25) rad each, drawn
//     again until the fingertip is 2-10 cm from the box (sphere-box distance) and clear of the
//     table; at rest
//   controls: u_t = clamp(u_g + sum_j w_j(t) z_j) with u_g the gravity torques of x_0 over the
//     gears and K = 10 knots z_j, w_j linear interpolation over T steps (0.5 s)
//   loss: L(z) = |b_xy(x_T) - target_xy|^2 / 2 (m^2): only the box, nothing that draws the
//     fingertip to it; gradient dL/du from mjdiff_rolloutGradient (dLdx_T on the box's x, y
//     rows), dL/dz_j = sum_t w_j(t) dL/du_t (zero where a control is clamped)
//   iteration k (of --iters): the reach strength a_k of the schedule (off: 0), the rollout and
//     its gradient, a normalised step z' = z - lr g / |g|_inf, kept if L(z') < L(z) at a_k
//     (then lr *= 1.2) else lr /= 2; g = 0 stops the run (stalled: no gradient)
//   outcome (true model, term off): the final controls rolled out; "touched": the fingertip
//     within 1 mm (the contact width) of the box at some step; "moved": |b_xy(x_T) - b_xy(x_0)|
//     > 1 cm; "closer": the box ends nearer the target than it started
//   --mpc TASK instead: the gradient MPC planner (tools/mpc) in closed loop on the smooth plant
//     (term always off) from the same starts for the task's duration (else 3 s), a fixed number
//     of planner iterations per 10 ms control step (--mpc-iters: no wall-clock budget, so the
//     figures do not depend on the machine's load), with the planner's term (mpc_plannerSetReach,
//     its schedule counted over the planner's iterations) and without; outcomes as above over
//     the closed loop
//   the same starts with --reach and without; the table counts runs of each outcome
//
// Usage: mjdiff-bench-reach [options] [MODEL.xml] (default: models/arm_box.xml)

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mjdiff/mjdiff.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "loop.h"
#include "mpc.h"
#include "planner_internal.h"
#include "toolutil.h"

#define TOOL "mjdiff-bench-reach"
#define NKNOT 10
#define NARM 7

typedef struct opts_ {
  int starts, iters, steps;
  unsigned long long seed;
  double lr;
  mjdiffReachSchedule reach;
  const char* model;
  const char* csv;
  const char* mpc;             // task file: closed-loop gradient MPC instead of open-loop descent
  int mpc_iters;
} opts;

typedef struct run_ {
  int touched, moved, closer, iters, stalled;
  double moved_m, dist0, dist1;
} run;

static void usage(void) {
  printf("usage: " TOOL " [options] [MODEL.xml]\n"
         "  gradient descent on arm_box's open-loop controls from starts where the fingertip is\n"
         "  2-10 cm from the box, with and without the long-range contact term\n"
         "  --starts N        random starts (default 20)\n"
         "  --iters N         gradient iterations per run (default 60)\n"
         "  --steps N         rollout steps (default 250: 0.5 s)\n"
         "  --reach SPEC      STRENGTH[:WIDTH[:DECAY]] of the term and its schedule (default\n"
         "                    1:0.15:0.9; cutoff 0.01; on moving pairs only: reach_static 0)\n"
         "  --lr X            initial normalised step, control units (default 0.1)\n"
         "  --seed N          seed of the starts (default 1)\n"
         "  --mpc TASK        the gradient MPC planner in closed loop with TASK instead (reach\n"
         "                    schedule default decay 0.99 per planner iteration)\n"
         "  --mpc-iters N     planner iterations per control step (default 2)\n"
         "  --csv FILE        one row per run\n");
}

static double uniform(unsigned long long* s) {
  unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

// distance from the fingertip sphere to the box (d's kinematics)
static double tipBoxDistance(const mjModel* m, const mjData* d, int tip, int box) {
  mjtNum rel[3], loc[3], cl[3];
  mju_sub3(rel, d->geom_xpos + 3 * tip, d->geom_xpos + 3 * box);
  mju_mulMatTVec(loc, d->geom_xmat + 9 * box, rel, 3, 3);
  for (int i = 0; i < 3; i++) {
    mjtNum h = m->geom_size[3 * box + i];
    cl[i] = loc[i] < -h ? -h : (loc[i] > h ? h : loc[i]);
    cl[i] = loc[i] - cl[i];
  }
  return mju_norm3(cl) - m->geom_size[3 * tip];
}

// controls of knots z (NKNOT x nu) over T steps around u_g, clamped to the range
static void knotsToCtrl(const mjModel* m, int T, const double* ug, const double* z, double* u,
                        int* clamped) {
  int nu = m->nu;
  for (int t = 0; t < T; t++) {
    double s = (double)t / (T - 1) * (NKNOT - 1);
    int j = (int)s < NKNOT - 1 ? (int)s : NKNOT - 2;
    double f = s - j;
    for (int i = 0; i < nu; i++) {
      double v = ug[i] + (1 - f) * z[nu * j + i] + f * z[nu * (j + 1) + i];
      double lo = m->actuator_ctrlrange[2 * i], hi = m->actuator_ctrlrange[2 * i + 1];
      clamped[nu * t + i] = v <= lo || v >= hi;
      u[nu * t + i] = v < lo ? lo : (v > hi ? hi : v);
    }
  }
}

typedef struct bench_ {
  const mjModel* m;
  mjData* d;
  mjdiffModel* s;
  mjdiffRollout* r;
  int T, nu, ndx, box_dq, box_q, tip, boxg, touch;
  double target[2];
  double *u, *gu, *states, *sens, *dLdx;
  int* clamped;
} bench;

// L(z) from x0 under the current smooth model; gradient in gz (NKNOT x nu) if not NULL
static int objective(bench* b, const double* x0, const double* ug, const double* z, double* L,
                     double* gz, char* err, int errsz) {
  const mjModel* m = b->m;
  int nq = m->nq, nv = m->nv, nu = b->nu, T = b->T;
  mju_copy(b->d->qpos, x0, nq);
  mju_copy(b->d->qvel, x0 + nq, nv);
  b->d->time = 0;
  knotsToCtrl(m, T, ug, z, b->u, b->clamped);
  if (mjdiff_rolloutForward(m, b->d, b->s, b->r, b->u, NULL, NULL, b->states, b->sens, err,
                            errsz) != MJDIFF_OK) {
    return 0;
  }
  const double* xT = b->states + (size_t)T * (nq + nv);
  double ex = xT[b->box_q] - b->target[0], ey = xT[b->box_q + 1] - b->target[1];
  *L = 0.5 * (ex * ex + ey * ey);
  if (!gz) return 1;
  mju_zero(b->dLdx, b->ndx);
  b->dLdx[b->box_dq] = ex;
  b->dLdx[b->box_dq + 1] = ey;
  mjdiffRolloutGrad g;
  mjdiff_defaultRolloutGrad(&g);
  g.dLdx_T = b->dLdx;
  g.grad_ctrl = b->gu;
  if (mjdiff_rolloutGradient(m, b->d, b->s, b->r, &g, err, errsz) != MJDIFF_OK) return 0;
  mju_zero(gz, NKNOT * nu);
  for (int t = 0; t < T; t++) {
    double s = (double)t / (T - 1) * (NKNOT - 1);
    int j = (int)s < NKNOT - 1 ? (int)s : NKNOT - 2;
    double f = s - j;
    for (int i = 0; i < nu; i++) {
      if (b->clamped[nu * t + i]) continue;
      gz[nu * j + i] += (1 - f) * b->gu[nu * t + i];
      gz[nu * (j + 1) + i] += f * b->gu[nu * t + i];
    }
  }
  return 1;
}

// one gradient-descent run from x0 with the schedule (NULL: term off)
static int descend(bench* b, const opts* o, const double* x0, const double* ug,
                   const mjdiffReachSchedule* sched, run* out, char* err, int errsz) {
  int nz = NKNOT * b->nu;
  double z[NKNOT * 16] = {0}, zt[NKNOT * 16], gz[NKNOT * 16], lr = o->lr;
  memset(out, 0, sizeof(*out));
  mjdiffReachSchedule off;
  mjdiff_defaultReachSchedule(&off);
  off.width = sched ? sched->width : off.width;
  for (int k = 0; k < o->iters; k++) {
    if (mjdiff_reachApply(b->s, sched ? sched : &off, k, err, errsz) != MJDIFF_OK) return 0;
    double L, Lt;
    if (!objective(b, x0, ug, z, &L, gz, err, errsz)) return 0;
    double gmax = 0;
    for (int i = 0; i < nz; i++) gmax = fmax(gmax, fabs(gz[i]));
    out->iters = k + 1;
    if (gmax == 0) {
      // no gradient: with the term off and no contact the run stalls for good; with it on the
      // schedule may still reach a strength that gives one (it never does from zero)
      if (mjdiff_reachStrength(sched, k + 1) == 0) {
        out->stalled = 1;
        break;
      }
      continue;
    }
    for (int i = 0; i < nz; i++) zt[i] = z[i] - lr * gz[i] / gmax;
    if (!objective(b, x0, ug, zt, &Lt, NULL, err, errsz)) return 0;
    if (Lt < L) {
      memcpy(z, zt, sizeof(double) * (size_t)nz);
      lr *= 1.2;
    } else {
      lr *= 0.5;
    }
  }

  // the outcome on the true model
  if (mjdiff_reachApply(b->s, &off, 0, err, errsz) != MJDIFF_OK) return 0;
  double L;
  if (!objective(b, x0, ug, z, &L, NULL, err, errsz)) return 0;
  const mjModel* m = b->m;
  int nx = m->nq + m->nv, ns = m->nsensordata;
  const double* xT = b->states + (size_t)b->T * nx;
  double dx = xT[b->box_q] - x0[b->box_q], dy = xT[b->box_q + 1] - x0[b->box_q + 1];
  out->moved_m = sqrt(dx * dx + dy * dy);
  out->moved = out->moved_m > 0.01;
  (void)ns;
  for (int t = 0; t <= b->T && !out->touched; t++) {
    mju_copy(b->d->qpos, b->states + (size_t)nx * t, m->nq);
    mj_kinematics(m, b->d);
    out->touched = tipBoxDistance(m, b->d, b->tip, b->boxg) < 0.001;
  }
  double ex0 = x0[b->box_q] - b->target[0], ey0 = x0[b->box_q + 1] - b->target[1];
  out->dist0 = sqrt(ex0 * ex0 + ey0 * ey0);
  out->dist1 = sqrt(2 * L);
  out->closer = out->dist1 < out->dist0 - 1e-3;
  return 1;
}

// one closed loop of the gradient MPC planner from x0 (written into the model's keyframe 0)
static int closedLoop(mjModel* m, const mjdiffModel* s, const mjdiffTask* task, const opts* o,
                      const double* x0, const mjdiffReachSchedule* sched, run* out, char* err,
                      int errsz) {
  memset(out, 0, sizeof(*out));
  mju_copy(m->key_qpos, x0, m->nq);
  mju_zero(m->key_qvel, m->nv);
  mpcPlanner* p = mpc_makePlanner(MPC_GRADIENT, m, s, task, 1, o->seed, err, errsz);
  if (!p) return 0;
  mpc_plannerSetIterations(p, o->mpc_iters, 0);
  if (sched && !mpc_plannerSetReach(p, sched, err, errsz)) {
    mpc_freePlanner(p);
    return 0;
  }
  mpcLoopOptions lo;
  mpc_defaultLoopOptions(&lo);
  lo.plant = MPC_PLANT_SMOOTH;
  lo.budget = 1;
  lo.shift = (int)lround(0.01 / m->opt.timestep) > 1 ? (int)lround(0.01 / m->opt.timestep) : 1;
  lo.seconds = mjdiff_taskDuration(task) > 0 ? mjdiff_taskDuration(task) : 3;
  lo.key = 0;
  lo.init_noise = 0;
  mpcLoop* loop = mpc_makeLoop(m, s, task, p, &lo, err, errsz);
  if (!loop) {
    mpc_freePlanner(p);
    return 0;
  }
  int tip = mj_name2id(m, mjOBJ_GEOM, "fingertip"), boxg = mj_name2id(m, mjOBJ_GEOM, "box");
  int boxq = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "box_free")];
  int target = mj_name2id(m, mjOBJ_SITE, "target");
  int ok = 1;
  while (mpc_loopTime(loop) < lo.seconds - 1e-9 && !tool_interrupted()) {
    if (!mpc_loopStep(loop)) {
      snprintf(err, (size_t)errsz, "closed loop: %s", loop->err);
      ok = 0;
      break;
    }
    mj_kinematics(m, loop->d);
    out->touched |= tipBoxDistance(m, loop->d, tip, boxg) < 0.001;
    out->iters++;
  }
  const double* q = loop->d->qpos;
  double dx = q[boxq] - x0[boxq], dy = q[boxq + 1] - x0[boxq + 1];
  out->moved_m = sqrt(dx * dx + dy * dy);
  out->moved = out->moved_m > 0.01;
  double tx = m->site_pos[3 * target], ty = m->site_pos[3 * target + 1];
  out->dist0 = sqrt((x0[boxq] - tx) * (x0[boxq] - tx) + (x0[boxq + 1] - ty) * (x0[boxq + 1] - ty));
  out->dist1 = sqrt((q[boxq] - tx) * (q[boxq] - tx) + (q[boxq + 1] - ty) * (q[boxq + 1] - ty));
  out->closer = out->dist1 < out->dist0 - 1e-3;
  mpc_freeLoop(loop);
  mpc_freePlanner(p);
  return ok;
}

int main(int argc, char** argv) {
  opts o = {20, 60, 250, 1, 0.1, {0, 0, 0, 0}, NULL, NULL, NULL, 2};
  int decaySet = 0;
  mjdiff_defaultReachSchedule(&o.reach);
  o.reach.strength = 1;
  o.reach.width = 0.15;
  o.reach.decay = 0.9;
  char err[1000];
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (tool_isHelp(a)) {
      usage();
      return 0;
    } else if (!strcmp(a, "--starts")) {
      o.starts = (int)tool_intOption(TOOL, argc, argv, &i, 1, 10000, "an integer in [1, 10000]");
    } else if (!strcmp(a, "--iters")) {
      o.iters = (int)tool_intOption(TOOL, argc, argv, &i, 1, 100000, "an integer >= 1");
    } else if (!strcmp(a, "--steps")) {
      o.steps = (int)tool_intOption(TOOL, argc, argv, &i, 2, 1000000, "an integer >= 2");
    } else if (!strcmp(a, "--seed")) {
      o.seed = (unsigned long long)tool_intOption(TOOL, argc, argv, &i, 0, 1L << 40,
                                                  "an integer >= 0");
    } else if (!strcmp(a, "--lr")) {
      o.lr = tool_doubleOption(TOOL, argc, argv, &i, 0, 10, TOOL_OPEN_LO, "in (0, 10]");
    } else if (!strcmp(a, "--reach")) {
      const char* v = tool_optionValue(TOOL, argc, argv, &i);
      if (mjdiff_parseReach(v, &o.reach, err, sizeof(err)) != MJDIFF_OK) {
        tool_usageError(TOOL, "--reach: %s", err);
      }
      decaySet = strchr(v, ':') && strchr(strchr(v, ':') + 1, ':');
    } else if (!strcmp(a, "--mpc")) {
      o.mpc = tool_optionValue(TOOL, argc, argv, &i);
    } else if (!strcmp(a, "--mpc-iters")) {
      o.mpc_iters = (int)tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in [1, 1000]");
    } else if (!strcmp(a, "--csv")) {
      o.csv = tool_outputOption(TOOL, argc, argv, &i);
    } else if (a[0] == '-') {
      tool_usageError(TOOL, "unknown option '%s'", a);
    } else if (!o.model) {
      o.model = a;
    } else {
      tool_usageError(TOOL, "more than one model ('%s', '%s')", o.model, a);
    }
  }
  if (o.mpc && !decaySet) o.reach.decay = 0.99;
  char dir[1000], path[1100];
  if (!o.model) {
    tool_modelDir("arm_box.xml", dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/arm_box.xml", dir);
    o.model = path;
  }
  mjModel* m = tool_loadModel(o.model, err, sizeof(err));
  if (!m) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    return TOOL_EXIT_RUNTIME;
  }
  int tip = mj_name2id(m, mjOBJ_GEOM, "fingertip"), boxg = mj_name2id(m, mjOBJ_GEOM, "box");
  int boxj = mj_name2id(m, mjOBJ_JOINT, "box_free"), target = mj_name2id(m, mjOBJ_SITE, "target");
  int touch = mj_name2id(m, mjOBJ_SENSOR, "fingertip_touch");
  int tablegeom = mj_name2id(m, mjOBJ_GEOM, "table");
  if (tip < 0 || boxg < 0 || boxj < 0 || target < 0 || touch < 0 || tablegeom < 0 ||
      m->nkey < 1 || m->nu > 16 || m->nu < NARM) {
    fprintf(stderr, TOOL ": error: %s is not arm_box (needs geoms fingertip, box, table, joint "
            "box_free, site target, touch sensor fingertip_touch, a keyframe, 7..16 actuators)\n",
            o.model);
    mj_deleteModel(m);
    return TOOL_EXIT_RUNTIME;
  }
  mjdiffModel* s = NULL;
  mjdiffRollout* r = NULL;
  bench b;
  memset(&b, 0, sizeof(b));
  if (mjdiff_makeModel(m, NULL, &s, err, sizeof(err)) != MJDIFF_OK ||
      mjdiff_setParam(s, "reach_static", 0, err, sizeof(err)) != MJDIFF_OK ||
      mjdiff_makeRollout(m, s, NULL, o.steps, NULL, &r, err, sizeof(err)) != MJDIFF_OK) {
    fprintf(stderr, TOOL ": error: %s\n", err);
    return TOOL_EXIT_RUNTIME;
  }
  int nq = m->nq, nv = m->nv, nu = m->nu, T = o.steps;
  b.m = m;
  b.d = mj_makeData(m);
  b.s = s;
  b.r = r;
  b.T = T;
  b.nu = nu;
  b.ndx = 2 * nv + m->na;
  b.tip = tip;
  b.boxg = boxg;
  b.touch = m->sensor_adr[touch];
  int dv;
  mjdiff_jointTangentRows(m, boxj, &b.box_dq, &dv);
  mjdiff_jointStateRows(m, boxj, &b.box_q, NULL);
  b.target[0] = m->site_pos[3 * target];
  b.target[1] = m->site_pos[3 * target + 1];
  b.u = malloc(sizeof(double) * (size_t)T * nu);
  b.gu = malloc(sizeof(double) * (size_t)T * nu);
  b.clamped = malloc(sizeof(int) * (size_t)T * nu);
  b.states = malloc(sizeof(double) * (size_t)(T + 1) * (nq + nv + m->na));
  b.sens = malloc(sizeof(double) * (size_t)T * (m->nsensordata > 0 ? m->nsensordata : 1));
  b.dLdx = malloc(sizeof(double) * (size_t)b.ndx);
  double* x0 = malloc(sizeof(double) * (size_t)(nq + nv));
  if (!b.d || !b.u || !b.gu || !b.clamped || !b.states || !b.sens || !b.dLdx || !x0) {
    tool_outOfMemory(TOOL);
  }
  mjdiffTask* task = NULL;
  if (o.mpc) {
    task = mjdiff_readTask(m, o.mpc, err, sizeof(err));
    if (!task) {
      fprintf(stderr, TOOL ": error: %s\n", err);
      return TOOL_EXIT_RUNTIME;
    }
  }
  FILE* csv = NULL;
  if (o.csv) {
    csv = fopen(o.csv, "w");
    if (!csv) {
      fprintf(stderr, TOOL ": error: cannot write %s\n", o.csv);
      return TOOL_EXIT_RUNTIME;
    }
    fprintf(csv, "start,reach,tip_box_m,iters,stalled,touched,moved,moved_m,closer,dist0_m,"
            "dist1_m\n");
  }
  tool_catchInterrupt();
  unsigned long long seed = o.seed;
  int count[2][4] = {{0}};  // [off, on][touched, moved, closer, stalled]
  double movedSum[2] = {0, 0};
  double t0 = tool_now();
  int done = 0;
  for (int k = 0; k < o.starts && !tool_interrupted(); k++) {
    // a start with the fingertip 2-10 cm from the box, clear of the table
    double gap = 0;
    for (int tries = 0; tries < 10000; tries++) {
      mj_resetDataKeyframe(m, b.d, 0);
      for (int j = 0; j < NARM; j++) b.d->qpos[j] += 0.5 * (uniform(&seed) - 0.5);
      mj_kinematics(m, b.d);
      gap = tipBoxDistance(m, b.d, tip, boxg);
      double clear = b.d->geom_xpos[3 * tip + 2] - m->geom_size[3 * tip] -
                     (m->geom_pos[3 * tablegeom + 2] + m->geom_size[3 * tablegeom + 2]);
      if (gap >= 0.02 && gap <= 0.10 && clear > 0.002) break;
    }
    mju_copy(x0, b.d->qpos, nq);
    mju_zero(x0 + nq, nv);
    // gravity torques over the gears
    double ug[16];
    mju_copy(b.d->qpos, x0, nq);
    mju_zero(b.d->qvel, nv);
    mju_zero(b.d->ctrl, nu);
    if (mjdiff_forward(m, b.d, s, err, sizeof(err)) != MJDIFF_OK) {
      fprintf(stderr, TOOL ": error: start %d: %s\n", k, err);
      return TOOL_EXIT_RUNTIME;
    }
    for (int i = 0; i < nu; i++) {
      int dof = m->jnt_dofadr[m->actuator_trnid[2 * i]];
      ug[i] = b.d->qfrc_bias[dof] / m->actuator_gear[6 * i];
    }
    for (int on = 0; on < 2; on++) {
      run res;
      int okRun = o.mpc ? closedLoop(m, s, task, &o, x0, on ? &o.reach : NULL, &res, err,
                                     sizeof(err))
                        : descend(&b, &o, x0, ug, on ? &o.reach : NULL, &res, err, sizeof(err));
      if (!okRun) {
        fprintf(stderr, TOOL ": error: start %d (%s): %s\n", k, on ? "reach" : "plain", err);
        return TOOL_EXIT_RUNTIME;
      }
      count[on][0] += res.touched;
      count[on][1] += res.moved;
      count[on][2] += res.closer;
      count[on][3] += res.stalled;
      movedSum[on] += res.moved_m;
      fprintf(stderr, "start %3d  %-5s  gap %5.3f m  iters %3d%s  touched %d  moved %.4f m  "
              "target %.4f -> %.4f m  (%.1f s)\n", k, on ? "reach" : "plain", gap, res.iters,
              res.stalled ? " (stalled)" : "", res.touched, res.moved_m, res.dist0, res.dist1,
              tool_now() - t0);
      if (csv) {
        fprintf(csv, "%d,%d,%.6f,%d,%d,%d,%d,%.6f,%d,%.6f,%.6f\n", k, on, gap, res.iters,
                res.stalled, res.touched, res.moved, res.moved_m, res.closer, res.dist0,
                res.dist1);
      }
    }
    done++;
  }
  if (o.mpc) {
    printf("%s: gradient MPC with %s, %d starts (fingertip 2-10 cm from the box), %d planner "
           "iterations per control step; reach %g N, %g m, decay %g per planner iteration\n",
           TOOL, o.mpc, done, o.mpc_iters, o.reach.strength, o.reach.width, o.reach.decay);
  } else {
    printf("%s: gradient descent, %d starts (fingertip 2-10 cm from the box), %d iterations, "
           "%d steps; reach %g N, %g m, decay %g\n", TOOL, done, o.iters, T, o.reach.strength,
           o.reach.width, o.reach.decay);
  }
  printf("| | touched | moved > 1 cm | box closer to target | stalled (zero gradient) | mean "
         "moved (m) |\n|---|---|---|---|---|---|\n");
  for (int on = 0; on < 2; on++) {
    char stalled[32] = "n/a";
    if (!o.mpc) snprintf(stalled, sizeof(stalled), "%d/%d", count[on][3], done);
    printf("| %s | %d/%d | %d/%d | %d/%d | %s | %.4f |\n", on ? "with the term" : "without",
           count[on][0], done, count[on][1], done, count[on][2], done, stalled,
           done ? movedSum[on] / done : 0);
  }
  if (csv) fclose(csv);
  mjdiff_freeTask(task);
  free(x0);
  free(b.u);
  free(b.gu);
  free(b.clamped);
  free(b.states);
  free(b.sens);
  free(b.dLdx);
  mjdiff_freeRollout(r);
  mjdiff_freeModel(s);
  mj_deleteData(b.d);
  mj_deleteModel(m);
  return tool_interrupted() ? TOOL_EXIT_INTERRUPTED : TOOL_EXIT_OK;
}
