// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Helpers shared by the GoogleTest files (header-only, C++): deterministic random numbers, a
// loaded model with its data and smooth model, random states near simulated trajectories, state
// copies and tangent perturbations, Richardson extrapolation of finite differences, centred
// finite differences of the step Jacobians and their block errors, the parameter columns of qacc.
//
//   x (+) dx   qpos (+) dq = mj_integratePos(qpos, dq, 1), qvel + dv, act + da   (dx: [dq dv da])
//   x' - x     the tangent difference: (mj_differentiatePos(x, x'), qvel' - qvel, act' - act)
//   Richardson over (h, 2h) of a difference D with error c h^2 + O(h^4):
//              (4 D(h) - D(2h)) / 3   (the h^2 term cancels)
//   [A B] column c: (step(x (+) e_c h, u) - step(x (+) -e_c h, u)) / 2h  (c < ndx), and the same
//              with u +- e_c 100 h for the controls (they enter the positions only at order
//              h^2..h^3 and nearly linearly: a larger step keeps the rounding error small)
//   block error: max_{(r, c) in block} |J - F| / max(1e-4, max_{(r, c) in block} |F|)
//   dqacc/dp:  M^-1 DrDp (DrDp nv x np from mjdiff_paramDerivative)

#ifndef MJDIFF_TESTS_TESTUTIL_H_
#define MJDIFF_TESTS_TESTUTIL_H_

#include <cmath>
#include <cstdio>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "shim.h"
#include "compat.h"  // the host MuJoCo version's differences (plugin/compat.h)

namespace testutil {

// uniform in [0, 1) from a 64-bit splitmix64 state (shim_uniform)
inline double uniform(unsigned long long* state) {
  return shim_uniform(state);
}

// MJCF of the spatial-tendon test arm, inside <worldbody> (test_tendon_d, test_sensor_d): a chain
// a (hinge ha; sites a0, a1), b (ball bb; sphere geom sph; sites b0, bside), c (slide sc, hinge hc;
// cylinder geom cyl; site c0) and a free box f (site f0)
inline constexpr const char* kSpatialArm = R"(    <body name="a" pos="0 0 1">
      <joint name="ha" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <site name="a0" pos="0.1 0.05 0"/>
      <site name="a1" pos="0.3 0 0.08"/>
      <body name="b" pos="0.3 0 0">
        <joint name="bb" type="ball"/>
        <geom name="sph" type="sphere" size="0.06" pos="0.15 0 0" mass="0.3"/>
        <site name="b0" pos="0.3 0.02 0.01"/>
        <site name="bside" pos="0.15 0 0.5"/>
        <body name="c" pos="0.3 0 0">
          <joint name="sc" type="slide" axis="1 0 0"/>
          <joint name="hc" type="hinge" axis="0 0 1"/>
          <geom name="cyl" type="cylinder" size="0.05 0.1" pos="0.1 0 0" euler="1.5707963 0 0"
                mass="0.2"/>
          <site name="c0" pos="0.25 0.03 0.02"/>
        </body>
      </body>
    </body>
    <body name="f" pos="0.5 0.3 1.2">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.5"/>
      <site name="f0" pos="0.05 0 0"/>
    </body>
)";

// A pinned grid like MuJoCo's hammock and grid2pin samples: n x n particles (mass kg, sphere
// radius 0.02, dof damping damping) of three slide dofs each, spacing m apart at height 1, the four
// corners fixed (twoPins: the two corners of the edge j = 0, as grid2pin), neighbours joined by
// spatial tendons held at their length by tendon equalities (solref 0.01 1) at timestep 0.005;
// contacts: the particles collide with each other (else with nothing). The default (n = 8):
// 180 dofs, 112 tendons; tendon "tp<i>_<j>_0" joins (i, j) to (i + 1, j), "_1" to (i, j + 1).
inline std::string pinnedGridXml(int n = 8, double sp = 0.1, bool twoPins = false,
                                 bool contacts = false, double mass = 0.05, double damping = 0.1) {
  std::string bodies, tendons, eqs;
  std::string dmp = "' damping='" + std::to_string(damping) + "'/>";
  auto name = [](int i, int j) { return "p" + std::to_string(i) + "_" + std::to_string(j); };
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      bool pin = (i == 0 || i == n - 1) && (j == 0 || (!twoPins && j == n - 1));
      bodies += "<body name='" + name(i, j) + "' pos='" + std::to_string(i * sp) + " " +
                std::to_string(j * sp) + " 1'>";
      if (!pin) {
        for (const char* axis : {"1 0 0", "0 1 0", "0 0 1"}) {
          bodies += std::string("<joint type='slide' axis='") + axis + dmp;
        }
      }
      bodies += "<geom type='sphere' size='0.02' mass='" + std::to_string(mass) + "' contype='" +
                (contacts ? "1' conaffinity='1'/>" : "0' conaffinity='0'/>") + "<site name='" +
                name(i, j) + "'/></body>";
      for (int k = 0; k < 2; k++) {
        int i2 = i + (k == 0), j2 = j + (k == 1);
        if (i2 >= n || j2 >= n) continue;
        std::string t = "t" + name(i, j) + "_" + std::to_string(k);
        tendons += "<spatial name='" + t + "'><site site='" + name(i, j) + "'/><site site='" +
                   name(i2, j2) + "'/></spatial>";
        eqs += "<tendon tendon1='" + t + "' solref='0.01 1'/>";
      }
    }
  }
  return "<mujoco><option timestep='0.005'/><worldbody>" + bodies + "</worldbody><tendon>" +
         tendons + "</tendon><equality>" + eqs + "</equality></mujoco>";
}

// body transmissions (adhesion actuators, as MuJoCo's active_adhesion sample): a box on the floor
// and a pad on a hinged arm, each with an adhesion actuator; the geoms' margins make the
// contacts count before they touch (MuJoCo's list within the margin; the pad's gap adds 4 mm on
// MuJoCo 3, which reports the gap's contacts excluded but counts them). The moment moves with the
// contacts' points and normals and the bodies (forces_d.c, bodyActuatorDeriv). Friction speed
// 0.1 m/s: the box pulled onto the floor by 20 N under the derived speed's steep law left
// the finite differences of half the RK4 and implicit states disagreeing by 1e-5..1e-4
inline constexpr const char* kAdhesion = R"(
<mujoco>
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.002"/>
  <custom>
    <numeric name="mjdiff_friction_speed" data="0.1"/>
    <numeric name="mjdiff_contact_width" data="0.005"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.5" margin="0.01"/>
    </body>
    <body name="arm" pos="0.12 0 0.2">
      <joint name="h" type="hinge" axis="0 1 0" damping="0.5"/>
      <geom type="capsule" fromto="0 0 0 -0.08 0 0" size="0.01" mass="0.2" contype="0" conaffinity="0"/>
      <body name="pad" pos="-0.08 0 0">
        <joint name="s" type="slide" axis="0 0 1" damping="2"/>
        <geom type="sphere" size="0.04" mass="0.1" margin="0.01" gap="0.004"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <adhesion body="box" ctrlrange="0 1" gain="20"/>
    <adhesion body="pad" ctrlrange="0 1" gain="5"/>
    <motor joint="h" ctrlrange="-1 1" gear="0.5"/>
    <motor joint="s" ctrlrange="-1 1" gear="2"/>
  </actuator>
</mujoco>)";

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

// the contents of a file ("" if it cannot be read)
inline std::string readFile(const std::string& path) {
  std::string text;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

// the MJCF text with custom numerics added: inside its <custom> element, or in a new one
inline std::string withNumerics(std::string xml, const std::string& numerics) {
  size_t at = xml.find("<custom>");
  if (at != std::string::npos) {
    xml.insert(at + 8, numerics);
  } else {
    xml.insert(xml.rfind("</mujoco>"), "<custom>" + numerics + "</custom>");
  }
  return xml;
}

// a slide joint with spring (10 N/m), damper (0.5 N s/m) and motor on a 2 kg cart, no gravity,
// position and velocity sensors: under MuJoCo's Euler step a linear system, whose step and
// sensor Jacobians are exact (test_estimate's Kalman filter, test_filter_d's gradients)
inline constexpr const char* kSlideXml = R"(
<mujoco>
  <option timestep="0.01" gravity="0 0 0"/>
  <worldbody>
    <body name="cart">
      <joint name="slide" type="slide" axis="1 0 0" stiffness="10" damping="0.5"/>
      <geom type="box" size="0.1 0.1 0.1" mass="2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor name="motor" joint="slide" gear="1"/></actuator>
  <sensor>
    <jointpos name="pos" joint="slide"/>
    <jointvel name="vel" joint="slide"/>
  </sensor>
</mujoco>)";

// numerics for the implicit smooth step converged far below finite-difference steps (tests
// that difference the converged step: Newton's error, implicit_tol relative, must stay below
// their resolution)
inline constexpr const char* kImplicitTight =
    "<numeric name=\"mjdiff_integrator\" data=\"1\"/>"
    "<numeric name=\"mjdiff_implicit_tol\" data=\"1e-12\"/>";

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

// every control uniform in its range (ctrlRange), one draw per actuator in order
inline void uniformCtrl(const mjModel* m, mjData* d, unsigned long long* rng) {
  for (int a = 0; a < m->nu; a++) {
    double lo, hi;
    ctrlRange(m, a, &lo, &hi);
    d->ctrl[a] = lo + (hi - lo) * uniform(rng);
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

// Sim with a step-derivative workspace (mjdiff_makeStepDeriv); ok false and the message in sim.err
// on failure
struct StepSim : Sim {
  mjdiffStepDeriv* w = nullptr;
  explicit StepSim(const char* xml, const char* path = nullptr) : Sim(xml, path) {
    if (ok) {
      ok = mjdiff_makeStepDeriv(sim.m, sim.s, nullptr, &w, sim.err, sizeof(sim.err)) == MJDIFF_OK;
    }
  }
  ~StepSim() {
    mjdiff_freeStepDeriv(w);
  }
};

// next = step(x (+) dx, u + du) as (qpos, qvel, act) from the full state (dx, du nullable);
// false with the step's message in err (if not NULL) if the step failed
inline bool stepFrom(const mjModel* m, mjData* d, const mjdiffModel* s,
                     const std::vector<mjtNum>& state, const mjtNum* dx, const mjtNum* du,
                     std::vector<mjtNum>* next, std::string* err = nullptr) {
  shim_setState(m, d, state.data());
  if (dx) perturbState(m, d, dx);
  if (du) {
    for (int i = 0; i < m->nu; i++) d->ctrl[i] += du[i];
  }
  char msg[500];
  bool ok = mjdiff_step(m, d, s, msg, sizeof(msg)) == MJDIFF_OK;
  if (!ok && err) *err = msg;
  next->resize(m->nq + m->nv + m->na);
  getPosVelAct(m, d, next->data());
  return ok;
}

// the tangent difference (b - a) / scale of two (qpos, qvel, act) (out: 2nv + na)
inline void tangentDiff(const mjModel* m, const std::vector<mjtNum>& a,
                        const std::vector<mjtNum>& b, double scale, mjtNum* out) {
  int nq = m->nq, nv = m->nv, na = m->na;
  mj_differentiatePos(m, out, scale, a.data(), b.data());
  for (int i = 0; i < nv; i++) out[nv + i] = (b[nq + i] - a[nq + i]) / scale;
  for (int i = 0; i < na; i++) out[2 * nv + i] = (b[nq + nv + i] - a[nq + nv + i]) / scale;
}

// one step's column in parameter i of p (2nv + na rows) by central differences from state,
// Richardson-extrapolated over (h, 2h): the step with p_i = v0_i +- h and +- 2h; false if a setting
// or a step failed (v0 and the state written back either way)
inline bool fdStepParamColumn(mjModel* m, mjData* d, mjdiffModel* s, const mjdiffParams* p,
                              const std::vector<mjtNum>& state, const std::vector<mjtNum>& v0,
                              int i, double h, std::vector<mjtNum>* col) {
  bool ok = true;
  std::vector<mjtNum> D[2];
  for (int l = 0; l < 2; l++) {
    std::vector<mjtNum> next[2];
    for (int side = 0; side < 2; side++) {
      std::vector<mjtNum> v = v0;
      v[i] += (side ? -1 : 1) * h * (1 << l);
      ok = mjdiff_setParamValues(m, s, p, v.data(), nullptr, 0) == MJDIFF_OK && ok;
      ok = stepFrom(m, d, s, state, nullptr, nullptr, &next[side]) && ok;
    }
    D[l].resize(2 * m->nv + m->na);
    tangentDiff(m, next[1], next[0], 2 * h * (1 << l), D[l].data());
  }
  ok = mjdiff_setParamValues(m, s, p, v0.data(), nullptr, 0) == MJDIFF_OK && ok;
  shim_setState(m, d, state.data());
  *col = richardson(D[0], D[1]);
  return ok;
}

// column i of the step's parameter Jacobian J (ndx x np, row-major) against its finite
// difference R (ndx): the largest entry error over max(floor, max |R|); *scale gets that scale
inline double paramColumnError(const std::vector<mjtNum>& J, int np, int i,
                               const std::vector<mjtNum>& R, double floor, double* scale) {
  int ndx = (int)R.size();
  double sc = floor, e = 0;
  for (int r = 0; r < ndx; r++) sc = std::fmax(sc, std::fabs(R[r]));
  for (int r = 0; r < ndx; r++) e = std::fmax(e, std::fabs(J[(size_t)np * r + i] - R[r]) / sc);
  if (scale) *scale = sc;
  return e;
}

// centred finite-difference [A B] (ndx x (ndx + nu), row-major) at the full state with step eps
// (100 eps for the controls); d is left at state. A failed step's message goes to failure (if
// not NULL; the first one), the difference is taken all the same
inline std::vector<mjtNum> fdStepJacobian(const mjModel* m, mjData* d, const mjdiffModel* s,
                                          const std::vector<mjtNum>& state, double eps,
                                          std::string* failure = nullptr) {
  int ndx = 2 * m->nv + m->na, nu = m->nu, ncol = ndx + nu;
  std::vector<mjtNum> J(ndx * ncol), col(ndx), dx(ndx), du(nu > 0 ? nu : 1);
  std::vector<mjtNum> next[2];
  std::string err;
  for (int c = 0; c < ncol; c++) {
    double e = c < ndx ? eps : 100 * eps;
    for (int side = 0; side < 2; side++) {
      std::fill(dx.begin(), dx.end(), 0);
      std::fill(du.begin(), du.end(), 0);
      (c < ndx ? dx[c] : du[c - ndx]) = side ? -e : e;
      if (!stepFrom(m, d, s, state, dx.data(), du.data(), &next[side], &err) && failure &&
          failure->empty()) {
        *failure = err;
      }
    }
    tangentDiff(m, next[1], next[0], 2 * e, col.data());
    for (int r = 0; r < ndx; r++) J[ncol * r + c] = col[r];
  }
  shim_setState(m, d, state.data());
  return J;
}

// Richardson-extrapolated fdStepJacobian at two scales: F1 from (eps, 2 eps), F2 from (2 eps,
// 4 eps); their difference measures the finite differences' own error
inline void fdStepJacobians(const mjModel* m, mjData* d, const mjdiffModel* s,
                            const std::vector<mjtNum>& state, double eps, std::vector<mjtNum>* F1,
                            std::vector<mjtNum>* F2, std::string* failure = nullptr) {
  std::vector<mjtNum> Fa = fdStepJacobian(m, d, s, state, eps, failure);
  std::vector<mjtNum> Fb = fdStepJacobian(m, d, s, state, 2 * eps, failure);
  std::vector<mjtNum> Fc = fdStepJacobian(m, d, s, state, 4 * eps, failure);
  *F1 = richardson(Fa, Fb);
  *F2 = richardson(Fb, Fc);
}

// J = [A B] (ndx x (ndx + nu), row-major) from A (ndx x ndx) and B (ndx x nu)
inline std::vector<mjtNum> joinAB(int ndx, int nu, const std::vector<mjtNum>& A,
                                  const std::vector<mjtNum>& B) {
  int ncol = ndx + nu;
  std::vector<mjtNum> J(ndx * ncol);
  for (int r = 0; r < ndx; r++) {
    for (int c = 0; c < ndx; c++) J[ncol * r + c] = A[ndx * r + c];
    for (int c = 0; c < nu; c++) J[ncol * r + ndx + c] = B[nu * r + c];
  }
  return J;
}

// max |a - ref| / max(floor, max |ref|)
inline double relError(const std::vector<mjtNum>& a, const std::vector<mjtNum>& ref, double floor) {
  double err = 0, scale = floor;
  for (size_t i = 0; i < a.size(); i++) {
    err = std::fmax(err, std::fabs(a[i] - ref[i]));
    scale = std::fmax(scale, std::fabs(ref[i]));
  }
  return err / scale;
}

// error of block [r0, r1) x [c0, c1) of J against F (both with ncol columns, row-major):
// max |J - F| / max(1e-4, max |F|)
inline double blockRelError(const std::vector<mjtNum>& J, const std::vector<mjtNum>& F, int ncol,
                            int r0, int r1, int c0, int c1) {
  double err = 0, scale = 1e-4;
  for (int r = r0; r < r1; r++) {
    for (int c = c0; c < c1; c++) {
      err = std::fmax(err, std::fabs(J[ncol * r + c] - F[ncol * r + c]));
      scale = std::fmax(scale, std::fabs(F[ncol * r + c]));
    }
  }
  return err / scale;
}

// the worst blockRelError over the grid of blocks between the row cuts and the column cuts
inline double gridBlockError(const std::vector<mjtNum>& J, const std::vector<mjtNum>& F, int ncol,
                             std::initializer_list<int> rowCuts,
                             std::initializer_list<int> colCuts) {
  std::vector<int> rc(rowCuts), cc(colCuts);
  double worst = 0;
  for (size_t br = 0; br + 1 < rc.size(); br++) {
    for (size_t bc = 0; bc + 1 < cc.size(); bc++) {
      worst = std::fmax(worst, blockRelError(J, F, ncol, rc[br], rc[br + 1], cc[bc], cc[bc + 1]));
    }
  }
  return worst;
}

// columns of a step Jacobian [A B] (ndx x ncol, row-major) whose finite differences are
// unreliable: in some block of the (q, v, act) x (q, v, act, ctrl) grid, the two Richardson
// estimates F1 and F2 of the column disagree by more than tol relative to the block's scale (as
// blockRelError's). noisy[c] set for those; returns their number
inline int noisyColumns(const mjModel* m, const std::vector<mjtNum>& F1,
                        const std::vector<mjtNum>& F2, double tol, std::vector<char>* noisy) {
  int nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na, ncol = ndx + nu;
  const int rows[] = {0, nv, 2 * nv, ndx}, cols[] = {0, nv, 2 * nv, ndx, ncol};
  noisy->assign(ncol, 0);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 4; j++) {
      double scale = 1e-4;
      for (int r = rows[i]; r < rows[i + 1]; r++) {
        for (int c = cols[j]; c < cols[j + 1]; c++) {
          scale = std::fmax(scale, std::fabs(F1[ncol * r + c]));
        }
      }
      for (int c = cols[j]; c < cols[j + 1]; c++) {
        for (int r = rows[i]; r < rows[i + 1]; r++) {
          if (std::fabs(F1[ncol * r + c] - F2[ncol * r + c]) > tol * scale) (*noisy)[c] = 1;
        }
      }
    }
  }
  int n = 0;
  for (char x : *noisy) n += x;
  return n;
}

// J (rows x ncol, row-major) with the columns marked in noisy taken from F: no error there
inline std::vector<mjtNum> withColumnsOf(const std::vector<mjtNum>& J,
                                         const std::vector<mjtNum>& F,
                                         const std::vector<char>& noisy, int ncol) {
  std::vector<mjtNum> out = J;
  for (size_t i = 0; i < out.size(); i++) {
    if (noisy[i % (size_t)ncol]) out[i] = F[i];
  }
  return out;
}

// the step's Jacobian J = [A B] (ndx x ncol, row-major) against Richardson-extrapolated central
// differences of the step at state (fdStepJacobians, step eps, two scales; F1 the first), over
// the columns whose two estimates agree within tol (noisyColumns): the worst relative error of
// the blocks A_qq .. B_a (gridBlockError); *compared the columns compared; failure: a difference
// step's failure (the error is then 0)
inline double fdJacobianError(const mjModel* m, mjData* d, const mjdiffModel* s,
                              const std::vector<mjtNum>& state, const std::vector<mjtNum>& J,
                              double eps, double tol, int* compared, std::vector<mjtNum>* F1,
                              std::string* failure) {
  int nv = m->nv, ndx = 2 * nv + m->na, ncol = ndx + m->nu;
  std::vector<mjtNum> F2;
  fdStepJacobians(m, d, s, state, eps, F1, &F2, failure);
  if (!failure->empty()) return 0;
  std::vector<char> noisy;
  *compared = ncol - noisyColumns(m, *F1, F2, tol, &noisy);
  return gridBlockError(withColumnsOf(J, *F1, noisy, ncol), *F1, ncol, {0, nv, 2 * nv, ndx},
                        {0, nv, 2 * nv, ndx, ncol});
}

// the products of a step against its Jacobian J = [A B] (ndx x (ndx + nu), row-major): the worst
// error of JVP jv = J [dx; du] and VJP [lx; lu] = J' lam, each entry's relative to the largest
// term of its sum (at least 1)
inline double productError(const std::vector<mjtNum>& J, int ndx, int nu, const mjtNum* lam,
                           const mjtNum* lx, const mjtNum* lu, const mjtNum* dx,
                           const mjtNum* du, const mjtNum* jv) {
  int ncol = ndx + nu;
  double worst = 0;
  for (int r = 0; r < ndx; r++) {
    double ref = 0, scale = 1;
    for (int c = 0; c < ncol; c++) {
      double t = c < ndx ? dx[c] : du[c - ndx];
      ref += J[(size_t)ncol * r + c] * t;
      scale = std::fmax(scale, std::fabs(J[(size_t)ncol * r + c] * t));
    }
    worst = std::fmax(worst, std::fabs(jv[r] - ref) / scale);
  }
  for (int c = 0; c < ncol; c++) {
    double ref = 0, scale = 1;
    for (int r = 0; r < ndx; r++) {
      ref += J[(size_t)ncol * r + c] * lam[r];
      scale = std::fmax(scale, std::fabs(J[(size_t)ncol * r + c] * lam[r]));
    }
    worst = std::fmax(worst, std::fabs((c < ndx ? lx[c] : lu[c - ndx]) - ref) / scale);
  }
  return worst;
}

// dqacc/dp = M^-1 DrDp as np columns of nv (column-major) from DrDp (nv x np, row-major) at d's
// factored mass matrix
inline std::vector<mjtNum> accParamColumns(const mjModel* m, mjData* d,
                                           const std::vector<mjtNum>& DrDp, int np) {
  int nv = m->nv;
  std::vector<mjtNum> cols(nv * np);
  for (int i = 0; i < np; i++) {
    for (int r = 0; r < nv; r++) cols[nv * i + r] = DrDp[np * r + i];
  }
  mj_solveM(m, d, cols.data(), cols.data(), np);
  return cols;
}

}  // namespace testutil

#endif  // MJDIFF_TESTS_TESTUTIL_H_
