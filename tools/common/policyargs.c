// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The policy's options of mjdiff-learn and mjdiff-design --policy (policyargs.h).

#include "policyargs.h"

#include <stdio.h>
#include <string.h>

#include "toolutil.h"

void tool_defaultPolicyArgs(toolPolicyArgs* pa) {
  memset(pa, 0, sizeof(*pa));
  pa->goal_term = -1;
  pa->key = 0;
  pa->start_noise = 0.05;
  pa->vel_noise = 0;
}

int tool_policyOption(const char* tool, int argc, char** argv, int* i, toolPolicyArgs* pa) {
  const char* o = argv[*i];
  if (!strcmp(o, "--goal")) {
    tool_parseGoal(tool, tool_optionValue(tool, argc, argv, i), &pa->goal_term, pa->goal_lo,
                   pa->goal_hi);
    pa->have_goal = 1;
  } else if (!strcmp(o, "--no-relative")) {
    pa->no_relative = 1;
  } else if (!strcmp(o, "--trig")) {
    pa->trig = 1;
  } else if (!strcmp(o, "--key")) {
    pa->key = tool_intOption(tool, argc, argv, i, -1, 1000000, "an integer >= -1");
  } else if (!strcmp(o, "--start-noise")) {
    pa->start_noise = tool_doubleOption(tool, argc, argv, i, 0, 100, 0, "in [0, 100]");
  } else if (!strcmp(o, "--vel-noise")) {
    pa->vel_noise = tool_doubleOption(tool, argc, argv, i, 0, 1000, 0, "in [0, 1000]");
  } else if (!strcmp(o, "--noise-joints")) {
    pa->noise_joints = tool_optionValue(tool, argc, argv, i);
  } else if (!strcmp(o, "--hide-joints")) {
    pa->hide_joints = tool_optionValue(tool, argc, argv, i);
  } else {
    return 0;
  }
  return 1;
}

void tool_policyLearnOptions(const toolPolicyArgs* pa, const mjModel* m, mjdiffLearnOptions* opt) {
  mjdiff_defaultLearnOptions(opt);
  // without keyframes, key 0 (the default) means qpos0; a key > 0 is left for the learner to refuse
  opt->key = m->nkey ? (int)pa->key : (pa->key > 0 ? (int)pa->key : -1);
  opt->start_noise = pa->start_noise;
  opt->vel_noise = pa->vel_noise;
  opt->noise_joints = pa->noise_joints;
  opt->trig_hinges = pa->trig;
  opt->hide_joints = pa->hide_joints;
  if (pa->have_goal) {
    opt->goal_term = pa->goal_term;
    opt->goal_relative = !pa->no_relative;
    memcpy(opt->goal_lo, pa->goal_lo, sizeof(pa->goal_lo));
    memcpy(opt->goal_hi, pa->goal_hi, sizeof(pa->goal_hi));
  }
}

mjdiffMLP* tool_loadPolicyWeights(const char* tool, const char* path, int nin, int nout) {
  char msg[1000];
  mjdiffMLP* net = NULL;
  if (mjdiff_loadMLP(path, &net, msg, sizeof(msg)) != MJDIFF_OK) {
    fprintf(stderr, "%s: error: %s\n", tool, msg);
    return NULL;
  }
  const mjdiffMLPDef* got = mjdiff_mlpDef(net);
  if (got->nin != nin || got->nout != nout) {
    fprintf(stderr, "%s: error: %s: the network maps %d inputs to %d outputs; this model and "
            "task (with these --goal/--no-relative options) need %d observations to %d "
            "controls\n", tool, path, got->nin, got->nout, nin, nout);
    mjdiff_freeMLP(net);
    return NULL;
  }
  return net;
}
