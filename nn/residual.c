// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Neural residual forces (equations in <mjdiff/residual.h>):
//   forward  z = (phi(qpos), qvel, ctrl),  y = NN(z),  f = s .* y
//   VJP      a_y = s .* a_f,  (a_z, a_theta) = NN_VJP(a_y),
//            a_qpos = Dphi' a_z[phi]  (angle: a_q = a_sin cos q - a_cos sin q; dropped: 0)
//            a_x += (G' a_qpos, a_z[qvel], 0),  a_u += a_z[ctrl]
// The actuator authority behind s: an actuator's largest force |F_k| is its forcerange when
// force-limited, else |gain_0| max(|ctrlrange|) when control-limited, else |gain_0|; on dof i it
// acts through moment_ki (which includes the gear).

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mjdiff/residual.h>
#include <mjdiff/state.h>

#include "compat.h"
#include "internal.h"

// position features of a joint (header): kept, dropped (horizontal root slide), angle (sin, cos)
enum { FEAT_RAW = 0, FEAT_DROP, FEAT_ANGLE };

struct mjdiffResidual_ {
  int nq, nv, na, nu, nin, njnt;
  int* feat;                   // (njnt) FEAT_* per joint
  mjdiffMLP* net;
  mjdiffMLPWork* work;
  mjdiffForceModel fm;
  mjtNum* scale;               // (nv) s
  mjtNum* z;                   // scratch, one block from z: (nin) input, (nv) output, (nv) output
  mjtNum* y;                   // adjoint, (nin) input adjoint, (nq + nv + na) state and its
  mjtNum* ay;                  // gradient in the state layout, (2nv + na) the tangent layout
  mjtNum* az;
  mjtNum* x;
  mjtNum* gx;
  mjtNum* gt;
  mjdiffStatus status;         // first failure inside a callback, and its message
  char msg[300];
};

// the position features of each joint (header) from the kinematics at qpos0 in d; returns nin
static int features(const mjModel* m, const mjData* d, int* feat) {
  const mjtNum* g = m->opt.gravity;
  mjtNum gn = mju_norm3(g);
  int nin = m->nv + m->nu;
  for (int j = 0; j < m->njnt; j++) {
    int b = m->jnt_bodyid[j];
    feat[j] = FEAT_RAW;
    if (m->jnt_type[j] == mjJNT_HINGE && !m->jnt_limited[j]) feat[j] = FEAT_ANGLE;
    if (m->jnt_type[j] == mjJNT_SLIDE && !m->jnt_limited[j] && m->body_parentid[b] == 0 &&
        gn > 0) {
      int first = 1;  // only slides before it on its body: its world axis is fixed
      for (int k = m->body_jntadr[b]; k < j; k++) first &= m->jnt_type[k] == mjJNT_SLIDE;
      if (first && fabs(mju_dot3(d->xaxis + 3 * j, g)) <= 1e-9 * gn) feat[j] = FEAT_DROP;
    }
    nin += feat[j] == FEAT_ANGLE  ? 2
           : feat[j] == FEAT_DROP ? 0
                                  : mjdiff_jointStateRows(m, j, NULL, NULL);
  }
  return nin;
}

// s (header) from the model at qpos0 (d: its forward pass)
static int outputScale(const mjModel* m, mjData* d, mjtNum* s) {
  int nv = m->nv;
  mju_zero(s, nv);
  COMPAT_MOMENT_BUF(buf, nv);
  for (int k = 0; k < m->nu; k++) {
    mjtNum F = fabs(m->actuator_gainprm[mjNGAIN * k]);
    const mjtNum* cr = m->actuator_ctrlrange + 2 * k;
    const mjtNum* fr = m->actuator_forcerange + 2 * k;
    if (m->actuator_forcelimited[k]) {
      F = mju_max(fabs(fr[0]), fabs(fr[1]));
    } else if (m->actuator_ctrllimited[k]) {
      F *= mju_max(fabs(cr[0]), fabs(cr[1]));
    }
    const mjtNum* row = compat_actuatorMoment(m, d, k, buf);
    for (int i = 0; i < nv; i++) s[i] += F * fabs(row[i]);
  }
  mjtNum* M = (mjtNum*)malloc(sizeof(mjtNum) * ((size_t)nv * nv + 1));
  if (!M) return -1;
  compat_fullM(m, d, M);
  for (int i = 0; i < nv; i++) {
    if (!(s[i] > 0) || !isfinite(s[i])) s[i] = 10 * M[(size_t)nv * i + i];
    if (!(s[i] >= 1e-6) || !isfinite(s[i])) s[i] = 1e-6;
  }
  free(M);
  return 0;
}

static void forceCb(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
                    mjtNum* qfrc);
static void vjpCb(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
                  const mjtNum* adj_qfrc, mjtNum* adj_x, mjtNum* adj_ctrl, mjtNum* adj_theta);

// a residual for m without its network: the position features and output scale from one forward
// pass at qpos0, and the scratch; NULL if out of memory
static mjdiffResidual* newResidual(const mjModel* m) {
  int nq = m->nq, nv = m->nv, na = m->na, nu = m->nu;
  mjdiffResidual* r = (mjdiffResidual*)calloc(1, sizeof(mjdiffResidual));
  if (!r) return NULL;
  r->feat = (int*)calloc((size_t)m->njnt + 1, sizeof(int));
  r->scale = (mjtNum*)calloc((size_t)nv + 1, sizeof(mjtNum));
  mjData* d = r->feat && r->scale ? mj_makeData(m) : NULL;
  int bad = !d;
  if (d) {
    mj_forward(m, d);
    r->nin = features(m, d, r->feat);
    bad = outputScale(m, d, r->scale) != 0;
    mj_deleteData(d);
  }
  int nin = r->nin;
  size_t n = 2 * (size_t)nin + 2 * (size_t)nv + 2 * ((size_t)nq + nv + na) + 2 * nv + na;
  r->z = bad ? NULL : (mjtNum*)calloc(n + 1, sizeof(mjtNum));
  if (!r->z) {
    mjdiff_freeResidual(r);
    return NULL;
  }
  r->njnt = (int)m->njnt;
  r->nq = nq;
  r->nv = nv;
  r->na = na;
  r->nu = nu;
  r->y = r->z + nin;
  r->ay = r->y + nv;
  r->az = r->ay + nv;
  r->x = r->az + nin;
  r->gx = r->x + nq + nv + na;
  r->gt = r->gx + nq + nv + na;
  return r;
}

// give r its network (taken over; freed with r on failure); path: the file it came from (its
// shape is checked), or NULL
static mjdiffStatus attach(mjdiffResidual* r, mjdiffMLP* net, const char* path,
                           mjdiffResidual** out, char* err, int errsz) {
  r->net = net;
  const mjdiffMLPDef* def = mjdiff_mlpDef(net);
  mjdiffStatus st = MJDIFF_OK;
  if (path && (def->nin != r->nin || def->nout != r->nv)) {
    st = mjdiff_error(
        err, errsz, MJDIFF_ERR_VALUE,
        "%s: a residual network of %d inputs and %d outputs, but this model needs %d inputs "
        "(position features, nv %d, nu %d) and %d outputs (nv): weights for another model?",
        path, def->nin, def->nout, r->nin, r->nv, r->nu, r->nv);
  }
  if (st == MJDIFF_OK) st = mjdiff_makeMLPWork(net, 1, &r->work, err, errsz);
  if (st != MJDIFF_OK) {
    mjdiff_freeResidual(r);
    return st;
  }
  r->fm.nparam = mjdiff_mlpParamCount(net);
  r->fm.user = r;
  r->fm.force = forceCb;
  r->fm.vjp = vjpCb;
  *out = r;
  return MJDIFF_OK;
}

static mjdiffStatus outOfMemory(char* err, int errsz) {
  return mjdiff_error(err, errsz, MJDIFF_ERR_MEMORY, "out of memory for the residual force");
}

mjdiffStatus mjdiff_makeResidual(const mjModel* m, const mjdiffMLPDef* def, uint64_t seed,
                                 mjdiffResidual** out, char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (!m) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model is NULL");
  if (m->nv < 1) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_VALUE, "a residual force needs nv >= 1");
  }
  mjdiffMLPDef nd;
  if (def) {
    nd = *def;
  } else {
    mjdiff_defaultMLPDef(&nd);
  }
  mjdiffResidual* r = newResidual(m);
  if (!r) return outOfMemory(err, errsz);
  nd.nin = r->nin;
  nd.nout = m->nv;
  mjdiffMLP* net = NULL;
  mjdiffStatus st = mjdiff_makeMLP(&nd, &net, err, errsz);
  if (st == MJDIFF_OK) st = mjdiff_initMLP(net, MJDIFF_INIT_XAVIER_UNIFORM, seed, 0, err, errsz);
  if (st != MJDIFF_OK) {
    mjdiff_freeMLP(net);
    mjdiff_freeResidual(r);
    return st;
  }
  return attach(r, net, NULL, out, err, errsz);
}

mjdiffStatus mjdiff_loadResidual(const mjModel* m, const char* path, mjdiffResidual** out,
                                 char* err, int errsz) {
  if (!out) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "out is NULL");
  *out = NULL;
  if (!m || !path) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "model or path is NULL");
  mjdiffMLP* net = NULL;
  mjdiffStatus st = mjdiff_loadMLP(path, &net, err, errsz);
  if (st != MJDIFF_OK) return st;
  mjdiffResidual* r = newResidual(m);
  if (!r) {
    mjdiff_freeMLP(net);
    return outOfMemory(err, errsz);
  }
  return attach(r, net, path, out, err, errsz);
}

void mjdiff_freeResidual(mjdiffResidual* r) {
  if (!r) return;
  mjdiff_freeMLPWork(r->work);
  mjdiff_freeMLP(r->net);
  free(r->z);  // the scratch block
  free(r->scale);
  free(r->feat);
  free(r);
}

mjdiffMLP* mjdiff_residualNet(mjdiffResidual* r) {
  return r ? r->net : NULL;
}

const mjtNum* mjdiff_residualScale(const mjdiffResidual* r) {
  return r ? r->scale : NULL;
}

int mjdiff_residualInputSize(const mjdiffResidual* r) {
  return r ? r->nin : 0;
}

void mjdiff_residualInput(const mjdiffResidual* r, const mjModel* m, const mjData* d,
                          mjtNum* z) {
  int k = 0;
  for (int j = 0; j < r->njnt; j++) {
    int adr, dim = mjdiff_jointStateRows(m, j, &adr, NULL);
    if (r->feat[j] == FEAT_ANGLE) {
      z[k++] = sin(d->qpos[adr]);
      z[k++] = cos(d->qpos[adr]);
    } else if (r->feat[j] == FEAT_RAW) {
      for (int i = 0; i < dim; i++) z[k++] = d->qpos[adr + i];
    }
  }
  mju_copy(z + k, d->qvel, m->nv);
  mju_copy(z + k + m->nv, d->ctrl, m->nu);
}

// f into qfrc, or zero and the failure recorded
static mjdiffStatus evalForce(mjdiffResidual* r, const mjModel* m, const mjData* d, mjtNum* qfrc,
                              char* err, int errsz) {
  if (m->nq != r->nq || m->nv != r->nv || m->nu != r->nu || m->njnt != r->njnt) {
    mju_zero(qfrc, m->nv);
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT,
                        "the residual force was made for a model of other sizes (nq %d, nv %d, "
                        "nu %d; this one %d, %d, %d)", r->nq, r->nv, r->nu, (int)m->nq,
                        (int)m->nv, (int)m->nu);
  }
  mjdiff_residualInput(r, m, d, r->z);
  mjdiffStatus st = mjdiff_mlpForward(r->net, r->work, r->z, 1, r->y, err, errsz);
  if (st != MJDIFF_OK) {
    mju_zero(qfrc, r->nv);
    return st;
  }
  for (int i = 0; i < r->nv; i++) {
    qfrc[i] = r->scale[i] * r->y[i];
    if (!isfinite(qfrc[i])) {
      mju_zero(qfrc, r->nv);
      return mjdiff_error(err, errsz, MJDIFF_ERR_NONFINITE,
                          "the residual force on dof %d is not finite at time %g", i, d->time);
    }
  }
  return MJDIFF_OK;
}

mjdiffStatus mjdiff_residualForce(mjdiffResidual* r, const mjModel* m, const mjData* d,
                                  mjtNum* qfrc, char* err, int errsz) {
  if (!r || !m || !d || !qfrc) {
    return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "residual, model, data or qfrc is NULL");
  }
  return evalForce(r, m, d, qfrc, err, errsz);
}

static void note(mjdiffResidual* r, mjdiffStatus st) {
  if (st != MJDIFF_OK && r->status == MJDIFF_OK) r->status = st;
}

static void forceCb(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
                    mjtNum* qfrc) {
  (void)theta;
  mjdiffResidual* r = (mjdiffResidual*)user;
  char msg[sizeof(r->msg)];
  mjdiffStatus st = evalForce(r, m, d, qfrc, msg, sizeof(msg));
  if (st != MJDIFF_OK && r->status == MJDIFF_OK) memcpy(r->msg, msg, sizeof(msg));
  note(r, st);
}

static void vjpCb(const mjModel* m, const mjData* d, const mjtNum* theta, void* user,
                  const mjtNum* adj_qfrc, mjtNum* adj_x, mjtNum* adj_ctrl, mjtNum* adj_theta) {
  (void)theta;
  mjdiffResidual* r = (mjdiffResidual*)user;
  int nq = r->nq, nv = r->nv, na = r->na, nu = r->nu;
  char msg[sizeof(r->msg)];
  // the forward pass again at this state: its activations are what the VJP needs
  mjdiffStatus st = evalForce(r, m, d, r->y, msg, sizeof(msg));
  if (st == MJDIFF_OK) {
    for (int i = 0; i < nv; i++) r->ay[i] = r->scale[i] * adj_qfrc[i];
    st = mjdiff_mlpVJP(r->net, r->work, r->ay, 1, r->az, adj_theta, msg, sizeof(msg));
  }
  if (st != MJDIFF_OK) {
    if (r->status == MJDIFF_OK) memcpy(r->msg, msg, sizeof(msg));
    note(r, st);
    return;
  }
  // features back to qpos, then qpos and qvel to the tangent layout at d's state
  mju_copy(r->x, d->qpos, nq);
  mju_copy(r->x + nq, d->qvel, nv);
  mju_copy(r->x + nq + nv, d->act, na);
  mju_zero(r->gx, nq + nv + na);
  int k = 0;
  for (int j = 0; j < r->njnt; j++) {
    int adr, dim = mjdiff_jointStateRows(m, j, &adr, NULL);
    if (r->feat[j] == FEAT_ANGLE) {
      r->gx[adr] = r->az[k] * cos(d->qpos[adr]) - r->az[k + 1] * sin(d->qpos[adr]);
      k += 2;
    } else if (r->feat[j] == FEAT_RAW) {
      for (int i = 0; i < dim; i++) r->gx[adr + i] = r->az[k++];
    }
  }
  mju_copy(r->gx + nq, r->az + k, nv);
  mjdiff_stateGradToTangent(m, r->x, r->gx, r->gt);
  if (adj_x) mju_addTo(adj_x, r->gt, 2 * nv + na);
  if (adj_ctrl) mju_addTo(adj_ctrl, r->az + k + nv, nu);
}

const mjdiffForceModel* mjdiff_residualForceModel(mjdiffResidual* r) {
  return r ? &r->fm : NULL;
}

mjdiffStatus mjdiff_residualStatus(mjdiffResidual* r, char* err, int errsz) {
  if (!r) return mjdiff_error(err, errsz, MJDIFF_ERR_ARGUMENT, "residual is NULL");
  mjdiffStatus st = r->status;
  if (st != MJDIFF_OK) mjdiff_error(err, errsz, st, "in the residual force model: %s", r->msg);
  r->status = MJDIFF_OK;
  r->msg[0] = 0;
  return st;
}
