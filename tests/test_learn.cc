// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Policy learning (<mjdiff/learn.h>, learn/learn.c):
// - the policy gradient of the whole training objective (a fixed-seed batch of randomised starts
//   and goals, BPTT through the smooth step and the MLP) against central differences of that
//   objective, along single weights (first layer, hidden, output, biases) and random directions,
//   at several weight points, on two small models:
//     "pendulum": an actuated cart with a ball-jointed pendulum (no contact; the observation holds
//                 the ball's quaternion, so the state-to-tangent move of the observation gradient
//                 is exercised), goal: a target point for the bob;
//     "push":     an actuated slider pushing a free sphere along a floor (pusher-puck and
//                 puck-floor contacts active the whole rollout, friction), goal: the puck's x;
//   tolerance |fd - g| <= tol max(|g|, |fd|, 1e-3 |grad|_inf), with a guard that the gradient is
//   not zero and that the difference is not the same number;
// - the objective's value from the gradient path (the backward sweep's step loss) equals the
//   forward-only path's (mjdiff_step, the baselines' path) to 1e-12;
// - determinism: objective and gradient bit for bit equal at 1, 2 and 3 threads; a different seed
//   gives a different objective;
// - bad input: a network of the wrong shape, a goal term that is not a fixed-point position term.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>
#include <mjdiff/learn.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/nn.h>
#include <mjdiff/params.h>
#include <mjdiff/rollout.h>
#include <mjdiff/random.h>
#include <mjdiff/task.h>

#include "shim.h"
extern "C" {
#include "ppo.h"  // tools/learn: mjdiff-learn's PPO baseline
}

namespace {

const char* kPendulumXml = R"(
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body name="cart" pos="0 0 1">
      <joint name="slide" type="slide" axis="1 0 0" damping="0.5"/>
      <geom type="box" size="0.1 0.05 0.05" mass="1" contype="0" conaffinity="0"/>
      <body name="pole">
        <joint name="ball" type="ball" damping="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.05 0.02 -0.4" size="0.02" mass="0.3" contype="0" conaffinity="0"/>
        <site name="bob" pos="0.05 0.02 -0.4"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="slide" gear="5" ctrllimited="true" ctrlrange="-1 1"/></actuator>
</mujoco>)";

const char* kPendulumTask =
    "horizon 0.3\n"
    "position site:bob 0.1 0 0.6 1\n"
    "jointvel slide 0 0.01\n"
    "control 0.01\n"
    "success 0 0.05\n";

const char* kPushXml = R"(
<mujoco>
  <option timestep="0.005"/>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="2000"/>
    <numeric name="mjdiff_contact_damping" data="5"/>
    <numeric name="mjdiff_contact_width" data="0.005"/>
    <numeric name="mjdiff_friction_speed" data="0.1"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" contype="1" conaffinity="1" friction="0.3 0.005 0.0001"/>
    <body name="pusher" pos="0 0 0.05">
      <joint name="px" type="slide" axis="1 0 0" damping="1"/>
      <geom name="pusher" type="sphere" size="0.03" mass="0.5" contype="2" conaffinity="2"/>
    </body>
    <body name="puck" pos="0.079 0 0.0495">
      <freejoint/>
      <geom name="puck" type="sphere" size="0.05" mass="0.2" contype="3" conaffinity="3" friction="0.3 0.005 0.0001"/>
      <site name="puck_center"/>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="px" gear="10" ctrllimited="true" ctrlrange="-1 1"/></actuator>
</mujoco>)";

const char* kPushTask =
    "horizon 0.2\n"
    "position site:puck_center 0.2 0 0.05 10 smoothabs 0.02\n"
    "control 0.001\n"
    "success 0 0.02\n";

struct Problem {
  mjModel* m = nullptr;
  mjdiffModel* s = nullptr;
  mjdiffTask* task = nullptr;
  mjdiffMLP* net = nullptr;
  mjdiffLearnOptions opt;
  ~Problem() {
    mjdiff_freeMLP(net);
    mjdiff_freeTask(task);
    mjdiff_freeModel(s);
    if (m) mj_deleteModel(m);
  }
};

mjModel* loadXml(const char* xml) {
  char err[1000] = "";
  mjModel* m = shim_loadString(xml, err, sizeof(err));
  EXPECT_NE(m, nullptr) << err;
  return m;
}

mjdiffTask* readTaskText(const mjModel* m, const char* text) {
  FILE* f = tmpfile();
  fputs(text, f);
  rewind(f);
  char err[500] = "";
  mjdiffTask* t = mjdiff_readTaskFile(m, f, "test.task", err, sizeof(err));
  fclose(f);
  EXPECT_NE(t, nullptr) << err;
  return t;
}

void setup(Problem* p, const char* xml, const char* task, int horizon, double lo[3], double hi[3],
           double noise, int relative) {
  p->m = loadXml(xml);
  ASSERT_NE(p->m, nullptr);
  char err[1000] = "";
  ASSERT_EQ(mjdiff_makeModel(p->m, nullptr, &p->s, err, sizeof(err)), MJDIFF_OK) << err;
  p->task = readTaskText(p->m, task);
  ASSERT_NE(p->task, nullptr);
  mjdiff_defaultLearnOptions(&p->opt);
  p->opt.horizon = horizon;
  p->opt.key = -1;
  p->opt.start_noise = noise;
  p->opt.vel_noise = noise;
  p->opt.goal_term = 0;
  p->opt.goal_relative = relative;
  for (int k = 0; k < 3; k++) {
    p->opt.goal_lo[k] = lo[k];
    p->opt.goal_hi[k] = hi[k];
  }
  mjdiffMLPDef def;
  mjdiff_defaultMLPDef(&def);
  ASSERT_EQ(mjdiff_parseMLPSpec("mlp:8,6", &def, err, sizeof(err)), MJDIFF_OK) << err;
  def.nin = mjdiff_learnObsSize(p->m, &p->opt);
  def.nout = (int)p->m->nu;
  ASSERT_EQ(mjdiff_makeMLP(&def, &p->net, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_initMLP(p->net, MJDIFF_INIT_XAVIER_UNIFORM, 7, 1.0, err, sizeof(err)), MJDIFF_OK);
}

void setupPendulum(Problem* p, int relative = 0) {
  double lo[3] = {-0.1, -0.1, 0.55}, hi[3] = {0.2, 0.1, 0.65};
  setup(p, kPendulumXml, kPendulumTask, 40, lo, hi, 0.05, relative);
}

void setupPush(Problem* p, int relative = 0) {
  double lo[3] = {0.12, 0, 0.05}, hi[3] = {0.25, 0, 0.05};
  setup(p, kPushXml, kPushTask, 40, lo, hi, 0.002, relative);
}

mjdiffLearner* makeLearner(Problem* p, int nthread) {
  char err[1000] = "";
  mjdiffLearner* L = nullptr;
  EXPECT_EQ(mjdiff_makeLearner(p->m, p->s, p->m, p->task, &p->opt, p->net, nthread, &L, err,
                               sizeof(err)),
            MJDIFF_OK)
      << err;
  return L;
}

// the objective checkGradient differentiates: the short one (mjdiff_learnObjectiveShort) while
// g_short is set, else mjdiff_learnObjective
const mjdiffLearnShort* g_short = nullptr;

double objective(mjdiffLearner* L, const mjdiffMLP* net, int B, double* grad) {
  char err[1000] = "";
  double J = NAN;
  mjdiffStatus st = g_short ? mjdiff_learnObjectiveShort(L, net, 1234, B, g_short, &J, grad,
                                                         nullptr, nullptr, err, sizeof(err))
                            : mjdiff_learnObjective(L, net, 1234, B, &J, grad, nullptr, nullptr,
                                                    err, sizeof(err));
  EXPECT_EQ(st, MJDIFF_OK) << err;
  return J;
}

// gradient against central differences along single weights and random directions at npoint
// weight points; returns the worst error ratio |fd - g| / max(|g|, |fd|, 1e-3 |grad|_inf)
double checkGradient(Problem* p, int B, int npoint, double h) {
  mjdiffLearner* L = makeLearner(p, 2);
  if (!L) return INFINITY;
  int n = mjdiff_mlpParamCount(p->net);
  double* w = mjdiff_mlpParams(p->net);
  std::vector<double> grad(n), w0(w, w + n);
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, 99);
  double worst = 0;
  int checked = 0;
  for (int point = 0; point < npoint; point++) {
    for (int i = 0; i < n; i++) w[i] = w0[i] + 0.3 * (2 * mjdiff_rngUniform(&rng) - 1) * (point > 0);
    std::vector<double> wp(w, w + n);
    objective(L, p->net, B, grad.data());
    double ginf = 0;
    for (double g : grad) ginf = std::fmax(ginf, std::fabs(g));
    EXPECT_GT(ginf, 1e-6) << "the gradient is zero";
    // directions: weights of the first layer, the last hidden layer, the output layer, biases; and
    // three random unit directions
    std::vector<std::vector<double>> dirs;
    const mjdiffMLPDef* def = mjdiff_mlpDef(p->net);
    // in each layer's W and b the weight of the largest gradient (weights of inputs that stay
    // zero, such as a planar model's out-of-plane quaternion parts, have exactly zero gradient)
    std::vector<int> picks;
    for (int layer = 0; layer <= def->nhidden; layer++) {
      int w0 = mjdiff_mlpWeightOffset(p->net, layer), b0 = mjdiff_mlpBiasOffset(p->net, layer);
      int b1 = layer < def->nhidden ? mjdiff_mlpWeightOffset(p->net, layer + 1) : n;
      int best_w = w0, best_b = b0;
      for (int i = w0; i < b0; i++) if (std::fabs(grad[i]) > std::fabs(grad[best_w])) best_w = i;
      for (int i = b0; i < b1; i++) if (std::fabs(grad[i]) > std::fabs(grad[best_b])) best_b = i;
      picks.push_back(best_w);
      picks.push_back(best_b);
    }
    for (int k : picks) {
      std::vector<double> v(n, 0.0);
      v[k] = 1;
      dirs.push_back(v);
    }
    for (int r = 0; r < 3; r++) {
      std::vector<double> v(n);
      double nv = 0;
      for (int i = 0; i < n; i++) {
        v[i] = 2 * mjdiff_rngUniform(&rng) - 1;
        nv += v[i] * v[i];
      }
      for (double& x : v) x /= std::sqrt(nv);
      dirs.push_back(v);
    }
    for (const auto& v : dirs) {
      double gv = 0;
      for (int i = 0; i < n; i++) gv += grad[i] * v[i];
      for (int i = 0; i < n; i++) w[i] = wp[i] + h * v[i];
      double Jp = objective(L, p->net, B, nullptr);
      for (int i = 0; i < n; i++) w[i] = wp[i] - h * v[i];
      double Jm = objective(L, p->net, B, nullptr);
      for (int i = 0; i < n; i++) w[i] = wp[i];
      double fd = (Jp - Jm) / (2 * h);
      EXPECT_NE(fd, gv);  // two different computations
      double ratio = std::fabs(fd - gv) / std::fmax(std::fmax(std::fabs(gv), std::fabs(fd)), 1e-3 * ginf);
      worst = std::fmax(worst, ratio);
      checked++;
    }
  }
  EXPECT_EQ(checked, npoint * (2 * (mjdiff_mlpDef(p->net)->nhidden + 1) + 3));
  for (int i = 0; i < n; i++) w[i] = w0[i];
  mjdiff_freeLearner(L);
  return worst;
}

TEST(Learn, PolicyGradientNoContactMatchesFiniteDifferences) {
  Problem p;
  setupPendulum(&p);
  ASSERT_NE(p.net, nullptr);
  double worst = checkGradient(&p, 3, 3, 1e-6);
  printf("pendulum (ball joint, no contact): worst relative error %.3g over 27 directions (3 points x 9)\n", worst);
  EXPECT_LT(worst, 1e-5);
}

TEST(Learn, PolicyGradientContactMatchesFiniteDifferences) {
  Problem p;
  setupPush(&p);
  ASSERT_NE(p.net, nullptr);
  // the contacts are active: the puck moves in the rollout of the start weights
  {
    mjdiffLearner* L = makeLearner(&p, 1);
    ASSERT_NE(L, nullptr);
    mjData* d = mj_makeData(p.m);
    std::vector<double> x0(p.m->nq + p.m->nv), goal(3);
    mjdiff_learnSample(L, 1234, 0, x0.data(), goal.data());
    mju_copy(d->qpos, x0.data(), (int)p.m->nq);
    char err[500];
    ASSERT_EQ(mjdiff_forward(p.m, d, p.s, err, sizeof(err)), MJDIFF_OK);
    int pusher_puck = 0;
    for (int i = 0; i < d->ncon; i++) {
      int g1 = d->contact[i].geom1, g2 = d->contact[i].geom2;
      if ((g1 == 1 && g2 == 2) || (g1 == 2 && g2 == 1)) pusher_puck++;
    }
    EXPECT_EQ(pusher_puck, 1) << "the pusher must touch the puck at the start";
    EXPECT_GE(d->ncon, 2);
    mj_deleteData(d);
    mjdiff_freeLearner(L);
  }
  double worst = checkGradient(&p, 3, 3, 1e-6);
  printf("push (pusher-puck, puck-floor contacts): worst relative error %.3g over 27 directions (3 points x 9)\n",
         worst);
  EXPECT_LT(worst, 1e-4);
}

// the goal relative to the term's object, e = g - p(q), in the observation: its state gradient
// goes through the object's point Jacobian (the pendulum's bob below a ball joint, the puck's
// free joint)
TEST(Learn, PolicyGradientRelativeGoalMatchesFiniteDifferences) {
  for (int which = 0; which < 2; which++) {
    Problem p;
    if (which == 0) setupPendulum(&p, 1); else setupPush(&p, 1);
    ASSERT_NE(p.net, nullptr);
    EXPECT_EQ(mjdiff_mlpDef(p.net)->nin, (int)(p.m->nq + p.m->nv) + 6);
    double worst = checkGradient(&p, 3, 2, 1e-6);
    printf("%s with g - p(q) observed: worst relative error %.3g over 18 directions\n",
           which ? "push" : "pendulum", worst);
    EXPECT_LT(worst, which ? 1e-4 : 1e-5);
  }
}

// SHAC's short objective: rollouts from given start states (moving, off the sampled set), a
// discount and a value network's terminal estimate, whose state adjoint goes through the
// observation (the relative goal's point Jacobian included). Its gradient against central
// differences; its records (costs, observations, end states) reproduce J_b; with gamma 1, no
// value and sampled starts it is mjdiff_learnObjective's J.
TEST(Learn, ShortObjectiveWithValueMatchesFiniteDifferences) {
  for (int which = 0; which < 2; which++) {
    Problem p;
    if (which == 0) setupPendulum(&p, 1); else setupPush(&p, 1);
    ASSERT_NE(p.net, nullptr);
    char err[1000] = "";
    mjdiffMLPDef vdef;
    mjdiff_defaultMLPDef(&vdef);
    ASSERT_EQ(mjdiff_parseMLPSpec("mlp:8", &vdef, err, sizeof(err)), MJDIFF_OK) << err;
    vdef.nin = mjdiff_mlpDef(p.net)->nin;
    vdef.nout = 1;
    mjdiffMLP* value = nullptr;
    ASSERT_EQ(mjdiff_makeMLP(&vdef, &value, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_initMLP(value, MJDIFF_INIT_XAVIER_UNIFORM, 3, 1.0, err, sizeof(err)), MJDIFF_OK);
    mjdiffLearner* L = makeLearner(&p, 2);
    ASSERT_NE(L, nullptr);
    const int B = 3, T = p.opt.horizon;
    int nx = (int)(p.m->nq + p.m->nv + p.m->na), nobs = vdef.nin;
    std::vector<double> x0(B * nx), goal(B * 3);
    mjdiffRng rng;
    mjdiff_rngSeed(&rng, 5);
    for (int b = 0; b < B; b++) {
      mjdiff_learnSample(L, 777, b, x0.data() + b * nx, goal.data() + 3 * b);
      for (int i = (int)p.m->nq; i < nx; i++) x0[b * nx + i] += 0.2 * (2 * mjdiff_rngUniform(&rng) - 1);
    }
    std::vector<double> xend(B * nx), obs(B * (T + 1) * nobs), cost(B * T), per(B);
    mjdiffLearnShort sh = {x0.data(), goal.data(), value, 3.0, 0.97, xend.data(), obs.data(), cost.data()};
    double J;
    ASSERT_EQ(mjdiff_learnObjectiveShort(L, p.net, 1, B, &sh, &J, nullptr, per.data(), nullptr,
                                         err, sizeof(err)),
              MJDIFF_OK)
        << err;
    mjdiffMLPWork* vw = nullptr;
    ASSERT_EQ(mjdiff_makeMLPWork(value, 1, &vw, err, sizeof(err)), MJDIFF_OK);
    mjData* d = mj_makeData(p.m);
    double mean = 0, vterm = 0;
    for (int b = 0; b < B; b++) {
      // o_0 is the observation of the given start; o_T that of the recorded end state
      std::vector<double> o(nobs);
      mjdiff_setState(p.m, d, x0.data() + b * nx);
      mjdiff_learnObservation(L, d, goal.data() + 3 * b, o.data());
      for (int i = 0; i < nobs; i++) EXPECT_NEAR(obs[b * (T + 1) * nobs + i], o[i], 1e-12) << which << " " << b;
      mjdiff_setState(p.m, d, xend.data() + b * nx);
      mjdiff_learnObservation(L, d, goal.data() + 3 * b, o.data());
      for (int i = 0; i < nobs; i++) EXPECT_NEAR(obs[(b * (T + 1) + T) * nobs + i], o[i], 1e-12);
      double v, Jb = 0;
      ASSERT_EQ(mjdiff_mlpForward(value, vw, o.data(), 1, &v, err, sizeof(err)), MJDIFF_OK);
      for (int t = 0; t < T; t++) Jb += std::pow(0.97, t) * cost[b * T + t] / T;
      Jb += std::pow(0.97, T) * 3.0 * v / T;
      vterm += std::fabs(std::pow(0.97, T) * 3.0 * v / T);
      EXPECT_NEAR(per[b], Jb, 1e-12 * std::fmax(1, std::fabs(Jb))) << which << " " << b;
      mean += per[b] / B;
    }
    EXPECT_NEAR(J, mean, 1e-12 * std::fmax(1, std::fabs(J)));
    EXPECT_GT(vterm, 1e-3 * std::fabs(J)) << "the value term must matter";
    mj_deleteData(d);
    mjdiff_freeMLPWork(vw);
    // gamma 1, no value, sampled starts: the plain objective
    mjdiffLearnShort plain = {nullptr, nullptr, nullptr, 0, 1.0, nullptr, nullptr, nullptr};
    double Js, Jp;
    ASSERT_EQ(mjdiff_learnObjectiveShort(L, p.net, 1234, 4, &plain, &Js, nullptr, nullptr, nullptr, err, sizeof(err)), MJDIFF_OK);
    ASSERT_EQ(mjdiff_learnObjective(L, p.net, 1234, 4, &Jp, nullptr, nullptr, nullptr, err, sizeof(err)), MJDIFF_OK);
    EXPECT_NEAR(Js, Jp, 1e-12 * std::fabs(Jp));
    mjdiff_freeLearner(L);
    // the gradient (records off) against central differences
    sh.x_end = nullptr;
    sh.obs = nullptr;
    sh.cost = nullptr;
    g_short = &sh;
    double worst = checkGradient(&p, B, 2, 1e-6);
    g_short = nullptr;
    printf("%s, short objective with a value network: worst relative error %.3g over 18 directions\n",
           which ? "push" : "pendulum", worst);
    EXPECT_LT(worst, which ? 1e-4 : 1e-5);
    mjdiff_freeMLP(value);
  }
}

// trig_hinges: the pendulum on a hinge without a range, observed as (cos q, sin q); the policy
// gradient through that observation (and the relative goal) against central differences
TEST(Learn, PolicyGradientTrigHingeMatchesFiniteDifferences) {
  std::string xml = kPendulumXml;
  xml.replace(xml.find("type=\"ball\""), 11, "type=\"hinge\" axis=\"0 1 0\"");
  Problem p;
  double lo[3] = {-0.1, -0.1, 0.55}, hi[3] = {0.2, 0.1, 0.65};
  p.m = loadXml(xml.c_str());
  ASSERT_NE(p.m, nullptr);
  char err[1000] = "";
  ASSERT_EQ(mjdiff_makeModel(p.m, nullptr, &p.s, err, sizeof(err)), MJDIFF_OK) << err;
  p.task = readTaskText(p.m, kPendulumTask);
  mjdiff_defaultLearnOptions(&p.opt);
  p.opt.horizon = 40;
  p.opt.key = -1;
  p.opt.start_noise = 0.5;
  p.opt.vel_noise = 0.5;
  p.opt.goal_term = 0;
  p.opt.goal_relative = 1;
  p.opt.trig_hinges = 1;
  for (int k = 0; k < 3; k++) {
    p.opt.goal_lo[k] = lo[k];
    p.opt.goal_hi[k] = hi[k];
  }
  // slide (1) + hinge as cos, sin (2) + qvel (2) + goal (3) + goal - bob (3)
  EXPECT_EQ(mjdiff_learnObsSize(p.m, &p.opt), 11);
  mjdiffMLPDef def;
  mjdiff_defaultMLPDef(&def);
  ASSERT_EQ(mjdiff_parseMLPSpec("mlp:8,6", &def, err, sizeof(err)), MJDIFF_OK) << err;
  def.nin = mjdiff_learnObsSize(p.m, &p.opt);
  def.nout = (int)p.m->nu;
  ASSERT_EQ(mjdiff_makeMLP(&def, &p.net, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_initMLP(p.net, MJDIFF_INIT_XAVIER_UNIFORM, 7, 1.0, err, sizeof(err)), MJDIFF_OK);
  // the observation: cos and sin of the hinge angle in place of it
  mjdiffLearner* L = makeLearner(&p, 1);
  ASSERT_NE(L, nullptr);
  mjData* d = mj_makeData(p.m);
  d->qpos[0] = 0.1;
  d->qpos[1] = 2.5;
  std::vector<double> obs(11), g = {0.1, 0, 0.6};
  mjdiff_learnObservation(L, d, g.data(), obs.data());
  EXPECT_EQ(obs[0], 0.1);
  EXPECT_NEAR(obs[1], std::cos(2.5), 1e-15);
  EXPECT_NEAR(obs[2], std::sin(2.5), 1e-15);
  EXPECT_EQ(obs[5], 0.1);  // the goal after qvel
  mj_deleteData(d);
  mjdiff_freeLearner(L);
  double worst = checkGradient(&p, 3, 2, 1e-6);
  printf("pendulum on an unlimited hinge, (cos, sin) observed: worst relative error %.3g\n", worst);
  EXPECT_LT(worst, 1e-5);
}

// training rollouts with action noise (the same draws in the forward and backward passes): the
// gradient of the noisy objective against its central differences; the noise changes J
TEST(Learn, PolicyGradientWithActionNoiseMatchesFiniteDifferences) {
  for (int which = 0; which < 2; which++) {
    Problem p;
    if (which == 0) setupPendulum(&p, 1); else setupPush(&p);
    ASSERT_NE(p.net, nullptr);
    std::vector<double> g(mjdiff_mlpParamCount(p.net));
    mjdiffLearner* L0 = makeLearner(&p, 2);
    double J0 = objective(L0, p.net, 3, g.data());
    mjdiff_freeLearner(L0);
    p.opt.action_noise = 0.3;
    mjdiffLearner* L1 = makeLearner(&p, 2);
    double J1 = objective(L1, p.net, 3, g.data());
    double J1b = objective(L1, p.net, 3, g.data());
    mjdiff_freeLearner(L1);
    EXPECT_NE(J0, J1) << "the noise must change the rollouts";
    EXPECT_EQ(J1, J1b) << "the noise is a function of the seed";
    double worst = checkGradient(&p, 3, 2, 1e-6);
    printf("%s with action noise 0.3: worst relative error %.3g over 18 directions\n",
           which ? "push" : "pendulum", worst);
    EXPECT_LT(worst, which ? 1e-4 : 1e-5);
  }
}

// grad_decay: 1 is the exact gradient bit for bit; 0.5 leaves the objective's value and changes
// its gradient (the sweep's recursion itself: Rollout.GradientDecayIsTheScaledAdjointRecursion),
// the same at 1 and 3 threads; outside [0, 1] the learner is refused, naming the value
TEST(Learn, GradDecayReachesTheSweep) {
  Problem p;
  setupPush(&p);
  ASSERT_NE(p.net, nullptr);
  int n = mjdiff_mlpParamCount(p.net);
  std::vector<double> g0(n), g1(n), gh(n), gh3(n);
  mjdiffLearner* L = makeLearner(&p, 2);
  double J0 = objective(L, p.net, 3, g0.data());
  mjdiff_freeLearner(L);
  p.opt.grad_decay = 1;
  L = makeLearner(&p, 2);
  double J1 = objective(L, p.net, 3, g1.data());
  mjdiff_freeLearner(L);
  p.opt.grad_decay = 0.5;
  L = makeLearner(&p, 1);
  double Jh = objective(L, p.net, 3, gh.data());
  mjdiff_freeLearner(L);
  L = makeLearner(&p, 3);
  objective(L, p.net, 3, gh3.data());
  mjdiff_freeLearner(L);
  EXPECT_EQ(J0, J1);
  EXPECT_EQ(g0, g1);
  EXPECT_EQ(J0, Jh);
  EXPECT_EQ(gh, gh3);
  double num = 0, den = 0;
  for (int i = 0; i < n; i++) {
    num += (gh[i] - g0[i]) * (gh[i] - g0[i]);
    den += g0[i] * g0[i];
  }
  EXPECT_GT(std::sqrt(num / den), 1e-3) << "the decay did not reach the sweep";
  char err[1000] = "";
  mjdiffLearner* bad = nullptr;
  p.opt.grad_decay = 1.5;
  EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, nullptr, p.task, &p.opt, p.net, 1, &bad, err,
                               sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("grad_decay 1.5"), std::string::npos) << err;
  EXPECT_EQ(bad, nullptr);
}

// mjdiff-learn's PPO baseline (tools/learn/ppo.c): the clipped surrogate's gradient in the policy's
// weights and log-stds against central differences, on a minibatch of the push's sampled batch
// after the weights and log-stds moved off the sampling policy (ratios away from 1, some clipped)
TEST(Learn, PpoSurrogateGradientMatchesFiniteDifferences) {
  Problem p;
  setupPush(&p);
  ASSERT_NE(p.net, nullptr);
  mjdiffLearner* L = makeLearner(&p, 1);
  ASSERT_NE(L, nullptr);
  char err[1000] = "";
  const int B = 4, M = 64;
  ppoState* ppo = ppo_make(L, p.m, p.net, B, p.opt.horizon, 3e-4, 1, 10, M, 0, 7, err,
                           sizeof(err));
  ASSERT_NE(ppo, nullptr) << err;
  mjdiffLearnStats st;
  ASSERT_EQ(ppo_sample(ppo, 11, &st, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_mlpParamCount(p.net), nu = p.m->nu, n = np + nu;
  double* theta = mjdiff_mlpParams(p.net);
  double* logstd = ppo_logstd(ppo);
  unsigned long long seed = 19;
  for (int i = 0; i < np; i++) theta[i] += 0.05 * (shim_uniform(&seed) - 0.5);
  for (int i = 0; i < nu; i++) logstd[i] += 0.2;
  std::vector<int> idx(M);
  for (int k = 0; k < M; k++) idx[k] = (7 * k + 3) % (B * p.opt.horizon);
  double L0 = ppo_surrogate(ppo, idx.data(), M, err, sizeof(err));
  ASSERT_TRUE(std::isfinite(L0)) << err;
  std::vector<double> g(ppo_gradient(ppo), ppo_gradient(ppo) + n);
  auto at = [&](const std::vector<double>& dir, double h) {
    for (int i = 0; i < np; i++) theta[i] += h * dir[i];
    for (int i = 0; i < nu; i++) logstd[i] += h * dir[np + i];
    double v = ppo_surrogate(ppo, idx.data(), M, err, sizeof(err));
    for (int i = 0; i < np; i++) theta[i] -= h * dir[i];
    for (int i = 0; i < nu; i++) logstd[i] -= h * dir[np + i];
    return v;
  };
  double worst = 0;
  for (int r = 0; r < 8; r++) {
    std::vector<double> dir(n, 0);
    if (r < nu) {
      dir[np + r] = 1;  // a log-std alone
    } else {
      for (auto& v : dir) v = shim_uniform(&seed) - 0.5;
    }
    double h = 1e-6, fd = (at(dir, h) - at(dir, -h)) / (2 * h);
    double an = 0;
    for (int i = 0; i < n; i++) an += g[i] * dir[i];
    double rel = std::fabs(an - fd) / (std::fabs(fd) + 1e-8);
    worst = std::max(worst, rel);
    EXPECT_NEAR(an, fd, 1e-5 * std::fabs(fd) + 1e-9) << "direction " << r;
  }
  printf("ppo surrogate: worst relative error %.3g over 8 directions\n", worst);
  EXPECT_NE(L0, 0) << "the surrogate must not vanish";
  ppo_free(ppo);
  mjdiff_freeLearner(L);
}

TEST(Learn, ForwardOnlyObjectiveEqualsGradientPath) {
  for (int which = 0; which < 2; which++) {
    Problem p;
    if (which == 0) setupPendulum(&p); else setupPush(&p);
    ASSERT_NE(p.net, nullptr);
    mjdiffLearner* L = makeLearner(&p, 2);
    ASSERT_NE(L, nullptr);
    std::vector<double> grad(mjdiff_mlpParamCount(p.net));
    double Jg = objective(L, p.net, 4, grad.data());
    double Jf = objective(L, p.net, 4, nullptr);
    EXPECT_NEAR(Jg, Jf, 1e-12 * std::fabs(Jg)) << which;
    EXPECT_GT(Jg, 0);
    // the many-networks form: the same numbers
    const mjdiffMLP* nets[2] = {p.net, p.net};
    double J2[2];
    char err[500];
    ASSERT_EQ(mjdiff_learnObjectiveMany(L, nets, 2, 1234, 4, J2, nullptr, err, sizeof(err)),
              MJDIFF_OK)
        << err;
    EXPECT_EQ(J2[0], Jf);
    EXPECT_EQ(J2[1], Jf);
    mjdiff_freeLearner(L);
  }
}

TEST(Learn, DeterministicAtAnyThreadCount) {
  Problem p;
  setupPush(&p);
  ASSERT_NE(p.net, nullptr);
  int n = mjdiff_mlpParamCount(p.net);
  std::vector<std::vector<double>> grads;
  std::vector<double> Js;
  for (int nt : {1, 2, 3}) {
    mjdiffLearner* L = makeLearner(&p, nt);
    ASSERT_NE(L, nullptr);
    std::vector<double> g(n);
    Js.push_back(objective(L, p.net, 5, g.data()));
    grads.push_back(g);
    mjdiff_freeLearner(L);
  }
  for (size_t k = 1; k < Js.size(); k++) {
    EXPECT_EQ(Js[k], Js[0]);
    EXPECT_EQ(0, memcmp(grads[k].data(), grads[0].data(), sizeof(double) * n)) << k;
  }
  // another seed: other starts and goals, another objective
  mjdiffLearner* L = makeLearner(&p, 2);
  double J;
  char err[500];
  ASSERT_EQ(mjdiff_learnObjective(L, p.net, 1235, 5, &J, nullptr, nullptr, nullptr, err, sizeof(err)),
            MJDIFF_OK);
  EXPECT_NE(J, Js[0]);
  mjdiff_freeLearner(L);
}

// skip_failed: rollouts whose smooth step diverges (the pusher-puck contact 1e4 times too stiff)
// are left out and counted; the others' mean is the objective, the same at 1 and 2 threads;
// without skip_failed the call fails naming the rollout; with every rollout failing it fails too
TEST(Learn, SkipFailedRollouts) {
  Problem p;
  setupPush(&p);
  ASSERT_NE(p.net, nullptr);
  char err[1000] = "";
  ASSERT_EQ(mjdiff_setParam(p.s, "geom:pusher:contact_stiffness", 2e7, err, sizeof(err)), MJDIFF_OK) << err;
  p.opt.horizon = 5;
  p.opt.start_noise = 0.03;  // about half the starts leave a gap: no contact in 5 steps
  int n = mjdiff_mlpParamCount(p.net);
  double J[2];
  std::vector<double> per(16), g1(n), g2(n);
  mjdiffLearnStats st[2];
  for (int k = 0; k < 2; k++) {
    mjdiffLearner* L = makeLearner(&p, 1);
    ASSERT_NE(L, nullptr);
    EXPECT_NE(mjdiff_learnObjective(L, p.net, 5, 16, J, nullptr, nullptr, nullptr, err, sizeof(err)),
              MJDIFF_OK);
    EXPECT_NE(std::string(err).find("rollout "), std::string::npos) << err;
    mjdiff_freeLearner(L);
  }
  p.opt.skip_failed = 1;
  for (int k = 0; k < 2; k++) {
    mjdiffLearner* L = makeLearner(&p, k + 1);
    ASSERT_NE(L, nullptr);
    ASSERT_EQ(mjdiff_learnObjective(L, p.net, 5, 16, J + k, k ? g2.data() : g1.data(), per.data(),
                                    st + k, err, sizeof(err)),
              MJDIFF_OK)
        << err;
    mjdiff_freeLearner(L);
  }
  printf("skip_failed: %d of 16 rollouts diverged\n", st[0].failed);
  EXPECT_GT(st[0].failed, 0);
  EXPECT_LT(st[0].failed, 16);
  EXPECT_EQ(st[0].failed, st[1].failed);
  EXPECT_EQ(J[0], J[1]);
  EXPECT_EQ(0, memcmp(g1.data(), g2.data(), sizeof(double) * n));
  double sum = 0;
  int nok = 0, nnan = 0;
  for (double c : per) {
    if (std::isnan(c)) nnan++; else { sum += c; nok++; }
  }
  EXPECT_EQ(nnan, st[0].failed);
  EXPECT_NEAR(J[0], sum / nok, 1e-14 * std::fabs(J[0]));
  // every rollout failing: an error
  p.opt.start_noise = 0;
  mjdiffLearner* L = makeLearner(&p, 1);
  ASSERT_NE(L, nullptr);
  EXPECT_NE(mjdiff_learnObjective(L, p.net, 5, 4, J, nullptr, nullptr, nullptr, err, sizeof(err)),
            MJDIFF_OK);
  mjdiff_freeLearner(L);
}

TEST(Learn, BadInputIsNamed) {
  Problem p;
  setupPush(&p);
  ASSERT_NE(p.net, nullptr);
  char err[1000] = "";
  mjdiffLearner* L = nullptr;
  // wrong network shape
  mjdiffMLPDef def = *mjdiff_mlpDef(p.net);
  def.nin += 1;
  mjdiffMLP* bad = nullptr;
  ASSERT_EQ(mjdiff_makeMLP(&def, &bad, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, nullptr, p.task, &p.opt, bad, 1, &L, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("inputs"), std::string::npos) << err;
  EXPECT_EQ(L, nullptr);
  mjdiff_freeMLP(bad);
  // goal term 1 is the control term
  mjdiffLearnOptions o = p.opt;
  o.goal_term = 1;
  EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, nullptr, p.task, &o, p.net, 1, &L, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("goal term 1"), std::string::npos) << err;
  // no native model: the native plant is refused
  L = makeLearner(&p, 1);
  ASSERT_NE(L, nullptr);
  mjdiffLearnStats st;
  EXPECT_EQ(mjdiff_learnEvaluate(L, p.net, MJDIFF_PLANT_NATIVE, 1, 2, 0.1, &st, err, sizeof(err)),
            MJDIFF_OK);  // p.m was given as the native model
  mjdiff_freeLearner(L);
  ASSERT_EQ(mjdiff_makeLearner(p.m, p.s, nullptr, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
            MJDIFF_OK);
  EXPECT_EQ(mjdiff_learnEvaluate(L, p.net, MJDIFF_PLANT_NATIVE, 1, 2, 0.1, &st, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  mjdiff_freeLearner(L);
}

// Domain randomisation (nrandom): with a factor range of one point (2x the puck's mass, 1.5x the
// floor's friction) the objective and its gradient are bit for bit those of a learner on a copy of
// the model with those values set; with ranges, the gradient of the randomised objective against
// central differences (the draws are the item's: the objective is a deterministic function of the
// weights), the same at 1 and 3 threads, different from the objective without; evaluation is the
// training model's; a name that does not resolve or a range not 0 < lo <= hi fails naming it
TEST(Learn, DomainRandomisation) {
  Problem p;
  setupPush(&p);
  ASSERT_NE(p.net, nullptr);
  char err[1000] = "";
  const char* names[] = {"body:puck:mass", "geom:floor:friction[0]"};
  double one_lo[] = {2, 1.5}, one_hi[] = {2, 1.5};
  int n = mjdiff_mlpParamCount(p.net);

  // the reference: a copy of the model with the values set
  mjModel* m2 = mj_copyModel(nullptr, p.m);
  mjdiffModel* s2 = nullptr;
  ASSERT_EQ(mjdiff_copyModel(p.s, m2, &s2, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffParams* par = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m2, s2, names, 2, &par, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> v(mjdiff_paramCount(par));
  ASSERT_EQ(v.size(), 2u);
  mjdiff_getParamValues(m2, s2, par, v.data());
  v[0] *= 2;
  v[1] *= 1.5;
  ASSERT_EQ(mjdiff_setParamValues(m2, s2, par, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffLearner* L2 = nullptr;
  ASSERT_EQ(mjdiff_makeLearner(m2, s2, m2, p.task, &p.opt, p.net, 2, &L2, err, sizeof(err)),
            MJDIFF_OK) << err;
  std::vector<double> gref(n), gone(n), g0(n);
  double Jref = objective(L2, p.net, 4, gref.data());
  mjdiff_freeLearner(L2);
  L2 = makeLearner(&p, 1);
  double J0 = objective(L2, p.net, 4, g0.data());
  mjdiff_freeLearner(L2);

  p.opt.nrandom = 2;
  p.opt.random_names = names;
  p.opt.random_lo = one_lo;
  p.opt.random_hi = one_hi;
  mjdiffLearner* L = makeLearner(&p, 2);
  ASSERT_NE(L, nullptr);
  double Jone = objective(L, p.net, 4, gone.data());
  EXPECT_EQ(Jone, Jref);
  EXPECT_EQ(0, memcmp(gone.data(), gref.data(), sizeof(double) * n));
  EXPECT_NE(Jone, J0);
  // evaluation is the training model's, not the randomised one's
  mjdiffLearnStats st0, st1;
  mjdiffLearner* Lplain = nullptr;
  mjdiffLearnOptions plain = p.opt;
  plain.nrandom = 0;
  ASSERT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &plain, p.net, 1, &Lplain, err, sizeof(err)),
            MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_learnEvaluate(L, p.net, MJDIFF_PLANT_SMOOTH, 7, 3, 0.2, &st0, err, sizeof(err)),
            MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_learnEvaluate(Lplain, p.net, MJDIFF_PLANT_SMOOTH, 7, 3, 0.2, &st1, err,
                                 sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(st0.cost, st1.cost);
  mjdiff_freeLearner(Lplain);
  mjdiff_freeLearner(L);

  // ranges: the gradient against central differences, thread counts
  double lo[] = {0.5, 0.7}, hi[] = {2, 1.4};
  p.opt.random_lo = lo;
  p.opt.random_hi = hi;
  double worst = checkGradient(&p, 3, 2, 1e-6);
  printf("push with domain randomisation: worst relative error %.3g\n", worst);
  EXPECT_LT(worst, 1e-4);
  std::vector<double> g1(n), g3(n);
  L = makeLearner(&p, 1);
  double J1 = objective(L, p.net, 5, g1.data());
  mjdiff_freeLearner(L);
  L = makeLearner(&p, 3);
  double J3 = objective(L, p.net, 5, g3.data());
  mjdiff_freeLearner(L);
  EXPECT_EQ(J1, J3);
  EXPECT_EQ(0, memcmp(g1.data(), g3.data(), sizeof(double) * n));

  // bad input
  const char* bad_names[] = {"body:nosuch:mass"};
  double blo[] = {0.5}, bhi[] = {2}, zlo[] = {0};
  p.opt.nrandom = 1;
  p.opt.random_names = bad_names;
  p.opt.random_lo = blo;
  p.opt.random_hi = bhi;
  L = nullptr;
  EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("nosuch"), std::string::npos) << err;
  p.opt.random_names = names;
  p.opt.random_lo = zlo;
  EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("body:puck:mass"), std::string::npos) << err;
  EXPECT_EQ(L, nullptr);
  // refused: a geom's smooth-model field (review: at a factor of 1 it changed the objective, the
  // value set on one geom replacing its pairs' combined law) and geometry
  const char* refused[] = {"geom:puck:contact_stiffness", "geom:*:friction_speed",
#if mjVERSION_HEADER < 3000000
                           "site:puck_center:pos", "geom:puck:size[0]", "geom:puck:pos"
#endif
  };
  p.opt.random_lo = blo;
  for (const char* r : refused) {
    p.opt.random_names = &r;
    EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
              MJDIFF_ERR_VALUE) << r;
    EXPECT_NE(std::string(err).find("cannot be randomised"), std::string::npos) << err;
    EXPECT_EQ(L, nullptr);
  }
  // refused by the selection itself, named: a free body's position (the state), a model-wide
  // value the model derives per element; on 3.x the puck's geometry (MuJoCo 3 compiles the puck
  // as a simple body)
  const char* unselectable[] = {"body:puck:pos", "mjdiff:limit_stiffness",
#if mjVERSION_HEADER >= 3000000
                                "site:puck_center:pos", "geom:puck:size[0]", "geom:puck:pos"
#endif
  };
  for (const char* r : unselectable) {
    p.opt.random_names = &r;
    EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
              MJDIFF_ERR_VALUE) << r;
    EXPECT_NE(std::string(err).find(r), std::string::npos) << err;
    EXPECT_EQ(L, nullptr);
  }
  // a model-wide value the MJCF sets (mjdiff_contact_stiffness) is randomised like any other: a
  // one-point range of 1 leaves objective and gradient bit for bit those without randomisation
  {
    const char* wide[] = {"mjdiff:contact_stiffness"};
    double one[] = {1};
    mjdiffLearnOptions o = p.opt;
    o.nrandom = 1;
    o.random_names = wide;
    o.random_lo = one;
    o.random_hi = one;
    mjdiffLearnOptions plain1 = p.opt;
    plain1.nrandom = 0;
    mjdiffLearner *Lw = nullptr, *Lp = nullptr;
    ASSERT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &o, p.net, 2, &Lw, err, sizeof(err)),
              MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &plain1, p.net, 2, &Lp, err,
                                 sizeof(err)), MJDIFF_OK) << err;
    std::vector<double> gw(n), gp(n);
    EXPECT_EQ(objective(Lw, p.net, 3, gw.data()), objective(Lp, p.net, 3, gp.data()));
    EXPECT_EQ(gw, gp);
    mjdiff_freeLearner(Lw);
    mjdiff_freeLearner(Lp);
  }
#if mjVERSION_HEADER < 3000000
  // refused: an attached model (its copies would carry the adapter's disable flags)
  p.opt.random_names = names;
  ASSERT_EQ(mjdiff_attach(p.m, p.s, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("attached"), std::string::npos) << err;
  EXPECT_EQ(L, nullptr);
  mjdiff_detach(p.m);
#endif
  mjdiff_freeParams(par);
  mjdiff_freeModel(s2);
  mj_deleteModel(m2);
}

// noise_joints: the start noise moves the named joints only, by the draws it gives them without
// the list (the other joints' draws are consumed all the same); a name that is no joint, a joint
// that is neither hinge nor slide, or an empty name fails naming it
TEST(Learn, NoiseJointsMoveOnlyThoseJoints) {
  const char* xml = R"(
<mujoco>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="ja" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/>
      <body name="b">
        <joint name="jb" type="hinge" axis="0 1 0"/>
        <joint name="jc" type="slide" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.2" contype="0"
              conaffinity="0"/>
        <site name="tip" pos="0 0 -0.3"/>
      </body>
    </body>
    <body name="c" pos="1 0 1">
      <joint name="jd" type="ball"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor joint="ja" ctrllimited="true" ctrlrange="-1 1"/></actuator>
</mujoco>)";
  Problem p;
  double lo[3] = {0, 0, 0.5}, hi[3] = {0.1, 0, 0.7};
  setup(&p, xml, "horizon 0.1\nposition site:tip 0 0 0.7 1\ncontrol 0.01\n", 10, lo, hi, 0.1, 0);
  ASSERT_NE(p.net, nullptr);
  const mjModel* m = p.m;
  int nx = m->nq + m->nv + m->na;
  std::vector<double> all(nx), some(nx), goalAll(3), goalSome(3);
  mjdiffLearner* L = makeLearner(&p, 1);
  ASSERT_NE(L, nullptr);
  mjdiff_learnSample(L, 5, 2, all.data(), goalAll.data());
  mjdiff_freeLearner(L);
  p.opt.noise_joints = "jc,ja";
  L = makeLearner(&p, 1);
  ASSERT_NE(L, nullptr);
  mjdiff_learnSample(L, 5, 2, some.data(), goalSome.data());
  mjdiff_freeLearner(L);
  int ja = mj_name2id(m, mjOBJ_JOINT, "ja"), jb = mj_name2id(m, mjOBJ_JOINT, "jb");
  int jc = mj_name2id(m, mjOBJ_JOINT, "jc");
  for (int j : {ja, jc}) {  // moved as without the list
    int qa = m->jnt_qposadr[j], va = m->nq + m->jnt_dofadr[j];
    EXPECT_NE(some[qa], m->qpos0[qa]);
    EXPECT_EQ(some[qa], all[qa]);
    EXPECT_EQ(some[va], all[va]);
  }
  int qb = m->jnt_qposadr[jb], vb = m->nq + m->jnt_dofadr[jb];
  EXPECT_NE(all[qb], m->qpos0[qb]);  // jb moves without the list ...
  EXPECT_EQ(some[qb], m->qpos0[qb]);  // ... and not with it
  EXPECT_EQ(some[vb], 0);
  for (int k = 0; k < 3; k++) EXPECT_EQ(goalSome[k], goalAll[k]);
  for (int i = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "jd")]; i < m->nq; i++) {
    EXPECT_EQ(some[i], m->qpos0[i]);  // the ball joint never
  }

  const char* bad[][2] = {{"ja,nosuch", "no joint 'nosuch'"},
                          {"jd", "joint 'jd' is a ball joint"},
                          {"ja,", "empty"}};
  for (auto& b : bad) {
    char err[1000] = "";
    p.opt.noise_joints = b[0];
    L = nullptr;
    EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
              MJDIFF_ERR_VALUE) << b[0];
    EXPECT_EQ(L, nullptr);
    EXPECT_NE(std::string(err).find(b[1]), std::string::npos) << err;
  }
}

}  // namespace

// The closed-loop design gradient (issue 17, mjdiff-design --policy): a learned policy
// (mjdiff_makeLearnPolicy, goal-relative observation on the learner's own copy of the initial
// model) as the fixed controller of a rollout differentiable in geometry parameters; the loss
// L = c . qvel_T (c random), its gradient grad_param (rollout adjoint through the policy's state
// VJP) against central differences of the same closed loop with the parameters set through
// mjdiff_setParamValues. Relative to max |g|, tolerance 1e-5; the gradient must be nonzero.
namespace {

void closedLoopDesignGrad(Problem* p, const char* const* names, int nnames, double tol) {
  char err[1000] = "";
  mjModel* nominal = mj_copyModel(nullptr, p->m);
  mjdiffLearner* L = nullptr;
  ASSERT_EQ(mjdiff_makeLearner(nominal, p->s, nullptr, p->task, &p->opt, p->net, 1, &L, err,
                               sizeof(err)), MJDIFF_OK) << err;
  mjdiffLearnPolicy* pol = nullptr;
  ASSERT_EQ(mjdiff_makeLearnPolicy(L, p->net, &pol, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffPolicy policy;
  mjdiff_learnPolicy(pol, &policy);
  policy.nparam = 0;
  mjdiffParams* par = nullptr;
  ASSERT_EQ(mjdiff_makeParams(p->m, p->s, names, nnames, &par, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(par), T = p->opt.horizon;
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(p->m, p->s, par, T, nullptr, &r, err, sizeof(err)), MJDIFF_OK) << err;
  mjModel* m = p->m;
  mjData* d = mj_makeData(m);
  int nx = m->nq + m->nv + m->na, ndx = 2 * m->nv + m->na;
  std::vector<double> x0(nx), goal(3), c(m->nv), v0(np), gp(np), dLdx(ndx, 0.0);
  mjdiff_learnSample(L, 3, 0, x0.data(), goal.data());
  mjdiff_learnPolicySetGoal(pol, goal.data());
  mjdiffRng rng;
  mjdiff_rngSeed(&rng, 11);
  for (int i = 0; i < m->nv; i++) c[i] = 2 * mjdiff_rngUniform(&rng) - 1;
  for (int i = 0; i < m->nv; i++) dLdx[m->nv + i] = c[i];
  mjdiff_getParamValues(m, p->s, par, v0.data());
  auto loss = [&](const std::vector<double>& v, double* grad) {
    EXPECT_EQ(mjdiff_setParamValues(m, p->s, par, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
    mj_resetData(m, d);
    mjdiff_setState(m, d, x0.data());
    d->time = 0;
    EXPECT_EQ(mjdiff_rolloutForward(m, d, p->s, r, nullptr, &policy, nullptr, nullptr, nullptr,
                                    err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_EQ(mjdiff_learnPolicyStatus(pol, err, sizeof(err)), MJDIFF_OK) << err;
    double l = 0;
    for (int i = 0; i < m->nv; i++) l += c[i] * d->qvel[i];
    if (grad) {
      mjdiffRolloutGrad g;
      mjdiff_defaultRolloutGrad(&g);
      g.dLdx_T = dLdx.data();
      g.grad_param = grad;
      EXPECT_EQ(mjdiff_rolloutGradient(m, d, p->s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
    }
    return l;
  };
  loss(v0, gp.data());
  double gmax = 0, worst = 0;
  for (int i = 0; i < np; i++) gmax = std::fmax(gmax, std::fabs(gp[i]));
  EXPECT_GT(gmax, 1e-6) << "the closed-loop design gradient is zero";
  for (int i = 0; i < np; i++) {
    double h = 1e-6 * std::fmax(std::fabs(v0[i]), 0.1);
    std::vector<double> vp = v0, vm = v0, vp2 = v0, vm2 = v0;
    vp[i] += h;
    vm[i] -= h;
    vp2[i] += 2 * h;
    vm2[i] -= 2 * h;
    double d1 = (loss(vp, nullptr) - loss(vm, nullptr)) / (2 * h);
    double d2 = (loss(vp2, nullptr) - loss(vm2, nullptr)) / (4 * h);
    double fd = (4 * d1 - d2) / 3;  // Richardson
    double e = std::fabs(fd - gp[i]) / gmax;
    worst = std::fmax(worst, e);
    EXPECT_LT(e, tol) << mjdiff_paramName(par, i) << ": adjoint " << gp[i] << " fd " << fd;
  }
  std::printf("closed-loop design gradient: %d params, worst rel error %.2e (|g| max %.3g)\n", np,
              worst, gmax);
  mjdiff_setParamValues(m, p->s, par, v0.data(), err, sizeof(err));
  mj_deleteData(d);
  mjdiff_freeRollout(r);
  mjdiff_freeParams(par);
  mjdiff_freeLearnPolicy(pol);
  mjdiff_freeLearner(L);
  mj_deleteModel(nominal);
}

// hide_joints: the named joints' positions are observed as 0 (a hinge or slide's qpos, a free
// joint's 3 position entries; its orientation and every velocity stay observed) and their
// entries of the observation's adjoint carry nothing; the policy gradient with hidden joints
// against central differences (the cart's slide on the pendulum; the puck's free joint on the
// push, contacts active); a ball joint or an unknown name fails naming it
TEST(Learn, HiddenJointsAreNotObservedAndTheGradientMatches) {
  {
    Problem p;
    setupPendulum(&p, 1);
    ASSERT_NE(p.net, nullptr);
    int nobs = mjdiff_learnObsSize(p.m, &p.opt);
    mjdiffLearner* L0 = makeLearner(&p, 1);
    p.opt.hide_joints = "slide";
    mjdiffLearner* L1 = makeLearner(&p, 1);
    ASSERT_NE(L0, nullptr);
    ASSERT_NE(L1, nullptr);
    EXPECT_EQ(mjdiff_learnObsSize(p.m, &p.opt), nobs);
    mjData* d = mj_makeData(p.m);
    d->qpos[0] = 0.3;
    d->qpos[1] = std::cos(0.2);
    d->qpos[2] = std::sin(0.2);
    d->qvel[0] = 0.7;
    std::vector<double> o0(nobs), o1(nobs), g = {0.1, 0, 0.6};
    mjdiff_learnObservation(L0, d, g.data(), o0.data());
    mjdiff_learnObservation(L1, d, g.data(), o1.data());
    EXPECT_EQ(o0[0], 0.3);
    EXPECT_EQ(o1[0], 0);
    for (int i = 1; i < nobs; i++) EXPECT_EQ(o1[i], o0[i]) << i;  // the velocity 0.7 included
    mj_deleteData(d);
    mjdiff_freeLearner(L0);
    mjdiff_freeLearner(L1);
    double worst = checkGradient(&p, 3, 2, 1e-6);
    printf("pendulum, the cart's slide hidden: worst relative error %.3g\n", worst);
    EXPECT_LT(worst, 1e-5);
  }
  {
    std::string xml = kPushXml;
    xml.replace(xml.find("<freejoint/>"), 12, "<freejoint name=\"pf\"/>");
    Problem p;
    double lo[3] = {0.12, 0, 0.05}, hi[3] = {0.25, 0, 0.05};
    setup(&p, xml.c_str(), kPushTask, 40, lo, hi, 0.002, 1);
    ASSERT_NE(p.net, nullptr);
    int nobs = mjdiff_learnObsSize(p.m, &p.opt);
    p.opt.hide_joints = "pf";
    mjdiffLearner* L = makeLearner(&p, 1);
    ASSERT_NE(L, nullptr);
    mjData* d = mj_makeData(p.m);
    mju_copy(d->qpos, p.m->qpos0, (int)p.m->nq);
    mj_forward(p.m, d);
    std::vector<double> o(nobs), g = {0.2, 0, 0.05};
    mjdiff_learnObservation(L, d, g.data(), o.data());
    EXPECT_EQ(o[0], d->qpos[0]);                          // the pusher's slide
    for (int k = 1; k < 4; k++) EXPECT_EQ(o[k], 0) << k;  // the puck's position
    for (int k = 4; k < 8; k++) EXPECT_EQ(o[k], d->qpos[k]) << k;  // its orientation
    EXPECT_NE(o[nobs - 3], 0);  // e = g - p(q) still sees where the puck is
    mj_deleteData(d);
    mjdiff_freeLearner(L);
    double worst = checkGradient(&p, 3, 2, 1e-6);
    printf("push, the puck's free-joint position hidden: worst relative error %.3g\n", worst);
    EXPECT_LT(worst, 1e-4);
  }
  {
    Problem p;
    setupPendulum(&p);
    ASSERT_NE(p.net, nullptr);
    const char* bad[][2] = {{"ball", "hide_joints: joint 'ball' is a ball joint"},
                            {"slide,nosuch", "hide_joints: no joint 'nosuch'"}};
    for (auto& b : bad) {
      char err[1000] = "";
      p.opt.hide_joints = b[0];
      mjdiffLearner* L = nullptr;
      EXPECT_EQ(mjdiff_makeLearner(p.m, p.s, p.m, p.task, &p.opt, p.net, 1, &L, err, sizeof(err)),
                MJDIFF_ERR_VALUE) << b[0];
      EXPECT_EQ(L, nullptr);
      EXPECT_NE(std::string(err).find(b[1]), std::string::npos) << err;
    }
  }
}

}  // namespace

TEST(LearnPolicyDesign, ClosedLoopGradientPendulumScale) {
  Problem p;
  setupPendulum(&p, 1);
  const char* names[] = {"body:pole:scale", "body:cart:pos"};
  closedLoopDesignGrad(&p, names, 2, 1e-5);
}

TEST(LearnPolicyDesign, ClosedLoopGradientPushContactSizes) {
  // the push model with both spheres 2 mm off their bodies' origins: MuJoCo 3 compiles a body
  // whose inertial frame is its body frame as simple (a diagonal mass matrix fixed at compile
  // time) and refuses geometry parameters there; with the offsets both hosts differentiate both
  std::string xml = kPushXml;
  for (const char* g : {"name=\"pusher\" type=\"sphere\"", "name=\"puck\" type=\"sphere\""}) {
    size_t at = xml.find(g);
    ASSERT_NE(at, std::string::npos) << g;
    xml.insert(at + strlen(g), " pos=\"0.002 0 0\"");
  }
  Problem p;
  double lo[3] = {0.12, 0, 0.05}, hi[3] = {0.25, 0, 0.05};
  setup(&p, xml.c_str(), kPushTask, 40, lo, hi, 0.002, 1);
  const char* names[] = {"geom:pusher:size", "geom:puck:size"};
  closedLoopDesignGrad(&p, names, 2, 1e-5);
}
