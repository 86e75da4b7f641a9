// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-sysid recordings (tools/common/recording.c): CSV write -> read round trips on the arm with the
// free box and the cart-pole (bit-exact), alignment of recordings sampled at 3x and 0.37x the
// model rate (linear interpolation and zero-order hold are exact on linear / piecewise constant
// data, up to rounding), quaternion normalisation, the CSV dialect (CRLF, blanks, byte order
// mark), every error path of reading (the message names the file, the line and the column) and
// of writing (no file is left behind).

#include <gtest/gtest.h>
#include <mjdiff/mjdiff.h>
#include <mjdiff/params.h>
#include <mujoco/mujoco.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "sysid.h"
}

namespace {

// a temporary directory, removed with its files at the end of the test
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/mjdiff_sysid_data_XXXXXX";
    const char* p = mkdtemp(tmpl);
    path = p ? p : "";
  }
  ~TempDir() {
    if (!path.empty()) {
      std::string cmd = "rm -rf '" + path + "'";
      if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", path.c_str());
    }
  }
  std::string file(const std::string& name) const {
    return path + "/" + name;
  }
};

struct Model {
  mjModel* m = nullptr;
  explicit Model(const char* name) {
    std::string path = std::string(MJDIFF_MODEL_DIR) + "/" + name;
    char err[1000] = "";
    m = mj_loadXML(path.c_str(), nullptr, err, sizeof(err));
    if (!m) ADD_FAILURE() << path << ": " << err;
  }
  Model(const TempDir& dir, const char* xml) {
    std::string path = dir.file("model.xml");
    FILE* f = std::fopen(path.c_str(), "w");
    if (f) {
      std::fputs(xml, f);
      std::fclose(f);
    }
    char err[1000] = "";
    m = mj_loadXML(path.c_str(), nullptr, err, sizeof(err));
    if (!m) ADD_FAILURE() << err;
  }
  ~Model() {
    mj_deleteModel(m);
  }
};

struct Recording {
  sysidRecording rec;
  Recording() {
    std::memset(&rec, 0, sizeof(rec));
  }
  ~Recording() {
    sysid_freeRecording(&rec);
  }
};

bool writeFile(const std::string& path, const std::string& content) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  size_t n = std::fwrite(content.data(), 1, content.size(), f);
  return std::fclose(f) == 0 && n == content.size();
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string firstLine(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return "";
  std::string s;
  int c;
  while ((c = std::fgetc(f)) != EOF && c != '\n') s += (char)c;
  std::fclose(f);
  return s;
}

int countFields(const std::string& line) {
  int n = 1;
  for (char c : line) n += c == ',';
  return n;
}

// equal bit for bit, NaN equal to NaN
void expectSame(const double* a, const double* b, size_t n, const char* what) {
  for (size_t i = 0; i < n; i++) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i]) && std::isnan(b[i])) << what << "[" << i << "]";
    } else {
      EXPECT_EQ(a[i], b[i]) << what << "[" << i << "]";
    }
  }
}

double uniform(unsigned long long* s) {
  unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return (double)(z >> 11) / 9007199254740992.0;
}

// a simulated recording: random controls, the state and sensors at every step
struct Trajectory {
  int T;
  std::vector<double> ctrl, qpos, qvel, sensor;
};

Trajectory simulate(const mjModel* m, int T, unsigned long long seed) {
  Trajectory tr;
  tr.T = T;
  tr.ctrl.resize((size_t)T * m->nu);
  tr.qpos.resize((size_t)(T + 1) * m->nq);
  tr.qvel.resize((size_t)(T + 1) * m->nv);
  tr.sensor.resize((size_t)(T + 1) * m->nsensordata);
  mjData* d = mj_makeData(m);
  if (m->nkey) mj_resetDataKeyframe(m, d, 0);
  for (int k = 0; k <= T; k++) {
    for (int i = 0; i < m->nu && k < T; i++) d->ctrl[i] = 2 * uniform(&seed) - 1;
    mj_forward(m, d);
    std::memcpy(tr.qpos.data() + (size_t)k * m->nq, d->qpos, sizeof(double) * m->nq);
    std::memcpy(tr.qvel.data() + (size_t)k * m->nv, d->qvel, sizeof(double) * m->nv);
    std::memcpy(tr.sensor.data() + (size_t)k * m->nsensordata, d->sensordata,
                sizeof(double) * m->nsensordata);
    if (k < T) {
      std::memcpy(tr.ctrl.data() + (size_t)k * m->nu, d->ctrl, sizeof(double) * m->nu);
      mj_step(m, d);
    }
  }
  mj_deleteData(d);
  return tr;
}

void roundTrip(const char* model, int T, double t0) {
  Model mod(model);
  ASSERT_TRUE(mod.m);
  const mjModel* m = mod.m;
  TempDir dir;
  std::string path = dir.file("rec.csv");
  Trajectory tr = simulate(m, T, 7);
  char err[1000] = "";
  ASSERT_EQ(sysid_writeRecording(m, path.c_str(), T, t0, tr.ctrl.data(), tr.qpos.data(),
                                 tr.qvel.data(), tr.sensor.data(), err, sizeof(err)),
            0)
      << err;
  EXPECT_FALSE(exists(path + ".tmp"));

  // the header names every column
  std::string header = firstLine(path);
  EXPECT_EQ(countFields(header), sysid_columnCount(m));
  char name[200];
  for (int i = 0; i < sysid_columnCount(m); i++) {
    ASSERT_EQ(sysid_columnName(m, i, name, sizeof(name)), 0) << i;
    EXPECT_NE(header.find(name), std::string::npos) << name;
  }

  Recording r;
  ASSERT_EQ(sysid_readRecording(m, path.c_str(), &r.rec, err, sizeof(err)), 0) << err;
  EXPECT_STREQ(r.rec.path, path.c_str());
  EXPECT_EQ(r.rec.T, T);
  EXPECT_EQ(r.rec.t0, t0);
  EXPECT_EQ(r.rec.nrow, T + 1);
  for (int i = 0; i < m->nu; i++) EXPECT_EQ(r.rec.has_ctrl[i], 1);
  expectSame(r.rec.ctrl, tr.ctrl.data(), tr.ctrl.size(), "ctrl");
  expectSame(r.rec.qpos, tr.qpos.data(), tr.qpos.size(), "qpos");
  expectSame(r.rec.qvel, tr.qvel.data(), tr.qvel.size(), "qvel");
  expectSame(r.rec.sensor, tr.sensor.data(), tr.sensor.size(), "sensor");
}

TEST(SysidData, RoundTripArmBox) {
  roundTrip("arm_box.xml", 60, 0.25);
}

TEST(SysidData, RoundTripCartpole) {
  roundTrip("cartpole.xml", 120, 0);
}

TEST(SysidData, ColumnNames) {
  Model mod("cartpole.xml");
  ASSERT_TRUE(mod.m);
  const mjModel* m = mod.m;
  // time, 1 ctrl, 2 qpos, 2 qvel, 1+1+1+1+3+1 sensor values
  ASSERT_EQ(sysid_columnCount(m), 14);
  const char* expect[14] = {"time",
                            "ctrl:cart_motor",
                            "qpos:cart_slide",
                            "qpos:pole_hinge",
                            "qvel:cart_slide",
                            "qvel:pole_hinge",
                            "sensor:cart_pos",
                            "sensor:pole_angle",
                            "sensor:cart_vel",
                            "sensor:pole_angvel",
                            "sensor:pole_tip_pos:0",
                            "sensor:pole_tip_pos:1",
                            "sensor:pole_tip_pos:2",
                            "sensor:cart_force"};
  char name[100];
  for (int i = 0; i < 14; i++) {
    ASSERT_EQ(sysid_columnName(m, i, name, sizeof(name)), 0);
    EXPECT_STREQ(name, expect[i]);
  }
  EXPECT_EQ(sysid_columnName(m, 14, name, sizeof(name)), -1);
  EXPECT_EQ(sysid_columnName(m, -1, name, sizeof(name)), -1);
  EXPECT_EQ(sysid_columnName(m, 1, name, 5), -1);  // does not fit
  EXPECT_STREQ(name, "");

  Model arm("arm_box.xml");
  ASSERT_TRUE(arm.m);
  int box = 1 + arm.m->nu + arm.m->jnt_qposadr[mj_name2id(arm.m, mjOBJ_JOINT, "box_free")];
  ASSERT_EQ(sysid_columnName(arm.m, box + 6, name, sizeof(name)), 0);
  EXPECT_STREQ(name, "qpos:box_free:6");
}

// samples every dt = h / ratio from t0 of linear data; the aligned values at the model's steps
void alignment(double ratio, int nsample) {
  Model mod("cartpole.xml");
  ASSERT_TRUE(mod.m);
  const mjModel* m = mod.m;
  double h = m->opt.timestep, dt = h / ratio, t0 = 0.3;
  auto slide = [](double t) { return 0.5 + 2 * t; };
  auto hinge = [](double t) { return -1 + 0.3 * t; };
  auto hingevel = [](double t) { return 3 - t; };
  auto tipz = [](double t) { return 7 * t; };
  auto u = [](int j) { return 0.01 * j - 0.3; };

  // columns in any order
  std::string csv =
      "sensor:pole_tip_pos:2 , qpos:pole_hinge,time,ctrl:cart_motor,"
      "qvel:pole_hinge,qpos:cart_slide\n";
  char buf[1000];
  for (int j = 0; j < nsample; j++) {
    double t = t0 + j * dt;
    std::snprintf(buf, sizeof(buf), "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", tipz(t), hinge(t), t,
                  u(j), hingevel(t), slide(t));
    csv += buf;
  }
  TempDir dir;
  std::string path = dir.file("aligned.csv");
  ASSERT_TRUE(writeFile(path, csv));
  Recording r;
  char err[1000] = "";
  ASSERT_EQ(sysid_readRecording(m, path.c_str(), &r.rec, err, sizeof(err)), 0) << err;
  double tlast = t0 + (nsample - 1) * dt;
  int T = (int)std::floor((tlast - t0) / h + 1e-9);
  ASSERT_EQ(r.rec.T, T);
  EXPECT_EQ(r.rec.t0, t0);
  EXPECT_EQ(r.rec.nrow, nsample);
  EXPECT_EQ(r.rec.has_ctrl[0], 1);

  int nq = m->nq, nv = m->nv, ns = m->nsensordata;
  int slideq = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "cart_slide")];
  int hingeq = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "pole_hinge")];
  int slidev = m->jnt_dofadr[mj_name2id(m, mjOBJ_JOINT, "cart_slide")];
  int hingev = m->jnt_dofadr[mj_name2id(m, mjOBJ_JOINT, "pole_hinge")];
  int tip = m->sensor_adr[mj_name2id(m, mjOBJ_SENSOR, "pole_tip_pos")];
  for (int k = 0; k <= T; k++) {
    double t = t0 + k * h;
    EXPECT_NEAR(r.rec.qpos[k * nq + slideq], slide(t), 1e-12) << k;
    EXPECT_NEAR(r.rec.qpos[k * nq + hingeq], hinge(t), 1e-12) << k;
    EXPECT_NEAR(r.rec.qvel[k * nv + hingev], hingevel(t), 1e-12) << k;
    EXPECT_NEAR(r.rec.sensor[k * ns + tip + 2], tipz(t), 1e-12) << k;
    EXPECT_TRUE(std::isnan(r.rec.qvel[k * nv + slidev])) << k;
    EXPECT_TRUE(std::isnan(r.rec.sensor[k * ns + tip])) << k;
    for (int i = 0; i < ns; i++) {
      if (i != tip + 2) {
        EXPECT_TRUE(std::isnan(r.rec.sensor[k * ns + i])) << k << " " << i;
      }
    }
    if (k < T) {
      // held: the last sample at or before the step (a sample within rounding of it counts)
      int j = (int)std::floor(k * ratio + 1e-7);
      EXPECT_EQ(r.rec.ctrl[k], u(j)) << k;
    }
  }
}

TEST(SysidData, AlignFasterSamples) {
  alignment(3, 100);
}

TEST(SysidData, AlignSlowerSamples) {
  alignment(0.37, 40);  // samples 37 and step 100 coincide, up to rounding
}

// the free box's quaternion: normalised after interpolation when all 4 columns are present,
// component-wise otherwise; exact at samples that fall on steps
TEST(SysidData, Quaternion) {
  Model mod("arm_box.xml");
  ASSERT_TRUE(mod.m);
  const mjModel* m = mod.m;
  int adr = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "box_free")];
  double h = m->opt.timestep, dt = h / 0.37, w = 4;
  int nsample = 30;
  TempDir dir;
  for (int full = 0; full < 2; full++) {
    std::string csv = full ? "time,qpos:box_free:0,qpos:box_free:3,qpos:box_free:4,"
                             "qpos:box_free:5,qpos:box_free:6\n"
                           : "time,qpos:box_free:3,qpos:box_free:6\n";
    std::vector<double> time, qw, qz;
    char buf[500];
    for (int j = 0; j < nsample; j++) {
      double t = j * dt;
      time.push_back(t);
      qw.push_back(std::cos(w * t / 2));
      qz.push_back(std::sin(w * t / 2));
      if (full) {
        std::snprintf(buf, sizeof(buf), "%.17g,%.17g,%.17g,0,0,%.17g\n", t, 0.1 * t, qw[j], qz[j]);
      } else {
        std::snprintf(buf, sizeof(buf), "%.17g,%.17g,%.17g\n", t, qw[j], qz[j]);
      }
      csv += buf;
    }
    std::string path = dir.file(full ? "quat_full.csv" : "quat_part.csv");
    ASSERT_TRUE(writeFile(path, csv));
    Recording r;
    char err[1000] = "";
    ASSERT_EQ(sysid_readRecording(m, path.c_str(), &r.rec, err, sizeof(err)), 0) << err;
    ASSERT_GT(r.rec.T, 50);
    int nq = m->nq;
    for (int k = 0; k <= r.rec.T; k++) {
      double t = k * h;
      int j = (int)std::floor(k * 0.37 + 1e-7);
      const double* q = r.rec.qpos + k * nq + adr + 3;
      bool onSample = std::fabs(time[j] - t) < 1e-12;
      double ew = qw[j], ez = qz[j];
      if (!onSample) {
        double a = (t - time[j]) / (time[j + 1] - time[j]);
        ew = (1 - a) * qw[j] + a * qw[j + 1];
        ez = (1 - a) * qz[j] + a * qz[j + 1];
        if (full) {
          double n = std::sqrt(ew * ew + ez * ez);
          ew /= n;
          ez /= n;
        }
      }
      if (full && onSample) {
        EXPECT_EQ(q[0], qw[j]) << k;
        EXPECT_EQ(q[3], qz[j]) << k;
      }
      EXPECT_NEAR(q[0], ew, 1e-12) << k;
      EXPECT_NEAR(q[3], ez, 1e-12) << k;
      if (full) {
        EXPECT_NEAR(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], 1, 1e-14) << k;
        EXPECT_NEAR(r.rec.qpos[k * nq + adr], 0.1 * t, 1e-12) << k;  // not normalised
      } else {
        EXPECT_TRUE(std::isnan(q[1]) && std::isnan(q[2])) << k;
        if (!onSample) {
          EXPECT_LT(q[0] * q[0] + q[3] * q[3], 1 - 1e-9) << k;  // left as interpolated
        }
      }
    }
  }
}

// CRLF line ends, blanks around names and numbers, a byte order mark, trailing blank lines, no
// newline at the end, a single sample (T = 0)
TEST(SysidData, Dialect) {
  Model mod("cartpole.xml");
  ASSERT_TRUE(mod.m);
  const mjModel* m = mod.m;
  TempDir dir;
  struct Case {
    const char* csv;
    int T, nrow;
    double slide1;  // qpos of the slide at step 1
  } cases[] = {
      {"time , qpos:cart_slide\r\n0, 1\r\n0.01 ,\t2\r\n", 1, 2, 2},
      {"\xEF\xBB\xBFtime,qpos:cart_slide\n0,1\n0.02,3\n", 2, 2, 2},
      {"time,qpos:cart_slide\n0,1\n0.01,2\n\n\r\n  \n", 1, 2, 2},
      {"time,qpos:cart_slide\n5,1\n", 0, 1, 0},
  };
  int n = 0;
  for (const Case& c : cases) {
    std::string path = dir.file("dialect" + std::to_string(n++) + ".csv");
    ASSERT_TRUE(writeFile(path, c.csv));
    Recording r;
    char err[1000] = "";
    ASSERT_EQ(sysid_readRecording(m, path.c_str(), &r.rec, err, sizeof(err)), 0)
        << c.csv << ": " << err;
    EXPECT_EQ(r.rec.T, c.T) << c.csv;
    EXPECT_EQ(r.rec.nrow, c.nrow) << c.csv;
    EXPECT_EQ(r.rec.has_ctrl[0], 0) << c.csv;
    if (c.T >= 1) {
      EXPECT_NEAR(r.rec.qpos[m->nq], c.slide1, 1e-12) << c.csv;
      EXPECT_EQ(r.rec.ctrl[0], 0) << c.csv;  // no column: zero
    } else {
      EXPECT_EQ(r.rec.qpos[0], 1) << c.csv;
    }
  }
}

// a recording with a subset of columns, written back: its unmeasured columns are left out, so
// it reads back the same; elements without names have no column
TEST(SysidData, PartialRoundTrip) {
  TempDir dir;
  Model mod(dir, R"(
    <mujoco>
      <option timestep="0.01"/>
      <worldbody>
        <body>
          <joint name="a" type="hinge"/>
          <geom size="0.1" mass="1"/>
          <body pos="0 0 1">
            <joint type="slide"/>
            <geom size="0.1" mass="1"/>
            <body pos="0 0 1">
              <joint name="c" type="ball"/>
              <geom size="0.1" mass="1"/>
            </body>
          </body>
        </body>
      </worldbody>
      <actuator>
        <motor name="ma" joint="a"/>
        <motor joint="a"/>
      </actuator>
      <sensor>
        <jointpos name="pa" joint="a"/>
        <framequat name="qc" objtype="body" objname="world"/>
      </sensor>
    </mujoco>)");
  ASSERT_TRUE(mod.m);
  const mjModel* m = mod.m;
  char name[100];
  EXPECT_EQ(sysid_columnName(m, 2, name, sizeof(name)), -1);          // the unnamed motor
  EXPECT_EQ(sysid_columnName(m, 1 + 2 + 1, name, sizeof(name)), -1);  // the unnamed slide

  std::string csv = "time,qpos:a,qpos:c:0,qpos:c:2,qvel:c:1,sensor:qc:3,ctrl:ma\n";
  for (int j = 0; j < 12; j++) {
    char buf[300];
    double t = 0.5 + 0.02 * j;
    std::snprintf(buf, sizeof(buf), "%.17g,%g,%g,%g,%g,%g,%g\n", t, 0.1 * j, 1.0, 0.01 * j,
                  -0.5 * j, 0.25 * j, j % 3 - 1.0);
    csv += buf;
  }
  std::string path = dir.file("partial.csv");
  ASSERT_TRUE(writeFile(path, csv));
  Recording r, r2;
  char err[1000] = "";
  ASSERT_EQ(sysid_readRecording(m, path.c_str(), &r.rec, err, sizeof(err)), 0) << err;
  ASSERT_EQ(r.rec.T, 22);
  std::string path2 = dir.file("partial2.csv");
  ASSERT_EQ(sysid_writeRecording(m, path2.c_str(), r.rec.T, r.rec.t0, r.rec.ctrl, r.rec.qpos,
                                 r.rec.qvel, r.rec.sensor, err, sizeof(err)),
            0)
      << err;
  // measured columns and every named actuator's control
  EXPECT_EQ(firstLine(path2), "time,ctrl:ma,qpos:a,qpos:c:0,qpos:c:2,qvel:c:1,sensor:qc:3");
  ASSERT_EQ(sysid_readRecording(m, path2.c_str(), &r2.rec, err, sizeof(err)), 0) << err;
  EXPECT_EQ(r2.rec.T, r.rec.T);
  EXPECT_EQ(r2.rec.t0, r.rec.t0);
  EXPECT_EQ(r2.rec.has_ctrl[0], 1);
  EXPECT_EQ(r2.rec.has_ctrl[1], 0);
  expectSame(r2.rec.ctrl, r.rec.ctrl, (size_t)r.rec.T * m->nu, "ctrl");
  expectSame(r2.rec.qpos, r.rec.qpos, (size_t)(r.rec.T + 1) * m->nq, "qpos");
  expectSame(r2.rec.qvel, r.rec.qvel, (size_t)(r.rec.T + 1) * m->nv, "qvel");
  expectSame(r2.rec.sensor, r.rec.sensor, (size_t)(r.rec.T + 1) * m->nsensordata, "sensor");

  // NULL arrays: only time (and controls when given)
  std::string path3 = dir.file("partial3.csv");
  ASSERT_EQ(sysid_writeRecording(m, path3.c_str(), 3, 0, nullptr, nullptr, nullptr, nullptr, err,
                                 sizeof(err)),
            0)
      << err;
  EXPECT_EQ(firstLine(path3), "time");
}

// every reading error: -1, a message naming the file, the line and the column, no recording
TEST(SysidData, ReadErrors) {
  Model cart("cartpole.xml"), arm("arm_box.xml");
  ASSERT_TRUE(cart.m && arm.m);
  TempDir dir;
  struct Case {
    bool onArm;
    const char* csv;
    std::vector<std::string> expect;  // substrings of the message
  } cases[] = {
      {false, "qpos:cart_slide\n0.1\n", {"line 1", "missing 'time' column"}},
      {false, "time,ctrl:foo\n0,1\n", {"line 1", "ctrl:foo: no actuator named 'foo'"}},
      {false, "time,qpos:nope\n0,1\n", {"line 1", "qpos:nope", "no joint named 'nope'"}},
      {false, "time,qvel:nope:1\n0,1\n", {"line 1", "qvel:nope:1", "no joint named 'nope'"}},
      {false, "time,sensor:nope:2\n0,1\n", {"line 1", "sensor:nope:2", "no sensor named 'nope'"}},
      {false, "time,bogus\n0,1\n", {"line 1", "bogus", "unknown column"}},
      {false, "time,qpos\n0,1\n", {"line 1", "qpos", "unknown column"}},
      {false, "time,qpos:\n0,1\n", {"line 1", "qpos:", "no joint named ''"}},
      {false, "time,,qpos:cart_slide\n0,1,2\n", {"line 1", "column 2 has an empty name"}},
      {false, "time,qpos:cart_slide:1\n0,1\n", {"line 1", "qpos:cart_slide:1", "out of range"}},
      {false,
       "time,sensor:pole_tip_pos:3\n0,1\n",
       {"line 1", "sensor:pole_tip_pos:3", "out of range"}},
      {false,
       "time,sensor:pole_tip_pos\n0,1\n",
       {"line 1", "sensor:pole_tip_pos", "has 3 components"}},
      {true, "time,qpos:box_free:7\n0,1\n", {"line 1", "qpos:box_free:7", "out of range"}},
      {true, "time,qvel:box_free:6\n0,1\n", {"line 1", "qvel:box_free:6", "out of range"}},
      {true, "time,qpos:box_free\n0,1\n", {"line 1", "qpos:box_free", "free joint"}},
      {false, "time,time\n0,0\n", {"line 1", "time: duplicate column"}},
      {false,
       "time,qpos:cart_slide,qpos:cart_slide\n0,1,1\n",
       {"line 1", "qpos:cart_slide: duplicate column"}},
      {false,
       "time,sensor:cart_pos,sensor:cart_pos:0\n0,1,1\n",
       {"line 1", "sensor:cart_pos:0: duplicate column", "sensor:cart_pos)"}},
      {false,
       "time,qpos:cart_slide\n0,1\n0.01,abc\n",
       {"line 3", "qpos:cart_slide", "cannot parse 'abc'"}},
      {false, "time,qpos:cart_slide\n0,1\n0.01,1.5x\n", {"line 3", "qpos:cart_slide", "1.5x"}},
      {false, "time,qpos:cart_slide\n0,1\n0.01,\n", {"line 3", "qpos:cart_slide", "empty field"}},
      {false, "time,qpos:cart_slide\n0,  \n", {"line 2", "qpos:cart_slide", "empty field"}},
      {false, "time,qpos:cart_slide\n0,1\n0.01,nan\n", {"line 3", "qpos:cart_slide", "NaN"}},
      {false, "time,qpos:cart_slide\n0,NaN\n", {"line 2", "qpos:cart_slide", "NaN"}},
      {false, "time,qpos:cart_slide\nnan,1\n", {"line 2", "time", "NaN"}},
      {false, "time,qpos:cart_slide\n0,inf\n", {"line 2", "qpos:cart_slide", "not finite"}},
      {false, "time,qpos:cart_slide\n0,-Infinity\n", {"line 2", "qpos:cart_slide", "not finite"}},
      {false, "time,ctrl:cart_motor\n0,1e999\n", {"line 2", "ctrl:cart_motor", "not finite"}},
      {false, "time,qpos:cart_slide\n0,1\n0,2\n", {"line 3", "time", "increase strictly"}},
      {false, "time,qpos:cart_slide\n0,1\n0.02,2\n0.01,3\n", {"line 4", "time", "increase"}},
      {false, "time,qpos:cart_slide\n", {"no data rows"}},
      {false, "time,qpos:cart_slide\n\n\r\n", {"no data rows"}},
      {false, "", {"empty file"}},
      {false, "\n0,1\n", {"line 1", "empty header"}},
      {false, "time,qpos:cart_slide\n0,1,2\n", {"line 2", "3 fields", "2 columns"}},
      {false, "time,qpos:cart_slide\n0,1\n0.01\n", {"line 3", "1 fields", "2 columns"}},
      {false, "time,qpos:cart_slide\n0,1\n\n0.01,2\n", {"line 3", "blank line"}},
  };
  int n = 0;
  for (const Case& c : cases) {
    std::string path = dir.file("bad" + std::to_string(n++) + ".csv");
    ASSERT_TRUE(writeFile(path, c.csv));
    Recording r;
    char err[1000] = "";
    EXPECT_EQ(sysid_readRecording(c.onArm ? arm.m : cart.m, path.c_str(), &r.rec, err, sizeof(err)),
              -1)
        << c.csv;
    EXPECT_EQ(std::string(err).rfind(path + ": ", 0), 0u) << err;
    for (const std::string& s : c.expect) {
      EXPECT_NE(std::string(err).find(s), std::string::npos) << "'" << s << "' not in: " << err;
    }
    EXPECT_EQ(r.rec.qpos, nullptr);
    EXPECT_EQ(r.rec.ctrl, nullptr);
    EXPECT_EQ(r.rec.T, 0);
  }

  // a file that cannot be opened
  std::string missing = dir.file("missing.csv");
  Recording r;
  char err[1000] = "";
  EXPECT_EQ(sysid_readRecording(cart.m, missing.c_str(), &r.rec, err, sizeof(err)), -1);
  EXPECT_NE(std::string(err).find(missing), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("cannot open"), std::string::npos) << err;
  EXPECT_EQ(sysid_readRecording(cart.m, dir.path.c_str(), &r.rec, err, sizeof(err)), -1);
  EXPECT_NE(std::string(err).find(dir.path), std::string::npos) << err;
}

// a failed write leaves no file behind
// issue 14: inputs that were read wrongly or without bound are refused, naming file, line, column
TEST(SysidData, ReadErrorsBinaryAndCutOff) {
  Model cart("cartpole.xml");
  ASSERT_TRUE(cart.m);
  TempDir dir;
  struct Case {
    std::string csv;
    std::vector<std::string> expect;  // substrings of the message
  } cases[] = {
      // a number cut off at the end of a file without a final newline was read as its prefix
      {"time,qpos:cart_slide\n0,1\n0.01,2.5", {"line 3", "no line end", "cut off"}},
      // the rest of a row after a NUL byte was ignored
      {std::string("time,qpos:cart_slide\n0,1\n0.01,2") + '\0' + "5\n",
       {"line 3, column 7: NUL byte"}},
      {std::string("time,qpos:cart") + '\0' + "_slide\n0,1\n", {"line 1, column 15: NUL byte"}},
      // a single 1e300 gave "the residuals cannot be evaluated at the starting values"
      {"time,qpos:cart_slide\n0,1e300\n0.01,1\n",
       {"line 2", "qpos:cart_slide", "'1e300' is out of range"}},
      {"time,qpos:cart_slide\n0,1\n-2e10,1\n", {"line 3", "time", "out of range"}},
      // two samples 5804 s apart: 580400 steps interpolated from a 30-byte file (found by fuzz_csv)
      {"time,qpos:cart_slide\n0,1\n5804,2\n", {"line 3", "time", "more than 1000 timesteps"}},
      // a file without newlines grew memory without bound
      {"time," + std::string((1 << 24) + 10, 'x'), {"line 1: longer than 16777216 bytes"}},
  };
  int n = 0;
  for (const Case& c : cases) {
    std::string path = dir.file("bin" + std::to_string(n++) + ".csv");
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    ASSERT_EQ(std::fwrite(c.csv.data(), 1, c.csv.size(), f), c.csv.size());
    std::fclose(f);
    sysidRecording rec;
    char err[1000] = "";
    EXPECT_EQ(sysid_readRecording(cart.m, path.c_str(), &rec, err, sizeof(err)), -1) << path;
    EXPECT_NE(std::strstr(err, path.c_str()), nullptr) << err;
    for (const std::string& e : c.expect) {
      EXPECT_NE(std::strstr(err, e.c_str()), nullptr) << "'" << e << "' not in: " << err;
    }
    EXPECT_EQ(rec.qpos, nullptr);  // nothing left allocated
  }
  // /dev/zero ends at its first byte instead of filling memory
  sysidRecording rec;
  char err[1000] = "";
  EXPECT_EQ(sysid_readRecording(cart.m, "/dev/zero", &rec, err, sizeof(err)), -1);
  EXPECT_STREQ(err, "/dev/zero: line 1, column 1: NUL byte (a binary file?)");
}

TEST(SysidData, WriteErrors) {
  Model mod("cartpole.xml");
  ASSERT_TRUE(mod.m);
  const mjModel* m = mod.m;
  TempDir dir;
  int T = 10;
  Trajectory tr = simulate(m, T, 3);
  char err[1000];

  // a directory that does not exist
  std::string path = dir.file("no/such/dir/rec.csv");
  err[0] = 0;
  EXPECT_EQ(sysid_writeRecording(m, path.c_str(), T, 0, tr.ctrl.data(), tr.qpos.data(),
                                 tr.qvel.data(), tr.sensor.data(), err, sizeof(err)),
            -1);
  EXPECT_NE(std::string(err).find(path), std::string::npos) << err;
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".tmp"));

  // a read-only directory (root writes anyway)
  if (geteuid() != 0) {
    std::string ro = dir.file("readonly");
    ASSERT_EQ(mkdir(ro.c_str(), 0555), 0);
    path = ro + "/rec.csv";
    err[0] = 0;
    EXPECT_EQ(sysid_writeRecording(m, path.c_str(), T, 0, tr.ctrl.data(), tr.qpos.data(),
                                   tr.qvel.data(), tr.sensor.data(), err, sizeof(err)),
              -1);
    EXPECT_NE(std::string(err).find(path), std::string::npos) << err;
    EXPECT_FALSE(exists(path));
    EXPECT_FALSE(exists(path + ".tmp"));
    chmod(ro.c_str(), 0755);
  }

  // the rename fails (the path is a directory): the temporary file is removed
  path = dir.file("isdir.csv");
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  err[0] = 0;
  EXPECT_EQ(sysid_writeRecording(m, path.c_str(), T, 0, tr.ctrl.data(), tr.qpos.data(),
                                 tr.qvel.data(), tr.sensor.data(), err, sizeof(err)),
            -1);
  EXPECT_NE(std::string(err).find(path), std::string::npos) << err;
  EXPECT_FALSE(exists(path + ".tmp"));

  // a column measured at some steps only, a non-finite control, bad arguments
  path = dir.file("nan.csv");
  std::vector<double> qpos = tr.qpos;
  qpos[3 * m->nq + 1] = NAN;
  err[0] = 0;
  EXPECT_EQ(sysid_writeRecording(m, path.c_str(), T, 0, tr.ctrl.data(), qpos.data(), tr.qvel.data(),
                                 tr.sensor.data(), err, sizeof(err)),
            -1);
  EXPECT_NE(std::string(err).find(path), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("qpos:pole_hinge: value at step 3 is NaN"), std::string::npos)
      << err;
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".tmp"));
  std::vector<double> ctrl = tr.ctrl;
  ctrl[T - 1] = INFINITY;
  err[0] = 0;
  EXPECT_EQ(sysid_writeRecording(m, path.c_str(), T, 0, ctrl.data(), tr.qpos.data(), tr.qvel.data(),
                                 tr.sensor.data(), err, sizeof(err)),
            -1);
  EXPECT_NE(std::string(err).find("ctrl:cart_motor: value at step 9 is not finite"),
            std::string::npos)
      << err;
  EXPECT_FALSE(exists(path));
  err[0] = 0;
  EXPECT_EQ(sysid_writeRecording(m, path.c_str(), -1, 0, nullptr, nullptr, nullptr, nullptr, err,
                                 sizeof(err)),
            -1);
  EXPECT_NE(std::string(err).find("number of steps"), std::string::npos) << err;
  EXPECT_FALSE(exists(path));

  // an existing file is replaced only by a complete one
  path = dir.file("keep.csv");
  ASSERT_TRUE(writeFile(path, "old\n"));
  EXPECT_EQ(sysid_writeRecording(m, path.c_str(), T, 0, tr.ctrl.data(), qpos.data(), tr.qvel.data(),
                                 tr.sensor.data(), err, sizeof(err)),
            -1);
  EXPECT_EQ(firstLine(path), "old");
  EXPECT_EQ(sysid_writeRecording(m, path.c_str(), T, 0, tr.ctrl.data(), tr.qpos.data(),
                                 tr.qvel.data(), tr.sensor.data(), err, sizeof(err)),
            0)
      << err;
  EXPECT_EQ(firstLine(path).rfind("time,ctrl:cart_motor,", 0), 0u);
}

}  // namespace
