// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// MuJoCo 2.2.2's fluid forces (adjoint/fluid_d.c): the force itself against what mj_passive adds,
// its derivatives DfDq, DfDv against finite differences of MuJoCo's own force, the step Jacobians
// A, B of models in a fluid against finite differences of mjdiff_step, and the derivatives in
// option:density, option:viscosity, option:wind and the bodies' inertial parameters.
//
// Reference force: f(q, v) = qfrc_passive(fluid on) - qfrc_passive(fluid off), both from MuJoCo's
// mj_passive after mj_fwdPosition and mj_fwdVelocity (so the reference never runs our code).
// Finite differences along each tangent direction of qpos (mj_integratePos) and each qvel
// component, centered, Richardson-extrapolated over (eps, 2 eps). The force is smooth in q, and
// C1 in v with a jump of the second derivative where a local velocity component crosses 0 (the
// |y| y drag terms) and a C1 norm |v| in the ellipsoid model: a sample is skipped when the
// extrapolations over (eps, 2 eps) and (2 eps, 4 eps) disagree by more than the tolerance. Errors
// are max abs error / max abs entry of each matrix (floored at 1e-8 times the force scale), held
// to 1e-6; velocities are large (up to 3 m/s, 8 rad/s) so the quadratic drag dominates the
// linear terms, except in the viscosity-only runs.

#include <gtest/gtest.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/params.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "../adjoint/derivative.h"
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::relError;
using testutil::uniform;

//---------------------------------- models --------------------------------------------------------

// a free-floating box (inertia-box model) and a free body with a hinged tail
const char* kFreeBox = R"(
<mujoco>
  <option timestep="0.002" density="1000" viscosity="0.001" wind="0.3 -0.2 0.1"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="box" pos="0 0 1" euler="10 20 30">
      <freejoint/>
      <geom type="box" size="0.1 0.05 0.02" density="800"/>
      <body name="tail" pos="-0.12 0 0">
        <joint name="t" type="hinge" axis="0 0 1" damping="0.01"/>
        <geom type="capsule" fromto="0 0 0 -0.15 0 0" size="0.01"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="t" gear="0.1" ctrlrange="-1 1" ctrllimited="true"/></actuator>
</mujoco>)";

// the ellipsoid model: a free body with two ellipsoid geoms (one off the body frame) and a geom
// without fluid interaction (skipped: its body is on the ellipsoid model), a hinged
// child with a capsule and a cylinder, and a third body on the inertia-box model
const char* kEllipsoid = R"(
<mujoco>
  <option timestep="0.002" density="1000" viscosity="0.01" wind="0.2 0.1 -0.3"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <geom type="ellipsoid" size="0.1 0.05 0.03" fluidshape="ellipsoid"/>
      <geom type="box" size="0.03 0.02 0.01" pos="0.05 0.02 0.01" euler="20 0 40"
            fluidshape="ellipsoid" fluidcoef="0.6 0.3 1.2 0.8 1.3"/>
      <geom type="sphere" size="0.02" pos="0 0 0.04"/>
      <body name="b" pos="-0.1 0 0">
        <joint name="h" type="hinge" axis="0 1 1"/>
        <geom type="capsule" fromto="0 0 0 -0.15 0 0" size="0.02" fluidshape="ellipsoid"/>
        <geom type="cylinder" fromto="-0.15 0 0 -0.2 0.02 0" size="0.015" fluidshape="ellipsoid"/>
        <body name="c" pos="-0.2 0 0">
          <joint name="k" type="ball"/>
          <geom type="sphere" size="0.03"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="h" gear="0.2" ctrlrange="-1 1" ctrllimited="true"/></actuator>
</mujoco>)";

std::string swimmerPath() {
  return shim_modelPath("swimmer.xml");
}

// fluid settings applied to a loaded model
struct Fluid {
  const char* name;
  double density, viscosity, wind[3];
};

void setFluid(mjModel* m, const Fluid& f) {
  m->opt.density = f.density;
  m->opt.viscosity = f.viscosity;
  for (int i = 0; i < 3; i++) m->opt.wind[i] = f.wind[i];
}

//---------------------------------- states --------------------------------------------------------

// random state: joint angles and free orientations at random, velocities large enough that the
// quadratic drag dominates (linear up to vmax, angular up to wmax)
void randomState(const mjModel* m, mjData* d, unsigned long long* seed, double vmax, double wmax) {
  mj_resetData(m, d);
  for (int j = 0; j < m->njnt; j++) {
    int qa = m->jnt_qposadr[j], da = m->jnt_dofadr[j];
    switch (m->jnt_type[j]) {
      case mjJNT_FREE:
        for (int i = 0; i < 3; i++) d->qpos[qa + i] += 0.5 * (uniform(seed) - 0.5);
        for (int i = 0; i < 4; i++) d->qpos[qa + 3 + i] = uniform(seed) - 0.5;
        mju_normalize4(d->qpos + qa + 3);
        for (int i = 0; i < 3; i++) d->qvel[da + i] = 2 * vmax * (uniform(seed) - 0.5);
        for (int i = 3; i < 6; i++) d->qvel[da + i] = 2 * wmax * (uniform(seed) - 0.5);
        break;
      case mjJNT_BALL:
        for (int i = 0; i < 4; i++) d->qpos[qa + i] = uniform(seed) - 0.5;
        mju_normalize4(d->qpos + qa);
        for (int i = 0; i < 3; i++) d->qvel[da + i] = 2 * wmax * (uniform(seed) - 0.5);
        break;
      case mjJNT_SLIDE:
        d->qpos[qa] = uniform(seed) - 0.5;
        d->qvel[da] = 2 * vmax * (uniform(seed) - 0.5);
        break;
      default:
        d->qpos[qa] = 2 * (uniform(seed) - 0.5);
        d->qvel[da] = 2 * wmax * (uniform(seed) - 0.5);
    }
  }
  for (int i = 0; i < m->nu; i++) d->ctrl[i] = 1.8 * (uniform(seed) - 0.5);
}

//---------------------------------- reference force ----------------------------------------------

// MuJoCo's fluid force at the state in d: qfrc_passive with and without the fluid
void mujocoFluidForce(const mjModel* m, mjData* d, mjtNum* f) {
  mjModel off = *m;
  off.opt.density = 0;
  off.opt.viscosity = 0;
  mj_fwdPosition(m, d);
  mj_fwdVelocity(&off, d);
  std::vector<mjtNum> base(d->qfrc_passive, d->qfrc_passive + m->nv);
  mj_fwdVelocity(m, d);
  for (int i = 0; i < m->nv; i++) f[i] = d->qfrc_passive[i] - base[i];
}

// centered differences of the reference force, step eps: Dq, Dv (nv x nv)
void fdFluid(const mjModel* m, mjData* d, const std::vector<mjtNum>& qpos,
             const std::vector<mjtNum>& qvel, double eps, std::vector<mjtNum>* Dq,
             std::vector<mjtNum>* Dv) {
  int nv = m->nv;
  Dq->assign(nv * nv, 0);
  Dv->assign(nv * nv, 0);
  std::vector<mjtNum> fp(nv), fm(nv), dq(nv);
  for (int c = 0; c < nv; c++) {
    for (int side = 0; side < 2; side++) {
      mju_copy(d->qpos, qpos.data(), m->nq);
      mju_copy(d->qvel, qvel.data(), nv);
      std::fill(dq.begin(), dq.end(), 0);
      dq[c] = side ? -eps : eps;
      mj_integratePos(m, d->qpos, dq.data(), 1);
      mujocoFluidForce(m, d, side ? fm.data() : fp.data());
    }
    for (int r = 0; r < nv; r++) (*Dq)[nv * r + c] = (fp[r] - fm[r]) / (2 * eps);
    for (int side = 0; side < 2; side++) {
      mju_copy(d->qpos, qpos.data(), m->nq);
      mju_copy(d->qvel, qvel.data(), nv);
      d->qvel[c] += side ? -eps : eps;
      mujocoFluidForce(m, d, side ? fm.data() : fp.data());
    }
    for (int r = 0; r < nv; r++) (*Dv)[nv * r + c] = (fp[r] - fm[r]) / (2 * eps);
  }
  mju_copy(d->qpos, qpos.data(), m->nq);
  mju_copy(d->qvel, qvel.data(), nv);
}

double maxAbs(const std::vector<mjtNum>& a) {
  double s = 0;
  for (mjtNum x : a) s = std::fmax(s, std::fabs(x));
  return s;
}

//---------------------------------- force and its derivatives ------------------------------------

struct ForceResult {
  int compared = 0;
  double worstForce = 0, worstQ = 0, worstV = 0;
};

// at nsample random states of the model at path/xml with fluid settings f
ForceResult checkForce(const char* xml, const char* path, const Fluid& f, int nsample, double vmax,
                       double wmax, double tol) {
  ForceResult res;
  testutil::Sim sim(xml, path);
  EXPECT_TRUE(sim.ok) << sim.sim.err;
  if (!sim.ok) return res;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  setFluid(m, f);
  int nv = m->nv;
  unsigned long long seed = 4242;
  for (int k = 0; k < nsample; k++) {
    randomState(m, d, &seed, vmax, wmax);
    std::vector<mjtNum> qpos(d->qpos, d->qpos + m->nq), qvel(d->qvel, d->qvel + nv);

    // the force: ours against MuJoCo's
    std::vector<mjtNum> ref(nv), ours(nv);
    mujocoFluidForce(m, d, ref.data());
    mjdiff_fluidForce(m, d, ours.data());
    double fscale = maxAbs(ref);
    EXPECT_GT(fscale, 0) << f.name << " sample " << k;
    double ef = relError(ours, ref, 1e-300);
    res.worstForce = std::fmax(res.worstForce, ef);
    EXPECT_LE(ef, 1e-12) << f.name << " sample " << k;

    // analytic derivatives (d after mujocoFluidForce: kinematics and velocities of the state)
    std::vector<mjtNum> Dq(nv * nv, 0), Dv(nv * nv, 0);
    mjdiff_fluidDerivative(m, d, Dq.data(), Dv.data());

    std::vector<mjtNum> q1, v1, q2, v2, q4, v4;
    double eps = 1e-6;
    fdFluid(m, d, qpos, qvel, eps, &q1, &v1);
    fdFluid(m, d, qpos, qvel, 2 * eps, &q2, &v2);
    fdFluid(m, d, qpos, qvel, 4 * eps, &q4, &v4);
    std::vector<mjtNum> Rq = testutil::richardson(q1, q2), Rv = testutil::richardson(v1, v2);
    std::vector<mjtNum> Rq2 = testutil::richardson(q2, q4), Rv2 = testutil::richardson(v2, v4);
    double floorq = 1e-8 * fscale, floorv = 1e-8 * fscale;
    double noise = std::fmax(relError(Rq2, Rq, floorq), relError(Rv2, Rv, floorv));
    if (noise > tol) {
      std::cout << f.name << " sample " << k << " skipped: differences disagree by " << noise
                << "\n";
      continue;
    }
    res.compared++;
    double eq = relError(Dq, Rq, floorq), ev = relError(Dv, Rv, floorv);
    res.worstQ = std::fmax(res.worstQ, eq);
    res.worstV = std::fmax(res.worstV, ev);
    EXPECT_LE(eq, tol) << f.name << " sample " << k << " DfDq";
    EXPECT_LE(ev, tol) << f.name << " sample " << k << " DfDv";

    // guards: computed apart from the differences, and not trivially small
    EXPECT_NE(0, std::memcmp(Dq.data(), Rq.data(), Dq.size() * sizeof(mjtNum)));
    EXPECT_NE(0, std::memcmp(Dv.data(), Rv.data(), Dv.size() * sizeof(mjtNum)));
    EXPECT_GT(maxAbs(Dv), 0);
    EXPECT_GT(maxAbs(Dq), 0);
  }
  std::cout << (path ? path : "inline") << " [" << f.name << "]: compared " << res.compared << "/"
            << nsample << ", force " << res.worstForce << ", DfDq " << res.worstQ << ", DfDv "
            << res.worstV << "\n";
  EXPECT_GE(res.compared, (int)(0.8 * nsample));
  return res;
}

const Fluid kWater = {"water", 1000, 0.001, {0, 0, 0}};
const Fluid kWaterWind = {"water+wind", 1000, 0.001, {0.4, -0.3, 0.2}};
const Fluid kDensityOnly = {"density only", 1000, 0, {0.2, 0.1, 0}};
const Fluid kViscosityOnly = {"viscosity only", 0, 0.5, {0, 0.3, -0.1}};
const Fluid kAir = {"air+wind", 1.2, 1.8e-5, {3, 1, 0}};

TEST(FluidForce, SwimmerWater) {
  checkForce(nullptr, swimmerPath().c_str(), kWater, 30, 2, 8, 1e-6);
}

TEST(FluidForce, SwimmerWind) {
  checkForce(nullptr, swimmerPath().c_str(), kWaterWind, 30, 2, 8, 1e-6);
}

TEST(FluidForce, SwimmerDensityOnly) {
  checkForce(nullptr, swimmerPath().c_str(), kDensityOnly, 20, 2, 8, 1e-6);
}

TEST(FluidForce, SwimmerViscosityOnly) {
  checkForce(nullptr, swimmerPath().c_str(), kViscosityOnly, 20, 2, 8, 1e-6);
}

TEST(FluidForce, FreeBoxWaterAndWind) {
  checkForce(kFreeBox, nullptr, kWater, 30, 3, 8, 1e-6);
  checkForce(kFreeBox, nullptr, kWaterWind, 30, 3, 8, 1e-6);
  checkForce(kFreeBox, nullptr, kViscosityOnly, 20, 3, 8, 1e-6);
  checkForce(kFreeBox, nullptr, kAir, 20, 3, 8, 1e-6);
}

TEST(FluidForce, EllipsoidModel) {
  checkForce(kEllipsoid, nullptr, kWater, 30, 3, 8, 1e-6);
  checkForce(kEllipsoid, nullptr, kWaterWind, 30, 3, 8, 1e-6);
  checkForce(kEllipsoid, nullptr, kDensityOnly, 20, 3, 8, 1e-6);
  checkForce(kEllipsoid, nullptr, kViscosityOnly, 20, 3, 8, 1e-6);
}

// at rest in still fluid the force and its q-derivative vanish, and the v-derivative is the linear
// (viscous) part alone: the |y| y, |v| v and Kutta terms have zero slope at y = 0
TEST(FluidForce, AtRest) {
  const char* models[] = {nullptr, kFreeBox, kEllipsoid};
  for (const char* xml : models) {
    std::string path = swimmerPath();
    testutil::Sim sim(xml, xml ? nullptr : path.c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    setFluid(m, kWater);
    m->opt.viscosity = 0.1;
    int nv = m->nv;
    unsigned long long seed = 77;
    randomState(m, d, &seed, 0, 0);
    std::vector<mjtNum> qpos(d->qpos, d->qpos + m->nq), qvel(d->qvel, d->qvel + nv), f(nv);
    EXPECT_EQ(0, maxAbs(qvel));
    mujocoFluidForce(m, d, f.data());
    EXPECT_EQ(0, maxAbs(f));
    std::vector<mjtNum> Dq(nv * nv, 0), Dv(nv * nv, 0), q1, v1, q2, v2;
    mjdiff_fluidDerivative(m, d, Dq.data(), Dv.data());
    EXPECT_EQ(0, maxAbs(Dq));
    // the quadratic terms leave a central difference an error of order eps (|x| x at 0): a tiny
    // step, which the zero force at rest allows (rounding is relative to the tiny forces)
    fdFluid(m, d, qpos, qvel, 1e-9, &q1, &v1);
    fdFluid(m, d, qpos, qvel, 1e-7, &q2, &v2);
    EXPECT_GT(maxAbs(Dv), 0);
    EXPECT_LE(relError(Dv, v1, 1e-12), 1e-6) << (xml ? "inline" : "swimmer");
    EXPECT_GT(relError(Dv, v2, 1e-12), 1e-6) << "the quadratic terms should show at eps 1e-7";
    // a density-only fluid has no slope at rest at all
    mujocoFluidForce(m, d, f.data());  // d's kinematics back at the state
    m->opt.viscosity = 0;
    std::fill(Dv.begin(), Dv.end(), 0);
    mjdiff_fluidDerivative(m, d, Dq.data(), Dv.data());
    EXPECT_EQ(0, maxAbs(Dv));
  }
}

// the fluid's share of mjdiff_forceDerivative: with and without the fluid they differ by exactly
// mjdiff_fluidDerivative
TEST(FluidForce, InForceDerivative) {
  testutil::Sim sim(nullptr, swimmerPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int nv = m->nv, nu = m->nu;
  unsigned long long seed = 9;
  randomState(m, d, &seed, 1, 4);
  char err[500];
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> q1(nv * nv), v1(nv * nv), q0(nv * nv), v0(nv * nv), fu(nv * nu);
  mjdiff_forceDerivative(m, d, sim.sim.s, q1.data(), v1.data(), nullptr, fu.data(), nullptr,
                         nullptr);
  mjModel off = *m;
  off.opt.density = off.opt.viscosity = 0;
  mjdiff_forceDerivative(&off, d, sim.sim.s, q0.data(), v0.data(), nullptr, fu.data(), nullptr,
                         nullptr);
  std::vector<mjtNum> fq(nv * nv, 0), fv(nv * nv, 0);
  mjdiff_fluidDerivative(m, d, fq.data(), fv.data());
  EXPECT_GT(maxAbs(fv), 1e-3);
  for (int i = 0; i < nv * nv; i++) {
    EXPECT_NEAR(q1[i] - q0[i], fq[i], 1e-12 * (1 + maxAbs(q1)));
    EXPECT_NEAR(v1[i] - v0[i], fv[i], 1e-12 * (1 + maxAbs(v1)));
  }
  // nothing without a fluid, or with passive forces off
  std::vector<mjtNum> z1(nv * nv, 0), z2(nv * nv, 0);
  mjdiff_fluidDerivative(&off, d, z1.data(), z2.data());
  EXPECT_EQ(0, maxAbs(z1) + maxAbs(z2));
  mjModel nopass = *m;
  nopass.opt.disableflags |= COMPAT_DSBL_PASSIVE_ALL;
  mjdiff_fluidDerivative(&nopass, d, z1.data(), z2.data());
  EXPECT_EQ(0, maxAbs(z1) + maxAbs(z2));
}

//---------------------------------- step Jacobians ------------------------------------------------

// worst per-block relative error (blocks q/v rows x q/v/u columns, scale floored at 1e-4)
double blockError(const mjModel* m, const std::vector<mjtNum>& J, const std::vector<mjtNum>& F) {
  int nv = m->nv, ndx = 2 * nv + m->na, ncol = ndx + m->nu;
  return testutil::gridBlockError(J, F, ncol, {0, nv, 2 * nv, ndx}, {0, nv, 2 * nv, ndx, ncol});
}

double checkStep(const char* xml, const char* path, const char* integrator, int nsample,
                 double tol) {
  testutil::Sim sim(xml, path);
  EXPECT_TRUE(sim.ok) << sim.sim.err;
  if (!sim.ok) return 1;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  if (!strcmp(integrator, "RK4")) m->opt.integrator = mjINT_RK4;
  mjdiffStepDeriv* w = nullptr;
  char err[1000];
  EXPECT_EQ(mjdiff_makeStepDeriv(m, s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  if (!w) return 1;
  int ndx = 2 * m->nv + m->na, nu = m->nu;
  unsigned long long seed = 31337;
  double worst = 0;
  int compared = 0;
  for (int k = 0; k < nsample; k++) {
    testutil::simulateRandom(m, d, s, &seed, 50 + 11 * k);
    testutil::perturbVelocities(m, d, &seed, 2.0, 0);
    shim_randomCtrl(m, d, &seed);
    testutil::ctrlInsideRange(m, d);
    mjdiff_forward(m, d, s, err, sizeof(err));
    std::vector<mjtNum> state = testutil::getState(m, d);
    std::vector<mjtNum> A(ndx * ndx), B(ndx * (nu ? nu : 1));
    EXPECT_EQ(mjdiff_stepJacobian(m, d, s, w, A.data(), B.data(), nullptr, err, sizeof(err)),
              MJDIFF_OK)
        << err;
    std::vector<mjtNum> J = testutil::joinAB(ndx, nu, A, B);
    std::vector<mjtNum> F1, F2;
    testutil::fdStepJacobians(m, d, s, state, 1e-5, &F1, &F2);
    double noise = blockError(m, F1, F2);
    if (noise > tol) {
      std::cout << "sample " << k << " skipped: differences disagree by " << noise << "\n";
      continue;
    }
    compared++;
    double e = blockError(m, J, F1);
    worst = std::fmax(worst, e);
    EXPECT_LE(e, tol) << "sample " << k;
    EXPECT_NE(0, std::memcmp(J.data(), F1.data(), J.size() * sizeof(mjtNum)));
  }
  mjdiff_freeStepDeriv(w);
  std::cout << (path ? path : "inline") << " " << integrator << ": compared " << compared << "/"
            << nsample << ", worst relative error " << worst << "\n";
  EXPECT_GE(compared, (int)(0.8 * nsample));
  return worst;
}

TEST(FluidStep, SwimmerEuler) {
  checkStep(nullptr, swimmerPath().c_str(), "Euler", 20, 1e-6);
}

TEST(FluidStep, SwimmerRK4) {
  checkStep(nullptr, swimmerPath().c_str(), "RK4", 10, 1e-6);
}

TEST(FluidStep, FreeBoxEuler) {
  checkStep(kFreeBox, nullptr, "Euler", 15, 1e-6);
}

TEST(FluidStep, EllipsoidEuler) {
  checkStep(kEllipsoid, nullptr, "Euler", 15, 1e-6);
}

// the fluid changes the step Jacobian: the swimmer's A differs with and without water
TEST(FluidStep, FluidMatters) {
  testutil::Sim sim(nullptr, swimmerPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  unsigned long long seed = 5;
  testutil::simulateRandom(m, d, sim.sim.s, &seed, 200);
  int ndx = 2 * m->nv, nu = m->nu;
  std::vector<mjtNum> A1(ndx * ndx), A0(ndx * ndx), B(ndx * nu);
  char err[500];
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, sim.sim.s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_stepJacobian(m, d, sim.sim.s, w, A1.data(), B.data(), nullptr, err, sizeof(err)),
            MJDIFF_OK)
      << err;
  m->opt.density = m->opt.viscosity = 0;
  ASSERT_EQ(mjdiff_stepJacobian(m, d, sim.sim.s, w, A0.data(), B.data(), nullptr, err, sizeof(err)),
            MJDIFF_OK)
      << err;
  mjdiff_freeStepDeriv(w);
  double diff = 0;
  for (int i = 0; i < ndx * ndx; i++) diff = std::fmax(diff, std::fabs(A1[i] - A0[i]));
  EXPECT_GT(diff, 1e-3);
}

//---------------------------------- parameters ----------------------------------------------------

// DrDp columns (fluid parameters and inertial parameters of fluid bodies) against centered
// differences of M^-1 DrDp = dqacc/dp of mjdiff_forward, Richardson-extrapolated
double checkParams(const char* xml, const char* path, const std::vector<const char*>& names,
                   int nsample, double tol) {
  testutil::Sim sim(xml, path);
  EXPECT_TRUE(sim.ok) << sim.sim.err;
  if (!sim.ok) return 1;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  mjdiffParams* p = nullptr;
  char err[1000];
  EXPECT_EQ(mjdiff_makeParams(m, s, names.data(), (int)names.size(), &p, err, sizeof(err)),
            MJDIFF_OK)
      << err;
  if (!p) return 1;
  int np = mjdiff_paramCount(p), nv = m->nv;
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, p, v0.data());
  EXPECT_EQ(mjdiff_setParamValues(m, s, p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
  unsigned long long seed = 99;
  double worst = 0;
  std::string worstName;
  int compared = 0, total = 0;
  for (int k = 0; k < nsample; k++) {
    testutil::simulateRandom(m, d, s, &seed, 40 + 7 * k);
    testutil::perturbVelocities(m, d, &seed, 2.0, 0);
    testutil::ctrlInsideRange(m, d);
    mjdiff_forward(m, d, s, err, sizeof(err));
    std::vector<mjtNum> state = testutil::getState(m, d);
    std::vector<mjtNum> acc(d->qacc, d->qacc + nv), DrDp(nv * np);
    EXPECT_EQ(mjdiff_paramDerivative(m, d, s, p, acc.data(), 0, DrDp.data(), nullptr), 0);
    std::vector<mjtNum> cols = testutil::accParamColumns(m, d, DrDp, np);
    for (int i = 0; i < np; i++) {
      total++;
      // qacc is linear in density and viscosity (a long step only cuts rounding); smooth in the
      // others, where Richardson leaves O(h^4)
      std::string name = mjdiff_paramName(p, i);
      bool linear = name == "option:density" || name == "option:viscosity";
      double h = (linear ? 1e-2 : 1e-4) * (v0[i] != 0 ? std::fabs(v0[i]) : 1);
      auto qaccAt = [&](double dp) {
        std::vector<mjtNum> v = v0;
        v[i] += dp;
        EXPECT_EQ(mjdiff_setParamValues(m, s, p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
        shim_setState(m, d, state.data());
        mjdiff_forward(m, d, s, err, sizeof(err));
        return std::vector<mjtNum>(d->qacc, d->qacc + nv);
      };
      std::vector<mjtNum> D[3];
      for (int l = 0; l < 3; l++) {
        double hh = h * (1 << l);
        std::vector<mjtNum> a = qaccAt(hh), b = qaccAt(-hh);
        D[l].resize(nv);
        for (int r = 0; r < nv; r++) D[l][r] = (a[r] - b[r]) / (2 * hh);
      }
      EXPECT_EQ(mjdiff_setParamValues(m, s, p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
      std::vector<mjtNum> R1 = testutil::richardson(D[0], D[1]);
      std::vector<mjtNum> R2 = testutil::richardson(D[1], D[2]);
      std::vector<mjtNum> J(cols.begin() + nv * i, cols.begin() + nv * (i + 1));
      double qscale = 1;
      for (mjtNum a : acc) qscale = std::fmax(qscale, std::fabs(a));
      double floor = 1e-6 * qscale / (v0[i] != 0 ? std::fabs(v0[i]) : 1);
      double noise = relError(R2, R1, floor);
      if (noise > tol) {
        std::cout << mjdiff_paramName(p, i) << " sample " << k << " skipped (" << noise << ")\n";
        continue;
      }
      compared++;
      double e = relError(J, R1, floor);
      if (e > worst) {
        worst = e;
        worstName = mjdiff_paramName(p, i);
      }
      EXPECT_LE(e, tol) << mjdiff_paramName(p, i) << " sample " << k;
      EXPECT_GT(maxAbs(R1), floor) << mjdiff_paramName(p, i) << " has no effect";
    }
  }
  shim_setState(m, d, testutil::getState(m, d).data());
  mjdiff_freeParams(p);
  std::cout << (path ? path : "inline") << ": parameters compared " << compared << "/" << total
            << ", worst relative error " << worst << " (" << worstName << ")\n";
  EXPECT_GE(compared, (int)(0.8 * total));
  return worst;
}

TEST(FluidParams, Swimmer) {
  checkParams(nullptr, swimmerPath().c_str(),
              {"option:density", "option:viscosity", "option:wind[0]", "option:wind[1]",
               "body:link2:mass", "body:link3:inertia", "body:link4:ipos[0]", "body:link4:ipos[1]"},
              8, 1e-6);
}

TEST(FluidParams, FreeBoxAndEllipsoid) {
  checkParams(kFreeBox, nullptr,
              {"option:density", "option:viscosity", "option:wind", "body:box:mass",
               "body:box:inertia", "body:box:ipos", "body:tail:inertia"},
              8, 1e-6);
  // body a is on the ellipsoid model (its inertia does not enter the fluid force), c on the box
  checkParams(kEllipsoid, nullptr,
              {"option:density", "option:viscosity", "option:wind", "body:a:mass", "body:a:ipos",
               "body:c:mass", "body:c:inertia", "body:c:ipos"},
              8, 1e-6);
}

// the parameters through the whole step: P = dx'/dp against finite differences of mjdiff_step
TEST(FluidParams, StepParameterJacobian) {
  testutil::Sim sim(nullptr, swimmerPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  // (the swimmer moves in the horizontal plane: vertical wind has no effect)
  const char* names[] = {"option:density", "option:viscosity", "option:wind[0]", "option:wind[1]"};
  mjdiffParams* p = nullptr;
  char err[1000];
  ASSERT_EQ(mjdiff_makeParams(m, s, names, 4, &p, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(p);
  ASSERT_EQ(np, 4);
  EXPECT_STREQ(mjdiff_paramName(p, 3), "option:wind[1]");
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, s, p, &w, err, sizeof(err)), MJDIFF_OK) << err;
  int nv = m->nv, ndx = 2 * nv, nu = m->nu;
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, p, v0.data());
  EXPECT_EQ(v0[0], 1000);
  unsigned long long seed = 2024;
  double worst = 0;
  for (int k = 0; k < 5; k++) {
    testutil::simulateRandom(m, d, s, &seed, 100 + 13 * k);
    testutil::perturbVelocities(m, d, &seed, 1.0, 0);
    std::vector<mjtNum> state = testutil::getState(m, d);
    std::vector<mjtNum> A(ndx * ndx), B(ndx * nu), P(ndx * np);
    ASSERT_EQ(mjdiff_stepJacobian(m, d, s, w, A.data(), B.data(), P.data(), err, sizeof(err)),
              MJDIFF_OK)
        << err;
    for (int i = 0; i < np; i++) {
      double h = 1e-4 * (v0[i] != 0 ? std::fabs(v0[i]) : 1);
      std::vector<mjtNum> R, J(ndx);
      ASSERT_TRUE(testutil::fdStepParamColumn(m, d, s, p, state, v0, i, h, &R));
      for (int r = 0; r < ndx; r++) J[r] = P[np * r + i];
      double e = relError(J, R, 1e-10 / h);
      worst = std::fmax(worst, e);
      EXPECT_LE(e, 1e-5) << mjdiff_paramName(p, i) << " sample " << k;
      EXPECT_GT(maxAbs(R), 1e-10 / h) << mjdiff_paramName(p, i);
    }
    shim_setState(m, d, state.data());
  }
  std::cout << "swimmer P (density, viscosity, wind): worst relative error " << worst << "\n";
  mjdiff_freeStepDeriv(w);
  mjdiff_freeParams(p);
}

TEST(FluidParams, Values) {
  testutil::Sim sim(nullptr, swimmerPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const char* names[] = {"option:density", "option:viscosity", "option:wind[1]"};
  mjdiffParams* p = nullptr;
  char err[500];
  ASSERT_EQ(mjdiff_makeParams(sim.sim.m, sim.sim.s, names, 3, &p, err, sizeof(err)), MJDIFF_OK)
      << err;
  mjtNum v[3];
  mjdiff_getParamValues(sim.sim.m, sim.sim.s, p, v);
  EXPECT_EQ(v[0], 1000);
  EXPECT_EQ(v[1], 0.001);
  EXPECT_EQ(v[2], 0);
  mjtNum set[3] = {900, 0.002, 0.5};
  EXPECT_EQ(mjdiff_setParamValues(sim.sim.m, sim.sim.s, p, set, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(sim.sim.m->opt.density, 900);
  EXPECT_EQ(sim.sim.m->opt.viscosity, 0.002);
  EXPECT_EQ(sim.sim.m->opt.wind[1], 0.5);
  mjtNum bad[3] = {-1, 0.002, 0.5};
  EXPECT_EQ(mjdiff_setParamValues(sim.sim.m, sim.sim.s, p, bad, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("option:density"), std::string::npos) << err;
  EXPECT_EQ(sim.sim.m->opt.density, 900);  // unchanged on error
  mjtNum bad2[3] = {900, -0.1, 0.5};
  EXPECT_EQ(mjdiff_setParamValues(sim.sim.m, sim.sim.s, p, bad2, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  mjdiff_freeParams(p);
}

//---------------------------------- the swimmer model ---------------------------------------------

// stable at its timestep and it swims: a travelling wave of the motors moves the head
TEST(FluidSwimmer, SwimsStably) {
  testutil::Sim sim(nullptr, swimmerPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  EXPECT_EQ(m->nu, 5);
  EXPECT_GT(m->opt.density, 0);
  char err[500];
  double maxSpeed = 0;
  int steps = (int)(10 / m->opt.timestep);
  for (int t = 0; t < steps; t++) {
    for (int i = 0; i < m->nu; i++) d->ctrl[i] = std::sin(2 * M_PI * (3.0 * d->time - 0.2 * i));
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_TRUE(shim_stateFinite(m, d));
    EXPECT_EQ(d->ncon, 0);
    maxSpeed = std::fmax(maxSpeed, std::hypot(d->qvel[0], d->qvel[1]));
  }
  std::cout << "swimmer: x " << d->qpos[0] << " m, y " << d->qpos[1]
            << " m in 10 s, peak head speed " << maxSpeed << " m/s\n";
  EXPECT_GT(d->qpos[0], 0.5);  // forward, head first
  EXPECT_LT(std::fabs(d->qpos[1]), 0.2);
  EXPECT_LT(maxSpeed, 2);
}

}  // namespace
