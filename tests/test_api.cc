// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The public API of the smooth model: parameters from the MJCF, every error path, non-finite
// state, that no call changes its inputs, determinism, and the MuJoCo 2.2 callback adapter
// (attach / detach, several models, several threads).

#include <gtest/gtest.h>

#include <cctype>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shim.h"
#include "testutil.h"

namespace {

//---------------------------------- helpers -------------------------------------------------------

struct ModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
struct DataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
struct SmoothDeleter {
  void operator()(mjdiffModel* s) const { mjdiff_freeModel(s); }
};
using ModelPtr = std::unique_ptr<mjModel, ModelDeleter>;
using DataPtr = std::unique_ptr<mjData, DataDeleter>;
using SmoothPtr = std::unique_ptr<mjdiffModel, SmoothDeleter>;

// detaches m on scope exit (before the model and smooth model are freed)
struct AttachGuard {
  mjModel* m;
  ~AttachGuard() {
    if (m) mjdiff_detach(m);
  }
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

ModelPtr load(const std::string& xml) {
  char err[1000] = "";
  mjModel* m = shim_loadString(xml.c_str(), err, sizeof(err));
  EXPECT_NE(m, nullptr) << err << "\n" << xml;
  return ModelPtr(m);
}

SmoothPtr makeSmooth(const mjModel* m, const mjdiffOptions* opt = nullptr) {
  char err[1000] = "";
  mjdiffModel* s = nullptr;
  mjdiffStatus st = mjdiff_makeModel(m, opt, &s, err, sizeof(err));
  EXPECT_EQ(st, MJDIFF_OK) << mjdiff_statusName(st) << ": " << err;
  return SmoothPtr(s);
}

// true if number appears in text as a whole token (not inside a longer number or word)
bool mentionsNumber(const std::string& text, const std::string& number) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto word = [&](char c) { return digit(c) || std::isalpha(static_cast<unsigned char>(c)) ||
                                   c == '.' || c == '-' || c == '+' || c == '_'; };
  for (size_t pos = text.find(number); pos != std::string::npos;
       pos = text.find(number, pos + 1)) {
    size_t end = pos + number.size();
    bool before = pos == 0 || !word(text[pos - 1]);
    // a trailing '.' ends a sentence unless a digit follows
    bool after = end >= text.size() || !word(text[end]) ||
                 (text[end] == '.' && (end + 1 >= text.size() || !digit(text[end + 1])));
    if (before && after) return true;
  }
  return false;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// a ball of radius 0.1 above a plane; custom: the <custom> body; option: extra <option> content
std::string ballXml(const std::string& custom, const std::string& option = "",
                    const std::string& integrator = "Euler") {
  std::ostringstream s;
  s << "<mujoco model='ball'>\n"
    << "  <option timestep='0.001' integrator='" << integrator << "'>" << option << "</option>\n"
    << "  <custom>" << custom << "</custom>\n"
    << "  <worldbody>\n"
    << "    <geom name='floor' type='plane' size='1 1 0.1'/>\n"
    << "    <body name='ball' pos='0 0 0.1'>\n"
    << "      <freejoint/>\n"
    << "      <geom name='ball' type='sphere' size='0.1' mass='1'/>\n"
    << "    </body>\n"
    << "  </worldbody>\n"
    << "</mujoco>\n";
  return s.str();
}

std::string numeric(const std::string& name, const std::string& data) {
  return "<numeric name='" + name + "' data='" + data + "'/>";
}

// every hard-constraint kind: contacts (condim 1, 3, 4, 6), joint and tendon limits, friction
// loss on dofs and a tendon, dof damping, connect / weld / joint equalities, filter activations
std::string richXml(const std::string& integrator = "Euler") {
  return R"(
<mujoco model='rich'>
  <option timestep='0.002' integrator=')" + integrator + R"('/>
  <custom>
    <numeric name='mjdiff_contact_stiffness' data='5000'/>
    <numeric name='mjdiff_contact_stiffness:box' data='4000'/>
    <numeric name='mjdiff_contact_width' data='0.002'/>
    <numeric name='mjdiff_eq_stiffness' data='200'/>
    <numeric name='mjdiff_eq_damping' data='0.5'/>
    <numeric name='mjdiff_limit_stiffness' data='500'/>
  </custom>
  <worldbody>
    <geom name='floor' type='plane' size='2 2 0.1'/>
    <body name='ball' pos='0 0 0.2'>
      <freejoint/>
      <geom name='ball' type='sphere' size='0.05' mass='0.5' condim='6' friction='0.8 0.02 0.01'/>
    </body>
    <body name='box' pos='0.3 0 0.15' euler='0.2 0.1 0'>
      <freejoint/>
      <geom name='box' type='box' size='0.05 0.05 0.05' mass='0.5' condim='4'/>
    </body>
    <body name='puck' pos='-0.3 0.3 0.1'>
      <freejoint/>
      <geom name='puck' type='cylinder' size='0.05 0.02' mass='0.3' condim='1'/>
    </body>
    <body name='arm' pos='-0.3 0 0.35'>
      <joint name='h1' type='hinge' axis='0 1 0' range='-1 1' limited='true' damping='0.1'
             frictionloss='0.05'/>
      <geom name='link1' type='capsule' fromto='0 0 0 0.2 0 0' size='0.02' mass='0.3'/>
      <body name='arm2' pos='0.2 0 0'>
        <joint name='h2' type='hinge' axis='0 1 0' range='-1.5 1.5' limited='true'/>
        <geom name='link2' type='capsule' fromto='0 0 0 0 0 -0.2' size='0.02' mass='0.2'/>
        <body name='slider' pos='0 0 -0.2'>
          <joint name='sl' type='slide' axis='0 0 1' range='-0.05 0.05' limited='true'
                 frictionloss='0.1'/>
          <geom name='tip' type='sphere' size='0.03' mass='0.1'/>
        </body>
      </body>
    </body>
    <body name='pend' pos='0.7 0 0.6'>
      <joint name='p1' type='hinge' axis='0 1 0'/>
      <geom type='capsule' fromto='0 0 0 0 0 -0.2' size='0.02' mass='1'/>
      <body name='pend2' pos='0 0 -0.2'>
        <joint name='p2' type='hinge' axis='0 1 0'/>
        <geom type='capsule' fromto='0 0 0 0 0 -0.2' size='0.02' mass='1'/>
      </body>
    </body>
    <body name='hang' pos='0 0.6 0.6'>
      <freejoint/>
      <geom type='box' size='0.1 0.1 0.1' mass='1' contype='0' conaffinity='0'/>
    </body>
    <body name='welded' pos='0 -0.6 0.6'>
      <freejoint/>
      <geom type='box' size='0.1 0.1 0.1' mass='1' contype='0' conaffinity='0'/>
    </body>
  </worldbody>
  <equality>
    <joint joint1='p2' joint2='p1' polycoef='0 0.5 0 0 0'/>
    <connect body1='hang' body2='world' anchor='0.1 0.1 0.1'/>
    <weld body1='welded' body2='world'/>
  </equality>
  <tendon>
    <fixed name='t' limited='true' range='-0.5 0.5' frictionloss='0.02'>
      <joint joint='h1' coef='1'/>
      <joint joint='h2' coef='-1'/>
    </fixed>
  </tendon>
  <actuator>
    <motor joint='h1' ctrlrange='-2 2' ctrllimited='true'/>
    <motor joint='h2' ctrlrange='-1 1' ctrllimited='true'/>
    <position joint='sl' kp='20' ctrlrange='-0.1 0.1' ctrllimited='true'/>
    <general joint='p1' dyntype='filter' dynprm='0.05' gainprm='2' ctrlrange='-1 1'
             ctrllimited='true'/>
  </actuator>
</mujoco>
)";
}

// n steps with controls resampled every 10 steps; smooth: mjdiff_step, else mj_step
void runSteps(const mjModel* m, mjData* d, const mjdiffModel* s, bool smooth, int n,
              unsigned long long seed) {
  char err[1000] = "";
  for (int i = 0; i < n; i++) {
    if (i % 10 == 0) shim_randomCtrl(m, d, &seed);
    if (smooth) {
      mjdiffStatus st = mjdiff_step(m, d, s, err, sizeof(err));
      ASSERT_EQ(st, MJDIFF_OK) << "step " << i << ": " << err;
    } else {
      mj_step(m, d);
    }
  }
}

// largest |a - b| over qpos, qvel, act (NaN if any is NaN)
double maxStateDiff(const mjModel* m, const mjData* a, const mjData* b) {
  double diff = 0;
  auto acc = [&](const mjtNum* x, const mjtNum* y, int n) {
    for (int i = 0; i < n; i++) {
      double e = std::fabs(x[i] - y[i]);
      if (!(e <= diff)) diff = e;
    }
  };
  acc(a->qpos, b->qpos, m->nq);
  acc(a->qvel, b->qvel, m->nv);
  acc(a->act, b->act, m->na);
  return diff;
}

bool sameState(const mjModel* m, const mjData* a, const mjData* b) {
  return !memcmp(a->qpos, b->qpos, sizeof(mjtNum) * m->nq) &&
         !memcmp(a->qvel, b->qvel, sizeof(mjtNum) * m->nv) &&
         !memcmp(a->act, b->act, sizeof(mjtNum) * m->na) && a->time == b->time;
}

using testutil::getState;

bool bitEqual(const std::vector<mjtNum>& a, const std::vector<mjtNum>& b) {
  return a.size() == b.size() && !memcmp(a.data(), b.data(), sizeof(mjtNum) * a.size());
}

int warningTotal(const mjData* d) {
  int n = 0;
  for (int i = 0; i < mjNWARNING; i++) n += d->warning[i].number;
  return n;
}

// the documented force law, written out independently of plugin/law.h
double ramp(double x, double w) {
  if (x <= 0) return 0;
  if (x <= w) return x * x * x / (6 * w * w);
  if (x <= 2 * w) return x - w + (2 * w - x) * (2 * w - x) * (2 * w - x) / (6 * w * w);
  return x - w;
}

const char* kParamNames[] = {
    "contact_stiffness", "contact_damping", "contact_width",      "friction_speed",
    "spin_speed",        "limit_stiffness", "limit_damping",      "limit_width",
    "frictionloss_speed", "eq_stiffness",   "eq_damping",
};
const bool kParamStrict[] = {true, false, true, true, true, true, false, true, true, true, false};
const bool kParamGeom[] = {true, true, true, true, true, false, false, false, false, false, false};
const bool kParamDerived[] = {true, true, true, true, false, true, true, true, true, true, true};

// field i of kParamNames in o
mjtNum* optField(mjdiffOptions* o, int i) {
  mjtNum* f[] = {&o->contact_stiffness, &o->contact_damping, &o->contact_width,
                 &o->friction_speed,    &o->spin_speed,      &o->limit_stiffness,
                 &o->limit_damping,     &o->limit_width,     &o->frictionloss_speed,
                 &o->eq_stiffness,      &o->eq_damping};
  return f[i];
}

mjtNum optValue(const mjdiffOptions* o, int i) {
  mjdiffOptions copy = *o;
  return *optField(&copy, i);
}
constexpr int kNparam = sizeof(kParamNames) / sizeof(kParamNames[0]);

//---------------------------------- parameters from the MJCF --------------------------------------

TEST(Params, ReadBackFromMjcf) {
  std::string custom = numeric("mjdiff_contact_stiffness", "5000") +
                       numeric("mjdiff_contact_damping", "3") +
                       numeric("mjdiff_contact_width", "0.004") +
                       numeric("mjdiff_friction_speed", "0.07") +
                       numeric("mjdiff_spin_speed", "0.3") +
                       numeric("mjdiff_limit_stiffness", "1200") +
                       numeric("mjdiff_limit_damping", "0.5") +
                       numeric("mjdiff_limit_width", "0.03") +
                       numeric("mjdiff_frictionloss_speed", "0.2") +
                       numeric("mjdiff_eq_stiffness", "900") +
                       numeric("mjdiff_eq_damping", "7") +
                       numeric("mjdiff_contact_stiffness:ball", "3000") +
                       numeric("mjdiff_contact_damping:floor", "0");
  ModelPtr m = load(ballXml(custom));
  ASSERT_TRUE(m);
  EXPECT_TRUE(mjdiff_wantsSmooth(m.get()));
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);

  const double expect[kNparam] = {5000, 3, 0.004, 0.07, 0.3, 1200, 0.5, 0.03, 0.2, 900, 7};
  char err[500] = "";
  for (int i = 0; i < kNparam; i++) {
    mjtNum v = -1;
    ASSERT_EQ(mjdiff_getParam(s.get(), kParamNames[i], &v, err, sizeof(err)), MJDIFF_OK) << err;
    EXPECT_EQ(v, expect[i]) << kParamNames[i];
    EXPECT_EQ(optValue(mjdiff_getOptions(s.get()), i), expect[i])
        << kParamNames[i];
  }

  // per geom: explicit where set, the model-wide value elsewhere
  mjtNum v = -1;
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_stiffness:ball", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 3000);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_stiffness:floor", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 5000);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_damping:floor", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 0);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_damping:ball", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 3);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_width:ball", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 0.004);
}

TEST(Params, DefaultsWithoutCustom) {
  ModelPtr m = load(ballXml(""));
  ASSERT_TRUE(m);
  EXPECT_FALSE(mjdiff_wantsSmooth(m.get()));
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  mjdiffOptions def;
  mjdiff_defaultOptions(&def);
  char err[500] = "";
  EXPECT_EQ(mjdiff_validateOptions(&def, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(0, memcmp(&def, mjdiff_getOptions(s.get()), sizeof(def)));
}

TEST(Params, OptionsThenMjcfOverride) {
  ModelPtr m = load(ballXml(numeric("mjdiff_limit_width", "0.05")));
  ASSERT_TRUE(m);
  mjdiffOptions opt;
  mjdiff_defaultOptions(&opt);
  opt.contact_stiffness = 2500;
  opt.limit_width = 0.001;
  mjdiffOptions opt0;
  memcpy(&opt0, &opt, sizeof(opt));
  SmoothPtr s = makeSmooth(m.get(), &opt);
  ASSERT_TRUE(s);
  EXPECT_EQ(0, memcmp(&opt, &opt0, sizeof(opt))) << "mjdiff_makeModel changed its options";
  EXPECT_EQ(mjdiff_getOptions(s.get())->contact_stiffness, 2500);
  EXPECT_EQ(mjdiff_getOptions(s.get())->limit_width, 0.05);
}

TEST(Params, EnableFlag) {
  ModelPtr off = load(ballXml(numeric("mjdiff_enable", "0") +
                              numeric("mjdiff_contact_stiffness", "100")));
  ModelPtr on = load(ballXml(numeric("mjdiff_enable", "1")));
  ASSERT_TRUE(off && on);
  EXPECT_FALSE(mjdiff_wantsSmooth(off.get()));
  EXPECT_TRUE(mjdiff_wantsSmooth(on.get()));
  EXPECT_FALSE(mjdiff_wantsSmooth(nullptr));
  SmoothPtr s = makeSmooth(on.get());
  EXPECT_TRUE(s);
}

// normal force of the single ball-floor contact with the ball at rest, penetrating by pen
struct ContactProbe {
  double fn;
  double expected_k;  // fn / s(w - dist): the effective stiffness
  double dist;
  int ncon;
};

ContactProbe probeContact(const mjModel* m, const mjdiffModel* s, double pen) {
  ContactProbe p = {0, 0, 0, 0};
  DataPtr d(mj_makeData(m));
  d->qpos[2] = 0.1 - pen;
  char err[500] = "";
  EXPECT_EQ(mjdiff_forward(m, d.get(), s, err, sizeof(err)), MJDIFF_OK) << err;
  p.ncon = d->ncon;
  if (d->ncon < 1) return p;
  mjdiffContactForce f;
  memset(&f, 0xff, sizeof(f));
  EXPECT_EQ(mjdiff_contactForce(m, d.get(), s, 0, &f), MJDIFF_OK);
  p.fn = f.force[0];
  p.dist = d->contact[0].dist;
  mjtNum w = -1;
  EXPECT_EQ(mjdiff_getPairParam(s, "contact_width", d->contact[0].geom1, d->contact[0].geom2, &w,
                                nullptr, 0), MJDIFF_OK);
  p.expected_k = f.force[0] / ramp(w - d->contact[0].dist, w);
  // at rest: no friction
  EXPECT_EQ(f.force[1], 0);
  EXPECT_EQ(f.force[2], 0);
  EXPECT_EQ(f.torque[0], 0);
  return p;
}

// the derived contact stiffness of the ball against the floor, from the documented formula
// (README "Defaults", plugin/derive.c): MuJoCo's default solref (0.02, 1) and solimp (0.9, 0.95,
// 0.001), omega = min(sqrt(k dbar / (1 - dbar)), 0.4 * 2 (sqrt(2) - 1) / h), K = omega^2 / A,
// A = invweight0_t (the centred ball's normals pass through its centre of mass: no lever)
double derivedBallStiffness(const mjModel* m) {
  double h = m->opt.timestep, tc = std::max(0.02, 2 * h), dmin = 0.9, dmax = 0.95;
  double k = 1 / (dmax * dmax * tc * tc), dbar = 0.5 * (dmin + dmax);
  double omega = std::min(std::sqrt(k * dbar / (1 - dbar)), 0.4 * 2 * (std::sqrt(2.0) - 1) / h);
  int b = mj_name2id(m, mjOBJ_BODY, "ball");
  double A = m->body_invweight0[2 * b];
  return omega * omega / A;
}

TEST(Params, PairMixingRule) {
  struct Case {
    const char* what;
    std::string custom;
    double k;
  } cases[] = {
      {"model-wide only", numeric("mjdiff_contact_stiffness", "5000"), 5000},
      {"ball explicit", numeric("mjdiff_contact_stiffness", "5000") +
                            numeric("mjdiff_contact_stiffness:ball", "3000"), 3000},
      {"floor explicit", numeric("mjdiff_contact_stiffness", "5000") +
                             numeric("mjdiff_contact_stiffness:floor", "8000"), 8000},
      {"both explicit", numeric("mjdiff_contact_stiffness", "5000") +
                            numeric("mjdiff_contact_stiffness:ball", "3000") +
                            numeric("mjdiff_contact_stiffness:floor", "8000"), 5500},
      {"ball explicit, default model-wide", numeric("mjdiff_contact_stiffness:ball", "3000"),
       3000},
      {"default: derived", numeric("mjdiff_enable", "1"), 0},
  };
  for (Case c : cases) {
    SCOPED_TRACE(c.what);
    ModelPtr m = load(ballXml(c.custom));
    ASSERT_TRUE(m);
    if (c.k == 0) c.k = derivedBallStiffness(m.get());
    SmoothPtr s = makeSmooth(m.get());
    ASSERT_TRUE(s);
    ContactProbe p = probeContact(m.get(), s.get(), 5e-4);
    ASSERT_EQ(p.ncon, 1);
    EXPECT_NEAR(p.dist, -5e-4, 1e-12);
    EXPECT_GT(p.fn, 0);
    EXPECT_NEAR(p.expected_k, c.k, 1e-9 * c.k);
  }
}

TEST(Params, PairMixingRuleThroughSetParam) {
  ModelPtr m = load(ballXml(numeric("mjdiff_contact_stiffness", "5000")));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  char err[500] = "";
  ASSERT_EQ(mjdiff_setParam(s.get(), "contact_stiffness:ball", 3000, err, sizeof(err)),
            MJDIFF_OK) << err;
  EXPECT_NEAR(probeContact(m.get(), s.get(), 5e-4).expected_k, 3000, 1e-9 * 3000);
  ASSERT_EQ(mjdiff_setParam(s.get(), "contact_stiffness:floor", 8000, err, sizeof(err)),
            MJDIFF_OK) << err;
  EXPECT_NEAR(probeContact(m.get(), s.get(), 5e-4).expected_k, 5500, 1e-9 * 5500);

  // a later model-wide value does not override the explicit geoms
  ASSERT_EQ(mjdiff_setParam(s.get(), "contact_stiffness", 7000, err, sizeof(err)), MJDIFF_OK);
  EXPECT_NEAR(probeContact(m.get(), s.get(), 5e-4).expected_k, 5500, 1e-9 * 5500);
  mjtNum v = 0;
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_stiffness", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 7000);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_stiffness:ball", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 3000);

  // but reaches geoms never set explicitly
  ModelPtr m2 = load(ballXml(numeric("mjdiff_contact_stiffness", "5000")));
  SmoothPtr s2 = makeSmooth(m2.get());
  ASSERT_TRUE(s2);
  ASSERT_EQ(mjdiff_setParam(s2.get(), "contact_stiffness", 7000, err, sizeof(err)), MJDIFF_OK);
  EXPECT_NEAR(probeContact(m2.get(), s2.get(), 5e-4).expected_k, 7000, 1e-9 * 7000);
  ASSERT_EQ(mjdiff_getParam(s2.get(), "contact_stiffness:floor", &v, err, sizeof(err)),
            MJDIFF_OK);
  EXPECT_EQ(v, 7000);
}

TEST(Params, PerGeomWidthMovesActivation) {
  // the ball is 3 mm above the floor: no force with the 1 mm derived width, force with a 4 mm
  // ball width
  ModelPtr m = load(ballXml(numeric("mjdiff_contact_width:ball", "0.004")));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  ContactProbe p = probeContact(m.get(), s.get(), -3e-3);
  ASSERT_GE(p.ncon, 1);
  double k = derivedBallStiffness(m.get());
  EXPECT_NEAR(p.fn, k * ramp(0.004 - p.dist, 0.004), 1e-9 * k);
  EXPECT_GT(p.fn, 0);

  ModelPtr m2 = load(ballXml(numeric("mjdiff_enable", "1")));
  SmoothPtr s2 = makeSmooth(m2.get());
  ContactProbe p2 = probeContact(m2.get(), s2.get(), -3e-3);
  EXPECT_EQ(p2.fn, 0);
}

//---------------------------------- error paths: parameters ---------------------------------------

struct BadCustom {
  const char* what;
  std::string custom;
  mjdiffStatus status;
  std::vector<std::string> words;    // must appear in err
  std::vector<std::string> numbers;  // must appear in err as numbers
};

TEST(Errors, BadMjcfParameters) {
  const BadCustom cases[] = {
      {"unknown name", numeric("mjdiff_contact_stifness", "1"), MJDIFF_ERR_NAME,
       {"contact_stifness"}, {}},
      {"unknown geom", numeric("mjdiff_contact_stiffness:nosuchgeom", "1"), MJDIFF_ERR_NAME,
       {"nosuchgeom"}, {}},
      {"per geom on a non-contact field", numeric("mjdiff_limit_stiffness:ball", "1"),
       MJDIFF_ERR_NAME, {"limit_stiffness"}, {}},
      {"per geom on eq_damping", numeric("mjdiff_eq_damping:floor", "1"), MJDIFF_ERR_NAME,
       {"eq_damping"}, {}},
      {"two values", numeric("mjdiff_contact_stiffness", "1 2"), MJDIFF_ERR_VALUE,
       {"contact_stiffness"}, {"2"}},
      {"two values per geom", numeric("mjdiff_contact_width:ball", "0.1 0.2"), MJDIFF_ERR_VALUE,
       {"contact_width"}, {"2"}},
      {"negative", numeric("mjdiff_contact_stiffness", "-2"), MJDIFF_ERR_VALUE,
       {"contact_stiffness"}, {"-2"}},
      {"derived spin speed", numeric("mjdiff_spin_speed", "-1"), MJDIFF_ERR_VALUE,
       {"spin_speed"}, {"-1"}},
      {"negative per geom", numeric("mjdiff_contact_stiffness:ball", "-3"), MJDIFF_ERR_VALUE,
       {"contact_stiffness"}, {"-3"}},
      {"zero width", numeric("mjdiff_contact_width", "0"), MJDIFF_ERR_VALUE, {"contact_width"},
       {"0"}},
      {"zero limit stiffness", numeric("mjdiff_limit_stiffness", "0"), MJDIFF_ERR_VALUE,
       {"limit_stiffness"}, {"0"}},
      {"negative damping", numeric("mjdiff_contact_damping", "-0.5"), MJDIFF_ERR_VALUE,
       {"contact_damping"}, {"-0.5"}},
      {"NaN", numeric("mjdiff_eq_stiffness", "nan"), MJDIFF_ERR_VALUE, {"eq_stiffness", "nan"},
       {}},
      {"inf", numeric("mjdiff_friction_speed", "inf"), MJDIFF_ERR_VALUE,
       {"friction_speed", "inf"}, {}},
      {"enable 2", numeric("mjdiff_enable", "2"), MJDIFF_ERR_VALUE, {"mjdiff_enable"}, {"2"}},
      {"enable with two values", numeric("mjdiff_enable", "1 1"), MJDIFF_ERR_VALUE,
       {"mjdiff_enable"}, {}},
  };
  for (const BadCustom& c : cases) {
    SCOPED_TRACE(c.what);
    ModelPtr m = load(ballXml(c.custom));
    ASSERT_TRUE(m);
    char err[1000] = "";
    // a non-NULL sentinel: makeModel must reset *out to NULL on failure
    mjdiffModel* s = reinterpret_cast<mjdiffModel*>(&err);
    mjdiffStatus st = mjdiff_makeModel(m.get(), nullptr, &s, err, sizeof(err));
    EXPECT_EQ(st, c.status) << mjdiff_statusName(st) << ": " << err;
    EXPECT_EQ(s, nullptr);
    EXPECT_GT(strlen(err), 0u);
    for (const std::string& w : c.words) EXPECT_TRUE(contains(err, w)) << err << " / " << w;
    for (const std::string& n : c.numbers) EXPECT_TRUE(mentionsNumber(err, n)) << err << " / " << n;
    if (s && s != reinterpret_cast<mjdiffModel*>(&err)) mjdiff_freeModel(s);
  }
}

TEST(Errors, SetParamBadNames) {
  ModelPtr m = load(ballXml(numeric("mjdiff_contact_stiffness", "5000")));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  mjdiffOptions before;
  memcpy(&before, mjdiff_getOptions(s.get()), sizeof(before));
  struct Case {
    const char* name;
    const char* word;
  } cases[] = {
      {"contact_stifness", "contact_stifness"},
      {"", "''"},
      {"mjdiff_contact_stiffness", "mjdiff_contact_stiffness"},
      {"contact_stiffness:nosuchgeom", "nosuchgeom"},
      {"contact_stiffness:", "contact_stiffness"},
      {"limit_stiffness:ball", "limit_stiffness"},
      {"frictionloss_speed:floor", "frictionloss_speed"},
      {"eq_stiffness:ball", "eq_stiffness"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    char err[1000] = "";
    EXPECT_EQ(mjdiff_setParam(s.get(), c.name, 1, err, sizeof(err)), MJDIFF_ERR_NAME);
    EXPECT_TRUE(contains(err, c.word)) << err;
    err[0] = 0;
    mjtNum v = 12345;
    EXPECT_EQ(mjdiff_getParam(s.get(), c.name, &v, err, sizeof(err)), MJDIFF_ERR_NAME);
    EXPECT_TRUE(contains(err, c.word)) << err;
    EXPECT_EQ(v, 12345);
    // Nullable: err
    EXPECT_EQ(mjdiff_setParam(s.get(), c.name, 1, nullptr, 0), MJDIFF_ERR_NAME);
  }
  EXPECT_EQ(0, memcmp(&before, mjdiff_getOptions(s.get()), sizeof(before)));
}

TEST(Errors, SetParamBadValues) {
  ModelPtr m = load(ballXml(numeric("mjdiff_contact_stiffness", "5000")));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  for (int i = 0; i < kNparam; i++) {
    std::vector<std::string> names = {kParamNames[i]};
    if (kParamGeom[i]) names.push_back(std::string(kParamNames[i]) + ":ball");
    for (const std::string& name : names) {
      mjtNum v0 = 0;
      ASSERT_EQ(mjdiff_getParam(s.get(), name.c_str(), &v0, nullptr, 0), MJDIFF_OK);
      struct Bad {
        double value;
        const char* text;
      } bads[] = {{-1, "-1"}, {-2.5, "-2.5"}, {kNaN, "nan"}, {kInf, "inf"}, {-kInf, "-inf"},
                  {0, "0"}};
      for (const Bad& b : bads) {
        if (b.value == 0 && !kParamStrict[i]) continue;
        if (b.value == MJDIFF_DERIVED && kParamDerived[i]) continue;  // -1: derive it
        SCOPED_TRACE(name + " = " + b.text);
        char err[1000] = "";
        EXPECT_EQ(mjdiff_setParam(s.get(), name.c_str(), b.value, err, sizeof(err)),
                  MJDIFF_ERR_VALUE);
        EXPECT_TRUE(contains(err, kParamNames[i])) << err;
        if (b.value == b.value && std::isfinite(b.value)) {
          EXPECT_TRUE(mentionsNumber(err, b.text)) << err;
        } else {
          EXPECT_TRUE(contains(err, b.text)) << err;
        }
        mjtNum v = 0;
        ASSERT_EQ(mjdiff_getParam(s.get(), name.c_str(), &v, nullptr, 0), MJDIFF_OK);
        EXPECT_EQ(v, v0) << "a rejected value was stored";
      }
      // zero is allowed for the damping fields
      if (!kParamStrict[i]) {
        EXPECT_EQ(mjdiff_setParam(s.get(), name.c_str(), 0, nullptr, 0), MJDIFF_OK);
        EXPECT_EQ(mjdiff_setParam(s.get(), name.c_str(), v0, nullptr, 0), MJDIFF_OK);
      }
      // MJDIFF_DERIVED returns a field to its derived values; a geom's field to the model-wide
      if (kParamDerived[i]) {
        EXPECT_EQ(mjdiff_setParam(s.get(), name.c_str(), MJDIFF_DERIVED, nullptr, 0), MJDIFF_OK);
        mjtNum v = 0;
        ASSERT_EQ(mjdiff_getParam(s.get(), name.c_str(), &v, nullptr, 0), MJDIFF_OK);
        if (name.find(':') == std::string::npos) {
          EXPECT_EQ(v, MJDIFF_DERIVED) << name;
        } else if (i == 0) {
          mjtNum wide = 0;  // model-wide 5000 in this model
          ASSERT_EQ(mjdiff_getParam(s.get(), kParamNames[i], &wide, nullptr, 0), MJDIFF_OK);
          EXPECT_EQ(v, wide) << name;
        }
        EXPECT_EQ(mjdiff_setParam(s.get(), name.c_str(), v0, nullptr, 0), MJDIFF_OK);
      }
    }
  }
}

TEST(Errors, BadOptions) {
  ModelPtr m = load(ballXml(""));
  ASSERT_TRUE(m);
  for (int i = 0; i < kNparam; i++) {
    for (double bad : {-2.0, kNaN, kInf}) {
      SCOPED_TRACE(std::string(kParamNames[i]) + " = " + std::to_string(bad));
      mjdiffOptions opt;
      mjdiff_defaultOptions(&opt);
      *optField(&opt, i) = bad;
      char err[1000] = "";
      EXPECT_EQ(mjdiff_validateOptions(&opt, err, sizeof(err)), MJDIFF_ERR_VALUE);
      EXPECT_TRUE(contains(err, kParamNames[i])) << err;
      err[0] = 0;
      mjdiffModel* s = nullptr;
      EXPECT_EQ(mjdiff_makeModel(m.get(), &opt, &s, err, sizeof(err)), MJDIFF_ERR_VALUE);
      EXPECT_EQ(s, nullptr);
      EXPECT_TRUE(contains(err, kParamNames[i])) << err;
      if (bad == -2.0) {
        EXPECT_TRUE(mentionsNumber(err, "-2")) << err;
      }
      mjdiff_freeModel(s);
    }
  }
}

TEST(Errors, ErrBufferTruncatedAndNullable) {
  ModelPtr m = load(ballXml(numeric("mjdiff_contact_stifness", "1")));
  ASSERT_TRUE(m);
  char err[8];
  memset(err, 'x', sizeof(err));
  mjdiffModel* s = nullptr;
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, err, sizeof(err)), MJDIFF_ERR_NAME);
  EXPECT_EQ(strnlen(err, sizeof(err)), sizeof(err) - 1) << "err must be truncated and terminated";
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, nullptr, 0), MJDIFF_ERR_NAME);
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, err, 0), MJDIFF_ERR_NAME);
  EXPECT_EQ(s, nullptr);
}

//---------------------------------- error paths: model features -----------------------------------

TEST(Errors, ImplicitIntegrator) {
  ModelPtr m = load(ballXml(numeric("mjdiff_contact_stiffness", "5000"), "", "implicit"));
  ASSERT_TRUE(m);
  char err[1000] = "";
  mjdiffModel* s = nullptr;
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, err, sizeof(err)), MJDIFF_ERR_UNSUPPORTED);
  EXPECT_EQ(s, nullptr);
  EXPECT_TRUE(contains(err, "integrator")) << err;

  // a model switched to implicit after the smooth model was made: mjdiff_step refuses
  ModelPtr e = load(ballXml(numeric("mjdiff_contact_stiffness", "5000")));
  ASSERT_TRUE(e);
  SmoothPtr se = makeSmooth(e.get());
  ASSERT_TRUE(se);
  DataPtr d(mj_makeData(e.get()));
  d->qvel[0] = 0.3;
  std::vector<mjtNum> state0 = getState(e.get(), d.get());
  e->opt.integrator = mjINT_IMPLICIT;
  err[0] = 0;
  EXPECT_EQ(mjdiff_step(e.get(), d.get(), se.get(), err, sizeof(err)), MJDIFF_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(err, "integrator")) << err;
  EXPECT_TRUE(bitEqual(state0, getState(e.get(), d.get())));
  EXPECT_EQ(mjdiff_step(e.get(), d.get(), se.get(), nullptr, 0), MJDIFF_ERR_UNSUPPORTED);

  // and works again after switching back
  e->opt.integrator = mjINT_RK4;
  EXPECT_EQ(mjdiff_step(e.get(), d.get(), se.get(), err, sizeof(err)), MJDIFF_OK) << err;
}

// the implicit step's Newton system is dense: above MJDIFF_IMPLICIT_MAX_NV dofs it is refused by
// name, made, set or stepped (at nv = 3000, MuJoCo's particle sample, a step with contacts had
// taken half a minute or more), and the explicit step still runs
TEST(Errors, ImplicitAboveItsSize) {
  const int nbody = MJDIFF_IMPLICIT_MAX_NV / 6 + 1;  // free spheres: nv just above the limit
  std::string bodies;
  for (int i = 0; i < nbody; i++) {
    std::string x = std::to_string(0.3 * (i % 20)), y = std::to_string(0.3 * (i / 20));
    bodies += "<body pos='" + x + " " + y + " 0.2'><freejoint/><geom size='0.1'/></body>";
  }
  auto xml = [&](const char* custom) {
    return std::string("<mujoco><custom>") + custom +
           "</custom><worldbody><geom type='plane' size='10 10 .1'/>" + bodies +
           "</worldbody></mujoco>";
  };
  char err[1000] = "";
  ModelPtr m = load(xml("<numeric name='mjdiff_integrator' data='1'/>"));
  ASSERT_TRUE(m);
  ASSERT_GT(m->nv, MJDIFF_IMPLICIT_MAX_NV);
  mjdiffModel* s = nullptr;
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, err, sizeof(err)), MJDIFF_ERR_UNSUPPORTED);
  EXPECT_EQ(s, nullptr);
  std::string nv = "nv = " + std::to_string(m->nv);
  EXPECT_TRUE(contains(err, nv.c_str()) && contains(err, "implicit")) << err;

  ModelPtr e = load(xml("<numeric name='mjdiff_enable' data='1'/>"));
  ASSERT_TRUE(e);
  SmoothPtr se = makeSmooth(e.get());
  ASSERT_TRUE(se);
  err[0] = 0;
  EXPECT_EQ(mjdiff_setParam(se.get(), "integrator", MJDIFF_INT_IMPLICIT, err, sizeof(err)),
            MJDIFF_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(err, nv.c_str())) << err;
  mjtNum integrator = 0;
  ASSERT_EQ(mjdiff_getParam(se.get(), "integrator", &integrator, err, sizeof(err)), MJDIFF_OK);
  EXPECT_NE(integrator, MJDIFF_INT_IMPLICIT);
  DataPtr d(mj_makeData(e.get()));
  for (int i = 0; i < 5; i++) {
    ASSERT_EQ(mjdiff_step(e.get(), d.get(), se.get(), err, sizeof(err)), MJDIFF_OK) << err;
  }
}

TEST(Errors, UnsupportedFeatures) {
  // distance equality (MuJoCo 2.2.2's parser refuses it, so set the type on a loaded model)
  std::string dist = R"(
<mujoco>
  <custom><numeric name='mjdiff_enable' data='1'/></custom>
  <worldbody>
    <body name='a' pos='0 0 1'><freejoint/><geom name='ga' size='0.1'/></body>
    <body name='b' pos='1 0 1'><freejoint/><geom name='gb' size='0.1'/></body>
  </worldbody>
  <equality><connect name='dd' body1='a' body2='b' anchor='0.5 0 0'/></equality>
</mujoco>)";
  ModelPtr m = load(dist);
  ASSERT_TRUE(m);
  m->eq_type[0] = mjEQ_DISTANCE;
  char err[1000] = "";
  mjdiffModel* s = nullptr;
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, err, sizeof(err)), MJDIFF_ERR_UNSUPPORTED);
  EXPECT_EQ(s, nullptr);
  EXPECT_TRUE(contains(err, "equality")) << err;
  EXPECT_TRUE(contains(err, "dd")) << err;

  // ball joint limit narrower than twice the limit width
  std::string ball = R"(
<mujoco>
  <compiler angle='radian'/>
  <custom><numeric name='mjdiff_limit_width' data='0.1'/></custom>
  <worldbody>
    <body pos='0 0 1'><joint name='bj' type='ball' limited='true' range='0 0.15'/>
      <geom size='0.1' pos='0 0 -0.3'/></body>
  </worldbody>
</mujoco>)";
  m = load(ball);
  ASSERT_TRUE(m);
  err[0] = 0;
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, err, sizeof(err)), MJDIFF_ERR_UNSUPPORTED);
  EXPECT_EQ(s, nullptr);
  EXPECT_TRUE(contains(err, "bj")) << err;
  EXPECT_TRUE(contains(err, "limit_width")) << err;
}

TEST(Errors, MismatchedModels) {
  ModelPtr a = load(ballXml(numeric("mjdiff_enable", "1")));
  ModelPtr b = load(richXml());
  ASSERT_TRUE(a && b);
  ASSERT_NE(a->ngeom, b->ngeom);
  SmoothPtr sa = makeSmooth(a.get());
  SmoothPtr sb = makeSmooth(b.get());
  ASSERT_TRUE(sa && sb);
  DataPtr db(mj_makeData(b.get()));
  std::vector<mjtNum> state0 = getState(b.get(), db.get());
  char err[1000] = "";
  EXPECT_EQ(mjdiff_step(b.get(), db.get(), sa.get(), err, sizeof(err)), MJDIFF_ERR_ARGUMENT);
  EXPECT_TRUE(contains(err, "ngeom")) << err;
  err[0] = 0;
  EXPECT_EQ(mjdiff_forward(b.get(), db.get(), sa.get(), err, sizeof(err)), MJDIFF_ERR_ARGUMENT);
  EXPECT_TRUE(contains(err, "ngeom")) << err;
  EXPECT_TRUE(bitEqual(state0, getState(b.get(), db.get())));

  err[0] = 0;
  int flags = b->opt.disableflags;
  EXPECT_EQ(mjdiff_attach(b.get(), sa.get(), err, sizeof(err)), MJDIFF_ERR_ARGUMENT);
  EXPECT_GT(strlen(err), 0u);
  EXPECT_EQ(b->opt.disableflags, flags);
  EXPECT_EQ(mjdiff_attached(b.get()), nullptr);

  // contact force with a mismatched smooth model
  runSteps(b.get(), db.get(), sb.get(), true, 200, 1);
  ASSERT_EQ(mjdiff_forward(b.get(), db.get(), sb.get(), err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_GT(db->ncon, 0);
  mjdiffContactForce f;
  EXPECT_EQ(mjdiff_contactForce(b.get(), db.get(), sa.get(), 0, &f), MJDIFF_ERR_ARGUMENT);

  // same sizes, different mjModel: attach refuses
  ModelPtr a2 = load(ballXml(numeric("mjdiff_enable", "1")));
  ASSERT_TRUE(a2);
  err[0] = 0;
  EXPECT_EQ(mjdiff_attach(a2.get(), sa.get(), err, sizeof(err)), MJDIFF_ERR_ARGUMENT);
  EXPECT_GT(strlen(err), 0u);
  EXPECT_EQ(mjdiff_attached(a2.get()), nullptr);
}

TEST(Errors, NullArguments) {
  ModelPtr m = load(ballXml(numeric("mjdiff_enable", "1")));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  DataPtr d(mj_makeData(m.get()));
  char err[1000];
  mjdiffModel* out = nullptr;
  mjtNum v = 0;

  auto check = [&](mjdiffStatus st, const char* what) {
    EXPECT_EQ(st, MJDIFF_ERR_ARGUMENT) << what << ": " << mjdiff_statusName(st);
    EXPECT_GT(strlen(err), 0u) << what;
    err[0] = 0;
  };
  err[0] = 0;
  check(mjdiff_makeModel(nullptr, nullptr, &out, err, sizeof(err)), "makeModel m");
  EXPECT_EQ(out, nullptr);
  check(mjdiff_makeModel(m.get(), nullptr, nullptr, err, sizeof(err)), "makeModel out");
  check(mjdiff_validateOptions(nullptr, err, sizeof(err)), "validateOptions");
  check(mjdiff_setParam(nullptr, "contact_stiffness", 1, err, sizeof(err)), "setParam s");
  check(mjdiff_setParam(s.get(), nullptr, 1, err, sizeof(err)), "setParam name");
  check(mjdiff_getParam(nullptr, "contact_stiffness", &v, err, sizeof(err)), "getParam s");
  check(mjdiff_getParam(s.get(), nullptr, &v, err, sizeof(err)), "getParam name");
  check(mjdiff_getParam(s.get(), "contact_stiffness", nullptr, err, sizeof(err)), "getParam v");
  check(mjdiff_forward(nullptr, d.get(), s.get(), err, sizeof(err)), "forward m");
  check(mjdiff_forward(m.get(), nullptr, s.get(), err, sizeof(err)), "forward d");
  check(mjdiff_forward(m.get(), d.get(), nullptr, err, sizeof(err)), "forward s");
  check(mjdiff_step(nullptr, d.get(), s.get(), err, sizeof(err)), "step m");
  check(mjdiff_step(m.get(), nullptr, s.get(), err, sizeof(err)), "step d");
  check(mjdiff_step(m.get(), d.get(), nullptr, err, sizeof(err)), "step s");
  check(mjdiff_attach(nullptr, s.get(), err, sizeof(err)), "attach m");
  check(mjdiff_attach(m.get(), nullptr, err, sizeof(err)), "attach s");
  EXPECT_EQ(mjdiff_attached(m.get()), nullptr);

  // Nullable: err
  EXPECT_EQ(mjdiff_step(m.get(), d.get(), nullptr, nullptr, 0), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_forward(m.get(), nullptr, s.get(), nullptr, 0), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_makeModel(nullptr, nullptr, &out, nullptr, 0), MJDIFF_ERR_ARGUMENT);

  // contactForce (no err argument)
  ASSERT_EQ(mjdiff_forward(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(d->ncon, 1);
  mjdiffContactForce f;
  EXPECT_EQ(mjdiff_contactForce(nullptr, d.get(), s.get(), 0, &f), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_contactForce(m.get(), nullptr, s.get(), 0, &f), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_contactForce(m.get(), d.get(), nullptr, 0, &f), MJDIFF_ERR_ARGUMENT);
  EXPECT_EQ(mjdiff_contactForce(m.get(), d.get(), s.get(), 0, nullptr), MJDIFF_ERR_ARGUMENT);

  // NULL-safe queries and frees
  mjdiff_freeModel(nullptr);
  EXPECT_EQ(mjdiff_getOptions(nullptr), nullptr);
  EXPECT_EQ(mjdiff_detach(nullptr), nullptr);
  EXPECT_EQ(mjdiff_attached(nullptr), nullptr);
  EXPECT_EQ(mjdiff_detach(m.get()), nullptr);  // never attached
  mjdiff_adapterStats(nullptr, nullptr);
  EXPECT_STREQ(mjdiff_versionString(), MJDIFF_VERSION_STRING);
  for (int st = MJDIFF_OK; st <= MJDIFF_ERR_MEMORY; st++) {
    EXPECT_NE(mjdiff_statusName(static_cast<mjdiffStatus>(st)), nullptr);
    EXPECT_TRUE(contains(mjdiff_statusName(static_cast<mjdiffStatus>(st)), "MJDIFF_"));
  }
  EXPECT_NE(mjdiff_statusName(static_cast<mjdiffStatus>(99)), nullptr);
}

TEST(Errors, ContactForceOutOfRange) {
  ModelPtr m = load(ballXml(numeric("mjdiff_enable", "1")));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  DataPtr d(mj_makeData(m.get()));
  mjdiffContactForce f, f0;
  memset(&f, 0x5a, sizeof(f));
  memcpy(&f0, &f, sizeof(f));

  // before any forward pass: no contacts
  EXPECT_EQ(mjdiff_contactForce(m.get(), d.get(), s.get(), 0, &f), MJDIFF_ERR_ARGUMENT);
  char err[1000] = "";
  ASSERT_EQ(mjdiff_forward(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(d->ncon, 1);
  for (int i : {-1, 1, 2, 1000, std::numeric_limits<int>::min()}) {
    EXPECT_EQ(mjdiff_contactForce(m.get(), d.get(), s.get(), i, &f), MJDIFF_ERR_ARGUMENT) << i;
  }
  EXPECT_EQ(0, memcmp(&f, &f0, sizeof(f))) << "output written on error";
  EXPECT_EQ(mjdiff_contactForce(m.get(), d.get(), s.get(), 0, &f), MJDIFF_OK);
}

TEST(Errors, AttachTwice) {
  ModelPtr m = load(ballXml(numeric("mjdiff_enable", "1"), "<flag gravity='disable'/>"));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  int flags0 = m->opt.disableflags;
  char err[1000] = "";
  ASSERT_EQ(mjdiff_attach(m.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard guard{m.get()};
  int flags1 = m->opt.disableflags;
  EXPECT_EQ(mjdiff_attach(m.get(), s.get(), err, sizeof(err)), MJDIFF_ERR_ARGUMENT);
  EXPECT_TRUE(contains(err, "attached")) << err;
  EXPECT_EQ(m->opt.disableflags, flags1);
  EXPECT_EQ(mjdiff_attached(m.get()), s.get());

  // a second smooth model of the same mjModel is refused as well
  SmoothPtr s2 = makeSmooth(m.get());
  err[0] = 0;
  EXPECT_EQ(mjdiff_attach(m.get(), s2.get(), err, sizeof(err)), MJDIFF_ERR_ARGUMENT);
  EXPECT_TRUE(contains(err, "attached")) << err;
  EXPECT_EQ(mjdiff_attached(m.get()), s.get());

  // detach restores the flags of before the first attach
  EXPECT_EQ(mjdiff_detach(m.get()), s.get());
  guard.m = nullptr;
  EXPECT_EQ(m->opt.disableflags, flags0);
  EXPECT_EQ(mjdiff_detach(m.get()), nullptr);
}

//---------------------------------- non-finite state ----------------------------------------------

TEST(NonFinite, StateRejectedAndUntouched) {
  ModelPtr m = load(richXml());
  ASSERT_TRUE(m);
  ASSERT_GT(m->na, 0);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  struct Case {
    const char* array;
    int index;
    double value;
    int warning;
  } cases[] = {
      {"qpos", 4, kNaN, mjWARN_BADQPOS},   {"qvel", 2, kInf, mjWARN_BADQVEL},
      {"qvel", 0, -kInf, mjWARN_BADQVEL},  {"ctrl", 1, kNaN, mjWARN_BADCTRL},
      {"act", 0, kNaN, -1},                {"qpos", 0, kInf, mjWARN_BADQPOS},
  };
  for (bool rk4 : {false, true}) {
    if (rk4) m->opt.integrator = mjINT_RK4;
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(rk4 ? "RK4 " : "Euler ") + c.array + "[" +
                   std::to_string(c.index) + "] = " + std::to_string(c.value));
      DataPtr d(mj_makeData(m.get()));
      unsigned long long seed = 7;
      runSteps(m.get(), d.get(), s.get(), true, 20, seed);
      mjtNum* x = !strcmp(c.array, "qpos")   ? d->qpos
                  : !strcmp(c.array, "qvel") ? d->qvel
                  : !strcmp(c.array, "ctrl") ? d->ctrl
                                             : d->act;
      x[c.index] = c.value;
      std::vector<mjtNum> state0 = getState(m.get(), d.get());
      int warn0 = c.warning >= 0 ? d->warning[c.warning].number : 0;
      int total0 = warningTotal(d.get());

      char err[1000] = "";
      EXPECT_EQ(mjdiff_step(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_ERR_NONFINITE);
      EXPECT_TRUE(contains(err, c.array)) << err;
      EXPECT_TRUE(mentionsNumber(err, std::to_string(c.index))) << err;
      EXPECT_TRUE(bitEqual(state0, getState(m.get(), d.get()))) << "state changed";
      if (c.warning >= 0) {
        EXPECT_EQ(d->warning[c.warning].number, warn0 + 1);
      }
      EXPECT_GT(warningTotal(d.get()), total0) << "no warning counter raised";

      // mjdiff_forward rejects the same state
      err[0] = 0;
      total0 = warningTotal(d.get());
      EXPECT_EQ(mjdiff_forward(m.get(), d.get(), s.get(), err, sizeof(err)),
                MJDIFF_ERR_NONFINITE);
      EXPECT_TRUE(contains(err, c.array)) << err;
      EXPECT_TRUE(bitEqual(state0, getState(m.get(), d.get())));
      EXPECT_GT(warningTotal(d.get()), total0);
    }
  }
}

// user gain / dynamics callbacks that turn non-finite on a chosen call
int gGainCalls = 0, gGainBadCall = -1, gDynCalls = 0, gDynBadCall = -1;

mjtNum badGain(const mjModel*, const mjData*, int) {
  return ++gGainCalls == gGainBadCall ? kNaN : 1.0;
}

mjtNum badDyn(const mjModel*, const mjData* d, int id) {
  return ++gDynCalls == gDynBadCall ? kInf : d->ctrl[id] - d->act[0];
}

struct CallbackGuard {
  ~CallbackGuard() {
    mjcb_act_gain = nullptr;
    mjcb_act_dyn = nullptr;
  }
};

const char* kCallbackXml = R"(
<mujoco>
  <option timestep='0.005'/>
  <custom><numeric name='mjdiff_limit_stiffness' data='200'/></custom>
  <worldbody>
    <geom name='floor' type='plane' size='1 1 0.1'/>
    <body pos='0 0 0.5'>
      <joint name='j' type='hinge' axis='0 1 0' range='-1 1' limited='true'/>
      <geom type='capsule' fromto='0 0 0 0.3 0 0' size='0.03' mass='1'/>
    </body>
    <body pos='0 0 0.04'><freejoint/><geom size='0.05' mass='0.2'/></body>
  </worldbody>
  <actuator>
    <general joint='j' dyntype='user' gaintype='user'/>
  </actuator>
</mujoco>)";

TEST(NonFinite, ResultRejectedAndStateUntouched) {
  CallbackGuard guard;
  ModelPtr m = load(kCallbackXml);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->na, 1);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  mjcb_act_gain = badGain;
  mjcb_act_dyn = badDyn;

  struct Case {
    const char* what;
    int integrator;
    int badGainCall;  // 1: the first forward pass, 2: RK4 stage 1, 4: RK4 stage 3
    int badDynCall;
    const char* mention;
  } cases[] = {
      {"Euler qacc", mjINT_EULER, 1, -1, "qacc"},
      {"RK4 qacc stage 0", mjINT_RK4, 1, -1, "qacc"},
      {"RK4 qacc stage 1", mjINT_RK4, 2, -1, "qacc"},
      {"RK4 qacc stage 3", mjINT_RK4, 4, -1, "qacc"},
      {"Euler act_dot", mjINT_EULER, -1, 1, "act_dot"},
      {"RK4 act_dot stage 2", mjINT_RK4, -1, 3, "act_dot"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    m->opt.integrator = c.integrator;
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 0.3;
    d->qvel[0] = -1;
    d->ctrl[0] = 0.5;
    d->act[0] = 0.1;
    d->time = 1.25;
    gGainCalls = gDynCalls = 0;
    gGainBadCall = gDynBadCall = -1;
    char err[1000] = "";
    ASSERT_EQ(mjdiff_step(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
    std::vector<mjtNum> state0 = getState(m.get(), d.get());
    int total0 = warningTotal(d.get());
    gGainCalls = gDynCalls = 0;
    gGainBadCall = c.badGainCall;
    gDynBadCall = c.badDynCall;
    EXPECT_EQ(mjdiff_step(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_ERR_NONFINITE);
    EXPECT_TRUE(contains(err, c.mention)) << err;
    EXPECT_TRUE(bitEqual(state0, getState(m.get(), d.get()))) << "state changed";
    EXPECT_GT(warningTotal(d.get()), total0) << "no warning counter raised: " << err;
  }
}

//---------------------------------- a call does not change its inputs -----------------------------

struct ModelSnapshot {
  ModelPtr copy;
  mjOption opt;
  mjVisual vis;
  mjStatistic stat;
};

ModelSnapshot snapshot(const mjModel* m) {
  ModelSnapshot s;
  s.copy.reset(mj_copyModel(nullptr, m));
  memcpy(&s.opt, &m->opt, sizeof(mjOption));
  memcpy(&s.vis, &m->vis, sizeof(mjVisual));
  memcpy(&s.stat, &m->stat, sizeof(mjStatistic));
  return s;
}

template <typename T>
bool sameArray(const T* a, const T* b, int n) {
  return n == 0 || !memcmp(a, b, sizeof(T) * n);
}

void expectUnchanged(const ModelSnapshot& snap, const mjModel* m) {
  const mjModel* c = snap.copy.get();
  ASSERT_TRUE(c);
  EXPECT_EQ(0, memcmp(&snap.opt, &m->opt, sizeof(mjOption))) << "opt changed";
  EXPECT_EQ(snap.opt.disableflags, m->opt.disableflags);
  EXPECT_EQ(0, memcmp(&snap.vis, &m->vis, sizeof(mjVisual))) << "vis changed";
  EXPECT_EQ(0, memcmp(&snap.stat, &m->stat, sizeof(mjStatistic))) << "stat changed";
  EXPECT_EQ(c->ngeom, m->ngeom);
  EXPECT_EQ(c->nv, m->nv);
  EXPECT_EQ(c->nconmax, m->nconmax);
#if MJDIFF_MUJOCO_3
  EXPECT_EQ(c->narena, m->narena);
#else
  EXPECT_EQ(c->nstack, m->nstack);
#endif
  ASSERT_EQ(c->nbuffer, m->nbuffer);
  EXPECT_TRUE(sameArray(c->geom_margin, m->geom_margin, m->ngeom)) << "geom_margin changed";
  EXPECT_TRUE(sameArray(c->geom_gap, m->geom_gap, m->ngeom));
  EXPECT_TRUE(sameArray(c->geom_friction, m->geom_friction, 3 * m->ngeom));
  EXPECT_TRUE(sameArray(c->geom_solref, m->geom_solref, mjNREF * m->ngeom));
  EXPECT_TRUE(sameArray(c->geom_contype, m->geom_contype, m->ngeom));
  EXPECT_TRUE(sameArray(c->pair_margin, m->pair_margin, m->npair));
  EXPECT_TRUE(sameArray(c->jnt_range, m->jnt_range, 2 * m->njnt));
  EXPECT_TRUE(sameArray(c->jnt_limited, m->jnt_limited, m->njnt));
  EXPECT_TRUE(sameArray(c->dof_frictionloss, m->dof_frictionloss, m->nv));
  EXPECT_TRUE(sameArray(c->dof_damping, m->dof_damping, m->nv));
  EXPECT_TRUE(sameArray(c->eq_data, m->eq_data, mjNEQDATA * m->neq));
#if MJDIFF_MUJOCO_3
  EXPECT_TRUE(sameArray(c->eq_active0, m->eq_active0, m->neq));
#else
  EXPECT_TRUE(sameArray(c->eq_active, m->eq_active, m->neq));
#endif
  EXPECT_TRUE(sameArray(c->numeric_data, m->numeric_data, m->nnumericdata));
  EXPECT_TRUE(sameArray(c->qpos0, m->qpos0, m->nq));
  EXPECT_EQ(0, memcmp(c->buffer, m->buffer, m->nbuffer)) << "model buffer changed";
}

TEST(Inputs, MakeModelAndStepDoNotChangeModel) {
  for (const char* integrator : {"Euler", "RK4"}) {
    SCOPED_TRACE(integrator);
    ModelPtr m = load(richXml(integrator));
    ASSERT_TRUE(m);
    ModelSnapshot snap = snapshot(m.get());
    SmoothPtr s = makeSmooth(m.get());
    ASSERT_TRUE(s);
    expectUnchanged(snap, m.get());

    char err[1000] = "";
    ASSERT_EQ(mjdiff_setParam(s.get(), "contact_width:ball", 0.01, err, sizeof(err)), MJDIFF_OK);
    ASSERT_EQ(mjdiff_setParam(s.get(), "contact_width", 0.003, err, sizeof(err)), MJDIFF_OK);
    expectUnchanged(snap, m.get());

    DataPtr d(mj_makeData(m.get()));
    long long ncon = 0;
    unsigned long long seed = 3;
    for (int i = 0; i < 300; i++) {
      if (i % 10 == 0) shim_randomCtrl(m.get(), d.get(), &seed);
      ASSERT_EQ(mjdiff_step(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
      ncon += d->ncon;
    }
    EXPECT_GT(ncon, 0);
    ASSERT_EQ(mjdiff_forward(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
    expectUnchanged(snap, m.get());
  }
}

TEST(Inputs, QueriesDoNotChangeDataOrSmoothModel) {
  ModelPtr m = load(richXml());
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  DataPtr d(mj_makeData(m.get()));
  char err[1000] = "";
  runSteps(m.get(), d.get(), s.get(), true, 100, 11);
  ASSERT_GT(d->ncon, 0);

  std::vector<unsigned char> data0(static_cast<unsigned char*>(d->buffer),
                                   static_cast<unsigned char*>(d->buffer) + d->nbuffer);
  mjdiffOptions opt0;
  memcpy(&opt0, mjdiff_getOptions(s.get()), sizeof(opt0));
  for (int i = 0; i < d->ncon; i++) {
    mjdiffContactForce f;
    ASSERT_EQ(mjdiff_contactForce(m.get(), d.get(), s.get(), i, &f), MJDIFF_OK);
  }
  for (int i = 0; i < kNparam; i++) {
    mjtNum v;
    ASSERT_EQ(mjdiff_getParam(s.get(), kParamNames[i], &v, err, sizeof(err)), MJDIFF_OK);
  }
  EXPECT_TRUE(mjdiff_wantsSmooth(m.get()));
  EXPECT_EQ(0, memcmp(data0.data(), d->buffer, d->nbuffer)) << "mjData changed";
  EXPECT_EQ(0, memcmp(&opt0, mjdiff_getOptions(s.get()), sizeof(opt0)));
}

TEST(Inputs, ForwardLeavesStateAndStepOnlyState) {
  ModelPtr m = load(richXml());
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  DataPtr d(mj_makeData(m.get()));
  runSteps(m.get(), d.get(), s.get(), true, 50, 5);
  std::vector<mjtNum> state0 = getState(m.get(), d.get());
  std::vector<mjtNum> applied0(d->qfrc_applied, d->qfrc_applied + m->nv);

  // forward changes no state, except that MuJoCo's kinematics normalises quaternions in qpos
  // (as mj_forward does)
  std::vector<mjtNum> expect = state0;
  mj_normalizeQuat(m.get(), expect.data());
  char err[1000] = "";
  ASSERT_EQ(mjdiff_forward(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_TRUE(bitEqual(expect, getState(m.get(), d.get())));

  // step advances qpos/qvel/act/time but leaves ctrl and applied forces alone
  ASSERT_EQ(mjdiff_step(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(0, memcmp(state0.data() + m->nq + m->nv + m->na, d->ctrl, sizeof(mjtNum) * m->nu));
  EXPECT_TRUE(bitEqual(applied0, std::vector<mjtNum>(d->qfrc_applied,
                                                     d->qfrc_applied + m->nv)));
  EXPECT_EQ(d->time, state0.back() + m->opt.timestep);
}

//---------------------------------- determinism ---------------------------------------------------

TEST(Determinism, TwoRunsBitForBit) {
  for (const char* integrator : {"Euler", "RK4"}) {
    SCOPED_TRACE(integrator);
    ModelPtr m = load(richXml(integrator));
    ASSERT_TRUE(m);
    SmoothPtr s = makeSmooth(m.get());
    DataPtr d1(mj_makeData(m.get())), d2(mj_makeData(m.get()));
    long long ncon = 0;
    char err[1000] = "";
    for (int run = 0; run < 2; run++) {
      mjData* d = run ? d2.get() : d1.get();
      unsigned long long seed = 42;
      for (int i = 0; i < 2000; i++) {
        shim_randomCtrl(m.get(), d, &seed);
        ASSERT_EQ(mjdiff_step(m.get(), d, s.get(), err, sizeof(err)), MJDIFF_OK)
            << "run " << run << " step " << i << ": " << err;
        if (!run) ncon += d->ncon;
      }
    }
    EXPECT_GT(ncon, 0);
    EXPECT_TRUE(shim_stateFinite(m.get(), d1.get()));
    EXPECT_EQ(0, memcmp(d1->qpos, d2->qpos, sizeof(mjtNum) * m->nq));
    EXPECT_EQ(0, memcmp(d1->qvel, d2->qvel, sizeof(mjtNum) * m->nv));
    EXPECT_EQ(0, memcmp(d1->act, d2->act, sizeof(mjtNum) * m->na));
    EXPECT_EQ(d1->ncon, d2->ncon);
  }
}

//---------------------------------- the MuJoCo 2.2 adapter ----------------------------------------

TEST(Adapter, AttachSetsFlagsAndDetachRestores) {
  // the user disabled gravity and limits before attaching
  ModelPtr m = load(ballXml(numeric("mjdiff_enable", "1"),
                            "<flag gravity='disable' limit='disable'/>"));
  ASSERT_TRUE(m);
  SmoothPtr s = makeSmooth(m.get());
  int flags0 = m->opt.disableflags;
  EXPECT_EQ(mjdiff_attached(m.get()), nullptr);
  char err[1000] = "";
  ASSERT_EQ(mjdiff_attach(m.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard guard{m.get()};
  EXPECT_EQ(mjdiff_attached(m.get()), s.get());
  for (int flag : {mjDSBL_CONTACT, mjDSBL_EQUALITY, mjDSBL_FRICTIONLOSS, mjDSBL_LIMIT}) {
    EXPECT_TRUE(m->opt.disableflags & flag) << flag;
  }
  EXPECT_TRUE(m->opt.disableflags & mjDSBL_GRAVITY);
  EXPECT_FALSE(m->opt.disableflags & mjDSBL_CONSTRAINT);
  EXPECT_FALSE(compat_passiveOff(m.get()));
  EXPECT_EQ(mjdiff_detach(m.get()), s.get());
  guard.m = nullptr;
  EXPECT_EQ(m->opt.disableflags, flags0);
  EXPECT_EQ(mjdiff_attached(m.get()), nullptr);
  EXPECT_EQ(mjdiff_detach(m.get()), nullptr);

  // attach again after detaching
  ASSERT_EQ(mjdiff_attach(m.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_detach(m.get()), s.get());
  EXPECT_EQ(m->opt.disableflags, flags0);
}

// mj_step of an attached model against mjdiff_step of an unattached copy
void compareAdapter(const std::string& xml, int nstep, double* maxdiff, long long* ncon) {
  ModelPtr ref = load(xml), att = load(xml);
  ASSERT_TRUE(ref && att);
  SmoothPtr sref = makeSmooth(ref.get()), satt = makeSmooth(att.get());
  ASSERT_TRUE(sref && satt);
  char err[1000] = "";
  ASSERT_EQ(mjdiff_attach(att.get(), satt.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard guard{att.get()};
  DataPtr dref(mj_makeData(ref.get())), datt(mj_makeData(att.get()));
  unsigned long long seed1 = 99, seed2 = 99;
  long long ncall0, ncall1;
  mjdiff_adapterStats(&ncall0, nullptr);
  *ncon = 0;
  for (int i = 0; i < nstep; i++) {
    if (i % 10 == 0) {
      shim_randomCtrl(ref.get(), dref.get(), &seed1);
      shim_randomCtrl(att.get(), datt.get(), &seed2);
    }
    ASSERT_EQ(mjdiff_step(ref.get(), dref.get(), sref.get(), err, sizeof(err)), MJDIFF_OK)
        << "step " << i << ": " << err;
    mj_step(att.get(), datt.get());
    *ncon += datt->ncon;
  }
  mjdiff_adapterStats(&ncall1, nullptr);
  // MuJoCo 2.2 skips mjcb_passive when passive forces are disabled; the smooth forces are off then
  int stages = ref->opt.integrator == mjINT_RK4 ? 4 : 1;
  if (compat_passiveOff(ref.get())) stages = 0;
  EXPECT_EQ(ncall1 - ncall0, static_cast<long long>(stages) * nstep);
  EXPECT_TRUE(shim_stateFinite(ref.get(), dref.get()));
  EXPECT_EQ(dref->ncon, datt->ncon);
  EXPECT_EQ(dref->time, datt->time);
  *maxdiff = maxStateDiff(ref.get(), dref.get(), datt.get());
  EXPECT_TRUE(sameState(ref.get(), dref.get(), datt.get()))
      << "mj_step of the attached model differs from mjdiff_step: max |diff| = " << *maxdiff;
}

TEST(Adapter, MjStepMatchesSmoothStepEuler) {
  double diff = -1;
  long long ncon = 0;
  compareAdapter(richXml("Euler"), 500, &diff, &ncon);
  EXPECT_GT(ncon, 0);
  std::cout << "Euler: max |mj_step - mjdiff_step| after 500 steps = " << diff << ", contacts "
            << ncon << "\n";
  RecordProperty("euler_maxdiff", std::to_string(diff));
}

TEST(Adapter, MjStepMatchesSmoothStepRK4) {
  double diff = -1;
  long long ncon = 0;
  compareAdapter(richXml("RK4"), 500, &diff, &ncon);
  EXPECT_GT(ncon, 0);
  std::cout << "RK4: max |mj_step - mjdiff_step| after 500 steps = " << diff << ", contacts "
            << ncon << "\n";
  RecordProperty("rk4_maxdiff", std::to_string(diff));
}

// mjdiff_step is a drop-in for mj_step: it gives the same result whether or not the model is
// attached (the adapter's disable flags must not turn the smooth forces off)
TEST(Adapter, SmoothStepOnAttachedModel) {
  std::string xml = richXml();
  ModelPtr ref = load(xml), att = load(xml);
  ASSERT_TRUE(ref && att);
  SmoothPtr sref = makeSmooth(ref.get()), satt = makeSmooth(att.get());
  char err[1000] = "";
  ASSERT_EQ(mjdiff_attach(att.get(), satt.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard guard{att.get()};
  DataPtr dref(mj_makeData(ref.get())), datt(mj_makeData(att.get()));
  long long ncon_ref = 0, ncon_att = 0;
  unsigned long long seed1 = 5, seed2 = 5;
  for (int i = 0; i < 300; i++) {
    if (i % 10 == 0) {
      shim_randomCtrl(ref.get(), dref.get(), &seed1);
      shim_randomCtrl(att.get(), datt.get(), &seed2);
    }
    ASSERT_EQ(mjdiff_step(ref.get(), dref.get(), sref.get(), err, sizeof(err)), MJDIFF_OK);
    ASSERT_EQ(mjdiff_step(att.get(), datt.get(), satt.get(), err, sizeof(err)), MJDIFF_OK);
    ncon_ref += dref->ncon;
    ncon_att += datt->ncon;
  }
  EXPECT_EQ(ncon_ref, ncon_att);
  EXPECT_TRUE(sameState(ref.get(), dref.get(), datt.get()))
      << "max |diff| = " << maxStateDiff(ref.get(), dref.get(), datt.get());
}

// a model whose passive forces the user disabled: mj_step of the attached model and mjdiff_step
// must still agree (both with or both without the smooth forces)
TEST(Adapter, PassiveDisabledAgrees) {
  double diff = -1;
  long long ncon = 0;
  std::string xml = ballXml(numeric("mjdiff_contact_stiffness", "3000"),
#if MJDIFF_MUJOCO_3  // 3.x split passive into spring and damper; both off turn passive forces off
                            "<flag spring='disable' damper='disable'/>");
#else
                            "<flag passive='disable'/>");
#endif
  compareAdapter(xml, 300, &diff, &ncon);
  std::cout << "passive disabled: max |mj_step - mjdiff_step| = " << diff << ", contacts " << ncon
            << "\n";
  // smooth forces are passive forces: with passive forces disabled neither path detects contacts
  EXPECT_EQ(ncon, 0);
}

TEST(Adapter, TwoModelsAttached) {
  std::string xa = richXml(), xb = ballXml(numeric("mjdiff_contact_stiffness", "3000"));
  ModelPtr a = load(xa), b = load(xb), aref = load(xa), bref = load(xb);
  ASSERT_TRUE(a && b && aref && bref);
  SmoothPtr sa = makeSmooth(a.get()), sb = makeSmooth(b.get());
  SmoothPtr saref = makeSmooth(aref.get()), sbref = makeSmooth(bref.get());
  char err[1000] = "";
  ASSERT_EQ(mjdiff_attach(a.get(), sa.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard ga{a.get()};
  ASSERT_EQ(mjdiff_attach(b.get(), sb.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard gb{b.get()};
  EXPECT_EQ(mjdiff_attached(a.get()), sa.get());
  EXPECT_EQ(mjdiff_attached(b.get()), sb.get());

  DataPtr da(mj_makeData(a.get())), db(mj_makeData(b.get()));
  DataPtr dar(mj_makeData(a.get())), dbr(mj_makeData(b.get()));
  db->qvel[0] = 0.5;  // sliding on the floor
  dbr->qvel[0] = 0.5;
  unsigned long long s1 = 1, s2 = 1;
  long long ncon_b = 0;
  for (int i = 0; i < 500; i++) {
    if (i % 10 == 0) {
      shim_randomCtrl(a.get(), da.get(), &s1);
      shim_randomCtrl(aref.get(), dar.get(), &s2);
    }
    mj_step(a.get(), da.get());
    mj_step(b.get(), db.get());
    ASSERT_EQ(mjdiff_step(aref.get(), dar.get(), saref.get(), err, sizeof(err)), MJDIFF_OK);
    ASSERT_EQ(mjdiff_step(bref.get(), dbr.get(), sbref.get(), err, sizeof(err)), MJDIFF_OK);
    ncon_b += db->ncon;
  }
  EXPECT_GT(ncon_b, 0);
  EXPECT_GT(db->qpos[2], 0.09) << "ball fell through the floor: no smooth contact";
  EXPECT_TRUE(sameState(a.get(), da.get(), dar.get()))
      << "max |diff| = " << maxStateDiff(a.get(), da.get(), dar.get());
  EXPECT_TRUE(sameState(b.get(), db.get(), dbr.get()))
      << "max |diff| = " << maxStateDiff(b.get(), db.get(), dbr.get());

  // detaching one leaves the other attached
  EXPECT_EQ(mjdiff_detach(a.get()), sa.get());
  ga.m = nullptr;
  EXPECT_EQ(mjdiff_attached(a.get()), nullptr);
  EXPECT_EQ(mjdiff_attached(b.get()), sb.get());
  mj_step(b.get(), db.get());
  ASSERT_EQ(mjdiff_step(bref.get(), dbr.get(), sbref.get(), err, sizeof(err)), MJDIFF_OK);
  EXPECT_TRUE(sameState(b.get(), db.get(), dbr.get()));
}

void stepWithMuJoCo(const mjModel* m, mjData* d, int n, unsigned long long seed) {
  for (int i = 0; i < n; i++) {
    if (i % 10 == 0) shim_randomCtrl(m, d, &seed);
    mj_step(m, d);
  }
}

TEST(Adapter, ThreadsMatchSerial) {
  std::string xa = richXml(), xb = richXml("RK4");
  ModelPtr a = load(xa), b = load(xb);
  ASSERT_TRUE(a && b);
  SmoothPtr sa = makeSmooth(a.get()), sb = makeSmooth(b.get());
  char err[1000] = "";
  ASSERT_EQ(mjdiff_attach(a.get(), sa.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard ga{a.get()};
  ASSERT_EQ(mjdiff_attach(b.get(), sb.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard gb{b.get()};

  const int n = 1500;
  DataPtr t1(mj_makeData(a.get())), t2(mj_makeData(a.get())), t3(mj_makeData(b.get()));
  std::thread th1(stepWithMuJoCo, a.get(), t1.get(), n, 101ULL);
  std::thread th2(stepWithMuJoCo, a.get(), t2.get(), n, 202ULL);
  std::thread th3(stepWithMuJoCo, b.get(), t3.get(), n, 303ULL);
  th1.join();
  th2.join();
  th3.join();

  DataPtr r1(mj_makeData(a.get())), r2(mj_makeData(a.get())), r3(mj_makeData(b.get()));
  stepWithMuJoCo(a.get(), r1.get(), n, 101ULL);
  stepWithMuJoCo(a.get(), r2.get(), n, 202ULL);
  stepWithMuJoCo(b.get(), r3.get(), n, 303ULL);

  EXPECT_TRUE(shim_stateFinite(a.get(), r1.get()));
  EXPECT_FALSE(sameState(a.get(), r1.get(), r2.get())) << "the two seeds should differ";
  EXPECT_TRUE(sameState(a.get(), t1.get(), r1.get()))
      << "max |diff| = " << maxStateDiff(a.get(), t1.get(), r1.get());
  EXPECT_TRUE(sameState(a.get(), t2.get(), r2.get()))
      << "max |diff| = " << maxStateDiff(a.get(), t2.get(), r2.get());
  EXPECT_TRUE(sameState(b.get(), t3.get(), r3.get()))
      << "max |diff| = " << maxStateDiff(b.get(), t3.get(), r3.get());

  // and equal to the smooth step of an unattached copy
  ModelPtr aref = load(xa);
  SmoothPtr saref = makeSmooth(aref.get());
  DataPtr dref(mj_makeData(aref.get()));
  runSteps(aref.get(), dref.get(), saref.get(), true, n, 101ULL);
  EXPECT_TRUE(sameState(a.get(), t1.get(), dref.get()))
      << "max |diff| = " << maxStateDiff(a.get(), t1.get(), dref.get());
}

//---------------------------------- user-disabled contacts ----------------------------------------

TEST(DisabledContacts, NoSmoothContacts) {
  std::string xml = ballXml(numeric("mjdiff_contact_stiffness", "5000"),
                            "<flag contact='disable'/>");
  ModelPtr m = load(xml);
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->opt.disableflags & mjDSBL_CONTACT);
  SmoothPtr s = makeSmooth(m.get());
  ASSERT_TRUE(s);
  DataPtr d(mj_makeData(m.get()));
  char err[1000] = "";
  for (int i = 0; i < 500; i++) {
    ASSERT_EQ(mjdiff_step(m.get(), d.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(d->ncon, 0) << "step " << i;
  }
  EXPECT_LT(d->qpos[2], 0) << "the ball should fall through the floor";
  mjdiffContactForce f;
  EXPECT_EQ(mjdiff_contactForce(m.get(), d.get(), s.get(), 0, &f), MJDIFF_ERR_ARGUMENT);

  // the same through the adapter, which must keep the user's flag when detaching
  ModelPtr a = load(xml);
  SmoothPtr sa = makeSmooth(a.get());
  ASSERT_EQ(mjdiff_attach(a.get(), sa.get(), err, sizeof(err)), MJDIFF_OK) << err;
  AttachGuard guard{a.get()};
  DataPtr da(mj_makeData(a.get()));
  for (int i = 0; i < 500; i++) {
    mj_step(a.get(), da.get());
    ASSERT_EQ(da->ncon, 0) << "step " << i;
  }
  EXPECT_LT(da->qpos[2], 0);
  EXPECT_TRUE(sameState(m.get(), d.get(), da.get()));
  EXPECT_EQ(mjdiff_detach(a.get()), sa.get());
  guard.m = nullptr;
  EXPECT_TRUE(a->opt.disableflags & mjDSBL_CONTACT);

  // contacts on, then disabled at run time (the option may change between steps)
  ModelPtr r = load(ballXml(numeric("mjdiff_contact_stiffness", "5000")));
  SmoothPtr sr = makeSmooth(r.get());
  DataPtr dr(mj_makeData(r.get()));
  ASSERT_EQ(mjdiff_step(r.get(), dr.get(), sr.get(), err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(dr->ncon, 1);
  r->opt.disableflags |= mjDSBL_CONTACT;
  ASSERT_EQ(mjdiff_step(r.get(), dr.get(), sr.get(), err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(dr->ncon, 0);
}

}  // namespace
