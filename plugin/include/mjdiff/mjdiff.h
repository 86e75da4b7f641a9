// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// mjdiff: differentiable MuJoCo. Umbrella header.

#ifndef MJDIFF_MJDIFF_H_
#define MJDIFF_MJDIFF_H_

#include <mjdiff/base.h>
#include <mjdiff/smooth.h>
#include <mjdiff/adjoint.h>
#include <mjdiff/rollout.h>

#endif  // MJDIFF_MJDIFF_H_
