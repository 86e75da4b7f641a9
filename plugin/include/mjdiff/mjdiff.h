// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff: differentiable MuJoCo. Umbrella header: includes every public header.
//   base.h     status codes, version
//   smooth.h   the smooth model: make, parameters, step, forward, contact forces, stability
//   reach.h    continuation schedule of the smooth model's long-range contact term
//   adjoint.h  step and sensor derivatives (Jacobians, VJP, JVP)
//   params.h   model parameters selected by name
//   state.h    the state and tangent layouts: sizes, indices, conversions
//   rollout.h  rollouts and their gradients, batches
//   loss.h     loss terms (positions, sensors, states, controls at chosen steps)
//   args.h     argument structs for the step derivatives and batches
//   nn.h       small neural networks (MLP forward and VJP, init, .npz save and load)
//   optim.h    shared optimisers (Adam with clipping and learning-rate schedules)
//   random.h   the random numbers every sampling tool draws (splitmix64 seeding, xoshiro256**)

#ifndef MJDIFF_MJDIFF_H_
#define MJDIFF_MJDIFF_H_

#include <mjdiff/base.h>
#include <mjdiff/smooth.h>
#include <mjdiff/reach.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/params.h>
#include <mjdiff/state.h>
#include <mjdiff/rollout.h>
#include <mjdiff/loss.h>
#include <mjdiff/args.h>
#include <mjdiff/nn.h>
#include <mjdiff/residual.h>
#include <mjdiff/optim.h>
#include <mjdiff/linalg.h>
#include <mjdiff/random.h>

#endif  // MJDIFF_MJDIFF_H_
