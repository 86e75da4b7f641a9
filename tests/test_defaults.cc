// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Smooth-model values derived from the MJCF (plugin/derive.c) and the divergence test of the
// smooth step (plugin/stability.c): the formulas against independent computations here, the
// stability bound against a simulated spring-damper, a model that is stable with the derived
// values and diverges, named, with a hand-set value, rest depths against MuJoCo's native step.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

extern "C" {
#include "internal.h"  // mjdiff_eqParams (C, no extern "C" of its own)
}
#include "testutil.h"

namespace {

using testutil::Sim;

// the derived omega^2 and 2 zeta omega of a standard solref / solimp at timestep h (the
// documented formula, README "Defaults")
// hs: the substep the explicit cap holds at (0: h); MuJoCo's refsafe rule (tc >= 2 h) is at the
// model's timestep h
void derivedLaw(double tc, double dr, double dmin, double dmax, double h, double* w2,
                double* zw2, double hs = 0) {
  tc = std::max(tc, 2 * h);
  if (hs > 0) h = hs;
  double k = 1 / (dmax * dmax * tc * tc * dr * dr), b = 2 / (dmax * tc);
  double dbar = 0.5 * (dmin + dmax), zeta = b / (2 * std::sqrt(k));
  double omega = std::min(std::sqrt(k * dbar / (1 - dbar)),
                          0.4 * 2 * (std::sqrt(zeta * zeta + 1) - zeta) / h);
  *w2 = omega * omega;
  *zw2 = 2 * zeta * omega;
}

double ramp(double x, double w) {
  if (x <= 0) return 0;
  if (x <= w) return x * x * x / (6 * w * w);
  if (x <= 2 * w) return x - w + (2 * w - x) * (2 * w - x) * (2 * w - x) / (6 * w * w);
  return x - w;
}

// semi-implicit Euler on x'' = -w2 x - g2 x' from x = 1, v = 1 for n steps: the largest |x| + |v|
// over the last tenth (infinite once not finite)
double springDamper(double w2, double g2, double h, int n) {
  double x = 1, v = 1, worst = 0;
  for (int i = 0; i < n; i++) {
    v += h * (-w2 * x - g2 * v);
    x += h * v;
    if (!std::isfinite(x) || !std::isfinite(v)) return INFINITY;
    if (i >= n - n / 10) worst = std::max(worst, std::fabs(x) + std::fabs(v));
  }
  return worst;
}

TEST(Defaults, StableTimestepIsTheBound) {
  struct Case {
    double k, c, A;
  } cases[] = {{1e4, 0, 1}, {1e4, 50, 1}, {2e3, 200, 0.5}, {1e5, 1e3, 3}, {0, 80, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.k) + ", " + std::to_string(c.c));
    double hmax = mjdiff_stableTimestep(c.k, c.c, c.A);
    ASSERT_TRUE(std::isfinite(hmax) && hmax > 0);
    double w2 = c.k * c.A, g2 = c.c * c.A;
    // bounded (the undamped oscillator's invariant ellipse grows near the bound, but stays
    // finite) below the bound, growing without bound above it
    EXPECT_LT(springDamper(w2, g2, 0.97 * hmax, 20000), 1e3);
    EXPECT_GT(springDamper(w2, g2, 1.03 * hmax, 20000), 1e6);
  }
  EXPECT_TRUE(std::isinf(mjdiff_stableTimestep(0, 0, 1)));
}

// a 1 kg ball (radius 0.1) on a plane, MuJoCo's defaults or a given solref
std::string ballXml(double timestep, const std::string& geom_attrs = "",
                    const std::string& extra = "") {
  char buf[2000];
  snprintf(buf, sizeof(buf), R"(
<mujoco>
  <option timestep="%g"/>
  <custom><numeric name="mjdiff_enable" data="1"/></custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="ball" pos="0 0 0.1">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" mass="1" %s/>
    </body>
  </worldbody>
  %s
</mujoco>)",
           timestep, geom_attrs.c_str(), extra.c_str());
  return buf;
}

// the centred ball's normal inverse inertia: its contact normals pass through its centre, no lever
double ballInvweight(const mjModel* m) {
  int b = mj_name2id(m, mjOBJ_BODY, "ball");
  return m->body_invweight0[2 * b];
}

TEST(Defaults, ContactLawFromSolref) {
  // n: the derived substeps, the smallest with omega_match (h / n) within 1.5x of the explicit
  // cap 0.8 (sqrt(zeta^2 + 1) - zeta): omega_match h / cap = 1.11, 2.99, 2.23, 1.96 (zeta 2)
  struct Case {
    double h, tc, dr;
    const char* attrs;
    const char* pair;
    int n;
  } cases[] = {
      {0.002, 0.02, 1, "", "", 1},
      {0.001, 0.005, 0.5, "solref='0.005 0.5'", "", 3},
      {0.004, 0.02, 1, "", "", 3},
      {0.002, 0.01, 2, "", "<contact><pair geom1='floor' geom2='ball' solref='0.01 2'/></contact>", 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string("h ") + std::to_string(c.h) + " " + c.attrs + c.pair);
    Sim sim(ballXml(c.h, c.attrs, c.pair).c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    EXPECT_EQ(mjdiff_substepCount(sim.sim.s), c.n);
    double w2, zw2, A = ballInvweight(m);
    derivedLaw(c.tc, c.dr, 0.9, 0.95, c.h, &w2, &zw2, c.h / mjdiff_substepCount(sim.sim.s));
    mjtNum k, cd, w;
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, 1, &k, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_damping", 0, 1, &cd, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_width", 0, 1, &w, nullptr, 0), MJDIFF_OK);
    EXPECT_NEAR(k, w2 / A, 1e-9 * k);
    EXPECT_NEAR(cd, zw2 / A, 1e-9 * cd);
    EXPECT_DOUBLE_EQ(w, 0.001);

    // and the force: the ball 0.5 mm in, at rest
    mjData* d = sim.sim.d;
    d->qpos[2] = 0.1 - 5e-4;
    char err[1000];
    ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_GE(d->ncon, 1);
    mjdiffContactForce f;
    ASSERT_EQ(mjdiff_contactForce(m, d, sim.sim.s, 0, &f), MJDIFF_OK);
    EXPECT_NEAR(f.force[0], w2 / A * ramp(0.001 + 5e-4, 0.001), 1e-9 * f.force[0]);
  }
}

// the normal law's inverse inertia per shape (plugin/derive.c, README "Defaults"): A_t + rho^2 A_r
// with rho the normal's lever bound about the centre of mass c (sphere: its centre's offset o - c;
// capsule: plus the half-length; others: plus geom_rbound), A_r = (tr R - u'Ru) / 2 + (dperp /
// rho)^2 u'Ru with u a sphere's offset direction (dperp 0) or a capsule's axis (dperp = |u x (o -
// c)|), else MuJoCo's mean tr R / 3; friction's load scaling on the farthest point's lever (plus
// geom_rbound) with the mean, every shape. R, the rotational inverse inertia of a free body, is
// computed here from the body's principal inertia and frame (R = X diag(1/I) X'), not from the
// mass matrix as the library does. The first bodies are axis-aligned with diagonal inertia
// (1/I = 1000, 500, 333.3: mean 611.1, without x 416.7) and a geom 3 cm off along x (the second
// capsule 3 cm off its own axis x); the last two are turned, with a full inertia and geoms in
// general position
// a plank hinged through its centre of mass turns about one axis only: MuJoCo's rotational
// invweight0, the mean of R = J_r M^-1 J_r' over three directions, is a third of the inverse
// inertia its ends' normals act on. Held to that mean the explicit law gained energy at every
// bounce (1 -> 1.91 rad/s, then ran away to 1e45 rad with no named divergence); the box's law now
// takes R's largest eigenvalue (plugin/derive.c, leverInvweight), and the bounces lose energy
// a 2 m plank hinged through its centre of mass, 0.3 m above the floor; numerics: <custom> text
std::string hingedPlankXml(const std::string& numerics) {
  return R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_enable" data="1"/>)" + numerics + R"(</custom>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="plank" pos="0 0 0.3">
      <joint name="pivot" type="hinge" axis="0 1 0"/>
      <geom name="plank" type="box" size="1 0.1 0.02" mass="5"/>
    </body>
  </worldbody>
</mujoco>)";
}

TEST(Defaults, HingedPlankBouncesWithoutGain) {
  Sim sim(hingedPlankXml("").c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int g = mj_name2id(m, mjOBJ_GEOM, "plank"), b = m->geom_bodyid[g];
  // R has the one nonzero eigenvalue 1 / I_yy; MuJoCo's mean is a third of it
  const double Iyy = m->body_inertia[3 * b + 1], rho = m->geom_rbound[g];
  EXPECT_NEAR(m->body_invweight0[2 * b + 1], 1 / (3 * Iyy), 1e-9 / Iyy);
  EXPECT_NEAR(sim.sim.s->geom_invweightn[g], rho * rho / Iyy, 1e-9 * rho * rho / Iyy);
  d->qpos[0] = 0.2;
  d->qvel[0] = 1;
  char err[1000];
  double fastest = 0;
  int bounces = 0;
  for (int i = 0; i < 1000; i++) {
    double v = d->qvel[0];
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << i << ": " << err;
    if (v * d->qvel[0] < 0) bounces++;
    fastest = std::max(fastest, std::fabs((double)d->qvel[0]));
  }
  std::cout << "hinged plank: " << bounces << " bounces in 2 s, fastest " << fastest
            << " rad/s (from 1)\n";
  EXPECT_GE(bounces, 2);
  EXPECT_LE(fastest, 1.0 + 1e-6);
}

TEST(Defaults, NormalLeverPerShape) {
  Sim sim(R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_enable" data="1"/></custom>
  <default><joint type="free"/><geom contype="0"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" contype="1"/>
    <body pos="0 0 0.5"><joint/><inertial pos="0 0 0" mass="0.3" diaginertia="1e-3 2e-3 3e-3"/>
      <geom type="sphere" pos="0.03 0 0" size="0.05"/></body>
    <body pos="1 0 0.5"><joint/><inertial pos="0 0 0" mass="0.3" diaginertia="1e-3 2e-3 3e-3"/>
      <geom type="capsule" pos="0.03 0 0" euler="0 90 0" size="0.02 0.06"/></body>
    <body pos="2 0 0.5"><joint/><inertial pos="0 0 0" mass="0.3" diaginertia="1e-3 2e-3 3e-3"/>
      <geom type="box" pos="0.03 0 0" size="0.03 0.04 0.05"/></body>
    <body pos="3 0 0.5"><joint/><inertial pos="0 0 0" mass="0.3" diaginertia="1e-3 2e-3 3e-3"/>
      <geom type="cylinder" pos="0.03 0 0" size="0.03 0.05"/></body>
    <body pos="4 0 0.5"><joint/><inertial pos="0 0 0" mass="0.3" diaginertia="1e-3 2e-3 3e-3"/>
      <geom type="ellipsoid" pos="0.03 0 0" size="0.03 0.04 0.05"/></body>
    <body pos="5 0 0.5"><joint/><inertial pos="0 0 0" mass="0.3" diaginertia="1e-3 2e-3 3e-3"/>
      <geom type="capsule" pos="0 0.03 0" euler="0 90 0" size="0.02 0.06"/></body>
    <body pos="6 0 0.5" quat="0.8 0.3 0.4 0.33"><joint/>
      <inertial pos="0.01 0 0" mass="0.4" fullinertia="2e-3 3e-3 4e-3 2e-4 -1e-4 3e-4"/>
      <geom type="capsule" fromto="-0.05 0.02 0.01 0.04 -0.03 0.02" size="0.015"/></body>
    <body pos="7 0 0.5" quat="0.3 -0.5 0.7 0.2"><joint/>
      <inertial pos="0 0.01 0" mass="0.4" fullinertia="2e-3 3e-3 4e-3 2e-4 -1e-4 3e-4"/>
      <geom type="sphere" pos="0.02 -0.01 0.03" size="0.04"/></body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  ASSERT_EQ(m->ngeom, 9);
  ASSERT_EQ(mjdiff_substepCount(sim.sim.s), 1);
  mjData* d = mj_makeData(m);
  mj_kinematics(m, d);
  double w2, zw2;
  derivedLaw(0.02, 1, 0.9, 0.95, 0.002, &w2, &zw2);
  const double perp = (500 + 1e3 / 3) / 2, mean = (1e3 + 500 + 1e3 / 3) / 3;
  for (int g = 1; g < m->ngeom; g++) {
    SCOPED_TRACE("geom " + std::to_string(g));
    int b = m->geom_bodyid[g], type = m->geom_type[g];
    // R = X diag(1/I) X' (X: the principal axes in the world, the columns of ximat)
    double R[9];
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 3; j++) {
        R[3 * i + j] = 0;
        for (int k = 0; k < 3; k++) {
          R[3 * i + j] += d->ximat[9 * b + 3 * i + k] * d->ximat[9 * b + 3 * j + k] /
                          m->body_inertia[3 * b + k];
        }
      }
    }
    double tr = R[0] + R[4] + R[8];
    EXPECT_NEAR(m->body_invweight0[2 * b + 1], tr / 3, 1e-9 * tr);  // MuJoCo's own mean
    double o[3], no = 0;
    for (int i = 0; i < 3; i++) {
      o[i] = d->geom_xpos[3 * g + i] - d->xipos[3 * b + i];
      no += o[i] * o[i];
    }
    no = std::sqrt(no);
    double Ar = tr / 3, rhon = no + m->geom_rbound[g];
    if (type == mjGEOM_SPHERE || type == mjGEOM_CAPSULE) {
      double u[3], dperp = 0;
      if (type == mjGEOM_SPHERE) {
        rhon = no;
        for (int i = 0; i < 3; i++) u[i] = o[i] / no;
      } else {
        rhon = no + m->geom_size[3 * g + 1];
        for (int i = 0; i < 3; i++) u[i] = d->geom_xmat[9 * g + 3 * i + 2];
        double c[3] = {u[1] * o[2] - u[2] * o[1], u[2] * o[0] - u[0] * o[2],
                       u[0] * o[1] - u[1] * o[0]};
        dperp = std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
      }
      double uRu = 0;
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) uRu += u[i] * R[3 * i + j] * u[j];
      }
      Ar = (tr - uRu) / 2 + (dperp / rhon) * (dperp / rhon) * uRu;
    } else {
      // a box, cylinder or ellipsoid: R's largest eigenvalue, the bound over directions
      mjtNum Rm[9], val[3], vec[9], quat[4];
      for (int i = 0; i < 9; i++) Rm[i] = R[i];
      mju_eig3(val, vec, quat, Rm);
      Ar = std::max(val[0], std::max(val[1], val[2]));
    }
    // the axis-aligned bodies' values, known here
    if (g == 1 || g == 2) {
      EXPECT_NEAR(Ar, perp, 1e-9 * perp);
    } else if (g >= 3 && g <= 5) {
      EXPECT_NEAR(Ar, 1e3, 1e-9 * 1e3);  // (MuJoCo's mean: 611)
      EXPECT_GT(Ar, 1.6 * mean);
    } else if (g == 6) {
      EXPECT_NEAR(Ar, perp + 1e3 * (0.03 / 0.09) * (0.03 / 0.09), 1e-9 * perp);
    }
    double At = m->body_invweight0[2 * b], An = At + rhon * rhon * Ar;
    mjtNum k, cd;
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, g, &k, nullptr, 0), MJDIFF_OK);
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_damping", 0, g, &cd, nullptr, 0), MJDIFF_OK);
    EXPECT_NEAR(k, w2 / An, 1e-9 * k);
    EXPECT_NEAR(cd, zw2 / An, 1e-9 * cd);
    double rho = no + m->geom_rbound[g];
    mjtNum fAt, fAr;
    mjdiff_contactInvweight(sim.sim.s, 0, g, &fAt, &fAr);
    EXPECT_NEAR(fAt, At + rho * rho * tr / 3, 1e-9 * fAt);
    EXPECT_NEAR(fAr, tr / 3, 1e-9 * fAr);
  }
  mj_deleteData(d);
  // the implicit step's law, uncapped, on MuJoCo's own efc_diagApprox of the normal row, the
  // body's translational invweight0 (plugin/derive.c): k = omega_match^2 / A_t, firmer than the
  // explicit step's per-shape lever would make it, which stays for its stability check
  std::vector<mjtNum> An(sim.sim.s->geom_invweightn, sim.sim.s->geom_invweightn + m->ngeom);
  char err[300];
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 1, err, sizeof(err)), MJDIFF_OK) << err;
  double w2i, zw2i;
  derivedLaw(0.02, 1, 0.9, 0.95, 0, &w2i, &zw2i);  // (h 0: no cap)
  for (int g = 1; g < m->ngeom; g++) {
    SCOPED_TRACE("implicit, geom " + std::to_string(g));
    EXPECT_EQ(sim.sim.s->geom_invweightn[g], An[g]);
    mjtNum k, At = m->body_invweight0[2 * m->geom_bodyid[g]];
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, g, &k, nullptr, 0), MJDIFF_OK);
    EXPECT_NEAR(k, w2i / At, 1e-9 * k);
    EXPECT_LT(At, An[g]);
  }
}

double restDepth(const mjModel* m, mjData* d, const mjdiffModel* s, bool native, double seconds);

// a light capsule (13.6 g, radius 1 cm, half-length 1.5 cm, as MuJoCo's loop sample's) lying on
// the floor at 2 ms rests within 2x of MuJoCo's native depth (measured 0.35 mm against 0.21);
// with the farthest point's lever and MuJoCo's mean A_r on its normal law (the rule before the
// per-shape lever) it rested about 1.4 mm deep, within issue 10's 2 mm but 6.6x native
TEST(Defaults, LightCapsuleRestsNearNative) {
  Sim sim(R"(
<mujoco>
  <option timestep="0.002"/>
  <custom><numeric name="mjdiff_enable" data="1"/></custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body pos="0 0 0.0105"><freejoint/>
      <geom type="capsule" euler="0 90 0" size="0.01 0.015" mass="0.0136"/></body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* dn = mj_makeData(m);
  double deepn = restDepth(m, dn, nullptr, true, 1);
  double deep = restDepth(m, sim.sim.d, sim.sim.s, false, 1);
  mj_deleteData(dn);
  EXPECT_GT(deepn, 0);
  EXPECT_LE(deep, 2 * deepn) << "native " << deepn;
}

// two moving geoms: their derived laws combine in series, as two springs meeting
TEST(Defaults, SeriesRuleBetweenMovingGeoms) {
  Sim sim(R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <custom><numeric name="mjdiff_enable" data="1"/></custom>
  <worldbody>
    <body name="a"><freejoint/><geom name="a" type="sphere" size="0.1" mass="1"/></body>
    <body name="b" pos="0.3 0 0"><freejoint/><geom name="b" type="sphere" size="0.05" mass="0.2"
      solref="0.01 1"/></body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  // b's solref 0.01 is 2.2x firmer than the explicit cap at 2 ms: three substeps
  ASSERT_EQ(mjdiff_substepCount(sim.sim.s), 3);
  double w2a, zwa, w2b, zwb;
  derivedLaw(0.02, 1, 0.9, 0.95, 0.002, &w2a, &zwa, 0.002 / 3);
  derivedLaw(0.01, 1, 0.9, 0.95, 0.002, &w2b, &zwb, 0.002 / 3);
  double Aa = m->body_invweight0[2], Ab = m->body_invweight0[4];  // centred spheres: no lever
  double ka = w2a / Aa, kb = w2b / Ab;
  mjtNum k, c;
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, 1, &k, nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_damping", 0, 1, &c, nullptr, 0), MJDIFF_OK);
  EXPECT_NEAR(k, 1 / (1 / ka + 1 / kb), 1e-9 * k);
  EXPECT_NEAR(c, 1 / (Aa / zwa + Ab / zwb), 1e-9 * c);
  // an explicit value on one geom wins
  ASSERT_EQ(mjdiff_setParam(sim.sim.s, "contact_stiffness:b", 777, nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, 1, &k, nullptr, 0), MJDIFF_OK);
  EXPECT_EQ(k, 777);
}

// a light link (inertia 1e-4 kg m^2 about its hinge) against its joint limit at its own 10 ms step
std::string lightLinkXml(const std::string& numerics) {
  return R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.01" gravity="0 0 0"/>
  <custom><numeric name="mjdiff_enable" data="1"/>)" + numerics + R"(</custom>
  <worldbody>
    <body name="link">
      <joint name="hinge" type="hinge" axis="0 0 1" range="-0.5 0.5" limited="true"
             damping="0.01" armature="0"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.03" contype="0"
            conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="1"/></actuator>
</mujoco>)";
}

TEST(Defaults, LimitLawFromSolrefAndDofInertia) {
  Sim sim(lightLinkXml("").c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  double w2, zw2, A = m->dof_invweight0[0];
  derivedLaw(0.02, 1, 0.9, 0.95, 0.01, &w2, &zw2);
  d->qpos[0] = 0.5 + 0.002;  // 2 mrad past the upper limit, at rest
  char err[1000];
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  double f = -(w2 / A) * ramp(0.001 + 0.002, 0.001);
  EXPECT_NEAR(d->qfrc_passive[0], f, 1e-9 * std::fabs(f));
  ASSERT_LT(f, 0);
}

// pushed into its limit by a torque: the derived values hold; a hand-set damping of 1 (100 times
// the joint's own, the reacher case of issue 10) diverges and the step names the limit
// a strong motor, or a large applied force, accelerating a body from rest is driven motion: the
// divergence test leaves a gain that the actuators' and applied forces' work explains alone
TEST(Defaults, DrivenMotionIsNotDivergence) {
  Sim sim(R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <custom><numeric name="mjdiff_enable" data="1"/></custom>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="cart" pos="0 0 0.1">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/>
    </body>
    <body name="ball" pos="0 1 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody>
  <actuator><motor joint="slide" gear="1e4"/></actuator>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  d->ctrl[0] = 1;
  d->xfrc_applied[6 * 2 + 0] = 5e3;  // the ball, resting on the plane, pushed sideways
  char err[2000] = "";
  for (int k = 1; k <= 5; k++) {
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << "step " << k << err;
    EXPECT_NEAR(d->qvel[0], 2e-3 * 1e4 * k, 1e-9 * k) << "step " << k;
    EXPECT_GT(d->qvel[1], 2e-3 * 5e3 * k * 0.9) << "step " << k;  // less the floor's friction
  }
}

// a slender ball-jointed link connected at its tip to a free box whose com is at box_pos (no
// gravity): the two connect tests below
std::string linkBoxConnect(const char* box_pos) {
  std::string xml = R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <custom><numeric name="mjdiff_enable" data="1"/></custom>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="ball" type="ball" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
    </body>
    <body name="f" pos="BOX_POS">
      <freejoint/>
      <geom type="box" size="0.05 0.04 0.03" mass="0.3"/>
    </body>
  </worldbody>
  <equality><connect body1="a" body2="f" anchor="0.3 0 0"/></equality>
</mujoco>)";
  xml.replace(xml.find("BOX_POS"), 7, box_pos);
  return xml;
}

// A connect's derived law counts the lever of its anchors: at the tip of a slender ball-jointed
// link and off the corner of a free box the anchors move far more easily than the bodies' coms
// (invweight0_t + rho^2 invweight0_r at each anchor, as for a contact at a geom's surface). With
// the com values alone (inverse inertia 4.2 against 28) the law, critically damped as MuJoCo's
// solref asks, was past the explicit step's bound and the pair diverged within 0.034 s.
TEST(Defaults, ConnectAtAnOffsetAnchorHolds) {
  Sim sim(linkBoxConnect("0.355 0.002 0.99").c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  for (int i = 0; i < m->nv; i++) d->qvel[i] = 0.5 * std::sin(1.7 * i + 1);
  char err[2000] = "";
  for (int k = 0; k < 1000; k++) {
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << "step " << k << ": " << err;
  }
  double v2 = 0;
  for (int i = 0; i < m->nv; i++) v2 += d->qvel[i] * d->qvel[i];
  EXPECT_LT(v2, 50) << "the pair gained energy";
}

// A connect closing a planar loop (a four-bar: crank, light coupler, rocker; the plantar rod of
// Agility's Cassie in MuJoCo Menagerie is one) is scaled with the largest eigenvalue of its own
// block J M^-1 J' (derive.c, eqInvweight), here taken from MuJoCo's own constraint rows at qpos0.
// The bodies' invweight0 (means over three directions of which a planar chain moves one) gave
// 26.7 against lambda_max 153: the law 5.7x past the explicit bound, and the step diverged at
// 7.5 ms at the model's 0.5 ms (Cassie's own ran away within 0.1 s). It now runs 2 s under
// random torques.
TEST(Defaults, ConnectClosingALoopHolds) {
  Sim sim(R"(
<mujoco>
  <compiler autolimits="true"/>
  <option timestep="0.0005"/>
  <default><geom contype="0" conaffinity="0"/><equality solref="0.005 1"/></default>
  <worldbody>
    <body name="crank" pos="0 0 1">
      <joint name="crank" type="hinge" axis="0 1 0" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.5"/>
      <body name="coupler" pos="0.1 0 0">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.05" size="0.005" mass="0.02"/>
      </body>
    </body>
    <body name="rocker" pos="0.35 0 1">
      <joint type="hinge" axis="0 1 0" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.05 0 0.05" size="0.01" mass="0.5"/>
    </body>
  </worldbody>
  <equality><connect body1="coupler" body2="rocker" anchor="0.3 0 0.05"/></equality>
  <actuator><motor joint="crank" ctrlrange="-1 1"/></actuator>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;

  // lambda_max of the connect's rows of MuJoCo's efc_J at qpos0 (equality on, the rest off)
  mjModel* mv = mj_copyModel(NULL, m);
  mv->opt.disableflags = mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS;
  mv->opt.disableflags &= ~mjDSBL_EQUALITY;
  mv->opt.jacobian = mjJAC_DENSE;
  mjData* dv = mj_makeData(mv);
  mj_fwdPosition(mv, dv);
  ASSERT_EQ(dv->nefc, 3);
  int nv = m->nv;
  std::vector<mjtNum> Y(3 * nv);
  mj_solveM(mv, dv, Y.data(), dv->efc_J, 3);
  mjtNum G[9], val[3], vec[9], quat[4];
  mju_mulMatMatT(G, dv->efc_J, Y.data(), 3, nv, 3);
  mju_eig3(val, vec, quat, G);
  double lmax = std::max(val[0], std::max(val[1], val[2]));
  mj_deleteData(dv);
  mj_deleteModel(mv);
  double w2, zw2;
  derivedLaw(0.005, 1, 0.9, 0.95, m->opt.timestep, &w2, &zw2);
  mjtNum k, b;
  mjdiff_eqParams(sim.sim.s, 0, 0, &k, &b);
  EXPECT_NEAR(k, w2 / lmax, 1e-8 * k) << "lambda_max " << lmax;
  EXPECT_NEAR(b, zw2 / lmax, 1e-8 * b) << "lambda_max " << lmax;
  EXPECT_GT(lmax, 5 * (m->body_invweight0[2 * 2] + m->body_invweight0[2 * 3]))
      << "the case no longer separates the block from the bodies' invweight0";

  char err[2000] = "";
  unsigned seed = 1;
  for (int t = 0; t < 4000; t++) {
    if (t % 100 == 0) d->ctrl[0] = 2.0 * rand_r(&seed) / RAND_MAX - 1;
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << "step " << t << ": " << err;
  }
  for (int i = 0; i < nv; i++) EXPECT_LT(std::fabs(d->qvel[i]), 100) << "dof " << i;
}

// Detection margins (smooth.c, detectionMargins): a pair must be detected wherever its laws act,
// dist - o < w_pair (o the includemargin: 2.2 the larger user margin, 3.x their sum). A geom with
// a user margin and a narrow width meets one with no margin and a wide width (MuJoCo Menagerie's
// quadruped feet: solimp width 31 mm): swept through the reach in 0.5 mm steps, the contact is
// there at every position inside it, its force growing from 0 at the reach.
// A third geom pair of narrow widths, 20 mm apart, is not detected: the wide width is not
// everyone's (Unitree's A1 found its thighs against its trunk, 6x MuJoCo's step cost).
TEST(Defaults, DetectionCoversEveryLawsReach) {
  Sim sim(R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <geom name="wide" type="sphere" size="0.05" solimp="0.9 0.95 0.03"/>
    <geom name="still" type="sphere" size="0.05" pos="0 0.5 0" margin="0.004"/>
    <body name="a" pos="0.2 0 0">
      <joint name="x" type="slide" axis="1 0 0"/>
      <geom name="margined" type="sphere" size="0.05" margin="0.004" mass="1"/>
      <geom name="near" type="sphere" size="0.05" pos="0 0.38 0" margin="0.004" mass="0.1"/>
    </body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int gw = mj_name2id(m, mjOBJ_GEOM, "wide"), gm = mj_name2id(m, mjOBJ_GEOM, "margined");
  mjtNum w = 0;
  char err[1000] = "";
  ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_width", gw, gm, &w, err, sizeof(err)),
            MJDIFF_OK) << err;
  EXPECT_NEAR(w, 0.03, 1e-12);
#if mjVERSION_HEADER >= 3000000
  double o = 0.004;  // 3.x: the sum of the margins
#else
  double o = 0.004;  // 2.2: the larger
#endif
  double reach = o + w, prev = 0;  // the laws act for dist < reach
  int inside = 0;
  for (double dist = reach + 0.005; dist > 0; dist -= 0.0005) {
    d->qpos[0] = dist + 0.1 - 0.2;  // centres 0.1 apart at dist 0
    ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    int found = 0;
    for (int i = 0; i < d->ncon; i++) {
      const mjContact* c = d->contact + i;
      int a = c->geom1, b = c->geom2;
      found += (a == gw && b == gm) || (a == gm && b == gw);
      EXPECT_FALSE((a == mj_name2id(m, mjOBJ_GEOM, "still") ||
                    b == mj_name2id(m, mjOBJ_GEOM, "still")))
          << "narrow pair 20 mm apart detected";
    }
    double f = std::fabs(d->qfrc_passive[0]);
    if (dist < reach - 1e-9) {
      inside++;
      EXPECT_EQ(found, 1) << "dist " << dist << " inside the reach " << reach << " not detected";
      EXPECT_GT(f, prev) << "dist " << dist << ": the force grows as the geoms close in";
    } else {
      EXPECT_EQ(f, 0) << "dist " << dist << " beyond the reach " << reach;
    }
    prev = f;
  }
  EXPECT_GT(inside, 50);
}

// Equalities that share bodies add up (derive.c, eqNetwork): each element's law is capped on its
// own inverse inertia, but in a pinned grid of tendon equalities (MuJoCo's grid2pin and hammock
// samples) a particle's springs act together, and the explicit step ran away (grid2pin at 0.42 s,
// softbox at 0.26 s, loop at 0.64 s). The derived K and C of equality i are scaled by
// 1 / s_i at the cap, s_i = sum_j |G_ij| / sqrt(G_ii G_jj), G = J M^-1 J' over the equality rows:
// an interior tendon of the grid has collinear neighbours at both ends (|G_ij| = 1/m against
// G_ii = G_jj = 2/m) and perpendicular ones (G_ij = 0), s = 2; a tendon from a pinned corner
// (G_ii = 1/m) has one collinear neighbour, s = 1 + 1/sqrt(2). A grid like grid2pin (9 x 9,
// 5 cm apart, two pins, colliding particles, no damping) then hangs for 2 s under the explicit
// step with its velocities bounded (without the scaling it ran away at step 84).
TEST(Defaults, EqualityNetworkHolds) {
  Sim sim(testutil::pinnedGridXml(8).c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  double w2, zw2;
  derivedLaw(0.01, 1, 0.9, 0.95, m->opt.timestep, &w2, &zw2);
  struct Case {
    const char* tendon;
    double s;
  } cases[] = {{"tp3_2_0", 2}, {"tp0_0_0", 1 + std::sqrt(0.5)}};
  for (const Case& c : cases) {
    int t = mj_name2id(m, mjOBJ_TENDON, c.tendon), eq = -1;
    ASSERT_GE(t, 0) << c.tendon;
    for (int i = 0; i < m->neq; i++) {
      if (m->eq_type[i] == mjEQ_TENDON && m->eq_obj1id[i] == t) eq = i;
    }
    ASSERT_GE(eq, 0) << c.tendon;
    mjtNum k, b;
    mjdiff_eqParams(sim.sim.s, eq, 0, &k, &b);
    double A = m->tendon_invweight0[t];
    EXPECT_NEAR(k, w2 / (c.s * A), 1e-9 * k) << c.tendon << ": stiffness, s = " << c.s;
    EXPECT_NEAR(b, zw2 / (c.s * A), 1e-9 * b) << c.tendon << ": damping, s = " << c.s;
  }
#if mjVERSION_HEADER < 3000000
  // attached to MuJoCo's mj_step the model's equalities are off (the smooth laws replace them):
  // the network is still the user's, the laws the same (derived from m's own flags, they had
  // every factor 1, and grid2pin and softbox ran away again under mj_step)
  {
    std::vector<mjtNum> before(2 * m->neq), after(2 * m->neq);
    for (int i = 0; i < m->neq; i++) mjdiff_eqParams(sim.sim.s, i, 0, &before[2 * i], &before[2 * i + 1]);
    char err[500];
    ASSERT_EQ(mjdiff_attach(sim.sim.m, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    for (int i = 0; i < m->neq; i++) mjdiff_eqParams(sim.sim.s, i, 0, &after[2 * i], &after[2 * i + 1]);
    mjdiff_detach(sim.sim.m);
    for (int i = 0; i < 2 * m->neq; i++) EXPECT_EQ(after[i], before[i]) << "equality " << i / 2;
  }
#endif

  // a connect's or weld's own rows are one spring: a lone element is not scaled, whatever
  // unrelated element is added (counting its own rows, an off-axis connect went 783 -> 552 and a
  // weld 74.7 -> 37.3 once a second, unrelated body with its own equality was added)
  for (const char* eq : {"<connect body1='a' anchor='0.1 0.05 0'/>", "<weld body1='a'/>"}) {
    auto xml = [&](bool second) {
      std::string x = "<mujoco><option timestep='0.002'/><worldbody>"
                      "<body name='a' pos='0 0 1'><freejoint/><geom type='box' size='0.1 0.05 0.02' "
                      "mass='1'/></body>";
      if (second) {
        x += "<body name='b' pos='1 0 1'><freejoint/><geom type='sphere' size='0.05' mass='0.3'/>"
             "</body>";
      }
      x += std::string("</worldbody><equality>") + eq;
      if (second) x += "<connect body1='b' anchor='0 0 0.05'/>";
      return x + "</equality></mujoco>";
    };
    Sim one(xml(false).c_str()), two(xml(true).c_str());
    ASSERT_TRUE(one.ok && two.ok) << one.sim.err << two.sim.err;
    for (int rot = 0; rot < 2; rot++) {
      mjtNum k1, c1, k2, c2;
      mjdiff_eqParams(one.sim.s, 0, rot, &k1, &c1);
      mjdiff_eqParams(two.sim.s, 0, rot, &k2, &c2);
      EXPECT_NEAR(k2, k1, 1e-12 * k1) << eq << " rot " << rot;
      EXPECT_NEAR(c2, c1, 1e-12 * c1) << eq << " rot " << rot;
    }
  }

  Sim hang(testutil::pinnedGridXml(9, 0.05, true, true, 0.0335, 0).c_str());
  ASSERT_TRUE(hang.ok) << hang.sim.err;
  char err[2000] = "";
  double vmax = 0;
  for (int k = 0; k < 400; k++) {
    ASSERT_EQ(mjdiff_step(hang.sim.m, hang.sim.d, hang.sim.s, err, sizeof(err)), MJDIFF_OK)
        << "step " << k << ": " << err;
    for (int i = 0; i < hang.sim.m->nv; i++) vmax = std::max(vmax, std::fabs(hang.sim.d->qvel[i]));
    ASSERT_LT(vmax, 1000) << "ran away at step " << k;
  }
  std::cout << "grid like grid2pin, explicit step, 2 s: largest |qvel| " << vmax << " m/s\n";
  EXPECT_LT(vmax, 10) << "the grid's springs gained energy";
}

// A model that starts at rest with a constraint pulled apart (a connect 30 cm off) releases the
// stored energy in the first steps: a jump from rest, not a divergence (the hundredfold-gain rule
// applies to bodies already moving); it settles with the anchors together
TEST(Defaults, ViolatedConstraintAtRestIsNotDivergence) {
  Sim sim(linkBoxConnect("0.3 0 1").c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  d->qpos[4 + 2] -= 0.3;  // the free body 30 cm down: the connect 30 cm apart, at rest
  char err[2000] = "";
  for (int k = 0; k < 1000; k++) {
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << "step " << k << ": " << err;
  }
  mjtNum p1[3], p2[3], a[3] = {0.3, 0, 0};
  mj_kinematics(m, d);
  mju_rotVecMat(p1, a, d->xmat + 9 * 1);
  mju_addTo3(p1, d->xpos + 3 * 1);
  mju_rotVecMat(p2, m->eq_data + 3, d->xmat + 9 * 2);
  mju_addTo3(p2, d->xpos + 3 * 2);
  EXPECT_LT(mju_dist3(p1, p2), 1e-3) << "the anchors came together";
}

// The same under the implicit step, whose limit law is stiff enough to release a violation in a
// step or two: a leg starting 0.5 rad outside its hinge's range (as gym's Ant starts its ankles,
// 0.52 rad outside) at a 10 ms step. The explicit step's stability bound, which the implicit step
// does not have, once named that release a divergence at step 0; it runs and ends in range
TEST(Defaults, ImplicitReleasesAStartOutsideALimit) {
  Sim sim(R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.01"/>
  <custom><numeric name="mjdiff_integrator" data="1"/></custom>
  <worldbody>
    <body pos="0 0 1">
      <joint name="hip" type="hinge" axis="0 1 0" range="0.5 1.2" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1"/>
    </body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  ASSERT_EQ(d->qpos[0], 0);  // 0.5 rad below its range, at rest
  char err[2000] = "";
  for (int k = 0; k < 100; k++) {
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << "step " << k << ": "
                                                                         << err;
    ASSERT_LT(std::fabs(d->qvel[0]), 1e3);
  }
  EXPECT_GT(d->qpos[0], 0.45);  // in range (within the law's width): gravity holds it at the top
  EXPECT_LT(d->qpos[0], 1.25);
}

// The explicit step's derived joint-limit laws hold at every configuration: their inverse inertia
// is the largest (M^-1)_ii over sampled configurations, not MuJoCo's qpos0 value (the humanoid's
// hip_x reaches 9.7x it). The humanoid under random full-range controls, 300 two-second runs from
// the keyframe: none runs away (with the qpos0 value, 7 of 1000 did, through a hip or arm limit).
TEST(Defaults, LimitLawsHoldAcrossConfigurations) {
  Sim sim(nullptr, "/usr/share/mujoco/model/humanoid/humanoid.xml");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  int hip = mj_name2id(m, mjOBJ_JOINT, "right_hip_x");
  ASSERT_GE(hip, 0);
  char err[1000];
  // the limit's stiffness from its force past the range (the ramp's linear part) at two depths,
  // less the joint's own spring: at most a quarter of omega^2 / A at qpos0
  int qa = m->jnt_qposadr[hip], da = m->jnt_dofadr[hip];
  double f[2], x[2] = {0.05, 0.06};
  mjModel* mc = mj_copyModel(nullptr, m);  // no contacts: the limit alone in qfrc_passive
  mc->opt.disableflags |= mjDSBL_CONTACT;
  for (int i = 0; i < 2; i++) {
    mj_resetDataKeyframe(mc, d, 0);
    d->qpos[qa] = mc->jnt_range[2 * hip + 1] + x[i];
    ASSERT_EQ(mjdiff_forward(mc, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    f[i] = d->qfrc_passive[da];
  }
  mj_deleteModel(mc);
  double klim = -(f[1] - f[0]) / (x[1] - x[0]) - m->jnt_stiffness[hip];
  double w2, zw2, A0 = m->dof_invweight0[da];
  const mjtNum* sr = m->jnt_solref + mjNREF * hip;
  const mjtNum* si = m->jnt_solimp + mjNIMP * hip;
  derivedLaw(sr[0], sr[1], si[0], si[1], m->opt.timestep, &w2, &zw2);
  std::cout << "right_hip_x limit stiffness " << klim << " N m/rad; at qpos0's inverse inertia "
            << w2 / A0 << "\n";
  EXPECT_GT(klim, 0);
  EXPECT_LT(klim, 0.25 * w2 / A0);
  int ran = 0;
  for (int r = 0; r < 300; r++) {
    unsigned long long rng = 1000 + r;
    mj_resetDataKeyframe(m, d, 0);
    for (int i = 0; i < 400; i++) {
      if (i % 20 == 0) testutil::uniformCtrl(m, d, &rng);
      mjdiffStatus st = mjdiff_step(m, d, sim.sim.s, err, sizeof(err));
      double vmax = 0;
      for (int j = 0; j < m->nv; j++) vmax = std::max(vmax, std::fabs(d->qvel[j]));
      if (st != MJDIFF_OK || vmax > 1000) {
        ran++;
        ADD_FAILURE() << "run " << r << " at t " << d->time << ": " << (st ? err : "ran away");
        break;
      }
    }
  }
  EXPECT_EQ(ran, 0);
}

TEST(Defaults, DivergenceIsCaughtAndNamed) {
  for (bool derived : {true, false}) {
    SCOPED_TRACE(derived ? "derived" : "limit_damping = 1");
    std::string numerics =
        derived ? "" : "<numeric name='mjdiff_limit_stiffness' data='1000'/>"
                       "<numeric name='mjdiff_limit_damping' data='1'/>";
    Sim sim(lightLinkXml(numerics).c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    d->ctrl[0] = 0.02;
    char err[2000] = "";
    mjdiffStatus st = MJDIFF_OK;
    int steps = 0;
    std::vector<mjtNum> before;
    for (; steps < 2000 && st == MJDIFF_OK; steps++) {
      before = testutil::getState(m, d);
      st = mjdiff_step(m, d, sim.sim.s, err, sizeof(err));
    }
    if (derived) {
      EXPECT_EQ(st, MJDIFF_OK) << err;
      // held at rest past the limit, where the limit's force balances the motor
      EXPECT_GT(d->qpos[0], 0.5);
      EXPECT_NEAR(d->qvel[0], 0, 1e-6);
      EXPECT_NEAR(d->qfrc_passive[0], -d->ctrl[0], 1e-6);
      continue;
    }
    ASSERT_EQ(st, MJDIFF_ERR_NONFINITE);
    EXPECT_LT(steps, 100) << "caught within a few steps of reaching the limit";
    std::string msg = err;
    EXPECT_NE(msg.find("diverged"), std::string::npos) << msg;
    EXPECT_NE(msg.find("limit of joint 0 ('hinge')"), std::string::npos) << msg;
    EXPECT_NE(msg.find("largest stable timestep"), std::string::npos) << msg;
    EXPECT_NE(msg.find("effective mass"), std::string::npos) << msg;
    std::vector<mjtNum> after = testutil::getState(m, d);
    EXPECT_EQ(0, std::memcmp(before.data(), after.data(), sizeof(mjtNum) * before.size()))
        << "a failed step must leave the state untouched";
    mjdiffStability w;
    mjdiff_stability(m, d, sim.sim.s, 1, &w);
    EXPECT_EQ(w.kind, MJDIFF_STAB_JOINT_LIMIT);
    EXPECT_GT(w.ratio, 1);
    EXPECT_NEAR(w.hmax, mjdiff_stableTimestep(w.stiffness, w.damping, 1 / w.mass), 1e-12);
    EXPECT_EQ(w.exact, 1);
    EXPECT_NEAR(w.mass, m->dof_M0[0] + 0 * m->dof_armature[0], 1e-9 * w.mass);  // one dof: M
  }
}

// elements stable alone and unstable together (stability.c, the group test). Exact: a slide
// beyond its own limit and a fixed tendon's (coefficient 2) acts on one dof with stiffness
// k (1 + 2^2) / M; the group's timestep is the scalar bound at that value. Caught: a plank hinged
// through its centre with a hand-set contact law whose two corner contacts are each stable alone
// (ratio 0.74) and unstable together gained speed at each bounce until |qvel| ran past 1e3 rad/s
// before the hundredfold test held; the group test names it at the second bounce
TEST(Defaults, ElementsUnstableTogetherAreNamed) {
  {
    Sim sim(R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <custom>
    <numeric name="mjdiff_enable" data="1"/>
    <numeric name="mjdiff_limit_stiffness" data="3000"/>
    <numeric name="mjdiff_limit_damping" data="20"/>
    <numeric name="mjdiff_limit_width" data="0.01"/>
  </custom>
  <worldbody>
    <body><joint name="s" type="slide" axis="1 0 0" limited="true" range="-0.1 0.1"/>
      <geom type="sphere" size="0.1" mass="2" contype="0" conaffinity="0"/></body>
    <body><joint name="free" type="slide" axis="0 1 0"/>
      <geom type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <tendon><fixed name="t" limited="true" range="-0.2 0.2"><joint joint="s" coef="2"/></fixed>
  </tendon>
</mujoco>)");
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    d->qpos[0] = 0.5;  // past both limits by more than twice the width: the ramp's slope is 1
    char err[1000];
    ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    mjdiffStability w;
    mjdiff_stability(m, d, sim.sim.s, 1, &w);
    const double M = m->dof_M0[0], k = 3000, c = 20, h = 0.002;  // a slide: M is constant
    const double hmax = mjdiff_stableTimestep(5 * k / M, 5 * c / M, 1);
    std::cout << "slide and tendon limits: alone ratio " << w.ratio << " (" << w.kind
              << "), together " << w.group_ratio << " (expected " << h / hmax << ")\n";
    EXPECT_EQ(w.group_count, 2);
    EXPECT_NEAR(w.group_hmax, hmax, 1e-9 * hmax);
    EXPECT_NEAR(w.group_ratio, h / hmax, 1e-9);
    EXPECT_EQ(w.group_kind, MJDIFF_STAB_TENDON_LIMIT) << "the tendon's row is 4x the joint's";
    EXPECT_NEAR(w.ratio, h / mjdiff_stableTimestep(4 * k / M, 4 * c / M, 1), 1e-9);
    EXPECT_GT(w.group_ratio, w.ratio);
  }
  Sim sim(hingedPlankXml("<numeric name='mjdiff_contact_stiffness' data='1e6'/>"
                         "<numeric name='mjdiff_contact_damping' data='1'/>").c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  d->qpos[0] = 0.2;
  d->qvel[0] = 1;
  char err[2000] = "";
  mjdiffStatus st = MJDIFF_OK;
  int steps = 0;
  double fastest = 0;
  for (; steps < 2000 && st == MJDIFF_OK; steps++) {
    st = mjdiff_step(m, d, sim.sim.s, err, sizeof(err));
    fastest = std::max(fastest, std::fabs((double)d->qvel[0]));
  }
  std::cout << "hinged plank, hand-set law: stopped at step " << steps << ", fastest " << fastest
            << " rad/s (from 1): " << err << "\n";
  ASSERT_EQ(st, MJDIFF_ERR_NONFINITE);
  EXPECT_LT(fastest, 10) << "caught before it runs away";
  std::string msg = err;
  EXPECT_NE(msg.find("unstable together"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 smooth forces act on one motion"), std::string::npos) << msg;
  EXPECT_NE(msg.find("('plank', body 'plank')"), std::string::npos) << msg;
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffStability w;
  mjdiff_stability(m, d, sim.sim.s, 1, &w);
  EXPECT_LT(w.ratio, 1) << "each contact alone is stable";
  EXPECT_GT(w.group_ratio, 1);
  EXPECT_EQ(w.group_kind, MJDIFF_STAB_CONTACT);
}

// a ball joint's limit acts about its rotation's axis across the ball's three dofs: the exact
// effective mass is 1 / (a' M^-1 a), a the unit axis (before 2026-12-08 the first dof's alone)
TEST(Defaults, BallLimitStabilityOnItsAxis) {
  testutil::Sim sim(R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <custom><numeric name="mjdiff_enable" data="1"/></custom>
  <worldbody>
    <body pos="0 0 1"><joint name="ball" type="ball" limited="true" range="0 0.5"/>
      <geom type="capsule" fromto="0 0 0 0.3 0.1 -0.4" size="0.03" mass="2"
            contype="0" conaffinity="0"/></body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  double axis[3] = {0.6, -0.48, 0.64}, angle = 0.8;  // |axis| = 1; 0.3 rad past the range
  mju_axisAngle2Quat(d->qpos, axis, angle);
  char err[1000];
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  mjdiffStability w;
  mjdiff_stability(m, d, sim.sim.s, 1, &w);
  mjtNum a[3] = {axis[0], axis[1], axis[2]}, x[3];
  mj_solveM(m, d, x, a, 1);
  const double A = mju_dot3(a, x);
  mjtNum e0[3] = {1, 0, 0};
  mj_solveM(m, d, x, e0, 1);
  std::cout << "ball limit: effective mass " << w.mass << " (axis " << 1 / A << ", first dof "
            << 1 / x[0] << ")\n";
  EXPECT_EQ(w.kind, MJDIFF_STAB_JOINT_LIMIT);
  EXPECT_NEAR(w.mass, 1 / A, 1e-9 / A);
  EXPECT_GT(std::fabs(w.mass - 1 / x[0]), 1e-3 / A) << "the axis, not the first dof";
}

// rest depth of a ball and of a box on a plane, derived values against MuJoCo's native step, at
// 2, 5 and 10 ms: no deeper than twice the native depth or 2 mm, whichever is larger (issue 10).
// The derived substeps (1, 3 and 6) make it at 5 and 10 ms; a single explicit step there, held
// to the stability cap, rests 3-8 times deeper and misses (the guard)
double restDepth(const mjModel* m, mjData* d, const mjdiffModel* s, bool native, double seconds) {
  mj_resetData(m, d);
  char err[1000];
  int n = (int)std::lround(seconds / m->opt.timestep);
  for (int i = 0; i < n; i++) {
    if (native) {
      mj_step(m, d);
    } else if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) {
      ADD_FAILURE() << err;
      return INFINITY;
    }
  }
  if (!native && mjdiff_forward(m, d, s, err, sizeof(err)) != MJDIFF_OK) return INFINITY;
  double deep = 0;
  for (int i = 0; i < d->ncon; i++) deep = std::max(deep, -d->contact[i].dist);
  return deep;
}

// an MJCF margin: MuJoCo's constraint acts from the contact's includemargin (margin - gap) on, so
// the native step holds a body about that far out (gym's Ant, margin 0.01, rests 9.7 mm above
// the floor); the smooth laws measure the depth from it too (mjdiff_contactOffset). The ball's
// height after 2 s, explicit and implicit, within 1 mm of the native step's: margin 0.01 (held
// about 1 cm up), margin and gap 0.01 (2.2: includemargin margin - gap = 0, touching; 3.x: the
// gap only widens the detection, held at the margin), margin 0.02 on the floor
TEST(Defaults, MarginHoldsBodiesOutAsNative) {
  struct Case {
    const char* ball;
    const char* floor;
    double lift;  // the native height above touching, roughly
  } cases[] = {{"margin='0.01'", "", 0.01},
               {"margin='0.01' gap='0.01'", "", MJDIFF_MUJOCO_3 ? 0.01 : 0},  // (3.x: no minus gap)
               {"", "margin='0.02'", 0.02}};
  for (const Case& c : cases) {
    for (int implicit = 0; implicit < 2; implicit++) {
      SCOPED_TRACE(std::string(c.ball) + c.floor + (implicit ? " implicit" : " explicit"));
      std::string xml = ballXml(0.002, c.ball);
      std::string plane = "type=\"plane\" size=\"2 2 0.1\"";
      size_t at = xml.find(plane);
      ASSERT_NE(at, std::string::npos);
      xml.replace(at, plane.size(), plane + " " + c.floor);
      Sim sim(xml.c_str());
      ASSERT_TRUE(sim.ok) << sim.sim.err;
      const mjModel* m = sim.sim.m;
      char err[500];
      if (implicit) {
        ASSERT_EQ(mjdiff_setParam(sim.sim.s, "integrator", 1, err, sizeof(err)), MJDIFF_OK);
      }
      mjData* dn = mj_makeData(m);
      mjData* d = sim.sim.d;
      mj_resetData(m, d);
      for (int i = 0; i < 1000; i++) {
        mj_step(m, dn);
        ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
      }
      double zn = dn->qpos[2] - 0.1, zs = d->qpos[2] - 0.1;  // above touching
      EXPECT_NEAR(zn, c.lift, 2e-3);
      EXPECT_NEAR(zs, zn, 1e-3);
      mj_deleteData(dn);
    }
  }
}

// the activation margins reach as far as the laws: a ball at dist = offset + w / 2 (offset
// MuJoCo's includemargin, w the contact width), beyond the MJCF margin but inside the law's reach,
// is detected and pushed (review of the first version: the detection margins could be reverted
// without a test failing; under the override flag MuJoCo detected only within o_margin, and the
// force appeared with a jump)
TEST(Defaults, MarginContactsDetectedWhereTheLawActs) {
  struct Case {
    const char* name;
    const char* ball;
    const char* floor;
    const char* extra;
    const char* option;
    double offset;
  } cases[] = {
      {"ball margin", "margin='0.01'", "", "", "", 0.01},
      {"floor margin", "", "margin='0.02'", "", "", 0.02},
      {"margin and gap", "margin='0.01' gap='0.005'", "", "", "", MJDIFF_MUJOCO_3 ? 0.01 : 0.005},
      {"pair margin", "", "",
       "<contact><pair geom1='floor' geom2='ball' margin='0.015'/></contact>", "", 0.015},
      {"override", "", "", "", "o_margin='0.01'><flag override='enable'/></option", 0.01},
      {"none", "", "", "", "", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string xml = ballXml(0.002, c.ball, c.extra);
    std::string plane = "type=\"plane\" size=\"2 2 0.1\"";
    xml.replace(xml.find(plane), plane.size(), plane + " " + c.floor);
    if (*c.option) {
      std::string opt = "<option timestep=\"0.002\"/>";
      xml.replace(xml.find(opt), opt.size(), std::string("<option timestep=\"0.002\" ") + c.option +
                                                 ">");
    }
    Sim sim(xml.c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    mjtNum w;
    char err[500];
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_width", 0, 1, &w, err, sizeof(err)),
              MJDIFF_OK) << err;
    for (double frac : {0.5, 0.9}) {
      mj_resetData(m, d);
      d->qpos[2] = 0.1 + c.offset + frac * w;
      ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
      double fn = 0;
      for (int i = 0; i < d->ncon; i++) {
        mjdiffContactForce f;
        ASSERT_EQ(mjdiff_contactForce(m, d, sim.sim.s, i, &f), MJDIFF_OK);
        fn += f.force[0];
      }
      EXPECT_GT(fn, 0) << "at offset + " << frac << " w: " << d->ncon << " contacts";
    }
    // beyond offset + w: no force
    mj_resetData(m, d);
    d->qpos[2] = 0.1 + c.offset + 1.01 * w;
    ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    for (int i = 0; i < d->ncon; i++) {
      mjdiffContactForce f;
      ASSERT_EQ(mjdiff_contactForce(m, d, sim.sim.s, i, &f), MJDIFF_OK);
      EXPECT_EQ(f.force[0], 0);
    }
  }
}

TEST(Defaults, RestDepthNearNative) {
  const char* shapes[] = {"type='sphere' size='0.1'", "type='box' size='0.1 0.1 0.1'"};
  struct Case {
    double h;
    int n;
  } cases[] = {{0.002, 1}, {0.005, 3}, {0.01, 6}};
  for (const Case& c : cases) {
    for (const char* shape : shapes) {
      SCOPED_TRACE(std::string(shape) + " h " + std::to_string(c.h));
      std::string xml = ballXml(c.h);
      size_t at = xml.find("type=\"sphere\" size=\"0.1\"");
      ASSERT_NE(at, std::string::npos);
      xml.replace(at, strlen("type=\"sphere\" size=\"0.1\""), shape);
      Sim sim(xml.c_str());
      ASSERT_TRUE(sim.ok) << sim.sim.err;
      const mjModel* m = sim.sim.m;
      mjData* dn = mj_makeData(m);
      EXPECT_EQ(mjdiff_substepCount(sim.sim.s), c.n);
      double deepn = restDepth(m, dn, nullptr, true, 2);
      double deep = restDepth(m, sim.sim.d, sim.sim.s, false, 2);
      mj_deleteData(dn);
      EXPECT_GT(deepn, 0);
      EXPECT_LE(deep, std::max(2 * deepn, 2e-3)) << "native " << deepn;
      if (c.n > 1) {
        char err[500];
        ASSERT_EQ(mjdiff_setParam(sim.sim.s, "substeps", 1, err, sizeof(err)), MJDIFF_OK) << err;
        double single = restDepth(m, sim.sim.d, sim.sim.s, false, 2);
        EXPECT_GT(single, std::max(2 * deepn, 2e-3)) << "with " << c.n << " substeps " << deep;
      }
    }
  }
}

// n substeps of timestep h are n smooth steps of h / n: the same derived values (MuJoCo's refsafe
// rule, at h, does not bind here), the same state after 200 steps bit for bit, the readings of the
// step's start state (as mj_step's), the time advanced by h exactly
TEST(Substeps, AreStepsOfTheSubTimestep) {
  const char* sensor = "<sensor><framepos objtype='body' objname='ball'/></sensor>";
  // (0.003 / 2 is the double nearest 0.0015: ballXml's %g text gives the same timestep)
  Sim big(ballXml(0.003, "", sensor).c_str());
  Sim small(ballXml(0.0015, "", sensor).c_str());
  ASSERT_TRUE(big.ok && small.ok) << big.sim.err << small.sim.err;
  ASSERT_EQ(mjdiff_substepCount(big.sim.s), 2);  // omega_match h = 1.68 caps
  ASSERT_EQ(mjdiff_substepCount(small.sim.s), 1);
  mjtNum kb, ks;
  ASSERT_EQ(mjdiff_getPairParam(big.sim.s, "contact_stiffness", 0, 1, &kb, nullptr, 0), MJDIFF_OK);
  ASSERT_EQ(mjdiff_getPairParam(small.sim.s, "contact_stiffness", 0, 1, &ks, nullptr, 0),
            MJDIFF_OK);
  EXPECT_NEAR(kb, ks, 1e-12 * ks);
  mjData *db = big.sim.d, *ds = small.sim.d;
  for (mjData* d : {db, ds}) {
    d->qpos[2] = 0.3;
    d->qvel[0] = 1;
    d->qvel[4] = 5;
  }
  const mjModel *mb = big.sim.m, *ms = small.sim.m;
  char err[1000];
  double t = 0;
  for (int k = 0; k < 200; k++) {
    double z = db->qpos[2];
    ASSERT_EQ(mjdiff_step(mb, db, big.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_EQ(db->sensordata[2], z) << "step " << k;
    for (int i = 0; i < 2; i++) {
      ASSERT_EQ(mjdiff_step(ms, ds, small.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    }
    t += 0.003;
    EXPECT_EQ(db->time, t);
  }
  // bit for bit: the same operations on the same numbers
  for (int i = 0; i < mb->nq; i++) EXPECT_EQ(db->qpos[i], ds->qpos[i]) << "qpos " << i;
  for (int i = 0; i < mb->nv; i++) EXPECT_EQ(db->qvel[i], ds->qvel[i]) << "qvel " << i;
  EXPECT_LT(db->qpos[2], 0.1);  // it fell, and touched
}

// substeps are derived for derived contact stiffnesses only: an explicit stiffness in the MJCF
// (model-wide, or on the moving geom) asks for none; an explicit damping alone, or a stiffness on
// the immovable floor only, leaves them
TEST(Substeps, ExplicitStiffnessAsksForNone) {
  struct Case {
    const char* numeric;
    int n;
  } cases[] = {{"mjdiff_contact_stiffness", 1},
               {"mjdiff_contact_stiffness:ball", 1},
               {"mjdiff_contact_stiffness:floor", 3},
               {"mjdiff_contact_damping", 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.numeric);
    std::string extra = std::string("<custom><numeric name='") + c.numeric + "' data='2e4'/></custom>";
    Sim sim(ballXml(0.005, "", extra).c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    EXPECT_EQ(mjdiff_substepCount(sim.sim.s), c.n);
    mjtNum k;
    ASSERT_EQ(mjdiff_getPairParam(sim.sim.s, "contact_stiffness", 0, 1, &k, nullptr, 0), MJDIFF_OK);
    if (c.n == 1) {
      EXPECT_EQ(k, 2e4);
    }
  }
}

// no substeps where the model turns contacts off (flag contact or constraint disabled: the
// smooth model then has no contact law to reach; dm_control's acrobot, cartpole, pendulum took 6)
TEST(Substeps, NoneWhereContactsAreDisabled) {
  struct Case {
    const char* flag;
    int n;
  } cases[] = {{"", 3}, {"contact", 1}, {"constraint", 1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flag);
    std::string xml = ballXml(0.005);
    if (*c.flag) {
      std::string opt = "<option timestep=\"0.005\"/>";
      size_t at = xml.find(opt);
      ASSERT_NE(at, std::string::npos);
      xml.replace(at, opt.size(), std::string("<option timestep=\"0.005\"><flag ") + c.flag +
                                       "=\"disable\"/></option>");
    }
    Sim sim(xml.c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    EXPECT_EQ(mjdiff_substepCount(sim.sim.s), c.n);
  }
}

// the option: validated, settable, 1 under the implicit step; attached to mj_step, none
TEST(Substeps, OptionAndItsLimits) {
  Sim sim(ballXml(0.005).c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjdiffModel* s = sim.sim.s;
  char err[500];
  EXPECT_EQ(mjdiff_substepCount(s), 3);
  EXPECT_EQ(mjdiff_setParam(s, "substeps", 2.5, err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("substeps must be an integer in [1, 64]"), std::string::npos)
      << err;
  EXPECT_EQ(mjdiff_setParam(s, "substeps", 65, err, sizeof(err)), MJDIFF_ERR_VALUE);
  ASSERT_EQ(mjdiff_setParam(s, "substeps", 7, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_substepCount(s), 7);
  ASSERT_EQ(mjdiff_setParam(s, "integrator", 1, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_substepCount(s), 1);
  ASSERT_EQ(mjdiff_setParam(s, "integrator", 0, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_setParam(s, "substeps", -1, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_substepCount(s), 3);
#if mjVERSION_HEADER < 3000000
  // attached, MuJoCo's mj_step takes one step of the model's timestep: no substeps, until detached
  mjModel* m0 = mj_copyModel(nullptr, sim.sim.m);  // (before attaching turns its contacts off)
  ASSERT_EQ(mjdiff_attach(sim.sim.m, s, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_substepCount(s), 1);
  // a copy is not attached: it takes the substeps
  mjdiffModel* copy = nullptr;
  ASSERT_EQ(mjdiff_copyModel(s, m0, &copy, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_substepCount(copy), 3);
  mjdiff_freeModel(copy);
  mj_deleteModel(m0);
  mjdiff_detach(sim.sim.m);
  EXPECT_EQ(mjdiff_substepCount(s), 3);
#endif
  // a workspace made for fewer substeps refuses by name
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_setParam(s, "substeps", 2, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_makeStepDeriv(sim.sim.m, s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_setParam(s, "substeps", 4, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> lam(2 * sim.sim.m->nv, 1.0), ax(2 * sim.sim.m->nv);
  EXPECT_EQ(mjdiff_stepVJP(sim.sim.m, sim.sim.d, s, w, lam.data(), ax.data(), nullptr, nullptr,
                           err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::string(err).find("made for 2 substeps, the smooth model now takes 4"),
            std::string::npos) << err;
  mjdiff_freeStepDeriv(w);
}

}  // namespace
