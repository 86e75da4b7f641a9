// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Sensor derivatives (adjoint/sensor_d.c) against centered finite differences of the sensordata
// that mjdiff_forward computes, at random states near simulated trajectories.
//
// The analytic prediction for a tangent direction e of [q v act ctrl] is DsDx e + DsDacc dacc,
// where dacc is the finite-difference change of qacc in the same perturbed runs: acceleration
// sensors are so checked through both parts. Tolerance as in test_step_d.cc: Richardson-
// extrapolated centered differences over (eps, 2 eps) at eps = 1e-5, compared per sensor and
// per column block (q, v, act, ctrl) by the max abs error over the block's max abs entry (floored
// at 1e-4); 1e-6 relative. A sample is skipped where the differences over (eps, 2 eps) and
// (2 eps, 4 eps) disagree by more than the tolerance (a contact-law piece boundary or a cutoff
// within reach); at least 80% of the samples must be compared.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "../adjoint/derivative.h"
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::Sim;
using testutil::uniform;

// a random state near a simulated trajectory, with random applied wrenches
void randomState(const mjModel* m, mjData* d, const mjdiffModel* s, unsigned long long* seed,
                 int nstep, bool xfrc) {
  testutil::simulateRandom(m, d, s, seed, nstep);
  testutil::perturbVelocities(m, d, seed, 0.6, 0.2);
  shim_randomCtrl(m, d, seed);
  testutil::ctrlInsideRange(m, d);
  if (xfrc) {
    for (int b = 1; b < m->nbody; b++) {
      for (int i = 0; i < 6; i++) d->xfrc_applied[6 * b + i] = (b % 2) * 2 * (uniform(seed) - 0.5);
    }
  }
  char err[500];
  mjdiff_forward(m, d, s, err, sizeof(err));
}

// sensordata and qacc of mjdiff_forward at state (+) dx (dx: [dq dv da du])
void evalAt(const mjModel* m, mjData* d, const mjdiffModel* s, const std::vector<mjtNum>& state,
            const mjtNum* dx, std::vector<mjtNum>* sens, std::vector<mjtNum>* acc) {
  shim_setState(m, d, state.data());
  testutil::perturbState(m, d, dx);
  int nv = m->nv, na = m->na;
  for (int i = 0; i < m->nu; i++) d->ctrl[i] += dx[2 * nv + na + i];
  char err[500];
  EXPECT_EQ(mjdiff_forward(m, d, s, err, sizeof(err)), MJDIFF_OK) << err;
  sens->assign(d->sensordata, d->sensordata + m->nsensordata);
  acc->assign(d->qacc, d->qacc + nv);
}

// centered differences of sensordata (nsd x ncol) and qacc (nv x ncol) with step eps
void fdSensors(const mjModel* m, mjData* d, const mjdiffModel* s, const std::vector<mjtNum>& state,
               double eps, std::vector<mjtNum>* Fs, std::vector<mjtNum>* Fa) {
  int nv = m->nv, ncol = 2 * nv + m->na + m->nu, nsd = m->nsensordata;
  Fs->assign((size_t)nsd * ncol, 0);
  Fa->assign((size_t)nv * ncol, 0);
  std::vector<mjtNum> dx(ncol), sp, sm, ap, am;
  for (int c = 0; c < ncol; c++) {
    std::fill(dx.begin(), dx.end(), 0);
    dx[c] = eps;
    evalAt(m, d, s, state, dx.data(), &sp, &ap);
    dx[c] = -eps;
    evalAt(m, d, s, state, dx.data(), &sm, &am);
    for (int r = 0; r < nsd; r++) (*Fs)[(size_t)ncol * r + c] = (sp[r] - sm[r]) / (2 * eps);
    for (int r = 0; r < nv; r++) (*Fa)[(size_t)ncol * r + c] = (ap[r] - am[r]) / (2 * eps);
  }
  shim_setState(m, d, state.data());
}

#if !MJDIFF_MUJOCO_3
const char* kTypeNames[] = {"touch",
                            "accelerometer",
                            "velocimeter",
                            "gyro",
                            "force",
                            "torque",
                            "magnetometer",
                            "rangefinder",
                            "jointpos",
                            "jointvel",
                            "tendonpos",
                            "tendonvel",
                            "actuatorpos",
                            "actuatorvel",
                            "actuatorfrc",
                            "ballquat",
                            "ballangvel",
                            "jointlimitpos",
                            "jointlimitvel",
                            "jointlimitfrc",
                            "tendonlimitpos",
                            "tendonlimitvel",
                            "tendonlimitfrc",
                            "framepos",
                            "framequat",
                            "framexaxis",
                            "frameyaxis",
                            "framezaxis",
                            "framelinvel",
                            "frameangvel",
                            "framelinacc",
                            "frameangacc",
                            "subtreecom",
                            "subtreelinvel",
                            "subtreeangmom",
                            "clock",
                            "user"};
#endif
#if MJDIFF_MUJOCO_3
// MuJoCo 3 numbers its sensor types differently and has more of them: the 2.2 names by enum name
const int kNumTypes = mjSENS_USER + 1;
static std::string TypeName(int t) {
  static const struct { int type; const char* name; } kNames[] = {
    {mjSENS_TOUCH, "touch"}, {mjSENS_ACCELEROMETER, "accelerometer"},
    {mjSENS_VELOCIMETER, "velocimeter"}, {mjSENS_GYRO, "gyro"}, {mjSENS_FORCE, "force"},
    {mjSENS_TORQUE, "torque"}, {mjSENS_MAGNETOMETER, "magnetometer"},
    {mjSENS_RANGEFINDER, "rangefinder"}, {mjSENS_JOINTPOS, "jointpos"},
    {mjSENS_JOINTVEL, "jointvel"}, {mjSENS_TENDONPOS, "tendonpos"},
    {mjSENS_TENDONVEL, "tendonvel"}, {mjSENS_ACTUATORPOS, "actuatorpos"},
    {mjSENS_ACTUATORVEL, "actuatorvel"}, {mjSENS_ACTUATORFRC, "actuatorfrc"},
    {mjSENS_BALLQUAT, "ballquat"}, {mjSENS_BALLANGVEL, "ballangvel"},
    {mjSENS_JOINTLIMITPOS, "jointlimitpos"}, {mjSENS_JOINTLIMITVEL, "jointlimitvel"},
    {mjSENS_JOINTLIMITFRC, "jointlimitfrc"}, {mjSENS_TENDONLIMITPOS, "tendonlimitpos"},
    {mjSENS_TENDONLIMITVEL, "tendonlimitvel"}, {mjSENS_TENDONLIMITFRC, "tendonlimitfrc"},
    {mjSENS_FRAMEPOS, "framepos"}, {mjSENS_FRAMEQUAT, "framequat"},
    {mjSENS_FRAMEXAXIS, "framexaxis"}, {mjSENS_FRAMEYAXIS, "frameyaxis"},
    {mjSENS_FRAMEZAXIS, "framezaxis"}, {mjSENS_FRAMELINVEL, "framelinvel"},
    {mjSENS_FRAMEANGVEL, "frameangvel"}, {mjSENS_FRAMELINACC, "framelinacc"},
    {mjSENS_FRAMEANGACC, "frameangacc"}, {mjSENS_SUBTREECOM, "subtreecom"},
    {mjSENS_SUBTREELINVEL, "subtreelinvel"}, {mjSENS_SUBTREEANGMOM, "subtreeangmom"},
    {mjSENS_CLOCK, "clock"}, {mjSENS_USER, "user"}};
  for (const auto& n : kNames) {
    if (n.type == t) return n.name;
  }
  return "type " + std::to_string(t);
}
#else
const int kNumTypes = (int)(sizeof(kTypeNames) / sizeof(kTypeNames[0]));
static_assert(sizeof(kTypeNames) / sizeof(kTypeNames[0]) == mjSENS_USER + 1, "sensor types");
static std::string TypeName(int t) { return kTypeNames[t]; }
#endif

// worst relative error of P against F over the supported sensors and column blocks; per type in
// perType (indexed by mjtSensor)
double sensorError(const mjModel* m, const std::vector<mjtNum>& P, const std::vector<mjtNum>& F,
                   const std::vector<mjtNum>& floor, std::string* where,
                   std::vector<double>* perType) {
  int nv = m->nv, na = m->na, nu = m->nu, ncol = 2 * nv + na + nu;
  int c0[4] = {0, nv, 2 * nv, 2 * nv + na}, c1[4] = {nv, 2 * nv, 2 * nv + na, ncol};
  const char* blk[4] = {"q", "v", "act", "ctrl"};
  double worst = 0;
  for (int i = 0; i < m->nsensor; i++) {
    if (!mjdiff_sensorSupported(m, i)) continue;
    int adr = m->sensor_adr[i], dim = m->sensor_dim[i];
    for (int b = 0; b < 4; b++) {
      double err = 0, scale = floor[i];
      for (int r = adr; r < adr + dim; r++) {
        for (int c = c0[b]; c < c1[b]; c++) {
          err = std::fmax(err, std::fabs(P[(size_t)ncol * r + c] - F[(size_t)ncol * r + c]));
          scale = std::fmax(scale, std::fabs(F[(size_t)ncol * r + c]));
        }
      }
      double e = err / scale;
      if (perType) {
        double& t = (*perType)[m->sensor_type[i]];
        t = std::fmax(t, e);
      }
      if (e > worst) {
        worst = e;
        if (where) {
          *where = TypeName(m->sensor_type[i]) + " #" + std::to_string(i) +
                   " block " + blk[b];
        }
      }
    }
  }
  return worst;
}

// touchActive (nullable): number of compared samples in which some touch sensor has a nonzero row
void checkModel(const char* xml, const char* path, int nsample, double tol, int nwarm, bool xfrc,
                int expectStatus, int* touchActive = nullptr) {
  Sim sim(xml, path);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  const mjdiffModel* s = sim.sim.s;
  int nv = m->nv, ncol = 2 * nv + m->na + m->nu, nsd = m->nsensordata;
  unsigned long long seed = 2024;
  int compared = 0, withContact = 0;
  double worst = 0;
  std::string worstWhere;
  std::vector<double> perType(kNumTypes, 0.0);
  for (int k = 0; k < nsample; k++) {
    randomState(m, d, s, &seed, nwarm + 7 * k, xfrc);
    std::vector<mjtNum> state = testutil::getState(m, d);
    std::vector<mjtNum> sens0(d->sensordata, d->sensordata + nsd), acc0(d->qacc, d->qacc + nv);
    int ncon = d->ncon;

    std::vector<mjtNum> DsDx((size_t)nsd * ncol), DsDacc((size_t)nsd * nv);
    int pstack = d->pstack;
    EXPECT_EQ(expectStatus, mjdiff_sensorDerivative(m, d, s, DsDx.data(), DsDacc.data()));

    // the call changes nothing in d
    std::vector<mjtNum> after = testutil::getState(m, d);
    EXPECT_EQ(0, std::memcmp(state.data(), after.data(), state.size() * sizeof(mjtNum)));
    EXPECT_EQ(0, std::memcmp(sens0.data(), d->sensordata, nsd * sizeof(mjtNum)));
    EXPECT_EQ(0, std::memcmp(acc0.data(), d->qacc, nv * sizeof(mjtNum)));
    EXPECT_EQ(pstack, d->pstack);

    // Richardson-extrapolated differences at two scales
    double eps = 1e-5;
    std::vector<mjtNum> Sa, Sb, Sc, Aa, Ab, Ac;
    fdSensors(m, d, s, state, eps, &Sa, &Aa);
    fdSensors(m, d, s, state, 2 * eps, &Sb, &Ab);
    fdSensors(m, d, s, state, 4 * eps, &Sc, &Ac);
    std::vector<mjtNum> S1 = testutil::richardson(Sa, Sb), S2 = testutil::richardson(Sb, Sc);
    std::vector<mjtNum> A1 = testutil::richardson(Aa, Ab), A2 = testutil::richardson(Ab, Ac);

    // prediction DsDx + DsDacc dacc (dacc: the extrapolated difference of qacc)
    std::vector<mjtNum> P((size_t)nsd * ncol), P2((size_t)nsd * ncol);
    for (int r = 0; r < nsd; r++) {
      for (int c = 0; c < ncol; c++) {
        mjtNum p = DsDx[(size_t)ncol * r + c], p2 = p;
        for (int j = 0; j < nv; j++) {
          p += DsDacc[(size_t)nv * r + j] * A1[(size_t)ncol * j + c];
          p2 += DsDacc[(size_t)nv * r + j] * A2[(size_t)ncol * j + c];
        }
        P[(size_t)ncol * r + c] = p;
        P2[(size_t)ncol * r + c] = p2;
      }
    }

    // finite differences unreliable here: skip
    // error floor per sensor: 1e-4, and 1e-3 of the size of its reading and of its
    // acceleration part, max_r |s_r| + sum_j |DsDacc_rj qacc_j| (rounding of the differences)
    std::vector<mjtNum> floor(m->nsensor);
    for (int i = 0; i < m->nsensor; i++) {
      double size = 0;
      for (int r = m->sensor_adr[i]; r < m->sensor_adr[i] + m->sensor_dim[i]; r++) {
        double t = std::fabs(sens0[r]);
        for (int j = 0; j < nv; j++) t += std::fabs(DsDacc[(size_t)nv * r + j] * acc0[j]);
        size = std::fmax(size, t);
      }
      floor[i] = std::fmax(1e-4, 1e-3 * size);
    }

    std::string noisy, noisyAcc;
    double fdNoise = sensorError(m, S1, S2, floor, &noisy, nullptr);
    double accNoise = sensorError(m, P, P2, floor, &noisyAcc, nullptr);
    if (fdNoise > tol || accNoise > tol) {
      std::cout << "sample " << k << " skipped: finite differences disagree by " << fdNoise
                << " in " << noisy << ", through qacc by " << accNoise << " in " << noisyAcc
                << "\n";
      continue;
    }
    compared++;
    withContact += ncon > 0;
    std::string where;
    double e = sensorError(m, P, S1, floor, &where, &perType);
    if (e > worst) {
      worst = e;
      worstWhere = where;
    }
    EXPECT_LE(e, tol) << "sample " << k << ": " << where << " (ncon " << ncon << ")";

    // guard: the analytic and finite-difference matrices were computed differently
    EXPECT_NE(0, std::memcmp(P.data(), S1.data(), P.size() * sizeof(mjtNum)));

    // samples where a touch sensor reads a changing force
    bool touch = false;
    for (int i = 0; i < m->nsensor; i++) {
      if (m->sensor_type[i] != mjSENS_TOUCH) continue;
      for (int c = 0; c < ncol; c++) touch |= DsDx[(size_t)ncol * m->sensor_adr[i] + c] != 0;
    }
    if (touchActive) *touchActive += touch;
  }
  std::cout << (path ? path : "inline") << ": compared " << compared << "/" << nsample
            << " states (" << withContact << " with contacts), worst relative error " << worst
            << " in " << worstWhere << "\n";
  for (int t = 0; t < kNumTypes; t++) {
    bool present = false;
    for (int i = 0; i < m->nsensor; i++) {
      present |= m->sensor_type[i] == t && mjdiff_sensorSupported(m, i);
    }
    if (present) std::cout << "  " << TypeName(t) << ": worst " << perType[t] << "\n";
  }
  EXPECT_GE(compared, (int)(0.8 * nsample));
}

// a floating base with a ball + hinge + slide + hinge chain, a hinge arm fixed to the world,
// actuators of every supported kind, and every supported sensor type (frames with and without
// reference frames, every object type)
const char* kSensors = R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_contact_stiffness" data="2000"/></custom>
  <default><joint armature="0.01" damping="0.02"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 0.1"/>
    <site name="wsite" pos="0.1 0.2 0.3" euler="0.3 0.2 0.1"/>
    <body name="base" pos="0 0 0.3">
      <freejoint/>
      <geom type="box" size="0.1 0.15 0.05" mass="2"/>
      <site name="bsite" pos="0.05 0.02 0.03" euler="0.5 -0.3 0.2"/>
      <camera name="cam" pos="0 0.1 0.1" euler="0.1 0.2 0.3"/>
      <body name="upper" pos="0.1 0 0" euler="0 0.3 0">
        <joint name="ball" type="ball" damping="0.05"/>
        <geom name="ugeom" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.4"
              euler="0.1 0.2 0.3"/>
        <site name="usite" pos="0.15 0.02 0" euler="0.2 0.4 -0.1"/>
        <body name="lower" pos="0.3 0 0">
          <joint name="hinge" type="hinge" axis="0 0.6 0.8" pos="0.01 0 0"/>
          <joint name="slide" type="slide" axis="1 0 0"/>
          <geom name="lgeom" type="capsule" fromto="0 0 0 0.2 0.05 0" size="0.025" mass="0.3"/>
          <site name="tip" pos="0.2 0.05 0" euler="1 0.5 0.2"/>
          <body name="finger" pos="0.2 0.05 0">
            <joint name="h2" type="hinge" axis="1 0 0"/>
            <geom type="sphere" size="0.03" pos="0.02 0 0" mass="0.1"/>
            <site name="fsite" pos="0.02 0.01 0" euler="-0.3 0.1 0.7"/>
          </body>
        </body>
      </body>
    </body>
    <body name="arm" pos="1 0 1">
      <joint name="a1" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.03" mass="1"/>
      <body name="arm2" pos="0 0 -0.4">
        <joint name="a2" type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 -0.2" size="0.03" mass="0.5"/>
        <site name="asite" pos="0.2 0 -0.2" euler="0.4 0.4 0.4"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="ten">
      <joint joint="hinge" coef="1"/>
      <joint joint="slide" coef="-0.5"/>
    </fixed>
  </tendon>
  <actuator>
    <motor name="mh" joint="hinge" gear="2" ctrlrange="-1 1" ctrllimited="true"/>
    <position name="ps" joint="slide" kp="20"/>
    <velocity name="vt" tendon="ten" kv="3"/>
    <motor name="ma" joint="a1" gear="5"/>
    <general name="gf" joint="h2" dyntype="filter" dynprm="0.1" gaintype="affine"
             gainprm="2 0.5 0.1" biastype="affine" biasprm="0.1 -1 -0.2" ctrlrange="-1 1"
             ctrllimited="true" forcelimited="true" forcerange="-50 50"/>
    <general name="ga" joint="a2" dyntype="integrator" gainprm="3" ctrlrange="-1 1"
             ctrllimited="true"/>
  </actuator>
  <sensor>
    <jointpos joint="hinge"/>
    <jointpos joint="slide"/>
    <jointvel joint="hinge"/>
    <jointvel joint="a1" cutoff="0.05"/>
    <actuatorpos actuator="mh"/>
    <actuatorpos actuator="vt"/>
    <actuatorvel actuator="ps"/>
    <actuatorvel actuator="vt"/>
    <actuatorfrc actuator="mh"/>
    <actuatorfrc actuator="ps"/>
    <actuatorfrc actuator="vt"/>
    <actuatorfrc actuator="gf"/>
    <actuatorfrc actuator="ga"/>
    <framepos objtype="site" objname="tip"/>
    <framepos objtype="body" objname="upper" reftype="xbody" refname="lower"/>
    <framepos objtype="geom" objname="lgeom" reftype="camera" refname="cam"/>
    <framepos objtype="camera" objname="cam" reftype="site" refname="asite"/>
    <framequat objtype="xbody" objname="finger"/>
    <framequat objtype="site" objname="tip" reftype="body" refname="upper"/>
    <framequat objtype="geom" objname="ugeom" reftype="site" refname="asite"/>
    <framequat objtype="camera" objname="cam"/>
    <framelinvel objtype="site" objname="fsite"/>
    <framelinvel objtype="body" objname="lower" reftype="site" refname="usite"/>
    <framelinvel objtype="geom" objname="ugeom" reftype="xbody" refname="arm2"/>
    <framelinvel objtype="camera" objname="cam" reftype="geom" refname="lgeom"/>
    <frameangvel objtype="xbody" objname="lower"/>
    <frameangvel objtype="site" objname="fsite" reftype="body" refname="base"/>
    <frameangvel objtype="geom" objname="lgeom" reftype="site" refname="asite"/>
    <subtreecom body="base"/>
    <subtreecom body="lower"/>
    <subtreecom body="arm"/>
    <velocimeter site="tip"/>
    <velocimeter site="bsite"/>
    <velocimeter site="asite"/>
    <gyro site="fsite"/>
    <gyro site="usite"/>
    <accelerometer site="tip"/>
    <accelerometer site="bsite"/>
    <accelerometer site="asite"/>
    <accelerometer site="wsite"/>
    <force site="bsite"/>
    <force site="usite"/>
    <force site="fsite"/>
    <force site="asite"/>
    <force site="wsite"/>
    <torque site="bsite"/>
    <torque site="tip"/>
    <torque site="asite"/>
    <torque site="wsite"/>
  </sensor>
</mujoco>)";

TEST(SensorDeriv, EverySupportedType) {
  checkModel(kSensors, nullptr, 12, 1e-6, 60, false, 0);
}

TEST(SensorDeriv, EverySupportedTypeAppliedWrenches) {
  checkModel(kSensors, nullptr, 12, 1e-6, 90, true, 0);
}

// tendon and actuator sensors on spatial tendons (adjoint/tendon_d.c): a sphere wrap with a side
// site, a cylinder wrap, a pulley; a motor and a position servo on wrapped tendons, a fixed tendon
const std::string kTendonSensors = std::string(R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/><site size="0.01"/>
    <joint damping="0.05" armature="0.01"/></default>
  <worldbody>
    <site name="w0" pos="0 0 1.5"/>
)") + testutil::kSpatialArm + R"(  </worldbody>
  <tendon>
    <spatial name="sphere" stiffness="20" damping="0.5">
      <site site="a0"/><geom geom="sph" sidesite="bside"/><site site="c0"/>
    </spatial>
    <spatial name="cylinder">
      <site site="b0"/><geom geom="cyl"/><site site="f0"/>
    </spatial>
    <spatial name="pulley">
      <site site="w0"/><site site="a0"/><site site="b0"/>
      <pulley divisor="2"/>
      <site site="a1"/><site site="f0"/>
    </spatial>
    <fixed name="fixed"><joint joint="ha" coef="1"/><joint joint="hc" coef="-0.5"/></fixed>
  </tendon>
  <actuator>
    <motor name="m" tendon="cylinder" gear="2" ctrlrange="-1 1" ctrllimited="true"/>
    <position name="p" tendon="pulley" kp="10" ctrlrange="0 1" ctrllimited="true"/>
    <velocity name="v" tendon="sphere" kv="3"/>
  </actuator>
  <sensor>
    <tendonpos tendon="sphere"/><tendonvel tendon="sphere"/>
    <tendonpos tendon="cylinder"/><tendonvel tendon="cylinder"/>
    <tendonpos tendon="pulley"/><tendonvel tendon="pulley"/>
    <tendonpos tendon="fixed"/><tendonvel tendon="fixed"/>
    <actuatorpos actuator="m"/><actuatorvel actuator="m"/><actuatorfrc actuator="m"/>
    <actuatorpos actuator="p"/><actuatorvel actuator="p"/><actuatorfrc actuator="p"/>
    <actuatorvel actuator="v"/><actuatorfrc actuator="v"/>
  </sensor>
</mujoco>)";

TEST(SensorDeriv, SpatialTendons) {
  checkModel(kTendonSensors.c_str(), nullptr, 20, 1e-6, 40, false, 0);
}

TEST(SensorDeriv, ArmBox) {
  // touch (sensor 19) reads the smooth normal forces and has a derivative
  Sim sim(nullptr, shim_modelPath("arm_box.xml"));
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  int touch = mj_name2id(sim.sim.m, mjOBJ_SENSOR, "fingertip_touch");
  ASSERT_GE(touch, 0);
  EXPECT_EQ(1, mjdiff_sensorSupported(sim.sim.m, touch));
  checkModel(nullptr, shim_modelPath("arm_box.xml"), 12, 1e-6, 150, false, 0);
}

// the arm with extra site sensors on the fixed-base chain and the free box (contacts: their
// wrenches are not in MuJoCo's force and torque readings, see sensor_d.c)
TEST(SensorDeriv, ArmBoxSiteSensors) {
  std::string xml;
  {
    FILE* f = fopen(shim_modelPath("arm_box.xml"), "rb");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) xml.append(buf, n);
    fclose(f);
  }
  size_t at = xml.find("</sensor>");
  ASSERT_NE(at, std::string::npos);
  xml.insert(at, R"(
    <velocimeter site="ee"/>
    <gyro site="ee"/>
    <accelerometer site="ee"/>
    <force site="ee"/>
    <torque site="ee"/>
    <accelerometer site="box_center"/>
    <force site="box_center"/>
    <torque site="box_center"/>
    <force site="target"/>
    <torque site="target"/>
    <actuatorpos actuator="motor2"/>
    <actuatorvel actuator="motor3"/>
    <actuatorfrc actuator="motor4"/>
    <subtreecom body="link3"/>
    <framelinvel objtype="site" objname="ee" reftype="site" refname="box_center"/>
    <frameangvel objtype="site" objname="ee" reftype="xbody" refname="box"/>
    <framequat objtype="site" objname="ee" reftype="body" refname="link5"/>
)");
  checkModel(xml.c_str(), nullptr, 12, 1e-6, 150, false, 0);
}

// repeated calls give the same bits; a NULL output is skipped
TEST(SensorDeriv, DeterministicAndNullable) {
  Sim sim(kSensors, nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  unsigned long long seed = 7;
  randomState(m, d, sim.sim.s, &seed, 80, true);
  int nv = m->nv, ncol = 2 * nv + m->na + m->nu, nsd = m->nsensordata;
  std::vector<mjtNum> X1((size_t)nsd * ncol), A1((size_t)nsd * nv), X2(X1.size()), A2(A1.size());
  EXPECT_EQ(0, mjdiff_sensorDerivative(m, d, sim.sim.s, X1.data(), A1.data()));
  EXPECT_EQ(0, mjdiff_sensorDerivative(m, d, sim.sim.s, X2.data(), nullptr));
  EXPECT_EQ(0, mjdiff_sensorDerivative(m, d, sim.sim.s, nullptr, A2.data()));
  EXPECT_EQ(0, std::memcmp(X1.data(), X2.data(), X1.size() * sizeof(mjtNum)));
  EXPECT_EQ(0, std::memcmp(A1.data(), A2.data(), A1.size() * sizeof(mjtNum)));
}

// not enough room on d's stack for the per-body work: the first sensor needing it is reported and
// nothing is written out of bounds (MuJoCo 2.2 would abort on the overflow)
TEST(SensorDeriv, SmallStack) {
  std::string xml = kSensors;
  xml.replace(xml.find("<option"), 7, "<size nstack=\"3000\"/>\n  <option");
  Sim sim(xml.c_str(), nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[500];
  ASSERT_EQ(MJDIFF_OK, mjdiff_forward(m, d, sim.sim.s, err, sizeof(err))) << err;
  int first = -1;
  for (int i = 0; i < m->nsensor && first < 0; i++) {
    if (m->sensor_type[i] == mjSENS_FRAMEPOS) first = i;
  }
  int nv = m->nv, ncol = 2 * nv + m->na + m->nu, nsd = m->nsensordata;
  std::vector<mjtNum> X((size_t)nsd * ncol), A((size_t)nsd * nv);
#if MJDIFF_MUJOCO_3
  // 3.x shares one arena between contacts and the stack (nstack is not its size): leave 3000
  // numbers of stack as a 2.2 nstack of 3000 would
  mjdiffStackMark mark = compat_stackMark(d);
  compat_stackAllocNum(d, compat_stackSpace(d) - 3000);
  auto pstack = d->pstack;
  EXPECT_EQ(-1 - first, mjdiff_sensorDerivative(m, d, sim.sim.s, X.data(), A.data()));
  EXPECT_EQ(pstack, d->pstack);
  compat_stackFree(d, mark);
#else
  EXPECT_EQ(-1 - first, mjdiff_sensorDerivative(m, d, sim.sim.s, X.data(), A.data()));
  EXPECT_EQ(0, d->pstack);
#endif
}

// unsupported types and objects report themselves and leave their rows at zero
TEST(SensorDeriv, Unsupported) {
  const char* xml = R"(
<mujoco>
  <worldbody>
    <body name="b" pos="0 0 1">
      <joint name="ball" type="ball"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.4"/>
      <body pos="0.3 0 0">
        <joint name="h" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.03" mass="0.1"/>
        <site name="s" pos="0.1 0 0"/>
        <camera name="track" mode="track" pos="0 0 1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="mb" joint="ball" gear="0 0 1"/>
  </actuator>
  <sensor>
    <framepos objtype="site" objname="s"/>
    <rangefinder site="s"/>
    <magnetometer site="s"/>
    <ballquat joint="ball"/>
    <clock/>
    <touch site="s"/>
    <framepos objtype="camera" objname="track"/>
    <actuatorvel actuator="mb"/>
    <framexaxis objtype="site" objname="s"/>
    <framequat objtype="site" objname="s" noise="0.1"/>
  </sensor>
</mujoco>)";
  Sim sim(xml, nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  EXPECT_EQ(1, mjdiff_sensorSupported(m, 0));
  for (int i = 1; i < 9; i++) {
    if (i == 5) continue;  // touch: supported, reads 0 here (no contacts)
    EXPECT_EQ(0, mjdiff_sensorSupported(m, i)) << "sensor " << i;
  }
  EXPECT_EQ(1, mjdiff_sensorSupported(m, 5));
  EXPECT_EQ(1, mjdiff_sensorSupported(m, 9));
  EXPECT_EQ(0, mjdiff_sensorSupported(m, -1));
  EXPECT_EQ(0, mjdiff_sensorSupported(m, m->nsensor));

  char err[500];
  d->qvel[0] = 0.3;
  ASSERT_EQ(MJDIFF_OK, mjdiff_forward(m, d, sim.sim.s, err, sizeof(err))) << err;
  int nv = m->nv, ncol = 2 * nv + m->na + m->nu, nsd = m->nsensordata;
  std::vector<mjtNum> DsDx((size_t)nsd * ncol, 7), DsDacc((size_t)nsd * nv, 7);
  EXPECT_EQ(-2, mjdiff_sensorDerivative(m, d, sim.sim.s, DsDx.data(), DsDacc.data()));
  double sum0 = 0;
  for (int r = 0; r < 3; r++) {
    for (int c = 0; c < ncol; c++) sum0 += std::fabs(DsDx[(size_t)ncol * r + c]);
  }
  EXPECT_GT(sum0, 0);
  for (int i = 1; i < 9; i++) {
    for (int r = m->sensor_adr[i]; r < m->sensor_adr[i] + m->sensor_dim[i]; r++) {
      for (int c = 0; c < ncol; c++) EXPECT_EQ(0, DsDx[(size_t)ncol * r + c]);
      for (int c = 0; c < nv; c++) EXPECT_EQ(0, DsDacc[(size_t)nv * r + c]);
    }
  }

#if !MJDIFF_MUJOCO_3  // MuJoCo 3 adds no sensor noise (the flag is gone): nothing to refuse
  // with sensor noise enabled a framequat with noise has no derivative
  m->opt.enableflags |= mjENBL_SENSORNOISE;
  EXPECT_EQ(0, mjdiff_sensorSupported(m, 9));
  m->opt.enableflags &= ~mjENBL_SENSORNOISE;
#endif

  // sensors disabled: readings are constant
  m->opt.disableflags |= mjDSBL_SENSOR;
  EXPECT_EQ(0, mjdiff_sensorDerivative(m, d, sim.sim.s, DsDx.data(), DsDacc.data()));
  for (mjtNum x : DsDx) EXPECT_EQ(0, x);
  for (mjtNum x : DsDacc) EXPECT_EQ(0, x);
}

//---------------------------------- touch ---------------------------------------------------------

// a 10 cm, 1 kg box resting on the plane (corner contacts, plane = geom1, box = geom2, n up), with
// touch sites: around the box (the contact points, a fraction of the contact width below its bottom
// face, inside), a slab below it (points outside, but MuJoCo's ray from a contact on the site's
// body as geom2 runs along -n, into the slab), a sphere on its top face and a world site far away
// (points outside, rays miss); and a ball far off resting on the plane, unseen by all of them
const char* kTouchBox = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_contact_damping" data="50"/></custom>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 0.1"/>
    <site name="far" pos="1 1 1" size="0.1"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1"/>
      <site name="around" type="box" size="0.055 0.055 0.055"/>
      <site name="below" type="box" pos="0 0 -0.07" size="0.06 0.06 0.005"/>
      <site name="top" type="sphere" pos="0 0 0.05" size="0.02"/>
    </body>
    <body name="ball" pos="0.6 0 0.05">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.05" mass="0.5"/>
    </body>
  </worldbody>
  <sensor>
    <touch name="around" site="around"/>
    <touch name="below" site="below"/>
    <touch name="top" site="top"/>
    <touch name="far" site="far"/>
    <touch name="cut" site="around" cutoff="1"/>
  </sensor>
</mujoco>)";

// The reading is the sum of mjdiff_contactForce's normal forces over the contacts the site counts;
// which sites count is MuJoCo 2.2.2's own rule, checked against MuJoCo's hard-contact step on the
// same model (its readings differ in value, not in which sites read a force).
TEST(SensorTouch, ReadsCountedNormalForces) {
  Sim sim(kTouchBox, nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  ASSERT_EQ(MJDIFF_OK, shim_steps(&sim.sim, 500)) << sim.sim.err;
  char err[500];
  ASSERT_EQ(MJDIFF_OK, mjdiff_forward(m, d, sim.sim.s, err, sizeof(err))) << err;

  // independent sum: every active contact of the box
  int box = mj_name2id(m, mjOBJ_BODY, "box");
  double sum = 0;
  int nbox = 0;
  for (int i = 0; i < d->ncon; i++) {
    const mjContact* con = d->contact + i;
    if (m->geom_bodyid[con->geom1] != box && m->geom_bodyid[con->geom2] != box) continue;
    mjdiffContactForce f;
    ASSERT_EQ(MJDIFF_OK, mjdiff_contactForce(m, d, sim.sim.s, i, &f));
    sum += f.force[0];
    nbox += f.force[0] > 0;
  }
  double weight = 9.81;
  ASSERT_GE(nbox, 3);
  ASSERT_GT(sum, 0.9 * weight);  // resting: the sum carries the weight
  const mjtNum* s = d->sensordata;
  EXPECT_NEAR(sum, s[0], 1e-12 * sum) << "around";
  EXPECT_NEAR(sum, s[1], 1e-12 * sum) << "below";
  EXPECT_EQ(0, s[2]) << "top";
  EXPECT_EQ(0, s[3]) << "far";
  EXPECT_EQ(1, s[4]) << "cutoff";

  // MuJoCo's own step with hard contacts counts the same sites
  mjData* dn = mj_makeData(m);
  for (int i = 0; i < 500; i++) mj_step(m, dn);
  mj_forward(m, dn);
  EXPECT_GT(dn->sensordata[0], 0.9 * weight);
  EXPECT_GT(dn->sensordata[1], 0.9 * weight);
  EXPECT_EQ(0, dn->sensordata[2]);
  EXPECT_EQ(0, dn->sensordata[3]);
  mj_deleteData(dn);
}

#if !MJDIFF_MUJOCO_3  // MuJoCo 3 adds no sensor noise (mjENBL_SENSORNOISE is gone)
// With sensor noise the touch reading gets MuJoCo's noise (positive readings only, kept >= 0) and
// MuJoCo's number of random draws: the random stream after the smooth forward pass is where
// MuJoCo's own mj_forward leaves it.
TEST(SensorTouch, NoiseAsMuJoCo) {
  std::string xml = kTouchBox;
  xml.replace(xml.find("<touch name=\"around\" site=\"around\"/>"), 36,
              "<touch name=\"around\" site=\"around\" noise=\"0.5\"/>");
  xml.replace(xml.find("<touch name=\"top\" site=\"top\"/>"), 30,
              "<touch name=\"top\" site=\"top\" noise=\"0.5\"/>");
  Sim sim(xml.c_str(), nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  ASSERT_EQ(0.5, m->sensor_noise[0]);
  ASSERT_EQ(MJDIFF_OK, shim_steps(&sim.sim, 500)) << sim.sim.err;
  char err[500];
  ASSERT_EQ(MJDIFF_OK, mjdiff_forward(m, d, sim.sim.s, err, sizeof(err))) << err;
  mjtNum clean = d->sensordata[0];

  m->opt.enableflags |= mjENBL_SENSORNOISE;
  double maxdev = 0;
  for (int k = 0; k < 20; k++) {
    srand(100 + k);
    ASSERT_EQ(MJDIFF_OK, mjdiff_forward(m, d, sim.sim.s, err, sizeof(err))) << err;
    int next = rand();
    EXPECT_GE(d->sensordata[0], 0);
    EXPECT_EQ(0, d->sensordata[2]);  // a zero reading gets no noise
    maxdev = std::fmax(maxdev, std::fabs(d->sensordata[0] - clean));
    mjData* dn = mj_makeData(m);
    mju_copy(dn->qpos, d->qpos, m->nq);
    mju_copy(dn->qvel, d->qvel, m->nv);
    srand(100 + k);
    mj_forward(m, dn);
    EXPECT_EQ(next, rand()) << "sample " << k;
    mj_deleteData(dn);
  }
  EXPECT_GT(maxdev, 0.05);  // noise was added
  EXPECT_LT(maxdev, 3.0);   // of about its standard deviation
  m->opt.enableflags &= ~mjENBL_SENSORNOISE;
}
#endif

// the box, a ball resting on it (sphere-box: ball = geom1, n down) and a capsule on a hinge arm
// lying across the ball's top, with touch sites on each and cutoffs below and above the reading
const char* kTouchDeriv = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_contact_stiffness" data="5000"/></custom>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 0.1"/>
    <body name="box" pos="0 0 0.05" euler="0.05 -0.04 0.3">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.06 0.05" mass="1"/>
      <site name="around" type="box" size="0.055 0.065 0.055"/>
      <site name="below" type="box" pos="0 0 -0.07" size="0.07 0.08 0.005"/>
      <site name="boxtop" type="box" pos="0 0 0.05" size="0.05 0.06 0.01"/>
    </body>
    <body name="ball" pos="0.005 0.003 0.1405">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.04" mass="0.3"/>
      <site name="ball" type="sphere" size="0.045"/>
    </body>
    <body name="arm" pos="0.15 0 0.191">
      <joint name="arm" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom name="arm" type="capsule" fromto="0 0 0 -0.2 0 0" size="0.01" mass="0.2"/>
      <site name="arm" type="capsule" fromto="-0.1 0 0 -0.2 0 0" size="0.02"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="arm" gear="1" ctrlrange="-0.05 0.05" ctrllimited="true"/>
  </actuator>
  <sensor>
    <touch site="around"/>
    <touch site="below"/>
    <touch site="boxtop"/>
    <touch site="ball"/>
    <touch site="arm"/>
    <touch site="around" cutoff="0.5"/>
    <touch site="around" cutoff="1000"/>
    <framepos objtype="body" objname="ball"/>
  </sensor>
</mujoco>)";

// every touch site of kTouchDeriv reads a force at these states (contacts box-plane, ball-box,
// ball-arm; sites on geom1's and geom2's bodies; one clamped by its cutoff, its row 0)
TEST(SensorDeriv, Touch) {
  int active = 0;
  checkModel(kTouchDeriv, nullptr, 20, 1e-6, 60, false, 0, &active);
  EXPECT_GE(active, 16);
  active = 0;
  checkModel(kTouchBox, nullptr, 10, 1e-6, 200, false, 0, &active);
  EXPECT_GE(active, 8);
}

}  // namespace

// The readings' parameter columns Q = ds/dp (mjdiff_sensorJacobian) against centred differences
// of the forward pass's sensordata on a model copy with one parameter moved, at the same state:
// the direct dependence (a frame sensor on a site a geometry parameter moves, a subtree com and a
// body's mass) and the one through qacc (accelerometers, force and torque sensors).
TEST(SensorDeriv, ParamColumns) {
  // a second, rotated geom on "lower" (whose scale and geom size are parameters): its inertia's
  // principal axes then move with the geometry, which the body-frame readings below see
  std::string xml = kSensors;
  const char* lg = "<geom name=\"lgeom\"";
  xml.insert(xml.find(lg), "<geom name=\"lbox\" type=\"box\" size=\"0.02 0.03 0.05\" "
                           "pos=\"0.1 0.03 0.02\" euler=\"0.4 0.2 0\" mass=\"0.15\"/>\n          ");
  xml.insert(xml.find("  </sensor>"),
             "    <framequat objtype=\"body\" objname=\"lower\"/>\n"
             "    <framepos objtype=\"body\" objname=\"lower\"/>\n");
  Sim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  const char* names[] = {"body:arm:mass",    "body:upper:ipos",  "joint:hinge:damping",
                         "actuator:ma:gear", "body:lower:scale", "geom:lgeom:size[0]",
                         "site:asite:pos",   "body:finger:pos",  "joint:hinge:pos",
                         "body:arm2:inertia",  "actuator:mh:gear", "actuator:gf:gainprm",
                         "actuator:gf:biasprm", "option:gravity", "mjdiff:contact_stiffness",
                         "joint:a1:damping", "joint:ball:armature",
                         "geom:floor:friction[0]"};
  int nname = (int)(sizeof(names) / sizeof(names[0]));
  char err[500];
  mjdiffParams* p = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, s, names, nname, &p, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(p), ns = m->nsensordata, ndx = 2 * m->nv + m->na, nu = m->nu;
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, s, p, &w, err, sizeof(err)), MJDIFF_OK) << err;
  mjModel* mc = mj_copyModel(nullptr, m);
  mjData* dc = mj_makeData(mc);
  std::vector<mjtNum> v0(np), v(np), C((size_t)ns * ndx), D((size_t)ns * nu), Q((size_t)ns * np);
  mjdiff_getParamValues(m, s, p, v0.data());
  unsigned long long seed = 77;
  double worst = 0, weight = 0;
  for (int b = 1; b < m->nbody; b++) weight += m->body_mass[b] * mju_norm3(m->opt.gravity);
  std::string worstWhere;
  for (int k = 0; k < 8; k++) {
    randomState(m, d, s, &seed, 40 + 9 * k, k % 2);
    std::vector<mjtNum> state = testutil::getState(m, d);
    ASSERT_EQ(mjdiff_sensorJacobian(m, d, s, w, C.data(), D.data(), Q.data(), err, sizeof(err)),
              MJDIFF_OK) << err;
    // sensordata at p + dp, same state, controls and applied forces
    auto at = [&](int i, double h) {
      std::vector<mjtNum> out(ns);
      mj_copyModel(mc, m);
      v = v0;
      v[i] += h;
      EXPECT_EQ(mjdiff_setParamValues(mc, s, p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
      shim_setState(mc, dc, state.data());
      mju_copy(dc->ctrl, d->ctrl, nu);
      mju_copy(dc->xfrc_applied, d->xfrc_applied, 6 * m->nbody);
      EXPECT_EQ(mjdiff_forward(mc, dc, s, err, sizeof(err)), MJDIFF_OK) << err;
      out.assign(dc->sensordata, dc->sensordata + ns);
      return out;
    };
    for (int i = 0; i < np; i++) {
      double h = 1e-5 * std::fmax(std::fabs(v0[i]), 1.0);
      auto fd = [&](double e) {
        std::vector<mjtNum> a = at(i, e), b = at(i, -e), g(ns);
        for (int r = 0; r < ns; r++) g[r] = (a[r] - b[r]) / (2 * e);
        return g;
      };
      std::vector<mjtNum> f1 = fd(h), f2 = fd(2 * h), f4 = fd(4 * h);
      std::vector<mjtNum> F = testutil::richardson(f1, f2), F2 = testutil::richardson(f2, f4);
      for (int j = 0; j < m->nsensor; j++) {
        if (!mjdiff_sensorSupported(m, j)) continue;
        // floor: 1e-4 of the reading (rounding of the differences), at least 1e-4; force and
        // torque readings are sums of forces of the size of the model's weight M g that cancel
        // (a free body's, a world site's reading): the library's differences (step 1e-5 of the
        // value, 1e-6 for values below 0.1) round at ~1e3 eps M g / 1e-6 ~ 1e-8, so their floor
        // is 1e-3 M g (N, N m); accelerometers likewise with g
        double e = 0, scale = 1e-4, ref = 0;
        if (m->sensor_type[j] == mjSENS_FORCE || m->sensor_type[j] == mjSENS_TORQUE) {
          scale = 1e-3 * weight;
        } else if (m->sensor_type[j] == mjSENS_ACCELEROMETER) {
          scale = 1e-3 * mju_norm3(m->opt.gravity);
        }
        for (int r = m->sensor_adr[j]; r < m->sensor_adr[j] + m->sensor_dim[j]; r++) {
          scale = std::fmax(scale, 1e-4 * std::fabs(d->sensordata[r]));
        }
        for (int r = m->sensor_adr[j]; r < m->sensor_adr[j] + m->sensor_dim[j]; r++) {
          e = std::fmax(e, std::fabs(Q[(size_t)np * r + i] - F[r]));
          scale = std::fmax(scale, std::fabs(F[r]));
          ref = std::fmax(ref, std::fabs(F[r] - F2[r]));
        }
        // the reference's own error, estimated by two Richardson extrapolations (steps h, 2h
        // and 2h, 4h), is allowed on top: in a stiff contact a column of 4e3 is known to 1e-4
        double rel = std::fmax(e - 2 * ref, 0.0) / scale;
        if (rel > worst) {
          worst = rel;
          worstWhere = std::string(mjdiff_paramName(p, i)) + " / " +
                       TypeName(m->sensor_type[j]) + " #" + std::to_string(j);
        }
        EXPECT_LE(rel, 1e-5) << "sample " << k << ": " << mjdiff_paramName(p, i) << " / "
                             << TypeName(m->sensor_type[j]) << " #" << j << " an "
                             << Q[(size_t)np * m->sensor_adr[j] + i] << " fd "
                             << F[m->sensor_adr[j]] << " fd2 " << F2[m->sensor_adr[j]];
      }
    }
  }
  std::cout << "sensor parameter columns: worst relative error " << worst << " in " << worstWhere
            << "\n";
  mj_deleteData(dc);
  mj_deleteModel(mc);
  mjdiff_freeStepDeriv(w);
  mjdiff_freeParams(p);
}
