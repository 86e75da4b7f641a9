// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Dense linear algebra of the estimators (row-major) beyond <mjdiff/linalg.h>'s product and
// Cholesky factorisation, and the selection of measured sensors.
//
//   rank       Cholesky with symmetric pivoting (largest remaining diagonal first); the rank is
//              the number of pivots above 1e-12 of the largest diagonal of A

#include <math.h>
#include <mjdiff/adjoint.h>
#include <stdlib.h>
#include <string.h>

#include "est_internal.h"
#include "internal.h"

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
