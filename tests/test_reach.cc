// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The long-range contact term (plugin/reach.h) and its continuation schedule (<mjdiff/reach.h>):
//   - the law S(t): values, C2 joins at t = 0 and t = 1, S' against central differences;
//   - the force it adds (sign, size) and the collision margin it needs (contacts out to R);
//   - strength 0 leaves every step bit for bit (widths changed, the term switched on and off);
//   - A, B of the explicit, implicit and RK4 steps with the term on, against Richardson-
//     extrapolated central differences of mjdiff_step at random states where the bodies are
//     2-10 cm apart (arm_box's fingertip and box, a sphere above a plane, a convex mesh above a box), the JVP
//     and VJP against the same differences and against A, B; and a guard that the term is what
//     makes the box rows of B nonzero (exactly zero with it off);
//   - the schedule: strengths, the exact cutoff, apply, and the STRENGTH[:WIDTH[:DECAY]] parser.
// Tolerances as tests/test_step_d.cc (1e-6 per block; a sample whose two extrapolations disagree
// by more is skipped, at least 80% compared).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mjdiff/adjoint.h>
#include <mjdiff/reach.h>

#include "reach.h"  // plugin/reach.h: the law
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::uniform;

//---------------------------------- the law -------------------------------------------------------

TEST(ReachLaw, ShapeValuesAndJoins) {
  mjtNum ds;
  EXPECT_EQ(reach_shape(-1, &ds), 1);
  EXPECT_EQ(ds, 0);
  EXPECT_EQ(reach_shape(0, &ds), 1);
  EXPECT_EQ(reach_shape(1, &ds), 0);
  EXPECT_EQ(reach_shape(2, &ds), 0);
  EXPECT_NEAR(reach_shape(0.5, &ds), 0.5, 1e-15);
  EXPECT_NEAR(ds, -30 * 0.0625, 1e-14);
  // C2 joins: S, S' and S'' (differences of S') continuous at 0 and 1
  for (double t0 : {0.0, 1.0}) {
    for (double h : {1e-3, 1e-4}) {
      mjtNum d1, d2, d3, d4;
      double s1 = reach_shape(t0 - h, &d1), s2 = reach_shape(t0 + h, &d2);
      reach_shape(t0 - 2 * h, &d3);
      reach_shape(t0 + 2 * h, &d4);
      EXPECT_LT(std::fabs(s1 - s2), 10 * h * h * h) << t0;         // S' = S'' = 0 there
      EXPECT_LT(std::fabs(d1) + std::fabs(d2), 40 * h * h) << t0;  // S' = O(h^2)
      double dd1 = (d1 - d3) / h, dd2 = (d4 - d2) / h;              // S'' on both sides -> 0
      EXPECT_LT(std::fabs(dd1) + std::fabs(dd2), 400 * h) << t0;
    }
  }
  // monotone and S' against central differences inside (0, 1)
  unsigned long long seed = 7;
  double worst = 0;
  for (int k = 0; k < 200; k++) {
    double t = 0.01 + 0.98 * uniform(&seed), h = 1e-6;
    mjtNum d;
    reach_shape(t, &d);
    double fd = (reach_shape(t + h, nullptr) - reach_shape(t - h, nullptr)) / (2 * h);
    worst = std::fmax(worst, std::fabs(d - fd) / std::fmax(1e-3, std::fabs(d)));
    EXPECT_LE(d, 0);
    EXPECT_NE(d, fd);  // guard: two computations
  }
  EXPECT_LT(worst, 1e-6);
}

//---------------------------------- models --------------------------------------------------------

// a sphere (r 0.05) on slides x, z and a hinge y above a plane; motors on the slides
std::string sphereXml(const char* numerics, const char* integrator = "Euler") {
  return std::string("<mujoco><option timestep=\"0.002\" integrator=\"") + integrator +
         "\"/><custom><numeric name=\"mjdiff_contact_stiffness\" data=\"3000\"/>" + numerics +
         "</custom><worldbody><geom name=\"plane\" type=\"plane\" size=\"2 2 0.1\"/>"
         "<body name=\"ball\" pos=\"0 0 0.1\"><joint name=\"x\" type=\"slide\" axis=\"1 0 0\"/>"
         "<joint name=\"z\" type=\"slide\" axis=\"0 0 1\"/>"
         "<joint name=\"r\" type=\"hinge\" axis=\"0 1 0\" damping=\"0.01\"/>"
         "<geom name=\"ball\" type=\"sphere\" size=\"0.05\" mass=\"1\"/></body></worldbody>"
         "<actuator><motor joint=\"x\" gear=\"5\"/><motor joint=\"z\" gear=\"10\"/></actuator>"
         "</mujoco>";
}

// an irregular convex mesh (14 vertices, ~0.3 m) on slides x, y, z and a hinge above a static
// box whose top is z = 0
std::string meshXml(const char* numerics) {
  return std::string("<mujoco><option timestep=\"0.002\"/><custom>") + numerics +
         "</custom><asset><mesh name=\"poly\" vertex=\"0.31 0.02 0.05  -0.28 0.06 -0.03  0.04 "
         "0.33 0.01  -0.02 -0.29 0.06 0.03 0.05 0.27  0.01 -0.04 -0.32  0.2 0.19 0.17  -0.18 0.2 "
         "-0.16 0.17 -0.21 -0.18  -0.19 -0.17 0.2  0.22 -0.15 0.19  -0.2 0.16 0.18 0.16 0.22 -0.2  "
         "-0.17 -0.2 -0.19\"/></asset><worldbody>"
         "<geom name=\"table\" type=\"box\" pos=\"0 0 -0.2\" size=\"1 1 0.2\"/>"
         "<body name=\"poly\" pos=\"0 0 0.5\"><joint name=\"x\" type=\"slide\" axis=\"1 0 0\"/>"
         "<joint name=\"y\" type=\"slide\" axis=\"0 1 0\"/>"
         "<joint name=\"z\" type=\"slide\" axis=\"0 0 1\"/>"
         "<joint name=\"r\" type=\"hinge\" axis=\"0.3 1 0.2\"/>"
         "<geom name=\"poly\" type=\"mesh\" mesh=\"poly\" mass=\"2\"/></body></worldbody>"
         "<actuator><motor joint=\"x\" gear=\"5\"/><motor joint=\"z\" gear=\"10\"/>"
         "<motor joint=\"r\" gear=\"2\"/></actuator></mujoco>";
}

const char* kReachOn =
    "<numeric name=\"mjdiff_reach_strength\" data=\"2\"/>"
    "<numeric name=\"mjdiff_reach_width\" data=\"0.1\"/>";

// the signed distance of the first contact between geoms ga and gb in d (after a forward pass),
// or NAN
double pairDist(const mjData* d, int ga, int gb) {
  for (int i = 0; i < d->ncon; i++) {
    int g1 = compat_contactGeom1(d->contact + i), g2 = compat_contactGeom2(d->contact + i);
    if ((g1 == ga && g2 == gb) || (g1 == gb && g2 == ga)) return d->contact[i].dist;
  }
  return NAN;
}

//---------------------------------- force and margin ----------------------------------------------

TEST(ReachForce, RepulsiveNormalForceAndMargin) {
  testutil::Sim on(sphereXml(kReachOn).c_str());
  testutil::Sim off(sphereXml("").c_str());
  ASSERT_TRUE(on.ok && off.ok) << on.sim.err << off.sim.err;
  const mjModel* m = on.sim.m;
  int zq = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "z")];
  char err[500];
  for (double dist : {0.09, 0.05, 0.02, 0.0005}) {
    for (testutil::Sim* sim : {&on, &off}) {
      mj_resetData(sim->sim.m, sim->sim.d);
      sim->sim.d->qpos[zq] = dist + 0.05 - 0.1;  // body at z = 0.1 + qpos
      ASSERT_EQ(mjdiff_forward(sim->sim.m, sim->sim.d, sim->sim.s, err, sizeof(err)), MJDIFF_OK)
          << err;
    }
    // contacts reported out to the reach width while the term is on, to the contact width off
    EXPECT_EQ(on.sim.d->ncon, 1) << dist;
    EXPECT_EQ(off.sim.d->ncon, dist < 0.001 ? 1 : 0) << dist;
    // the passive z force is the off model's plus a S(dist / R), pushing the ball up
    mjtNum a = 2, R = 0.1, expect = a * reach_shape(on.sim.d->contact[0].dist / R, nullptr);
    int zv = m->jnt_dofadr[mj_name2id(m, mjOBJ_JOINT, "z")];
    EXPECT_GT(expect, 0);
    EXPECT_NEAR(on.sim.d->qfrc_passive[zv] - off.sim.d->qfrc_passive[zv], expect, 1e-12) << dist;
  }
  // reach_static 0: no term between the ball and the (static) plane
  char e2[500];
  ASSERT_EQ(mjdiff_setParam(on.sim.s, "reach_static", 0, e2, sizeof(e2)), MJDIFF_OK);
  mj_resetData(m, on.sim.d);
  on.sim.d->qpos[zq] = 0.03;
  ASSERT_EQ(mjdiff_forward(m, on.sim.d, on.sim.s, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(on.sim.d->ncon, 1);
  int zv = m->jnt_dofadr[mj_name2id(m, mjOBJ_JOINT, "z")];
  EXPECT_EQ(on.sim.d->qfrc_passive[zv], 0);
  ASSERT_EQ(mjdiff_setParam(on.sim.s, "reach_static", 1, e2, sizeof(e2)), MJDIFF_OK);

  // mjdiff_contactForce reports the penalty force only (zero beyond the contact width)
  mj_resetData(m, on.sim.d);
  on.sim.d->qpos[zq] = 0.03;
  ASSERT_EQ(mjdiff_forward(m, on.sim.d, on.sim.s, err, sizeof(err)), MJDIFF_OK);
  mjdiffContactForce cf;
  ASSERT_EQ(mjdiff_contactForce(m, on.sim.d, on.sim.s, 0, &cf), MJDIFF_OK);
  EXPECT_EQ(cf.force[0], 0);
}

TEST(ReachOptions, ValuesNamesAndErrors) {
  testutil::Sim sim(sphereXml("").c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjdiffOptions* o = mjdiff_getOptions(sim.sim.s);
  EXPECT_EQ(o->reach_strength, 0);
  EXPECT_EQ(o->reach_width, 0.1);
  char err[500] = "";
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "reach_strength", -1, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("reach_strength"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "mjdiff:reach_width", 0, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("reach_width"), std::string::npos) << err;
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "reach_width:ball", 0.2, err, sizeof(err)),
            MJDIFF_ERR_NAME);
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "mjdiff:reach_strength", 0.5, err, sizeof(err)), MJDIFF_OK);
  mjtNum v = 0;
  ASSERT_EQ(mjdiff_getParam(sim.sim.s, "reach_strength", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 0.5);
  EXPECT_EQ(mjdiff_setParam(sim.sim.s, "reach_static", 0.5, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("reach_static"), std::string::npos) << err;
  EXPECT_EQ(o->reach_static, 1);
  testutil::Sim bad(sphereXml("<numeric name=\"mjdiff_reach_width\" data=\"-0.1\"/>").c_str());
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(std::string(bad.sim.err).find("reach_width"), std::string::npos) << bad.sim.err;
}

//---------------------------------- off: bit for bit ----------------------------------------------

// n steps under random controls; every state after each step (qpos, qvel) and ncon
std::vector<mjtNum> trajectory(const mjModel* m, mjData* d, const mjdiffModel* s, int n,
                               std::vector<int>* ncon) {
  unsigned long long seed = 99;
  mj_resetData(m, d);
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  std::vector<mjtNum> out;
  char err[500];
  for (int i = 0; i < n; i++) {
    if (i % 20 == 0) shim_randomCtrl(m, d, &seed);
    if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) break;
    out.insert(out.end(), d->qpos, d->qpos + m->nq);
    out.insert(out.end(), d->qvel, d->qvel + m->nv);
    ncon->push_back(d->ncon);
  }
  return out;
}

TEST(ReachOff, StrengthZeroIsBitForBit) {
  for (const char* integrator : {"0", "1"}) {
    testutil::Sim ref(nullptr, shim_modelPath("arm_box.xml"));
    testutil::Sim alt(nullptr, shim_modelPath("arm_box.xml"));
    ASSERT_TRUE(ref.ok && alt.ok) << ref.sim.err << alt.sim.err;
    char err[500];
    for (testutil::Sim* s : {&ref, &alt}) {
      ASSERT_EQ(mjdiff_setParam(s->sim.s, "integrator", std::atof(integrator), err, sizeof(err)),
                MJDIFF_OK);
    }
    // alt: the term switched on, a width set, then the strength back to 0
    ASSERT_EQ(mjdiff_setParam(alt.sim.s, "reach_strength", 1, err, sizeof(err)), MJDIFF_OK);
    ASSERT_EQ(mjdiff_setParam(alt.sim.s, "reach_width", 0.3, err, sizeof(err)), MJDIFF_OK);
    std::vector<int> nOn, nRef, nAlt;
    std::vector<mjtNum> on = trajectory(alt.sim.m, alt.sim.d, alt.sim.s, 300, &nOn);
    ASSERT_EQ(mjdiff_setParam(alt.sim.s, "reach_strength", 0, err, sizeof(err)), MJDIFF_OK);
    std::vector<mjtNum> a = trajectory(ref.sim.m, ref.sim.d, ref.sim.s, 300, &nRef);
    std::vector<mjtNum> b = trajectory(alt.sim.m, alt.sim.d, alt.sim.s, 300, &nAlt);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(nRef.size(), 300u);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(mjtNum))) << integrator;
    EXPECT_EQ(nRef, nAlt);
    // guard: with the term on, the run differs and reports more contacts
    ASSERT_EQ(on.size(), a.size());
    EXPECT_NE(0, std::memcmp(a.data(), on.data(), a.size() * sizeof(mjtNum)));
    EXPECT_GT(nOn[0], nRef[0]);
  }
}

//---------------------------------- derivatives with the term on ----------------------------------

using DrawState = std::function<bool(const mjModel*, mjData*, const mjdiffModel*,
                                     unsigned long long*)>;

struct Result {
  int compared = 0;
  double worst = 0;
};

// A, B, JVP, VJP against Richardson-extrapolated central differences at nsample states drawn by
// draw (false: draw again); blocks as test_step_d (q, v, act rows and columns, controls)
Result checkSteps(const char* label, testutil::StepSim& sim, const DrawState& draw, int nsample,
                  double tol) {
  Result res;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na, ncol = ndx + nu;
  unsigned long long seed = 4242;
  char err[1000];
  for (int k = 0; k < nsample; k++) {
    int tries = 0;
    while (!draw(m, d, sim.sim.s, &seed) && ++tries < 200) {
    }
    EXPECT_LT(tries, 200) << label << ": no state drawn";
    std::vector<mjtNum> state = testutil::getState(m, d);
    std::vector<mjtNum> A(ndx * ndx), B(ndx * nu);
    EXPECT_EQ(mjdiff_stepJacobian(m, d, sim.sim.s, sim.w, A.data(), B.data(), nullptr, err,
                                  sizeof(err)),
              MJDIFF_OK)
        << label << ": " << err;
    std::vector<mjtNum> J = testutil::joinAB(ndx, nu, A, B);
    std::vector<mjtNum> F1, F2;
    std::string failure;
    testutil::fdStepJacobians(m, d, sim.sim.s, state, 1e-5, &F1, &F2, &failure);
    EXPECT_TRUE(failure.empty()) << label << ": " << failure;
    auto grid = [&](const std::vector<mjtNum>& X, const std::vector<mjtNum>& Y) {
      return testutil::gridBlockError(X, Y, ncol, {0, nv, 2 * nv, ndx}, {0, nv, 2 * nv, ndx, ncol});
    };
    if (grid(F1, F2) > tol) continue;  // a law's piece boundary within the differences' reach
    res.compared++;
    double e = grid(J, F1);
    res.worst = std::fmax(res.worst, e);
    EXPECT_LE(e, tol) << label << " sample " << k << " (ncon " << d->ncon << ")";
    EXPECT_NE(0, std::memcmp(J.data(), F1.data(), J.size() * sizeof(mjtNum)));  // guard

    // JVP and VJP against the differences (and against A, B)
    std::vector<mjtNum> l(ndx), v(ndx), vu(nu), jv(ndx), lx(ndx), lu(nu);
    for (auto& x : l) x = uniform(&seed) - 0.5;
    for (auto& x : v) x = uniform(&seed) - 0.5;
    for (auto& x : vu) x = uniform(&seed) - 0.5;
    EXPECT_EQ(mjdiff_stepJVP(m, d, sim.sim.s, sim.w, v.data(), vu.data(), nullptr, jv.data(), err,
                             sizeof(err)),
              MJDIFF_OK) << err;
    EXPECT_EQ(mjdiff_stepVJP(m, d, sim.sim.s, sim.w, l.data(), lx.data(), lu.data(), nullptr, err,
                             sizeof(err)),
              MJDIFF_OK) << err;
    for (const std::vector<mjtNum>* Mx : {&F1, &J}) {
      double worstJ = 0, worstV = 0, scaleJ = 1e-4, scaleV = 1e-4;
      for (int r = 0; r < ndx; r++) {
        double ref = 0;
        for (int c = 0; c < ncol; c++) ref += (*Mx)[ncol * r + c] * (c < ndx ? v[c] : vu[c - ndx]);
        worstJ = std::fmax(worstJ, std::fabs(jv[r] - ref));
        scaleJ = std::fmax(scaleJ, std::fabs(ref));
      }
      for (int c = 0; c < ncol; c++) {
        double ref = 0;
        for (int r = 0; r < ndx; r++) ref += (*Mx)[ncol * r + c] * l[r];
        worstV = std::fmax(worstV, std::fabs((c < ndx ? lx[c] : lu[c - ndx]) - ref));
        scaleV = std::fmax(scaleV, std::fabs(ref));
      }
      double t = Mx == &J ? 1e-10 : tol;
      EXPECT_LE(worstJ / scaleJ, t) << label << " JVP sample " << k;
      EXPECT_LE(worstV / scaleV, t) << label << " VJP sample " << k;
    }
  }
  std::printf("%s: compared %d/%d, worst relative error %.2e\n", label, res.compared, nsample,
              res.worst);
  EXPECT_GE(res.compared, (int)(0.8 * nsample)) << label;
  return res;
}

// arm_box: the arm's joints perturbed about the "ready" key until the fingertip is 2-10 cm from
// the box (which rests on the table, a little deep, slightly moving)
bool drawArmBox(const mjModel* m, mjData* d, const mjdiffModel* s, unsigned long long* seed) {
  mj_resetDataKeyframe(m, d, 0);
  for (int j = 0; j < 7; j++) d->qpos[j] += 0.3 * (uniform(seed) - 0.5);
  for (int j = 0; j < 7; j++) d->qvel[j] = 0.4 * (uniform(seed) - 0.5);
  d->qpos[7] += 0.02 * (uniform(seed) - 0.5);
  d->qpos[8] += 0.02 * (uniform(seed) - 0.5);
  d->qpos[9] -= 1e-4 + 6e-4 * uniform(seed);
  for (int j = 7; j < 13; j++) d->qvel[j] = 0.02 * (uniform(seed) - 0.5);
  shim_randomCtrl(m, d, seed);
  testutil::ctrlInsideRange(m, d);
  char err[500];
  if (mjdiff_forward(m, d, s, err, sizeof(err)) != MJDIFF_OK) return false;
  double dist = pairDist(d, mj_name2id(m, mjOBJ_GEOM, "fingertip"),
                         mj_name2id(m, mjOBJ_GEOM, "box"));
  return dist >= 0.02 && dist <= 0.10;
}

// a free-moving body lifted 2-9 cm (dist) above the ground geom, random velocities
DrawState liftedBody(const char* body, const char* ground, double lo, double hi) {
  return [=](const mjModel* m, mjData* d, const mjdiffModel* s, unsigned long long* seed) {
    mj_resetData(m, d);
    for (int j = 0; j < m->njnt; j++) {
      int q = m->jnt_qposadr[j];
      d->qpos[q] =
          m->jnt_type[j] == mjJNT_HINGE ? 6.28 * uniform(seed) : 0.1 * (uniform(seed) - 0.5);
    }
    for (int j = 0; j < m->nv; j++) d->qvel[j] = 0.4 * (uniform(seed) - 0.5);
    shim_randomCtrl(m, d, seed);
    char err[500];
    int b = mj_name2id(m, mjOBJ_GEOM, body), g = mj_name2id(m, mjOBJ_GEOM, ground);
    int zq = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "z")];
    // find the height of contact, then lift to the drawn distance
    double target = lo + (hi - lo) * uniform(seed);
    for (int it = 0; it < 4; it++) {
      if (mjdiff_forward(m, d, s, err, sizeof(err)) != MJDIFF_OK) return false;
      double dist = pairDist(d, b, g);
      if (std::isnan(dist)) {
        d->qpos[zq] -= 0.05;
        continue;
      }
      d->qpos[zq] += target - dist;
    }
    if (mjdiff_forward(m, d, s, err, sizeof(err)) != MJDIFF_OK) return false;
    double dist = pairDist(d, b, g);
    return dist >= lo - 1e-3 && dist <= hi + 1e-3;
  };
}

// arm_box with the term on: a = 1 N, R = 0.15 m; the explicit step, then the implicit one
TEST(ReachDeriv, ArmBoxPusherAway) {
  for (int implicit = 0; implicit < 2; implicit++) {
    testutil::StepSim sim(nullptr, shim_modelPath("arm_box.xml"));
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    char err[500];
    ASSERT_EQ(mjdiff_setParam(sim.sim.s, "reach_strength", 1, err, sizeof(err)), MJDIFF_OK);
    ASSERT_EQ(mjdiff_setParam(sim.sim.s, "reach_width", 0.15, err, sizeof(err)), MJDIFF_OK);
    // explicit: on every pair (the cube's corners on the table too); implicit: the model's own
    // reach_static 0 (fingertip-cube only)
    ASSERT_EQ(mjdiff_setParam(sim.sim.s, "reach_static", implicit ? 0 : 1, err, sizeof(err)),
              MJDIFF_OK);
    if (implicit) {
      ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 1, err, sizeof(err)), MJDIFF_OK);
      ASSERT_EQ(mjdiff_setParam(sim.sim.s, "implicit_tol", 1e-12, err, sizeof(err)), MJDIFF_OK);
    }
    checkSteps(implicit ? "arm_box implicit" : "arm_box explicit", sim, drawArmBox, 10, 1e-6);

    // the term is what couples the arm to the box: the box's velocity rows of A in the arm's
    // positions vanish without it (and so the controls' effect on the box two steps on, A B)
    int nv = m->nv, ndx = 2 * nv;
    unsigned long long seed = 5;
    for (int k = 0; k < 5; k++) {
      while (!drawArmBox(m, sim.sim.d, sim.sim.s, &seed)) {
      }
      std::vector<mjtNum> Aon(ndx * ndx), Aoff(ndx * ndx);
      ASSERT_EQ(mjdiff_stepJacobian(m, sim.sim.d, sim.sim.s, sim.w, Aon.data(), nullptr, nullptr,
                                    err, sizeof(err)), MJDIFF_OK) << err;
      ASSERT_EQ(mjdiff_setParam(sim.sim.s, "reach_strength", 0, err, sizeof(err)), MJDIFF_OK);
      ASSERT_EQ(mjdiff_stepJacobian(m, sim.sim.d, sim.sim.s, sim.w, Aoff.data(), nullptr, nullptr,
                                    err, sizeof(err)), MJDIFF_OK) << err;
      ASSERT_EQ(mjdiff_setParam(sim.sim.s, "reach_strength", 1, err, sizeof(err)), MJDIFF_OK);
      double on = 0, off = 0;
      for (int r = nv + 7; r < nv + 13; r++) {  // the box's velocity rows, the arm's columns
        for (int c = 0; c < 7; c++) {
          on = std::fmax(on, std::fabs(Aon[ndx * r + c]));
          off = std::fmax(off, std::fabs(Aoff[ndx * r + c]));
        }
      }
      EXPECT_EQ(off, 0) << k;
      EXPECT_GT(on, 1e-6) << k;
    }
  }
}

TEST(ReachDeriv, SphereAbovePlane) {
  for (const char* integrator : {"Euler", "RK4"}) {
    testutil::StepSim sim(sphereXml(kReachOn, integrator).c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    std::string label = std::string("sphere above plane, ") + integrator;
    checkSteps(label.c_str(), sim, liftedBody("ball", "plane", 0.02, 0.09), 15, 1e-6);
  }
  std::string implicitXml = sphereXml((std::string(kReachOn) + testutil::kImplicitTight).c_str());
  testutil::StepSim sim(implicitXml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  checkSteps("sphere above plane, implicit", sim, liftedBody("ball", "plane", 0.02, 0.09), 15,
             1e-6);
}

TEST(ReachDeriv, MeshAboveBox) {
  testutil::StepSim sim(meshXml(kReachOn).c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  checkSteps("mesh above box", sim, liftedBody("poly", "table", 0.02, 0.09), 15, 1e-6);
}

//---------------------------------- the schedule --------------------------------------------------

TEST(ReachSchedule, StrengthsCutoffApplyParse) {
  mjdiffReachSchedule sc;
  mjdiff_defaultReachSchedule(&sc);
  EXPECT_EQ(sc.strength, 0);
  EXPECT_EQ(mjdiff_reachStrength(&sc, 0), 0);
  EXPECT_EQ(mjdiff_reachStrength(nullptr, 0), 0);
  sc.strength = 2;
  sc.decay = 0.5;
  sc.cutoff = 0.1;
  EXPECT_EQ(mjdiff_reachStrength(&sc, 0), 2);
  EXPECT_EQ(mjdiff_reachStrength(&sc, 1), 1);
  EXPECT_EQ(mjdiff_reachStrength(&sc, 3), 0.25);
  EXPECT_EQ(mjdiff_reachStrength(&sc, 4), 0);  // 0.0625 < 0.1: off exactly
  EXPECT_EQ(mjdiff_reachStrength(&sc, 100), 0);

  testutil::Sim sim(sphereXml("").c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  char err[500] = "";
  sc.width = 0.2;
  ASSERT_EQ(mjdiff_reachApply(sim.sim.s, &sc, 1, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_getOptions(sim.sim.s)->reach_strength, 1);
  EXPECT_EQ(mjdiff_getOptions(sim.sim.s)->reach_width, 0.2);
  ASSERT_EQ(mjdiff_reachApply(sim.sim.s, &sc, 9, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_getOptions(sim.sim.s)->reach_strength, 0);
  sc.decay = 0;
  EXPECT_EQ(mjdiff_reachApply(sim.sim.s, &sc, 1, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("decay"), std::string::npos) << err;

  mjdiffReachSchedule p;
  mjdiff_defaultReachSchedule(&p);
  ASSERT_EQ(mjdiff_parseReach("0.5", &p, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(p.strength, 0.5);
  EXPECT_EQ(p.width, 0.1);
  ASSERT_EQ(mjdiff_parseReach("1.5:0.2:0.9", &p, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(p.strength, 1.5);
  EXPECT_EQ(p.width, 0.2);
  EXPECT_EQ(p.decay, 0.9);
  struct Bad {
    const char* text;
    const char* names;
  } bad[] = {{"", "strength"},        {"x", "strength"}, {"1:", "width"},
             {"1:0", "width"},        {"-1", "strength"}, {"1:0.1:2", "decay"},
             {"1:0.1:0.5:3", "more"}, {"1:0.1x", "width"}};
  for (const Bad& b : bad) {
    mjdiffReachSchedule q = p;
    EXPECT_EQ(mjdiff_parseReach(b.text, &q, err, sizeof(err)), MJDIFF_ERR_VALUE) << b.text;
    EXPECT_NE(std::string(err).find(b.names), std::string::npos) << b.text << ": " << err;
    EXPECT_EQ(0, std::memcmp(&q, &p, sizeof(q))) << b.text;  // left as it was
  }
}

}  // namespace
