// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Recordings of mjdiff-sysid and mjdiff-estimate (moved from tools/sysid/data.c; the sysid_ names
// are kept).

#ifndef MJDIFF_TOOLS_RECORDING_H_
#define MJDIFF_TOOLS_RECORDING_H_

#include <stdio.h>

#include <mjdiff/mjdiff.h>

//
// CSV format: a header row of column names, then one row of numbers per sample, time increasing.
//   time                  time of the sample (s), required, strictly increasing
//   ctrl:ACTUATOR         control of an actuator (held from its sample to the next: zero-order hold)
//   qpos:JOINT            position of a hinge or slide joint (rad or m); ball/free joints:
//                         qpos:JOINT:K, K = 0..3 (ball quaternion w x y z) or 0..6 (free: x y z,
//                         then the quaternion)
//   qvel:JOINT            velocity (rad/s or m/s); ball/free: qvel:JOINT:K, K = 0..2 or 0..5
//   sensor:SENSOR         a 1-dimensional sensor's reading; sensor:SENSOR:K for component K
// Columns may come in any order; any subset of qpos, qvel and sensor columns may be present.
// Measurements are aligned to the model's step times by linear interpolation between samples;
// controls by zero-order hold. Steps outside the recording's time span are not measured.

// what a recording measures, aligned to the model's steps
typedef struct sysidRecording_ {
  char path[512];
  int T;                       // number of steps covered (measurements at steps 0..T)
  double t0;                   // time of step 0 (the first sample)
  double* ctrl;                // (T x nu) controls, zero where an actuator has no column
  int* has_ctrl;               // (nu) 1 if the actuator has a column
  double* qpos;                // ((T+1) x nq) measured positions (NaN: not measured)
  double* qvel;                // ((T+1) x nv)
  double* sensor;              // ((T+1) x nsensordata)
  int nrow;                    // samples in the file
} sysidRecording;

// 0 if the recording gives every named actuator's control (a missing column would silently be
// read as zero control), else -1 with a message naming the file and the column.
int sysid_checkControls(const mjModel* m, const sysidRecording* rec, char* err, int errsz);

// Read a CSV recording for model m. Returns 0, or -1 with a message naming the file, row and
// column in err (unknown column name, unparsable number, NaN, a value beyond 1e10, time not
// increasing, two samples more than 1000 timesteps apart, missing time column, no data rows, a
// NUL byte, a line longer than 16 MiB, a last row without its line end).
int sysid_readRecording(const mjModel* m, const char* path, sysidRecording* rec, char* err,
                        int errsz);

// the same from an open file f (not closed), named path in messages
int sysid_readRecordingFile(const mjModel* m, FILE* f, const char* path, sysidRecording* rec,
                            char* err, int errsz);

// the same with missing readings allowed (missing nonzero; mjdiff-estimate): empty and NaN fields
// of sensor, qpos and qvel columns are read as NaN (not measured); a step interpolated from such
// a sample is not measured either. Time and ctrl fields must still be numbers.
int sysid_readRecordingMissing(const mjModel* m, FILE* f, const char* path, int missing,
                               sysidRecording* rec, char* err, int errsz);
void sysid_freeRecording(sysidRecording* rec);

// Write a CSV recording: header from the model's names, one row per step t = 0..T: time, every
// actuator's control (the last row repeats the last control), every joint's qpos and qvel, every
// sensor's reading. Writes to path.tmp and renames, so a failed write leaves no file that looks
// complete. Returns 0 or -1 (err).
int sysid_writeRecording(const mjModel* m, const char* path, int T, double t0,
                         const double* ctrl, const double* qpos, const double* qvel,
                         const double* sensor, char* err, int errsz);

// Columns of a full recording of m: time, then ctrl (nu), qpos (nq), qvel (nv) and sensor
// (nsensordata) values in the order of those arrays; sysid_writeRecording writes them in this
// order, leaving out those of elements without a name and those of NULL or all-NaN arrays.
int sysid_columnCount(const mjModel* m);

// Name of column i (0 <= i < sysid_columnCount) into buf ("time", "ctrl:motor1", "qpos:box:3",
// "sensor:box_pos:0"). Returns 0, or -1 (buf "") if i is out of range, the element has no name
// or the name does not fit in bufsz.
int sysid_columnName(const mjModel* m, int i, char* buf, int bufsz);

#endif  // MJDIFF_TOOLS_RECORDING_H_
