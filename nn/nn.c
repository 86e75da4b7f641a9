// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Multilayer perceptron: forward pass and its VJP for a batch, initialisers, normalisation.
//
// Forward, one row x (nin) of a batch, layers k = 0..L-1 (L = nhidden + 1):
//   xn   = (x - mu) ./ sigma                                      (fixed normalisation)
//   h_0  = xn
//   z_k  = W_k h_k + b_k          W_k: n_{k+1} x n_k, b_k: n_{k+1}
//   h_{k+1} = act_k(z_k)          k < L-1 (hidden layers)
//   y    = z_{L-1}                                                (linear output)
// Activations and their derivatives, written in terms of a = act(z), the value the forward keeps
// (so the workspace stores h_{k+1} only, never z_k):
//   tanh      a = tanh z                     da/dz = 1 - a^2
//   relu      a = max(z, 0)                  da/dz = [a > 0]           (0 at z = 0)
//   elu       a = z (z > 0), e^z - 1         da/dz = 1 (a > 0), a + 1 (= e^z)
//   softplus  a = log(1 + e^z)               da/dz = sigmoid(z) = 1 - e^{-a} = -expm1(-a)
//             (evaluated as max(z, 0) + log1p(exp(-|z|)), exact for large |z|)
// VJP (reverse mode), given gy = dL/dy for the row:
//   g_{L-1} = gy                                        (dL/dz of the output layer)
//   dL/dW_k += g_k h_k'    dL/db_k += g_k               (outer product: summed over the batch)
//   gh_k    = W_k' g_k                                  (dL/dh_k, n_k)
//   g_{k-1} = gh_k .* act'_{k-1}(h_k)                   (k >= 1)
//   dL/dx   = gh_0 ./ sigma                             (the normalisation's transpose)
// The batch adds a row index to every vector: row b of Z_k (B x n_{k+1}, row-major) is z_k for x_b,
// and dL/dW_k = sum_b g_{k,b} h_{k,b}'.
//
// Algebra on BLIS's level-2 operations, row by row: bli_dgemv for W_k h and W_k' g (the
// transpose as strides: W_k' is n_k x n_{k+1} with row stride 1 and column stride n_k), bli_dger
// for the outer products, bli_daddv for the bias. Level 3 (bli_dgemm) is not used: the OpenMP
// build of BLIS that Debian ships opens an OpenMP region per call, and libgomp allocates a team
// for it every time (one allocation per call, measured), which forward and VJP must not do. Level-2
// operations run on the calling thread, deterministically, and allocate nothing once BLIS is
// initialised (bli_init, called by mjdiff_makeMLPWork).
//
// Initialisers (fan_in = n_k, fan_out = n_{k+1}): Xavier (Glorot) uniform U(-a, a) with
// a = sqrt(6 / (fan_in + fan_out)), normal N(0, 2 / (fan_in + fan_out)); He (Kaiming) uniform with
// a = sqrt(6 / fan_in), normal N(0, 2 / fan_in); biases zero. Random numbers: splitmix64 seeds
// xoshiro256**; u = (r >> 11) 2^-53; normals by Box-Muller on (1 - u1, u2), one pair per two draws.

#define _POSIX_C_SOURCE 200809L  // blis.h's pthread types

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <blis.h>

#include <mjdiff/nn.h>
#include <mjdiff/random.h>

#include "internal.h"
#include "nn_internal.h"

struct mjdiffMLPWork_ {
  int nlayer;
  int dims[NN_MAXLAYER + 1];   // the architecture the workspace was made for
  int act[MJDIFF_NN_MAXHIDDEN];
  int maxbatch;
  int maxdim;                  // max_k n_k
  const mjdiffMLP* net;        // network of the last forward pass (NULL: none yet)
  int batch;                   // its batch
  double* xn;                  // maxbatch x nin: normalised inputs
  double* h[NN_MAXLAYER];      // h[k] (k = 1..L-1): maxbatch x n_k hidden activations
  double* g0;                  // maxbatch x maxdim: adjoints
  double* g1;                  // maxbatch x maxdim
  double* mem;                 // the one allocation behind the arrays above
};

//---------------------------------- architecture -------------------------------------------------

void mjdiff_defaultMLPDef(mjdiffMLPDef* def) {
  if (!def) return;
  memset(def, 0, sizeof(*def));
  def->nhidden = 2;
  def->width[0] = def->width[1] = 64;
  def->act[0] = def->act[1] = MJDIFF_ACT_TANH;
}

const char* mjdiff_activationName(int act) {
  switch (act) {
    case MJDIFF_ACT_TANH:
      return "tanh";
    case MJDIFF_ACT_RELU:
      return "relu";
    case MJDIFF_ACT_ELU:
      return "elu";
    case MJDIFF_ACT_SOFTPLUS:
      return "softplus";
    default:
      return "?";
  }
}

mjdiffStatus mjdiff_nnCheckDef(const mjdiffMLPDef* def, char* err, int errsz) {
  if (!def) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "def is NULL");
  if (def->nin < 1 || def->nin > MJDIFF_NN_MAXWIDTH) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "nin must be in [1, %d], got %d",
                        MJDIFF_NN_MAXWIDTH, def->nin);
  }
  if (def->nout < 1 || def->nout > MJDIFF_NN_MAXWIDTH) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "nout must be in [1, %d], got %d",
                        MJDIFF_NN_MAXWIDTH, def->nout);
  }
  if (def->nhidden < 0 || def->nhidden > MJDIFF_NN_MAXHIDDEN) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "nhidden must be in [0, %d], got %d",
                        MJDIFF_NN_MAXHIDDEN, def->nhidden);
  }
  for (int i = 0; i < def->nhidden; i++) {
    if (def->width[i] < 1 || def->width[i] > MJDIFF_NN_MAXWIDTH) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "width[%d] must be in [1, %d], got %d", i,
                          MJDIFF_NN_MAXWIDTH, def->width[i]);
    }
    if (def->act[i] < 0 || def->act[i] >= MJDIFF_ACT_COUNT) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                          "act[%d] must be 0 (tanh), 1 (relu), 2 (elu) or 3 (softplus), got %d", i,
                          def->act[i]);
    }
  }
  // the weights' count in an int
  long n = 0;
  int prev = def->nin;
  for (int k = 0; k <= def->nhidden; k++) {
    int next = k < def->nhidden ? def->width[k] : def->nout;
    n += (long)next * prev + next;
    prev = next;
  }
  if (n > 1L << 30) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "the network has %ld weights, at most 2^30",
                        n);
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_makeMLP(const mjdiffMLPDef* def, mjdiffMLP** out, char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  mjdiffStatus st = mjdiff_nnCheckDef(def, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiffMLP* net = (mjdiffMLP*)calloc(1, sizeof(mjdiffMLP));
  if (!net) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "network: out of memory");
  net->def = *def;
  for (int i = def->nhidden; i < MJDIFF_NN_MAXHIDDEN; i++) net->def.width[i] = net->def.act[i] = 0;
  net->nlayer = def->nhidden + 1;
  net->dims[0] = def->nin;
  for (int k = 0; k < def->nhidden; k++) net->dims[k + 1] = def->width[k];
  net->dims[net->nlayer] = def->nout;
  int off = 0;
  for (int k = 0; k < net->nlayer; k++) {
    net->woff[k] = off;
    off += net->dims[k + 1] * net->dims[k];
    net->boff[k] = off;
    off += net->dims[k + 1];
  }
  net->nparam = off;
  net->params = (double*)calloc((size_t)off, sizeof(double));
  net->mean = (double*)calloc((size_t)def->nin, sizeof(double));
  net->std = (double*)malloc(sizeof(double) * (size_t)def->nin);
  if (!net->params || !net->mean || !net->std) {
    mjdiff_freeMLP(net);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "network of %d weights: out of memory",
                        off);
  }
  for (int i = 0; i < def->nin; i++) net->std[i] = 1;
  *out = net;
  return MJDIFF_OK;
}

void mjdiff_freeMLP(mjdiffMLP* net) {
  if (!net) return;
  free(net->params);
  free(net->mean);
  free(net->std);
  free(net);
}

mjdiffMLP* mjdiff_copyMLP(const mjdiffMLP* net) {
  if (!net) return NULL;
  mjdiffMLP* c = NULL;
  if (mjdiff_makeMLP(&net->def, &c, NULL, 0) != MJDIFF_OK) return NULL;
  memcpy(c->params, net->params, sizeof(double) * (size_t)net->nparam);
  memcpy(c->mean, net->mean, sizeof(double) * (size_t)net->def.nin);
  memcpy(c->std, net->std, sizeof(double) * (size_t)net->def.nin);
  return c;
}

const mjdiffMLPDef* mjdiff_mlpDef(const mjdiffMLP* net) {
  return net ? &net->def : NULL;
}

int mjdiff_mlpParamCount(const mjdiffMLP* net) {
  return net ? net->nparam : 0;
}

double* mjdiff_mlpParams(mjdiffMLP* net) {
  return net ? net->params : NULL;
}

int mjdiff_mlpWeightOffset(const mjdiffMLP* net, int layer) {
  return net && layer >= 0 && layer < net->nlayer ? net->woff[layer] : -1;
}

int mjdiff_mlpBiasOffset(const mjdiffMLP* net, int layer) {
  return net && layer >= 0 && layer < net->nlayer ? net->boff[layer] : -1;
}

const double* mjdiff_mlpMean(const mjdiffMLP* net) {
  return net ? net->mean : NULL;
}

const double* mjdiff_mlpStd(const mjdiffMLP* net) {
  return net ? net->std : NULL;
}

//---------------------------------- initialisers -------------------------------------------------

mjdiffStatus mjdiff_initMLP(mjdiffMLP* net, int scheme, uint64_t seed, double output_gain,
                            char* err, int errsz) {
  if (!net) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "net is NULL");
  if (scheme < MJDIFF_INIT_XAVIER_UNIFORM || scheme > MJDIFF_INIT_HE_NORMAL) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "init scheme must be 0 (xavier uniform), 1 (xavier normal), 2 (he "
                        "uniform) or 3 (he normal), got %d",
                        scheme);
  }
  if (!(output_gain >= 0) || !isfinite(output_gain)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "output_gain must be >= 0 and finite, got %g", output_gain);
  }
  mjdiffRng r;
  mjdiff_rngSeed(&r, seed);
  int normal = scheme == MJDIFF_INIT_XAVIER_NORMAL || scheme == MJDIFF_INIT_HE_NORMAL;
  int xavier = scheme == MJDIFF_INIT_XAVIER_UNIFORM || scheme == MJDIFF_INIT_XAVIER_NORMAL;
  for (int k = 0; k < net->nlayer; k++) {
    int fin = net->dims[k], fout = net->dims[k + 1];
    double fan = xavier ? fin + fout : fin;
    double gain = k == net->nlayer - 1 ? output_gain : 1;
    double* W = net->params + net->woff[k];
    int n = fin * fout;
    if (normal) {
      // std s = sqrt(2 / fan); Box-Muller pairs
      double s = gain * sqrt(2 / fan);
      for (int i = 0; i < n; i += 2) {
        double u1 = 1 - mjdiff_rngUniform(&r), u2 = mjdiff_rngUniform(&r);
        double rad = sqrt(-2 * log(u1)), ang = 6.283185307179586 * u2;
        W[i] = s * rad * cos(ang);
        if (i + 1 < n) W[i + 1] = s * rad * sin(ang);
      }
    } else {
      // U(-a, a), a = sqrt(6 / fan)
      double a = gain * sqrt(6 / fan);
      for (int i = 0; i < n; i++) W[i] = a * (2 * mjdiff_rngUniform(&r) - 1);
    }
    memset(net->params + net->boff[k], 0, sizeof(double) * (size_t)fout);
  }
  return MJDIFF_OK;
}

//---------------------------------- normalisation ------------------------------------------------

mjdiffStatus mjdiff_setMLPNormalization(mjdiffMLP* net, const double* mean, const double* std,
                                        char* err, int errsz) {
  if (!net) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "net is NULL");
  int nin = net->def.nin;
  for (int i = 0; i < nin; i++) {
    if (mean && !isfinite(mean[i])) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "mean[%d] must be finite, got %g", i,
                          mean[i]);
    }
    if (std && (!(std[i] > 0) || !isfinite(std[i]))) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "std[%d] must be > 0 and finite, got %g",
                          i, std[i]);
    }
  }
  for (int i = 0; i < nin; i++) {
    net->mean[i] = mean ? mean[i] : 0;
    net->std[i] = std ? std[i] : 1;
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_fitMLPNormalization(mjdiffMLP* net, const double* data, int n,
                                        double min_std, char* err, int errsz) {
  if (!net || !data) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "net or data is NULL");
  if (n < 1) return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "n must be >= 1, got %d", n);
  if (!(min_std >= 0) || !isfinite(min_std)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "min_std must be >= 0 and finite, got %g",
                        min_std);
  }
  int nin = net->def.nin;
  for (long j = 0; j < (long)n * nin; j++) {
    if (!isfinite(data[j])) {
      return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE, "data[%ld][%ld] is not finite",
                          j / nin, j % nin);
    }
  }
  for (int i = 0; i < nin; i++) {
    // two passes: mean, then the centred second moment
    double s = 0;
    for (int b = 0; b < n; b++) s += data[(size_t)b * nin + i];
    double mu = s / n, v = 0;
    for (int b = 0; b < n; b++) {
      double e = data[(size_t)b * nin + i] - mu;
      v += e * e;
    }
    double sd = sqrt(v / n);
    net->mean[i] = mu;
    net->std[i] = sd > min_std && sd > 0 ? sd : 1;
  }
  return MJDIFF_OK;
}

//---------------------------------- workspace ----------------------------------------------------

long mjdiff_mlpWorkSize(const mjdiffMLPDef* def, int maxbatch) {
  if (!def || maxbatch < 1 || mjdiff_nnCheckDef(def, NULL, 0) != MJDIFF_OK) return -1;
  long rows = def->nin, maxdim = def->nin > def->nout ? def->nin : def->nout;
  for (int i = 0; i < def->nhidden; i++) {
    rows += def->width[i];
    if (def->width[i] > maxdim) maxdim = def->width[i];
  }
  return (long)maxbatch * (rows + 2 * maxdim);
}

mjdiffStatus mjdiff_makeMLPWork(const mjdiffMLP* net, int maxbatch, mjdiffMLPWork** out,
                                char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (!net) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "net is NULL");
  if (maxbatch < 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "maxbatch must be >= 1, got %d", maxbatch);
  }
  long size = mjdiff_mlpWorkSize(&net->def, maxbatch);
  if (size < 0 || size > (1L << 34)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE,
                        "workspace of %ld doubles (maxbatch %d) is too large", size, maxbatch);
  }
  mjdiffMLPWork* w = (mjdiffMLPWork*)calloc(1, sizeof(mjdiffMLPWork));
  if (w) w->mem = (double*)calloc((size_t)size, sizeof(double));
  if (!w || !w->mem) {
    mjdiff_freeMLPWork(w);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "workspace of %ld doubles: out of memory",
                        size);
  }
  w->nlayer = net->nlayer;
  memcpy(w->dims, net->dims, sizeof(w->dims));
  memcpy(w->act, net->def.act, sizeof(w->act));
  w->maxbatch = maxbatch;
  w->maxdim = 0;
  for (int k = 0; k <= net->nlayer; k++) {
    if (net->dims[k] > w->maxdim) w->maxdim = net->dims[k];
  }
  double* p = w->mem;
  w->xn = p;
  p += (size_t)maxbatch * net->dims[0];
  for (int k = 1; k < net->nlayer; k++) {
    w->h[k] = p;
    p += (size_t)maxbatch * net->dims[k];
  }
  w->g0 = p;
  p += (size_t)maxbatch * w->maxdim;
  w->g1 = p;
  bli_init();  // BLIS's one-time set-up (its allocations happen here, not in forward)
  *out = w;
  return MJDIFF_OK;
}

void mjdiff_freeMLPWork(mjdiffMLPWork* work) {
  if (!work) return;
  free(work->mem);
  free(work);
}

static int sameArchitecture(const mjdiffMLP* net, const mjdiffMLPWork* w) {
  if (net->nlayer != w->nlayer) return 0;
  for (int k = 0; k <= net->nlayer; k++) {
    if (net->dims[k] != w->dims[k]) return 0;
  }
  for (int k = 0; k < net->def.nhidden; k++) {
    if (net->def.act[k] != w->act[k]) return 0;
  }
  return 1;
}

//---------------------------------- forward and VJP ----------------------------------------------

// h = act(z) in place, n values
static void activate(int act, double* h, int n) {
  switch (act) {
    case MJDIFF_ACT_TANH:
      for (int i = 0; i < n; i++) h[i] = tanh(h[i]);
      break;
    case MJDIFF_ACT_RELU:
      for (int i = 0; i < n; i++) h[i] = h[i] > 0 ? h[i] : 0;
      break;
    case MJDIFF_ACT_ELU:
      for (int i = 0; i < n; i++) h[i] = h[i] > 0 ? h[i] : expm1(h[i]);
      break;
    default:  // softplus
      for (int i = 0; i < n; i++) {
        double z = h[i];
        h[i] = (z > 0 ? z : 0) + log1p(exp(-fabs(z)));
      }
      break;
  }
}

// g .*= act'(z) written in a = act(z), n values
static void activateVJP(int act, const double* a, double* g, int n) {
  switch (act) {
    case MJDIFF_ACT_TANH:
      for (int i = 0; i < n; i++) g[i] *= 1 - a[i] * a[i];
      break;
    case MJDIFF_ACT_RELU:
      for (int i = 0; i < n; i++) g[i] = a[i] > 0 ? g[i] : 0;
      break;
    case MJDIFF_ACT_ELU:
      for (int i = 0; i < n; i++) g[i] *= a[i] > 0 ? 1 : a[i] + 1;
      break;
    default:  // softplus
      for (int i = 0; i < n; i++) g[i] *= -expm1(-a[i]);
      break;
  }
}

mjdiffStatus mjdiff_mlpForward(const mjdiffMLP* net, mjdiffMLPWork* work, const double* x,
                               int batch, double* y, char* err, int errsz) {
  if (!net || !work || !x) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "forward needs net, work and x");
  }
  if (batch < 1 || batch > work->maxbatch) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "batch must be in [1, %d] (the workspace's maxbatch), got %d",
                        work->maxbatch, batch);
  }
  if (!sameArchitecture(net, work)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "the workspace was made for another architecture");
  }
  work->net = NULL;
  int L = net->nlayer, nin = net->dims[0];
  double one = 1;

  // xn = (x - mu) ./ sigma
  for (int b = 0; b < batch; b++) {
    const double* xb = x + (size_t)b * nin;
    double* xnb = work->xn + (size_t)b * nin;
    for (int i = 0; i < nin; i++) xnb[i] = (xb[i] - net->mean[i]) / net->std[i];
  }

  // z_k = W_k h_k + b_k, h_{k+1} = act_k(z_k); the output layer into y
  for (int k = 0; k < L; k++) {
    int nk = net->dims[k], nk1 = net->dims[k + 1];
    const double* hin = k == 0 ? work->xn : work->h[k];
    double* hout = k < L - 1 ? work->h[k + 1] : y;
    if (!hout) break;  // y NULL: the activations only
    double* W = net->params + net->woff[k];
    const double* bias = net->params + net->boff[k];
    for (int b = 0; b < batch; b++) {
      double* zb = hout + (size_t)b * nk1;
      memcpy(zb, bias, sizeof(double) * (size_t)nk1);
      bli_dgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, nk1, nk, &one, W, nk, 1,
                (double*)hin + (size_t)b * nk, 1, &one, zb, 1);
    }
    if (k < L - 1) activate(net->def.act[k], hout, batch * nk1);
  }
  work->net = net;
  work->batch = batch;
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_mlpVJP(const mjdiffMLP* net, mjdiffMLPWork* work, const double* adj_y,
                           int batch, double* adj_x, double* adj_params, char* err, int errsz) {
  if (!net || !work || !adj_y) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "VJP needs net, work and adj_y");
  }
  if (work->net != net || work->batch != batch) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "VJP of a batch of %d needs a forward pass of that batch with this network "
                        "on this workspace first",
                        batch);
  }
  int L = net->nlayer, nin = net->dims[0];
  double one = 1, zero = 0;
  const double* g = adj_y;  // g_k, batch x n_{k+1}
  double* bufs[2] = {work->g0, work->g1};
  int next = 0;
  for (int k = L - 1; k >= 0; k--) {
    int nk = net->dims[k], nk1 = net->dims[k + 1];
    const double* hin = k == 0 ? work->xn : work->h[k];

    // dL/dW_k += g_k h_k', dL/db_k += g_k
    if (adj_params) {
      double* dW = adj_params + net->woff[k];
      double* db = adj_params + net->boff[k];
      for (int b = 0; b < batch; b++) {
        double* gb = (double*)g + (size_t)b * nk1;
        bli_dger(BLIS_NO_CONJUGATE, BLIS_NO_CONJUGATE, nk1, nk, &one, gb, 1,
                 (double*)hin + (size_t)b * nk, 1, dW, nk, 1);
        bli_daddv(BLIS_NO_CONJUGATE, nk1, gb, 1, db, 1);
      }
    }
    if (k == 0 && !adj_x) break;

    // gh_k = W_k' g_k (W_k' as strides: n_k x n_{k+1}, row stride 1, column stride n_k)
    double* gh = k == 0 ? adj_x : bufs[next];
    double* W = net->params + net->woff[k];
    for (int b = 0; b < batch; b++) {
      bli_dgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, nk, nk1, &one, W, 1, nk,
                (double*)g + (size_t)b * nk1, 1, &zero, gh + (size_t)b * nk, 1);
    }
    if (k > 0) {
      // g_{k-1} = gh_k .* act'(h_k)
      activateVJP(net->def.act[k - 1], work->h[k], gh, batch * nk);
      g = gh;
      next = 1 - next;
    } else {
      // dL/dx = gh_0 ./ sigma
      for (int b = 0; b < batch; b++) {
        double* ab = adj_x + (size_t)b * nin;
        for (int i = 0; i < nin; i++) ab[i] /= net->std[i];
      }
    }
  }
  return MJDIFF_OK;
}
