// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// A stand-in for reality: a plant that differs from the model the way hardware does. A plant
// file sets hidden changes to named model parameters (<mjdiff/params.h> names), a payload, sensor
// noise and bias and an actuator delay; the plant runs MuJoCo's native step (mj_step, hard
// contacts) on its own copy of the model. The tools' models never see any of it: they get the
// plant's state (and noisy readings) only.
//
// Plant file: one statement per line, '#' starts a comment, blank lines are skipped.
//   set NAME VALUE [at T]      parameter(s) NAME := VALUE
//   scale NAME FACTOR [at T]   parameter(s) NAME := FACTOR * value
//   add NAME DELTA [at T]      parameter(s) NAME := value + DELTA
//   payload BODY MASS [at T]   extra MASS kg on BODY, at its centre of mass
//                              (= add body:BODY:mass MASS; the inertia about the com is kept)
//   noise SENSOR|* SIGMA       Gaussian noise of std SIGMA on every component of the sensor's
//                              readings (* every sensor); a later line for a sensor replaces it
//   bias SENSOR|* B [B ...]    a constant offset on the readings: one value for every component,
//                              or one per component (the sensor's dim)
//   delay SECONDS              actuator delay: the control applied at plant time t is the one
//                              commanded at t - SECONDS, rounded to whole plant steps (before the
//                              first command: the initial control)
//   seed N                     seed of the sensor noise (default 1)
// NAME is a parameter name or glob pattern of <mjdiff/params.h> ("body:link7:mass",
// "joint:*:damping", "geom:floor:friction[0]", "actuator:motor1:gear"); smooth-model fields
// (mjdiff:..., geom:G:contact_stiffness, ...) are not parameters of the native plant. T is the
// plant time since the run's start in seconds (default 0: from the start): a change "at T" is a
// step change then (a friction change mid-run, a payload picked up). Changes apply in the order of
// their times, changes at the same time in file order, each on top of the values before it.
//
// Per plant step from state x_k (plant time t_k since the reset):
//   p(t_k)    the nominal values with every change whose time <= t_k applied
//   u_app     = u_{k-D},  D = round(delay / timestep)  (u_j = initial control for j < 0)
//   x_{k+1}   = mj_step(plant model at p(t_k), x_k, u_app)
// Readings at x_k: y = h(x_k) + bias + sigma n, n ~ N(0, 1) per component (h: the plant model's
// sensordata of mj_forward at x_k with the applied control).
// Set values go through mjdiff_setParamValues (checked there: masses > 0, dampings >= 0, ...);
// MuJoCo's mj_setConst constants (dof_invweight0, ...) are not recomputed.
//
// Errors name the file and line ("plant.txt:4: unknown parameter ..."); a delay or a change
// time not inside the run is an error of tool_plantCheck.

#ifndef MJDIFF_TOOLS_PLANT_H_
#define MJDIFF_TOOLS_PLANT_H_

#include <mujoco/mujoco.h>

typedef struct toolPlant_ toolPlant;

// Read the plant file path for model m (the nominal model: the plant's model is a copy with the
// changes) and make its plant. NULL with a message in err (file:line: why).
toolPlant* tool_readPlant(const mjModel* m, const char* path, char* err, int errsz);

// Same from text in memory; path names it in messages.
toolPlant* tool_parsePlant(const mjModel* m, const char* text, const char* path, char* err,
                           int errsz);

// A plant without changes (the nominal model, native step): what --plant native runs.
toolPlant* tool_nominalPlant(const mjModel* m, char* err, int errsz);

void tool_freePlant(toolPlant* p);

// 1 if a run of `seconds` of simulated time can use the plant; 0 with a message naming the file
// and line (a delay not shorter than the run, a change after the run's end).
int tool_plantCheck(const toolPlant* p, double seconds, char* err, int errsz);

// The plant's model (its parameters as of the last reset or step) and data.
const mjModel* tool_plantModel(const toolPlant* p);
mjData* tool_plantData(toolPlant* p);

// Reset to the model's state in d0 (qpos, qvel, act, ctrl, time, mocap; d0 from the nominal
// model): parameters back to their values at time 0, the delay line filled with d0's controls, the
// noise reseeded. The plant's time 0 is d0->time.
void tool_plantReset(toolPlant* p, const mjData* d0);

// One plant step with the commanded control ctrl (nu): the changes due at the current time, the
// delay, mj_step. 0 if MuJoCo reported bad accelerations (err says when).
int tool_plantStep(toolPlant* p, const double* ctrl, char* err, int errsz);

// The readings at the plant's current state (nsensordata, the layout of d->sensordata) with
// bias and noise; the noise stream advances.
void tool_plantSense(toolPlant* p, double* y);

// Number of parameter changes, the delay in plant steps, 1 if any reading has noise or bias.
int tool_plantChanges(const toolPlant* p);
int tool_plantDelaySteps(const toolPlant* p);
int tool_plantNoisy(const toolPlant* p);

// The plant's current value of parameter `name` (an expanded name of <mjdiff/params.h>, e.g.
// "body:link7:mass"); NAN if it does not name one parameter of the model.
double tool_plantParam(const toolPlant* p, const char* name);

#endif  // MJDIFF_TOOLS_PLANT_H_
