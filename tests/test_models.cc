// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Every bundled model (MJDIFF_MODEL_DIR/*.xml, found at run time) and MuJoCo's humanoid: 10,000
// smooth steps with random controls stay finite, and two runs agree bit for bit. One ctest entry
// per model; each reports the contacts it saw and its largest |qvel|.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "shim.h"

namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 10000;
constexpr int kCtrlEvery = 10;
constexpr unsigned long long kSeed = 20260101ULL;
const char* kHumanoid = "/usr/share/mujoco/model/humanoid/humanoid.xml";

struct ModelCase {
  std::string name;  // test name: letters, digits, underscores
  std::string path;
};

// printed by GoogleTest in failure messages
void PrintTo(const ModelCase& c, std::ostream* os) {
  *os << c.path;
}

// the model directory: $MJDIFF_MODEL_DIR if set, else the one compiled in
std::string modelDir() {
  const char* env = std::getenv("MJDIFF_MODEL_DIR");
  return env && *env ? env : MJDIFF_MODEL_DIR;
}

// *.xml files directly in dir, sorted; empty if dir is missing
std::vector<std::string> xmlFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".xml") {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string testName(const std::string& stem) {
  std::string name;
  for (char c : stem) {
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return name.empty() ? "model" : name;
}

std::vector<ModelCase> modelCases() {
  std::vector<ModelCase> cases;
  for (const std::string& path : xmlFiles(modelDir())) {
    cases.push_back({testName(fs::path(path).stem().string()), path});
  }
  cases.push_back({"mujoco_humanoid", kHumanoid});
  return cases;
}

// the directory must hold models: an empty or missing directory is a failure, not a pass
TEST(ModelDir, HasModels) {
  std::vector<std::string> files = xmlFiles(modelDir());
  EXPECT_FALSE(files.empty()) << "no *.xml models in " << modelDir();
  RecordProperty("models", static_cast<int>(files.size()));
  std::cout << files.size() << " models in " << modelDir() << "\n";
}

// a loaded model with its smooth model, closed on scope exit
struct Sim {
  shimSim sim;
  Sim() { memset(&sim, 0, sizeof(sim)); }
  ~Sim() { shim_close(&sim); }
};

struct RunResult {
  std::vector<mjtNum> qpos, qvel, act;
  long long contacts = 0;  // sum of d->ncon over steps
  int max_contacts = 0;    // largest d->ncon
  double max_qvel = 0;     // largest |qvel| over the run
  int steps = 0;           // steps completed
  std::string error;       // empty if all steps succeeded with a finite state
};

// kSteps smooth steps from the model's initial state, controls resampled every kCtrlEvery steps
RunResult run(const mjModel* m, const mjdiffModel* s) {
  RunResult r;
  mjData* d = mj_makeData(m);
  unsigned long long seed = kSeed;
  char err[1000] = "";
  for (int i = 0; i < kSteps; i++) {
    if (i % kCtrlEvery == 0) shim_randomCtrl(m, d, &seed);
    mjdiffStatus st = mjdiff_step(m, d, s, err, sizeof(err));
    if (st != MJDIFF_OK) {
      r.error = std::string("step ") + std::to_string(i) + ": " + mjdiff_statusName(st) + ": " +
                err;
      break;
    }
    if (!shim_stateFinite(m, d)) {
      r.error = "state not finite after step " + std::to_string(i);
      break;
    }
    r.steps = i + 1;
    r.contacts += d->ncon;
    r.max_contacts = std::max(r.max_contacts, d->ncon);
    for (int j = 0; j < m->nv; j++) r.max_qvel = std::max(r.max_qvel, std::fabs(d->qvel[j]));
  }
  r.qpos.assign(d->qpos, d->qpos + m->nq);
  r.qvel.assign(d->qvel, d->qvel + m->nv);
  r.act.assign(d->act, d->act + m->na);
  mj_deleteData(d);
  return r;
}

bool bitEqual(const std::vector<mjtNum>& a, const std::vector<mjtNum>& b) {
  return a.size() == b.size() && (a.empty() || !memcmp(a.data(), b.data(), sizeof(mjtNum) *
                                                                                a.size()));
}

class Models : public ::testing::TestWithParam<ModelCase> {};

TEST_P(Models, RandomControlsFiniteAndDeterministic) {
  const ModelCase& c = GetParam();
  Sim sim;
  ASSERT_TRUE(shim_open(&sim.sim, nullptr, c.path.c_str())) << c.path << ": " << sim.sim.err;
  const mjModel* m = sim.sim.m;

  RunResult a = run(m, sim.sim.s);
  RunResult b = run(m, sim.sim.s);

  RecordProperty("steps", a.steps);
  RecordProperty("contacts_total", std::to_string(a.contacts));
  RecordProperty("contacts_max", a.max_contacts);
  RecordProperty("max_abs_qvel", std::to_string(a.max_qvel));
  std::cout << c.name << ": nq=" << m->nq << " nv=" << m->nv << " nu=" << m->nu
            << " steps=" << a.steps << " contacts(total)=" << a.contacts
            << " contacts(max)=" << a.max_contacts << " max|qvel|=" << a.max_qvel << "\n";

  EXPECT_EQ(a.error, "") << c.path;
  EXPECT_EQ(a.steps, kSteps);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.contacts, b.contacts);
  EXPECT_TRUE(bitEqual(a.qpos, b.qpos)) << "qpos differs between two identical runs";
  EXPECT_TRUE(bitEqual(a.qvel, b.qvel)) << "qvel differs between two identical runs";
  EXPECT_TRUE(bitEqual(a.act, b.act)) << "act differs between two identical runs";
}

INSTANTIATE_TEST_SUITE_P(All, Models, ::testing::ValuesIn(modelCases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           return info.param.name;
                         });

}  // namespace
