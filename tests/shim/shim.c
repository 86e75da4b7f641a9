// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.

#include "shim.h"

#include "compat.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef MJDIFF_MODEL_DIR
#error "MJDIFF_MODEL_DIR must be defined"
#endif

mjModel* shim_loadString(const char* xml, char* err, int errsz) {
  mjVFS vfs;
  mj_defaultVFS(&vfs);
  int n = (int)strlen(xml);
  if (compat_vfsAddBuffer(&vfs, "model.xml", xml, n)) {
    snprintf(err, (size_t)errsz, "cannot make VFS file");
    mj_deleteVFS(&vfs);
    return NULL;
  }
  mjModel* m = mj_loadXML("model.xml", &vfs, err, errsz);
  mj_deleteVFS(&vfs);
  return m;
}

mjModel* shim_loadFile(const char* path, char* err, int errsz) {
  return mj_loadXML(path, NULL, err, errsz);
}

const char* shim_modelPath(const char* name) {
  static char buf[1024];
  snprintf(buf, sizeof(buf), "%s/%s", MJDIFF_MODEL_DIR, name);
  return buf;
}

int shim_open(shimSim* sim, const char* xml, const char* path) {
  memset(sim, 0, sizeof(*sim));
  sim->m = xml ? shim_loadString(xml, sim->err, sizeof(sim->err))
               : shim_loadFile(path, sim->err, sizeof(sim->err));
  if (!sim->m) return 0;
  sim->d = mj_makeData(sim->m);
  if (mjdiff_makeModel(sim->m, NULL, &sim->s, sim->err, sizeof(sim->err)) != MJDIFF_OK) {
    return 0;
  }
  return 1;
}

void shim_close(shimSim* sim) {
  mjdiff_freeModel(sim->s);
  if (sim->d) mj_deleteData(sim->d);
  if (sim->m) mj_deleteModel(sim->m);
  memset(sim, 0, sizeof(*sim));
}

mjdiffStatus shim_steps(shimSim* sim, int n) {
  for (int i = 0; i < n; i++) {
    mjdiffStatus st = mjdiff_step(sim->m, sim->d, sim->s, sim->err, sizeof(sim->err));
    if (st != MJDIFF_OK) return st;
  }
  return MJDIFF_OK;
}

double shim_uniform(unsigned long long* state) {
  // splitmix64
  unsigned long long z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return (double)(z >> 11) / 9007199254740992.0;
}

void shim_randomCtrl(const mjModel* m, mjData* d, unsigned long long* state) {
  for (int i = 0; i < m->nu; i++) {
    mjtNum lo = -1, hi = 1;
    if (m->actuator_ctrllimited[i]) {
      lo = m->actuator_ctrlrange[2 * i];
      hi = m->actuator_ctrlrange[2 * i + 1];
    }
    d->ctrl[i] = lo + (hi - lo) * shim_uniform(state);
  }
}

mjtNum shim_mechanicalEnergy(const mjModel* m, mjData* d) {
  mj_kinematics(m, d);
  mj_comPos(m, d);
  mj_crb(m, d);
  // potential: -sum_b m_b g . x_b ; kinetic: 1/2 v' M v
  mjtNum pot = 0;
  for (int b = 1; b < m->nbody; b++) {
    pot -= m->body_mass[b] * mju_dot3(m->opt.gravity, d->xipos + 3 * b);
  }
  mjtNum* Mv = (mjtNum*)mju_malloc(sizeof(mjtNum) * (size_t)(m->nv > 0 ? m->nv : 1));
  mj_mulM(m, d, Mv, d->qvel);
  mjtNum kin = 0.5 * mju_dot(d->qvel, Mv, m->nv);
  mju_free(Mv);
  return pot + kin;
}

int shim_stateFinite(const mjModel* m, const mjData* d) {
  for (int i = 0; i < m->nq; i++) if (!isfinite(d->qpos[i])) return 0;
  for (int i = 0; i < m->nv; i++) if (!isfinite(d->qvel[i])) return 0;
  for (int i = 0; i < m->na; i++) if (!isfinite(d->act[i])) return 0;
  return 1;
}

int shim_stateSize(const mjModel* m) {
  return m->nq + m->nv + m->na + m->nu + 1;
}

void shim_getState(const mjModel* m, const mjData* d, mjtNum* buf) {
  mju_copy(buf, d->qpos, m->nq);
  mju_copy(buf + m->nq, d->qvel, m->nv);
  mju_copy(buf + m->nq + m->nv, d->act, m->na);
  mju_copy(buf + m->nq + m->nv + m->na, d->ctrl, m->nu);
  buf[m->nq + m->nv + m->na + m->nu] = d->time;
}

void shim_setState(const mjModel* m, mjData* d, const mjtNum* buf) {
  mju_copy(d->qpos, buf, m->nq);
  mju_copy(d->qvel, buf + m->nq, m->nv);
  mju_copy(d->act, buf + m->nq + m->nv, m->na);
  mju_copy(d->ctrl, buf + m->nq + m->nv + m->na, m->nu);
  d->time = buf[m->nq + m->nv + m->na + m->nu];
}
