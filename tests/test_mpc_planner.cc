// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc planners (tools/mpc/planner.c) on every task file models/*.task.
//
//   Cost: from a fixed start (the model's first keyframe or qpos0, velocities set from a fixed
//   seed, |qvel_i| <= 0.1, so that no start sits exactly on a stationary point of the cost), one
//   mpc_plan call with a generous budget returns a cost at least 0.1% below that of zero controls
//   (J0 evaluated here independently: mjdiff_forward, mpc_cost, mjdiff_step per step); the returned
//   cost is that of the returned plan (same independent evaluation, 1e-9 relative); the plan's
//   states are the rollout's; every control lies in ctrlrange; the first control is the plan's;
//   d is not changed.
//   Gradient: the gradient planner's dJ/dz against centred finite differences of J(z) with
//   Richardson extrapolation over (eps, 2 eps), eps = 1e-6, along 3 random directions and 6 single
//   knot variables; |g.v - fd| <= 1e-5 |g| |v| (relative to the gradient's norm: single
//   components can be tiny). The two are computed differently: the adjoint sweep against rollouts.
//   Warm start: repeated calls with a shift and a small budget keep every control in range; iLQR's
//   warm start (its feedback policy around the shifted plan) reproduces the shifted plan when the
//   plant followed it, and corrects a push off it.
//   Determinism: fixed iterations and samples, seed 7: two planners with 2 threads agree bit for
//   bit, and with 1 thread too (sample i always runs on the same data, whatever thread runs it).
//   Errors: bad arguments give NULL with a message naming the field.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

extern "C" {
#include "mpc.h"
#include "planner_internal.h"
}

#include "shim.h"

namespace {

const mpcPlannerType kPlanners[] = {MPC_GRADIENT, MPC_ILQR, MPC_SAMPLING, MPC_CEM, MPC_MPPI};

double uniform(unsigned long long* s) {
  unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return (double)(z >> 11) / 9007199254740992.0;
}

// the task files present, sorted by name (model NAME.xml beside each NAME.task)
std::vector<std::string> taskNames() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(MJDIFF_MODEL_DIR)) {
    if (e.path().extension() == ".task") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// a model, its smooth model and task, the planning model (a copy with the task's timestep, or
// the model itself) and the fixed start in d
struct TaskSetup {
  shimSim sim;
  mpcTask* task = nullptr;
  mjModel* pm_own = nullptr;
  mjdiffModel* ps_own = nullptr;
  const mjModel* pm = nullptr;      // planning model
  const mjdiffModel* ps = nullptr;  // its smooth model
  bool ok = false;
  std::string msg;

  explicit TaskSetup(const std::string& name) {
    std::string xml = std::string(MJDIFF_MODEL_DIR) + "/" + name + ".xml";
    std::string path = std::string(MJDIFF_MODEL_DIR) + "/" + name + ".task";
    if (!shim_open(&sim, nullptr, xml.c_str())) {
      msg = sim.err;
      return;
    }
    char err[500] = "";
    task = mpc_readTask(sim.m, path.c_str(), err, sizeof(err));
    if (!task) {
      msg = err;
      return;
    }
    pm = sim.m;
    ps = sim.s;
    if (mpc_taskTimestep(task) > 0) {
      pm_own = mj_copyModel(nullptr, sim.m);
      pm_own->opt.timestep = mpc_taskTimestep(task);
      if (mjdiff_copyModel(sim.s, pm_own, &ps_own, err, sizeof(err)) != MJDIFF_OK) {
        msg = err;
        return;
      }
      pm = pm_own;
      ps = ps_own;
    }
    reset();
    ok = true;
  }
  ~TaskSetup() {
    mpc_freeTask(task);
    mjdiff_freeModel(ps_own);
    if (pm_own) mj_deleteModel(pm_own);
    shim_close(&sim);
  }

  // the fixed start: first keyframe (or qpos0), velocities from seed 1
  void reset() {
    const mjModel* m = sim.m;
    mj_resetData(m, sim.d);
    if (m->nkey) mj_resetDataKeyframe(m, sim.d, 0);
    unsigned long long seed = 1;
    for (int i = 0; i < m->nv; i++) sim.d->qvel[i] = 0.1 * (2 * uniform(&seed) - 1);
  }
};

// J of controls ctrl (H x nu) from the state in d, evaluated here step by step on the planning
// model; states ((H+1) x nx) optional
double referenceCost(const TaskSetup& s, const mjData* d0, int H, const double* ctrl,
                     std::vector<double>* states) {
  const mjModel* m = s.pm;
  mjData* d = mj_makeData(m);
  mj_copyData(d, m, d0);
  int nx = m->nq + m->nv + m->na;
  if (states) states->assign((size_t)(H + 1) * nx, 0);
  double J = 0;
  char err[300];
  for (int t = 0; t <= H; t++) {
    if (states) {
      mju_copy(states->data() + (size_t)t * nx, d->qpos, m->nq);
      mju_copy(states->data() + (size_t)t * nx + m->nq, d->qvel, m->nv);
      mju_copy(states->data() + (size_t)t * nx + m->nq + m->nv, d->act, m->na);
    }
    if (t < H) mju_copy(d->ctrl, ctrl + (size_t)t * m->nu, m->nu);
    if (mjdiff_forward(m, d, s.ps, err, sizeof(err)) != MJDIFF_OK) {
      mj_deleteData(d);
      return INFINITY;
    }
    J += mpc_cost(s.task, m, d, t == H, nullptr, nullptr);
    if (t < H && mjdiff_step(m, d, s.ps, err, sizeof(err)) != MJDIFF_OK) {
      mj_deleteData(d);
      return INFINITY;
    }
  }
  mj_deleteData(d);
  return J;
}

// every control within the actuator's ctrlrange
int countOutOfRange(const mjModel* m, const double* ctrl, int n) {
  int bad = 0;
  for (int t = 0; t < n; t++) {
    for (int i = 0; i < m->nu; i++) {
      double u = ctrl[(size_t)t * m->nu + i];
      if (!std::isfinite(u)) bad++;
      if (m->actuator_ctrllimited[i] &&
          (u < m->actuator_ctrlrange[2 * i] || u > m->actuator_ctrlrange[2 * i + 1])) {
        bad++;
      }
    }
  }
  return bad;
}

// the state fields mpc_plan must not change
std::vector<double> snapshot(const mjModel* m, const mjData* d) {
  std::vector<double> v(d->qpos, d->qpos + m->nq);
  v.insert(v.end(), d->qvel, d->qvel + m->nv);
  v.insert(v.end(), d->act, d->act + m->na);
  v.insert(v.end(), d->ctrl, d->ctrl + m->nu);
  v.push_back(d->time);
  return v;
}

TEST(MpcPlanner, TaskFilesPresent) {
  EXPECT_FALSE(taskNames().empty()) << "no models/*.task files in " << MJDIFF_MODEL_DIR;
}

TEST(MpcPlanner, EveryPlannerLowersCost) {
  // fixed iteration and sample counts, so that the outcome does not depend on the machine's load
  // (the wall-clock budget is then only a backstop)
  const double budget = 60.0;
  for (const std::string& name : taskNames()) {
    TaskSetup s(name);
    ASSERT_TRUE(s.ok) << name << ": " << s.msg;
    const mjModel* m = s.sim.m;
    for (mpcPlannerType type : kPlanners) {
      SCOPED_TRACE(name + " / " + mpc_plannerName(type));
      char err[500] = "";
      mpcPlanner* p = mpc_makePlanner(type, m, s.sim.s, s.task, 2, 1, err, sizeof(err));
      ASSERT_NE(p, nullptr) << err;
      mpc_plannerSetIterations(p, type == MPC_GRADIENT ? 60 : 10, 16);
      int H = 0;
      mpc_planControls(p, &H);
      ASSERT_EQ(H, (int)std::lround(mpc_taskHorizon(s.task) / s.pm->opt.timestep));
      std::vector<double> zero((size_t)H * m->nu, 0.0);
      double J0 = referenceCost(s, s.sim.d, H, zero.data(), nullptr);
      ASSERT_TRUE(std::isfinite(J0));

      // the planners' own rollout evaluation agrees with the reference
      double Jp = mpc_plannerRolloutCost(p, s.sim.d, zero.data(), nullptr);
      EXPECT_NEAR(Jp, J0, 1e-9 * std::fabs(J0));

      std::vector<double> before = snapshot(m, s.sim.d), ctrl(m->nu, NAN);
      auto t0 = std::chrono::steady_clock::now();
      double J = mpc_plan(p, s.sim.d, budget, 0, ctrl.data());
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      int nsample = 0, iter = mpc_plannerIterations(p, &nsample);
      EXPECT_EQ(snapshot(m, s.sim.d), before) << "mpc_plan changed d";

      // the returned cost: lower than zero controls', and that of the returned plan
      EXPECT_LT(J, J0 * (1 - 1e-3)) << "J0 " << J0;
      int Hc = 0, Hs = 0;
      const double* plan = mpc_planControls(p, &Hc);
      const double* states = mpc_planStates(p, &Hs);
      ASSERT_EQ(Hc, H);
      ASSERT_EQ(Hs, H);
      std::vector<double> ref_states;
      double Jr = referenceCost(s, s.sim.d, H, plan, &ref_states);
      EXPECT_NEAR(J, Jr, 1e-9 * std::fabs(Jr));
      double dmax = 0;
      for (size_t i = 0; i < ref_states.size(); i++) {
        dmax = std::max(dmax, std::fabs(ref_states[i] - states[i]));
      }
      EXPECT_LE(dmax, 1e-9) << "plan states differ from the rollout's";

      // controls within ctrlrange; the first control is the plan's
      EXPECT_EQ(countOutOfRange(m, ctrl.data(), 1), 0);
      EXPECT_EQ(countOutOfRange(m, plan, H), 0);
      for (int i = 0; i < m->nu; i++) EXPECT_EQ(ctrl[i], plan[i]);

      std::printf(
          "[ cost     ] %-10s %-9s H %4d  J0 %12.5g  J %12.5g  reduction %6.2f%%  "
          "iterations %4d  samples %2d  %.3f s\n",
          name.c_str(), mpc_plannerName(type), H, J0, J, 100 * (J0 - J) / J0, iter, nsample, secs);
      mpc_freePlanner(p);
    }
  }
}

TEST(MpcPlanner, GradientMatchesFiniteDifferences) {
  for (const std::string& name : taskNames()) {
    SCOPED_TRACE(name);
    TaskSetup s(name);
    ASSERT_TRUE(s.ok) << name << ": " << s.msg;
    const mjModel* m = s.sim.m;
    char err[500] = "";
    mpcPlanner* p = mpc_makePlanner(MPC_GRADIENT, m, s.sim.s, s.task, 1, 1, err, sizeof(err));
    ASSERT_NE(p, nullptr) << err;
    int K = 0, nknot = mpc_plannerKnots(p, &K), nz = nknot * m->nu;
    ASSERT_GT(nknot, 1);
    ASSERT_GT(K, 0);

    // knots inside the bounds, away from them
    unsigned long long seed = 3;
    std::vector<double> z(nz), g(nz);
    for (int k = 0; k < nz; k++) {
      int i = k % m->nu;
      double lo = m->actuator_ctrlrange[2 * i], hi = m->actuator_ctrlrange[2 * i + 1];
      z[k] = 0.5 * (lo + hi) + 0.25 * (hi - lo) * (2 * uniform(&seed) - 1);
    }
    double J = mpc_plannerObjective(p, s.sim.d, z.data(), g.data());
    ASSERT_TRUE(std::isfinite(J));
    EXPECT_EQ(mpc_plannerObjective(p, s.sim.d, z.data(), nullptr), J);

    // the objective is the rollout cost of the interpolated controls
    int H = 0;
    mpc_planControls(p, &H);
    std::vector<double> ctrl((size_t)H * m->nu);
    for (int t = 0; t < H; t++) {
      int j = t / K;
      double f = (double)(t % K) / K;
      for (int i = 0; i < m->nu; i++) {
        ctrl[(size_t)t * m->nu + i] = (1 - f) * z[j * m->nu + i] + f * z[(j + 1) * m->nu + i];
      }
    }
    double Jr = referenceCost(s, s.sim.d, H, ctrl.data(), nullptr);
    EXPECT_NEAR(J, Jr, 1e-9 * std::fabs(Jr));

    // directions: 3 random unit vectors and 6 single variables
    double gnorm = 0;
    for (double v : g) gnorm += v * v;
    gnorm = std::sqrt(gnorm);
    ASSERT_GT(gnorm, 0);
    std::vector<std::vector<double>> dirs;
    for (int r = 0; r < 3; r++) {
      std::vector<double> v(nz);
      double n = 0;
      for (double& x : v) {
        x = 2 * uniform(&seed) - 1;
        n += x * x;
      }
      for (double& x : v) x /= std::sqrt(n);
      dirs.push_back(v);
    }
    for (int r = 0; r < 6; r++) {
      std::vector<double> v(nz, 0.0);
      v[(int)(uniform(&seed) * nz) % nz] = 1;
      dirs.push_back(v);
    }
    const double eps = 1e-6;
    double worst = 0;
    for (const auto& v : dirs) {
      auto J_at = [&](double h) {
        std::vector<double> zh(z);
        for (int k = 0; k < nz; k++) zh[k] += h * v[k];
        return mpc_plannerObjective(p, s.sim.d, zh.data(), nullptr);
      };
      double fd1 = (J_at(eps) - J_at(-eps)) / (2 * eps);
      double fd2 = (J_at(2 * eps) - J_at(-2 * eps)) / (4 * eps);
      double fd = (4 * fd1 - fd2) / 3;
      double gv = 0;
      for (int k = 0; k < nz; k++) gv += g[k] * v[k];
      double rel = std::fabs(gv - fd) / gnorm;
      worst = std::max(worst, rel);
      EXPECT_LE(rel, 1e-5) << "g.v " << gv << " fd " << fd << " |g| " << gnorm;
    }
    std::printf("[ gradient ] %-10s knots %d x %d  |g| %.4g  worst error %.3g (relative to |g|)\n",
                name.c_str(), nknot, (int)m->nu, gnorm, worst);
    mpc_freePlanner(p);
  }
}

TEST(MpcPlanner, WarmStartKeepsControlsInRange) {
  for (const std::string& name : taskNames()) {
    TaskSetup s(name);
    ASSERT_TRUE(s.ok) << name << ": " << s.msg;
    const mjModel* m = s.sim.m;
    for (mpcPlannerType type : kPlanners) {
      SCOPED_TRACE(name + " / " + mpc_plannerName(type));
      char err[500] = "";
      mpcPlanner* p = mpc_makePlanner(type, m, s.sim.s, s.task, 2, 5, err, sizeof(err));
      ASSERT_NE(p, nullptr) << err;
      mjData* d = mj_makeData(m);
      mj_copyData(d, m, s.sim.d);
      std::vector<double> ctrl(m->nu);
      double worst = 0, total = 0;
      const int ncall = 4, shift = 5;
      for (int c = 0; c < ncall; c++) {
        auto t0 = std::chrono::steady_clock::now();
        double J = mpc_plan(p, d, 0.05, c ? shift : 0, ctrl.data());
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        worst = std::max(worst, secs);
        total += secs;
        EXPECT_TRUE(std::isfinite(J));
        int H = 0;
        const double* plan = mpc_planControls(p, &H);
        EXPECT_EQ(countOutOfRange(m, ctrl.data(), 1), 0);
        EXPECT_EQ(countOutOfRange(m, plan, H), 0);
        // act on the plant for shift steps
        mju_copy(d->ctrl, ctrl.data(), m->nu);
        for (int k = 0; k < shift; k++)
          ASSERT_EQ(mjdiff_step(m, d, s.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
      }
      std::printf("[ timing   ] %-10s %-9s budget 0.050 s: mean %.3f s, max %.3f s per call\n",
                  name.c_str(), mpc_plannerName(type), total / ncall, worst);
      mj_deleteData(d);
      mpc_freePlanner(p);
    }
  }
}

TEST(MpcPlanner, IlqrWarmStartFollowsItsFeedbackPolicy) {
  // cartpole near upright (unstable), planned on the plant's own model: a converged iLQR plan,
  // one plant step with its first control, then the next call's warm start. Unperturbed, the
  // feedback policy around the shifted plan reproduces the shifted plan (J_warm = J_open to
  // 1e-9); with the pole pushed off the plan, the feedback corrects what the open-loop shifted
  // controls do not (J_warm < 0.5 J_open).
  TaskSetup s("cartpole");
  ASSERT_TRUE(s.ok) << s.msg;
  ASSERT_EQ(s.pm, s.sim.m) << "the test needs a task without a planning timestep";
  const mjModel* m = s.sim.m;
  for (double push : {0.0, 0.5}) {
    SCOPED_TRACE("pole velocity push " + std::to_string(push));
    char err[500] = "";
    mpcPlanner* p = mpc_makePlanner(MPC_ILQR, m, s.sim.s, s.task, 2, 1, err, sizeof(err));
    ASSERT_NE(p, nullptr) << err;
    mjData* d = mj_makeData(m);
    mj_resetData(m, d);
    d->qpos[1] = 0.1;  // pole 0.1 rad off vertical (qpos = 0: upright)
    mpc_plannerSetIterations(p, 30, 0);
    std::vector<double> u0(m->nu);
    ASSERT_TRUE(std::isfinite(mpc_plan(p, d, 60, 0, u0.data())));
    int H = 0;
    const double* plan = mpc_planControls(p, &H);
    std::vector<double> shifted((size_t)H * m->nu);
    for (int t = 0; t < H; t++) {
      int src = t + 1 < H ? t + 1 : H - 1;
      for (int i = 0; i < m->nu; i++) shifted[(size_t)t * m->nu + i] = plan[(size_t)src * m->nu + i];
    }

    // the plant: one step of the same smooth model with the first control, then the push
    mju_copy(d->ctrl, u0.data(), m->nu);
    ASSERT_EQ(mjdiff_step(m, d, s.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    d->qvel[1] += push;
    double J_open = mpc_plannerRolloutCost(p, d, shifted.data(), nullptr);
    mpc_plannerSetIterations(p, 1, 0);
    mpc_plan(p, d, 60, 1, u0.data());
    double J_warm = mpc_plannerWarmCost(p);
    ASSERT_TRUE(std::isfinite(J_open));
    ASSERT_TRUE(std::isfinite(J_warm));
    if (push == 0) {
      EXPECT_NEAR(J_warm, J_open, 1e-9 * J_open);
    } else {
      EXPECT_LT(J_warm, 0.5 * J_open);
    }
    std::printf("[ warm     ] push %.1f rad/s: open-loop shifted plan J %.6g, feedback warm start "
                "J %.6g\n", push, J_open, J_warm);
    mj_deleteData(d);
    mpc_freePlanner(p);
  }
}

TEST(MpcPlanner, DeterministicWithThreads) {
  for (const std::string& name : taskNames()) {
    TaskSetup s(name);
    ASSERT_TRUE(s.ok) << name << ": " << s.msg;
    const mjModel* m = s.sim.m;
    for (mpcPlannerType type : kPlanners) {
      SCOPED_TRACE(name + " / " + mpc_plannerName(type));
      std::vector<double> ref_ctrl, ref_states;
      double ref_J = 0;
      const int nthreads[] = {2, 2, 1};
      for (int run = 0; run < 3; run++) {
        char err[500] = "";
        mpcPlanner* p =
            mpc_makePlanner(type, m, s.sim.s, s.task, nthreads[run], 7, err, sizeof(err));
        ASSERT_NE(p, nullptr) << err;
        mpc_plannerSetIterations(p, 2, 12);
        std::vector<double> u(m->nu);
        double J = mpc_plan(p, s.sim.d, 1e-6, 0, u.data());
        // a second, warm-started call
        J = mpc_plan(p, s.sim.d, 1e-6, 3, u.data());
        int H = 0;
        const double* plan = mpc_planControls(p, &H);
        const double* states = mpc_planStates(p, &H);
        std::vector<double> c(plan, plan + (size_t)H * m->nu);
        std::vector<double> x(states, states + (size_t)(H + 1) * (m->nq + m->nv + m->na));
        if (run == 0) {
          ref_ctrl = c;
          ref_states = x;
          ref_J = J;
        } else {
          EXPECT_EQ(J, ref_J) << "run " << run << " (" << nthreads[run] << " threads)";
          EXPECT_TRUE(c == ref_ctrl) << "run " << run << ": controls differ";
          EXPECT_TRUE(x == ref_states) << "run " << run << ": states differ";
        }
        mpc_freePlanner(p);
      }
    }
  }
}

TEST(MpcPlanner, BadArguments) {
  std::vector<std::string> names = taskNames();
  ASSERT_FALSE(names.empty());
  TaskSetup s(names[0]);
  ASSERT_TRUE(s.ok) << s.msg;
  char err[500] = "";
  EXPECT_EQ(mpc_makePlanner(MPC_SAMPLING, s.sim.m, s.sim.s, s.task, 0, 1, err, sizeof(err)),
            nullptr);
  EXPECT_NE(std::string(err).find("nthread"), std::string::npos) << err;
  err[0] = 0;
  EXPECT_EQ(mpc_makePlanner((mpcPlannerType)9, s.sim.m, s.sim.s, s.task, 1, 1, err, sizeof(err)),
            nullptr);
  EXPECT_NE(std::string(err).find("type"), std::string::npos) << err;
  err[0] = 0;
  EXPECT_EQ(mpc_makePlanner(MPC_ILQR, s.sim.m, s.sim.s, nullptr, 1, 1, err, sizeof(err)), nullptr);
  EXPECT_NE(std::string(err).find("task"), std::string::npos) << err;
  EXPECT_EQ(mpc_makePlanner(MPC_ILQR, nullptr, s.sim.s, s.task, 1, 1, nullptr, 0), nullptr);
  mpc_freePlanner(nullptr);
  EXPECT_TRUE(std::isnan(mpc_plan(nullptr, s.sim.d, 1, 0, nullptr)));
  EXPECT_STREQ(mpc_plannerName(MPC_GRADIENT), "gradient");
  EXPECT_STREQ(mpc_plannerName(MPC_ILQR), "ilqr");
  EXPECT_STREQ(mpc_plannerName(MPC_SAMPLING), "sampling");
  EXPECT_STREQ(mpc_plannerName(MPC_CEM), "cem");
  EXPECT_STREQ(mpc_plannerName(MPC_MPPI), "mppi");
  int H = -1;
  EXPECT_EQ(mpc_planControls(nullptr, &H), nullptr);
  EXPECT_EQ(H, 0);
}

// The long-range contact term (mpc_plannerSetReach): from arm_box's "ready" key (fingertip ~5 cm
// from the box) on tools/bench/arm_box_push.task (nothing draws the fingertip to the box), with
// and without the task's planning timestep (the planner's own smooth model made by the call, or
// the one it had): the objective's gradient with the term on against Richardson differences of
// the objective (1e-5 |g|), the box terms' share of it nonzero only with the term (the gradient
// differs from the term-off planner's), the caller's smooth model untouched, and a planner run
// with it; errors for a planner other than gradient and for a bad schedule.
TEST(MpcPlanner, ReachTermGradientBeforeContact) {
  std::string xml = std::string(MJDIFF_MODEL_DIR) + "/arm_box.xml";
  std::string taskPath = std::string(MJDIFF_MODEL_DIR) + "/../tools/bench/arm_box_push.task";
  shimSim sim;
  ASSERT_TRUE(shim_open(&sim, nullptr, xml.c_str())) << sim.err;
  const mjModel* m = sim.m;
  mj_resetDataKeyframe(m, sim.d, 0);
  char err[500] = "";
  ASSERT_EQ(mjdiff_setParam(sim.s, "reach_static", 0, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffReachSchedule sched;
  mjdiff_defaultReachSchedule(&sched);
  sched.strength = 1;
  sched.width = 0.15;
  for (int ownTimestep = 0; ownTimestep < 2; ownTimestep++) {
    SCOPED_TRACE(ownTimestep ? "task timestep" : "model timestep");
    // the task, or the task without its planning timestep
    std::string text;
    {
      FILE* f = std::fopen(taskPath.c_str(), "r");
      ASSERT_NE(f, nullptr) << taskPath;
      char line[500];
      while (std::fgets(line, sizeof(line), f)) {
        if (ownTimestep || std::strncmp(line, "timestep", 8)) text += line;
      }
      std::fclose(f);
    }
    FILE* tf = tmpfile();
    ASSERT_NE(tf, nullptr);
    std::fputs(text.c_str(), tf);
    std::rewind(tf);
    mpcTask* task = mpc_readTaskFile(m, tf, taskPath.c_str(), err, sizeof(err));
    std::fclose(tf);
    ASSERT_NE(task, nullptr) << err;
    mpcPlanner* off = mpc_makePlanner(MPC_GRADIENT, m, sim.s, task, 1, 1, err, sizeof(err));
    mpcPlanner* on = mpc_makePlanner(MPC_GRADIENT, m, sim.s, task, 1, 1, err, sizeof(err));
    ASSERT_TRUE(off && on) << err;
    ASSERT_EQ(mpc_plannerSetReach(on, &sched, err, sizeof(err)), 1) << err;
    EXPECT_EQ(mjdiff_getOptions(sim.s)->reach_strength, 0);  // the caller's model keeps it off

    int nknot = mpc_plannerKnots(on, nullptr), nz = nknot * m->nu;
    std::vector<double> z(nz), gon(nz), goff(nz);
    unsigned long long seed = 11;
    for (int k = 0; k < nz; k++) z[k] = 0.2 * (2 * uniform(&seed) - 1);
    double Jon = mpc_plannerObjective(on, sim.d, z.data(), gon.data());
    double Joff = mpc_plannerObjective(off, sim.d, z.data(), goff.data());
    ASSERT_TRUE(std::isfinite(Jon) && std::isfinite(Joff));
    double gnorm = 0, diff = 0;
    for (int k = 0; k < nz; k++) {
      gnorm += gon[k] * gon[k];
      diff = std::max(diff, std::fabs(gon[k] - goff[k]));
    }
    gnorm = std::sqrt(gnorm);
    EXPECT_GT(diff, 1e-6 * gnorm);  // the box's terms reach the controls only through the term
    double worst = 0;
    for (int r = 0; r < 6; r++) {
      std::vector<double> v(nz);
      double n = 0;
      for (double& x : v) {
        x = 2 * uniform(&seed) - 1;
        n += x * x;
      }
      for (double& x : v) x /= std::sqrt(n);
      auto J_at = [&](double h) {
        std::vector<double> zh(z);
        for (int k = 0; k < nz; k++) zh[k] += h * v[k];
        return mpc_plannerObjective(on, sim.d, zh.data(), nullptr);
      };
      const double eps = 1e-6;
      double fd = (4 * (J_at(eps) - J_at(-eps)) / (2 * eps) - (J_at(2 * eps) - J_at(-2 * eps)) /
                                                                   (4 * eps)) / 3;
      double gv = 0;
      for (int k = 0; k < nz; k++) gv += gon[k] * v[k];
      worst = std::max(worst, std::fabs(gv - fd) / gnorm);
      EXPECT_NE(gv, fd);
    }
    EXPECT_LE(worst, 1e-5);
    std::printf("[ reach ] arm_box_push (%s): |g| %.4g, worst error %.3g of |g|, |g_on - g_off| "
                "%.3g\n", ownTimestep ? "task timestep" : "model timestep", gnorm, worst, diff);

    // the planner runs with it (its iterations anneal the strength)
    mpc_plannerSetIterations(on, 3, 0);
    std::vector<double> ctrl(m->nu);
    for (int c = 0; c < 3; c++) {
      EXPECT_TRUE(std::isfinite(mpc_plan(on, sim.d, 1, c ? 5 : 0, ctrl.data())));
    }
    EXPECT_EQ(mjdiff_getOptions(sim.s)->reach_strength, 0);
    mpc_freePlanner(on);
    mpc_freePlanner(off);
    mpc_freeTask(task);
  }

  // errors
  std::string armTask = std::string(MJDIFF_MODEL_DIR) + "/arm_box.task";
  mpcTask* task = mpc_readTask(m, armTask.c_str(), err, sizeof(err));
  ASSERT_NE(task, nullptr) << err;
  mpcPlanner* il = mpc_makePlanner(MPC_ILQR, m, sim.s, task, 1, 1, err, sizeof(err));
  ASSERT_NE(il, nullptr) << err;
  err[0] = 0;
  EXPECT_EQ(mpc_plannerSetReach(il, &sched, err, sizeof(err)), 0);
  EXPECT_NE(std::string(err).find("gradient"), std::string::npos) << err;
  mpc_freePlanner(il);
  mpcPlanner* gp = mpc_makePlanner(MPC_GRADIENT, m, sim.s, task, 1, 1, err, sizeof(err));
  ASSERT_NE(gp, nullptr) << err;
  sched.width = -1;
  err[0] = 0;
  EXPECT_EQ(mpc_plannerSetReach(gp, &sched, err, sizeof(err)), 0);
  EXPECT_NE(std::string(err).find("width"), std::string::npos) << err;
  mpc_freePlanner(gp);
  mpc_freeTask(task);
  shim_close(&sim);
}

}  // namespace
