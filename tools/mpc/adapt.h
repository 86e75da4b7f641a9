// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc --adapt: online estimation of named model parameters (<mjdiff/params.h>) while the
// closed loop runs, by joint state-and-parameter estimation over consecutive windows of the
// plant's readings, with a prior that carries the past (derivation: adapt.c).
//
// Per plant step k the loop pushes the state it saw x_k, the commanded control u_k and the
// readings y_k at x_k; every N = round(window / timestep) steps the window's batch problem is
// solved and the estimate updated, and the loop sets it on the planner's model.

#ifndef MJDIFF_TOOLS_MPC_ADAPT_H_
#define MJDIFF_TOOLS_MPC_ADAPT_H_

#include <mjdiff/mjdiff.h>
#include <mjdiff/estimate.h>

typedef struct mpcAdaptOptions_ {
  double window;               // plant time per window (s), > 0 (default 0.1)
  double sigma_sensor;         // reading noise std assumed by the fit (default 0.01)
  double sigma_state;          // prior std of the window's start state around the state the
                               // loop saw, per tangent row (default 0.01)
  double prior_rel;            // initial prior std of each parameter, relative to
                               // max(|nominal|, prior_floor) (default 0.5)
  double drift_rel;            // random-walk std per window, relative likewise (default 0.05):
                               // how fast the estimate may follow a change
  double prior_floor;          // the scale's floor (default 0.1)
  int iterations;              // Gauss-Newton iterations per window (default 2)
  const char* const* sensors;  // nullable: sensors the fit reads (NULL: every sensor)
  int nsensor;
} mpcAdaptOptions;

void mpc_defaultAdaptOptions(mpcAdaptOptions* opt);

typedef struct mpcAdapt_ mpcAdapt;

// The parameters of a comma-separated list of <mjdiff/params.h> names or patterns ("a,b,c"), as
// --adapt and --oracle take them; NULL with a message naming the option `what` on error (no
// name, an unknown name).
mjdiffParams* mpc_paramList(const mjModel* m, const mjdiffModel* s, const char* names,
                            const char* what, char* err, int errsz);

// An estimator of the parameters `names` (a comma-separated list of <mjdiff/params.h> names or
// patterns) of model m with smooth model s (copied: the estimator fits on its own copies). NULL
// with a message on error (an unknown name, a sensor without a derivative, bad options).
mpcAdapt* mpc_makeAdapt(const mjModel* m, const mjdiffModel* s, const char* names,
                        const mpcAdaptOptions* opt, char* err, int errsz);
void mpc_freeAdapt(mpcAdapt* a);

// back to the nominal values and the initial prior; the window and the log are cleared
void mpc_adaptReset(mpcAdapt* a);

// drop the window in progress (the plant's state jumped: a reset, a push by hand); the estimate
// and its prior are kept
void mpc_adaptDropWindow(mpcAdapt* a);

// One plant step: the time of x_k, x_k (nq+nv+na), the commanded control u_k (nu) and the
// readings y_k (nsensordata) at x_k. 1 when a window is complete: call mpc_adaptUpdate.
int mpc_adaptPush(mpcAdapt* a, double time, const double* x, const double* u, const double* y);

// Fit the complete window and update the estimate; 0 with a message if the fit failed (the
// estimate is kept, the window dropped).
int mpc_adaptUpdate(mpcAdapt* a, char* err, int errsz);

// the selection (made on the estimator's copy of m: use it with models of m's sizes), np, the
// current estimate and its standard deviations (np), the nominal values
const mjdiffParams* mpc_adaptParams(const mpcAdapt* a);
int mpc_adaptCount(const mpcAdapt* a);
const double* mpc_adaptValues(const mpcAdapt* a);
const double* mpc_adaptSd(const mpcAdapt* a);
const double* mpc_adaptNominal(const mpcAdapt* a);

// windows fitted, failed; mean wall time per fit (s)
int mpc_adaptUpdates(const mpcAdapt* a);
int mpc_adaptFailures(const mpcAdapt* a);
double mpc_adaptMeanFit(const mpcAdapt* a);

#endif  // MJDIFF_TOOLS_MPC_ADAPT_H_
