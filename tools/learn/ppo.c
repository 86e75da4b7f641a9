// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// PPO (Schulman et al. 2017) as mjdiff-learn's on-policy baseline, on the learner's network.
//
// Policy: a = mu(o) + sigma .* z, z ~ N(0, I), sigma = exp(s) (s: learned log-std, one per control),
// u = c + r tanh(a) (the squashing is part of the plant here, so log-probabilities are those of a):
//   log p(a | o) = -sum_i [ (a_i - mu_i)^2 / (2 sigma_i^2) + s_i ] + const
//   d log p / d mu_i = (a_i - mu_i) / sigma_i^2,   d log p / d s_i = (a_i - mu_i)^2 / sigma_i^2 - 1
// Rewards r_t = -c_t with the objective's step costs c_t (sum_t c_t = J), finite horizon T, gamma 1;
// the value V(o, t / T) (a value MLP with the time fraction as an extra input), and at the end the
// terminal reward known exactly: V_T = -c_T. GAE with lambda:
//   delta_t = r_t + V_{t+1} - V_t,  A_t = delta_t + lambda A_{t+1} (A_T = 0),  R_t = A_t + V_t
// advantages normalised over the batch. Clipped surrogate over minibatches of M samples, epochs:
//   L = -(1/M) sum_j min(rho_j A_j, clip(rho_j, 1 - e, 1 + e) A_j),  rho = exp(log p - log p_old)
//   dL/dlog p_j = -(1/M) rho_j A_j where the unclipped term is the smaller (else 0)
// Value loss (1/M) sum_j (V_j - R_j)^2 / 2, dL/dV_j = (V_j - R_j) / M. Both by the networks' VJP
// (nn/) and Adam (optim/), the policy's weights and log-stds as one vector. Schedule: E epochs of
// minibatches of M samples (defaults 10 and 64, as common PPO implementations such as CleanRL's),
// the rate annealed (cosine, to lr / 10, as mjdiff-learn's other methods) over the run's Adam
// steps when its length is known.

#include "ppo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/optim.h>
#include <mjdiff/random.h>

#define PPO_CLIP 0.2
#define PPO_LAMBDA 0.95
#define PPO_LOGSTD0 (-0.7)

struct ppoState_ {
  mjdiffLearner* L;
  mjdiffMLP* net;              // the policy mean (the learner's network)
  mjdiffMLP* vnet;             // value
  mjdiffMLPWork* pw;
  mjdiffMLPWork* vw;
  mjdiffAdam* padam;
  mjdiffAdam* vadam;
  int B, T, nobs, nu, np, nv;
  int epochs, M;               // epochs per iteration, minibatch size
  double* logstd;              // nu
  double* obs;                 // B (T+1) nobs
  double* act;                 // B T nu
  double* cost;                // B (T+1)
  double* val;                 // B (T+1)
  double* adv;                 // B T
  double* ret;                 // B T
  double* logp_old;            // B T
  int* perm;                   // B T
  double* x;                   // np + nu: policy weights and log-stds for Adam
  double* g;                   // np + nu
  double* vg;                  // nv
  double* mb_in;               // M (nobs + 1)
  double* mb_out;              // M max(nu, 1)
  double* mb_adj;              // M nu
  mjdiffRng rng;
};

void ppo_free(ppoState* p) {
  if (!p) return;
  mjdiff_freeMLP(p->vnet);
  mjdiff_freeMLPWork(p->pw);
  mjdiff_freeMLPWork(p->vw);
  mjdiff_freeAdam(p->padam);
  mjdiff_freeAdam(p->vadam);
  free(p->logstd);
  free(p->obs);
  free(p->act);
  free(p->cost);
  free(p->val);
  free(p->adv);
  free(p->ret);
  free(p->logp_old);
  free(p->perm);
  free(p->x);
  free(p->g);
  free(p->vg);
  free(p->mb_in);
  free(p->mb_out);
  free(p->mb_adj);
  free(p);
}

ppoState* ppo_make(mjdiffLearner* L, const mjModel* m, mjdiffMLP* net, int batch, int T,
                   double lr, double clip, int epochs, int minibatch, long iters, uint64_t seed,
                   char* err, int errsz) {
  if (epochs < 1 || minibatch < 1) {
    snprintf(err, (size_t)errsz, "epochs %d and minibatch %d must be >= 1", epochs, minibatch);
    return NULL;
  }
  ppoState* p = (ppoState*)calloc(1, sizeof(ppoState));
  if (!p) {
    snprintf(err, (size_t)errsz, "out of memory");
    return NULL;
  }
  p->epochs = epochs;
  p->M = minibatch;
  p->L = L;
  p->net = net;
  p->B = batch;
  p->T = T;
  const mjdiffMLPDef* def = mjdiff_mlpDef(net);
  p->nobs = def->nin;
  p->nu = (int)m->nu;
  p->np = mjdiff_mlpParamCount(net);
  mjdiffMLPDef vdef = *def;
  vdef.nin = p->nobs + 1;
  vdef.nout = 1;
  if (mjdiff_makeMLP(&vdef, &p->vnet, err, errsz) != MJDIFF_OK ||
      mjdiff_initMLP(p->vnet, MJDIFF_INIT_XAVIER_UNIFORM, seed + 17, 1.0, err, errsz) != MJDIFF_OK) {
    ppo_free(p);
    return NULL;
  }
  p->nv = mjdiff_mlpParamCount(p->vnet);
  // the value net sees the policy's normalised observation and the time fraction
  double* mean = (double*)malloc(sizeof(double) * (size_t)(p->nobs + 1));
  double* sd = (double*)malloc(sizeof(double) * (size_t)(p->nobs + 1));
  if (!mean || !sd) {
    free(mean);
    free(sd);
    ppo_free(p);
    return NULL;
  }
  memcpy(mean, mjdiff_mlpMean(net), sizeof(double) * (size_t)p->nobs);
  memcpy(sd, mjdiff_mlpStd(net), sizeof(double) * (size_t)p->nobs);
  mean[p->nobs] = 0.5;
  sd[p->nobs] = 0.29;
  mjdiff_setMLPNormalization(p->vnet, mean, sd, NULL, 0);
  free(mean);
  free(sd);
  size_t N = (size_t)batch * (size_t)T, N1 = (size_t)batch * (size_t)(T + 1);
  p->logstd = (double*)malloc(sizeof(double) * (size_t)p->nu);
  p->obs = (double*)malloc(sizeof(double) * N1 * (size_t)p->nobs);
  p->act = (double*)malloc(sizeof(double) * N * (size_t)p->nu);
  p->cost = (double*)malloc(sizeof(double) * N1);
  p->val = (double*)malloc(sizeof(double) * N1);
  p->adv = (double*)malloc(sizeof(double) * N);
  p->ret = (double*)malloc(sizeof(double) * N);
  p->logp_old = (double*)malloc(sizeof(double) * N);
  p->perm = (int*)malloc(sizeof(int) * N);
  p->x = (double*)malloc(sizeof(double) * (size_t)(p->np + p->nu));
  p->g = (double*)malloc(sizeof(double) * (size_t)(p->np + p->nu));
  p->vg = (double*)malloc(sizeof(double) * (size_t)p->nv);
  p->mb_in = (double*)malloc(sizeof(double) * (size_t)p->M * (size_t)(p->nobs + 1));
  p->mb_out = (double*)malloc(sizeof(double) * (size_t)p->M * (size_t)(p->nu + 1));
  p->mb_adj = (double*)malloc(sizeof(double) * (size_t)p->M * (size_t)(p->nu + 1));
  if (!p->logstd || !p->obs || !p->act || !p->cost || !p->val || !p->adv || !p->ret ||
      !p->logp_old || !p->perm || !p->x || !p->g || !p->vg || !p->mb_in || !p->mb_out ||
      !p->mb_adj) {
    ppo_free(p);
    snprintf(err, (size_t)errsz, "out of memory");
    return NULL;
  }
  for (int i = 0; i < p->nu; i++) p->logstd[i] = PPO_LOGSTD0;
  mjdiffAdamOptions ao;
  mjdiff_defaultAdamOptions(&ao);
  ao.lr = lr;
  ao.clip_norm = clip;
  long per_iter = (long)epochs * (long)((N + (size_t)minibatch - 1) / (size_t)minibatch);
  if (iters > 0 && iters * per_iter < 2000000000L) {
    ao.schedule = MJDIFF_LR_COSINE;
    ao.decay_steps = (int)(iters * per_iter);
    ao.lr_min = 0.1 * lr;
  }
  if (mjdiff_makeAdam(p->np + p->nu, &ao, &p->padam, err, errsz) != MJDIFF_OK ||
      mjdiff_makeAdam(p->nv, &ao, &p->vadam, err, errsz) != MJDIFF_OK ||
      mjdiff_makeMLPWork(net, p->M, &p->pw, err, errsz) != MJDIFF_OK ||
      mjdiff_makeMLPWork(p->vnet, p->M, &p->vw, err, errsz) != MJDIFF_OK) {
    ppo_free(p);
    return NULL;
  }
  mjdiff_rngSeed(&p->rng, seed ^ 0x7070ULL);
  return p;
}

// value inputs of sample (b, t): the observation and t / T
// the policy's input of sample j = b T + t: its observation (nobs)
static void policyInput(const ppoState* p, int j, double* in) {
  int b = j / p->T, t = j % p->T;
  memcpy(in, p->obs + ((size_t)b * (p->T + 1) + t) * p->nobs, sizeof(double) * (size_t)p->nobs);
}

// the value's input: the observation and the time fraction (nobs + 1)
static void valueInput(const ppoState* p, int b, int t, double* in) {
  policyInput(p, b * p->T + t, in);
  in[p->nobs] = (double)t / p->T;
}

static double logProb(const ppoState* p, const double* a, const double* mu) {
  double lp = 0;
  for (int i = 0; i < p->nu; i++) {
    double sg = exp(p->logstd[i]), z = (a[i] - mu[i]) / sg;
    lp -= 0.5 * z * z + p->logstd[i];
  }
  return lp;
}

mjdiffStatus ppo_sample(ppoState* p, uint64_t seed, mjdiffLearnStats* stats, char* err,
                        int errsz) {
  int B = p->B, T = p->T, nobs = p->nobs, nu = p->nu, M = p->M;
  mjdiffStatus st = mjdiff_learnSampleRollouts(p->L, p->net, p->logstd, seed, B, p->obs, p->act,
                                               p->cost, NULL, stats, err, errsz);
  if (st != MJDIFF_OK) return st;

  // values of every (b, t < T), V_T = -c_T; old log-probabilities
  int N = B * T;
  for (int j0 = 0; j0 < N; j0 += M) {
    int m = N - j0 < M ? N - j0 : M;
    for (int k = 0; k < m; k++) valueInput(p, (j0 + k) / T, (j0 + k) % T, p->mb_in + (size_t)k * (nobs + 1));
    st = mjdiff_mlpForward(p->vnet, p->vw, p->mb_in, m, p->mb_out, err, errsz);
    if (st != MJDIFF_OK) return st;
    for (int k = 0; k < m; k++) {
      int b = (j0 + k) / T, t = (j0 + k) % T;
      p->val[(size_t)b * (T + 1) + t] = p->mb_out[k];
    }
    for (int k = 0; k < m; k++) policyInput(p, j0 + k, p->mb_in + (size_t)k * nobs);
    st = mjdiff_mlpForward(p->net, p->pw, p->mb_in, m, p->mb_out, err, errsz);
    if (st != MJDIFF_OK) return st;
    for (int k = 0; k < m; k++) {
      p->logp_old[j0 + k] = logProb(p, p->act + (size_t)(j0 + k) * nu, p->mb_out + (size_t)k * nu);
    }
  }
  for (int b = 0; b < B; b++) {
    double* V = p->val + (size_t)b * (T + 1);
    const double* c = p->cost + (size_t)b * (T + 1);
    V[T] = -c[T];
    double A = 0;
    for (int t = T - 1; t >= 0; t--) {
      double delta = -c[t] + V[t + 1] - V[t];
      A = delta + PPO_LAMBDA * A;
      p->adv[(size_t)b * T + t] = A;
      p->ret[(size_t)b * T + t] = A + V[t];
    }
  }
  double am = 0, av = 0;
  for (int j = 0; j < N; j++) am += p->adv[j] / N;
  for (int j = 0; j < N; j++) av += (p->adv[j] - am) * (p->adv[j] - am) / N;
  double asd = av > 0 ? sqrt(av) : 1;
  for (int j = 0; j < N; j++) p->adv[j] = (p->adv[j] - am) / asd;
  return MJDIFF_OK;
}

// L and dL/d(theta, s) (p->g) over the samples idx[0 .. m) at the current weights and log-stds
double ppo_surrogate(ppoState* p, const int* idx, int m, char* err, int errsz) {
  int nobs = p->nobs, nu = p->nu;
  for (int k = 0; k < m; k++) policyInput(p, idx[k], p->mb_in + (size_t)k * nobs);
  if (mjdiff_mlpForward(p->net, p->pw, p->mb_in, m, p->mb_out, err, errsz) != MJDIFF_OK) {
    return NAN;
  }
  memset(p->g, 0, sizeof(double) * (size_t)(p->np + nu));
  double* gs = p->g + p->np;
  double L = 0;
  for (int k = 0; k < m; k++) {
    int j = idx[k];
    const double* a = p->act + (size_t)j * nu;
    const double* mu = p->mb_out + (size_t)k * nu;
    double rho = exp(logProb(p, a, mu) - p->logp_old[j]), A = p->adv[j];
    double rc = rho < 1 - PPO_CLIP ? 1 - PPO_CLIP : rho > 1 + PPO_CLIP ? 1 + PPO_CLIP : rho;
    L -= (rho * A < rc * A ? rho * A : rc * A) / m;
    int clipped = (A > 0 && rho > 1 + PPO_CLIP) || (A < 0 && rho < 1 - PPO_CLIP);
    double dlp = clipped ? 0 : -rho * A / m;
    for (int i = 0; i < nu; i++) {
      double s2 = exp(2 * p->logstd[i]), e = a[i] - mu[i];
      p->mb_adj[(size_t)k * nu + i] = dlp * e / s2;
      gs[i] += dlp * (e * e / s2 - 1);
    }
  }
  if (mjdiff_mlpVJP(p->net, p->pw, p->mb_adj, m, NULL, p->g, err, errsz) != MJDIFF_OK) return NAN;
  return L;
}

double* ppo_logstd(ppoState* p) { return p->logstd; }
const double* ppo_gradient(const ppoState* p) { return p->g; }

mjdiffStatus ppo_iteration(ppoState* p, uint64_t seed, mjdiffLearnStats* stats, double* gnorm,
                           char* err, int errsz) {
  int B = p->B, T = p->T, nobs = p->nobs, nu = p->nu, M = p->M;
  mjdiffStatus st = ppo_sample(p, seed, stats, err, errsz);
  if (st != MJDIFF_OK) return st;
  int N = B * T;
  double* theta = mjdiff_mlpParams(p->net);
  double* vtheta = mjdiff_mlpParams(p->vnet);
  for (int j = 0; j < N; j++) p->perm[j] = j;
  double last_norm = 0;
  for (int epoch = 0; epoch < p->epochs; epoch++) {
    for (int j = N - 1; j > 0; j--) {
      int k = (int)(mjdiff_rngUniform(&p->rng) * (j + 1));
      int tmp = p->perm[j];
      p->perm[j] = p->perm[k];
      p->perm[k] = tmp;
    }
    for (int j0 = 0; j0 < N; j0 += M) {
      int m = N - j0 < M ? N - j0 : M;
      // policy
      if (isnan(ppo_surrogate(p, p->perm + j0, m, err, errsz))) return MJDIFF_ERR_NONFINITE;
      memcpy(p->x, theta, sizeof(double) * (size_t)p->np);
      memcpy(p->x + p->np, p->logstd, sizeof(double) * (size_t)nu);
      mjdiffAdamInfo info;
      if (mjdiff_adamStep(p->padam, p->x, p->g, &info) != MJDIFF_OK) {
        return MJDIFF_ERR_NONFINITE;
      }
      last_norm = info.grad_norm;
      memcpy(theta, p->x, sizeof(double) * (size_t)p->np);
      for (int i = 0; i < nu; i++) {
        double s = p->x[p->np + i];
        p->logstd[i] = s < -5 ? -5 : s > 1 ? 1 : s;
      }
      // value
      for (int k = 0; k < m; k++) {
        int j = p->perm[j0 + k];
        valueInput(p, j / T, j % T, p->mb_in + (size_t)k * (nobs + 1));
      }
      st = mjdiff_mlpForward(p->vnet, p->vw, p->mb_in, m, p->mb_out, err, errsz);
      if (st != MJDIFF_OK) return st;
      for (int k = 0; k < m; k++) p->mb_adj[k] = (p->mb_out[k] - p->ret[p->perm[j0 + k]]) / m;
      memset(p->vg, 0, sizeof(double) * (size_t)p->nv);
      st = mjdiff_mlpVJP(p->vnet, p->vw, p->mb_adj, m, NULL, p->vg, err, errsz);
      if (st != MJDIFF_OK) return st;
      if (mjdiff_adamStep(p->vadam, vtheta, p->vg, NULL) != MJDIFF_OK) return MJDIFF_ERR_NONFINITE;
    }
  }
  if (gnorm) *gnorm = last_norm;
  return MJDIFF_OK;
}
