// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Fuzz target: the MJCF's mjdiff_* numerics. Each input line "NAME V1 V2 ..." becomes
// <numeric name="mjdiff_NAME" data="V1 V2 ..."/> in the <custom> of a small model with every
// element the smooth model reads (a free box on a plane with an adhesion actuator (a body
// transmission) and a free-joint actuator, a hinge with a range and friction loss, a limited
// tendon, a joint equality, touch and position sensors); the lines "timestep X" and
// "integrator NAME" set the model's options. The model is compiled (tool_loadXMLText), then
// mjdiff_makeModel must either refuse it with a message or give a smooth model that steps (or
// fails a step with a message), differentiates (stepVJP) and reports its stability. Never a
// crash, hang or leak.

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/mjdiff.h>
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolutil.h"

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define MAX_TEXT 16384
#define MAX_LINES 64
#define MAX_VALUES 8

static const char* kHead = "<mujoco>\n  <option timestep=\"%s\" integrator=\"%s\"/>\n  <custom>\n";
static const char* kBody =
    "  </custom>\n"
    "  <worldbody>\n"
    "    <geom name=\"floor\" type=\"plane\" size=\"2 2 0.1\"/>\n"
    "    <site name=\"anchor\" pos=\"0 0 1.5\"/>\n"
    "    <body name=\"box\" pos=\"0.5 0 0.2\">\n"
    "      <freejoint name=\"free\"/>\n"
    "      <geom name=\"box\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"1\" margin=\"0.01\"/>\n"
    "      <site name=\"touch\" type=\"box\" size=\"0.11 0.11 0.11\"/>\n"
    "    </body>\n"
    "    <body name=\"link\" pos=\"0 0 1\">\n"
    "      <joint name=\"hinge\" type=\"hinge\" axis=\"0 1 0\" range=\"-1 1\" limited=\"true\"\n"
    "             frictionloss=\"0.1\" damping=\"0.05\"/>\n"
    "      <geom name=\"link\" type=\"capsule\" fromto=\"0 0 0 0 0 -0.5\" size=\"0.05\"/>\n"
    "      <site name=\"tip\" pos=\"0 0 -0.5\"/>\n"
    "      <body name=\"ball\" pos=\"0 0 -0.5\">\n"
    "        <joint name=\"slide\" type=\"slide\" axis=\"1 0 0\"/>\n"
    "        <geom name=\"ball\" type=\"sphere\" size=\"0.06\"/>\n"
    "      </body>\n"
    "    </body>\n"
    "  </worldbody>\n"
    "  <tendon>\n"
    "    <spatial name=\"rope\" limited=\"true\" range=\"0 0.8\">\n"
    "      <site site=\"anchor\"/><site site=\"tip\"/>\n"
    "    </spatial>\n"
    "  </tendon>\n"
    "  <equality><joint name=\"eq\" joint1=\"slide\"/></equality>\n"
    "  <actuator><motor name=\"m\" joint=\"hinge\"/>\n"
    "    <adhesion name=\"stick\" body=\"box\" ctrlrange=\"0 1\" gain=\"5\"/>\n"
    "    <general name=\"lift\" joint=\"free\" gear=\"0 0 1 0.1 0 0\"/></actuator>\n"
    "  <sensor><touch name=\"touch\" site=\"touch\"/><jointpos name=\"q\" "
    "joint=\"hinge\"/></sensor>\n"
    "</mujoco>\n";

static void quiet(const char* msg) {
  (void)msg;
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  mju_user_warning = quiet;
  // the model itself must compile: else every input would be refused and the target fuzz nothing
  // (its adhesion element once carried an attribute MuJoCo 2.2.2 rejects)
  static char xml[2 * MAX_TEXT];
  snprintf(xml, sizeof(xml), kHead, "0.005", "Euler");
  strncat(xml, kBody, sizeof(xml) - strlen(xml) - 1);
  char err[1000] = "";
  mjModel* m = tool_loadXMLText("fuzz.xml", xml, (long)strlen(xml), err, sizeof(err));
  if (!m) {
    fprintf(stderr, "fuzz_mjcf: the target's own model does not compile: %s\n", err);
    abort();
  }
  mj_deleteModel(m);
  return 0;
}

// append to buf (cap MAX_TEXT); 0 if it does not fit
static int append(char* buf, size_t* len, const char* s) {
  size_t n = strlen(s);
  if (*len + n + 1 > MAX_TEXT) return 0;
  memcpy(buf + *len, s, n + 1);
  *len += n;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  char* in = (char*)malloc(size + 1);
  if (!in) return 0;
  memcpy(in, data, size);
  in[size] = 0;

  char timestep[32] = "0.005", integrator[16] = "Euler";
  static char custom[MAX_TEXT];
  size_t clen = 0;
  custom[0] = 0;
  int nline = 0;
  for (char* line = strtok(in, "\n"); line && nline < MAX_LINES; line = strtok(NULL, "\n")) {
    nline++;
    // the name: [A-Za-z0-9_:-] only (anything else would be XML), then numbers
    char name[96];
    size_t k = 0;
    const char* p = line;
    while (*p == ' ') p++;
    while (*p && *p != ' ' && k + 1 < sizeof(name)) {
      char c = *p++;
      int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == ':' || c == '-';
      name[k++] = ok ? c : '_';
    }
    name[k] = 0;
    if (!k) continue;
    char values[MAX_VALUES * 32] = "";
    int nval = 0;
    while (*p && nval < MAX_VALUES) {
      char* end = NULL;
      double v = strtod(p, &end);
      if (end == p) break;
      p = end;
      char num[32];
      snprintf(num, sizeof(num), "%s%.17g", nval ? " " : "", v);
      strcat(values, num);
      nval++;
    }
    if (!strcmp(name, "timestep") && nval == 1) {
      snprintf(timestep, sizeof(timestep), "%s", values);
      continue;
    }
    if (!strcmp(name, "integrator")) {
      while (*p == ' ') p++;
      snprintf(integrator, sizeof(integrator), "%s",
               !strncmp(p, "RK4", 3)        ? "RK4"
               : !strncmp(p, "implicit", 8) ? "implicit"
                                            : "Euler");
      continue;
    }
    if (!nval) continue;
    char el[256];
    snprintf(el, sizeof(el), "    <numeric name=\"mjdiff_%s\" data=\"%s\"/>\n", name, values);
    if (!append(custom, &clen, el)) break;
  }
  free(in);

  static char xml[2 * MAX_TEXT];
  int n = snprintf(xml, sizeof(xml), kHead, timestep, integrator);
  if (n < 0 || (size_t)n + clen + strlen(kBody) + 1 > sizeof(xml)) return 0;
  memcpy(xml + n, custom, clen);
  memcpy(xml + n + clen, kBody, strlen(kBody) + 1);

  char err[1000] = "";
  mjModel* m = tool_loadXMLText("fuzz.xml", xml, (long)strlen(xml), err, sizeof(err));
  if (!m) return 0;  // MuJoCo refused the numbers (a bad timestep, ...)
  mjdiffModel* s = NULL;
  mjdiffStatus st = mjdiff_makeModel(m, NULL, &s, err, sizeof(err));
  if (st != MJDIFF_OK) {
    if (s || !err[0]) {
      fprintf(stderr, "fuzz_mjcf: refused without a message or left a model\n");
      abort();
    }
    mj_deleteModel(m);
    return 0;
  }
  mjData* d = mj_makeData(m);
  d->qvel[0] = 0.3;
  for (int i = 0; i < m->nu; i++) d->ctrl[i] = 0.5;  // the adhesion pulls: its derivative runs
  for (int k = 0; k < 20; k++) {
    err[0] = 0;
    if (mjdiff_step(m, d, s, err, sizeof(err)) != MJDIFF_OK) {
      if (!err[0]) {
        fprintf(stderr, "fuzz_mjcf: a step failed without a message\n");
        abort();
      }
      break;
    }
  }
  mjdiffStepDeriv* w = NULL;
  if (mjdiff_makeStepDeriv(m, s, NULL, &w, err, sizeof(err)) == MJDIFF_OK) {
    int ndx = 2 * m->nv + m->na;
    double* adj = (double*)calloc((size_t)(2 * ndx + m->nu + 1), sizeof(double));
    if (adj) {
      for (int i = 0; i < ndx; i++) adj[i] = 1;
      (void)mjdiff_stepVJP(m, d, s, w, adj, adj + ndx, adj + 2 * ndx, NULL, err, sizeof(err));
      free(adj);
    }
    mjdiff_freeStepDeriv(w);
  }
  if (mjdiff_forward(m, d, s, err, sizeof(err)) == MJDIFF_OK) {
    mjdiffStability stab;
    mjdiff_stability(m, d, s, 1, &stab);
    char line[600];
    (void)mjdiff_describeStability(m, &stab, line, sizeof(line));
  }
  mj_deleteData(d);
  mjdiff_freeModel(s);
  mj_deleteModel(m);
  return 0;
}
