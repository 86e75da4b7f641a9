// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-check: the analytic step Jacobians of a model (mjdiff_stepJacobian) against finite
// differences of the smooth step (mjdiff_step), block by block, at random states.
//
//   state k = 0 .. N-1: from the initial state (keyframe 0, else qpos0), S + 7k smooth steps under
//     random controls (new every 20 steps), then qvel += U(-0.15, 0.15), act += U(-0.05, 0.05),
//     new random controls kept inside ctrlrange (5% .. 95% of the range). A run that runs away
//     (|qvel| > 1000) is a divergence of the smooth step unless the actuators' work accounts for
//     the mechanical energy gained (gain <= 2 W, W = sum_k h qfrc_actuator . qvel_{k+1}), or
//     MuJoCo's native step from the smooth run's state 10 steps earlier, same controls, runs
//     away too (a free-flying body under random thrusts spins up until Euler itself diverges):
//     then the state is taken halfway instead
//   x (+) dx: qpos (+) dq = mj_integratePos(qpos, dq, 1), qvel + dv, act + da;  u + du
//   F(e)[:, c] = (step(x (+) e e_c) (-) step(x (-) e e_c)) / 2e   (tangent difference,
//     mj_differentiatePos; e = eps for state columns, eps_ctrl for control columns, shrunk to
//     stay inside ctrlrange)
//   Richardson:  F1 = (4 F(e) - F(2e)) / 3 (compared),  F2 = (4 F(2e) - F(4e)) / 3,  F0 the same
//     over (e/2, e)   (the eps^2 term cancels)
//   block error  err_b(X, Y) = max |X - Y| over block b / max(floor, max |J| over block b), J the
//     analytic [A B] (a kink's large finite differences cannot raise the scale and hide errors)
//   columns: all of [A B] when it has at most --columns (400) of them; otherwise that many drawn
//     at random per state (each group -- q, v, act, ctrl columns -- gets its share, at least 8),
//     and the errors below run over the drawn columns only
//   a column is unreliable when its FD disagree with themselves, max over the blocks b it lies in
//     of max_r max(|F0 - F1|, |F1 - F2|) / max(floor, max |J| over b) > tol, F0 = (4 F(e/2) -
//     F(e)) / 3 (a piece boundary of a force law within 4 eps of the column's perturbation: with
//     hundreds of contacts one is almost always near a boundary somewhere, but only the columns
//     of the bodies it touches see it; F1 and F2 alone agree by chance for a kink near 1.78 e,
//     the third estimate catches that); it is not compared. A state with fewer than --min-columns (half) of its columns reliable is
//     skipped, and another is drawn in its place (up to --draws x N in all)
//   pass: every compared block within tol, every block compared at some state, and at least
//     --min-compared x N states compared
//   otherwise  e_b = err_b([A B], F1) over the reliable columns;  result: worst e_b over compared
//     states, per block
//   adjoint consistency at each state (random l, dx, du):
//     |l . JVP(dx, du) - VJP(l) . (dx, du)| / max(1, |l . JVP|), JVP against A dx + B du and VJP
//     against A' l, B' l (max abs error / max(1, max abs value))

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mjdiff/mjdiff.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "toolutil.h"

#define TOOL "mjdiff-check"
#define EXIT_MISMATCH 3
#define NBLOCK 12

typedef struct args_ {
  const char* model;
  long states;
  long seed;
  long steps;
  double eps;
  double eps_ctrl;
  double tol;
  double floor;
  double tol_adj;
  double min_compared;
  long draws;                  // at most draws * states states are drawn (skipped ones replaced)
  long columns;                // columns of [A B] compared per state (all if there are fewer)
  double min_columns;          // smallest fraction of a state's columns that must be reliable
  int json;
  int quiet;
  const char* out;
} args;

static void usage(void) {
  printf(
      "Usage: " TOOL
      " [options] MODEL.xml\n"
      "\n"
      "Check the analytic step Jacobians A = dx'/dx and B = dx'/du of MODEL (mjdiff_stepJacobian)\n"
      "against Richardson-extrapolated centered finite differences of the smooth step\n"
      "(mjdiff_step), per block (A_qq, A_qv, A_qa, A_vq, A_vv, A_va, A_aq, A_av, A_aa, B_q, B_v,\n"
      "B_a; empty blocks omitted), at random states near simulated trajectories. State\n"
      "perturbations are tangent-space (mj_integratePos / mj_differentiatePos). Also checks that\n"
      "the VJP and JVP agree with each other and with A, B, and that none of the calls changes\n"
      "the state.\n"
      "\n"
      "Options:\n"
      "  --states N        number of random states (default 20)\n"
      "  --seed S          random seed (default 12345)\n"
      "  --steps K         smooth steps under random controls before state k is taken: K + 7k\n"
      "                    (default 150)\n"
      "  --eps E           finite-difference step of the state columns (default 1e-5)\n"
      "  --eps-ctrl E      finite-difference step of the control columns (default 1e-3; shrunk\n"
      "                    where needed to stay inside ctrlrange)\n"
      "  --tol T           largest accepted relative error per block (default 1e-6); also the\n"
      "                    threshold above which a state's finite differences are judged\n"
      "                    unreliable and the state is skipped\n"
      "  --floor F         block scale floor: error / max(F, max |FD entry|) (default 1e-4)\n"
      "  --tol-adj T       largest accepted VJP/JVP consistency error (default 1e-10)\n"
      "  --draws D         a state whose finite differences are unreliable is replaced by a\n"
      "                    new one, up to D x N states drawn in all (default 3)\n"
      "  --min-compared P  smallest accepted fraction of the N states that are compared\n"
      "                    (default 0.8; at least one state must be compared)\n"
      "  --columns C       columns of [A B] compared per state: all of them if there are at\n"
      "                    most C, else C drawn at random per state, every group (q, v, act,\n"
      "                    ctrl columns) in proportion and at least 8 of each (default 400)\n"
      "  --min-columns P   a column whose finite differences disagree with themselves is not\n"
      "                    compared; a state with less than this fraction of its columns\n"
      "                    compared is skipped (default 0.5)\n"
      "  --quiet           no per-state progress lines on stderr\n"
      "  --json            print the result as JSON on stdout instead of the table\n"
      "  --out FILE        also write the result as JSON to FILE (default: none)\n"
      "  --help            print this help and exit\n"
      "\n"
      "JSON: one object {tool, version, model, args, status, metrics, series}; metrics.worst\n"
      "holds the worst relative error per block, series one entry per state.\n"
      "Exit status: 0 every check passed, 1 runtime error (model not loaded, smooth model or\n"
      "step derivatives rejected: the library's message names the feature), 2 usage error,\n"
      "3 a check failed (the message names the block), 130 interrupted (partial results\n"
      "written).\n");
}

static void parseArgs(int argc, char** argv, args* a) {
  memset(a, 0, sizeof(*a));
  a->states = 20;
  a->seed = 12345;
  a->steps = 150;
  a->eps = 1e-5;
  a->eps_ctrl = 1e-3;
  a->tol = 1e-6;
  a->floor = 1e-4;
  a->tol_adj = 1e-10;
  a->min_compared = 0.8;
  a->draws = 3;
  a->columns = 400;
  a->min_columns = 0.5;
  int positional = 0;
  for (int i = 1; i < argc; i++) {
    const char* o = argv[i];
    if (!positional && tool_isHelp(o)) {
      usage();
      exit(TOOL_EXIT_OK);
    } else if (!positional && !strcmp(o, "--states")) {
      a->states = tool_intOption(TOOL, argc, argv, &i, 1, 1000000, "an integer in [1, 1e6]");
    } else if (!positional && !strcmp(o, "--seed")) {
      a->seed = tool_intOption(TOOL, argc, argv, &i, 0, 2147483647L, "an integer in [0, 2^31 - 1]");
    } else if (!positional && !strcmp(o, "--steps")) {
      a->steps = tool_intOption(TOOL, argc, argv, &i, 0, 100000000, "an integer in [0, 1e8]");
    } else if (!positional && !strcmp(o, "--eps")) {
      a->eps = tool_doubleOption(TOOL, argc, argv, &i, 0, 1, TOOL_OPEN_LO, "a number in (0, 1]");
    } else if (!positional && !strcmp(o, "--eps-ctrl")) {
      a->eps_ctrl =
          tool_doubleOption(TOOL, argc, argv, &i, 0, 1, TOOL_OPEN_LO, "a number in (0, 1]");
    } else if (!positional && !strcmp(o, "--tol")) {
      a->tol =
          tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "a positive number");
    } else if (!positional && !strcmp(o, "--floor")) {
      a->floor =
          tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "a positive number");
    } else if (!positional && !strcmp(o, "--tol-adj")) {
      a->tol_adj =
          tool_doubleOption(TOOL, argc, argv, &i, 0, INFINITY, TOOL_OPEN_LO, "a positive number");
    } else if (!positional && !strcmp(o, "--draws")) {
      a->draws = tool_intOption(TOOL, argc, argv, &i, 1, 1000, "an integer in [1, 1000]");
    } else if (!positional && !strcmp(o, "--min-compared")) {
      a->min_compared = tool_doubleOption(TOOL, argc, argv, &i, 0, 1, 0, "a number in [0, 1]");
    } else if (!positional && !strcmp(o, "--columns")) {
      a->columns = tool_intOption(TOOL, argc, argv, &i, 1, 100000000, "an integer in [1, 1e8]");
    } else if (!positional && !strcmp(o, "--min-columns")) {
      a->min_columns =
          tool_doubleOption(TOOL, argc, argv, &i, 0, 1, TOOL_OPEN_LO, "a number in (0, 1]");
    } else if (!positional && !strcmp(o, "--quiet")) {
      a->quiet = 1;
    } else if (!positional && !strcmp(o, "--json")) {
      a->json = 1;
    } else if (!positional && !strcmp(o, "--out")) {
      a->out = tool_outputOption(TOOL, argc, argv, &i);
    } else if (!positional && !strcmp(o, "--")) {
      positional = 1;
    } else if (!positional && o[0] == '-' && o[1]) {
      tool_usageError(TOOL, "unknown option '%s'", o);
    } else if (a->model) {
      tool_usageError(TOOL, "more than one model given ('%s' and '%s')", a->model, o);
    } else {
      a->model = o;
    }
  }
  if (!a->model) tool_usageError(TOOL, "no model given");
}

//---------------------------------- blocks --------------------------------------------------------

typedef struct block_ {
  const char* name;
  int r0, r1, c0, c1;  // rows and columns of [A B] (ndx x (ndx + nu))
} block;

// the non-empty blocks of [A B]; returns their number
static int makeBlocks(const mjModel* m, block* b) {
  int nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na, ncol = ndx + nu;
  int q0 = 0, q1 = nv, v0 = nv, v1 = 2 * nv, a0 = 2 * nv, a1 = ndx;
  const block all[NBLOCK] = {
      {"A_qq", q0, q1, q0, q1},   {"A_qv", q0, q1, v0, v1},   {"A_qa", q0, q1, a0, a1},
      {"A_vq", v0, v1, q0, q1},   {"A_vv", v0, v1, v0, v1},   {"A_va", v0, v1, a0, a1},
      {"A_aq", a0, a1, q0, q1},   {"A_av", a0, a1, v0, v1},   {"A_aa", a0, a1, a0, a1},
      {"B_q", q0, q1, ndx, ncol}, {"B_v", v0, v1, ndx, ncol}, {"B_a", a0, a1, ndx, ncol},
  };
  int n = 0;
  for (int i = 0; i < NBLOCK; i++) {
    if (all[i].r1 > all[i].r0 && all[i].c1 > all[i].c0) b[n++] = all[i];
  }
  return n;
}

// X (analytic), Y: ndx x K, column j of [A B]'s column cols[j]. err[i] = max |X - Y| over block
// i's columns among cols with ok[j] (ok NULL: all) / max(floor, max |X| over all its drawn
// columns), -1 where block i has none compared;
// returns the worst, *worst its index
static double blockErrors(const block* b, int nb, int K, const int* cols, const int* ok,
                          const mjtNum* X, const mjtNum* Y, double floor, double* err, int* worst) {
  double w = 0;
  if (worst) *worst = 0;
  for (int i = 0; i < nb; i++) {
    double e = 0, scale = floor;
    int n = 0;
    for (int j = 0; j < K; j++) {
      if (cols[j] < b[i].c0 || cols[j] >= b[i].c1) continue;
      // the scale: the analytic entries of every drawn column of the block (X), as
      // reliableColumns judges them
      for (int r = b[i].r0; r < b[i].r1; r++) scale = fmax(scale, fabs(X[K * r + j]));
      if (ok && !ok[j]) continue;
      n++;
      for (int r = b[i].r0; r < b[i].r1; r++) e = fmax(e, fabs(X[K * r + j] - Y[K * r + j]));
    }
    // a NaN anywhere is the worst possible error
    double rel = !n ? -1 : isfinite(e) ? e / scale : INFINITY;
    if (err) err[i] = rel;
    if (rel > w) {
      w = rel;
      if (worst) *worst = i;
    }
  }
  return w;
}

// the entry (row, column of [A B]) of block bl with the largest |X - Y| among the columns with ok
static void worstEntry(const block* bl, int K, const int* cols, const int* ok, const mjtNum* X,
                       const mjtNum* Y, int* row, int* col) {
  double e = -1;
  *row = *col = -1;
  for (int j = 0; j < K; j++) {
    if (cols[j] < bl->c0 || cols[j] >= bl->c1 || (ok && !ok[j])) continue;
    for (int r = bl->r0; r < bl->r1; r++) {
      double x = fabs(X[K * r + j] - Y[K * r + j]);
      if (!(x <= e)) {
        e = isfinite(x) ? x : INFINITY;
        *row = r;
        *col = cols[j];
      }
    }
  }
}

// "dv[3] (joint knee)": index i of the tangent state [dq dv dact] or, past it, of the controls
static void nameIndex(const mjModel* m, int i, char* buf, int n) {
  int nv = m->nv, ndx = 2 * nv + m->na;
  const char* part = i < nv ? "dq" : i < 2 * nv ? "dv" : i < ndx ? "act" : "u";
  int k = i < nv ? i : i < 2 * nv ? i - nv : i < ndx ? i - 2 * nv : i - ndx;
  const char* name = NULL;
  if (i < 2 * nv) {
    name = mj_id2name(m, mjOBJ_JOINT, m->dof_jntid[k]);
  } else if (i >= ndx) {
    name = mj_id2name(m, mjOBJ_ACTUATOR, k);
  }
  snprintf(buf, (size_t)n, "%s[%d]%s%s%s", part, k, name ? " (" : "", name ? name : "",
           name ? ")" : "");
}

// ok[j] = 1 where column j's three extrapolations F0, F1, F2 (ndx x K) agree: max over the blocks
// b that hold column cols[j] of max_r max(|F0 - F1|, |F1 - F2|) / max(floor, max |J| over b's
// drawn columns) is at most tol (J the analytic columns); returns the number of reliable
// columns, *noise and *noise_block the largest disagreement and its block
static int reliableColumns(const block* b, int nb, int K, const int* cols, const mjtNum* J,
                           const mjtNum* F0, const mjtNum* F1, const mjtNum* F2, double floor,
                           double tol, int* ok, double* noise, int* noise_block) {
  *noise = 0;
  *noise_block = 0;
  for (int j = 0; j < K; j++) ok[j] = 1;
  for (int i = 0; i < nb; i++) {
    double scale = floor;
    for (int j = 0; j < K; j++) {
      if (cols[j] < b[i].c0 || cols[j] >= b[i].c1) continue;
      for (int r = b[i].r0; r < b[i].r1; r++) scale = fmax(scale, fabs(J[K * r + j]));
    }
    for (int j = 0; j < K; j++) {
      if (cols[j] < b[i].c0 || cols[j] >= b[i].c1) continue;
      double e = 0;
      for (int r = b[i].r0; r < b[i].r1; r++) {
        e = fmax(e, fmax(fabs(F0[K * r + j] - F1[K * r + j]), fabs(F1[K * r + j] - F2[K * r + j])));
      }
      double rel = isfinite(e) ? e / scale : INFINITY;
      if (!(rel <= tol)) ok[j] = 0;
      if (!(rel <= *noise)) {
        *noise = rel;
        *noise_block = i;
      }
    }
  }
  int n = 0;
  for (int j = 0; j < K; j++) n += ok[j];
  return n;
}

// the columns of [A B] compared at one state, in increasing order: all ncol of them if K >=
// ncol, else K drawn without replacement, each group (q, v, act, ctrl columns) in proportion
// to its size and at least min(8, its size); returns the number drawn (K, or a little more
// where the minimum of a small group rounds up)
static int drawColumns(const mjModel* m, int K, uint64_t* rng, int* cols, int* pool) {
  int nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na, ncol = ndx + nu;
  if (K >= ncol) {
    for (int c = 0; c < ncol; c++) cols[c] = c;
    return ncol;
  }
  const int g0[4] = {0, nv, 2 * nv, ndx}, g1[4] = {nv, 2 * nv, ndx, ncol};
  int n = 0;
  for (int g = 0; g < 4; g++) {
    int size = g1[g] - g0[g];
    if (!size) continue;
    int want = (int)((double)K * size / ncol + 0.5);
    want = want < 8 ? 8 : want;
    want = want > size ? size : want;
    // partial Fisher-Yates over the group's columns
    for (int i = 0; i < size; i++) pool[i] = g0[g] + i;
    for (int i = 0; i < want; i++) {
      int k = i + (int)(tool_uniform(rng) * (size - i));
      k = k >= size ? size - 1 : k;
      int t = pool[i];
      pool[i] = pool[k];
      pool[k] = t;
    }
    // sorted insertion keeps cols increasing (want is small against size only when K is)
    for (int i = 0; i < want; i++) {
      int c = pool[i], p = n++;
      while (p > 0 && cols[p - 1] > c) {
        cols[p] = cols[p - 1];
        p--;
      }
      cols[p] = c;
    }
  }
  return n;
}

//---------------------------------- states --------------------------------------------------------

// state vector: qpos (nq), qvel (nv), act (na), ctrl (nu), time
static int stateSize(const mjModel* m) {
  return m->nq + m->nv + m->na + m->nu + 1;
}

static void getState(const mjModel* m, const mjData* d, mjtNum* x) {
  mju_copy(x, d->qpos, m->nq);
  mju_copy(x + m->nq, d->qvel, m->nv);
  mju_copy(x + m->nq + m->nv, d->act, m->na);
  mju_copy(x + m->nq + m->nv + m->na, d->ctrl, m->nu);
  x[m->nq + m->nv + m->na + m->nu] = d->time;
}

static void setState(const mjModel* m, mjData* d, const mjtNum* x) {
  mju_copy(d->qpos, x, m->nq);
  mju_copy(d->qvel, x + m->nq, m->nv);
  mju_copy(d->act, x + m->nq + m->nv, m->na);
  mju_copy(d->ctrl, x + m->nq + m->nv + m->na, m->nu);
  d->time = x[m->nq + m->nv + m->na + m->nu];
}

// mechanical energy at d's state: 1/2 v' M v - sum_b m_b g . x_b (native kinematics and mass
// matrix on d; the state is not changed)
static double mechanicalEnergy(const mjModel* m, mjData* d) {
  mj_kinematics(m, d);
  mj_comPos(m, d);
  mj_crb(m, d);
  mjtNum* Mv = (mjtNum*)malloc(sizeof(mjtNum) * (size_t)(m->nv + 1));
  if (!Mv) return NAN;
  mj_mulM(m, d, Mv, d->qvel);
  double e = 0.5 * mju_dot(Mv, d->qvel, m->nv);
  free(Mv);
  for (int b = 1; b < m->nbody; b++) e -= m->body_mass[b] * mju_dot3(m->opt.gravity, d->xipos + 3 * b);
  return e;
}

#define RING 10  // smooth states kept for the native replay of a runaway

// 1 if MuJoCo's native step, from state x (getState layout: the controls included) with those
// controls held, runs away or warns of instability within nstep steps
static int nativeRunsAway(const mjModel* m, const mjtNum* x, int nstep) {
  mjData* dn = mj_makeData(m);
  if (!dn) return 0;
  setState(m, dn, x);
  char err[256];
  int w0 = tool_badWarnings(dn), bad = 0;
  for (int k = 0; k < nstep && !bad; k++) {
    mj_step(m, dn);
    bad = tool_badWarnings(dn) != w0 || tool_ranAway(m, dn, err, sizeof(err));
  }
  mj_deleteData(dn);
  return bad;
}

// a random state near a simulated trajectory: nstep smooth steps under random controls from the
// initial state, then perturbed velocities and activations and new controls inside ctrlrange;
// returns the steps done, -1 with why filled if a step failed or the run ran away (a state there
// says nothing about the derivatives: the forward itself diverged)
static int randomState(const mjModel* m, mjData* d, const mjdiffModel* s, uint64_t* rng,
                       int nstep, char* why, int whysz) {
  uint64_t rng0 = *rng;
  tool_resetState(m, d);
  double e0 = mechanicalEnergy(m, d), work = 0;
  int nx = m->nq + m->nv + m->na + m->nu + 1;
  mjtNum* ring = (mjtNum*)malloc(sizeof(mjtNum) * (size_t)nx * RING);
  if (!ring) {
    snprintf(why, (size_t)whysz, "out of memory");
    return -1;
  }
  char err[512];
  int done = 0;
  for (; done < nstep; done++) {
    if (done % 20 == 0) tool_randomCtrl(m, d->ctrl, rng);
    getState(m, d, ring + (size_t)nx * (done % RING));
    if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) {
      snprintf(why, (size_t)whysz, "the smooth step failed at t = %.4g s (step %d): %s", d->time,
               done, err);
      free(ring);
      return -1;
    }
    // the actuators' work: the step's forces over its new velocities
    work += m->opt.timestep * mju_dot(d->qfrc_actuator, d->qvel, m->nv);
    if (tool_ranAway(m, d, err, sizeof(err))) {
      // not the smooth model's doing if the actuators' work accounts for the energy gained (a
      // free-flying body under random thrusts spins up), or if MuJoCo's native step, from the
      // smooth run's state RING steps earlier under the same controls, runs away too (Euler on a
      // body spinning at tens of radians per step diverges in either)
      double gain = mechanicalEnergy(m, d) - e0;
      int first = done + 1 > RING ? done + 1 - RING : 0;
      int native = nativeRunsAway(m, ring + (size_t)nx * (first % RING), 4 * RING);
      free(ring);
      if (done >= 2 && (gain <= 2 * work || native)) {
        *rng = rng0;
        return randomState(m, d, s, rng, done / 2, why, whysz);
      }
      snprintf(why, (size_t)whysz, "the smooth step %s (step %d): the forward diverges at the "
               "model's timestep (energy gained %.3g J, the actuators' work %.3g J; MuJoCo's "
               "native step from step %d does not run away)", err, done + 1, gain, work, first);
      return -1;
    }
  }
  free(ring);
  for (int i = 0; i < m->nv; i++) d->qvel[i] += 0.3 * (tool_uniform(rng) - 0.5);
  for (int i = 0; i < m->na; i++) d->act[i] += 0.1 * (tool_uniform(rng) - 0.5);
  tool_randomCtrl(m, d->ctrl, rng);
  mjdiff_forward(m, d, s, err, sizeof(err));  // normalises quaternions, as every call does
  // keep controls strictly inside their ranges (clamping is not differentiable at the bound)
  for (int i = 0; i < m->nu; i++) {
    if (m->actuator_ctrllimited[i]) {
      mjtNum lo = m->actuator_ctrlrange[2 * i], hi = m->actuator_ctrlrange[2 * i + 1];
      d->ctrl[i] = lo + (hi - lo) * (0.05 + 0.9 * (d->ctrl[i] - lo) / (hi - lo));
    }
  }
  return done;
}

//---------------------------------- finite differences --------------------------------------------

typedef struct fdwork_ {
  mjtNum* dx;     // ndx
  mjtNum* du;     // nu
  mjtNum* plus;   // nq + nv + na
  mjtNum* minus;  // nq + nv + na
  mjtNum* col;    // ndx
  mjtNum* epsu;   // nu: control step per column
} fdwork;

// next = step(x (+) dx, u + du) as (qpos, qvel, act); 0 if the step failed
static int stepFrom(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* state,
                    const mjtNum* dx, const mjtNum* du, mjtNum* next) {
  int nq = m->nq, nv = m->nv, na = m->na;
  setState(m, d, state);
  mj_integratePos(m, d->qpos, dx, 1);
  for (int i = 0; i < nv; i++) d->qvel[i] += dx[nv + i];
  for (int i = 0; i < na; i++) d->act[i] += dx[2 * nv + i];
  for (int i = 0; i < m->nu; i++) d->ctrl[i] += du[i];
  char err[512];
  if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) return 0;
  mju_copy(next, d->qpos, nq);
  mju_copy(next + nq, d->qvel, nv);
  mju_copy(next + nq + nv, d->act, na);
  return 1;
}

// centered finite differences of [A B]'s columns cols[0..K-1] (ndx x K) with steps scale *
// (eps, epsu); 0 if a step failed
static int fdJacobian(const mjModel* m, mjData* d, const mjdiffModel* s, const mjtNum* state,
                      double eps, double scale, fdwork* w, int K, const int* cols, mjtNum* J) {
  int nq = m->nq, nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na;
  int ok = 1;
  for (int j = 0; j < K && ok; j++) {
    int c = cols[j];
    mju_zero(w->dx, ndx);
    mju_zero(w->du, nu);
    double e = scale * (c < ndx ? eps : w->epsu[c - ndx]);
    if (c < ndx) {
      w->dx[c] = e;
    } else {
      w->du[c - ndx] = e;
    }
    ok &= stepFrom(m, d, s, state, w->dx, w->du, w->plus);
    mju_scl(w->dx, w->dx, -1, ndx);
    mju_scl(w->du, w->du, -1, nu);
    ok &= stepFrom(m, d, s, state, w->dx, w->du, w->minus);

    // tangent difference (plus - minus) / 2e
    mj_differentiatePos(m, w->col, 2 * e, w->minus, w->plus);
    for (int i = 0; i < nv + na; i++)
      w->col[nv + i] = (w->plus[nq + i] - w->minus[nq + i]) / (2 * e);
    for (int r = 0; r < ndx; r++) J[(size_t)K * r + j] = w->col[r];
  }
  setState(m, d, state);
  return ok;
}

//---------------------------------- results -------------------------------------------------------

typedef struct staterec_ {
  int steps;        // smooth steps simulated before the state
  int ncon;         // contacts at the state (smooth forward pass)
  int skipped;      // finite differences disagree with themselves at too many columns
  int columns;      // columns of [A B] drawn
  int reliable;     // of them, with finite differences that agree with themselves (compared)
  int fd_failed;    // a perturbed step failed (state not compared)
  double fd_noise;  // max_b err_b(F1, F2)
  int noise_block;
  double err[NBLOCK];  // err_b([A B], F1), when compared (-1: no column of the block compared)
  int worst_block;
  int worst_row, worst_col;  // the worst entry of [A B] in worst_block
  double adj_err;     // VJP/JVP consistency
  int state_changed;  // a derivative call changed the state
} staterec;

typedef struct result_ {
  int nv, nu, na, nq, integrator;
  double timestep;
  int implicit, substeps;  // the smooth step: implicit (mjdiff_integrator 1), substeps per step
  char stepText[128];      // tool_smoothStepText
  int nb;
  block blocks[NBLOCK];
  int nstate;  // states done
  int compared, skipped, fd_failed, contacts, contacts_compared, state_changed;
  double worst[NBLOCK];
  int worst_state[NBLOCK];
  long block_columns[NBLOCK];  // columns of each block compared over all states
  long columns, reliable;      // columns drawn and compared over the compared states
  int ncol;                    // columns of [A B]
  double adj_worst;
  int adj_worst_state;
  staterec* rec;
  int ran;             // the check ran (model accepted)
  int status;          // exit code
  char message[1024];  // runtime error or failed check
} result;

static void printJson(FILE* f, const args* a, const result* r, const char* status) {
  fprintf(f, "{\"tool\":\"" TOOL "\",\"version\":");
  tool_jsonString(f, mjdiff_versionString());
  fprintf(f, ",\"model\":");
  tool_jsonString(f, a->model);
  fprintf(f,
          ",\"args\":{\"states\":%ld,\"seed\":%ld,\"steps\":%ld,\"eps\":%g,\"eps_ctrl\":%g,"
          "\"tol\":%g,\"floor\":%g,\"tol_adj\":%g,\"min_compared\":%g,\"draws\":%ld,"
          "\"columns\":%ld,\"min_columns\":%g,\"mujoco_version\":%d},",
          a->states, a->seed, a->steps, a->eps, a->eps_ctrl, a->tol, a->floor, a->tol_adj,
          a->min_compared, a->draws, a->columns, a->min_columns, mj_version());
  fprintf(f, "\"status\":");
  tool_jsonString(f, status);
  fprintf(f,
          ",\"metrics\":{\"nq\":%d,\"nv\":%d,\"na\":%d,\"nu\":%d,\"integrator\":\"%s\","
          "\"timestep_s\":%g,\"smooth_implicit\":%s,\"substeps\":%d,\"states\":%d,\"compared\":%d,\"skipped_fd_disagree\":%d,"
          "\"skipped_fd_step_failed\":%d,\"with_contacts\":%d,\"compared_with_contacts\":%d,"
          "\"state_changed\":%d,\"columns\":%d,\"columns_drawn\":%ld,"
          "\"columns_compared\":%ld,\"worst\":{",
          r->nq, r->nv, r->na, r->nu, tool_integratorName(r->integrator), r->timestep,
          r->implicit ? "true" : "false", r->substeps, r->nstate,
          r->compared, r->skipped, r->fd_failed, r->contacts, r->contacts_compared,
          r->state_changed, r->ncol, r->columns, r->reliable);
  for (int b = 0; b < r->nb; b++) {
    fprintf(f, "%s\"%s\":", b ? "," : "", r->blocks[b].name);
    if (r->block_columns[b]) {
      tool_jsonNumber(f, r->worst[b]);
    } else {
      fprintf(f, "null");
    }
  }
  fprintf(f, "},\"worst_state\":{");
  for (int b = 0; b < r->nb; b++) {
    fprintf(f, "%s\"%s\":%d", b ? "," : "", r->blocks[b].name,
            r->block_columns[b] ? r->worst_state[b] : -1);
  }
  fprintf(f, "},\"vjp_jvp_max_error\":");
  tool_jsonNumber(f, r->nstate ? r->adj_worst : NAN);
  fprintf(f, ",\"pass\":%s,\"message\":", r->status == TOOL_EXIT_OK ? "true" : "false");
  tool_jsonString(f, r->message);
  fprintf(f, "},\"series\":[");
  for (int k = 0; k < r->nstate; k++) {
    const staterec* s = r->rec + k;
    fprintf(f,
            "%s{\"state\":%d,\"steps\":%d,\"ncon\":%d,\"skipped\":%s,\"fd_step_failed\":%s,"
            "\"fd_disagreement\":",
            k ? "," : "", k, s->steps, s->ncon, s->skipped ? "true" : "false",
            s->fd_failed ? "true" : "false");
    tool_jsonNumber(f, s->fd_noise);
    fprintf(f, ",\"errors\":");
    if (s->skipped || s->fd_failed) {
      fprintf(f, "null");
    } else {
      fputc('{', f);
      for (int b = 0; b < r->nb; b++) {
        fprintf(f, "%s\"%s\":", b ? "," : "", r->blocks[b].name);
        tool_jsonNumber(f, s->err[b] < 0 ? NAN : s->err[b]);
      }
      fputc('}', f);
    }
    fprintf(f, ",\"columns\":%d,\"columns_compared\":%d,\"vjp_jvp_error\":", s->columns,
            s->reliable);
    tool_jsonNumber(f, s->adj_err);
    fprintf(f, ",\"state_changed\":%s}", s->state_changed ? "true" : "false");
  }
  fprintf(f, "]}\n");
}

static void printTable(FILE* f, const args* a, const result* r) {
  fprintf(f, TOOL " %s: %s\n", mjdiff_versionString(), a->model);
  fprintf(f, "model: nq %d, nv %d, na %d, nu %d, %s, timestep %g s\n", r->nq, r->nv, r->na, r->nu,
          tool_integratorName(r->integrator), r->timestep);
  fprintf(f, "%s\n", r->stepText);
  fprintf(f,
          "states: %d, compared %d, skipped %d (finite differences disagree with themselves: a "
          "force law's piece boundary in reach)%s",
          r->nstate, r->compared, r->skipped, r->fd_failed ? "" : "\n");
  if (r->fd_failed) fprintf(f, ", %d (a perturbed step failed)\n", r->fd_failed);
  fprintf(f, "contacts: %d of %d states, %d of %d compared states\n", r->contacts, r->nstate,
          r->contacts_compared, r->compared);
  if (r->compared && r->reliable < (long)r->ncol * r->compared) {
    fprintf(f,
            "columns: %ld compared of %ld drawn over the compared states (%d each: %s; a column "
            "whose finite differences disagree with themselves is not compared)\n",
            r->reliable, r->columns, r->ncol,
            r->columns < (long)r->ncol * r->compared ? "a random subset per state" : "all");
  }
  fprintf(f, "FD: centered, Richardson over (e, 2e) (checked against (e/2, e), (2e, 4e)), e = %g (states), %g (controls)\n\n", a->eps,
          a->eps_ctrl);
  fprintf(f, "%-6s %9s %14s %7s %6s  %s\n", "block", "size", "worst rel.err", "state", "ncon",
          "status");
  for (int b = 0; b < r->nb; b++) {
    const block* bl = r->blocks + b;
    char size[32];
    snprintf(size, sizeof(size), "%dx%d", bl->r1 - bl->r0, bl->c1 - bl->c0);
    if (!r->block_columns[b]) {
      fprintf(f, "%-6s %9s %14s %7s %6s  %s\n", bl->name, size, "-", "-", "-",
              r->compared ? "FAIL (no column compared)" : "not compared");
      continue;
    }
    int k = r->worst_state[b];
    fprintf(f, "%-6s %9s %14.3e %7d %6d  %s\n", bl->name, size, r->worst[b], k, r->rec[k].ncon,
            r->worst[b] <= a->tol ? "ok" : "FAIL");
  }
  if (r->nstate) {
    fprintf(f, "\nVJP/JVP consistency: worst %.3e (state %d, tol %g) %s\n", r->adj_worst,
            r->adj_worst_state, a->tol_adj, r->adj_worst <= a->tol_adj ? "ok" : "FAIL");
  }
  if (r->state_changed) {
    fprintf(f, "state changed by a derivative call at %d states: FAIL\n", r->state_changed);
  }
}

//---------------------------------- the check -----------------------------------------------------

// adjoint consistency at the state in d against the analytic A (ndx x ndx) and B (ndx x nu);
// *changed set if a call changed the state; returns the error, or -1 with err filled on a
// failed call
static double adjointCheck(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffStepDeriv* w,
                           const mjtNum* A, const mjtNum* B, uint64_t* rng, const mjtNum* state,
                           mjtNum* after, int* changed, char* err, int errsz) {
  int nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na, ncol = ndx + nu, ns = stateSize(m);
  size_t n = (size_t)(3 * ndx + 3 * ncol + 2);
  mjtNum* buf = calloc(n, sizeof(mjtNum));
  if (!buf) {
    snprintf(err, (size_t)errsz, "out of memory");
    return -1;
  }
  mjtNum *l = buf, *jv = l + ndx, *jvRef = jv + ndx, *v = jvRef + ndx, *lx = v + ncol,
         *lxRef = lx + ncol;
  for (int i = 0; i < ndx; i++) l[i] = tool_uniform(rng) - 0.5;
  for (int i = 0; i < ncol; i++) v[i] = tool_uniform(rng) - 0.5;

  double e = -1;
  if (mjdiff_stepJVP(m, d, s, w, v, nu ? v + ndx : NULL, NULL, jv, err, errsz) != MJDIFF_OK) goto done;
  getState(m, d, after);
  if (memcmp(state, after, sizeof(mjtNum) * (size_t)ns)) *changed = 1;
  if (mjdiff_stepVJP(m, d, s, w, l, lx, nu ? lx + ndx : NULL, NULL, err, errsz) != MJDIFF_OK) goto done;
  getState(m, d, after);
  if (memcmp(state, after, sizeof(mjtNum) * (size_t)ns)) *changed = 1;

  // l . JVP(v) against VJP(l) . v
  double lhs = mju_dot(l, jv, ndx), rhs = mju_dot(lx, v, ncol);
  e = fabs(lhs - rhs) / fmax(1, fabs(lhs));

  // JVP against A v_x + B v_u, VJP against (A' l, B' l)
  mju_mulMatVec(jvRef, A, v, ndx, ndx);
  for (int i = 0; i < ndx && nu; i++) jvRef[i] += mju_dot(B + (size_t)nu * i, v + ndx, nu);
  mju_mulMatTVec(lxRef, A, l, ndx, ndx);
  if (nu) mju_mulMatTVec(lxRef + ndx, B, l, ndx, nu);
  double diff = 0, scale = 1;
  for (int i = 0; i < ndx; i++) {
    diff = fmax(diff, fabs(jv[i] - jvRef[i]));
    scale = fmax(scale, fabs(jvRef[i]));
  }
  e = fmax(e, diff / scale);
  diff = 0, scale = 1;
  for (int i = 0; i < ncol; i++) {
    diff = fmax(diff, fabs(lx[i] - lxRef[i]));
    scale = fmax(scale, fabs(lxRef[i]));
  }
  e = fmax(e, diff / scale);
  if (!isfinite(e)) e = INFINITY;

done:
  free(buf);
  return e;
}

// run the check; fills r (r->status and r->message on a runtime error or failure)
static void check(const args* a, const mjModel* m, const mjdiffModel* s, mjdiffStepDeriv* w,
                  result* r) {
  int nq = m->nq, nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na, ncol = ndx + nu;
  int ns = stateSize(m);
  // columns drawn per state: K, or a few more where a small group's minimum rounds up
  int K = a->columns >= ncol ? ncol : (int)a->columns + 32;
  K = K > ncol ? ncol : K;
  size_t nJ = (size_t)ndx * (size_t)K;
  size_t total = 8 * nJ + (size_t)ndx * ndx + (size_t)ndx * nu + 2 * (size_t)ns + 2 * (size_t)ndx +
                 2 * (size_t)nu + 2 * (size_t)(nq + nv + na) + 16;
  mjtNum* buf = calloc(total, sizeof(mjtNum));
  int* ibuf = calloc((size_t)(2 * K + ncol), sizeof(int));
  mjData* d = mj_makeData(m);
  long maxdraw = a->states * a->draws;
  r->rec = calloc((size_t)maxdraw, sizeof(staterec));
  r->ncol = ncol;
  if (!buf || !ibuf || !d || !r->rec) {
    r->status = TOOL_EXIT_RUNTIME;
    snprintf(r->message, sizeof(r->message), "out of memory");
    free(buf);
    free(ibuf);
    if (d) mj_deleteData(d);
    return;
  }
  mjtNum *J = buf, *Fa = J + nJ, *Fb = Fa + nJ, *Fc = Fb + nJ, *F1 = Fc + nJ, *F2 = F1 + nJ;
  mjtNum *Fh = F2 + nJ, *F0 = Fh + nJ, *A = F0 + nJ, *B = A + (size_t)ndx * ndx, *state = B + (size_t)ndx * nu + 1;
  mjtNum* after = state + ns;
  int *cols = ibuf, *ok = cols + K, *pool = ok + K;
  fdwork fw;
  fw.dx = after + ns;
  fw.du = fw.dx + ndx;
  fw.col = fw.du + nu + 1;
  fw.epsu = fw.col + ndx;
  fw.plus = fw.epsu + nu + 1;
  fw.minus = fw.plus + nq + nv + na + 1;

  uint64_t rng = (uint64_t)a->seed;
  char err[1024] = "";
  // a large model's state takes minutes (MuJoCo's 100 humanoids: [A B] is 5400 x 5421): its
  // phases get progress lines of their own
  int big = !a->quiet && (double)ndx * ncol > 1e6;
  for (int k = 0; k < maxdraw && r->compared < a->states && !tool_interrupted(); k++) {
    staterec* rec = r->rec + k;
    rec->steps = randomState(m, d, s, &rng, (int)(a->steps + 7 * k), err, sizeof(err));
    if (rec->steps < 0) {
      r->status = TOOL_EXIT_RUNTIME;
      snprintf(r->message, sizeof(r->message), "state %d: %s", k, err);
      break;
    }
    getState(m, d, state);
    if (big) {
      fprintf(stderr, "state %4d/%-4ld  %d steps simulated; the analytic [A B] (%d x %d)...\n",
              k + 1, a->states, rec->steps, ndx, ncol);
    }

    // analytic [A B]; the call leaves the state as it found it
    if (mjdiff_stepJacobian(m, d, s, w, A, B, NULL, err, sizeof(err)) != MJDIFF_OK) {
      r->status = TOOL_EXIT_RUNTIME;
      snprintf(r->message, sizeof(r->message), "mjdiff_stepJacobian failed at state %d: %s", k,
               err);
      break;
    }
    getState(m, d, after);
    if (memcmp(state, after, sizeof(mjtNum) * (size_t)ns)) rec->state_changed = 1;
    rec->ncon = d->ncon;
    int nc = drawColumns(m, (int)(a->columns < ncol ? a->columns : ncol), &rng, cols, pool);
    rec->columns = nc;
    for (int i = 0; i < ndx; i++) {
      for (int j = 0; j < nc; j++) {
        int c = cols[j];
        J[(size_t)nc * i + j] = c < ndx ? A[(size_t)ndx * i + c] : B[(size_t)nu * i + c - ndx];
      }
    }

    // VJP and JVP against each other and [A B]
    setState(m, d, state);
    rec->adj_err =
        adjointCheck(m, d, s, w, A, B, &rng, state, after, &rec->state_changed, err, sizeof(err));
    if (rec->adj_err < 0) {
      r->status = TOOL_EXIT_RUNTIME;
      snprintf(r->message, sizeof(r->message), "mjdiff_stepJVP/VJP failed at state %d: %s", k, err);
      break;
    }

    // control steps: inside ctrlrange at 4x the step
    const mjtNum* u = state + nq + nv + na;
    for (int i = 0; i < nu; i++) {
      fw.epsu[i] = a->eps_ctrl;
      if (m->actuator_ctrllimited[i]) {
        mjtNum margin =
            fmin(u[i] - m->actuator_ctrlrange[2 * i], m->actuator_ctrlrange[2 * i + 1] - u[i]);
        if (margin > 0 && 4 * fw.epsu[i] > 0.9 * margin) fw.epsu[i] = 0.9 * margin / 4;
      }
    }

    // Richardson-extrapolated centered differences at (e/2, e), (e, 2e) and (2e, 4e)
    if (big) {
      fprintf(stderr, "state %4d/%-4ld  finite differences of %d columns (%d steps)...\n", k + 1,
              a->states, nc, 8 * nc);
    }
    int fdok = fdJacobian(m, d, s, state, a->eps, 0.5, &fw, nc, cols, Fh) &&
               fdJacobian(m, d, s, state, a->eps, 1, &fw, nc, cols, Fa) &&
               fdJacobian(m, d, s, state, a->eps, 2, &fw, nc, cols, Fb) &&
               fdJacobian(m, d, s, state, a->eps, 4, &fw, nc, cols, Fc);
    r->nstate = k + 1;
    r->contacts += rec->ncon > 0;
    r->state_changed += rec->state_changed;
    if (rec->adj_err > r->adj_worst || k == 0) {
      r->adj_worst = rec->adj_err;
      r->adj_worst_state = k;
    }
    if (!fdok) {
      rec->fd_failed = 1;
      rec->fd_noise = NAN;
      r->fd_failed++;
      if (!a->quiet) {
        fprintf(stderr, "state %4d/%-4ld  steps %6d  ncon %4d  skipped: a perturbed step failed\n",
                k + 1, a->states, rec->steps, rec->ncon);
      }
      continue;
    }
    size_t nF = (size_t)ndx * nc;
    for (size_t i = 0; i < nF; i++) {
      F0[i] = (4 * Fh[i] - Fa[i]) / 3;
      F1[i] = (4 * Fa[i] - Fb[i]) / 3;
      F2[i] = (4 * Fb[i] - Fc[i]) / 3;
    }
    rec->reliable = reliableColumns(r->blocks, r->nb, nc, cols, J, F0, F1, F2, a->floor, a->tol,
                                    ok, &rec->fd_noise, &rec->noise_block);
    if (nc > 0 && (rec->reliable < a->min_columns * nc - 1e-9 || !rec->reliable)) {
      rec->skipped = 1;
      r->skipped++;
      if (!a->quiet) {
        fprintf(stderr,
                "state %4d/%-4ld  steps %6d  ncon %4d  skipped: finite differences disagree at "
                "%d of %d columns (worst %.2e in %s)\n",
                k + 1, a->states, rec->steps, rec->ncon, nc - rec->reliable, nc, rec->fd_noise,
                r->blocks[rec->noise_block].name);
      }
      continue;
    }
    double e =
        blockErrors(r->blocks, r->nb, nc, cols, ok, J, F1, a->floor, rec->err, &rec->worst_block);
    worstEntry(r->blocks + rec->worst_block, nc, cols, ok, J, F1, &rec->worst_row, &rec->worst_col);
    for (int b = 0; b < r->nb; b++) {
      if (rec->err[b] < 0) continue;  // no column of the block compared here
      int first = r->block_columns[b] == 0;
      for (int j = 0; j < nc; j++) {
        r->block_columns[b] += ok[j] && cols[j] >= r->blocks[b].c0 && cols[j] < r->blocks[b].c1;
      }
      if (first || rec->err[b] > r->worst[b]) {
        r->worst[b] = rec->err[b];
        r->worst_state[b] = k;
      }
    }
    r->compared++;
    r->columns += nc;
    r->reliable += rec->reliable;
    r->contacts_compared += rec->ncon > 0;
    if (!a->quiet) {
      char cmp[64] = "", at[300] = "", rn[128], cn[128];
      if (rec->reliable < ncol) snprintf(cmp, sizeof(cmp), "  columns %d/%d", rec->reliable, ncol);
      if (e > a->tol && rec->worst_row >= 0) {
        nameIndex(m, rec->worst_row, rn, sizeof(rn));
        nameIndex(m, rec->worst_col, cn, sizeof(cn));
        snprintf(at, sizeof(at), "  at %s / %s", rn, cn);
      }
      fprintf(stderr,
              "state %4d/%-4ld  steps %6d  ncon %4d  worst %.2e in %-4s  fd self %.1e  adj "
              "%.1e%s%s\n",
              k + 1, a->states, rec->steps, rec->ncon, e,
              r->nb > 0 ? r->blocks[rec->worst_block].name : "-",
              rec->fd_noise, rec->adj_err, cmp, at);
    }
  }
  mj_deleteData(d);
  free(buf);
  free(ibuf);
}

// the verdict: status and message
static void judge(const args* a, result* r) {
  if (r->status != TOOL_EXIT_OK) return;  // runtime error
  if (tool_interrupted()) {
    r->status = TOOL_EXIT_INTERRUPTED;
    snprintf(r->message, sizeof(r->message), "interrupted after %d of %ld states", r->nstate,
             a->states);
    return;
  }
  int worst = -1;
  for (int b = 0; b < r->nb; b++) {
    if (r->block_columns[b] && !(r->worst[b] <= a->tol) &&
        (worst < 0 || r->worst[b] > r->worst[worst])) {
      worst = b;
    }
  }
  int n = 0;
  const int N = (int)sizeof(r->message);
  if (worst >= 0) {
    int k = r->worst_state[worst];
    n += snprintf(r->message + n, (size_t)(N - n),
                  "block %s: worst relative error %.3e > tol %g (state %d, ncon %d)",
                  r->blocks[worst].name, r->worst[worst], a->tol, k, r->rec[k].ncon);
    for (int b = 0; b < r->nb && n < N; b++) {
      if (b != worst && r->block_columns[b] && r->worst[b] > a->tol) {
        n += snprintf(r->message + n, (size_t)(N - n), "; block %s: %.3e", r->blocks[b].name,
                      r->worst[b]);
      }
    }
  }
  for (int b = 0; b < r->nb && r->compared && n < N; b++) {
    if (!r->block_columns[b]) {
      n += snprintf(r->message + n, (size_t)(N - n),
                    "%sblock %s: no column compared (its finite differences disagree with "
                    "themselves at every compared state)",
                    n ? "; " : "", r->blocks[b].name);
    }
  }
  if (n < N && r->nstate && !(r->adj_worst <= a->tol_adj)) {
    n += snprintf(r->message + n, (size_t)(N - n),
                  "%sVJP/JVP consistency: error %.3e > tol-adj %g (state %d)", n ? "; " : "",
                  r->adj_worst, a->tol_adj, r->adj_worst_state);
  }
  if (n < N && r->state_changed) {
    n += snprintf(r->message + n, (size_t)(N - n),
                  "%sa derivative call changed the state (qpos, qvel, act, ctrl or time) at %d "
                  "states",
                  n ? "; " : "", r->state_changed);
  }
  if (n < N && r->nstate &&
      (r->compared == 0 || r->compared < (int)ceil(a->min_compared * a->states - 1e-9))) {
    n += snprintf(r->message + n, (size_t)(N - n),
                  "%sonly %d of %ld states compared in %d drawn (%d skipped: finite differences "
                  "unreliable, %d: a perturbed step failed); at least %g of them, and one, must be",
                  n ? "; " : "", r->compared, a->states, r->nstate, r->skipped, r->fd_failed,
                  a->min_compared);
  }
  if (n > 0) {
    r->status = EXIT_MISMATCH;
  } else if (r->nb == 0) {
    snprintf(r->message, sizeof(r->message),
             "nothing to compare: [A B] has no rows (no degrees of freedom or activations: "
             "nv = na = 0)");
  } else {
    snprintf(r->message, sizeof(r->message),
             "every block within %g over %d compared states; VJP/JVP consistent", a->tol,
             r->compared);
  }
}

//---------------------------------- main ----------------------------------------------------------

int main(int argc, char** argv) {
  args a;
  parseArgs(argc, argv, &a);
  tool_catchInterrupt();
  tool_catchWarnings(TOOL);

  result r;
  memset(&r, 0, sizeof(r));
  r.status = TOOL_EXIT_OK;
  char err[1024] = "";
  mjModel* m = tool_loadModel(a.model, err, sizeof(err));
  mjdiffModel* s = NULL;
  mjdiffStepDeriv* w = NULL;
  if (!m) {
    r.status = TOOL_EXIT_RUNTIME;
    snprintf(r.message, sizeof(r.message), "%s", err);
  } else {
    r.nq = m->nq;
    r.nv = m->nv;
    r.na = m->na;
    r.nu = m->nu;
    r.integrator = m->opt.integrator;
    r.timestep = m->opt.timestep;
    r.nb = makeBlocks(m, r.blocks);
    mjdiffStatus st = mjdiff_makeModel(m, NULL, &s, err, sizeof(err));
    if (st != MJDIFF_OK) {
      r.status = TOOL_EXIT_RUNTIME;
      snprintf(r.message, sizeof(r.message), "%s: smooth model rejected: %s (%s)", a.model, err,
               mjdiff_statusName(st));
    } else {
      r.implicit = mjdiff_getOptions(s)->integrator == MJDIFF_INT_IMPLICIT;
      r.substeps = mjdiff_substepCount(s);
      tool_smoothStepText(m, s, r.stepText, sizeof(r.stepText));
      st = mjdiff_makeStepDeriv(m, s, NULL, &w, err, sizeof(err));
      if (st != MJDIFF_OK) {
        r.status = TOOL_EXIT_RUNTIME;
        snprintf(r.message, sizeof(r.message), "%s: step derivatives rejected: %s (%s)", a.model,
                 err, mjdiff_statusName(st));
      }
    }
  }
  if (r.status == TOOL_EXIT_OK) {
    r.ran = 1;
    check(&a, m, s, w, &r);
  }
  judge(&a, &r);

  const char* status = r.status == TOOL_EXIT_OK            ? "ok"
                       : r.status == EXIT_MISMATCH         ? "failed"
                       : r.status == TOOL_EXIT_INTERRUPTED ? "interrupted"
                                                           : "error";
  if (a.json) {
    printJson(stdout, &a, &r, status);
  } else if (r.ran) {
    printTable(stdout, &a, &r);
  }
  if (a.out) {
    FILE* f = tool_openOut(TOOL, a.out);
    if (f) printJson(f, &a, &r, status);
    if (!tool_closeOut(TOOL, a.out, f) && r.status == TOOL_EXIT_OK) r.status = TOOL_EXIT_RUNTIME;
  }
  if (r.status == TOOL_EXIT_OK) {
    if (!a.json) printf("\nresult: PASS (%s)\n", r.message);
  } else if (r.status == EXIT_MISMATCH) {
    if (!a.json) printf("\nresult: FAIL (%s)\n", r.message);
    fprintf(stderr, TOOL ": FAILED: %s\n", r.message);
  } else if (r.status == TOOL_EXIT_INTERRUPTED) {
    fprintf(stderr, TOOL ": %s (partial results written)\n", r.message);
  } else if (r.message[0]) {
    fprintf(stderr, TOOL ": error: %s\n", r.message);
  }
  if (tool_warnings()) fprintf(stderr, TOOL ": %ld MuJoCo warnings\n", tool_warnings());

  free(r.rec);
  mjdiff_freeStepDeriv(w);
  mjdiff_freeModel(s);
  if (m) mj_deleteModel(m);
  return r.status;
}
