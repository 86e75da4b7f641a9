// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// Policies trained through the physics (analytic policy gradients): an MLP policy u = pi(o),
// rolled out on the smooth model from randomised start states and goals, its task cost
// backpropagated through the rollouts (step VJP in state and control, the network's VJP in its
// input and weights). The library layer of mjdiff-learn (tools/learn/); the static library
// mjdiff_learn. Like the rest of the library it never prints or exits.
//
// Observation and action (nobs = nq + nv + na + ngoal inputs, nu outputs):
//   o = (qpos, qvel, act, g, e)     (trig_hinges: an unlimited hinge's q as cos q, sin q;
//                                   hide_joints: those joints' positions as 0)
//                                   g: the goal, the fixed target point of one position term of
//                                   the task (3 numbers) when the learner randomises one; else none
//                                   e = g - p(q): the goal relative to that term's object (3; with
//                                   goal_relative), p its position (forward kinematics)
//   y = MLP(o),  u_i = c_i + r_i tanh(y_i)   c, r: centre and half-width of actuator i's
//                                   ctrlrange (ctrllimited); u_i = y_i otherwise
// The squashing keeps u inside ctrlrange, where the step's control derivative is the interior
// one (beyond a bound MuJoCo's clamp would make it zero and training would stall).
// Gradient of the policy (the rollout's mjdiffPolicy VJP, adjoint/rollout.h), given a_u = dL/du:
//   a_y = a_u .* r .* (1 - tanh(y)^2)    (a_u where unlimited)
//   (a_o, a_theta) = MLP VJP of a_y;  a_x += T' a_o[0 .. nq+nv+na)  (a hidden position: nothing)
// with T' the move of a gradient in the state layout (qpos, qvel, act) to the tangent layout
// (mjdiff_stateGradToTangent: a quaternion's 4 partials to its 3 rotation rows); the goal gets
// no state gradient; e adds a_dq -= J_p' a_e (J_p: the object's point Jacobian, mj_jac, whose
// columns are the tangent dq rows).
//
// Training objective of one rollout from start x_0 with goal g, T steps (the task's terms with
// the goal set, <mjdiff/task.h>):
//   J = (1/T) sum_{t=0}^{T-1} l(x_t, u_t) + l_T(x_T)
// and of a batch of B rollouts the mean (1/B) sum_b J_b. The start state and the goal of rollout
// b come from a generator seeded by mjdiff_learnItemSeed(seed, b) alone, so the objective is a
// deterministic function of (weights, seed, B): the same for every thread count. The gradient
// is the mean of the rollouts' gradients, summed in the order b = 0 .. B-1.
// Start states: the keyframe (or qpos0) with every hinge and slide joint's qpos moved by
// U(-start_noise, start_noise) and its velocity by U(-vel_noise, vel_noise) (noise_joints: those
// joints only; the draws are the same, so the other joints' noise does not change). Goal: uniform
// in the box goal_lo .. goal_hi (m).
// Closed-loop evaluation on a plant: the same policy every plant step, the smooth step
// (mjdiff_step) or MuJoCo's native mj_step, the cost J above with the plant's own steps, and
// success (mjdiff_taskSuccess) at the last state.

#ifndef MJDIFF_LEARN_H_
#define MJDIFF_LEARN_H_

#include <stdint.h>

#include <mujoco/mujoco.h>
#include <mjdiff/base.h>
#include <mjdiff/nn.h>
#include <mjdiff/rollout.h>
#include <mjdiff/smooth.h>
#include <mjdiff/task.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mjdiffLearnOptions_ {
  int horizon;                 // T: steps of a training rollout (>= 1; default 100)
  int key;                     // start keyframe, -1: qpos0 (default 0: keyframe 0, or qpos0 on a
                               // model without keyframes)
  double start_noise;          // half-width of the hinge/slide qpos noise (rad or m; default 0)
  double vel_noise;            // half-width of the hinge/slide qvel noise (default 0)
  const char* noise_joints;    // the joints the start noise moves: comma-separated names of hinge
                               // or slide joints, NULL or "": every hinge and slide (default).
                               // Leave out a joint whose noise starts a body inside a contact (a
                               // box's vertical slide, a walker's root height). Read by
                               // mjdiff_makeLearner, not kept
  int goal_term;               // task term whose fixed point is the goal, -1: no goal (default)
  double goal_lo[3];           // goal box (m); lo <= hi
  double goal_hi[3];
  int goal_relative;           // 1: the observation also holds e = g - p(q) (default 0)
  int trig_hinges;             // 1: each hinge without a range is observed as (cos q, sin q) in
                               // place of q (a pole that turns over looks the same after a turn;
                               // its state adjoint: a_q = -sin q a_cos + cos q a_sin) (default 0)
  double action_noise;         // the objectives' rollouts (mjdiff_learnObjective, -Many, -Short,
                               // with or without a gradient) act with u = c + r tanh(y +
                               // action_noise eps_t), eps_t ~ N(0, I) drawn from the item's seed
                               // and the step (the same in the forward and the backward pass):
                               // the objective averaged over nearby trajectories, whose gradient
                               // reaches states the deterministic policy does not visit.
                               // mjdiff_learnEvaluate and PPO's sampling never add it (default 0)
  int nrandom;                 // domain randomisation: model parameters drawn anew for each
                               // training rollout (mjdiff_learnObjective, -Short, -Many,
                               // mjdiff_learnSampleRollouts; never mjdiff_learnEvaluate). Name i
                               // (<mjdiff/params.h>'s spelling; a pattern or a vector field
                               // scales all its values by one factor) takes its value in the
                               // training model times U(random_lo[i], random_hi[i]), drawn from
                               // the item's seed (the objective stays a deterministic function of
                               // the weights and the seed). 0 < lo <= hi. Refused by
                               // their class (mjdiff_paramClass): a geom's smooth-model fields
                               // (contact_*, friction_speed, spin_speed) and geometry (positions,
                               // sizes, scales); a model attached to mj_step. Read by
                               // mjdiff_makeLearner, not kept (default 0)
  const char* const* random_names;
  const double* random_lo;
  const double* random_hi;
  int skip_failed;             // 1: a rollout whose smooth step fails (diverges) is left out of
                               // the batch's mean and gradient and counted in stats->failed,
                               // instead of failing the call (default 0); all failing still fails
  double grad_decay;           // gradients of mjdiff_learnObjective and -Short: 0 (default):
                               // exact; in (0, 1): the state adjoint carried back through each
                               // step is scaled by grad_decay (mjdiffRolloutGrad.decay), so that
                               // a cost reaches the actions k steps before it weighted by
                               // grad_decay^k: a biased gradient that stays usable over long
                               // horizons through unstable or chaotic dynamics, where the exact
                               // one explodes
  const char* hide_joints;     // comma-separated names of joints whose position the policy does
                               // not see: a hinge's or slide's qpos, a free joint's 3 position
                               // entries (its orientation stays observed), observed as 0 (their
                               // velocities stay observed). A walker's forward position grows
                               // without bound as it runs while the task is the same wherever it
                               // runs: observed, it takes values after the training horizon that
                               // the policy never saw. e = g - p(q) (goal_relative) still
                               // depends on them. NULL or "": none (default). Read by
                               // mjdiff_makeLearner, not kept
} mjdiffLearnOptions;

// Fill opt with the defaults above (goal box: zero).
void mjdiff_defaultLearnOptions(mjdiffLearnOptions* opt);

// Statistics of a batch or an evaluation.
typedef struct mjdiffLearnStats_ {
  int n;                       // rollouts
  double cost;                 // mean J
  int success;                 // rollouts whose last state meets the task's success test
  long steps;                  // simulated steps (forward steps; a gradient adds none)
  int failed;                  // rollouts left out (skip_failed)
} mjdiffLearnStats;

// A learner: the training model, its smooth model, the task, and one workspace per thread
// (mjData, rollout recording, network workspace, task copy). Opaque.
typedef struct mjdiffLearner_ mjdiffLearner;

// Make a learner for the training model m (its timestep is the rollouts'; s is its smooth model,
// shared read-only: change its options, e.g. <mjdiff/reach.h>, only between calls), the task
// (copied per thread), a policy network architecture with nobs inputs and nu outputs
// (mjdiff_learnObsSize), nthread >= 1 threads. native (nullable): the model of the native
// plant for mjdiff_learnEvaluate (the same model, e.g. at its own timestep). Fails naming the
// option (a goal term that is not a position term with a fixed point, a keyframe that does not
// exist, a horizon < 1, a network of the wrong shape). m, s, native, net must outlive it.
// Nullable: err.
mjdiffStatus mjdiff_makeLearner(const mjModel* m, const mjdiffModel* s, const mjModel* native,
                                const mjdiffTask* task, const mjdiffLearnOptions* opt,
                                const mjdiffMLP* net, int nthread, mjdiffLearner** out,
                                char* err, int errsz);
void mjdiff_freeLearner(mjdiffLearner* L);

// Size of the policy's input: nq + nv + na, + 1 per unlimited hinge with trig_hinges, + 3 with a
// goal, + 3 more with goal_relative. The layout: the qpos part (nq, + the trig hinges' second
// entries in place), qvel, act, g, e.
int mjdiff_learnObsSize(const mjModel* m, const mjdiffLearnOptions* opt);

// The generator seed of rollout b of a batch drawn with seed (splitmix64 of both).
uint64_t mjdiff_learnItemSeed(uint64_t seed, int b);

// Sample the start state x0 (nq+nv+na) and goal g (3; nullable) of rollout b of seed.
void mjdiff_learnSample(const mjdiffLearner* L, uint64_t seed, int b, double* x0, double* goal);

// The observation (mjdiff_learnObsSize) of the state in d with goal g (nullable without goal).
// Uses the first thread's scratch data for the kinematics: not during another call on L.
void mjdiff_learnObservation(const mjdiffLearner* L, const mjData* d, const double* goal,
                             double* obs);

// The controls (nu) of the network's output y (nu): c + r tanh(y) for an actuator with a
// ctrlrange the engine clamps to (c its centre, r its half-width), y itself otherwise.
void mjdiff_learnControls(const mjdiffLearner* L, const double* y, double* ctrl);

// Training objective of a batch of B rollouts of net (weights as they are in net) and, with grad
// non-NULL, its gradient in the weights (mjdiff_mlpParamCount values, overwritten), on the
// learner's threads. per_item (nullable, B): each rollout's J. A rollout that fails (a
// non-finite state) fails the call with err naming the rollout and step. stats: nullable.
// Nullable: grad, per_item, stats, err.
mjdiffStatus mjdiff_learnObjective(mjdiffLearner* L, const mjdiffMLP* net, uint64_t seed, int B,
                                   double* J, double* grad, double* per_item,
                                   mjdiffLearnStats* stats, char* err, int errsz);

// Short-horizon objective with a learned terminal value (SHAC: Xu et al., "Accelerated Policy
// Learning with Parallel Differentiable Simulation", ICLR 2022). Rollouts of the learner's T
// steps start from given states (the end states of the previous call, so that T can be short
// while episodes stay long), and the cost beyond T is a value network's estimate:
//   J_b = (1/T) [ sum_{t<T} gamma^t l(x_t, u_t) + gamma^T V(x_T) ],  V(x) = value_scale MLP_V(o(x))
// with o(x) the policy's observation (same goal). Its gradient in the policy weights adds, at
// x_T, dJ/dx_T = (gamma^T / T) value_scale T_x' MLP_V'(o) (the observation's state adjoint as
// in the policy VJP, e's point Jacobian included); V's own weights get no gradient (the critic is
// fitted by regression on the recorded costs, outside). Without a value network the terminal
// term is the task's l_T(x_T) with weight gamma^T (gamma 1: mjdiff_learnObjective's J).
typedef struct mjdiffLearnShort_ {
  const double* x0;            // B x (nq+nv+na) start states; NULL: drawn as the objective's
  const double* goal;          // B x 3 goals with x0 (nullable: zero, or without a goal term)
  const mjdiffMLP* value;      // V's network: nobs inputs, 1 output; nullable
  double value_scale;          // V = value_scale * MLP_V(o) (e.g. 1 / (1 - gamma)); 0: 1
  double gamma;                // discount per step, in (0, 1]
  double* x_end;               // out, nullable: B x (nq+nv+na), the states x_T
  double* obs;                 // out, nullable: B x (T+1) x nobs, the observations of x_0 .. x_T
  double* cost;                // out, nullable: B x T, the step costs l(x_t, u_t), unscaled
} mjdiffLearnShort;

// The objective above for B rollouts of net and, with grad non-NULL, its gradient in the
// weights (mean over the rollouts that did not fail). per_item (B): each J_b, NaN for a rollout
// left out (skip_failed; its rows of x_end, obs and cost are then undefined). The first call
// with a value network of an architecture makes its per-thread workspaces (later calls allocate
// nothing). Deterministic at any thread count. Nullable: grad, per_item, stats, err.
mjdiffStatus mjdiff_learnObjectiveShort(mjdiffLearner* L, const mjdiffMLP* net, uint64_t seed,
                                        int B, const mjdiffLearnShort* sh, double* J,
                                        double* grad, double* per_item, mjdiffLearnStats* stats,
                                        char* err, int errsz);

// The same objective for nnet networks of the same architecture (one batch of B rollouts each,
// the same starts and goals for every network): J[k] for nets[k]. Derivative-free searches
// evaluate their perturbations with it. Nullable: stats (summed), err.
mjdiffStatus mjdiff_learnObjectiveMany(mjdiffLearner* L, const mjdiffMLP* const* nets, int nnet,
                                       uint64_t seed, int B, double* J, mjdiffLearnStats* stats,
                                       char* err, int errsz);

// Stochastic rollouts for on-policy baselines (PPO): n rollouts of T steps on the smooth model
// (starts and goals as the objective's with seed) with Gaussian exploration before the squashing,
//   a_t = y_t + exp(logstd) .* z_t,  z_t ~ N(0, I) (Box-Muller from a generator of its own per
//   item, seeded from the item's seed),  u_t = c + r .* tanh(a_t)  (a_t where unlimited),
// recording per rollout b: obs ((T+1) x nobs, o_0 .. o_T), act (T x nu, a_t), cost (T+1: the
// objective's terms, (1/T) l(x_t, u_t) for t < T and l_T(x_T) at T, summing to J), and success at
// x_T (succ, nullable). Layouts: rollout b's block starts at b (T+1) nobs, b T nu, b (T+1).
// Deterministic for a seed at any thread count. A failing rollout fails the call (skip_failed
// does not apply). Nullable: stats, succ, err.
mjdiffStatus mjdiff_learnSampleRollouts(mjdiffLearner* L, const mjdiffMLP* net, const double* logstd,
                                        uint64_t seed, int n, double* obs, double* act,
                                        double* cost, int* succ, mjdiffLearnStats* stats,
                                        char* err, int errsz);

// A trained policy as a fixed controller for other rollouts (mjdiff-design): the learner's own
// policy callbacks (observation, network, squashing and their VJP, as in training) on a
// workspace of their own, as an mjdiffPolicy for mjdiff_rolloutForward/-Gradient. The
// observation's kinematic part (e = g - p(q)) is computed on the learner's model: with a
// rollout model whose geometry differs (a design), the controller keeps the kinematics of the
// model it was made for, so u depends on the state and the goal alone. The learner's horizon
// plays no part in it (nor in mjdiff_learnSample): a learner made only to host a policy may
// use horizon 1. One per thread; L and net must outlive it. Opaque.
typedef struct mjdiffLearnPolicy_ mjdiffLearnPolicy;

// Make the policy of net (the learner's architecture, else MJDIFF_ERR_ARGUMENT). Nullable: err.
mjdiffStatus mjdiff_makeLearnPolicy(const mjdiffLearner* L, const mjdiffMLP* net,
                                    mjdiffLearnPolicy** out, char* err, int errsz);
void mjdiff_freeLearnPolicy(mjdiffLearnPolicy* P);  // NULL: no-op

// Set the goal g (3) that the policy observes (nullable: zero; ignored without a goal term).
void mjdiff_learnPolicySetGoal(mjdiffLearnPolicy* P, const double* goal);

// Fill out with the policy's callbacks: nparam = the network's weight count, theta =
// mjdiff_mlpParams(net). The VJP adds to adj_theta when it is non-NULL; a caller that needs no
// weight gradient may set out->nparam = 0 (the rollout then passes NULL and theta may be NULL).
void mjdiff_learnPolicy(mjdiffLearnPolicy* P, mjdiffPolicy* out);

// After a rollout: MJDIFF_OK, or the error of a network call that failed inside the callbacks
// (they cannot report it), which is cleared. Nullable: err.
mjdiffStatus mjdiff_learnPolicyStatus(mjdiffLearnPolicy* P, char* err, int errsz);

// Plants of mjdiff_learnEvaluate.
#define MJDIFF_PLANT_SMOOTH 0  // mjdiff_step on the training model
#define MJDIFF_PLANT_NATIVE 1  // mj_step on the native model (hard contacts)

// Closed loop of n rollouts (starts and goals as the objective's with seed) for `seconds` of
// simulated time on plant. stats: mean cost, successes, steps. Fails with MJDIFF_ERR_ARGUMENT
// for the native plant without a native model. A smooth run that diverges fails; a native one
// that goes non-finite counts as a failure (cost +inf is not averaged in: stats->cost is the
// mean of the finite ones). Nullable: err.
mjdiffStatus mjdiff_learnEvaluate(mjdiffLearner* L, const mjdiffMLP* net, int plant,
                                  uint64_t seed, int n, double seconds, mjdiffLearnStats* stats,
                                  char* err, int errsz);

#ifdef __cplusplus
}
#endif

#endif  // MJDIFF_LEARN_H_
