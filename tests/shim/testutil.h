// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Helpers shared by the GoogleTest files (header-only, C++): deterministic random numbers, a
// loaded model with its data and smooth model, random states near simulated trajectories, state
// copies and tangent perturbations, Richardson extrapolation of finite differences.
//
//   x (+) dx   qpos (+) dq = mj_integratePos(qpos, dq, 1), qvel + dv, act + da   (dx: [dq dv da])
//   Richardson over (h, 2h) of a difference D with error c h^2 + O(h^4):
//              (4 D(h) - D(2h)) / 3   (the h^2 term cancels)

#ifndef MJDIFF_TESTS_TESTUTIL_H_
#define MJDIFF_TESTS_TESTUTIL_H_

#include <cstddef>
#include <vector>

#include "shim.h"

namespace testutil {

// uniform in [0, 1) from a 64-bit splitmix64 state (shim_uniform)
inline double uniform(unsigned long long* state) {
  return shim_uniform(state);
}

// a model loaded from xml (if not NULL) or the file path, with its data and smooth model
// (shim_open); ok false and the message in sim.err on failure; closed on scope exit
struct Sim {
  shimSim sim;
  bool ok = false;
  explicit Sim(const char* xml, const char* path = nullptr) {
    ok = shim_open(&sim, xml, path);
  }
  ~Sim() {
    shim_close(&sim);
  }
  Sim(const Sim&) = delete;
  Sim& operator=(const Sim&) = delete;
};

// the full state (qpos, qvel, act, ctrl, time) of d (shim_getState)
inline std::vector<mjtNum> getState(const mjModel* m, const mjData* d) {
  std::vector<mjtNum> state(shim_stateSize(m));
  shim_getState(m, d, state.data());
  return state;
}

// x = (qpos, qvel, act) of d (nq + nv + na)
inline void getPosVelAct(const mjModel* m, const mjData* d, mjtNum* x) {
  mju_copy(x, d->qpos, m->nq);
  mju_copy(x + m->nq, d->qvel, m->nv);
  mju_copy(x + m->nq + m->nv, d->act, m->na);
}

// d's state x (+) dx: qpos (+) dq, qvel += dv, act += da (dx: [dq dv da], 2nv + na)
inline void perturbState(const mjModel* m, mjData* d, const mjtNum* dx) {
  int nv = m->nv;
  mj_integratePos(m, d->qpos, dx, 1);
  for (int i = 0; i < nv; i++) d->qvel[i] += dx[nv + i];
  for (int i = 0; i < m->na; i++) d->act[i] += dx[2 * nv + i];
}

// control range of actuator i: ctrlrange if ctrllimited, else [-1, 1]
inline void ctrlRange(const mjModel* m, int i, double* lo, double* hi) {
  *lo = -1;
  *hi = 1;
  if (m->actuator_ctrllimited[i]) {
    *lo = m->actuator_ctrlrange[2 * i];
    *hi = m->actuator_ctrlrange[2 * i + 1];
  }
}

// from the initial state (keyframe 0, else qpos0), nstep smooth steps under random controls
// (shim_randomCtrl, new every 20 steps); a failed step ends the run early
// Returns false if a step failed (the simulation stops there: a diverging run).
inline bool simulateRandom(const mjModel* m, mjData* d, const mjdiffModel* s,
                           unsigned long long* seed, int nstep) {
  mj_resetData(m, d);
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  char err[500];
  for (int i = 0; i < nstep; i++) {
    if (i % 20 == 0) shim_randomCtrl(m, d, seed);
    if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) return false;
  }
  return true;
}

// qvel += dv (U - 1/2), act += da (U - 1/2), U uniform in [0, 1)
inline void perturbVelocities(const mjModel* m, mjData* d, unsigned long long* seed, double dv,
                              double da) {
  for (int i = 0; i < m->nv; i++) d->qvel[i] += dv * (uniform(seed) - 0.5);
  for (int i = 0; i < m->na; i++) d->act[i] += da * (uniform(seed) - 0.5);
}

// limited controls moved strictly inside their ranges, to 5% .. 95% of ctrlrange (clamping is
// not differentiable at the bound)
inline void ctrlInsideRange(const mjModel* m, mjData* d) {
  for (int i = 0; i < m->nu; i++) {
    if (m->actuator_ctrllimited[i]) {
      double lo = m->actuator_ctrlrange[2 * i], hi = m->actuator_ctrlrange[2 * i + 1];
      d->ctrl[i] = lo + (hi - lo) * (0.05 + 0.9 * (d->ctrl[i] - lo) / (hi - lo));
    }
  }
}

// Richardson extrapolation (4 dh - d2h) / 3 of differences at steps h and 2h
inline double richardson(double dh, double d2h) {
  return (4 * dh - d2h) / 3;
}

inline std::vector<mjtNum> richardson(const std::vector<mjtNum>& dh,
                                      const std::vector<mjtNum>& d2h) {
  std::vector<mjtNum> r(dh.size());
  for (size_t i = 0; i < dh.size(); i++) r[i] = richardson(dh[i], d2h[i]);
  return r;
}

}  // namespace testutil

#endif  // MJDIFF_TESTS_TESTUTIL_H_
