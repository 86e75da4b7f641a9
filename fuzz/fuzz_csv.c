// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Fuzz target: mjdiff-sysid's CSV reader (sysid_readRecordingFile) on models/arm_box.xml (hinge
// and free joints, actuators, sensors). It must return 0 with a recording whose aligned arrays
// can all be read, or -1 with a message; never crash, hang or leak.

#define _POSIX_C_SOURCE 200809L

#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysid.h"

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static mjModel* gModel = NULL;

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
    fprintf(stderr, "fuzz_csv: %s\n", err);
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FILE* f = fmemopen((void*)data, size ? size : 1, "rb");
  if (!f) return 0;
  if (!size) {
    fclose(f);
    return 0;
  }
  sysidRecording rec;
  char err[1000];
  if (sysid_readRecordingFile(gModel, f, "fuzz.csv", &rec, err, sizeof(err)) == 0) {
    // every aligned value is readable (ASan checks the sizes)
    const mjModel* m = gModel;
    volatile double sum = rec.t0;
    size_t T1 = (size_t)rec.T + 1;
    for (size_t i = 0; i < (size_t)rec.T * m->nu; i++) sum += rec.ctrl[i];
    for (size_t i = 0; i < T1 * m->nq; i++) sum += rec.qpos[i];
    for (size_t i = 0; i < T1 * m->nv; i++) sum += rec.qvel[i];
    for (size_t i = 0; i < T1 * m->nsensordata; i++) sum += rec.sensor[i];
    (void)sum;
    sysid_freeRecording(&rec);
  } else if (!err[0]) {
    fprintf(stderr, "fuzz_csv: failure without a message\n");
    abort();
  }
  fclose(f);
  return 0;
}
