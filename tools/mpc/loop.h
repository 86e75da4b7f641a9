// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff-mpc, private: the closed loop (loop.c) and the viewer (viewer.c).
//
// Closed loop, control step k from the plant state x_k at time t_k:
//   u_k     = mpc_plan(planner, x_k, budget, s_k)     s_k: plant steps since the last plan
//                                                     (0 at the first)
//   x_{k+1} = plant^shift(x_k, u_k)                   smooth: mjdiff_step; native: mj_step on the
//                                                     plain model (MuJoCo's own contacts)
// Recorded per control step: t_k, the running cost l(x_k, u_k) (mjdiff_taskCost on a copy of the
// plant state after mjdiff_forward, the same evaluation for both plants), the plan's predicted
// cost, the planning wall time and mjdiff_taskSuccess at x_k.
//   real-time factor = simulated time / wall time of the loop (planning, plant steps, recording)
//   success of a run = the success flag holds at every control step in the last quarter of the
//                      simulated time and at the final state (and the plant did not fail)

#ifndef MJDIFF_TOOLS_MPC_LOOP_H_
#define MJDIFF_TOOLS_MPC_LOOP_H_

#include "adapt.h"
#include "mpc.h"
#include "plant.h"

typedef enum mpcPlant_ {
  MPC_PLANT_SMOOTH = 0,        // mjdiff_step: the planner's own model
  MPC_PLANT_NATIVE             // mj_step on the plain model: MuJoCo's hard contacts
} mpcPlant;

typedef struct mpcLoopOptions_ {
  mpcPlant plant;
  double budget;               // planning wall time per control step (s), > 0
  int shift;                   // plant steps per control step, >= 1
  double seconds;              // simulated time of a run (s), > 0
  int key;                     // initial keyframe; -1 (or no keyframes): qpos0
  double init_noise;           // initial qpos perturbation, uniform in [-a, a] per dof (m, rad)
  unsigned long long seed;     // seed of the perturbation
} mpcLoopOptions;

// one control step
typedef struct mpcLoopRecord_ {
  double time;                 // t_k (s)
  double cost;                 // running cost l(x_k, u_k)
  double plan_cost;            // the plan's cost J returned by mpc_plan
  double plan_s;               // planning wall time (s)
  int success;                 // mjdiff_taskSuccess at x_k
} mpcLoopRecord;

typedef struct mpcLoop_ {
  const mjModel* m;
  const mjdiffModel* s;
  const mjdiffTask* task;
  mpcPlanner* planner;         // not owned
  mpcLoopOptions opt;
  mjData* d;                   // the plant
  mjData* dc;                  // copy of the plant state, after mjdiff_forward (cost, contacts)
  double* ctrl;                // current control (nu)
  mpcLoopRecord* rec;          // records (nrec of maxrec)
  int nrec, maxrec;
  int pending;                 // plant steps since the last plan
  double time0;                // plant time at the reset (s)
  double wall;                 // wall time of the control steps (s)
  double cost;                 // running cost at the current plant state and control
  int success;                 // success flag at the current plant state
  int failed;                  // the plant, the cost evaluation or the planner failed
  int badplan;                 // control steps in a row whose plan cost was not finite
  char err[512];               // why

  // a plant of plant.h (mpc_loopSetPlant; not owned): the native plant steps it instead of m,
  // and loop->d gets its state after every control step
  toolPlant* plant;
  mpcAdapt* adapt;             // online adaptation (mpc_loopSetAdapt; not owned)
  const mjdiffParams* oracle;  // the planner's values of these follow the plant's (not owned)
  double* y;                   // readings (nsensordata)
  double* x;                   // plant state (nq+nv+na)
  double* pv;                  // parameter values (np of adapt or oracle)
  // adaptation log, one row per fitted window: time (s since the reset), estimate and the
  // plant's value (np each; NaN where the plant has no such value)
  double* log_t;
  double* log_est;
  double* log_true;
  int nlog, maxlog, nlogp;
} mpcLoop;

void mpc_defaultLoopOptions(mpcLoopOptions* opt);

// A closed loop of planner (made for m, s, task) on the plant opt->plant; starts reset. The loop
// keeps m, s, task and planner (not owned). NULL with a message on error.
mpcLoop* mpc_makeLoop(const mjModel* m, const mjdiffModel* s, const mjdiffTask* task,
                      mpcPlanner* planner, const mpcLoopOptions* opt, char* err, int errsz);
void mpc_freeLoop(mpcLoop* loop);

// back to the initial state (keyframe, perturbation of opt.seed); records cleared
void mpc_resetLoop(mpcLoop* loop);

// Step the native plant through `plant` (plant.h: hidden parameter changes, delay, noise; not
// owned, it must outlive the loop; NULL: mj_step on m again); the loop is reset.
void mpc_loopSetPlant(mpcLoop* loop, toolPlant* plant);

// Adapt the planner's model online: every plant step the plant's readings go to a, and every
// fitted window's estimate is set on the planner's model (mpc_plannerSetParamValues). Needs a
// plant (mpc_loopSetPlant): the plant's model must not be the planner's. NULL: off. 0 with a
// message if there is no plant. The loop is reset (the planner's values back to nominal).
int mpc_loopSetAdapt(mpcLoop* loop, mpcAdapt* a, char* err, int errsz);

// The oracle: at every control step the planner's values of prm (made on a model of m's sizes)
// are set to the plant's (model = plant). Needs a plant. NULL: off. 0 with a message.
int mpc_loopSetOracle(mpcLoop* loop, const mjdiffParams* prm, char* err, int errsz);

// mean running cost over the control steps at or after `from` s since the reset
double mpc_loopMeanCostFrom(const mpcLoop* loop, double from);

// one control step; 0 if the plant failed (loop->err says why)
int mpc_loopStep(mpcLoop* loop);

// control steps until opt.seconds of simulated time, a failure or an interrupt;
// 1 if it ran to the end. progress: print a line to stderr every progress seconds (0: never)
int mpc_runLoop(mpcLoop* loop, double progress);

// simulated time since the reset (s)
double mpc_loopTime(const mpcLoop* loop);

// real-time factor; mean and largest planning time (s); success of the run (see above);
// fraction of control steps with the success flag
double mpc_loopRealtime(const mpcLoop* loop);
double mpc_loopMeanPlan(const mpcLoop* loop);
double mpc_loopMaxPlan(const mpcLoop* loop);
int mpc_loopSuccess(const mpcLoop* loop);
double mpc_loopSuccessFraction(const mpcLoop* loop);
double mpc_loopMeanCost(const mpcLoop* loop);

const char* mpc_plantName(mpcPlant plant);

//---------------------------------- viewer (viewer.c) --------------------------------------------

typedef struct mpcViewOptions_ {
  const char* title;           // window title
  const char* screenshot;      // write a PNG after screenshot_after control steps and exit; NULL
  int screenshot_after;        // control steps before the screenshot
  int width, height;           // window size (pixels)
} mpcViewOptions;

// Show the loop live in a GLFW window until it is closed (or the screenshot is written).
// Returns a tool exit code; err says why on failure.
int mpc_view(mpcLoop* loop, const mpcViewOptions* opt, char* err, int errsz);

// Write an 8-bit RGB image (rows bottom-up, as mjr_readPixels gives them) as a PNG with stored
// (uncompressed) deflate blocks; 0 on failure.
int mpc_writePNG(const char* path, const unsigned char* rgb, int width, int height);

#endif  // MJDIFF_TOOLS_MPC_LOOP_H_
