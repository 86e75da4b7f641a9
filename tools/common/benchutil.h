// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Helpers shared by the benchmark, check and demo tools: the bundled-model directory, medians,
// deterministic random numbers and controls, the initial state, model names, MuJoCo's instability
// warnings, the heads of JSON entries.
//
//   splitmix64:  z = (s += 0x9E3779B97F4A7C15); z = (z ^ z >> 30) 0xBF58476D1CE4E5B9;
//                z = (z ^ z >> 27) 0x94D049BB133111EB; z ^ z >> 31
//   uniform in [0, 1): (splitmix64 >> 11) / 2^53
//   control i: lo + (hi - lo) r, (lo, hi) = ctrlrange if ctrllimited, else (-1, 1)

#ifndef MJDIFF_BENCHUTIL_H_
#define MJDIFF_BENCHUTIL_H_

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <mjdiff/mjdiff.h>

//---------------------------------- models --------------------------------------------------------

// directory of the bundled models (the one holding the file probe): $MJDIFF_MODEL_DIR, then
// relative to the executable (installed share/mjdiff/models, build tree), then the source tree's
// models/; "" if none is found. dir has n chars.
void tool_modelDir(const char* probe, char* dir, size_t n);

// append to model (which has room for nbundled more) the bundled models found in the model
// directory of bundled[0], each malloc'd; notes on stderr name what is missing
void tool_bundledModels(const char* tool, const char* const* bundled, int nbundled, char** model,
                        int* nmodel);

// append to *list (*n entries, grown with realloc) the paths matching the glob pattern, sorted,
// each malloc'd; 0 if out of memory (no match is not an error)
int tool_globPaths(const char* pattern, char*** list, int* n);

// out = a/b; 0 if it does not fit in n chars
int tool_joinPath(char* out, size_t n, const char* a, const char* b);

// name of a model file without directory and extension ("a/b/hopper.xml" -> "hopper")
void tool_baseName(const char* path, char* name, size_t n);

// "Euler", "RK4" or "implicit"
const char* tool_integratorName(int integrator);

// the smooth step s takes on m, into buf (n): "implicit smooth step" or "explicit smooth step,
// 5 substeps of 0.001 s" ("1 substep" where it takes none); returns buf
const char* tool_smoothStepText(const mjModel* m, const mjdiffModel* s, char* buf, size_t n);

//---------------------------------- statistics ----------------------------------------------------

// median of x (n); NaN if n <= 0 or out of memory
double tool_median(const double* x, int n);

//---------------------------------- random numbers, controls, states ------------------------------

// splitmix64: deterministic and platform-independent; advances *state
uint64_t tool_random64(uint64_t* state);

// uniform in [0, 1) from the next splitmix64 number
double tool_uniform(uint64_t* state);

// control range of actuator i: ctrlrange if ctrllimited, else [-1, 1]
void tool_ctrlRange(const mjModel* m, int i, mjtNum* lo, mjtNum* hi);

// ctrl (nu) uniform in the control ranges, one random number per actuator in order
void tool_randomCtrl(const mjModel* m, mjtNum* ctrl, uint64_t* rng);

// smooth controls strictly inside the control ranges (T x nu):
//   u_t,i = lo + (hi - lo) (0.5 + 0.4 sin(0.05 t + phase_i)), phase_i = 2 pi uniform (from seed)
void tool_smoothCtrl(const mjModel* m, int T, uint64_t seed, mjtNum* ctrl);

// how many of MuJoCo's instability warnings (bad qpos, qvel, qacc) d counts (each one reset d;
// a reset clears the counts before it)
int tool_badWarnings(const mjData* d);

// reset d to keyframe 0, else to qpos0
void tool_resetState(const mjModel* m, mjData* d);

// a run that has run away: some |qvel_i| above TOOL_RUNAWAY (m/s, rad/s), which a step of a
// stable model does not reach; returns 1 with msg "ran away: |qvel[i]| = ... at t = ... s"
#define TOOL_RUNAWAY 1000.0
int tool_ranAway(const mjModel* m, const mjData* d, char* msg, int msgsz);

//---------------------------------- runs ----------------------------------------------------------

// "interrupted", "ok" or "error"
const char* tool_runStatus(int interrupted, int ok);

// TOOL_EXIT_INTERRUPTED, TOOL_EXIT_OK or TOOL_EXIT_RUNTIME
int tool_exitCode(int interrupted, int ok);

// free the model list (nmodel): each name too if it holds the defaults, except keep (static)
void tool_freeModels(char** model, int nmodel, int defaults, const char* keep);

// a JSON per-model entry up to its measurements: [,]{"model":PATH,"name":NAME (the comma unless
// *first; clears *first)
void tool_jsonModelHead(FILE* f, int* first, const char* path, const char* name);

// a JSON series entry up to its timings: [,]{"model":NAME,"round":K,"first":"FIRST" (the comma
// unless *first; clears *first)
void tool_jsonRoundHead(FILE* f, int* first, const char* name, int round, const char* firstName);

#endif  // MJDIFF_BENCHUTIL_H_
