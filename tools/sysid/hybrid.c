// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid --residual: physics plus a neural residual force, fitted jointly.
//
// Model (<mjdiff/residual.h>): x_{k+1} = f(x_k, u_k; p) with qfrc_applied = s .* NN(z_k; theta),
// z = (features of qpos, qvel, ctrl), f the smooth step.
// Windows: each recording is cut into windows of W steps, k0 = 0, W, 2W, .. (k0 + W <= T); a
// window starts from the recorded state at k0 (measured coordinates; the others from the model's
// keyframe 0 or reference state) and runs W steps under the recorded controls.
// Loss of a set of windows (N: their measured coordinates over steps 1..W):
//   L = 1/(2N) sum_w sum_{k=1..W} [ |e_q|^2 / sigma_q^2 + |e_v|^2 / sigma_v^2 ]
//   e_q = q_rec (-) q_{w,k} (tangent difference; an unmeasured coordinate, or a rotation with an
//         unmeasured component, contributes 0), e_v = v_{w,k} - v_rec (measured only)
//   dL/dx_{w,k} = (e_q / sigma_q^2, e_v / sigma_v^2) / N  (tangent layout; for a rotation the
//         gradient of |log(q_rec^-1 q)|^2 / 2 in the right perturbation is e itself, the axis
//         being an eigenvector of J_r^-1)
// Gradients: the rollout adjoint (<mjdiff/rollout.h>) with the residual attached as a force
// model: grad_param (p) and grad_force (theta), exact through contacts and limits.
// Optimiser: Adam (<mjdiff/optim.h>) on theta with rate lr and on the relative parameters
// r_j = p_j / |p_j,0| (|p_j,0| = 1 for a zero start) with rate lr_param, p projected onto
// [lo, hi] after each step; one step per batch of B windows, the windows in a seeded random
// order each epoch. The input normalisation of the network is fitted once to the recordings'
// z (mean and std per feature). Early stopping: with validation recordings, L on their windows
// after every epoch; the weights and parameters of the epoch with the lowest value are kept.

#include "hybrid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/optim.h>
#include <mjdiff/random.h>
#include <mjdiff/residual.h>

#include "residual.h"
#include "toolutil.h"

typedef struct {
  int rec, k0;
} win;

// the recorded state of step k onto d (measured coordinates over the model's start state)
static void startAt(const mjModel* m, mjData* d, const sysidRecording* R, int k) {
  mj_resetData(m, d);
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  sysid_overwriteMeasured(m, d, R, k);
  d->time = R->t0 + k * m->opt.timestep;
}

// loss of one window's states ((W+1) x nx) against R from k0; its gradients into dLdx
// ((W+1) x ndx, scaled by 1/N later) and the number of measured coordinates into *count
static double windowLoss(const mjModel* m, const sysidRecording* R, int k0, int W,
                         const double* states, const sysidHybridOptions* o, double* qref,
                         double* e, double* dLdx, long* count) {
  int nq = m->nq, nv = m->nv, na = m->na, nx = nq + nv + na, ndx = 2 * nv + na;
  double L = 0, wq = 1 / (o->sigma_qpos * o->sigma_qpos), wv = 1 / (o->sigma_qvel * o->sigma_qvel);
  mju_zero(dLdx, (size_t)(W + 1) * ndx);
  for (int k = 1; k <= W; k++) {
    const double* x = states + (size_t)nx * k;
    const double* qp = R->qpos + (size_t)nq * (k0 + k);
    const double* qv = R->qvel + (size_t)nv * (k0 + k);
    // reference: measured coordinates, the simulated ones elsewhere (error 0 there)
    mju_copy(qref, x, nq);
    for (int j = 0; j < m->njnt; j++) {
      int qa = m->jnt_qposadr[j], rq = sysid_rotQpos(m, j);
      int nlin = m->jnt_type[j] == mjJNT_FREE ? 3 : (rq < 0 ? 1 : 0);
      for (int i = 0; i < nlin; i++) {
        if (!isnan(qp[qa + i])) {
          qref[qa + i] = qp[qa + i];
          (*count)++;
        }
      }
      if (rq >= 0 && sysid_measured(qp + rq, 4)) {
        mju_copy(qref + rq, qp + rq, 4);
        mju_normalize4(qref + rq);
        *count += 3;
      }
    }
    mj_differentiatePos(m, e, 1, qref, x);
    double* g = dLdx + (size_t)ndx * k;
    for (int i = 0; i < nv; i++) {
      L += 0.5 * wq * e[i] * e[i];
      g[i] = wq * e[i];
      if (!isnan(qv[i])) {
        double ev = x[nq + i] - qv[i];
        L += 0.5 * wv * ev * ev;
        g[nv + i] = wv * ev;
        (*count)++;
      }
    }
  }
  return L;
}

// the loss of every window of the recordings R (n) with the current weights and parameters;
// NAN with err on a failing rollout
static double setLoss(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffRollout* ro,
                      mjdiffResidual* res, const sysidRecording* R, int n,
                      const sysidHybridOptions* o, double* states, double* qref, double* e,
                      double* dLdx, char* err, int errsz) {
  int W = o->window, nu = m->nu;
  double L = 0;
  long N = 0;
  char msg[600];
  for (int r = 0; r < n; r++) {
    for (int k0 = 0; k0 + W <= R[r].T; k0 += W) {
      startAt(m, d, R + r, k0);
      if (mjdiff_rolloutForward(m, d, s, ro, R[r].ctrl + (size_t)nu * k0, NULL, NULL, states,
                                NULL, msg, sizeof(msg)) != MJDIFF_OK ||
          mjdiff_residualStatus(res, msg, sizeof(msg)) != MJDIFF_OK) {
        snprintf(err, (size_t)errsz, "%.200s, window at step %d: %.300s", R[r].path, k0, msg);
        return NAN;
      }
      L += windowLoss(m, R + r, k0, W, states, o, qref, e, dLdx, &N);
    }
  }
  return N > 0 ? L / (double)N : NAN;
}

int sysid_hybridFit(mjModel* m, mjdiffModel* s, const mjdiffParams* p, const double* lo,
                    const double* hi, const sysidRecording* rec, int nrec,
                    const sysidRecording* val, int nval, const sysidHybridOptions* o,
                    const char* out, double* p_out, double* loss, int* stopped, char* err,
                    int errsz) {
  int nq = m->nq, nv = m->nv, na = m->na, nu = m->nu, nx = nq + nv + na, ndx = 2 * nv + na;
  int W = o->window, np = p ? mjdiff_paramCount(p) : 0;
  *stopped = 0;

  // windows
  long nwin = 0, nz = 0;
  for (int r = 0; r < nval; r++) {
    if (val[r].T < W) {
      snprintf(err, (size_t)errsz, "--val %s: %d steps, shorter than one window of %d steps",
               val[r].path, val[r].T, W);
      return -1;
    }
  }
  for (int r = 0; r < nrec; r++) {
    if (rec[r].T < W) {
      snprintf(err, (size_t)errsz, "%s: %d steps, shorter than one window of %d steps: give a "
               "shorter --window", rec[r].path, rec[r].T, W);
      return -1;
    }
    nwin += rec[r].T / W;
    nz += rec[r].T;
  }
  mjdiffMLPDef def;
  mjdiff_defaultMLPDef(&def);
  char msg[600];
  if (mjdiff_parseMLPSpec(o->spec, &def, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "--residual '%s': %s", o->spec, msg);
    return -1;
  }
  mjdiffResidual* res = NULL;
  if (mjdiff_makeResidual(m, &def, o->seed, &res, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "--residual '%s': %s", o->spec, msg);
    return -1;
  }
  mjdiffMLP* net = mjdiff_residualNet(res);
  int nth = mjdiff_mlpParamCount(net), nin = mjdiff_residualInputSize(res);
  double* theta = mjdiff_mlpParams(net);

  mjData* d = mj_makeData(m);
  win* wins = (win*)calloc((size_t)nwin, sizeof(win));
  double* Z = (double*)malloc(sizeof(double) * (size_t)nz * nin);
  double* states = (double*)malloc(sizeof(double) * (size_t)(W + 1) * nx);
  double* dLdx = (double*)malloc(sizeof(double) * (size_t)(W + 1) * ndx);
  double* gth = (double*)calloc((size_t)nth, sizeof(double));
  double* gth1 = (double*)calloc((size_t)nth, sizeof(double));
  double* gp = (double*)calloc((size_t)np + 1, sizeof(double));
  double* gp1 = (double*)calloc((size_t)np + 1, sizeof(double));
  double* p0 = (double*)calloc((size_t)np + 1, sizeof(double));
  double* rel = (double*)calloc((size_t)np + 1, sizeof(double));
  double* pv = (double*)calloc((size_t)np + 1, sizeof(double));
  double* qref = (double*)malloc(sizeof(double) * (size_t)nq);
  double* best = (double*)malloc(sizeof(double) * ((size_t)nth + np + 1));
  double* e = (double*)malloc(sizeof(double) * (size_t)nv);
  mjdiffRollout* ro = NULL;
  mjdiffAdam *adam = NULL, *adamp = NULL;
  int fail = 0;
  if (!d || !wins || !Z || !states || !dLdx || !gth || !gth1 || !gp || !gp1 || !p0 || !rel ||
      !pv || !qref || !e || !best) {
    snprintf(err, (size_t)errsz, "out of memory for the hybrid fit");
    fail = 1;
    goto done;
  }
  nwin = 0;
  nz = 0;
  for (int r = 0; r < nrec; r++) {
    for (int k0 = 0; k0 + W <= rec[r].T; k0 += W) {
      wins[nwin].rec = r;
      wins[nwin++].k0 = k0;
    }
    // normalisation data: the recordings' inputs (measured coordinates over the start state)
    for (int k = 0; k < rec[r].T; k++) {
      startAt(m, d, rec + r, k);
      mju_copy(d->ctrl, rec[r].ctrl + (size_t)nu * k, nu);
      mjdiff_residualInput(res, m, d, Z + (size_t)nin * nz++);
    }
  }
  if (mjdiff_fitMLPNormalization(net, Z, (int)nz, 1e-6, msg, sizeof(msg)) != MJDIFF_OK ||
      mjdiff_makeRollout(m, s, p, W, NULL, &ro, msg, sizeof(msg)) != MJDIFF_OK ||
      mjdiff_rolloutSetForce(ro, mjdiff_residualForceModel(res), theta, msg, sizeof(msg)) !=
          MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "%s", msg);
    fail = 1;
    goto done;
  }
  mjdiffAdamOptions ao;
  mjdiff_defaultAdamOptions(&ao);
  ao.lr = o->lr;
  ao.clip_norm = 0;
  if (mjdiff_makeAdam(nth, &ao, &adam, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "%s", msg);
    fail = 1;
    goto done;
  }
  if (np) {
    ao.lr = o->lr_param;
    if (mjdiff_makeAdam(np, &ao, &adamp, msg, sizeof(msg)) != MJDIFF_OK) {
      snprintf(err, (size_t)errsz, "%s", msg);
      fail = 1;
      goto done;
    }
    mjdiff_getParamValues(m, s, p, p0);
    for (int j = 0; j < np; j++) rel[j] = p0[j] != 0 ? p0[j] / fabs(p0[j]) : 0;
  }

  mjdiffRng rng;
  mjdiff_rngSeed(&rng, o->seed);
  double t0 = tool_now(), epochLoss = NAN, valLoss = NAN, bestVal = INFINITY;
  int bestEpoch = 0;
  if (np) mju_copy(pv, p0, np);
  for (int ep = 0; ep < o->epochs && !fail; ep++) {
    // shuffle (Fisher-Yates)
    for (long i = nwin - 1; i > 0; i--) {
      long j = (long)(mjdiff_rngUniform(&rng) * (double)(i + 1));
      if (j > i) j = i;
      win t = wins[i];
      wins[i] = wins[j];
      wins[j] = t;
    }
    double sumL = 0;
    long sumN = 0;
    for (long b0 = 0; b0 < nwin && !fail; b0 += o->batch) {
      long b1 = b0 + o->batch < nwin ? b0 + o->batch : nwin;
      mju_zero(gth, nth);
      mju_zero(gp, np);
      double Lb = 0;
      long Nb = 0;
      for (long wi = b0; wi < b1; wi++) {
        const sysidRecording* R = rec + wins[wi].rec;
        int k0 = wins[wi].k0;
        startAt(m, d, R, k0);
        if (mjdiff_rolloutForward(m, d, s, ro, R->ctrl + (size_t)nu * k0, NULL, NULL, states,
                                  NULL, msg, sizeof(msg)) != MJDIFF_OK ||
            mjdiff_residualStatus(res, msg, sizeof(msg)) != MJDIFF_OK) {
          snprintf(err, (size_t)errsz, "epoch %d, %s, window at step %d (time %g s): %s", ep + 1,
                   R->path, k0, R->t0 + k0 * m->opt.timestep, msg);
          fail = 1;
          break;
        }
        Lb += windowLoss(m, R, k0, W, states, o, qref, e, dLdx, &Nb);
        mjdiffRolloutGrad g;
        mjdiff_defaultRolloutGrad(&g);
        g.dLdx = dLdx;
        g.grad_force = gth1;
        g.grad_param = np ? gp1 : NULL;
        if (mjdiff_rolloutGradient(m, d, s, ro, &g, msg, sizeof(msg)) != MJDIFF_OK ||
            mjdiff_residualStatus(res, msg, sizeof(msg)) != MJDIFF_OK) {
          snprintf(err, (size_t)errsz, "epoch %d, %s, window at step %d: gradient: %s", ep + 1,
                   R->path, k0, msg);
          fail = 1;
          break;
        }
        mju_addTo(gth, gth1, nth);
        mju_addTo(gp, gp1, np);
      }
      if (fail) break;
      sumL += Lb;
      sumN += Nb;
      double scale = Nb > 0 ? 1.0 / (double)Nb : 0;
      mju_scl(gth, gth, scale, nth);
      mjdiffAdamInfo info;
      mjdiff_adamStep(adam, theta, gth, &info);
      if (np) {
        // the relative parameters: dL/dr_j = dL/dp_j |p_j,0|
        for (int j = 0; j < np; j++) gp[j] *= scale * (p0[j] != 0 ? fabs(p0[j]) : 1);
        mjdiff_adamStep(adamp, rel, gp, &info);
        for (int j = 0; j < np; j++) {
          pv[j] = p0[j] != 0 ? rel[j] * fabs(p0[j]) : rel[j];
          if (pv[j] < lo[j]) pv[j] = lo[j];
          if (pv[j] > hi[j]) pv[j] = hi[j];
          rel[j] = p0[j] != 0 ? pv[j] / fabs(p0[j]) : pv[j];
        }
        if (mjdiff_setParamValues(m, s, p, pv, msg, sizeof(msg)) != MJDIFF_OK) {
          snprintf(err, (size_t)errsz, "epoch %d: %s", ep + 1, msg);
          fail = 1;
        }
      }
    }
    epochLoss = sumN > 0 ? sumL / (double)sumN : NAN;
    if (!fail && nval) {
      valLoss = setLoss(m, d, s, ro, res, val, nval, o, states, qref, e, dLdx, msg, sizeof(msg));
      if (isnan(valLoss)) {
        snprintf(err, (size_t)errsz, "epoch %d, validation: %s", ep + 1, msg);
        fail = 1;
      } else if (valLoss < bestVal) {
        bestVal = valLoss;
        bestEpoch = ep + 1;
        mju_copy(best, theta, nth);
        mju_copy(best + nth, pv, np);
      }
    }
    if (!fail && o->progress && (ep == 0 || (ep + 1) % 10 == 0 || ep + 1 == o->epochs)) {
      fprintf(o->progress, "epoch %5d/%d  loss %.6e", ep + 1, o->epochs, epochLoss);
      if (nval) fprintf(o->progress, "  val %.6e (best %.6e at %d)", valLoss, bestVal, bestEpoch);
      fprintf(o->progress, "  windows %ld  wall %.1f s", nwin, tool_now() - t0);
      for (int j = 0; j < np && j < 6; j++) {
        fprintf(o->progress, "  %s %.6g", mjdiff_paramName(p, j), pv[j]);
      }
      fprintf(o->progress, "\n");
    }
    if (tool_interrupted()) {
      *stopped = 1;
      break;
    }
  }
  // early stopping: the best epoch's weights and parameters
  if (!fail && nval && bestEpoch > 0) {
    mju_copy(theta, best, nth);
    if (np && mjdiff_setParamValues(m, s, p, best + nth, msg, sizeof(msg)) != MJDIFF_OK) {
      snprintf(err, (size_t)errsz, "restoring the best epoch's parameters: %s", msg);
      fail = 1;
    }
    epochLoss = bestVal;
    if (o->progress) {
      fprintf(o->progress, "kept epoch %d: validation loss %.6e\n", bestEpoch, bestVal);
    }
  }
  if (!fail && !isfinite(epochLoss)) {
    snprintf(err, (size_t)errsz, "the hybrid fit's loss is not finite (%g)", epochLoss);
    fail = 1;
  }
  if (!fail) {
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp", out);
    if (mjdiff_saveMLP(net, tmp, msg, sizeof(msg)) != MJDIFF_OK || rename(tmp, out)) {
      remove(tmp);
      snprintf(err, (size_t)errsz, "cannot write '%s': %s", out, msg);
      fail = 1;
    }
  }
  if (!fail && p_out && np) mjdiff_getParamValues(m, s, p, p_out);
  if (loss) *loss = epochLoss;

done:
  mjdiff_freeAdam(adam);
  mjdiff_freeAdam(adamp);
  mjdiff_freeRollout(ro);
  mjdiff_freeResidual(res);
  if (d) mj_deleteData(d);
  free(wins);
  free(Z);
  free(states);
  free(dLdx);
  free(gth);
  free(gth1);
  free(gp);
  free(gp1);
  free(p0);
  free(rel);
  free(pv);
  free(qref);
  free(e);
  free(best);
  return fail ? -1 : 0;
}

//---------------------------------- stepper ------------------------------------------------------

typedef struct {
  const mjdiffModel* s;
  mjdiffResidual* res;
} stepper;

static int hybridStep(void* user, const mjModel* m, mjData* d, char* err, int errsz) {
  stepper* h = (stepper*)user;
  if (mjdiff_residualForce(h->res, m, d, d->qfrc_applied, err, errsz) != MJDIFF_OK) return -1;
  return mjdiff_step(m, d, h->s, err, errsz) == MJDIFF_OK ? 0 : -1;
}

int sysid_hybridMakeStepper(const mjModel* m, const mjdiffModel* s, const char* path,
                            sysidStepper* st, char* err, int errsz) {
  st->user = NULL;
  st->step = NULL;
  stepper* h = (stepper*)calloc(1, sizeof(stepper));
  if (!h) {
    snprintf(err, (size_t)errsz, "out of memory");
    return -1;
  }
  h->s = s;
  if (mjdiff_loadResidual(m, path, &h->res, err, errsz) != MJDIFF_OK) {
    free(h);
    return -1;
  }
  st->user = h;
  st->step = hybridStep;
  return 0;
}

void sysid_hybridFreeStepper(sysidStepper* st) {
  if (!st || !st->user) return;
  stepper* h = (stepper*)st->user;
  mjdiff_freeResidual(h->res);
  free(h);
  st->user = NULL;
  st->step = NULL;
}
