// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Dense linear algebra of the estimators (row-major) and the selection of measured sensors.
//
//   gemm       C = alpha op(A) op(B) + beta C; BLIS (one thread) from 16 rows and columns on,
//              plain loops below (deterministic either way: fixed sizes, fixed blocking)
//   Cholesky   A = L L' = U'U: U_jj = sqrt(A_jj - sum_k<j U_kj^2),
//              U_ji = (A_ji - sum_k<j U_kj U_ki) / U_jj (i > j), computed right-looking (the sums
//              subtracted from the trailing rows as each row j is done); a pivot <= 0 or not
//              finite means A is not (numerically) positive definite
//   solve      L z = b (forward), L' x = z (backward), column by column of B
//   rank       Cholesky with symmetric pivoting (largest remaining diagonal first); the rank is
//              the number of pivots above 1e-12 of the largest diagonal of A

#define _POSIX_C_SOURCE 200809L  // pthread_barrier_t, which blis.h uses

#include <blis.h>
#include <math.h>
#include <mjdiff/adjoint.h>
#include <stdlib.h>
#include <string.h>

#include "est_internal.h"
#include "internal.h"

void mjdiff_estGemm(int ta, int tb, int m, int n, int k, mjtNum alpha, const mjtNum* a,
                    const mjtNum* b, mjtNum beta, mjtNum* c) {
  if (m <= 0 || n <= 0) return;
  if (m < 16 || n < 16 || k < 16) {
    for (int i = 0; i < m; i++) {
      mjtNum* ci = c + (size_t)i * n;
      if (beta == 0) {
        memset(ci, 0, sizeof(mjtNum) * (size_t)n);
      } else if (beta != 1) {
        for (int j = 0; j < n; j++) ci[j] *= beta;
      }
      for (int l = 0; l < k; l++) {
        mjtNum ail = alpha * (ta ? a[(size_t)l * m + i] : a[(size_t)i * k + l]);
        if (ail == 0) continue;
        if (tb) {
          for (int j = 0; j < n; j++) ci[j] += ail * b[(size_t)j * k + l];
        } else {
          const mjtNum* bl = b + (size_t)l * n;
          for (int j = 0; j < n; j++) ci[j] += ail * bl[j];
        }
      }
    }
    return;
  }
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(1, &rntm);
  inc_t lda = ta ? m : k, ldb = tb ? k : n;
  double al = alpha, be = beta;
  bli_dgemm_ex(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m,
               n, k, &al, (double*)a, lda, 1, (double*)b, ldb, 1, &be, c, n, 1, NULL, &rntm);
}

int mjdiff_estCholesky(mjtNum* a, int n) {
  // right-looking on the upper triangle (U = L'), so that every inner loop is an axpy along a
  // contiguous row: U_jj = sqrt(a_jj), U_jk = a_jk / U_jj (k > j), a_ik -= U_ji U_jk (k >= i > j);
  // the lower triangle of A is read only through symmetry (a_ij = a_ji)
  for (int j = 0; j < n; j++) {
    mjtNum* uj = a + (size_t)j * n;
    mjtNum s = uj[j];
    if (!(s > 0) || !isfinite(s)) return j + 1;
    mjtNum ujj = sqrt(s), inv = 1 / ujj;
    uj[j] = ujj;
    for (int k = j + 1; k < n; k++) uj[k] *= inv;
    for (int i = j + 1; i < n; i++) {
      mjtNum c = uj[i];
      if (c == 0) continue;
      mjtNum* ai = a + (size_t)i * n;
      for (int k = i; k < n; k++) ai[k] -= c * uj[k];
    }
  }
  // L = U': lower triangle from the upper, upper zeroed
  for (int i = 0; i < n; i++) {
    for (int j = i + 1; j < n; j++) {
      a[(size_t)j * n + i] = a[(size_t)i * n + j];
      a[(size_t)i * n + j] = 0;
    }
  }
  return 0;
}

void mjdiff_estCholSolve(const mjtNum* L, int n, mjtNum* b, int ncol) {
  // row-oriented: every inner loop runs along a contiguous row of B
  // forward: L Z = B, row i: Z_i = (B_i - sum_k<i L_ik Z_k) / L_ii
  for (int i = 0; i < n; i++) {
    mjtNum* bi = b + (size_t)i * ncol;
    const mjtNum* li = L + (size_t)i * n;
    for (int k = 0; k < i; k++) {
      mjtNum c = li[k];
      if (c == 0) continue;
      const mjtNum* bk = b + (size_t)k * ncol;
      for (int j = 0; j < ncol; j++) bi[j] -= c * bk[j];
    }
    mjtNum inv = 1 / li[i];
    for (int j = 0; j < ncol; j++) bi[j] *= inv;
  }
  // backward: L' X = Z, row i: X_i = (Z_i - sum_k>i L_ki X_k) / L_ii
  for (int i = n - 1; i >= 0; i--) {
    mjtNum* bi = b + (size_t)i * ncol;
    for (int k = i + 1; k < n; k++) {
      mjtNum c = L[(size_t)k * n + i];
      if (c == 0) continue;
      const mjtNum* bk = b + (size_t)k * ncol;
      for (int j = 0; j < ncol; j++) bi[j] -= c * bk[j];
    }
    mjtNum inv = 1 / L[(size_t)i * n + i];
    for (int j = 0; j < ncol; j++) bi[j] *= inv;
  }
}

void mjdiff_estSymmetrize(mjtNum* a, int n) {
  for (int i = 0; i < n; i++) {
    for (int j = i + 1; j < n; j++) {
      mjtNum v = 0.5 * (a[(size_t)i * n + j] + a[(size_t)j * n + i]);
      a[(size_t)i * n + j] = a[(size_t)j * n + i] = v;
    }
  }
}

int mjdiff_estRank(const mjtNum* a, int n, mjtNum* w) {
  memcpy(w, a, sizeof(mjtNum) * (size_t)n * n);
  mjtNum dmax = 0;
  for (int i = 0; i < n; i++) dmax = fmax(dmax, fabs(a[(size_t)i * n + i]));
  if (!(dmax > 0)) return 0;
  // outer-product Cholesky on the trailing block, pivoting on its largest diagonal
  int rank = 0;
  for (int j = 0; j < n; j++) {
    int p = -1;
    mjtNum best = 0;
    for (int i = j; i < n; i++) {
      mjtNum v = w[(size_t)i * n + i];
      if (v > best) best = v, p = i;
    }
    if (p < 0 || !(best > 1e-12 * dmax)) break;
    // swap rows and columns j and p
    if (p != j) {
      for (int k = 0; k < n; k++) {
        mjtNum t = w[(size_t)j * n + k];
        w[(size_t)j * n + k] = w[(size_t)p * n + k];
        w[(size_t)p * n + k] = t;
      }
      for (int k = 0; k < n; k++) {
        mjtNum t = w[(size_t)k * n + j];
        w[(size_t)k * n + j] = w[(size_t)k * n + p];
        w[(size_t)k * n + p] = t;
      }
    }
    rank++;
    mjtNum piv = w[(size_t)j * n + j];
    for (int i = j + 1; i < n; i++) {
      mjtNum f = w[(size_t)i * n + j] / piv;
      for (int k = j + 1; k < n; k++) w[(size_t)i * n + k] -= f * w[(size_t)j * n + k];
    }
  }
  return rank;
}

mjdiffStatus mjdiff_estSelectSensors(const mjModel* m, const char* const* names, int n,
                                     mjtNum sigma, const mjtNum* sigmas, int need_deriv, int** rows,
                                     mjtNum** std, int* nrow, char* err, int errsz) {
  *rows = NULL;
  *std = NULL;
  *nrow = 0;
  int nsel = names ? n : m->nsensor;
  if (names && n <= 0) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "sensors given but nsensor = %d", n);
  }
  if (!(sigma > 0) || !isfinite(sigma)) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "sigma_sensor must be > 0, got %g", sigma);
  }
  int* id = (int*)malloc(sizeof(int) * (size_t)(nsel > 0 ? nsel : 1));
  if (!id) return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  int total = 0;
  for (int i = 0; i < nsel; i++) {
    int sid = i;
    if (names) {
      sid = names[i] ? mj_name2id(m, mjOBJ_SENSOR, names[i]) : -1;
      if (sid < 0) {
        free(id);
        return mjdiff_error(err, errsz, MJDIFF_ERR_NAME, "unknown sensor '%s' (the model has %d)",
                            names[i] ? names[i] : "(null)", (int)m->nsensor);
      }
    }
    if (sigmas && (!(sigmas[i] > 0) || !isfinite(sigmas[i]))) {
      free(id);
      return mjdiff_error(
          err, errsz, MJDIFF_ERR_VALUE, "sensor_sigma[%d] (sensor '%s') must be > 0, got %g", i,
          mj_id2name(m, mjOBJ_SENSOR, sid) ? mj_id2name(m, mjOBJ_SENSOR, sid) : "", sigmas[i]);
    }
    if (need_deriv && !mjdiff_sensorSupported(m, sid)) {
      const char* nm = mj_id2name(m, mjOBJ_SENSOR, sid);
      free(id);
      return mjdiff_error(err, errsz, MJDIFF_ERR_UNSUPPORTED,
                          "sensor %d '%s' (type %d) has no derivative", sid, nm ? nm : "",
                          m->sensor_type[sid]);
    }
    id[i] = sid;
    total += m->sensor_dim[sid];
  }
  if (total == 0) {
    free(id);
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "no sensor readings selected");
  }
  int* r = (int*)malloc(sizeof(int) * (size_t)total);
  mjtNum* sd = (mjtNum*)malloc(sizeof(mjtNum) * (size_t)total);
  if (!r || !sd) {
    free(id);
    free(r);
    free(sd);
    return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory");
  }
  int k = 0;
  for (int i = 0; i < nsel; i++) {
    int sid = id[i];
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= id[j] == sid;
    if (dup) continue;  // a sensor named twice is measured once
    for (int c = 0; c < m->sensor_dim[sid]; c++) {
      r[k] = m->sensor_adr[sid] + c;
      sd[k] = sigmas ? sigmas[i] : sigma;
      k++;
    }
  }
  free(id);
  *rows = r;
  *std = sd;
  *nrow = k;
  return MJDIFF_OK;
}
