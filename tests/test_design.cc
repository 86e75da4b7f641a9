// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Geometry parameters (adjoint/design_d.c): body, geom, site and joint positions, geom sizes,
// body scales.
//
// Compiler consistency: the values set through mjdiff_setParamValues, written into the MJCF text
// and recompiled by mj_loadXML, give the same body masses, centres of mass, inertia tensors
// R(iquat) diag(inertia) R(iquat)' (the tensor: the eigenvectors of equal eigenvalues are not
// unique), bounding radii and positions to 1e-9 relative (to the largest entry of each block).
//
// Rollout gradients: the gradient of a terminal loss L = c . (x_T - x_ref) (tangent difference,
// c random) after T steps with contacts, in every geometry parameter (mjdiff_rolloutBackward's
// grad_param), against centred differences of L with the parameter set through
// mjdiff_setParamValues, Richardson-extrapolated over (h, 2h), h = 1e-5 max(|p|, 0.1). Compared
// relative to max(|g_i|, 1e-3 max_j |g_j|) at several random starts per model; a sample is skipped
// where the (h, 2h) and (2h, 4h) extrapolations disagree by more than the tolerance (a contact
// switching within reach). At least 80% of the comparisons must be made.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <mjdiff/loss.h>
#include <mjdiff/params.h>
#include <mjdiff/rollout.h>

#include "../adjoint/derivative.h"
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::Sim;
using testutil::uniform;

struct Params {
  mjdiffParams* p = nullptr;
  ~Params() { mjdiff_freeParams(p); }
};

// %s placeholders of a template filled with values (17 significant digits)
std::string fill(const char* tmpl, const std::vector<double>& v) {
  std::string out;
  size_t k = 0;
  for (const char* c = tmpl; *c; c++) {
    if (c[0] == '%' && c[1] == 's') {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%.17g", v.at(k++));
      out += buf;
      c++;
    } else {
      out += *c;
    }
  }
  return out;
}

// body b's inertia tensor in its body frame
void tensor(const mjModel* m, int b, double T[9]) {
  mjtNum R[9];
  mju_quat2Mat(R, m->body_iquat + 4 * b);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) {
      double v = 0;
      for (int k = 0; k < 3; k++) v += R[3 * i + k] * m->body_inertia[3 * b + k] * R[3 * j + k];
      T[3 * i + j] = v;
    }
  }
}

double blockErr(const double* a, const double* b, int n) {
  double scale = 1e-300, e = 0;
  for (int i = 0; i < n; i++) scale = std::fmax(scale, std::fabs(b[i]));
  for (int i = 0; i < n; i++) e = std::fmax(e, std::fabs(a[i] - b[i]));
  return e / scale;
}

// worst relative difference of the compile-time quantities of two models of the same MJCF
double compareCompiled(const mjModel* a, const mjModel* b) {
  double worst = 0;
  for (int i = 1; i < a->nbody; i++) {
    double Ta[9], Tb[9];
    tensor(a, i, Ta);
    tensor(b, i, Tb);
    worst = std::fmax(worst, blockErr(a->body_mass + i, b->body_mass + i, 1));
    worst = std::fmax(worst, blockErr(Ta, Tb, 9));
    double pa[3], pb[3], sc = 0;
    for (int k = 0; k < 3; k++) {
      pa[k] = a->body_ipos[3 * i + k];
      pb[k] = b->body_ipos[3 * i + k];
      sc = std::fmax(sc, std::fabs(pb[k]));
    }
    // ipos relative to the body's extent (a centre of mass at the origin has no relative scale)
    double ext = std::fmax(sc, 1e-3);
    for (int k = 0; k < 3; k++) worst = std::fmax(worst, std::fabs(pa[k] - pb[k]) / ext);
    worst = std::fmax(worst, blockErr(a->body_pos + 3 * i, b->body_pos + 3 * i, 3));
    worst = std::fmax(worst, blockErr(a->body_subtreemass + i, b->body_subtreemass + i, 1));
  }
  for (int g = 0; g < a->ngeom; g++) {
    worst = std::fmax(worst, blockErr(a->geom_size + 3 * g, b->geom_size + 3 * g, 3));
    worst = std::fmax(worst, blockErr(a->geom_rbound + g, b->geom_rbound + g, 1));
    double ext = std::fmax(1e-3, b->geom_rbound[g]);
    for (int k = 0; k < 3; k++) {
      worst = std::fmax(worst, std::fabs(a->geom_pos[3 * g + k] - b->geom_pos[3 * g + k]) / ext);
    }
  }
  for (int s = 0; s < a->nsite; s++) {
    for (int k = 0; k < 3; k++) {
      worst = std::fmax(worst, std::fabs(a->site_pos[3 * s + k] - b->site_pos[3 * s + k]) / 0.1);
      worst = std::fmax(worst, std::fabs(a->site_size[3 * s + k] - b->site_size[3 * s + k]) / 0.1);
    }
  }
  for (int j = 0; j < a->njnt; j++) {
    for (int k = 0; k < 3; k++) {
      worst = std::fmax(worst, std::fabs(a->jnt_pos[3 * j + k] - b->jnt_pos[3 * j + k]) / 0.1);
    }
  }
  return worst;
}

// every primitive, inferred inertials of single- and multi-geom bodies (rotated, offset geoms),
// a fixed-mass geom, an explicit <inertial> (stays), a site and a joint anchor (the bodies'
// inertial frames off their body frames: MuJoCo 3 would compile them as simple, which geometry
// parameters are refused for there; body a slides, since a free body's position is its state)
const char* kCompileTmpl = R"(
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="a" pos="%s 0 %s">
      <joint name="a_slide" type="slide" axis="1 0 0"/>
      <geom name="a_box" type="box" pos="%s 0.01 -0.02" size="%s 0.05 %s" quat="0.9 0.1 0.3 0.2"/>
      <geom name="a_cap" type="capsule" pos="0.1 %s 0" size="%s %s" euler="0.3 1.1 0"/>
      <geom name="a_sph" type="sphere" pos="-0.1 0 0.05" size="%s"/>
      <site name="a_site" pos="%s 0 0.1"/>
      <body name="b" pos="0.3 %s 0">
        <joint name="b_hinge" type="hinge" pos="%s 0 0" axis="0 1 0"/>
        <geom name="b_cyl" type="cylinder" pos="0.1 0 0" size="%s %s" euler="0 1.5707963 0"/>
        <geom name="b_ell" type="ellipsoid" pos="0.2 0 %s" size="%s 0.02 %s" density="1000"/>
        <body name="c" pos="%s 0 0">
          <joint type="hinge" axis="0 1 0"/>
          <geom name="c_ell" type="ellipsoid" size="%s %s 0.03" quat="0.7 0.2 -0.4 0.1"/>
        </body>
      </body>
    </body>
    <body name="e" pos="0.5 0.5 0.2">
      <freejoint/>
      <geom name="e_cap" type="capsule" size="%s %s" mass="%s"/>
      <geom name="e_box" type="box" pos="0.1 0 0" size="0.03 0.03 0.03" mass="0.4"/>
    </body>
    <body name="f" pos="-0.5 0.5 0.2">
      <freejoint/>
      <geom name="f_box" type="box" pos="%s 0 0" size="%s 0.05 0.05"/>
      <inertial pos="0.001 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
    </body>
  </worldbody>
</mujoco>)";

const char* kCompileNames[] = {
    "body:a:pos[0]", "body:a:pos[2]", "geom:a_box:pos[0]", "geom:a_box:size[0]",
    "geom:a_box:size[2]", "geom:a_cap:pos[1]", "geom:a_cap:size", "geom:a_sph:size",
    "site:a_site:pos[0]", "body:b:pos[1]", "joint:b_hinge:pos[0]", "geom:b_cyl:size",
    "geom:b_ell:pos[2]", "geom:b_ell:size[0]", "geom:b_ell:size[2]", "body:c:pos[0]",
    "geom:c_ell:size[0]", "geom:c_ell:size[1]", "geom:e_cap:size", "geom:f_box:pos[0]",
    "geom:f_box:size[0]"};

TEST(DesignCompile, MatchesRecompiledMJCF) {
  std::vector<double> ref = {0.1, 0.5, 0.02, 0.06, 0.04, 0.03, 0.03, 0.08, 0.05, 0.05,
                             0.02, 0.01, 0.03, 0.05, 0.03, 0.04, 0.02, 0.3,  0.03, 0.04,
                             0.05, 0.1, 0.6, 0.02, 0.08};
  std::string xml = fill(kCompileTmpl, ref);
  char err[1000] = "";
  mjModel* m = shim_loadString(xml.c_str(), err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  Params P;
  int n = (int)(sizeof(kCompileNames) / sizeof(kCompileNames[0]));
  ASSERT_EQ(mjdiff_makeParams(m, nullptr, kCompileNames, n, &P.p, err, sizeof(err)), MJDIFF_OK)
      << err;
  ASSERT_EQ(mjdiff_designFixMass(P.p, m, "e_cap", err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(P.p);
  ASSERT_EQ(np, 24);  // capsule sizes expand to 2, the cylinder's to 2, the sphere's is 1
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, nullptr, P.p, v0.data());

  unsigned long long seed = 5;
  double worst = 0, moved = 0;
  for (int trial = 0; trial < 5; trial++) {
    std::vector<mjtNum> v(np);
    for (int i = 0; i < np; i++) v[i] = v0[i] * (0.7 + 0.6 * uniform(&seed)) + 0.01 * (i % 3 == 0);
    ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, v.data(), err, sizeof(err)), MJDIFF_OK)
        << err;
    std::vector<double> t = {v[0], v[1], v[2],  v[3],  v[4],  v[5],  v[6],  v[7],  v[8],
                             v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17],
                             v[18], v[19], v[20], v[21], 0.6,  v[22], v[23]};
    std::string edited = fill(kCompileTmpl, t);
    mjModel* r = shim_loadString(edited.c_str(), err, sizeof(err));
    ASSERT_NE(r, nullptr) << err;
    double e = compareCompiled(m, r);
    worst = std::fmax(worst, e);
    EXPECT_LE(e, 1e-9) << "trial " << trial;
    // the guard: the design moved the inertials (the model differs from the reference)
    mjModel* r0 = shim_loadString(xml.c_str(), err, sizeof(err));
    moved = std::fmax(moved, compareCompiled(m, r0));
    mj_deleteModel(r0);
    // the explicit <inertial> stays
    int f = mj_name2id(m, mjOBJ_BODY, "f");
    EXPECT_EQ(m->body_mass[f], 1.0);
    mj_deleteModel(r);
  }
  std::cout << "compile map: worst " << worst << " against the recompiled MJCF (reference moved "
            << moved << ")\n";
  EXPECT_GT(moved, 1e-2);
  mj_deleteModel(m);
}

// a body with many geoms (80 boxes; the scratch is sized by the body with the most geoms): one
// size set, the inertials equal the recompiled MJCF's
static std::string manyGeoms(double size0) {
  std::string x = "<mujoco><worldbody><body name=\"a\"><freejoint/>";
  for (int i = 0; i < 80; i++) {
    char g[200];
    std::snprintf(g, sizeof(g),
                  "<geom name=\"g%d\" type=\"box\" pos=\"%g %g 0\" size=\"%g 0.01 0.01\"/>", i,
                  0.03 * (i % 9), 0.03 * (i / 9), i == 77 ? size0 : 0.01);
    x += g;
  }
  return x + "</body></worldbody></mujoco>";
}

TEST(DesignCompile, ManyGeomsOnOneBody) {
  char err[1000] = "";
  mjModel* m = shim_loadString(manyGeoms(0.01).c_str(), err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  const char* names[] = {"geom:g77:size[0]"};
  Params P;
  ASSERT_EQ(mjdiff_makeParams(m, nullptr, names, 1, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  mjtNum v = 0.05;
  ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, &v, err, sizeof(err)), MJDIFF_OK) << err;
  mjModel* r = shim_loadString(manyGeoms(0.05).c_str(), err, sizeof(err));
  ASSERT_NE(r, nullptr) << err;
  mjModel* r0 = shim_loadString(manyGeoms(0.01).c_str(), err, sizeof(err));
  ASSERT_NE(r0, nullptr) << err;
  EXPECT_LE(compareCompiled(m, r), 1e-9);
  EXPECT_GT(compareCompiled(m, r0), 1e-3);  // the guard: the size moved the body's inertials
  mj_deleteModel(r0);
  mj_deleteModel(r);
  mj_deleteModel(m);
}

// the compile map's Jacobian (forward mode) against centred differences of the set values:
// mass, com and the inertia tensor of every body, and the principal moments by
// d lambda_k = v_k' dT v_k (their eigenvalues are distinct here), to 1e-6 relative per body (the
// set values pass through mju_eig3, ~1e-10 relative rounding, hence h = 1e-3 of the value and
// Richardson over (h, 2h))
TEST(DesignCompile, InertialJacobianMatchesDifferences) {
  std::vector<double> ref = {0.1, 0.5, 0.02, 0.06, 0.04, 0.03, 0.03, 0.08, 0.05, 0.05,
                             0.02, 0.01, 0.03, 0.05, 0.03, 0.04, 0.02, 0.3,  0.03, 0.04,
                             0.05, 0.1, 0.6, 0.02, 0.08};
  std::string xml = fill(kCompileTmpl, ref);
  char err[1000] = "";
  mjModel* m = shim_loadString(xml.c_str(), err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  Params P;
  std::vector<const char*> names(std::begin(kCompileNames), std::end(kCompileNames));
  names.push_back("body:b:scale");
  ASSERT_EQ(mjdiff_makeParams(m, nullptr, names.data(), (int)names.size(), &P.p, err,
                              sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_designFixMass(P.p, m, "e_cap", err, sizeof(err)), MJDIFF_OK);
  int np = mjdiff_paramCount(P.p);
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, nullptr, P.p, v0.data());
  // the inertial quantities q (10 per body: mass, ipos, T) and principal moments (3 per body)
  auto quantities = [&](std::vector<double>* q, std::vector<double>* lam) {
    q->clear();
    lam->clear();
    for (int b = 1; b < m->nbody; b++) {
      double T[9];
      tensor(m, b, T);
      q->push_back(m->body_mass[b]);
      for (int k = 0; k < 3; k++) q->push_back(m->body_ipos[3 * b + k]);
      const int iu[6] = {0, 1, 2, 0, 0, 1}, ju[6] = {0, 1, 2, 1, 2, 2};
      for (int k = 0; k < 6; k++) q->push_back(T[3 * iu[k] + ju[k]]);
      for (int k = 0; k < 3; k++) lam->push_back(m->body_inertia[3 * b + k]);
    }
  };
  std::vector<double> q0, l0;
  quantities(&q0, &l0);
  int nb = m->nbody - 1, inferred = 0, nonzero = 0;
  std::vector<std::vector<mjtNum>> J(nb + 1, std::vector<mjtNum>(10 * np));
  for (int b = 1; b <= nb; b++) inferred += mjdiff_designInertialJacobian(m, P.p, b, J[b].data()) == 0;
  EXPECT_EQ(inferred, 4);  // a, b, c, e (least-squares masses); f has an explicit <inertial>
  double worst = 0, worstLam = 0;
  for (int i = 0; i < np; i++) {
    // Richardson over (h, 2h): the values pass through mju_eig3 and back (rounding ~1e-12 of T),
    // so h stays large and the h^2 term is cancelled instead
    double h = 1e-3 * std::fmax(std::fabs(v0[i]), 0.01);
    std::vector<double> qp, lp, qm, lm;
    for (int j = 0; j < 2; j++) {
      std::vector<mjtNum> v = v0;
      std::vector<double> a, la, c, lc;
      v[i] = v0[i] + h * (1 + j);
      ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, v.data(), err, sizeof(err)), MJDIFF_OK);
      quantities(&a, &la);
      v[i] = v0[i] - h * (1 + j);
      ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, v.data(), err, sizeof(err)), MJDIFF_OK);
      quantities(&c, &lc);
      if (j == 0) {
        qp = a, lp = la, qm = c, lm = lc;
        continue;
      }
      // qp - qm := the extrapolated difference (4 D(h) - D(2h)) / 3 times 2h
      for (size_t r = 0; r < qp.size(); r++) {
        double d1 = qp[r] - qm[r], d2 = (a[r] - c[r]) / 2;
        qp[r] = (4 * d1 - d2) / 3;
        qm[r] = 0;
      }
      for (size_t r = 0; r < lp.size(); r++) {
        double d1 = lp[r] - lm[r], d2 = (la[r] - lc[r]) / 2;
        lp[r] = (4 * d1 - d2) / 3;
        lm[r] = 0;
      }
    }
    for (int b = 1; b <= nb; b++) {
      double scale = 1e-300, e = 0, T[9];
      // T's scale: the body's trace; mass and com their own
      for (int r = 0; r < 10; r++) {
        double fd = (qp[10 * (b - 1) + r] - qm[10 * (b - 1) + r]) / (2 * h);
        double an = J[b][np * r + i];
        double sc = r == 0 ? q0[10 * (b - 1)] : r < 4 ? 0.1 : q0[10 * (b - 1) + 4] + q0[10 * (b - 1) + 5];
        scale = std::fmax(scale, sc);
        e = std::fmax(e, std::fabs(an - fd) / sc);
        if (std::fabs(an - fd) / sc > 1e-6 && getenv("DESIGN_DEBUG")) {
          std::cout << mjdiff_paramName(P.p, i) << " body " << b << " row " << r << ": " << an
                    << " " << fd << "\n";
        }
        nonzero += an != 0;
      }
      worst = std::fmax(worst, e);
      EXPECT_LE(e, 1e-6) << mjdiff_paramName(P.p, i) << " body " << b;
      // principal moments: v_k' dT v_k at the reference axes
      ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK);
      mjtNum R[9];
      mju_quat2Mat(R, m->body_iquat + 4 * b);
      const int iu[6] = {0, 1, 2, 0, 0, 1}, ju[6] = {0, 1, 2, 1, 2, 2};
      for (int k = 0; k < 6; k++) {
        T[3 * iu[k] + ju[k]] = T[3 * ju[k] + iu[k]] = J[b][np * (4 + k) + i];
      }
      for (int k = 0; k < 3 && m->body_geomnum[b] > 1; k++) {
        double dl = 0;
        for (int r = 0; r < 3; r++) {
          for (int c = 0; c < 3; c++) dl += R[3 * r + k] * T[3 * r + c] * R[3 * c + k];
        }
        double fd = (lp[3 * (b - 1) + k] - lm[3 * (b - 1) + k]) / (2 * h);
        double sc = q0[10 * (b - 1) + 4] + q0[10 * (b - 1) + 5];
        worstLam = std::fmax(worstLam, std::fabs(dl - fd) / sc);
        EXPECT_LE(std::fabs(dl - fd) / sc, 1e-6) << mjdiff_paramName(P.p, i) << " body " << b;
      }
    }
    ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK);
  }
  std::cout << "compile-map Jacobian: worst " << worst << ", principal moments " << worstLam
            << " (" << nonzero << " nonzero entries)\n";
  EXPECT_GT(nonzero, 100);
  mj_deleteModel(m);
}

TEST(DesignCompile, ScaleMatchesRecompiledMJCF) {
  // the hopper's links through fromto: a scale c of a link is its fromto and child pos times c
  const char* tmpl = R"(
<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <body name="torso" pos="0 0 1.25">
      <freejoint/>
      <geom fromto="0 0 0.2 0 0 -0.2" size="0.05" type="capsule"/>
      <body name="thigh" pos="0 0 -0.2">
        <joint axis="0 1 0"/>
        <geom fromto="0 0 0 0 0 %s" size="0.05" type="capsule"/>
        <site name="knee" pos="0 0 %s"/>
        <body name="leg" pos="0 0 %s">
          <joint axis="0 1 0"/>
          <geom fromto="0 0 0 0 0 %s" size="0.04" type="capsule"/>
          <site name="shin" type="capsule" fromto="0 0 0 0 0 %s" size="0.01"/>
          <body name="foot" pos="0 0 %s">
            <joint axis="0 1 0"/>
            <geom fromto="%s 0 0 %s 0 0" size="0.06" type="capsule"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>)";
  std::string xml = fill(tmpl, {-0.45, -0.45, -0.45, -0.5, -0.4, -0.5, -0.13, 0.26});
  char err[1000] = "";
  mjModel* m = shim_loadString(xml.c_str(), err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  Params P;
  const char* names[] = {"body:thigh:scale", "body:leg:scale", "body:foot:scale"};
  ASSERT_EQ(mjdiff_makeParams(m, nullptr, names, 3, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> v(3);
  mjdiff_getParamValues(m, nullptr, P.p, v.data());
  for (int i = 0; i < 3; i++) EXPECT_NEAR(v[i], 1, 1e-15);
  double worst = 0;
  for (double c : {0.8, 1.1, 1.35}) {
    std::vector<mjtNum> s = {c, 2 - c, 0.5 + c / 2};
    ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, s.data(), err, sizeof(err)), MJDIFF_OK);
    std::vector<mjtNum> back(3);
    mjdiff_getParamValues(m, nullptr, P.p, back.data());
    for (int i = 0; i < 3; i++) EXPECT_NEAR(back[i], s[i], 1e-14);
    std::string edited = fill(tmpl, {-0.45 * s[0], -0.45 * s[0], -0.45 * s[0], -0.5 * s[1],
                                     -0.4 * s[1], -0.5 * s[1], -0.13 * s[2], 0.26 * s[2]});
    mjModel* r = shim_loadString(edited.c_str(), err, sizeof(err));
    ASSERT_NE(r, nullptr) << err;
    double e = compareCompiled(m, r);
    worst = std::fmax(worst, e);
    EXPECT_LE(e, 1e-9) << "scale " << c;
    mj_deleteModel(r);
  }
  std::cout << "scales: worst " << worst << "\n";
  mj_deleteModel(m);
}

//---------------------------------- bad input -----------------------------------------------------

// a scale beside explicit values of what it moves, and explicit inertials beside geometry: every
// parameter reads back what was set (review of the first version: the scale read itself back
// from an explicitly set child position, and geometry recomputed an explicitly set mass)
TEST(DesignParams, OverlappingSelectionsReadBack) {
  const char* xml = R"(
<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="j0" type="hinge" axis="0 1 0"/>
      <geom name="arm_geom" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="hand" pos="0.3 0 0">
        <joint type="hinge" axis="0 1 0"/>
        <geom name="hand_geom" type="sphere" pos="0.05 0 0" size="0.04"/>
      </body>
    </body>
  </worldbody>
</mujoco>)";
  char err[1000] = "";
  mjModel* m = shim_loadString(xml, err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  // the scale and the child position it would read back from
  {
    Params P;
    const char* names[] = {"body:arm:scale", "body:hand:pos[0]", "body:hand:mass",
                           "geom:hand_geom:size"};
    ASSERT_EQ(mjdiff_makeParams(m, nullptr, names, 4, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_paramCount(P.p), 4);
    std::vector<mjtNum> v = {1.3, 0.25, 0.7, 0.05}, r(4);
    ASSERT_EQ(mjdiff_setParamValues(m, nullptr, P.p, v.data(), err, sizeof(err)), MJDIFF_OK)
        << err;
    mjdiff_getParamValues(m, nullptr, P.p, r.data());
    for (int i = 0; i < 4; i++) EXPECT_NEAR(r[i], v[i], 1e-12) << mjdiff_paramName(P.p, i);
    int hand = mj_name2id(m, mjOBJ_BODY, "hand");
    EXPECT_EQ(m->body_mass[hand], 0.7);             // not recomputed from the new size
    EXPECT_EQ(m->body_pos[3 * hand], 0.25);         // the explicit value over the scale
    int ag = mj_name2id(m, mjOBJ_GEOM, "arm_geom");
    EXPECT_NEAR(m->geom_size[3 * ag + 1], 1.3 * 0.15, 1e-12);  // the scale moved the capsule
  }
  // a scale whose every quantity is set explicitly cannot be read back: refused, named
  {
    mjdiffParams* p = nullptr;
    const char* names[] = {"body:arm:scale", "body:hand:pos", "geom:arm_geom:pos",
                           "geom:arm_geom:size"};
    EXPECT_EQ(mjdiff_makeParams(m, nullptr, names, 4, &p, err, sizeof(err)),
              MJDIFF_ERR_UNSUPPORTED);
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::string(err).find("body:arm:scale"), std::string::npos) << err;
  }
  mj_deleteModel(m);
}

TEST(DesignParams, RefusesWhatCannotMove) {
  const char* xml = R"(
<mujoco>
  <asset>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale="0.1 0.1 0.1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="a" pos="0 0 0.5">
      <freejoint name="afree"/>
      <geom name="m" type="mesh" mesh="tet"/>
      <geom name="s" type="sphere" size="0.05"/>
    </body>
  </worldbody>
</mujoco>)";
  char err[1000] = "";
  mjModel* m = shim_loadString(xml, err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  struct {
    const char* name;
    mjdiffStatus st;
    const char* says;
  } cases[] = {
      {"geom:m:size", MJDIFF_ERR_UNSUPPORTED, "mesh"},
      {"geom:m:size[0]", MJDIFF_ERR_UNSUPPORTED, "mesh file"},
      {"geom:m:pos", MJDIFF_ERR_UNSUPPORTED, "mesh"},
      {"geom:floor:size", MJDIFF_ERR_UNSUPPORTED, "plane"},
      {"body:world:pos", MJDIFF_ERR_UNSUPPORTED, "world body"},
      {"body:world:scale", MJDIFF_ERR_UNSUPPORTED, "world body"},
      {"body:a:pos", MJDIFF_ERR_UNSUPPORTED, "free joint"},  // its position is the state
      {"joint:afree:pos", MJDIFF_ERR_UNSUPPORTED, "free joint"},
      {"geom:s:size[1]", MJDIFF_ERR_NAME, "out of range"},
      {"site:nosuch:pos", MJDIFF_ERR_NAME, "nosuch"},
  };
  for (const auto& c : cases) {
    mjdiffParams* p = nullptr;
    err[0] = 0;
    EXPECT_EQ(mjdiff_makeParams(m, nullptr, &c.name, 1, &p, err, sizeof(err)), c.st) << c.name;
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::string(err).find(c.name), std::string::npos) << err;
    EXPECT_NE(std::string(err).find(c.says), std::string::npos) << err;
  }
  // values: a size must stay positive, nothing changes on error
  Params P;
  const char* ok[] = {"geom:s:size", "geom:s:pos"};
  ASSERT_EQ(mjdiff_makeParams(m, nullptr, ok, 2, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> v = {-0.01, 0, 0, 1};
  EXPECT_EQ(mjdiff_setParamValues(m, nullptr, P.p, v.data(), err, sizeof(err)), MJDIFF_ERR_VALUE);
  EXPECT_NE(std::string(err).find("geom:s:size"), std::string::npos) << err;
  EXPECT_EQ(m->geom_size[3 * mj_name2id(m, mjOBJ_GEOM, "s")], 0.05);
  EXPECT_EQ(m->geom_pos[3 * mj_name2id(m, mjOBJ_GEOM, "s") + 2], 0);
  mj_deleteModel(m);
}

//---------------------------------- rollout gradients ---------------------------------------------

struct RolloutCase {
  const char* name;
  const char* xml;             // inline, or
  const char* file;            // a bundled model
  std::vector<const char*> params;
  std::vector<const char*> fixmass;
  int T, warm;
};

// terminal loss c . (x_T - x_ref)
double rolloutLoss(const mjModel* m, mjData* d, const mjdiffModel* s, mjdiffRollout* r,
                   const std::vector<mjtNum>& x0, const std::vector<mjtNum>& ctrl,
                   const std::vector<mjtNum>& c, const std::vector<mjtNum>& xref, bool* ok,
                   int* steps_in_contact = nullptr) {
  char err[500];
  int T = mjdiff_rolloutHorizon(r), nx = m->nq + m->nv + m->na;
  std::vector<mjtNum> states(steps_in_contact ? (T + 1) * nx : 0);
  shim_setState(m, d, x0.data());
  *ok = mjdiff_rolloutForward(m, d, s, r, ctrl.data(), nullptr, nullptr,
                              steps_in_contact ? states.data() : nullptr, nullptr, err,
                              sizeof(err)) == MJDIFF_OK;
  if (steps_in_contact) {  // the states of the rollout with contacts (then back to x_T)
    std::vector<mjtNum> full = testutil::getState(m, d);
    *steps_in_contact = 0;
    for (int t = 0; t <= T; t++) {
      mju_copy(d->qpos, states.data() + nx * t, m->nq);
      mju_copy(d->qvel, states.data() + nx * t + m->nq, m->nv);
      mjdiff_forward(m, d, s, err, sizeof(err));
      *steps_in_contact += d->ncon > 0;
    }
    shim_setState(m, d, full.data());
  }
  std::vector<mjtNum> xT(m->nq + m->nv + m->na), dx(2 * m->nv + m->na);
  testutil::getPosVelAct(m, d, xT.data());
  testutil::tangentDiff(m, xref, xT, 1, dx.data());
  double L = 0;
  for (size_t i = 0; i < dx.size(); i++) L += c[i] * dx[i];
  return L;
}

void checkRollout(const RolloutCase& rc, int nsample, double tol) {
  Sim sim(rc.xml, rc.file ? shim_modelPath(rc.file) : nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
  Params P;
  ASSERT_EQ(mjdiff_makeParams(m, s, rc.params.data(), (int)rc.params.size(), &P.p, err,
                              sizeof(err)), MJDIFF_OK) << err;
  for (const char* g : rc.fixmass) {
    ASSERT_EQ(mjdiff_designFixMass(P.p, m, g, err, sizeof(err)), MJDIFF_OK) << err;
  }
  int np = mjdiff_paramCount(P.p), nv = m->nv, na = m->na, nu = m->nu, ndx = 2 * nv + na;
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, P.p, v0.data());
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, s, P.p, rc.T, nullptr, &r, err, sizeof(err)), MJDIFF_OK) << err;

  unsigned long long seed = 99;
  int compared = 0, total = 0, contacts = 0;
  double worst = 0, scaleMax = 0;
  for (int k = 0; k < nsample; k++) {
    ASSERT_EQ(mjdiff_setParamValues(m, s, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_TRUE(testutil::simulateRandom(m, d, s, &seed, rc.warm + 13 * k)) << rc.name;
    std::vector<mjtNum> x0 = testutil::getState(m, d);

    std::vector<mjtNum> ctrl(rc.T * nu);
    for (auto& u : ctrl) u = 0.8 * (uniform(&seed) - 0.5);
    // x_ref = x_T at the reference values: L = 0 there and dL/dx_T = c exactly (the tangent
    // difference's Jacobian is the identity at zero)
    std::vector<mjtNum> c(ndx), xref(m->nq + nv + na);
    for (auto& ci : c) ci = uniform(&seed) - 0.5;
    bool ok;
    int inContact = 0;
    rolloutLoss(m, d, s, r, x0, ctrl, c, xref, &ok, &inContact);
    ASSERT_TRUE(ok);
    testutil::getPosVelAct(m, d, xref.data());
    contacts += inContact;
    std::vector<mjtNum> dLdx((rc.T + 1) * ndx, 0), grad(np);
    std::memcpy(dLdx.data() + rc.T * ndx, c.data(), sizeof(mjtNum) * ndx);
    ASSERT_EQ(mjdiff_rolloutBackward(m, d, s, r, dLdx.data(), nullptr, nullptr, nullptr, nullptr,
                                     nullptr, grad.data(), err, sizeof(err)), MJDIFF_OK) << err;
    double gmax = 0;
    for (double g : grad) gmax = std::fmax(gmax, std::fabs(g));
    scaleMax = std::fmax(scaleMax, gmax);
    for (int i = 0; i < np; i++) {
      total++;
      double h = 1e-5 * std::fmax(std::fabs(v0[i]), 0.1), D[3];
      for (int j = 0; j < 3; j++) {
        double hj = h * (1 << j), Lp, Lm;
        std::vector<mjtNum> v = v0;
        v[i] = v0[i] + hj;
        EXPECT_EQ(mjdiff_setParamValues(m, s, P.p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
        Lp = rolloutLoss(m, d, s, r, x0, ctrl, c, xref, &ok);
        v[i] = v0[i] - hj;
        EXPECT_EQ(mjdiff_setParamValues(m, s, P.p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
        Lm = rolloutLoss(m, d, s, r, x0, ctrl, c, xref, &ok);
        D[j] = (Lp - Lm) / (2 * hj);
      }
      ASSERT_EQ(mjdiff_setParamValues(m, s, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK);
      double R1 = testutil::richardson(D[0], D[1]), R2 = testutil::richardson(D[1], D[2]);
      double scale = std::fmax(std::fabs(R1), 1e-3 * gmax);
      double noise = std::fabs(R1 - R2) / scale, e = std::fabs(grad[i] - R1) / scale;
      if (noise > tol) {
        std::cout << rc.name << " sample " << k << " " << mjdiff_paramName(P.p, i)
                  << " skipped: differences disagree by " << noise << "\n";
        continue;
      }
      compared++;
      worst = std::fmax(worst, e);
      EXPECT_LE(e, tol) << rc.name << " sample " << k << " " << mjdiff_paramName(P.p, i)
                        << ": adjoint " << grad[i] << " fd " << R1;
    }
  }
  mjdiff_freeRollout(r);
  std::cout << rc.name << ": compared " << compared << "/" << total << " gradients, worst " << worst
            << " (" << contacts << " of " << nsample * (rc.T + 1) << " states in contact; |grad| up to "
            << scaleMax << ")\n";
  EXPECT_GT(scaleMax, 0);
  EXPECT_GT(contacts, 0);
  EXPECT_GE(compared, (int)(0.8 * total));
}

const char* kBlocks = R"(
<mujoco>
  <option timestep="0.002"/>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="5000"/>
    <numeric name="mjdiff_contact_damping" data="20"/>
    <numeric name="mjdiff_contact_width" data="0.005"/>
    <numeric name="mjdiff_friction_speed" data="0.1"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <site name="anchor" pos="0.3 0.2 0.8"/>
    <body name="arm" pos="0 0 0.35">
      <joint name="yaw" type="hinge" axis="0 0 1" damping="0.1"/>
      <joint name="pitch" type="hinge" pos="0.01 0 0" axis="0 1 0" damping="0.1"/>
      <geom name="link" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <site name="tip" pos="0.3 0 0"/>
      <body name="hand" pos="0.3 0 0">
        <joint name="wrist" type="hinge" axis="0 1 0" damping="0.05"/>
        <geom name="paddle" type="box" pos="0.05 0 -0.1" size="0.05 0.03 0.1"/>
        <geom name="knob" type="sphere" pos="0.05 0 -0.2" size="0.04"/>
      </body>
    </body>
    <body name="ball" pos="0.35 0 0.05">
      <freejoint/>
      <geom name="ball" type="sphere" pos="0.001 0 0" size="0.05" condim="3"/>
    </body>
    <body name="can" pos="-0.2 0.2 0.06">
      <freejoint/>
      <geom name="can" type="cylinder" size="0.04 0.06"/>
      <geom name="lid" type="ellipsoid" pos="0 0 0.06" size="0.04 0.03 0.02"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="spring" stiffness="20" springlength="0.4">
      <site site="anchor"/>
      <site site="tip"/>
    </spatial>
  </tendon>
  <actuator>
    <motor joint="yaw" gear="2"/>
    <motor joint="pitch" gear="4"/>
    <motor joint="wrist" gear="2"/>
  </actuator>
</mujoco>)";

TEST(DesignRollout, BlocksEveryParameterKind) {
  RolloutCase rc{"blocks", kBlocks, nullptr,
                 {"body:hand:pos[0]", "body:hand:pos[2]", "joint:pitch:pos[0]",
                  "geom:paddle:pos[2]", "geom:paddle:size", "geom:knob:size", "geom:ball:size",
                  "geom:can:size", "geom:lid:size[2]", "site:tip:pos[0]", "site:anchor:pos[2]",
                  "body:arm:scale", "geom:link:size"},
                 {}, 60, 150};
  checkRollout(rc, 3, 1e-4);
}

// the implicit smooth step: the smooth forces' columns at X', the others' at X (step_d.c)
TEST(DesignRollout, BlocksImplicitStep) {
  std::string xml = kBlocks;
  xml.replace(xml.find("<custom>"), 8,
              "<custom>\n    <numeric name=\"mjdiff_integrator\" data=\"1\"/>");
  RolloutCase rc{"blocks implicit", xml.c_str(), nullptr,
                 {"body:hand:pos[0]", "joint:pitch:pos[0]", "geom:paddle:size", "geom:ball:size",
                  "geom:can:size", "site:tip:pos[0]", "body:arm:scale"},
                 {}, 60, 150};
  checkRollout(rc, 2, 1e-4);
}

TEST(DesignRollout, HopperLinks) {
  RolloutCase rc{"hopper", nullptr, "hopper.xml",
                 {"body:thigh:scale", "body:leg:scale", "body:foot:scale", "geom:foot_geom:size",
                  "body:thigh:pos[2]"},
                 {"torso_geom", "thigh_geom", "leg_geom", "foot_geom"}, 80, 45};
  checkRollout(rc, 3, 1e-4);
}

// The gradient grad (np) of loss() in the parameters of p against Richardson-extrapolated central
// differences (steps h, 2h, 4h, h = 1e-5 max(|p_i|, 0.1)), relative to max(|fd|, 1e-3 max |grad|),
// allowing twice the spread of the two extrapolations; returns the worst relative error. m and s
// are left at the values v0.
double checkParamGradient(mjModel* m, mjdiffModel* s, const mjdiffParams* p,
                          const std::vector<mjtNum>& v0, const std::vector<mjtNum>& grad,
                          const std::function<double()>& loss, int sample) {
  char err[1000];
  int np = mjdiff_paramCount(p);
  double gmax = 0, worst = 0;
  for (double g : grad) gmax = std::fmax(gmax, std::fabs(g));
  for (int i = 0; i < np; i++) {
    double h = 1e-5 * std::fmax(std::fabs(v0[i]), 0.1), D[3];
    for (int j = 0; j < 3; j++) {
      double hj = h * (1 << j);
      std::vector<mjtNum> v = v0;
      v[i] = v0[i] + hj;
      EXPECT_EQ(mjdiff_setParamValues(m, s, p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
      double Lp = loss();
      v[i] = v0[i] - hj;
      EXPECT_EQ(mjdiff_setParamValues(m, s, p, v.data(), err, sizeof(err)), MJDIFF_OK) << err;
      D[j] = (Lp - loss()) / (2 * hj);
    }
    EXPECT_EQ(mjdiff_setParamValues(m, s, p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
    double R1 = testutil::richardson(D[0], D[1]), R2 = testutil::richardson(D[1], D[2]);
    double scale = std::fmax(std::fabs(R1), 1e-3 * gmax);
    double e = std::fmax(std::fabs(grad[i] - R1) - 2 * std::fabs(R1 - R2), 0.0) / scale;
    worst = std::fmax(worst, e);
    EXPECT_LE(e, 1e-5) << "sample " << sample << " " << mjdiff_paramName(p, i) << ": adjoint "
                       << grad[i] << " fd " << R1 << " fd2 " << R2;
  }
  return worst;
}

// A loss on the readings of every step, L = sum_t w_t . s_t, with sensors that read what the
// parameters move at the fixed state (a moved site's frame, a geometry's frame, the subtree com
// under a moved body, a touch sensor on a resized geom): the sweep's readings' parameter columns
// (sensor_p.c) against Richardson-extrapolated differences of whole rollouts. Without those
// columns the gradient misses the direct term (checked by hand: relative errors up to 2, a
// mass column 5e-4 off).
TEST(DesignRollout, SensorReadingsOfMovedGeometry) {
  std::string xml = kBlocks;
  xml.replace(xml.find("</mujoco>"), 9, R"(  <sensor>
    <framepos objtype="site" objname="tip"/>
    <framepos objtype="geom" objname="knob" reftype="site" refname="anchor"/>
    <subtreecom body="arm"/>
    <framelinvel objtype="site" objname="tip"/>
  </sensor>
</mujoco>)");
  // the touch sensor needs a site on the ball
  xml.replace(xml.find(R"(<geom name="ball")"), 0, R"(<site name="bsite" size="0.06"/>
      )");
  xml.replace(xml.find("  </sensor>"), 0, R"(    <touch site="bsite"/>
)");
  Sim sim(xml.c_str(), nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
  const char* names[] = {"site:tip:pos[0]", "geom:knob:pos[2]", "geom:knob:size",
                         "body:hand:pos[0]", "body:arm:scale", "geom:ball:size",
                         "site:anchor:pos[2]", "body:hand:mass", "joint:wrist:damping"};
  Params P;
  ASSERT_EQ(mjdiff_makeParams(m, s, names, 9, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(P.p), nu = m->nu, ns = m->nsensordata, T = 50;
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, P.p, v0.data());
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, s, P.p, T, nullptr, &r, err, sizeof(err)), MJDIFF_OK) << err;
  unsigned long long seed = 7;
  double worst = 0;
  int touching = 0;
  for (int k = 0; k < 3; k++) {
    ASSERT_EQ(mjdiff_setParamValues(m, s, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_TRUE(testutil::simulateRandom(m, d, s, &seed, 150 + 13 * k));
    std::vector<mjtNum> x0 = testutil::getState(m, d);
    std::vector<mjtNum> ctrl(T * nu), w(T * ns), sd(T * ns);
    for (auto& u : ctrl) u = 0.8 * (uniform(&seed) - 0.5);
    for (auto& wi : w) wi = uniform(&seed) - 0.5;
    auto loss = [&](bool record) {
      shim_setState(m, d, x0.data());
      EXPECT_EQ(mjdiff_rolloutForward(m, d, s, r, ctrl.data(), nullptr, nullptr, nullptr,
                                      sd.data(), err, sizeof(err)), MJDIFF_OK) << err;
      double L = 0;
      for (int i = 0; i < T * ns; i++) L += w[i] * sd[i];
      if (record) {
        int t0 = m->sensor_adr[m->nsensor - 1];
        for (int t = 0; t < T; t++) touching += sd[(size_t)ns * t + t0] > 0;
      }
      return L;
    };
    loss(true);
    std::vector<mjtNum> grad(np);
    ASSERT_EQ(mjdiff_rolloutBackward(m, d, s, r, nullptr, nullptr, w.data(), nullptr, nullptr,
                                     nullptr, grad.data(), err, sizeof(err)), MJDIFF_OK) << err;
    worst = std::fmax(worst, checkParamGradient(m, s, P.p, v0, grad,
                                                [&] { return loss(false); }, k));
  }
  mjdiff_freeRollout(r);
  std::cout << "readings of moved geometry: worst " << worst << " (" << touching
            << " steps with a touch reading)\n";
  EXPECT_GT(touching, 0);
}

//---------------------------------- analytic geometry columns -------------------------------------

// DrDp's columns of geom sizes and positions (params_d.c: contacts through geom_d.c's size and
// pose Jacobians, inertials through the compile map's Jacobian), and the zero columns of sites no
// tendon or actuator reads and of slide anchors, against design_d.c's centred
// differences of the residual at the same state, for each part of the forces (the implicit step
// uses the smooth part alone), at random states with contacts. Compared per column relative to
// max(|column|, 1e-4 of the largest geometry column at that state), less the differences' own
// rounding (10 eps |r| / h).
void checkGeomColumns(const char* name, const char* xml, const char* file,
                      std::vector<const char*> names, int nsample, int warm, double tol) {
  Sim sim(xml, file ? shim_modelPath(file) : nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
#if mjVERSION_HEADER >= 3000000
  // 3.x refuses geometry on bodies it compiled as simple (a free box alone on its body): those
  // entries are left out there, and named
  std::vector<const char*> kept;
  for (const char* n : names) {
    mjdiffParams* one = nullptr;
    mjdiffStatus st = mjdiff_makeParams(m, s, &n, 1, &one, err, sizeof(err));
    mjdiff_freeParams(one);
    if (st != MJDIFF_OK && std::strstr(err, "simple")) {
      std::cout << name << ": " << n << " left out on MuJoCo 3 (" << err << ")\n";
      continue;
    }
    kept.push_back(n);
  }
  names = kept;
#endif
  Params P;
  ASSERT_EQ(mjdiff_makeParams(m, s, names.data(), (int)names.size(), &P.p, err, sizeof(err)),
            MJDIFF_OK) << err;
  int np = mjdiff_paramCount(P.p), nv = m->nv;
  std::vector<mjtNum> A((size_t)nv * np), D((size_t)nv * np);
  unsigned long long seed = 5;
  double worst = 0, raw = 0;
  int contacts = 0, compared = 0;
  for (int k = 0; k < nsample; k++) {
    EXPECT_TRUE(testutil::simulateRandom(m, d, s, &seed, warm + 7 * k)) << name;
    // applied wrenches on every body (they act at the moving coms and through the moving axes)
    for (int b = 1; b < m->nbody; b++) {
      for (int c = 0; c < 6; c++) d->xfrc_applied[6 * b + c] = 2 * (uniform(&seed) - 0.5);
    }
    ASSERT_EQ(mjdiff_forward(m, d, s, err, sizeof(err)), MJDIFF_OK) << err;
    contacts += d->ncon;
    std::vector<mjtNum> acc(d->qacc, d->qacc + nv);
    for (int parts = 1; parts <= 3; parts++) {
      mjdiff_designSetDifferenced(P.p, 0);
      ASSERT_EQ(mjdiff_paramDerivativeParts(m, d, s, P.p, parts, acc.data(), 0, A.data(),
                                            nullptr), 0);
      mjdiff_designSetDifferenced(P.p, 1);
      ASSERT_EQ(mjdiff_paramDerivativeParts(m, d, s, P.p, parts, acc.data(), 0, D.data(),
                                            nullptr), 0);
      double big = 0, R = 0;
      for (double x : D) big = std::fmax(big, std::fabs(x));
      for (int r = 0; r < nv; r++) {
        R = std::fmax(R, std::fabs(d->qfrc_smooth[r]) + std::fabs(d->qfrc_bias[r]));
      }
      std::vector<mjtNum> v(np);
      mjdiff_getParamValues(m, s, P.p, v.data());
      for (int i = 0; i < np; i++) {
        // the differences' rounding: 10 eps R / h with R the residual's size, h their step
        double h = 1e-6 * std::fmax(std::fabs(v[i]), 0.1);
        double e = 0, scale = 1e-4 * big + 1e-12, rounding = 10 * 2.2e-16 * R / h;
        for (int r = 0; r < nv; r++) {
          double a = A[(size_t)np * r + i], f = D[(size_t)np * r + i];
          e = std::fmax(e, std::fabs(a - f));
          scale = std::fmax(scale, std::fabs(f));
        }
        raw = std::fmax(raw, e / scale);
        e = std::fmax(e - rounding, 0.0);
        compared++;
        worst = std::fmax(worst, e / scale);
        EXPECT_LE(e / scale, tol) << name << " sample " << k << " parts " << parts << " "
                                  << mjdiff_paramName(P.p, i) << ": error " << e << " of "
                                  << scale;
      }
    }
  }
  std::cout << name << ": " << compared << " columns, worst " << worst << " beyond the rounding "
            << "allowance, " << raw << " before it (" << contacts << " contacts over " << nsample
            << " states)\n";
  EXPECT_GT(contacts, 0) << name;
  for (int b = 1; b < m->nbody; b++) mju_zero(d->xfrc_applied + 6 * b, 6);
}

TEST(DesignColumns, GeomSizeAndPositionAnalyticMatchDifferences) {
  checkGeomColumns("blocks", kBlocks, nullptr,
                   {"geom:paddle:pos", "geom:paddle:size", "geom:knob:size", "geom:knob:pos",
                    "geom:ball:size", "geom:ball:pos", "geom:can:size", "geom:can:pos",
                    "geom:lid:size", "geom:lid:pos", "geom:link:size", "geom:link:pos",
                    "body:hand:pos", "body:arm:pos"},
                   6, 150, 1e-5);
  checkGeomColumns("arm_box", nullptr, "arm_box.xml",
                   {"geom:fingertip:size", "geom:fingertip:pos", "site:ee:pos", "body:link7:pos",
                    "body:link4:pos", "body:link7:scale", "body:link5:scale"}, 4, 100, 1e-5);
  checkGeomColumns("hopper", nullptr, "hopper.xml",
                   {"geom:foot_geom:size", "geom:foot_geom:pos", "geom:torso_geom:size",
                    "body:thigh:pos", "body:foot:pos"}, 4, 45, 1e-5);
}

// body scales (children's translations, the body's geoms and inertials), with explicit values that
// override part of a scale (the foot capsule's half-length, the paddle's size)
TEST(DesignColumns, BodyScalesAnalyticMatchDifferences) {
  checkGeomColumns("blocks scales", kBlocks, nullptr,
                   {"body:hand:scale", "geom:paddle:size", "geom:knob:pos[0]"}, 6, 150, 1e-5);
  checkGeomColumns("hopper scales", nullptr, "hopper.xml",
                   {"body:thigh:scale", "body:leg:scale", "body:foot:scale", "body:torso:scale",
                    "geom:foot_geom:size"}, 4, 45, 1e-5);
}

// joint anchors off their bodies' origins: a ball joint, two hinges in one body (the second's
// anchor moves after the first's rotation), and scales of bodies with such anchors; contacts of
// the moved links with the floor and a free box
const char* kAnchors = R"(
<mujoco>
  <option timestep="0.002"/>
  <default><joint armature="0.02"/></default>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="2000"/>
    <numeric name="mjdiff_contact_damping" data="20"/>
    <numeric name="mjdiff_contact_width" data="0.005"/>
    <numeric name="mjdiff_friction_speed" data="0.1"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="base" pos="0 0 0.3">
      <joint name="ball" type="ball" pos="0.02 -0.01 0.03" damping="0.2"/>
      <geom name="upper" type="capsule" fromto="0 0 0 0.25 0 -0.1" size="0.03"/>
      <body name="fore" pos="0.25 0 -0.1">
        <joint name="h1" type="hinge" axis="0 1 0" pos="0.01 0.02 0" damping="0.1"/>
        <joint name="h2" type="hinge" axis="1 0 0.3" pos="-0.02 0 0.015" damping="0.1"/>
        <geom name="forearm" type="capsule" fromto="0 0 0 0.2 0 -0.15" size="0.025"/>
        <geom name="fist" type="box" pos="0.2 0 -0.17" size="0.03 0.04 0.02"/>
      </body>
    </body>
    <body name="crate" pos="0.4 0.05 0.04">
      <freejoint/>
      <geom name="crate" type="box" size="0.04 0.05 0.04" pos="0.002 0.001 0"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="h1" gear="3"/>
    <motor joint="h2" gear="2"/>
  </actuator>
</mujoco>)";

TEST(DesignColumns, JointAnchorsAnalyticMatchDifferences) {
  checkGeomColumns("anchors", kAnchors, nullptr,
                   {"joint:ball:pos", "joint:h1:pos", "joint:h2:pos", "body:fore:pos"}, 6, 150,
                   1e-5);
  checkGeomColumns("anchor scales", kAnchors, nullptr, {"body:fore:scale", "body:base:scale"}, 6,
                   150, 1e-5);
  checkGeomColumns("hopper anchors", nullptr, "hopper.xml",
                   {"joint:thigh_joint:pos", "joint:foot_joint:pos", "joint:rooty:pos"}, 4, 45,
                   1e-5);
}

// found by review: a body with slide, hinge, hinge and ball joints (the ball after two hinges),
// children with off-origin hinge and ball anchors, moved geoms against a static table and each
// other (self-contact inside the moved subtree), scales with per-component overrides
const char* kMixed = R"(
<mujoco>
  <option timestep="0.0005"/>
  <default><joint armature="0.02" damping="0.1"/></default>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="2000"/>
    <numeric name="mjdiff_contact_damping" data="20"/>
    <numeric name="mjdiff_contact_width" data="0.005"/>
    <numeric name="mjdiff_friction_speed" data="0.1"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <geom name="table" type="box" pos="0.15 0 0" size="0.12 0.3 0.1"/>
    <body name="root" pos="0 0 0.34">
      <joint name="r0" type="hinge" axis="0 0.3 1" pos="0.01 0.02 0"/>
      <geom name="rootg" type="sphere" size="0.03" pos="0.01 0 0"/>
      <body name="mid" pos="0.1 0.02 -0.05" quat="0.9 0.1 0.2 0.1">
        <joint name="s1" type="slide" axis="0 0.3 1" pos="0.02 0 0"/>
        <joint name="h1" type="hinge" axis="0 1 0.2" pos="0.02 -0.01 0.03"/>
        <joint name="h2" type="hinge" axis="1 0 0.3" pos="0.01 0.03 -0.02"/>
        <joint name="b1" type="ball" pos="-0.03 0.02 0.01"/>
        <geom name="midg" type="capsule" fromto="0 0 0 0.15 0 -0.1" size="0.025"/>
        <body name="c1" pos="0.15 0 -0.1">
          <joint name="hc1" type="hinge" axis="0 1 0" pos="0.02 0 0.01"/>
          <geom name="c1g" type="capsule" fromto="0 0 0 0.1 0 -0.12" size="0.02"/>
        </body>
        <body name="c2" pos="0.12 0.04 -0.1">
          <joint name="bc2" type="ball" pos="0.01 -0.02 0.0"/>
          <geom name="c2g" type="box" size="0.03 0.03 0.05" pos="0.02 0 -0.05"/>
        </body>
      </body>
    </body>
    <body name="crate" pos="0.5 0.05 0.04">
      <freejoint/>
      <geom name="crate" type="box" size="0.05 0.05 0.04"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="r0" gear="2"/>
    <motor joint="h1" gear="3"/>
    <motor joint="h2" gear="2"/>
    <motor joint="hc1" gear="1"/>
  </actuator>
</mujoco>)";

TEST(DesignColumns, MixedJointsAnchorsAndScales) {
  checkGeomColumns("mixed anchors", kMixed, nullptr,
                   {"joint:r0:pos", "joint:h1:pos", "joint:b1:pos", "joint:h2:pos",
                    "joint:hc1:pos", "joint:bc2:pos", "joint:s1:pos", "body:mid:pos",
                    "body:c1:pos", "body:c2:pos"}, 4, 900, 1e-5);
  checkGeomColumns("mixed scales", kMixed, nullptr, {"body:mid:scale", "body:root:scale"}, 4, 900,
                   1e-5);
  checkGeomColumns("mixed scale overrides", kMixed, nullptr,
                   {"body:mid:scale", "joint:h1:pos[1]", "body:c2:pos[0]", "geom:midg:pos[2]"}, 4,
                   900, 1e-5);
}

// the other pair families: boxes on boxes and a gripper's mesh pads nearby (a mesh's position and
// size are refused: they come from its asset), ellipsoid feet on a plane, a height field,
// cylinders and self-collision
TEST(DesignColumns, GeomColumnsOnMeshEllipsoidHeightFieldModels) {
  checkGeomColumns("arm_gripper", nullptr, "arm_gripper.xml",
                   {"geom:palm:size", "geom:palm:pos", "geom:box:size", "geom:box:pos",
                    "geom:link6_geom:size", "joint:finger_left:pos", "site:grasp:pos",
                    "body:hand:pos", "body:finger_left:pos", "body:link3:pos"}, 3, 200, 1e-5);
  checkGeomColumns("biped", nullptr, "biped.xml",
                   {"geom:left_foot_geom:size", "geom:left_foot_geom:pos",
                    "geom:right_foot_geom:size", "geom:head_geom:size", "body:left_foot:pos",
                    "body:left_shin:pos", "body:left_shin:scale"}, 4, 1000, 1e-5);
  checkGeomColumns("hopper_terrain", nullptr, "hopper_terrain.xml",
                   {"geom:foot_geom:size", "geom:foot_geom:pos", "geom:leg_geom:size",
                    "body:foot:pos"}, 3, 45, 1e-5);
  checkGeomColumns("dog", nullptr, "dog.xml",
                   {"geom:fl_foot:size", "geom:fl_foot:pos", "geom:torso_geom:size",
                    "geom:neck_geom:size", "geom:hl_shin_geom:size", "body:fl_shin:pos",
                    "body:hr_hip:pos", "body:fl_thigh:scale", "body:torso:scale"}, 3, 80, 1e-5);
}

// Loss terms (<mjdiff/loss.h>) on points that geometry parameters move: a site on a moved site
// position and link scale, a body under a moved body, a hinge anchor and a scale; the rollout
// gradient (mjdiff_rolloutGradient with terms) against Richardson-extrapolated differences of the
// terms' value along whole rollouts. Without the terms' direct dependence (loss.c) the site and
// body terms miss dl/dp at every step.
TEST(DesignRollout, LossTermsOnMovedPoints) {
  Sim sim(kBlocks, nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
  const char* names[] = {"site:tip:pos[0]", "site:tip:pos[2]", "body:hand:pos[0]",
                         "body:hand:pos[2]", "joint:pitch:pos[0]", "body:arm:scale",
                         "geom:paddle:size[2]", "geom:knob:pos[0]"};
  int nname = (int)(sizeof(names) / sizeof(names[0]));
  Params P;
  ASSERT_EQ(mjdiff_makeParams(m, s, names, nname, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
  int np = mjdiff_paramCount(P.p), nu = m->nu, T = 40;
  mjtNum tipTarget[3] = {0.2, 0.1, 0.5}, handTarget[3] = {0.3, -0.1, 0.2};
  int last[1] = {-1};
  mjdiffTerm tm[3];
  for (auto& t : tm) mjdiff_defaultTerm(&t);
  tm[0].object = "site:tip";
  tm[0].target = tipTarget;
  tm[1].object = "body:hand";
  tm[1].target = handTarget;
  tm[1].norm = MJDIFF_NORM_SMOOTHABS;
  tm[1].steps = last;
  tm[1].nstep = 1;
  tm[1].weight = 5;
  tm[2].type = MJDIFF_TERM_CONTROL;
  tm[2].weight = 0.01;
  mjdiffTerms* terms = nullptr;
  ASSERT_EQ(mjdiff_makeTerms(m, tm, 3, &terms, err, sizeof(err)), MJDIFF_OK) << err;
  std::vector<mjtNum> v0(np);
  mjdiff_getParamValues(m, s, P.p, v0.data());
  mjdiffRollout* r = nullptr;
  ASSERT_EQ(mjdiff_makeRollout(m, s, P.p, T, nullptr, &r, err, sizeof(err)), MJDIFF_OK) << err;
  unsigned long long seed = 11;
  double worst = 0;
  for (int k = 0; k < 3; k++) {
    ASSERT_EQ(mjdiff_setParamValues(m, s, P.p, v0.data(), err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_TRUE(testutil::simulateRandom(m, d, s, &seed, 100 + 17 * k));
    std::vector<mjtNum> x0 = testutil::getState(m, d);
    std::vector<mjtNum> ctrl(T * nu);
    for (auto& u : ctrl) u = 0.8 * (uniform(&seed) - 0.5);
    auto loss = [&](std::vector<mjtNum>* grad) {
      shim_setState(m, d, x0.data());
      EXPECT_EQ(mjdiff_rolloutForward(m, d, s, r, ctrl.data(), nullptr, nullptr, nullptr, nullptr,
                                      err, sizeof(err)), MJDIFF_OK) << err;
      mjdiffRolloutGrad g;
      mjdiff_defaultRolloutGrad(&g);
      mjtNum L = 0;
      g.terms = terms;
      g.loss = &L;
      if (grad) g.grad_param = grad->data();
      EXPECT_EQ(mjdiff_rolloutGradient(m, d, s, r, &g, err, sizeof(err)), MJDIFF_OK) << err;
      return L;
    };
    std::vector<mjtNum> grad(np);
    loss(&grad);
    worst = std::fmax(worst, checkParamGradient(m, s, P.p, v0, grad,
                                                [&] { return loss(nullptr); }, k));
  }
  mjdiff_freeRollout(r);
  mjdiff_freeTerms(terms);
  std::cout << "loss terms on moved points: worst " << worst << "\n";
}

// A fluid model (the inertia-box force reads the principal axes), so its geometry columns are
// differenced (design_d.c), on a body of two collinear capsules: two equal principal moments. The
// differenced columns finish mju_eig3's axes to rounding (refineEig) and must not turn them in
// the degenerate plane on rounding noise (they did, found by review: columns of 1.9e5 against a
// derivative of -20). Reference: centred differences of the residual at steps 1e-4 and 1e-5 of
// the value, where mju_eig3's stopping is negligible, which must agree with each other.
TEST(DesignColumns, FluidTwoEqualMomentsDifferenced) {
  const char* xml = R"(
<mujoco>
  <option timestep="0.002" density="1000" viscosity="0.001"/>
  <worldbody>
    <body name="fish" pos="0 0 1" euler="0.2 0.3 0.1">
      <freejoint/>
      <geom name="c1" type="capsule" fromto="0 0 0 0.12 0.08 0.05" size="0.02" density="900"/>
      <geom name="c2" type="capsule" fromto="0.12 0.08 0.05 0.24 0.16 0.10" size="0.015"
            density="900"/>
    </body>
  </worldbody>
</mujoco>)";
  Sim sim(xml, nullptr);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  mjdiffModel* s = sim.sim.s;
  char err[1000];
  for (const char* name : {"geom:c1:size[0]", "geom:c2:size[1]", "geom:c1:pos[1]"}) {
    Params P;
    ASSERT_EQ(mjdiff_makeParams(m, s, &name, 1, &P.p, err, sizeof(err)), MJDIFF_OK) << err;
    int nv = m->nv;
    for (int i = 0; i < nv; i++) d->qvel[i] = 0.3 * std::sin(1.7 * i + 0.4) + 0.5;
    ASSERT_EQ(mjdiff_forward(m, d, s, err, sizeof(err)), MJDIFF_OK) << err;
    std::vector<mjtNum> acc(d->qacc, d->qacc + nv), A(nv);
    ASSERT_EQ(mjdiff_paramDerivativeParts(m, d, s, P.p, 3, acc.data(), 0, A.data(), nullptr), 0);
    mjModel* mc = mj_copyModel(nullptr, m);
    mjData* dc = mj_makeData(mc);
    mjtNum v0;
    mjdiff_getParamValues(m, s, P.p, &v0);
    auto r = [&](double h) {
      std::vector<mjtNum> out(nv);
      mj_copyModel(mc, m);
      mjtNum v = v0 + h;
      EXPECT_EQ(mjdiff_setParamValues(mc, s, P.p, &v, err, sizeof(err)), MJDIFF_OK) << err;
      mju_copy(dc->qpos, d->qpos, m->nq);
      mju_copy(dc->qvel, d->qvel, nv);
      EXPECT_EQ(mjdiff_forward(mc, dc, s, err, sizeof(err)), MJDIFF_OK) << err;
      mj_mulM(mc, dc, out.data(), acc.data());
      for (int i = 0; i < nv; i++) out[i] = dc->qfrc_smooth[i] - out[i];
      return out;
    };
    double e = 0, ref = 0, scale = 0;
    std::vector<double> D[2];
    for (int k = 0; k < 2; k++) {
      double h = (k ? 1e-5 : 1e-4) * std::fmax(std::fabs(v0), 0.1);
      std::vector<mjtNum> a = r(h), b = r(-h);
      for (int i = 0; i < nv; i++) D[k].push_back((a[i] - b[i]) / (2 * h));
    }
    for (int i = 0; i < nv; i++) {
      scale = std::fmax(scale, std::fabs(D[0][i]));
      ref = std::fmax(ref, std::fabs(D[0][i] - D[1][i]));
      e = std::fmax(e, std::fabs(A[i] - D[0][i]));
    }
    std::cout << name << ": differenced column against reference " << e / scale
              << " (reference steps agree to " << ref / scale << ")\n";
    EXPECT_LE(ref, 1e-3 * scale) << name << ": the reference's own steps disagree";
    EXPECT_LE(e, 1e-3 * scale) << name;
    mj_deleteData(dc);
    mj_deleteModel(mc);
  }
}

}  // namespace
