// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Physics of the smooth model against its force laws (plugin/include/mjdiff/smooth.h, law.h):
// rest penetration, stick and slide on an incline, bounce energy, smoothness of contact onset,
// per-contact friction by condim, joint limits, friction loss and equality penalties.
//
// Expected values come from the formulas as documented in smooth.h, written out here (Ramp,
// Damped), not from the plugin's own law.h helpers; law.h only supplies law_rampInverse, itself
// checked against Ramp. Every comparison states why its tolerance is what it is: algebraic checks
// are tight (the same closed form, so only roundoff separates the two); simulated checks are as
// loose as the residual transient or the discretisation requires.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "law.h"
#include "shim.h"
#include "testutil.h"

namespace {

//---------------------------------- helpers -------------------------------------------------------

// printf into a std::string
std::string Format(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

std::string Format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  va_end(args);
  return std::string(buf.data(), static_cast<size_t>(n));
}

// a loaded model with data and smooth model, closed on scope exit
class Sim {
 public:
  explicit Sim(const std::string& xml) : sim_(xml.c_str()) {}

  bool ok() const {
    return sim_.ok;
  }
  const char* err() const {
    return sim_.sim.err;
  }
  mjModel* m() const {
    return sim_.sim.m;
  }
  mjData* d() const {
    return sim_.sim.d;
  }
  mjdiffModel* s() const {
    return sim_.sim.s;
  }

  mjdiffStatus Steps(int n) {
    return shim_steps(&sim_.sim, n);
  }
  mjdiffStatus Forward() {
    shimSim& x = sim_.sim;
    return mjdiff_forward(x.m, x.d, x.s, x.err, sizeof(x.err));
  }

 private:
  testutil::Sim sim_;
};

// seconds to steps
int StepsFor(const mjModel* m, double seconds) {
  return static_cast<int>(std::lround(seconds / m->opt.timestep));
}

double GravityOf(const mjModel* m) {
  const mjtNum* g = m->opt.gravity;
  return std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
}

// the ramp s(x) of smooth.h, derivative in *ds
double Ramp(double x, double w, double* ds) {
  if (x <= 0) {
    *ds = 0;
    return 0;
  }
  if (x <= w) {
    *ds = x * x / (2 * w * w);
    return x * x * x / (6 * w * w);
  }
  if (x <= 2 * w) {
    *ds = 1 - (2 * w - x) * (2 * w - x) / (2 * w * w);
    return x - w + (2 * w - x) * (2 * w - x) * (2 * w - x) / (6 * w * w);
  }
  *ds = 1;
  return x - w;
}

// the damped normal force of smooth.h: g = k s(x), e = -c s'(x) vn (vn > 0 separating),
// fn = g + e (e >= -g/2), g^2 / (-4 e) (e < -g/2)
double Damped(double k, double c, double w, double x, double vn) {
  double ds, g = k * Ramp(x, w, &ds);
  double e = -c * ds * vn;
  return e >= -g / 2 ? g + e : g * g / (-4 * e);
}

// |a - b| <= rel * |b| (or <= rel when b is 0)
::testing::AssertionResult RelNear(double a, double b, double rel) {
  double tol = rel * (b != 0 ? std::fabs(b) : 1.0);
  if (std::fabs(a - b) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << Format("%.17g vs expected %.17g: relative error %.3g > %.3g", a, b,
                   std::fabs(a - b) / (b != 0 ? std::fabs(b) : 1.0), rel);
}

// a sphere with a free joint over the plane z = 0
struct SphereSpec {
  double mass = 1;
  double radius = 0.05;
  double stiffness = 1e4;  // contact_stiffness (N/m)
  double damping = 50;     // contact_damping (N s/m)
  double width = 2e-3;     // contact_width (m)
  double height = 0.1;     // initial height of the centre (m)
  double timestep = 2e-3;
  const char* integrator = "Euler";
};

std::string SphereXml(const SphereSpec& p) {
  return Format(R"(
<mujoco>
  <option timestep="%.17g" integrator="%s"/>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="%.17g"/>
    <numeric name="mjdiff_contact_damping" data="%.17g"/>
    <numeric name="mjdiff_contact_width" data="%.17g"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="ball" pos="0 0 %.17g">
      <freejoint/>
      <geom name="ball" type="sphere" size="%.17g" mass="%.17g"/>
    </body>
  </worldbody>
</mujoco>)",
                p.timestep, p.integrator, p.stiffness, p.damping, p.width, p.height, p.radius,
                p.mass);
}

//---------------------------------- 1. rest penetration -------------------------------------------

// At rest the normal force carries the weight: k s(x) = m g with x = w - dist (the damping term
// vanishes with vn), so dist = w - s^-1(m g / k). The equilibrium is a fixed point of both
// integrators, so only the residual oscillation separates the measured from the predicted distance.
TEST(Physics, SphereRestPenetration) {
  struct Case {
    const char* name;
    double mass, stiffness, width;
    int zone;  // 0: 0 < x < w, 1: w < x < 2w (both smoothing), 2: x > 2w (linear)
  };
  const Case cases[] = {
      {"smoothing zone, x < w (resting above the plane)", 0.1, 1e4, 2e-3, 0},
      {"smoothing zone, w < x < 2w", 1.2, 1e4, 2e-3, 1},
      {"linear zone, x > 2w", 2.0, 2e3, 2e-3, 2},
  };
  for (const char* integrator : {"Euler", "RK4"}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(Format("%s, %s", integrator, c.name));
      SphereSpec p;
      p.mass = c.mass;
      p.stiffness = c.stiffness;
      p.width = c.width;
      p.height = p.radius + p.width;  // start at the edge of activation (x = 0), at rest
      p.integrator = integrator;
      Sim sim(SphereXml(p));
      ASSERT_TRUE(sim.ok()) << sim.err();

      // predicted activation depth and distance; guard: the inverse really inverts s
      double g = GravityOf(sim.m());
      double x = law_rampInverse(c.mass * g / c.stiffness, c.width);
      double ds;
      ASSERT_TRUE(RelNear(Ramp(x, c.width, &ds), c.mass * g / c.stiffness, 1e-12));
      double dist_pred = c.width - x;
      int zone = x < c.width ? 0 : x < 2 * c.width ? 1 : 2;
      ASSERT_EQ(zone, c.zone) << "the case does not test the zone it claims, x = " << x;

      // settle 2 s: the slowest decay, c s'(x) / 2m >= 12/s over these cases, leaves < e^-24
      ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 2.0)), MJDIFF_OK) << sim.err();
      double dist = sim.d()->qpos[2] - p.radius;

      // 2% of the predicted penetration |dist|, as briefed; the settled transient is ~1e-8 of it,
      // while using the wrong branch of s (e.g. the linear x - w in the smoothing zone) misses by
      // more than 10%
      EXPECT_TRUE(RelNear(dist, dist_pred, 0.02))
          << "predicted x = " << x << ", measured x = " << c.width - dist;
    }
  }
}

//---------------------------------- 2-3. incline -------------------------------------------------

// a 10 cm, 1 kg box on the plane z = 0 with gravity tilted by theta about y (down the slope is +x)
struct InclineSpec {
  double mu = 0.5;
  double theta = 0;
  double friction_speed = 1e-3;
  double timestep = 5e-5;
};

std::string InclineXml(const InclineSpec& p) {
  const double g = 9.81;
  return Format(R"(
<mujoco>
  <option timestep="%.17g" gravity="%.17g 0 %.17g"/>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="1e4"/>
    <numeric name="mjdiff_contact_damping" data="50"/>
    <numeric name="mjdiff_contact_width" data="2e-3"/>
    <numeric name="mjdiff_friction_speed" data="%.17g"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="50 50 0.1" friction="%.17g 0.005 0.0001"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1" friction="%.17g 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>)",
                p.timestep, g * std::sin(p.theta), -g * std::cos(p.theta), p.friction_speed, p.mu,
                p.mu);
}

// Stick: with tan(theta) = 0.5 mu the regularised Coulomb law holds the box at the creep speed
// where mu fn r(u) = m g sin(theta): u / sqrt(1 + u^2) = tan(theta) / mu = 1/2, so
// v = v_e r / sqrt(1 - r^2) = v_e / sqrt(3), v_e = v_s + h A mu fn the load-scaled speed (law.h),
// solved over the four corner contacts with their normal forces.
// Chosen: mu = 0.5, v_s = friction_speed = 1 mm/s (predicted creep 0.577 mm/s), timestep 50 us.
// Explicit friction is stable for v_s >~ 1.5 mu g dt = 0.37 mm/s; the box's yaw mode is three times
// stiffer (corner contacts at radius sqrt(2) a against inertia 2/3 m a^2), which the 50 us step
// also keeps stable (dt * 3 mu g / v_s = 0.74 < 2).
TEST(Physics, InclineStick) {
  InclineSpec p;
  p.theta = std::atan(0.5 * p.mu);
  Sim sim(InclineXml(p));
  ASSERT_TRUE(sim.ok()) << sim.err();
  double ratio = std::tan(p.theta) / p.mu;

  // settle 0.5 s, then average the speed along the slope over 2 s
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 0.5)), MJDIFF_OK) << sim.err();
  double x0 = sim.d()->qpos[0], t0 = sim.d()->time;
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 2.0)), MJDIFF_OK) << sim.err();
  double creep = (sim.d()->qpos[0] - x0) / (sim.d()->time - t0);

  // the explicit friction speed is used as given: v = v_s r / sqrt(1 - r^2)
  double creep_pred = p.friction_speed * ratio / std::sqrt(1 - ratio * ratio);
  ASSERT_LT(creep_pred, 1e-3);

  // the stick criterion: under 1 mm/s
  EXPECT_LT(std::fabs(creep), 1e-3);

  // 10%: the steady creep is exact for the law; the only error is the settling transient (the
  // sliding mode decays at ~mu g / v_s = 5000/s, the bounce at ~40/s), so a law of another shape
  // (u / (1 + |u|), tanh u, or mu applied to the wrong normal load) misses by more than 15%
  EXPECT_TRUE(RelNear(creep, creep_pred, 0.1));
}

// Stick with the derived friction speed (no mjdiff_friction_speed): the speed v_s = max(0.02,
// 5 mu |g| h) is scaled by the load, v_e = v_s + h A mu fn (law.h), at a timestep where the scale
// matters (5 ms). The creep v solves sum_i mu fn_i r(v / v_e,i) = m g sin(theta) over the four
// corner contacts, A = invweight0_t + rho^2 invweight0_r of the box (rho its bounding radius).
TEST(Physics, InclineStickDerivedSpeed) {
  InclineSpec p;
  p.theta = std::atan(0.5 * p.mu);
  p.timestep = 5e-3;
  std::string xml = InclineXml(p);
  size_t at = xml.find("<numeric name=\"mjdiff_friction_speed\"");
  ASSERT_NE(at, std::string::npos);
  xml.erase(at, xml.find("/>", at) + 2 - at);
  Sim sim(xml);
  ASSERT_TRUE(sim.ok()) << sim.err();
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 1.0)), MJDIFF_OK) << sim.err();
  double x0 = sim.d()->qpos[0], t0 = sim.d()->time;
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 2.0)), MJDIFF_OK) << sim.err();
  double creep = (sim.d()->qpos[0] - x0) / (sim.d()->time - t0);

  const mjModel* m = sim.m();
  const mjData* d = sim.d();
  int b = mj_name2id(m, mjOBJ_BODY, "box"), gb = mj_name2id(m, mjOBJ_GEOM, "box");
  double rho = m->geom_rbound[gb];
  double A = m->body_invweight0[2 * b] + rho * rho * m->body_invweight0[2 * b + 1];
  std::vector<double> fn;
  for (int i = 0; i < d->ncon; i++) {
    mjdiffContactForce cf;
    ASSERT_EQ(mjdiff_contactForce(m, d, sim.s(), i, &cf), MJDIFF_OK);
    if (cf.force[0] > 0) fn.push_back(cf.force[0]);
  }
  ASSERT_EQ(fn.size(), 4u);
  double h = m->opt.timestep / mjdiff_substepCount(sim.s());  // the substep the law is at
  double vs = std::max(0.02, 5 * p.mu * GravityOf(m) * h);
  double load = GravityOf(m) * std::sin(p.theta), lo = 0, hi = 1;
  for (int it = 0; it < 200; it++) {
    double v = 0.5 * (lo + hi), f = 0;
    for (double n : fn) {
      double u = v / (vs + h * A * p.mu * n);
      f += p.mu * n * u / std::sqrt(1 + u * u);
    }
    (f > load ? hi : lo) = v;
  }
  double creep_pred = 0.5 * (lo + hi);
  double ratio = std::tan(p.theta) / p.mu;
  double creep_unscaled = vs * ratio / std::sqrt(1 - ratio * ratio);
  ASSERT_GT(creep_pred, 1.1 * creep_unscaled) << "the load scaling must show in this case";

  // 10%, as for the explicit speed; the unscaled law misses by more than the 10% the guard sets
  EXPECT_TRUE(RelNear(creep, creep_pred, 0.1)) << "unscaled prediction " << creep_unscaled;
}

// Slide: with tan(theta) = 1.5 mu the box accelerates at g (sin(theta) - mu cos(theta)) once its
// speed is far above v_s (at 1 m/s, u = 1000 and the regularised law is within 5e-7 of Coulomb).
TEST(Physics, InclineSlide) {
  InclineSpec p;
  p.theta = std::atan(1.5 * p.mu);
  Sim sim(InclineXml(p));
  ASSERT_TRUE(sim.ok()) << sim.err();
  double g = GravityOf(sim.m());
  double acc_pred = g * (std::sin(p.theta) - p.mu * std::cos(p.theta));

  // slide 0.5 s (speed ~1 m/s >> v_s), then least-squares fit v(t) = a t + c over the last second
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 0.5)), MJDIFF_OK) << sim.err();
  ASSERT_GT(sim.d()->qvel[0], 500 * p.friction_speed);
  int n = StepsFor(sim.m(), 1.0);
  double st = 0, sv = 0, stt = 0, stv = 0;
  for (int i = 0; i < n; i++) {
    ASSERT_EQ(sim.Steps(1), MJDIFF_OK) << sim.err();
    double t = sim.d()->time, v = sim.d()->qvel[0];
    st += t;
    sv += v;
    stt += t * t;
    stv += t * v;
  }
  double acc = (n * stv - st * sv) / (n * stt - st * st);

  // 5%: Coulomb sliding is reached to 1e-6 and Euler is exact for a constant acceleration; the
  // margin is for the normal-force bounce left from the start. Frictionless sliding would be 200%
  // off, and mu cos(theta) replaced by mu (normal load m g) 10% off.
  EXPECT_TRUE(RelNear(acc, acc_pred, 0.05));
}

//---------------------------------- 4. bounce energy ----------------------------------------------

// mechanical energy at each apex: vz from + to -, out of the activation zone
std::vector<double> ApexEnergies(Sim* sim, double radius, double width, double seconds) {
  std::vector<double> energy;
  int n = StepsFor(sim->m(), seconds);
  double vz_prev = sim->d()->qvel[2];
  for (int i = 0; i < n; i++) {
    if (sim->Steps(1) != MJDIFF_OK) {
      ADD_FAILURE() << sim->err();
      break;
    }
    double vz = sim->d()->qvel[2];
    if (vz_prev > 0 && vz <= 0 && sim->d()->qpos[2] - radius > width) {
      energy.push_back(shim_mechanicalEnergy(sim->m(), sim->d()));
    }
    vz_prev = vz;
  }
  return energy;
}

// a 1 kg ball dropped from 0.45 m, k = 1e4 N/m (w = sqrt(k/m) = 100/s), timestep 1 ms
TEST(Physics, BounceEnergy) {
  SphereSpec p;
  p.mass = 1;
  p.height = 0.5;
  p.timestep = 1e-3;
  {
    // damped (c = 20 N s/m, damping ratio ~0.1 in the linear zone): strictly decreasing, no
    // tolerance. The damping opposes vn in approach and only weakens the push in separation, so
    // every impact dissipates; the ballistic phase of semi-implicit Euler keeps E - (h/2) m g vz
    // exactly, so E sampled at vz ~ 0 cannot grow between impacts (by more than m g^2 h^2 / 2 =
    // 5e-5 J, far below the loss of any bounce recorded here).
    SCOPED_TRACE("damped");
    p.damping = 20;
    Sim sim(SphereXml(p));
    ASSERT_TRUE(sim.ok()) << sim.err();
    std::vector<double> e = ApexEnergies(&sim, p.radius, p.width, 3.0);
    ASSERT_GE(e.size(), 3u);
    for (size_t i = 1; i < e.size(); i++) EXPECT_LT(e[i], e[i - 1]) << "apex " << i;
  }
  {
    // Pure spring (c = 0) under semi-implicit Euler: symplectic, so it keeps a modified energy
    // E - (h/2) v.F + O((w h)^2 E) with no drift. At an apex the v.F term vanishes; the O((w h)^2)
    // term (w h = 0.1) acts only inside the contact, and passing the C2 joints of s(x) leaves a
    // bounded per-bounce error, measured below 1.4e-4 over 40 bounces (bounded, not drifting; 4e-4
    // at 2 ms, 1e-5 at 0.5 ms). We allow 1e-3 = (w h)^2 / 10: explicit (non-symplectic) Euler
    // would gain ~17% per bounce here, and leftover damping would lose > 1%.
    SCOPED_TRACE("pure spring");
    p.damping = 0;
    Sim sim(SphereXml(p));
    ASSERT_TRUE(sim.ok()) << sim.err();
    double e0 = shim_mechanicalEnergy(sim.m(), sim.d());
    std::vector<double> e = ApexEnergies(&sim, p.radius, p.width, 6.0);
    ASSERT_GE(e.size(), 8u);
    for (size_t i = 0; i < e.size(); i++) EXPECT_TRUE(RelNear(e[i], e0, 1e-3)) << "apex " << i;
  }
}

//---------------------------------- 5. onset smoothness -------------------------------------------

// D_i = d qacc_z / d qpos_z by central differences at dist_i = 2w - 5w i/n (i = 0..n), through
// contact onset; native: MuJoCo's own mj_forward with its hard contacts, on the same model
std::vector<double> OnsetDerivative(Sim* sim, double radius, double width, double vz, int n,
                                    bool native) {
  // 5e-5 w: truncation eps^2 |f'''| / 6 and roundoff |qacc| 1e-16 / eps are both < 1e-6 of the
  // range of D
  const double eps = 1e-7;
  std::vector<double> D;
  mjData* d = sim->d();
  for (int i = 0; i <= n; i++) {
    double dist = 2 * width - 5 * width * i / n;
    double acc[2];
    for (int side = 0; side < 2; side++) {
      mj_resetData(sim->m(), d);
      d->qpos[2] = radius + dist + (side ? eps : -eps);
      d->qvel[2] = vz;
      if (native) {
        mj_forward(sim->m(), d);
      } else if (sim->Forward() != MJDIFF_OK) {
        ADD_FAILURE() << sim->err();
        return D;
      }
      acc[side] = d->qacc[2];
    }
    D.push_back((acc[1] - acc[0]) / (2 * eps));
  }
  return D;
}

double MaxJump(const std::vector<double>& D) {
  double jump = 0;
  for (size_t i = 1; i < D.size(); i++) jump = std::max(jump, std::fabs(D[i] - D[i - 1]));
  return jump;
}

double Range(const std::vector<double>& D) {
  return *std::max_element(D.begin(), D.end()) - *std::min_element(D.begin(), D.end());
}

// Smooth: m D = -d fn/dx with fn = k s(x) + c s'(x) |vn| while approaching. |s''| <= 1/w and
// |s'''| = 1/w^2, so over a sweep step dx = 5w/400 the first differences obey
//   |D_{i+1} - D_i| <= (k/w + c|vn|/w^2) dx / m                        (D is Lipschitz: no jump)
// and the second differences <= (k dx^2 + 2 c|vn| dx) / (m w^2) (s''' jumps by 2/w^2 at x = w);
// 2% slack on each covers the finite-difference error (< 1e-6 of the range). The brief's
// threshold, max jump < 5% of the range, is then shown to fail on MuJoCo's hard contact, whose D
// steps from 0 to its full contact stiffness at dist = 0.
TEST(Physics, OnsetSmoothness) {
  SphereSpec p;
  Sim sim(SphereXml(p));
  ASSERT_TRUE(sim.ok()) << sim.err();
  const int n = 400;
  const double dx = 5 * p.width / n, w = p.width;
  for (double vz : {0.0, -0.2}) {
    SCOPED_TRACE(Format("approach speed %g m/s", -vz));
    double cv = p.damping * std::fabs(vz);
    std::vector<double> D = OnsetDerivative(&sim, p.radius, w, vz, n, false);
    ASSERT_EQ(D.size(), static_cast<size_t>(n + 1));

    // the sweep spans the whole law: D goes from 0 (no contact) to -k/m (linear zone, where the
    // damping term c |vn| is constant)
    double scale = p.stiffness / p.mass;
    EXPECT_NEAR(D.front(), 0, 1e-6 * scale);
    EXPECT_NEAR(D.back(), -scale, 1e-6 * scale);
    double range = Range(D);

    // derived bounds on the first and second differences
    double jump = MaxJump(D);
    EXPECT_LE(jump, 1.02 * (p.stiffness / w + cv / (w * w)) * dx / p.mass);
    double second = 0;
    for (int i = 1; i < n; i++) {
      second = std::max(second, std::fabs(D[i + 1] - 2 * D[i] + D[i - 1]));
    }
    EXPECT_LE(second,
              1.02 * (p.stiffness * dx * dx + 2 * cv * dx) / (p.mass * w * w) + 1e-6 * range);

    // the brief's threshold
    EXPECT_LT(jump, 0.05 * range);

    // guard: the same threshold catches MuJoCo's hard contact
    std::vector<double> Dn = OnsetDerivative(&sim, p.radius, w, vz, n, true);
    ASSERT_EQ(Dn.size(), static_cast<size_t>(n + 1));
    EXPECT_GT(MaxJump(Dn), 0.05 * Range(Dn)) << "the smoothness check cannot tell a hard contact";
  }
}

//---------------------------------- 6. friction by condim -----------------------------------------

// derived_speed: the friction speed is left to the smooth model (derived, then scaled by the load)
std::string CondimXml(int condim, bool derived_speed = false) {
  return Format(R"(
<mujoco>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="1e4"/>
    <numeric name="mjdiff_contact_damping" data="50"/>
    <numeric name="mjdiff_contact_width" data="2e-3"/>
    %s
    <numeric name="mjdiff_spin_speed" data="0.5"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" condim="%d" friction="0.8 0.03 0.002"/>
    <body name="ball" pos="0 0 0.1">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" mass="1" condim="%d" friction="0.8 0.03 0.002"/>
    </body>
  </worldbody>
</mujoco>)",
                derived_speed ? "" : "<numeric name=\"mjdiff_friction_speed\" data=\"0.05\"/>",
                condim, condim);
}

// At a known state (dist = -1 mm; slip, spin and rolling speeds of the order of v_s and w_s, so
// the regulariser is far from saturated), the per-contact force equals the smooth.h formulas with
// the relative velocity computed here from qvel and the contact frame. 1e-9 relative: both sides
// evaluate the same closed form from the same state, differing only in the order of roundoff
// (~1e-15); any wrong factor, sign, speed or missing component is O(1).
TEST(Physics, FrictionCondim) {
  const double k = 1e4, c = 50, w = 2e-3, ws = 0.5, radius = 0.1, tol = 1e-9;
  // two states: approaching (damping adds to the spring) and separating fast (the g^2 / (-4e)
  // branch)
  const double qvel_cases[2][6] = {{0.03, -0.02, -0.05, 0.3, -0.2, 0.4},
                                   {-0.04, 0.01, 0.4, -0.6, 0.25, -0.3}};
  for (int condim : {1, 3, 4, 6}) {
    for (const auto& qvel : qvel_cases) {
     for (bool derived : {false, true}) {
      SCOPED_TRACE(Format("condim %d, vz = %g, friction speed %s", condim, qvel[2],
                          derived ? "derived" : "explicit"));
      Sim sim(CondimXml(condim, derived));
      ASSERT_TRUE(sim.ok()) << sim.err();
      mjModel* m = sim.m();
      mjData* d = sim.d();
      d->qpos[2] = radius - 1e-3;
      for (int i = 0; i < 6; i++) d->qvel[i] = qvel[i];
      ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
      ASSERT_EQ(d->ncon, 1);
      const mjContact* con = d->contact;
      ASSERT_EQ(con->geom1, mj_name2id(m, mjOBJ_GEOM, "floor"));
      ASSERT_EQ(con->geom2, mj_name2id(m, mjOBJ_GEOM, "ball"));
      ASSERT_EQ(con->dim, condim);
      const double mu[5] = {0.8, 0.8, 0.03, 0.002, 0.002};
      for (int i = 0; i < 5; i++) ASSERT_DOUBLE_EQ(con->friction[i], mu[i]);
      EXPECT_NEAR(con->dist, -1e-3, 1e-12);

      // velocity of the ball at the contact point (the floor is static), in the contact frame
      const double* xpos = d->xpos + 3;
      const double* xmat = d->xmat + 9;
      double omega[3], r[3], v[3], vc[3], wc[3];
      for (int i = 0; i < 3; i++) {
        omega[i] = xmat[3 * i] * qvel[3] + xmat[3 * i + 1] * qvel[4] + xmat[3 * i + 2] * qvel[5];
        r[i] = con->pos[i] - xpos[i];
      }
      v[0] = qvel[0] + omega[1] * r[2] - omega[2] * r[1];
      v[1] = qvel[1] + omega[2] * r[0] - omega[0] * r[2];
      v[2] = qvel[2] + omega[0] * r[1] - omega[1] * r[0];
      for (int i = 0; i < 3; i++) {
        vc[i] = wc[i] = 0;
        for (int j = 0; j < 3; j++) {
          vc[i] += con->frame[3 * i + j] * v[j];
          wc[i] += con->frame[3 * i + j] * omega[j];
        }
      }

      // expected: fn, then -fn mu u / sqrt(1 + |u|^2) for slip, spin and roll, u = speed / v_e
      // with the load-scaled speeds v_e = v + h A mu fn (law.h): A the ball's inverse inertia at
      // its surface (translation plus radius^2 times rotation) or its rotational one
      // (explicit speeds are used as given; derived: max(0.02, 5 mu |g| h), then scaled)
      double fn = Damped(k, c, w, w - con->dist, vc[0]);
      double h = m->opt.timestep;
      double vs = derived ? std::max(0.02, 5 * mu[0] * GravityOf(m) * h) : 0.05;
      double At = derived ? m->body_invweight0[2] + radius * radius * m->body_invweight0[3] : 0;
      double Ar = derived ? m->body_invweight0[3] : 0;
      double vse = vs + h * At * mu[0] * fn, wse2 = ws + h * Ar * mu[2] * fn;
      double wse3 = ws + h * Ar * mu[3] * fn;
      double exp_force[3] = {fn, 0, 0}, exp_torque[3] = {0, 0, 0};
      if (condim >= 3) {
        double u1 = vc[1] / vse, u2 = vc[2] / vse, q = std::sqrt(1 + u1 * u1 + u2 * u2);
        exp_force[1] = -fn * mu[0] * u1 / q;
        exp_force[2] = -fn * mu[1] * u2 / q;
      }
      if (condim >= 4) {
        double u = wc[0] / wse2;
        exp_torque[0] = -fn * mu[2] * u / std::sqrt(1 + u * u);
      }
      if (condim >= 6) {
        double u1 = wc[1] / wse3, u2 = wc[2] / wse3, q = std::sqrt(1 + u1 * u1 + u2 * u2);
        exp_torque[1] = -fn * mu[3] * u1 / q;
        exp_torque[2] = -fn * mu[4] * u2 / q;
      }

      mjdiffContactForce cf;
      ASSERT_EQ(mjdiff_contactForce(m, d, sim.s(), 0, &cf), MJDIFF_OK);
      EXPECT_TRUE(RelNear(cf.force[0], fn, tol)) << "normal";
      ASSERT_GT(fn, 0);

      // each component against the formula; components the condim excludes are exactly zero
      for (int i = 1; i < 3; i++) {
        if (condim >= 3) {
          EXPECT_TRUE(RelNear(cf.force[i], exp_force[i], tol)) << "sliding " << i;
        } else {
          EXPECT_EQ(cf.force[i], 0) << "sliding " << i;
        }
      }
      if (condim >= 4) {
        EXPECT_TRUE(RelNear(cf.torque[0], exp_torque[0], tol)) << "torsional";
      } else {
        EXPECT_EQ(cf.torque[0], 0) << "torsional";
      }
      for (int i = 1; i < 3; i++) {
        if (condim >= 6) {
          EXPECT_TRUE(RelNear(cf.torque[i], exp_torque[i], tol)) << "rolling " << i;
        } else {
          EXPECT_EQ(cf.torque[i], 0) << "rolling " << i;
        }
      }

      // directions: friction opposes slip, torsion opposes spin, rolling opposes roll
      if (condim >= 3) {
        EXPECT_LT(cf.force[1] * vc[1] + cf.force[2] * vc[2], 0);
      }
      if (condim >= 4) {
        EXPECT_LT(cf.torque[0] * wc[0], 0);
      }
      if (condim >= 6) {
        EXPECT_LT(cf.torque[1] * wc[1] + cf.torque[2] * wc[2], 0);
      }

      // the same force reaches the ball's generalised force: the free joint's translational dofs
      // take the world force, its rotational dofs the torque about the centre in the body frame
      double F[3] = {0, 0, 0}, T[3] = {0, 0, 0};
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
          F[i] += con->frame[3 * j + i] * exp_force[j];
          T[i] += con->frame[3 * j + i] * exp_torque[j];
        }
      }
      T[0] += r[1] * F[2] - r[2] * F[1];
      T[1] += r[2] * F[0] - r[0] * F[2];
      T[2] += r[0] * F[1] - r[1] * F[0];
      for (int i = 0; i < 3; i++) {
        double Tb = xmat[i] * T[0] + xmat[3 + i] * T[1] + xmat[6 + i] * T[2];
        EXPECT_NEAR(d->qfrc_passive[i], F[i], tol * fn) << "force " << i;
        EXPECT_NEAR(d->qfrc_passive[3 + i], Tb, tol * fn * radius) << "torque " << i;
      }
     }
    }
  }
}

//---------------------------------- 7. limits, friction loss, equality ----------------------------

// a hinge about y on a body of inertia 0.1 kg m^2, no gravity, no other passive forces
std::string HingeXml(const char* joint_attrs, const char* numerics) {
  return Format(R"(
<mujoco>
  <compiler angle="radian"/>
  <option gravity="0 0 0"/>
  <custom>%s</custom>
  <worldbody>
    <body name="arm">
      <joint name="j" type="hinge" axis="0 1 0" %s/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>)",
                numerics, joint_attrs);
}

// Limit: past hi (or lo) the hinge gets the contact law on dist = hi - q (q - lo):
//   upper -f(k s(w - (hi - q)), -c s' (-v)),  lower +f(k s(w - (q - lo)), -c s' v)
// qfrc_passive holds only this force here, so it matches to roundoff (1e-12 relative). Then a
// constant torque tau pushes the hinge past hi and it must rest where k s(x) = tau.
TEST(Physics, HingeLimit) {
  const double k = 50, c = 2, w = 0.05, lo = -0.5, hi = 0.5;
  std::string xml = HingeXml("limited=\"true\" range=\"-0.5 0.5\" damping=\"1\"",
                             R"(<numeric name="mjdiff_limit_stiffness" data="50"/>
    <numeric name="mjdiff_limit_damping" data="2"/>
    <numeric name="mjdiff_limit_width" data="0.05"/>)");
  Sim sim(xml);
  ASSERT_TRUE(sim.ok()) << sim.err();
  mjData* d = sim.d();

  // (q, v): past and approaching, inside the width and separating fast (g^2 / (-4e) branch),
  // inside the range (no force), for both limits
  const double states[][2] = {{0.52, 0.3},  {0.47, -2.0}, {0.58, -0.1}, {-0.56, -0.4},
                              {-0.44, 1.0}, {-0.53, 0.2}, {0.0, 0.5},   {0.44, 1.0}};
  for (const auto& st : states) {
    SCOPED_TRACE(Format("q = %g, v = %g", st[0], st[1]));
    mj_resetData(sim.m(), d);
    d->qpos[0] = st[0];
    d->qvel[0] = st[1];
    ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
    // MuJoCo's mj_passive adds the joint's own damping -b v (b = 1) to qfrc_passive
    double limit =
        Damped(k, c, w, w - (st[0] - lo), st[1]) - Damped(k, c, w, w - (hi - st[0]), -st[1]);
    EXPECT_TRUE(RelNear(d->qfrc_passive[0], limit - 1 * st[1], 1e-12));
    if (st[0] > lo + w && st[0] < hi - w) {
      EXPECT_EQ(d->qfrc_passive[0], -st[1]) << "a limit force outside the activation width";
    }
  }

  // static push: tau = 5 N m = 2 k w, rest in the linear zone at q = hi - w + s^-1(tau/k);
  // settle 3 s (decay >= 5/s from the joint damping alone: < 1e-6 left); 1% of the overshoot
  // q - hi = 0.1 rad, as for the rest penetration
  const double tau = 5;
  mj_resetData(sim.m(), d);
  d->qfrc_applied[0] = tau;
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 3.0)), MJDIFF_OK) << sim.err();
  double q_pred = hi - w + law_rampInverse(tau / k, w);
  EXPECT_TRUE(RelNear(d->qpos[0] - hi, q_pred - hi, 0.01));
}

// Friction loss: f = -floss v / sqrt(v^2 + v_f^2) on the dof, alone in qfrc_passive: roundoff.
TEST(Physics, FrictionLoss) {
  const double floss = 2, vf = 0.1;
  Sim sim(
      HingeXml("frictionloss=\"2\"", R"(<numeric name="mjdiff_frictionloss_speed" data="0.1"/>)"));
  ASSERT_TRUE(sim.ok()) << sim.err();
  for (double v : {0.0, 0.05, -0.3, 1.0, -25.0}) {
    SCOPED_TRACE(Format("v = %g", v));
    mj_resetData(sim.m(), sim.d());
    sim.d()->qvel[0] = v;
    ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
    EXPECT_TRUE(RelNear(sim.d()->qfrc_passive[0], -floss * v / std::sqrt(v * v + vf * vf), 1e-12));
  }
}

// Connect: a free 1 kg body held at its centre to the world by a connect equality hangs like a
// spring, deflection m g / k_eq = 9.81 mm for k_eq = 1e3 N/m. Damping 100 N s/m makes it
// overdamped with a slow rate of ~11/s; 2 s leave e^-22, so 1% is the brief's bound with margin.
TEST(Physics, ConnectEquality) {
  const double k = 1e3, mass = 1;
  Sim sim(R"(
<mujoco>
  <custom>
    <numeric name="mjdiff_eq_stiffness" data="1e3"/>
    <numeric name="mjdiff_eq_damping" data="100"/>
  </custom>
  <worldbody>
    <body name="weight" pos="0 0 1">
      <freejoint/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>
    <connect body1="weight" anchor="0 0 0"/>
  </equality>
</mujoco>)");
  ASSERT_TRUE(sim.ok()) << sim.err();
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 2.0)), MJDIFF_OK) << sim.err();
  double deflection = 1 - sim.d()->qpos[2];
  EXPECT_TRUE(RelNear(deflection, mass * GravityOf(sim.m()) / k, 0.01));
  EXPECT_NEAR(sim.d()->qpos[0], 0, 1e-9);
  EXPECT_NEAR(sim.d()->qpos[1], 0, 1e-9);
}

// Joint equality j1 = 2 j2: r = q1 - 2 q2, f = -k r - c (v1 - 2 v2) on j1 and -2 f on j2, alone in
// qfrc_passive (roundoff tolerance). Then dynamically: a torque tau on j2 against its spring K
// (j1 has no other force, so r -> 0) must settle at q2 = tau / K, q1 = 2 tau / K; 1% as above.
TEST(Physics, JointEquality) {
  const double k = 10, c = 1;
  Sim sim(R"(
<mujoco>
  <option gravity="0 0 0"/>
  <custom>
    <numeric name="mjdiff_eq_stiffness" data="10"/>
    <numeric name="mjdiff_eq_damping" data="1"/>
  </custom>
  <worldbody>
    <body name="a">
      <joint name="j1" type="hinge" axis="0 0 1" damping="1"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
    </body>
    <body name="b" pos="1 0 0">
      <joint name="j2" type="hinge" axis="0 0 1" damping="1" stiffness="10"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
    </body>
  </worldbody>
  <equality>
    <joint joint1="j1" joint2="j2" polycoef="0 2 0 0 0"/>
  </equality>
</mujoco>)");
  ASSERT_TRUE(sim.ok()) << sim.err();
  mjData* d = sim.d();

  // algebraic: MuJoCo's own joint damping (-1 v) and j2's stiffness (-10 q2) are in qfrc_passive
  // too
  d->qpos[0] = 0.1;
  d->qpos[1] = 0.2;
  d->qvel[0] = 0.3;
  d->qvel[1] = -0.1;
  ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
  double f = -k * (0.1 - 2 * 0.2) - c * (0.3 - 2 * -0.1);
  EXPECT_TRUE(RelNear(d->qfrc_passive[0], f - 0.3, 1e-12));
  EXPECT_TRUE(RelNear(d->qfrc_passive[1], -2 * f - 10 * 0.2 + 0.1, 1e-12));

  // dynamic coupling; slowest mode decays at ~2.5/s, 6 s leave e^-15
  const double tau = 1, K = 10;
  mj_resetData(sim.m(), d);
  d->qfrc_applied[1] = tau;
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 6.0)), MJDIFF_OK) << sim.err();
  EXPECT_TRUE(RelNear(d->qpos[1], tau / K, 0.01));
  EXPECT_TRUE(RelNear(d->qpos[0], 2 * tau / K, 0.01));
}

//---------------------------------- 8. weld, tendons, ball limit, RK4 ----------------------------

// quaternion helpers (w, x, y, z), written out here rather than taken from the plugin
void QuatMul(const double a[4], const double b[4], double r[4]) {
  r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

void QuatConj(const double a[4], double r[4]) {
  r[0] = a[0];
  r[1] = -a[1];
  r[2] = -a[2];
  r[3] = -a[3];
}

// axis * angle of a unit quaternion, angle in [0, pi] (the shorter way round)
void QuatAxisAngle(const double q[4], double r[3]) {
  double s = q[0] < 0 ? -1 : 1;
  double sn = std::sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (sn == 0) {
    r[0] = r[1] = r[2] = 0;
    return;
  }
  double angle = 2 * std::atan2(sn, s * q[0]);
  for (int i = 0; i < 3; i++) r[i] = s * q[i + 1] / sn * angle;
}

// unit quaternion of a rotation by angle about the unit axis u
void QuatFromAxisAngle(const double u[3], double angle, double q[4]) {
  q[0] = std::cos(angle / 2);
  for (int i = 0; i < 3; i++) q[i + 1] = std::sin(angle / 2) * u[i];
}

void Cross(const double a[3], const double b[3], double r[3]) {
  r[0] = a[1] * b[2] - a[2] * b[1];
  r[1] = a[2] * b[0] - a[0] * b[2];
  r[2] = a[0] * b[1] - a[1] * b[0];
}

// r = R v and r = R' v for a row-major 3x3 R
void MatVec(const double* R, const double v[3], double r[3]) {
  for (int i = 0; i < 3; i++) r[i] = R[3 * i] * v[0] + R[3 * i + 1] * v[1] + R[3 * i + 2] * v[2];
}
void MatTVec(const double* R, const double v[3], double r[3]) {
  for (int i = 0; i < 3; i++) r[i] = R[i] * v[0] + R[3 + i] * v[1] + R[6 + i] * v[2];
}

// Weld, static: a free 1 kg body (inertia 0.1 kg m^2) welded at its centre to the world,
// k_eq = 1e3, c_eq = 100, torquescale 0.1, with a world torque tau = 5 N m about a skew axis. The
// rotation error of a body welded to the world in its reference pose is exactly its own rotation,
// so the static angle is tau / (k ts) = 0.05 rad about the torque's axis, and the translational
// deflection is m g / k = 9.81 mm (the anchor is the centre of mass, so neither load moves the
// other). Both modes are overdamped with a slowest rate of ~11/s; 3 s leave e^-33, so 1% (as
// briefed) is pure margin, while a missing torquescale misses by 10x and a torque on the wrong body
// or with the wrong sign does not settle at all.
TEST(Physics, WeldEquality) {
  const double k = 1e3, ts = 0.1, mass = 1, tau = 5;
  Sim sim(R"(
<mujoco>
  <custom>
    <numeric name="mjdiff_eq_stiffness" data="1e3"/>
    <numeric name="mjdiff_eq_damping" data="100"/>
  </custom>
  <worldbody>
    <body name="b" pos="0 0 1">
      <freejoint/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
      <geom type="sphere" size="0.05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="b" anchor="0 0 1" torquescale="0.1"/>
  </equality>
</mujoco>)");
  ASSERT_TRUE(sim.ok()) << sim.err();
  mjData* d = sim.d();
  // guard on MuJoCo 2.2.2's layout: the world anchor (0, 0, 1) is the body's centre (data[3..5] = 0
  // in body1's frame), the reference relative pose is the identity, torquescale in data[10]
  const mjtNum* data = sim.m()->eq_data;
  for (int i = 3; i < 6; i++) ASSERT_NEAR(data[i], 0, 1e-12);
  ASSERT_NEAR(std::fabs(data[6]), 1, 1e-12);
  ASSERT_DOUBLE_EQ(data[10], ts);

  const double axis[3] = {1.0 / 3, 2.0 / 3, -2.0 / 3};
  for (int i = 0; i < 3; i++) d->xfrc_applied[6 + 3 + i] = tau * axis[i];
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 3.0)), MJDIFF_OK) << sim.err();

  EXPECT_TRUE(RelNear(1 - d->qpos[2], mass * GravityOf(sim.m()) / k, 0.01)) << "deflection";
  double r[3];
  QuatAxisAngle(d->qpos + 3, r);
  double angle = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  EXPECT_TRUE(RelNear(angle, tau / (k * ts), 0.01)) << "rotation angle";
  // about the torque's axis: the off-axis part is < 1% of the angle
  EXPECT_NEAR(r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2], angle, 0.01 * angle);
}

// Weld, algebraic: two free bodies welded with an explicit relpose, an anchor on body2 and
// torquescale 0.5, at an arbitrary pose and velocity. Expected from smooth.c's comment:
//   e = p1 - p2 (p1 = body1's anchor relpose.pos, p2 = body2's anchor), F1 = -k e - c de/dt at p1,
//   -F1 at p2;  r = axis-angle(q1 relpose q2*) (world), T1 = -ts (k r + c (w1 - w2)), -T1 on body2;
// the free joints take the world force on their translational dofs and the body-frame torque about
// the body origin on their rotational dofs. Only roundoff separates the two sides: 1e-9 relative to
// the largest force (torque) of each body, while any wrong frame, sign, anchor or factor is O(1).
TEST(Physics, WeldEqualityForce) {
  const double k = 200, c = 3, ts = 0.5;
  Sim sim(R"(
<mujoco>
  <option gravity="0 0 0"/>
  <custom>
    <numeric name="mjdiff_eq_stiffness" data="200"/>
    <numeric name="mjdiff_eq_damping" data="3"/>
  </custom>
  <worldbody>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
    </body>
    <body name="b" pos="0.5 0 1">
      <freejoint/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="a" body2="b" anchor="0.1 -0.05 0.02" relpose="0.4 0.1 -0.1 0.9 0.1 -0.3 0.2"
          torquescale="0.5"/>
  </equality>
</mujoco>)");
  ASSERT_TRUE(sim.ok()) << sim.err();
  mjModel* m = sim.m();
  mjData* d = sim.d();
  ASSERT_EQ(m->eq_type[0], mjEQ_WELD);
  ASSERT_EQ(m->eq_obj1id[0], 1);
  ASSERT_EQ(m->eq_obj2id[0], 2);

  // the XML values, relpose quaternion normalised (as MuJoCo does)
  const double anchor2[3] = {0.1, -0.05, 0.02}, anchor1[3] = {0.4, 0.1, -0.1};
  double relpose[4] = {0.9, 0.1, -0.3, 0.2};
  double nq = std::sqrt(relpose[0] * relpose[0] + relpose[1] * relpose[1] +
                        relpose[2] * relpose[2] + relpose[3] * relpose[3]);
  for (double& v : relpose) v /= nq;

  // a perturbed pose: body a near the origin rotated by 0.3 rad, b rotated by 0.5 rad, anchors
  // apart by ~10 cm; all twelve velocities nonzero
  const double ua[3] = {0.6, 0.0, 0.8}, ub[3] = {0.0, -0.6, 0.8};
  const double pa[3] = {0.02, -0.03, 1.01}, pb[3] = {0.45, 0.08, 0.93};
  const double qvel[12] = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, -0.3, 0.2, 0.1, -0.7, 0.2, 0.5};
  for (int i = 0; i < 3; i++) {
    d->qpos[i] = pa[i];
    d->qpos[7 + i] = pb[i];
  }
  QuatFromAxisAngle(ua, 0.3, d->qpos + 3);
  QuatFromAxisAngle(ub, 0.5, d->qpos + 10);
  for (int i = 0; i < 12; i++) d->qvel[i] = qvel[i];
  ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();

  // anchors and their velocities (world); angular velocities to world
  const double* xpos[2] = {d->xpos + 3, d->xpos + 6};
  const double* xmat[2] = {d->xmat + 9, d->xmat + 18};
  const double* xquat[2] = {d->xquat + 4, d->xquat + 8};
  const double* anchor[2] = {anchor1, anchor2};
  double p[2][3], v[2][3], w[2][3], lever[2][3];
  for (int j = 0; j < 2; j++) {
    MatVec(xmat[j], anchor[j], lever[j]);
    MatVec(xmat[j], qvel + 6 * j + 3, w[j]);
    double wr[3];
    Cross(w[j], lever[j], wr);
    for (int i = 0; i < 3; i++) {
      p[j][i] = xpos[j][i] + lever[j][i];
      v[j][i] = qvel[6 * j + i] + wr[i];
    }
  }
  double F1[3], T1[3], q[4], q2c[4], qe[4], r[3];
  QuatMul(xquat[0], relpose, q);
  QuatConj(xquat[1], q2c);
  QuatMul(q, q2c, qe);
  QuatAxisAngle(qe, r);
  for (int i = 0; i < 3; i++) {
    F1[i] = -k * (p[0][i] - p[1][i]) - c * (v[0][i] - v[1][i]);
    T1[i] = -ts * (k * r[i] + c * (w[0][i] - w[1][i]));
  }
  // generalised forces of both bodies; the error is well away from zero (guard)
  ASSERT_GT(std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]), 0.1);
  for (int j = 0; j < 2; j++) {
    SCOPED_TRACE(j == 0 ? "body1" : "body2");
    double sign = j == 0 ? 1 : -1, F[3], T[3], lf[3], Tb[3];
    for (int i = 0; i < 3; i++) F[i] = sign * F1[i];
    Cross(lever[j], F, lf);
    for (int i = 0; i < 3; i++) T[i] = sign * T1[i] + lf[i];
    MatTVec(xmat[j], T, Tb);
    double fmax = std::max({std::fabs(F[0]), std::fabs(F[1]), std::fabs(F[2])});
    double tmax = std::max({std::fabs(Tb[0]), std::fabs(Tb[1]), std::fabs(Tb[2])});
    for (int i = 0; i < 3; i++) {
      EXPECT_NEAR(d->qfrc_passive[6 * j + i], F[i], 1e-9 * fmax) << "force " << i;
      EXPECT_NEAR(d->qfrc_passive[6 * j + 3 + i], Tb[i], 1e-9 * tmax) << "torque " << i;
    }
  }
}

// two hinges about y on separate bodies plus a slide along x, no gravity, no joint or tendon
// stiffness or damping: qfrc_passive holds only the smooth forces. Tendons and equalities are
// inserted as given.
std::string TendonXml(const char* tendons, const char* equality, const char* numerics) {
  return Format(R"(
<mujoco>
  <compiler angle="radian"/>
  <option gravity="0 0 0"/>
  <custom>%s</custom>
  <worldbody>
    <body name="a">
      <joint name="j1" type="hinge" axis="0 1 0" ref="0.2"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
      <site name="sa" pos="0.3 0 0"/>
    </body>
    <body name="b" pos="0 0.5 0">
      <joint name="j2" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
    </body>
    <body name="c" pos="1 0 0">
      <joint name="j3" type="slide" axis="1 0 0"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
      <site name="sc" pos="0 0 0.1"/>
    </body>
  </worldbody>
  <tendon>%s</tendon>
  <equality>%s</equality>
</mujoco>)",
                numerics, tendons, equality);
}

const char* kLimitNumerics = R"(<numeric name="mjdiff_limit_stiffness" data="50"/>
    <numeric name="mjdiff_limit_damping" data="2"/>
    <numeric name="mjdiff_limit_width" data="0.05"/>)";

// Tendon limit: the hinge limit law on the tendon length L in [lo, hi], mapped by the tendon's
// Jacobian: qfrc = J' f. Fixed tendon L = q1 - 0.5 q2 (J = (1, -0.5, 0)): f is a closed form of the
// state, so 1e-12 relative per dof. Spatial tendon sa-sc: J = u' (J_sc - J_sa) with u the unit
// vector from sa to sc, built here from MuJoCo's site Jacobians (another route than the tendon
// code, hence 1e-10). States cover past each limit approaching, inside the width separating fast,
// and no force.
TEST(Physics, TendonLimit) {
  const double k = 50, c = 2, w = 0.05;
  {
    SCOPED_TRACE("fixed");
    const double lo = -0.3, hi = 0.2, coef[3] = {1, -0.5, 0};
    Sim sim(TendonXml(R"(<fixed name="t" limited="true" range="-0.3 0.2">
      <joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/></fixed>)",
                      "", kLimitNumerics));
    ASSERT_TRUE(sim.ok()) << sim.err();
    mjData* d = sim.d();
    // (q1, q2, v1, v2)
    const double states[][4] = {{0.3, 0.2, 0.4, 0.2},   {0.15, -0.1, -2.0, 0.5},
                                {-0.4, 0.1, -0.2, 0.3}, {-0.2, 0.2, 1.5, -0.5},
                                {0.0, 0.1, 0.3, 0.3},   {0.25, 0.1, 0.0, 0.0}};
    for (const auto& st : states) {
      double L = st[0] + coef[1] * st[1], v = st[2] + coef[1] * st[3];
      SCOPED_TRACE(Format("L = %g, v = %g", L, v));
      mj_resetData(sim.m(), d);
      d->qpos[0] = st[0];
      d->qpos[1] = st[1];
      d->qvel[0] = st[2];
      d->qvel[1] = st[3];
      ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
      ASSERT_NEAR(d->ten_length[0], L, 1e-15);
      double f = Damped(k, c, w, w - (L - lo), v) - Damped(k, c, w, w - (hi - L), -v);
      for (int j = 0; j < 3; j++) {
        EXPECT_TRUE(RelNear(d->qfrc_passive[j], f * coef[j], 1e-12)) << "dof " << j;
      }
      if (L > lo + w && L < hi - w) {
        EXPECT_EQ(f, 0);
      }
    }
  }
  {
    SCOPED_TRACE("spatial");
    const double lo = 0.55, hi = 0.85;
    Sim sim(TendonXml(R"(<spatial name="t" limited="true" range="0.55 0.85">
      <site site="sa"/><site site="sc"/></spatial>)",
                      "", kLimitNumerics));
    ASSERT_TRUE(sim.ok()) << sim.err();
    mjModel* m = sim.m();
    mjData* d = sim.d();
    ASSERT_EQ(m->nv, 3);
    // (q1, q3, v1, v3); j2 does not move the tendon. L = 0.911 (past hi), 0.508 (past lo), 0.589
    // (inside lo's width, separating fast), 0.707 (no force)
    const double states[][4] = {{0.1, 0.2, 0.5, 0.4},
                                {-0.2, -0.2, -1.0, 0.3},
                                {0.0, -0.12, 0.2, 3.0},
                                {0.0, 0.0, 0.1, 0.2}};
    for (const auto& st : states) {
      mj_resetData(m, d);
      d->qpos[0] = st[0];
      d->qpos[2] = st[1];
      d->qvel[0] = st[2];
      d->qvel[1] = 0.7;
      d->qvel[2] = st[3];
      ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
      double jac[2][9], J[3], u[3], L = 0, v = 0;
      mj_jacSite(m, d, jac[0], nullptr, 0);
      mj_jacSite(m, d, jac[1], nullptr, 1);
      for (int i = 0; i < 3; i++) {
        u[i] = d->site_xpos[3 + i] - d->site_xpos[i];
        L += u[i] * u[i];
      }
      L = std::sqrt(L);
      for (int i = 0; i < 3; i++) u[i] /= L;
      for (int j = 0; j < 3; j++) {
        J[j] = 0;
        for (int i = 0; i < 3; i++) J[j] += u[i] * (jac[1][3 * i + j] - jac[0][3 * i + j]);
        v += J[j] * d->qvel[j];
      }
      SCOPED_TRACE(Format("L = %g, v = %g", L, v));
      ASSERT_NEAR(d->ten_length[0], L, 1e-14);
      double f = Damped(k, c, w, w - (L - lo), v) - Damped(k, c, w, w - (hi - L), -v);
      double scale = std::fabs(f) * std::max({std::fabs(J[0]), std::fabs(J[1]), std::fabs(J[2])});
      for (int j = 0; j < 3; j++) {
        EXPECT_NEAR(d->qfrc_passive[j], f * J[j], 1e-10 * scale) << "dof " << j;
      }
      if (L > lo + w && L < hi - w) {
        EXPECT_EQ(f, 0);
      }
      if (st[2] == 0.1) {
        EXPECT_EQ(f, 0) << "the no-force state is not inside the range";
      } else {
        EXPECT_NE(f, 0) << "the state does not reach a limit";
      }
    }
  }
}

// Tendon friction loss: f = -floss v / sqrt(v^2 + v_f^2) on the tendon velocity v = J qvel, mapped
// by J = (1, -0.5, 0); a closed form of the state, alone in qfrc_passive: 1e-12 relative.
TEST(Physics, TendonFrictionLoss) {
  const double floss = 2, vf = 0.1, coef[3] = {1, -0.5, 0};
  Sim sim(TendonXml(R"(<fixed name="t" frictionloss="2">
      <joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/></fixed>)",
                    "", R"(<numeric name="mjdiff_frictionloss_speed" data="0.1"/>)"));
  ASSERT_TRUE(sim.ok()) << sim.err();
  mjData* d = sim.d();
  const double states[][2] = {{0, 0}, {0.05, 0.02}, {-0.3, 0.4}, {1.0, -2.0}, {-25, 3}};
  for (const auto& st : states) {
    double v = st[0] + coef[1] * st[1];
    SCOPED_TRACE(Format("v = %g", v));
    mj_resetData(sim.m(), d);
    d->qvel[0] = st[0];
    d->qvel[1] = st[1];
    d->qvel[2] = 0.5;  // j3 is not on the tendon: no force
    ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
    double f = -floss * v / std::sqrt(v * v + vf * vf);
    for (int j = 0; j < 3; j++) {
      EXPECT_TRUE(RelNear(d->qfrc_passive[j], f * coef[j], 1e-12)) << "dof " << j;
    }
  }
}

// Ball limit: theta = |axis-angle(q)| against the upper limit hi = 0.5 rad, with the limit law on
// dist = hi - theta and the angular rate theta' = axis . omega (local frame); the torque is
// -f axis in the local frame, i.e. on the ball dofs. A closed form of the state: 1e-10 relative
// (theta goes through atan2 on both sides). A skew axis so that every component is exercised.
TEST(Physics, BallLimit) {
  const double k = 50, c = 2, w = 0.05, hi = 0.5;
  Sim sim(Format(R"(
<mujoco>
  <compiler angle="radian"/>
  <option gravity="0 0 0"/>
  <custom>%s</custom>
  <worldbody>
    <body name="arm">
      <joint name="ball" type="ball" limited="true" range="0 0.5"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
    </body>
  </worldbody>
</mujoco>)",
                 kLimitNumerics));
  ASSERT_TRUE(sim.ok()) << sim.err();
  mjData* d = sim.d();
  const double axis[3] = {1.0 / 3, 2.0 / 3, -2.0 / 3};
  // (theta, rate along the axis); the angular velocity also has a component across the axis
  const double states[][2] = {{0.52, 0.3}, {0.47, -2.0}, {0.6, -0.1}, {0.46, 0.4}, {0.3, 0.5}};
  const double across[3] = {2.0 / 3, -2.0 / 3, -1.0 / 3};  // orthogonal to axis
  for (const auto& st : states) {
    SCOPED_TRACE(Format("theta = %g, rate = %g", st[0], st[1]));
    mj_resetData(sim.m(), d);
    QuatFromAxisAngle(axis, st[0], d->qpos);
    for (int i = 0; i < 3; i++) d->qvel[i] = st[1] * axis[i] + 0.7 * across[i];
    ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
    double f = Damped(k, c, w, w - (hi - st[0]), -st[1]);
    for (int i = 0; i < 3; i++) {
      EXPECT_TRUE(RelNear(d->qfrc_passive[i], -f * axis[i], 1e-10)) << "component " << i;
    }
    if (st[0] < hi - w) {
      EXPECT_EQ(f, 0);
    } else {
      EXPECT_GT(f, 0) << "the state does not reach the limit";
    }
  }
}

// Tendon equality t1 = t1_0 + poly(t2 - t2_0) with t1 = q1 + 0.5 q2, t2 = q3 - q2 and j1's
// reference 0.2 (so t1_0 = 0.2 is not zero). r = x1 - poly(x2), x_i = L_i - L_i0,
// f = -k r - c (v1 - poly'(x2) v2); qfrc = f J1 - f poly'(x2) J2. Closed form: 1e-12 relative to
// the largest component.
TEST(Physics, TendonEquality) {
  const double k = 10, c = 1, poly[5] = {0.05, 2, 0.5, -0.3, 0.2};
  const double J1[3] = {1, 0.5, 0}, J2[3] = {0, -1, 1};
  Sim sim(TendonXml(R"(
    <fixed name="t1"><joint joint="j1" coef="1"/><joint joint="j2" coef="0.5"/></fixed>
    <fixed name="t2"><joint joint="j3" coef="1"/><joint joint="j2" coef="-1"/></fixed>)",
                    R"(<tendon tendon1="t1" tendon2="t2" polycoef="0.05 2 0.5 -0.3 0.2"/>)",
                    R"(<numeric name="mjdiff_eq_stiffness" data="10"/>
    <numeric name="mjdiff_eq_damping" data="1"/>)"));
  ASSERT_TRUE(sim.ok()) << sim.err();
  mjModel* m = sim.m();
  mjData* d = sim.d();
  ASSERT_NEAR(m->qpos0[0], 0.2, 1e-15);
  ASSERT_NEAR(m->tendon_length0[0], 0.2, 1e-15);
  ASSERT_NEAR(m->tendon_length0[1], 0, 1e-15);
  const double states[][6] = {
      {0.5, 0.1, 0.3, 0.2, -0.4, 0.6}, {-0.1, 0.3, -0.2, -1.0, 0.5, 0.1}, {0.2, 0, 0, 0, 0, 0}};
  for (const auto& st : states) {
    mj_resetData(m, d);
    for (int i = 0; i < 3; i++) {
      d->qpos[i] = st[i];
      d->qvel[i] = st[3 + i];
    }
    ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
    double x1 = 0, x2 = 0, v1 = 0, v2 = 0;
    for (int i = 0; i < 3; i++) {
      x1 += J1[i] * st[i];
      x2 += J2[i] * st[i];
      v1 += J1[i] * st[3 + i];
      v2 += J2[i] * st[3 + i];
    }
    x1 -= 0.2;
    SCOPED_TRACE(Format("x1 = %g, x2 = %g", x1, x2));
    double p = 0, dp = 0;
    for (int i = 4; i >= 0; i--) p = p * x2 + poly[i];
    for (int i = 4; i >= 1; i--) dp = dp * x2 + i * poly[i];
    double f = -k * (x1 - p) - c * (v1 - dp * v2);
    double expected[3], scale = 0;
    for (int i = 0; i < 3; i++) {
      expected[i] = f * J1[i] - f * dp * J2[i];
      scale = std::max(scale, std::fabs(expected[i]));
    }
    ASSERT_GT(scale, 0);
    for (int i = 0; i < 3; i++) {
      EXPECT_NEAR(d->qfrc_passive[i], expected[i], 1e-12 * scale) << "dof " << i;
    }
  }
}

// RK4 against Euler: a 1 kg ball dropped from 0.3 m bounces once within 0.5 s (contact at ~0.23 s).
// At a 0.1 ms step both integrators approximate the same ODE, Euler to O(h) and RK4 to higher
// order, so their positions differ by Euler's error: measured 1.0e-4 m, and 2.1e-4 / 0.52e-4 m at
// 0.2 / 0.05 ms (first order, as expected). 1e-3 m as briefed: 10x the measured Euler error, yet
// a rebound speed off by 1% (a stage that drops or mis-evaluates the contact force) moves the ball
// by more than that within the 0.27 s of flight after the bounce.
TEST(Physics, RK4MatchesEuler) {
  SphereSpec p;
  p.height = 0.3;
  p.timestep = 1e-4;
  std::vector<double> qpos[2];
  double zmin[2] = {1, 1};
  const char* integrators[2] = {"Euler", "RK4"};
  for (int i = 0; i < 2; i++) {
    SCOPED_TRACE(integrators[i]);
    p.integrator = integrators[i];
    Sim sim(SphereXml(p));
    ASSERT_TRUE(sim.ok()) << sim.err();
    int n = StepsFor(sim.m(), 0.5);
    for (int s = 0; s < n; s++) {
      ASSERT_EQ(sim.Steps(1), MJDIFF_OK) << sim.err();
      zmin[i] = std::min(zmin[i], sim.d()->qpos[2]);
    }
    qpos[i].assign(sim.d()->qpos, sim.d()->qpos + sim.m()->nq);
    // guard: it bounced and is flying up again
    EXPECT_LT(zmin[i], p.radius) << "no contact";
    EXPECT_GT(sim.d()->qvel[2], 0) << "not bouncing";
  }
  double diff = 0;
  for (size_t i = 0; i < qpos[0].size(); i++) {
    diff = std::max(diff, std::fabs(qpos[0][i] - qpos[1][i]));
  }
  EXPECT_LT(diff, 1e-3);
}

//---------------------------------- touch sensor --------------------------------------------------

// At rest the box's normal forces carry its weight, so a touch site enclosing its contact points
// reads m g (the smooth touch: the sum of the counted contacts' normal forces). 1%: the transient
// left after 2 s is negligible (decay 4 c s'(x) / 2m = 37/s), while a missed or double-counted
// corner is off by 25%. The site is 5 mm larger than the box: the box rests 0.03 mm above the
// plane (x < w), its contact points halfway, outside the box, and MuJoCo 2.2.2's ray from them runs
// away from the box, so a site of exactly the box's size reads 0 (documented in smooth.h).
// A body transmission's moment (adhesion) is MuJoCo's: the average of the counted contacts'
// normal Jacobians, negated (plugin/smooth.c, mjdiff_bodyTransmissions). MuJoCo computes it from
// its own contact list before the smooth model's contacts exist (it was zero: adhesion did
// nothing); recomputed from the smooth contacts, it must equal mj_forward's at the same state,
// where both lists agree (the box resting on the floor, the pad pressed on it; then 200 steps
// of random controls on the native step), and be non-zero there.
TEST(Physics, BodyTransmissionMomentIsMuJoCos) {
  testutil::Sim sim(testutil::kAdhesion);
  ASSERT_TRUE(sim.ok) << sim.sim.err;
  const mjModel* m = sim.sim.m;
  mjData* native = mj_makeData(m);
  mjData* d = sim.sim.d;
  unsigned long long rng = 7;
  int nv = m->nv, compared = 0;
  for (int k = 0; k < 400; k++) {
    if (k % 20 == 0) {
      for (int i = 0; i < m->nu; i++) {
        const mjtNum* r = m->actuator_ctrlrange + 2 * i;
        native->ctrl[i] = r[0] + (r[1] - r[0]) * testutil::uniform(&rng);
      }
      native->ctrl[3] = -0.8;  // the pad presses on the box
    }
    mj_step(m, native);
    if (k < 200 || k % 20 != 0) continue;
    mj_forward(m, native);
    mju_copy(d->qpos, native->qpos, m->nq);
    mju_copy(d->qvel, native->qvel, nv);
    mju_copy(d->ctrl, native->ctrl, m->nu);
    char err[1000];
    ASSERT_EQ(mjdiff_forward(m, d, sim.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
    for (int i = 0; i < 2; i++) {  // the two adhesion actuators
      ASSERT_EQ(m->actuator_trntype[i], mjTRN_BODY);
      COMPAT_MOMENT_BUF(bn, nv);
      COMPAT_MOMENT_BUF(bs, nv);
      const mjtNum* mn = compat_actuatorMoment(m, native, i, bn);
      const mjtNum* ms = compat_actuatorMoment(m, d, i, bs);
      double size = 0, diff = 0;
      for (int c = 0; c < nv; c++) {
        size = std::max(size, std::fabs(mn[c]));
        diff = std::max(diff, std::fabs(mn[c] - ms[c]));
      }
      EXPECT_GT(size, 0.1) << "step " << k << ", actuator " << i << ": no counted contact";
      EXPECT_LT(diff, 1e-12 * std::max(1.0, size)) << "step " << k << ", actuator " << i;
      EXPECT_NEAR(d->actuator_force[i], native->actuator_force[i], 1e-12);
      compared++;
    }
  }
  EXPECT_EQ(compared, 20);
  mj_deleteData(native);
}

TEST(Physics, TouchRestingBoxWeight) {
  const double mass = 1.3;
  Sim sim(Format(R"(
<mujoco>
  <option timestep="0.002"/>
  <custom>
    <numeric name="mjdiff_contact_stiffness" data="1e4"/>
    <numeric name="mjdiff_contact_damping" data="50"/>
    <numeric name="mjdiff_contact_width" data="2e-3"/>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0 0 0.052">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.07 0.05" mass="%.17g"/>
      <site name="touch" type="box" size="0.055 0.075 0.055"/>
      <site name="exact" type="box" size="0.05 0.07 0.05"/>
    </body>
  </worldbody>
  <sensor>
    <touch site="touch"/>
    <touch site="exact"/>
  </sensor>
</mujoco>)",
                 mass));
  ASSERT_TRUE(sim.ok()) << sim.err();
  ASSERT_EQ(sim.Steps(StepsFor(sim.m(), 2.0)), MJDIFF_OK) << sim.err();
  ASSERT_EQ(sim.Forward(), MJDIFF_OK) << sim.err();
  ASSERT_EQ(sim.d()->ncon, 4);
  EXPECT_TRUE(RelNear(sim.d()->sensordata[0], mass * GravityOf(sim.m()), 0.01));
  EXPECT_GT(sim.d()->contact[0].dist, 0);
  EXPECT_EQ(sim.d()->sensordata[1], 0);
}

}  // namespace
