// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The plant file (tools/common/plant.c): parsing, every error path (the message names the file and
// line), and that the changes are applied -- parameter offsets and step changes at their times
// (the plant's trajectory equals mj_step on a copy of the model with those values set), the
// actuator delay (the delayed plant under u_k equals the plain one under u_{k-D}, exactly), the
// payload, sensor bias and noise (sample mean and std), and the reset.

#include <gtest/gtest.h>
#include <mjdiff/mjdiff.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "testutil.h"

extern "C" {
#include "plant.h"
}

namespace {

struct Plant {
  toolPlant* p = nullptr;
  char err[1024] = "";
  Plant(const mjModel* m, const char* text) { p = tool_parsePlant(m, text, "test.plant", err, 1024); }
  ~Plant() { tool_freePlant(p); }
};

std::string armPath() { return std::string(MJDIFF_MODEL_DIR) + "/arm_box.xml"; }

TEST(Plant, ParsesStatements) {
  testutil::Sim sim(nullptr, armPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  Plant pl(m,
           "# a plant\n"
           "seed 5\n"
           "scale joint:*:damping 2   # every joint\n"
           "set actuator:motor1:gear 44\n"
           "\n"
           "add geom:floor:friction[0] -0.3 at 1.5\n"
           "payload link7 0.8 at 0.5\n"
           "noise * 0.001\n"
           "noise joint1_pos 0.01\n"
           "bias ee_pos 0.1 0.2 0.3\n"
           "delay 0.0041\n");
  ASSERT_NE(pl.p, nullptr) << pl.err;
  EXPECT_EQ(tool_plantChanges(pl.p), 4);
  EXPECT_EQ(tool_plantDelaySteps(pl.p), 2);  // 4.1 ms at 2 ms: 2 steps
  EXPECT_EQ(tool_plantNoisy(pl.p), 1);
  int j1 = mj_name2id(m, mjOBJ_JOINT, "joint1");
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "joint:joint1:damping"), 2 * m->dof_damping[m->jnt_dofadr[j1]]);
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "actuator:motor1:gear"), 44);
  // not yet: the changes at 0.5 s and 1.5 s
  int b7 = mj_name2id(m, mjOBJ_BODY, "link7");
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "body:link7:mass"), m->body_mass[b7]);
  EXPECT_TRUE(std::isnan(tool_plantParam(pl.p, "body:nobody:mass")));
  char err[512];
  EXPECT_TRUE(tool_plantCheck(pl.p, 2.0, err, sizeof(err))) << err;
  // the nominal model is not touched
  EXPECT_DOUBLE_EQ(m->actuator_gear[0], 40);
}

// (text, the part of the message expected)
struct BadCase {
  const char* text;
  const char* message;
};

TEST(Plant, ErrorsNameFileAndLine) {
  testutil::Sim sim(nullptr, armPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const BadCase cases[] = {
      {"set body:nosuchbody:mass 2\n", "test.plant:1: parameter 'body:nosuchbody:mass'"},
      {"# c\nscale joint:joint1:dampin 2\n", "test.plant:2: parameter 'joint:joint1:dampin'"},
      {"set mjdiff:contact_stiffness 100\n", "test.plant:1: parameter 'mjdiff:contact_stiffness'"},
      {"set body:link7:mass -1\n", "test.plant:1:"},
      {"set body:link7:mass two\n", "test.plant:1: 'two' is not a number"},
      {"set body:link7:mass 1 at -3\n", "test.plant:1: time '-3'"},
      {"set body:link7:mass 1 when 3\n", "test.plant:1: expected 'set NAME VALUE [at T]'"},
      {"payload nolink 1\n", "test.plant:1: unknown body 'nolink'"},
      {"payload link7 0\n", "test.plant:1: payload mass must be > 0"},
      {"\n\nnoise nosensor 0.1\n", "test.plant:3: unknown sensor 'nosensor'"},
      {"noise joint1_pos -1\n", "test.plant:1: noise std must be >= 0"},
      {"bias ee_pos 1 2\n", "test.plant:1: sensor 'ee_pos' has 3 components"},
      {"delay -0.1\n", "test.plant:1: expected 'delay SECONDS'"},
      {"seed x\n", "test.plant:1: expected 'seed N'"},
      {"friction 2\n", "test.plant:1: unknown statement 'friction'"},
  };
  for (const BadCase& c : cases) {
    Plant pl(sim.sim.m, c.text);
    EXPECT_EQ(pl.p, nullptr) << c.text;
    EXPECT_NE(std::strstr(pl.err, c.message), nullptr) << c.text << " -> " << pl.err;
  }
  // the run's length: a delay not shorter than the run, a change after its end
  Plant delay(sim.sim.m, "\ndelay 2.5\n");
  ASSERT_NE(delay.p, nullptr) << delay.err;
  char err[512] = "";
  EXPECT_FALSE(tool_plantCheck(delay.p, 2.0, err, sizeof(err)));
  EXPECT_NE(std::strstr(err, "test.plant:2: delay 2.5 s is not shorter than the run (2 s)"),
            nullptr) << err;
  EXPECT_TRUE(tool_plantCheck(delay.p, 3.0, err, sizeof(err))) << err;
  Plant late(sim.sim.m, "payload link7 1 at 4\n");
  ASSERT_NE(late.p, nullptr) << late.err;
  EXPECT_FALSE(tool_plantCheck(late.p, 3.0, err, sizeof(err)));
  EXPECT_NE(std::strstr(err, "test.plant:1: the change at 4 s"), nullptr) << err;
}

// random controls in [-1, 1]
std::vector<double> randomControls(int T, int nu, unsigned long long seed) {
  std::vector<double> u((size_t)T * nu);
  for (double& v : u) v = 2 * testutil::uniform(&seed) - 1;
  return u;
}

TEST(Plant, OffsetsAndStepChangesAreApplied) {
  testutil::Sim sim(nullptr, armPath().c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  Plant pl(m,
           "scale joint:*:damping 3\n"
           "add actuator:motor2:gear 10\n"
           "payload link7 2 at 0.1\n"
           "scale geom:floor:friction[0] 0.25 at 0.2\n");
  ASSERT_NE(pl.p, nullptr) << pl.err;
  // the reference: mj_step on a copy whose values are set by hand at the same steps
  mjModel* ref = mj_copyModel(nullptr, m);
  mjData* dr = mj_makeData(ref);
  mjData* d0 = mj_makeData(m);
  mj_resetDataKeyframe(m, d0, 0);
  mj_forward(m, d0);
  mj_resetDataKeyframe(ref, dr, 0);
  tool_plantReset(pl.p, d0);
  for (int i = 0; i < ref->nv; i++) ref->dof_damping[i] *= 3;
  ref->actuator_gear[6 * 1] += 10;
  int b7 = mj_name2id(m, mjOBJ_BODY, "link7");
  int floor = mj_name2id(m, mjOBJ_GEOM, "floor");
  int T = 200;  // 0.4 s
  std::vector<double> u = randomControls(T, m->nu, 7);
  char err[512];
  double maxdiff = 0, moved = 0;
  for (int k = 0; k < T; k++) {
    double t = k * m->opt.timestep;
    if (std::fabs(t - 0.1) < 1e-9) {
      // payload: mass and the subtree masses above it
      for (int b = b7; b > 0; b = ref->body_parentid[b]) ref->body_subtreemass[b] += 2;
      ref->body_subtreemass[0] += 2;
      ref->body_mass[b7] += 2;
      ref->body_simple[b7] = 0;
      ref->body_sameframe[b7] = 0;
      EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "body:link7:mass"), m->body_mass[b7]);  // before
    }
    if (std::fabs(t - 0.2) < 1e-9) ref->geom_friction[3 * floor] *= 0.25;
    ASSERT_TRUE(tool_plantStep(pl.p, u.data() + (size_t)k * m->nu, err, sizeof(err))) << err;
    mju_copy(dr->ctrl, u.data() + (size_t)k * m->nu, m->nu);
    mj_step(ref, dr);
    const mjData* dp = tool_plantData(pl.p);
    for (int i = 0; i < m->nq; i++) maxdiff = std::fmax(maxdiff, std::fabs(dp->qpos[i] - dr->qpos[i]));
    for (int i = 0; i < m->nv; i++) maxdiff = std::fmax(maxdiff, std::fabs(dp->qvel[i] - dr->qvel[i]));
    moved = std::fmax(moved, std::fabs(dp->qpos[1] - d0->qpos[1]));
  }
  EXPECT_LT(maxdiff, 1e-9);
  EXPECT_GT(moved, 0.01);  // the controls moved the arm: the comparison is not vacuous
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "body:link7:mass"), m->body_mass[b7] + 2);
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "geom:floor:friction[0]"),
                   0.25 * m->geom_friction[3 * floor]);

  // the same plant without the changes differs (the changes matter)
  Plant plain(m, "");
  ASSERT_NE(plain.p, nullptr) << plain.err;
  tool_plantReset(plain.p, d0);
  for (int k = 0; k < T; k++) {
    ASSERT_TRUE(tool_plantStep(plain.p, u.data() + (size_t)k * m->nu, err, sizeof(err)));
  }
  EXPECT_GT(std::fabs(tool_plantData(plain.p)->qpos[1] - dr->qpos[1]), 1e-3);

  // reset: back to the values at time 0 (the payload and the friction change undone)
  tool_plantReset(pl.p, d0);
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "body:link7:mass"), m->body_mass[b7]);
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "geom:floor:friction[0]"), m->geom_friction[3 * floor]);
  EXPECT_DOUBLE_EQ(tool_plantParam(pl.p, "joint:joint1:damping"), 3 * m->dof_damping[0]);
  mj_deleteData(dr);
  mj_deleteData(d0);
  mj_deleteModel(ref);
}

TEST(Plant, DelayShiftsTheControls) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  const int D = 3;
  Plant delayed(m, "delay 0.03\n");  // 3 steps of 10 ms
  Plant plain(m, "");
  ASSERT_NE(delayed.p, nullptr) << delayed.err;
  ASSERT_NE(plain.p, nullptr) << plain.err;
  EXPECT_EQ(tool_plantDelaySteps(delayed.p), D);
  mjData* d0 = mj_makeData(m);
  d0->ctrl[0] = 0.5;  // the initial control, applied until the first command arrives
  tool_plantReset(delayed.p, d0);
  tool_plantReset(plain.p, d0);
  int T = 50;
  std::vector<double> u = randomControls(T, 1, 3);
  char err[512];
  double maxdiff = 0, gap = 0;
  for (int k = 0; k < T; k++) {
    double ud = u[k];
    double up = k >= D ? u[k - D] : 0.5;
    ASSERT_TRUE(tool_plantStep(delayed.p, &ud, err, sizeof(err)));
    ASSERT_TRUE(tool_plantStep(plain.p, &up, err, sizeof(err)));
    const mjData* a = tool_plantData(delayed.p);
    const mjData* b = tool_plantData(plain.p);
    maxdiff = std::fmax(maxdiff, std::fabs(a->qpos[0] - b->qpos[0]) + std::fabs(a->qvel[0] - b->qvel[0]));
  }
  EXPECT_EQ(maxdiff, 0.0);
  // without the delay the trajectory differs (the delay is not a no-op)
  Plant undelayed(m, "");
  tool_plantReset(undelayed.p, d0);
  for (int k = 0; k < T; k++) ASSERT_TRUE(tool_plantStep(undelayed.p, &u[k], err, sizeof(err)));
  gap = std::fabs(tool_plantData(undelayed.p)->qpos[0] - tool_plantData(delayed.p)->qpos[0]);
  EXPECT_GT(gap, 1e-4);
  mj_deleteData(d0);
}

TEST(Plant, NoiseAndBiasOnReadings) {
  testutil::Sim sim(testutil::kSlideXml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  Plant pl(m, "seed 11\nnoise pos 0.02\nbias vel 0.5\n");
  ASSERT_NE(pl.p, nullptr) << pl.err;
  mjData* d0 = mj_makeData(m);
  d0->qpos[0] = 0.3;
  d0->qvel[0] = -0.2;
  tool_plantReset(pl.p, d0);
  const int n = 20000;
  double sum = 0, sum2 = 0, y[2];
  for (int i = 0; i < n; i++) {
    tool_plantSense(pl.p, y);
    sum += y[0] - 0.3;
    sum2 += (y[0] - 0.3) * (y[0] - 0.3);
    ASSERT_DOUBLE_EQ(y[1], -0.2 + 0.5);  // bias only, no noise
  }
  double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_LT(std::fabs(mean), 4 * 0.02 / std::sqrt((double)n));
  EXPECT_NEAR(sd, 0.02, 0.02 * 0.03);
  // the same seed gives the same stream after a reset
  tool_plantReset(pl.p, d0);
  double a[2], b[2];
  tool_plantSense(pl.p, a);
  tool_plantReset(pl.p, d0);
  tool_plantSense(pl.p, b);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_NE(a[0], 0.3);
  mj_deleteData(d0);
}

}  // namespace
