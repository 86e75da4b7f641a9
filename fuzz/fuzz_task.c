// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Fuzz target: mjdiff-mpc's task reader (mpc_readTaskFile) on models/arm_box.xml; a task it
// accepts is then evaluated at a fixed state (cost, gradient, Gauss-Newton Hessian, success), as
// the planners do. Never a crash, hang or leak; a refused task always has a message.

#define _POSIX_C_SOURCE 200809L

#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpc.h"

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static mjModel* gModel = NULL;
static mjData* gData = NULL;
static double* gBuf = NULL;

static void quiet(const char* msg) {
  (void)msg;
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  mju_user_warning = quiet;
  char err[500] = "";
  gModel = mj_loadXML(MJDIFF_MODEL_DIR "/arm_box.xml", NULL, err, sizeof(err));
  if (!gModel) {
    fprintf(stderr, "fuzz_task: %s\n", err);
    abort();
  }
  gData = mj_makeData(gModel);
  for (int i = 0; i < gModel->nv; i++) gData->qvel[i] = 0.1 * (i + 1);
  for (int i = 0; i < gModel->nu; i++) gData->ctrl[i] = 0.2;
  mj_forward(gModel, gData);
  int ndx = 2 * gModel->nv + gModel->na, nu = gModel->nu;
  gBuf = (double*)calloc((size_t)(ndx + nu + ndx * ndx + nu * nu), sizeof(double));
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!size) return 0;
  FILE* f = fmemopen((void*)data, size, "rb");
  if (!f) return 0;
  char err[1000];
  mpcTask* task = mpc_readTaskFile(gModel, f, "fuzz.task", err, sizeof(err));
  fclose(f);
  if (!task) {
    if (!err[0]) {
      fprintf(stderr, "fuzz_task: refused without a message\n");
      abort();
    }
    return 0;
  }
  int ndx = 2 * gModel->nv + gModel->na, nu = gModel->nu;
  double* dldx = gBuf;
  double* dldu = dldx + ndx;
  double* lxx = dldu + nu;
  double* luu = lxx + ndx * ndx;
  for (int terminal = 0; terminal < 2; terminal++) {
    volatile double c = mpc_cost(task, gModel, gData, terminal, dldx, dldu);
    (void)c;
    mpc_costHessian(task, gModel, gData, terminal, lxx, luu);
  }
  (void)mpc_success(task, gModel, gData);
  mpc_freeTask(task);
  return 0;
}
