// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff_rneDerivative (adjoint/rne_d.c) against central finite differences of MuJoCo's own inverse
// dynamics ID(q, v, a) = M(q) a + qfrc_bias(q, v), evaluated stage by stage (mj_kinematics,
// mj_comPos, mj_crb, mj_comVel, mj_mulM, mj_rne with flg_acc = 0) on states perturbed along each
// tangent direction of qpos (mj_integratePos) and each component of qvel.
//
// Tolerance. Along q, ID is smooth (trigonometric), so a central difference with step eps has
// truncation error ~ eps^2 |ID'''| / 6 and roundoff ~ 1e-16 |ID| / eps; with eps = 1e-6 and
// |ID'''| ~ |ID| ~ max |dID/dq| (O(1) lengths and angles) both are ~ 1e-10 of the largest entry.
// Along v, ID is exactly quadratic (cvel and cdof_dot are linear in v), so a central difference
// has no truncation error at any step and only roundoff ~ 1e-16 |ID| / eps matters; |ID| is often
// dominated by gravity and acc while dc/dv can be small (cartpole's light pole: ~1e-3), where eps =
// 1e-6 would leave ~3e-7 of noise, so the v differences use eps = 1e-3. A relative error (max abs
// error / max abs entry) of 1e-6 per matrix then leaves orders of margin, while any wrong term
// (even one entry of one matrix) shows up at O(1e-2) or more. Guards against a test that compares
// FD with itself: the analytic matrices must not be trivially zero, and they must match FDs with
// different steps (1e-5 along q, 1e-2 along v) equally well, within the two FDs' own disagreement.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "shim.h"
#include "compat.h"

extern "C" {
#include "../adjoint/derivative.h"
}

namespace {

//---------------------------------- models --------------------------------------------------------

// several hinges in one body, axes not aligned with the body frame, anchors off the body origin
const char kHingeChain[] = R"(
<mujoco>
  <option gravity="0.3 -0.5 -9.81"/>
  <default><joint armature="0.02"/></default>
  <worldbody>
    <body pos="0 0 1">
      <joint type="hinge" axis="0 1 0" pos="0 0 0.1"/>
      <joint type="hinge" axis="1 0.2 0" pos="0.05 0 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
      <body pos="0.3 0 0" euler="10 0 20">
        <joint type="hinge" axis="0 0 1"/>
        <joint type="hinge" axis="0 1 1" pos="0 0.1 0"/>
        <joint type="hinge" axis="1 0 0" pos="0.02 -0.03 0.05"/>
        <geom type="box" size="0.1 0.05 0.02" pos="0.1 0.02 0" euler="10 20 30"/>
        <body pos="0.25 0 0.1" euler="0 30 0">
          <joint type="hinge" axis="0 1 0"/>
          <geom type="ellipsoid" size="0.1 0.05 0.03" pos="0.1 0 0"/>
        </body>
        <body pos="0 0.2 0">
          <joint type="hinge" axis="1 1 0" pos="0 -0.05 0"/>
          <geom type="capsule" fromto="0 0 0 0 0.2 0" size="0.03"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>)";

// slides and hinges interleaved, including a slide after a hinge in the same body
const char kSlideHinge[] = R"(
<mujoco>
  <default><joint armature="0.01"/></default>
  <worldbody>
    <body pos="0 0 0.5">
      <joint type="slide" axis="1 0 0"/>
      <joint type="slide" axis="0 0.3 1"/>
      <joint type="hinge" axis="0 1 0" pos="0.1 0 0"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body pos="0.2 0 0">
        <joint type="hinge" axis="0 0 1" pos="0 0.02 0"/>
        <joint type="slide" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
        <body pos="0.3 0 0" euler="0 0 40">
          <joint type="slide" axis="0 1 0"/>
          <joint type="hinge" axis="1 0 0"/>
          <geom type="sphere" size="0.06" pos="0.05 0.02 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>)";

// ball chain, a hinge then a ball in one body, a ball then a slide in one body
const char kBallChain[] = R"(
<mujoco>
  <option gravity="0 0 -9.81"/>
  <default><joint armature="0.01"/></default>
  <worldbody>
    <body pos="0 0 1">
      <joint type="ball" pos="0 0 0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
      <body pos="0.3 0 0">
        <joint type="ball"/>
        <geom type="box" size="0.12 0.04 0.03" pos="0.12 0 0.01"/>
        <body pos="0.25 0 0" euler="20 0 0">
          <joint type="hinge" axis="0 0 1" pos="0.01 0 0"/>
          <joint type="ball" pos="0.02 0 0"/>
          <geom type="ellipsoid" size="0.1 0.04 0.03" pos="0.1 0 0"/>
          <body pos="0.2 0 0">
            <joint type="ball"/>
            <joint type="slide" axis="1 0 0"/>
            <geom type="sphere" size="0.05" pos="0.05 0.01 0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>)";

// two free-floating trees (one branched), with hinge, ball and slide children
const char kFreeTree[] = R"(
<mujoco>
  <option gravity="0.2 0 -9.81"/>
  <default><joint armature="0.01"/></default>
  <worldbody>
    <body pos="0 0 1" euler="10 20 30">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05" pos="0.02 0 0"/>
      <body pos="0.2 0 0">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
        <body pos="0.3 0 0">
          <joint type="ball"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03"/>
        </body>
      </body>
      <body pos="-0.2 0 0" euler="0 0 180">
        <joint type="hinge" axis="0 0 1" pos="0 0.05 0"/>
        <joint type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
        <body pos="0.3 0 0">
          <joint type="slide" axis="1 0 0"/>
          <geom type="sphere" size="0.05"/>
        </body>
      </body>
    </body>
    <body pos="1 0 1">
      <freejoint/>
      <geom type="ellipsoid" size="0.1 0.06 0.04" pos="0.01 0.02 0"/>
      <body pos="0 0.1 0">
        <joint type="ball" pos="0 -0.02 0"/>
        <geom type="capsule" fromto="0 0 0 0 0.2 0" size="0.03"/>
      </body>
    </body>
  </worldbody>
</mujoco>)";

struct ModelCase {
  const char* name;
  const char* xml;   // inline XML, or NULL
  const char* file;  // file in models/ (or an absolute path), when xml is NULL
};

// gtest prints a case by its name
void PrintTo(const ModelCase& c, std::ostream* os) {
  *os << c.name;
}

const ModelCase kCases[] = {
    {"hinge_chain", kHingeChain, nullptr},
    {"slide_hinge", kSlideHinge, nullptr},
    {"ball_chain", kBallChain, nullptr},
    {"free_tree", kFreeTree, nullptr},
    {"cartpole", nullptr, "cartpole.xml"},
    {"acrobot", nullptr, "acrobot.xml"},
    {"hopper", nullptr, "hopper.xml"},
    {"cheetah", nullptr, "cheetah.xml"},
    {"arm_box", nullptr, "arm_box.xml"},
    {"quadruped", nullptr, "quadruped.xml"},
    {"humanoid", nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml"},
};

//---------------------------------- helpers -------------------------------------------------------

// a loaded model and its data, freed on scope exit
class Loaded {
 public:
  explicit Loaded(const ModelCase& c) {
    if (c.xml) {
      m_ = shim_loadString(c.xml, err_, sizeof(err_));
    } else {
      const char* path = c.file[0] == '/' ? c.file : shim_modelPath(c.file);
      m_ = shim_loadFile(path, err_, sizeof(err_));
    }
    if (m_) d_ = mj_makeData(m_);
  }
  ~Loaded() {
    if (d_) mj_deleteData(d_);
    if (m_) mj_deleteModel(m_);
  }
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;

  mjModel* m() const {
    return m_;
  }
  mjData* d() const {
    return d_;
  }
  const char* err() const {
    return err_;
  }

 private:
  mjModel* m_ = nullptr;
  mjData* d_ = nullptr;
  char err_[1000] = "";
};

// random qpos (unit quaternions for ball and free), qvel and acc
void RandomState(const mjModel* m, std::mt19937_64* rng, std::vector<mjtNum>* qpos,
                 std::vector<mjtNum>* qvel, std::vector<mjtNum>* acc) {
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  std::normal_distribution<double> N(0.0, 1.0);
  qpos->assign(m->qpos0, m->qpos0 + m->nq);
  for (int j = 0; j < m->njnt; j++) {
    mjtNum* q = qpos->data() + m->jnt_qposadr[j];
    switch (m->jnt_type[j]) {
      case mjJNT_FREE:
        for (int i = 0; i < 3; i++) q[i] = U(*rng);
        q += 3;
        [[fallthrough]];
      case mjJNT_BALL: {
        double n = 0;
        for (int i = 0; i < 4; i++) {
          q[i] = N(*rng);
          n += q[i] * q[i];
        }
        for (int i = 0; i < 4; i++) q[i] /= std::sqrt(n);
        break;
      }
      case mjJNT_SLIDE:
        q[0] = 0.3 * U(*rng);
        break;
      default:
        q[0] = M_PI * U(*rng);
    }
  }
  qvel->resize(m->nv);
  acc->resize(m->nv);
  for (int i = 0; i < m->nv; i++) {
    (*qvel)[i] = 2 * U(*rng);
    (*acc)[i] = 5 * U(*rng);
  }
}

// ID = M(q) acc + qfrc_bias(q, v), MuJoCo's stages on d (d's qpos and qvel are overwritten)
void InverseDynamics(const mjModel* m, mjData* d, const mjtNum* qpos, const mjtNum* qvel,
                     const mjtNum* acc, mjtNum* id) {
  mju_copy(d->qpos, qpos, m->nq);
  mju_copy(d->qvel, qvel, m->nv);
  mj_kinematics(m, d);
  mj_comPos(m, d);
  mj_crb(m, d);
  mj_comVel(m, d);
  std::vector<mjtNum> bias(m->nv);
  mj_mulM(m, d, id, acc);
  mj_rne(m, d, 0, bias.data());
  for (int i = 0; i < m->nv; i++) id[i] += bias[i];
}

// central differences of ID along each tangent of qpos (DidDq) and each qvel (DidDv), row-major
void FiniteDifference(const mjModel* m, mjData* d, const std::vector<mjtNum>& qpos,
                      const std::vector<mjtNum>& qvel, const std::vector<mjtNum>& acc, double eps,
                      double eps_v, std::vector<mjtNum>* DidDq, std::vector<mjtNum>* DidDv) {
  int nv = m->nv;
  DidDq->assign(nv * nv, 0);
  DidDv->assign(nv * nv, 0);
  std::vector<mjtNum> qp(m->nq), qm(m->nq), vp(nv), vm(nv), dq(nv), idp(nv), idm(nv);
  for (int k = 0; k < nv; k++) {
    // along q_k
    std::fill(dq.begin(), dq.end(), 0.0);
    dq[k] = 1;
    qp = qpos;
    qm = qpos;
    mj_integratePos(m, qp.data(), dq.data(), eps);
    mj_integratePos(m, qm.data(), dq.data(), -eps);
    InverseDynamics(m, d, qp.data(), qvel.data(), acc.data(), idp.data());
    InverseDynamics(m, d, qm.data(), qvel.data(), acc.data(), idm.data());
    for (int i = 0; i < nv; i++) (*DidDq)[i * nv + k] = (idp[i] - idm[i]) / (2 * eps);

    // along v_k
    vp = qvel;
    vm = qvel;
    vp[k] += eps_v;
    vm[k] -= eps_v;
    InverseDynamics(m, d, qpos.data(), vp.data(), acc.data(), idp.data());
    InverseDynamics(m, d, qpos.data(), vm.data(), acc.data(), idm.data());
    for (int i = 0; i < nv; i++) (*DidDv)[i * nv + k] = (idp[i] - idm[i]) / (2 * eps_v);
  }
}

double MaxAbs(const std::vector<mjtNum>& a) {
  double r = 0;
  for (mjtNum x : a) r = std::max(r, std::fabs(x));
  return r;
}

// max |a - b| / max |b|
double RelErr(const std::vector<mjtNum>& a, const std::vector<mjtNum>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); i++) e = std::max(e, std::fabs(a[i] - b[i]));
  return e / std::max(MaxAbs(b), 1e-300);
}

// analytic derivatives at (qpos, qvel, acc) after mj_forward
void Analytic(const mjModel* m, mjData* d, const std::vector<mjtNum>& qpos,
              const std::vector<mjtNum>& qvel, const std::vector<mjtNum>& acc,
              std::vector<mjtNum>* DidDq, std::vector<mjtNum>* DidDv) {
  mju_copy(d->qpos, qpos.data(), m->nq);
  mju_copy(d->qvel, qvel.data(), m->nv);
  mj_forward(m, d);
  DidDq->assign(m->nv * m->nv, 0);
  DidDv->assign(m->nv * m->nv, 0);
  mjdiff_rneDerivative(m, d, acc.data(), DidDq->data(), DidDv->data());
}

//---------------------------------- tests ---------------------------------------------------------

constexpr int kStates = 20;
constexpr double kEps = 1e-6;        // along q
constexpr double kEpsOther = 1e-5;   // along q, guard
constexpr double kEpsV = 1e-3;       // along v (ID quadratic in v: no truncation error)
constexpr double kEpsVOther = 1e-2;  // along v, guard
constexpr double kTol = 1e-6;

class RneDerivative : public ::testing::TestWithParam<ModelCase> {};

// worst relative errors over kStates random states, gravity on or off
void CheckModel(const ModelCase& c, bool gravity) {
  Loaded l(c);
  ASSERT_NE(l.m(), nullptr) << l.err();
  mjModel* m = l.m();
  mjData* d = l.d();
  if (!gravity) m->opt.disableflags |= mjDSBL_GRAVITY;
  int nv = m->nv;
  std::mt19937_64 rng(12345 + (gravity ? 0 : 1));
  std::vector<mjtNum> qpos, qvel, acc, Aq, Av, Fq, Fv, Gq, Gv;
  double worst_q = 0, worst_v = 0, worst_other = 0, noise = 0;
  for (int s = 0; s < kStates; s++) {
    RandomState(m, &rng, &qpos, &qvel, &acc);
    Analytic(m, d, qpos, qvel, acc, &Aq, &Av);
    FiniteDifference(m, d, qpos, qvel, acc, kEps, kEpsV, &Fq, &Fv);
    FiniteDifference(m, d, qpos, qvel, acc, kEpsOther, kEpsVOther, &Gq, &Gv);

    // guard: not trivially zero (far above roundoff; cartpole's dc/dv can be ~1e-3: light pole)
    ASSERT_GT(MaxAbs(Aq), 1e-5) << c.name << " state " << s;
    ASSERT_GT(MaxAbs(Av), 1e-5) << c.name << " state " << s;

    double eq = RelErr(Aq, Fq), ev = RelErr(Av, Fv);
    double oq = RelErr(Aq, Gq), ov = RelErr(Av, Gv);
    double nq = RelErr(Gq, Fq), nvel = RelErr(Gv, Fv);
    EXPECT_LE(eq, kTol) << c.name << " DidDq, state " << s << " (nv " << nv << ")";
    EXPECT_LE(ev, kTol) << c.name << " DidDv, state " << s;
    // guard: an FD with another step agrees equally well (the analytic result is not an FD copy),
    // and the analytic error is within the two FDs' own disagreement (their noise level)
    EXPECT_LE(oq, kTol) << c.name << " DidDq vs guard FD, state " << s;
    EXPECT_LE(ov, kTol) << c.name << " DidDv vs guard FD, state " << s;
    EXPECT_LE(eq, nq + 1e-8) << c.name << " DidDq above the FD noise, state " << s;
    EXPECT_LE(ev, nvel + 1e-8) << c.name << " DidDv above the FD noise, state " << s;
    worst_q = std::max(worst_q, eq);
    worst_v = std::max(worst_v, ev);
    worst_other = std::max({worst_other, oq, ov});
    noise = std::max({noise, nq, nvel});
  }
  std::printf(
      "[ rne_d    ] %-12s gravity %-3s nv %2d: worst rel err DidDq %.2e DidDv %.2e "
      "(vs guard FD: %.2e; FD noise |FD - guard FD| %.2e)\n",
      c.name, gravity ? "on" : "off", nv, worst_q, worst_v, worst_other, noise);
}

TEST_P(RneDerivative, MatchesFiniteDifferences) {
  CheckModel(GetParam(), true);
}

TEST_P(RneDerivative, MatchesFiniteDifferencesWithoutGravity) {
  CheckModel(GetParam(), false);
}

// NULL outputs are skipped and the other output is unchanged; inputs and the stack are untouched;
// repeated calls give bit-identical results
TEST_P(RneDerivative, NullableInputsUntouchedDeterministic) {
  Loaded l(GetParam());
  ASSERT_NE(l.m(), nullptr) << l.err();
  mjModel* m = l.m();
  mjData* d = l.d();
  int nv = m->nv;
  std::mt19937_64 rng(7);
  std::vector<mjtNum> qpos, qvel, acc, Aq, Av;
  RandomState(m, &rng, &qpos, &qvel, &acc);
  Analytic(m, d, qpos, qvel, acc, &Aq, &Av);

  std::vector<mjtNum> qpos0(d->qpos, d->qpos + m->nq), qvel0(d->qvel, d->qvel + nv);
  std::vector<mjtNum> cdof0(d->cdof, d->cdof + 6 * nv), acc0 = acc;
  int pstack0 = d->pstack;
  std::vector<mjtNum> Bq(nv * nv, -1), Bv(nv * nv, -1);
  mjdiff_rneDerivative(m, d, acc.data(), Bq.data(), nullptr);
  mjdiff_rneDerivative(m, d, acc.data(), nullptr, Bv.data());
  mjdiff_rneDerivative(m, d, acc.data(), nullptr, nullptr);
  EXPECT_EQ(0, std::memcmp(Bq.data(), Aq.data(), sizeof(mjtNum) * nv * nv));
  EXPECT_EQ(0, std::memcmp(Bv.data(), Av.data(), sizeof(mjtNum) * nv * nv));
  mjdiff_rneDerivative(m, d, acc.data(), Bq.data(), Bv.data());
  EXPECT_EQ(0, std::memcmp(Bq.data(), Aq.data(), sizeof(mjtNum) * nv * nv));
  EXPECT_EQ(0, std::memcmp(Bv.data(), Av.data(), sizeof(mjtNum) * nv * nv));
  EXPECT_EQ(d->pstack, pstack0);
  EXPECT_EQ(0, std::memcmp(qpos0.data(), d->qpos, sizeof(mjtNum) * m->nq));
  EXPECT_EQ(0, std::memcmp(qvel0.data(), d->qvel, sizeof(mjtNum) * nv));
  EXPECT_EQ(0, std::memcmp(cdof0.data(), d->cdof, sizeof(mjtNum) * 6 * nv));
  EXPECT_EQ(acc, acc0);
}

// too little scratch left on d's stack: NaN outputs, no MuJoCo stack error, the stack untouched
TEST_P(RneDerivative, StackTooSmallGivesNan) {
  Loaded l(GetParam());
  ASSERT_NE(l.m(), nullptr) << l.err();
  mjModel* m = l.m();
  mjData* d = l.d();
  int nv = m->nv;
  std::mt19937_64 rng(3);
  std::vector<mjtNum> qpos, qvel, acc, Aq, Av;
  RandomState(m, &rng, &qpos, &qvel, &acc);
  Analytic(m, d, qpos, qvel, acc, &Aq, &Av);
  // as if the caller held all but 8 numbers of the stack
  mjdiffStackMark mark = compat_stackMark(d);
  compat_stackAllocNum(d, compat_stackSpace(d) - 8);
  auto pstack1 = d->pstack;
  mjdiff_rneDerivative(m, d, acc.data(), Aq.data(), Av.data());
  EXPECT_EQ(d->pstack, pstack1);
  compat_stackFree(d, mark);
  for (int i = 0; i < nv * nv; i++) {
    ASSERT_TRUE(std::isnan(Aq[i]));
    ASSERT_TRUE(std::isnan(Av[i]));
  }
}

// cost of both matrices relative to one mj_forward (printed, not asserted)
TEST_P(RneDerivative, TimingAgainstForward) {
  Loaded l(GetParam());
  ASSERT_NE(l.m(), nullptr) << l.err();
  mjModel* m = l.m();
  mjData* d = l.d();
  int nv = m->nv;
  std::mt19937_64 rng(11);
  std::vector<mjtNum> qpos, qvel, acc, Aq(nv * nv), Av(nv * nv);
  RandomState(m, &rng, &qpos, &qvel, &acc);
  mju_copy(d->qpos, qpos.data(), m->nq);
  mju_copy(d->qvel, qvel.data(), nv);
  const int reps = 2000;
  using Clock = std::chrono::steady_clock;
  mj_forward(m, d);
  auto t0 = Clock::now();
  for (int r = 0; r < reps; r++) mj_forward(m, d);
  auto t1 = Clock::now();
  for (int r = 0; r < reps; r++) mjdiff_rneDerivative(m, d, acc.data(), Aq.data(), Av.data());
  auto t2 = Clock::now();
  double tf = std::chrono::duration<double>(t1 - t0).count() / reps;
  double td = std::chrono::duration<double>(t2 - t1).count() / reps;
  std::printf("[ rne_d    ] %-12s nv %2d: mj_forward %.2f us, rneDerivative %.2f us, ratio %.2f\n",
              GetParam().name, nv, tf * 1e6, td * 1e6, td / tf);
}

INSTANTIATE_TEST_SUITE_P(Models, RneDerivative, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
