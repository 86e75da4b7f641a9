// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// MuJoCo 3 only (built when CMake found MuJoCo 3.12): the engine plugin mjdiff.smooth in
// libmjdiff_plugin.so, loaded as a user does with mj_loadPluginLibrary, on the bundled
// models/mj3/box_plugin.xml and inline variants of it. Checks: registration and config keys; the
// plain mj_step of a model declaring the plugin leaves no hard constraint row and equals mjdiff_step
// of the same model (the smooth forces are added once, not twice); mjdiff_makeModel reads the
// instance's config; bad keys, bad values and a doubled plugin are load errors naming them.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <mujoco/mjplugin.h>

extern "C" {
#include "internal.h"  // mjdiff_optionCount, mjdiff_optionName (C, no extern "C" of its own)
}
#include "testutil.h"

#ifndef MJDIFF_PLUGIN_PATH
#error "MJDIFF_PLUGIN_PATH must name libmjdiff_plugin.so"
#endif

namespace {

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

const mjpPlugin* LoadPlugin() {
  static int loaded = 0;
  if (!loaded) {
    mj_loadPluginLibrary(MJDIFF_PLUGIN_PATH);
    loaded = 1;
  }
  return mjp_getPlugin("mjdiff.smooth", nullptr);
}

std::string BoxXml() {
  std::ifstream f(std::string(MJDIFF_MODEL_DIR) + "/mj3/box_plugin.xml");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// xml with the first occurrence of from replaced by to (which must exist)
std::string Replace(std::string xml, const std::string& from, const std::string& to) {
  size_t at = xml.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) xml.replace(at, from.size(), to);
  return xml;
}

ModelPtr Load(const std::string& xml, std::string* error) {
  char err[1000] = "";
  mjModel* m = shim_loadString(xml.c_str(), err, sizeof(err));
  if (error) *error = err;
  return ModelPtr(m);
}

double MaxStateDiff(const mjModel* m, const mjData* a, const mjData* b) {
  double worst = 0;
  for (int i = 0; i < m->nq; i++) worst = std::fmax(worst, std::fabs(a->qpos[i] - b->qpos[i]));
  for (int i = 0; i < m->nv; i++) worst = std::fmax(worst, std::fabs(a->qvel[i] - b->qvel[i]));
  return worst;
}

TEST(PluginMj3, RegistersWithTheOptionNamesAsConfigKeys) {
  const mjpPlugin* p = LoadPlugin();
  ASSERT_NE(p, nullptr) << "mjdiff.smooth not registered by " << MJDIFF_PLUGIN_PATH;
  EXPECT_TRUE(p->capabilityflags & mjPLUGIN_PASSIVE);
  ASSERT_EQ(p->nattribute, mjdiff_optionCount());
  for (int i = 0; i < p->nattribute; i++) {
    EXPECT_STREQ(p->attributes[i], mjdiff_optionName(i));
  }
  EXPECT_STREQ(p->attributes[0], "contact_stiffness");
}

TEST(PluginMj3, MakeModelReadsTheInstanceConfig) {
  ASSERT_NE(LoadPlugin(), nullptr);
  std::string error;
  ModelPtr m = Load(BoxXml(), &error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->nplugin, 1);
  EXPECT_TRUE(mjdiff_wantsSmooth(m.get()));
  mjdiffModel* raw = nullptr;
  char err[512] = "";
  ASSERT_EQ(mjdiff_makeModel(m.get(), nullptr, &raw, err, sizeof(err)), MJDIFF_OK) << err;
  SmoothPtr s(raw);
  mjtNum v = 0;
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_stiffness", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 4000);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_damping", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 40);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_width", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 0.002);
  // per geom: the numeric, as on 2.2; a geom without one takes the config's model-wide value
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_stiffness:ball", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 2000);
  ASSERT_EQ(mjdiff_getParam(s.get(), "contact_stiffness:box", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, 4000);
  // a field the config does not set keeps its default (derived)
  ASSERT_EQ(mjdiff_getParam(s.get(), "limit_stiffness", &v, err, sizeof(err)), MJDIFF_OK);
  EXPECT_EQ(v, MJDIFF_DERIVED);
}

// the integrator set by a config key derives the values as the numeric does (it was set without
// deriving them again: the implicit step then ran on the explicit step's capped law)
TEST(PluginMj3, IntegratorKeyDerivesAsTheNumeric) {
  ASSERT_NE(LoadPlugin(), nullptr);
  const std::string values = "<config key=\"contact_stiffness\" value=\"4000\"/>\n"
                             "        <config key=\"contact_damping\" value=\"40\"/>\n"
                             "        <config key=\"contact_width\" value=\"0.002\"/>";
  std::string keyXml = Replace(BoxXml(), values, "<config key=\"integrator\" value=\"1\"/>");
  const std::string ball = "<numeric name=\"mjdiff_contact_stiffness:ball\"";
  std::string numXml = Replace(Replace(BoxXml(), values, ""), ball,
                               "<numeric name=\"mjdiff_integrator\" data=\"1\"/>" + ball);
  std::string plainXml = Replace(BoxXml(), values, "");
  mjtNum k[3], v[3];
  const std::string* xmls[3] = {&keyXml, &numXml, &plainXml};
  for (int i = 0; i < 3; i++) {
    std::string error;
    ModelPtr m = Load(*xmls[i], &error);
    ASSERT_TRUE(m) << error;
    mjdiffModel* raw = nullptr;
    char err[512] = "";
    ASSERT_EQ(mjdiff_makeModel(m.get(), nullptr, &raw, err, sizeof(err)), MJDIFF_OK) << err;
    SmoothPtr s(raw);
    int floor = mj_name2id(m.get(), mjOBJ_GEOM, "floor");
    int box = mj_name2id(m.get(), mjOBJ_GEOM, "box");
    ASSERT_EQ(mjdiff_getPairParam(s.get(), "contact_stiffness", floor, box, k + i, err, 512),
              MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_getPairParam(s.get(), "friction_speed", floor, box, v + i, err, 512),
              MJDIFF_OK) << err;
  }
  EXPECT_EQ(k[0], k[1]);
  EXPECT_EQ(v[0], v[1]);
  EXPECT_GT(k[0], 2 * k[2]);  // the implicit law is uncapped, the explicit one capped
  EXPECT_LT(v[0], v[2]);
}

// mj_step with the plugin against mjdiff_step on the same model: the same trajectory, no
// constraint rows, contacts detected, the box and ball come to rest on the floor
TEST(PluginMj3, MjStepMatchesMjdiffStepAndLeavesNoConstraintRows) {
  ASSERT_NE(LoadPlugin(), nullptr);
  std::string error;
  ModelPtr m = Load(BoxXml(), &error);
  ASSERT_TRUE(m) << error;
  mjdiffModel* raw = nullptr;
  char err[512] = "";
  ASSERT_EQ(mjdiff_makeModel(m.get(), nullptr, &raw, err, sizeof(err)), MJDIFF_OK) << err;
  SmoothPtr s(raw);
  DataPtr a(mj_makeData(m.get())), b(mj_makeData(m.get()));
  int flags0 = m->opt.disableflags;
  long long ncon = 0;
  double worst = 0;
  for (int i = 0; i < 1000; i++) {
    a->ctrl[0] = b->ctrl[0] = 0.1 * std::sin(0.01 * i);  // gravity holds the arm at its limit
    mj_step(m.get(), a.get());
    ASSERT_EQ(mjdiff_step(m.get(), b.get(), s.get(), err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(a->nefc, 0) << "step " << i << ": MuJoCo's hard constraints are active";
    ASSERT_EQ(a->ncon, b->ncon) << "step " << i;
    ncon += a->ncon;
    worst = std::fmax(worst, MaxStateDiff(m.get(), a.get(), b.get()));
  }
  std::cout << "mj_step with the plugin vs mjdiff_step: 1000 steps, max |state diff| " << worst
            << ", " << ncon << " contacts\n";
  EXPECT_EQ(m->opt.disableflags, flags0) << "the plugin changed the model's flags";
  EXPECT_LE(worst, 1e-10);
  EXPECT_GT(ncon, 1000);
  // at rest on the floor: box centre at about its half size (within the contact width), ball too
  EXPECT_NEAR(a->qpos[2], 0.05, 0.004);
  EXPECT_NEAR(a->qpos[9], 0.04, 0.004);
  EXPECT_LT(std::fabs(a->qvel[2]), 0.01);
  // the arm rests on its upper limit (30 degrees) under gravity, through the smooth limit
  EXPECT_GT(a->qpos[14], 0.45);
  EXPECT_LT(a->qpos[14], 0.56);
}

// the guard that keeps mjdiff_step from adding the forces twice: the plugin model and the same
// model without the plugin (its values as numerics) step identically under mjdiff_step
TEST(PluginMj3, MjdiffStepAddsTheForcesOnce) {
  ASSERT_NE(LoadPlugin(), nullptr);
  std::string xml = BoxXml(), error;
  size_t a0 = xml.find("<extension>"), a1 = xml.find("</extension>");
  ASSERT_NE(a0, std::string::npos);
  std::string plain = xml.substr(0, a0) + xml.substr(a1 + strlen("</extension>"));
  plain = Replace(plain, "<custom>\n",
                  "<custom>\n<numeric name=\"mjdiff_contact_stiffness\" data=\"4000\"/>"
                  "<numeric name=\"mjdiff_contact_damping\" data=\"40\"/>"
                  "<numeric name=\"mjdiff_contact_width\" data=\"0.002\"/>");
  ModelPtr mp = Load(xml, &error), mn = Load(plain, &error);
  ASSERT_TRUE(mp && mn) << error;
  EXPECT_EQ(mn->nplugin, 0);
  mjdiffModel *rp = nullptr, *rn = nullptr;
  char err[512] = "";
  ASSERT_EQ(mjdiff_makeModel(mp.get(), nullptr, &rp, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_makeModel(mn.get(), nullptr, &rn, err, sizeof(err)), MJDIFF_OK) << err;
  SmoothPtr sp(rp), sn(rn);
  DataPtr dp(mj_makeData(mp.get())), dn(mj_makeData(mn.get()));
  for (int g1 = 0; g1 < mp->ngeom; g1++) {
    for (int g2 = 0; g2 < mp->ngeom; g2++) {
      for (const char* f : {"contact_stiffness", "contact_damping", "contact_width",
                            "friction_speed", "spin_speed"}) {
        mjtNum vp, vn;
        ASSERT_EQ(mjdiff_getPairParam(sp.get(), f, g1, g2, &vp, err, sizeof(err)), MJDIFF_OK);
        ASSERT_EQ(mjdiff_getPairParam(sn.get(), f, g1, g2, &vn, err, sizeof(err)), MJDIFF_OK);
        EXPECT_EQ(vp, vn) << f << " " << g1 << " " << g2;
      }
    }
  }
  for (int i = 0; i < 300; i++) {
    ASSERT_EQ(mjdiff_step(mp.get(), dp.get(), sp.get(), err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(mjdiff_step(mn.get(), dn.get(), sn.get(), err, sizeof(err)), MJDIFF_OK) << err;
    ASSERT_EQ(MaxStateDiff(mp.get(), dp.get(), dn.get()), 0) << "step " << i;
  }
  EXPECT_GT(dp->ncon, 0);
  EXPECT_EQ(MaxStateDiff(mp.get(), dp.get(), dn.get()), 0);
  // and the plain model under mj_step has MuJoCo's hard contacts (rows), the plugin model none
  DataPtr hp(mj_makeData(mp.get())), hn(mj_makeData(mn.get()));
  for (int i = 0; i < 300; i++) {
    mj_step(mp.get(), hp.get());
    mj_step(mn.get(), hn.get());
  }
  EXPECT_EQ(hp->nefc, 0);
  EXPECT_GT(hn->nefc, 0);
}

TEST(PluginMj3, CopiedDataStepsAlike) {
  ASSERT_NE(LoadPlugin(), nullptr);
  std::string error;
  ModelPtr m = Load(BoxXml(), &error);
  ASSERT_TRUE(m) << error;
  DataPtr a(mj_makeData(m.get()));
  for (int i = 0; i < 100; i++) mj_step(m.get(), a.get());
  DataPtr b(mj_copyData(nullptr, m.get(), a.get()));
  ASSERT_TRUE(b);
  EXPECT_NE(b->plugin_data[0], 0u);
  EXPECT_NE(b->plugin_data[0], a->plugin_data[0]);
  for (int i = 0; i < 100; i++) {
    mj_step(m.get(), a.get());
    mj_step(m.get(), b.get());
  }
  EXPECT_EQ(MaxStateDiff(m.get(), a.get(), b.get()), 0);
  EXPECT_EQ(b->nefc, 0);
}

// bad configuration: MuJoCo's load error names the key and the value
TEST(PluginMj3, BadConfigIsALoadErrorNamingKeyAndValue) {
  ASSERT_NE(LoadPlugin(), nullptr);
  std::string xml = BoxXml(), error;
  struct {
    const char* value;
    const char* expect;
  } cases[] = {{"abc", "value 'abc' is not a number"},
               {"-5", "'-5'"},
               {"1e4x", "value '1e4x' is not a number"},
               {"nan", "'nan'"}};
  for (const auto& c : cases) {
    std::string bad = Replace(xml, "value=\"4000\"", std::string("value=\"") + c.value + "\"");
    ModelPtr m = Load(bad, &error);
    EXPECT_FALSE(m) << c.value;
    EXPECT_NE(error.find("contact_stiffness"), std::string::npos) << error;
    EXPECT_NE(error.find(c.expect), std::string::npos) << error;
    std::cout << "value " << c.value << ": " << error << "\n";
  }

  // an unknown key: MuJoCo's compiler refuses it by name
  std::string unknown = Replace(xml, "key=\"contact_damping\"", "key=\"contact_dampin\"");
  ModelPtr m = Load(unknown, &error);
  EXPECT_FALSE(m);
  EXPECT_NE(error.find("contact_dampin"), std::string::npos) << error;

  // a bad per-geom numeric: the mjdiff error, through the same path
  std::string geom = Replace(xml, "mjdiff_contact_stiffness:ball", "mjdiff_contact_stiffness:nogeom");
  m = Load(geom, &error);
  EXPECT_FALSE(m);
  EXPECT_NE(error.find("no geom named 'nogeom'"), std::string::npos) << error;
}

TEST(PluginMj3, DeclaredTwiceIsALoadError) {
  ASSERT_NE(LoadPlugin(), nullptr);
  std::string xml = BoxXml(), error;
  std::string twice = Replace(xml, "</extension>",
                              "<plugin plugin=\"mjdiff.smooth\"><instance name=\"again\"/></plugin>"
                              "</extension>");
  ModelPtr m = Load(twice, &error);
  if (m) {
    // MuJoCo may merge the two <plugin> elements into one plugin with two instances
    EXPECT_EQ(m->nplugin, 2);
  }
  EXPECT_FALSE(m);
  EXPECT_NE(error.find("declared 2 times"), std::string::npos) << error;
}

}  // namespace

namespace {

// MuJoCo 3 features: those the smooth model covers make a model; the others are refused by
// mjdiff_makeModel with a message naming the feature (never a silent wrong result: the sleeping
// dominos sample gave derivative errors of 3.8e-2 before, the treadmill's surface velocity an
// energy jump at the first step)
TEST(Mj3Features, CoveredOrRefusedByName) {
  const char* base = R"(
<mujoco>
  <option OPTION/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" GEOMEXTRA/>
    <body name="a" pos="0 0 1" BODYEXTRA>
      <joint name="h" type="hinge" axis="0 1 0" JOINTEXTRA/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5" contype="0" conaffinity="0"/>
      <site name="s1" pos="0.3 0 0"/>
    </body>
    <body name="f" pos="0.3 0 0.9"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="0.2"/><site name="s2"/></body>
  </worldbody>
  <tendon><fixed name="t" TENDONEXTRA><joint joint="h" coef="1"/></fixed></tendon>
  <equality EQEXTRA/>
  <actuator><general joint="h" ACTEXTRA/></actuator>
</mujoco>)";
  struct Case {
    const char* what;
    const char* key;
    const char* value;
    const char* refusal;  // nullptr: covered
    const char* element;  // the element the refusal names (nullptr: a model-wide feature)
  };
  const Case cases[] = {
      {"gravcomp", "BODYEXTRA", "gravcomp=\"1\"", nullptr, nullptr},
      {"actuatorgravcomp", "JOINTEXTRA", "actuatorgravcomp=\"true\"", nullptr, nullptr},
      {"joint actuatorfrcrange", "JOINTEXTRA", "actuatorfrcrange=\"-1 1\"", nullptr, nullptr},
      {"site connect", "EQEXTRA", "><connect site1=\"s1\" site2=\"s2\"/></equality", nullptr,
       nullptr},
      {"sleep", "OPTION", "><flag sleep=\"enable\"/></option", "sleeping bodies", nullptr},
      {"surfacevel", "GEOMEXTRA", "surfacevel=\"0.5 0 0 0 0 0\"", "surface velocity",
       "(geom 0 'floor')"},
      {"geom adhesion", "GEOMEXTRA", "adhesion=\"2\"", "contact adhesion", "(geom 0 'floor')"},
      {"actearly", "ACTEXTRA", "actearly=\"true\" dyntype=\"filter\" dynprm=\"0.1\"", "actearly",
       "(actuator 0)"},
      {"tendon actuatorfrcrange", "TENDONEXTRA", "actuatorfrclimited=\"true\" actuatorfrcrange=\"-1 1\"",
       "actuator force limits", "(tendon 0 't')"},
  };
  for (const Case& c : cases) {
    std::string xml = base;
    for (const char* key : {"OPTION", "GEOMEXTRA", "BODYEXTRA", "JOINTEXTRA", "TENDONEXTRA",
                            "EQEXTRA", "ACTEXTRA"}) {
      std::string v = !strcmp(key, c.key) ? c.value : "";
      if (!strcmp(key, "EQEXTRA") && v.empty()) v = "></equality";
      if (!strcmp(key, "OPTION") && v.empty()) v = "/";
      size_t at = xml.find(key);
      ASSERT_NE(at, std::string::npos);
      // OPTION and EQEXTRA sit inside a self-closing tag: their value closes it
      if (!strcmp(key, "OPTION") || !strcmp(key, "EQEXTRA")) {
        xml.replace(at, strlen(key) + 1, v);  // the key and the '/' after it
      } else {
        xml.replace(at, strlen(key), v);
      }
    }
    std::string err;
    ModelPtr m = Load(xml, &err);
    ASSERT_TRUE(m) << c.what << ": " << err << "\n" << xml;
    mjdiffModel* s = nullptr;
    char msg[1000] = "";
    mjdiffStatus st = mjdiff_makeModel(m.get(), nullptr, &s, msg, sizeof(msg));
    if (c.refusal) {
      EXPECT_EQ(st, MJDIFF_ERR_UNSUPPORTED) << c.what;
      EXPECT_NE(std::string(msg).find(c.refusal), std::string::npos) << c.what << ": " << msg;
      if (c.element) {
        EXPECT_NE(std::string(msg).find(c.element), std::string::npos) << c.what << ": " << msg;
      } else {
        EXPECT_EQ(std::string(msg).find("element"), std::string::npos) << c.what << ": " << msg;
      }
    } else {
      EXPECT_EQ(st, MJDIFF_OK) << c.what << ": " << msg;
      // and it steps
      if (s) {
        DataPtr d(mj_makeData(m.get()));
        for (int k = 0; k < 50 && st == MJDIFF_OK; k++) st = mjdiff_step(m.get(), d.get(), s, msg, sizeof(msg));
        EXPECT_EQ(st, MJDIFF_OK) << c.what << ": " << msg;
      }
    }
    mjdiff_freeModel(s);
  }
}

// The refusal names the element: an MJCF <pair> by its name, a dof (polynomial damping, the
// second value of a joint's damping) by its joint's
TEST(Mj3Features, RefusalNamesTheElement) {
  const char* pair = R"(
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body pos="0 0 0.2"><freejoint/><geom name="ball" size="0.05"/></body>
  </worldbody>
  <contact><pair name="pp" geom1="floor" geom2="ball" adhesion="1"/></contact>
</mujoco>)";
  const char* poly = R"(
<mujoco>
  <worldbody>
    <body pos="0 0 1"><joint name="hj" type="hinge"/><geom size="0.05"/>
      <body pos="0 0 -0.2"><joint name="fj" type="ball" damping="0.1 0.2"/><geom size="0.05"/></body>
    </body>
  </worldbody>
</mujoco>)";
  struct Case {
    const char* xml;
    const char* element;
  };
  for (const Case& c : {Case{pair, "(pair 0 'pp')"}, Case{poly, "(joint 1 'fj')"}}) {
    std::string err;
    ModelPtr m = Load(c.xml, &err);
    ASSERT_TRUE(m) << err;
    mjdiffModel* s = nullptr;
    char msg[1000] = "";
    EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, msg, sizeof(msg)), MJDIFF_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(msg).find(c.element), std::string::npos) << msg;
    mjdiff_freeModel(s);
  }
}

// A model with another engine plugin (here a passive one registered by the test, adding a force
// the derivatives cannot see) is refused by name: MuJoCo would run it in the smooth model's
// forward pass (before, MuJoCo's elasticity, SDF and PID samples would have stepped with forces
// and contacts no derivative covers)
void dummyCompute(const mjModel* m, mjData* d, int, int) {
  if (m->nv > 0) d->qfrc_passive[0] += 1;
}
int dummyNstate(const mjModel*, int) { return 0; }
int dummyInit(const mjModel*, mjData*, int) { return 0; }

TEST(Mj3Features, ForeignPluginRefusedByName) {
  LoadPlugin();
  if (mjp_getPlugin("mjdiff.test.push", nullptr) == nullptr) {
    mjpPlugin p;
    mjp_defaultPlugin(&p);
    p.name = "mjdiff.test.push";
    p.capabilityflags = mjPLUGIN_PASSIVE;
    p.nstate = dummyNstate;
    p.init = dummyInit;
    p.compute = dummyCompute;
    mjp_registerPlugin(&p);
  }
  std::string xml = R"(<mujoco>
  <extension><plugin plugin="mjdiff.test.push"><instance name="push"/></plugin></extension>
  <worldbody><body><joint type="slide"/><geom size="0.1" mass="1"/></body></worldbody>
</mujoco>)";
  std::string err;
  ModelPtr m = Load(xml, &err);
  ASSERT_TRUE(m) << err;
  ASSERT_EQ(m->nplugin, 1);
  mjdiffModel* s = nullptr;
  char msg[1000] = "";
  EXPECT_EQ(mjdiff_makeModel(m.get(), nullptr, &s, msg, sizeof(msg)), MJDIFF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(msg).find("engine plugin 'mjdiff.test.push'"), std::string::npos) << msg;
  mjdiff_freeModel(s);
}

}  // namespace
