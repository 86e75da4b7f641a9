// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// State layouts (<mjdiff/state.h>): sizes and rows on a model whose qpos and dof addresses differ
// (free, ball, hinge, slide joints and a filter actuator), differences and integration as
// inverses of each other, and the gradient transport against centered differences of a function
// of the state array (the guard: a plain copy of the qpos gradient is measurably wrong there).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <mjdiff/mjdiff.h>

#include "shim.h"
#include "testutil.h"

namespace {

using testutil::uniform;

constexpr const char* kXml = R"(
<mujoco>
  <worldbody>
    <body name="free" pos="0 0 1"><freejoint name="root"/><geom size="0.1"/>
      <body name="ball" pos="0.2 0 0"><joint name="ball" type="ball"/><geom size="0.05"/>
        <body name="hinge" pos="0.2 0 0"><joint name="hinge" axis="0 1 0"/><geom size="0.05"/>
          <body name="welded" pos="0.1 0 0"><geom size="0.03"/></body>
        </body>
      </body>
    </body>
    <body name="slider" pos="1 0 0.5"><joint name="slide" type="slide" axis="1 0 0"/>
      <geom size="0.05"/></body>
  </worldbody>
  <actuator>
    <motor name="m" joint="hinge"/>
    <general name="f" joint="slide" dyntype="filter" dynprm="0.1"/>
  </actuator>
</mujoco>)";

TEST(State, SizesAndRows) {
  shimSim sim;
  ASSERT_TRUE(shim_open(&sim, kXml, nullptr)) << sim.err;
  const mjModel* m = sim.m;
  ASSERT_EQ(m->nq, 7 + 4 + 1 + 1);
  ASSERT_EQ(m->nv, 6 + 3 + 1 + 1);
  ASSERT_EQ(m->na, 1);
  EXPECT_EQ(mjdiff_stateSize(m), 13 + 11 + 1);
  EXPECT_EQ(mjdiff_tangentSize(m), 2 * 11 + 1);

  int dq = -5, dv = -5, qp = -5, qv = -5;
  int ball = mj_name2id(m, mjOBJ_JOINT, "ball"), hinge = mj_name2id(m, mjOBJ_JOINT, "hinge");
  int slide = mj_name2id(m, mjOBJ_JOINT, "slide");
  EXPECT_EQ(mjdiff_jointTangentRows(m, ball, &dq, &dv), 3);
  EXPECT_EQ(dq, 6);
  EXPECT_EQ(dv, 11 + 6);
  EXPECT_EQ(mjdiff_jointStateRows(m, ball, &qp, &qv), 4);
  EXPECT_EQ(qp, 7);
  EXPECT_EQ(qv, 13 + 6);
  // the hinge: qpos entry 11, dof 9 (the mix-up the layouts invite)
  EXPECT_EQ(mjdiff_jointTangentRows(m, hinge, &dq, &dv), 1);
  EXPECT_EQ(dq, 9);
  EXPECT_EQ(mjdiff_jointStateRows(m, hinge, &qp, nullptr), 1);
  EXPECT_EQ(qp, 11);
  EXPECT_EQ(mjdiff_jointTangentRows(m, slide, nullptr, &dv), 1);
  EXPECT_EQ(dv, 11 + 10);
  EXPECT_EQ(mjdiff_jointTangentRows(m, -1, &dq, &dv), -1);
  EXPECT_EQ(mjdiff_jointStateRows(m, m->njnt, &qp, &qv), -1);

  EXPECT_EQ(mjdiff_bodyTangentRows(m, mj_name2id(m, mjOBJ_BODY, "free"), &dq, &dv), 6);
  EXPECT_EQ(dq, 0);
  EXPECT_EQ(dv, 11);
  EXPECT_EQ(mjdiff_bodyTangentRows(m, mj_name2id(m, mjOBJ_BODY, "welded"), &dq, &dv), 0);
  EXPECT_EQ(dq, -1);
  EXPECT_EQ(mjdiff_bodyTangentRows(m, m->nbody, &dq, &dv), -1);

  EXPECT_EQ(mjdiff_actuatorTangentRow(m, mj_name2id(m, mjOBJ_ACTUATOR, "m")), -1);
  EXPECT_EQ(mjdiff_actuatorTangentRow(m, mj_name2id(m, mjOBJ_ACTUATOR, "f")), 22);
  EXPECT_EQ(mjdiff_actuatorTangentRow(m, 5), -1);

  // get/set round trip
  std::vector<mjtNum> x(mjdiff_stateSize(m)), y(x.size());
  unsigned long long seed = 3;
  for (auto& v : x) v = uniform(&seed);
  mjdiff_setState(m, sim.d, x.data());
  mjdiff_getState(m, sim.d, y.data());
  EXPECT_EQ(x, y);
  shim_close(&sim);
}

// a random state with unit quaternions
std::vector<mjtNum> randomState(const mjModel* m, unsigned long long* seed) {
  std::vector<mjtNum> x(m->nq + m->nv + m->na);
  for (auto& v : x) v = 2 * uniform(seed) - 1;
  for (int j = 0; j < m->njnt; j++) {
    int t = m->jnt_type[j], a = m->jnt_qposadr[j] + (t == mjJNT_FREE ? 3 : 0);
    if (t == mjJNT_FREE || t == mjJNT_BALL) mju_normalize4(x.data() + a);
  }
  return x;
}

TEST(State, DiffAndIntegrateAreInverse) {
  shimSim sim;
  ASSERT_TRUE(shim_open(&sim, kXml, nullptr)) << sim.err;
  const mjModel* m = sim.m;
  int nx = mjdiff_stateSize(m), ndx = mjdiff_tangentSize(m);
  unsigned long long seed = 11;
  double worst = 0;
  for (int trial = 0; trial < 50; trial++) {
    std::vector<mjtNum> x = randomState(m, &seed), dx(ndx), back(ndx), y(nx);
    for (auto& v : dx) v = 2 * uniform(&seed) - 1;  // rotations below pi
    mjdiff_stateIntegrate(m, x.data(), dx.data(), 1, y.data());
    mjdiff_stateDiff(m, x.data(), y.data(), back.data());
    for (int i = 0; i < ndx; i++) worst = std::fmax(worst, std::fabs(back[i] - dx[i]));
    // in place, and scale
    std::vector<mjtNum> z(x);
    mjdiff_stateIntegrate(m, z.data(), dx.data(), -0.5, z.data());
    mjdiff_stateDiff(m, x.data(), z.data(), back.data());
    for (int i = 0; i < ndx; i++) worst = std::fmax(worst, std::fabs(back[i] + 0.5 * dx[i]));
  }
  EXPECT_LE(worst, 1e-12);
  std::cout << "diff(x, x (+) dx) - dx: worst " << worst << "\n";
  shim_close(&sim);
}

// f(x) = c . x + (x . x)^2 / 4 over the raw state array (quaternion components included)
double f(const std::vector<mjtNum>& c, const mjtNum* x, int n, mjtNum* grad) {
  double xx = 0, v = 0;
  for (int i = 0; i < n; i++) {
    xx += x[i] * x[i];
    v += c[i] * x[i];
  }
  if (grad) {
    for (int i = 0; i < n; i++) grad[i] = c[i] + xx * x[i];
  }
  return v + xx * xx / 4;
}

TEST(State, GradientToTangentMatchesFiniteDifferences) {
  shimSim sim;
  ASSERT_TRUE(shim_open(&sim, kXml, nullptr)) << sim.err;
  const mjModel* m = sim.m;
  int nx = mjdiff_stateSize(m), ndx = mjdiff_tangentSize(m);
  unsigned long long seed = 5;
  double worst = 0, naiveWorst = 0;
  for (int trial = 0; trial < 20; trial++) {
    std::vector<mjtNum> x = randomState(m, &seed), c(nx), gx(nx), gdx(ndx), y(nx);
    for (auto& v : c) v = 2 * uniform(&seed) - 1;
    f(c, x.data(), nx, gx.data());
    mjdiff_stateGradToTangent(m, x.data(), gx.data(), gdx.data());
    for (int k = 0; k < ndx; k++) {
      std::vector<mjtNum> e(ndx, 0);
      auto at = [&](double h) {
        e[k] = h;
        mjdiff_stateIntegrate(m, x.data(), e.data(), 1, y.data());
        return f(c, y.data(), nx, nullptr);
      };
      double h = 1e-5;
      double g1 = (at(h) - at(-h)) / (2 * h), g2 = (at(2 * h) - at(-2 * h)) / (4 * h);
      double fd = testutil::richardson(g1, g2);
      double err = std::fabs(gdx[k] - fd) / std::fmax(1, std::fabs(fd));
      worst = std::fmax(worst, err);
      EXPECT_LE(err, 1e-8) << "trial " << trial << " row " << k << ": " << gdx[k] << " vs " << fd;
    }
    // guard: reading the qpos gradient by dof address (the mix-up) is wrong on this model
    for (int k = 0; k < m->nv; k++) {
      naiveWorst = std::fmax(naiveWorst, std::fabs(gx[k] - gdx[k]));
    }
  }
  EXPECT_GT(naiveWorst, 1e-2);
  std::cout << "gradient transport: worst relative error " << worst
            << "; a plain copy of the qpos gradient would be off by " << naiveWorst << "\n";
  shim_close(&sim);
}

}  // namespace
