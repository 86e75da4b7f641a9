// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Exact convex-pair geometry (plugin/convex.c) and its Jacobian (adjoint/convex_d.c).
//
// Forward. For every pair MuJoCo 2.2.2 sends to mjc_Convex, 70 random relative poses at target
// signed distances (apart 0.08 and 0.01, grazing 1e-4, penetrating 1e-3, 0.02, 0.06, 0.12; random,
// near-aligned (1e-3) and exactly aligned orientations). The solution phi must be the maximum of
// sigma(u) = -h1(u) - h2(-u): an independent brute force (sigma at 4000 Fibonacci directions, then
// from the best 4 a compass search and nested grids on the sphere; for overlapping polytopes also
// the separating-axis enumeration over vertex-triple normals and edge-pair cross products, exact
// there) may not exceed phi by more than 1e-10 of the size and must come within 1e-4 of it (the
// derivative-free search stalls at kinks of sigma: measured agreement is 1e-13 where the
// enumeration applies, up to 1.4e-5 elsewhere); the witness points satisfy x2 - x1 = phi u to
// 1e-9. MuJoCo's own MPR distance (mj_collision, margin 0.1) agrees with phi to MPR's accuracy (8%
// of the size, measured up to 5%, for phi > -0.03; MPR's depth is approximate, that is why this
// exists).
//
// Jacobian. Central differences of the forward solve under rigid perturbations of each geom
// (translate, or rotate by exp([+-eps e_k]x) on the left about the geom's origin), eps = 1e-6,
// Richardson-extrapolated over (eps, 2 eps), y = (dist, n, pos); relative error
// max|J_fd - J| / max(1, max|J|) <= 1e-6. The extrapolated differences err by eps^4 |y^(5)| plus
// roundoff ~1e-15/eps (1e-9); plain central differences (eps^2 |y'''|) were not enough near a
// cylinder rim seen almost along its axis (curvature radius r/|P dir| ~ 1e3 r, such samples are
// counted), while a wrong term is O(1). Samples where an active feature switches within +-eps are
// skipped and counted (at least 80% checked per pair); the face-face, edge-face and parallel-edge
// cases (degenerate) are checked for translations only (rotations break the degeneracy: the
// distance has a kink there); every sixth pose is exactly axis-aligned to produce them.
//
// Sizes (ConvexPairSizes): the same pose sequence with every size entry scaled by a random factor
// in [0.6, 1.6] per pose; the size Jacobian (mjdiff_convexSizeJacobian, 7 x 6) against
// Richardson-extrapolated central differences of the solve in cvxGeom.size (eps = 1e-6), relative
// error <= 1e-6, degenerate features included (a size keeps parallel faces parallel: there the
// minimum-norm witness choice's null-space term is checked; without it the error is ~0.1). Entries
// a type does not read (a sphere's size[1..2], a mesh's sizes) must be exactly zero in both. A
// cylinder rim seen within 1e-3 of its axis amplifies the forward's roundoff in the differences:
// there eps = 1e-5 and 1e-4 are tried too (counted). ConvexSizes: the contacts mjdiff_collide
// writes (the step's geometry, height-field prisms included) against differences of mjdiff_collide
// in m->geom_size. Geometry level only: geom sizes are not parameters of <mjdiff/params.h> yet.
//
// Height fields: the prism contacts of every geom type on a random terrain (brute force per prism,
// Jacobians found from the contact), and a geom 0.1 mm beside an edge shared by two prisms of a
// flat field, where MuJoCo makes a contact per prism and convex.c merges them into one: its
// Jacobian against differences (GeomOverSharedPrismEdge).

#include <gtest/gtest.h>
#include <mjdiff/adjoint.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../adjoint/derivative.h"
#include "../plugin/convex.h"
#include "shim.h"
#include "testutil.h"

namespace {

using testutil::uniform;

// an irregular convex polyhedron (14 vertices) and a box as meshes
const char* kAssets = R"(
  <asset>
    <mesh name="poly" vertex="0.31 0.02 0.05  -0.28 0.06 -0.03  0.04 0.33 0.01  -0.02 -0.29 0.06
                              0.03 0.05 0.27  0.01 -0.04 -0.32  0.2 0.19 0.17  -0.18 0.2 -0.16
                              0.17 -0.21 -0.18  -0.19 -0.17 0.2  0.22 -0.15 0.19  -0.2 0.16 0.18
                              0.16 0.22 -0.2  -0.17 -0.2 -0.19"/>
    <mesh name="mbox" vertex="-0.3 -0.2 -0.25  0.3 -0.2 -0.25  -0.3 0.2 -0.25  0.3 0.2 -0.25
                              -0.3 -0.2 0.25  0.3 -0.2 0.25  -0.3 0.2 0.25  0.3 0.2 0.25"/>
  </asset>)";

struct PairSpec {
  const char* name;
  const char* geom1;
  const char* geom2;
};

const PairSpec kPairs[] = {
    {"SphereEllipsoid", "type=\"sphere\" size=\"0.25\"",
     "type=\"ellipsoid\" size=\"0.3 0.2 0.15\""},
    {"SphereCylinder", "type=\"sphere\" size=\"0.25\"", "type=\"cylinder\" size=\"0.2 0.3\""},
    {"SphereMesh", "type=\"sphere\" size=\"0.25\"", "type=\"mesh\" mesh=\"poly\""},
    {"CapsuleEllipsoid", "type=\"capsule\" size=\"0.15 0.3\"",
     "type=\"ellipsoid\" size=\"0.3 0.2 0.15\""},
    {"CapsuleCylinder", "type=\"capsule\" size=\"0.15 0.3\"", "type=\"cylinder\" size=\"0.2 0.3\""},
    {"CapsuleMesh", "type=\"capsule\" size=\"0.15 0.3\"", "type=\"mesh\" mesh=\"poly\""},
    {"EllipsoidEllipsoid", "type=\"ellipsoid\" size=\"0.3 0.2 0.15\"",
     "type=\"ellipsoid\" size=\"0.25 0.15 0.2\""},
    {"EllipsoidCylinder", "type=\"ellipsoid\" size=\"0.3 0.2 0.15\"",
     "type=\"cylinder\" size=\"0.2 0.3\""},
    {"EllipsoidBox", "type=\"ellipsoid\" size=\"0.3 0.2 0.15\"",
     "type=\"box\" size=\"0.3 0.2 0.25\""},
    {"EllipsoidMesh", "type=\"ellipsoid\" size=\"0.3 0.2 0.15\"", "type=\"mesh\" mesh=\"poly\""},
    {"CylinderCylinder", "type=\"cylinder\" size=\"0.2 0.3\"",
     "type=\"cylinder\" size=\"0.15 0.25\""},
    {"CylinderBox", "type=\"cylinder\" size=\"0.2 0.3\"", "type=\"box\" size=\"0.3 0.2 0.25\""},
    {"CylinderMesh", "type=\"cylinder\" size=\"0.2 0.3\"", "type=\"mesh\" mesh=\"poly\""},
    {"BoxMesh", "type=\"box\" size=\"0.3 0.2 0.25\"", "type=\"mesh\" mesh=\"poly\""},
    {"BoxMeshBox", "type=\"box\" size=\"0.3 0.2 0.25\"", "type=\"mesh\" mesh=\"mbox\""},
    {"MeshMesh", "type=\"mesh\" mesh=\"poly\"", "type=\"mesh\" mesh=\"mbox\""},
};

void PrintTo(const PairSpec& p, std::ostream* os) {
  *os << p.name;
}

std::string pairXml(const PairSpec& p) {
  std::string xml = "<mujoco><option gravity=\"0 0 0\"/>";
  xml += kAssets;
  xml += "<worldbody><body name=\"b1\"><freejoint/><geom name=\"g1\" " + std::string(p.geom1) +
         " margin=\"0.1\"/></body><body name=\"b2\" pos=\"1 0 0\"><freejoint/><geom name=\"g2\" " +
         std::string(p.geom2) + " margin=\"0.1\"/></body></worldbody></mujoco>";
  return xml;
}

void randomRot(unsigned long long* seed, mjtNum mat[9], bool aligned, double tilt) {
  mjtNum q[4];
  if (aligned) {
    // one of 6 axis-aligned rotations, tilted by up to tilt
    static const mjtNum base[][4] = {{1, 0, 0, 0},
                                     {0.7071067811865476, 0.7071067811865476, 0, 0},
                                     {0.7071067811865476, 0, 0.7071067811865476, 0},
                                     {0.7071067811865476, 0, 0, 0.7071067811865476},
                                     {0, 1, 0, 0},
                                     {0.5, 0.5, 0.5, 0.5}};
    int k = (int)(6 * uniform(seed)) % 6;
    mju_copy4(q, base[k]);
    mjtNum t[3] = {tilt * (uniform(seed) - 0.5), tilt * (uniform(seed) - 0.5),
                   tilt * (uniform(seed) - 0.5)};
    mju_quatIntegrate(q, t, 1);
  } else {
    for (int i = 0; i < 4; i++) q[i] = uniform(seed) - 0.5;
    mju_normalize4(q);
  }
  mju_quat2Mat(mat, q);
}

// sigma(u) = -h1(u) - h2(-u) from the support maps
double sigma(const cvxGeom* g1, const cvxGeom* g2, const mjtNum u[3]) {
  mjtNum n[3] = {-u[0], -u[1], -u[2]}, s1[3], s2[3];
  mjdiff_convexSupport(g1, u, s1);
  mjdiff_convexSupport(g2, n, s2);
  return mju_dot3(u, s2) - mju_dot3(u, s1);
}

// brute-force max of sigma: 4000 Fibonacci directions, then from each of the best 4 a compass
// search (64 directions) and nested grids in the tangent plane (21 x 21 points over +-10 h, h
// shrinking by 3 while the best stays inside), down to h = 1e-13; derivative-free throughout
double bruteForce(const cvxGeom* g1, const cvxGeom* g2) {
  const int N = 4000;
  std::vector<std::pair<double, int>> vals;
  auto dirOf = [&](int i, mjtNum u[3]) {
    double z = 1 - (2 * i + 1.0) / N, r = std::sqrt(1 - z * z), phi = i * 2.399963229728653;
    u[0] = r * std::cos(phi);
    u[1] = r * std::sin(phi);
    u[2] = z;
  };
  for (int i = 0; i < N; i++) {
    mjtNum u[3];
    dirOf(i, u);
    vals.push_back({sigma(g1, g2, u), i});
  }
  std::sort(vals.rbegin(), vals.rend());
  double best = -1e300;
  for (int c = 0; c < 4; c++) {
    mjtNum u[3];
    dirOf(vals[c].second, u);
    double f = vals[c].first, step = 0.05, h = 1e-4;
    int turn = 0;
    // compass search (64 directions, step shrinking by 0.7)
    while (step > 1e-9) {
      bool improved = false;
      mjtNum t1[3], t2[3], a[3] = {1, 0, 0};
      if (std::fabs(u[0]) > 0.6) a[0] = 0, a[1] = 1;
      mju_cross(t1, u, a);
      mju_normalize3(t1);
      mju_cross(t2, u, t1);
      turn++;
      for (int k = 0; k < 64 && !improved; k++) {
        double ang = (k + 0.37 * turn) * M_PI / 32;
        mjtNum v[3];
        for (int i = 0; i < 3; i++) {
          v[i] = u[i] + step * (std::cos(ang) * t1[i] + std::sin(ang) * t2[i]);
        }
        mju_normalize3(v);
        double fv = sigma(g1, g2, v);
        if (fv > f) {
          f = fv;
          mju_copy3(u, v);
          improved = true;
        }
      }
      if (!improved) step *= 0.7;
    }
    // nested grids
    while (h > 1e-13) {
      mjtNum t1[3], t2[3], a[3] = {1, 0, 0};
      if (std::fabs(u[0]) > 0.6) a[0] = 0, a[1] = 1;
      mju_cross(t1, u, a);
      mju_normalize3(t1);
      mju_cross(t2, u, t1);
      mjtNum bu[3];
      mju_copy3(bu, u);
      int bi = 0, bj = 0;
      for (int i = -10; i <= 10; i++) {
        for (int j = -10; j <= 10; j++) {
          mjtNum v[3];
          for (int k = 0; k < 3; k++) v[k] = u[k] + h * (i * t1[k] + j * t2[k]);
          mju_normalize3(v);
          double fv = sigma(g1, g2, v);
          if (fv > f) {
            f = fv;
            mju_copy3(bu, v);
            bi = i;
            bj = j;
          }
        }
      }
      mju_copy3(u, bu);
      // shrink unless the best sits on the window's border (then search around it again)
      if (std::abs(bi) < 10 && std::abs(bj) < 10) h /= 3;
    }
    best = std::max(best, f);
  }
  return best;
}

// world vertices of a polytope geom (box, mesh hull, height-field prism); false for curved ones
bool polyVerts(const cvxGeom& g, std::vector<std::vector<double>>* V) {
  std::vector<std::vector<double>> loc;
  if (g.type == mjGEOM_BOX) {
    for (int i = 0; i < 8; i++) {
      loc.push_back({(i & 1 ? 1 : -1) * g.size[0], (i & 2 ? 1 : -1) * g.size[1],
                     (i & 4 ? 1 : -1) * g.size[2]});
    }
  } else if (g.type == mjGEOM_MESH) {
    for (int i = 0; i < g.nvert; i++) {
      const float* p = g.vert + 3 * (g.vid ? g.vid[i] : i);
      loc.push_back({p[0], p[1], p[2]});
    }
  } else if (g.type == mjGEOM_HFIELD) {
    for (int i = 0; i < 6; i++) loc.push_back({g.pv[i][0], g.pv[i][1], g.pv[i][2]});
  } else {
    return false;
  }
  V->clear();
  for (auto& l : loc) {
    mjtNum w[3], lv[3] = {l[0], l[1], l[2]};
    mju_rotVecMat(w, lv, g.mat);
    mju_addTo3(w, g.pos);
    V->push_back({w[0], w[1], w[2]});
  }
  return true;
}

// separating-axis enumeration for two polytopes: the max of sigma over every plane normal of a
// vertex triple of either and every cross product of vertex-pair differences of both (a superset
// of the face normals and edge-edge directions, so exact for overlapping polytopes); -inf if
// either geom is curved
double satMax(const cvxGeom* g1, const cvxGeom* g2) {
  std::vector<std::vector<double>> A, B;
  if (!polyVerts(*g1, &A) || !polyVerts(*g2, &B)) return -1e300;
  double best = -1e300;
  auto test = [&](mjtNum n[3]) {
    if (mju_normalize3(n) < 1e-12) return;
    best = std::max(best, sigma(g1, g2, n));
    mjtNum m[3] = {-n[0], -n[1], -n[2]};
    best = std::max(best, sigma(g1, g2, m));
  };
  for (auto* P : {&A, &B}) {
    const auto& V = *P;
    for (size_t i = 0; i < V.size(); i++) {
      for (size_t j = i + 1; j < V.size(); j++) {
        for (size_t k = j + 1; k < V.size(); k++) {
          mjtNum e1[3], e2[3], n[3];
          for (int c = 0; c < 3; c++) {
            e1[c] = V[j][c] - V[i][c];
            e2[c] = V[k][c] - V[i][c];
          }
          mju_cross(n, e1, e2);
          test(n);
        }
      }
    }
  }
  for (size_t i = 0; i < A.size(); i++) {
    for (size_t j = i + 1; j < A.size(); j++) {
      for (size_t k = 0; k < B.size(); k++) {
        for (size_t l = k + 1; l < B.size(); l++) {
          mjtNum e1[3], e2[3], n[3];
          for (int c = 0; c < 3; c++) {
            e1[c] = A[j][c] - A[i][c];
            e2[c] = B[l][c] - B[k][c];
          }
          mju_cross(n, e1, e2);
          test(n);
        }
      }
    }
  }
  return best;
}

// y = (dist, n, pos) of the solution
bool solveY(const cvxGeom* g1, const cvxGeom* g2, mjtNum y[7], cvxResult* r) {
  cvxResult tmp;
  if (!r) r = &tmp;
  if (mjdiff_convexDistance(g1, g2, r)) return false;
  y[0] = r->phi;
  for (int i = 0; i < 3; i++) {
    y[1 + i] = r->u[i];
    y[4 + i] = 0.5 * (r->x1[i] + r->x2[i]);
  }
  return true;
}

bool sameFeatures(const cvxResult& a, const cvxResult& b) {
  const cvxFeature* fa[2] = {&a.f1, &a.f2};
  const cvxFeature* fb[2] = {&b.f1, &b.f2};
  for (int i = 0; i < 2; i++) {
    if (fa[i]->k != fb[i]->k || fa[i]->nv != fb[i]->nv) return false;
    if (std::memcmp(fa[i]->mode, fb[i]->mode, sizeof(fa[i]->mode))) return false;
    for (int j = 0; j < fa[i]->nv; j++) {
      bool found = false;
      for (int l = 0; l < fb[i]->nv; l++) found = found || fa[i]->v[j] == fb[i]->v[l];
      if (!found) return false;
    }
  }
  return true;
}

// perturb geom (pos, mat) along column c of z by h
void perturb(cvxGeom* g1, cvxGeom* g2, int c, double h) {
  cvxGeom* g = c < 6 ? g1 : g2;
  int k = c % 3;
  if ((c / 3) % 2 == 0) {
    g->pos[k] += h;
  } else {
    mjtNum ax[3] = {0, 0, 0}, q[4], R[9], T[9];
    ax[k] = 1;
    mju_axisAngle2Quat(q, ax, h);
    mju_quat2Mat(R, q);
    mju_mulMatMat(T, R, g->mat, 3, 3, 3);
    mju_copy(g->mat, T, 9);
  }
}

bool degenerate(const cvxResult& r) {
  // dependent flat directions: more than two in total, or two parallel ones
  if (r.f1.k + r.f2.k > 2) return true;
  if (r.f1.k == 1 && r.f2.k == 1) {
    mjtNum c[3];
    mju_cross(c, r.f1.E, r.f2.E);
    return mju_norm3(c) < 1e-3 * mju_norm3(r.f1.E) * mju_norm3(r.f2.E);
  }
  return false;
}

// relative error of the Jacobian of (g1, g2, r) against Richardson-extrapolated central
// differences of the forward solve; false if an active feature switches within +-2 eps. Degenerate
// features: translations only.
bool jacobianError(const cvxGeom& g1, const cvxGeom& g2, const cvxResult& r, double* relErr,
                   bool* differs) {
  mjtNum J[7 * 12];
  mjdiff_convexJacobian(&g1, &g2, &r, J);
  bool deg = degenerate(r);
  const double eps = 1e-6;
  double err = 0, scale = 1;
  for (int c = 0; c < 12; c++) {
    if (deg && (c / 3) % 2 == 1) continue;
    mjtNum y[4][7];
    const double hs[4] = {eps, -eps, 2 * eps, -2 * eps};
    for (int j = 0; j < 4; j++) {
      cvxGeom a = g1, b = g2;
      perturb(&a, &b, c, hs[j]);
      cvxResult rj;
      if (!solveY(&a, &b, y[j], &rj) || !sameFeatures(rj, r)) return false;
    }
    for (int i = 0; i < 7; i++) {
      // Richardson over (eps, 2 eps): the eps^2 term cancels (curvature radii r/|P dir| of a
      // cylinder rim seen nearly along its axis make it large)
      double fd = (4 * (y[0][i] - y[1][i]) / (2 * eps) - (y[2][i] - y[3][i]) / (4 * eps)) / 3;
      err = std::max(err, std::fabs(fd - J[12 * i + c]));
      scale = std::max(scale, std::fabs(J[12 * i + c]));
      if (std::fabs(J[12 * i + c]) > 1e-3 && std::fabs(fd - J[12 * i + c]) > 0) *differs = true;
    }
  }
  *relErr = err / scale;
  return true;
}

const double kTargets[] = {0.08, 0.01, 1e-4, -1e-3, -0.02, -0.06, -0.12};

// pose it of a sequence: random orientations (every third near axis-aligned, every sixth exactly),
// body 2 along a random direction at the target signed distance kTargets[it % 7] (secant on phi,
// the geoms at m's sizes); returns the target
double placePair(const mjModel* m, mjData* d, unsigned long long* seed, int it, bool* alignedOut) {
  mj_resetData(m, d);
  mjtNum R1[9], R2[9], q1[4], q2[4], dir[3];
  bool aligned = it % 3 == 0;
  // every sixth pose exactly aligned (parallel faces and edges: the degenerate features)
  double tilt = it % 6 == 0 ? 0 : 1e-3;
  randomRot(seed, R1, aligned, tilt);
  randomRot(seed, R2, aligned, tilt);
  mju_mat2Quat(q1, R1);
  mju_mat2Quat(q2, R2);
  for (int i = 0; i < 3; i++) dir[i] = uniform(seed) - 0.5;
  if (aligned) dir[(int)(3 * uniform(seed)) % 3] += 2;
  mju_normalize3(dir);
  double target = kTargets[it % 7];
  auto place = [&](double t) {
    mju_zero3(d->qpos);
    mju_copy4(d->qpos + 3, q1);
    mju_scl3(d->qpos + 7, dir, t);
    mju_copy4(d->qpos + 10, q2);
    mj_kinematics(m, d);
    cvxGeom a, b;
    mjdiff_convexGeom(m, d, 0, &a);
    mjdiff_convexGeom(m, d, 1, &b);
    cvxResult r;
    mjdiff_convexDistance(&a, &b, &r);
    return r.phi;
  };
  double t0 = 0.3, t1 = 1.0, f0 = place(t0) - target, f1 = place(t1) - target;
  for (int k = 0; k < 30 && std::fabs(f1) > 1e-12; k++) {
    double t2 = t1 - f1 * (t1 - t0) / (f1 - f0);
    t0 = t1;
    f0 = f1;
    t1 = std::max(0.0, std::min(2.0, t2));
    f1 = place(t1) - target;
  }
  place(t1);
  *alignedOut = aligned;
  return target;
}

struct Stats {
  int poses = 0, solved = 0, checked = 0, skipped = 0, degen = 0, mprCompared = 0, nearAxis = 0;
  int cutStops = 0;
  double worstNearAxis = 0, seconds = 0;
  int timed = 0;
  double worstJ = 0, worstBrute = 0, worstAbove = -1, worstMpr = 0, worstWitness = 0;
  bool differs = false;
};

class ConvexPairs : public ::testing::TestWithParam<PairSpec> {};

TEST_P(ConvexPairs, ForwardAndJacobian) {
  const PairSpec& p = GetParam();
  std::string xml = pairXml(p);
  char err[1000];
  mjModel* m = shim_loadString(xml.c_str(), err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  mjData* d = mj_makeData(m);
  unsigned long long seed = 777;
  Stats st;
  const int kPoses = 70;
  for (int it = 0; it < kPoses; it++) {
    bool aligned = false;
    double target = placePair(m, d, &seed, it, &aligned);
    st.poses++;

    cvxGeom g1, g2;
    ASSERT_EQ(mjdiff_convexGeom(m, d, 0, &g1), 0);
    ASSERT_EQ(mjdiff_convexGeom(m, d, 1, &g2), 0);
    cvxResult r;
    mjtNum y0[7];
    bool ok = solveY(&g1, &g2, y0, &r);
    EXPECT_TRUE(ok) << p.name << " pose " << it << " residual " << r.residual << " phi " << r.phi
                    << " target " << target << " aligned " << aligned;
    if (!ok) continue;
    st.solved++;
    double L = g1.scale + g2.scale;
    {
      auto t0 = std::chrono::steady_clock::now();
      for (int rep = 0; rep < 20; rep++) {
        cvxResult rr;
        mjdiff_convexDistance(&g1, &g2, &rr);
      }
      st.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      st.timed += 20;
    }

    // (a) forward: the brute-force maximum, the witness relation, MuJoCo's MPR
    double bf = bruteForce(&g1, &g2);
    if (r.phi < 0) bf = std::max(bf, satMax(&g1, &g2));  // exact for overlapping polytopes
    st.worstAbove = std::max(st.worstAbove, (bf - r.phi) / L);
    st.worstBrute = std::max(st.worstBrute, std::fabs(bf - r.phi) / L);
    EXPECT_LE(bf, r.phi + 1e-10 * L) << p.name << " pose " << it;
    EXPECT_GE(bf, r.phi - 1e-4 * L) << p.name << " pose " << it;
    mjtNum wres[3];
    mju_sub3(wres, r.x2, r.x1);
    mju_addToScl3(wres, r.u, -r.phi);
    st.worstWitness = std::max(st.worstWitness, mju_norm3(wres) / L);
    EXPECT_LE(mju_norm3(wres), 1e-9 * L);
    // the early stop at a cut: above phi it never triggers and leaves the solution as it was;
    // below phi, when it triggers, its lower bound lies in (cut, phi]
    {
      cvxResult rc;
      EXPECT_EQ(mjdiff_convexDistanceCut(&g1, &g2, r.phi + 1e-6 * L, &rc), 0) << p.name << it;
      EXPECT_EQ(rc.phi, r.phi) << p.name << " pose " << it;
      EXPECT_EQ(mju_dist3(rc.u, r.u), 0) << p.name << " pose " << it;
      mjtNum cut = r.phi - 0.01 * L;
      if (mjdiff_convexDistanceCut(&g1, &g2, cut, &rc) == 1) {
        st.cutStops++;
        EXPECT_GT(rc.phi, cut) << p.name << " pose " << it;
        EXPECT_LE(rc.phi, r.phi + 1e-10 * L) << p.name << " pose " << it;
      }
    }
    mj_collision(m, d);
    if (d->ncon > 0 && r.phi > -0.03) {
      st.mprCompared++;
      st.worstMpr = std::max(st.worstMpr, std::fabs(d->contact[0].dist - r.phi) / L);
      EXPECT_NEAR(d->contact[0].dist, r.phi, 0.08 * L) << p.name << " pose " << it;
    }

    // (b) Jacobian against central differences of the forward solve
    bool deg = degenerate(r);
    st.degen += deg;
    double err = 0;
    bool skip = !jacobianError(g1, g2, r, &err, &st.differs);
    double scale = 1;
    if (skip) {
      st.skipped++;
      continue;
    }
    st.checked++;
    // counted apart: a cylinder rim seen within 1e-2 of its axis (curvature radius r/|P dir|)
    bool nearAxis = false;
    const cvxGeom* gs[2] = {&g1, &g2};
    const cvxFeature* fs[2] = {&r.f1, &r.f2};
    for (int i = 0; i < 2; i++) {
      if (gs[i]->type != mjGEOM_CYLINDER || (fs[i]->mode[0] != 1 && fs[i]->mode[0] != -1)) continue;
      mjtNum z[3] = {gs[i]->mat[2], gs[i]->mat[5], gs[i]->mat[8]};
      double t = std::sqrt(std::max(0.0, 1 - mju_dot3(z, r.u) * mju_dot3(z, r.u)));
      nearAxis = nearAxis || t < 1e-2;
    }
    st.nearAxis += nearAxis;
    st.worstJ = std::max(st.worstJ, err / scale);
    st.worstNearAxis = std::max(st.worstNearAxis, nearAxis ? err / scale : 0.0);
    EXPECT_LE(err / scale, 1e-6) << p.name << " pose " << it << " target " << target
                                 << " features k " << r.f1.k << " " << r.f2.k;
  }
  std::printf(
      "%-18s poses %3d solved %3d jac checked %3d skipped %2d degenerate %2d | "
      "brute %.1e (above %.0e) witness %.1e  mpr(%d) %.1e | worst jac %.2e (near-axis rim %d: "
      "%.1e) | %.1f us/solve | cut stops %d\n",
      p.name, st.poses, st.solved, st.checked, st.skipped, st.degen, st.worstBrute, st.worstAbove,
      st.worstWitness, st.mprCompared, st.worstMpr, st.worstJ, st.nearAxis, st.worstNearAxis,
      1e6 * st.seconds / std::max(1, st.timed), st.cutStops);
  EXPECT_EQ(st.solved, st.poses);
  EXPECT_GE(st.checked, 0.8 * st.poses);
  EXPECT_TRUE(st.differs);
  mj_deleteData(d);
  mj_deleteModel(m);
}

INSTANTIATE_TEST_SUITE_P(All, ConvexPairs, ::testing::ValuesIn(kPairs),
                         [](const ::testing::TestParamInfo<PairSpec>& i) {
                           return std::string(i.param.name);
                         });

// ---------------------------------- size Jacobian ------------------------------------------------

// size entries a geom type's support map reads (sphere r; capsule, cylinder r, h; ellipsoid radii;
// box half sizes); a mesh's size is no collision parameter
int usedSizes(int type) {
  switch (type) {
    case mjGEOM_SPHERE:
      return 1;
    case mjGEOM_CAPSULE:
    case mjGEOM_CYLINDER:
      return 2;
    case mjGEOM_ELLIPSOID:
    case mjGEOM_BOX:
      return 3;
    default:
      return 0;
  }
}

struct SizeStats {
  int poses = 0, solved = 0, checked = 0, skipped = 0, degen = 0, zeroCols = 0, wideEps = 0;
  double worst = 0, worstDegen = 0, jmin = 1e300;
  bool differs = false;
};

// size columns of (g1, g2, r) against Richardson-extrapolated central differences of the forward
// solve in g.size (eps = 1e-6, over (eps, 2 eps)); false if a feature switches within +-2 eps.
// Entries the types do not read: both exactly zero. Degenerate features are checked too (a size
// change keeps faces parallel: the minimum-norm witness choice moves smoothly).
bool sizeError(const cvxGeom& g1, const cvxGeom& g2, const cvxResult& r, double* relErr,
               double* jmax, SizeStats* st, double eps = 1e-6) {
  mjtNum Js[7 * 6];
  mjdiff_convexSizeJacobian(&g1, &g2, &r, Js);
  double err = 0, scale = 1;
  *jmax = 0;
  for (int c = 0; c < 6; c++) {
    const cvxGeom& g = c < 3 ? g1 : g2;
    bool used = c % 3 < usedSizes(g.type);
    mjtNum y[4][7];
    const double hs[4] = {eps, -eps, 2 * eps, -2 * eps};
    for (int j = 0; j < 4; j++) {
      cvxGeom a = g1, b = g2;
      (c < 3 ? a : b).size[c % 3] += hs[j];
      cvxResult rj;
      if (!solveY(&a, &b, y[j], &rj) || !sameFeatures(rj, r)) return false;
    }
    for (int i = 0; i < 7; i++) {
      double a = Js[6 * i + c];
      if (!used) {
        // not a collision parameter: no dependence at all
        EXPECT_EQ(a, 0.0) << "column " << c << " row " << i;
        EXPECT_EQ(y[0][i], y[1][i]) << "column " << c << " row " << i;
        continue;
      }
      double fd = (4 * (y[0][i] - y[1][i]) / (2 * eps) - (y[2][i] - y[3][i]) / (4 * eps)) / 3;
      err = std::max(err, std::fabs(fd - a));
      scale = std::max(scale, std::fabs(a));
      *jmax = std::max(*jmax, std::fabs(a));
      if (std::fabs(a) > 1e-3 && fd != a) st->differs = true;
    }
    st->zeroCols += !used;
  }
  *relErr = err / scale;
  return true;
}

// a cylinder's rim feature seen within tol of its axis (|P dir| < tol)
bool nearAxisRim(const cvxGeom& g, const cvxFeature& f, const mjtNum u[3], double tol) {
  if (g.type != mjGEOM_CYLINDER || (f.mode[0] != 1 && f.mode[0] != -1)) return false;
  mjtNum z[3] = {g.mat[2], g.mat[5], g.mat[8]};
  double c = mju_dot3(z, u);
  return std::sqrt(std::max(0.0, 1 - c * c)) < tol;
}

class ConvexPairSizes : public ::testing::TestWithParam<PairSpec> {};

// the size Jacobian at the poses of ForwardAndJacobian with every used size entry scaled by a
// random factor in [0.6, 1.6] per pose (the placement sees the scaled sizes)
TEST_P(ConvexPairSizes, SizeJacobian) {
  const PairSpec& p = GetParam();
  std::string xml = pairXml(p);
  char err[1000];
  mjModel* m = shim_loadString(xml.c_str(), err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  mjData* d = mj_makeData(m);
  std::vector<mjtNum> size0(m->geom_size, m->geom_size + 3 * m->ngeom);
  unsigned long long seed = 4711;
  SizeStats st;
  const int kPoses = 70;
  for (int it = 0; it < kPoses; it++) {
    for (int g = 0; g < 2; g++) {
      for (int k = 0; k < 3; k++)
        m->geom_size[3 * g + k] = size0[3 * g + k] * (0.6 + uniform(&seed));
    }
    bool aligned = false;
    double target = placePair(m, d, &seed, it, &aligned);
    st.poses++;
    cvxGeom g1, g2;
    ASSERT_EQ(mjdiff_convexGeom(m, d, 0, &g1), 0);
    ASSERT_EQ(mjdiff_convexGeom(m, d, 1, &g2), 0);
    cvxResult r;
    mjtNum y0[7];
    if (!solveY(&g1, &g2, y0, &r)) continue;
    st.solved++;
    bool deg = degenerate(r);
    double e = 0, jmax = 0;
    if (!sizeError(g1, g2, r, &e, &jmax, &st)) {
      st.skipped++;
      continue;
    }
    // a cylinder rim seen within 1e-3 of its axis: the rim point turns by r/|P dir| per unit of
    // u (curvature radius ~1e4 r here), which amplifies the forward's roundoff in the differences
    // (measured: 3.7e-6 at eps = 1e-6, 3.4e-7 at 1e-5, 6e-8 at 1e-4): wider steps there
    if (e > 1e-6 && (nearAxisRim(g1, r.f1, r.u, 1e-3) || nearAxisRim(g2, r.f2, r.u, 1e-3))) {
      st.wideEps++;
      for (double ee : {1e-5, 1e-4}) {
        double e2 = 0, j2 = 0;
        SizeStats tmp;
        if (sizeError(g1, g2, r, &e2, &j2, &tmp, ee)) e = std::min(e, e2);
      }
    }
    st.checked++;
    st.degen += deg;
    st.worst = std::max(st.worst, e);
    if (deg) st.worstDegen = std::max(st.worstDegen, e);
    st.jmin = std::min(st.jmin, jmax);
    EXPECT_LE(e, 1e-6) << p.name << " pose " << it << " target " << target << " aligned " << aligned
                       << " degenerate " << deg << " features k " << r.f1.k << " " << r.f2.k;
    if (usedSizes(g1.type) + usedSizes(g2.type) > 0) {
      // non-trivial: a size moves the contact (a radius moves dist by about -1)
      EXPECT_GT(jmax, 0.1) << p.name << " pose " << it;
    }
  }
  std::printf(
      "%-18s sizes: poses %3d solved %3d checked %3d (degenerate %2d, near-axis rim wide eps %d) "
      "skipped %2d zero columns %3d | worst %.2e (degenerate %.2e) | smallest max|Js| %.2f\n",
      p.name, st.poses, st.solved, st.checked, st.degen, st.wideEps, st.skipped, st.zeroCols,
      st.worst, st.worstDegen, st.jmin);
  EXPECT_GE(st.solved, 0.95 * st.poses);
  EXPECT_GE(st.checked, 0.8 * st.poses);
  bool sized = usedSizes(m->geom_type[0]) + usedSizes(m->geom_type[1]) > 0;
  if (sized) {
    EXPECT_TRUE(st.differs);
  }
  mj_deleteData(d);
  mj_deleteModel(m);
}

INSTANTIATE_TEST_SUITE_P(All, ConvexPairSizes, ::testing::ValuesIn(kPairs),
                         [](const ::testing::TestParamInfo<PairSpec>& i) {
                           return std::string(i.param.name);
                         });

// ---------------------------------- the step through convex contacts -----------------------------

// a capsule on a cylinder and a mesh box (tilted) on a mesh slab, both free
const char* kStepModel = R"(
<mujoco>
  <option timestep="0.002"/>
  <asset>
    <mesh name="slab" vertex="-1 -1 -0.1  1 -1 -0.1  -1 1 -0.1  1 1 -0.1  -1 -1 0  1 -1 0  -1 1 0  1 1 0"/>
    <mesh name="cube" vertex="-0.1 -0.1 -0.1  0.1 -0.1 -0.1  -0.1 0.1 -0.1  0.1 0.1 -0.1
                              -0.1 -0.1 0.1  0.1 -0.1 0.1  -0.1 0.1 0.1  0.1 0.1 0.1"/>
  </asset>
  <worldbody>
    <geom name="cyl" type="cylinder" size="0.15 0.3" euler="90 0 0"/>
    <body name="caps" pos="0.02 0.05 0.2" euler="0 80 10">
      <freejoint/>
      <geom name="caps" type="capsule" size="0.05 0.1"/>
    </body>
    <geom name="slab" type="mesh" mesh="slab" pos="2 0 0"/>
    <body name="cube" pos="2 0 0.125" euler="8 5 0">
      <freejoint/>
      <geom name="cube" type="mesh" mesh="cube"/>
    </body>
  </worldbody>
</mujoco>)";

void stepFrom(const mjModel* m, mjData* d, const mjdiffModel* s, const std::vector<mjtNum>& state,
              const mjtNum* dx, std::vector<mjtNum>* next) {
  shim_setState(m, d, state.data());
  if (dx) testutil::perturbState(m, d, dx);
  char err[500];
  mjdiff_step(m, d, s, err, sizeof(err));
  next->resize(m->nq + m->nv + m->na);
  testutil::getPosVelAct(m, d, next->data());
}

// centered differences of the step in the state (ndx x ndx)
std::vector<mjtNum> fdA(const mjModel* m, mjData* d, const mjdiffModel* s,
                        const std::vector<mjtNum>& state, double eps) {
  int ndx = 2 * m->nv + m->na, nq = m->nq, nv = m->nv;
  std::vector<mjtNum> A(ndx * ndx), dx(ndx), plus, minus, col(ndx);
  for (int c = 0; c < ndx; c++) {
    std::fill(dx.begin(), dx.end(), 0);
    dx[c] = eps;
    stepFrom(m, d, s, state, dx.data(), &plus);
    dx[c] = -eps;
    stepFrom(m, d, s, state, dx.data(), &minus);
    mj_differentiatePos(m, col.data(), 2 * eps, minus.data(), plus.data());
    for (int i = 0; i < nv; i++) col[nv + i] = (plus[nq + i] - minus[nq + i]) / (2 * eps);
    for (int r = 0; r < ndx; r++) A[ndx * r + c] = col[r];
  }
  shim_setState(m, d, state.data());
  return A;
}

double relErr(const std::vector<mjtNum>& A, const std::vector<mjtNum>& F) {
  double err = 0, scale = 1e-4;
  for (size_t i = 0; i < A.size(); i++) {
    err = std::max(err, std::fabs(A[i] - F[i]));
    scale = std::max(scale, std::fabs(F[i]));
  }
  return err / scale;
}

// a box and a capsule on a random height field
const char* kHFieldStepModel = R"(
<mujoco>
  <option timestep="0.002"/>
  <asset>
    <hfield name="terrain" nrow="7" ncol="7" size="0.6 0.6 0.1 0.1"/>
  </asset>
  <worldbody>
    <geom name="hf" type="hfield" hfield="terrain"/>
    <body name="box" pos="-0.2 0 0.2" euler="10 20 0">
      <freejoint/>
      <geom name="box" type="box" size="0.1 0.08 0.06"/>
    </body>
    <body name="caps" pos="0.25 0.1 0.16" euler="0 80 10">
      <freejoint/>
      <geom name="caps" type="capsule" size="0.05 0.1"/>
    </body>
  </worldbody>
</mujoco>)";

// step Jacobians A against Richardson-extrapolated differences of mjdiff_step near trajectories
// that rest on the convex contacts of the model (hfield: random terrain heights)
void checkStep(const char* xml, bool hfield) {
  testutil::Sim sim(xml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  if (hfield) {
    unsigned long long hs = 31;
    for (int i = 0; i < m->hfield_nrow[0] * m->hfield_ncol[0]; i++) {
      m->hfield_data[i] = (float)uniform(&hs);
    }
  }
  char err[1000];
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, sim.sim.s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  int ndx = 2 * m->nv + m->na;
  unsigned long long seed = 99;
  int compared = 0, capsContacts = 0, cubeContacts = 0;
  double worst = 0;
  const int kSamples = 16;
  for (int k = 0; k < kSamples; k++) {
    testutil::simulateRandom(m, d, sim.sim.s, &seed, 20 + 9 * k);
    testutil::perturbVelocities(m, d, &seed, 0.2, 0);
    mjdiff_forward(m, d, sim.sim.s, err, sizeof(err));
    std::vector<mjtNum> state = testutil::getState(m, d);
    bool caps = false, cube = false;
    for (int i = 0; i < d->ncon; i++) {
      int t1 = m->geom_type[d->contact[i].geom1], t2 = m->geom_type[d->contact[i].geom2];
      if (d->contact[i].dist > 0.002) continue;  // inactive (beyond the contact width)
      caps = caps || (t1 == mjGEOM_CAPSULE || t2 == mjGEOM_CAPSULE);
      cube = cube || (t1 == mjGEOM_MESH && t2 == mjGEOM_MESH) || t2 == mjGEOM_BOX;
    }
    std::vector<mjtNum> A(ndx * ndx), B(ndx);
    ASSERT_EQ(
        mjdiff_stepJacobian(m, d, sim.sim.s, w, A.data(), B.data(), nullptr, err, sizeof(err)),
        MJDIFF_OK)
        << err;
    double eps = 1e-5;
    std::vector<mjtNum> Fa = fdA(m, d, sim.sim.s, state, eps);
    std::vector<mjtNum> Fb = fdA(m, d, sim.sim.s, state, 2 * eps);
    std::vector<mjtNum> Fc = fdA(m, d, sim.sim.s, state, 4 * eps);
    std::vector<mjtNum> F1 = testutil::richardson(Fa, Fb), F2 = testutil::richardson(Fb, Fc);
    if (relErr(F1, F2) > 1e-6) continue;  // a feature switch or law kink within reach
    compared++;
    capsContacts += caps;
    cubeContacts += cube;
    double e = relErr(A, F1);
    worst = std::max(worst, e);
    EXPECT_LE(e, 1e-6) << "sample " << k << " caps " << caps << " cube " << cube;
    EXPECT_NE(0, std::memcmp(A.data(), F1.data(), A.size() * sizeof(mjtNum)));
  }
  std::printf("convex step%s: compared %d/%d (capsule active %d, %s active %d), worst %.2e\n",
              hfield ? " (hfield)" : "", compared, kSamples, capsContacts,
              hfield ? "box" : "mesh-mesh", cubeContacts, worst);
  EXPECT_GE(compared, (int)(0.7 * kSamples));
  // (on the rough terrain the bodies bounce: fewer samples rest on each)
  EXPECT_GE(capsContacts, hfield ? 4 : compared / 2);
  EXPECT_GE(cubeContacts, hfield ? 4 : compared / 2);
  mjdiff_freeStepDeriv(w);
}

TEST(ConvexStep, StepJacobianMatchesFiniteDifferences) {
  checkStep(kStepModel, false);
}

TEST(ConvexStep, StepJacobianOnHeightField) {
  checkStep(kHFieldStepModel, true);
}

// the size Jacobian of the contacts mjdiff_collide writes (the geometry the smooth step's forces
// use; height fields by prism, mjdiff_contactGeomSizeJacobian finds the prism by the contact's
// place) against Richardson-extrapolated central differences of mjdiff_collide in m->geom_size,
// poses fixed, contacts matched by index (same count and geom pair, else skipped). Geometry level:
// geom sizes are not parameters of <mjdiff/params.h> yet, so no step or force derivative here.
void checkCollideSizes(const char* xml, bool hfield) {
  testutil::Sim sim(xml);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  if (hfield) {
    unsigned long long hs = 31;
    for (int i = 0; i < m->hfield_nrow[0] * m->hfield_ncol[0]; i++) {
      m->hfield_data[i] = (float)uniform(&hs);
    }
  }
  char err[1000];
  unsigned long long seed = 5;
  int contacts = 0, checked = 0, hf = 0, meshPairs = 0;
  double worst = 0;
  bool differs = false;
  for (int k = 0; k < 12; k++) {
    testutil::simulateRandom(m, d, sim.sim.s, &seed, 20 + 9 * k);
    ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    std::vector<mjContact> con(d->contact, d->contact + d->ncon);
    for (int i = 0; i < (int)con.size(); i++) {
      int g1 = con[i].geom1, g2 = con[i].geom2;
      if (!mjdiff_convexPair(m->geom_type[g1], m->geom_type[g2])) continue;
      contacts++;
      mjtNum Js[7 * 6];
      ASSERT_EQ(mjdiff_contactGeomSizeJacobian(m, d, d->contact + i, Js), 0) << "contact " << i;
      double jmax = 0;
      for (double v : Js) jmax = std::max(jmax, std::fabs(v));
      bool sized = usedSizes(m->geom_type[g1]) + usedSizes(m->geom_type[g2]) > 0;
      if (sized) {
        EXPECT_GT(jmax, 0.1);  // non-trivial (a radius moves dist by about -1)
      } else {
        EXPECT_EQ(jmax, 0.0);  // mesh-mesh: no size is a collision parameter
      }
      meshPairs += !sized;
      mjtNum fd[7 * 6];
      bool ok = true;
      for (int c = 0; c < 6 && ok; c++) {
        int g = c < 3 ? g1 : g2;
        mjtNum s0 = m->geom_size[3 * g + c % 3], y[4][7];
        const double eps = 1e-6, hs[4] = {eps, -eps, 2 * eps, -2 * eps};
        for (int j = 0; j < 4 && ok; j++) {
          m->geom_size[3 * g + c % 3] = s0 + hs[j];
          mjdiff_collide(m, d, sim.sim.s);
          ok = d->ncon == (int)con.size() && d->contact[i].geom1 == g1 && d->contact[i].geom2 == g2;
          if (ok) {
            y[j][0] = d->contact[i].dist;
            for (int a = 0; a < 3; a++) {
              y[j][1 + a] = d->contact[i].frame[a];
              y[j][4 + a] = d->contact[i].pos[a];
            }
          }
        }
        m->geom_size[3 * g + c % 3] = s0;
        for (int a = 0; a < 7 && ok; a++) {
          fd[6 * a + c] =
              (4 * (y[0][a] - y[1][a]) / (2 * eps) - (y[2][a] - y[3][a]) / (4 * eps)) / 3;
        }
      }
      mjdiff_collide(m, d, sim.sim.s);
      if (!ok) continue;
      checked++;
      hf += m->geom_type[g1] == mjGEOM_HFIELD;
      double e = 0;
      for (int a = 0; a < 42; a++) {
        if (!sized) {
          EXPECT_EQ(fd[a], 0.0);
        }
        e = std::max(e, std::fabs(fd[a] - Js[a]));
        differs = differs || (std::fabs(Js[a]) > 1e-3 && fd[a] != Js[a]);
      }
      e /= std::max(1.0, jmax);
      worst = std::max(worst, e);
      EXPECT_LE(e, 1e-6) << "sample " << k << " contact " << i << " geoms " << g1 << " " << g2;
    }
  }
  std::printf(
      "collide sizes%s: convex contacts %d checked %d (height field %d, mesh-mesh zero %d), "
      "worst %.2e\n",
      hfield ? " (hfield)" : "", contacts, checked, hf, meshPairs, worst);
  EXPECT_GE(checked, (int)(0.8 * contacts));
  EXPECT_GE(checked, 10);
  if (hfield) {
    EXPECT_GE(hf, 5);
  }
  EXPECT_TRUE(differs);
}

TEST(ConvexSizes, CollideContacts) {
  checkCollideSizes(kStepModel, false);
}

TEST(ConvexSizes, CollideContactsOnHeightField) {
  checkCollideSizes(kHFieldStepModel, true);
}

// mjdiff_collide writes the exact geometry: the contact's dist is the solution at d's poses, and
// the geometry Jacobian accepts it; with MuJoCo's multi-CCD on, still one contact per pair
class ConvexCollide : public ::testing::TestWithParam<bool> {};

TEST_P(ConvexCollide, WritesExactGeometry) {
  std::string xml = kStepModel;
  if (GetParam()) {
    xml.replace(xml.find("<option timestep=\"0.002\"/>"), 26,
                "<option timestep=\"0.002\"><flag multiccd=\"enable\"/></option>");
  }
  testutil::Sim sim(xml.c_str());
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[500];
  for (int i = 0; i < 60; i++) ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  int nconvex = 0;
  for (int i = 0; i < d->ncon; i++) {
    const mjContact* con = d->contact + i;
    if (!mjdiff_convexPair(m->geom_type[con->geom1], m->geom_type[con->geom2])) continue;
    nconvex++;
    cvxGeom a, b;
    cvxResult r;
    ASSERT_EQ(mjdiff_convexGeom(m, d, con->geom1, &a), 0);
    ASSERT_EQ(mjdiff_convexGeom(m, d, con->geom2, &b), 0);
    ASSERT_EQ(mjdiff_convexDistance(&a, &b, &r), 0);
    EXPECT_EQ(con->dist, r.phi);
    EXPECT_NEAR(mju_norm3(con->frame + 3), 1, 1e-12);
    EXPECT_NEAR(mju_dot3(con->frame, con->frame + 3), 0, 1e-12);
    mjtNum J[7 * 12];
    EXPECT_EQ(mjdiff_contactGeomJacobian(m, d, con, J), 0);
    EXPECT_TRUE(mjdiff_contactPairSupported(m->geom_type[con->geom1], m->geom_type[con->geom2]));
  }
  EXPECT_EQ(nconvex, 2);  // one per pair
  if (GetParam()) {
    // MuJoCo's own detection makes more than one contact for a pair here
    mjModel view = *m;
    mjtNum margin[8];
    for (int g = 0; g < m->ngeom && g < 8; g++) margin[g] = 0.002;
    view.geom_margin = margin;
    mj_collision(&view, d);
    EXPECT_GT(d->ncon, 2);
  }
}

INSTANTIATE_TEST_SUITE_P(MultiCCD, ConvexCollide, ::testing::Bool());

// ---------------------------------- height fields ------------------------------------------------

// every geom type MuJoCo collides with a height field by prisms, on a random 7 x 7 terrain: the
// contacts mjdiff_collide writes are exact prism solutions (brute force on that prism), and their
// geometry Jacobians (found again by mjdiff_contactGeomJacobian) match finite differences
TEST(ConvexHField, PrismContacts) {
  const char* geoms[] = {"type=\"sphere\" size=\"0.15\"",
                         "type=\"capsule\" size=\"0.1 0.15\"",
                         "type=\"ellipsoid\" size=\"0.2 0.12 0.1\"",
                         "type=\"cylinder\" size=\"0.12 0.1\"",
                         "type=\"box\" size=\"0.15 0.1 0.08\"",
                         "type=\"mesh\" mesh=\"poly\""};
  for (const char* geom : geoms) {
    std::string xml = "<mujoco>";
    xml += kAssets;
    xml +=
        "<asset><hfield name=\"terrain\" nrow=\"7\" ncol=\"7\" size=\"0.6 0.6 0.2 0.1\"/></asset>"
        "<worldbody><geom name=\"hf\" type=\"hfield\" hfield=\"terrain\"/>"
        "<body name=\"b\" pos=\"0 0 0.3\"><freejoint/><geom name=\"g\" " +
        std::string(geom) + "/></body></worldbody></mujoco>";
    testutil::Sim sim(xml.c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    unsigned long long seed = 4242;
    for (int i = 0; i < m->hfield_nrow[0] * m->hfield_ncol[0]; i++) {
      m->hfield_data[i] = (float)uniform(&seed);
    }
    int poses = 0, contacts = 0, checked = 0, skipped = 0, sizeChecked = 0;
    double worstJ = 0, worstBrute = 0, worstS = 0;
    bool differs = false, sizeDiffers = false;
    char err[500];
    for (int it = 0; it < 30; it++) {
      // a random pose over the terrain, lowered until it touches: phi of the deepest prism ~ target
      mj_resetData(m, d);
      mjtNum q[4];
      for (int k = 0; k < 4; k++) q[k] = uniform(&seed) - 0.5;
      mju_normalize4(q);
      d->qpos[0] = 0.6 * (uniform(&seed) - 0.5);
      d->qpos[1] = 0.6 * (uniform(&seed) - 0.5);
      mju_copy4(d->qpos + 3, q);
      double target = -0.001 * (it % 3);
      double lo = -0.1, hi = 0.5;
      for (int k = 0; k < 50; k++) {
        d->qpos[2] = 0.5 * (lo + hi);
        ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
        double deepest = 1;
        for (int c = 0; c < d->ncon; c++) deepest = std::min(deepest, (double)d->contact[c].dist);
        (deepest < target ? lo : hi) = d->qpos[2];
      }
      d->qpos[2] = hi;
      ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
      poses++;
      for (int c = 0; c < d->ncon; c++) {
        const mjContact* con = d->contact + c;
        contacts++;
        mjtNum J[7 * 12];
        ASSERT_EQ(mjdiff_contactGeomJacobian(m, d, con, J), 0) << geom << " pose " << it;
        // the prism of this contact, its solution and the independent checks
        cvxGeom g2, pr;
        ASSERT_EQ(mjdiff_convexGeom(m, d, con->geom2, &g2), 0);
        mjtNum margin = mjdiff_contactMargin(m, con);
        int total = mjdiff_convexPrisms(m, d, con->geom1, con->geom2, margin, 0, &pr, 0);
        bool found = false;
        cvxResult r;
        for (int qi = 0; qi < total && !found; qi++) {
          mjdiff_convexPrisms(m, d, con->geom1, con->geom2, margin, qi, &pr, 1);
          found = mjdiff_convexDistance(&pr, &g2, &r) == 0 && r.phi == con->dist &&
                  mju_dist3(r.u, con->frame) < 1e-12;
        }
        ASSERT_TRUE(found) << geom << " pose " << it;
        double L = pr.scale + g2.scale;
        double bf = bruteForce(&pr, &g2);
        if (r.phi < 0) bf = std::max(bf, satMax(&pr, &g2));  // exact for overlapping polytopes
        worstBrute = std::max(worstBrute, std::fabs(bf - r.phi) / L);
        EXPECT_LE(bf, r.phi + 1e-10 * L) << geom << " pose " << it;
        EXPECT_GE(bf, r.phi - 1e-4 * L) << geom << " pose " << it;
        // the Jacobian from the contact equals the prism's, and matches finite differences
        mjtNum Jp[7 * 12];
        mjdiff_convexJacobian(&pr, &g2, &r, Jp);
        for (int k = 0; k < 84; k++)
          EXPECT_NEAR(J[k], Jp[k], 1e-6 * std::max(1.0, std::fabs(Jp[k])));
        double e = 0;
        if (!jacobianError(pr, g2, r, &e, &differs)) {
          skipped++;
          continue;
        }
        checked++;
        worstJ = std::max(worstJ, e);
        EXPECT_LE(e, 1e-6) << geom << " pose " << it << " contact " << c;
        // sizes: from the contact equal to the prism's, against differences in geom 2's sizes
        // (the field's columns zero)
        mjtNum Js[7 * 6], Jsp[7 * 6];
        ASSERT_EQ(mjdiff_contactGeomSizeJacobian(m, d, con, Js), 0);
        mjdiff_convexSizeJacobian(&pr, &g2, &r, Jsp);
        for (int k = 0; k < 42; k++) {
          EXPECT_NEAR(Js[k], Jsp[k], 1e-6 * std::max(1.0, std::fabs(Jsp[k])));
          if (k % 6 < 3) {
            EXPECT_EQ(Js[k], 0.0);
          }
        }
        double es = 0, jmax = 0;
        SizeStats sst;
        if (sizeError(pr, g2, r, &es, &jmax, &sst)) {
          sizeChecked++;
          worstS = std::max(worstS, es);
          EXPECT_LE(es, 1e-6) << geom << " pose " << it << " contact " << c;
          if (usedSizes(g2.type)) {
            EXPECT_GT(jmax, 0.1);
          } else {
            EXPECT_EQ(jmax, 0.0);  // a mesh on the field: no size column
          }
          sizeDiffers = sizeDiffers || sst.differs || !usedSizes(g2.type);
        }
      }
    }
    std::printf(
        "hfield %-38s poses %d contacts %d jac checked %d skipped %d | brute %.1e | "
        "worst jac %.2e | sizes checked %d worst %.2e\n",
        geom, poses, contacts, checked, skipped, worstBrute, worstJ, sizeChecked, worstS);
    EXPECT_GE(contacts, poses);
    EXPECT_GE(checked, 0.8 * contacts);
    EXPECT_GE(sizeChecked, 0.8 * contacts);
    EXPECT_TRUE(differs);
    EXPECT_TRUE(sizeDiffers);
  }
}

// A geom whose lowest point is over an edge shared by two prisms of a flat field (the cell
// diagonal, a grid line between cells) touches both prisms there, with the same depth, point and
// normal to roundoff: one contact per prism. Across the edge a contact is not differentiable: it is
// its prism's face solution on one side and its edge solution on the other (their normals turn at
// different rates), and at the edge roundoff decides which each prism's solve returns. The two
// contacts swap branches across the edge, so their sum over the pair (and the force) is smooth
// there: the Jacobian at the kink is the symmetric one, the mean of the face and edge branches
// (adjoint/convex_d.c), so that each contact's is its central difference and their sum the sum's
// derivative, and each contact is differentiated on its own prism (by its place in the pair's run;
// matching by value took the first prism for both). Checked against D1 = 2 D(h) - D(2 h) of central
// differences D (h = 1e-6) under rigid motions of the geom, per contact and summed (a kink or a
// jump of the second derivative leaves D an O(h) error that D1 cancels), relative error <= 1e-6,
// over random orientations, depths (1e-4 .. 4e-3) and places along the edge. (Over a grid vertex
// the sum is not differentiable either, and MuJoCo's number of contacts changes: not checked.)
void edgeY(const mjModel* m, mjData* d, const mjdiffModel* s, const std::vector<mjtNum>& state,
           int c, double h, int ncon, mjtNum* y) {
  shim_setState(m, d, state.data());
  int k = c % 3;
  if (c < 3) {
    d->qpos[k] += h;
  } else {
    // rotation about the geom's origin (the body's) by h about world axis k
    mjtNum ax[3] = {0, 0, 0}, q[4], q2[4];
    ax[k] = 1;
    mju_axisAngle2Quat(q, ax, h);
    mju_mulQuat(q2, q, d->qpos + 3);
    mju_copy4(d->qpos + 3, q2);
  }
  char err[500];
  ASSERT_EQ(mjdiff_forward(m, d, s, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(d->ncon, ncon) << "column " << c << " h " << h;
  // y of each contact, then their sum
  mju_zero(y, 7 * (ncon + 1));
  for (int i = 0; i < ncon; i++) {
    mjtNum* yi = y + 7 * i;
    yi[0] = d->contact[i].dist;
    for (int j = 0; j < 3; j++) {
      yi[1 + j] = d->contact[i].frame[j];
      yi[4 + j] = d->contact[i].pos[j];
    }
    mju_addTo(y + 7 * ncon, yi, 7);
  }
}

TEST(ConvexHField, GeomOverSharedPrismEdge) {
  const char* geoms[] = {"type=\"ellipsoid\" size=\"0.1 0.15 0.2\"",
                         "type=\"sphere\" size=\"0.12\""};
  // where the lowest point goes (4 x 4 grid over +-2: lines at +-2/3): along the diagonal of the
  // middle cell, or on the grid line x = 2/3 between two cells
  const char* places[] = {"diagonal", "grid line"};
  for (const char* geom : geoms) {
    std::string xml =
        "<mujoco><asset><hfield name=\"terrain\" nrow=\"4\" ncol=\"4\" size=\"2 2 0.1 0.1\"/>"
        "</asset><worldbody><geom name=\"floor\" type=\"hfield\" hfield=\"terrain\"/>"
        "<body pos=\"0 0 0.3\"><freejoint/><geom name=\"g\" " +
        std::string(geom) + " mass=\"1\"/></body></worldbody></mujoco>";
    testutil::Sim sim(xml.c_str());
    ASSERT_TRUE(sim.ok) << sim.sim.err;
    const mjModel* m = sim.sim.m;
    mjData* d = sim.sim.d;
    const mjdiffModel* s = sim.sim.s;
    unsigned long long seed = 2718;
    char err[500];
    for (int place = 0; place < 2; place++) {
      int poses = 0;
      double worst = 0, worstSum = 0;
      for (int it = 0; it < 12; it++) {
        mj_resetData(m, d);
        // random orientation (every third upright), the lowest point moved onto the edge
        mjtNum q[4] = {1, 0, 0, 0};
        if (it % 3) {
          for (int k = 0; k < 4; k++) q[k] = uniform(&seed) - 0.5;
          mju_normalize4(q);
        }
        mju_copy4(d->qpos + 3, q);
        // the lowest point 0.1 mm to one side of the edge (alternating): one contact, the two
        // prisms merged (convex.c), a face solution whose derivative is exact there
        double t = 0.5 * (uniform(&seed) - 0.5), depth = 1e-4 + 4e-3 * uniform(&seed);
        double side = (it % 2 ? 1 : -1) * 1e-4;
        mjtNum target[2] = {t + side / std::sqrt(2.0), t - side / std::sqrt(2.0)};
        if (place == 1) {
          target[0] = 2.0 / 3 + side;
          target[1] = t;
        }
        mj_kinematics(m, d);
        cvxGeom g;
        ASSERT_EQ(mjdiff_convexGeom(m, d, 1, &g), 0);
        mjtNum down[3] = {0, 0, -1}, low[3];
        mjdiff_convexSupport(&g, down, low);
        d->qpos[0] += target[0] - low[0];
        d->qpos[1] += target[1] - low[1];
        d->qpos[2] += -depth - low[2];
        ASSERT_EQ(mjdiff_forward(m, d, s, err, sizeof(err)), MJDIFF_OK) << err;
        int ncon = d->ncon;
        // one surface, one contact (MuJoCo makes one per prism: two here)
        ASSERT_EQ(ncon, 1) << geom << " " << places[place] << " pose " << it;
        // Jacobians of each contact (geom 2's columns), then their sum
        std::vector<mjtNum> J(84 * (ncon + 1), 0.0);
        for (int i = 0; i < ncon; i++) {
          ASSERT_EQ(mjdiff_contactGeomJacobian(m, d, d->contact + i, J.data() + 84 * i), 0);
          for (int k = 0; k < 84; k++) J[84 * ncon + k] += J[84 * i + k];
        }
        std::vector<mjtNum> state = testutil::getState(m, d);
        const double h = 1e-6, hs[4] = {h, -h, 2 * h, -2 * h};
        std::vector<mjtNum> y(4 * 7 * (ncon + 1));
        std::vector<double> e(ncon + 1, 0.0), scale(ncon + 1, 1.0);
        bool differs = false;
        for (int c = 0; c < 6; c++) {
          for (int j = 0; j < 4; j++) {
            edgeY(m, d, s, state, c, hs[j], ncon, y.data() + 7 * (ncon + 1) * j);
            if (HasFatalFailure()) return;
          }
          for (int i = 0; i <= ncon; i++) {
            for (int r = 0; r < 7; r++) {
              const mjtNum* yy = y.data() + 7 * i + r;
              int st = 7 * (ncon + 1);
              double d1 = (yy[0] - yy[st]) / (2 * h), d2 = (yy[2 * st] - yy[3 * st]) / (4 * h);
              double fd = 2 * d1 - d2, an = J[84 * i + 12 * r + 6 + c];
              e[i] = std::max(e[i], std::fabs(fd - an));
              scale[i] = std::max(scale[i], std::fabs(an));
              differs = differs || (std::fabs(an) > 1e-3 && fd != an);
            }
          }
        }
        shim_setState(m, d, state.data());
        poses++;
        for (int i = 0; i <= ncon; i++) {
          double ei = e[i] / scale[i];
          (i < ncon ? worst : worstSum) = std::max(i < ncon ? worst : worstSum, ei);
          EXPECT_LE(ei, 1e-6) << geom << " " << places[place] << " pose " << it
                              << (i < ncon ? " contact " : " sum ") << i;
        }
        EXPECT_TRUE(differs);
      }
      std::printf("hfield edge %-32s %-9s poses %d worst jac %.2e, of the sum %.2e\n", geom,
                  places[place], poses, worst, worstSum);
    }
  }
}

// a contact that is not the exact solution at d's poses, a pair that is not convex and bad geom ids
// are refused; the solve is deterministic and leaves its inputs alone
TEST(ConvexErrors, RefusedContactsAndDeterminism) {
  testutil::Sim sim(kStepModel);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  char err[500];
  for (int i = 0; i < 60; i++) ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK);
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_GT(d->ncon, 0);
  mjContact con = d->contact[0];
  mjtNum J[7 * 12];
  ASSERT_EQ(mjdiff_convexGeomJacobian(m, d, &con, J), 0);
  mjContact bad = con;
  bad.dist += 1e-6;
  EXPECT_EQ(mjdiff_convexGeomJacobian(m, d, &bad, J), -1);
  bad = con;
  bad.pos[0] += 1e-6;
  EXPECT_EQ(mjdiff_convexGeomJacobian(m, d, &bad, J), -1);
  bad = con;
  bad.geom2 = m->ngeom;
#if MJDIFF_MUJOCO_3
  bad.geom[1] = bad.geom2;  // 3.x reads geom[] (geom1, geom2 deprecated)
#endif
  EXPECT_EQ(mjdiff_convexGeomJacobian(m, d, &bad, J), -1);
  bad = con;
  bad.geom2 = bad.geom1;  // cylinder-cylinder with itself: not the contact
#if MJDIFF_MUJOCO_3
  bad.geom[1] = bad.geom2;
#endif
  EXPECT_EQ(mjdiff_convexGeomJacobian(m, d, &bad, J), -1);
  EXPECT_EQ(mjdiff_convexPair(mjGEOM_PLANE, mjGEOM_ELLIPSOID), 0);
  EXPECT_EQ(mjdiff_convexPair(mjGEOM_BOX, mjGEOM_BOX), 0);
  EXPECT_EQ(mjdiff_convexPair(mjGEOM_MESH, mjGEOM_BOX), 1);
  EXPECT_EQ(mjdiff_convexPair(mjGEOM_HFIELD, mjGEOM_CAPSULE), 2);

  // determinism and untouched inputs
  cvxGeom a, b;
  ASSERT_EQ(mjdiff_convexGeom(m, d, con.geom1, &a), 0);
  ASSERT_EQ(mjdiff_convexGeom(m, d, con.geom2, &b), 0);
  cvxGeom a0 = a, b0 = b;
  cvxResult r1, r2;
  ASSERT_EQ(mjdiff_convexDistance(&a, &b, &r1), 0);
  ASSERT_EQ(mjdiff_convexDistance(&a, &b, &r2), 0);
  EXPECT_EQ(0, std::memcmp(&a, &a0, sizeof(a)));
  EXPECT_EQ(0, std::memcmp(&b, &b0, sizeof(b)));
  EXPECT_EQ(r1.phi, r2.phi);
  EXPECT_EQ(0, std::memcmp(r1.u, r2.u, sizeof(r1.u)));
  EXPECT_EQ(0, std::memcmp(r1.x1, r2.x1, sizeof(r1.x1)));
  EXPECT_EQ(0, std::memcmp(r1.x2, r2.x2, sizeof(r1.x2)));
  // a geom type without a support map here (the plane of a small model)
  testutil::Sim plane(
      "<mujoco><worldbody><geom type=\"plane\" size=\"1 1 0.1\"/></worldbody></mujoco>");
  ASSERT_TRUE(plane.ok) << plane.sim.err;
  cvxGeom p;
  EXPECT_EQ(mjdiff_convexGeom(plane.sim.m, plane.sim.d, 0, &p), -1);
}

}  // namespace

namespace {

// the hopper dropped on its height-field terrain with zero controls, derived defaults: MuJoCo's
// mechanical energy (kinetic + gravity; the smooth springs store little at rest) must not grow.
// One penalty contact per prism counted the surface twice near every cell edge and gained 22x the
// starting energy in 2 s (before the merge of prism contacts, convex.c).
TEST(ConvexHField, HopperOnTerrainGainsNoEnergy) {
  testutil::Sim sim(nullptr, shim_modelPath("hopper_terrain.xml"));
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  mjModel* m = sim.sim.m;
  mjData* d = sim.sim.d;
  m->opt.enableflags |= mjENBL_ENERGY;
  char err[1000];
  ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
  double E0 = d->energy[0] + d->energy[1], Emax = E0;
  int contactSteps = 0;
  for (int i = 0; i < 1000; i++) {
    ASSERT_EQ(mjdiff_step(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    contactSteps += d->ncon > 0;
    Emax = std::max(Emax, d->energy[0] + d->energy[1]);
  }
  EXPECT_GT(contactSteps, 500);
  EXPECT_LE(Emax, E0 + 0.05 * std::fabs(E0)) << "start " << E0;
}

}  // namespace
