// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Dense linear algebra, row-major (<mjdiff/linalg.h>).
//
//   gemm       C = alpha op(A) op(B) + beta C: plain loops below 16 in any dimension (where
//              neither is transposed, 4 x 4 blocks of C summed over k in registers, two doubles
//              to a vector register with GCC's and clang's vector extension, zeros not skipped (a
//              0 times an infinite entry of B is NaN there); the rows and columns past the
//              blocks, and the transposed cases, as rows of C, each an axpy of a row of op(B) per
//              entry of op(A), skipping zeros); above,
//              BLIS's bli_dgemm_ex on one thread (its packing costs more than it saves on small
//              products). Debian's BLIS is built with OpenMP and opens a region per call, which
//              allocates (the first call of a thread several hundred times): code that must not
//              allocate after setup (the step derivatives) takes mjdiff_gemmPlain, the loops alone
//   Cholesky   left-looking by rows, reading the lower triangle: for j = 0 .. n-1
//                d = A_jj - sum_k<j L_jk^2          (fails unless d > tol A_jj and finite)
//                L_jj = sqrt(d),  L_ij = (A_ij - sum_k<j L_ik L_jk) / L_jj   (i > j)
//              every inner sum a dot product of two contiguous rows
//   solve      L Z = B: Z_i = (B_i - sum_k<i L_ik Z_k) / L_ii (rows of B, forward)
//              L' X = Z: X_i = (Z_i - sum_k>i L_ki X_k) / L_ii (backward), each an axpy on rows

#define _POSIX_C_SOURCE 200809L  // pthread_barrier_t, which blis.h uses

#include <blis.h>
#include <math.h>
#include <mjdiff/linalg.h>
#include <string.h>

// C[i0 .. i0+3][j0 .. j0+3] += alpha A[i0 .. i0+3][:] B[:][j0 .. j0+3] (neither transposed): the
// 16 sums in registers over l, one load of B's 4 entries and A's 4 per l
#if defined(__GNUC__)
typedef double pair __attribute__((vector_size(16)));  // two doubles, one SSE2 register
#endif

static void block4x4(int n, int k, double alpha, const double* a, const double* b, double* c,
                     int i0, int j0) {
  const double *a0 = a + (size_t)i0 * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
#if defined(__GNUC__)
  pair s0 = {0, 0}, t0 = {0, 0}, s1 = {0, 0}, t1 = {0, 0};
  pair s2 = {0, 0}, t2 = {0, 0}, s3 = {0, 0}, t3 = {0, 0};
  for (int l = 0; l < k; l++) {
    const double* bl = b + (size_t)l * n + j0;
    pair bh = {bl[0], bl[1]}, bt = {bl[2], bl[3]};
    pair x0 = {a0[l], a0[l]}, x1 = {a1[l], a1[l]}, x2 = {a2[l], a2[l]}, x3 = {a3[l], a3[l]};
    s0 += x0 * bh, t0 += x0 * bt, s1 += x1 * bh, t1 += x1 * bt;
    s2 += x2 * bh, t2 += x2 * bt, s3 += x3 * bh, t3 += x3 * bt;
  }
  double sum[4][4] = {{s0[0], s0[1], t0[0], t0[1]}, {s1[0], s1[1], t1[0], t1[1]},
                      {s2[0], s2[1], t2[0], t2[1]}, {s3[0], s3[1], t3[0], t3[1]}};
#else
  double sum[4][4] = {{0}};
  for (int l = 0; l < k; l++) {
    const double* bl = b + (size_t)l * n + j0;
    for (int j = 0; j < 4; j++) {
      sum[0][j] += a0[l] * bl[j];
      sum[1][j] += a1[l] * bl[j];
      sum[2][j] += a2[l] * bl[j];
      sum[3][j] += a3[l] * bl[j];
    }
  }
#endif
  for (int r = 0; r < 4; r++) {
    double* cr = c + (size_t)(i0 + r) * n + j0;
    for (int j = 0; j < 4; j++) cr[j] += alpha * sum[r][j];
  }
}

void mjdiff_gemmPlain(int ta, int tb, int m, int n, int k, double alpha, const double* a,
                      const double* b, double beta, double* c) {
  if (m <= 0 || n <= 0) return;

  // neither transposed: 4 x 4 blocks of C (after beta), the rest by the loops below
  int m4 = 0, n4 = 0;
  if (!ta && !tb && m >= 4 && n >= 4 && k >= 4) {
    m4 = m - m % 4;
    n4 = n - n % 4;
    for (int i = 0; i < m4; i++) {
      double* ci = c + (size_t)i * n;
      if (beta == 0) {
        memset(ci, 0, sizeof(double) * (size_t)n);
      } else if (beta != 1) {
        for (int j = 0; j < n; j++) ci[j] *= beta;
      }
    }
    for (int i0 = 0; i0 < m4; i0 += 4) {
      for (int j0 = 0; j0 < n4; j0 += 4) block4x4(n, k, alpha, a, b, c, i0, j0);
      for (int i = i0; i < i0 + 4; i++) {  // the columns past n4
        double* ci = c + (size_t)i * n;
        const double* ai = a + (size_t)i * k;
        for (int l = 0; l < k; l++) {
          double ail = alpha * ai[l];
          const double* bl = b + (size_t)l * n;
          for (int j = n4; j < n; j++) ci[j] += ail * bl[j];
        }
      }
    }
  }
  for (int i = m4; i < m; i++) {
    double* ci = c + (size_t)i * n;
    if (beta == 0) {
      memset(ci, 0, sizeof(double) * (size_t)n);
    } else if (beta != 1) {
      for (int j = 0; j < n; j++) ci[j] *= beta;
    }
    for (int l = 0; l < k; l++) {
      double ail = alpha * (ta ? a[(size_t)l * m + i] : a[(size_t)i * k + l]);
      if (ail == 0) continue;
      if (tb) {
        for (int j = 0; j < n; j++) ci[j] += ail * b[(size_t)j * k + l];
      } else {
        const double* bl = b + (size_t)l * n;
        for (int j = 0; j < n; j++) ci[j] += ail * bl[j];
      }
    }
  }
}

void mjdiff_gemm(int ta, int tb, int m, int n, int k, double alpha, const double* a,
                 const double* b, double beta, double* c) {
  if (m <= 0 || n <= 0) return;
  if (m < 16 || n < 16 || k < 16) {
    mjdiff_gemmPlain(ta, tb, m, n, k, alpha, a, b, beta, c);
    return;
  }
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(1, &rntm);
  inc_t lda = ta ? m : k, ldb = tb ? k : n;
  double al = alpha, be = beta;
  bli_dgemm_ex(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m,
               n, k, &al, (double*)a, lda, 1, (double*)b, ldb, 1, &be, c, n, 1, NULL, &rntm);
}

int mjdiff_cholesky(double* a, int n, double tol) {
  for (int j = 0; j < n; j++) {
    double* lj = a + (size_t)j * n;
    double diag = lj[j], d = diag;
    for (int k = 0; k < j; k++) d -= lj[k] * lj[k];
    if (!(d > tol * diag) || !(d > 0) || !isfinite(d)) return j + 1;
    double ljj = sqrt(d);
    lj[j] = ljj;
    for (int i = j + 1; i < n; i++) {
      double* li = a + (size_t)i * n;
      double s = li[j];
      for (int k = 0; k < j; k++) s -= li[k] * lj[k];
      li[j] = s / ljj;
    }
  }
  for (int i = 0; i < n; i++) {
    for (int j = i + 1; j < n; j++) a[(size_t)i * n + j] = 0;
  }
  return 0;
}

void mjdiff_lowerSolve(const double* L, int n, double* b, int ncol) {
  for (int i = 0; i < n; i++) {
    double* bi = b + (size_t)i * ncol;
    const double* li = L + (size_t)i * n;
    for (int k = 0; k < i; k++) {
      double c = li[k];
      if (c == 0) continue;
      const double* bk = b + (size_t)k * ncol;
      for (int j = 0; j < ncol; j++) bi[j] -= c * bk[j];
    }
    double d = li[i];
    for (int j = 0; j < ncol; j++) bi[j] /= d;
  }
}

void mjdiff_cholSolve(const double* L, int n, double* b, int ncol) {
  mjdiff_lowerSolve(L, n, b, ncol);
  for (int i = n - 1; i >= 0; i--) {
    double* bi = b + (size_t)i * ncol;
    for (int k = i + 1; k < n; k++) {
      double c = L[(size_t)k * n + i];
      if (c == 0) continue;
      const double* bk = b + (size_t)k * ncol;
      for (int j = 0; j < ncol; j++) bi[j] -= c * bk[j];
    }
    double d = L[(size_t)i * n + i];
    for (int j = 0; j < ncol; j++) bi[j] /= d;
  }
}
