// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// State estimation on the smooth step: extended and unscented Kalman filters, and batch
// estimation of a recording's initial state (and model parameters) by Gauss-Newton.
//
// States are rows of (qpos, qvel, act) (nx = nq+nv+na); means are combined with their corrections
// and covariances are kept in the tangent layout (dq, dv, da) (ndx = 2nv+na, <mjdiff/state.h>):
// x (+) dx = mjdiff_stateIntegrate(x, dx), so quaternions of ball and free joints stay unit and
// their 3 rotation rows carry the covariance. Measurements are readings of the model's sensors
// (d->sensordata of the smooth forward pass at the state, with the controls given), selected by
// sensor name; every reading is in d->sensordata's layout (nsensordata), NaN where not measured.
//
// Timing of one filter step k (the recording's conventions, tools/sysid/data.c):
//   update(u_k, y_k)   y_k = h(x_k, u_k) + noise: the readings at x_k
//   predict(u_k)       x_{k+1} = f(x_k, u_k) + w_k, w_k ~ N(0, Q) (mjdiff_step)
// Derivations: estimate/filter.c (EKF, UKF), estimate/batch.c (batch), estimate/mhe.c (moving
// horizon).

#ifndef MJDIFF_ESTIMATE_H_
#define MJDIFF_ESTIMATE_H_

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>
#include <mjdiff/params.h>
#include <mjdiff/smooth.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------- filters -----------------------------------------------------

// Filter methods.
#define MJDIFF_FILTER_EKF 0    // extended Kalman filter on the step and sensor Jacobians
#define MJDIFF_FILTER_UKF 1    // unscented Kalman filter: sigma points through the step

// Where an EKF takes its Jacobians A = dx'/dx and C = dy/dx.
#define MJDIFF_JAC_ANALYTIC 0  // mjdiff_stepJacobian and mjdiff_sensorJacobian (exact)
#define MJDIFF_JAC_FD 1        // MuJoCo's mjd_transitionFD on a private copy of the model with
                               // the smooth model attached (the finite-difference baseline)

// What a filter estimates with. Fill with mjdiff_defaultFilterDef, then set fields.
typedef struct mjdiffFilterDef_ {
  int method;                  // MJDIFF_FILTER_EKF (default) or MJDIFF_FILTER_UKF
  int jacobian;                // EKF: MJDIFF_JAC_ANALYTIC (default) or MJDIFF_JAC_FD
  const char* const* sensors;  // nullable: names of the measured sensors (nsensor); NULL: all
  int nsensor;
  mjtNum sigma_sensor;         // measurement noise std of every reading (sensor units), > 0
                               // (default 1e-2)
  const mjtNum* sensor_sigma;  // nullable: std per sensor of `sensors` (nsensor; or per sensor
                               // of the model when sensors is NULL), > 0 each
  mjtNum sigma_qpos;           // process noise std per step of each dq row (m or rad), >= 0
                               // (default 1e-4)
  mjtNum sigma_qvel;           // ... of each dv row (m/s or rad/s), >= 0 (default 1e-3)
  mjtNum sigma_act;            // ... of each da row, >= 0 (default 1e-3)
  const mjtNum* Q;             // nullable: full process noise covariance (ndx x ndx, symmetric),
                               // used instead of the sigma_* (not checked for definiteness: an
                               // indefinite Q shows as a covariance that is not positive
                               // definite at the step where it bites)
  mjtNum fd_eps;               // MJDIFF_JAC_FD: step of mjd_transitionFD (default 1e-6), > 0
  int fd_centered;             // MJDIFF_JAC_FD: centered differences (default 0: forward)
  mjtNum ukf_alpha;            // UKF spread alpha in (0, 1] (default 1)
  mjtNum ukf_beta;             // UKF prior weight beta >= 0 (default 2)
  mjtNum ukf_kappa;            // UKF kappa, ndx + kappa > 0 (default 0)
} mjdiffFilterDef;

MJDIFF_API void mjdiff_defaultFilterDef(mjdiffFilterDef* def);

// Counters of a filter run.
typedef struct mjdiffFilterInfo_ {
  int step;                    // predictions done since the reset (the index k of the state)
  int nupdate;                 // updates that used at least one reading
  long nmeasured;              // readings used
  long nskipped;               // selected readings skipped: NaN or infinite (missing)
  mjtNum nis;                  // last update's normalised innovation squared e' S^-1 e
  int nmeas;                   // readings selected (rows of y that the filter reads)
} mjdiffFilterInfo;

// A filter: its mean, covariance and workspace. Opaque; one per thread.
typedef struct mjdiffFilter_ mjdiffFilter;

// Make a filter for m with the smooth model s (both must outlive it). The only allocation. Fails
// with MJDIFF_ERR_NAME naming an unknown sensor, MJDIFF_ERR_UNSUPPORTED for a sensor without a
// derivative (analytic EKF) or a model the step derivatives do not cover, MJDIFF_ERR_VALUE naming
// a bad field of def. The filter starts at qpos0 with zero velocity, activation and covariance
// (reset it).
// Nullable: def (defaults), err.
MJDIFF_API mjdiffStatus mjdiff_makeFilter(const mjModel* m, const mjdiffModel* s,
                                          const mjdiffFilterDef* def, mjdiffFilter** out,
                                          char* err, int errsz);

// Free a filter. NULL is a no-op.
MJDIFF_API void mjdiff_freeFilter(mjdiffFilter* f);

// Set the mean x (nq+nv+na) and covariance P (ndx x ndx, symmetric positive definite) at time
// `time`, and clear the counters. Fails (MJDIFF_ERR_VALUE) if x is not finite or P is not
// symmetric positive definite (the state is then unchanged).
// Nullable: err.
MJDIFF_API mjdiffStatus mjdiff_filterReset(mjdiffFilter* f, const mjtNum* x, const mjtNum* P,
                                           mjtNum time, char* err, int errsz);

// Measurement update at the current mean with controls ctrl (nu; NULL: zero) and readings y
// (nsensordata, the layout of d->sensordata): the selected rows that are finite are used, the
// others skipped and counted. Fails with MJDIFF_ERR_NONFINITE if the innovation covariance or the
// updated covariance is not positive definite (err names the step; the filter keeps the state
// before the update), with the errors of the step derivatives otherwise.
// Nullable: ctrl, err.
MJDIFF_API mjdiffStatus mjdiff_filterUpdate(mjdiffFilter* f, const mjtNum* ctrl, const mjtNum* y,
                                            char* err, int errsz);

// Prediction one step ahead with controls ctrl (nu; NULL: zero). Fails with MJDIFF_ERR_NONFINITE
// if the predicted covariance is not positive definite or the step fails (err names the step; the
// filter keeps the state before the prediction).
// Nullable: ctrl, err.
MJDIFF_API mjdiffStatus mjdiff_filterPredict(mjdiffFilter* f, const mjtNum* ctrl, char* err,
                                             int errsz);

// Current mean (nq+nv+na), covariance (ndx x ndx) and time; counters.
// Nullable: x, P, time, info.
MJDIFF_API void mjdiff_filterGet(const mjdiffFilter* f, mjtNum* x, mjtNum* P, mjtNum* time,
                                 mjdiffFilterInfo* info);

// ---------------------------------- differentiable filter ---------------------------------------

// The innovations' negative log-likelihood of the analytic EKF (def: method EKF, jacobian
// ANALYTIC) run over a recording, NLL = 1/2 sum_t (r_t' S_t^-1 r_t + log det S_t) (without the
// constant), with the process and measurement noise of def scaled as Q = e^log_qscale Q0,
// R = e^log_rscale R0, and its gradient by forward tangents through the filter (derivation:
// estimate/filter_d.c): grad = (dNLL/dlog_qscale, dNLL/dlog_rscale, dNLL/dp_1..dp_np) for the
// model parameters of params (nullable: none) at their current values in m and s. The run: from
// the mean x0 (nq+nv+na) and covariance P0 (ndx x ndx) at time t0, update(u_t, y_t) for
// t = 0..T, predict(u_t) for t < T (readings y: (T+1) x nsensordata, NaN where not measured; ctrl
// T x nu, the readings at x_T use u_{T-1}). curvature 0: the second derivatives of the step and
// sensors along the state's tangent are neglected (exact for a linear model); 1: central
// differences of the exact Jacobians with step curv_eps (0: 1e-6; in the norm of the tangent
// (dx, dp)).
// The Jacobians' derivatives in the parameters are always taken by those differences (with
// curvature 0 along dp only), so m and s are changed during the run and restored. x_out, P_out:
// the final mean and covariance. Fails as mjdiff_makeFilter for the sensors and def
// (MJDIFF_ERR_UNSUPPORTED for a UKF or FD EKF), with MJDIFF_ERR_NONFINITE naming the step if an
// innovation covariance is not positive definite, with the errors of the step derivatives.
// Nullable: def, params, ctrl (zero), nll, grad (2 + np), x_out, P_out, err.
MJDIFF_API mjdiffStatus mjdiff_filterNLL(mjModel* m, mjdiffModel* s, const mjdiffFilterDef* def,
                                         const mjdiffParams* params, mjtNum log_qscale,
                                         mjtNum log_rscale, int curvature, mjtNum curv_eps, int T,
                                         mjtNum t0, const mjtNum* ctrl, const mjtNum* y,
                                         const mjtNum* x0, const mjtNum* P0, mjtNum* nll,
                                         mjtNum* grad, mjtNum* x_out, mjtNum* P_out, char* err,
                                         int errsz);

// ---------------------------------- batch estimation --------------------------------------------

// Outcome of mjdiff_batchEstimate (not an error).
#define MJDIFF_BATCH_CONVERGED 0   // relative decrease of the cost or step below tol
#define MJDIFF_BATCH_MAXITER 1     // max_iter iterations
#define MJDIFF_BATCH_STALLED 2     // no step lowered the cost (damping exhausted)

// What a batch estimate fits. Fill with mjdiff_defaultBatchEstDef.
typedef struct mjdiffBatchEstDef_ {
  const char* const* sensors;  // as mjdiffFilterDef (NULL: every sensor)
  int nsensor;
  mjtNum sigma_sensor;         // measurement noise std (default 1e-2), > 0
  const mjtNum* sensor_sigma;  // nullable: per sensor, as mjdiffFilterDef
  const mjdiffParams* params;  // nullable: model parameters fitted with the initial state
  const mjtNum* prior_sigma;   // nullable: std of a prior on x0 around the start guess, per
                               // tangent row (ndx); rows <= 0 carry no prior
  const mjtNum* prior_x;       // nullable: the prior's mean (nq+nv+na; NULL: the start guess)
  const mjtNum* prior_info;    // nullable: the prior's information matrix P^-1 (ndx x ndx,
                               // symmetric positive semidefinite), instead of prior_sigma
  int max_iter;                // Gauss-Newton iterations (default 50)
  mjtNum tol;                  // relative decrease of the cost and relative step (default 1e-10)
} mjdiffBatchEstDef;

MJDIFF_API void mjdiff_defaultBatchEstDef(mjdiffBatchEstDef* def);

// Result of a batch estimate.
typedef struct mjdiffBatchEstInfo_ {
  int status;                  // MJDIFF_BATCH_*
  int iterations;
  mjtNum cost0, cost;          // 1/2 |r|^2 at the start and at the estimate (r: residuals
                               // (h - y) / sigma, and the prior's)
  long nresidual;              // readings used (finite selected rows)
  long nskipped;               // selected readings that were NaN or infinite
  int nvar;                    // variables: ndx (the initial state's tangent) + np
  int rank;                    // numerical rank of J'J at the estimate (< nvar: not observable)
} mjdiffBatchEstInfo;

// Fit the initial state x0 (nq+nv+na; in: the start guess, out: the estimate) and, with
// def->params, their values param (np; in: start values, NULL: the model's; out: the estimate)
// to the readings y ((T+1) x nsensordata, NaN where not measured) of a rollout of T steps of the
// smooth step from time t0 with controls ctrl (T x nu; the readings at x_T use u_{T-1}). The cost
// is 1/2 sum (h_t(x_t) - y_t)^2 / sigma^2 (+ the prior); minimised by Gauss-Newton with
// Levenberg damping on the exact Jacobians of the readings through the rollout (forward
// sensitivities of the step Jacobians). cov ((ndx+np)^2, nullable) is (J'J)^-1 at the estimate,
// the covariance of the estimate if the sigmas are the noise's (NaN if rank < nvar). m and s are
// changed during the fit (parameter values) and restored before the return.
// Fails with MJDIFF_ERR_NAME (unknown sensor), MJDIFF_ERR_UNSUPPORTED (a sensor without a
// derivative), MJDIFF_ERR_VALUE (no finite reading, a bad field), MJDIFF_ERR_NONFINITE (the
// rollout from the start guess fails; err names the step).
// Nullable: ctrl (zero), param, cov, info, err.
MJDIFF_API mjdiffStatus mjdiff_batchEstimate(mjModel* m, mjdiffModel* s,
                                             const mjdiffBatchEstDef* def, int T, mjtNum t0,
                                             const mjtNum* ctrl, const mjtNum* y, mjtNum* x0,
                                             mjtNum* param, mjtNum* cov, mjdiffBatchEstInfo* info,
                                             char* err, int errsz);

// The Gauss-Newton linearisation of mjdiff_batchEstimate's cost at (x0, param) (param NULL: the
// model's values): the cost F = 1/2 |r|^2, its gradient grad = J' r (nvar = ndx + np) in
// z = (delta, dp), x0 (+) delta, param + dp, at z = 0, and H = J'J (nvar x nvar; with the prior's
// 1/sigma^2 on its diagonal). Errors as mjdiff_batchEstimate; m and s are restored.
// Nullable: ctrl, param, cost, grad, H, err.
MJDIFF_API mjdiffStatus mjdiff_batchLinearize(mjModel* m, mjdiffModel* s,
                                              const mjdiffBatchEstDef* def, int T, mjtNum t0,
                                              const mjtNum* ctrl, const mjtNum* y,
                                              const mjtNum* x0, const mjtNum* param,
                                              mjtNum* cost, mjtNum* grad, mjtNum* H, char* err,
                                              int errsz);

// ---------------------------------- moving-horizon estimation ----------------------------------

// What a moving-horizon estimate uses. Fill with mjdiff_defaultMheDef.
typedef struct mjdiffMheDef_ {
  mjdiffBatchEstDef batch;     // sensors, sigmas, max_iter per window (default 3), tol; params
                               // must be NULL and the prior fields are set by the estimator
  int window;                  // N: steps per window (default 20), >= 1
  mjtNum sigma_qpos;           // process noise std per step of the arrival cost's EKF (the
  mjtNum sigma_qvel;           // window itself has none), dq, dv and activation rows (defaults
                               // 1e-4, 1e-3, 1e-3)
  mjtNum sigma_act;
} mjdiffMheDef;

MJDIFF_API void mjdiff_defaultMheDef(mjdiffMheDef* def);

typedef struct mjdiffMheInfo_ {
  int steps;                   // windows solved (the last step estimated)
  long iterations;             // Gauss-Newton iterations over all windows
} mjdiffMheInfo;

// Moving-horizon estimates of the states of a recording (readings y, controls ctrl, T steps from
// time t0, as mjdiff_batchEstimate): at each step k = 1..T the window of the last N steps is
// fitted with an arrival cost (x0, P0 while the window starts at 0; then the mean and covariance
// of an EKF that runs N steps behind, estimate/mhe.c), warm-started. states ((T+1) x (nq+nv+na)): the
// estimate at each step (row 0: the first window's start); sd ((T+1) x ndx, nullable): standard
// deviations per tangent row. Errors as mjdiff_batchEstimate, and MJDIFF_ERR_NONFINITE naming the
// step if the arrival covariance stops being positive definite.
// Nullable: ctrl, sd, info, err.
MJDIFF_API mjdiffStatus mjdiff_mheEstimate(mjModel* m, mjdiffModel* s, const mjdiffMheDef* def,
                                           int T, mjtNum t0, const mjtNum* ctrl,
                                           const mjtNum* y, const mjtNum* x0, const mjtNum* P0,
                                           mjtNum* states, mjtNum* sd, mjdiffMheInfo* info,
                                           char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_ESTIMATE_H_
