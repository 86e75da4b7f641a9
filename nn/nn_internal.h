// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The network's layout, shared by nn.c (forward, VJP, init), spec.c and npz.c (save, load).

#ifndef MJDIFF_NN_INTERNAL_H_
#define MJDIFF_NN_INTERNAL_H_

#include <mjdiff/nn.h>

#define NN_MAXLAYER (MJDIFF_NN_MAXHIDDEN + 1)

struct mjdiffMLP_ {
  mjdiffMLPDef def;
  int nlayer;                  // L = nhidden + 1
  int dims[NN_MAXLAYER + 1];   // n_0 = nin, .., n_L = nout
  int woff[NN_MAXLAYER];       // offset of W_k (n_{k+1} x n_k) in params
  int boff[NN_MAXLAYER];       // offset of b_k (n_{k+1})
  int nparam;
  double* params;              // nparam
  double* mean;                // nin
  double* std;                 // nin
};

// fail (MJDIFF_ERR_VALUE, err names the field) for a def out of range
mjdiffStatus mjdiff_nnCheckDef(const mjdiffMLPDef* def, char* err, int errsz);

#endif  // MJDIFF_NN_INTERNAL_H_
