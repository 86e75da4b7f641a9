// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Contact geometry Jacobian (adjoint/geom_d.c) against central finite differences of MuJoCo's own
// collision detection.
//
// For every supported geom pair: random relative poses that produce contacts (within the
// activation margin, shallow and deeper penetration, random and near-aligned orientations). For
// each contact, each of the 12 pose directions is perturbed by +-eps (translate d->geom_xpos, or
// rotate d->geom_xmat by exp([+-eps e_k]x) on the left), mj_collision is run again on a model view
// with the activation margins (as mjdiff_collide does), the perturbed contact is matched to the
// original (same geom pair, nearest pos) and y = (dist, n, pos) is differenced.
//
// Tolerance. eps = 1e-6 and a relative error max|J_fd - J| / max(1, max|J|) <= 1e-6. Central
// differences of a smooth function err by eps^2 |y'''| / 6 (1e-13 for unit-scale curvature) plus
// roundoff of about 1e-16 |y| / eps (1e-10): both are orders of magnitude under 1e-6, while a wrong
// or missing term in J is of order 1. Samples where the contact set changes within +-eps (the
// count changes, the matched contact jumps, or the one-sided slopes differ: a case switch of the
// pair function) are skipped and counted; at least 80% of the contacts must be checked.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../adjoint/derivative.h"
#include "../plugin/convex.h"
#include "shim.h"

namespace {

constexpr double kEps = 1e-6;
constexpr double kTol = 1e-6;
constexpr double kMargin = 0.1;

struct PairSpec {
  const char* name;
  const char* geom1;  // MJCF attributes of geom 1 (plane: in the world body)
  const char* geom2;
  int poses;    // random poses to draw
  double deep;  // deepest target distance (-)
};

const PairSpec kPairs[] = {
    {"PlaneSphere", "type=\"plane\" size=\"2 2 0.1\"", "type=\"sphere\" size=\"0.3\"", 30, 0.15},
    {"PlaneCapsule", "type=\"plane\" size=\"2 2 0.1\"", "type=\"capsule\" size=\"0.2 0.4\"", 30,
     0.15},
    {"PlaneCylinder", "type=\"plane\" size=\"2 2 0.1\"", "type=\"cylinder\" size=\"0.3 0.4\"", 40,
     0.15},
    {"PlaneBox", "type=\"plane\" size=\"2 2 0.1\"", "type=\"box\" size=\"0.3 0.4 0.5\"", 30, 0.15},
    {"SphereSphere", "type=\"sphere\" size=\"0.3\"", "type=\"sphere\" size=\"0.25\"", 30, 0.15},
    {"SphereCapsule", "type=\"sphere\" size=\"0.3\"", "type=\"capsule\" size=\"0.2 0.4\"", 30,
     0.15},
    {"SphereBox", "type=\"sphere\" size=\"0.3\"", "type=\"box\" size=\"0.3 0.4 0.5\"", 40, 0.15},
    {"CapsuleCapsule", "type=\"capsule\" size=\"0.2 0.4\"", "type=\"capsule\" size=\"0.15 0.3\"",
     30, 0.15},
    {"CapsuleBox", "type=\"capsule\" size=\"0.2 0.4\"", "type=\"box\" size=\"0.3 0.4 0.5\"", 60,
     0.15},
    // a long capsule on a small box: the second point clipped at the box's far side
    {"CapsuleBoxLong", "type=\"capsule\" size=\"0.1 0.8\"", "type=\"box\" size=\"0.15 0.2 0.25\"",
     60, 0.15},
    {"BoxBox", "type=\"box\" size=\"0.3 0.4 0.5\"", "type=\"box\" size=\"0.25 0.35 0.2\"", 80,
     0.15},
    // deep box-box penetration: the edge case's face-corner contacts (and the engine's reuse of the
    // determinant) show up
    {"BoxBoxDeep", "type=\"box\" size=\"0.3 0.4 0.5\"", "type=\"box\" size=\"0.25 0.35 0.2\"", 80,
     0.6},
};

// test names and failure messages show the pair's name
void PrintTo(const PairSpec& p, std::ostream* os) {
  *os << p.name;
}

const PairSpec& FindPair(const char* name) {
  for (const PairSpec& p : kPairs) {
    if (std::strcmp(p.name, name) == 0) return p;
  }
  return kPairs[0];
}

std::string PairXml(const PairSpec& p) {
  bool plane = std::strstr(p.geom1, "plane") != nullptr;
  std::string xml = "<mujoco><size nconmax=\"200\"/><worldbody>";
  if (plane) {
    xml += std::string("<geom name=\"g1\" ") + p.geom1 + "/>";
  } else {
    xml += std::string("<body><freejoint/><geom name=\"g1\" ") + p.geom1 + "/></body>";
  }
  xml += std::string("<body><freejoint/><geom name=\"g2\" ") + p.geom2 + "/></body>";
  xml += "</worldbody></mujoco>";
  return xml;
}

// contact values y = (dist, n, pos)
void ContactY(const mjContact& c, double y[7]) {
  y[0] = c.dist;
  for (int i = 0; i < 3; i++) {
    y[1 + i] = c.frame[i];
    y[4 + i] = c.pos[i];
  }
}

// a model, its data and the collision view with activation margins
class PairSim {
 public:
  explicit PairSim(const PairSpec& spec) {
    char err[1000] = "";
    m_ = shim_loadString(PairXml(spec).c_str(), err, sizeof(err));
    EXPECT_NE(m_, nullptr) << err;
    if (!m_) return;
    d_ = mj_makeData(m_);
    margin_.assign(static_cast<size_t>(m_->ngeom), kMargin);
    view_ = *m_;
    view_.geom_margin = margin_.data();
    mj_kinematics(m_, d_);
  }
  ~PairSim() {
    if (d_) mj_deleteData(d_);
    if (m_) mj_deleteModel(m_);
  }
  PairSim(const PairSim&) = delete;
  PairSim& operator=(const PairSim&) = delete;

  bool ok() const {
    return m_ && d_;
  }
  const mjModel* model() const {
    return m_;
  }
  mjData* data() {
    return d_;
  }

  // contacts at the current geom poses
  std::vector<mjContact> Collide() {
    mj_collision(&view_, d_);
    return std::vector<mjContact>(d_->contact, d_->contact + d_->ncon);
  }

  void SetPose(int g, const double pos[3], const double mat[9]) {
    mju_copy3(d_->geom_xpos + 3 * g, pos);
    mju_copy(d_->geom_xmat + 9 * g, mat, 9);
  }

 private:
  mjModel* m_ = nullptr;
  mjData* d_ = nullptr;
  mjModel view_;
  std::vector<mjtNum> margin_;
};

// random rotation: uniform, or near a reference orientation (small tilt, random yaw about its z)
void RandomRotation(std::mt19937_64& rng, double mat[9]) {
  std::normal_distribution<double> n01;
  double q[4] = {n01(rng), n01(rng), n01(rng), n01(rng)};
  mju_normalize4(q);
  mju_quat2Mat(mat, q);
}

void NearRotation(std::mt19937_64& rng, const double ref[9], bool lying, double mat[9]) {
  std::uniform_real_distribution<double> u01(0, 1);
  double yaw[4], tilt[4], lie[4], q[4], tmp[4], r[9];
  double z[3] = {0, 0, 1}, x[3] = {1, 0, 0};
  mju_axisAngle2Quat(yaw, z, 2 * mjPI * u01(rng));
  double axis[3] = {u01(rng) - 0.5, u01(rng) - 0.5, 0};
  mju_normalize3(axis);
  mju_axisAngle2Quat(tilt, axis, 0.25 * u01(rng));
  mju_axisAngle2Quat(lie, x, lying ? mjPI / 2 : 0);
  mju_mulQuat(tmp, yaw, tilt);
  mju_mulQuat(q, tmp, lie);
  mju_quat2Mat(r, q);
  mju_mulMatMat(mat, ref, r, 3, 3, 3);
}

// smallest contact distance of the current poses (huge if no contact)
double MinDist(PairSim& sim) {
  std::vector<mjContact> con = sim.Collide();
  double dmin = 1e10;
  for (const mjContact& c : con) dmin = std::min(dmin, static_cast<double>(c.dist));
  return dmin;
}

struct PairStats {
  int poses = 0;          // poses with contacts
  int contacts = 0;       // contacts seen
  int checked = 0;        // contacts checked against finite differences
  int skipped = 0;        // contacts skipped: the contact set changes within +-eps
  int skipped_count = 0;  // of which the contact count changed
  int failed_calls = 0;   // mjdiff_contactGeomJacobian returned an error
  double worst = 0;       // worst relative error
  bool differs = false;   // some finite difference differs from J (computed differently)
};

// perturb geom g's pose along direction k (0..2 translation, 3..5 rotation) by h
void Perturb(PairSim& sim, int g, int k, double h, const double pos[3], const double mat[9]) {
  double p[3], r[9];
  mju_copy3(p, pos);
  mju_copy(r, mat, 9);
  if (k < 3) {
    p[k] += h;
  } else {
    double e[3] = {0, 0, 0}, q[4], rq[9];
    e[k - 3] = 1;
    mju_axisAngle2Quat(q, e, h);
    mju_quat2Mat(rq, q);
    mju_mulMatMat(r, rq, mat, 3, 3, 3);
  }
  sim.SetPose(g, p, r);
}

// contact of the current poses nearest to pos; false if the contact count is not ncon
bool MatchContact(PairSim& sim, int ncon, const double pos[3], double y[7]) {
  std::vector<mjContact> con = sim.Collide();
  if (static_cast<int>(con.size()) != ncon) return false;
  int best = -1;
  double bestd = 1e300;
  for (size_t i = 0; i < con.size(); i++) {
    double dp[3];
    mju_sub3(dp, con[i].pos, pos);
    double dd = mju_dot3(dp, dp);
    if (dd < bestd) {
      bestd = dd;
      best = static_cast<int>(i);
    }
  }
  ContactY(con[static_cast<size_t>(best)], y);
  return true;
}

// check every contact of the current poses against central differences in the columns of z
// selected by colmask (bit k: column k)
void CheckContacts(PairSim& sim, PairStats* st, int colmask = 0xFFF) {
  const mjModel* m = sim.model();
  mjData* d = sim.data();
  std::vector<mjContact> con = sim.Collide();
  int ncon = static_cast<int>(con.size());
  double pose[2][12];
  for (int g = 0; g < 2; g++) {
    mju_copy3(pose[g], d->geom_xpos + 3 * g);
    mju_copy(pose[g] + 3, d->geom_xmat + 9 * g, 9);
  }

  for (const mjContact& c : con) {
    st->contacts++;
    double J[7 * 12];
    if (mjdiff_contactGeomJacobian(m, d, &c, J) != 0) {
      st->failed_calls++;
      continue;
    }
    double jmax = 0;
    for (double v : J) jmax = std::max(jmax, std::fabs(v));
    EXPECT_GT(jmax, 0.1) << "Jacobian is (nearly) zero";

    double y0[7], fd[7 * 12];
    ContactY(c, y0);
    for (int i = 0; i < 7 * 12; i++) fd[i] = J[i];
    bool stable = true;
    for (int col = 0; col < 12 && stable; col++) {
      if (!(colmask & (1 << col))) continue;
      int slot = col / 6, g = slot ? c.geom2 : c.geom1, k = col % 6;
      double yp[7], ym[7];
      Perturb(sim, g, k, kEps, pose[g], pose[g] + 3);
      bool okp = MatchContact(sim, ncon, c.pos, yp);
      Perturb(sim, g, k, -kEps, pose[g], pose[g] + 3);
      bool okm = MatchContact(sim, ncon, c.pos, ym);
      sim.SetPose(g, pose[g], pose[g] + 3);
      if (!okp || !okm) {
        stable = false;
        st->skipped_count++;
        break;
      }
      for (int i = 0; i < 7; i++) {
        double slope_p = (yp[i] - y0[i]) / kEps, slope_m = (y0[i] - ym[i]) / kEps;
        // a case switch within +-eps: a jump, or one-sided slopes that disagree
        if (std::fabs(slope_p - slope_m) > 1e-3 * (1 + jmax)) stable = false;
        fd[12 * i + col] = (yp[i] - ym[i]) / (2 * kEps);
      }
    }
    for (int g = 0; g < 2; g++) sim.SetPose(g, pose[g], pose[g] + 3);
    if (!stable) {
      st->skipped++;
      continue;
    }

    double err = 0;
    for (int i = 0; i < 7 * 12; i++) {
      if (!(colmask & (1 << (i % 12)))) continue;
      err = std::max(err, std::fabs(fd[i] - J[i]));
      if (fd[i] != J[i]) st->differs = true;
    }
    err /= std::max(1.0, jmax);
    st->checked++;
    st->worst = std::max(st->worst, err);
    EXPECT_LE(err, kTol) << "contact at dist " << c.dist << ", geoms " << c.geom1 << " " << c.geom2;
    if (err > kTol) {
      for (int i = 0; i < 7; i++) {
        std::string an, num;
        for (int j = 0; j < 12; j++) {
          char buf[64];
          std::snprintf(buf, sizeof(buf), " %10.6f", J[12 * i + j]);
          an += buf;
          std::snprintf(buf, sizeof(buf), " %10.6f", fd[12 * i + j]);
          num += buf;
        }
        ADD_FAILURE() << "row " << i << "\n  J  " << an << "\n  fd " << num;
      }
    }
  }
}

// one random pose with contacts at about the target distance: geom 1 at a random pose, geom 2
// along a random direction at the separation found by bisection
bool RandomPose(PairSim& sim, std::mt19937_64& rng, bool plane, double target) {
  std::uniform_real_distribution<double> u01(0, 1);
  std::normal_distribution<double> n01;
  double p1[3] = {u01(rng) - 0.5, u01(rng) - 0.5, u01(rng) - 0.5}, R1[9], R2[9];
  RandomRotation(rng, R1);
  int mode = static_cast<int>(3 * u01(rng));
  if (mode == 0) {
    RandomRotation(rng, R2);
  } else {
    NearRotation(rng, R1, mode == 2, R2);
  }
  double dir[3] = {n01(rng), n01(rng), n01(rng)};
  mju_normalize3(dir);
  if (plane) {
    // mostly above the plane
    double nz[3] = {R1[2], R1[5], R1[8]};
    mju_addToScl3(dir, nz, 1.5);
    mju_normalize3(dir);
  }
  sim.SetPose(0, p1, R1);

  auto place = [&](double s) {
    double p2[3];
    mju_addScl3(p2, p1, dir, s);
    sim.SetPose(1, p2, R2);
  };
  double lo = 0, hi = 3;
  place(lo);
  if (MinDist(sim) > target) return false;
  for (int it = 0; it < 60; it++) {
    double mid = 0.5 * (lo + hi);
    place(mid);
    if (MinDist(sim) > target) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  // step off the crossing: where the smallest distance jumps (a switch of the pair function's case)
  // bisection converges onto the switch itself
  place(lo - 0.005 * u01(rng));
  return MinDist(sim) < kMargin;
}

class GeomJacobian : public ::testing::TestWithParam<PairSpec> {};

TEST_P(GeomJacobian, MatchesFiniteDifferences) {
  const PairSpec& spec = GetParam();
  PairSim sim(spec);
  ASSERT_TRUE(sim.ok());
  const mjModel* m = sim.model();
  ASSERT_TRUE(mjdiff_contactPairSupported(m->geom_type[0], m->geom_type[1]));
  bool plane = m->geom_type[0] == mjGEOM_PLANE;

  // targets: within the margin, shallow, deeper
  const double targets[] = {0.5 * kMargin, -0.01, -spec.deep / 3, -spec.deep};
  std::mt19937_64 rng(12345);
  PairStats st;
  int attempts = 0;
  while (st.poses < spec.poses && attempts < 20 * spec.poses) {
    double target = targets[attempts++ % 4];
    if (!RandomPose(sim, rng, plane, target)) continue;
    st.poses++;
    CheckContacts(sim, &st);
  }

  std::printf(
      "%-15s poses %3d contacts %4d checked %4d skipped %3d (count %3d) errors %d "
      "worst %.2e\n",
      spec.name, st.poses, st.contacts, st.checked, st.skipped, st.skipped_count, st.failed_calls,
      st.worst);
  RecordProperty("worst_relative_error", std::to_string(st.worst));
  EXPECT_GE(st.poses, 20);
  EXPECT_EQ(st.failed_calls, 0);
  EXPECT_GE(st.checked, 0.8 * st.contacts);
  EXPECT_TRUE(st.differs) << "analytic and finite-difference Jacobians are bit-identical";
}

INSTANTIATE_TEST_SUITE_P(Pairs, GeomJacobian, ::testing::ValuesIn(kPairs),
                         [](const ::testing::TestParamInfo<PairSpec>& info) {
                           return std::string(info.param.name);
                         });

// sphere-box with the sphere's centre inside the box (the engine's dist is then -r whatever the
// depth), and capsule-capsule with exactly parallel axes (the engine's end-against-segment branch;
// only translations keep the axes parallel, so only those columns are differenced)
TEST(GeomJacobianCases, SphereInsideBoxAndParallelCapsules) {
  std::mt19937_64 rng(777);
  std::uniform_real_distribution<double> u01(0, 1);
  for (int which = 0; which < 2; which++) {
    const PairSpec& spec = FindPair(which ? "CapsuleCapsule" : "SphereBox");
    PairSim sim(spec);
    ASSERT_TRUE(sim.ok());
    PairStats st;
    for (int k = 0; k < 30; k++) {
      double p1[3] = {u01(rng) - 0.5, u01(rng) - 0.5, u01(rng) - 0.5}, R1[9], R2[9], p2[3];
      RandomRotation(rng, R1);
      const mjtNum* s2 = sim.model()->geom_size + 3;
      if (which == 0) {
        // box at p1, sphere centre inside it (geom 0 is the sphere)
        RandomRotation(rng, R2);
        double l[3], w[3];
        for (int i = 0; i < 3; i++) l[i] = 0.9 * s2[i] * (2 * u01(rng) - 1);
        mju_mulMatVec(w, R2, l, 3, 3);
        mju_add3(p2, p1, w);
        sim.SetPose(0, p2, R1);
        sim.SetPose(1, p1, R2);
      } else {
        // parallel axes (same or opposite), offset sideways and along the axis
        mju_copy(R2, R1, 9);
        if (u01(rng) < 0.5) {
          for (int i = 0; i < 9; i++) R2[i] = (i % 3 == 0) ? R1[i] : -R1[i];  // flip y and z
        }
        double x[3] = {R1[0], R1[3], R1[6]}, z[3] = {R1[2], R1[5], R1[8]};
        mju_addScl3(p2, p1, x, 0.3 + 0.04 * u01(rng));
        mju_addToScl3(p2, z, 0.6 * (2 * u01(rng) - 1));
        sim.SetPose(0, p1, R1);
        sim.SetPose(1, p2, R2);
      }
      if (sim.Collide().empty()) continue;
      st.poses++;
      CheckContacts(sim, &st, which ? 0x1C7 : 0xFFF);  // parallel: dx1 and dx2 only
    }
    std::printf("%-15s poses %3d contacts %4d checked %4d skipped %3d errors %d worst %.2e\n",
                which ? "Capsule||Caps." : "SphereInBox", st.poses, st.contacts, st.checked,
                st.skipped, st.failed_calls, st.worst);
    EXPECT_GE(st.poses, 20);
    EXPECT_EQ(st.failed_calls, 0);
    EXPECT_GE(st.checked, 0.8 * st.contacts);
    EXPECT_TRUE(st.differs);
  }
}

// the supported table: MuJoCo's closed-form pair functions and the pairs it sends to mjc_Convex
// and mjc_ConvexHField (exact geometry, convex.c); not plane-convex
TEST(GeomJacobianTable, SupportedPairs) {
  const int supported[][2] = {{mjGEOM_PLANE, mjGEOM_SPHERE},   {mjGEOM_PLANE, mjGEOM_CAPSULE},
                              {mjGEOM_PLANE, mjGEOM_CYLINDER}, {mjGEOM_PLANE, mjGEOM_BOX},
                              {mjGEOM_SPHERE, mjGEOM_SPHERE},  {mjGEOM_SPHERE, mjGEOM_CAPSULE},
                              {mjGEOM_SPHERE, mjGEOM_BOX},     {mjGEOM_CAPSULE, mjGEOM_CAPSULE},
                              {mjGEOM_CAPSULE, mjGEOM_BOX},    {mjGEOM_BOX, mjGEOM_BOX}};
  for (int t1 = 0; t1 < mjNGEOMTYPES; t1++) {
    for (int t2 = t1; t2 < mjNGEOMTYPES; t2++) {
      bool expect = false;
      for (const auto& p : supported) expect = expect || (p[0] == t1 && p[1] == t2);
      expect = expect || mjdiff_convexPair(t1, t2);  // exact convex geometry (test_convex.cc)
      EXPECT_EQ(mjdiff_contactPairSupported(t1, t2) != 0, expect) << t1 << " " << t2;
    }
  }
}

// an unsupported pair (plane-ellipsoid, libccd) and a contact that is not the geoms' fail with -1
TEST(GeomJacobianTable, ErrorsAndInputs) {
  PairSpec ell = {"PlaneEllipsoid", "type=\"plane\" size=\"2 2 0.1\"",
                  "type=\"ellipsoid\" size=\"0.3 0.2 0.1\"", 1, 0.15};
  PairSim sim(ell);
  ASSERT_TRUE(sim.ok());
  double p[3] = {0, 0, 0.05}, eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zero[3] = {0, 0, 0};
  sim.SetPose(0, zero, eye);
  sim.SetPose(1, p, eye);
  std::vector<mjContact> con = sim.Collide();
  ASSERT_FALSE(con.empty());
  double J[7 * 12];
  EXPECT_EQ(mjdiff_contactGeomJacobian(sim.model(), sim.data(), &con[0], J), -1);

  // sphere on a plane: inputs untouched, repeatable; a displaced contact does not match
  PairSim sph(FindPair("PlaneSphere"));
  ASSERT_TRUE(sph.ok());
  double q[3] = {0.1, 0.2, 0.28};
  sph.SetPose(0, zero, eye);
  sph.SetPose(1, q, eye);
  con = sph.Collide();
  ASSERT_EQ(con.size(), 1u);
  mjContact before = con[0];
  std::vector<mjtNum> xpos(sph.data()->geom_xpos, sph.data()->geom_xpos + 6);
  double J2[7 * 12];
  ASSERT_EQ(mjdiff_contactGeomJacobian(sph.model(), sph.data(), &con[0], J), 0);
  ASSERT_EQ(mjdiff_contactGeomJacobian(sph.model(), sph.data(), &con[0], J2), 0);
  EXPECT_EQ(std::memcmp(&before, &con[0], sizeof(mjContact)), 0);
  EXPECT_EQ(std::memcmp(xpos.data(), sph.data()->geom_xpos, 6 * sizeof(mjtNum)), 0);
  EXPECT_EQ(std::memcmp(J, J2, sizeof(J)), 0);

  // sphere on a plane: dist = z - r, so ddist/dx2 = e_z and ddist/dx1 = -e_z
  EXPECT_DOUBLE_EQ(J[8], 1);
  EXPECT_DOUBLE_EQ(J[2], -1);

  con[0].pos[0] += 0.5;
  EXPECT_EQ(mjdiff_contactGeomJacobian(sph.model(), sph.data(), &con[0], J), -1);
}

}  // namespace
