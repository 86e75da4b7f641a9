// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Residuals of a model against recordings, with multiple shooting, and their exact Jacobians.
//
// Variables z = (p, d_1, ..., d_W): the model parameters p (np) and, per shooting window w, a
// tangent offset d_w (2nv+na) of the window's start state from its reference xbar_w:
// x_w = xbar_w (+) d_w. Within a window the smooth step runs from x_w with the recorded controls.
// Residuals, each divided by its noise scale:
//   state     measured qpos (tangent difference for ball/free joints) and qvel at each step
//   sensor    measured sensor components at each step (readings of the forward pass there)
//   continuity  x_{w,end} (-) x_{w+1} for consecutive windows of one recording (scale sigma_cont)
//   prior     (p - p_prior) / sigma_prior for parameters with a prior
//   weak      d_w,i / 10 for the tangent coordinates i a recording does not measure at its start
//             (first window only): fixes the start of an unobserved chain (J'J stays regular when
//             nothing sees it) and is negligible against any measurement
// Jacobian by forward sensitivities: S_k = dx_k/d(p, d_w), S_{k+1} = A_k S_k + [P_k 0],
// S_{k0} = [0 J_r(d_w)]; state rows read S, sensor rows C_k S_k + [Q_k 0], with C, Q the sensor
// Jacobians of the step adjoint.

#ifndef MJDIFF_TOOLS_SYSID_RESIDUAL_H_
#define MJDIFF_TOOLS_SYSID_RESIDUAL_H_

#include "sysid.h"

typedef struct sysidWeights_ {
  double sigma_qpos;           // noise scale of positions (m, rad)
  double sigma_qvel;           // of velocities (m/s, rad/s)
  double sigma_sensor;         // of sensor readings (their units)
  double sigma_cont;           // of the continuity between windows (state units)
} sysidWeights;

typedef struct sysidModel_ sysidModel;

// the qpos address of joint j's rotation (ball: its quaternion, free: after the position), -1
// for hinges and slides
int sysid_rotQpos(const mjModel* m, int j);

// 1 if none of x[0..n) is NaN (a recording's missing value)
int sysid_measured(const double* x, int n);

// step k of recording R onto d: every measured coordinate (a rotation only when all 4 quaternion
// components are), the unmeasured ones kept from d; quaternions normalised
void sysid_overwriteMeasured(const mjModel* m, mjData* d, const sysidRecording* R, int k);

// Build the residual model of m (with smooth model s and parameters p) for recordings rec
// (nrec), windows of `window` steps (0: one window per recording), priors (np values and scales,
// nullable; scale <= 0: no prior). The reference start state of each window takes every measured
// coordinate from the recording and the unmeasured ones from a simulation with the initial
// parameters (restarted from the measured coordinates at each window); the fitted offsets d_w
// then estimate both per window. A recording shorter than one window fails, naming it.
// Returns NULL with err on failure (a sensor column without a derivative, ...).
sysidModel* sysid_makeModel(const mjModel* m, const mjdiffModel* s, const mjdiffParams* p,
                            const sysidRecording* rec, int nrec, int window,
                            const sysidWeights* weights, const double* prior,
                            const double* prior_sigma, char* err, int errsz);
void sysid_freeModel(sysidModel* sm);

// sizes: variables and residuals
int sysid_nvar(const sysidModel* sm);
int sysid_nres(const sysidModel* sm);

// the initial variables: parameter values of the model, zero offsets
void sysid_initialVariables(const sysidModel* sm, double* z);

// residual function for the optimiser (mjdiffLsqResidual): user = the sysidModel
int sysid_residual(void* user, const double* z, double* r, double* J);

// the same residuals with the normal equations' blocks (mjdiffLsqNormal): p = the parameters
// (np), one block per window (its start offset, 2nv+na); a window's rows touch p and its own
// block, its continuity rows also the next window's. user = the sysidModel
int sysid_normal(void* user, const double* z, double* r, mjdiffLsqBlocks* H);

// windows (blocks) and the block size 2nv+na
int sysid_nwin(const sysidModel* sm);
int sysid_ndx(const sysidModel* sm);

// why the last call of sysid_residual failed, naming the recording, step and time ("" if it did
// not fail)
const char* sysid_lastError(const sysidModel* sm);

// number of rollouts (window simulations) done so far
long sysid_rollouts(const sysidModel* sm);

// simulate with the parameter values p (np) from each recording's first state, single shooting,
// writing qpos (T+1 x nq) per recording into out[i] (nullable entries); returns 0 or -1
int sysid_simulate(sysidModel* sm, const double* p, double** qpos_out, char* err, int errsz);

#endif  // MJDIFF_TOOLS_SYSID_RESIDUAL_H_
