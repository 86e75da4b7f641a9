// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Thin C shim between the GoogleTest files and the C API: the tests call mjdiff through these plain
// C helpers (compiled as C11), so the API is exercised exactly as a C user would.

#ifndef MJDIFF_TESTS_SHIM_H_
#define MJDIFF_TESTS_SHIM_H_

#include <mjdiff/mjdiff.h>

#ifdef __cplusplus
extern "C" {
#endif

// load a model from an XML string (through a VFS) or from a file; NULL with err filled on failure
mjModel* shim_loadString(const char* xml, char* err, int errsz);
mjModel* shim_loadFile(const char* path, char* err, int errsz);

// path of a bundled model: MJDIFF_MODEL_DIR "/" name (static buffer)
const char* shim_modelPath(const char* name);

// a loaded model with its data and smooth model; NULL fields on failure, message in err
typedef struct shimSim_ {
  mjModel* m;
  mjData* d;
  mjdiffModel* s;
  char err[1000];
} shimSim;

// load (string if xml is not NULL, else file path) and make data and the smooth model
int shim_open(shimSim* sim, const char* xml, const char* path);
void shim_close(shimSim* sim);

// n smooth steps; returns the first non-OK status (message in sim->err)
mjdiffStatus shim_steps(shimSim* sim, int n);

// deterministic uniform random number in [0, 1) (splitmix64); state is a 64-bit seed
double shim_uniform(unsigned long long* state);

// deterministic uniform random controls within ctrlrange (or [-1, 1]); state is a 64-bit seed
void shim_randomCtrl(const mjModel* m, mjData* d, unsigned long long* state);

// kinetic plus gravitational potential energy (J) at the current state (runs mj_energy*)
mjtNum shim_mechanicalEnergy(const mjModel* m, mjData* d);

// 1 if every qpos, qvel, act is finite
int shim_stateFinite(const mjModel* m, const mjData* d);

// copy the full state (qpos, qvel, act, ctrl, time) into buf of size shim_stateSize(m)
int shim_stateSize(const mjModel* m);
void shim_getState(const mjModel* m, const mjData* d, mjtNum* buf);
void shim_setState(const mjModel* m, mjData* d, const mjtNum* buf);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_TESTS_SHIM_H_
