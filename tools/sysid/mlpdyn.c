// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid --mlp: a pure network dynamics model, the baseline without physics for the
// open-loop prediction errors of --predict (the same windows and errors as the smooth model's).
//
// State and input of a model whose joints are all hinges and slides (nq == nv) and that has no
// activation state (na == 0):
//   x = (qpos, qvel)  (nq + nv),   z = (qpos, qvel, ctrl)  (nq + nv + nu)
// Model, one step of the model's timestep h:
//   x_{k+1} = x_k + f(z_k),   time_{k+1} = time_k + h
// with f an MLP of <mjdiff/nn.h> (its input normalisation zn = (z - mu_z) ./ s_z fitted to the
// data, s_z = 1 for a constant feature).
// Training data: every transition k -> k+1 of every recording whose qpos_k, qvel_k, qpos_{k+1},
// qvel_{k+1} are all measured (no NaN), with the recorded control u_k (zero-order hold):
//   z_k = (qpos_k, qvel_k, u_k),  y_k = x_{k+1} - x_k
// Output normalisation per output i over the N transitions:
//   mu_i = mean_k y_k,i,   s_i = max(std_k y_k,i, 1e-9),   yn_k,i = (y_k,i - mu_i) / s_i
// Loss of a minibatch B (256 transitions, shuffled each epoch by a seeded generator):
//   L = 1/(|B| n_y) sum_{k in B} |g(z_k) - yn_k|^2,   dL/dg(z_k) = 2 (g(z_k) - yn_k) / (|B| n_y)
// minimised by Adam (<mjdiff/optim.h>) on the weights of g. After training the normalisation is
// folded into the last layer (W_L, b_L), so that the saved network is f itself:
//   f(z) = s .* g(z) + mu:   W_L[i, :] <- s_i W_L[i, :],   b_L[i] <- s_i b_L[i] + mu_i

#include "mlpdyn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/nn.h>
#include <mjdiff/optim.h>

#include "toolutil.h"

#define MLP_BATCH 256
#define MLP_STD_FLOOR 1e-9

int sysid_mlpCheckModel(const mjModel* m, char* err, int errsz) {
  for (int j = 0; j < m->njnt; j++) {
    int t = m->jnt_type[j];
    if (t == mjJNT_HINGE || t == mjJNT_SLIDE) continue;
    const char* name = mj_id2name(m, mjOBJ_JOINT, j);
    snprintf(err, (size_t)errsz,
             "--mlp models only hinge and slide joints (state qpos, qvel with nq == nv); joint "
             "'%s' (%d) is a %s joint",
             name ? name : "", j, t == mjJNT_BALL ? "ball" : "free");
    return -1;
  }
  if (m->na) {
    for (int i = 0; i < m->nu; i++) {
      if (m->actuator_dyntype[i] == mjDYN_NONE) continue;
      const char* name = mj_id2name(m, mjOBJ_ACTUATOR, i);
      snprintf(err, (size_t)errsz,
               "--mlp models no activation state (na must be 0, got %d); actuator '%s' (%d) has "
               "dynamics",
               (int)m->na, name ? name : "", i);
      return -1;
    }
    snprintf(err, (size_t)errsz, "--mlp models no activation state (na must be 0, got %d)",
             (int)m->na);
    return -1;
  }
  return 0;
}

//---------------------------------- training -----------------------------------------------------

static uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int finiteRow(const double* x, int n) {
  for (int i = 0; i < n; i++) {
    if (!isfinite(x[i])) return 0;
  }
  return 1;
}

// the transitions of the recordings: z (N x nin), y (N x nout); returns N, or -1 with err
static long collect(const mjModel* m, const sysidRecording* rec, int nrec, double** zout,
                    double** yout, char* err, int errsz) {
  int nq = m->nq, nv = m->nv, nu = m->nu, nin = nq + nv + nu, nout = nq + nv;
  long cap = 0;
  for (int r = 0; r < nrec; r++) cap += rec[r].T;
  double* z = (double*)malloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1) * (size_t)nin);
  double* y = (double*)malloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1) * (size_t)nout);
  if (!z || !y) {
    free(z);
    free(y);
    snprintf(err, (size_t)errsz, "out of memory");
    return -1;
  }
  long n = 0;
  for (int r = 0; r < nrec; r++) {
    const sysidRecording* R = rec + r;
    long n0 = n;
    for (int k = 0; k < R->T; k++) {
      const double* q0 = R->qpos + (size_t)nq * k;
      const double* v0 = R->qvel + (size_t)nv * k;
      const double* q1 = q0 + nq;
      const double* v1 = v0 + nv;
      const double* u = R->ctrl + (size_t)nu * k;
      if (!finiteRow(q0, nq) || !finiteRow(v0, nv) || !finiteRow(q1, nq) || !finiteRow(v1, nv) ||
          !finiteRow(u, nu)) {
        continue;
      }
      double* zr = z + (size_t)nin * n;
      double* yr = y + (size_t)nout * n;
      memcpy(zr, q0, sizeof(double) * (size_t)nq);
      memcpy(zr + nq, v0, sizeof(double) * (size_t)nv);
      memcpy(zr + nq + nv, u, sizeof(double) * (size_t)nu);
      for (int i = 0; i < nq; i++) yr[i] = q1[i] - q0[i];
      for (int i = 0; i < nv; i++) yr[nq + i] = v1[i] - v0[i];
      n++;
    }
    if (n == n0) {
      snprintf(err, (size_t)errsz,
               "%s: no usable transition (every step k -> k+1 has an unmeasured qpos or qvel: "
               "--mlp needs every joint's qpos and qvel columns)",
               R->path);
      free(z);
      free(y);
      return -1;
    }
  }
  *zout = z;
  *yout = y;
  return n;
}

// train net (normalised outputs) on z, yn (n rows); -1 with err
static int fit(mjdiffMLP* net, const double* z, const double* yn, long n,
               const sysidMLPOptions* opt, char* err, int errsz) {
  const mjdiffMLPDef* def = mjdiff_mlpDef(net);
  int nin = def->nin, nout = def->nout, np = mjdiff_mlpParamCount(net);
  int bmax = n < MLP_BATCH ? (int)n : MLP_BATCH;
  mjdiffMLPWork* work = NULL;
  mjdiffAdam* adam = NULL;
  double* zb = (double*)malloc(sizeof(double) * (size_t)bmax * (size_t)nin);
  double* yb = (double*)malloc(sizeof(double) * (size_t)bmax * (size_t)nout);
  double* gy = (double*)malloc(sizeof(double) * (size_t)bmax * (size_t)nout);
  double* grad = (double*)malloc(sizeof(double) * (size_t)np);
  long* perm = (long*)malloc(sizeof(long) * (size_t)n);
  int ret = -1;
  if (!zb || !yb || !gy || !grad || !perm) {
    snprintf(err, (size_t)errsz, "out of memory");
    goto done;
  }
  if (mjdiff_makeMLPWork(net, bmax, &work, err, errsz) != MJDIFF_OK) goto done;
  mjdiffAdamOptions aopt;
  mjdiff_defaultAdamOptions(&aopt);
  aopt.lr = opt->lr;
  if (mjdiff_makeAdam(np, &aopt, &adam, err, errsz) != MJDIFF_OK) goto done;
  uint64_t rng = opt->seed ^ 0x5eedf00dULL;
  for (long i = 0; i < n; i++) perm[i] = i;
  double* w = mjdiff_mlpParams(net);
  double t0 = tool_now();
  int every = opt->epochs >= 10 ? opt->epochs / 10 : 1;
  for (int ep = 0; ep < opt->epochs; ep++) {
    // Fisher-Yates shuffle
    for (long i = n - 1; i > 0; i--) {
      long j = (long)(splitmix(&rng) % (uint64_t)(i + 1));
      long t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    double sse = 0;
    for (long b0 = 0; b0 < n; b0 += bmax) {
      int B = (int)(n - b0 < bmax ? n - b0 : bmax);
      for (int r = 0; r < B; r++) {
        long k = perm[b0 + r];
        memcpy(zb + (size_t)nin * r, z + (size_t)nin * k, sizeof(double) * (size_t)nin);
      }
      if (mjdiff_mlpForward(net, work, zb, B, yb, err, errsz) != MJDIFF_OK) goto done;
      // dL/dg = 2 (g - yn) / (B nout)
      double scale = 2.0 / ((double)B * nout);
      for (int r = 0; r < B; r++) {
        const double* t = yn + (size_t)nout * perm[b0 + r];
        for (int i = 0; i < nout; i++) {
          double e = yb[(size_t)nout * r + i] - t[i];
          sse += e * e;
          gy[(size_t)nout * r + i] = scale * e;
        }
      }
      memset(grad, 0, sizeof(double) * (size_t)np);
      if (mjdiff_mlpVJP(net, work, gy, B, NULL, grad, err, errsz) != MJDIFF_OK) goto done;
      if (mjdiff_adamStep(adam, w, grad, NULL) != MJDIFF_OK) {
        snprintf(err, (size_t)errsz, "epoch %d: non-finite gradient (lower --lr)", ep + 1);
        goto done;
      }
    }
    double mse = sse / ((double)n * nout);
    if (!isfinite(mse)) {
      snprintf(err, (size_t)errsz, "epoch %d: the training loss is not finite (lower --lr)",
               ep + 1);
      goto done;
    }
    if (opt->progress && (ep == 0 || (ep + 1) % every == 0 || ep + 1 == opt->epochs)) {
      fprintf(opt->progress,
              "mjdiff-sysid: mlp epoch %5d/%d  train mse %.4e (normalised)  %.2f s\n", ep + 1,
              opt->epochs, mse, tool_now() - t0);
    }
    if (tool_interrupted()) {
      snprintf(err, (size_t)errsz, "interrupted at epoch %d (nothing written)", ep + 1);
      goto done;
    }
  }
  ret = 0;
done:
  mjdiff_freeAdam(adam);
  mjdiff_freeMLPWork(work);
  free(zb);
  free(yb);
  free(gy);
  free(grad);
  free(perm);
  return ret;
}

int sysid_mlpTrain(const mjModel* m, const sysidRecording* rec, int nrec,
                   const sysidMLPOptions* opt, const char* out, char* err, int errsz) {
  if (sysid_mlpCheckModel(m, err, errsz)) return -1;
  if (opt->epochs < 1 || !(opt->lr > 0) || !isfinite(opt->lr)) {
    snprintf(err, (size_t)errsz, "--epochs must be >= 1 and --lr a finite number > 0");
    return -1;
  }
  int nq = m->nq, nv = m->nv, nu = m->nu, nin = nq + nv + nu, nout = nq + nv;
  mjdiffMLPDef def;
  mjdiff_defaultMLPDef(&def);
  char msg[900];
  if (mjdiff_parseMLPSpec(opt->spec, &def, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "--mlp: %s", msg);
    return -1;
  }
  def.nin = nin;
  def.nout = nout;

  int ret = -1;
  double *z = NULL, *y = NULL, *mu = NULL, *sd = NULL;
  mjdiffMLP* net = NULL;
  long n = collect(m, rec, nrec, &z, &y, err, errsz);
  if (n < 0) goto done;

  // output normalisation: yn = (y - mu) ./ sd (y overwritten)
  mu = (double*)calloc((size_t)nout, sizeof(double));
  sd = (double*)calloc((size_t)nout, sizeof(double));
  if (!mu || !sd) {
    snprintf(err, (size_t)errsz, "out of memory");
    goto done;
  }
  for (long k = 0; k < n; k++) {
    for (int i = 0; i < nout; i++) mu[i] += y[(size_t)nout * k + i];
  }
  for (int i = 0; i < nout; i++) mu[i] /= (double)n;
  for (long k = 0; k < n; k++) {
    for (int i = 0; i < nout; i++) {
      double e = y[(size_t)nout * k + i] - mu[i];
      sd[i] += e * e;
    }
  }
  for (int i = 0; i < nout; i++) sd[i] = fmax(sqrt(sd[i] / (double)n), MLP_STD_FLOOR);
  for (long k = 0; k < n; k++) {
    for (int i = 0; i < nout; i++) {
      double* v = y + (size_t)nout * k + i;
      *v = (*v - mu[i]) / sd[i];
    }
  }

  if (mjdiff_makeMLP(&def, &net, msg, sizeof(msg)) != MJDIFF_OK ||
      mjdiff_initMLP(net, MJDIFF_INIT_XAVIER_UNIFORM, opt->seed, 1.0, msg, sizeof(msg)) !=
          MJDIFF_OK ||
      mjdiff_fitMLPNormalization(net, z, (int)n, MLP_STD_FLOOR, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "--mlp %s: %s", opt->spec, msg);
    goto done;
  }
  if (opt->progress) {
    char spec[256];
    mjdiff_formatMLPSpec(&def, spec, sizeof(spec));
    fprintf(opt->progress,
            "mjdiff-sysid: mlp %s, %d inputs, %d outputs, %d weights; %ld transitions from %d "
            "recordings; %d epochs, batch %d, lr %g\n",
            spec, nin, nout, mjdiff_mlpParamCount(net), n, nrec, opt->epochs, MLP_BATCH, opt->lr);
  }
  if (fit(net, z, y, n, opt, msg, sizeof(msg))) {
    snprintf(err, (size_t)errsz, "--mlp: %s", msg);
    goto done;
  }

  // fold the output normalisation into the last layer: f = sd .* g + mu
  {
    double* w = mjdiff_mlpParams(net);
    int L = def.nhidden, nprev = L ? def.width[L - 1] : nin;
    double* W = w + mjdiff_mlpWeightOffset(net, L);
    double* b = w + mjdiff_mlpBiasOffset(net, L);
    for (int i = 0; i < nout; i++) {
      for (int j = 0; j < nprev; j++) W[(size_t)nprev * i + j] *= sd[i];
      b[i] = b[i] * sd[i] + mu[i];
    }
  }

  char tmp[1100];
  snprintf(tmp, sizeof(tmp), "%s.tmp", out);
  if (mjdiff_saveMLP(net, tmp, msg, sizeof(msg)) != MJDIFF_OK) {
    remove(tmp);
    snprintf(err, (size_t)errsz, "%s", msg);
    goto done;
  }
  if (rename(tmp, out)) {
    remove(tmp);
    snprintf(err, (size_t)errsz, "cannot write '%s'", out);
    goto done;
  }
  ret = 0;
done:
  mjdiff_freeMLP(net);
  free(z);
  free(y);
  free(mu);
  free(sd);
  return ret;
}

//---------------------------------- stepper ------------------------------------------------------

typedef struct {
  mjdiffMLP* net;
  mjdiffMLPWork* work;
  double* z;                   // (nin)
  double* y;                   // (nout)
} mlpStep;

static void freeStep(mlpStep* s) {
  if (!s) return;
  mjdiff_freeMLPWork(s->work);
  mjdiff_freeMLP(s->net);
  free(s->z);
  free(s->y);
  free(s);
}

static int stepMLP(void* user, const mjModel* m, mjData* d, char* err, int errsz) {
  mlpStep* s = (mlpStep*)user;
  int nq = m->nq, nv = m->nv, nu = m->nu;
  mju_copy(s->z, d->qpos, nq);
  mju_copy(s->z + nq, d->qvel, nv);
  mju_copy(s->z + nq + nv, d->ctrl, nu);
  if (mjdiff_mlpForward(s->net, s->work, s->z, 1, s->y, err, errsz) != MJDIFF_OK) return -1;
  if (!finiteRow(s->y, nq + nv)) {
    snprintf(err, (size_t)errsz, "the network's output is not finite");
    return -1;
  }
  for (int i = 0; i < nq; i++) d->qpos[i] += s->y[i];
  for (int i = 0; i < nv; i++) d->qvel[i] += s->y[nq + i];
  d->time += m->opt.timestep;
  return 0;
}

int sysid_mlpMakeStepper(const mjModel* m, const char* path, sysidStepper* st, char* err,
                         int errsz) {
  st->user = NULL;
  st->step = NULL;
  if (sysid_mlpCheckModel(m, err, errsz)) return -1;
  int nin = m->nq + m->nv + m->nu, nout = m->nq + m->nv;
  mlpStep* s = (mlpStep*)calloc(1, sizeof(mlpStep));
  char msg[900];
  if (!s) {
    snprintf(err, (size_t)errsz, "out of memory");
    return -1;
  }
  if (mjdiff_loadMLP(path, &s->net, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "--mlp-weights %s: %s", path, msg);
    freeStep(s);
    return -1;
  }
  const mjdiffMLPDef* def = mjdiff_mlpDef(s->net);
  if (def->nin != nin || def->nout != nout) {
    snprintf(err, (size_t)errsz,
             "--mlp-weights %s: the network has %d inputs and %d outputs; the model needs %d "
             "inputs (nq %d + nv %d + nu %d) and %d outputs (nq + nv)",
             path, def->nin, def->nout, nin, (int)m->nq, (int)m->nv, (int)m->nu, nout);
    freeStep(s);
    return -1;
  }
  s->z = (double*)malloc(sizeof(double) * (size_t)nin);
  s->y = (double*)malloc(sizeof(double) * (size_t)nout);
  snprintf(msg, sizeof(msg), "out of memory");
  if (!s->z || !s->y || mjdiff_makeMLPWork(s->net, 1, &s->work, msg, sizeof(msg)) != MJDIFF_OK) {
    snprintf(err, (size_t)errsz, "--mlp-weights %s: %s", path, msg);
    freeStep(s);
    return -1;
  }
  st->user = s;
  st->step = stepMLP;
  return 0;
}

void sysid_mlpFreeStepper(sysidStepper* st) {
  if (!st) return;
  freeStep((mlpStep*)st->user);
  st->user = NULL;
  st->step = NULL;
}
