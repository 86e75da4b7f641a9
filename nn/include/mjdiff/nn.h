// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Small neural networks: multilayer perceptrons with a forward pass and its VJP for batches,
// initialisers, input normalisation, a spec string parser and .npz save and load.
//
//   xn  = (x - mean) ./ std                              input normalisation (fixed, per feature)
//   h_0 = xn,  h_{k+1} = act_k(W_k h_k + b_k), k = 0..L-2,  y = W_{L-1} h_{L-1} + b_{L-1}
// with L = nhidden + 1 layers (k = 0..nhidden) and sizes n_0 = nin, n_k = width[k-1], n_L = nout.
//
// Batches are row-major, batch x features (x: B x nin, y: B x nout). W_k is n_{k+1} x n_k
// (PyTorch's nn.Linear layout), b_k is n_{k+1}. All weights of a network sit in one contiguous
// buffer, layer after layer, W_k (row-major) then b_k; gradients use a buffer of the same layout,
// so an optimiser (<mjdiff/optim.h>), clipping, save and load are single loops over one array.
//
// Ownership and threads: an mjdiffMLP holds the architecture, the weights and the normalisation;
// forward and VJP only read it, so threads share one. Each thread owns an mjdiffMLPWork, made
// once for a maximum batch; forward and VJP allocate nothing (the dense algebra is BLIS's
// level-2 operations, which run on the calling thread and allocate nothing once BLIS is
// initialised; mjdiff_makeMLPWork initialises it).

#ifndef MJDIFF_NN_H_
#define MJDIFF_NN_H_

#include <stdint.h>

#include <mjdiff/base.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MJDIFF_NN_MAXHIDDEN 16      // hidden layers, at most
#define MJDIFF_NN_MAXWIDTH 65536    // units per layer, at most

// Activation of a hidden layer (the output layer is linear).
typedef enum mjdiffActivation_ {
  MJDIFF_ACT_TANH = 0,         // tanh(z)
  MJDIFF_ACT_RELU,             // max(z, 0)
  MJDIFF_ACT_ELU,              // z > 0: z, else exp(z) - 1
  MJDIFF_ACT_SOFTPLUS,         // log(1 + exp(z))
  MJDIFF_ACT_COUNT
} mjdiffActivation;

// Weight initialisers. Biases start at zero; fan_in = n_{l-1}, fan_out = n_l.
typedef enum mjdiffInit_ {
  MJDIFF_INIT_XAVIER_UNIFORM = 0,  // U(-a, a), a = sqrt(6 / (fan_in + fan_out))
  MJDIFF_INIT_XAVIER_NORMAL,       // N(0, s^2), s = sqrt(2 / (fan_in + fan_out))
  MJDIFF_INIT_HE_UNIFORM,          // U(-a, a), a = sqrt(6 / fan_in)
  MJDIFF_INIT_HE_NORMAL            // N(0, s^2), s = sqrt(2 / fan_in)
} mjdiffInit;

// Architecture of an MLP: nin inputs, nhidden hidden layers of width[i] units with act[i]
// (mjdiffActivation), nout linear outputs.
typedef struct mjdiffMLPDef_ {
  int nin;                           // inputs (>= 1)
  int nout;                          // outputs (>= 1)
  int nhidden;                       // hidden layers (0..MJDIFF_NN_MAXHIDDEN; 0: affine map)
  int width[MJDIFF_NN_MAXHIDDEN];    // units of each hidden layer (1..MJDIFF_NN_MAXWIDTH)
  int act[MJDIFF_NN_MAXHIDDEN];      // mjdiffActivation of each hidden layer
} mjdiffMLPDef;

// Fill def with the defaults: nin = nout = 0 (to be set), two hidden layers of 64 tanh units.
MJDIFF_API void mjdiff_defaultMLPDef(mjdiffMLPDef* def);

// Parse a network spec into def's hidden layers (nin and nout are left as they are):
//   mlp:W1,W2,...            widths, every hidden layer tanh
//   mlp:W1,W2,...:ACT        one activation for every hidden layer (tanh, relu, elu, softplus)
//   mlp:W1,W2,...:A1,A2,...  one activation per hidden layer
//   linear                   no hidden layer (an affine map)
// for example "mlp:64,64" or "mlp:64,64:relu". Whitespace is not allowed. A malformed spec gets
// MJDIFF_ERR_VALUE with a message naming the spec, the 0-based position and what was expected
// there; def is unchanged then. Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_parseMLPSpec(const char* spec, mjdiffMLPDef* def, char* err,
                                            int errsz);

// Write def's hidden layers as a spec ("mlp:64,64:tanh,tanh") into buf (always NUL-terminated
// when bufsz > 0). Returns the spec's length (truncated if >= bufsz), -1 for a bad def.
MJDIFF_API int mjdiff_formatMLPSpec(const mjdiffMLPDef* def, char* buf, int bufsz);

// Name of an activation ("tanh", ...), "?" if out of range.
MJDIFF_API const char* mjdiff_activationName(int act);

// Network: architecture, weights, input normalisation. Opaque; read-only during forward and VJP.
typedef struct mjdiffMLP_ mjdiffMLP;

// Make a network with architecture def (copied), zero weights and identity normalisation (mean 0,
// std 1). Fails with MJDIFF_ERR_VALUE naming the field for a bad def. Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_makeMLP(const mjdiffMLPDef* def, mjdiffMLP** out, char* err,
                                       int errsz);

// Free a network; NULL is a no-op.
MJDIFF_API void mjdiff_freeMLP(mjdiffMLP* net);

// Copy of a network (architecture, weights, normalisation); NULL if out of memory.
MJDIFF_API mjdiffMLP* mjdiff_copyMLP(const mjdiffMLP* net);

// The architecture (pointer into net, valid while net lives).
MJDIFF_API const mjdiffMLPDef* mjdiff_mlpDef(const mjdiffMLP* net);

// Number of weights (all layers' W and b), the length of mjdiff_mlpParams.
MJDIFF_API int mjdiff_mlpParamCount(const mjdiffMLP* net);

// The weights buffer (mjdiff_mlpParamCount values, layout above); writable: an optimiser
// updates it in place. Never while another thread runs forward or VJP on net.
MJDIFF_API double* mjdiff_mlpParams(mjdiffMLP* net);

// Offsets of layer k's (0..nhidden) weight matrix W_k and bias b_k in the weights buffer; -1 for
// a k out of range.
MJDIFF_API int mjdiff_mlpWeightOffset(const mjdiffMLP* net, int layer);
MJDIFF_API int mjdiff_mlpBiasOffset(const mjdiffMLP* net, int layer);

// Initialise the weights with scheme (mjdiffInit) from a seeded generator (splitmix64 seeding
// xoshiro256**, normals by Box-Muller): the same seed gives the same weights on every platform
// with IEEE doubles. output_gain scales the output layer's weights (1: the scheme as is; a small
// value such as 0.01 starts a policy near zero). Fails with MJDIFF_ERR_VALUE for an unknown
// scheme or a non-finite or negative gain. Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_initMLP(mjdiffMLP* net, int scheme, uint64_t seed,
                                       double output_gain, char* err, int errsz);

// Set the input normalisation: mean (nin), std (nin, every entry > 0 and finite). Nullable: mean
// (zero), std (one), err.
MJDIFF_API mjdiffStatus mjdiff_setMLPNormalization(mjdiffMLP* net, const double* mean,
                                                   const double* std, char* err, int errsz);

// Set the input normalisation from data (n x nin, row-major, n >= 1): the mean and the
// population standard deviation of each feature; a feature whose std is below
// min_std (>= 0) gets std = 1 (a constant feature is centred, not scaled). Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_fitMLPNormalization(mjdiffMLP* net, const double* data, int n,
                                                   double min_std, char* err, int errsz);

// The normalisation (nin each; pointers into net).
MJDIFF_API const double* mjdiff_mlpMean(const mjdiffMLP* net);
MJDIFF_API const double* mjdiff_mlpStd(const mjdiffMLP* net);

// Per-thread workspace for batches of up to maxbatch rows: the normalised inputs and every
// layer's activations of the last forward pass (what the VJP needs), and the VJP's two adjoint
// buffers. Sized by mjdiff_mlpWorkSize.
typedef struct mjdiffMLPWork_ mjdiffMLPWork;

// Make a workspace for net's architecture (any network of the same def may use it) and batches of
// 1..maxbatch rows. Initialises BLIS (so forward and VJP allocate nothing afterwards).
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_makeMLPWork(const mjdiffMLP* net, int maxbatch,
                                           mjdiffMLPWork** out, char* err, int errsz);

// Free a workspace; NULL is a no-op.
MJDIFF_API void mjdiff_freeMLPWork(mjdiffMLPWork* work);

// Number of doubles a workspace for def and maxbatch holds:
//   maxbatch (nin + sum_l width_l + 2 max(nin, width_l, nout)).
MJDIFF_API long mjdiff_mlpWorkSize(const mjdiffMLPDef* def, int maxbatch);

// Forward pass of a batch: y = net(x), x (batch x nin), y (batch x nout), row-major. Keeps the
// activations in work for mjdiff_mlpVJP. Fails with MJDIFF_ERR_ARGUMENT for a batch outside
// 1..maxbatch or a workspace of another architecture. Allocates nothing. Nullable: y (activations
// kept only), err.
MJDIFF_API mjdiffStatus mjdiff_mlpForward(const mjdiffMLP* net, mjdiffMLPWork* work,
                                          const double* x, int batch, double* y, char* err,
                                          int errsz);

// VJP of the last forward pass on work (same net, weights unchanged since): given
// adj_y = dL/dy (batch x nout), writes adj_x = dL/dx (batch x nin) and ADDS dL/dtheta, summed
// over the batch, to adj_params (mjdiff_mlpParamCount values, the weights' layout; zero it to
// start a sum). Fails with MJDIFF_ERR_ARGUMENT if work holds no forward pass of batch rows for
// this architecture. Allocates nothing. Nullable: adj_x, adj_params (skipped), err.
MJDIFF_API mjdiffStatus mjdiff_mlpVJP(const mjdiffMLP* net, mjdiffMLPWork* work,
                                      const double* adj_y, int batch, double* adj_x,
                                      double* adj_params, char* err, int errsz);

// Save net to path as an uncompressed .npz (a zip of .npy files, readable with numpy.load):
//   format        0-d '<U' string "mjdiff.mlp.v1"
//   spec          0-d '<U' string, the hidden layers (mjdiff_formatMLPSpec)
//   sizes         int64 (nhidden + 2): nin, width_1 .. width_nhidden, nout
//   activations   '<U8' (nhidden): names of the hidden layers' activations
//   input_mean    float64 (nin)
//   input_std     float64 (nin)
//   layers.K.weight  float64 (n_{K+1} x n_K), K = 0..nhidden (PyTorch nn.Linear's layout)
//   layers.K.bias    float64 (n_{K+1})
// Fails with MJDIFF_ERR_VALUE if the file cannot be written (err names the path). Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_saveMLP(const mjdiffMLP* net, const char* path, char* err,
                                       int errsz);

// Load a network saved by mjdiff_saveMLP (or written by numpy.savez with the same arrays; float32
// and int32 arrays are accepted and converted) into a new network with the file's
// architecture. A missing array, a wrong dtype or shape (err names the array, the expected and
// the actual shape), a compressed entry, a truncated or corrupt file (bad CRC, bad headers) get
// MJDIFF_ERR_VALUE; an unreadable file too. Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_loadMLP(const char* path, mjdiffMLP** out, char* err, int errsz);

// Load weights and normalisation from path into net, whose architecture the file must match
// (sizes and activations; err names the first difference). net is unchanged on failure.
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_loadMLPWeights(mjdiffMLP* net, const char* path, char* err,
                                              int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_NN_H_
