// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// State layouts (<mjdiff/state.h>): sizes, indices, differences and gradients.
//
//   x = (qpos, qvel, act) (nq+nv+na),  dx = (dq, dv, da) (2nv+na),  x (+) dx:
//     qpos' = mj_integratePos(qpos, dq, 1), qvel' = qvel + dv, act' = act + da
//   hinge, slide: q' = q + dq;  free translation: p' = p + dq[0..2] (world)
//   ball, free rotation: q' = q * exp(w / 2), w = dq (local rotation vector),
//     exp(w / 2) = (cos(|w|/2), sin(|w|/2) w/|w|)
// Gradient transport (the transpose of the derivative at dx = 0):
//   d q' / d w_k at w = 0 = q * (0, e_k / 2)   (quaternion product; exp(w/2) = (1, w/2) + O(w^2))
//   g_w[k] = sum_i grad_q[i] (q * (0, e_k / 2))_i;  every other row: identity.

#include <mjdiff/state.h>

int mjdiff_stateSize(const mjModel* m) {
  return m ? m->nq + m->nv + m->na : 0;
}

int mjdiff_tangentSize(const mjModel* m) {
  return m ? 2 * m->nv + m->na : 0;
}

void mjdiff_getState(const mjModel* m, const mjData* d, mjtNum* x) {
  if (!m || !d || !x) return;
  mju_copy(x, d->qpos, m->nq);
  mju_copy(x + m->nq, d->qvel, m->nv);
  mju_copy(x + m->nq + m->nv, d->act, m->na);
}

void mjdiff_setState(const mjModel* m, mjData* d, const mjtNum* x) {
  if (!m || !d || !x) return;
  mju_copy(d->qpos, x, m->nq);
  mju_copy(d->qvel, x + m->nq, m->nv);
  mju_copy(d->act, x + m->nq + m->nv, m->na);
}

static int jointDofs(int type) {
  return type == mjJNT_FREE ? 6 : type == mjJNT_BALL ? 3 : 1;
}

int mjdiff_jointTangentRows(const mjModel* m, int j, int* dq, int* dv) {
  if (!m || j < 0 || j >= m->njnt) return -1;
  if (dq) *dq = m->jnt_dofadr[j];
  if (dv) *dv = m->nv + m->jnt_dofadr[j];
  return jointDofs(m->jnt_type[j]);
}

int mjdiff_jointStateRows(const mjModel* m, int j, int* qpos, int* qvel) {
  if (!m || j < 0 || j >= m->njnt) return -1;
  if (qpos) *qpos = m->jnt_qposadr[j];
  if (qvel) *qvel = m->nq + m->jnt_dofadr[j];
  int type = m->jnt_type[j];
  return type == mjJNT_FREE ? 7 : type == mjJNT_BALL ? 4 : 1;
}

int mjdiff_bodyTangentRows(const mjModel* m, int b, int* dq, int* dv) {
  if (!m || b < 0 || b >= m->nbody) return -1;
  int n = m->body_dofnum[b], adr = n ? m->body_dofadr[b] : -1;
  if (dq) *dq = adr;
  if (dv) *dv = n ? m->nv + adr : -1;
  return n;
}

int mjdiff_actuatorTangentRow(const mjModel* m, int i) {
  if (!m || i < 0 || i >= m->nu || m->actuator_dyntype[i] == mjDYN_NONE) return -1;
  // MuJoCo 2.2: the stateful actuators are the last na
  return 2 * m->nv + i - (m->nu - m->na);
}

void mjdiff_stateDiff(const mjModel* m, const mjtNum* x1, const mjtNum* x2, mjtNum* dx) {
  int nq = m->nq, nv = m->nv, na = m->na;
  mj_differentiatePos(m, dx, 1, x1, x2);
  for (int i = 0; i < nv; i++) dx[nv + i] = x2[nq + i] - x1[nq + i];
  for (int i = 0; i < na; i++) dx[2 * nv + i] = x2[nq + nv + i] - x1[nq + nv + i];
}

void mjdiff_stateIntegrate(const mjModel* m, const mjtNum* x, const mjtNum* dx, mjtNum scale,
                           mjtNum* out) {
  int nq = m->nq, nv = m->nv, na = m->na;
  if (out != x) mju_copy(out, x, nq + nv + na);
  mj_integratePos(m, out, dx, scale);
  for (int i = 0; i < nv; i++) out[nq + i] += scale * dx[nv + i];
  for (int i = 0; i < na; i++) out[nq + nv + i] += scale * dx[2 * nv + i];
}

// g_w[k] = grad_q . (q * (0, e_k / 2)), k = 0..2
static void quatGrad(const mjtNum q[4], const mjtNum gq[4], mjtNum gw[3]) {
  for (int k = 0; k < 3; k++) {
    mjtNum e[4] = {0, 0, 0, 0}, dq[4];
    e[1 + k] = 0.5;
    mju_mulQuat(dq, q, e);
    gw[k] = mju_dot(gq, dq, 4);
  }
}

void mjdiff_stateGradToTangent(const mjModel* m, const mjtNum* x, const mjtNum* grad_x,
                               mjtNum* grad_dx) {
  int nq = m->nq, nv = m->nv, na = m->na;
  for (int j = 0; j < m->njnt; j++) {
    int qa = m->jnt_qposadr[j], va = m->jnt_dofadr[j];
    switch (m->jnt_type[j]) {
      case mjJNT_FREE:
        mju_copy3(grad_dx + va, grad_x + qa);
        quatGrad(x + qa + 3, grad_x + qa + 3, grad_dx + va + 3);
        break;
      case mjJNT_BALL:
        quatGrad(x + qa, grad_x + qa, grad_dx + va);
        break;
      default:
        grad_dx[va] = grad_x[qa];
    }
  }
  mju_copy(grad_dx + nv, grad_x + nq, nv);
  mju_copy(grad_dx + 2 * nv, grad_x + nq + nv, na);
}
