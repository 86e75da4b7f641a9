// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Dense linear algebra, row-major, shared by the estimators (estimate/), least squares (optim/lsq.c)
// and the MPC planners (tools/mpc/): one product and one Cholesky factorisation for all of them.
//   gemm       C = alpha op(A) op(B) + beta C; BLIS on one thread from 16 rows, columns and inner
//              size on, plain loops below (deterministic either way: fixed sizes, fixed blocking)
//   Cholesky   A = L L' (lower L): L_jj = sqrt(A_jj - sum_k<j L_jk^2),
//              L_ij = (A_ij - sum_k<j L_ik L_jk) / L_jj (i > j); a pivot (the radicand) that is not
//              finite or not above tol times its diagonal entry A_jj means A is not (numerically)
//              positive definite (tol = 0: not positive)
//   solve      L Z = B (forward), L' X = Z (backward), every column of B at once

#ifndef MJDIFF_LINALG_H_
#define MJDIFF_LINALG_H_

#include <mjdiff/base.h>

#ifdef __cplusplus
extern "C" {
#endif

// C (m x n) = alpha op(A) op(B) + beta C; op(A) is m x k, op(B) k x n; ta, tb: the operand is
// stored transposed (A as k x m, B as n x k). beta = 0 ignores C's contents (NaN included).
MJDIFF_API void mjdiff_gemm(int ta, int tb, int m, int n, int k, double alpha, const double* a,
                            const double* b, double beta, double* c);

// The same product by the plain loops alone, whatever the sizes: never allocates (mjdiff_gemm's
// BLIS path, Debian's OpenMP build, allocates on every call), for code that must not after setup.
MJDIFF_API void mjdiff_gemmPlain(int ta, int tb, int m, int n, int k, double alpha, const double* a,
                                 const double* b, double beta, double* c);

// In place Cholesky factor of the symmetric n x n a (its lower triangle is read): on success L in
// the lower triangle, the upper zeroed, and 0; else 1 + the index of the first pivot that is not
// finite or not above tol * a_jj (a then partly overwritten).
MJDIFF_API int mjdiff_cholesky(double* a, int n, double tol);

// Solve L Z = B in place (forward substitution), L lower (n x n), B n x ncol.
MJDIFF_API void mjdiff_lowerSolve(const double* L, int n, double* b, int ncol);

// Solve L L' X = B in place, L from mjdiff_cholesky (n x n), B n x ncol.
MJDIFF_API void mjdiff_cholSolve(const double* L, int n, double* b, int ncol);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_LINALG_H_
