// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Analytic step Jacobians A = dx'/dx, B = dx'/du (and the VJP and JVP built on them) against
// centered finite differences of mjdiff_step, at random states of several models, with and without
// active contacts.
//
// Tolerance rationale: centered differences of a C2 map have truncation error O(eps^2 |f'''|) and
// rounding error O(ulp |x'| / eps). Measured on the floating-base model, the error against the
// analytic Jacobian falls as 1/eps from 1e-7 to 1e-4 (rounding-dominated: 1.1e-6, 1.2e-7, 1.1e-8,
// 1e-9 relative in A_vq), so eps = 1e-5 leaves rounding near 1e-7 relative (controls: 1e-3, as
// they reach the positions only at order h^2..h^3 and nearly linearly). Richardson
// extrapolation over (eps, 2 eps) removes the eps^2 term, which matters inside the narrow smoothing
// zones of the contact and limit laws (s''' ~ 1/w^2). We compare per block (A_qq, A_qv, ..., B_v)
// the max abs error against the block's max abs entry, floored at 1e-4: centered differences at
// eps = 1e-5 of states of order 1..10 carry ~1e-10 of absolute rounding error, so tinier blocks
// (RK4's B_q is h^3-small) are compared to 1e-10 absolute, what the differences resolve. We require
// 1e-6 relative -- except where the finite difference itself is
// unreliable (a piece boundary of a law within reach): a sample is skipped when the extrapolated
// differences over (eps, 2 eps) and (2 eps, 4 eps) disagree by more than the tolerance. At least
// 80% of the samples of each model must be compared.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <mjdiff/adjoint.h>

#include "alloc_count.h"
#include "../adjoint/derivative.h"
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::uniform;

// a random state near a simulated trajectory: run random controls from the initial state, then
// perturb velocities (keeps contacts realistic)
// (a random-control run that diverges is drawn again: these tests check derivatives at
// realistic states; stability under random controls is test_models' and test_defaults' subject)
void randomState(const mjModel* m, mjData* d, const mjdiffModel* s, unsigned long long* seed,
                 int nstep) {
  for (int attempt = 0; attempt < 5 && !testutil::simulateRandom(m, d, s, seed, nstep); attempt++) {
  }
  testutil::perturbVelocities(m, d, seed, 0.3, 0.1);
  shim_randomCtrl(m, d, seed);
  char err[500];
  mjdiff_forward(m, d, s, err, sizeof(err));  // normalises quaternions, as every call does
  testutil::ctrlInsideRange(m, d);
}

struct Block {
  const char* name;
  int r0, r1, c0, c1;
};

// worst relative error over the blocks of [A B]
double blockError(const mjModel* m, const std::vector<mjtNum>& J, const std::vector<mjtNum>& F,
                  std::string* worst) {
  int nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na, ncol = ndx + nu;
  Block blocks[] = {
    {"A_qq", 0, nv, 0, nv}, {"A_qv", 0, nv, nv, 2 * nv}, {"A_vq", nv, 2 * nv, 0, nv},
    {"A_vv", nv, 2 * nv, nv, 2 * nv}, {"A_qa", 0, nv, 2 * nv, ndx},
    {"A_va", nv, 2 * nv, 2 * nv, ndx}, {"A_aa", 2 * nv, ndx, 2 * nv, ndx},
    {"A_aq", 2 * nv, ndx, 0, 2 * nv}, {"B_q", 0, nv, ndx, ncol}, {"B_v", nv, 2 * nv, ndx, ncol},
    {"B_a", 2 * nv, ndx, ndx, ncol},
  };
  double worstErr = 0;
  for (const Block& b : blocks) {
    double e = testutil::blockRelError(J, F, ncol, b.r0, b.r1, b.c0, b.c1);
    if (e > worstErr) {
      worstErr = e;
      if (worst) *worst = b.name;
    }
  }
  return worstErr;
}

// the model xml (timestep 0.002) integrated by RK4
std::string withRK4(std::string xml) {
  xml.replace(xml.find("timestep=\"0.002\""), 16, "timestep=\"0.002\" integrator=\"RK4\"");
  return xml;
}

// compare at nsample random states; returns the worst error, counts compared and contact samples
void checkModel(const char* xml, const char* path, int nsample, double tol, int nwarm,
                bool needContacts = false) {
  testutil::StepSim sim(xml, path);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int ndx = 2 * m->nv + m->na, nu = m->nu, ncol = ndx + nu;
  unsigned long long seed = 12345;
  int compared = 0, withContact = 0;
  long skippedColumns = 0;
  double worst = 0;
  std::string worstBlock;
  char err[1000];
  for (int k = 0; k < nsample; k++) {
    randomState(m, d, sim.sim.s, &seed, nwarm + 7 * k);
    std::vector<mjtNum> state = testutil::getState(m, d);

    std::vector<mjtNum> A(ndx * ndx), B(ndx * (nu > 0 ? nu : 1));
    ASSERT_EQ(mjdiff_stepJacobian(m, d, sim.sim.s, sim.w, A.data(), B.data(), nullptr, err,
                                  sizeof(err)),
              MJDIFF_OK) << err;

    // the call leaves the state as it found it
    std::vector<mjtNum> after = testutil::getState(m, d);
    EXPECT_EQ(0, std::memcmp(state.data(), after.data(), state.size() * sizeof(mjtNum)));
    int active = d->ncon;

    std::vector<mjtNum> J = testutil::joinAB(ndx, nu, A, B);
    // Richardson-extrapolated centered differences (the eps^2 term cancels), at two scales
    std::vector<mjtNum> F1, F2;
    std::string failure;
    testutil::fdStepJacobians(m, d, sim.sim.s, state, 1e-5, &F1, &F2, &failure);
    EXPECT_TRUE(failure.empty()) << "a finite-difference step failed: " << failure;
    // finite differences are unreliable in a column where a law's kink or steep curvature lies
    // within the stencil (4 eps): such columns are not compared, a state only when over half
    // its columns are such (mjdiff-check's rule)
    std::vector<char> noisy;
    int nnoisy = testutil::noisyColumns(m, F1, F2, tol, &noisy);
    if (2 * nnoisy > ncol) {
      std::string noisyBlock;
      double fdNoise = blockError(m, F1, F2, &noisyBlock);
      std::cout << "sample " << k << " skipped: finite differences disagree by " << fdNoise
                << " in " << noisyBlock << " (" << nnoisy << " of " << ncol << " columns)\n";
      continue;
    }
    skippedColumns += nnoisy;
    compared++;
    withContact += active > 0;
    std::vector<mjtNum> Jc = testutil::withColumnsOf(J, F1, noisy, ncol);
    std::string block;
    double e = blockError(m, Jc, F1, &block);
    if (e > worst) {
      worst = e;
      worstBlock = block;
    }
    EXPECT_LE(e, tol) << "sample " << k << " block " << block << " (ncon " << active << ")";

    // guard: the analytic and finite-difference matrices were computed differently
    EXPECT_NE(0, std::memcmp(J.data(), F1.data(), J.size() * sizeof(mjtNum)));

    // consistency: l . JVP(v) == VJP(l) . v
    std::vector<mjtNum> l(ndx), v(ndx), vu(nu > 0 ? nu : 1), jv(ndx), lx(ndx), lu(nu > 0 ? nu : 1);
    for (auto& x : l) x = uniform(&seed) - 0.5;
    for (auto& x : v) x = uniform(&seed) - 0.5;
    for (auto& x : vu) x = uniform(&seed) - 0.5;
    ASSERT_EQ(mjdiff_stepJVP(m, d, sim.sim.s, sim.w, v.data(), vu.data(), nullptr, jv.data(), err,
                             sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_stepVJP(m, d, sim.sim.s, sim.w, l.data(), lx.data(), lu.data(), nullptr, err,
                             sizeof(err)), MJDIFF_OK) << err;
    // the products agree with the full Jacobians (computed apart in the Euler case)
    EXPECT_LE(testutil::productError(J, ndx, nu, l.data(), lx.data(), lu.data(), v.data(),
                                     vu.data(), jv.data()), 1e-10) << "sample " << k;
    double lhs = mju_dot(l.data(), jv.data(), ndx);
    double rhs = mju_dot(lx.data(), v.data(), ndx) + (nu ? mju_dot(lu.data(), vu.data(), nu) : 0);
    EXPECT_NEAR(lhs, rhs, 1e-10 * std::fmax(1, std::fabs(lhs)));
  }
  std::cout << (path ? path : "inline") << ": compared " << compared << "/" << nsample
            << " states (" << withContact << " with contacts; " << skippedColumns
            << " of their columns not compared), worst relative error " << worst << " in "
            << worstBlock << "\n";
  EXPECT_GE(compared, (int)(0.8 * nsample));
  EXPECT_LE(skippedColumns, (long)compared * ncol / 10);  // at most a tenth of the columns
  if (needContacts) {
    EXPECT_GT(withContact, 0);
  }
}

const char* kPendulum = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="j0" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1"/>
      <body pos="0 0 -0.5">
        <joint name="j1" type="hinge" axis="1 0 0" stiffness="2" limited="true" range="-1 1"/>
        <joint name="j2" type="slide" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 -0.3" size="0.04" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="j0" ctrlrange="-1 1" ctrllimited="true"/>
    <position joint="j1" kp="5" ctrlrange="-1 1" ctrllimited="true"/>
    <velocity joint="j2" kv="2"/>
  </actuator>
</mujoco>)";

const char* kFloating = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.05" mass="2"/>
      <body pos="0.1 0 0">
        <joint type="ball" damping="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.3"/>
        <body pos="0.3 0 0">
          <joint name="h" type="hinge" axis="0 0 1"/>
          <geom type="sphere" size="0.05" mass="0.2"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="h" dyntype="filter" dynprm="0.1" gainprm="3" ctrlrange="-1 1"
             ctrllimited="true"/>
  </actuator>
</mujoco>)";

const char* kSphereFloor = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_contact_stiffness" data="3000"/></custom>
  <worldbody>
    <geom type="plane" size="2 2 0.1" friction="0.8 0.02 0.001"/>
    <body pos="0 0 0.099">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="6"/>
    </body>
  </worldbody>
</mujoco>)";

// site transmissions: a floating quadrotor-like body with four thrusters (force along the site's
// z, a yaw torque; one through a first-order filter), and a site on a two-hinge arm driven by a
// general actuator whose bias depends on the site's velocity (force_V), all wrenches turning
// with the bodies; feet on the floor for contacts
const char* kSiteActuators = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_contact_stiffness" data="3000"/></custom>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="drone" pos="0 0 0.3" euler="0.2 -0.1 0.3">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.02" mass="0.5"/>
      <geom type="sphere" pos="0 0 -0.05" size="0.03" mass="0.05"/>
      <site name="r1" pos="0.1 0.1 0.02" euler="0.1 0 0"/>
      <site name="r2" pos="-0.1 0.1 0.02"/>
      <site name="r3" pos="-0.1 -0.1 0.02" euler="0 0.2 0"/>
      <site name="r4" pos="0.1 -0.1 0.02"/>
    </body>
    <body name="arm" pos="1 0 0.5">
      <joint name="h1" type="hinge" axis="0 0 1" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.3" contype="0" conaffinity="0"/>
      <body pos="0.3 0 0">
        <joint name="h2" type="hinge" axis="0 1 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0.1" size="0.02" mass="0.2" contype="0" conaffinity="0"/>
        <site name="tip" pos="0.2 0 0.1" euler="0.3 0.2 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor site="r1" gear="0 0 1 0 0 0.02" ctrlrange="0 4" ctrllimited="true"/>
    <motor site="r2" gear="0 0 1 0 0 -0.02" ctrlrange="0 4" ctrllimited="true"/>
    <motor site="r4" gear="0.1 0 1 0 0 -0.02" ctrlrange="0 4" ctrllimited="true"/>
    <general site="tip" gear="0.3 0.5 1 0.1 0 0.05" biastype="affine" biasprm="0 0 -0.8" ctrlrange="-1 1" ctrllimited="true"/>
    <general site="r3" gear="0 0 1 0 0 0.02" dyntype="filter" dynprm="0.05" ctrlrange="0 4" ctrllimited="true"/>
  </actuator>
</mujoco>)";

// muscles (MuJoCo's length-velocity gain, passive bias and activation dynamics): on a spatial
// tendon over a two-hinge arm (biceps-like, wrapping a cylinder at the elbow), a triceps on a
// fixed tendon, and one on the shoulder joint with a tight length range, so that its length
// crosses the curves' pieces
const char* kMuscles = R"(
<mujoco>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <site name="s0" pos="-0.05 0 0.05"/>
    <body name="upper">
      <joint name="shoulder" type="hinge" axis="0 1 0" limited="true" range="-1.5 1.5" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
      <site name="s1" pos="0.1 0 0.04"/>
      <geom name="elbow_wrap" type="cylinder" pos="0.3 0 0" zaxis="0 1 0" size="0.03 0.02" contype="0" conaffinity="0" rgba="0 0 1 0.2"/>
      <site name="side" pos="0.3 0 0.06"/>
      <body name="fore" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" limited="true" range="-2 0.2" damping="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025" mass="0.6"/>
        <site name="s2" pos="0.08 0 0.03"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="biceps">
      <site site="s0"/><site site="s1"/><geom geom="elbow_wrap" sidesite="side"/><site site="s2"/>
    </spatial>
    <fixed name="triceps"><joint joint="elbow" coef="0.02"/><joint joint="shoulder" coef="-0.01"/></fixed>
  </tendon>
  <actuator>
    <muscle name="bic" tendon="biceps" force="40"/>
    <muscle name="tri" tendon="triceps" force="30"/>
    <muscle name="sh" joint="shoulder" force="20" lengthrange="-1.6 1.6" range="0.7 1.3" lmin="0.6" lmax="1.4"/>
  </actuator>
</mujoco>)";

// slider-crank transmissions: MuJoCo's sample layout (slider on the world, on a child: its axis
// turns with the joint; a crank too short, det <= 0) on ball and hinge joints, with position and
// velocity feedback (force_L, force_V), so the moment's derivative enters through every term
const char* kSliderCrank = R"(
<mujoco>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <site name="s0" pos="0 -0.1 0" zaxis="1 0.5 0.2"/>
    <body name="a">
      <joint name="ball" type="ball" damping="0.1"/>
      <geom type="capsule" size="0.01" fromto="0 0 0 0.2 0 0" mass="0.2"/>
      <site name="c0" pos="0.1 0 0"/>
      <site name="c1" pos="0.2 0 0.01"/>
      <body name="b" pos="0.15 0 0">
        <joint name="h" type="hinge" axis="0 0.3 1" damping="0.1"/>
        <geom type="capsule" size="0.01" fromto="0 -0.15 0 0 0 0" mass="0.1"/>
        <site name="s1" pos="0.02 -0.1 0.01" zaxis="1 2 0.3"/>
      </body>
    </body>
    <site name="s2" pos="0 0.1 0" zaxis="1 0.2 0"/>
    <body name="c" pos="0 0.2 0">
      <joint name="h2" type="hinge" axis="0 0 1" damping="0.1"/>
      <geom type="capsule" size="0.01" fromto="0 0 0 0.15 0 0" mass="0.1"/>
      <site name="c2" pos="0.1 0 0"/>
    </body>
  </worldbody>
  <actuator>
    <general cranksite="c0" slidersite="s0" cranklength="0.08" gear="1.5" biastype="affine" biasprm="0 -20 -0.5" gainprm="20"/>
    <general cranksite="c1" slidersite="s1" cranklength="0.06" biastype="affine" biasprm="0 -10 -0.3" gainprm="10"/>
    <position cranksite="c2" slidersite="s2" cranklength="0.05" kp="5"/>
  </actuator>
</mujoco>)";

// every smooth force but contacts: connect, weld, joint and tendon equalities, joint, ball and
// tendon limits, dof and tendon friction loss, springs, and an applied body wrench
const char* kConstraints = R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <custom>
    <numeric name="mjdiff_eq_stiffness" data="500"/>
    <numeric name="mjdiff_eq_damping" data="5"/>
    <numeric name="mjdiff_limit_stiffness" data="500"/>
    <numeric name="mjdiff_limit_width" data="0.05"/>
  </custom>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="a1" type="hinge" axis="0 1 0" limited="true" range="-0.3 0.3" frictionloss="0.2"/>
      <joint name="a2" type="hinge" axis="1 0 0" stiffness="3" springref="0.1" armature="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <body name="b" pos="0.3 0 0">
        <joint name="b1" type="ball" limited="true" range="0 0.4" damping="0.02"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.4"/>
        <site name="btip" pos="0.3 0 0"/>
      </body>
    </body>
    <body name="c" pos="0.6 0.2 1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="1"/>
    </body>
    <body name="e" pos="0 0.5 1">
      <joint name="e1" type="slide" axis="0 0 1"/>
      <joint name="e2" type="hinge" axis="0 0 1" armature="0.2"/>
      <geom type="sphere" size="0.05" mass="0.2"/>
    </body>
  </worldbody>
  <equality>
    <connect body1="c" body2="b" anchor="0 -0.1 0"/>
    <weld body1="e" body2="a" torquescale="0.3"/>
    <joint joint1="e2" joint2="a2" polycoef="0 0.5 0.2 0 0"/>
  </equality>
  <tendon>
    <fixed name="t" limited="true" range="-0.2 0.2" frictionloss="0.1" stiffness="4">
      <joint joint="a1" coef="1"/>
      <joint joint="e1" coef="-0.5"/>
    </fixed>
  </tendon>
  <actuator>
    <motor tendon="t" gear="2" ctrlrange="-1 1" ctrllimited="true"/>
    <position joint="e1" kp="20" ctrlrange="-0.5 0.5" ctrllimited="true"/>
  </actuator>
</mujoco>)";

TEST(StepDeriv, ConstraintsEuler) {
  checkModel(kConstraints, nullptr, 20, 1e-6, 60);
}

TEST(StepDeriv, ConstraintsRK4) {
  checkModel(withRK4(kConstraints).c_str(), nullptr, 20, 1e-6, 60);
}

TEST(StepDeriv, PendulumEuler) {
  checkModel(kPendulum, nullptr, 20, 1e-6, 50);
}

TEST(StepDeriv, FloatingBallJointsEuler) {
  checkModel(kFloating, nullptr, 20, 1e-6, 50);
}

TEST(StepDeriv, FloatingRK4) {
  checkModel(withRK4(kFloating).c_str(), nullptr, 20, 1e-6, 50);
}

TEST(StepDeriv, SiteTransmissionsEuler) {
  checkModel(kSiteActuators, nullptr, 20, 1e-6, 40);
}

TEST(StepDeriv, SiteTransmissionsRK4) {
  checkModel(withRK4(kSiteActuators).c_str(), nullptr, 20, 1e-6, 40);
}

TEST(StepDeriv, MusclesEuler) {
  checkModel(kMuscles, nullptr, 20, 1e-6, 40);
}

#if mjVERSION_HEADER >= 3000000
// MuJoCo 3's smoothed switch between the activation and deactivation time constants
TEST(StepDeriv, MusclesSmoothedTimescale) {
  std::string xml = kMuscles;
  std::string tri = "<muscle name=\"tri\" tendon=\"triceps\" force=\"30\"";
  xml.replace(xml.find(tri), tri.size(), tri + " tausmooth=\"0.2\"");
  checkModel(xml.c_str(), nullptr, 20, 1e-6, 40);
}
#endif

#if mjVERSION_HEADER >= 3000000
// MuJoCo 3's gravity compensation: full (1), partial (0.6) and through the actuators
// (actuatorgravcomp) on a ball-and-hinge arm under a tilted gravity, a floating body at 0.5
const char* kGravcomp = R"(
<mujoco>
  <option timestep="0.002" gravity="0.5 -1 -9.81"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1" gravcomp="1">
      <joint name="ball" type="ball" damping="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0.05 0" size="0.03" mass="1"/>
      <body name="b" pos="0.3 0.05 0" gravcomp="0.6">
        <joint name="h" type="hinge" axis="0 1 0.2" damping="0.1" actuatorgravcomp="true"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 -0.05" size="0.025" mass="0.7"/>
      </body>
    </body>
    <body name="f" pos="1 0 1" gravcomp="0.5">
      <freejoint/>
      <geom type="box" size="0.05 0.08 0.03" pos="0.02 0 0" mass="0.4"/>
    </body>
  </worldbody>
  <actuator><motor joint="h" gear="1" ctrlrange="-1 1" ctrllimited="true"/></actuator>
</mujoco>)";

// MuJoCo 3's joint actuator force limits (actuatorfrcrange): two motors on one hinge whose sum is
// clipped at most states, a position servo on a slide clipped some of the time; gravity
// compensation (passive) below them
const char* kActuatorForceRange = R"(
<mujoco>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h" type="hinge" axis="0 1 0" damping="0.1" actuatorfrcrange="-0.4 0.3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <body name="b" pos="0.3 0 0" gravcomp="0.5">
        <joint name="s" type="slide" axis="1 0 0.2" damping="0.5" actuatorfrcrange="-1 1"/>
        <geom type="box" size="0.05 0.05 0.05" mass="0.3"/>
        <body name="c" pos="0.1 0 0">
          <joint name="ball" type="ball" damping="0.05" actuatorfrcrange="-0.05 0.05"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0.05" size="0.02" mass="0.2"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="h" gear="1" ctrlrange="-1 1" ctrllimited="true"/>
    <motor joint="h" gear="0.5" ctrlrange="-1 1" ctrllimited="true"/>
    <position joint="s" kp="20" ctrlrange="-0.2 0.2" ctrllimited="true"/>
  </actuator>
</mujoco>)";

// MuJoCo 3's site semantics for connect and weld (site1/site2): a ball-jointed link connected at a
// site to a free body's site, and a free body welded to a link by two turned site frames
const char* kSiteEqualities = R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="ball" type="ball" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <site name="a_end" pos="0.3 0 0" euler="0.3 0.2 0.1"/>
    </body>
    <body name="f" pos="0.355 0.002 0.99" euler="0.2 0 0">
      <freejoint/>
      <geom type="box" size="0.05 0.04 0.03" mass="0.3"/>
      <site name="f_s" pos="-0.05 0 0.01"/>
    </body>
    <body name="c" pos="0 0.5 1">
      <joint name="h" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.3"/>
      <site name="c_end" pos="0.2 0 0" euler="0 0.4 0.2"/>
    </body>
    <body name="g" pos="0.2 0.5 0.98" euler="0 0.4 0.2">
      <freejoint/>
      <geom type="sphere" size="0.04" mass="0.2"/>
      <site name="g_s" pos="0 0 0.02" euler="0.25 0 0"/>
    </body>
  </worldbody>
  <equality>
    <connect site1="a_end" site2="f_s"/>
    <weld site1="c_end" site2="g_s" torquescale="0.5"/>
  </equality>
</mujoco>)";

TEST(StepDeriv, SiteEqualities) {
  checkModel(kSiteEqualities, nullptr, 20, 1e-6, 40);
}

// the welded site frames come together: from the mismatched start the smooth weld pulls the two
// sites' positions and orientations into agreement (gravity off, 2 s)
TEST(StepDeriv, SiteWeldHoldsTheSiteFrames) {
  std::string xml = kSiteEqualities;
  xml.replace(xml.find("<option timestep=\"0.002\"/>"), 26, "<option timestep=\"0.002\" gravity=\"0 0 0\"/>");
  testutil::StepSim sim(xml.c_str(), nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[500];
  auto gap = [&](int s1, int s2, double* rot) {
    mjtNum q1[4], q2[4], dq[4], inv[4], v[3];
    mju_mat2Quat(q1, d->site_xmat + 9 * s1);
    mju_mat2Quat(q2, d->site_xmat + 9 * s2);
    mju_negQuat(inv, q2);
    mju_mulQuat(dq, q1, inv);
    mju_quat2Vel(v, dq, 1);
    *rot = mju_norm3(v);
    return mju_dist3(d->site_xpos + 3 * s1, d->site_xpos + 3 * s2);
  };
  int c_end = mj_name2id(m, mjOBJ_SITE, "c_end"), g_s = mj_name2id(m, mjOBJ_SITE, "g_s");
  int a_end = mj_name2id(m, mjOBJ_SITE, "a_end"), f_s = mj_name2id(m, mjOBJ_SITE, "f_s");
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  double rot0, rotc;
  double pos0 = gap(c_end, g_s, &rot0), con0 = gap(a_end, f_s, &rotc);
  for (int k = 0; k < 1000; k++) ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  double rot1, rotc1;
  double pos1 = gap(c_end, g_s, &rot1), con1 = gap(a_end, f_s, &rotc1);
  printf("site weld: position gap %.3g -> %.3g m, rotation %.3g -> %.3g rad; site connect %.3g -> %.3g m\n",
         pos0, pos1, rot0, rot1, con0, con1);
  EXPECT_GT(rot0, 0.2);
  EXPECT_LT(pos1, 0.05 * pos0);
  EXPECT_LT(rot1, 0.05 * rot0);
  EXPECT_LT(con1, 0.05 * con0);
}

TEST(StepDeriv, ActuatorForceRange) {
  checkModel(kActuatorForceRange, nullptr, 20, 1e-6, 40);
}

// the clipped dofs' rows hold no actuator term of any transmission: a site thruster and a spatial
// tendon actuator act through the clipped hinge too (their derivative has parts beyond the
// moment: the body Jacobian's motion, the tendon length's Hessian)
const char* kActuatorForceRangeMixed = R"(
<mujoco>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <site name="anchor" pos="0.2 0 1.3"/>
    <body name="a" pos="0 0 1">
      <joint name="h" type="hinge" axis="0 1 0" damping="0.1" actuatorfrcrange="-0.2 0.2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <site name="mid" pos="0.15 0 0.03"/>
      <body name="b" pos="0.3 0 0">
        <joint name="s" type="slide" axis="1 0 0.2" damping="0.5"/>
        <geom type="box" size="0.05 0.05 0.05" mass="0.3"/>
        <site name="thrust" pos="0.05 0 0.02" zaxis="0.2 0 1"/>
      </body>
    </body>
  </worldbody>
  <tendon><spatial name="rope"><site site="anchor"/><site site="mid"/><site site="thrust"/></spatial></tendon>
  <actuator>
    <motor joint="h" gear="0.5" ctrlrange="-1 1" ctrllimited="true"/>
    <motor site="thrust" gear="0 0 2 0 0 0.1" ctrlrange="0 1" ctrllimited="true"/>
    <general tendon="rope" gainprm="3" biastype="affine" biasprm="0 -5 -0.5" ctrlrange="-1 0" ctrllimited="true"/>
  </actuator>
</mujoco>)";

TEST(StepDeriv, ActuatorForceRangeWithSiteAndTendon) {
  checkModel(kActuatorForceRangeMixed, nullptr, 20, 1e-6, 40);
}

TEST(StepDeriv, GravityCompensation) {
  checkModel(kGravcomp, nullptr, 20, 1e-6, 40);
}

#endif

TEST(StepDeriv, MusclesRK4) {
  checkModel(withRK4(kMuscles).c_str(), nullptr, 20, 1e-6, 40);
}

// actuators on ball and free joints (gear in the joint's frame: a constant moment). A ball's
// length is gear . log(q): its q-derivative needs J_r^-1(log q) (forces_d.c, ballLengthGradient;
// with the moment in its place the error is 0.69 in A_vq); a free joint's length is 0. The
// position servo's gear (1 0 0) has zeros where the length's gradient does not (those columns
// were once skipped: A_vq error 1.0)
const char* kBallFreeActuators = R"(
<mujoco>
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.002"/>
  <worldbody>
    <body name="p" pos="0 0 1">
      <joint name="ball" type="ball" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0.1 -0.2" size="0.03" mass="0.5" contype="0" conaffinity="0"/>
    </body>
    <body name="f" pos="0.6 0 1">
      <joint name="free" type="free" damping="0.2"/>
      <geom type="box" size="0.1 0.15 0.06" mass="2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <general joint="ball" gear="1 0.5 -0.3" biastype="affine" biasprm="0 -2 -0.01" ctrlrange="-1 1"/>
    <general joint="ball" gear="0 0.2 1" gainprm="0.5" ctrlrange="-1 1"/>
    <general joint="ball" gear="1 0 0" gainprm="1" biastype="affine" biasprm="0 -1 -0.005" ctrlrange="-1 1"/>
    <general joint="free" gear="0 0 20 0.05 0 0.02" biastype="affine" biasprm="0 -1 -0.2" ctrlrange="-1 1"/>
  </actuator>
</mujoco>)";

TEST(StepDeriv, BallFreeActuatorsEuler) {
  checkModel(kBallFreeActuators, nullptr, 20, 1e-6, 60);
}

TEST(StepDeriv, BallFreeActuatorsRK4) {
  checkModel(withRK4(kBallFreeActuators).c_str(), nullptr, 20, 1e-6, 60);
}

// jointinparent on a ball joint turns its gear with the joint: refused by name
TEST(StepDeriv, BallJointInParentRefusedByName) {
  std::string xml = kBallFreeActuators;
  xml.replace(xml.find("<general joint=\"ball\" gear=\"0 0.2 1\""), 22, "<general jointinparent=\"ball\"");
  testutil::Sim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjdiffStepDeriv* w = nullptr;
  char err[1000] = "";
  EXPECT_EQ(mjdiff_makeStepDeriv(sim.sim.m, sim.sim.s, nullptr, &w, err, sizeof(err)),
            MJDIFF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("jointinparent"), std::string::npos) << err;
  mjdiff_freeStepDeriv(w);
}

// body transmissions (adhesion actuators, as MuJoCo's active_adhesion sample): testutil::kAdhesion
using testutil::kAdhesion;


TEST(StepDeriv, BodyTransmissionsEuler) {
  checkModel(kAdhesion, nullptr, 20, 1e-6, 60, true);
}

// (no RK4 variant: under its four stages the contact law's curvature leaves the finite
// differences of 7 of 20 states disagreeing by 3e-6..5e-5, below the 0.8 the check needs; the 13
// compared agree to 1.1e-8)

TEST(StepDeriv, SliderCrankEuler) {
  checkModel(kSliderCrank, nullptr, 20, 1e-6, 40);
}

TEST(StepDeriv, SliderCrankRK4) {
  checkModel(withRK4(kSliderCrank).c_str(), nullptr, 20, 1e-6, 40);
}

TEST(StepDeriv, SphereOnFloorWithContact) {
  checkModel(kSphereFloor, nullptr, 20, 1e-6, 100, true);
}

// substeps (mjdiff_substeps n: n smooth steps of timestep / n per mjdiff_step): the Jacobians
// chained over the substeps, against finite differences of the whole step
std::string withSubsteps(const std::string& xml, int n) {
  return testutil::withNumerics(
      xml, "<numeric name=\"mjdiff_substeps\" data=\"" + std::to_string(n) + "\"/>");
}

TEST(StepDerivSubsteps, ConstraintsEuler) {
  checkModel(withSubsteps(kConstraints, 3).c_str(), nullptr, 20, 1e-6, 60);
}

TEST(StepDerivSubsteps, ConstraintsRK4) {
  checkModel(withSubsteps(withRK4(kConstraints), 2).c_str(), nullptr, 20, 1e-6, 60);
}

TEST(StepDerivSubsteps, SphereOnFloorWithContact) {
  checkModel(withSubsteps(kSphereFloor, 4).c_str(), nullptr, 20, 1e-6, 100, true);
}

TEST(StepDerivSubsteps, Muscles) {
  checkModel(withSubsteps(kMuscles, 3).c_str(), nullptr, 20, 1e-6, 40);
}

TEST(StepDerivSubsteps, BodyTransmissions) {
  checkModel(withSubsteps(kAdhesion, 2).c_str(), nullptr, 20, 1e-6, 60, true);
}

// the products chained over substeps on a model with ndx >= 16 (three free spheres resting on a
// floor, 3 substeps: the chain's product runs at 36 x 36 by 36 x 36, where mjdiff_gemm would take
// BLIS, whose OpenMP build allocates per call) allocate nothing after the first call; the guard:
// the counter sees an allocation
TEST(StepDerivSubsteps, ProductsAllocateNothing) {
  std::string xml = withSubsteps(R"(<mujoco><option timestep="0.002"/><worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
    <body pos="0.5 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
    <body pos="1 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody></mujoco>)", 3);
  testutil::StepSim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  ASSERT_EQ(mjdiff_substepCount(sim.sim.s), 3);
  int ndx = 2 * m->nv + m->na;
  ASSERT_GE(ndx, 16);
  std::vector<mjtNum> A(ndx * ndx), lam(ndx, 1.0), ax(ndx), dx(ndx, 0.1), out(ndx);
  char err[500];
  for (int k = 0; k < 20; k++) ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_stepJacobian(m, d, sim.sim.s, sim.w, A.data(), nullptr, nullptr, err, sizeof(err)),
            MJDIFF_OK) << err;
  gAllocs = 0;
  gCounting = 1;
  void* volatile guard = malloc(16);  // volatile: -O2 elides a malloc/free pair otherwise
  gCounting = 0;
  free(guard);
  EXPECT_GT(gAllocs.load(), 0) << "the counter sees no allocation";
  gAllocs = 0;
  gCounting = 1;
  mjdiffStatus s1 = mjdiff_stepJacobian(m, d, sim.sim.s, sim.w, A.data(), nullptr, nullptr, err,
                                        sizeof(err));
  mjdiffStatus s2 = mjdiff_stepVJP(m, d, sim.sim.s, sim.w, lam.data(), ax.data(), nullptr, nullptr,
                                   err, sizeof(err));
  mjdiffStatus s3 = mjdiff_stepJVP(m, d, sim.sim.s, sim.w, dx.data(), nullptr, nullptr, out.data(),
                                   err, sizeof(err));
  gCounting = 0;
  EXPECT_EQ(s1, MJDIFF_OK);
  EXPECT_EQ(s2, MJDIFF_OK);
  EXPECT_EQ(s3, MJDIFF_OK) << err;
  EXPECT_EQ(gAllocs.load(), 0) << "allocations in the chained Jacobian, VJP or JVP";
}

// the VJP over substeps sweeps forward (substeps 1 .. n-1 kept as records) and differentiates
// substep 0 last: d's state is left bit for bit and its derived quantities are those of the
// forward pass at the start state, as the API documents (a walk ending at x_{n-1} would leave
// them there); the same VJP twice gives the same bits
TEST(StepDerivSubsteps, VJPLeavesForwardPassAtStart) {
  std::string xml = withSubsteps(kSphereFloor, 4);
  testutil::StepSim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  ASSERT_EQ(mjdiff_substepCount(sim.sim.s), 4);
  char err[500];
  for (int k = 0; k < 30; k++) {
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  }
  int ndx = 2 * m->nv + m->na;
  std::vector<mjtNum> lam(ndx), ax(ndx), ax2(ndx);
  for (int i = 0; i < ndx; i++) lam[i] = 0.3 + 0.1 * i;
  std::vector<mjtNum> q0(d->qpos, d->qpos + m->nq), v0(d->qvel, d->qvel + m->nv);
  mjtNum t0 = d->time;
  ASSERT_EQ(mjdiff_stepVJP(m, d, sim.sim.s, sim.w, lam.data(), ax.data(), nullptr, nullptr, err,
                           sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(0, std::memcmp(q0.data(), d->qpos, sizeof(mjtNum) * m->nq));
  EXPECT_EQ(0, std::memcmp(v0.data(), d->qvel, sizeof(mjtNum) * m->nv));
  EXPECT_EQ(t0, d->time);
  mjData* ref = mj_makeData(m);
  mj_copyData(ref, m, d);
  ASSERT_EQ(mjdiff_forward(m, ref, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_GT(ref->ncon, 0);
  EXPECT_EQ(d->ncon, ref->ncon);
  EXPECT_EQ(0, std::memcmp(d->qacc, ref->qacc, sizeof(mjtNum) * m->nv));
  EXPECT_EQ(0, std::memcmp(d->xpos, ref->xpos, sizeof(mjtNum) * 3 * m->nbody));
  EXPECT_EQ(0, std::memcmp(d->qfrc_passive, ref->qfrc_passive, sizeof(mjtNum) * m->nv));
  mj_deleteData(ref);
  ASSERT_EQ(mjdiff_stepVJP(m, d, sim.sim.s, sim.w, lam.data(), ax2.data(), nullptr, nullptr, err,
                           sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(0, std::memcmp(ax.data(), ax2.data(), sizeof(mjtNum) * ndx));
}

// the derived substeps at a 5 ms step (MuJoCo's humanoid, 5 substeps, is in StepDerivModels)
TEST(StepDerivSubsteps, DerivedAtFiveMilliseconds) {
  std::string xml = kSphereFloor;
  xml.replace(xml.find("timestep=\"0.002\""), 16, "timestep=\"0.005\"");
  const std::string stiff = "<numeric name=\"mjdiff_contact_stiffness\" data=\"3000\"/>";
  // derived stiffness and damping; a 1 cm width, so that the sphere rests where the law's third
  // derivative (1 / w^2 in the ramp) leaves finite differences reliable
  xml.replace(xml.find(stiff), stiff.size(), "<numeric name=\"mjdiff_contact_width\" data=\"0.01\"/>");
  testutil::StepSim sim(xml.c_str(), nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  ASSERT_EQ(mjdiff_substepCount(sim.sim.s), 3);  // omega_match h = 2.8 caps
  checkModel(xml.c_str(), nullptr, 20, 1e-6, 100, true);
}

// the implicit smooth step (opt.integrator = 1): derivatives by the implicit function theorem at
// the converged Newton step, against finite differences of the same step
std::string withImplicit(const std::string& xml) {
  return testutil::withNumerics(xml, testutil::kImplicitTight);
}

TEST(StepDerivImplicit, Constraints) {
  checkModel(withImplicit(kConstraints).c_str(), nullptr, 20, 1e-6, 60);
}

TEST(StepDerivImplicit, FloatingBallJoints) {
  checkModel(withImplicit(kFloating).c_str(), nullptr, 20, 1e-6, 50);
}

// an RK4 model under the implicit step: backward Euler on the smooth forces, Euler on the rest
TEST(StepDerivImplicit, RK4ModelGetsImplicitEuler) {
  checkModel(withImplicit(withRK4(kConstraints)).c_str(), nullptr, 20, 1e-6, 60);
}

TEST(StepDerivImplicit, SiteTransmissions) {
  checkModel(withImplicit(kSiteActuators).c_str(), nullptr, 20, 1e-6, 40);
}

TEST(StepDerivImplicit, Muscles) {
  checkModel(withImplicit(kMuscles).c_str(), nullptr, 20, 1e-6, 40);
}

TEST(StepDerivImplicit, SliderCrank) {
  checkModel(withImplicit(kSliderCrank).c_str(), nullptr, 20, 1e-6, 40);
}

TEST(StepDerivImplicit, BallFreeActuators) {
  checkModel(withImplicit(kBallFreeActuators).c_str(), nullptr, 20, 1e-6, 60);
}

TEST(StepDerivImplicit, BodyTransmissions) {
  checkModel(withImplicit(kAdhesion).c_str(), nullptr, 20, 1e-6, 60, true);
}

#if mjVERSION_HEADER >= 3000000
TEST(StepDerivImplicit, GravityCompensation) {
  checkModel(withImplicit(kGravcomp).c_str(), nullptr, 20, 1e-6, 40);
}

TEST(StepDerivImplicit, ActuatorForceRange) {
  checkModel(withImplicit(kActuatorForceRange).c_str(), nullptr, 20, 1e-6, 40);
}
#endif

TEST(StepDerivImplicit, SphereOnFloorWithContact) {
  checkModel(withImplicit(kSphereFloor).c_str(), nullptr, 20, 1e-6, 100, true);
}

}  // namespace

class StepDerivImplicitModels : public ::testing::TestWithParam<const char*> {};

TEST_P(StepDerivImplicitModels, MatchesFiniteDifferences) {
  std::string path = GetParam();
  if (path.find('/') == std::string::npos) path = shim_modelPath(path.c_str());
  std::string xml = testutil::readFile(path);
  ASSERT_FALSE(xml.empty()) << path;
  checkModel(withImplicit(xml).c_str(), nullptr, 12, 1e-6, 150);
}

INSTANTIATE_TEST_SUITE_P(All, StepDerivImplicitModels,
                         ::testing::Values("cartpole.xml", "hopper.xml", "arm_box.xml",
                                           "quadruped.xml", "biped.xml", "ball_cup.xml"));

// every bundled model and MuJoCo's humanoid, near trajectories under random controls (contacts
// active in most samples of the legged models and the arm with the box)
class StepDerivModels : public ::testing::TestWithParam<const char*> {};

TEST_P(StepDerivModels, MatchesFiniteDifferences) {
  std::string path = GetParam();
  if (path.find('/') == std::string::npos) path = shim_modelPath(path.c_str());
  checkModel(nullptr, path.c_str(), 20, 1e-6, 150);
}

INSTANTIATE_TEST_SUITE_P(All, StepDerivModels,
                         ::testing::Values("cartpole.xml", "acrobot.xml", "hopper.xml",
                                           "cheetah.xml", "arm_box.xml", "quadruped.xml",
                                           "/usr/share/mujoco/model/humanoid/humanoid.xml"));

#if mjVERSION_HEADER >= 3000000
namespace {

// MuJoCo 3's implicitfast integrator (plugin/step.c, implicitFast): v' = v + h (M + h B)^-1 f,
// B = dof damping - gear^2 biasprm[2] of the servos on each hinge (mjdiff_dampB), the servo
// skipped while its force is clamped by its forcerange. An arm of stiff position servos (kp 400,
// kv 40 on links of 0.1-0.4 kg: under Euler kv h / m_eff is past explicit Euler's bound), a
// joint limit, a fingertip that meets a floor box, and a two-finger gripper whose servo acts on a
// fixed tendon over both fingers (sibling bodies: MuJoCo keeps D's diagonal there): what
// Menagerie's arms (KUKA iiwa14, Franka FR3, UR5e; the xArm7's and Panda's tendon grippers) are,
// which the smooth model refused before ("integrator 3 (unknown)").
const char* kServoArm = R"(
<mujoco>
  <compiler autolimits="true" angle="radian"/>
  <option timestep="0.002" integrator="implicitfast"/>
  <worldbody>
    <geom name="floor" type="box" pos="0.3 0 0.05" size="0.5 0.5 0.05"/>
    <body name="l1" pos="0 0 0.2">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.5" range="-2 2"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.4" contype="0" conaffinity="0"/>
      <body name="l2" pos="0.2 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" damping="0.2"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.2" contype="0" conaffinity="0"/>
        <body name="l3" pos="0.2 0 0">
          <joint name="j3" type="slide" axis="1 0 0" range="-0.05 0.05"/>
          <geom name="tip" type="sphere" size="0.03" mass="0.1"/>
          <body name="fa" pos="0.04 0.02 0">
            <joint name="fa" type="slide" axis="0 1 0" damping="0.1"/>
            <geom type="box" size="0.01 0.005 0.01" mass="0.02" contype="0" conaffinity="0"/>
          </body>
          <body name="fb" pos="0.04 -0.02 0">
            <joint name="fb" type="slide" axis="0 -1 0" damping="0.1"/>
            <geom type="box" size="0.01 0.005 0.01" mass="0.02" contype="0" conaffinity="0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="p1" joint="j1" kp="400" kv="40" ctrlrange="-1.5 1.5"/>
    <position name="p2" joint="j2" kp="400" kv="40" ctrlrange="-2 2" forcerange="-30 30"/>
    <position name="p3" joint="j3" kp="400" kv="40" ctrlrange="-0.05 0.05"/>
    <motor name="m1" joint="j2" gear="2" ctrlrange="-1 1"/>
    <position name="grip" tendon="split" kp="20" kv="2" gear="2" ctrlrange="-0.01 0.02"/>
  </actuator>
  <tendon><fixed name="split"><joint joint="fa" coef="0.5"/><joint joint="fb" coef="0.5"/></fixed></tendon>
  <keyframe><key qpos="-0.8 0 0 0 0" ctrl="-0.8 0 0 0 0"/></keyframe>
</mujoco>)";

// the same text with another integrator
std::string withIntegrator(const char* xml, const char* integrator) {
  std::string s = xml;
  std::string key = "integrator=\"implicitfast\"";
  s.replace(s.find(key), key.size(), std::string("integrator=\"") + integrator + "\"");
  return s;
}

}  // namespace

TEST(StepDerivImplicitFast, ServoArmWithContactsAndLimits) {
  checkModel(kServoArm, nullptr, 20, 1e-6, 60, true);
}

TEST(StepDerivImplicitFast, UnderTheImplicitSmoothStep) {
  checkModel(withImplicit(kServoArm).c_str(), nullptr, 20, 1e-6, 60, true);
}

// without contacts or limits in reach the smooth step is MuJoCo's own implicitfast step (to
// rounding: the same formula, factored in the same layout); under Euler the same servos run away
TEST(StepDerivImplicitFast, IsMuJoCosStepWhereNoConstraintActs) {
  for (const char* integrator : {"implicitfast", "Euler"}) {
    std::string xml = withIntegrator(kServoArm, integrator);
    testutil::StepSim a(xml.c_str(), nullptr), b(xml.c_str(), nullptr);
    ASSERT_TRUE(a.ok && b.ok) << a.sim.err;
    const mjModel* m = a.sim.m;
    // from keyframe 0 (raised, the servos at their commands), a small command wave that keeps
    // the arm clear of the floor and the limits
    mj_resetDataKeyframe(a.sim.m, a.sim.d, 0);
    mj_resetDataKeyframe(b.sim.m, b.sim.d, 0);
    int nstep = 500, failed = -1;
    double worst = 0;
    char err[1000] = "";
    for (int t = 0; t < nstep && failed < 0; t++) {
      for (mjData* d : {a.sim.d, b.sim.d}) {
        d->ctrl[0] = -0.8 + 0.3 * std::sin(0.01 * t);
        d->ctrl[1] = -0.3 * std::sin(0.013 * t);
        d->ctrl[2] = 0.02 * std::sin(0.02 * t);
        d->ctrl[3] = 0.5 * std::sin(0.03 * t);
        d->ctrl[4] = 0.01 * std::sin(0.05 * t);
      }
      mj_step(a.sim.m, a.sim.d);
      if (mjdiff_step(b.sim.m, b.sim.d, b.sim.s, err, sizeof(err)) != MJDIFF_OK) failed = t;
      for (int i = 0; i < m->nv && failed < 0; i++) {
        worst = std::max(worst, std::fabs(a.sim.d->qvel[i] - b.sim.d->qvel[i]));
      }
      if (std::string(integrator) != "implicitfast") continue;
      ASSERT_EQ(b.sim.d->ncon, 0) << "the tip met the floor at step " << t;
      ASSERT_EQ(a.sim.d->nefc, 0) << "a constraint acted at step " << t;
    }
    if (std::string(integrator) == "implicitfast") {
      EXPECT_EQ(failed, -1) << err;
      EXPECT_LT(worst, 1e-9) << "largest qvel difference from mj_step";
    } else {
      EXPECT_GE(failed, 0) << "Euler held the servos (the case no longer needs implicitfast)";
      EXPECT_NE(std::string(err).find("diverged"), std::string::npos) << err;
    }
  }
}

namespace {

// MuJoCo 3's implicitfast block of a standalone free body (plugin/step.c): a box tumbling about
// its intermediate axis (its com off the body frame, its principal axes turned), a capsule holding
// a massless body (MuJoCo's mj_isFreeBody counts it standalone), and the servo arm beside them
std::string withTumblers(double z) {
  std::string xml = kServoArm;
  std::string bodies =
      "<body name=\"box\" pos=\"0.6 0 " + std::to_string(z) + "\"><freejoint/><geom type=\"box\" "
      "size=\"0.1 0.05 0.02\"/><inertial pos=\"0.02 0.01 -0.005\" quat=\"0.9 0.1 0.3 0.2\" "
      "mass=\"1.3\" diaginertia=\"0.01 0.007 0.004\"/></body><body name=\"capsule\" "
      "pos=\"0.6 0.2 " +
      std::to_string(z) + "\"><freejoint/><geom name=\"capsule\" type=\"capsule\" "
      "size=\"0.02 0.05\" "
      "mass=\"0.2\"/><body name=\"holder\"><site name=\"tag\"/></body></body></worldbody>";
  xml.replace(xml.find("</worldbody>"), std::strlen("</worldbody>"), bodies);
  xml.replace(xml.find("<key qpos=\"-0.8 0 0 0 0\""), std::strlen("<key qpos=\"-0.8 0 0 0 0\""),
              "<key qpos=\"-0.8 0 0 0 0 0.6 0 " + std::to_string(z) + " 1 0 0 0 0.6 0.2 " +
                  std::to_string(z) + " 1 0 0 0\"");
  return xml;
}

}  // namespace

// In flight (no contact) the smooth step is MuJoCo's implicitfast step with the free bodies'
// blocks, to rounding, from a spin about the box's intermediate axis (15 rad/s; the capsule 20
// rad/s about a tilted axis); MuJoCo's Euler step of the same model drifts from it by far more
// (so the match is the block's, not any step's). The smooth model refused these models before.
// the tumblers alone: no arm, no actuator, no damping (the step's H is M, MuJoCo's factor)
std::string tumblersAlone(double z) {
  std::string xml = withTumblers(z);
  size_t from = xml.find("<body name=\"l1\""), to = xml.find("<body name=\"box\"");
  xml.erase(from, to - from);
  xml.erase(xml.find("<actuator>"), xml.find("</tendon>") + std::strlen("</tendon>") -
                                        xml.find("<actuator>"));
  xml.replace(xml.find("<key qpos=\"-0.8 0 0 0 0 "), std::strlen("<key qpos=\"-0.8 0 0 0 0 "),
              "<key qpos=\"");
  xml.replace(xml.find(" ctrl=\"-0.8 0 0 0 0\""), std::strlen(" ctrl=\"-0.8 0 0 0 0\""), "");
  return xml;
}

TEST(StepDerivImplicitFast, FreeBodiesAreMuJoCosStep) {
  double worst[3] = {0, 0, 0};
  for (int euler = 0; euler < 3; euler++) {
    // 0: the explicit smooth step, 1: against MuJoCo's Euler, 2: the implicit smooth step
    std::string xml = tumblersAlone(3);  // (the servo arm runs away under Euler)
    testutil::StepSim a(euler == 1 ? withIntegrator(xml.c_str(), "Euler").c_str() : xml.c_str(),
                        nullptr);
    testutil::StepSim b(euler == 2 ? withImplicit(xml).c_str() : xml.c_str(), nullptr);
    ASSERT_TRUE(a.ok && b.ok) << a.sim.err << b.sim.err;
    const mjModel* m = b.sim.m;
    for (testutil::StepSim* sim : {&a, &b}) {
      mj_resetDataKeyframe(sim->sim.m, sim->sim.d, 0);
      mjtNum* v = sim->sim.d->qvel;
      v[3] = 0.3, v[4] = 15, v[5] = 0.2;   // the box, body frame
      v[9] = 20, v[10] = 5, v[11] = -3;    // the capsule
      v[0] = 0.5;
    }
    char err[1000] = "";
    for (int t = 0; t < 250; t++) {
      mj_step(a.sim.m, a.sim.d);
      ASSERT_EQ(mjdiff_step(b.sim.m, b.sim.d, b.sim.s, err, sizeof(err)), MJDIFF_OK)
          << "step " << t << ": " << err;
      for (int i = 0; i < m->nv; i++) {
        worst[euler] = std::max(worst[euler], std::fabs(a.sim.d->qvel[i] - b.sim.d->qvel[i]));
      }
      ASSERT_EQ(a.sim.d->ncon, 0) << "a body landed at step " << t;
    }
  }
  std::printf("free bodies over 0.5 s: largest qvel difference from mj_step %.3e (implicitfast), "
              "%.3e (MuJoCo's Euler against the smooth implicitfast step), %.3e (the implicit "
              "smooth step)\n", worst[0], worst[1], worst[2]);
  EXPECT_LT(worst[0], 1e-9);
  EXPECT_GT(worst[1], 1e-3);
  EXPECT_LT(worst[2], 1e-9);
}

// the step's derivatives with the free bodies' blocks, the bodies on the floor box (contacts) and
// spinning (random velocities), against finite differences, and the VJP and JVP against them:
// beside the servo arm (H = M + h B), alone (H = M, MuJoCo's factor), alone in 3 substeps (the
// substeps' records), and under the implicit smooth step; the explicit step's applied force
// adjoint is not offered (not H^-1's on the block)
TEST(StepDerivImplicitFast, FreeBodiesWithContacts) {
  checkModel(withTumblers(0.13).c_str(), nullptr, 20, 1e-6, 60, true);
  std::string alone = tumblersAlone(0.13);
  checkModel(alone.c_str(), nullptr, 20, 1e-6, 60, true);
  std::string sub = testutil::withNumerics(alone, "<numeric name=\"mjdiff_substeps\" data=\"3\"/>");
  checkModel(sub.c_str(), nullptr, 12, 1e-6, 60, true);
  checkModel(withImplicit(withTumblers(0.13)).c_str(), nullptr, 20, 1e-6, 60, true);
  for (const std::string& xml : {alone, sub}) {
    testutil::StepSim sim(xml.c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    int ndx = 2 * m->nv;
    std::vector<mjtNum> l(ndx, 1), lx(ndx), adj(m->nv);
    char err[1000] = "";
    ASSERT_EQ(mjdiff_stepVJP(m, sim.sim.d, sim.sim.s, sim.w, l.data(), lx.data(), nullptr,
                             nullptr, err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_EQ(mjdiff_stepForceAdjoint(sim.w, adj.data()), 0);
  }
}

// the step's columns in a free body's own mass, inertia and com, and in the capsule's geom size
// and position, which its inertials follow (design_d.c's compile map; no explicit inertial
// parameter of the capsule, which would stop that), where they move its block (G is linear in the
// mass and inertia, and the com offset enters it), against central differences of the step,
// Richardson-extrapolated: spinning in flight and on the floor, explicit and implicit
TEST(StepDerivImplicitFast, FreeBlockInertialColumns) {
  const char* names[] = {"body:box:mass", "body:box:inertia", "body:box:ipos",
                         "geom:capsule:size", "geom:capsule:pos"};
  double worst = 0;
  for (int implicit = 0; implicit < 2; implicit++) {
    for (double z : {3.0, 0.13}) {
      std::string xml = withTumblers(z);
      testutil::Sim sim(implicit ? withImplicit(xml).c_str() : xml.c_str());
      ASSERT_TRUE(sim.ok) << sim.sim.err;
      mjModel* m = sim.sim.m;
      mjData* d = sim.sim.d;
      mjdiffModel* s = sim.sim.s;
      char err[1000] = "";
      mjdiffParams* p = nullptr;
      ASSERT_EQ(mjdiff_makeParams(m, s, names, 5, &p, err, sizeof(err)), MJDIFF_OK) << err;
      mjdiffStepDeriv* w = nullptr;
      ASSERT_EQ(mjdiff_makeStepDeriv(m, s, p, &w, err, sizeof(err)), MJDIFF_OK) << err;
      int np = mjdiff_paramCount(p), ndx = 2 * m->nv;
      std::vector<mjtNum> v0(np);
      mjdiff_getParamValues(m, s, p, v0.data());
      mj_resetDataKeyframe(m, d, 0);
      for (int t = 0; t < 30; t++) ASSERT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_OK);
      d->qvel[8] += 12, d->qvel[9] += 3, d->qvel[10] -= 2;  // the box spins (body frame)
      d->qvel[15] += 8, d->qvel[16] -= 5;                   // the capsule
      std::vector<mjtNum> state = testutil::getState(m, d);
      std::vector<mjtNum> A(ndx * ndx), J(ndx * np);
      ASSERT_EQ(mjdiff_stepJacobian(m, d, s, w, A.data(), nullptr, J.data(), err, sizeof(err)),
                MJDIFF_OK) << err;
      for (int i = 0; i < np; i++) {
        double h = 1e-5 * std::fabs(v0[i]);
        std::vector<mjtNum> R;
        ASSERT_TRUE(testutil::fdStepParamColumn(m, d, s, p, state, v0, i, h, &R))
            << mjdiff_paramName(p, i);
        double e = testutil::paramColumnError(J, np, i, R, 1e-3, nullptr);
        worst = std::fmax(worst, e);
        EXPECT_LE(e, 1e-6) << mjdiff_paramName(p, i) << (implicit ? " implicit" : " explicit")
                           << " z " << z;
      }
      mjdiff_freeStepDeriv(w);
      mjdiff_freeParams(p);
    }
  }
  std::printf("free bodies' inertial columns: worst relative error %.2e\n", worst);
}

// what the blocks do not cover is refused by name: a massless child's mass, which would make the
// body not standalone (a body of more than 64 geoms' geometry parameters too, not built here)
TEST(StepDerivImplicitFast, FreeBlockLimitsRefusedByName) {
  std::string xml = withTumblers(0.13);
  testutil::Sim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  char err[1000] = "";
  for (const char* name : {"body:holder:mass", "geom:floor:friction", "body:box:mass",
                           "geom:capsule:size"}) {
    mjdiffParams* p = nullptr;
    ASSERT_EQ(mjdiff_makeParams(sim.sim.m, sim.sim.s, &name, 1, &p, err, sizeof(err)),
              MJDIFF_OK) << err;
    mjdiffStepDeriv* w = nullptr;
    mjdiffStatus st = mjdiff_makeStepDeriv(sim.sim.m, sim.sim.s, p, &w, err, sizeof(err));
    if (std::string(name).find("holder") == std::string::npos) {  // (covered: blockChange)
      EXPECT_EQ(st, MJDIFF_OK) << err;
    } else {
      EXPECT_EQ(st, MJDIFF_ERR_UNSUPPORTED) << name;
      EXPECT_NE(std::string(err).find("standalone free body"), std::string::npos) << err;
      EXPECT_NE(std::string(err).find(name), std::string::npos) << err;
    }
    mjdiff_freeStepDeriv(w);
    mjdiff_freeParams(p);
  }
}

// what would make implicitfast's implicit term depend on the state or couple dofs is refused
// by name (plugin/options.c, implicitFastCovered)
TEST(StepDerivImplicitFast, UncoveredTermsRefusedByName) {
  struct Case {
    const char* what;
    const char* from;
    const char* to;
    const char* expect;
  } cases[] = {
      {"fluid", "integrator=\"implicitfast\"", "integrator=\"implicitfast\" density=\"1.2\"",
       "fluid forces"},
      {"damped tendon", "</actuator>",
       "</actuator><tendon><fixed name=\"tt\" damping=\"1\"><joint joint=\"j1\" coef=\"1\"/>"
       "</fixed></tendon>",
       "tendon 0 'tt'"},
      {"gain velocity term", "<motor name=\"m1\" joint=\"j2\" gear=\"2\" ctrlrange=\"-1 1\"/>",
       "<general name=\"g1\" joint=\"j2\" gainprm=\"1 0 0.5\" gaintype=\"affine\"/>",
       "actuator 3 'g1'"},
      {"servo on a tendon along one branch",
       "<motor name=\"m1\" joint=\"j2\" gear=\"2\" ctrlrange=\"-1 1\"/>",
       "<position name=\"pt\" tendon=\"tt\" kp=\"10\" kv=\"1\"/></actuator><tendon><fixed "
       "name=\"tt\"><joint joint=\"j1\" coef=\"1\"/><joint joint=\"j2\" coef=\"1\"/></fixed>"
       "</tendon><actuator>",
       "actuator 3 'pt'"},
  };
  for (const Case& c : cases) {
    std::string xml = kServoArm;
    size_t at = xml.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.what;
    xml.replace(at, std::strlen(c.from), c.to);
    testutil::Sim sim(xml.c_str());
    EXPECT_FALSE(sim.ok) << c.what << ": made";
    EXPECT_NE(std::string(sim.sim.err).find(c.expect), std::string::npos)
        << c.what << ": " << sim.sim.err;
    EXPECT_NE(std::string(sim.sim.err).find("implicitfast"), std::string::npos) << c.what;
  }

  // a parameter that makes the model one of those after it was made (fluid density) is refused
  // by the step and its derivatives, not stepped without its implicit term
  testutil::StepSim sim(kServoArm);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const char* names[] = {"option:density"};
  mjdiffParams* p = nullptr;
  char err[1000] = "";
  ASSERT_EQ(mjdiff_makeParams(sim.sim.m, sim.sim.s, names, 1, &p, err, sizeof(err)), MJDIFF_OK)
      << err;
  mjtNum rho = 1000;
  ASSERT_EQ(mjdiff_setParamValues(sim.sim.m, sim.sim.s, p, &rho, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(mjdiff_step(sim.sim.m, sim.sim.d, sim.sim.s, err, sizeof(err)),
            MJDIFF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("fluid forces"), std::string::npos) << err;
  int ndx = 2 * sim.sim.m->nv, nu = sim.sim.m->nu;
  std::vector<mjtNum> A(ndx * ndx), B(ndx * nu);
  EXPECT_EQ(mjdiff_stepJacobian(sim.sim.m, sim.sim.d, sim.sim.s, sim.w, A.data(), B.data(),
                                nullptr, err, sizeof(err)),
            MJDIFF_ERR_UNSUPPORTED) << err;
  mjdiff_freeParams(p);
}
#endif
