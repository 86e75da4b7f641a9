// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc --adapt (tools/mpc/adapt.c): the windowed joint state-and-parameter estimator
// recovers a step change in mass. The plant (tools/common/plant.c) is the slide cart of
// testutil.h (2 kg) that picks up a 2 kg payload at 1 s, driven by random controls, read with
// noise (std 1e-3); the estimator starts from the nominal 2 kg and must end within 3% of 4 kg
// after the change, within 3% of 2 kg before it, and its prior must hold the estimate when the
// readings carry no information (controls and state at rest).

#include <gtest/gtest.h>
#include <mjdiff/mjdiff.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "testutil.h"

extern "C" {
#include "adapt.h"
#include "plant.h"
}

namespace {

TEST(MpcAdapt, RecoversAStepChangeInMass) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  char err[1024];
  toolPlant* plant = tool_parsePlant(m, "payload cart 2 at 1\nnoise * 0.001\nseed 3\n", "t", err,
                                     sizeof(err));
  ASSERT_NE(plant, nullptr) << err;
  mpcAdaptOptions opt;
  mpc_defaultAdaptOptions(&opt);
  opt.window = 0.2;
  opt.sigma_sensor = 0.001;
  opt.drift_rel = 0.1;
  mpcAdapt* a = mpc_makeAdapt(m, sim.sim.s, "body:cart:mass", &opt, err, sizeof(err));
  ASSERT_NE(a, nullptr) << err;
  ASSERT_EQ(mpc_adaptCount(a), 1);
  EXPECT_DOUBLE_EQ(mpc_adaptValues(a)[0], 2);

  mjData* d0 = mj_makeData(m);
  tool_plantReset(plant, d0);
  unsigned long long seed = 5;
  std::vector<double> y(m->nsensordata), x(m->nq + m->nv);
  double u = 0, before = NAN;
  int T = 300;  // 3 s at 10 ms
  for (int k = 0; k < T; k++) {
    if (k % 5 == 0) u = 4 * (2 * testutil::uniform(&seed) - 1);
    mjData* dp = tool_plantData(plant);
    tool_plantSense(plant, y.data());
    x[0] = dp->qpos[0];
    x[1] = dp->qvel[0];
    int ready = mpc_adaptPush(a, dp->time, x.data(), &u, y.data());
    ASSERT_TRUE(tool_plantStep(plant, &u, err, sizeof(err))) << err;
    if (ready) {
      ASSERT_TRUE(mpc_adaptUpdate(a, err, sizeof(err))) << err;
    }
    if (k == 95) before = mpc_adaptValues(a)[0];
  }
  std::printf("mass estimate before the step %.4f (true 2), after %.4f (true 4)\n", before,
              mpc_adaptValues(a)[0]);
  EXPECT_NEAR(before, 2, 0.03 * 2);
  EXPECT_NEAR(mpc_adaptValues(a)[0], 4, 0.03 * 4);
  EXPECT_GE(mpc_adaptUpdates(a), 14);
  EXPECT_EQ(mpc_adaptFailures(a), 0);

  // no information (at rest, no control): the prior holds the estimate
  double held = mpc_adaptValues(a)[0];
  mjData* dp = tool_plantData(plant);
  mju_zero(dp->qpos, m->nq);
  mju_zero(dp->qvel, m->nv);
  mpc_adaptDropWindow(a);
  u = 0;
  for (int k = 0; k < 100; k++) {
    tool_plantSense(plant, y.data());
    x[0] = dp->qpos[0];
    x[1] = dp->qvel[0];
    int ready = mpc_adaptPush(a, dp->time, x.data(), &u, y.data());
    ASSERT_TRUE(tool_plantStep(plant, &u, err, sizeof(err))) << err;
    if (ready) {
      ASSERT_TRUE(mpc_adaptUpdate(a, err, sizeof(err))) << err;
    }
  }
  std::printf("held at rest: %.4f -> %.4f\n", held, mpc_adaptValues(a)[0]);
  EXPECT_NEAR(mpc_adaptValues(a)[0], held, 0.05 * held);

  // unknown names are refused with the name
  mpcAdapt* bad = mpc_makeAdapt(m, sim.sim.s, "body:nocart:mass", &opt, err, sizeof(err));
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(std::string(err).find("nocart"), std::string::npos) << err;
  mj_deleteData(d0);
  mpc_freeAdapt(a);
  tool_freePlant(plant);
}

}  // namespace
