// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Internal helpers of estimate/: dense linear algebra (row-major; the product and Cholesky are
// <mjdiff/linalg.h>'s) and the selection of measured sensors, shared by filter.c and batch.c.
// Not exported (hidden visibility).

#ifndef MJDIFF_ESTIMATE_INTERNAL_H_
#define MJDIFF_ESTIMATE_INTERNAL_H_

#include <mjdiff/base.h>
#include <mjdiff/linalg.h>
#include <mujoco/mujoco.h>

// A = (A + A') / 2
void mjdiff_estSymmetrize(mjtNum* a, int n);

// numerical rank of the symmetric positive semidefinite n x n A: pivots of a Cholesky with
// symmetric pivoting above 1e-12 of the largest diagonal (scratch: n x n numbers)
int mjdiff_estRank(const mjtNum* a, int n, mjtNum* scratch);

// the measured readings: rows (sensordata indices) and their std, for the sensors named in
// names (n; NULL: every sensor of m) with std sigma or sigmas[i] per sensor. need_deriv: fail
// (MJDIFF_ERR_UNSUPPORTED) for a sensor without a derivative. *rows, *std malloc'd (nrow each).
mjdiffStatus mjdiff_estSelectSensors(const mjModel* m, const char* const* names, int n,
                                     mjtNum sigma, const mjtNum* sigmas, int need_deriv, int** rows,
                                     mjtNum** std, int* nrow, char* err, int errsz);

#endif  // MJDIFF_ESTIMATE_INTERNAL_H_
