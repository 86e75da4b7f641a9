// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The implicit smooth step (plugin/implicit.c, opt.integrator = 1): its parameter Jacobian P
// against finite differences of the converged step, Newton's convergence on a stiff stack, the
// friction it gives (incline creep, stopping distance) against MuJoCo's native step and the
// explicit step, its derived values, and its failures (a named error, the state untouched).
// (The state and control Jacobians A, B are checked in test_step_d.cc, StepDerivImplicit*.)

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <mjdiff/adjoint.h>
#include <mjdiff/params.h>

#include "testutil.h"

extern "C" {
#include "../adjoint/derivative.h"
#include "internal.h"
}

namespace {

using testutil::Sim;

// a box on an inclined plane (gravity tilted by ang) or sliding from v0 on a level one; friction mu
std::string boxXml(double h, double ang, double mu, const char* cone, const char* custom) {
  char buf[2000];
  snprintf(buf, sizeof(buf), R"(
<mujoco>
  <option timestep="%g" gravity="%.17g 0 %.17g" cone="%s"/>
  <custom>%s</custom>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="%g"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1" friction="%g"/>
    </body>
  </worldbody>
</mujoco>)",
           h, 9.81 * std::sin(ang), -9.81 * std::cos(ang), cone, custom, mu, mu);
  return buf;
}

const char* kImplicit = R"(<numeric name="mjdiff_integrator" data="1"/>)";


// one step of the box scenes: MuJoCo's native step (mode 0) or the smooth step (its model sets
// explicit or implicit); false, with a test failure naming the step's message, if it fails
bool stepBox(Sim& sim, int mode) {
  if (mode == 0) {
    mj_step(sim.sim.m, sim.sim.d);
    return true;
  }
  char err[1000];
  if (mjdiff_step(sim.sim.m, sim.sim.d, sim.sim.s, err, sizeof(err)) == MJDIFF_OK) return true;
  ADD_FAILURE() << err;
  return false;
}

// native (mode 0), explicit smooth (1) or implicit smooth (2) run of T seconds from qvel[0] = v0:
// the box's x speed over the second half (creep), or its distance travelled (v0 > 0); NaN if a
// step fails
double boxRun(int mode, double ang, double mu, double v0, double T, const char* cone = "pyramidal") {
  Sim sim(boxXml(0.002, ang, mu, cone, mode == 2 ? kImplicit : "").c_str());
  if (!sim.ok) return NAN;
  mjData* d = sim.sim.d;
  d->qvel[0] = v0;
  int n = (int)std::lround(T / 0.002);
  double x1 = 0;
  for (int i = 0; i < n; i++) {
    if (i == n / 2) x1 = d->qpos[0];
    if (!stepBox(sim, mode)) return NAN;
  }
  return v0 > 0 ? std::hypot(d->qpos[0], d->qpos[1]) : (d->qpos[0] - x1) / (T / 2);
}

// Static friction: a box at rest on an incline below its friction angle (tan = r mu). The
// implicit step's regularised law creeps at about v_s r / sqrt(1 - r^2) (v_s = 0.1 |g| h =
// 2 mm/s here): measured 0.5, 1.1, 2.2 mm/s at r = 0.25, 0.5, 0.75, against MuJoCo's native step
// 0.8, 1.9, 5.5 mm/s (its soft friction constraints creep too; elliptic cone 0.5, 0.9, 2.1) and
// the explicit smooth step 26, 59, 118 mm/s.
TEST(Implicit, InclineCreepNoWorseThanNative) {
  const double mu = 0.8;
  for (double r : {0.25, 0.5, 0.75}) {
    double ang = std::atan(r * mu);
    double native = boxRun(0, ang, mu, 0, 2), implicit = boxRun(2, ang, mu, 0, 2);
    double expl = boxRun(1, ang, mu, 0, 2);
    double vs = 0.1 * 9.81 * 0.002, predicted = vs * r / std::sqrt(1 - r * r);
    std::cout << "tan/mu " << r << ": creep native " << 1e3 * native << " mm/s, implicit "
              << 1e3 * implicit << ", explicit " << 1e3 * expl << ", law's prediction "
              << 1e3 * predicted << "\n";
    EXPECT_GT(implicit, 0);  // down the slope
    EXPECT_LE(implicit, native) << "r = " << r;
    EXPECT_LE(implicit, 1.5 * predicted) << "r = " << r;
    EXPECT_GE(expl, 10 * implicit) << "r = " << r;  // what the implicit step buys
  }
}

// Sliding friction: a box launched at 1 m/s stops after v0^2 / (2 mu g) = 0.1019 m (mu = 0.5)
// (measured: native 0.1011, implicit 0.1008 m)
TEST(Implicit, StoppingDistance) {
  const double mu = 0.5, v0 = 1, theory = v0 * v0 / (2 * mu * 9.81);
  double native = boxRun(0, 0, mu, v0, 1), implicit = boxRun(2, 0, mu, v0, 1);
  std::cout << "stopping distance: theory " << theory << " native " << native << " implicit "
            << implicit << " m\n";
  EXPECT_NEAR(implicit, theory, 0.03 * theory);
  EXPECT_NEAR(implicit, native, 0.03 * native);
}

// Cone: the effective sliding friction of a box launched at 2 m/s in direction ang of the contact
// frame (mean deceleration over 0.1 s / g; mu = 0.8). The smooth law is isotropic; MuJoCo's
// default pyramidal cone is not (measured: 0.76, 0.81, 0.56, 0.58 at 0, 15, 30, 45 degrees;
// elliptic 0.89, 0.93, 0.79, 0.80)
double effectiveMu(bool smooth, const char* cone, double ang) {
  Sim sim(boxXml(0.002, 0, 0.8, cone, smooth ? kImplicit : "").c_str());
  if (!sim.ok) return NAN;
  mjData* d = sim.sim.d;
  for (int i = 0; i < 200; i++) {
    if (!stepBox(sim, smooth ? 2 : 0)) return NAN;  // settle
  }
  d->qvel[0] = 2 * std::cos(ang);
  d->qvel[1] = 2 * std::sin(ang);
  for (int i = 0; i < 50; i++) {
    if (!stepBox(sim, smooth ? 2 : 0)) return NAN;
  }
  return (2 - std::hypot(d->qvel[0], d->qvel[1])) / 0.1 / 9.81;
}

TEST(Implicit, FrictionIsotropic) {
  for (int deg : {0, 15, 30, 45}) {
    double ang = deg * M_PI / 180;
    double smooth = effectiveMu(true, "pyramidal", ang);
    std::cout << deg << " deg: effective mu smooth " << smooth << ", native pyramidal "
              << effectiveMu(false, "pyramidal", ang) << ", elliptic "
              << effectiveMu(false, "elliptic", ang) << "\n";
    EXPECT_NEAR(smooth, 0.8, 0.008) << deg << " deg";
  }
}

// Bounce: a box dropped from 0.5 m (resting height 0.05 m): the highest it rises after its first
// impact, native / explicit / implicit (with the derived laws: MuJoCo's solref damping ratio 1)
double bounce(int mode) {
  Sim sim(boxXml(0.002, 0, 0.8, "pyramidal", mode == 2 ? kImplicit : "").c_str());
  if (!sim.ok) return NAN;
  mjData* d = sim.sim.d;
  d->qpos[2] = 0.5;
  bool hit = false;
  double peak = 0;
  for (int i = 0; i < 1000; i++) {
    if (!stepBox(sim, mode)) return NAN;
    if (d->qvel[2] > 0) hit = true;
    if (hit) peak = std::max(peak, (double)d->qpos[2] - 0.05);
  }
  return peak;
}

// The implicit step's transition-aware cap (mjdiff_frictionCap) on the box resting on the level
// plane, set sliding at 0.1 m/s along x (v_e = 0.1 |g| h = 1.96 mm/s): a Newton direction that
// turns the slip back through zero, or within v_e of it, stops at its closest approach, one that
// turns it back far from zero stops where its component along the slip vanishes (a 90 degree
// turn), one that speeds it up or slows it short of zero, or a contact that sticks, is not capped
TEST(Implicit, FrictionCapStopsTheSlipAtItsTurn) {
  Sim sim(boxXml(0.002, 0, 0.8, "pyramidal", kImplicit).c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  for (int i = 0; i < 200; i++) ASSERT_TRUE(stepBox(sim, 2));  // settle
  std::vector<mjtNum> fs(m->nv), jac(6 * m->nv);
  auto cap = [&](double vx, double vy, double dx, double dy) {
    mju_zero(d->qvel, m->nv);
    d->qvel[0] = vx;
    d->qvel[1] = vy;
    mjdiff_evalSmooth(m, d, sim.sim.s, fs.data());
    std::vector<mjtNum> dv(m->nv, 0.0);
    dv[0] = dx;
    dv[1] = dy;
    return (double)mjdiff_frictionCap(m, d, sim.sim.s, d->qvel, dv.data(), jac.data());
  };
  int touching = 0;
  mjdiff_evalSmooth(m, d, sim.sim.s, fs.data());
  for (int c = 0; c < d->ncon; c++) {
    mjtNum vt[2], ve;
    touching += mjdiff_contactSlip(m, d, sim.sim.s, d->contact + c, vt, &ve);
  }
  ASSERT_GE(touching, 3);
  EXPECT_NEAR(cap(0.1, 0, -0.4, 0), 0.25, 1e-12);               // through zero
  EXPECT_NEAR(cap(0.1, 0, -0.4, 0.001), 0.04 / 0.160001, 1e-12);  // within v_e of zero
  EXPECT_NEAR(cap(0.003, 0, -0.01, 0.005), 0.24, 1e-12);  // within v_e: not the 90-degree 0.3
  EXPECT_NEAR(cap(0.1, 0, -0.2, 0.2), 0.5, 1e-12);        // far from zero: the 90-degree turn
  EXPECT_NEAR(cap(0, 0.1, 0.01, -0.3), 1.0 / 3, 1e-12);   // the same along y
  EXPECT_EQ(cap(0.1, 0, 0.4, 0.1), 1);                    // speeding up: no cap
  EXPECT_EQ(cap(0.1, 0, -0.05, 0), 1);                    // slowing, short of zero: no cap
  EXPECT_EQ(cap(0.001, 0, -0.4, 0), 1);                   // sticking (|vt| < v_e): no cap
  EXPECT_EQ(cap(0.1, 0, -1e4, 0), 1e-3);                  // never below 1e-3
}

// The cap's slip change J_t dv is the law's: on a box on the floor with a capsule lying on it
// (contacts of two moving bodies, rolling friction), at random velocities v and directions dv, the
// cap equals the rule applied to the law's slips at v and at v + dv (the slip is linear in the
// velocities at fixed positions, so vt(v + dv) - vt(v) is the exact change); a cap that left out
// geom1's body (the box, under the capsule) or its rotation would not
TEST(Implicit, FrictionCapUsesTheLawsSlip) {
  const char* xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_integrator" data="1"/></custom>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.8"/>
    <body name="box" pos="0 0 0.05"><freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" friction="0.8"/></body>
    <body name="capsule" pos="0.01 0.02 0.13" euler="0 0 20"><freejoint/>
      <geom type="capsule" size="0.03 0.04" euler="0 90 0" mass="1" friction="0.8 0.6 0.01"
            condim="6"/></body>
  </worldbody>
</mujoco>)";
  Sim sim(xml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  for (int i = 0; i < 100; i++) ASSERT_TRUE(stepBox(sim, 2));  // settle
  int nv = m->nv;
  std::vector<mjtNum> fs(nv), jac(6 * nv), v(nv), dv(nv);
  unsigned long long rng = 7;
  int bodybody = 0, capped = 0;
  for (int trial = 0; trial < 40; trial++) {
    double scale = trial % 2 ? 0.3 : 0.02;
    for (int j = 0; j < nv; j++) {
      v[j] = scale * (2 * testutil::uniform(&rng) - 1);
      dv[j] = 3 * scale * (2 * testutil::uniform(&rng) - 1);
    }
    // the law's slips at v + dv, then at v (d is left at v for the cap)
    mju_add(d->qvel, v.data(), dv.data(), nv);
    mjdiff_evalSmooth(m, d, sim.sim.s, fs.data());
    int ncon = d->ncon;
    std::vector<mjtNum> vt1(2 * ncon);
    std::vector<int> on1(ncon);
    for (int c = 0; c < ncon; c++) {
      mjtNum e;
      on1[c] = mjdiff_contactSlip(m, d, sim.sim.s, d->contact + c, vt1.data() + 2 * c, &e);
    }
    mju_copy(d->qvel, v.data(), nv);
    mjdiff_evalSmooth(m, d, sim.sim.s, fs.data());
    ASSERT_EQ(d->ncon, ncon);
    double expect = 1;
    for (int c = 0; c < ncon; c++) {
      mjtNum a[2], e;
      if (!mjdiff_contactSlip(m, d, sim.sim.s, d->contact + c, a, &e) || !on1[c]) continue;
      bodybody += m->geom_bodyid[compat_contactGeom1(d->contact + c)] != 0;
      double b[2] = {vt1[2 * c] - a[0], vt1[2 * c + 1] - a[1]};
      double s2 = a[0] * a[0] + a[1] * a[1], dd = b[0] * b[0] + b[1] * b[1];
      double dot = a[0] * b[0] + a[1] * b[1], cross = a[0] * b[1] - a[1] * b[0];
      if (!(s2 > e * e) || !(dot < 0)) continue;
      expect = std::min(expect, cross * cross < e * e * dd ? -dot / dd : -s2 / dot);
    }
    expect = std::max(expect, 1e-3);
    double got = mjdiff_frictionCap(m, d, sim.sim.s, d->qvel, dv.data(), jac.data());
    capped += expect < 1;
    EXPECT_NEAR(got, expect, 1e-9 * expect) << "trial " << trial;
  }
  std::cout << "capped in " << capped << " of 40 trials; contacts between two moving bodies seen "
            << bodybody << " times\n";
  EXPECT_GE(capped, 10);
  EXPECT_GT(bodybody, 0);
}

TEST(Implicit, DroppedBoxBounce) {
  double native = bounce(0), expl = bounce(1), implicit = bounce(2);
  std::cout << "bounce above rest: native " << 1e3 * native << " mm, explicit " << 1e3 * expl
            << " mm, implicit " << 1e3 * implicit << " mm\n";
  // measured: native 0, explicit 5.8, implicit 3.8 mm (restitution 0.09: the normal law's damping
  // cannot pull, so the spring's last push on leaving goes undamped; MuJoCo's impedance holds it)
  EXPECT_LT(implicit, 5e-3);
  EXPECT_LT(implicit, expl);
}

// a stack of five boxes (5 kg at the bottom to 1 kg on top), firm contacts (the derived values
// under the implicit step, and 10x stiffer still): every step converges, in few Newton iterations, and the stack rests as deep
// as MuJoCo's (about 0.1-0.3 mm per contact); the explicit step cannot hold the 10x stiffness
std::string stackXml(const char* custom) {
  std::string xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom>)";
  xml += custom;
  xml += R"(</custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>)";
  for (int i = 0; i < 5; i++) {
    char body[300];
    // each box smaller than the one below, offset and yawed: no flush side faces, where
    // MuJoCo's box-box switches between its face and edge cases under any tilt (plugin/boxbox.c)
    snprintf(body, sizeof(body), R"(
    <body pos="%g %g %g" euler="0 0 %g"><freejoint/>
      <geom type="box" size="%g %g 0.05" mass="%g"/></body>)",
             0.005 * i, 0.003 * i, 0.05 + 0.1 * i, 7.0 * i, 0.1 - 0.012 * i, 0.1 - 0.012 * i,
             5.0 - i);
    xml += body;
  }
  xml += "\n  </worldbody>\n</mujoco>";
  return xml;
}

TEST(Implicit, NewtonConvergesOnStiffStack) {
  for (int stiffer = 0; stiffer < 2; stiffer++) {
    Sim sim(stackXml(kImplicit).c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    char err[1000];
    mjtNum k;
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 1, 2, &k, err, sizeof(err)),
              MJDIFF_OK);
    if (stiffer) {
      ASSERT_EQ(mjdiff_setParam(sim.sim.s, "contact_stiffness", 100 * k, err, sizeof(err)),
                MJDIFF_OK);
    }
    int worstIter = 0;
    long sumIter = 0;
    double deepest = 0;
    int n = 1000;
    for (int i = 0; i < n; i++) {
      ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK)
          << "step " << i << ": " << err;
      mjtNum correction;
      int iters = mjdiff_implicitStats(d, &correction, nullptr);
      worstIter = std::max(worstIter, iters);
      sumIter += iters;
      EXPECT_LE(correction, 1e-10);  // the accepted correction
      if (i > n / 2) {
        for (int c = 0; c < d->ncon; c++) deepest = std::max(deepest, -(double)d->contact[c].dist);
      }
    }
    std::cout << (stiffer ? "100x stiffness" : "derived stiffness") << " (pair k " << k
              << "): Newton iterations mean " << (double)sumIter / n << ", worst " << worstIter
              << "; deepest contact at rest " << 1e3 * deepest << " mm\n";
    EXPECT_LE((double)sumIter / n, 6);
    EXPECT_LE(worstIter, 20);
    // MuJoCo's native step: 0.38 mm reported, 0.76 mm deep (its box-box face case reports half
    // the depth, plugin/boxbox.c); the target of 2 mm, or 2x native
    EXPECT_LT(deepest, stiffer ? 0.1e-3 : 2e-3);
    EXPECT_GT(d->qpos[7 * 4 + 2], 0.44);  // the top box still sits on the stack
    EXPECT_LT(std::fabs(d->qvel[6 * 4 + 2]), 1e-3);  // at rest
  }

  // the explicit step at the implicit step's 100x stiffness: the step is refused, named
  Sim sim(stackXml("").c_str());
  ASSERT_TRUE(sim.ok);
  Sim imp(stackXml(kImplicit).c_str());
  char err[1000];
  mjtNum k;
  ASSERT_EQ(mjdiff_getPairParam(imp.sim.s, "contact_stiffness", 1, 2, &k, err, sizeof(err)),
            MJDIFF_OK);
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "contact_stiffness", 100 * k, err, sizeof(err)), MJDIFF_OK);
  mjdiffStatus st = MJDIFF_OK;
  for (int i = 0; i < 1000 && st == MJDIFF_OK; i++) {
    st = mjdiff_step(sim.sim.m, sim.sim.d, sim.sim.s, err, sizeof(err));
  }
  EXPECT_EQ(st, MJDIFF_ERR_NONFINITE);
}

// the derived values follow the integrator: firmer under the implicit step, where the explicit
// step's cap binds (the humanoid at its 5 ms step); setting the integrator derives them again
// a plank hinged through its centre of mass cannot move that centre: MuJoCo's translational
// invweight0, the implicit normal law's A, is 0 there (MuJoCo's own contact is then hard). The law
// keeps a finite stiffness, a tenth of the lever's A (plugin/derive.c), and the plank, pressed
// into the floor by its motor, stops on it (with A = 0 the pair's series rule gave no force at all
// and the plank turned through the floor)
TEST(Implicit, PlankHingedAtItsCentreStopsOnTheFloor) {
  Sim sim(R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_integrator" data="1"/></custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="plank" pos="0 0 0.1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom name="plank" type="box" size="0.4 0.05 0.01" mass="5"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="1"/></actuator>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int floor = mj_name2id(m, mjOBJ_GEOM, "floor"), plank = mj_name2id(m, mjOBJ_GEOM, "plank");
  int b = m->geom_bodyid[plank];
  EXPECT_EQ(m->body_invweight0[2 * b], 0);
  mjtNum k = 0;
  char err[1000];
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", floor, plank, &k, err, 1000),
            MJDIFF_OK) << err;
  // MuJoCo's default solref, solimp, uncapped (plugin/derive.c): k dbar / (1 - dbar)
  const double kref = 1 / (0.95 * 0.95 * 0.02 * 0.02), w2 = kref * 0.925 / 0.075;
  EXPECT_NEAR(k, w2 / (sim.sim.s->geom_invweightn[plank] / 10), 1e-9 * k);
  // 20 N m pressing the plank's end (0.4 m out: 50 N) into the floor for 1 s
  d->ctrl[0] = 20;
  double deepest = 0;
  for (int i = 0; i < 500; i++) {
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << i << ": " << err;
    for (int c = 0; c < d->ncon; c++) deepest = std::max(deepest, -(double)d->contact[c].dist);
  }
  std::cout << "plank hinged at its centre: deepest contact " << 1e3 * deepest
            << " mm, angle " << d->qpos[0] << " rad\n";
  EXPECT_LT(deepest, 2e-3);
  EXPECT_LT(std::fabs(d->qpos[0]), 0.3);  // it meets the floor at 0.23 rad; through it, it turns on
}

TEST(Implicit, DerivedValuesFollowTheIntegrator) {
  Sim sim(nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  int foot = mj_name2id(m, mjOBJ_GEOM, "right_right_foot");
  ASSERT_GE(foot, 0);
  char err[500];
  mjtNum kExplicit, kImplicit, vExplicit, vImplicit, kSubsteps;
  // the derived five substeps bring the explicit law to MuJoCo's firmness (the limbs' solref
  // .015 and solimp .9 .99 make omega_match h 4.2x the explicit cap at 5 ms), as the implicit
  // step's: the same omega^2 = K A, the explicit law's A on the per-shape normal lever (the foot
  // is a capsule, whose normal lever is shorter than its farthest point's), the implicit law's
  // MuJoCo's own efc_diagApprox of the normal row, the body's translational invweight0
  // (plugin/derive.c)
  ASSERT_EQ(mjdiff_substepCount(sim.sim.s), 5);
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, foot, &kSubsteps, err, 500),
            MJDIFF_OK);
  const mjtNum An = sim.sim.s->geom_invweightn[foot], Afar = sim.sim.s->geom_invweight[foot];
  EXPECT_LT(An, 0.9 * Afar);  // the capsule's normal lever is shorter than its farthest point's
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "substeps", 1, err, 500), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, foot, &kExplicit, err, 500),
            MJDIFF_OK);
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "friction_speed", 0, foot, &vExplicit, err, 500),
            MJDIFF_OK);
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 1, err, 500), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, foot, &kImplicit, err, 500),
            MJDIFF_OK);
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "friction_speed", 0, foot, &vImplicit, err, 500),
            MJDIFF_OK);
  EXPECT_GT(kImplicit, 7 * kExplicit);
  EXPECT_EQ(mjdiff_substepCount(sim.sim.s), 1);
  const mjtNum At = m->body_invweight0[2 * m->geom_bodyid[foot]];
  EXPECT_LT(At, 0.9 * An);
  EXPECT_NEAR(kSubsteps * An, kImplicit * At, 1e-9 * kImplicit * At);
  EXPECT_EQ(sim.sim.s->geom_invweightn[foot], An);
  EXPECT_NEAR(vImplicit, 0.1 * 9.81 * m->opt.timestep, 1e-12);
  EXPECT_LT(vImplicit, vExplicit);
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 0, err, 500), MJDIFF_OK);
  mjtNum back;
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, foot, &back, err, 500),
            MJDIFF_OK);
  EXPECT_EQ(back, kExplicit);

  // bad values name the field
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 2, err, 500), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("integrator"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "implicit_maxiter", 2.5, err, 500), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("implicit_maxiter"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "implicit_tol", 0, err, 500), MJDIFF_ERR_VALUE);
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "integrator:floor", 1, err, 500), MJDIFF_ERR_NAME);
}

// the humanoid standing from its keyframe-free initial pose under the implicit step's derived
// values rests about as deep as under MuJoCo's native step (explicit: 21 mm at its 5 ms step)
TEST(Implicit, HumanoidRestsAsDeepAsNative) {
  double nativeDeepest = 0;
  for (int mode = 0; mode < 2; mode++) {
    Sim sim(nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml");
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    char err[1000];
    if (mode) {
      ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 1, err, 1000), MJDIFF_OK);
    }
    double deepest = -1;  // the largest -dist, negative where the law holds every contact out
    int n = 1000;  // 5 s: the humanoid falls and lies on the floor
    for (int i = 0; i < n; i++) {
      if (mode) {
        ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << i << ": " << err;
      } else {
        mj_step(m, d);
      }
      if (i >= n * 4 / 5) {
        for (int c = 0; c < d->ncon; c++) deepest = std::max(deepest, -(double)d->contact[c].dist);
      }
    }
    std::cout << (mode ? "implicit" : "native") << ": deepest contact over the last 1 s "
              << 1e3 * deepest << " mm\n";
    if (mode) {
      // no deeper than MuJoCo's solver holds it (0.68 mm): the normal law on MuJoCo's own
      // efc_diagApprox (plugin/derive.c); 1.16 mm on the explicit step's per-shape lever. Nor
      // floating: its deepest contact within the law's width (the limbs' solimp width 3 mm),
      // where the law's ramp holds it
      EXPECT_LT(deepest, nativeDeepest + 2.5e-4);
      EXPECT_GT(deepest, -3e-3);
    } else {
      nativeDeepest = deepest;
    }
  }
}

// the humanoid at its 5 ms step under smooth controls (mjdiff-bench-fidelity's control run, seed
// 1): steep friction under large loads made Newton stall (an indefinite N from the geometric
// terms of large contact forces: corrections of 1e3 m/s) until steps were capped and N damped
// towards M (Levenberg-Marquardt); every step converges now
TEST(Implicit, HumanoidUnderControlsConverges) {
  Sim sim(nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[1000];
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 1, err, sizeof(err)), MJDIFF_OK);
  unsigned long long rng = 1;
  std::vector<double> phase(m->nu);
  for (int i = 0; i < m->nu; i++) phase[i] = 6.283185307179586 * testutil::uniform(&rng);
  int worst = 0;
  long sum = 0, n = 200;
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < m->nu; i++) {
      double lo, hi;
      testutil::ctrlRange(m, i, &lo, &hi);
      d->ctrl[i] = lo + (hi - lo) * (0.5 + 0.4 * std::sin(0.05 * k + phase[i]));
    }
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << "step " << k << ": "
                                                                         << err;
    int iters = mjdiff_implicitStats(d, nullptr, nullptr);
    worst = std::max(worst, iters);
    sum += iters;
  }
  std::cout << "humanoid under controls: Newton iterations mean " << (double)sum / n
            << ", worst " << worst << "\n";
  EXPECT_LE(worst, 60);
}

// The humanoid under random controls (uniform in ctrlrange, redrawn every 0.1 s, 2 s from the
// keyframe, 100 seeds): Newton's damping. The earlier rule (x10 on a cut step, x0.1 on a full one)
// fell into two-cycles between lam 10 and 100 in which the merit crept down by a percent per
// iteration until the 100-iteration cap: 13 of these 100 runs failed (75 of 1000), against 6
// (46 of 1000) with x2 / x0.3, then (remeasured 2026-12-07, the split off) 4 with the continuation
// in the timestep and 10 without it (runs 0, 17, 20, 44, 49 and 80 rescued), and with the
// transition-aware cap (mjdiff_frictionCap) 2 and 7; none with the split into half steps where
// Newton still fails (implicit_split 3, the default; Implicit.SplitWhereNewtonFails).
// Every failure is the named "did not converge" error.
TEST(Implicit, HumanoidRandomControls) {
  Sim sim(nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[1000];
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 1, err, sizeof(err)), MJDIFF_OK);
  int failed = 0;
  for (int r = 0; r < 100; r++) {
    unsigned long long rng = 1000 + r;
    mj_resetDataKeyframe(m, d, 0);
    for (int i = 0; i < 400; i++) {
      if (i % 20 == 0) testutil::uniformCtrl(m, d, &rng);
      mjdiffStatus st = mjdiff_step(m, d, sim.sim.s, err, sizeof(err));
      if (st != MJDIFF_OK) {
        EXPECT_EQ(st, MJDIFF_ERR_NONFINITE) << err;
        EXPECT_NE(std::string(err).find("did not converge"), std::string::npos) << err;
        failed++;
        break;
      }
    }
  }
  std::cout << "humanoid, random controls: " << failed << " of 100 two-second runs failed\n";
  EXPECT_LE(failed, 1);  // (0 measured on 2.2.2)
}

// Run 31 of HumanoidRandomControls at its step 70 (t = 0.35 s): Newton from v' = v stalls there
// (the merit at a nonzero residual after 100 iterations: the step fails with
// implicit_continuation 0), Newton at h / 2 from v converges, and from that root Newton at h
// converges: the step's root. Its derivatives, by the implicit function theorem at that root,
// match central differences of the step (each perturbed step takes the same continuation).
TEST(Implicit, ContinuationFindsTheRootNewtonMissed) {
  testutil::StepSim sim(nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
  ASSERT_EQ(mjdiff_setParam(s, "integrator", 1, err, sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_setParam(s, "implicit_tol", 1e-12, err, sizeof(err)), MJDIFF_OK);
  unsigned long long rng = 1000 + 31;
  mj_resetDataKeyframe(m, d, 0);
  for (int i = 0; i < 70; i++) {
    if (i % 20 == 0) testutil::uniformCtrl(m, d, &rng);
    ASSERT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_OK) << "step " << i << ": " << err;
  }
  std::vector<mjtNum> state = testutil::getState(m, d);

  // the guard: without the continuation (and without the split, which would take over) the step
  // fails, named, and leaves the state
  ASSERT_EQ(mjdiff_setParam(s, "implicit_continuation", 0, err, sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_setParam(s, "implicit_split", 0, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::string(err).find("did not converge"), std::string::npos) << err;
  std::vector<mjtNum> after = testutil::getState(m, d);
  EXPECT_EQ(0, std::memcmp(state.data(), after.data(), state.size() * sizeof(mjtNum)));
  EXPECT_EQ(mjdiff_setParam(s, "implicit_continuation", 9, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("implicit_continuation"), std::string::npos) << err;

  // with it (the default, 4 halvings) the step converges (at h: no split)
  ASSERT_EQ(mjdiff_setParam(s, "implicit_continuation", 4, err, sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_OK) << err;
  shim_setState(m, d, state.data());

  // the derivatives against Richardson-extrapolated central differences (two scales; a column
  // whose two estimates disagree by more than the tolerance is not compared)
  int nv = m->nv, nu = m->nu, ndx = 2 * nv + m->na, ncol = ndx + nu;
  std::vector<mjtNum> A(ndx * ndx), B(ndx * nu);
  ASSERT_EQ(mjdiff_stepJacobian(m, d, s, sim.w, A.data(), B.data(), nullptr, err, sizeof(err)),
            MJDIFF_OK) << err;
  std::vector<mjtNum> J = testutil::joinAB(ndx, nu, A, B), F1;
  std::string failure;
  const double tol = 1e-6;
  int compared = 0;
  double worst = testutil::fdJacobianError(m, d, s, state, J, 1e-5, tol, &compared, &F1, &failure);
  ASSERT_TRUE(failure.empty()) << failure;
  std::cout << "continuation root: " << compared << " of " << ncol
            << " columns compared, worst relative error " << worst << "\n";
  EXPECT_GE(compared, (int)(0.9 * ncol));
  EXPECT_LE(worst, tol);
  EXPECT_NE(0, std::memcmp(J.data(), F1.data(), J.size() * sizeof(mjtNum)));  // guard
}

// Where Newton fails at the model's timestep (here forced: implicit_maxiter 6, no continuation,
// on the hopper's landings) mjdiff_step splits the implicit step into halves (implicit_split,
// default 3 halvings). The guard: with implicit_split 0 those steps fail by name. At states
// where the step splits, its Jacobians (chained over the split's steps, each by the implicit
// function theorem at its root) match central differences of the step; the VJP, with Newton's
// hint at the step's own end velocity as a rollout gives it, and the JVP equal the Jacobian's
// products; d's state is left bit for bit and its derived quantities at x_0's forward pass
TEST(Implicit, SplitWhereNewtonFails) {
  std::string xml = testutil::withNumerics(
      testutil::readFile(shim_modelPath("hopper.xml")),
      std::string(testutil::kImplicitTight) +
          "<numeric name=\"mjdiff_implicit_maxiter\" data=\"6\"/>"
          "<numeric name=\"mjdiff_implicit_continuation\" data=\"0\"/>");
  testutil::StepSim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
  int nv = m->nv, nu = m->nu, ndx = 2 * nv + m->na, ncol = ndx + nu;
  int sz = m->nq + nv + m->na + 1;
  std::vector<mjtNum> pieceState(sz * 9), pieceH(8);
  mjData* c = mj_makeData(m);
  int found = 0, steps = 0, splits = 0;
  for (int t = 0; t < 3000 && found < 4; t++) {
    for (int i = 0; i < nu; i++) d->ctrl[i] = std::sin(0.003 * t * (i + 1) + i);
    mj_copyData(c, m, d);
    mjdiffPieces rec = {0, 8, pieceState.data(), pieceH.data()};
    ASSERT_EQ(mjdiff_implicitPieces(m, c, s, &rec, err, sizeof(err)), MJDIFF_OK) << err;
    steps++;
    splits += rec.n > 1;
    if (rec.n > 1 && (found == 0 || t % 7 == 0)) {
      found++;
      std::vector<mjtNum> state = testutil::getState(m, d);

      // the guard: unsplit, the step fails by name and leaves the state
      ASSERT_EQ(mjdiff_setParam(s, "implicit_split", 0, err, sizeof(err)), MJDIFF_OK);
      EXPECT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_ERR_NONFINITE);
      EXPECT_NE(std::string(err).find("did not converge"), std::string::npos) << err;
      std::vector<mjtNum> after = testutil::getState(m, d);
      EXPECT_EQ(0, std::memcmp(state.data(), after.data(), sizeof(mjtNum) * state.size()));
      ASSERT_EQ(mjdiff_setParam(s, "implicit_split", 3, err, sizeof(err)), MJDIFF_OK);

      // the step is the split's: its end state
      std::vector<mjtNum> next;
      ASSERT_TRUE(testutil::stepFrom(m, d, s, state, nullptr, nullptr, &next));
      for (int i = 0; i < m->nq + nv; i++) {
        EXPECT_EQ(next[i], pieceState[(size_t)sz * rec.n + i]) << "state entry " << i;
      }
      shim_setState(m, d, state.data());

      // the Jacobians against Richardson-extrapolated central differences
      std::vector<mjtNum> A(ndx * ndx), B(ndx * nu);
      ASSERT_EQ(mjdiff_stepJacobian(m, d, s, sim.w, A.data(), B.data(), nullptr, err,
                                    sizeof(err)), MJDIFF_OK) << err;
      after = testutil::getState(m, d);
      EXPECT_EQ(0, std::memcmp(state.data(), after.data(), sizeof(mjtNum) * state.size()));
      std::vector<mjtNum> J = testutil::joinAB(ndx, nu, A, B), F1;
      std::string failure;
      const double tol = 1e-6;
      int compared = 0;
      double worst = testutil::fdJacobianError(m, d, s, state, J, 1e-5, tol, &compared, &F1,
                                               &failure);
      ASSERT_TRUE(failure.empty()) << failure;
      std::cout << "split into " << rec.n << " steps at t = " << d->time << ": " << compared
                << " of " << ncol << " columns compared, worst relative error " << worst << "\n";
      EXPECT_GE(compared, (int)(0.8 * ncol));
      EXPECT_LE(worst, tol);
      EXPECT_NE(0, std::memcmp(J.data(), F1.data(), J.size() * sizeof(mjtNum)));  // guard

      // VJP (hinted at the step's end velocity) and JVP against the Jacobian
      std::vector<mjtNum> lam(ndx), lx(ndx), lu(nu), dx(ndx), du(nu), jv(ndx);
      for (int i = 0; i < ndx; i++) lam[i] = std::sin(1.0 + i), dx[i] = std::cos(2.0 + i);
      for (int i = 0; i < nu; i++) du[i] = std::sin(3.0 + i);
      shim_setState(m, d, state.data());
      mjdiff_stepDerivHint(sim.w, next.data() + m->nq);
      ASSERT_EQ(mjdiff_stepVJP(m, d, s, sim.w, lam.data(), lx.data(), lu.data(), nullptr, err,
                               sizeof(err)), MJDIFF_OK) << err;
      ASSERT_EQ(mjdiff_stepJVP(m, d, s, sim.w, dx.data(), du.data(), nullptr, jv.data(), err,
                               sizeof(err)), MJDIFF_OK) << err;
      EXPECT_LE(testutil::productError(J, ndx, nu, lam.data(), lx.data(), lu.data(), dx.data(),
                                       du.data(), jv.data()), 1e-9);
      after = testutil::getState(m, d);
      EXPECT_EQ(0, std::memcmp(state.data(), after.data(), sizeof(mjtNum) * state.size()));
      mj_copyData(c, m, d);
      ASSERT_EQ(mjdiff_forward(m, c, s, err, sizeof(err)), MJDIFF_OK) << err;
      EXPECT_EQ(0, std::memcmp(c->qacc, d->qacc, sizeof(mjtNum) * nv));
      EXPECT_EQ(0, std::memcmp(c->qfrc_passive, d->qfrc_passive, sizeof(mjtNum) * nv));
    }
    ASSERT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_OK) << "t " << d->time << ": " << err;
  }
  mj_deleteData(c);
  std::cout << splits << " of " << steps << " steps split\n";
  EXPECT_GE(found, 3);
}

// A pinned grid like MuJoCo's hammock sample (testutil::pinnedGridXml: 180 dofs, 112 tendons held
// by tendon equalities). The force derivative's spatial-tendon Hessians need d's stack on top of
// the implicit step's own arrays; before the step counted them, a stack sized to what the step
// asked for left them out (the call's status ignored), the Newton matrix lost the tendons'
// stiffness and Newton crept linearly (the hammock: 100 iterations at step 0 and a failure).
// Here the stack is exactly what the step says it needs (from its own refusal), and Newton must
// converge quadratically.
TEST(Implicit, PinnedGridNewtonHasTheTendonTerms) {
  char err[1000];
  mjModel* m = shim_loadString(testutil::pinnedGridXml().c_str(), err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  ASSERT_EQ(m->nv, 180);

  // the step's own figure: refused with a small stack, then given exactly what it asked for
  for (int pass = 0; pass < 2; pass++) {
    mjData* d = mj_makeData(m);
    mjdiffModel* s = nullptr;
    ASSERT_EQ(mjdiff_makeModel(m, nullptr, &s, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_setParam(s, "integrator", 1, err, sizeof(err)), MJDIFF_OK);
    if (pass == 0) {  // shrink the stack to the step's own arrays: refused by name
#if MJDIFF_MUJOCO_3
      m->narena = (size_t)(6.0 * m->nv * m->nv) * sizeof(mjtNum);
#else
      m->nstack = (int)(6.0 * m->nv * m->nv);
#endif
      mj_deleteData(d);
      mjdiff_freeModel(s);
      d = mj_makeData(m);
      ASSERT_EQ(mjdiff_makeModel(m, nullptr, &s, err, sizeof(err)), MJDIFF_OK) << err;
      ASSERT_EQ(mjdiff_setParam(s, "integrator", 1, err, sizeof(err)), MJDIFF_OK);
      ASSERT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_ERR_MEMORY);
      std::string msg = err;
      EXPECT_NE(msg.find("nstack"), std::string::npos) << msg;
      size_t need = 0, have = 0;
      size_t at = msg.find('(');
      ASSERT_NE(at, std::string::npos) << msg;
      ASSERT_EQ(std::sscanf(msg.c_str() + at, "(%zu numbers needed, %zu free)", &need, &have), 2)
          << msg;
      ASSERT_GT(need, have);
#if MJDIFF_MUJOCO_3
      m->narena += (need - have) * sizeof(mjtNum);
#else
      m->nstack += (int)(need - have);
#endif
    } else {
      int worst = 0;
      for (int k = 0; k < 20; k++) {
        ASSERT_EQ(mjdiff_step(m, d, s, err, sizeof(err)), MJDIFF_OK) << "step " << k << ": "
                                                                     << err;
        worst = std::max(worst, mjdiff_implicitStats(d, nullptr, nullptr));
      }
      std::cout << "pinned grid: worst Newton iterations over 20 steps " << worst << "\n";
      EXPECT_LE(worst, 10);
    }
    mjdiff_freeModel(s);
    mj_deleteData(d);
  }
  mj_deleteModel(m);
}

// A step where Newton's direction, damped towards M, is no descent direction of the merit: the
// hopper's foot landing on the floor with the implicit step's derived values, at the truth of
// the native calibration (foot friction 1.2, torso mass 3.85), from the state of a multiple-
// shooting window (a recording's noisy state, step 473 of scripts/calibrate_native.sh's control
// fit). Before the Gauss-Newton fallback, the merit stalled at 2.3e-3 with the damping at its
// cap and the step failed after 100 iterations, so the control fit stopped at -19% / -8.7%.
TEST(Implicit, NewtonFallsBackToGaussNewtonWhereDampedNewtonStalls) {
  std::string xml = testutil::readFile(shim_modelPath("hopper.xml"));
  ASSERT_FALSE(xml.empty());
  for (size_t at; (at = xml.find("<numeric name=\"mjdiff_")) != std::string::npos;) {
    xml.erase(at, xml.find("/>", at) + 2 - at);  // the model's own values: derived ones instead
  }
  xml = testutil::withNumerics(xml, kImplicit);
  Sim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[1000];
  const char* names[] = {"geom:foot_geom:friction[0]", "body:torso:mass"};
  mjdiffParams* p = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, sim.sim.s, names, 2, &p, err, sizeof(err)), MJDIFF_OK) << err;
  mjtNum truth[2] = {1.2, 3.85};
  ASSERT_EQ(mjdiff_setParamValues(m, sim.sim.s, p, truth, err, sizeof(err)), MJDIFF_OK) << err;
  const mjtNum qpos[] = {-0.93801952708248404, -0.24080069210829519, -0.049805470369518087,
                         -0.71831671822325938, 0.037141819894682994, 0.30849281666912526};
  const mjtNum qvel[] = {-2.185302882671833, -0.82967710074601975, -1.2696254511428462,
                         -2.1541677342677916, 2.7206654107752883, -3.6897320876698338};
  const mjtNum ctrl[] = {1, -0.296207, -0.05683};
  ASSERT_EQ(m->nq, 6);
  ASSERT_EQ(m->nu, 3);
  d->time = 0.946;
  mju_copy(d->qpos, qpos, 6);
  mju_copy(d->qvel, qvel, 6);
  mju_copy(d->ctrl, ctrl, 3);
  ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  mjtNum corr = 0;
  int iters = mjdiff_implicitStats(d, &corr, nullptr);
  std::cout << "hopper landing: " << iters << " Newton iterations, last correction " << corr
            << ", contacts " << d->ncon << "\n";
  EXPECT_GE(d->ncon, 1);
  EXPECT_LE(iters, 40);
  EXPECT_LE(corr, 1e-10);
  mjdiff_freeParams(p);
}

// Newton that cannot converge in the allowed iterations: a named error, the state untouched (bit
// for bit, a quaternion off unit length too)
TEST(Implicit, NewtonFailureIsNamed) {
  Sim sim(stackXml(kImplicit).c_str());
  ASSERT_TRUE(sim.ok);
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[1000];
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "implicit_maxiter", 1, err, 1000), MJDIFF_OK);
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "implicit_tol", 1e-14, err, 1000), MJDIFF_OK);
  d->qvel[2] = -2;  // the bottom box thrown at the floor
  // its quaternion off unit length, as a caller's state may hold it: the step's forward pass
  // normalises it in place (MuJoCo's mj_kinematics), and the failed step gives it back as it was
  ASSERT_EQ(m->jnt_type[0], mjJNT_FREE);
  for (int i = 3; i < 7; i++) d->qpos[i] *= 1 + 1e-7;
  std::vector<mjtNum> before = testutil::getState(m, d);
  mjdiffStatus st = mjdiff_step(m, d, sim.sim.s, err, sizeof(err));
  EXPECT_EQ(st, MJDIFF_ERR_NONFINITE);
  std::string msg = err;
  EXPECT_NE(msg.find("did not converge"), std::string::npos) << msg;
  EXPECT_NE(msg.find("joint"), std::string::npos) << msg;
  EXPECT_NE(msg.find("time 0"), std::string::npos) << msg;
  // (not the explicit step's stability bound, which means nothing here)
  EXPECT_EQ(msg.find("largest stable timestep"), std::string::npos) << msg;
  std::vector<mjtNum> after = testutil::getState(m, d);
  EXPECT_EQ(0, std::memcmp(before.data(), after.data(), sizeof(mjtNum) * before.size()));
}

//---------------------------------- the parameter Jacobian ----------------------------------------

// P = dx'/dp of the implicit step against Richardson-extrapolated centred differences of the
// converged step in each parameter, at random states near trajectories
void checkParamJacobian(const char* path, std::vector<const char*> names, int nsample,
                        int nwarm) {
  std::string xml;
  bool inlineXml = std::strstr(path, "<mujoco") != nullptr;
  if (inlineXml) {
    xml = path;  // the MJCF itself
  } else {
    xml = testutil::readFile(path);
    ASSERT_FALSE(xml.empty()) << path;
  }
  xml = testutil::withNumerics(xml, testutil::kImplicitTight);
  Sim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
  mjdiffParams* p = nullptr;
  ASSERT_EQ(mjdiff_makeParams(m, s, names.data(), (int)names.size(), &p, err, sizeof(err)),
            MJDIFF_OK) << err;
  int np = mjdiff_paramCount(p), ndx = 2 * m->nv + m->na;
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, p, v0.data());
  ASSERT_EQ(mjdiff_setParamValues(m, s, p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, s, p, &w, err, sizeof(err)), MJDIFF_OK) << err;

  unsigned long long seed = 4242;
  int compared = 0, total = 0, withContact = 0;
  double worst = 0;
  for (int k = 0; k < nsample; k++) {
    for (int a = 0; a < 5 && !testutil::simulateRandom(m, d, s, &seed, nwarm + 11 * k); a++) {
    }
    testutil::perturbVelocities(m, d, &seed, 0.2, 0.05);
    mjdiff_forward(m, d, s, err, sizeof(err));
    testutil::ctrlInsideRange(m, d);
    std::vector<mjtNum> state = testutil::getState(m, d);
    withContact += d->ncon > 0;
    std::vector<mjtNum> P(ndx * np);
    ASSERT_EQ(mjdiff_stepJacobian(m, d, s, w, nullptr, nullptr, P.data(), err, sizeof(err)),
              MJDIFF_OK) << err;
    for (int i = 0; i < np; i++) {
      total++;
      // steps of at least 1e-5: Newton's error (1e-12 relative) stays 1e-7 of the difference
      double scale = std::fmax(std::fabs(v0[i]), 1), eps = 1e-5 * scale;
      // centred where p - 4 eps is a valid value, else forward (a damping at 0)
      std::vector<mjtNum> probe = v0;
      probe[i] -= 4 * eps;
      bool centred = mjdiff_setParamValues(m, s, p, probe.data(), nullptr, 0) == MJDIFF_OK;
      std::vector<mjtNum> D[3];
      for (int j = 0; j < 3; j++) {
        double e = eps * (1 << j);
        std::vector<mjtNum> next[2];
        for (int side = 0; side < 2; side++) {
          std::vector<mjtNum> v = v0;
          v[i] += side ? (centred ? -e : 0) : e;
          ASSERT_EQ(mjdiff_setParamValues(m, s, p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
          std::string msg;
          ASSERT_TRUE(testutil::stepFrom(m, d, s, state, nullptr, nullptr, &next[side], &msg))
              << msg;
        }
        D[j].resize(ndx);
        testutil::tangentDiff(m, next[1], next[0], centred ? 2 * e : e, D[j].data());
      }
      ASSERT_EQ(mjdiff_setParamValues(m, s, p, v0.data(), err, sizeof(err)), MJDIFF_OK);
      // errors relative to the column's largest entry in dx'/dlog p, floored at 1e-3: the
      // differences' rounding (1e-16 |x'| / eps, times the value) is about 1e-10 there
      double fscale = 1e-3, noise = 0, e = 0;
      std::vector<mjtNum> R1(ndx), R2(ndx);
      for (int r = 0; r < ndx; r++) {
        // Richardson: the e^2 term of centred differences, the e term of forward ones
        R1[r] = centred ? testutil::richardson(D[0][r], D[1][r]) : 2 * D[0][r] - D[1][r];
        R2[r] = centred ? testutil::richardson(D[1][r], D[2][r]) : 2 * D[1][r] - D[2][r];
        fscale = std::fmax(fscale, std::fabs(R1[r]) * scale);
      }
      for (int r = 0; r < ndx; r++) {
        noise = std::fmax(noise, std::fabs(R1[r] - R2[r]) * scale / fscale);
        e = std::fmax(e, std::fabs(P[np * r + i] - R1[r]) * scale / fscale);
      }
      if (noise > 1e-6) continue;  // a law's kink within the differences' reach
      // within 1e-6, or within twice the differences' own disagreement where their rounding
      // floor is near it (hopper on 3.12: an entry of 7.6e-6 at the 1e-3 floor, differences
      // 7.59659 / 7.59695 / 7.59703e-6 at eps, 2 eps, 4 eps, the analytic 7.59729e-6)
      double tol = std::fmax(1e-6, 2 * noise);
      if (e > tol && getenv("PARAM_DEBUG")) {
        for (int r = 0; r < ndx; r++) std::cout << "  " << P[np * r + i] << " " << R1[r] << "\n";
      }
      compared++;
      worst = std::fmax(worst, e);
      EXPECT_LE(e, tol) << "sample " << k << " " << mjdiff_paramName(p, i) << " (ncon "
                         << d->ncon << ")";
    }
    shim_setState(m, d, state.data());
  }
  std::cout << (inlineXml ? "inline" : path) << ": compared " << compared << "/" << total << " parameter columns ("
            << withContact << " states with contacts), worst relative error " << worst << "\n";
  EXPECT_GE(compared, (int)(0.8 * total));
  mjdiff_freeStepDeriv(w);
  mjdiff_freeParams(p);
}

TEST(ImplicitParams, ArmBox) {
  checkParamJacobian(shim_modelPath("arm_box.xml"),
                     // (the free joint's zero dampings: one-sided differences resolve their
                     // columns only to about 2e-6 of the largest entry, so the arm's joints)
                     {"body:box:mass", "geom:*:friction", "joint:joint*:damping",
                      "geom:box_corner_*:contact_stiffness", "mjdiff:friction_speed",
                      "actuator:*:gear", "option:gravity"},
                     6, 150);
}

TEST(ImplicitParams, Hopper) {
  checkParamJacobian(shim_modelPath("hopper.xml"),
                     {"body:*:mass", "geom:*:friction", "joint:*:damping",
                      "mjdiff:contact_stiffness", "mjdiff:contact_damping",
                      "mjdiff:limit_stiffness"},
                     6, 150);
}

// friction loss, limits and equalities (no contacts: they come from the smooth forces at X'
// all the same), the other forces' parameters at X
TEST(ImplicitParams, FrictionLossLimitsEqualities) {
  const char* xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom>
    <numeric name="mjdiff_eq_stiffness" data="500"/>
    <numeric name="mjdiff_eq_damping" data="5"/>
    <numeric name="mjdiff_limit_stiffness" data="500"/>
    <numeric name="mjdiff_limit_width" data="0.05"/>
    <numeric name="mjdiff_frictionloss_speed" data="0.01"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="a" pos="0 0 1">
      <joint name="a1" type="hinge" axis="0 1 0" limited="true" range="-0.3 0.3"
             frictionloss="0.2" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
      <body name="b" pos="0.3 0 0">
        <joint name="b1" type="hinge" axis="0 1 0" frictionloss="0.1" stiffness="2"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.4"/>
      </body>
    </body>
    <body name="c" pos="0.6 0 0.3">
      <freejoint/>
      <geom name="c" type="box" size="0.1 0.1 0.1" mass="1"/>
    </body>
  </worldbody>
  <equality><connect body1="c" body2="b" anchor="0 0 0.1"/></equality>
  <actuator><motor name="m" joint="a1" gear="3" ctrlrange="-1 1" ctrllimited="true"/></actuator>
</mujoco>)";
  checkParamJacobian(xml,
                     {"joint:a1:frictionloss", "joint:b1:frictionloss", "joint:a1:damping", "joint:b1:stiffness",
                      "mjdiff:eq_stiffness", "mjdiff:eq_damping", "mjdiff:limit_stiffness",
                      "mjdiff:frictionloss_speed", "body:a:mass", "body:c:mass", "actuator:m:gear"},
                     8, 100);
}

}  // namespace
