// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Bad input never crashes, hangs or passes for good (issue 14), one regression test per failure:
//   C API   mjdiff_rolloutBatch with a NULL start state or controls; a horizon of INT_MAX
//           (makeRollout, rolloutBatch); freeing an attached smooth model, then mj_step (detached,
//           the model's own constraints back); parameters made for another model (other sizes, or
//           the same sizes and other names) refused by mjdiff_makeStepDeriv and
//           mjdiff_makeRollout; a NaN time (mjdiff_step, mjdiff_forward) and NaN adjoint or
//           tangent inputs (mjdiff_stepVJP, mjdiff_stepJVP, mjdiff_sensorVJP) refused.
//   guards  tools/common/guard.c's line reader (NUL bytes with line and column, overlong lines,
//           too many lines, BOM, CRLF, the unterminated last line, /dev/zero), overflow-checked
//           sizes; toolutil.c's JSON numbers (NaN and Inf written as null, counted and named).

#include <gtest/gtest.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>
#include <mjdiff/rollout.h>
#include <mujoco/mujoco.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "shim.h"

extern "C" {
#include "guard.h"
#include "toolutil.h"
}

namespace {

const char* kPendulum = R"(
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="link" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom name="bob" type="sphere" size="0.1" pos="0 0 -0.5" mass="1"/>
      <site name="tip" pos="0 0 -0.5"/>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="hinge"/></actuator>
  <sensor><jointpos name="angle" joint="hinge"/></sensor>
</mujoco>)";

// the same sizes as kPendulum, other names
const char* kPendulumRenamed = R"(
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="ground" type="plane" size="2 2 0.1"/>
    <body name="arm" pos="0 0 1">
      <joint name="pivot" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom name="mass" type="sphere" size="0.1" pos="0 0 -0.5" mass="1"/>
      <site name="end" pos="0 0 -0.5"/>
    </body>
  </worldbody>
  <actuator><motor name="u" joint="pivot"/></actuator>
  <sensor><jointpos name="theta" joint="pivot"/></sensor>
</mujoco>)";

struct Sim {
  shimSim sim;
  explicit Sim(const char* xml, const char* path = nullptr) {
    std::memset(&sim, 0, sizeof(sim));
    if (!shim_open(&sim, xml, path)) ADD_FAILURE() << sim.err;
  }
  ~Sim() { shim_close(&sim); }
};

mjtNum zeroLoss(const mjModel*, int, int, const mjtNum*, const mjtNum*, const mjtNum*, void*,
                mjtNum*, mjtNum*, mjtNum*) {
  return 0;
}

//---------------------------------- C API --------------------------------------------------------

TEST(RobustApi, BatchNullStartStateOrControls) {
  Sim P(kPendulum);
  ASSERT_NE(P.sim.m, nullptr);
  const mjModel* m = P.sim.m;
  const int T = 5;
  std::vector<mjtNum> x0(m->nq + m->nv + m->na, 0.0), ctrl(T * m->nu, 0.0);
  mjdiffBatchItem items[2];
  std::memset(items, 0, sizeof(items));
  items[0].x0 = x0.data();
  items[0].ctrl = ctrl.data();
  items[1].x0 = nullptr;  // the bug: a NULL start state segfaulted
  items[1].ctrl = ctrl.data();
  mjdiffLoss loss = {nullptr, zeroLoss};
  char err[300] = "";
  EXPECT_EQ(mjdiff_rolloutBatch(m, P.sim.s, nullptr, T, nullptr, &loss, 2, items, 2, err,
                                sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::strstr(err, "items[1].x0 is NULL"), nullptr) << err;

  items[1].x0 = x0.data();
  items[0].ctrl = nullptr;
  EXPECT_EQ(mjdiff_rolloutBatch(m, P.sim.s, nullptr, T, nullptr, &loss, 1, items, 2, err,
                                sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::strstr(err, "items[0].ctrl is NULL"), nullptr) << err;

  // and with both given the batch runs
  items[0].ctrl = ctrl.data();
  EXPECT_EQ(mjdiff_rolloutBatch(m, P.sim.s, nullptr, T, nullptr, &loss, 2, items, 2, err,
                                sizeof(err)),
            MJDIFF_OK)
      << err;
}

TEST(RobustApi, HorizonIntMaxRefused) {
  Sim P(kPendulum);
  ASSERT_NE(P.sim.m, nullptr);
  mjdiffRollout* r = nullptr;
  char err[300] = "";
  EXPECT_EQ(mjdiff_makeRollout(P.sim.m, P.sim.s, nullptr, INT_MAX, nullptr, &r, err, sizeof(err)),
            MJDIFF_ERR_VALUE);
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(std::strstr(err, "horizon must be in [1, "), nullptr) << err;
  std::vector<mjtNum> x0(P.sim.m->nq + P.sim.m->nv, 0.0), ctrl(10, 0.0);
  mjdiffBatchItem item;
  std::memset(&item, 0, sizeof(item));
  item.x0 = x0.data();
  item.ctrl = ctrl.data();
  EXPECT_EQ(mjdiff_rolloutBatch(P.sim.m, P.sim.s, nullptr, INT_MAX, nullptr, nullptr, 1, &item, 1,
                                err, sizeof(err)),
            MJDIFF_ERR_ARGUMENT);
  EXPECT_NE(std::strstr(err, "horizon in [1, "), nullptr) << err;
  // the largest horizon accepted is still a plain rollout (and 1 works)
  EXPECT_EQ(mjdiff_makeRollout(P.sim.m, P.sim.s, nullptr, 1, nullptr, &r, err, sizeof(err)),
            MJDIFF_OK)
      << err;
  mjdiff_freeRollout(r);
}

TEST(RobustApi, FreeAttachedSmoothModelThenStep) {
  Sim P(kPendulum);
  ASSERT_NE(P.sim.m, nullptr);
  mjModel* m = P.sim.m;
  int flags = m->opt.disableflags;
  char err[300] = "";
  mjdiffModel* s = nullptr;
  ASSERT_EQ(mjdiff_makeModel(m, nullptr, &s, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_attach(m, s, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_attached(m), s);
  ASSERT_NE(m->opt.disableflags, flags);
  mjdiff_freeModel(s);  // the bug: the registry kept the freed pointer, mj_step read it
  EXPECT_EQ(mjdiff_attached(m), nullptr);
  EXPECT_EQ(m->opt.disableflags, flags);  // MuJoCo's own constraints are back
  mjData* d = mj_makeData(m);
  d->qpos[0] = 1;
  for (int k = 0; k < 50; k++) mj_step(m, d);  // native, safe (ASan checks the reads)
  EXPECT_TRUE(shim_stateFinite(m, d));
  EXPECT_NE(d->qpos[0], 1.0);
  // attaching a new smooth model works again
  ASSERT_EQ(mjdiff_makeModel(m, nullptr, &s, err, sizeof(err)), MJDIFF_OK) << err;
  ASSERT_EQ(mjdiff_attach(m, s, err, sizeof(err)), MJDIFF_OK) << err;
  EXPECT_EQ(mjdiff_detach(m), s);
  mjdiff_freeModel(s);
  mj_deleteData(d);
}

TEST(RobustApi, ParamsForAnotherModelRefused) {
  Sim A(kPendulum), B(nullptr, shim_modelPath("cartpole.xml")), C(kPendulumRenamed);
  ASSERT_NE(A.sim.m, nullptr);
  ASSERT_NE(B.sim.m, nullptr);
  ASSERT_NE(C.sim.m, nullptr);
  const char* names[] = {"joint:*:damping"};
  mjdiffParams* p = nullptr;
  char err[400] = "";
  ASSERT_EQ(mjdiff_makeParams(A.sim.m, A.sim.s, names, 1, &p, err, sizeof(err)), MJDIFF_OK)
      << err;
  for (Sim* other : {&B, &C}) {  // other sizes; the same sizes with other names
    mjdiffStepDeriv* w = nullptr;
    EXPECT_EQ(mjdiff_makeStepDeriv(other->sim.m, other->sim.s, p, &w, err, sizeof(err)),
              MJDIFF_ERR_ARGUMENT);
    EXPECT_EQ(w, nullptr);
    EXPECT_NE(std::strstr(err, "parameters were made for another model"), nullptr) << err;
    mjdiffRollout* r = nullptr;
    EXPECT_EQ(mjdiff_makeRollout(other->sim.m, other->sim.s, p, 10, nullptr, &r, err,
                                 sizeof(err)),
              MJDIFF_ERR_ARGUMENT);
    EXPECT_EQ(r, nullptr);
    EXPECT_NE(std::strstr(err, "parameters were made for another model"), nullptr) << err;
  }
  // its own model, and a copy of it, are accepted
  mjModel* copy = mj_copyModel(nullptr, A.sim.m);
  for (const mjModel* m : {static_cast<const mjModel*>(A.sim.m), static_cast<const mjModel*>(copy)}) {
    mjdiffModel* s = nullptr;
    ASSERT_EQ(mjdiff_makeModel(m, nullptr, &s, err, sizeof(err)), MJDIFF_OK) << err;
    mjdiffStepDeriv* w = nullptr;
    EXPECT_EQ(mjdiff_makeStepDeriv(m, s, p, &w, err, sizeof(err)), MJDIFF_OK) << err;
    mjdiff_freeStepDeriv(w);
    mjdiff_freeModel(s);
  }
  mj_deleteModel(copy);
  mjdiff_freeParams(p);
}

TEST(RobustApi, NanTimeRefused) {
  Sim P(kPendulum);
  ASSERT_NE(P.sim.m, nullptr);
  char err[300] = "";
  P.sim.d->qpos[0] = 0.3;
  P.sim.d->time = NAN;
  EXPECT_EQ(mjdiff_step(P.sim.m, P.sim.d, P.sim.s, err, sizeof(err)), MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::strstr(err, "time is not finite"), nullptr) << err;
  EXPECT_EQ(P.sim.d->qpos[0], 0.3);  // untouched
  EXPECT_EQ(mjdiff_forward(P.sim.m, P.sim.d, P.sim.s, err, sizeof(err)), MJDIFF_ERR_NONFINITE);
  P.sim.d->time = INFINITY;
  EXPECT_EQ(mjdiff_step(P.sim.m, P.sim.d, P.sim.s, err, sizeof(err)), MJDIFF_ERR_NONFINITE);
  P.sim.d->time = 0;
  EXPECT_EQ(mjdiff_step(P.sim.m, P.sim.d, P.sim.s, err, sizeof(err)), MJDIFF_OK) << err;
}

TEST(RobustApi, NanAdjointInputRefused) {
  Sim P(kPendulum);
  ASSERT_NE(P.sim.m, nullptr);
  const mjModel* m = P.sim.m;
  mjData* d = P.sim.d;
  char err[300] = "";
  mjdiffStepDeriv* w = nullptr;
  ASSERT_EQ(mjdiff_makeStepDeriv(m, P.sim.s, nullptr, &w, err, sizeof(err)), MJDIFF_OK) << err;
  int ndx = 2 * m->nv + m->na;
  d->qpos[0] = 0.4;
  std::vector<mjtNum> adj(ndx, 1.0), out(ndx, 0.0), du(m->nu, 0.0), sens(m->nsensordata, 1.0);
  ASSERT_EQ(mjdiff_stepVJP(m, d, P.sim.s, w, adj.data(), out.data(), nullptr, nullptr, err,
                           sizeof(err)),
            MJDIFF_OK)
      << err;
  adj[1] = NAN;
  EXPECT_EQ(mjdiff_stepVJP(m, d, P.sim.s, w, adj.data(), out.data(), nullptr, nullptr, err,
                           sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::strstr(err, "adj_next[1] is not finite"), nullptr) << err;
  EXPECT_EQ(mjdiff_stepJVP(m, d, P.sim.s, w, adj.data(), du.data(), nullptr, out.data(), err,
                           sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  adj[1] = 0;
  du[0] = INFINITY;
  EXPECT_EQ(mjdiff_stepJVP(m, d, P.sim.s, w, adj.data(), du.data(), nullptr, out.data(), err,
                           sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  sens[0] = NAN;
  EXPECT_EQ(mjdiff_sensorVJP(m, d, P.sim.s, w, sens.data(), out.data(), nullptr, nullptr, err,
                             sizeof(err)),
            MJDIFF_ERR_NONFINITE);
  EXPECT_NE(std::strstr(err, "adj_sensor[0] is not finite"), nullptr) << err;
  EXPECT_EQ(d->qpos[0], 0.4);
  mjdiff_freeStepDeriv(w);
}

//---------------------------------- tools/common guards ------------------------------------------

// read every line of text with limits; the lines, or the error in *err
int readAll(const std::string& text, size_t maxlen, long maxlines, std::vector<std::string>* lines,
            std::string* err, int* unterminated = nullptr) {
  FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "rb");
  if (!f) return -2;
  toolReader r;
  tool_readerInit(&r, f, "in.txt", maxlen, maxlines);
  char msg[300] = "";
  char* line = nullptr;
  size_t len = 0;
  int st;
  while ((st = tool_readLine(&r, &line, &len, msg, sizeof(msg))) > 0) {
    lines->push_back(std::string(line, len));
    if (unterminated) *unterminated = r.unterminated;
  }
  *err = msg;
  tool_readerFree(&r);
  fclose(f);
  return st;
}

TEST(RobustGuards, LineReaderRefusesNulBytesWithLineAndColumn) {
  std::vector<std::string> lines;
  std::string err;
  EXPECT_EQ(readAll(std::string("a,b\nc,d\nxy\0z,w\n", 15), 100, 100, &lines, &err), -1);
  EXPECT_EQ(lines.size(), 2u);
  EXPECT_EQ(err, "in.txt: line 3, column 3: NUL byte (a binary file?)");
}

TEST(RobustGuards, LineReaderBoundsLengthAndCount) {
  std::vector<std::string> lines;
  std::string err;
  EXPECT_EQ(readAll(std::string(5000, 'x'), 4096, 100, &lines, &err), -1);  // no newline at all
  EXPECT_EQ(err, "in.txt: line 1: longer than 4096 bytes");
  lines.clear();
  EXPECT_EQ(readAll(std::string(4096, 'x') + "\n", 4096, 100, &lines, &err), 0);  // just fits
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].size(), 4096u);
  lines.clear();
  std::string many;
  for (int i = 0; i < 11; i++) many += "\n";
  EXPECT_EQ(readAll(many, 10, 10, &lines, &err), -1);
  EXPECT_EQ(lines.size(), 10u);
  EXPECT_EQ(err, "in.txt: more than 10 lines");
}

TEST(RobustGuards, LineReaderBomCrlfAndUnterminatedLastLine) {
  std::vector<std::string> lines;
  std::string err;
  int unterminated = -1;
  EXPECT_EQ(readAll("\xEF\xBB\xBFtime,x\r\n1,2\r\n3,4", 100, 100, &lines, &err, &unterminated),
            0);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "time,x");  // no BOM, no CR
  EXPECT_EQ(lines[1], "1,2");
  EXPECT_EQ(lines[2], "3,4");
  EXPECT_EQ(unterminated, 1);
  lines.clear();
  EXPECT_EQ(readAll("a\n\xEF\xBB\xBF" "b\n", 100, 100, &lines, &err, &unterminated), 0);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "\xEF\xBB\xBF" "b");  // a BOM only at the start of the file
  EXPECT_EQ(unterminated, 0);
}

TEST(RobustGuards, LineReaderDevZeroEnds) {
  FILE* f = std::fopen("/dev/zero", "rb");
  if (!f) GTEST_SKIP() << "no /dev/zero";
  toolReader r;
  tool_readerInit(&r, f, "/dev/zero", 1 << 20, 1000);
  char msg[300] = "";
  char* line = nullptr;
  EXPECT_EQ(tool_readLine(&r, &line, nullptr, msg, sizeof(msg)), -1);
  EXPECT_STREQ(msg, "/dev/zero: line 1, column 1: NUL byte (a binary file?)");
  tool_readerFree(&r);
  std::fclose(f);
}

TEST(RobustGuards, OverflowCheckedSizes) {
  size_t n = 1;
  EXPECT_EQ(tool_mulSize(1000, 1000, 8, &n), 1);
  EXPECT_EQ(n, 8000000u);
  EXPECT_EQ(tool_mulSize(SIZE_MAX / 2, 3, 1, &n), 0);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(tool_mulSize(SIZE_MAX / 8 + 1, 1, 8, &n), 0);
  EXPECT_EQ(tool_mulSize(0, SIZE_MAX, 8, &n), 1);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(tool_callocArray(SIZE_MAX / 4, 4, sizeof(double)), nullptr);
  void* p = tool_callocArray(0, 7, sizeof(double));  // at least one element
  EXPECT_NE(p, nullptr);
  free(p);
}

TEST(RobustGuards, JsonNumbersNeverNanAndCounted) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  ASSERT_NE(f, nullptr);
  tool_jsonResetNulls();
  std::fputc('{', f);
  tool_jsonField(f, "a", 1.5);
  std::fputs(", ", f);
  tool_jsonField(f, "energy_J", -NAN);
  std::fputs(", ", f);
  tool_jsonField(f, "b", INFINITY);
  tool_jsonNullNote(f);
  std::fputc('}', f);
  std::fclose(f);
  std::string out(buf, size);
  free(buf);
  EXPECT_EQ(out,
            "{\"a\": 1.5, \"energy_J\": null, \"b\": null, \"nonfinite\": {\"count\": 2, "
            "\"first\": \"energy_J\", \"note\": \"NaN or infinite values, written as null\"}}");
  EXPECT_EQ(out.find("nan"), std::string::npos);
  const char* first = nullptr;
  EXPECT_EQ(tool_jsonNulls(&first), 2);
  EXPECT_STREQ(first, "energy_J");
  tool_jsonResetNulls();
  EXPECT_EQ(tool_jsonNulls(nullptr), 0);
}

TEST(RobustGuards, HelpSpellings) {
  EXPECT_TRUE(tool_isHelp("-h"));
  EXPECT_TRUE(tool_isHelp("--help"));
  EXPECT_FALSE(tool_isHelp("-help"));
  EXPECT_FALSE(tool_isHelp(nullptr));
}

}  // namespace
