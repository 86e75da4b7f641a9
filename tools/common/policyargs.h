// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The options that describe a policy of mjdiff-learn's (<mjdiff/learn.h>), shared by the tools
// that train one (mjdiff-learn) and that run one as a fixed controller (mjdiff-design --policy):
// --goal, --no-relative, --key, --start-noise, --vel-noise, --noise-joints, --trig, --hide-joints;
// their mapping onto mjdiffLearnOptions; and the loading of a network checked against the
// policy's shape.

#ifndef MJDIFF_POLICYARGS_H_
#define MJDIFF_POLICYARGS_H_

#include <mujoco/mujoco.h>
#include <mjdiff/learn.h>
#include <mjdiff/nn.h>

typedef struct toolPolicyArgs_ {
  int have_goal;               // --goal given
  int goal_term;               // its task term, -1 without
  double goal_lo[3], goal_hi[3];  // its box (m)
  int no_relative;             // --no-relative: observe the goal only, not also goal - object
  long key;                    // --key N: start keyframe, -1 qpos0 (default 0)
  double start_noise;          // --start-noise A: hinge/slide qpos noise U(-A, A) (default 0.05)
  double vel_noise;            // --vel-noise A: hinge/slide qvel noise (default 0)
  const char* noise_joints;    // --noise-joints J1,J2..: the joints those noises move (default:
                               // every hinge and slide; an argv string)
  int trig;                    // --trig: unlimited hinges observed as (cos q, sin q)
  const char* hide_joints;     // --hide-joints J1,J2..: joints whose position the policy does not
                               // see (default none; an argv string)
} toolPolicyArgs;

// Fill pa with the defaults above.
void tool_defaultPolicyArgs(toolPolicyArgs* pa);

// If argv[*i] is one of the options above, parse it (and its value, *i advanced) into pa and
// return 1; else return 0 and leave *i alone. A missing or malformed value is a usage error
// naming the option (exit 2).
int tool_policyOption(const char* tool, int argc, char** argv, int* i, toolPolicyArgs* pa);

// opt = mjdiff_defaultLearnOptions with pa's start keyframe (on a model without keyframes, key 0
// is qpos0, as is -1), noises and, with --goal, goal term, box and goal_relative. The caller
// sets the rest (horizon, skip_failed).
void tool_policyLearnOptions(const toolPolicyArgs* pa, const mjModel* m, mjdiffLearnOptions* opt);

// The network in the .npz file at path (nn/'s format) if it maps nin inputs to nout outputs
// (mjdiff_learnObsSize, nu); else NULL after "TOOL: error: ..." on stderr naming the file (a
// runtime error, exit 1 for the caller). The caller frees it (mjdiff_freeMLP).
mjdiffMLP* tool_loadPolicyWeights(const char* tool, const char* path, int nin, int nout);

#endif  // MJDIFF_POLICYARGS_H_
