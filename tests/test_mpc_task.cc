// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Task costs (tasks/task.c, <mjdiff/task.h>): the task file parser and the cost's derivatives.
//
//   Every bundled task file (models/*.task) parses and gives a finite cost and gradient.
//   Gradients: for every term kind (position of bodies, sites and points; upright of bodies and
//   sites; joint; jointvel; velocity with nan components; control), each norm, on hinge, slide,
//   ball and free joints, and for every bundled task, running and terminal: dl/dx (tangent layout,
//   dq through mj_integratePos) and dl/du against centered differences of mpc_cost after
//   mjdiff_forward at random states, within 1e-6 of the gradient's largest entry (floored at
//   1e-3). The cost is smooth in the state (no contact enters it), so no sample is skipped.
//   Gauss-Newton Hessians: at a state where a quadratic term's residual is zero, the true Hessian
//   of the cost is the Gauss-Newton one, so lxx and luu must equal centered differences of the
//   analytic gradient (1e-6 relative); everywhere, lxx and luu are symmetric positive semidefinite.
//   Terminal weight, success flag, defaults, determinism, inputs unchanged, d's stack restored.
//   Parse errors: each names the file, the line and the offending token.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "mpc.h"
}
#include "shim.h"

namespace {

const char* kModels[] = {"cartpole", "acrobot", "arm_box", "hopper", "cheetah", "quadruped"};

double uniform(unsigned long long* s) {
  unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return (double)(z >> 11) / 9007199254740992.0;
}

std::string modelPath(const std::string& name, const char* ext) {
  return std::string(MJDIFF_MODEL_DIR) + "/" + name + ext;
}

// write text to a file in the test's temporary directory; returns its path
std::string writeTemp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "mpc_task_" + name;
  std::ofstream f(path);
  f << text;
  return path;
}

// a model, its data and smooth model
struct Sim {
  shimSim sim;
  bool ok;
  explicit Sim(const std::string& path) { ok = shim_open(&sim, nullptr, path.c_str()); }
  Sim(const char* xml, bool) { ok = shim_open(&sim, xml, nullptr); }
  ~Sim() { shim_close(&sim); }
  const mjModel* m() const { return sim.m; }
  mjData* d() const { return sim.d; }
  int ndx() const { return 2 * sim.m->nv + sim.m->na; }
  void forward() {
    char err[500];
    ASSERT_EQ(mjdiff_forward(sim.m, sim.d, sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  }
};

struct Task {
  mpcTask* task = nullptr;
  std::string err;
  Task(const mjModel* m, const std::string& path) {
    char buf[1000];
    task = mpc_readTask(m, path.c_str(), buf, sizeof(buf));
    err = buf;
  }
  ~Task() { mpc_freeTask(task); }
};

// a random state: a few smooth steps under random controls from the first keyframe, then a
// random tangent displacement of qpos (0.3 per dof) and random velocities, controls and acts
void randomState(Sim* s, unsigned long long* seed) {
  const mjModel* m = s->m();
  mjData* d = s->d();
  mj_resetData(m, d);
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  char err[500];
  for (int i = 0; i < 30; i++) {
    if (i % 10 == 0) shim_randomCtrl(m, d, seed);
    if (mjdiff_step(m, d, s->sim.s, err, sizeof(err)) != MJDIFF_OK) break;
  }
  std::vector<mjtNum> dq(m->nv);
  for (int i = 0; i < m->nv; i++) dq[i] = 0.6 * (uniform(seed) - 0.5);
  mj_integratePos(m, d->qpos, dq.data(), 1);
  for (int i = 0; i < m->nv; i++) d->qvel[i] += 2 * (uniform(seed) - 0.5);
  for (int i = 0; i < m->na; i++) d->act[i] += 0.2 * (uniform(seed) - 0.5);
  shim_randomCtrl(m, d, seed);
  s->forward();
}

// cost at the saved state moved by the tangent dx = (dq, dv, da, du)
double costAt(Sim* s, const mpcTask* task, const std::vector<mjtNum>& state, const mjtNum* dx,
              int terminal) {
  const mjModel* m = s->m();
  mjData* d = s->d();
  int nv = m->nv, na = m->na;
  shim_setState(m, d, state.data());
  mj_integratePos(m, d->qpos, dx, 1);
  for (int i = 0; i < nv; i++) d->qvel[i] += dx[nv + i];
  for (int i = 0; i < na; i++) d->act[i] += dx[2 * nv + i];
  for (int i = 0; i < m->nu; i++) d->ctrl[i] += dx[2 * nv + na + i];
  s->forward();
  return mpc_cost(task, m, d, terminal, nullptr, nullptr);
}

// analytic (dldx, dldu) at the saved state
std::vector<mjtNum> gradientAt(Sim* s, const mpcTask* task, const std::vector<mjtNum>& state,
                               const mjtNum* dx, int terminal) {
  const mjModel* m = s->m();
  mjData* d = s->d();
  int nv = m->nv, na = m->na;
  shim_setState(m, d, state.data());
  mj_integratePos(m, d->qpos, dx, 1);
  for (int i = 0; i < nv; i++) d->qvel[i] += dx[nv + i];
  for (int i = 0; i < na; i++) d->act[i] += dx[2 * nv + i];
  for (int i = 0; i < m->nu; i++) d->ctrl[i] += dx[2 * nv + na + i];
  s->forward();
  std::vector<mjtNum> g(s->ndx() + m->nu);
  mpc_cost(task, m, d, terminal, g.data(), g.data() + s->ndx());
  return g;
}

// centered differences of the cost over (dx, du)
std::vector<mjtNum> fdGradient(Sim* s, const mpcTask* task, const std::vector<mjtNum>& state,
                               int terminal, double eps) {
  int n = s->ndx() + s->m()->nu;
  std::vector<mjtNum> g(n), dx(n, 0);
  for (int c = 0; c < n; c++) {
    dx[c] = eps;
    double lp = costAt(s, task, state, dx.data(), terminal);
    dx[c] = -eps;
    double lm = costAt(s, task, state, dx.data(), terminal);
    dx[c] = 0;
    g[c] = (lp - lm) / (2 * eps);
  }
  shim_setState(s->m(), s->d(), state.data());
  return g;
}

// largest |a - b| over the largest |a| (floored at floor)
double relError(const std::vector<mjtNum>& a, const std::vector<mjtNum>& b, double floor) {
  double err = 0, scale = floor;
  for (size_t i = 0; i < a.size(); i++) {
    err = std::max(err, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(a[i]));
  }
  return err / scale;
}

// compare the analytic gradient with finite differences at nsample random states
void checkGradient(Sim* s, const mpcTask* task, const std::string& label, int nsample,
                   unsigned long long seed) {
  int n = s->ndx() + s->m()->nu;
  std::vector<mjtNum> state(shim_stateSize(s->m())), zero(n, 0);
  for (int k = 0; k < nsample; k++) {
    randomState(s, &seed);
    shim_getState(s->m(), s->d(), state.data());
    for (int terminal = 0; terminal < 2; terminal++) {
      std::vector<mjtNum> g = gradientAt(s, task, state, zero.data(), terminal);
      std::vector<mjtNum> fd = fdGradient(s, task, state, terminal, 1e-6);
      double norm = 0;
      for (mjtNum v : g) norm = std::max(norm, std::fabs(v));
      double err = relError(g, fd, 1e-3);
      EXPECT_LT(err, 1e-6) << label << " sample " << k << " terminal " << terminal
                           << " |g|_inf " << norm;
    }
  }
}

// 1 if the n x n matrix A is symmetric (to 1e-12 relative) and positive semidefinite
bool symmetricPsd(const std::vector<mjtNum>& A, int n, std::string* why) {
  double scale = 1e-300;
  for (mjtNum v : A) scale = std::max(scale, std::fabs(v));
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) {
      if (std::fabs(A[i * n + j] - A[j * n + i]) > 1e-12 * scale) {
        *why = "not symmetric at " + std::to_string(i) + "," + std::to_string(j);
        return false;
      }
    }
  }
  // Cholesky of A + 1e-10 scale I
  std::vector<mjtNum> L(A);
  for (int i = 0; i < n; i++) L[i * n + i] += 1e-10 * scale;
  for (int j = 0; j < n; j++) {
    double djj = L[j * n + j];
    for (int k = 0; k < j; k++) djj -= L[j * n + k] * L[j * n + k];
    if (djj <= 0) {
      *why = "not positive semidefinite at pivot " + std::to_string(j);
      return false;
    }
    djj = std::sqrt(djj);
    L[j * n + j] = djj;
    for (int i = j + 1; i < n; i++) {
      double v = L[i * n + j];
      for (int k = 0; k < j; k++) v -= L[i * n + k] * L[j * n + k];
      L[i * n + j] = v / djj;
    }
  }
  return true;
}

std::string fmt(double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

//---------------------------------- bundled tasks ------------------------------------------------

TEST(MpcTask, BundledTasksParse) {
  for (const char* name : kModels) {
    Sim s(modelPath(name, ".xml"));
    ASSERT_TRUE(s.ok) << s.sim.err;
    Task t(s.m(), modelPath(name, ".task"));
    ASSERT_NE(t.task, nullptr) << t.err;
    EXPECT_GT(mpc_taskHorizon(t.task), 0) << name;
    EXPECT_LE(mpc_taskHorizon(t.task), 2) << name;
    mj_resetData(s.m(), s.d());
    if (s.m()->nkey) mj_resetDataKeyframe(s.m(), s.d(), 0);
    s.forward();
    std::vector<mjtNum> g(s.ndx()), gu(s.m()->nu);
    double l = mpc_cost(t.task, s.m(), s.d(), 0, g.data(), gu.data());
    EXPECT_TRUE(std::isfinite(l)) << name;
    EXPECT_GT(l, 0) << name;
    for (mjtNum v : g) EXPECT_TRUE(std::isfinite(v)) << name;
    // the initial state is not a success (every task has something to do)
    EXPECT_EQ(mpc_success(t.task, s.m(), s.d()), 0) << name;
  }
}

TEST(MpcTask, BundledTaskGradients) {
  unsigned long long seed = 11;
  for (const char* name : kModels) {
    Sim s(modelPath(name, ".xml"));
    ASSERT_TRUE(s.ok) << s.sim.err;
    Task t(s.m(), modelPath(name, ".task"));
    ASSERT_NE(t.task, nullptr) << t.err;
    checkGradient(&s, t.task, std::string(name) + ".task", 3, seed++);
  }
}

//---------------------------------- every term kind ----------------------------------------------

struct TermCase {
  const char* model;           // bundled model name, or nullptr: kChainXml
  const char* line;
};

// a free body carrying a ball joint, a body with two hinges and a slide, and a site at the end
const char* kChainXml = R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/>
      <body name="b1" pos="0.2 0 0">
        <joint name="ball" type="ball"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"
              contype="0" conaffinity="0"/>
        <body name="b2" pos="0.3 0 0">
          <joint name="h1" type="hinge" axis="0 1 0"/>
          <joint name="h2" type="hinge" axis="1 0 0" pos="0.05 0 0"/>
          <joint name="s1" type="slide" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.2 0.1 0" size="0.03" mass="0.3"
                contype="0" conaffinity="0"/>
          <site name="end" pos="0.2 0.1 0.05" euler="0.3 0.2 0.1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="h1" ctrllimited="true" ctrlrange="-1 1"/>
    <motor joint="s1" ctrllimited="true" ctrlrange="-1 1"/>
  </actuator>
</mujoco>)";

const TermCase kTerms[] = {
    // position: site, body, point, both ends moving; both norms
    {"cartpole", "position site:pole_tip 0.1 0.2 0.9 1.5"},
    {"cartpole", "position body:pole site:origin 1 smoothabs 0.1"},
    {"acrobot", "position site:tip site:target 1"},
    {"arm_box", "position site:ee site:box_center 2 smoothabs 0.05"},
    {"quadruped", "position body:hr_shin \"0.1 0 0.2\" 1"},
    {"quadruped", "position site:fl_foot_site site:hr_foot_site 1"},
    {nullptr, "position site:end body:b1 1"},
    {nullptr, "position 1 2 3 site:end 1 smoothabs 0.2"},
    // upright: bodies and sites, hinge chains and free bodies
    {"cartpole", "upright body:pole 3"},
    {"acrobot", "upright site:tip 2 smoothabs 0.1"},
    {"arm_box", "upright body:box 2"},
    {"arm_box", "upright site:ee 1 smoothabs 0.05"},
    {"quadruped", "upright body:torso 5"},
    {nullptr, "upright site:end 1"},
    // joint and jointvel: hinges and slides
    {"cartpole", "joint cart_slide 0.3 2"},
    {"cartpole", "joint pole_hinge 1 1 smoothabs 0.5"},
    {"cartpole", "jointvel pole_hinge 0.2 1"},
    {"quadruped", "joint fl_knee 1.2 1"},
    {"arm_box", "jointvel joint4 0.5 1 smoothabs 0.2"},
    {nullptr, "joint s1 0.1 1"},
    {nullptr, "jointvel h2 -1 1"},
    // velocity: body origins and sites down hinge chains, free bodies, a ball joint, nan targets
    {"cartpole", "velocity site:pole_tip 1 nan 0.5 1"},
    {"acrobot", "velocity site:tip 0 0 0 1 smoothabs 0.3"},
    {"acrobot", "velocity body:lower_link 0.1 0 0 1"},
    {"arm_box", "velocity site:ee 0.1 0.2 0.3 1"},
    {"arm_box", "velocity site:box_center 0 0 nan 1"},
    {"hopper", "velocity site:foot_site 1.5 nan nan 1"},
    {"cheetah", "velocity site:head_site 6 nan 0 1"},
    {"quadruped", "velocity site:torso_site 0.5 0 nan 2"},
    {"quadruped", "velocity site:fl_foot_site 0.5 0 nan 1 smoothabs 0.1"},
    {"quadruped", "velocity body:hl_shin 1 2 3 1"},
    {nullptr, "velocity site:end 0.2 -0.1 0.3 1"},
    {nullptr, "velocity body:b2 nan 1 nan 1 smoothabs 0.5"},
    // control
    {"cartpole", "control 0.3"},
    {"arm_box", "control 0.3 smoothabs 0.2"},
    {"quadruped", "control 0.1 quadratic"},
};

TEST(MpcTask, TermGradients) {
  unsigned long long seed = 101;
  int index = 0;
  for (const TermCase& c : kTerms) {
    std::unique_ptr<Sim> s(c.model ? new Sim(modelPath(c.model, ".xml"))
                                   : new Sim(kChainXml, true));
    ASSERT_TRUE(s->ok) << s->sim.err;
    std::string path = writeTemp("term" + std::to_string(index++), std::string(c.line) +
                                 "\nterminal 2.5\n");
    Task t(s->m(), path);
    ASSERT_NE(t.task, nullptr) << t.err;
    checkGradient(s.get(), t.task, std::string(c.model ? c.model : "chain") + ": " + c.line, 3,
                  seed++);
  }
}

//---------------------------------- Gauss-Newton Hessians ----------------------------------------

// lxx, luu against centered differences of the analytic gradient at the saved state
void checkHessianFd(Sim* s, const mpcTask* task, const std::vector<mjtNum>& state,
                    const std::string& label) {
  const mjModel* m = s->m();
  int ndx = s->ndx(), nu = m->nu, n = ndx + nu;
  shim_setState(m, s->d(), state.data());
  s->forward();
  std::vector<mjtNum> lxx(ndx * ndx), luu(nu * nu);
  mpc_costHessian(task, m, s->d(), 0, lxx.data(), luu.data());

  // H[:, c] = (g(+eps e_c) - g(-eps e_c)) / (2 eps)
  double eps = 1e-6;
  std::vector<mjtNum> dx(n, 0), H(n * n);
  for (int c = 0; c < n; c++) {
    dx[c] = eps;
    std::vector<mjtNum> gp = gradientAt(s, task, state, dx.data(), 0);
    dx[c] = -eps;
    std::vector<mjtNum> gm = gradientAt(s, task, state, dx.data(), 0);
    dx[c] = 0;
    for (int r = 0; r < n; r++) H[r * n + c] = (gp[r] - gm[r]) / (2 * eps);
  }
  std::vector<mjtNum> Hxx(ndx * ndx), Huu(nu * nu);
  for (int r = 0; r < ndx; r++) {
    for (int c = 0; c < ndx; c++) Hxx[r * ndx + c] = H[r * n + c];
    for (int c = 0; c < nu; c++) {
      EXPECT_LT(std::fabs(H[r * n + ndx + c]), 1e-6) << label << ": lxu should be 0";
    }
  }
  for (int r = 0; r < nu; r++) {
    for (int c = 0; c < nu; c++) Huu[r * nu + c] = H[(ndx + r) * n + ndx + c];
  }
  EXPECT_LT(relError(lxx, Hxx, 1e-3), 1e-6) << label << " lxx";
  EXPECT_LT(relError(luu, Huu, 1e-3), 1e-6) << label << " luu";
  shim_setState(m, s->d(), state.data());
}

TEST(MpcTask, GaussNewtonHessianAtZeroResidual) {
  unsigned long long seed = 7;
  struct Case {
    const char* model;
    const char* site;          // site for position and velocity terms
    const char* joint;         // hinge or slide for joint and jointvel terms
  } cases[] = {{"cartpole", "pole_tip", "pole_hinge"},
               {"arm_box", "box_center", "joint3"},
               {"arm_box", "ee", "joint6"},
               {"quadruped", "fr_foot_site", "fr_knee"},
               {nullptr, "end", "s1"}};
  for (const Case& c : cases) {
    std::unique_ptr<Sim> s(c.model ? new Sim(modelPath(c.model, ".xml"))
                                   : new Sim(kChainXml, true));
    ASSERT_TRUE(s->ok) << s->sim.err;
    const mjModel* m = s->m();
    mjData* d = s->d();
    for (int k = 0; k < 2; k++) {
      randomState(s.get(), &seed);
      std::vector<mjtNum> state(shim_stateSize(m));
      shim_getState(m, d, state.data());

      // targets equal to the current values: every residual is zero
      int site = mj_name2id(m, mjOBJ_SITE, c.site);
      int jnt = mj_name2id(m, mjOBJ_JOINT, c.joint);
      ASSERT_GE(site, 0);
      ASSERT_GE(jnt, 0);
      const mjtNum* p = d->site_xpos + 3 * site;
      mjtNum vel[6];
      mj_objectVelocity(m, d, mjOBJ_SITE, site, vel, 0);
      std::string text;
      text += "position site:" + std::string(c.site) + " " + fmt(p[0]) + " " + fmt(p[1]) + " " +
              fmt(p[2]) + " 2\n";
      text += "velocity site:" + std::string(c.site) + " " + fmt(vel[3]) + " nan " + fmt(vel[5]) +
              " 0.5\n";
      text += "joint " + std::string(c.joint) + " " + fmt(d->qpos[m->jnt_qposadr[jnt]]) + " 3\n";
      text += "jointvel " + std::string(c.joint) + " " + fmt(d->qvel[m->jnt_dofadr[jnt]]) +
              " 0.7\n";
      text += "control 0.2\n";
      std::string path = writeTemp("hess", text);
      Task t(m, path);
      ASSERT_NE(t.task, nullptr) << t.err;
      checkHessianFd(s.get(), t.task, state, std::string(c.model ? c.model : "chain"));
    }
  }
}

TEST(MpcTask, GaussNewtonHessianSymmetricPsd) {
  unsigned long long seed = 5;
  for (const char* name : kModels) {
    Sim s(modelPath(name, ".xml"));
    ASSERT_TRUE(s.ok) << s.sim.err;
    Task t(s.m(), modelPath(name, ".task"));
    ASSERT_NE(t.task, nullptr) << t.err;
    int ndx = s.ndx(), nu = s.m()->nu;
    for (int k = 0; k < 3; k++) {
      randomState(&s, &seed);
      for (int terminal = 0; terminal < 2; terminal++) {
        std::vector<mjtNum> lxx(ndx * ndx), luu(nu * nu);
        mpc_costHessian(t.task, s.m(), s.d(), terminal, lxx.data(), luu.data());
        std::string why;
        EXPECT_TRUE(symmetricPsd(lxx, ndx, &why)) << name << " lxx: " << why;
        EXPECT_TRUE(symmetricPsd(luu, nu, &why)) << name << " luu: " << why;
        if (terminal) {
          for (mjtNum v : luu) EXPECT_EQ(v, 0) << name;
        }
      }
    }
  }

  // smoothabs: its Hessian c I - e r r' along the residual (p^2 / s^3) and across it (1 / s)
  Sim s(modelPath("cartpole", ".xml"));
  ASSERT_TRUE(s.ok);
  Task t(s.m(),
         writeTemp("smoothabs", "joint cart_slide 0 2 smoothabs 0.1\ncontrol 3 smoothabs 0.5\n"));
  ASSERT_NE(t.task, nullptr) << t.err;
  mj_resetData(s.m(), s.d());
  s.d()->qpos[0] = 0.3;
  s.d()->ctrl[0] = 0.4;
  s.forward();
  std::vector<mjtNum> lxx(s.ndx() * s.ndx()), luu(1);
  mpc_costHessian(t.task, s.m(), s.d(), 0, lxx.data(), luu.data());
  double sx = std::sqrt(0.3 * 0.3 + 0.1 * 0.1), su = std::sqrt(0.4 * 0.4 + 0.5 * 0.5);
  EXPECT_NEAR(lxx[0], 2 * 0.01 / (sx * sx * sx), 1e-12);
  EXPECT_NEAR(luu[0], 3 * 0.25 / (su * su * su), 1e-12);
}

//---------------------------------- settings, success, hygiene -----------------------------------

TEST(MpcTask, TerminalAndDefaults) {
  Sim s(modelPath("cartpole", ".xml"));
  ASSERT_TRUE(s.ok);
  Task plain(s.m(), writeTemp("plain", "joint cart_slide 0 1\ncontrol 1\n"));
  Task term(s.m(),
            writeTemp("terminal", "terminal 3\nhorizon 1.25\ntimestep 0.02\nduration 4\n"
                                  "joint cart_slide 0 1\ncontrol 1\n"));
  ASSERT_NE(plain.task, nullptr) << plain.err;
  ASSERT_NE(term.task, nullptr) << term.err;
  EXPECT_EQ(mpc_taskHorizon(plain.task), 0.5);
  EXPECT_EQ(mpc_taskHorizon(term.task), 1.25);
  EXPECT_EQ(mpc_taskTimestep(plain.task), 0);  // the model's
  EXPECT_EQ(mpc_taskDuration(plain.task), 0);  // the tool's
  EXPECT_EQ(mpc_taskTimestep(term.task), 0.02);
  EXPECT_EQ(mpc_taskDuration(term.task), 4);

  mj_resetData(s.m(), s.d());
  s.d()->qpos[0] = 0.4;
  s.d()->ctrl[0] = 0.5;
  s.forward();
  std::vector<mjtNum> g(s.ndx()), gu(1);
  EXPECT_DOUBLE_EQ(mpc_cost(plain.task, s.m(), s.d(), 0, nullptr, nullptr), 0.08 + 0.125);
  EXPECT_DOUBLE_EQ(mpc_cost(plain.task, s.m(), s.d(), 1, nullptr, nullptr), 0.08);
  EXPECT_DOUBLE_EQ(mpc_cost(term.task, s.m(), s.d(), 1, g.data(), gu.data()), 0.24);
  EXPECT_DOUBLE_EQ(g[0], 1.2);
  EXPECT_EQ(gu[0], 0);
  EXPECT_EQ(mpc_success(plain.task, s.m(), s.d()), 0);  // no success line
}

TEST(MpcTask, Success) {
  Sim s(modelPath("cartpole", ".xml"));
  ASSERT_TRUE(s.ok);
  Task t(s.m(), modelPath("cartpole", ".task"));
  ASSERT_NE(t.task, nullptr) << t.err;
  int down = mj_name2id(s.m(), mjOBJ_KEY, "down"), up = mj_name2id(s.m(), mjOBJ_KEY, "up");
  mj_resetDataKeyframe(s.m(), s.d(), up);
  s.forward();
  EXPECT_EQ(mpc_success(t.task, s.m(), s.d()), 1);
  s.d()->qpos[1] = 0.2;  // 1 - cos(0.2) = 0.0199 > 0.01
  s.forward();
  EXPECT_EQ(mpc_success(t.task, s.m(), s.d()), 0);
  mj_resetDataKeyframe(s.m(), s.d(), down);
  s.forward();
  EXPECT_EQ(mpc_success(t.task, s.m(), s.d()), 0);

  // a control term as the success term
  Task c(s.m(), writeTemp("success_ctrl", "control 1\nsuccess 0 0.5\n"));
  ASSERT_NE(c.task, nullptr) << c.err;
  s.d()->ctrl[0] = 0.4;
  EXPECT_EQ(mpc_success(c.task, s.m(), s.d()), 1);
  s.d()->ctrl[0] = -0.6;
  EXPECT_EQ(mpc_success(c.task, s.m(), s.d()), 0);
}

TEST(MpcTask, DeterministicAndInputsUnchanged) {
  Sim s(modelPath("quadruped", ".xml"));
  ASSERT_TRUE(s.ok);
  Task t(s.m(), modelPath("quadruped", ".task"));
  ASSERT_NE(t.task, nullptr) << t.err;
  unsigned long long seed = 3;
  randomState(&s, &seed);
  const mjModel* m = s.m();
  mjData* d = s.d();
  std::vector<mjtNum> before(shim_stateSize(m)), after(shim_stateSize(m));
  shim_getState(m, d, before.data());
  std::vector<mjtNum> xpos(d->xpos, d->xpos + 3 * m->nbody);
  int pstack = d->pstack;
  int ndx = s.ndx(), nu = m->nu;
  std::vector<mjtNum> g1(ndx), g2(ndx), u1(nu), u2(nu), H1(ndx * ndx), H2(ndx * ndx), U1(nu * nu),
      U2(nu * nu);
  double l1 = mpc_cost(t.task, m, d, 0, g1.data(), u1.data());
  mpc_costHessian(t.task, m, d, 0, H1.data(), U1.data());
  int s1 = mpc_success(t.task, m, d);
  double l2 = mpc_cost(t.task, m, d, 0, g2.data(), u2.data());
  mpc_costHessian(t.task, m, d, 0, H2.data(), U2.data());
  int s2 = mpc_success(t.task, m, d);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(g1, g2);
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(H1, H2);
  EXPECT_EQ(U1, U2);
  EXPECT_EQ(l1, mpc_cost(t.task, m, d, 0, nullptr, nullptr));
  mpc_costHessian(t.task, m, d, 0, nullptr, nullptr);
  shim_getState(m, d, after.data());
  EXPECT_EQ(before, after);
  EXPECT_EQ(xpos, std::vector<mjtNum>(d->xpos, d->xpos + 3 * m->nbody));
  EXPECT_EQ(pstack, d->pstack);
  mpc_freeTask(nullptr);
}

//---------------------------------- parse errors -------------------------------------------------

TEST(MpcTask, ParseErrors) {
  Sim s(modelPath("acrobot", ".xml"));
  ASSERT_TRUE(s.ok);
  Sim box(modelPath("arm_box", ".xml"));
  ASSERT_TRUE(box.ok);
  struct Case {
    const char* text;
    int line;
    const char* expect;          // part of the message after "PATH:LINE: "
    bool armbox;
  } cases[] = {
      {"positon site:tip site:target 1\n", 1, "unknown term 'positon'", false},
      {"# comment\n\nposition site:tipp site:target 1\n", 3, "unknown site 'tipp'", false},
      {"position body:nobody site:target 1\n", 1, "unknown body 'nobody'", false},
      {"position site:tip lamp:x 1\n", 1, "got 'lamp:x'", false},
      {"joint nojoint 0 1\n", 1, "unknown joint 'nojoint'", false},
      {"jointvel elbow 0 1\njoint shoulder abc 1\n", 2, "bad number 'abc' for TARGET", false},
      {"position site:tip site:target\n", 1, "missing WEIGHT", false},
      {"position site:tip\n", 1, "missing TARGET", false},
      {"position site:tip 1 2\n", 1, "missing coordinate 3", false},
      {"position site:tip 1 2 x 1\n", 1, "bad number 'x'", false},
      {"position site:tip \"0 0 x\" 1\n", 1, "bad point '\"0 0 x\"'", false},
      {"upright 0 0 1 1\n", 1, "got '0'", false},
      {"velocity site:tip 1 2 1\n", 1, "missing WEIGHT", false},
      {"velocity site:tip nan nan nan 1\n", 1, "nan in every component", false},
      {"joint elbow nan 1\n", 1, "bad number 'nan' for TARGET", false},
      {"control 1 smoothabs\n", 1, "missing P", false},
      {"control 1 smoothabs 0\n", 1, "must be > 0, got '0'", false},
      {"control 1 l1 0.1\n", 1, "unknown norm 'l1'", false},
      {"control -1\n", 1, "WEIGHT must be >= 0, got '-1'", false},
      {"control inf\n", 1, "bad number 'inf'", false},
      {"control 1e999\n", 1, "bad number '1e999'", false},
      {"control 1 quadratic 0 extra\n", 1, "unexpected token 'extra'", false},
      {"control 1\nhorizon 0\n", 2, "SECONDS must be > 0, got '0'", false},
      {"control 1\nhorizon\n", 2, "missing SECONDS", false},
      {"horizon 1\ncontrol 1\nhorizon 2\n", 3, "second horizon line", false},
      {"control 1\ntimestep 0\n", 2, "SECONDS must be > 0, got '0'", false},
      {"timestep 0.01\ncontrol 1\ntimestep 0.02\n", 3, "second timestep line", false},
      {"control 1\nduration -1\n", 2, "SECONDS must be > 0, got '-1'", false},
      {"duration 2\nduration 3\ncontrol 1\n", 2, "second duration line", false},
      {"terminal 1\ntimestep 0.01\nterminal 2\ncontrol 1\n", 3, "second terminal line", false},
      {"control 1\nterminal -2\n", 2, "WEIGHT must be >= 0, got '-2'", false},
      {"success 5 0.1\ncontrol 1\n", 1, "success term index 5 out of range", false},
      {"control 1\nsuccess 0.5 0.1\n", 2, "bad term index '0.5'", false},
      {"control 1\nsuccess 0\n", 2, "missing THRESHOLD", false},
      {"control 1 \"unterminated\n", 1, "unterminated quote", false},
      {"joint box_free 0 1\n", 1, "joint 'box_free' is a free joint", true},
      // issue 14: a planning timestep longer than the horizon was accepted
      {"control 1\ntimestep 0.6\n", 2,
       "timestep 0.6 s is longer than the horizon 0.5 s (the default)", false},
      {"horizon 0.1\ntimestep 0.2\ncontrol 1\n", 2, "longer than the horizon 0.1 s", false},
  };
  int index = 0;
  for (const Case& c : cases) {
    std::string path = writeTemp("bad" + std::to_string(index++), c.text);
    Task t(c.armbox ? box.m() : s.m(), path);
    EXPECT_EQ(t.task, nullptr) << c.text;
    std::string prefix = path + ":" + std::to_string(c.line) + ": ";
    EXPECT_EQ(t.err.rfind(prefix, 0), 0u) << c.text << " -> " << t.err;
    EXPECT_NE(t.err.find(c.expect), std::string::npos) << c.text << " -> " << t.err;
  }

  // issue 14: a NUL byte hung the reader (/dev/zero forever), and a UTF-8 byte order mark was
  // rejected with an invisible character in the message
  std::string nul = writeTemp("nul", std::string("control 1\njoint elbow") + '\0' + " 0 1\n");
  Task tn(s.m(), nul);
  EXPECT_EQ(tn.task, nullptr);
  EXPECT_EQ(tn.err, nul + ": line 2, column 12: NUL byte (a binary file?)");
  Task tz(s.m(), "/dev/zero");
  EXPECT_EQ(tz.task, nullptr);
  EXPECT_EQ(tz.err, "/dev/zero: line 1, column 1: NUL byte (a binary file?)");
  Task tl(s.m(), writeTemp("long", "control 1 # " + std::string(5000, 'x') + "\n"));
  EXPECT_EQ(tl.task, nullptr);
  EXPECT_NE(tl.err.find(": line 1: longer than 4094 bytes"), std::string::npos) << tl.err;
  Task tb(s.m(), writeTemp("bom", "\xEF\xBB\xBFhorizon 0.25\ncontrol 1\n"));
  EXPECT_NE(tb.task, nullptr) << tb.err;
  if (tb.task) {
    EXPECT_EQ(mpc_taskHorizon(tb.task), 0.25);
  }
  Task tb2(s.m(), writeTemp("bom2", "\xEF\xBB\xBF" "bogus 1\n"));
  EXPECT_EQ(tb2.task, nullptr);
  EXPECT_NE(tb2.err.find(":1: unknown term 'bogus'"), std::string::npos) << tb2.err;

  // whole-file errors name the file
  std::string empty = writeTemp("empty", "# nothing\n\n");
  Task e(s.m(), empty);
  EXPECT_EQ(e.task, nullptr);
  EXPECT_EQ(e.err, empty + ": no cost terms");
  std::string missing = testing::TempDir() + "mpc_task_does_not_exist.task";
  Task n(s.m(), missing);
  EXPECT_EQ(n.task, nullptr);
  EXPECT_EQ(n.err.rfind(missing + ": cannot open", 0), 0u) << n.err;
  char err[100];
  EXPECT_EQ(mpc_readTask(nullptr, empty.c_str(), err, sizeof(err)), nullptr);
  EXPECT_NE(std::string(err).find("required"), std::string::npos);
  EXPECT_EQ(mpc_readTask(s.m(), empty.c_str(), nullptr, 0), nullptr);  // no error buffer

  // accepted spellings: comments after terms, tabs, CRLF, quoted points, quadratic with P
  Task ok(s.m(), writeTemp("good", "horizon 0.75 # s\r\n\tposition site:tip \"0 0 4\" 1\t# tip\r\n"
                                   "position 0 0 4 body:lower_link 1 quadratic 0\n"
                                   "velocity site:tip NaN 0 nan 1#no blank\nsuccess 0 0.1\n"));
  EXPECT_NE(ok.task, nullptr) << ok.err;
  if (ok.task) {
    EXPECT_EQ(mpc_taskHorizon(ok.task), 0.75);
  }
}

}  // namespace
