// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Residuals and exact Jacobians for mjdiff-sysid (equations in residual.h).
//
// Tangent differences for rotations (ball and free joints), e = log(q_ref^-1 q):
//   de = J_r^-1(e) dq_tangent     (q perturbed on the right: q exp(dq))
//   de = -J_l^-1(e) dref_tangent  (q_ref perturbed on the right)
// Window start x_w = xbar_w (+) d_w: its tangent moves by J_r(d_w) dd_w on rotations, dd_w else.

#include "residual.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// scale of the weak prior on unmeasured start coordinates (m, rad, m/s, rad/s, activation)
#define WEAK_SIGMA 10.0

typedef struct window_ {
  int rec;                     // recording
  int k0, k1;                  // steps k0 .. k1 (measurements at k0 .. k1 - 1, and k1 if last)
  int last;                    // last window of its recording
  double* xbar;                // reference start state (nq + nv + na)
  int* weak;                   // tangent coordinates with a weak prior (first window of a
  int nweak;                   // recording: those the recording does not measure at k0)
} window;

struct sysidModel_ {
  mjModel* m;                  // own copy: parameters are set on it
  mjdiffModel* s;
  const mjdiffParams* p;
  mjData* d;
  mjdiffStepDeriv* w;
  const sysidRecording* rec;
  int nrec, nwin, np, nq, nv, na, nu, ns, ndx, nvar, nres;
  window* win;
  sysidWeights wt;
  double* prior;               // (np) or NULL
  double* prior_sigma;
  double* S;                   // (ndx x ncs) sensitivities, ncs = np + ndx
  double* S2;
  double* A;                   // (ndx x ndx), (ndx x np), (ns x ndx), (ns x np)
  double* P;
  double* C;
  double* Q;
  int* sensor_ok;              // (nsensordata) measured somewhere and differentiable
  double* vec;                 // scratch: (ncs), (nq), (ndx), (3 x nvar)
  double* xn;
  double* e;
  double* rows3;
  double* Jloc;                // (cap x (np + 2 ndx)) rows of the current window before they go
                               // to the dense J or the normal equations' blocks
  int cap, base, nloc;         // its rows, the global index of its first row, rows held
  double* Hloc;                // ((np + 2 ndx)^2) scratch of the block accumulation
  long rollouts;
  char lastErr[1200];           // why the last residual evaluation failed ("" if it did not)
};

//---------------------------------- SO(3) -------------------------------------------------------

static void skew(const double r[3], double K[9]) {
  K[0] = 0, K[1] = -r[2], K[2] = r[1];
  K[3] = r[2], K[4] = 0, K[5] = -r[0];
  K[6] = -r[1], K[7] = r[0], K[8] = 0;
}

// J_r(r) (right Jacobian) and J_r^-1(r); J_l(r) = J_r(-r)
static void rightJacobian(const double r[3], double J[9], double Jinv[9]) {
  double th = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]), K[9], K2[9];
  skew(r, K);
  mju_mulMatMat(K2, K, K, 3, 3, 3);
  double b, c, e;
  if (th < 1e-4) {
    b = 0.5 - th * th / 24;
    c = 1.0 / 6 - th * th / 120;
    e = 1.0 / 12 + th * th / 720;
  } else {
    b = (1 - cos(th)) / (th * th);
    c = (th - sin(th)) / (th * th * th);
    e = (1 - th * sin(th) / (2 * (1 - cos(th)))) / (th * th);
  }
  for (int i = 0; i < 9; i++) {
    double I = i % 4 == 0;
    if (J) J[i] = I - b * K[i] + c * K2[i];
    if (Jinv) Jinv[i] = I + 0.5 * K[i] + e * K2[i];
  }
}

//---------------------------------- layout -------------------------------------------------------

// joint rotation block (ball, or free rotation): dof address of the 3 rotational dofs, or -1
static int rotDof(const mjModel* m, int j) {
  if (m->jnt_type[j] == mjJNT_BALL) return m->jnt_dofadr[j];
  if (m->jnt_type[j] == mjJNT_FREE) return m->jnt_dofadr[j] + 3;
  return -1;
}

int sysid_rotQpos(const mjModel* m, int j) {
  if (m->jnt_type[j] == mjJNT_BALL) return m->jnt_qposadr[j];
  if (m->jnt_type[j] == mjJNT_FREE) return m->jnt_qposadr[j] + 3;
  return -1;
}

int sysid_measured(const double* x, int n) {
  for (int i = 0; i < n; i++) {
    if (isnan(x[i])) return 0;
  }
  return 1;
}

void sysid_overwriteMeasured(const mjModel* m, mjData* d, const sysidRecording* R, int k) {
  const double* qp = R->qpos + (size_t)m->nq * k;
  const double* qv = R->qvel + (size_t)m->nv * k;
  for (int j = 0; j < m->njnt; j++) {
    int qa = m->jnt_qposadr[j], rq = sysid_rotQpos(m, j);
    int nlin = m->jnt_type[j] == mjJNT_FREE ? 3 : (rq < 0 ? 1 : 0);
    for (int i = 0; i < nlin; i++) {
      if (!isnan(qp[qa + i])) d->qpos[qa + i] = qp[qa + i];
    }
    if (rq >= 0 && sysid_measured(qp + rq, 4)) mju_copy(d->qpos + rq, qp + rq, 4);
  }
  for (int i = 0; i < m->nv; i++) {
    if (!isnan(qv[i])) d->qvel[i] = qv[i];
  }
  mj_normalizeQuat(m, d->qpos);
}

// rows a step contributes (qpos: per scalar coordinate or per complete rotation; qvel; sensors)
static int stepRows(const sysidModel* sm, const sysidRecording* r, int k) {
  const mjModel* m = sm->m;
  const double* qp = r->qpos + (size_t)sm->nq * k;
  const double* qv = r->qvel + (size_t)sm->nv * k;
  const double* sd = r->sensor + (size_t)sm->ns * k;
  int n = 0;
  for (int j = 0; j < m->njnt; j++) {
    int qa = m->jnt_qposadr[j], rq = sysid_rotQpos(m, j);
    int nlin = m->jnt_type[j] == mjJNT_FREE ? 3 : (rq < 0 ? 1 : 0);
    for (int i = 0; i < nlin; i++) n += !isnan(qp[qa + i]);
    if (rq >= 0 && sysid_measured(qp + rq, 4)) n += 3;
  }
  for (int i = 0; i < sm->nv; i++) n += !isnan(qv[i]);
  for (int i = 0; i < sm->ns; i++) n += !isnan(sd[i]) && sm->sensor_ok[i];
  return n;
}

//---------------------------------- make ---------------------------------------------------------

sysidModel* sysid_makeModel(const mjModel* m0, const mjdiffModel* s0, const mjdiffParams* p,
                            const sysidRecording* rec, int nrec, int window_steps,
                            const sysidWeights* weights, const double* prior,
                            const double* prior_sigma, char* err, int errsz) {
  sysidModel* sm = (sysidModel*)calloc(1, sizeof(sysidModel));
  if (!sm) {
    snprintf(err, (size_t)errsz, "out of memory");
    return NULL;
  }
  sm->m = mj_copyModel(NULL, m0);
  if (!sm->m || mjdiff_copyModel(s0, sm->m, &sm->s, err, errsz) != MJDIFF_OK) {
    sysid_freeModel(sm);
    return NULL;
  }
  mjModel* m = sm->m;
  sm->p = p;
  sm->rec = rec;
  sm->nrec = nrec;
  sm->np = mjdiff_paramCount(p);
  sm->nq = m->nq;
  sm->nv = m->nv;
  sm->na = m->na;
  sm->nu = m->nu;
  sm->ns = m->nsensordata;
  sm->ndx = 2 * m->nv + m->na;
  sm->wt = *weights;
  sm->d = mj_makeData(m);
  if (!sm->d || mjdiff_makeStepDeriv(m, sm->s, p, &sm->w, err, errsz) != MJDIFF_OK) {
    if (!sm->d) snprintf(err, (size_t)errsz, "out of memory");
    sysid_freeModel(sm);
    return NULL;
  }

  // sensors measured somewhere must have a derivative
  sm->sensor_ok = (int*)calloc((size_t)sm->ns + 1, sizeof(int));
  for (int i = 0; i < m->nsensor; i++) {
    int used = 0;
    for (int r = 0; r < nrec && !used; r++) {
      for (int k = 0; k <= rec[r].T && !used; k++) {
        for (int c = 0; c < m->sensor_dim[i]; c++) {
          used |= !isnan(rec[r].sensor[(size_t)sm->ns * k + m->sensor_adr[i] + c]);
        }
      }
    }
    if (!used) continue;
    if (!mjdiff_sensorSupported(m, i)) {
      const char* name = mj_id2name(m, mjOBJ_SENSOR, i);
      snprintf(err, (size_t)errsz,
               "sensor '%s' (type %d) is measured but has no derivative: drop its columns",
               name ? name : "", m->sensor_type[i]);
      sysid_freeModel(sm);
      return NULL;
    }
    for (int c = 0; c < m->sensor_dim[i]; c++) sm->sensor_ok[m->sensor_adr[i] + c] = 1;
  }

  // every recording must span a step (a window of 0 steps has no residual) and measure something
  for (int r = 0; r < nrec; r++) {
    if (rec[r].T < 1) {
      snprintf(err, (size_t)errsz,
               "%s: %d sample%s spanning less than one timestep (%g s): a recording needs samples "
               "at least one timestep apart",
               rec[r].path, rec[r].nrow, rec[r].nrow == 1 ? "" : "s", m->opt.timestep);
      sysid_freeModel(sm);
      return NULL;
    }
    if (window_steps > rec[r].T) {
      snprintf(err, (size_t)errsz,
               "%s: %d steps (%g s) is shorter than one shooting window of %d steps (%g s): give "
               "a shorter --window, or 0 for one window per recording",
               rec[r].path, rec[r].T, rec[r].T * m->opt.timestep, window_steps,
               window_steps * m->opt.timestep);
      sysid_freeModel(sm);
      return NULL;
    }
    int rows = 0;
    for (int k = 0; k <= rec[r].T && !rows; k++) rows += stepRows(sm, rec + r, k);
    if (!rows) {
      snprintf(err, (size_t)errsz,
               "%s: measures nothing to fit: no qpos, qvel or sensor column (only time and "
               "controls)", rec[r].path);
      sysid_freeModel(sm);
      return NULL;
    }
  }

  // windows
  int nwin = 0;
  for (int r = 0; r < nrec; r++) {
    int len = window_steps > 0 ? window_steps : rec[r].T;
    nwin += (rec[r].T + len - 1) / len;
  }
  sm->win = (window*)calloc((size_t)nwin, sizeof(window));
  sm->nwin = nwin;
  int nx = m->nq + m->nv + m->na, iw = 0;
  for (int r = 0; r < nrec; r++) {
    int len = window_steps > 0 ? window_steps : rec[r].T;
    for (int k0 = 0; k0 < rec[r].T; k0 += len, iw++) {
      window* w = sm->win + iw;
      w->rec = r;
      w->k0 = k0;
      w->k1 = k0 + len < rec[r].T ? k0 + len : rec[r].T;
      w->last = w->k1 == rec[r].T;
      w->xbar = (double*)calloc((size_t)nx, sizeof(double));
      w->weak = (int*)calloc((size_t)sm->ndx + 1, sizeof(int));
      if (k0 > 0) continue;
      // unmeasured start coordinates of the recording: only the dynamics (and the continuity
      // chain) see them, and where nothing does (a box the arm never touches) J'J is singular;
      // a weak prior d = 0 +- WEAK_SIGMA (state units) fixes that gauge without biasing the rest
      const double* qp = rec[r].qpos;
      const double* qv = rec[r].qvel;
      for (int j = 0; j < m->njnt; j++) {
        int qa = m->jnt_qposadr[j], da = m->jnt_dofadr[j], rq = sysid_rotQpos(m, j),
            rd = rotDof(m, j);
        int nlin = m->jnt_type[j] == mjJNT_FREE ? 3 : (rq < 0 ? 1 : 0);
        for (int i = 0; i < nlin; i++) {
          if (isnan(qp[qa + i])) w->weak[w->nweak++] = da + i;
        }
        if (rq >= 0 && !sysid_measured(qp + rq, 4)) {
          for (int i = 0; i < 3; i++) w->weak[w->nweak++] = rd + i;
        }
      }
      for (int i = 0; i < m->nv; i++) {
        if (isnan(qv[i])) w->weak[w->nweak++] = m->nv + i;
      }
      for (int i = 0; i < m->na; i++) w->weak[w->nweak++] = 2 * m->nv + i;
    }
  }

  // reference start states: measured where complete, else simulated with the initial values
  mjData* d = sm->d;
  char msg[300];
  for (int r = 0, wi = 0; r < nrec; r++) {
    const sysidRecording* R = rec + r;
    mj_resetData(m, d);
    if (m->nkey) mj_resetDataKeyframe(m, d, 0);
    for (int i = 0; i < m->nq; i++) {
      if (!isnan(R->qpos[i])) d->qpos[i] = R->qpos[i];
    }
    for (int i = 0; i < m->nv; i++) {
      if (!isnan(R->qvel[i])) d->qvel[i] = R->qvel[i];
    }
    mj_normalizeQuat(m, d->qpos);
    d->time = R->t0;
    for (int k = 0; k < R->T && wi < nwin; k++) {
      if (sm->win[wi].rec == r && sm->win[wi].k0 == k) {
        // measured coordinates from the recording (a rotation only when all 4 components
        // are), the unmeasured ones carried on from the simulation: the window's offset d_w
        // fits both (a missing column does not replace the measured joints' start states)
        sysid_overwriteMeasured(m, d, R, k);
        mju_copy(sm->win[wi].xbar, d->qpos, m->nq);
        mju_copy(sm->win[wi].xbar + m->nq, d->qvel, m->nv);
        mju_copy(sm->win[wi].xbar + m->nq + m->nv, d->act, m->na);
        wi++;
      }
      for (int i = 0; i < m->nu; i++) d->ctrl[i] = R->ctrl[(size_t)m->nu * k + i];
      if (mjdiff_step(m, d, sm->s, msg, sizeof(msg)) != MJDIFF_OK) break;
    }
  }

  // sizes
  sm->nvar = sm->np + nwin * sm->ndx;
  int nres = 0;
  for (int i = 0; i < nwin; i++) {
    const window* w = sm->win + i;
    int kend = w->last ? w->k1 : w->k1 - 1;
    for (int k = w->k0; k <= kend; k++) nres += stepRows(sm, rec + w->rec, k);
    nres += w->nweak;
    if (!w->last) nres += sm->ndx;
  }
  if (prior && prior_sigma) {
    sm->prior = (double*)malloc(sizeof(double) * (size_t)(sm->np + 1));
    sm->prior_sigma = (double*)malloc(sizeof(double) * (size_t)(sm->np + 1));
    memcpy(sm->prior, prior, sizeof(double) * (size_t)sm->np);
    memcpy(sm->prior_sigma, prior_sigma, sizeof(double) * (size_t)sm->np);
    for (int i = 0; i < sm->np; i++) nres += prior_sigma[i] > 0;
  }
  sm->nres = nres;
  int ncs = sm->np + sm->ndx;
  sm->S = (double*)calloc((size_t)sm->ndx * ncs, sizeof(double));
  sm->S2 = (double*)calloc((size_t)sm->ndx * ncs, sizeof(double));
  sm->A = (double*)calloc((size_t)sm->ndx * sm->ndx, sizeof(double));
  sm->P = (double*)calloc((size_t)sm->ndx * (sm->np + 1), sizeof(double));
  sm->C = (double*)calloc((size_t)(sm->ns + 1) * sm->ndx, sizeof(double));
  sm->Q = (double*)calloc((size_t)(sm->ns + 1) * (sm->np + 1), sizeof(double));
  sm->vec = (double*)calloc((size_t)ncs, sizeof(double));
  sm->xn = (double*)calloc((size_t)sm->nq + 1, sizeof(double));
  sm->e = (double*)calloc((size_t)sm->ndx + 1, sizeof(double));
  int ncol = sm->np + 2 * sm->ndx;
  sm->rows3 = (double*)calloc((size_t)3 * ncol, sizeof(double));
  sm->cap = 64 * (m->nq + m->nv + sm->ns) + 2 * sm->ndx + sm->np + 8;
  sm->Jloc = (double*)calloc((size_t)sm->cap * ncol, sizeof(double));
  sm->Hloc = (double*)calloc((size_t)ncol * ncol, sizeof(double));
  if (!sm->S || !sm->S2 || !sm->A || !sm->P || !sm->C || !sm->Q || !sm->vec || !sm->xn ||
      !sm->e || !sm->rows3 || !sm->Jloc || !sm->Hloc) {
    snprintf(err, (size_t)errsz, "out of memory");
    sysid_freeModel(sm);
    return NULL;
  }
  return sm;
}

void sysid_freeModel(sysidModel* sm) {
  if (!sm) return;
  for (int i = 0; i < sm->nwin && sm->win; i++) {
    free(sm->win[i].xbar);
    free(sm->win[i].weak);
  }
  free(sm->win);
  free(sm->prior);
  free(sm->prior_sigma);
  free(sm->S);
  free(sm->S2);
  free(sm->A);
  free(sm->P);
  free(sm->C);
  free(sm->Q);
  free(sm->sensor_ok);
  free(sm->vec);
  free(sm->xn);
  free(sm->e);
  free(sm->rows3);
  free(sm->Jloc);
  free(sm->Hloc);
  mjdiff_freeStepDeriv(sm->w);
  if (sm->d) mj_deleteData(sm->d);
  mjdiff_freeModel(sm->s);
  if (sm->m) mj_deleteModel(sm->m);
  free(sm);
}

int sysid_nvar(const sysidModel* sm) {
  return sm->nvar;
}

int sysid_nres(const sysidModel* sm) {
  return sm->nres;
}

int sysid_nwin(const sysidModel* sm) {
  return sm->nwin;
}

int sysid_ndx(const sysidModel* sm) {
  return sm->ndx;
}

long sysid_rollouts(const sysidModel* sm) {
  return sm->rollouts;
}

void sysid_initialVariables(const sysidModel* sm, double* z) {
  memset(z, 0, sizeof(double) * (size_t)sm->nvar);
  mjdiff_getParamValues(sm->m, sm->s, sm->p, z);
}

//---------------------------------- evaluation ---------------------------------------------------

// rows go first to Jloc, in local columns (p, d_w, d_{w+1}) = [0, np), [np, np + ndx),
// [np + ndx, np + 2 ndx), then to the dense J (columns p, and d_w at np + ndx w) or to the normal
// equations' blocks (flushRows)
static int ncol(const sysidModel* sm) {
  return sm->np + 2 * sm->ndx;
}

static double* locRow(sysidModel* sm, int row) {
  return sm->Jloc + (size_t)ncol(sm) * (row - sm->base);
}

// J row r: zero, then the given (ncs) sensitivity combination into the parameter columns and the
// window's offset columns
static void putRow(sysidModel* sm, double* J, int row, int wi, const double* v) {
  (void)J;
  (void)wi;
  double* Jr = locRow(sm, row);
  memset(Jr, 0, sizeof(double) * (size_t)ncol(sm));
  memcpy(Jr, v, sizeof(double) * (size_t)(sm->np + sm->ndx));
}

// the local rows [base, base + nloc) of window wi (-1: parameter columns only) into the dense J
// or the blocks H, then start an empty buffer at row base + nloc
static void flushRows(sysidModel* sm, int wi, const double* r, double* J, mjdiffLsqBlocks* H) {
  int np = sm->np, ndx = sm->ndx, nc = ncol(sm), n = sm->nloc;
  if (J) {
    for (int k = 0; k < n; k++) {
      const double* L = sm->Jloc + (size_t)nc * k;
      double* Jr = J + (size_t)sm->nvar * (sm->base + k);
      memset(Jr, 0, sizeof(double) * (size_t)sm->nvar);
      memcpy(Jr, L, sizeof(double) * (size_t)np);
      if (wi >= 0) memcpy(Jr + np + (size_t)ndx * wi, L + np, sizeof(double) * (size_t)ndx);
      if (wi >= 0 && wi + 1 < sm->nwin) {
        double* Jn = Jr + np + (size_t)ndx * (wi + 1);
        for (int c = 0; c < ndx; c++) Jn[c] += L[np + ndx + c];
      }
    }
  }
  if (H && n > 0) {
    // columns in use: none beyond np + ndx unless a row has d_{w+1} entries
    int width = wi < 0 ? np : np + ndx;
    for (int k = 0; k < n && width < nc && wi >= 0; k++) {
      const double* L = sm->Jloc + (size_t)nc * k;
      for (int c = np + ndx; c < nc; c++) {
        if (L[c] != 0) {
          width = nc;
          break;
        }
      }
    }
    double* Hl = sm->Hloc;
    memset(Hl, 0, sizeof(double) * (size_t)nc * nc);
    for (int k = 0; k < n; k++) {
      const double* L = sm->Jloc + (size_t)nc * k;
      double rk = r[sm->base + k];
      for (int i = 0; i < width; i++) {
        double li = L[i];
        if (li == 0) continue;
        double* Hi = Hl + (size_t)nc * i;
        for (int j = i; j < width; j++) Hi[j] += li * L[j];
        // J'r: local column i
        int b = i < np ? -1 : (i < np + ndx ? wi : wi + 1);
        int gi = b < 0 ? i : np + ndx * b + (i - np) % ndx;
        H->g[gi] += li * rk;
      }
    }
    // the upper triangle into the blocks (Hdd, Hpp: both triangles; Hdp; Hdo for (w, w+1))
    for (int i = 0; i < width; i++) {
      for (int j = i; j < width; j++) {
        double a = Hl[(size_t)nc * i + j];
        if (a == 0) continue;
        int bi = i < np ? -1 : (i < np + ndx ? 0 : 1), bj = j < np ? -1 : (j < np + ndx ? 0 : 1);
        int ii = i < np ? i : (i - np) % ndx, jj = j < np ? j : (j - np) % ndx;
        if (bi < 0 && bj < 0) {
          H->Hpp[(size_t)np * i + j] += a;
          if (i != j) H->Hpp[(size_t)np * j + i] += a;
        } else if (bi < 0) {
          H->Hdp[((size_t)(wi + bj) * ndx + jj) * np + i] += a;
        } else if (bi == bj) {
          double* D = H->Hdd + (size_t)(wi + bi) * ndx * ndx;
          D[(size_t)ndx * ii + jj] += a;
          if (ii != jj) D[(size_t)ndx * jj + ii] += a;
        } else {
          H->Hdo[(size_t)wi * ndx * ndx + (size_t)ndx * ii + jj] += a;
        }
      }
    }
  }
  sm->base += n;
  sm->nloc = 0;
}

// rows of one step: state and sensor residuals; returns the number of rows written
static int emitStep(sysidModel* sm, const sysidRecording* R, int k, int wi, double* r, double* J,
                    int row, int withSensorJac) {
  const mjModel* m = sm->m;
  const mjData* d = sm->d;
  int ncs = sm->np + sm->ndx, n = 0;
  const double* qp = R->qpos + (size_t)sm->nq * k;
  const double* qv = R->qvel + (size_t)sm->nv * k;
  const double* sd = R->sensor + (size_t)sm->ns * k;
  double* vec = sm->vec;
  for (int j = 0; j < m->njnt; j++) {
    int qa = m->jnt_qposadr[j], da = m->jnt_dofadr[j], rq = sysid_rotQpos(m, j), rd = rotDof(m, j);
    int nlin = m->jnt_type[j] == mjJNT_FREE ? 3 : (rq < 0 ? 1 : 0);
    for (int i = 0; i < nlin; i++) {
      if (isnan(qp[qa + i])) continue;
      r[row + n] = (d->qpos[qa + i] - qp[qa + i]) / sm->wt.sigma_qpos;
      if (J) {
        for (int c = 0; c < ncs; c++) {
          vec[c] = sm->S[(size_t)ncs * (da + i) + c] / sm->wt.sigma_qpos;
        }
        putRow(sm, J, row + n, wi, vec);
      }
      n++;
    }
    if (rq >= 0 && sysid_measured(qp + rq, 4)) {
      double neg[4], dif[4], e[3], Jinv[9];
      mju_negQuat(neg, qp + rq);
      mju_mulQuat(dif, neg, d->qpos + rq);
      mju_quat2Vel(e, dif, 1);
      rightJacobian(e, NULL, Jinv);
      for (int i = 0; i < 3; i++) {
        r[row + n + i] = e[i] / sm->wt.sigma_qpos;
        if (J) {
          for (int c = 0; c < ncs; c++) {
            double x = 0;
            for (int l = 0; l < 3; l++) x += Jinv[3 * i + l] * sm->S[(size_t)ncs * (rd + l) + c];
            vec[c] = x / sm->wt.sigma_qpos;
          }
          putRow(sm, J, row + n + i, wi, vec);
        }
      }
      n += 3;
    }
  }
  for (int i = 0; i < sm->nv; i++) {
    if (isnan(qv[i])) continue;
    r[row + n] = (d->qvel[i] - qv[i]) / sm->wt.sigma_qvel;
    if (J) {
      for (int c = 0; c < ncs; c++) {
        vec[c] = sm->S[(size_t)ncs * (sm->nv + i) + c] / sm->wt.sigma_qvel;
      }
      putRow(sm, J, row + n, wi, vec);
    }
    n++;
  }
  for (int i = 0; i < sm->ns; i++) {
    if (isnan(sd[i]) || !sm->sensor_ok[i]) continue;
    r[row + n] = (d->sensordata[i] - sd[i]) / sm->wt.sigma_sensor;
    if (J && withSensorJac) {
      // C S + [Q 0]
      for (int c = 0; c < ncs; c++) {
        double x = c < sm->np ? sm->Q[(size_t)sm->np * i + c] : 0;
        for (int l = 0; l < sm->ndx; l++) {
          x += sm->C[(size_t)sm->ndx * i + l] * sm->S[(size_t)ncs * l + c];
        }
        vec[c] = x / sm->wt.sigma_sensor;
      }
      putRow(sm, J, row + n, wi, vec);
    }
    n++;
  }
  return n;
}

// window start: d's state = xbar (+) dw, S = [0 Psi(dw)]
static void startWindow(sysidModel* sm, const window* w, const double* dw, double t0) {
  const mjModel* m = sm->m;
  mjData* d = sm->d;
  int ncs = sm->np + sm->ndx;
  mju_copy(d->qpos, w->xbar, m->nq);
  mju_copy(d->qvel, w->xbar + m->nq, m->nv);
  mju_copy(d->act, w->xbar + m->nq + m->nv, m->na);
  mj_integratePos(m, d->qpos, dw, 1);
  for (int i = 0; i < m->nv; i++) d->qvel[i] += dw[m->nv + i];
  for (int i = 0; i < m->na; i++) d->act[i] += dw[2 * m->nv + i];
  d->time = t0;
  memset(sm->S, 0, sizeof(double) * (size_t)sm->ndx * ncs);
  for (int i = 0; i < sm->ndx; i++) sm->S[(size_t)ncs * i + sm->np + i] = 1;
  for (int j = 0; j < m->njnt; j++) {
    int rd = rotDof(m, j);
    if (rd < 0) continue;
    double Jr[9];
    rightJacobian(dw + rd, Jr, NULL);
    for (int a = 0; a < 3; a++) {
      for (int b = 0; b < 3; b++) sm->S[(size_t)ncs * (rd + a) + sm->np + rd + b] = Jr[3 * a + b];
    }
  }
}

// record why the residuals of recording R failed at step k; returns 1
static int residualFail(sysidModel* sm, const sysidRecording* R, int k, const char* why) {
  snprintf(sm->lastErr, sizeof(sm->lastErr), "%s: step %d (time %g s): %s", R->path, k,
           R->t0 + k * sm->m->opt.timestep, why);
  return 1;
}

const char* sysid_lastError(const sysidModel* sm) {
  return sm ? sm->lastErr : "";
}

// r, and J (dense) or the blocks H when not NULL
static int evaluate(sysidModel* sm, const double* z, double* r, double* Jout, mjdiffLsqBlocks* H) {
  mjModel* m = sm->m;
  mjData* d = sm->d;
  char err[300];
  sm->lastErr[0] = 0;
  if (mjdiff_setParamValues(m, sm->s, sm->p, z, err, sizeof(err)) != MJDIFF_OK) {
    snprintf(sm->lastErr, sizeof(sm->lastErr), "parameter values: %s", err);
    return 1;
  }
  int ncs = sm->np + sm->ndx, ndx = sm->ndx, np = sm->np, row = 0, nc = ncol(sm);
  int maxStep = m->nq + m->nv + sm->ns;
  double h = m->opt.timestep;
  double* J = Jout || H ? sm->Jloc : NULL;  // rows go to Jloc first
  sm->base = 0;
  sm->nloc = 0;
  for (int wi = 0; wi < sm->nwin; wi++) {
    const window* w = sm->win + wi;
    const sysidRecording* R = sm->rec + w->rec;
    const double* dw = z + np + (size_t)ndx * wi;
    startWindow(sm, w, dw, R->t0 + h * w->k0);
    sm->rollouts++;
    // weak priors on the unmeasured start coordinates (first window of a recording)
    for (int i = 0; i < w->nweak; i++, row++) {
      r[row] = dw[w->weak[i]] / WEAK_SIGMA;
      if (J) {
        double* Jr = locRow(sm, row);
        memset(Jr, 0, sizeof(double) * (size_t)nc);
        Jr[np + w->weak[i]] = 1 / WEAK_SIGMA;
      }
    }
    int kend = w->last ? w->k1 : w->k1 - 1;
    for (int k = w->k0; k <= w->k1; k++) {
      int ku = k < R->T ? k : R->T - 1;
      mju_copy(d->ctrl, R->ctrl + (size_t)sm->nu * ku, sm->nu);
      if (k <= kend) {
        // readings at x_k (and their Jacobian)
        int sensors = 0;
        for (int i = 0; i < sm->ns && !sensors; i++) {
          sensors = sm->sensor_ok[i] && !isnan(R->sensor[(size_t)sm->ns * k + i]);
        }
        if (J && sensors) {
          if (mjdiff_sensorJacobian(m, d, sm->s, sm->w, sm->C, NULL, sm->Q, err, sizeof(err))) {
            return residualFail(sm, R, k, err);
          }
        } else if (mjdiff_forward(m, d, sm->s, err, sizeof(err)) != MJDIFF_OK) {
          return residualFail(sm, R, k, err);
        }
        if (J && row - sm->base + maxStep > sm->cap) {
          sm->nloc = row - sm->base;
          flushRows(sm, wi, r, Jout, H);
        }
        int n = emitStep(sm, R, k, wi, r, J, row, sensors);
        if (n < 0) {
          snprintf(err, sizeof(err), "a residual is not finite (|value| too large?)");
          return residualFail(sm, R, k, err);
        }
        row += n;
      }
      if (k == w->k1) break;
      if (J) {
        if (mjdiff_stepJacobian(m, d, sm->s, sm->w, sm->A, NULL, sm->P, err, sizeof(err))) {
          return residualFail(sm, R, k, err);
        }
        // S <- A S + [P 0]
        for (int i = 0; i < ndx; i++) {
          double* out = sm->S2 + (size_t)ncs * i;
          for (int c = 0; c < ncs; c++) out[c] = c < np ? sm->P[(size_t)np * i + c] : 0;
          for (int l = 0; l < ndx; l++) {
            double a = sm->A[(size_t)ndx * i + l];
            if (a == 0) continue;
            const double* s = sm->S + (size_t)ncs * l;
            for (int c = 0; c < ncs; c++) out[c] += a * s[c];
          }
        }
        double* t = sm->S;
        sm->S = sm->S2;
        sm->S2 = t;
      }
      if (mjdiff_step(m, d, sm->s, err, sizeof(err)) != MJDIFF_OK) {
        return residualFail(sm, R, k, err);
      }
    }

    // continuity with the next window: e = x_k1 (-) x_next, x_next = xbar' (+) d'
    if (!w->last) {
      const window* wn = w + 1;
      const double* dn = z + np + (size_t)ndx * (wi + 1);
      double* xn = sm->xn;
      double* e = sm->e;
      mju_copy(xn, wn->xbar, m->nq);
      mj_integratePos(m, xn, dn, 1);
      mj_differentiatePos(m, e, 1, xn, d->qpos);
      for (int i = 0; i < m->nv; i++) {
        e[m->nv + i] = d->qvel[i] - (wn->xbar[m->nq + i] + dn[m->nv + i]);
      }
      for (int i = 0; i < m->na; i++) {
        e[2 * m->nv + i] = d->act[i] - (wn->xbar[m->nq + m->nv + i] + dn[2 * m->nv + i]);
      }
      for (int i = 0; i < ndx; i++) r[row + i] = e[i] / sm->wt.sigma_cont;
      if (J) {
        if (row - sm->base + ndx > sm->cap) {
          sm->nloc = row - sm->base;
          flushRows(sm, wi, r, Jout, H);
        }
        // this window's side: J_r^-1(e) S on rotations, S else; next window: -J_l^-1(e) J_r(d')
        for (int i = 0; i < ndx; i++) {
          double* Jr = locRow(sm, row + i);
          memset(Jr, 0, sizeof(double) * (size_t)nc);
          const double* s = sm->S + (size_t)ncs * i;
          for (int c = 0; c < np + ndx; c++) Jr[c] = s[c];
          Jr[np + ndx + i] = -1;
        }
        for (int j = 0; j < m->njnt; j++) {
          int rd = rotDof(m, j);
          if (rd < 0) continue;
          double Jinv[9], Jlinv[9], Jrd[9], neg[3] = {-e[rd], -e[rd + 1], -e[rd + 2]}, M[9];
          rightJacobian(e + rd, NULL, Jinv);
          rightJacobian(neg, NULL, Jlinv);
          rightJacobian(dn + rd, Jrd, NULL);
          mju_mulMatMat(M, Jlinv, Jrd, 3, 3, 3);
          double* tmp = sm->rows3;
          for (int a = 0; a < 3; a++) {
            for (int c = 0; c < nc; c++) {
              double x = 0;
              for (int b = 0; b < 3; b++) x += Jinv[3 * a + b] * locRow(sm, row + rd + b)[c];
              tmp[(size_t)nc * a + c] = x;
            }
          }
          for (int a = 0; a < 3; a++) {
            double* Jr = locRow(sm, row + rd + a);
            memcpy(Jr, tmp + (size_t)nc * a, sizeof(double) * (size_t)nc);
            for (int b = 0; b < 3; b++) Jr[np + ndx + rd + b] = -M[3 * a + b];
          }
        }
        for (int i = 0; i < ndx; i++) {
          double* Jr = locRow(sm, row + i);
          for (int c = 0; c < nc; c++) Jr[c] /= sm->wt.sigma_cont;
        }
      }
      row += ndx;
    }
    if (J) {
      sm->nloc = row - sm->base;
      flushRows(sm, wi, r, Jout, H);
    }
  }

  // priors
  for (int i = 0; i < np && sm->prior; i++) {
    if (sm->prior_sigma[i] <= 0) continue;
    r[row] = (z[i] - sm->prior[i]) / sm->prior_sigma[i];
    if (J) {
      if (row - sm->base + 1 > sm->cap) {
        sm->nloc = row - sm->base;
        flushRows(sm, -1, r, Jout, H);
      }
      double* Jr = locRow(sm, row);
      memset(Jr, 0, sizeof(double) * (size_t)nc);
      Jr[i] = 1 / sm->prior_sigma[i];
    }
    row++;
  }
  if (J) {
    sm->nloc = row - sm->base;
    flushRows(sm, -1, r, Jout, H);
  }
  return row == sm->nres ? 0 : 1;
}

int sysid_residual(void* user, const double* z, double* r, double* J) {
  return evaluate((sysidModel*)user, z, r, J, NULL);
}

int sysid_normal(void* user, const double* z, double* r, mjdiffLsqBlocks* H) {
  return evaluate((sysidModel*)user, z, r, NULL, H);
}



int sysid_simulate(sysidModel* sm, const double* p, double** qpos_out, char* err, int errsz) {
  mjModel* m = sm->m;
  mjData* d = sm->d;
  if (mjdiff_setParamValues(m, sm->s, sm->p, p, err, errsz) != MJDIFF_OK) return -1;
  for (int r = 0, wi = 0; r < sm->nrec; r++) {
    const sysidRecording* R = sm->rec + r;
    while (wi < sm->nwin && sm->win[wi].rec != r) wi++;
    memset(sm->e, 0, sizeof(double) * (size_t)sm->ndx);
    startWindow(sm, sm->win + wi, sm->e, R->t0);
    for (int k = 0; k <= R->T; k++) {
      if (qpos_out && qpos_out[r]) mju_copy(qpos_out[r] + (size_t)m->nq * k, d->qpos, m->nq);
      if (k == R->T) break;
      mju_copy(d->ctrl, R->ctrl + (size_t)sm->nu * k, sm->nu);
      if (mjdiff_step(m, d, sm->s, err, errsz) != MJDIFF_OK) return -1;
    }
  }
  return 0;
}
